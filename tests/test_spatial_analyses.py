"""The planar analyses on spatial models: point motion, joint reactions and linearisation, each against another
route (finite differences along a path, Newton's and Euler's laws body by body, a closed form, the planar result of a
planar model built in 3D)."""

import numpy as np
import pytest
from _helpers import planar_chain_and_its_spatial_twin
from spatial_reference import random_spatial_tree

import recursive_mbd as rm
from recursive_mbd.analysis import point_motion
from recursive_mbd.errors import StateError

GRAVITY = (0.3, -0.5, -9.81)


def random_tree(seed, nbodies=6, more=None):
    """A random spatial tree (every joint type; ``more(model)`` adds elements or loops) and a random state (q, v,
    vdot) of it: (model, q, v, vdot, the generator)."""
    rng = np.random.default_rng(seed)
    model = rm.Model3D(gravity=GRAVITY)
    for body in random_spatial_tree(rng, nbodies):
        model.add_body(**body)
    if more is not None:
        more(model)
    model.compile()
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    return model, q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng


def five_point(values, h):
    """First and second derivatives at the middle of five samples h apart (errors ~h^4)."""
    first = (values[0] - 8 * values[1] + 8 * values[3] - values[4]) / (12 * h)
    second = (-values[0] + 16 * values[1] - 30 * values[2] + 16 * values[3] - values[4]) / (12 * h * h)
    return first, second


@pytest.mark.parametrize("seed", [0, 2, 5])
def test_point_motion_of_a_spatial_tree_equals_finite_differences(seed):
    """Along the path q(s) = q (+) (v s + vdot s^2 / 2), whose velocity at s = 0 is v and acceleration vdot, the
    point's velocity and acceleration are the derivatives of its position (rm.point_kinematics, another route)."""
    model, q, v, vdot, rng = random_tree(seed)
    h = 1e-3
    path = [rm.integrate_configuration(model, q, v * s + 0.5 * vdot * s * s) for s in h * np.arange(-2, 3)]
    for body in range(model.nbodies):
        point = rng.normal(size=3)
        samples = [rm.point_kinematics(model, config, np.zeros(model.nv), body, point)[0] for config in path]
        velocity, acceleration = five_point(samples, h)
        position, ours_v, ours_a = point_motion(model, q, v, vdot, body, point)
        assert position.shape == ours_v.shape == ours_a.shape == (1, 3)
        expected = rm.point_kinematics(model, q, v, body, point)
        np.testing.assert_allclose(position[0], expected[0], rtol=0, atol=1e-14)
        np.testing.assert_allclose(ours_v[0], expected[1], rtol=0, atol=1e-13 * max(1.0, np.abs(expected[1]).max()))
        np.testing.assert_allclose(ours_v[0], velocity, rtol=0, atol=1e-9 * max(1.0, np.abs(velocity).max()))
        np.testing.assert_allclose(ours_a[0], acceleration, rtol=0, atol=1e-7 * max(1.0, np.abs(acceleration).max()))


def test_point_motion_over_many_states_and_its_errors():
    model, q, v, vdot, _ = random_tree(2)
    states = np.array([q, rm.integrate_configuration(model, q, 0.1 * v)]), np.array([v, -v]), np.array([vdot, v])
    position, velocity, acceleration = point_motion(model, *states, "b3", (0.1, 0.2, 0.3))
    assert position.shape == velocity.shape == acceleration.shape == (2, 3)
    for k in range(2):
        one = point_motion(model, states[0][k], states[1][k], states[2][k], 3, (0.1, 0.2, 0.3))
        for many, single in zip((position, velocity, acceleration), one, strict=True):
            np.testing.assert_array_equal(many[k], single[0])
    origin = point_motion(model, q, v, vdot, "b3")  # default: the body frame's origin
    np.testing.assert_array_equal(origin[0][0], rm.forward_kinematics(model, q)[1][3])
    with pytest.raises(StateError, match=rf"vdot must have shape \(nt, {model.nv}\)"):
        point_motion(model, states[0], states[1], vdot[:-1], 0)
    with pytest.raises(StateError, match=r"point must have shape \(3,\)"):
        point_motion(model, q, v, vdot, 0, (0.1, 0.2))
    bad = q.copy()
    bad[model.q_slice(next(i for i, j in enumerate(model.joint_types) if j in ("spherical", "free")))] *= 1.1
    with pytest.raises(StateError, match="not of unit norm"):
        point_motion(model, bad, v, vdot, 0)


