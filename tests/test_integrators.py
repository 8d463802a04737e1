"""Integrator suite, inputs (tau functions, drivers) and results, on the seed 000 example and chains."""

import io
import logging
import re
import sys

import numba
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import recursive_mbd as rm
from recursive_mbd import ModelError, SimulationError, StateError
from recursive_mbd.model import chains


def test_seed000_energy_balance_and_two_integrators_agree():
    model, q0, qd0 = rm.models.two_squares()
    times = np.linspace(0.0, 5.0, 201)
    res = rm.simulate(model, q0, qd0, 5.0, rtol=1e-12, atol=1e-13, t_eval=times)
    kinetic, potential = res.energy()
    e0 = kinetic[0] + potential[0]
    assert e0 == pytest.approx(5.0 * 9.81 * 2.0)  # both centres at y = a = 1, spring at zero length
    assert np.max(np.abs(res.energy_balance())) < 1e-8 * e0
    assert res.dissipated_work[-1] > 10.0  # the damper really worked
    other = rm.simulate(model, q0, qd0, 5.0, method="scipy:DOP853", rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(other.q[-1], res.q[-1], atol=1e-7)
    fixed = rm.simulate(model, q0, qd0, 5.0, method="rk4", dt=1e-3)
    np.testing.assert_allclose(fixed.q[-1], res.q[-1], atol=1e-7)


def _driven_chain():
    model = chains.serial_chain(3)
    drivers = {"link1": (np.sin, np.cos, lambda t: -np.sin(t))}
    return model, drivers


def test_prescribed_motion_partitioned_mass_matrix_and_driving_torque():
    model, drivers = _driven_chain()
    res = rm.simulate(model, [0.0, 0.3, -0.2], [5.0, 0.0, 0.0], 3.0, rtol=1e-11, atol=1e-12, drivers=drivers,
                      t_eval=np.linspace(0, 3, 31))
    np.testing.assert_allclose(res.q[:, 0], np.sin(res.t), atol=1e-15)  # the driver's motion, q0[0] ignored
    np.testing.assert_allclose(res.qd[:, 0], np.cos(res.t), atol=1e-15)
    qdd = res.qdd()
    drive = res.driving_forces()
    free, fixed = [1, 2], [0]
    for i in range(res.t.size):
        q, qd = res.q[i], res.qd[i]
        mass = rm.mass_matrix(model, q)
        rhs = -rm.bias_forces(model, q, qd)[free] - mass[np.ix_(free, fixed)] @ qdd[i, fixed]
        np.testing.assert_allclose(qdd[i, free], np.linalg.solve(mass[np.ix_(free, free)], rhs), rtol=1e-10,
                                   atol=1e-10)
        assert qdd[i, 0] == pytest.approx(-np.sin(res.t[i]), abs=1e-15)
        tau = rm.inverse_dynamics(model, q, qd, qdd[i])
        assert drive[i, 0] == pytest.approx(tau[0], rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(tau[free], 0.0, atol=1e-9)
    assert np.all(drive[:, free] == 0.0)
    # the energy balance includes the driver's work
    assert np.max(np.abs(res.energy_balance())) < 1e-8


def test_driver_derivatives_by_differences_match_given_ones():
    model, drivers = _driven_chain()
    given = rm.simulate(model, np.zeros(3), np.zeros(3), 1.0, rtol=1e-11, atol=1e-12, drivers=drivers)
    differenced = rm.simulate(model, np.zeros(3), np.zeros(3), 1.0, rtol=1e-11, atol=1e-12,
                              drivers={"link1": np.sin})
    np.testing.assert_allclose(differenced.q[-1], given.q[-1], atol=1e-8)


def test_bad_drivers_are_refused():
    model = rm.Model()
    model.add_body(joint="planar", mass=1.0, inertia=0.1, name="free")
    with pytest.raises(ModelError, match="only revolute and prismatic"):
        rm.simulate(model, np.zeros(3), np.zeros(3), 1.0, drivers={"free": np.sin})
    chain = chains.serial_chain(2)
    with pytest.raises(TypeError, match="driver of body 'link1'"):
        rm.simulate(chain, np.zeros(2), np.zeros(2), 1.0, drivers={"link1": 3.0})
    with pytest.raises(StateError, match="driver of body 'link2'.*non-finite"):
        rm.simulate(chain, np.zeros(2), np.zeros(2), 1.0, drivers={"link2": lambda t: np.nan})


@numba.njit
def _pd_controller(t, q, qd):
    return -20.0 * (q - 0.3 * np.sin(t)) - 2.0 * qd


def _python_pd(t, q, qd):
    return -20.0 * (q - 0.3 * np.sin(t)) - 2.0 * qd


def test_tau_as_constant_function_and_controller():
    model = chains.serial_chain(2)
    q0, qd0 = np.array([0.5, -0.2]), np.zeros(2)
    constant = rm.simulate(model, q0, qd0, 1.0, tau=[0.3, -0.1], rtol=1e-11, atol=1e-12)
    of_time = rm.simulate(model, q0, qd0, 1.0, tau=lambda t: np.array([0.3, -0.1]), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(of_time.q[-1], constant.q[-1], atol=1e-12)
    compiled = rm.simulate(model, q0, qd0, 2.0, tau=_pd_controller, rtol=1e-11, atol=1e-12)
    python = rm.simulate(model, q0, qd0, 2.0, tau=_python_pd, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(python.q[-1], compiled.q[-1], atol=1e-12)
    assert compiled.nsteps == python.nsteps
    # the controller's work is in the balance
    assert np.max(np.abs(compiled.energy_balance())) < 1e-8
    with pytest.raises(StateError, match="tau function must return 2"):
        rm.simulate(model, q0, qd0, 1.0, tau=lambda t: np.zeros(3))
    with pytest.raises(TypeError, match="tau must take"):
        rm.simulate(model, q0, qd0, 1.0, tau=lambda t, q: np.zeros(2))


@pytest.mark.parametrize("method, order", [("rk4", 4), ("implicit_midpoint", 2)])
def test_fixed_step_order_of_convergence(method, order):
    model = chains.serial_chain(2)
    q0, qd0 = np.array([1.0, 0.5]), np.zeros(2)
    reference = rm.simulate(model, q0, qd0, 1.0, rtol=1e-13, atol=1e-15).q[-1]
    errors = [np.max(np.abs(rm.simulate(model, q0, qd0, 1.0, method=method, dt=dt).q[-1] - reference))
              for dt in (0.01, 0.005, 0.0025)]
    measured = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(measured - order) < 0.15), measured


@pytest.mark.parametrize("links, q0, period", [
    (1, [1.0], 2.0 * np.pi * np.sqrt(2.0 / (3.0 * 9.81)) * 1.07),  # small-angle period, stretched at 1 rad
    (2, [0.6, -0.3], 1.6),  # configuration-dependent mass matrix: symmetric, not strictly symplectic
])
def test_implicit_midpoint_energy_error_stays_bounded_over_1000_periods(links, q0, period):
    model = chains.serial_chain(links, length=1.0, mass=1.0)
    t_end = 1000 * period

    def energy_error(method):
        res = rm.simulate(model, q0, np.zeros(links), t_end, method=method, dt=period / 40, every=10)
        kinetic, potential = res.energy()
        error = np.abs(kinetic + potential - kinetic[0] - potential[0])
        return error[: error.size // 10].max(), error[-error.size // 10:].max(), abs(potential[0])

    first, last, scale = energy_error("implicit_midpoint")
    assert last < 1.5 * first  # no drift: the late error is no larger than the early one
    assert max(first, last) < 2e-3 * scale
    first, last, _ = energy_error("rk4")
    assert last > 3 * first  # RK4 at the same step drifts


def test_stiff_joint_spring_radau_takes_far_fewer_steps_than_dopri5():
    model = chains.serial_chain(5)
    # a joint spring 1e6 times gravity's stiffness scale m g L = 9.81 N m, overdamped
    model.add_joint_spring_damper("link3", 9.81e6, 1e4)
    q0 = np.full(5, 0.2)
    q0[2] = 0.0
    explicit = rm.simulate(model, q0, np.zeros(5), 0.02, rtol=1e-6, atol=1e-8)
    implicit = rm.simulate(model, q0, np.zeros(5), 0.02, method="scipy:Radau", rtol=1e-6, atol=1e-8)
    assert implicit.nsteps * 100 < explicit.nsteps
    np.testing.assert_allclose(implicit.q[-1], explicit.q[-1], atol=1e-6)


def test_midpoint_divergence_is_reported():
    model = chains.serial_chain(5)
    model.add_joint_spring_damper("link3", 9.81e6, 0.0)
    with pytest.raises(SimulationError, match="implicit iteration did not converge"):
        rm.simulate(model, np.full(5, 0.2), np.zeros(5), 1.0, method="implicit_midpoint", dt=0.01)


def test_result_outputs_and_npz_round_trip(tmp_path):
    model, q0, qd0 = rm.models.two_squares()
    res = rm.simulate(model, q0, qd0, 1.0, t_eval=np.linspace(0, 1, 11))
    poses = res.poses("body2")
    assert poses.shape == (11, 3)
    np.testing.assert_allclose(poses[0], [3.0, 1.0, 0.0], atol=1e-15)  # the seed's initial placement
    values = res.element_forces()
    assert values.shape == (11, 1, 3)
    np.testing.assert_allclose(values[5], rm.element_forces(model, res.q[5], res.qd[5])["per_element"])
    assert res.qdd().shape == (11, 2)
    path = tmp_path / "run.npz"
    res.save(path)
    loaded = rm.SimulationResult.load(path, model)
    np.testing.assert_array_equal(loaded.q, res.q)
    np.testing.assert_array_equal(loaded.dissipated_work, res.dissipated_work)
    assert (loaded.nsteps, loaded.nfev, loaded.method) == (res.nsteps, res.nfev, "dopri5")
    np.testing.assert_allclose(loaded.energy()[0], res.energy()[0])
    with pytest.raises(ValueError, match="loaded from a file"):
        loaded.qdd()
    with pytest.raises(ValueError, match="do not match"):
        rm.SimulationResult.load(path, chains.serial_chain(2))


def test_scipy_methods_and_bad_names():
    model = chains.serial_chain(3)
    q0 = np.array([0.4, 0.0, -0.3])
    ours = rm.simulate(model, q0, np.zeros(3), 1.0, rtol=1e-12, atol=1e-13)
    for name in ("RK45", "DOP853", "LSODA"):
        theirs = rm.simulate(model, q0, np.zeros(3), 1.0, method=f"scipy:{name}", rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(theirs.q[-1], ours.q[-1], atol=1e-7)
        assert theirs.t[0] == 0.0 and theirs.t[-1] == 1.0
    with pytest.raises(ValueError, match="unknown method"):
        rm.simulate(model, q0, np.zeros(3), 1.0, method="euler")


def test_dop853_reaches_tight_tolerance_in_fewer_steps():
    model = chains.serial_chain(4)
    q0 = np.array([1.2, -0.4, 0.3, 0.0])

    def rhs(_, y):
        return np.concatenate((y[4:], rm.forward_dynamics(model, y[:4], y[4:])))

    reference = solve_ivp(rhs, (0, 2), np.r_[q0, np.zeros(4)], method="DOP853", rtol=3e-14, atol=1e-15).y[:4, -1]
    high = rm.simulate(model, q0, np.zeros(4), 2.0, method="dop853", rtol=1e-12, atol=1e-14)
    low = rm.simulate(model, q0, np.zeros(4), 2.0, method="dopri5", rtol=1e-12, atol=1e-14)
    assert np.max(np.abs(high.q[-1] - reference)) < 1e-9
    assert high.nsteps * 3 < low.nsteps
    with pytest.raises(ValueError, match="dense output"):
        rm.simulate(model, q0, np.zeros(4), 2.0, method="dop853", t_eval=[1.0])


def _pendulum_crossing(t, q, qd):
    return q[0]  # the rod passes the vertical


def test_events_record_and_stop_on_the_dense_output():
    model = chains.serial_chain(1, length=1.0, mass=1.0)
    res = rm.simulate(model, [0.5], [0.0], 5.0, rtol=1e-12, atol=1e-13, events=_pendulum_crossing)
    assert res.status == "finished" and res.t[-1] == 5.0
    crossings = res.t_events[0]
    assert crossings.size >= 4
    np.testing.assert_allclose(res.q_events[0][:, 0], 0.0, atol=1e-10)
    half_periods = np.diff(crossings)
    np.testing.assert_allclose(half_periods, half_periods[0], rtol=1e-8)  # a conservative pendulum is periodic
    reference = rm.simulate(model, [0.5], [0.0], 5.0, method="scipy:DOP853", rtol=1e-12, atol=1e-13,
                            events=_pendulum_crossing)
    np.testing.assert_allclose(crossings, reference.t_events[0], atol=1e-8)

    def falling(t, q, qd):
        return q[0]

    falling.terminal = True
    falling.direction = -1.0
    stopped = rm.simulate(model, [-0.5], [0.0], 5.0, rtol=1e-12, atol=1e-13, events=[_pendulum_crossing, falling],
                          t_eval=np.linspace(0, 5, 51))
    assert stopped.status == "event"
    # starting at -0.5 the first crossing rises; the run stops at the first falling one, the second crossing
    assert stopped.t[-1] == pytest.approx(crossings[1], abs=1e-8)
    assert stopped.t_events[0].size == 2 and stopped.t_events[1].size == 1
    assert abs(stopped.q[-1, 0]) < 1e-10 and np.all(np.diff(stopped.t) > 0)
    with pytest.raises(ValueError, match="events need a method with dense output"):
        rm.simulate(model, [0.5], [0.0], 1.0, method="rk4", dt=0.01, events=falling)


def _assert_identical_results(shown, silent):
    """Every array, count and status of two results equal, bit for bit (events and multipliers included)."""
    fields = {name for name in vars(silent) if not name.startswith("_") and name != "model"}
    assert fields == {name for name in vars(shown) if not name.startswith("_") and name != "model"}
    for name in sorted(fields):
        a, b = getattr(shown, name), getattr(silent, name)
        if isinstance(b, list):
            assert len(a) == len(b), name
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y, err_msg=name, strict=True)
        elif isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=name, strict=True)
        else:
            assert a == b, (name, a, b)


@pytest.mark.parametrize(("method", "options"), [
    ("dopri5", {}), ("dopri5", {"t_eval": np.linspace(0.0, 0.5, 11)}), ("rk4", {"dt": 1e-3, "every": 7}),
    ("generalized_alpha", {"dt": 1e-3}), ("bdf", {})])
def test_a_progress_bar_leaves_the_run_unchanged(method, options):
    """progress=True gives the same result as progress=False, bit for bit: the bar follows the times that the
    compiled loop's polls report. (The bar once split a run into 100 pieces, each restarting the adaptive step
    size: dopri5 took 31,431 steps instead of 31,379 on a 200-link chain released from the horizontal.)"""
    model, q0, qd0 = rm.models.two_squares()
    silent = rm.simulate(model, q0, qd0, 0.5, method=method, progress=False, **options)
    shown = rm.simulate(model, q0, qd0, 0.5, method=method, progress=True, **options)
    _assert_identical_results(shown, silent)
    assert silent.t[-1] == 0.5 and silent.nsteps > 20


def test_progress_off_a_terminal_is_logged(monkeypatch, caplog):
    """progress=None with stderr not a terminal: INFO records of the logger "recursive_mbd" every
    PROGRESS_LOG_INTERVAL seconds of wall time (here 0: at every poll of the compiled loop) and one when the run
    ends; the run is the same as without. progress=False: no records."""
    from recursive_mbd.integrate import runs  # noqa: PLC0415

    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    monkeypatch.setattr(runs, "PROGRESS_LOG_INTERVAL", 0.0)
    caplog.set_level(logging.INFO, logger="recursive_mbd")
    model, q0, qd0 = rm.models.two_squares()
    logged = rm.simulate(model, q0, qd0, 0.5)
    messages = [record.getMessage() for record in caplog.records if record.name == "recursive_mbd"]
    assert len(messages) >= 2 and all(re.fullmatch(r"dopri5: t = 0\.\d{3} of 0\.500 s \(\d+%\), \d+ evaluations, "
                                                   r"\d+ s wall time", line) for line in messages[:-1]), messages
    assert re.fullmatch(rf"dopri5: ended at t = 0\.500 s, {logged.nfev} evaluations, \d+\.\d s wall time",
                        messages[-1]), messages
    assert sys.stderr.getvalue() == ""  # no bar
    caplog.clear()
    silent = rm.simulate(model, q0, qd0, 0.5, progress=False)
    assert caplog.records == []
    _assert_identical_results(logged, silent)


def test_progress_bar_shows_short_spans_with_their_digits(monkeypatch):
    """A bar over 1 ms of simulated time counts in seconds to three digits of the span, not "0.00/0.00"."""
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    model, q0, qd0 = rm.models.two_squares()
    rm.simulate(model, q0, qd0, 1e-3, progress=True)
    shown = sys.stderr.getvalue()
    assert "dopri5:   0%|" in shown and " 0.00000/0.00100 s [" in shown and "0.00/0.00" not in shown, shown


def test_dense_output_refusals_name_every_method_that_has_it():
    """t_eval and events refused for dop853 and rk4 name all the methods that take them, bdf and
    generalized_alpha included (the messages named only dopri5 and scipy), and each method named does take them."""
    model = chains.serial_chain(1, length=1.0, mass=1.0)
    with pytest.raises(ValueError, match="dense output") as refused_t_eval:
        rm.simulate(model, [0.5], [0.0], 0.2, method="dop853", t_eval=[0.1])
    with pytest.raises(ValueError, match="events need a method with dense output") as refused_events:
        rm.simulate(model, [0.5], [0.0], 0.2, method="rk4", dt=0.01, events=_pendulum_crossing)
    # each on a model the suite already runs that method on with events (no new numba specialisation)
    for method, n, options in (("dopri5", 1, {}), ("generalized_alpha", 2, {"dt": 0.01}), ("bdf", 1, {})):
        assert method in str(refused_t_eval.value) and method in str(refused_events.value)
        res = rm.simulate(chains.serial_chain(n), [0.5] * n, [0.0] * n, 0.2, method=method, t_eval=[0.1],
                          events=_pendulum_crossing, **options)
        assert res.status == "finished" and np.array_equal(res.t, [0.0, 0.1, 0.2])


def test_the_progress_log_counts_the_run_from_its_first_poll_not_the_compilation(monkeypatch, caplog):
    """The clock of the progress records starts at the compiled loop's first poll: a run whose kernels took 100 s
    to compile (announced apart) and then ran 2 s reports 2 s of wall time."""
    from recursive_mbd.integrate import runs  # noqa: PLC0415

    clock = iter([100.0, 101.0, 102.0])  # the first poll, after 100 s of compiling; a later poll; the end
    monkeypatch.setattr(runs.time, "perf_counter", lambda: next(clock))
    caplog.set_level(logging.INFO, logger="recursive_mbd")
    log = runs._ProgressLog("dopri5", 0.0, 1.0, 0.5)
    log.update(0.0, 2)
    log.update(0.4, 500)
    log.close(1.0, 1000)
    assert [record.getMessage() for record in caplog.records] == [
        "dopri5: t = 0.40 of 1.00 s (40%), 500 evaluations, 1 s wall time",
        "dopri5: ended at t = 1.00 s, 1000 evaluations, 2.0 s wall time"]
