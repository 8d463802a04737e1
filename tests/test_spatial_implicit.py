"""rm.simulate(Model3D, method="generalized_alpha") (issue 18 with issue 15's scheme): the O(N) Newton matrix
against the dense one, second order against dop853, the planar route's trajectory, a torque-free body at
rho_inf = 1, numerical damping, the run's options (tau functions, elements, t_eval, events, work terms) and a
Newton failure with its partial result; a stiff spherical joint spring damped as the scheme promises (the
scalar scheme's response, every joint type) and its Newton matrix against finite differences of the residual.

Compile cost: two specialisations of the spatial loop (no inputs and no events; a Python tau with events)."""

import numpy as np
import pytest
from _helpers import planar_chain_and_its_spatial_twin, spherical_pendulum_with_elements
from spatial_reference import random_spatial_tree

import recursive_mbd as rm
from recursive_mbd._kernels.spatial import implicit as spatial_implicit
from recursive_mbd._kernels.spatial import newton as spatial_newton
from recursive_mbd._kernels.spatial import tree as spatial_kernels
from recursive_mbd._kernels.spatial.layout import W_SPATIAL
from recursive_mbd.errors import SimulationError
from recursive_mbd.integrate.newton import generalized_alpha_coefficients
from recursive_mbd.integrate.spatial_loop import SpatialTimeLoop

NOT_DRIVEN = np.zeros(0, dtype=np.uint8)  # no joint locked (the factorisations' ``driven`` flags)


def _ball_chain(n, rod=0.5, mass=1.0, gravity=(0.0, 0.0, -9.81)):
    """n rods (length rod, mass mass, slender: axial moment 1/10 of the transverse one) on spherical joints."""
    model = rm.Model3D(gravity=gravity)
    inertia = mass * rod**2 / 12
    for i in range(n):
        model.add_body(parent=i - 1, joint="spherical", parent_point=(0.0, 0.0, -rod / 2 if i else 0.0),
                       child_point=(0.0, 0.0, rod / 2), mass=mass,
                       inertia=(inertia, 1.05 * inertia, 0.1 * inertia, 0.0, 0.0, 0.0))
    return model


def _factor_and_solve(model, q, c_stiff, diagonal, rhs, driven=NOT_DRIVEN):
    """(status, x) of effective_factor at q and effective_apply on rhs, with fresh scratch (the joints of the bodies
    flagged in ``driven`` locked)."""
    nb, max_nv = model.nbodies, max(1, int(model.body_int[:, 5].max()))
    ws, tmp = np.zeros((nb, W_SPATIAL)), np.zeros(spatial_kernels.TMP_SIZE)
    s, ud = np.zeros((nb, max_nv, 6)), np.zeros((nb, max_nv, 6))
    dinv, scratch, x = np.zeros((nb, max_nv, max_nv)), np.zeros((nb, max_nv)), np.zeros(model.nv)
    status = spatial_implicit.effective_factor(model.body_int, model.body_real, model.gravity, q, np.zeros(model.nv),
                                               ws, s, tmp, c_stiff, diagonal, ud, dinv, np.zeros((nb, 3, 3)),
                                               np.zeros((nb, 3)), np.zeros((nb, 6)), np.zeros((0, 6, 12)), 0.0,
                                               driven)
    if status == 0:
        spatial_implicit.effective_apply(model.body_int, ws, s, ud, dinv, rhs, tmp, scratch, x)
    return status, x


def test_newton_matrix_equals_mass_matrix_plus_joint_diagonal_on_random_trees():
    """effective_factor + effective_apply (c_stiff = 0) solve (M + diag(d)) x = r: the dense M of rm.mass_matrix,
    every joint type, random axes and full inertias, 1e-10 relative; a negative diagonal that makes a joint block
    indefinite is reported as singular at that body."""
    for seed in range(20):
        rng = np.random.default_rng(1850 + seed)
        model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
        for body in random_spatial_tree(rng, int(rng.integers(1, 9))):
            model.add_body(**body)
        q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
        diagonal = rng.uniform(0.0, 3.0, model.nv)
        rhs = rng.normal(size=model.nv)
        status, x = _factor_and_solve(model, q, 0.0, diagonal, rhs)
        assert status == 0
        expected = np.linalg.solve(rm.mass_matrix(model, q) + np.diag(diagonal), rhs)
        assert np.abs(x - expected).max() <= 1e-10 * np.abs(expected).max(), seed
    model = _ball_chain(2)
    diagonal = np.zeros(model.nv)
    diagonal[4] = -1e3  # the second joint's D is indefinite
    assert _factor_and_solve(model, model.neutral(), 0.0, diagonal, np.ones(6))[0] == (4 | (1 << 4))  # SINGULAR, 1


