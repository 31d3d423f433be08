"""Recall's mechanism on hand-built inputs: mutant headers, patches that must apply whole, flips that count."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from plugpull.report.harness import recall, recall_lines, recall_page

PATCH = """why: the saver forgets to commit
class: checkpoint not durable
--- a/pkg/saver.py
+++ b/pkg/saver.py
@@ -1,3 +1,3 @@
 def save(conn):
     conn.execute("INSERT")
-    conn.commit()
+    pass
"""


def mutant_tree(tmp_path: Path, text: str = PATCH, framework: str = "langgraph") -> Path:
    folder = tmp_path / recall.MUTANTS / framework
    folder.mkdir(parents=True)
    (folder / "no-commit.patch").write_text(text)
    return tmp_path


def site(tmp_path: Path, body: str) -> Path:
    (tmp_path / "site" / "pkg").mkdir(parents=True)
    (tmp_path / "site" / "pkg" / "saver.py").write_text(body)
    return tmp_path / "site"


def test_a_mutant_reads_its_why_and_class_from_the_patch_header(tmp_path):
    [mutant] = recall.load_mutants(mutant_tree(tmp_path))
    assert (mutant.id, mutant.why, mutant.bug_class) == (
        "langgraph/no-commit",
        "the saver forgets to commit",
        "checkpoint not durable",
    )
    assert mutant.check.name == "no-commit.check.py"


def test_a_mutant_without_a_why_or_of_an_unknown_framework_is_bad_input(tmp_path):
    with pytest.raises(recall.RecallError, match="needs a 'why:'"):
        recall.load_mutants(mutant_tree(tmp_path / "a", PATCH.replace("why:", "because:")))
    with pytest.raises(recall.RecallError, match="unknown framework 'nope'"):
        recall.load_mutants(mutant_tree(tmp_path / "b", framework="nope"))
    with pytest.raises(recall.RecallError, match="unknown mutant 'langgraph/other'"):
        recall.load_mutants(mutant_tree(tmp_path / "c"), ["langgraph/other"])


def test_a_patch_applies_into_site_packages_and_names_the_files_it_changed(tmp_path):
    root = mutant_tree(tmp_path)
    packages = site(tmp_path, 'def save(conn):\n    conn.execute("INSERT")\n    conn.commit()\n')
    [mutant] = recall.load_mutants(root)
    assert recall.apply_patch(mutant.patch, packages) == ["pkg/saver.py"]
    assert "pass" in (packages / "pkg" / "saver.py").read_text()


def test_a_hunk_that_does_not_apply_changes_nothing_and_says_so(tmp_path):
    root = mutant_tree(tmp_path)
    other = 'def save(conn):\n    conn.execute("UPSERT")\n    conn.commit()\n'
    packages = site(tmp_path, other)
    [mutant] = recall.load_mutants(root)
    with pytest.raises(recall.RecallError, match="does not apply"):
        recall.apply_patch(mutant.patch, packages)
    assert (packages / "pkg" / "saver.py").read_text() == other
    assert not list(packages.rglob("*.rej")) and not list(packages.rglob("*.orig"))


def line(name: str, verdict: str) -> dict:
    return {"line": name, "verdict": verdict}


def test_only_a_pass_that_becomes_a_fail_is_a_catch_an_error_is_not():
    clean = [line("a", "PASS"), line("b", "PASS"), line("c", "FAIL"), line("d", "PASS")]
    patched = [line("a", "FAIL"), line("b", "ERROR"), line("c", "FAIL"), line("d", "PASS")]
    assert recall.flips(clean, patched) == ["a"]
    assert recall.errors_of(clean, patched) == ["b"]


def test_repeated_lines_are_told_apart_by_their_order():
    clean = [line("a", "PASS"), line("a", "PASS")]
    assert recall.flips(clean, [line("a", "PASS"), line("a", "FAIL")]) == ["a #2"]


def test_the_page_counts_only_verified_mutants_and_names_what_would_catch_a_missed_one(tmp_path):
    record = {
        "started": "2026-12-02T07:00:00Z",
        "commit": "0" * 40,
        "frameworks": {
            "langgraph": {
                "targets": ["langgraph"],
                "version": "1.2.11",
                "unpatched": [[line("plugpull.kill-mid-tool.langgraph after-effect", "PASS")]] * 2,
                "false_alarms": [],
            }
        },
        "mutants": [
            {
                "id": f"langgraph/{name}",
                "framework": "langgraph",
                "class": "checkpoint not durable",
                "why": "a why",
                "check": {"verified": verified, "why": "no check"},
                "lines": [line("plugpull.kill-mid-tool.langgraph after-effect", "FAIL" if caught else "PASS")],
                "caught_by": ["plugpull.kill-mid-tool.langgraph after-effect"] if caught else [],
                "errors": [],
            }
            for name, verified, caught in (("caught", True, True), ("missed", True, False), ("unverified", False, True))
        ],
    }
    (tmp_path / recall.RECORDS / "2026-12-02").mkdir(parents=True)
    (tmp_path / recall.RECORDS / "2026-12-02" / "r.json").write_text(__import__("json").dumps(record))
    (tmp_path / recall_page.MISSES).write_text('"langgraph/missed" = "a power cut"\n')
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("x\n<!-- plugpull:recall -->\nold\n<!-- /plugpull:recall -->\n")
    text = recall_page.write(tmp_path).read_text()
    assert "catches 1 of 2 verified" in text
    assert "what would catch it: a power cut" in text
    assert "plugpull catches 1 of 2 durability bugs" in (tmp_path / "README.md").read_text()


def test_report_recall_is_a_subcommand_and_bad_input_is_one_line(tmp_path):
    root = mutant_tree(tmp_path)
    proc = subprocess.run(
        ["plugpull", "report", "recall", "--root", str(root), "--mutant", "x/y"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "unknown mutant 'x/y'" in proc.stderr


def test_a_clean_run_that_fails_without_a_fault_flips_every_line_of_its_target_and_options():
    """Without a fault no call is held, so the patched run's lines are named without one (and the others moot)."""
    clean = [
        line("plugpull.kill-mid-tool.af before-effect charge_card:A#1 variant=swap", "PASS"),
        line("plugpull.kill-mid-tool.af after-effect charge_card:A#1 variant=swap", "PASS"),
        line("plugpull.kill-mid-tool.af before-effect charge_card:A#1 variant=control", "PASS"),
    ]
    patched = [
        {
            "line": "plugpull.kill-mid-tool.af before-effect variant=swap",
            "verdict": "FAIL",
            "message": "without any fault: effect duplicated",
        },
        {"line": "plugpull.kill-mid-tool.af after-effect variant=swap", "verdict": "FAIL", "message": "moot: ..."},
        line("plugpull.kill-mid-tool.af before-effect charge_card:A#1 variant=control", "PASS"),
    ]
    assert recall.flips(clean, patched) == [clean[0]["line"], clean[1]["line"]]


