"""plugpull.testing on hand-built results: a result's repr is its line, the list's is the text output."""

from plugpull.results import Result, Verdict
from plugpull.testing import Results, RunResult, argv_for


def line(verdict: str, point: str) -> RunResult:
    return RunResult.of(
        Result(Verdict(verdict), "kill-mid-tool", point, "agent x", f"{verdict.lower()} at {point}", stderr="boom")
    )


def test_a_results_repr_is_its_line():
    assert repr(line("FAIL", "after-effect")) == "FAIL   kill-mid-tool  after-effect  agent x  fail at after-effect"


def test_the_lists_repr_is_the_text_output_with_details_under_non_pass_lines():
    results = Results([line("PASS", "before-effect"), line("FAIL", "after-effect")])
    assert repr(results).splitlines() == [
        "PASS   kill-mid-tool  before-effect  agent x  pass at before-effect",
        "FAIL   kill-mid-tool  after-effect   agent x  fail at after-effect",
        "    | boom",
    ]
    assert not results.passed and results.failed() == [results[1]]
    assert Results([line("PASS", "before-effect")]).passed and not Results().passed


def test_options_become_the_clis_flags():
    assert argv_for("python a.py", points=["before-effect"], hold="charge:2", repeat=3, fork_server=True) == [
        "--agent", "python a.py", "--point", "before-effect", "--hold", "charge:2",
        "--timeout", "120.0", "--repeat", "3", "--jobs", "1", "--fork-server",
    ]  # fmt: skip
