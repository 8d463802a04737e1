"""rm.simulate on spatial models (issue 18 item 3): closed forms of rigid-body motion, the work terms, unit
quaternions in the result, bad input and failures with partial results."""

import math
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest
from _helpers import planar_chain_and_its_spatial_twin
from test_spatial_implicit_loops import _loop_levels, _rssr
from test_spatial_loops import _four_bar_planar, _four_bar_spatial

import recursive_mbd as rm
from recursive_mbd._kernels import layout as L
from recursive_mbd._kernels.spatial.system import project_state, projects
from recursive_mbd._kernels.timeloops import integrators
from recursive_mbd.dynamics import spatial as spatial_dynamics
from recursive_mbd.errors import ModelError, SimulationError, StateError
from recursive_mbd.integrate.result import SimulationResult
from recursive_mbd.integrate.spatial_loop import SpatialTimeLoop, _SpatialInputs
from recursive_mbd.model.spatial_fields import quaternion_matrix


def _rigid_body(joint, inertia=(1.0, 2.0, 3.0, 0.0, 0.0, 0.0), mass=2.0, gravity=(0.0, 0.0, 0.0), com=(0, 0, 0)):
    model = rm.Model3D(gravity=gravity)
    model.add_body(joint=joint, mass=mass, inertia=inertia, com=com, name="body")
    return model


def _rotations(model, q):
    """Body-to-ground rotation of body 0 at every sample, from its quaternion (w, x, y, z) directly."""
    start = int(model._quat_q[0])
    return np.array([quaternion_matrix(row[start:start + 4]) for row in q])


@pytest.mark.parametrize("joint", ["spherical", "free"])
def test_torque_free_body_keeps_energy_and_momentum_and_flips(joint):
    """Dzhanibekov: a spin about the intermediate principal axis, slightly perturbed, reverses again and again;
    T = omega . I omega / 2 and the angular momentum R I omega (ground axes) stay constant to 1e-10 over 100 s."""
    inertia = np.diag([1.0, 2.0, 3.0])
    model = _rigid_body(joint)
    spin = 2.0
    omega0 = np.array([1e-3, spin, 1e-3])
    q0 = model.neutral()
    v0 = np.zeros(model.nv)
    v0[-3:] = omega0
    if joint == "free":
        q0[:3] = (0.5, -1.0, 2.0)
        v0[:3] = (0.3, 0.1, -0.2)  # drifts in a straight line: no force
    res = rm.simulate(model, q0, v0, 100.0, method="dop853", rtol=1e-12, atol=1e-12, every=5)
    omega = res.qd[:, -3:]
    kinetic = 0.5 * np.einsum("ti,ij,tj->t", omega, inertia, omega)
    momentum = np.einsum("tij,jk,tk->ti", _rotations(model, res.q), inertia, omega)
    assert res.t[-1] == 100.0
    assert np.abs(kinetic / kinetic[0] - 1.0).max() < 1e-10
    assert np.linalg.norm(momentum - momentum[0], axis=1).max() < 1e-10 * np.linalg.norm(momentum[0])
    rotational = res.energy()[0] - 0.5 * 2.0 * np.sum(res.qd[:, :3] ** 2, axis=1) * (joint == "free")
    assert np.allclose(rotational, kinetic, rtol=1e-12, atol=0.0)  # rm.energy agrees with omega . I omega / 2
    assert omega[:, 1].min() < -0.99 * spin and omega[:, 1].max() > 0.99 * spin  # the flip, and back
    if joint == "free":
        assert np.allclose(res.q[:, :3], q0[:3] + np.outer(res.t, v0[:3]), rtol=0.0, atol=1e-9)


def test_conical_pendulum_of_a_rod_stays_on_its_cone():
    """A uniform rod (length L, radius r) on a spherical joint at its end, turning steadily about the vertical at
    angle alpha: Omega^2 (A - C) cos(alpha) = m g L / 2 (A, C its moments about the pivot, across and along it);
    the rod's direction is (sin a cos Omega t, sin a sin Omega t, -cos a) at every sample."""
    mass, length, radius, g, alpha = 1.5, 0.8, 0.02, 9.81, 0.6
    across_com = mass * (3 * radius ** 2 + length ** 2) / 12
    along = mass * radius ** 2 / 2
    model = rm.Model3D(gravity=(0.0, 0.0, -g))
    model.add_body(joint="spherical", mass=mass, inertia=(across_com, across_com, along, 0, 0, 0),
                   com=(0.0, 0.0, -length / 2))
    across = across_com + mass * (length / 2) ** 2
    rate = math.sqrt(mass * g * length / (2 * (across - along) * math.cos(alpha)))
    q0 = np.array([math.cos(alpha / 2), 0.0, -math.sin(alpha / 2), 0.0])  # Rot_y(-alpha): -z to (sin a, 0, -cos a)
    v0 = rate * np.array([math.sin(alpha), 0.0, math.cos(alpha)])  # Omega z in the child frame
    t_end = 4 * 2 * math.pi / rate
    res = rm.simulate(model, q0, v0, t_end, method="dop853", rtol=1e-12, atol=1e-12)
    direction = -_rotations(model, res.q)[:, :, 2]
    expected = np.column_stack((math.sin(alpha) * np.cos(rate * res.t), math.sin(alpha) * np.sin(rate * res.t),
                                np.full(res.t.size, -math.cos(alpha))))
    assert np.abs(direction - expected).max() < 1e-9
    # the same tilt with 1 % more rate leaves the cone: the closed form is what holds it there
    res_off = rm.simulate(model, q0, 1.01 * v0, t_end, method="dop853", rtol=1e-12, atol=1e-12)
    assert np.abs(-_rotations(model, res_off.q)[:, 2, 2] + math.cos(alpha)).max() > 1e-3


