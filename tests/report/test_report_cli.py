"""`plugpull report` as a user meets it: subcommands with their own --help, bad input as one line and exit 2
before anything runs, today's flags as aliases that say what to type instead, and `check`.

Tests call `cli.main(argv)` in this process; one goes through `python -m plugpull.cli` to hold the contract at
the real entry point.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from builders import make_repo, one_line, put_record, record, report
from fake_index import served

from plugpull.report.harness import cli, environment, history, pages
from plugpull.report.harness.finding import load_all

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Environments this test might look up or build live in its own cache, never the user's."""
    monkeypatch.setenv("PLUGPULL_CACHE_DIR", str(tmp_path / "cache"))


def exit_2(capsys, *argv: str, root: Path | None = ROOT) -> str:
    code, _, err = report(capsys, *argv, root=root)
    assert code == 2, err
    return one_line(err)


# --- subcommands ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_each_subcommand_has_its_own_help(capsys, command):
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: plugpull report {command} ") and "--root DIR" in out


def test_the_top_help_lists_every_subcommand_and_says_run_is_the_default(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(re.search(rf"^    {command}\b", out, re.M) for command in cli.COMMANDS)
    assert "With no subcommand, `plugpull report [options]` is `plugpull report run [options]`" in " ".join(out.split())


def test_run_is_the_default_so_the_records_reproduce_lines_still_work():
    args, hint = cli.parse(["--finding", "demo", "--pin", "p1", "-p", "repeats", "3"])
    assert (args.command, args.finding, args.pin, args.parameter, hint) == (
        "run",
        ["demo"],
        ["p1"],
        [["repeats", "3"]],
        None,
    )
    assert cli.parse([])[0].command == "run"


def test_an_unknown_subcommand_or_option_is_one_line_naming_the_subcommand(capsys):
    line = exit_2(capsys, "nonsense")
    assert line.startswith("plugpull report: unknown subcommand 'nonsense'; subcommands: run, check, regenerate")
    assert exit_2(capsys, "check", "--pin", "p1") == "plugpull report check: unrecognized arguments: --pin p1"
    assert (
        exit_2(capsys, "list", "--executor", "dask") == "plugpull report list: unrecognized arguments: --executor dask"
    )
    assert exit_2(capsys, "--json") == "plugpull report: unrecognized arguments: --json"  # run takes no --json
    assert exit_2(capsys, "bundle") == "plugpull report bundle: the following arguments are required: FINDING"
    assert exit_2(capsys, "merge") == "plugpull report merge: the following arguments are required: DIR"


# --- today's flags, one release more ----------------------------------------------------------------------

ALIASES = [
    (["--check", "--finding", "demo"], ["check", "--finding", "demo"]),
    (["--regenerate"], ["regenerate"]),
    (["--list", "--json", "--pin", "p1"], ["list", "--pin", "p1", "--json"]),
    (["--merge", "a", "b"], ["merge", "a", "b"]),
    (
        ["--sweep", "demo", "--versions", ">=1", "--bisect", "--only-missing"],
        ["sweep", "demo", "--bisect", "--only-missing", "--versions", ">=1"],
    ),
    (["--summary", "demo"], ["summary", "demo"]),
    (["--issue-body=demo"], ["issue-body", "demo"]),
    (["--bundle", "demo", "--pin", "p1", "--out", "x"], ["bundle", "demo", "--pin", "p1", "--out", "x"]),
    (["--jupyter-path", "--finding", "demo"], ["jupyter-path", "--finding", "demo"]),
]


@pytest.mark.parametrize(("old", "new"), ALIASES, ids=[a[0][0].split("=")[0] for a in ALIASES])
def test_each_flag_the_subcommands_replace_is_read_as_its_subcommand_with_a_line_saying_so(old, new):
    argv, hint = cli.translate(old)
    assert argv == new
    flag = old[0].split("=")[0]
    assert hint == (
        f"plugpull report: {flag} is the subcommand `{new[0]}` now (the flag goes in a later release): "
        f"plugpull report {' '.join(new)}".replace(">=1", "'>=1'")
    )


def test_the_check_alias_checks_and_says_what_to_type_on_one_stderr_line_after(capsys, tmp_path):
    repo = make_repo(tmp_path / "repo")
    put_record(repo, record())
    pages.write(repo)
    code, out, err = report(capsys, "--check", root=repo)
    assert code == 0 and "plugpull report check: 1 records are valid" in out
    assert "; findings/ holds 0.0 of its 100 MB" in out
    assert (
        err
        == f"plugpull report: --check is the subcommand `check` now (the flag goes in a later release): plugpull report check --root {repo}\n"
    )


def test_the_regenerate_list_and_issue_body_aliases_do_what_their_subcommands_do(capsys, tmp_path):
    repo = make_repo(tmp_path / "repo")
    put_record(repo, record())
    for old, new in (
        (["--regenerate"], ["regenerate"]),
        (["--list"], ["list"]),
        (["--issue-body", "demo"], ["issue-body", "demo"]),
    ):
        code, out, err = report(capsys, *old, root=repo)
        assert (code, len(err.splitlines())) == (0, 1) and f"subcommand `{new[0]}` now" in err
        again = report(capsys, *new, root=repo)
        assert again[:2] == (0, out) and again[2] == ""
    assert (repo / "docs" / "results.md").is_file()


def test_the_merge_alias_merges(capsys, tmp_path):
    source = make_repo(tmp_path / "source")
    path = put_record(source, record())
    for suffix in (".ipynb", ".html"):
        path.with_suffix(suffix).write_text("{}")
    repo = make_repo(tmp_path / "repo")
    code, out, err = report(capsys, "--merge", str(path.parent), root=repo)
    assert code == 0 and "1 new record(s)" in out and "subcommand `merge` now" in err
    assert (repo / "findings" / "demo" / "2026-11-01" / path.name).is_file()


@pytest.mark.parametrize(
    ("old", "says"),
    [
        (
            ["--sweep", "demo", "--versions", "from 1"],
            "plugpull report sweep: --versions: version range 'from 1' is not a PEP 440 range",
        ),
        (["--summary", "nope"], "plugpull report summary: unknown finding 'nope'"),
        (["--bundle", "demo"], "plugpull report bundle: finding 'demo' has no claim of kind 'bug'"),
        (["--jupyter-path"], "plugpull report jupyter-path: no pin set environment is built yet"),
        (["--check", "--pin", "p1"], "plugpull report check: unrecognized arguments: --pin p1"),
        (["--check", "--regenerate"], "plugpull report: --check and --regenerate are subcommands now, one at a time"),
    ],
)
def test_an_alias_given_bad_input_is_its_subcommands_one_line_exit_2(capsys, tmp_path, old, says):
    repo = make_repo(tmp_path / "repo")
    assert exit_2(capsys, *old, root=repo).startswith(says)


# --- bad input before anything runs (a run) ----------------------------------------------------------------


def test_an_unknown_finding_is_one_line_exit_2_at_the_real_entry_point(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "plugpull.cli", "report", "run", "--finding", "crewai-1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PLUGPULL_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)},
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    line = one_line(run.stderr)
    assert (
        line.startswith("plugpull report: unknown finding 'crewai-1'; findings: ") and "langgraph-kill-mid-tool" in line
    )


def test_an_unknown_pin_set_is_one_line_exit_2(capsys):
    line = exit_2(capsys, "--finding", "langgraph-kill-mid-tool", "--pin", "langgraph-0.1")
    assert "unknown pin set 'langgraph-0.1'" in line and "langgraph-1.2.11" in line


def test_a_parameter_the_notebook_does_not_declare_is_one_line_exit_2(capsys):
    line = exit_2(capsys, "run", "--finding", "langgraph-kill-mid-tool", "-p", "durability", "sync")
    assert "parameter 'durability' is not declared by langgraph-kill-mid-tool.ipynb" in line


def test_a_parameter_of_the_wrong_kind_is_one_line_exit_2(capsys):
    line = exit_2(capsys, "run", "--finding", "langgraph-kill-mid-tool", "-p", "repeats", "many")
    assert "parameter 'repeats'=\"many\"" in line and "expected a int" in line


def test_a_parameter_plugpull_sets_itself_is_one_line_exit_2(capsys):
    assert "set by plugpull report itself" in exit_2(capsys, "run", "-p", "results_path", "x.json")


def test_a_lock_without_hashes_is_one_line_exit_2(capsys, tmp_path):
    repo = make_repo(tmp_path / "repo", lock="six==1.17.0\n")
    assert "is not pinned with == and a --hash" in exit_2(capsys, "run", root=repo)


@pytest.mark.network
def test_a_lock_that_does_not_resolve_is_one_line_exit_2_and_builds_nothing(capsys, tmp_path):
    lock = "six==0.0.0.404 \\\n    --hash=sha256:" + "0" * 64 + "\n"
    repo = make_repo(tmp_path / "repo", lock=lock)
    line = exit_2(capsys, "run", root=repo)
    assert "p1.txt does not resolve" in line and "six" in line
    assert not (tmp_path / "cache" / "envs").exists() and not (repo / "findings" / "demo" / "2026").exists()


def test_outside_a_repository_it_says_where_to_run_it(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "no findings/ folder" in exit_2(capsys, "check", root=None)


def test_dask_options_go_together(capsys, tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert "--executor dask needs --scheduler" in exit_2(capsys, "run", "--executor", "dask", root=repo)
    assert "--scheduler goes with --executor dask" in exit_2(capsys, "--scheduler", "tcp://h:8786", root=repo)


def test_a_sweep_asks_the_configured_index_and_one_without_upload_times_is_one_line_before_anything_runs(
    capsys, tmp_path, monkeypatch
):
    repo = make_repo(tmp_path / "repo")
    undated = {
        "meta": {"api-version": "1.0"},
        "name": "six",
        "files": [{"filename": "six-1.17.0-py2.py3-none-any.whl", "url": "x", "hashes": {}}],
    }
    with served({"six": undated}) as url:
        monkeypatch.setenv("PIP_INDEX_URL", url)
        line = exit_2(capsys, "sweep", "demo", "--versions", ">=1", root=repo)
    assert line == (
        f"plugpull report sweep: {url} gives no upload time (PEP 700 upload-time) for six's releases: a sweep resolves "
        "each release as of its upload day; use an index that serves them (https://pypi.org/simple/ does)"
    )
    assert [r["path"] for r in url.requests] == ["/simple/six/"]
    assert sorted(p.name for p in (repo / "findings" / "demo").iterdir()) == ["finding.toml", "pins"]  # nothing ran


# --- check --------------------------------------------------------------------------------------------------


def test_check_exits_0_on_valid_records_and_a_fresh_page(capsys, tmp_path):
    repo = make_repo(tmp_path / "repo")
    put_record(repo, record())
    pages.write(repo)
    code, out, err = report(capsys, "check", root=repo)
    assert code == 0, out + err


def test_check_exits_1_listing_every_problem(capsys, tmp_path):
    repo = make_repo(tmp_path / "repo")
    put_record(repo, record())
    bad = repo / "findings" / "demo" / "2026-11-03" / "p1.json"
    bad.parent.mkdir()
    bad.write_text("[")
    code, out, _ = report(capsys, "check", root=repo)
    assert code == 1
    assert "p1.json: not valid JSON" in out and "docs/results.md is stale" in out


def test_the_committed_records_and_results_page_pass_check(capsys):
    code, out, err = report(capsys, "check", root=ROOT)
    assert code == 0, out + err


def copy_of_this_repository(dest):
    for name in ("findings", "docs", "notebooks"):
        shutil.copytree(ROOT / name, dest / name)
    # The JavaScript findings run the examples in place (their agent is a path into clients/js/examples).
    shutil.copytree(ROOT / "clients" / "js", dest / "clients" / "js", ignore=shutil.ignore_patterns("node_modules"))
    for name in ("README.md", "pyproject.toml"):
        shutil.copy(ROOT / name, dest / name)
    return dest


def contradictions(out: str) -> list[str]:
    return [line for line in out.splitlines() if " does not reproduce: " in line]


def test_check_finds_no_contradiction_in_the_committed_records_and_one_in_a_record_edited_to_contradict_its_claim(
    capsys, tmp_path
):
    repo = copy_of_this_repository(tmp_path / "repo")
    assert contradictions(report(capsys, "check", "--finding", "agent-framework-8292", root=repo)[1]) == []
    # Records are append-only: check judges the newest one of the pin set, so that is the one edited.
    path = max(
        (repo / "findings" / "agent-framework-8292").glob("*/agent-framework-1.18.0-*.json"), key=lambda p: p.name
    )
    doc = json.loads(path.read_text())
    swap = next(r for r in doc["results"] if r["point"] == "after-effect" and r["options"] == {"variant": "swap"})
    swap["evidence"]["counts"] = {"charge_card:A": 1, "charge_card:B": 1}  # as if 1.18.0 were fixed
    swap["verdict"] = "PASS"
    path.write_text(json.dumps(doc))
    assert report(capsys, "regenerate", root=repo)[0] == 0  # the page follows the record
    code, out, _ = report(capsys, "check", "--finding", "agent-framework-8292", root=repo)
    assert code == 1
    (line,) = contradictions(out)
    assert line.startswith(f"findings/agent-framework-8292/{path.parent.name}/{path.name}: after-effect variant=swap")
    assert "does not reproduce: 1 of 1 run(s) PASS, claimed FAIL" in line and "for >=" in line


def demo_with(root: Path, claim: str, *docs: dict) -> Path:
    """make_repo's demo finding with one [[claims]] table, the records, and its pages regenerated."""
    repo = make_repo(root)
    toml = repo / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace("[[pins]]", claim.strip() + "\n\n[[pins]]", 1))
    for doc in docs:
        put_record(repo, doc)
    pages.write(repo)
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


def test_check_prints_an_inconclusive_line_and_still_exits_0(capsys, tmp_path):
    repo = demo_with(tmp_path / "repo", TIMING_CLAIM, record(verdicts=("PASS",) * 20))
    code, out, err = report(capsys, "check", root=repo)
    assert code == 0, out + err
    (line,) = out.splitlines()[:-1]
    assert line.endswith("after-effect mode=a is inconclusive: FAIL 0/20 = 0.00 [0.00, 0.16]: the rate is outside "
                         "the claimed [0.05, 1], its interval reaches it (more runs needed)")  # fmt: skip


def test_check_fails_on_a_fail_claim_without_a_kind_and_finding_narrows_it_to_the_findings_asked_for(capsys, tmp_path):
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
    code, out, _ = report(capsys, "check", root=repo)
    assert code == 1
    assert "findings/demo/finding.toml: `after-effect`: expects FAIL for >=1 but has no kind" in out
    code, out, _ = report(capsys, "check", "--finding", "other", root=repo)
    assert code == 0, out
    assert "(findings: other)" in out
    assert "unknown finding 'nope'" in exit_2(capsys, "check", "--finding", "nope", root=repo)


# --- list, jupyter-path --------------------------------------------------------------------------------------


def test_list_json_prints_the_finding_and_pin_set_jobs_a_run_would_make(capsys):
    code, out, _ = report(capsys, "list", "--json")
    every = json.loads(out)
    assert {"finding": "agent-framework-8292", "pin": "agent-framework-1.20.0"} in every
    assert len(every) == sum(len(f.pins) for f in load_all(ROOT).values() if f.notebook.is_file())
    _, out, _ = report(capsys, "list", "--json", "--finding", "agent-framework-8292", "--pin", "agent-framework-1.23.0")
    assert json.loads(out) == [{"finding": "agent-framework-8292", "pin": "agent-framework-1.23.0"}]
    _, text, _ = report(capsys, "list", "--finding", "openai-agents-4775")
    # Hand-written pin sets first, then the ones `sweep` generated (one per release).
    pins = [p.name for p in load_all(ROOT)["openai-agents-4775"].pins]
    assert pins[:3] == [f"openai-agents-{v}" for v in ("0.22.0", "0.22.2", "0.24.0")]
    assert text.splitlines() == [f"openai-agents-4775 {pin}" for pin in pins]
    assert exit_2(capsys, "list", "--pin", "nope").startswith("plugpull report list: unknown pin set 'nope'")


def test_jupyter_path_gathers_only_the_pin_sets_private_kernels_and_says_when_none_is_built(capsys, tmp_path):
    root = make_repo(tmp_path / "repo")
    assert "no pin set environment is built yet" in exit_2(capsys, "jupyter-path", root=root)
    lock = root / "findings" / "demo" / "pins" / "p1.txt"
    key = environment.lock_key(lock)
    venv_share = tmp_path / "cache" / "envs" / key / "venv" / "share" / "jupyter" / "kernels"
    for name in (f"plugpull-{key}", "python3"):  # a built venv holds its ipykernel's python3 spec too
        (venv_share / name).mkdir(parents=True)
        (venv_share / name / "kernel.json").write_text(json.dumps({"display_name": name}))
    (tmp_path / "cache" / "envs" / key / "ready").write_text("{}")
    code, out, err = report(capsys, "jupyter-path", root=root)
    assert code == 0, err
    folder = Path(out.strip())
    assert sorted(p.name for p in (folder / "kernels").iterdir()) == [
        f"plugpull-{key}"
    ]  # no python3 to hide the default


def test_check_and_regenerate_read_each_record_once_and_a_later_command_reads_the_edit(tmp_path, monkeypatch):
    """Inside read_once a record is parsed once however many pages ask (check asked about 20 times per record);
    outside it every call reads the files again, so a record edited between two commands is what the second sees."""
    from plugpull.report.harness import finding as finding_module
    from plugpull.report.kernel import record as record_module

    repo = make_repo(tmp_path / "repo")
    path = put_record(repo, record())
    parsed = []
    real = record_module.problems
    monkeypatch.setattr(record_module, "problems", lambda *a: parsed.append(a[0]) or real(*a))
    with finding_module.read_once():
        assert history.valid_records(repo) == history.valid_records(repo)
        assert load_all(repo) == load_all(repo)
    assert parsed == [path]
    doc = json.loads(path.read_text())
    doc["results"][0]["verdict"] = "ERROR"
    path.write_text(json.dumps(doc))
    [(_, again)] = history.valid_records(repo)
    assert again["results"][0]["verdict"] == "ERROR" and parsed == [path, path]


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not on PATH")
def test_a_sweep_of_an_npm_finding_lists_the_npm_registrys_releases_and_an_empty_range_is_one_line(capsys):
    # An npm framework's releases come from the registry (npm view NAME time), not the Python package index.
    line = exit_2(capsys, "sweep", "langgraphjs-kill-mid-tool", "--versions", ">=99")
    assert line == "plugpull report sweep: no release of @langchain/langgraph in '>=99' on the npm registry"
