"""plugpull.sidecar on real processes: a server started before a run's phases and stopped after them."""

import os
import sys
import time

from plugpull import sidecar


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_the_sidecar_is_up_in_its_own_session_during_the_block_and_gone_after_it(tmp_path):
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
    with sidecar.running(python(code), dict(os.environ), str(tmp_path), timeout=30) as line:
        pid = int(line)
        assert alive(pid)
        assert os.getsid(pid) == pid  # its own session: a kill of a run's process group does not reach it
    assert not alive(pid)


def test_a_sidecar_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path, monkeypatch):
    default = sidecar.GRACE
    monkeypatch.setattr(sidecar, "GRACE", 0.5)
    code = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(os.getpid(), flush=True); time.sleep(60)"
    )
    began = time.monotonic()
    with sidecar.running(python(code), dict(os.environ), str(tmp_path), timeout=30) as line:
        pid = int(line)
    assert not alive(pid)
    # SIGKILLed once the grace the test set ran out, not the default's 10 s later.
    assert 0.5 <= time.monotonic() - began < default


def test_a_sidecar_that_says_nothing_yields_none_and_is_stopped(tmp_path):
    code = "import time; time.sleep(60)"
    with sidecar.running(python(code), dict(os.environ), str(tmp_path), timeout=0.5) as line:
        assert line is None


def test_no_sidecar_is_no_process():
    with sidecar.running(None, {}, None, timeout=1) as line:
        assert line is None
