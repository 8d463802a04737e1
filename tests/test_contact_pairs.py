"""Contacts between a body and its parent in the implicit methods' Newton matrices: the joint block of such a row
against finite differences of its generalised force, the factorisation that takes it, and the Newton iterations it
saves on a hinge held by a stiff contact stop."""

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd._kernels.arrays import readonly_zeros
from recursive_mbd._kernels.layout import CS_ACTIVE, CS_BODY, CS_SURF, CS_VIN, N_CSTATE
from recursive_mbd._kernels.planar import contact as kernels
from recursive_mbd._kernels.planar import implicit, tree
from recursive_mbd.dynamics._evaluation import contact_wrench
from recursive_mbd.model.workspace import workspace

NO_MODES = np.zeros((2, 0), dtype=np.int64)


def _hinge(child_joint, surface, shape):
    """An arm hinged to the ground and a child joined to its tip by ``child_joint`` (at zero joint coordinates the
    child's frame is the arm's moved 0.8 m along x); one contact row between the two near the arm's point
    (0.9, -0.1): ``surface`` "arm_plane" / "arm_drum" (the arm carries a plane or a drum of radius 0.1, the child
    the shape, above it) or "child_plane" / "child_drum" (the child carries it, the arm the shape); ``shape``
    "circle" (radius 0.02), "point" or "capsule" (a capsule only on a drum: on a plane it would be two rows). The
    shape is 0.4 mm deep at zero joint coordinates but for the arm's."""
    model = rm.Model(gravity=(0.0, -9.81))
    model.add_body(parent="ground", joint="revolute", parent_point=(0.0, 0.0), child_point=(-0.5, 0.0), mass=2.0,
                   inertia=0.2, name="arm")
    axis = (0.0, 1.0) if child_joint == "prismatic" else None
    model.add_body(parent="arm", joint=child_joint, parent_point=(0.5, 0.0), child_point=(-0.3, 0.0), mass=1.0,
                   inertia=0.05, axis=axis, name="child")
    law = {"stiffness": 1e5, "exponent": 1.5, "restitution": 0.5, "friction": 0.3, "min_impact_speed": 0.5}
    on_arm = surface.startswith("arm")
    carrier, other = ("arm", "child") if on_arm else ("child", "arm")
    to_carrier = np.zeros(2) if on_arm else np.array([0.8, 0.0])  # arm frame to the carrier's, the other's
    to_other = np.array([0.8, 0.0]) if on_arm else np.zeros(2)
    below = surface == "child_plane"  # the shape below the surface (a plane facing down), else above it
    if surface.endswith("plane"):
        model.add_ground("stop", point=np.array([0.9, -0.1]) - to_carrier, normal=(0.0, -1.0 if below else 1.0),
                         body=carrier)
    else:
        model.add_drum("stop", center=np.array([0.9, -0.2]) - to_carrier, radius=0.1, body=carrier)
    radius = 0.0 if shape == "point" else 0.02
    y = -0.1 - radius + 4e-4 if below else -0.1 + radius - 4e-4
    if shape == "capsule":
        ends = np.array([[0.8, y], [1.0, y - 0.002]]) - to_other
        model.add_contact(other, "stop", segment=ends, radius=radius, **law)
    else:
        model.add_contact(other, "stop", point=np.array([0.9, y]) - to_other, radius=radius, **law)
    return model.compile()


def _generalised_force(model, q, qd, state):
    """The contact rows' generalised force Q = J^T W (nq,) at (q, qd), independent of the Newton blocks: their loads
    W (``contact_wrench``, as the time loops apply them) through inverse dynamics without gravity and motion
    (which gives -J^T W)."""
    ws = workspace(model)
    loads = contact_wrench(model, ws, q, qd, state, np.zeros((0, 3)))
    tau = np.zeros(model.nq)
    zero = np.zeros(model.nq)
    no_gravity = readonly_zeros(2)  # read-only as the model's gravity: the kernel the runs compile, no other
    assert tree.inverse_dynamics(model.body_int, model.body_real, no_gravity, q, zero, zero, loads, ws.ws, tau) == 0
    return -tau


