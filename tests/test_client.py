import pytest

from plugpull import NotInRun, record_effect
from plugpull.channel import Channel


def test_record_effect_outside_a_run_says_so(monkeypatch):
    monkeypatch.delenv("PLUGPULL_SOCKET", raising=False)
    with pytest.raises(NotInRun, match="outside a plugpull run"):
        record_effect("charge")


def test_record_effect_reaches_the_provider_with_the_callers_pid(monkeypatch):
    import os

    with Channel() as channel:
        monkeypatch.setenv("PLUGPULL_SOCKET", channel.path)
        reply = record_effect("charge", key="order-1")
        assert reply == {"name": "charge", "key": "order-1", "new": True, "count": 1}
        assert channel.provider.calls[0].pid == os.getpid()


def test_importing_plugpull_pulls_in_nothing_heavy():
    import subprocess
    import sys

    code = "import sys, plugpull; print(sorted(m for m in ('pandas','papermill','langgraph','agents','agent_framework','plugpull.cli','plugpull.channel') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_bad_name_is_refused_before_anything_is_sent(monkeypatch):
    monkeypatch.setenv("PLUGPULL_SOCKET", "/nonexistent")
    with pytest.raises(ValueError):
        record_effect("")
