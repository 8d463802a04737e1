"""Contact on a spatial model: a 3D chain of N capsule links dropped onto a table, with generalized_alpha and bdf
against dopri5.

    python3 benchmarks/contact3d.py [--links 100] [--t-end 0.3] [--tilt 0.05] [--ga-step 2.5e-4 1.25e-4] [--rtol 1e-6]
                                    [--bdf-rtol 1e-5 (0: no bdf run)] [--reference-rtol 1e-8]
    python3 benchmarks/contact3d.py --broad-phase 1000 10000 100000
    python3 benchmarks/contact3d.py --bdf-newton [--links 20] [--slide 0.5] [--repeats 3]

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

--broad-phase N ...: the self-contact pairs' cost per call against N instead (``_kernels.spatial.pairs.pair_forces``,
timed alone at one state, the sweep's order kept between calls as in a run): a chain of N links of the same
capsules in one self-contact set (k = 1e4 N/m^1.5), coiled into a helix about the x axis, 20 links a turn, whose
turns lie on each other (the pitch 2 % below the capsules' diameter: each link touches those of the turns beside
it). The table gives the time per call, the touching pairs and the pairs tested by the narrow phase; the slope is the
log-log fit of the time per call against N (1 for a cost linear in N). Writes benchmarks/results/contact3d.json.
Measured (the same machine, load about 2), ``--broad-phase 1000 10000 100000``: 0.875, 8.93 and 92.3 ms per call
(875, 893 and 923 ns a link) with 2,940, 29,940 and 299,940 pairs touching (each tested by the narrow phase: the
boxes that overlap in x, y and z are those of touching links here); slope 1.012.

--bdf-newton: bdf's Newton iteration on contacts (``_kernels.spatial.bdf``, "Contacts": the exact matrix N where a
body's contacts are stiff on the step's scale, else S with their symmetric part), on two runs: a capsule (1 kg, its
end spheres of radius 5 cm 0.4 m apart) set down on a slope of 0.5 rad with mu = 0.3 on a Hertz contact of
k = 1e9 N/m^1.5, sliding 1.5 s at rtol 1e-6; and the chain above (--links, tilted by --tilt) thrown along x at
--slide m/s as it is dropped, so that it lands sliding, to --t-end at --bdf-rtol. The table gives the median wall
time of --repeats runs, the steps, rejected steps, Newton iterations and factorisations a step, and the end position
of the first body (x, z); the json has the end configurations, to compare code versions.
Measured (a shared 2-core machine, load about 3.8; "before": this script run on the code where bdf took the
contacts' symmetric part in S alone), ``--bdf-newton --links 20``: the capsule 4,111 steps (156 rejected), 2.09
Newton iterations and 0.36 factorisations a step, 0.16 s; before 5,002 steps (984 rejected: Newton failures), 2.39
and 0.54, 0.22 s; the same end (x = 2.385681080 m). The chain of 20 links landing at 0.5 m/s, 0.3 s at rtol 1e-5:
20,860 steps (3,481 rejected), 2.35 and 0.45 a step, 2.5 s, before and after alike to the last digit: its steps
(about 15 us, set by the error test through the landing and the stick-slip of its 40 rows) keep the contacts soft
on the step's scale, where bdf keeps S (with N at every factorisation it took 20-30 % more wall time for the same
iterations).
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS (benchmarks/blas_threads.py). Set the variables to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import math
import time

import numpy as np
from _common import command_line, median_time, print_table, write_json

import recursive_mbd as rm
from recursive_mbd._kernels.spatial import layout as spatial_layout
from recursive_mbd._kernels.spatial.pairs import pair_forces
from recursive_mbd.dynamics.spatial import _poses

LENGTH, MASS, RADIUS, HEIGHT = 0.01, 0.01, 0.0025, 0.05
TURN = 20  # links a turn of the coil (--broad-phase)


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


def coil(links):
    """A chain of ``links`` links (the capsules of ``chain``, spherical joints, one self-contact set) and its q,
    coiled into a helix about the x axis whose turns touch (module docstring)."""
    model = rm.Model3D()
    inertia = (MASS * RADIUS ** 2 / 2.0, MASS * LENGTH ** 2 / 12.0, MASS * LENGTH ** 2 / 12.0, 0.0, 0.0, 0.0)
    model.add_body(joint="free", mass=MASS, inertia=inertia, com=(LENGTH / 2.0, 0.0, 0.0), name="link0")
    if links > 1:
        model.add_bodies(np.arange(links - 1), "spherical", parent_point=(LENGTH, 0.0, 0.0), mass=MASS,
                         inertia=inertia, com=(LENGTH / 2.0, 0.0, 0.0))
    model.add_self_contact(np.arange(links), segment=((0.0, 0.0, 0.0), (LENGTH, 0.0, 0.0)), radius=RADIUS,
                           stiffness=1e4, restitution=0.3, friction=0.3, name="coil")
    pitch = 0.98 * 2.0 * RADIUS
    step = 2.0 * math.pi / TURN
    rise = pitch / TURN  # along x a link
    helix = math.sqrt(LENGTH ** 2 - rise ** 2) / (2.0 * math.sin(step / 2.0))  # chords of LENGTH
    angle = step * np.arange(links + 1)
    nodes = np.column_stack((rise * np.arange(links + 1), helix * np.cos(angle), helix * np.sin(angle)))
    along = np.diff(nodes, axis=0) / LENGTH  # each link's x axis
    side = np.cross(along, np.array([1.0, 0.0, 0.0]))
    side /= np.linalg.norm(side, axis=1)[:, None]
    frames = np.stack((along, side, np.cross(along, side)), axis=2)  # (links, 3, 3): columns x, y, z in ground
    relative = np.einsum("kji,kjl->kil", frames[:-1], frames[1:])  # R_parent^T R_child
    quaternions = _quaternions(np.concatenate((frames[:1], relative)))
    q0 = np.zeros(model.nq)
    q0[:3] = nodes[0]
    q0[3:7] = quaternions[0]
    q0[7:] = quaternions[1:].ravel()
    return model, q0


def _quaternions(rotations):
    """(w, x, y, z) of rotation matrices (k, 3, 3) with trace > -1 (Shepperd's formula, its first case)."""
    w = 0.5 * np.sqrt(1.0 + np.trace(rotations, axis1=1, axis2=2))
    return np.column_stack((w, (rotations[:, 2, 1] - rotations[:, 1, 2]) / (4.0 * w),
                            (rotations[:, 0, 2] - rotations[:, 2, 0]) / (4.0 * w),
                            (rotations[:, 1, 0] - rotations[:, 0, 1]) / (4.0 * w)))


def broad_phase(sizes, name):
    """The pairs' time per call against N (module docstring); prints the table and writes the json."""
    rows, records = [], []
    for links in sizes:
        model, q0 = coil(links)
        ws = _poses(model, q0, np.zeros(model.nv))
        n = model.shape_int.shape[0]
        order, boxes = np.arange(n, dtype=np.int64), np.zeros((n, spatial_layout.N_BOX))
        wrench, energy, stats = np.zeros((model.nbodies, 6)), np.zeros(2), np.zeros(2)

        def call(model=model, ws=ws, order=order, boxes=boxes, wrench=wrench, energy=energy, stats=stats):
            pair_forces(model.body_int, model.shape_int, model.shape_real, order, boxes, ws.rot, ws.pos, ws.omega,
                        ws.vel, wrench, energy, stats)

        call()  # compiled, and the order sorted once: a run's calls find it nearly sorted
        seconds = median_time(call, min_time=0.5)
        rows.append((links, f"{1e3 * seconds:.3f}", f"{1e9 * seconds / links:.0f}", int(stats[0]), int(stats[1])))
        records.append({"links": links, "seconds_per_call": seconds, "touching_pairs": int(stats[0]),
                        "tested_pairs": int(stats[1])})
    slope = (float(np.polyfit(np.log(sizes), np.log([r["seconds_per_call"] for r in records]), 1)[0])
             if len(sizes) > 1 else float("nan"))
    print(f"self-contact pairs of a coiled chain, {TURN} links a turn")
    print_table(["links", "ms per call", "ns per link", "touching pairs", "tested pairs"], rows)
    print(f"time per call against N: log-log slope {slope:.3f}")
    write_json(name, {"broad_phase": records, "slope": slope})


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


def slope_capsule(stiffness=1e9, angle=0.5, friction=0.3):
    """A capsule (1 kg, end spheres of radius 0.05 at x = -0.2, 0.2) on a free joint, set down at rest on a slope of
    ``angle`` (gravity turned: the floor's x axis runs downhill) at the depth that carries its weight: (model, q0)."""
    model = rm.Model3D(gravity=(9.81 * math.sin(angle), 0.0, -9.81 * math.cos(angle)))
    model.add_body(joint="free", mass=1.0, inertia=0.02, name="capsule")
    model.add_ground()
    model.add_contact("capsule", "floor", segment=((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0)), radius=0.05,
                      stiffness=stiffness, restitution=0.5, friction=friction, min_impact_speed=0.1)
    depth = (0.5 * 9.81 * math.cos(angle) / stiffness) ** (1.0 / 1.5)
    return model, np.array([0.0, 0.0, 0.05 - depth, 1.0, 0.0, 0.0, 0.0])


def bdf_newton(args):
    """bdf's Newton iterations on a sliding capsule and a chain landing sliding (module docstring)."""
    capsule, q_capsule = slope_capsule()
    links, q_chain = chain(args.links, args.tilt)
    v_chain = np.zeros(links.nv)
    v_chain[0] = args.slide
    cases = [("capsule on a slope, k 1e9, 1.5 s", capsule, q_capsule, np.zeros(6), 1.5, 1e-6),
             (f"{args.links} links landing at {args.slide:g} m/s, {args.t_end:g} s", links, q_chain, v_chain,
              args.t_end, args.bdf_rtol)]
    rows, records = [], []
    for name, model, q0, v0, t_end, rtol in cases:
        rm.simulate(model, q0, v0, 1e-3, method="bdf", rtol=rtol, atol=1e-9)  # compiled
        walls = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = rm.simulate(model, q0, v0, t_end, method="bdf", rtol=rtol, atol=1e-9)
            walls.append(time.perf_counter() - start)
        wall = float(np.median(walls))
        steps = result.nsteps
        rows.append((name, f"{rtol:g}", f"{wall:.3f}", steps, result.nrejected,
                     f"{result.newton_iterations / steps:.2f}", f"{result.newton_factorizations / steps:.2f}",
                     f"{result.q[-1, 0]:.9f}", f"{result.q[-1, 2]:.9f}"))
        records.append({"case": name, "rtol": rtol, "wall_s": wall, "steps": steps, "rejected": result.nrejected,
                        "newton_iterations": result.newton_iterations,
                        "factorizations": result.newton_factorizations, "q_end": result.q[-1].tolist()})
    print("bdf on contacts")
    print_table(["case", "rtol", "wall [s]", "steps", "rejected", "iter/step", "fact/step", "x end [m]",
                 "z end [m]"], rows)
    write_json(args.name, {"bdf_newton": records})


def main():
    parser = command_line(__doc__, "contact3d")
    parser.add_argument("--links", type=int, default=100)
    parser.add_argument("--t-end", type=float, default=0.3)
    parser.add_argument("--tilt", type=float, default=0.05)
    parser.add_argument("--ga-step", type=float, nargs="+", default=[2.5e-4, 1.25e-4])
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--bdf-rtol", type=float, default=1e-5)
    parser.add_argument("--reference-rtol", type=float, default=1e-8)
    parser.add_argument("--broad-phase", type=int, nargs="+", default=None)
    parser.add_argument("--bdf-newton", action="store_true")
    parser.add_argument("--slide", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.broad_phase:
        return broad_phase(args.broad_phase, args.name)
    if args.bdf_newton:
        return bdf_newton(args)
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
