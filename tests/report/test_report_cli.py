"""`plugpull report` as a user meets it: bad input is one line and exit 2 before anything runs; --check."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from builders import make_repo, put_record, record

from plugpull.report import environment
from plugpull.report.finding import load_all

ROOT = Path(__file__).resolve().parents[2]


def report(*args: str, cwd: Path = ROOT, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PLUGPULL_CACHE_DIR": str(tmp / "cache"), "TMPDIR": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "plugpull.cli", "report", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def one_line_exit_2(run: subprocess.CompletedProcess) -> str:
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    return lines[0]


def test_an_unknown_finding_is_one_line_exit_2_listing_the_findings(tmp_path):
    line = one_line_exit_2(report("--finding", "crewai-1", tmp=tmp_path))
    assert line.startswith("plugpull report: unknown finding 'crewai-1'; findings: ")
    assert "langgraph-kill-mid-tool" in line


def test_sweep_options_misused_are_one_line_exit_2_before_the_index_is_asked(tmp_path):
    assert "unknown finding 'nope'" in one_line_exit_2(report("--sweep", "nope", tmp=tmp_path))
    assert "go with --sweep" in one_line_exit_2(report("--bisect", tmp=tmp_path))
    assert "one at a time" in one_line_exit_2(
        report("--sweep", "openai-agents-4775", "--summary", "openai-agents-4775", tmp=tmp_path)
    )
    line = one_line_exit_2(report("--sweep", "openai-agents-4775", "--versions", "from 0.20", tmp=tmp_path))
    assert "not a PEP 440 range" in line


def test_an_unknown_pin_set_is_one_line_exit_2(tmp_path):
    line = one_line_exit_2(report("--finding", "langgraph-kill-mid-tool", "--pin", "langgraph-0.1", tmp=tmp_path))
    assert "unknown pin set 'langgraph-0.1'" in line and "langgraph-1.2.11" in line


def test_a_parameter_the_notebook_does_not_declare_is_one_line_exit_2(tmp_path):
    line = one_line_exit_2(report("--finding", "langgraph-kill-mid-tool", "-p", "durability", "sync", tmp=tmp_path))
    assert "parameter 'durability' is not declared by langgraph-kill-mid-tool.ipynb" in line


def test_a_parameter_of_the_wrong_kind_is_one_line_exit_2(tmp_path):
    line = one_line_exit_2(report("--finding", "langgraph-kill-mid-tool", "-p", "repeats", "many", tmp=tmp_path))
    assert "parameter 'repeats'=\"many\"" in line and "expected a int" in line


def test_a_parameter_plugpull_sets_itself_is_one_line_exit_2(tmp_path):
    assert "set by plugpull report itself" in one_line_exit_2(report("-p", "results_path", "x.json", tmp=tmp_path))


def test_a_lock_without_hashes_is_one_line_exit_2(tmp_path):
    repo = make_repo(tmp_path / "repo", lock="six==1.17.0\n")
    assert "is not pinned with == and a --hash" in one_line_exit_2(report(cwd=repo, tmp=tmp_path))


def test_a_lock_that_does_not_resolve_is_one_line_exit_2_and_builds_nothing(tmp_path):
    lock = "six==0.0.0.404 \\\n    --hash=sha256:" + "0" * 64 + "\n"
    repo = make_repo(tmp_path / "repo", lock=lock)
    line = one_line_exit_2(report(cwd=repo, tmp=tmp_path))
    assert "p1.txt does not resolve" in line and "six" in line
    assert not (tmp_path / "cache" / "envs").exists() and not (repo / "findings" / "demo" / "2026").exists()


def test_outside_a_repository_it_says_where_to_run_it(tmp_path):
    assert "no findings/ folder" in one_line_exit_2(report(cwd=tmp_path, tmp=tmp_path))


def test_check_exits_0_on_valid_records_and_a_fresh_page(tmp_path):
    repo = make_repo(tmp_path / "repo")
    put_record(repo, record())
    from plugpull.report import results_page

    results_page.write(repo)
    run = report("--check", cwd=repo, tmp=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def test_check_exits_1_listing_every_problem(tmp_path):
    repo = make_repo(tmp_path / "repo")
    put_record(repo, record())
    bad = repo / "findings" / "demo" / "2026-11-03" / "p1.json"
    bad.parent.mkdir()
    bad.write_text("[")
    run = report("--check", cwd=repo, tmp=tmp_path)
    assert run.returncode == 1
    assert "p1.json: not valid JSON" in run.stdout and "docs/results.md does not match" in run.stdout


def test_the_committed_records_and_results_page_pass_check(tmp_path):
    run = report("--check", tmp=tmp_path)
    assert run.returncode == 0, run.stdout


def copy_of_this_repository(dest):
    import shutil

    src = Path(__file__).resolve().parents[2]
    for name in ("findings", "docs", "notebooks"):
        shutil.copytree(src / name, dest / name)
    for name in ("README.md", "pyproject.toml"):
        shutil.copy(src / name, dest / name)
    return dest


def contradictions(run: subprocess.CompletedProcess) -> list[str]:
    return [line for line in run.stdout.splitlines() if " does not reproduce: " in line]


def test_check_finds_no_contradiction_in_the_committed_records_and_one_in_a_record_edited_to_contradict_its_claim(
    tmp_path,
):
    repo = copy_of_this_repository(tmp_path / "repo")
    assert contradictions(report("--check", "--finding", "agent-framework-8292", cwd=repo, tmp=tmp_path)) == []
    # Records are append-only: --check judges the newest one of the pin set, so that is the one edited.
    path = max(
        (repo / "findings" / "agent-framework-8292").glob("*/agent-framework-1.18.0-*.json"), key=lambda p: p.name
    )
    doc = json.loads(path.read_text())
    swap = next(r for r in doc["results"] if r["point"] == "after-effect" and r["options"] == {"variant": "swap"})
    swap["evidence"]["counts"] = {"charge_card:A": 1, "charge_card:B": 1}  # as if 1.18.0 were fixed
    swap["verdict"] = "PASS"
    path.write_text(json.dumps(doc))
    assert report("--regenerate", cwd=repo, tmp=tmp_path).returncode == 0  # the page follows the record
    run = report("--check", "--finding", "agent-framework-8292", cwd=repo, tmp=tmp_path)
    assert run.returncode == 1
    (line,) = contradictions(run)
    assert line.startswith(f"findings/agent-framework-8292/2026-11-29/{path.name}: after-effect variant=swap")
    assert "does not reproduce: 1 of 1 run(s) PASS, claimed FAIL" in line and "for <1.20" in line


def demo_with(root: Path, claim: str, *docs: dict) -> Path:
    """make_repo's demo finding with one [[claims]] table, the records, and its pages regenerated."""
    from plugpull.report import results_page

    repo = make_repo(root)
    toml = repo / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace("[[pins]]", claim.strip() + "\n\n[[pins]]", 1))
    for doc in docs:
        put_record(repo, doc)
    results_page.write(repo)
    return repo


