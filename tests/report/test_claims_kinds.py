"""Claim kinds in finding.toml: parsed with one-line errors; what `report --check` requires of each kind."""

import pytest

from plugpull.report.kernel import claims
from plugpull.report.kernel.claims import ClaimError

QUOTE = {"url": "https://docs.example.org/durable", "text": "ensure that your workflow is idempotent"}
WITNESS = {"script": "witness/kill.py", "args": ["--key", "none"], "repeats": 2, "timeout": 60}


def claim(expect=None, **support):
    entry = {
        "point": "after-effect",
        "options": {"key": "none"},
        "expect": expect or [{"versions": ">=1", "verdict": "FAIL", "counts": {"refund": 2}}],
        **support,
    }
    (parsed,) = claims.parse([entry], "finding.toml")
    return parsed


def test_the_kind_and_its_support_on_the_claim_reach_every_fail_expectation():
    c = claim(kind="documented", because="the docs put idempotency on the user", quote=QUOTE, witness=WITNESS)
    (e,) = c.expect
    assert e.kind == "documented" and e.support.because == "the docs put idempotency on the user"
    assert e.support.quote == claims.Quote(QUOTE["url"], QUOTE["text"])
    assert e.support.witness == claims.Witness("witness/kill.py", ("--key", "none"), 2, 60.0)


def test_a_witness_names_the_distributions_it_imports_besides_the_framework_without_versions():
    c = claim(witness={"script": "witness/race.py", "requires": ["google-adk[sqlite]", "aiosqlite"]})
    assert c.expect[0].support.witness.requires == ("google-adk[sqlite]", "aiosqlite")
    assert claim(witness={"script": "witness/race.py"}).expect[0].support.witness.requires == ()


def test_a_witness_whose_args_fork_its_phases_is_refused_because_records_run_witnesses_cold():
    with pytest.raises(ClaimError, match="may not hold --fork"):
        claim(witness={"script": "witness/kill.py", "args": ["--key", "none", "--fork"]})


def test_an_expect_entry_overrides_the_claims_support_field_by_field():
    c = claim(
        expect=[
            {"versions": "<1.20", "verdict": "FAIL", "kind": "bug", "issue": "https://github.com/o/r/issues/1"},
            {"versions": ">=1.20", "verdict": "FAIL"},
        ],
        kind="documented",
        because="why",
        quote=QUOTE,
    )
    old, new = c.expect
    assert (old.kind, old.support.issue, old.support.because, old.support.quote) == (
        "bug",
        "https://github.com/o/r/issues/1",
        "why",
        claims.Quote(QUOTE["url"], QUOTE["text"]),
    )
    assert new.kind == "documented" and new.support.issue is None
    assert c.kinds() == ["bug", "documented"]


def test_a_pass_expectation_has_no_kind_even_under_a_claim_that_has_one():
    c = claim(
        expect=[{"versions": "<1.20", "verdict": "FAIL"}, {"versions": ">=1.20", "verdict": "PASS"}],
        kind="bug",
        because="b",
        issue="https://github.com/o/r/issues/1",
        witness=WITNESS,
    )
    fail, passed = c.expect
    assert fail.kind == "bug" and passed.kind is None
    assert passed.support.witness is not None  # the witness still runs there: it must PASS on the fixed release


@pytest.mark.parametrize(
    "support, expect, message",
    [
        ({"kind": "feature"}, None, "kind 'feature' is not one of bug, documented, app, expected"),
        ({"kind": "bug", "quote": "the docs say so"}, None, r"quote is \{ url"),
        ({"kind": "bug", "quote": {"url": "docs.example.org", "text": "t"}}, None, "quote.url is an https:// address"),
        ({"kind": "bug", "issue": 4775}, None, "issue is an https:// address"),
        ({"kind": "app", "because": ""}, None, "because is a non-empty string"),
        ({"witness": "witness/x.py"}, None, "witness is a table"),
        ({"witness": {"script": "/abs/x.py"}}, None, "relative to the finding's folder"),
        ({"witness": {"script": "w.py", "repeats": 0}}, None, "repeats is a positive number"),
        ({"witness": {"script": "w.py", "timeout": "long"}}, None, "timeout is a positive number"),
        ({"witness": {"script": "w.py", "env": {}}}, None, "unknown key 'env'"),
        ({"witness": {"script": "w.py", "requires": ["aiosqlite>=0.20"]}}, None, "requires is a list of distribution"),
        ({"witness": {"script": "w.py", "requires": "aiosqlite"}}, None, "requires is a list of distribution"),
        ({"kind": "bug"}, [{"versions": ">=1", "verdict": "PASS"}], "kind on a line that expects PASS"),
        ({}, [{"versions": ">=1", "verdict": "PASS", "kind": "app"}], "kind on a line that expects PASS"),
    ],
)
def test_a_malformed_kind_or_support_is_one_clear_error(support, expect, message):
    with pytest.raises(ClaimError, match=message) as raised:
        claim(expect=expect, **support)
    assert "\n" not in str(raised.value) and str(raised.value).startswith("finding.toml: claims[0]")


