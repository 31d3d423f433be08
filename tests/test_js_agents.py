"""Node agents under `plugpull --agent "node ..."`: real process groups, real SIGKILLs, the same evidence as a Python agent.

clients/js/examples/refund-agent.mjs is a plain Node agent (no framework) that keeps its steps in a JSON file under
$PLUGPULL_WORKDIR and runs the unfinished step again on resume; keyed by its saved tool call id it survives every
kill, without a key the kill after the effect duplicates it. Without Node these tests skip, saying why.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from plugpull.testing import run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "clients" / "js" / "examples"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH (.ci/run installs Debian's nodejs)")


def plain(variant: str) -> str:
    return shlex.join([NODE or "node", str(EXAMPLES / "refund-agent.mjs"), variant])


def assert_proven_kill(result) -> None:
    # The held call came from inside the killed group, was open at the kill and closed right after it.
    proof = result.evidence["proof"]
    assert proof["caller_group"] == proof["group"] and proof["caller_pid"], proof
    assert proof["held_open_at_kill"] is True and proof["closed_after_kill"] < 2, proof
    assert proof["survivors"] == [], proof


@needs_node
def test_a_plain_node_agent_keyed_by_its_saved_tool_call_id_survives_both_kills_with_proof():
    results = run(plain("tool-call-id"), scenario="kill-mid-tool", timeout=60)
    assert [(r.point, r.verdict.value) for r in results] == [("before-effect", "PASS"), ("after-effect", "PASS")], repr(
        results
    )
    for result in results:
        assert_proven_kill(result)
        assert result.evidence["golden"] == [{"answer": "Refund for order A-1001 is done.", "order": "refunded"}]
        assert result.evidence["resumed"] == result.evidence["golden"]
    assert "node" in results[0].evidence["clean"]["announced"][0]["framework"]


@needs_node
def test_a_plain_node_agent_without_a_key_refunds_twice_after_a_kill_after_the_effect():
    results = run(plain("no-key"), scenario="kill-mid-tool", timeout=60)
    assert [(r.point, r.verdict.value) for r in results] == [("before-effect", "PASS"), ("after-effect", "FAIL")], repr(
        results
    )
    assert results[1].message == "effect duplicated: the provider saw 2 refund (expected 1)"
    assert_proven_kill(results[1])


LANGGRAPH = EXAMPLES / "langgraph"
# better-sqlite3's native addon: built by its install script, which `npm ci --ignore-scripts` skips and
# `npm rebuild better-sqlite3` runs (.ci/run does both).
ADDON = LANGGRAPH / "node_modules" / "better-sqlite3" / "build" / "Release" / "better_sqlite3.node"
needs_langgraphjs = pytest.mark.skipif(
    NODE is None or not ADDON.exists(),
    reason="LangGraph.js is not installed: cd clients/js/examples/langgraph && npm ci --ignore-scripts && "
    "npm rebuild better-sqlite3 (.ci/run does it when npm is there)",
)


def langgraphjs(variant: str, durability: str = "sync") -> str:
    return shlex.join([NODE or "node", str(LANGGRAPH / "agent.mjs"), variant, "--durability", durability])


@needs_langgraphjs
def test_langgraphjs_keyed_by_the_tool_call_id_survives_both_kills_and_without_a_key_refunds_twice():
    keyed = run(langgraphjs("tool-call-id"), scenario="kill-mid-tool", timeout=60)
    assert [(r.point, r.verdict.value) for r in keyed] == [("before-effect", "PASS"), ("after-effect", "PASS")], repr(
        keyed
    )
    for result in keyed:
        assert_proven_kill(result)
        assert result.evidence["golden"] == [{"answer": "Refund for order A-1001 is done."}]
        # The resumed run refunded with the start's key: LangGraph.js restored the model's tool call.
        keys = {c["key"] for c in result.evidence["calls"]}
        assert len(keys) == 1 and next(iter(keys)).startswith("call_"), result.evidence["calls"]
    assert keyed[0].evidence["clean"]["announced"][0]["framework"] == "langgraphjs"
    no_key = run(langgraphjs("no-key"), scenario="kill-mid-tool", timeout=60)
    assert [(r.point, r.verdict.value) for r in no_key] == [("before-effect", "PASS"), ("after-effect", "FAIL")], repr(
        no_key
    )
    assert no_key[1].message == "effect duplicated: the provider saw 2 refund (expected 1)"


def run_argv(command: str, save: str):
    # plugpull.testing.run has no --save option: the CLI's own parser and runner, as run() uses them.
    from plugpull import cli

    argv = ["--agent", command, "--scenario", "kill-mid-tool", "--point", "after-effect", "--hold", "refund"]
    args = cli.build_parser().parse_args([*argv, "--save", save, "--timeout", "30"])
    return cli.run(args, cli.select_targets(args), show_progress=False)


@needs_langgraphjs
def test_langgraphjs_async_durability_resumes_from_the_input_checkpoint_when_the_step_0_save_is_withheld():
    # durability "async" saves a step's checkpoint while the next step runs, and LangGraph.js chains the saves:
    # with the step-0 checkpoint withheld until the kill, no later one is written either, resume starts from the
    # input checkpoint and the model makes a new tool call id. (Withholding the step-1 checkpoint instead leaves the
    # model's pending writes racing the kill: PASS or FAIL from run to run, so it is not asserted here.)
    lost = run_argv(langgraphjs("tool-call-id", "async"), "checkpoint-save:2:withheld")
    assert [r.verdict.value for r in lost] == ["FAIL"], repr(lost)
    assert lost[0].message.startswith("effect duplicated: the provider saw 2 refund"), repr(lost)
    assert_proven_kill(lost[0])
    start, resume = lost[0].evidence["calls"]
    assert (start["phase"], resume["phase"]) == ("start", "resume") and start["key"] != resume["key"], lost[0].evidence


@needs_langgraphjs
def test_langgraphjs_approval_resumes_from_the_saver_alone_and_reruns_the_approved_tool_after_a_kill():
    # interrupt() in the refund tool, Command({resume}) in a new process; the refund has no key, so the framework's
    # own behaviour shows: a second approval is a no-op, a kill after the effect refunds again on recover.
    command = shlex.join([NODE or "node", str(LANGGRAPH / "approval.mjs")])
    results = {r.point: r for r in run(command, scenario="resume-after-approval", timeout=60)}
    assert set(results) == {
        "approve-elsewhere",
        "double-resume",
        "racing-resumers",
        "killed-before-effect",
        "killed-after-effect",
    }, results
    assert results["approve-elsewhere"].verdict.value == "PASS", results["approve-elsewhere"]
    assert results["double-resume"].message.startswith("the second approval was a no-op"), results["double-resume"]
    assert results["killed-before-effect"].verdict.value == "PASS", results["killed-before-effect"]
    after = results["killed-after-effect"]
    assert (after.verdict.value, after.message) == ("FAIL", "effect duplicated: the provider saw 2 refund (expected 1)")
    assert_proven_kill(after)
    # Nothing claims a pending interrupt: racing approvers each run the tool; how many is the race's.
    race = results["racing-resumers"]
    ran = re.match(r"(\d) of 5 approvers ran the approved tool", race.message)
    assert ran and (ran[1] == "1" or race.verdict.value == "FAIL"), race  # two or more runs of the tool: FAIL


OPENAI_AGENTS = EXAMPLES / "openai-agents"
needs_openai_agents_js = pytest.mark.skipif(
    NODE is None or not (OPENAI_AGENTS / "node_modules" / "@openai" / "agents").is_dir(),
    reason="the OpenAI Agents SDK for JS is not installed: cd clients/js/examples/openai-agents && npm ci "
    "--ignore-scripts (.ci/run does it when npm is there)",
)


@needs_openai_agents_js
@pytest.mark.parametrize("design", ["plain", "claim-and-key"])
def test_the_js_agents_sdk_approval_app_keeps_the_promises_of_its_python_twin(design):
    # RunState.toString() saved at the pause, RunState.fromString() in a new process: the twin of
    # src/plugpull/targets/openai_agents_approval.py, with the verdicts that target has on every point.
    command = shlex.join([NODE or "node", str(OPENAI_AGENTS / "approval.mjs"), "--design", design])
    results = {r.point: r for r in run(command, scenario="resume-after-approval", timeout=60)}
    verdicts = {point: r.verdict.value for point, r in results.items()}
    if design == "plain":
        # The docs' steps alone: every restore of the snapshot runs the approved tool, and the refund has no key.
        assert verdicts == {
            "approve-elsewhere": "PASS",
            "double-resume": "FAIL",
            "racing-resumers": "FAIL",
            "killed-before-effect": "PASS",
            "killed-after-effect": "FAIL",
        }, results
        assert results["double-resume"].message.startswith("the second approval ran the approved tool again")
    else:
        # The app's claim of the stored pause and the tool call id as the key: every point keeps one refund.
        assert set(verdicts.values()) == {"PASS"}, results
        assert results["double-resume"].message.startswith("the second approval was refused (exit 3)")
    assert_proven_kill(results["killed-after-effect"])
    # The version announced from inside the agent's process is the one its lock installs.
    locked = json.loads((OPENAI_AGENTS / "package-lock.json").read_text())["packages"]["node_modules/@openai/agents"]
    assert (results["approve-elsewhere"].framework, results["approve-elsewhere"].version) == (
        "openai-agents-js",
        locked["version"],
    )


@needs_openai_agents_js
def test_the_js_sdks_framework_only_witness_runs_the_approved_tool_once_per_restore_of_one_saved_state():
    # No plugpull in the process: the SDK alone, restoring one saved RunState twice, runs the tool twice (what the
    # plain design's double-resume FAIL says). Run as `plugpull report` runs a JavaScript witness: copied into a
    # fresh cwd beside the packages (here the example's node_modules), its last stdout line the witness contract.
    from plugpull.report.harness import witness

    script = ROOT / "findings" / "openai-agents-js-approval" / "witness" / "witness-restore-twice.mjs"
    prepare = witness._node_prepare(script, [], OPENAI_AGENTS / "node_modules", ROOT / "clients" / "js")
    done = witness.run_once([], 60, prepare=prepare)
    assert done["exit_code"] == 1, done
    output = done["output"]
    assert (output["verdict"], output["counts"], output["outputs"]) == ("FAIL", {"refund": 2}, ["done", "done"]), done
    assert (
        output["version"] == json.loads((OPENAI_AGENTS / "package.json").read_text())["dependencies"]["@openai/agents"]
    )


@needs_openai_agents_js
def test_the_js_agents_sdk_runstate_app_keyed_by_its_saved_tool_call_id_survives_both_kills_as_its_python_twin():
    # agent.mjs, the twin of src/plugpull/targets/openai_agents_runstate.py: the approved RunState.toString() saved
    # before the tool runs, RunState.fromString() + run() in the resume process. The refund's key is the model's
    # call id (details.toolCall.callId), kept in the saved state: both kills end with one refund and the clean
    # run's answer, as the Python twin's lines do.
    results = run(shlex.join([NODE or "node", str(OPENAI_AGENTS / "agent.mjs")]), scenario="kill-mid-tool", timeout=60)
    assert [(r.point, r.verdict.value) for r in results] == [("before-effect", "PASS"), ("after-effect", "PASS")], repr(
        results
    )
    for result, start_recorded in zip(results, (False, True), strict=True):
        assert_proven_kill(result)
        evidence = result.evidence
        # The reply id the scripted model makes up per call is announced as result_ignore, as the Python target's
        # Target(result_ignore=("reply_id",)).
        assert evidence["result_ignore"] == ["reply_id"], evidence
        answer = "Refunded A-1001 (0 later note(s) read; reply <reply id>)."
        assert [g["answer"] for g in evidence["golden"]] == [answer]
        assert [r["answer"] for r in evidence["resumed"]] == [answer]
        # One refund call in start (held) and one in resume, with the same key: the restored state's call id.
        start, resume = evidence["calls"]
        assert (start["phase"], resume["phase"]) == ("start", "resume"), evidence["calls"]
        assert start["key"] == resume["key"] and start["key"].startswith("call_"), evidence["calls"]
        # before-effect: the held call was not recorded, resume's is; after-effect: resume's repeats a known key.
        assert (start["recorded"], resume["recorded"]) == (start_recorded, not start_recorded), evidence["calls"]
    locked = json.loads((OPENAI_AGENTS / "package-lock.json").read_text())["packages"]["node_modules/@openai/agents"]
    assert (results[0].framework, results[0].version) == ("openai-agents-js", locked["version"])
