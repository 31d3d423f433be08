"""An agent that journals its idempotency key before its effect, with or without fsync.

    python journal_agent.py plain|durable start|resume

start draws a new idempotency key, journals it in $PLUGPULL_WORKDIR/journal.json, then charges with
it (record_effect with the key: the provider counts one charge per key) and marks the journal done.
resume reads the journal: done, nothing to do; a key there, it charges again with the same key (no
second charge); no journal (or one it cannot read), it starts over with a new key.

- ``plain`` writes the journal with open/write/close: after a SIGKILL the page cache still holds it;
  after a power cut it is gone (nothing was fsynced, nor the directory that names it).
- ``durable`` writes it as a store that means to survive power loss does: a temp file, fsync,
  rename over the journal, fsync of the directory (rename(2) and fsync(2) in POSIX; the LWN article
  "Ensuring data reaches disk", https://lwn.net/Articles/457667/).
"""

import json
import os
import sys
import uuid
from pathlib import Path

from plugpull import record_effect, record_result


def write_journal(how: str, workdir: Path, entry: dict) -> None:
    journal = workdir / "journal.json"
    data = json.dumps(entry).encode()
    if how == "plain":
        journal.write_bytes(data)
        return
    temp = workdir / "journal.json.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temp, journal)
    directory = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def read_journal(journal: Path) -> dict | None:
    try:
        return json.loads(journal.read_bytes())
    except (OSError, ValueError):
        return None


def main():
    how, phase = sys.argv[1], sys.argv[2]
    workdir = Path(os.environ["PLUGPULL_WORKDIR"])
    if how not in ("plain", "durable") or phase not in ("start", "resume"):
        raise SystemExit("usage: journal_agent.py plain|durable start|resume")
    entry = read_journal(workdir / "journal.json") if phase == "resume" else None
    if entry is None:
        entry = {"key": uuid.uuid4().hex, "done": False}
        write_journal(how, workdir, entry)
    if not entry["done"]:
        record_effect("charge", key=entry["key"])
        write_journal(how, workdir, {**entry, "done": True})
    record_result({"charge": "done"})
    print(f"run finished ({phase}, journal {how})")


# A main guard: tests run this as ``python -m journal_agent`` from a fork server (tests/conftest.py, AgentForks),
# which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
