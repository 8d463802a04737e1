"""Implicit integration in joint coordinates with an O(N) Newton matrix (issue 15, first part).

Newton matrix
-------------
An implicit step for M(q) qdd = Q(q, qd, t) (Q = tau + Q_elements - h) with unknown accelerations, where q and qd
of the new step depend linearly on them (dq = c_stiff dqdd, dqd = c_damp dqdd), has the Newton matrix

    S = c_mass M + c_damp C + c_stiff K,        C = -dQ/dqd,   K = -dQ/dq   (+ the term d(M qdd)/dq, lagged).

``solve_effective`` solves S_doc x = rhs, where S_doc keeps these terms exactly and lags (omits) the rest:

* M: exact, the joint-space mass matrix.
* K, gravity: exact for trees of revolute and fixed joints. Body positions are c_i = sum over the path from
  the ground of R(theta_b) w_b (w_b: the body-frame vectors from joint to centre of mass and from centre of mass to
  the next joint). The gravity potential V = -sum m_i g . c_i is then sum_b V_b(theta_b), a function of each
  absolute angle alone, so d^2V/dtheta^2 is diagonal with

      K_b = F_b . e_b + sum over children k of b of F_k . d_k

  (F_k = sum of m_i g over the subtree of k, its weight; e_b = c_b - joint point of b; d_k = joint point of k - c_b:
  the subtree of b hangs on e_b, that of k on d_k; e.g. a hanging pendulum has K = m g L > 0). With theta = T q
  (T: the rotation rows of the joint Jacobian J),
  K_gravity = T^T diag(K_b) T = J^T diag(0, 0, K_b) J. Prismatic and planar joints: their slides add the
  rotation-slide cross terms F_k . R'(theta_b) a_k, which are omitted (lagged).
* Joint spring-dampers (tau = -k (q - rest) - c qdot): k enters K and c enters C on their joint's diagonal, exact.
* Omitted (lagged, their effect is on the Newton convergence rate only, never on the converged step): the
  velocity-product terms (Coriolis, centrifugal) in C and K, d(M qdd)/dq, spring-dampers between bodies, point
  forces and torques, and tau.

So S_doc = J^T diag(A_i) J + diag(c_stiff k_j + c_damp c_j) with the modified body inertias
A_i = diag(c_mass m_i, c_mass m_i, c_mass J_i + c_stiff K_i): the form of a joint-space mass matrix with extra
joint diagonal terms (like rotor inertias), which the articulated-body recursion (seed 003 eq. 3.23) solves in
O(N) time and memory without forming S (``_kernels.implicit.effective_solve``).

Generalised-alpha
-----------------
Chung & Hulbert (1993) in the form of Arnold & Bruls (2007), fixed step h, with rho_inf in [0, 1]:

    alpha_m = (2 rho - 1) / (rho + 1), alpha_f = rho / (rho + 1), gamma = 1/2 + alpha_f - alpha_m,
    beta = (gamma + 1/2)^2 / 4,
    q+   = q + h qd + h^2 (1/2 - beta) a + h^2 beta a+,       qd+ = qd + h (1 - gamma) a + h gamma a+,
    (1 - alpha_m) a+ + alpha_m a = (1 - alpha_f) qdd+ + alpha_f qdd,      M(q+) qdd+ = Q(q+, qd+, t+).

Unknown qdd+: dq+/dqdd+ = h^2 beta (1 - alpha_f) / (1 - alpha_m) = c_stiff, dqd+/dqdd+ = h gamma (1 - alpha_f) /
(1 - alpha_m) = c_damp, c_mass = 1. The residual M qdd+ - Q is one inverse-dynamics pass (O(N)); each Newton
iteration is one residual and one ``solve_effective``. Second order for every rho_inf; rho_inf = 1 is the
trapezoidal (energy-conserving on linear systems) rule, rho_inf = 0 annihilates the highest frequencies in one
step. The time loop is a Python loop around the O(N) compiled kernels.
"""

import numpy as np

from ._kernels import implicit as kernels
from ._kernels import layout as L
from .dynamics import as_vector, raise_status, workspace
from .errors import ModelError, SimulationError, StateError

_ROUNDOFF = 16.0 * np.finfo(float).eps
_STALL = 100.0  # a Newton correction below _STALL * newton_tol that stops contracting is the round-off floor


