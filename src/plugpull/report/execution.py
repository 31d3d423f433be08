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

from plugpull.report.environment import KernelEnv
from plugpull.results import SECRET_NAME

# nbconvert's lab template with the two scripts it loads from a CDN left out (require.js for
# widgets, MathJax for LaTeX): the findings notebooks use neither, and a report must open offline.
OFFLINE_TEMPLATE = (
    "{%- extends 'lab/index.html.j2' -%}"
    "{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}"
    "{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}"
)

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


def render_html(notebook: Path, html: Path) -> float:
    """nbconvert the executed notebook to one self-contained HTML file; returns the seconds it took.

    Plots are PNG outputs, embedded as data URIs; ``embed_images`` also inlines any image a
    markdown cell links, so the file opens offline.
    """
    import jinja2
    from nbconvert import HTMLExporter

    began = time.monotonic()
    exporter = HTMLExporter(
        embed_images=True,
        template_file="plugpull-offline.html.j2",
        extra_loaders=[jinja2.DictLoader({"plugpull-offline.html.j2": OFFLINE_TEMPLATE})],
    )
    body, _ = exporter.from_notebook_node(nbformat.read(str(notebook), as_version=4))
    html.write_text(body)
    return time.monotonic() - began
