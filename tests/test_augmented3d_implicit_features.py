"""generalized_alpha in absolute coordinates on spatial trees with the run features of the recursive route
(``integrate.augmented3d_implicit``): t_eval samples on the steps' dense output (``_kernels.augmented.dense3d``),
progress and Ctrl-C, tau functions (Python and compiled), force elements, events. References: the same runs on the
recursive route (generalized_alpha, and dopri5 at tight tolerances), the scheme's second order, energy balance."""

import os
import signal

import numba
import numpy as np
import pytest
from _helpers import swinging_chain
from spatial_reference import random_spatial_tree

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import dense3d
from recursive_mbd.dynamics import augmented3d
from recursive_mbd.errors import SimulationError, StateError
from recursive_mbd.integrate import augmented3d_implicit

ABS = {"method": "generalized_alpha", "formulation": "augmented"}



def _reference(model, q0, v0, t_end, **options):
    """The recursive route's dopri5 run at tight tolerances (the reference of the absolute route's runs)."""
    return rm.simulate(model, q0, v0, t_end, method="dopri5", rtol=1e-12, atol=1e-12, **options)


def _state_error(result, reference, i=-1):
    """max |q - q_ref| (quaternions up to sign) and |v - v_ref| at sample i of two results of one model."""
    q, q_ref = result.q[i].copy(), reference.q[i]
    for k in result.model._quat_q:
        if q[k:k + 4] @ q_ref[k:k + 4] < 0.0:
            q[k:k + 4] *= -1.0
    return max(np.abs(q - q_ref).max(), np.abs(result.qd[i] - reference.qd[i]).max())


# ---- t_eval: the dense output ---------------------------------------------------------------------------------------

def _rotation(quat):
    return augmented3d._quaternion_matrix(np.asarray(quat)[None])[0]


def test_the_dense_output_meets_both_ends_rotations_and_angular_velocities():
    """``dense3d.dense_state`` of a step between two random states: at theta = 0 and 1 the ends' poses and velocities
    (the end rotation R0 exp([delta])), unit quaternions in between, and the interpolant's derivative by central
    differences in time is its velocity at the ends: c' there, and [omega] R = R' (omega in ground axes) on SO(3)."""
    rng = np.random.default_rng(5)
    n, h = 4, 0.05
    z0 = np.concatenate((rng.normal(size=(n, 3)), rng.normal(size=(n, 4))), axis=1)
    z0[:, 3:] /= np.linalg.norm(z0[:, 3:], axis=1)[:, None]
    zb0, zb1 = 5.0 * rng.normal(size=(n, 6)), 5.0 * rng.normal(size=(n, 6))
    vdot0, vdot1 = 50.0 * rng.normal(size=(n, 6)), 50.0 * rng.normal(size=(n, 6))
    delta = 0.8 * rng.normal(size=(n, 3))  # up to about 2 rad: far from small
    z1 = np.empty_like(z0)
    z1[:, :3] = z0[:, :3] + h * rng.normal(size=(n, 3))
    for i in range(n):
        angle = np.linalg.norm(delta[i])
        half = np.concatenate(([np.cos(angle / 2)], np.sin(angle / 2) * delta[i] / angle))
        w, x = z0[i, 3], z0[i, 4:]
        z1[i, 3:] = np.concatenate(([w * half[0] - x @ half[1:]], w * half[1:] + half[0] * x + np.cross(x, half[1:])))
    z, zd = np.empty((n, 7)), np.empty((n, 6))

    def at(theta):
        dense3d.dense_state(z0, zb0, vdot0, z1, zb1, vdot1, delta, h, theta, z, zd)
        return z.copy(), zd.copy()

    for theta, (z_end, zb_end) in ((0.0, (z0, zb0)), (1.0, (z1, zb1))):
        z_s, zd_s = at(theta)
        np.testing.assert_allclose(z_s[:, :3], z_end[:, :3], rtol=0, atol=1e-14)
        for i in range(n):
            rot = _rotation(z_s[i, 3:])
            np.testing.assert_allclose(rot, _rotation(z_end[i, 3:]), rtol=0, atol=1e-13)
            np.testing.assert_allclose(zd_s[i, :3], zb_end[i, :3], rtol=0, atol=1e-13)
            np.testing.assert_allclose(zd_s[i, 3:], rot @ zb_end[i, 3:], rtol=0, atol=1e-12)
        eps = 1e-6  # central differences in time about the end (one-sided inside the step: second order)
        sign = 1.0 if theta == 0.0 else -1.0
        za, _ = at(theta + sign * eps / h)
        zb, _ = at(theta + sign * 2 * eps / h)
        for i in range(n):
            dc = sign * (-3 * z_s[i, :3] + 4 * za[i, :3] - zb[i, :3]) / (2 * eps)
            np.testing.assert_allclose(dc, zd_s[i, :3], rtol=0, atol=1e-6 * np.abs(zd_s[i, :3]).max())
            r0, ra, rb = _rotation(z_s[i, 3:]), _rotation(za[i, 3:]), _rotation(zb[i, 3:])
            rate = sign * (-3 * r0 + 4 * ra - rb) / (2 * eps)
            omega = zd_s[i, 3:]
            np.testing.assert_allclose(rate, np.cross(omega, r0.T).T, rtol=0, atol=1e-6 * np.abs(omega).max())
    for theta in np.linspace(0.0, 1.0, 11):
        np.testing.assert_allclose(np.linalg.norm(at(theta)[0][:, 3:], axis=1), 1.0, rtol=0, atol=1e-15)


