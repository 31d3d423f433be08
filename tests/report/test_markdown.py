"""The one Markdown escape (report/harness/markdown.py), used by every generated table."""

from plugpull.report.harness import markdown


def test_a_value_with_a_pipe_or_a_newline_stays_one_table_cell():
    assert markdown.cell("FAIL | refund=2\nresumed") == "FAIL \\| refund=2 resumed"
    assert markdown.cell(3) == "3"


def test_no_report_module_escapes_a_table_cell_by_hand():
    from pathlib import Path

    import plugpull.report

    own = [
        p.relative_to(Path(plugpull.report.__file__).parent).as_posix()
        for p in Path(plugpull.report.__file__).parent.rglob("*.py")
        if '.replace("|", "\\\\|")' in p.read_text() and p.name != "markdown.py"
    ]
    assert own == []
