"""bdf in absolute coordinates on spatial models (``rm.simulate(model3d, method="bdf", formulation="augmented")``,
``integrate.augmented3d_implicit``, section BDF): the coefficients and the step's history against their definitions,
the orders of convergence at fixed steps, the variable-step runs against dopri5 and generalized_alpha, the
constraints at the step ends, loops, t_eval and events, and the failures."""

import os
import signal

import numpy as np
import pytest
from _helpers import swinging_chain
from scipy.spatial.transform import Rotation
from spatial_reference import random_spatial_tree
from test_augmented3d_implicit import _tilted_chain
from test_augmented3d_implicit_features import _reference, _sprung_chain, _state_error
from test_spatial_simulate import ARM, SLIDER, _arm_with_slider

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import bdf3d
from recursive_mbd._kernels.augmented import implicit3d as kernels
from recursive_mbd.dynamics import augmented3d, spatial_loops
from recursive_mbd.errors import SimulationError
from recursive_mbd.integrate import augmented3d_implicit


def test_the_coefficients_differentiate_the_interpolating_polynomial_at_the_new_time():
    rng = np.random.default_rng(1)
    for k in (1, 2, 3):
        nodes = np.cumsum(np.concatenate(([0.3], -rng.uniform(0.01, 0.05, size=k))))  # t+, t_n, ... (descending)
        a = augmented3d_implicit.bdf_coefficients(nodes)
        for degree in range(k + 1):  # exact on polynomials of degree <= k
            assert a @ nodes**degree == pytest.approx(
                degree * nodes[0] ** (degree - 1) if degree else 0.0, rel=1e-12, abs=1e-12
            )
        assert a @ nodes ** (k + 1) != pytest.approx((k + 1) * nodes[0] ** k, rel=1e-9)  # and not beyond
        w = augmented3d_implicit.extrapolation_weights(nodes[1:], nodes[0])
        for degree in range(k):
            assert w @ nodes[1:] ** degree == pytest.approx(nodes[0] ** degree, rel=1e-12)
    # constant steps: BDF2's 3/2, -2, 1/2 (over h)
    np.testing.assert_allclose(augmented3d_implicit.bdf_coefficients([0.2, 0.1, 0.0]), [15.0, -20.0, 5.0], rtol=1e-13)


def _log(rot):
    return Rotation.from_matrix(rot).as_rotvec()


def _right_jacobian(phi):
    angle = np.linalg.norm(phi)
    k = np.cross(np.eye(3), phi)  # [phi] (its row i is e_i x phi)
    return np.eye(3) - (1.0 - np.cos(angle)) / angle**2 * k + (angle - np.sin(angle)) / angle**3 * k @ k