def _force_derivative(model, q, qd, state, vary, h=1e-7):
    """-dQ/dq (``vary`` "q") or -dQ/dqd ("qd") (nq, nq) of the contacts' generalised force by central differences."""
    nq = model.nq
    numeric = np.zeros((nq, nq))
    for j in range(nq):
        sides = []
        for sign in (1.0, -1.0):
            qq, qqd = q.copy(), qd.copy()
            (qq if vary == "q" else qqd)[j] += sign * h
            sides.append(_generalised_force(model, qq, qqd, state))
        numeric[:, j] = -(sides[0] - sides[1]) / (2.0 * h)
    return numeric


def _blocks(model, q, qd, state, c_stiff, c_damp):
    ws = workspace(model)
    assert tree.com_kinematics(model.body_int, model.body_real, q, qd, ws.ws, ws.com) == 0
    blocks = np.zeros((model.nbodies, 3, 6))
    added = kernels.contact_newton_blocks(model.body_int, model.contact_int, model.contact_real, ws.ws, ws.com, state,
                                          0, c_stiff, c_damp, blocks, NO_MODES)
    return added, blocks


def _per_contact(model, q, qd, state):
    ws = workspace(model)
    assert tree.com_kinematics(model.body_int, model.body_real, q, qd, ws.ws, ws.com) == 0
    per = np.zeros((model.ncontacts, kernels.N_PER_CONTACT))
    kernels.contact_forces(model.contact_int, model.contact_real, ws.ws, ws.com, state, 0, np.zeros((2, 3)),
                           np.zeros(3), per, NO_MODES)
    return per


def _touching_state(model, q, qd, offset, rng):
    """A state (q with the child's joint moved until the row is 0.4 mm deep) and an active contact state whose two
    anchors lie ``offset`` apart along the surface near the contact point (the stick spring stretched)."""
    k = model.body_int[1, 2] + (1 if model.body_int[1, 3] == 3 else 0)  # a planar joint's y
    for _ in range(60):  # the child's first coordinate moved until the depth is 0.4 mm (a secant iteration)
        depth = _per_contact(model, q, qd, np.zeros(N_CSTATE))[0, 2]
        if abs(depth - 4e-4) < 1e-9:
            break
        step = 1e-6
        q2 = q.copy()
        q2[k] += step
        slope = (_per_contact(model, q2, qd, np.zeros(N_CSTATE))[0, 2] - depth) / step
        q[k] -= (depth - 4e-4) / slope
    per = _per_contact(model, q, qd, np.zeros(N_CSTATE))
    assert abs(per[0, 2] - 4e-4) < 1e-8
    ws = workspace(model)
    point = per[0, 3:5]
    state = np.zeros(N_CSTATE)
    state[CS_ACTIVE] = 1.0
    state[CS_VIN] = 0.7
    for column, body, shift in ((CS_BODY, model.contact_int[0, 0], offset), (CS_SURF, model.contact_int[0, 1], 0.0)):
        x, y = point + rng.normal(size=2) * 1e-9 + np.array([shift, 0.0])
        c, s = ws.ws[body, tree.CS], ws.ws[body, tree.SN]
        dx, dy = x - ws.com[body, 0], y - ws.com[body, 1]
        state[column:column + 2] = (c * dx + s * dy, -s * dx + c * dy)
    return q, state


CASES = [("revolute", "arm_plane", "circle"), ("revolute", "child_plane", "point"),
         ("revolute", "arm_drum", "capsule"), ("revolute", "child_drum", "circle"),
         ("prismatic", "arm_plane", "point"), ("prismatic", "child_drum", "capsule"),
         ("planar", "arm_drum", "circle"), ("planar", "child_plane", "point"), ("planar", "arm_plane", "circle"),
         ("planar", "child_drum", "capsule")]


