"""Every error plugpull raises on purpose, in one place (as hypothesis/errors.py is for Hypothesis).

A caller catches these by one address: ``from plugpull.errors import UsageError``. The modules that
raise them import them from here; their old homes (``plugpull.arguments.UsageError``,
``plugpull.store.StoreError``, ``plugpull.powercut.mount.FuseUnavailable``, ...) still name the same
classes. Each error says in its docstring what the user sees when it reaches the top: one line and
which exit code (docs/cli.md).

The agent side's errors (:class:`PlugpullError`, :class:`NotInRun`, :class:`ChannelClosed`,
:class:`RequestRejected`) are
defined in :mod:`plugpull.client`, which runs inside every agent process and imports nothing of
plugpull (docs/architecture.md, "The agent side stays light"); they are re-exported here, as is
:class:`PostgresUnavailable` of :mod:`plugpull.postgres`, which the -postgresql targets import in the agent
process, and :class:`TemporalUnavailable` and :class:`NoServer` of :mod:`plugpull.temporal`, the Temporal targets'
dev server (standard library and the client only, like the client itself). Every class here is a
:class:`PlugpullError`: ``except PlugpullError`` catches anything plugpull raises on purpose, but for
:class:`ToolFault` and :class:`ToolTimeout`: the tool-error scenario's fault, which the agent's tool must see as a
failed outside call (a ``ConnectionError``, a ``TimeoutError``), not as plugpull's own error. This module imports
nothing but the standard library, the client and those modules, so anything may import it.
"""

from __future__ import annotations

from plugpull.client import ChannelClosed, NotInRun, PlugpullError, RequestRejected, ToolFault, ToolTimeout
from plugpull.postgres import PostgresUnavailable
from plugpull.temporal import NoServer, TemporalUnavailable

__all__ = [
    "BrowserError",
    "BundleError",
    "ChannelClosed",
    "ClaimError",
    "FindingError",
    "FuseUnavailable",
    "IndexProblem",
    "LockError",
    "MergeError",
    "NoServer",
    "NotInRun",
    "ParseError",
    "PlugpullError",
    "PostgresUnavailable",
    "PowerCutError",
    "RangeError",
    "RecallError",
    "RequestRejected",
    "ScenarioError",
    "StoreError",
    "SweepError",
    "TemporalUnavailable",
    "ToolFault",
    "ToolTimeout",
    "UsageError",
]

# --- the command line ---------------------------------------------------------------------------


class UsageError(PlugpullError):
    """Bad input: printed as one line, exit 2."""


class ParseError(UsageError):
    """An argument error, named after the (sub)command whose parser found it: ``plugpull report check: ...``."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.prog = prog


# --- scenarios and the fake services they run -------------------------------------------------


class ScenarioError(PlugpullError, ValueError):
    """A scenario the registry does not know, or one that breaks the contract (plugpull.scenarios.contract).

    Raised when a scenario is registered, not when a user first runs it, the way pluggy checks a plugin
    against its hook specifications when the plugin is registered.
    """


class StoreError(PlugpullError, ValueError):
    """A call the store refuses (bad method or arguments); answered as an error, never dropped."""


class PowerCutError(PlugpullError):
    """The power-cut layer failed: what it would report cannot be trusted (the run is ERROR)."""


class FuseUnavailable(PowerCutError):
    """FUSE cannot mount here; ``reason`` says why (no /dev/fuse, no permission, no libfuse3...)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"FUSE cannot mount here: {reason}")
        self.reason = reason


# --- findings (plugpull report) -----------------------------------------------------------------


class ClaimError(PlugpullError, ValueError):
    """A claim in finding.toml that cannot be used: bad input, reported as one line."""


class RangeError(PlugpullError, ValueError):
    """A version range that is not a PEP 440 specifier set: bad input, one line."""


class FindingError(PlugpullError, ValueError):
    """A finding or pin set that cannot be used: bad input, reported as one line."""


class BundleError(FindingError):
    """Bad input for a bundle (no bug claim, no record, no witness, a bad --out): one line, exit 2."""


class SweepError(FindingError):
    """Bad input for a sweep (a range that parses to nothing, an index that cannot be asked): one line."""


class MergeError(PlugpullError, ValueError):
    """Incoming records that cannot be merged: bad input, one line."""


class IndexProblem(PlugpullError, ValueError):
    """The index cannot answer what is asked (unreachable, no such project, not the JSON API): one line."""


class LockError(PlugpullError):
    """The witness's requirements could not be compiled against the pin set's lock: one line, exit 1."""


class BrowserError(PlugpullError):
    """Chromium is missing, did not start, or printed no measurement: one line saying which."""


class RecallError(UsageError):
    """Bad input for ``plugpull report recall``, or an environment that cannot be built as asked (a hunk that does
    not apply): one line, exit 2."""
