"""Hanging swing with method="bdf": wall time and error against the linear solution q0 cos(omega_1 t).

    python3 benchmarks/bdf.py [--n 10000 100000] [--t-end 10 1] [--rtol 1e-7] [--atol 1e-10] [--samples 41]
                              [--max-wall-time S] [--max-order 2] [--name bdf]

serial_chain(n) starts at rest in its first mode (studies.chain_modes), amplitude 1e-3 rad at the largest joint
angle, so nonlinear effects are about 1e-6 relative. Each run is simulated with method="bdf" (the whole time loop
compiled, _kernels/bdf.py) and sampled at ``samples`` times by its dense output; the error is max over samples and
joints of |q - q0 cos(omega_1 t)| / max|q0|. Wall and CPU time of the run are both given (the
machine may be shared). "it/FD": the Newton iterations' cost per iteration (the run's wall
time over its Newton iterations, filtered error estimates included) in forward-dynamics evaluations. The first,
short run (compilation) is not timed. ``hanging_swing_bdf`` is the function other benchmark scripts call. Prints a
table and writes benchmarks/results/bdf.json (or NAME.json). Peak RSS is that of the whole process.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import resource
import time

import numpy as np
from _common import median_time, print_table, write_json

import recursive_mbd as rm
from recursive_mbd.analysis import studies

AMPLITUDE = 1e-3  # [rad]


def hanging_swing_bdf(n, t_end, rtol=1e-7, atol=1e-10, samples=41, max_wall_time=None, max_order=5):
    """One bdf run of the hanging swing of serial_chain(n) over t_end [s]; a dict of its figures.

    A run stopped by ``max_wall_time`` is reported up to the time it reached ("t_reached")."""
    chain = rm.chains.serial_chain(n)
    start = time.perf_counter()
    omega, shapes = studies.chain_modes(chain, 1)
    modes_time = time.perf_counter() - start
    q0 = AMPLITUDE * shapes[:, 0] / np.max(np.abs(shapes[:, 0]))
    zero = np.zeros(chain.nq)
    # compile (or load numba's cache) on a short chain: the same kernels, and a warm-up of the long chain storing
    # every step (no t_eval) would set the peak RSS (1e5 links: 2.3 GB) instead of the run measured
    small = rm.chains.serial_chain(8)
    rm.simulate(small, np.full(8, 1e-3), np.zeros(8), 1e-2, method="bdf", rtol=rtol, atol=atol, max_order=max_order,
                t_eval=np.linspace(0.0, 1e-2, 3))
    t_eval = np.linspace(0.0, t_end, samples)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        res = rm.simulate(chain, q0, zero, t_end, method="bdf", rtol=rtol, atol=atol, t_eval=t_eval,
                          max_wall_time=max_wall_time, max_order=max_order)
    except rm.SimulationError as err:
        if err.result.status != "time_limit":
            raise
        res = err.result
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    fd_time = median_time(lambda: rm.forward_dynamics(chain, q0, zero), min_time=0.1, repeats=3)
    linear = np.cos(omega[0] * res.t)[:, None] * q0[None, :]
    error = float(np.max(np.abs(res.q - linear)) / np.max(np.abs(q0)))
    iterations = res.newton_iterations
    return {"n": n, "t_end": t_end, "max_order": max_order, "factorizations": res.newton_factorizations,
            "t_reached": float(res.t[-1]), "rtol": rtol, "atol": atol,
            "omega_1": float(omega[0]), "steps": res.nsteps,
            "rejected": res.nrejected, "newton_per_step": iterations / res.nsteps, "rhs_evaluations": res.nfev,
            "wall_s": wall, "cpu_s": cpu, "wall_per_simulated_s": wall / t_end,
            "ms_per_newton_iteration": 1e3 * wall / iterations,
            "forward_dynamics_ms": 1e3 * fd_time, "iteration_in_forward_dynamics": wall / iterations / fd_time,
            "max_rel_error": error, "chain_modes_s": modes_time,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--t-end", type=float, nargs="+", default=[10.0, 1.0], help="one per n (or one for all)")
    parser.add_argument("--rtol", type=float, default=1e-7)
    parser.add_argument("--atol", type=float, default=1e-10)
    parser.add_argument("--max-wall-time", type=float, default=None, help="stop each run after this many seconds")
    parser.add_argument("--samples", type=int, default=41)
    parser.add_argument("--max-order", type=int, default=2,
                        help="highest BDF order (5: found unstable on the way and capped at 2, with a warning)")
    parser.add_argument("--name", default="bdf", help="results file benchmarks/results/NAME.json")
    args = parser.parse_args()
    t_ends = args.t_end if len(args.t_end) == len(args.n) else [args.t_end[0]] * len(args.n)
    rows = []
    for n, t_end in zip(args.n, t_ends, strict=True):
        rows.append(hanging_swing_bdf(n, t_end, args.rtol, args.atol, args.samples, args.max_wall_time,
                                      args.max_order))
        row = rows[-1]
        print(f"n = {n}: reached t = {row['t_reached']:.3g} s of {t_end:g} in {row['wall_s']:.1f} s wall "
              f"({row['cpu_s']:.1f} s CPU), {row['steps']} steps, error {row['max_rel_error']:.2e}", flush=True)
    print_table(["n", "order", "t_end [s]", "reached [s]", "steps", "rejected", "Newton/step", "factorised",
                 "wall [s]", "CPU [s]",
                 "ms/iteration", "it/FD",
                 "max rel error", "peak RSS [MB]"],
                [[r["n"], r["max_order"], r["t_end"], f"{r['t_reached']:.3g}", r["steps"], r["rejected"],
                  f"{r['newton_per_step']:.2f}", r["factorizations"], f"{r['wall_s']:.1f}",
                  f"{r['cpu_s']:.1f}",
                  f"{r['ms_per_newton_iteration']:.2f}", f"{r['iteration_in_forward_dynamics']:.2f}",
                  f"{r['max_rel_error']:.2e}", f"{r['peak_rss_mb']:.0f}"] for r in rows])
    path = write_json(args.name, {"rows": rows, "amplitude": AMPLITUDE, "machine_loaded": True})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
