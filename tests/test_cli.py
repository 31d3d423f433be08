"""The command line as a user meets it: exit codes, one-line errors, real runs.

Bad input never starts a target, so it is tested in this process through ``cli.main(argv)``
(the ``plugpull_main`` fixture); one test runs the installed console script to hold the same contract
end to end. Runs of agents are ``cli.main(argv)`` with --fork-server too (``plugpull``: what they check is what
the command prints and returns), each phase a real process forked from the process's servers and SIGKILLed for
real; Ctrl-C (a cold run found by its command line) and ``uv run`` go through real subprocesses.
"""

import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import shared_forks
from installed import requires

AGENTS = Path(__file__).parent / "agents"


@pytest.fixture
def plugpull(plugpull_forking):
    """``plugpull ARGS`` for a real run, in this process with --fork-server (conftest's plugpull_forking)."""
    return plugpull_forking


@pytest.fixture
def plugpull_sdk(plugpull_main, monkeypatch):
    """``plugpull ARGS --fork-server`` in this process for a run of the Agents SDK's built-in app: its phases fork from
    the pytest process's server of the SDK's family (tests/shared_forks.py), the test in the family's xdist group, so
    that the run imports the SDK once, not again on this module's worker (or beside AgentForks, whose
    tests/agents on PYTHONPATH it does not need)."""
    from plugpull import forkserver

    monkeypatch.setattr(forkserver, "ForkServers", lambda: shared_forks.FORKS)
    return lambda *argv: plugpull_main(*argv, "--fork-server")


def agent(*words: str) -> str:
    return shlex.join([sys.executable, *words])


def test_an_unknown_target_is_one_line_exit_2_listing_the_known_ones(plugpull_main):
    run = plugpull_main("--target", "no-such-framework")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "plugpull: unknown target 'no-such-framework'; known targets: "
        + ", ".join(__import__("plugpull.targets").targets.BUILT_INS)
    ]


def test_the_console_script_exits_2_with_one_line_and_no_traceback_on_bad_input(tmp_path):
    # The one subprocess for bad input: the `plugpull` entry point of pyproject's [project.scripts] turns
    # main()'s return value into the process's exit code.
    script = Path(sys.executable).with_name("plugpull")
    run = subprocess.run(
        [str(script), "--target", "no-such-framework"],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        timeout=120,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [run.stderr.strip()]
    assert run.stderr.startswith("plugpull: unknown target 'no-such-framework'; known targets: ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--repeat", "0"], "plugpull: --repeat must be a whole number >= 1"),
        (["--jobs", "0"], "plugpull: --jobs must be a whole number >= 1"),
        (["-j", "-3"], "plugpull: --jobs must be a whole number >= 1"),
        (["--timeout", "0"], "plugpull: --timeout must be a positive number of seconds"),
        (["--timeout", "nan"], "plugpull: --timeout must be a positive number of seconds"),
        (["--timeout", "inf"], "plugpull: --timeout must be a positive number of seconds"),
        (["--repeat", "two"], "plugpull: argument --repeat: invalid int value: 'two'"),
    ],
)
def test_a_number_out_of_range_is_one_line_exit_2_before_anything_runs(tmp_path, plugpull_main, args, line):
    run = plugpull_main("--agent", agent("-m", "fake_framework", "no-key"), *args)
    assert (run.returncode, run.stdout, run.stderr.splitlines()) == (2, "", [line])
    assert list(tmp_path.iterdir()) == []


def test_help_exits_0_and_names_the_exit_codes_and_every_scenario(plugpull_main):
    from plugpull.scenarios.registry import REGISTRY

    run = plugpull_main("--help")
    assert run.returncode == 0 and run.stderr == ""
    text = " ".join(run.stdout.split())
    assert "exit codes: 0 no ERROR (FAILs too, unless --strict); 1 --strict and a FAIL; 2 an ERROR or bad input" in text
    assert all(scenario.name in text for scenario in REGISTRY)


def test_help_names_plugpull_report_and_each_of_its_subcommands(plugpull_main):
    from plugpull.cli import REPORT_SUBCOMMANDS
    from plugpull.report.harness.cli import COMMANDS

    assert list(REPORT_SUBCOMMANDS) == list(COMMANDS)
    run = plugpull_main("--help")
    assert run.stdout.splitlines()[1].strip().startswith("plugpull report SUBCOMMAND [options]")
    text = " ".join(run.stdout.split())
    assert "`plugpull report SUBCOMMAND` runs and checks the findings" in text
    assert ", ".join(REPORT_SUBCOMMANDS) in text


