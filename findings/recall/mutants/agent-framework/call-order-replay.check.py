"""A restored run whose orders arrive in the other order still gets each order's own saved payment.

Exit 0 when order A's payment is A's (and B's is B's), 1 when they are swapped.
"""

import sys

from _orders import two_runs

got, opened = two_runs(("B", "A"))
print("after the restore:", {k: v.get("order_id") for k, v in got.items()}, "open_payment ran", opened)
sys.exit(0 if got and all(v["order_id"] == k for k, v in got.items()) else 1)
