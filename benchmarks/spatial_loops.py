"""Cost of constrained forward dynamics on a spatial model: an N-link chain of spherical joints with its tip tied
to the ground by a spherical loop (m = 3), O(N m + m^3).

    python3 benchmarks/spatial_loops.py [--sizes 100 1000 10000 100000]
    python3 benchmarks/spatial_loops.py --implicit [--sizes 10 100 1000] [--t-end 1.0] [--dt 0.01]

Per evaluation: the tree alone (``dynamics.spatial.forward_dynamics``, the articulated-body pass), the loop layer
(constraint kernel + 1 articulated-body pass + m force-only passes on its factorisation + the m x m filtered
solve) through ``rm.forward_dynamics``, and the raw kernel without the Python wrapper. Then the responses
M^-1 J^T alone, two ways timed in interleaved rounds: m full articulated-body passes (no gravity, no velocity,
tau = J_r: how the loop layer solved them before) against ``unit_force_responses`` on the factorisation of the
pass that gives vdot (how it solves them now). Prints tables and the growth factor per decade; writes
benchmarks/results/spatial_loops.json.

``--implicit``: whole runs of the tied chain (bent, its tip tied where it is, released at rest) by
generalized_alpha at a fixed dt: in absolute coordinates (``formulation="augmented"``: the loop's rows and geometric
stiffness in the exact Newton matrix, a bordered solve on the tree factor) and in joint coordinates (the recursive
route: the loop's stiffness lagged); Newton iterations a step, wall time, the loop's largest gap over the samples,
a point of the middle link at t_end against a dop853 run (rtol 1e-10), or the run's SimulationError.
Writes benchmarks/results/spatial_loops_implicit.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS (benchmarks/blas_threads.py). Set the variables to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time

import numpy as np
from _common import command_line, median_time, print_growth, print_table, write_json
from forward_dynamics import interleaved

import recursive_mbd as rm
from recursive_mbd._kernels.spatial import loops as kernels
from recursive_mbd._kernels.spatial import tree as spatial_kernels
from recursive_mbd.dynamics import spatial_loops
from recursive_mbd.dynamics.loops import FILTER_RCOND


def chain(n, tip_loop):
    """n uniform rods (total length 1, mass 1) on spherical joints hanging from the ground origin."""
    model = rm.Model3D()
    length, mass = 1.0 / n, 1.0 / n
    inertia = (mass * length**2 / 12, mass * length**2 / 12, mass * length**2 / 200, 0.0, 0.0, 0.0)
    parents = np.arange(-1, n - 1)
    model.add_bodies(parents, "spherical", parent_point=np.where(parents[:, None] < 0, 0.0, (0.0, 0.0, -length)),
                     mass=mass, inertia=inertia, com=(0.0, 0.0, -length / 2))
    if tip_loop is not None:
        model.add_loop("spherical", n - 1, (0.0, 0.0, -length), "ground", tip_loop, name="tip")
    return model


def tied_chain(n):
    """The chain at a bent configuration with its tip tied where it is; (model, tree, q, v) with the loops closed."""
    rng = np.random.default_rng(n)
    tree = chain(n, None)
    q = rm.integrate_configuration(tree, tree.neutral(), rng.uniform(-0.5, 0.5, tree.nv) * 3.0 / n)
    tip, _ = rm.point_kinematics(tree, q, np.zeros(tree.nv), n - 1, (0.0, 0.0, -1.0 / n))
    model = chain(n, tip)
    q, v, _ = spatial_loops.project(model, q, rng.normal(size=model.nv))
    return model, tree, q, v


def main(sizes=(100, 1000, 10_000, 100_000)):
    rows, records, response_rows = [], [], []
    for n in sizes:
        model, tree, q, v = tied_chain(n)
        ws, lw = spatial_loops.loop_workspace(model)
        vdot = np.zeros(model.nv)

        def kernel(model=model, q=q, v=v, ws=ws, lw=lw, vdot=vdot):
            kernels.constrained_dynamics(
                model.body_int, model.body_real, model.gravity, model.loop_int, model.loop_real, q, v, ws.zeros,
                ws.ws, ws.S, ws.UD, ws.uD, ws.tmp, lw.rot, lw.pos, lw.omega, lw.vel, lw.acc, lw.point, lw.phi,
                lw.phid, lw.jac, lw.gamma, lw.weights, lw.resp, ws.zeros, lw.no_gravity, lw.stab, FILTER_RCOND,
                lw.lam, vdot, lw.info)

        t_tree = median_time(lambda tree=tree, q=q, v=v: rm.forward_dynamics(tree, q, v))
        t_loop = median_time(lambda model=model, q=q, v=v: rm.forward_dynamics(model, q, v))
        t_kernel = median_time(kernel)
        kernel()  # jac at q in lw.jac
        jac, resp = lw.jac, lw.resp
        args = (model.body_int, model.body_real)
        scratch = (ws.ws, ws.S, ws.UD, ws.uD, ws.tmp)

        def full_passes(q=q, ws=ws, lw=lw, jac=jac, resp=resp, args=args, scratch=scratch):
            for r in range(jac.shape[0]):
                spatial_kernels.forward_dynamics(*args, lw.no_gravity, q, ws.zeros, jac[r], *scratch, resp[r])

        def reused(jac=jac, resp=resp, args=args, scratch=scratch):
            spatial_kernels.unit_force_responses(*args, jac, *scratch, resp)

        full_passes()  # also leaves the factorisation at q that ``reused`` needs (no call below changes it)
        expected = resp.copy()
        reused()
        agreement = float(np.max(np.abs(resp - expected)) / np.max(np.abs(expected)))
        responses = interleaved({"full": full_passes, "reused": reused})
        records.append(dict(n=n, m=model.nconstraints, tree_s=t_tree, forward_dynamics_s=t_loop, kernel_s=t_kernel,
                            responses_full_passes_s=responses["full"], responses_reused_s=responses["reused"],
                            responses_relative_difference=agreement))
        response_rows.append([n, f"{responses['full'] * 1e6:.0f}", f"{responses['reused'] * 1e6:.0f}",
                              f"{responses['full'] / responses['reused']:.2f}", f"{agreement:.0e}"])
        rows.append([n, f"{t_tree * 1e6:.0f}", f"{t_kernel * 1e6:.0f}", f"{t_loop * 1e6:.0f}",
                     f"{t_kernel / t_tree:.2f}"])
    print("a spherical loop (m = 3) on an N-link spherical chain: time per forward-dynamics evaluation [us]")
    print_table(["N", "tree (ABA)", "loop kernel", "rm.forward_dynamics", "kernel / tree"], rows)
    print("the responses M^-1 J^T (m = 3) [us], interleaved rounds: m full ABA passes against "
          "unit_force_responses on the factorisation of the pass that gave vdot")
    print_table(["N", "m full passes", "unit_force_responses", "ratio", "rel. difference"], response_rows)
    print_growth(records, (("kernel time", "kernel_s"), ("forward_dynamics", "forward_dynamics_s")))
    print(f"wrote {write_json('spatial_loops', {'records': records})}")


def implicit_runs(sizes=(10, 100, 1000), t_end=1.0, dt=0.01):
    """generalized_alpha on the tied chain, both formulations (module docstring)."""
    rows, records = [], []
    for n in sizes:
        model, _, q, _ = tied_chain(n)
        v = np.zeros(model.nv)  # released at rest: the bent chain falls and swings under gravity, its tip tied
        tip = (0.0, 0.0, -1.0 / n)
        reference = rm.simulate(model, q, v, t_end, method="dop853", rtol=1e-10, atol=1e-10)
        exact = rm.point_kinematics(model, reference.q[-1], reference.qd[-1], n // 2, tip)[0]
        for formulation in ("augmented", "recursive"):
            started = time.perf_counter()
            try:
                result = rm.simulate(model, q, v, t_end, method="generalized_alpha", dt=dt, rho_inf=0.9,
                                     formulation=formulation)
            except rm.SimulationError as error:
                wall = time.perf_counter() - started
                records.append(dict(n=n, formulation=formulation, dt=dt, wall_s=wall, error=str(error)))
                rows.append([n, formulation, "-", f"{wall:.2f}", "-", "-", str(error)[:70]])
                continue
            wall = time.perf_counter() - started
            middle = rm.point_kinematics(model, result.q[-1], result.qd[-1], n // 2, tip)[0]
            apart = float(np.abs(middle - exact).max())
            per_step = result.newton_iterations / result.nsteps
            gap = float(result.constraint_drift.max()) if formulation == "augmented" else float(
                max(np.abs(spatial_loops.constraints(model, qs)[0]).max() for qs in result.q))
            records.append(dict(n=n, formulation=formulation, dt=dt, wall_s=wall, iterations_per_step=per_step,
                                loop_gap=gap, middle_point_vs_dop853=apart))
            rows.append([n, formulation, f"{per_step:.2f}", f"{wall:.2f}", f"{gap:.1e}", f"{apart:.1e}", ""])
    print(f"generalized_alpha on a chain of N spherical links tied at the tip (m = 3), {t_end:g} s at dt = {dt:g} s")
    print_table(["N", "formulation", "iterations/step", "wall [s]", "max |phi| [m]", "middle vs dop853 [m]",
                 "failure"], rows)
    print(f"wrote {write_json('spatial_loops_implicit', {'records': records})}")


if __name__ == "__main__":
    parser = command_line(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+")
    parser.add_argument("--implicit", action="store_true", help="whole generalized_alpha runs of the tied chain")
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--dt", type=float, default=0.01)
    options = parser.parse_args()
    if options.implicit:
        implicit_runs(options.sizes or (10, 100, 1000), options.t_end, options.dt)
    else:
        main(options.sizes or (100, 1000, 10_000, 100_000))