def test_an_empty_agent_command_is_one_line_exit_2(plugpull_main):
    run = plugpull_main("--agent", "  ")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "needs a command" in run.stderr


def test_a_malformed_agent_command_is_one_line_exit_2(plugpull_main):
    run = plugpull_main("--agent", "python 'unclosed")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


def test_an_unknown_option_value_is_one_line_exit_2(plugpull_main):
    run = plugpull_main("--point", "mid-effect")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1


def test_json_carries_the_schema_and_every_result(tmp_path, plugpull):
    run = plugpull("--agent", agent("-m", "fake_framework", "no-key"), "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["schema"] == 3
    assert [(r["point"], r["verdict"]) for r in doc["results"]] == [("before-effect", "PASS"), ("after-effect", "FAIL")]
    assert doc["results"][1]["evidence"]["counts"] == {"charge": 2}
    # A user's agent declares no notes: its FAIL says only what was measured.
    assert doc["results"][1]["notes"] == [] and doc["results"][1]["message"].startswith("effect duplicated")


def test_strict_exits_1_on_a_fail(tmp_path, plugpull):
    run = plugpull("--agent", agent("-m", "fake_framework", "no-key"), "--strict")
    assert run.returncode == 1
    assert "FAIL   kill-mid-tool  after-effect" in run.stdout
    assert run.stdout.splitlines()[-1] == "1 FAIL, 1 PASS of 2 lines; exit code 1 (--strict)"


def test_a_run_with_a_fail_ends_saying_its_exit_code_is_0_without_strict(tmp_path, plugpull):
    run = plugpull("--agent", agent("-m", "fake_framework", "no-key"))
    assert run.returncode == 0
    assert run.stdout.splitlines()[-2:] == [
        "",
        "1 FAIL, 1 PASS of 2 lines; exit code 0: a FAIL fails the command only with --strict (exit 1)",
    ]


def test_a_duplicate_made_with_a_new_key_on_resume_shows_both_keys_under_its_fail(tmp_path, plugpull):
    import re

    command = agent("-m", "fake_framework", "random-key")
    run = plugpull("--agent", command, "--point", "after-effect")
    lines = run.stdout.splitlines()
    assert lines[0].startswith("FAIL   kill-mid-tool  after-effect charge#1  ")
    assert lines[1] == "    resume called charge once"
    said = re.fullmatch(
        r"    charge counted twice: (\w{12})… \(start, held after-effect\) vs (\w{12})… \(resume\): "
        r"resume used a new key: \1… \(start\) vs \2… \(resume\)",
        lines[2],
    )
    assert said is not None, lines[2]
    assert said[1] != said[2]


def test_an_error_exits_2_and_shows_the_targets_stderr(tmp_path, plugpull):
    run = plugpull("--agent", agent("-m", "misbehaving", "crashes"), "--point", "before-effect")
    assert run.returncode == 2
    lines = run.stdout.splitlines()
    assert lines[0].startswith("ERROR  kill-mid-tool  before-effect")
    assert any(line.startswith("    | RuntimeError: the agent crashed") for line in lines[1:])


def test_nothing_is_left_in_the_temp_dir_after_a_run(tmp_path, plugpull):
    plugpull("--agent", agent("-m", "fake_framework", "no-key"))
    assert list(tmp_path.iterdir()) == []


def test_keep_workdir_keeps_it_and_says_where(tmp_path, plugpull):
    run = plugpull("--agent", agent("-m", "fake_framework", "no-key"), "--point", "after-effect", "--keep-workdir")
    kept = [line.split(": ", 1)[1] for line in run.stdout.splitlines() if "workdir kept" in line]
    assert len(kept) == 1 and (Path(kept[0]) / "state.json").exists()


def test_ctrl_c_exits_130_and_leaves_no_process_socket_or_temp_dir(tmp_path, processes_carrying):
    import signal
    import time

    marker = str(tmp_path)  # unique to this test's target processes
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    command = agent(str(AGENTS / "misbehaving.py"), "hangs-on-resume", marker)
    # Started as a terminal's foreground program is: with SIGINT at its default even when this
    # pytest inherited it ignored (a background job); the CLI rightly keeps an ignored SIGINT.
    from plugpull.process import sigint_reset

    proc = subprocess.Popen(
        [sys.executable, "-m", "plugpull.cli", "--agent", command, "--point", "after-effect"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_reset(),
    )
    deadline = time.monotonic() + 60

    def cmdline(pid: int) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # it exited since it was listed (start's group is killed meanwhile)
            return b""

    # Wait until the target's resume phase runs (its argv ends with "resume").
    while not any(cmdline(p).endswith(b"\0resume\0") for p in processes_carrying(marker)):
        assert time.monotonic() < deadline, "resume never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:  # a CLI that ignored the SIGINT must not stay behind as this process's zombie
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert err.strip().endswith("plugpull: interrupted; targets killed, temporary files removed")
    assert "Traceback" not in err
    assert processes_carrying(marker) == []
    assert list(tmp_path.iterdir()) == []


@shared_forks.group("agents")
def test_json_for_openai_agents_carries_the_write_number_point_and_store_counts(tmp_path, plugpull_sdk):
    # Forked from a server that imported the Agents SDK once (what this test reads is the JSON, not a cold start):
    # 3 s of CPU instead of 10 for the probe, the kill run and the resume.
    run = plugpull_sdk("--target", "openai-agents", "--point", "ack-lost", "--json")
    doc = json.loads(run.stdout)
    (result,) = doc["results"]
    assert (result["scenario"], result["point"], result["evidence"]["write"]) == ("lost-session-write", "ack-lost", 4)
    assert result["message"].startswith("write 4: ")
    assert result["evidence"]["staged_stored"] >= 1 and all(
        isinstance(c, int) for c in result["evidence"]["counts"].values()
    )


def test_an_agent_runs_the_scenario_named_by_scenario(tmp_path, plugpull):
    command = agent("-m", "approval_framework", "no-claim")
    run = plugpull("--agent", command, "--scenario", "resume-after-approval", "--point", "double-resume", "--json")
    assert run.returncode == 0, run.stderr
    [result] = json.loads(run.stdout)["results"]
    assert (result["scenario"], result["point"], result["verdict"]) == (
        "resume-after-approval",
        "double-resume",
        "FAIL",
    )


def test_scenario_alone_selects_the_built_in_targets_made_for_it():
    import argparse

    from plugpull.cli import select_targets

    args = argparse.Namespace(
        target=[], agent=[], scenario="lost-session-write", repeat=1, jobs=1, workdir=None, timeout=10.0
    )
    assert {t.name for t in select_targets(args)} == {"openai-agents"}


def test_a_workdir_that_is_not_a_directory_is_one_line_exit_2(tmp_path, plugpull_main):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    # An --agent, so no built-in target is picked and no "skipping X" line depends on what is installed.
    run = plugpull_main("--workdir", str(not_a_dir), "--agent", agent("-c", "pass"))
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [f"plugpull: --workdir {str(not_a_dir)!r} is not a directory"]


def test_an_unwritable_workdir_is_one_line_exit_2(plugpull_main):
    # /proc refuses new directories even for root, which ignores permission bits.
    run = plugpull_main("--workdir", "/proc", "--agent", agent("-c", "pass"))
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("plugpull: --workdir '/proc' is not writable")


# what a new user met testing their own agent.


def test_a_point_of_no_selected_scenario_is_one_line_exit_2_naming_each_scenarios_points(plugpull_main):
    run = plugpull_main("--agent", agent("-m", "fake_framework", "no-key"), "--point", "approve-elsewhere")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [
        "plugpull: --point approve-elsewhere is not a point of the selected scenario: "
        "kill-mid-tool has before-effect, after-effect"
    ]


def test_a_point_of_another_targets_scenario_is_one_line_exit_2(plugpull_main):
    run = plugpull_main("--target", "langgraph", "--point", "write-lost")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "plugpull: --point write-lost is not a point of the selected scenario: "
        "kill-mid-tool has before-effect, after-effect"
    ]


def test_hold_names_the_held_call_and_the_effect_done_before_the_kill_and_again(tmp_path, plugpull):
    command = agent("-m", "fake_framework", "email-then-charge")
    run = plugpull("--agent", command, "--point", "after-effect", "--hold", "charge")
    assert run.returncode == 0, run.stderr
    line = run.stdout.splitlines()[0]
    assert line.startswith("FAIL   kill-mid-tool  after-effect charge#1  ")
    assert line.endswith(
        "effect duplicated: the provider saw 2 send_email (expected 1); "
        "send_email was done before the kill and again by resume"
    )
    assert (
        run.stdout.splitlines()[1]
        == "    resume called send_email once, charge once (1 with a key already recorded, so not counted again)"
    )


def test_without_hold_the_first_call_is_held_and_named(tmp_path, plugpull):
    command = agent("-m", "fake_framework", "email-then-charge")
    run = plugpull("--agent", command, "--point", "before-effect")
    assert run.stdout.startswith("PASS   kill-mid-tool  before-effect send_email#1  ")


def verdicts(stdout: str) -> list[tuple[str, str]]:
    """(verdict, point as shown) of each result line."""
    return [(line[:4], line.split("  ")[2].strip()) for line in stdout.splitlines() if line[:4] in ("PASS", "FAIL")]


def test_without_hold_kill_mid_tool_kills_at_every_effect_call_in_order_and_says_its_coverage(tmp_path, plugpull):
    # send_email has no key and the framework re-runs the whole tool: once the email is sent, a
    # kill anywhere after it sends it again.
    command = agent("-m", "fake_framework", "email-then-charge")
    run = plugpull("--agent", command)
    assert run.returncode == 0, run.stderr
    assert verdicts(run.stdout) == [
        ("PASS", "before-effect send_email#1"),
        ("FAIL", "after-effect send_email#1"),
        ("FAIL", "before-effect charge#1"),
        ("FAIL", "after-effect charge#1"),
    ]
    # The coverage line, then a blank line and the closing line.
    assert run.stdout.splitlines()[-3] == f"kill-mid-tool, {command}: killed at 2 of 2 effect calls, 4 lines"


def test_first_effect_keeps_the_quick_run_and_the_coverage_names_the_calls_not_killed(tmp_path, plugpull):
    command = agent("-m", "fake_framework", "email-then-charge")
    run = plugpull("--agent", command, "--first-effect")
    assert verdicts(run.stdout) == [("PASS", "before-effect send_email#1"), ("FAIL", "after-effect send_email#1")]
    assert run.stdout.splitlines()[-3] == (  # then a blank line and the closing line
        f"kill-mid-tool, {command}: killed at 1 of 2 effect calls, 2 lines; not killed at charge#1"
    )
    doc = json.loads(plugpull("--agent", command, "--first-effect", "--json").stdout)
    assert [r["point"] for r in doc["results"]] == ["before-effect", "after-effect"]
    assert doc["results"][0]["evidence"]["effect_calls"] == ["send_email#1", "charge#1"]


def test_repeat_counts_each_held_call_on_its_own_row(tmp_path, plugpull):
    command = agent("-m", "fake_framework", "email-then-charge")
    run = plugpull("--agent", command, "--point", "after-effect", "--repeat", "2")
    rows = run.stdout.splitlines()[1:3]  # the tally's rows; the coverage and closing lines follow
    assert [row.split()[:4] + row.split()[5:7] for row in rows] == [
        ["2", "0", "2", "0", "after-effect", "send_email:1"],
        ["2", "0", "2", "0", "after-effect", "charge:1"],
    ]


def test_hold_given_twice_runs_both_calls_in_the_order_given(tmp_path, plugpull):
    command = agent("-m", "fake_framework", "email-then-charge")
    run = plugpull("--agent", command, "--hold", "charge", "--hold", "send_email:1", "--point", "after-effect")
    assert verdicts(run.stdout) == [("FAIL", "after-effect charge#1"), ("FAIL", "after-effect send_email#1")]
    doc = json.loads(
        plugpull(
            "--agent", command, "--hold", "charge", "--hold", "send_email", "--json", "--point", "after-effect"
        ).stdout
    )
    # The JSON point stays the scenario's; the held call of each line is its evidence's hold.
    assert [(r["point"], r["evidence"]["hold"]) for r in doc["results"]] == [
        ("after-effect", "charge:1"),
        ("after-effect", "send_email:1"),
    ]


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["--scenario", "power-loss", "--hold", "a", "--hold", "b"],
            "plugpull: --hold given 2 times: only kill-mid-tool runs one line per held call; power-loss holds one "
            "(give --hold once)",
        ),
        (["--hold", "a", "--first-effect"], "plugpull: --first-effect and --hold both choose the held call: give one"),
        (
            ["--hold", "a", "--hold", "b", "--sibling", "c:finished"],
            "plugpull: --sibling needs exactly one --hold: the call killed beside the sibling",
        ),
        (
            ["--scenario", "every-boundary", "--first-effect"],
            "plugpull: --first-effect does not apply to every-boundary (it kills at every boundary in turn)",
        ),
    ],
)
def test_a_contradictory_hold_is_one_line_exit_2(args, line, plugpull_main):
    run = plugpull_main("--agent", "python x.py", *args)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [line]


