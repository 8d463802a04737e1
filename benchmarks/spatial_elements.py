"""Cost of the spatial force elements (issue 18 item 3): forward dynamics of a chain of spherical joints with and
without elements, and the element pass alone (rm.element_forces), per call, N = 10 ... 1e5 links.

The loaded chain has one point-to-point spring-damper between each pair of neighbouring links and a rotational
spring-damper on every joint (2 N elements): the element pass is one kinematics pass plus one tip-to-base pass
(``_kernels.spatial.elements``), so it should cost about as much as the articulated-body algorithm's first pass,
and scale linearly. Medians of 7 repeats; the machine may be shared (compare ratios within one run).

Then the accuracy figures of the elements on a three-body model (spherical, universal and prismatic joints; spring-
dampers with a preload, joint springs, a rest quaternion): |Q + dV/d delta| / |Q| by 5-point differences of the
spring potential along integrate_configuration (h = 1e-3), and over 2 s of dop853 at rtol = atol = 1e-12 the
energy drift with springs only and the energy balance with dampers, a follower force and a torque(t), both
relative to the largest kinetic energy.

    python3 benchmarks/spatial_elements.py [--max-links 100000]
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_time, print_table, write_json  # noqa: E402

import recursive_mbd as rm  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from _helpers import spring_linkage  # noqa: E402


def chain(n, elements):
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_bodies(np.arange(-1, n - 1), "spherical", parent_point=np.tile([0.0, 0.0, -1.0 / n], (n, 1)),
                     mass=1.0 / n, inertia=(1e-4, 1e-4, 1e-6, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5 / n))
    if elements:
        for i in range(n):
            model.add_joint_spring_damper(i, 0.1, 0.01)
            if i:
                model.add_spring_damper(i - 1, (0.01, 0.0, 0.0), i, (0.01, 0.0, 0.0), 10.0, 0.1,
                                        rest_length=1.0 / n)
    q = rm.integrate_configuration(model, model.neutral(), 0.1 * np.random.default_rng(0).normal(size=model.nv))
    return model, q, np.random.default_rng(1).normal(size=model.nv)


def three_bodies(damping, loads=False):
    """The spring linkage of the tests (spherical, universal and prismatic joints), the arm's joint spring at rest
    when turned 0.4 rad about x; with ``loads``, a follower force on the slider and a torque(t) on the arm."""

    def add_loads(model):
        model.add_force("slider", (0.0, 0.1, 0.0), (0.0, 1.0, 0.5), frame="body")
        model.add_torque("arm", lambda t: (0.3 * np.sin(3 * t), 0.0, 0.2))

    return spring_linkage(damping, (np.cos(0.2), np.sin(0.2), 0.0, 0.0), add_loads if loads else None)


def accuracy():
    model, q, _ = three_bodies(0.0)
    rest = np.zeros(model.nv)
    forces = rm.element_forces(model, q, rest)["generalized_forces"]

    def potential(step, k):
        return rm.element_forces(model, rm.integrate_configuration(model, q, step * np.eye(model.nv)[k]),
                                 rest)["potential"]

    h = 1e-3
    gradient = np.array([(potential(-2 * h, k) - 8 * potential(-h, k) + 8 * potential(h, k) - potential(2 * h, k))
                         / (12 * h) for k in range(model.nv)])
    figures = {"gradient_error": float(np.abs(forces + gradient).max() / np.abs(forces).max())}
    model, q0, v0 = three_bodies(0.0)
    result = rm.simulate(model, q0, v0, 2.0, method="dop853", rtol=1e-12, atol=1e-12)
    kinetic, potential_energy = result.energy()
    total = kinetic + potential_energy
    figures["energy_drift_springs"] = float(np.abs(total - total[0]).max() / kinetic.max())
    model, q0, v0 = three_bodies(0.4, loads=True)
    result = rm.simulate(model, q0, v0, 2.0, method="dop853", rtol=1e-12, atol=1e-12)
    figures["energy_balance_dampers"] = float(np.abs(result.energy_balance()).max() / result.energy()[0].max())
    figures["dissipated_work_J"] = float(result.dissipated_work[-1])
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-links", type=int, default=100_000)
    args = parser.parse_args()
    rows, records = [], []
    n = 10
    while n <= args.max_links:
        plain, q, v = chain(n, False)
        loaded, _, _ = chain(n, True)
        out = np.empty(plain.nv)
        fd_plain = median_time(lambda m=plain, q=q, v=v, out=out: rm.forward_dynamics(m, q, v, out=out))
        fd_loaded = median_time(lambda m=loaded, q=q, v=v, out=out: rm.forward_dynamics(m, q, v, out=out))
        pass_only = median_time(lambda m=loaded, q=q, v=v: rm.element_forces(m, q, v))
        records.append({"links": n, "elements": loaded.nelements, "fd_plain_s": fd_plain, "fd_loaded_s": fd_loaded,
                        "element_forces_s": pass_only})
        rows.append((n, loaded.nelements, f"{fd_plain * 1e6:.1f}", f"{fd_loaded * 1e6:.1f}",
                     f"{fd_loaded / fd_plain:.2f}", f"{pass_only * 1e6:.1f}", f"{pass_only / n * 1e9:.0f}"))
        n *= 10
    print_table(("links", "elements", "FD plain [us]", "FD + elements [us]", "ratio", "element_forces [us]",
                 "per link [ns]"), rows)
    figures = accuracy()
    for name, value in figures.items():
        print(f"{name:26s} {value:.3g}")
    path = write_json("spatial_elements", {"rows": records, "accuracy": figures})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
