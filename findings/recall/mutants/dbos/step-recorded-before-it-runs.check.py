"""A DBOS step killed (SIGKILL) while it runs is run again on recovery: it was not recorded as done.

Exit 0 when the recovered workflow ran step two again and finished with its output, 1 when recovery took the
killed step as done.
"""

import sys

from _recover import crash_and_recover

status, runs = crash_and_recover()
print("status:", status, "step runs:", runs)
sys.exit(0 if status == "SUCCESS" and runs.count("second") == 2 else 1)
