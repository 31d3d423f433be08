"""npm pin sets: a JavaScript framework's release as a package.json and its package-lock.json, installed once, cached.

A finding about a framework on the npm registry (LangGraph.js, the OpenAI Agents SDK for JS, Mastra) pins a release
the npm way: ``[[pins]] npm = "pins/NAME"``, a folder holding ``package.json`` (exact versions) and
``package-lock.json`` (lockfileVersion 2 or 3: every package with its resolved URL and integrity hash). Its node_modules
live at ``<cache>/npm/<key>/node_modules``; ``key`` hashes both files, the Node ABI and the platform (a native addon
is built for one Node), so an edited lock makes a new folder and an old one is never patched in place.

``npm ci`` installs exactly the lock and refuses when package.json and the lock disagree
(https://docs.npmjs.com/cli/v11/commands/npm-ci); ``--ignore-scripts`` runs no package's install script. A package
that must build a native addon (better-sqlite3, LangGraph.js's SQLite checkpointer) is named in package.json's
``"plugpull": {"rebuild": [...]}`` and only it is rebuilt (``npm rebuild NAME``, its own install script).

The agent's folder beside the kernel gets a ``node_modules`` of its own (:func:`stage`): a link to each cached
package, and plugpull's Node client (``plugpull-client``) copied from the repository's clients/js on every run, as
plugpull itself is reinstalled into a Python pin set's venv: a report always runs the current client.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugpull.errors import FindingError
from plugpull.report.harness.environment import cache_dir, run_step

LAYOUT = "1"
CLIENT = "plugpull-client"
#: Where the Node client is in the repository.
CLIENT_SOURCE = "clients/js"
#: The Node client's files a staged agent imports (clients/js/package.json "files").
CLIENT_FILES = ("package.json", "index.js", "index.d.ts")
#: An exact npm version: what a pin set's package.json must give each dependency (no ranges, no tags).
_EXACT = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")


def node_binaries() -> tuple[str, str]:
    """``node`` and ``npm`` on PATH; FindingError (one line) when either is missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise FindingError(
            "an npm pin set needs node and npm on PATH (Debian: apt-get install nodejs npm; https://nodejs.org)"
        )
    return node, npm