def test_gravity_geometric_stiffness_against_finite_differences():
    """On a hanging chain at rest straight down (each subtree's weight in line with its lever: the Hessian of the
    potential is the same in every chart there), M + c K with K the per-body gravity stiffness equals M + c dg/dq,
    g(q) = ID(q, 0, 0) the gravity load differentiated (central differences along integrate_configuration) on
    spherical, universal and revolute joints with unequal links and masses, to 1e-7 relative."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    joints = ("spherical", "universal", "revolute", "spherical")
    for i, joint in enumerate(joints):
        length = 0.3 + 0.2 * i
        axis = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)) if joint == "universal" else (0.6, 0.8, 0.0)
        model.add_body(parent=i - 1, joint=joint, parent_point=(0.0, 0.0, -(length - 0.2) if i else 0.0),
                       mass=1.0 + 0.5 * i, inertia=(0.05, 0.06, 0.02, 0.0, 0.0, 0.0), com=(0.0, 0.0, -length / 2),
                       axis=None if joint == "spherical" else axis)
    q = model.neutral()
    step = 1e-5
    stiffness = np.zeros((model.nv, model.nv))
    for k in range(model.nv):
        delta = np.zeros(model.nv)
        delta[k] = step
        plus = rm.inverse_dynamics(model, rm.integrate_configuration(model, q, delta), np.zeros(model.nv),
                                   np.zeros(model.nv))
        minus = rm.inverse_dynamics(model, rm.integrate_configuration(model, q, -delta), np.zeros(model.nv),
                                    np.zeros(model.nv))
        stiffness[:, k] = (plus - minus) / (2.0 * step)
    assert np.abs(stiffness - stiffness.T).max() < 1e-7 * np.abs(stiffness).max()
    c_stiff = 0.01
    rhs = np.random.default_rng(5).normal(size=model.nv)
    status, x = _factor_and_solve(model, q, c_stiff, np.zeros(model.nv), rhs)
    assert status == 0
    expected = np.linalg.solve(rm.mass_matrix(model, q) + c_stiff * stiffness, rhs)
    without = np.linalg.solve(rm.mass_matrix(model, q), rhs)
    assert np.abs(x - expected).max() <= 1e-7 * np.abs(expected).max()
    assert np.abs(without - expected).max() > 1e-3 * np.abs(expected).max()  # the stiffness matters here


def _newton_solve(model, q, v, vdot, delta, c_stiff, c_damp, diagonal, rhs, driven=NOT_DRIVEN):
    """(status, x): newton_factor at (q, v, vdot) with the update delta, then newton_apply on rhs (fresh
    scratch; the joints of the bodies flagged in ``driven`` locked)."""
    nb, max_nv = model.nbodies, max(1, int(model.body_int[:, 5].max()))
    ws, s, tmp = np.zeros((nb, W_SPATIAL)), np.zeros((nb, max_nv, 6)), np.zeros(spatial_kernels.TMP_SIZE)
    fac, x = np.zeros((nb, spatial_newton.factor_width(max_nv))), np.zeros(model.nv)
    status = spatial_newton.newton_factor(model.body_int, model.body_real, model.gravity, q, v, vdot, delta,
                                          c_stiff, c_damp, diagonal, ws, s, tmp, np.zeros(model.nv),
                                          np.zeros(spatial_newton.SCRATCH_SIZE), fac, np.zeros((0, 6, 12)), driven,
                                          np.zeros((0, 6)))
    if status == 0:
        spatial_newton.newton_apply(model.body_int, ws, fac, rhs, tmp, np.zeros((nb, max_nv)), x)
    return status, x


def _step_jacobian(model, q, delta, v, vdot, c_stiff, c_damp, step=1e-6):
    """d r / d vdot+ by central differences of a step's residual r(y) = ID(q (+) (delta + c_stiff y),
    v + c_damp y, vdot + y) at y = 0, as the generalised-alpha loop forms its iterates."""
    def residual(y):
        return rm.inverse_dynamics(model, rm.integrate_configuration(model, q, delta + c_stiff * y),
                                   v + c_damp * y, vdot + y)

    return np.array([(residual(step * e) - residual(-step * e)) / (2.0 * step) for e in np.eye(model.nv)]).T


def test_newton_matrix_is_the_exact_jacobian_on_random_trees():
    """newton_factor + newton_apply solve N x = r with N the Jacobian of a step's residual by vdot+ (central
    differences, ``_step_jacobian``) on random trees of every joint type, in random configurations turned by a
    random update (its tangent map included), with gravity, random velocities and accelerations and a joint
    diagonal: the backward error |N_fd x - r| is below 1e-8 of |N_fd| |x| (the finite differences' own error is
    about 1e-9). The matrix of gravity's per-body stiffness (``implicit.effective_factor``, the coupling lagged)
    misses by more than 1e-3."""
    for seed in range(8):
        rng = np.random.default_rng(3300 + seed)
        model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
        for body in random_spatial_tree(rng, int(rng.integers(2, 7))):
            model.add_body(**body)
        q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
        delta, vdot = 0.5 * rng.normal(size=model.nv), rng.normal(size=model.nv)
        diagonal, rhs = rng.uniform(0.0, 1.0, model.nv), rng.normal(size=model.nv)
        c_stiff, c_damp = 0.3, 0.2
        q_new = rm.integrate_configuration(model, q, delta)
        for v in (np.zeros(model.nv), rng.normal(size=model.nv)):
            exact = _step_jacobian(model, q, delta, v, vdot, c_stiff, c_damp) + np.diag(diagonal)
            status, x = _newton_solve(model, q_new, v, vdot, delta, c_stiff, c_damp, diagonal, rhs)
            assert status == 0
            assert np.abs(exact @ x - rhs).max() < 1e-8 * np.abs(exact).max() * np.abs(x).max(), seed
        lagged = _factor_and_solve(model, q_new, c_stiff, diagonal, rhs)[1]
        assert np.abs(exact @ lagged - rhs).max() > 1e-3 * np.abs(exact).max() * np.abs(lagged).max()


def test_driven_joints_are_locked_in_both_newton_matrices_on_random_trees():
    """With drivers a step's unknowns are the free velocities: both factorisations, their driven joints flagged,
    solve the free rows and columns of their matrix and give the driven velocities zero, on random trees of every
    joint type with a random half of the joints locked (any joint type: the lock is the kernels'), to 1e-10
    relative: M + diag(d) for ``effective_factor`` (dense M), the exact step Jacobian (finite differences, backward
    error 1e-8 as above) for ``newton_factor``. A massless driven body (a whirling chain's arm) is no pivot."""
    for seed in range(6):
        rng = np.random.default_rng(4100 + seed)
        model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
        for body in random_spatial_tree(rng, int(rng.integers(2, 7))):
            model.add_body(**body)
        driven = (rng.random(model.nbodies) < 0.5).astype(np.uint8)
        driven[int(rng.integers(model.nbodies))] = 1
        locked = np.concatenate([np.full(model.v_slice(b).stop - model.v_slice(b).start, driven[b] != 0, bool)
                                 for b in range(model.nbodies)])
        free = ~locked
        q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
        diagonal, rhs = rng.uniform(0.0, 1.0, model.nv), rng.normal(size=model.nv)
        status, x = _factor_and_solve(model, q, 0.0, diagonal, rhs, driven)
        assert status == 0 and np.all(x[locked] == 0.0)
        dense = rm.mass_matrix(model, q) + np.diag(diagonal)
        expected = np.linalg.solve(dense[np.ix_(free, free)], rhs[free])
        assert np.abs(x[free] - expected).max() <= 1e-10 * np.abs(expected).max(), seed
        delta, v, vdot = 0.5 * rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
        c_stiff, c_damp = 0.3, 0.2
        exact = _step_jacobian(model, q, delta, v, vdot, c_stiff, c_damp) + np.diag(diagonal)
        status, x = _newton_solve(model, rm.integrate_configuration(model, q, delta), v, vdot, delta, c_stiff, c_damp,
                                  diagonal, rhs, driven)
        assert status == 0 and np.all(x[locked] == 0.0)
        block = exact[np.ix_(free, free)]
        assert np.abs(block @ x[free] - rhs[free]).max() < 1e-8 * np.abs(block).max() * np.abs(x).max(), seed
    arm = rm.studies.whirling_chain_model(2, 0.1)
    status, x = _factor_and_solve(arm, arm.neutral(), 0.0, np.zeros(arm.nv), np.ones(arm.nv),
                                  np.array([1, 0, 0], dtype=np.uint8))
    assert status == 0 and x[0] == 0.0 and np.all(np.isfinite(x))


def test_newton_converges_quadratically_on_a_swinging_chain_step():
    """A generalised-alpha step of a 10-link spherical chain tilted 0.3 rad and pushed sideways (dt = 0.01 s),
    solved in Python with the Newton matrix factorised at every iterate: the corrections fall quadratically,
    e_k+1 <= e_k^2 / (1 mm) until round-off, and the third is below 1e-14 m."""
    model, q, v = _hanging_chain(10, 0.3, 0.5)
    vdot = rm.forward_dynamics(model, q, v, np.zeros(model.nv))
    alpha_m, alpha_f, gamma, beta = generalized_alpha_coefficients(0.9)[:4]
    h, scale = 0.01, (1.0 - alpha_f) / (1.0 - alpha_m)
    c_stiff, c_damp = h * h * beta * scale, h * gamma * scale
    y, corrections = vdot.copy(), []
    for _ in range(3):
        acc = ((1.0 - alpha_f) * y + alpha_f * vdot - alpha_m * vdot) / (1.0 - alpha_m)
        delta = h * v + h * h * ((0.5 - beta) * vdot + beta * acc)
        v_new = v + h * ((1.0 - gamma) * vdot + gamma * acc)
        q_new = rm.integrate_configuration(model, q, delta)
        residual = rm.inverse_dynamics(model, q_new, v_new, y)
        status, dx = _newton_solve(model, q_new, v_new, y, delta, c_stiff, c_damp, np.zeros(model.nv), residual)
        assert status == 0
        y -= dx
        corrections.append(c_stiff * np.abs(dx).max())
    assert corrections[0] > 1e-5
    assert corrections[1] <= corrections[0] ** 2 / 1e-3
    assert corrections[2] <= max(corrections[1] ** 2 / 1e-3, 1e-14)


def _hanging_chain(n, tilt, push):
    """(model, q0, v0): n slender spherical links (1 m and 1 kg in all, axial inertia a tenth of the transverse
    one) hanging from the ground, tilted ``tilt`` rad about x, the top link turning about y at ``push`` rad/s."""
    rod = mass = 1.0 / n
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    points = np.tile([0.0, 0.0, -rod], (n, 1))
    points[0] = 0.0
    model.add_bodies(np.arange(-1, n - 1), "spherical", parent_point=points, mass=mass,
                     inertia=(mass * rod**2 / 12, mass * rod**2 / 12, mass * rod**2 / 120, 0.0, 0.0, 0.0),
                     com=(0.0, 0.0, -rod / 2))
    delta, v0 = np.zeros(model.nv), np.zeros(model.nv)
    delta[0], v0[1] = tilt, push
    return model, rm.integrate_configuration(model, model.neutral(), delta), v0


@pytest.mark.parametrize("n, tilt, push, dt, steps, per_step, factorizations_per_step",
                         [(100, 1e-3, 5e-3 / 3, 2e-3, 10, 6.0, 1.0), (30, 0.3, 0.5, 0.01, 5, 7.0, None),
                          (1000, 1e-3, 5e-3 / 3, 0.01, 10, 5.0, 3.5)])
def test_newton_iterations_on_hanging_chains(n, tilt, push, dt, steps, per_step, factorizations_per_step):
    """The slender spherical chain: the small swing of 100 links at dt = 2e-3 s converges on the cheap matrix
    (gravity's per-body stiffness, the rest lagged), 6 Newton iterations and one factorisation a step (the exact
    matrix: 3 iterations a step, each factorised at 30x the cost); the 0.3 rad swing of 30 links with a sideways
    push at dt = 0.01 s, where the cheap matrix's corrections grow (it diverged at the first step), falls back to
    the exact matrix (its spherical joints' spins held until the bending's corrections contract) and after two
    such steps starts on it: at most 7 a step (measured 31 in 5 steps; 41 with the spin damping falling 100x a
    factorisation, 56 without damping and the start on the exact matrix); the small swing of 1000 links at
    dt = 0.01 s on the exact matrix after its first two steps: at most 5 iterations and 3.5 factorisations a step
    (measured 46 and 32 in 10 steps, 4 and 3 a step from the third: the bending in two corrections with the spins
    held, their own correction, the check; 76 and 72 with the falling damping)."""
    model, q0, v0 = _hanging_chain(n, tilt, push)
    result = rm.simulate(model, q0, v0, steps * dt, method="generalized_alpha", dt=dt)
    assert result.newton_iterations <= per_step * steps
    if factorizations_per_step is not None:
        assert result.newton_factorizations <= factorizations_per_step * steps


def test_large_swing_of_a_slender_chain_converges_and_follows_dopri5():
    """The slender spherical chain of 100 links tilted 0.3 rad and pushed sideways, 0.2 s at dt = 0.01 s: the turn
    of a joint's subtree about its link (tiny inertia) held by a damping (``_kernels.spatial.implicit.SPIN_DAMPING``)
    in the exact matrix until the bending's corrections contract,
    Newton converges at every step (without the damping the run stopped with SimulationError at t = 0.13 s) in at
    most 7 iterations a step (measured 6.4; 7.65 with the damping falling 100x a factorisation), and the tip
    follows dopri5 at rtol 1e-8 to 5e-5 m (measured 9.6e-6 m)."""
    n, t_end = 100, 0.2
    model, q0, v0 = _hanging_chain(n, 0.3, 0.5)
    result = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", dt=0.01)
    assert result.t[-1] == pytest.approx(t_end)
    assert result.newton_iterations <= 7 * 20
    reference = rm.simulate(model, q0, v0, t_end, method="dopri5", rtol=1e-8, atol=1e-8)
    zeros = np.zeros(model.nv)
    tips = [rm.point_kinematics(model, q[-1], zeros, n - 1, (0.0, 0.0, -1.0 / n))[0] for q in (result.q, reference.q)]
    assert np.linalg.norm(tips[0] - tips[1]) < 5e-5


@pytest.fixture(scope="module")
def double_pendulum():
    model = _ball_chain(2)
    rng = np.random.default_rng(18)
    q0 = rm.integrate_configuration(model, model.neutral(), 0.6 * rng.normal(size=model.nv))
    v0 = rng.normal(size=model.nv)
    reference = rm.simulate(model, q0, v0, 1.0, method="dop853", rtol=1e-12, atol=1e-12)
    return model, q0, v0, reference


@pytest.mark.parametrize("rho_inf", [1.0, 0.6])
def test_second_order_against_dop853(double_pendulum, rho_inf):
    """The error at t = 1 s (tangent-space difference from dop853 at rtol 1e-12) falls 4 +- 0.3 times when dt
    halves; the Newton contraction factor is measured and below 0.2."""
    model, q0, v0, reference = double_pendulum
    errors = []
    for dt in (0.01, 0.005, 0.0025):
        res = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", dt=dt, rho_inf=rho_inf)
        assert res.t[-1] == 1.0 and res.nsteps == round(1.0 / dt)
        errors.append(max(np.abs(rm.difference(model, reference.q[-1], res.q[-1])).max(),
                          np.abs(res.qd[-1] - reference.qd[-1]).max()))
        # the cheap matrix converges (velocity products lagged): corrections shrink 0.007-0.03x per iteration
        # (~1 / (c_damp |C|)), 6.6-9.7 a step (positions and velocities to newton_tol), one factorisation a step;
        # in less time than the exact matrix's 3-3.5 a step, each factorised
        assert 0.0 < res.newton_contraction < 0.2
        assert res.newton_iterations <= 11 * res.nsteps
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(np.abs(ratios - 4.0) < 0.3), (errors, ratios)


def test_planar_chain_built_as_spatial_follows_the_planar_trajectory():
    """serial_chain(3) rebuilt with revolute axes along z and gravity along -y: the spatial loop (Newton matrix M
    + joint terms, gravity stiffness lagged) and the planar one (gravity stiffness in its matrix) converge to the
    same steps, so the trajectories agree to the Newton tolerance's order (1e-9 over 2 s, 200 steps)."""
    planar, model, q0, qd0 = planar_chain_and_its_spatial_twin()
    a = rm.simulate(planar, q0, qd0, 2.0, method="generalized_alpha", dt=0.01, rho_inf=0.8)
    b = rm.simulate(model, q0, qd0, 2.0, method="generalized_alpha", dt=0.01, rho_inf=0.8)
    assert a.t.shape == b.t.shape
    assert np.abs(b.q - a.q).max() < 1e-9 and np.abs(b.qd - a.qd).max() < 1e-9
    assert np.abs(b.q[-1] - q0).max() > 0.1  # it moved


def test_torque_free_body_at_rho_one_keeps_energy_bounded_and_unit_quaternions(monkeypatch):
    """An asymmetric body spinning near its intermediate axis (it flips) for 40 s at dt = 0.01 with rho_inf = 1:
    the kinetic energy error stays below 1e-4 relative and does not grow (its maximum over the last quarter is no
    more than twice that over the first); the integrated quaternions themselves (not renormalised by the result's
    map) are unit to 1e-14: q (+) delta keeps them unit by construction."""
    monkeypatch.setattr(SpatialTimeLoop, "joint_states",
                        lambda self, t, y: (np.atleast_2d(y)[:, :self.model.nq].copy(),
                                            np.atleast_2d(y)[:, self.model.nq:self.model.nq + self.model.nv].copy()))
    inertia = np.array([1.0, 2.0, 3.0])
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="spherical", mass=2.0, inertia=(*inertia, 0.0, 0.0, 0.0))
    v0 = np.array([1e-2, 2.0, 1e-2])
    res = rm.simulate(model, model.neutral(), v0, 40.0, method="generalized_alpha", dt=0.01, rho_inf=1.0)
    kinetic = 0.5 * np.sum(inertia * res.qd**2, axis=1)
    drift = np.abs(kinetic / kinetic[0] - 1.0)
    quarter = res.t.size // 4
    assert drift.max() < 1e-4 and drift[-quarter:].max() <= 2.0 * drift[:quarter].max()
    assert np.abs(np.linalg.norm(res.q, axis=1) - 1.0).max() < 1e-14
    assert res.qd[:, 1].min() < -1.9  # the flip happened


def test_rho_inf_below_one_damps_an_unresolved_stiff_joint_spring():
    """A body on a revolute joint with a spring of frequency 1000 rad/s, stepped at dt = 0.01 (omega h = 10): the
    spring is in the Newton matrix, so Newton converges in one or two iterations a step; rho_inf = 0.5 leaves
    less than 1e-6 of the swing after 50 steps (0.5 per step), rho_inf = 1 keeps its energy to 1e-12."""
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="revolute", axis=(0.0, 0.0, 1.0), mass=1.0, inertia=(1.0, 1.0, 1.0, 0.0, 0.0, 0.0))
    model.add_joint_spring_damper(0, stiffness=1e6)
    swing = {}
    for rho in (0.5, 1.0):
        res = rm.simulate(model, [1e-3], [0.0], 0.5, method="generalized_alpha", dt=0.01, rho_inf=rho)
        assert res.newton_iterations <= 2 * res.nsteps
        energy = 0.5 * res.qd[:, 0] ** 2 + 0.5e6 * res.q[:, 0] ** 2
        swing[rho] = energy[-1] / energy[0]
    assert swing[0.5] < 1e-6
    assert abs(swing[1.0] - 1.0) < 1e-12


