"""The verdict logic on hand-built evidence: every way a kill can be unproven is ERROR."""

import signal
from dataclasses import replace

import pytest

from plugpull.checks import (
    PAUSED_AGAIN_EXIT,
    check_clean_run,
    judge_effects,
    judge_kill_mid_tool,
    prove_kill,
    prove_saves,
)
from plugpull.evidence import CleanRun, KillEvidence, KillProof
from plugpull.process import Outcome
from plugpull.results import Verdict

CALL = [{"seq": 1, "phase": "start", "name": "charge", "key": None, "pid": 100}]


def proven(**changes) -> KillEvidence:
    ev = KillEvidence(
        point="after-effect",
        start=Outcome(argv=["a", "start"], returncode=-signal.SIGKILL),
        clean=CleanRun(start=Outcome(argv=["a", "start"], returncode=0), counts={"charge": 1}, calls=1),
        proof=KillProof(group=100, caller_pid=100, caller_group=100, held_open_at_kill=True, closed_after_kill=0.01),
        resume=Outcome(argv=["a", "resume"], returncode=0),
        counts={"charge": 1},
        calls=CALL,
        start_timeout=5,
        resume_timeout=5,
    )
    return replace(ev, **changes)


def clean(returncode=0, counts=None, **changes) -> CleanRun:
    counts = {"charge": 1} if counts is None else counts
    return CleanRun(
        start=Outcome(argv=["a", "start"], returncode=returncode, **changes), counts=counts, calls=sum(counts.values())
    )


def proof(**changes) -> KillProof:
    return replace(proven().proof, **changes)


def test_a_proven_kill_with_one_effect_passes():
    assert judge_kill_mid_tool(proven()).verdict is Verdict.PASS


def test_two_effects_fail_as_duplicated():
    j = judge_kill_mid_tool(proven(counts={"charge": 2}))
    assert j.verdict is Verdict.FAIL
    assert j.message == "effect duplicated: the provider saw 2 charge (expected 1)"


def test_zero_effects_fail_as_lost():
    j = judge_kill_mid_tool(proven(counts={"charge": 0}))
    assert j.verdict is Verdict.FAIL and j.message.startswith("effect lost")


def test_every_name_is_judged_on_its_own():
    j = judge_effects({"charge:A": 0, "charge:B": 2, "email": 1})
    assert j.verdict is Verdict.FAIL
    assert "0 charge:A" in j.message and "2 charge:B" in j.message


@pytest.mark.parametrize(
    "evidence, reason",
    [
        (proven(start=Outcome(argv=["x"], spawn_error="x: No such file"), proof=None), "cannot start"),
        (proven(clean=clean(spawn_error="x: No such file")), "cannot start the target"),
        (proven(clean=clean(returncode=1)), "a clean run (no kill) ended (exit code 1)"),
        (proven(clean=clean(timed_out=True, counts={})), "did not reach the tool"),
        (proven(clean=clean(counts={})), "never called record_effect"),
        (proven(clean=None), "clean run (no kill) was not run"),
        (proven(proof=None, calls=[], start=Outcome(argv=["a"], returncode=0)), "never called record_effect"),
        (proven(proof=None, calls=[], start=Outcome(argv=["a"], returncode=1)), "before the tool called"),
        (proven(proof=None, calls=[], start=Outcome(argv=["a"], timed_out=True)), "did not reach the tool"),
        (proven(proof=proof(caller_pid=None)), "could not say which process"),
        (proven(proof=proof(caller_group=None)), "gone before its process group could be read"),
        (proven(proof=proof(caller_group=555)), "outside the killed group"),
        (proven(proof=proof(held_open_at_kill=False)), "no longer holding"),
        (proven(start=Outcome(argv=["a"], returncode=0)), "did not die of SIGKILL"),
        (proven(start=Outcome(argv=["a"], returncode=-signal.SIGTERM)), "did not die of SIGKILL"),
        (proven(proof=proof(closed_after_kill=None)), "did not close"),
        (proven(proof=proof(closed_after_kill=30.0)), "did not close"),
        (proven(proof=proof(survivors=[123])), "still alive"),
    ],
)
def test_an_unproven_kill_is_an_error_whatever_the_counts(evidence, reason):
    # Even a perfect count (1 effect) must not PASS when the kill is not proven.
    j = judge_kill_mid_tool(evidence)
    assert j.verdict is Verdict.ERROR
    assert reason in j.message
    assert (check_clean_run(evidence) or prove_kill(evidence)) == j


