"""Findings reports: run each finding's notebook against each of its pin sets and render the results.

Cut by where the code runs (docs/report.md, "Where the code runs"):

- :mod:`plugpull.report.kernel`: what runs inside a notebook's Jupyter kernel, in the pin set's environment
  (the notebooks' helpers, the claims, the run record, the version rule). The standard library, plugpull's
  own core, ``packaging``, and pandas and matplotlib imported where they draw; never the harness.
- :mod:`plugpull.report.harness`: ``plugpull report`` itself, in the default environment (or on a Dask
  worker): findings, pin-set environments, the executors (local, Dask), papermill and nbconvert, the pipeline,
  witnesses, records on disk, pages, merge, sweeps, summaries, issue bodies, bundles, the package index.

The harness imports the kernel side (claims judge records; the record module validates them), never the
reverse: tests/report/test_layers.py checks it.
"""

import importlib
from types import ModuleType

#: One release (issue 21): each module's name before the cut -> where it is now. ``from plugpull.report import
#: notebook`` (what notebooks written before the cut say) still gives the moved module, through the module
#: ``__getattr__`` below (PEP 562); ``import plugpull.report.notebook`` does not. No file stays at an old path, so
#: git follows the renames when branches that edited those files are merged. Delete both after that release.
MOVED = {
    "notebook": "kernel.notebook",
    "claims": "kernel.claims",
    "record": "kernel.record",
    "bundle": "harness.bundle",
    "cli": "harness.cli",
    "environment": "harness.environment",
    "execution": "harness.ipynb",
    "executor": "harness.executors",
    "finding": "harness.finding",
    "flips": "harness.flips",
    "history": "harness.history",
    "issue_body": "harness.issue_body",
    "merge": "harness.merge",
    "pipeline": "harness.pipeline",
    "results_page": "harness.pages",
    "summary": "harness.summary",
    "sweep": "harness.sweep",
    "witness": "harness.witness",
}


def __getattr__(name: str) -> ModuleType:
    if name in MOVED:
        return importlib.import_module(f"{__name__}.{MOVED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
