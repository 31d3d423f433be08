"""The one version rule (report/kernel/versions.py): PEP 440 through packaging, pre-releases decided once."""

import sys
from pathlib import Path

import pytest

from plugpull.report.kernel import versions


@pytest.mark.parametrize(
    "version, spec",
    [
        ("1.9.0", "<1.20"),  # release numbers, not strings
        ("1.20", ">=1.20.0"),  # 1.20 is 1.20.0
        ("1.23.0", ">=1.20, <2"),
        ("1.2.5", "~=1.2"),  # compatible release: >=1.2, ==1.*
        ("1.9", "~=1.2"),
        ("1.2.9", "~=1.2.0"),  # >=1.2.0, ==1.2.*
        ("1.20.0rc1", ">=1.19"),  # a pre-release is ordered among the releases
        ("1.20.0rc1", ">=1.20.0rc1"),  # a range that names one covers it
        ("1.20.0rc1", "==1.20.0rc1"),
        ("1.20.post1", ">=1.20"),
        ("1.20+local", "==1.20"),
        ("1.20.3", "==1.20.*"),
    ],
)
def test_a_version_in_its_pep_440_range(version, spec):
    assert versions.in_range(version, spec)


@pytest.mark.parametrize(
    "version, spec",
    [
        ("1.20.0", "<1.20"),
        ("1.20.0rc1", ">=1.20"),  # 1.20.0rc1 comes before 1.20
        ("1.20.0rc1", "<1.20"),  # <V admits no pre-release of V itself (PEP 440, exclusive ordered comparison)
        ("2.0", "~=1.2"),
        ("1.3.0", "~=1.2.0"),
        ("1.20.post1", ">1.20"),  # >V admits no post-release of V
        ("?", ">=0"),  # not a version: in no range
    ],
)
def test_a_version_outside_its_pep_440_range(version, spec):
    assert not versions.in_range(version, spec)


@pytest.mark.parametrize("spec", ["from 1.0", "~=1", ">=1.0 <2", "1.0"])
def test_a_range_that_is_not_pep_440_is_one_line(spec):
    with pytest.raises(versions.RangeError, match="is not a PEP 440 range") as raised:
        versions.specifier(spec)
    assert "\n" not in str(raised.value)


def test_releases_sort_in_pep_440_order_with_anything_else_after_them():
    shown = ["1.10.0", "?", "1.9.0", "1.10.0rc1", "1.10.0.post1", "0.22.2"]
    assert sorted(shown, key=versions.sort_key) == ["0.22.2", "1.9.0", "1.10.0rc1", "1.10.0", "1.10.0.post1", "?"]


def test_the_versions_in_another_interpreter_are_read_there():
    found = versions.installed_in(Path(sys.executable), ["packaging", "surely-not-installed-xyz"])
    assert found["packaging"] and found["surely-not-installed-xyz"] is None
    assert found["python"] == ".".join(map(str, sys.version_info[:3]))
    assert versions.installed_in(Path("/nonexistent/python"), ["packaging"]) == {}


def test_every_pin_set_lock_installs_packaging_which_the_kernel_side_imports():
    # The kernel imports report/kernel/versions.py (through claims); plugpull is installed there with --no-deps,
    # so packaging must come from the lock (ipykernel requires it).
    root = Path(__file__).resolve().parents[2]
    locks = sorted((root / "findings").glob("*/pins/*.txt"))
    assert locks
    missing = [str(p.relative_to(root)) for p in locks if "\npackaging==" not in "\n" + p.read_text()]
    assert missing == []
