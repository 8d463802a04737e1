"""rm.simulate_many: every member equals rm.simulate of the same member; failures stay with their member."""

import _thread
import re
import threading
import time
import warnings

import numba
import numpy as np
import pytest
from _helpers import damaged_copies
from numba.core.errors import NumbaExperimentalFeatureWarning

import recursive_mbd as rm
from recursive_mbd.errors import ModelError, StateError
from recursive_mbd.integrate import ensemble
from recursive_mbd.integrate.ensemble import EnsembleResult


def double_pendulum(mass2=0.5, gravity=9.81, length2=0.5):
    """Two uniform rods (the serial_chain(2) geometry), the second of mass ``mass2`` and length ``length2``."""
    model = rm.Model(gravity=(0.0, -gravity))
    model.add_body("ground", parent_point=(0, 0), child_point=(0, 0.25), mass=0.5, inertia=0.5 * 0.25 / 12,
                   name="arm1")
    model.add_body("arm1", parent_point=(0, -0.25), child_point=(0, length2 / 2), mass=mass2,
                   inertia=0.5 * 0.25 / 12, name="arm2")
    return model.compile()


def _starts(k, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.5, 2.5, (k, 2)), rng.normal(size=(k, 2))


@pytest.mark.parametrize("method", ["rk4", "implicit_midpoint"])
def test_fixed_step_members_equal_simulate_bit_for_bit(method):
    model = double_pendulum()
    Q0, QD0 = _starts(5)
    ens = rm.simulate_many(model, Q0, QD0, 1.0, method, dt=0.01, every=3)
    assert ens.q.shape == (5, ens.t.size, 2) and ens.qd.shape == ens.q.shape
    for m in range(5):
        ref = rm.simulate(model, Q0[m], QD0[m], 1.0, method, dt=0.01, every=3)
        assert np.array_equal(ens.t, ref.t)
        assert np.array_equal(ens.q[m], ref.q) and np.array_equal(ens.qd[m], ref.qd)
        assert np.array_equal(ens.applied_work[m], ref.applied_work)
    assert list(ens.status) == ["finished"] * 5 and np.all(ens.t_stop == 1.0)


def test_parameters_vary_per_member_as_if_each_had_its_own_model():
    Q0, QD0 = _starts(4, 1)
    masses = np.array([0.5, 0.2, 1.3, 2.0])
    gravities = np.array([[0.0, -9.81], [0.5, -3.0], [0.0, -20.0], [-1.0, -9.81]])
    points = np.array([[0.0, 0.25], [0.0, 0.1], [0.05, 0.4], [0.0, 0.3]])  # arm2's joint point: its length
    te = np.linspace(0.0, 1.5, 16)
    ens = rm.simulate_many(double_pendulum(), Q0, QD0, 1.5, t_eval=te, rtol=1e-10, atol=1e-12,
                           params={"mass:arm2": masses, "gravity": gravities, "child_point:arm2": points})
    for m in range(4):
        model = rm.Model(gravity=gravities[m])
        model.add_body("ground", parent_point=(0, 0), child_point=(0, 0.25), mass=0.5, inertia=0.5 * 0.25 / 12,
                       name="arm1")
        model.add_body("arm1", parent_point=(0, -0.25), child_point=points[m], mass=masses[m],
                       inertia=0.5 * 0.25 / 12, name="arm2")
        ref = rm.simulate(model.compile(), Q0[m], QD0[m], 1.5, t_eval=te, rtol=1e-10, atol=1e-12)
        assert np.array_equal(ens.t, ref.t)
        assert np.allclose(ens.q[m], ref.q, rtol=0, atol=1e-13) and np.allclose(ens.qd[m], ref.qd, rtol=0, atol=1e-12)
        assert ens.nfev[m] == ref.nfev


