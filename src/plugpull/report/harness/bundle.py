"""``plugpull report bundle FINDING``: a folder (and a .zip) a maintainer runs without this repository.

One bundle per (witness script of a ``bug`` claim, release the claim fails on), from the newest record of
that release's pin set: ``findings/<id>/bundles/<slug>/`` and ``<slug>.zip`` beside it (``--out DIR``
elsewhere). It holds

- ``ISSUE.md``: the issue body a maintainer of the one framework pastes (:func:`render_issue`; its one command
  is :func:`maintainer_command`);
- ``witness.py``: the claim's framework-only witness, copied from ``findings/<id>/witness/``;
- ``requirements.txt``: hash-locked, only what the witness needs (the framework and the extra
  distributions the claim's ``witness.requires`` names) at exactly the versions and files of the failing
  release's pin set: ``uv pip compile`` of ``<dist>==<version>`` with the pin set's lock as constraints,
  then every entry checked against the lock and its hashes cut down to the lock's; ``requirements-fixed.txt``
  the same for the first release the records show fixed; ``requirements-start.txt`` for an upgrade pair's
  start release;
- the newest record's executed ``.ipynb`` and its ``.html``;
- ``README.md``: what it is and the one command that runs the witness from the folder.

Every file goes through ``results.redact`` (as records do); the zip has its entries in name order with a
fixed time and mode, so the same bundle gives the same bytes. Nothing is left behind on an error: the
bundle is built in a scratch folder and moved into place at the end.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugpull.errors import BundleError, LockError
from plugpull.report.harness import history, issue_body, package_index, sweep
from plugpull.report.harness.finding import FINDINGS_DIR, Finding, PinSet
from plugpull.report.kernel import claims, record, versions
from plugpull.results import redact

BUNDLES = "bundles"
README, ISSUE, WITNESS = "README.md", "ISSUE.md", "witness.py"
REQUIREMENTS, FIXED, START = "requirements.txt", "requirements-fixed.txt", "requirements-start.txt"
#: 1980-01-01 00:00:00, the earliest time a zip entry can hold: no clock in the bytes.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
EXIT_CODES = {0: "PASS", 1: "FAIL", 2: "ERROR"}


# --- what the claims say (finding.toml, report/kernel/claims.py) --------------------------------------------


def is_bug(expectation: claims.Expectation) -> bool:
    """An expectation of a FAIL whose kind is ``bug``: only bugs go upstream as a bug report."""
    return expectation.expects_fail and expectation.kind == "bug"


def fails_as_bug(line: claims.LineJudgement) -> bool:
    """A FAIL of ``line`` is the bug's: its expectation there is of kind bug (:func:`is_bug`), or claims PASS (no kind:
    nothing says the FAIL is something else)."""
    return line.expectation.kind in ("bug", None)


def witness_of(expectation: claims.Expectation) -> claims.Witness | None:
    return expectation.support.witness


# --- the records --------------------------------------------------------------------------------------


@dataclass
class Row:
    """One release (or upgrade pair) with a record: the finding's lines judged on its newest record."""

    pin: str
    label: str  # "1.19.0", or "1.19.0 → 1.20.0" for an upgrade pair
    sort: Any
    path: Path  # the record's JSON
    doc: dict[str, Any]
    judged: dict[str, claims.LineJudgement]  # claim label -> judgement

    def fails(self, labels: Sequence[str]) -> bool:
        """The bug shows on this release: a line of ``labels`` failed where its claim says that FAIL is the bug.

        A line that fails there for another reason (the claim's kind on this release is app or documented, as
        openai-agents-4244's second approval on the fixed release) is not the bug failing."""
        return any(self.judged[x].failed > 0 and fails_as_bug(self.judged[x]) for x in labels if x in self.judged)

    def passes(self, labels: Sequence[str]) -> bool:
        """The bug does not show: every line of ``labels`` ran, none failed as the bug, and at least one passed."""
        mine = [self.judged[x] for x in labels if x in self.judged]
        return (
            bool(mine)
            and all(j.finished > 0 and (j.failed == 0 or not fails_as_bug(j)) for j in mine)
            and any(j.failed == 0 for j in mine)
        )

    def witness(self, label: str) -> claims.WitnessJudgement | None:
        """The witness of ``label`` on this record against the harness's line (None: no witness declared)."""
        line = self.judged.get(label)
        if line is None or line.expectation.support.witness is None:
            return None
        return claims.judge_witness(line, line.expectation.support.witness, claims.witness_entries(self.doc).get(label))

    def witness_text(self, label: str) -> str:
        """A table cell: the witness's verdicts with counts and whether they agree; "–" before schema 3."""
        judged = self.witness(label)
        if judged is None:
            return "none declared"
        if label not in claims.witness_entries(self.doc) and int(self.doc.get("schema") or 0) < 3:
            return "–"
        return judged.text()

    def witness_outputs(self, label: str) -> list[tuple[int | None, dict[str, Any]]]:
        """(exit code, JSON line) of each witness run of ``label`` that finished as designed."""
        entry = claims.witness_entries(self.doc).get(label) or {}
        return [
            (run.get("exit_code"), dict(run["output"]))
            for run in entry.get("runs") or []
            if claims.witness_run_problem(run) is None
        ]


