"""plugpull's real channel server for the Node client's tests, driven over stdin/stdout.

    python clients/js/test/harness.py      # prints {"socket": PATH}, then answers one JSON command a line

It runs plugpull.channel.Channel (the server every scenario runs) with a Provider and a Store, and lets a
test arm it and read what it saw; it exits, closing the channel, when stdin closes. Commands:

- {"cmd": "arm", "point": "after-effect" | "before-effect" | null, "hold": [NAME, N] | null}
- {"cmd": "arm_step", "kind": "mark" | "effect", "name": NAME, "n": N, "side": "before" | "after"}
- {"cmd": "gate", "n": N}: arm the start line for N callers
- {"cmd": "fault", "write": N, "point": "write-lost" | "ack-lost"}: a store fault at write N
- {"cmd": "phase", "phase": NAME}
- {"cmd": "wait_held", "timeout": S}: the held call once it is held (or null)
- {"cmd": "wait_closed", "timeout": S}: whether the held call's connection closed within S seconds
- {"cmd": "state"}: calls, marks, results, announced, store contents and writes, gate arrivals
"""

from __future__ import annotations

import json
import sys
import time

from plugpull.channel import Channel
from plugpull.store import Store


def state(channel: Channel) -> dict:
    provider = channel.provider
    return {
        "calls": [c.to_dict() for c in provider.calls],
        "marks": [m.to_dict() for m in provider.marks],
        "counts": provider.counts(),
        "results": channel.results,
        "announced": channel.announced,
        "store": channel.store.contents,
        "writes": [w.to_dict() for w in channel.store.writes],
        "gate": {"arrived": channel.gate.arrived, "released_with": channel.gate.released_with},
        # Connections accepted so far: one per process (and per call in flight), reused (docs/protocol.md).
        "connections": len(channel._threads),
        "model_requests": channel.model_requests,
        "conversations": channel.conversations,
    }


def main() -> None:
    with Channel(store=Store()) as channel:
        print(json.dumps({"socket": channel.path}), flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            cmd = command["cmd"]
            reply: object = {"ok": True}
            if cmd == "arm":
                hold = command.get("hold")
                channel.provider.arm(command.get("point"), hold=tuple(hold) if hold else None)
                # A scenario uses a new provider per line; this one serves many tests: forget the last hold.
                channel.provider.held = None
                channel.provider.held_event.clear()
            elif cmd == "arm_step":
                channel.provider.arm_step(command["kind"], command["name"], command["n"], command["side"])
            elif cmd == "gate":
                channel.gate.arm(command["n"])
            elif cmd == "fault":
                channel.store.fault = (command["write"], command["point"])
            elif cmd == "phase":
                channel.phase = command["phase"]
            elif cmd == "wait_held":
                held = channel.provider.held_event.wait(command.get("timeout", 10))
                reply = channel.provider.held.to_dict() if held and channel.provider.held else None
            elif cmd == "wait_closed":
                deadline = time.monotonic() + command.get("timeout", 10)
                held = channel.provider.held
                while held is not None and held.closed_at is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                reply = held is not None and held.closed_at is not None
            elif cmd == "state":
                reply = state(channel)
            else:
                reply = {"ok": False, "error": f"unknown command {cmd!r}"}
            print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
