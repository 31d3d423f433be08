"""The scenarios plugpull knows: the built-in ones, in the order ``--scenario`` lists them.

Each is one module under plugpull/scenarios/ and its checks under plugpull/checks/, checked against the
contract (plugpull.scenarios.contract) as it is registered here. A test or a user's code adds its own
with ``REGISTRY.register(scenario)`` (or ``with REGISTRY.registered(scenario):``); the suite, the command
line and the renderings then know it too.
"""

from __future__ import annotations

from plugpull.scenarios import (
    cancel_mid_stream,
    every_boundary,
    kill_mid_tool,
    lost_session_write,
    power_loss,
    resume_after_approval,
    resume_after_upgrade,
    tool_error,
)
from plugpull.scenarios.contract import Registry

#: The scenario ``--agent COMMAND`` runs without ``--scenario``.
DEFAULT_SCENARIO = kill_mid_tool.NAME

REGISTRY = Registry(
    [
        kill_mid_tool.SCENARIO,
        lost_session_write.SCENARIO,
        resume_after_approval.SCENARIO,
        every_boundary.SCENARIO,
        resume_after_upgrade.SCENARIO,
        power_loss.SCENARIO,
        cancel_mid_stream.SCENARIO,
        tool_error.SCENARIO,
    ]
)