def test_a_hold_no_call_reaches_is_an_error_that_names_it(tmp_path, plugpull):
    command = agent("-m", "fake_framework", "email-then-charge")
    run = plugpull("--agent", command, "--point", "after-effect", "--hold", "charge:2")
    assert run.returncode == 2
    assert run.stdout.splitlines()[0].endswith(
        "start ended (exit code 0) but no call was held at after-effect (no call matched --hold charge:2)"
    )


def test_a_malformed_hold_is_one_line_exit_2(plugpull_main):
    run = plugpull_main("--agent", "python x.py", "--hold", "charge:0")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "plugpull: --hold 'charge:0': expected NAME or NAME:N with N a whole number >= 1, e.g. charge_card:2"
    ]


def test_hold_with_only_a_store_scenario_is_one_line_exit_2(plugpull_main):
    run = plugpull_main("--target", "openai-agents", "--hold", "refund")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "plugpull: --hold applies to kill-mid-tool, resume-after-approval, resume-after-upgrade, power-loss, tool-error; no selected target runs one"
    ]
    # docs/cli.md quotes it (wrapped): the page says what the command says.
    page = " ".join((Path(__file__).parent.parent / "docs" / "cli.md").read_text().split())
    assert run.stderr.strip().removeprefix("plugpull: ") in page