TIMING_CLAIM = """
[[claims]]
point = "after-effect"
options = { mode = "a" }
timing = true
repeats = 20
kind = "app"
because = "the demo app saves after the tool"
expect = [{ versions = ">=1", fail_rate = [0.05, 1.0] }]
"""


def test_check_prints_an_inconclusive_line_and_still_exits_0(tmp_path):
    repo = demo_with(tmp_path / "repo", TIMING_CLAIM, record(verdicts=("PASS",) * 20))
    run = report("--check", cwd=repo, tmp=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    (line,) = run.stdout.splitlines()[:-1]
    assert line.endswith("after-effect mode=a is inconclusive: FAIL 0/20 = 0.00 [0.00, 0.16]: the rate is outside "
                         "the claimed [0.05, 1], its interval reaches it (more runs needed)")  # fmt: skip


def test_check_fails_on_a_fail_claim_without_a_kind_and_finding_narrows_it_to_the_findings_asked_for(tmp_path):
    claim = '[[claims]]\npoint = "after-effect"\nexpect = [{ versions = ">=1", verdict = "FAIL" }]'
    repo = demo_with(tmp_path / "repo", claim, record(verdicts=("FAIL",)))
    other = repo / "findings" / "other"
    shutil.copytree(repo / "findings" / "demo", other)
    (other / "finding.toml").write_text(
        (other / "finding.toml")
        .read_text()
        .replace('id = "demo"', 'id = "other"')
        .replace('verdict = "FAIL" }', 'verdict = "FAIL", kind = "expected", because = "nothing was saved yet" }')
    )
    shutil.rmtree(other / "2026-11-01")
    run = report("--check", cwd=repo, tmp=tmp_path)
    assert run.returncode == 1
    assert "findings/demo/finding.toml: `after-effect`: expects FAIL for >=1 but has no kind" in run.stdout
    narrowed = report("--check", "--finding", "other", cwd=repo, tmp=tmp_path)
    assert narrowed.returncode == 0, narrowed.stdout
    assert "(findings: other)" in narrowed.stdout
    assert "unknown finding 'nope'" in one_line_exit_2(report("--check", "--finding", "nope", cwd=repo, tmp=tmp_path))
    assert "takes no --finding, --pin or -p" in one_line_exit_2(
        report("--check", "--pin", "p1", cwd=repo, tmp=tmp_path)
    )


def test_list_json_prints_the_finding_and_pin_set_jobs_a_run_would_make(tmp_path):
    every = json.loads(report("--list", "--json", tmp=tmp_path).stdout)
    assert {"finding": "agent-framework-8292", "pin": "agent-framework-1.20.0"} in every
    assert len(every) == sum(len(f.pins) for f in load_all(ROOT).values() if f.notebook.is_file())
    one = report(
        "--list", "--json", "--finding", "agent-framework-8292", "--pin", "agent-framework-1.23.0", tmp=tmp_path
    )
    assert json.loads(one.stdout) == [{"finding": "agent-framework-8292", "pin": "agent-framework-1.23.0"}]
    text = report("--list", "--finding", "openai-agents-4775", tmp=tmp_path)
    # Hand-written pin sets first, then the ones `--sweep` generated (one per release).
    pins = [p.name for p in load_all(ROOT)["openai-agents-4775"].pins]
    assert pins[:3] == [f"openai-agents-{v}" for v in ("0.22.0", "0.22.2", "0.24.0")]
    assert text.stdout.splitlines() == [f"openai-agents-4775 {pin}" for pin in pins]
    line = one_line_exit_2(report("--list", "--pin", "nope", tmp=tmp_path))
    assert line.startswith("plugpull report: unknown pin set 'nope'")
    assert "--json goes with --list" in one_line_exit_2(report("--json", tmp=tmp_path))


def test_jupyter_path_gathers_only_the_pin_sets_private_kernels_and_says_when_none_is_built(tmp_path):
    root = make_repo(tmp_path / "repo")
    line = one_line_exit_2(report("--jupyter-path", cwd=root, tmp=tmp_path))
    assert "no pin set environment is built yet" in line
    lock = root / "findings" / "demo" / "pins" / "p1.txt"
    key = environment.lock_key(lock)  # this Python and the lock's bytes, as the report's subprocess computes it
    venv_share = tmp_path / "cache" / "envs" / key / "venv" / "share" / "jupyter" / "kernels"
    for name in (f"plugpull-{key}", "python3"):  # a built venv holds its ipykernel's python3 spec too
        (venv_share / name).mkdir(parents=True)
        (venv_share / name / "kernel.json").write_text(json.dumps({"display_name": name}))
    (tmp_path / "cache" / "envs" / key / "ready").write_text("{}")
    run = report("--jupyter-path", cwd=root, tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    folder = Path(run.stdout.strip())
    assert sorted(p.name for p in (folder / "kernels").iterdir()) == [
        f"plugpull-{key}"
    ]  # no python3 to hide the default
