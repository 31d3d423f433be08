"""Every findings notebook runs with papermill in this environment with tiny parameters (CI smoke), and is
committed the way papermill needs it: no outputs, a kernelspec with a language, the finding's claim and links.
The smokes' kernels are forked from a template that imported what a notebook's kernel imports (kernel_forks.py),
and fork their lines from the pytest worker's server of their target's family (tests/shared_forks.py); the last tests
hold those kernels to what jupyter_client expects of one."""

import base64
import importlib.util
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from kernel_forks import WORKER_SERVERS
from repository import FINDINGS

import shared_forks
from plugpull import postgres, reaper
from plugpull.forkserver import ForkServer
from plugpull.rendering import shown_point
from plugpull.report.harness import ipynb
from plugpull.results import Result

WRITTEN = [f for f in FINDINGS.values() if f.notebook.is_file()]
# A finding whose target is a user's agent (finding.toml agent = ...) is run end to end by tests/report/test_scaffold.py;
# the smokes below are of the built-in targets' findings, each with its TINY parameters.
BUILT_IN = [f for f in WRITTEN if f.agent is None]
# Findings whose framework the default environment cannot hold (CrewAI conflicts with the dev group:
# docs/DECISIONS.md, "Targets per framework"). Where it is missing, the smoke checks that the notebook says so and
# records no result instead of running a line; where it is installed, the notebook runs like any other.
APART = {"crewai-flow-restore": "crewai"}
RUNNABLE = [f for f in BUILT_IN if f.id not in APART or importlib.util.find_spec(APART[f.id]) is not None]
MISSING = [f for f in BUILT_IN if f.id in APART and importlib.util.find_spec(APART[f.id]) is None]

# The smallest run that still kills a real process once: one target variant, one point.
TINY = {
    "langgraph-kill-mid-tool": {"points": ["after-effect"], "options": {"durability": ["sync"], "key": ["none"]}},
    "openai-agents-4775": {"points": ["ack-lost"], "options": {}},
    # Also the timing-line test's run: the swap variant twice as its own line_repeats say, the control once.
    "agent-framework-8292": {
        "points": ["after-effect"],
        "options": {"variant": ["swap", "control"]},
        "line_repeats": [{"point": "after-effect", "options": {"variant": "swap"}, "repeats": 2}],
    },
    # Three frameworks: one target (the stuck run) here; the other two are skipped by the parameter.
    "resume-after-approval": {
        "points": ["killed-after-effect"],
        "targets": ["fastaiagent"],
        "options": {},
        "racers": 2,
    },
    # Six frameworks: LangGraph's functional API (in the default environment) without a key, killed after the refund.
    "kill-mid-tool-more-frameworks": {
        "points": ["after-effect"],
        "targets": ["langgraph-functional"],
        "options": {"key": ["none"]},
    },
    # Every boundary: Agent Framework's control variant, killed after the first charge only (one line of the map).
    # Agent Framework rather than LangGraph: its fork server imports in ~0.4 CPU-s, LangGraph's in ~1.8 (the
    # LangGraph map's lines are tested in tests/scenarios and tests/targets).
    "boundary-map": {
        "points": ["after"],
        "targets": ["agent-framework"],
        "options": {"variant": ["control"]},
        "boundaries": ["effect charge_card:A 1"],
    },
    # Two frameworks, both in the more-frameworks group: Pydantic AI's deferred tools, approved twice.
    "resume-after-approval-more-frameworks": {
        "points": ["double-resume"],
        "targets": ["pydantic-ai-approval"],
        "options": {},
        "racers": 2,
    },
    # Upgrade pairs: the plumbing with agent-framework, release A and release B both this environment.
    "resume-after-upgrade": {
        "points": ["after-effect"],
        "targets": ["agent-framework"],
        "options": {"variant": ["control"]},
        "from_python": sys.executable,
    },
    # Sibling tool calls: the design where send_email runs before the pause, killed after the charge.
    "sibling-tool-calls": {"points": ["after-effect"], "options": {"approval": ["charge_card"]}},
    # Where crewai is installed: the unkeyed flow killed after the refund (the approval target is left out).
    "crewai-flow-restore": {
        "points": ["after-effect"],
        "approval_points": [],
        "targets": ["crewai"],
        "options": {"key": ["none"]},
    },
    # Power loss: Agent Framework's FileCheckpointStorage (the default environment's), one cut.
    "power-loss": {
        "points": ["after-effect"],
        "targets": ["agent-framework"],
        "options": {"agent-framework": {"variant": ["control"]}},
        "cuts": ["unsynced"],
    },
    # PostgreSQL: DBOS without a key, killed after the refund, on the cluster the notebook starts itself.
    "postgresql-stores": {"points": ["after-effect"], "targets": ["dbos-postgresql"], "options": {"key": ["none"]}},
    # Tool errors: LangGraph's RetryPolicy, the refund keyed by the tool call id, its call raising after the effect.
    "tool-error": {
        "points": ["raise-after-effect"],
        "targets": ["langgraph-tool-error"],
        "options": {"errors": ["retry-policy"], "key": ["tool-call-id"], "tools": ["refund"]},
    },
    # Temporal: the worker alone killed after the refund, no key (the dev server of plugpull.temporal, a sidecar).
    "temporal": {"points": ["after-effect"], "options": {"server": ["sidecar"], "key": ["none"]}},
    "pydantic-ai-temporal": {
        "points": ["after-effect"],
        "options": {"durable": ["TemporalAgent"], "server": ["sidecar"], "key": ["none"]},
    },
    "openai-agents-temporal": {"points": ["after-effect"], "options": {"server": ["sidecar"], "key": ["none"]}},
    # Four frameworks: LangGraph's stream target (in the default environment), a task cancel between the tool
    # and the next model call, the next message sent as is.
    "cancel-mid-stream": {
        "points": ["between-tool-and-model"],
        "targets": ["langgraph-stream"],
        "options": {"cancel": ["task-cancel"], "durability": ["sync"], "next_turn": ["new-message"]},
    },
}


