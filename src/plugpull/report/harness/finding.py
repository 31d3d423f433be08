"""Findings: ``findings/<id>/finding.toml`` read into a :class:`Finding` with its pin sets.

A finding is one reproducible claim about an upstream framework: its notebook, default
parameters and the pin sets (locked requirements files) it runs against.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugpull.errors import FindingError
from plugpull.report.kernel.claims import Claim, ClaimError
from plugpull.report.kernel.claims import parse as parse_claims
from plugpull.report.kernel.record import JS_SUFFIXES

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomllib is 3.11+; tomli is the same parser, backported
    import tomli as tomllib  # type: ignore[no-redef]

FINDINGS_DIR = "findings"

# What one `report check` or `report regenerate` has read, by (what, root): the pages, the summaries' matrices and
# the sweeps' tables each load every finding.toml and every record again (20 times each: 36 s of a 40 s check of
# the committed records), and those commands write no finding.toml and no record (regenerate writes pages only).
# None outside read_once().
_READ: dict[tuple[str, Path], Any] | None = None


@contextmanager
def read_once() -> Iterator[None]:
    """Within this block, load_all and history.valid_records read each root once and give the same answer
    again: for commands that write no finding.toml and no record (check, regenerate), never around one that does."""
    global _READ
    outer, _READ = _READ, {} if _READ is None else _READ
    try:
        yield
    finally:
        _READ = outer


def once(what: str, root: Path, read: Callable[[], Any]) -> Any:
    """``read()``, or inside read_once() the answer it gave for (what, root) earlier in the block."""
    if _READ is None:
        return read()
    key = (what, root.resolve())
    if key not in _READ:
        _READ[key] = read()
    return _READ[key]


# A locked requirement: "name==version" (optionally "; marker"), then its hashes.
_PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?==[^\s;\\]+")


@dataclass(frozen=True)
class PinSet:
    name: str
    requirements: Path  # the locked requirements file (uv pip compile --generate-hashes)
    # An upgrade pair (resume-after-upgrade): the lock of the release the run starts on (A); the
    # kernel, and the resume, run in ``requirements`` (B). None for an ordinary pin set.
    start: Path | None = None
    # An npm pin set (a JavaScript framework's release): the folder of its package.json and package-lock.json
    # (report/harness/npm.py); ``requirements`` is then the kernel's own Python environment. None for PyPI.
    npm: Path | None = None

    def locks(self) -> list[Path]:
        """Every lock file this pin set needs an environment for: A's (if a pair), then the kernel's."""
        return [*([self.start] if self.start is not None else []), self.requirements]

    def check_locked(self) -> None:
        """Every requirement is pinned with ``==`` and carries a hash, as ``--require-hashes`` needs."""
        for lock in self.locks():
            self._check_lock(lock)
        if self.npm is not None:
            from plugpull.report.harness import npm

            npm.check_locked(self.npm, f"pin set {self.name!r}")

    def _check_lock(self, lock: Path) -> None:
        if not lock.is_file():
            raise FindingError(f"pin set {self.name!r}: lock file {lock} does not exist")
        text = lock.read_text()
        entries = [e for e in re.split(r"\n(?=\S)", text) if e.strip() and not e.lstrip().startswith(("#", "-"))]
        if not entries:
            raise FindingError(f"pin set {self.name!r}: {lock} holds no requirements")
        for entry in entries:
            first = entry.splitlines()[0].strip()
            if not _PINNED.match(first) or "--hash=" not in entry:
                raise FindingError(
                    f"pin set {self.name!r}: {lock}: {first!r} is not pinned "
                    "with == and a --hash (regenerate it with uv pip compile --generate-hashes)"
                )


@dataclass(frozen=True)
class Twin:
    """finding.toml's ``[twin]``: the lines of ``finding`` (those of ``framework``) that this finding's lines mirror.
    A twin line matches one of this finding's when it has the same point and every option of it; ``options`` picks
    among the twin's own extra variants where it has that option (``model_step = "raced"``: the unaimed one)."""

    finding: str
    framework: str
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    claim: str
    notebook: Path
    framework: str  # the distribution whose version the results are about (the first, with several)
    target: str  # the built-in target the notebook breaks (the first, with several); "agent" for a user's agent
    links: dict[str, Any]
    parameters: dict[str, Any]
    pins: tuple[PinSet, ...]
    root: Path  # the repository root
    directory: Path = field(default=Path())
    # A finding about several frameworks lists them all (finding.toml: framework = [...], target = [...]);
    # each pin set then installs one or more of them and the notebook runs the targets it can import.
    frameworks: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    # What the finding expects per line and per pin set or version range (report/kernel/claims.py).
    claims: tuple[Claim, ...] = ()
    # A user's agent as the target (finding.toml ``agent = "agent.py --flag"``, relative to the finding's folder)
    # and the scenario it runs under (``scenario = "resume-after-approval"``); None for a built-in target.
    agent: str | None = None
    # finding.toml's ``agent`` as a table of variants (``"key=none" = "agent.mjs no-key"``): each command is a line
    # of its own with those options, as a built-in's variants are. Empty for one command; ``agent`` is then the first.
    agent_variants: tuple[tuple[str, str], ...] = ()
    scenario: str | None = None
    # The finding's framework cannot be installed beside plugpull's default ones (CrewAI): a kernel without it
    # records no results instead of failing (finding.toml ``apart = true``).
    apart: bool = False
    # The claim stubs finding.toml still holds (``todo = "..."``): one line each, for `report check`.
    stubs: tuple[str, ...] = ()
    # The finding in another language this one is the twin of (finding.toml ``[twin]``: finding, framework, options),
    # set beside it line by line on docs/twins.md (report/harness/twins.py). None for most.
    twin: Twin | None = None

    def agent_script(self) -> Path | None:
        """The agent's file (the first word of ``agent``): in the finding's folder, or a path from it that stays in the
        repository (``../../clients/js/examples/openai-agents/approval.mjs``: an example the finding runs as it is,
        not a copy of it); None for a built-in target."""
        return None if self.agent is None else (self.directory / shlex.split(self.agent)[0]).resolve()

    def kernel_agent(self) -> str | dict[str, str] | None:
        """The agent's command as the kernel runs it: its file by name (staged beside the kernel), then its arguments;
        a table of them by options label for variants."""
        if self.agent is None:
            return None

        def by_name(command: str) -> str:
            words = shlex.split(command)
            return shlex.join([Path(words[0]).name, *words[1:]])

        if self.agent_variants:
            return {label: by_name(command) for label, command in self.agent_variants}
        return by_name(self.agent)

    def agent_path(self) -> str | None:
        """The agent's command with its file named from the repository's root (what the pages print); for variants,
        the file and their labels."""
        script = self.agent_script()
        if script is None or self.agent is None:
            return None
        where = script.relative_to(self.root.resolve()).as_posix()
        if self.agent_variants:
            return f"{where} ({', '.join(label for label, _ in self.agent_variants)})"
        return shlex.join([where, *shlex.split(self.agent)[1:]])

    def staged(self) -> list[Path]:
        """The files a run copies next to the kernel (its folder :data:`AGENT_FOLDER`): the agent and the other
        scripts at the top of its folder (``*.py``, ``*.mjs``, ``*.js``, ``*.cjs``), which it may import (into
        record.AGENT_FOLDER). The kernel runs in a scratch folder with plugpull installed as a copy, so it cannot
        reach the repository's findings/."""
        script = self.agent_script()
        if script is None:
            return []
        return sorted({script, *(p for p in script.parent.iterdir() if p.suffix in AGENT_SUFFIXES and p.is_file())})

    def line_repeats(self) -> list[dict[str, Any]]:
        """The notebooks' ``line_repeats`` parameter: the lines that run more than ``repeats`` times."""
        return [c.line_repeats() for c in self.claims if c.repeats > 1]

    def pin(self, name: str) -> PinSet:
        for pin in self.pins:
            if pin.name == name:
                return pin
        raise FindingError(
            f"finding {self.id!r} has no pin set {name!r}; its pin sets: {', '.join(p.name for p in self.pins)}"
        )


