"""Where the test suite's numba compile time goes: a pytest plugin listening to numba's "numba:compile" events.

Run the suite with an empty cache and this plugin loaded::

    NUMBA_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD:$PWD/benchmarks \
        python3 -m pytest -q -p compile_profile -p no:randomly [tests ...]

Each compile of a dispatcher for one signature is one event (a load from numba's disk cache is none). Its *self*
seconds are its duration less the compiles nested in it (a kernel compiling the kernels it calls while it is typed),
so the self seconds add up to the compile wall time. At the end it prints the dispatchers by self seconds (with how
many signatures each compiled and the signatures) and writes every event, with the test that triggered it, to
benchmarks/results/compile_profile.json (or $COMPILE_PROFILE_JSON).
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import json
import time
from collections import defaultdict
from pathlib import Path

from numba.core import event

_events = []  # finished compiles: dicts
_stack = []  # open compiles: [start, nested seconds]
_current_test = ["(collection)"]


class _CompileListener(event.Listener):
    def on_start(self, ev):
        _stack.append([time.perf_counter(), 0.0])

    def on_end(self, ev):
        start, nested = _stack.pop()
        seconds = time.perf_counter() - start
        if _stack:
            _stack[-1][1] += seconds
        dispatcher = ev.data["dispatcher"]
        function = dispatcher.py_func
        _events.append(dict(
            name=f"{function.__module__}.{function.__qualname__}",
            args=str(tuple(ev.data["args"])),
            seconds=seconds,
            self_seconds=seconds - nested,
            depth=len(_stack),
            test=_current_test[0],
        ))


_listener = _CompileListener()
event.register("numba:compile", _listener)


def _json_path():
    return Path(os.environ.get("COMPILE_PROFILE_JSON", Path(__file__).parent / "results" / "compile_profile.json"))


def _write_json():
    path = _json_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_events, indent=1))
    return path


def pytest_runtest_protocol(item, nextitem):
    _current_test[0] = item.nodeid


def pytest_runtest_teardown(item, nextitem):
    if nextitem is None or nextitem.path != item.path:  # the events so far after each test file, for long runs
        _write_json()


def _table(rows, top):
    by_name = defaultdict(lambda: [0.0, 0, set()])
    for row in rows:
        entry = by_name[row["name"]]
        entry[0] += row["self_seconds"]
        entry[1] += 1
        entry[2].add(row["test"].split("::")[0])
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][0])
    lines = [f"{'self s':>8} {'sigs':>4}  dispatcher  (test files that compiled it)"]
    for name, (seconds, count, files) in ranked[:top]:
        lines.append(f"{seconds:8.2f} {count:4d}  {name}  ({', '.join(sorted(files))[:100]})")
    total = sum(row["self_seconds"] for row in rows)
    lines.append(f"{total:8.2f} {len(rows):4d}  total: {len(by_name)} dispatchers")
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter):
    top = int(os.environ.get("COMPILE_PROFILE_TOP", "40"))
    terminalreporter.write_line("numba compiles by dispatcher (self seconds, signatures compiled):")
    terminalreporter.write_line(_table(_events, top))
    path = _write_json()
    terminalreporter.write_line(f"compile events written to {path}")