def test_a_fail_shows_resumes_stderr_and_that_resume_made_no_call(tmp_path, plugpull):
    command = agent("-m", "protocol_mistakes", "forgets-on-resume")
    run = plugpull("--agent", command, "--point", "before-effect")
    assert run.returncode == 0
    assert run.stdout.splitlines()[0].endswith("effect lost: the provider saw 0 charge (expected 1)")
    assert run.stdout.splitlines()[1:] == [
        "    resume made 0 record_effect calls",
        "    | resume: run already finished",
        "",
        "1 FAIL of 1 line; exit code 0: a FAIL fails the command only with --strict (exit 1)",
    ]


def test_a_second_approval_kept_at_1_by_a_key_says_why_it_still_fails(tmp_path, plugpull):
    command = agent("-m", "approval_framework", "no-claim")
    run = plugpull("--agent", command, "--scenario", "resume-after-approval", "--point", "double-resume")
    lines = run.stdout.splitlines()
    assert lines[0].startswith("FAIL") and "the provider saw exactly 1 refund" in lines[0]
    assert lines[1] == "    the second approve called refund once (1 with a key already recorded, so not counted again)"


def test_an_agent_without_the_resume_subcommand_is_an_error_asking_about_it(tmp_path, plugpull):
    command = agent("-m", "protocol_mistakes", "start-only")
    run = plugpull("--agent", command, "--point", "after-effect")
    assert run.returncode == 2
    lines = run.stdout.splitlines()
    # Found before any kill: resume is run first on the finished clean run, so nothing is held.
    assert lines[0].startswith("ERROR  kill-mid-tool  after-effect  ")
    assert lines[0].endswith(
        "resume exited 2 with a usage message: does COMMAND accept the `resume` argument? "
        "(plugpull runs COMMAND start, then COMMAND resume; docs/agent-protocol.md)"
    )
    assert any(line.startswith("    | usage: protocol_mistakes.py start-only") for line in lines)


