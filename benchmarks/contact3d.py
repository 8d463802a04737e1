"""Contact on a spatial model: a 3D chain of N capsule links dropped onto a table, with generalized_alpha and bdf
against dopri5.

    python3 benchmarks/contact3d.py [--links 100] [--t-end 0.3] [--tilt 0.05] [--ga-step 2.5e-4 1.25e-4] [--rtol 1e-6]
                                    [--bdf-rtol 1e-5 (0: no bdf run)] [--reference-rtol 1e-8]

The chain: links 1 cm long, 10 g, capsules of radius 2.5 mm (two rows each against the table), the first on a free
joint and the others on spherical joints, held straight along x, its lower end 5 cm above the table, tilted by --tilt
[rad] about y (0: level, every link lands at once at 1 m/s; else the lower end first, then the rest slaps down),
and dropped; linear contacts, k = 1e4 N/m (normal period 4.4 ms per link end), restitution 0.3 with
min_impact_speed 1 m/s, friction 0.3. Each method runs it to t_end; the table gives its wall time (the compiled
kernels warmed by a short run first), steps, Newton iterations and factorisations a step (the implicit methods),
the rows touching at t_end and the landed shape's error: max over links of the distance between their origins at
t_end and those of dopri5 at --reference-rtol [mm]. A run that stops is listed with its message. Writes
benchmarks/results/contact3d.json.

Measured (a shared 2-core machine, load about 4), ``python3 benchmarks/contact3d.py --bdf-rtol 0 --ga-step 5e-4
2.5e-4 1.25e-4``: 100 links, tilted 0.05 rad, 0.3 s (the chain lands from t = 0.1 s on; 121 rows touch at the
end), errors against dopri5 at rtol 1e-8 (24.0 s, 17,541 steps): dopri5 at rtol 1e-6 6.2 s, 5,204 steps, 0.51 mm;
generalized_alpha at 0.125 ms 2.1 s, 2,400 steps, 6.5 Newton iterations and 1.0 factorisations a step, 0.98 mm;
at 0.25 and 0.5 ms it stops at the landing (t = 0.100 s, 0.104 s) with SimulationError: a link end's impact at
1 m/s compressed over fewer than 4 steps. bdf at rtol 1e-5 (another run: the reference 19.5 s, generalized_alpha
at 0.125 ms 1.5 s) 20.6 s, 45,218 steps, 2.4 iterations and 0.44 factorisations a step, 0.45 mm. Level
(--tilt 0, every link landing at once, 0.2 s): dopri5 at rtol 1e-6 0.1 s, 65 steps, 0.006 mm; generalized_alpha
at 0.25 ms 0.3 s, 800 steps, 1.2 iterations a step, 0.064 mm.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS (benchmarks/blas_threads.py). Set the variables to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import math
import time

import numpy as np
from _common import command_line, print_table, write_json

import recursive_mbd as rm

LENGTH, MASS, RADIUS, HEIGHT = 0.01, 0.01, 0.0025, 0.05


def chain(links, tilt):
    """The chain of ``links`` capsule links over the table, tilted by ``tilt`` about y (module doc)."""
    model = rm.Model3D()
    inertia = (MASS * RADIUS ** 2 / 2.0, MASS * LENGTH ** 2 / 12.0, MASS * LENGTH ** 2 / 12.0, 0.0, 0.0, 0.0)
    for i in range(links):
        model.add_body(parent="ground" if i == 0 else f"link{i - 1}", joint="free" if i == 0 else "spherical",
                       parent_point=(0.0, 0.0, 0.0) if i == 0 else (LENGTH, 0.0, 0.0), mass=MASS, inertia=inertia,
                       com=(LENGTH / 2.0, 0.0, 0.0), name=f"link{i}")
    model.add_ground("table")
    model.add_contact([f"link{i}" for i in range(links)], "table", segment=((0.0, 0.0, 0.0), (LENGTH, 0.0, 0.0)),
                      radius=RADIUS, stiffness=1e4, exponent=1.0, restitution=0.3, friction=0.3,
                      min_impact_speed=1.0)
    q0 = np.zeros(model.nq)
    q0[2] = HEIGHT + links * LENGTH * math.sin(tilt)  # the far end HEIGHT above the table
    q0[3] = math.cos(tilt / 2.0)  # turned about y: the chain runs down along x
    q0[5] = math.sin(tilt / 2.0)
    q0[7::4] = 1.0  # every spherical joint's quaternion at the identity
    return model, q0


def origins(model, q):
    """The links' origins (nbodies, 3) at q."""
    return np.asarray(rm.forward_kinematics(model, q)[1])


