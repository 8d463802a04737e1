"""The phases of one Newton iteration of generalized_alpha in absolute coordinates on a long spatial chain, timed
apart: the step's update, the residual, the Newton matrix's assembly and factorisation, the solve; and on a chain of
spherical joints the fused passes that replace the last three (``spherical_forward``: residual, matrix,
factorisation and the solve's first pass leaves first; the back-substitution roots first).

The slender spherical chain of ``benchmarks/spatial_simulate.py`` tilted 1e-3 rad, the first step of h = 0.01 s
from the route's own start (forward dynamics, Newton's first guess), each phase called on that iterate in turn
(interleaved rounds, so that the machine's load hits them alike): nanoseconds a body, the median of the rounds,
wall and CPU time.

    python3 benchmarks/implicit3d_phases.py [--sizes N ...] [--rounds R] [--runs T_END]

With --passes R, the fused pass's two halves instead, each on one thread over all N bodies (every record, then the
elimination leaves first, its children's sums cleared between calls), and the records of the velocities'
projection (``kernels.spherical_project``, whose elimination is the same): the minimum and the tenth percentile of R
calls, nanoseconds a body, at a size whose records stay in the shared cache (N = 6000: the pipeline's ranges),
where the minimum is what a quiet machine gives. Run it with NUMBA_NUM_THREADS=1.

With --runs T_END, the whole runs instead (T_END simulated seconds a size), by the general kernels and by the fused
passes one after the other in one process (``augmented3d_implicit.FUSED_SPHERICAL``): wall and CPU time a
link-step, iterations a step, the end states' difference (results in implicit3d_phases_runs.json).

Results in benchmarks/results/implicit3d_phases.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
from _common import command_line, interleaved_samples, print_table, write_json  # noqa: E402
from spatial_simulate import hanging_chain  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd._kernels.augmented import implicit3d as kernels  # noqa: E402
from recursive_mbd.dynamics import augmented3d  # noqa: E402
from recursive_mbd.integrate import augmented3d_implicit as route  # noqa: E402
from recursive_mbd.integrate.newton import generalized_alpha_coefficients  # noqa: E402


def phases(n, rho_inf=0.9, h=0.01):
    """{phase: callable} on the first step's first iterate of an n-link chain."""
    model, q0, v0 = hanging_chain(n, 1e-3)
    z, zd = augmented3d.absolute_from_joint(model, q0, v0)
    vdot, lam = augmented3d.forward_dynamics(model, z, zd)
    augmented3d.release_workspace(model)
    vdot, zb = route.to_body_axes(z, vdot), route.to_body_axes(z, zd)
    acc = vdot.copy()
    starts = augmented3d.row_starts(model)
    a = route._Arrays(model, starts)
    am, af, gm, bt = generalized_alpha_coefficients(rho_inf)
    coef = np.array([h, am, af, gm, bt, h * h * bt * (1 - af) / (1 - am), h * gm * (1 - af) / (1 - am)])
    guess = np.empty_like(vdot)
    kernels.predict(zb, acc, vdot, zb, coef, guess)
    bi, br, g, tau = model.body_int, model.body_real, model.gravity, np.zeros(0)
    no_drivers = np.zeros(0)  # the drivers' targets of ``kernels.residual``: none
    xb, xj = np.empty_like(a.rb), np.empty_like(a.rc)

    def update():
        kernels.update_state(z, zb, acc, vdot, coef, guess, a.zp, a.zbp, a.zdp, a.tangent)

    def residual():
        kernels.residual(bi, br, g, starts, tau, no_drivers, a.zp, a.zdp, guess, lam, coef[5], a.rb, a.rc, a.jc, a.jp,
                         a.res, a.gam, a.power)

    def factor():
        residual()  # factor turns jc, jp into body axes: from the residual's each time
        assert kernels.factor(bi, br, starts, a.zp, a.zbp, guess, lam, a.rb, a.tangent, coef[5], coef[6], a.jc, a.jp,
                              a.diag, a.api, a.lu, a.piv, a.wm, a.loads[0]) == 0

    def solve():
        xb[:] = a.rb
        xj[:] = a.rc
        kernels.solve(bi, starts, a.jp, a.api, a.diag, a.lu, a.piv, a.wm, xb, xj)

    fused = route._Arrays(model, starts, fused=True)
    info = np.zeros(4)

    def fused_pass():
        assert kernels.spherical_forward(bi, br, g, starts, tau, a.zp, a.zbp, a.zdp, guess, lam, a.tangent, coef[5],
                                         coef[6], fused.rc, fused.diag, fused.wm, fused.loc, fused.xb, fused.xj,
                                         fused.power, info) == 0

    def fused_back():
        kernels.spherical_back_substitute(bi, starts, fused.wm, fused.diag, fused.xb, fused.xj)

    update()
    factor()
    return {"update": update, "residual": residual, "residual+factor": factor, "solve": solve,
            "fused_forward": fused_pass, "fused_back": fused_back}


