"""Pin-set environments: one uv venv and one private Jupyter kernel per lock file, cached.

A venv lives at ``<cache>/envs/<key>/venv``; ``key`` hashes the lock file's bytes and the
Python that builds it, so editing a lock (or changing Python) makes a new one and an old one is
never patched in place. The kernel is registered inside the venv
(``ipykernel install --prefix <venv>``) and found through ``JUPYTER_PATH=<venv>/share/jupyter``:
the user's own kernels are never read or written. plugpull itself is reinstalled from the
repository into the venv on every run (``--no-deps``), so a report always runs the current source.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.errors import FindingError
from plugpull.report.harness import package_index

# Bumped when the layout of a cached environment changes, so old ones are not reused.
LAYOUT = "1"
CACHE_ENV = "PLUGPULL_CACHE_DIR"
# site-packages folders that only the Jupyter kernel imports (once per run), left without ahead-of-time
# bytecode; the framework and everything the agent processes import are compiled.
KERNEL_ONLY = (
    r"/site-packages/(pandas|matplotlib|numpy|IPython|ipykernel|jupyter_client|jupyter_core|zmq|tornado|PIL|"
    r"fontTools|kiwisolver|contourpy|pygments|prompt_toolkit|jedi|parso|debugpy|pyparsing|dateutil|pytz|tzdata|"
    r"cycler|traitlets|comm|psutil|matplotlib_inline|stack_data|executing|asttokens|pure_eval|wcwidth|pexpect)/"
)
# Project templates some packages ship as .py files with placeholders in them (crewai_cli's
# `templates/tool/src/{{folder_name}}/tool.py`): not importable Python, and compileall exits 1 on them,
# which failed every CrewAI environment build.
TEMPLATES = r"/site-packages/[^/]+/templates/"
NOT_COMPILED = f"{KERNEL_ONLY}|{TEMPLATES}"


def cache_dir() -> Path:
    """$PLUGPULL_CACHE_DIR, else $XDG_CACHE_HOME/plugpull, else ~/.cache/plugpull: never inside the repo."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "plugpull"


def uv_binary() -> str:
    found = shutil.which("uv")
    if found is None:
        raise FindingError(
            "plugpull report needs uv on PATH to build the pin sets' environments: https://docs.astral.sh/uv/"
        )
    return found


def lock_key(lock: Path) -> str:
    digest = hashlib.sha256(lock.read_bytes())
    digest.update(f"\0{platform.python_implementation()} {platform.python_version()}\0{LAYOUT}".encode())
    return digest.hexdigest()[:16]


@dataclass
class KernelEnv:
    """A Python environment with a registered Jupyter kernel that papermill can start by name."""

    kernel: str
    python: Path
    jupyter_path: Path  # what JUPYTER_PATH must hold for the kernel to be found
    lock_sha256: str | None = None
    reused: bool = False
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step taken here
    # An upgrade pair's start environment (release A): its Python, given to the notebook as from_python.
    start_python: Path | None = None
    start_lock_sha256: str | None = None
    # An npm pin set's installed packages (report/harness/npm.py), staged beside the agent; None for PyPI.
    node_modules: Path | None = None
    npm_lock_sha256: str | None = None


