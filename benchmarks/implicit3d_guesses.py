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

``--trace``: the run's iterations a step over time (means of 10 steps) and its steps of 4 or more iterations, each
correction with the body where it is largest. ``--alternatives``: other first guesses replayed from every step's
start (the step then taken as the run takes it, so the guesses are compared on the same steps): the constant
acceleration, the mean velocity, the accelerations extrapolated linearly, the same with an oscillation damped by
rho_inf a step taken out (``alternatives``), the constant acceleration with the step's converged multipliers (an
exact lambda), and the constant acceleration and the step's own choice with the joints' points closed
(``joints_closed``); each with the acceptance rule replayed at newton_tol = 1e-10 (a log the rule does not accept
counts as one iteration more), then two bounds: the best of these guesses at each step, and the run's guess with an
exact acceptance (after the first correction whose successor is <= the tolerance).

``--close-joints``: the runs take their guess with the joints' points closed.

    python3 benchmarks/implicit3d_guesses.py [--guess run|mean] [--cases TILT:N:RHO_INF ...] [--log K]
        [--alternatives] [--trace] [--close-joints]

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

Where the iterations above 3 a step go, and what first guesses and acceptance can take back (``--cases 0.3:100:0.5
0.5:100:0.5 0.3:1000:0.5 0.5:1000:0.5 0.3:100:0.7 0.5:100:0.7 0.3:1000:0.7 0.5:1000:0.7 --alternatives --trace
--log 7``, the defaults of the library, newton_tol = 1e-10; iterations a step, the run's and replayed):

    tilt:N:rho_inf  run    constant  mean vel.  linear  rho-aware  exact lam  closed  step's closed  best  exact acc.
    0.3:100:0.5     2.89   2.89      3.09       2.90    2.96       2.89       2.88    2.89           2.88  2.62
    0.5:100:0.5     3.00   2.98      3.21       3.00    3.03       2.94       2.96    2.98           2.93  2.80
    0.3:1000:0.5    3.05   3.07      3.29       3.12    3.05       3.03       3.06    3.03           2.99  2.82
    0.5:1000:0.5    3.18   3.23      3.41       3.32    3.22       3.14       3.10    3.11           3.03  3.10
    0.3:100:0.7     3.03   3.00      3.17       3.01    3.00       3.00       3.00    3.04           3.00  3.00
    0.5:100:0.7     3.14   3.05      3.39       3.12    3.08       3.01       3.06    3.16           3.00  3.05
    0.3:1000:0.7    3.41   3.52      3.53       3.67    3.44       3.32       3.39    3.36           3.23  3.35
    0.5:1000:0.7    3.95   4.00      3.92       4.44    3.75       3.78       3.88    3.76           3.48  3.74

(0.5:1000:0.7: one step split, the replays count its first try: 3.80 for the run's guess). Over time, 1000 links,
means of 10 steps: 0.3 rad, rho_inf = 0.5: 3.1 3.0 3.0 3.0 3.0 3.0 3.2 3.1 3.1 3.0; 0.5 rad: 3.1 3.0 3.0 3.0 3.0
3.7 3.4 3.4 3.2 3.0; rho_inf = 0.7: 3.0 3.0 3.0 3.0 3.0 3.1 3.5 3.8 4.2 4.5 and 3.0 3.0 3.0 3.0 3.0 4.9 4.6 4.5 4.7
4.6. Before the whip every step takes 3 but one at most (the fourth, at the pin: its history is short); the steps
of 4 or more are the whip's, from t = 0.5 s, and their slow corrections are at the free end: on 1000 links at 0.5 rad,
rho_inf = 0.5, the third correction is largest at bodies 980 to 999 on all 16 of the whip's steps of 4 or more
(step 56: 7.4e-1 / 2.8e-3 at body 999, 4.2e-3 / 6.6e-3, 7.5e-4 / 4.0e-3, 1.0e-5 / 3.0e-5, 2.1e-8 / 1.1e-7 at 994
and 995, centres of mass / rotations in m/s: the rotations' grows at the second iteration, Newton before its
quadratic regime), where the last links turn at up to 56 rad/s (h omega = 0.56 rad a step). No first guess takes
that back: the best of the eight at every step (a bound no rule reaches) leaves 3.03 and 3.48 a step on the 0.5 rad
swings of 1000 links; the exact multipliers 3.14 and 3.78 (lambda is not what is missing); the accelerations
extrapolated linearly do worse than the constant acceleration on 1000 links, and with the oscillation taken out
within 0.05 of the run's guess (3.22 and 3.75 on the 0.5 rad swings). The
joints closed (the guess's gaps are O(h^3) in the bodies' motion, a large part of a 1 mm link turning 0.5 rad a
step), taken as the runs' guess (``--close-joints``): 3.18 -> 3.11 and 3.41 -> 3.36 on 1000 links at 0.5 rad,
rho_inf = 0.5, and 0.3 rad, 0.7 (0.3 rad, 0.5: 3.05 -> 3.03; 100 links: within 0.02 either way; the small swing of
1000 links 2.00), but it stopped the 0.5 rad swing at rho_inf = 0.7 (Newton not converging at t = 0.73 to 0.78 s)
on 900, 1000, 1100 and 1200 links, where the run's guess runs through with one split step: not adopted. Nor can
the acceptance take back much: an exact one (knowing the next correction) leaves 3.10 and 3.74 a step on those
swings. The kernel's rule (its prediction part by part) accepts, at rho_inf = 0.7 on 1000 links, steps whose next
correction exceeds the tolerance: 1.3x on the run's own guess (the 0.5 rad swing's step 55) and up to 8.2x on the
constant acceleration's logs (a rotation's next correction driven by the centres of mass' last one, which the
prediction part by part does not see).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import command_line, print_table, write_json  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402
from spatial_simulate import hanging_chain  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd._kernels.augmented import implicit3d as kernels  # noqa: E402
from recursive_mbd._kernels.spatial import layout  # noqa: E402
from recursive_mbd.errors import SimulationError  # noqa: E402