def test_the_steps_update_is_the_bdf_formula_in_the_local_coordinates_of_the_current_pose():
    """``bdf3d.history`` and the generalised-alpha update it feeds (alpha_m = alpha_f = 0, gamma = beta = 1,
    h = c_damp) give, for any vdot+, a new state with a_0 v+ + sum a_j v_j = vdot+ and a_0 x+ + J_r(x_pred) S_x =
    v+, the local coordinates x of the past and new poses relative to the current one computed here with scipy's
    rotation logarithm; the predictor through the three poses, and the first guess landing on it."""
    model, q0, v0 = swinging_chain()
    n = model.nbodies
    rng = np.random.default_rng(4)
    times = [0.31, 0.3, 0.288]  # t_n, t_{n-1}, t_{n-2}
    poses = []
    for _ in times:
        q = rm.integrate_configuration(model, q0, 0.05 * rng.normal(size=model.nv))  # the new pose within pi
        z, zd = augmented3d.absolute_from_joint(model, q, rng.normal(size=model.nv))
        poses.append((z, augmented3d_implicit.to_body_axes(z, zd)))
    (z, zb), past = poses[0], poses[1:]
    past_z = np.array([p[0] for p in past])
    past_zb = np.array([p[1] for p in past])
    t_new = 0.323
    a = augmented3d_implicit.bdf_coefficients([t_new, *times[:2]])
    w = augmented3d_implicit.extrapolation_weights(times, t_new)
    c = 1.0 / a[0]
    out = [np.zeros((n, 6)) for _ in range(6)]
    base_x, zb_eff, acc_eff, guess, x_pred, v_pred = out
    bdf3d.history(
        z, zb, rng.normal(size=(n, 6)), past_z, past_zb, 2, a, w, 0.0, c, base_x, zb_eff, acc_eff, guess, x_pred, v_pred
    )
    rot = augmented3d._quaternion_matrix(z[:, 3:])
    local = [np.zeros((n, 6))] + [
        np.concatenate(
            (
                p[:, :3] - z[:, :3],
                np.array([_log(rot[i].T @ r) for i, r in enumerate(augmented3d._quaternion_matrix(p[:, 3:]))]),
            ),
            axis=1,
        )
        for p in past_z
    ]
    np.testing.assert_allclose(x_pred, sum(wj * xj for wj, xj in zip(w, local, strict=True)), rtol=0, atol=1e-14)
    np.testing.assert_allclose(v_pred, w[0] * zb + w[1] * past_zb[0] + w[2] * past_zb[1], rtol=0, atol=1e-13)
    coef = np.array([c, 0.0, 0.0, 1.0, 1.0, c * c, c])
    zp, zbp, zdp, tangent = np.zeros((n, 7)), np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 3, 3))
    for vdot in (rng.normal(size=(n, 6)), guess):
        kernels.update_state(z, zb_eff, acc_eff, np.zeros((n, 6)), coef, vdot, zp, zbp, zdp, tangent)
        np.testing.assert_allclose(
            a[0] * zbp + a[1] * zb + a[2] * past_zb[0], vdot, rtol=0, atol=1e-11 * np.abs(vdot).max()
        )
        new = np.concatenate(
            (
                zp[:, :3] - z[:, :3],
                np.array([_log(rot[i].T @ r) for i, r in enumerate(augmented3d._quaternion_matrix(zp[:, 3:]))]),
            ),
            axis=1,
        )
        s_x = a[2] * local[1]
        turned = np.array([_right_jacobian(x_pred[i, 3:]) @ s_x[i, 3:] for i in range(n)])
        np.testing.assert_allclose(a[0] * new[:, :3] + s_x[:, :3], zbp[:, :3], rtol=0, atol=1e-11)
        np.testing.assert_allclose(a[0] * new[:, 3:] + turned, zbp[:, 3:], rtol=0, atol=1e-11)
    np.testing.assert_allclose(new, x_pred, rtol=0, atol=1e-13)  # the first guess puts the bodies at x_pred


