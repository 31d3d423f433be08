"""Boundaries read from a clean run's trace, on hand-built traces."""

from plugpull.boundaries import aimed_kill, landing, selected, steps_of


def mark(seq, name, edge, t=0.0):
    return {"seq": seq, "kind": "mark", "name": name, "edge": edge, "t": t}


def effect(seq, name, t=0.0):
    return {"seq": seq, "kind": "effect", "name": name, "edge": None, "t": t}


TRACE = [
    mark(1, "model-call", "before", 0.1),
    mark(2, "model-call", "after", 0.2),
    effect(3, "refund", 0.3),
    mark(4, "checkpoint-save", "before", 0.4),
    mark(5, "checkpoint-save", "after", 0.5),
    mark(6, "model-call", "before", 0.6),
    mark(7, "model-call", "after", 0.7),
]


def test_each_effect_call_and_each_marked_step_is_one_boundary_named_by_its_occurrence():
    labels = [s.label for s in steps_of(TRACE)]
    assert labels == ["model-call 1", "effect refund 1", "checkpoint-save 1", "model-call 2"]
    assert [s.index for s in steps_of(TRACE)] == [1, 2, 3, 4]


def test_a_step_nested_in_another_is_a_boundary_of_its_own():
    nested = [mark(1, "node", "before"), mark(2, "model-call", "before"), mark(3, "model-call", "after")]
    nested.append(mark(4, "node", "after"))
    assert [s.label for s in steps_of(nested)] == ["node 1", "model-call 1"]


def test_an_after_without_a_before_is_still_a_boundary():
    assert [s.label for s in steps_of([mark(1, "save", "after")])] == ["save 1"]


def test_boundary_selectors_are_places_labels_or_names_and_unmatched_ones_are_returned():
    steps = steps_of(TRACE)
    picked, unmatched = selected(steps, ["2", "model-call", "nothing"])
    assert [s.label for s in picked] == ["model-call 1", "effect refund 1", "model-call 2"]
    assert unmatched == ["nothing"]
    assert selected(steps, [])[0] == steps
    assert [s.label for s in selected(steps, ["effect"])[0]] == ["effect refund 1"]


def test_a_kill_moment_lands_between_two_calls_before_any_or_after_the_last():
    assert landing(TRACE, 0.05) == "before any boundary"
    assert landing(TRACE, 0.35) == "between call of effect refund 1 and before checkpoint-save 1"
    assert landing(TRACE, 0.9) == "after the last boundary (after model-call 2)"
    assert landing(TRACE, None) == "after the run ended"


def test_a_killed_run_never_makes_its_next_call_so_the_clean_run_names_it():
    killed = TRACE[:3]  # the run got as far as the refund
    assert landing(killed, 0.35) == "after the last boundary (call of effect refund 1)"
    assert landing(killed, 0.35, TRACE) == "between call of effect refund 1 and before checkpoint-save 1"


def test_a_random_kill_is_replayed_alone_by_the_aimed_kill_that_leaves_the_run_the_same_way():
    # Right after an effect call the provider has recorded it: that effect's "after".
    assert aimed_kill(TRACE, 0.35) == ("effect refund 1", "after")
    # Between two steps, or inside one (nothing of it left behind): the next step's "before".
    assert aimed_kill(TRACE, 0.25) == ("effect refund 1", "before")
    assert aimed_kill(TRACE, 0.45) == ("checkpoint-save 1", "before")
    assert aimed_kill(TRACE, 0.55) == ("model-call 2", "before")
    # After the last boundary: that step's own side.
    assert aimed_kill(TRACE, 0.9) == ("model-call 2", "after")
    # Nothing killed, or killed before the run reached any boundary: nothing to aim at.
    assert aimed_kill(TRACE, None) is None
    assert aimed_kill(TRACE, 0.05) is None


def test_a_killed_runs_next_step_is_named_from_the_clean_run_for_the_aimed_kill():
    killed = TRACE[:2]  # the run got as far as the first model call
    assert aimed_kill(killed, 0.25, TRACE) == ("effect refund 1", "before")
