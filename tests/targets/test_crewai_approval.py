"""CrewAI's @human_feedback under resume-after-approval: real processes, @persist (SQLite), real SIGKILL.

Not in CI (CrewAI is hundreds of MB and kept out of the default environment): runs where the
`crewai` extra is installed. An answered request is cleared, so a second approval is refused
(from_pending raises); the request is cleared before the approved listener runs, so a kill inside
it leaves nothing pending and recovery asks for the approval again.
"""

import signal

from installed import requires
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.resume_after_approval import run_point
from plugpull.targets import BUILT_INS

pytestmark = requires("crewai")

SETTINGS = Settings(timeout=600)

(TARGET,) = BUILT_INS["crewai-approval"].variants


def test_a_second_approval_is_refused_by_from_pending(forked):
    result = run_point(TARGET, "double-resume", SETTINGS, forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.message.startswith("the second approval was refused (exit 3)")


def test_a_recovery_after_a_kill_inside_the_approved_refund_asks_again_and_refunds_again(forked):
    result = run_point(TARGET, "killed-after-effect", SETTINGS, forked)
    assert result.evidence["approvals"][0]["outcome"]["returncode"] == -signal.SIGKILL
    assert "the restored flow asks for approval again" in result.stderr
    assert result.verdict is Verdict.FAIL
    assert result.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
