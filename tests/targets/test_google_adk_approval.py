"""Google ADK tool confirmation under resume-after-approval: real processes, both session stores, real SIGKILL.

A second confirmation of an answered request runs nothing (ADK drops confirmations already
consumed); a kill inside the confirmed tool is resumed at least once (ResumabilityConfig); a racing
approver that loses the store's optimistic concurrency check exits 3, the refusal, instead of crashing.
"""

import signal

import pytest

from installed import requires
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.resume_after_approval import run_point
from plugpull.targets import BUILT_INS

pytestmark = requires("google.adk")

SETTINGS = Settings(timeout=300)

SESSIONS = ("sqlite", "database")


def variant(session: str):
    (target,) = [t for t in BUILT_INS["google-adk-approval"].variants if t.options["session"] == session]
    return target


@pytest.mark.parametrize("session", SESSIONS)
def test_a_second_confirmation_is_a_no_op(forked, session):
    result = run_point(variant(session), "double-resume", SETTINGS, forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.message.startswith("the second approval was a no-op (exit 0, the tool did not run)")


@pytest.mark.parametrize("session", SESSIONS)
def test_a_recovery_after_a_kill_inside_the_confirmed_tool_refunds_again(forked, session):
    result = run_point(variant(session), "killed-after-effect", SETTINGS, forked)
    assert result.evidence["approvals"][0]["outcome"]["returncode"] == -signal.SIGKILL
    assert result.verdict is Verdict.FAIL
    assert result.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")


@pytest.mark.parametrize("session", SESSIONS)
def test_racing_approvers_that_lose_the_stale_session_check_are_refused_not_crashed(forked, session):
    result = run_point(variant(session), "racing-resumers", SETTINGS, forked)
    assert result.verdict in (Verdict.PASS, Verdict.FAIL), (result.message, result.stderr)
    outcomes = result.evidence["racer_outcomes"]
    # Which approver wins, and how many run the tool before the check fails them, is timing; that
    # none of them crashes with anything but the refusal is not.
    assert set(outcomes) <= {"ran the tool", "ran the tool, crashed", "refused", "no-op"}, outcomes
    assert (
        outcomes.get("ran the tool", 0) + outcomes.get("ran the tool, crashed", 0)
        == result.evidence["counts"]["refund"]
    )
    assert result.evidence["counts"]["refund"] >= 1


def test_the_stale_session_errors_of_both_releases_are_the_lost_race_and_nothing_else():
    from plugpull.targets.google_adk_approval import lost_the_race  # imports ADK: here, not at collection

    class StaleSessionError(ValueError):
        pass

    assert lost_the_race(StaleSessionError("anything"))
    assert lost_the_race(
        ValueError("... earlier than the update_time in storage. Please check if it is a stale session.")
    )
    assert lost_the_race(ValueError("The session has been modified in storage since it was loaded. Please reload ..."))
    assert not lost_the_race(ValueError("Session refund-A-1001 not found."))
    assert not lost_the_race(RuntimeError("stale session"))


def test_the_fork_servers_hook_completes_the_genai_types_a_run_builds():
    # In this process (the test above imported ADK already). A type missing from this release would mean the list
    # fell behind it; an incomplete one after the hook, that each forked phase completes it again (~0.06 CPU-s).
    from google.genai import types

    from plugpull.targets import google_adk_support

    google_adk_support.preimport()
    assert [name for name in google_adk_support.RUN_MODELS if not hasattr(types, name)] == []
    assert [name for name in google_adk_support.RUN_MODELS if not getattr(types, name).__pydantic_complete__] == []


def test_a_database_url_without_the_database_store_is_refused_with_usage(capsys):
    # In this process (the test above imported ADK already): argparse's refusal, before anything starts.
    from plugpull.targets.google_adk_approval import main

    with pytest.raises(SystemExit) as refused:
        main(["--db-url", "sqlite+aiosqlite:///x", "start"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "--db-url needs --session database" in err
    assert "Traceback" not in err
