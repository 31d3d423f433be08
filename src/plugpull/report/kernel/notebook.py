"""What a findings notebook calls, inside its kernel: the logic, so notebooks stay thin.

Runs in the pin set's environment, which installs plugpull (no dependencies), the framework,
pandas, matplotlib and ipykernel: so this module imports pandas and matplotlib lazily, in the
functions that draw, and never papermill or nbconvert (harness side).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import html
import importlib.metadata
import json
import os
import platform
import random
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from plugpull import postgres, rendering
from plugpull.aim import Aim
from plugpull.notes import describe
from plugpull.report.kernel import claims, record, versions
from plugpull.results import Result, Verdict
from plugpull.results import lines as results_lines
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.contract import Scenario
from plugpull.suite import run_plan, run_scenario
from plugpull.targets import BUILT_INS, Target


def version_of(distribution: str) -> str | None:
    """The installed version of a Python distribution, else of an npm package staged beside the kernel (an npm pin
    set's node_modules in record.AGENT_FOLDER, report/harness/npm.py), else None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        manifest = json.loads(
            (Path.cwd() / record.AGENT_FOLDER / "node_modules" / distribution / "package.json").read_text()
        )
    except (OSError, ValueError):
        return None
    version = manifest.get("version") if isinstance(manifest, dict) else None
    return version if isinstance(version, str) else None


def node_version() -> str | None:
    """``node --version`` when an npm pin set is staged beside the kernel (its agent runs with it), else None."""
    if not (Path.cwd() / record.AGENT_FOLDER / "node_modules").is_dir() or shutil.which("node") is None:
        return None
    proc = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def environment(framework: str | list[str], plugpull_commit: str | None) -> dict[str, Any]:
    """Versions and platform, read here in the kernel (never copied from a pin file).

    The installed plugpull has no .git, so its commit comes in as a parameter from the harness.
    A finding about several frameworks passes them all: each one's version is read (None when this
    environment lacks it) and the record is named after the first one installed.
    """
    frameworks = [framework] if isinstance(framework, str) else list(framework)
    found = {name: version_of(name) for name in frameworks}
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "framework": next((name for name in frameworks if found[name]), frameworks[0]),
        "date": now.date().isoformat(),
        "started_at": now.isoformat(timespec="seconds"),
        "versions": {
            **found,
            "plugpull": version_of("plugpull"),
            "plugpull_commit": plugpull_commit,
            "python": platform.python_version(),
            **({"node": node} if (node := node_version()) else {}),
            "os": platform.platform(),
            "pandas": version_of("pandas"),
            "matplotlib": version_of("matplotlib"),
            "ipykernel": version_of("ipykernel"),
        },
        "python_executable": sys.executable,
        "cpus": os.cpu_count(),
    }


def select_targets(name: str, options: dict[str, list[Any]]) -> list[Target]:
    """The built-in target's variants whose options take one of the listed values, in built-in order.

    ``{"durability": ["sync"]}`` keeps the variants with durability=sync; ``{}`` keeps all.
    A listed value no variant has is an error naming the values there are.
    """
    if name not in BUILT_INS:
        raise ValueError(f"unknown target {name!r}; built-in targets here: {', '.join(BUILT_INS)}")
    built_in = BUILT_INS[name]
    if not built_in.installed():
        raise RuntimeError(f"target {name!r} needs {built_in.module!r}, which this kernel's environment lacks")
    absent = built_in.missing_program()
    if absent is not None:
        raise RuntimeError(f"target {name!r} cannot run in this kernel's environment: {absent}")
    for key, values in options.items():
        known = sorted({str(v.options.get(key)) for v in built_in.variants})
        for value in values:
            if str(value) not in known:
                raise ValueError(f"target {name!r} has no variant with {key}={value}; known: {', '.join(known)}")
    return [
        v
        for v in built_in.variants
        if all(str(v.options.get(k)) in {str(x) for x in vals} for k, vals in options.items())
    ]


def why_not_here(name: str) -> str | None:
    """Why built-in ``name`` cannot run in this kernel (its framework not importable, a program it runs not
    found), or None: the one skip rule of the selections below."""
    built_in = BUILT_INS[name]
    if not built_in.installed():
        return f"{built_in.variants[0].framework or built_in.module} is not installed in this environment"
    return built_in.missing_program()


