"""A chain of capsule links falling onto a table: bdf (and generalized_alpha) against dopri5 at matched accuracy.

    python3 benchmarks/contact_implicit.py [--n 1000] [--t-end 1] [--reference-rtol 1e-9]
                                           [--rtol 1e-4 1e-6] [--dt 1e-4] [--max-order5] [--name contact_implicit]

serial_chain(n) (1 m, 0.5 kg) pinned at the origin, released from q0[0] = 1.2 rad (straight, 69 degrees from the
vertical), swings down onto a table top 0.7 m below the pin, 2 m wide (the example of docs/guide/contact.md):
every link a capsule (its rod, radius a tenth of its length), stiffness 1e5 N/m^1.5, restitution 0.3, friction
0.4. A dopri5 run at ``reference-rtol`` is the reference; each run's error is max over links of the distance
between its final link end positions and the reference's [m] (an angle error far down the chain is a position
error at its tip). Columns: wall time (the compiled loops warmed up first on a short run), steps, Newton
iterations and factorisations, the most touching rows at 21 samples, the error. Prints a table and writes
benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/bdf.py: before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time
import warnings

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm


def falling_chain(n):
    """(model, q0, qd0): the chain of the module doc."""
    model = rm.chains.serial_chain(n, length=1.0, mass=0.5)
    link = 1.0 / n
    model.add_ground("table", point=(0.0, -0.7), extent=(-1.0, 1.0))
    model.add_contact([f"link{j + 1}" for j in range(n)], "table", segment=((0.0, 0.0), (0.0, -link)),
                      radius=0.1 * link, stiffness=1e5, restitution=0.3, friction=0.4)
    q0 = np.zeros(n)
    q0[0] = 1.2
    return model, q0, np.zeros(n)


def link_ends(q, n):
    """The link end points (n, 2) of the chain at joint angles q (relative)."""
    theta = np.cumsum(q)
    step = np.stack((np.sin(theta), -np.cos(theta)), axis=1) / n
    return np.cumsum(step, axis=0)


def run(model, q0, qd0, t_end, method, **options):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = rm.simulate(model, q0, qd0, t_end, method=method, t_eval=np.linspace(0.0, t_end, 21), **options)
    wall = time.perf_counter() - start
    return result, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--reference-rtol", type=float, default=1e-9)
    parser.add_argument("--rtol", type=float, nargs="+", default=[1e-4, 1e-6])
    parser.add_argument("--dt", type=float, nargs="*", default=[])
    parser.add_argument("--max-order5", action="store_true", help="bdf at orders 1-5 too (default: 1-2 only)")
    parser.add_argument("--name", default="contact_implicit")
    args = parser.parse_args()
    n = args.n
    model, q0, qd0 = falling_chain(n)
    for method, options in (("dopri5", {"rtol": 1e-3}), ("bdf", {"rtol": 1e-3}),
                            ("generalized_alpha", {"dt": 1e-3})):  # compile (and load) the loops first
        run(model, q0, qd0, 0.002, method, **options)
    reference, ref_wall = run(model, q0, qd0, args.t_end, "dopri5", rtol=args.reference_rtol,
                              atol=1e-3 * args.reference_rtol)
    ends = link_ends(reference.q[-1], n)
    print("reference", ref_wall, reference.nsteps, flush=True)
    rows = [("dopri5 (reference)", f"{args.reference_rtol:g}", f"{ref_wall:.1f}", reference.nsteps, "", "",
             int(reference.contact_forces()["active"].max()), "0")]
    record = {"n": n, "t_end": args.t_end, "runs": []}
    cases = [(m, {"rtol": r, "atol": 1e-3 * r, **extra}, f"{r:g}{label}") for r in args.rtol
             for m, extra, label in (("dopri5", {}, ""), ("bdf", {}, ""), ("bdf", {"max_order": 5}, " order<=5"))
             if args.max_order5 or "max_order" not in extra]
    cases += [("generalized_alpha", {"dt": dt, "rho_inf": 0.5}, f"dt {dt:g}") for dt in args.dt]
    for method, options, label in cases:
        try:
            result, wall = run(model, q0, qd0, args.t_end, method, **options)
        except rm.SimulationError as error:
            rows.append((method, label, "failed", "", "", "", "", str(error)[:90]))
            continue
        error = float(np.abs(link_ends(result.q[-1], n) - ends).max())
        touching = int(result.contact_forces()["active"].max())
        iterations = getattr(result, "newton_iterations", None)
        factorizations = getattr(result, "newton_factorizations", None)
        rows.append((method, label, f"{wall:.1f}", result.nsteps, iterations or "", factorizations or "", touching,
                     f"{error:.2e}"))
        print(*rows[-1], flush=True)  # (the table follows at the end)
        record["runs"].append({"method": method, "options": options, "wall_s": wall, "steps": result.nsteps,
                               "newton_iterations": iterations, "factorizations": factorizations,
                               "touching": touching, "error_m": error})
    record["reference"] = {"rtol": args.reference_rtol, "wall_s": ref_wall, "steps": reference.nsteps}
    print_table(("method", "tolerance", "wall [s]", "steps", "Newton it.", "factor.", "touching (max)", "error [m]"),
                rows)
    write_json(args.name, record)


if __name__ == "__main__":
    main()
