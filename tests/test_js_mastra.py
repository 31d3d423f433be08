"""The Mastra workflow agents (clients/js/examples/mastra) under `plugpull --agent "node ..."`: real process groups,
real SIGKILLs, Mastra's own LibSQL storage and its own recovery API (run.restart() for a run killed mid-step,
run.resume() for a suspended one).

The verdicts are the ones measured on @mastra/core 0.24.9 (the lock) and 0.24.7 with @mastra/libsql 0.16.4, Node 20
(the comments of clients/js/examples/mastra/*.mjs say why); the framework-only witnesses there show the same with
Mastra alone. Without Node or without the packages installed these tests skip, saying why.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from plugpull.testing import run

MASTRA = Path(__file__).resolve().parent.parent / "clients" / "js" / "examples" / "mastra"
NODE = shutil.which("node")
ANSWER = "Refund for order A-1001 is done."
needs_mastra = pytest.mark.skipif(
    NODE is None or not (MASTRA / "node_modules" / "@mastra" / "core").is_dir(),
    reason="Mastra is not installed: cd clients/js/examples/mastra && npm ci --ignore-scripts "
    "(.ci/run does it when npm is there)",
)


def locked_version() -> str:
    # The version announced from inside the agent's process must be the one the lock installs.
    return json.loads((MASTRA / "package-lock.json").read_text())["packages"]["node_modules/@mastra/core"]["version"]


def assert_proven_kill(result, *, effect: bool = True) -> None:
    # The held call came from inside the killed group, was open at the kill and closed right after it.
    proof = result.evidence["proof"]
    assert proof["caller_group"] == proof["group"] and proof["caller_pid"], proof
    assert proof["held_open_at_kill"] is True and proof["closed_after_kill"] < 2, proof
    assert proof["survivors"] == [], proof
    if not effect:  # held at a boundary mark, not at an effect call
        return
    held = [c for c in result.evidence["calls"] if c["held_at"] is not None]
    assert len(held) == 1 and held[0]["group"] == proof["group"], result.evidence["calls"]


def agent(variant: str) -> str:
    return shlex.join([NODE or "node", str(MASTRA / "agent.mjs"), variant])


@needs_mastra
def test_mastra_restart_keyed_by_the_run_id_survives_both_kills_and_without_a_key_refunds_twice():
    # run.restart() runs the step that was running at the kill again from its start: at-least-once. The run id
    # Mastra passes to the step is the stored run's, so the keyed refund stays at one.
    keyed = run(agent("run-id"), scenario="kill-mid-tool", timeout=60)
    assert [(r.point, r.verdict.value) for r in keyed] == [("before-effect", "PASS"), ("after-effect", "PASS")], repr(
        keyed
    )
    for result in keyed:
        assert_proven_kill(result)
        assert result.evidence["golden"] == [{"answer": ANSWER}]
        assert result.evidence["resumed"] == result.evidence["golden"]
        keys = {c["key"] for c in result.evidence["calls"]}
        assert keys == {"refund-A-1001/refund"}, result.evidence["calls"]
    assert (keyed[0].framework, keyed[0].version) == ("mastra", locked_version())
    assert keyed[1].evidence["counts"] == {"refund": 1}

    no_key = run(agent("no-key"), scenario="kill-mid-tool", timeout=60)
    assert [(r.point, r.verdict.value) for r in no_key] == [("before-effect", "PASS"), ("after-effect", "FAIL")], repr(
        no_key
    )
    after = no_key[1]
    assert after.message == "effect duplicated: the provider saw 2 refund (expected 1)"
    assert_proven_kill(after)
    assert after.evidence["counts"] == {"refund": 2}
    assert [c["phase"] for c in after.evidence["calls"]] == ["start", "resume"], after.evidence["calls"]
    # The resume continued the stored run with Mastra's restart, not a new start from the input.
    assert "restarting the run from its snapshot (status running)" in after.stderr, after.stderr


@needs_mastra
def test_mastra_restart_runs_again_a_step_whose_success_was_already_saved():
    # The snapshot Mastra saves right after the refund step (snapshot-save 5: the run "running", the refund step
    # "success") still has activePaths at the refund step, and restart() starts there: killed just after that save,
    # the resume refunds again. The run-id key keeps it at one.
    line = {"scenario": "every-boundary", "boundary": "snapshot-save 5", "points": "after", "timeout": 60}
    [no_key] = run(agent("no-key"), **line)
    assert (no_key.point, no_key.verdict.value) == ("after snapshot-save 5", "FAIL"), repr(no_key)
    assert no_key.message == (
        "effect duplicated: the provider saw 2 refund (expected 1); refund was done before the kill and again by resume"
    )
    assert_proven_kill(no_key, effect=False)
    assert (no_key.evidence["counts_at_kill"], no_key.evidence["counts"]) == ({"refund": 1}, {"refund": 2})
    assert "restarting the run from its snapshot (status running)" in no_key.stderr, no_key.stderr
    [keyed] = run(agent("run-id"), **line)
    assert (keyed.point, keyed.verdict.value) == ("after snapshot-save 5", "PASS"), repr(keyed)
    assert [c["phase"] for c in keyed.evidence["calls"]] == ["start", "resume"], keyed.evidence["calls"]
    assert keyed.evidence["counts"] == {"refund": 1}


@needs_mastra
def test_mastra_approval_refuses_a_second_resume_but_not_racing_ones_and_reruns_the_approved_step_after_a_kill():
    # suspend() in the refund step, run.resume({step, resumeData}) in a new process from the LibSQL snapshot; the
    # refund has no key, so the framework's own behaviour shows.
    command = shlex.join([NODE or "node", str(MASTRA / "approval.mjs")])
    results = {r.point: r for r in run(command, scenario="resume-after-approval", timeout=60)}
    assert set(results) == {
        "approve-elsewhere",
        "double-resume",
        "racing-resumers",
        "killed-before-effect",
        "killed-after-effect",
    }, results
    assert results["approve-elsewhere"].verdict.value == "PASS", results["approve-elsewhere"]
    assert (results["approve-elsewhere"].framework, results["approve-elsewhere"].version) == (
        "mastra",
        locked_version(),
    )
    # Run._resume refuses a snapshot that is no longer "suspended".
    double = results["double-resume"]
    assert (double.verdict.value, double.message) == (
        "PASS",
        "the second approval was refused (exit 3); the provider saw exactly 1 refund",
    ), double
    assert results["killed-before-effect"].verdict.value == "PASS", results["killed-before-effect"]
    assert_proven_kill(results["killed-before-effect"])
    # restart() runs the approved step again, without its resumeData: it suspends again and the app resumes it with
    # the approval given, so the refund is made again.
    after = results["killed-after-effect"]
    assert (after.verdict.value, after.message) == ("FAIL", "effect duplicated: the provider saw 2 refund (expected 1)")
    assert_proven_kill(after)
    assert after.evidence["counts"] == {"refund": 2}
    assert "the restarted refund step suspended again" in after.stderr, after.stderr
    # The refusal is a read of the snapshot's status, not a claim: racing approvers that read it before the first
    # one's "running" write each run the step (4 and 5 of 5 measured); how many is the race's.
    race = results["racing-resumers"]
    ran = re.match(r"(\d) of 5 approvers ran the approved tool", race.message)
    assert ran and (ran[1] == "1" or race.verdict.value == "FAIL"), race


ROOT = MASTRA.parents[3]


def witness(finding: str, name: str, *args: str) -> dict:
    # Run as `plugpull report` runs a JavaScript witness: copied into a fresh cwd beside the packages.
    from plugpull.report.harness import witness as witnesses

    script = ROOT / "findings" / finding / "witness" / name
    prepare = witnesses._node_prepare(script, list(args), MASTRA / "node_modules", ROOT / "clients" / "js")
    done = witnesses.run_once([], 120, prepare=prepare)
    assert done["output"] is not None, done
    assert done["exit_code"] == {"PASS": 0, "FAIL": 1}.get(done["output"]["verdict"], 2), done
    return done["output"]


@needs_mastra
def test_mastras_framework_only_witnesses_show_no_claim_on_resume_and_a_restart_that_reruns_the_step():
    # No plugpull in these processes: Mastra alone shows what the FAIL lines above say.
    raced = witness("mastra-approval", "racing-resume.mjs", "--racers", "5")
    assert (raced["verdict"], raced["counts"]) == ("FAIL", {"refund": 5}), raced
    for case in ("plain", "completed", "approved"):
        restarted = witness("mastra-kill-mid-tool", "restart-after-kill.mjs", "--case", case)
        assert (restarted["verdict"], restarted["counts"]) == ("FAIL", {"refund": 2}), restarted
        assert "status after the kill: running" in restarted["did"], restarted
    # The approved step restarted without its approval asks again (the app gives it again: the second refund).
    assert "run.restart() ended suspended" in restarted["did"], restarted
