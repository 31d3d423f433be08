"""The run record: ``findings/<id>/<YYYY-MM-DD>/<pin>.json``, one per (finding, pin set, day).

Written by the notebook's last cell (everything the kernel knows: versions read inside the
pin set's environment, parameters, results), then completed by the pipeline with ``pipeline``
(what only the harness knows: phase times, lock hash, kernel). A notebook that fails never
reaches its last cell: the pipeline then writes the record itself, with ``error`` set.
docs/json-schema.md documents every field. Standard library only: the kernel imports it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from plugpull.results import SCHEMA, Result, Verdict, tally, to_document

VERDICTS = {v.value for v in Verdict}
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: Schemas a record on disk may have. Schema 1 records (notes glued into ``message``) stay valid
#: history; every record written now has ``SCHEMA`` (docs/json-schema.md, "Changes from schema 1").
READABLE = (1, SCHEMA)
REQUIRED = ("schema", "finding", "pin", "date", "started_at", "versions", "parameters", "results", "error")


def build(
    *,
    finding: str,
    pin: str,
    date: str,
    started_at: str,
    finished_at: str,
    versions: dict[str, Any],
    parameters: dict[str, Any],
    results: list[Result],
    error: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The record as a JSON-ready dict; secret-looking environment values are redacted (results.redact)."""
    return to_document(
        results,
        finding=finding,
        pin=pin,
        date=date,
        started_at=started_at,
        finished_at=finished_at,
        versions=versions,
        parameters=parameters,
        tally=tally(results),
        error=error,
        **extra,
    )


def write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")


def problems(path: Path, finding_dir: Path) -> list[str]:
    """What is wrong with the record at ``findings/<id>/<date>/<pin>.json``; empty when it is valid."""
    where = str(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [f"{where}: not valid JSON ({exc})"]
    if not isinstance(record, dict):
        return [f"{where}: not a JSON object"]
    found = [f"{where}: missing field {k!r}" for k in REQUIRED if k not in record]
    if found:
        return found
    if record["schema"] not in READABLE:
        found.append(f"{where}: schema {record['schema']!r}, expected one of {', '.join(map(str, READABLE))}")
    if record["finding"] != finding_dir.name:
        found.append(f"{where}: finding {record['finding']!r} but it is under {finding_dir.name}/")
    if record["pin"] != path.stem:
        found.append(f"{where}: pin {record['pin']!r} but the file is {path.name}")
    folder = path.parent.name
    if not DATE.match(str(record["date"])) or record["date"] != folder:
        found.append(f"{where}: date {record['date']!r} does not match its folder {folder}")
    if not isinstance(record["started_at"], str) or not record["started_at"].startswith(folder):
        found.append(f"{where}: started_at {record['started_at']!r} is not on {folder}")
    if record["error"] is not None and not isinstance(record["error"], str):
        found.append(f"{where}: error must be null or a string")
    if not isinstance(record["results"], list):
        return found + [f"{where}: results must be a list"]
    for i, result in enumerate(record["results"]):
        if not isinstance(result, dict):
            found.append(f"{where}: results[{i}] is not an object")
            continue
        if result.get("verdict") not in VERDICTS:
            found.append(
                f"{where}: results[{i}] verdict {result.get('verdict')!r} is not one of {', '.join(sorted(VERDICTS))}"
            )
        for key in ("scenario", "point", "target", "message"):
            if not isinstance(result.get(key), str):
                found.append(f"{where}: results[{i}] has no {key}")
        if record["schema"] != 1:
            found.extend(f"{where}: results[{i}] {p}" for p in note_problems(result.get("notes")))
    if record["error"] is None and not record["results"]:
        found.append(f"{where}: no results and no error")
    return found


def note_problems(notes: Any) -> list[str]:
    """What is wrong with a result's ``notes`` (schema 2): a list of {text, url, condition}."""
    if not isinstance(notes, list):
        return ["has no notes list"]
    found = []
    for j, note in enumerate(notes):
        if not isinstance(note, dict):
            found.append(f"notes[{j}] is not an object")
            continue
        for key in ("text", "condition"):
            if not isinstance(note.get(key), str) or not note[key]:
                found.append(f"notes[{j}] has no {key}")
        if note.get("url") is not None and not isinstance(note["url"], str):
            found.append(f"notes[{j}] url must be null or a string")
    return found
