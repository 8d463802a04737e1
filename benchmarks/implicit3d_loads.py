"""Newton iterations a step of generalized_alpha and bdf in absolute coordinates with joint loads in the Newton matrix.

The three-joint swinging chain of the tests (``tests/_helpers.swinging_chain``: spherical, revolute, universal):
generalized_alpha at rho_inf = 0.9, dt = 0.01 and 0.005 s; bdf at rtol = atol = 1e-4 and 1e-6 (iterations a try,
every try counted, the tries the error test rejected and those whose Newton iteration failed included). Cases: a
constant tau, joint dampers tau(t, q, v) = -c v (c = 0.01, 0.1, 1 N m s), the chain with a spring-damper on every
joint, two point spring-dampers, a force and a torque (``tests/test_augmented3d_implicit_features._sprung_chain``),
and point spring-dampers alone (one from the ground to the last body, one between the first and the last: elements
that act on bodies, lagged in the matrix) of stiffness 20 and 200 N/m beside the chain without them (their
contraction). And a chain of N slender spherical links (``spatial_simulate.hanging_chain``, tilted 0.3 rad) with a
rotational spring-damper on every joint, 0.2 s at dt = 0.01 s (bdf: rtol = atol = 1e-4): iterations a step, split
steps and wall time a link-step (the joint loads' blocks by differences in the general kernels, where the revision
before them took the fused passes with the loads lagged).

    python3 benchmarks/implicit3d_loads.py [--sizes N ...] [--methods generalized_alpha bdf] [--name NAME]

Runs on any revision with the same API (the revision before these blocks included, for the comparison; a bdf run
that the revision refuses shows as "refused"). Results in benchmarks/results/NAME.json (default implicit3d_loads).
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
BDF = {"method": "bdf", "formulation": "augmented"}
STEPS = (0.01, 0.005)  # generalized_alpha's dt [s]
TOLERANCES = (1e-4, 1e-6)  # bdf's rtol = atol


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
    cases.append(("no loads", model, q0, v0, 0.3, None))
    for k in (20.0, 200.0):
        springs, pq0, pv0 = point_springs(k)
        cases.append((f"point springs k = {k:g}", springs, pq0, pv0, 0.3, None))
    return cases


def point_springs(k):
    """The swinging chain with a spring-damper (stiffness k [N/m], damping k / 40 [N s/m]) from the ground to its
    last body and one between its first and last bodies: elements that act on bodies only."""

    def elements(model):
        model.add_spring_damper("ground", (0.2, 0.1, -0.5), 2, (0.0, 0.0, -0.2), stiffness=k, damping=k / 40.0,
                                rest_length=0.3)
        model.add_spring_damper(0, (0.0, 0.1, 0.0), 2, (0.1, 0.0, 0.0), stiffness=k / 2.0, damping=k / 80.0,
                                rest_length=0.5)

    return swinging_chain(elements)


def sprung_spherical_chain(n):
    """``hanging_chain(n, 0.3)`` with a rotational spring-damper on every joint (k = 1e-4 N m/rad, c = 1e-4 N m s)."""
    frozen, q0, v0 = hanging_chain(n, 0.3)
    model = rm.Model3D(gravity=frozen.gravity)  # the chain again, unfrozen (q0 froze the first one)
    for i in range(n):
        body = frozen.body(i)
        body["parent"] = "ground" if body["parent"] < 0 else body["parent"]
        model.add_body(**{k: x for k, x in body.items() if x is not None})
    for i in range(n):
        model.add_joint_spring_damper(i, stiffness=1e-4, damping=1e-4)
    model.compile()
    return model, q0, v0


def run(model, q0, v0, t_end, dt, tau, method="generalized_alpha", tol=None):
    """One run: iterations a step (generalized_alpha) or a try (bdf: accepted, rejected and failed tries), splits
    or failed tries, wall time."""
    start = time.perf_counter()
    options = {**ABS, "dt": dt} if method == "generalized_alpha" else {**BDF, "rtol": tol, "atol": tol}
    try:
        result = rm.simulate(model, q0, v0, t_end, tau=tau, **options)
        status = "ok"
    except rm.SimulationError as error:
        result, status = error.result, f"stopped at {error.t:.3g} s"
    except ValueError as error:  # a revision whose bdf refuses the loads
        return {"status": "refused", "message": str(error)}
    wall = time.perf_counter() - start
    steps = max(result.nsteps, 1)
    record = {"wall_s": wall, "steps": int(result.nsteps), "status": status}
    if method == "generalized_alpha":
        record.update(iterations_per_step=result.newton_iterations / steps, splits=int(result.newton_split_steps))
    else:
        tries = max(result.nsteps + result.nrejected + result.newton_failures, 1)
        record.update(iterations_per_step=result.newton_iterations / tries, rejected=int(result.nrejected),
                      splits=int(result.newton_failures))
    return record


def cell(record):
    """A table cell: iterations a step (a try) and the splits (failed tries)."""
    if record["status"] == "refused":
        return "refused"
    extra = f", {record['steps']} steps" if "rejected" in record else ""
    return f"{record['iterations_per_step']:.2f} ({record['splits']} {'failed' if extra else 'split'}{extra})"


def main():
    parser = command_line(__doc__, "implicit3d_loads")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100])
    parser.add_argument("--methods", nargs="+", default=["generalized_alpha", "bdf"],
                        choices=["generalized_alpha", "bdf"])
    args = parser.parse_args()
    settings = [(m, x) for m in args.methods for x in (STEPS if m == "generalized_alpha" else TOLERANCES)]
    records, rows = [], []
    for label, model, q0, v0, t_end, tau in chain_cases():
        record = {"case": label, "t_end": t_end}
        for method, x in settings:
            key = f"{method} {'dt' if method == 'generalized_alpha' else 'rtol'} = {x:g}"
            record[key] = run(model, q0, v0, t_end, x, tau, method, x)
        records.append(record)
        rows.append([label] + [cell(record[key]) for key in record if key not in ("case", "t_end")])
    print("Newton iterations a step (generalized_alpha, rho_inf = 0.9; splits) or a try (bdf; failed tries, steps), "
          "three-joint chain")
    print_table(["case"] + [f"{'GA dt' if m == 'generalized_alpha' else 'bdf rtol'} = {x:g}" for m, x in settings],
                rows)
    rows = []
    for n in args.sizes:
        model, q0, v0 = sprung_spherical_chain(n)
        for method in args.methods:
            run(model, q0, v0, 0.02, 0.01, None, method, 1e-4)  # compile
            record = {"case": f"spherical chain with joint spring-dampers, N = {n}, {method}", "n": n,
                      "method": method, **run(model, q0, v0, 0.2, 0.01, None, method, 1e-4)}
            records.append(record)
            if record["status"] == "refused":
                rows.append([n, method, "refused", "", "", "refused"])
                continue
            rows.append([n, method, f"{record['iterations_per_step']:.2f}", record["splits"],
                         f"{1e6 * record['wall_s'] / (n * max(record['steps'], 1)):.2f}", record["status"]])
    if rows:
        print("Spherical chain tilted 0.3 rad, a spring-damper on every joint, 0.2 s (GA dt = 0.01 s, bdf rtol 1e-4)")
        print_table(["N", "method", "iterations a step (try)", "splits (failed)", "us a link-step", "status"], rows)
    print(write_json(args.name, {"records": records}))


if __name__ == "__main__":
    main()
