"""Integrator cost: steps/s and right-hand-side evaluations per method on serial chains over 10 s.

    python3 benchmarks/integrators.py [--n 100 1000] [--t-end 10] [--quick]

serial_chain(N) released from the horizontal (q1 = pi/2), every method in one run: dopri5 and dop853 at
rtol 1e-8, rk4 and implicit midpoint at dopri5's mean step, scipy's RK45 on the same right-hand side. Also
the cost of a tau callback: compiled (numba) versus plain Python, per evaluation.
Writes benchmarks/results/integrators.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time

import numba
import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm

RUNS = (
    ("dopri5", dict(rtol=1e-8, atol=1e-10)),
    ("dop853", dict(rtol=1e-8, atol=1e-10)),
    ("rk4", dict(dt=None)),
    ("implicit_midpoint", dict(dt=None)),
    ("scipy:RK45", dict(rtol=1e-8, atol=1e-10)),
)


def run_methods(n, t_end):
    model = rm.chains.serial_chain(n)
    q0 = np.zeros(n)
    q0[0] = np.pi / 2
    qd0 = np.zeros(n)
    ends_only = 10**9  # store t0 and t_end only: every step of a 1000-link chain would not fit in memory
    reference = rm.simulate(model, q0, qd0, t_end, method="dop853", rtol=1e-11, atol=1e-13, every=ends_only)
    # fixed-step methods get the mean step dopri5 takes: the whip near the vertical then shows what a fixed step
    # costs, or where it fails
    dt = t_end / rm.simulate(model, q0, qd0, t_end, rtol=1e-8, atol=1e-10, every=ends_only).nsteps
    records = []
    for method, defaults in RUNS:
        options = dict(defaults)
        if "dt" in options:
            options["dt"] = dt
        rm.simulate(model, q0, qd0, min(t_end, 10 * dt), method=method, **options)  # compile outside the timing
        start = time.perf_counter()
        try:
            res = rm.simulate(model, q0, qd0, t_end, method=method, every=ends_only, **options)
            wall = time.perf_counter() - start
            error = float(np.max(np.abs(res.q[-1] - reference.q[-1])))
            kinetic, potential = res.energy()
            drift = float(abs(kinetic[-1] + potential[-1] - kinetic[0] - potential[0]) / 9.81)
            records.append(dict(n=n, t_end=t_end, method=method, dt=options.get("dt"), wall_s=wall, steps=res.nsteps,
                                nfev=res.nfev, steps_per_s=res.nsteps / wall, nfev_per_s=res.nfev / wall,
                                error_vs_reference=error, energy_error_over_mgL=drift))
        except rm.SimulationError as err:
            records.append(dict(n=n, t_end=t_end, method=method, dt=options.get("dt"), failed=str(err).split(";")[0]))
        print(f"  N = {n} {method}: {records[-1].get('wall_s', 0.0):.1f} s", file=sys.stderr, flush=True)
    return records


@numba.njit
def compiled_tau(t, q, qd):
    return -1e-4 * qd


def python_tau(t, q, qd):
    return -1e-4 * qd


def callback_cost(n=20, t_end=2.0):
    model = rm.chains.serial_chain(n)
    q0 = np.zeros(n)
    q0[0] = 0.5
    cost = {}
    for label, tau in (("none", None), ("compiled", compiled_tau), ("python", python_tau)):
        rm.simulate(model, q0, np.zeros(n), 0.01, method="rk4", dt=1e-3, tau=tau)
        start = time.perf_counter()
        res = rm.simulate(model, q0, np.zeros(n), t_end, method="rk4", dt=1e-3, tau=tau, every=10**9)
        cost[label] = (time.perf_counter() - start) / res.nfev
    return {"n": n, "seconds_per_evaluation": cost,
            "python_extra_us": (cost["python"] - cost["none"]) * 1e6,
            "compiled_extra_us": (cost["compiled"] - cost["none"]) * 1e6}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--t-end", type=float, nargs="+", default=[10.0],
                        help="simulated time, one for all N or one per N")
    parser.add_argument("--quick", action="store_true", help="N = 100 over 1 s only")
    args = parser.parse_args()
    sizes, spans = ([100], [1.0]) if args.quick else (args.n, args.t_end)
    spans = spans * len(sizes) if len(spans) == 1 else spans
    if len(spans) != len(sizes):
        parser.error("give one --t-end for all N or one per N")
    records = [r for n, t_end in zip(sizes, spans, strict=True) for r in run_methods(n, t_end)]
    rows = []
    for r in records:
        if "failed" in r:
            rows.append([r["n"], r["t_end"], r["method"], "-", "-", "-", "-", "-", r["failed"]])
            continue
        dt = "-" if r["dt"] is None else f"{r['dt']:.2e}"
        rows.append([r["n"], r["t_end"], r["method"], dt, r["steps"], r["nfev"],
                     f"{r['steps_per_s']:,.0f}", f"{r['wall_s']:.2f}",
                     f"{r['error_vs_reference']:.1e} / {r['energy_error_over_mgL']:.1e}"])
    print("serial_chain(N) released from the horizontal")
    print_table(["N", "t_end", "method", "dt", "steps", "evaluations", "steps/s", "wall s", "|q - q_ref| / |dE|/mgL"],
                rows)
    callbacks = callback_cost()
    print(f"tau callback at N = {callbacks['n']}: compiled +{callbacks['compiled_extra_us']:.2f} us, "
          f"Python +{callbacks['python_extra_us']:.2f} us per evaluation")
    print(f"wrote {write_json('integrators', {'records': records, 'callbacks': callbacks})}")


if __name__ == "__main__":
    main()
