"""``plugpull report recall``: how many durability bugs planted in the frameworks' own code plugpull catches.

A **mutant** is ``findings/recall/mutants/<framework>/<name>.patch``: a unified diff against the installed
release's files, paths relative to site-packages (``a/langgraph/...``, applied with ``patch -p1``), whose header
(the lines before the first ``---``, which ``patch`` ignores) says ``why:`` (the durability bug it plants and
where a real release had or could have it) and ``class:`` (the bug class, for the per-class figure). Beside it,
``<name>.check.py`` is its framework-only check (no plugpull): it exits 0 when the framework behaves as its
docs promise and 1 when the planted bug shows; a mutant counts only once its check passes on the unpatched
release and fails on the patched one (:func:`verify`).

Each environment is a fresh venv (``uv venv``) holding the framework's distributions at the versions of this
repository's uv.lock (exported as constraints) and plugpull from the repository (``--no-deps``), then the patch,
applied with ``patch -p1 --forward --batch --fuzz=0`` (no hunk moved onto other context) after a ``--dry-run`` that must apply every hunk: a hunk that does
not apply is a one-line error, never a quietly unpatched release. Environments are cached under
``<cache>/recall/<key>`` where ``key`` hashes the constraints, the framework's requirements, the patch's bytes and
the Python, so editing a patch makes a new one.

A run (:func:`run_lines`) is the venv's ``plugpull --target T --json`` for each built-in target of the framework,
with its default scenario and points, inside the environment: the unpatched release's and each mutant's. A mutant
is **caught** when a line that PASSes unpatched FAILs patched (docs/DECISIONS.md, "Recall": an ERROR is not a
catch, since an ERROR is never evidence either way). Specificity: the unpatched release is run twice, and a line
that PASSes in one and FAILs in the other is a false alarm (timing), counted and shown.

Where the runs go (``--executor``, as ``plugpull report run``'s): ``local`` runs each :class:`Job` here, one after
another; ``dask`` sends each to a worker of a Dask distributed scheduler (docs/report.md, "Distributed"). A job is
one environment's run: an unpatched run of a framework, or a mutant (its environment, its check on both releases,
its lines). It carries a snapshot of what it reads from this repository (pyproject.toml, uv.lock, src/, the mutant's
folder) and uv.lock's constraints as the client exported them; the worker builds or reuses the environments in its
own cache exactly as a local run does (:func:`ensure`) and returns the lines. The client assembles the record, in
plan order whatever order the jobs finish in, so a record does not say which executor ran it except in
``executor``.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugpull.errors import RecallError, UsageError
from plugpull.report.harness import environment, package_index, recall_page
from plugpull.report.harness.recall_lines import caught, errors_of, flips
from plugpull.report.harness.recall_page import RECORDS

LAYOUT = "1"
MUTANTS = Path("findings") / "recall" / "mutants"

#: framework -> (the requirements its built-in targets need, the built-in targets run). The versions come from
#: uv.lock; the targets are the framework's built-ins that run offline with no server (no PostgreSQL).
FRAMEWORKS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "langgraph": (
        ("langgraph", "langgraph-checkpoint-sqlite"),
        ("langgraph", "langgraph-approval", "langgraph-functional", "langgraph-siblings", "langgraph-stream"),
    ),
    "openai-agents": (
        ("openai-agents",),
        ("openai-agents", "openai-agents-approval", "openai-agents-siblings", "openai-agents-stream"),
    ),
    # 1.20.0, not uv.lock's 1.18.0: the first release that keys a step's saved result by its arguments
    # (agent-framework#8292 fixed), so the call-order replay can be planted back into a fixed release.
    "agent-framework": (("agent-framework-core==1.20.0",), ("agent-framework",)),
    "google-adk": (("google-adk[db]",), ("google-adk", "google-adk-approval", "google-adk-stream")),
    "dbos": (("dbos",), ("dbos",)),
    "pydantic-ai": (("pydantic-ai-slim[dbos]",), ("pydantic-ai", "pydantic-ai-approval", "pydantic-ai-stream")),
}


@dataclass(frozen=True)
class Mutant:
    framework: str
    name: str
    patch: Path
    why: str
    bug_class: str

    @property
    def id(self) -> str:
        return f"{self.framework}/{self.name}"

    @property
    def check(self) -> Path:
        return self.patch.with_suffix(".check.py")


def _header(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("--- "):
            break
        m = re.match(r"#?\s*(why|class):\s*(.+)", line)
        if m:
            fields[m.group(1)] = (fields.get(m.group(1), "") + " " + m.group(2).strip()).strip()
    return fields


def load_mutants(root: Path, only: list[str] | None = None) -> list[Mutant]:
    """Every mutant under findings/recall/mutants (or the ``only`` ids, framework/name), in path order."""
    found: list[Mutant] = []
    for patch in sorted((root / MUTANTS).glob("*/*.patch")):
        framework, name = patch.parent.name, patch.stem
        if framework not in FRAMEWORKS:
            raise RecallError(
                f"mutant {framework}/{name}: unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}"
            )
        head = _header(patch.read_text())
        if "why" not in head or "class" not in head:
            raise RecallError(f"mutant {framework}/{name}: its header needs a 'why:' and a 'class:' line")
        found.append(Mutant(framework, name, patch, head["why"], head["class"]))
    if only:
        known = {m.id for m in found}
        unknown = [m for m in only if m not in known]
        if unknown:
            raise RecallError(f"unknown mutant {unknown[0]!r}; known: {', '.join(sorted(known))}")
        found = [m for m in found if m.id in only]
    return found


# --- environments ---------------------------------------------------------------------------------------------


def constraints(root: Path) -> bytes:
    """uv.lock's versions as a requirements file (every group this repository's frameworks run in)."""
    proc = subprocess.run(
        [
            environment.uv_binary(),
            "export",
            "--frozen",
            "--no-hashes",
            "--no-emit-project",
            "--no-header",
            "--group",
            "more-frameworks",
            "--format",
            "requirements-txt",
        ],
        cwd=root,
        capture_output=True,
    )
    if proc.returncode != 0:
        raise RecallError(f"uv export failed: {proc.stderr.decode().strip().splitlines()[-1:]}")
    return proc.stdout


def _without_pinned(pins: bytes, requirements: tuple[str, ...]) -> bytes:
    """uv.lock's constraints less the distributions a requirement pins itself (``dist==version``)."""
    pinned = {package_index.normalize(r.split("==")[0].split("[")[0]) for r in requirements if "==" in r}
    lines = pins.decode().splitlines(keepends=True)
    return "".join(
        ln for ln in lines if package_index.normalize(re.split(r"[=<>;\[ ]", ln, maxsplit=1)[0]) not in pinned
    ).encode()