def load_finding(directory: Path, root: Path) -> Finding:
    path = directory / "finding.toml"
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise FindingError(f"{path}: {exc}") from None
    missing = [k for k in ("id", "title", "claim", "framework", "pins") if k not in data]
    if "target" not in data and "agent" not in data:
        missing.append("target (a built-in's name) or agent (a command in the finding's folder)")
    if missing:
        raise FindingError(f"{path}: missing {', '.join(missing)}")
    if data["id"] != directory.name:
        raise FindingError(f"{path}: id {data['id']!r} does not match its folder {directory.name!r}")
    pins = tuple(_pin_set(p, directory, path) for p in data["pins"])
    pins += generated_pins(directory, {p.name for p in pins})
    frameworks = _names(data["framework"], path, "framework")
    agent, variants, scenario = _agent(data, directory, path)
    targets = (AGENT_TARGET,) if agent is not None else _names(data["target"], path, "target")
    # A claim stub (``todo = "..."``, as `plugpull report new` writes one per point) is not a claim yet: it is left out
    # of the claims, so the finding runs, and `report check` lists it until someone writes it and deletes `todo`.
    entries = data.get("claims")
    stubs: list[str] = []
    if isinstance(entries, list):
        stubs = [
            f"claims[{i}] (point {c.get('point')!r}) is a stub: {c['todo']}"
            for i, c in enumerate(entries)
            if isinstance(c, dict) and "todo" in c
        ]
        entries = [c for c in entries if not (isinstance(c, dict) and "todo" in c)]
    try:
        claims = parse_claims(entries, str(path), [p.name for p in pins])
    except ClaimError as exc:
        raise FindingError(str(exc)) from None
    return Finding(
        id=data["id"],
        title=data["title"],
        claim=" ".join(data["claim"].split()),
        notebook=root / data.get("notebook", f"notebooks/{data['id']}.ipynb"),
        framework=frameworks[0],
        target=targets[0],
        links=data.get("links", {}),
        parameters=data.get("parameters", {}),
        pins=pins,
        root=root,
        directory=directory,
        frameworks=frameworks,
        targets=targets,
        claims=claims,
        agent=agent,
        agent_variants=variants,
        scenario=scenario,
        apart=bool(data.get("apart", False)),
        stubs=tuple(stubs),
        twin=_twin(data.get("twin"), path),
    )


