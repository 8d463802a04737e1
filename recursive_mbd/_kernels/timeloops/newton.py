"""The Newton and output bookkeeping that the implicit time loops of both formulations share.

Generalised-alpha runs as one compiled loop per formulation (``planar.implicit``, ``spatial.implicit``: their
states, residuals, Newton matrices and compilation options differ); what the two loops do alike is here, once: the
cubic Hermite dense output and its event location, registered as the loops' interpolants (``PlanarHermite``,
``SpatialHermite``) for the output and event bookkeeping of ``integrators`` (``open_outputs``, ``step_outputs``),
the output rows with the loop multipliers, the closed loops' bordered Newton correction (``schur_correction``,
``position_correction``: whatever factors S are), and the modified-Newton bookkeeping (the run's state arrays,
when to factorise again, a step's second attempt, the failure record, the carry from one call to the next). BDF is
one loop for every system (``planar.bdf.integrate_bdf``); the interface it calls, the Newton hooks that each system
registers (``planar.bdf`` and ``spatial.bdf``), is declared here, so that the planar and the spatial kernels import
this module and not each other.

The dense output, the output rows and the bordered correction are compiled as they were inside the planar
generalised-alpha module (floating-point contraction allowed, ``njit`` below), so both loops keep the same bits.
Their event location (``locate_span``) stays apart from the explicit loops' (``integrators._locate_event``) for
that reason: the same iteration (``integrators.illinois_step``) compiled with and without contraction.
"""

from collections import namedtuple

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import STATUS_OK
from ..planar.loops import filtered_solve
from .integrators import _store, illinois_step, register_interpolant

# the options of the planar generalised-alpha kernels (``planar.implicit``), which both loops' results were made with
njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)

# Generalised-alpha: Newton corrections shrinking by less than this factor per iteration with factors of an earlier
# step: factorise again at the current iterate
SLOW_CONTRACTION = 0.05


@njit
def hermite_span(y0, y1, rate0, rate1, nsmooth, h, theta, out):
    """Cubic Hermite interpolation at t + theta h of the first ``nsmooth`` entries of y (from y0, y1 and their rates
    rate0, rate1), the rest (the work terms) linear, into out. The planar loop's y = (q_free, qd_free, W, W) has
    nsmooth = 2 nf (q from q and qd, qd from qd and qdd), the spatial loop's y = (q (nq), v (nv), W, W) nq + nv.
    Third-order accurate in the step, beyond generalised-alpha's second order: the dense output adds no error of
    its own."""
    h00 = (1.0 + 2.0 * theta) * (1.0 - theta) ** 2
    h10 = theta * (1.0 - theta) ** 2
    h01 = theta * theta * (3.0 - 2.0 * theta)
    h11 = theta * theta * (theta - 1.0)
    for j in range(nsmooth):
        out[j] = h00 * y0[j] + h * h10 * rate0[j] + h01 * y1[j] + h * h11 * rate1[j]
    for j in range(nsmooth, y0.shape[0]):
        out[j] = (1.0 - theta) * y0[j] + theta * y1[j]


@njit
def output_row(y, lam_start, lam_end, theta, row):
    """row = (y, lambda at theta in [0, 1] of the step: linear between the step's ends) for the output buffers."""
    n = y.shape[0]
    for j in range(n):
        row[j] = y[j]
    for r in range(lam_end.shape[0]):
        row[n + r] = (1.0 - theta) * lam_start[r] + theta * lam_end[r]


