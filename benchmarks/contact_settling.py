"""Where bdf's steps go on a body set down on the floor or on a slope: the settling against the rest.

    python3 benchmarks/contact_settling.py [--stiffness 1e6 1e9] [--atol 1e-8 1e-6] [--name contact_settling]

A planar block (1 kg, J = 0.02 kg m^2) on two capsule ends (a segment of 0.4 m with radius 5 cm), set down at rest
at the static depth of its weight's normal part, its stick springs unloaded (mu = 0.5, restitution 0.5,
min_impact_speed 0.1 m/s), on a level floor and on a slope of tan theta = 0.3 (below its friction angle: it sticks);
bdf at rtol 1e-6 over 1 s at its default orders on contacts (1-2). Columns: steps in all, in the first 0.1 s and
after it, the longest step [s], the distance it moved [m]. Prints a table and writes benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/bdf.py: before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm

G = 9.81


def block(stiffness, slope):
    """(model, q0) of the module doc on a slope of tan theta = ``slope``."""
    angle = math.atan(slope)
    model = rm.Model(gravity=(G * math.sin(angle), -G * math.cos(angle)))
    model.add_body(joint="planar", mass=1.0, inertia=0.02, name="block")
    model.add_ground()
    model.add_contact(
        "block",
        "floor",
        segment=((-0.2, 0.0), (0.2, 0.0)),
        radius=0.05,
        stiffness=stiffness,
        restitution=0.5,
        friction=0.5,
        min_impact_speed=0.1,
    )
    return model, [0.0, 0.05 - (0.5 * G * math.cos(angle) / stiffness) ** (1.0 / 1.5), 0.0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stiffness", type=float, nargs="+", default=[1e6, 1e9])
    parser.add_argument("--atol", type=float, nargs="+", default=[1e-8, 1e-6])
    parser.add_argument("--name", default="contact_settling")
    args = parser.parse_args()
    rows, record = [], []
    for stiffness in args.stiffness:
        for slope in (0.0, 0.3):
            model, q0 = block(stiffness, slope)
            for atol in args.atol:
                result = rm.simulate(model, q0, [0.0, 0.0, 0.0], 1.0, method="bdf", rtol=1e-6, atol=atol)
                first = int((result.t[1:] <= 0.1).sum())
                moved = float(np.hypot(*(result.q[-1, :2] - result.q[0, :2])))
                entry = {
                    "stiffness": stiffness,
                    "slope": slope,
                    "atol": atol,
                    "steps": result.nsteps,
                    "first_0.1s": first,
                    "longest_step": float(np.diff(result.t).max()),
                    "moved": moved,
                }
                record.append(entry)
                rows.append(
                    (
                        f"{stiffness:g}",
                        slope,
                        f"{atol:g}",
                        result.nsteps,
                        first,
                        result.nsteps - first,
                        f"{entry['longest_step']:.3g}",
                        f"{moved:.3g}",
                    )
                )
                print(*rows[-1], flush=True)
    print_table(("k", "tan theta", "atol", "steps", "in 0.1 s", "after", "longest step", "moved"), rows)
    write_json(args.name, {"runs": record})


if __name__ == "__main__":
    main()