@pytest.mark.parametrize("sliding", [False, True])
@pytest.mark.parametrize(("child_joint", "surface", "shape"), CASES)
def test_a_parent_child_contact_enters_the_childs_joint_block_as_its_exact_derivative(child_joint, surface, shape,
                                                                                      sliding):
    # the row between the arm and its child moves with the child's joint alone, and its forces on the two cancel
    # on the arm's subtree: -dQ/dq and -dQ/dqd (central differences of its generalised force, from inverse dynamics
    # with and without its loads) vanish outside the child's joint block and equal the kernel's block there
    model = _hinge(child_joint, surface, shape)
    rng = np.random.default_rng(3)
    nq = model.nq
    q = np.zeros(nq)
    q[0] = 0.3
    qd = rng.normal(size=nq) * (0.05 if sliding else 1e-5)  # (the stick damper well inside the limit too)
    offset = 2e-3 if sliding else 2e-8  # a stretched stick spring: past the friction limit, or well inside it
    q, state = _touching_state(model, q, qd, offset, rng)
    per = _per_contact(model, q, qd, state)
    assert per[0, 0] > 0.0
    assert (abs(per[0, 1]) >= 0.3 * per[0, 0] * (1.0 - 1e-12)) == sliding
    child = 1
    k0, nd = model.body_int[child, 2], model.body_int[child, 3]
    q_force = _generalised_force(model, q, qd, state)
    assert abs(q_force[0]) < 1e-12 * np.abs(q_force).max()  # internal to the arm's subtree
    for c_stiff, c_damp, vary in ((1.0, 0.0, "q"), (0.0, 1.0, "qd")):
        added, blocks = _blocks(model, q, qd, state, c_stiff, c_damp)
        assert added == 1
        assert not blocks[:, :, :3].any() and not blocks[0].any()  # nothing on the bodies, nor on the arm's joint
        numeric = _force_derivative(model, q, qd, state, vary)
        expected = np.zeros((nq, nq))
        expected[k0:k0 + nd, k0:k0 + nd] = blocks[child, :nd, 3:3 + nd]
        scale = np.abs(numeric).max()
        assert scale > 0.0
        assert np.abs(expected - numeric).max() < 1e-8 * scale, (vary, expected, numeric)


@pytest.mark.parametrize("child_joint", ["revolute", "planar"])
def test_the_factorisation_adds_the_joint_block_to_the_childs_joint(child_joint):
    # S from the factors (its inverse column by column) with the contacts' blocks minus without them: the joint
    # block on the child's coordinates and nothing else; the serial register path (a revolute chain) as the tree's
    model = _hinge(child_joint, "arm_plane", "circle")
    rng = np.random.default_rng(5)
    q = np.zeros(model.nq)
    q[0] = 0.3
    qd = rng.normal(size=model.nq) * 0.2
    q, state = _touching_state(model, q, qd, 2e-8, rng)
    _, blocks = _blocks(model, q, qd, state, 2.5e-5, 5e-3)
    ws = workspace(model)
    tree.kinematics_pass(model.body_int, model.body_real, q, qd, ws.ws, True)
    nb, nq = model.nbodies, model.nq
    no_driven = np.zeros(0, dtype=np.uint8)
    matrices = []
    for with_blocks in (blocks, np.zeros((nb, 3, 6))):
        ia, dinv, gcol = (np.zeros((nb, 3, 3)) for _ in range(3))
        uu = np.zeros((nb, 3, 6))
        rvec, kb = np.zeros((nb, 2)), np.zeros(nb)
        assert implicit.effective_factor(model.body_int, model.body_real, model.gravity, ws.ws, no_driven, 1.0,
                                         2.5e-5, np.zeros(nq), with_blocks, ia, uu, dinv, gcol, rvec,
                                         np.zeros((nb, 2)), kb, np.zeros((3, 3))) == 0
        inverse = np.zeros((nq, nq))
        for j in range(nq):
            implicit.effective_apply(model.body_int, no_driven, uu, dinv, gcol, rvec, np.eye(nq)[j],
                                     np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)), inverse[:, j])
        matrices.append(np.linalg.inv(inverse))
    k0, nd = model.body_int[1, 2], model.body_int[1, 3]
    expected = np.zeros((nq, nq))
    expected[k0:k0 + nd, k0:k0 + nd] = blocks[1, :nd, 3:3 + nd]
    assert np.abs(expected).max() > 0.0
    assert np.abs(matrices[0] - matrices[1] - expected).max() < 1e-9 * np.abs(matrices[0]).max()


