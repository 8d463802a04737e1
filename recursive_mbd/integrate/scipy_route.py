"""``rm.simulate(method="scipy:NAME")``: scipy's solvers stepped from Python on the compiled right-hand side of the
run's system (``integrators.system_rhs``; the implicit ones get its structured Jacobian,
``integrators.rhs_jacobian``), with the output, events, monitor and output budget of the compiled loops."""

import numpy as np

from .._kernels import layout as L
from .._kernels.timeloops import integrators
from .method_names import unknown_method

IMPLICIT_SCIPY = ("Radau", "BDF", "LSODA")  # given the structured Jacobian of integrators.rhs_jacobian


def _scipy_solver(name):
    """scipy's OdeSolver class of that name (RK45, DOP853, Radau, BDF, LSODA, RK23), or a ValueError."""
    import scipy.integrate  # noqa: PLC0415

    solver = getattr(scipy.integrate, name, None)
    if not (isinstance(solver, type) and issubclass(solver, scipy.integrate.OdeSolver)
            and solver is not scipy.integrate.OdeSolver):
        raise ValueError(unknown_method(f"scipy:{name}"))
    return solver


class _StopRhs(Exception):
    """A right-hand side evaluation failed inside a scipy solver (its status is in the run's failures)."""


class _OutputFull(Exception):
    """A sample (or event) of a scipy run at time ``t`` does not fit in the run's output budget."""

    def __init__(self, t):
        super().__init__(t)
        self.t = t


def _scipy_run(method, callback, key, system, y0, t0, t_end, rtol, atol, t_eval, every, max_step, first_step,
               events, max_steps, control):
    """scipy's solver ``method`` stepped from Python on the compiled right-hand side, so that a failure keeps the
    samples so far. Output (t_eval, else every ``every``-th step and the last), events and statistics as the
    compiled adaptive loop, and its output budget (``control.output_budget``: a sample or event that does not fit
    ends the run with STATUS_OUTPUT_FULL): returns (status, t_fail, t, y, nfev, nsteps, event records)."""
    from scipy.optimize import brentq  # noqa: PLC0415

    dy = np.empty_like(y0)
    failure = []

    def rhs(t, y):
        status = integrators.system_rhs(callback, key, system, t, y, dy)
        if status:
            failure.append((status, t))
            raise _StopRhs
        return dy.copy()

    options = dict(rtol=rtol, atol=atol, max_step=max_step)
    if method in IMPLICIT_SCIPY:
        n = y0.size
        f0, ytmp, ftmp, jac = np.empty(n), np.empty(n), np.empty(n), np.empty((n, n))

        def jacobian(t, y):
            status = integrators.system_rhs(callback, key, system, t, y, f0)
            if not status:
                status = integrators.rhs_jacobian(callback, key, system, t, y, f0, ytmp, ftmp, jac)
            if status:
                failure.append((status, t))
                raise _StopRhs
            return jac.copy()

        options["jac"] = jacobian
    if first_step is not None:
        options["first_step"] = first_step
    n_events = len(events.functions)
    values = np.empty(n_events)

    def event_values(t, y):
        events(t, y, None, values)
        return values.copy()

    times, states, records = [], [], []
    rows = integrators.budget_rows(control.output_budget, y0.size)  # the samples and events the budget holds
    control.sample_floats = y0.size + 1

    def make_room(t):  # for one more sample or event at time t
        if len(times) + len(records) >= rows:
            raise _OutputFull(t)

    def keep(t, y):
        make_room(t)
        times.append(t)
        states.append(y)

    outputs = t_eval
    next_output = 0
    skipped = None  # (t, y) of the last accepted step when it is not a sample (every > 1): the run's last is one
    nsteps = 0
    solver = None
    status, t_fail = L.STATUS_OK, t0
    try:
        keep(t0, y0.copy())  # t_eval holds t0
        next_output = 0 if outputs is None else 1
        g_old = event_values(t0, y0) if n_events else None
        solver = _scipy_solver(method)(rhs, t0, y0, t_end, **options)
        while solver.status == "running":
            if nsteps >= max_steps:
                status, t_fail = L.STATUS_MAX_STEPS, solver.t
                break
            status = control.status()
            if status:
                t_fail = solver.t
                break
            t_old = solver.t
            solver.step()
            if solver.status == "failed":
                status, t_fail = L.STATUS_STEP_UNDERFLOW, solver.t
                break
            nsteps += 1
            dense = solver.dense_output() if (outputs is not None or n_events) else None
            t_stop = None
            if n_events:  # sign changes as in integrators.integrate_adaptive, located by brentq on the dense output
                g_new = event_values(solver.t, solver.y)
                for i in range(n_events):
                    g0, g1, direction = g_old[i], g_new[i], events.directions[i]
                    if (g0 < 0.0 <= g1 and direction >= 0.0) or (g0 > 0.0 >= g1 and direction <= 0.0):
                        t_hit = solver.t if g1 == 0.0 else brentq(
                            lambda s, i=i, dense=dense: event_values(s, dense(s))[i], t_old, solver.t,
                            xtol=4 * np.finfo(float).eps * max(1.0, abs(solver.t)))
                        y_hit = solver.y.copy() if t_hit == solver.t else dense(t_hit)
                        make_room(float(t_hit))
                        records.append((i, float(t_hit), y_hit))
                        if events.terminal[i] and (t_stop is None or t_hit < t_stop):
                            t_stop = float(t_hit)
                g_old = g_new
            if outputs is not None:
                last = solver.t if t_stop is None else t_stop
                while next_output < outputs.size and outputs[next_output] <= last:
                    t_out = outputs[next_output]
                    keep(t_out, solver.y.copy() if t_out == solver.t else dense(t_out))
                    next_output += 1
            if t_stop is not None:  # a terminal event ends the run there
                skipped = None
                if times[-1] != t_stop:
                    keep(t_stop, dense(t_stop))
                status, t_fail = L.STATUS_EVENT, t_stop
                break
            if outputs is None:
                if nsteps % every == 0:
                    skipped = None
                    keep(solver.t, solver.y.copy())
                else:
                    skipped = (solver.t, solver.y.copy())
    except _OutputFull as full:
        status, t_fail, skipped = L.STATUS_OUTPUT_FULL, full.t, None
    except _StopRhs:
        status, t_fail = failure[0]
    except Exception as exc:  # noqa: BLE001 - an event function that failed: kept for the wrapper, as the bridge does
        status, t_fail = L.STATUS_INPUT_FAILED, (solver.t if solver is not None else t0)
        events.failure = (exc, t_fail)
    if skipped is not None:  # the last accepted step is always a sample, if it fits
        try:
            keep(*skipped)
        except _OutputFull:
            if status == L.STATUS_OK:
                status, t_fail = L.STATUS_OUTPUT_FULL, skipped[0]
    nfev = solver.nfev if solver is not None else 0
    return status, t_fail, np.array(times), np.array(states).reshape(-1, y0.size), nfev, nsteps, records
