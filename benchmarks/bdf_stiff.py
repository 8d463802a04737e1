"""Stiff joint spring: steps of method="bdf" against scipy's Radau and BDF, and where the steps go.

    python3 benchmarks/bdf_stiff.py [--rtol 1e-4 1e-6 1e-8] [--name bdf_stiff]

The model of issue 15's target "bdf takes no more steps than scipy:Radau": serial_chain(5) with a joint
spring-damper on link3 of 1e6 m g L (9.81e6 N m/rad) and 1e4 N m s/rad, overdamped, from q = 0.2 rad (link3 at
0, its spring unloaded) at rest, over 0.02 s, atol = rtol / 100. Its Jacobian has one fast real eigenvalue
(about -1.5e7 1/s: the velocity of link3 settles in tau ~ 6.5e-8 s), the creep of the spring (-k/c ~ -981 1/s)
and the pendulum modes (3.6 - 19 rad/s). The steps are counted in three phases: the fast transient
(t <= 1.5e-6 s, about 23 tau), the ramp up to 1e-4 s, and the creep and swing after it. The end state (q, qd) is
compared with dop853 at rtol 1e-12 (error in units of atol + rtol |y|, max over the coordinates; 1 = the
requested tolerance). Wall time: median of 5 runs, compiled (the machine may be shared). Prints a table and
writes benchmarks/results/NAME.json.

Measured (2026-11-23, loaded machine), steps of Radau / scipy BDF / bdf: rtol 1e-4: 7 / 26 / 27; 1e-6: 17 / 57 /
55; 1e-8: 44 / 112 / 113; bdf's end error 1.3, 2.2, 1.0 tolerances, Radau's 4e-5 - 4e-4. The target (bdf no more
steps than Radau) is not met. At rtol 1e-6 and 1e-8 Radau resolves the fast transient too (first step 7.9e-8 and
2e-8 s, ~tau; 6 and 19 steps in it): it wins by its much smaller error (order 5 from the first step, step changes
by up to 10x at every step) where a BDF climbs orders 1 -> 5 through k + 1 equal steps each and resolves the
transient at h ~ 0.2 tau at order 5. Tried and measured without gain (the rtol 1e-6 case): filtering bdf's error
estimate by (I - c J)^-1 with the Newton matrix's factors (as Radau5, Hairer & Wanner IV.8): 55 -> 55 steps,
and at every step it cost one solve more (double pendulum 607 -> 626 steps); in a Python model of the same
BDF (dense Jacobian): the filter 61 -> 59, with a second filter at the first step and after rejections and a
first step of 1e-5 s over the transient 67 (the filtered error of that step is ~ amplitude / (h lambda), still
far above atol), DASSL's initial phase (order and step raised at every step until an error test fails) 58,
step increases without waiting k + 1 steps 62. Only at rtol 1e-4 does the filter with a large first step pay
(28 -> 15 steps; Radau 7: there its first step 4e-5 s jumps over the transient).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # scipy's small dense solves (benchmarks/blas_threads.py)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse

import numpy as np
from _common import median_time, print_table, write_json

import recursive_mbd as rm

T_END = 0.02  # [s]
PHASES = (1.5e-6, 1e-4)  # [s] ends of the fast transient and of the ramp
METHODS = ("scipy:Radau", "scipy:BDF", "bdf")


def stiff_spring_model():
    """(model, q0, qd0) of the stiff joint spring of the integrator tests."""
    model = rm.chains.serial_chain(5)
    model.add_joint_spring_damper("link3", 9.81e6, 1e4)
    q0 = np.full(5, 0.2)
    q0[2] = 0.0
    return model, q0, np.zeros(5)


def scaled_error(res, reference, rtol, atol):
    """max over q, qd of |y(T_END) - y_ref| / (atol + rtol |y_ref|)."""
    y = np.concatenate([res.q[-1], res.qd[-1]])
    y_ref = np.concatenate([reference.q[-1], reference.qd[-1]])
    return float(np.max(np.abs(y - y_ref) / (atol + rtol * np.abs(y_ref))))


def run(method, rtol, reference):
    model, q0, qd0 = stiff_spring_model()
    atol = 1e-2 * rtol

    def simulate():
        return rm.simulate(model, q0, qd0, T_END, method=method, rtol=rtol, atol=atol)

    res = simulate()  # every accepted step is an output sample
    wall = median_time(simulate, min_time=0.2, repeats=5)
    ends = res.t[1:]
    phases = [int(np.sum(ends <= PHASES[0])), int(np.sum((ends > PHASES[0]) & (ends <= PHASES[1]))),
              int(np.sum(ends > PHASES[1]))]
    assert sum(phases) == res.nsteps, (method, phases, res.nsteps)
    return {"method": method, "rtol": rtol, "atol": atol, "steps": res.nsteps, "rejected": res.nrejected,
            "rhs_evaluations": res.nfev, "newton_iterations": getattr(res, "newton_iterations", None),
            "factorizations": getattr(res, "newton_factorizations", None), "steps_by_phase": phases,
            "first_step": float(res.t[1] - res.t[0]), "largest_step": float(np.max(np.diff(res.t))),
            "end_error_in_tolerances": scaled_error(res, reference, rtol, atol), "wall_s": wall}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtol", type=float, nargs="+", default=[1e-4, 1e-6, 1e-8])
    parser.add_argument("--name", default="bdf_stiff", help="results file benchmarks/results/NAME.json")
    args = parser.parse_args()
    model, q0, qd0 = stiff_spring_model()
    reference = rm.simulate(model, q0, qd0, T_END, method="dop853", rtol=1e-12, atol=1e-14)
    rows = [run(method, rtol, reference) for rtol in args.rtol for method in METHODS]
    print_table(["rtol", "method", "steps", "transient/ramp/rest", "rejected", "rhs evals", "Newton it",
                 "first step [s]", "largest [s]", "end error [tol]", "wall [ms]"],
                [[f"{r['rtol']:g}", r["method"], r["steps"], "/".join(map(str, r["steps_by_phase"])), r["rejected"],
                  r["rhs_evaluations"], "-" if r["newton_iterations"] is None else r["newton_iterations"],
                  f"{r['first_step']:.2e}", f"{r['largest_step']:.2e}", f"{r['end_error_in_tolerances']:.2g}",
                  f"{1e3 * r['wall_s']:.2f}"] for r in rows])
    path = write_json(args.name, {"rows": rows, "t_end": T_END, "reference": "dop853 rtol 1e-12 atol 1e-14",
                                  "reference_steps": reference.nsteps, "machine_loaded": True})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
