"""microsoft/agent-framework#8292 on real processes: real SIGKILL, the framework's own checkpoint restore.

Expectations follow the installed version (read here, not from a pin): up to 1.19.0 saved @step
results are keyed by (step name, call index), so the swapped restart mixes up the two orders;
from 1.20.0 the key includes the arguments (docs/finding-agent-framework-8292.md).
"""

import functools
import importlib.metadata
import json
import signal
import subprocess
import sys
from dataclasses import replace

import pytest

import shared_forks
from installed import requires
from plugpull import run_scenario
from plugpull.aim import Aim
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.registry import REGISTRY
from plugpull.targets import BUILT_INS, UPGRADES

pytestmark = requires("agent_framework")

VERSION = importlib.metadata.version("agent-framework-core")
KEYED_BY_CALL_ORDER = tuple(int(p) for p in VERSION.split(".")[:2]) < (1, 20)
SETTINGS = Settings(timeout=60)
# The module's tests share their clean runs, and fork each phase from a server that imported agent_framework
# once (each phase is still its own process group, SIGKILLed for real).
RUNTIME = Runtime(forks=shared_forks.FORKS)


def variant(name: str):
    (target,) = [t for t in BUILT_INS["agent-framework"].variants if t.options["variant"] == name]
    return target


@functools.cache
def swapped(point: str):
    """The swap's line at ``point``, run once for the two tests that read it."""
    (result,) = run_scenario(variant("swap"), [point], settings=SETTINGS, runtime=RUNTIME)
    return result


@pytest.mark.parametrize("point", ["before-effect", "after-effect"])
def test_through_the_harness_the_provider_sees_customer_a_charged_twice_and_b_never(point):
    result = swapped(point)
    assert result.evidence["start"]["returncode"] == -signal.SIGKILL
    assert result.evidence["resume"]["returncode"] == 0
    calls = [(c["phase"], c["name"], c["key"]) for c in result.evidence["calls"]]
    held_key = calls[0][2]
    if KEYED_BY_CALL_ORDER:
        assert result.evidence["counts"] == {"charge_card:A": 2, "charge_card:B": 0}
        # Resume charges A's saved key (from B's branch) and a new key (A's branch); B never.
        assert calls[1:][0] == ("resume", "charge_card:A", held_key)
        assert calls[2][:2] == ("resume", "charge_card:A") and calls[2][2] != held_key
    else:
        assert result.evidence["counts"] == {"charge_card:A": 1, "charge_card:B": 1}


@pytest.mark.parametrize("point", ["before-effect", "after-effect"])
def test_through_the_harness_the_swapped_restart_fails_naming_the_order_never_charged(point):
    result = swapped(point)
    assert result.version == VERSION and result.framework == "agent-framework-core"
    assert result.evidence["start"]["returncode"] == -signal.SIGKILL
    charged = [c["name"] for c in result.evidence["calls"] if c["phase"] == "resume"]
    if KEYED_BY_CALL_ORDER:
        assert result.verdict is Verdict.FAIL, result.message
        assert result.message.startswith(
            "effect lost: the provider saw 0 charge_card:B (expected 1); "
            "effect duplicated: the provider saw 2 charge_card:A (expected 1)"
        )
        # The note is apart from the measured message, and says which evidence it matched.
        assert "8292" not in result.message
        (note,) = result.notes
        assert note["url"] == "https://github.com/microsoft/agent-framework/issues/8292"
        assert note["condition"] == "charge_card:A recorded 2 times and charge_card:B 0 times"
        # B's card is never asked for after the restore; the clean run (no kill) says it was owed.
        assert charged == ["charge_card:A", "charge_card:A"]
        assert result.evidence["clean"]["counts"] == {"charge_card:A": 1, "charge_card:B": 1}
    else:
        assert result.verdict is Verdict.PASS, result.message
        assert sorted(charged) == ["charge_card:A", "charge_card:B"]
        assert result.notes == []