def _twin(data: Any, path: Path) -> Twin | None:
    if data is None:
        return None
    options = data.get("options", {}) if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("finding"), str)
        or not isinstance(data.get("framework"), str)
        or not isinstance(options, dict)
        or not all(isinstance(v, str) for v in options.values())
        or set(data) - {"finding", "framework", "options"}
    ):
        raise FindingError(f"{path}: [twin] is finding = 'ID', framework = 'NAME' and options = {{ ... }} (optional)")
    return Twin(data["finding"], data["framework"], dict(options))


#: The agent files a run stages beside the kernel: Python, and JavaScript that a pin set's node runs.
AGENT_SUFFIXES = (".py", *JS_SUFFIXES)
#: What a finding whose target is a user's agent lists as its target (Result.target_name of an --agent line).
AGENT_TARGET = "agent"


def _agent(
    data: dict[str, Any], directory: Path, path: Path
) -> tuple[str | None, tuple[tuple[str, str], ...], str | None]:
    """finding.toml's ``agent`` (a command whose first word is a file in the finding's folder, or a path from it inside
    the repository), its variants when it is a table of options label -> command (one folder for all), and
    ``scenario``."""
    from plugpull.scenarios.registry import REGISTRY

    agent, scenario = data.get("agent"), data.get("scenario")
    if agent is None:
        if scenario is not None:
            raise FindingError(f"{path}: scenario is for an agent target (agent = '...'); a built-in runs its own")
        return None, (), None
    if "target" in data:
        raise FindingError(f"{path}: a finding has target (a built-in) or agent (a command), not both")
    variants: tuple[tuple[str, str], ...] = ()
    if isinstance(agent, dict):
        variants = tuple(agent.items())
        if not variants or not all(isinstance(v, str) and isinstance(k, str) and _LABEL.match(k) for k, v in variants):
            raise FindingError(f'{path}: agent as a table is options -> command, e.g. "key=none" = "agent.mjs no-key"')
    commands = [v for _, v in variants] or [agent]
    folders = set()
    for command in commands:
        try:
            words = shlex.split(command) if isinstance(command, str) else []
        except ValueError as exc:
            raise FindingError(f"{path}: agent {command!r}: {exc}") from None
        if not words:
            raise FindingError(
                f"{path}: agent must be a command whose first word is a file here, e.g. 'agent.py --flag'"
            )
        script = (directory / words[0]).resolve()
        root = directory.resolve().parent.parent
        inside = script.is_relative_to(directory.resolve()) or (
            script.is_relative_to(root) and script.suffix in AGENT_SUFFIXES
        )
        if Path(words[0]).is_absolute() or not inside or not script.is_file():
            raise FindingError(
                f"{path}: agent {words[0]!r} is not a file in {directory.name}/ (the finding's folder) or a script"
                f" ({', '.join(AGENT_SUFFIXES)}) from it inside the repository"
            )
        folders.add(script.parent)
    if len(folders) > 1:
        raise FindingError(f"{path}: the agent's variants run files of one folder (staged together)")
    # resume-after-upgrade takes two commands (one per release): not one agent.
    names = [n for n in REGISTRY.names() if n != "resume-after-upgrade"]
    if not isinstance(scenario, str) or scenario not in names:
        raise FindingError(f"{path}: an agent needs scenario = one of {', '.join(names)}")
    return commands[0], variants, scenario