def _double_pendulum(loop=False):
    """Two spherical links (a ball joint at the pin, another between them), swinging in 3D; ``loop``: the tip of
    the second tied to the ground point (0.5, 0, -1.8) by a rod of 0.5 m (a distance loop, closed when hanging)."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "spherical", child_point=(0.0, 0.0, 0.5), mass=1.0, inertia=(0.09, 0.09, 0.01, 0, 0, 0))
    model.add_body(
        0,
        "spherical",
        parent_point=(0.0, 0.0, -0.5),
        child_point=(0.0, 0.0, 0.4),
        mass=0.7,
        inertia=(0.04, 0.04, 0.005, 0, 0, 0),
    )
    if loop:
        model.add_loop("distance", 1, (0.0, 0.0, -0.4), "ground", (0.5, 0.0, -1.8), length=0.5)
    model.compile()
    rng = np.random.default_rng(2)
    q0 = rm.integrate_configuration(model, model.neutral(), (0.1 if loop else 0.6) * rng.normal(size=model.nv))
    if loop:
        q0 = rm.assemble(model, q0)
    return model, q0, 2.0 * rng.normal(size=model.nv)


@pytest.mark.parametrize("order", [1, 2])
def test_fixed_steps_converge_at_the_schemes_order_on_a_spatial_double_pendulum(order):
    model, q0, v0 = _double_pendulum()
    t_end = 0.2
    reference = rm.simulate(model, q0, v0, t_end, rtol=1e-12, atol=1e-13)
    errors = []
    for dt in (2e-3, 1e-3, 5e-4):
        result = augmented3d_implicit.simulate_bdf(model, q0, v0, 0.0, t_end, dt=dt, max_order=order, newton_tol=1e-13)
        assert result.nsteps == round(t_end / dt) and result.nrejected == 0
        errors.append(
            max(
                np.abs(rm.difference(model, reference.q[-1], result.q[-1])).max(),
                np.abs(reference.qd[-1] - result.qd[-1]).max(),
            )
        )
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    expected = 2.0**order
    assert all(0.85 * expected < r < 1.15 * expected for r in ratios), (errors, ratios)


def test_a_swinging_chain_of_mixed_joints_follows_dopri5_as_the_tolerance_falls():
    """Variable steps: the error at t_end falls with rtol like BDF2's rtol^(2/3) (error per step, steps growing as
    rtol^(-1/3)), the joints closed to the Newton tolerance at every step end, tau's work."""
    model, q0, v0 = swinging_chain()
    t_end = 0.5
    tau = np.array([0.3, -0.2, 0.1, 0.4, -0.3, 0.2])
    reference = rm.simulate(model, q0, v0, t_end, rtol=1e-11, atol=1e-13, tau=tau)
    errors, steps = [], []
    for tol in (1e-5, 1e-7):
        result = rm.simulate(model, q0, v0, t_end, method="bdf", formulation="augmented", rtol=tol, atol=tol, tau=tau)
        assert result.method == "augmented bdf" and result.t[-1] == t_end and result.status == "finished"
        assert result.constraint_drift.max() < 1e-3 * tol  # newton_tol = 1e-3 min(rtol, atol)
        assert result.newton_iterations <= 3 * (result.nsteps + result.nrejected)
        errors.append(
            max(
                np.abs(rm.difference(model, reference.q[-1], result.q[-1])).max(),
                np.abs(reference.qd[-1] - result.qd[-1]).max(),
            )
        )
        steps.append(result.nsteps)
    assert errors[1] < 2e-3 and 10.0 < errors[0] / errors[1] < 40.0  # 100^(2/3) = 21.5
    assert 3.0 < steps[1] / steps[0] < 6.5  # 100^(1/3) = 4.6
    assert abs(result.applied_work[-1] - reference.applied_work[-1]) < 1e-3 * abs(reference.applied_work[-1])


def test_a_ten_link_spherical_chain_runs_as_generalized_alpha_and_dopri5():
    """1 s of 10 spherical links swinging 0.3 rad with a sideways push: the tip of bdf at rtol = atol = 1e-8 within
    the reach of that tolerance (the steps' errors summed over a few hundred steps: 1e-5 m) of dopri5's at 1e-11 and
    of generalized_alpha's at dt = 1e-4 s, and closer at 1e-8 than at 1e-6."""
    model, q0, v0 = _tilted_chain(10)
    t_end = 1.0
    tip = model.nbodies - 1
    reference = rm.simulate(model, q0, v0, t_end, rtol=1e-11, atol=1e-12, formulation="augmented")
    ga = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", formulation="augmented", dt=1e-4)
    gaps = []
    for tol in (1e-6, 1e-8):
        result = rm.simulate(model, q0, v0, t_end, method="bdf", formulation="augmented", rtol=tol, atol=tol)
        assert result.constraint_drift.max() < 1e-3 * tol
        gaps.append(np.abs(result.z[-1, tip, :3] - reference.z[-1, tip, :3]).max())
    # measured: 3.4e-5 m at 1e-6, 3.5e-6 m at 1e-8
    assert gaps[1] < 1e-5 and gaps[1] < 0.2 * gaps[0]
    assert np.abs(result.z[-1, tip, :3] - ga.z[-1, tip, :3]).max() < 2e-5


