"""The Agent Framework witnesses (findings/*/witness/): framework-only scripts with their own real SIGKILL.

Run with this environment's agent-framework-core, start and resume on the same release (the cross-release
runs are the resume-after-upgrade records). Expectations follow the installed version: up to 1.19.0 saved
@step results are keyed by (step name, call index) (microsoft/agent-framework#8292). Most lines run with
``--fork`` (each phase forked from the witness), the witness itself forked from the module's server that
imported Agent Framework once (witness_server), as do the usage errors (the scripts import it before they read
their arguments). One line of the family runs cold, each phase a new interpreter, as a reader and the records run
it, and forked on the same line gives the same verdict and counts: the 8292 witness's (checkout_two_orders.py); the
upgrade witness's start runs cold under its --start-python, its resume forked, and the records run every line cold.
"""

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from installed import requires
from witness_server import WitnessServer

pytestmark = [pytest.mark.witness, requires("agent_framework")]

FINDINGS = Path(__file__).parents[2] / "findings"
CHECKOUT = FINDINGS / "agent-framework-8292" / "witness" / "checkout_two_orders.py"
UPGRADE = FINDINGS / "resume-after-upgrade" / "witness" / "agent_framework_upgrade.py"
VERSION = importlib.metadata.version("agent-framework-core")
KEYED_BY_CALL_ORDER = tuple(int(p) for p in VERSION.split(".")[:2]) < (1, 20)


def another_python(tmp_path: Path) -> tuple[Path, Path]:
    """Another path to this venv's Python, standing for another release's, which writes down each command line."""
    calls, python = tmp_path / "calls", tmp_path / "python"
    python.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python, calls


@pytest.fixture(scope="module")
def server():
    with WitnessServer([CHECKOUT, UPGRADE]) as server:
        yield server


def witness(
    script: Path, *args: str, server: WitnessServer | None = None
) -> tuple[int, dict, subprocess.CompletedProcess]:
    """(exit code, last stdout line, run): forked from ``server`` when given, else a new interpreter."""
    if server is not None:
        run = server.completed(script, *args, timeout=240)
    else:
        run = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=240)
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "null"
    return run.returncode, json.loads(last), run


@pytest.mark.parametrize(
    "kill, fork",
    [("before effect charge_card:A 1", False), ("after effect charge_card:A 1", True)],
    ids=["cold", "forked"],
)
def test_the_swapped_restart_charges_customer_a_twice_and_never_b(server, kill, fork):
    args = ["--variant", "swap", "--kill", kill]
    code, out, run = witness(CHECKOUT, *args, "--fork", server=server) if fork else witness(CHECKOUT, *args)
    assert (out["witness"], out["framework"], out["version"]) == (
        "checkout_two_orders",
        "agent-framework-core",
        VERSION,
    )
    assert out["start_version"] == VERSION
    if KEYED_BY_CALL_ORDER:
        assert (code, out["verdict"]) == (1, "FAIL"), run.stderr
        assert out["counts"] == {"charge_card:A": 2, "charge_card:B": 0}
        assert out["detail"]["receipts"]["B"].startswith("charged customer A ")
    else:
        assert (code, out["verdict"]) == (0, "PASS"), run.stderr
        assert out["counts"] == {"charge_card:A": 1, "charge_card:B": 1}
    if not fork:
        forked_code, forked, _ = witness(CHECKOUT, *args, "--fork", server=server)
        assert (forked_code, forked["verdict"], forked["counts"]) == (code, out["verdict"], out["counts"])


def test_a_kill_once_a_and_bs_payments_are_saved_swaps_the_receipts_with_each_card_charged_once(server):
    # After the third save both A's charge and B's payment are on disk ("after checkpoint-save 2" is a race
    # between two saving threads: the boundary map claims it as a range).
    code, out, _ = witness(CHECKOUT, "--variant", "swap", "--kill", "after checkpoint-save 3", "--fork", server=server)
    assert out["counts"] == {"charge_card:A": 1, "charge_card:B": 1}
    if KEYED_BY_CALL_ORDER:
        # The counts alone look right: the receipts say which order paid with which card.
        assert (code, out["verdict"]) == (1, "FAIL")
        assert "order A's receipt: charged customer B" in out["did"]
    else:
        assert (code, out["verdict"]) == (0, "PASS")


