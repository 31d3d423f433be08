"""The pre-imported fork server: its children are real process-group leaders killed by a real SIGKILL."""

import json
import os
import signal
import sys

import pytest

import shared_forks
from installed import requires
from plugpull import forkserver, reaper
from plugpull.forkserver import ForkServers, huge_pages
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.kill_mid_tool import run_point
from plugpull.targets import BUILT_INS, Target, python_module

pytestmark = requires("langgraph")


@pytest.fixture
def forks():
    servers = ForkServers()
    yield servers
    servers.close()


def test_a_forked_child_leads_its_own_group_and_reports_its_exit_code(forks, tmp_path):
    code = (
        "import os, sys\nif __name__ == '__main__':\n"
        "    print(os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid()); sys.exit(7)\n"
    )
    script = tmp_path / "probe_mod.py"
    script.write_text(code)
    running = forks.spawn([sys.executable, "-m", "probe_mod"], env={"PYTHONPATH": str(tmp_path)}, cwd=str(tmp_path))
    outcome = running.wait(30)
    assert outcome.returncode == 7
    assert outcome.stdout.strip() == "True True"


def test_a_forked_child_killed_by_the_harness_is_reported_as_sigkill(forks, tmp_path):
    (tmp_path / "sleeper.py").write_text("import time\nif __name__ == '__main__':\n    time.sleep(60)\n")
    running = forks.spawn([sys.executable, "-m", "sleeper"], env={"PYTHONPATH": str(tmp_path)}, cwd=None)
    outcome = running.kill()
    assert outcome.returncode == -signal.SIGKILL


def test_a_forked_child_that_leaves_a_keyboard_interrupt_uncaught_dies_of_sigint_as_a_cold_one_does(forks, tmp_path):
    # Python ends by SIGINT on an uncaught KeyboardInterrupt (3.8+), so a harness sees the signal, not exit code 1.
    (tmp_path / "interrupted.py").write_text("if __name__ == '__main__':\n    raise KeyboardInterrupt\n")
    env = {"PYTHONPATH": str(tmp_path)}
    argv = [sys.executable, "-m", "interrupted"]
    forked = forks.spawn(argv, env=env, cwd=None).wait(30)
    cold = Runtime().spawn(argv, env=env, cwd=None).wait(30)
    assert (forked.returncode, cold.returncode) == (-signal.SIGINT, -signal.SIGINT)
    assert forked.stderr.rstrip().endswith("KeyboardInterrupt") and cold.stderr.rstrip().endswith("KeyboardInterrupt")


def test_a_forked_child_has_sigchld_as_a_fresh_process_has_it_and_reaps_its_own_children(forks, tmp_path):
    # The server wakes on SIGCHLD through a wakeup pipe; a child must not inherit either (a signal
    # would write into whatever file reused the pipe's descriptor number).
    code = (
        "import signal, subprocess, sys\nif __name__ == '__main__':\n"
        "    old = signal.set_wakeup_fd(-1)\n"
        "    rc = subprocess.run([sys.executable, '-c', 'raise SystemExit(5)']).returncode\n"
        "    print(signal.getsignal(signal.SIGCHLD) is signal.SIG_DFL, old, rc)\n"
    )
    (tmp_path / "sigchld_probe.py").write_text(code)
    env = {"PYTHONPATH": str(tmp_path)}
    outcomes = [forks.spawn([sys.executable, "-m", "sigchld_probe"], env=env, cwd=None).wait(60) for _ in range(3)]
    assert [(o.returncode, o.stdout.split()) for o in outcomes] == [(0, ["True", "-1", "5"])] * 3


def test_a_forked_child_has_exactly_the_environment_it_was_given_not_the_servers(forks, tmp_path):
    # The server starts with the first phase's environment; the second phase drops A, changes B, adds C.
    code = "import json, os\nif __name__ == '__main__':\n    print(json.dumps(dict(os.environ)))\n"
    (tmp_path / "env_probe.py").write_text(code)
    first = {"PYTHONPATH": str(tmp_path), "A": "1", "B": "x"}
    second = {"PYTHONPATH": str(tmp_path), "B": "y", "C": "z"}
    seen = []
    for env in (first, second):
        outcome = forks.spawn([sys.executable, "-m", "env_probe"], env=env, cwd=None).wait(60)
        assert outcome.returncode == 0, outcome.stderr
        got = json.loads(outcome.stdout)
        assert got.pop(reaper.PHASE_ENV)  # each phase's own marker (plugpull.reaper)
        seen.append(got)
    assert seen == [first, second]


