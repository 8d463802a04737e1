"""generalized_alpha at small steps: does the error keep falling 4x when dt halves, and what Newton costs.

    python3 benchmarks/ga_small_steps.py [--dts 2e-3 1e-3 5e-4 2.5e-4 1.25e-4 6.25e-5]

Two planar models over 1 s from rest: ``rm.models.four_bar`` (one loop: q and the loop multipliers against a
dopri5 run at rtol 1e-12 at t = 0, 0.1, ..., 1 s) and a double pendulum released at (0.3, 0.2) rad (q at t = 1 s
against dop853 at rtol 1e-13), rho_inf = 0.9 and 1.0. Per dt: max errors, the ratio to the previous dt's (4 for
a second-order method), Newton iterations per step. Newton stops when the correction of the positions and of the
velocities is within newton_tol (1e-12); with the position test alone the errors grew below dt = 2.5e-4 (issue 15,
session 8). Prints the table; writes benchmarks/results/ga_small_steps.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm


def _double_pendulum():
    model = rm.Model()
    model.add_body(mass=1.0, inertia=0.05, com=(0.5, 0.0))
    model.add_body(parent=0, mass=1.0, inertia=0.05, parent_point=(1.0, 0.0), com=(0.5, 0.0))
    return model.compile()


def main(dts):
    samples = np.linspace(0.0, 1.0, 11)
    four_bar, q_bar = rm.models.four_bar()
    bar_ref = rm.simulate(four_bar, q_bar, np.zeros(3), 1.0, rtol=1e-12, atol=1e-14, t_eval=samples)
    pendulum, q_pend = _double_pendulum(), np.array([0.3, 0.2])
    pend_ref = rm.simulate(pendulum, q_pend, np.zeros(2), 1.0, method="dop853", rtol=1e-13, atol=1e-13).q[-1]
    rows = []
    for rho_inf in (0.9, 1.0):
        previous = None
        for dt in dts:
            bar = rm.simulate(four_bar, q_bar, np.zeros(3), 1.0, method="generalized_alpha", dt=dt,
                              rho_inf=rho_inf, t_eval=samples)
            pend = rm.simulate(pendulum, q_pend, np.zeros(2), 1.0, method="generalized_alpha", dt=dt,
                               rho_inf=rho_inf)
            errors = (float(np.abs(bar.q - bar_ref.q).max()),
                      float(np.abs(bar.multipliers - bar_ref.multipliers).max() / np.abs(bar_ref.multipliers).max()),
                      float(np.abs(pend.q[-1] - pend_ref).max()))
            ratios = ["-"] * 3 if previous is None else [f"{a / b:.2f}" for a, b in zip(previous, errors, strict=True)]
            previous = errors
            rows.append({"rho_inf": rho_inf, "dt": dt, "four_bar_q": errors[0], "four_bar_lambda_rel": errors[1],
                         "pendulum_q": errors[2], "ratios": ratios,
                         "four_bar_iterations_per_step": bar.newton_iterations / bar.nsteps,
                         "pendulum_iterations_per_step": pend.newton_iterations / pend.nsteps})
    print_table(["rho_inf", "dt", "four-bar q", "ratio", "four-bar lambda (rel)", "ratio", "Newton/step",
                 "pendulum q", "ratio", "Newton/step"],
                [[r["rho_inf"], f"{r['dt']:g}", f"{r['four_bar_q']:.3e}", r["ratios"][0],
                  f"{r['four_bar_lambda_rel']:.3e}", r["ratios"][1], f"{r['four_bar_iterations_per_step']:.2f}",
                  f"{r['pendulum_q']:.3e}", r["ratios"][2], f"{r['pendulum_iterations_per_step']:.2f}"]
                 for r in rows])
    print(f"wrote {write_json('ga_small_steps', {'rows': rows})}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dts", type=float, nargs="+", default=[2e-3, 1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5])
    main(parser.parse_args().dts)