def test_a_hung_resume_fails_as_hung():
    j = judge_kill_mid_tool(proven(resume=Outcome(argv=["a"], timed_out=True)))
    assert j.verdict is Verdict.FAIL and j.message.startswith("resume hung") and j.show == "resume"


def test_a_crashed_resume_fails_and_still_counts_effects():
    j = judge_kill_mid_tool(proven(resume=Outcome(argv=["a"], returncode=1), counts={"charge": 0}))
    assert j.verdict is Verdict.FAIL
    assert j.message == "resume crashed (exit code 1); effect lost: the provider saw 0 charge (expected 1)"


def test_a_resume_that_cannot_start_is_an_error():
    j = judge_kill_mid_tool(proven(resume=Outcome(argv=["a"], spawn_error="gone")))
    assert j.verdict is Verdict.ERROR


def test_an_effect_the_clean_run_owed_but_resume_never_asked_for_is_lost():
    # agent-framework#8292: after the swapped restore, B's branch charges A's card and B's card is
    # never asked for; only the clean run knows that charge_card:B was owed.
    ev = proven(clean=clean(counts={"charge_card:A": 1, "charge_card:B": 1}), counts={"charge_card:A": 2})
    j = judge_kill_mid_tool(ev)
    assert j.verdict is Verdict.FAIL
    assert j.message == (
        "effect lost: the provider saw 0 charge_card:B (expected 1); "
        "effect duplicated: the provider saw 2 charge_card:A (expected 1)"
    )


def test_an_effect_done_before_the_kill_and_again_by_resume_is_named():
    calls = [
        {
            "seq": 1,
            "phase": "start",
            "name": "send_email",
            "key": None,
            "recorded": True,
            "held_at": None,
            "answered": True,
        },
        {
            "seq": 2,
            "phase": "start",
            "name": "charge",
            "key": "k",
            "recorded": True,
            "held_at": "after-effect",
            "answered": False,
        },
        {
            "seq": 3,
            "phase": "resume",
            "name": "send_email",
            "key": None,
            "recorded": True,
            "held_at": None,
            "answered": True,
        },
        {
            "seq": 4,
            "phase": "resume",
            "name": "charge",
            "key": "k",
            "recorded": False,
            "held_at": None,
            "answered": True,
        },
    ]
    ev = proven(clean=clean(counts={"send_email": 1, "charge": 1}), counts={"send_email": 2, "charge": 1}, calls=calls)
    judgement = judge_kill_mid_tool(ev)
    assert judgement.verdict is Verdict.FAIL
    assert judgement.message == (
        "effect duplicated: the provider saw 2 send_email (expected 1); "
        "send_email was done before the kill and again by resume"
    )


def test_resume_refusing_its_subcommand_is_an_error_not_a_crash():
    stderr = "usage: agent.py [-h] {start}\nagent.py: error: argument phase: invalid choice: 'resume'\n"
    judgement = judge_kill_mid_tool(proven(resume=Outcome(argv=["a", "resume"], returncode=2, stderr=stderr)))
    assert judgement.verdict is Verdict.ERROR and "does COMMAND accept the `resume` argument?" in judgement.message


def test_a_faulted_start_that_never_calls_after_a_clean_run_that_did_hints_at_state_outside_the_workdir():
    ev = proven(start=Outcome(argv=["a", "start"], returncode=0), proof=None, calls=[])
    judgement = prove_kill(ev)
    assert judgement.verdict is Verdict.ERROR
    assert "is the agent's state kept outside PLUGPULL_WORKDIR?" in judgement.message