def targets_of(finding) -> list[str]:
    """The built-ins a smoke runs: its TINY ``targets``, or the finding's one target (a one-target notebook has none)."""
    return list({**finding.parameters, **TINY[finding.id]}.get("targets") or finding.targets)


def group_of_smoke(finding) -> pytest.MarkDecorator:
    """The xdist group of a smoke: its targets' family's (tests/shared_forks.py), whose worker already runs the server
    its kernel forks the lines from (``smoke``); each smoke runs one family. The family's own group even for a target
    on PostgreSQL (postgresql-stores: DBOS's, ~30 s, not the PostgreSQL tests', the longest group of a run)."""
    from plugpull.targets import BUILT_INS

    (group,) = {shared_forks.group(BUILT_INS[name].module).args for name in targets_of(finding)}
    return pytest.mark.xdist_group(*group)


# Findings whose notebook starts a throwaway server (plugpull.postgres): skipped, saying why, where none can start.
NEEDS_SERVER = {"postgresql-stores"}
# What the record's lines are called when a point expands into one line per boundary.
LINES = {"boundary-map": ["after effect charge_card:A 1"], "agent-framework-8292": ["after-effect"] * 3}


@pytest.fixture
def no_python_downloads():
    """Nothing here (tests/report/conftest.py's sets UV_PYTHON_DOWNLOADS): no notebook runs uv, and a smoke's kernel
    forks from its worker's family servers, whose key is the worker's environment (tests/shared_forks.py)."""


def worker_servers(finding) -> dict[str, ForkServer]:
    """Target module -> the pytest worker's family server that forks it, for every module of the families of the
    smoke's installed targets (started now if the worker has none: the family's tests reuse it)."""
    from plugpull.targets import BUILT_INS

    servers = {}
    for name in targets_of(finding):
        built_in = BUILT_INS[name]
        if not built_in.installed():
            continue
        # The notebook starts its own cluster (nb.postgres_for): its phases carry the cluster's URL.
        env = {postgres.URL_ENV: "the notebook's cluster"} if built_in.server == postgres.URL_ENV else {}
        modules = shared_forks.FAMILIES[built_in.module]
        server = shared_forks.FORKS.server_for(modules[0], env=env)
        servers.update(dict.fromkeys(modules, server))
    return servers