def test_tau_function_elements_t_eval_events_and_work_terms():
    """A spherical pendulum with a point spring-damper to the ground, a damper on its joint and a tau(t)
    function: t_eval samples and the event (the pendulum's omega_x crossing zero) agree with dop853 to the
    scheme's second order (dt = 2e-3: 1e-4), and the work terms close the energy balance to 1e-5 J."""
    model, q0, v0, tau, crossing, t_eval, reference = spherical_pendulum_with_elements()
    res = rm.simulate(model, q0, v0, 2.0, method="generalized_alpha", dt=2e-3, tau=tau, t_eval=t_eval,
                      events=crossing)
    assert np.array_equal(res.t, reference.t)
    error = max(np.abs(rm.difference(model, a, b)).max() for a, b in zip(res.q, reference.q, strict=True))
    assert error < 1e-4
    assert len(res.t_events[0]) == len(reference.t_events[0]) >= 2
    assert np.abs(res.t_events[0] - reference.t_events[0]).max() < 1e-4
    balance = res.energy_balance()
    assert np.abs(balance - balance[0]).max() < 1e-5
    assert np.abs(reference.energy_balance() - balance[0]).max() < 1e-5


def test_newton_failure_raises_with_the_samples_so_far():
    """An asymmetric body spinning at 100 rad/s stepped at dt = 0.1 s with a damping torque -1e3 v from a tau
    function (its dependence on v lagged in the Newton matrix: c_damp 1e3 ~ 50 times the inertia): the iteration
    diverges at the first step: SimulationError naming the time and the cause, the t0 sample kept in .result."""
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="spherical", mass=1.0, inertia=(1.0, 2.0, 2.5, 0.0, 0.0, 0.0))
    with pytest.raises(SimulationError, match=r"generalized_alpha: Newton did not converge at t = 0\.1 s") as info:
        rm.simulate(model, model.neutral(), np.array([1.0, 100.0, 1.0]), 1.0, method="generalized_alpha", dt=0.1,
                    tau=lambda t, q, v: -1e3 * v)
    assert info.value.result.status == "failed" and info.value.result.t.tolist() == [0.0]
    assert info.value.t == pytest.approx(0.1)



