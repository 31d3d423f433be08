"""Plain ``plugpull`` runs its tour for real (docs/cli.md, "The default run"): the lines its stops name, measured.

The tour is cut to one LangGraph stop here (the whole tour is every default framework's; tests/test_tour.py holds
its stops to the claims), run in this process by ``cli.main`` with its phases forked from the pytest process's
servers (conftest's ``plugpull_forking``): each phase still leads its own process group and is SIGKILLed for real.
"""

import json

import shared_forks
from installed import requires
from plugpull.targets import BUILT_INS, registry


@requires("langgraph")
@shared_forks.group_of_built_in("langgraph")
def test_plain_plugpull_runs_the_tours_lines_and_says_how_to_run_every_line(plugpull_forking, monkeypatch):
    stop = BUILT_INS["langgraph"].stop({"durability": "sync", "key": "none"}, "before-effect", "after-effect")
    monkeypatch.setattr(registry, "TOUR", (stop,))
    run = plugpull_forking()
    assert run.returncode == 0, run.stderr
    lines = run.stdout.rstrip("\n").splitlines()
    verdicts = [(line.split()[0], line.split()[2]) for line in lines if line.startswith(("PASS ", "FAIL ", "ERROR "))]
    # Measured: killed before the refund, resume refunds once; after it, LangGraph runs the tool node again.
    assert verdicts == [("PASS", "before-effect"), ("FAIL", "after-effect")], run.stdout
    assert lines[-2] == "1 FAIL, 1 PASS of 2 lines; exit code 0: a FAIL fails the command only with --strict (exit 1)"
    closing = lines[-1]
    assert closing.startswith("a tour of the default run: 2 lines, per framework and scenario"), closing
    assert closing.endswith("every line: plugpull --all"), closing
    # Every kill a real SIGKILL of the phase's own process group: the held call's process led the killed group, and
    # start died of signal 9 as its parent (the fork server) reaped it.
    document = json.loads(plugpull_forking("--json").stdout)
    for result in document["results"]:
        evidence = result["evidence"]
        assert evidence["start"]["returncode"] == -9, evidence["start"]
        proof = evidence["proof"]
        assert proof["caller_group"] == proof["group"] == proof["caller_pid"] and proof["survivors"] == [], proof
