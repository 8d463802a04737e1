"""The spatial forward dynamics' fast paths and lean memory (issue 18, speed and memory): spherical joints condensed
in registers about the joint point, their condensation kept in the workspace rows, default body names generated on
demand. Checked against the O(N^3) route (mass matrix by CRBA, bias by RNEA, Cholesky solve) and ID(FD(tau))."""

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd._kernels.layout import STATUS_NONFINITE_QD, STATUS_NONFINITE_TAU, STATUS_OVERFLOW, STATUS_SINGULAR
from recursive_mbd._kernels.spatial import entry
from recursive_mbd._kernels.spatial.layout import JTYPE, QIDX, SPHERICAL
from recursive_mbd.dynamics import spatial
from recursive_mbd.errors import ModelError


def random_inertia(rng):
    """A full inertia tensor about the centre of mass: a random rotation of random principal moments."""
    moments = np.sort(rng.uniform(0.5, 1.5, size=3))
    moments[2] = min(moments[2], moments[0] + moments[1])  # the triangle inequality
    axes, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return axes @ np.diag(moments) @ axes.T


def random_tree(rng, joints):
    """A tree (random parents) of the given joints with random frames, offsets, inertias and axes."""
    model = rm.Model3D(gravity=rng.normal(size=3))
    for i, joint in enumerate(joints):
        rotation = rng.normal(size=4)
        model.add_body(parent=int(rng.integers(-1, i)), joint=joint, parent_point=rng.normal(size=3),
                       child_point=rng.normal(size=3), mass=rng.uniform(0.5, 2.0), inertia=random_inertia(rng),
                       com=rng.normal(size=3), rotation=rotation / np.linalg.norm(rotation),
                       axis=rng.normal(size=3) if joint in ("revolute", "prismatic") else None)
    return model


def random_state(rng, model):
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def check_forward_dynamics(model, q, v, tau):
    vdot = rm.forward_dynamics(model, q, v, tau)
    reference = rm.forward_dynamics(model, q, v, tau, method="mass_matrix")
    assert np.max(np.abs(vdot - reference)) <= 1e-9 * np.max(np.abs(reference))
    back = rm.inverse_dynamics(model, q, v, vdot)
    assert np.max(np.abs(back - tau)) <= 1e-10 * max(1.0, np.max(np.abs(tau)))
    return vdot


@pytest.mark.parametrize(("joints", "seed"), [(["spherical"] * 7, seed) for seed in range(5)] + [
    (["revolute", "spherical", "revolute", "revolute", "spherical", "revolute", "revolute"], 50 + seed)
    for seed in range(3)])
def test_spherical_and_revolute_tree_forward_dynamics_keeps_no_subspace_arrays(joints, seed):
    """The ABA of spherical and revolute joints reads no S, U D^-1, D^-1 u arrays (a revolute S = (a; cp x a) is
    formed from the model, its U D^-1, D^-1, D^-1 u kept in the workspace row): they have no rows."""
    rng = np.random.default_rng(seed)
    model = random_tree(rng, joints)
    q, v, tau = random_state(rng, model)
    vdot = rm.forward_dynamics(model, q, v, tau)
    work = spatial.workspace(model)
    assert work.fd_S.shape[0] == 0 and work.UD.shape[0] == 0 and work.uD.shape[0] == 0
    assert work._S is None
    assert np.array_equal(check_forward_dynamics(model, q, v, tau), vdot)
    assert work.S.shape == (7, 3, 6)  # allocated by the other kernels on first use


@pytest.mark.parametrize("seed", range(5))
def test_spherical_joints_among_other_joints(seed):
    rng = np.random.default_rng(100 + seed)
    joints = ["spherical", "revolute", "spherical", "prismatic", "free", "spherical", "universal", "spherical"]
    model = random_tree(rng, joints)
    q, v, tau = random_state(rng, model)
    check_forward_dynamics(model, q, v, tau)
    assert spatial.workspace(model).UD.shape[0] == model.nbodies


@pytest.mark.parametrize("joint", ["spherical", "revolute"])
def test_chain_matches_the_mass_matrix_route_when_long(joint):
    """A chain of 40 spherical or revolute joints (random axes): the register paths of the articulated-body
    algorithm against the composite-rigid-body M and the recursive Newton-Euler bias."""
    rng = np.random.default_rng(7)
    model = rm.Model3D()
    n = 40
    parent_points = np.zeros((n, 3))
    parent_points[1:, 2] = -0.1
    model.add_bodies(np.arange(n) - 1, joint, parent_point=parent_points, child_point=(0.0, 0.0, 0.05),
                     mass=0.1, inertia=(1e-4, 2e-4, 1.5e-4, 1e-5, 0.0, 0.0), com=(0.01, 0.0, 0.0),
                     axis=rng.normal(size=(n, 3)) if joint == "revolute" else None)
    q, v, tau = random_state(rng, model)
    vdot = rm.forward_dynamics(model, q, v, tau)
    mass = rm.mass_matrix(model, q)
    residual = mass @ vdot + rm.bias_forces(model, q, v) - tau
    assert np.max(np.abs(residual)) <= 1e-12 * np.max(np.abs(mass)) * np.max(np.abs(vdot))


