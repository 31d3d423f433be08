"""A run that crashed after two @steps finished left a checkpoint holding them: the restore does not run them again.

Exit 0 when open_payment ran twice in all (once per order), 1 when the restore ran it again.
"""

import sys

from _orders import two_runs

got, opened = two_runs(("A", "B"))
print("open_payment ran", opened, "times; after the restore:", {k: v.get("order_id") for k, v in got.items()})
sys.exit(0 if opened == 2 and got else 1)
