"""One evaluation of the loop layer on rows of parallelograms: CPU time of the constrained dynamics and of the
projection at fixed states, away from the change points and in their zone, against the row's length.

    python3 benchmarks/parallelogram_eval.py [--n 20 40 80 160] [--theta 1.0472 0.02 0.002] [--name NAME]
                                             [--baseline DIR [--baseline-cache DIR]]

A row of n parallelograms (tests/test_singular.py) at the crank angle theta [rad] (0: the change point, where every
bar is collinear; 1.0472 is far from it, 0.02 and 0.002 lie in the change point's zone for the larger n), its
state closed on the loops by ``project``. Per n and theta, the median over 5 rounds of the CPU time per call
(``time.process_time``: the machine is shared, and wall time there measures the other processes) of the time
loops' kernels: ``loops.constrained_dynamics`` (with the change-point treatment: in the zone it searches the
branch), ``loops.project`` (positions by Gauss-Newton, then velocities), and, for scale, ``loop_constraints`` and the
tree's ``forward_dynamics``; then the log-log slopes from the smallest to the largest n. Kernels only.

With --baseline DIR (a checkout of the code before a change of the loop layer) every (theta, n) is measured in two
fresh processes, one importing recursive_mbd from DIR (its numba cache in --baseline-cache, when given) and one
from this checkout, one after the other so that the machine's load hits both alike; the table then shows before,
after and their ratio. The kernels' arguments follow the code: the loops' structure (``loop_pattern``) is passed
where the loop workspace keeps one. Writes benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread, before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import inspect
import json
import subprocess
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
    # the loops' structure where the code keeps it once per model (the code before that built it in each call)
    structure = (lw.pattern,) if hasattr(lw, "pattern") else ()
    loop_args = (model.body_int, model.body_real, model.loop_int, model.loop_real)
    kernel_args = loop_args + structure

    # the sparse KKT path's arrays where the projection takes them (empty for a row; the code before took none)
    sparse = tuple(lw.sparse) if "sparse_ints" in inspect.signature(kernels.project.py_func).parameters else ()
    state = (ws.ws, ws.com, lw.acc)  # the workspaces the kernels share
    rows = (lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights)

    def constraints():
        kernels.loop_constraints(*loop_args, q, qd, *state, *rows)

    def tree():
        forward_dynamics(
            model.body_int, model.body_real, model.gravity, q, qd, tau, wrench, ws.no_driven, ws.ws, qdd, ws.no_drive
        )

    def dynamics():
        kernels.constrained_dynamics(
            model.body_int,
            model.body_real,
            model.gravity,
            *kernel_args[2:],
            q,
            qd,
            tau,
            wrench,
            ws.no_driven,
            *state,
            qdd,
            ws.no_drive,
            *rows,
            lw.resp,
            lw.no_resp_drive,
            ws.zeros,
            lw.stab,
            FILTER_RCOND,
            lw.lam,
            lw.info,
            branch,
        )

    def projection():
        kernels.project(
            *kernel_args,
            q.copy(),
            qd.copy(),
            ws.no_driven,
            *state,
            *rows,
            lw.resp,
            lw.no_resp_drive,
            ws.zeros,
            np.zeros(2),
            1e-12,
            20,
            POSITION_RCOND,
            FILTER_RCOND,
            1e-9,
            branch,
            *sparse,
        )

    return {
        "loop_constraints": cpu_per_call(constraints),
        "forward_dynamics": cpu_per_call(tree),
        "constrained_dynamics": cpu_per_call(dynamics),
        "project": cpu_per_call(projection),
    }


def measure_in_process(n, theta, path, cache):
    """``measure`` in a fresh process importing recursive_mbd from ``path`` (numba cache ``cache``, or the
    environment's)."""
    env = dict(os.environ, PYTHONPATH=str(path))
    if cache:
        env["RECURSIVE_MBD_CACHE_DIR"] = str(cache)
    out = subprocess.run(
        [sys.executable, __file__, "--worker", "--n", str(n), "--theta", str(theta)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


def main(sizes, thetas, name, baseline=None, baseline_cache=None):
    here = Path(__file__).resolve().parent.parent
    runs = []
    for theta in thetas:
        figures, before = {}, {}
        for n in sizes:
            if baseline:
                before[n] = measure_in_process(n, theta, baseline, baseline_cache)
                figures[n] = measure_in_process(n, theta, here, None)
            else:
                figures[n] = measure(n, theta)
            runs.append(
                {"n": n, "theta": theta, **figures[n], **{f"before_{k}": v for k, v in before.get(n, {}).items()}}
            )
        keys = list(figures[sizes[0]])
        rows = []
        for key in keys:
            values = [figures[n][key] for n in sizes]
            slope = np.log(values[-1] / values[0]) / np.log(sizes[-1] / sizes[0]) if len(sizes) > 1 else np.nan
            if baseline:
                old = [before[n][key] for n in sizes]
                slope_old = np.log(old[-1] / old[0]) / np.log(sizes[-1] / sizes[0]) if len(sizes) > 1 else np.nan
                cells = (f"{1e6 * b:.1f} / {1e6 * a:.1f} ({a / b:.2f})" for b, a in zip(old, values, strict=True))
                rows.append((key, *cells, f"{slope_old:.2f} / {slope:.2f}"))
            else:
                rows.append((key, *(f"{1e6 * v:.1f}" for v in values), f"{slope:.2f}"))
        what = "before / after (after / before)" if baseline else "CPU microseconds"
        print(f"\ncrank angle {theta:g} rad: CPU microseconds per call, {what} (median of {ROUNDS} rounds)")
        print_table(("kernel", *(f"n = {n}" for n in sizes), "slope"), rows)
    payload = {"rounds": ROUNDS, "runs": runs, "baseline": str(baseline) if baseline else None}
    print(f"wrote {write_json(name, payload)}")


if __name__ == "__main__":
    parser = command_line(__doc__, "parallelogram_eval")
    parser.add_argument("--n", type=int, nargs="+", default=[20, 40, 80, 160])
    parser.add_argument("--theta", type=float, nargs="+", default=[1.0472, 0.02, 0.002])
    parser.add_argument("--baseline", help="a checkout of the code before the change, measured alongside")
    parser.add_argument("--baseline-cache", help="the numba cache folder of the baseline's processes")
    parser.add_argument("--worker", action="store_true", help="internal: measure the first n and theta, print JSON")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.n[0], args.theta[0])))
    else:
        main(args.n, args.theta, args.name, args.baseline, args.baseline_cache)
