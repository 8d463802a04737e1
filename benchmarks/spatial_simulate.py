"""Compile time of the spatial time loops (issue 18 item 3): rm.simulate on a Model3D, fresh numba cache and warm.

Each figure is measured in a subprocess with its own NUMBA_CACHE_DIR: "cold" compiles everything that run needs
(the spatial kernels, the SpatialSystem overloads, the generic time loop for that system type), "warm" is a second
process reading that cache. Also the cost per right-hand-side evaluation (dopri5, the run's time over its
evaluations: steps, projections and output included) of a 20-link spherical chain, and of seed 002's centrifugal
governor as an open tree and with its two links as loops (the multiplier layer, projection after every step).

    python3 benchmarks/spatial_simulate.py

Then generalized_alpha and bdf against dopri5 at matched accuracy (``implicit_rows``) on a 3D hanging chain of N
spherical links (total length 1 m, mass 1 kg, tilted 1e-3 rad and pushed sideways: a small swing out of its
plane, issue 15's hanging swing in 3D) over 1 s: the error is the largest body-origin position error at t = 1 s
against dop853 at rtol = atol = 1e-12; each method at its cheapest setting reaching 1e-3 of the amplitude
(1e-6 m): dopri5 at the largest rtol = atol = 10^-k, generalized_alpha (rho_inf = 0.8, newton_tol = 1e-10) at
the largest dt = 1e-2 / 2^k at which Newton converges (large tilts are not converged at large steps: the lagged
terms of ``recursive_mbd.integrate.spatial_implicit``), bdf (orders up to 5, and max_order=2: A-stable, for an undamped
chain's unresolved high modes, ``recursive_mbd._kernels.planar.bdf``) at the largest rtol = atol = 10^-k.
Steps, Newton iterations per step, wall time (warm: compiled before timing).

    python3 benchmarks/spatial_simulate.py implicit [N ...]     (default 100 1000)

The same with closed loops (issue 18 item 3 with issue 15's loops): the chain's tip tied to two ground points
beside it by massless distance links (two distance loops, m = 2, closed at the start), so that generalized_alpha
runs its stabilised index-2 loop rows and dopri5 / dop853 the multiplier layer with projection:

    python3 benchmarks/spatial_simulate.py loops [N ...]        (default 10 100 1000)
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table, write_json  # noqa: E402

CODE = """
import time, numpy as np, recursive_mbd as rm
m = rm.Model3D(); m.add_body(joint='spherical', inertia=(1.0, 2.0, 3.0, 0, 0, 0), com=(0, 0, -1))
q = m.neutral(); v = np.array([0.1, 1.0, 0.0])
t = time.perf_counter(); rm.forward_dynamics(m, q, v); a = time.perf_counter()
rm.simulate(m, q, v, 0.1); b = time.perf_counter()
rm.simulate(m, q, v, 0.1, method='rk4', dt=0.01); c = time.perf_counter()
n = 20
chain = rm.Model3D()
chain.add_bodies(np.arange(-1, n - 1), 'spherical', parent_point=np.tile([0.0, 0.0, -0.1], (n, 1)),
                 mass=1.0 / n, inertia=(1e-4, 1e-4, 1e-6, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.05))
q0 = rm.integrate_configuration(chain, chain.neutral(), 0.3 * np.random.default_rng(0).normal(size=chain.nv))
rm.simulate(chain, q0, np.zeros(chain.nv), 0.01)
d = time.perf_counter(); res = rm.simulate(chain, q0, np.zeros(chain.nv), 2.0, rtol=1e-8, atol=1e-8)
e = time.perf_counter()
gov = rm.models.centrifugal_governor(closed=True)
v0 = np.array([8.0, 0.0, 0.0, 0.0]) + 0.5 * gov.dq_dphi(0.6)
times = []
for model in (rm.models.centrifugal_governor().model, gov.model):
    rm.simulate(model, gov.q(0.6), v0, 0.01)
    f = time.perf_counter(); run = rm.simulate(model, gov.q(0.6), v0, 2.0, rtol=1e-10, atol=1e-12)
    times.append((time.perf_counter() - f) / run.nfev)
