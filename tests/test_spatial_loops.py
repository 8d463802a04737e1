"""Closed loops on spatial models (issue 18 item 3): cut-joint equations, their Jacobian in the velocity
coordinates and gamma against finite differences along integrate_configuration, the multiplier layer against the
dense KKT system and the planar four-bar, assembly and static equilibrium with loops (the centrifugal governor with
its links as real loops against its closed form)."""

import numpy as np
import pytest
from test_spatial_core import random_tree

import recursive_mbd as rm
from recursive_mbd.dynamics import spatial as spatial_dynamics
from recursive_mbd.dynamics import spatial_loops
from recursive_mbd.errors import ModelError, StateError
from recursive_mbd.model import spatial_fields

JOINTS = ("revolute", "spherical", "universal", "free", "cylindrical", "prismatic", "planar")


def looped_tree(seed, n=7):
    """A random spatial tree (every joint type but fixed, random axes, offsets, full inertias) with one loop of each
    kind: spherical and revolute between two bodies, distance from a body to the ground."""
    rng = np.random.default_rng(seed)
    model = random_tree(rng, n, joints=JOINTS)
    model.add_loop("spherical", n - 1, rng.normal(size=3), n - 3, rng.normal(size=3), name="ball")
    model.add_loop("revolute", 2, rng.normal(size=3), n - 2, rng.normal(size=3), axis=rng.normal(size=3),
                   axis_b=rng.normal(size=3), name="hinge")
    model.add_loop("distance", 1, rng.normal(size=3), "ground", rng.normal(size=3), length=1.3, name="rod")
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    return model, q, rng.normal(size=model.nv)


def _phi(model, q):
    return spatial_loops.constraints(model, q)[0]