def test_the_restart_in_the_same_order_charges_each_customer_once(server):
    code, out, run = witness(
        CHECKOUT, "--variant", "control", "--kill", "after effect charge_card:A 1", "--fork", server=server
    )
    assert (code, out["verdict"]) == (0, "PASS"), run.stderr
    assert out["counts"] == {"charge_card:A": 1, "charge_card:B": 1}


def test_killed_before_the_first_checkpoint_the_app_starts_over_and_passes(server):
    code, out, _ = witness(CHECKOUT, "--variant", "swap", "--kill", "before checkpoint-save 1", "--fork", server=server)
    assert (code, out["verdict"], out["counts"]) == (0, "PASS", {"charge_card:A": 1, "charge_card:B": 1})


def test_a_kill_point_the_run_never_reaches_is_an_error_not_evidence(server):
    code, out, _ = witness(CHECKOUT, "--kill", "before open-payment 9", "--fork", server=server)
    assert (code, out["verdict"]) == (2, "ERROR")
    assert "start was not killed by SIGKILL (exit 0)" in out["did"]


def test_a_malformed_kill_point_is_a_one_line_usage_error(server):
    code, out, run = witness(CHECKOUT, "--kill", "somewhere", server=server)
    assert code == 2 and out is None
    assert run.stderr.strip().splitlines()[-1].startswith("checkout_two_orders.py: error: --kill 'somewhere'")
    assert "Traceback" not in run.stderr


def test_start_python_runs_the_start_under_that_interpreter_cold_even_with_fork(server, tmp_path):
    python, calls = another_python(tmp_path)
    code, out, _ = witness(CHECKOUT, "--variant", "control", "--start-python", str(python), "--fork", server=server)
    assert (code, out["verdict"], out["start_version"]) == (0, "PASS", VERSION)
    asked, started = calls.read_text().splitlines()  # the version, then the start; the resume was forked
    assert asked.startswith("-c ") and started.startswith(f"{CHECKOUT} ") and " _phase start " in started


@pytest.mark.parametrize("kill", ["before-charge", "after-charge"])
def test_the_upgrade_witness_on_one_release_resumes_each_order_once(server, kill):
    # A and B the same release: the control of the upgrade (1.19.0 -> 1.20.0 refuses: the records).
    args = ["--kill", kill, "--start-python", sys.executable]
    code, out, run = witness(UPGRADE, *args, "--fork", server=server)
    assert (code, out["verdict"]) == (0, "PASS"), run.stderr
    assert (out["witness"], out["version"], out["start_version"]) == ("agent_framework_upgrade", VERSION, VERSION)
    assert out["counts"] == {"charge_card:A": 1, "charge_card:B": 1}


def test_the_upgrade_witness_with_fork_still_runs_another_start_release_there_and_says_so_when_it_cannot(server):
    code, out, _ = witness(UPGRADE, "--start-python", "/bin/false", "--fork", server=server)
    assert (code, out["verdict"], out["start_version"]) == (2, "ERROR", None)
    assert "start was not killed by SIGKILL" in out["did"]


def test_both_witnesses_import_nothing_of_plugpull():
    for script in (CHECKOUT, UPGRADE):
        imports = [line for line in script.read_text().splitlines() if line.startswith(("import ", "from "))]
        assert not [line for line in imports if "plugpull" in line], script


def test_a_start_python_that_is_not_there_is_a_one_line_usage_error(server, tmp_path):
    code, out, run = witness(UPGRADE, "--start-python", str(tmp_path / "nope"), server=server)
    assert code == 2 and out is None
    assert run.stderr.strip().splitlines()[-1].endswith("nope: not an executable file")
    assert "Traceback" not in run.stderr


@pytest.mark.filterwarnings("ignore:\\[FUNCTIONAL_WORKFLOWS\\]")  # the script's @step, imported here
def test_fork_with_a_thread_running_is_an_error_verdict_before_any_phase(capsys):
    # fork() copies only the calling thread: a lock another thread holds would stay held in the phase forever.
    spec = importlib.util.spec_from_file_location("checkout_two_orders", CHECKOUT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        code = script.main(["--fork"])
    finally:
        release.set()
        other.join()
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (code, out["verdict"], out["counts"]) == (2, "ERROR", {})
    assert f"--fork: {threading.active_count() + 1} threads; fork() copies only this one" in out["did"]
