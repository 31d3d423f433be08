"""``plugpull report sweep FINDING``: a finding over every release of its framework in a range.

1. The configured package index lists the releases and their upload times (its JSON simple API, PEP 691 and
   700: report/harness/package_index.py), filtered by the PEP 440 range of ``--versions`` (pre-releases left
   out). An index that dates none of them is bad input: step 2 needs the dates.
2. Each release gets a hash-locked pin set beside the hand-written ones, ``pins/<dist>-<version>.{in,txt}``:
   the finding's newest ``.in`` with the framework's pin changed and its siblings' bounds dropped, marked
   generated in its header, compiled
   with ``uv pip compile --generate-hashes --exclude-newer <upload time + 1 day>`` against the same index. Resolving as of the
   release keeps its siblings from that time too: today's ``langgraph-prebuilt`` imports names an old
   ``langgraph`` lacks, so a plain resolve would measure a broken install, not the release
   (https://docs.astral.sh/uv/reference/cli/#uv-pip-compile--exclude-newer). A release that already has a
   pin set (hand-written or generated earlier) keeps it.
3. Each release runs through the same pipeline as ``plugpull report`` (one record per run, append-only). A
   release that does not resolve or install is recorded like any failed environment: a record with ``error``
   saying why ("cannot run"), and the sweep goes on.
4. ``--bisect`` runs the releases :func:`plugpull.report.harness.flips.next_probe` asks for, reusing the newest
   existing record of a release's pin set, until every flip is between two neighbouring measured releases.

The releases the index listed are kept in ``findings/<id>/sweep.json`` so the generated pages can tell a
verified flip from an interval not measured yet without asking the index again.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugpull.errors import FindingError, SweepError
from plugpull.report.harness import flips, history, package_index
from plugpull.report.harness.finding import GENERATED_MARK, Finding, PinSet
from plugpull.report.kernel import versions as version_rule

GENERATED = GENERATED_MARK
SWEEP_FILE = "sweep.json"
# Siblings published with a release (langgraph and langgraph-prebuilt, ...) land within hours of it.
RELEASE_SLACK = dt.timedelta(days=1)
#: The oldest Python a generated lock resolves for when its template's lock does not name one.
PYTHON_FLOOR = "3.10"
#: uv writes the command that compiled a lock in its header ("#    uv pip compile ... --python-version 3.11 ...").
COMPILED_FOR = re.compile(r"^#.*\buv pip compile\b.*--python-version[ =](\S+)", re.MULTILINE)


# --- the index ---------------------------------------------------------------------------------


def select(releases: Sequence[str], spec: str) -> list[str]:
    """The final releases in the PEP 440 range ``spec``, oldest first: pre- and dev releases are left out (a
    sweep measures what an unpinned install gets; a pin set names a pre-release by hand)."""
    try:
        wanted = version_rule.specifier(spec)
    except version_rule.RangeError as exc:
        raise SweepError(f"--versions: {exc}") from None
    parsed = {v for v in map(version_rule.parse, releases) if v is not None and not v.is_prerelease and v in wanted}
    return [str(v) for v in sorted(parsed)]


def listed(package: str, spec: str, index: package_index.Index) -> tuple[package_index.Project, list[str]]:
    """``package``'s page on ``index`` and its releases in ``spec``; SweepError (one line) when the range is not
    PEP 440 (before the index is asked), the index cannot list them, none is in the range, or the index dates
    none of them (PEP 700 ``upload-time``: each release is resolved as of its upload day, step 2)."""
    select([], spec)
    try:
        project = index.project(package)
    except package_index.IndexProblem as exc:
        raise SweepError(str(exc)) from None
    chosen = select(project.versions, spec)
    if not chosen:
        newest = sorted(project.versions, key=version_rule.sort_key)[-5:]
        raise SweepError(
            f"no release of {package} in {spec!r} on {index.shown} (its newest: {', '.join(newest) or 'none'})"
        )
    if not any(v in project.uploaded for v in chosen):
        raise SweepError(
            f"{index.shown} gives no upload time (PEP 700 upload-time) for {package}'s releases: a sweep resolves "
            "each release as of its upload day; use an index that serves them (https://pypi.org/simple/ does)"
        )
    return project, chosen


# --- pin sets ----------------------------------------------------------------------------------


def pinned_version(requirements: Path, package: str) -> str | None:
    """``package``'s ``==`` version in a requirements file (a lock or its .in), None if it pins none."""
    if not requirements.is_file():
        return None
    wanted = re.sub(r"[-_.]+", "-", package).lower()
    for line in requirements.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)", line.strip())
        if match and re.sub(r"[-_.]+", "-", match.group(1)).lower() == wanted:
            return match.group(3)
    return None