def test_t_eval_samples_and_an_event_on_the_dense_output():
    """t_eval samples between the steps are the dense output (within the run's accuracy of dopri5's at those
    times, unit quaternions); a terminal event stops the run at its zero."""
    model, q0, v0 = swinging_chain()
    reference = rm.simulate(model, q0, v0, 0.3, rtol=1e-11, atol=1e-13, t_eval=np.linspace(0.0, 0.3, 7))
    result = rm.simulate(
        model, q0, v0, 0.3, method="bdf", formulation="augmented", rtol=1e-8, atol=1e-8, t_eval=np.linspace(0.0, 0.3, 7)
    )
    np.testing.assert_array_equal(result.t, reference.t)
    assert result.nsteps > 7  # the samples fall inside steps
    gaps = np.abs(np.array([rm.difference(model, a, b) for a, b in zip(reference.q, result.q, strict=True)]))
    assert gaps.max() < 1e-4
    np.testing.assert_allclose(np.linalg.norm(result.z[:, :, 3:], axis=2), 1.0, rtol=0, atol=1e-14)
    level = reference.q[3, 3]  # the revolute angle at t = 0.15 s

    def event(t, q, v):
        return q[3] - level

    event.terminal = True
    stopped = rm.simulate(model, q0, v0, 0.3, method="bdf", formulation="augmented", rtol=1e-8, atol=1e-8, events=event)
    assert stopped.status == "event" and stopped.t[-1] == pytest.approx(0.15, abs=1e-4)
    assert stopped.q[-1, 3] == pytest.approx(level, abs=1e-9)


def test_a_closed_loop_follows_generalized_alpha():
    """The double pendulum's tip tied to a ground point by a distance loop (a massless rod with ball ends): the loop
    closed to the Newton tolerance at every step end, its multiplier kept, the motion generalized_alpha's."""
    model, q0, v0 = _double_pendulum(loop=True)
    ga = rm.simulate(model, q0, v0, 0.5, method="generalized_alpha", formulation="augmented", dt=1e-4)
    result = rm.simulate(model, q0, v0, 0.5, method="bdf", formulation="augmented", rtol=1e-8, atol=1e-8)
    assert result.constraint_drift.max() < 1e-10 and result.multipliers.shape == (result.t.size, 1)
    assert np.abs(rm.difference(model, ga.q[-1], result.q[-1])).max() < 1e-4
    # the multipliers (index 3, outside the error test; BDF's converge an order lower where the step changes): measured
    # 1.5e-2 N apart of 1.5 N
    assert abs(result.multipliers[-1, 0] - ga.multipliers[-1, 0]) < 2e-2 * np.abs(ga.multipliers).max()


def test_a_run_that_cannot_converge_stops_naming_the_time_and_the_cause_with_the_samples_kept():
    model, q0, v0 = swinging_chain()
    with pytest.raises(
        SimulationError,
        match=r"bdf: Newton did not converge at t = [0-9.e-]+ s .*max_newton = 1.*"
        r"failed tries",
    ) as error:
        augmented3d_implicit.simulate_bdf(model, q0, v0, 0.0, 0.1, rtol=1e-6, atol=1e-6, max_newton=1)
    result = error.value.result
    assert result.status == "failed" and result.t.tolist() == [0.0]
    np.testing.assert_allclose(result.q[0], q0, rtol=0, atol=1e-14)


def test_what_bdf_in_absolute_coordinates_refuses():
    model, q0, v0 = swinging_chain()
    with pytest.raises(ValueError, match="max_order of bdf in absolute coordinates must be 1 or 2"):
        rm.simulate(model, q0, v0, 0.1, method="bdf", formulation="augmented", max_order=3)
    with pytest.raises(ValueError, match="dt and rho_inf are options of method='generalized_alpha'"):
        rm.simulate(model, q0, v0, 0.1, method="bdf", formulation="augmented", dt=0.01)


# ---- tau functions and force elements --------------------------------------------------------------------------------

BDF = {"method": "bdf", "formulation": "augmented"}


def _controller(t, q, v):
    """A tau(t, q, v) on the sprung chain: a damper on every joint, a torque of time and a spring on the revolute
    joint reading the universal joint's first angle (another joint's coordinate: lagged in the Newton matrix)."""
    out = -0.3 * v
    out[3] += 0.2 * np.sin(4.0 * t) - 0.5 * q[4]
    return out


