"""The LangGraph refund agent under kill-mid-tool: real StateGraph, real SqliteSaver, real SIGKILL."""

import pytest

import shared_forks
from installed import requires
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.kill_mid_tool import run_point
from plugpull.targets import BUILT_INS, Target, python_module

pytestmark = requires("langgraph")


# One pre-imported langgraph for the module's twenty kill-and-resume cycles (each forked child is still
# its own process group, SIGKILLed for real): cold, each cycle imported langgraph twice, seconds apiece.
# The runtime also shares the module's clean runs.
SETTINGS = Settings(timeout=60)
RUNTIME = Runtime(forks=shared_forks.FORKS)


# Rows 1, 2 and 4 of the tool-body table. LangGraph re-runs the killed tool step from its
# last checkpoint, so it behaves like the fake framework once the model's tool call is saved.
TABLE = {
    "no-key": {"before-effect": "PASS", "after-effect": "FAIL"},
    "tool-call-id": {"before-effect": "PASS", "after-effect": "PASS"},
    "ledger": {"before-effect": "FAIL", "after-effect": "PASS"},
}


def refund_agent(variant: str, *options: str) -> Target:
    return Target(name="agent", argv=python_module("plugpull.targets.langgraph_refund", variant, *options))


@pytest.mark.parametrize(
    "durability, extra",
    # With "async" LangGraph saves the checkpoint the tool runs from in the background;
    # the tool waits for it, else the verdict would depend on timing.
    [("sync", ()), ("async", ("--wait-checkpoint",))],
)
@pytest.mark.parametrize("variant, point", [(v, p) for v in TABLE for p in TABLE[v]])
def test_each_tool_variant_gets_its_verdict(variant, point, durability, extra):
    result = run_point(refund_agent(variant, "--durability", durability, *extra), point, SETTINGS, RUNTIME)
    assert result.verdict.value == TABLE[variant][point], (result.message, result.stderr)
    assert result.framework == "langgraph" and result.version


def test_with_the_tool_call_id_as_key_resume_reuses_the_saved_call_id():
    result = run_point(refund_agent("tool-call-id", "--durability", "sync"), "after-effect", SETTINGS, RUNTIME)
    keys = {c["key"] for c in result.evidence["calls"]}
    assert len(keys) == 1 and next(iter(keys)).startswith("call_")


def test_a_kill_before_any_checkpoint_is_saved_is_recovered_by_submitting_the_input_again():
    # durability="exit" saves only when the run ends, so the killed run left no checkpoint:
    # invoke(None, config) would raise EmptyInputError; the app resubmits its input and refunds once.
    result = run_point(refund_agent("no-key", "--durability", "exit"), "before-effect", SETTINGS, RUNTIME)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.evidence["counts"] == {"refund": 1}


def test_the_built_in_target_runs_both_durabilities_without_a_key_and_with_the_tool_call_id():
    variants = BUILT_INS["langgraph"].variants
    assert [v.options for v in variants] == [
        {"durability": "sync", "key": "none"},
        {"durability": "async", "key": "none"},
        {"durability": "sync", "key": "tool-call-id"},
        *(
            {"durability": "async", "key": "tool-call-id", "model_step": step}
            for step in ("raced", "unsaved", "writes-saved", "saved")
        ),
    ]
    assert variants[2].argv[-3:] == ("tool-call-id", "--durability", "sync")
    result = run_point(variants[0], "after-effect", SETTINGS, RUNTIME)
    assert result.verdict is Verdict.FAIL
    assert result.message == "effect duplicated: the provider saw 2 refund (expected 1)"
    assert [n["url"] for n in result.notes] == [
        "https://docs.langchain.com/oss/python/langgraph/functional-api#idempotency"
    ]
    assert [c["phase"] for c in result.evidence["calls"] if c["recorded"]] == ["start", "resume"]
    passed = run_point(variants[0], "before-effect", SETTINGS, RUNTIME)
    assert passed.verdict is Verdict.PASS and passed.notes == []


def aimed(model_step: str) -> Target:
    (target,) = [v for v in BUILT_INS["langgraph"].variants if v.options.get("model_step") == model_step]
    return target


@pytest.mark.parametrize(
    "model_step, verdict, keys",
    # LangGraph's background writer holds the model's tool call (and so the refund's key) in the
    # checkpoint after the model step or in the model task's pending writes: held back, resume runs
    # the model again and refunds under a new key; either one on disk, resume reuses the key.
    [("unsaved", "FAIL", 2), ("writes-saved", "PASS", 1), ("saved", "PASS", 1)],
)
def test_the_async_tool_call_id_line_aimed_at_the_model_steps_saves_is_a_verdict(model_step, verdict, keys):
    result = run_point(aimed(model_step), "after-effect", SETTINGS, RUNTIME)
    assert result.verdict.value == verdict, (result.message, result.stderr)
    assert len({c["key"] for c in result.evidence["calls"]}) == keys
    assert all(save["ready"] for save in result.evidence["saves"])
    assert result.evidence["save_specs"] == ["{}:{}:{}".format(*s) for s in aimed(model_step).aim.saves]