def test_element_parameters_and_per_member_tau():
    Q0, QD0 = _starts(3, 2)
    stiffness, damping = np.array([10.0, 50.0, 0.0]), np.array([1.0, 0.0, 3.0])
    tau = np.array([[0.0, 0.0], [5.0, -1.0], [-2.0, 0.5]])
    ens = rm.simulate_many(rm.models.two_squares()[0], Q0, QD0, 0.5, "rk4", dt=1e-3, tau=tau,
                           params={"stiffness:spring_damper": stiffness, "damping:spring_damper": damping})
    for m in range(3):
        model = rm.models.two_squares(k=stiffness[m], c=damping[m])[0]
        ref = rm.simulate(model, Q0[m], QD0[m], 0.5, "rk4", dt=1e-3, tau=tau[m])
        assert np.array_equal(ens.q[m], ref.q) and np.array_equal(ens.dissipated_work[m], ref.dissipated_work)


@numba.njit(cache=True)
def _pd_controller(t, q, qd):
    return -4.0 * q - 0.5 * qd + np.sin(t)


def test_compiled_tau_function_runs_in_every_member():
    model = double_pendulum()
    Q0, QD0 = _starts(3, 3)
    ens = rm.simulate_many(model, Q0, QD0, 0.8, "rk4", dt=0.01, tau=_pd_controller)
    for m in range(3):
        ref = rm.simulate(model, Q0[m], QD0[m], 0.8, "rk4", dt=0.01, tau=_pd_controller)
        assert np.array_equal(ens.q[m], ref.q)
    with pytest.raises(TypeError, match="numba-compiled"):
        rm.simulate_many(model, Q0, QD0, 0.8, "rk4", dt=0.01, tau=lambda t: np.zeros(2))


@numba.njit(cache=True)
def _arm_flips(t, q, qd):
    return min(np.pi - abs(q[0]), np.pi - abs(q[0] + q[1]))


_arm_flips.terminal = True
_arm_flips.direction = -1.0


def test_terminal_compiled_event_ends_each_member_where_simulate_does(tmp_path):
    model = double_pendulum()
    Q0 = np.array([[2.8, 0.3], [0.2, 0.1], [-2.9, 2.0]])
    QD0 = np.array([[3.0, 0.0], [0.0, 0.0], [-2.0, 1.0]])
    te = np.linspace(0.0, 3.0, 31)
    ens = rm.simulate_many(model, Q0, QD0, 3.0, t_eval=te, events=_arm_flips)
    for m in range(3):
        ref = rm.simulate(model, Q0[m], QD0[m], 3.0, t_eval=te, events=_arm_flips)
        if ref.status == "event":
            assert ens.status[m] == "event"
            assert ens.t_event[m] == ref.t_events[0][0] and ens.t_stop[m] == ref.t_events[0][0]
            assert np.array_equal(ens.q_event[m], ref.q_events[0][0])
            assert np.array_equal(ens.q[m, :ens.nsamples[m]], ref.q[:-1])  # the stop state is the event's
            assert np.all(np.isnan(ens.q[m, ens.nsamples[m]:]))
        else:
            assert ens.status[m] == "finished" and np.isnan(ens.t_event[m])
            assert np.array_equal(ens.q[m], ref.q)
    assert set(ens.status) == {"event", "finished"}
    _reloaded(ens, tmp_path)


def test_a_member_that_blows_up_keeps_its_samples_and_leaves_the_others_alone():
    Q0, QD0 = _starts(3, 4)
    gravities = np.array([[0.0, -9.81], [0.0, -4e6], [0.0, -9.81]])  # member 1: rk4 unstable at this dt
    ens = rm.simulate_many(double_pendulum(), Q0, QD0, 1.0, "rk4", dt=0.01, params={"gravity": gravities})
    assert list(ens.status) == ["finished", "failed", "finished"] and list(ens.failed) == [1]
    assert "non-finite" in ens.reasons[1]
    # success and message per member, as scipy's OdeResult: the failed member says when and why
    assert ens.success.tolist() == [True, False, True]
    assert ens.message[0] == ens.message[2] == "the integration reached t_end = 1 s"
    assert ens.message[1] == f"the run failed at t = {ens.t_stop[1]:.9g} s: {ens.reasons[1]}"
    with pytest.raises(rm.SimulationError) as info:
        rm.simulate(double_pendulum(gravity=4e6), Q0[1], QD0[1], 1.0, "rk4", dt=0.01)
    ref = info.value.result
    assert ref.success is False and ref.message == str(info.value)
    assert repr(ref).endswith(": 2 samples, t = 0 .. 0.01 s, 1 step (0 rejected), 8 evaluations>")
    # the single run's divergence watch stops it at its first diverged sample; the member runs on to the overflow
    assert 1 < ref.t.size <= ens.nsamples[1] < ens.t.size and info.value.t <= ens.t_stop[1]
    assert np.array_equal(ens.q[1, :ref.t.size], ref.q)
    assert np.all(np.isnan(ens.q[1, ens.nsamples[1]:]))
    alone = rm.simulate_many(double_pendulum(), Q0[[0, 2]], QD0[[0, 2]], 1.0, "rk4", dt=0.01)
    assert np.array_equal(ens.q[[0, 2]], alone.q)