def _pair_label(doc: dict[str, Any]) -> str | None:
    pair = doc.get("upgrade")
    if isinstance(pair, dict) and pair.get("from") and pair.get("to"):
        return f"{pair['from']} → {pair['to']}"
    return None


def rows(finding: Finding) -> list[Row]:
    """Every pin set of ``finding`` with a record whose newest one is judged on some claim, oldest release
    first (releases by version; upgrade pairs by start, then target release)."""
    out = []
    for path, doc in history.latest(finding.root):
        if doc["finding"] != finding.id:
            continue
        judged = {j.claim.label: j for j in claims.judge(finding.claims, doc)}
        if not judged:
            continue
        pair = _pair_label(doc)
        if pair is not None:
            ends = doc["upgrade"]
            label, sort = pair, (versions.sort_key(str(ends["from"])), versions.sort_key(str(ends["to"])))
        else:
            version = next((j.version for j in judged.values() if j.version), None) or "?"
            label, sort = version, (versions.sort_key(version), ())
        out.append(Row(doc["pin"], label, sort, path, doc, judged))
    return sorted(out, key=lambda r: (r.sort, r.pin))


# --- one bundle ----------------------------------------------------------------------------------------


@dataclass
class Line:
    """One bug line of a bundle: the harness's judgement of the failing release's newest record (with the
    claim and the expectation covering that release) and the witness that shows it."""

    judgement: claims.LineJudgement
    witness: claims.Witness

    @property
    def claim(self) -> claims.Claim:
        return self.judgement.claim

    @property
    def expectation(self) -> claims.Expectation:
        return self.judgement.expectation

    @property
    def label(self) -> str:
        return self.claim.label

    @property
    def args(self) -> tuple[str, ...]:
        return tuple(self.witness.args)


@dataclass
class Bundle:
    finding: Finding
    witness: Path  # the script in the repository
    requires: tuple[str, ...]
    pin: PinSet
    row: Row  # the failing release's newest record
    dist: str  # the framework distribution the witness is about
    version: str
    lines: list[Line]
    table: list[Row]  # every release with a record, for the versions table
    first_failing: Row | None = None
    first_fixed: Row | None = None
    start_version: str | None = None  # an upgrade pair's start release
    python: str = "3.10"  # the lowest Python the pin set's lock was compiled for
    run_python: str = ""  # major.minor of the Python the record ran on

    @property
    def slug(self) -> str:
        return f"{self.witness.stem}-{self.pin.name}"

    @property
    def upgrade(self) -> bool:
        return self.pin.start is not None

    @property
    def record_stem(self) -> str:
        return self.row.path.stem

    def files(self) -> list[str]:
        """The bundle's files, in the order the README lists them."""
        names = [ISSUE, README, WITNESS, REQUIREMENTS]
        if self.upgrade:
            names.append(START)
        if self.first_fixed is not None:
            names.append(FIXED)
        return names + [f"{self.record_stem}.ipynb", f"{self.record_stem}.html"]

    def arg_sets(self) -> list[tuple[tuple[str, ...], list[Line]]]:
        """The witness's distinct argument lists with the lines each is about (usually one)."""
        grouped: dict[tuple[str, ...], list[Line]] = {}
        for line in self.lines:
            grouped.setdefault(line.args, []).append(line)
        return list(grouped.items())


def plan(finding: Finding, pins: Sequence[str] = ()) -> list[Bundle]:
    """The bundles of ``finding``: per witness script of its bug lines, per pin set whose newest record shows
    a bug line failing (``pins``: only those, each of which must). BundleError names what is missing."""
    bugs = [(c, e) for c in finding.claims for e in c.expect if is_bug(e)]
    if not bugs:
        raise BundleError(f"finding {finding.id!r} has no claim of kind 'bug': only bugs go upstream as a bundle")
    for claim, expectation in bugs:
        witness = witness_of(expectation)
        if witness is None:
            raise BundleError(
                f"finding {finding.id!r}: bug claim {claim.label!r} ({expectation.scope()}) has no witness"
            )
        script = (finding.directory / witness.script).resolve()
        if not script.is_relative_to((finding.root / FINDINGS_DIR).resolve()) or not script.is_file():
            raise BundleError(f"finding {finding.id!r}: witness {witness.script} does not exist under findings/")
        if script.suffix != ".py":
            # A bundle is a uv-run Python script with a hash-locked requirements.txt; a Node witness would need its
            # package.json and lock instead, which the bundle does not write yet.
            raise BundleError(
                f"finding {finding.id!r}: witness {witness.script} is JavaScript; a bundle holds a Python witness only"
                f' (run it with node beside an npm pin set\'s packages: docs/report.md, "npm pin sets")'
            )
    for name in pins:
        finding.pin(name)  # unknown: FindingError, one line
    table = rows(finding)
    bundles: list[Bundle] = []
    refusals: dict[str, str] = {}
    for row in table:
        if pins and row.pin not in pins:
            continue
        lines, why = _failing_lines(row)
        scripts: dict[str, list[Line]] = {}
        for line in lines:
            scripts.setdefault(line.witness.script, []).append(line)
        for script, mine in scripts.items():
            bundles.append(_bundle(finding, (finding.directory / script).resolve(), row, mine, table))
        if not lines and why:
            refusals[row.pin] = why
    for name in pins:
        if not any(b.pin.name == name for b in bundles):
            if not history.runs(finding.root, finding, name):
                raise BundleError(
                    f"finding {finding.id!r}: no record of pin set {name!r} yet "
                    f"(run plugpull report --finding {finding.id} --pin {name})"
                )
            why = refusals.get(name) or "no bug claim expects a FAIL on it"
            raise BundleError(f"finding {finding.id!r}, pin set {name!r}: nothing to bundle: {why}")
    for made in bundles:
        check_issue(made, script_facts(made.witness.read_text()))
    if not bundles:
        raise BundleError(
            f"finding {finding.id!r}: no pin set's newest record shows a bug line failing"
            + (f" ({next(iter(refusals.values()))})" if refusals else " (no record of a release it claims fails)")
        )
    return bundles