def left_by(servers: list[ForkServer]) -> list[str]:
    """Processes of a smoke's phases alive after it, below this process: one still below its server, or an orphan
    that reached this process (the subreaper above the servers; the kernel that ran the phase is not: kernel_forks.
    fork_from). Known as the kernel's tracker knows them (plugpull.reaper): a forked process never execs, so its
    environment shows its server's; one it exec'd carries its phase's marker."""
    markers = {f"{reaper.SERVER_ENV}={server.path}".encode() for server in servers}
    phase = f"{reaper.PHASE_ENV}=".encode()
    own = {server._proc.pid for server in servers}
    left = []
    for proc in reaper.tree({os.getpid()}).values():
        if not proc.alive or proc.pid in own:
            continue
        try:
            environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if markers.intersection(environ) or any(entry.startswith(phase) for entry in environ):
            left.append(f"{proc.pid} {reaper.cmdline(proc.pid)}")
    return left


@pytest.fixture(scope="module")
def smoke(forked_kernel, tmp_path_factory):
    """A finding's notebook run once with its TINY parameters, for every test of this module that reads that run
    (the 8292 smoke and the timing-line test: a notebook run is 3-7 CPU-s, a kernel and pandas and matplotlib
    imported each time): ``smoke(finding)`` gives the papermill run, the executed notebook and the record."""
    runs: dict[str, tuple[ipynb.NotebookRun, Path, Path]] = {}

    def run(finding):
        if finding.id not in runs:
            folder = tmp_path_factory.mktemp(finding.id)
            out, results = folder / "out.ipynb", folder / "record.json"
            parameters = {
                **finding.parameters,
                **TINY[finding.id],
                "repeats": 1,
                "pin": "smoke",
                "results_path": str(results),
            }
            # The line's processes fork from a server that imported the target once: each is still started,
            # SIGKILLed and resumed for real; what the smoke checks is that the notebook runs and writes its
            # record, not a cold start (the notebook's default, False, is what the findings' records use).
            # boundary-map forks by itself (Scenario.finding_forks).
            if finding.id != "boundary-map":
                parameters["fork_server"] = True
            # That server is this worker's, of the target's family, which its tests fork from too (kernel_forks.py,
            # fork_from): the kernel imports no framework a second time.
            servers = worker_servers(finding)
            sockets = {module: server.path for module, server in servers.items()}
            # Unix sockets live below it: a short folder (tests/conftest.py, short_tmp).
            scratch = Path(tempfile.mkdtemp(prefix="pp-"))
            try:
                with pytest.MonkeyPatch.context() as patch:
                    patch.setenv(WORKER_SERVERS, json.dumps({"python": sys.executable, "sockets": sockets}))
                    runs[finding.id] = (
                        ipynb.execute(finding.notebook, out, forked_kernel, parameters, scratch),
                        out,
                        results,
                    )
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            left = left_by(list(set(servers.values())))
            assert not left, f"processes of the smoke's phases outlived it: {left}"
        return runs[finding.id]

    return run


@pytest.mark.parametrize("finding", [pytest.param(f, marks=group_of_smoke(f), id=f.id) for f in RUNNABLE])
def test_the_notebook_runs_in_this_environment_and_writes_a_valid_record(finding, smoke):
    from plugpull.targets import BUILT_INS

    tiny = {**finding.parameters, **TINY[finding.id]}
    # A one-target notebook has no `targets` parameter: finding.toml's target is the one it runs.
    targets = tiny.get("targets") or finding.targets
    if not any(BUILT_INS[t].installed() for t in targets):
        pytest.skip(f"none of {list(targets)} is installed here (uv sync --group more-frameworks)")
    if finding.id in NEEDS_SERVER:
        from plugpull import postgres

        try:
            postgres.find_bindir()
        except postgres.PostgresUnavailable as error:
            pytest.skip(f"no PostgreSQL cluster can start here: {error}")
    run, out, results = smoke(finding)
    assert run.error is None, run.error
    doc = json.loads(results.read_text())
    assert doc["finding"] == finding.id and doc["pin"] == "smoke" and doc["error"] is None
    assert doc["parameters"].get("fork_server", True) is True  # the record says its lines were forked
    assert [r["point"] for r in doc["results"]] == LINES.get(finding.id, TINY[finding.id]["points"])
    assert any(doc["versions"].get(f) for f in finding.frameworks)  # read inside the kernel
    executed = out.read_text()
    plots = [
        base64.b64decode(o["data"]["image/png"])
        for cell in json.loads(executed)["cells"]
        for o in cell.get("outputs", [])
        if "image/png" in o.get("data", {})
    ]
    assert plots and all(png[25] == 3 for png in plots)  # the verdict plot, a palette PNG (IHDR colour type 3)
    # The sections its scenario's views add (Scenario.views): a boundary map, what each power cut lost.
    for heading in VIEW_HEADINGS.get(finding.id, ()):
        assert heading in executed
    line = Result.from_dict(doc["results"][0])
    # The text line names the held call after the point (rendering.shown_point).
    assert f"{line.verdict.value:<5}  {line.scenario}  {shown_point(line)}  {line.target}" in executed


