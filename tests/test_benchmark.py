"""The throughput benchmark's arithmetic and its accounting of a whole process tree (issue 26)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from plugpull.benchmark import Measured, marginal, tree_cpu

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
