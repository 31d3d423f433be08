"""No machine path in a record: the paths of the machine that ran it, rewritten by role, and a check that finds any.

A record (its ``.json``, ``.ipynb`` and ``.html``) goes upstream, to people on other machines: the env cache's
``.../envs/<key>/venv/bin/python`` in every phase's argv, the run's scratch folder in papermill's parameters, the
repository's place in a witness's warning or a home directory in a traceback say nothing to them and tell them
where this machine keeps things. :class:`Roles` rewrites each such place by what it is (``<the pin set's
python>``, ``<the run's scratch folder>``) and the repository's own files relative to it (``findings/<id>/...``);
:func:`found` is what ``plugpull report check`` and the tests look for in a record written since. Standard
library only: ``check`` runs it in the default environment.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PIN_PYTHON = "<the pin set's python>"
PIN_VENV = "<the pin set's venv>"
START_PYTHON = "<the start release's python>"
START_VENV = "<the start release's venv>"
SCRATCH = "<the run's scratch folder>"
BASE_PYTHON = "<the base python>"
CACHE = "<the plugpull cache>"
TMP = "<tmp>"
HOME = "~"

#: A path on some machine: under a home directory, a temp directory, this team's /work, or the pipeline's scratch
#: folder by its name. Not after a word character, ``.``, ``+``, ``=`` or ``~`` (a URL's path, base64 image data
#: and a path already rewritten to ``~`` are not machine paths); ``sqlite:////tmp/x`` is one.
MACHINE_PATH = re.compile(
    r"(?<![\w.+=~-])(?:/(?:root|home/[^/\s\"'<>\\]+|Users/[^/\s\"'<>\\]+|tmp|var/folders|private/var|work)(?=/)"
    r"|[A-Za-z]:\\\\?Users\\)"
    r"|plugpull-report-[a-z0-9_]{4,}"
)


def _forms(path: Path | str) -> list[str]:
    """A path as given and resolved (a symlinked /tmp is /private/tmp on macOS), without a trailing slash."""
    text = str(path).rstrip("/")
    forms = [text]
    try:
        resolved = str(Path(text).resolve()).rstrip("/")
    except OSError:
        resolved = text
    if resolved != text:
        forms.append(resolved)
    return [f for f in forms if len(f) > 1]  # never "/" itself


def base_prefix(python: Path) -> Path | None:
    """The installation a venv's python was made from (``home`` in its pyvenv.cfg, one folder up), or None."""
    cfg = python.parent.parent / "pyvenv.cfg"
    try:
        for line in cfg.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                return Path(value.strip()).parent
    except OSError:
        return None
    return None


@dataclass
class Roles:
    """Where things are on this machine, each with the name a record gives it (longest place first)."""

    places: list[tuple[str, str]] = field(default_factory=list)  # (absolute path, what it is)

    def add(self, path: Path | str | None, role: str) -> Roles:
        if path is not None and str(path):
            for form in _forms(path):
                if all(form != p for p, _ in self.places):
                    self.places.append((form, role))
        return self

    @classmethod
    def of_run(
        cls,
        *,
        root: Path,
        scratch: Path | None = None,
        python: Path | None = None,
        start_python: Path | None = None,
        cache: Path | None = None,
    ) -> Roles:
        """The places one report run can print: the pin set's (and an upgrade pair's start release's) venv and
        python, the run's scratch folder, the env cache, the repository (its files become relative), the base
        interpreters, the temp directory and the home directory."""
        roles = cls()
        for venv_python, py_role, venv_role in (
            (python, PIN_PYTHON, PIN_VENV),
            (start_python, START_PYTHON, START_VENV),
        ):
            if venv_python is not None:
                venv = Path(venv_python).parent.parent
                roles.add(venv_python, py_role)
                if (venv / "pyvenv.cfg").is_file():  # a venv, not an interpreter's own prefix such as /usr
                    roles.add(venv, venv_role).add(base_prefix(Path(venv_python)), BASE_PYTHON)
        roles.add(scratch, SCRATCH).add(cache, CACHE).add(root, "")
        roles.add(sys.base_prefix, BASE_PYTHON).add(tempfile.gettempdir(), TMP)
        home = os.path.expanduser("~")
        if home not in ("~", "/"):
            roles.add(home, HOME)
        return roles

    def escaped(self) -> Roles:
        """The same places with their names as HTML text (a role's ``<`` and ``'`` escaped), for a rendered page."""
        import html

        return Roles([(place, html.escape(role)) for place, role in self.places])

    def text(self, value: str) -> str:
        """``value`` with every place in it named by its role; the repository's own files relative to it."""
        if not self.places or not value:
            return value
        # Longest place first; a place ends where its name does (/tmp/x is not a prefix of /tmp/xy). The repository's
        # root takes the slash after it: its files read as findings/<id>/...
        end = r"(?=$|[/\s\"'`:,;)\]}>\\])"
        alternatives: list[tuple[str, str]] = []
        for place, role in sorted(self.places, key=lambda pr: -len(pr[0])):
            if role == "":
                alternatives += [(re.escape(place) + "/", ""), (re.escape(place) + end, ".")]
            else:
                alternatives.append((re.escape(place) + end, role))
        pattern = re.compile("|".join(f"({a})" for a, _ in alternatives))
        return pattern.sub(lambda m: alternatives[(m.lastindex or 1) - 1][1], value)

    def value(self, data: Any) -> Any:
        """:meth:`text` applied to every string in a JSON-like value (keys too), the structure kept."""
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            return [self.value(v) for v in data]
        return data


def found(text: str, also: Iterable[Path | str] = ()) -> list[str]:
    """The machine paths in ``text`` (each once, in order): :data:`MACHINE_PATH`, and the places ``also`` names
    (the checking machine's repository, home and cache, wherever those are)."""
    hits = [m.group(0) for m in MACHINE_PATH.finditer(text)]
    for place in also:
        for form in _forms(place):
            start = text.find(form + "/")
            if start >= 0:
                hits.append(form)
    return list(dict.fromkeys(hits))


def context(text: str, hit: str, width: int = 60) -> str:
    """``hit`` with a little of what is around it in ``text``, on one line (for a problem line)."""
    at = text.find(hit)
    if at < 0:
        return hit
    snippet = text[max(0, at - 10) : at + width].replace("\n", " ")
    return snippet.strip()
