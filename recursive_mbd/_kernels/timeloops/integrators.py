"""Time loops in numba: how a step is taken, for any formulation.

A time loop integrates the state y (1-d) of a ``system``, the NamedTuple of arrays of one formulation, through
the three functions of ``formulation`` (its right-hand side, its projection and whether it projects); it knows
no formulation by name, and numba compiles (and caches) it once per system type. Both formulations' states end
with the work dissipated by the dampers and done by the applied forces (W_dissipated, W_applied), so every run
carries its own energy balance, E(t) + W_dissipated - W_applied = E(t0): y = (q_free, qd_free, W) for the
recursive one (``planar.system``), y = (z, zd, W) for the augmented one (``augmented.system``).

``inputs(key, t, q, qd, u)`` is a numba-callable that fills the input vector u (time-varying element values,
tau as a function, drivers) and may be a compiled user function or a bridge to Python; it returns a status, so
a user function that fails stops the run (STATUS_INPUT_FAILED; the bridge keeps the Python exception).
Event functions are a callback of the same kind, ``events(key, t, y, y, values)``, or None for a run without any:
every time loop is then compiled without its event location (``open_outputs``, ``scan_events``, ``step_outputs``
test ``events is None``, which numba decides before typing), and a run with events compiles its own variant.
``monitor(key, t, y, y, control)``, called every ``control[0]`` evaluations, returns STATUS_INTERRUPTED or
STATUS_TIME_LIMIT to stop a run (Ctrl-C, max_wall_time) and sets the evaluation count of its next call.

A Runge-Kutta method is its tableau (A, B, C and, for embedded pairs, the error weights E = B - B_hat);
``rk_stages`` is the one generic stage loop, shared by the adaptive driver (``integrate_adaptive``) and the
fixed-step driver (``integrate_fixed``). Each driver runs its whole time loop in compiled code and returns a
status (``layout``), so a failure keeps the samples so far; so does a run whose samples would outgrow its output
budget (``_store``: STATUS_OUTPUT_FULL), which every time loop (these, generalised-alpha, BDF) is given.
"""

import math
from collections import namedtuple

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import copy_into
from ..layout import (
    LOOP_CHANGE_POINT,
    STATUS_EVENT,
    STATUS_INPUT_FAILED,
    STATUS_INTERRUPTED,
    STATUS_LOOP_DEGENERATE,
    STATUS_MAX_STEPS,
    STATUS_NO_CONVERGENCE,
    STATUS_NONFINITE_STATE,
    STATUS_OK,
    STATUS_OUTPUT_FULL,
    STATUS_SINGULAR,
    STATUS_STEP_UNDERFLOW,
    STATUS_TIME_LIMIT,
)
from . import formulation

# IEEE division: failures are status codes, never exceptions
njit = numba.njit(cache=True, error_model="numpy", _nrt=True)
# The helpers a step runs (stages, steps, polls, interpolation) allocate nothing and return no array: compiled without
# numba's reference counting, as the kernels (tree.NJIT_OPTIONS), they do not count each of the system's ~40 arrays
# up and down on every entry and exit (which cost more than a third of an rk4 run of a 100-body chain). The drivers
# (integrate_adaptive, integrate_fixed) allocate their buffers and keep it; so do the functions callable from Python.
# numba compiles a callee that does not set _nrt with its caller's setting, so every kernel module whose functions
# allocate (loops, elements, the augmented and spatial systems, ...) declares _nrt=True explicitly: a formulation's
# rhs reached from these helpers keeps its reference counting.
step_njit = numba.njit(cache=True, error_model="numpy", _nrt=False, **_cache.CALLEE)
# The output and event bookkeeping, which allocates (``_store``): reference counted, callable from compiled code only
callee_njit = numba.njit(cache=True, error_model="numpy", _nrt=True, **_cache.CALLEE)

# Callbacks (inputs, events, monitor) are C callbacks of this one signature, so the time loops see them as a
# first-class function type (FunctionType[CALLBACK]) whatever the function: a time loop is compiled and cached once,
# not once per callback and process (a Dispatcher-typed argument would make numba's cache key differ in every
# process). They return a status: STATUS_OK, or the reason to stop the run.
_VECTOR = numba.types.float64[::1]
CALLBACK = numba.types.int64(numba.types.int64, numba.types.float64, _VECTOR, _VECTOR, _VECTOR)


# Largest step growth after a step whose error came from DOP853's combined estimator (an e3 row). That estimate,
# |h| err5^2 / sqrt(err5^2 + 0.01 err3^2) (Hairer, Norsett & Wanner I, II.10), squares the accidental near-zeros of
# its fifth-order part err5, which are not rare where few distinct entries carry the error: a row of
# parallelograms has two (every crank angle alike, every crank rate alike). There one estimate of 7e-5 on a 0.15 s
# step (its true error 1e-3) let the step triple, and the 0.45 s step's estimate fell into another near-zero: 0.05
# for a true local error of 10 (the energy off by 7e-7 relative at rtol 1e-8, the same on the mechanism's
# one-degree-of-freedom equation). One estimate is trusted for a doubling of the step, not for more.
COMBINED_MAX_GROWTH = 2.0


@numba.cfunc(CALLBACK, cache=True)
def no_inputs(key, t, q, qd, u):
    """The input callback of a run without time-varying inputs (and the monitor of a run without one)."""
    return STATUS_OK


