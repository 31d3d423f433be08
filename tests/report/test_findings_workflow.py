""".github/workflows/findings.yml: its matrix is `plugpull report list --json`, one job per entry runs that
(finding, pin set), and the merge job runs `merge` and `check`; every plugpull command in it parses, as a
subcommand (no flag the subcommands replaced)."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires
from plugpull.report.harness import cli

pytestmark = requires("yaml", reason="the dask group (uv sync --group dask) brings pyyaml")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def jobs() -> dict:
    """The workflow's jobs: read where a test of this module runs, not by every xdist worker that collects it."""
    import yaml

    return yaml.safe_load((ROOT / ".github" / "workflows" / "findings.yml").read_text())["jobs"]


def commands(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def plugpull_arguments(command: str) -> list[str]:
    """The arguments after `plugpull report` in a step's command, with ${{ ... }} as one placeholder word."""
    inner = re.search(r"\$\(([^)]*)\)", command)  # echo "jobs=$(uv run ... --list --json)" >> ...
    text = inner.group(1) if inner else command
    words = shlex.split(re.sub(r"\$\{\{[^}]*\}\}", "EXPR", text))
    return words[words.index("report") + 1 :]


def test_the_matrix_is_the_output_of_report_list_json(jobs):
    listing = next(job for job in jobs.values() if any("report list" in c for c in commands(job)))
    step = next(s for s in listing["steps"] if "report list" in s.get("run", ""))
    assert plugpull_arguments(step["run"]) == ["list", "--json"]
    name = next(iter(listing["outputs"]))
    assert listing["outputs"][name] == f"${{{{ steps.{step['id']}.outputs.{name} }}}}"
    assert step["run"].startswith(f'echo "{name}=$(') and step["run"].endswith('>> "$GITHUB_OUTPUT"')
    runs = [job for job in jobs.values() if "strategy" in job]
    assert len(runs) == 1
    list_id = next(k for k, v in jobs.items() if v is listing)
    assert runs[0]["needs"] == list_id
    assert runs[0]["strategy"]["matrix"] == {"include": f"${{{{ fromJSON(needs.{list_id}.outputs.{name}) }}}}"}


def test_each_matrix_entry_runs_its_finding_and_pin_set_and_uploads_its_records(jobs):
    job = next(job for job in jobs.values() if "strategy" in job)
    report = next(c for c in commands(job) if "plugpull report" in c)
    assert 'plugpull report run --finding "${{ matrix.finding }}" --pin "${{ matrix.pin }}"' in report
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()"  # a failed notebook still wrote its record
    assert "${{ matrix.finding }}" in upload["with"]["name"] and "${{ matrix.pin }}" in upload["with"]["name"]
    assert upload["with"]["path"].startswith("findings/${{ matrix.finding }}/")
    # The keys the job reads are the keys --list --json prints.
    listed = subprocess.run(
        [sys.executable, "-m", "plugpull.cli", "report", "list", "--json"], capture_output=True, text=True, cwd=ROOT
    )
    entries = json.loads(listed.stdout)
    assert entries and all(set(e) == {"finding", "pin"} for e in entries)
    used = set(re.findall(r"matrix\.(\w+)", json.dumps(job)))
    assert used == {"finding", "pin"}


def test_the_merge_job_downloads_every_records_artifact_then_merges_and_checks(jobs):
    run_id = next(k for k, v in jobs.items() if "strategy" in v)
    merge = next(job for job in jobs.values() if any("report merge" in c for c in commands(job)))
    assert merge["needs"] == run_id and merge["if"] == "always()"
    download = next(s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
    assert download["with"]["pattern"] == "records-*"
    assert [plugpull_arguments(c)[0] for c in commands(merge) if "plugpull report" in c] == ["merge", "check"]
    assert plugpull_arguments(commands(merge)[-2])[1:] == [f"{download['with']['path']}/*"]


def test_every_plugpull_report_command_in_the_workflow_is_one_the_cli_accepts(jobs):
    found = [c for job in jobs.values() for c in commands(job) if "plugpull report" in c]
    assert len(found) == 4
    for command in found:
        args, hint = cli.parse(plugpull_arguments(command))  # raises UsageError on an unknown option
        assert args.command == plugpull_arguments(command)[0] and hint is None, command