def _scalar_generalized_alpha(omega, x0, dt, nsteps, rho_inf):
    """(x, v) (nsteps + 1,) of the scheme on x'' = -omega^2 x from (x0, 0), the form of the spatial loop (the
    acceleration vdot and the pseudo-acceleration a): the scheme's own response, spectral radius rho_inf at
    h omega -> inf."""
    alpha_m, alpha_f, gamma, beta = generalized_alpha_coefficients(rho_inf)
    x, v, vdot = np.zeros(nsteps + 1), np.zeros(nsteps + 1), -omega**2 * x0
    x[0], acc = x0, vdot
    for n in range(nsteps):
        # (1 - alpha_m) a+ + alpha_m a = (1 - alpha_f) vdot+ + alpha_f vdot, x+ = x + h v + h^2 ((1/2 - beta) a
        # + beta a+), vdot+ = -omega^2 x+: linear in vdot+
        explicit = (alpha_f * vdot - alpha_m * acc) / (1.0 - alpha_m)
        slope = (1.0 - alpha_f) / (1.0 - alpha_m)
        known = x[n] + dt * v[n] + dt**2 * ((0.5 - beta) * acc + beta * explicit)
        vdot_new = -omega**2 * known / (1.0 + omega**2 * dt**2 * beta * slope)
        acc_new = explicit + slope * vdot_new
        x[n + 1] = known + dt**2 * beta * slope * vdot_new
        v[n + 1] = v[n] + dt * ((1.0 - gamma) * acc + gamma * acc_new)
        vdot, acc = vdot_new, acc_new
    return x, v


