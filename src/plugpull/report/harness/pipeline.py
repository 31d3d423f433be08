"""One report run per (finding, pin set): environment, papermill, nbconvert, dated files.

Everything a run produces is made in a scratch directory first, redacted, and only then moved
to ``findings/<id>/<date>/<pin>-<run id>.{ipynb,html,json}``: a run that is interrupted leaves no
half files, and the scratch directory (kernel cwd, TMPDIR, Jupyter runtime) is always removed.
Records are append-only: a rerun adds files under a new run id and never replaces one (docs/DECISIONS.md).
After the notebook, the witnesses of the claims that cover the record (framework-only scripts,
report/harness/witness.py) run in the same environment and their output goes into the record, with the load
average at the start and end of the job. Before the HTML is rendered, a cell is put at the top of the
executed notebook saying whether the finding reproduced on this version, judged from the record against
finding.toml's claims with each witness beside its line, and listing the earlier runs of the pin set with
theirs (report/kernel/claims.py, report/harness/history.py).
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugpull.report.harness import environment, history, ipynb, witness
from plugpull.report.harness.environment import KernelEnv
from plugpull.report.harness.finding import FINDINGS_DIR, Finding, PinSet
from plugpull.report.kernel import record, versions
from plugpull.results import SCHEMA, redact

#: Parameters plugpull report sets itself; -p cannot override them. ``from_python`` only for an
#: upgrade pair (a pin set with ``from``): the start release's interpreter.
RESERVED = ("pin", "plugpull_commit", "results_path", "from_python")


@dataclass
class Job:
    finding: Finding
    pin: PinSet
    parameters: dict[str, Any]  # finding.toml's defaults with -p overrides


@dataclass
class Outcome:
    job: Job
    error: str | None = None
    files: dict[str, Path] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    status: str | None = None  # the record judged against the finding's claims (claims.overall)
    worker: str | None = None  # the Dask worker that ran it (report/harness/executors.py); None when run here


def plugpull_commit(root: Path) -> str | None:
    """HEAD of the repository the source is installed from; "-dirty" when the tree has changes.

    The report's own products (dated run folders, docs/results.md) do not count: a second
    report before committing the first one's outputs still runs exactly HEAD's code.
    """
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":(exclude,glob)findings/*/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]/**",
                ":(exclude)docs/results.md",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def locked_env(job: Job) -> KernelEnv:
    """The kernel's environment; for an upgrade pair also the start release's (both cached the same way)."""
    start = environment.ensure(job.pin.start, job.finding.root) if job.pin.start is not None else None
    env = environment.ensure(job.pin.requirements, job.finding.root)
    if start is not None:
        env.start_python, env.start_lock_sha256 = start.python, start.lock_sha256
        env.phases = {k: env.phases.get(k, 0.0) + start.phases.get(k, 0.0) for k in {*env.phases, *start.phases}}
        env.reused = env.reused and start.reused
    return env


def run(
    job: Job,
    *,
    commit: str | None,
    make_env: Callable[[Job], KernelEnv] = locked_env,
    out_root: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Outcome:
    """Run ``job`` and place its files under ``out_root`` (default: the finding's repository)."""
    finding, pin = job.finding, job.pin
    out_root = out_root or finding.root
    outcome = Outcome(job)
    began = time.monotonic()
    load_start = load_average()
    started_at = dt.datetime.now(dt.timezone.utc)
    scratch = Path(tempfile.mkdtemp(prefix="plugpull-report-"))
    try:
        env: KernelEnv | None = None
        try:
            progress("environment ...")
            env = make_env(job)
            outcome.phases.update(env.phases)
            progress(
                f"environment {'reused' if env.reused else 'built'} ({sum(env.phases.values()):.1f} s); "
                f"running the notebook ..."
            )
        except Exception as exc:  # no kernel: still an HTML and a JSON saying why
            outcome.error = f"environment: {exc}"
        notebook_out = scratch / f"{pin.name}.ipynb"
        record_out = scratch / "record.json"
        parameters = {**job.parameters, "pin": pin.name, "plugpull_commit": commit, "results_path": str(record_out)}
        if pin.start is not None:
            parameters["from_python"] = str(env.start_python) if env is not None and env.start_python else None
        if env is not None:
            nb_run = ipynb.execute(finding.notebook, notebook_out, env, parameters, scratch)
            outcome.phases.update(nb_run.phases)
            outcome.error = nb_run.error
        else:
            ipynb.placeholder(notebook_out, outcome.error or "")
        _redact_file(notebook_out)

        doc = _load_record(record_out) if outcome.error is None else None
        if doc is None:
            outcome.error = outcome.error or "the notebook finished without writing its run record"
            found = versions.installed_in(env.python, [*finding.frameworks, "plugpull"]) if env else {}
            # With several frameworks, the one this pin set installs names the record.
            framework = next((f for f in finding.frameworks if found.get(f)), finding.framework)
            extra = {}
            if pin.start is not None:  # an upgrade pair: both releases, read inside each environment
                started = versions.installed_in(env.start_python, [framework]) if env and env.start_python else {}
                extra["upgrade"] = {
                    "framework": framework,
                    "from": started.get(framework),
                    "to": found.get(framework),
                }
            doc = record.build(
                finding=finding.id,
                pin=pin.name,
                date=started_at.date().isoformat(),
                started_at=started_at.isoformat(timespec="seconds"),
                finished_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                versions={**found, "plugpull_commit": commit},
                framework=framework,
                parameters={k: v for k, v in parameters.items() if k not in ("pin", "results_path", "from_python")},
                results=[],
                error=outcome.error,
                **extra,
            )
        dest = out_root / FINDINGS_DIR / finding.id / doc["date"]
        dest.mkdir(parents=True, exist_ok=True)
        doc["run_id"] = _free_run_id(dest, pin.name, started_at)
        for result in doc["results"]:
            outcome.verdicts[result["verdict"]] = outcome.verdicts.get(result["verdict"], 0) + 1

        # The witnesses run after the notebook (its kernel is gone) and before the top cell, which shows them.
        witnessed = time.monotonic()
        doc["witnesses"] = witness.run_all(
            finding,
            doc,
            env.python if env is not None else None,
            env.start_python if env is not None and pin.start is not None else None,
            unavailable=outcome.error,
            progress=progress,
        )
        outcome.phases["witnesses"] = time.monotonic() - witnessed
        doc["schema"] = SCHEMA  # the pipeline's fields (load, witnesses) make it this schema whoever wrote the rest

        progress("rendering HTML ...")
        judged = history.judge(finding, doc)
        outcome.status = judged.status
        earlier = history.runs(out_root, finding, pin.name)
        ipynb.put_top_cell(notebook_out, history.top_cell(finding, doc, judged, earlier))
        html_out = scratch / f"{pin.name}.html"
        outcome.phases["nbconvert"] = ipynb.render_html(notebook_out, html_out)
        _redact_file(html_out)

        outcome.phases["scenario"] = float(doc.get("scenario_seconds") or 0.0)
        outcome.phases["total"] = time.monotonic() - began
        doc["load"] = {"cores": os.cpu_count(), "start": load_start, "end": load_average()}
        doc["pipeline"] = {
            "command": "plugpull report",
            "lock": pin.requirements.relative_to(finding.root).as_posix(),
            "lock_sha256": env.lock_sha256 if env else None,
            **(
                {
                    "from_lock": pin.start.relative_to(finding.root).as_posix(),
                    "from_lock_sha256": env.start_lock_sha256 if env else None,
                }
                if pin.start is not None
                else {}
            ),
            "kernel": env.kernel if env else None,
            "environment_reused": env.reused if env else None,
            "phases": {k: round(v, 3) for k, v in outcome.phases.items()},
        }
        doc = redact(doc)
        staged_json = scratch / f"{pin.name}.json"
        record.write(staged_json, doc)
        name = record.stem(doc)
        for suffix, staged in ((".ipynb", notebook_out), (".html", html_out), (".json", staged_json)):
            target = dest / f"{name}{suffix}"
            shutil.copyfile(staged, target.with_name(target.name + ".part"))
            os.replace(target.with_name(target.name + ".part"), target)
            outcome.files[suffix] = target
        return outcome
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (os.getloadavg), rounded; None where the OS has none.

    Timing lines are judged by FAIL rates that move with how busy the machine was: the record keeps it.
    """
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _free_run_id(dest: Path, pin: str, started_at: dt.datetime) -> str:
    """The run id: when the run started, in UTC; a second later while a record of this pin has it
    (two runs can start in one second only when both fail at once), so nothing is ever replaced."""
    when = started_at.astimezone(dt.timezone.utc)
    while True:
        run_id = when.strftime(record.RUN_ID_FORMAT)
        if not any(dest.glob(f"{glob.escape(pin)}-{run_id}.*")):
            return run_id
        when += dt.timedelta(seconds=1)


def _load_record(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _redact_file(path: Path) -> None:
    """Blank secret-looking env values anywhere in the file (a cell could print one; so could a traceback)."""
    text = path.read_text()
    cleaned = redact(text)
    if cleaned != text:
        path.write_text(cleaned)
