"""Contact cost: a chain of N capsule links dropped onto a table, 1 s, with the explicit and implicit methods; the
contact kernel alone per call and its growth in N up to a 1e5-link chain lying on the floor; MuJoCo on the same
chain when it is installed.

    python3 benchmarks/contact.py [--sizes 1000 10000] [--floor 100000] [--t-end 1.0]
                                  [--methods dopri5 rk4 generalized_alpha bdf] [--step 1.25e-4] [--rtol 1e-6]
                                  [--ga-step 3.125e-5 ...] [--rho-inf 0.5] [--bdf-rtol 1e-5] [--newton-tol TOL]
                                  [--reference-rtol 1e-8] [--max-wall SECONDS] [--mujoco-sizes 100 200] [--no-mujoco]

The chain: links 1 cm long, 10 g, capsules of radius 2.5 mm, held horizontally 5 cm above the table with a gentle
wave (heights within +-1 cm, so that it lands over 20 ms rather than at once) and dropped; linear contacts, k = 1e4
N/m, restitution 0.3 with the impact speed scale (min_impact_speed) at the landing's 1 m/s, friction 0.3 (the
landing presses a link about 0.7 mm in). dopri5 at --rtol, rk4 at a fixed step (--step, 0.125 ms: at 0.25 ms rk4
ran the 1e3-link chain but diverged as the 1e4-link one landed, and stopped with a SimulationError),
generalized_alpha at each --ga-step (rho_inf --rho-inf) and bdf at --bdf-rtol run it for t_end; the table gives
their wall time, steps, Newton iterations per step and factorisations (the implicit methods), the touching rows per
step (the mean over 21 samples) and the contact kernel's time per call (``_kernels.planar.contact.contact_forces``
on the last state, timed alone; it visits every row, touching or not; a step calls it 4 (rk4) or about 9 (dopri5,
rejected steps included) times). With --reference-rtol, a dopri5 run at that rtol is each size's reference and
"error" is the landed shape's: max over links of the distance between their centres at t_end and the reference's
[mm]. A run that stops (a step that does not resolve the landing, Newton not converging, --max-wall reached) is
listed with its message, the time it reached and its Newton counts. The 1e5-link chain lies on the floor (every
row touching) and is stepped 40 times by rk4. The detection slope is the log-log fit of the kernel's time per call
against N.

Measured (a shared 2-core machine, load about 3; docs/benchmarks.md has the table):

    python3 benchmarks/contact.py --sizes 1000 --floor 0 --methods dopri5 generalized_alpha bdf \
        --ga-step 4e-5 3.125e-5 --reference-rtol 1e-8 --no-mujoco --max-wall 200

1e3 links, errors against dopri5 at rtol 1e-8 (114 s, 54,562 steps): dopri5 at rtol 1e-6 21 s, 11,389 steps, 2.4 mm;
bdf at rtol 1e-5 133 s, 123,584 steps, 3.4 iterations and 0.93 factorisations a step, 2.2 mm. generalized_alpha,
with each step's contact modes frozen over its Newton iterations (``_kernels.planar.implicit``):

    python3 benchmarks/contact.py --sizes 1000 --floor 0 --methods generalized_alpha --ga-step 1.25e-4 \
        --newton-tol 1e-10 --reference-rtol 1e-8 --no-mujoco

0.125 ms, 8,000 steps, 6.3 Newton iterations and 1.9 factorisations a step, 69 s at load 6 to 7 (the reference
took 270 s there), 8.7 mm (before: 101 s at 0.03125 ms, 9.3 iterations and 7.4 factorisations a step, 2.2 mm, and
Newton failing at longer steps). At 0.25 ms the impact watch stops the run (the landing is not resolved). The
landed shape differs by about 2 mm between any two accurate runs. At the default newton_tol 1e-12 Newton stalled
as the chain lands, at the round-off of its whipping end (2 to 3e-10); a stalled iteration is now converged within
the round-off measured at its iterate (``_kernels.planar.implicit.correction_round_off``):

    python3 benchmarks/contact.py --sizes 1000 10000 --floor 0 --methods generalized_alpha --ga-step 1.25e-4 \
        --no-mujoco --max-wall 300

1e3 links, 0.125 ms, default newton_tol: 58.7 s at load 5, 8,000 steps, 7.7 Newton iterations and 3.4
factorisations a step, 8.7 mm from dopri5 at rtol 1e-8 (--reference-rtol 1e-8: 363 s), as at newton_tol 1e-10.
At 1e4 links generalized_alpha at 0.125 ms diverged at the touch-down (t = 0.1015 s, at newton_tol 1e-10 and at
the default: 2,221 rows change mode in that step and Newton runs away from its first correction); at 0.0625 ms it
lands (0.2 s in 171 s at load 5, about 94 ms a step once landed, so some 25 minutes for 1 s). A step whose Newton
iteration fails is now taken again in halves, down to dt / 16 (``result.newton_split_steps``, the table's
"splits"), so the touch-down goes through at 0.125 ms:

    python3 benchmarks/contact.py --sizes 10000 --floor 0 --methods generalized_alpha --ga-step 1.25e-4 \
        --no-mujoco --t-end 0.15

0.15 s in 121 s at load 5 to 6, 1,200 steps, 37 of them split, 9.7 Newton iterations and 6.6 factorisations a
step. With --t-end 0.2 the run goes on to t = 0.1596 s (1,277 steps, 17,018 iterations, 12,445 factorisations),
where the impact watch stops it: a link bouncing back onto the table at 1.03 m/s was still compressing at only 3
step ends, so the impact needs a shorter step than 0.125 ms, as the 1e3-link chain's did at 0.25 ms. bdf at rtol
1e-5 reached t = 0.109 s in 240 s (before its blocks were made at the iterate's orientations; not measured since):
the 1e4-link chain in under two minutes is not met by either implicit method yet.

With the contacts' modes the law's at every Newton iterate (not held until Newton converged on them) the 1e4-link
chain lands at 0.125 ms without a split and runs the whole second (load 10 to 15, the same iteration):

    python3 benchmarks/contact.py --sizes 10000 --floor 0 --methods generalized_alpha --ga-step 1.25e-4 \
        --no-mujoco --t-end 1

1 s: 8,000 steps, 6.57 Newton iterations and 3.37 factorisations a step, no split, 143.5 s of CPU time (1,022 s wall
on the loaded machine); 0.2 s: 5.31 and 3.26, 17.2 s of CPU. docs/benchmarks.md has the comparison with the held modes
and why the impact watch asks for steps of about 0.1 ms at this chain's bounces.

A step with contacts is now converged where the error its Newton contraction predicts is within newton_tol and the
round-off measured at a recent stall (``_kernels.planar.implicit``), not iterated on until it stalls: the same 1 s
run, 92.8 s of CPU for the run alone (1,050 s wall at load 10 to 20), 3.87 iterations, 2.56 factorisations and 3.95
residual evaluations a step, no split, against 146.6 s (6.57, 3.37 and 7.47) for the earlier test run alongside it.
The two end states: links' centres 0.023 mm apart (median), 24.8 mm at most (heights 7.8 mm), below the 184 mm
between 0.125 ms and 0.0625 ms at 0.2 s (docs/benchmarks.md); dt against dt/2 at 1 s is not measured. The
1e3-link chain, 1 s: 5.08 -> 3.18 iterations and 1.72 -> 0.87 factorisations a step, 15.1 -> 10.9 s of CPU in the
same hour (load 6 to 10), its links' centres 0.031 mm from the earlier run's (both 6.85 mm from the earlier run at
0.0625 ms).

With the contacts' blocks on the table exact on each body (``_kernels.planar.contact``: the normal's and lever arm's
turn, sliding friction's mu dF_n; the elimination's left factor for the unsymmetric block), the same 1 s runs in one
hour (load 9 to 18): 200 links 3.11 -> 3.03 iterations and 0.53 -> 0.49 factorisations a step; 1e3 links 3.17 ->
3.13 and 0.86 -> 0.85, 5.6 and 5.9 s of CPU; 1e4 links 3.883 -> 3.885 and 2.571 -> 2.570, 96.4 and 111.7 s of CPU
(under the two minutes both; docs/benchmarks.md has the phases: the landing's iterations are its contact modes'
changes, not the lagged terms).

MuJoCo (3D): the same capsules in the x-z plane joined by hinges about y, the first with a free planar base (slide
x, slide z, hinge y), colliding with the plane only; the same step (its default semi-implicit Euler), its soft
contact with a time constant of the linear contact's period over pi and damping ratio 1. Its landed shape is
compared with rk4's (the links' heights after t_end: the contact laws differ, so the shapes agree to the depth of
the landing, not to round-off). Writes benchmarks/results/contact.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS (benchmarks/blas_threads.py). Set the variables to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import importlib.util
import math
import time

import numpy as np
from _common import command_line, median_time, print_table, write_json

import recursive_mbd as rm
from recursive_mbd._kernels.planar.contact import contact_forces

LINK, MASS, RADIUS, HEIGHT = 0.01, 0.01, 0.0025, 0.05  # [m], [kg], [m], [m]
STIFFNESS, RESTITUTION, FRICTION, IMPACT = 1e4, 0.3, 0.3, 1.0
STEP = 1.25e-4  # rk4's and MuJoCo's default step [s]: at 2.5e-4 rk4 diverges as the 1e4-link chain lands
GA_STEP, RHO_INF = 2.5e-4, 0.5  # generalized_alpha's default step [s] and spectral radius at infinity
BDF_RTOL = 1e-5


def link_angles(n, lying=False):
    """The links' absolute angles: pi / 2 points a link (along its -y axis) along +x; dropped, a wave of 0.5 m
    whose heights span +-1 cm."""
    theta = np.full(n, math.pi / 2.0)
    if not lying:
        theta += 0.12 * np.sin(2.0 * math.pi * np.arange(n) * LINK / 0.5)
    return theta


def chain(n, lying=False):
    """(model, q0): n capsule links along +x, the first free in the plane at its left end; dropped from HEIGHT
    with a wave of 1 cm, or ``lying`` on the floor, pressed in by its weight."""
    model = rm.Model(gravity=(0.0, -9.81), name=f"chain of {n} links on a table")
    names = [f"link{j + 1}" for j in range(n)]
    inertia = MASS * LINK ** 2 / 12.0
    # the free base as two massless sliders and a hinge (q as a planar joint's: x, y, angle; the same dynamics,
    # tests/test_model.py checks it on 1e4 links of 1 cm)
    model.add_body(joint="prismatic", axis=(1.0, 0.0), mass=0.0, name="slider x")
    model.add_body("slider x", joint="prismatic", axis=(0.0, 1.0), mass=0.0, name="slider y")
    model.add_body("slider y", child_point=(0.0, LINK / 2.0), mass=MASS, inertia=inertia, name=names[0])
    model.add_bodies(np.arange(2, n + 1), "revolute", parent_point=(0.0, -LINK / 2.0), child_point=(0.0, LINK / 2.0),
                     mass=MASS, inertia=inertia, names=names[1:])
    model.add_ground("table")
    model.add_contact(names, "table", segment=((0.0, LINK / 2.0), (0.0, -LINK / 2.0)), radius=RADIUS,
                      stiffness=STIFFNESS, exponent=1.0, restitution=RESTITUTION, friction=FRICTION,
                      min_impact_speed=IMPACT)
    theta = link_angles(n, lying)
    q0 = np.zeros(n + 2)
    q0[1] = RADIUS - MASS * 9.81 / (2.0 * STIFFNESS) if lying else RADIUS + HEIGHT
    q0[2] = theta[0]
    q0[3:] = np.diff(theta)
    return model, q0


def kernel_time(res, index=-1):
    """Seconds per call of the contact kernel on the sample ``index`` of a run (its kinematics evaluated first)."""
    system, _ = res._evaluate(index if index >= 0 else res.t.size + index)
    free = system.free
    y = np.concatenate((res.q[index, free], res.qd[index, free], [0.0, 0.0], res.contact_state[index].ravel()))
    contact_int, contact_real, per_contact = system.contacts[:3]
    wrench = np.zeros_like(system.wrench)
    energy = np.zeros(3)
    offset = 2 * free.size + 2

    def call():
        contact_forces(contact_int, contact_real, system.ws, system.com, y, offset, wrench, energy, per_contact,
                       np.zeros((2, 0), dtype=np.int64))

    return median_time(call, min_time=0.5)


def method_options(method, step, ga_step=GA_STEP, rho_inf=RHO_INF, rtol=1e-6, bdf_rtol=BDF_RTOL, newton_tol=None):
    """simulate's options for ``method``: dopri5 at ``rtol``, rk4 at ``step``, generalized_alpha at ``ga_step``
    (``rho_inf``), bdf at ``bdf_rtol`` (both at ``newton_tol``, None: simulate's default); (options, a label of the
    tolerance or step)."""
    newton = {} if newton_tol is None else dict(newton_tol=newton_tol)
    label = "" if newton_tol is None else f", newton_tol {newton_tol:g}"
    if method == "dopri5":
        return dict(rtol=rtol, atol=1e-3 * rtol), f"rtol {rtol:g}"
    if method == "bdf":
        return dict(rtol=bdf_rtol, atol=1e-3 * bdf_rtol, **newton), f"rtol {bdf_rtol:g}{label}"
    if method == "generalized_alpha":
        return dict(dt=ga_step, rho_inf=rho_inf, **newton), f"{ga_step * 1e3:g} ms, rho_inf {rho_inf:g}{label}"
    return dict(dt=step), f"{step * 1e3:g} ms"


def run(n, method, t_end, step, lying=False, max_wall=None, **settings):
    """(result, record) of the chain of n links run for t_end by ``method`` (options: ``method_options``)."""
    model, q0 = chain(n, lying)
    options, label = method_options(method, step, **settings)
    warm = dict(options, dt=2e-4) if "dt" in options else options
    rm.simulate(model, q0, np.zeros_like(q0), 4e-4, method=method, **warm)  # compile outside the timing
    if "dt" in options:  # a fixed step stores every every-th one
        options["every"] = max(1, round(t_end / options["dt"] / 20))
    else:
        options["t_eval"] = np.linspace(0.0, t_end, 21)
    start = time.perf_counter()
    res = rm.simulate(model, q0, np.zeros_like(q0), t_end, method=method, max_steps=10**8, max_wall_time=max_wall,
                      **options)
    wall = time.perf_counter() - start
    if not res.success:
        raise rm.SimulationError(f"{model.name}, {method}: {res.message}")
    active = res.contact_forces()["active"]
    iterations = getattr(res, "newton_iterations", None)
    return res, dict(n=n, method=method, setting=label, t_end=t_end, lying=lying, wall_s=wall, steps=int(res.nsteps),
                     evaluations=int(res.nfev), rows=2 * n, touching_mean=float(active[1:].mean()),
                     touching_end=int(active[-1]), kernel_us=kernel_time(res) * 1e6,
                     newton_per_step=None if iterations is None else iterations / res.nsteps,
                     factorizations=getattr(res, "newton_factorizations", None),
                     split_steps=getattr(res, "newton_split_steps", None))


def link_centres(model, res):
    """The links' centres (n, 2) at the last sample (bodies 0 and 1 are the base's sliders)."""
    z, _ = rm.augmented.absolute_from_joint(model, res.q[-1], res.qd[-1])
    return z[2:, :2]


def mujoco_run(n, t_end, step, heights_ours):
    """The same chain in MuJoCo: wall time for t_end at ``step`` and the links' final heights against ours."""
    import mujoco  # noqa: PLC0415 - optional, never a dependency

    period = 2.0 * math.pi * math.sqrt(MASS / 2.0 / STIFFNESS)
    theta = link_angles(n)
    # hinge about +y turns x towards -z: MuJoCo's angle about y is minus ours in the x-y plane (our y is its z)
    parts = []
    for j in range(n):
        angle = (theta[j] - (theta[j - 1] if j else math.pi / 2.0))
        pos = "0 0 0" if j == 0 else f"{LINK} 0 0"
        joints = ('<joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 0 1"/>'
                  '<joint type="hinge" axis="0 1 0"/>') if j == 0 else '<joint type="hinge" axis="0 1 0"/>'
        parts.append(f'<body pos="{pos}" euler="0 {-math.degrees(angle):.9f} 0">{joints}'
                     f'<geom type="capsule" fromto="0 0 0 {LINK} 0 0" size="{RADIUS}" mass="{MASS}" '
                     f'contype="1" conaffinity="0" friction="{FRICTION} 0 0"/>')
    xml = (f'<mujoco><option timestep="{step}" gravity="0 0 -9.81"/>'
           f'<default><geom solref="{period / math.pi} 1"/></default><worldbody>'
           f'<geom type="plane" size="100 100 0.1" contype="0" conaffinity="1" friction="{FRICTION} 0 0"/>'
           f'<body pos="0 0 {RADIUS + HEIGHT}">' + "".join(parts) + "</body>" * n + "</body></worldbody></mujoco>")
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    steps = round(t_end / step)
    mujoco.mj_step(model, data)  # first step outside the timing
    mujoco.mj_resetData(model, data)
    start = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(model, data)
    wall = time.perf_counter() - start
    heights = data.xipos[2:, 2]  # bodies 0 and 1: the world and the chain's starting frame
    return dict(n=n, wall_s=wall, steps=steps, touching_end=int(data.ncon),
                height_rms_diff_mm=float(np.sqrt(np.mean((heights - heights_ours) ** 2)) * 1e3),
                height_max_ours_mm=float(heights_ours.max() * 1e3), height_max_mujoco_mm=float(heights.max() * 1e3))


