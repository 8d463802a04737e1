"""Contacts with ground-fixed surfaces in the implicit methods' Newton matrices: the matrix the articulated
elimination factorises, with the contacts' blocks minus without them, against central differences of the contacts'
generalised force; exact on the body, the normal's and lever arm's turn and a sliding row's mu dF_n included."""

import numpy as np
import pytest
from test_contact_pairs import _blocks, _force_derivative, _per_contact

import recursive_mbd as rm
from recursive_mbd._kernels.layout import CS_ACTIVE, CS_BODY, CS_SURF, CS_VIN, N_CSTATE
from recursive_mbd._kernels.planar import implicit, tree
from recursive_mbd.dynamics._evaluation import contact_wrench
from recursive_mbd.model.workspace import workspace

LAW = {"stiffness": 1e5, "exponent": 1.5, "restitution": 0.5, "friction": 0.3, "min_impact_speed": 0.5}


def _build(kind, surface, shape, q):
    """A body free in the plane (``kind`` "free": a planar joint at its centre of mass, so q = (x_com, y_com, theta)
    and qd is its velocity) or a two-link arm hinged to the ground ("arm": a serial revolute chain, the register path
    of the elimination) whose last body's circle (radius 0.02), point or capsule (on the drum only) is 0.4 mm deep at
    q in a tilted ground plane or a fixed drum of radius 0.1, placed there."""
    def bodies():
        model = rm.Model(gravity=(0.0, -9.81))
        if kind == "free":
            model.add_body(parent="ground", joint="planar", parent_point=(0.0, 0.0), child_point=(0.0, 0.0), mass=1.0,
                           inertia=0.05, name="body")
        else:
            model.add_body(parent="ground", joint="revolute", parent_point=(-0.6, 0.2), child_point=(-0.2, 0.0),
                           mass=2.0, inertia=0.03, name="arm")
            model.add_body(parent="arm", joint="revolute", parent_point=(0.2, 0.0), child_point=(-0.2, 0.0),
                           mass=1.0, inertia=0.01, name="body")
        return model

    ends = np.array([[0.02, -0.08], [0.1, -0.085]]) if kind == "free" else np.array([[0.1, 0.01], [0.25, -0.01]])
    x, y, theta = rm.forward_kinematics(bodies(), q, np.zeros_like(q))[0][-1]
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    world = np.array([x, y]) + ends @ rot.T
    centre = 0.5 * (world[0] + world[1]) if shape == "capsule" else world[0]
    radius = 0.0 if shape == "point" else 0.02
    if shape == "capsule":  # the drum below the capsule's middle, square to its axis
        axis = world[1] - world[0]
        normal = np.array([-axis[1], axis[0]]) * np.sign(axis[0]) / np.linalg.norm(axis)
    else:
        normal = np.array([0.3, 1.0]) / np.hypot(0.3, 1.0)
    model = bodies()
    if surface == "plane":
        model.add_ground("stop", point=centre - (radius - 4e-4) * normal, normal=normal)
    else:
        model.add_drum("stop", center=centre - (0.1 + radius - 4e-4) * normal, radius=0.1)
    if shape == "capsule":
        model.add_contact("body", "stop", segment=ends, radius=radius, **LAW)
    else:
        model.add_contact("body", "stop", point=ends[0], radius=radius, **LAW)
    return model.compile()


def _anchored(model, q, qd, rng, offset):
    """An active contact state whose anchors lie ``offset`` apart at the row's contact point (the stick spring
    stretched: sticking where small, sliding past the friction limit); the row 4e-4 deep."""
    assert abs(_per_contact(model, q, qd, np.zeros(N_CSTATE))[0, 2] - 4e-4) < 1e-12
    return anchored_state(model, q, qd, rng, offset)


def anchored_state(model, q, qd, rng, offset):
    """``_anchored``'s state at whatever depth the row has (``benchmarks/contact_newton.py`` takes it too)."""
    per = _per_contact(model, q, qd, np.zeros(N_CSTATE))
    ws = workspace(model)
    tree.com_kinematics(model.body_int, model.body_real, q, qd, ws.ws, ws.com)
    state = np.zeros(N_CSTATE)
    state[CS_ACTIVE] = 1.0
    state[CS_VIN] = 0.7
    body = model.contact_int[0, 0]
    x, y = per[0, 3:5] + rng.normal(size=2) * 1e-9 + np.array([offset, 0.0])
    c, s = ws.ws[body, tree.CS], ws.ws[body, tree.SN]
    dx, dy = x - ws.com[body, 0], y - ws.com[body, 1]
    state[CS_BODY:CS_BODY + 2] = (c * dx + s * dy, -s * dx + c * dy)
    state[CS_SURF:CS_SURF + 2] = per[0, 3:5]  # the ground's frame
    return state