def pass_halves(n, calls):
    """(records, elimination) [ns a body]: min and tenth percentile of ``calls`` timed calls each on the first
    step's first iterate of an n-link chain (``phases``'s), the records of every body kept."""
    model, q0, v0 = hanging_chain(n, 1e-3)
    z, zd = augmented3d.absolute_from_joint(model, q0, v0)
    vdot, lam = augmented3d.forward_dynamics(model, z, zd)
    augmented3d.release_workspace(model)
    vdot, zb = route.to_body_axes(z, vdot), route.to_body_axes(z, zd)
    starts = augmented3d.row_starts(model)
    a = route._Arrays(model, starts, fused=True)
    am, af, gm, bt = generalized_alpha_coefficients(0.9)
    h = 0.01
    coef = np.array([h, am, af, gm, bt, h * h * bt * (1 - af) / (1 - am), h * gm * (1 - af) / (1 - am)])
    guess = np.empty_like(vdot)
    kernels.predict(zb, vdot, vdot, zb, coef, guess)
    kernels.update_state(z, zb, vdot, vdot, coef, guess, a.zp, a.zbp, a.zdp, a.tangent)
    bi, br, g, tau = model.body_int, model.body_real, model.gravity, np.zeros(0)
    records, out = np.zeros((n, kernels.LOCAL_SIZE)), np.zeros(4)
    times = np.zeros((calls, 3))
    for k in range(calls):
        a.diag[:] = 0.0
        start = time.perf_counter()
        kernels._spherical_bodies(bi, br, g, starts, tau, a.zp, a.zbp, a.zdp, guess, lam, a.tangent, coef[5], coef[6],
                                  a.rc, records, 0, n, 0, False)
        middle = time.perf_counter()
        kernels._spherical_eliminate(bi, br, starts, a.diag, a.wm, records, a.xb, a.xj, 0, n, 0, out)
        end = time.perf_counter()
        assert out[0] == 0.0
        # the records of the velocities' projection (``kernels.spherical_project``), whose elimination is the same
        kernels._spherical_bodies(bi, br, g, starts, tau, a.zp, a.zbp, a.zdp, guess, lam, a.tangent, 0.0, 0.0, a.rc,
                                  records, 0, n, 0, True)
        times[k] = middle - start, end - middle, time.perf_counter() - end
    times *= 1e9 / n
    return {"n": n, "calls": calls, "records_min_ns": float(times[:, 0].min()),
            "records_p10_ns": float(np.percentile(times[:, 0], 10)), "eliminate_min_ns": float(times[:, 1].min()),
            "eliminate_p10_ns": float(np.percentile(times[:, 1], 10)),
            "projection_records_min_ns": float(times[:, 2].min()),
            "projection_records_p10_ns": float(np.percentile(times[:, 2], 10))}


def run_pair(n, t_end):
    """The whole run (``rm.simulate``, 1e-3 rad, dt = 0.01 s) by the general kernels and by the fused passes, one
    after the other in this process: wall and CPU time a link-step, Newton iterations a step, the end states'
    largest difference."""
    model, q0, v0 = hanging_chain(n, 1e-3)
    out = {"n": n, "t_end": t_end}
    ends = []
    for fused in (False, True):
        route.FUSED_SPHERICAL = fused
        wall, cpu = time.perf_counter(), time.process_time()
        result = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", dt=0.01, formulation="augmented",
                             every=10**9)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        name = "fused" if fused else "general"
        out[f"{name}_wall_us_per_link_step"] = wall / result.nsteps / n * 1e6
        out[f"{name}_cpu_us_per_link_step"] = cpu / result.nsteps / n * 1e6
        out[f"{name}_iterations_per_step"] = result.newton_iterations / result.nsteps
        ends.append((result.z[-1], result.zd[-1]))
    route.FUSED_SPHERICAL = True
    out["z_difference"] = float(np.abs(ends[0][0] - ends[1][0]).max())
    out["zd_difference"] = float(np.abs(ends[0][1] - ends[1][1]).max())
    return out


