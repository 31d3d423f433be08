"""The notebooks' table: one row per line, notes in a column of their own, apart from the measured counts."""

import pytest

from plugpull.report.kernel.notebook import table
from plugpull.results import Result, Verdict

NOTE = {"text": "consistent with #8292", "url": "https://example.org/8292", "condition": "A 2 times, B 0 times"}


def run(verdict: Verdict, point: str, notes: list[dict] | None = None) -> Result:
    return Result(verdict, "kill-mid-tool", point, "t", "measured", notes=notes or [])


def test_the_table_shows_matched_notes_apart_from_the_counts():
    rows = table([run(Verdict.FAIL, "after-effect", [NOTE]), run(Verdict.PASS, "before-effect")])
    assert list(rows["point"]) == ["after-effect", "before-effect"]
    assert list(rows["notes"]) == ["consistent with #8292 (https://example.org/8292)", ""]


def test_with_repeats_a_note_says_how_many_runs_it_attached_to():
    rows = table([run(Verdict.FAIL, "after-effect", [NOTE]), run(Verdict.PASS, "after-effect")])
    assert list(rows["runs"]) == [2]
    assert list(rows["notes"]) == ["consistent with #8292 (https://example.org/8292) ×1"]


def test_a_rate_has_its_interval_from_five_finished_runs_and_below_that_its_run_count():
    # One run's 95 % interval is [0.21, 1.00]: printed beside "1.00" it read as a measurement.
    one = table([run(Verdict.FAIL, "after-effect")])
    assert list(one["FAIL rate [95% CI]"]) == ["1.00 (1 run)"]
    five = table([run(v, "after-effect") for v in [Verdict.FAIL, Verdict.FAIL] + [Verdict.PASS] * 3])
    assert list(five["FAIL rate [95% CI]"]) == ["0.40 [0.12, 0.77]"]
    errors = table([run(Verdict.ERROR, "after-effect")])
    assert list(errors["FAIL rate [95% CI]"]) == ["—"]


def boundary_line(verdict: Verdict, side: str, index: int, label: str, message: str = "measured") -> Result:
    evidence = {"boundary": {"index": index, "of": 2, "label": label}, "counts": {"refund": 1}}
    return Result(verdict, "every-boundary", f"{side} {label}", "t", message, evidence=evidence)


def test_the_boundary_table_gives_each_line_its_place_and_the_map_draws_one_row_per_side():
    from plugpull.report.kernel.notebook import boundary_map, boundary_table

    results = [
        boundary_line(Verdict.PASS, "before", 1, "model-call 1"),
        boundary_line(Verdict.FAIL, "after", 2, "effect refund 1", "effect duplicated: the provider saw 2 refund"),
    ]
    rows = boundary_table(results)
    assert list(rows["place"]) == ["1/2", "2/2"]
    assert list(rows["verdict"]) == ["PASS", "FAIL"]
    fig = boundary_map(results)
    [ax] = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["before", "after"]
    assert "dup" in [t.get_text() for t in ax.texts]


def test_a_failed_boundary_is_named_by_what_broke():
    from plugpull.report.kernel.notebook import failure_kind

    def kind(message):
        return failure_kind(boundary_line(Verdict.FAIL, "after", 1, "x 1", message))

    assert kind("resume crashed (exit code 1); effect lost: the provider saw 0 refund") == "stuck"
    assert kind("effect duplicated: the provider saw 2 refund (expected 1)") == "dup"
    assert kind("effect lost: the provider saw 0 refund (expected 1)") == "lost"
    assert kind('result differs from the clean run: $.answer: clean "a", resumed null') == "result"


def plotted_lines(n: int) -> list[Result]:
    """``n`` one-run lines for the rate plot, PASS and FAIL in turn."""
    return [
        Result(Verdict.FAIL if i % 2 else Verdict.PASS, "kill-mid-tool", f"after-effect variant-{i}", "t", "m")
        for i in range(n)
    ]


def test_a_plot_goes_into_a_record_as_a_palette_png_of_the_same_size_and_a_fraction_of_the_bytes():
    import io

    import matplotlib

    matplotlib.use("Agg")
    from PIL import Image

    from plugpull.report.kernel.notebook import PLOT_COLOURS, palette_png, plot

    fig = plot(plotted_lines(40))  # outside a kernel: nothing displayed, the figure returned
    full = io.BytesIO()
    fig.savefig(full, format="png", bbox_inches="tight")  # what the inline backend would embed
    small = palette_png(fig)
    image, original = Image.open(io.BytesIO(small)), Image.open(full)
    assert image.mode == "P" and len(image.getcolors()) <= PLOT_COLOURS and image.size == original.size
    assert len(small) < len(full.getvalue()) / 2


