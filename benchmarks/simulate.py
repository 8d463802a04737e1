"""Simulation throughput: serial_chain(N) released from the horizontal, numba time loop vs scipy's solve_ivp.

    python3 benchmarks/simulate.py [--n 1000] [--t-end 0.05]

Both integrate the same right-hand side with the same Dormand-Prince 5(4) pair and tolerances: ours runs the whole
loop in numba, scipy's RK45 calls rm.forward_dynamics from Python each stage. Prints steps/s, simulated seconds
per wall second, the speed-up, and writes benchmarks/results/simulate.json.
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


def run(n, t_end, rtol, atol):
    model = rm.chains.serial_chain(n)
    q0 = np.zeros(n)
    q0[0] = np.pi / 2
    qd0 = np.zeros(n)
    rm.simulate(model, q0, qd0, 1e-4, rtol=rtol, atol=atol)  # load the kernels outside the timing

    start = time.perf_counter()
    ours = rm.simulate(model, q0, qd0, t_end, rtol=rtol, atol=atol, t_eval=[t_end])
    wall_ours = time.perf_counter() - start

    qdd = np.empty(n)

    def rhs(_, y):
        return np.concatenate((y[n:], rm.forward_dynamics(model, y[:n], y[n:], out=qdd)))

    start = time.perf_counter()
    ref = solve_ivp(rhs, (0.0, t_end), np.concatenate((q0, qd0)), method="RK45", rtol=rtol, atol=atol)
    wall_scipy = time.perf_counter() - start
    kinetic, potential = ours.energy()
    total = kinetic + potential
    return dict(
        n=n, t_end=t_end, rtol=rtol, atol=atol,
        ours_wall_s=wall_ours, ours_steps=ours.nsteps, ours_nfev=ours.nfev,
        ours_steps_per_s=ours.nsteps / wall_ours, ours_sim_s_per_wall_s=t_end / wall_ours,
        scipy_wall_s=wall_scipy, scipy_steps=int(ref.t.size - 1), scipy_nfev=int(ref.nfev),
        scipy_steps_per_s=(ref.t.size - 1) / wall_scipy,
        speedup=wall_scipy / wall_ours,
        speedup_per_step=(ours.nsteps / wall_ours) / ((ref.t.size - 1) / wall_scipy),
        final_difference=float(np.max(np.abs(ref.y[:n, -1] - ours.q[-1]))),
        energy_error_over_mgL=float(abs(total[-1] - total[0]) / (9.81 * 1.0 * 1.0)),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--t-end", type=float, default=0.05)
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--atol", type=float, default=1e-10)
    args = parser.parse_args()
    records = [run(n, args.t_end, args.rtol, args.atol) for n in args.n]
    rows = [[r["n"], r["ours_steps"], f"{r['ours_steps_per_s']:,.0f}", f"{r['ours_sim_s_per_wall_s']:.3g}",
             r["scipy_steps"], f"{r['scipy_steps_per_s']:,.0f}", f"{r['speedup']:.1f}x",
             f"{r['speedup_per_step']:.1f}x", f"{r['final_difference']:.1e}", f"{r['energy_error_over_mgL']:.1e}"]
            for r in records]
    print(f"serial_chain(N) from the horizontal, {args.t_end} s, dopri5 rtol {args.rtol} atol {args.atol}")
    print_table(["N", "steps", "steps/s", "sim s/wall s", "scipy steps", "scipy steps/s", "speed-up",
                 "per step", "|q - q_scipy|", "|dE|/mgL"], rows)
    print(f"wrote {write_json('simulate', {'records': records})}")


if __name__ == "__main__":
    main()
