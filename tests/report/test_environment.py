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


def test_bytecode_is_compiled_ahead_for_the_framework_but_not_for_kernel_only_packages_or_project_templates():
    import re

    from plugpull.report.harness.environment import NOT_COMPILED

    site = "/venv/lib/python3.11/site-packages"
    skipped = re.compile(NOT_COMPILED)
    assert skipped.search(f"{site}/pandas/core/frame.py")
    assert skipped.search(f"{site}/crewai_cli/templates/tool/src/{{{{folder_name}}}}/tool.py")
    assert not skipped.search(f"{site}/crewai/flow/runtime/__init__.py")
    assert not skipped.search(f"{site}/fastaiagent/agent/agent.py")
