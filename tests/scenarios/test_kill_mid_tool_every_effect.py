"""kill-mid-tool's default run on a three-effect LangGraph agent: a kill at each effect call.

tests/agents/langgraph_order_flow.py is the order flow of the issue: a real StateGraph, a real SqliteSaver,
durability="sync"; reserve_stock keyed by the order id, charge_card without a key, send_receipt with a
fresh uuid per run. Killed after its effect, a node runs again on resume: only the key keeps it at one.
"""

import os
import sys
from pathlib import Path

import shared_forks
from plugpull import forkserver
from plugpull.testing import run

AGENTS = Path(__file__).parent.parent / "agents"
# Run as a module (the same file), so that --fork-server forks its 13 phases (a clean run, then start and
# resume for each of the 6 lines) from one process that imported langgraph once: the pytest process's server of
# LangGraph's family, which imports this script too (tests/shared_forks.py, EXAMPLES), in the family's xdist group;
# each phase is still its own process group, SIGKILLed for real. Cold, every phase imported langgraph.
AGENT = f"{sys.executable} -m langgraph_order_flow"


@shared_forks.group("langgraph")
def test_the_default_run_kills_at_each_effect_and_flags_exactly_the_unsafe_ones(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(AGENTS), os.environ.get("PYTHONPATH")])))
    monkeypatch.setattr(forkserver, "ForkServers", lambda: shared_forks.FORKS)
    results = run(AGENT, timeout=60, fork_server=True)
    lines = [(r.point, r.evidence["hold"], r.verdict.value) for r in results]
    assert lines == [
        ("before-effect", "reserve_stock:1", "PASS"),
        ("after-effect", "reserve_stock:1", "PASS"),
        ("before-effect", "charge_card:1", "PASS"),
        ("after-effect", "charge_card:1", "FAIL"),
        ("before-effect", "send_receipt:1", "PASS"),
        ("after-effect", "send_receipt:1", "FAIL"),
    ], repr(results)
    assert results[3].message == "effect duplicated: the provider saw 2 charge_card (expected 1)"
    assert results[5].message == "effect duplicated: the provider saw 2 send_receipt (expected 1)"
    # Every line was a proven kill at the call it names.
    assert [r.evidence["held_name"] for r in results] == [h.split(":")[0] for _, h, _ in lines]