def env_key(framework: str, pins: bytes, patch: bytes) -> str:
    digest = hashlib.sha256(pins)
    for part in (*FRAMEWORKS[framework][0], framework, platform.python_version(), LAYOUT):
        digest.update(b"\0" + part.encode())
    digest.update(b"\0patch\0" + patch)
    return digest.hexdigest()[:16]


def _run(argv: list[str], what: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-4:]
        raise RecallError(f"{what} failed (exit {proc.returncode}): " + " | ".join(tail))
    return proc


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def apply_patch(patch: Path, site: Path) -> list[str]:
    """Apply ``patch`` into ``site`` (every hunk, or nothing and RecallError); the files it changed."""
    argv = [
        "patch",
        "-p1",
        "--forward",
        "--batch",
        "--fuzz=0",
        "--no-backup-if-mismatch",
        "-d",
        str(site),
        "-i",
        str(patch),
    ]
    dry = subprocess.run([*argv, "--dry-run"], capture_output=True, text=True)
    if dry.returncode != 0:
        why = next((ln for ln in dry.stdout.splitlines() if "FAILED" in ln or "can't find" in ln), dry.stdout.strip())
        raise RecallError(f"mutant {patch.parent.name}/{patch.stem} does not apply: {why.strip()}")
    _run(argv, f"patch {patch.name}")
    return re.findall(r"^\+\+\+ b/(\S+)", patch.read_text(), flags=re.M)