DT = 0.01
CASES = ["0.3:100:0.9", "0.3:100:0.5", "0.3:1000:0.5", "0.5:100:0.5", "0.5:1000:0.5", "0.001:1000:0.9"]


# ``kernels.newton_step``'s arguments: the step's start (z0, zb0, acc0, vdot0, coef), its first guess (vdot, lam) and
# its info array (iterations, last correction, ...), by position
Z0, ZB0, ACC0, VDOT0, COEF, GYRATION, VDOT, LAM, INFO = 6, 7, 8, 9, 10, 11, 14, 15, -4


def corrections(original, args, vdot, lam, count):
    """The first ``count`` corrections [(centres of mass, rotations)] of Newton's iteration of the step ``args``
    from the guess (vdot, lam) (copies iterated, one iteration at a time, newton_tol = 0), scaled as the kernel's
    test scales them; the body of the largest of each; and the last iterate (vdot, lam)."""
    vdot, lam = vdot.copy(), lam.copy()
    coef, gyration = args[COEF], args[GYRATION]
    scale = max(coef[5], coef[6])
    parts, bodies = [], []
    for _ in range(count):
        before = vdot.copy()
        original(*args[:12], 0.0, 1, vdot, lam, *args[16:-1], args[-1].copy())
        change = vdot - before
        com = scale * np.abs(change[:, :3]).max(axis=1)
        rot = scale * (np.abs(change[:, 3:]) * gyration[:, None]).max(axis=1)
        if not np.isfinite(com.max() + rot.max()):
            break
        parts.append((float(com.max()), float(rot.max())))
        bodies.append(int(np.argmax(np.maximum(com, rot))))
    return parts, bodies, vdot, lam


def logged_run(n, tilt, rho_inf, t_end, count, alternatives=None, closed=False):
    """(result or the failed run's, failure message, steps): each step a dict of the iterations it took, whether its
    first guess was the constant acceleration, its first ``count`` corrections [(centres of mass, rotations)] and
    the body of the largest of each; with ``alternatives`` ({name: guess(args, start, converged) -> (vdot, lam) or
    None}, start the ``first_guess`` inputs (zb, acc, vdot0, vdot_before, rate, coef, history), converged the step's
    iterate after ``count`` corrections) also each alternative's corrections from the same step's start, under
    "alternatives". ``closed``: the run takes its first guess with the joints' points closed (``joints_closed``)."""
    original, original_guess = kernels.newton_step, kernels.first_guess
    steps = []
    start = {}

    def guess(zb, acc, vdot, before, rate, coef, history, out):
        start["inputs"] = (zb.copy(), acc.copy(), vdot.copy(), before.copy(), rate.copy(), coef.copy(), history)
        start["constant"] = original_guess(zb, acc, vdot, before, rate, coef, history, out)
        return start["constant"]

    def logged(*args):
        if closed:
            args[VDOT][:] = joints_closed(args, args[VDOT])
        parts, bodies, vdot, lam = corrections(original, args, args[VDOT], args[LAM], count)
        step = {"parts": parts, "bodies": bodies, "constant": start.get("constant")}
        if alternatives:
            step["alternatives"] = {}
            for name, make in alternatives.items():
                other = make(args, start["inputs"], (vdot, lam))
                if other is not None:
                    step["alternatives"][name] = corrections(original, args, *other, count)[0]
        status = original(*args)
        step["taken"] = int(args[INFO][0])
        steps.append(step)
        return status

    kernels.newton_step, kernels.first_guess = logged, guess
    try:
        model, q0, v0 = hanging_chain(n, tilt)
        try:
            result = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", formulation="augmented", dt=DT,
                                 rho_inf=rho_inf, every=10**9)
            failure = ""
        except SimulationError as error:
            result, failure = error.result, str(error)[:100]
    finally:
        kernels.newton_step, kernels.first_guess = original, original_guess
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