def _failing_lines(row: Row) -> tuple[list[Line], str]:
    """The bug lines that fail as claimed on ``row``'s newest record, or why none does."""
    lines, why = [], ""
    where = f"its newest record ({record.run_id(row.doc)})"
    for label, judgement in row.judged.items():
        witness = witness_of(judgement.expectation)
        if not is_bug(judgement.expectation) or witness is None:
            continue
        if judgement.status != claims.REPRODUCES or judgement.failed == 0:
            why = why or f"{where} does not show {label!r} failing: {judgement.status}, {judgement.reason}"
            continue
        witnessed = row.witness(label)
        if witnessed is not None and witnessed.status == claims.DISAGREES:
            why = why or f"in {where} the witness of {label!r} disagrees with the harness: {witnessed.reason}"
            continue
        lines.append(Line(judgement, witness))
    return lines, why


def _bundle(finding: Finding, script: Path, row: Row, lines: list[Line], table: list[Row]) -> Bundle:
    pin = finding.pin(row.pin)
    dist = lines[0].claim.framework or row.doc.get("framework") or finding.framework
    requires = tuple(dict.fromkeys(r for line in lines for r in getattr(line.witness, "requires", ())))
    version = (row.doc.get("versions") or {}).get(dist) or sweep.pinned_version(pin.requirements, dist)
    if not version:
        raise BundleError(f"pin set {pin.name!r}: its record and lock name no version of {dist}")
    pair = row.doc.get("upgrade") if isinstance(row.doc.get("upgrade"), dict) else {}
    start = None
    if pin.start is not None:
        start = str(pair.get("from") or sweep.pinned_version(pin.start, dist) or "")
        if not start:
            raise BundleError(f"pin set {pin.name!r}: the start lock {pin.start.name} pins no {dist}")
    labels = [line.label for line in lines]
    releases = [r for r in table if _pair_label(r.doc) is None]
    first_failing = first_fixed = None
    if pin.start is None:
        here = next(i for i, r in enumerate(releases) if r.pin == row.pin)
        failing = [i for i, r in enumerate(releases[: here + 1]) if r.fails(labels)]
        first_failing = releases[failing[0]] if failing else None
        first_fixed = next((r for r in releases[here + 1 :] if r.passes(labels)), None)
    python = (row.doc.get("versions") or {}).get("python") or ""
    return Bundle(
        finding=finding,
        witness=script,
        requires=requires,
        pin=pin,
        row=row,
        dist=dist,
        version=str(version),
        lines=lines,
        table=table,
        first_failing=first_failing,
        first_fixed=first_fixed,
        start_version=start,
        python=lock_python(pin.requirements),
        run_python=".".join(python.split(".")[:2]),
    )


# --- requirements ---------------------------------------------------------------------------------------

_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)\s*(;[^\\]*)?")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Entry:
    name: str
    version: str
    marker: str  # "; python_full_version < '3.11'" or ""
    hashes: list[str] = field(default_factory=list)


def entries(text: str) -> list[Entry]:
    """A hash-locked requirements file's entries, in order. A universal lock may hold one name twice, at
    two versions under exclusive markers (numpy for Python < 3.11 and for >= 3.11)."""
    found: list[Entry] = []
    for raw in text.splitlines():
        line = raw.strip()
        match = _ENTRY.match(line) if not raw[:1].isspace() else None
        if match:
            found.append(Entry(match.group(1), match.group(2), (match.group(3) or "").strip()))
        for digest in re.findall(r"--hash=(\S+)", line):
            if found:
                found[-1].hashes.append(digest)
    return found


def lock_python(lock: Path) -> str:
    """The ``--python-version`` a lock was compiled with (its uv header), else 3.10 (plugpull's floor)."""
    match = re.search(r"--python-version[ =]([0-9.]+)", lock.read_text()) if lock.is_file() else None
    return match.group(1) if match else "3.10"


