import pytest

from plugpull import NotInRun, record_effect
from plugpull.channel import Channel


def test_record_effect_outside_a_run_answers_as_a_fresh_provider_would(monkeypatch):
    monkeypatch.delenv("PLUGPULL_SOCKET", raising=False)
    monkeypatch.delenv("PLUGPULL_STRICT", raising=False)
    name = "charge-outside-a-run"
    assert record_effect(name, key="order-1") == {"name": name, "key": "order-1", "new": True, "count": 1}
    assert record_effect(name, key="order-1") == {"name": name, "key": "order-1", "new": False, "count": 1}
    assert record_effect(name) == {"name": name, "key": None, "new": True, "count": 2}


def test_every_agent_side_call_outside_a_run_returns_without_a_socket(monkeypatch):
    from plugpull import boundary, record_result
    from plugpull.client import announce, call_store, gate, mark_boundary

    monkeypatch.delenv("PLUGPULL_SOCKET", raising=False)
    monkeypatch.delenv("PLUGPULL_STRICT", raising=False)
    assert record_result({"answer": "done"}) is None
    assert announce(framework="langgraph", version="1.2.11") is None
    assert gate() is None
    assert mark_boundary("model-call", "before") is None
    with boundary("model-call"):
        pass
    session = "outside-a-run"
    assert call_store("add_items", session, items=[{"role": "user", "content": "hi"}, "two"]) is None
    assert call_store("get_items", session, limit=1) == ["two"]
    assert call_store("pop_item", session) == "two"
    assert call_store("get_items", session) == [{"role": "user", "content": "hi"}]
    assert call_store("clear_session", session) is None
    assert call_store("get_items", session) == []


@pytest.mark.parametrize("value", ["1", "yes"])
def test_strict_mode_makes_every_call_outside_a_run_raise_not_in_run(monkeypatch, value):
    from plugpull import boundary, record_result
    from plugpull.client import announce, call_store, gate

    monkeypatch.delenv("PLUGPULL_SOCKET", raising=False)
    monkeypatch.setenv("PLUGPULL_STRICT", value)
    calls = [
        lambda: record_effect("charge"),
        lambda: record_result("done"),
        lambda: announce(framework="x"),
        gate,
        lambda: call_store("get_items", "s"),
        lambda: boundary("model-call").__enter__(),
    ]
    for call in calls:
        with pytest.raises(NotInRun, match="outside a plugpull run .*PLUGPULL_STRICT"):
            call()


def test_strict_mode_set_to_0_is_off(monkeypatch):
    monkeypatch.delenv("PLUGPULL_SOCKET", raising=False)
    monkeypatch.setenv("PLUGPULL_STRICT", "0")
    assert record_effect("charge-strict-off")["new"] is True


def test_strict_mode_changes_nothing_inside_a_run(monkeypatch):
    with Channel() as channel:
        monkeypatch.setenv("PLUGPULL_SOCKET", channel.path)
        monkeypatch.setenv("PLUGPULL_STRICT", "1")
        assert record_effect("charge", key="k")["count"] == 1
        assert channel.provider.calls[0].name == "charge"


def test_an_effect_call_says_whether_the_main_thread_made_it(monkeypatch):
    import threading

    with Channel() as channel:
        monkeypatch.setenv("PLUGPULL_SOCKET", channel.path)
        record_effect("charge", key="main")
        worker = threading.Thread(target=record_effect, args=("charge",), kwargs={"key": "worker"})
        worker.start()
        worker.join()
        assert [c.to_dict()["main_thread"] for c in channel.provider.calls] == [True, False]


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


def test_record_result_is_remembered_per_phase_with_the_callers_pid_and_every_call_is_kept(monkeypatch):
    import os

    from plugpull import record_result

    with Channel() as channel:
        monkeypatch.setenv("PLUGPULL_SOCKET", channel.path)
        channel.phase = "clean"
        record_result({"answer": "done", "cents": 1999})
        channel.phase = "resume"
        record_result(["a", None])
        record_result("again")
        assert channel.results_of("clean") == [{"answer": "done", "cents": 1999}]
        assert channel.results_of("resume") == [["a", None], "again"]
        assert {r["pid"] for r in channel.results} == {os.getpid()}
        assert channel.results_of(group=os.getpgid(0)) == [{"answer": "done", "cents": 1999}, ["a", None], "again"]


def test_record_result_outside_a_run_does_nothing_but_refuses_what_is_not_json(monkeypatch):
    from plugpull import record_result

    monkeypatch.delenv("PLUGPULL_SOCKET", raising=False)
    record_result({"answer": "done"})
    with pytest.raises(ValueError, match="JSON value"):
        record_result({"when": object()})
    with pytest.raises(ValueError, match="JSON value"):
        record_result(float("nan"))


def test_a_held_call_carries_its_callers_group_before_the_held_event_fires():
    import os
    import threading

    from plugpull.client import ChannelClosed, _request

    with Channel() as channel:
        channel.provider.arm("after-effect")
        seen = {}

        def watch():
            channel.provider.held_event.wait(10)
            seen["group"] = channel.provider.held.group

        watcher = threading.Thread(target=watch)
        watcher.start()
        os.environ["PLUGPULL_SOCKET"] = channel.path

        def call():
            with pytest.raises(ChannelClosed):  # held, then closed with the channel: no answer
                _request({"op": "effect", "name": "charge", "key": None})

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        watcher.join(10)
        channel.close()
        caller.join(10)
        del os.environ["PLUGPULL_SOCKET"]
        assert seen["group"] == os.getpgid(0)


