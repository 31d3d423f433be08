import pytest

from plugpull.provider import Provider


def test_same_name_and_key_is_one_effect():
    p = Provider()
    p.receive("charge", "k1", pid=1)
    p.receive("charge", "k1", pid=2)
    assert p.counts() == {"charge": 1}


def test_same_key_under_two_names_is_two_effects():
    p = Provider()
    p.receive("charge", "k1", pid=1)
    p.receive("refund", "k1", pid=1)
    assert p.counts() == {"charge": 1, "refund": 1}


def test_no_key_is_a_new_effect_every_call():
    p = Provider()
    for _ in range(3):
        p.receive("charge", None, pid=1)
    assert p.counts() == {"charge": 3}


def test_before_effect_holds_the_call_without_recording_it():
    p = Provider()
    p.arm("before-effect")
    call, hold = p.receive("charge", "k", pid=7)
    assert hold and call.held_at == "before-effect" and not call.recorded
    assert p.counts() == {"charge": 0}
    assert p.held is call and p.held_event.is_set()


def test_after_effect_records_the_effect_and_holds_the_reply():
    p = Provider()
    p.arm("after-effect")
    call, hold = p.receive("charge", None, pid=7)
    assert hold and call.recorded
    assert p.counts() == {"charge": 1}


def test_only_the_first_call_after_arming_is_held():
    p = Provider()
    p.arm("before-effect")
    p.receive("charge", None, pid=7)
    _, hold = p.receive("charge", None, pid=7)
    assert not hold
    assert p.counts() == {"charge": 1}


def test_a_repeated_key_is_answered_as_not_new():
    p = Provider()
    first, _ = p.receive("charge", "k", pid=1)
    again, _ = p.receive("charge", "k", pid=1)
    assert p.answer(first)["new"] is True
    assert p.answer(again) == {"name": "charge", "key": "k", "new": False, "count": 1}


def test_an_unknown_point_is_refused():
    with pytest.raises(ValueError, match="unknown kill point"):
        Provider().arm("mid-effect")


def test_a_hold_skips_other_names_and_holds_the_nth_call_of_its_name():
    p = Provider()
    p.arm("before-effect", hold=("charge_card", 2))
    email, held_email = p.receive("send_email", None, pid=1)
    first, held_first = p.receive("charge_card", "a", pid=1)
    second, held_second = p.receive("charge_card", "b", pid=1)
    assert (held_email, held_first, held_second) == (False, False, True)
    assert second.held_at == "before-effect" and p.held is second
    # Calls the hold passes over are answered and recorded as usual; the held one is not recorded.
    assert (email.recorded, first.recorded, second.recorded) == (True, True, False)
    assert p.counts() == {"send_email": 1, "charge_card": 1}


def test_a_hold_that_no_call_matches_holds_nothing():
    p = Provider()
    p.arm("after-effect", hold=("refund", 1))
    _, hold = p.receive("charge", None, pid=1)
    assert not hold and p.held is None and not p.held_event.is_set()


def test_a_finished_sibling_is_answered_and_ready_once_answered():
    p = Provider()
    p.arm("after-effect", hold=("charge", 1), sibling=("email", "finished"))
    _, held = p.receive("charge", "k", pid=7)
    assert held and not p.sibling_ready()
    call, hold = p.receive("email", None, pid=7)
    assert not hold and call.recorded and not p.sibling_ready()
    p.answer(call)
    assert p.sibling_ready() and p.held.name == "charge"


def test_a_running_sibling_is_held_at_the_point_even_when_it_calls_first():
    p = Provider()
    p.arm("before-effect", hold=("charge", 1), sibling=("email", "running"))
    call, hold = p.receive("email", None, pid=7)
    assert hold and call.held_at == "before-effect" and not call.recorded
    assert p.sibling_ready() and not p.held_event.is_set()
    _, held = p.receive("charge", "k", pid=7)
    assert held and p.held.name == "charge"
    assert p.counts() == {"email": 0, "charge": 0}