# --sibling: a kill not beside the asked-for sibling state is ERROR, never judged.


def sibling_call(**changes) -> dict:
    call = {"seq": 2, "phase": "start", "name": "email", "key": None, "pid": 100, "group": 100}
    call.update({"recorded": True, "held_at": None, "answered": True}, **changes)
    return call


def with_sibling(state="finished", ready=True, call=None, open_=False, **changes):
    ev = proven(**{"counts": {"charge": 1, "email": 1}, "held_name": "charge", **changes})
    ev.clean = replace(ev.clean, counts={"charge": 1, "email": 1})
    call = sibling_call() if call is None else call
    ev.sibling_spec = f"email:{state}"
    ev.sibling = {"name": "email", "state": state, "ready": ready, "call": call, "open": open_}
    return ev


def test_a_kill_beside_a_finished_sibling_is_judged_on_the_effects():
    assert judge_kill_mid_tool(with_sibling()).verdict is Verdict.PASS


def test_a_kill_beside_a_held_open_sibling_is_judged_on_the_effects():
    call = sibling_call(held_at="after-effect", answered=False)
    assert judge_kill_mid_tool(with_sibling("running", call=call, open_=True)).verdict is Verdict.PASS


def test_a_sibling_that_never_called_is_an_error_naming_it():
    ev = with_sibling()
    ev.sibling["call"] = None
    j = judge_kill_mid_tool(ev)
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("sibling email never called record_effect while charge was held")


def test_a_sibling_not_in_the_asked_state_at_the_kill_is_an_error():
    j = judge_kill_mid_tool(with_sibling("finished", ready=False, call=sibling_call(answered=False)))
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("sibling email was not yet answered, not finished, when the kill was sent")


def test_a_sibling_from_outside_the_killed_group_is_an_error():
    j = judge_kill_mid_tool(with_sibling(call=sibling_call(group=999)))
    assert j.verdict is Verdict.ERROR and "outside the killed group 100" in j.message


def test_a_running_sibling_whose_call_closed_before_the_kill_is_an_error():
    call = sibling_call(held_at="after-effect", answered=False)
    j = judge_kill_mid_tool(with_sibling("running", call=call, open_=False))
    assert (
        j.verdict is Verdict.ERROR
        and j.message == "sibling email's held call was no longer open when the kill was sent"
    )


def test_a_duplicated_finished_sibling_fails_as_done_before_the_kill_and_again():
    calls = [
        {"seq": 1, "phase": "start", "name": "charge", "key": "k", "pid": 100, "held_at": "after-effect"},
        sibling_call(),
        {"seq": 3, "phase": "resume", "name": "email", "key": None, "pid": 200, "recorded": True},
    ]
    j = judge_kill_mid_tool(with_sibling(counts={"charge": 1, "email": 2}, calls=calls))
    assert j.verdict is Verdict.FAIL
    assert j.message.endswith("email was done before the kill and again by resume")


# --save: a kill aimed at a background save is judged only if the save stood as asked.


def save_mark(edge="before", **changes) -> dict:
    mark = {"seq": 3, "phase": "start", "name": "checkpoint-save", "key": None, "pid": 100, "group": 100}
    mark.update({"recorded": False, "held_at": "withheld" if edge == "before" else None, "answered": False})
    mark.update({"kind": "mark", "edge": edge, "main_thread": False}, **changes)
    return mark


def with_save(state="withheld", n=2, mark=None, ready=True, open_=True, seen=None, **changes):
    ev = proven(**{"held_name": "charge", **changes})
    edge = "before" if state == "withheld" else "after"
    ev.save_specs = [f"checkpoint-save:{n}:{state}"]
    ev.saves = [
        {
            "name": "checkpoint-save",
            "n": n,
            "state": state,
            "ready": ready,
            "mark": save_mark(edge) if mark is None else mark,
            "open": open_ if state == "withheld" else False,
            "seen": n if seen is None else seen,
        }
    ]
    return ev


