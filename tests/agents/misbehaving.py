"""Agents that misbehave, for the ERROR paths.

    python misbehaving.py HOW start|resume

HOW:
- never-calls: the tool runs and returns without calling record_effect.
- exits-early: start exits 0 before reaching any tool.
- new-session-worker: the tool hands the call to a worker started with
  start_new_session=True, so the caller is outside the killed process group.
- forked-child: the tool's call is made by a child in the same process group (fine).
- crashes: start raises before calling the provider.
"""

import subprocess
import sys

from plugpull import record_effect

how, phase = sys.argv[1], sys.argv[2]
CALL = "from plugpull import record_effect; record_effect('charge')"

if how == "never-calls":
    print("tool ran, reported nothing")
elif how == "exits-early":
    sys.exit(0)
elif how == "crashes":
    raise RuntimeError("the agent crashed before its tool")
elif how == "new-session-worker":
    subprocess.run([sys.executable, "-c", CALL], start_new_session=True, check=True)
elif how == "forked-child":
    subprocess.run([sys.executable, "-c", CALL], check=True)
else:
    raise SystemExit(f"unknown HOW {how}")