def ensure(root: Path, framework: str, mutant: Mutant | None, pins: bytes) -> Path:
    """The Python of the (cached) environment of ``framework``, patched with ``mutant`` when given."""
    uv = environment.uv_binary()
    patch = mutant.patch.read_bytes() if mutant else b""
    home = environment.cache_dir() / "recall" / env_key(framework, pins, patch)
    home.mkdir(parents=True, exist_ok=True)
    venv = home / "venv"
    python = venv / "bin" / "python"
    with open(home / "lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not (home / "ready").exists():
            shutil.rmtree(venv, ignore_errors=True)
            try:
                (home / "constraints.txt").write_bytes(_without_pinned(pins, FRAMEWORKS[framework][0]))
                _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], "uv venv")
                uv_env = package_index.configured(start=root).uv_environment()
                _run(
                    [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", str(python)]
                    + ["-c", str(home / "constraints.txt"), "rich", *FRAMEWORKS[framework][0]],
                    f"uv pip install {framework}",
                    env=uv_env,
                )
                if mutant is not None:
                    site = site_packages(venv)
                    changed = apply_patch(mutant.patch, site)
                    # The wheel's bytecode was compiled before the patch: recompile the patched files.
                    _run([str(python), "-m", "compileall", "-q", "-f", *(str(site / f) for f in changed)], "compileall")
            except BaseException:
                shutil.rmtree(venv, ignore_errors=True)
                raise
            (home / "ready").write_text(mutant.id if mutant else f"{framework} unpatched")
        source = environment.source_digest(root)
        stamp = home / "plugpull-source"
        if not (stamp.is_file() and stamp.read_text() == source):
            stamp.unlink(missing_ok=True)
            _run(
                [uv, "pip", "install", "--quiet", "--no-deps", "--reinstall-package", "plugpull"]
                + ["--refresh-package", "plugpull", "--compile-bytecode", "--python", str(python), str(root)],
                "installing plugpull",
            )
            stamp.write_text(source)
    return python


# --- the framework-only checks --------------------------------------------------------------------------------


@dataclass
class Check:
    """A mutant's own check run in one environment: exit 0 (behaves as promised), 1 (the bug shows), else broken."""

    code: int
    tail: str


def run_check(mutant: Mutant, python: Path, timeout: float = 300) -> Check:

    with tempfile.TemporaryDirectory(prefix="plugpull-recall-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGPULL_")}
        try:
            proc = subprocess.run(
                [str(python), str(mutant.check)], cwd=tmp, capture_output=True, text=True, timeout=timeout, env=env
            )
        except subprocess.TimeoutExpired:
            return Check(-1, f"timed out after {timeout:.0f} s")
    # What the check prints last on stdout is its finding; stderr holds the framework's warnings.
    lines = proc.stdout.strip().splitlines() or proc.stderr.strip().splitlines()
    return Check(proc.returncode, lines[-1] if lines else "")


def verify(mutant: Mutant, clean: Path, patched: Path) -> dict[str, Any]:
    """The mutant's check on both releases; ``verified`` when it passes unpatched and fails patched."""
    if not mutant.check.is_file():
        return {"verified": False, "why": f"no check {mutant.check.name}"}
    before, after = run_check(mutant, clean), run_check(mutant, patched)
    return {
        "verified": before.code == 0 and after.code == 1,
        "unpatched": {"exit": before.code, "says": before.tail},
        "patched": {"exit": after.code, "says": after.tail},
    }


# --- the lines ------------------------------------------------------------------------------------------------


def run_lines(python: Path, targets: tuple[str, ...], jobs: int, timeout: float = 3600) -> list[dict[str, Any]]:
    """Every line of ``targets`` (default scenario and points) run by the plugpull inside ``python``'s venv."""
    argv = [str(python.parent / "plugpull"), "--json", "--fork-server", "-j", str(jobs)]
    for target in targets:
        argv += ["--target", target]
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        tail = proc.stderr.strip().splitlines()[-3:]
        raise RecallError(
            f"plugpull in {python.parent.parent} printed no JSON (exit {proc.returncode}): {tail}"
        ) from exc
    return [
        {
            "line": line_key(r),
            "verdict": r["verdict"],
            "message": scrub(r["message"][:300]),
            "moot": bool(r.get("evidence", {}).get("moot")),
            "version": r.get("version"),
        }
        for r in out["results"]
    ]


