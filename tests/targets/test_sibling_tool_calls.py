"""Sibling tool calls with real frameworks and SIGKILL: the kill lands in charge_card while
send_email, asked for in the same model turn, is finished or held too."""

import pytest

import shared_forks
from installed import found, requires
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.kill_mid_tool import run_point
from plugpull.targets import BUILT_INS

SETTINGS = Settings(timeout=90)

LINES = [
    pytest.param(name, target, point, marks=shared_forks.group_of_built_in(name))
    for name, module in (("langgraph-siblings", "langgraph.prebuilt"), ("openai-agents-siblings", "agents"))
    for target in BUILT_INS[name].variants
    if target.options.get("durability", "sync") == "sync"
    for point in ("before-effect", "after-effect")
]


@pytest.mark.parametrize(("name", "target", "point"), LINES, ids=lambda v: v if isinstance(v, str) else None)
def test_the_kill_lands_in_charge_card_beside_the_sibling_in_the_asked_state(name, target, point, forked):
    module = "langgraph.prebuilt" if name == "langgraph-siblings" else "agents"
    if not found(module):  # looked up, not imported: the targets import it in their own processes
        pytest.skip(f"{module} not installed")
    result = run_point(target, point, SETTINGS, forked)
    assert result.verdict is not Verdict.ERROR, (result.message, result.stderr)
    ev = result.evidence
    assert ev["held_name"] == "charge_card"
    sibling, state = ev["sibling"], target.aim.sibling[1]
    assert sibling["name"] == "send_email" and sibling["state"] == state and sibling["ready"]
    call = sibling["call"]
    # The sibling's call came from the killed process group, in start, before the kill.
    assert call["phase"] == "start" and call["group"] == ev["proof"]["group"]
    if state == "finished":
        assert call["answered"] and call["recorded"] and not call["held_at"]
    else:
        assert call["held_at"] == point and not call["answered"] and sibling["open"]
        assert call["recorded"] is (point == "after-effect")
    # charge_card is keyed by the tool call id the framework saved before the tools ran (LangGraph
    # sync durability; the SDK's approved RunState), so resume's repeat is the same charge.
    assert ev["counts"]["charge_card"] == 1
    # Whatever the verdict, it is the unkeyed email: sent before the kill and again by resume, or once.
    assert ev["counts"]["send_email"] in (1, 2)
    if result.verdict is Verdict.FAIL:
        assert ev["counts"]["send_email"] == 2 and "send_email" in result.message
    if state == "running" and point == "before-effect":
        # Neither effect was made before the kill: resume makes each once.
        assert result.verdict is Verdict.PASS, result.message


@pytest.mark.parametrize(
    ("approval", "point", "emails"),
    [("both", "after-effect", 2), ("charge_card", "after-effect", 1), ("charge_card", "before-effect", 1)],
)
@requires("agents")
@shared_forks.group_of_built_in("openai-agents-siblings")
def test_a_finished_send_email_is_sent_again_only_when_the_app_saved_before_it_ran(approval, point, emails, forked):
    # the SDK skips a call whose output is in the restored RunState (_function_output_exists).
    # approval=both saves the approved state before either tool runs; approval=charge_card lets send_email
    # run before the pause, so its output is in the saved state.
    (target,) = [
        t
        for t in BUILT_INS["openai-agents-siblings"].variants
        if t.options["approval"] == approval and t.aim.sibling == ("send_email", "finished")
    ]
    result = run_point(target, point, SETTINGS, forked)
    assert result.verdict is (Verdict.FAIL if emails == 2 else Verdict.PASS), (result.message, result.stderr)
    assert result.evidence["counts"] == {"send_email": emails, "charge_card": 1}