#: The headings a finding's notebook shows for its scenario's own views.
VIEW_HEADINGS = {"boundary-map": ("## The map",), "power-loss": ("## What each cut lost",)}


@pytest.mark.parametrize("finding", MISSING, ids=lambda f: f.id)
def test_without_its_framework_the_notebook_says_so_and_records_no_result(finding, forked_kernel, tmp_path, short_tmp):
    out, results = tmp_path / "out.ipynb", tmp_path / "record.json"
    parameters = {**finding.parameters, "repeats": 1, "pin": "smoke", "results_path": str(results)}
    run = ipynb.execute(finding.notebook, out, forked_kernel, parameters, short_tmp)
    assert run.error is None, run.error
    doc = json.loads(results.read_text())
    assert doc["finding"] == finding.id and doc["error"] is None and doc["results"] == []
    assert all(doc["versions"][f] is None for f in finding.frameworks)  # read inside the kernel: not there
    executed = out.read_text()
    for target in finding.targets:
        assert f"{target}: skipped, {APART[finding.id]} is not installed in this environment" in executed
    assert "0 results in" in executed


@pytest.mark.parametrize("finding", WRITTEN, ids=lambda f: f.id)
def test_the_notebook_is_committed_without_outputs_and_with_a_kernelspec_language(finding):
    book = nbformat.read(str(finding.notebook), as_version=4)
    assert book.metadata.kernelspec.language == "python"
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("finding", WRITTEN, ids=lambda f: f.id)
def test_the_notebook_states_the_findings_claim_and_links(finding):
    book = nbformat.read(str(finding.notebook), as_version=4)
    intro = " ".join(book.cells[0].source.split())
    assert finding.claim in intro
    links = (
        finding.links.get("issues", [])
        + finding.links.get("prs", [])
        + [d["url"] for d in finding.links.get("docs", [])]
    )
    assert links and all(link in intro for link in links)


@pytest.mark.parametrize("finding", WRITTEN, ids=lambda f: f.id)
def test_the_notebook_declares_every_default_parameter_of_its_finding(finding):
    import papermill

    declared = papermill.inspect_notebook(str(finding.notebook))
    assert set(finding.parameters) | {"pin", "plugpull_commit", "results_path"} <= set(declared)


@pytest.mark.parametrize("finding", FINDINGS.values(), ids=lambda f: f.id)
def test_every_pin_set_is_a_hash_locked_file_that_pins_the_kernels_needs(finding):
    for pin in finding.pins:
        pin.check_locked()
        names = set(re.findall(r"^([a-z0-9][a-z0-9._-]*)==", pin.requirements.read_text(), re.M))
        if pin.npm is not None:  # the framework is an npm package; the Python lock is the kernel's alone
            names |= set(json.loads((pin.npm / "package.json").read_text())["dependencies"])
        assert {"ipykernel", "pandas", "matplotlib"} <= names and names & set(finding.frameworks), pin.name


def test_findings_without_a_notebook_yet_are_the_ones_whose_target_has_not_landed():
    from plugpull.targets import BUILT_INS

    for finding in FINDINGS.values():
        landed = finding.agent is not None or all(t in BUILT_INS for t in finding.targets)
        assert finding.notebook.is_file() == landed, finding.id