class _Scratch:
    """The solve's scratch arrays of one model (n = nbodies), allocated once."""

    def __init__(self, model):
        n = model.nbodies
        self.key = (id(model.body_int), n, model.nq)
        self.ia = np.zeros((n, 3, 3))
        self.uu = np.zeros((n, 3, 3))
        self.dinv = np.zeros((n, 3, 3))
        self.ub = np.zeros((n, 3))
        self.pa = np.zeros((n, 3))
        self.vel = np.zeros((n, 3))
        self.fsub = np.zeros((n, 2))
        self.kb = np.zeros(n)
        self.dmat = np.zeros((3, 3))
        self.j_stiff, self.j_damp = joint_spring_diagonals(model.body_int, model.elem_int, model.elem_real,
                                                           model.nq)


def joint_spring_diagonals(body_int, elem_int, elem_real, nq):
    """(stiffness, damping), each shape (nq,): the joint spring-dampers' k and c summed on their coordinates."""
    j_stiff = np.zeros(nq)
    j_damp = np.zeros(nq)
    for e in range(elem_int.shape[0]):
        if elem_int[e, L.ETYPE] == L.JOINT_SPRING_DAMPER:
            k = body_int[elem_int[e, L.EBODY_A], L.QIDX]
            j_stiff[k] += elem_real[e, L.EK]
            j_damp[k] += elem_real[e, L.EC]
    return j_stiff, j_damp


def _scratch(model):
    ws = workspace(model)
    scratch = getattr(ws, "implicit_scratch", None)
    if scratch is None or scratch.key != (id(model.body_int), model.nbodies, model.nq):
        scratch = ws.implicit_scratch = _Scratch(model)
    return ws, scratch


def _coefficient(value, what):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number, got {type(value).__name__}") from None
    if not np.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value}")
    return value


def solve_effective(model, q, qd, c_mass, c_damp, c_stiff, rhs, *, t=0.0, out=None):
    """x from (c_mass M + c_damp C + c_stiff K) x = rhs in O(N) time and memory, never forming an nq x nq matrix.

    Parameters
    ----------
    model : Model
        A tree (closed loops are not supported here yet: ModelError).
    q, qd : array_like, shape (nq,)
        The state where M, C and K are taken (qd only enters lagged terms and is accepted for the interface).
    c_mass, c_damp, c_stiff : float
        Coefficients [1], [s], [s^2] (an implicit step's dqdd/dqdd, dqd/dqdd, dq/dqdd).
    rhs : array_like, shape (nq,)
    t : float
        Time (unused: the time-varying loads are lagged).
    out : ndarray (nq,), optional
        Where to write x.

    Returns
    -------
    x : ndarray, shape (nq,)

    The matrix is the one documented in ``recursive_mbd.implicit``: M exact; K the gravity geometric stiffness
    T^T diag(K_b) T (exact for revolute/fixed joints, slide-rotation cross terms of prismatic/planar joints
    omitted) plus the joint springs' stiffness; C the joint dampers' damping; velocity-product terms and elements
    between bodies omitted. Raises ModelError naming the body whose joint block is singular.
    """
    ws, scratch = _scratch(model)
    if model.nloops:
        raise ModelError("solve_effective: models with closed loops are not supported yet (trees only)")
    q = as_vector(model, q, "q")
    as_vector(model, qd, "qd")
    rhs = as_vector(model, rhs, "rhs")
    c_mass = _coefficient(c_mass, "c_mass")
    c_damp = _coefficient(c_damp, "c_damp")
    c_stiff = _coefficient(c_stiff, "c_stiff")
    if out is None:
        out = np.empty(model.nq)
    elif not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (model.nq,)
              and out.flags.c_contiguous and out.flags.writeable):
        raise TypeError(f"out must be a writeable C-contiguous float64 array of shape ({model.nq},)")
    j_diag = c_stiff * scratch.j_stiff + c_damp * scratch.j_damp
    status = kernels.effective_solve(model.body_int, model.body_real, model.gravity, q, ws.zeros, c_mass, c_stiff,
                                     j_diag, rhs, ws.ws, scratch.ia, scratch.uu, scratch.dinv, scratch.ub,
                                     scratch.pa, scratch.vel, scratch.fsub, scratch.kb, scratch.dmat, out)
    if status:
        kind, index = L.decode_status(status)
        if kind == L.STATUS_SINGULAR:
            raise ModelError(f"solve_effective: the effective matrix is singular at the joint of body "
                             f"{model.body_names[index]!r} (index {index}) for c_mass = {c_mass:g}, "
                             f"c_damp = {c_damp:g}, c_stiff = {c_stiff:g}")
        raise_status(model, status, ("q", "qd", "rhs"))
    return out


