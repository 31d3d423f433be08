"""Evidence -> verdict, one module per scenario family. Pure functions: no processes, no sockets, no clock.

Scenarios gather evidence (plugpull.evidence); these functions turn it into a Judgement.
Tests hit them with hand-built evidence (Jepsen's ok-op / info-op style). The names below are
re-exported so a scenario reads ``checks.judge_kill_mid_tool(ev)``.
"""

from plugpull.checks.cancel_mid_stream import judge_cancel_mid_stream, lost_from, prove_cancel
from plugpull.checks.completion import (
    NOT_CHECKED,
    check_golden,
    completion_problem,
    result_diff,
    with_completion,
    without_fields,
)
from plugpull.checks.every_boundary import judge_every_boundary, prove_boundary_kill
from plugpull.checks.judgement import (
    CLOSE_AFTER_KILL_LIMIT,
    WITHOUT_FAULT,
    Judgement,
    check_outlived,
    error,
    judge_effects,
    last_line,
    prove_held_kill,
    without_fault,
)
from plugpull.checks.kill_mid_tool import check_clean_run, judge_kill_mid_tool, prove_kill, prove_saves
from plugpull.checks.lost_session_write import judge_items, judge_lost_session_write, prove_probe, prove_store_fault
from plugpull.checks.power_loss import describe_losses, judge_power_loss, prove_power_cut
from plugpull.checks.resume_after_approval import (
    PAUSED_AGAIN_EXIT,
    REFUSED_EXIT,
    check_clean_approval,
    check_paused,
    judge_approve_elsewhere,
    judge_double_resume,
    judge_killed_approval,
    judge_racing_resumers,
    judge_resume_after_approval,
    racer_outcomes,
)
from plugpull.checks.resume_after_upgrade import REFUSED, check_releases, judge_resume_after_upgrade
from plugpull.checks.tool_error import judge_tool_error

__all__ = [
    "CLOSE_AFTER_KILL_LIMIT",
    "PAUSED_AGAIN_EXIT",
    "WITHOUT_FAULT",
    "without_fault",
    "NOT_CHECKED",
    "check_golden",
    "completion_problem",
    "racer_outcomes",
    "result_diff",
    "with_completion",
    "without_fields",
    "REFUSED",
    "REFUSED_EXIT",
    "check_releases",
    "judge_resume_after_upgrade",
    "Judgement",
    "check_clean_approval",
    "check_clean_run",
    "check_outlived",
    "check_paused",
    "error",
    "judge_approve_elsewhere",
    "judge_double_resume",
    "judge_effects",
    "judge_every_boundary",
    "prove_boundary_kill",
    "judge_items",
    "judge_kill_mid_tool",
    "judge_killed_approval",
    "judge_lost_session_write",
    "judge_power_loss",
    "describe_losses",
    "prove_power_cut",
    "judge_racing_resumers",
    "judge_resume_after_approval",
    "last_line",
    "prove_held_kill",
    "prove_kill",
    "prove_saves",
    "prove_probe",
    "judge_cancel_mid_stream",
    "lost_from",
    "prove_cancel",
    "prove_store_fault",
    "judge_tool_error",
]
