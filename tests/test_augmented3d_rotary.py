"""The spatial augmented tree solve of a tree of revolute and spherical joints (``_kernels.augmented.rotary3d``, the
route ``rm.augmented.forward_dynamics`` takes for such a model without loops): its accelerations, multipliers and
tau's power against the general kernel (``spatial3d.factor_and_solve``, the same KKT system eliminated by body and
joint pivots) on random trees, on and off the constraints, with and without Baumgarte's terms; against the recursive
route; and its refusals (a singular pivot, a non-finite state), after which it still solves."""

import numpy as np
import pytest
from spatial_reference import random_spatial_tree

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import rotary3d, spatial3d
from recursive_mbd.dynamics import augmented3d
from recursive_mbd.errors import ModelError, StateError

GRAVITY = (0.3, -0.5, -9.81)


def rotary_tree(seed, nbodies=12):
    """A random spatial tree (branched, random offsets, joint-frame rotations, full inertias) whose joints are
    revolute (random axes) or spherical, and a random state (q, v, tau)."""
    rng = np.random.default_rng(seed)
    model = rm.Model3D(gravity=GRAVITY)
    for body in random_spatial_tree(rng, nbodies):
        body["joint"] = ("revolute", "spherical")[int(rng.integers(2))]
        body["axis"] = rng.normal(size=3) if body["joint"] == "revolute" else None
        model.add_body(**body)
    model.compile()
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    return model, q, rng.normal(size=model.nv), 3.0 * rng.normal(size=model.nv), rng


def general_solve(model, z, zd, tau, stab):
    """(zdd, lam, power) of the general kernel."""
    ws = augmented3d._TreeWorkspace(model)
    zdd, lam, power = np.empty((model.nbodies, 6)), np.empty(ws.rows), np.zeros(1)
    status = spatial3d.factor_and_solve(model.body_int, model.body_real, model.gravity, ws.row_start, z, zd, tau,
                                        ws.no_wrench, np.array(stab), *ws.factor, zdd, lam, power)
    assert status == 0
    return zdd, lam, power[0]


@pytest.mark.parametrize("seed", range(6))
def test_rotary_solve_equals_the_general_kernel_on_random_trees(seed):
    model, q, v, tau, rng = rotary_tree(seed)
    z, zd = augmented3d.absolute_from_joint(model, q, v)
    off = z + 1e-3 * rng.normal(size=z.shape)  # off the constraints: the residuals enter with beta
    off[:, 3:] /= np.linalg.norm(off[:, 3:], axis=1, keepdims=True)
    off_rates = zd + 1e-3 * rng.normal(size=zd.shape)
    ws = augmented3d._tree_workspace(model)
    assert ws.rotary is not None  # the route applies
    for state in ((z, zd), (off, off_rates)):
        for stab in ((0.0, 0.0), (3.0, 5.0)):
            for loads in (tau, np.zeros(0)):
                expected_zdd, expected_lam, expected_power = general_solve(model, *state, loads, stab)
                ws.stab[:] = stab
                zdd, lam, power = np.empty_like(expected_zdd), np.empty_like(expected_lam), np.zeros(1)
                status = rotary3d.factor_and_solve(model.body_int, model.body_real, model.gravity, ws.row_start,
                                                   *state, loads, ws.stab, ws.rotary, zdd, lam, power)
                assert status == 0
                np.testing.assert_allclose(zdd, expected_zdd, rtol=0, atol=1e-12 * np.abs(expected_zdd).max())
                np.testing.assert_allclose(lam, expected_lam, rtol=0, atol=1e-12 * np.abs(expected_lam).max())
                assert abs(power[0] - expected_power) <= 1e-12 * np.abs(loads).sum() * np.abs(zd).max()
                public = rm.augmented.forward_dynamics(model, *state, loads if loads.size else None,
                                                       alpha=stab[0], beta=stab[1])
                np.testing.assert_array_equal(public[0], zdd)  # the public call takes this route
                np.testing.assert_array_equal(public[1], lam)


def test_rotary_solve_equals_the_recursive_route():
    """Body accelerations (c'', omega') from the articulated-body algorithm's joint accelerations, to 1e-10."""
    model, q, v, tau, _ = rotary_tree(11, nbodies=30)
    z, zd = augmented3d.absolute_from_joint(model, q, v)
    vdot = rm.forward_dynamics(model, q, v, tau)
    com = augmented3d._com_local(model)
    expected = np.array([rm.body_acceleration(model, q, v, vdot, i, com[i]) for i in range(model.nbodies)])
    zdd, _ = rm.augmented.forward_dynamics(model, z, zd, tau)
    np.testing.assert_allclose(zdd, expected, rtol=0, atol=1e-10 * np.abs(expected).max())