def test_heavy_top_steady_precession_holds_its_nutation_angle():
    """Symmetric top (moments A across, C along its axis at the centre of mass, which is l up the axis from the
    pivot) at nutation angle theta from the upward vertical, spin omega3 about its axis: it precesses steadily at
    phi' with m g l = phi' (C omega3 - A_pivot phi' cos theta) (Goldstein 5.7), the slow root."""
    mass, arm, a_com, c_axis, g, theta, omega3 = 0.5, 0.04, 2e-4, 3e-4, 9.81, 0.5, 150.0
    model = rm.Model3D(gravity=(0.0, 0.0, -g))
    model.add_body(joint="spherical", mass=mass, inertia=(a_com, a_com, c_axis, 0, 0, 0), com=(0.0, 0.0, arm))
    a_pivot = a_com + mass * arm ** 2
    cos_t = math.cos(theta)
    disc = (c_axis * omega3) ** 2 - 4 * a_pivot * cos_t * mass * g * arm
    precession = (c_axis * omega3 - math.sqrt(disc)) / (2 * a_pivot * cos_t)
    spin = omega3 - precession * cos_t  # psi', omega3 = psi' + phi' cos(theta)
    q0 = np.array([math.cos(theta / 2), math.sin(theta / 2), 0.0, 0.0])  # Rot_x(theta)
    v0 = np.array([0.0, precession * math.sin(theta), precession * cos_t + spin])  # phi' R^T z + psi' e3
    t_end = 2 * 2 * math.pi / precession
    res = rm.simulate(model, q0, v0, t_end, method="dop853", rtol=1e-12, atol=1e-12, every=4)
    axis = _rotations(model, res.q)[:, :, 2]
    assert np.abs(axis[:, 2] - cos_t).max() < 1e-9  # the nutation angle holds
    azimuth = np.unwrap(np.arctan2(axis[:, 1], axis[:, 0]))  # starts at -pi/2: Rot_x(theta) z = (0, -s, c)
    assert np.abs(azimuth - (-math.pi / 2 + precession * res.t)).max() < 1e-8


def test_energy_balance_with_tau_functions():
    """A spherical-revolute-free chain in gravity driven by tau(t, q, v) (damping and a time-varying torque)
    and by tau(t): E(t) - E(t0) = applied work to 1e-9 of the work done, the applied work not small."""
    model = rm.Model3D(gravity=(0.0, -3.0, -9.81))
    root = model.add_body(joint="spherical", mass=1.0, inertia=(0.1, 0.2, 0.25, 0.01, -0.02, 0.03),
                          com=(0.1, 0.0, -0.3))
    arm = model.add_body(parent=root, joint="revolute", parent_point=(0.1, 0.0, -0.5), axis=(0.3, 1.0, 0.2),
                         mass=0.7, inertia=(0.05, 0.04, 0.06, 0, 0, 0), com=(0.0, 0.0, -0.2))
    model.add_body(parent=arm, joint="prismatic", parent_point=(0.0, 0.1, -0.3), axis=(1.0, 0.0, 1.0), mass=0.4,
                   inertia=0.01)
    q0 = model.neutral()
    v0 = np.linspace(-1.0, 1.0, model.nv)

    def controller(t, q, v):
        assert abs(np.linalg.norm(q[:4]) - 1.0) < 1e-15  # the controller sees unit quaternions
        return -0.3 * v + np.sin(3.0 * t) * np.arange(1.0, model.nv + 1)

    def schedule(t):
        return np.full(model.nv, 0.5 * math.cos(t))

    for tau in (controller, schedule):
        res = rm.simulate(model, q0, v0, 2.0, rtol=1e-11, atol=1e-11, tau=tau)
        assert np.all(res.dissipated_work == 0.0)
        assert np.abs(res.applied_work).max() > 0.1
        assert np.abs(res.energy_balance()).max() < 1e-9 * np.abs(res.applied_work).max()


