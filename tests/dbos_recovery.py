"""How long a test watches a DBOS workflow of another application version stay PENDING.

DBOS.launch() lists the PENDING workflows of its own executor and application_version
(SystemDatabase.get_pending_workflows filters on application_version) and its recovery thread re-enqueues only
those on DBOS's internal queue, whose next poll runs them (dbos/_recovery.py): a workflow of another version is
recovered as fast as one of the same version, or never. So 5 times the slowest same-version recovery measured in
the same run (floor 3 s) is enough to see it not happen; the witness's `--wait` and the target's
`--recovery-wait` default to 30 s, what the findings' records ran with.
"""

from __future__ import annotations

FACTOR, FLOOR = 5, 3.0


def pending_watch(recoveries: list[float]) -> float:
    """Seconds to watch another version's workflow, from the same-version recoveries (seconds after launch)."""
    return max(FLOOR, FACTOR * max(recoveries))
