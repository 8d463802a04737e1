"""Parallelograms through their change points (issue 12): energy and crank-rate split, both formulations.

    python3 benchmarks/parallelogram_row.py [--n 5] [--t-end 20] [--routes recursive augmented]
                                             [--methods dopri5 dop853] [--tols 1e-8 1e-10 1e-12]

A row of n parallelograms (tests/test_singular.py: n + 1 cranks of 1 m, 1 kg hinged 1 m apart, n couplers, cranks
vertical at t = 0, tips at 1 m/s) simulated with projection onto the loops. The exact motion keeps every crank at
one angle and one rate and the energy constant, and passes the collinear change points (the loop Jacobian loses n
of its 2n rows there) about twice per revolution. Per route, method and tolerance rtol = atol: the largest
relative energy error, the largest crank-rate split max_k |qd_k - qd_0| over the samples (the accepted steps),
|sin theta| at that sample (its distance to a change point), the largest crank-angle split, and the wall time.
The issue asks for energy within 1e-6 relative and splits within 1e-6 rad/s. Writes
benchmarks/results/parallelogram_row.json (parallelogram_row_ROUTE.json for one route). Near the change points
both routes solve on the normal space of the branch the motion follows (``_kernels.planar.loops.branch_normals``).
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS (benchmarks/blas_threads.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_singular import parallelograms  # noqa: E402  (the model of the tests, one definition)


def measure(n, route, method, tol, t_end):
    """One run: a dict of the figures (or the error that stopped it)."""
    model, q0, qd0 = parallelograms(n)
    start = time.perf_counter()
    try:
        res = rm.simulate(model, q0, qd0, t_end, method=method, rtol=tol, atol=tol, formulation=route,
                          stabilization="projection")
    except rm.SimulationError as err:
        return {"error": str(err)[:200], "wall_s": time.perf_counter() - start}
    wall = time.perf_counter() - start
    kinetic, potential = res.energy()
    total = kinetic + potential
    cranks = slice(0, n + 1)
    split = np.abs(res.qd[:, cranks] - res.qd[:, :1]).max(axis=1)
    worst = int(np.argmax(split))
    return {"energy_rel": float(np.abs(total / total[0] - 1.0).max()), "rate_split": float(split[worst]),
            "t_worst": float(res.t[worst]), "sin_theta_worst": float(abs(np.sin(res.q[worst, 0]))),
            "angle_split": float(np.abs(res.q[:, cranks] - res.q[:, :1]).max()), "samples": int(res.t.size),
            "wall_s": wall}


def main(n=5, t_end=20.0, routes=("recursive", "augmented"), methods=("dopri5", "dop853"),
         tols=(1e-8, 1e-10, 1e-12)):
    for route in routes:  # compile outside the measured runs
        measure(n, route, "dopri5", 1e-8, 0.1)
    runs, rows = [], []
    for route in routes:
        for method in methods:
            for tol in tols:
                fig = measure(n, route, method, tol, t_end)
                runs.append({"route": route, "method": method, "tol": tol, **fig})
                if "error" in fig:
                    rows.append((route, method, f"{tol:g}", "error", fig["error"][:60], "", "", "",
                                 f"{fig['wall_s']:.1f}"))
                else:
                    ok = fig["energy_rel"] < 1e-6 and fig["rate_split"] < 1e-6
                    rows.append((route, method, f"{tol:g}", f"{fig['energy_rel']:.1e}", f"{fig['rate_split']:.1e}",
                                 f"{fig['sin_theta_worst']:.1e}", f"{fig['angle_split']:.1e}", "yes" if ok else "NO",
                                 f"{fig['wall_s']:.1f}"))
                print(f"  {rows[-1]}", flush=True)
    print(f"\n{n} parallelogram(s) in a row, {t_end:g} s, projection (machine shared: wall times are indicative)")
    print_table(("route", "method", "tol", "max |dE/E|", "max split [rad/s]", "|sin th| there", "angle split",
                 "1e-6 met", "wall [s]"), rows)
    name = "parallelogram_row" + ("" if len(routes) > 1 else f"_{routes[0]}")
    path = write_json(name, {"n": n, "t_end": t_end, "runs": runs})
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--t-end", type=float, default=20.0)
    parser.add_argument("--routes", nargs="+", default=["recursive", "augmented"])
    parser.add_argument("--methods", nargs="+", default=["dopri5", "dop853"])
    parser.add_argument("--tols", nargs="+", type=float, default=[1e-8, 1e-10, 1e-12])
    args = parser.parse_args()
    main(args.n, args.t_end, args.routes, args.methods, args.tols)
