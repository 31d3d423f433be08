"""Records fit for upstream: a commit is named only when it holds what ran, no machine path in a record, and
`report run` leaves the pages about every finding to `report regenerate` (which `check` holds them to)."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from builders import make_repo, put_record, record, report

from plugpull.report.harness import cli, executors, history, machine_paths, pages, pipeline
from plugpull.report.harness.finding import load_all

# A cell that prints what a kernel's run knows of its machine (its python, its cwd, a temp folder, the home
# directory), and a record whose argv starts with the kernel's python, as every built-in target's does.
PRINTS_MACHINE_PATHS = """
import os, sys, tempfile
from plugpull.report.kernel import notebook as nb
from plugpull.results import Result, Verdict
print("python:", sys.executable, "cwd:", os.getcwd(), "temp:", tempfile.mkdtemp(), "home:", os.path.expanduser("~"))
env = nb.environment("six", plugpull_commit)
r = Result(Verdict.PASS, "kill-mid-tool", "after-effect", "six x", "ok", framework="six", version="1.17.0",
           evidence={"counts": {"refund": 1}, "start": {"argv": [sys.executable, "-m", "agent", "start"]}})
nb.write_record(results_path, finding="demo", pin=pin, env=env, parameters={}, results=[r], scenario_seconds=0.5)
"""
REPRODUCE_CELL = "print(nb.reproduce('demo', pin, {}, plugpull_commit))"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE_DIR", str(tmp_path / "cache"))


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def committed_repo(root: Path) -> Path:
    """make_repo's demo finding, its notebook printing machine paths and its reproduce cell, committed to git."""
    make_repo(root, (PRINTS_MACHINE_PATHS, REPRODUCE_CELL))
    (root / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n[project.urls]\nRepository = 'https://example.org/demo.git'\n"
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the demo finding")
    return root


def run_once(root: Path, kernel) -> pipeline.Outcome:
    finding = load_all(root)["demo"]
    outcome = pipeline.run(
        pipeline.Job(finding, finding.pins[0], {}), commit=pipeline.source(root, finding), make_env=lambda j: kernel
    )
    assert outcome.error is None, outcome.error
    return outcome


def reproduce_output(outcome: pipeline.Outcome) -> str:
    book = json.loads(outcome.files[".ipynb"].read_text())
    (cell,) = [c for c in book["cells"] if c["cell_type"] == "code" and "reproduce(" in "".join(c["source"])]
    return "".join("".join(o.get("text", "")) for o in cell["outputs"])


def test_an_untracked_file_in_the_finding_makes_the_source_uncommitted_and_a_commit_makes_it_clean(tmp_path):
    root = committed_repo(tmp_path / "repo")
    finding = load_all(root)["demo"]
    head = git(root, "rev-parse", "HEAD").strip()
    assert pipeline.source(root, finding) == pipeline.Source(head)
    (root / "findings" / "demo" / "agent.py").write_text("print('the agent')\n")  # untracked: git status -uno misses it
    (root / "findings" / "demo" / "2026-12-01").mkdir()
    (root / "findings" / "demo" / "2026-12-01" / "p1-20261201T000000Z.json").write_text("{}")  # a product: ignored
    (root / "docs").mkdir()
    (root / "docs" / "notes.md").write_text("not an input of the run\n")
    found = pipeline.source(root, finding)
    assert found.case == "uncommitted" and found.uncommitted == ("findings/demo/agent.py",)
    assert found.plugpull_commit == head + "-dirty"
    assert pipeline.source(tmp_path / "not-a-checkout", None).case == "unknown"


def test_a_record_run_from_a_tree_with_an_untracked_file_names_no_commit(tmp_path, forked_kernel):
    root = committed_repo(tmp_path / "repo")
    head = git(root, "rev-parse", "HEAD").strip()
    clean = run_once(root, forked_kernel)
    assert json.loads(clean.files[".json"].read_text())["source"] == {
        "case": "commit",
        "commit": head,
        "uncommitted": [],
    }
    assert reproduce_output(clean).splitlines() == [
        "git clone https://example.org/demo.git plugpull && cd plugpull",  # [project.urls], not "no public URL"
        f"git checkout {head}",
        "uv run plugpull report --finding demo --pin p1",
    ]

    (root / "findings" / "demo" / "agent.py").write_text("print('the agent')\n")
    dirty = run_once(root, forked_kernel)
    doc = json.loads(dirty.files[".json"].read_text())
    assert doc["source"] == {"case": "uncommitted", "commit": head, "uncommitted": ["findings/demo/agent.py"]}
    said = reproduce_output(dirty)
    assert "git checkout" not in said and "no commit holds (findings/demo/agent.py)" in said
    for suffix in (".ipynb", ".html"):
        assert "git checkout" not in dirty.files[suffix].read_text(), suffix


def test_a_freshly_executed_record_holds_no_machine_path(tmp_path, forked_kernel):
    root = committed_repo(tmp_path / "repo")
    outcome = run_once(root, forked_kernel)
    here = [root, Path.home(), tmp_path / "cache", Path(sys.executable).parent.parent, tempfile.gettempdir()]
    for suffix, path in outcome.files.items():
        text = path.read_text()
        assert machine_paths.found(text, here) == [], suffix
    doc = json.loads(outcome.files[".json"].read_text())
    assert doc["results"][0]["evidence"]["start"]["argv"][0] == machine_paths.PIN_PYTHON
    printed = outcome.files[".ipynb"].read_text()
    assert f"python: {machine_paths.PIN_PYTHON}" in printed and f"cwd: {machine_paths.SCRATCH}" in printed
    assert 'results_path = \\"record.json\\"' in printed  # papermill's injected cell: no scratch path to hide
    assert report_check_problems(root) == []


def report_check_problems(root: Path) -> list[str]:
    return pages.record_source_problems(root, sorted((root / "findings").glob("*/*/*.json")))


def test_check_fails_on_a_planted_machine_path_and_on_a_committed_record_from_uncommitted_files(
    tmp_path, forked_kernel
):
    root = committed_repo(tmp_path / "repo")
    (root / "findings" / "demo" / "agent.py").write_text("print('the agent')\n")
    outcome = run_once(root, forked_kernel)
    assert report_check_problems(root) == []  # on disk, not committed: fine (a new finding's first run)

    html = outcome.files[".html"]
    html.write_text(html.read_text().replace("</body>", "<pre>/home/alice/.cache/plugpull/envs/x/venv</pre></body>"))
    (problem,) = report_check_problems(root)
    assert problem.startswith(f"{html.relative_to(root).as_posix()}: holds a machine path") and "/home/alice" in problem

    html.write_text(html.read_text().replace("<pre>/home/alice/.cache/plugpull/envs/x/venv</pre>", ""))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the record")
    (problem,) = report_check_problems(root)
    at = outcome.files[".json"].relative_to(root).as_posix()
    assert problem.startswith(f"{at}: committed, but it ran on uncommitted files (findings/demo/agent.py)")

    # A record from before `source` (append-only history) is not held to either rule.
    doc = json.loads(outcome.files[".json"].read_text())
    del doc["source"]
    outcome.files[".json"].write_text(json.dumps(doc))
    html.write_text(html.read_text() + "/root/x/y")
    assert report_check_problems(root) == []


def test_report_run_leaves_readme_results_and_scorecard_alone_and_check_says_they_are_stale(
    tmp_path, forked_kernel, capsys
):
    root = make_repo(tmp_path / "repo", (PRINTS_MACHINE_PATHS,))
    generated = "<!-- plugpull:generated matrix demo -->\n<!-- /plugpull:generated -->\n"
    (root / "README.md").write_text("# Demo\n\n" + generated)
    (root / "docs").mkdir()
    (root / "docs" / "finding-demo.md").write_text("# The demo finding\n\n" + generated)
    pages.write(root)  # the pages as committed before the run: no record yet
    assert report(capsys, "check", root=root)[0] == 0
    before = {p: (root / p).read_bytes() for p in ("README.md", "docs/results.md", "docs/results-lines.csv")}

    finding = load_all(root)["demo"]
    jobs = [pipeline.Job(finding, finding.pins[0], {})]
    assert cli.run_all(jobs, root, executors.Local(make_env=lambda job: forked_kernel)) == 0
    assert len(list((root / "findings" / "demo").glob("*/p1-*.json"))) == 1
    assert {p: (root / p).read_bytes() for p in before} == before  # only `regenerate` changes them
    assert "p1-" in (root / "docs" / "finding-demo.md").read_text()  # the finding's own page follows its record

    code, out, _ = report(capsys, "check", root=root)
    assert code == 1
    stale = [line for line in out.splitlines() if " is stale" in line]
    assert stale == [
        f"{name} is stale: it is not what the records give; run `plugpull report regenerate`" + extra
        for name, extra in (
            ("docs/results.md", ":"),
            ("docs/results-lines.csv", ":"),
            ("README.md", " (a generated section):"),
        )
    ]
    assert report(capsys, "regenerate", root=root)[0] == 0
    assert report(capsys, "check", root=root)[0] == 0


def test_check_names_the_newest_records_made_from_a_dirty_tree_before_records_had_a_source(tmp_path):
    root = make_repo(tmp_path / "repo")
    doc = record()
    doc["versions"]["plugpull_commit"] = "abc-dirty"
    path = put_record(root, doc)
    (line,) = pages.legacy_dirty(root)
    assert (
        line.startswith("1 newest record(s) were made from a -dirty tree") and path.relative_to(root).as_posix() in line
    )
    doc["source"] = {"case": "commit", "commit": "abc", "uncommitted": []}
    path.write_text(json.dumps(doc))
    assert pages.legacy_dirty(root) == []


def test_the_machine_path_pattern_leaves_urls_and_image_data_alone():
    text = "see https://github.com/x/tmp/y and data:image/png;base64,iVBOR+/tmp/abc= and ~/.cache and <tmp>/x"
    assert machine_paths.found(text) == []
    assert machine_paths.found("sqlite:////tmp/a.db") == ["/tmp"]
    assert machine_paths.found("at /work/wt/x/findings") == ["/work"]
    assert machine_paths.found(f"at {os.sep}srv/repo/x", ["/srv/repo"]) == ["/srv/repo"]


BUG_CLAIM = """
[[claims]]
point = "after-effect"
kind = "bug"
because = "the framework repeats the effect"
issue = "https://example.org/issues/1"
witness = { script = "witness/repeat.py", args = ["--kill", "after effect"] }
expect = [{ versions = ">=1", verdict = "FAIL" }]

[[pins]]"""


def test_how_to_reproduce_from_uncommitted_files_gives_the_failing_bug_witness_bundle_command_and_no_commit(tmp_path):
    root = make_repo(tmp_path / "repo")
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace("[[pins]]", BUG_CLAIM.strip(), 1))
    finding = load_all(root)["demo"]
    doc = record(verdicts=("FAIL",))
    doc["versions"]["python"] = "3.11.7"
    judged = history.judge(finding, doc)
    src = pipeline.Source("abc123", ("findings/demo/agent.py",))
    said = pipeline.reproduce(finding, finding.pins[0], doc, judged, src, {"repeats": 3})
    assert said.splitlines() == [
        "# This run ran on files no commit holds (findings/demo/agent.py), so no checkout of this repository "
        "reproduces it.",
        "# Its bug's witness runs with the framework alone, no plugpull and no checkout: `plugpull report bundle demo "
        "--pin p1` writes bundles/repeat-p1/ (witness.py, a hash-locked requirements.txt); in that folder:",
        "uv run --no-project --python 3.11 --with-requirements requirements.txt python witness.py --kill 'after effect'",
    ]
    passed = history.judge(finding, record(verdicts=("PASS",)))  # a fixed release: no bundle to give
    said = pipeline.reproduce(finding, finding.pins[0], doc, passed, src, {})
    assert "abc123" not in said and "no bundle to run instead" in said
    said = pipeline.reproduce(finding, finding.pins[0], doc, judged, pipeline.Source("abc123"), {"repeats": 3})
    assert said.splitlines()[1:] == [
        "git checkout abc123",
        "uv run plugpull report --finding demo --pin p1 -p repeats 3",
    ]


def test_a_generated_notebooks_tagged_reproduce_output_is_replaced_in_place_and_no_cell_is_added(tmp_path):
    import nbformat

    from plugpull.report.harness import ipynb
    from plugpull.report.kernel.notebook import REPRODUCE

    book = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("nb.report('demo', ['six'], dict(pin=pin))")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="5 results\n"),
        nbformat.v4.new_output(
            "display_data", data={"text/plain": "uv run plugpull report -p repeats 1"}, metadata=REPRODUCE
        ),
    ]
    book.cells = [nbformat.v4.new_markdown_cell("# demo"), cell]
    path = tmp_path / "run.ipynb"
    nbformat.write(book, str(path))
    ipynb.put_reproduce(path, "git checkout abc\nuv run plugpull report --finding demo --pin p1\n")
    after = nbformat.read(str(path), as_version=4)
    assert len(after.cells) == 2
    outputs = after.cells[1].outputs
    assert outputs[0].text == "5 results\n"
    assert outputs[1].data["text/plain"] == "git checkout abc\nuv run plugpull report --finding demo --pin p1"
