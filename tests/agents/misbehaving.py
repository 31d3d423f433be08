"""Agents that misbehave, for the ERROR paths.

    python misbehaving.py HOW start|resume   (or python -m misbehaving, tests/agents on the path)

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
- setsid-helper: the tool starts a helper in a new session (its own process group) before its
  call and tells it to stop after; a helper whose tool died goes on as a background writer.
- double-fork-helper: the same helper, made by a real double fork (fork, setsid, fork, the middle
  one exits) and never exec'd, as a daemon is.
- leaves-helper: the tool calls once; in resume, approve and recover it also leaves a helper in
  a new session running when its process exits.

Every HOW keeps the recovery protocol: a finished run leaves "finished" in $PLUGPULL_WORKDIR, and
resume on it reports the result again and does nothing else (plugpull checks that first).
"""

import os
import subprocess
import sys
import time

from plugpull import record_effect, record_result

CALL = "from plugpull import record_effect, record_result; record_effect('charge')"
# A helper that stops when its tool says "done", and goes on alone when the tool dies first.
HELPER = "import sys, time; sys.stdin.buffer.readline() == b'done\\n' or time.sleep(600)"


def background_writer(told) -> None:
    """The double-forked helper's body: stop when told, else go on (the tool crashed)."""
    if told.readline() != b"done\n":
        time.sleep(600)
    os._exit(0)


def main():
    # A marker may stand between HOW and the phase, so tests can find their own processes.
    how, phase = sys.argv[1], sys.argv[-1]
    finished = os.path.join(os.environ.get("PLUGPULL_WORKDIR", "."), "finished")
    if phase == "resume" and os.path.exists(finished):
        record_result({"finished": how})
        sys.exit(0)

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
            print("resume is stuck", file=sys.stderr, flush=True)
            time.sleep(600)
        record_effect("charge")
    elif how == "pause-no-gate":
        if phase == "approve":
            try:
                os.mkdir(os.path.join(os.environ["PLUGPULL_WORKDIR"], "claimed"))
            except FileExistsError:
                sys.exit(3)
            record_effect("charge")
    elif how == "setsid-helper":
        helper = subprocess.Popen(
            [sys.executable, "-c", HELPER, *sys.argv[2:-1]], stdin=subprocess.PIPE, start_new_session=True
        )
        record_effect("charge")
        helper.communicate(b"done\n")
    elif how == "double-fork-helper":
        told_r, told_w = os.pipe()
        gone_r, gone_w = os.pipe()
        middle = os.fork()
        if middle == 0:
            os.setsid()
            if os.fork():
                os._exit(0)
            os.close(told_w)
            os.close(gone_r)
            background_writer(os.fdopen(told_r, "rb"))  # never returns
        os.waitpid(middle, 0)
        os.close(told_r)
        os.close(gone_w)
        record_effect("charge")
        os.write(told_w, b"done\n")
        os.read(gone_r, 1)  # EOF once the helper has exited
    elif how == "leaves-helper":
        record_effect("charge")
        if phase != "start":
            subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)", *sys.argv[2:-1]], start_new_session=True
            )
    else:
        raise SystemExit(f"unknown HOW {how}")
    record_result({"finished": how})
    open(finished, "w").close()


# A main guard: tests run this as ``python -m misbehaving`` from a fork server (tests/conftest.py, AgentForks),
# which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