def select_installed(names: list[str], options: dict[str, list[Any]]) -> tuple[list[Target], list[str]]:
    """For a finding about several frameworks: the variants of each built-in target whose framework
    this kernel can import, and one line per name saying what ran here or why it was skipped.

    An option applies to the targets whose variants carry it (``durability`` to langgraph-approval
    only); a key no listed target carries, or a value none has, is an error. No target installed is one too.
    ``options`` may instead be per target name (``{"langgraph": {"durability": ["sync"]}}``), each applying to
    its own target only.
    """
    per_target = bool(options) and all(isinstance(v, dict) for v in options.values())
    unknown = [n for n in [*names, *(options if per_target else ())] if n not in BUILT_INS]
    if unknown:
        raise ValueError(f"unknown target {unknown[0]!r}; built-in targets here: {', '.join(BUILT_INS)}")
    for key in () if per_target else options:
        if not any(key in v.options for n in names for v in BUILT_INS[n].variants):
            raise ValueError(f"no target of {', '.join(names)} has the option {key!r}")
    targets: list[Target] = []
    said: list[str] = []
    for name in names:
        built_in = BUILT_INS[name]
        framework = built_in.variants[0].framework or built_in.module
        why = why_not_here(name)
        if why is not None:
            said.append(f"{name}: skipped, {why}")
            continue
        if per_target:
            mine = options.get(name, {})
        else:
            mine = {k: v for k, v in options.items() if any(k in t.options for t in built_in.variants)}
        kept = select_targets(name, mine)
        targets += kept
        said.append(f"{name}: {framework} {version_of(framework)}, {len(kept)} variant(s)")
    if not targets:
        raise RuntimeError(f"none of {', '.join(names)} can run here: this environment has none of their frameworks")
    return targets, said


def upgrade_environment(frameworks: list[str], from_python: str | None, plugpull_commit: str | None) -> dict[str, Any]:
    """:func:`environment` for an upgrade pair: this kernel is release B's environment; release A's
    versions are read inside A's interpreter (``from_python``), never copied from a pin file.

    ``upgrade`` names the pair: ``{"framework", "from", "to"}`` (docs/json-schema.md).
    """
    env = environment(frameworks, plugpull_commit)
    if not from_python:
        raise RuntimeError("no from_python: this notebook runs on an upgrade pair (a pin set with from = ...)")
    started = versions.installed_in(Path(from_python), [*frameworks, "plugpull"])
    framework = next((f for f in frameworks if started.get(f) and env["versions"].get(f)), env["framework"])
    env["framework"] = framework
    env["versions_from"] = started
    env["upgrade"] = {"framework": framework, "from": started.get(framework), "to": env["versions"].get(framework)}
    return env


def scenario_options(parameters: dict[str, Any]) -> dict[str, Any]:
    """The options scenarios own (Scenario.Options) that a notebook's parameters set, by scenario: a parameter
    named as an option's field sets it for the scenario that owns it."""
    from plugpull.scenarios.registry import REGISTRY

    owned = {}
    for scenario in REGISTRY:
        if scenario.Options is not None:
            names = {f.name for f in dataclasses.fields(scenario.Options)}
            values = {name: value for name, value in parameters.items() if name in names}
            if values:
                owned[scenario.name] = scenario.options_from(values)
    return owned


def run_lines(
    targets: list[Target],
    points: list[str],
    repeats: int,
    seed: int | None,
    timeout: float,
    scenario_options: dict[str, Any] | None = None,
    line_repeats: list[dict[str, Any]] | None = None,
    fork_server: bool = False,
    cwd: str | None = None,
    *,
    aim: dict[str, Any] | None = None,
    jobs: int = 1,
) -> tuple[list[Result], float]:
    """Run every (target, point) ``repeats`` times, or more where ``line_repeats`` says so (the
    finding's timing lines, finding.toml ``[[claims]]``); returns the results in line order and the
    wall time.

    ``fork_server`` (the notebooks' parameter of that name, in the record's parameters): every target
    phase forks from a server that imported the target once (plugpull.forkserver, as ``plugpull
    --fork-server``), still a real process killed for real; the CI smoke sets it to spare two or three
    framework imports a line. A reader's run, and the findings' records, start each phase cold, but for a
    scenario whose finding lines fork by default (``Scenario.finding_forks``).

    With a seed the runs happen in a shuffled order, so a slow drift on a shared machine (page
    cache, other jobs) spreads over every line instead of landing on the last ones; the results
    are put back in line order (target, point, repeat) for the table and the text. ``cwd``: where the targets
    run (a finding's agent, :func:`agent_targets`); None, this kernel's folder. ``aim``: the fields of every line's
    :class:`~plugpull.aim.Aim` (``Scenario.finding_aim``). ``jobs`` > 1: the lines, as their
    scenarios expand them (one per boundary), run that many at a time in line order, as ``plugpull -j`` runs them.
    """
    runs = [
        (t, p, r)
        for t, target in enumerate(targets)
        for p, point in enumerate(points)
        # A finding whose targets run different scenarios (postgresql-stores: a kill in a tool and a kill in an
        # approval) lists the points of both: each target runs those of its own scenario, and of those the ones
        # its scenario has a line of for it (Scenario.has_line).
        if _scenario_has(target.scenario, point, target)
        for r in range(
            claims.repeats_for(line_repeats or [], target.scenario, point, target.framework, target.options, repeats)
        )
    ]
    settings = Settings(timeout=timeout, cwd=cwd, options=dict(scenario_options or {}), aim=Aim(**(aim or {})))
    done: dict[tuple[int, int, int], list[Result]] = {}
    began = time.monotonic()
    forks = None
    if fork_server:
        from plugpull.forkserver import ForkServers

        forks = ForkServers()
    # One runtime for every job: a target's clean run (and probe) is made once and shared by its lines.
    with Runtime(forks=forks) as runtime:
        if jobs > 1:
            results = run_plan([(targets[t], points[p]) for t, p, _ in runs], settings, runtime, jobs=jobs)
            return results, time.monotonic() - began
        order = list(runs)
        if seed is not None:
            random.Random(seed).shuffle(order)
        # The lines in line order, not the shuffled one: a clean run's FAIL goes to a target's first line.
        runtime.plan([(targets[t], points[p]) for t, p, _ in runs])
        for job in order:
            t, p, _ = job
            done[job] = run_scenario(targets[t], [points[p]], settings=settings, runtime=runtime)
    return [r for job in runs for r in done[job]], time.monotonic() - began


