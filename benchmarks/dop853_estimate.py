"""DOP853's combined error estimate on a parallelogram's one-degree-of-freedom equation: where it fails, and what
the step-growth limit after it does.

    python3 benchmarks/dop853_estimate.py [--starts 200] [--tols 1e-8 1e-9 1e-10 1e-11 1e-12]

A parallelogram of three 1 m, 1 kg bars (tests/test_singular.py, n = 1) moves on one degree of freedom: every
crank at one angle theta and rate w, E = 5/6 w^2 + 2 g sin(theta), theta'' = -6/5 g cos(theta). The library's
time loop carries (theta, theta, -theta, w, w, -w): two distinct error entries, the same RMS norm as (theta, w)
here. No loop layer enters: this is the integrator alone.

1. From the top of the turn after four revolutions (theta = 26.63449 rad, w from the energy of the start), one
   DOP853 step of each size h: the combined estimate |h| err5^2 / sqrt(2 (err5^2 + 0.01 err3^2)) (Hairer, Norsett
   & Wanner I, II.10), its fifth- and third-order parts, and the true local error against a reference solution
   (scipy DOP853 at rtol 3e-14), each scaled by atol + rtol max(|y_n|, |y_n+1|) at rtol = atol = 1e-8. Near
   h = 0.45 s err5 passes close to zero and the combined estimate with it, while the true error is ten times the
   tolerance.
2. The step control of ``_kernels.timeloops.integrators.integrate_adaptive`` (0.9 err^(-1/8), clamped to
   [0.2 h, 10 h], no growth after a rejection) replayed in numpy over 20 s from ``--starts`` first steps (0.02 to
   0.15 s), with the growth after an accepted step limited to 10x (the control before) and to 2x
   (``COMBINED_MAX_GROWTH``): runs whose energy leaves 1e-6 relative, the largest error, steps and rejections.
Writes benchmarks/results/dop853_estimate.json.
"""

import argparse

import numpy as np
from _common import print_table, write_json
from scipy.integrate import solve_ivp
from scipy.integrate._ivp import dop853_coefficients as coef

G = 9.81
A, B, C, E3, E5 = coef.A[:12, :12], coef.B, coef.C[:12], coef.E3, coef.E5


def rhs(_t, z):
    """(theta', w') of the parallelogram: theta'' = -6/5 g cos(theta)."""
    return np.array([z[1], -1.2 * G * np.cos(z[0])])


def energy(z):
    """E = 5/6 w^2 + 2 g sin(theta) [J]."""
    return 5.0 / 6.0 * z[1] ** 2 + 2.0 * G * np.sin(z[0])


def step(z, h, k0, tol):
    """One DOP853 step from z: (new state, last stage, combined estimate, err5 part, err3 part)."""
    k = np.zeros((13, 2))
    k[0] = k0
    for s in range(1, 12):
        k[s] = rhs(0.0, z + h * A[s, :s] @ k[:s])
    z_new = z + h * B @ k[:12]
    k[12] = rhs(0.0, z_new)
    scale = tol + tol * np.maximum(np.abs(z), np.abs(z_new))
    err5 = np.sum(((k.T @ E5) / scale) ** 2)
    err3 = np.sum(((k.T @ E3) / scale) ** 2)
    combined = h * err5 / np.sqrt((err5 + 0.01 * err3) * 2)
    return z_new, k[12], combined, h * np.sqrt(err5 / 2), h * np.sqrt(err3 / 2), scale


def one_step_table(tol=1e-8, theta=26.63449):
    """Part 1: the estimates against the true local error by step size."""
    z = np.array([theta, np.sqrt(1.0 + 12.0 / 5.0 * G * (1.0 - np.sin(theta)))])  # w = 1 at the top
    rows = []
    for h in (0.05, 0.1, 0.2, 0.3, 0.4, 0.42, 0.44, 0.45, 0.46, 0.48, 0.5):
        z_new, _, combined, err5, err3, scale = step(z, h, rhs(0.0, z), tol)
        exact = solve_ivp(rhs, (0.0, h), z, method="DOP853", rtol=3e-14, atol=1e-15).y[:, -1]
        true = float(np.sqrt(np.mean(((z_new - exact) / scale) ** 2)))
        rows.append({"h": h, "combined": float(combined), "err5": float(err5), "err3": float(err3), "true": true})
    return rows


def run(tol, first_step, max_growth, t_end=20.0):
    """Part 2: the adaptive loop's control; (largest |dE/E| at the steps, steps, rejections)."""
    z = np.array([np.pi / 2, 1.0])
    e0 = energy(z)
    t, h, k0, rejected_last = 0.0, first_step, rhs(0.0, z), False
    worst, steps, rejections = 0.0, 0, 0
    while t < t_end:
        last = t + 1.01 * h >= t_end
        if last:
            h = t_end - t
        z_new, k_new, err, _, _, _ = step(z, h, k0, tol)
        if not err <= 1.0:
            rejections += 1
            h *= max(0.2, 0.9 * err ** (-1.0 / 8.0))
            rejected_last = True
            continue
        steps += 1
        t = t_end if last else t + h
        z, k0 = z_new, k_new
        worst = max(worst, abs(energy(z) / e0 - 1.0))
        fac = min(max_growth, max(0.2, 0.9 * err ** (-1.0 / 8.0)))
        if rejected_last:
            fac = min(fac, 1.0)
        rejected_last = False
        h *= fac
    return worst, steps, rejections


def main(starts=200, tols=(1e-8, 1e-9, 1e-10, 1e-11, 1e-12)):
    table = one_step_table()
    print("one DOP853 step from the top of the turn (theta = 26.63449 rad), rtol = atol = 1e-8: scaled errors")
    print_table(("h [s]", "combined estimate", "err5 part", "err3 part", "true local error"),
                [(f"{r['h']:.2f}", f"{r['combined']:.3g}", f"{r['err5']:.3g}", f"{r['err3']:.3g}", f"{r['true']:.3g}")
                 for r in table])
    runs, rows = [], []
    for tol in tols:
        for growth in (10.0, 2.0):
            out = np.array([run(tol, 0.02 + 0.13 * j / starts, growth) for j in range(starts)])
            fig = {"tol": tol, "max_growth": growth, "starts": starts, "over_1e-6": int((out[:, 0] >= 1e-6).sum()),
                   "max_energy_rel": float(out[:, 0].max()), "median_energy_rel": float(np.median(out[:, 0])),
                   "steps": float(out[:, 1].mean()), "rejected": float(out[:, 2].mean())}
            runs.append(fig)
            rows.append((f"{tol:g}", f"{growth:g}", f"{fig['over_1e-6']} of {starts}", f"{fig['max_energy_rel']:.2e}",
                         f"{fig['median_energy_rel']:.1e}", f"{fig['steps']:.0f}", f"{fig['rejected']:.0f}"))
            print(f"  {rows[-1]}", flush=True)
    print(f"\n20 s from {starts} first steps (0.02 to 0.15 s), the time loop's step control, growth limit 10x / 2x")
    print_table(("tol", "growth limit", "|dE/E| >= 1e-6", "max |dE/E|", "median", "steps", "rejected"), rows)
    print(f"wrote {write_json('dop853_estimate', {'one_step': table, 'runs': runs})}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=200)
    parser.add_argument("--tols", nargs="+", type=float, default=[1e-8, 1e-9, 1e-10, 1e-11, 1e-12])
    args = parser.parse_args()
    main(args.starts, tuple(args.tols))