@numba.njit(cache=True)
def _tau_fails_past_one_radian(t, q, qd):
    tau = np.zeros(2)
    if abs(q[0]) > 1.0:
        tau[0] = np.nan
    return tau


def test_compiled_tau_returning_nan_stops_its_member_where_simulate_does(tmp_path):
    model = double_pendulum()
    Q0 = np.array([[0.2, 0.0], [0.9, 0.0], [-0.3, 0.1]])
    QD0 = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 0.0]])  # member 1 swings past 1 rad; the others stay below
    for method, options in (("rk4", {"dt": 0.01}), ("dopri5", {"t_eval": np.linspace(0.0, 1.0, 101)})):
        ens = rm.simulate_many(model, Q0, QD0, 1.0, method, tau=_tau_fails_past_one_radian, **options)
        assert list(ens.status) == ["finished", "failed", "finished"], method
        assert "_tau_fails_past_one_radian" in ens.reasons[1] and "non-finite" in ens.reasons[1]
        _reloaded(ens, tmp_path)
        with pytest.raises(rm.SimulationError, match="returned a non-finite value") as info:
            rm.simulate(model, Q0[1], QD0[1], 1.0, method, tau=_tau_fails_past_one_radian, **options)
        ref = info.value.result
        assert 0.0 < ens.t_stop[1] == info.value.t < 1.0 and ens.nsamples[1] == ref.t.size
        assert np.array_equal(ens.q[1, :ens.nsamples[1]], ref.q)
        assert np.all(np.isnan(ens.q[1, ens.nsamples[1]:]))
        for m in (0, 2):
            assert np.array_equal(ens.q[m], rm.simulate(model, Q0[m], QD0[m], 1.0, method,
                                                        tau=_tau_fails_past_one_radian, **options).q)


def _reloaded(ens, tmp_path):
    """``ens`` saved and loaded back: every field equal (the checks of load accept what runs produce)."""
    ens.save(tmp_path / "ens.npz")
    back = EnsembleResult.load(tmp_path / "ens.npz")
    assert_same_ensemble(back, ens)
    return back


@numba.njit(cache=True)
def _tau_raises_past_one_radian(t, q, qd):
    if abs(q[0]) > 1.0:
        raise ValueError("past one radian")
    return np.zeros(2)


@numba.njit(cache=True)
def _event_raises_past_one_radian(t, q, qd):
    if abs(q[0]) > 1.0:
        raise ValueError("past one radian")
    return q[0] - 2.0


