"""The run record: ``findings/<id>/<YYYY-MM-DD>/<pin>-<run id>.json``, one per report run, never replaced.

The run id is the UTC time the pipeline started the run (``20261129T100246Z``), so a rerun adds
a record beside the earlier ones and the newest per (finding, pin) is the largest run id. The
pipeline stores it as ``run_id``; a record without one (written before run ids) takes it from
``started_at``.

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
#: Schemas a record on disk may have. Schema 1 records (notes glued into ``message``) and schema 2
#: records (no ``load``, no ``witnesses``) stay valid history; every record written now has ``SCHEMA``
#: (docs/json-schema.md, "Changes from schema 1" and "from schema 2").
READABLE = (1, 2, SCHEMA)
RUN_ID = re.compile(r"^\d{8}T\d{6}Z$")
RUN_ID_FORMAT = "%Y%m%dT%H%M%SZ"
#: The folder, in the kernel's working directory, a report run copies a finding's agent files into (harness:
#: Finding.staged): the kernel runs in a scratch folder with plugpull installed as a copy, and finds the agent there.
AGENT_FOLDER = "finding"
#: A JavaScript agent or witness: run with node beside an npm pin set's packages (report/harness/npm.py).
JS_SUFFIXES = (".mjs", ".js", ".cjs")
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


def run_id(record: dict[str, Any]) -> str:
    """The record's run id: ``run_id``, else its ``started_at`` in the same form ("" if neither parses)."""
    if isinstance(record.get("run_id"), str):
        return record["run_id"]
    stamp = str(record.get("started_at") or "")
    compact = re.sub(r"[-:]", "", stamp[:19])
    return compact + "Z" if RUN_ID.match(compact + "Z") else ""


def stem(record: dict[str, Any]) -> str:
    """The file name without suffix: ``<pin>-<run id>``."""
    return f"{record['pin']}-{run_id(record)}"


def write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")


def problems(path: Path, finding_dir: Path) -> list[str]:
    """What is wrong with the record at ``findings/<id>/<date>/<pin>-<run id>.json``; empty when it is valid."""
    where = str(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [f"{where}: not valid JSON ({exc})"]
    return document_problems(record, where, finding_dir.name, path.parent.name, path.stem)


def document_problems(record: Any, where: str, finding: str, folder: str, name: str) -> list[str]:
    """What is wrong with ``record`` for the place ``findings/<finding>/<folder>/<name>.json``
    (``report merge`` checks a record for where it will go, before copying it there)."""
    if not isinstance(record, dict):
        return [f"{where}: not a JSON object"]
    found = [f"{where}: missing field {k!r}" for k in REQUIRED if k not in record]
    if found:
        return found
    if record["schema"] not in READABLE:
        found.append(f"{where}: schema {record['schema']!r}, expected one of {', '.join(map(str, READABLE))}")
    if record["finding"] != finding:
        found.append(f"{where}: finding {record['finding']!r} but it is under {finding}/")
    if not RUN_ID.match(run_id(record)):
        found.append(f"{where}: run_id {record.get('run_id')!r} is not like 20261129T100246Z")
    elif name != stem(record):
        found.append(f"{where}: pin {record['pin']!r}, run {run_id(record)} but the file is {name}.json")
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
    if isinstance(record["schema"], int) and record["schema"] >= 3:
        found.extend(f"{where}: {p}" for p in load_problems(record.get("load")))
        found.extend(f"{where}: {p}" for p in witness_problems(record.get("witnesses")))
    return found


def load_problems(load: Any) -> list[str]:
    """What is wrong with a record's ``load`` (schema 3): {cores, start, end}, each average 3 numbers or null."""
    if not isinstance(load, dict):
        return ["has no load object (cores, start, end)"]
    found = []
    if load.get("cores") is not None and (not isinstance(load["cores"], int) or load["cores"] < 1):
        found.append("load.cores must be a positive number or null")
    for key in ("start", "end"):
        value = load.get(key, "missing")
        if value is not None and not (
            isinstance(value, list) and len(value) == 3 and all(isinstance(x, (int, float)) for x in value)
        ):
            found.append(f"load.{key} must be the 1, 5 and 15 minute load averages or null")
    return found


def witness_problems(witnesses: Any) -> list[str]:
    """What is wrong with a record's ``witnesses`` (schema 3): a list of {claim, script, args, runs, error}."""
    if not isinstance(witnesses, list):
        return ["has no witnesses list"]
    found = []
    for i, entry in enumerate(witnesses):
        at = f"witnesses[{i}]"
        if not isinstance(entry, dict):
            found.append(f"{at} is not an object")
            continue
        for key in ("claim", "script"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                found.append(f"{at} has no {key}")
        if not isinstance(entry.get("args"), list) or not all(isinstance(a, str) for a in entry["args"]):
            found.append(f"{at} args must be a list of strings")
        if entry.get("error") is not None and not isinstance(entry["error"], str):
            found.append(f"{at} error must be null or a string")
        runs = entry.get("runs")
        if not isinstance(runs, list):
            found.append(f"{at} has no runs list")
            continue
        for j, run in enumerate(runs):
            if not isinstance(run, dict):
                found.append(f"{at}.runs[{j}] is not an object")
                continue
            if run.get("exit_code") is not None and not isinstance(run["exit_code"], int):
                found.append(f"{at}.runs[{j}] exit_code must be a number or null")
            if not isinstance(run.get("seconds"), (int, float)):
                found.append(f"{at}.runs[{j}] has no seconds")
            if run.get("output") is not None and not isinstance(run["output"], dict):
                found.append(f"{at}.runs[{j}] output must be an object or null")
            if not isinstance(run.get("stderr_tail", ""), str):
                found.append(f"{at}.runs[{j}] stderr_tail must be a string")
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
