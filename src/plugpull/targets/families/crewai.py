"""CrewAI: Flows with @persist (SQLite), restored with kickoff(restore_from_state_id=...), and @human_feedback."""

from __future__ import annotations

from plugpull.targets.families import Family, Variant

FAMILY = Family(name="crewai", framework="crewai", module="crewai", extra="crewai")

# CrewAI Flows with @persist (SQLite) and kickoff(restore_from_state_id=...). Kept out of the default
# environment (hundreds of MB); the target points HOME and CREWAI_STORAGE_DIR at the run's workdir.
REFUND = FAMILY.built_in(
    "crewai",
    "crewai_refund",
    flags=("key",),
    variants=[Variant(options={"persist": "sqlite", "key": key}) for key in ("none", "checkpointed")],
)

# CrewAI's @human_feedback with an async provider (HumanFeedbackPending): the approval is answered with
# Flow.from_pending(flow_id, persistence).resume(feedback), CrewAI's documented webhook handler.
# from_pending refuses (ValueError) once the request was answered; the request is cleared before the
# approved listener runs, so a crash there leaves nothing pending and recovery restores the @persist state.
CREWAI_HUMAN_FEEDBACK = "https://docs.crewai.com/en/learn/human-feedback-in-flows"
APPROVAL = FAMILY.built_in(
    "crewai-approval",
    "crewai_approval",
    variants=[Variant(options={"persist": "sqlite"})],
    scenario="resume-after-approval",
)

BUILT_INS = (REFUND, APPROVAL)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    REFUND.stop({"persist": "sqlite", "key": "none"}, "before-effect", "after-effect"),
    APPROVAL.stop({"persist": "sqlite"}, "killed-before-effect", "killed-after-effect"),
)
UPGRADE = None
