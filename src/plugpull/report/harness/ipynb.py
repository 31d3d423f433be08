"""Executing a notebook with papermill in a pin set's kernel, and rendering it to HTML with nbconvert.

The kernel starts with the harness's environment minus every variable whose name looks secret
(results.SECRET_NAME): the scripted agents need no key, and a value the kernel never sees cannot
end up in a cell output. Its working directory, TMPDIR, IPython and Jupyter runtime dirs all sit
in the run's scratch directory, which the caller removes, so a run leaves nothing behind.
"""

from __future__ import annotations

import ast
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from plugpull.report.harness.environment import KernelEnv
from plugpull.report.kernel.record import AGENT_FOLDER
from plugpull.results import SECRET_NAME

# The HTML page around nbconvert's "basic" template (cells only, no page, no CSS): a few lines of CSS
# instead of the lab template's ~300 KB of JupyterLab styles, so a record is ~10x smaller and the
# append-only findings/ folder stays small as runs accumulate (docs/DECISIONS.md,
# "Findings, records, pin sets and pages"). No
# script and no CDN link: the report opens offline. Pygments' classes colour the code cells.
PAGE_CSS = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #212121; }
pre, code { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre { background: #f6f8fa; padding: .6em .8em; overflow-x: auto; border-radius: 4px; white-space: pre-wrap; }
.output_area pre { background: #fff; border-left: 3px solid #e0e0e0; border-radius: 0; }
.output_stderr pre { background: #fff5f5; }
.prompt { display: none; }
.input_area { margin-top: 1.2em; }
table { border-collapse: collapse; margin: .6em 0; font-size: 13px; max-width: 100%; }
th, td { border: 1px solid #d0d7de; padding: .25em .6em; text-align: left; vertical-align: top; overflow-wrap: normal; }
th { background: #f6f8fa; }
.w { white-space: nowrap; }
table.cells, table.upgrades { width: 100%; table-layout: fixed; }
table.cells thead th:first-child, table.cells tbody th { width: 30%; font-weight: 400; }
table.cells small { color: #57606a; }
td.cannot { background: #eaeef2; color: #424a53; }
ol.reasons { font-size: 13px; color: #424a53; margin-top: 0; }
table.upgrades th:nth-child(1) { width: 22%; } table.upgrades th:nth-child(2), table.upgrades th:nth-child(3) { width: 8%; }
table.upgrades th:nth-child(4) { width: 7%; } table.upgrades th:nth-child(6) { width: 16%; }
.anchor-link { visibility: hidden; text-decoration: none; }
h1:hover .anchor-link, h2:hover .anchor-link, h3:hover .anchor-link { visibility: visible; }
img, svg { max-width: 100%; height: auto; }
blockquote { margin: .5em 0; padding-left: 1em; border-left: 3px solid #d0d7de; color: #555; }
"""
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}
{pygments}</style>
</head>
<body>
{body}
</body>
</html>
"""

# A kernel that has not answered in this long is not coming (cold imports on 2 busy cores take ~10 s).
KERNEL_START_TIMEOUT = 180


@dataclass
class NotebookRun:
    output: Path  # the executed notebook (papermill writes it even when a cell fails)
    error: str | None
    phases: dict[str, float] = field(default_factory=dict)


@contextlib.contextmanager
def kernel_environ(env: KernelEnv, scratch: Path) -> Iterator[None]:
    """os.environ as the kernel must inherit it (jupyter_client copies os.environ when it starts one)."""
    saved = dict(os.environ)
    tmp = scratch / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        for name in [n for n in os.environ if SECRET_NAME.search(n)]:
            del os.environ[name]
        # The kernel (and the agent processes it starts) may cache bytecode in the pin set's venv: the
        # packages only the kernel imports are not compiled ahead of time (report/harness/environment.py), so the
        # first run of an environment compiles what it imports and later runs of it start warm.
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ.update(
            {
                "JUPYTER_PATH": str(env.jupyter_path),
                "JUPYTER_RUNTIME_DIR": str(scratch / "jupyter-runtime"),
                "IPYTHONDIR": str(scratch / "ipython"),
                "TMPDIR": str(tmp),
            }
        )
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _utc(stamp: str | None) -> dt.datetime | None:
    if not stamp:
        return None
    when = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)  # papermill writes naive UTC


def execute(
    notebook: Path,
    output: Path,
    env: KernelEnv,
    parameters: dict[str, Any],
    scratch: Path,
    stage: Sequence[Path] = (),
) -> NotebookRun:
    """Run ``notebook`` with ``parameters`` in ``env``'s kernel; the executed copy goes to ``output``.

    ``stage``: files copied into ``scratch/<record.AGENT_FOLDER>/`` first, where the kernel (whose working directory
    is ``scratch``) finds a finding's agent (Finding.staged). The executed copy shows its parameters once
    (:func:`one_parameters_cell`) and is titled after its record (:func:`title_after_record`).

    Phases: ``kernel_start`` is from the call until the first cell began (kernel launch and
    handshake; papermill's own setup is milliseconds), ``cells`` the sum of cell durations.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    if stage:
        (scratch / AGENT_FOLDER).mkdir(parents=True, exist_ok=True)
        for path in stage:
            shutil.copy2(path, scratch / AGENT_FOLDER / path.name)
    began_wall = dt.datetime.now(dt.timezone.utc)
    began = time.monotonic()
    error = None
    with kernel_environ(env, scratch):
        try:
            papermill.execute_notebook(
                str(notebook),
                str(output),
                parameters=parameters,
                kernel_name=env.kernel,
                progress_bar=False,
                cwd=str(scratch),
                start_timeout=KERNEL_START_TIMEOUT,
            )
        except PapermillExecutionError as exc:
            error = f"In [{exc.exec_count}] raised {exc.ename}: {exc.evalue}"  # as the notebook numbers it
        except Exception as exc:  # the kernel did not start, died, timed out, ...: still a report
            error = f"{type(exc).__name__}: {exc}".strip()
    phases = {"papermill": time.monotonic() - began}
    if not output.exists():
        placeholder(output, error or "papermill wrote no notebook")
    else:
        nb = nbformat.read(str(output), as_version=4)
        starts = [_utc(c.metadata.get("papermill", {}).get("start_time")) for c in nb.cells]
        starts = [s for s in starts if s is not None]
        if starts:
            phases["kernel_start"] = max(0.0, (min(starts) - began_wall).total_seconds())
        phases["cells"] = sum(c.metadata.get("papermill", {}).get("duration") or 0.0 for c in nb.cells)
        one_parameters_cell(nb)
        # results_path is relative to the kernel's cwd, the scratch folder (it keeps temp paths out of the notebook).
        title_after_record(nb, scratch / str(parameters.get("results_path", "")))
        nbformat.write(nb, str(output))
    return NotebookRun(output=output, error=error, phases=phases)


def one_parameters_cell(book: nbformat.NotebookNode) -> None:
    """Fold the notebook's default ``parameters`` cell into the one papermill injected after it, so a record shows its
    parameters once: the injected cell keeps the values given and gains the defaults nobody overrode, in the
    defaults' order; the defaults' cell goes. A notebook without an injected cell is left as it is."""
    tagged = [i for i, c in enumerate(book.cells) if "parameters" in c.metadata.get("tags", [])]
    injected = [i for i, c in enumerate(book.cells) if "injected-parameters" in c.metadata.get("tags", [])]
    if len(tagged) != 1 or len(injected) != 1:
        return
    defaults, given = book.cells[tagged[0]].source, book.cells[injected[0]].source
    try:
        named = {
            t.id for n in ast.parse(given).body if isinstance(n, ast.Assign) for t in n.targets if hasattr(t, "id")
        }
        kept = [
            ast.get_source_segment(defaults, n) or ""
            for n in ast.parse(defaults).body
            if isinstance(n, ast.Assign) and not {getattr(t, "id", None) for t in n.targets} & named
        ]
    except SyntaxError:
        return
    head = "# Parameters of this run: those plugpull report gave (papermill), then the notebook's defaults\n"
    body = [line for line in given.splitlines() if not line.startswith("#")]
    book.cells[injected[0]].source = head + "\n".join([*body, *kept])
    del book.cells[tagged[0]]


def title_after_record(book: nbformat.NotebookNode, record_path: Path) -> None:
    """The notebook's title (``metadata.title``, the HTML's <title>) names the finding and the framework measured,
    read from the record the notebook wrote; left as it is when there is none."""
    try:
        doc = json.loads(record_path.read_text())
        framework = doc["framework"]
        book.metadata["title"] = (
            f"{doc['finding']}: {framework} {doc['versions'].get(framework) or '?'} (pin set {doc['pin']})"
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return


def placeholder(output: Path, error: str) -> None:
    """A one-cell notebook saying why there is no executed one, so the HTML still tells the story."""
    book = nbformat.v4.new_notebook()
    book.cells.append(nbformat.v4.new_markdown_cell(f"# The notebook did not run\n\n```\n{error}\n```"))
    nbformat.write(book, str(output))


def put_top_cell(notebook: Path, markdown: str) -> None:
    """Insert a generated markdown cell right after the notebook's title cell (the judgement)."""
    book = nbformat.read(str(notebook), as_version=4)
    cell = nbformat.v4.new_markdown_cell(markdown, metadata={"tags": ["plugpull-judgement"]})
    book.cells.insert(1 if book.cells else 0, cell)
    nbformat.write(book, str(notebook))


def rewrite_strings(notebook: Path, rewrite: Callable[[str], str]) -> None:
    """Apply ``rewrite`` to every string of the notebook file (sources, outputs, metadata: papermill's parameters and
    paths too), its structure kept; the file is written again only when something changed."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return rewrite(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    book = nbformat.read(str(notebook), as_version=4)
    data = json.loads(nbformat.writes(book))
    new = walk(data)
    if new != data:
        nbformat.write(nbformat.from_dict(new), str(notebook))


def put_reproduce(notebook: Path, text: str) -> None:
    """Make ``text`` what the notebook's "how to reproduce" cell printed: the code cell that calls ``reproduce(``
    gets it as its only output (the harness knows where the run came from; the kernel knew only a commit); in a
    generated notebook, whose one ``nb.report(...)`` cell prints everything, the output the kernel tagged as its
    "how to reproduce" (notebook.REPRODUCE) gets it. A notebook with neither gets a markdown cell at the end."""
    book = nbformat.read(str(notebook), as_version=4)
    tagged = [
        (c, i)
        for c in book.cells
        if c.cell_type == "code"
        for i, o in enumerate(c.get("outputs", []))
        if (o.get("metadata") or {}).get("plugpull") == "reproduce"
    ]
    cell = next((c for c in book.cells if c.cell_type == "code" and "reproduce(" in c.source), None)
    if tagged:
        for c, i in tagged:
            c.outputs[i] = nbformat.v4.new_output(
                "display_data", data={"text/plain": text.rstrip("\n")}, metadata={"plugpull": "reproduce"}
            )
    elif cell is not None:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text.rstrip("\n") + "\n")]
    else:
        book.cells.append(nbformat.v4.new_markdown_cell(f"## How to reproduce\n\n```\n{text.rstrip()}\n```"))
    nbformat.write(book, str(notebook))


_CELL = re.compile(r"(<(t[dh]|li|p)\b[^>]*>)(.*?)(</\2>)", re.DOTALL)
_TAG = re.compile(r"(<[^>]+>)")
_JOINED = re.compile(r"[^\s<>]*[-/][^\s<>]*[^\s<>.,;:)]")


def whole_words(body: str) -> str:
    """``body`` with each table cell's, list item's and paragraph's joined words (``after-effect``, ``findings/x/finding.toml``) in a
    ``<span class="w">`` the CSS keeps on one line: Chromium breaks after a hyphen or slash, and a table cell that
    breaks "after-|effect" or "reproduc|es" (``overflow-wrap: anywhere``) reads as two words. Tags are left alone;
    only the text between them changes."""

    def cell(match: re.Match[str]) -> str:
        parts = _TAG.split(match.group(3))
        for i in range(0, len(parts), 2):  # the text between tags (the split keeps tags at odd places)
            parts[i] = _JOINED.sub(lambda m: f'<span class="w">{m.group(0)}</span>', parts[i])
        return match.group(1) + "".join(parts) + match.group(4)

    return _CELL.sub(cell, body)


def render_html(notebook: Path, html: Path, *, exclude_input: bool = False, title: str | None = None) -> float:
    """nbconvert the executed notebook to one small self-contained HTML file; returns the seconds it took.

    Plots are PNG outputs, embedded as data URIs; ``embed_images`` also inlines any image a
    markdown cell links, so the file opens offline. ``exclude_input`` leaves the code out (the summary page).
    ``title``: the page's <title> (default: the first line of the first markdown cell).
    """
    import html as html_lib

    from nbconvert import HTMLExporter
    from pygments.formatters import HtmlFormatter

    began = time.monotonic()
    book = nbformat.read(str(notebook), as_version=4)
    exporter = HTMLExporter(template_name="basic", embed_images=True, exclude_input=exclude_input)
    body, _ = exporter.from_notebook_node(book)
    body = whole_words(body)
    first = next((c.source for c in book.cells if c.cell_type == "markdown"), "")
    if title is None:
        title = book.metadata.get("title") or (first.lstrip("# ").splitlines()[0] if first.strip() else notebook.stem)
    html.write_text(
        PAGE.format(
            title=html_lib.escape(title),
            css=PAGE_CSS,
            pygments=HtmlFormatter().get_style_defs(".highlight"),
            body=body,
        )
    )
    return time.monotonic() - began