def scrub(text: str) -> str:
    """``text`` without this machine's paths (a record goes to other machines)."""
    from plugpull.report.harness.machine_paths import MACHINE_PATH

    return re.sub(f"(?:{MACHINE_PATH.pattern})\\S*", "<path>", text)


def line_key(result: dict[str, Any]) -> str:
    """A line's name, the same in every environment of one release: its JUnit class and case name
    (plugpull.junit: the scenario, the target, the point with the held call, the options)."""
    from plugpull import junit
    from plugpull.results import Result

    parsed = Result.from_dict(result)
    return f"{junit.class_name(parsed)} {junit.case_name(parsed)}"


# --- a recall run ---------------------------------------------------------------------------------------------


def add_arguments(parser: Any) -> None:
    """The options of ``plugpull report recall`` (wired in report/harness/cli.py)."""
    parser.add_argument("--mutant", action="append", default=[], metavar="FRAMEWORK/NAME", help="only this mutant")
    parser.add_argument(
        "--framework", action="append", default=[], metavar="NAME", help="only this framework's mutants"
    )
    parser.add_argument("-j", "--jobs", type=int, default=2, metavar="N", help="lines at once in each plugpull run")
    parser.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="where the environments' runs go: local (default), one after another here; dask, one per task on the "
        "workers of --scheduler (each builds its environments in its own cache)",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --executor dask: the scheduler, e.g. tcp://HOST:8786"
    )
    parser.add_argument(
        "--verify-only",
        action="store_true",
        help="build each mutant's environment and run its framework-only check on both releases; no plugpull line, "
        "no record (exit 1 when a mutant is not verified)",
    )
    parser.add_argument(
        "--page-only", action="store_true", help="rewrite docs/finding-recall.md from the records; run nothing"
    )