def test_state_kept_outside_the_workdir_is_an_error_with_the_hint(tmp_path, plugpull):
    state = tmp_path / "state"
    state.mkdir()
    command = agent("-m", "protocol_mistakes", "state-outside", str(state))
    run = plugpull("--agent", command, "--point", "after-effect")
    assert run.returncode == 2
    assert run.stdout.splitlines()[0].endswith(
        "start exited 0 and the tool never called record_effect; the clean run did call it: is the agent's "
        "state kept outside PLUGPULL_WORKDIR? (each run gets a new empty one; state found from an earlier run "
        "makes start skip the tool)"
    )


def test_a_missing_workdir_is_created(tmp_path, plugpull):
    where = tmp_path / "runs"
    run = plugpull(
        "--agent", agent("-m", "fake_framework", "no-key"), "--point", "after-effect", "--workdir", str(where)
    )
    assert run.returncode == 0, run.stderr
    assert where.is_dir() and list(where.iterdir()) == []


def test_a_workdir_whose_parent_is_missing_is_one_line_exit_2(tmp_path, plugpull_main):
    where = tmp_path / "no" / "runs"
    run = plugpull_main("--agent", "python x.py", "--workdir", str(where))
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"plugpull: --workdir {str(where)!r}: its parent {str(where.parent)!r} is not a directory"
    ]
    assert not where.parent.exists()


