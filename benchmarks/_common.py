"""Shared helpers of the benchmark scripts: the command line, timing by median of repeats, JSON output, a table
printer and the growth per size step."""

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def command_line(doc, name=None):
    """An ArgumentParser described by the first line of the script's docstring ``doc``; with ``name``, the option
    --name (default ``name``) of the results file benchmarks/results/NAME.json."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    if name is not None:
        parser.add_argument("--name", default=name, help="results file benchmarks/results/NAME.json")
    return parser


def sizes_from_command_line(doc, default):
    """The sizes N of a scaling benchmark from its option --sizes N [N ...] (default ``default``)."""
    parser = command_line(doc)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(default))
    return parser.parse_args().sizes


def interleaved_samples(funcs, rounds, min_time, clock=time.perf_counter):
    """{name: [seconds per call in each round]}: the callables timed in turn in each round, so that the machine's
    load hits them alike; each round runs a callable enough times to last about ``min_time`` by ``clock``."""
    counts = {}
    for name, func in funcs.items():
        func()
        start = clock()
        func()
        counts[name] = max(1, int(min_time / max(clock() - start, 1e-9)))
    samples = {name: [] for name in funcs}
    for _ in range(rounds):
        for name, func in funcs.items():
            number = counts[name]
            start = clock()
            for _ in range(number):
                func()
            samples[name].append((clock() - start) / number)
    return samples


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


def print_growth(records, columns):
    """One line per step between consecutive ``records`` (dicts with the size "n"): how much each timing grew,
    ``columns`` the pairs (label, record key)."""
    for a, b in zip(records, records[1:], strict=False):
        print(f"N {a['n']} -> {b['n']}: " + ", ".join(f"{label} x {b[key] / a[key]:.1f}" for label, key in columns))
