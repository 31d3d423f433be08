"""The throughput benchmark's arithmetic and its accounting of a whole process tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from installed import requires
from plugpull.benchmark import FloorMarks, Measured, floor_phase, marginal, tree_cpu

# A process that forks a child which burns a fixed amount of its own CPU time, reaps it, and prints
# its own CPU: whatever the parent spent, the child's share reaches only a tree accounting.
BURNING_GRANDCHILD = """
import os, resource, time
pid = os.fork()
if pid == 0:
    while resource.getrusage(resource.RUSAGE_SELF).ru_utime < 0.3:
        pass
    os._exit(0)
os.waitpid(pid, 0)
me = resource.getrusage(resource.RUSAGE_SELF)
print(me.ru_utime + me.ru_stime)
"""


def measured(lines: int, cpu: float, wall: float) -> Measured:
    return Measured(lines=lines, verdicts={}, wall=wall, cpu=cpu, user=cpu, sys=0.0)


def test_marginal_cost_is_the_difference_of_two_runs_over_their_extra_lines():
    cpu, wall = marginal(measured(24, 6.0, 20.0), measured(96, 13.2, 38.0))
    assert cpu == pytest.approx(0.1)
    assert wall == pytest.approx(0.25)


def test_marginal_cost_refuses_runs_without_extra_lines():
    with pytest.raises(SystemExit):
        marginal(measured(24, 6.0, 20.0), measured(24, 7.0, 21.0))


def test_tree_cpu_counts_what_a_reaped_child_of_the_measured_process_spent():
    proc = subprocess.Popen([sys.executable, "-c", BURNING_GRANDCHILD], stdout=subprocess.PIPE)
    out = proc.stdout.read()
    proc.stdout.close()
    status, cpu, _user, _sys = tree_cpu(proc.pid)
    proc.returncode = os.waitstatus_to_exitcode(status)
    own = float(out)
    assert proc.returncode == 0
    # The child spent at least 0.3 s of user time by its own count; the process itself spent `own`.
    assert cpu >= own + 0.3


def test_the_floors_marks_list_each_step_once_in_the_order_its_before_side_came():
    marks = FloorMarks()
    boundary = marks.boundary()
    with boundary("checkpoint-save"):
        pass
    with boundary("model-call"), boundary("checkpoint-save"):
        pass
    assert marks.steps == [("mark", "checkpoint-save", 1), ("mark", "model-call", 1), ("mark", "checkpoint-save", 2)]
    assert marks.seen[("mark", "checkpoint-save", "after")] == 2


def test_a_floor_phase_dies_of_sigkill_at_the_aimed_side_and_not_before(tmp_path):
    marks = FloorMarks()
    boundary = marks.boundary()

    def run():
        with boundary("model-call"):
            (tmp_path / "entered").write_text("")
        (tmp_path / "passed").write_text("")  # never reached: the after side of model-call 1 is aimed at

    status = floor_phase(run, marks, str(tmp_path), ("mark", "model-call", 1, "after"))
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert (tmp_path / "entered").exists() and not (tmp_path / "passed").exists()


@requires("langgraph", "langgraph.checkpoint.sqlite")
@pytest.mark.parametrize("one_phase", [False, True], ids=["two-phase", "one-phase"])
def test_the_floor_stops_the_langgraph_target_at_each_side_of_each_boundary_and_finds_its_duplicated_refund(one_phase):
    # Two-phase: a start killed there, then a resume; one-phase: one whole start copying its workdir there, a resume
    # on each copy. Either way every side of every boundary of the clean run is a line with a finished resume.
    code = f"import sys; from plugpull.benchmark import floor_run; sys.exit(floor_run(1, {one_phase}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    results = {r["point"]: r["verdict"] for r in document["results"]}
    assert document["phases"]["start"] > 0 and document["phases"]["resume"] > 0  # each forked phase's own CPU
    # Every side of every boundary of the map's clean run: a start killed there and a resume that finished.
    assert len(results) == 24 and "ERROR" not in results.values()
    assert results["after effect refund 1"] == "FAIL"  # refunded before the kill and again by resume
    assert results["before effect refund 1"] == "PASS"
    assert results["before model-call 1"] == "PASS"
