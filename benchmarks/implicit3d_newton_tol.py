"""generalized_alpha in absolute coordinates: Newton iterations a step, time and accuracy, the default newton_tol and
first guess against the ones before, on the swinging chains of ``benchmarks/implicit3d.py``.

The chains of ``implicit3d.py`` (N slender spherical links, 1 m and 1 kg in all, tilted and pushed sideways),
dt = 0.01 s over ``--t-end``, each case run three ways in one process: "before", newton_tol = 1e-12 and the first
guess taking the constant acceleration only where no part's accelerations changed by more than half the part's
largest (``kernels.first_guess`` before, replayed here in Python: only the bound differs); "now", the defaults
(``augmented3d_implicit.NEWTON_TOL``, ``kernels.SMOOTH_CHANGE``); "reference", every step iterated two more times
after it is accepted (to the corrections' round-off, without the splits that a tolerance below round-off makes).
Printed: iterations a step (mean and largest), wall and CPU time, the end state's distance to the reference (the
centres of mass and quaternions, max |z|, and the velocities, max |zd|), and the tip's distance to dopri5 at
rtol = atol = 1e-6 (``implicit3d.py``'s reference; run once a chain, ``--dopri5 0`` skips it).

    python3 benchmarks/implicit3d_newton_tol.py [--cases TILT:N:RHO_INF ...] [--t-end T] [--dopri5 1]

Results in benchmarks/results/implicit3d_newton_tol.json.

Measured (the default cases, one process, the shared 2-core machine at a load of 8 to 9, so wall times several times
a quiet machine's and CPU times the better figure; dopri5 at rtol = atol = 1e-6 in the same process):

    case (tilt:N:rho_inf)  way     iter/step  most  wall [s]  CPU [s]  |dz| to ref  |dzd| to ref  tip to dopri5 [m]
    0.3:100:0.5            before  3.11       4     0.081     0.017    5.2e-13      3.7e-12       1.4e-04
                           now     2.89       3     0.064     0.015    4.2e-11      5.6e-09       1.4e-04
    0.3:1000:0.5           before  3.22       4     0.77      0.154    5.4e-10      4.1e-09       1.3e-04
                           now     3.05       4     0.71      0.140    1.2e-08      7.7e-08       1.3e-04 (dopri5 89 s)
    0.5:100:0.5            before  3.22       4     0.13      0.018    1.1e-10      4.6e-10       2.4e-04
                           now     3.00       4     0.27      0.030    1.8e-10      1.4e-08       2.4e-04
    0.5:1000:0.5           before  3.50       6     1.43      0.174    2.0e-10      7.7e-10       2.4e-04
                           now     3.18       5     1.42      0.176    2.0e-08      1.4e-07       2.4e-04 (dopri5 135 s)
    0.3:100:0.9            before  3.86       6     0.044     0.020    2.3e-09      6.9e-07       1.6e-04
                           now     3.41       6     0.049     0.017    3.2e-10      9.4e-08       1.6e-04
    0.001:10000:0.9        before  2.05       3     16.2      5.09     1.6e-13      5.6e-11       -
                           now     2.00       2     11.1      3.58     1.3e-13      1.1e-10       -

(|dz|: centres of mass [m] and quaternions; |dzd|: velocities [m/s] and angular velocities [rad/s], the free end's
short links' the largest: newton_tol = 1e-10 m/s at a 1 mm link's radius of gyration, 3e-4 m, is 3.4e-7 rad/s.)
The whips at rho_inf = 0.9 (0.3:1000:0.9, 0.5:100:0.9) stop at t = 0.789 and 0.741 s both ways (the free end's
spurious spin: ``recursive_mbd.integrate.augmented3d_implicit``, "Measured").
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
from _common import command_line, print_table, write_json  # noqa: E402
from implicit3d import tip  # noqa: E402
from spatial_simulate import hanging_chain  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd._kernels.augmented import implicit3d as kernels  # noqa: E402
from recursive_mbd.errors import SimulationError  # noqa: E402

DT = 0.01
CASES = ["0.3:100:0.5", "0.3:1000:0.5", "0.5:100:0.5", "0.5:1000:0.5", "0.3:100:0.9", "0.3:1000:0.9", "0.5:100:0.9",
         "0.001:10000:0.9"]
ORIGINAL_STEP, ORIGINAL_GUESS = kernels.newton_step, kernels.first_guess


def guess_before(zb0, acc0, vdot0, vdot_before, rate, coef, history, vdot):
    """``kernels.first_guess`` with the bound of the code before (0.5 times the part's largest acceleration)."""
    mean = np.empty_like(vdot0)
    kernels.predict(zb0, acc0, vdot0, rate, coef, mean)
    smooth = history != 0
    if smooth:
        change, distance, size = np.abs(vdot0 - vdot_before), np.abs(vdot0 - mean), np.abs(vdot0)
        for part in (slice(0, 3), slice(3, 6)):
            smooth = smooth and change[:, part].max() <= min(distance[:, part].max(), 0.5 * size[:, part].max())
    vdot[:] = vdot0 if smooth else mean
    return int(smooth)


def counted(taken, extra):
    """newton_step recording each step's iterations into ``taken``; ``extra`` more iterations after acceptance."""
    def step(*args):
        status = ORIGINAL_STEP(*args)
        info = args[-4]
        taken.append(int(info[0]))
        if extra and not status:
            z0, zb0, acc0, vdot0, coef, vdot, lam, zp, zbp, zdp, tangent = (args[k] for k in (6, 7, 8, 9, 10, 14, 15,
                                                                                          16, 17, 18, 19))
            # (not converged at tolerance 0: ignored; the estimate a copy)
            ORIGINAL_STEP(*args[:12], 0.0, extra, vdot, lam, *args[16:-1], args[-1].copy())
            kernels.update_state(z0, zb0, acc0, vdot0, coef, vdot, zp, zbp, zdp, tangent)
            info[0] = taken[-1]
        return status
    return step


def run(model, q0, v0, t_end, rho_inf, way):
    taken = []
    kernels.newton_step = counted(taken, 2 if way == "reference" else 0)
    kernels.first_guess = guess_before if way == "before" else ORIGINAL_GUESS
    options = {"newton_tol": 1e-12} if way == "before" else {}
    start, cpu = time.perf_counter(), time.process_time()
    try:
        result = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", formulation="augmented", dt=DT,
                             rho_inf=rho_inf, every=10**9, **options)
        failure = ""
    except SimulationError as error:
        result, failure = error.result, str(error)[:70]
    finally:
        kernels.newton_step, kernels.first_guess = ORIGINAL_STEP, ORIGINAL_GUESS
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return result, failure, taken, wall, cpu


