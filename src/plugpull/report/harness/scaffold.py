"""What is generated from a finding.toml: its notebook, ``notebooks/<id>.ipynb``, and the finding page's generated
blocks; and ``plugpull report new``, which makes a finding from a user's agent.

A finding is one folder of hand-written files (finding.toml, the agent when it has one, the witnesses) plus
generated ones. The notebook is thin and holds nothing typed by hand: a title cell (finding.toml's title, claim and
links), a ``parameters`` cell (finding.toml's ``[parameters]`` and the ones ``plugpull report`` sets), and one call,
``plugpull.report.kernel.notebook.report``, which shows the environment, the table, the plot and the result lines and
writes the record. ``regenerate`` writes it; ``check`` fails when the committed one differs.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from plugpull.arguments import UsageError
from plugpull.report.harness.finding import FINDINGS_DIR, Finding
from plugpull.report.kernel import versions as version_rule

#: Marks a generated notebook (its metadata): ``check`` holds only those to finding.toml; a hand-written notebook
#: (a test's) is left alone.
GENERATED = "plugpull"
WIDTH = 120  # ruff's line length (pyproject.toml): the generated cells are as ruff formats them

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}

INTRO = (
    "Everything below runs in this kernel: the versions are read here, the scenario is plugpull's own "
    "(`plugpull.run_scenario`), real processes are SIGKILLed, and the framework recovers with its own code."
)
GENERATED_NOTE = (
    "This notebook is generated from `findings/{id}/finding.toml` by `plugpull report regenerate`: edit that file, "
    "not this one."
)


def harness_parameters(finding: Finding) -> dict[str, Any]:
    """The parameters ``plugpull report`` sets or derives, with the defaults the notebook declares for them."""
    from plugpull.scenarios.registry import REGISTRY

    # A finding whose lines fork by default (Scenario.finding_forks: every-boundary's map) declares no fork_server.
    forks = any(s.finding_forks for s in REGISTRY if s.finding_parameter in finding.parameters)
    upgrade = any(p.start is not None for p in finding.pins)
    return {
        "line_repeats": [],
        **({} if forks else {"fork_server": False}),
        "plugpull_commit": None,
        "results_path": "results.json",
        **({"from_python": None} if upgrade else {}),
    }


def declared(finding: Finding) -> dict[str, Any]:
    """Every parameter of the generated notebook, in its order: ``pin``, ``repeats`` and ``line_repeats``, the rest
    of finding.toml's, then the harness's."""
    harness, own = harness_parameters(finding), dict(finding.parameters)
    out: dict[str, Any] = {"pin": "default"}
    if "repeats" in own:
        out["repeats"] = own.pop("repeats")
    out["line_repeats"] = harness.pop("line_repeats")
    return {**out, **own, **harness}


def literal(value: Any, indent: int = 0, room: int = WIDTH) -> str:
    """``value`` (TOML data) as Python source in ruff's format: on one line when it fits in ``room``, else one item a
    line with a trailing comma (which ruff keeps exploded)."""
    flat = _flat(value)
    if len(flat) <= room or not isinstance(value, (list, dict)) or not value:
        return flat
    pad = " " * (indent + 4)
    if isinstance(value, list):
        items = [pad + literal(v, indent + 4, WIDTH - indent - 5) + "," for v in value]
        return "[\n" + "\n".join(items) + "\n" + " " * indent + "]"
    items = []
    for k, v in value.items():
        key = _flat(k) + ": "
        items.append(pad + key + literal(v, indent + 4, WIDTH - indent - 5 - len(key)) + ",")
    return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"


def _flat(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flat(k)}: {_flat(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"a notebook parameter must be TOML data, not {type(value).__name__}")


def title_cell(finding: Finding) -> str:
    """The notebook's first cell: finding.toml's title, claim and upstream links."""
    out = [f"# {finding.title}", "", f"**Finding `{finding.id}`.** {finding.claim}", ""]
    links = finding.links
    listed = [f"- issue: <{url}>" for url in links.get("issues", [])]
    listed += [f"- pull request: <{url}>" for url in links.get("prs", [])]
    for doc in links.get("docs", []):
        listed.append(f"- documentation: <{doc['url']}>")
        if doc.get("quote"):
            listed.append(f"  > {' '.join(str(doc['quote']).split())}")
    if listed:
        out += ["## Upstream", "", *listed, ""]
    out += [INTRO, "", GENERATED_NOTE.format(id=finding.id)]
    return "\n".join(out)


def parameters_cell(finding: Finding) -> str:
    lines = [
        "# Parameters: finding.toml's [parameters], then those plugpull report sets (pin, line_repeats, fork_server,",
        "# plugpull_commit, results_path, from_python). papermill overrides them; so does plugpull report -p KEY VALUE.",
    ]
    for name, value in declared(finding).items():
        lines.append(f"{name} = {literal(value, 0, WIDTH - len(name) - 3)}")
    return "\n".join(lines)


def call_cell(finding: Finding) -> str:
    """The one call into the kernel, with what it needs of finding.toml that is not a parameter."""
    names = list(declared(finding))
    args = [_flat(finding.id), literal(list(finding.frameworks), 4, WIDTH - 5)]
    args.append("dict(\n" + "".join(f"        {n}={n},\n" for n in names) + "    )")
    if finding.agent is not None:
        args += [f"agent={literal(finding.kernel_agent(), 4, WIDTH - 10)}", f"scenario={_flat(finding.scenario)}"]
    elif "targets" not in finding.parameters:
        args.append(f"target={_flat(finding.target)}")
    if finding.apart:
        args.append("apart=True")
    body = "".join(f"    {a},\n" for a in args)
    return f"from plugpull.report.kernel import notebook as nb\n\nnb.report(\n{body})"


def notebook(finding: Finding) -> nbformat.NotebookNode:
    """The generated notebook of ``finding``: valid nbformat 4.5 with fixed cell ids (the same finding.toml gives the
    same bytes), no outputs, a kernelspec with its language (papermill needs it)."""
    book = nbformat.v4.new_notebook()
    book.nbformat, book.nbformat_minor = 4, 5
    book.metadata = nbformat.from_dict(
        {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}, GENERATED: {"generated_from": "finding.toml"}}
    )
    book.cells = [
        nbformat.v4.new_markdown_cell(title_cell(finding), id="title"),
        nbformat.v4.new_code_cell(parameters_cell(finding), id="parameters", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(call_cell(finding), id="report"),
    ]
    nbformat.validate(book)
    return book


def text_of(finding: Finding) -> str:
    """The generated notebook as the bytes it is written with (nbformat's JSON, one trailing newline)."""
    return nbformat.writes(notebook(finding)) + "\n"


def is_generated(path: Path) -> bool:
    try:
        return GENERATED in json.loads(path.read_text()).get("metadata", {})
    except (OSError, ValueError):
        return False


def write_notebooks(findings: dict[str, Finding]) -> list[Path]:
    """Write the notebook of every finding whose notebook is generated or missing; the paths written."""
    written = []
    for finding in findings.values():
        path = finding.notebook
        if path.is_file() and not is_generated(path):
            continue
        text = text_of(finding)
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(path)
    return written


def stale(findings: dict[str, Finding], root: Path) -> list[str]:
    """One problem per generated notebook that differs from what its finding.toml gives (or is missing)."""
    problems = []
    for finding in findings.values():
        path = finding.notebook
        where = path.relative_to(root) if path.is_relative_to(root) else path
        if not path.is_file():
            problems.append(f"{where}: missing; plugpull report regenerate writes it from finding.toml")
        elif is_generated(path) and path.read_text() != text_of(finding):
            problems.append(f"{where}: out of date with findings/{finding.id}/finding.toml; plugpull report regenerate")
    return problems


# --- plugpull report new ----------------------------------------------------------------------------------------

#: A finding id: a folder name and part of record names and URLs.
FINDING_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")
#: ``--pin DIST==VERSION``: one release of one distribution.
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
#: The line `report new` puts in what it leaves for a person to write; `report check` lists each one left.
TODO = "TODO(plugpull report new)"
#: What a new pin set's kernel needs beside the framework: what the notebook's kernel imports (plugpull itself is
#: installed from the repository with --no-deps: report/harness/environment.py).
KERNEL_NEEDS = ("ipykernel", "pandas", "matplotlib")


@dataclass(frozen=True)
class NewFinding:
    """What ``plugpull report new`` was asked for, checked (:func:`parse_new`)."""

    id: str
    agent: Path  # the user's agent file
    agent_args: str
    scenario: str
    pins: tuple[tuple[str, str], ...]  # (distribution, version)
    issue: str | None


def parse_new(
    root: Path, finding_id: str, agent: Path, scenario: str, pins: list[str], issue: str | None, agent_args: str
) -> NewFinding:
    """The arguments of ``report new``, or UsageError (one line) before anything is written."""
    from plugpull.scenarios.registry import REGISTRY

    if not FINDING_ID.match(finding_id):
        raise UsageError(f"finding id {finding_id!r}: lower-case letters, digits, '.', '_' and '-' (a folder name)")
    for taken in (root / FINDINGS_DIR / finding_id, root / "notebooks" / f"{finding_id}.ipynb"):
        if taken.exists():
            raise UsageError(f"finding {finding_id!r} exists already ({taken.relative_to(root)})")
    if not agent.is_file():
        raise UsageError(f"--agent {agent}: no such file")
    names = [n for n in REGISTRY.names() if n != "resume-after-upgrade"]
    if scenario not in names:
        raise UsageError(f"--scenario {scenario!r}: one of {', '.join(names)} (an agent runs one of them)")
    if not pins:
        raise UsageError("--pin DIST==VERSION is needed at least once: the release(s) to run the agent on")
    parsed = []
    for pin in pins:
        match = PIN.match(pin.strip())
        if match is None:
            raise UsageError(f"--pin {pin!r}: DIST==VERSION, e.g. --pin openai-agents==0.24.0")
        parsed.append((match.group(1), match.group(2)))
    if len({f"{d}-{v}" for d, v in parsed}) != len(parsed):
        raise UsageError("--pin: the same release twice")
    if issue is not None and not re.match(r"^https?://\S+$", issue):
        raise UsageError(f"--issue {issue!r}: the upstream issue's URL (https://...)")
    try:
        shlex.split(agent_args)
    except ValueError as exc:
        raise UsageError(f"--agent-args {agent_args!r}: {exc}") from None
    return NewFinding(finding_id, agent, agent_args, scenario, tuple(parsed), issue)


def _toml(value: Any) -> str:
    """TOML for the strings, numbers, lists and inline tables finding.toml's stubs hold (JSON's quoting is TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ "
            + ", ".join(
                f"{_toml(k) if not re.match(r'^[A-Za-z0-9_-]+$', k) else k} = {_toml(v)}" for k, v in value.items()
            )
            + " }"
            if value
            else "{}"
        )
    raise TypeError(type(value).__name__)


def finding_toml(new: NewFinding) -> str:
    """The new finding.toml: the agent as its target, the defaults of its scenario, a claim stub per default point."""
    from plugpull.scenarios.registry import REGISTRY

    scenario = REGISTRY[new.scenario]
    points = list(scenario.default_points or scenario.points)
    frameworks = list(dict.fromkeys(d for d, _ in new.pins))
    command = " ".join([new.agent.name, *([new.agent_args] if new.agent_args else [])])
    first = min((v for _, v in new.pins), key=version_rule.sort_key)
    parameters: dict[str, Any] = {"repeats": 1, "points": points, "seed": 0, "timeout": 120.0}
    if scenario.Options is not None:  # its own options' defaults, as parameters named as their fields
        parameters.update(dataclasses.asdict(scenario.Options()))
    out = [
        '# A finding made by `plugpull report new` (docs/report.md, "Your upstream issue as a finding").',
        f"# Hand-written from here on: replace every {TODO};",
        f"# `plugpull report check --finding {new.id}` lists the ones left.",
        f"id = {_toml(new.id)}",
        f"title = {_toml(f'{TODO}: what breaks, in one line ({frameworks[0]}, {new.scenario})')}",
        'claim = """',
        f"{TODO}: what the agent does, where the fault lands and what the framework's",
        "own recovery does then, on which releases (the records say it: plugpull report run, then check).",
        '"""',
        f"framework = {_toml(frameworks[0] if len(frameworks) == 1 else frameworks)}",
        "# The target: the agent's command, its file in this folder; a .py file runs with each pin set's python.",
        f"agent = {_toml(command)}",
        f"scenario = {_toml(new.scenario)}",
        "",
        "[links]",
        f"issues = {_toml([new.issue] if new.issue else [])}",
        "prs = []",
        "",
        "# Defaults of the notebook's parameters cell (notebooks/ID.ipynb is generated from this file).",
        "[parameters]",
        *(f"{k} = {_toml(v)}" for k, v in parameters.items()),
    ]
    for point in points:
        out += [
            "",
            "# A stub: `report run` measures this line; write what it shows, then delete `todo`.",
            "[[claims]]",
            f"point = {_toml(point)}",
            f"todo = {_toml(f'{TODO}: set expect from the records (verdict, counts); a FAIL keeps kind, because, a quote or issue, a witness')}",
            f"kind = {_toml('bug')}  # bug | documented | app | expected; none on a PASS",
            f"because = {_toml(f'{TODO}: why this kind, in one or two sentences')}",
            *(
                [f"issue = {_toml(new.issue)}"]
                if new.issue
                else [f"searched = {_toml(f'{TODO}: what was searched upstream, when')}"]
            ),
            f'witness = {{ script = "witness/witness.py", args = ["--point", {_toml(point)}] }}',
            f'expect = [{{ versions = {_toml(">=" + first)}, verdict = "TODO: PASS or FAIL", counts = {{}} }}]',
        ]
    for dist, version in new.pins:
        out += [
            "",
            "[[pins]]",
            f"name = {_toml(f'{dist}-{version}')}",
            f"requirements = {_toml(f'pins/{dist}-{version}.txt')}",
        ]
    return "\n".join(out) + "\n"


