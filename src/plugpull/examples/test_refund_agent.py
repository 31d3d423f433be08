"""plugpull in a pytest suite: crash-test the LangGraph refund agent (docs/pytest.md; README, "In your pytest suite").

    uv run pytest src/plugpull/examples/test_refund_agent.py

The plugpull_run fixture comes with plugpull (a pytest11 entry point): nothing to import or configure.
The unkeyed tests fail on purpose: without an idempotency key the refund is done again when LangGraph
re-runs the killed tool, and the failure reads as plugpull's result line with its evidence. Collecting this
file runs the unkeyed agent once (kill_points reads its kill points from a clean run). It stays out of the
wheel (pyproject.toml): an installed package ships no failing test.
"""

import pytest

from plugpull.testing import kill_points

AGENT = "python -m plugpull.targets.langgraph_refund"  # the agent of the built-in `langgraph` target
UNKEYED = f"{AGENT} no-key --durability sync"


def test_keyed_refund_survives_a_crash(plugpull_run):
    plugpull_run(f"{AGENT} tool-call-id --durability sync", points="after-effect").assert_all_pass()


def test_unkeyed_refund_is_done_exactly_once(plugpull_run):
    plugpull_run(UNKEYED, points="after-effect").assert_exactly_once("refund")


# One test item per kill point of the clean run (before and after each effect call), so CI names the one that broke.
@pytest.mark.parametrize("point", kill_points(UNKEYED), ids=str)
def test_unkeyed_refund_at_each_kill_point(plugpull_run, point):
    plugpull_run(UNKEYED, **point.options).assert_all_pass()
