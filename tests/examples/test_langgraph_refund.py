"""The LangGraph refund agent under kill-mid-tool: real StateGraph, real SqliteSaver, real SIGKILL."""

import pytest

from plugpull.results import Verdict
from plugpull.scenarios.kill_mid_tool import Settings, run_point
from plugpull.targets import BUILT_INS, Target, python_module

pytest.importorskip("langgraph")

SETTINGS = Settings(timeout=60)

# Rows 1, 2 and 4 of the tool-body table. LangGraph re-runs the killed tool step from its
# last checkpoint, so it behaves like the fake framework once the model's tool call is saved.
TABLE = {
    "no-key": {"before-effect": "PASS", "after-effect": "FAIL"},
    "tool-call-id": {"before-effect": "PASS", "after-effect": "PASS"},
    "ledger": {"before-effect": "FAIL", "after-effect": "PASS"},
}


def refund_agent(variant: str, *options: str) -> Target:
    return Target(name="agent", argv=python_module("plugpull.examples.langgraph_refund", variant, *options))


@pytest.mark.parametrize(
    "durability, extra",
    # With "async" LangGraph saves the checkpoint the tool runs from in the background;
    # the tool waits for it, else the verdict would depend on timing.
    [("sync", ()), ("async", ("--wait-checkpoint",))],
)
@pytest.mark.parametrize("variant, point", [(v, p) for v in TABLE for p in TABLE[v]])
def test_each_tool_variant_gets_its_verdict(variant, point, durability, extra):
    result = run_point(refund_agent(variant, "--durability", durability, *extra), point, SETTINGS)
    assert result.verdict.value == TABLE[variant][point], (result.message, result.stderr)
    assert result.framework == "langgraph" and result.version


def test_with_the_tool_call_id_as_key_resume_reuses_the_saved_call_id():
    result = run_point(refund_agent("tool-call-id", "--durability", "sync"), "after-effect", SETTINGS)
    keys = {c["key"] for c in result.evidence["calls"]}
    assert len(keys) == 1 and next(iter(keys)).startswith("call_")


def test_a_kill_before_any_checkpoint_is_saved_leaves_nothing_to_resume():
    # durability="exit" saves only when the run ends, so the killed run left no checkpoint:
    # invoke(None, config) has nothing to continue and raises EmptyInputError.
    result = run_point(refund_agent("no-key", "--durability", "exit"), "before-effect", SETTINGS)
    assert result.verdict is Verdict.FAIL
    assert result.message.startswith("resume crashed (exit code 1); effect lost")
    assert "EmptyInputError" in result.stderr


def test_the_built_in_target_runs_both_durabilities_without_a_key_and_with_the_tool_call_id():
    variants = BUILT_INS["langgraph"].variants
    assert [v.options for v in variants] == [
        {"durability": "sync", "key": "none"},
        {"durability": "async", "key": "none"},
        {"durability": "sync", "key": "tool-call-id"},
        {"durability": "async", "key": "tool-call-id"},
    ]
    assert variants[2].argv[-3:] == ("tool-call-id", "--durability", "sync")
    result = run_point(variants[0], "after-effect", SETTINGS)
    assert result.verdict is Verdict.FAIL
    assert result.message == "effect duplicated: the provider saw 2 refund (expected 1)"
    assert [n["url"] for n in result.notes] == [
        "https://docs.langchain.com/oss/python/langgraph/functional-api#idempotency"
    ]
    assert [c["phase"] for c in result.evidence["calls"] if c["recorded"]] == ["start", "resume"]
    passed = run_point(variants[0], "before-effect", SETTINGS)
    assert passed.verdict is Verdict.PASS and passed.notes == []