def test_point_motion_and_reactions_of_a_planar_chain_built_in_3d_equal_the_planar_ones():
    planar, spatial, q, qd = planar_chain_and_its_spatial_twin()
    qdd = rm.forward_dynamics(planar, q, qd)
    for body in range(3):
        ours = point_motion(spatial, q, qd, qdd, body, (0.1, -0.2, 0.0))
        theirs = rm.analysis.point_motion(planar, q, qd, qdd, body, (0.1, -0.2))
        for mine, reference in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(mine[:, :2], reference, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(mine[:, 2], 0.0)
    tau = np.array([0.5, -1.0, 2.0])
    reactions = rm.joint_reactions(spatial, q, qd, qdd, tau)
    reference = rm.joint_reactions(planar, q, qd, qdd, tau)
    assert reactions.joint.shape == (3, 6) and reactions.loops.shape == (0, 2, 6)
    scale = np.abs(reference.joint).max()
    np.testing.assert_allclose(reactions.joint[:, [0, 1, 5]], reference.joint, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(reactions.joint[:, 2:5], 0.0, rtol=0, atol=1e-12 * scale)
    np.testing.assert_array_equal(reactions.tau, tau)


def test_joint_reaction_of_one_body_on_a_spherical_joint_is_newtons_and_eulers_law():
    """One rigid body on a spherical joint away from its centre of mass, any state and acceleration: the joint's
    force is m (a_c - g) and its moment about the joint point I alpha + omega x I omega - (P - c) x F (closed
    form), which is the joint torque that inverse dynamics gives (in ground axes)."""
    model = rm.Model3D(gravity=GRAVITY)
    model.add_body("ground", "spherical", parent_point=(0.1, 0.2, 0.3), child_point=(0.05, -0.1, 0.4), mass=1.7,
                   inertia=(0.05, 0.07, 0.09, 0.01, -0.005, 0.002), com=(0.2, 0.1, -0.3), name="ball")
    rng = np.random.default_rng(4)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=3))
    v, vdot = rng.normal(size=3), rng.normal(size=3)
    rot, origin = (x[0] for x in rm.forward_kinematics(model, q))
    joint, centre = origin + rot @ model.joint_child_point[0], origin + rot @ model.body_com[0]
    omega, alpha = rot @ v, rot @ vdot  # a spherical joint's rates are the body's, in body axes
    arm = centre - joint
    force = 1.7 * (np.cross(alpha, arm) + np.cross(omega, np.cross(omega, arm)) - np.array(GRAVITY))
    inertia = rot @ model.body_inertia[0] @ rot.T
    moment = inertia @ alpha + np.cross(omega, inertia @ omega) + np.cross(arm, force)
    reactions = rm.joint_reactions(model, q, v, vdot)
    np.testing.assert_allclose(reactions.joint[0], np.concatenate((force, moment)), rtol=0, atol=1e-13 * 20)
    np.testing.assert_allclose(reactions.joint[0, 3:], rot @ rm.inverse_dynamics(model, q, v, vdot), atol=1e-13 * 20)