@pytest.mark.parametrize("point", ["before-effect", "after-effect"])
def test_through_the_harness_the_restart_in_the_same_order_passes(point):
    (result,) = run_scenario(variant("control"), [point], settings=SETTINGS, runtime=RUNTIME)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.message == (
        "the provider saw exactly 1 charge_card:A, 1 charge_card:B; the result equals the clean run's"
    )
    # The golden result: each order charged to its own customer (the per-run key left out).
    assert [
        {k: v for k, v in order.items() if k != "idempotency_key"} for order in result.evidence["golden"][0]["orders"]
    ] == [
        {"order_id": "A", "customer": "A", "cents": 1999},
        {"order_id": "B", "customer": "B", "cents": 4999},
    ]
    assert result.notes == []


def test_the_built_in_target_runs_the_swap_and_the_control():
    variants = BUILT_INS["agent-framework"].variants
    assert [v.options for v in variants] == [{"variant": "swap"}, {"variant": "control"}]
    assert all(v.framework == "agent-framework-core" for v in variants)
    # Only the swap's FAIL lines point at the issue; a control FAIL would be something else.
    assert variants[1].notes == ()


@pytest.mark.parametrize("name", ["swap", "control"])
@pytest.mark.parametrize("boundary", ["open-payment 1", "checkpoint-save 1"])
def test_killed_before_the_first_checkpoint_resume_starts_the_run_over_from_its_input(name, boundary):
    # Nothing durable exists yet: run(checkpoint_id=...) would have nothing to restore, so the app runs
    # its input again (before, it exited 2 and the boundary map read the line as stuck).
    settings = Settings(timeout=60, aim=Aim(boundaries=(boundary,)))
    (result,) = run_scenario(
        REGISTRY.adopt("every-boundary", variant(name)), ["before"], settings=settings, runtime=RUNTIME
    )
    assert result.evidence["start"]["returncode"] == -signal.SIGKILL
    assert result.evidence["resume"]["returncode"] == 0
    assert result.verdict is Verdict.PASS, result.message
    assert result.evidence["counts"] == {"charge_card:A": 1, "charge_card:B": 1}
    # The whole run is done by resume: both charges are its calls.
    assert sorted(c["name"] for c in result.evidence["calls"] if c["phase"] == "resume") == [
        "charge_card:A",
        "charge_card:B",
    ]


def test_the_upgrade_target_also_runs_the_orders_one_after_the_other():
    variants = UPGRADES["agent-framework"].variants
    assert [v.options["variant"] for v in variants] == ["swap", "control", "sequential"]
    assert variants[2].argv[-2:] == ("--variant", "sequential")


@pytest.mark.parametrize("point", ["before-effect", "after-effect"])
def test_the_orders_one_after_the_other_restart_with_each_customer_charged_once(point):
    sequential = UPGRADES["agent-framework"].variants[2]
    (result,) = run_scenario(
        replace(sequential, scenario="kill-mid-tool", notes=()), [point], settings=SETTINGS, runtime=RUNTIME
    )
    assert result.evidence["start"]["returncode"] == -signal.SIGKILL
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.evidence["counts"] == {"charge_card:A": 1, "charge_card:B": 1}


def test_the_agent_imports_nothing_of_the_harness_or_other_frameworks():
    code = (
        "import sys, json, plugpull.targets.agent_framework_checkout; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langgraph', 'agents', 'pandas', 'papermill') or m in ('plugpull.cli', 'plugpull.provider', "
        "'plugpull.channel', 'plugpull.suite') or m.startswith('plugpull.scenarios'))))"
    )
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []


def test_the_fork_servers_hook_imports_what_a_checkpoint_write_imports_and_leaves_the_phase_run_as_main():
    # In a fresh interpreter: the modules are not imported by the target's own import, only by the hook.
    code = (
        "import sys\n"
        "from plugpull.targets import agent_framework_checkout as t\n"
        "before = [m for m in t.FIRST_USE_IMPORTS if m in sys.modules]\n"
        "returned = t.plugpull_prefork(['start', '--variant', 'swap'])\n"
        "after = [m for m in t.FIRST_USE_IMPORTS if m in sys.modules]\n"
        "print(returned, len(before) < len(t.FIRST_USE_IMPORTS), after == list(t.FIRST_USE_IMPORTS))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "True", "True"]
