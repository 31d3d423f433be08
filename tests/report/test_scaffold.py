"""A finding whose target is a user's agent, run through the real pipeline; the notebooks generated from finding.toml;
and `plugpull report new`, which makes such a finding from an agent file."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import nbformat
import pytest
from builders import make_repo
from repository import FINDINGS

from plugpull.report.harness import cli, executors, pipeline, scaffold
from plugpull.report.harness.finding import FindingError, load_all
from plugpull.report.kernel.record import AGENT_FOLDER

# The approval protocol's fake framework (tests/agents): `no-claim` never claims the pause, so a second approval runs
# the tool again; real processes, the agent's own files.
AGENT = Path(__file__).resolve().parents[1] / "agents" / "approval_framework.py"

AGENT_TOML = """\
id = "demo"
title = "A demo agent approved twice"
claim = "The second approval of one pause refunds again."
framework = "packaging"
agent = "agent.py no-claim"
scenario = "resume-after-approval"

[parameters]
repeats = 1
points = ["double-resume"]
seed = 0
timeout = 120.0
racers = 2

[[claims]]
point = "double-resume"
kind = "app"
because = "The agent never claims the pause it approves."
expect = [{ versions = ">=0", verdict = "FAIL", counts = { refund = 1 } }]

[[pins]]
name = "p1"
requirements = "pins/p1.txt"
"""


def agent_repo(root: Path) -> Path:
    """make_repo's `demo` finding with the approval agent as its target and its notebook generated."""
    make_repo(root)
    folder = root / "findings" / "demo"
    (folder / "finding.toml").write_text(AGENT_TOML)
    shutil.copy(AGENT, folder / "agent.py")
    (root / "notebooks" / "demo.ipynb").unlink()
    assert scaffold.write_notebooks(load_all(root)) == [root / "notebooks" / "demo.ipynb"]
    return root


def test_an_agent_finding_runs_its_agent_in_the_pin_sets_kernel_and_its_records_name_no_machine_path(
    tmp_path, forked_kernel
):
    root = agent_repo(tmp_path / "repo")
    finding = load_all(root)["demo"]
    assert (finding.agent, finding.scenario, finding.targets) == (
        "agent.py no-claim",
        "resume-after-approval",
        ("agent",),
    )
    jobs = [pipeline.Job(finding, pin, cli.job_parameters(finding, {})) for pin in finding.pins]
    assert cli.run_all(jobs, root, executors.Local(make_env=lambda job: forked_kernel)) == 0

    [record] = sorted((root / "findings" / "demo").glob("*/p1-*.json"))
    doc = json.loads(record.read_text())
    assert doc["error"] is None
    [line] = doc["results"]
    # The agent ran for real: the second approval ran the tool again, as the no-claim agent does (its key makes the
    # provider count one refund; `plugpull --agent "python approval_framework.py no-claim"` prints the same line).
    assert (line["point"], line["verdict"], line["target_name"]) == ("double-resume", "FAIL", "agent")
    assert line["evidence"]["counts"] == {"refund": 1} and "ran the approved tool again" in line["message"]
    assert line["framework"] == "packaging" and line["target"].startswith("packaging")
    # Its command names the agent as finding.toml does, run from the copy next to the kernel, whose folder appears in
    # no record (the paths papermill and the pipeline write are the records' provenance, not the agent's).
    assert line["evidence"]["start"]["argv"][1:] == ["agent.py", "no-claim", "start"]
    for suffix in (".json", ".ipynb", ".html"):
        text = record.with_suffix(suffix).read_text()
        assert f"/{AGENT_FOLDER}/agent.py" not in text and f"{AGENT_FOLDER}/agent.py" not in text, suffix
    book = nbformat.read(str(record.with_suffix(".ipynb")), as_version=4)
    tags = [c.metadata.get("tags", []) for c in book.cells]
    assert ["parameters"] not in tags and sum("injected-parameters" in t for t in tags) == 1  # shown once
    assert book.metadata["title"] == f"demo: packaging {doc['versions']['packaging']} (pin set p1)"
    assert f"<title>{book.metadata['title']}</title>" in record.with_suffix(".html").read_text()
    assert "| `double-resume` | app |" in record.with_suffix(".ipynb").read_text()  # judged against its claim


def test_a_finding_names_its_target_or_an_agent_in_its_folder_with_a_scenario(tmp_path):
    root = agent_repo(tmp_path / "repo")
    toml = root / "findings" / "demo" / "finding.toml"
    for old, new, said in (
        ('agent = "agent.py no-claim"', 'agent = "missing.py"', "'missing.py' is not a file in demo/"),
        ('agent = "agent.py no-claim"', 'agent = "../../pyproject.toml"', "is not a file in demo/"),
        ('scenario = "resume-after-approval"', 'scenario = "nope"', "an agent needs scenario = one of"),
        ('scenario = "resume-after-approval"', 'scenario = "resume-after-upgrade"', "an agent needs scenario"),
        ('agent = "agent.py no-claim"', 'agent = "agent.py"\ntarget = "langgraph"', "target (a built-in) or agent"),
    ):
        toml.write_text(AGENT_TOML.replace(old, new))
        with pytest.raises(FindingError, match=said.replace("(", r"\(").replace(")", r"\)")):
            load_all(root)


# --- the generated notebooks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("finding", FINDINGS.values(), ids=lambda f: f.id)
def test_every_committed_notebook_is_the_one_its_finding_toml_generates(finding):
    assert scaffold.is_generated(finding.notebook), f"{finding.notebook.name} is hand-written"
    assert finding.notebook.read_text() == scaffold.text_of(finding), "run: uv run plugpull report regenerate"