def run(model, q0, t_end, **options):
    """(result or the error, wall time [s])."""
    start = time.perf_counter()
    try:
        result = rm.simulate(model, q0, np.zeros(model.nv), t_end, **options)
    except rm.SimulationError as error:
        return error, time.perf_counter() - start
    return result, time.perf_counter() - start


def main():
    parser = command_line(__doc__, "contact3d")
    parser.add_argument("--links", type=int, default=100)
    parser.add_argument("--t-end", type=float, default=0.3)
    parser.add_argument("--tilt", type=float, default=0.05)
    parser.add_argument("--ga-step", type=float, nargs="+", default=[2.5e-4, 1.25e-4])
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--bdf-rtol", type=float, default=1e-5)
    parser.add_argument("--reference-rtol", type=float, default=1e-8)
    args = parser.parse_args()
    model, q0 = chain(args.links, args.tilt)
    runs = [("dopri5", {"rtol": args.rtol, "atol": 1e-9})]
    runs += [("generalized_alpha", {"dt": dt}) for dt in args.ga_step]
    runs += [("bdf", {"rtol": args.bdf_rtol, "atol": 1e-9})] if args.bdf_rtol > 0.0 else []
    for method, options in runs:  # warm the compiled kernels
        run(model, q0, 1e-3, method=method, **({**options, "dt": 1e-4} if "dt" in options else options))
    reference, wall = run(model, q0, args.t_end, rtol=args.reference_rtol, atol=1e-12)
    target = origins(model, reference.q[-1])
    rows = [("dopri5 (reference)", f"rtol {args.reference_rtol:g}", f"{wall:.1f}", reference.nsteps, "", "",
             int(reference.contact_forces()["active"][-1]), 0.0)]
    records = []
    for method, options in runs:
        result, wall = run(model, q0, args.t_end, method=method, **options)
        setting = f"dt {options['dt']:g}" if "dt" in options else f"rtol {options['rtol']:g}"
        if isinstance(result, Exception):
            rows.append((method, setting, f"{wall:.1f}", "", "", "", "", str(result)[:100]))
            records.append({"method": method, **options, "wall_s": wall, "failure": str(result)})
            continue
        iterations = getattr(result, "newton_iterations", None)
        factorizations = getattr(result, "newton_factorizations", None)
        error = 1e3 * np.linalg.norm(origins(model, result.q[-1]) - target, axis=1).max()
        rows.append((method, setting, f"{wall:.1f}", result.nsteps,
                     "" if iterations is None else f"{iterations / result.nsteps:.2f}",
                     "" if factorizations is None else f"{factorizations / result.nsteps:.2f}",
                     int(result.contact_forces()["active"][-1]), f"{error:.3g}"))
        records.append({"method": method, **options, "wall_s": wall, "steps": result.nsteps,
                        "newton_iterations": iterations, "factorizations": factorizations, "error_mm": error})
    print(f"{args.links} links dropped onto a table, tilted {args.tilt:g} rad, {args.t_end:g} s")
    print_table(["method", "setting", "wall [s]", "steps", "iter/step", "fact/step", "touching", "error [mm]"], rows)
    write_json(args.name, {"links": args.links, "t_end": args.t_end, "tilt": args.tilt, "reference_wall_s": rows[0][2],
                           "runs": records})


if __name__ == "__main__":
    main()
