"""Who is right on long spherical chains: recursive_mbd's ABA, its CRBA + Cholesky, the independent reference of
tests/spatial_reference.py, Pinocchio's aba (and its crba + rnea) and MuJoCo, against cond(M) (issue 18).

    python3 benchmarks/spatial_agreement.py [--sizes 5 10 20 30 40 60 80 100]

The chain and state are those of benchmarks/spatial.py (spherical joints, random full inertias, gravity off the
axis). For each N every route's accelerations are compared with x*, the solution of recursive_mbd's M x = tau - h
(CRBA, RNEA) to working accuracy: a float64 Cholesky solve refined with residuals in extended precision
(np.longdouble), so x* has no round-off of its own beyond the data M, h. A route whose error against x* stays
within a small multiple of cond(M) eps |x| (eps = 2.2e-16) suffers round-off amplification only (the data M, h
of two codes differ by a few ulps); an error far above that, or a backward error far above eps in both our
equations and its own library's (Pinocchio: crba + rnea), is a wrong answer. Columns: relative error
max |x - x*| / max |x*|, and that error divided by cond(M) eps ("/ bound": below ~1 is round-off). Also printed:
the relative asymmetry of Pinocchio's articulated inertias (``data.Yaba``) at the base and the tip after its aba.
Writes benchmarks/results/spatial_agreement.json.

Finding (Pinocchio 4.1.0, default = LOCAL convention): every route but Pinocchio's aba stays within 0.03 cond(M)
eps of x* up to N = 100, ours and Pinocchio's crba + rnea included (their M, h agree to ~1e-15); Pinocchio's aba
error grows geometrically along the chain, far faster than cond(M) (~N^4), to 1e3 cond(M) eps at N = 40 and
order 1 at N = 60, with backward errors far above eps in its own crba/rnea equations as well. Its articulated
inertias lose symmetry by a constant factor per link from the tip (~1e-16) to the base (~5e-7 at N = 40): its
recursion does not keep I^A symmetric and the asymmetric part grows link by link. Not round-off amplification by
cond(M): Pinocchio's aba is wrong there; recursive_mbd stores I^A packed (symmetric by construction).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
from pathlib import Path

import numpy as np
from _common import print_table, write_json
from spatial import GRAVITY, build_mujoco, build_ours, build_pinocchio, chain_parameters, chain_state, joint_offsets
from spatial import pinocchio_q as to_pinocchio

import recursive_mbd as rm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from spatial_reference import SpatialReference  # noqa: E402  (the tests' independent reference)

EPS = np.finfo(float).eps


def refined_solve(M, rhs, steps=3):
    """x with M x = rhs to working accuracy: Cholesky in float64, residuals in np.longdouble."""
    factor = np.linalg.cholesky(M)
    x = np.linalg.solve(factor.T, np.linalg.solve(factor, rhs))
    M_long = M.astype(np.longdouble)
    for _ in range(steps):
        residual = (rhs.astype(np.longdouble) - M_long @ x.astype(np.longdouble)).astype(float)
        x = x + np.linalg.solve(factor.T, np.linalg.solve(factor, residual))
    return x


def reference_model(params):
    bodies = []
    for i in range(params["n"]):
        parent_point, child_point = joint_offsets(i)
        bodies.append(dict(parent=i - 1, joint="spherical", parent_point=parent_point, child_point=child_point,
                           mass=0.1, inertia=params["inertia"][i], com=params["com"][i]))
    return SpatialReference(bodies, gravity=GRAVITY)


def backward_error(M, h, tau, x):
    residual = M @ x + h - tau
    return float(np.max(np.abs(residual)) / (np.max(np.abs(M)) * np.max(np.abs(x)) + np.max(np.abs(tau - h))))


def measure(n):
    """{route: accelerations}, our M and h, Pinocchio's M and h (or None), the reference's M and h."""
    params = chain_parameters("spherical", n)
    q, v, tau = chain_state(params)
    model = build_ours(params)
    routes = {"ours ABA": rm.forward_dynamics(model, q, v, tau).copy(),
              "ours CRBA+Cholesky": rm.forward_dynamics(model, q, v, tau, method="mass_matrix")}
    M, h = rm.mass_matrix(model, q), rm.bias_forces(model, q, v)
    reference = reference_model(params)
    M_ref, h_ref = reference.mass_matrix(q), reference.bias_forces(q, v)
    routes["reference (dense)"] = np.linalg.solve(M_ref, tau - h_ref)
    pin_data = None
    try:
        import pinocchio as pin  # noqa: PLC0415

        pin_model = build_pinocchio(params)
        data = pin_model.createData()
        q_pin = to_pinocchio(params, q)
        routes["pinocchio aba"] = pin.aba(pin_model, data, q_pin, v, tau).copy()
        # its articulated inertias (6x6, joint frames) after that call: relative asymmetry at the base and the tip
        asymmetry = [float(np.max(np.abs(Y - Y.T)) / np.max(np.abs(Y)))
                     for Y in (np.array(data.Yaba[1]), np.array(data.Yaba[n]))]
        M_pin = pin.crba(pin_model, data, q_pin).copy()
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T  # crba fills the upper triangle
        h_pin = pin.rnea(pin_model, data, q_pin, v, np.zeros_like(v)).copy()
        routes["pinocchio crba+rnea"] = np.linalg.solve(M_pin, tau - h_pin)
        pin_data = (M_pin, h_pin, asymmetry)
        del data
    except ImportError:
        pass
    try:
        import mujoco  # noqa: PLC0415

        mj_model = build_mujoco(params)
        mj_data = mujoco.MjData(mj_model)
        mj_data.qpos[:], mj_data.qvel[:], mj_data.qfrc_applied[:] = q, v, tau
        mujoco.mj_forward(mj_model, mj_data)
        routes["mujoco"] = mj_data.qacc.copy()
    except ImportError:
        pass
    return routes, (M, h), pin_data, (M_ref, h_ref), tau


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 20, 30, 40, 60, 80, 100])
    args = parser.parse_args()
    rows, records = [], []
    for n in args.sizes:
        routes, (M, h), pin_data, (M_ref, h_ref), tau = measure(n)
        cond = float(np.linalg.cond(M))
        exact = refined_solve(M, tau - h)
        exact_ref = refined_solve(M_ref, tau - h_ref)
        scale = float(np.max(np.abs(exact)))
        record = dict(n=n, cond_M=cond, data_difference=dict(
            M_ref=float(np.max(np.abs(M - M_ref)) / np.max(np.abs(M))),
            h_ref=float(np.max(np.abs(h - h_ref)) / np.max(np.abs(h))),
            x_star_ref=float(np.max(np.abs(exact - exact_ref)) / scale)), routes={})
        if pin_data is not None:
            record["data_difference"]["M_pin"] = float(np.max(np.abs(M - pin_data[0])) / np.max(np.abs(M)))
            record["data_difference"]["h_pin"] = float(np.max(np.abs(h - pin_data[1])) / np.max(np.abs(h)))
            record["pinocchio_Yaba_asymmetry"] = dict(base=pin_data[2][0], tip=pin_data[2][1])
        for name, x in routes.items():
            error = float(np.max(np.abs(x - exact)) / scale)
            entry = dict(relative_error=error, over_bound=error / (cond * EPS),
                         backward_error_ours=backward_error(M, h, tau, x))
            if pin_data is not None:
                entry["backward_error_pinocchio"] = backward_error(pin_data[0], pin_data[1], tau, x)
            record["routes"][name] = entry
            rows.append([n, f"{cond:.1e}", name, f"{error:.1e}", f"{entry['over_bound']:.2g}",
                         f"{entry['backward_error_ours']:.1e}",
                         f"{entry.get('backward_error_pinocchio', float('nan')):.1e}"])
        records.append(record)
        print(f"  N = {n} done: |M - M_ref| / |M| = {record['data_difference']['M_ref']:.1e}, "
              + (f"|M - M_pin| / |M| = {record['data_difference']['M_pin']:.1e}, "
                 f"|h - h_pin| / |h| = {record['data_difference']['h_pin']:.1e}, Pinocchio's articulated "
                 f"inertia asymmetry: base {pin_data[2][0]:.1e}, tip {pin_data[2][1]:.1e}"
                 if pin_data is not None else ""), file=sys.stderr)
    print("spherical chain: error of each route against x* (our M x = tau - h solved to working accuracy); "
          "/ bound = error / (cond(M) eps); backward errors in our M, h and in Pinocchio's crba, rnea")
    print_table(["N", "cond(M)", "route", "rel. error", "/ bound", "backward (ours)", "backward (pinocchio)"], rows)
    print(f"wrote {write_json('spatial_agreement', {'records': records})}")


if __name__ == "__main__":
    main()
