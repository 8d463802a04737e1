"""Newton iterations a step of generalized_alpha in absolute coordinates with joint loads in the Newton matrix.

The three-joint swinging chain of the tests (``tests/_helpers.swinging_chain``: spherical, revolute, universal),
rho_inf = 0.9, at dt = 0.01 and 0.005 s: a constant tau, joint dampers tau(t, q, v) = -c v (c = 0.01, 0.1, 1 N m s),
and the chain with a spring-damper on every joint, two point spring-dampers, a force and a torque
(``tests/test_augmented3d_implicit_features._sprung_chain``); and a chain of N slender spherical links
(``spatial_simulate.hanging_chain``, tilted 0.3 rad) with a rotational spring-damper on every joint, 0.2 s at
dt = 0.01 s: iterations a step, split steps and wall time a link-step (the joint loads' blocks by differences in
the general kernels, where the revision before them took the fused passes with the loads lagged).

    python3 benchmarks/implicit3d_loads.py [--sizes N ...] [--name NAME]

Runs on any revision with the same API (the revision before these blocks included, for the comparison). Results in
benchmarks/results/NAME.json (default implicit3d_loads).
"""

import sys
import time
from pathlib import Path

import numpy as np
from _common import command_line, print_table, write_json
from spatial_simulate import hanging_chain

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _helpers import swinging_chain  # noqa: E402
from test_augmented3d_implicit_features import _sprung_chain  # noqa: E402

import recursive_mbd as rm  # noqa: E402

ABS = {"method": "generalized_alpha", "formulation": "augmented"}


def damper(c):
    """tau(t, q, v) = -c v."""

    def tau(t, q, v):
        return -c * v

    return tau


def chain_cases():
    """(label, model, q0, v0, t_end, tau) of the three-joint chain."""
    model, q0, v0 = swinging_chain()
    sprung, sq0, sv0 = _sprung_chain()
    cases = [("tau constant", model, q0, v0, 0.2, np.array([0.3, -0.2, 0.1, 0.4, -0.3, 0.2]))]
    for c in (0.01, 0.1, 1.0):
        cases.append((f"dampers c = {c:g}", model, q0, v0, 0.2, damper(c)))
    cases.append(("elements", sprung, sq0, sv0, 0.3, None))
    return cases


def sprung_spherical_chain(n):
    """``hanging_chain(n, 0.3)`` with a rotational spring-damper on every joint (k = 1e-4 N m/rad, c = 1e-4 N m s)."""
    model, q0, v0 = hanging_chain(n, 0.3)
    model = model.copy() if hasattr(model, "copy") else model
    for i in range(n):
        model.add_joint_spring_damper(i, stiffness=1e-4, damping=1e-4)
    model.compile()
    return model, q0, v0


def run(model, q0, v0, t_end, dt, tau):
    start = time.perf_counter()
    try:
        result = rm.simulate(model, q0, v0, t_end, dt=dt, tau=tau, **ABS)
        status = "ok"
    except rm.SimulationError as error:
        result, status = error.result, f"stopped at {error.t:.3g} s"
    wall = time.perf_counter() - start
    steps = max(result.nsteps, 1)
    return {"iterations_per_step": result.newton_iterations / steps, "splits": int(result.newton_split_steps),
            "wall_s": wall, "steps": int(result.nsteps), "status": status}


def main():
    parser = command_line(__doc__, "implicit3d_loads")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100])
    args = parser.parse_args()
    records, rows = [], []
    for label, model, q0, v0, t_end, tau in chain_cases():
        record = {"case": label, "t_end": t_end}
        for dt in (0.01, 0.005):
            record[str(dt)] = run(model, q0, v0, t_end, dt, tau)
        records.append(record)
        rows.append([label] + [f"{record[str(dt)]['iterations_per_step']:.2f} ({record[str(dt)]['splits']} split)"
                               for dt in (0.01, 0.005)])
    print("Newton iterations a step, three-joint chain, rho_inf = 0.9")
    print_table(["case", "dt = 0.01", "dt = 0.005"], rows)
    rows = []
    for n in args.sizes:
        model, q0, v0 = sprung_spherical_chain(n)
        run(model, q0, v0, 0.02, 0.01, None)  # compile
        record = {"case": f"spherical chain with joint spring-dampers, N = {n}", "n": n,
                  **run(model, q0, v0, 0.2, 0.01, None)}
        records.append(record)
        rows.append([n, f"{record['iterations_per_step']:.2f}", record["splits"],
                     f"{1e6 * record['wall_s'] / (n * max(record['steps'], 1)):.2f}", record["status"]])
    if rows:
        print("Spherical chain tilted 0.3 rad, a spring-damper on every joint, 0.2 s at dt = 0.01 s")
        print_table(["N", "iterations a step", "splits", "us a link-step", "status"], rows)
    print(write_json(args.name, {"records": records}))


if __name__ == "__main__":
    main()