@pytest.mark.parametrize("h_omega", [10.0, 100.0, 1000.0])
def test_stiff_spherical_spring_is_damped_as_the_scheme_promises(h_omega):
    """A body on a spherical joint with a stiff joint spring (h omega = 10, 100, 1000), 1e-3 rad off about a
    skew axis: the run follows the scalar scheme on x'' = -omega^2 x (the motion stays about that axis) to 1e-9
    of the swing for rho_inf = 0, 0.5, 0.9, Newton finding the step's physical root (the spring's force is
    periodic in the rotation: Newton from the predictor, turned by (h omega)^2 times the swing, used to end on a
    root turned by whole turns, the energy x 4e7 at h omega = 100). The energy falls as the scheme promises: after
    its start-up overshoot (the same on a revolute joint: the scheme's velocity overshoot of order h omega, at
    most 10 steps) it never grows again and ends below 0.1 of the start; at h omega = 1000 the amplitude falls by
    rho_inf a step (the double root -rho_inf at h omega -> inf: energy ~ n^2 rho_inf^(2 n), so from step 20 to
    40 by rho_inf^40 times 4)."""
    dt, inertia, nsteps = 1e-3, 0.01, 80
    omega = h_omega / dt
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="spherical", mass=1.0, inertia=inertia)
    model.add_joint_spring_damper(0, stiffness=inertia * omega**2)
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    q0 = rm.integrate_configuration(model, model.neutral(), 1e-3 * axis)
    for rho_inf in (0.0, 0.5, 0.9):
        res = rm.simulate(model, q0, np.zeros(3), nsteps * dt, method="generalized_alpha", dt=dt, rho_inf=rho_inf)
        x, v = _scalar_generalized_alpha(omega, 1e-3, dt, nsteps, rho_inf)
        rotation = np.array([rm.difference(model, model.neutral(), q) for q in res.q])
        assert np.abs(rotation - np.outer(x, axis)).max() < 1e-12, rho_inf
        assert np.abs(res.qd - np.outer(v, axis)).max() < 1e-9 * np.abs(v).max(), rho_inf
        energy = 0.5 * inertia * omega**2 * np.sum(rotation**2, axis=1) + 0.5 * inertia * np.sum(res.qd**2, axis=1)
        peak = int(np.argmax(energy))
        assert peak <= 10 and np.all(np.diff(energy[peak:]) <= 0.0), rho_inf
        assert energy[-1] < 0.1 * energy[0], rho_inf
        if h_omega == 1000.0 and rho_inf > 0.0:
            assert rho_inf**40 < energy[40] / energy[20] < 4.5 * rho_inf**40, rho_inf