def run_step(argv: list[str], what: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    """One step of building an environment (uv, ipykernel, npm); RuntimeError with the last lines of its output."""
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{what} failed (exit {proc.returncode}): " + " | ".join(tail))


def _register(argv: list[str]) -> None:
    """``python -m ipykernel install ...`` with a TMPDIR of its own, removed after: ipykernel stages the spec in
    ``mkdtemp(suffix="_kernels")/python3`` and removes only ``python3`` (ipykernel/kernelspec.py, install()),
    which would leave an empty folder in the caller's TMPDIR on every registration."""
    tmp = tempfile.mkdtemp(prefix="plugpull-ipykernel-")
    try:
        run_step(argv, "ipykernel install", env={**os.environ, "TMPDIR": tmp})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_resolves(lock: Path) -> None:
    """Bad input if the lock cannot be resolved (a version that does not exist, a malformed hash).

    A dry run against the harness's own Python: it resolves the pinned set without installing
    anything. An environment already in the cache for this lock skips the check (it resolved).
    """
    if (cache_dir() / "envs" / lock_key(lock) / "ready").exists():
        return
    proc = subprocess.run(
        [uv_binary(), "pip", "install", "--dry-run", "--require-hashes", "-r", str(lock), "--python", sys.executable],
        capture_output=True,
        text=True,
        env=package_index.configured(start=lock.parent).uv_environment(),
    )
    if proc.returncode != 0:
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        reason = (
            next((line for line in lines if line.startswith("cause:")), None)
            or next((line for line in lines if line.startswith("error:")), None)
            or (lines[-1] if lines else f"uv exited {proc.returncode}")
        )
        raise FindingError(f"lock {lock} does not resolve: {reason}")


def source_digest(root: Path) -> str:
    """A hash of what installing plugpull from ``root`` copies: pyproject.toml and every file under src/."""
    digest = hashlib.sha256()
    for path in sorted([root / "pyproject.toml", *(p for p in (root / "src").rglob("*") if p.is_file())]):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def ensure(lock: Path, root: Path) -> KernelEnv:
    """The cached environment for ``lock`` (built if missing), with plugpull freshly installed from ``root``."""
    uv = uv_binary()
    key = lock_key(lock)
    home = cache_dir() / "envs" / key
    home.mkdir(parents=True, exist_ok=True)
    venv = home / "venv"
    python = venv / "bin" / "python"
    kernel = f"plugpull-{key}"
    phases: dict[str, float] = {}
    # Two report runs at once must not build the same venv over each other.
    with open(home / "lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        reused = (home / "ready").exists()
        if not reused:
            shutil.rmtree(venv, ignore_errors=True)  # a half-built one from an interrupted run
            began = time.monotonic()
            try:
                run_step([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], "uv venv")
                run_step(
                    [uv, "pip", "sync", "--quiet", "--require-hashes", "--python", str(python), str(lock)],
                    f"uv pip sync {lock.name}",
                    env=package_index.configured(start=root).uv_environment(),
                )
                # Bytecode ahead of time: PYTHONDONTWRITEBYTECODE=1 machines otherwise recompile the
                # framework in every agent process (docs/architecture.md, "Framework facts"). Not for the
                # packages only the kernel imports, once per run (pandas, matplotlib, IPython, ...): they
                # were most of a cold build's time (docs/performance.md, "Sweeps").
                site = next((venv / "lib").glob("python3*/site-packages"))
                run_step(
                    [str(python), "-m", "compileall", "-q", "-j", "0", "-x", NOT_COMPILED, str(site)],
                    "compileall",
                )
                phases["venv"] = time.monotonic() - began
                began = time.monotonic()
                _register(
                    [
                        str(python),
                        "-m",
                        "ipykernel",
                        "install",
                        "--prefix",
                        str(venv),
                        "--name",
                        kernel,
                        "--display-name",
                        f"plugpull {lock.stem}",
                    ]
                )
                phases["kernel_register"] = time.monotonic() - began
            except BaseException:
                shutil.rmtree(venv, ignore_errors=True)
                raise
            (home / "ready").write_text(json.dumps({"lock": str(lock), "kernel": kernel}) + "\n")
        began = time.monotonic()
        # The same source as the last install into this venv (a sweep runs many releases, each env
        # again and again): skip the wheel build and reinstall, seconds per run on a busy machine.
        source = source_digest(root)
        stamp = home / "plugpull-source"
        if not (stamp.is_file() and stamp.read_text() == source):
            stamp.unlink(missing_ok=True)
            # --refresh-package: uv keys a local project's built wheel on pyproject.toml by default,
            # so without it an edited src/ could be installed from a stale wheel.
            run_step(
                [
                    uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--no-deps",
                    "--reinstall-package",
                    "plugpull",
                    "--refresh-package",
                    "plugpull",
                    "--compile-bytecode",
                    "--python",
                    str(python),
                    str(root),
                ],
                "installing plugpull",
            )
            stamp.write_text(source)
        phases["plugpull_install"] = time.monotonic() - began
    return KernelEnv(
        kernel=kernel,
        python=python,
        jupyter_path=venv / "share" / "jupyter",
        lock_sha256=hashlib.sha256(lock.read_bytes()).hexdigest(),
        reused=reused,
        phases=phases,
    )


def built(lock: Path) -> KernelEnv | None:
    """The cached environment of ``lock`` if one is built (nothing is built or installed here), else None.

    What ``plugpull report jupyter-path`` lists: its kernel, ``plugpull-<key>``, shows in JupyterLab as
    "plugpull <lock name>" once ``<venv>/share/jupyter`` is on JUPYTER_PATH
    (https://docs.jupyter.org/en/latest/use/jupyter-directories.html#data-files).
    """
    home = cache_dir() / "envs" / lock_key(lock)
    if not (home / "ready").exists():
        return None
    venv = home / "venv"
    return KernelEnv(
        kernel=f"plugpull-{lock_key(lock)}", python=venv / "bin" / "python", jupyter_path=venv / "share" / "jupyter"
    )


def lab_kernels(envs: list[KernelEnv]) -> Path:
    """A folder for JUPYTER_PATH holding only the ``plugpull-<key>`` kernels of ``envs`` (rewritten each call).

    Not the venvs' own ``share/jupyter``: each also holds its ipykernel's ``python3`` spec, which would hide
    the default environment's ``python3`` kernel that the notebooks name (JUPYTER_PATH comes first).
    """
    base = cache_dir() / "lab"
    kernels = base / "share" / "jupyter" / "kernels"
    shutil.rmtree(kernels, ignore_errors=True)
    kernels.mkdir(parents=True)
    for env in envs:
        shutil.copytree(env.jupyter_path / "kernels" / env.kernel, kernels / env.kernel)
    return base / "share" / "jupyter"


def current(prefix: Path) -> KernelEnv:
    """This Python as a kernel registered under ``prefix`` (tests and CI smoke runs: no new venv)."""
    began = time.monotonic()
    kernel = "plugpull-current"
    _register([sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", kernel])
    return KernelEnv(
        kernel=kernel,
        python=Path(sys.executable),
        jupyter_path=prefix / "share" / "jupyter",
        phases={"kernel_register": time.monotonic() - began},
    )
