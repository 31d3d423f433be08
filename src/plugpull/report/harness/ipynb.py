"""Executing a notebook with papermill in a pin set's kernel, and rendering it to HTML with nbconvert.

The kernel starts with the harness's environment minus every variable whose name looks secret
(results.SECRET_NAME): the scripted agents need no key, and a value the kernel never sees cannot
end up in a cell output. Its working directory, TMPDIR, IPython and Jupyter runtime dirs all sit
in the run's scratch directory, which the caller removes, so a run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from plugpull.report.harness.environment import KernelEnv
from plugpull.results import SECRET_NAME

# The HTML page around nbconvert's "basic" template (cells only, no page, no CSS): a few lines of CSS
# instead of the lab template's ~300 KB of JupyterLab styles, so a record is ~10x smaller and the
# append-only findings/ folder stays small as runs accumulate (docs/DECISIONS.md, issue 10). No
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
table { border-collapse: collapse; margin: .6em 0; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
img { max-width: 100%; }
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


def execute(notebook: Path, output: Path, env: KernelEnv, parameters: dict[str, Any], scratch: Path) -> NotebookRun:
    """Run ``notebook`` with ``parameters`` in ``env``'s kernel; the executed copy goes to ``output``.

    Phases: ``kernel_start`` is from the call until the first cell began (kernel launch and
    handshake; papermill's own setup is milliseconds), ``cells`` the sum of cell durations.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

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
    return NotebookRun(output=output, error=error, phases=phases)


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


def render_html(notebook: Path, html: Path, *, exclude_input: bool = False) -> float:
    """nbconvert the executed notebook to one small self-contained HTML file; returns the seconds it took.

    Plots are PNG outputs, embedded as data URIs; ``embed_images`` also inlines any image a
    markdown cell links, so the file opens offline. ``exclude_input`` leaves the code out (the summary page).
    """
    import html as html_lib

    from nbconvert import HTMLExporter
    from pygments.formatters import HtmlFormatter

    began = time.monotonic()
    book = nbformat.read(str(notebook), as_version=4)
    exporter = HTMLExporter(template_name="basic", embed_images=True, exclude_input=exclude_input)
    body, _ = exporter.from_notebook_node(book)
    first = next((c.source for c in book.cells if c.cell_type == "markdown"), "")
    title = first.lstrip("# ").splitlines()[0] if first.strip() else notebook.stem
    html.write_text(
        PAGE.format(
            title=html_lib.escape(title),
            css=PAGE_CSS,
            pygments=HtmlFormatter().get_style_defs(".highlight"),
            body=body,
        )
    )
    return time.monotonic() - began
