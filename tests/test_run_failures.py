"""Runs that cannot finish: failing user functions, fixed-step limits, interrupts and wall-clock limits (issue 12).

Every failure stops the run with a clear error that keeps the samples so far; nothing is swallowed or printed as
"Exception ignored".
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numba
import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd import SimulationError
from recursive_mbd.integrate import runs as _runs
from recursive_mbd.model import chains

ROOT = Path(__file__).resolve().parents[1]
METHODS = [("dopri5", {}), ("dop853", {}), ("rk4", {"dt": 1e-3}), ("implicit_midpoint", {"dt": 1e-3}),
           ("generalized_alpha", {"dt": 1e-3}), ("scipy:RK45", {}), ("scipy:Radau", {}), ("bdf", {})]
Q0 = np.array([0.3, -0.2])


def failing_tau(t, q, qd):
    if t > 0.1:
        return 1.0 / 0.0
    return np.zeros(2)


@pytest.mark.parametrize(("method", "options"), METHODS)
def test_a_tau_that_raises_stops_every_method_with_the_samples_kept(method, options, capfd):
    model = chains.serial_chain(2)
    with pytest.raises(SimulationError, match=r"failed at t = .*tau function 'failing_tau' raised at t = 0\.1"
                       ) as info:
        rm.simulate(model, Q0, np.zeros(2), 0.3, method=method, tau=failing_tau, rtol=1e-6, atol=1e-8, **options)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    result = info.value.result
    assert result.status == "failed"
    assert 0.05 < result.t[-1] <= 0.1 < info.value.t + 1e-3
    assert result.t.size > 3 and np.all(np.isfinite(result.q))
    # the samples are those of an undisturbed run
    free = rm.simulate(model, Q0, np.zeros(2), float(result.t[-1]), method=method, rtol=1e-6, atol=1e-8,
                       **options)
    np.testing.assert_allclose(result.q[-1], free.q[-1], rtol=1e-12, atol=1e-12)
    assert "Exception ignored" not in capfd.readouterr().err


@numba.njit
def compiled_raising_tau(t, q, qd):
    if t > 0.1:
        raise ValueError("controller saturated")
    return np.zeros(2)


@numba.njit
def compiled_raising_tau_of_t(t):
    if t > 0.1:
        raise ValueError("table ends")
    return np.zeros(2)


@pytest.mark.parametrize(("method", "options"), [("dopri5", {}), ("rk4", {"dt": 1e-3}), ("bdf", {}),
                                                 ("generalized_alpha", {"dt": 1e-3})])
def test_a_compiled_tau_that_raises_stops_the_run_as_a_python_one(method, options, capfd):
    model = chains.serial_chain(2)
    for tau, message in ((compiled_raising_tau, "controller saturated"), (compiled_raising_tau_of_t, "table ends")):
        with pytest.raises(SimulationError, match=rf"failed at t = .*tau function '{tau.__name__}' raised at "
                           rf"t = 0\.1.*ValueError\('{message}'\)") as info:
            rm.simulate(model, Q0, np.zeros(2), 0.3, method=method, tau=tau, **options)
        assert isinstance(info.value.__cause__, ValueError)
        result = info.value.result
        assert result.status == "failed" and 0.05 < result.t[-1] <= 0.1 < info.value.t
        # the same run, time and samples as the same function in Python (through the bridge)
        with pytest.raises(SimulationError) as python:
            rm.simulate(model, Q0, np.zeros(2), 0.3, method=method, tau=tau.py_func, **options)
        assert info.value.t == python.value.t and str(info.value) == str(python.value)
        np.testing.assert_array_equal(result.q, python.value.result.q)
    assert "Exception ignored" not in capfd.readouterr().err


@numba.njit
def compiled_tau_raising_once(t, q, qd):
    if t > 0.1 and qd[0] != 123.0:  # a side effect on its argument: called again with it, it does not raise
        qd[0] = 123.0
        raise ValueError("once")
    return np.zeros(2)


def test_a_compiled_tau_that_raised_once_stops_the_run_without_its_message(capfd):
    with pytest.raises(SimulationError, match="compiled tau function 'compiled_tau_raising_once' raised an "
                       "exception .*did not raise") as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 0.3, tau=compiled_tau_raising_once)
    assert info.value.result.status == "failed" and 0.05 < info.value.result.t[-1] <= info.value.t <= 0.1
    assert "Exception ignored" not in capfd.readouterr().err


def nan_tau(t, q, qd):
    return np.full(2, np.nan) if t > 0.1 else np.zeros(2)


@numba.njit
def compiled_nan_tau(t, q, qd):
    return np.full(2, np.nan) if t > 0.1 else np.zeros(2)


@numba.njit
def compiled_wrong_size_tau(t, q, qd):
    return np.zeros(3) if t > 0.1 else np.zeros(2)


def wrong_size_tau(t, q, qd):
    return np.zeros(3) if t > 0.1 else np.zeros(2)


@pytest.mark.parametrize(("tau", "match"), [
    (nan_tau, "tau function must return 2 finite numbers .*'nan_tau' at t = 0.1"),
    (compiled_nan_tau, "compiled tau function 'compiled_nan_tau' returned a non-finite value"),
    (wrong_size_tau, r"tau function must return 2 finite numbers .*shape \(3,\)"),
    (compiled_wrong_size_tau, "compiled tau function 'compiled_wrong_size_tau' returned the wrong number"),
])
@pytest.mark.parametrize("method", ["dopri5", "rk4", "bdf"])
def test_a_nan_or_wrong_shaped_tau_is_not_a_zero_torque(tau, match, method):
    options = {"dt": 1e-3} if method == "rk4" else {}
    with pytest.raises(SimulationError, match=match) as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 0.3, method=method, tau=tau, **options)
    assert info.value.result.status == "failed"
    assert 0.05 < info.value.result.t[-1] <= 0.1


@pytest.mark.parametrize("method", ["dopri5", "scipy:RK45"])
def test_a_time_varying_element_that_raises_stops_the_run(method):
    model = chains.serial_chain(2)

    def torque(t):
        if t > 0.1:
            raise RuntimeError("sensor lost")
        return 0.0

    model.add_torque("link2", torque, name="motor")
    with pytest.raises(SimulationError, match="element 'motor'.*sensor lost") as info:
        rm.simulate(model, Q0, np.zeros(2), 0.3, method=method)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.result.t[-1] > 0.05


@pytest.mark.parametrize("method", ["dopri5", "rk4", "scipy:RK45"])
def test_a_driver_that_raises_stops_the_run(method):
    def angle(t):
        if t > 0.1:
            raise ValueError("table ends")
        return 0.5 * t

    options = {"dt": 1e-3} if method == "rk4" else {}
    with pytest.raises(SimulationError, match="driver of body 'link1' raised.*table ends") as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 0.3, method=method, drivers={"link1": angle},
                    **options)
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.result.t[-1] > 0.05


@pytest.mark.parametrize("method", ["dopri5", "scipy:RK45"])
def test_an_event_function_that_raises_stops_the_run(method):
    def crossing(t, q, qd):
        if t > 0.1:
            raise KeyError("missing")
        return q[0]

    with pytest.raises(SimulationError, match="event function 'crossing' raised") as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 0.3, method=method, events=crossing)
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.result.t[-1] > 0.05


def test_events_are_recorded_by_the_stepped_scipy_solvers_as_by_dopri5():
    def falling(t, q, qd):
        return q[0]

    falling.direction = -1.0
    runs = [rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1.0, method=m, events=falling, rtol=1e-10,
                        atol=1e-12) for m in ("dopri5", "scipy:RK45")]
    assert runs[0].t_events[0].size == 1
    np.testing.assert_allclose(runs[1].t_events[0], runs[0].t_events[0], rtol=1e-7)


# ---- fixed-step runs and max_steps --------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "match"), [
    ({"dt": 1e-20}, r"dt = 1e-20 s needs 1e\+20 steps.*max_steps"),
    ({"dt": 1e-3, "max_steps": 10}, "needs 1e\\+03 steps .* more than max_steps = 10"),
    ({"dt": 1e-3, "max_steps": 0}, r"max_steps must be an integer in \[1, 2\*\*62\]"),
    ({"dt": 1e-3, "max_steps": 2**70}, r"max_steps must be an integer in \[1, 2\*\*62\]"),
])
@pytest.mark.parametrize("method", ["rk4", "implicit_midpoint", "generalized_alpha"])
def test_fixed_step_counts_are_checked_before_running(method, options, match):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1.0, method=method, **options)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("method", ["rk4", "implicit_midpoint", "generalized_alpha"])
def test_a_dt_beyond_the_span_takes_one_step_to_t_end(method):
    res = rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1e-3, method=method, dt=1e10)
    assert res.nsteps == 1
    np.testing.assert_array_equal(res.t, [0.0, 1e-3])
    reference = rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1e-3, method=method, dt=1e-3)
    np.testing.assert_array_equal(res.q, reference.q)


@pytest.mark.parametrize("method", ["dopri5", "rk4", "scipy:RK45"])
def test_huge_end_times_are_refused_before_running(method):
    options = {"dt": 1e-3} if method == "rk4" else {}
    with pytest.raises(ValueError, match="t_end = 1e\\+300 s: times beyond 1e\\+15 s"):
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1e300, method=method, **options)


@pytest.mark.parametrize("method", ["dopri5", "dop853", "scipy:RK45", "scipy:LSODA"])
def test_max_steps_holds_for_every_adaptive_method(method):
    with pytest.raises(SimulationError, match="max_steps = 5") as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 10.0, method=method, max_steps=5)
    assert info.value.result.nsteps <= 5
    assert info.value.result.status == "failed"


def test_a_max_step_that_needs_too_many_steps_is_refused():
    with pytest.raises(ValueError, match="max_step = 0.001 s needs more than max_steps = 10"):
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1.0, max_step=1e-3, max_steps=10)


def test_a_misspelt_option_suggests_the_right_name():
    with pytest.raises(TypeError, match="'rtoll' \\(did you mean 'rtol'\\?\\)"):
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1.0, rtoll=1e-3)
    with pytest.raises(TypeError, match="did you mean 'max_steps'"):
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1.0, formulation="augmented", maxsteps=3)


# ---- interrupts and wall-clock limits -------------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "options"), [("rk4", {"dt": 1e-3}), ("dopri5", {"rtol": 1e-13}),
                                                 ("scipy:RK45", {"rtol": 1e-13})])
def test_max_wall_time_stops_a_run_and_keeps_its_samples(method, options):
    start = time.perf_counter()
    with pytest.raises(SimulationError, match="max_wall_time = 0.3 s was reached") as info:
        rm.simulate(chains.serial_chain(3), np.full(3, 0.3), np.zeros(3), 1e4, method=method, max_wall_time=0.3,
                    **options)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.5
    result = info.value.result
    assert result.status == "time_limit"
    assert result.t.size > 2 and 0.0 < result.t[-1] < 1e4
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_max_wall_time_is_checked():
    with pytest.raises(ValueError, match="max_wall_time must be finite and > 0"):
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1.0, max_wall_time=-1.0)


CHILD = """
import sys, time
import numpy as np
import recursive_mbd as rm
model = rm.chains.serial_chain(3)
method, options = sys.argv[1], eval(sys.argv[2])
rm.simulate(model, np.full(3, 0.3), np.zeros(3), 1e-3, method=method, **options)  # compile first
print("running", flush=True)
try:
    rm.simulate(model, np.full(3, 0.3), np.zeros(3), 1e4, method=method, **options)
