"""Built-in agents mark their model calls and their framework's checkpoint saves (every-boundary).

The targets are forked from the pytest process's fork servers (tests/shared_forks.py): one framework import per
family, each phase still a process group of its own, SIGKILLed for real; each test is in its framework's xdist group. The runtime also shares a target's
clean run between tests that ask for the same one, as one every-boundary run shares it between its lines.
"""

import shared_forks
from installed import requires
from plugpull import boundaries, suite
from plugpull.aim import Aim
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.every_boundary import clean_of
from plugpull.scenarios.registry import REGISTRY
from plugpull.targets import BUILT_INS


def variant(name: str, **options):
    """The first unaimed variant with ``options``, as every-boundary runs it (a variant aimed at a save is left out)."""
    adopted = (REGISTRY.adopt("every-boundary", t) for t in BUILT_INS[name].variants)
    return next(t for t in adopted if t is not None and options.items() <= t.options.items())


@requires("langgraph")
@shared_forks.group_of_built_in("langgraph")
def test_langgraphs_clean_run_lists_model_calls_checkpoint_saves_and_the_refund(forked):
    target = variant("langgraph", durability="sync", key="none")
    settings, runtime = Settings(timeout=120), forked
    labels = [s.label for s in boundaries.steps_of(clean_of(target, settings, runtime).trace)]
    assert {"model-call 1", "model-call 2", "checkpoint-save 1", "pending-writes 1", "effect refund 1"} <= set(labels)
    assert labels.index("model-call 1") < labels.index("effect refund 1") < labels.index("model-call 2")
    # Killed after the first model call, LangGraph's own saver and invoke(None, config) finish the run.
    settings.aim = Aim(boundaries=("model-call 1",))
    results = suite.run_scenario(target, ["after"], settings=settings, runtime=runtime)
    assert [r.verdict for r in results] == [Verdict.PASS], [r.message for r in results]


@requires("agent_framework")
@shared_forks.group_of_built_in("agent-framework")
def test_agent_frameworks_checkpoint_saves_are_boundaries(forked):
    target = variant("agent-framework", variant="control")
    labels = [s.label for s in boundaries.steps_of(clean_of(target, Settings(timeout=120), forked).trace)]
    assert "checkpoint-save 1" in labels and "open-payment 2" in labels
    assert "effect charge_card:A 1" in labels and "effect charge_card:B 1" in labels


@requires("langgraph")
@shared_forks.group_of_built_in("langgraph")
def test_langgraph_killed_before_its_first_checkpoint_is_recovered_by_submitting_the_input_again(forked):
    # Nothing of the run was saved: invoke(None, config) would raise EmptyInputError (by design,
    # langgraph/pregel/_loop.py); the example resubmits its input, as a correct app does.
    target = variant("langgraph", durability="sync", key="none")
    settings = Settings(timeout=120, aim=Aim(boundaries=("checkpoint-save 1",)))
    (result,) = suite.run_scenario(target, ["before"], settings=settings, runtime=forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.evidence["counts"] == {"refund": 1}


@requires("agents")
@shared_forks.group_of_built_in("openai-agents-approval")
def test_the_openai_approval_app_applies_an_unsaved_approval_again_when_approve_died_before_saving_it(forked):
    # killed before its state-save, approve recorded nothing; the run is still paused and
    # recover approves paused.json again (a durable approval inbox redelivers), so the refund happens once.
    target = variant("openai-agents-approval", design="plain")
    settings = Settings(timeout=120, aim=Aim(boundaries=("state-save 1",)))
    results = suite.run_scenario(target, ["before", "after"], settings=settings, runtime=forked)
    assert [r.verdict for r in results] == [Verdict.PASS, Verdict.PASS], [r.message for r in results]
    assert all(r.evidence["counts"] == {"refund": 1} for r in results), [r.evidence["counts"] for r in results]


@requires("fastaiagent")
@shared_forks.group_of_built_in("fastaiagent")
def test_fastaiagent_killed_after_its_run_end_marker_recovers_by_reading_the_finished_run(forked):
    # The last checkpoint save is FastAIAgent's completed run-end marker: resume(id) refuses it by contract
    # (AlreadyResumed), so recover reads the finished run's result from the store instead (docs/DECISIONS.md).
    target = variant("fastaiagent")
    settings, runtime = Settings(timeout=120), forked
    labels = [s.label for s in boundaries.steps_of(clean_of(target, settings, runtime).trace)]
    assert labels[-1] == "checkpoint-save 2", labels
    settings.aim = Aim(boundaries=("checkpoint-save 2",))
    (result,) = suite.run_scenario(target, ["after"], settings=settings, runtime=runtime)
    assert result.verdict is Verdict.PASS, result.message
    assert result.evidence["golden"] == [{"status": "completed", "tool_results": ["refunded order A-1001"]}]