def witness_stub(new: NewFinding) -> str:
    """A witness that says what to write: framework only (no plugpull import), argparse, one JSON line, exit 2 (ERROR)
    until it is written, so it can never stand for a verdict."""
    from plugpull.scenarios.registry import REGISTRY

    scenario = REGISTRY[new.scenario]
    points = list(scenario.default_points or scenario.points)
    framework = new.pins[0][0]
    return f'''"""{TODO}: the bug in one sentence, with {framework} alone (this line titles the bundle's ISSUE.md).

{TODO}: write it (docs/report.md, "Kinds and witnesses"). Run the agent's flow with the framework's own API, do the
fault yourself (fork, then os.kill(pid, signal.SIGKILL) inside the tool, or what the point means), count the side
effect in a sqlite or file counter, recover with the framework's own API, and print one JSON line last:
{{"witness", "framework", "version", "verdict", "counts", "did"}}, counts named like the harness's effects.

Exit 0: {TODO} what the framework should do (ISSUE.md's "Expected"); 1: it does not; 2: the script did not run as
designed. Until it is written it says ERROR: a stub is not a verdict.
"""'

import argparse
import importlib.metadata
import json
import sys

FRAMEWORK = {framework!r}
POINTS = {points!r}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=POINTS, required=True)
    args = parser.parse_args()
    version = importlib.metadata.version(FRAMEWORK)
    did = f"not written yet ({TODO}): nothing was run at {{args.point}}"
    print(json.dumps({{"witness": "witness.py", "framework": FRAMEWORK, "version": version, "verdict": "ERROR", "counts": {{}}, "did": did}}))
    return 2


if __name__ == "__main__":
    sys.exit(main())
'''


