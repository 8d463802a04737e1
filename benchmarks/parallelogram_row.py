"""Rows of parallelograms through their change points, and ladders: cost per simulated second against the size,
energy and crank-rate split, both formulations and the implicit methods.

    python3 benchmarks/parallelogram_row.py [--model row|ladder] [--n 5 10 20 40 80] [--t-end 20]
                                             [--routes recursive augmented] [--methods dopri5 dop853]
                                             [--tols 1e-8 1e-10] [--implicit generalized_alpha bdf]
                                             [--max-wall 300] [--profile [--theta 1e-3]]

A row of n parallelograms (tests/test_singular.py: n + 1 cranks of 1 m, 1 kg hinged 1 m apart, n couplers, cranks
vertical at t = 0, tips at 1 m/s, gravity 9.81 m/s^2) simulated with projection onto the loops. The exact motion
keeps every crank at one angle and one rate and the energy constant, and passes the collinear change points (the
loop Jacobian loses n of its 2n rows there) about twice per revolution. Per n, route, method and tolerance
rtol = atol (--tols; by default rm.simulate's own, rtol 1e-9 and atol 1e-12): wall and CPU time, steps and rejected
steps per simulated second, function evaluations per step, the wall time per evaluation (ms/eval) and per step
(ms/step: the evaluations and the projection after the step), the largest
relative energy error, the largest crank-rate split max_k |qd_k - qd_0| over the samples (the accepted steps), and
whether both are within 1e-6; then the log-log slopes of the wall time per simulated second and per evaluation
against n, from the smallest to the largest n (``--n 20 40 80 160 --t-end 5 --methods dopri5 --implicit``: the
cost's growth through the change-point zone, where an evaluation took O(n^3) eigen-decompositions). The
implicit methods (generalized_alpha at dt = 1e-3, bdf at the same tolerance, recursive route) run the same rows;
where they stop at a change point the table shows where. A run over --max-wall seconds of wall time stops and is
reported with the simulated time it reached. Writes benchmarks/results/NAME.json (--name, default
parallelogram_row, or ladder) and a log-log plot of the cost per simulated second against n, NAME.png
(matplotlib, Agg; skipped without it).

``--model ladder``: a ladder of n rungs (tests/test_loop_structure.py: two chains of n rods, 1 m and 1 kg each,
hanging from the ground 1 m apart, joined at every link's tip by a rung of 1 m, 1 kg; n loops, every one reaching
both chains from the ground), released from rest with both chains turned 0.5 rad and the rungs level (closed
exactly); the split column is then the largest constraint residual max |phi| over the samples [m], and the 1e-6
check is on the energy alone. ``--profile``: where one evaluation's time goes at the initial state (a row: its
cranks --theta rad from the change point, default 1e-3, inside the zone where the branch is followed), per n and
route (the compiled kernels of the loop layer timed one by one, median of repeats): the loop rows and their
Jacobian, the responses M^-1 J^T (recursive) or the Schur complement's tree solves (augmented), J M^-1 J^T, its
factorisation and solve, the sparse KKT factorisation (both routes; the recursive route's, ``recursive_mbd._kernels.
planar.loops_sparse``, forced on at every n, whether or not its cost model takes it there), the whole right-hand side
by either path and the projection of the state moved 1e-9 off its loops in every coordinate and rate (OFF_LOOPS: a
step's error; the recursive route's by either path, the sparse one through the same factorisation), with the log-log
slope of each part from the smallest to the largest n.

The projection's iterations are not counted: they happen inside the compiled time loop, which reports steps,
rejections and evaluations only.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS (benchmarks/blas_threads.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from _common import RESULTS, median_time, print_table, write_json

import recursive_mbd as rm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_loop_structure import ladder  # noqa: E402
from test_singular import parallelograms  # noqa: E402  (the models of the tests, one definition)

LADDER_TURN = 0.5  # rad: both chains turned, the rungs level (a closed state)
OFF_LOOPS = 1e-9  # --profile: the projected state's offset from the loops [m, rad and their rates], a step's error


def build(kind, n):
    """(model, q0, qd0, cranks): the row of n parallelograms (cranks: the cranks' coordinates) or the ladder of n
    rungs released from rest, turned LADDER_TURN (cranks None)."""
    if kind == "row":
        model, q0, qd0 = parallelograms(n)
        return model, q0, qd0, slice(0, n + 1)
    model, q0 = ladder(n)
    q0 = q0.copy()
    q0[0] += LADDER_TURN  # the first link of each chain; the rungs' relative angles keep them level
    q0[n] += LADDER_TURN
    q0[2 * n :] -= LADDER_TURN
    return model, q0, np.zeros(model.nq), None


def measure(n, route, method, tol, t_end, max_wall, kind="row"):
    """One run: a dict of the figures (or the error that stopped it, with the simulated time reached)."""
    model, q0, qd0, cranks = build(kind, n)
    options = {"dt": 1e-3} if method == "generalized_alpha" else {} if tol is None else {"rtol": tol, "atol": tol}
    if method in ("dopri5", "dop853"):
        options.update(formulation=route, stabilization="projection")
    start = time.perf_counter()
    cpu = time.process_time()
    try:
        res = rm.simulate(model, q0, qd0, t_end, method=method, max_wall_time=max_wall, **options)
    except rm.SimulationError as err:
        reached = float(err.result.t[-1]) if err.result is not None and err.result.t.size else 0.0
        return {"error": str(err)[:300], "wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
                "t_reached": reached}
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    kinetic, potential = res.energy()
    total = kinetic + potential
    if cranks is None:  # a ladder: the constraint drift instead of the cranks' split
        split = angle = float(np.abs(res.constraint_drift).max())
    else:
        split = float(np.abs(res.qd[:, cranks] - res.qd[:, :1]).max())
        angle = float(np.abs(res.q[:, cranks] - res.q[:, :1]).max())
    energy = float(np.abs(total / total[0] - 1.0).max()) if kind == "row" else float(
        np.abs(total - total[0]).max() / np.abs(kinetic).max())
    return {"energy_rel": energy, "rate_split": split, "angle_split": angle, "steps": int(res.nsteps),
            "rejected": int(res.nrejected), "nfev": int(res.nfev), "wall_s": wall, "cpu_s": cpu, "t_reached": t_end}


def row_of(n, route, method, tol, fig, t_end):
    """The table row of one run."""
    label = "dt 1e-3" if method == "generalized_alpha" else "default" if tol is None else f"{tol:g}"
    if "error" in fig:
        return (n, route, method, label, f"stopped at {fig['t_reached']:.3g} s", f"{fig['cpu_s']:.1f} in all", "",
                "", "", "", "", "", "", f"{fig['wall_s']:.1f}")
    ok = fig["energy_rel"] < 1e-6 and fig["rate_split"] < 1e-6
    return (n, route, method, label, f"{fig['wall_s'] / t_end:.3g}", f"{fig['cpu_s'] / t_end:.3g}",
            f"{fig['steps'] / t_end:.0f}",
            f"{fig['rejected'] / t_end:.1f}", f"{fig['nfev'] / max(fig['steps'], 1):.1f}",
            f"{1e3 * fig['wall_s'] / max(fig['nfev'], 1):.3g}", f"{1e3 * fig['wall_s'] / max(fig['steps'], 1):.3g}",
            f"{fig['energy_rel']:.1e}",
            f"{fig['rate_split']:.1e}", "yes" if ok else "NO")


def slopes(runs):
    """Log-log slopes against n of the wall time per simulated second, per evaluation and per step, from the smallest
    to the largest n that finished, a line per route, method and tolerance: (route, method, tol, n from, n to,
    slopes)."""
    lines = []
    for key in sorted({(r["route"], r["method"], r["tol"]) for r in runs}, key=str):
        done = sorted((r["n"], r["wall_s"] / r["t_end"], r["wall_s"] / max(r["nfev"], 1),
                       r["wall_s"] / max(r["steps"], 1)) for r in runs
                      if (r["route"], r["method"], r["tol"]) == key and "error" not in r)
        if len(done) > 1 and done[-1][0] > done[0][0]:
            (n0, *cost0), (n1, *cost1) = done[0], done[-1]
            growth = np.log(n1 / n0)
            route, method, tol = key
            lines.append((route, method, "default" if tol is None else f"{tol:g}", n0, n1,
                          *(f"{np.log(b / a) / growth:.2f}" for a, b in zip(cost0, cost1, strict=True))))
    return lines


def plot(runs, path, kind="row"):
    """Wall time per simulated second against n, log-log, a line per route and method (finished runs)."""
    try:
        import matplotlib  # noqa: PLC0415 - optional extra
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for key in sorted({(r["route"], r["method"], r["tol"]) for r in runs}, key=str):
        done = sorted((r["n"], r["wall_s"] / r["t_end"]) for r in runs
                      if (r["route"], r["method"], r["tol"]) == key and "error" not in r)
        if done:
            sizes_done, costs = zip(*done, strict=True)
            ax.loglog(sizes_done, costs, "o-", label=f"{key[0]} {key[1]} {key[2] or 'default tolerances'}")
    sizes = sorted({r["n"] for r in runs})
    if len(sizes) > 1:
        ax.loglog(sizes, [0.01 * s for s in sizes], "k:", label="slope 1")
    ax.set_xlabel("parallelograms in the row, n" if kind == "row" else "rungs of the ladder, n")
    ax.set_ylabel("wall time per simulated second [s]")
    ax.set_title("rows of parallelograms through their change points" if kind == "row" else "ladders")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def _profile_state(kind, n, theta=1e-3):
    """(model, q, qd): the ladder's initial state, or the row's theta rad from its change point (in the zone)."""
    if kind == "ladder":
        model, q, qd, _ = build(kind, n)
        return model, q, qd
    model, _, _ = parallelograms(n)
    return model, np.r_[np.full(n + 1, theta), np.full(n, -theta)], np.r_[np.ones(n + 1), -np.ones(n)]


def profile(kind, n, theta=1e-3):
    """({part: median wall time of one call [us]}, whether the recursive route's cost model takes the sparse KKT
    path): one evaluation's compiled parts on each route at the profile
    state (module docstring; a row theta rad from its change point), each timed alone on the arrays the evaluation
    leaves, and the projection of that state (a copy each call)."""
    from recursive_mbd._kernels import sparse_kkt  # noqa: PLC0415
    from recursive_mbd._kernels.augmented import system as augmented_system  # noqa: PLC0415
    from recursive_mbd._kernels.augmented import tree  # noqa: PLC0415
    from recursive_mbd._kernels.planar import loops as kernels  # noqa: PLC0415
    from recursive_mbd._kernels.timeloops import integrators  # noqa: PLC0415
    from recursive_mbd.dynamics.augmented import TimeLoop  # noqa: PLC0415
    from recursive_mbd.dynamics.loops import loop_workspace, sparse_loop_structure  # noqa: PLC0415
    from recursive_mbd.integrate.runs import RecursiveTimeLoop, _Inputs  # noqa: PLC0415

    model, q, qd = _profile_state(kind, n, theta)
    model.compile()
    inputs = _Inputs(model, None, None)
    callback, key = inputs.callback()
    times = {}

    def clock(part, func):
        times[part] = 1e6 * median_time(func, min_time=0.3, repeats=5)

    # recursive route: the loop rows and J, the tree's free accelerations, the responses M^-1 J^T, J M^-1 J^T on
    # its envelope, its Cholesky factorisation with the regularity test and solve, the whole right-hand side
    ws, lw = loop_workspace(model)
    m = model.nconstraints
    pattern = lw.pattern
    args = (model.body_int, model.body_real, model.loop_int, model.loop_real, q, qd, ws.ws, ws.com, lw.acc, lw.phi,
            lw.phid, lw.jac, lw.gamma, lw.weights)
    clock("rec: loop rows, J", lambda: kernels.loop_constraints(*args))
    qdd = np.zeros(model.nq)
    clock("rec: tree pass", lambda: kernels.forward_dynamics(
        model.body_int, model.body_real, model.gravity, q, qd, np.zeros(model.nq), np.zeros((0, 3)), ws.no_driven,
        ws.ws, qdd, ws.no_drive))
    clock("rec: M^-1 J^T", lambda: kernels.loop_responses(model.body_int, model.body_real, q, lw.jac, pattern, ws.ws,
                                                          lw.resp, ws.zeros, lw.stab[2:4]))
    gram, first = np.empty((m, m)), np.empty(m, dtype=np.int64)
    clock("rec: J M^-1 J^T", lambda: kernels.gram_envelope(lw.jac, lw.resp, pattern, gram, first))
    rhs, out = np.linspace(1.0, 2.0, m), np.empty(m)
    clock("rec: factor + solve", lambda: kernels.regular_solve_envelope(gram, first, rhs, 1e-8, out))
    chosen = lw.sparse[0].size > 0  # the cost model's choice; the path forced on to time it at every n
    lw.sparse = sparse_loop_structure(model, pattern, use=True)
    system = RecursiveTimeLoop(model, inputs, stabilization="projection").system
    sparse_kkt_arrays, work = kernels.unpack(*lw.sparse)  # views of the arrays the system holds
    y = np.r_[q, qd, 0.0, 0.0]
    dy = np.empty_like(y)
    for path in (0, 1):
        sparse_kkt_arrays.use[0] = path
        clock(f"rec: whole rhs, {'sparse KKT' if path else 'envelope'}",
              lambda: integrators.system_rhs(callback, key, system, 0.0, y, dy))
    # the sparse factorisations and solve alone, on the arrays the last evaluation left
    clock("rec: sparse KKT solve", lambda: sparse_kkt.loop_solve(
        model.body_int, model.body_real, work.row_start, work.fac, work.aux_body, work.aux_coef, work.aux_rhs,
        kernels.REGULAR_RCOND_MARGIN * 1e-8, kernels.REGULAR_ZONE_MARGIN * 1e-6, work.zdd, work.lam, work.info,
        sparse_kkt_arrays))
    projected = y.copy()

    def project(system, start):
        projected[:] = start
        return integrators.project_state(callback, key, system, 0.0, projected)

    # the projection after a step: the state moved OFF_LOOPS off its loops (positions and rates), as a step's error
    off = y + OFF_LOOPS * np.sin(1.0 + np.arange(y.size))
    for path in (0, 1):
        sparse_kkt_arrays.use[0] = path
        clock(f"rec: projection, {'sparse KKT' if path else 'envelope'}", lambda: project(system, off))
    sparse_kkt_arrays.use[0] = 1 if chosen else 0
    # augmented route: the tree factor and solve, the joints' whole blocks, the loop rows, the Schur complement's
    # tree solves, its factorisation and solve, the sparse KKT path, the whole right-hand side either way
    system = TimeLoop(model, inputs, stabilization="projection").system
    z, zd = rm.augmented.absolute_from_joint(model, q, qd)
    y = np.r_[z.ravel(), zd.ravel(), 0.0, 0.0]
    dy = np.empty_like(y)
    use = int(system.kkt.use[0])
    for path in (0, 1):
        system.kkt.use[0] = path
        clock(f"aug: whole rhs, {'sparse KKT' if path else 'Schur'}",
              lambda: augmented_system.system_rhs(callback, key, system, 0.0, y, dy))
    system.kkt.use[0] = use
    projected = y.copy()
    clock("aug: projection", lambda: project(system, y + OFF_LOOPS * np.sin(1.0 + np.arange(y.size))))
    s = system
    clock("aug: tree factor + solve", lambda: tree.factor_and_solve(
        s.body_int, s.body_real, s.gravity, s.row_start, s.z, s.zd, s.tau, s.wrench, s.stab, s.factor, s.scratch,
        s.zdd, s.lam, s.power))
    clock("aug: joint blocks", lambda: sparse_kkt.tree_residuals(s.body_int, s.body_real, s.row_start, s.z, s.zd,
                                                               s.factor, s.scratch, s.xj))
    clock("aug: loop rows", lambda: augmented_system._auxiliary_rows(s, s.stab))
    k = s.aux_body.shape[0]
    first, last = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64)
    clock("aug: Schur E H^-1 E^T", lambda: tree._auxiliary_schur(s.body_int, s.row_start, s.factor, s.aux_body,
                                                                 s.aux_coef, s.xb, s.xj, s.schur, first, last))
    rhs, out = np.linspace(1.0, 2.0, k), np.empty(k)
    clock("aug: Schur factor + solve", lambda: kernels.regular_solve_envelope(s.schur, first, rhs, 1e-8, out))
    if s.kkt.perm.size:
        clock("aug: sparse KKT path", lambda: sparse_kkt.loop_solve(
            s.body_int, s.body_real, s.row_start, s.factor, s.aux_body, s.aux_coef, s.aux_rhs,
            kernels.REGULAR_RCOND_MARGIN * s.settings[3], kernels.REGULAR_ZONE_MARGIN * augmented_system._zone(s),
            s.zdd, s.lam.copy(), s.info.copy(), s.kkt))
    return times, chosen


def main(sizes=(5, 10, 20, 40, 80), t_end=20.0, routes=("recursive", "augmented"), methods=("dopri5", "dop853"),
         tols=(None,), implicit=("generalized_alpha", "bdf"), max_wall=300.0, name="parallelogram_row", kind="row",
         with_profile=False, theta=1e-3):
    if with_profile:
        profiles = {n: profile(kind, n, theta) for n in sizes}
        parts = {n: profiles[n][0] for n in sizes}
        names = list(parts[sizes[0]])
        where = f", {theta:g} rad from the change point" if kind == "row" else ""
        print(f"\none evaluation's parts [us], {kind}{where} (median of repeats; load {os.getloadavg()[0]:.1f})")
        growth = np.log(sizes[-1] / sizes[0]) if len(sizes) > 1 else np.nan
        print_table(("part", *[f"n = {n}" for n in sizes], "slope"),
                    [(part, *[f"{parts[n].get(part, float('nan')):.3g}" for n in sizes],
                      f"{np.log(parts[sizes[-1]][part] / parts[sizes[0]][part]) / growth:.2f}") for part in names])
        chosen = [n for n in sizes if profiles[n][1]]
        print(f"the recursive route's cost model takes the sparse KKT path at n = {chosen or 'none'}")
        path = write_json(f"{name}_profile", {"kind": kind, "theta": theta, "sizes": list(sizes), "parts": parts,
                                              "sparse_chosen": chosen})
        print(f"wrote {path}")
        return
    for route in routes:  # compile outside the measured runs
        measure(3, route, "dopri5", None, 0.1, None, kind)
    cases = [(route, method, tol) for route in routes for method in methods for tol in tols]
    cases += [("recursive", method, tols[0]) for method in implicit]
    runs, rows = [], []
    for n in sizes:
        for route, method, tol in cases:
            fig = measure(n, route, method, tol, t_end, max_wall, kind)
            runs.append({"n": n, "route": route, "method": method, "tol": tol, "t_end": t_end, **fig})
            rows.append(row_of(n, route, method, tol, fig, t_end))
            print(f"  {rows[-1]}", flush=True)
    what = "rows of n parallelograms" if kind == "row" else "ladders of n rungs"
    print(f"\n{what}, {t_end:g} s simulated, projection; per simulated second (machine shared: "
          f"wall times are indicative, CPU times of this process less so; load {os.getloadavg()[0]:.1f} now)")
    print_table(("n", "route", "method", "tol", "wall [s]", "CPU [s]", "steps", "rejected", "evals/step",
                 "ms/eval", "ms/step", "max |dE/E|", "max split [rad/s]" if kind == "row" else "max |phi| [m]",
                 "1e-6 met"), rows)
    growth = slopes(runs)
    if growth:
        print("\ngrowth with n (log-log slope from the smallest to the largest n)")
        print_table(("route", "method", "tol", "n from", "n to", "wall per simulated s", "wall per evaluation",
                     "wall per step"), growth)
    path = write_json(name, {"model": kind, "t_end": t_end, "runs": runs, "slopes": [list(line) for line in growth]})
    print(f"wrote {path}")
    figure = plot(runs, RESULTS / f"{name}.png", kind)
    if figure is not None:
        print(f"wrote {figure}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5, 10, 20, 40, 80])
    parser.add_argument("--t-end", type=float, default=20.0)
    parser.add_argument("--routes", nargs="+", default=["recursive", "augmented"])
    parser.add_argument("--methods", nargs="+", default=["dopri5", "dop853"])
    parser.add_argument("--tols", nargs="+", type=float, default=[None],
                        help="rtol = atol of each run (default: rm.simulate's, rtol 1e-9, atol 1e-12)")
    parser.add_argument("--implicit", nargs="*", default=["generalized_alpha", "bdf"])
    parser.add_argument("--max-wall", type=float, default=300.0)
    parser.add_argument("--model", choices=["row", "ladder"], default="row")
    parser.add_argument("--profile", action="store_true", help="one evaluation's parts per n, no runs")
    parser.add_argument("--theta", type=float, default=1e-3,
                        help="--profile: the row's crank angle from its change point [rad] (default 1e-3)")
    parser.add_argument("--name", default=None,
                        help="results benchmarks/results/NAME.json, .png (default parallelogram_row, or ladder)")
    args = parser.parse_args()
    name = args.name or ("parallelogram_row" if args.model == "row" else "ladder")
    main(args.n, args.t_end, args.routes, args.methods, args.tols, args.implicit, args.max_wall, name, args.model,
         args.profile, args.theta)