def npm_version(pin: PinSet, package: str) -> str | None:
    """``package``'s version in an npm pin set's package.json, None if it has none (or the pin set is PyPI's)."""
    if pin.npm is None:
        return None
    try:
        value = json.loads((pin.npm / "package.json").read_text()).get("dependencies", {}).get(package)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None


def pin_versions(finding: Finding, package: str) -> dict[str, PinSet]:
    """Version -> the pin set that installs it (a hand-written one first; the newest-named otherwise)."""
    out: dict[str, PinSet] = {}
    for pin in finding.pins:
        version = npm_version(pin, package) if pin.npm is not None else pinned_version(pin.requirements, package)
        if version is not None and version not in out:
            out[version] = pin
    return out


def template(finding: Finding, package: str) -> Path:
    """The ``.in`` a generated pin set copies: the finding's newest hand-written one that pins ``package``."""
    candidates = []
    for pin in finding.pins:
        source = pin.requirements.with_suffix(".in")
        version = pinned_version(source, package)
        if version is not None and not source.read_text().startswith(GENERATED):
            candidates.append((version_rule.sort_key(version), source))
    if not candidates:
        raise SweepError(f"finding {finding.id!r} has no pins/*.in that pins {package}==...: nothing to copy")
    return max(candidates)[1]


def python_floor(lock: Path) -> str:
    """The oldest Python ``lock`` was compiled for (its uv header), else :data:`PYTHON_FLOOR`.

    A generated lock resolves for the Pythons its template's does: google-adk 2.x and pydantic-ai-slim 2.x need
    3.11, so their hand-written locks say ``--python-version 3.11``, and a universal resolve from 3.10 has no
    solution for any of their releases (every one would be "cannot run").
    """
    try:
        match = COMPILED_FOR.search(lock.read_text())
    except OSError:
        return PYTHON_FLOOR
    return match.group(1) if match else PYTHON_FLOOR


def in_text(source: str, package: str, version: str, cutoff: dt.datetime, released: dt.datetime) -> str:
    """The generated ``.in``: ``source`` with ``package`` pinned to ``version``, under a generated header."""
    wanted = re.sub(r"[-_.]+", "-", package).lower()
    lines = [
        f"{GENERATED}: {package}=={version}, resolved with --exclude-newer "
        f"{cutoff.isoformat(timespec='seconds')} (released {released.isoformat(timespec='seconds')}, plus one day).",
        "# Do not edit: `plugpull report sweep` writes it; a hand-written pin set has no such header.",
    ]
    for line in source.splitlines():
        if line.startswith("#"):
            continue
        name = re.split(r"[\s=<>!~;\[]", line.strip(), maxsplit=1)[0]
        if name and re.sub(r"[-_.]+", "-", name).lower() == wanted:
            line = f"{package}=={version}"
        elif name:
            # A sibling's bounds in the template belong to the template's release (langgraph 1.2.24 wants
            # langgraph-checkpoint-sqlite>=3.1, which did not exist when 0.6.0 came out): unbounded, it
            # resolves to what was current at the cutoff, as a user installing that release then got.
            line = _unbounded(line.strip())
        lines.append(line)
    return "\n".join(lines) + "\n"


