"""rm.simulate(Model3D, method="bdf") (issue 18 with issue 15's method): agreement with dop853 on a tree of free,
spherical, revolute and prismatic joints, the planar bdf's steps on a planar chain built spatially, a torque-free
body's invariants, unit quaternions, a stiff joint spring, the run's options (tau functions, elements, t_eval,
events, work terms, progress, max_steps) and a Newton failure with its partial result.

Closed loops (GGL, ``_kernels.spatial.bdf``): the planar four-bar built spatially follows the planar bdf's
trajectory, and an RSSR linkage closed by a ball joint converges to dop853 as rtol falls, with phi and J v at the
Newton tolerance at every sample.

Compile cost: two specialisations of the shared BDF loop for the spatial system (no inputs and no events; a
Python tau with events; a model with loops has the same system types as a tree), the planar one with loops
(``test_bdf.py`` compiles it) and dop853's spatial one (``test_spatial_implicit_loops.py``)."""

import numpy as np
import pytest
from _helpers import planar_chain_and_its_spatial_twin, spherical_pendulum_with_elements
from test_spatial_implicit_loops import _loop_levels, _rssr
from test_spatial_loops import _four_bar_planar, _four_bar_spatial
from test_spatial_simulate import ARM, SLIDER, _arm_with_slider

import recursive_mbd as rm
from recursive_mbd.errors import SimulationError
from recursive_mbd.integrate.spatial_loop import SpatialTimeLoop
from recursive_mbd.model.spatial_fields import quaternion_matrix


def _mixed_tree():
    """A floating base (free joint) carrying a spherical-revolute arm and a sliding body on a sprung prismatic
    joint; full inertia tensors, offset centres of mass, oblique axes."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body(joint="free", mass=2.0, inertia=(0.2, 0.3, 0.25, 0.01, 0.0, 0.02))
    model.add_body(parent=0, joint="spherical", parent_point=(0.1, 0.0, -0.2), mass=1.0,
                   inertia=(0.02, 0.03, 0.01, 0.0, 0.002, 0.0), com=(0.0, 0.05, -0.3))
    model.add_body(parent=1, joint="revolute", axis=(0.6, 0.8, 0.0), parent_point=(0.0, 0.0, -0.5), mass=0.7,
                   inertia=(0.02, 0.01, 0.015, 0.001, 0.0, 0.0), com=(0.0, 0.1, -0.3))
    model.add_body(parent=0, joint="prismatic", axis=(0.0, 0.6, 0.8), parent_point=(0.0, 0.2, 0.0), mass=0.5,
                   inertia=(0.01, 0.01, 0.01, 0.0, 0.0, 0.0), com=(0.1, 0.0, 0.0))
    model.add_joint_spring_damper(3, stiffness=40.0)
    return model


def _unnormalised_states(monkeypatch):
    """The result's q as integrated (its map to unit quaternions bypassed)."""
    monkeypatch.setattr(SpatialTimeLoop, "joint_states",
                        lambda self, t, y: (np.atleast_2d(y)[:, :self.model.nq].copy(),
                                            np.atleast_2d(y)[:, self.model.nq:self.model.nq + self.model.nv].copy()))


def test_error_falls_with_rtol_against_dop853_on_a_mixed_tree(monkeypatch):
    """Free, spherical, revolute and prismatic joints over 1 s from a random state: the end state's error against
    dop853 at rtol 1e-13 (tangent-space difference of q, and v) falls more than 10x per 100x of rtol and is below
    2e-8 at rtol 1e-10 (measured 1.5e-5, 2.8e-7, 7.2e-9); 1 to 4 Newton iterations a step; the integrated
    quaternions are unit to 1e-14 at every step (renormalised after the error test)."""
    model = _mixed_tree()
    rng = np.random.default_rng(18)
    q0 = rm.integrate_configuration(model, model.neutral(), 0.5 * rng.normal(size=model.nv))
    v0 = rng.normal(size=model.nv)
    reference = rm.simulate(model, q0, v0, 1.0, method="dop853", rtol=1e-13, atol=1e-13)
    _unnormalised_states(monkeypatch)
    errors = []
    for rtol in (1e-6, 1e-8, 1e-10):
        res = rm.simulate(model, q0, v0, 1.0, method="bdf", rtol=rtol, atol=rtol)
        assert res.t[-1] == 1.0 and res.method == "bdf"
        assert res.nsteps <= res.newton_iterations <= 4 * res.nsteps
        assert 0 < res.newton_factorizations < res.nsteps
        for start in model._quat_q:
            assert np.abs(np.linalg.norm(res.q[:, start:start + 4], axis=1) - 1.0).max() < 1e-14
        errors.append(max(np.abs(rm.difference(model, reference.q[-1], res.q[-1])).max(),
                          np.abs(res.qd[-1] - reference.qd[-1]).max()))
    assert errors[0] > 10.0 * errors[1] > 100.0 * errors[2], errors
    assert errors[2] < 2e-8


