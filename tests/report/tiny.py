"""A tiny real finding for executor and merge tests: one Agent Framework line, killed once, on two pin sets."""

from __future__ import annotations

import json
import re
from pathlib import Path

from builders import make_repo

# One real kill-and-resume of the default environment's Agent Framework (about a second): real processes,
# real SIGKILL, the framework's own recovery. Forked from a server that imported the target once (fork_server):
# these tests are about executors and merging, not cold starts; one import a run instead of three.
RUNS_ONE_LINE = """
from plugpull.report.kernel import notebook as nb
env = nb.environment("agent-framework-core", plugpull_commit)
targets = nb.select_targets("agent-framework", {"variant": ["swap"]})
results, seconds = nb.run_lines(targets, ["after-effect"], 1, 0, 120.0, fork_server=True)
nb.write_record(results_path, finding="demo", pin=pin, env=env, parameters={}, results=results, scenario_seconds=seconds)
print(nb.text(results))
"""


def tiny_repo(root: Path) -> Path:
    """make_repo's `demo` finding about agent-framework-core, with a second pin set `p2` (the same lock)."""
    make_repo(root, (RUNS_ONE_LINE,))
    toml = root / "findings" / "demo" / "finding.toml"
    text = toml.read_text().replace('framework = "six"', 'framework = "agent-framework-core"')
    text = text.replace('target = "langgraph"', 'target = "agent-framework"')
    toml.write_text(text + '\n[[pins]]\nname = "p2"\nrequirements = "pins/p1.txt"\n')
    return root


def records(root: Path) -> dict[str, dict]:
    """The tiny finding's records by pin set, without what differs between two runs of the same line."""
    found = {}
    for path in sorted((root / "findings" / "demo").glob("*/*.json")):
        doc = json.loads(path.read_text())
        found[doc["pin"]] = comparable(doc)
    return found


# Run ids, times, load averages and process ids differ between two runs; so do the idempotency keys the target derives
# from a fresh uuid per order (pay_A_<12 hex>) and the process groups (pids of group leaders).
VARYING = {"run_id", "started_at", "finished_at", "phases", "closed_after_kill", "pid", "caller_pid", "load"}
VARYING_SUFFIXES = ("seconds", "group")
FRESH_HEX = re.compile(r"_[0-9a-f]{12}\b")


def comparable(value):
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VARYING and not k.endswith(VARYING_SUFFIXES)}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, str):
        return FRESH_HEX.sub("_<uuid>", value)
    return value


def page(root: Path) -> str:
    """docs/results.md and its every-line CSV with run ids (in the report links) blanked: the rest must be byte for
    byte the same."""
    text = (root / "docs" / "results.md").read_text() + (root / "docs" / "results-lines.csv").read_text()
    return re.sub(r"\d{8}T\d{6}Z", "<run id>", text)
