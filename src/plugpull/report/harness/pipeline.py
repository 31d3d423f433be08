"""One report run per (finding, pin set): environment, papermill, nbconvert, dated files.

Everything a run produces is made in a scratch directory first, redacted, and only then moved
to ``findings/<id>/<date>/<pin>-<run id>.{ipynb,html,json}``: a run that is interrupted leaves no
half files, and the scratch directory (kernel cwd, TMPDIR, Jupyter runtime) is always removed.
Records are append-only: a rerun adds files under a new run id and never replaces one
(docs/DECISIONS.md, "Findings, records, pin sets and pages").
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
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugpull.report.harness import environment, history, ipynb, machine_paths, npm, witness
from plugpull.report.harness.environment import KernelEnv
from plugpull.report.harness.finding import FINDINGS_DIR, Finding, PinSet
from plugpull.report.kernel import claims, record, versions
from plugpull.report.kernel.record import AGENT_FOLDER
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


#: What a run's own products are (a rerun before committing the last run's outputs still runs the same inputs):
#: the dated record folders, and the pages generated from records.
PRODUCTS = (
    ":(exclude,glob)findings/*/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]/**",
    ":(exclude,glob)findings/*/summary.html",
    ":(exclude,glob)findings/*/bundles/**",
    ":(exclude)docs/results.md",
    ":(exclude)docs/results-lines.csv",
)
#: Paths a record lists as uncommitted, at most (then "and N more").
LISTED = 20


@dataclass(frozen=True)
class Source:
    """Where a run's code and finding came from: a commit that holds them exactly, or files no commit holds.

    ``commit`` is HEAD (None outside a git checkout). ``uncommitted`` lists, relative to the repository, the
    inputs of the run that differ from HEAD: modified, staged, deleted or untracked (an untracked file counts: a
    new finding's agent is one) under ``src/``, ``pyproject.toml``, the finding's folder (not its records, summary
    or bundles), its notebook and the witness scripts it shares from other findings. Only a run with none can be
    reproduced by checking out ``commit``.
    """

    commit: str | None
    uncommitted: tuple[str, ...] = ()

    @property
    def case(self) -> str:
        """``commit`` (the commit holds what ran), ``uncommitted`` (some input is not in it) or ``unknown`` (no git)."""
        if self.commit is None:
            return "unknown"
        return "uncommitted" if self.uncommitted else "commit"

    @property
    def plugpull_commit(self) -> str | None:
        """The notebook's ``plugpull_commit`` parameter: HEAD, with ``-dirty`` when it does not hold what ran."""
        if self.commit is None:
            return None
        return self.commit + ("-dirty" if self.uncommitted else "")

    def to_json(self) -> dict[str, Any]:
        """The record's ``source`` (docs/json-schema.md)."""
        listed = list(self.uncommitted[:LISTED])
        if len(self.uncommitted) > LISTED:
            listed.append(f"and {len(self.uncommitted) - LISTED} more")
        return {"case": self.case, "commit": self.commit, "uncommitted": listed}

    @classmethod
    def of(cls, value: Source | str | None) -> Source:
        """A Source as given; a commit string is one that holds what ran (``-dirty``: one that does not)."""
        if isinstance(value, Source) or value is None:
            return value if value is not None else cls(None)
        if value.endswith("-dirty"):
            return cls(value[: -len("-dirty")], ("(files not listed)",))
        return cls(value)


def inputs(finding: Finding) -> list[str]:
    """What a run of ``finding`` reads from the repository, as git pathspecs relative to its root."""
    root = finding.root
    wanted = ["src", "pyproject.toml", finding.directory.relative_to(root).as_posix()]
    if finding.notebook.is_relative_to(root):
        wanted.append(finding.notebook.relative_to(root).as_posix())
    # An agent outside the finding's folder (an example it runs as it is) and the files staged with it.
    for path in finding.staged():
        if path.is_relative_to(root.resolve()) and not path.is_relative_to(finding.directory.resolve()):
            wanted.append(path.relative_to(root.resolve()).as_posix())
    if any(pin.npm is not None for pin in finding.pins):
        wanted += [f"{npm.CLIENT_SOURCE}/{name}" for name in npm.CLIENT_FILES]
    for claim in finding.claims:
        for expectation in claim.expect:
            witness = expectation.support.witness
            if witness is not None:
                script = (finding.directory / witness.script).resolve()
                if script.is_relative_to(root.resolve()) and not script.is_relative_to(finding.directory.resolve()):
                    wanted.append(script.relative_to(root.resolve()).as_posix())
    return list(dict.fromkeys(wanted))


def source(root: Path, finding: Finding | None = None) -> Source:
    """The run's :class:`Source`: HEAD and the inputs of ``finding`` (every file when None) that differ from it."""
    git = ["git", "-C", str(root)]
    try:
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        status = subprocess.run(
            [*git, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--"]
            + (inputs(finding) if finding is not None else ["."])
            + list(PRODUCTS),
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return Source(None)
    changed = sorted({entry[3:] for entry in status.stdout.split("\0") if len(entry) > 3})
    return Source(head.stdout.strip(), tuple(changed))


def plugpull_commit(root: Path) -> str | None:
    """HEAD of the repository the source is installed from; "-dirty" when any input of a run differs from it
    (tracked or untracked). The report's own products (dated run folders, generated pages) do not count."""
    return source(root).plugpull_commit


def repository_url(root: Path) -> str | None:
    """The public repository: ``[project.urls]`` ``Repository`` (or ``Source``) in the root's pyproject.toml."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        urls = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {}).get("urls", {})
    except (OSError, ValueError):
        return None
    found = {str(k).lower(): v for k, v in urls.items() if isinstance(v, str) and v.strip()}
    return found.get("repository") or found.get("source")


def reproduce(
    finding: Finding,
    pin: PinSet,
    doc: dict[str, Any],
    judged: history.Judged,
    src: Source,
    parameters: dict[str, Any],
) -> str:
    """The record's "how to reproduce": commands that run as printed.

    From a commit that holds what ran (:class:`Source`): a clone of the public repository (``[project.urls]``), a
    checkout of that commit and the ``plugpull report`` command, with ``-p`` for each parameter that differs from
    finding.toml's. From uncommitted files no checkout reproduces the run, so none is named: the text says so,
    lists them, and gives instead the command of the bundle of each bug witness that failed here
    (report/harness/bundle.py), which runs with the framework alone, no plugpull and no checkout.
    """
    from plugpull.report.harness import bundle

    overrides = {
        k: v
        for k, v in parameters.items()
        if k != "line_repeats" and (k not in finding.parameters or finding.parameters[k] != v)
    }
    command = f"uv run plugpull report --finding {finding.id} --pin {pin.name}" + "".join(
        f" -p {k} {shlex.quote(v if isinstance(v, str) else json.dumps(v))}" for k, v in overrides.items()
    )
    if src.case == "commit":
        url = repository_url(finding.root)
        first = f"git clone {shlex.quote(url)} plugpull && cd plugpull" if url else "# in a checkout of plugpull:"
        return "\n".join([first, f"git checkout {src.commit}", command])
    listed = ", ".join(src.uncommitted[:5]) + (
        f" and {len(src.uncommitted) - 5} more" if len(src.uncommitted) > 5 else ""
    )
    why = (
        f"# This run ran on files no commit holds ({listed}), so no checkout of this repository reproduces it."
        if src.case == "uncommitted"
        else "# This run did not come from a git checkout, so no commit reproduces it."
    )
    python = ".".join(str((doc.get("versions") or {}).get("python") or "3.10").split(".")[:2])
    witnesses = {}
    for line in judged.lines:
        witness = line.expectation.support.witness
        if bundle.is_bug(line.expectation) and witness is not None and line.failed > 0:
            witnesses.setdefault((witness.script, tuple(witness.args)), witness)
    if not witnesses:
        return "\n".join(
            [
                why,
                "# No bug witness failed on it, so there is no bundle to run instead: commit those files and rerun",
                f"# ({command}) for a record that names the commit.",
            ]
        )
    scripts: dict[str, list[claims.Witness]] = {}
    for (script, _), witness in witnesses.items():
        scripts.setdefault(script, []).append(witness)
    out = [why]
    for script, same in scripts.items():
        out += [
            "# Its bug's witness runs with the framework alone, no plugpull and no checkout: `plugpull report bundle "
            f"{finding.id} --pin {pin.name}` writes bundles/{Path(script).stem}-{pin.name}/ (witness.py, a "
            "hash-locked requirements.txt); in that folder:",
            *(bundle.uv_command(python, w.args, upgrade=pin.start is not None) for w in same),
        ]
    return "\n".join(out)


def locked_env(job: Job) -> KernelEnv:
    """The kernel's environment; for an upgrade pair also the start release's (both cached the same way)."""
    start = environment.ensure(job.pin.start, job.finding.root) if job.pin.start is not None else None
    env = environment.ensure(job.pin.requirements, job.finding.root)
    if job.pin.npm is not None:
        installed = npm.ensure(job.pin.npm)
        env.node_modules, env.npm_lock_sha256 = installed.node_modules, installed.lock_sha256
        env.phases = {**env.phases, **installed.phases}
        env.reused = env.reused and installed.reused
    if start is not None:
        env.start_python, env.start_lock_sha256 = start.python, start.lock_sha256
        env.phases = {k: env.phases.get(k, 0.0) + start.phases.get(k, 0.0) for k in {*env.phases, *start.phases}}
        env.reused = env.reused and start.reused
    return env


def run(
    job: Job,
    *,
    commit: Source | str | None,
    make_env: Callable[[Job], KernelEnv] = locked_env,
    out_root: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Outcome:
    """Run ``job`` and place its files under ``out_root`` (default: the finding's repository).

    ``commit``: where the code and the finding came from (:func:`source`; a string is a commit that holds them).
    Every file is written with no machine path in it (report/harness/machine_paths.py).
    """
    finding, pin = job.finding, job.pin
    src = Source.of(commit)
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
        # The kernel's cwd is the scratch folder: a relative results_path puts no temp path in the notebook.
        parameters = {
            **job.parameters,
            "pin": pin.name,
            "plugpull_commit": src.plugpull_commit,
            "results_path": record_out.name,
        }
        if pin.start is not None:
            parameters["from_python"] = str(env.start_python) if env is not None and env.start_python else None
        if env is not None:
            # A user's agent (finding.toml agent = ...) is copied next to the kernel, which cannot reach findings/;
            # an npm pin set's packages go beside it, with the repository's Node client.
            if env.node_modules is not None:
                npm.stage(env.node_modules, scratch / AGENT_FOLDER, finding.root / npm.CLIENT_SOURCE)
            nb_run = ipynb.execute(finding.notebook, notebook_out, env, parameters, scratch, stage=finding.staged())
            outcome.phases.update(nb_run.phases)
            outcome.error = nb_run.error
        else:
            ipynb.placeholder(notebook_out, outcome.error or "")
        roles = machine_paths.Roles.of_run(
            root=finding.root,
            scratch=scratch,
            python=env.python if env is not None else None,
            start_python=env.start_python if env is not None else None,
            cache=environment.cache_dir(),
        ).add(out_root, "")
        ipynb.rewrite_strings(notebook_out, roles.text)
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
                versions={**found, "plugpull_commit": src.plugpull_commit},
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
            node_modules=env.node_modules if env is not None else None,
            client=finding.root / npm.CLIENT_SOURCE,
        )
        outcome.phases["witnesses"] = time.monotonic() - witnessed
        doc["schema"] = SCHEMA  # the pipeline's fields (load, witnesses) make it this schema whoever wrote the rest
        doc["source"] = src.to_json()
        doc = roles.value(doc)  # before the top cell shows the witnesses' output

        progress("rendering HTML ...")
        judged = history.judge(finding, doc)
        outcome.status = judged.status
        earlier = history.runs(out_root, finding, pin.name)
        ipynb.put_top_cell(notebook_out, history.top_cell(finding, doc, judged, earlier))
        ipynb.put_reproduce(notebook_out, roles.text(redact(reproduce(finding, pin, doc, judged, src, job.parameters))))
        html_out = scratch / f"{pin.name}.html"
        outcome.phases["nbconvert"] = ipynb.render_html(notebook_out, html_out)
        _redact_file(html_out)
        # The HTML comes from the rewritten notebook; nbconvert's own text (none today) would be caught here.
        html_out.write_text(roles.escaped().text(html_out.read_text()))

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
            **(
                {
                    "npm_lock": (pin.npm / "package-lock.json").relative_to(finding.root).as_posix(),
                    "npm_lock_sha256": env.npm_lock_sha256 if env else None,
                }
                if pin.npm is not None
                else {}
            ),
            "kernel": env.kernel if env else None,
            "environment_reused": env.reused if env else None,
            "phases": {k: round(v, 3) for k, v in outcome.phases.items()},
        }
        doc = roles.value(redact(doc))
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