def test_compiled_tau_or_event_that_raises_stops_its_member_where_simulate_does(capfd):
    model = double_pendulum()
    Q0 = np.array([[0.2, 0.0], [0.9, 0.0], [-0.3, 0.1]])
    QD0 = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 0.0]])  # member 1 swings past 1 rad; the others stay below
    t_eval = {"t_eval": np.linspace(0.0, 1.0, 101)}
    for method, options, function in (("rk4", {"dt": 0.01, "tau": _tau_raises_past_one_radian}, "tau"),
                                      ("dopri5", {**t_eval, "tau": _tau_raises_past_one_radian}, "tau"),
                                      ("dopri5", {**t_eval, "events": _event_raises_past_one_radian}, "event")):
        ens = rm.simulate_many(model, Q0, QD0, 1.0, method, **options)
        assert list(ens.status) == ["finished", "failed", "finished"], (method, function)
        assert f"compiled {function} function '_{function}_raises_past_one_radian' raised" in ens.reasons[1]
        with pytest.raises(rm.SimulationError, match=f"{function} function .* raised .*past one radian") as info:
            rm.simulate(model, Q0[1], QD0[1], 1.0, method, **options)
        ref = info.value.result
        # the member stops at the start of the step in which the function raised (simulate: at the raising call)
        assert ref.t[-1] <= ens.t_stop[1] <= info.value.t and ens.nsamples[1] == ref.t.size
        assert np.array_equal(ens.q[1, :ens.nsamples[1]], ref.q)
        assert np.all(np.isnan(ens.q[1, ens.nsamples[1]:]))
    assert "Exception ignored" not in capfd.readouterr().err


def _check_stopped(ens, status, t_end):
    """Every member stopped early with ``status``, its samples so far finite and NaN after them."""
    assert set(ens.status) == {status}
    for m in range(ens.q.shape[0]):
        assert 1 <= ens.nsamples[m] < ens.t.size and ens.t_stop[m] < t_end
        assert np.all(np.isfinite(ens.q[m, :ens.nsamples[m]])) and np.all(np.isnan(ens.q[m, ens.nsamples[m]:]))


def test_max_wall_time_stops_running_members_with_their_samples(tmp_path):
    Q0, QD0 = _starts(3, 8)
    started = time.perf_counter()
    ens = rm.simulate_many(double_pendulum(), Q0, QD0, 1e4, "rk4", dt=1e-3, every=100_000, max_wall_time=0.2)
    assert time.perf_counter() - started < 5.0  # unlimited: about 40 s per member
    _check_stopped(ens, "time_limit", 1e4)
    _reloaded(ens, tmp_path)
    assert all("max_wall_time = 0.2 s" in reason for reason in ens.reasons)
    with pytest.raises(ValueError, match="max_wall_time"):
        rm.simulate_many(double_pendulum(), Q0, QD0, 1.0, max_wall_time=0.0)


def test_ctrl_c_stops_the_members_and_raises_with_their_samples(tmp_path):
    Q0, QD0 = _starts(3, 9)
    model = double_pendulum()
    rm.simulate_many(model, Q0, QD0, 0.01, rtol=1e-13)  # compiled before the clock starts
    timer = threading.Timer(0.3, _thread.interrupt_main)  # as Ctrl-C: SIGINT's handler in the main thread
    timer.start()
    started = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt, match="3 of 3 members stopped early") as info:
            rm.simulate_many(model, Q0, QD0, 1e4, rtol=1e-13)
    finally:
        timer.cancel()
    assert time.perf_counter() - started < 5.0
    _check_stopped(info.value.result, "interrupted", 1e4)
    _reloaded(info.value.result, tmp_path)


