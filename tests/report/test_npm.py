"""npm pin sets (report/harness/npm.py), agents run in place and as variants, and the twin page (twins.py).

The pin-set checks are file checks; one test resolves and installs a real one-package pin set from the npm registry
and runs Node on the staged folder (skipped without node and npm, saying why).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from plugpull.errors import FindingError
from plugpull.report.harness import npm, twins
from plugpull.report.harness.finding import load_all
from plugpull.report.kernel import claims

ROOT = Path(__file__).resolve().parents[2]
needs_npm = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="node and npm are not on PATH"
)


def pin_folder(tmp_path: Path, dependencies: dict[str, str], lock: dict | None = None) -> Path:
    folder = tmp_path / "pins" / "p"
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": "p", "dependencies": dependencies}))
    if lock is None:
        lock = {
            "lockfileVersion": 3,
            "packages": {
                "": {"dependencies": dependencies},
                **{
                    f"node_modules/{n}": {"version": v, "resolved": f"https://r/{n}-{v}.tgz", "integrity": "sha512-x"}
                    for n, v in dependencies.items()
                },
            },
        }
    (folder / "package-lock.json").write_text(json.dumps(lock))
    return folder


def test_an_exact_pin_set_with_its_lock_passes_the_check(tmp_path):
    npm.check_locked(pin_folder(tmp_path, {"ms": "2.1.3"}), "pin set 'p'")


@pytest.mark.parametrize(
    ("dependencies", "edit", "says"),
    [
        ({"ms": "^2.1.3"}, None, "ms@^2.1.3 is not one exact version"),
        ({"ms": "latest"}, None, "ms@latest is not one exact version"),
        ({"ms": "2.1.3", "plugpull-client": "file:../.."}, None, "lists plugpull-client"),
        ({"ms": "2.1.3"}, lambda lock: lock["packages"][""].update(dependencies={"ms": "2.1.2"}), "is not the lock of"),
        ({"ms": "2.1.3"}, lambda lock: lock["packages"]["node_modules/ms"].pop("integrity"), "has no integrity hash"),
        ({"ms": "2.1.3"}, lambda lock: lock.update(lockfileVersion=1), "lockfileVersion 2 or 3"),
        ({"ms": "2.1.3"}, lambda lock: lock["packages"]["node_modules/ms"].update(version="2.1.2"), "locks ms 2.1.2"),
    ],
)
def test_a_pin_set_that_is_not_exact_or_not_its_lock_is_refused_in_one_line(tmp_path, dependencies, edit, says):
    folder = pin_folder(tmp_path, dependencies)
    if edit is not None:
        lock = json.loads((folder / "package-lock.json").read_text())
        edit(lock)
        (folder / "package-lock.json").write_text(json.dumps(lock))
    with pytest.raises(FindingError) as caught:
        npm.check_locked(folder, "pin set 'p'")
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_lock_is_refused(tmp_path):
    folder = pin_folder(tmp_path, {"ms": "2.1.3"})
    (folder / "package-lock.json").unlink()
    with pytest.raises(FindingError, match="package-lock.json does not exist"):
        npm.check_locked(folder, "pin set 'p'")


@needs_npm
def test_a_pin_set_is_resolved_installed_once_and_staged_with_the_repositorys_client(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "pins" / "ms-2.1.3"
    npm.write_pins(folder, "ms-2.1.3", {"ms": "2.1.3"}, before="2026-12-01")
    lock = json.loads((folder / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/ms"]["integrity"].startswith("sha512-")

    first = npm.ensure(folder)
    again = npm.ensure(folder)
    assert (first.reused, again.reused) == (False, True) and first.node_modules == again.node_modules
    assert "npm" in first.phases and not again.phases

    staged = tmp_path / "agent"
    npm.stage(first.node_modules, staged, ROOT / "clients" / "js")
    assert (staged / "node_modules" / "ms").is_symlink()
    assert (staged / "node_modules" / "plugpull-client" / "index.js").read_bytes() == (
        ROOT / "clients" / "js" / "index.js"
    ).read_bytes()
    (staged / "probe.mjs").write_text(
        'import ms from "ms";\nimport { announce } from "plugpull-client";\n'
        'console.log(JSON.stringify({ minute: ms("1m"), announce: typeof announce }));\n'
    )
    done = subprocess.run(["node", str(staged / "probe.mjs")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"minute": 60000, "announce": "function"}


def test_a_javascript_finding_runs_an_example_in_place_and_its_variants_by_options():
    findings = load_all(ROOT)
    langgraphjs = findings["langgraphjs-kill-mid-tool"]
    assert langgraphjs.agent_script() == ROOT / "clients" / "js" / "examples" / "langgraph" / "agent.mjs"
    # The kernel runs each variant's file by its name, staged with the scripts it imports.
    assert (
        langgraphjs.kernel_agent()["durability=async key=tool-call-id"] == "agent.mjs tool-call-id --durability async"
    )
    assert {p.name for p in langgraphjs.staged()} >= {"agent.mjs", "graph.mjs"}
    assert all(pin.npm is not None and (pin.npm / "package-lock.json").is_file() for pin in langgraphjs.pins)
    for pin in langgraphjs.pins:
        pin.check_locked()


def test_the_twin_line_is_the_one_with_the_same_point_and_options_and_the_chosen_extra_variant():
    findings = load_all(ROOT)
    js, python = findings["langgraphjs-kill-mid-tool"], findings["langgraph-kill-mid-tool"]
    by_label = {c.label: c for c in js.claims}
    raced = twins.twin_claim(js, by_label["after-effect durability=async key=tool-call-id"], python)
    assert raced is not None and dict(raced.options) == {
        "durability": "async",
        "key": "tool-call-id",
        "model_step": "raced",
    }
    plain = twins.twin_claim(js, by_label["after-effect durability=sync key=none"], python)
    assert plain is not None and dict(plain.options) == {"durability": "sync", "key": "none"}


def test_same_outcome_compares_the_sets_of_outcomes_and_a_side_without_records_is_said():
    claim = load_all(ROOT)["langgraphjs-kill-mid-tool"].claims[0]

    def line(passed: int, failed: int) -> tuple[str, claims.LineJudgement]:
        judged = claims.LineJudgement(claim, claim.expect[0], claims.REPRODUCES, "", passed=passed, failed=failed)
        return "1.0", judged

    assert twins.agreement([line(1, 0)], [line(1, 0), line(3, 0)]) == "same"
    assert twins.agreement([line(0, 1)], [line(1, 0)]) == "differs"
    assert twins.agreement([line(10, 0)], [line(14, 6)]) == "differs"  # a verdict against a rate
    assert twins.agreement([], [line(1, 0)]) == "no record"


# The papermill smoke of each JavaScript finding: its notebook through the whole pipeline (the agent and the packages
# staged beside the kernel, the notebook, the Node witnesses, the record, the HTML), with this test run's kernel and
# the example's own node_modules (.ci/run installs them) in place of the pin set's `npm ci`, which records do.
JS_SMOKES = {
    "langgraphjs-approval": (
        "langgraph",
        {"points": ["killed-after-effect"]},
        {"killed-after-effect durability=sync": "FAIL", "killed-after-effect durability=async": "FAIL"},
    ),
    "mastra-approval": ("mastra", {"points": ["double-resume"]}, {"double-resume": "PASS"}),
    "mastra-kill-mid-tool": (
        "mastra",
        {"points": ["after-effect"]},
        {"after-effect key=none": "FAIL", "after-effect key=run-id": "PASS"},
    ),
    "openai-agents-js-approval": ("openai-agents", {"points": ["double-resume"]}, {"double-resume": "FAIL"}),
    "langgraphjs-kill-mid-tool": (
        "langgraph",
        {"points": ["after-effect"]},
        {
            "after-effect durability=sync key=none": "FAIL",
            "after-effect durability=async key=none": "FAIL",
            "after-effect durability=sync key=tool-call-id": "PASS",
            "after-effect durability=async key=tool-call-id": "PASS",
        },
    ),
}


@needs_npm
@pytest.mark.parametrize("finding_id", sorted(JS_SMOKES))
def test_a_javascript_findings_notebook_runs_its_agent_and_witnesses_with_node_and_writes_a_valid_record(
    finding_id, forked_kernel, tmp_path
):
    import dataclasses

    from plugpull.report.harness import pipeline
    from plugpull.report.kernel import record

    example, parameters, expected = JS_SMOKES[finding_id]
    modules = ROOT / "clients" / "js" / "examples" / example / "node_modules"
    if not modules.is_dir():
        pytest.skip(f"{modules.relative_to(ROOT)} is not installed (.ci/run installs it with npm ci)")
    finding = load_all(ROOT)[finding_id]
    pin = finding.pins[-1]
    job = pipeline.Job(finding, pin, {**finding.parameters, **parameters, "repeats": 1, "line_repeats": []})
    env = dataclasses.replace(forked_kernel, node_modules=modules)
    outcome = pipeline.run(job, commit=None, make_env=lambda job: env, out_root=tmp_path)
    assert outcome.error is None, outcome.error
    doc = json.loads(outcome.files[".json"].read_text())
    assert record.problems(outcome.files[".json"], tmp_path / "findings" / finding_id) == []
    label = {c.label: c for c in finding.claims}
    got = {
        c: next(
            r["verdict"]
            for r in doc["results"]
            if label[c].matches(r["scenario"], r["point"], r.get("framework"), r["options"])
        )
        for c in expected
    }
    assert got == expected
    # The framework's version is read from its package.json in the staged node_modules, and node's beside it.
    installed = json.loads((modules / finding.framework / "package.json").read_text())["version"]
    assert doc["versions"][finding.framework] == installed and doc["versions"]["node"].startswith("v")
    # The Node witnesses ran and agree with their lines.
    witnessed = sorted(c for c in expected if any(e.support.witness for e in label[c].expect))
    ran = [w for w in doc["witnesses"] if w["runs"]]
    # Every covering claim's witness runs (not only those of the points run): these lines' among them.
    assert set(witnessed) <= {w["claim"] for w in ran}
    assert all(r["output"] and r["output"]["framework"] == finding.framework for w in ran for r in w["runs"])
    assert outcome.status == claims.REPRODUCES, outcome.status
    html = outcome.files[".html"].read_text()
    assert str(ROOT) not in html and str(modules) not in html


@needs_npm
def test_a_sweep_writes_an_npm_release_as_a_pin_set_the_finding_then_lists_with_its_siblings_as_of_that_day(
    tmp_path, monkeypatch
):
    from plugpull.report.harness import sweep
    from plugpull.report.harness.finding import load_finding

    finding_dir = tmp_path / "findings" / "demo"
    npm.write_pins(finding_dir / "pins" / "ms-2.1.3", "ms-2.1.3", {"ms": "2.1.3"})
    (finding_dir / "pins" / "kernel.txt").write_text(
        (ROOT / "findings" / "mastra-approval" / "pins" / "kernel.txt").read_text()
    )
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (finding_dir / "finding.toml").write_text(
        'id = "demo"\ntitle = "t"\nclaim = "c"\nframework = "ms"\n'
        'agent = "agent.mjs"\nscenario = "kill-mid-tool"\n'
        '[[pins]]\nname = "ms-2.1.3"\nrequirements = "pins/kernel.txt"\nnpm = "pins/ms-2.1.3"\n'
    )
    (finding_dir / "agent.mjs").write_text("")
    finding = load_finding(finding_dir, tmp_path)
    listed = npm.releases("ms")
    assert {"2.1.2", "2.1.3"} <= set(listed.versions)

    made = sweep.generate(finding, "ms", "2.1.2", released=listed.upload_time("2.1.2"))
    assert made.error is None and not made.reused and made.pin.name == "ms-2.1.2"
    manifest = json.loads((made.pin.npm / "package.json").read_text())
    assert manifest["dependencies"] == {"ms": "2.1.2"} and manifest["plugpull"]["generated"] == npm.GENERATED
    again = load_finding(finding_dir, tmp_path)
    assert [p.name for p in again.pins] == ["ms-2.1.3", "ms-2.1.2"]
    assert again.pin("ms-2.1.2").requirements == finding_dir / "pins" / "kernel.txt"
    assert sweep.generate(again, "ms", "2.1.2", released=listed.upload_time("2.1.2")).reused
    again.pin("ms-2.1.2").check_locked()


def test_a_bundle_of_a_finding_whose_bug_witness_is_javascript_is_refused_in_one_line(capsys):
    from plugpull.report.harness import cli

    assert cli.main(["bundle", "mastra-approval", "--root", str(ROOT)]) == 2
    err = capsys.readouterr().err.strip()
    assert "witness/racing-resume.mjs is JavaScript; a bundle holds a Python witness only" in err and "\n" not in err
