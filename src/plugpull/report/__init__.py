"""Findings reports: run each finding's notebook against each of its pin sets and render the results.

Harness side (``plugpull report``): :mod:`finding` reads findings/<id>/finding.toml,
:mod:`environment` builds one cached venv + Jupyter kernel per lock file, :mod:`execution` runs
the notebook with papermill and renders HTML with nbconvert, :mod:`pipeline` places the dated
files, :mod:`results_page` regenerates docs/results.md and checks it, :mod:`record` owns the
run document's shape. Kernel side: :mod:`notebook` is what the notebooks call; it imports
only plugpull, pandas and matplotlib, which every pin set installs.
"""