def main():
    parser = command_line(__doc__, "implicit3d_newton_tol")
    parser.add_argument("--cases", nargs="+", default=CASES, help="TILT:N:RHO_INF")
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--dopri5", type=int, default=1, help="1: the tips against dopri5 (rtol = atol = 1e-6)")
    args = parser.parse_args()
    model, q0, v0 = hanging_chain(5, 0.3)
    for way in ("before", "now", "reference"):
        run(model, q0, v0, 2 * DT, 0.9, way)  # compile
    rows, tips = [], {}
    for case in args.cases:
        tilt, n, rho_inf = float(case.split(":")[0]), int(case.split(":")[1]), float(case.split(":")[2])
        model, q0, v0 = hanging_chain(n, tilt)
        runs = {way: run(model, q0, v0, args.t_end, rho_inf, way) for way in ("before", "now", "reference")}
        reference = runs["reference"][0]
        if args.dopri5 and n <= 1000 and (n, tilt) not in tips:
            rm.simulate(model, q0, v0, 2 * DT, method="dopri5", rtol=1e-6, atol=1e-6)  # compile
            start = time.perf_counter()
            explicit = rm.simulate(model, q0, v0, args.t_end, method="dopri5", rtol=1e-6, atol=1e-6)
            tips[n, tilt] = tip(model, explicit.q[-1]), time.perf_counter() - start
        for way, (result, failure, taken, wall, cpu) in runs.items():
            done = not failure and not runs["reference"][1]
            row = {"case": case, "way": way, "reached": result.nsteps * DT, "failure": failure,
                   "iterations_per_step": float(np.mean(taken)) if taken else None,
                   "most_iterations": max(taken, default=0), "split_steps": result.newton_split_steps,
                   "wall_s": wall, "cpu_s": cpu,
                   "z_to_reference": float(np.abs(result.z[-1] - reference.z[-1]).max()) if done else None,
                   "zd_to_reference": float(np.abs(result.zd[-1] - reference.zd[-1]).max()) if done else None,
                   "tip_to_dopri5": None, "dopri5_wall_s": None}
            if (n, tilt) in tips and not failure:
                row["tip_to_dopri5"] = float(np.linalg.norm(tip(model, result.q[-1]) - tips[n, tilt][0]))
                row["dopri5_wall_s"] = tips[n, tilt][1]
            rows.append(row)
            print(row, flush=True)
    print_table(["case", "way", "reached", "iter/step", "most", "splits", "wall [s]", "CPU [s]", "|dz| to ref",
                 "|dzd| to ref", "tip to dopri5 [m]", "dopri5 [s]", "failure"],
                [[r["case"], r["way"], f"{r['reached']:.2f}",
                  "-" if r["iterations_per_step"] is None else f"{r['iterations_per_step']:.2f}",
                  r["most_iterations"], r["split_steps"], f"{r['wall_s']:.3g}", f"{r['cpu_s']:.3g}",
                  *("-" if r[k] is None else f"{r[k]:.1e}" for k in ("z_to_reference", "zd_to_reference",
                                                                      "tip_to_dopri5")),
                  "-" if r["dopri5_wall_s"] is None else f"{r['dopri5_wall_s']:.3g}", r["failure"][:40]]
                 for r in rows])
    print(f"wrote {write_json(args.name, {'dt': DT, 't_end': args.t_end, 'rows': rows})}")


if __name__ == "__main__":
    main()