def _unbounded(requirement: str) -> str:
    """``name[extras]>=1,<2 ; marker`` -> ``name[extras] ; marker``: the version bounds dropped."""
    match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?)[^;]*(;.*)?$", requirement)
    if match is None:
        return requirement
    return match.group(1) + (f" {match.group(2)}" if match.group(2) else "")


@dataclass
class Generated:
    pin: PinSet
    version: str
    reused: bool
    error: str | None = None  # the lock could not be compiled: this release cannot run


def pin_name(package: str, version: str) -> str:
    return f"{package}-{version}"


def generate(
    finding: Finding,
    package: str,
    version: str,
    *,
    released: dt.datetime,
    index: package_index.Index | None = None,
) -> Generated:
    """The pin set of ``package==version``: the existing one, or a new generated .in + hash-locked .txt,
    compiled against ``index`` (default: the configured one) as of ``released`` plus a day."""
    existing = pin_versions(finding, package).get(version)
    if existing is not None:
        return Generated(existing, version, reused=True)
    if any(pin.npm is not None for pin in finding.pins):
        return generate_npm(finding, package, version, released=released)
    source = template(finding, package)
    name = pin_name(package, version)
    pins = finding.directory / "pins"
    cutoff = released + RELEASE_SLACK
    (pins / f"{name}.in").write_text(in_text(source.read_text(), package, version, cutoff, released))
    lock = pins / f"{name}.txt"
    index = index if index is not None else package_index.configured(start=finding.root)
    error = compile_lock(pins, name, python_floor(source.with_suffix(".txt")), index, cutoff)
    if error is not None:
        return Generated(
            PinSet(name, lock), version, reused=False, error=f"cannot resolve {package}=={version}: {error}"
        )
    return Generated(PinSet(name, lock), version, reused=False)