def pin_in(dist: str, version: str) -> str:
    """A new pin set's hand-written .in, as the committed ones are: the release plus what the kernel imports."""
    lines = [
        "# The kernel's environment for this pin set: the framework plus what the notebook imports.",
        f"{dist}=={version}",
    ]
    return "\n".join([*lines, *KERNEL_NEEDS]) + "\n"


def page(finding: Finding) -> str:
    """docs/finding-ID.md of a new finding: generated from finding.toml, with the generated sections `regenerate` fills
    from the records (the matrix, the kinds)."""
    out = [f"# Finding `{finding.id}`", "", f"**{finding.title}**", "", finding.claim, ""]
    out += [
        f"The target is the finding's agent, `{finding.agent}` in `findings/{finding.id}/`, under the `{finding.scenario}` "
        "scenario; each pin set's python runs it.",
        "",
        "| pin set | lock |",
        "|---|---|",
        *(
            f"| `{p.name}` | `findings/{finding.id}/{p.requirements.relative_to(finding.directory).as_posix()}` |"
            for p in finding.pins
        ),
        "",
        f"Run it: `uv run plugpull report run --finding {finding.id}`; check it: `uv run plugpull report check --finding {finding.id}`.",
        "",
        f"<!-- plugpull:generated matrix {finding.id} -->",
        "<!-- /plugpull:generated -->",
        "",
        f"<!-- plugpull:generated kinds {finding.id} -->",
        "<!-- /plugpull:generated -->",
    ]
    return "\n".join(out) + "\n"