def test_numba_experimental_feature_warning_of_a_first_compilation_stays_out_of_the_output():
    """A first simulate_many on an empty cache printed numba's "First-class function type feature is experimental"
    twice (examples/stiffness_sweep.py); the run's other warnings still reach the caller. A stand-in kernel warns
    as numba's compilation does, on the worker thread, without compiling anything."""
    def kernel():
        warnings.warn("First-class function type feature is experimental", NumbaExperimentalFeatureWarning,
                      stacklevel=1)
        warnings.warn("a warning of the run itself", RuntimeWarning, stacklevel=1)

    control = np.zeros((1, 4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ensemble._wait_for(kernel, (), control, 1, None) is False
    assert [type(w.message) for w in caught] == [RuntimeWarning]


def test_bad_input_names_member_and_argument_before_any_work():
    model = double_pendulum()
    Q0, QD0 = _starts(4, 5)
    with pytest.raises(rm.StateError, match="QD0 has 3 rows"):
        rm.simulate_many(model, Q0, QD0[:3], 1.0)
    bad = Q0.copy()
    bad[2, 1] = np.nan
    with pytest.raises(rm.StateError, match=r"member 2: Q0\[2, 1\] is not finite"):
        rm.simulate_many(model, bad, QD0, 1.0)
    with pytest.raises(rm.ModelError, match="'angle' cannot vary"):
        rm.simulate_many(model, Q0, QD0, 1.0, params={"angle:arm2": np.zeros(4)})
    with pytest.raises(rm.StateError, match=r"member 3: params\['mass:arm1'\] is not finite"):
        rm.simulate_many(model, Q0, QD0, 1.0, params={"mass:arm1": [1.0, 1.0, 1.0, np.inf]})
    with pytest.raises(rm.StateError, match=r"member 1: params\['inertia'\] must be >= 0"):
        rm.simulate_many(model, Q0, QD0, 1.0, params={"inertia": [[1, 1], [1, -1], [1, 1], [1, 1]]})
    with pytest.raises(rm.StateError, match=r"params\['gravity'\] must have shape \(4, 2\)"):
        rm.simulate_many(model, Q0, QD0, 1.0, params={"gravity": np.zeros((3, 2))})
    with pytest.raises(rm.ModelError, match=r"params\['stiffness:spring'\]: unknown element 'spring'; there are no "
                                            r"elements$"):
        rm.simulate_many(model, Q0, QD0, 1.0, params={"stiffness:spring": np.ones(4)})
    with pytest.raises(ValueError, match="give a finite dt"):
        rm.simulate_many(model, Q0, QD0, 1.0, "rk4")
    with pytest.raises(TypeError, match=r"params must be a dict of name -> per-member values .*got a list"):
        rm.simulate_many(model, Q0, QD0, 1.0, params=[np.ones(4)])  # was an AttributeError


@pytest.mark.parametrize("options, error, match", [
    (dict(t_eval=[0.0, np.nan]), rm.StateError, r"t_eval\[1\] is not finite"),
    (dict(t_eval=[0.0, 0.5 + 1j]), TypeError, "t_eval must be an array of real numbers, got complex"),
    (dict(t_end="1"), TypeError, "t_end must be a real number"),
    (dict(t0=True), TypeError, "t0 must be a real number"),
    (dict(rtol="1e-6"), TypeError, "rtol must be a real number"),
    (dict(first_step=0.0), rm.StateError, "first_step must be > 0"),
    (dict(max_steps=-5), rm.StateError, r"max_steps must be an integer in \[1, 2\*\*62\]"),
    (dict(max_steps="9"), TypeError, "max_steps must be an integer"),
    (dict(every=2.5), TypeError, "every must be an integer"),
    (dict(max_wall_time="5"), TypeError, "max_wall_time must be a real number"),
    (dict(method="rk4", dt="0.01"), TypeError, "dt must be a real number"),
    (dict(method="rk4", dt=True), TypeError, "dt must be a real number"),
    (dict(method="rk4", dt=0.01, every=2.5), TypeError, "every must be an integer"),
    (dict(method="rk4", dt=0.01, t_eval=[0.5]), ValueError, "t_eval needs"),
    (dict(Q0=np.zeros((4, 2)) + 1j), TypeError, "Q0 must be an array of real numbers, got complex"),
    (dict(QD0=np.zeros((4, 2)).astype(str)), TypeError, "QD0 must be an array of real numbers"),
    (dict(tau=[1j, 0.0]), TypeError, "tau must be an array of real numbers, got complex"),
    (dict(tau=np.full((4, 2), "1")), TypeError, "tau must be an array of real numbers"),
    (dict(params={"mass:arm2": ["1", "1", "1", "1"]}), TypeError, r"params\['mass:arm2'\] must be an array of real"),
    (dict(params={"gravity": np.zeros((4, 2)) + 1j}), TypeError, r"params\['gravity'\] must be an array of real"),
])
def test_what_a_single_run_refuses_every_member_refuses(options, error, match):
    """The options, states and parameters go through rm.simulate's checks: a NaN sample time, complex or string
    arrays and strings, bools or fractions for numbers and counts were converted (a NaN time reported "finished",
    imaginary parts dropped, "1" parsed). A single run refuses the same value with the same error."""
    model = double_pendulum()
    Q0, QD0 = _starts(4, 8)
    arguments = dict(dict(Q0=Q0, QD0=QD0, t_end=1.0), **options)
    with pytest.raises(error, match=match):
        rm.simulate_many(model, arguments.pop("Q0"), arguments.pop("QD0"), arguments.pop("t_end"), **arguments)
    if "params" in options:
        return  # per-member parameters are the ensemble's own
    single = dict(options)  # member 0 as a single run
    q0, qd0 = (np.asarray(single.pop(name, start))[0] for name, start in (("Q0", Q0), ("QD0", QD0)))
    if np.ndim(single.get("tau")) == 2:
        single["tau"] = single["tau"][0]
    with pytest.raises(error):
        rm.simulate(model, q0, qd0, single.pop("t_end", 1.0), **single)


@pytest.fixture(scope="module")
def saved_ensemble(tmp_path_factory):
    """An ensemble with a failed member (gravity 4e6 blows it up), saved to a name without the .npz suffix:
    (result, path)."""
    Q0, QD0 = _starts(3, 6)
    gravities = np.array([[0.0, -9.81], [0.0, -4e6], [0.0, -9.81]])
    ens = rm.simulate_many(double_pendulum(), Q0, QD0, 0.5, "rk4", dt=0.01, params={"gravity": gravities})
    assert list(ens.status) == ["finished", "failed", "finished"]
    path = tmp_path_factory.mktemp("ensemble") / "ens.res"
    ens.save(path)
    return ens, path


def assert_same_ensemble(back, ens):
    """Every attribute of ``ens`` (whatever is added later) is on ``back``, equal."""
    assert set(vars(back)) == set(vars(ens))
    for name, want in vars(ens).items():
        got = getattr(back, name)
        if isinstance(want, np.ndarray):
            assert got.shape == want.shape and np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), name
        else:
            assert got == want, name


def test_save_writes_the_name_given_and_load_round_trips_every_field(saved_ensemble):
    ens, path = saved_ensemble
    assert sorted(p.name for p in path.parent.iterdir()) == ["ens.res"]
    back = EnsembleResult.load(path)
    assert_same_ensemble(back, ens)
    assert list(back.status) == list(ens.status) and back.reasons == ens.reasons
    assert back.success.tolist() == [True, False, True] and list(back.message) == list(ens.message)


def test_damaged_ensemble_files_give_one_error_naming_the_file(saved_ensemble, tmp_path):
    ens, path = saved_ensemble
    damaged = tmp_path / "damaged.npz"
    errors = 0
    cases = damaged_copies(path.read_bytes(), flips=100, cuts=30)
    for case in cases:
        damaged.write_bytes(case)
        try:
            back = EnsembleResult.load(damaged)
        except rm.ResultFileError as err:
            assert str(err).startswith(f"{damaged}: ") and "allow_pickle" not in str(err), err
            errors += 1
        else:
            assert_same_ensemble(back, ens)  # a flip in a part that carries no data (a timestamp, a comment)
    assert errors > 0.8 * len(cases)


def test_inconsistent_ensemble_files_are_refused_naming_the_entry(saved_ensemble, tmp_path):
    ens, path = saved_ensemble
    with np.load(path) as data:
        arrays = dict(data)
    nan_tail = arrays["q"].copy()
    nan_tail[1, -1, 0] = 0.0  # a value after the failed member's last sample
    finite = arrays["q"].copy()
    finite[0, 3, 1] = np.inf
    event = arrays["event"].copy()
    event[0, 0] = 0.2  # a time without the state of an event
    edits = [
        ({"status_codes": np.array([0, -8, 0])}, "'status_codes' (member statuses) holds negative counts"),
        ({"nsamples": np.array([51, 3, 50])}, "'nsamples': member 2 (finished) has 50 samples of 51"),
        ({"nsamples": np.array([51, 60, 51])}, "'nsamples': member 1 (failed) has 60 samples of 51"),
        ({"nsamples": np.array([51, 2, 51])}, "'q': member 1 must hold finite values in its 2 samples and NaN"),
        ({"t_stop": np.array([0.5, 0.02, 0.4])}, "member 2 (finished) stopped at t = 0.4 s, expected the end"),
        ({"t_stop": np.array([0.5, 7.0, 0.5])}, "member 1 (failed) stopped at t = 7 s, expected a time within"),
        ({"reasons": np.array(["", "", ""])}, "'reasons': member 1 (failed) has reason ''"),
        ({"q": nan_tail}, "'q': member 1 must hold finite values"),
        ({"q": finite}, "'q': member 0 must hold finite values"),
        ({"event": event}, "'event': member 0's event must be all NaN"),
        ({"t": arrays["t"][::-1].copy()}, "'t' must be a non-empty, non-decreasing"),
        ({"qd": arrays["qd"][:, :-1]}, "'qd' has shape"),
        ({"work": arrays["work"][..., :1]}, "'work' has shape"),
        ({"stats": arrays["stats"].astype(float)}, "'stats' has dtype float64"),
        ({"version": np.array(2)}, "version 2, this library reads version 1"),
        ({"format": np.array("recursive_mbd.SimulationResult")}, "a file of SimulationResult, read it with "
                                                                 "SimulationResult.load"),
    ]
    for edit, words in edits:
        np.savez(tmp_path / "edited.npz", **dict(arrays, **edit))
        with pytest.raises(rm.ResultFileError, match=f"edited.npz: .*{re.escape(words)}"):
            EnsembleResult.load(tmp_path / "edited.npz")
    np.savez(tmp_path / "lost.npz", **{k: v for k, v in arrays.items() if k != "reasons"})
    with pytest.raises(rm.ResultFileError, match="lost.npz: entry 'reasons' is missing"):
        EnsembleResult.load(tmp_path / "lost.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(2))
    with pytest.raises(rm.ResultFileError, match="other.npz: not a result file of EnsembleResult.save"):
        EnsembleResult.load(tmp_path / "other.npz")
    with pytest.raises(rm.ResultFileError, match="a file of EnsembleResult, read it with EnsembleResult.load"):
        rm.SimulationResult.load(path)


def test_to_xarray_names_the_dimensions():
    Q0, QD0 = _starts(2, 7)
    ens = rm.simulate_many(double_pendulum(), Q0, QD0, 0.2, "rk4", dt=0.01)
    data = ens.to_xarray()
    assert data["q"].dims == ("member", "time", "coordinate") and data["q"].shape == ens.q.shape
    assert np.array_equal(data["q"].values, ens.q) and np.array_equal(data["time"].values, ens.t)
    assert list(data["status"].values) == ["finished", "finished"]


# ---- Model3D ---------------------------------------------------------------------------------------------------------

def spatial_arm(arm_mass=0.7, stiffness=5.0, gravity=(0.0, -3.0, -9.81)):
    """A spherical root, a revolute arm and a prismatic slider with a joint spring-damper (nq 6, nv 5)."""
    model = rm.Model3D(gravity=gravity)
    model.add_body(joint="spherical", mass=1.0, inertia=(0.1, 0.2, 0.25, 0.01, -0.02, 0.03), com=(0.1, 0.0, -0.3),
                   name="root")
    model.add_body(parent="root", joint="revolute", parent_point=(0.1, 0.0, -0.5), axis=(0.3, 1.0, 0.2),
                   mass=arm_mass, inertia=(0.05, 0.04, 0.06, 0, 0, 0), com=(0.0, 0.0, -0.2), name="arm")
    model.add_body(parent="arm", joint="prismatic", parent_point=(0.0, 0.1, -0.3), axis=(1.0, 0.0, 1.0), mass=0.4,
                   inertia=0.01, name="slider")
    model.add_joint_spring_damper("slider", stiffness, 0.2, name="spring")
    return model


def _spatial_starts(model, k, seed):
    rng = np.random.default_rng(seed)
    Q0 = np.array([rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv)) for _ in range(k)])
    return Q0, rng.normal(size=(k, model.nv))


