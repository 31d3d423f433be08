"""The overhead measurement: ratios for both journal modes, and bad input said in one line."""

import pytest

from plugpull.powercut import overhead
from plugpull.powercut.mount import unavailable_reason


def test_zero_transactions_is_refused_with_argparses_exit_code(capsys):
    with pytest.raises(SystemExit) as exited:
        overhead.main(["--transactions", "0"])
    assert exited.value.code == 2
    assert "--transactions and --reps must be at least 1" in capsys.readouterr().err


def test_a_small_run_prints_one_ratio_per_journal_mode(capsys):
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    assert overhead.main(["--transactions", "3", "--reps", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["WAL", "DELETE"]
    assert all("mounted/plain = " in line for line in lines)


def test_fuse_unavailable_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr("plugpull.powercut.mount.unavailable_reason", lambda: "no /dev/fuse (test)")
    assert overhead.main(["--transactions", "1", "--reps", "1"]) == 2
    assert capsys.readouterr().err == (
        "python -m plugpull.powercut.overhead: FUSE cannot mount here: no /dev/fuse (test)\n"
    )
