"""rm.simulate on spatial models with closed loops (issue 18 item 3): the multiplier layer in the time loops, the
mass-orthogonal projection after accepted steps, the drift in the result, against the same mechanisms integrated
another way (the governor's reduced equations of its open tree, the planar four-bar by the planar route)."""

import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from test_spatial_loops import _four_bar_planar, _four_bar_spatial

import recursive_mbd as rm
from recursive_mbd.dynamics import spatial_loops
from recursive_mbd.errors import SimulationError, StateError


def _energy(model, result):
    return np.array([sum(rm.energy(model, q, v)) for q, v in zip(result.q, result.qd, strict=True)])


def _governor_reference(governor, phi0, phi_rate0, omega0, times):
    """The closed governor's symmetric motion from its open tree: coordinates x = (spindle angle, arm angle phi),
    q = Governor.q(phi, psi), v = T x' with T = (e_spindle, dq/dphi); the massless links do no work along T, so
    T^T M T x'' = -T^T (h(q, v) + M t' phi'^2) (t' = d^2 q / d phi^2 by a complex step). No loop layer involved."""
    tree = governor.model

    def tangent(phi):
        return np.column_stack((np.eye(4)[0], governor.dq_dphi(phi)))

    def rhs(t, x):
        psi, phi, psi_rate, phi_rate = x
        q, basis = governor.q(phi, psi), tangent(phi)
        v = basis @ np.array([psi_rate, phi_rate])
        curvature = governor.dq_dphi(phi + 1e-30j).imag / 1e-30
        mass = rm.mass_matrix(tree, q)
        force = -basis.T @ (rm.bias_forces(tree, q, v) + mass @ curvature * phi_rate**2)
        return np.concatenate(([psi_rate, phi_rate], np.linalg.solve(basis.T @ mass @ basis, force)))

    sol = solve_ivp(rhs, (times[0], times[-1]), [0.0, phi0, omega0, phi_rate0], method="DOP853", rtol=1e-13,
                    atol=1e-14, t_eval=times)
    q = np.array([governor.q(phi, psi) for psi, phi in sol.y[:2].T])
    v = np.array([tangent(phi) @ rates for phi, rates in zip(sol.y[1], sol.y[2:].T, strict=True)])
    return q, v


def test_closed_governor_moves_as_its_open_tree_with_the_links_as_a_configuration_map():
    closed = rm.models.centrifugal_governor(arm=0.2, link=0.25, closed=True)
    governor = rm.models.centrifugal_governor(arm=0.2, link=0.25)
    phi0, rate0, omega0 = 0.6, 0.8, 8.0
    times = np.linspace(0.0, 1.5, 31)
    q0 = governor.q(phi0)
    v0 = np.array([omega0, 0.0, 0.0, 0.0]) + governor.dq_dphi(phi0) * rate0
    result = rm.simulate(closed.model, q0, v0, times[-1], rtol=1e-12, atol=1e-13, t_eval=times)
    q_ref, v_ref = _governor_reference(governor, phi0, rate0, omega0, times)
    assert np.ptp(q_ref[:, 1]) > 0.1  # the arms swing: a real test of the loop forces
    np.testing.assert_allclose(result.q, q_ref, rtol=0, atol=1e-8)
    np.testing.assert_allclose(result.qd, v_ref, rtol=0, atol=1e-8 * np.abs(v_ref).max())
    # no work by the loop forces: energy kept; they are internal to the spindle, so its momentum (M v)_0 is kept
    energy = _energy(closed.model, result)
    np.testing.assert_allclose(energy, energy[0], rtol=1e-10)
    momentum = np.array([(rm.mass_matrix(closed.model, q) @ v)[0] for q, v in zip(result.q, result.qd, strict=True)])
    np.testing.assert_allclose(momentum, momentum[0], rtol=1e-10)
    assert result.constraint_drift.shape == times.shape
    assert result.constraint_drift.max() < 1e-12
    np.testing.assert_allclose(result.energy_balance(), 0.0, atol=1e-10 * abs(energy[0]))


def test_planar_four_bar_built_spatially_simulates_as_the_planar_route():
    planar, spatial = _four_bar_planar(), _four_bar_spatial()
    q0 = rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])
    _, _, jac, _ = rm.loops.constraints(planar, q0)
    qd0 = np.linalg.svd(jac)[2][-1] * 2.5  # the mechanism's one motion
    times = np.linspace(0.0, 2.0, 41)
    reference = rm.simulate(planar, q0, qd0, times[-1], rtol=1e-12, atol=1e-13, t_eval=times)
    # the spatial revolute loop's out-of-plane equations hold identically in a planar motion: redundant
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 5"):
        result = rm.simulate(spatial, q0, qd0, times[-1], rtol=1e-12, atol=1e-13, t_eval=times)
    assert np.ptp(reference.q[:, 0]) > 1.0
    np.testing.assert_allclose(result.q, reference.q, rtol=0, atol=1e-8)
    np.testing.assert_allclose(result.qd, reference.qd, rtol=0, atol=1e-8 * np.abs(reference.qd).max())
    energy = _energy(spatial, result)
    np.testing.assert_allclose(energy, energy[0], rtol=1e-10)
    assert result.constraint_drift.max() < 1e-12