@pytest.mark.parametrize("seed", range(4))
def test_jacobian_is_the_derivative_of_phi_along_integrate_configuration(seed):
    model, q, v = looped_tree(seed)
    phi, phid, jac, _ = spatial_loops.constraints(model, q, v)
    assert jac.shape == (model.nconstraints, model.nv) == (9, model.nv)
    h = 1e-4
    for k in range(model.nv):
        step = np.zeros(model.nv)
        step[k] = 1.0

        def central(size, step=step):
            return (_phi(model, rm.integrate_configuration(model, q, step, size))
                    - _phi(model, rm.integrate_configuration(model, q, step, -size))) / (2 * size)

        column = (4 * central(h / 2) - central(h)) / 3  # Richardson: truncation O(h^4)
        np.testing.assert_allclose(jac[:, k], column, rtol=0, atol=1e-8 * max(1.0, np.abs(jac).max()))
    np.testing.assert_allclose(phid, jac @ v, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("seed", range(4))
def test_gamma_is_minus_the_second_derivative_of_phi_at_constant_v(seed):
    # q(t) = q (+) v t keeps v constant (vdot = 0) for every joint type, so phi''(0) = J' v = -gamma
    model, q, v = looped_tree(seed)
    gamma = spatial_loops.constraints(model, q, v)[3]
    phi0 = _phi(model, q)

    def second(size):
        return (_phi(model, rm.integrate_configuration(model, q, v, size)) - 2 * phi0
                + _phi(model, rm.integrate_configuration(model, q, v, -size))) / size**2

    h = 2e-3
    curvature = (4 * second(h / 2) - second(h)) / 3
    np.testing.assert_allclose(-gamma, curvature, rtol=0, atol=1e-7 * max(1.0, np.abs(gamma).max()))


@pytest.mark.parametrize("seed", (3, 7))
def test_multiplier_layer_equals_the_dense_kkt_system(seed):
    model, q, v = looped_tree(seed)
    tau = np.random.default_rng(seed + 100).normal(size=model.nv)
    solution = spatial_loops.loop_dynamics(model, q, v, tau)
    assert solution.rank == model.nconstraints
    # the dense KKT system from the public tree functions and the loop layer's J and gamma
    _, _, jac, gamma = spatial_loops.constraints(model, q, v)
    mass = rm.mass_matrix(model, q)
    # the filtered solve is exact to (FILTER_RCOND / s)^2 relative on a direction with eigenvalue s of J M^-1 J^T
    # (as a fraction of the largest): these seeds' loops are well conditioned, s >= 1e-3, hence 1e-10
    gram = np.linalg.eigvalsh(jac @ np.linalg.solve(mass, jac.T))
    assert gram[0] > 1e-3 * gram[-1]
    kkt = np.block([[mass, jac.T], [jac, np.zeros((9, 9))]])
    reference = np.linalg.solve(kkt, np.concatenate((tau - rm.bias_forces(model, q, v), gamma)))
    scale = np.abs(reference[:model.nv]).max()
    np.testing.assert_allclose(solution.qdd, reference[:model.nv], rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(solution.multipliers, reference[model.nv:], rtol=0,
                               atol=1e-10 * np.abs(reference[model.nv:]).max())
    np.testing.assert_allclose(rm.forward_dynamics(model, q, v, tau), solution.qdd, rtol=0, atol=0)
    dense = rm.forward_dynamics(model, q, v, tau, method="mass_matrix")
    np.testing.assert_allclose(dense, solution.qdd, rtol=0, atol=1e-10 * scale)
    # Baumgarte's terms: J vdot = gamma - 2 alpha phi' - beta^2 phi on both routes
    phi, phid = spatial_loops.constraints(model, q, v)[:2]
    stabilised = spatial_loops.loop_dynamics(model, q, v, tau, alpha=2.0, beta=3.0)
    np.testing.assert_allclose(stabilised.qdd, spatial_loops.loop_dynamics(
        model, q, v, tau, alpha=2.0, beta=3.0, method="mass_matrix").qdd, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(jac @ stabilised.qdd, gamma - 4.0 * phid - 9.0 * phi, rtol=0,
                               atol=1e-10 * scale * np.abs(jac).max())
    # the accelerations meet the constraint, and the loop forces are the multipliers' generalised force
    np.testing.assert_allclose(jac @ solution.qdd, gamma, rtol=0, atol=1e-10 * scale * np.abs(jac).max())
    np.testing.assert_allclose(mass @ solution.qdd + rm.bias_forces(model, q, v), tau - jac.T @ solution.multipliers,
                               rtol=0, atol=1e-10 * scale * np.abs(mass).max())


def test_rm_loop_dynamics_takes_a_spatial_model():
    # the public name the guides give for the multipliers (docs/guide/spatial.md) is the spatial layer's on a Model3D
    model, q, v = looped_tree(3)
    tau = np.random.default_rng(103).normal(size=model.nv)
    for method in ("recursive", "mass_matrix"):
        expected = spatial_loops.loop_dynamics(model, q, v, tau, alpha=2.0, beta=3.0, method=method)
        solution = rm.loop_dynamics(model, q, v, tau, alpha=2.0, beta=3.0, method=method)
        assert isinstance(solution, rm.LoopSolution) and solution.rank == expected.rank == model.nconstraints
        for got, want in ((solution.qdd, expected.qdd), (solution.multipliers, expected.multipliers),
                          (solution.forces, expected.forces)):
            np.testing.assert_array_equal(got, want)
        assert solution.qdd.shape == (model.nv,) and solution.forces.shape == (3, 2, 6)


def _loop_force_work(model, q, solution):
    """The generalised force of the loop forces (forces at the loop points, moments), by the point Jacobians of the
    tree (rm.point_kinematics and forward_kinematics at unit velocities): an independent map from forces to tau."""
    total = np.zeros(model.nv)
    for k in range(model.nloops):
        kind, a, b = model.loop_int[k, :3]
        for side, body, point in ((0, a, model.loop_real[k, 0:3]), (1, b, model.loop_real[k, 3:6])):
            if body < 0:
                continue
            force, moment = solution.forces[k, side, :3], solution.forces[k, side, 3:]
            for j in range(model.nv):
                unit = np.zeros(model.nv)
                unit[j] = 1.0
                velocity = rm.point_kinematics(model, q, unit, int(body), point)[1]
                omega = rm.forward_kinematics(model, q, unit)[2][body]
                total[j] += force @ velocity + moment @ omega
    return total


def test_loop_forces_are_the_multipliers_force_at_the_loop_points():
    model, q, v = looped_tree(11, n=7)
    solution = spatial_loops.loop_dynamics(model, q, v)
    jac = spatial_loops.constraints(model, q, v)[2]
    np.testing.assert_allclose(_loop_force_work(model, q, solution), -jac.T @ solution.multipliers, rtol=0,
                               atol=1e-10 * np.abs(jac.T @ solution.multipliers).max())
    # a spherical loop's force on body a is minus its first three multipliers
    np.testing.assert_allclose(solution.forces[0, 0, :3], -solution.multipliers[:3], rtol=0, atol=0)
    np.testing.assert_allclose(solution.forces[0, 1, :3], solution.multipliers[:3], rtol=0, atol=0)


# ---- the planar four-bar built as a spatial model ----------------------------------------------------------------

CRANK, COUPLER, ROCKER, BASE = 0.3, 0.8, 0.6, 0.7


def _four_bar_planar():
    model = rm.Model(gravity=(0.0, -9.81))
    for name, parent, length, point in (("crank", "ground", CRANK, (0.0, 0.0)), ("coupler", "crank", COUPLER, None),
                                        ("rocker", "ground", ROCKER, (BASE, 0.0))):
        parent_point = point if point is not None else (CRANK, 0.0)
        model.add_body(parent, "revolute", parent_point=parent_point, child_point=(0.0, 0.0), mass=1.0 + length,
                       inertia=0.1 * length, com=(length / 2, 0.02), name=name)
    model.add_loop("revolute", "coupler", (COUPLER, 0.0), "rocker", (ROCKER, 0.0))
    return model


def _four_bar_spatial(loop="revolute"):
    model = rm.Model3D(gravity=(0.0, -9.81, 0.0))
    for name, parent, length, point in (("crank", "ground", CRANK, (0.0, 0.0, 0.0)),
                                        ("coupler", "crank", COUPLER, (CRANK, 0.0, 0.0)),
                                        ("rocker", "ground", ROCKER, (BASE, 0.0, 0.0))):
        model.add_body(parent, "revolute", parent_point=point, mass=1.0 + length,
                       inertia=(0.05, 0.07, 0.1 * length, 0.0, 0.0, 0.0), com=(length / 2, 0.02, 0.0), name=name)
    if loop == "revolute":
        model.add_loop("revolute", "coupler", (COUPLER, 0.0, 0.0), "rocker", (ROCKER, 0.0, 0.0), axis=(0, 0, 1))
    else:  # a spatial RSSR-like closure of the same planar motion: a ball joint and the in-plane link
        model.add_loop("distance", "coupler", (COUPLER, 0.0, 0.0), "rocker", (0.0, 0.0, 0.0), length=ROCKER)
    return model


def test_planar_four_bar_as_a_spatial_model_gives_the_planar_accelerations():
    planar, spatial = _four_bar_planar(), _four_bar_spatial()
    q = rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])
    _, _, jac, _ = rm.loops.constraints(planar, q)
    qd = np.linalg.svd(jac)[2][-1] * 2.5  # the mechanism's one motion
    tau = np.array([1.5, -0.4, 0.8])
    reference = rm.loops.loop_dynamics(planar, q, qd, tau)
    # the spatial revolute loop adds three equations that a planar motion satisfies identically: redundant
    with pytest.warns(rm.RedundantConstraintWarning):
        solution = spatial_loops.loop_dynamics(spatial, q, qd, tau)
    assert solution.rank == 2
    np.testing.assert_allclose(solution.qdd, reference.qdd, rtol=0, atol=1e-10 * np.abs(reference.qdd).max())
    # the in-plane reaction: the same force on the coupler's tip
    np.testing.assert_allclose(solution.forces[0, 0, :2], reference.forces[0, 0, :2], rtol=0,
                               atol=1e-10 * np.abs(reference.forces).max())


def test_joint_reactions_of_the_four_bar_built_spatially_equal_the_planar_ones():
    planar, spatial = _four_bar_planar(), _four_bar_spatial()
    q = rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])
    _, _, jac, _ = rm.loops.constraints(planar, q)
    qd = np.linalg.svd(jac)[2][-1] * 2.5  # the mechanism's one motion
    tau = np.array([1.5, -0.4, 0.8])
    qdd = rm.loops.loop_dynamics(planar, q, qd, tau).qdd
    reference = rm.joint_reactions(planar, q, qd, qdd, tau)
    reactions = rm.joint_reactions(spatial, q, qd, qdd, tau)
    assert reactions.joint.shape == (3, 6) and reactions.loops.shape == (1, 2, 6)
    scale = np.abs(reference.joint).max()
    # in the plane: (Fx, Fy) and the moment about z; the loop's out-of-plane rows carry nothing (minimum norm)
    np.testing.assert_allclose(reactions.joint[:, [0, 1, 5]], reference.joint, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(reactions.joint[:, 2:5], 0.0, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(reactions.loops[..., [0, 1, 5]], reference.loops, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(reactions.loops[..., 2:5], 0.0, rtol=0, atol=1e-10 * scale)


def test_linearization_of_the_four_bar_built_spatially_equals_the_planar_one():
    planar, spatial = _four_bar_planar(), _four_bar_spatial()
    q_eq = rm.static_equilibrium(planar, rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])).q
    reference = rm.linearize(planar, q_eq)
    lin = rm.linearize(spatial, q_eq)
    assert lin.basis.shape == reference.basis.shape == (3, 1)  # one motion: the bases agree up to their sign
    for ours, theirs in ((lin.M, reference.M), (lin.K, reference.K), (lin.C, reference.C)):
        np.testing.assert_allclose(lin.basis @ ours @ lin.basis.T, reference.basis @ theirs @ reference.basis.T,
                                   rtol=0, atol=1e-8 * np.abs(reference.K).max())
    np.testing.assert_allclose(rm.modes(spatial, q_eq)[0], rm.modes(planar, q_eq)[0], rtol=1e-8)
    with pytest.raises(ModelError, match="linearize: q_eq does not close the loops: loop 'loop0'"):
        rm.linearize(spatial, q_eq + 0.1)
    with pytest.raises(ModelError, match="linearize: q_eq is not an equilibrium"):
        rm.linearize(spatial, rm.assemble(spatial, q_eq + 0.1, fixed=["crank"]))


def test_assemble_closes_spatial_loops_keeping_the_fixed_joints():
    spatial = _four_bar_spatial()
    q = rm.assemble(spatial, np.array([0.9, -0.5, 1.4]), fixed=["crank"])
    assert q[0] == 0.9
    np.testing.assert_allclose(spatial_loops.constraints(spatial, q)[0], 0.0, atol=1e-12)
    planar = rm.assemble(_four_bar_planar(), np.array([0.9, -0.5, 1.4]), fixed=[0])
    np.testing.assert_allclose(q, planar, rtol=0, atol=1e-10)
    model, q0, _ = looped_tree(3)
    closed = rm.assemble(model, q0)
    np.testing.assert_allclose(spatial_loops.constraints(model, closed)[0], 0.0, atol=1e-10)
    with pytest.raises(ModelError, match="loop 'loop0'"):
        far = rm.Model3D()
        far.add_body("ground", "revolute", mass=1.0, inertia=0.1)
        far.add_loop("distance", 0, (0.1, 0, 0), "ground", (5.0, 0, 0), length=1.0)
        rm.assemble(far, far.neutral())


# ---- the centrifugal governor with its links as real loops -------------------------------------------------------

def test_governor_sleeve_height_with_real_loops_equals_the_closed_form():
    governor = rm.models.centrifugal_governor(arm=0.2, link=0.25)
    model = rm.models.centrifugal_governor(arm=0.2, link=0.25, closed=True).model
    assert model.nloops == 2 and model.nv == 4
    phi_expected = 0.7
    omega = governor.speed(phi_expected)  # the closed form: the spindle rate at which 0.7 rad is steady
    guess = governor.q(0.5)
    guess[3] += 0.01
    state = rm.static_equilibrium(model, guess, fixed=["spindle"], velocity=np.array([omega, 0.0, 0.0, 0.0]))
    np.testing.assert_allclose(state.q[1:3], phi_expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(state.q[3], governor.sleeve_height(phi_expected), rtol=0, atol=1e-10)
    np.testing.assert_allclose(spatial_loops.constraints(model, state.q)[0], 0.0, atol=1e-12)
    assert state.stable
    # the links are two-force members: each pulls along itself, so their multipliers are the link tensions
    assert state.multipliers.shape == (2,)
    np.testing.assert_allclose(state.multipliers[0], state.multipliers[1], rtol=1e-9)


# ---- bad input ---------------------------------------------------------------------------------------------------

def test_add_loop_refuses_bad_input_naming_the_loop():
    model = rm.Model3D()
    model.add_body("ground", "spherical", mass=1.0, inertia=0.1, name="a")
    for kwargs, match in ((dict(kind="hinge"), "unknown loop kind"),
                          (dict(kind="revolute"), "needs its axis"),
                          (dict(kind="revolute", axis=(0, 0, 0)), "non-zero"),
                          (dict(kind="distance"), "needs its length"),
                          (dict(kind="distance", length=-1.0), "length must be > 0"),
                          (dict(kind="spherical", length=1.0), "distance loops only"),
                          (dict(kind="spherical", axis=(0, 0, 1)), "revolute loops only"),
                          (dict(kind="spherical", body_b="a"), "the same body"),
                          (dict(kind="spherical", body_b="nobody"), "body_b: unknown body 'nobody'"),
                          (dict(kind="spherical", body_b=3), "body_b: unknown body index 3")):
        args = dict(kind="spherical", body_a="a", point_a=(1.0, 0, 0), body_b="ground", name="L")
        args.update(kwargs)
        with pytest.raises(ModelError, match=f"loop 'L'.*{match}|{match}"):
            model.add_loop(**args)
    with pytest.raises(ModelError, match="loop 'L'"):
        model.add_loop("spherical", "a", (np.nan, 0, 0), name="L")
    model.add_loop("distance", "a", (1.0, 0, 0), "ground", (0, 0, 0), length=1.0, name="L")
    with pytest.raises(ModelError, match="duplicate"):
        model.add_loop("distance", "a", (1.0, 0, 0), length=1.0, name="L")
    # the tree's own forward dynamics refuses a looped model rather than ignoring the loops
    q = model.neutral()
    with pytest.raises(ModelError, match="closed loops"):
        spatial_dynamics.forward_dynamics(model, q, np.zeros(3))
    with pytest.raises(StateError, match="v must have shape"):
        rm.forward_dynamics(model, q, np.zeros(4))
    with pytest.raises(ModelError, match="frozen|compiled"):
        model.add_loop("distance", "a", (1.0, 0, 0), length=1.0, name="M")
    degenerate = rm.Model3D()
    degenerate.add_body("ground", "spherical", mass=1.0, inertia=0.1)
    degenerate.add_loop("distance", 0, (0, 0, 0), "ground", (0, 0, 0), length=1.0, name="rod")
    with pytest.raises(StateError, match="loop 'rod'.*coincide"):
        rm.forward_dynamics(degenerate, degenerate.neutral(), np.zeros(3))



def test_kinematic_analysis_of_the_spatial_four_bar_equals_the_planar_one():
    crank = (lambda t: 0.9 + 2.0 * t + 0.3 * t * t, lambda t: 2.0 + 0.6 * t, lambda t: 0.6)
    times = np.linspace(0.0, 1.0, 6)
    guess = np.array([0.9, -0.5, 1.4])
    planar = rm.kinematic_analysis(_four_bar_planar(), {"crank": crank}, times, guess)
    spatial = rm.kinematic_analysis(_four_bar_spatial(), {"crank": crank}, times, guess)
    for ours, theirs in ((spatial.q, planar.q), (spatial.v, planar.qd), (spatial.vdot, planar.qdd),
                         (spatial.driving_forces, planar.driving_forces)):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10 * max(1.0, np.abs(theirs).max()))
    # the coupler's tip: position, velocity and acceleration in the plane, at every time
    for ours, theirs in zip(spatial.point("coupler", (COUPLER, 0.0, 0.0)), planar.point("coupler", (COUPLER, 0.0)),
                            strict=True):
        assert ours.shape == (6, 3)
        np.testing.assert_allclose(ours[:, :2], theirs, rtol=0, atol=1e-10 * max(1.0, np.abs(theirs).max()))
        np.testing.assert_allclose(ours[:, 2], 0.0, rtol=0, atol=1e-12)
    # the loops hold at every time, and a driver given as f alone (differentiated numerically) agrees closely
    for q in spatial.q:
        np.testing.assert_allclose(spatial_loops.constraints(spatial.model, q)[0], 0.0, atol=1e-12)
    numeric = rm.kinematic_analysis(_four_bar_spatial(), {"crank": crank[0]}, times, guess)
    np.testing.assert_allclose(numeric.vdot, spatial.vdot, rtol=0, atol=1e-8 * np.abs(spatial.vdot).max())
    with pytest.raises(ModelError, match="at t = 0: the loops cannot be closed.*loop 'loop0'"):
        rm.kinematic_analysis(_four_bar_spatial(), {"rocker": crank, "crank": crank}, times[:1], guess)
    governor = rm.models.centrifugal_governor(closed=True)  # the spindle alone leaves the arms' swing free
    with pytest.raises(ModelError, match="1 degree.*undetermined"):
        rm.kinematic_analysis(governor.model, {"spindle": crank}, times[:1], governor.q(0.5))
    with pytest.raises(ModelError, match="spherical joint"):
        free_ball = rm.Model3D()
        free_ball.add_body("ground", "spherical", mass=1.0, inertia=0.1, name="ball")
        rm.kinematic_analysis(free_ball, {"ball": crank}, times[:1])


def test_governor_with_real_loops_moves_as_its_reduced_equation():
    # the spindle held at omega (one more equation, vdot_spindle = 0) and the links as loops: the arms' acceleration
    # equals the reduced (tangent-projected) equation of the tree, Governor.arm_acceleration, an independent route
    governor = rm.models.centrifugal_governor(arm=0.2, link=0.25)
    model = rm.models.centrifugal_governor(arm=0.2, link=0.25, closed=True).model
    phi, rate, omega = 0.6, 1.7, 9.0
    q = governor.q(phi)
    v = np.array([omega, 0.0, 0.0, 0.0]) + governor.dq_dphi(phi) * rate
    _, phid, jac, gamma = spatial_loops.constraints(model, q, v)
    np.testing.assert_allclose(phid, 0.0, atol=1e-13)
    held = np.vstack((jac, np.eye(4)[:1]))
    kkt = np.block([[rm.mass_matrix(model, q), held.T], [held, np.zeros((3, 3))]])
    vdot = np.linalg.solve(kkt, np.concatenate((-rm.bias_forces(model, q, v), gamma, [0.0])))[:4]
    expected = governor.arm_acceleration(phi, rate, omega)
    np.testing.assert_allclose(vdot[1:3], expected, rtol=1e-10)


def test_projection_is_mass_orthogonal_and_closes_the_loops():
    model, q, v = looped_tree(7)
    closed = rm.assemble(model, q)
    rng = np.random.default_rng(5)
    q_off = rm.integrate_configuration(model, closed, 1e-3 * rng.normal(size=model.nv))
    q_new, v_new, worst = spatial_loops.project(model, q_off, v)
    _, phid, jac, _ = spatial_loops.constraints(model, q_new, v_new)
    assert worst <= 1e-12
    np.testing.assert_allclose(phid, 0.0, atol=1e-12 * np.abs(jac).max() * np.abs(v).max())
    # M-orthogonal: the correction v - v_new is M^-1 J^T c, so it is M-orthogonal to every admissible motion
    null = np.linalg.svd(jac)[2][jac.shape[0]:].T
    mass = rm.mass_matrix(model, q_new)
    np.testing.assert_allclose(null.T @ mass @ (v - v_new), 0.0, atol=1e-10 * np.abs(mass @ v).max())
    # and the position step stayed small (the nearest closed configuration, not another branch)
    assert np.abs(rm.difference(model, q_off, q_new)).max() < 1e-2
    with pytest.raises(ModelError, match="loop 'loop0' stays open"):
        far = rm.Model3D()
        far.add_body("ground", "revolute", mass=1.0, inertia=0.1)
        far.add_loop("distance", 0, (0.1, 0, 0), "ground", (5.0, 0, 0), length=1.0)
        spatial_loops.project(far, far.neutral(), np.zeros(1))


def test_kinematic_analysis_of_a_spatial_rssr_linkage_is_consistent_in_time():
    # RSSR: a crank about the ground z axis, a rocker about a skew axis elsewhere, the coupler a distance loop
    # (ball joints at both ends); the rocker's rate and acceleration from the loop equations must be the time
    # derivatives of its angle (central differences of the analysis itself, an independent check of J and gamma)
    model = rm.Model3D()
    model.add_body("ground", "revolute", axis=(0, 0, 1), mass=1.0, inertia=(0.01, 0.01, 0.02, 0, 0, 0),
                   com=(0.1, 0, 0), name="crank")
    model.add_body("ground", "revolute", parent_point=(0.3, 0.5, 0.4), axis=(1.0, 0.2, 0.1), mass=1.0,
                   inertia=(0.02, 0.01, 0.02, 0, 0, 0), com=(0, 0.2, 0), name="rocker")
    model.add_loop("distance", "crank", (0.2, 0.0, 0.0), "rocker", (0.0, 0.35, 0.0), length=0.6, name="coupler")
    crank = (lambda t: 0.3 + 1.5 * t + np.sin(t), lambda t: 1.5 + np.cos(t), lambda t: -np.sin(t))
    h = 1e-4
    times = np.array([0.4 - h, 0.4, 0.4 + h])
    guess = rm.assemble(model, np.array([0.3, 0.4]), fixed=["crank"])
    result = rm.kinematic_analysis(model, {"crank": crank}, times, guess)
    np.testing.assert_allclose(spatial_loops.constraints(model, result.q[1])[0], 0.0, atol=1e-12)
    rate = (result.q[2] - result.q[0]) / (2 * h)
    curve = (result.q[2] - 2 * result.q[1] + result.q[0]) / h**2
    np.testing.assert_allclose(result.v[1], rate, rtol=0, atol=1e-7 * np.abs(rate).max())
    np.testing.assert_allclose(result.vdot[1], curve, rtol=0, atol=1e-5 * np.abs(curve).max())
    np.testing.assert_allclose(result.v[1, 0], crank[1](0.4), rtol=1e-15)
    # the driving torque balances the loop and inertia: tau_drive e_crank = M vdot + h + J^T lambda
    needed = rm.inverse_dynamics(model, result.q[1], result.v[1], result.vdot[1])
    jac = spatial_loops.constraints(model, result.q[1])[2]
    np.testing.assert_allclose(needed + jac.T @ result.multipliers[1], [result.driving_forces[1, 0], 0.0], rtol=0,
                               atol=1e-10 * np.abs(needed).max())


def _rotated_four_bar(rotation):
    """``_four_bar_spatial`` with its plane turned by ``rotation`` (3, 3) and gravity with it: the same mechanism,
    the same joint coordinates, its axes no longer along z."""
    model = rm.Model3D(gravity=rotation @ np.array([0.0, -9.81, 0.0]))
    for name, parent, length, point in (("crank", "ground", CRANK, (0.0, 0.0, 0.0)),
                                        ("coupler", "crank", COUPLER, (CRANK, 0.0, 0.0)),
                                        ("rocker", "ground", ROCKER, (BASE, 0.0, 0.0))):
        grounded = parent == "ground"
        model.add_body(parent, "revolute", parent_point=rotation @ point if grounded else point,
                       rotation=rotation if grounded else None, mass=1.0 + length,
                       inertia=(0.05, 0.07, 0.1 * length, 0.0, 0.0, 0.0), com=(length / 2, 0.02, 0.0), name=name)
    model.add_loop("revolute", "coupler", (COUPLER, 0.0, 0.0), "rocker", (ROCKER, 0.0, 0.0), axis=(0, 0, 1))
    return model


def test_modes_of_the_spatial_four_bar_equal_the_planar_route():
    """rm.modes on a spatial model with a loop (gravity and a joint spring): the planar four-bar's frequency and
    shape (the planar route's exact stiffness), built with its axes along z and with its plane turned in space."""
    planar = _four_bar_planar()
    planar.add_joint_spring_damper("crank", 3.0, rest=0.4)
    equilibrium = rm.static_equilibrium(planar, np.array([-1.2, 0.9, -1.9]))
    omega, shape = rm.modes(planar, equilibrium.q)
    turn = spatial_fields.axis_rotation(np.array((1.0, 2.0, -0.5)) / np.sqrt(5.25), 0.7)
    for spatial in (_four_bar_spatial(), _rotated_four_bar(turn)):
        spatial.add_joint_spring_damper("crank", 3.0, rest=0.4)
        omega3, shape3 = rm.modes(spatial, equilibrium.q)
        assert shape3.shape == (3, 1)
        np.testing.assert_allclose(omega3, omega, rtol=1e-9)  # central differences: ~1e-10
        np.testing.assert_allclose(shape3 * np.sign(shape3[0] * shape[0]), shape, rtol=0, atol=1e-8)
        _, _, jac, _ = spatial_loops.constraints(spatial, equilibrium.q)
        np.testing.assert_allclose(jac @ shape3, 0.0, atol=1e-12)
    # a configuration the loop closes but that is no equilibrium, and one the loop does not close
    q_off = rm.assemble(planar, equilibrium.q + [0.3, 0.0, 0.0], fixed=[0])
    with pytest.raises(ModelError, match="not an equilibrium.*body 'c"):
        rm.modes(spatial, q_off)
    with pytest.raises(ModelError, match="does not close the loops.*loop 'loop0'"):
        rm.modes(spatial, equilibrium.q + [0.3, 0.0, 0.0])