except KeyboardInterrupt as exc:
    caught = time.time()
    result = exc.result
    print("caught", repr(caught), result.status, result.t.size, result.t[-1], flush=True)
    assert result.t.size > 2 and np.all(np.isfinite(result.q))
    import signal
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    print("ok", flush=True)
"""


@pytest.mark.parametrize(("method", "options"), [("rk4", "{'dt': 1e-3}"), ("dopri5", "{'rtol': 1e-13}"),
                                                 ("scipy:RK45", "{'rtol': 1e-13}")])
def test_ctrl_c_ends_a_run_within_a_second_with_its_samples(method, options):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD), method, options], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(0.5)
        sent = time.time()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    lines = out.split("\n")
    assert lines[-2] == "ok", (out, err)
    _, caught, status, samples, t_last = lines[0].split()
    assert status == "interrupted"
    assert int(samples) > 2 and 0.0 < float(t_last) < 1e4
    assert float(caught) - sent < 1.0


@pytest.mark.parametrize(("method", "options"), [("dopri5", {}), ("rk4", {"dt": 1e-3, "progress": True}),
                                                 ("generalized_alpha", {"dt": 1e-3})])
def test_ctrl_c_raises_before_the_result_is_built(monkeypatch, method, options):
    """The KeyboardInterrupt of Ctrl-C is raised as soon as the time loop stops: its result (copies of every
    sample, which took seconds for a million samples) is built on first access of .result, once."""
    from recursive_mbd.integrate import newton as _newton  # noqa: PLC0415
    from recursive_mbd.integrate import simulate as _simulate  # noqa: PLC0415
    from recursive_mbd.integrate.result import _make_result  # noqa: PLC0415

    built = []

    def counted(*args, **kwargs):
        built.append(args[5].shape[0])  # the samples handed over
        return _make_result(*args, **kwargs)

    monkeypatch.setattr(_simulate, "_make_result", counted)
    monkeypatch.setattr(_newton, "_make_result", counted)
    sent = []

    def interrupting_tau(t, q, qd):  # Ctrl-C once the run is past t = 0.1
        if t > 0.1 and not sent:
            sent.append(t)
            os.kill(os.getpid(), signal.SIGINT)
        return np.zeros(2)

    model = chains.serial_chain(2)
    with pytest.raises(KeyboardInterrupt, match=f"{method} interrupted at t = ") as info:
        rm.simulate(model, Q0, np.zeros(2), 1.0, method=method, tau=interrupting_tau, **options)
    assert built == []
    result = info.value.result
    assert info.value.result is result and len(built) == 1
    assert result.status == "interrupted" and 0.05 < result.t[-1] <= info.value.t < 1.0
    assert f"{result.t.size} samples up to t = {result.t[-1]:.9g} s are kept in .result" in str(info.value)
    whole = rm.simulate(model, Q0, np.zeros(2), 1.0, method=method, **options)
    np.testing.assert_allclose(result.q, whole.q[:result.t.size], rtol=1e-12, atol=1e-12)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# ---- the augmented formulation: the same user functions, the same errors ------------------------------------------

@pytest.mark.parametrize(("method", "options"), [("dopri5", {}), ("rk4", {"dt": 1e-3})])
@pytest.mark.parametrize(("tau", "match", "cause"), [
    (failing_tau, "tau function 'failing_tau' raised at t = 0.1", ZeroDivisionError),
    (nan_tau, "tau function must return 2 finite numbers .*'nan_tau' at t = 0.1", type(None)),
])
def test_the_augmented_formulation_stops_on_a_failing_tau(method, options, tau, match, cause):
    with pytest.raises(SimulationError, match=match) as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 0.3, method=method, tau=tau, formulation="augmented",
                    **options)
    assert isinstance(info.value.__cause__, cause)
    assert info.value.result.status == "failed"
    assert 0.05 < info.value.result.t[-1] <= 0.1


def test_the_augmented_formulation_names_a_failing_driver_and_event():
    def angle(t):
        if t > 0.1:
            raise ValueError("table ends")
        return 0.5 * t

    with pytest.raises(SimulationError, match="driver of body 'link1' raised.*table ends") as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 0.3, drivers={"link1": angle}, formulation="augmented")
    assert isinstance(info.value.__cause__, ValueError)

    def crossing(t, q, qd):
        if t > 0.1:
            raise KeyError("missing")
        return q[0]

    with pytest.raises(SimulationError, match="event function 'crossing' raised") as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 0.3, events=crossing, formulation="augmented")
    assert isinstance(info.value.__cause__, KeyError)


def test_the_augmented_formulation_keeps_max_wall_time_and_max_steps():
    with pytest.raises(SimulationError, match="max_wall_time = 0.2 s was reached") as info:
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1e4, formulation="augmented", max_wall_time=0.2)
    assert info.value.result.status == "time_limit" and info.value.result.t.size > 2
    with pytest.raises(ValueError, match="more than max_steps = 10"):
        rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1.0, method="rk4", dt=1e-3, max_steps=10,
                    formulation="augmented")


def test_a_run_in_another_thread_keeps_the_signal_handlers_and_its_limits():
    outcome = {}

    def run():
        try:
            rm.simulate(chains.serial_chain(2), Q0, np.zeros(2), 1e4, max_wall_time=0.1)
        except SimulationError as err:
            outcome["status"] = err.result.status

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10.0)
    assert outcome == {"status": "time_limit"}
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("progress", [False, True])
def test_output_that_cannot_grow_says_why_and_what_to_do(progress):
    """A compiled loop whose output buffers cannot double below the output budget (memory taken by others during
    the run) raises MemoryError naming the sample size, the budget and every= / t_eval, with or without a progress
    bar."""
    from recursive_mbd.integrate.runs import _run_loop  # noqa: PLC0415

    def run(y, ta, tb, t_eval, budget):
        raise MemoryError("Allocation failed (probably too large).")

    with pytest.raises(MemoryError, match=r"20002 floats, 0\.16 MB.*every=K.*t_eval.*below the run's output budget "
                       r"\(2\.4 MB: memory taken meanwhile\?\).*samples of this run are lost"):
        _run_loop(run, np.zeros(20_002), 0.0, 1.0, None, progress, SimpleNamespace(output_budget=3e5))


def test_the_default_output_budget_is_a_quarter_of_the_available_memory():
    available = _runs.available_memory()
    with open("/proc/meminfo") as file:  # the machines the suite runs on are Linux
        meminfo = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in file}
    assert 0 < available <= meminfo["MemAvailable"] + 2**30  # (it changes from one read to the next)
    budget = _runs.output_budget()
    assert 0 < budget <= 0.25 * (meminfo["MemAvailable"] + 2**30) / 8 and np.isfinite(budget)


ROWS = 7  # the samples a budget of ROWS samples' floats keeps
BUDGETED = [("dopri5", {}, False), ("rk4", {"dt": 1e-3}, True), ("generalized_alpha", {"dt": 1e-3}, False),
            ("bdf", {}, False), ("scipy:RK45", {}, False)]


def _stops_at_its_output_budget(monkeypatch, model, q0, qd0, method, options, progress, width):
    """A run whose output budget holds ROWS samples of ``width`` floats (the time included) stops with
    SimulationError when the next sample does not fit, keeping exactly the first ROWS samples of a run without
    the limit, bit for bit; returns the error."""
    def run():
        return rm.simulate(model, q0, qd0, 0.3, method=method, progress=progress,
                           **{"rtol": 1e-6, "atol": 1e-8, **options})

    full = run()
    assert full.t.size > ROWS + 1
    monkeypatch.setattr(_runs, "output_budget", lambda: float(ROWS * width))
    with pytest.raises(SimulationError, match=rf"failed at t = .*output budget of {8e-6 * ROWS * width:.4g} MB: "
                       rf"pass every=K.*t_eval.*each sample keeps {width} floats.*{ROWS} samples up to t = ") as info:
        run()
    result = info.value.result
    assert result.status == "failed"
    assert info.value.t == full.t[ROWS]  # the time of the first sample that did not fit
    assert result.t.size == ROWS
    for name in ("t", "q", "qd", "dissipated_work", "applied_work"):
        np.testing.assert_array_equal(getattr(result, name), getattr(full, name)[:ROWS], err_msg=name)
    return info.value


@pytest.mark.parametrize(("method", "options", "progress"), BUDGETED)
def test_a_run_that_outgrows_its_output_budget_stops_with_its_samples(monkeypatch, method, options, progress):
    """rk4 with progress=True: a progress bar changes nothing."""
    model = chains.serial_chain(2)
    width = 1 + 2 * model.nq + 2  # t, q, qd, the work terms
    _stops_at_its_output_budget(monkeypatch, model, Q0, np.zeros(2), method, options, progress, width)


@pytest.mark.parametrize(("method", "options"), [("dopri5", {"rtol": 1e-10, "atol": 1e-12}),
                                                 ("generalized_alpha", {"dt": 1e-2}),
                                                 ("bdf", {"rtol": 1e-10, "atol": 1e-12})])
def test_a_spatial_run_that_outgrows_its_output_budget_stops_with_its_samples(monkeypatch, method, options):
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body(joint="spherical", mass=2.0, inertia=(1.0, 2.0, 3.0, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5))
    width = 1 + model.nq + model.nv + 2
    _stops_at_its_output_budget(monkeypatch, model, model.neutral(), np.array([1.0, 0.0, 0.0]), method, options,
                                False, width)


def test_events_that_outgrow_the_output_budget_stop_the_run_with_the_events_so_far(monkeypatch):
    """The event buffers count in the budget: 16 rows of (t, index, state) to start with; a 17th crossing that does
    not fit ends the run there, the first 16 kept as in a run without the limit."""
    model = chains.serial_chain(2)

    def crossing(t, q, qd):
        return q[0]

    def run():
        return rm.simulate(model, Q0, np.zeros(2), 20.0, events=crossing, t_eval=[20.0], rtol=1e-6, atol=1e-8)

    full = run()
    assert full.t_events[0].size > 17
    n = 2 * model.nq + 2
    monkeypatch.setattr(_runs, "output_budget", lambda: float(16 * (n + 2) + 4 * (n + 1)))
    with pytest.raises(SimulationError, match="output budget") as info:
        run()
    result = info.value.result
    assert info.value.t == full.t_events[0][16]
    np.testing.assert_array_equal(result.t, [0.0])
    np.testing.assert_array_equal(result.t_events[0], full.t_events[0][:16])
    np.testing.assert_array_equal(result.q_events[0], full.q_events[0][:16])