def generate_npm(finding: Finding, package: str, version: str, *, released: dt.datetime) -> Generated:
    """An npm release's pin set, ``pins/<prefix>-<version>/``: the newest hand-written npm pin set's package.json with
    ``package`` at ``version`` and its other dependencies resolved as of the release plus a day (npm's ``--before``),
    then pinned to what the lock chose, as a PyPI sweep's siblings are unbounded; its kernel lock is the template's.
    Marked generated in package.json's ``plugpull`` table (finding.generated_pins finds it by the mark)."""
    from plugpull.report.harness import npm

    written = [
        p
        for p in finding.pins
        if p.npm is not None
        and npm_version(p, package) is not None
        and not (json.loads((p.npm / "package.json").read_text()).get("plugpull") or {}).get("generated")
    ]
    if not written:
        raise SweepError(f"finding {finding.id!r} has no hand-written npm pin set that pins {package}: nothing to copy")
    source = max(written, key=lambda p: version_rule.sort_key(npm_version(p, package) or ""))
    manifest = json.loads((source.npm / "package.json").read_text())
    prefix = source.name.rsplit("-", 1)[0]
    name = f"{prefix}-{version}"
    folder = finding.directory / "pins" / name
    cutoff = released + RELEASE_SLACK
    dependencies = {k: (version if k == package else "*") for k in manifest.get("dependencies", {})}
    kernel = source.requirements.relative_to(finding.directory / "pins").as_posix()
    extra = {
        **(manifest.get("plugpull") or {}),
        "generated": npm.GENERATED,
        "released": released.isoformat(timespec="seconds"),
        "before": cutoff.isoformat(timespec="seconds"),
        "kernel": kernel,
    }
    pin = PinSet(name, source.requirements, npm=folder)
    try:
        npm.write_pins(folder, name, dependencies, before=cutoff.isoformat(timespec="seconds"), extra=extra)
    except (RuntimeError, FindingError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return Generated(pin, version, reused=False, error=f"cannot resolve {package}@{version}: {exc}")
    return Generated(pin, version, reused=False)


def compile_lock(
    pins: Path, name: str, python: str, index: package_index.Index, exclude_newer: dt.datetime | None = None
) -> str | None:
    """``pins/NAME.txt`` hash-locked from ``pins/NAME.in`` (``uv pip compile --universal --generate-hashes`` for
    ``python`` and up, against ``index``, as of ``exclude_newer`` when given); None, or why it could not be (the
    last lines of uv's stderr; no .txt is left then). Sweeps and `report new` make their pin sets with it."""
    lock = pins / f"{name}.txt"
    proc = subprocess.run(
        [
            shutil.which("uv") or "uv",
            "pip",
            "compile",
            "--quiet",
            "--universal",
            "--python-version",
            python,
            "--generate-hashes",
            *(["--exclude-newer", exclude_newer.strftime("%Y-%m-%dT%H:%M:%SZ")] if exclude_newer is not None else []),
            f"{name}.in",
            "-o",
            f"{name}.txt",
        ],
        cwd=pins,
        env=index.uv_environment(),
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0:
        return None
    lock.unlink(missing_ok=True)
    lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    return " ".join(lines[-3:]) if lines else f"uv pip compile exited {proc.returncode}"


# --- records -> cells --------------------------------------------------------------------------


def swept_claims(finding: Finding, package: str) -> list:
    """The claims about ``package``: all of them, or on a finding about several frameworks its own."""
    return [c for c in finding.claims if c.framework in (None, package)]


def record_version(doc: dict[str, Any], package: str, finding: Finding) -> str | None:
    version = (doc.get("versions") or {}).get(package)
    if version:
        return version
    for pin in finding.pins:
        if pin.name == doc.get("pin"):
            return pinned_version(pin.requirements, package) or pinned_version(
                pin.requirements.with_suffix(".in"), package
            )
    prefix = f"{package}-"
    return doc["pin"][len(prefix) :] if str(doc.get("pin", "")).startswith(prefix) else None


def error_reason(result: dict[str, Any]) -> str:
    """An ERROR run's message with the last line of the target's stderr (the exception that stopped it),
    file paths dropped: "a clean run ended (exit code 1): ImportError: cannot import name 'step' ..."."""
    message = str(result.get("message", ""))
    tail = [line.strip() for line in str(result.get("stderr") or "").splitlines() if line.strip()]
    if not tail:
        return message
    last = re.sub(r"\s*\((/|[A-Za-z]:\\)[^)]*\)", "", tail[-1])
    return f"{message}: {last}"


def cells(finding: Finding, package: str, doc: dict[str, Any]) -> dict[str, flips.Cell]:
    """A record's cell per claimed line (claim.label): the record's error is every line's reason."""
    out = {}
    for claim in swept_claims(finding, package):
        mine = [r for r in doc.get("results") or [] if claim.matches_result(r)]
        if doc.get("error"):
            out[claim.label] = flips.cannot_run(str(doc["error"]))
            continue
        errors = [error_reason(r) for r in mine if r.get("verdict") == "ERROR"]
        reason = errors[0] if errors else ""
        out[claim.label] = flips.cell_of([r.get("verdict", "") for r in mine], claim.timing, reason)
    return out


def measured(finding: Finding, package: str) -> dict[str, tuple[dict[str, flips.Cell], dict[str, Any]]]:
    """Version -> (cells, record) from the newest record of each pin set of ``package``."""
    out: dict[str, tuple[dict[str, flips.Cell], dict[str, Any]]] = {}
    newest: dict[str, dict[str, Any]] = {}
    for _, doc in history.valid_records(finding.root):
        if doc["finding"] == finding.id:
            newest[doc["pin"]] = doc  # oldest first: the newest wins
    ranked = sorted(newest.values(), key=lambda d: (d["date"], d.get("run_id") or ""))
    for doc in ranked:
        if not is_about(doc, package):
            continue
        version = record_version(doc, package, finding)
        if version is None:
            continue
        made = cells(finding, package, doc)
        if not made:
            continue
        # A newer record of the same version wins, unless it is another framework's pin set and the version has
        # a record of the package's own (Pydantic AI's pin sets install DBOS and run its lines too): a column
        # links to a record of its own framework where there is one.
        if version in out and out[version][1].get("framework") == package and doc.get("framework") != package:
            continue
        out[version] = (made, doc)
    return out


def is_about(doc: dict[str, Any], package: str) -> bool:
    """Whether a record measured ``package``: it is named after it, or one of its results ran it. A pin set of
    a finding about several frameworks can install one as another's dependency (Pydantic AI's pin sets install
    DBOS) without running its lines; its version there is no measurement of them."""
    results = doc.get("results") or []
    return doc.get("framework") in (None, package) or any(r.get("framework") == package for r in results)


def read_sweep(finding: Finding) -> dict[str, Any] | None:
    path = finding.directory / SWEEP_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_sweep(
    finding: Finding, package: str, spec: str, versions: list[str], bisect: bool, index: str | None = None
) -> None:
    data = {
        "framework": package,
        "index": index,
        "versions_range": spec,
        "bisect": bisect,
        "listed": dt.datetime.now(dt.timezone.utc).date().isoformat(),
        "releases": versions,
    }
    (finding.directory / SWEEP_FILE).write_text(json.dumps(data, indent=2) + "\n")


# --- the loop ----------------------------------------------------------------------------------


@dataclass
class Step:
    version: str
    pin: PinSet
    error: str | None  # the pin set could not be made


def run(
    finding: Finding,
    *,
    spec: str,
    bisect: bool,
    run_pin: Callable[[PinSet, str | None], None],
    project: package_index.Project,
    versions: list[str],
    say: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
    only_missing: bool = False,
) -> list[flips.Flip]:
    """Sweep ``finding`` over ``versions`` (the releases of ``project``, the index's page of the finding's
    framework, in ``spec``: :func:`listed`); ``run_pin(pin, error)`` runs one pin set through the report
    pipeline (with ``error`` set when the pin set could not be made: a cannot-run record)."""
    package = finding.framework
    say(
        f"sweep {finding.id}: {len(versions)} release(s) of {package} in {spec!r} on {project.index.shown}: "
        + ", ".join(versions)
    )
    write_sweep(finding, package, spec, versions, bisect, project.index.shown)

    def step(version: str) -> None:
        try:
            made = generate(finding, package, version, released=project.upload_time(version), index=project.index)
        except (OSError, SweepError, package_index.IndexProblem) as exc:
            name = pin_name(package, version)
            made = Generated(PinSet(name, finding.directory / "pins" / f"{name}.txt"), version, False, str(exc))
        how = "existing pin set" if made.reused else "generated pin set"
        say(
            f"sweep {finding.id}: {package} {version}: {how} {made.pin.name}"
            + (f" ({made.error})" if made.error else "")
        )
        run_pin(made.pin, made.error)

    if not bisect:
        done = set(_refresh(finding, package)) if only_missing else set()
        for version in versions:
            if version in done:
                say(f"sweep {finding.id}: {package} {version}: has a record, not run again (--only-missing)")
                continue
            step(version)
    else:
        done: set[str] = set()
        while True:
            known = {v: c for v, (c, _) in _refresh(finding, package).items() if v in versions}
            probe = flips.next_probe(versions, known)
            if probe is None:
                break
            if probe in done:  # its run left no usable record: stop rather than loop
                say(f"sweep {finding.id}: {probe} gave no record; stopping the bisection")
                break
            done.add(probe)
            step(probe)
    known = {v: c for v, (c, _) in _refresh(finding, package).items() if v in versions}
    found = flips.flips(versions, known)
    for flip in found:
        say(f"flip: {flip.describe()}")
    if not found:
        say(f"sweep {finding.id}: no flip over the {len(known)} measured release(s)")
    return found


def _refresh(finding: Finding, package: str):
    """Records on disk now (the finding reloaded: a generated pin set joins it)."""
    from plugpull.report.harness.finding import load_finding

    return measured(load_finding(finding.directory, finding.root), package)
