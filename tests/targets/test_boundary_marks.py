"""Built-in agents mark their model calls and their framework's checkpoint saves (every-boundary)."""

import pytest

from plugpull import boundaries, suite
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.every_boundary import clean_of
from plugpull.scenarios.registry import REGISTRY
from plugpull.targets import BUILT_INS


def variant(name: str, **options):
    """The first unaimed variant with ``options``, as every-boundary runs it (a variant aimed at a save is left out)."""
    adopted = (REGISTRY.adopt("every-boundary", t) for t in BUILT_INS[name].variants)
    return next(t for t in adopted if t is not None and options.items() <= t.options.items())


def test_langgraphs_clean_run_lists_model_calls_checkpoint_saves_and_the_refund():
    pytest.importorskip("langgraph")
    target = variant("langgraph", durability="sync", key="none")
    settings, runtime = Settings(timeout=120), Runtime()
    labels = [s.label for s in boundaries.steps_of(clean_of(target, settings, runtime).trace)]
    assert {"model-call 1", "model-call 2", "checkpoint-save 1", "pending-writes 1", "effect refund 1"} <= set(labels)
    assert labels.index("model-call 1") < labels.index("effect refund 1") < labels.index("model-call 2")
    # Killed after the first model call, LangGraph's own saver and invoke(None, config) finish the run.
    settings.boundaries = ("model-call 1",)
    results = suite.run_scenario(target, ["after"], settings=settings, runtime=runtime)
    assert [r.verdict for r in results] == [Verdict.PASS], [r.message for r in results]


def test_agent_frameworks_checkpoint_saves_are_boundaries():
    pytest.importorskip("agent_framework")
    target = variant("agent-framework", variant="control")
    labels = [s.label for s in boundaries.steps_of(clean_of(target, Settings(timeout=120)).trace)]
    assert "checkpoint-save 1" in labels and "open-payment 2" in labels
    assert "effect charge_card:A 1" in labels and "effect charge_card:B 1" in labels


def test_langgraph_killed_before_its_first_checkpoint_is_recovered_by_submitting_the_input_again():
    # Nothing of the run was saved: invoke(None, config) would raise EmptyInputError (by design,
    # langgraph/pregel/_loop.py); the example resubmits its input, as a correct app does (issue 20).
    pytest.importorskip("langgraph")
    target = variant("langgraph", durability="sync", key="none")
    settings = Settings(timeout=120, boundaries=("checkpoint-save 1",))
    (result,) = suite.run_scenario(target, ["before"], settings=settings)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.evidence["counts"] == {"refund": 1}


def test_the_openai_approval_app_applies_an_unsaved_approval_again_when_approve_died_before_saving_it():
    # Issue 20: killed before its state-save, approve recorded nothing; the run is still paused and
    # recover approves paused.json again (a durable approval inbox redelivers), so the refund happens once.
    pytest.importorskip("agents")
    target = variant("openai-agents-approval", design="plain")
    settings = Settings(timeout=120, boundaries=("state-save 1",))
    results = suite.run_scenario(target, ["before", "after"], settings=settings)
    assert [r.verdict for r in results] == [Verdict.PASS, Verdict.PASS], [r.message for r in results]
    assert all(r.evidence["counts"] == {"refund": 1} for r in results), [r.evidence["counts"] for r in results]


def test_fastaiagent_killed_after_its_run_end_marker_recovers_by_reading_the_finished_run():
    # The last checkpoint save is FastAIAgent's completed run-end marker: resume(id) refuses it by contract
    # (AlreadyResumed), so recover reads the finished run's result from the store instead (docs/DECISIONS.md).
    pytest.importorskip("fastaiagent")
    target = variant("fastaiagent")
    settings, runtime = Settings(timeout=120), Runtime()
    labels = [s.label for s in boundaries.steps_of(clean_of(target, settings, runtime).trace)]
    assert labels[-1] == "checkpoint-save 2", labels
    settings.boundaries = ("checkpoint-save 2",)
    (result,) = suite.run_scenario(target, ["after"], settings=settings, runtime=runtime)
    assert result.verdict is Verdict.PASS, result.message
    assert result.evidence["golden"] == [{"status": "completed", "tool_results": ["refunded order A-1001"]}]
