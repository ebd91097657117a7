#!/usr/bin/env python3
"""Baseline for the `prepare` speed target (docs/performance.md, issue 16): parse every line
of a session log with orjson, the way a fast JSON parser reads the whole file.

Usage: orjson_baseline.py LOG [RUNS]   prints the fastest and the median wall time of RUNS
runs (default 5) of: open the file, orjson.loads each line. Only lines are parsed, nothing
is kept, so this is the floor of "a full JSON parse of the file" from Python.
"""
import statistics
import sys
import time

import orjson


def parse_all(path):
    lines = 0
    with open(path, "rb", buffering=1 << 20) as f:
        for line in f:
            orjson.loads(line)
            lines += 1
    return lines


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    times = []
    lines = 0
    for _ in range(runs):
        start = time.perf_counter()
        lines = parse_all(path)
        times.append(time.perf_counter() - start)
    print(
        f"orjson: {lines} lines, best {min(times):.3f} s, median {statistics.median(times):.3f} s over {runs} runs"
    )


if __name__ == "__main__":
    main()