def test_a_spatial_rssr_linkage_keeps_energy_and_its_loop_under_every_stabilization():
    # a genuinely spatial closure: the planar four-bar's coupler tied to the rocker by a massless distance link
    model = _four_bar_spatial(loop="distance")
    q0 = rm.assemble(model, np.array([0.9, -0.7, 1.6]), fixed=[0])
    _, _, jac, _ = spatial_loops.constraints(model, q0)
    v0 = np.linalg.svd(jac)[2][-1] * 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one independent equation: no redundancy warning
        projected = rm.simulate(model, q0, v0, 1.0, rtol=1e-11, atol=1e-12)
    free = rm.simulate(model, q0, v0, 1.0, rtol=1e-11, atol=1e-12, stabilization="none")
    baumgarte = rm.simulate(model, q0, v0, 1.0, method="scipy:DOP853", rtol=1e-11, atol=1e-12,
                            stabilization="baumgarte", alpha=5.0, beta=5.0)
    for result in (projected, free, baumgarte):
        energy = _energy(model, result)
        np.testing.assert_allclose(energy, energy[0], rtol=1e-8)
        np.testing.assert_allclose(result.q[-1], projected.q[-1], rtol=0, atol=1e-7)
    assert projected.constraint_drift.max() < 1e-12 < free.constraint_drift.max() < 1e-8


def test_a_start_off_the_loops_is_refused_and_a_loose_one_projected():
    closed = rm.models.centrifugal_governor(closed=True)
    q0 = closed.q(0.5)
    q0[3] += 1e-3  # the sleeve off its links
    with pytest.raises(StateError, match=r"q0 does not close the loops .*loop 'link1'.*rm.assemble"):
        rm.simulate(closed.model, q0, np.zeros(4), 0.1)
    q0 = closed.q(0.5)
    q0[3] += 1e-8
    v0 = np.array([8.0, 0.1, 0.0, 0.0])  # not admissible: the sleeve must move with the arms
    result = rm.simulate(closed.model, q0, v0, 0.05, rtol=1e-10)
    _, phid, _, _ = spatial_loops.constraints(closed.model, result.q[0], result.qd[0])
    assert result.constraint_drift[0] < 1e-12 and np.abs(phid).max() < 1e-12
    with pytest.raises(ValueError, match="projection runs inside the numba integrators"):
        rm.simulate(closed.model, closed.q(0.5), np.zeros(4), 0.1, method="scipy:RK45", stabilization="projection")


def test_a_spatial_run_through_a_change_point_stops_there_naming_the_loop_with_its_energy_kept():
    # The closed governor (arm = link = a) spun at 100 rad/s: its arms fly out to 90 degrees, where the sleeve,
    # 2 a cos(phi) below the pivot, reaches the pivot. There the branch "sleeve at the pivot, arms free" crosses the
    # mechanism's own, and both links' rows of J vanish at once (J M^-1 J^T shrinks as a whole: its condition stays
    # near 1). The loop layer would lose half the energy in one step; it stops there instead.
    closed = rm.models.centrifugal_governor(closed=True)
    q0 = closed.q(0.7)
    v0 = np.array([100.0, 0.0, 0.0, 0.0])
    for method, options in (("dopri5", {"rtol": 1e-10}), ("rk4", {"dt": 1e-4})):
        with pytest.raises(SimulationError, match=r"failed at t = 0\.04[67]\d* s: the mechanism reaches a singular "
                                                  r"position .*loop 'link[12]'.*does not follow") as failure:
            rm.simulate(closed.model, q0, v0, 0.1, method=method, **options)
        result = failure.value.result
        assert result.status == "failed" and 0.045 < result.t[-1] <= failure.value.t + 1e-12
        assert 1.5 < result.q[-1, 1] < np.pi / 2  # up to the singular position, not through it
        total = np.sum(result.energy(), axis=0)
        assert np.abs(result.energy_balance()).max() < 1e-8 * total[0]
    # well clear of it (10 rad/s: the arms swing in) the run goes on
    assert rm.simulate(closed.model, q0, np.array([10.0, 0.0, 0.0, 0.0]), 0.05).status == "finished"
