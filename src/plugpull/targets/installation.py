"""How to install a built-in target's framework, said the way this plugpull was installed.

An installed package gets its extra (``pip install 'plugpull[dbos]'``). A source checkout run with uv (a
``pyproject.toml`` naming plugpull and a ``uv.lock`` above ``src/plugpull``) installs frameworks through its
dependency groups: ``pip install`` there installs into whatever ``pip`` is first on PATH, not the project's
``.venv``, and the next ``uv sync`` removes what the lock does not list. Pure reads of files; nothing runs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

#: The checkout's root when plugpull runs from its source tree: src/plugpull/targets/installation.py.
CHECKOUT = Path(__file__).resolve().parents[3]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def requirement_name(requirement: str) -> str:
    """A requirement's distribution name, normalized (PEP 503): ``pydantic-ai-slim[dbos]>=1.0`` -> ``pydantic-ai-slim``."""
    match = _NAME.match(requirement.strip())
    return re.sub(r"[-_.]+", "-", match.group()).lower() if match else ""


def project_of(root: Path) -> dict[str, Any] | None:
    """The pyproject.toml of a uv checkout of plugpull at ``root``, or None (an installed package)."""
    pyproject = root / "pyproject.toml"
    if not (pyproject.is_file() and (root / "uv.lock").is_file()):
        return None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - tomli is a dependency before 3.11
        import tomli as tomllib
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("project", {}).get("name") == "plugpull" else None


def install_command(extra: str, project: dict[str, Any] | None) -> str:
    """What installs ``extra``'s frameworks: in a uv checkout (``project``), the dependency group holding them."""
    if project is None:
        return f"pip install 'plugpull[{extra}]'"
    wanted = {requirement_name(r) for r in project.get("project", {}).get("optional-dependencies", {}).get(extra, [])}
    groups = project.get("dependency-groups", {})
    for group, members in groups.items():
        names = {requirement_name(m) for m in members if isinstance(m, str)}
        if wanted and wanted <= names:
            return "uv sync" if group == "dev" else f"uv sync --group {group}"
    conflicts = project.get("tool", {}).get("uv", {}).get("conflicts", [])
    if any({"extra": extra} in pair and {"group": "dev"} in pair for pair in conflicts):
        # CrewAI's pins conflict with the dev group's frameworks: an environment of its own (.ci/run does the same).
        env = f".venv-{extra}"
        return (
            f"UV_PROJECT_ENVIRONMENT={env} uv sync --no-dev --extra {extra}, then run plugpull as "
            f"UV_PROJECT_ENVIRONMENT={env} uv run --no-dev --extra {extra} plugpull ..."
        )
    return f"uv sync --extra {extra}"


def how_to_install(extra: str) -> str:
    """The command for this plugpull: its checkout's uv command, or pip for an installed package."""
    return install_command(extra, project_of(CHECKOUT))
