"""Evidence that the agent, not its framework, broke the protocol: hints and ERRORs.

A user's first run often fails on the protocol (docs/agent-protocol.md) rather than on a crash
recovery: a command without the phase subcommand, state kept where the next run finds it.
Reading those as framework failures would blame the framework for the agent's wiring.
"""

from __future__ import annotations

import re

from plugpull.checks.judgement import Judgement, error
from plugpull.evidence import Outcome

#: argparse (and click, docopt) print a "usage:" line and exit 2 for an argument they do not accept.
USAGE = re.compile(r"^\s*usage:", re.IGNORECASE | re.MULTILINE)


def usage_refused(outcome: Outcome | None, phase: str) -> Judgement | None:
    """ERROR when ``phase`` exited 2 with a usage message: the command does not take the subcommand.

    An exit 2 without a usage message stays what it is (a crash, FAIL): only the usage text shows
    that the protocol, not the framework, failed.
    """
    if outcome is None or outcome.returncode != 2 or not USAGE.search(outcome.stderr):
        return None
    return error(
        f"{phase} exited 2 with a usage message: does COMMAND accept the `{phase}` argument? "
        "(plugpull runs COMMAND start, then COMMAND resume; docs/agent-protocol.md)",
        show=phase,
    )


STATE_OUTSIDE_WORKDIR = (
    "the clean run did call it: is the agent's state kept outside PLUGPULL_WORKDIR? "
    "(each run gets a new empty one; state found from an earlier run makes start skip the tool)"
)