def test_a_kill_while_the_save_is_withheld_is_judged_on_the_effects():
    assert judge_kill_mid_tool(with_save()).verdict is Verdict.PASS
    j = judge_kill_mid_tool(with_save(counts={"charge": 2}))
    assert j.verdict is Verdict.FAIL and j.message.startswith("effect duplicated")


def test_a_kill_after_the_save_landed_is_judged_on_the_effects():
    assert judge_kill_mid_tool(with_save("landed", n=3)).verdict is Verdict.PASS


def test_a_withheld_save_that_had_not_begun_at_the_kill_is_an_error_never_a_verdict():
    ev = with_save(counts={"charge": 2}, seen=1)
    ev.saves[0].update(mark=None, ready=False, open=False)
    j = judge_kill_mid_tool(ev)
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith(
        "checkpoint-save 2 was not withheld at the kill: its save had not begun while charge was held "
        "(1 'checkpoint-save' save(s) begun within 5s"
    )


def test_a_withheld_save_no_longer_held_at_the_kill_is_an_error():
    j = judge_kill_mid_tool(with_save(open_=False, ready=False))
    assert j.verdict is Verdict.ERROR
    assert j.message == "checkpoint-save 2's withheld save was no longer held when the kill was sent"


def test_a_save_that_had_not_landed_at_the_kill_is_an_error_never_a_pass():
    ev = with_save("landed", n=3, seen=2)
    ev.saves[0].update(mark=None, ready=False)
    j = judge_kill_mid_tool(ev)
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("checkpoint-save 3 had not landed when the kill was sent (2 of 3")


def test_a_save_marked_outside_the_killed_group_is_an_error():
    j = judge_kill_mid_tool(with_save(mark=save_mark(group=999)))
    assert j.verdict is Verdict.ERROR and "outside the killed group 100" in j.message


def test_a_save_asked_for_but_not_recorded_is_an_error():
    ev = with_save()
    ev.saves = []
    j = judge_kill_mid_tool(ev)
    assert j.verdict is Verdict.ERROR and j.message == "--save checkpoint-save:2:withheld was not recorded at the kill"


def test_a_save_withheld_on_the_main_thread_names_why_the_run_never_reached_the_tool():
    ev = with_save(mark=save_mark(main_thread=True), proof=None, calls=[], resume=None)
    ev.start = Outcome(argv=["a", "start"], returncode=-signal.SIGKILL, timed_out=True)
    j = judge_kill_mid_tool(ev)
    assert j.verdict is Verdict.ERROR
    assert j.message == (
        "start did not reach the tool within 5s (killed); checkpoint-save 2 was withheld on the process's main "
        "thread, which held up the run (a save the run waits for cannot be withheld)"
    )


def test_a_save_withheld_on_a_background_thread_that_the_run_waits_for_says_so():
    # LangGraph's durability="sync": the checkpoint is written on its executor thread and the main loop waits for it.
    ev = with_save(mark=save_mark(main_thread=False), proof=None, calls=[], resume=None)
    ev.start = Outcome(argv=["a", "start"], returncode=-signal.SIGKILL, timed_out=True)
    j = judge_kill_mid_tool(ev)
    assert j.verdict is Verdict.ERROR
    assert j.message == (
        "start did not reach the tool within 5s (killed); checkpoint-save 2 was withheld on a background thread and "
        "the run did not go on without it (a save the run waits for cannot be withheld)"
    )


def test_without_saves_asked_for_nothing_is_proven_about_them():
    assert prove_saves(proven()) is None


def finished(resume: Outcome, results=(), effects=None, golden=({"charge": "done"},)) -> KillEvidence:
    """Proven evidence whose clean run was followed by ``resume`` on its finished state."""
    run = replace(
        clean(),
        results=list(golden),
        finished_resume=resume,
        finished_results=list(results),
        finished_effects=effects or {},
    )
    return proven(clean=run, golden=list(golden), resumed=list(golden))


def test_a_resume_that_is_a_no_op_on_a_finished_run_lets_the_kill_be_judged():
    ev = finished(Outcome(argv=["a", "resume"], returncode=0), results=[{"charge": "done"}])
    assert judge_kill_mid_tool(ev).verdict is Verdict.PASS


