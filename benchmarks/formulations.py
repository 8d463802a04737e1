"""Recursive O(N) versus mass-matrix versus augmented (dense and sparse) forward dynamics, and constraint drift.

    python3 benchmarks/formulations.py [--max-n 100000] [--plot formulations.png] [--quick]

Per forward-dynamics evaluation on serial_chain(N) and on a branched tree (a binary tree of rods), median times,
fitted log-log slopes over the larger N, the N where the recursive route overtakes each other one; then the
position drift max |C| versus time of the augmented formulation on serial_chain(10) over 5 s with no
stabilisation, Baumgarte (two parameter choices) and projection. Pinocchio's ABA (N <= 200) and MuJoCo's
mj_forward (N <= 300) are timed in the same run on the chains when installed (their builders: forward_dynamics.py).
Time per simulated second at matched accuracy: matched_accuracy.py.
The augmented route is assembled with numpy and scipy.sparse, so its constant cost (about 1 ms) is Python's.
Writes benchmarks/results/formulations.json and, with --plot (matplotlib), a log-log plot.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse

import numpy as np
from _common import median_time, print_table, write_json
from forward_dynamics import time_mujoco, time_pinocchio

import recursive_mbd as rm
from recursive_mbd import augmented


def binary_tree(n):
    """n rods, body i hanging from body (i - 1) // 2: a branched tree of depth log2(n)."""
    model = rm.Model()
    for i in range(n):
        model.add_body(parent=(i - 1) // 2 if i else -1, parent_point=(0.0, -0.05) if i else (0.0, 0.0),
                       child_point=(0.0, 0.05), mass=0.1, inertia=0.1 * 0.1**2 / 12, name=f"rod{i}")
    return model


KEYS = ("recursive_s", "mass_matrix_s", "augmented_dense_s", "augmented_sparse_s", "pinocchio_s", "mujoco_s")


def time_formulations(model, max_dense, max_mass_matrix, peers=False):
    n = model.nbodies
    rng = np.random.default_rng(n)
    q, qd = rng.uniform(-0.5, 0.5, model.nq), rng.normal(size=model.nq)
    row = {"n": n, "recursive_s": median_time(lambda: rm.forward_dynamics(model, q, qd))}
    if n <= max_mass_matrix:
        row["mass_matrix_s"] = median_time(lambda: rm.forward_dynamics(model, q, qd, method="mass_matrix"),
                                           min_time=0.3, repeats=3)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    row["augmented_sparse_s"] = median_time(lambda: augmented.forward_dynamics(model, z, zd), min_time=0.3, repeats=3)
    if n <= max_dense:
        row["augmented_dense_s"] = median_time(lambda: augmented.forward_dynamics(model, z, zd, solver="dense"),
                                               min_time=0.3, repeats=3)
    if peers and n <= 200 and (pin := time_pinocchio(n)[0]) is not None:
        row["pinocchio_s"] = pin
    if peers and n <= 300 and (mj := time_mujoco(n)) is not None:
        row["mujoco_s"] = mj
    return row


def fitted_slope(records, key, min_n=100):
    points = [(r["n"], r[key]) for r in records if key in r and r["n"] >= min_n]
    if len(points) < 2:
        return None
    n, t = np.log(np.array(points)).T
    return float(np.polyfit(n, t, 1)[0])


def crossover(records, key):
    """Smallest measured N from which the recursive route is faster than ``key`` for good."""
    faster = [r["n"] for r in records if key in r and r["recursive_s"] < r[key]]
    slower = [r["n"] for r in records if key in r and r["recursive_s"] >= r[key]]
    if not faster:
        return None
    return min(n for n in faster if all(m < n for m in slower))


def drift_study(t_end=5.0):
    model = rm.chains.serial_chain(10)
    q0 = np.full(10, 0.2)
    study = {}
    for label, options in (("none", dict(stabilization="none")),
                           ("baumgarte alpha=beta=5", dict(alpha=5.0, beta=5.0)),
                           ("baumgarte alpha=beta=20", dict(alpha=20.0, beta=20.0)),
                           ("projection", dict(stabilization="projection"))):
        res = rm.simulate(model, q0, np.zeros(10), t_end, formulation="augmented", rtol=1e-8, atol=1e-10,
                          **options)
        study[label] = {"t": res.t.tolist(), "drift": res.constraint_drift.tolist(), "steps": res.nsteps}
    return study


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=float, default=1e5)
    parser.add_argument("--plot", metavar="FILE")
    parser.add_argument("--quick", action="store_true", help="N up to 1000, a 1 s drift run")
    args = parser.parse_args()
    max_n = 1000 if args.quick else args.max_n
    sizes = [n for n in (2, 10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000) if n <= max_n]
    results = {}
    for label, build in (("chain", rm.chains.serial_chain), ("binary tree", binary_tree)):
        records = [time_formulations(build(n), max_dense=300, max_mass_matrix=2000, peers=label == "chain")
                   for n in sizes]
        results[label] = records
        rows = [[r["n"]] + [f"{r[k] * 1e6:.1f}" if k in r else "-" for k in KEYS] for r in records]
        print(f"forward dynamics per evaluation, {label} of N bodies [us]")
        print_table(["N", "recursive", "mass matrix", "augmented dense", "augmented sparse", "pinocchio ABA",
                     "mujoco mj_forward"], rows)
        for key in KEYS:
            slope = fitted_slope(records, key)
            if slope is not None:
                print(f"  slope of log t over log N (N >= 100), {key[:-2]}: {slope:.2f}")
        for key in KEYS[1:]:
            if any(key in r for r in records):
                print(f"  recursive faster than {key[:-2]} from N = {crossover(records, key)}")
        by_n = {r["n"]: r for r in records}
        for n in (1000, 100_000):
            if n in by_n:
                ratio = by_n[n]["augmented_sparse_s"] / by_n[n]["recursive_s"]
                print(f"  N = {n}: augmented sparse / recursive = {ratio:,.0f}")
    drift = drift_study(1.0 if args.quick else 5.0)
    for label, run in drift.items():
        d = np.array(run["drift"])
        print(f"drift max |C|, serial_chain(10), {label}: at the end {d[-1]:.1e}, max {d.max():.1e}, "
              f"{run['steps']} steps")
    print(f"wrote {write_json('formulations', {'timings': results, 'drift': drift})}")
    if args.plot:
        import matplotlib  # noqa: PLC0415 - optional extra

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415

        fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
        for ax, (label, records) in zip(axes[:2], results.items(), strict=True):
            for key in KEYS:
                points = [(r["n"], r[key]) for r in records if key in r]
                if not points:
                    continue
                slope = fitted_slope(records, key)
                name = key[:-2].replace("_", " ") + ("" if slope is None else f" (slope {slope:.2f})")
                ax.loglog(*zip(*points, strict=True), "o-", label=name)
            ax.set(xlabel="N bodies", ylabel="time per evaluation [s]", title=label)
            ax.legend(fontsize=8)
        for label, run in drift.items():
            axes[2].semilogy(run["t"], np.maximum(run["drift"], 1e-17), label=label)
        axes[2].set(xlabel="t [s]", ylabel="max |C| [m, rad]", title="augmented: constraint drift")
        axes[2].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
