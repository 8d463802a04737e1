"""The cost of one bdf Newton iteration in forward-dynamics evaluations (issue 15), and what a step costs beside it.

    python3 benchmarks/bdf_iteration.py [--n 1000 10000 100000] [--rounds 15] [--block 0.03] [--t-end 2 2 0.2]
                                        [--run-repeats 3] [--name bdf_iteration]

Definition. One Newton iteration of ``_kernels.planar.bdf.integrate_bdf`` (tree, no loops) is the body of its iteration
loop: the accelerations of the iterate, the residual M qdd - Q by one inverse-dynamics pass
(``implicit.newton_residual``), the correction S^-1 R with the factors in hand (``implicit.newton_correction``:
``effective_apply``'s two sweeps), and the updates of d, y and the correction norm. It excludes what a step does
once whatever its iterations (predictor, error estimate and norm, the difference array's update and rescaling,
order selection, dense output, events, STALD: "per-step overhead") and the factorisation (``kinematics_pass`` +
``effective_factor``, made when c = h / gamma_k changes or the contraction is slow).

Method. On serial_chain(n) in its first mode (the hanging swing of benchmarks/bdf.py, a state an eighth of a period in),
compiled blocks repeat one piece ~``block`` seconds each: the forward dynamics as an explicit method pays it
(``integrators.system_rhs``: state load and the serial-chain forward-dynamics kernel), the bare forward-dynamics
kernel, one Newton iteration (the iteration body above, the kernels of the time loop called as it calls them:
repeated, it is Newton converging at the state), the residual alone, the correction alone, and one factorisation.
The blocks run interleaved, ``rounds`` times, timed by CPU time (``time.process_time``; the machine may be
shared); every figure is the median over rounds of the ratio to the forward-dynamics block of the same round.
Then whole ``simulate(method="bdf", max_order=2)`` runs of ``t_end`` (median CPU time of ``run_repeats``) are
split: iterations x iteration + factorisations x factorisation, the rest per accepted step (the per-step overhead,
with the run's start and its Python wrapping) in forward dynamics, and the whole run per iteration as
benchmarks/bdf.py counts it ("run/it"). This split is noisier than the blocks (a run's arrays share the caches with
whatever else the machine runs). Same for ``generalized_alpha`` at dt = (period of mode 1) / 200, which shares the
residual and correction (its iteration body differs only in its O(N) vector updates): its run's CPU time per
Newton iteration, with and without its factorisations.
Prints a table and writes benchmarks/results/NAME.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time

import numba
import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm
from recursive_mbd._kernels.planar.implicit import effective_factor, newton_correction, newton_residual
from recursive_mbd._kernels.planar.tree import forward_dynamics, kinematics_pass
from recursive_mbd._kernels.timeloops.integrators import system_rhs
from recursive_mbd.analysis import studies
from recursive_mbd.integrate.implicit import joint_spring_diagonals
from recursive_mbd.integrate.runs import RecursiveTimeLoop, _Inputs

AMPLITUDE = 1e-3  # [rad], as benchmarks/bdf.py
njit = numba.njit(cache=True, error_model="numpy")


@njit
def _rhs_block(inputs, key, system, t, y, dy, reps):
    status = 0
    for _ in range(reps):
        status |= system_rhs(inputs, key, system, t, y, dy)
    return status


@njit
def _fd_kernel_block(body_int, body_real, gravity, q, qd, tau, wrench, driven, ws, qdd, drive, reps):
    status = 0
    for _ in range(reps):
        status |= forward_dynamics(body_int, body_real, gravity, q, qd, tau, wrench, driven, ws, qdd, drive)
    return status


@njit
def _factor_block(system, c, j_diag, ia, uu, dinv, gcol, rvec, fsub, kb, dmat, reps):
    status = 0
    no_blocks = np.zeros((0, 3, 3))
    for _ in range(reps):
        kinematics_pass(system[0], system[1], system[11], system[12], system[14], True)
        status |= effective_factor(system[0], system[1], system[2], system[14], system[7], 1.0, c * c, j_diag,
                                   no_blocks, ia, uu, dinv, gcol, rvec, fsub, kb, dmat)
    return status


@njit
def _iteration_block(inputs, key, system, t_new, y_pred, psi, scale, d, y, c, factors, scratch, parts, reps):
    """``reps`` Newton iterations as the body of integrate_bdf's iteration loop does them (tree, no loops).

    parts: 0 the whole iteration, 1 the residual alone, 2 the correction alone."""
    uu, dinv, gcol, rvec = factors
    qdd, residual, tau_need, powers, ub, pa, vel, xfull, rhs_full, dx, lam, phi, jac, resp, gram, work_m = scratch
    free = system[5]
    nf = free.shape[0]
    n = y.shape[0]
    status = 0
    correction = 0.0
    for _ in range(reps):
        if parts != 2:
            for j in range(nf):
                qdd[j] = (psi[nf + j] + d[nf + j]) / c
            status |= newton_residual(inputs, key, system, t_new, y, qdd, lam, tau_need, residual, powers)
            res_max = 0.0
            for j in range(nf):
                res_max = max(res_max, abs(residual[j]))
            d[2 * nf] = c * powers[0] - psi[2 * nf]
            d[2 * nf + 1] = c * powers[1] - psi[2 * nf + 1]
            correction += res_max * 0.0
        if parts != 1:
            newton_correction(system[0], system[7], uu, dinv, gcol, rvec, free, residual, phi, jac, resp, gram,
                              1e-12, ub, pa, vel, xfull, rhs_full, dx, lam, work_m)
        if parts == 0:
            acc = 0.0
            for j in range(nf):
                change_q = -c * c * dx[j]
                d[nf + j] -= c * dx[j]
                d[j] += change_q
                acc += (change_q / scale[j]) ** 2 + (c * dx[j] / scale[nf + j]) ** 2
            for j in range(n):
                y[j] = y_pred[j] + d[j]
            correction += np.sqrt(acc / n)
    return status, correction


class IterationBench:
    """The compiled blocks of one chain at one state, each called with a repetition count; returns CPU seconds."""

    def __init__(self, n, rtol=1e-7, atol=1e-10):
        chain = rm.chains.serial_chain(n)
        omega, shapes = studies.chain_modes(chain, 1)
        q0 = AMPLITUDE * shapes[:, 0] / np.max(np.abs(shapes[:, 0]))
        phase = 0.25 * np.pi
        q = q0 * np.cos(phase)
        qd = -omega[0] * q0 * np.sin(phase)
        self.chain, self.q0, self.omega = chain, q0, omega
        inputs = _Inputs(chain, None, None)
        self.callback, self.key = inputs.callback()
        self.system = system = RecursiveTimeLoop(chain, inputs).system
        nq = nb = n
        self.y = np.concatenate((q, qd, [0.0, 0.0]))
        self.dy = np.empty_like(self.y)
        h = 2e-3  # a step of the swing's size (bdf.py: ~2 s / 400 steps at n = 1e3)
        self.c = c = h / 1.5  # order 2: gamma_2 = 3/2
        self.t = 0.1
        # the step's predictor and psi from the exact motion: the first iterate is near the solution
        qdd = -omega[0] ** 2 * q
        self.y_pred = self.y.copy()
        self.psi = np.zeros_like(self.y)
        self.psi[n:2 * n] = c * qdd * 0.999
        self.psi[:n] = c * qd - 0.0
        self.scale = atol + rtol * np.abs(self.y)
        self.d = np.zeros_like(self.y)
        self.y_iter = self.y.copy()
        j_stiff, j_damp = joint_spring_diagonals(system[0], system[3], system[4], nq)
        self.j_diag = c * c * j_stiff + c * j_damp
        ia, dinv, gcol = (np.zeros((nb, 3, 3)) for _ in range(3))
        uu = np.zeros((nb, 3, 6))  # U and the left factor U_L
        self.factor_args = (self.j_diag, ia, uu, dinv, gcol, np.zeros((nb, 2)), np.zeros((nb, 2)), np.zeros(nb),
                            np.zeros((3, 3)))
        self.factors = (uu, dinv, gcol, self.factor_args[5])
        self.scratch = (np.zeros(nq), np.zeros(nq), np.zeros(nq), np.zeros(2), np.zeros((nb, 3)),
                        np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros(nq), np.zeros(nq), np.zeros(nq), np.zeros(0),
                        np.zeros(0), np.zeros((0, nq)), np.zeros((0, nq)), np.zeros((0, 0)), np.zeros(0))
        # the factors at the state, as the time loop makes them
        system[11][:] = q
        system[12][:] = qd
        self.factor(1)
        self.fd_args = (system[0], system[1], system[2], q.copy(), qd.copy(), np.zeros(nq), np.zeros((0, 3)),
                        system[7], system[14], np.zeros(nq), np.zeros(nq))
        for piece in self.pieces().values():
            piece(1)

    def rhs(self, reps):
        return _rhs_block(self.callback, self.key, self.system, self.t, self.y, self.dy, reps)

    def fd_kernel(self, reps):
        return _fd_kernel_block(*self.fd_args, reps)

    def factor(self, reps):
        return _factor_block(self.system, self.c, *self.factor_args, reps)

    def iteration(self, reps, parts=0):
        return _iteration_block(self.callback, self.key, self.system, self.t, self.y_pred, self.psi, self.scale,
                                self.d, self.y_iter, self.c, self.factors, self.scratch, parts, reps)

    def pieces(self):
        return {"rhs": self.rhs, "fd_kernel": self.fd_kernel, "iteration": self.iteration,
                "residual": lambda reps: self.iteration(reps, 1), "correction": lambda reps: self.iteration(reps, 2),
                "factor": self.factor}


def _cpu(func, reps):
    start = time.process_time()
    func(reps)
    return (time.process_time() - start) / reps


def measure(bench, rounds, block):
    """Median over interleaved rounds of each piece's CPU time and of its ratio to the rhs of the same round."""
    pieces = bench.pieces()
    reps = {}
    for name, func in pieces.items():  # repetitions for ~block seconds each
        single = max(_cpu(func, 1), 1e-7)
        reps[name] = max(1, int(block / single))
        reps[name] = max(1, int(block / max(_cpu(func, reps[name]), 1e-9)))
    times = {name: [] for name in pieces}
    for _ in range(rounds):
        for name, func in pieces.items():
            times[name].append(_cpu(func, reps[name]))
    rhs = np.array(times["rhs"])
    return ({name: float(np.median(v)) for name, v in times.items()},
            {name: float(np.median(np.array(v) / rhs)) for name, v in times.items()})