def test_rotary_solve_refuses_a_singular_pivot_and_a_non_finite_state_and_solves_after():
    model = rm.Model3D(gravity=GRAVITY)
    model.add_body("ground", "spherical", child_point=(0.0, 0.0, 0.5), mass=1.0, inertia=0.2, name="top")
    model.add_body("top", "revolute", parent_point=(0.0, 0.0, -0.5), axis=(0.0, 1.0, 0.0), mass=0.0, inertia=0.0,
                   name="empty")  # no mass the joint can move: the revolute pivot d is zero
    model.compile()
    z, zd = augmented3d.absolute_from_joint(model, model.neutral(), np.ones(model.nv))
    with pytest.raises(ModelError, match="body 'empty' .*singular"):
        rm.augmented.forward_dynamics(model, z, zd)
    model, q, v, tau, _ = rotary_tree(2)
    z, zd = augmented3d.absolute_from_joint(model, q, v)
    before = rm.augmented.forward_dynamics(model, z, zd, tau)
    bad_rates = zd.copy()
    bad_rates[5, 2] = np.nan  # found part-way through the leaves-first pass, some records already written
    bad_pose = z.copy()
    bad_pose[7, 3:] *= 1.1
    for state, message in (((z, bad_rates), "zd"), ((bad_pose, zd), "not of unit norm")):
        with pytest.raises(StateError, match=message):
            rm.augmented.forward_dynamics(model, *state, tau)
        after = rm.augmented.forward_dynamics(model, z, zd, tau)  # the records left ready for the next call
        np.testing.assert_array_equal(after[0], before[0])
        np.testing.assert_array_equal(after[1], before[1])


def test_the_time_loops_right_hand_side_takes_the_rotary_solve():
    """``system3d.system_rhs`` of such a tree (the right-hand side of ``rm.simulate(..., formulation="augmented")``)
    through the specialised solve against the same system through the general kernel: the whole derivative (the
    poses' rates, the accelerations, tau's power), off the constraints with Baumgarte's terms."""
    from recursive_mbd._kernels.augmented import system3d  # noqa: PLC0415
    from recursive_mbd._kernels.timeloops import integrators  # noqa: PLC0415

    model, q, v, tau, rng = rotary_tree(4)
    inputs = augmented3d._NoInputs(model)
    inputs.tau_const = tau
    fast = augmented3d._system(model, inputs, "baumgarte", 2.0, 3.0, 1e-12)
    general = augmented3d._system(model, inputs, "baumgarte", 2.0, 3.0, 1e-12, rotary=False)
    assert fast.rotary.shape == (model.nbodies, rotary3d.W) and general.rotary.shape[0] == 0
    z, zd = augmented3d.absolute_from_joint(model, q, v)
    z = z + 1e-3 * rng.normal(size=z.shape)
    zd = zd + 1e-3 * rng.normal(size=zd.shape)
    y = np.concatenate((z.ravel(), zd.ravel(), [0.0, 0.0]))
    derivatives = []
    for system in (fast, general):
        dy = np.zeros_like(y)
        assert system3d.system_rhs(integrators.no_inputs, 0, system, 0.0, y, dy) == 0
        derivatives.append(dy)
    np.testing.assert_allclose(derivatives[0], derivatives[1], rtol=0, atol=1e-12 * np.abs(derivatives[1]).max())
    assert derivatives[1][-1] != 0.0  # tau's power is there to compare
    assert np.abs(fast.rotary).max() > 0.0  # its records were written: the right-hand side took that solve


def test_rotary_solve_keeps_its_blocks_symmetric_along_a_long_chain():
    """A chain of 10^4 links about random axes: the articulated inertias summed along it stay exactly symmetric, so
    the two kernels agree to 1e-12 (computed as products, their round-off asymmetry grew along the chain to 1e-11
    here and 3e-9 at 10^5 links)."""
    rng = np.random.default_rng(18)
    n = 10_000
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    turn = np.linalg.qr(rng.normal(size=(n, 3, 3)))[0]
    inertia = np.einsum("nij,j,nkj->nik", turn, [0.01, 0.01, 0.002], turn)
    parent_points = np.zeros((n, 3))
    parent_points[1:, 2] = -0.05
    model.add_bodies(np.arange(n) - 1, joint="revolute", parent_point=parent_points, child_point=(0.0, 0.0, 0.05),
                     mass=0.1, inertia=inertia, com=rng.uniform(-0.01, 0.01, (n, 3)), axis=rng.normal(size=(n, 3)))
    model.compile()
    q, v, tau = 0.3 * rng.normal(size=n), 0.5 * rng.normal(size=n), 0.01 * rng.normal(size=n)
    z, zd = augmented3d.absolute_from_joint(model, q, v)
    expected_zdd, expected_lam, _ = general_solve(model, z, zd, tau, (0.0, 0.0))
    zdd, lam = rm.augmented.forward_dynamics(model, z, zd, tau)
    np.testing.assert_allclose(zdd, expected_zdd, rtol=0, atol=1e-12 * np.abs(expected_zdd).max())
    np.testing.assert_allclose(lam, expected_lam, rtol=0, atol=1e-12 * np.abs(expected_lam).max())


def test_simulate_a_tree_of_revolute_and_spherical_joints_in_absolute_coordinates():
    """rm.simulate(formulation="augmented") on such a tree (its right-hand side through the specialised solve)
    follows the recursive run: the joint trajectory to the integrator's tolerance, the drift at round-off."""
    model, q0, v0, _, _ = rotary_tree(7, nbodies=4)
    reference = rm.simulate(model, q0, 0.3 * v0, 0.3, rtol=1e-10, atol=1e-12)
    result = rm.simulate(model, q0, 0.3 * v0, 0.3, rtol=1e-10, atol=1e-12, t_eval=reference.t, formulation="augmented",
                         stabilization="projection")
    gaps = np.array([rm.difference(model, a, b) for a, b in zip(reference.q, result.q, strict=True)])
    assert np.abs(gaps).max() < 1e-8
    np.testing.assert_allclose(result.qd, reference.qd, rtol=0, atol=1e-7)
    assert result.constraint_drift.max() < 1e-9
