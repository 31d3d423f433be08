"""Running a finding's witnesses: framework-only scripts that show a claimed line without plugpull.

A claim's ``witness`` (finding.toml, report/kernel/claims.py) names a script under ``findings/<id>/``. After the
notebook, ``plugpull report`` runs the witness of every claim whose expectation covers the record (its pin
set, or the version of the claim's framework read in the record, which must be installed) ``repeats``
times, each as ``<pin set python> <finding>/<script> <args>`` (a pin pair adds ``--start-python <the
start release's python>``), in a fresh temporary cwd that is also its TMPDIR, with an environment
without ``PLUGPULL_*``, ``PYTHONPATH`` or secret-looking names (results.SECRET_NAME), in a process group
of its own that is SIGKILLed after it exits or when it outlives its ``timeout``.

Each run is stored as ``{"exit_code", "seconds", "timed_out", "output", "stderr_tail", "problem"}``:
``output`` is the JSON object of the script's last stdout line (None when there is none), ``stderr_tail``
the last 2 KiB of its stderr. Standard output and error go to files, so a chatty script cannot fill
the harness's memory: only the last 64 KiB of stdout is read. What the runs mean is judged in
report/kernel/claims.py (``judge_witnesses``), from the record alone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from plugpull.report.harness.finding import FINDINGS_DIR, Finding
from plugpull.report.kernel import claims, record
from plugpull.results import SECRET_NAME

STDERR_TAIL = 2048
STDOUT_TAIL = 65536
#: Names a witness's environment never has: the harness's own settings and what would put another
#: package tree in front of the pin set's (a witness imports only its framework and the standard library).
DROPPED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "TMPDIR")


def environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without PLUGPULL_*, secret-looking names and the Python path settings (DROPPED)."""
    return {
        k: v
        for k, v in base.items()
        if not k.startswith("PLUGPULL_") and not SECRET_NAME.search(k) and k not in DROPPED
    }


def _tail(path: Path, limit: int) -> str:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - limit))
        return handle.read().decode("utf-8", errors="replace")


def last_json_line(stdout: str) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object on the last non-empty line of ``stdout``, or None and why not."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None, "no output on stdout"
    try:
        value = json.loads(lines[-1])
    except ValueError:
        return None, f"its last stdout line is not JSON: {lines[-1][:200]!r}"
    if not isinstance(value, dict):
        return None, "its last stdout line is JSON but not an object"
    return value, None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_once(
    argv: list[str],
    timeout: float,
    base_env: Mapping[str, str] | None = None,
    prepare: Callable[[Path], list[str]] | None = None,
) -> dict[str, Any]:
    """One run of a witness: ``argv`` in a fresh temporary cwd (removed after), its output stored bounded.
    ``prepare(cwd)``, when given, lays the cwd out first and returns the argv to run there instead."""
    scratch = Path(tempfile.mkdtemp(prefix="plugpull-witness-"))
    work, tmp = scratch / "cwd", scratch / "tmp"
    work.mkdir()
    tmp.mkdir()
    env = {**environment(os.environ if base_env is None else base_env), "TMPDIR": str(tmp)}
    out_path, err_path = scratch / "stdout", scratch / "stderr"
    began = time.monotonic()
    run: dict[str, Any] = {"exit_code": None, "seconds": 0.0, "timed_out": False, "output": None, "stderr_tail": ""}
    try:
        if prepare is not None:
            argv = prepare(work)
        with out_path.open("wb") as out, err_path.open("wb") as err:
            try:
                proc = subprocess.Popen(
                    argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
                )
            except OSError as exc:
                run["problem"] = f"could not start: {exc}"
                return run
            try:
                run["exit_code"] = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                run["timed_out"] = True
                _kill_group(proc.pid)
                proc.wait()
            finally:
                # What the witness forked and left behind (a child it did not reap) goes with it.
                _kill_group(proc.pid)
        run["seconds"] = round(time.monotonic() - began, 3)
        run["stderr_tail"] = _tail(err_path, STDERR_TAIL)
        output, problem = last_json_line(_tail(out_path, STDOUT_TAIL))
        run["output"] = output
        if run["timed_out"]:
            run["problem"] = f"timed out after {timeout:g} s"
        elif problem is not None:
            run["problem"] = problem
        return run
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _node_prepare(script: Path, args: list[str], node_modules: Path, client: Path) -> Callable[[Path], list[str]]:
    """How a JavaScript witness's cwd is laid out: the script and the pin set's packages beside it."""
    from plugpull.report.harness import npm

    def prepare(work: Path) -> list[str]:
        shutil.copyfile(script, work / script.name)
        npm.stage(node_modules, work, client)
        node, _ = npm.node_binaries()
        return [node, str(work / script.name), *args]

    return prepare


def planned(finding: Finding, doc: Mapping[str, Any]) -> list[tuple[claims.Claim, claims.Witness]]:
    """The claims whose witness runs for this record: an expectation covers the record and the claim's
    framework is installed in it (read in the record's ``versions``)."""
    out = []
    for claim, expectation, version, _ in claims.covering(finding.claims, doc):
        # The version is the one read in the record (or announced by the line's results): None when the pin
        # set does not install the claim's framework, so there is nothing for its witness to import.
        if expectation.support.witness is not None and version is not None:
            out.append((claim, expectation.support.witness))
    return out


def run_all(
    finding: Finding,
    doc: Mapping[str, Any],
    python: Path | None,
    start_python: Path | None = None,
    *,
    unavailable: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
    node_modules: Path | None = None,
    client: Path | None = None,
) -> list[dict[str, Any]]:
    """The record's ``witnesses``: one entry per planned claim, each run ``repeats`` times.

    ``python`` is the pin set's interpreter; None (no environment) stores every entry with ``error`` =
    ``unavailable``. A script that is not on disk is an entry with ``error`` too. A JavaScript witness
    (``.mjs``, ``.js``, ``.cjs``) runs with ``node``, copied into its cwd beside the npm pin set's
    ``node_modules`` (report/harness/npm.py: Node finds an ES module's packages from the file's folder up).
    """
    entries = []
    for claim, witness in planned(finding, doc):
        entry: dict[str, Any] = {
            "claim": claim.label,
            "script": witness.script,
            "args": list(witness.args),
            "repeats": witness.repeats,
            "timeout": witness.timeout,
            "runs": [],
            "error": None,
        }
        entries.append(entry)
        script = (finding.directory / witness.script).resolve()
        findings = (finding.root / FINDINGS_DIR).resolve()
        if python is None:
            entry["error"] = unavailable or "no environment to run it in"
            continue
        if not script.is_relative_to(findings):
            entry["error"] = f"{witness.script} is outside {FINDINGS_DIR}/"
            continue
        if not script.is_file():
            entry["error"] = f"{script.relative_to(finding.root.resolve()).as_posix()} does not exist"
            continue
        argv = [str(python), str(script), *witness.args]
        if start_python is not None:
            argv += ["--start-python", str(start_python)]
        prepare = None
        if script.suffix in record.JS_SUFFIXES:
            if node_modules is None or client is None:
                entry["error"] = (
                    f"{witness.script} is JavaScript: it runs in an npm pin set's packages, and this has none"
                )
                continue
            prepare = _node_prepare(script, list(witness.args), node_modules, client)
        for i in range(witness.repeats):
            progress(f"witness {witness.script} for {claim.label} ({i + 1}/{witness.repeats}) ...")
            entry["runs"].append(run_once(argv, witness.timeout, prepare=prepare))
    return entries