def whole_run(bench, t_end, method, repeats=1, rtol=1e-7, atol=1e-10):
    """Median CPU time of ``repeats`` runs of the hanging swing from q0 at rest, and the last run's result."""
    zero = np.zeros(bench.chain.nq)
    t_eval = np.linspace(0.0, t_end, 41)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        if method == "bdf":
            res = rm.simulate(bench.chain, bench.q0, zero, t_end, method="bdf", rtol=rtol, atol=atol, t_eval=t_eval,
                              max_order=2)
        else:
            dt = 2.0 * np.pi / bench.omega[0] / 200.0
            res = rm.simulate(bench.chain, bench.q0, zero, t_end, method="generalized_alpha", dt=dt, every=10**9)
        times.append(time.process_time() - start)
    return float(np.median(times)), res


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--t-end", type=float, nargs="+", default=[2.0, 2.0, 0.2], help="one per n (or one)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--block", type=float, default=0.03, help="seconds per timed block")
    parser.add_argument("--run-repeats", type=int, default=3, help="whole runs per method (median CPU time)")
    parser.add_argument("--name", default="bdf_iteration")
    args = parser.parse_args()
    t_ends = args.t_end if len(args.t_end) == len(args.n) else [args.t_end[0]] * len(args.n)
    # compile (or load the cache of) the time loops on a short chain first
    small = IterationBench(8)
    whole_run(small, 1e-2, "bdf")
    whole_run(small, 1e-2, "generalized_alpha")
    rows = []
    for n, t_end in zip(args.n, t_ends, strict=True):
        bench = IterationBench(n)
        cpu, ratio = measure(bench, args.rounds, args.block)
        run_cpu, res = whole_run(bench, t_end, "bdf", args.run_repeats)
        iterations, factorizations, steps = res.newton_iterations, res.newton_factorizations, res.nsteps
        overhead = run_cpu - iterations * cpu["iteration"] - factorizations * cpu["factor"]
        ga_cpu, ga = whole_run(bench, t_end, "generalized_alpha", args.run_repeats)
        ga_iterations = ga.newton_iterations
        ga_rest = ga_cpu - ga.newton_factorizations * cpu["factor"]
        rows.append({"n": n, "rhs_us": 1e6 * cpu["rhs"], "cpu_s": cpu, "in_rhs": ratio,
                     "run_t_end": t_end, "run_cpu_s": run_cpu, "steps": steps, "iterations": iterations,
                     "factorizations": factorizations,
                     "run_per_iteration_in_rhs": run_cpu / iterations / cpu["rhs"],
                     "step_overhead_in_rhs": overhead / steps / cpu["rhs"],
                     "ga_cpu_s": ga_cpu, "ga_steps": ga.nsteps, "ga_iterations": ga_iterations,
                     "ga_factorizations": ga.newton_factorizations,
                     "ga_run_per_iteration_in_rhs": ga_cpu / ga_iterations / cpu["rhs"],
                     "ga_unfactored_per_iteration_in_rhs": ga_rest / ga_iterations / cpu["rhs"]})
        r = rows[-1]
        print(f"n = {n}: rhs {r['rhs_us']:.1f} us, iteration {ratio['iteration']:.2f} FD, bdf run {run_cpu:.2f} s "
              f"CPU ({steps} steps, {iterations} iterations, {factorizations} factorisations)", flush=True)
    print_table(["n", "FD [us]", "kernel", "iteration", "residual", "correction", "factor", "run/it",
                 "step ovh", "it/step", "GA run/it", "GA it-fact"],
                [[r["n"], f"{r['rhs_us']:.1f}", f"{r['in_rhs']['fd_kernel']:.2f}", f"{r['in_rhs']['iteration']:.2f}",
                  f"{r['in_rhs']['residual']:.2f}", f"{r['in_rhs']['correction']:.2f}",
                  f"{r['in_rhs']['factor']:.2f}", f"{r['run_per_iteration_in_rhs']:.2f}",
                  f"{r['step_overhead_in_rhs']:.2f}", f"{r['iterations'] / r['steps']:.2f}",
                  f"{r['ga_run_per_iteration_in_rhs']:.2f}", f"{r['ga_unfactored_per_iteration_in_rhs']:.2f}"]
                 for r in rows])
    print("(all in forward-dynamics evaluations = integrators.system_rhs, CPU time, medians over interleaved rounds;"
          " 'kernel': the bare forward_dynamics kernel; run/it: a whole bdf run's CPU time per Newton iteration; "
          "step ovh: per accepted step beyond its iterations and factorisations; GA it-fact: generalized_alpha's "
          "run per iteration less its factorisations)")
    path = write_json(args.name, {"rows": rows, "amplitude": AMPLITUDE, "rounds": args.rounds,
                                  "block_s": args.block})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
