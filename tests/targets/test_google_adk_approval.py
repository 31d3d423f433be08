"""Google ADK tool confirmation under resume-after-approval: real processes, SqliteSessionService, real SIGKILL.

A second confirmation of an answered request runs nothing (ADK drops confirmations already
consumed); a kill inside the confirmed tool is resumed at least once (ResumabilityConfig).
"""

import signal

import pytest

pytest.importorskip("google.adk")

from plugpull.results import Verdict  # noqa: E402
from plugpull.scenarios.resume_after_approval import run_point  # noqa: E402
from plugpull.targets import BUILT_INS  # noqa: E402

(TARGET,) = BUILT_INS["google-adk-approval"].variants


def test_a_second_confirmation_is_a_no_op(forked):
    result = run_point(TARGET, "double-resume", forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.message.startswith("the second approval was a no-op (exit 0, the tool did not run)")


def test_a_recovery_after_a_kill_inside_the_confirmed_tool_refunds_again(forked):
    result = run_point(TARGET, "killed-after-effect", forked)
    assert result.evidence["approvals"][0]["outcome"]["returncode"] == -signal.SIGKILL
    assert result.verdict is Verdict.FAIL
    assert result.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