def test_a_boundary_outside_a_run_does_nothing_and_a_bad_name_is_refused(monkeypatch):
    from plugpull import boundary

    monkeypatch.delenv("PLUGPULL_SOCKET", raising=False)
    with boundary("model-call"):
        pass
    with pytest.raises(ValueError):
        boundary("")


def test_boundary_marks_are_traced_in_order_with_effects_and_never_counted_as_effects(monkeypatch):
    from plugpull import boundary, record_effect
    from plugpull.channel import Channel

    with Channel() as channel:
        monkeypatch.setenv("PLUGPULL_SOCKET", channel.path)
        with boundary("model-call"):  # every-boundary not asked for: no mark is sent
            pass
        assert channel.provider.trace() == []
        monkeypatch.setenv("PLUGPULL_BOUNDARIES", "1")
        with boundary("model-call"):
            pass
        record_effect("refund")
        trace = [(c.kind, c.name, c.edge) for c in channel.provider.trace()]
        assert trace == [("mark", "model-call", "before"), ("mark", "model-call", "after"), ("effect", "refund", None)]
        assert channel.provider.counts() == {"refund": 1}
        assert [m.main_thread for m in channel.provider.marks] == [True, True]
        import threading

        worker = threading.Thread(target=lambda: boundary("checkpoint-save").__enter__())
        worker.start()
        worker.join()
        assert channel.provider.marks[-1].main_thread is False  # a background writer's step


def test_an_instrumented_script_runs_without_plugpull_and_fails_loudly_under_strict_mode():
    import os
    import subprocess
    import sys

    code = "from plugpull import record_effect; print(record_effect('refund', key='A-1001')['new'])"
    env = {k: v for k, v in os.environ.items() if k not in ("PLUGPULL_SOCKET", "PLUGPULL_STRICT")}
    shipped = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert (shipped.returncode, shipped.stdout) == (0, "True\n")
    strict = subprocess.run(
        [sys.executable, "-c", code], env={**env, "PLUGPULL_STRICT": "1"}, capture_output=True, text=True
    )
    assert strict.returncode == 1
    assert "NotInRun: plugpull: record_effect called outside a plugpull run" in strict.stderr


def test_the_requests_of_one_thread_share_one_connection_and_a_refusal_ends_it(monkeypatch):
    from plugpull.client import PlugpullError, _request, announce

    with Channel() as channel:
        monkeypatch.setenv("PLUGPULL_SOCKET", channel.path)
        record_effect("charge", key="a")
        record_effect("charge", key="b")
        announce(framework="x")
        assert len(channel._threads) == 1  # one accepted connection served all three
        with pytest.raises(PlugpullError, match="unknown op"):
            _request({"op": "nonsense"})
        announce(framework="y")  # on a new connection: the harness closed the refused one
        assert len(channel._threads) == 2
        assert [a["framework"] for a in channel.announced] == ["x", "y"]


# The agent opens its connection (announce), forks a child that lives on, then makes the held call.
FORKS_THEN_HELD = """
import os, time
from plugpull.client import announce, record_effect
announce(framework="forker")
if os.fork() == 0:
    time.sleep(600)
    os._exit(0)
record_effect("charge")
"""


def test_a_child_the_agent_forks_does_not_keep_a_held_calls_connection_open():
    import os
    import signal
    import subprocess
    import sys
    import time

    with Channel() as channel:
        channel.provider.arm("after-effect")
        env = {**os.environ, "PLUGPULL_SOCKET": channel.path}
        agent = subprocess.Popen([sys.executable, "-c", FORKS_THEN_HELD], env=env, start_new_session=True)
        try:
            assert channel.provider.held_event.wait(60)
            call = channel.provider.held
            assert call.closed_at is None
            os.kill(agent.pid, signal.SIGKILL)  # the caller only: its forked child lives on
            agent.wait()
            deadline = time.monotonic() + 30  # generous: the EOF is immediate unless the child holds the socket
            while call.closed_at is None and time.monotonic() < deadline:
                time.sleep(0.01)
            assert call.closed_at is not None
        finally:
            os.killpg(agent.pid, signal.SIGKILL)


def test_import_present_imports_what_is_installed_and_skips_what_is_not():
    import sys

    from plugpull.client import import_present

    sys.modules.pop("colorsys", None)
    import_present("plugpull_no_such_module", "colorsys", "plugpull_no_such_package.child")
    assert "colorsys" in sys.modules and "plugpull_no_such_module" not in sys.modules


def test_the_approval_exit_codes_an_agent_uses_are_the_ones_plugpull_reads():
    from plugpull import checks, client

    assert (client.REFUSED_EXIT, client.PAUSED_AGAIN_EXIT) == (checks.REFUSED_EXIT, checks.PAUSED_AGAIN_EXIT) == (3, 5)