def test_planar_chain_built_as_spatial_takes_the_planar_bdf_steps():
    """serial_chain(3) rebuilt with revolute axes along z and gravity along -y: the spatial and the planar Newton
    pieces converge to the same BDF steps (same state layout, same error norm), so the runs take the same steps
    and agree to round-off (measured over 2 s, 581 steps at rtol 1e-6: 8e-14 in q, 8e-13 in v, 7e-12 s in the
    step times)."""
    planar, model, q0, qd0 = planar_chain_and_its_spatial_twin()
    a = rm.simulate(planar, q0, qd0, 2.0, method="bdf", rtol=1e-6, atol=1e-6)
    b = rm.simulate(model, q0, qd0, 2.0, method="bdf", rtol=1e-6, atol=1e-6)
    assert a.nsteps == b.nsteps and a.t.shape == b.t.shape
    assert np.abs(b.t - a.t).max() < 1e-10
    assert np.abs(b.q - a.q).max() < 1e-10 and np.abs(b.qd - a.qd).max() < 1e-9
    assert np.abs(b.q[-1] - q0).max() > 0.1  # it moved


def test_torque_free_asymmetric_body_keeps_energy_and_angular_momentum(monkeypatch):
    """Dzhanibekov's flip over 20 s at rtol = atol = 1e-10: T = omega . I omega / 2 and the angular momentum
    R I omega (ground axes) stay constant to 2e-8 relative (measured 4.1e-9 and 3.3e-9: the global error of the
    tolerance), the spin reverses, the integrated quaternions are unit to 1e-14."""
    _unnormalised_states(monkeypatch)
    inertia = np.diag([1.0, 2.0, 3.0])
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="spherical", mass=2.0, inertia=(1.0, 2.0, 3.0, 0.0, 0.0, 0.0))
    res = rm.simulate(model, model.neutral(), np.array([1e-3, 2.0, 1e-3]), 20.0, method="bdf", rtol=1e-10,
                      atol=1e-10)
    omega = res.qd
    kinetic = 0.5 * np.einsum("ti,ij,tj->t", omega, inertia, omega)
    momentum = np.einsum("tij,jk,tk->ti", np.array([quaternion_matrix(row) for row in res.q]), inertia, omega)
    assert np.abs(kinetic / kinetic[0] - 1.0).max() < 2e-8
    assert np.linalg.norm(momentum - momentum[0], axis=1).max() < 2e-8 * np.linalg.norm(momentum[0])
    assert np.abs(np.linalg.norm(res.q, axis=1) - 1.0).max() < 1e-14
    assert omega[:, 1].min() < -1.99  # the flip


