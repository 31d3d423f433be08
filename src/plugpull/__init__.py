"""plugpull: break an agent run on purpose and check the framework's recovery.

Only the agent-side client (:func:`record_effect`, :func:`record_result`) is imported eagerly: it runs inside the agent on every start
and resume and must pull in nothing but the standard library. The harness API is
loaded on first use.
"""

from plugpull.client import (
    ChannelClosed,
    NotInRun,
    PlugpullError,
    ToolFault,
    ToolTimeout,
    boundary,
    record_effect,
    record_result,
)

__all__ = [
    "record_effect",
    "record_result",
    "boundary",
    "PlugpullError",
    "NotInRun",
    "ChannelClosed",
    "ToolFault",
    "ToolTimeout",
    "run_scenario",
    "Result",
    "Verdict",
    "Settings",
    "Runtime",
]


def __getattr__(name: str):
    # The harness API loads on first use, so an agent importing record_effect pays nothing for it.
    if name == "run_scenario":
        from plugpull.suite import run_scenario

        return run_scenario
    if name in ("Result", "Verdict"):
        from plugpull import results

        return getattr(results, name)
    if name in ("Settings", "Runtime"):
        from plugpull import scenarios

        return getattr(scenarios, name)
    raise AttributeError(f"module 'plugpull' has no attribute {name!r}")
