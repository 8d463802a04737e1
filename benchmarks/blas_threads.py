"""Mass-matrix route with OpenBLAS's default thread pool against one BLAS thread, on an idle and a busy machine.

    python3 benchmarks/blas_threads.py [--n 1000] [--busy 2] [--repeats 15]

Each case runs in a fresh interpreter (the BLAS thread count is fixed when numpy loads OpenBLAS), once with the
BLAS thread variables unset and once with OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = 1, first on the machine as it
is, then with ``--busy`` CPU-bound processes started beside it (what a shared machine or a parallel test run
looks like). On a busy machine OpenBLAS's threads wait for each other at every level-3 call of the Cholesky
factorisation and one evaluation can take 100x longer; ``rmbd`` and the benchmark scripts therefore set one BLAS
thread unless the variable is already set. Prints the medians and writes benchmarks/results/blas_threads.json.
"""

import os

os.environ.pop("OPENBLAS_NUM_THREADS", None)  # the parent measures nothing itself; the children choose
os.environ.pop("OMP_NUM_THREADS", None)

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import print_table, write_json

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
import numpy as np
import recursive_mbd as rm
n, repeats = int(sys.argv[1]), int(sys.argv[2])
model = rm.chains.serial_chain(n)
q, qd = np.full(n, 0.1), np.zeros(n)
rm.forward_dynamics(model, q, qd, method="mass_matrix")
samples = []
for _ in range(repeats):
    start = time.perf_counter()
    rm.forward_dynamics(model, q, qd, method="mass_matrix")
    samples.append(time.perf_counter() - start)
print(json.dumps({"median": float(np.median(samples)), "max": max(samples)}))
"""


def measure(n, repeats, single_thread):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if single_thread:
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(repeats)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="links of the serial chain (default 1000)")
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes for the busy case (default 2)")
    parser.add_argument("--repeats", type=int, default=15, help="timed evaluations per case (default 15)")
    args = parser.parse_args()
    rows, results = [], {}
    for load in ("idle", "busy"):
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(args.busy if load == "busy" else 0)]
        try:
            for threads in ("default", "1"):
                r = measure(args.n, args.repeats, threads == "1")
                results[f"{load}/{threads}"] = r
                rows.append([f"{load} (+{len(spinners)} busy)", threads, f"{r['median'] * 1e3:.1f}",
                             f"{r['max'] * 1e3:.1f}"])
        finally:
            for proc in spinners:
                proc.kill()
                proc.wait()
    print(f"forward_dynamics(method='mass_matrix') on serial_chain({args.n}), {os.cpu_count()} CPUs")
    print_table(["machine", "BLAS threads", "median [ms]", "max [ms]"], rows)
    write_json("blas_threads", {"n": args.n, "busy": args.busy, "repeats": args.repeats, "results": results})


if __name__ == "__main__":
    main()