def _folding_stop(stiffness):
    """A two-link arm released from horizontal: the upper link hinged to the ground, the forearm hinged to its tip
    and held from folding up by a stop that the upper link carries (a plane facing down, 2 cm above the forearm's
    axis, which a 2 cm circle on the forearm 0.2 m beyond its centre touches): as the arm falls, the forearm presses
    on the stop (the tip of a falling rod lags: the stop carries it)."""
    model = rm.Model(gravity=(0.0, -9.81))
    model.add_body(parent="ground", joint="revolute", parent_point=(0.0, 0.0), child_point=(-0.5, 0.0), mass=2.0,
                   inertia=2.0 / 12.0, name="arm")
    model.add_body(parent="arm", joint="revolute", parent_point=(0.5, 0.0), child_point=(-0.25, 0.0), mass=1.0,
                   inertia=1.0 / 48.0, name="forearm")
    model.add_ground("stop", point=(0.5, 0.02), normal=(0.0, -1.0), body="arm")
    model.add_contact("forearm", "stop", point=(0.2, 0.0), radius=0.02, stiffness=stiffness, exponent=1.0,
                      restitution=0.5, friction=0.3)
    return model


@pytest.mark.parametrize(("method", "options"), [("generalized_alpha", {"dt": 1e-3}),
                                                 ("bdf", {"rtol": 1e-4, "atol": 1e-6})])