def power_cut_losses(results: list[Result]) -> str:
    """What each power cut lost, per line (the model's sentences, ``evidence.cut.losses``): runs that lost
    the same are counted once. A line whose cut did not happen says why (its ERROR message)."""
    shown: list[str] = []
    for (_, point, label), runs in results_lines(results).items():
        said: dict[str, int] = {}
        for r in runs:
            cut = r.evidence.get("cut") or {}
            losses = [loss.get("text", "") for loss in cut.get("losses") or []]
            if cut:
                text = "; ".join(losses) or "nothing: every write and every name was durable"
            else:
                text = f"no cut: {r.message}"
            text = f"{r.verdict.value}: {text}"
            said[text] = said.get(text, 0) + 1
        shown.append(f"{label} {point}:")
        shown += [f"  {n} x {text}" for text, n in said.items()]
    return "\n".join(shown)


def _scenario_has(scenario: str, point: str, target: Target | None = None) -> bool:
    from plugpull.scenarios.registry import REGISTRY

    found = REGISTRY.get(scenario)
    if found is None or not found.points:
        return True
    return point in found.points and (target is None or found.has_line(target, point))


@contextlib.contextmanager
def postgres_for(targets: list[Target]) -> Iterator[dict[str, str]]:
    """A throwaway PostgreSQL cluster for the block when a chosen target keeps its state there, its URL in
    $PLUGPULL_POSTGRES_URL (plugpull.postgres); yields the record's ``servers``: ``{"postgresql": what the
    server is}``, or ``{}`` when no chosen target needs a server.

    The cluster lives in this kernel for the run and is stopped and removed after it. One that cannot start
    raises plugpull.postgres.PostgresUnavailable, naming why: the finding's lines need it, so the notebook fails and
    its record says why. A URL already set (``python -m plugpull.postgres plugpull report ...``) is used as is.
    """
    if not any(BUILT_INS[t.name].server == postgres.URL_ENV for t in targets if t.name in BUILT_INS):
        yield {}
        return
    given = os.environ.get(postgres.URL_ENV)
    if given:
        yield {"postgresql": f"the server at {given} ({postgres.URL_ENV} was set before the run)"}
        return
    with postgres.cluster() as cluster:
        os.environ[postgres.URL_ENV] = cluster.url()
        try:
            yield {"postgresql": f"{cluster.version}, a throwaway cluster on 127.0.0.1 (plugpull.postgres)"}
        finally:
            os.environ.pop(postgres.URL_ENV, None)


def lines(results: list[Result]) -> list[dict[str, Any]]:
    """One entry per line (scenario, point, target variant) in run order: its runs, verdict counts,
    FAIL rate over the finished runs (PASS + FAIL) with its 95 % Wilson interval, and effect counts."""
    out = []
    for (scenario, point, _), runs in results_lines(results).items():
        counted = {v.value: sum(r.verdict is v for r in runs) for v in Verdict}
        finished = counted["PASS"] + counted["FAIL"]
        low, high = claims.wilson(counted["FAIL"], finished)
        effects: dict[str, int] = {}
        for r in runs:
            effects[counts_text(r)] = effects.get(counts_text(r), 0) + 1
        # Notes whose condition held on a run's evidence, apart from what was measured; with repeats,
        # how many runs each attached to.
        noted: dict[str, int] = {}
        for r in runs:
            for note in r.notes:
                noted[describe(note)] = noted.get(describe(note), 0) + 1
        out.append(
            {
                "scenario": scenario,
                "point": point,
                "framework": runs[0].framework,
                "version": runs[0].version,
                "options": " ".join(f"{k}={v}" for k, v in runs[0].options.items()),
                "runs": len(runs),
                **counted,
                "fail_rate": counted["FAIL"] / finished if finished else None,
                "ci_low": low if finished else None,
                "ci_high": high if finished else None,
                "effects": "; ".join(f"{e} ×{n}" if len(effects) > 1 else e for e, n in effects.items()),
                "notes": "; ".join(f"{t} ×{n}" if len(runs) > 1 else t for t, n in noted.items()),
            }
        )
    return out