def todo(finding: Finding) -> list[str]:
    """What `report new` left for a person that is still there: one line each (``check`` prints them as problems)."""
    where = f"findings/{finding.id}"
    left = [
        f"{where}/finding.toml: {what} is still a {TODO}"
        for what, text in (("title", finding.title), ("claim", finding.claim))
        if TODO in text
    ]
    left += [f"{where}/finding.toml: {stub}" for stub in finding.stubs]
    for script in sorted((finding.directory / "witness").glob("*.py")):
        if TODO in script.read_text():
            left.append(f"{where}/witness/{script.name}: a stub ({TODO}): write the witness")
    return left


def create(root: Path, new: NewFinding, compile_lock: Callable[[Path, str], str | None]) -> Finding:
    """Make findings/ID/ (finding.toml, the agent, the witness stub, a locked pin set per --pin), then the generated
    notebook and page. Built in a scratch folder under findings/ and moved into place only when every lock compiled:
    nothing is left behind on an error (UsageError)."""
    from plugpull.report.harness.finding import load_finding

    findings = root / FINDINGS_DIR
    scratch = Path(tempfile.mkdtemp(prefix=f".new-{new.id}-", dir=findings))
    try:
        folder = scratch / new.id
        (folder / "pins").mkdir(parents=True)
        (folder / "witness").mkdir()
        shutil.copy2(new.agent, folder / new.agent.name)
        (folder / "witness" / "witness.py").write_text(witness_stub(new))
        for dist, version in new.pins:
            name = f"{dist}-{version}"
            (folder / "pins" / f"{name}.in").write_text(pin_in(dist, version))
            error = compile_lock(folder / "pins", name)
            if error is not None:
                raise UsageError(f"--pin {dist}=={version}: {error}")
        (folder / "finding.toml").write_text(finding_toml(new))
        load_finding(folder, root)  # what was written loads (a bug here, not the user's input)
        folder.rename(findings / new.id)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    finding = load_finding(findings / new.id, root)
    finding.notebook.parent.mkdir(parents=True, exist_ok=True)
    finding.notebook.write_text(text_of(finding))
    doc = root / "docs" / f"finding-{new.id}.md"
    if not doc.exists():
        doc.parent.mkdir(parents=True, exist_ok=True)
        doc.write_text(page(finding))
    return finding