def test_only_the_siblings_first_call_is_taken():
    p = Provider()
    p.arm("after-effect", hold=("charge", 1), sibling=("email", "running"))
    p.receive("email", None, pid=7)
    _, hold = p.receive("email", None, pid=7)
    assert not hold


def test_a_sibling_needs_a_hold_of_another_name_and_a_known_state():
    p = Provider()
    for hold, sibling in [(None, ("email", "finished")), (("email", 1), ("email", "running")), (("c", 1), ("e", "x"))]:
        with pytest.raises(ValueError):
            p.arm("after-effect", hold=hold, sibling=sibling)


# --save: a save the target marks, withheld until the kill or waited for.


def test_a_withheld_save_holds_the_nth_before_mark_of_its_name_and_nothing_else():
    p = Provider()
    p.arm("after-effect", saves=(("checkpoint-save", 2, "withheld"),))
    first, hold = p.receive_mark("checkpoint-save", "before", pid=7)
    assert not hold and not p.saves_ready()
    _, hold = p.receive_mark("pending-writes", "before", pid=7)
    assert not hold
    p.receive_mark("checkpoint-save", "after", pid=7)
    second, hold = p.receive_mark("checkpoint-save", "before", pid=7)
    assert hold and second.held_at == "withheld" and p.saves_ready()
    assert p.held is None and not p.held_event.is_set()  # the kill still waits for the effect call


def test_a_withheld_save_is_no_longer_ready_once_its_connection_closed():
    p = Provider()
    p.arm("after-effect", saves=(("checkpoint-save", 1, "withheld"),))
    mark, _ = p.receive_mark("checkpoint-save", "before", pid=7)
    p.mark_closed(mark)
    assert not p.saves_ready()
    (save,) = p.saves_at_kill()
    assert save["ready"] is False and save["open"] is False and save["mark"]["held_at"] == "withheld"


def test_a_landed_save_is_ready_when_its_nth_after_mark_arrived():
    p = Provider()
    p.arm("after-effect", saves=(("checkpoint-save", 2, "landed"),))
    for edge in ("before", "after", "before"):
        _, hold = p.receive_mark("checkpoint-save", edge, pid=7)
        assert not hold
    assert not p.saves_ready()
    assert p.saves_at_kill()[0]["seen"] == 1
    p.receive_mark("checkpoint-save", "after", pid=7)
    assert p.saves_ready()
    (save,) = p.saves_at_kill()
    assert (save["name"], save["n"], save["state"], save["ready"], save["seen"]) == (
        "checkpoint-save",
        2,
        "landed",
        True,
        2,
    )


def test_every_asked_save_must_stand_as_asked():
    p = Provider()
    p.arm("after-effect", saves=(("checkpoint-save", 2, "withheld"), ("pending-writes", 1, "landed")))
    p.receive_mark("pending-writes", "before", pid=7)
    p.receive_mark("pending-writes", "after", pid=7)
    assert not p.saves_ready()
    p.receive_mark("checkpoint-save", "before", pid=7)
    p.receive_mark("checkpoint-save", "after", pid=7)
    _, hold = p.receive_mark("checkpoint-save", "before", pid=7)
    assert hold and p.saves_ready()


def test_disarming_withholds_nothing():
    p = Provider()
    p.arm("after-effect", saves=(("checkpoint-save", 1, "withheld"),))
    p.arm(None)
    _, hold = p.receive_mark("checkpoint-save", "before", pid=7)
    assert not hold and p.saves_ready() and p.saves_at_kill() == []


def test_a_save_needs_a_name_a_number_from_1_and_a_known_state():
    p = Provider()
    for save in [("", 1, "withheld"), ("checkpoint-save", 0, "landed"), ("checkpoint-save", 1, "written")]:
        with pytest.raises(ValueError):
            p.arm("after-effect", saves=(save,))
