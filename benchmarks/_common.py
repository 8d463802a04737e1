"""Shared helpers of the benchmark scripts: timing by median of repeats, JSON output, a table printer."""

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def median_time(func, min_time=0.2, repeats=7):
    """Median wall time of one call [s]: each repeat runs enough calls to last about min_time / repeats."""
    func()
    start = time.perf_counter()
    func()
    single = max(time.perf_counter() - start, 1e-9)
    number = max(1, int(min_time / repeats / single))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            func()
        samples.append((time.perf_counter() - start) / number)
    return float(np.median(samples))


def machine():
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine()}


def write_json(name, payload):
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M:%S"), **payload}
    path.write_text(json.dumps(payload, indent=2))
    return path


def print_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(str(h).rjust(w) for h, w in zip(headers, widths, strict=True)))
    for row in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)))
