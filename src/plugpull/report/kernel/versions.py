"""The one version rule: PEP 440 versions and ranges, through ``packaging`` (https://packaging.pypa.io).

A claim's ``versions`` range (finding.toml), a sweep's ``--versions`` and every sort of releases in the
generated pages go through here. A range is a PEP 440 specifier set (``>=1.20``, ``>=1.18,<1.20``, ``~=1.2``,
``==1.20.*``). Pre-releases are compared by PEP 440's order and its exclusive-comparison rule, the same on
every ``packaging`` release (``contains(..., prereleases=True)``; the default changed between releases):
``1.20.0rc1`` is in ``>=1.19`` but in neither ``>=1.20`` (it comes before 1.20) nor ``<1.20`` (``<V`` never
admits a pre-release of V itself, https://peps.python.org/pep-0440/#exclusive-ordered-comparison), so the
release candidate of the release a claim is split at is claimed only by a range that names it
(``>=1.20.0rc1``, ``==1.20.0rc1``). A version that is not PEP 440 (``?``) is in no range.

Also :func:`installed_in`: the versions installed in another interpreter, read there.

Kernel side: the standard library and ``packaging``, which every pin set's environment has (ipykernel
requires it) and pyproject declares for the harness.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


class RangeError(ValueError):
    """A version range that is not a PEP 440 specifier set: bad input, one line."""


def specifier(spec: str) -> SpecifierSet:
    """``spec`` as a specifier set; RangeError (one line) when it is not PEP 440."""
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        raise RangeError(
            f"version range {spec!r} is not a PEP 440 range like '>=1.20', '>=1.18,<1.20' or '~=1.2'"
        ) from None


def parse(version: str) -> Version | None:
    """``version`` as a PEP 440 version, None when it is not one."""
    try:
        return Version(str(version))
    except InvalidVersion:
        return None


def in_range(version: str, spec: str) -> bool:
    """Whether ``version`` is in the PEP 440 range ``spec`` (pre-releases: the module docstring)."""
    parsed = parse(version)
    return parsed is not None and specifier(spec).contains(parsed, prereleases=True)


def sort_key(version: str) -> tuple[int, Any]:
    """Releases in PEP 440 order (1.9 before 1.10, 1.20rc1 before 1.20); text that is not a version after them."""
    parsed = parse(version)
    return (0, parsed) if parsed is not None else (1, str(version))


def installed_in(python: Path, distributions: list[str]) -> dict[str, str | None]:
    """Versions read inside another environment's interpreter (None for a distribution it lacks), with its
    Python and OS; empty when the interpreter cannot be run."""
    code = (
        "import importlib.metadata as m, json, sys, platform\n"
        "def v(d):\n"
        "    try: return m.version(d)\n"
        "    except m.PackageNotFoundError: return None\n"
        "out = {d: v(d) for d in sys.argv[1:]}\n"
        "out['python'] = platform.python_version(); out['os'] = platform.platform()\n"
        "print(json.dumps(out))"
    )
    try:
        proc = subprocess.run([str(python), "-c", code, *distributions], capture_output=True, text=True, timeout=60)
        return json.loads(proc.stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}