def test_a_several_framework_notebook_runs_the_installed_targets_and_says_which_it_skipped(monkeypatch):
    from plugpull.report.kernel import notebook
    from plugpull.targets import BUILT_INS

    monkeypatch.setattr(type(BUILT_INS["langgraph-approval"]), "installed", lambda self: self.module != "langgraph")
    targets, said = notebook.select_installed(["fastaiagent", "langgraph-approval"], {"durability": ["sync"]})
    assert [t.name for t in targets] == ["fastaiagent"]
    assert said[1] == "langgraph-approval: skipped, langgraph is not installed in this environment"
    with pytest.raises(ValueError, match="option 'variant'"):
        notebook.select_installed(["fastaiagent", "langgraph-approval"], {"variant": ["swap"]})
    with pytest.raises(RuntimeError, match="none of"):
        notebook.select_installed(["langgraph-approval"], {})


@group_of_smoke(FINDINGS["agent-framework-8292"])  # the 8292 smoke's worker, which has its run
def test_a_timing_line_runs_its_own_repeats_and_the_table_shows_its_rate_and_interval(smoke):
    # The 8292 smoke's run (TINY): the swap variant is a timing line of 2 runs, the control variant runs once.
    timing = [{"point": "after-effect", "options": {"variant": "swap"}, "repeats": 2}]
    assert TINY["agent-framework-8292"]["line_repeats"] == timing
    run, out, results = smoke(FINDINGS["agent-framework-8292"])
    assert run.error is None, run.error
    doc = json.loads(results.read_text())
    assert [r["options"]["variant"] for r in doc["results"]] == ["swap", "swap", "control"]
    assert doc["parameters"]["line_repeats"] == timing
    assert doc["parameters"]["fork_server"] is True  # forked lines, real kills
    # Two runs: the rate and its run count, no interval (claims.INTERVAL_RUNS).
    assert "FAIL rate [95% CI]" in out.read_text() and "1.00 (2 runs)" in out.read_text()


def test_the_timing_line_of_the_langgraph_finding_asks_for_20_runs_and_its_aimed_lines_for_5():
    wanted = FINDINGS["langgraph-kill-mid-tool"].line_repeats()
    tool_call_id = {"durability": "async", "key": "tool-call-id"}
    assert wanted == [
        {"point": "after-effect", "options": {**tool_call_id, "model_step": "raced"}, "repeats": 20},
        *(
            {"point": "after-effect", "options": {**tool_call_id, "model_step": step}, "repeats": 5}
            for step in ("unsaved", "writes-saved", "saved")
        ),
    ]
    assert FINDINGS["agent-framework-8292"].line_repeats() == []


# --- the forked kernels the smokes run in (kernel_forks.py), here so that they share the smokes' template --------
# A fresh process per start with the environment and folder jupyter_client started it with, interrupted by a
# signal, and gone with its launcher when jupyter_client kills that.


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def value_of(client, code: str) -> str:
    """The repr of the last expression of ``code``, run in the kernel."""
    outputs = []
    reply = client.execute_interactive(code, timeout=60, output_hook=outputs.append)
    assert reply["content"]["status"] == "ok", reply["content"]
    [result] = [m for m in outputs if m["msg_type"] == "execute_result"]
    return result["content"]["data"]["text/plain"]


@contextmanager
def started_kernel(forked_kernel, folder: Path, monkeypatch):
    """A forked kernel started by jupyter_client in ``folder``, with what this process's environment holds now."""
    from jupyter_client.manager import KernelManager

    monkeypatch.setenv("JUPYTER_PATH", str(forked_kernel.jupyter_path))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(folder / "runtime"))
    manager = KernelManager(kernel_name=forked_kernel.kernel)
    manager.start_kernel(cwd=str(folder))
    client = manager.blocking_client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    try:
        yield manager, client
    finally:
        client.stop_channels()
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)