@step_njit
def _fatal(status):
    """True for a status that ends a run at once: never a reason to retry with a smaller step (a change point of
    the loops, too: the motion reaches it whatever the step)."""
    kind = status & 15
    return (kind in (STATUS_SINGULAR, STATUS_INPUT_FAILED, STATUS_INTERRUPTED, STATUS_TIME_LIMIT)
            or (kind == STATUS_LOOP_DEGENERATE and status >> 4 >= LOOP_CHANGE_POINT))


@step_njit
def _poll(monitor, monitor_key, control, t, y, nfev):
    """Call the monitor when the evaluation count reaches control[0] (it sets the next count); returns its status."""
    if nfev < control[0]:
        return STATUS_OK
    control[1] = nfev
    return monitor(monitor_key, t, y, y, control)


@njit
def system_rhs(inputs, key, system, t, y, dy):
    """dy = f(t, y) of the system's formulation (``formulation.rhs``); returns the status. Callable from Python;
    the time loops call ``formulation.rhs`` itself, so that a run that evaluates nothing from Python does not
    compile this entry too."""
    return formulation.rhs(inputs, key, system, t, y, dy)


@njit
def project_state(inputs, key, system, t, y):
    """y projected onto the system's constraints in place (``formulation.project``); returns the status."""
    return formulation.project(inputs, key, system, t, y)


def project_step(inputs, key, system, t, y):
    """After an accepted step: y projected onto the system's constraints in place when the run projects
    (``formulation.projects``); returns (status, projected)."""
    raise NotImplementedError("project_step is called from compiled time loops only")


@overload(project_step, inline="always", jit_options={"cache": True, "error_model": "numpy", **_cache.CALLEE})
def _project_step(inputs, key, system, t, y):
    if formulation.never_projects(system):  # decided while typing: the projection is not compiled into the loop
        return lambda inputs, key, system, t, y: (STATUS_OK, False)

    def project(inputs, key, system, t, y):
        if formulation.projects(system):
            return project_state(inputs, key, system, t, y), True
        return STATUS_OK, False
    return project


@step_njit
def rk_stages(inputs, key, system, t, y, h, a, c, k, ytmp, first_stage, monitor, monitor_key, control, nfev):
    """Stages first_stage .. s-1 of an explicit RK step into k (s, n); k[0] must hold f(t, y) when first_stage = 1.

    The monitor is polled before each stage (``_poll``; nfev: the evaluations before this call), so that a step
    of a very large model (a million bodies: 0.1 s per stage) does not delay an interrupt.
    """
    n = y.shape[0]
    for stage in range(first_stage, c.shape[0]):
        status = _poll(monitor, monitor_key, control, t, y, nfev + stage - first_stage)
        if status != STATUS_OK:
            return status
        # ytmp = y + h sum_m a[stage, m] k[m]: the sum built row by row (each loop over j vectorises), adding in
        # the same order as a sum per entry, so the result is the same to the bit
        for j in range(n):
            ytmp[j] = 0.0
        for m in range(stage):
            coefficient = a[stage, m]
            for j in range(n):
                ytmp[j] += coefficient * k[m, j]
        for j in range(n):
            ytmp[j] = y[j] + h * ytmp[j]
        status = formulation.rhs(inputs, key, system, t + c[stage] * h, ytmp, k[stage])
        if status != STATUS_OK:
            return status
    return STATUS_OK


# the output buffers of the time loops start at most this many floats (16 MB) and double when full (``_store``)
OUTPUT_START_FLOATS = 2**21