def policy(*entries, text=lambda script: "import sqlite3\n"):
    return claims.policy(claims.parse(list(entries), "finding.toml"), "finding.toml", text)


def line(options, expect, **support):
    return {"point": "after-effect", "options": options, "expect": expect, **support}


FAILS = [{"versions": ">=1", "verdict": "FAIL"}]


def test_a_fail_expectation_without_a_kind_is_a_policy_problem_and_a_pass_one_is_not():
    (problem,) = policy(line({"key": "none"}, FAILS), line({"key": "id"}, [{"versions": ">=1", "verdict": "PASS"}]))
    assert (
        problem
        == "finding.toml: `after-effect key=none`: expects FAIL for >=1 but has no kind (bug, documented, app, expected)"
    )


def test_a_rate_above_zero_needs_a_kind_and_a_rate_from_zero_does_not():
    rate = {"timing": True, "repeats": 20}
    found = policy(
        {**line({"key": "a"}, [{"versions": ">=1", "fail_rate": [0.3, 1.0]}]), **rate},
        {**line({"key": "b"}, [{"versions": ">=1", "fail_rate": [0.0, 0.2]}]), **rate},
    )
    assert len(found) == 1 and "`after-effect key=a`: expects FAIL rate in [0.3, 1]" in found[0]


def test_every_kind_needs_because_and_bug_and_documented_need_a_source_and_a_witness():
    found = policy(
        line({"k": "bug"}, FAILS, kind="bug"),
        line({"k": "doc"}, FAILS, kind="documented", because="b"),
        line({"k": "app"}, FAILS, kind="app", because="b"),
        line({"k": "exp"}, FAILS, kind="expected", because="b"),
    )
    assert found == [
        "finding.toml: `after-effect k=bug`: kind bug without because (why it is of this kind)",
        "finding.toml: `after-effect k=bug`: kind bug needs a quote (url + text) of what the framework promises, or an issue",
        "finding.toml: `after-effect k=bug`: kind bug without an issue needs searched (what was looked for upstream)",
        "finding.toml: `after-effect k=bug`: kind bug needs a witness (findings/<id>/witness/*.py)",
        "finding.toml: `after-effect k=doc`: kind documented needs a quote (url + text) of the docs",
        "finding.toml: `after-effect k=doc`: kind documented needs a witness (findings/<id>/witness/*.py)",
    ]


def test_a_bug_with_an_issue_needs_no_search_and_one_with_a_quote_needs_what_was_searched():
    issue = {"issue": "https://github.com/o/r/issues/1", "because": "b", "witness": WITNESS}
    assert policy(line({"k": "1"}, FAILS, kind="bug", **issue)) == []
    quoted = {"quote": QUOTE, "because": "b", "witness": WITNESS}
    (problem,) = policy(line({"k": "2"}, FAILS, kind="bug", **quoted))
    assert "needs searched" in problem
    assert policy(line({"k": "3"}, FAILS, kind="bug", searched="2026-11-30: none matches", **quoted)) == []


def test_an_app_alternative_must_name_another_line_of_the_finding():
    ok = line({"approval": "none"}, [{"versions": ">=1", "verdict": "PASS"}])
    found = policy(
        ok,
        line({"approval": "first"}, FAILS, kind="app", because="b", alternative="after-effect approval=none"),
        line({"approval": "second"}, FAILS, kind="app", because="b", alternative="after-effect approval=never"),
        line({"approval": "third"}, FAILS, kind="app", because="b", alternative="after-effect approval=third"),
    )
    assert found == [
        "finding.toml: `after-effect approval=second`: alternative 'after-effect approval=never' is not the label of "
        "another claim of this finding",
        "finding.toml: `after-effect approval=third`: alternative 'after-effect approval=third' is not the label of "
        "another claim of this finding",
    ]


def test_a_witness_script_that_is_not_on_disk_or_imports_plugpull_is_a_policy_problem():
    support = {"kind": "documented", "because": "b", "quote": QUOTE, "witness": WITNESS}
    (missing,) = policy(line({"k": "x"}, FAILS, **support), text=lambda script: None)
    assert missing == "finding.toml: `after-effect k=x`: witness script witness/kill.py does not exist under findings/"
    (imports,) = policy(line({"k": "x"}, FAILS, **support), text=lambda script: "import os\nfrom plugpull import x\n")
    assert imports.endswith("witness script witness/kill.py imports plugpull (a witness is framework-only)")


def test_a_finding_may_share_another_findings_witness_by_a_relative_path():
    witness = {**WITNESS, "script": "../other-finding/witness/kill.py"}
    c = claim(kind="documented", because="b", quote=QUOTE, witness=witness)
    assert c.expect[0].support.witness.script == "../other-finding/witness/kill.py"