def restrict(compiled: str, lock: str, lock_name: str, header: Sequence[str]) -> str:
    """``uv pip compile``'s output cut down to the lock: every entry must be the lock's version, and keeps
    only the hashes the lock has for it (a file the index added since the lock was made is left out, so the
    bundle installs exactly the pin set's files). LockError on anything the lock does not hold."""
    locked = entries(lock)
    out = [*(f"# {line}" if line else "#" for line in header)]
    chosen = entries(compiled)
    if not chosen:
        raise LockError("uv pip compile gave no requirements")
    for entry in chosen:
        same = [e for e in locked if _normal(e.name) == _normal(entry.name)]
        pinned = next((e for e in same if e.version == entry.version), None)
        if pinned is None:
            raise LockError(
                f"{entry.name}=={entry.version} is not in {lock_name}"
                + (f" (it pins {', '.join(e.version for e in same)})" if same else "")
                + ": the witness needs a distribution the pin set does not install"
            )
        hashes = [h for h in pinned.hashes if h in entry.hashes] if entry.hashes else list(pinned.hashes)
        if not hashes:
            raise LockError(f"{entry.name}=={entry.version}: none of the index's files is one {lock_name} locks")
        out.append(f"{pinned.name}=={entry.version}" + (f" {entry.marker}" if entry.marker else "") + " \\")
        out += [f"    --hash={h} \\" for h in hashes[:-1]] + [f"    --hash={hashes[-1]}"]
    return "\n".join(out) + "\n"


def compile_closure(requirements: Sequence[str], lock: Path, python_version: str) -> str:
    """``uv pip compile`` of ``requirements`` with ``lock`` as constraints, universal, hash-locked (the text)."""
    uv = shutil.which("uv")
    if uv is None:
        raise LockError(
            "a bundle's requirements are compiled with uv, which is not on PATH: https://docs.astral.sh/uv/"
        )
    scratch = Path(tempfile.mkdtemp(prefix="plugpull-bundle-lock-"))
    try:
        (scratch / "requirements.in").write_text("\n".join(requirements) + "\n")
        argv = [
            uv,
            "pip",
            "compile",
            "--quiet",
            "--no-header",
            "--no-annotate",
            "--universal",
            "--python-version",
            python_version,
            "--generate-hashes",
            "--constraint",
            str(lock),
            "requirements.in",
            "--output-file",
            "requirements.txt",
        ]
        index = package_index.configured(start=lock.parent)
        proc = subprocess.run(
            argv, cwd=scratch, env=index.uv_environment(), capture_output=True, text=True, timeout=600
        )
        if proc.returncode != 0:
            lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
            raise LockError(
                f"uv pip compile {' '.join(requirements)} -c {lock.name} failed: "
                + (" ".join(lines[-3:]) if lines else f"exit {proc.returncode}")
            )
        return (scratch / "requirements.txt").read_text()
    except subprocess.TimeoutExpired:
        raise LockError(f"uv pip compile {' '.join(requirements)} took more than 600 s") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


#: (requirements, lock, python version) -> compiled requirements text; tests hand in their own.
Compiler = Callable[[Sequence[str], Path, str], str]


def locked_requirements(
    bundle: Bundle, version: str, lock: Path, pin_name: str, compiler: Compiler = compile_closure
) -> str:
    """The requirements file that installs the witness's closure at ``version`` of the bundle's framework."""
    wanted = [f"{bundle.dist}=={version}", *bundle.requires]
    header = [
        f"{' and '.join(wanted)} with its dependencies, at the versions and files of plugpull's pin set {pin_name}:",
        f"`uv pip compile --universal --python-version {bundle.python} --generate-hashes` with that pin set's lock as",
        f"constraints, for Python >= {bundle.python} on any OS. `pip install --require-hashes -r` checks every file.",
    ]
    python = lock_python(lock)
    return restrict(compiler(wanted, lock, python), lock.read_text(), lock.name, header)


# --- writing -----------------------------------------------------------------------------------------------


def check_out(out: Path) -> None:
    """--out must be a folder we can write, or a path whose nearest existing parent is one."""
    probe = out
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise BundleError(f"--out {out}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise BundleError(f"--out {out}: {probe} is not writable")


def zip_folder(folder: Path, target: Path) -> None:
    """``folder`` as ``target`` with every entry under ``<folder name>/``, in name order, a fixed time and
    mode: the same files give the same bytes (https://reproducible-builds.org/docs/archives/)."""
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(f"{folder.name}/{path.relative_to(folder).as_posix()}", date_time=ZIP_TIME)
            info.create_system = 3  # unix, so the mode below is read
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes(), compresslevel=9)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _write(path: Path, text: str) -> None:
    path.write_text(redact(text), encoding="utf-8")


def build(bundle: Bundle, folder: Path, compiler: Compiler = compile_closure) -> None:
    """Write ``bundle``'s files into ``folder`` (which must not exist yet)."""
    folder.mkdir(parents=True)
    _write(folder / WITNESS, _text(bundle.witness))
    _write(
        folder / REQUIREMENTS,
        locked_requirements(bundle, bundle.version, bundle.pin.requirements, bundle.pin.name, compiler),
    )
    if bundle.pin.start is not None and bundle.start_version:
        _write(
            folder / START,
            locked_requirements(bundle, bundle.start_version, bundle.pin.start, bundle.pin.name, compiler),
        )
    if bundle.first_fixed is not None:
        fixed = bundle.finding.pin(bundle.first_fixed.pin)
        _write(
            folder / FIXED,
            locked_requirements(bundle, bundle.first_fixed.label, fixed.requirements, fixed.name, compiler),
        )
    for suffix in (".ipynb", ".html"):
        source = bundle.row.path.with_suffix(suffix)
        if not source.is_file():
            raise BundleError(f"record {bundle.row.path.name} has no {suffix} beside it")
        _write(folder / f"{bundle.record_stem}{suffix}", _text(source))
    _write(folder / ISSUE, render_issue(bundle))
    _write(folder / README, readme(bundle))


