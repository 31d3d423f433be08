"""Where the (finding, pin set) jobs of ``plugpull report`` run: here one after another, or on a Dask cluster.

``Local`` runs each job with pipeline.run in this process. ``Dask`` sends each job to a worker of a
Dask distributed scheduler (https://distributed.dask.org/en/stable/client.html): the job carries a
snapshot of what the run needs from this repository (the source of plugpull, the finding's
finding.toml, its notebook, the pin set's lock and the finding's earlier records, which the report's
"earlier runs" cell lists) and the lock's sha256. The worker unpacks it in a scratch folder, checks the
lock against the hash, builds or reuses the pin set's environment from it exactly as a local run does
(environment.ensure: the worker's own cache), runs pipeline.run there, and returns the run's three
files as bytes. The client checks and writes them with report/harness/merge.py (append-only), so the records
and docs/results.md are what a local run writes. The worker's scratch folder is always removed.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import socket
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from plugpull.arguments import UsageError
from plugpull.report.harness import environment, merge, pipeline
from plugpull.report.harness.environment import KernelEnv
from plugpull.report.harness.finding import FINDINGS_DIR, load_all, load_finding

Progress = Callable[[pipeline.Job, str], None]

#: How long the client waits for the scheduler's handshake once its port answers.
CONNECT_TIMEOUT = 30.0
#: How long the port check waits: a host that does not answer in this long is named as unreachable.
PORT_TIMEOUT = 5.0


class Local:
    """Each job in this process, in order (the default)."""

    name = "local"

    def __init__(self, make_env: Callable[[pipeline.Job], KernelEnv] = pipeline.locked_env) -> None:
        self.make_env = make_env

    def outcomes(
        self, jobs: list[pipeline.Job], root: Path, sources: Mapping[str, pipeline.Source], progress: Progress
    ) -> Iterator[pipeline.Outcome]:
        """``sources``: per finding id, where its run's code and finding came from (pipeline.source)."""
        for job in jobs:
            progress(job, "start")
            yield pipeline.run(
                job,
                commit=sources.get(job.finding.id),
                make_env=self.make_env,
                progress=lambda s, j=job: progress(j, s),
            )

    def close(self) -> None:
        pass


class Dask:
    """Each job on a worker of the Dask scheduler at ``scheduler``; outcomes in the order they finish.

    ``environment`` is ``"lock"`` (the pin set's own environment, what a report runs) or ``"current"``
    (the worker's own Python registered as the kernel, no venv: tests and smoke runs, as
    environment.current).
    """

    name = "dask"

    def __init__(self, scheduler: str, environment: str = "lock") -> None:
        if environment not in ("lock", "current"):
            raise ValueError(f"environment must be 'lock' or 'current', not {environment!r}")
        self.scheduler = scheduler
        self.environment = environment
        self.client = connect(scheduler)

    def outcomes(
        self, jobs: list[pipeline.Job], root: Path, sources: Mapping[str, pipeline.Source], progress: Progress
    ) -> Iterator[pipeline.Outcome]:
        from distributed import as_completed

        futures = {}
        for job in jobs:
            spec = job_spec(job, root, sources.get(job.finding.id), self.environment)
            # pure=False: a rerun of the same job is a new run, never a cached result.
            future = self.client.submit(work, spec, pure=False, key=f"plugpull-report-{job.finding.id}-{job.pin.name}")
            futures[future] = job
            progress(job, f"sent to {self.scheduler}")
        try:
            for future in as_completed(futures, loop=self.client.loop):
                job = futures[future]
                try:
                    payload = future.result()
                except Exception as exc:  # the worker died or raised outside the pipeline: no files came back
                    outcome = pipeline.Outcome(job, error=f"dask worker: {type(exc).__name__}: {exc}".strip())
                    yield outcome
                    continue
                yield place(payload, job, root)
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        self.client.close()


def connect(scheduler: str):
    """A ``distributed.Client`` on ``scheduler``; any reason it cannot be is one UsageError line.

    The port is tried first with a plain socket so that a wrong host or port fails in seconds, with the
    system's reason, before distributed's client (which retries until its timeout) is made at all.
    """
    try:
        import distributed
        from distributed.comm import parse_address, parse_host_port
    except ImportError:
        raise UsageError(
            "--executor dask needs the distributed package: uv sync --group dask (or pip install 'plugpull[dask]')"
        ) from None
    try:
        scheme, location = parse_address(scheduler, strict=True)
    except ValueError as exc:
        raise UsageError(f"--scheduler {scheduler!r}: {exc}") from None
    if scheme == "tcp":
        try:
            host, port = parse_host_port(location)
        except ValueError as exc:
            raise UsageError(f"--scheduler {scheduler!r}: {exc}") from None
        try:
            with socket.create_connection((host, port), timeout=PORT_TIMEOUT):
                pass
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: {reason}") from None
    try:
        return distributed.Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(f"cannot connect to the Dask scheduler at {scheduler}: {first}") from None


def job_spec(job: pipeline.Job, root: Path, commit: pipeline.Source | str | None, kind: str) -> dict[str, Any]:
    """What a worker needs for ``job``: plain data (picklable), the repository part as a tar.gz."""
    return {
        "finding": job.finding.id,
        "pin": job.pin.name,
        "parameters": job.parameters,
        "commit": commit,
        "environment": kind,
        "lock_sha256": hashlib.sha256(job.pin.requirements.read_bytes()).hexdigest(),
        "snapshot": snapshot(job, root),
    }


