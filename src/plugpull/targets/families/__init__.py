"""The built-in targets, one module per framework family, and what their declarations share.

A family module declares its framework once (``FAMILY``: the distribution its agents announce,
the import name a built-in needs, the extra that installs it), its built-in targets (``BUILT_INS``),
their variants and the upstream notes a FAIL line of theirs may carry, and, when the framework has
one, its resume-after-upgrade target (``UPGRADE``), and its stops of the tour bare ``plugpull`` runs (``TOUR``,
``BuiltIn.stop``). plugpull.targets.registry collects them.

Imported by the harness only: the agent scripts the built-ins run (plugpull.targets.<script>) import
none of this.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from plugpull import notes as n
from plugpull.aim import Aim
from plugpull.notes import Note
from plugpull.targets.target import BuiltIn, Target, python_module


@dataclass(frozen=True)
class Variant:
    """One variant of a built-in target: its options, in the order its label names them, and what else differs."""

    options: dict[str, Any] = field(default_factory=dict)
    args: tuple[str, ...] = ()  # the script's arguments before its flags (a positional variant name)
    notes: tuple[Note, ...] | None = None  # None: the built-in's notes
    hold: tuple[str, int] | None = None
    sibling: tuple[str, str] | None = None
    saves: tuple[tuple[str, int, str], ...] = ()
    sidecar: str | None = None  # the phase that starts a server the kill spares (Target.sidecar)


@dataclass(frozen=True)
class Family:
    """A framework, declared once for every built-in target that runs on it."""

    name: str  # the family's name: the key of its resume-after-upgrade target (registry.UPGRADES)
    framework: str  # distribution whose version its agents announce (Target.framework)
    module: str  # import name that must be present
    extra: str  # pip extra that installs it
    also: tuple[str, ...] = ()  # further import names its agents need (e.g. DBOS under Pydantic AI)
    programs: tuple[tuple[str, str], ...] = ()  # programs no pip extra installs, with how to (BuiltIn.programs)

    def built_in(
        self,
        name: str,
        script: str,
        variants: Iterable[Variant] = (Variant(),),
        *,
        flags: tuple[str, ...] = (),
        notes: tuple[Note, ...] = (),
        scenario: str = "kill-mid-tool",
        result_ignore: tuple[str, ...] = (),
        also: tuple[str, ...] = (),
        server: str | None = None,
    ) -> BuiltIn:
        """The built-in target ``name``: ``python -m plugpull.targets.<script>`` once per variant.

        Each option named in ``flags`` is passed to the script as ``--<option> <value>`` (an underscore
        in the name becomes a dash), after the variant's ``args``, so an option's value is written once.
        ``also`` adds import names this target needs beyond the family's (a database driver); ``server`` is the
        environment variable naming the server it keeps its state on (BuiltIn.server).
        """
        return BuiltIn(
            name=name,
            module=self.module,
            extra=self.extra,
            also=(*self.also, *also),
            programs=self.programs,
            server=server,
            variants=tuple(
                Target(
                    name=name,
                    argv=python_module(f"plugpull.targets.{script}", *v.args, *_flag_args(flags, v.options)),
                    framework=self.framework,
                    options=dict(v.options),
                    scenario=scenario,
                    notes=notes if v.notes is None else v.notes,
                    result_ignore=result_ignore,
                    aim=Aim(hold=v.hold, sibling=v.sibling, saves=v.saves),
                    sidecar=v.sidecar,
                )
                for v in variants
            ),
        )


def _flag_args(flags: tuple[str, ...], options: dict[str, Any]) -> tuple[str, ...]:
    return tuple(a for f in flags if f in options for a in (f"--{f.replace('_', '-')}", str(options[f])))


def refunded_again(text: str, url: str) -> Note:
    """A note for a resume that itself recorded a refund on top of one already there (a re-run tool).

    Only then: a resume that crashed or hung with 1 refund, or lost the refund, did not "refund again".
    """
    return Note(
        text=text,
        url=url,
        condition="refund recorded 2 or more times, and resume's own call recorded one of them",
        holds=lambda r: n.count(r, "refund") >= 2 and n.recorded_calls(r, "refund", "resume") >= 1,
    )


def recover_ran_it_again(text: str, url: str) -> Note:
    """A note for resume-after-approval's killed-after-effect: the killed approval recorded the refund,
    then recover ran the approved tool again."""
    return Note(
        text=text,
        url=url,
        condition="recover ran the approved tool and refund was recorded 2 or more times",
        holds=lambda r: n.recover_ran_the_tool(r) and n.count(r, "refund") >= 2,
    )
