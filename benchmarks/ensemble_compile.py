"""Compile time of the ensemble and batch kernels with an empty numba cache, and their load time from a warm one.

    python3 benchmarks/ensemble_compile.py

CI compiles everything on 2 cores within its time budget, so the first call of each kernel family is timed in a
fresh process with its own empty cache directory (NUMBA_CACHE_DIR), in the order a test session meets them:
rm.simulate (rk4 and dopri5: the time loops the ensembles reuse), rm.simulate_many fixed-step and dopri5 (the
parallel member loops), rm.batch (forward and inverse dynamics, energy). A second process with the same cache
times the loads. Wall and process CPU time per stage; on a shared machine the CPU time is the figure to compare.
Writes benchmarks/results/ensemble_compile.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, time
start = (time.perf_counter(), time.process_time())
import numpy as np
import recursive_mbd as rm
model = rm.chains.serial_chain(2)
Q0, QD0 = np.zeros((4, 2)), np.ones((4, 2))
stages, last = [], start
def mark(name):
    global last
    now = (time.perf_counter(), time.process_time())
    stages.append((name, now[0] - last[0], now[1] - last[1]))
    last = now
mark("import")
rm.simulate(model, Q0[0], QD0[0], 0.1, "rk4", dt=0.01)
rm.simulate(model, Q0[0], QD0[0], 0.1)
mark("simulate rk4 + dopri5")
rm.simulate_many(model, Q0, QD0, 0.1, "rk4", dt=0.01)
mark("simulate_many fixed-step")
rm.simulate_many(model, Q0, QD0, 0.1)
mark("simulate_many dopri5")
rm.batch.forward_dynamics(model, Q0, QD0)
rm.batch.inverse_dynamics(model, Q0, QD0, QD0)
rm.batch.energy(model, Q0, QD0)
mark("batch (3 kernels)")
print(json.dumps(stages))
"""


def _run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD], capture_output=True, text=True, env=env,
                         check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = _run(cache_dir)
        warm = _run(cache_dir)
    rows = [(name, f"{wall:.1f}", f"{cpu:.1f}", f"{warm_cpu:.2f}")
            for (name, wall, cpu), (_, _, warm_cpu) in zip(cold, warm, strict=True)]
    print_table(["stage", "empty cache wall s", "CPU s", "warm cache CPU s"], rows)
    ensemble_cpu = sum(cpu for name, _, cpu in cold if name.startswith("simulate_many"))
    print(f"simulate_many kernels with an empty cache: {ensemble_cpu:.1f} s CPU (load average {load:.1f})")
    path = write_json("ensemble_compile", {"empty_cache": cold, "warm_cache": warm, "load_average": load,
                                           "simulate_many_compile_cpu_s": ensemble_cpu})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
