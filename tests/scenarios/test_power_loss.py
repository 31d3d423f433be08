"""power-loss against real agent processes, a real SIGKILL and a real FUSE mount.

The done-when agent (tests/agents/journal_agent.py) journals its idempotency key before it charges:
written with open/write it survives a SIGKILL (the page cache keeps it) and not a power cut after
its effect; written durably (temp file, fsync, rename, directory fsync) it survives both. Tests that
mount skip, saying why, only where FUSE cannot mount; one forces FuseUnavailable and gets ERROR.
"""

import json
import os
import shlex
import signal
from dataclasses import replace
from pathlib import Path

import pytest

from forked_agents import forked_agent
from plugpull import cli, suite
from plugpull.errors import UsageError
from plugpull.powercut import mount as mount_module
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings, kill_mid_tool, power_loss
from plugpull.scenarios.registry import REGISTRY
from plugpull.targets import Target

FAST = Settings(timeout=30)
JOURNAL_GONE = (
    "the power cut (unsynced) lost: journal.json is absent after the cut: the file was created and no fsync "
    "of its directory followed (it held 58 bytes)"
)


@pytest.fixture(scope="module")
def runtime(agent_forks):
    """Clean runs shared by the module's lines; the agents' phases (``python -m``) fork from the module's server
    (tests/forked_agents.py), each its own group on the real mount, killed by a real SIGKILL."""
    return Runtime(forks=agent_forks)


def journal(how: str) -> Target:
    return replace(forked_agent("journal_agent", how), name=f"journal-{how}")


def command(how: str) -> str:
    return shlex.join(journal(how).argv)


def zombie_fusermounts() -> set[int]:
    """This process's dead fusermount3 children not yet reaped (each mount's watchdog ends up here)."""
    found = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[-1].split()
        if comm == "fusermount3" and rest[0] == "Z" and int(rest[1]) == os.getpid():
            found.add(int(entry))
    return found


def mounted_under(root: Path) -> list[str]:
    """Mounts under ``root`` (this test's workdir root: other runs on the machine mount elsewhere)."""
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if f" {root}/" in line]


