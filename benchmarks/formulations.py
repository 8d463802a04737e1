"""Forward dynamics per evaluation by formulation: recursive O(N), mass matrix, augmented tree / sparse / dense.

    python3 benchmarks/formulations.py [--max-n 1000000] [--plot formulations.png] [--quick]
    python3 benchmarks/formulations.py --drift-only

On serial_chain(N) and on a binary tree of N rods, N = 2 ... 1e6, one run: median time per evaluation of

- recursive: ``rm.forward_dynamics`` (the compiled B/G/H condensation, O(N));
- mass matrix: CRBA + Cholesky (``method="mass_matrix"``), with BLAS pinned to one thread so that a busy machine
  does not distort it (O(N^3); N <= 2000);
- augmented tree: ``augmented.forward_dynamics(solver="tree")``, the compiled absolute-coordinate assembly and the
  tree-ordered KKT elimination (Baraff 1996), O(N);
- augmented sparse: the same equations assembled with numpy / scipy.sparse and factorised by splu (N <= 1e5);
- augmented dense: dense LU of the assembled KKT matrix (N <= 300);
- Pinocchio ABA (N <= 200) and MuJoCo mj_forward (N <= 300) on the chains when installed (builders in
  forward_dynamics.py).

Prints the tables, fitted log-log slopes (N >= 1000, and 1e3 .. 1e6 for the O(N) routes), the crossover N of each
pair, the ratio augmented-tree : recursive at 1e3, 1e5, 1e6, the call overhead at N = 2, and the memory of one
evaluation at the largest N (the model's packed arrays, state, workspace and outputs each route touches, and the
allocation peak of its first call by tracemalloc). Writes benchmarks/results/formulations.json and, with --plot
(matplotlib), a log-log plot with the fitted slopes. ``--drift-only``: the position drift max |C| versus time of
the augmented formulation on serial_chain(10) over 5 s with no stabilisation, Baumgarte (two parameter choices)
and projection, to benchmarks/results/formulations_drift.json.
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_variable] = "1"  # before numpy is imported: BLAS reads these once, at load time

import argparse  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
from _common import median_time, print_table, write_json  # noqa: E402
from forward_dynamics import time_mujoco, time_pinocchio  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd import augmented  # noqa: E402
from recursive_mbd.dynamics import workspace  # noqa: E402


def binary_tree(n):
    """n rods of 0.1 m, body i hanging from body (i - 1) // 2: a branched tree of depth log2(n)."""
    model = rm.Model()
    parent = (np.arange(n) - 1) // 2
    points = np.where((parent >= 0)[:, None], [0.0, -0.05], [0.0, 0.0])
    model.add_bodies(parent, "revolute", parent_point=points, child_point=(0.0, 0.05), mass=0.1,
                     inertia=0.1 * 0.1**2 / 12)
    return model.compile()


KEYS = ("recursive_s", "mass_matrix_s", "augmented_tree_s", "augmented_sparse_s", "augmented_dense_s",
        "pinocchio_s", "mujoco_s")
LIMITS = {"mass_matrix_s": 2000, "augmented_sparse_s": 100_000, "augmented_dense_s": 300}


def state(model):
    rng = np.random.default_rng(model.nbodies)
    q, qd = rng.uniform(-0.5, 0.5, model.nq), rng.normal(size=model.nq)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    return q, qd, z, zd


def time_formulations(model, peers):
    n = model.nbodies
    q, qd, z, zd = state(model)
    out = np.empty(model.nq)
    budget = dict(min_time=0.3, repeats=5) if n < 100_000 else dict(min_time=0.1, repeats=3)
    calls = {
        "recursive_s": lambda: rm.forward_dynamics(model, q, qd, out=out),
        "mass_matrix_s": lambda: rm.forward_dynamics(model, q, qd, method="mass_matrix"),
        "augmented_tree_s": lambda: augmented.forward_dynamics(model, z, zd),
        "augmented_sparse_s": lambda: augmented.forward_dynamics(model, z, zd, solver="sparse"),
        "augmented_dense_s": lambda: augmented.forward_dynamics(model, z, zd, solver="dense"),
    }
    row = {"n": n}
    for key, call in calls.items():
        if n <= LIMITS.get(key, np.inf):
            try:
                row[key] = median_time(call, **(budget if n >= 10 else dict(min_time=0.5, repeats=9)))
            except rm.ModelError as err:  # the sparse LU's pivot test refuses long, light chains as singular
                row[key[:-2] + "_refused"] = str(err)[:120]
                print(f"  N = {n}: {key[:-2]} refused: {err}")
    if peers and n <= 200 and (pin := time_pinocchio(n)[0]) is not None:
        row["pinocchio_s"] = pin
    if peers and n <= 300 and (mj := time_mujoco(n)) is not None:
        row["mujoco_s"] = mj
    return row


def memory(build, n):
    """Bytes each O(N) route touches for one evaluation, and the allocation peak of its first call (workspace
    creation included) by tracemalloc, on fresh models."""
    report = {}
    for route in ("recursive", "augmented_tree"):
        model = build(n)
        q, qd, z, zd = state(model)
        model._workspace = None  # each route's first call creates its own workspace (state() made the recursive one)
        tracemalloc.start()
        if route == "recursive":
            out = rm.forward_dynamics(model, q, qd)
            _, peak = tracemalloc.get_traced_memory()
            arrays = (model.body_int, model.body_real, q, qd, workspace(model).ws, out)
        else:
            zdd, lam = augmented.forward_dynamics(model, z, zd)
            _, peak = tracemalloc.get_traced_memory()
            tree = model._augmented_workspace
            arrays = (model.body_int, model.body_real, z, zd, tree.factor, tree.row_start, zdd, lam)
        tracemalloc.stop()
        report[route] = {"touched_bytes": int(sum(a.nbytes for a in arrays)), "first_call_peak_bytes": int(peak)}
    return report


