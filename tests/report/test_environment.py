"""The source stamp that lets a sweep skip reinstalling plugpull into a cached pin-set environment."""

from plugpull.report.harness.environment import source_digest


def test_the_source_digest_changes_with_any_source_file_and_ignores_bytecode(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "src" / "demo" / "__pycache__").mkdir(parents=True)
    module = tmp_path / "src" / "demo" / "core.py"
    module.write_text("A = 1\n")
    before = source_digest(tmp_path)
    (tmp_path / "src" / "demo" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0")
    assert source_digest(tmp_path) == before
    module.write_text("A = 2\n")
    assert source_digest(tmp_path) != before