def test_forward_dynamics_reads_nothing_stale_from_its_workspace():
    """Forward dynamics adds a body's own inertia to what its children stored in its row, which holds numbers of
    the last call (the body's velocity among them) until its first child writes there: a workspace full of NaN
    (spherical, revolute and other joints; bodies with several children, with none) gives the same accelerations,
    bit for bit."""
    rng = np.random.default_rng(33)
    model = random_tree(rng, ["spherical", "revolute", "spherical", "prismatic", "revolute", "universal",
                              "revolute", "spherical", "revolute"])
    parents = model.parents
    assert np.bincount(parents[parents >= 0]).max() >= 2  # some body has several children
    q, v, tau = random_state(rng, model)
    vdot = rm.forward_dynamics(model, q, v, tau)
    work = spatial.workspace(model)
    for array in (work.ws, work.tmp, work.fd_S, work.UD, work.uD):
        array[...] = np.nan
    assert np.array_equal(rm.forward_dynamics(model, q, v, tau), vdot)
    check_forward_dynamics(model, q, v, tau)


def test_default_names_are_generated_and_checked():
    model = rm.Model3D()
    model.add_body()
    model.add_body(parent="body0", name="body5")
    model.add_bodies(np.array([1, 2]))
    assert model.names == ["body0", "body5", "body2", "body3"]
    assert model.body_index("body3") == 3 and model.body_index("body5") == 1
    with pytest.raises(ModelError, match="unknown body 'body1'"):
        model.body_index("body1")  # body 1 is named body5
    with pytest.raises(ModelError, match=r"body 'body5' \(index 5\): duplicate name"):
        model.add_bodies(np.array([0, 0, 0]))
    with pytest.raises(ModelError, match=r"body 'body2' \(index 4\): duplicate body name"):
        model.add_body(name="body2")
    with pytest.raises(ModelError, match=r"body 'body0' \(index 4\): duplicate"):
        model.add_bodies(np.array([0]), names=["body0"])
    model.add_body(parent="body3", name="body04")  # not a default spelling: a name of its own
    assert model.body_index("body04") == 4 and model.names[4] == "body04"


@pytest.mark.parametrize("joints", [["spherical"] * 6, ["revolute", "spherical", "revolute", "revolute"],
                                    ["spherical", "revolute", "free", "spherical", "universal", "prismatic", "planar",
                                     "cylindrical", "spherical"]])
def test_unit_force_responses_reuse_the_forward_dynamics_factorisation(joints):
    """M^-1 tau_r for several tau_r on the factorisation a forward-dynamics call at (q, v, tau, gravity) left:
    against a dense solve with the composite-rigid-body M (the factorisation depends on q only)."""
    from recursive_mbd._kernels.spatial import tree as kernels  # noqa: PLC0415

    rng = np.random.default_rng(len(joints))
    model = random_tree(rng, joints)
    q, v, tau = random_state(rng, model)
    rows = rng.normal(size=(4, model.nv))
    work = spatial.workspace(model)
    # the general kernel factorises at q (with velocity, gravity and tau: none of it stays); the loop layer calls it
    # so (rm.forward_dynamics on a tree of spherical and revolute joints takes the rotary route, which keeps nothing)
    assert kernels.forward_dynamics(model.body_int, model.body_real, model.gravity, q, v, tau, work.ws, work.fd_S,
                                    work.UD, work.uD, work.tmp, np.empty(model.nv)) == 0
    resp = np.full((4, model.nv), np.nan)
    S = work.S if work.fd_S.shape[0] == 0 else work.fd_S
    kernels.unit_force_responses(model.body_int, model.body_real, rows, work.ws, S, work.UD, work.uD, work.tmp, resp)
    expected = np.linalg.solve(rm.mass_matrix(model, q), rows.T).T
    assert np.max(np.abs(resp - expected)) <= 1e-10 * np.max(np.abs(expected))