def _hat(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _right_jacobian_and_inverse(x):
    """(J_r(x), J_r(x)^-1) of SO(3): Exp(x + e) = Exp(x) Exp(J_r(x) e) to first order in e."""
    angle, skew = np.linalg.norm(x), _hat(x)
    jacobian = (np.eye(3) - (1.0 - np.cos(angle)) / angle**2 * skew
                + (angle - np.sin(angle)) / angle**3 * skew @ skew)
    inverse = (np.eye(3) + 0.5 * skew
               + (1.0 / angle**2 - (1.0 + np.cos(angle)) / (2.0 * angle * np.sin(angle))) * skew @ skew)
    return jacobian, inverse


def test_spherical_spring_newton_matrix_against_finite_differences():
    """A step's residual r(vdot+) = ID(q (+) delta, v+, vdot+) on a spherical joint with a spring-damper (rest
    turned, isotropic inertia: no gyroscopic term), delta = e + c_stiff vdot+ and v+ = w + c_damp vdot+ as the
    loop forms them, differentiated by central differences, equals M + c_stiff k J_r^-1(phi+) J_r(delta) + c_damp
    c 1 (phi+ the spring's rotation vector at q (+) delta) to 1e-9 relative; the Newton matrix (effective_factor
    with the joint diagonal c_stiff k + c_damp c) is that with J_r^-1(phi+) J_r(delta) taken as 1 (the lagged
    part, O(|phi+| + |delta|)), so exact at the rest orientation with a zero increment."""
    inertia, k, c, c_stiff, c_damp = 0.02, 50.0, 0.3, 2e-3, 0.05
    rest = np.array([np.cos(0.2), 0.0, np.sin(0.2), 0.0])
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="spherical", mass=1.0, inertia=inertia)
    model.add_joint_spring_damper(0, stiffness=k, damping=c, rest=rest)
    rest_q = rm.integrate_configuration(model, rest, np.zeros(3))
    solves = [_factor_and_solve(model, rest_q, 0.0, np.full(3, c_stiff * k + c_damp * c), e) for e in np.eye(3)]
    assert all(status == 0 for status, _ in solves)
    matrix = np.linalg.inv(np.array([x for _, x in solves]).T)  # the Newton matrix (M is constant here)
    assert np.abs(matrix - (inertia + c_stiff * k + c_damp * c) * np.eye(3)).max() < 1e-14
    for phi, increment in (((0.4, -0.1, 0.2), (0.2, 0.1, -0.3)), ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))):
        q = rm.integrate_configuration(model, rest_q, phi)
        base, w = np.array(increment), np.array([0.3, -0.2, 0.1])

        def residual(vdot, q=q, base=base, w=w):
            delta = base + c_stiff * vdot
            return rm.inverse_dynamics(model, rm.integrate_configuration(model, q, delta), w + c_damp * vdot, vdot)

        vdot = np.zeros(3)  # delta = base
        eps = 1e-3
        numeric = np.array([(residual(vdot + eps * e) - residual(vdot - eps * e)) / (2.0 * eps)
                            for e in np.eye(3)]).T
        phi_new = rm.difference(model, rest_q, rm.integrate_configuration(model, q, base))
        if np.linalg.norm(phi_new) > 0.0:
            exact_tangent = _right_jacobian_and_inverse(phi_new)[1] @ _right_jacobian_and_inverse(base)[0]
        else:
            exact_tangent = np.eye(3)
        exact = inertia * np.eye(3) + c_stiff * k * exact_tangent + c_damp * c * np.eye(3)
        assert np.abs(numeric - exact).max() < 1e-9 * np.abs(exact).max()
        lagged = c_stiff * k * (exact_tangent - np.eye(3))
        assert np.abs(exact - lagged - matrix).max() < 1e-14


