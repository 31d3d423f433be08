"""The forked kernels the notebook tests run in (kernel_forks.py) behave as jupyter_client expects of a kernel: a
fresh process per start with the environment and folder it was started with, interrupted by a signal, and gone
with its launcher when jupyter_client kills that."""

import os
import signal
import time
from pathlib import Path

import pytest


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


@pytest.fixture
def kernel(forked_kernel, tmp_path, monkeypatch):
    from jupyter_client.manager import KernelManager

    monkeypatch.setenv("JUPYTER_PATH", str(forked_kernel.jupyter_path))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("PLUGPULL_TEST_MARK", "launch-time")
    manager = KernelManager(kernel_name=forked_kernel.kernel)
    manager.start_kernel(cwd=str(tmp_path))
    client = manager.blocking_client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    try:
        yield manager, client
    finally:
        client.stop_channels()
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)


def test_a_forked_kernel_has_the_launchers_environment_and_folder_and_stops_on_a_signal(kernel, tmp_path):
    manager, client = kernel
    assert value_of(client, "import os; os.environ['PLUGPULL_TEST_MARK']") == "'launch-time'"
    assert value_of(client, "os.getcwd()") == repr(str(tmp_path))
    pid = int(value_of(client, "os.getpid()"))
    assert pid != manager.provisioner.process.pid  # the launcher stands for it
    client.execute("import time; time.sleep(60)")
    time.sleep(0.5)
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
