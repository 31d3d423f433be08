"""A store writer for the power-cut tests: commits N transactions to a SQLite database, then holds.

``python sqlite_writer.py DB JOURNAL_MODE SYNCHRONOUS N [hold]``: prints ``committed N`` once the
N transactions are committed; with ``hold``, it then opens a transaction big enough to spill to
disk (a 16-page cache and 100 rows of 4 KB) without committing it and prints ``holding``. Either
way it then sleeps until the test SIGKILLs it.
"""

import sqlite3
import sys
import time

path, journal_mode, synchronous, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
hold = sys.argv[5:] == ["hold"]
connection = sqlite3.connect(path, isolation_level=None)
assert connection.execute(f"PRAGMA journal_mode={journal_mode}").fetchone()[0] == journal_mode.lower()
connection.execute(f"PRAGMA synchronous={synchronous}")
connection.execute("PRAGMA cache_size=16")
connection.execute("CREATE TABLE IF NOT EXISTS effects (id INTEGER PRIMARY KEY, payload BLOB)")
for _ in range(count):
    connection.execute("BEGIN")
    connection.execute("INSERT INTO effects (payload) VALUES (randomblob(300))")
    connection.execute("COMMIT")
print(f"committed {count}", flush=True)
if hold:
    connection.execute("BEGIN")
    for _ in range(100):
        connection.execute("INSERT INTO effects (payload) VALUES (randomblob(4000))")
    print("holding", flush=True)
time.sleep(600)
