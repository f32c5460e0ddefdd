"""How long a write waits after SQLite's write lock is freed: sqlite3's own busy handler against
HomeAI's backend (infra/sqlite/base.py). Another connection holds the lock for a random 5-120 ms
while the write waits; the figure is the time from the lock's release to the write's return.

    python -m bench.sqlite_busy --rounds 40
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from infra.sqlite.base import SQLITE_WAIT_S, SQLiteCursorWrapper


def _late_ms(path: Path, hold_s: float, backend: str) -> float:
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    if backend == "homeai":
        writer = sqlite3.connect(path, isolation_level=None, timeout=SQLITE_WAIT_S, check_same_thread=False)
    else:
        writer = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    done = {}

    def write():
        if backend == "homeai":
            cursor = writer.cursor(factory=SQLiteCursorWrapper)
            cursor.timeout_s = 30
        else:
            cursor = writer.cursor()
        cursor.execute("INSERT INTO t VALUES (1)")
        done["at"] = time.perf_counter()

    thread = threading.Thread(target=write)
    thread.start()
    time.sleep(hold_s)
    released = time.perf_counter()
    holder.execute("COMMIT")
    thread.join()
    holder.close()
    writer.close()
    return (done["at"] - released) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    holds = [rng.uniform(0.005, 0.120) for _ in range(args.rounds)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "busy.sqlite3"
        setup = sqlite3.connect(path, isolation_level=None)
        setup.execute("PRAGMA journal_mode=WAL")
        setup.execute("CREATE TABLE t (x)")
        setup.close()
        late = {"sqlite": [], "homeai": []}
        for hold in holds:  # the two interleaved, the same hold for each
            for backend in late:
                late[backend].append(_late_ms(path, hold, backend))
    print(f"{args.rounds} writes each, lock held 5-120 ms (seed {args.seed}); ms from release to the write's return\n")
    print("| busy wait | p50 | p90 | max |")
    print("|---|---:|---:|---:|")
    for backend, values in late.items():
        values.sort()
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"| {backend} | {statistics.median(values):.1f} | {p90:.1f} | {values[-1]:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