def test_a_setup_error_that_stops_every_point_prints_once(tmp_path, plugpull):
    run = plugpull("--agent", agent(str(tmp_path / "missing.py")))
    assert run.returncode == 2
    [line, blank, closing] = [line for line in run.stdout.splitlines() if not line.startswith("    ")]
    assert (blank, closing.split(";")[0]) == ("", "2 ERROR of 2 lines")
    assert line.startswith("ERROR  kill-mid-tool  every point  ")
    assert line.endswith("a clean run (no kill) ended (exit code 2)")


@requires("agents")
@shared_forks.group("agents")
def test_lost_session_write_runs_an_agent_as_docs_agent_protocol_describes(tmp_path, plugpull_sdk):
    # docs/agent-protocol.md, "lost-session-write": call_store for every Session method and
    # announce(staged_input=TOKEN); the built-in app is such an agent, run here as --agent.
    command = shlex.join([sys.executable, "-m", "plugpull.targets.openai_agents_app"])
    # --fork-server: a `python -m` agent forks from a server that imported it once; the protocol is the same.
    run = plugpull_sdk("--agent", command, "--scenario", "lost-session-write", "--point", "ack-lost")
    assert run.returncode == 0, run.stderr
    line = run.stdout.splitlines()[0]
    assert line.startswith("FAIL   lost-session-write  ack-lost  ")
    assert "[openai-agents " in line and "write 4: staged input duplicated: stored 2 times after resume" in line


def test_uv_run_prints_no_bytecode_line():
    # pyproject.toml's [tool.uv] compile-bytecode made every `uv run` re-scan site-packages and say
    # "Bytecode compiled N files"; bytecode is now compiled by `uv sync --compile-bytecode` only.
    import shutil

    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    env = {k: v for k, v in os.environ.items() if k != "UV_COMPILE_BYTECODE"}
    root = Path(__file__).parent.parent
    run = subprocess.run(
        [uv, "run", "--frozen", "plugpull", "--help"], cwd=root, capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert "Bytecode compiled" not in run.stderr


def test_a_target_whose_framework_is_not_installed_is_one_line_exit_2_naming_the_extra(plugpull_main):
    import importlib.util

    if importlib.util.find_spec("crewai") is not None:
        import pytest

        pytest.skip("crewai is installed here")
    run = plugpull_main("--target", "crewai")
    assert run.returncode == 2
    # This checkout is a uv project: the message is its command, not pip's (tests/targets/test_installation.py).
    assert run.stderr.strip() == (
        "plugpull: target 'crewai' needs 'crewai', which is not installed: UV_PROJECT_ENVIRONMENT=.venv-crewai "
        "uv sync --no-dev --extra crewai, then run plugpull as UV_PROJECT_ENVIRONMENT=.venv-crewai uv run --no-dev "
        "--extra crewai plugpull ..."
    )


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["--agent", "python x.py", "--boundary", "3"],
            "plugpull: --boundary applies to every-boundary, power-loss; no selected target runs one",
        ),
        (
            ["--agent", "python x.py", "--scenario", "kill-mid-tool", "--random-kills", "2"],
            "plugpull: --random-kills applies to every-boundary; no selected target runs it",
        ),
        (["--agent", "python x.py", "--random-kills", "-1"], "plugpull: --random-kills must be a whole number >= 0"),
        (
            ["--agent", "python x.py", "--random-kills", "2", "--seed", "-3"],
            "plugpull: --seed must be a whole number >= 0",
        ),
        (
            ["--agent", "python x.py", "--scenario", "every-boundary", "--seed", "7"],
            "plugpull: --seed needs --random-kills N: it seeds the random kills",
        ),
        (
            ["--agent", "python x.py", "--seed", "7"],
            "plugpull: --seed applies to every-boundary; no selected target runs it",
        ),
        (
            ["--agent", "python x.py", "--scenario", "every-boundary", "--point", "random"],
            "plugpull: --point random needs --random-kills N",
        ),
        (
            ["--agent", "python x.py", "--scenario", "every-boundary", "--hold", "refund"],
            "plugpull: --hold does not apply to every-boundary (it holds every boundary in turn; use --boundary)",
        ),
        (
            ["--target", "openai-agents", "--scenario", "every-boundary"],
            "plugpull: target 'openai-agents' has no kill-and-resume run (it is a lost-session-write target)",
        ),
    ],
)
def test_every_boundary_bad_input_is_one_line_exit_2(tmp_path, args, line, plugpull_main):
    run = plugpull_main(*args)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [line]
    assert list(tmp_path.iterdir()) == []