def anon_huge_kib() -> int:
    with open("/proc/self/smaps_rollup") as rollup:
        return sum(int(line.split()[1]) for line in rollup if line.startswith("AnonHugePages:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="Linux only")
def test_what_the_server_collapses_into_huge_pages_is_backed_by_huge_pages():
    # MADV_COLLAPSE needs Linux >= 6.1 and transparent_hugepage not "never"; elsewhere nothing is collapsed.
    ballast = [bytearray(8 << 20)]  # memory of this process's own, as an import leaves
    before = anon_huge_kib()
    collapsed = huge_pages()
    if collapsed == 0:
        pytest.skip("the kernel collapsed nothing here (no MADV_COLLAPSE, THP off, or no free huge page)")
    assert anon_huge_kib() - before >= 2048  # at least one 2 MiB page more than before
    assert ballast


def test_a_server_collapses_its_memory_once_at_the_fork_that_pays_for_it_and_not_before(monkeypatch):
    collapses = []
    monkeypatch.setattr(forkserver, "huge_pages", lambda: collapses.append(forkserver._forked) or 1)
    monkeypatch.setattr(forkserver, "_forked", 0)
    did = [forkserver.collapse_when_paid() for _ in range(forkserver.COLLAPSE_AFTER * 2)]
    assert collapses == [forkserver.COLLAPSE_AFTER]
    assert did.index(True) == forkserver.COLLAPSE_AFTER - 1 and did.count(True) == 1


PREFORKED = """
import json, os, sys

BUILT = []


def plugpull_prefork(argv):
    if argv == ["broken"]:
        raise RuntimeError("the hook failed")
    BUILT.append(os.getpid())  # in the server, once per argv
    return lambda: print(json.dumps([BUILT, os.getpid(), os.environ["PHASE"], sys.argv[1:]])) or 4


if __name__ == "__main__":
    print(json.dumps(["as __main__", sys.argv[1:]]))
    sys.exit(9)
"""


def test_a_target_hook_builds_once_in_the_server_and_what_it_returns_runs_in_each_child(forks, tmp_path):
    (tmp_path / "preforked.py").write_text(PREFORKED)
    outputs = []
    for phase in ("start", "resume"):
        env = {"PYTHONPATH": str(tmp_path), "PHASE": phase}
        outcome = forks.spawn([sys.executable, "-m", "preforked", "go"], env=env, cwd=None).wait(60)
        assert outcome.returncode == 4
        outputs.append(json.loads(outcome.stdout))
    [[built, pid1, phase1, argv1], [built_again, pid2, phase2, argv2]] = outputs
    assert built == built_again and len(built) == 1  # built once, before either fork
    assert built[0] not in (pid1, pid2) and pid1 != pid2  # in the server, and each phase its own child
    assert (phase1, phase2, argv1, argv2) == ("start", "resume", ["go"], ["go"])


def test_a_target_whose_hook_fails_runs_as_main_in_the_child(forks, tmp_path):
    (tmp_path / "preforked.py").write_text(PREFORKED)
    outcome = forks.spawn([sys.executable, "-m", "preforked", "broken"], env={"PYTHONPATH": str(tmp_path)}, cwd=None)
    outcome = outcome.wait(60)
    assert outcome.returncode == 9
    assert json.loads(outcome.stdout) == ["as __main__", ["broken"]]


def test_target_modules_grouped_together_fork_from_one_server_and_each_runs_as_itself(tmp_path):
    code = "import os, sys\nif __name__ == '__main__':\n    print(__spec__.name, os.getppid(), os.getpgid(0) == os.getpid())\n"
    for name in ("first_mod", "second_mod", "alone_mod"):
        (tmp_path / f"{name}.py").write_text(code)
    servers = ForkServers(together=[("first_mod", "second_mod")])
    try:
        env = {"PYTHONPATH": str(tmp_path)}
        lines = [
            servers.spawn([sys.executable, "-m", name], env=env, cwd=None).wait(30).stdout.split()
            for name in ("second_mod", "first_mod", "alone_mod")
        ]
        assert [line[0] for line in lines] == ["second_mod", "first_mod", "alone_mod"]
        assert all(line[2] == "True" for line in lines)
        # The two grouped modules' children share a parent (their server); the other module has its own.
        assert lines[0][1] == lines[1][1] != lines[2][1]
        assert len(servers._servers) == 2
    finally:
        servers.close()


def test_a_command_that_is_not_python_dash_m_starts_cold(forks):
    running = forks.spawn(["/bin/sh", "-c", "exit 3"], env={}, cwd=None)
    assert running.wait(10).returncode == 3
    assert forks._servers == {}


# The langgraph lines fork from the pytest process's server of LangGraph's family (conftest's ``forked``), in the
# family's xdist group: a ForkServers that forks the target with its family's other modules imported beside it, as
# every built-in's test forks it (tests/shared_forks.py), instead of one more import of LangGraph for this module.
@shared_forks.group_of_built_in("langgraph")
def test_the_langgraph_target_gets_the_same_verdicts_forked_as_cold(forked):
    variant = BUILT_INS["langgraph"].variants[0]  # durability=sync: deterministic
    cold_runtime = Runtime()  # no fork server: every phase a fresh interpreter; the two points share the clean run
    for point, verdict in (("before-effect", Verdict.PASS), ("after-effect", Verdict.FAIL)):
        cold = run_point(variant, point, Settings(timeout=60), cold_runtime)
        warm = run_point(variant, point, Settings(timeout=60), forked)
        assert cold.evidence["start"]["argv"] == warm.evidence["start"]["argv"]
        assert cold.verdict is warm.verdict is verdict, (cold.message, warm.message, warm.stderr)
        assert warm.evidence["start"]["returncode"] == -signal.SIGKILL
        proof = warm.evidence["proof"]
        assert proof["caller_group"] == proof["group"] == proof["caller_pid"]
    assert shared_forks.FORKS.serves("plugpull.targets.langgraph_refund") and cold_runtime.forks is None


@shared_forks.group_of_built_in("langgraph")
def test_the_tool_call_id_variant_passes_forked(forked):
    target = Target(name="agent", argv=python_module("plugpull.targets.langgraph_refund", "tool-call-id"))
    result = run_point(target, "after-effect", Settings(timeout=60), forked)
    assert result.verdict is Verdict.PASS, result.message


def test_the_pid_line_is_read_alone_when_the_exit_line_arrives_with_it():
    # A child that exits at once: the server's pid and returncode lines reach the harness together.
    import socket

    from plugpull.forkserver import _recv_one_line

    ours, server = socket.socketpair()
    with ours, server:
        server.sendall(b'{"pid": 42}\n{"returncode": 0}\n')
        assert _recv_one_line(ours) == b'{"pid": 42}\n'
        assert ours.recv(100) == b'{"returncode": 0}\n'