def table(results: list[Result]):
    """One row per line: runs, PASS / FAIL / ERROR, the FAIL rate with its 95 % Wilson interval,
    and the effect counts seen (with how many runs saw each). What the HTML shows."""
    import pandas as pd

    rows = lines(results)
    for row in rows:
        for computed in ("fail_rate", "ci_low", "ci_high"):
            row.pop(computed)
        # From claims.INTERVAL_RUNS finished runs; below that the rate and its run count ("1.00 [0.21, 1.00]" on one
        # run read as a measurement it is not).
        row["FAIL rate [95% CI]"] = claims.rate_cell(row["FAIL"], row["PASS"] + row["FAIL"])
    frame = pd.DataFrame(rows)
    columns = ["point", "options", "runs", "PASS", "FAIL", "ERROR", "FAIL rate [95% CI]", "effects", "notes"]
    if len({r.framework for r in results}) > 1:
        columns = ["framework", "version", *columns]
    return frame[columns] if rows else frame


def counts_text(result: Result) -> str:
    counts = result.evidence.get("counts") or {}
    return ", ".join(f"{name}={n}" for name, n in counts.items()) if isinstance(counts, dict) else str(counts)


def plot(results: list[Result], repeats: int | None = None):
    """The FAIL rate per line (point, target options) with its 95 % Wilson interval, labelled with
    the counts: a line run once shows 0 or 1 with a wide interval, which is what one run tells.
    ``repeats`` is accepted for older notebooks and unused (each line says its own run count).

    One row per line, 9 inches wide whatever the number of lines (it grows downwards): a page 1100 px wide
    shows it at its own size, so its 8 pt text is not shrunk with a figure drawn wider than the page."""
    import textwrap

    import matplotlib.pyplot as plt

    rows = lines(results)
    several = len({r["framework"] for r in rows}) > 1
    labels = [
        textwrap.fill(" ".join([*([r["framework"]] if several else []), r["point"], *r["options"].split()]), 42)
        for r in rows
    ]
    height = max(2.4, sum(0.16 * (label.count("\n") + 1) + 0.2 for label in labels) + 1.1)
    fig, ax = plt.subplots(figsize=(9.0, height))
    for i, r in enumerate(rows):
        if r["fail_rate"] is None:  # every run ERROR: no rate
            ax.annotate(f"ERROR ×{r['ERROR']}", (0.02, i), va="center", fontsize=8, color="#616161")
            continue
        rate = r["fail_rate"]
        color = "#c62828" if rate > 0 else "#2e7d32"
        ax.barh(i, rate, color=color, alpha=0.35, height=0.6)
        finished = r["PASS"] + r["FAIL"]
        right = rate
        if finished >= claims.INTERVAL_RUNS:  # fewer runs: the rate alone (the table says why)
            ax.errorbar(
                rate, i, xerr=[[rate - r["ci_low"]], [r["ci_high"] - rate]], fmt="o", color=color, capsize=4, lw=1.5
            )
            right = r["ci_high"]
        else:
            ax.plot([rate], [i], "o", color=color)
        text = f"{r['FAIL']}/{finished}" + (f" +{r['ERROR']} ERROR" if r["ERROR"] else "")
        ax.annotate(text, (min(right + 0.02, 1.02), i), va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first line on top, as in the tables
    ax.set_xlim(0, 1.2)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xlabel(f"FAIL rate (95 % Wilson interval from {claims.INTERVAL_RUNS} finished runs)")
    ax.set_title("FAIL rate per point and variant (FAIL / finished runs)", fontsize=10)
    fig.tight_layout()
    return shown(fig)


#: Colours of a plot's PNG in a record: flat fills and anti-aliased text fit a palette, and a record embeds each
#: plot twice (ipynb, HTML), every record kept (docs/DECISIONS.md, "Findings, records, pin sets and pages"): a
#: 46-line rate plot was 413 KB as the inline backend's RGBA and 126 KB as 64 colours, with the same pixels' layout.
PLOT_COLOURS = 64


def palette_png(fig) -> bytes:
    """``fig`` as the inline backend saves it (the figure's dpi, tight bounds), quantized to :data:`PLOT_COLOURS`."""
    import io

    from PIL import Image  # matplotlib's own dependency: wherever it draws, Pillow is installed

    drawn, out = io.BytesIO(), io.BytesIO()
    fig.savefig(drawn, format="png", bbox_inches="tight")
    Image.open(drawn).convert("RGB").quantize(PLOT_COLOURS).save(out, format="PNG", optimize=True)
    return out.getvalue()


def shown(fig):
    """In a kernel: display ``fig`` as :func:`palette_png` and close it, so the inline backend does not add it again
    in full colour. Elsewhere (a script, a test) nothing is displayed. Returns ``fig`` either way."""
    import sys

    ipython = sys.modules.get("IPython")
    if ipython is None or ipython.get_ipython() is None:
        return fig
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    display(Image(palette_png(fig)))
    plt.close(fig)
    return fig


def text(results: list[Result]) -> str:
    """The result lines exactly as ``plugpull`` prints them (with resume's stderr under a line that shows it)."""
    return rendering.format_text(results)


#: How rendering.format_text marks a line of the target's stderr under a result line.
STDERR_PREFIX = "    | "


@dataclass(frozen=True)
class ResultLines:
    """The result lines as :func:`text` gives them, shown in a notebook with each run's stderr (the framework's
    own logs: DBOS prints about ten INFO lines a phase, four screens in one record) folded in a ``<details>``
    under its line, so the verdicts read at a glance and the logs stay one click away. ``str()`` and the plain
    text output are :func:`text` unchanged."""

    text: str

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        out, held = [], []

        def fold() -> None:
            if held:
                body = html.escape("\n".join(line[len(STDERR_PREFIX) :] for line in held))
                out.append(
                    f"<details><summary>the target's stderr ({len(held)} line{'s' if len(held) > 1 else ''})"
                    f"</summary><pre>{body}</pre></details>"
                )
                held.clear()

        shown: list[str] = []
        for line in self.text.splitlines():
            if line.startswith(STDERR_PREFIX):
                if shown:
                    out.append(f"<pre>{html.escape(chr(10).join(shown))}</pre>")
                    shown = []
                held.append(line)
                continue
            fold()
            shown.append(line)
        fold()
        if shown:
            out.append(f"<pre>{html.escape(chr(10).join(shown))}</pre>")
        return '<div class="result-lines">' + "".join(out) + "</div>"


def lines_shown(results: list[Result]) -> ResultLines:
    """:func:`text` for a notebook cell's last expression: the lines with each stderr folded (:class:`ResultLines`).
    A notebook that prints :func:`text` shows it unfolded; a generated notebook calls this instead."""
    return ResultLines(text(results))


def repository_url() -> str | None:
    """The public repository from plugpull's own metadata (pyproject.toml ``[project.urls] Repository``)."""
    try:
        entries = importlib.metadata.metadata("plugpull").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in entries:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("repository", "source") and url.strip():
            return url.strip()
    return None


#: The metadata of the output that holds the kernel's "how to reproduce" (report/harness/ipynb.py, put_reproduce).
REPRODUCE = {"plugpull": "reproduce"}


def reproduce(finding: str, pin: str, parameters: dict[str, Any], commit: str | None, url: str | None = None) -> str:
    """The commands that re-run this report, for the notebook's "how to reproduce" cell.

    ``plugpull report`` needs the repository (findings/, notebooks/, the pin sets), so the commands start from a
    clone of the public URL in plugpull's metadata and a checkout of ``commit``. A ``-dirty`` commit does not hold
    what ran, so none is named: the line says so (``plugpull report`` then replaces this cell's output with the
    bundle's command, report/harness/pipeline.py). docs/DECISIONS.md, "Findings, records, pin sets and pages".
    """
    url = url if url is not None else repository_url()
    overrides = " ".join(f"-p {k} {shlex.quote(_json(v))}" for k, v in parameters.items())
    command = f"uv run plugpull report --finding {finding} --pin {pin}" + (f" {overrides}" if overrides else "")
    if not commit:
        return (
            "# plugpull's commit is unknown here (not run by plugpull report from a git checkout); in a checkout:\n"
            + command
        )
    if commit.endswith("-dirty"):
        return (
            "# This run ran on files no commit holds, so no checkout reproduces it; in a checkout with those files:\n"
            + command
        )
    first = f"git clone {shlex.quote(url)} plugpull && cd plugpull" if url else "# in a checkout of plugpull:"
    return "\n".join([first, f"git checkout {commit}", command])


def write_record(
    path: str | os.PathLike[str],
    *,
    finding: str,
    pin: str,
    env: dict[str, Any],
    parameters: dict[str, Any],
    results: list[Result],
    scenario_seconds: float,
) -> dict[str, Any]:
    # An upgrade pair's record names both releases (upgrade) and A's versions (versions_from); a run on a
    # database server names the server (servers: {"postgresql": "postgres (PostgreSQL) 15.18 ..."}).
    extra = {k: env[k] for k in ("upgrade", "versions_from", "servers") if k in env}
    doc = record.build(
        finding=finding,
        pin=pin,
        date=env["date"],
        started_at=env["started_at"],
        finished_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        versions=env["versions"],
        parameters=parameters,
        results=results,
        framework=env["framework"],
        scenario_seconds=round(scenario_seconds, 3),
        **extra,
    )
    record.write(Path(path), doc)
    return doc


def _json(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


VERDICT_COLORS = {"PASS": "#2e7d32", "FAIL": "#c62828", "ERROR": "#9e9e9e"}


def boundary_map(results: list[Result]):
    """The run as a timeline of its boundaries, one row per target variant and side, each kill coloured by verdict.

    x is the boundary's place in the clean run (1..N); the label under each is the boundary. A
    FAIL is marked with what broke (dup: an effect duplicated, lost, result, stuck).
    """
    import matplotlib.pyplot as plt

    rows: dict[tuple[str, str], dict[int, Result]] = {}
    labels: dict[str, dict[int, str]] = {}
    for r in results:
        place = r.evidence.get("boundary") or {}
        if "index" not in place:
            continue
        side = r.point.split(" ", 1)[0]
        rows.setdefault((r.target, side), {})[place["index"]] = r
        labels.setdefault(r.target, {})[place["index"]] = place.get("label", "")
    if not rows:
        fig, ax = plt.subplots(figsize=(5, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "no boundary lines", ha="center")
        return shown(fig)
    targets = list(dict.fromkeys(t for t, _ in rows))
    width = max(len(v) for v in labels.values())
    height = sum(len([k for k in rows if k[0] == t]) for t in targets)
    fig, axes = plt.subplots(
        len(targets), 1, figsize=(max(7.0, 0.75 * width + 3), 1.1 * height + 1.6 * len(targets)), squeeze=False
    )
    for ax, target in zip(axes[:, 0], targets, strict=True):
        sides = [k for k in rows if k[0] == target]
        for y, key in enumerate(sides):
            for index, r in rows[key].items():
                color = VERDICT_COLORS[r.verdict.value]
                ax.scatter(index, y, s=160, color=color, marker="s")
                if r.verdict is Verdict.FAIL:
                    ax.annotate(failure_kind(r), (index, y + 0.28), ha="center", fontsize=7, color=color)
        ax.set_yticks(range(len(sides)), [side for _, side in sides], fontsize=8)
        ax.set_ylim(-0.6, len(sides) - 0.2)
        ticks = sorted(labels[target])
        ax.set_xticks(ticks, [f"{i}\n{labels[target][i]}" for i in ticks], fontsize=7, rotation=60, ha="right")
        ax.set_xlim(0.4, max(ticks) + 0.6)
        ax.set_title(target, fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.2)
    fig.suptitle("Kill before / after each boundary of the clean run (green PASS, red FAIL, grey ERROR)", fontsize=10)
    fig.tight_layout()
    return shown(fig)


def failure_kind(result: Result) -> str:
    """A FAIL in a word: dup (an effect done twice), lost (never done), stuck (resume crashed or hung), result."""
    message = result.message
    if "crashed" in message or "hung" in message:
        return "stuck"
    if "duplicated" in message:
        return "dup"
    if "lost" in message:
        return "lost"
    return "result"


def boundary_table(results: list[Result]):
    """One row per boundary line: place, side, boundary, verdict, effect counts, what broke."""
    import pandas as pd

    rows = []
    for r in results:
        place = r.evidence.get("boundary") or {}
        rows.append(
            {
                "target": r.target,
                "place": f"{place['index']}/{place['of']}" if "index" in place else "",
                "point": r.point,
                "thread": {True: "main", False: "background"}.get(place.get("main_thread"), ""),
                "verdict": r.verdict.value,
                "effects": counts_text(r),
                "message": r.message,
            }
        )
    return pd.DataFrame(rows)


# --- the one call of a generated notebook -----------------------------------------------------------------------
# notebooks/<id>.ipynb is generated from finding.toml (report/harness/scaffold.py): a title cell, a `parameters` cell,
# and one call to report() below, which shows what the notebooks' cells showed one by one: the environment, the
# lines run, the table, the plot, the result lines, how to reproduce; and writes the run record last.

#: Parameters the harness sets (never a record's parameters): the pin set, where the record goes, release A's python.
HARNESS_ONLY = ("pin", "results_path", "from_python")
#: Parameters the reproduce command leaves out: the harness sets them, or `plugpull report` derives them.
NOT_REPRODUCED = (*HARNESS_ONLY, "line_repeats", "plugpull_commit", "fork_server")

RUN_TEXT = (
    "Each line: one target variant at one point, `repeats` times, or `line_repeats` times for a timing line (its "
    "verdict depends on timing, so it is read as a FAIL rate)."
)
SEVERAL_TEXT = "The targets this kernel can run (a framework the pin set does not install is skipped, not an error). "
LINES_TEXT = (
    "Exactly as `plugpull` prints them; a FAIL or ERROR line shows the target's stderr under it (the recovering "
    "phase's for a crash or hang)."
)


def agent_targets(
    command: str | dict[str, str], scenario: str, framework: str, folder: Path | None = None
) -> tuple[list[Target], str]:
    """A finding's user agent (finding.toml ``agent = "agent.py --flag"``) as the target of ``scenario``, and a line
    saying what runs; for a table of variants (``{"key=none": "agent.mjs no-key", ...}``) one target per variant, its
    options those of its label, as a built-in's variants are.

    The agent's files are in ``folder`` (default: record.AGENT_FOLDER in this kernel's working directory, where
    ``plugpull report run`` copies them); the agent runs there, a ``.py`` file with this kernel's python (the pin set's
    venv), a JavaScript file with ``node`` beside the npm pin set's packages, so its command names the file as
    finding.toml does and holds no path of this machine. Its lines are named after the finding's framework (with the
    version the agent announces), as a built-in's are.
    """
    from plugpull.scenarios.registry import REGISTRY

    folder = folder if folder is not None else Path.cwd() / record.AGENT_FOLDER
    variants = command if isinstance(command, dict) else {"": command}
    chosen = []
    for label, each in variants.items():
        words = shlex.split(each)
        if not words or not (folder / words[0]).is_file():
            raise FileNotFoundError(
                f"agent {each!r}: {words[0] if words else each!r} is not in {record.AGENT_FOLDER}/ beside this kernel;"
                " plugpull report run --finding ID copies the finding's agent there"
            )
        if words[0].endswith(".py"):
            argv = [sys.executable, *words]
        elif words[0].endswith(record.JS_SUFFIXES):
            argv = ["node", *words]
        else:
            argv = [f"./{words[0]}", *words[1:]]
        [target] = REGISTRY[scenario].agents([shlex.join(argv)])
        options = dict(pair.split("=", 1) for pair in label.split()) if label else {}
        chosen.append(replace(target, framework=framework, options=options))
    shown = ", ".join(f"{label}: {each}" if label else each for label, each in variants.items())
    return chosen, f"agent {shown}: {framework} {version_of(framework)}, scenario {scenario}"


def _show(value: Any) -> None:
    """Display ``value`` in a kernel (a DataFrame as its table, Markdown as text); print it elsewhere."""
    ipython = sys.modules.get("IPython")
    if ipython is not None and ipython.get_ipython() is not None:
        from IPython.display import display

        display(value)
    else:
        print(value)


def _markdown(text: str) -> None:
    ipython = sys.modules.get("IPython")
    if ipython is not None and ipython.get_ipython() is not None:
        from IPython.display import Markdown

        _show(Markdown(text))
    else:
        print(text)


def finding_scenario(parameters: dict[str, Any]) -> Any:
    """The scenario a finding's parameters make its lines of (``Scenario.finding_parameter``: ``boundaries``,
    ``cuts``, ``from_python``), or None: its targets run the scenarios their variants were made for."""
    from plugpull.scenarios.registry import REGISTRY

    found = [s for s in REGISTRY if s.finding_parameter is not None and s.finding_parameter in parameters]
    if len(found) > 1:
        raise ValueError(
            "a finding's lines are one scenario's: parameters "
            + " and ".join(repr(s.finding_parameter) for s in found)
            + " name "
            + " and ".join(s.name for s in found)
        )
    return found[0] if found else None


def finding_lines(
    scenario: Any, names: list[str], options: dict[str, Any], parameters: dict[str, Any]
) -> tuple[list[Target], list[str]]:
    """A finding's targets as ``scenario`` runs them, and one line per name saying what runs here or why not: those
    it makes itself (``Scenario.finding_targets``), else the installed built-ins (:func:`select_installed`) as it
    adopts them, each once per value of its ``lines_per`` option where it has one (once per power cut)."""
    from plugpull.scenarios.registry import REGISTRY

    made = scenario.finding_targets(names, options, parameters)
    if made is not None:
        return made
    chosen, said = select_installed(names, options)
    adopted = [a for a in (REGISTRY.adopt(scenario.name, t) for t in chosen) if a is not None]
    if scenario.lines_per is None:
        return adopted, said
    values = list(parameters[scenario.finding_parameter] or [])
    if not values:
        raise ValueError(f"{scenario.finding_parameter} is empty: list at least one {scenario.lines_per}")
    for value in values:  # each checked as --power-cut would be: one line naming the values allowed
        scenario.options_from({scenario.lines_per: value})
    lines = [replace(a, options={**a.options, scenario.lines_per: v}) for a in adopted for v in values]
    said.append(f"each of the {len(adopted)} variant(s) once per {scenario.lines_per}: {', '.join(map(str, values))}")
    return lines, said


def _view(heading: str, show: Any) -> Any:
    """A view: ``heading`` (Markdown, or "" for none) over what ``show(results)`` displays."""

    def view(results: list[Result]) -> None:
        if heading:
            _markdown(heading)
        show(results)

    return view


MAP_HEADING = (
    "## The map\n\nOne row per target variant and side; x is the boundary's place in the clean run. Green PASS, red "
    "FAIL (dup: an effect duplicated, lost: never done, stuck: resume crashed or hung, result: a different result), "
    "grey ERROR."
)
CUTS_HEADING = (
    "## What each cut lost\n\nThe power-cut file system's model, per run: what a reader saw differently after the "
    "cut than before it (`evidence.cut.losses`)."
)

#: What a finding's notebook can show of its lines, by the names scenarios give in ``Scenario.views``.
VIEWS = {
    "table": _view("", lambda results: _show(table(results))),
    "plot": _view("", plot),
    "boundary-map": _view(MAP_HEADING, boundary_map),
    "boundary-table": _view("", lambda results: _show(boundary_table(results))),
    "cut-losses": _view(CUTS_HEADING, lambda results: print(power_cut_losses(results))),
}


def report(
    finding: str,
    frameworks: list[str],
    parameters: dict[str, Any],
    *,
    target: str | None = None,
    agent: str | dict[str, str] | None = None,
    scenario: str | None = None,
    apart: bool = False,
) -> None:
    """Run finding ``finding``'s lines in this kernel with the notebook's ``parameters`` and write its record.

    What runs follows from the parameters finding.toml declares: ``targets`` (a finding about several frameworks:
    the built-ins whose framework this kernel can import), else the one built-in ``target`` or the user's ``agent``
    under ``scenario``; a parameter a scenario names as its ``finding_parameter`` makes the lines that scenario's
    (``from_python``: an upgrade pair, release A's interpreter; ``boundaries``: a boundary map; ``cuts``: power
    cuts), which it selects and shows as it declares (:func:`finding_lines`, :data:`VIEWS`). ``apart``: a kernel
    without the framework (one that cannot be installed beside plugpull's defaults) records no results instead of
    failing. The record's parameters are the
    notebook's, without the harness's own (:data:`HARNESS_ONLY`).
    """
    commit = parameters.get("plugpull_commit")
    options = parameters.get("options") or {}
    points = [*parameters.get("points", []), *parameters.get("approval_points", [])]
    shape = finding_scenario(parameters)
    names = parameters.get("targets") or [n for n in [target] if n]

    if "from_python" in parameters:  # an upgrade pair: release A's versions are read in A's interpreter
        env = upgrade_environment(frameworks, parameters["from_python"], commit)
    else:
        env = environment(frameworks, commit)
    measured = f"{env['framework']} {env['versions'].get(env['framework']) or '(not installed)'}"
    _markdown(f"**Record of finding `{finding}` on {measured}** (pin set `{parameters.get('pin')}`).")
    npm_read = (
        " (an npm package: from its package.json in the staged node_modules)" if "node" in env["versions"] else ""
    )
    _markdown(
        "## Environment\n\nRead inside this kernel with `importlib.metadata`"
        f"{npm_read}, never copied from the pin file."
    )
    _show(env)

    said: list[str] = []
    several = f"{SEVERAL_TEXT}{RUN_TEXT}"
    if agent is not None:
        shown = ", ".join(f"`{c}`" for c in agent.values()) if isinstance(agent, dict) else f"`{agent}`"
        _markdown(f"## Run\n\nThe finding's agent, {shown}, under {scenario}. {RUN_TEXT}")
        chosen, line = agent_targets(agent, str(scenario), frameworks[0])
        said = [line]
    elif apart and not any(version_of(f) for f in frameworks):
        _markdown(f"## Run\n\n{several}")
        chosen = []
        said = [f"{name}: skipped, {' / '.join(frameworks)} is not installed in this environment" for name in names]
    elif shape is not None:
        _markdown(f"## Run\n\n{shape.finding_text or several}")
        chosen, said = finding_lines(shape, names, options, parameters)
    elif "targets" in parameters:
        _markdown(f"## Run\n\n{several}")
        chosen, said = select_installed(names, options)
    else:
        _markdown(f"## Run\n\n{RUN_TEXT}")
        chosen = select_targets(names[0], options)
    if said:
        print("\n".join(said))

    # A finding whose targets keep their state on a server (postgresql-stores) names the server in its record.
    on_server = any(BUILT_INS[n].server == postgres.URL_ENV for n in names if n in BUILT_INS)
    forks = parameters.get("fork_server", shape is not None and shape.finding_forks)
    with postgres_for(chosen) as servers:
        if on_server:
            print("\n".join(f"{name}: {what}" for name, what in servers.items()) or "no target here needs a server")
        results, seconds = run_lines(
            chosen,
            points,
            parameters["repeats"],
            parameters.get("seed"),
            parameters["timeout"],
            scenario_options=scenario_options(parameters),
            line_repeats=parameters.get("line_repeats"),
            fork_server=bool(forks),
            cwd=str(Path.cwd() / record.AGENT_FOLDER) if agent is not None else None,
            aim=shape.finding_aim(parameters) if shape is not None else None,
            jobs=int(parameters.get("jobs", 1)),
        )
    if on_server:
        env["servers"] = servers
    print(f"{len(results)} results in {seconds:.1f} s")

    for view in (shape or Scenario).views:  # the contract's default: a table and the plot
        VIEWS[view](results)
    _markdown(f"## Result lines\n\n{LINES_TEXT}")
    from IPython.display import display

    display(lines_shown(results))  # each run's stderr folded under its line; the plain text output is text()
    _markdown("## How to reproduce")
    shown = {k: v for k, v in parameters.items() if k not in NOT_REPRODUCED}
    # Tagged, so `plugpull report` can put the harness's command in its place (it knows where the run came from).
    display({"text/plain": reproduce(finding, str(parameters.get("pin")), shown, commit)}, raw=True, metadata=REPRODUCE)
    write_record(
        parameters["results_path"],
        finding=finding,
        pin=str(parameters.get("pin")),
        env=env,
        parameters={k: v for k, v in parameters.items() if k not in HARNESS_ONLY},
        results=results,
        scenario_seconds=seconds,
    )
    print("wrote the run record")
