"""Agents that misbehave, for the ERROR paths.

    python misbehaving.py HOW start|resume

HOW:
- never-calls: the tool runs and returns without calling record_effect.
- exits-early: start exits 0 before reaching any tool.
- new-session-worker: the tool hands the call to a worker started with
  start_new_session=True, so the caller is outside the killed process group.
- forked-child: the tool's call is made by a child in the same process group (fine).
- crashes: start raises before calling the provider.
- twice: the tool calls record_effect twice without a key in one run.
- floods: prints 40 MB to stdout and undecodable bytes to stderr, then calls (no key);
  resume does the same and exits 3.
- hangs-on-resume: start calls the provider; resume never exits.
- pause-no-gate: start pauses (no effect); approve refunds once per workdir without calling
  plugpull.client.gate(), so racing approvers are never lined up.
"""

import subprocess
import sys

from plugpull import record_effect, record_result

# A marker may stand between HOW and the phase, so tests can find their own processes.
how, phase = sys.argv[1], sys.argv[-1]
CALL = "from plugpull import record_effect, record_result; record_effect('charge')"

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
elif how == "twice":
    record_effect("charge")
    record_effect("charge")
elif how == "floods":
    sys.stdout.buffer.write(b"x" * (40 << 20))
    sys.stdout.flush()
    sys.stderr.buffer.write(b"bad bytes: \xff\xfe\xc3\x28 end\n")
    sys.stderr.flush()
    record_effect("charge")
    if phase == "resume":
        sys.exit(3)
elif how == "hangs-on-resume":
    if phase == "resume":
        import time

        print("resume is stuck", file=sys.stderr, flush=True)
        time.sleep(600)
    record_effect("charge")
elif how == "pause-no-gate":
    import os

    if phase == "approve":
        try:
            os.mkdir(os.path.join(os.environ["PLUGPULL_WORKDIR"], "claimed"))
        except FileExistsError:
            sys.exit(3)
        record_effect("charge")
else:
    raise SystemExit(f"unknown HOW {how}")
record_result({"finished": how})