def test_quaternions_in_the_result_are_unit_and_q0_is_checked():
    model = _rigid_body("free", gravity=(0.0, 0.0, -9.81))
    q0 = model.neutral()
    v0 = np.array([1.0, 0.0, 5.0, 3.0, -7.0, 11.0])
    t_eval = np.linspace(0.0, 1.0, 37)  # dense output between the projected steps
    for method, options in (("dopri5", {"t_eval": t_eval, "rtol": 1e-6, "atol": 1e-6}), ("rk4", {"dt": 0.01}),
                            ("implicit_midpoint", {"dt": 0.01})):
        res = rm.simulate(model, q0, v0, 1.0, method=method, **options)
        assert np.abs(np.linalg.norm(res.q[:, 3:7], axis=1) - 1.0).max() < 4e-16
        assert res.q.shape == (res.t.size, 7) and res.qd.shape == (res.t.size, 6)
    # free fall of the centre of mass at its origin, whatever the spin
    assert np.allclose(res.q[-1, :3], [1.0, 0.0, 5.0 - 9.81 / 2], rtol=0.0, atol=1e-12)
    off = q0.copy()
    off[3:7] = (2.0, 0.0, 0.0, 0.0)
    message = r"q0\[3:7\], the quaternion of body 'body' \(index 0\).*norm 2\.0"
    with pytest.warns(RuntimeWarning, match=message) as caught:
        res = rm.simulate(model, off, v0, 0.1)
    assert caught[0].filename == __file__  # the warning names the caller's line, not one inside the package
    assert np.allclose(res.q[0], q0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rm.simulate(model, q0 * (1 + 5e-13), v0, 0.01)  # within 1e-12: silent
    off[3:7] = (0.0, 0.0, -1e155, 0.0)  # finite, but the squares of its norm overflow: it was divided by inf to 0
    with pytest.warns(RuntimeWarning, match=r"q0\[3:7\].*norm inf"):
        res = rm.simulate(model, off, v0, 0.1, method="generalized_alpha", dt=0.01)  # it raised IndexError
    np.testing.assert_array_equal(res.q[0, 3:7], [0.0, 0.0, -1.0, 0.0])
    off[3:7] = 0.0
    with pytest.raises(StateError, match=r"q0\[3:7\], the quaternion of body 'body' \(index 0\), is zero"):
        rm.simulate(model, off, v0, 0.1)
    off[3:7] = (1.0, np.nan, 0.0, 0.0)
    with pytest.raises(StateError, match=r"q0\[4\] is not finite"):
        rm.simulate(model, off, v0, 0.1)
    with pytest.raises(StateError, match=r"qd0 must have shape \(6,\)"):
        rm.simulate(model, q0, np.zeros(7), 0.1)
    with pytest.raises(StateError, match=r"tau must have shape \(6,\) for this model \(nv = 6\)"):
        rm.simulate(model, q0, v0, 0.1, tau=np.zeros(7))


def test_failure_keeps_the_samples_so_far():
    model = _rigid_body("spherical", gravity=(0.0, 0.0, -9.81), com=(0.0, 0.0, -0.5))

    def tau(t, q, v):
        if t > 0.5:
            raise RuntimeError("actuator lost")
        return np.zeros(3)

    with pytest.raises(SimulationError, match=r"failed at t = 0\.5.*actuator lost") as info:
        rm.simulate(model, model.neutral(), np.array([1.0, 0.0, 0.0]), 2.0, tau=tau, rtol=1e-8, atol=1e-8)
    result = info.value.result
    assert result.status == "failed"
    assert 0.0 < result.t[-1] <= 0.5 < info.value.t
    assert result.q.shape == (result.t.size, 4) and np.all(np.isfinite(result.q))


@numba.njit
def _compiled_tau_losing_its_actuator(t, q, v):
    if t > 0.5:
        raise RuntimeError("actuator lost")
    return np.zeros(3)


@pytest.mark.parametrize("method", ["dopri5", "generalized_alpha"])
def test_a_compiled_tau_that_raises_stops_the_run_with_its_exception(method):
    model = _rigid_body("spherical", gravity=(0.0, 0.0, -9.81), com=(0.0, 0.0, -0.5))
    options = {"dt": 1e-3} if method == "generalized_alpha" else {"rtol": 1e-8, "atol": 1e-8}
    with pytest.raises(SimulationError, match=r"failed at t = 0\.5.*'_compiled_tau_losing_its_actuator' raised "
                       r"at t = 0\.5.*actuator lost") as info:
        rm.simulate(model, model.neutral(), np.array([1.0, 0.0, 0.0]), 2.0, method=method,
                    tau=_compiled_tau_losing_its_actuator, **options)
    assert isinstance(info.value.__cause__, RuntimeError)
    result = info.value.result
    assert result.status == "failed" and 0.4 < result.t[-1] <= 0.5 < info.value.t


def test_refusals_and_saved_results(tmp_path):
    model = _rigid_body("spherical", gravity=(0.0, 0.0, -9.81), com=(0.0, 0.0, -0.5))
    q0, v0 = model.neutral(), np.array([1.0, 0.0, 0.5])
    for options, message in (({"formulation": "lagrange"}, "formulation must be 'recursive' or 'augmented'"),
                             ({"stabilization": "projection"}, "this Model3D has none")):
        with pytest.raises(ValueError, match=message):
            rm.simulate(model, q0, v0, 0.1, **options)
    res = rm.simulate(model, q0, v0, 0.5, tau=lambda t: np.ones(3))
    assert res.qdd().shape == (res.t.size, 3)
    assert np.array_equal(res.driving_forces(), np.zeros((res.t.size, 3)))  # a run without drivers
    assert res.element_forces().shape == (res.t.size, 0, 3)  # the model has no elements
    with pytest.raises(ValueError, match=r"poses\(\) is not available for a Model3D's result"):
        res.poses(0)
    res.save(tmp_path / "spatial.npz")
    back = SimulationResult.load(tmp_path / "spatial.npz", model)
    assert np.array_equal(back.q, res.q) and np.array_equal(back.qd, res.qd) and back.qd.shape[1] == 3
    assert np.array_equal(back.energy_balance(), res.energy_balance())
    with pytest.raises(ValueError, match=r"qdd\(\) needs the inputs of the run"):
        back.qdd()


def test_projection_renormalises_the_integrated_quaternions():
    """The projection after every accepted step (the output map normalises as well, so test the kernel itself):
    a quaternion of y off unit norm comes back unit, the rest of y untouched; a zero one is a non-finite state."""
    model = rm.Model3D()
    root = model.add_body(joint="revolute", inertia=1.0)
    model.add_body(parent=root, joint="free", inertia=1.0)
    system = SpatialTimeLoop(model, _SpatialInputs(model, None)).system
    assert projects(system)
    y = np.arange(1.0, model.nq + model.nv + 3)
    before = y.copy()
    assert project_state(integrators.no_inputs, 0, system, 0.0, y) == L.STATUS_OK
    assert np.allclose(y[4:8], before[4:8] / np.linalg.norm(before[4:8]), rtol=1e-15, atol=0.0)
    assert np.array_equal(np.delete(y, range(4, 8)), np.delete(before, range(4, 8)))
    y[4:8] = 0.0
    assert project_state(integrators.no_inputs, 0, system, 0.0, y) == L.STATUS_NONFINITE_STATE
    planar_like = rm.Model3D()
    planar_like.add_body(joint="revolute", inertia=1.0)
    assert not projects(SpatialTimeLoop(planar_like, _SpatialInputs(planar_like, None)).system)


def test_scipy_methods_and_events_on_a_spatial_model():
    """scipy's solvers (Radau with the finite-difference Jacobian of integrators.rhs_jacobian) integrate the same
    right-hand side: they agree with dop853; events see (q, v) of the model's sizes."""
    model = _rigid_body("spherical", inertia=(0.1, 0.2, 0.3, 0, 0, 0), mass=1.0, gravity=(0.0, 0.0, -9.81),
                        com=(0.0, 0.0, -0.5))
    q0, v0 = model.neutral(), np.array([1.0, 2.0, 0.5])
    reference = rm.simulate(model, q0, v0, 1.0, method="dop853", rtol=1e-12, atol=1e-12)
    for method in ("scipy:DOP853", "scipy:Radau"):
        res = rm.simulate(model, q0, v0, 1.0, method=method, rtol=1e-10, atol=1e-10)
        assert np.abs(res.q[-1] - reference.q[-1]).max() < 1e-8
        assert np.abs(np.linalg.norm(res.q[:, :4], axis=1) - 1.0).max() < 4e-16

    def crossing(t, q, v):
        return q[1]

    res = rm.simulate(model, q0, v0, 1.0, events=crossing, rtol=1e-10, atol=1e-10)
    assert res.t_events[0].size == 1 and res.q_events[0].shape == (1, 4) and res.qd_events[0].shape == (1, 3)
    assert abs(res.q_events[0][0, 1]) < 1e-8


def test_time_loop_of_an_all_spherical_chain_allocates_no_motion_subspaces():
    # forward dynamics reads no S rows of spherical joints: without loops the time loop's S has 0 rows, and building
    # the loop does not allocate the model's workspace S (read by energy, poses and the loop kernels) either
    n = 6
    chain = rm.Model3D()
    chain.add_bodies(np.arange(-1, n - 1), "spherical", parent_point=np.tile([0.0, 0.0, -0.1], (n, 1)), mass=0.5,
                     inertia=(1e-2, 2e-2, 3e-2, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.05))
    loop = SpatialTimeLoop(chain, _SpatialInputs(chain, None))
    assert loop.system.S.shape == (0, 3, 6)
    assert spatial_dynamics.workspace(chain)._S is None


def test_rk4_diverging_on_a_stiff_spring_stops_naming_the_step():
    """A free body on a point spring of k = 1e8 N/m (omega = 1e4 rad/s) under rk4 at dt = 1e-3 s finished with
    its energy x 9e51 and a displacement of 9e22 m; it stops after the first step (energy x 1.6e5), naming dt and
    2 / omega_max, with the samples so far."""
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body("ground", "free", mass=1.0, inertia=0.01, name="ball")
    model.add_spring_damper("ball", (0.0, 0.0, 0.0), "ground", (0.0, 0.0, 0.0), stiffness=1e8)
    q0 = model.neutral()
    q0[0] = 1e-3
    expected = (r"rk4 failed at t = 0.001 s: the run diverges.*rk4 with dt = 0.001 s is unstable here.*"
                r"2 / omega_max = 0.0002 s \(omega_max ~ 1e\+04")
    with pytest.raises(SimulationError, match=expected) as info:
        rm.simulate(model, q0, np.zeros(6), 0.02, method="rk4", dt=1e-3)
    np.testing.assert_array_equal(info.value.result.t, [0.0, 1e-3])
    assert info.value.result.status == "failed"


def test_a_tau_of_the_wrong_form_names_nv_not_nq():
    """A spherical joint and a revolute one (nq = 5, nv = 4): a tau returning a ragged list said "must return 5"."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "spherical", inertia=0.1, com=(0.0, 0.0, -1.0), name="upper")
    model.add_body("upper", "revolute", parent_point=(0.0, 0.0, -1.0), inertia=0.1, com=(0.0, 0.0, -1.0))
    for tau in (lambda t: [[1.0, 2.0], [3.0]], lambda t: np.zeros(5)):
        with pytest.raises(StateError, match="tau function must return 4 finite numbers"):
            rm.simulate(model, model.neutral(), np.zeros(4), 0.01, tau=tau)


# ---- drivers ----------------------------------------------------------------------------------------------------

def _arm_with_slider():
    """The spherical-revolute-prismatic chain of ``test_energy_balance_with_tau_functions``, its revolute joint
    named "arm" and its prismatic one "slider"."""
    model = rm.Model3D(gravity=(0.0, -3.0, -9.81))
    root = model.add_body(joint="spherical", mass=1.0, inertia=(0.1, 0.2, 0.25, 0.01, -0.02, 0.03),
                          com=(0.1, 0.0, -0.3), name="root")
    arm = model.add_body(parent=root, joint="revolute", parent_point=(0.1, 0.0, -0.5), axis=(0.3, 1.0, 0.2),
                         mass=0.7, inertia=(0.05, 0.04, 0.06, 0, 0, 0), com=(0.0, 0.0, -0.2), name="arm")
    model.add_body(parent=arm, joint="prismatic", parent_point=(0.0, 0.1, -0.3), axis=(1.0, 0.0, 1.0), mass=0.4,
                   inertia=0.01, name="slider")
    return model


ARM = (lambda t: 0.3 * math.sin(2.0 * t), lambda t: 0.6 * math.cos(2.0 * t), lambda t: -1.2 * math.sin(2.0 * t))
SLIDER = (lambda t: 0.1 * t * t, lambda t: 0.2 * t, lambda t: 0.2)


def test_driven_joints_of_a_spatial_chain_follow_their_drivers_with_the_inverse_dynamics_forces():
    """A spatial chain whose revolute and prismatic joints are driven (their motion prescribed, the spherical root
    free): at every sample the driven coordinates and rates are their drivers' values, and the driving forces are
    the inverse dynamics' joint forces: with them as tau, the forward dynamics gives the prescribed accelerations,
    and inverse dynamics gives them back (1e-10, 1e-12). The energy balance holds with the drivers' work (1e-9 of
    it). The same model with the arm's motion given through tau instead (tau(t, q, v) making the arm's acceleration
    f''(t), solved from two forward dynamics) follows the same trajectory (1e-9)."""
    model = _arm_with_slider()
    q0, v0 = model.neutral(), np.array([0.5, -0.4, 1.0, 0.0, 0.0])
    arm, slider = model.v_slice("arm").start, model.v_slice("slider").start
    res = rm.simulate(model, q0, v0, 2.0, rtol=1e-11, atol=1e-11, drivers={"arm": ARM, "slider": SLIDER})
    assert res.q.shape == (res.t.size, model.nq) and res.qd.shape == (res.t.size, model.nv)
    for body, driver in (("arm", ARM), ("slider", SLIDER)):
        np.testing.assert_array_equal(res.q[:, model.q_slice(body).start], [driver[0](t) for t in res.t])
        np.testing.assert_array_equal(res.qd[:, model.v_slice(body).start], [driver[1](t) for t in res.t])
    forces = res.driving_forces()
    free = [0, 1, 2]
    assert np.all(forces[:, free] == 0.0) and np.abs(forces[:, [arm, slider]]).min(axis=0).max() > 0.1
    for t, q, v, force in zip(res.t, res.q, res.qd, forces, strict=True):
        vdot = rm.forward_dynamics(model, q, v, force)
        assert abs(vdot[arm] - ARM[2](t)) < 1e-10 and abs(vdot[slider] - SLIDER[2](t)) < 1e-10
        np.testing.assert_allclose(rm.inverse_dynamics(model, q, v, vdot), force, rtol=0.0, atol=1e-12)
    assert np.abs(res.applied_work).max() > 0.1 and np.all(res.dissipated_work == 0.0)
    assert np.abs(res.energy_balance()).max() < 1e-9 * np.abs(res.applied_work).max()

    def arm_torque(t, q, v):
        """tau on the arm alone, making its acceleration f''(t) (forward dynamics is affine in tau)."""
        unit = np.zeros(model.nv)
        unit[arm] = 1.0
        base = rm.forward_dynamics(model, q, v)
        return unit * (ARM[2](t) - base[arm]) / (rm.forward_dynamics(model, q, v, unit)[arm] - base[arm])

    q0[model.q_slice("arm")] = ARM[0](0.0)
    v0[arm] = ARM[1](0.0)
    by_tau = rm.simulate(model, q0, v0, 1.0, rtol=1e-11, atol=1e-11, tau=arm_torque, t_eval=np.linspace(0, 1, 11))
    driven = rm.simulate(model, q0, v0, 1.0, rtol=1e-11, atol=1e-11, drivers={"arm": ARM},
                         t_eval=np.linspace(0, 1, 11))
    assert np.abs(by_tau.q - driven.q).max() < 1e-9 and np.abs(by_tau.qd - driven.qd).max() < 1e-9
    assert np.abs(driven.q[-1] - q0).max() > 0.1  # it moved


def test_planar_chain_built_in_3d_with_a_driver_follows_the_planar_route():
    """serial_chain(3) rebuilt with revolute axes along z, its middle joint driven by f(t) (derivatives by central
    differences on both routes): the spatial run's q, v and driving forces are the planar run's to 1e-9."""
    planar, model, q0, qd0 = planar_chain_and_its_spatial_twin()
    times = np.linspace(0.0, 1.5, 16)
    drivers = {"link2": lambda t: 0.4 * math.sin(3.0 * t) - 0.5}
    a = rm.simulate(planar, q0, qd0, 1.5, rtol=1e-12, atol=1e-12, t_eval=times, drivers=drivers)
    b = rm.simulate(model, q0, qd0, 1.5, rtol=1e-12, atol=1e-12, t_eval=times, drivers={1: drivers["link2"]})
    assert np.abs(b.q - a.q).max() < 1e-9 and np.abs(b.qd - a.qd).max() < 1e-9
    forces = a.driving_forces()
    assert np.abs(forces[:, 1]).max() > 1.0
    assert np.abs(b.driving_forces() - forces).max() < 1e-9
    assert np.abs(b.applied_work - a.applied_work).max() < 1e-9


def test_generalized_alpha_keeps_a_driven_whirling_chain_on_its_steady_whirl():
    """The whirling chain (4 rods 0.1 m off the axis, the massless arm driven at 4.5 rad/s: its joint locked in the
    Newton step) started on its steady whirl (``studies.steady_whirl``), 100 steps of generalized_alpha: a rest
    point of the integrated state, so the rods' rotations and rates stay the whirl's to round-off (measured 1.3e-15,
    8.9e-15), the arm's angle and rate are the driver's at every sample, the driver supplies no torque (5e-16 N m)
    and does no work, and the event of the arm's angle passing 1 rad (its coordinate driven) is at 1 / 4.5 s."""
    n, radius, rate = 4, 0.1, 4.5
    whirl = rm.studies.steady_whirl(n, radius, rate)
    model = rm.studies.whirling_chain_model(n, radius)
    arm = (lambda t: rate * t, lambda t: rate, lambda t: 0.0)

    def turned(t, q, v):
        return q[0] - 1.0

    res = rm.simulate(model, whirl["q"], whirl["v"], 1.0, method="generalized_alpha", dt=0.01, drivers={"arm": arm},
                      events=turned)
    assert res.nsteps == 100
    np.testing.assert_array_equal(res.q[:, 0], rate * res.t)
    assert np.all(res.qd[:, 0] == rate)
    assert np.abs(res.q[:, 1:] - whirl["q"][1:]).max() < 1e-13 and np.abs(res.qd[:, 1:]).max() < 1e-12
    assert np.abs(res.driving_forces()).max() < 1e-12
    assert np.abs(res.applied_work).max() < 1e-12 and np.abs(res.energy_balance()).max() < 1e-12
    assert len(res.t_events[0]) == 1 and abs(res.t_events[0][0] - 1.0 / rate) < 1e-12


