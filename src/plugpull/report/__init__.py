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
