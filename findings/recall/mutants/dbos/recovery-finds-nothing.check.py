"""DBOS.launch() after a crash recovers the PENDING workflow and runs it to the end.

Exit 0 when the workflow is SUCCESS after the relaunch, 1 when it stays PENDING.
"""

import sys

from _recover import crash_and_recover

status, runs = crash_and_recover()
print("status:", status, "step runs:", runs)
sys.exit(0 if status == "SUCCESS" else 1)
