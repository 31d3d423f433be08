"""The harness side of ``plugpull report``: everything outside the notebook's kernel.

- :mod:`~plugpull.report.harness.cli`: the subcommands (run, check, regenerate, list, merge, sweep, summary,
  issue-body, bundle, jupyter-path);
- :mod:`~plugpull.report.harness.finding`: findings/<id>/finding.toml and its pin sets;
- :mod:`~plugpull.report.harness.environment`: one cached venv and private Jupyter kernel per lock file;
- :mod:`~plugpull.report.harness.npm`: npm pin sets (package.json + package-lock.json), installed once and staged
  beside a JavaScript agent with the Node client;
- :mod:`~plugpull.report.harness.executors`: where the jobs run, here (``Local``) or on a Dask cluster (``Dask``);
- :mod:`~plugpull.report.harness.ipynb`: one notebook file executed by papermill, given its top cell, rendered
  to HTML by nbconvert;
- :mod:`~plugpull.report.harness.pipeline`: one (finding, pin set) run, from environment to dated files;
- :mod:`~plugpull.report.harness.witness`: runs a claim's framework-only witness script;
- :mod:`~plugpull.report.harness.history`: the records on disk, judged, and the report's top cell;
- :mod:`~plugpull.report.harness.pages`: docs/results.md and the generated sections of hand-written pages;
- :mod:`~plugpull.report.harness.twins`: docs/twins.md's tables, a finding beside its twin in another language;
- :mod:`~plugpull.report.harness.markdown`: the one escape of a value for a Markdown table cell;
- :mod:`~plugpull.report.harness.merge`: records made elsewhere (CI jobs, Dask workers) put into findings/;
- :mod:`~plugpull.report.harness.package_index`: a project's releases and upload times (PEP 691/700);
- :mod:`~plugpull.report.harness.sweep`, :mod:`~plugpull.report.harness.flips`: one finding across releases;
- :mod:`~plugpull.report.harness.summary`: findings/<id>/summary.html from the records;
- :mod:`~plugpull.report.harness.issue_body`, :mod:`~plugpull.report.harness.bundle`: what goes upstream.

It may import :mod:`plugpull.report.kernel`; the kernel side never imports it.
"""
