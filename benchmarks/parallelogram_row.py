"""Rows of parallelograms through their change points: cost per simulated second against the row's length, energy
and crank-rate split, both formulations and the implicit methods.

    python3 benchmarks/parallelogram_row.py [--n 5 10 20 40 80] [--t-end 20] [--routes recursive augmented]
                                             [--methods dopri5 dop853] [--tols 1e-8 1e-10]
                                             [--implicit generalized_alpha bdf] [--max-wall 300]

A row of n parallelograms (tests/test_singular.py: n + 1 cranks of 1 m, 1 kg hinged 1 m apart, n couplers, cranks
vertical at t = 0, tips at 1 m/s, gravity 9.81 m/s^2) simulated with projection onto the loops. The exact motion
keeps every crank at one angle and one rate and the energy constant, and passes the collinear change points (the
loop Jacobian loses n of its 2n rows there) about twice per revolution. Per n, route, method and tolerance
rtol = atol (--tols; by default rm.simulate's own, rtol 1e-9 and atol 1e-12): wall and CPU time, steps and rejected
steps per simulated second, function evaluations per step, the wall time per evaluation (ms/eval), the largest
relative energy error, the largest crank-rate split max_k |qd_k - qd_0| over the samples (the accepted steps), and
whether both are within 1e-6; then the log-log slopes of the wall time per simulated second and per evaluation
against n, from the smallest to the largest n (``--n 20 40 80 160 --t-end 5 --methods dopri5 --implicit``: the
cost's growth through the change-point zone, where an evaluation took O(n^3) eigen-decompositions). The
implicit methods (generalized_alpha at dt = 1e-3, bdf at the same tolerance, recursive route) run the same rows;
where they stop at a change point the table shows where. A run over --max-wall seconds of wall time stops and is
reported with the simulated time it reached. Writes benchmarks/results/NAME.json (--name, default
parallelogram_row) and a log-log plot of the cost per simulated second against n, NAME.png (matplotlib, Agg;
skipped without it).

The projection's iterations are not counted: they happen inside the compiled time loop, which reports steps,
rejections and evaluations only.
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
from _common import RESULTS, print_table, write_json

import recursive_mbd as rm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_singular import parallelograms  # noqa: E402  (the model of the tests, one definition)


def measure(n, route, method, tol, t_end, max_wall):
    """One run: a dict of the figures (or the error that stopped it, with the simulated time reached)."""
    model, q0, qd0 = parallelograms(n)
    options = {"dt": 1e-3} if method == "generalized_alpha" else {} if tol is None else {"rtol": tol, "atol": tol}
    if method in ("dopri5", "dop853"):
        options.update(formulation=route, stabilization="projection")
    start = time.perf_counter()
    cpu = time.process_time()
    try:
        res = rm.simulate(model, q0, qd0, t_end, method=method, max_wall_time=max_wall, **options)
    except rm.SimulationError as err:
        reached = float(err.result.t[-1]) if err.result is not None and err.result.t.size else 0.0
        return {"error": str(err)[:300], "wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
                "t_reached": reached}
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    kinetic, potential = res.energy()
    total = kinetic + potential
    cranks = slice(0, n + 1)
    split = np.abs(res.qd[:, cranks] - res.qd[:, :1]).max(axis=1)
    return {"energy_rel": float(np.abs(total / total[0] - 1.0).max()), "rate_split": float(split.max()),
            "angle_split": float(np.abs(res.q[:, cranks] - res.q[:, :1]).max()), "steps": int(res.nsteps),
            "rejected": int(res.nrejected), "nfev": int(res.nfev), "wall_s": wall, "cpu_s": cpu, "t_reached": t_end}


def row_of(n, route, method, tol, fig, t_end):
    """The table row of one run."""
    label = "dt 1e-3" if method == "generalized_alpha" else "default" if tol is None else f"{tol:g}"
    if "error" in fig:
        return (n, route, method, label, f"stopped at {fig['t_reached']:.3g} s", f"{fig['cpu_s']:.1f} in all", "",
                "", "", "", "", "", f"{fig['wall_s']:.1f}")
    ok = fig["energy_rel"] < 1e-6 and fig["rate_split"] < 1e-6
    return (n, route, method, label, f"{fig['wall_s'] / t_end:.3g}", f"{fig['cpu_s'] / t_end:.3g}",
            f"{fig['steps'] / t_end:.0f}",
            f"{fig['rejected'] / t_end:.1f}", f"{fig['nfev'] / max(fig['steps'], 1):.1f}",
            f"{1e3 * fig['wall_s'] / max(fig['nfev'], 1):.3g}", f"{fig['energy_rel']:.1e}",
            f"{fig['rate_split']:.1e}", "yes" if ok else "NO")


def slopes(runs):
    """Log-log slopes against n of the wall time per simulated second and per evaluation, from the smallest to the
    largest n that finished, a line per route, method and tolerance: (route, method, tol, n from, n to, slopes)."""
    lines = []
    for key in sorted({(r["route"], r["method"], r["tol"]) for r in runs}, key=str):
        done = sorted((r["n"], r["wall_s"] / r["t_end"], r["wall_s"] / max(r["nfev"], 1)) for r in runs
                      if (r["route"], r["method"], r["tol"]) == key and "error" not in r)
        if len(done) > 1 and done[-1][0] > done[0][0]:
            (n0, cost0, eval0), (n1, cost1, eval1) = done[0], done[-1]
            growth = np.log(n1 / n0)
            route, method, tol = key
            lines.append((route, method, "default" if tol is None else f"{tol:g}", n0, n1,
                          f"{np.log(cost1 / cost0) / growth:.2f}",
                          f"{np.log(eval1 / eval0) / growth:.2f}"))
    return lines


def plot(runs, path):
    """Wall time per simulated second against n, log-log, a line per route and method (finished runs)."""
    try:
        import matplotlib  # noqa: PLC0415 - optional extra
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for key in sorted({(r["route"], r["method"], r["tol"]) for r in runs}, key=str):
        done = sorted((r["n"], r["wall_s"] / r["t_end"]) for r in runs
                      if (r["route"], r["method"], r["tol"]) == key and "error" not in r)
        if done:
            sizes_done, costs = zip(*done, strict=True)
            ax.loglog(sizes_done, costs, "o-", label=f"{key[0]} {key[1]} {key[2] or 'default tolerances'}")
    sizes = sorted({r["n"] for r in runs})
    if len(sizes) > 1:
        ax.loglog(sizes, [0.01 * s for s in sizes], "k:", label="slope 1")
    ax.set_xlabel("parallelograms in the row, n")
    ax.set_ylabel("wall time per simulated second [s]")
    ax.set_title("rows of parallelograms through their change points")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def main(sizes=(5, 10, 20, 40, 80), t_end=20.0, routes=("recursive", "augmented"), methods=("dopri5", "dop853"),
         tols=(None,), implicit=("generalized_alpha", "bdf"), max_wall=300.0, name="parallelogram_row"):
    for route in routes:  # compile outside the measured runs
        measure(3, route, "dopri5", None, 0.1, None)
    cases = [(route, method, tol) for route in routes for method in methods for tol in tols]
    cases += [("recursive", method, tols[0]) for method in implicit]
    runs, rows = [], []
    for n in sizes:
        for route, method, tol in cases:
            fig = measure(n, route, method, tol, t_end, max_wall)
            runs.append({"n": n, "route": route, "method": method, "tol": tol, "t_end": t_end, **fig})
            rows.append(row_of(n, route, method, tol, fig, t_end))
            print(f"  {rows[-1]}", flush=True)
    print(f"\nrows of n parallelograms, {t_end:g} s simulated, projection; per simulated second (machine shared: "
          f"wall times are indicative, CPU times of this process less so; load {os.getloadavg()[0]:.1f} now)")
    print_table(("n", "route", "method", "tol", "wall [s]", "CPU [s]", "steps", "rejected", "evals/step",
                 "ms/eval", "max |dE/E|", "max split [rad/s]", "1e-6 met"), rows)
    growth = slopes(runs)
    if growth:
        print("\ngrowth with n (log-log slope from the smallest to the largest n)")
        print_table(("route", "method", "tol", "n from", "n to", "wall per simulated s", "wall per evaluation"),
                    growth)
    path = write_json(name, {"t_end": t_end, "runs": runs, "slopes": [list(line) for line in growth]})
    print(f"wrote {path}")
    figure = plot(runs, RESULTS / f"{name}.png")
    if figure is not None:
        print(f"wrote {figure}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5, 10, 20, 40, 80])
    parser.add_argument("--t-end", type=float, default=20.0)
    parser.add_argument("--routes", nargs="+", default=["recursive", "augmented"])
    parser.add_argument("--methods", nargs="+", default=["dopri5", "dop853"])
    parser.add_argument("--tols", nargs="+", type=float, default=[None],
                        help="rtol = atol of each run (default: rm.simulate's, rtol 1e-9, atol 1e-12)")
    parser.add_argument("--implicit", nargs="*", default=["generalized_alpha", "bdf"])
    parser.add_argument("--max-wall", type=float, default=300.0)
    parser.add_argument("--name", default="parallelogram_row", help="results benchmarks/results/NAME.json, .png")
    args = parser.parse_args()
    main(args.n, args.t_end, args.routes, args.methods, args.tols, args.implicit, args.max_wall, args.name)
