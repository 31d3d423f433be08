"""Live progress: a drawing on a terminal, plain lines elsewhere, nothing on stdout and nothing extra with --json.

Real runs of the command on a tiny fake framework; the terminal is a real pseudo-terminal (stdlib pty).
"""

import io
import json
import os
import pty
import re
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plugpull import progress
from plugpull.results import Result, Verdict
from plugpull.targets import Target

AGENTS = Path(__file__).parent / "agents"
ESCAPE = "\x1b"
COMMAND = shlex.join([sys.executable, str(AGENTS / "fake_framework.py"), "no-key"])
#: The same agent as ``python -m`` for runs off a terminal, in this process (its phases fork: tests/forked_agents.py).
FORKED = shlex.join([sys.executable, "-m", "fake_framework", "no-key"])


@pytest.fixture
def plugpull(plugpull_forking):
    """``plugpull ARGS`` off a terminal: in this process, stderr not a terminal (conftest's plugpull_forking)."""
    return plugpull_forking


def on_a_terminal(*args: str, tmp: Path) -> tuple[str, str, int]:
    """Run plugpull with stderr on a pseudo-terminal and stdout on a pipe: (terminal text, stdout, exit code)."""
    main, side = pty.openpty()
    env = {**os.environ, "TMPDIR": str(tmp), "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "40"}
    env.pop("NO_COLOR", None)
    env.pop("TTY_INTERACTIVE", None)
    proc = subprocess.Popen([sys.executable, "-m", "plugpull.cli", *args], stdout=subprocess.PIPE, stderr=side, env=env)
    os.close(side)
    seen = bytearray()
    deadline = time.monotonic() + 120
    while True:
        if not select.select([main], [], [], max(deadline - time.monotonic(), 0))[0]:
            proc.kill()  # hung: fail below rather than wait forever
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    out = proc.stdout.read().decode()
    proc.stdout.close()
    return seen.decode(errors="replace"), out, proc.wait(timeout=120)


def visible(text: str) -> str:
    """The terminal's text without its control sequences."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_off_a_terminal_each_finished_line_is_one_plain_line_on_stderr(tmp_path, plugpull):
    run = plugpull("--agent", FORKED)
    assert run.returncode == 0, run.stderr
    assert ESCAPE not in run.stdout and ESCAPE not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"plugpull: \[1/2 0:\d\d\] PASS   kill-mid-tool  before-effect charge#1  .*", lines[0])
    assert re.fullmatch(r"plugpull: \[2/2 0:\d\d\] FAIL   kill-mid-tool  after-effect charge#1  .*", lines[1])
    assert lines[1].endswith("effect duplicated: the provider saw 2 charge (expected 1)")
    # stdout is the report, as before progress existed.
    assert run.stdout.startswith("PASS   kill-mid-tool  before-effect charge#1  ")


def test_json_output_stays_pure_json_and_stderr_gets_nothing_extra(tmp_path, plugpull):
    run = plugpull("--agent", FORKED, "--json")
    assert run.returncode == 0, run.stderr
    assert [r["verdict"] for r in json.loads(run.stdout)["results"]] == ["PASS", "FAIL"]
    assert run.stderr == ""


def test_on_a_terminal_the_bar_shows_n_of_N_the_running_line_and_each_finished_line(tmp_path):
    seen, out, code = on_a_terminal("--agent", COMMAND, tmp=tmp_path)
    assert code == 0
    text = visible(seen)
    assert "running  kill-mid-tool  before-effect" in text
    assert "0/2" in text and "1/2" in text and "elapsed," in text and "left" in text
    assert "PASS   kill-mid-tool  before-effect charge#1" in text  # finished lines drawn above the bar
    assert ESCAPE in seen
    # The report goes to stdout, plain, whatever stderr is.
    assert ESCAPE not in out and out.splitlines()[1].startswith("FAIL   kill-mid-tool  after-effect charge#1  ")


def test_on_a_terminal_json_gets_the_bar_but_no_result_lines_and_stdout_stays_json(tmp_path):
    seen, out, code = on_a_terminal("--agent", COMMAND, "--json", tmp=tmp_path)
    assert code == 0
    assert [r["verdict"] for r in json.loads(out)["results"]] == ["PASS", "FAIL"]
    text = visible(seen)
    assert "1/2" in text and "PASS   kill-mid-tool" not in text


def result(verdict: str, point: str) -> Result:
    return Result(Verdict(verdict), "kill-mid-tool", point, "agent x", f"{verdict.lower()} message")


def test_plain_progress_numbers_each_finished_line_and_says_what_is_left_once_three_have_finished():
    stream = io.StringIO()
    shown = progress.Plain(5, stream)
    target = Target(name="agent", argv=("x",))
    for n, point in enumerate(["before-effect", "after-effect"] * 2 + ["before-effect"]):
        shown.started(target, point)
        shown.finished(target, point, [result("PASS" if n else "ERROR", point)])
    lines = stream.getvalue().splitlines()
    assert [line.split("]")[0].split()[1] for line in lines] == ["[1/5", "[2/5", "[3/5", "[4/5", "[5/5"]
    assert ["left]" in line for line in lines] == [False, False, True, True, False]
    assert lines[0].endswith("ERROR  kill-mid-tool  before-effect  agent x  error message")


def test_time_left_is_the_pace_since_the_first_line_times_the_lines_left():
    # The first line waited for the clean run too (30 s); the next ones took 5 s each.
    assert progress.time_left([30.0, 35.0], 10) is None
    assert progress.time_left([30.0, 35.0, 40.0], 10) == 5.0 * 7
    assert progress.time_left([30.0, 35.0, 40.0], 3) is None


def test_the_total_becomes_the_expanded_line_count_when_the_run_says_it():
    stream = io.StringIO()
    shown = progress.Plain(2, stream)
    shown.planned(12)
    target = Target(name="agent", argv=("x",))
    shown.finished(target, "before", [result("PASS", "before")])
    assert "[1/12 " in stream.getvalue()


def test_every_boundary_progress_counts_the_boundaries_lines(tmp_path, plugpull):
    command = shlex.join([sys.executable, "-m", "boundary_framework", "plain"])
    # Two points planned (before, after); two model calls make them four lines.
    run = plugpull("--agent", command, "--scenario", "every-boundary", "--boundary", "model-call")
    assert run.returncode == 0, run.stderr
    assert [line.split("]")[0].split()[1] for line in run.stderr.splitlines()] == ["[1/4", "[2/4", "[3/4", "[4/4"]


def test_the_clock_reads_minutes_and_seconds_then_hours():
    assert (progress.clock(5), progress.clock(75), progress.clock(3725)) == ("0:05", "1:15", "1:02:05")


def test_off_a_terminal_json_has_no_progress_and_a_terminal_always_has_one(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("TTY_INTERACTIVE", raising=False)

    assert progress.choose(2, json_output=True, stream=io.StringIO()) is None
    assert isinstance(progress.choose(2, json_output=False, stream=io.StringIO()), progress.Plain)
    live = progress.choose(2, json_output=True, stream=Terminal())
    assert isinstance(live, progress.Live) and not live.show_lines


def test_a_terminal_that_cannot_redraw_gets_plain_lines(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("TERM", "dumb")
    assert isinstance(progress.choose(2, json_output=False, stream=Terminal()), progress.Plain)
    assert progress.choose(2, json_output=True, stream=Terminal()) is None


def test_the_bar_on_a_terminal_estimates_time_left_as_the_plain_lines_do():
    shown = progress.Live(5, io.StringIO())
    (left,) = [c for c in shown.progress.columns if type(c).__name__ == "Left"]
    task = shown.progress.tasks[0]
    target = Target(name="agent", argv=("x",))
    assert str(left.render(task)) == "-:--"
    shown.finished(target, "before-effect", [result("PASS", "before-effect")])
    shown.finished(target, "after-effect", [result("PASS", "after-effect")])
    assert str(left.render(task)) == "-:--"  # two lines: the first also waited for the clean run
    shown.finished(target, "before-effect", [result("PASS", "before-effect")])
    assert re.fullmatch(r"\d+:\d\d", str(left.render(task)))
