"""The 3D hanging swing in absolute coordinates: wall time, iterations a step and error against the linear modes.

``rm.studies.hanging_swing_3d`` (a chain of N slender spherical links, 1 m and 1 kg in all, at rest in its first
mode along x and along y, largest tilts 1e-3 and 5e-4 rad) stepped by generalized_alpha in absolute coordinates
(``formulation="augmented"``, rho_inf = 0.9) at a fixed dt, for each N: the wall time of the run, microseconds per
link-step, Newton iterations a step, the largest deviation from the linear solution over the amplitude, and the peak
resident memory of the process so far. ``--no-carried-estimate`` runs the same without accepting a step's first
correction on the estimate of the step before (``kernels.first_correction_accepted``: every step takes at least
two iterations), the ablation of that rule.

Usage: ``python hanging_swing3d.py --sizes 100 1000 10000 100000 --t-end 1 --dt 0.01`` (the accuracy case, 1e4
links over 10 s within 1e-4 of the linear solution: ``--sizes 10000 --t-end 10 --dt 0.001``).

Measured on the 2-core development machine, quiet, warm cache (iteration counts do not depend on the load):
``--sizes 100 1000 10000 100000``: 1.01, 1.01, 1.01 and 1.11 iterations a step, 1e5 links 1 s in 7.66 s (0.77 us a
link-step, peak 570 MB); with ``--no-carried-estimate`` 2.00 each and 10.78 s for 1e5 links (the figures of one run
each, one after the other); the largest relative error 2.63e-4 in every row (the nonlinear terms and dt). The
accuracy case, ``--sizes 10000 --t-end 10 --dt 0.001``: 4.91e-5 of the amplitude, 1.00 iterations a step,
53.0 s (0.53 us a link-step; 105.1 s and 2.00 without the estimate). ``--sizes 1000000``: 1.99 iterations a step
either way (one short link's rotation oscillates, so the first guess is the mean velocity:
``integrate.augmented3d_implicit``, "Convergence").
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import resource  # noqa: E402

import numpy as np  # noqa: E402
from _common import command_line, print_table, write_json  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd.integrate import augmented3d_implicit  # noqa: E402


def without_carried_estimate():
    """Every step's Newton iteration given no estimate from the step before (NaN), for the ablation."""
    kernels = augmented3d_implicit.kernels
    original = kernels.newton_step

    def step(*args):
        return original(*args[:-1], np.full(4, np.nan))

    kernels.newton_step = step


def row(n, t_end, dt):
    out = rm.studies.hanging_swing_3d(n, (1e-3, 5e-4), t_end, "generalized_alpha", dt=dt, every=max(1, round(0.1 / dt)),
                                      formulation="augmented", rho_inf=0.9)
    steps = out["nsteps"]
    return {"n": n, "t_end": t_end, "dt": dt, "wall_s": out["seconds"], "modes_s": out["modes_seconds"],
            "us_per_link_step": 1e6 * out["seconds"] / (n * steps), "steps": steps,
            "iterations_per_step": out["newton_iterations"] / steps, "max_rel_error": out["max_rel_error"],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def main():
    parser = command_line(__doc__, "hanging_swing3d")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--dt", type=float, default=0.01)
    parser.add_argument("--no-carried-estimate", action="store_true",
                        help="accept no step's first correction on the estimate of the step before (ablation)")
    args = parser.parse_args()
    if args.no_carried_estimate:
        without_carried_estimate()
    row(5, 2 * args.dt, args.dt)  # compile (or load) the kernels outside the timings
    rows = [row(n, args.t_end, args.dt) for n in args.sizes]
    print_table(["N", "t_end [s]", "dt [s]", "wall [s]", "us/link-step", "iter/step", "max rel error", "peak MB"],
                [[r["n"], r["t_end"], r["dt"], f"{r['wall_s']:.2f}", f"{r['us_per_link_step']:.3f}",
                  f"{r['iterations_per_step']:.2f}", f"{r['max_rel_error']:.2e}", f"{r['peak_rss_mb']:.0f}"]
                 for r in rows])
    path = write_json(args.name, {"carried_estimate": not args.no_carried_estimate, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