def say(text: str) -> None:
    print(f"plugpull report recall: {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Job:
    """One environment's run: the framework's unpatched release (run ``n`` of 2), or ``mutant``'s patched one."""

    framework: str
    mutant: Mutant | None = None
    n: int = 0

    @property
    def name(self) -> str:
        return self.mutant.id if self.mutant else f"{self.framework} unpatched run {self.n}"


def plan(mutants: list[Mutant]) -> list[Job]:
    """Per framework of ``mutants`` (in their order): its two unpatched runs, then each of its mutants."""
    jobs: list[Job] = []
    for framework in dict.fromkeys(m.framework for m in mutants):
        jobs += [Job(framework, n=1), Job(framework, n=2)]
        jobs += [Job(framework, m) for m in mutants if m.framework == framework]
    return jobs


def run_job(root: Path, job: Job, pins: bytes, jobs: int) -> dict[str, Any]:
    """``job`` here: its environments built or reused (:func:`ensure`), a mutant's check run on both releases, then
    its lines; ``{"lines", "seconds"}`` and, for a mutant, ``"check"``."""
    targets = FRAMEWORKS[job.framework][1]
    clean = ensure(root, job.framework, None, pins)
    out: dict[str, Any] = {}
    python = clean
    if job.mutant is not None:
        python = ensure(root, job.framework, job.mutant, pins)
        out["check"] = verify(job.mutant, clean, python)
    began = time.monotonic()
    out["lines"] = run_lines(python, targets, jobs)
    out["seconds"] = round(time.monotonic() - began, 1)
    return out


class Local:
    """Each job here, in plan order (the default)."""

    name = "local"

    def outcomes(self, jobs: list[Job], root: Path, pins: bytes, lines_at_once: int) -> Iterator[tuple[Job, dict]]:
        for job in jobs:
            yield job, run_job(root, job, pins, lines_at_once)

    def close(self) -> None:
        pass


class Dask:
    """Each job on a worker of the Dask scheduler at ``scheduler`` (executors.connect); outcomes as they finish.

    A job that raises on its worker (a patch that does not apply, plugpull printing no JSON) is RecallError here,
    with the worker's reason: the run stops, as a local one does, and no record is written.
    """

    name = "dask"

    def __init__(self, scheduler: str) -> None:
        from plugpull.report.harness import executors

        self.scheduler = scheduler
        self.client = executors.connect(scheduler)

    def outcomes(self, jobs: list[Job], root: Path, pins: bytes, lines_at_once: int) -> Iterator[tuple[Job, dict]]:
        from distributed import as_completed

        futures = {}
        for job in jobs:
            spec = job_spec(job, root, pins, lines_at_once)
            # pure=False: a rerun of the same job is a new run, never a cached result.
            key = f"plugpull-recall-{job.name.replace('/', '-').replace(' ', '-')}"
            futures[self.client.submit(work, spec, pure=False, key=key)] = job
            say(f"{job.name}: sent to {self.scheduler}")
        try:
            for future in as_completed(futures, loop=self.client.loop):
                job = futures[future]
                try:
                    payload = future.result()
                except RecallError as exc:
                    raise RecallError(f"{job.name} on a dask worker: {exc}") from None
                except Exception as exc:  # the worker died, or raised outside recall's own errors
                    raise RecallError(f"{job.name} on a dask worker: {type(exc).__name__}: {exc}".strip()) from None
                yield job, payload
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        self.client.close()


def job_spec(job: Job, root: Path, pins: bytes, lines_at_once: int) -> dict[str, Any]:
    """What a worker needs for ``job``: plain data (picklable), the repository part as a tar.gz."""
    return {
        "framework": job.framework,
        "mutant": job.mutant.id if job.mutant else None,
        "n": job.n,
        "pins": pins,
        "jobs": lines_at_once,
        "snapshot": snapshot(root, job),
    }


def snapshot(root: Path, job: Job) -> bytes:
    """A tar.gz of what one job reads from the repository: what installing plugpull copies (pyproject.toml, README,
    LICENSE, src/), uv.lock, and the mutant's folder (its patch, its check and the helpers the check imports)."""
    from plugpull.report.harness.executors import pack

    wanted = [root / name for name in ("pyproject.toml", "uv.lock", "README.md", "LICENSE")]
    wanted += sorted(p for p in (root / "src").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    if job.mutant is not None:
        wanted += sorted(p for p in job.mutant.patch.parent.iterdir() if p.is_file())
    return pack(root, wanted)


def work(spec: dict[str, Any]) -> dict[str, Any]:
    """On a worker: unpack the snapshot in a scratch folder, run the job there (:func:`run_job`), return its
    outcome with the worker's address; the scratch folder is always removed."""
    from plugpull.report.harness import executors

    with executors.unpacked(spec["snapshot"], "plugpull-recall-worker-") as scratch:
        root = scratch / "repo"
        mutant = load_mutants(root, [spec["mutant"]])[0] if spec["mutant"] else None
        out = run_job(root, Job(spec["framework"], mutant, spec["n"]), spec["pins"], spec["jobs"])
        return {**out, "worker": executors._worker_address()}


def run(root: Path, mutants: list[Mutant], jobs: int, runner: Local | Dask | None = None) -> dict[str, Any]:
    """Build, verify and run every mutant of ``mutants`` beside its framework's unpatched release (run twice), each
    environment's run on ``runner`` (default: here, in order); the record, in plan order."""
    runner = runner or Local()
    pins = constraints(root)
    record: dict[str, Any] = {
        "schema": 1,
        "started": _now(),
        **source_state(root),
        "executor": runner.name,
        "frameworks": {},
        "mutants": [],
    }
    todo = plan(mutants)
    done: dict[Job, dict[str, Any]] = {}
    for job, outcome in runner.outcomes(todo, root, pins, jobs):
        done[job] = outcome
        said = f"{_tally(outcome['lines'])} ({outcome['seconds']:.0f} s" + (
            f", on {outcome['worker']})" if outcome.get("worker") else ")"
        )
        say(f"{job.name}: {said}")
    for framework in dict.fromkeys(m.framework for m in mutants):
        runs = [done[Job(framework, n=n)]["lines"] for n in (1, 2)]
        record["frameworks"][framework] = {
            "targets": list(FRAMEWORKS[framework][1]),
            "version": _version(runs[0]),
            "unpatched": runs,
            # A line that PASSes in one unpatched run and FAILs in the other: a catch there would be timing.
            "false_alarms": sorted(set(flips(runs[0], runs[1])) | set(flips(runs[1], runs[0]))),
        }
        for mutant in [m for m in mutants if m.framework == framework]:
            outcome = done[Job(framework, mutant)]
            caught_by = caught(runs, outcome["lines"])
            say(f"{mutant.id}: {len(caught_by)} line(s) flip to FAIL")
            record["mutants"].append(
                {
                    "id": mutant.id,
                    "framework": framework,
                    "class": mutant.bug_class,
                    "why": mutant.why,
                    "patch_sha256": hashlib.sha256(mutant.patch.read_bytes()).hexdigest(),
                    "check": outcome["check"],
                    "lines": outcome["lines"],
                    "caught_by": caught_by,
                    "errors": errors_of(runs[0], outcome["lines"]),
                }
            )
    record["finished"] = _now()
    return record


def source_state(root: Path) -> dict[str, Any]:
    """The commit the run's plugpull and mutants came from, and whether either had uncommitted changes."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--", "src", "pyproject.toml", str(MUTANTS)],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {"commit": head or None, "uncommitted": bool(changed)}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _tally(lines: list[dict[str, Any]]) -> str:
    counts = Counter(line["verdict"] for line in lines)
    return ", ".join(f"{counts[v]} {v}" for v in ("PASS", "FAIL", "ERROR") if counts[v])


def _version(lines: list[dict[str, Any]]) -> str | None:
    return next((line["version"] for line in lines if line.get("version")), None)


def write_record(root: Path, record: dict[str, Any]) -> Path:
    day = record["started"][:10]
    run_id = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:8]
    path = root / RECORDS / day / f"{run_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def verify_all(root: Path, mutants: list[Mutant]) -> int:
    """Each mutant applied and its check run on both releases, one line each; 1 when any is not verified."""
    pins = constraints(root)
    bad = 0
    for mutant in mutants:
        result = verify(
            mutant, ensure(root, mutant.framework, None, pins), ensure(root, mutant.framework, mutant, pins)
        )
        bad += not result["verified"]
        if "unpatched" in result:
            said = f"unpatched exit {result['unpatched']['exit']}, patched exit {result['patched']['exit']}: "
            said += result["patched"]["says"]
        else:
            said = result["why"]
        print(f"{'verified' if result['verified'] else 'NOT VERIFIED'}  {mutant.id}  {said}", flush=True)
    return 1 if bad else 0


def runner_of(args: Any) -> Local | Dask:
    """The executor ``--executor`` / ``--scheduler`` ask for; UsageError (one line, exit 2) for a scheduler that
    cannot be reached or a pair that does not go together, as ``plugpull report run`` says it."""
    if args.scheduler and args.executor != "dask":
        raise UsageError("--scheduler goes with --executor dask")
    if args.executor == "dask" and not args.scheduler:
        raise UsageError("--executor dask needs --scheduler ADDRESS (e.g. tcp://HOST:8786)")
    return Dask(args.scheduler) if args.executor == "dask" else Local()


def main(args: Any, root: Path) -> int:
    if not args.page_only:
        if args.jobs < 1:
            raise RecallError(f"-j must be at least 1, not {args.jobs}")
        unknown = [f for f in args.framework if f not in FRAMEWORKS]
        if unknown:
            raise RecallError(f"unknown framework {unknown[0]!r}; known: {', '.join(FRAMEWORKS)}")
        mutants = [m for m in load_mutants(root, args.mutant) if not args.framework or m.framework in args.framework]
        if not mutants:
            raise RecallError("no mutant to run under findings/recall/mutants")
        if args.verify_only:
            if args.executor != "local":
                raise RecallError("--verify-only runs the checks here: leave out --executor dask")
            return verify_all(root, mutants)
        runner = runner_of(args)
        try:
            path = write_record(root, run(root, mutants, args.jobs, runner))
        finally:
            runner.close()
        say(f"wrote {path.relative_to(root)}")
    page = recall_page.write(root)
    say(f"wrote {page.relative_to(root)}")
    return 0