def test_tau_functions_and_force_elements_converge_at_second_order_with_their_work():
    """The chain with a spring-damper on each joint (spherical, revolute, universal), point spring-dampers to the
    ground and between two bodies, a force of time, a follower torque (``_sprung_chain``) and a tau(t, q, v), against
    the recursive route's dopri5 run (rtol 1e-12) over 0.3 s: at fixed steps (BDF2, dt = 4e-3 and 2e-3 s) the state,
    the energy balance (E with the springs' potential, the dampers' work dissipated, the force's, torque's and tau's
    applied) and both works converge at second order (measured ratios 4.04, 4.03, 3.95, 4.01); at variable steps
    the error falls with the tolerance like BDF2's rtol^(2/3) (measured 1.5e-2 -> 1.2e-3 from rtol 1e-5 to 1e-7)."""
    model, q0, v0 = _sprung_chain()
    reference = _reference(model, q0, v0, 0.3, tau=_controller)
    assert reference.dissipated_work[-1] > 0.05 and abs(reference.applied_work[-1]) > 1e-3
    errors = []
    for dt in (4e-3, 2e-3):
        run = augmented3d_implicit.simulate_bdf(model, q0, v0, 0.0, 0.3, dt=dt, tau=_controller, newton_tol=1e-13)
        assert run.nsteps == round(0.3 / dt) and run.constraint_drift.max() < 1e-12
        errors.append((_state_error(run, reference), np.abs(run.energy_balance()).max(),
                       abs(run.applied_work[-1] - reference.applied_work[-1]),
                       abs(run.dissipated_work[-1] - reference.dissipated_work[-1])))
    errors = np.array(errors)
    assert np.all((errors[0] / errors[1] > 3.6) & (errors[0] / errors[1] < 4.4)), errors
    assert errors[1, 0] < 1e-2 and errors[1, 1] < 5e-3, errors
    variable = []
    for tol in (1e-5, 1e-7):
        run = rm.simulate(model, q0, v0, 0.3, rtol=tol, atol=tol, tau=_controller, **BDF)
        assert run.status == "finished" and run.constraint_drift.max() < 1e-3 * tol
        variable.append((_state_error(run, reference), np.abs(run.energy_balance()).max()))
    variable = np.array(variable)
    assert np.all((variable[0] / variable[1] > 8.0) & (variable[0] / variable[1] < 40.0)), variable
    assert variable[1, 0] < 3e-3, variable


def test_a_stiff_joint_damper_keeps_two_newton_iterations_a_step(monkeypatch):
    """tau = -c v, c = 1 N m s, on the three-joint swinging chain (joints' inertias about 0.01 kg m^2), 0.2 s at
    rtol = atol = 1e-6: the tau function's own blocks in the Newton matrix keep the iteration at the loads-free count
    (measured 2.00 a try, no failed try) and the run on dopri5's; with them left out (the lagged matrix, its
    contraction c_damp c over the inertias) 8.5 a try, six tries failing."""
    model, q0, v0 = swinging_chain()

    def damper(t, q, v):
        return -1.0 * v

    run = rm.simulate(model, q0, v0, 0.2, rtol=1e-6, atol=1e-6, tau=damper, **BDF)
    tries = run.nsteps + run.nrejected
    assert run.newton_failures == 0 and run.newton_iterations <= 2.2 * tries
    assert _state_error(run, _reference(model, q0, v0, 0.2, tau=damper)) < 1e-3

    def lagged(self, t):  # the elements' blocks only: the tau function's derivative left out
        self.tq[:], self.tv[:] = self.tq_el, self.tv_el

    monkeypatch.setattr(augmented3d_implicit._Loads, "_tau_blocks", lagged)
    slow = rm.simulate(model, q0, v0, 0.2, rtol=1e-6, atol=1e-6, tau=damper, **BDF)
    assert slow.newton_iterations > 3.0 * (slow.nsteps + slow.nrejected)


def test_t_eval_and_a_terminal_event_with_force_elements():
    """The sprung chain with its elements: t_eval samples inside the steps within the run's accuracy of dopri5's, and
    an event on a revolute angle (the angle continuous past its half turn: the run tracks it) stops the run at its
    zero."""
    model, q0, v0 = _sprung_chain()
    times = np.linspace(0.0, 0.3, 7)
    reference = _reference(model, q0, v0, 0.3, t_eval=times)
    sampled = rm.simulate(model, q0, v0, 0.3, rtol=1e-8, atol=1e-8, t_eval=times, **BDF)
    np.testing.assert_array_equal(sampled.t, reference.t)
    assert sampled.nsteps > 7 and max(_state_error(sampled, reference, i) for i in range(7)) < 1e-3
    level = reference.q[4, 4]  # the revolute angle at t = 0.2 s

    def event(t, q, v):
        return q[4] - level

    event.terminal = True
    stopped = rm.simulate(model, q0, v0, 0.3, rtol=1e-8, atol=1e-8, events=event, **BDF)
    assert stopped.status == "event" and stopped.t[-1] == pytest.approx(0.2, abs=1e-4)
    assert stopped.q[-1, 4] == pytest.approx(level, abs=1e-9)


