"""result.multipliers of the augmented formulation against independent routes, on the four-bar.

    python3 benchmarks/multipliers_agreement.py [--name multipliers_agreement]

A crank torque 2 sin(3 t) N m for 0.5 s, rtol 1e-10 (stabilization "baumgarte" with alpha = beta = 0, and
"projection"): the augmented run's loop multipliers against ``loop_dynamics`` at the same (q, qd, tau(t)) and
against a recursive run at t_eval; the crank driven at 1 + 0.5 t rad for 1 s (rtol 1e-11) against
``kinematic_analysis``. Errors relative to the largest multiplier. Prints a table, writes
benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import warnings

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm


def crank_torque(t):
    return np.array([2.0 * np.sin(3.0 * t), 0.0, 0.0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="multipliers_agreement")
    args = parser.parse_args()
    model, q0 = rm.models.four_bar()
    rows = []
    samples = np.linspace(0.0, 0.5, 11)
    options = {"tau": crank_torque, "t_eval": samples, "rtol": 1e-10, "atol": 1e-12}
    recursive = rm.simulate(model, q0, np.zeros(3), 0.5, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the augmented route's notes on its stabilisation
        for stabilization in ("baumgarte", "projection"):
            run = rm.simulate(model, q0, np.zeros(3), 0.5, formulation="augmented", stabilization=stabilization,
                              **options)
            same = np.array([rm.loop_dynamics(model, q, qd, crank_torque(t)).multipliers
                             for t, q, qd in zip(run.t, run.q, run.qd, strict=True)])
            scale = np.abs(same).max()
            rows.append({"case": f"tau(t), {stabilization}", "reference": "loop_dynamics at the same state",
                         "error": float(np.abs(run.multipliers - same).max() / scale)})
            rows.append({"case": f"tau(t), {stabilization}", "reference": "recursive run, t_eval",
                         "error": float(np.abs(run.multipliers - recursive.multipliers).max() / scale)})
        drivers = {"crank": lambda t: 1.0 + 0.5 * t}
        samples = np.linspace(0.0, 1.0, 11)
        kinematic = rm.kinematic_analysis(model, drivers, samples, q0)
        run = rm.simulate(model, q0, np.zeros(3), 1.0, formulation="augmented", drivers=drivers, t_eval=samples,
                          rtol=1e-11, atol=1e-13)
    rows.append({"case": "driven crank", "reference": "kinematic_analysis",
                 "error": float(np.abs(run.multipliers - kinematic.multipliers).max()
                                / np.abs(kinematic.multipliers).max())})
    print_table(["case", "reference", "max error / max |lambda|"],
                [[r["case"], r["reference"], f"{r['error']:.2g}"] for r in rows])
    print(f"wrote {write_json(args.name, {'rows': rows})}")


if __name__ == "__main__":
    main()