def main():
    parser = command_line(__doc__, "implicit3d_phases")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--passes", type=int, default=0,
                        help="the fused pass's records and elimination alone, this many calls each (0: not)")
    parser.add_argument("--runs", type=float, default=0.0,
                        help="also the whole runs of this many simulated seconds, general against fused (0: none)")
    args = parser.parse_args()
    if args.passes:
        rows = [pass_halves(n, args.passes) for n in args.sizes]
        print_table(["N", "calls", "records min (p10) [ns/body]", "elimination min (p10) [ns/body]",
                     "projection's records min (p10)"],
                    [[r["n"], r["calls"], f"{r['records_min_ns']:.1f} ({r['records_p10_ns']:.1f})",
                      f"{r['eliminate_min_ns']:.1f} ({r['eliminate_p10_ns']:.1f})",
                      f"{r['projection_records_min_ns']:.1f} ({r['projection_records_p10_ns']:.1f})"] for r in rows])
        print(f"load: {os.getloadavg()[0]:.2f}")
        path = write_json(args.name + "_passes", {"load": os.getloadavg()[0], "rows": rows})
        print(f"wrote {path}")
        return
    if args.runs:
        pairs = [run_pair(n, args.runs) for n in args.sizes]
        print_table(["N", "t_end", "general wall (cpu) [us/link-step]", "fused wall (cpu)", "iter/step", "max |dz|",
                     "max |dzd|"],
                    [[r["n"], r["t_end"],
                      f"{r['general_wall_us_per_link_step']:.3g} ({r['general_cpu_us_per_link_step']:.3g})",
                      f"{r['fused_wall_us_per_link_step']:.3g} ({r['fused_cpu_us_per_link_step']:.3g})",
                      f"{r['general_iterations_per_step']:.2f} / {r['fused_iterations_per_step']:.2f}",
                      f"{r['z_difference']:.1e}", f"{r['zd_difference']:.1e}"] for r in pairs])
        print(f"load: {os.getloadavg()[0]:.2f}")
        path = write_json(args.name + "_runs", {"load": os.getloadavg()[0], "rows": pairs})
        print(f"wrote {path}")
        return
    rows = []
    for n in args.sizes:
        funcs = phases(n)
        wall = interleaved_samples(funcs, args.rounds, 0.3)
        cpu = interleaved_samples(funcs, args.rounds, 0.3, clock=time.process_time)
        row = {"n": n}
        for name in funcs:
            row[f"{name}_ns"] = float(np.median(wall[name])) / n * 1e9
            row[f"{name}_cpu_ns"] = float(np.median(cpu[name])) / n * 1e9
        row["factor_ns"] = row["residual+factor_ns"] - row["residual_ns"]
        row["factor_cpu_ns"] = row["residual+factor_cpu_ns"] - row["residual_cpu_ns"]
        row["iteration_ns"] = row["update_ns"] + row["residual+factor_ns"] + row["solve_ns"]
        row["iteration_cpu_ns"] = row["update_cpu_ns"] + row["residual+factor_cpu_ns"] + row["solve_cpu_ns"]
        for clock in ("", "_cpu"):
            row[f"fused_iteration{clock}_ns"] = sum(row[f"{k}{clock}_ns"] for k in ("update", "fused_forward",
                                                                                     "fused_back"))
        rows.append(row)
    names = ["update", "residual", "factor", "solve", "iteration", "fused_forward", "fused_back", "fused_iteration"]
    print_table(["N"] + [f"{k} [ns/body] wall (cpu)" for k in names],
                [[r["n"]] + [f"{r[k + '_ns']:.0f} ({r[k + '_cpu_ns']:.0f})" for k in names] for r in rows])
    print(f"load: {os.getloadavg()[0]:.2f}")
    path = write_json(args.name, {"load": os.getloadavg()[0], "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