def body_accelerations(model, q, v, vdot, body):
    """(acceleration of the centre of mass, angular acceleration) of a body, ground axes, from point_motion at its
    centre and at two points beside it: a_P - a_c = alpha x r + omega x (omega x r)."""
    rot, _, omega, _ = (x[body] for x in rm.forward_kinematics(model, q, v))
    centre = model.body_com[body]
    points = [centre, centre + (1.0, 0.0, 0.0), centre + (0.0, 1.0, 0.0)]
    accelerations = [point_motion(model, q, v, vdot, body, point)[2][0] for point in points]
    rows, rhs = [], []
    for point, acceleration in zip(points[1:], accelerations[1:], strict=True):
        r = rot @ (point - centre)
        rows.append(np.array([[0.0, r[2], -r[1]], [-r[2], 0.0, r[0]], [r[1], -r[0], 0.0]]))  # alpha x r
        rhs.append(acceleration - accelerations[0] - np.cross(omega, np.cross(omega, r)))
    alpha = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)[0]
    return accelerations[0], alpha


@pytest.mark.parametrize("seed", [1, 3])
def test_joint_reactions_of_a_random_tree_with_a_loop_and_a_force_balance_every_body(seed):
    """Every body of a random tree (every joint type) with a spherical loop to the ground and a force on one body,
    moving as tau makes it: the joint reactions on it, minus those it passes to its children, plus gravity, the
    force and the loop force, are its rate of change of momentum and of angular momentum about its centre (Newton
    and Euler, the accelerations from point_motion)."""
    loaded, at, applied = 2, np.array([0.1, -0.2, 0.3]), np.array([1.0, -2.0, 0.5])

    def more(model):
        model.add_force(loaded, at, applied)
        model.add_loop("spherical", 4, (0.2, 0.1, -0.1), "ground", (0.5, -0.3, 0.2))

    model, q, v, _, rng = random_tree(seed, 5, more)
    tau = 3.0 * rng.normal(size=model.nv)
    vdot = rm.forward_dynamics(model, q, v, tau)
    reactions = rm.joint_reactions(model, q, v, vdot, tau)
    assert reactions.joint.shape == (5, 6) and reactions.loops.shape == (1, 2, 6)
    rot, origin, omega, _ = rm.forward_kinematics(model, q, v)
    joint_points = origin + np.einsum("nij,nj->ni", rot, model.joint_child_point)
    scale = np.abs(reactions.joint).max()
    for body in range(model.nbodies):
        centre = origin[body] + rot[body] @ model.body_com[body]
        wrenches = [(joint_points[body], reactions.joint[body])]  # (point, (force, moment about it))
        wrenches += [(joint_points[c], -reactions.joint[c]) for c in range(model.nbodies)
                     if model.body_parent[c] == body]
        wrenches.append((centre, np.concatenate((model.body_mass[body] * np.array(GRAVITY), np.zeros(3)))))
        if body == loaded:
            wrenches.append((origin[body] + rot[body] @ at, np.concatenate((applied, np.zeros(3)))))
        if body == 4:
            wrenches.append((origin[4] + rot[4] @ np.array([0.2, 0.1, -0.1]), reactions.loops[0, 0]))
        force = sum(w[:3] for _, w in wrenches)
        moment = sum(w[3:] + np.cross(point - centre, w[:3]) for point, w in wrenches)
        acceleration, alpha = body_accelerations(model, q, v, vdot, body)
        inertia = rot[body] @ model.body_inertia[body] @ rot[body].T
        np.testing.assert_allclose(force, model.body_mass[body] * acceleration, rtol=0, atol=1e-11 * scale)
        np.testing.assert_allclose(moment, inertia @ alpha + np.cross(omega[body], inertia @ omega[body]), rtol=0,
                                   atol=1e-11 * scale)
    # the loop's force on the body is minus its multipliers (spherical loop), and the joints carry tau
    np.testing.assert_array_equal(reactions.loops[0, 0, :3], -reactions.multipliers)
    for body in range(model.nbodies):
        if model.joint_types[body] == "revolute":
            axis = rot[body] @ model.body(body)["axis"] / np.linalg.norm(model.body(body)["axis"])
            assert reactions.joint[body, 3:] @ axis == pytest.approx(tau[model.v_slice(body)][0], abs=1e-11 * scale)