def test_generalized_alpha_with_drivers_converges_at_second_order_to_dopri5():
    """Driven runs of generalized_alpha against dopri5 (rtol 1e-12) with the same drivers, dt = 0.01 and 0.005: the
    whirling chain above pushed off its whirl (its top rod spun at 0.3 rad/s) over 0.5 s, and the turntable example
    (the table spun up by its driver, the rod hinged on it swinging out) over 2 s. The free state, the driving
    forces (the joint force each driver supplies, ``result.driving_forces()``) and the energy balance (the drivers'
    work in ``applied_work``) converge at second order: errors 4x smaller when dt halves (measured 3.93 on the
    chain), at dt = 0.005 within 1e-4 rad of the reference (``rm.difference``: chain 9.0e-5, its driving torque
    6.8e-5 N m off; turntable 1.9e-5, 1.3e-5 N m of 1.09); the driven coordinates are the drivers' values at every
    sample."""
    n, radius, rate = 4, 0.1, 4.5
    whirl = rm.studies.steady_whirl(n, radius, rate)
    chain = rm.studies.whirling_chain_model(n, radius)
    pushed = whirl["v"].copy()
    pushed[1:4] = (0.3, -0.2, 0.1)
    turntable = rm.io.load(Path(__file__).resolve().parents[1] / "examples" / "models" / "spatial" /
                           "turntable.toml")
    cases = ((chain, whirl["q"], pushed, {"arm": (lambda t: rate * t, lambda t: rate, lambda t: 0.0)}, 0.5,
              lambda t: rate * t),
             (turntable.model, turntable.q0, turntable.v0, turntable.drivers, 2.0, lambda t: 1.5 * t**2))
    for model, q0, v0, drivers, t_end, angle in cases:
        reference = rm.simulate(model, q0, v0, t_end, rtol=1e-12, atol=1e-12, drivers=drivers,
                                t_eval=np.linspace(0.0, t_end, 3))
        forces = reference.driving_forces()[-1]
        errors = []
        for dt in (0.01, 0.005):
            res = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", dt=dt, drivers=drivers,
                              newton_tol=1e-13)
            np.testing.assert_allclose(res.q[:, 0], angle(res.t), rtol=1e-15, atol=0.0)  # the driven joint
            errors.append((np.abs(rm.difference(model, res.q[-1], reference.q[-1])).max(),
                           np.abs(res.qd[-1] - reference.qd[-1]).max(),
                           np.abs(res.driving_forces()[-1] - forces).max(),
                           np.abs(res.energy_balance()).max()))
        errors = np.array(errors)
        assert np.all(errors[1, :3] > 0.0) and np.all(errors[1] < 2e-3), errors
        np.testing.assert_allclose(errors[0] / errors[1], 4.0, rtol=0.1, err_msg=str(errors))
        assert errors[1, 0] < 1e-4
        assert np.abs(reference.energy_balance()).max() < 1e-9 * max(1.0, np.abs(reference.applied_work).max())