def test_stiff_joint_spring_takes_far_fewer_steps_than_dopri5():
    """A 4-link spatial pendulum (spherical and revolute joints) with an overdamped joint spring-damper (1e6 N m/rad,
    3e3 N m s/rad) on a revolute: bdf steps at the slow motion's accuracy (spring and damper exact in the Newton
    matrix), dopri5 at its stability limit (measured 93 against 7,172 steps over 0.2 s); the end state agrees with
    dop853 at tight tolerance to a few tolerances (measured 1.0e-7 in q, 1.7e-6 in v, |v| up to 1.75)."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    for i in range(4):
        model.add_body(parent=i - 1, joint="revolute" if i % 2 else "spherical",
                       axis=(1.0, 0.0, 0.0) if i % 2 else None, parent_point=(0.0, 0.0, -0.5 if i else 0.0), mass=1.0,
                       inertia=(0.02, 0.02, 0.005, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.25))
    model.add_joint_spring_damper(1, stiffness=1e6, damping=3e3)
    q0 = rm.integrate_configuration(model, model.neutral(), [0.3, 0.1, 0.0, 0.0, -0.2, 0.2, 0.1, 0.05])
    v0 = np.zeros(model.nv)
    ours = rm.simulate(model, q0, v0, 0.2, method="bdf", rtol=1e-6, atol=1e-8)
    explicit = rm.simulate(model, q0, v0, 0.2, method="dopri5", rtol=1e-6, atol=1e-8)
    reference = rm.simulate(model, q0, v0, 0.2, method="dop853", rtol=1e-11, atol=1e-12)
    assert ours.nsteps * 50 < explicit.nsteps
    assert ours.newton_iterations <= 4 * ours.nsteps
    assert np.abs(rm.difference(model, reference.q[-1], ours.q[-1])).max() < 1e-6
    assert np.abs(ours.qd[-1] - reference.qd[-1]).max() < 1e-5


def test_stiff_spherical_joint_spring_never_gains_energy():
    """A body on a spherical joint with an undamped stiff spring (omega = 1e5 rad/s), 1e-3 rad off about a skew
    axis, at orders 1-2 (A-stable) and a loose tolerance, from a first step of h omega = 100: the energy never
    exceeds the start (the Newton iteration, sharing generalized_alpha's matrix, finds the physical step, not one
    turned by whole turns) and falls below 1e-20 of it by 0.02 s."""
    inertia, omega = 0.01, 1e5
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="spherical", mass=1.0, inertia=inertia)
    model.add_joint_spring_damper(0, stiffness=inertia * omega**2)
    q0 = rm.integrate_configuration(model, model.neutral(), 1e-3 * np.array([1.0, 2.0, 2.0]) / 3.0)
    res = rm.simulate(model, q0, np.zeros(3), 0.02, method="bdf", rtol=1e-2, atol=1e-2, max_order=2,
                      first_step=1e-3)
    energy = np.array([rm.element_forces(model, q, v)["potential"] + 0.5 * inertia * v @ v
                       for q, v in zip(res.q, res.qd, strict=True)])
    assert energy.max() <= energy[0] * (1.0 + 1e-12)
    assert energy[-1] < 1e-20 * energy[0]


def test_tau_function_elements_t_eval_events_work_terms_and_progress():
    """A spherical pendulum with a point spring-damper to the ground, a damper on its joint and a tau(t)
    function, sampled at t_eval with a progress bar: samples and events (omega_x crossing zero) agree with
    dopri5 at rtol 1e-12 to 1e-7, the work terms close the energy balance to 1e-7 J; a terminal event ends the
    run at its time."""
    model, q0, v0, tau, crossing, t_eval, reference = spherical_pendulum_with_elements()
    res = rm.simulate(model, q0, v0, 2.0, method="bdf", rtol=1e-10, atol=1e-10, tau=tau, t_eval=t_eval,
                      events=crossing, progress=True)
    assert np.array_equal(res.t, reference.t)
    error = max(np.abs(rm.difference(model, a, b)).max() for a, b in zip(res.q, reference.q, strict=True))
    assert error < 1e-7 and np.abs(res.qd - reference.qd).max() < 1e-7
    assert len(res.t_events[0]) == len(reference.t_events[0]) >= 2
    assert np.abs(res.t_events[0] - reference.t_events[0]).max() < 1e-7
    balance = res.energy_balance()
    assert np.abs(balance - balance[0]).max() < 1e-7
    assert abs(res.dissipated_work[-1]) > 1e-2 and abs(res.applied_work).max() > 1e-3  # both terms at work
    crossing.terminal = True
    stopped = rm.simulate(model, q0, v0, 2.0, method="bdf", rtol=1e-10, atol=1e-10, tau=tau, events=crossing)
    assert stopped.status == "event"
    assert stopped.t[-1] == pytest.approx(reference.t_events[0][0], abs=1e-7)


def test_newton_failure_at_the_smallest_step_keeps_the_samples():
    """Coulomb friction far above the weight on a revolute pendulum (tau(t, q, v) = -100 sign(v)): once it sticks
    the implicit equation has no solution, the steps shrink to the smallest and the run raises SimulationError
    naming the time and the cause, with the samples up to the last accepted step in .result."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body(joint="revolute", axis=(1.0, 0.0, 0.0), mass=1.0, inertia=(0.02, 0.02, 0.02, 0.0, 0.0, 0.0),
                   com=(0.0, 0.0, -0.5))

    def friction(t, q, v):
        return np.array([-100.0 * np.sign(v[0])])

    def reversal(t, q, v):  # a velocity reversal (never reached: it sticks)
        return v[0] + 1.0

    with pytest.raises(SimulationError, match=r"bdf failed at t = .*Newton did not converge at the smallest step") \
            as caught:
        rm.simulate(model, [0.3], [2.0], 1.0, method="bdf", rtol=1e-6, atol=1e-9, tau=friction, events=reversal)
    err = caught.value
    assert err.result.status == "failed"
    assert err.result.t.size >= 2 and err.result.t[-1] <= err.t < 1.0
    assert np.all(err.result.qd[:, 0] > -1e-9) and abs(err.result.qd[-1, 0]) < 1e-6  # it slid until it stuck


