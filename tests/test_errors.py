"""Every error plugpull raises on purpose has one address, plugpull.errors; the old names are the same classes."""

import ast
from functools import cache
from pathlib import Path

import plugpull
from plugpull import errors

SRC = Path(plugpull.__file__).parent


@cache  # two tests read it: one parse of every plugpull module (~0.5 CPU-s)
def defined_errors() -> dict[str, list[str]]:
    """Class name -> the modules that define it, for every class whose base is an exception (read it, do not change it)."""
    found: dict[str, list[str]] = {}
    known = {"Exception", "ValueError", "RuntimeError", "TypeError", "ConnectionError", "OSError"}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & known or any(b.endswith(("Error", "Unavailable", "Problem", "NotInRun")) for b in bases):
                    found.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    return found


def test_every_error_class_is_defined_in_errors_or_in_the_agent_side_client():
    # postgres.py and temporal.py run in agent processes too (the -postgresql and Temporal targets) and import only
    # the client of plugpull.
    agent_side = {"errors.py", "client.py", "postgres.py", "temporal.py"}
    elsewhere = {name: modules for name, modules in defined_errors().items() if set(modules) - agent_side}
    assert elsewhere == {}


def test_every_error_class_is_named_by_errors():
    assert set(defined_errors()) <= set(errors.__all__)
    assert all(isinstance(getattr(errors, name), type) for name in errors.__all__)


def test_the_old_names_are_the_same_classes():
    from plugpull.arguments import UsageError
    from plugpull.client import ChannelClosed, NotInRun
    from plugpull.powercut.mount import FuseUnavailable, PowerCutError
    from plugpull.store import StoreError

    assert (UsageError, StoreError, PowerCutError, FuseUnavailable) == (
        errors.UsageError,
        errors.StoreError,
        errors.PowerCutError,
        errors.FuseUnavailable,
    )
    assert (plugpull.NotInRun, plugpull.ChannelClosed, NotInRun, ChannelClosed) == (
        errors.NotInRun,
        errors.ChannelClosed,
        errors.NotInRun,
        errors.ChannelClosed,
    )


def test_bad_input_errors_are_usage_errors_and_bundle_and_sweep_errors_are_finding_errors():
    assert issubclass(errors.ParseError, errors.UsageError)
    assert issubclass(errors.BundleError, errors.FindingError) and issubclass(errors.SweepError, errors.FindingError)
    assert errors.FuseUnavailable("no /dev/fuse").reason == "no /dev/fuse"


def test_every_error_has_one_root_and_keeps_the_builtin_base_its_callers_catch():
    # One `except PlugpullError` catches anything plugpull raises on purpose (as HypothesisException does for
    # Hypothesis); the builtin bases stay, so `except ValueError` around a claim still catches a ClaimError.
    # But for the tool-error fault, which a tool must meet as a failed outside call (a ConnectionError), never as
    # plugpull's own error that an agent may catch apart.
    faults = {"ToolFault", "ToolTimeout"}
    assert all(issubclass(getattr(errors, name), errors.PlugpullError) for name in set(errors.__all__) - faults)
    assert not any(issubclass(getattr(errors, name), errors.PlugpullError) for name in faults)
    assert issubclass(errors.ToolTimeout, TimeoutError) and issubclass(errors.ToolFault, ConnectionError)
    assert not issubclass(errors.ToolTimeout, ConnectionError)  # a socket timeout is no connection error
    assert issubclass(errors.ClaimError, ValueError) and issubclass(errors.StoreError, ValueError)
    assert issubclass(errors.ChannelClosed, ConnectionError) and issubclass(errors.PowerCutError, RuntimeError)
    from plugpull.report.harness.recall import RecallError
    from plugpull.temporal import TemporalUnavailable

    assert (RecallError, TemporalUnavailable) == (errors.RecallError, errors.TemporalUnavailable)
