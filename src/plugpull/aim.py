"""Where a fault lands: the :class:`Aim` value, and the command-line options that give it.

A fault (a SIGKILL of the process group, a power cut after a proven kill, a lost store write, a tool's raised
call) is one thing; where it lands is another, given the same way whatever the fault: the effect call the
provider holds (``--hold``), a sibling call of the same model turn and its state (``--sibling``), how the
agent's marked saves stand at the kill (``--save``), the boundaries of the clean run to kill at (``--boundary``)
or random moments between them (``--random-kills``, ``--seed``). A run's options carry one Aim
(``Settings.aim``) and a built-in variant may carry its own (``Target.aim``: the sibling targets hold the refund
beside an answered email); the run's wins where it gives one (:meth:`Aim.over`).

Each scenario says which of these fields it reads (``Scenario.options``) and the command line refuses one no
selected scenario reads; the flags, their parsing and the checks between them are here, so the command line
loops over :data:`FLAGS` and names none of them. Like Jepsen's nemesis and generator: the fault is what happens,
the aim is when and where.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plugpull.errors import UsageError


@dataclass(frozen=True, slots=True)
class Aim:
    """Where a run's fault lands; every field empty means each scenario's own default (the first effect call, ...)."""

    hold: tuple[str, int] | None = None  # --hold NAME:N: the call a kill point holds; None: the first call
    # --hold given more than once: one line per held call and point (the union); () none
    holds: tuple[tuple[str, int], ...] = ()
    # Without --hold: kill at every effect call of the clean run (the CLI's default) or, False (--first-effect, and
    # the library's default so the findings' runs stay as recorded), at the first
    every_effect: bool = False
    sibling: tuple[str, str] | None = None  # --sibling NAME:finished|running (provider.SIBLING_STATES)
    # --save NAME:N:withheld|landed (repeatable, provider.SAVE_STATES): how saves the target marks stand at the kill
    saves: tuple[tuple[str, int, str], ...] = ()
    boundaries: tuple[str, ...] = ()  # --boundary: places, labels or names; () every boundary
    random_kills: int = 0  # --random-kills N: N kills at random moments of the boundary window
    seed: int | None = None  # --seed S: the random kills' draws (None: unseeded, not replayable)

    def over(self, variant: Aim) -> Aim:
        """This aim, with a built-in variant's own held call and sibling where it holds none, and the variant's saves
        where it gives none: ``--hold``/``--sibling`` replace the variant's pair, ``--save`` its saves."""
        aim = self
        if aim.hold is None and variant.hold is not None:
            aim = dataclasses.replace(aim, hold=variant.hold, sibling=variant.sibling)
        if not aim.saves and variant.saves:
            aim = dataclasses.replace(aim, saves=variant.saves)
        return aim

    def specs(self) -> dict[str, Any]:
        """The held call, sibling and saves as a line's evidence spells them (``refund:1``)."""
        return {
            "hold": None if self.hold is None else "{}:{}".format(*self.hold),
            "sibling_spec": None if self.sibling is None else "{}:{}".format(*self.sibling),
            "save_specs": ["{}:{}:{}".format(*save) for save in self.saves],
        }


#: The Aim fields scenarios may read (``Scenario.options``; ``hold`` through ``holds_calls``).
FIELDS = tuple(f.name for f in dataclasses.fields(Aim))


@dataclass(frozen=True)
class Flag:
    """One command-line option that sets an Aim field. ``help`` may name ``{hold}``, ``{holds}``, ... : the
    scenarios that read that field, filled in by the command line from the registry."""

    field: str  # the Aim field (``every_effect`` for --first-effect)
    flag: str
    dest: str  # the argparse attribute
    help: str
    metavar: str | None = None
    repeat: bool = False  # repeatable: a list
    kind: type | None = str  # None: a switch
    least: int | None = None  # a whole number at least this

    def given(self, args: argparse.Namespace) -> bool:
        value = getattr(args, self.dest, None)
        return value is not None if self.field == "seed" else bool(value)  # --seed 0 is a seed