def test_stiff_spherical_spring_swinging_in_3d_loses_its_energy():
    """The stiff spherical spring (h omega = 100) on a large 3D orbit: 0.5 rad off about x, turning about y at
    half the spring's frequency (the spring's force far from linear in the rotation); rho_inf = 0.5: every step
    converges to its physical root (no whole turns), the energy never grows after the scheme's start-up overshoot
    and is below 1e-9 of the start after 40 steps; the Newton iteration takes at most 10 iterations a step."""
    dt, inertia = 1e-3, 0.01
    omega = 100.0 / dt
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="spherical", mass=1.0, inertia=inertia)
    model.add_joint_spring_damper(0, stiffness=inertia * omega**2)
    q0 = rm.integrate_configuration(model, model.neutral(), [0.5, 0.0, 0.0])
    res = rm.simulate(model, q0, np.array([0.0, 0.25 * omega, 0.0]), 0.04, method="generalized_alpha", dt=dt,
                      rho_inf=0.5)
    energy = np.array([rm.element_forces(model, q, v)["potential"] + 0.5 * inertia * v @ v
                       for q, v in zip(res.q, res.qd, strict=True)])
    peak = int(np.argmax(energy))
    assert peak <= 3 and np.all(np.diff(energy[peak:]) <= 0.0)
    assert energy[-1] < 1e-9 * energy[0]
    assert res.newton_iterations <= 10 * res.nsteps


