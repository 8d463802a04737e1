"""rm.simulate(Model3D with closed loops, method="generalized_alpha") (issues 15 and 18): the planar four-bar built
spatially (axes along z, and its plane turned in space) gives the planar method's steps and multipliers; an RSSR
linkage closed by a ball joint converges at second order to dop853 in the state and the multipliers, with phi and
J v at the Newton tolerance at every sample, and to dopri5 with a tau function, events, t_eval and work terms;
a progress bar leaves the run unchanged and t_eval carries the multipliers; a step too large for the spinning
linkage, and a loop locked at a singular position, stop with SimulationError naming the time and the cause, the
samples so far kept.

Compile cost: the spatial loop's two specialisations (no inputs; a Python tau with events), which
``test_spatial_implicit.py`` compiles too (a model with loops has the same system types as a tree); the planar
loop's, dop853's and dopri5's as their own tests do."""

import numpy as np
import pytest
from test_spatial_loops import _four_bar_planar, _four_bar_spatial, _rotated_four_bar

import recursive_mbd as rm
from recursive_mbd.dynamics import spatial_loops
from recursive_mbd.errors import SimulationError
from recursive_mbd.model import spatial_fields


def _rssr():
    """RSSR: a crank about the ground z axis, a coupler on a ball joint at its tip, a rocker about a skew axis; the
    loop is cut at the coupler-rocker ball joint (a spherical loop, 3 equations). nv = 5, two degrees of freedom
    (the crank's and the coupler's spin about its ball-to-ball line, which has inertia: full tensors)."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "revolute", axis=(0, 0, 1), mass=1.0, inertia=(0.01, 0.012, 0.02, 0.001, 0, 0),
                   com=(0.1, 0, 0), name="crank")
    model.add_body("crank", "spherical", parent_point=(0.2, 0.0, 0.0), mass=0.8,
                   inertia=(0.03, 0.031, 0.004, 0.001, -0.002, 0.0005), com=(0.0, 0.0, 0.3), name="coupler")
    model.add_body("ground", "revolute", parent_point=(0.3, 0.5, 0.4), axis=(1.0, 0.2, 0.1), mass=1.2,
                   inertia=(0.02, 0.01, 0.02, 0, 0.001, 0), com=(0, 0.2, 0), name="rocker")
    model.add_loop("spherical", "coupler", (0.0, 0.0, 0.6), "rocker", (0.0, 0.35, 0.0), name="ball")
    q0 = rm.assemble(model, rm.integrate_configuration(model, model.neutral(), [0.3, 0.0, 0.0, 0.0, 0.4]))
    return model, q0


def _loop_levels(model, result):
    """max |phi| and max |J v| over the samples, from spatial_loops.constraints (independent of the integrator)."""
    levels = [(np.abs(phi).max(), np.abs(rate).max())
              for phi, rate, _, _ in (spatial_loops.constraints(model, q, v) for q, v in zip(result.q, result.qd,
                                                                                           strict=True))]
    return np.max(levels, axis=0)


def test_four_bar_built_spatially_gives_the_planar_steps_and_multipliers():
    """The planar four-bar (revolute loop, 2 equations) and its spatial twin (revolute loop, 5 equations, three of
    them identically satisfied by a planar motion: redundant, zero multipliers), axes along z and with the plane
    turned by a rotation R: the same joint trajectory to 1e-9 over 2 s (400 steps; measured 2e-14) and the same
    multipliers, R^T lambda_spatial[:3] = (lambda_planar, 0), to 1e-9 relative (measured 4e-12): the spatial
    Newton iteration converges to the planar one's steps. The loop rows hold at the Newton tolerance."""
    planar, spatial = _four_bar_planar(), _four_bar_spatial()
    turn = spatial_fields.axis_rotation(np.array((1.0, 2.0, -0.5)) / np.sqrt(5.25), 0.7)
    q0 = rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])
    _, _, jac, _ = rm.loops.constraints(planar, q0)
    qd0 = np.linalg.svd(jac)[2][-1] * 2.5  # the mechanism's one motion
    reference = rm.simulate(planar, q0, qd0, 2.0, method="generalized_alpha", dt=5e-3, rho_inf=0.8)
    assert reference.multipliers.shape == (401, 2) and np.ptp(reference.q[:, 0]) > 1.0
    scale = np.abs(reference.multipliers).max()
    for rotation, model in ((np.eye(3), spatial), (turn, _rotated_four_bar(turn))):
        with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 5"):
            result = rm.simulate(model, q0, qd0, 2.0, method="generalized_alpha", dt=5e-3, rho_inf=0.8)
        assert result.t.shape == reference.t.shape and result.multipliers.shape == (401, 5)
        np.testing.assert_allclose(result.q, reference.q, rtol=0, atol=1e-9)
        np.testing.assert_allclose(result.qd, reference.qd, rtol=0, atol=1e-9)
        in_plane = result.multipliers[:, :3] @ rotation  # rows of R^T lambda
        np.testing.assert_allclose(in_plane[:, :2], reference.multipliers, rtol=0, atol=1e-9 * scale)
        assert np.abs(in_plane[:, 2]).max() < 1e-9 * scale and np.abs(result.multipliers[:, 3:]).max() < 1e-9 * scale
        phi, rate = _loop_levels(model, result)
        assert phi < 1e-12 and rate < 1e-9, (phi, rate)  # measured 1.3e-14 m, 1e-13 m/s
        # the same iterates: the spatial loop's cheap matrix is the planar one, and it converges here (equal counts
        # measured; round-off may move a correction across the tolerance)
        assert abs(result.newton_iterations - reference.newton_iterations) <= 0.01 * reference.newton_iterations


