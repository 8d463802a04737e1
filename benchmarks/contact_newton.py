"""How exactly the contacts' stiffness and damping enter the implicit methods' Newton matrices: each matrix with the
contacts minus without them, against central differences of the contacts' share of the step's residual.

    python3 benchmarks/contact_newton.py [--name contact_newton] [--landing N DT T_END]

Planar (generalized_alpha and bdf share the matrix: ``_kernels.planar.implicit.effective_factor`` with the blocks of
``_kernels.planar.contact.contact_newton_blocks``): a two-link arm hinged to the ground whose forearm's tip (a circle
of 2 cm, or a capsule) is 0.4 mm into a ground plane or a fixed drum (k = 1e5 N/m^1.5, mu = 0.3), the stick spring
stretched (sticking) or the arm moving with the anchors 2 mm apart (sliding); the matrix with c_stiff = 1, c_damp = 0
against -dQ/dq ("K") and with c_stiff = 0, c_damp = 1 against -dQ/dqd ("C"), Q the contacts' generalised force (the
factorisation at the same c_stiff: the contacts' forces turn with the joints in its geometric stiffness).

Spatial: the cheap symmetric matrix (``_kernels.spatial.implicit.effective_factor``: bdf's, generalized_alpha's
first) and generalized_alpha's exact one (``_kernels.spatial.newton.newton_factor``, with the contacts' subtree loads)
at c_stiff = 2.5e-5, c_damp = 5e-3 (generalized_alpha at about 0.1 ms), no update (q+ = q), against
c_stiff (-dQ/dq) + c_damp (-dQ/dv), q moved by q (+) e: a free ball (radius 0.1) on the floor and on a drum, a two-link
chain (hinges, spherical joints) whose tip sphere is on the floor, and an arm carrying a plane that a sphere on its
child (hinge, spherical joint) presses into (a row between a body and its parent); at rest (1e-5) and moving.

With ``--landing N DT T_END`` (20 5e-4 0.2): generalized_alpha's Newton iterations and factorisations on a chain of N
capsule links on spherical joints landing on a table (``landing``), instead.

Columns: the case, sticking or sliding, and the largest entry of the difference relative to the largest of the finite
differences (central, h = 1e-7: about 1e-9 where exact). Prints a table and writes benchmarks/results/NAME.json.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm
from recursive_mbd._kernels.layout import N_CSTATE
from recursive_mbd._kernels.spatial import contact as sc
from recursive_mbd._kernels.spatial import implicit as si
from recursive_mbd._kernels.spatial import layout as L3
from recursive_mbd._kernels.spatial import newton as sn
from recursive_mbd._kernels.spatial import tree as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_contact_ground_block import _factored_matrix, anchored_state  # noqa: E402  (the tests' references)
from test_contact_pairs import _blocks, _force_derivative, _per_contact  # noqa: E402

ROWS = []


def arm(surface, shape, q, friction=0.3):
    m = rm.Model(gravity=(0.0, 0.0))
    m.add_body(parent="ground", joint="revolute", parent_point=(0, 0), child_point=(-0.5, 0), mass=2.0, inertia=0.2,
               name="arm")
    m.add_body(parent="arm", joint="revolute", parent_point=(0.5, 0), child_point=(-0.3, 0), mass=1.0, inertia=0.05,
               name="fore")
    t1, t12 = q[0], q[0] + q[1]
    tip = np.array([np.cos(t1), np.sin(t1)]) + 0.6 * np.array([np.cos(t12), np.sin(t12)])
    r = 0.02
    law = dict(stiffness=1e5, exponent=1.5, restitution=0.5, friction=friction, min_impact_speed=0.5)
    if surface == "plane":
        m.add_ground("floor", point=(0.0, tip[1] - r + 4e-4), normal=(0.0, 1.0))
    else:
        m.add_drum("drum", center=(tip[0] + 0.03, tip[1] - np.sqrt((0.12 - 4e-4) ** 2 - 0.03 ** 2)), radius=0.1)
    name = "floor" if surface == "plane" else "drum"
    if shape == "capsule":
        m.add_contact("fore", name, segment=((0.2, 0.0), (0.4, 0.0)), radius=r, **law)
    else:
        m.add_contact("fore", name, point=(0.3, 0.0), radius=r, **law)
    return m.compile()

def audit(surface, shape, sliding):
    rng = np.random.default_rng(3)
    q = np.array([0.1, -0.15])
    model = arm(surface, shape, q)
    qd = rng.normal(size=2) * (0.05 if sliding else 1e-5)
    assert _per_contact(model, q, qd, np.zeros(N_CSTATE))[0, 2] > 1e-4
    st = anchored_state(model, q, qd, rng, 2e-3 if sliding else 2e-8)
    per = _per_contact(model, q, qd, st)
    slides = abs(per[0, 1]) >= 0.3 * per[0, 0] * (1 - 1e-12)
    out = []
    for cs, cd, vary in ((1.0, 0.0, "q"), (0.0, 1.0, "qd")):
        _, blocks = _blocks(model, q, qd, st, cs, cd)
        delta = _factored_matrix(model, q, qd, blocks, cs) - _factored_matrix(model, q, qd, 0.0 * blocks, cs)
        num = _force_derivative(model, q, qd, st, vary)
        out.append(np.abs(delta - num).max() / np.abs(num).max())
    ROWS.append({"route": "planar (generalized_alpha, bdf)", "case": f"{shape} on a {surface}",
                 "state": "slide" if slides else "stick", "K": out[0], "C": out[1]})


def run(name, model, q, v, rows_anchor, c_stiff=2.5e-5, c_damp=5e-3):
    packed = model._require_compiled()
    nb, nv = packed.body_int.shape[0], model.nv
    nr = packed.contact_int.shape[0]
    state = np.zeros((nr, L3.N_CSTATE))
    # anchors: the rows' contact points (from a force evaluation) moved by offsets
    rot, pos, om, vel = np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3))
    mx = max(1, int(packed.body_int[:, L3.NVJ].max()))
    ws, s, tmp = np.zeros((nb, L3.W_SPATIAL)), np.zeros((nb, mx, 6)), np.zeros(st.TMP_SIZE)
    assert st.poses(packed.body_int, packed.body_real, q, v, ws, s, tmp, rot, pos, om, vel, True) == 0
    per = np.zeros((nr, L3.N_PER_CONTACT))
    sc.contact_forces(packed.contact_int, packed.contact_real, rot, pos, om, vel, state.reshape(-1), 0,
                      np.zeros((nb, 6)), np.zeros(2), per)
    assert (per[:, 4] > 0).all(), per
    rng = np.random.default_rng(1)
    for r in range(nr):
        b, o = packed.contact_int[r, 0], packed.contact_int[r, 1]
        p = per[r, 5:8]
        state[r, L3.CS_ACTIVE] = 1.0
        state[r, L3.CS_VIN] = 0.7
        ab = p + rng.normal(size=3) * rows_anchor
        state[r, L3.CS_BODY:L3.CS_BODY + 3] = rot[b].T @ (ab - pos[b])
        state[r, L3.CS_SURF:L3.CS_SURF + 3] = p if o < 0 else rot[o].T @ (p - pos[o])
    sc.contact_forces(packed.contact_int, packed.contact_real, rot, pos, om, vel, state.reshape(-1), 0,
                      np.zeros((nb, 6)), np.zeros(2), per)
    slides = np.linalg.norm(per[:, 1:4], axis=1) >= packed.contact_real[:, L3.CMU] * per[:, 0] * (1 - 1e-12)

    def force(q, v):
        return (rm.mass_matrix(model, q) @ rm.forward_dynamics(model, q, v, contact_state=state)
                + rm.bias_forces(model, q, v))
    h = 1e-7
    K, C = np.zeros((nv, nv)), np.zeros((nv, nv))
    for j in range(nv):
        e = np.eye(nv)[j] * h
        K[:, j] = -(force(rm.integrate_configuration(model, q, e), v)
                    - force(rm.integrate_configuration(model, q, -e), v)) / (2 * h)
        C[:, j] = -(force(q, v + e) - force(q, v - e)) / (2 * h)
    expected = c_stiff * K + c_damp * C
    blocks = np.zeros((nb, 6, 24))
    sc.contact_newton_blocks(packed.body_int, packed.contact_int, packed.contact_real, rot, pos, om, vel,
                             state.reshape(-1), 0, blocks, np.zeros((0, 4)))

    def cheap(blocks):
        ws, s, ud = np.zeros((nb, L3.W_SPATIAL)), np.zeros((nb, mx, 6)), np.zeros((nb, mx, 6))
        dinv = np.zeros((nb, mx, mx))
        assert si.effective_factor(packed.body_int, packed.body_real, packed.gravity, q, np.zeros(nv), ws, s, tmp,
                                   c_stiff, np.zeros(nv), ud, dinv, np.zeros((nb, 3, 3)), np.zeros((nb, 3)),
                                   np.zeros((nb, 6)), blocks, c_damp, np.zeros(0, dtype=np.uint8)) == 0
        inv = np.zeros((nv, nv))
        for j in range(nv):
            si.effective_apply(packed.body_int, ws, s, ud, dinv, np.eye(nv)[j], tmp, np.zeros((nb, mx)), inv[:, j])
        return np.linalg.inv(inv)

    # the rows' subtree loads (body axes about the origins), as ``system.contact_subtree_loads`` makes them
    loads = np.zeros((nb, 6))
    sc.transmitted_loads(packed.body_int, packed.contact_int, packed.contact_real, rot, pos, om, vel,
                         state.reshape(-1), 0, np.zeros((0, 4)), loads)
    for i in range(nb - 1, -1, -1):
        p = packed.body_int[i, L3.PARENT]
        if p >= 0:
            st._force_to_parent_add(ws, i, loads[i], 0, loads[p], 0)

    def exact(blocks):
        ws, s = np.zeros((nb, L3.W_SPATIAL)), np.zeros((nb, mx, 6))
        fac = np.zeros((nb, sn.factor_width(mx)))
        assert sn.newton_factor(packed.body_int, packed.body_real, packed.gravity, q, v, np.zeros(nv), np.zeros(nv),
                                c_stiff, c_damp, np.zeros(nv), ws, s, tmp, np.zeros(nv),
                                np.zeros(sn.SCRATCH_SIZE), fac, blocks, np.zeros(0, dtype=np.uint8),
                                loads if blocks.any() else np.zeros((0, 6))) == 0
        inv = np.zeros((nv, nv))
        for j in range(nv):
            sn.newton_apply(packed.body_int, ws, fac, np.eye(nv)[j], tmp, np.zeros((nb, mx)), inv[:, j])
        return np.linalg.inv(inv)
    errs = []
    for f in (cheap, exact):
        added = f(blocks) - f(np.zeros_like(blocks))
        errs.append(np.abs(added - expected).max() / np.abs(expected).max())
    ROWS.append({"route": "spatial", "case": name, "state": "slide" if slides.any() else "stick",
                 "cheap": errs[0], "exact": errs[1]})



def planar_cases():
    for surface, shape in (("plane", "circle"), ("drum", "circle"), ("drum", "capsule")):
        for sliding in (False, True):
            audit(surface, shape, sliding)


def spatial_cases():
    law = dict(stiffness=1e5, restitution=0.5, friction=0.3, min_impact_speed=0.5)
    G0 = (0.0, 0.0, 0.0)
    # S1: a free ball on the floor, turning and sliding
    for surf in ("floor", "drum"):
        m = rm.Model3D(gravity=G0)
        m.add_body(joint="free", mass=1.0, inertia=0.004, name="ball")
        if surf == "floor":
            m.add_ground()
            z = 0.1 - 4e-4
            q = np.array([0.0, 0.0, z, 1.0, 0.0, 0.0, 0.0])
        else:
            m.add_drum("floor", center=(0, 0, 0), radius=0.5, axis=(0, 1, 0))
            q = np.array([0.05, 0.0, 0.597, 1.0, 0.0, 0.0, 0.0])
        m.add_contact("ball", "floor", radius=0.1, **law)
        for vel, anchor in ((np.array([0.0, 0.0, 0.0, 1e-5, 0.0, 0.0]), 1e-7),
                            (np.array([0.3, -0.2, 0.01, 0.5, 0.2, 0.01]), 1e-4)):
            run(f"free sphere on {surf}, v={np.abs(vel).max():g}", m, q, vel, anchor)


    def depth(model, q):
        packed = model._require_compiled()
        nb = packed.body_int.shape[0]
        mx = max(1, int(packed.body_int[:, L3.NVJ].max()))
        rot, pos, om, vel = np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3))
        ws, s, tmp = np.zeros((nb, L3.W_SPATIAL)), np.zeros((nb, mx, 6)), np.zeros(st.TMP_SIZE)
        st.poses(packed.body_int, packed.body_real, q, np.zeros(model.nv), ws, s, tmp, rot, pos, om, vel, True)
        per = np.zeros((packed.contact_int.shape[0], L3.N_PER_CONTACT))
        nr = packed.contact_int.shape[0]
        sc.contact_forces(packed.contact_int, packed.contact_real, rot, pos, om, vel, np.zeros(nr * L3.N_CSTATE), 0,
                          np.zeros((nb, 6)), np.zeros(2), per)
        # signed: the gap where apart (from the tip's height), else the depth
        return per[0, 4]

    def quat(axis, a):
        axis = np.asarray(axis, float) / np.linalg.norm(axis)
        return np.r_[math.cos(a / 2), math.sin(a / 2) * axis]

    for joint in ("revolute", "spherical"):
        m = rm.Model3D(gravity=G0)
        kw = dict(axis=(0.0, 1.0, 0.0)) if joint == "revolute" else {}
        m.add_body(parent="ground", joint=joint, parent_point=(0, 0, 0.5), child_point=(-0.25, 0, 0), mass=1.0,
                   inertia=(0.001, 0.02, 0.02, 0, 0, 0), name="a", **kw)
        m.add_body(parent="a", joint=joint, parent_point=(0.25, 0, 0), child_point=(-0.25, 0, 0), mass=1.0,
                   inertia=(0.001, 0.02, 0.02, 0, 0, 0), name="b", **kw)
        m.add_ground()
        m.add_contact("b", "floor", point=(0.25, 0, 0), radius=0.02, **law)
        if joint == "revolute":
            def make(a2):
                return np.array([0.6, a2])
            vels = (np.array([0.0, 1e-5]), np.array([0.3, -0.5]))
        else:
            def make(a2):
                return np.r_[quat((0.1, 1, 0.05), 0.6), quat((0.0, 1, -0.2), a2)]
            vels = (np.r_[0, 0, 0, 0, 1e-5, 0], np.array([0.2, 0.3, -0.1, 0.1, -0.4, 0.2]))
        # the second joint's angle where the tip sphere is 4e-4 deep (bisection on the depth, 0 where apart)
        lo, hi = -1.0, 1.5
        a_in = None
        for a2 in np.linspace(lo, hi, 501):
            if depth(m, make(a2)) > 1e-3:
                a_in = a2
                break
        a_out = a_in - 0.005
        while depth(m, make(a_out)) > 0:
            a_out -= 0.005
        for _ in range(60):
            mid = 0.5 * (a_in + a_out)
            if depth(m, make(mid)) > 4e-4:
                a_in = mid
            else:
                a_out = mid
        q = make(a_in)
        for vel in vels:
            run(f"{joint} chain tip on floor, v={np.abs(vel).max():g}", m, q, vel,
                1e-7 if np.abs(vel).max() < 1e-3 else 1e-4)

    # parent-child: an arm hinged about y carries a plane; a sphere on its child (revolute, spherical) presses into it
    for joint in ("revolute", "spherical"):
        m = rm.Model3D(gravity=G0)
        m.add_body(parent="ground", joint="revolute", child_point=(-0.5, 0.0, 0.0), mass=2.0,
                   inertia=(0.01, 0.2, 0.2, 0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0), name="arm")
        kw = dict(axis=(0.3, 1.0, 0.2)) if joint == "revolute" else {}
        m.add_body(parent="arm", joint=joint, parent_point=(0.5, 0.0, 0.0), child_point=(-0.3, 0.0, 0.0),
                   mass=1.0, inertia=(0.01, 0.05, 0.05, 0.0, 0.0, 0.0), name="child", **kw)
        m.add_ground("stop", point=(0.9, 0.0, -0.1), normal=(0.0, 0.0, 1.0), body="arm")
        m.add_contact("child", "stop", point=(0.1, 0.0, -0.1 + 0.02 - 4e-4), radius=0.02, **law)
        if joint == "revolute":
            q = np.array([0.3, 0.01])
            vels = (np.array([0.0, 1e-5]), np.array([0.0, 0.3]))
        else:
            q = np.r_[0.3, quat((0.3, 1.0, 0.2), 0.01)]
            vels = (np.r_[0.0, 0, 1e-5, 0], np.r_[0.0, 0.3, -0.2, 0.1])
        for vel in vels:
            run(f"parent-child {joint} child on arm's plane, v={np.abs(vel).max():g}", m, q, vel,
                1e-7 if np.abs(vel).max() < 1e-3 else 1e-4)


def landing(n, dt, t_end):
    """generalized_alpha's Newton iterations on n capsule links (5 cm, 50 g, radius 1 cm) on spherical joints, the
    first hinged 0.1 m above the floor, laid along x tilted down and released onto it (k = 1e6 N/m^1.5, mu = 0.3,
    restitution 0.1, impacts unwatched: min_impact_speed 5 m/s)."""
    import time  # noqa: PLC0415

    link = 0.05
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    inertia = (1e-6, 0.05 * link**2 / 12, 0.05 * link**2 / 12, 0, 0, 0)
    model.add_body(parent="ground", joint="spherical", parent_point=(0, 0, 0.1), child_point=(-link / 2, 0, 0),
                   mass=0.05, inertia=inertia, name="l0")
    for i in range(1, n):
        model.add_body(parent=i - 1, joint="spherical", parent_point=(link / 2, 0, 0), child_point=(-link / 2, 0, 0),
                       mass=0.05, inertia=inertia, name=f"l{i}")
    model.add_ground()
    model.add_contact([f"l{i}" for i in range(n)], "floor", segment=((-link / 2, 0, 0), (link / 2, 0, 0)),
                      radius=0.01, stiffness=1e6, restitution=0.1, friction=0.3, min_impact_speed=5.0)
    q0 = model.neutral()
    a = 0.12  # the first link tilted down about y, the second back up a little, the third turned about z
    q0[0:4] = (math.cos(a / 2), 0.0, math.sin(a / 2), 0.0)
    q0[4:8] = (math.cos(-a / 4), 0.0, math.sin(-a / 4), 0.0)
    q0[8:12] = (math.cos(0.05), 0.0, 0.0, math.sin(0.05))
    start = time.perf_counter()
    res = rm.simulate(model, q0, np.zeros(model.nv), t_end, method="generalized_alpha", dt=dt)
    return {"n": n, "dt": dt, "t_end": t_end, "success": bool(res.success), "steps": int(res.nsteps),
            "newton_iterations": int(res.newton_iterations), "factorizations": int(res.newton_factorizations),
            "wall": time.perf_counter() - start, "q_end": res.q[-1].tolist()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--name", default="contact_newton")
    parser.add_argument("--landing", nargs=3, type=float, metavar=("N", "DT", "T_END"),
                        help="instead: generalized_alpha's Newton iterations on a chain landing on a table "
                        "(20 5e-4 0.2)")
    args = parser.parse_args()
    if args.landing:
        record = landing(int(args.landing[0]), args.landing[1], args.landing[2])
        print_table(["N", "dt", "t_end", "steps", "Newton iterations", "factorisations", "wall [s]"],
                    [[record["n"], record["dt"], record["t_end"], record["steps"], record["newton_iterations"],
                      record["factorizations"], f"{record['wall']:.1f}"]])
        write_json(args.name + "_landing", record)
        return
    planar_cases()
    spatial_cases()
    print_table(["route", "case", "state", "K / cheap", "C / exact"],
                [[r["route"], r["case"], r["state"], f"{r.get('K', r.get('cheap')):.1e}",
                  f"{r.get('C', r.get('exact')):.1e}"] for r in ROWS])
    write_json(args.name, {"rows": ROWS})


if __name__ == "__main__":
    main()