def fitted_slope(records, key, min_n=1000, max_n=np.inf):
    points = [(r["n"], r[key]) for r in records if key in r and min_n <= r["n"] <= max_n]
    if len(points) < 2:
        return None
    n, t = np.log(np.array(points)).T
    return float(np.polyfit(n, t, 1)[0])


def crossover(records, fast, slow):
    """Smallest measured N from which ``fast`` stays faster than ``slow`` (None: never, in the measured range)."""
    both = [r for r in records if fast in r and slow in r]
    for k, r in enumerate(both):
        if all(s[fast] < s[slow] for s in both[k:]):
            return r["n"]
    return None


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
        d = res.constraint_drift
        print(f"drift max |C|, serial_chain(10), {label}: at the end {d[-1]:.1e}, max {d.max():.1e}, "
              f"{res.nsteps} steps")
    print(f"wrote {write_json('formulations_drift', {'drift': study})}")
    return study


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=float, default=1e6)
    parser.add_argument("--plot", metavar="FILE")
    parser.add_argument("--quick", action="store_true", help="N up to 1000")
    parser.add_argument("--drift-only", action="store_true", help="only the drift study of the augmented route")
    args = parser.parse_args()
    if args.drift_only:
        drift_study()
        return
    max_n = 1000 if args.quick else args.max_n
    sizes = [n for n in (2, 10, 100, 300, 1000, 10_000, 100_000, 1_000_000) if n <= max_n]
    results, summary = {}, {}
    for label, build in (("chain", rm.chains.serial_chain), ("binary tree", binary_tree)):
        records = [time_formulations(build(n), peers=label == "chain") for n in sizes]
        results[label] = records
        rows = [[r["n"]] + [f"{r[k] * 1e6:.3g}" if k in r else "-" for k in KEYS] for r in records]
        print(f"\nforward dynamics per evaluation, {label} of N bodies [us]")
        print_table(["N", "recursive", "mass matrix", "aug. tree", "aug. sparse", "aug. dense", "pinocchio ABA",
                     "mujoco"], rows)
        info = summary.setdefault(label, {})
        for key in KEYS:
            slope = fitted_slope(records, key)
            if slope is not None:
                info[f"slope_{key[:-2]}"] = slope
                print(f"  slope of log t over log N (N >= 1000): {key[:-2]} {slope:.2f}")
        for key in ("recursive_s", "augmented_tree_s"):
            slope = fitted_slope(records, key, 1000, 1_000_000)
            if slope is not None:
                info[f"slope_1e3_1e6_{key[:-2]}"] = slope
        for i, a in enumerate(KEYS):
            for b in KEYS[i + 1:]:
                common = [r["n"] for r in records if a in r and b in r]
                if len(common) < 2:
                    continue
                for fast, slow in ((a, b), (b, a)):
                    n_cross = crossover(records, fast, slow)
                    if n_cross is None:
                        continue
                    info[f"crossover_{fast[:-2]}_beats_{slow[:-2]}"] = n_cross
                    where = "at every measured N" if n_cross == common[0] else f"from N = {n_cross}"
                    print(f"  {fast[:-2]} faster than {slow[:-2]} {where} (N = {common[0]} .. {common[-1]})")
        by_n = {r["n"]: r for r in records}
        for n in (2, 1000, 100_000, 1_000_000):
            if n in by_n:
                ratio = by_n[n]["augmented_tree_s"] / by_n[n]["recursive_s"]
                info[f"ratio_tree_to_recursive_{n}"] = ratio
                print(f"  N = {n}: augmented tree / recursive = {ratio:.2f} "
                      f"({by_n[n]['augmented_tree_s'] / n * 1e9:.0f} vs {by_n[n]['recursive_s'] / n * 1e9:.0f} "
                      f"ns per body)")
        if 2 in by_n:
            print(f"  call overhead at N = 2: recursive {by_n[2]['recursive_s'] * 1e6:.2f} us, augmented tree "
                  f"{by_n[2]['augmented_tree_s'] * 1e6:.2f} us")
        info["memory"] = memory(build, sizes[-1])
        rec, tree = info["memory"]["recursive"], info["memory"]["augmented_tree"]
        print(f"  memory at N = {sizes[-1]}: touched {rec['touched_bytes'] / sizes[-1]:.0f} B/body recursive, "
              f"{tree['touched_bytes'] / sizes[-1]:.0f} B/body augmented tree (ratio "
              f"{tree['touched_bytes'] / rec['touched_bytes']:.2f}); first-call allocation peak "
              f"{rec['first_call_peak_bytes'] / 2**20:.1f} MiB vs {tree['first_call_peak_bytes'] / 2**20:.1f} MiB")
    print(f"wrote {write_json('formulations', {'timings': results, 'summary': summary, 'blas_threads': 1})}")
    if args.plot:
        import matplotlib  # noqa: PLC0415 - optional extra

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415

        fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
        for ax, (label, records) in zip(axes, results.items(), strict=True):
            for key in KEYS:
                points = [(r["n"], r[key]) for r in records if key in r]
                if not points:
                    continue
                slope = fitted_slope(records, key)
                name = key[:-2].replace("_", " ") + ("" if slope is None else f" (slope {slope:.2f})")
                ax.loglog(*zip(*points, strict=True), "o-", label=name)
            ax.set(xlabel="N bodies", ylabel="time per evaluation [s]", title=f"forward dynamics, {label}")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