def test_the_rate_plot_is_one_row_per_line_and_as_wide_with_thirteen_lines_as_with_one():
    # Drawn wider than a record's page (1100 px), the plot was shrunk with its 8 pt text: it now
    # grows downwards, one row per line, and its saved bounds stay inside the page at 100 dpi.
    import io

    import matplotlib

    matplotlib.use("Agg")
    from plugpull.report.kernel.notebook import plot

    widths = []
    for n in (1, 13):
        fig = plot(plotted_lines(n))
        assert len(fig.axes[0].get_yticklabels()) == n
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=100, bbox_inches="tight")
        widths.append(int.from_bytes(out.getvalue()[16:20], "big"))  # the PNG's IHDR width
    assert widths[0] == widths[1] and widths[1] <= 1100


def test_a_power_loss_line_carries_its_cut_as_an_option_so_one_record_holds_every_cut():
    from plugpull.errors import UsageError
    from plugpull.report.kernel.notebook import finding_lines, finding_scenario

    parameters = {"cuts": ["unsynced", "lazyfs"], "points": ["after-effect"]}
    shape = finding_scenario(parameters)
    assert shape.name == "power-loss"
    chosen, said = finding_lines(shape, ["agent-framework"], {"agent-framework": {"variant": ["control"]}}, parameters)
    assert [(t.scenario, t.options) for t in chosen] == [
        ("power-loss", {"variant": "control", "power_cut": "unsynced"}),
        ("power-loss", {"variant": "control", "power_cut": "lazyfs"}),
    ]
    assert said[0].startswith("agent-framework: agent-framework-core ") and said[0].endswith(", 1 variant(s)")
    assert said[1] == "each of the 1 variant(s) once per power_cut: unsynced, lazyfs"
    with pytest.raises(UsageError, match=r"^--power-cut 'blackout': one of "):
        finding_lines(shape, ["agent-framework"], {}, {"cuts": ["blackout"]})
    with pytest.raises(ValueError, match="cuts is empty"):
        finding_lines(shape, ["agent-framework"], {}, {"cuts": []})
    with pytest.raises(ValueError, match="unknown target"):
        finding_lines(shape, ["agent-framework"], {"no-such-target": {}}, parameters)


def test_a_finding_is_one_scenarios_lines_by_the_parameter_that_scenario_declares():
    from plugpull.report.kernel.notebook import VIEWS, finding_scenario
    from plugpull.scenarios.registry import REGISTRY

    assert finding_scenario({"targets": ["langgraph"], "points": []}) is None
    assert finding_scenario({"boundaries": [], "jobs": 2}).name == "every-boundary"
    assert finding_scenario({"from_python": "/a/python"}).name == "resume-after-upgrade"
    with pytest.raises(ValueError, match="one scenario's"):
        finding_scenario({"boundaries": [], "cuts": ["unsynced"]})
    # Every view a scenario names is one the kernel has: the contract cannot check it (the kernel is above it).
    assert {v for s in REGISTRY for v in s.views} <= set(VIEWS)


def test_every_boundary_takes_its_boundaries_from_a_finding_but_not_the_notebooks_seed():
    from plugpull.report.kernel.notebook import finding_scenario

    shape = finding_scenario({"boundaries": ["model-call 2"], "seed": 0})
    assert shape.finding_aim({"boundaries": ["model-call 2"], "seed": 0}) == {"boundaries": ("model-call 2",)}
    assert shape.finding_forks


def test_the_losses_of_each_cut_are_listed_once_per_line_with_how_many_runs_lost_them():
    from plugpull.report.kernel.notebook import power_cut_losses

    def cut(verdict, losses):
        r = run(verdict, "after-effect")
        r.target = "dbos 3.4.0 key=checkpointed power_cut=unsynced"
        r.evidence = {"cut": {"losses": [{"path": p, "kind": "back", "text": t} for p, t in losses]}}
        return r

    back = ("dbos.sqlite-journal", "dbos.sqlite-journal is back after the cut")
    shown = power_cut_losses([cut(Verdict.FAIL, [back]), cut(Verdict.FAIL, [back]), cut(Verdict.PASS, [])])
    assert shown.splitlines() == [
        "dbos 3.4.0 key=checkpointed power_cut=unsynced after-effect:",
        "  2 x FAIL: dbos.sqlite-journal is back after the cut",
        "  1 x PASS: nothing: every write and every name was durable",
    ]
    unmounted = run(Verdict.ERROR, "after-effect")
    unmounted.message = "FUSE cannot mount here: no /dev/fuse"
    assert "1 x ERROR: no cut: FUSE cannot mount here: no /dev/fuse" in power_cut_losses([unmounted])


def test_result_lines_fold_each_runs_stderr_in_details_and_keep_the_text_whole():
    from plugpull.report.kernel.notebook import lines_shown

    failed = Result(
        Verdict.FAIL, "kill-mid-tool", "after-effect", "t", "effect duplicated", stderr="INFO one\nINFO two"
    )
    shown = lines_shown([failed, run(Verdict.PASS, "before-effect")])
    page = shown._repr_html_()
    assert page.count("<details>") == 1 and "the target's stderr (2 lines)" in page
    assert "<pre>INFO one\nINFO two</pre></details>" in page  # the logs, unprefixed, inside the fold
    assert page.index("effect duplicated") < page.index("<details>") < page.index("before-effect")
    assert str(shown) == repr(shown) and "    | INFO one" in str(shown)  # the plain text is text() unchanged