def test_every_boundary_prints_one_line_per_boundary_with_its_place_and_json_keeps_it(tmp_path, plugpull):
    command = agent("-m", "boundary_framework", "plain")
    args = ["--agent", command, "--scenario", "every-boundary", "--boundary", "effect refund 1"]
    run = plugpull(*args)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if line[:4] in ("PASS", "FAIL")]
    assert [line.split("  ")[2].strip() for line in lines] == [
        "boundary 3/6 before effect refund 1",
        "boundary 3/6 after effect refund 1",
    ]
    doc = json.loads(plugpull(*args, "--json", "--point", "after").stdout)
    [result] = doc["results"]
    assert result["evidence"]["boundary"]["index"] == 3
    assert result["evidence"]["boundary"]["of"] == 6
    assert result["evidence"]["boundary"]["label"] == "effect refund 1"


def test_random_kills_print_their_seed_and_a_random_fail_prints_its_aimed_command(tmp_path, plugpull):
    command = agent("-m", "boundary_framework", "slow")
    drawn = plugpull("--agent", command, "--random-kills", "1", "--point", "random")
    seed = drawn.stderr.splitlines()[0].removeprefix("plugpull: random kills drawn with --seed ").split(" ")[0]
    assert drawn.stderr.splitlines()[0] == (
        f"plugpull: random kills drawn with --seed {seed} (give it again to replay the same kills)"
    )
    run = plugpull("--agent", command, "--random-kills", "2", "--seed", "155")
    lines = run.stdout.splitlines()
    assert lines[0].startswith("PASS   every-boundary  random 1: between before model-call 1 and after model-call 1")
    assert lines[1].startswith("FAIL   every-boundary  random 2: between call of effect refund 1 and before")
    # Under the FAIL: the call summary, why the refund counted twice, then how to replay the kill alone.
    assert lines[4] == (
        f"    reproduce alone: plugpull --agent {shlex.quote(command)} --scenario every-boundary "
        "--boundary 'effect refund 1' --point after"
    )


UPGRADE_USAGE = (
    'plugpull: --scenario resume-after-upgrade takes exactly two commands: --agent "CMD_A" --agent "CMD_B" '
    "(A starts, B resumes)"
)


@pytest.mark.parametrize(
    "args, tail",
    [
        ([], "; got 0"),
        (["--agent", agent("-m", "versioned_framework", "1.0", "accept")], "; got 1"),
        (["--agent", "a", "--agent", "b", "--agent", "c"], "; got 3"),
        (
            ["--target", "agent-framework", "--agent", "a", "--agent", "b"],
            ", not --target; built-in targets: plugpull report --finding resume-after-upgrade",
        ),
    ],
)
def test_resume_after_upgrade_without_exactly_two_agent_commands_is_one_line_exit_2(
    tmp_path, args, tail, plugpull_main
):
    run = plugpull_main("--scenario", "resume-after-upgrade", *args)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [UPGRADE_USAGE + tail]
    assert list(tmp_path.iterdir()) == []


def test_resume_after_upgrade_starts_with_the_first_command_and_resumes_with_the_second(tmp_path, plugpull):
    framework = "versioned_framework"
    run = plugpull(
        "--scenario",
        "resume-after-upgrade",
        "--agent",
        agent("-m", framework, "1.0", "accept"),
        "--agent",
        agent("-m", framework, "2.0", "refuse"),
        "--point",
        "after-effect",
        "--json",
    )
    assert run.returncode == 0, run.stderr
    (result,) = json.loads(run.stdout)["results"]
    assert result["verdict"] == "FAIL" and result["message"].startswith("refused the saved run: 2.0 would not resume")
    assert result["evidence"]["clean"]["start"]["argv"][-3:] == ["1.0", "accept", "start"]
    assert result["evidence"]["clean_resume"]["start"]["argv"][-3:] == ["2.0", "refuse", "start"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--sibling", "send_email:finished"], "--sibling needs --hold NAME"),
        (["--hold", "charge_card", "--sibling", "send_email"], "expected NAME:STATE"),
        (["--hold", "charge_card", "--sibling", "send_email:done"], "expected NAME:STATE"),
        (["--hold", "charge_card", "--sibling", "charge_card:running"], "must be another effect"),
        (["--scenario", "every-boundary", "--sibling", "send_email:running"], "does not apply to every-boundary"),
    ],
)
def test_a_bad_sibling_is_one_line_exit_2(args, says, tmp_path, plugpull_main):
    run = plugpull_main("--agent", agent("-c", "pass"), *args)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert says in run.stderr
    assert not list(tmp_path.iterdir())