def test_a_failing_tau_function_stops_the_run_with_its_samples_and_ctrl_c_too():
    """A tau function that raises past t = 0.1 s: SimulationError naming bdf, the time and the function, the samples
    so far kept; one that sends SIGINT past t = 0.05 s: KeyboardInterrupt after the step in progress, its result the
    samples so far (status "interrupted"), those of the whole run, the handler restored."""
    model, q0, v0 = swinging_chain()

    def failing(t, q, v):
        if t > 0.1:
            raise RuntimeError("sensor lost")
        return -0.1 * v

    with pytest.raises(SimulationError, match=r"bdf failed at t = 0\.1[0-9]* s: tau function .*sensor lost") as error:
        rm.simulate(model, q0, v0, 0.3, rtol=1e-6, atol=1e-6, tau=failing, **BDF)
    result = error.value.result
    assert result.status == "failed" and 0.05 < result.t[-1] <= 0.1
    sent = []

    def interrupting(t, q, v):
        if t > 0.05 and not sent:
            sent.append(t)
            os.kill(os.getpid(), signal.SIGINT)
        return -0.1 * v

    with pytest.raises(KeyboardInterrupt, match="bdf interrupted at t = ") as info:
        rm.simulate(model, q0, v0, 1.0, rtol=1e-6, atol=1e-6, tau=interrupting, **BDF)
    result = info.value.result
    assert result.status == "interrupted" and 0.05 < result.t[-1] < 0.2
    whole = rm.simulate(model, q0, v0, 0.3, rtol=1e-6, atol=1e-6, tau=lambda t, q, v: -0.1 * v, **BDF)
    np.testing.assert_array_equal(result.z, whole.z[:result.t.size])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# ---- the loops' multipliers and the drivers' forces at the samples' states -------------------------------------------


def _tree_with_a_loop():
    """A random tree of every joint type (nine bodies) with a ball-joint loop between bodies 4 and 7 (on different
    branches), placed where they are at a random configuration, and a spring-damper on the revolute joint of body 0;
    the start assembled onto the loop, its velocities on the loop's velocity rows."""
    rng = np.random.default_rng(7)

    def tree():
        model = rm.Model3D(gravity=(0.3, -0.5, -9.81))
        for body in random_spatial_tree(np.random.default_rng(81), 9):
            model.add_body(**body)
        return model

    free = tree()
    q = rm.integrate_configuration(free, free.neutral(), rng.normal(size=free.nv))
    point = rng.normal(size=3) * 0.3
    at = rm.frame_placement(free, q, 4, point)[1]
    rot, origin = rm.frame_placement(free, q, 7)
    model = tree()
    model.add_loop("spherical", 4, point, 7, rot.T @ (at - origin), name="ball")
    model.add_joint_spring_damper(0, 5.0, 0.2)
    q = rm.assemble(model, q)
    jac = spatial_loops.constraints(model, q)[2]
    kernel = np.linalg.svd(jac)[2][jac.shape[0]:].T
    return model, q, kernel @ rng.normal(size=kernel.shape[1]) * 0.3


