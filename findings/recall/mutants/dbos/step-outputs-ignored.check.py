"""A recovered DBOS workflow uses its completed step's saved output instead of running the step again.

Exit 0 when the workflow recovered to SUCCESS with step one run once, 1 when step one ran again.
"""

import sys

from _recover import crash_and_recover

status, runs = crash_and_recover()
print("status:", status, "step runs:", runs)
sys.exit(0 if status == "SUCCESS" and runs.count("first") == 1 else 1)
