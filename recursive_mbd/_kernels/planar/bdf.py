"""Variable-step, variable-order BDF (orders 1-5) time loop in numba, with an O(N) Newton matrix.

The method is the quasi-constant step-size BDF of Shampine & Reichelt ("The MATLAB ODE Suite", SIAM J. Sci.
Comput. 18, 1997; the algorithm of scipy's ``BDF`` with its NDF coefficients kappa set to 0, i.e. plain BDF): the
solution is carried as the array D of its backward differences at constant step h, D[j] = nabla^j y_n. A step
change by a factor r maps D[:k+1] by the matrix R(r) U (U = R(1)) that re-samples the interpolating polynomial on
the new grid, so every formula below is the constant-step one:

    y_pred = sum_{j=0..k} D[j],        psi = (1 / gamma_k) sum_{j=1..k} gamma_j D[j],   gamma_j = sum_{i<=j} 1/i,
    y_new  = y_pred + d,               d + psi = c f(t_new, y_new),                       c = h / gamma_k,

local error estimate d / (k + 1), RMS norm scaled by atol + rtol |y_new|; order k -> k +- 1 after k + 1 steps of
equal size, from the estimates D[k] / k and D[k+2] / (k + 2) (the same norm). Dense output (``interpolate``) is
the polynomial through y_new, y_n, ..., y_{n+1-k} the D array represents.

Newton on the second-order structure
------------------------------------
y = (q, v, w) with q' = v, v' = a(q, v, t) (the forward dynamics of the free coordinates) and w' = P (the work
rates). The q rows of the corrector, d_q + psi_q = c v_new, are linear: they are kept exactly, so q is eliminated,
and the unknowns are the accelerations qdd = (psi_v + d_v) / c of the new step:

    v_new = v_pred + d_v,   q_new = q_pred + d_q,   d_q = c v_new - psi_q,   dv_new / dqdd = c,  dq_new / dqdd = c^2.

The v rows d_v + psi_v = c a(q_new, v_new) are M(q_new) qdd - Q(q_new, v_new, t_new) = 0: their residual R is one
inverse-dynamics pass (``implicit.newton_residual``, O(N), no forward dynamics), and dR/dqdd = M + c C + c^2 K = S,
the matrix of ``recursive_mbd.integrate.implicit`` with c_mass = 1, c_damp = c, c_stiff = c^2 (the terms it keeps
exactly and those it lags -- velocity products, d(M a)/dq, elements between bodies, tau -- are listed there; a lagged
term only slows the contraction, the converged step is the BDF step). Each iteration: qdd -= S^-1 R, i.e.
d_v -= c dx, d_q -= c^2 dx; the work rows d_w = c P - psi_w are explicit given q and v.

Modified Newton as in CVODE (Hindmarsh et al., ACM TOMS 31, 2005): S is factorised (``kinematics_pass`` and
``effective_factor``: 0.8 forward-dynamics evaluations on a serial chain, whose passes carry their data in
registers, 2.7 - 3.8 through the tree kernels) at the first iterate of a step whose c = h / gamma_k differs from
that of the factors, and reused over the following steps of the same c (the quasi-constant step of Shampine &
Reichelt changes h only every k + 1 steps); one iteration is then one residual and one ``effective_apply`` (two
sweeps) and the O(N) updates: 1.1 - 1.3 forward-dynamics evaluations on serial_chain(1e3 .. 1e5), 1.9 - 2.2
through the tree kernels; a whole run costs 1.5 - 1.9 per iteration with its factorisations and per-step work
(benchmarks/bdf_iteration.py, which defines and splits these).
Convergence: the correction (RMS, scaled like the error) times min(1, rate) <= newton_tol, the contraction rate
carried over the steps that share the factors (decaying at most by CRATE_DOWN per iteration; measured with these
factors at least once), so a step with good factors converges
in one iteration; the iteration fails, as in scipy's BDF, when a rate is >= 1 or too slow to reach newton_tol in
the iterations left; stale factors contracting slower than SLOW_CONTRACTION are made again at the
current iterate, and a step that fails with stale factors is retried from the predictor with fresh ones before h
is halved. With factors of the iterate a correction stalled at the residuals' round-off (ROUNDOFF / rtol in
units of the tolerance, far below it) is accepted. Driven coordinates are outside the state: their joints are
locked in S (``effective_factor``'s driven mask).

Contacts
--------
The contacts' state (anchors, impact speeds) follows the work terms in y with a zero rate: its rows of D beyond
D[0] stay zero, the residual (``implicit.newton_residual``) holds it over a step, the error and Newton norms leave
it out (``formulation.integrated_size``), and after each accepted step (its outputs made) it is updated in D[0]
(``system.contact_update``), as the explicit methods do. The contacts' stiffness and damping enter S as per-body
blocks (``contact.contact_newton_blocks`` with c_stiff = c^2, c_damp = c), made at each factorisation from a copy of
the step's contact state (``newton[20]``, filled by ``corrector_predict``).

One loop, several systems
-------------------------
Everything above that is not the Newton iteration's algebra (the differences, step and order control, STALD
below, dense output, events, work terms, the modified-Newton strategy and its convergence test) is
``integrate_bdf``'s; the system-specific pieces (the corrector's start with the q rows held exactly, the
residual, the factorisation of S, one correction, the filtered change of the starting step, the accepted step's
projection) are hooks overloaded per system type and inlined into the loop (``newton_workspace`` and the
functions after it, declared in ``timeloops.newton``). The planar recursive system's are below; a spatial tree's
(quaternion rows, the spatial articulated-body factorisation, unit quaternions after each accepted step) are in
``spatial.bdf``.

Closed loops: GGL (index 2)
---------------------------
The index-3 form (phi(q_new) = 0 only) gives velocities that satisfy J v = 0 only to O(h^k): their BDF error
estimate is then O(h^k), not O(h^(k+1)), and the step control collapses (measured on the four-bar). The
stabilised index-2 form of Gear, Gupta & Leimkuhler (1985) imposes both phi(q) = 0 and J(q) v = 0 and adds a
multiplier mu to the q rows, q' = v - J^T mu (mu = 0 on the exact solution), so that both constraints can hold:

    d_q + psi_q = c (v_new - J^T mu),   M qdd - Q + J^T lambda = 0,   phi(q_new) = 0,   J v_new = 0.

Unknowns (qdd, lambda, mu); with dq_new = c^2 dqdd - c J^T dmu, dv_new = c dqdd, the rows scaled by (1, 1/c^2,
1/c) and the terms lambda d2phi/dq2, d(J v)/dq and dQ/dq J^T dmu lagged, the Newton matrix is

    [ S   J^T   0          ] [dqdd  ]   [ R           ]
    [ J   0     -J J^T / c ] [dlam  ] = [ phi / c^2   ]
    [ J   0     0          ] [dmu   ]   [ J v / c     ]

Rows 1 and 3 are the loop system of generalized_alpha, [S J^T; J 0] (dqdd, dlam) = (R, J v / c), solved by its
Schur complement (``loop_schur`` once per factorisation, ``newton_correction`` per iteration: O(N m + m^3)); row 2
then gives (J J^T) dmu = c J dqdd - phi / c (``loops.filtered_solve``, J J^T over the free coordinates formed at
each factorisation). The update is qdd -= dqdd, lambda -= dlam, mu -= dmu (mu starts at 0 each step; lambda at
the last step's value), d_q -= c^2 dqdd - c J^T dmu. The loops then hold at position and velocity level to the
Newton tolerance at every step, and q, v carry ordinary BDF error estimates.

Stability on long undamped chains
---------------------------------
BDF3-5 are not A-stable: on an undamped system with a wide band of frequencies (a long hanging chain) the
modes with h omega near their stability boundary grow from round-off by a few per cent per step, the error test
cuts h, and the steps sit at the stability limit like an explicit method's (serial_chain(1000) swinging over
2 s: 26,574 steps at orders up to 5, 421 at max_order=2). Stability limit detection, after CVODE's STALD
(Hindmarsh et al. 2005; its root estimate from scaled-derivative norms replaced here by one on the vectors):
when one mode dominates, successive corrections d_n (the (k+1)-th differences at a constant step) obey the
two-term recurrence d_n = a d_{n-1} + b d_{n-2} of its pair of roots r^2 = a r + b. After each step of a run of
equal steps at order >= 3, (a, b) is fitted to the last three corrections (least squares in the error norm,
``_correction_fit``) and the fit of the previous step is tested on this one; a pair that predicts the new
correction to STALD_MISFIT (5 %), with complex roots |r| > STALD_GROWTH (0.9) at an angle above STALD_ANGLE
(0.2 rad per step, i.e. a mode the step does not resolve), is an unresolved oscillatory root at the stability
boundary. A smooth resolved motion gives nearly collinear corrections (no pair is fitted) and one at a small
angle. When STALD_RUNS (3) runs of equal steps in a row had one, the order is capped at 2 for the rest of the
run (A-stable: BDF2 damps those modes) and ``info`` records when (``recursive_mbd.integrate.bdf`` warns). Any order
choice is safe for the accuracy (the error test holds at every order); the detection only decides the cost.
Measured (rtol 1e-7, first-mode swing over 2 s): serial_chain(100) 3,740 -> 890 steps (619 at max_order=2),
serial_chain(1000) 26,574 -> 1,928 (421), serial_chain(10_000) 6,316 (289); no detection on resolved motions
(double pendulum at 0.3, 1 and 2 rad, triple pendulum, serial_chain(5) falling from the horizontal, the two-squares
tutorial's two squares, each at rtol 1e-4, 1e-6, 1e-8, 1e-10). STALD_MISFIT: at the limit most fits of
serial_chain(1000) have misfits of 1.4 - 8 %; a 2 % test finds the limit later (0.7545 s instead of 0.727 s there: 2,590
steps; serial_chain(100) 1,348, serial_chain(10_000) 6,977), and a 10 % test caps the double pendulum at 1 rad and
rtol 1e-5 (284 -> 833 steps).
The limit is found only once the steps have collapsed onto it, and the run recovers slowly at order 2 from the
high-mode content grown meanwhile: serial_chain(10_000) over 10 s takes 10,249 steps (limit found at 1.2205 s;
10,953 with the 2 % test) against 1,401 with max_order=2 from the start. On long undamped chains give
``max_order=2``.
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
    NDOF,
    PARENT,
    QIDX,
    STATUS_MAX_STEPS,
    STATUS_NO_CONVERGENCE,
    STATUS_OK,
    STATUS_OUTPUT_FULL,
    STATUS_STEP_UNDERFLOW,
)
from ..timeloops import formulation
from ..timeloops.integrators import (
    _fatal,
    _left,
    _poll,
    _rms_norm,
    _starting_trial,
    _store,
    illinois_step,
    open_outputs,
    register_interpolant,
    state_stop_row,
    step_outputs,
    system_rhs,
)
from ..timeloops.newton import (
    HOOK_OPTIONS,
    accept_step,
    corrector_predict,
    corrector_residual,
    filtered_change,
    newton_factor,
    newton_update,
    newton_workspace,
)
from .implicit import effective_factor, effective_solve, loop_schur, newton_correction, newton_residual
from .loops import filtered_solve
from .system import RecursiveSystem, contact_matrix, contact_update
from .tree import inverse_dynamics, kinematics_pass, motion_column

njit = numba.njit(cache=True, error_model="numpy", _nrt=True)

MAX_ORDER = 5
NEWTON_MAXITER = 4
MIN_FACTOR = 0.2  # bounds on the step-size change of one rejection / order change
MAX_FACTOR = 10.0
# Newton with reused factors (CVODE, Hindmarsh et al. 2005): the contraction-rate estimate decays at most by
# CRATE_DOWN per iteration; stale factors whose rate exceeds SLOW_CONTRACTION are made again at the current iterate
CRATE_DOWN = 0.3
SLOW_CONTRACTION = 0.2
ROUNDOFF = 1000.0 * 2.220446049250313e-16  # relative round-off floor of a Newton correction (N bodies, loops)
EPS = 2.220446049250313e-16
RESCALE_BLOCK = 64  # columns of D re-sampled per block (``rescale_differences``): 64 x 7 floats stay in L1
# stability limit detection: the dominant root of three successive corrections (``_dominant_root``) counts as an
# unresolved oscillatory root at the stability boundary when |r| > STALD_GROWTH at an angle > STALD_ANGLE [rad per
# step] and it explains the corrections to STALD_MISFIT (relative RMS residual); corrections whose earlier two are
# within COLLINEAR (sin^2 of their angle) of collinear are a resolved smooth motion: no root is fitted
STALD_GROWTH = 0.9
STALD_ANGLE = 0.2
STALD_MISFIT = 0.05
STALD_RUNS = 3
COLLINEAR = 1e-2

# info array of a run (floats): Newton iterations, effective solves, and at a failure the step, Newton
# correction (scaled RMS) and max |residual| of the velocity rows [m/s or rad/s] of its last iteration
INFO_ITERATIONS = 0
INFO_SOLVES = 1
INFO_FAIL_STEP = 2
INFO_FAIL_CORRECTION = 3
INFO_FAIL_RESIDUAL = 4
INFO_FACTORIZATIONS = 5
INFO_ORDER_LIMITED_AT = 6
INFO_ORDER_LIMITED_ROOT = 7
INFO_ORDER_LIMITED_ANGLE = 8
INFO_SIZE = 9


@njit
def _rescale_matrix(order, factor, out):
    """R(factor) of Shampine & Reichelt into out[:order+1, :order+1]: R[i, j] = prod_{l=1..i} (l - 1 - factor j) / l
    (R[0, :] = 1; R[i, 0] = 0 for i >= 1)."""
    for j in range(order + 1):
        out[0, j] = 1.0
    for i in range(1, order + 1):
        for j in range(order + 1):
            out[i, j] = out[i - 1, j] * (i - 1 - factor * j) / i


@njit
def rescale_differences(D, order, factor, r_mat, u_mat, ru, tmp):
    """Re-sample D[:order+1] (backward differences at step h) at step factor * h, in place: D <- (R U)^T D.

    ``tmp`` (>= order + 1 floats) is scratch; the new rows are formed in blocks of tmp.size // (order + 1) columns
    (``integrate_bdf`` gives RESCALE_BLOCK columns of every order), row by row so that each inner loop runs along
    the rows of D and vectorises (column by column, with D's order + 1 rows n apart, this was 0.85 forward-dynamics
    evaluations of serial_chain(1e5)). Each entry is summed over i in the same order as before: the same bits.
    """
    _rescale_matrix(order, factor, r_mat)
    _rescale_matrix(order, 1.0, u_mat)
    for i in range(order + 1):
        for j in range(order + 1):
            acc = 0.0
            for m in range(order + 1):
                acc += r_mat[i, m] * u_mat[m, j]
            ru[i, j] = acc
    n = D.shape[1]
    rows = order + 1
    block = max(1, tmp.shape[0] // rows)
    for start in range(0, n, block):
        width = min(block, n - start)
        for j in range(rows):  # tmp[j] = sum_i ru[i, j] D[i] on this block, i ascending
            base = j * width
            for col in range(width):
                tmp[base + col] = 0.0
            for i in range(rows):
                coefficient = ru[i, j]
                for col in range(width):
                    tmp[base + col] += coefficient * D[i, start + col]
        for j in range(rows):
            base = j * width
            for col in range(width):
                D[j, start + col] = tmp[base + col]


@njit
def predict(D, order, gammas, atol, rtol, y_pred, psi, scale):
    """The predictor of a step: y_pred = sum_{j<=k} D[j], psi = (1 / gamma_k) sum_{j<=k} gamma_j D[j] and the
    error scale atol + rtol |y_pred| (module doc), k = order.

    Row by row along D (each loop vectorises; summed over the rows in the same order as entry by entry, so the
    same bits): entry by entry, with the order + 1 rows n apart, it was 0.4 forward-dynamics evaluations of
    serial_chain(1e5) per step."""
    n = D.shape[1]
    for j in range(n):
        y_pred[j] = 0.0
        psi[j] = 0.0
    for i in range(order + 1):
        g = gammas[i]  # gammas[0] = 0
        for j in range(n):
            y_pred[j] += D[i, j]
            psi[j] += g * D[i, j]
    g = gammas[order]
    for j in range(n):
        psi[j] = psi[j] / g
        scale[j] = atol + rtol * abs(y_pred[j])


@njit
def interpolate(D, order, t_new, h, t, out):
    """The BDF interpolating polynomial at t into out: y(t) = D[0] + sum_{j=1..k} D[j] prod_{m<j} (t - t_new + m h)
    / ((m + 1) h), exact at t_new - m h, m = 0..k."""
    n = D.shape[1]
    for col in range(n):
        out[col] = D[0, col]
    p = 1.0
    for j in range(1, order + 1):
        p *= (t - t_new + (j - 1) * h) / (j * h)
        for col in range(n):
            out[col] += p * D[j, col]


@njit
def _correction_fit(D, d, order, scale, a, b):
    """Fit of the last three corrections d_n, d_{n-1}, d_{n-2} of one step size and order (d_{n-1} = D[order+1],
    d_{n-2} = D[order+1] - D[order+2] before the step's update), in the error norm: d_n = a d_{n-1} + b d_{n-2}.

    With a = b = nan: the least-squares (a, b); else the given (a, b) (a fit of an earlier step, tested on this
    one). Returns (a, b, relative RMS residual); the residual is 1 when d_{n-1} and d_{n-2} are within COLLINEAR
    of collinear (a resolved smooth motion: no oscillatory root to fit) or d_n is zero.
    """
    g11 = 0.0
    g12 = 0.0
    g22 = 0.0
    r1 = 0.0
    r2 = 0.0
    dd = 0.0
    for j in range(d.shape[0]):
        w = 1.0 / scale[j]
        p1 = D[order + 1, j] * w
        p2 = (D[order + 1, j] - D[order + 2, j]) * w
        x = d[j] * w
        g11 += p1 * p1
        g12 += p1 * p2
        g22 += p2 * p2
        r1 += p1 * x
        r2 += p2 * x
        dd += x * x
    det = g11 * g22 - g12 * g12
    if not (det > COLLINEAR * g11 * g22) or not (dd > 0.0):
        return a, b, 1.0
    if math.isnan(a):
        a = (g22 * r1 - g12 * r2) / det
        b = (g11 * r2 - g12 * r1) / det
    residual = dd - 2.0 * (a * r1 + b * r2) + a * a * g11 + 2.0 * a * b * g12 + b * b * g22
    return a, b, math.sqrt(max(0.0, residual) / dd)


@njit
def _locate_event(events, events_key, index, t, t_new, D, order, h, g0, g1, ytmp, values):
    """Root of event ``index`` in [t, t_new] on the BDF interpolant, by the Illinois method; (status, time)."""
    lo = t
    hi = t_new
    g_lo = g0
    g_hi = g1
    side = 0
    s = t_new
    for _ in range(100):
        s = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        interpolate(D, order, t_new, h, s, ytmp)
        status, settled, lo, hi, g_lo, g_hi, side = illinois_step(events, events_key, index, s, s, ytmp, values, lo,
                                                                  hi, g_lo, g_hi, side)
        if status != STATUS_OK:
            return status, s
        if settled or hi - lo <= 4.0 * EPS * max(abs(t), abs(h)):
            break
    interpolate(D, order, t_new, h, s, ytmp)
    return STATUS_OK, s


# the interpolant of the step to t_new for the output bookkeeping of ``integrators`` (``step_outputs``):
# ``interpolate`` on the differences D of that step at its order; the output rows are the state
BDFDense = namedtuple("BDFDense", ["D", "order", "t_new"])


def _bdf_locate_root(dense, events, events_key, index, t, h, g0, g1, ytmp, values):
    status, t_event = _locate_event(events, events_key, index, t, dense.t_new, dense.D, dense.order, h, g0, g1, ytmp,
                                    values)
    return status, t_event, 1.0  # (no place in the step: the row at a terminal event is the state)


def _bdf_sample_row(dense, t, h, t_sample, ytmp):
    if t_sample == dense.t_new:
        copy_into(ytmp, dense.D[0], 0)
    else:
        interpolate(dense.D, dense.order, dense.t_new, h, t_sample, ytmp)
    return ytmp


register_interpolant(BDFDense, _bdf_locate_root, _bdf_sample_row, state_stop_row,
                     {"cache": True, "error_model": "numpy", "_nrt": True})


@njit
def _stiffness_product(body_int, ws, kb, j_stiff, x, omega_sub, out):
    """out = K x for the stiffness the Newton matrix keeps: T^T diag(kb) T x + j_stiff x
    (``recursive_mbd.integrate.implicit``).

    T x: the absolute rotations of the bodies (base to tip, the angular parts of the motion columns); T^T: the
    sums over each joint's subtree (tip to base). ``omega_sub`` (n, >= 2) is scratch.
    """
    n = body_int.shape[0]
    for i in range(n):
        p = body_int[i, PARENT]
        om = omega_sub[p, 0] if p >= 0 else 0.0
        k = body_int[i, QIDX]
        for col in range(body_int[i, NDOF]):
            om += motion_column(body_int, ws, i, col)[2] * x[k + col]
        omega_sub[i, 0] = om
        omega_sub[i, 1] = 0.0
    for i in range(n - 1, -1, -1):
        omega_sub[i, 1] += kb[i] * omega_sub[i, 0]
        k = body_int[i, QIDX]
        for col in range(body_int[i, NDOF]):
            out[k + col] = motion_column(body_int, ws, i, col)[2] * omega_sub[i, 1] + j_stiff[k + col] * x[k + col]
        p = body_int[i, PARENT]
        if p >= 0:
            omega_sub[p, 1] += omega_sub[i, 1]


@njit
def _newton_direction(system, newton, c, nf, res_v, res_q, with_q):
    """x (newton[16]) from S x = M r_v - c K r_q, S = M + c C + c^2 K; returns a status.

    The Newton direction of the velocity unknowns (r_q = 0: the q rows hold exactly) and, with ``with_q``, the
    velocity part of (I - c J)^-1 (r_q, r_v) (the filtered change of f of the starting step; its q part is
    r_q + c x). K r_q uses the
    gravity stiffness kb of the previous solve (a Newton iterate away).

    newton = (ia, uu, dinv, ub, pa, vel, fsub, kb, dmat, j_stiff, j_damp, lock, zero_gravity, zero_qd, full_r,
    m_r, x, gcol, rvec, blocks, contact_state): the effective solve's scratch, the joint springs' stiffness and
    damping per coordinate, the lock diagonal of the driven coordinates, and work vectors of nq; the contacts'
    blocks of S (nbodies, 3, 6), made by the caller (``contact_matrix``), and their state over a step (a copy
    of y's, N_CSTATE per row), or (0, 3, 6) and (0,) without contacts. The contacts' stiffness is in S, not in
    K r_q (a first step's estimate).
    """
    free = system[5]
    q = system[11]  # the iterate, loaded by the last system_rhs (drivers included)
    ws = system[14]
    j_stiff = newton[9]
    j_damp = newton[10]
    lock = newton[11]
    zero_qd = newton[13]
    full_r = newton[14]
    m_r = newton[15]
    x = newton[16]
    for k in range(full_r.shape[0]):
        full_r[k] = 0.0
    for j in range(nf):
        full_r[free[j]] = res_v[j]
    status = inverse_dynamics(system[0], system[1], newton[12], q, zero_qd, full_r, system[16][:0], ws, m_r)
    if status != STATUS_OK:
        return status
    if with_q:
        for j in range(nf):
            full_r[free[j]] = res_q[j]
        _stiffness_product(system[0], ws, newton[7], j_stiff, full_r, newton[5], x)
        for j in range(nf):
            m_r[free[j]] -= c * x[free[j]]
    for k in range(full_r.shape[0]):  # the joint diagonal: springs and dampers, locked drivers
        full_r[k] = c * c * j_stiff[k] + c * j_damp[k] + lock[k]
    # (the driven coordinates are locked by the diagonal above, so no driven mask: system[7][:0], empty)
    return effective_solve(system[0], system[1], system[2], q, zero_qd, system[7][:0], 1.0, c * c, full_r,
                           newton[19], m_r, ws,
                           newton[0], newton[1], newton[2], newton[17], newton[18], newton[3], newton[4], newton[5],
                           newton[6], newton[7], newton[8], x)


def _is_recursive(system):
    return isinstance(system, types.BaseNamedTuple) and system.instance_class is RecursiveSystem


@overload(newton_workspace, inline="always")
def _planar_newton_workspace(system, newton):
    if not _is_recursive(system):
        return None

    def impl(system, newton):
        nf = system[5].shape[0]
        loops = system[22]
        m = loops[3].shape[0]
        nb = system[0].shape[0]
        nq = system[11].shape[0]
        lam = np.zeros(m)
        for r in range(m):  # the multipliers of the start, the first Newton iterate's
            lam[r] = loops[12][r]
        # 0-2: lam, lam_start, mu; 3: newton; 4-14: the Newton matrix's factors (kept over the steps of one
        # c = h / gamma_k); 15-: the iteration's and the loops' scratch
        return (lam, np.zeros(m), np.zeros(m), newton,
                np.zeros((nb, 3, 3)), np.zeros((nb, 3, 6)), np.zeros((nb, 3, 3)), np.zeros((nb, 3, 3)),
                np.zeros((nb, 2)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 2)),
                np.zeros(nb), np.zeros((3, 3)),
                np.zeros(nq), np.zeros(nq), np.zeros(nq), np.zeros(nq), np.zeros((m, nf)), np.zeros((m, m)),
                np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m), np.zeros((m, m)), np.zeros(m), np.zeros(nf),
                np.zeros(nf), np.zeros(2), np.empty(nf))
    return impl


@overload(corrector_predict, jit_options=HOOK_OPTIONS)
def _planar_corrector_predict(system, work, c, y_pred, psi, d, y):
    if not _is_recursive(system):
        return None

    def impl(system, work, c, y_pred, psi, d, y):
        n = y.shape[0]
        nf = system[5].shape[0]
        # q eliminated: d_v = 0, d_q = c v_pred - psi_q (the q rows hold exactly from the start)
        for j in range(nf):
            d[nf + j] = 0.0
            d[j] = c * y_pred[nf + j] - psi[j]
        for j in range(2 * nf, n):
            d[j] = 0.0
        for j in range(n):
            y[j] = y_pred[j] + d[j]
        contact_state = work[3][20]  # the contacts' state of the step, for the Newton matrix (``newton_factor``)
        for j in range(contact_state.shape[0]):
            contact_state[j] = y[2 * nf + 2 + j]
    return impl


@overload(corrector_residual, jit_options=HOOK_OPTIONS)
def _planar_corrector_residual(inputs, key, system, work, t_new, c, psi, d, y):
    if not _is_recursive(system):
        return None

    def impl(inputs, key, system, work, t_new, c, psi, d, y):
        nf = system[5].shape[0]
        loops = system[22]
        m = loops[3].shape[0]
        lam = work[0]
        tau_need = work[16]
        phi_scaled = work[22]
        qdd = work[28]
        powers = work[29]
        residual = work[30]
        for j in range(nf):  # the iterate's accelerations: d_v + psi_v = c qdd
            qdd[j] = (psi[nf + j] + d[nf + j]) / c
        status = newton_residual(inputs, key, system, t_new, y, qdd, lam, tau_need, residual, powers)
        if status != STATUS_OK:
            return status, np.inf
        res_max = 0.0
        for j in range(nf):
            res_max = max(res_max, abs(residual[j]))
        d[2 * nf] = c * powers[0] - psi[2 * nf]  # the work rows, explicit given q and v
        d[2 * nf + 1] = c * powers[1] - psi[2 * nf + 1]
        for r in range(m):  # GGL: J v_new = 0 scaled so that its Jacobian in qdd is J (module doc)
            phi_scaled[r] = loops[4][r] / c
        return STATUS_OK, res_max
    return impl


@overload(newton_factor, jit_options=HOOK_OPTIONS)
def _planar_newton_factor(system, work, c):
    if not _is_recursive(system):
        return None

    def impl(system, work, c):
        body_int = system[0]
        body_real = system[1]
        driven = system[7]
        ws = system[14]
        loops = system[22]
        jac = loops[5]
        m = loops[3].shape[0]
        free = system[5]
        nf = free.shape[0]
        newton = work[3]
        j_stiff = newton[9]
        j_damp = newton[10]
        (ia, uu, dinv, gcol, rvec, ub, pa, vel, fsub, kb, dmat, j_diag) = work[4:16]
        xfull = work[17]
        resp = work[19]
        gram = work[20]
        gram_mu = work[25]
        for k in range(j_diag.shape[0]):
            j_diag[k] = c * c * j_stiff[k] + c * j_damp[k]
        kinematics_pass(body_int, body_real, system[11], system[12], ws, np.bool_(True))
        # the contacts' blocks at the iterate of the last residual: its centre-of-mass kinematics and the
        # orientations of every body from the pass above (the residual's pass leaves them only in the rows of bodies
        # with several children)
        contact_matrix(system[23], body_int, ws, system[15], newton[20], 0, c * c, c, newton[19])
        status = effective_factor(body_int, body_real, system[2], ws, driven, 1.0, c * c, j_diag, newton[19],
                                  ia, uu, dinv, gcol, rvec, fsub, kb, dmat)
        if status != STATUS_OK:
            return status
        if m > 0:
            loop_schur(body_int, driven, uu, dinv, gcol, rvec, jac, free, ub, pa, vel, xfull, resp, gram)
            for r in range(m):  # J_f J_f^T, the matrix of GGL's mu
                for r2 in range(m):
                    g = 0.0
                    for j in range(nf):
                        g += jac[r, free[j]] * jac[r2, free[j]]
                    gram_mu[r, r2] = g
        return STATUS_OK
    return impl


@overload(newton_update, jit_options=HOOK_OPTIONS)
def _planar_newton_update(system, work, c, y_pred, psi, d, y, scale):
    if not _is_recursive(system):
        return None

    def impl(system, work, c, y_pred, psi, d, y, scale):
        body_int = system[0]
        driven = system[7]
        loops = system[22]
        jac = loops[5]
        m = loops[3].shape[0]
        rcond = loops[15][4]
        free = system[5]
        nf = free.shape[0]
        n = y.shape[0]
        lam = work[0]
        mu = work[2]
        (uu, dinv, gcol, rvec, ub, pa, vel) = work[5:12]
        (xfull, rhs_full, resp, gram, work_m, phi_scaled, dlam, dmu, gram_mu, rhs_mu, dx) = work[17:28]
        residual = work[30]
        ok = newton_correction(body_int, driven, uu, dinv, gcol, rvec, free, residual, phi_scaled, jac,
                               resp, gram, rcond, ub, pa, vel, xfull, rhs_full, dx, dlam, work_m)
        if m > 0:  # GGL: (J J^T) dmu = c J dx - phi / c
            for r in range(m):
                g = -loops[3][r] / c
                for j in range(nf):
                    g += c * jac[r, free[j]] * dx[j]
                rhs_mu[r] = g
            if filtered_solve(gram_mu, rhs_mu, rcond, dmu) < 0:
                ok = False
            for r in range(m):
                mu[r] -= dmu[r]
        acc = 0.0
        for j in range(nf):  # qdd -= dx, mu -= dmu: d_v -= c dx, d_q -= c^2 dx - c J^T dmu
            change_q = -c * c * dx[j]
            for r in range(m):
                change_q += c * jac[r, free[j]] * dmu[r]
            d[nf + j] -= c * dx[j]
            d[j] += change_q
            acc += (change_q / scale[j]) ** 2 + (c * dx[j] / scale[nf + j]) ** 2
        for r in range(m):
            lam[r] -= dlam[r]
        for j in range(n):
            y[j] = y_pred[j] + d[j]
        return ok, acc
    return impl


@overload(filtered_change, inline="always")
def _planar_filtered_change(system, work, h, y0, err):
    if not _is_recursive(system):
        return None

    def impl(system, work, h, y0, err):
        free = system[5]
        nf = free.shape[0]
        newton = work[3]
        x = newton[16]
        # the contacts' blocks at the state of the last evaluation (system_rhs), whose contact state is y0's
        contact_matrix(system[23], system[0], system[14], system[15], y0, 2 * nf + 2, h * h, h, newton[19])
        status = _newton_direction(system, newton, h, nf, err[nf:2 * nf], err[:nf], True)
        if status == STATUS_OK:
            for j in range(nf):
                err[j] += h * x[free[j]]
                err[nf + j] = x[free[j]]
        return status
    return impl


@overload(accept_step, jit_options=HOOK_OPTIONS)
def _planar_accept_step(system, work, y_pred, d, y):
    if not _is_recursive(system):
        return None
    return lambda system, work, y_pred, d, y: STATUS_OK


def _update_contacts(inputs, key, system, t, y):
    """The contacts' state in y (``system.contact_update``) after an accepted step and its outputs; a no-op for
    a system without contacts. A spatial system's is registered with its Newton pieces (``spatial.bdf``)."""


@overload(_update_contacts, jit_options=HOOK_OPTIONS)
def _update_contacts_impl(inputs, key, system, t, y):
    if _is_recursive(system):
        return lambda inputs, key, system, t, y: contact_update(inputs, key, system, t, y)  # noqa: PLW0108
    return None


@njit
def integrate_bdf(inputs, key, system, newton, y0, t0, t_end, rtol, atol, first_step, max_step, max_steps, max_order,
                  t_eval,
                  every, t_out, y_out, output_budget, events, events_key, directions, terminal, ev_t, ev_y, monitor,
                  monitor_key, control, info):
    """BDF orders 1-5 from t0 to t_end on the state y = (q_free, qd_free, W_dissipated, W_applied) of a planar
    system (module doc), or y = (q_free, v_free, W_dissipated, W_applied) of a spatial tree (``spatial.bdf``; the
    driven coordinates outside y in both, the drivers giving them at each time): the
    Newton pieces are the system's (the hooks of ``timeloops.newton``), the rest is shared.

    Output as ``integrators.integrate_adaptive``: at the times in ``t_eval`` by the interpolant when non-empty,
    else every ``every``-th accepted step; t0 and t_end always; events located on the interpolant. The buffers grow
    to at most ``output_budget`` floats in all (``integrators._store``): a sample or event that does not fit ends
    the run with STATUS_OUTPUT_FULL, t_fail its time. ``info``
    (INFO_SIZE,) receives the Newton statistics and, at a Newton failure at the smallest step, its size,
    correction and residual. Returns (status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t,
    ev_y); STATUS_NO_CONVERGENCE when Newton fails at a step below 10 eps |t|.
    """
    n = y0.shape[0]
    D = np.zeros((MAX_ORDER + 3, n))
    y_pred = np.empty(n)
    psi = np.empty(n)
    d = np.empty(n)
    y = np.empty(n)
    f = np.empty(n)
    scale = np.empty(n)
    err = np.empty(n)
    ytmp = np.empty(n)
    r_mat = np.empty((MAX_ORDER + 2, MAX_ORDER + 2))
    u_mat = np.empty((MAX_ORDER + 2, MAX_ORDER + 2))
    ru = np.empty((MAX_ORDER + 2, MAX_ORDER + 2))
    tmp = np.empty((MAX_ORDER + 2) * RESCALE_BLOCK)
    gammas = np.zeros(MAX_ORDER + 2)
    for k in range(1, MAX_ORDER + 2):
        gammas[k] = gammas[k - 1] + 1.0 / k
    factored_c = -1.0
    fresh = False
    refactor = False
    crate = 1.0
    rate_known = False
    newton_tol = max(10.0 * EPS / rtol, min(0.03, math.sqrt(rtol)))
    for k in range(INFO_SIZE):
        info[k] = 0.0
    info[INFO_ORDER_LIMITED_AT] = np.nan
    order_cap = max_order
    fit_step = -1  # the step whose corrections were last fitted (stability limit detection), and the fit
    fit_a = 0.0
    fit_b = 0.0
    run_root = 0.0  # |r| and angle of an unresolved root found in this run of equal steps (0: none)
    run_angle = 0.0
    stald_runs = 0  # runs of equal steps in a row with one

    t = t0
    nfev = 0
    nsteps = 0
    nrejected = 0
    count = 0
    nev = np.int64(0)  # int64, not a literal: step_outputs compiles once
    use_eval = t_eval.shape[0] > 0
    status, t_fail, count, next_eval, t_out, y_out, ev = open_outputs(t_out, y_out, t_eval, t0, y0, y0, events,
                                                                      events_key, directions, ev_t, ev_y,
                                                                      output_budget)
    if status != STATUS_OK:
        return status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y

    status = system_rhs(inputs, key, system, t, y0, f)
    nfev += 1
    if status != STATUS_OK:
        return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
    # the Newton scratch (after the first evaluation: the loops' multipliers of the start, the first iterate's)
    work = newton_workspace(system, newton)
    lam = work[0]
    lam_start = work[1]
    mu = work[2]
    m = lam.shape[0]
    # the RMS norms over the integrated entries of y only (the contacts' state after them has no error: it changes
    # between steps), as ``integrators.integrate_adaptive``'s; 1 without contacts
    n_int = formulation.integrated_size(system, n)
    norm_factor = math.sqrt(n / n_int)
    span = t_end - t0
    h = first_step
    if h <= 0.0:  # Hairer's starting step for a first-order method (as integrators.integrate_adaptive)
        h0, d1 = _starting_trial(y0, f, atol, rtol, span, max_step, scale, ytmp)
        status = system_rhs(inputs, key, system, t + h0, ytmp, err)
        nfev += 1
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        for j in range(n):
            err[j] = (err[j] - f[j]) / h0
        # the change of f, filtered by (I - h0 J)^-1 (Shampine 1980; Hairer & Wanner IV.8 for Radau): a stiff
        # component that the implicit step damps does not set the first step
        filtered_change(system, work, h0, y0, err)
        d2 = norm_factor * _rms_norm(err, scale)
        dmax = max(d1, d2)
        h1 = max(1e-6, h0 * 1e-3) if dmax <= 1e-15 else math.sqrt(0.01 / dmax)
        h = min(100.0 * h0, h1)
    h = min(h, max_step, span)
    order = 1
    n_equal_steps = 0
    for j in range(n):
        D[0, j] = y0[j]
        D[1, j] = h * f[j]

    while t < t_end:
        if nsteps + nrejected >= max_steps:
            return STATUS_MAX_STEPS, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        status = _poll(monitor, monitor_key, control, t, D[0], nfev)
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        min_step = 10.0 * EPS * max(abs(t), 1e-300)
        if h > max_step:
            rescale_differences(D, order, max_step / h, r_mat, u_mat, ru, tmp)
            h = max_step
            n_equal_steps = 0
        elif h < min_step:
            rescale_differences(D, order, min_step / h, r_mat, u_mat, ru, tmp)
            h = min_step
            n_equal_steps = 0
        newton_failed = False
        accepted = False
        t_new = t + h
        while not accepted:
            if h < min_step:
                status = STATUS_NO_CONVERGENCE if newton_failed else STATUS_STEP_UNDERFLOW
                return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
            t_new = t + h
            if t_new >= t_end:  # land on t_end
                t_new = t_end
                rescale_differences(D, order, (t_new - t) / h, r_mat, u_mat, ru, tmp)
                n_equal_steps = 0
                h = t_new - t
            if nsteps + nrejected >= max_steps:
                return STATUS_MAX_STEPS, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
            c = h / gammas[order]
            predict(D, order, gammas, atol, rtol, y_pred, psi, scale)
            # q eliminated: d_v = 0, the q rows held exactly from the start
            corrector_predict(system, work, c, y_pred, psi, d, y)
            for r in range(m):
                lam_start[r] = lam[r]
            converged = False
            correction = np.inf
            res_max = np.inf
            iterations = 0
            # attempt 0 reuses the factors of earlier steps (same c) while Newton contracts; attempt 1, only when
            # that failed with stale factors, starts again from the predictor with factors of this step's iterate
            for attempt in range(2):
                if attempt == 1:
                    if fresh:
                        break
                    factored_c = -1.0
                    corrector_predict(system, work, c, y_pred, psi, d, y)
                    for r in range(m):
                        lam[r] = lam_start[r]
                for r in range(m):  # GGL's multiplier of the q rows: zero at the predictor
                    mu[r] = 0.0
                fresh = False
                previous = np.inf
                correction = np.inf
                for iteration in range(NEWTON_MAXITER):
                    status = _poll(monitor, monitor_key, control, t, D[0], nfev)
                    if status != STATUS_OK:
                        return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
                    status, res_new = corrector_residual(inputs, key, system, work, t_new, c, psi, d, y)
                    nfev += 1
                    if status != STATUS_OK:
                        if _fatal(status):
                            return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
                        correction = np.inf
                        break  # a non-finite iterate: the iteration diverged
                    res_max = res_new
                    if factored_c != c or refactor:
                        status = newton_factor(system, work, c)
                        if status != STATUS_OK:
                            info[INFO_FAIL_STEP] = h
                            info[INFO_FAIL_RESIDUAL] = res_max
                            return status, t_new, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
                        factored_c = c
                        fresh = True
                        refactor = False
                        crate = 1.0
                        rate_known = False
                        info[INFO_FACTORIZATIONS] += 1.0
                    ok, acc = newton_update(system, work, c, y_pred, psi, d, y, scale)
                    iterations += 1
                    info[INFO_SOLVES] += 1.0
                    correction = math.sqrt(acc / n_int)
                    if not (ok and math.isfinite(correction)):
                        correction = np.inf
                        break
                    # with factors of this iterate, stalled at the round-off of the residuals (sums over the
                    # bodies and loops; 1000 eps relative, far below the error tolerance): more cannot help. Tested
                    # before the rate: at round-off the rate is noise, >= 1 as often as not (a redundant loop's
                    # rows at rtol 1e-10 failed such steps down to h ~ 1e-15 s)
                    if fresh and iteration > 0 and correction > 0.5 * previous and correction <= ROUNDOFF / rtol:
                        converged = True
                        break
                    # CVODE's convergence test: the contraction rate carried over the steps that share the factors
                    if iteration > 0:
                        rate = correction / previous
                        crate = max(CRATE_DOWN * crate, rate)
                        rate_known = True
                        # scipy's test: no contraction, or not within the iterations left (before the convergence
                        # test, unlike CVODE: at a tiny step every correction is tiny, also where the equations have
                        # no solution, and only the rate tells)
                        if rate >= 1.0 or rate ** (NEWTON_MAXITER - iteration) / (1.0 - rate) * correction > \
                                newton_tol:
                            if not fresh:
                                refactor = True
                            break
                    # (a first iteration converges only on a rate measured with these factors)
                    if rate_known and correction * min(1.0, crate) <= newton_tol:
                        converged = True
                        break
                    if not fresh and iteration > 0 and crate > SLOW_CONTRACTION:
                        refactor = True  # stale factors contract slowly: make them at the next iterate
                    previous = correction
                if converged:
                    break
            info[INFO_ITERATIONS] += iterations
            if not converged:
                # the factors are of this step's iterate already: only a smaller step helps
                newton_failed = True
                nrejected += 1
                info[INFO_FAIL_STEP] = h
                info[INFO_FAIL_CORRECTION] = correction
                info[INFO_FAIL_RESIDUAL] = res_max
                for r in range(m):
                    lam[r] = lam_start[r]
                rescale_differences(D, order, 0.5, r_mat, u_mat, ru, tmp)
                h *= 0.5
                n_equal_steps = 0
                continue
            safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + iterations)
            for j in range(n):
                scale[j] = atol + rtol * abs(y[j])
                err[j] = d[j] / (order + 1)
            error_norm = norm_factor * _rms_norm(err, scale)
            if error_norm > 1.0:
                nrejected += 1
                for r in range(m):
                    lam[r] = lam_start[r]
                factor = max(MIN_FACTOR, safety * error_norm ** (-1.0 / (order + 1)))
                rescale_differences(D, order, factor, r_mat, u_mat, ru, tmp)
                h *= factor
                n_equal_steps = 0
                continue
            status = accept_step(system, work, y_pred, d, y)
            if status != STATUS_OK:
                return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
            accepted = True

        nsteps += 1
        n_equal_steps += 1
        if order >= 3 and n_equal_steps >= 3:
            # stability limit detection (after CVODE's STALD, module doc): the pair of roots r^2 = a r + b fitted
            # to the last three corrections predicts the next correction, and it is an oscillatory root near the
            # unit circle that the step does not resolve: the step is held at the stability boundary of BDF3-5 on
            # a lightly damped mode. BDF2 (A-stable) from here on.
            if fit_step == nsteps - 1:  # the fit of the previous step, tested on this one
                a, b, misfit = _correction_fit(D, d, order, scale, fit_a, fit_b)
                disc = a * a + 4.0 * b
                if misfit < STALD_MISFIT and disc < 0.0 and -b > STALD_GROWTH ** 2 and \
                        math.atan2(math.sqrt(-disc), a) > STALD_ANGLE:
                    run_root = math.sqrt(-b)
                    run_angle = math.atan2(math.sqrt(-disc), a)
            fit_a, fit_b, misfit = _correction_fit(D, d, order, scale, np.nan, np.nan)
            fit_step = nsteps if misfit < STALD_MISFIT else -1
        for j in range(n):  # the new differences: nabla^{k+1} y_new = d, nabla^{k+2} y_new = d - (old nabla^{k+1})
            D[order + 2, j] = d[j] - D[order + 1, j]
            D[order + 1, j] = d[j]
        for i in range(order, -1, -1):
            for j in range(n):
                D[i, j] += D[i + 1, j]
        # outputs on the interpolant of this step (t, t_new]
        status, t_fail, _, count, next_eval, nev, t_out, y_out, ev_t, ev_y = step_outputs(
            BDFDense(D, order, t_new), t, h, t_new, D[0], events, events_key, directions, terminal, ev, ytmp, t_eval,
            next_eval, t_out, y_out, count, ev_t, ev_y, nev, output_budget)
        if status != STATUS_OK:  # a failed event function, a full buffer, a terminal event
            return status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        t = t_new
        # the contacts' state after the step (their entries of D[1:] stay zero: a constant between steps)
        status = _update_contacts(inputs, key, system, t, D[0])
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
        if not use_eval and (nsteps % every == 0 or t >= t_end):
            stored, t_out, y_out = _store(t_out, y_out, count, t, D[0], _left(output_budget, ev_t, ev_y))
            if not stored:
                return STATUS_OUTPUT_FULL, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
            count += 1
        if n_equal_steps < order + 1:
            continue
        # the end of a run of k + 1 equal steps: the stability limit is taken as found when STALD_RUNS runs in a
        # row had an unresolved root; BDF2 on the last three points of D from here on
        stald_runs = stald_runs + 1 if run_root > 0.0 else 0
        if stald_runs >= STALD_RUNS and order_cap > 2:
            order_cap = 2
            info[INFO_ORDER_LIMITED_AT] = t
            info[INFO_ORDER_LIMITED_ROOT] = run_root
            info[INFO_ORDER_LIMITED_ANGLE] = run_angle
        run_root = 0.0
        if order > order_cap:
            order = order_cap
            n_equal_steps = 0
            continue
        # order change (Shampine & Reichelt): the step factors that orders k - 1, k, k + 1 allow
        for j in range(n):
            scale[j] = atol + rtol * abs(D[0, j])
        best = safety * error_norm ** (-1.0 / (order + 1)) if error_norm > 0.0 else np.inf
        delta_order = 0
        if order > 1:
            for j in range(n):
                err[j] = D[order, j] / order
            norm_m = norm_factor * _rms_norm(err, scale)
            factor_m = safety * norm_m ** (-1.0 / order) if norm_m > 0.0 else np.inf
            if factor_m > best:
                best = factor_m
                delta_order = -1
        if order < order_cap:
            for j in range(n):
                err[j] = D[order + 2, j] / (order + 2)
            norm_p = norm_factor * _rms_norm(err, scale)
            factor_p = safety * norm_p ** (-1.0 / (order + 2)) if norm_p > 0.0 else np.inf
            if factor_p > best:
                best = factor_p
                delta_order = 1
        order = min(order + delta_order, order_cap)
        factor = min(MAX_FACTOR, best)
        rescale_differences(D, order, factor, r_mat, u_mat, ru, tmp)
        h *= factor
        n_equal_steps = 0
    return STATUS_OK, t, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y