@pytest.mark.parametrize("loads", ["constant", "function"])
def test_the_loops_multipliers_are_the_dynamics_at_every_samples_state(loads):
    """``result.multipliers`` at every sample (the first steps' ends, every later one, the shortened last step, t_eval
    times inside the steps) are the loop layer's lambda at the sample's (q, qd) and time with the run's loads (a
    joint spring-damper, tau constant or a function of (t, q, v)): ``loop_dynamics``, both its recursive and its
    dense KKT solve, to 1e-9 (measured: 0 and 6e-14). The index-3 steps' own multipliers, which the run reported
    before, were 0.3 to 1.1 % off at the first steps' ends, at rtol 1e-9 and 1e-10 alike, 1.6e-4 at the last."""
    model, q0, v0 = _tree_with_a_loop()
    tau = 0.1 * np.arange(model.nv) - 0.3

    def controller(t, q, v):
        return tau * np.cos(3.0 * t) - 0.2 * v

    run_tau = tau if loads == "constant" else controller
    for t_eval in (None, np.linspace(0.0, 0.2, 9)):
        result = rm.simulate(model, q0, v0, 0.2, rtol=1e-9, atol=1e-11, tau=run_tau, t_eval=t_eval, **BDF)
        assert result.status == "finished" and result.multipliers.shape == (result.t.size, 3)
        if t_eval is None:
            assert result.nsteps > 50 and np.diff(result.t)[:3].max() < 1e-3  # small first steps, all sampled
        else:
            np.testing.assert_array_equal(result.t, t_eval)
        for k, t in enumerate(result.t):
            applied = run_tau if loads == "constant" else controller(t, result.q[k], result.qd[k])
            for method in ("recursive", "mass_matrix"):
                expected = spatial_loops.loop_dynamics(model, result.q[k], result.qd[k], applied, t=t,
                                                       method=method).multipliers
                np.testing.assert_allclose(result.multipliers[k], expected, rtol=0,
                                           atol=1e-9 * np.abs(expected).max(), err_msg=f"sample {k}, t = {t}")


def test_the_driving_forces_are_the_dynamics_at_every_samples_state():
    """A driven arm (revolute ARM and prismatic SLIDER drivers, a spring-damper on the slider, tau constant), its
    run ended by a terminal event: ``driving_forces()`` at every sample (the first steps' ends, every later one, the
    event's) are the inverse dynamics' forces on the driven joints at the sample's state with the driven coordinates
    at their drivers' values (q = f(t), qd = f'(t), qdd = f''(t): the index-3 steps hold f, not f', to the Newton
    tolerance; the samples' driven rates are up to 8.6e-7 off f'), the free joints' accelerations ``qdd()``'s (whose
    inverse dynamics give tau on the free joints), to 1e-9 (measured: 1.3e-15 N). The steps' own multipliers, which
    the run reported before, gave 2.170 N for the inverse dynamics' 2.230 N at the first step's end."""
    model = _arm_with_slider()
    model.add_joint_spring_damper("slider", 50.0, 0.3)
    q0, v0 = model.neutral(), np.array([0.5, -0.4, 1.0, 0.0, 0.0])
    tau = np.array([0.2, -0.1, 0.3, 0.0, 0.0])
    drivers = {"arm": ARM, "slider": SLIDER}

    def event(t, q, v):
        return t - 0.27

    event.terminal = True
    result = rm.simulate(model, q0, v0, 0.5, rtol=1e-8, atol=1e-10, tau=tau, drivers=drivers, events=event, **BDF)
    assert result.status == "event" and result.t[-1] == pytest.approx(0.27, abs=1e-12)
    assert result.nsteps > 50 and np.diff(result.t)[:3].max() < 1e-3
    driving, qdd = result.driving_forces(), result.qdd()
    driven = [model.v_slice(body).start for body in drivers]
    assert driving.shape == (result.t.size, model.nv) and not np.delete(driving, driven, axis=1).any()
    assert np.abs(driving[:, driven]).min() > 0.1
    for k, t in enumerate(result.t):
        q, v = result.q[k].copy(), result.qd[k].copy()
        for body, (f, f_dot, f_ddot) in drivers.items():
            q[model.q_slice(body).start], v[model.v_slice(body).start] = f(t), f_dot(t)
            assert qdd[k, model.v_slice(body).start] == f_ddot(t)
        forces = rm.inverse_dynamics(model, q, v, qdd[k], t=t) - tau
        scale = np.abs(forces).max()
        np.testing.assert_allclose(np.delete(forces, driven), 0.0, rtol=0, atol=1e-9 * scale, err_msg=f"t = {t}")
        np.testing.assert_allclose(driving[k, driven], forces[driven], rtol=0, atol=1e-9 * scale, err_msg=f"t = {t}")