def test_a_generated_notebook_is_valid_nbformat_with_ids_a_language_and_three_cells():
    book_text = scaffold.text_of(FINDINGS["langgraph-kill-mid-tool"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # MissingIDFieldWarning and any other nbformat warning fail the test
        book = nbformat.reads(book_text, as_version=4)
        nbformat.validate(book)
    assert (book.nbformat, book.nbformat_minor) == (4, 5)
    assert book.metadata.kernelspec.language == "python"
    assert [c.cell_type for c in book.cells] == ["markdown", "code", "code"]
    assert book.cells[1].metadata.tags == ["parameters"] and book.cells[2].source.count("nb.report(") == 1


def test_check_fails_on_a_stale_generated_notebook_and_regenerate_fixes_it(tmp_path, capsys):
    root = agent_repo(tmp_path / "repo")
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace("racers = 2", "racers = 3"))
    assert any("notebooks/demo.ipynb: out of date" in p for p in cli.generated_problems(root))
    assert cli.main(["regenerate", "--root", str(root)]) == 0
    assert cli.generated_problems(root) == []
    assert "racers = 3" in (root / "notebooks" / "demo.ipynb").read_text()


# --- plugpull report new -------------------------------------------------------------------------------------------


def new_args(root: Path, *extra: str) -> list[str]:
    return [
        "new",
        "upstream-1",
        "--agent",
        str(AGENT),
        "--scenario",
        "resume-after-approval",
        "--root",
        str(root),
        *extra,
    ]


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--pin", "six"], "--pin 'six': DIST==VERSION"),
        (["--pin", "six>=1"], "--pin 'six>=1': DIST==VERSION"),
        ([], "--pin DIST==VERSION is needed"),
        (["--pin", "six==1.17.0", "--issue", "not a url"], "--issue 'not a url'"),
    ],
)
def test_new_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path, capsys, extra, said):
    root = make_repo(tmp_path / "repo")
    before = listing(root)
    assert cli.main(new_args(root, *extra)) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err
    assert listing(root) == before


def test_new_refuses_an_existing_id_a_missing_agent_and_an_unknown_scenario(tmp_path, capsys):
    root = make_repo(tmp_path / "repo")
    before = listing(root)
    for argv, said in (
        (["new", "demo", "--agent", str(AGENT), "--scenario", "kill-mid-tool", "--pin", "six==1.17.0"], "exists"),
        (["new", "x", "--agent", "nope.py", "--scenario", "kill-mid-tool", "--pin", "six==1.17.0"], "no such file"),
        (["new", "x", "--agent", str(AGENT), "--scenario", "nope", "--pin", "six==1.17.0"], "--scenario 'nope'"),
        (["new", "X Y", "--agent", str(AGENT), "--scenario", "kill-mid-tool", "--pin", "six==1.17.0"], "finding id"),
    ):
        assert cli.main([*argv, "--root", str(root)]) == cli.EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err, err
    assert listing(root) == before


@pytest.mark.network  # uv pip compile resolves the pin set against the index (uv's cache answers most of it)
def test_new_makes_a_finding_that_loads_with_stubs_check_reports_and_a_release_that_does_not_resolve_writes_nothing(
    tmp_path, capsys
):
    root = make_repo(tmp_path / "repo")
    before = listing(root)
    assert cli.main(new_args(root, "--pin", "six==0.0.0.404")) == cli.EXIT_BAD_INPUT
    assert "--pin six==0.0.0.404:" in capsys.readouterr().err and listing(root) == before

    issue = "https://github.com/example/framework/issues/1"
    code = cli.main(new_args(root, "--pin", "six==1.17.0", "--issue", issue, "--agent-args", "no-claim"))
    assert code == 0, capsys.readouterr().err
    folder = root / "findings" / "upstream-1"
    assert sorted(p.name for p in folder.rglob("*")) == [
        "approval_framework.py",
        "finding.toml",
        "pins",
        "six-1.17.0.in",
        "six-1.17.0.txt",
        "witness",
        "witness.py",
    ]
    finding = load_all(root)["upstream-1"]
    assert finding.agent == "approval_framework.py no-claim" and finding.scenario == "resume-after-approval"
    assert finding.links["issues"] == [issue] and [p.name for p in finding.pins] == ["six-1.17.0"]
    finding.pins[0].check_locked()  # hash-locked, as --require-hashes needs
    assert {"ipykernel", "pandas", "matplotlib", "six"} <= set(
        line.split("==")[0] for line in finding.pins[0].requirements.read_text().splitlines() if "==" in line
    )
    # One claim stub per default point of the scenario, none of them a claim yet: the finding runs, check lists them.
    from plugpull.scenarios.registry import REGISTRY

    points = REGISTRY["resume-after-approval"].default_points or REGISTRY["resume-after-approval"].points
    assert finding.claims == () and len(finding.stubs) == len(points)
    witness = (folder / "witness" / "witness.py").read_text()
    assert "import plugpull" not in witness and "from plugpull" not in witness
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbformat.validate(nbformat.read(str(finding.notebook), as_version=4))
    assert finding.notebook.read_text() == scaffold.text_of(finding)
    assert (root / "docs" / "finding-upstream-1.md").read_text().startswith("# Finding `upstream-1`")

    problems = cli.generated_problems(root, {"upstream-1"})
    assert sum("is a stub" in p for p in problems) == len(points)
    assert any("title is still a TODO" in p for p in problems) and any(
        "witness/witness.py: a stub" in p for p in problems
    )
    assert cli.main(["check", "--finding", "upstream-1", "--root", str(root)]) == cli.EXIT_FAILED
    # A second `new` with the same id is refused and changes nothing.
    now = listing(root)
    assert cli.main(new_args(root, "--pin", "six==1.17.0")) == cli.EXIT_BAD_INPUT
    assert listing(root) == now
