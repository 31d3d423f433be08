"""plugpull in a pytest suite: crash-test the LangGraph refund agent (README, "In your pytest suite").

    uv run pytest src/plugpull/examples/test_refund_agent.py

The plugpull_run fixture comes with plugpull (a pytest11 entry point): nothing to import or configure.
The second test fails on purpose: without an idempotency key the refund is done again when LangGraph
re-runs the killed tool, and the failure reads as plugpull's result line. It stays out of the wheel
(pyproject.toml): an installed package ships no failing test.
"""

AGENT = "python -m plugpull.targets.langgraph_refund"  # the agent of the built-in `langgraph` target


def test_keyed_refund_survives_a_crash(plugpull_run):
    results = plugpull_run(f"{AGENT} tool-call-id --durability sync", points="after-effect")
    assert all(r.verdict == "PASS" for r in results)


def test_unkeyed_refund_survives_a_crash(plugpull_run):
    results = plugpull_run(f"{AGENT} no-key --durability sync", points="after-effect")
    assert all(r.verdict == "PASS" for r in results)