POINT_JOINTS = (layout.REVOLUTE, layout.UNIVERSAL, layout.SPHERICAL, layout.FIXED)


def joints_closed(args, vdot):
    """The guess vdot with each body's centre of mass moved, in parent order, by its parent's move less the gap its
    joint's point is left with at the guess's state (joints whose point is common), so that those gaps are zero: the
    rotations kept, vdot[:, :3] + move / c_stiff."""
    body_int, body_real, coef = args[0], args[1], args[COEF]
    z0 = args[Z0]
    n = z0.shape[0]
    zp, zbp, zdp, tangent = np.empty_like(z0), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 3, 3))
    kernels.update_state(z0, args[ZB0], args[ACC0], args[VDOT0], coef, vdot, zp, zbp, zdp, tangent)
    rot = Rotation.from_quat(zp[:, [4, 5, 6, 3]]).as_matrix()
    mass = body_real[:, layout.MASS]
    com = body_real[:, layout.MCOM:layout.MCOM + 3] / np.where(mass > 0.0, mass, np.inf)[:, None]  # massless: 0
    move = np.zeros((n, 3))
    for i in range(n):
        p = body_int[i, layout.PARENT]
        if p >= 0:
            move[i] = move[p]
        if body_int[i, layout.JTYPE] in POINT_JOINTS:
            point_c = zp[i, :3] + rot[i] @ (body_real[i, layout.CP:layout.CP + 3] - com[i])
            arm = body_real[i, layout.PP:layout.PP + 3]
            point_p = zp[p, :3] + rot[p] @ (arm - com[p]) if p >= 0 else arm
            move[i] -= point_c - point_p
    out = vdot.copy()
    out[:, :3] += move / coef[5]
    return out


def alternatives(rho_inf):
    """The first guesses replayed beside the run's at every step ({name: guess(args, start, converged)}): the
    constant acceleration; the mean velocity (``kernels.predict``); the accelerations extrapolated linearly from the
    last two steps; the same with an oscillation damped by rho_inf a step taken out (vdot = s + o (-rho_inf)^k,
    s constant: vdot0 - rho_inf (vdot0 - vdot_before)); the constant acceleration with the step's converged
    multipliers (an exact guess of lambda); and the constant acceleration and the step's own choice with the
    joints' points closed (``joints_closed``)."""
    def constant(args, start, converged):
        return start[2], args[LAM]

    def mean_velocity(args, start, converged):
        zb, acc, vdot0, _, rate, coef, _ = start
        out = np.empty_like(vdot0)
        kernels.predict(zb, acc, vdot0, rate, coef, out)
        return out, args[LAM]

    def linear(args, start, converged):
        return (2.0 * start[2] - start[3], args[LAM]) if start[6] else None

    def damped(args, start, converged):
        return (start[2] - rho_inf * (start[2] - start[3]), args[LAM]) if start[6] else None

    return {"constant": constant, "mean velocity": mean_velocity, "linear": linear, "rho-aware": damped,
            "exact multipliers": lambda args, start, converged: (start[2], converged[1]),
            "joints closed": lambda args, start, converged: (joints_closed(args, start[2]), args[LAM]),
            "step's, joints closed": lambda args, start, converged: (joints_closed(args, args[VDOT]), args[LAM])}


def count_of(parts, tol):
    """Iterations the acceptance rule takes on the logged parts at tol (len(parts) + 1 where it accepts none)."""
    return next((k + 1 for k in range(len(parts)) if accepted_after(parts, k, tol)), len(parts) + 1)


def exact_count(parts, tol):
    """Iterations of an exact acceptance: the first k whose next logged correction is <= tol."""
    return next((k + 1 for k in range(len(parts) - 1) if max(parts[k + 1]) <= tol), len(parts) + 1)