def test_sibling_applies_to_kill_mid_tool_only(plugpull_main):
    run = plugpull_main("--target", "openai-agents-approval", "--hold", "refund", "--sibling", "email:running")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "--sibling applies to kill-mid-tool" in run.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--save", "checkpoint-save"], "expected NAME:N:STATE"),
        (["--save", "checkpoint-save:2"], "expected NAME:N:STATE"),
        (["--save", "checkpoint-save:0:withheld"], "expected NAME:N:STATE"),
        (["--save", "checkpoint-save:2:written"], "expected NAME:N:STATE"),
        (["--save", ":2:landed"], "expected NAME:N:STATE"),
        (["--scenario", "every-boundary", "--save", "checkpoint-save:2:landed"], "does not apply to every-boundary"),
        (
            ["--scenario", "resume-after-approval", "--save", "checkpoint-save:2:landed"],
            "--save applies to kill-mid-tool",
        ),
    ],
)
def test_a_bad_save_is_one_line_exit_2(args, says, tmp_path, plugpull_main):
    run = plugpull_main("--agent", agent("-c", "pass"), *args)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert says in run.stderr
    assert not list(tmp_path.iterdir())


def test_save_aims_the_kill_at_a_background_save_of_the_agent(tmp_path, plugpull):
    saver = "background_saver"
    args = ["--point", "after-effect", "--json"]
    withheld = plugpull("--agent", agent("-m", saver, "background"), "--save", "plan-save:1:withheld", *args)
    landed = plugpull("--agent", agent("-m", saver, "background"), "--save", "plan-save:1:landed", *args)
    assert [json.loads(r.stdout)["results"][0]["verdict"] for r in (withheld, landed)] == ["FAIL", "PASS"]
    assert json.loads(landed.stdout)["results"][0]["evidence"]["save_specs"] == ["plan-save:1:landed"]


def test_every_boundary_maps_a_built_ins_unaimed_variants_once():
    # The langgraph target's model_step variants run the same command as model_step=raced: mapped once.
    from plugpull.cli import build_parser, select_targets
    from plugpull.targets import BUILT_INS

    if not BUILT_INS["langgraph"].installed():
        pytest.skip("langgraph is not installed")
    args = build_parser().parse_args(["--scenario", "every-boundary", "--target", "langgraph"])
    chosen = select_targets(args)
    assert [t.options for t in chosen] == [v.options for v in BUILT_INS["langgraph"].variants if not v.aim.saves]
    assert len({t.argv for t in chosen}) == len(chosen)


def test_docs_cli_md_lists_every_option_and_who_reads_it_as_the_scenarios_declare():
    # docs/cli.md is the page cli.py cites: each option of the parser has a row, and the "read by" column
    # of a scenario option is what the scenarios' contracts say (the same source as --help's prefixes).
    from plugpull.aim import FLAGS
    from plugpull.cli import build_parser, read_by
    from plugpull.scenarios.registry import REGISTRY

    page = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    rows = {}
    for line in page.splitlines():
        if line.startswith("| `-"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            for flag in cells[0].replace("`", "").split(","):
                rows[flag.strip().split(" ")[0]] = cells[-1]
    flags = {f for action in build_parser()._actions for f in action.option_strings} - {"-h", "--help"}
    assert flags - set(rows) == set()
    assert {f.flag: rows[f.flag] for f in FLAGS} == {f.flag: read_by(f.field) for f in FLAGS}
    # The options a scenario owns (Scenario.add_options) are read by that scenario only.
    owned = {s.flag(f.name): s.name for s in REGISTRY if s.Options for f in dataclasses.fields(s.Options)}
    assert owned and {flag: rows[flag] for flag in owned} == owned


def test_an_approval_lost_without_any_fault_is_a_fail_and_follows_the_fail_exit_rules(tmp_path, plugpull):
    command = agent("-m", "approval_framework", "pauses-again")
    run = plugpull("--agent", command, "--scenario", "resume-after-approval")
    assert run.returncode == 0, run.stdout
    verdicts = [line.split()[0] for line in run.stdout.splitlines() if line.split()[:1] in (["FAIL"], ["PASS"])]
    assert verdicts == ["FAIL"] * 5 and "ERROR" not in run.stdout
    assert "effect lost: the run paused again instead of running the approved tool" in run.stdout
    assert run.stdout.count("moot: the clean run already failed without any fault (see approve-elsewhere)") == 4
    # Only the line that ran something sums up its calls: a moot line ran no fault of its own.
    assert run.stdout.count("made 0 record_effect calls") == 1
    strict = plugpull(
        "--agent", command, "--scenario", "resume-after-approval", "--point", "approve-elsewhere", "--strict"
    )
    assert strict.returncode == 1
