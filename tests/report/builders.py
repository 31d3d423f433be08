"""Builders for report tests: throwaway repositories, notebooks and hand-built run records."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import nbformat


def write_notebook(
    path: Path, *cells: str, parameters: str = "pin = 'x'\nplugpull_commit = None\nresults_path = 'r.json'"
) -> Path:
    """A notebook with a `parameters` cell and the given code cells."""
    book = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    book.cells.append(nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}))
    book.cells.extend(nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(book, str(path))
    return path


LOCK = "six==1.17.0 \\\n    --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274\n"


def make_repo(
    root: Path,
    notebook_cells: tuple[str, ...] = (),
    *,
    lock: str = LOCK,
    parameters: str | None = None,
    defaults: str = "",
) -> Path:
    """A minimal repository: pyproject.toml, one finding `demo` with pin set `p1`, its notebook."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    finding = root / "findings" / "demo"
    (finding / "pins").mkdir(parents=True)
    (finding / "pins" / "p1.txt").write_text(lock)
    (finding / "finding.toml").write_text(
        textwrap.dedent(f"""\
        id = "demo"
        title = "A demo finding"
        claim = "Something holds."
        notebook = "notebooks/demo.ipynb"
        framework = "six"
        target = "langgraph"
        [parameters]
        {defaults}
        [[pins]]
        name = "p1"
        requirements = "pins/p1.txt"
        """)
    )
    kwargs = {"parameters": parameters} if parameters is not None else {}
    write_notebook(root / "notebooks" / "demo.ipynb", *notebook_cells, **kwargs)
    return root


def record(
    *,
    finding="demo",
    pin="p1",
    date="2026-11-01",
    started="T10:00:00+00:00",
    verdicts=("PASS",),
    error=None,
    counts=None,
    version="1.0",
) -> dict:
    """A hand-built run record, as the notebook's last cell writes it."""
    return {
        "schema": 1,
        "finding": finding,
        "pin": pin,
        "date": date,
        "started_at": date + started,
        "finished_at": date + started,
        "framework": "six",
        "versions": {"six": version, "plugpull": "0.1.0"},
        "parameters": {"repeats": len(verdicts)},
        "error": error,
        "tally": [],
        "results": []
        if error
        else [
            {
                "verdict": v,
                "scenario": "kill-mid-tool",
                "point": "after-effect",
                "target": f"six {version} mode=a",
                "message": "m",
                "framework": "six",
                "version": version,
                "options": {"mode": "a"},
                "evidence": {"counts": counts or {"refund": 1 if v == "PASS" else 2}},
                "stderr": "",
                "seconds": 1.0,
            }
            for v in verdicts
        ],
    }


def put_record(root: Path, doc: dict, name: str | None = None) -> Path:
    """Write ``doc`` where the pipeline puts it: findings/<id>/<date>/<pin>-<run id>.json (or ``name``)."""
    from plugpull.report.kernel.record import stem

    path = root / "findings" / doc["finding"] / doc["date"] / f"{name or stem(doc)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def report(capsys, *argv: str, root: Path | None = None) -> tuple[int, str, str]:
    """``plugpull report ARGV`` in this process (``--root ROOT`` appended): exit code, stdout, stderr."""
    from plugpull.report.harness import cli

    code = cli.main([*argv, *(["--root", str(root)] if root is not None else [])])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(err: str) -> str:
    """The only line of ``err``, asserting there is one and no traceback (bad input's contract)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