def _rotary_tree(rng, n):
    """A random tree of spherical and revolute joints as ``random_tree``, every other frame rotated (R0 != 1, else
    R0 = 1: the route skips that product)."""
    model = rm.Model3D(gravity=rng.normal(size=3))
    for i in range(n):
        joint = str(rng.choice(["spherical", "revolute"]))
        rotation = rng.normal(size=4)
        model.add_body(parent=int(rng.integers(-1, i)), joint=joint, parent_point=rng.normal(size=3),
                       child_point=rng.normal(size=3), mass=rng.uniform(0.5, 2.0), inertia=random_inertia(rng),
                       com=rng.normal(size=3), rotation=rotation / np.linalg.norm(rotation) if i % 2 else None,
                       axis=rng.normal(size=3) if joint == "revolute" else None)
    return model


def _general_kernel_fd(model, q, v, tau):
    """The general route's accelerations and status (``tree.forward_dynamics`` through its packed entry)."""
    out = np.empty(model.nv)
    status = entry.kernel("general")(model.body_int, model.body_real, model.gravity, q, v, tau,
                                     spatial.workspace(model).buffer, out)
    return status, out


@pytest.mark.parametrize("seed", range(6))
def test_rotary_route_is_the_general_kernel_on_random_trees(seed):
    """A tree of spherical and revolute joints only takes its own route (``_kernels.spatial.rotary``: world axes at
    the joint points), on the short path and the full route alike (bit for bit); its accelerations are the general
    kernel's to round-off, and M vdot + h = tau."""
    rng = np.random.default_rng(300 + seed)
    model = _rotary_tree(rng, 2 + 3 * seed)
    q, v, tau = random_state(rng, model)
    full = spatial.forward_dynamics(model, q, v, tau)  # the full route, which sets up the short path
    work = spatial.workspace(model)
    assert work.route == "rotary" and work.short_fd[0] is entry.kernel("rotary")
    vdot = rm.forward_dynamics(model, q, v, tau)
    np.testing.assert_array_equal(vdot, full)
    status, general = _general_kernel_fd(model, q, v, tau)
    assert status == 0
    assert np.max(np.abs(vdot - general)) <= 1e-13 * np.max(np.abs(general))
    check_forward_dynamics(model, q, v, tau)


def test_each_route_returns_the_general_routes_statuses():
    """The rotary route returns the statuses of the general one: a non-finite input naming its entry, a wrong length,
    a quaternion off unit norm naming its body, a singular articulated inertia naming its joint's body (a point mass
    at a spherical joint's centre, a gimbal lock of three revolute joints), a non-finite output."""
    rng = np.random.default_rng(5)
    model = _rotary_tree(rng, 5)
    q, v, tau = random_state(rng, model)
    ball = rm.Model3D()
    ball.add_body(joint="revolute", inertia=0.1, name="arm")
    ball.add_body("arm", "spherical", mass=1.0, inertia=0.0, name="bob")  # the mass at the joint's centre
    gimbal = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    gimbal.add_body("ground", "revolute", axis=(0.0, 0.0, 1.0), mass=0.0, name="yaw")
    gimbal.add_body("yaw", "revolute", axis=(0.0, 1.0, 0.0), mass=0.0, name="pitch")
    gimbal.add_body("pitch", "revolute", axis=(1.0, 0.0, 0.0), mass=2.0, inertia=(1.0, 2.0, 3.0, 0.0, 0.0, 0.0),
                    com=(0.1, 0.2, 0.3), name="roll")
    first_ball = int(np.flatnonzero(model.body_int[:, JTYPE] == SPHERICAL)[0])
    off = q.copy()
    k = model.body_int[first_ball, QIDX]
    off[k:k + 4] *= 1.01
    cases = [(model, q, np.where(np.arange(model.nv) == 2, np.nan, v), tau, STATUS_NONFINITE_QD | (2 << 4)),
             (model, q, v, np.where(np.arange(model.nv) == 1, np.inf, tau), STATUS_NONFINITE_TAU | (1 << 4)),
             (model, q, v[:-1], tau[:-1], entry.SIZE_MISMATCH),
             (model, off, v, tau, -(first_ball + 1)),
             (model, q, v, np.full(model.nv, 1e308), STATUS_OVERFLOW),
             (ball, ball.neutral(), np.zeros(4), np.zeros(4), STATUS_SINGULAR | (1 << 4)),
             (gimbal, np.array([0.2, np.pi / 2, 0.4]), np.array([0.1, 0.2, 0.3]), np.zeros(3), STATUS_SINGULAR)]
    for case_model, case_q, case_v, case_tau, expected in cases:
        work = spatial.workspace(case_model)
        assert work.route == "rotary"
        for route in ("general", "rotary"):
            out = np.empty(case_v.shape[0])
            status = entry.kernel(route)(case_model.body_int, case_model.body_real, case_model.gravity, case_q,
                                         case_v, case_tau, work.buffer, out)
            if expected == STATUS_OVERFLOW:
                assert status & 15 == STATUS_OVERFLOW, (route, status)
            else:
                assert status == expected, (route, status, expected)