FLAGS = (
    Flag(
        "hold",
        "--hold",
        "hold",
        "{hold}: the effect call a kill point holds: the N-th call of effect NAME (default N=1); {holds}: repeatable, "
        "one line per call and point; without it, {every_effect} holds each effect call of the clean run in turn, "
        "the others the first call of any effect",
        metavar="NAME[:N]",
        repeat=True,
    ),
    Flag(
        "every_effect",
        "--first-effect",
        "first_effect",
        "{every_effect}: without --hold, kill at the first effect call only (quick), not at every effect call of the "
        "clean run",
        kind=None,
    ),
    Flag(
        "sibling",
        "--sibling",
        "sibling",
        "{sibling}, with --hold: another tool call of the same model turn, and its state when the held call is "
        "killed: NAME:finished (its effect call answered) or NAME:running (its effect call held too, so both are in "
        "flight)",
        metavar="NAME:STATE",
    ),
    Flag(
        "saves",
        "--save",
        "save",
        "{saves} (repeatable): a save the agent marks with plugpull.boundary(NAME), and how it must stand when the "
        "held call is killed: NAME:N:withheld (its N-th save is held back until the kill, so it never happens) or "
        "NAME:N:landed (the kill waits until N such saves finished); e.g. checkpoint-save:2:withheld",
        metavar="NAME:N:STATE",
        repeat=True,
    ),
    Flag(
        "boundaries",
        "--boundary",
        "boundary",
        "{boundaries}: the boundaries to kill at (repeatable): a place in the clean run's list (7), a label "
        "('model-call 2', 'effect refund 1'), a name (model-call) or 'effect'; default: every boundary",
        metavar="WHICH",
        repeat=True,
    ),
    Flag(
        "random_kills",
        "--random-kills",
        "random_kills",
        "{random_kills}: N kills at uniformly random moments between the clean run's first and last boundary, with "
        "where each landed (alone, instead of the aimed kills; with --point before/after, as well); prints the seed "
        "that replays them",
        metavar="N",
        kind=int,
        least=0,
    ),
    Flag(
        "seed",
        "--seed",
        "seed",
        "{seed}, with --random-kills: draw the random kills from seed S (a whole number >= 0), to replay the kills "
        "of an earlier run; default: a new seed, printed",
        metavar="S",
        kind=int,
        least=0,
    ),
)


def flag_of(field: str) -> Flag:
    return next(f for f in FLAGS if f.field == field)


def add_options(parser: argparse.ArgumentParser, read_by: Callable[[str], str]) -> None:
    """Add every Flag to ``parser``, its help naming the scenarios that read each field (``read_by(field)``)."""
    readers = {name: read_by(name) for name in FIELDS}
    for f in FLAGS:
        shown = f.help.format(**readers)
        if f.kind is None:
            parser.add_argument(f.flag, dest=f.dest, action="store_true", help=shown)
        elif f.repeat:
            parser.add_argument(f.flag, dest=f.dest, action="append", default=[], metavar=f.metavar, help=shown)
        else:
            parser.add_argument(f.flag, dest=f.dest, type=f.kind, default=None, metavar=f.metavar, help=shown)


def given(args: argparse.Namespace) -> list[Flag]:
    """The Flags given on a command line, in :data:`FLAGS` order."""
    return [f for f in FLAGS if f.given(args)]


