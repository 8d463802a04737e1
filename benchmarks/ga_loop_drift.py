"""Constraint drift of generalized_alpha on closed loops: position (phi) and velocity (J qd) level.

    python3 benchmarks/ga_loop_drift.py [--t-end 10] [--dts 0.004 0.002 0.001]

The four-bar of ``rm.models.four_bar`` started at crank rate 2 rad/s (consistent state by ``loops.project``),
integrated over ``t_end`` seconds at each dt with rho_inf = 0.8 and 1.0. At every step: max |phi(q)| [m] and
max |J(q) qd| [m/s] from ``loops.constraints`` (independent of the integrator), and the crank angle error against
dop853 at rtol 1e-12 at t_end; then the convergence order (errors of q and qd at t = 1 s as dt halves). Prints
the tables; writes benchmarks/results/ga_loop_drift.json.
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

import recursive_mbd as rm


def main(t_end=10.0, dts=(4e-3, 2e-3, 1e-3)):
    model, q0 = rm.models.four_bar()
    q, qd, _ = rm.loops.project(model, q0, np.array([2.0, 0.0, 0.0]))
    ref = rm.simulate(model, q, qd, t_end, method="dop853", rtol=1e-12, atol=1e-12)
    rows, records = [], []
    for rho_inf in (0.8, 1.0):
        for dt in dts:
            start = time.perf_counter()
            failed = None
            try:
                res = rm.simulate(model, q, qd, t_end, method="generalized_alpha", dt=dt, rho_inf=rho_inf)
            except rm.SimulationError as err:  # reported in the table: the samples up to the failure
                res, failed = err.result, err.t
            wall = time.perf_counter() - start
            phi = np.zeros(res.t.size)
            velocity = np.zeros(res.t.size)
            for k, (qk, qdk) in enumerate(zip(res.q, res.qd, strict=True)):
                residual, rate, _, _ = rm.loops.constraints(model, qk, qdk)
                phi[k] = np.abs(residual).max()
                velocity[k] = np.abs(rate).max()
            error = float(np.abs(res.q[-1] - ref.q[-1]).max()) if failed is None else np.nan
            record = {"rho_inf": rho_inf, "dt": dt, "max_phi": float(phi.max()), "max_Jqd": float(velocity.max()),
                      "Jqd_last": float(velocity[-1]), "error_q_end": error,
                      "newton_per_step": (res.newton_iterations / res.nsteps if failed is None else np.nan),
                      "failed_at": failed, "wall_s": wall}
            records.append(record)
            rows.append([rho_inf, f"{dt:g}", f"{phi.max():.2e}", f"{velocity.max():.2e}", f"{velocity[-1]:.2e}",
                         f"{error:.2e}" if failed is None else f"failed t={failed:.4g}",
                         f"{record['newton_per_step']:.2f}", f"{wall:.2f}"])
    print(f"four-bar, crank rate 2 rad/s, {t_end:g} s (dop853 rtol 1e-12 reference)")
    print_table(["rho_inf", "dt", "max|phi| [m]", "max|J qd| [m/s]", "|J qd| at end", "q error at end",
                 "Newton/step", "wall [s]"], rows)
    order = convergence_order(model, q, qd)
    path = write_json("ga_loop_drift", {"t_end": t_end, "runs": records, "order_at_1s": order})
    print(f"wrote {path}")


def convergence_order(model, q, qd, t_end=1.0, dts=(4e-3, 2e-3, 1e-3, 5e-4)):
    """Max |q - q_ref| and |qd - qd_ref| at t_end against dop853 (rtol 1e-12) and their ratios as dt halves."""
    ref = rm.simulate(model, q, qd, t_end, method="dop853", rtol=1e-12, atol=1e-13)
    rows, out = [], {}
    for rho_inf in (0.8, 1.0):
        errors = []
        for dt in dts:
            res = rm.simulate(model, q, qd, t_end, method="generalized_alpha", dt=dt, rho_inf=rho_inf)
            errors.append((float(np.abs(res.q[-1] - ref.q[-1]).max()), float(np.abs(res.qd[-1] - ref.qd[-1]).max())))
        out[str(rho_inf)] = {"dt": list(dts), "errors_q_qd": errors}
        for k, dt in enumerate(dts):
            ratio = "" if k == 0 else f"{errors[k - 1][0] / errors[k][0]:.2f} / {errors[k - 1][1] / errors[k][1]:.2f}"
            rows.append([rho_inf, f"{dt:g}", f"{errors[k][0]:.3e}", f"{errors[k][1]:.3e}", ratio])
    print(f"\norder: error at t = {t_end:g} s against dop853")
    print_table(["rho_inf", "dt", "q error", "qd error", "ratio q / qd"], rows)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-end", type=float, default=10.0)
    parser.add_argument("--dts", type=float, nargs="+", default=[4e-3, 2e-3, 1e-3])
    args = parser.parse_args()
    main(args.t_end, tuple(args.dts))