def read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except OSError:
        raise FindingError(f"{what}: {path} does not exist") from None
    except ValueError as exc:
        raise FindingError(f"{what}: {path} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise FindingError(f"{what}: {path} is not a JSON object")
    return value


def check_locked(folder: Path, what: str) -> None:
    """The pin set is exact: package.json pins every dependency to one version, the lock holds each package with its
    integrity hash, and the lock's root agrees with package.json (what ``npm ci`` would refuse, said before any
    install). plugpull-client is not in it: the harness stages the repository's own (:func:`stage`)."""
    manifest = read_json(folder / "package.json", what)
    lock = read_json(folder / "package-lock.json", what)
    dependencies = manifest.get("dependencies") or {}
    if not isinstance(dependencies, dict) or not dependencies:
        raise FindingError(f"{what}: {folder / 'package.json'} lists no dependencies")
    if CLIENT in dependencies:
        raise FindingError(
            f"{what}: {folder / 'package.json'} lists {CLIENT}: leave it out, plugpull report stages the repository's own"
        )
    loose = [f"{name}@{spec}" for name, spec in dependencies.items() if not _EXACT.match(str(spec))]
    if loose:
        raise FindingError(f"{what}: {folder / 'package.json'}: {', '.join(loose)} is not one exact version")
    if lock.get("lockfileVersion") not in (2, 3):
        raise FindingError(f"{what}: {folder / 'package-lock.json'} is not lockfileVersion 2 or 3 (npm 7 or later)")
    packages = lock.get("packages") or {}
    root = packages.get("", {})
    if (root.get("dependencies") or {}) != dependencies:
        raise FindingError(
            f"{what}: {folder / 'package-lock.json'} is not the lock of its package.json (rerun npm install --ignore-scripts)"
        )
    unhashed = [p for p, entry in packages.items() if p and not entry.get("link") and not entry.get("integrity")]
    if unhashed:
        raise FindingError(f"{what}: {folder / 'package-lock.json'}: {unhashed[0]} has no integrity hash")
    for name, version in dependencies.items():
        locked = (packages.get(f"node_modules/{name}") or {}).get("version")
        if locked != version:
            raise FindingError(
                f"{what}: {folder / 'package-lock.json'} locks {name} {locked}, package.json says {version}"
            )


def node_abi(node: str) -> str:
    """The Node release and module ABI (``process.versions.modules``): what a native addon is built for."""
    proc = subprocess.run(
        [node, "-p", "process.version + ' ' + process.versions.modules"], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() or "unknown"


def lock_key(folder: Path, node: str) -> str:
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((folder / name).read_bytes() + b"\0")
    digest.update(f"{node_abi(node)} {platform.system()} {platform.machine()} {LAYOUT}".encode())
    return digest.hexdigest()[:16]


@dataclass
class NpmEnv:
    """An installed npm pin set: its node_modules and what the record says about it."""

    node_modules: Path
    lock_sha256: str
    reused: bool = False
    phases: dict[str, float] = field(default_factory=dict)


def cache_home() -> Path:
    return cache_dir() / "npm"


def ensure(folder: Path) -> NpmEnv:
    """The cached node_modules of the pin set in ``folder`` (installed with ``npm ci`` if missing)."""
    node, npm = node_binaries()
    key = lock_key(folder, node)
    home = cache_home() / key
    home.mkdir(parents=True, exist_ok=True)
    phases: dict[str, float] = {}
    with open(home / "lock", "w") as guard:  # two report runs at once must not install over each other
        fcntl.flock(guard, fcntl.LOCK_EX)
        reused = (home / "ready").exists()
        if not reused:
            shutil.rmtree(home / "node_modules", ignore_errors=True)  # a half-installed one from an interrupted run
            began = time.monotonic()
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(folder / name, home / name)
            try:
                run_step([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], f"npm ci {folder.name}", cwd=home)
                rebuild = (read_json(folder / "package.json", folder.name).get("plugpull") or {}).get("rebuild") or []
                if rebuild:
                    run_step([npm, "rebuild", *rebuild], f"npm rebuild {' '.join(rebuild)}", cwd=home)
            except BaseException:
                shutil.rmtree(home / "node_modules", ignore_errors=True)
                raise
            phases["npm"] = time.monotonic() - began
            (home / "ready").write_text(json.dumps({"pins": folder.name}) + "\n")
    return NpmEnv(
        node_modules=home / "node_modules",
        lock_sha256=hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest(),
        reused=reused,
        phases=phases,
    )


def stage(node_modules: Path, folder: Path, client: Path) -> None:
    """``folder/node_modules``: a link to each package of ``node_modules`` (scopes whole) and the Node client
    copied from ``client`` (the repository's clients/js). Node resolves an ES module's bare imports from the folder
    of the importing file up (https://nodejs.org/api/esm.html#resolution-algorithm; NODE_PATH is not read for
    ``import``), so a script in ``folder`` finds its packages here, and each package its own from the cache."""
    target = folder / "node_modules"
    target.mkdir(parents=True, exist_ok=True)
    for entry in sorted(node_modules.iterdir()):
        if entry.name != CLIENT:
            os.symlink(entry, target / entry.name)
    (target / CLIENT).mkdir()
    for name in CLIENT_FILES:
        shutil.copyfile(client / name, target / CLIENT / name)


def write_pins(
    folder: Path,
    name: str,
    dependencies: dict[str, str],
    *,
    before: str | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """A new npm pin set in ``folder``: package.json with ``dependencies`` and its lock, resolved by
    ``npm install --package-lock-only --ignore-scripts`` (nothing installed), as of ``before`` (an ISO date: npm's
    ``--before``, https://docs.npmjs.com/cli/v11/using-npm/config#before) so a transitive range resolves as it
    did then, as a PyPI pin set's ``--exclude-newer`` does. A dependency given as ``*`` is resolved as of ``before``
    and then pinned to the version the lock chose (a sweep's siblings: the release a user got then). ``extra``:
    package.json's ``plugpull`` table (``rebuild``, a sweep's mark)."""
    _, npm = node_binaries()
    loose = [f"{k}@{v}" for k, v in dependencies.items() if v != "*" and not _EXACT.match(v)]
    if loose:
        raise FindingError(f"npm pin set {name}: {', '.join(loose)} is not one exact version")
    folder.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"]
    argv += [f"--before={before}"] if before else []

    def lock(wanted: dict[str, str]) -> None:
        manifest: dict[str, Any] = {"name": name, "private": True, "type": "module"}
        manifest["dependencies"] = dict(sorted(wanted.items()))
        if extra:
            manifest["plugpull"] = extra
        (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        run_step(argv, f"npm install --package-lock-only {name}", cwd=folder)

    lock(dependencies)
    if "*" in dependencies.values():
        packages = read_json(folder / "package-lock.json", name).get("packages") or {}
        resolved = {k: (packages.get(f"node_modules/{k}") or {}).get("version") or v for k, v in dependencies.items()}
        (folder / "package-lock.json").unlink()
        lock(resolved)
    check_locked(folder, f"npm pin set {name}")


#: package.json's ``plugpull.generated`` of a pin set a sweep wrote (finding.generated_pins finds them by it).
GENERATED = "plugpull report sweep"


@dataclass
class Releases:
    """A package's releases on the npm registry and when each was published: what a sweep asks of an index."""

    name: str
    versions: list[str]
    uploaded: dict[str, dt.datetime]
    shown: str = "the npm registry"

    @property
    def index(self) -> Releases:  # a sweep names the index it listed from: this is its own
        return self

    def upload_time(self, version: str) -> dt.datetime:
        return self.uploaded[version]


def releases(package: str) -> Releases:
    """``npm view PACKAGE time --json``: every version with its publish time (https://docs.npmjs.com/cli/v11/
    commands/npm-view); FindingError (one line) when the registry cannot say."""
    _, npm = node_binaries()
    proc = subprocess.run([npm, "view", package, "time", "--json"], capture_output=True, text=True)
    try:
        times = json.loads(proc.stdout) if proc.returncode == 0 else None
    except ValueError:
        times = None
    if not isinstance(times, dict):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"npm exited {proc.returncode}"]
        raise FindingError(f"npm view {package} time: {tail[0]}")
    uploaded = {}
    for version, when in times.items():
        if version in ("created", "modified") or not isinstance(when, str):
            continue
        uploaded[version] = dt.datetime.fromisoformat(when.replace("Z", "+00:00"))
    return Releases(package, list(uploaded), uploaded)