def write(bundles: Sequence[Bundle], out: Path, compiler: Compiler = compile_closure) -> list[Path]:
    """Build every bundle in a scratch folder, then put each in ``out`` (``<slug>/`` and ``<slug>.zip``),
    replacing an older one of the same name; nothing is written to ``out`` unless every bundle was built."""
    check_out(out)
    scratch = Path(tempfile.mkdtemp(prefix="plugpull-bundle-"))
    placed: list[Path] = []
    try:
        for bundle in bundles:
            folder = scratch / bundle.slug
            build(bundle, folder, compiler)
            zip_folder(folder, scratch / f"{bundle.slug}.zip")
        out.mkdir(parents=True, exist_ok=True)
        for bundle in bundles:
            target, archive = out / bundle.slug, out / f"{bundle.slug}.zip"
            part, zip_part = out / f".{bundle.slug}.part", out / f".{bundle.slug}.zip.part"
            shutil.rmtree(part, ignore_errors=True)
            shutil.copytree(scratch / bundle.slug, part)
            shutil.copyfile(scratch / f"{bundle.slug}.zip", zip_part)
            shutil.rmtree(target, ignore_errors=True)
            part.rename(target)
            zip_part.replace(archive)
            placed.append(target)
        return placed
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for bundle in bundles:
            shutil.rmtree(out / f".{bundle.slug}.part", ignore_errors=True)
            (out / f".{bundle.slug}.zip.part").unlink(missing_ok=True)


def default_out(finding: Finding) -> Path:
    return finding.root / FINDINGS_DIR / finding.id / BUNDLES


# --- README.md -----------------------------------------------------------------------------------------------


def run_python(bundle: Bundle) -> str:
    """The Python the command asks uv for: the record's major.minor (what the report ran), else the lock's floor."""
    return bundle.run_python or bundle.python


def uv_command(python: str, args: Sequence[str], requirements: str = REQUIREMENTS, *, upgrade: bool = False) -> str:
    """The uv command that runs the witness with ``args`` from a bundle's folder (an upgrade pair's start
    release set up first, its python passed as ``--start-python``)."""
    setup, start_args = "", []
    if upgrade:
        start_args = ["--start-python", "start/bin/python"]
        setup = f"uv venv --python {python} start && uv pip install --python start/bin/python --require-hashes -r {START} && "
    argv = " ".join(shlex.quote(a) for a in [*start_args, *args])
    return f"{setup}uv run --no-project --python {python} --with-requirements {requirements} python {WITNESS}" + (
        f" {argv}" if argv else ""
    )


def commands(bundle: Bundle, args: Sequence[str], requirements: str = REQUIREMENTS) -> tuple[str, str]:
    """(the uv command, the pip + python equivalent) that run the witness with ``args`` from the folder."""
    python = run_python(bundle)
    start_args: list[str] = []
    pip_setup = ""
    if bundle.upgrade:
        start_args = ["--start-python", "start/bin/python"]
        pip_setup = f"python{python} -m venv start && start/bin/pip install --require-hashes -r {START} && "
    argv = " ".join(shlex.quote(a) for a in [*start_args, *args])
    uv = uv_command(python, args, requirements, upgrade=bundle.upgrade)
    pip = (
        f"{pip_setup}python{python} -m venv .venv && .venv/bin/pip install --require-hashes -r {requirements} && "
        f".venv/bin/python {WITNESS}" + (f" {argv}" if argv else "")
    )
    return uv, pip


def expected_output(bundle: Bundle, lines: Sequence[Line]) -> list[str]:
    """What the witness printed in the record (exit code and JSON line), else what the claim expects."""
    out = []
    for line in lines:
        outputs = bundle.row.witness_outputs(line.label)
        runs = [(code, o) for code, o in outputs if o.get("verdict") == "FAIL"]
        if runs:
            code, output = runs[0]
            total = len(outputs)
            out += [
                f"In the report's run `{record.run_id(bundle.row.doc)}` ({bundle.dist} {bundle.version}) the witness "
                f"for `{line.label}` exited {code} ({EXIT_CODES.get(code, '?') if isinstance(code, int) else '?'})"
                + (f" in {len(runs)} of {total} runs" if total > 1 else "")
                + " with this last line (ids and times the script draws afresh differ from run to run):",
                "",
                "```json",
                json.dumps(output, sort_keys=False),
                "```",
                "",
            ]
        else:
            counts = ", ".join(
                f'"{n}": {c[0]}' if c[0] == c[1] else f'"{n}": {c[0]}..{c[1]}'
                for n, c in line.expectation.counts.items()
            )
            out += [
                f"The witness for `{line.label}` has not been run by a report on this record (it predates "
                "witnesses); the claim expects exit code 1 and a last line with "
                f'`"verdict": "FAIL"`' + (f" and counts {{{counts}}}" if counts else "") + ".",
                "",
            ]
    return out