def alternatives_table(case, steps, tol):
    """Rows: each first guess's iterations a step by the acceptance rule replayed at tol, its median first three
    corrections, its steps of 4 or more iterations and the accepted steps whose next correction exceeds tol (the
    largest, in units of tol); then the best guess of each step and the exact acceptance."""
    rows = []
    names = ["run"] + list(dict.fromkeys(name for s in steps for name in s["alternatives"]))
    counts = {}
    for name in names:
        logs = [s["parts"] if name == "run" else s["alternatives"].get(name, s["parts"]) for s in steps]
        counts[name] = [count_of(p, tol) for p in logs]
        medians = [np.median([max(p[k]) for p in logs if len(p) > k]) for k in range(3)]
        left = [max(p[c]) / tol for p, c in zip(logs, counts[name], strict=True) if c < len(p) and max(p[c]) > tol]
        rows.append([case, name, f"{np.mean(counts[name]):.2f}", *(f"{e:.1e}" for e in medians),
                     sum(c >= 4 for c in counts[name]), f"{len(left)} ({max(left, default=0.0):.2g})"])
    best = np.min([counts[name] for name in names], axis=0)
    rows.append([case, "best guess a step", f"{best.mean():.2f}", "-", "-", "-", int((best >= 4).sum()), "-"])
    exact = [exact_count(s["parts"], tol) for s in steps]
    rows.append([case, "run, exact acceptance", f"{np.mean(exact):.2f}", "-", "-", "-", sum(c >= 4 for c in exact),
                 "0"])
    return rows


def trace(case, steps):
    """The steps of 4 or more iterations: corrections (centres of mass / rotations) and the body of the largest."""
    print(f"{case}: iterations a step over time (every 10 steps): "
          + " ".join(f"{np.mean([s['taken'] for s in steps[k:k + 10]]):.1f}" for k in range(0, len(steps), 10)))
    for k, s in enumerate(steps):
        if s["taken"] >= 4:
            print(f"  step {k} ({'constant' if s['constant'] else 'mean velocity'}), {s['taken']} iterations: "
                  + ", ".join(f"{c:.1e}/{r:.1e}@{b}" for (c, r), b in zip(s["parts"], s["bodies"], strict=True)))


def main():
    parser = command_line(__doc__, "implicit3d_guesses")
    parser.add_argument("--guess", choices=["run", "mean"], default="run",
                        help="the run's first guess (kernels.first_guess) or the mean velocity alone")
    parser.add_argument("--cases", nargs="+", default=CASES, help="TILT:N:RHO_INF")
    parser.add_argument("--log", type=int, default=6, help="corrections logged a step")
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--alternatives", action="store_true",
                        help="replay other first guesses from every step's start (``alternatives``), and print them")
    parser.add_argument("--trace", action="store_true", help="print the steps of 4 or more iterations")
    parser.add_argument("--close-joints", action="store_true",
                        help="the runs take their first guess with the joints' points closed (``joints_closed``)")
    args = parser.parse_args()
    if args.guess == "mean":
        kernels.first_guess = lambda zb, acc, vdot, before, rate, coef, history, out: (
            kernels.predict(zb, acc, vdot, rate, coef, out) or 0)
    rows, others = [], []
    for case in args.cases:
        tilt, n, rho_inf = case.split(":")
        result, failure, steps = logged_run(int(n), float(tilt), float(rho_inf), args.t_end, args.log,
                                            alternatives(float(rho_inf)) if args.alternatives else None,
                                            args.close_joints)
        if args.trace:
            trace(case, steps)
        if args.alternatives:
            others += alternatives_table(case, steps, 1e-10)
        full = [s["parts"] for s in steps if len(s["parts"]) >= 3]
        medians = [float(np.median([max(p[k]) for p in full])) for k in range(3)]
        k_parts = [[p[k + 1][j] / p[k][j] ** 2 for p in full if p[k][j] > 0.0 and p[k + 1][j] > 1e-11]
                   for k in range(2) for j in range(2)]
        rows.append({"case": case, "guess": args.guess + (" closed" if args.close_joints else ""),
                     "reached": result.nsteps * DT, "failure": failure,
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
    if others:
        print("First guesses replayed from every step's start (the acceptance rule at newton_tol = 1e-10):")
        print_table(["case", "guess", "iter/step", "e1", "e2", "e3", "steps of 4+", "left > tol (x tol)"], others)
    print(f"wrote {write_json(args.name + '_' + args.guess, {'dt': DT, 'rows': rows, 'alternatives': others})}")


if __name__ == "__main__":
    main()
