"""What lagging the body-body contacts of self-contact sets costs the implicit methods' Newton iterations.

    python3 benchmarks/contact_pairs.py [--stiffness 1e6 1e7 1e8] [--dt 1e-3 1e-4] [--rtol 1e-4 1e-6]
                                        [--t-end 0.5] [--cases stack ground pile] [--name contact_pairs]

generalized_alpha and bdf put the stiffness and damping of a contact with the environment, and of one between a
body and its parent, into their O(N) Newton matrices (how exactly: ``benchmarks/contact_newton.py``); the pairs of a
self-contact set (``add_self_contact``:
bodies not joined as parent and child) enter the residual only, their stiffness left out of the matrix (lagged).
Newton then converges on them like a fixed-point iteration whose contraction is about c_stiff k / m of the pair
(c_stiff = beta dt^2 for generalized_alpha): fast for a soft pair or a short step, not at all for a stiff one, where
the step is split. The cases, each at every stiffness [N/m^1.5, p = 1.5]:

- stack: spatial; a capsule (1 kg, radius 5 cm, 0.4 m long) resting on the floor, a second one across it, 2 cm
  above, dropped onto it (a pair: lagged), 0.5 s;
- ground: the same top capsule dropped onto a floor at the height of the first one's top (a row on the ground:
  exact), the same law: what the same contact costs with its stiffness in the matrix;
- pile: planar; the chain fountain's pile (``rm.studies.chain_fountain_model(90, 0.2, hanging=10)``: 90 capsule
  links of 1 cm, three rows of 23 lying on each other in a beaker, the end hanging over the rim), 0.05 s, in which
  its rows settle on each other (some 80 pairs touching) while the hanging end starts to pull.

Columns: wall time [s] (the compiled loops warmed up first), steps, Newton iterations per step, split steps (a
generalized_alpha step whose Newton iteration failed, retried as two halves), the largest Newton contraction
(the ratio of successive corrections), the run's status. Prints a table and writes benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/bdf.py: before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import time
import warnings

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm

ROD = ((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0))
QUARTER_Z = [math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]  # a quarter turn about z: x onto y


def stack(stiffness, on_pair=True):
    """(model, q0, qd0) of the stack (on_pair) or ground case of the module doc."""
    law = {"stiffness": stiffness, "restitution": 0.3, "friction": 0.5}
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    floor_depth = (9.81 / stiffness) ** (1.0 / 1.5)  # each end sphere of a carries half of both weights
    if on_pair:
        model.add_body(joint="free", mass=1.0, inertia=0.01, name="a")
        model.add_body(joint="free", mass=1.0, inertia=0.01, name="b")
        model.add_self_contact(["a", "b"], segment=ROD, radius=0.05, name="rods", impact_speed=1.0, **law)
        model.add_ground()
        model.add_contact("a", "floor", segment=ROD, radius=0.05, min_impact_speed=0.1, **law)
        q0 = [0.0, 0.0, 0.05 - floor_depth, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.17, *QUARTER_Z]
    else:
        model.add_body(joint="free", mass=1.0, inertia=0.01, name="b")
        model.add_ground(point=(0.0, 0.0, 0.1 - floor_depth))
        model.add_contact("b", "floor", segment=ROD, radius=0.05, min_impact_speed=0.1, **law)
        q0 = [0.0, 0.0, 0.17, *QUARTER_Z]
    return model, np.array(q0), np.zeros(12 if on_pair else 6)


def pile(stiffness):
    """(model, q0, qd0) of the pile case of the module doc."""
    model, q0, _ = rm.studies.chain_fountain_model(90, 0.2, hanging=10, stiffness=stiffness)
    return model, q0, np.zeros(model.nq)


CASES = {"stack": lambda k: stack(k, True), "ground": lambda k: stack(k, False), "pile": pile}
T_END = {"pile": 0.05}  # [s] (the others run --t-end)


def run(model, q0, qd0, t_end, method, **options):
    """(result, wall time [s], status): a run that stopped (SimulationError) gives the result it kept."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            result = rm.simulate(model, q0, qd0, t_end, method=method, t_eval=[0.0, t_end], **options)
            status = result.status
        except rm.SimulationError as err:
            result = err.result
            status = f"failed at t = {err.t:.3g} s"
            print(err, flush=True)
    return result, time.perf_counter() - start, status


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stiffness", type=float, nargs="+", default=[1e6, 1e7, 1e8])
    parser.add_argument("--dt", type=float, nargs="*", default=[1e-3, 1e-4])
    parser.add_argument("--rtol", type=float, nargs="*", default=[1e-4, 1e-6])
    parser.add_argument("--t-end", type=float, default=0.5)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--name", default="contact_pairs")
    args = parser.parse_args()
    runs = [("generalized_alpha", {"dt": dt}) for dt in args.dt]
    runs += [("bdf", {"rtol": rtol, "atol": 1e-3 * rtol}) for rtol in args.rtol]
    rows, record = [], {"t_end": args.t_end, "runs": []}
    for case in args.cases:
        for stiffness in args.stiffness:
            model, q0, qd0 = CASES[case](stiffness)
            for method, options in runs:
                run(model, q0, qd0, 0.002, method, **options)  # compile (and load) the loops first
                t_end = T_END.get(case, args.t_end)
                result, wall, status = run(model, q0, qd0, t_end, method, **options)
                steps = max(result.nsteps, 1)
                stats = {
                    name: getattr(result, "newton_" + name, None)
                    for name in ("iterations", "split_steps", "contraction_max")
                }
                entry = {
                    "case": case,
                    "t_end": t_end,
                    "stiffness": stiffness,
                    "method": method,
                    **options,
                    "wall_s": wall,
                    "steps": result.nsteps,
                    **stats,
                    "status": status,
                }
                record["runs"].append(entry)
                setting = f"dt {options['dt']:g}" if "dt" in options else f"rtol {options['rtol']:g}"
                rows.append(
                    (
                        case,
                        f"{stiffness:g}",
                        method,
                        setting,
                        f"{wall:.2f}",
                        result.nsteps,
                        f"{stats['iterations'] / steps:.2f}",
                        stats["split_steps"],
                        "" if stats["contraction_max"] is None else f"{stats['contraction_max']:.3g}",
                        status,
                    )
                )
                print(*rows[-1], flush=True)
    print_table(
        ("case", "k", "method", "setting", "wall [s]", "steps", "iter/step", "split", "contraction", "status"), rows
    )
    write_json(args.name, record)


if __name__ == "__main__":
    main()