def test_a_stiff_stop_between_a_link_and_its_parent_costs_newton_no_more_than_a_soft_one(method, options):
    # k = 1e8 N/m on a forearm of 0.4 kg at the stop (a normal vibration of 0.4 ms): with the stop's stiffness in
    # the forearm's joint block, generalized_alpha at dt = 1 ms takes 2.4 Newton iterations a step and never splits
    # one, and bdf at rtol 1e-4 takes 860 steps and 1,954 iterations over 0.5 s. With the stop lagged (its
    # stiffness left out of the matrix), generalized_alpha needed 462,831 iterations and split 7,465 steps, and bdf
    # 15,142 steps and 68,750 iterations
    result = rm.simulate(_folding_stop(1e8), [0.0, 0.0], [0.0, 0.0], 0.5, method=method, **options)
    assert result.success
    forces = result.contact_forces()
    assert forces["active"][len(result.t) // 10:].min() == 1  # the stop holds the forearm from the start
    assert abs(result.q[-1, 1]) < 1e-7  # pressed on the stop (0.16 um deep), not folded
    if method == "generalized_alpha":
        assert result.newton_split_steps == 0
        assert result.newton_iterations <= 3 * result.nsteps
    else:
        assert result.nsteps < 1200
        assert result.newton_iterations < 3 * result.nsteps


@pytest.mark.parametrize("surface", ["plane", "drum"])
@pytest.mark.parametrize("friction", [0.3, 0.0])
@pytest.mark.parametrize("carrier", ["arm", "child"])
def test_a_spatial_contact_between_a_link_and_its_parent_enters_the_childs_joint_alone(carrier, friction, surface):
    # spatial: an arm hinged about y carries a plane (or a drum of radius 0.1 about a skew axis) that a sphere on its
    # child (hinged about a skew axis) presses 0.4 mm into, the stick spring stretched; or the child carries it and
    # the arm the sphere; the arm at rest, the child turning slowly (its body twist then follows its own joint
    # only). The two factorisations (the cheap symmetric one and the exact one) with the contacts' blocks minus
    # without them: c_stiff (-dQ/dq) + c_damp (-dQ/dv) of the row's generalised force Q (central
    # differences of M vdot + h from forward dynamics with its contact state, gravity off), on the child's joint
    # alone (zero on the arm's)
    from recursive_mbd._kernels.spatial import contact as spatial_contact  # noqa: PLC0415
    from recursive_mbd._kernels.spatial import implicit as spatial_implicit  # noqa: PLC0415
    from recursive_mbd._kernels.spatial import layout as layout3d  # noqa: PLC0415
    from recursive_mbd._kernels.spatial import newton as spatial_newton  # noqa: PLC0415
    from recursive_mbd._kernels.spatial import tree as spatial_tree  # noqa: PLC0415

    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(parent="ground", joint="revolute", child_point=(-0.5, 0.0, 0.0), mass=2.0,
                   inertia=(0.01, 0.2, 0.2, 0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0), name="arm")
    model.add_body(parent="arm", joint="revolute", parent_point=(0.5, 0.0, 0.0), child_point=(-0.3, 0.0, 0.0),
                   mass=1.0, inertia=(0.01, 0.05, 0.05, 0.0, 0.0, 0.0), axis=(0.3, 1.0, 0.2), name="child")
    # the plane at the arm's point (0.9, 0, -0.1), the child's (0.1, 0, -0.1) at zero joint angles; the sphere
    # 0.4 mm into it from above (the arm's plane) or below (the child's, facing down)
    law = {"stiffness": 1e5, "restitution": 0.5, "friction": friction, "min_impact_speed": 0.5}
    if carrier == "arm":
        if surface == "plane":
            model.add_ground("stop", point=(0.9, 0.0, -0.1), normal=(0.0, 0.0, 1.0), body="arm")
        else:
            model.add_drum("stop", center=(0.9, 0.0, -0.2), radius=0.1, axis=(0.2, 1.0, 0.0), body="arm")
        model.add_contact("child", "stop", point=(0.1, 0.0, -0.1 + 0.02 - 4e-4), radius=0.02, **law)
        anchors = (0.1 + 1e-8, 2e-8, -0.1), (0.9, 0.0, -0.1)
    else:
        if surface == "plane":
            model.add_ground("stop", point=(0.1, 0.0, -0.1), normal=(0.0, 0.0, -1.0), body="child")
        else:
            model.add_drum("stop", center=(0.1, 0.0, 0.0), radius=0.1, axis=(0.2, 1.0, 0.0), body="child")
        model.add_contact("arm", "stop", point=(0.9, 0.0, -0.1 - 0.02 + 4e-4), radius=0.02, **law)
        anchors = (0.9 + 1e-8, 2e-8, -0.1), (0.1, 0.0, -0.1)
    model.compile()
    state = np.zeros((1, layout3d.N_CSTATE))
    state[0, layout3d.CS_ACTIVE] = 1.0
    state[0, layout3d.CS_VIN] = 0.7
    state[0, layout3d.CS_BODY:layout3d.CS_BODY + 3] = anchors[0]
    state[0, layout3d.CS_SURF:layout3d.CS_SURF + 3] = anchors[1]
    q = np.array([0.3, 0.01])
    v = np.array([0.0, 1e-5])

    def force(q, v):
        return rm.mass_matrix(model, q) @ rm.forward_dynamics(model, q, v, contact_state=state) + rm.bias_forces(
            model, q, v)

    assert abs(force(q, v)[0]) < 1e-12 * abs(force(q, v)[1])  # internal to the arm's subtree
    h = 1e-7
    stiffness, damping = np.zeros((2, 2)), np.zeros((2, 2))
    for j in range(2):
        e = np.eye(2)[j] * h
        stiffness[:, j] = -(force(q + e, v) - force(q - e, v)) / (2 * h)
        damping[:, j] = -(force(q, v + e) - force(q, v - e)) / (2 * h)
    assert abs(stiffness[1, 1]) > 1e3
    c_stiff, c_damp = 2.5e-5, 5e-3
    expected = c_stiff * stiffness + c_damp * damping
    nb, nv = 2, 2
    packed = model._require_compiled()
    rot, pos, omega, vel = np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3))
    ws, s, tmp = np.zeros((nb, layout3d.W_SPATIAL)), np.zeros((nb, 1, 6)), np.zeros(spatial_tree.TMP_SIZE)
    assert spatial_tree.poses(packed.body_int, packed.body_real, q, v, ws, s, tmp, rot, pos, omega, vel, True) == 0
    blocks = np.zeros((nb, 6, 24))
    assert spatial_contact.contact_newton_blocks(packed.body_int, packed.contact_int, packed.contact_real, rot, pos,
                                                 omega, vel, state.reshape(-1), 0, blocks, np.zeros((0, 4))) == 1
    assert not blocks[:, :, :12].any() and not blocks[0].any()

    def cheap(blocks):
        ws, s, ud = np.zeros((nb, layout3d.W_SPATIAL)), np.zeros((nb, 1, 6)), np.zeros((nb, 1, 6))
        dinv = np.zeros((nb, 1, 1))
        assert spatial_implicit.effective_factor(packed.body_int, packed.body_real, packed.gravity, q, np.zeros(nv),
                                                 ws, s, tmp, c_stiff, np.zeros(nv), ud, dinv, np.zeros((nb, 3, 3)),
                                                 np.zeros((nb, 3)), np.zeros((nb, 6)), blocks, c_damp,
                                                 np.zeros(0, dtype=np.uint8)) == 0
        inverse = np.zeros((nv, nv))
        for j in range(nv):
            spatial_implicit.effective_apply(packed.body_int, ws, s, ud, dinv, np.eye(nv)[j], tmp, np.zeros((nb, 1)),
                                             inverse[:, j])
        return np.linalg.inv(inverse)

    def exact(blocks):
        ws, s = np.zeros((nb, layout3d.W_SPATIAL)), np.zeros((nb, 1, 6))
        fac = np.zeros((nb, spatial_newton.factor_width(1)))
        assert spatial_newton.newton_factor(packed.body_int, packed.body_real, packed.gravity, q, v, np.zeros(nv),
                                            np.zeros(nv), c_stiff, c_damp, np.zeros(nv), ws, s, tmp, np.zeros(nv),
                                            np.zeros(spatial_newton.SCRATCH_SIZE), fac, blocks,
                                            np.zeros(0, dtype=np.uint8), np.zeros((0, 6))) == 0
        inverse = np.zeros((nv, nv))
        for j in range(nv):
            spatial_newton.newton_apply(packed.body_int, ws, fac, np.eye(nv)[j], tmp, np.zeros((nb, 1)),
                                        inverse[:, j])
        return np.linalg.inv(inverse)

    for factor in (cheap, exact):
        added = factor(blocks) - factor(np.zeros((nb, 6, 24)))
        assert np.abs(added - expected).max() < 1e-8 * np.abs(expected).max(), (factor.__name__, added, expected)