def test_rssr_converges_at_second_order_to_dop853_with_its_multipliers():
    """RSSR with a ball-joint loop, moving from a random admissible velocity for 1 s: against dop853 (rtol 1e-12,
    the explicit route's multiplier layer with projection) the state error (tangent-space difference and v) and
    the multipliers' error at t = 1 s (against spatial_loops.loop_dynamics at dop853's final state) fall 4 +- 0.3
    times when dt halves (measured 4.04, 4.02 for both); at t0 the multipliers are loop_dynamics' own. At every
    sample phi holds to the Newton tolerance (1e-12 m; measured 3e-14) and J v to newton_tol / (beta dt)
    (the velocity rows' scale; measured 7e-11 m/s at dt = 1e-3); on the cheap Newton matrix, which converges here,
    the corrections contract by < 0.05 an iteration (measured 0.017-0.022, 6.5-7.7 iterations a step:
    lambda d2phi/dq2 and the velocity terms are lagged)."""
    model, q0 = _rssr()
    rng = np.random.default_rng(3)
    v0 = 2.0 * rng.normal(size=model.nv)  # projected onto J v = 0 by simulate
    reference = rm.simulate(model, q0, v0, 1.0, method="dop853", rtol=1e-12, atol=1e-12)
    final = spatial_loops.loop_dynamics(model, reference.q[-1], reference.qd[-1]).multipliers
    assert np.ptp(reference.q[:, 0]) > 1.0  # the crank turned
    errors, lam_errors = [], []
    for dt in (4e-3, 2e-3, 1e-3):
        result = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", dt=dt, rho_inf=0.8)
        assert result.t[-1] == 1.0 and result.nsteps == round(1.0 / dt)
        errors.append(max(np.abs(rm.difference(model, reference.q[-1], result.q[-1])).max(),
                          np.abs(result.qd[-1] - reference.qd[-1]).max()))
        lam_errors.append(np.abs(result.multipliers[-1] - final).max())
        start = spatial_loops.loop_dynamics(model, result.q[0], result.qd[0]).multipliers
        np.testing.assert_allclose(result.multipliers[0], start, rtol=1e-12)
        phi, rate = _loop_levels(model, result)
        assert phi < 1e-12 and rate < 1e-12 / (0.25 * dt), (dt, phi, rate)
        assert 0.0 < result.newton_contraction < 0.05 and result.newton_iterations <= 8 * result.nsteps
    for series in (errors, lam_errors):
        ratios = np.array(series[:-1]) / np.array(series[1:])
        assert np.all(np.abs(ratios - 4.0) < 0.3), (series, ratios)
    assert errors[-1] < 1e-3


def test_a_progress_bar_leaves_the_run_unchanged_and_t_eval_interpolates_the_multipliers(tmp_path):
    """A run with a progress bar is the same, bit for bit (samples and multipliers); at t_eval points between
    steps lambda is linear between the step ends; the multipliers survive SimulationResult.save / load."""
    model, q0 = _rssr()
    v0 = np.array([3.0, 0.0, 0.0, 0.0, 0.0])  # the crank's rate, projected onto J v = 0 by simulate
    whole = rm.simulate(model, q0, v0, 0.2, method="generalized_alpha", dt=1e-3)
    shown = rm.simulate(model, q0, v0, 0.2, method="generalized_alpha", dt=1e-3, progress=True)
    for name in ("t", "q", "qd", "multipliers"):
        np.testing.assert_array_equal(getattr(shown, name), getattr(whole, name), err_msg=name)
    between = rm.simulate(model, q0, v0, 0.2, method="generalized_alpha", dt=1e-3, t_eval=[0.0503, 0.1])
    assert between.t.tolist() == [0.0, 0.0503, 0.1, 0.2]
    np.testing.assert_allclose(between.multipliers[1], 0.7 * whole.multipliers[50] + 0.3 * whole.multipliers[51],
                               rtol=1e-9)
    np.testing.assert_allclose(between.multipliers[[0, 2, 3]], whole.multipliers[[0, 100, 200]], rtol=1e-9)
    between.save(tmp_path / "run.npz")
    assert np.array_equal(rm.SimulationResult.load(tmp_path / "run.npz", model).multipliers, between.multipliers)


