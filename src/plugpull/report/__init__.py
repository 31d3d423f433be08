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
import importlib.util
import sys
from importlib.machinery import ModuleSpec

#: One release (issue 21): each module's name before the cut -> where it is now. Importing an old name
#: (``from plugpull.report import notebook``, what notebooks written before the cut say, or
#: ``from plugpull.report.witness import run_once``) gives the moved module itself, through the finder below,
#: asked only after the normal ones found no such file. No file stays at an old path, so git follows the renames
#: when branches that edited those files are merged. Delete MOVED and the finder after that release.
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


class _Moved:
    """A meta path finder and loader for the old names: the import of ``plugpull.report.<old>`` ends with the
    moved module in ``sys.modules`` under both names (importlib returns what exec_module leaves there)."""

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        package, _, old = fullname.rpartition(".")
        return importlib.util.spec_from_loader(fullname, _Moved) if package == __name__ and old in MOVED else None

    @staticmethod
    def create_module(spec: ModuleSpec) -> None:
        return None

    @staticmethod
    def exec_module(module: object) -> None:
        name = module.__name__  # type: ignore[attr-defined]
        sys.modules[name] = importlib.import_module(f"{__name__}.{MOVED[name.rpartition('.')[2]]}")


if not any(finder is _Moved for finder in sys.meta_path):
    sys.meta_path.append(_Moved)
