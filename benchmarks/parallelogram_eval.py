"""One evaluation of the loop layer on rows of parallelograms: CPU time of the constrained dynamics and of the
projection at fixed states, away from the change points and in their zone, against the row's length.

    python3 benchmarks/parallelogram_eval.py [--n 20 40 80 160] [--theta 1.0472 0.02 0.002] [--name NAME]

A row of n parallelograms (tests/test_singular.py) at the crank angle theta [rad] (0: the change point, where every
bar is collinear; 1.0472 is far from it, 0.02 and 0.002 lie in the change point's zone for the larger n), its
state closed on the loops by ``project``. Per n and theta, the median over 5 rounds of the CPU time per call
(``time.process_time``: the machine is shared, and wall time there measures the other processes) of the time
loops' kernels: ``loops.constrained_dynamics`` (with the change-point treatment: in the zone it searches the
branch), ``loops.project`` (positions by Gauss-Newton, then velocities), and, for scale, ``loop_constraints`` and the
tree's ``forward_dynamics``; then the log-log slopes from the smallest to the largest n. Kernels only: the same
calls run on the code before and after a change of the loop layer (PYTHONPATH). Writes
benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread, before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys
import time
from pathlib import Path

import numpy as np
from _common import command_line, interleaved_samples, print_table, write_json

from recursive_mbd._kernels.planar import loops as kernels
from recursive_mbd._kernels.planar.tree import forward_dynamics
from recursive_mbd.dynamics.loops import FILTER_RCOND, POSITION_RCOND, loop_workspace, project

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_singular import parallelograms  # noqa: E402  (the model of the tests, one definition)

ROUNDS = 5


def cpu_per_call(func, min_time=0.05):
    """Median over ROUNDS rounds of the CPU time of one call [s], each round long enough to last ~min_time."""
    return float(np.median(interleaved_samples({"call": func}, ROUNDS, min_time, clock=time.process_time)["call"]))


def measure(n, theta):
    """{kernel: CPU seconds per call} for a row of n at crank angle theta."""
    model, q0, qd0 = parallelograms(n)
    q0 = np.r_[np.full(n + 1, theta), np.full(n, -theta)]
    q, qd, _ = project(model, q0, qd0)
    ws, lw = loop_workspace(model)
    nq = model.nq
    tau, wrench, qdd = np.zeros(nq), np.zeros((model.nbodies, 3)), np.zeros(nq)
    branch = (kernels.BRANCH_ZONE, 1e-12, POSITION_RCOND)  # the time loops' change-point treatment
    loop_args = (model.body_int, model.body_real, model.loop_int, model.loop_real)

    state = (ws.ws, ws.com, lw.acc)  # the workspaces the kernels share
    rows = (lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights)

    def constraints():
        kernels.loop_constraints(*loop_args, q, qd, *state, *rows)

    def tree():
        forward_dynamics(model.body_int, model.body_real, model.gravity, q, qd, tau, wrench, ws.no_driven, ws.ws, qdd,
                         ws.no_drive)

    def dynamics():
        kernels.constrained_dynamics(model.body_int, model.body_real, model.gravity, *loop_args[2:], q, qd, tau, wrench,
                                     ws.no_driven, *state, qdd, ws.no_drive, *rows, lw.resp, lw.no_resp_drive, ws.zeros,
                                     lw.stab, FILTER_RCOND, lw.lam, lw.info, branch)

    def projection():
        kernels.project(*loop_args, q.copy(), qd.copy(), ws.no_driven, *state, *rows, lw.resp, lw.no_resp_drive,
                        ws.zeros, np.zeros(2), 1e-12, 20, POSITION_RCOND, FILTER_RCOND, 1e-9, branch)

    return {
        "loop_constraints": cpu_per_call(constraints),
        "forward_dynamics": cpu_per_call(tree),
        "constrained_dynamics": cpu_per_call(dynamics),
        "project": cpu_per_call(projection),
    }


def main(sizes, thetas, name):
    runs = []
    for theta in thetas:
        figures = {n: measure(n, theta) for n in sizes}
        for n in sizes:
            runs.append({"n": n, "theta": theta, **figures[n]})
        keys = list(figures[sizes[0]])
        rows = []
        for key in keys:
            values = [figures[n][key] for n in sizes]
            slope = np.log(values[-1] / values[0]) / np.log(sizes[-1] / sizes[0]) if len(sizes) > 1 else np.nan
            rows.append((key, *(f"{1e6 * v:.1f}" for v in values), f"{slope:.2f}"))
        print(f"\ncrank angle {theta:g} rad: CPU microseconds per call (median of {ROUNDS} rounds)")
        print_table(("kernel", *(f"n = {n}" for n in sizes), "slope"), rows)
    print(f"wrote {write_json(name, {'rounds': ROUNDS, 'runs': runs})}")


if __name__ == "__main__":
    parser = command_line(__doc__, "parallelogram_eval")
    parser.add_argument("--n", type=int, nargs="+", default=[20, 40, 80, 160])
    parser.add_argument("--theta", type=float, nargs="+", default=[1.0472, 0.02, 0.002])
    args = parser.parse_args()
    main(args.n, args.theta, args.name)