def test_a_catch_must_flip_against_both_unpatched_runs():
    first, second = [line("a", "PASS"), line("b", "PASS")], [line("a", "PASS"), line("b", "FAIL")]
    assert recall.caught([first, second], [line("a", "FAIL"), line("b", "FAIL")]) == ["a"]


def said(name: str, verdict: str, message: str) -> dict:
    return {"line": name, "verdict": verdict, "message": message}


STREAM = "plugpull.cancel-mid-stream.oa-stream"
REFUSED = "without any fault: next turn rejected: messages 2 and 3 are two assistant turns in a row (...)"


def test_before_the_refused_next_turn_check_its_fail_and_the_lines_it_made_moot_read_as_errors():
    lines = [
        said(f"{STREAM} between-tool-and-model cancel=cancel", "FAIL", REFUSED),
        said(f"{STREAM} model-stream cancel=cancel", "FAIL", "moot: the clean run already failed without any fault"),
        # Another target's options, another scenario's clean-run FAIL, a FAIL after a cancel: as they were.
        said(
            f"{STREAM} model-stream cancel=task-cancel", "FAIL", "moot: the clean run already failed without any fault"
        ),
        said("plugpull.kill-mid-tool.af before-effect variant=swap", "FAIL", "without any fault: effect duplicated"),
        said(f"{STREAM} tool-after-effect refund#1 cancel=task-cancel", "FAIL", "next turn rejected: message 2's ..."),
    ]
    earlier = recall_lines.before_refused_next_turn_check(lines)
    assert [line["verdict"] for line in earlier] == ["ERROR", "ERROR", "FAIL", "FAIL", "FAIL"]
    assert [line["verdict"] for line in lines][:2] == ["FAIL", "FAIL"]  # the record's own lines are left as read


