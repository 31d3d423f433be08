"""plugpull.aim: where a fault lands, as one value, and the flags that give it (pure: no process runs here)."""

from __future__ import annotations

import re

import pytest

from plugpull.aim import FLAGS, Aim, from_args
from plugpull.cli import build_parser
from plugpull.errors import UsageError
from plugpull.scenarios.faults import BoundaryKill, HeldCallKill, PowerCut
from plugpull.scenarios.registry import REGISTRY


def parsed(*argv: str):
    return build_parser().parse_args(list(argv))


def test_a_variants_own_aim_gives_way_to_the_runs_field_by_field():
    variant = Aim(hold=("refund", 1), sibling=("send_email", "finished"), saves=(("checkpoint-save", 2, "withheld"),))
    assert Aim().over(variant) == variant
    # --hold replaces the variant's held call and its sibling together; --save its saves.
    run = Aim(hold=("charge", 2))
    assert run.over(variant) == Aim(hold=("charge", 2), saves=variant.saves)
    saved = Aim(saves=(("plan-save", 1, "landed"),))
    assert saved.over(variant) == Aim(hold=variant.hold, sibling=variant.sibling, saves=saved.saves)


def test_the_flags_give_the_aim_each_parsed_once():
    aim = from_args(parsed("--hold", "refund:2", "--hold", "refund:2", "--sibling", "send_email:running"))
    assert (aim.hold, aim.holds, aim.sibling) == (("refund", 2), (("refund", 2),), ("send_email", "running"))
    assert aim.every_effect and aim.specs() == {
        "hold": "refund:2",
        "sibling_spec": "send_email:running",
        "save_specs": [],
    }
    many = from_args(parsed("--hold", "a", "--hold", "b:3"))
    assert (many.hold, many.holds) == (None, (("a", 1), ("b", 3)))
    assert from_args(parsed("--first-effect")).every_effect is False


def test_random_kills_draw_a_seed_that_replays_them_and_a_seed_alone_is_refused():
    assert from_args(parsed("--random-kills", "3"), draw_seed=lambda: 41).seed == 41
    assert from_args(parsed("--random-kills", "3", "--seed", "0")).seed == 0  # --seed 0 is a seed
    with pytest.raises(UsageError, match=r"^--seed needs --random-kills N"):
        from_args(parsed("--seed", "4"))
    with pytest.raises(UsageError, match=r"^--random-kills must be a whole number >= 0$"):
        from_args(parsed("--random-kills", "-1"))


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--hold", "refund:0"), "--hold 'refund:0': expected NAME or NAME:N"),
        (("--sibling", "send_email:finished"), "--sibling needs --hold NAME"),
        (("--hold", "refund", "--sibling", "refund:finished"), "the sibling must be another effect"),
        (("--hold", "a", "--hold", "b", "--sibling", "c:finished"), "--sibling needs exactly one --hold"),
        (("--hold", "a", "--first-effect"), "--first-effect and --hold both choose the held call"),
        (("--save", "checkpoint-save:2:lost"), "--save 'checkpoint-save:2:lost': expected NAME:N:STATE"),
    ],
)
def test_bad_aims_are_one_line_usage_errors(argv, says):
    with pytest.raises(UsageError, match=re.escape(says)) as refused:
        from_args(parsed(*argv))
    assert "\n" not in str(refused.value)


def test_every_flag_sets_an_aim_field_and_every_field_has_a_flag_but_holds_which_repeated_holds_give():
    fields = {f.field for f in FLAGS}
    assert fields == set(Aim.__dataclass_fields__) - {"holds"}
    assert len({f.flag for f in FLAGS}) == len(FLAGS)


def test_a_held_call_kill_is_aimed_by_the_runs_aim_and_power_loss_composes_a_kill_and_a_cut():
    aim = Aim(hold=("refund", 1), sibling=("send_email", "finished"), boundaries=("model-call 1",))
    assert HeldCallKill.aimed("after-effect", aim) == HeldCallKill(
        "after-effect", hold=("refund", 1), sibling=("send_email", "finished")
    )
    assert REGISTRY["power-loss"].faults == (HeldCallKill, BoundaryKill, PowerCut)
    # --hold applies where a fault holds a call: the scenarios that declared holds_calls by hand before faults did.
    assert {s.name for s in REGISTRY if s.holds_calls} == {
        "kill-mid-tool",
        "resume-after-approval",
        "resume-after-upgrade",
        "power-loss",
        "tool-error",
    }
