"""Compile the kernels ahead of use (``rmbd compile``): each feature's kernels, in parallel processes.

numba compiles a kernel on its first call and caches the machine code on disk (``_kernels.cache``: one folder per
version and source, shared by every install), so the first use of each feature waits for its compilation. A
*job* here is the smallest call of one feature (a three-body model, a few milliseconds of simulated time): running
it compiles, or loads, every kernel the feature needs. ``compile_all`` runs the jobs in separate processes, as many
at once as asked, and reports each as it ends; afterwards every feature starts at once, in any process.
"""

import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import partial


def _planar_dynamics():
    import numpy as np  # noqa: PLC0415  (each job imports in its own process)

    from .dynamics import calls, kinematics  # noqa: PLC0415
    from .model.planar import Model  # noqa: PLC0415

    model = Model(gravity=(0.0, -9.81))
    model.add_body(parent="ground", joint="revolute", parent_point=(0, 0), child_point=(0, 0.5), mass=1.0,
                   inertia=1 / 12, name="rod")
    model.add_body(parent="rod", joint="prismatic", parent_point=(0, -0.5), axis=(0, -1), mass=0.5, inertia=0.01,
                   name="slider")
    q, qd = np.array([0.3, 0.1]), np.zeros(2)
    qdd = calls.forward_dynamics(model, q, qd)
    calls.forward_dynamics(model, q, qd, method="mass_matrix")
    calls.inverse_dynamics(model, q, qd, qdd)
    calls.mass_matrix(model, q)
    calls.bias_forces(model, q, qd)
    kinematics.forward_kinematics(model, q, qd)
    kinematics.point_kinematics(model, q, qd, "slider", (0.1, 0.0))
    kinematics.energy(model, q, qd)


def _simulate(model, q0, qd0, method, **options):
    """10 ms of ``rm.simulate`` (a step of 1 ms for the fixed-step methods)."""
    from .integrate.method_names import FIXED_STEP  # noqa: PLC0415
    from .integrate.simulate import simulate  # noqa: PLC0415

    if method in FIXED_STEP:
        options["dt"] = 1e-3
    simulate(model, q0, qd0, 0.01, method=method, progress=False, **options)


def _planar_run(method):
    import numpy as np  # noqa: PLC0415

    from .model import chains  # noqa: PLC0415

    _simulate(chains.serial_chain(3), np.array([0.5, 0.0, 0.0]), np.zeros(3), method)


def _four_bar_run(method, **options):
    import numpy as np  # noqa: PLC0415

    from .analysis import models  # noqa: PLC0415

    model, q0 = models.four_bar()
    _simulate(model, q0, np.zeros(3), method, **options)


def _spatial_run(method):
    import numpy as np  # noqa: PLC0415

    from .analysis import models  # noqa: PLC0415
    from .dynamics import calls  # noqa: PLC0415
    from .model.spatial import Model3D  # noqa: PLC0415

    model = models.heavy_top()
    q0, qd0 = model.neutral(), np.array([0.1, 0.0, 20.0])
    calls.forward_dynamics(model, q0, qd0)  # the route of trees of spherical and revolute joints
    other = Model3D()
    other.add_body(joint="free", inertia=0.1)
    other.add_body(0, "universal", axis=((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), inertia=0.1)
    calls.forward_dynamics(other, other.neutral(), np.zeros(other.nv))  # the general route
    _simulate(model, q0, qd0, method)


def _ensemble_run():
    import numpy as np  # noqa: PLC0415

    from .integrate.ensemble import simulate_many  # noqa: PLC0415
    from .model import chains  # noqa: PLC0415

    model = chains.serial_chain(3)
    q0 = np.zeros((2, 3))
    q0[:, 0] = (0.2, 0.4)
    simulate_many(model, q0, np.zeros((2, 3)), 0.01)


# name: (what it compiles, the job)
JOBS = {
    "planar-dynamics": ("planar forward and inverse dynamics, mass matrix, kinematics, energy", _planar_dynamics),
    "dopri5": ("the adaptive Runge-Kutta time loop (dopri5, dop853) on planar models", partial(_planar_run, "dopri5")),
    "rk4": ("the fixed-step time loop (rk4, implicit_midpoint) on planar models", partial(_planar_run, "rk4")),
    "generalized_alpha": ("generalized-alpha on planar models", partial(_planar_run, "generalized_alpha")),
    "bdf": ("bdf on planar models", partial(_planar_run, "bdf")),
    "loops": ("the loop layer with dopri5 (a four-bar)", partial(_four_bar_run, "dopri5")),
    "augmented": ("the augmented formulation with dopri5 and projection",
                  partial(_four_bar_run, "dopri5", formulation="augmented", stabilization="projection")),
    "ensembles": ("simulate_many: the parallel ensemble time loop", _ensemble_run),
    "spatial-dopri5": ("spatial forward dynamics and dopri5", partial(_spatial_run, "dopri5")),
    "spatial-generalized_alpha": ("generalized-alpha on spatial models", partial(_spatial_run, "generalized_alpha")),
    "spatial-bdf": ("bdf on spatial models", partial(_spatial_run, "bdf")),
}


def run_job(name):
    """Run one job (compiling what it needs) in this process; returns its CPU seconds."""
    start = time.process_time()
    JOBS[name][1]()
    return time.process_time() - start


def compile_all(names=None, jobs=None, out=sys.stderr):
    """Run the named jobs (default: all of ``JOBS``) in ``jobs`` processes at once (default: the CPU count);
    prints a line per job as it ends. Returns {name: CPU seconds of its process}."""
    names = list(JOBS) if names is None else list(names)
    unknown = [name for name in names if name not in JOBS]
    if unknown:
        raise ValueError(f"unknown compile job {unknown[0]!r}; the jobs: {', '.join(JOBS)}")
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    seconds = {}
    start = time.perf_counter()
    # fresh interpreters (spawn), not forks of this one: a fork of a process whose numba threads may be running is
    # unsafe, and each job should import what its feature needs, as a user's first use does
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_job, name): name for name in names}
        for done, future in enumerate(as_completed(futures), 1):
            name = futures[future]
            seconds[name] = future.result()
            print(f"[{done}/{len(names)}] {name}: {JOBS[name][0]} ({seconds[name]:.1f} s CPU, "
                  f"{time.perf_counter() - start:.0f} s so far)", file=out, flush=True)
    return seconds
