"""The augmented absolute-coordinate formulation of spatial models (``rm.augmented`` on a Model3D): accelerations and
multipliers against the recursive route (the articulated-body algorithm, body accelerations by the kinematics
functions, joint reactions by Newton-Euler; with loops the spatial loop layer), the compiled tree solve against the
sparse and dense KKT routes, and the constraint rows against finite differences of their residuals."""


import numpy as np
import pytest
from _helpers import swinging_chain
from spatial_reference import random_spatial_tree
from test_spatial_core import random_tree
from test_spatial_loops import JOINTS, _four_bar_spatial
from test_spatial_simulate import ARM, SLIDER, _arm_with_slider

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import spatial3d
from recursive_mbd.dynamics import augmented3d, spatial_loops
from recursive_mbd.errors import ModelError, StateError

GRAVITY = (0.3, -0.5, -9.81)


def random_case(seed, nbodies=8):
    """A random spatial tree of every joint type and a random state (q, v, tau) of it."""
    rng = np.random.default_rng(seed)
    model = rm.Model3D(gravity=GRAVITY)
    for body in random_spatial_tree(rng, nbodies):
        model.add_body(**body)
    model.compile()
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    return model, q, rng.normal(size=model.nv), 3.0 * rng.normal(size=model.nv)


def every_joint_chain():
    """A chain through every joint type, each body with an offset centre of mass and a full inertia."""
    model = rm.Model3D(gravity=GRAVITY)
    axes = {"revolute": (0.3, 1.0, -0.2), "prismatic": (1.0, 0.2, 0.4), "cylindrical": (0.1, -0.3, 1.0),
            "universal": ((1.0, 0.0, 0.2), (0.1, 1.0, 0.0))}
    parent = "ground"
    quat = np.array([0.9, 0.1, -0.2, 0.3])
    for k, joint in enumerate(("free", "revolute", "universal", "spherical", "prismatic", "planar", "cylindrical",
                               "fixed", "revolute")):
        parent = model.add_body(parent, joint, parent_point=(0.1 * k, 0.4, -0.2), child_point=(-0.3, 0.1, 0.2),
                                mass=1.0 + 0.1 * k, inertia=(0.3, 0.4, 0.5, 0.02, -0.01, 0.03),
                                com=(0.1, -0.05, 0.2), rotation=quat / np.linalg.norm(quat), axis=axes.get(joint))
        quat = quat[[1, 2, 3, 0]] + 0.1
    model.compile()
    return model


def body_accelerations(model, q, v, vdot):
    """(c'', omega') of every body (nbodies, 6) from the recursive route's accelerations, ground axes."""
    com = augmented3d._com_local(model)
    return np.array([rm.body_acceleration(model, q, v, vdot, i, com[i]) for i in range(model.nbodies)])


