"""Witness scripts run ``--fork`` from a server that imported their framework once: one import per test module.

A witness run with ``--fork`` imports its framework once and forks each phase from itself, so a module testing
six lines of a script paid six framework imports (LangGraph ~1.5 CPU-s, ADK ~3). Here plugpull's fork server
(plugpull.forkserver) imports the scripts' phase imports once (their ``*_IMPORTS`` tuples, read from the source
without running it); each run is a child forked from it that runs the script as ``__main__`` with its arguments,
still ``--fork`` (its phases are forked from that child, and SIGKILL themselves as they do anywhere), as its own
process group, in a fresh cwd that is also its TMPDIR, with the environment the report's witness runner gives a
witness (report/harness/witness.environment), killed with its group after it exits or when it outlives the timeout.

What differs from ``python script.py ... --fork``: the framework's modules were imported by the server, so the
script's own import loop finds them in place (as every phase forked by a fork server does, docs/DECISIONS.md
"Harness core and processes"), and the server's process sits between pytest and the witness. Each script keeps
its cold line run by the report's runner (run_once) in a fresh interpreter, as the records run it.

A server imports what all its scripts' phases import, so scripts share one only where that adds nothing a racing
line's phases import late: ADK's racing approvers import its run-time modules after their barrier, and warm ones
race differently (docs/DECISIONS.md, "The test suite"), so that witness is not forked from the
server that holds the killed-tool witness's imports. The LangGraph server adds to the racing approval witness's
imports only langgraph.func, the async SQLite saver (aiosqlite) and the scripts themselves, none on its path.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from plugpull.evidence import Outcome
from plugpull.forkserver import ForkServer
from plugpull.report.harness.witness import environment, last_json_line


def phase_imports(script: Path) -> list[str]:
    """The modules a witness's phases import, as its module-level ``*_IMPORTS`` constants name them (a tuple, or
    a dict of tuples), read from the source: importing the script must not be what imports the framework."""
    names: list[str] = []
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id.endswith("_IMPORTS") for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            for group in value.values() if isinstance(value, dict) else [value]:
                names += [name for name in group if name not in names]
    return names


#: A witness's exit code for its verdict (docs/report.md, "witness": one JSON line last, exit 0 PASS, 1 FAIL, 2 ERROR).
EXIT_CODES = {"PASS": 0, "FAIL": 1, "ERROR": 2}


def whole_output(run: dict[str, Any], script: Path, framework: str) -> dict[str, Any]:
    """The JSON line of a witness run (as :meth:`WitnessServer.run` or the report's run_once store it), checked to be
    whole: there, its exit code the one its verdict gives, and naming ``script``, ``framework`` and a version."""
    output = run["output"]
    assert output is not None, run
    assert run["exit_code"] == EXIT_CODES[output["verdict"]], run
    assert (output["witness"], output["framework"]) == (Path(script).stem, framework) and output["version"], output
    return output


class WitnessServer:
    """One fork server for witness scripts (a test module's), their framework imported once; close() it."""

    def __init__(self, scripts: Iterable[Path]) -> None:
        self.scripts = [Path(s).resolve() for s in scripts]
        modules = [s.stem for s in self.scripts]
        assert len(set(modules)) == len(modules), modules  # each runs by its module name
        imports = [name for s in self.scripts for name in phase_imports(s)]
        folders = list(dict.fromkeys(str(s.parent) for s in self.scripts))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([*folders, os.environ.get("PYTHONPATH", "")]).rstrip(":")}
        self.server = ForkServer(sys.executable, modules[0], env, also=[*modules[1:], *dict.fromkeys(imports)])

    def run(self, script: Path, *args: str, timeout: float = 300) -> dict[str, Any]:
        """One run of ``script`` with ``args`` (which should hold ``--fork``), as run_once stores a run, and the
        tail of its ``stdout`` (which run_once does not keep)."""
        script = Path(script).resolve()
        assert script in self.scripts, script
        scratch = Path(tempfile.mkdtemp(prefix="plugpull-witness-"))
        work, tmp = scratch / "cwd", scratch / "tmp"
        work.mkdir()
        tmp.mkdir()
        try:
            env = {**environment(os.environ), "TMPDIR": str(tmp)}
            running = self.server.spawn(
                list(args), env=env, cwd=str(work), shown=[sys.executable, str(script), *args], module=script.stem
            )
            if isinstance(running, Outcome):  # plugpull is stopping: nothing was forked
                return {"exit_code": None, "timed_out": False, "output": None, "problem": running.spawn_error}
            outcome = running.wait(timeout)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        output, problem = last_json_line(outcome.stdout or "")
        return {
            "exit_code": outcome.returncode,
            "timed_out": outcome.timed_out,
            "output": output,
            "stderr_tail": (outcome.stderr or "")[-2048:],
            "stdout": outcome.stdout or "",
            "problem": f"timed out after {timeout:g} s" if outcome.timed_out else problem,
        }

    def completed(self, script: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """One run as ``subprocess.run([python, script, *args], capture_output=True, text=True)`` gives it (the
        ends of its output, as run() keeps them)."""
        run = self.run(script, *args, timeout=timeout)
        assert not run["timed_out"] and run["exit_code"] is not None, run
        return subprocess.CompletedProcess(
            [sys.executable, str(script), *args], run["exit_code"], run["stdout"], run["stderr_tail"]
        )

    def close(self) -> None:
        self.server.close()

    def __enter__(self) -> WitnessServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