def test_tau_function_events_t_eval_and_work_terms_with_the_loop():
    """The RSSR driven by a crank torque tau(t), with t_eval samples and an event (the crank's rate crossing zero):
    against dopri5 (rtol 1e-12) the sampled state, the event times and the energy balance E + W_dissipated -
    W_applied - E0 (the loop force does no work: only the scheme's error remains) all fall 4 +- 0.4 times when dt
    halves (measured 4.0 for each; state 1.1e-4 rad, balance 4.5e-4 J at dt = 1e-3)."""
    model, q0 = _rssr()

    def tau(t):
        return np.array([0.5 * np.sin(3.0 * t), 0.0, 0.0, 0.0, 0.0])

    def crossing(t, q, v):
        return v[0]

    t_eval = np.linspace(0.0, 1.0, 21)
    v0 = np.array([3.0, 0.0, 0.0, 0.0, 0.0])
    reference = rm.simulate(model, q0, v0, 1.0, method="dopri5", rtol=1e-12, atol=1e-12, tau=tau, t_eval=t_eval,
                            events=crossing)
    assert len(reference.t_events[0]) == 3 and np.abs(reference.energy_balance()).max() < 1e-9
    errors = []
    for dt in (2e-3, 1e-3):
        result = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", dt=dt, tau=tau, t_eval=t_eval,
                             events=crossing)
        assert np.array_equal(result.t, reference.t) and len(result.t_events[0]) == 3
        errors.append((max(np.abs(rm.difference(model, a, b)).max() for a, b in zip(result.q, reference.q,
                                                                                      strict=True)),
                       np.abs(result.t_events[0] - reference.t_events[0]).max(),
                       np.abs(result.energy_balance()).max()))
    ratios = np.array(errors[0]) / np.array(errors[1])
    assert np.all(np.abs(ratios - 4.0) < 0.4), (errors, ratios)
    assert errors[1][0] < 2e-4


def test_a_step_too_large_for_the_spinning_linkage_raises_with_the_samples_so_far():
    """The RSSR crank started at 30 rad/s (28 after the projection onto J v = 0) stepped at dt = 0.03 s (h omega
    ~ 1): the lagged loop-force stiffness (lambda d2phi/dq2, centripetal: ~ omega^2) and velocity terms outgrow
    the Newton matrix and the iteration diverges at t = 0.15 s: SimulationError naming the time and the cause;
    the 5 samples before it are kept, the loop closed at each of them (to the Newton tolerance's order). (At
    dt = 0.01 s the same run converges, 12.8 iterations a step.)"""
    model, q0 = _rssr()
    with pytest.raises(SimulationError, match=r"generalized_alpha: Newton did not converge at t = 0\.15 s .*"
                                              r"(diverged|correction)") as info:
        rm.simulate(model, q0, [30.0, 0.0, 0.0, 0.0, 0.0], 1.0, method="generalized_alpha", dt=0.03)
    result = info.value.result
    assert result.status == "failed" and info.value.t == pytest.approx(0.15)
    assert result.t[-1] == pytest.approx(0.12) and result.t.size == 5 and result.multipliers.shape == (5, 3)
    # closed to the Newton tolerance's order (this fast run converges slowly, at ~0.15 an iteration, and a step may
    # end on the stall exit, correction <= 100 newton_tol): measured 6e-12 m
    assert np.all(np.isfinite(result.q)) and _loop_levels(model, result)[0] < 1e-10


def test_a_loop_locked_at_a_singular_position_raises_naming_the_time_and_the_cause():
    """Two links (0.5 m, revolute about z) stretched straight along x with the tip tied by a ball joint to the
    ground point (1, 0, 0): closed only at this straight configuration, where J (rows x, y, z: (0, 0), (1, 0.5),
    (0, 0)) has rank 1, so J v = 0 admits a motion that no closed configuration follows (the tip would leave the
    x row at second order): the mechanism is locked. From rest under gravity along -y, or moving along J's null
    direction, Newton's correction of the state stalls at the first step (measured 1.5e-3 and 9e-3 m after 50
    iterations at dt = 0.01 s, 1e-8 and 9e-4 at dt = 1e-3): SimulationError naming the time and the locked loops,
    the t0 sample kept."""
    model = rm.Model3D(gravity=(0.0, -9.81, 0.0))
    for parent, point in (("ground", (0.0, 0.0, 0.0)), (0, (0.5, 0.0, 0.0))):
        model.add_body(parent, "revolute", parent_point=point, axis=(0, 0, 1), mass=1.0,
                       inertia=(0.01, 0.05, 0.05, 0, 0, 0), com=(0.25, 0, 0))
    model.add_loop("spherical", 1, (0.5, 0.0, 0.0), "ground", (1.0, 0.0, 0.0), name="stretched")
    assert np.linalg.matrix_rank(spatial_loops.constraints(model, np.zeros(2))[2]) == 1
    for v0 in ([0.0, 0.0], [1.0, -2.0]):
        with pytest.warns(rm.RedundantConstraintWarning):
            with pytest.raises(SimulationError, match=r"Newton did not converge at t = 0\.01 s .* correction of the "
                                                      r"state is .* the loops are locked") as info:
                rm.simulate(model, np.zeros(2), v0, 0.5, method="generalized_alpha", dt=0.01)
        result = info.value.result
        assert result.status == "failed" and result.t.tolist() == [0.0] and info.value.t == pytest.approx(0.01)

