"""The kernel side of ``plugpull report``: what a findings notebook imports, inside its Jupyter kernel.

It runs in the pin set's environment, which installs plugpull with ``--no-deps`` next to the framework,
ipykernel, pandas and matplotlib: so these modules import the standard library, plugpull's core (the
scenarios, targets and results they run), and ``packaging`` (ipykernel requires it; every pin set's lock has
it), pandas and matplotlib only inside the functions that draw, and nothing of :mod:`plugpull.report.harness`
(papermill, nbconvert, uv, the pipeline). The harness imports them too: the claims judge a record, the record
module validates one.

- :mod:`~plugpull.report.kernel.notebook`: the functions the notebooks call (run the lines, table, plot, text,
  write the record);
- :mod:`~plugpull.report.kernel.claims`: what a finding claims per line and version, and the judgement of a
  record against it (pure);
- :mod:`~plugpull.report.kernel.record`: the run record's shape, writing and validation;
- :mod:`~plugpull.report.kernel.versions`: the one version rule (PEP 440 through packaging) and the versions
  installed in another interpreter.
"""
