"""Hanging swing with generalised-alpha: wall time and error against the linear solution q0 cos(omega_1 t).

    python3 benchmarks/implicit.py [--n 1000 10000] [--t-end 1.0] [--steps-per-second 250] [--rho-inf 1.0]
                                   [--every 5] [--name implicit]

serial_chain(n) starts at rest in its first mode (studies.chain_modes), amplitude 1e-3 rad at the largest joint
angle, so nonlinear effects are about 1e-6 relative. Each run is simulated with method="generalized_alpha" (a
Python loop around the O(N) kernels, recursive_mbd.implicit); the error is max over samples and joints of
|q - q0 cos(omega_1 t)| / max|q0|. "it / FD": one Newton iteration (inverse dynamics + solve_effective, timed
alone) in forward-dynamics evaluations. The first, short call (compilation) is timed apart. Prints a table and writes
benchmarks/results/implicit.json (or NAME.json).
"""

import argparse
import time

import numpy as np
from _common import median_time, print_table, write_json

import recursive_mbd as rm
from recursive_mbd import studies

AMPLITUDE = 1e-3  # [rad]


def hanging_swing(n, t_end, dt, rho_inf, every):
    chain = rm.chains.serial_chain(n)
    start = time.perf_counter()
    omega, shapes = studies.chain_modes(chain, 1)
    modes_time = time.perf_counter() - start
    q0 = AMPLITUDE * shapes[:, 0] / np.max(np.abs(shapes[:, 0]))
    zero = np.zeros(chain.nq)
    rm.simulate(chain, q0, zero, 2 * dt, method="generalized_alpha", dt=dt, rho_inf=rho_inf)  # compile, warm up
    start = time.perf_counter()
    res = rm.simulate(chain, q0, zero, t_end, method="generalized_alpha", dt=dt, rho_inf=rho_inf, every=every)
    wall = time.perf_counter() - start
    # one Newton iteration (a residual by inverse dynamics + solve_effective) against one forward dynamics
    qdd = np.zeros(chain.nq)
    fd_time = median_time(lambda: rm.forward_dynamics(chain, q0, zero))
    iteration_time = median_time(lambda: rm.solve_effective(chain, q0, zero, 1.0, dt / 2, dt * dt / 4,
                                                            rm.inverse_dynamics(chain, q0, zero, qdd)))
    linear = np.cos(omega[0] * res.t)[:, None] * q0[None, :]
    error = float(np.max(np.abs(res.q - linear)) / np.max(np.abs(q0)))
    return {"n": n, "t_end": t_end, "dt": dt, "rho_inf": rho_inf, "omega_1": float(omega[0]),
            "steps": res.nsteps, "newton_per_step": res.newton_iterations / res.nsteps,
            "residual_evaluations": res.nfev, "wall_s": wall, "wall_per_simulated_s": wall / t_end,
            "ms_per_newton_iteration": 1e3 * wall / res.newton_iterations, "max_rel_error": error,
            "chain_modes_s": modes_time, "every": every, "forward_dynamics_ms": 1e3 * fd_time,
            "newton_iteration_ms": 1e3 * iteration_time, "iteration_in_forward_dynamics": iteration_time / fd_time}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--steps-per-second", type=float, default=250.0)
    parser.add_argument("--rho-inf", type=float, default=1.0)
    parser.add_argument("--name", default="implicit", help="results file benchmarks/results/NAME.json")
    parser.add_argument("--every", type=int, default=5, help="store (and compare) every k-th step")
    args = parser.parse_args()
    rows = [hanging_swing(n, args.t_end, 1.0 / args.steps_per_second, args.rho_inf, args.every) for n in args.n]
    print("hanging swing, generalized_alpha (machine shared and loaded: times are indicative)")
    print_table(["N", "t_end [s]", "dt [s]", "rho_inf", "omega_1", "steps", "Newton/step", "wall [s]",
                 "ms/Newton it", "it / FD", "max rel error"],
                [[r["n"], r["t_end"], f"{r['dt']:.3g}", r["rho_inf"], f"{r['omega_1']:.4f}", r["steps"],
                  f"{r['newton_per_step']:.2f}", f"{r['wall_s']:.2f}", f"{r['ms_per_newton_iteration']:.2f}",
                  f"{r['iteration_in_forward_dynamics']:.2f}", f"{r['max_rel_error']:.2e}"] for r in rows])
    path = write_json(args.name, {"amplitude": AMPLITUDE, "runs": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
