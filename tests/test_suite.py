"""Running many (target, point) lines: order, concurrency, points per scenario."""

from plugpull import suite
from plugpull.scenarios import Runtime, Settings


def test_concurrent_jobs_give_the_same_verdicts_in_the_same_order_as_serial(fake_framework, agent_forks):
    targets = [fake_framework(body) for body in ("no-key", "stable-key", "random-key", "ledger")]
    runs = suite.plan(targets)
    # Each run its own runtime (its own clean runs), its phases forked from the module's server (tests/forked_agents.py).
    serial = suite.run_plan(runs, Settings(timeout=30), Runtime(forks=agent_forks), jobs=1)
    concurrent = suite.run_plan(runs, Settings(timeout=30), Runtime(forks=agent_forks), jobs=2)
    assert as_lines(concurrent) == as_lines(serial)
    assert [r.verdict.value for r in serial] == ["PASS", "FAIL", "PASS", "PASS", "PASS", "FAIL", "FAIL", "PASS"]


def test_a_plan_repeats_each_point_and_keeps_only_the_scenarios_points(fake_framework):
    runs = suite.plan([fake_framework("no-key")], ["after-effect", "write-lost"], repeat=2)
    assert [point for _, point in runs] == ["after-effect", "after-effect"]


def as_lines(results):
    return [(r.target, r.point, r.verdict.value, r.message) for r in results]


def test_a_point_that_no_selected_scenario_has_is_named_with_each_scenarios_points(fake_framework):
    why = suite.unselected_points([fake_framework("no-key")], ["after-effect", "write-lost"])
    assert (
        why
        == "--point write-lost is not a point of the selected scenario: kill-mid-tool has before-effect, after-effect"
    )


def test_points_that_some_selected_scenario_has_select_something(fake_framework):
    assert suite.unselected_points([fake_framework("no-key")], ["after-effect"]) is None
    assert suite.unselected_points([fake_framework("no-key")], []) is None


def test_a_run_after_an_interrupted_one_in_the_same_process_starts_its_targets(fake_framework, monkeypatch):
    import threading

    from plugpull import process

    monkeypatch.setattr(process, "_stopping", threading.Event())
    process.stop_all()  # what Ctrl-C does to the run it interrupts
    runs = suite.plan([fake_framework("stable-key")], ["after-effect"])
    [result] = suite.run_plan(runs, Settings(timeout=30))  # cold: process.spawn is what a stopped run refuses
    assert "plugpull is stopping" not in str(result.evidence)
    assert result.verdict.value == "PASS"