@njit
def locate_span(events, events_key, index, t, h, y0, y1, rate0, rate1, nsmooth, g0, g1, ytmp, values):
    """Root of event ``index`` in (t, t + h] on the interpolant of ``hermite_span``, by the Illinois method;
    (status, theta)."""
    lo = 0.0
    hi = 1.0
    g_lo = g0
    g_hi = g1
    side = 0
    theta = 1.0
    for _ in range(100):
        theta = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        hermite_span(y0, y1, rate0, rate1, nsmooth, h, theta, ytmp)
        # (t + theta h here, with this module's contraction: the event times the planar loop always had)
        status, settled, lo, hi, g_lo, g_hi, side = illinois_step(events, events_key, index, t + theta * h, theta,
                                                                  ytmp, values, lo, hi, g_lo, g_hi, side)
        if status != STATUS_OK:
            return status, theta
        if settled or (hi - lo) * abs(h) <= 4.0 * 2.220446049250313e-16 * max(abs(t), abs(h)):
            break
    hermite_span(y0, y1, rate0, rate1, nsmooth, h, theta, ytmp)
    return STATUS_OK, theta


# a generalised-alpha step's interpolant for the output bookkeeping of ``integrators`` (``step_outputs``):
# ``hermite_span`` from (y0, rate0) to (y1, rate1), its first nsmooth entries cubic; output rows (``output_row``,
# into ``row``) carry the multipliers, linear from lam_start to lam_end. One class per loop, the same functions: an
# event's time t + theta h is rounded as each loop was compiled, the planar one with floating-point contraction
# (``planar.implicit``'s options), the spatial one without.
PlanarHermite = namedtuple("PlanarHermite", ["y0", "y1", "rate0", "rate1", "nsmooth", "lam_start", "lam_end", "row"])
SpatialHermite = namedtuple("SpatialHermite", PlanarHermite._fields)


def _hermite_locate_root(dense, events, events_key, index, t, h, g0, g1, ytmp, values):
    status, theta = locate_span(events, events_key, index, t, h, dense.y0, dense.y1, dense.rate0, dense.rate1,
                                dense.nsmooth, g0, g1, ytmp, values)
    return status, t + theta * h, theta


def _hermite_sample_row(dense, t, h, t_sample, ytmp):
    theta = (t_sample - t) / h
    hermite_span(dense.y0, dense.y1, dense.rate0, dense.rate1, dense.nsmooth, h, theta, ytmp)
    output_row(ytmp, dense.lam_start, dense.lam_end, theta, dense.row)
    return dense.row


def _hermite_stop_row(dense, y_stop, theta_stop):
    output_row(y_stop, dense.lam_start, dense.lam_end, theta_stop, dense.row)
    return dense.row


for _cls, _options in ((PlanarHermite, {"fastmath": {"contract"}}), (SpatialHermite, {})):
    register_interpolant(_cls, _hermite_locate_root, _hermite_sample_row, _hermite_stop_row,
                         {"cache": True, "error_model": "numpy", "_nrt": True, **_options})


@njit
def schur_correction(free, jac, resp, gram, rcond, phi_scaled, dx, dlam, work_m):
    """The loop rows' part of the bordered solve [S J^T; J 0] [dx; dlam] = [residual; phi_scaled], whatever S is
    (the planar or the spatial factors): on entry dx (nf,) = S^-1 residual, resp (m, nf) = S^-1 J^T and gram =
    J S^-1 J^T; then (J S^-1 J^T) dlam = J dx - phi_scaled (``loops.filtered_solve``: exact where the loops are
    independent, minimum-norm where redundant) and dx -= (S^-1 J^T) dlam. J is jac (m, nq) on the columns
    ``free`` (nf,). work_m (m,) scratch. O(N m + m^3). Returns False if the small system is not finite."""
    nf = free.shape[0]
    m = dlam.shape[0]
    if m == 0:
        return True
    for r in range(m):
        acc = -phi_scaled[r]
        for j in range(nf):
            acc += jac[r, free[j]] * dx[j]
        work_m[r] = acc
    if filtered_solve(gram, work_m, rcond, dlam) < 0:
        return False
    for r in range(m):
        for j in range(nf):
            dx[j] -= resp[r, j] * dlam[r]
    return True


