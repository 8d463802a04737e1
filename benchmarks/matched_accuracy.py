"""Wall time per simulated second at matched accuracy: recursive, mass matrix, augmented tree, sparse, dense.

    python3 benchmarks/matched_accuracy.py [--sizes 2 10 50] [--target 1e-6] [--t-end 1] [--routes NAME ...]

serial_chain(N) released from a bent state; the reference is the recursive route with dop853 at rtol 1e-13.
Each formulation runs Dormand-Prince 5(4): the recursive one and the augmented tree route in rm.simulate's
compiled time loop (augmented_tree projecting after every step, augmented_tree_none not stabilised,
augmented_tree_baumgarte with Baumgarte's terms, alpha = beta = 5 1/s as in formulations.py's drift study), mass
matrix and augmented sparse / dense through scipy's RK45 on Python right-hand sides; from rtol 1e-3 down by
decades, atol = rtol / 100, the loosest tolerance whose final q is within ``target`` (max norm, radians) of the
reference is kept, and its wall time and the thread's CPU time divided by t_end are reported (the ratios to
the recursive route in CPU time, which a loaded machine does not inflate).
Writes benchmarks/results/matched_accuracy.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time

import numpy as np
from _common import print_table, write_json
from scipy.integrate import solve_ivp

import recursive_mbd as rm


def run_recursive(model, q0, t_end, rtol):
    res = rm.simulate(model, q0, np.zeros(model.nq), t_end, rtol=rtol, atol=rtol / 100)
    return res.q[-1]


def run_mass_matrix(model, q0, t_end, rtol):
    n = model.nq

    def rhs(t, y):
        return np.concatenate((y[n:], rm.forward_dynamics(model, y[:n], y[n:], method="mass_matrix")))

    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate((q0, np.zeros(n))), method="RK45", rtol=rtol,
                    atol=rtol / 100)
    return sol.y[:n, -1]


def run_augmented_tree(stabilization, **options):
    """rm.simulate's compiled augmented time loop (tree solver), projecting after every step, with Baumgarte's
    terms (``options``: alpha, beta) or not stabilised."""
    def run(model, q0, t_end, rtol):
        res = rm.simulate(model, q0, np.zeros(model.nq), t_end, rtol=rtol, atol=rtol / 100, formulation="augmented",
                          stabilization=stabilization, **options)
        return res.q[-1]

    return run


def run_augmented_python(solver):
    """scipy's RK45 on augmented.state_derivative with a Python KKT solve (no stabilisation): for comparison."""
    def run(model, q0, t_end, rtol):
        z0, zd0 = rm.augmented.absolute_from_joint(model, q0, np.zeros(model.nq))
        n = model.nbodies
        sol = solve_ivp(lambda t, y: rm.augmented.state_derivative(model, t, y, solver=solver), (0.0, t_end),
                        np.concatenate((z0.ravel(), zd0.ravel())), method="RK45", rtol=rtol, atol=rtol / 100)
        z, zd = sol.y[:3 * n, -1].reshape(n, 3), sol.y[3 * n:, -1].reshape(n, 3)
        return rm.augmented.joint_from_absolute(model, z, zd)[0]

    return run


ROUTES = {"recursive": run_recursive, "mass_matrix": run_mass_matrix,
          "augmented_tree": run_augmented_tree("projection"), "augmented_tree_none": run_augmented_tree("none"),
          "augmented_tree_baumgarte": run_augmented_tree("baumgarte", alpha=5.0, beta=5.0),
          "augmented_sparse": run_augmented_python("sparse"), "augmented_dense": run_augmented_python("dense")}


def matched(run, model, q0, t_end, reference, target):
    for exponent in range(3, 12):
        rtol = 10.0**-exponent
        start, cpu_start = time.perf_counter(), time.thread_time()
        q_end = run(model, q0, t_end, rtol)
        wall, cpu = time.perf_counter() - start, time.thread_time() - cpu_start
        error = float(np.abs(q_end - reference).max())
        if error <= target:
            return rtol, wall, cpu, error
    return None, None, None, None


def main(sizes, target, t_end, routes):
    routes = {name: ROUTES[name] for name in ["recursive", *routes] if name in ROUTES}
    rows, records = [], []
    for n in sizes:
        model = rm.chains.serial_chain(n)
        q0 = np.full(n, 0.4 / n)
        q0[0] = 0.8
        reference = rm.simulate(model, q0, np.zeros(n), t_end, method="dop853", rtol=1e-13, atol=1e-15).q[-1]
        run_recursive(model, q0, t_end, 1e-3)  # compile
        row = [n]
        record = {"n": n}
        for name, run in routes.items():
            rtol, wall, cpu, error = matched(run, model, q0, t_end, reference, target)
            record[name] = {"rtol": rtol, "wall_per_simulated_s": None if wall is None else wall / t_end,
                            "cpu_per_simulated_s": None if cpu is None else cpu / t_end, "error": error}
            row.append("-" if wall is None else f"{wall / t_end:.3g} s, CPU {cpu / t_end:.3g} s (rtol {rtol:.0e})")
        base = record["recursive"]["cpu_per_simulated_s"]
        for name in list(routes)[1:]:
            other = record[name]["cpu_per_simulated_s"]
            row.append("-" if other is None or base is None else f"{other / base:.1f}x")
        rows.append(row)
        records.append(record)
    print(f"wall and thread CPU time per simulated second (ratios: CPU time, which a loaded machine does not "
          f"inflate), final q within {target:g} rad of the reference (t_end = {t_end:g} s)")
    names = list(routes)
    print_table(["N", *names, *[f"{name} / recursive" for name in names[1:]]], rows)
    print(f"wrote {write_json('matched_accuracy', {'target': target, 't_end': t_end, 'records': records})}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 10, 50])
    parser.add_argument("--target", type=float, default=1e-6)
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--routes", nargs="+", default=list(ROUTES)[1:], choices=list(ROUTES)[1:],
                        help="compared with the recursive route")
    args = parser.parse_args()
    main(args.sizes, args.target, args.t_end, args.routes)