@pytest.fixture
def kernel(forked_kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_TEST_MARK", "launch-time")
    with started_kernel(forked_kernel, tmp_path, monkeypatch) as started:
        yield started


def test_a_forked_kernel_has_the_launchers_environment_and_folder_and_stops_on_a_signal(kernel, tmp_path):
    manager, client = kernel
    assert value_of(client, "import os; os.environ['PLUGPULL_TEST_MARK']") == "'launch-time'"
    assert value_of(client, "os.getcwd()") == repr(str(tmp_path))
    pid = int(value_of(client, "os.getpid()"))
    assert pid != manager.provisioner.process.pid  # the launcher stands for it
    # The SIGINT must reach the kernel while it runs the cell: ipykernel ignores SIGINT between requests (kernelapp
    # sets SIG_IGN; kernelbase installs default_int_handler only while a handler runs), and the cell would then sleep
    # 60 s. So the cell says when it runs; a fixed wait after execute() was not enough under load (the interrupt came
    # before the execution, and the reply's 30 s ran out).
    # stop_on_error=False: an error reply otherwise makes ipykernel abort the requests that reach it before the
    # "stop aborting" message its shell-channel thread posts to itself (ipykernel 7 kernelbase._abort_queues), and
    # the next request raced that message (CI once: status 'aborted').
    client.execute("import pathlib, time; pathlib.Path('running').touch(); time.sleep(60)", stop_on_error=False)
    deadline = time.monotonic() + 30
    while not (tmp_path / "running").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tmp_path / "running").exists(), "the cell never ran"
    time.sleep(0.2)  # from the touch into the sleep: a few bytecodes
    manager.interrupt_kernel()  # SIGINT to the launcher's group, relayed to the kernel's
    reply = client.get_shell_msg(timeout=30)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
    assert value_of(client, "os.getpid()") == str(pid)  # the same kernel, still answering


def test_a_kernel_whose_launcher_is_killed_is_killed_too(kernel):
    manager, client = kernel
    pid = int(value_of(client, "import os; os.getpid()"))
    os.killpg(manager.provisioner.process.pid, signal.SIGKILL)  # jupyter_client's last resort
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


# In a smoke's kernel: fork a phase that leaves a helper behind (it writes the helper's pid to ./helper, then sleeps),
# wait for the helper, note the phase's parent, SIGKILL the phase's group; the parent's pid is the cell's value.
FORK_A_PHASE_THAT_LEAVES_A_HELPER = """
import os, pathlib, sys, time
from plugpull import forkserver
helper = "import pathlib, subprocess, time; p = subprocess.Popen(['sleep', '30'], start_new_session=True); "
helper += "pathlib.Path('helper').write_text(str(p.pid)); time.sleep(30)"
forks = forkserver.ForkServers()
running = forks.spawn([sys.executable, "-m", "timeit", "-n1", "-r1", helper], env=dict(os.environ), cwd=os.getcwd())
while not pathlib.Path("helper").is_file() or not pathlib.Path("helper").read_text():
    time.sleep(0.01)
parent = int(open(f"/proc/{running.pid}/stat").read().rsplit(")", 1)[1].split()[1])
outcome = running.kill()
parent
"""


def test_a_smokes_kernel_forks_from_the_workers_server_whose_orphans_the_smoke_finds(
    forked_kernel, tmp_path, monkeypatch
):
    # What a smoke's kernel is given (smoke, kernel_forks.fork_from), for a server of a stdlib module: a phase it
    # forks is that server's child; a helper the phase leaves reaches this process, not the kernel, and is what the
    # smoke's check (left_by) finds; a module without a server fails rather than start one.
    with ForkServer(sys.executable, "timeit") as server:
        monkeypatch.setenv(WORKER_SERVERS, json.dumps({"python": sys.executable, "sockets": {"timeit": server.path}}))
        with started_kernel(forked_kernel, tmp_path, monkeypatch) as (_, client):
            assert value_of(client, FORK_A_PHASE_THAT_LEAVES_A_HELPER) == str(server._proc.pid)
            assert value_of(client, "outcome.returncode") == str(-signal.SIGKILL)
            assert value_of(client, f"{WORKER_SERVERS!r} in os.environ") == "False"  # no phase inherits it
            reply = client.execute_interactive("forks.spawn([sys.executable, '-m', 'json.tool'], env={}, cwd=None)")
            assert reply["content"]["ename"] == "RuntimeError"
            assert "started no server that forks json.tool" in reply["content"]["evalue"]
        helper = int((tmp_path / "helper").read_text())
        try:
            assert reaper.read_proc(helper).ppid == os.getpid()  # the subreaper above the server: this process
            assert [line.split()[0] for line in left_by([server])] == [str(helper)]
        finally:
            os.kill(helper, signal.SIGKILL)
            os.waitpid(helper, 0)
        assert left_by([server]) == []
