"""Forward-dynamics time of two checkouts of the package, interleaved: is a change neutral for speed?

    python3 benchmarks/checkouts.py OLD_ROOT NEW_ROOT [--rounds 7] [--sizes 10 1000 100000]

Each round times ``rm.forward_dynamics`` (the public call, as ``benchmarks/forward_dynamics.py`` does) on
``serial_chain(N)`` and on a chain of N spherical links (``Model3D``) in a fresh process per checkout, the two
checkouts alternating (OLD, NEW, OLD, NEW, ...), so that the machine's load drifts into both alike. Prints the
median time per call of each and the ratio NEW/OLD per case, and writes benchmarks/results/checkouts.json. Only the
public API is used, so any two versions of the package compare. Warm numba caches first (one untimed round).
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS (benchmarks/blas_threads.py). Set the variables to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import subprocess
import sys

import numpy as np
from _common import print_table, write_json

# Runs in a fresh interpreter with the checkout on its path: prints {case: median seconds per call}.
_TIMER = r"""
import json, sys, time
import numpy as np
import recursive_mbd as rm

def median_call(f, min_time=0.2, repeats=5):
    f()
    times = []
    for _ in range(repeats):
        count, start = 0, time.perf_counter()
        while True:
            f()
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed > min_time / repeats:
                break
        times.append(elapsed / count)
    return float(np.median(times))

def spherical_chain(n):
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    parent = "ground"
    for k in range(n):
        parent = model.add_body(parent=parent, joint="spherical", parent_point=(0.0, 0.0, -1.0 if k else 0.0),
                                mass=1.0, inertia=(0.1, 0.1, 0.01, 0, 0, 0), com=(0.0, 0.0, -0.5))
    return model

out = {}
rng = np.random.default_rng(0)
for n in json.loads(sys.argv[1]):
    chain = rm.chains.serial_chain(n)
    q, qd = rng.uniform(-0.5, 0.5, n), rng.normal(size=n)
    qdd = np.empty(n)
    out[f"planar chain {n}"] = median_call(lambda: rm.forward_dynamics(chain, q, qd, out=qdd))
    model = spherical_chain(n)
    quats = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)) + rng.normal(scale=0.05, size=(n, 4))
    q3 = (quats / np.linalg.norm(quats, axis=1)[:, None]).ravel()
    v3 = rng.normal(size=3 * n)
    out[f"spherical chain {n}"] = median_call(lambda: rm.forward_dynamics(model, q3, v3))
print(json.dumps(out))
"""


def run(root, sizes):
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", _TIMER, json.dumps(sizes)], env=env, cwd=root, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="root of the reference checkout (the folder holding recursive_mbd/)")
    parser.add_argument("new", help="root of the checkout to compare")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 100000])
    args = parser.parse_args()
    run(args.old, args.sizes), run(args.new, args.sizes)  # warm the numba caches
    times = {"old": [], "new": []}
    for _ in range(args.rounds):
        times["old"].append(run(args.old, args.sizes))
        times["new"].append(run(args.new, args.sizes))
    cases = list(times["old"][0])
    rows, record = [], {}
    for case in cases:
        old = float(np.median([r[case] for r in times["old"]]))
        new = float(np.median([r[case] for r in times["new"]]))
        ratios = [n[case] / o[case] for o, n in zip(times["old"], times["new"], strict=True)]
        rows.append((case, f"{old * 1e6:.2f}", f"{new * 1e6:.2f}", f"{new / old:.3f}",
                     f"{min(ratios):.3f}-{max(ratios):.3f}"))
        record[case] = {"old_s": old, "new_s": new, "ratio": new / old, "round_ratios": ratios}
    print_table(("case", "old [us]", "new [us]", "new/old", "per-round range"), rows)
    write_json("checkouts", {"old": str(args.old), "new": str(args.new), "rounds": args.rounds, "cases": record})


if __name__ == "__main__":
    main()