def from_args(args: argparse.Namespace, *, draw_seed: Callable[[], int] | None = None) -> Aim:
    """The Aim a command line gives, each value parsed and the values checked against each other (one-line
    :class:`~plugpull.errors.UsageError`). ``--random-kills`` without ``--seed`` draws one (``draw_seed``), so the
    kills can be replayed. The checks that depend on the selected scenarios (a repeated --hold) are the caller's."""
    check_ranges(args)
    holds = held_calls(args)
    hold = holds[0] if len(holds) == 1 else None
    random_kills = getattr(args, "random_kills", None) or 0
    seed = getattr(args, "seed", None)
    if seed is not None and not random_kills:
        raise UsageError("--seed needs --random-kills N: it seeds the random kills")
    if random_kills and seed is None:
        seed = draw_seed() if draw_seed is not None else _drawn_seed()
    sibling = getattr(args, "sibling", None)
    return Aim(
        hold=hold,
        holds=holds,
        every_effect=not getattr(args, "first_effect", False),
        sibling=None if sibling is None else parse_sibling(sibling, hold),
        saves=tuple(parse_save(spec) for spec in getattr(args, "save", None) or []),
        boundaries=tuple(getattr(args, "boundary", None) or ()),
        random_kills=random_kills,
        seed=seed,
    )


def check_ranges(args: argparse.Namespace) -> None:
    """The whole-number flags are at least their least (``--random-kills -1`` is bad input)."""
    for f in FLAGS:
        value = getattr(args, f.dest, None)
        if f.least is not None and value is not None and value < f.least:
            raise UsageError(f"{f.flag} must be a whole number >= {f.least}")


def held_calls(args: argparse.Namespace) -> tuple[tuple[str, int], ...]:
    """The calls ``--hold`` names, each once, in the order given; checked against ``--sibling``/``--first-effect``."""
    holds = tuple(dict.fromkeys(parse_hold(spec) for spec in getattr(args, "hold", None) or []))
    if len(holds) > 1 and getattr(args, "sibling", None) is not None:
        raise UsageError("--sibling needs exactly one --hold: the call killed beside the sibling")
    if holds and getattr(args, "first_effect", False):
        raise UsageError("--first-effect and --hold both choose the held call: give one")
    return holds


def _drawn_seed() -> int:
    import secrets

    return secrets.randbelow(1_000_000)  # short enough to type back as --seed


def parse_hold(spec: str) -> tuple[str, int]:
    """``NAME[:N]`` -> (NAME, N): hold the N-th call of effect NAME (N counts from 1)."""
    name, sep, nth = spec.rpartition(":")
    if not sep:
        name, nth = spec, "1"
    if not name or not nth.isdigit() or int(nth) < 1:
        raise UsageError(f"--hold {spec!r}: expected NAME or NAME:N with N a whole number >= 1, e.g. charge_card:2")
    return name, int(nth)


def parse_sibling(spec: str, hold: tuple[str, int] | None) -> tuple[str, str]:
    """``NAME:STATE`` -> (NAME, STATE), STATE one of provider.SIBLING_STATES; needs a --hold of another name."""
    from plugpull.provider import SIBLING_STATES

    name, sep, state = spec.rpartition(":")
    if not sep or not name or state not in SIBLING_STATES:
        raise UsageError(
            f"--sibling {spec!r}: expected NAME:STATE with STATE one of {', '.join(SIBLING_STATES)}, "
            "e.g. send_email:finished"
        )
    if hold is None:
        raise UsageError("--sibling needs --hold NAME: the call the kill lands in, beside the sibling")
    if name == hold[0]:
        raise UsageError(f"--sibling {spec!r}: the sibling must be another effect than --hold {hold[0]}")
    return name, state


def parse_save(spec: str) -> tuple[str, int, str]:
    """``NAME:N:STATE`` -> (NAME, N, STATE), STATE one of provider.SAVE_STATES, N a whole number >= 1."""
    from plugpull.provider import SAVE_STATES

    rest, _, state = spec.rpartition(":")
    name, _, nth = rest.rpartition(":")
    if not name or not nth.isdigit() or int(nth) < 1 or state not in SAVE_STATES:
        raise UsageError(
            f"--save {spec!r}: expected NAME:N:STATE with N a whole number >= 1 and STATE one of "
            f"{', '.join(SAVE_STATES)}, e.g. checkpoint-save:2:withheld"
        )
    return name, int(nth), state