def _factored_matrix(model, q, qd, blocks, c_stiff):
    """The matrix c_mass M + c_stiff T^T diag(K) T + J^T diag(blocks) J (c_mass 1) that ``effective_factor``
    eliminates, from its factors (``effective_apply`` column by column, inverted)."""
    ws = workspace(model)
    tree.kinematics_pass(model.body_int, model.body_real, q, qd, ws.ws, True)
    nb, nq = model.nbodies, model.nq
    no_driven = np.zeros(0, dtype=np.uint8)
    ia, dinv, gcol = (np.zeros((nb, 3, 3)) for _ in range(3))
    uu = np.zeros((nb, 3, 6))  # U and the left factor U_L
    rvec = np.zeros((nb, 2))
    assert implicit.effective_factor(model.body_int, model.body_real, model.gravity, ws.ws, no_driven, 1.0, c_stiff,
                                     np.zeros(nq), blocks, ia, uu, dinv, gcol, rvec, np.zeros((nb, 2)), np.zeros(nb),
                                     np.zeros((3, 3))) == 0
    inverse = np.zeros((nq, nq))
    for j in range(nq):
        implicit.effective_apply(model.body_int, no_driven, uu, dinv, gcol, rvec, np.eye(nq)[j], np.zeros((nb, 3)),
                                 np.zeros((nb, 3)), np.zeros((nb, 3)), inverse[:, j])
    return np.linalg.inv(inverse)


def _load_turn(model, q, qd, state, h=1e-7):
    """-(dJ^T/dq) W (nq, nq): the change of the contacts' generalised force J^T W with q at fixed loads W (force and
    moment at each centre of mass, ``contact_wrench`` at q), by central differences of inverse dynamics."""
    loads = contact_wrench(model, workspace(model), q, qd, state, np.zeros((0, 3)))
    nq = model.nq
    zero = np.zeros(nq)
    turn = np.zeros((nq, nq))
    for j in range(nq):
        sides = []
        for sign in (1.0, -1.0):
            qq = q.copy()
            qq[j] += sign * h
            tau = np.zeros(nq)
            ws = workspace(model)
            assert tree.inverse_dynamics(model.body_int, model.body_real, np.zeros(2), qq, zero, zero, loads, ws.ws,
                                         tau) == 0
            sides.append(tau)  # -J^T W
        turn[:, j] = (sides[0] - sides[1]) / (2.0 * h)
    return turn


def _check(model, q, qd, state, sliding, lagged_turn=False):
    """The factorised matrix's contact part against -dQ/dq (c_stiff 1, c_damp 0) and -dQ/dqd (0, 1); with
    ``lagged_turn``, -dQ/dq less the loads' turn with the joints (``_load_turn``), which the matrix lags."""
    per = _per_contact(model, q, qd, state)
    assert per[0, 0] > 0.0
    assert (abs(per[0, 1]) >= 0.3 * per[0, 0] * (1.0 - 1e-12)) == sliding
    for c_stiff, c_damp, vary in ((1.0, 0.0, "q"), (0.0, 1.0, "qd")):
        added, blocks = _blocks(model, q, qd, state, c_stiff, c_damp)
        assert added == 1
        delta = _factored_matrix(model, q, qd, blocks, c_stiff) - _factored_matrix(model, q, qd, 0.0 * blocks,
                                                                                   c_stiff)
        numeric = _force_derivative(model, q, qd, state, vary)
        if lagged_turn and vary == "q":
            numeric -= _load_turn(model, q, qd, state)
        scale = np.abs(numeric).max()
        assert scale > 0.0
        assert np.abs(delta - numeric).max() < 1e-8 * scale, (vary, delta, numeric)


CASES = [("plane", "circle"), ("plane", "point"), ("drum", "circle"), ("drum", "point"), ("drum", "capsule")]


@pytest.mark.parametrize("sliding", [False, True])
@pytest.mark.parametrize(("surface", "shape"), CASES)
def test_a_free_body_on_a_fixed_surface_gets_its_exact_block(surface, shape, sliding):
    # q = (x_com, y_com, theta) and qd the body's velocity: the block on the body is -dQ/dq and -dQ/dqd itself, moving
    # (0.2 m/s, 3 rad/s) as well as at rest; unsymmetric (a sliding row's mu dF_n, the damping's turn with the normal,
    # the force's turn with the lever arm), which the elimination takes through its separate left factor. Before, the
    # block was J_p^T (k_n n n^T + k_t t t^T) J_p: relative errors 1e-5 to 1e-1
    q = np.array([0.01, 0.02, 0.2])
    model = _build("free", surface, shape, q)
    rng = np.random.default_rng(11)
    qd = rng.normal(size=3) * (0.2 if sliding else 1e-6)
    state = _anchored(model, q, qd, rng, 2e-3 if sliding else 2e-8)
    _check(model, q, qd, state, sliding)


@pytest.mark.parametrize("sliding", [False, True])
@pytest.mark.parametrize(("surface", "shape"), CASES)
def test_a_chain_on_a_fixed_surface_gets_its_blocks_through_the_joints(surface, shape, sliding):
    # a serial revolute chain at rest (the register path): the joint-space matrix is J^T B J, -dQ/dq but for the
    # loads' turn with the joints above the body, which the elimination lags as it lags the inertial loads' turn
    # (d(M qdd)/dq) that meets it in a landing; and, moving, the change of the contact point's velocity with the
    # joints' angles at fixed joint rates (so the arm is at rest here, sliding by its stretched stick spring)
    q = np.array([-0.4, 0.3])
    model = _build("arm", surface, shape, q)
    rng = np.random.default_rng(13)
    qd = np.zeros(2)
    state = _anchored(model, q, qd, rng, 2e-3 if sliding else 2e-8)
    _check(model, q, qd, state, sliding, lagged_turn=True)