@pytest.mark.parametrize(
    "resume, results, effects, says",
    [
        (
            Outcome(argv=["a", "resume"], returncode=2, stderr="python: can't open file '/x/agent.py': [Errno 2]\n"),
            [{"charge": "done"}],
            None,
            "exit code 2: python: can't open file '/x/agent.py': [Errno 2]",
        ),
        (
            Outcome(argv=["a", "resume"], returncode=0),
            [],
            None,
            "it exited 0 without a result (start's clean run reported one)",
        ),
        (Outcome(argv=["a", "resume"], timed_out=True, returncode=-9), [], None, "it hung (killed)"),
        (Outcome(argv=["a", "resume"], spawn_error="No such file"), [], None, "it could not start: No such file"),
    ],
)
def test_a_resume_that_does_not_work_on_a_finished_run_makes_the_line_an_error(resume, results, effects, says):
    j = judge_kill_mid_tool(finished(resume, results, effects))
    assert j.verdict is Verdict.ERROR
    assert j.message == f"resume does not work even on a finished run: {says}"
    assert j.show == "clean-resume"


def test_a_finished_run_without_a_result_needs_none_from_its_resume():
    ev = finished(Outcome(argv=["a", "resume"], returncode=0), golden=())
    assert check_clean_run(ev) is None


def test_a_clean_run_that_already_duplicates_an_effect_fails_without_any_fault():
    # The clean run (no kill) breaks what every line checks, each effect exactly once: a FAIL, no kill needed.
    j = judge_kill_mid_tool(proven(clean=clean(counts={"charge": 2})))
    assert (j.verdict, j.without_fault, j.show) == (Verdict.FAIL, True, "clean")
    assert j.message.startswith(
        "without any fault: effect duplicated: a clean run (no kill) already recorded 2 charge (expected 1)"
    )


def test_a_resume_that_makes_new_effects_on_a_finished_run_fails_without_any_fault():
    j = judge_kill_mid_tool(
        finished(
            Outcome(argv=["a", "resume"], returncode=0, stderr="charging again\n"), [{"charge": "done"}], {"charge": 1}
        )
    )
    assert (j.verdict, j.without_fault, j.show) == (Verdict.FAIL, True, "clean-resume")
    assert j.message == (
        "without any fault: effect duplicated: resume on the finished clean run (no kill) made new effects: "
        "1 charge: charging again"
    )


def test_an_approval_agents_clean_approval_that_pauses_again_fails_without_any_fault():
    # every-boundary and power-loss run an approval agent's approve as the clean run (after its start).
    paused = proven(clean=replace(clean(returncode=PAUSED_AGAIN_EXIT, counts={}), phase="approve"))
    j = judge_kill_mid_tool(paused)
    assert (j.verdict, j.without_fault) == (Verdict.FAIL, True)
    assert j.message == (
        "without any fault: a clean approval (no kill): effect lost: the run paused again instead of running the "
        "approved tool (approve exited 5); the provider saw no effect"
    )
    # Exit 5 means "paused again" for approve only: a start that exits 5 crashed.
    assert judge_kill_mid_tool(proven(clean=clean(returncode=PAUSED_AGAIN_EXIT))).verdict is Verdict.ERROR


def test_a_recover_that_pauses_again_loses_the_approved_tool():
    ev = replace(proven(resume=Outcome(argv=["a", "recover"], returncode=PAUSED_AGAIN_EXIT)), recovery="recover")
    ev = replace(ev, counts={"charge": 0})
    j = judge_kill_mid_tool(ev)
    assert (j.verdict, j.show) == (Verdict.FAIL, "resume")
    assert j.message == (
        "effect lost: the run paused again instead of running the approved tool (recover exited 5); "
        "the provider saw 0 charge (expected 1)"
    )
    # A resume (not an approval agent's recover) that exits 5 crashed.
    crashed = judge_kill_mid_tool(replace(ev, recovery="resume"))
    assert crashed.message.startswith("resume crashed (exit code 5)")
