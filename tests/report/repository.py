"""This repository's findings, read once a pytest process: the notebook smokes and the pages' layout tests are
parametrized by them, so every xdist worker reads them to collect both modules (~0.06 CPU-s a read)."""

from pathlib import Path

from plugpull.report.harness.finding import load_all

ROOT = Path(__file__).resolve().parents[2]
#: Shared by the modules that import it: read it, do not change it.
FINDINGS = load_all(ROOT)