@pytest.mark.parametrize("turn", [0.0, 0.7])
def test_linearized_spherical_pendulum_swings_at_the_compound_pendulum_frequency(turn):
    """A rod hanging on a spherical joint (q_eq its quaternion, turned about the vertical by ``turn``): linearised in
    the tangent space (3 rates for 4 quaternion entries), it swings in both planes at omega^2 = m g d / I_pivot, the
    turn about its axis has no stiffness, and the joint damper is C."""
    mass, length, damping = 1.3, 0.8, 0.05
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "spherical", mass=mass, inertia=(mass * length**2 / 12, mass * length**2 / 12, 1e-3,
                                                               0.0, 0.0, 0.0), com=(0.0, 0.0, -length / 2))
    model.add_joint_spring_damper(0, stiffness=0.0, damping=damping)
    q_eq = rm.integrate_configuration(model, model.neutral(), (0.0, 0.0, turn))
    lin = rm.linearize(model, q_eq)
    assert lin.M.shape == lin.C.shape == lin.K.shape == (3, 3) and lin.q.shape == (4,)
    np.testing.assert_array_equal(lin.basis, np.eye(3))
    np.testing.assert_allclose(lin.q, q_eq, rtol=0, atol=1e-16)
    pivot = mass * length**2 / 12 + mass * (length / 2) ** 2
    np.testing.assert_allclose(lin.M, np.diag([pivot, pivot, 1e-3]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(lin.C, damping * np.eye(3), rtol=0, atol=1e-10 * damping)
    omega_squared = np.sort(np.linalg.eigvals(np.linalg.solve(lin.M, lin.K)).real)
    expected = mass * 9.81 * (length / 2) / pivot
    assert abs(omega_squared[0]) < 1e-8 * expected
    np.testing.assert_allclose(np.sqrt(omega_squared[1:]), np.sqrt(expected), rtol=1e-9)
    omega, _ = rm.modes(model, q_eq)  # the modes build on the same linearisation
    np.testing.assert_allclose(omega[1:], np.sqrt(expected), rtol=1e-9)


def test_modes_evaluate_the_force_elements_at_the_time_given():
    """A pendulum on a spherical joint pulled down at its centre of mass by a force that grows with time, F(t) =
    (0, 0, -c t): at time t it swings as under gravity g + c t / m, omega^2 = (m g + c t) d / I_pivot in both planes,
    as rm.linearize says at that time."""
    mass, length, growth, time = 1.3, 0.8, 2.0, 3.0
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "spherical", mass=mass, inertia=(mass * length**2 / 12, mass * length**2 / 12, 1e-3,
                                                               0.0, 0.0, 0.0), com=(0.0, 0.0, -length / 2))
    model.add_force(0, (0.0, 0.0, -length / 2), lambda t: np.array([0.0, 0.0, -growth * t]))
    pivot = mass * length**2 / 12 + mass * (length / 2) ** 2
    expected = np.sqrt((mass * 9.81 + growth * time) * (length / 2) / pivot)
    omega, _ = rm.modes(model, model.neutral(), t=time)
    np.testing.assert_allclose(omega[1:], expected, rtol=1e-9)
    lin = rm.linearize(model, model.neutral(), t=time)
    np.testing.assert_allclose(np.sqrt(np.linalg.eigvalsh(np.linalg.solve(lin.M, lin.K))[1:]), expected, rtol=1e-9)


def test_linearized_planar_chain_built_in_3d_equals_the_planar_linearisation():
    planar, spatial, _, _ = planar_chain_and_its_spatial_twin()
    q_eq = rm.static_equilibrium(planar, np.full(3, 0.1)).q
    reference = rm.linearize(planar, q_eq)
    lin = rm.linearize(spatial, q_eq)
    for ours, theirs in ((lin.M, reference.M), (lin.K, reference.K), (lin.C, reference.C), (lin.basis,
                                                                                            reference.basis)):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * np.abs(reference.K).max())
    with pytest.raises(StateError, match=r"q_eq must have shape \(3,\)"):
        rm.linearize(spatial, np.zeros(4))
    with pytest.raises(StateError, match="step"):
        rm.linearize(spatial, q_eq, step=0.0)
