"""Pydantic AI deferred tools under resume-after-approval: DBOSAgent on SQLite, real processes, real SIGKILL.

The approval is a new DBOSAgent run with the saved message history and DeferredToolResults, under
one DBOS workflow id per approval: a second approval finds that workflow finished and runs nothing,
racing approvers get one run between them. The approved function tool runs inline in the workflow,
not as a DBOS step, so a kill inside it is recovered by running it again.
"""

import signal

from installed import requires
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.resume_after_approval import run_point
from plugpull.targets import BUILT_INS
from plugpull.targets.families.pydantic_ai import PYDANTIC_AI_INLINE

pytestmark = requires("pydantic_ai", "dbos")

SETTINGS = Settings(timeout=90)

(TARGET,) = BUILT_INS["pydantic-ai-approval"].variants


def test_an_approval_in_a_new_process_runs_the_tool_once_and_finishes(forked):
    result = run_point(TARGET, "approve-elsewhere", SETTINGS, forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.evidence["counts"] == {"refund": 1}


def test_a_second_approval_finds_the_approval_workflow_finished_and_runs_nothing(forked):
    result = run_point(TARGET, "double-resume", SETTINGS, forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.message.startswith("the second approval was a no-op (exit 0, the tool did not run)")


def test_racing_approvers_refund_once_between_them(forked):
    result = run_point(TARGET, "racing-resumers", SETTINGS, forked)
    assert result.evidence["counts"] == {"refund": 1}, (result.message, result.stderr)


def test_a_recovery_after_a_kill_inside_the_approved_tool_runs_it_again(forked):
    result = run_point(TARGET, "killed-after-effect", SETTINGS, forked)
    assert result.evidence["approvals"][0]["outcome"]["returncode"] == -signal.SIGKILL
    assert result.verdict is Verdict.FAIL
    assert result.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
    assert [note["text"] for note in result.notes] == [PYDANTIC_AI_INLINE]