def main():
    parser = command_line(__doc__, "contact")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--floor", type=int, default=100000, help="links of the chain lying on the floor (0: none)")
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--methods", nargs="+", default=["dopri5", "rk4"],
                        choices=["dopri5", "rk4", "generalized_alpha", "bdf"])
    parser.add_argument("--step", type=float, default=STEP, help=f"rk4's and MuJoCo's step [s] (default {STEP:g})")
    parser.add_argument("--ga-step", type=float, nargs="+", default=[GA_STEP],
                        help=f"generalized_alpha's steps [s] (default {GA_STEP:g})")
    parser.add_argument("--rho-inf", type=float, default=RHO_INF, help="generalized_alpha's rho_inf")
    parser.add_argument("--rtol", type=float, default=1e-6, help="dopri5's rtol (atol 1e-3 rtol)")
    parser.add_argument("--bdf-rtol", type=float, default=BDF_RTOL, help="bdf's rtol (atol 1e-3 rtol)")
    parser.add_argument("--newton-tol", type=float, default=None, help="generalized_alpha's and bdf's newton_tol")
    parser.add_argument("--reference-rtol", type=float, default=0.0,
                        help="a dopri5 run at this rtol is the reference of each size's landed shape (0: none)")
    parser.add_argument("--max-wall", type=float, default=None, help="each run's max_wall_time [s]")
    parser.add_argument("--mujoco-sizes", type=int, nargs="+", default=[100, 200],
                        help="chains run in MuJoCo too (its cost grows much faster than N on a serial chain)")
    parser.add_argument("--no-mujoco", action="store_true")
    args = parser.parse_args()
    records = []
    failed = []
    cases = [(method, dict(ga_step=ga_step)) for method in args.methods
             for ga_step in (args.ga_step if method == "generalized_alpha" else [GA_STEP])]
    for n in args.sizes:
        reference = None
        if args.reference_rtol:
            res, record = run(n, "dopri5", args.t_end, args.step, rtol=args.reference_rtol)
            reference = link_centres(res.model, res)
            record.update(reference=True, error_mm=0.0)
            records.append(record)
            print(record, flush=True)
        for method, extra in cases:
            try:
                res, record = run(n, method, args.t_end, args.step, max_wall=args.max_wall, rho_inf=args.rho_inf,
                                  rtol=args.rtol, bdf_rtol=args.bdf_rtol, newton_tol=args.newton_tol, **extra)
            except rm.SimulationError as err:  # a step too long for the landing, or over max_wall: said, not timed
                failed.append(dict(n=n, method=method, setting=method_options(
                    method, args.step, rho_inf=args.rho_inf, rtol=args.rtol, bdf_rtol=args.bdf_rtol,
                    newton_tol=args.newton_tol, **extra)[1],
                    error=str(err)))
                partial = getattr(err, "result", None)  # the samples so far: how far it got, at what cost
                if partial is not None and partial.t.size:
                    failed[-1].update(t_reached=float(partial.t[-1]), steps=int(partial.nsteps),
                                      newton_iterations=getattr(partial, "newton_iterations", None),
                                      factorizations=getattr(partial, "newton_factorizations", None),
                                      split_steps=getattr(partial, "newton_split_steps", None))
                print(f"N = {n}, {method} {failed[-1]['setting']}: {err}", flush=True)
                continue
            if reference is not None:  # the landed shape: max over links of the centre's distance [mm]
                error = np.sqrt(((link_centres(res.model, res) - reference) ** 2).sum(axis=1))
                record["error_mm"] = float(error.max() * 1e3)
                record["height_error_mm"] = float(np.abs(link_centres(res.model, res)[:, 1] - reference[:, 1]).max()
                                                  * 1e3)
            records.append(record)
            print(record, flush=True)
    if args.floor:
        res, record = run(args.floor, "rk4", 40 * args.step, args.step, lying=True)
        records.append(record)
        print(record, flush=True)
    if records:  # (none where every run failed)
        print_table(["N", "method", "setting", "t_end [s]", "wall [s]", "steps", "Newton it./step", "factor.", "splits",
                     "rows", "touching/step", "kernel [us/call]", "error [mm]"],
                    [[r["n"], r["method"] + (" (lying)" if r["lying"] else "") + (" (reference)" if r.get("reference")
                                                                                   else ""),
                      r["setting"], f"{r['t_end']:g}", f"{r['wall_s']:.1f}", r["steps"],
                      "" if r["newton_per_step"] is None else f"{r['newton_per_step']:.2f}",
                      "" if r["factorizations"] is None else r["factorizations"],
                      "" if r["split_steps"] is None else r["split_steps"], r["rows"],
                      f"{r['touching_mean']:.0f}", f"{r['kernel_us']:.1f}",
                      f"{r['error_mm']:.3g}" if "error_mm" in r else ""] for r in records])
    for f in failed:
        print(f"failed: N = {f['n']}, {f['method']} {f['setting']}: {f['error']}",
              {key: f[key] for key in ("t_reached", "steps", "newton_iterations", "factorizations", "split_steps")
               if key in f})
    sizes = {r["n"]: r["kernel_us"] for r in records}
    ns = np.array(sorted(sizes))
    slope = float(np.polyfit(np.log(ns), np.log([sizes[n] for n in ns]), 1)[0]) if ns.size > 1 else float("nan")
    print(f"contact kernel time per call against N: log-log slope {slope:.3f} (N = {', '.join(map(str, ns))})")
    mujoco_records = []
    if not args.no_mujoco and importlib.util.find_spec("mujoco") is not None:
        rows = []
        for n in args.mujoco_sizes:
            res, record = run(n, "rk4", args.t_end, args.step)
            mujoco_records.append(mujoco_run(n, args.t_end, args.step, link_centres(res.model, res)[:, 1]))
            mujoco_records[-1]["rk4_wall_s"] = record["wall_s"]
            mujoco_records[-1]["rk4_touching_end"] = record["touching_end"]
            m = mujoco_records[-1]
            rows.append([n, f"{record['wall_s']:.2f}", f"{m['wall_s']:.2f}", m["steps"], record["touching_end"],
                         m["touching_end"], f"{m['height_rms_diff_mm']:.3f}",
                         f"{m['height_max_ours_mm']:.2f} / {m['height_max_mujoco_mm']:.2f}"])
        print_table(["N", "rk4 wall [s]", "MuJoCo wall [s]", "steps", "touching rows at t_end", "MuJoCo contacts",
                     "rms height diff [mm]", "max height ours / MuJoCo [mm]"], rows)
    elif not args.no_mujoco:
        print("MuJoCo is not installed (pip install mujoco): its comparison is left out")
    path = write_json(args.name, {"runs": records, "failed": failed, "kernel_slope": slope, "mujoco": mujoco_records,
                                  "chain": dict(link=LINK, mass=MASS, radius=RADIUS, height=HEIGHT,
                                                stiffness=STIFFNESS, restitution=RESTITUTION, friction=FRICTION,
                                                step=args.step)})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