def test_qdd_of_a_spatial_result_is_its_forward_dynamics_and_the_rate_of_its_velocities():
    """result.qdd() of Model3D runs, shape (nt, nv): on the driven spherical-revolute-prismatic chain under a tau
    function and a joint damper (dopri5, rtol 1e-12) it is rm.forward_dynamics at each sample with tau, the damper
    and the driving forces (1e-12 relative), its driven entries the drivers' f'', and the central differences of
    the result's qd over +-1e-4 s (the run's dense output; error O(h^2) + rtol / h: measured 2.3e-7) equal it to 1e-6;
    on the RSSR loop (generalized_alpha) it is spatial_loops.loop_dynamics' vdot at each sample (1e-12)."""
    model = _arm_with_slider()
    model.add_joint_spring_damper("root", stiffness=0.0, damping=0.3)
    q0, v0 = model.neutral(), np.array([0.5, -0.4, 1.0, 0.0, 0.0])
    arm, slider = model.v_slice("arm").start, model.v_slice("slider").start

    def tau(t):
        return np.array([0.1 * np.sin(t), 0.0, -0.2, 0.3 * np.cos(2.0 * t), 0.0])

    centres = np.linspace(0.2, 0.8, 4)
    h = 1e-4
    times = np.sort(np.concatenate((centres - h, centres, centres + h)))
    res = rm.simulate(model, q0, v0, 1.0, rtol=1e-12, atol=1e-12, tau=tau, drivers={"slider": SLIDER},
                      t_eval=times)
    qdd = res.qdd()
    assert qdd.shape == (res.t.size, model.nv)  # t_eval with t0 and t_end
    forces = res.driving_forces()
    for t, q, v, force, row in zip(res.t, res.q, res.qd, forces, qdd, strict=True):
        model_qdd = rm.forward_dynamics(model, q, v, tau(t) + force)
        np.testing.assert_allclose(row, model_qdd, rtol=1e-12, atol=1e-12 * np.abs(model_qdd).max())
        assert row[slider] == SLIDER[2](t)
    i = np.searchsorted(res.t, centres)
    assert np.array_equal(res.t[i], centres)
    differences = (res.qd[i + 1] - res.qd[i - 1]) / (res.t[i + 1] - res.t[i - 1])[:, None]
    np.testing.assert_allclose(differences, qdd[i], rtol=0.0, atol=1e-6)
    assert np.abs(qdd[:, arm]).max() > 1.0

    looped, q0 = _rssr()
    res = rm.simulate(looped, q0, np.array([2.0, 0.3, -0.2, 0.5, 0.0]), 0.3, method="generalized_alpha", dt=0.01)
    qdd = res.qdd()
    assert qdd.shape == (res.t.size, looped.nv)
    for q, v, row in zip(res.q, res.qd, qdd, strict=True):
        expected = rm.spatial_loops.loop_dynamics(looped, q, v).qdd
        np.testing.assert_allclose(row, expected, rtol=0.0, atol=1e-12 * np.abs(expected).max())
    assert np.abs(qdd).max() > 1.0