def test_a_journal_written_without_fsync_survives_a_sigkill_after_the_effect(runtime):
    result = kill_mid_tool.run_point(journal("plain"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.PASS, result.message
    assert result.evidence["counts"] == {"charge": 1}


def test_the_same_journal_loses_its_key_to_a_power_cut_after_the_effect_and_the_charge_is_made_twice(
    fuse, tmp_path, agent_forks
):
    zombies = zombie_fusermounts()  # left by other tests' mounts, if any
    settings = Settings(timeout=30, workdir_root=str(tmp_path))
    result = power_loss.run_point(journal("plain"), "after-effect", settings, Runtime(forks=agent_forks))
    assert result.verdict is Verdict.FAIL, result.message
    assert result.message == f"effect duplicated: the provider saw 2 charge (expected 1); {JOURNAL_GONE}"
    assert result.evidence["start"]["returncode"] == -signal.SIGKILL
    assert result.evidence["proof"]["caller_group"] == result.evidence["proof"]["group"]
    cut = result.evidence["cut"]
    assert cut["activity"]["fsyncs"] == 0 and cut["activity"]["directory_fsyncs"] == 0
    assert [loss["path"] for loss in cut["losses"]] == ["journal.json"]
    # Two keys: resume found no journal and drew a new one.
    assert len({c["key"] for c in result.evidence["calls"]}) == 2
    assert list(tmp_path.iterdir()) == [] and mounted_under(tmp_path) == []
    assert zombie_fusermounts() <= zombies


def test_a_journal_written_durably_survives_both(fuse, runtime):
    killed = kill_mid_tool.run_point(journal("durable"), "after-effect", FAST, runtime)
    cut = power_loss.run_point(journal("durable"), "after-effect", FAST, runtime)
    assert (killed.verdict, cut.verdict) == (Verdict.PASS, Verdict.PASS), (killed.message, cut.message)
    assert cut.message == (
        "the provider saw exactly 1 charge; the result equals the clean run's; "
        "the power cut (unsynced) lost nothing: every write and every name was durable"
    )
    activity = cut.evidence["cut"]["activity"]
    assert activity["fsyncs"] >= 1 and activity["directory_fsyncs"] >= 1


@pytest.mark.parametrize(
    ("variant", "lost"),
    [
        ("torn", "journal.json is absent after the cut"),  # a file whose name was never durable is not torn
        ("namespace", "journal.json is absent after the cut"),
        ("lazyfs", "journal.json lost all its 58 bytes (none was synced): it is empty"),
    ],
)
def test_each_variant_loses_the_plain_journal_its_own_way(fuse, variant, lost, runtime):
    result = power_loss.run_point(
        journal("plain"),
        "after-effect",
        Settings(timeout=30, options={power_loss.NAME: power_loss.Options(power_cut=variant)}),
        runtime,
    )
    assert result.verdict is Verdict.FAIL, result.message
    assert f"the power cut ({variant}) lost: {lost}" in result.message
    assert result.evidence["variant"] == variant


def test_before_the_effect_nothing_was_charged_so_a_lost_journal_costs_nothing(fuse, runtime):
    result = power_loss.run_point(journal("plain"), "before-effect", FAST, runtime)
    assert result.verdict is Verdict.PASS, result.message
    assert JOURNAL_GONE in result.message


def test_boundary_lines_cut_the_power_at_each_side_of_each_boundary_of_the_clean_run(fuse, runtime):
    lines = REGISTRY[power_loss.NAME].expand(journal("plain"), ["before", "after"], FAST, runtime)
    assert lines == ["before effect charge 1", "after effect charge 1"]
    results = [power_loss.run_point(journal("plain"), line, FAST, runtime) for line in lines]
    assert [r.verdict for r in results] == [Verdict.PASS, Verdict.FAIL], [r.message for r in results]
    assert results[1].evidence["boundary"]["label"] == "effect charge 1"


def test_where_fuse_cannot_mount_every_line_is_an_error_with_the_reason_and_nothing_is_left(
    monkeypatch, tmp_path, runtime
):
    monkeypatch.setattr(mount_module, "unavailable_reason", lambda: "no /dev/fuse (forced by the test)")
    results = suite.run_scenario(
        replace(journal("plain"), scenario=power_loss.NAME),
        ["after-effect"],
        settings=Settings(timeout=30, workdir_root=str(tmp_path)),
        runtime=runtime,
    )
    assert [(r.verdict, r.message) for r in results] == [
        (
            Verdict.ERROR,
            "power-loss needs a FUSE mount, and FUSE cannot mount here: no /dev/fuse (forced by the test)",
        )
    ]
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_runs_an_agent_under_a_power_cut_variant(fuse, plugpull_forking):
    run = plugpull_forking("--agent", command("plain"), "--scenario", "power-loss", "--power-cut", "torn")
    out = run.stdout.splitlines()
    assert run.returncode == 0
    assert out[0].startswith("FAIL   power-loss  after-effect charge#1 (cut: torn)  ")
    assert "the power cut (torn) lost: journal.json is absent after the cut" in out[0]
    run = plugpull_forking("--agent", command("durable"), "--scenario", "power-loss", "--json")
    doc = json.loads(run.stdout)
    assert run.returncode == 0
    assert [(r["point"], r["verdict"], r["evidence"]["variant"]) for r in doc["results"]] == [
        ("after-effect", "PASS", "unsynced")
    ]


def test_the_command_line_says_fuse_is_missing_as_an_error_exit(monkeypatch, capsys, agent_forks):
    monkeypatch.setattr(mount_module, "unavailable_reason", lambda: "no /dev/fuse (forced by the test)")
    code = cli.main(["--agent", command("plain"), "--scenario", "power-loss"])
    out = capsys.readouterr().out
    assert code == 2
    assert out.startswith("ERROR  power-loss  after-effect")
    assert "FUSE cannot mount here: no /dev/fuse (forced by the test)" in out


def test_power_cut_applies_to_power_loss_only(capsys):
    assert cli.main(["--agent", command("plain"), "--power-cut", "torn"]) == 2
    assert capsys.readouterr().err.strip() == "plugpull: --power-cut applies to power-loss; no selected target runs it"
    assert cli.main(["--agent", command("plain"), "--scenario", "power-loss", "--random-kills", "2"]) == 2
    assert "--random-kills does not apply to power-loss (it applies to every-boundary)" in capsys.readouterr().err


def test_the_command_lines_power_cut_choices_are_the_models_variants():
    from plugpull.powercut.durability import Variant
    from plugpull.scenarios import POWER_CUTS

    assert set(POWER_CUTS) == {v.value for v in Variant}
    assert POWER_CUTS[0] == power_loss.SCENARIO.own(Settings()).power_cut == "unsynced"


def test_an_approval_agent_is_killed_in_approve_and_recover_finds_what_the_cut_left_of_start(fuse, runtime):
    adopted = REGISTRY.adopt(
        power_loss.NAME,
        Target(
            name="approval",
            argv=forked_agent("approval_framework", "correct").argv,
            scenario="resume-after-approval",
        ),
    )
    assert adopted.phases == ("start", "approve", "recover")
    result = power_loss.run_point(adopted, "after-effect", FAST, runtime)
    # start finished and wrote its run without fsync: the cut takes it, and recover has nothing to recover.
    assert result.verdict is Verdict.FAIL, result.message
    assert result.evidence["start"]["argv"][-1] == "approve" and result.evidence["resume"]["argv"][-1] == "recover"
    assert "resume said: refused: no approved run to recover" in result.message
    assert "run.json is absent after the cut" in result.message


def test_keep_workdir_keeps_the_disk_the_cut_left_and_resume_wrote_to_with_nothing_mounted(fuse, tmp_path, runtime):
    settings = Settings(timeout=30, workdir_root=str(tmp_path), keep_workdir=True)
    result = power_loss.run_point(journal("durable"), "after-effect", settings, runtime)
    kept = Path(result.evidence["workdir"])
    assert kept.parent.parent == tmp_path and kept.name == "disk"
    assert json.loads((kept / "journal.json").read_text())["done"] is True
    assert mounted_under(tmp_path) == []


def test_a_finding_line_carries_its_cut_in_its_target_options_and_a_bad_cut_is_one_line():
    # A finding's power-loss line carries its cut in its target options (notebook.finding_lines); the suite runs
    # the line with that cut.
    plain = Target(name="journal", argv=("x",), scenario=power_loss.NAME)
    settings = Settings(timeout=5)
    assert power_loss.SCENARIO.line_settings(settings, plain) is settings
    lazy = power_loss.SCENARIO.line_settings(settings, replace(plain, options={"power_cut": "lazyfs", "key": "none"}))
    assert power_loss.SCENARIO.own(lazy).power_cut == "lazyfs" and lazy.timeout == 5
    with pytest.raises(UsageError, match=r"^--power-cut 'sudden': one of unsynced, torn, namespace, lazyfs$"):
        power_loss.SCENARIO.line_settings(settings, replace(plain, options={"power_cut": "sudden"}))