def fixed_evidence(bundle: Bundle) -> str:
    """What the first fixed release's record shows for the bundle's lines: the harness and the witness."""
    row = bundle.first_fixed
    if row is None:
        return ""
    parts = []
    for line in bundle.lines:
        judged = row.judged.get(line.label)
        harness = judged.cell() if judged else "not run"
        parts.append(f"`{line.label}`: harness {harness}, witness {row.witness_text(line.label)}")
    return f"plugpull run `{record.run_id(row.doc)}`: " + "; ".join(parts)


def docstring(script: Path) -> str:
    """The witness's module docstring (what it does, in its author's words); empty when it has none."""
    import ast

    try:
        return ast.get_docstring(ast.parse(script.read_text())) or ""
    except SyntaxError:
        return ""


def readme(bundle: Bundle) -> str:
    f = bundle.finding
    what = f"{bundle.dist} {bundle.version}" + (
        f" (a run saved by {bundle.start_version}, resumed by {bundle.version})" if bundle.upgrade else ""
    )
    out = [
        f"# {f.title}: a reproduction on {what}",
        "",
        f"A standalone reproduction, made by plugpull (`plugpull report bundle {f.id}`) from the run record "
        f"`{bundle.record_stem}` of its finding `{f.id}`. It needs nothing of plugpull: `{WITNESS}` imports the "
        f"Python standard library and {bundle.dist}"
        + (f" ({', '.join(bundle.requires)})" if bundle.requires else "")
        + " only, and prints one JSON line as the last line of its standard output.",
        "",
    ]
    described = docstring(bundle.witness)
    if described:
        out += ["What it does, in its own words (its docstring):", "", "```text", described, "```", ""]
    out += [
        "## Run it",
        "",
        "From this folder, with [uv](https://docs.astral.sh/uv/):",
        "",
    ]
    for args, lines in bundle.arg_sets():
        uv, pip = commands(bundle, args)
        if len(bundle.arg_sets()) > 1:
            out += [f"For `{'`, `'.join(line.label for line in lines)}`:", ""]
        out += [
            "```sh",
            uv,
            "```",
            "",
            "or with pip and python (every file hash-checked):",
            "",
            "```sh",
            pip,
            "```",
            "",
        ]
        out += expected_output(bundle, lines)
    if bundle.lines[0].claim.timing:
        out += [
            "It fails in some runs only (a race); this runs it many times and prints how many failed (ISSUE.md "
            "says what rate to expect):",
            "",
            "```sh",
            maintainer_command(bundle),
            "```",
            "",
        ]
    out += [
        "`uv run --with-requirements` installs these versions into a throwaway environment; uv (0.13) does not "
        "check the hashes there, `pip install --require-hashes` does.",
        "",
        "Exit code: 0 PASS (the expectation held: each effect exactly once), 1 FAIL (the failure this bundle "
        "reports happened), 2 ERROR (the script did not run as designed, e.g. the kill did not land: it proves "
        "nothing either way). The JSON line has `witness`, `framework`, `version` (read with "
        "importlib.metadata), `verdict`, `counts` (each side effect and how many times it happened) and `did` "
        "(what it did and saw). `--help` lists its options.",
        "",
    ]
    if bundle.first_fixed is not None:
        uv, _ = commands(bundle, bundle.lines[0].args, FIXED)
        out += [
            f"On {bundle.dist} {bundle.first_fixed.label}, the first release after it whose record passes "
            f"({fixed_evidence(bundle)}), the same command with `{FIXED}`:",
            "",
            "```sh",
            uv,
            "```",
            "",
        ]
    out += ["## Files", ""]
    described = {
        ISSUE: "the issue body: what happens, why it is a bug, the releases measured, the witness, the environment",
        README: "this file",
        WITNESS: f"the reproduction (copied from plugpull's `{bundle.witness.relative_to(f.root.resolve()).as_posix()}`)",
        REQUIREMENTS: f"{bundle.dist} {bundle.version} and what it needs, hash-locked (Python >= {bundle.python})",
        START: f"the start release {bundle.dist} {bundle.start_version}, hash-locked (for `start/`)",
        FIXED: f"{bundle.dist} {bundle.first_fixed.label if bundle.first_fixed else ''}, hash-locked",
        f"{bundle.record_stem}.ipynb": "plugpull's executed notebook of the run (its harness, with the judgement "
        "at the top)",
        f"{bundle.record_stem}.html": "the same notebook as a self-contained HTML page (no script, opens offline)",
    }
    out += [f"- `{name}`: {described[name]}" for name in bundle.files()]
    out.append("")
    return "\n".join(out)


# --- ISSUE.md -----------------------------------------------------------------------------------------------

#: A witness's docstring sentence of what a PASS is: "Exit 0: <expected>; 1: ...".
_EXIT_0 = re.compile(r"Exit 0: (.+?); 1: ", re.S)
#: The module-level string a witness that simulates a fault (a power cut) declares: what it simulates and how.
SIMULATES = "SIMULATES"
#: Runs a maintainer's repeat command aims at: enough for a FAIL at the measured rate with this probability.
REPEAT_CONFIDENCE = 0.95
REPEAT_MIN, REPEAT_MAX = 10, 100