#: An agent variant's label: options as a line names them (``key=none durability=sync``).
_LABEL = re.compile(r"^[A-Za-z_][\w-]*=\S+( [A-Za-z_][\w-]*=\S+)*$")


def _pin_set(data: Any, directory: Path, path: Path) -> PinSet:
    """One ``[[pins]]`` table: ``name`` and ``requirements``, plus ``from`` for an upgrade pair (A's lock)."""
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("name"), str)
        or not isinstance(data.get("requirements"), str)
    ):
        raise FindingError(f"{path}: every [[pins]] needs name = '...' and requirements = 'pins/....txt'")
    start, npm = data.get("from"), data.get("npm")
    if start is not None and not isinstance(start, str):
        raise FindingError(f"{path}: pin set {data['name']!r}: from is the start release's lock file, a path")
    if npm is not None and (not isinstance(npm, str) or start is not None):
        raise FindingError(
            f"{path}: pin set {data['name']!r}: npm is the folder of a package.json and its package-lock.json"
            " (not with from)"
        )
    return PinSet(
        data["name"],
        directory / data["requirements"],
        None if start is None else directory / start,
        None if npm is None else directory / npm,
    )


# The first line of a pin set's .in written by `plugpull report sweep` (report/harness/sweep.py). It names the
# flag the sweep had when the first ones were committed: the mark of a file format, kept so they are still found.
GENERATED_MARK = "# generated by plugpull report --sweep"


def generated_pins(directory: Path, listed: set[str]) -> tuple[PinSet, ...]:
    """The pin sets a sweep generated (``pins/NAME.in`` marked generated, its lock beside it): they belong
    to the finding without a [[pins]] entry each, so a sweep over 30 releases leaves finding.toml short."""
    found = []
    for source in sorted((directory / "pins").glob("*.in")):
        lock = source.with_suffix(".txt")
        if source.stem in listed or not lock.is_file():
            continue
        with source.open() as handle:
            if handle.readline().startswith(GENERATED_MARK):
                found.append(PinSet(source.stem, lock))
    # An npm release a sweep wrote: a folder whose package.json's plugpull table says so and names its kernel lock.
    for manifest in sorted((directory / "pins").glob("*/package.json")):
        folder = manifest.parent
        if folder.name in listed:
            continue
        try:
            mark = json.loads(manifest.read_text()).get("plugpull") or {}
        except ValueError:
            continue
        if mark.get("generated") and isinstance(mark.get("kernel"), str):
            found.append(PinSet(folder.name, directory / "pins" / mark["kernel"], npm=folder))
    return tuple(found)


def _names(value: Any, path: Path, key: str) -> tuple[str, ...]:
    """``"x"`` or ``["x", "y"]`` as a non-empty tuple of strings."""
    names = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else ()
    if not names or not all(isinstance(n, str) and n for n in names):
        raise FindingError(f"{path}: {key} must be a name or a non-empty list of names")
    return names


def load_all(root: Path) -> dict[str, Finding]:
    """Every finding under ``root/findings``, by id, in name order."""

    def read() -> dict[str, Finding]:
        base = root / FINDINGS_DIR
        dirs = sorted(d for d in base.iterdir() if (d / "finding.toml").is_file()) if base.is_dir() else []
        return {d.name: load_finding(d, root) for d in dirs}

    return dict(once("findings", root, read))  # a copy: a caller may add to or drop from its dict


def find_root(start: Path) -> Path | None:
    """The repository root: the nearest folder up from ``start`` with findings/ and pyproject.toml."""
    for folder in (start, *start.parents):
        if (folder / FINDINGS_DIR).is_dir() and (folder / "pyproject.toml").is_file():
            return folder
    return None