def test_planar_four_bar_built_in_3d_with_a_driven_crank_follows_the_planar_route():
    """The planar four-bar and its spatial twin (revolute loop: 5 equations, 3 of them identically satisfied in the
    plane), the crank driven (the other two joints follow through the loop): dopri5 at rtol 1e-11 on both routes, the
    loop layer holding the driven joint (its responses by the hybrid dynamics, the projection moving the free joints
    only): q, qd and the crank's driving torque the planar run's at every sample (measured 2.2e-15 rad, 9.8e-15 rad/s,
    1.9e-14 N m), the loop closed."""
    planar, spatial = _four_bar_planar(), _four_bar_spatial()
    q0 = rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])
    crank = (lambda t: 0.9 + 2.0 * t + 0.5 * math.sin(3.0 * t), lambda t: 2.0 + 1.5 * math.cos(3.0 * t),
             lambda t: -4.5 * math.sin(3.0 * t))
    times = np.linspace(0.0, 1.5, 16)
    options = {"rtol": 1e-11, "atol": 1e-11, "t_eval": times, "drivers": {"crank": crank}}
    a = rm.simulate(planar, q0, np.zeros(3), 1.5, **options)
    with pytest.warns(rm.RedundantConstraintWarning):
        b = rm.simulate(spatial, q0, np.zeros(3), 1.5, **options)
    np.testing.assert_array_equal(b.q[:, 0], [crank[0](t) for t in times])
    assert np.abs(b.q - a.q).max() < 1e-9 and np.abs(b.qd - a.qd).max() < 1e-8
    forces = a.driving_forces()
    assert np.abs(forces[:, 0]).max() > 1.0
    assert np.abs(b.driving_forces() - forces).max() < 1e-8 * np.abs(forces).max()
    assert np.abs(b.constraint_drift).max() < 1e-10 and np.ptp(b.q[:, 2]) > 0.1