def test_t_eval_samples_at_step_ends_are_the_steps_and_between_them_converge_at_second_order():
    """t_eval at step ends: the every-step run's samples there, bit for bit. Between step ends (a quarter and three
    quarters into steps): the dense output converges to dopri5's states at second order in dt (the scheme's), and is
    as close to them as the step ends of a run that steps onto those times."""
    model, q0, v0 = swinging_chain()
    every = rm.simulate(model, q0, v0, 0.2, dt=0.01, **ABS)
    ends = rm.simulate(model, q0, v0, 0.2, dt=0.01, t_eval=[0.05, 0.1, 0.13], **ABS)
    assert ends.t.tolist() == [0.0, 0.05, 0.1, 0.13, 0.2]
    rows = [int(np.argmin(np.abs(every.t - t))) for t in ends.t]
    np.testing.assert_array_equal(ends.q, every.q[rows])
    np.testing.assert_array_equal(ends.qd, every.qd[rows])
    times = [0.0525, 0.1175, 0.1875]
    reference = _reference(model, q0, v0, 0.2, t_eval=times)
    errors = []
    for dt in (0.01, 0.005):
        sampled = rm.simulate(model, q0, v0, 0.2, dt=dt, t_eval=times, **ABS)
        assert sampled.t.tolist() == [0.0, *times, 0.2]
        errors.append(max(_state_error(sampled, reference, i) for i in range(1, 4)))
    onto = rm.simulate(model, q0, v0, 0.2, dt=0.0025, t_eval=times, **ABS)  # every time a step end
    stepped = max(_state_error(onto, reference, i) for i in range(1, 4))
    assert 3.0 < errors[0] / errors[1] < 5.0, errors
    assert errors[1] < 5.0 * stepped, (errors, stepped)


def test_progress_shows_the_run_without_changing_it():
    model, q0, v0 = swinging_chain()
    plain = rm.simulate(model, q0, v0, 0.1, dt=0.01, progress=False, **ABS)
    shown = rm.simulate(model, q0, v0, 0.1, dt=0.01, progress=True, **ABS)
    np.testing.assert_array_equal(shown.z, plain.z)
    assert shown.newton_iterations == plain.newton_iterations


def test_ctrl_c_stops_the_run_with_its_samples():
    """SIGINT in the run (sent by its tau function past t = 0.05 s): KeyboardInterrupt after the step in progress,
    its result the samples so far (status "interrupted"), those of the whole run; the SIGINT handler restored."""
    model, q0, v0 = swinging_chain()
    sent = []

    def interrupting(t, q, v):
        if t > 0.05 and not sent:
            sent.append(t)
            os.kill(os.getpid(), signal.SIGINT)
        return np.zeros(model.nv)

    with pytest.raises(KeyboardInterrupt, match="generalized_alpha interrupted at t = ") as info:
        rm.simulate(model, q0, v0, 1.0, dt=0.01, tau=interrupting, **ABS)
    result = info.value.result
    assert result.status == "interrupted" and 0.05 < result.t[-1] < 0.1
    whole = rm.simulate(model, q0, v0, 0.2, dt=0.01, tau=lambda t, q, v: np.zeros(model.nv), **ABS)
    np.testing.assert_array_equal(result.z, whole.z[:result.t.size])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# ---- tau functions ---------------------------------------------------------------------------------------------------

