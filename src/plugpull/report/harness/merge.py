"""Records made elsewhere, put into this repository's findings/: ``plugpull report merge`` and the Dask client.

A split run (one CI job per (finding, pin set), or a Dask worker) writes its
``<pin>-<run id>.{json,ipynb,html}`` where it ran. Merging finds every run record under the given
folders (a job's ``findings/<id>/<date>/`` folder, an artifact folder, any depth), checks each for the
place it will take (``findings/<finding>/<date>/<pin>-<run id>``: record.document_problems), and copies
it with its notebook and HTML. Records are append-only (docs/DECISIONS.md, issue 10): a record already
there with the same bytes is skipped, one with the same run id and other bytes is a conflict, and
nothing is copied until every incoming record has been checked.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.report.harness.finding import FINDINGS_DIR, Finding
from plugpull.report.kernel import record

#: What one run leaves, in the order it is copied (the JSON last: a record is there once its JSON is).
SUFFIXES = (".ipynb", ".html", ".json")


class MergeError(ValueError):
    """Incoming records that cannot be merged: bad input, one line."""


@dataclass
class Incoming:
    """One run's files, by suffix, and where they go (``findings/<id>/<date>/<stem>``, no suffix)."""

    doc: dict
    files: dict[str, Path | bytes] = field(default_factory=dict)
    origin: str = ""

    def target(self, root: Path) -> Path:
        return root / FINDINGS_DIR / self.doc["finding"] / self.doc["date"] / record.stem(self.doc)

    def content(self, suffix: str) -> bytes:
        data = self.files[suffix]
        return data if isinstance(data, bytes) else data.read_bytes()


def collect(folders: list[Path]) -> list[Incoming]:
    """Every run record under ``folders`` with its sibling notebook and HTML; a folder without one is an error."""
    found: list[Incoming] = []
    for folder in folders:
        if not folder.is_dir():
            raise MergeError(f"{folder} is not a folder")
        paths = sorted(folder.rglob("*.json"))
        if not paths:
            raise MergeError(f"{folder} holds no run record (*.json)")
        for path in paths:
            try:
                doc = json.loads(path.read_text())
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise MergeError(f"{path}: not valid JSON ({exc})") from None
            if not isinstance(doc, dict) or not isinstance(doc.get("finding"), str):
                raise MergeError(f"{path}: not a run record (no finding)")
            files: dict[str, Path | bytes] = {s: path.with_suffix(s) for s in SUFFIXES if path.with_suffix(s).is_file()}
            found.append(Incoming(doc, files, str(path)))
    return found


def check(incoming: list[Incoming], root: Path, findings: dict[str, Finding]) -> list[Incoming]:
    """The incoming runs not yet in ``root``, each checked; raises MergeError on the first problem."""
    new: dict[Path, Incoming] = {}
    for run in incoming:
        doc = run.doc
        where = run.origin or f"{doc.get('finding')} {doc.get('pin')}"
        folder, name = str(doc.get("date")), Path(run.origin).stem if run.origin else ""
        problems = record.document_problems(doc, where, doc["finding"], folder, name or _stem_or_blank(doc))
        if problems:
            raise MergeError(problems[0])
        finding = findings.get(doc["finding"])
        if finding is None:
            raise MergeError(f"{where}: finding {doc['finding']!r} is not in this repository's findings/")
        if doc["pin"] not in {p.name for p in finding.pins}:
            raise MergeError(f"{where}: finding {finding.id!r} has no pin set {doc['pin']!r}")
        missing = [s for s in SUFFIXES if s not in run.files]
        if missing:
            raise MergeError(f"{where}: no {' or '.join(missing)} beside it (a run writes all three)")
        target = run.target(root)
        earlier = new.get(target)
        here = [s for s in SUFFIXES if _with(target, s).exists()]
        if here:
            if here != list(SUFFIXES) or any(_with(target, s).read_bytes() != run.content(s) for s in SUFFIXES):
                raise MergeError(_conflict(target, root, doc))
            continue  # already merged (the same run from another artifact, or a rerun of merge)
        if earlier is not None:
            if any(earlier.content(s) != run.content(s) for s in SUFFIXES):
                raise MergeError(_conflict(target, root, doc))
            continue
        new[target] = run
    return list(new.values())


def _with(target: Path, suffix: str) -> Path:
    """``target`` plus ``suffix`` (a pin name has dots: Path.with_suffix would cut it)."""
    return target.with_name(target.name + suffix)


def _stem_or_blank(doc: dict) -> str:
    try:
        return record.stem(doc)
    except KeyError:
        return ""


def _conflict(target: Path, root: Path, doc: dict) -> str:
    return (
        f"conflict: {target.relative_to(root)}.* is already there with other content for run id "
        f"{record.run_id(doc)}; records are never replaced"
    )


def place(runs: list[Incoming], root: Path) -> list[Path]:
    """Copy checked runs into ``root``; each file via a ``.part`` beside it, so none is ever half written."""
    written = []
    for run in runs:
        target = run.target(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        for suffix in SUFFIXES:
            final = _with(target, suffix)
            part = final.with_name(final.name + ".part")
            data = run.files[suffix]
            if isinstance(data, bytes):
                part.write_bytes(data)
            else:
                shutil.copyfile(data, part)
            os.replace(part, final)
        written.append(_with(target, ".json"))
    return written