def test_spatial_members_equal_simulate_bit_for_bit_with_parameters_per_member(tmp_path):
    """A Model3D's members (nq 6 != nv 5) run rm.simulate's compiled spatial loop: each equals rm.simulate of a
    model rebuilt with its mass, stiffness and gravity, bit for bit (the same kernels in the same order); a member
    whose slider has no mass fails (singular) at its start with the reason, the others run on."""
    k = 4
    Q0, QD0 = _spatial_starts(spatial_arm(), k, 3)
    Q0[1, :4] *= 1.0 + 1e-9  # off unit norm: normalised with a warning, as rm.simulate does
    masses = np.array([0.7, 0.3, 1.5, 0.7])
    stiffness = np.array([5.0, 0.0, 40.0, 5.0])
    gravities = np.array([[0.0, -3.0, -9.81], [0.0, 0.0, -9.81], [1.0, 0.5, -20.0], [0.0, -3.0, -9.81]])
    tau = np.array([[0.0] * 5, [0.1, -0.2, 0.3, 0.5, -1.0], [0.0, 0.0, 0.2, 0.0, 0.4], [0.0] * 5])
    te = np.linspace(0.0, 0.4, 9)
    with pytest.warns(RuntimeWarning, match="norm"):
        ens = rm.simulate_many(spatial_arm(), Q0, QD0, 0.4, t_eval=te, rtol=1e-10, atol=1e-12, tau=tau,
                               params={"mass:arm": masses, "stiffness:spring": stiffness, "gravity": gravities,
                                       "mass:slider": [0.4, 0.4, 0.4, 0.0]})
    assert ens.q.shape == (k, 9, 6) and ens.qd.shape == (k, 9, 5)
    assert list(ens.status) == ["finished", "finished", "finished", "failed"]
    for m in range(3):
        model = spatial_arm(masses[m], stiffness[m], gravities[m])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = rm.simulate(model, Q0[m], QD0[m], 0.4, t_eval=te, rtol=1e-10, atol=1e-12, tau=tau[m])
        assert np.array_equal(ens.t, ref.t)
        assert np.array_equal(ens.q[m], ref.q) and np.array_equal(ens.qd[m], ref.qd)
        assert np.array_equal(ens.dissipated_work[m], ref.dissipated_work)
        assert np.array_equal(ens.applied_work[m], ref.applied_work)
        assert ens.nfev[m] == ref.nfev
    assert "singular" in ens.reasons[3] and "slider" in ens.reasons[3]
    assert ens.t_stop[3] == 0.0 and ens.nsamples[3] <= 1 and np.all(np.isnan(ens.q[3, 1:]))
    _reloaded(ens, tmp_path)  # nv != nq: the saved event and rate entries keep their widths


