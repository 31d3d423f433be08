"""The command line as a user meets it: real subprocesses, exit codes, one-line errors."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

AGENTS = Path(__file__).parent / "agents"


def plugpull(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "plugpull.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def agent(*words: str) -> str:
    return shlex.join([sys.executable, *words])


def test_an_unknown_target_is_one_line_exit_2_listing_the_known_ones(tmp_path):
    run = plugpull("--target", "no-such-framework", tmp=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "plugpull: unknown target 'no-such-framework'; known targets: "
        + ", ".join(__import__("plugpull.targets").targets.BUILT_INS)
    ]


def test_an_empty_agent_command_is_one_line_exit_2(tmp_path):
    run = plugpull("--agent", "  ", tmp=tmp_path)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "needs a command" in run.stderr


def test_a_malformed_agent_command_is_one_line_exit_2(tmp_path):
    run = plugpull("--agent", "python 'unclosed", tmp=tmp_path)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


def test_an_unknown_option_value_is_one_line_exit_2(tmp_path):
    run = plugpull("--point", "mid-effect", tmp=tmp_path)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1


def test_json_carries_the_schema_and_every_result(tmp_path):
    run = plugpull("--agent", agent(str(AGENTS / "fake_framework.py"), "no-key"), "--json", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["schema"] == 1
    assert [(r["point"], r["verdict"]) for r in doc["results"]] == [("before-effect", "PASS"), ("after-effect", "FAIL")]
    assert doc["results"][1]["evidence"]["counts"] == {"charge": 2}


def test_strict_exits_1_on_a_fail(tmp_path):
    run = plugpull("--agent", agent(str(AGENTS / "fake_framework.py"), "no-key"), "--strict", tmp=tmp_path)
    assert run.returncode == 1
    assert "FAIL   kill-mid-tool  after-effect" in run.stdout


def test_an_error_exits_2_and_shows_the_targets_stderr(tmp_path):
    run = plugpull(
        "--agent", agent(str(AGENTS / "misbehaving.py"), "crashes"), "--point", "before-effect", tmp=tmp_path
    )
    assert run.returncode == 2
    lines = run.stdout.splitlines()
    assert lines[0].startswith("ERROR  kill-mid-tool  before-effect")
    assert any(line.startswith("    | RuntimeError: the agent crashed") for line in lines[1:])


def test_nothing_is_left_in_the_temp_dir_after_a_run(tmp_path):
    plugpull("--agent", agent(str(AGENTS / "fake_framework.py"), "no-key"), tmp=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_keep_workdir_keeps_it_and_says_where(tmp_path):
    run = plugpull(
        "--agent",
        agent(str(AGENTS / "fake_framework.py"), "no-key"),
        "--point",
        "after-effect",
        "--keep-workdir",
        tmp=tmp_path,
    )
    kept = [line.split(": ", 1)[1] for line in run.stdout.splitlines() if "workdir kept" in line]
    assert len(kept) == 1 and (Path(kept[0]) / "state.json").exists()


def processes_running(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            pids.append(int(entry))
    return pids


def test_ctrl_c_exits_130_and_leaves_no_process_socket_or_temp_dir(tmp_path):
    import signal
    import time

    marker = str(tmp_path)  # unique to this test's target processes
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    command = agent(str(AGENTS / "misbehaving.py"), "hangs-on-resume", marker)
    proc = subprocess.Popen(
        [sys.executable, "-m", "plugpull.cli", "--agent", command, "--point", "after-effect"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    # Wait until the target's resume phase runs (its argv ends with "resume").
    while not any(Path(f"/proc/{p}/cmdline").read_bytes().endswith(b"\0resume\0") for p in processes_running(marker)):
        assert time.monotonic() < deadline, "resume never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip().endswith("plugpull: interrupted; targets killed, temporary files removed")
    assert "Traceback" not in err
    assert processes_running(marker) == []
    assert list(tmp_path.iterdir()) == []


def test_json_for_openai_agents_carries_the_write_number_point_and_store_counts(tmp_path):
    run = plugpull("--target", "openai-agents", "--point", "ack-lost", "--json", tmp=tmp_path)
    doc = json.loads(run.stdout)
    (result,) = doc["results"]
    assert (result["scenario"], result["point"], result["evidence"]["write"]) == ("lost-session-write", "ack-lost", 4)
    assert result["message"].startswith("write 4: ")
    assert result["evidence"]["staged_stored"] >= 1 and all(
        isinstance(c, int) for c in result["evidence"]["counts"].values()
    )


def test_an_agent_runs_the_scenario_named_by_scenario(tmp_path):
    command = agent(str(AGENTS / "approval_framework.py"), "no-claim")
    run = plugpull(
        "--agent", command, "--scenario", "resume-after-approval", "--point", "double-resume", "--json", tmp=tmp_path
    )
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


def test_a_workdir_that_is_not_a_directory_is_one_line_exit_2(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    # An --agent, so no built-in target is picked and no "skipping X" line depends on what is installed.
    run = plugpull("--workdir", str(not_a_dir), "--agent", agent("-c", "pass"), tmp=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [f"plugpull: --workdir {str(not_a_dir)!r} is not a directory"]


def test_an_unwritable_workdir_is_one_line_exit_2(tmp_path):
    # /proc refuses new directories even for root, which ignores permission bits.
    run = plugpull("--workdir", "/proc", "--agent", agent("-c", "pass"), tmp=tmp_path)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("plugpull: --workdir '/proc' is not writable")


def test_a_target_whose_framework_is_not_installed_is_one_line_exit_2_naming_the_extra(tmp_path):
    import importlib.util

    if importlib.util.find_spec("crewai") is not None:
        import pytest

        pytest.skip("crewai is installed here")
    run = plugpull("--target", "crewai", tmp=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip() == (
        "plugpull: target 'crewai' needs 'crewai', which is not installed: pip install 'plugpull[crewai]'"
    )
