"""Cost of the spatial force elements (issue 18 item 3): forward dynamics of a chain of spherical joints with and
without elements, and the element pass alone (rm.element_forces), per call, N = 10 ... 1e5 links.

The loaded chain has one point-to-point spring-damper between each pair of neighbouring links and a rotational
spring-damper on every joint (2 N elements): the element pass is one kinematics pass plus one tip-to-base pass
(``_kernels.spatial_elements``), so it should cost about as much as the articulated-body algorithm's first pass,
and scale linearly. Medians of 7 repeats; the machine may be shared (compare ratios within one run).

    python3 benchmarks/spatial_elements.py [--max-links 100000]
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_time, print_table, write_json  # noqa: E402

import recursive_mbd as rm  # noqa: E402


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
    path = write_json("spatial_elements", {"rows": records})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