def test_a_constant_tau_function_is_the_constant_tau_python_or_compiled():
    model, q0, v0 = swinging_chain()
    tau = np.linspace(0.2, -0.4, model.nv)
    constant = rm.simulate(model, q0, v0, 0.2, dt=0.01, tau=tau, **ABS)

    @numba.njit
    def compiled(t, q, v):
        return np.linspace(0.2, -0.4, 6)

    assert model.nv == 6
    # the same steps, accepted by different rules (a tau function's iteration has no quadratic estimate): equal to the
    # tolerance's reach, nsteps newton_tol over the smallest radius of gyration
    reach = constant.nsteps * augmented3d_implicit.NEWTON_TOL / augmented3d_implicit.radii_of_gyration(model).min()
    for function in (lambda t, q, v: tau, lambda t: tau, compiled):
        run = rm.simulate(model, q0, v0, 0.2, dt=0.01, tau=function, **ABS)
        np.testing.assert_allclose(run.z, constant.z, rtol=0, atol=reach)
        # the work of a tau function is trapezoidal on its power at the converged step ends; a constant tau's is on
        # the power of the last residual, at the iterate before the last correction (Newton's acceptance leaves it
        # off by the last correction: at the default newton_tol, 1e-10 m/s, the work up to 2.7e-6 of itself, 4e-8 J;
        # 3.3e-7 of itself at newton_tol = 1e-12)
        np.testing.assert_allclose(run.applied_work, constant.applied_work, rtol=5e-6, atol=1e-12)


def test_joint_dampers_by_tau_converge_to_dopri5_at_second_order_with_their_work():
    """tau = -c v (a damper on every joint velocity), its own blocks in the Newton matrix by differences: the run
    converges at second order to the recursive dopri5 run, its energy balance E + dissipated - applied closes to the
    scheme's error (applied_work the dampers' negative work), and the Newton iterations stay few."""
    model, q0, v0 = swinging_chain()

    def damper(t, q, v):
        return -0.1 * v

    reference = _reference(model, q0, v0, 0.2, tau=damper)
    errors, balances = [], []
    for dt in (0.01, 0.005):
        run = rm.simulate(model, q0, v0, 0.2, dt=dt, tau=damper, **ABS)
        errors.append(_state_error(run, reference))
        balances.append(np.abs(run.energy_balance()).max())
        assert run.applied_work[-1] < -0.01 and run.newton_iterations <= 8 * run.nsteps  # measured 3.0 (lagged 7.8)
    assert 3.0 < errors[0] / errors[1] < 5.0, errors
    assert balances[1] < 0.4 * balances[0] and balances[1] < 1e-3, balances
    assert abs(run.applied_work[-1] - reference.applied_work[-1]) < 1e-3 * abs(reference.applied_work[-1])


def test_a_failing_tau_function_stops_the_run_with_its_cause_and_samples():
    model, q0, v0 = swinging_chain()

    def failing(t, q, v):
        if t > 0.031:
            raise RuntimeError("sensor lost")
        return np.zeros(model.nv)

    with pytest.raises(SimulationError, match="sensor lost") as info:
        rm.simulate(model, q0, v0, 0.1, dt=0.01, tau=failing, **ABS)
    assert isinstance(info.value.__cause__, RuntimeError)
    result = info.value.result
    assert result.status == "failed" and result.t[-1] == pytest.approx(0.03)
    with pytest.raises(StateError, match="tau function"):  # already at t0: before the run
        rm.simulate(model, q0, v0, 0.1, dt=0.01, tau=lambda t, q, v: np.zeros(2), **ABS)


# ---- force elements -------------------------------------------------------------------------------------------------

def _sprung_chain():
    """The swinging chain's bodies (``_helpers.swinging_chain``: spherical, revolute, universal) with a spring-damper
    on each joint, a spring-damper from the ground to the last body and one from the first body to the last, a force
    that is a function of time and a follower torque."""

    def elements(model):
        model.add_joint_spring_damper(0, stiffness=3.0, damping=0.2)
        model.add_joint_spring_damper(1, stiffness=2.0, damping=0.1, rest=0.3)
        model.add_joint_spring_damper(2, stiffness=(1.0, 4.0), damping=(0.05, 0.1))
        model.add_spring_damper("ground", (0.2, 0.1, -0.5), 2, (0.0, 0.0, -0.2), stiffness=20.0, damping=0.5,
                                rest_length=0.3)
        model.add_spring_damper(0, (0.0, 0.1, 0.0), 2, (0.1, 0.0, 0.0), stiffness=10.0, damping=0.2,
                                rest_length=0.5)
        model.add_force(1, (0.0, 0.0, -0.1), lambda t: (0.3 * np.cos(3.0 * t), 0.0, 0.2))
        model.add_torque(2, (0.0, 0.1, 0.05), frame="body")

    return swinging_chain(elements)


