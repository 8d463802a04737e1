"""method="bdf": variable-step, variable-order BDF with the O(N) Newton matrix (recursive_mbd/_kernels/bdf.py)."""

import re
import warnings

import numpy as np
import pytest
from conftest import TREE_SPECS, build, random_state
from test_implicit import _rotation_rows

import recursive_mbd as rm
from recursive_mbd import SimulationError
from recursive_mbd._kernels.planar import bdf as kernels
from recursive_mbd.integrate.implicit import gravity_stiffness
from recursive_mbd.model import chains
from recursive_mbd.model.workspace import workspace

# Under NUMBA_BOUNDSCHECK=1 in CI (.ci/run) only the kernel test marked `boundscheck` below: each bdf time loop
# specialisation compiles for about a minute there, and the whole module would take CI past its budget.


def test_rescaled_differences_resample_the_interpolating_polynomial():
    # D of a cubic at step h, re-sampled at step r h, must equal the differences of the cubic on the new grid
    def differences(points):
        rows = [points.copy()]
        for _ in range(3):
            rows.append(rows[-1][:-1] - rows[-1][1:])
        return np.array([row[0] for row in rows])

    def cubic(t):
        return 1.0 + 2.0 * t - 0.5 * t ** 2 + 0.3 * t ** 3

    h, ratio, t_n = 0.1, 0.37, 2.0
    D = np.zeros((kernels.MAX_ORDER + 3, 1))
    D[:4, 0] = differences(cubic(t_n - h * np.arange(4)))
    scratch = [np.empty((kernels.MAX_ORDER + 2, kernels.MAX_ORDER + 2)) for _ in range(3)]
    kernels.rescale_differences(D, 3, ratio, *scratch, np.empty(kernels.MAX_ORDER + 2))
    np.testing.assert_allclose(D[:4, 0], differences(cubic(t_n - ratio * h * np.arange(4))), rtol=1e-12, atol=1e-14)
    out = np.empty(1)
    kernels.interpolate(D, 3, t_n, ratio * h, t_n - 0.123, out)  # and the interpolant reproduces the cubic
    assert out[0] == pytest.approx(cubic(t_n - 0.123), rel=1e-13)


