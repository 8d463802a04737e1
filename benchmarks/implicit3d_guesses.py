"""Newton's corrections a step of generalized_alpha in absolute coordinates, by first guess: every correction logged.

The chains of ``benchmarks/implicit3d.py`` (N slender spherical links, 1 m and 1 kg in all, tilted and pushed
sideways), dt = 0.01 s: at every step the first ``--log`` corrections of Newton's iteration from the step's first
guess are logged (the kernel run on copies with newton_tol = 0, one iteration at a time; each correction apart for
the centres of mass and the rotations, scaled as the kernel's convergence test scales them), then the step is taken
as the run takes it. Printed: iterations a step of the run, the median first, second and third corrections, the
median K = e_(k+1) / e_k^2 part by part (quadratic convergence), and the acceptance rule of ``kernels.newton_step``
(without its round-off probe) replayed on the logs at newton_tol = 1e-12 and 1e-10: iterations a step and the
accepted steps whose next logged correction exceeds the tolerance. ``--guess mean``: the mean-velocity guess
alone (``kernels.predict``), the first guess before ``kernels.first_guess``.

    python3 benchmarks/implicit3d_guesses.py [--guess run|mean] [--cases TILT:N:RHO_INF ...] [--log K]

Results in benchmarks/results/implicit3d_guesses.json. Measured (the default cases, one process each guess, the
shared 2-core machine at a load of 9 to 16; the counts do not depend on the load):

    guess  rho_inf  N     tilt   iter/step  e1 median  e2 median  e3 median  iter/step at tol 1e-10
    mean   0.9      100   0.3    3.97       9.0e-2     1.1e-3     5.8e-7     3.55
    run    0.9      100   0.3    3.86       6.2e-2     4.7e-4     1.2e-7     3.46
    mean   0.5      100   0.3    3.26       7.9e-2     2.6e-4     1.5e-8     3.09
    run    0.5      100   0.3    3.11       5.5e-2     1.2e-4     4.9e-9     2.99
    mean   0.5      1000  0.3    3.45       8.0e-2     4.4e-4     4.3e-8     3.29
    run    0.5      1000  0.3    3.22       5.5e-2     1.2e-4     7.2e-9     3.13
    mean   0.5      100   0.5    3.43       1.2e-1     4.9e-4     1.1e-7     3.21
    run    0.5      100   0.5    3.22       9.5e-2     3.1e-4     5.4e-8     3.10
    mean   0.5      1000  0.5    3.73       1.2e-1     8.7e-4     3.3e-7     3.41
    run    0.5      1000  0.5    3.50       9.3e-2     3.8e-4     9.2e-8     3.24
    mean   0.9      1000  1e-3   2.01       2.6e-4     1.3e-8     4.3e-14    2.00
    run    0.9      1000  1e-3   2.00       2.0e-4     6.6e-9     4.3e-14    2.00

(e_k in m/s, the largest of the centres of mass' and the rotations' parts; ``augmented3d_implicit``, "First guess",
says why the count falls by less than the first correction). Accepted steps whose next correction exceeds 1e-12: 1
and 5 on 1000 links at 0.3 and 0.5 rad with either guess (with the mean velocity each a stall at the round-off of
the chain's sums, 1.2e-12 to 5e-12, which no iteration reduces and the kernel's round-off probe accepts too), none
elsewhere; none at 1e-10.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import command_line, print_table, write_json  # noqa: E402
from spatial_simulate import hanging_chain  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd._kernels.augmented import implicit3d as kernels  # noqa: E402
from recursive_mbd.errors import SimulationError  # noqa: E402

DT = 0.01
CASES = ["0.3:100:0.9", "0.3:100:0.5", "0.3:1000:0.5", "0.5:100:0.5", "0.5:1000:0.5", "0.001:1000:0.9"]


def logged_run(n, tilt, rho_inf, t_end, count):
    """(result or the failed run's, failure message, steps): each step a dict of the iterations it took and its first
    ``count`` corrections [(centres of mass, rotations)]."""
    original = kernels.newton_step
    steps = []

    def logged(*args):
        vdot, lam, coef, gyration = args[14].copy(), args[15].copy(), args[10], args[11]
        scale = max(coef[5], coef[6])
        parts = []
        for _ in range(count):
            before = vdot.copy()
            original(*args[:12], 0.0, 1, vdot, lam, *args[16:])
            change = vdot - before
            com = scale * np.abs(change[:, :3]).max()
            rot = scale * (np.abs(change[:, 3:]) * gyration[:, None]).max()
            if not np.isfinite(com + rot):
                break
            parts.append((float(com), float(rot)))
        status = original(*args)
        steps.append({"taken": int(args[-2][0]), "parts": parts})
        return status

    kernels.newton_step = logged
    try:
        model, q0, v0 = hanging_chain(n, tilt)
        try:
            result = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", formulation="augmented", dt=DT,
                                 rho_inf=rho_inf, every=10**9)
            failure = ""
        except SimulationError as error:
            result, failure = error.result, str(error)[:100]
    finally:
        kernels.newton_step = original
    return result, failure, steps


def predicted(now, before):
    """``kernels.predicted_correction`` of the parts now and before."""
    out = 0.0
    for a, b in zip(now, before, strict=True):
        if a > 0.0:
            theta = a / b if b > 0.0 else 1.0
            out = max(out, theta * theta * a if theta < 0.5 else a)
    return out


def accepted_after(parts, k, tol):
    """Whether ``kernels.newton_step`` accepts after correction k (0-based) of the logged parts (its round-off
    probe left out: a stall within 100 tol accepts)."""
    c = max(parts[k])
    if c <= tol:
        return True
    if k == 0:
        return False
    theta = c / max(parts[k - 1])
    return ((theta < 1.0 and theta / (1.0 - theta) * c <= tol)
            or kernels.QUADRATIC_SAFETY * predicted(parts[k], parts[k - 1]) <= tol
            or (theta > 0.5 and c <= 100.0 * tol))


def replay(steps, tol):
    """(iterations a step, accepted steps whose next logged correction exceeds tol) of the rule at tol."""
    taken, unsafe = [], 0
    for step in steps:
        parts = step["parts"]
        k = next((k for k in range(len(parts)) if accepted_after(parts, k, tol)), None)
        if k is None:
            continue
        taken.append(k + 1)
        unsafe += k + 1 < len(parts) and max(parts[k + 1]) > tol
    return float(np.mean(taken)), int(unsafe)


def main():
    parser = command_line(__doc__, "implicit3d_guesses")
    parser.add_argument("--guess", choices=["run", "mean"], default="run",
                        help="the run's first guess (kernels.first_guess) or the mean velocity alone")
    parser.add_argument("--cases", nargs="+", default=CASES, help="TILT:N:RHO_INF")
    parser.add_argument("--log", type=int, default=6, help="corrections logged a step")
    parser.add_argument("--t-end", type=float, default=1.0)
    args = parser.parse_args()
    if args.guess == "mean":
        kernels.first_guess = lambda zb, acc, vdot, before, rate, coef, history, out: (
            kernels.predict(zb, acc, vdot, rate, coef, out) or 0)
    rows = []
    for case in args.cases:
        tilt, n, rho_inf = case.split(":")
        result, failure, steps = logged_run(int(n), float(tilt), float(rho_inf), args.t_end, args.log)
        full = [s["parts"] for s in steps if len(s["parts"]) >= 3]
        medians = [float(np.median([max(p[k]) for p in full])) for k in range(3)]
        k_parts = [[p[k + 1][j] / p[k][j] ** 2 for p in full if p[k][j] > 0.0 and p[k + 1][j] > 1e-11]
                   for k in range(2) for j in range(2)]
        rows.append({"case": case, "guess": args.guess, "reached": result.nsteps * DT, "failure": failure,
                     "iterations_per_step": result.newton_iterations / max(result.nsteps, 1),
                     "split_steps": result.newton_split_steps, "median_corrections": medians,
                     "median_K": [float(np.median(k)) if k else None for k in k_parts],
                     "replay_1e-12": replay(steps, 1e-12), "replay_1e-10": replay(steps, 1e-10)})
    print_table(["case", "guess", "reached", "iter/step", "e1", "e2", "e3", "K12 com/rot", "K23 com/rot",
                 "replay 1e-12 (unsafe)", "replay 1e-10 (unsafe)", "failure"],
                [[r["case"], r["guess"], f"{r['reached']:.2f}", f"{r['iterations_per_step']:.2f}",
                  *(f"{e:.1e}" for e in r["median_corrections"]),
                  "/".join("-" if k is None else f"{k:.2g}" for k in r["median_K"][:2]),
                  "/".join("-" if k is None else f"{k:.2g}" for k in r["median_K"][2:]),
                  f"{r['replay_1e-12'][0]:.2f} ({r['replay_1e-12'][1]})",
                  f"{r['replay_1e-10'][0]:.2f} ({r['replay_1e-10'][1]})", r["failure"][:40]] for r in rows])
    print(f"wrote {write_json(args.name + '_' + args.guess, {'dt': DT, 'rows': rows})}")


if __name__ == "__main__":
    main()