@njit
def position_correction(jac, free, phi, rate_scaled, c_stiff, rcond, gram_pos, work_m, dnu, xfull):
    """The stabilised index-2 position unknowns' Newton correction: with q+ = (GA update) + J_f^T nu, the rows
    phi(q+) / c_stiff = 0 have the derivatives J (by qdd+) and J_f J_f^T / c_stiff (by nu); the velocity rows
    already fixed J dqdd = rate_scaled (``newton_correction``), so (J_f J_f^T) dnu = phi - c_stiff rate_scaled
    (``loops.filtered_solve``: minimum-norm where the rows are redundant). Writes dnu (m,) and xfull (nq,) =
    J^T dnu on the free columns (zero elsewhere); gram_pos (m, m), work_m (m,) scratch. O(N m^2). Returns False
    if the small system is not finite."""
    m = dnu.shape[0]
    nf = free.shape[0]
    for r in range(m):
        work_m[r] = phi[r] - c_stiff * rate_scaled[r]
        for s in range(r + 1):
            g = 0.0
            for j in range(nf):
                g += jac[r, free[j]] * jac[s, free[j]]
            gram_pos[r, s] = g
            gram_pos[s, r] = g
    if filtered_solve(gram_pos, work_m, rcond, dnu) < 0:
        return False
    for k in range(xfull.shape[0]):
        xfull[k] = 0.0
    for r in range(m):
        for j in range(nf):
            xfull[free[j]] += jac[r, free[j]] * dnu[r]
    return True



@njit
def run_state(y0, m):
    """The state arrays of a generalised-alpha run from y0 (n,) with m loop multipliers: (y, y_new) copies of y0,
    (rate, rate_new) the state's rates at the step's ends for the dense output (n,), (powers, powers_new) the work
    rates there (2,), ytmp (n,) and an output row (n + m: the state, then the multipliers)."""
    n = y0.shape[0]
    return y0.copy(), y0.copy(), np.zeros(n), np.zeros(n), np.zeros(2), np.zeros(2), np.empty(n), np.empty(n + m)


@njit
def restart_attempt(accel_new, accel, shift, lam, lam_start):
    """A step's Newton iteration started again from the predictor (its second attempt, with factors of its own
    iterate): the accelerations of the step's start, no position shift (J^T nu), the multipliers of its start."""
    for j in range(accel.shape[0]):
        accel_new[j] = accel[j]
        shift[j] = 0.0
    for r in range(lam.shape[0]):
        lam[r] = lam_start[r]


@njit
def store_row(t_out, y_out, count, t, y, lam, row, budget):
    """The output row (state y, multipliers lam) at t, a step's end, into the buffers (``integrators._store``,
    ``budget`` floats of room); returns (stored, count, t_out, y_out)."""
    output_row(y, lam, lam, 1.0, row)
    stored, t_out, y_out = _store(t_out, y_out, count, t, row, budget)
    return stored, count + 1 if stored else count, t_out, y_out


@njit
def refactor_due(factored_h, h, fresh, correction, previous):
    """True when generalised-alpha factorises S again at the current iterate: no factors for this h yet (steps
    t0 + k dt differ by round-off: the same step), or a slow contraction (by less than SLOW_CONTRACTION) with
    factors of an earlier step (the state has moved on)."""
    return abs(factored_h - h) > 1e-9 * h or (not fresh and correction > SLOW_CONTRACTION * previous)


@njit
def record_failure(info, correction, res_max, step, iterations):
    """A Newton failure of generalised-alpha into info[:4]: the last correction of the state, max |residual|, the
    step (1-based) and the Newton iterations so far."""
    info[0] = correction
    info[1] = res_max
    info[2] = step + 1
    info[3] = iterations


@njit
def load_carry(carry, powers, acc, accel, lam):
    """Generalised-alpha's state from an earlier call (a progress bar's pieces): carry (2 + 2 n + m + 1) =
    (powers (2), a (n), the accelerations (n), lambda (m), started flag) into powers, acc, accel, lam; returns
    False (nothing loaded) when the flag is 0, a run's first call."""
    if carry[carry.shape[0] - 1] == 0.0:
        return False
    n = acc.shape[0]
    powers[0] = carry[0]
    powers[1] = carry[1]
    for j in range(n):
        acc[j] = carry[2 + j]
        accel[j] = carry[2 + n + j]
    for r in range(lam.shape[0]):
        lam[r] = carry[2 + 2 * n + r]
    return True