def test_predictor_sums_the_differences():
    # y_pred = sum_{j<=k} D[j], psi = sum_{j<=k} gamma_j D[j] / gamma_k, scale = atol + rtol |y_pred|, entry by entry
    rng = np.random.default_rng(3)
    D = rng.normal(size=(kernels.MAX_ORDER + 3, 37))
    gammas = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, kernels.MAX_ORDER + 2))))
    for order in range(1, kernels.MAX_ORDER + 1):
        y_pred, psi, scale = np.empty(37), np.empty(37), np.empty(37)
        kernels.predict(D, order, gammas, 1e-9, 1e-6, y_pred, psi, scale)
        expected = D[:order + 1].sum(axis=0)
        np.testing.assert_allclose(y_pred, expected, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(psi, gammas[:order + 1] @ D[:order + 1] / gammas[order], rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(scale, 1e-9 + 1e-6 * np.abs(y_pred), rtol=1e-15)


def _double_pendulum():
    return chains.serial_chain(2), np.array([1.0, 0.5]), np.zeros(2)


def test_error_falls_with_rtol_on_a_double_pendulum():
    model, q0, qd0 = _double_pendulum()
    reference = rm.simulate(model, q0, qd0, 2.0, method="dop853", rtol=1e-12, atol=1e-14)
    errors = []
    for rtol in (1e-5, 1e-7, 1e-9):
        res = rm.simulate(model, q0, qd0, 2.0, method="bdf", rtol=rtol, atol=1e-2 * rtol)
        assert res.t[-1] == 2.0 and res.method == "bdf"
        assert res.nsteps <= res.newton_iterations <= 4 * res.nsteps
        errors.append(np.max(np.abs(res.q[-1] - reference.q[-1])))
    assert errors[0] > 10.0 * errors[1] > 100.0 * errors[2]
    assert errors[2] < 1e-7


def test_agrees_with_dop853_on_the_seed000_example():
    # seed 000's two squares (a tree here: two pins and a spring-damper, no loop) with its energy balance
    model, q0, qd0 = rm.models.two_squares(m=5.0, a=1.0, k=10.0, c=1.0, g=9.81)
    times = np.linspace(0.0, 5.0, 51)
    reference = rm.simulate(model, q0, qd0, 5.0, method="dop853", rtol=1e-10, atol=1e-12, every=1)
    res = rm.simulate(model, q0, qd0, 5.0, method="bdf", rtol=1e-10, atol=1e-12, t_eval=times)
    np.testing.assert_array_equal(res.t, times)
    final = np.abs(res.q[-1] - reference.q[-1]).max()
    assert final < 1e-8  # the requested 1e-10 relative per step, accumulated over about 2000 steps
    assert res.dissipated_work[-1] == pytest.approx(reference.dissipated_work[-1], rel=1e-8)
    assert np.abs(res.energy_balance()).max() < 1e-8 * 122.0  # E + W_damper - E(0), W_damper about 122 J
    dense = rm.simulate(model, q0, qd0, 5.0, method="dopri5", rtol=1e-11, atol=1e-12, t_eval=times)
    np.testing.assert_allclose(res.q, dense.q, atol=1e-8)  # the interpolant between steps


def test_stiff_joint_spring_takes_no_more_steps_than_scipy_bdf():
    model = chains.serial_chain(5)
    model.add_joint_spring_damper("link3", 9.81e6, 1e4)  # 1e6 times m g L, overdamped (test_integrators)
    q0 = np.full(5, 0.2)
    q0[2] = 0.0
    ours = rm.simulate(model, q0, np.zeros(5), 0.02, method="bdf", rtol=1e-6, atol=1e-8)
    scipy_bdf = rm.simulate(model, q0, np.zeros(5), 0.02, method="scipy:BDF", rtol=1e-6, atol=1e-8)
    explicit = rm.simulate(model, q0, np.zeros(5), 0.02, rtol=1e-10, atol=1e-12)
    assert ours.nsteps <= scipy_bdf.nsteps
    assert ours.nsteps * 100 < explicit.nsteps
    # the end state to the requested tolerance (measured: 2.2 tolerances at most, on qd of link1; scipy:Radau
    # takes 17 steps here and bdf does not match that: benchmarks/bdf_stiff.py)
    for ends, reference in ((ours.q[-1], explicit.q[-1]), (ours.qd[-1], explicit.qd[-1])):
        assert np.all(np.abs(ends - reference) < 5.0 * (1e-8 + 1e-6 * np.abs(reference)))


def test_events_and_t_eval_on_the_interpolant():
    # two links, not one: a one-body model's arrays type as C-contiguous and would compile every time loop again
    model = chains.serial_chain(2)
    q0 = [0.5, -0.2]

    def upright_crossing(t, q, qd):
        return q[0]

    reference = rm.simulate(model, q0, [0.0, 0.0], 3.0, method="dopri5", rtol=1e-12, atol=1e-13,
                            events=upright_crossing)
    res = rm.simulate(model, q0, [0.0, 0.0], 3.0, method="bdf", rtol=1e-10, atol=1e-12, events=upright_crossing)
    assert len(reference.t_events[0]) == len(res.t_events[0]) >= 2
    np.testing.assert_allclose(res.t_events[0], reference.t_events[0], atol=1e-8)
    assert np.abs(res.q_events[0][:, 0]).max() < 1e-8

    upright_crossing.terminal = True
    stopped = rm.simulate(model, q0, [0.0, 0.0], 3.0, method="bdf", rtol=1e-10, atol=1e-12, events=upright_crossing)
    assert stopped.status == "event"
    assert stopped.t[-1] == pytest.approx(reference.t_events[0][0], abs=1e-8)


def test_tau_function_and_driver_match_dopri5():
    model = chains.serial_chain(3)
    model.add_joint_spring_damper("link2", 50.0, 0.5)

    def tau(t, q, qd):
        return np.array([0.0, 0.0, 0.2 * np.sin(3.0 * t)])

    drivers = {"link1": lambda t: 0.3 * np.sin(2.0 * t)}
    options = {"tau": tau, "drivers": drivers, "t_eval": np.linspace(0.0, 2.0, 11)}
    ours = rm.simulate(model, np.zeros(3), np.zeros(3), 2.0, method="bdf", rtol=1e-9, atol=1e-11, **options)
    reference = rm.simulate(model, np.zeros(3), np.zeros(3), 2.0, method="dopri5", rtol=1e-11, atol=1e-12,
                            **options)
    np.testing.assert_allclose(ours.q, reference.q, atol=1e-7)
    np.testing.assert_allclose(ours.applied_work, reference.applied_work, atol=1e-7)
    np.testing.assert_allclose(ours.driving_forces(), reference.driving_forces(), atol=1e-5)


def test_newton_failure_at_the_smallest_step_keeps_the_samples():
    # Coulomb friction far above the weight at the first joint: the implicit equation has no solution once it
    # sticks (two links, not one: a one-body model's arrays type as C-contiguous, another compiled time loop)
    model = chains.serial_chain(2)

    def friction(t, q, qd):
        return np.array([-100.0 * np.sign(qd[0]), 0.0])

    with pytest.raises(SimulationError, match=r"bdf failed at t = .*Newton did not converge at the smallest step") \
            as caught:
        rm.simulate(model, [0.3, 0.0], [2.0, -2.0], 1.0, method="bdf", rtol=1e-6, atol=1e-9, tau=friction)
    err = caught.value
    assert err.result.status == "failed"
    assert err.result.t.size >= 2 and err.result.t[-1] <= err.t < 1.0
    assert np.all(err.result.qd[:, 0] > -1e-9) and abs(err.result.qd[-1, 0]) < 1e-6  # it slid until it stuck


def test_singular_model_is_refused_clearly():
    model = rm.Model()
    model.add_body("ground", "revolute", parent_point=(0, 0), child_point=(0, 0.5), mass=0.0, inertia=0.0)
    with pytest.raises((SimulationError, rm.ModelError), match="singular"):
        rm.simulate(model, [0.1], [0.0], 1.0, method="bdf")


def test_max_wall_time_stops_with_the_samples_so_far():
    model = chains.serial_chain(200)
    q0 = np.full(200, 0.01)
    with pytest.raises(SimulationError, match="max_wall_time") as caught:
        rm.simulate(model, q0, np.zeros(200), 1e4, method="bdf", rtol=1e-10, atol=1e-12, max_wall_time=0.3)
    assert caught.value.result.status == "time_limit"
    assert caught.value.result.t.size >= 1


@pytest.mark.boundscheck
@pytest.mark.parametrize("index", range(0, 200, 40))
def test_stiffness_product_is_the_documented_matrix(index):
    # K x = (T^T diag(K_b) T + diag(joint springs)) x on random trees (all joint types), T by the test's own rows
    model = build(TREE_SPECS[index])
    q = random_state(model, index)[0]
    rng = np.random.default_rng(index)
    j_stiff = rng.uniform(0.0, 10.0, model.nq)
    x = rng.standard_normal(model.nq)
    kb = gravity_stiffness(model, q)  # also leaves the kinematics of q in the workspace
    out = np.empty(model.nq)
    kernels._stiffness_product(model.body_int, workspace(model).ws, kb, j_stiff, x, np.empty((model.nbodies, 3)),
                               out)
    rows = _rotation_rows(model)
    dense = rows.T @ np.diag(kb) @ rows + np.diag(j_stiff)
    np.testing.assert_allclose(out, dense @ x, rtol=1e-12, atol=1e-12 * np.abs(dense).max() * np.abs(x).max())


@pytest.mark.parametrize("method", ["bdf", "generalized_alpha"])
def test_the_implicit_methods_refuse_the_augmented_formulation_by_name(method):
    chain = chains.serial_chain(3)
    with pytest.raises(ValueError, match=f"method '{method}' integrates the recursive formulation"):
        rm.simulate(chain, np.zeros(3), np.zeros(3), 0.1, method=method, dt=0.01, formulation="augmented")


def test_four_bar_agrees_with_dop853_at_rtol_1e_10():
    # a closed loop (GGL: phi = 0 and J qd = 0 at every step, module doc): the loop stays closed to round-off and
    # the motion agrees with dop853 to the accuracy requested
    four_bar, q0 = rm.models.four_bar()
    reference = rm.simulate(four_bar, q0, np.zeros(3), 1.0, method="dop853", rtol=1e-13, atol=1e-14)
    res = rm.simulate(four_bar, q0, np.zeros(3), 1.0, method="bdf", rtol=1e-10, atol=1e-12)
    assert res.t[-1] == 1.0
    np.testing.assert_allclose(res.q[-1], reference.q[-1], atol=1e-8)
    np.testing.assert_allclose(res.qd[-1], reference.qd[-1], atol=3e-8)
    assert res.constraint_drift.max() < 1e-12
    coarse = rm.simulate(four_bar, q0, np.zeros(3), 1.0, method="bdf", rtol=1e-6, atol=1e-8)
    assert np.abs(coarse.q[-1] - reference.q[-1]).max() > 10.0 * np.abs(res.q[-1] - reference.q[-1]).max()


def test_newton_factors_are_reused_across_steps():
    # the hanging swing of a 50-link chain: the Newton matrix is factorised far less often than once per step
    # and a step takes about one Newton iteration (the contraction rate carried over the steps, CVODE's test)
    chain = chains.serial_chain(50)
    q0 = 1e-3 * np.linspace(1.0, 1.5, 50)
    res = rm.simulate(chain, q0, np.zeros(50), 2.0, method="bdf", rtol=1e-7, atol=1e-10, max_order=2)
    assert res.newton_factorizations < 0.5 * res.nsteps
    assert res.newton_iterations < 2.0 * res.nsteps


def test_max_order_caps_the_order():
    model, q0, qd0 = _double_pendulum()
    reference = rm.simulate(model, q0, qd0, 1.0, method="dop853", rtol=1e-12, atol=1e-14)
    steps = {}
    errors = {}
    for max_order in (1, 2, 5):
        res = rm.simulate(model, q0, qd0, 1.0, method="bdf", rtol=1e-8, atol=1e-10, max_order=max_order)
        errors[max_order] = np.abs(res.q[-1] - reference.q[-1]).max()
        steps[max_order] = res.nsteps
    assert errors[1] < 1e-3 and errors[2] < 1e-5 and errors[5] < 1e-6  # global errors of the local 1e-8
    # a first-order method needs (1 / tol)^(1/2) steps, a second-order one (1 / tol)^(1/3), order 5 fewer still
    assert steps[1] > 5 * steps[2] > 5 * steps[5]
    for bad in (0, 6, 2.0, True):
        with pytest.raises(ValueError, match="max_order must be an integer in 1..5"):
            rm.simulate(model, q0, qd0, 1.0, method="bdf", max_order=bad)
    with pytest.raises(ValueError, match="max_order is an option of method 'bdf'"):
        rm.simulate(model, q0, qd0, 1.0, method="dopri5", max_order=2)


def test_stability_limit_on_an_undamped_chain_is_found_and_the_order_capped():
    # serial_chain(100) swinging in its first mode, no damping: BDF3-5 are unstable on the unexcited high modes
    # (h omega near their stability boundary); the steps collapse to that limit unless it is detected (without
    # detection 3,740 steps, error 1e-6; with a 2 % misfit test 1,348 steps, found at 0.39 s; at 5 % 890, found
    # at 0.19 s). Found, the run goes on at orders 1-2 near max_order=2's step count (619), says so in a warning,
    # and keeps the linear solution to the accuracy of max_order=2.
    chain = chains.serial_chain(100)
    omega, shapes = rm.studies.chain_modes(chain, 1)
    q0 = 1e-3 * shapes[:, 0] / np.abs(shapes[:, 0]).max()
    times = np.linspace(0.0, 2.0, 21)
    options = {"method": "bdf", "rtol": 1e-7, "atol": 1e-10, "t_eval": times}
    limit = r"orders 3-5 reached their stability limit at t = .* max_order=2"
    with pytest.warns(RuntimeWarning, match=limit) as caught:
        found = rm.simulate(chain, q0, np.zeros(100), 2.0, **options)
    capped = rm.simulate(chain, q0, np.zeros(100), 2.0, max_order=2, **options)
    # the result says when, as the warning does (to its 6 digits), inside the run; no limit at max_order=2
    message = next(str(w.message) for w in caught if re.search(limit, str(w.message)))
    warned_at = float(re.search(r"stability limit at t = (\S+) s", message).group(1))
    assert 0.0 < found.order_limited_at < 2.0
    assert found.order_limited_at == pytest.approx(warned_at, rel=1e-5)
    assert capped.order_limited_at is None
    assert found.nsteps < 1.6 * capped.nsteps
    linear = np.cos(omega[0] * times)[:, None] * q0
    assert np.abs(found.q - linear).max() < 1e-3 * 1e-3  # 1e-3 relative, as max_order=2 (the error 1e-6 nonlinear)
    assert np.abs(capped.q - linear).max() < 1e-3 * 1e-3


def test_no_stability_limit_is_found_on_a_resolved_motion():
    # the double pendulum at large amplitude keeps its orders 3-5 (the detection needs a root that predicts
    # three runs of corrections in a row, to 5 %): the step counts of main
    model, q0, qd0 = _double_pendulum()
    for rtol, most_steps in ((1e-5, 300), (1e-8, 900)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = rm.simulate(model, q0, qd0, 2.0, method="bdf", rtol=rtol, atol=1e-2 * rtol)
        assert res.nsteps <= most_steps
        assert res.order_limited_at is None