def _shaken_table(stiffness):
    """A capsule (1 kg, along x, end spheres of radius 5 cm) lying on a table: a body of 100 kg on a prismatic
    joint along x whose joint spring swings it +-5 cm at 2 Hz (1.6 g at its turns), the capsule on a free joint
    from it, the table's top plane carried by the table. At mu = 0.3 the capsule sticks while the table's
    acceleration is below 0.3 g and slides back and forth on it through each swing."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    law = {"stiffness": stiffness, "restitution": 0.5, "friction": 0.3, "min_impact_speed": 0.1}
    model.add_body(joint="prismatic", axis=(1.0, 0.0, 0.0), mass=100.0, inertia=1.0, name="table")
    model.add_joint_spring_damper("table", 100.0 * (4.0 * np.pi) ** 2)
    model.add_body(parent="table", joint="free", mass=1.0, inertia=0.02, name="capsule")
    model.add_ground("top", body="table")
    model.add_contact("capsule", "top", segment=((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0)), radius=0.05, **law)
    height = 0.05 - (0.5 * 9.81 / stiffness) ** (1.0 / 1.5)  # each end sphere carries half the weight
    return model, np.array([0.05, 0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0])


def test_a_child_sliding_back_and_forth_on_its_parent_takes_its_slip_reversals_on_the_unclipped_law():
    # generalized_alpha at dt = 10 ms, k = 1e7 N/m^1.5: the capsule's stick springs vibrate far faster than the
    # step, so at each reversal of its slip on the table Newton, taking the clipped law, cycled between the two
    # slip directions: 1,206 iterations over the 150 steps (8.0 a step). Its rows marked at a reversal and taken on
    # their unclipped law, as rows on the ground are (``spatial.contact.slip_reversals``): 930 (6.2 a step), the
    # motion the same to the Newton tolerance's reach
    model, q0 = _shaken_table(1e7)
    result = rm.simulate(model, q0, np.zeros(7), 1.5, method="generalized_alpha", dt=0.01,
                         t_eval=np.linspace(0.0, 1.5, 16))
    assert result.success
    assert result.newton_iterations <= 7 * result.nsteps
    forces = result.contact_forces()
    assert forces["active"].min() == 2  # both end spheres on the table throughout
    slip = result.qd[:, 1]  # the capsule's x velocity on the table (its free joint's, from the table)
    assert slip.max() > 0.05 and slip.min() < -0.05  # back and forth on it
    tangential = np.linalg.norm(forces["tangential"], axis=2)
    assert (tangential <= 0.3 * forces["normal"] * (1.0 + 1e-9) + 1e-12).all()  # within the Coulomb limit