@njit
def save_carry(carry, powers, acc, accel, lam):
    """``load_carry``'s carry from powers, acc, accel, lam at the end of a call, its flag set."""
    n = acc.shape[0]
    carry[0] = powers[0]
    carry[1] = powers[1]
    for j in range(n):
        carry[2 + j] = acc[j]
        carry[2 + n + j] = accel[j]
    for r in range(lam.shape[0]):
        carry[2 + 2 * n + r] = lam[r]
    carry[carry.shape[0] - 1] = 1.0


# ---- BDF: the Newton hooks of ``planar.bdf.integrate_bdf`` ----------------------------------------------------------

# The time loop's interface to the system it integrates (the Newton iteration on the second-order structure): a
# stub per hook, each system registering its implementation with ``numba.extending.overload`` (as the formulations
# do for ``formulation``); the planar recursive system's implementations are in ``planar.bdf`` (beside the loop,
# ``integrate_bdf``), the spatial tree's in ``spatial.bdf``. Every hook returns its status (``layout``) where it can
# fail. The hooks of every Newton iteration allocate nothing and are compiled without reference counting
# (HOOK_OPTIONS): the system's and the workspace's arrays are read from their tuples at every call, and with
# reference counting each read costs an atomic increment and decrement (measured: +2.4 us per iteration on a double
# pendulum, 3.9 -> 6.3, when they were inlined into the loop instead). As calls they cost about 0.2 us per iteration
# over the former single-function loop on a double pendulum (1.74 -> 1.97 us, 400,000 iterations, loaded machine),
# nothing measurable from 100 bodies on. The two hooks called once per run (the workspace, the starting step's
# filter) are inlined.
HOOK_OPTIONS = {"cache": True, "error_model": "numpy", "_nrt": False}


def newton_workspace(system, newton):
    """The run's Newton scratch: a tuple whose entries 0-2 are the loop multipliers (lam (m,) at its value at the
    start, lam_start (m,), GGL's mu (m,); m = 0 for a tree) that the time loop saves and restores over a step's
    attempts; the rest is the system's own. ``newton`` is the tuple the Python side built for the run."""
    raise NotImplementedError(f"no system registered a BDF Newton workspace for {type(system).__name__}")


def corrector_predict(system, work, c, y_pred, psi, d, y):
    """The corrector's start: d with the q rows held exactly at the predicted velocities (d_v = 0), y = y_pred + d."""
    raise NotImplementedError(f"no system registered corrector_predict for {type(system).__name__}")


def corrector_residual(inputs, key, system, work, t_new, c, psi, d, y):
    """The residual of the velocity rows at the iterate y (one inverse-dynamics pass) and the work rows of d;
    returns (status, max |residual|)."""
    raise NotImplementedError(f"no system registered corrector_residual for {type(system).__name__}")


def newton_factor(system, work, c):
    """Factor the Newton matrix S = M + c C + c^2 K at the iterate of the last residual; returns the status."""
    raise NotImplementedError(f"no system registered newton_factor for {type(system).__name__}")


def newton_update(system, work, c, y_pred, psi, d, y, scale):
    """One Newton correction with the factors: updates d and y = y_pred + d; returns (ok, sum over the q and v
    rows of (change / scale)^2)."""
    raise NotImplementedError(f"no system registered newton_update for {type(system).__name__}")


def filtered_change(system, work, h, y0, err):
    """err <- (I - h J)^-1 err (J the system's Jacobian as the Newton matrix keeps it), for the starting step;
    returns the status (err unchanged unless STATUS_OK)."""
    raise NotImplementedError(f"no system registered filtered_change for {type(system).__name__}")


def accept_step(system, work, y_pred, d, y):
    """An accepted step's state, after its error test: y (and d = y - y_pred) moved onto the system's manifold
    (unit quaternions), in place; returns the status."""
    raise NotImplementedError(f"no system registered accept_step for {type(system).__name__}")