def test_max_steps_is_refused_with_the_samples_so_far():
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body(joint="spherical", mass=1.0, inertia=(0.02, 0.03, 0.01, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5))
    with pytest.raises(SimulationError, match="max_steps") as caught:
        rm.simulate(model, model.neutral(), np.array([1.0, 0.0, 0.5]), 10.0, method="bdf", max_steps=20)
    assert caught.value.result.t.size >= 2


def test_four_bar_built_spatially_follows_the_planar_bdf_with_its_loop_closed():
    """The planar four-bar and its spatial twin (revolute loop, 5 equations, three identically satisfied by a
    planar motion: zero minimum-norm multipliers) from the same first step: the same steps and Newton iterations
    (measured: equal counts), and the same trajectory at t_eval to a small multiple of the tolerance (the two
    Newton matrices lag different terms, so the converged steps differ below the Newton tolerance; measured
    4e-11 rad, 5e-10 rad/s at rtol 1e-8, 1050 steps). At the t_eval samples (the interpolant's, between steps)
    the loop rows hold to 1e-2 rtol (measured |phi| 2e-11 m, |J v| 6e-10 m/s)."""
    planar, spatial = _four_bar_planar(), _four_bar_spatial()
    q0 = rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])
    _, _, jac, _ = rm.loops.constraints(planar, q0)
    qd0 = np.linalg.svd(jac)[2][-1] * 2.5  # the mechanism's one motion
    t_eval = np.linspace(0.0, 2.0, 41)
    options = {"method": "bdf", "rtol": 1e-8, "atol": 1e-10, "first_step": 1e-4, "t_eval": t_eval}
    reference = rm.simulate(planar, q0, qd0, 2.0, **options)
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 5"):
        result = rm.simulate(spatial, q0, qd0, 2.0, **options)
    assert np.ptp(reference.q[:, 0]) > 1.0
    assert result.nsteps == reference.nsteps and result.newton_iterations == reference.newton_iterations
    np.testing.assert_allclose(result.q, reference.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(result.qd, reference.qd, rtol=0, atol=1e-8)
    phi, rate = _loop_levels(spatial, result)  # at t_eval: the interpolant's, not the steps'
    assert phi < 1e-2 * options["rtol"] and rate < 1e-1 * options["rtol"], (phi, rate)


def test_rssr_loop_converges_to_dop853_as_rtol_falls_with_the_loop_closed_at_every_sample():
    """RSSR with a ball-joint loop from a random admissible velocity for 1 s, against dop853 (rtol 1e-12, the
    explicit route's multiplier layer with projection): the error at t = 1 s (tangent-space difference and v)
    falls by more than 30 each time rtol = atol falls 100-fold (measured 2.6e-3, 3.1e-5, 5.3e-7 at rtol 1e-5,
    1e-7, 1e-9) and phi, J v are below the Newton tolerance at every step (measured |phi| 8e-10, 5e-13, 1e-15 m;
    |J v| 8e-8, 2.5e-10, 3e-14 m/s)."""
    model, q0 = _rssr()
    v0 = 2.0 * np.random.default_rng(3).normal(size=model.nv)  # projected onto J v = 0 by simulate
    reference = rm.simulate(model, q0, v0, 1.0, method="dop853", rtol=1e-12, atol=1e-12)
    errors = []
    for rtol in (1e-5, 1e-7, 1e-9):
        result = rm.simulate(model, q0, v0, 1.0, method="bdf", rtol=rtol, atol=rtol)
        assert result.t[-1] == 1.0
        errors.append(max(np.abs(rm.difference(model, reference.q[-1], result.q[-1])).max(),
                          np.abs(result.qd[-1] - reference.qd[-1]).max()))
        phi, rate = _loop_levels(model, result)
        # the Newton tolerance sqrt(rtol) in units of the error tolerance (``_kernels.planar.bdf``)
        assert phi < np.sqrt(rtol) * rtol and rate < 100.0 * np.sqrt(rtol) * rtol, (rtol, phi, rate)
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(ratios > 30.0), (errors, ratios)
    assert errors[-1] < 1e-6


# ---- drivers ----------------------------------------------------------------------------------------------------

def test_planar_chain_built_as_spatial_with_a_driver_takes_the_planar_bdf_steps():
    """serial_chain(3) and its spatial twin with the middle joint driven (prescribed angle, its joint locked in the
    Newton matrix, the driven coordinate outside the integrated state on both routes), from the same first step: the
    same BDF steps and Newton iterations, the trajectories, driving torques and applied work the same far below the
    tolerance (measured over 2 s at rtol 1e-6, 225 steps: 2.1e-11 s in the step times, 7.7e-11 rad, 5.7e-10 rad/s,
    2.5e-10 N m; without the driver the two agree to 8e-14, the driven runs' difference not traced further). From
    each route's own starting-step estimate the first steps differ by 1.4e-8 relative (the two filters of the first
    change differ with the driver, not traced), and the states then differ by the motion over that shift (8.4e-10
    rad), which is why both runs are given the first step."""
    planar, model, q0, qd0 = planar_chain_and_its_spatial_twin()
    drivers = {1: (lambda t: 0.4 * np.sin(3.0 * t) - 0.5, lambda t: 1.2 * np.cos(3.0 * t),
                   lambda t: -3.6 * np.sin(3.0 * t))}
    options = {"method": "bdf", "rtol": 1e-6, "atol": 1e-6, "first_step": 1e-4, "drivers": drivers}
    a = rm.simulate(planar, q0, qd0, 2.0, **options)
    b = rm.simulate(model, q0, qd0, 2.0, **options)
    assert a.nsteps == b.nsteps and a.newton_iterations == b.newton_iterations
    assert np.abs(b.t - a.t).max() < 1e-10
    assert np.abs(b.q - a.q).max() < 1e-10 and np.abs(b.qd - a.qd).max() < 1e-9
    np.testing.assert_array_equal(b.q[:, 1], drivers[1][0](b.t))
    forces = a.driving_forces()
    assert np.abs(forces[:, 1]).max() > 1.0
    assert np.abs(b.driving_forces() - forces).max() < 1e-8
    assert np.abs(b.applied_work - a.applied_work).max() < 1e-8
    assert np.abs(b.q[-1] - q0).max() > 0.1  # it moved


def test_drivers_with_quaternions_converge_to_dopri5_as_rtol_falls():
    """The spherical-revolute-prismatic chain with its revolute and prismatic joints driven (the spherical root
    free: quaternion rows in y beside the driven coordinates left out) over 1 s against dopri5 at rtol 1e-12: the
    error of the free state, of the driving forces and of the applied work at the samples, and the energy balance
    (the drivers' work in applied_work), fall more than 10x per 100x of rtol (measured: q 4.3e-6, 8.4e-8, 2.2e-9;
    v 1.4e-5, 2.6e-7, 5.9e-9; driving forces 6.8e-6, 1.1e-7, 2.6e-9; energy balance 1.5e-5, 5.7e-7, 1.4e-8); the
    driven coordinates and rates are their drivers' values at every sample, the quaternions are unit."""
    model = _arm_with_slider()
    q0, v0 = model.neutral(), np.array([0.5, -0.4, 1.0, 0.0, 0.0])
    drivers = {"arm": ARM, "slider": SLIDER}
    t_eval = np.linspace(0.0, 1.0, 6)
    reference = rm.simulate(model, q0, v0, 1.0, rtol=1e-12, atol=1e-12, drivers=drivers, t_eval=t_eval)
    forces = reference.driving_forces()
    errors = []
    for rtol in (1e-6, 1e-8, 1e-10):
        res = rm.simulate(model, q0, v0, 1.0, method="bdf", rtol=rtol, atol=rtol, drivers=drivers, t_eval=t_eval)
        for body, driver in (("arm", ARM), ("slider", SLIDER)):
            np.testing.assert_array_equal(res.q[:, model.q_slice(body).start], [driver[0](t) for t in res.t])
            np.testing.assert_array_equal(res.qd[:, model.v_slice(body).start], [driver[1](t) for t in res.t])
        assert np.abs(np.linalg.norm(res.q[:, :4], axis=1) - 1.0).max() < 1e-14
        errors.append((max(np.abs(rm.difference(model, q, r)).max() for q, r in zip(res.q, reference.q, strict=True)),
                       np.abs(res.qd - reference.qd).max(), np.abs(res.driving_forces() - forces).max(),
                       np.abs(res.applied_work - reference.applied_work).max(), np.abs(res.energy_balance()).max()))
    errors = np.array(errors)
    assert np.all(errors[:-1] > 10.0 * errors[1:]), errors
    assert errors[-1, :4].max() < 1e-8 and errors[-1, 4] < 3e-8, errors
    assert np.abs(reference.energy_balance()).max() < 1e-9 * max(1.0, np.abs(reference.applied_work).max())
    assert np.abs(forces[:, [3, 4]]).max() > 0.1 and np.abs(reference.applied_work).max() > 0.1
