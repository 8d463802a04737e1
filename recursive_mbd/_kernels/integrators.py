"""Explicit Runge-Kutta time loops in numba over the recursive forward dynamics.

The state is y = (q, qd), shape (2 nq,), with y' = (qd, qdd(q, qd, tau)). A method is its tableau (A, B, C and,
for embedded pairs, the error weights E = B - B_hat); ``rk_stages`` is the one generic stage loop, shared by the
adaptive driver (``integrate_adaptive``) and the fixed-step driver (``integrate_fixed``). Each driver runs its
whole time loop in compiled code and returns a status (``layout``), so a failure keeps the samples so far.
"""

import math

import numba
import numpy as np

from .layout import STATUS_MAX_STEPS, STATUS_NONFINITE_STATE, STATUS_OK, STATUS_SINGULAR, STATUS_STEP_UNDERFLOW
from .tree import forward_dynamics

njit = numba.njit(cache=True, error_model="numpy")  # IEEE division: failures are status codes, never exceptions


@njit
def rhs(body_int, body_real, gravity, tau, ws, y, dy):
    """dy = (qd, qdd) at y = (q, qd); returns the forward-dynamics status."""
    nq = y.shape[0] // 2
    for k in range(nq):
        dy[k] = y[nq + k]
    return forward_dynamics(body_int, body_real, gravity, y[:nq], y[nq:], tau, ws, dy[nq:])


@njit
def rk_stages(body_int, body_real, gravity, tau, ws, y, h, a, c, k, ytmp, first_stage):
    """Stages first_stage .. s-1 of an explicit RK step into k (s, n); k[0] must hold f(y) when first_stage = 1."""
    n = y.shape[0]
    for stage in range(first_stage, c.shape[0]):
        for j in range(n):
            acc = 0.0
            for m in range(stage):
                acc += a[stage, m] * k[m, j]
            ytmp[j] = y[j] + h * acc
        status = rhs(body_int, body_real, gravity, tau, ws, ytmp, k[stage])
        if status != STATUS_OK:
            return status
    return STATUS_OK


@njit
def _store(t_out, y_out, count, t, y):
    """Append (t, y) to the output buffers, doubling them when full; returns the (possibly new) buffers."""
    if count == t_out.shape[0]:
        t_new = np.empty(2 * count)
        y_new = np.empty((2 * count, y.shape[0]))
        t_new[:count] = t_out
        y_new[:count] = y_out
        t_out = t_new
        y_out = y_new
    t_out[count] = t
    y_out[count] = y
    return t_out, y_out


@njit
def _rms_norm(x, scale):
    acc = 0.0
    for j in range(x.shape[0]):
        acc += (x[j] / scale[j]) ** 2
    return math.sqrt(acc / x.shape[0])