def snapshot(job: pipeline.Job, root: Path) -> bytes:
    """A tar.gz of what one run reads from the repository (paths relative to ``root``)."""
    finding = job.finding
    wanted: list[Path] = [root / "pyproject.toml", finding.notebook, finding.directory / "finding.toml"]
    wanted += [root / name for name in ("README.md", "LICENSE") if (root / name).is_file()]
    wanted.append(job.pin.requirements)
    wanted += finding.staged()  # a user's agent (finding.toml agent = ...)
    # An npm pin set: its package.json and lock, and the Node client staged beside the agent.
    if job.pin.npm is not None:
        from plugpull.report.harness import npm

        wanted += [job.pin.npm / "package.json", job.pin.npm / "package-lock.json"]
        wanted += [root / npm.CLIENT_SOURCE / name for name in npm.CLIENT_FILES]
    wanted += sorted(finding.directory.glob("*/*.json"))  # earlier records: the report lists them
    src = root / "src"
    if src.is_dir():
        wanted += sorted(p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return pack(root, wanted)


def pack(root: Path, paths: list[Path]) -> bytes:
    """A tar.gz of the files among ``paths`` (each once, named relative to ``root``): a job's snapshot."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in dict.fromkeys(paths):
            if path.is_file():
                tar.add(path, arcname=path.resolve().relative_to(root.resolve()).as_posix(), recursive=False)
    return buffer.getvalue()


@contextmanager
def unpacked(snapshot: bytes, prefix: str) -> Iterator[Path]:
    """A scratch folder (named ``prefix``..., in the worker's own local directory when there is one) with
    ``snapshot`` unpacked in its ``repo``; always removed afterwards.

    In the worker's directory because a worker killed mid-job (its nanny kills it on close, or the machine's OOM
    killer) never reaches the removal, and distributed removes a dead worker's directory when the next worker
    starts (distributed/diskutils.py, WorkSpace).
    """
    scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=_worker_directory()))
    try:
        with tarfile.open(fileobj=io.BytesIO(snapshot), mode="r:gz") as tar:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4: no paths outside root
                tar.extractall(scratch / "repo", filter="data")
            else:
                tar.extractall(scratch / "repo")
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# A worker process runs one job at a time: execution.kernel_environ edits os.environ for the kernel it starts.
_ONE_AT_A_TIME = threading.Lock()


def work(spec: dict[str, Any]) -> dict[str, Any]:
    """On a worker: unpack the snapshot, check the lock's hash, run the job; the run's files as bytes."""
    with _ONE_AT_A_TIME, unpacked(spec["snapshot"], "plugpull-worker-") as scratch:
        root = scratch / "repo"
        finding = load_finding(root / FINDINGS_DIR / spec["finding"], root)
        pin = finding.pin(spec["pin"])
        got = hashlib.sha256(pin.requirements.read_bytes()).hexdigest()
        if got != spec["lock_sha256"]:
            raise RuntimeError(f"lock {pin.requirements.name} arrived with sha256 {got}, not {spec['lock_sha256']}")
        job = pipeline.Job(finding, pin, spec["parameters"])
        if spec["environment"] == "current":
            prefix = scratch / "kernels"
            make_env: Callable[[pipeline.Job], KernelEnv] = lambda _job: environment.current(prefix)  # noqa: E731
        else:
            make_env = pipeline.locked_env
        outcome = pipeline.run(job, commit=spec["commit"], make_env=make_env, out_root=root)
        return {
            "finding": finding.id,
            "pin": pin.name,
            "error": outcome.error,
            "status": outcome.status,
            "verdicts": outcome.verdicts,
            "phases": outcome.phases,
            "files": {suffix: path.read_bytes() for suffix, path in outcome.files.items()},
            "worker": _worker_address(),
        }


def _worker_directory() -> str | None:
    try:
        from distributed import get_worker

        return get_worker().local_directory
    except (ImportError, ValueError):
        return None


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):  # called outside a worker (a test calling work() directly)
        return f"{socket.gethostname()} pid {os.getpid()}"


def place(payload: dict[str, Any], job: pipeline.Job, root: Path) -> pipeline.Outcome:
    """Write what a worker returned into ``root`` (append-only, through report/harness/merge.py) as an Outcome."""
    import json

    outcome = pipeline.Outcome(
        job,
        error=payload["error"],
        verdicts=payload["verdicts"],
        phases=payload["phases"],
        status=payload["status"],
        worker=payload["worker"],
    )
    files = payload["files"]
    if ".json" not in files:
        outcome.error = outcome.error or "the worker returned no record"
        return outcome
    run = merge.Incoming(json.loads(files[".json"]), dict(files))
    try:
        new = merge.check([run], root, load_all(root))
    except merge.MergeError as exc:
        outcome.error = f"not written: {exc}"
        return outcome
    merge.place(new, root)
    target = run.target(root)
    outcome.files = {suffix: target.with_name(target.name + suffix) for suffix in merge.SUFFIXES}
    return outcome