def test_spatial_ensembles_refuse_what_they_cannot_vary():
    model = spatial_arm()
    Q0, QD0 = _spatial_starts(model, 2, 4)
    with pytest.raises(StateError, match=r"QD0 must have shape \(k, 5\).*nv = 5"):
        rm.simulate_many(model, Q0, Q0, 0.1)
    with pytest.raises(ModelError, match="'rotation' cannot vary per member of a Model3D"):
        rm.simulate_many(model, Q0, QD0, 0.1, params={"rotation:arm": np.zeros((2, 9))})
    with pytest.raises(StateError, match=r"params\['gravity'\] must have shape \(2, 3\)"):
        rm.simulate_many(model, Q0, QD0, 0.1, params={"gravity": np.zeros((2, 2))})
    with pytest.raises(StateError, match=r"member 1: params\['inertia:arm'\]: inertia must be positive"):
        rm.simulate_many(model, Q0, QD0, 0.1, params={"inertia:arm": [[1, 1, 1, 0, 0, 0], [-1, 1, 1, 0, 0, 0]]})
    zero = Q0.copy()
    zero[1, :4] = 0.0
    with pytest.raises(StateError, match=r"member 1: q0\[0:4\], the quaternion of body 'root'.* is zero"):
        rm.simulate_many(model, zero, QD0, 0.1)