def test_rssr_with_a_driven_crank_follows_the_crank_torque_that_makes_its_motion():
    """RSSR (ball-joint loop, two degrees of freedom) with its crank driven, against the same mechanism whose crank is
    moved by a torque tau(t, q, v) that gives it the driver's acceleration (solved from two constrained forward
    dynamics, affine in tau), both from a consistent start: dopri5 (rtol 1e-11, projection) follows it to 1e-8 with
    the driving torque equal to that tau (measured 5.1e-11, 2.5e-10 N m); bdf (rtol 1e-9) to 1e-6 with the loop closed
    at every sample (measured 1.3e-8, |phi| 6.7e-13 m); generalized_alpha converges at second order (errors 4x smaller
    when dt halves: measured 4.00, 4.00, 4.00 in q, v and the torque; 1.6e-4 rad at dt = 0.005 s)."""
    model, q0 = _rssr()
    crank = (lambda t: q0[0] + 1.5 * t + 0.3 * math.sin(4.0 * t), lambda t: 1.5 + 1.2 * math.cos(4.0 * t),
             lambda t: -4.8 * math.sin(4.0 * t))
    null = np.linalg.svd(rm.spatial_loops.constraints(model, q0)[2])[2][-2:]  # the admissible velocities
    v0 = np.linalg.solve([null[:, 0], [0.6, -0.8]], [crank[1](0.0), 0.0]) @ null  # the crank's rate f'(0)
    unit = np.zeros(model.nv)
    unit[0] = 1.0

    def crank_torque(t, q, v):
        base = rm.spatial_loops.loop_dynamics(model, q, v).qdd[0]
        pushed = rm.spatial_loops.loop_dynamics(model, q, v, unit).qdd[0]
        return unit * (crank[2](t) - base) / (pushed - base)

    times = np.linspace(0.0, 1.0, 6)
    reference = rm.simulate(model, q0, v0, 1.0, rtol=1e-12, atol=1e-12, tau=crank_torque, t_eval=times)
    assert np.abs(reference.q[:, 0] - [crank[0](t) for t in times]).max() < 1e-9
    torque = np.array([crank_torque(t, q, v)[0] for t, q, v in zip(times, reference.q, reference.qd, strict=True)])
    assert np.abs(torque).max() > 0.5

    def error(res):
        return max(*(np.abs(rm.difference(model, q, r)).max() for q, r in zip(res.q, reference.q, strict=True)),
                   np.abs(res.qd - reference.qd).max())

    drivers = {"crank": crank}
    res = rm.simulate(model, q0, v0, 1.0, rtol=1e-11, atol=1e-11, drivers=drivers, t_eval=times)
    np.testing.assert_array_equal(res.q[:, 0], [crank[0](t) for t in times])
    assert error(res) < 1e-8 and np.abs(res.driving_forces()[:, 0] - torque).max() < 1e-7
    assert np.abs(res.driving_forces()[:, 1:]).max() == 0.0
    res = rm.simulate(model, q0, v0, 1.0, method="bdf", rtol=1e-9, atol=1e-9, drivers=drivers, t_eval=times)
    phi, rate = _loop_levels(model, res)
    assert error(res) < 1e-6 and phi < 1e-10
    errors = []
    for dt in (0.01, 0.005):
        res = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", dt=dt, drivers=drivers)
        np.testing.assert_allclose(res.q[:, 0], [crank[0](t) for t in res.t], rtol=1e-15, atol=0.0)
        errors.append((np.abs(rm.difference(model, res.q[-1], reference.q[-1])).max(),
                       np.abs(res.qd[-1] - reference.qd[-1]).max(), abs(res.driving_forces()[-1, 0] - torque[-1])))
    errors = np.array(errors)
    np.testing.assert_allclose(errors[0] / errors[1], 4.0, rtol=0.15, err_msg=str(errors))


def test_bad_drivers_of_a_spatial_model_are_refused():
    model = _arm_with_slider()
    q0, v0 = model.neutral(), np.zeros(model.nv)
    with pytest.raises(ModelError, match="driver of body 'root': only revolute and prismatic joints"):
        rm.simulate(model, q0, v0, 0.1, drivers={"root": math.sin})
    with pytest.raises(ModelError, match="'elbow'"):
        rm.simulate(model, q0, v0, 0.1, drivers={"elbow": math.sin})
    with pytest.raises(TypeError, match="driver of body 'arm': give f"):
        rm.simulate(model, q0, v0, 0.1, drivers={"arm": 0.3})
    with pytest.raises(ModelError, match="driver of body 'root': only revolute and prismatic joints"):
        rm.simulate(model, q0, v0, 0.1, drivers={"root": math.sin}, formulation="augmented",
                    method="generalized_alpha", dt=0.01)
    with pytest.raises(StateError, match="driver of body 'arm' raised at t = 0"):
        rm.simulate(model, q0, v0, 0.1, drivers={"arm": lambda t: 1.0 / 0.0})