def test_force_elements_converge_to_dopri5_at_second_order_with_their_energy():
    """Joint spring-dampers (spherical, revolute, universal), point spring-dampers to the ground and between bodies, a
    force of time and a follower torque: the run converges at second order to the recursive dopri5 run (rtol 1e-12),
    and its energy balance (the springs' potential in E, the dampers' work in dissipated_work, the force's and the
    torque's in applied_work) closes at second order too."""
    model, q0, v0 = _sprung_chain()
    reference = _reference(model, q0, v0, 0.3)
    errors, balances = [], []
    for dt in (0.01, 0.005):
        run = rm.simulate(model, q0, v0, 0.3, dt=dt, **ABS)
        errors.append(_state_error(run, reference))
        balances.append(np.abs(run.energy_balance()).max())
    assert run.dissipated_work[-1] > 0.01 and abs(run.applied_work[-1]) > 1e-3
    assert np.abs(reference.q[:, 4:7]).max() > np.pi  # an angle past the half turn: its spring sees the turns
    assert 3.0 < errors[0] / errors[1] < 5.0, errors
    assert 3.0 < balances[0] / balances[1] < 5.0, balances
    assert abs(run.dissipated_work[-1] - reference.dissipated_work[-1]) < 1e-3 * reference.dissipated_work[-1]
    assert abs(run.applied_work[-1] - reference.applied_work[-1]) < 1e-3 * abs(reference.applied_work[-1])


# ---- events ---------------------------------------------------------------------------------------------------------

def test_events_are_found_where_the_recursive_route_finds_them():
    """A revolute angle's crossings of -0.3 rad (both directions, and rising only) and a terminal event: the times
    converge to dopri5's (tight tolerances) at second order and are as close to them as the recursive route's
    generalized_alpha's at the same step (measured: 3.5e-4 s against its 9.3e-4 s at the third crossing, after a
    fast swing); the terminal one ends the run there (status "event", the last sample at the event)."""
    model, q0, v0 = swinging_chain()

    def crossing(t, q, v):  # the revolute angle through -0.3 rad: three times in the second
        return q[4] + 0.3

    def rising(t, q, v):
        return q[4] + 0.3

    rising.direction = 1.0

    def stop(t, q, v):
        return t - 0.3377

    stop.terminal = True
    events = [crossing, rising]
    absolute = rm.simulate(model, q0, v0, 1.0, dt=0.005, events=events, **ABS)
    recursive = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", dt=0.005, events=events)
    reference = _reference(model, q0, v0, 1.0, events=events)
    finer = rm.simulate(model, q0, v0, 1.0, dt=0.0025, events=events, **ABS)
    assert absolute.status == "finished" and reference.t_events[0].size == 3 and reference.t_events[1].size == 1
    for i in range(2):
        assert absolute.t_events[i].size == finer.t_events[i].size == recursive.t_events[i].size
        errors = [np.abs(run.t_events[i] - reference.t_events[i]).max() for run in (absolute, finer)]
        assert errors[0] < 1e-3 and 3.0 < errors[0] / errors[1] < 5.0, errors  # second order
        assert errors[0] <= 2.0 * np.abs(recursive.t_events[i] - reference.t_events[i]).max()  # the scheme's error
        np.testing.assert_allclose(absolute.q_events[i][:, 4], -0.3, rtol=0, atol=1e-12)
    ended = rm.simulate(model, q0, v0, 1.0, dt=0.005, events=[crossing, stop], **ABS)
    assert ended.status == "event" and ended.t[-1] == pytest.approx(0.3377, abs=1e-12)
    np.testing.assert_array_equal(ended.t_events[1], ended.t[-1:])
    np.testing.assert_allclose(ended.q[-1], ended.q_events[1][0], rtol=0, atol=0)


def test_a_spherical_tree_with_loads_runs_the_same_fused_or_not(monkeypatch):
    """A random tree of spherical joints with rotational joint spring-dampers and a damping tau function: the fused
    spherical pass and the general kernels take the same iterations to the same states (round-off), and both follow
    the recursive dopri5 run to the scheme's error."""
    rng = np.random.default_rng(84)
    sprung = rm.Model3D(gravity=(0.3, -0.5, -9.81))
    for body in random_spatial_tree(rng, 6):
        body["joint"] = "spherical"
        body.pop("axis", None)
        sprung.add_body(**body)
    for i in range(0, 6, 2):
        sprung.add_joint_spring_damper(i, stiffness=0.5, damping=0.02)
    sprung.compile()
    q0 = rm.integrate_configuration(sprung, sprung.neutral(), 0.3 * rng.normal(size=sprung.nv))
    v0 = rng.normal(size=sprung.nv)

    def tau(t, q, v):
        return -0.01 * v

    runs = []
    for fused in (True, False):
        monkeypatch.setattr(augmented3d_implicit, "FUSED_SPHERICAL", fused)
        runs.append(rm.simulate(sprung, q0, v0, 0.1, dt=0.005, tau=tau, **ABS))
    assert runs[0].newton_iterations == runs[1].newton_iterations
    np.testing.assert_allclose(runs[0].z, runs[1].z, rtol=0, atol=1e-12)
    reference = _reference(sprung, q0, v0, 0.1, tau=tau)
    assert _state_error(runs[0], reference) < 1e-3