def output_rows(n, t_eval=None, budget=math.inf):
    """Initial rows of the output buffers of a time loop whose samples are n floats wide: one per t_eval sample
    (+2: t_end, a terminal event) when given, else 1024 rows or OUTPUT_START_FLOATS / n if fewer (a long chain's
    state is large: 1024 rows of a 1e5-link state are 1.6 GB); at most the rows the output ``budget`` holds
    (floats, t included: ``_store``), and at least one. ``_store`` doubles them when full, so the output is the
    same whatever the start (a plain Python function: the policy of the callers that allocate the buffers)."""
    if t_eval is not None and len(t_eval) > 0:
        rows = len(t_eval) + 2
    else:
        rows = max(2, min(1024, OUTPUT_START_FLOATS // max(n, 1)))
    return max(1, min(rows, budget_rows(budget, n)))


def budget_rows(budget, n):
    """Rows of n floats (and their time) that ``budget`` floats hold: floor(budget / (n + 1)); a huge number for an
    unlimited (infinite) budget. A plain Python function, the same rule as ``_store``'s."""
    return 2**62 if budget >= 2.0**62 else int(budget // (n + 1))


@callee_njit
def _store(t_out, y_out, count, t, y, budget):
    """Append (t, y) to the output buffers at row ``count``; returns (stored, t_out, y_out).

    Full buffers double (to one row from none) but to at most ``budget`` floats for both together (t_out's and
    y_out's: rows of y.shape[0] + 1 floats; ``math.inf``: no limit). Full at the budget, nothing is written (numba
    does not bounds-check) and ``stored`` is False: the time loop ends the run with STATUS_OUTPUT_FULL, its samples
    so far kept. The budget is what keeps a long run of a long chain from outgrowing memory (an allocation that
    fails in compiled code loses every sample; one that overcommits gets the process killed when touched).
    """
    if count >= t_out.shape[0]:
        rows = max(2 * count, 1)
        fit = budget / (y.shape[0] + 1)  # float: an infinite budget fits any number of rows
        if rows > fit:
            rows = int(fit)  # the budget's whole rows, fewer than 2 count
        if rows <= count:
            return False, t_out, y_out
        t_new = np.empty(rows)
        y_new = np.empty((rows, y.shape[0]))
        for r in range(count):
            t_new[r] = t_out[r]
            copy_into(y_new[r], y_out[r], 0)
        t_out = t_new
        y_out = y_new
    t_out[count] = t
    copy_into(y_out[count], y, 0)
    return True, t_out, y_out


@step_njit
def _left(budget, t_buffer, y_buffer):
    """The output budget (floats) less what the buffers (t_buffer, y_buffer) hold: the room of the other pair."""
    return budget - t_buffer.shape[0] - t_buffer.shape[0] * y_buffer.shape[1]


@step_njit
def _dense(y, y_new, k, h, dense, theta, out):
    """dopri5's 4th-order continuous extension at t + theta h into out (Hairer, Norsett & Wanner, II.6)."""
    s = k.shape[0]
    for j in range(y.shape[0]):
        r2 = y_new[j] - y[j]
        r3 = h * k[0, j] - r2
        r4 = r2 - h * k[s - 1, j] - r3
        r5 = 0.0
        for m in range(s):
            r5 += dense[m] * k[m, j]
        r5 *= h
        out[j] = y[j] + theta * (r2 + (1.0 - theta) * (r3 + theta * (r4 + (1.0 - theta) * r5)))


@step_njit
def _rms_norm(x, scale):
    acc = 0.0
    for j in range(x.shape[0]):
        acc += (x[j] / scale[j]) ** 2
    return math.sqrt(acc / x.shape[0])


@step_njit
def illinois_update(x, g, lo, hi, g_lo, g_hi, side):
    """One Illinois (modified regula falsi) update of the bracket [lo, hi] of a sign change, g_lo and g_hi the
    function's values at its ends, given its value g at the new point x inside it: x replaces the end with g's sign,
    and the other end's value is halved when the same end moved twice in a row (``side``: -1 hi, 1 lo, 0 none), so
    the iteration converges superlinearly. Returns (lo, hi, g_lo, g_hi, side). Shared by every time loop's event
    location; each evaluates g on its own interpolant."""
    if (g > 0.0) == (g_hi > 0.0):
        if side == -1:
            g_lo *= 0.5
        return lo, x, g_lo, g, -1
    if side == 1:
        g_hi *= 0.5
    return x, hi, g, g_hi, 1


@step_njit
def illinois_step(events, events_key, index, t_trial, x, ytmp, values, lo, hi, g_lo, g_hi, side):
    """One step of every time loop's event location: the event functions at the trial point (t_trial, ytmp) of the
    loop's interpolant (x its coordinate in the bracket, theta or the time), then ``illinois_update`` with the
    value of event ``index`` there. Returns (status of the event functions, settled, lo, hi, g_lo, g_hi, side):
    settled when the status is not STATUS_OK or the value is zero or not finite (the root is x)."""
    status = events(events_key, t_trial, ytmp, ytmp, values)
    if status != STATUS_OK:
        return status, True, lo, hi, g_lo, g_hi, side
    g = values[index]
    if g == 0.0 or not math.isfinite(g):
        return STATUS_OK, True, lo, hi, g_lo, g_hi, side
    lo, hi, g_lo, g_hi, side = illinois_update(x, g, lo, hi, g_lo, g_hi, side)
    return STATUS_OK, False, lo, hi, g_lo, g_hi, side


@step_njit
def _locate_event(events, events_key, index, t, h, y, y_new, k, dense, g0, g1, ytmp, values):
    """Root of event ``index`` between t and t + h on the dense output, by the Illinois method.

    Returns (status of the event functions, theta in [0, 1]). The generalised-alpha loops' ``newton.locate_span``
    is the same iteration on their Hermite output, kept apart because it is compiled with floating-point
    contraction (the trial point and t + theta h round differently): one copy per compilation, the same bits."""
    lo = 0.0
    hi = 1.0
    g_lo = g0
    g_hi = g1
    side = np.int64(0)
    theta = 1.0
    for _ in range(100):
        theta = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        _dense(y, y_new, k, h, dense, theta, ytmp)
        status, settled, lo, hi, g_lo, g_hi, side = illinois_step(events, events_key, index, t + theta * h, theta,
                                                                  ytmp, values, lo, hi, g_lo, g_hi, side)
        if status != STATUS_OK:
            return status, theta
        if settled or (hi - lo) * abs(h) <= 4.0 * 2.220446049250313e-16 * max(abs(t), abs(h)):
            break
    _dense(y, y_new, k, h, dense, theta, ytmp)
    return STATUS_OK, theta


# ---- output and events: the bookkeeping every time loop does around its steps, each on its own interpolant ----------
# A time loop describes the interpolant of its last step by a NamedTuple (``RKDense`` below, the generalised-alpha
# loops' ``newton.PlanarHermite`` and ``newton.SpatialHermite``, BDF's ``planar.bdf.BDFDense``) and registers what
# the three functions below do on it (``register_interpolant``), as a formulation does for ``formulation``;
# ``open_outputs`` and ``step_outputs`` are then the same for every loop.


def locate_root(dense, events, events_key, index, t, h, g0, g1, ytmp, values):
    """Root of event ``index`` in (t, t + h] on the interpolant ``dense`` (its values g0, g1 at the ends), the state
    there into ytmp; returns (status of the event functions, t_event, theta = its place in the step)."""
    raise NotImplementedError(f"no time loop registered locate_root for {type(dense).__name__}")


def sample_row(dense, t, h, t_sample, ytmp):
    """The output row at t_sample in (t, t + h] on the interpolant ``dense`` (ytmp: scratch of a state); returns
    the row to store (ytmp itself, or the loop's own row)."""
    raise NotImplementedError(f"no time loop registered sample_row for {type(dense).__name__}")


def stop_row(dense, y_stop, theta_stop):
    """The output row at a terminal event, the state y_stop there at theta_stop of the step; returns the row."""
    raise NotImplementedError(f"no time loop registered stop_row for {type(dense).__name__}")


def register_interpolant(cls, locate, sample, stop, jit_options):
    """Register the interpolant NamedTuple class ``cls`` of a time loop: ``locate``, ``sample`` and ``stop``, plain
    functions with the arguments of ``locate_root``, ``sample_row`` and ``stop_row``, become their implementations
    for it, compiled with ``jit_options`` (``numba.extending.overload``)."""

    def matches(dense):
        return isinstance(dense, types.BaseNamedTuple) and dense.instance_class is cls

    @overload(locate_root, jit_options=jit_options)
    def _locate_root(dense, events, events_key, index, t, h, g0, g1, ytmp, values):
        return locate if matches(dense) else None

    @overload(sample_row, jit_options=jit_options)
    def _sample_row(dense, t, h, t_sample, ytmp):
        return sample if matches(dense) else None

    @overload(stop_row, jit_options=jit_options)
    def _stop_row(dense, y_stop, theta_stop):
        return stop if matches(dense) else None


def state_stop_row(dense, y_stop, theta_stop):
    """``stop_row`` of a loop whose output rows are its state: y_stop itself."""
    return y_stop


# the explicit Runge-Kutta step's interpolant: dopri5's continuous extension (``_dense``) of the step from y to y_new
# with the stages k (s, n) and Hairer's coefficients ``dense``
RKDense = namedtuple("RKDense", ["y", "y_new", "k", "dense"])


def _rk_locate_root(dense, events, events_key, index, t, h, g0, g1, ytmp, values):
    status, theta = _locate_event(events, events_key, index, t, h, dense.y, dense.y_new, dense.k, dense.dense, g0, g1,
                                  ytmp, values)
    return status, t + theta * h, theta


def _rk_sample_row(dense, t, h, t_sample, ytmp):
    _dense(dense.y, dense.y_new, dense.k, h, dense.dense, (t_sample - t) / h, ytmp)
    return ytmp


register_interpolant(RKDense, _rk_locate_root, _rk_sample_row, state_stop_row,
                     {"cache": True, "error_model": "numpy", "_nrt": True, **_cache.CALLEE})


@callee_njit
def event_scratch(n_events, n):
    """A run's event scratch for n_events event functions on a state of n floats: (ev_old, ev_new, ev_tmp) their
    values at a step's start, its end and a trial point (n_events,), ev_row (n + 1,) an event's record (index,
    state) and y_stop (n,) the state at a terminal event."""
    return np.empty(n_events), np.empty(n_events), np.empty(n_events), np.empty(n + 1), np.empty(n)


@callee_njit
def store_start(t_out, y_out, t_eval, t0, row, budget):
    """The samples at a run's start: ``row`` (the start's output row) at every t_eval time <= t0 when t_eval is
    non-empty, else at t0, into the output buffers (``_store``, ``budget`` floats of room). Returns (stored, t_fail,
    count, next_eval, t_out, y_out): ``stored`` False when a sample did not fit (at t_fail), the samples stored and
    the first t_eval index left."""
    count = np.int64(0)
    next_eval = np.int64(0)
    if t_eval.shape[0] > 0:
        while next_eval < t_eval.shape[0] and t_eval[next_eval] <= t0:
            stored, t_out, y_out = _store(t_out, y_out, count, t_eval[next_eval], row, budget)
            if not stored:
                return False, t_eval[next_eval], count, next_eval, t_out, y_out
            count += 1
            next_eval += 1
    else:
        stored, t_out, y_out = _store(t_out, y_out, count, t0, row, budget)
        if not stored:
            return False, t0, count, next_eval, t_out, y_out
        count += 1
    return True, t0, count, next_eval, t_out, y_out


@callee_njit
def scan_events(dense, events, events_key, t, h, t_new, y_new, ev_old, ev_new, directions, terminal, ytmp, ev_tmp,
                ev_row, y_stop, ev_t, ev_y, nev, budget):
    """The events of the step from t to t_new = t + h, whose end state is y_new: every sign change of an event
    function between ev_old (its values at t) and its values at t_new (into ev_new) in its ``directions`` entry
    (> 0 rising only, < 0 falling only, 0 both) is located on the interpolant ``dense`` (``locate_root``) and
    recorded in (ev_t, ev_y) (rows: the event's index, the state; ``_store`` with ``budget`` floats of room); ev_old
    becomes ev_new. Nothing without event functions.

    Returns (status, t_fail, nev, ev_t, ev_y, t_stop, theta_stop): status STATUS_OK, an event function's failure
    (t_fail = t) or STATUS_OUTPUT_FULL (t_fail the event's time); nev the events recorded in all; t_stop the
    earliest ``terminal`` event of the step (inf: none), theta_stop its place in the step and y_stop its state.
    """
    t_stop = np.inf
    theta_stop = 1.0
    if events is None:  # a run without event functions: numba prunes the rest, which is then not compiled
        return STATUS_OK, t, nev, ev_t, ev_y, t_stop, theta_stop
    n_events = directions.shape[0]
    if n_events == 0:
        return STATUS_OK, t, nev, ev_t, ev_y, t_stop, theta_stop
    status = events(events_key, t_new, y_new, y_new, ev_new)
    if status != STATUS_OK:
        return status, t, nev, ev_t, ev_y, t_stop, theta_stop
    for i in range(n_events):
        g0 = ev_old[i]
        g1 = ev_new[i]
        if (g0 < 0.0 <= g1 and directions[i] >= 0.0) or (g0 > 0.0 >= g1 and directions[i] <= 0.0):
            status, t_event, theta = locate_root(dense, events, events_key, i, t, h, g0, g1, ytmp, ev_tmp)
            if status != STATUS_OK:
                return status, t, nev, ev_t, ev_y, t_stop, theta_stop
            ev_row[0] = i
            copy_into(ev_row, ytmp, 1)
            stored, ev_t, ev_y = _store(ev_t, ev_y, nev, t_event, ev_row, budget)
            if not stored:
                return STATUS_OUTPUT_FULL, t_event, nev, ev_t, ev_y, t_stop, theta_stop
            nev += 1
            if terminal[i] and t_event < t_stop:
                t_stop = t_event
                theta_stop = theta
                copy_into(y_stop, ytmp, 0)
        ev_old[i] = g1
    return STATUS_OK, t, nev, ev_t, ev_y, t_stop, theta_stop


@callee_njit
def store_samples(dense, t_eval, next_eval, t, h, t_upto, ytmp, t_out, y_out, count, budget):
    """The samples at the t_eval times from index next_eval on up to t_upto, in the step from t (length h), on its
    interpolant ``dense`` (``sample_row``), into the output buffers (``_store``, ``budget`` floats of room).
    Returns (stored, t_fail, count, next_eval, t_out, y_out) as ``store_start``."""
    while next_eval < t_eval.shape[0] and t_eval[next_eval] <= t_upto:
        row = sample_row(dense, t, h, t_eval[next_eval], ytmp)
        stored, t_out, y_out = _store(t_out, y_out, count, t_eval[next_eval], row, budget)
        if not stored:
            return False, t_eval[next_eval], count, next_eval, t_out, y_out
        count += 1
        next_eval += 1
    return True, t_upto, count, next_eval, t_out, y_out


@callee_njit
def store_stop(dense, y_stop, theta_stop, t_stop, t_out, y_out, count, budget):
    """The last sample of a run that a terminal event ends (``scan_events``: at t_stop, theta_stop of the step, the
    state y_stop) into the output buffers; returns (status, count, t_out, y_out): STATUS_EVENT, or
    STATUS_OUTPUT_FULL when it did not fit."""
    stored, t_out, y_out = _store(t_out, y_out, count, t_stop, stop_row(dense, y_stop, theta_stop), budget)
    if not stored:
        return STATUS_OUTPUT_FULL, count, t_out, y_out
    return STATUS_EVENT, count + 1, t_out, y_out


@callee_njit
def open_outputs(t_out, y_out, t_eval, t0, row, y0, events, events_key, directions, ev_t, ev_y, output_budget):
    """A run's start in its outputs: the samples at t0 (``store_start``, ``row`` the start's output row), the event
    scratch (``event_scratch``) and the event functions' values at (t0, y0). Returns (status, t_fail, count,
    next_eval, t_out, y_out, ev) with ev = (ev_old, ev_new, ev_tmp, ev_row, y_stop) for ``step_outputs``; status
    STATUS_OUTPUT_FULL (a sample did not fit, at t_fail), an event function's failure (t_fail = t0) or STATUS_OK."""
    stored, t_fail, count, next_eval, t_out, y_out = store_start(t_out, y_out, t_eval, t0, row,
                                                                 _left(output_budget, ev_t, ev_y))
    ev = event_scratch(directions.shape[0], y0.shape[0])
    if not stored:
        return STATUS_OUTPUT_FULL, t_fail, count, next_eval, t_out, y_out, ev
    status = STATUS_OK
    if events is not None:  # None: a run without event functions (pruned before typing, as in ``scan_events``)
        if directions.shape[0] > 0:
            status = events(events_key, t0, y0, y0, ev[0])
    return status, t0, count, next_eval, t_out, y_out, ev


@callee_njit
def step_outputs(dense, t, h, t_new, y_new, events, events_key, directions, terminal, ev, ytmp, t_eval, next_eval,
                 t_out, y_out, count, ev_t, ev_y, nev, output_budget):
    """What a time loop records of its step from t to t_new = t + h (end state y_new), on the step's interpolant
    ``dense``: the step's events (``scan_events``, ev the scratch of ``open_outputs``), its t_eval samples up to a
    terminal event (``store_samples``), and at a terminal event the run's last sample (``store_stop``).

    Returns (status, t_fail, stepped, count, next_eval, nev, t_out, y_out, ev_t, ev_y): STATUS_OK to go on, else
    the status the run ends with at t_fail: an event function's failure (``stepped`` False: the step is not
    counted as taken), STATUS_OUTPUT_FULL, or STATUS_EVENT at a terminal event.
    """
    t_stop = np.inf
    if events is not None:  # pruned before typing for a run without events: scan_events is then not compiled
        ev_old, ev_new, ev_tmp, ev_row, y_stop = ev
        status, t_fail, nev, ev_t, ev_y, t_stop, theta_stop = scan_events(
            dense, events, events_key, t, h, t_new, y_new, ev_old, ev_new, directions, terminal, ytmp, ev_tmp, ev_row,
            y_stop, ev_t, ev_y, nev, _left(output_budget, t_out, y_out))
        if status != STATUS_OK:
            return status, t_fail, status == STATUS_OUTPUT_FULL, count, next_eval, nev, t_out, y_out, ev_t, ev_y
    if t_eval.shape[0] > 0:
        stored, t_fail, count, next_eval, t_out, y_out = store_samples(
            dense, t_eval, next_eval, t, h, min(t_new, t_stop), ytmp, t_out, y_out, count,
            _left(output_budget, ev_t, ev_y))
        if not stored:
            return STATUS_OUTPUT_FULL, t_fail, True, count, next_eval, nev, t_out, y_out, ev_t, ev_y
    if events is not None and t_stop < np.inf:  # a terminal event (the branch pruned for a run without events)
        status, count, t_out, y_out = store_stop(dense, y_stop, theta_stop, t_stop, t_out, y_out, count,
                                                 _left(output_budget, ev_t, ev_y))
        return status, t_stop, True, count, next_eval, nev, t_out, y_out, ev_t, ev_y
    return STATUS_OK, t_new, True, count, next_eval, nev, t_out, y_out, ev_t, ev_y


@step_njit
def _starting_trial(y, f, atol, rtol, span, max_step, scale, ytmp):
    """The first half of Hairer's starting step (Hairer, Norsett & Wanner I, II.4): the error scale atol + rtol |y|
    into scale, d0 = |y| and d1 = |f| (RMS, scaled), the trial step h0 from them and the explicit Euler state
    ytmp = y + h0 f, at which the caller evaluates f again (the change of f over h0 sets the step). Returns (h0, d1).
    Shared by the adaptive Runge-Kutta driver and BDF."""
    n = y.shape[0]
    for j in range(n):
        scale[j] = atol + rtol * abs(y[j])
    d0 = _rms_norm(y, scale)
    d1 = _rms_norm(f, scale)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(max(h0, 1e-12 * span), span, max_step)
    for j in range(n):
        ytmp[j] = y[j] + h0 * f[j]
    return h0, d1


@njit
def integrate_adaptive(inputs, key, system, y0, t0, t_end, rtol, atol, first_step, max_step, max_steps, t_eval,
                       every, a, b, c, e, e3, order, dense, k, t_out, y_out, output_budget, events, events_key,
                       directions, terminal, ev_t, ev_y, monitor, monitor_key, control):
    """Adaptive embedded RK (FSAL: the last stage is f at the new state) from t0 to t_end.

    Error control per Hairer, Norsett & Wanner (1993), II.4: RMS norm of the local error estimate h sum e_j k_j
    scaled by atol + rtol max(|y_n|, |y_n+1|); with a second estimator e3 (DOP853, II.10) the combined norm
    |h| err5^2 / sqrt(n (err5^2 + 0.01 err3^2)). New step h (0.9 err^(-1/order)) clamped to [0.2 h, 10 h] (to
    2 h after a step with the combined estimate: ``COMBINED_MAX_GROWTH``), no growth right after a rejection.
    Output: at the times in ``t_eval`` by the continuous extension in ``dense`` (rows: Hairer's d coefficients
    of dopri5's 4th-order interpolant) when t_eval is non-empty, else every ``every``-th accepted step; t0 and
    t_end always.

    Events (with dense output): ``events(key, t, y, y, values)`` fills the values of the event functions (None
    for a run without any: the event location is then not compiled into the loop, ``scan_events``); a sign
    change in a step (in ``directions``: > 0 rising only, < 0 falling only, 0 both) is located on the dense
    output and recorded in (ev_t, ev_y) with the event's index in ev_y[:, 0]; a ``terminal`` one ends the run
    there with STATUS_EVENT. ``monitor`` is polled before each step once nfev reaches control[0] (``_poll``);
    a user function's failure, an interrupt and the time limit end the run at the last accepted step. At most
    ``max_steps`` steps, accepted and rejected. The buffers (t_out, y_out) and (ev_t, ev_y) grow (``_store``) to
    at most ``output_budget`` floats in all (math.inf: no limit); a sample or event that does not fit ends the run
    with STATUS_OUTPUT_FULL, t_fail its time. Returns (status, t_fail, count, t_out, y_out, nfev, nsteps,
    nrejected, nev, ev_t, ev_y).
    """
    n = y0.shape[0]
    s = c.shape[0]
    y = y0.copy()
    y_new = np.empty(n)
    ytmp = np.empty(n)
    scale = np.empty(n)
    err_vec = np.empty(n)
    t = t0
    nfev = np.int64(0)  # not the literal 0: a callee taking it would compile once more for Literal[int](0)
    nsteps = 0
    nrejected = 0
    use_eval = t_eval.shape[0] > 0
    nev = np.int64(0)
    status, t_fail, count, next_eval, t_out, y_out, ev = open_outputs(t_out, y_out, t_eval, t0, y, y, events,
                                                                      events_key, directions, ev_t, ev_y,
                                                                      output_budget)
    if status != STATUS_OK:
        return status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
    interpolant = RKDense(y, y_new, k, dense)

    status = formulation.rhs(inputs, key, system, t, y, k[0])
    nfev += 1
    if status != STATUS_OK:
        return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y

    # entries of y with a zero rate (state changed between steps) add exact zeros to the error's sum of squares:
    # the RMS norm is taken over the integrated entries only (it would otherwise loosen the tolerances)
    norm_factor = math.sqrt(n / formulation.integrated_size(system, n))
    span = t_end - t0
    h = first_step
    if h <= 0.0:  # Hairer's starting step: h0 from |y| / |f|, checked against the change of f over h0
        h0, d1 = _starting_trial(y, k[0], atol, rtol, span, max_step, scale, ytmp)
        status = formulation.rhs(inputs, key, system, t + h0, ytmp, k[1])
        nfev += 1
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        for j in range(n):
            err_vec[j] = (k[1, j] - k[0, j]) / h0
        d2 = norm_factor * _rms_norm(err_vec, scale)
        dmax = max(d1, d2)
        h1 = max(1e-6, h0 * 1e-3) if dmax <= 1e-15 else (0.01 / dmax) ** (1.0 / order)
        h = min(100.0 * h0, h1)
    h = min(h, max_step, span)

    rejected_last = False
    steps_since_output = 0
    while t < t_end:
        if nsteps + nrejected >= max_steps:
            return STATUS_MAX_STEPS, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        status = _poll(monitor, monitor_key, control, t, y, nfev)
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        last = t + h >= t_end or t + 1.01 * h >= t_end
        if last:
            h = t_end - t
        if h < 10.0 * 2.220446049250313e-16 * max(abs(t), 1e-300):
            return STATUS_STEP_UNDERFLOW, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        status = rk_stages(inputs, key, system, t, y, h, a, c, k, ytmp, 1, monitor, monitor_key, control, nfev)
        nfev += s - 1
        err = np.inf
        if status == STATUS_OK:
            # stage s-1 is evaluated at y_new (FSAL): ytmp holds y + h sum_j a[s-1, j] k_j = y + h sum b_j k_j
            err5 = 0.0
            err3 = 0.0
            for j in range(n):
                y_new[j] = ytmp[j]
                scale[j] = atol + rtol * max(abs(y[j]), abs(y_new[j]))
                acc = 0.0
                for m in range(s):
                    acc += e[m] * k[m, j]
                err_vec[j] = h * acc
                if e3.shape[0] > 0:
                    acc3 = 0.0
                    for m in range(s):
                        acc3 += e3[m] * k[m, j]
                    err5 += (acc / scale[j]) ** 2
                    err3 += (acc3 / scale[j]) ** 2
            if e3.shape[0] > 0:
                denominator = err5 + 0.01 * err3
                err = 0.0 if denominator == 0.0 else norm_factor * abs(h) * err5 / math.sqrt(denominator * n)
            else:
                err = norm_factor * _rms_norm(err_vec, scale)
        elif _fatal(status):  # singular dynamics, a failed user function, a stop request: not a step-size problem
            return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        if not (err <= 1.0):  # rejected (NaN and inf included): shrink and retry
            nrejected += 1
            fac = 0.2 if not math.isfinite(err) else max(0.2, 0.9 * err ** (-1.0 / order))
            h *= fac
            rejected_last = True
            continue
        nsteps += 1
        t_new = t_end if last else t + h
        # events, t_eval samples, a terminal event's end of the run
        status, t_fail, _, count, next_eval, nev, t_out, y_out, ev_t, ev_y = step_outputs(
            interpolant, t, h, t_new, y_new, events, events_key, directions, terminal, ev, ytmp, t_eval, next_eval,
            t_out, y_out, count, ev_t, ev_y, nev, output_budget)
        if status != STATUS_OK:
            return status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        for j in range(n):
            y[j] = y_new[j]
            k[0, j] = k[s - 1, j]
        t = t_new
        status, projected = project_step(inputs, key, system, t, y)  # onto the constraints; f at the projected state
        if projected:
            if status == STATUS_OK:
                status = formulation.rhs(inputs, key, system, t, y, k[0])
                nfev += 1
            if status != STATUS_OK:
                return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        steps_since_output += 1
        if not use_eval and (steps_since_output >= every or t >= t_end):
            stored, t_out, y_out = _store(t_out, y_out, count, t, y, _left(output_budget, ev_t, ev_y))
            if not stored:
                return STATUS_OUTPUT_FULL, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
            count += 1
            steps_since_output = 0
        fac = 10.0 if err == 0.0 else min(10.0, max(0.2, 0.9 * err ** (-1.0 / order)))
        if e3.shape[0] > 0:
            fac = min(fac, COMBINED_MAX_GROWTH)  # a near-zero of the combined estimate is not a reason to jump
        if rejected_last:
            fac = min(fac, 1.0)
        rejected_last = False
        h = min(h * fac, max_step)
    return STATUS_OK, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y


@step_njit
def _explicit_step(inputs, key, system, t, y, h, a, b, c, k, ytmp, monitor, monitor_key, control, nfev):
    """One explicit RK step of the tableau (a, b, c), y updated in place; returns (status, evaluations)."""
    s = c.shape[0]
    status = formulation.rhs(inputs, key, system, t, y, k[0])
    if status == STATUS_OK:
        status = rk_stages(inputs, key, system, t, y, h, a, c, k, ytmp, 1, monitor, monitor_key, control, nfev + 1)
    if status != STATUS_OK:  # a non-finite stage: the solution blew up in this step
        return (status if _fatal(status) else STATUS_NONFINITE_STATE), s
    # y += h sum_m b[m] k[m]: the sum built row by row in ytmp (each loop over j vectorises), adding in the same
    # order as a sum per entry, so the result is the same to the bit; finiteness as a branch-free OR
    n = y.shape[0]
    for j in range(n):
        ytmp[j] = 0.0
    for m in range(s):
        coefficient = b[m]
        for j in range(n):
            ytmp[j] += coefficient * k[m, j]
    bad = False
    for j in range(n):
        y[j] += h * ytmp[j]
        bad |= not math.isfinite(y[j])
    return (STATUS_NONFINITE_STATE if bad else STATUS_OK), s


@step_njit
def _midpoint_step(inputs, key, system, t, y, h, tol, max_iter, k, ytmp, monitor, monitor_key, control, nfev):
    """One implicit midpoint step y1 = y + h f(t + h/2, (y + y1) / 2) by fixed-point iteration, in place.

    Symmetric (time-reversible), second order, and symplectic where the mass matrix is constant; the iteration
    converges for h |df/dy| < 1, so it is for non-stiff problems. k[0] holds f, k[1] the iterate. Returns
    (status, evaluations). The monitor is polled before each iteration, as in ``rk_stages``.
    """
    n = y.shape[0]
    f = k[0]
    y_new = k[1]
    status = formulation.rhs(inputs, key, system, t, y, f)  # explicit Euler predictor
    if status != STATUS_OK:
        return (status if _fatal(status) else STATUS_NONFINITE_STATE), 1
    for j in range(n):
        y_new[j] = y[j] + h * f[j]
    for iteration in range(max_iter):
        status = _poll(monitor, monitor_key, control, t, y, nfev + iteration + 1)
        if status != STATUS_OK:
            return status, iteration + 1
        for j in range(n):
            ytmp[j] = 0.5 * (y[j] + y_new[j])
        status = formulation.rhs(inputs, key, system, t + 0.5 * h, ytmp, f)
        if status != STATUS_OK:  # a diverging iteration runs into inf/NaN: it did not converge
            return (status if _fatal(status) else STATUS_NO_CONVERGENCE), iteration + 2
        change = 0.0
        for j in range(n):
            updated = y[j] + h * f[j]
            change = max(change, abs(updated - y_new[j]) / (1.0 + abs(updated)))
            y_new[j] = updated
        if change <= tol:
            for j in range(n):
                y[j] = y_new[j]
            return STATUS_OK, iteration + 2
        if not change < 1e300:  # NaN or inf: diverged
            break
    return STATUS_NO_CONVERGENCE, max_iter + 1


@njit
def integrate_fixed(inputs, key, system, y0, t0, t_end, dt, nsteps_total, every, a, b, c, midpoint, tol, max_iter,
                    k, t_out, y_out, output_budget, monitor, monitor_key, control):
    """``nsteps_total`` >= 1 steps of dt from t0 to t_end (the last one shortened or lengthened to land on t_end;
    the caller counts them): the explicit RK tableau (a, b, c), or the implicit midpoint rule when ``midpoint``
    (iteration tolerance tol, at most max_iter). ``monitor`` is polled as in ``integrate_adaptive``.

    Stores t0, every ``every``-th step and t_end, in buffers that grow to at most ``output_budget`` floats
    (``_store``): a sample that does not fit ends the run with STATUS_OUTPUT_FULL, t_fail its time.
    Returns (status, t_fail, count, t_out, y_out, nfev, nsteps).
    """
    n = y0.shape[0]
    y = y0.copy()
    ytmp = np.empty(n)
    t = t0
    nfev = np.int64(0)  # not the literal 0 (see integrate_adaptive)
    count = np.int64(0)
    stored, t_out, y_out = _store(t_out, y_out, count, t0, y, output_budget)
    if not stored:
        return STATUS_OUTPUT_FULL, t0, count, t_out, y_out, nfev, 0
    count += 1
    for step in range(nsteps_total):
        status = _poll(monitor, monitor_key, control, t, y, nfev)
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, step
        h = dt if step < nsteps_total - 1 else t_end - t
        if midpoint:
            status, evaluations = _midpoint_step(inputs, key, system, t, y, h, tol, max_iter, k, ytmp, monitor,
                                                 monitor_key, control, nfev)
        else:
            status, evaluations = _explicit_step(inputs, key, system, t, y, h, a, b, c, k, ytmp, monitor, monitor_key,
                                                 control, nfev)
        nfev += evaluations
        t_start = t  # a step that fails reports its start, computed as the samples' times (t - h may be an ulp off)
        t = t_end if step == nsteps_total - 1 else t0 + (step + 1) * dt
        if status == STATUS_OK:  # projection onto the constraints
            status, _ = project_step(inputs, key, system, t, y)
        if status != STATUS_OK:
            return status, t_start, count, t_out, y_out, nfev, step
        if (step + 1) % every == 0 or step == nsteps_total - 1:
            stored, t_out, y_out = _store(t_out, y_out, count, t, y, output_budget)
            if not stored:
                return STATUS_OUTPUT_FULL, t, count, t_out, y_out, nfev, step + 1
            count += 1
    return STATUS_OK, t, count, t_out, y_out, nfev, nsteps_total


@njit
def rhs_jacobian(inputs, key, system, t, y, f0, ytmp, ftmp, jac):
    """df/dy at (t, y) into jac (n, n), n = 2 nf + 2 (positions, rates, work), with f0 = f(t, y) given.

    The structure is used: the position rows are exactly [0, I, 0]; nothing depends on the work columns; the remaining
    2 nf columns are forward differences of the right-hand side (2 nf forward-dynamics evaluations, all in
    compiled code). Returns the status.
    """
    n = y.shape[0]
    nf = (n - 2) // 2
    jac[:, :] = 0.0
    for j in range(nf):
        jac[j, nf + j] = 1.0
    for j in range(n):
        ytmp[j] = y[j]
    for col in range(2 * nf):
        step = 1.4901161193847656e-08 * max(1.0, abs(y[col]))  # sqrt(eps) relative step
        ytmp[col] = y[col] + step
        status = system_rhs(inputs, key, system, t, ytmp, ftmp)
        ytmp[col] = y[col]
        if status != STATUS_OK:
            return status
        for row in range(nf, n):
            jac[row, col] = (ftmp[row] - f0[row]) / step
    return STATUS_OK