def gravity_stiffness(model, q):
    """The per-body gravity geometric stiffness K_b [N m/rad] (on each body's absolute angle), shape (nbodies,)."""
    ws, scratch = _scratch(model)
    q = as_vector(model, q, "q")
    from ._kernels import tree  # noqa: PLC0415

    status = tree.check_finite(q, ws.zeros, ws.zeros)
    if status:
        raise_status(model, status)
    tree.kinematics_pass(model.body_int, model.body_real, q, ws.zeros, ws.ws, True)
    kernels.geometric_stiffness(model.body_int, model.body_real, model.gravity, ws.ws, scratch.fsub, scratch.kb)
    return scratch.kb.copy()


def generalized_alpha_coefficients(rho_inf):
    """(alpha_m, alpha_f, gamma, beta) of the Chung-Hulbert scheme for spectral radius rho_inf in [0, 1]."""
    rho = float(rho_inf)
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho_inf must be in [0, 1], got {rho_inf}")
    alpha_m = (2.0 * rho - 1.0) / (rho + 1.0)
    alpha_f = rho / (rho + 1.0)
    gamma = 0.5 + alpha_f - alpha_m
    beta = 0.25 * (gamma + 0.5) ** 2
    return alpha_m, alpha_f, gamma, beta


def simulate_generalized_alpha(model, q0, qd0, t0, t_end, dt, *, every=1, tau=None, rho_inf=0.9,
                               newton_tol=1e-12, max_newton=20, max_steps=10_000_000):
    """Generalised-alpha run of a tree model (called by ``rm.simulate(method="generalized_alpha")``).

    Fixed step ``dt`` (the last one shortened to land on t_end); Newton on the new accelerations with the matrix
    of ``solve_effective`` (c_mass = 1, c_damp = h gamma (1 - alpha_f) / (1 - alpha_m), c_stiff = h^2 beta
    (1 - alpha_f) / (1 - alpha_m)), converged when the position correction c_stiff max|dqdd| <= ``newton_tol``
    [rad or m] plus the round-off of the position update (16 eps max(|q + h qd + ...|, |h^2 beta a+|)), or when a
    correction below 100 ``newton_tol`` no longer contracts (the round-off floor of the residual on long chains).
    ``tau``: None or a constant (nq,) array. The work terms are integrated by the trapezoidal rule (second
    order, like the scheme). The result has ``newton_iterations`` (total) besides the usual fields;
    ``nfev`` counts residual (inverse-dynamics) evaluations. A step whose Newton iteration does not
    converge in ``max_newton`` iterations raises SimulationError with the samples so far.
    """
    from .integrate import SimulationResult, check_time_span, fixed_step_count  # noqa: PLC0415

    workspace(model)
    if model.nloops:
        raise ModelError("method 'generalized_alpha' supports trees only (no closed loops) in this version")
    if model.nq == 0:
        raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
    alpha_m, alpha_f, gamma, beta = generalized_alpha_coefficients(rho_inf)
    newton_tol = float(newton_tol)
    if not (newton_tol > 0.0 and np.isfinite(newton_tol)):
        raise ValueError(f"newton_tol must be finite and > 0, got {newton_tol}")
    max_newton = int(max_newton)
    if max_newton < 1:
        raise ValueError(f"max_newton must be >= 1, got {max_newton}")
    t0, t_end = check_time_span(t0, t_end)
    dt = float(dt)
    if not (dt > 0.0 and np.isfinite(dt)):
        raise ValueError(f"dt must be finite and > 0, got {dt}")
    nsteps = fixed_step_count(t0, t_end, dt, max_steps)
    every = int(every)
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    nq = model.nq
    if tau is None:
        tau = np.zeros(nq)
    elif callable(tau):
        raise TypeError("method 'generalized_alpha' takes a constant tau (an array of nq numbers) in this version")
    else:
        tau = as_vector(model, tau, "tau").copy()
        if not np.all(np.isfinite(tau)):
            raise StateError(f"tau[{int(np.flatnonzero(~np.isfinite(tau))[0])}] is not finite")
    q = as_vector(model, q0, "q0").copy()
    qd = as_vector(model, qd0, "qd0").copy()
    from .dynamics import element_forces, forward_dynamics, inverse_dynamics  # noqa: PLC0415

    has_elements = model.elem_int.shape[0] > 0
    qdd = forward_dynamics(model, q, qd, tau, t=t0).copy()
    acc = qdd.copy()  # the algorithmic acceleration a
    nout = nsteps // every + 2
    ts = np.empty(nout)
    qs = np.empty((nout, nq))
    qds = np.empty((nout, nq))
    work = np.zeros((nout, 2))
    ts[0], qs[0], qds[0] = t0, q, qd
    stored = 1
    dissipated = applied = 0.0
    power = None
    if has_elements:
        loads = element_forces(model, q, qd, t0)
        power = (loads["dissipation"], loads["power"])
    nfev = 1
    iterations = 0
    t = t0
    x = np.empty(nq)
    for step in range(1, nsteps + 1):
        t_new = t_end if step == nsteps else t0 + step * dt
        h = t_new - t
        c_damp = h * gamma * (1.0 - alpha_f) / (1.0 - alpha_m)
        c_stiff = h * h * beta * (1.0 - alpha_f) / (1.0 - alpha_m)
        q_pred = q + h * qd + h * h * (0.5 - beta) * acc
        qd_pred = qd + h * (1.0 - gamma) * acc
        qdd_new = qdd.copy()
        converged = False
        previous = np.inf
        for _ in range(max_newton):
            acc_new = ((1.0 - alpha_f) * qdd_new + alpha_f * qdd - alpha_m * acc) / (1.0 - alpha_m)
            q_new = q_pred + h * h * beta * acc_new
            qd_new = qd_pred + h * gamma * acc_new
            try:
                residual = inverse_dynamics(model, q_new, qd_new, qdd_new, t=t_new) - tau
                nfev += 1
                solve_effective(model, q_new, qd_new, 1.0, c_damp, c_stiff, residual, out=x)
            except (ValueError, ArithmeticError) as err:
                raise _failure(model, f"generalized_alpha: the Newton iteration failed at t = {t_new:.9g} s: "
                                      f"{err}", t_new, ts, qs, qds, work, stored, nfev, step - 1,
                               iterations) from err
            iterations += 1
            qdd_new -= x
            correction = c_stiff * float(np.max(np.abs(x)))
            if not np.isfinite(correction):
                break
            # floor: the round-off of q_pred + h^2 beta a+ (two large terms that cancel when h omega >> 1)
            floor = _ROUNDOFF * max(float(np.max(np.abs(q_pred))), h * h * beta * float(np.max(np.abs(acc_new))))
            # converged; or stalled at the round-off of the residual (sums over up to N bodies) just above the
            # tolerance: the correction no longer contracts, so further iterations cannot improve the step
            if correction <= newton_tol + floor or (correction <= _STALL * newton_tol and correction > 0.5 * previous):
                converged = True
                break
            previous = correction
        if not converged:
            raise _failure(model, f"generalized_alpha: Newton did not converge at t = {t_new:.9g} s (step {step}, "
                                  f"dt = {h:g} s): after {max_newton} iterations the position correction is "
                                  f"{correction:.3g} > newton_tol = {newton_tol:g} and the residual max |M qdd - Q| "
                                  f"is {float(np.max(np.abs(residual))):.3g}; reduce dt", t_new, ts, qs, qds, work,
                           stored, nfev, step - 1, iterations)
        acc_new = ((1.0 - alpha_f) * qdd_new + alpha_f * qdd - alpha_m * acc) / (1.0 - alpha_m)
        q_new = q_pred + h * h * beta * acc_new
        qd_new = qd_pred + h * gamma * acc_new
        applied += float(tau @ (q_new - q))  # exact for a constant tau
        if has_elements:  # trapezoidal rule on the element powers (second order, like the scheme)
            loads = element_forces(model, q_new, qd_new, t_new)
            dissipated += 0.5 * h * (power[0] + loads["dissipation"])
            applied += 0.5 * h * (power[1] + loads["power"])
            power = (loads["dissipation"], loads["power"])
        q, qd, qdd, acc, t = q_new, qd_new, qdd_new, acc_new, t_new
        if step % every == 0 or step == nsteps:
            ts[stored], qs[stored], qds[stored] = t, q, qd
            work[stored] = dissipated, applied
            stored += 1
    result = SimulationResult(model, ts[:stored].copy(), qs[:stored].copy(), qds[:stored].copy(),
                              work[:stored].copy(), "generalized_alpha", nfev, nsteps, 0)
    result.newton_iterations = iterations
    return result


def _failure(model, message, t, ts, qs, qds, work, stored, nfev, nsteps, iterations):
    """A SimulationError at time t keeping the samples so far."""
    from .integrate import SimulationResult  # noqa: PLC0415

    result = SimulationResult(model, ts[:stored].copy(), qs[:stored].copy(), qds[:stored].copy(),
                              work[:stored].copy(), "generalized_alpha", nfev, nsteps, 0)
    result.newton_iterations = iterations
    result.status = "failed"
    return SimulationError(message, t, result)