@dataclass(frozen=True)
class Script:
    """What a bundle's ISSUE.md reads from the witness itself (its author's words, not the finding's)."""

    summary: str  # the docstring's first line, without "(no plugpull)"
    expected: str  # the docstring's "Exit 0: ..." sentence ("" when it has none)
    simulates: str  # its SIMULATES string ("" when it declares none)
    repeat: bool  # it takes --repeat N


def script_facts(text: str) -> Script:
    """:class:`Script` of a witness's source text (parsed, not run)."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return Script("", "", "", False)
    doc = ast.get_docstring(tree) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    summary = " ".join(first.replace("(no plugpull)", "").split()).replace(" :", ":").replace(" .", ".").rstrip(". ")
    match = _EXIT_0.search(doc)
    simulates = ""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == SIMULATES for t in node.targets):
            try:
                simulates = " ".join(str(ast.literal_eval(node.value)).split())
            except ValueError:
                simulates = ""
    repeat = bool(re.search(r"""add_argument\(\s*["']--repeat["']""", text))
    return Script(summary, " ".join(match.group(1).split()) if match else "", simulates, repeat)


@dataclass(frozen=True)
class Rate:
    """How often a timing line failed on the bundle's release: the report's runs and the script's own."""

    failed: int
    runs: int
    script_failed: int
    script_runs: int
    seconds: float  # the median seconds of one run of the script (0: unknown)

    @property
    def pooled(self) -> float:
        total = self.runs + self.script_runs
        return (self.failed + self.script_failed) / total if total else 0.0

    def repeat(self) -> int:
        """Runs for the maintainer's command: at the pooled rate, at least one FAIL with REPEAT_CONFIDENCE,
        rounded up to tens, within [REPEAT_MIN, REPEAT_MAX]."""
        p = self.pooled
        if p >= 1:
            return REPEAT_MIN
        if p <= 0:
            return REPEAT_MAX
        needed = math.log(1 - REPEAT_CONFIDENCE) / math.log(1 - p)
        return max(REPEAT_MIN, min(REPEAT_MAX, 10 * math.ceil(needed / 10)))


def rate_of(b: Bundle, line: Line) -> Rate:
    outputs = b.row.witness_outputs(line.label)
    entry = claims.witness_entries(b.row.doc).get(line.label) or {}
    seconds = sorted(float(r.get("seconds") or 0) for r in entry.get("runs") or [] if isinstance(r, dict))
    return Rate(
        failed=line.judgement.failed,
        runs=line.judgement.finished,
        script_failed=sum(o.get("verdict") == "FAIL" for _, o in outputs),
        script_runs=len(outputs),
        seconds=seconds[len(seconds) // 2] if seconds else 0.0,
    )


def percent(x: float) -> str:
    return f"{100 * x:.0f} %"


def rate_sentence(rate: Rate, n: int, where: str) -> str:
    """What a maintainer running ``--repeat n`` should expect, from the records' counts."""
    lo, hi = claims.wilson(rate.failed, rate.runs)
    measured = f"{rate.failed} of {rate.runs} runs, 95 % interval {percent(lo)} to {percent(hi)}"
    if rate.script_runs:
        measured += f", and this script alone {rate.script_failed} of {rate.script_runs}"
    expect = max(1, round(rate.pooled * n))
    took = (
        f"; one run took about {rate.seconds:.0f} s, {n} about {rate.seconds * n / 60:.0f} min" if rate.seconds else ""
    )
    return (
        f"It fails in some runs only (a race), so the command runs it {n} times and prints how many failed: "
        f"expect about {expect} of {n} to fail (measured on {where}: {measured}{took})."
    )


def first_failure(b: Bundle, line: Line) -> tuple[int | None, dict[str, Any]] | None:
    """The record's first run of the script that failed, as (exit code, last JSON line)."""
    return next(((c, o) for c, o in b.row.witness_outputs(line.label) if o.get("verdict") == "FAIL"), None)


def _plain(text: str) -> str:
    """A sentence of the records, capitalised, with its end stop."""
    text = issue_body.one_line(text).rstrip(".")
    if not text:
        return ""
    word = text.split()[0]
    # An identifier (draft_refund, run(), os.replace) keeps its case.
    return (text[:1].upper() + text[1:] if word.isalpha() and word.islower() else text) + "."


def main_args(b: Bundle) -> tuple[str, ...]:
    """The arguments of the bundle's one command: its first line's, plus ``--repeat N`` on a timing line."""
    line = b.lines[0]
    if not line.claim.timing:
        return line.args
    return (*line.args, "--repeat", str(rate_of(b, line).repeat()))


def maintainer_command(b: Bundle) -> str:
    """The one command a maintainer runs from the unpacked bundle (uv only; ISSUE.md and README.md give it).

    Other parts of plugpull point at it (a record made from uncommitted files gives it instead of a commit)."""
    return commands(b, main_args(b))[0]


def check_issue(b: Bundle, script: Script) -> None:
    """BundleError when the witness cannot back an ISSUE.md: a timing line's witness must take --repeat."""
    if any(line.claim.timing for line in b.lines) and not script.repeat:
        raise BundleError(
            f"finding {b.finding.id!r}: witness {b.witness.name} backs a timing line but takes no --repeat N "
            "(a maintainer would see one sample of a rate)"
        )


def versions_lines(b: Bundle) -> list[str]:
    """The releases (or upgrade pairs) the records show failing and passing, for the bundle's framework."""
    labels = [line.label for line in b.lines]
    fails, passes = [], []
    for row in b.table:
        if not any(label in row.judged for label in labels):
            continue
        name = row.label
        mine = [row.judged[x] for x in labels if x in row.judged]
        if row.fails(labels):
            timing = [j for j in mine if j.claim.timing]
            fails.append(name + (f" ({timing[0].failed} of {timing[0].finished} runs)" if timing else ""))
        elif row.passes(labels):
            passes.append(name + (f" (0 of {mine[0].finished} runs)" if mine[0].claim.timing else ""))
    what = f"({b.dist}, saved by → resumed by)" if b.upgrade else f"on {b.dist}"
    out = [f"- fails {what}: " + ", ".join(fails)]
    out.append(f"- passes {what}: " + (", ".join(passes) if passes else "none of the releases measured"))
    return out


def render_issue(b: Bundle) -> str:
    """A bundle's ISSUE.md, an issue body a maintainer of ``b.dist`` pastes: at most about 45 lines, about this
    framework only, every fact from the witness script, finding.toml's support of the bug and the records."""
    script = script_facts(b.witness.read_text())
    check_issue(b, script)
    what = f"{b.dist} {b.version}" if not b.upgrade else f"{b.dist} {b.start_version} → {b.version}"
    first = b.lines[0]
    out = [f"# {what}: {script.summary}" if script.summary else f"# {what}", ""]
    if script.simulates:
        out += [f"**Note:** {_plain(script.simulates)}", ""]
    because = first.expectation.support.because
    if because:
        out += [_plain(because), ""]
    out += [f"**Expected:** {_plain(script.expected or 'the script exits 0')}", ""]
    actual = []
    for args, lines in b.arg_sets():
        failure = first_failure(b, lines[0])
        shown = f"`{shlex.join(args)}`: " if len(b.arg_sets()) > 1 else ""
        if failure is not None:
            code, output = failure
            actual.append(f"{shown}{_plain(output.get('did') or '')[:-1]} (exit {code}).")
        else:
            actual.append(f"{shown}{_plain(lines[0].expectation.why or 'the script exits 1')}")
    if len(actual) == 1:
        out += [f"**Actual** (on {what}): {actual[0]}", ""]
    else:
        out += [f"**Actual** (on {what}):", "", *(f"- {a}" for a in actual), ""]
    out += ["## Versions", "", *versions_lines(b), ""]
    out += [
        "## Reproduce",
        "",
        f"From the unzipped folder, with [uv](https://docs.astral.sh/uv/) (it fetches Python {run_python(b)} "
        "when missing):",
        "",
        "```sh",
        maintainer_command(b),
        "```",
        "",
    ]
    notes = [
        "It ends by printing one JSON object; exit 0: as expected, 1: the failure above, 2: it did not run as designed."
    ]
    if first.claim.timing:
        notes.append(rate_sentence(rate_of(b, first), int(main_args(b)[-1]), what))
    if len(b.arg_sets()) > 1:
        others = [f"`{shlex.join(args)}`" for args, _ in b.arg_sets()[1:]]
        notes.append("The other cases above: the same command with " + " or ".join(others) + " instead.")
    if b.first_fixed is not None:
        notes.append(f"{b.dist} {b.first_fixed.label} passes: the same command with `{FIXED}`.")
    notes.append("`README.md` gives the same with pip and hash-checked installs.")
    out += [" ".join(notes), ""]
    sources: list[str] = []
    for line in b.lines:
        support = line.expectation.support
        if support.quote is not None:
            sources += [f"> {issue_body.one_line(support.quote.text)}", f"> — {support.quote.url}", ""]
        if support.issue:
            sources += [f"Upstream issue: {support.issue}", ""]
        elif support.searched:
            sources += [f"No upstream issue found: {issue_body.one_line(support.searched)}", ""]
    out += ["## Docs", "", *_blocks(sources)]
    out += ["## Environment", "", *issue_body.environment_lines(b.row.doc, b.dist, b.version)]
    out += [
        f"- attached: `{WITNESS}` (the Python standard library and {b.dist}"
        + (f", {', '.join(b.requires)}" if b.requires else "")
        + f" only), `{REQUIREMENTS}` (hash-locked), `{b.record_stem}.html` (the same failure as run by plugpull, "
        "a crash-testing tool)",
        "",
    ]
    return "\n".join(out)


def _blocks(lines: list[str]) -> list[str]:
    """``lines`` (blocks separated by "") with each block once, in order."""
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line:
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    out: list[str] = []
    seen: list[list[str]] = []
    for block in blocks:
        if block and block not in seen:
            seen.append(block)
            out += [*block, ""]
    return out