print(a - t, b - a, c - b, (e - d) / res.nfev, *times)
"""


def run(cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split()]


def main():
    with tempfile.TemporaryDirectory() as cache:
        cold = run(cache)
        warm = run(cache)
    names = ("first forward_dynamics", "first simulate dopri5", "first simulate rk4", "per evaluation, 20 links",
             "per evaluation, governor tree", "per evaluation, governor loops")
    print(f"{'':32s} {'cold cache [s]':>15s} {'warm cache [s]':>15s}")
    for name, c, w in zip(names, cold, warm, strict=True):
        print(f"{name:32s} {c:15.4g} {w:15.4g}")
    path = write_json("spatial_simulate", {"cold": dict(zip(names, cold, strict=True)),
                                           "warm": dict(zip(names, warm, strict=True))})
    print(f"wrote {path}")


def hanging_chain(n, amplitude=1e-3, tied=False):
    """(model, q0, v0): n spherical links hanging from the ground, tilted ``amplitude`` [rad] about x, the top link
    turning about y at amplitude * 5/3 rad/s; ``tied``: the tip also held by two distance links of 0.3 m to ground
    points beside it along x and y (two distance loops closed at q0; simulate projects v0 onto them)."""
    import numpy as np  # noqa: PLC0415

    import recursive_mbd as rm  # noqa: PLC0415

    rod, mass = 1.0 / n, 1.0 / n
    inertia = mass * rod**2 / 12

    def tree():
        model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
        points = np.tile([0.0, 0.0, -rod], (n, 1))
        points[0] = 0.0  # the first joint at the ground's origin
        model.add_bodies(np.arange(-1, n - 1), "spherical", parent_point=points, mass=mass,
                         inertia=(inertia, inertia, 0.1 * inertia, 0.0, 0.0, 0.0), com=(0.0, 0.0, -rod / 2))
        return model

    model = tree()
    delta = np.zeros(model.nv)
    delta[0] = amplitude
    v0 = np.zeros(model.nv)
    v0[1] = amplitude * 5.0 / 3.0
    q0 = rm.integrate_configuration(model, model.neutral(), delta)
    if tied:  # the tip where the tree puts it at q0 (a model is frozen once used: the loops go on a fresh one)
        tip, _ = rm.point_kinematics(model, q0, np.zeros(model.nv), n - 1, (0.0, 0.0, -rod))
        model = tree()
        for k, side in enumerate(((0.3, 0.0, 0.0), (0.0, 0.3, 0.0))):
            model.add_loop("distance", n - 1, (0.0, 0.0, -rod), "ground", tip + np.array(side), length=0.3,
                           name=f"tie{k}")
    return model, q0, v0


def implicit_rows(sizes=(100, 1000), t_end=1.0, amplitude=1e-3, relative=1e-3, tied=False):
    import time  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    import recursive_mbd as rm  # noqa: PLC0415

    def positions(model, q):
        return rm.forward_kinematics(model, q, np.zeros(model.nv))[1]

    target = relative * amplitude  # [m]: the chain is 1 m long
    rows, records = [], []
    for n in sizes:
        model, q0, v0 = hanging_chain(n, amplitude, tied)
        methods = [("dopri5", {"rtol": 1e-6, "atol": 1e-6}), ("generalized_alpha", {"dt": 1e-4}),
                   ("bdf", {"rtol": 1e-6, "atol": 1e-6})]
        for method, options in methods:
            rm.simulate(model, q0, v0, 2e-4, method=method, **options)  # compile
        start = time.perf_counter()
        reference = rm.simulate(model, q0, v0, t_end, method="dop853", rtol=1e-12, atol=1e-12, every=10**9)
        reference_time = time.perf_counter() - start
        exact = positions(model, reference.q[-1])
        record = {"n": n, "dop853_reference_wall_s": reference_time}
        # each method at its cheapest setting that reaches the target error (rtol down by 10, dt down by 2)
        tolerances = [{"rtol": 10.0**-k, "atol": 10.0**-k} for k in range(3, 11)]
        for label, method, settings in (
                ("dopri5", "dopri5", tolerances),
                ("generalized_alpha", "generalized_alpha",
                 [{"dt": 0.01 / 2**k, "rho_inf": 0.8, "newton_tol": 1e-10} for k in range(12)]),
                ("bdf", "bdf", tolerances),
                ("bdf max_order=2", "bdf", [{**options, "max_order": 2} for options in tolerances])):
            failures = []
            for options in settings:
                start = time.perf_counter()
                try:
                    run = rm.simulate(model, q0, v0, t_end, method=method, every=10**9, **options)
                except rm.SimulationError as error:  # Newton did not converge: the lagged terms (module docs)
                    failures.append((options, str(error)[:60]))
                    continue
                wall = time.perf_counter() - start
                error = float(np.abs(positions(model, run.q[-1]) - exact).max())
                if error <= target:
                    break
            per_step = run.newton_iterations / run.nsteps if method != "dopri5" else float("nan")
            setting = f"dt={options['dt']:g}" if "dt" in options else f"rtol={options['rtol']:g}"
            rows.append((n, f"{label} {setting}", run.nsteps, f"{per_step:.2f}", f"{error:.2e}", f"{wall:.3f}"))
            record[label] = {**options, "steps": run.nsteps, "nfev": run.nfev, "newton_per_step": per_step,
                             "contraction": getattr(run, "newton_contraction", None),
                             "factorizations": getattr(run, "newton_factorizations", None),
                             "order_limited_at": getattr(run, "order_limited_at", None), "wall_s": wall,
                             "error_m": error, "did_not_converge": [o for o, _ in failures]}
            if failures:
                settings_failed = [o.get("dt", o.get("rtol")) for o, _ in failures]
                print(f"N = {n}, {label}: Newton did not converge at {settings_failed}")
        records.append(record)
    print_table(("N", "method", "steps", "Newton/step", "error [m]", "wall [s]"), rows)
    path = write_json("spatial_simulate_implicit_loops" if tied else "spatial_simulate_implicit",
                      {"t_end": t_end, "amplitude_rad": amplitude, "target_error_m": target,
                       "loops": "tip tied by two 0.3 m distance links" if tied else None, "rows": records})
    print(f"wrote {path}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "implicit":
        implicit_rows(tuple(int(a) for a in sys.argv[2:]) or (100, 1000))
    elif len(sys.argv) > 1 and sys.argv[1] == "loops":
        implicit_rows(tuple(int(a) for a in sys.argv[2:]) or (10, 100, 1000), tied=True)
    else:
        main()