def joint_wrenches(model, z, zd, tau, lam):
    """(force, moment about the joint point) (nbodies, 6) that each joint exerts on its child, from the
    multipliers (-C_v^T lambda on the child) and the joint forces tau."""
    n = model.nbodies
    starts = augmented3d.row_starts(model)
    jc, jp, res, gam, load = np.zeros((n, 6, 6)), np.zeros((n, 6, 6)), np.zeros((n, 6)), np.zeros((n, 6)), np.zeros(
        (2, 6))
    rot = augmented3d._quaternion_matrix(z[:, 3:])
    com = augmented3d._com_local(model)
    out = np.zeros((n, 6))
    for i in range(n):
        m = spatial3d.joint_rows(model.body_int, model.body_real, z, zd, tau, i, jc, jp, res, gam, load)
        wrench = -jc[i, :m].T @ lam[starts[i]:starts[i + 1]] + load[0]
        arm = rot[i] @ (model.body(i)["child_point"] - com[i])
        out[i] = np.concatenate((wrench[:3], wrench[3:] - np.cross(arm, wrench[:3])))
    return out


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_accelerations_and_multipliers_equal_the_recursive_routes_on_random_spatial_trees(seed):
    model, q, v, tau = random_case(seed)
    z, zd = rm.augmented.absolute_from_joint(model, q, v)
    assert z.shape == (model.nbodies, 7) and zd.shape == (model.nbodies, 6)
    vdot = rm.forward_dynamics(model, q, v, tau)
    expected = body_accelerations(model, q, v, vdot)
    reactions = rm.joint_reactions(model, q, v, vdot, tau).joint
    lam_sparse = None
    for solver in ("tree", "sparse", "dense"):
        zdd, lam = rm.augmented.forward_dynamics(model, z, zd, tau, solver=solver)
        np.testing.assert_allclose(zdd, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
        wrenches = joint_wrenches(model, z, zd, tau, lam)
        np.testing.assert_allclose(wrenches, reactions, rtol=0, atol=1e-9 * np.abs(reactions).max())
        if solver == "sparse":
            lam_sparse = lam
    np.testing.assert_allclose(rm.augmented.forward_dynamics(model, z, zd, tau)[1], lam_sparse, rtol=0,
                               atol=1e-10 * np.abs(lam_sparse).max())


def test_every_joint_type_in_a_chain_and_the_joint_coordinates_back():
    model = every_joint_chain()
    rng = np.random.default_rng(7)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    z, zd = rm.augmented.absolute_from_joint(model, q, v)
    q_back, v_back = rm.augmented.joint_from_absolute(model, z, zd)
    np.testing.assert_allclose(rm.difference(model, q, q_back), 0.0, atol=1e-13)
    np.testing.assert_allclose(v_back, v, rtol=0, atol=1e-13)
    residual, cv, rate, gamma = rm.augmented.constraints(model, z, zd)
    assert cv.shape == (sum(spatial3d.ROWS_PER_JOINT[code] for code in range(8)) + 5, 6 * model.nbodies)
    np.testing.assert_allclose(residual, 0.0, atol=1e-14)
    np.testing.assert_allclose(rate, 0.0, atol=1e-13)
    vdot = rm.forward_dynamics(model, q, v, tau)
    expected = body_accelerations(model, q, v, vdot)
    zdd, _ = rm.augmented.forward_dynamics(model, z, zd, tau)
    np.testing.assert_allclose(zdd, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    np.testing.assert_allclose(cv @ zdd.ravel(), gamma, rtol=0, atol=1e-10 * np.abs(gamma).max())


def test_the_residuals_rates_are_the_velocity_rows():
    """Moving z along zd (quaternions by omega), C' of the residuals equals C_v zd for the linear rows and the
    other rows where C = 0 (central differences; the angular ones are exact only there)."""
    model = every_joint_chain()
    rng = np.random.default_rng(3)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    z, zd = rm.augmented.absolute_from_joint(model, q, rng.normal(size=model.nv))

    def moved(h):
        out = z.copy()
        out[:, :3] += h * zd[:, :3]
        for i in range(model.nbodies):
            angle = np.linalg.norm(zd[i, 3:]) * h
            axis = zd[i, 3:] / np.linalg.norm(zd[i, 3:])
            turn = np.concatenate(([np.cos(angle / 2)], np.sin(angle / 2) * axis))
            w0, x0 = turn[0], turn[1:]
            w1, x1 = z[i, 3], z[i, 4:]
            out[i, 3:] = np.concatenate(([w0 * w1 - x0 @ x1], w0 * x1 + w1 * x0 + np.cross(x0, x1)))
        return out

    h = 1e-5
    plus = rm.augmented.constraints(model, moved(h), zd)[0]
    minus = rm.augmented.constraints(model, moved(-h), zd)[0]
    _, _, rate, _ = rm.augmented.constraints(model, z, zd)
    np.testing.assert_allclose((plus - minus) / (2 * h), rate, rtol=0, atol=1e-8)


def test_tree_solve_with_baumgarte_terms_off_the_constraints_equals_the_sparse_route():
    model, q, v, tau = random_case(5, nbodies=12)
    z, zd = rm.augmented.absolute_from_joint(model, q, v)
    rng = np.random.default_rng(1)
    z = z + 1e-3 * rng.normal(size=z.shape)
    z[:, 3:] /= np.linalg.norm(z[:, 3:], axis=1, keepdims=True)
    zd = zd + 1e-3 * rng.normal(size=zd.shape)
    tree = rm.augmented.forward_dynamics(model, z, zd, tau, alpha=3.0, beta=5.0)
    sparse = rm.augmented.forward_dynamics(model, z, zd, tau, alpha=3.0, beta=5.0, solver="sparse")
    for ours, reference in zip(tree, sparse, strict=True):
        np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-10 * np.abs(reference).max())


def test_point_masses_whose_rotation_the_joint_locks_and_force_elements():
    """A point mass on a prismatic and on a fixed joint (a singular body pivot, regularised) and a spring-damper
    and joint spring: the accelerations are the recursive route's."""
    model = rm.Model3D(gravity=GRAVITY)
    model.add_body("ground", "spherical", child_point=(0.0, 0.0, 0.5), mass=1.0, inertia=0.2, name="top")
    model.add_body("top", "prismatic", parent_point=(0.0, 0.0, -0.5), axis=(0.0, 0.0, 1.0), mass=0.5, name="slider")
    model.add_body("slider", "fixed", parent_point=(0.2, 0.0, 0.0), mass=0.3, name="weld")
    model.add_body("top", "revolute", parent_point=(0.1, 0.0, 0.0), axis=(0.0, 1.0, 0.0), child_point=(0, 0, 0.3),
                   mass=0.7, inertia=0.05, name="arm")
    model.add_spring_damper("arm", (0.0, 0.0, -0.3), "ground", (0.5, 0.0, 0.0), 20.0, 0.5, rest_length=0.3)
    model.add_joint_spring_damper("slider", 30.0, 1.0)
    model.compile()
    rng = np.random.default_rng(2)
    q = rm.integrate_configuration(model, model.neutral(), 0.5 * rng.normal(size=model.nv))
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    z, zd = rm.augmented.absolute_from_joint(model, q, v)
    expected = body_accelerations(model, q, v, rm.forward_dynamics(model, q, v, tau))
    for solver in ("tree", "sparse"):
        zdd, _ = rm.augmented.forward_dynamics(model, z, zd, tau, solver=solver)
        np.testing.assert_allclose(zdd, expected, rtol=0, atol=1e-9 * np.abs(expected).max())


def test_planar_only_augmented_functions_refuse_a_spatial_model_by_name():
    # (x, y, theta) a body: a Model3D was refused as "not a recursive_mbd.Model", or by numpy's column_stack
    model, q, v, tau = random_case(0, 4)
    z, zd = rm.augmented.absolute_from_joint(model, q, v)
    calls = {"mass_matrix": lambda: rm.augmented.mass_matrix(model),
             "joint_jacobian": lambda: rm.augmented.joint_jacobian(model, z),
             "applied_forces": lambda: rm.augmented.applied_forces(model, z, zd, tau),
             "joint_accelerations": lambda: rm.augmented.joint_accelerations(model, z, zd, np.zeros_like(zd)),
             "joint_constraint_forces": lambda: rm.augmented.joint_constraint_forces(model, z, zd, np.zeros(9)),
             "state_derivative": lambda: rm.augmented.state_derivative(model, 0.0, np.concatenate((z.ravel(),
                                                                                                   zd.ravel())))}
    for name, call in calls.items():
        with pytest.raises(TypeError, match=rf"rm.augmented.{name} takes a planar Model .*not a Model3D.*"
                                            "absolute_from_joint"):
            call()


def test_bad_input_to_the_spatial_augmented_route():
    model, q, v, tau = random_case(0, nbodies=3)
    z, zd = rm.augmented.absolute_from_joint(model, q, v)
    with pytest.raises(StateError, match=r"z must have shape \(3, 7\)"):
        rm.augmented.forward_dynamics(model, z[:, :3], zd)
    with pytest.raises(StateError, match=r"zd must have shape \(3, 6\)"):
        rm.augmented.forward_dynamics(model, z, zd[:, :3])
    with pytest.raises(StateError, match="not of unit norm"):
        rm.augmented.forward_dynamics(model, 2.0 * z, zd)
    with pytest.raises(StateError, match="tau must have shape"):
        rm.augmented.forward_dynamics(model, z, zd, np.zeros(model.nv + 1))
    with pytest.raises(ValueError, match="unknown solver"):
        rm.augmented.forward_dynamics(model, z, zd, solver="filtered")
    looped = rm.Model3D()
    looped.add_body("ground", "spherical", child_point=(0.0, 0.0, 1.0), mass=1.0, inertia=0.1)
    looped.add_loop("distance", 0, (0.0, 0.0, -1.0), "ground", (0.0, 0.0, -2.0), length=1.0, name="rod")
    z, zd = rm.augmented.absolute_from_joint(looped, looped.neutral(), np.zeros(looped.nv))
    with pytest.raises(StateError, match="loop 'rod' .*points of the distance loop coincide"):
        rm.augmented.forward_dynamics(looped, z, zd)


def test_simulate_a_spatial_chain_in_absolute_coordinates_follows_the_recursive_run():
    """A spherical, a revolute and a universal joint in a chain, integrated in both formulations (one compiled time
    loop: projection and Baumgarte runs share it): the same joint trajectory to the integrator's tolerance, the
    energy kept, the constraint drift at round-off, and the joint accelerations ``qdd()`` the recursive run's."""
    model, q0, v0 = swinging_chain()
    reference = rm.simulate(model, q0, v0, 0.5, rtol=1e-10, atol=1e-12)
    energy0 = sum(rm.energy(model, q0, v0))
    for options in ({"stabilization": "projection"}, {"stabilization": "baumgarte", "alpha": 5.0, "beta": 10.0}):
        result = rm.simulate(model, q0, v0, 0.5, rtol=1e-10, atol=1e-12, t_eval=reference.t, formulation="augmented",
                             **options)
        assert result.z.shape == (reference.t.size, 3, 7) and result.zd.shape == (reference.t.size, 3, 6)
        gaps = np.array([rm.difference(model, a, b) for a, b in zip(reference.q, result.q, strict=True)])
        assert np.abs(gaps).max() < 1e-8
        np.testing.assert_allclose(result.qd, reference.qd, rtol=0, atol=1e-7)
        assert result.constraint_drift.max() < 1e-9
        energies = [sum(rm.energy(model, q, v)) for q, v in zip(result.q, result.qd, strict=True)]
        np.testing.assert_allclose(energies, energy0, rtol=0, atol=1e-7)
        expected = reference.qdd()
        np.testing.assert_allclose(result.qdd(), expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    with pytest.raises(ValueError, match=r"tau\(t, q, v\) is not supported"):
        rm.simulate(model, q0, v0, 0.1, formulation="augmented", tau=lambda t, q, v: np.zeros(model.nv))


def looped_trees():
    """Random spatial trees (every joint type but fixed) with loops between bodies and to the ground, off the loops'
    manifold (the rows hold at acceleration level only): one of each kind, and two of each kind."""
    rng = np.random.default_rng(14)  # a seed whose loops are independent at the state drawn (rank 9 and 18)
    one = random_tree(rng, 7, joints=JOINTS)
    one.add_loop("spherical", 6, rng.normal(size=3), 4, rng.normal(size=3), name="ball")
    one.add_loop("revolute", 2, rng.normal(size=3), 5, rng.normal(size=3), axis=rng.normal(size=3),
                 axis_b=rng.normal(size=3), name="hinge")
    one.add_loop("distance", 1, rng.normal(size=3), "ground", rng.normal(size=3), length=1.3, name="rod")
    two = random_tree(rng, 10, joints=JOINTS)
    for k, (kind, a, b) in enumerate((("spherical", 9, 3), ("spherical", "ground", 7), ("revolute", 8, 2),
                                      ("revolute", 5, "ground"), ("distance", 6, 0), ("distance", 4, "ground"))):
        axis = {"axis": rng.normal(size=3), "axis_b": rng.normal(size=3)} if kind == "revolute" else {}
        length = {"length": 0.8 + k / 10} if kind == "distance" else {}
        two.add_loop(kind, a, rng.normal(size=3), b, rng.normal(size=3), name=f"{kind}{k}", **axis, **length)
    for model in (one, two):
        q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
        yield model, q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def test_loops_accelerations_and_multipliers_equal_the_recursive_loop_layers():
    for model, q, v, tau in looped_trees():
        m = model.nconstraints
        z, zd = rm.augmented.absolute_from_joint(model, q, v)
        for alpha, beta in ((0.0, 0.0), (2.0, 3.0)):
            reference = spatial_loops.loop_dynamics(model, q, v, tau, alpha=alpha, beta=beta)
            assert reference.rank == m
            expected = body_accelerations(model, q, v, reference.qdd)
            for solver in ("tree", "sparse", "dense"):
                zdd, lam = rm.augmented.forward_dynamics(model, z, zd, tau, alpha=alpha, beta=beta, solver=solver)
                assert lam.shape == (augmented3d.row_starts(model)[-1] + m,)
                np.testing.assert_allclose(zdd, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
                np.testing.assert_allclose(lam[-m:], reference.multipliers, rtol=0,
                                           atol=1e-9 * np.abs(reference.multipliers).max())
            forces = rm.augmented.loop_forces(model, z, zd, lam)
            np.testing.assert_allclose(forces, reference.forces, rtol=0, atol=1e-9 * np.abs(reference.forces).max())
        # the loops' rows of constraints() are the loop layer's residuals and rates J v, and the accelerations meet
        # every row (gamma here is C'' at zd' = 0, the loop layer's at vdot = 0)
        phi, phid, _, _ = spatial_loops.constraints(model, q, v)
        residual, cv, rate, gamma = rm.augmented.constraints(model, z, zd)
        np.testing.assert_allclose(residual[-m:], phi, rtol=0, atol=1e-13)
        np.testing.assert_allclose(rate[-m:], phid, rtol=0, atol=1e-12 * np.abs(phid).max())
        zdd, _ = rm.augmented.forward_dynamics(model, z, zd, tau)
        np.testing.assert_allclose(cv @ zdd.ravel(), gamma, rtol=0, atol=1e-10 * np.abs(gamma).max())


def test_redundant_loops_give_the_minimum_norm_multipliers_as_the_recursive_route():
    """The planar four-bar built in 3D with a revolute loop: its out-of-plane rows hold identically (rank 2 of 5).
    The tree solve warns and gives the recursive route's minimum-norm multipliers; the LU routes refuse it."""
    model = _four_bar_spatial()
    q = rm.assemble(model, np.array([0.9, -0.7, 1.6]), fixed=[0])
    v = np.linalg.svd(spatial_loops.constraints(model, q)[2])[2][-1] * 2.5
    tau = np.array([0.3, -0.2, 0.1])
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 5"):
        reference = spatial_loops.loop_dynamics(model, q, v, tau)
    z, zd = rm.augmented.absolute_from_joint(model, q, v)
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 5"):
        zdd, lam = rm.augmented.forward_dynamics(model, z, zd, tau)
    expected = body_accelerations(model, q, v, reference.qdd)
    np.testing.assert_allclose(zdd, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    np.testing.assert_allclose(lam[-5:], reference.multipliers, rtol=0,
                               atol=1e-9 * np.abs(reference.multipliers).max())
    with pytest.raises(ModelError, match="singular at this state.*redundant loops"):
        rm.augmented.forward_dynamics(model, z, zd, tau, solver="sparse")


def test_simulate_a_spatial_four_bar_in_absolute_coordinates_follows_the_recursive_run():
    """The four-bar closed by a distance link (an RSSR-like spatial closure) under every stabilization, and closed
    by a redundant revolute loop: the recursive run's joint trajectory and loop multipliers, the drift bounded."""
    model = _four_bar_spatial(loop="distance")
    q0 = rm.assemble(model, np.array([0.9, -0.7, 1.6]), fixed=[0])
    v0 = np.linalg.svd(spatial_loops.constraints(model, q0)[2])[2][-1] * 2.0
    reference = rm.simulate(model, q0, v0, 1.0, rtol=1e-11, atol=1e-12)
    assert np.ptp(reference.q[:, 0]) > 1.0
    for options in ({"stabilization": "projection"}, {"stabilization": "baumgarte", "alpha": 5.0, "beta": 5.0},
                    {"stabilization": "none"}):
        result = rm.simulate(model, q0, v0, 1.0, rtol=1e-11, atol=1e-12, t_eval=reference.t, formulation="augmented",
                             **options)
        gaps = np.remainder(result.q - reference.q + np.pi, 2 * np.pi) - np.pi  # hinge angles, read back in (-pi, pi]
        assert np.abs(gaps).max() < 1e-8
        np.testing.assert_allclose(result.qd, reference.qd, rtol=0, atol=1e-8 * np.abs(reference.qd).max())
        np.testing.assert_allclose(result.multipliers, reference.multipliers, rtol=0,
                                   atol=1e-8 * np.abs(reference.multipliers).max())
        assert result.constraint_drift.max() < 1e-10  # joints and loop, at the dense output's samples
    redundant = _four_bar_spatial()
    q0 = rm.assemble(redundant, np.array([0.9, -0.7, 1.6]), fixed=[0])
    v0 = np.linalg.svd(spatial_loops.constraints(redundant, q0)[2])[2][-1] * 2.5
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 5"):
        reference = rm.simulate(redundant, q0, v0, 0.3, rtol=1e-11, atol=1e-12)
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 5"):
        result = rm.simulate(redundant, q0, v0, 0.3, rtol=1e-11, atol=1e-12, t_eval=reference.t,
                             formulation="augmented", stabilization="projection")
    np.testing.assert_allclose(result.qd, reference.qd, rtol=0, atol=1e-8 * np.abs(reference.qd).max())
    np.testing.assert_allclose(result.multipliers, reference.multipliers, rtol=0,
                               atol=1e-8 * np.abs(reference.multipliers).max())
    with pytest.raises(StateError, match=r"q0 does not close the loops .*loop 'loop0'"):
        rm.simulate(redundant, q0 + 1e-3, v0, 0.1, formulation="augmented")


def test_driven_spatial_joints_in_absolute_coordinates_follow_the_recursive_run():
    """Drivers in formulation="augmented" on a Model3D are rheonomic rows on the absolute coordinates: a chain with a
    free spherical root and a driven revolute and prismatic joint, and the spatial four-bar closed by a distance
    link (RSSR-like) with its crank driven, under projection and Baumgarte. The joint trajectory, the driving forces
    (minus the driver rows' multipliers), the loop multipliers, the drivers' work and the joint accelerations
    ``qdd()`` equal the recursive run's (its hybrid dynamics) to the integrators' tolerance; the driven coordinates
    follow their drivers."""
    crank = (lambda t: 0.9 + 2.0 * t + 0.3 * t * t, lambda t: 2.0 + 0.6 * t, lambda t: 0.6)
    times = np.linspace(0.0, 1.0, 11)
    chain = _arm_with_slider()
    four_bar = _four_bar_spatial(loop="distance")
    cases = ((chain, chain.neutral(), np.array([0.5, -0.4, 1.0, 0.0, 0.0]), {"arm": ARM, "slider": SLIDER}),
             (four_bar, rm.assemble(four_bar, np.array([0.9, -0.7, 1.6]), fixed=[0]), np.zeros(3), {"crank": crank}))
    for model, q0, v0, drivers in cases:
        options = dict(rtol=1e-11, atol=1e-12, t_eval=times, drivers=drivers)
        reference = rm.simulate(model, q0, v0, 1.0, **options)
        forces = reference.driving_forces()
        assert np.abs(forces).max() > 1.0
        for stabilization in ({"stabilization": "projection"},
                              {"stabilization": "baumgarte", "alpha": 5.0, "beta": 10.0}):
            result = rm.simulate(model, q0, v0, 1.0, formulation="augmented", **options, **stabilization)
            gaps = np.array([rm.difference(model, a, b) for a, b in zip(reference.q, result.q, strict=True)])
            assert np.abs(np.remainder(gaps + np.pi, 2 * np.pi) - np.pi).max() < 1e-9  # hinge angles in (-pi, pi]
            np.testing.assert_allclose(result.qd, reference.qd, rtol=0, atol=1e-9 * np.abs(reference.qd).max())
            for body, (f, f_dot, _) in drivers.items():
                angle = result.q[:, model.q_slice(body).start] - [f(t) for t in times]
                assert np.abs(np.remainder(angle + np.pi, 2 * np.pi) - np.pi).max() < 1e-10
                rate = result.qd[:, model.v_slice(body).start] - [f_dot(t) for t in times]
                assert np.abs(rate).max() < 1e-9
            np.testing.assert_allclose(result.driving_forces(), forces, rtol=0, atol=1e-9 * np.abs(forces).max())
            if model.nloops:
                np.testing.assert_allclose(result.multipliers, reference.multipliers, rtol=0,
                                           atol=1e-9 * np.abs(reference.multipliers).max())
            np.testing.assert_allclose(result.applied_work, reference.applied_work, rtol=0,
                                       atol=1e-9 * np.abs(reference.applied_work).max())
            assert result.constraint_drift.max() < 1e-10  # joints, loops and drivers
            expected = reference.qdd()
            np.testing.assert_allclose(result.qdd(), expected, rtol=0, atol=1e-9 * np.abs(expected).max())


def test_project_a_spatial_model_with_loops_onto_its_joints_and_loops():
    """``rm.augmented.project`` on a Model3D (the projection of the augmented runs), on the spatial four-bar closed by a
    distance link: from a state off the joints' and the loop's constraints in every direction, the residual and the
    velocity rows vanish (1e-12), the joint state read back closes the recursive route's loop, the velocity
    correction is mass-orthogonal to the admissible motions (it changes no momentum along them) and a state on the
    constraints stays where it is."""
    model = _four_bar_spatial(loop="distance")
    rng = np.random.default_rng(5)
    q = rm.assemble(model, np.array([0.9, -0.7, 1.6]), fixed=[0])
    jac = spatial_loops.constraints(model, q)[2]
    v = np.linalg.svd(jac)[2][-1] * 2.0  # an admissible motion
    z, zd = rm.augmented.absolute_from_joint(model, q, v)
    same_z, same_zd = rm.augmented.project(model, z, zd)
    np.testing.assert_allclose(same_z, z, rtol=0, atol=1e-12)
    np.testing.assert_allclose(same_zd, zd, rtol=0, atol=1e-12)
    z_off = z + 1e-4 * rng.normal(size=z.shape)
    z_off[:, 3:] /= np.linalg.norm(z_off[:, 3:], axis=1, keepdims=True)
    zd_off = zd + 1e-3 * rng.normal(size=zd.shape)
    residual, _, rate, _ = rm.augmented.constraints(model, z_off, zd_off)
    assert np.abs(residual).max() > 1e-5 and np.abs(rate).max() > 1e-4
    z_new, zd_new = rm.augmented.project(model, z_off, zd_off)
    residual, cv, rate, _ = rm.augmented.constraints(model, z_new, zd_new)
    assert np.abs(residual).max() < 1e-12 and np.abs(rate).max() < 1e-12
    q_new, v_new = rm.augmented.joint_from_absolute(model, z_new, zd_new)
    phi, phid, _, _ = spatial_loops.constraints(model, q_new, v_new)
    assert np.abs(phi).max() < 1e-12 and np.abs(phid).max() < 1e-12
    mass = block_mass(model, z_new)
    null = np.linalg.svd(cv.toarray())[2][np.linalg.matrix_rank(cv.toarray()):]  # the admissible motions
    change = mass @ (zd_new - zd_off).ravel()
    assert np.abs(null @ change).max() < 1e-10 * np.abs(change).max()


def test_project_a_spatial_model_onto_its_drivers_rows():
    """``rm.augmented.project`` with drivers on a Model3D: the arm with a spherical root and driven revolute and
    prismatic joints, and the spatial four-bar closed by a distance link with its crank driven. From a state off
    every row, the joints', the loop's and the drivers' residuals and rates vanish at the given time (1e-12: the
    driven coordinates and rates read back are f(t), f'(t)); a consistent state stays where it is; a coordinate that
    no revolute or prismatic joint has is refused."""
    def crank(t):
        return 0.9 + 2.0 * t, 2.0, 0.0

    t = 0.7
    rng = np.random.default_rng(4)
    chain = _arm_with_slider()
    q = rm.integrate_configuration(chain, chain.neutral(), rng.normal(size=chain.nv))
    v = rng.normal(size=chain.nv)
    chain_drivers = []  # (coordinate in q, evaluate, rate in v)
    for name, functions in (("arm", ARM), ("slider", SLIDER)):
        k, rate = chain.q_slice(name).start, chain.v_slice(name).start
        chain_drivers.append((k, lambda t, functions=functions: tuple(f(t) for f in functions), rate))
        q[k], v[rate] = chain_drivers[-1][1](t)[:2]
    four_bar = _four_bar_spatial(loop="distance")
    q4 = rm.assemble(four_bar, np.array([crank(t)[0], -0.7, 1.6]), fixed=[0])
    jac = spatial_loops.constraints(four_bar, q4)[2]
    v4 = np.concatenate(([crank(t)[1]], np.linalg.lstsq(jac[:, 1:], -jac[:, 0] * crank(t)[1], rcond=None)[0]))
    for model, q_on, v_on, drivers in ((chain, q, v, chain_drivers), (four_bar, q4, v4, [(0, crank, 0)])):
        pairs = [(k, evaluate) for k, evaluate, _ in drivers]
        z, zd = rm.augmented.absolute_from_joint(model, q_on, v_on)
        residual, _, rate, _ = rm.augmented.constraints(model, z, zd)
        assert np.abs(residual).max() < 1e-12 and np.abs(rate).max() < 1e-12
        same_z, same_zd = rm.augmented.project(model, z, zd, t=t, drivers=pairs)
        np.testing.assert_allclose(same_z, z, rtol=0, atol=1e-12)
        np.testing.assert_allclose(same_zd, zd, rtol=0, atol=1e-12)
        z_off = z + 1e-4 * rng.normal(size=z.shape)
        z_off[:, 3:] /= np.linalg.norm(z_off[:, 3:], axis=1, keepdims=True)
        zd_off = zd + 1e-3 * rng.normal(size=zd.shape)
        q_off, v_off = rm.augmented.joint_from_absolute(model, z_off, zd_off)
        assert min(abs(q_off[k] - evaluate(t)[0]) for k, evaluate, _ in drivers) > 1e-6
        assert min(abs(v_off[r] - evaluate(t)[1]) for _, evaluate, r in drivers) > 1e-5
        z_new, zd_new = rm.augmented.project(model, z_off, zd_off, t=t, drivers=pairs)
        residual, _, rate, _ = rm.augmented.constraints(model, z_new, zd_new)
        assert np.abs(residual).max() < 1e-12 and np.abs(rate).max() < 1e-12
        q_new, v_new = rm.augmented.joint_from_absolute(model, z_new, zd_new)
        for k, evaluate, r in drivers:
            f, f_dot, _ = evaluate(t)
            assert abs(q_new[k] - f) < 1e-12 and abs(v_new[r] - f_dot) < 1e-12
    z, zd = rm.augmented.absolute_from_joint(chain, q, v)
    with pytest.raises(ModelError, match="coordinate 0: not the coordinate of a revolute or prismatic joint"):
        rm.augmented.project(chain, z, zd, drivers=[(0, crank)])  # the root's quaternion
    with pytest.raises(ModelError, match="coordinate 4: given twice"):
        rm.augmented.project(chain, z, zd, drivers=[(4, crank), (4, crank)])


def block_mass(model, z):
    """The absolute-coordinate mass matrix diag(m 1, R J_c R^T) per body (6 nbodies, 6 nbodies), dense."""
    mass = augmented3d.assemble(model, z, np.zeros((model.nbodies, 6)))[0]
    out = np.zeros((6 * model.nbodies, 6 * model.nbodies))
    for i in range(model.nbodies):
        out[6 * i:6 * i + 6, 6 * i:6 * i + 6] = mass[i]
    return out