def test_the_page_gives_recall_before_and_after_the_added_check_and_the_specificity(tmp_path):
    clean = [line(f"{STREAM} between-tool-and-model cancel=cancel", "PASS"), line("plugpull.x.t a", "PASS")]
    flaky = [line(f"{STREAM} between-tool-and-model cancel=cancel", "PASS"), line("plugpull.x.t a", "FAIL")]
    record = {
        "started": "2026-12-03T07:00:00Z",
        "commit": "0" * 40,
        "frameworks": {
            "openai-agents": {"targets": ["oa"], "version": "0.22.2", "unpatched": [clean, flaky], "false_alarms": []}
        },
        "mutants": [
            {
                "id": "openai-agents/drops-output",
                "framework": "openai-agents",
                "class": "session write lost",
                "why": "a why",
                "check": {"verified": True},
                "lines": [said(f"{STREAM} between-tool-and-model cancel=cancel", "FAIL", REFUSED)],
            }
        ],
    }
    (tmp_path / recall.RECORDS / "2026-12-03").mkdir(parents=True)
    (tmp_path / recall.RECORDS / "2026-12-03" / "r.json").write_text(__import__("json").dumps(record))
    text = recall_page.render(tmp_path)
    assert "**1 of 1 (100 %) before" not in text
    assert "**0 of 1 (0 %) before, 1 of 1 (100 %) after**; caught only since: `openai-agents/drops-output`." in text
    assert "**Specificity: 1 of 2 lines** that PASS on an unpatched release PASSed in both of its runs (50 %)" in text


def test_a_hand_written_doubt_on_a_catch_is_shown_and_the_headline_gives_recall_without_it(tmp_path):
    runs = [[line("plugpull.k.t a", "PASS")]] * 2
    record = {
        "started": "2026-12-03T07:00:00Z",
        "frameworks": {"langgraph": {"targets": ["t"], "version": "1", "unpatched": runs, "false_alarms": []}},
        "mutants": [
            {
                "id": f"langgraph/{name}",
                "framework": "langgraph",
                "class": "c",
                "why": "w",
                "check": {"verified": True},
                "lines": [line("plugpull.k.t a", "FAIL")],
            }
            for name in ("sure", "raced")
        ],
    }
    (tmp_path / recall.RECORDS / "d").mkdir(parents=True)
    (tmp_path / recall.RECORDS / "d" / "r.json").write_text(__import__("json").dumps(record))
    (tmp_path / recall_page.MISSES).write_text('"langgraph/raced" = "the line is a race"\n')
    text = recall_page.render(tmp_path)
    assert "catches 2 of 2 verified" in text
    assert "1 catch(es) doubted below (`langgraph/raced`), without which recall is 1 of 2 (50 %)." in text
    assert "- **doubted catch**: the line is a race" in text
    # README's line says the doubt too: it must not claim more than the page.
    assert "catches 2 of 2 durability bugs planted in the frameworks' own code (1 without 1 doubted catch(es))" in (
        recall_page.readme_line(tmp_path)
    )