@pytest.mark.parametrize("joint, stiffness, q0", [("universal", (1.0, 1.0), [1e-3, 0.0]),
                                                  ("cylindrical", (100.0, 1.0), [0.0, 1e-3]),
                                                  ("planar", (100.0, 100.0, 1.0), [0.0, 0.0, 1e-3])])
def test_stiff_joint_springs_of_other_joints_follow_the_scalar_scheme(joint, stiffness, q0):
    """A universal joint's first angle, a cylindrical joint's slide and a planar joint's angle on a stiff joint
    spring (the coordinate moved: h omega = 1000), rho_inf = 0.5: the scalar scheme's response to 1e-9 of the
    swing, the energy damped as on the spherical joint."""
    dt, inertia, nsteps = 1e-3, 0.01, 40
    omega = 1000.0 / dt
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint=joint, mass=inertia, inertia=inertia)  # the same frequency on angles and slides
    model.add_joint_spring_damper(0, stiffness=inertia * omega**2 * np.array(stiffness))
    moved = int(np.argmax(q0))
    res = rm.simulate(model, q0, np.zeros(model.nv), nsteps * dt, method="generalized_alpha", dt=dt, rho_inf=0.5)
    x, v = _scalar_generalized_alpha(omega, 1e-3, dt, nsteps, 0.5)
    assert np.abs(res.q[:, moved] - x).max() < 1e-12 and np.abs(np.delete(res.q, moved, axis=1)).max() < 1e-12
    assert np.abs(res.qd[:, moved] - v).max() < 1e-9 * np.abs(v).max()