@njit
def integrate_adaptive(body_int, body_real, gravity, tau, ws, y0, t0, t_end, rtol, atol, first_step, max_step,
                       max_steps, t_eval, every, a, b, c, e, order, dense, k, t_out, y_out):
    """Adaptive embedded RK (FSAL, e.g. Dormand-Prince 5(4)) from t0 to t_end.

    Error control per Hairer, Norsett & Wanner (1993), II.4: RMS norm of the local error estimate h sum e_j k_j
    scaled by atol + rtol max(|y_n|, |y_n+1|); new step h (0.9 err^(-1/order)) clamped to [0.2 h, 10 h], no
    growth right after a rejection. Output: at the times in ``t_eval`` by the continuous extension in ``dense``
    (rows: Hairer's d coefficients of dopri5's 4th-order interpolant) when t_eval is non-empty, else every
    ``every``-th accepted step; t0 and t_end always. Returns (status, t_fail, count, t_out, y_out, nfev, nsteps,
    nrejected).
    """
    n = y0.shape[0]
    s = c.shape[0]
    y = y0.copy()
    y_new = np.empty(n)
    ytmp = np.empty(n)
    scale = np.empty(n)
    err_vec = np.empty(n)
    t = t0
    nfev = 0
    nsteps = 0
    nrejected = 0
    count = 0
    use_eval = t_eval.shape[0] > 0
    next_eval = 0
    if use_eval:
        while next_eval < t_eval.shape[0] and t_eval[next_eval] <= t0:
            t_out, y_out = _store(t_out, y_out, count, t_eval[next_eval], y)
            count += 1
            next_eval += 1
    else:
        t_out, y_out = _store(t_out, y_out, count, t0, y)
        count += 1

    status = rhs(body_int, body_real, gravity, tau, ws, y, k[0])
    nfev += 1
    if status != STATUS_OK:
        return status, t, count, t_out, y_out, nfev, nsteps, nrejected

    span = t_end - t0
    h = first_step
    if h <= 0.0:  # Hairer's starting step: h0 from |y| / |f|, checked against the change of f over h0
        for j in range(n):
            scale[j] = atol + rtol * abs(y[j])
        d0 = _rms_norm(y, scale)
        d1 = _rms_norm(k[0], scale)
        h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        h0 = min(max(h0, 1e-12 * span), span, max_step)
        for j in range(n):
            ytmp[j] = y[j] + h0 * k[0, j]
        status = rhs(body_int, body_real, gravity, tau, ws, ytmp, k[1])
        nfev += 1
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, nsteps, nrejected
        for j in range(n):
            err_vec[j] = (k[1, j] - k[0, j]) / h0
        d2 = _rms_norm(err_vec, scale)
        dmax = max(d1, d2)
        h1 = max(1e-6, h0 * 1e-3) if dmax <= 1e-15 else (0.01 / dmax) ** (1.0 / order)
        h = min(100.0 * h0, h1)
    h = min(h, max_step, span)

    rejected_last = False
    steps_since_output = 0
    while t < t_end:
        if nsteps + nrejected >= max_steps:
            return STATUS_MAX_STEPS, t, count, t_out, y_out, nfev, nsteps, nrejected
        last = t + h >= t_end or t + 1.01 * h >= t_end
        if last:
            h = t_end - t
        if h < 10.0 * 2.220446049250313e-16 * max(abs(t), 1e-300):
            return STATUS_STEP_UNDERFLOW, t, count, t_out, y_out, nfev, nsteps, nrejected
        status = rk_stages(body_int, body_real, gravity, tau, ws, y, h, a, c, k, ytmp, 1)
        nfev += s - 1
        err = np.inf
        if status == STATUS_OK:
            # stage s-1 is evaluated at y_new (FSAL): ytmp holds y + h sum_j a[s-1, j] k_j = y + h sum b_j k_j
            for j in range(n):
                y_new[j] = ytmp[j]
                acc = 0.0
                for m in range(s):
                    acc += e[m] * k[m, j]
                err_vec[j] = h * acc
                scale[j] = atol + rtol * max(abs(y[j]), abs(y_new[j]))
            err = _rms_norm(err_vec, scale)
        elif (status & 15) == STATUS_SINGULAR:  # singular dynamics: a model error, not a step-size problem
            return status, t, count, t_out, y_out, nfev, nsteps, nrejected
        if not (err <= 1.0):  # rejected (NaN and inf included): shrink and retry
            nrejected += 1
            fac = 0.2 if not math.isfinite(err) else max(0.2, 0.9 * err ** (-1.0 / order))
            h *= fac
            rejected_last = True
            continue
        nsteps += 1
        t_new = t_end if last else t + h
        if use_eval:
            while next_eval < t_eval.shape[0] and t_eval[next_eval] <= t_new:
                theta = (t_eval[next_eval] - t) / h
                for j in range(n):
                    r2 = y_new[j] - y[j]
                    r3 = h * k[0, j] - r2
                    r4 = r2 - h * k[s - 1, j] - r3
                    r5 = 0.0
                    for m in range(s):
                        r5 += dense[m] * k[m, j]
                    r5 *= h
                    ytmp[j] = y[j] + theta * (r2 + (1.0 - theta) * (r3 + theta * (r4 + (1.0 - theta) * r5)))
                t_out, y_out = _store(t_out, y_out, count, t_eval[next_eval], ytmp)
                count += 1
                next_eval += 1
        for j in range(n):
            y[j] = y_new[j]
            k[0, j] = k[s - 1, j]
        t = t_new
        steps_since_output += 1
        if not use_eval and (steps_since_output >= every or t >= t_end):
            t_out, y_out = _store(t_out, y_out, count, t, y)
            count += 1
            steps_since_output = 0
        fac = 10.0 if err == 0.0 else min(10.0, max(0.2, 0.9 * err ** (-1.0 / order)))
        if rejected_last:
            fac = min(fac, 1.0)
        rejected_last = False
        h = min(h * fac, max_step)
    return STATUS_OK, t, count, t_out, y_out, nfev, nsteps, nrejected


@njit
def integrate_fixed(body_int, body_real, gravity, tau, ws, y0, t0, t_end, dt, every, a, b, c, k, t_out, y_out):
    """Fixed-step explicit RK from t0 to t_end with step dt (the last step shortened to land on t_end).

    Stores t0, every ``every``-th step and t_end. Returns (status, t_fail, count, t_out, y_out, nfev, nsteps).
    """
    n = y0.shape[0]
    s = c.shape[0]
    y = y0.copy()
    ytmp = np.empty(n)
    t = t0
    nfev = 0
    count = 0
    t_out, y_out = _store(t_out, y_out, count, t0, y)
    count += 1
    nsteps_total = int(math.ceil((t_end - t0) / dt - 1e-9))
    for step in range(nsteps_total):
        h = dt if step < nsteps_total - 1 else t_end - t
        status = rhs(body_int, body_real, gravity, tau, ws, y, k[0])
        if status == STATUS_OK:
            status = rk_stages(body_int, body_real, gravity, tau, ws, y, h, a, c, k, ytmp, 1)
        nfev += s
        if status != STATUS_OK:
            if (status & 15) != STATUS_SINGULAR:  # a non-finite stage: the solution blew up in this step
                status = STATUS_NONFINITE_STATE
            return status, t, count, t_out, y_out, nfev, step
        finite = True
        for j in range(n):
            acc = 0.0
            for m in range(s):
                acc += b[m] * k[m, j]
            y[j] += h * acc
            finite = finite and math.isfinite(y[j])
        t = t_end if step == nsteps_total - 1 else t0 + (step + 1) * dt
        if not finite:
            return STATUS_NONFINITE_STATE, t, count, t_out, y_out, nfev, step + 1
        if (step + 1) % every == 0 or step == nsteps_total - 1:
            t_out, y_out = _store(t_out, y_out, count, t, y)
            count += 1
    return STATUS_OK, t, count, t_out, y_out, nfev, nsteps_total
