"""Implicit integration in joint coordinates with an O(N) Newton matrix.

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
joint diagonal terms (like rotor inertias), which the articulated-body recursion (the relative-coordinate lecture, eq.
3.23) solves in O(N) time and memory without forming S (``_kernels.planar.implicit.effective_solve``).

Generalised-alpha
-----------------
Chung & Hulbert (1993) in the form of Arnold & Bruls (2007), fixed step h, with rho_inf in [0, 1]:

    alpha_m = (2 rho - 1) / (rho + 1), alpha_f = rho / (rho + 1), gamma = 1/2 + alpha_f - alpha_m,
    beta = (gamma + 1/2)^2 / 4,
    q+   = q + h qd + h^2 (1/2 - beta) a + h^2 beta a+,       qd+ = qd + h (1 - gamma) a + h gamma a+,
    (1 - alpha_m) a+ + alpha_m a = (1 - alpha_f) qdd+ + alpha_f qdd,      M(q+) qdd+ = Q(q+, qd+, t+).

Unknown qdd+: dq+/dqdd+ = h^2 beta (1 - alpha_f) / (1 - alpha_m) = c_stiff, dqd+/dqdd+ = h gamma (1 - alpha_f) /
(1 - alpha_m) = c_damp, c_mass = 1. The residual M qdd+ - Q is one inverse-dynamics pass (O(N)). Second order for
every rho_inf; rho_inf = 1 is the trapezoidal (energy-conserving on linear systems) rule, rho_inf = 0 annihilates
the highest frequencies in one step.

Time loop and cost
------------------
The whole loop is compiled (``_kernels.planar.implicit.integrate_generalized_alpha``) on the time loops' system tuple
and inputs callback (tau functions, time-varying elements, drivers; ``integrators``), with their monitor
(Ctrl-C, max_wall_time), events and t_eval on a cubic Hermite interpolant of (q, qd) and (qd, qdd) at the step
ends, and the work terms by the trapezoidal rule on the element, tau and driver powers. The Newton matrix is
factorised (``effective_factor``: the tip-to-base elimination, about 1.5 forward dynamics) at the first iterate
of a step and then reused, over later steps of the same size too, while the corrections shrink at least 20x per
iteration; when they do not, it is factorised again at the current iterate (and a step that fails with reused
factors is restarted with fresh ones; a step that fails with fresh factors too is taken again in two halves
from its start, each split again where it fails, down to dt / 16, ``result.newton_split_steps`` counting the
splits, outputs and events between the halves as between steps). One Newton iteration is then one residual
(inverse dynamics) and one ``effective_apply`` (two sweeps, no kinematics): 1.1 - 1.8 forward-dynamics
evaluations on the hanging swing (``benchmarks/implicit.py``, whole run over its iterations), 2.6 - 3 iterations
per step there (4 at N = 1e6): Newton stops when the correction of the positions and of the velocities is within
newton_tol.

Closed loops (stabilised index 2)
---------------------------------
With loop equations phi(q) = 0 (m rows, Jacobian J) the step is the stabilised index-2 generalised-alpha scheme
of Arnold & Bruls (2007; the GGL form): the position update gets a correction along the constraint normals,
q+ = q + h qd + h^2 (1/2 - beta) a + h^2 beta a+ + J_f^T nu, and both levels are imposed at the new step:

    M qdd+ - Q + J^T lambda = 0,     phi(q+) / c_stiff = 0,     J(q+) qd+ / c_damp = 0,

unknowns (qdd+, lambda, nu), the rows scaled so that their derivatives with respect to qdd+ are J. (The plain
index-3 form, phi(q+) = 0 alone, leaves J qd+ = O(dt^2) and is unstable at rho_inf = 1: on the four-bar it
drifted to |J qd| = 6e-3 m/s at dt = 4e-3 and stopped at t = 3.35 s with rho_inf = 1; ``benchmarks/
ga_loop_drift.py``.) The Newton matrix, with the derivatives of J (and lambda d2phi/dq2, and K J^T by nu)
lagged, is

    [S   J^T  0                  ]
    [J   0    J_f J_f^T / c_stiff]
    [J   0    0                  ]

Its last row fixes J dqdd, so (dqdd, dlambda) is the bordered solve of [S J^T; J 0] with the velocity rows as
right-hand side, by its Schur complement in O(N m + m^3): X = S^-1 J^T (m applies of the factors), G = J X; per
iteration Y = S^-1 r_1, G dlambda = J Y - r_3, dqdd = Y - X dlambda; then (J_f J_f^T) dnu = phi - c_stiff r_3
(both small solves by ``loops.filtered_solve``: minimum-norm where the loops are redundant). phi and J qd are
then zero to the Newton tolerance at every step (measured 1.6e-13 m and 3e-10 m/s over 10 s of a four-bar) and
q, qd converge at second order (error ratio 4.00 when dt halves), for every rho_inf. Driven joints are locked in
S (their accelerations are prescribed, no unknowns); their prescribed rates enter J qd.
"""

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.planar import implicit as kernels
from ..dynamics._evaluation import as_vector
from ..dynamics.loops import constraints
from ..errors import ModelError, StateError
from ..model.statuses import raise_status
from ..model.workspace import workspace
from . import runs as _runs
from .newton import (
    generalized_alpha_coefficients,  # noqa: F401  (public here too: rm.implicit)
    joint_spring_diagonals,
    run_generalized_alpha,
    run_options,
)

_NOT_DRIVEN = np.zeros(0, dtype=np.uint8)
_NO_BLOCKS = np.zeros((0, 3, 6))  # no per-body blocks (the contacts' belong to a run: their anchors are its state)
# solve_effective: eigenvalues of the loop rows' Schur complement below this fraction of the largest are redundant
REDUNDANT_RCOND = 1e-10


class _Scratch:
    """The solve's scratch arrays of one model (n = nbodies), allocated once."""

    def __init__(self, model):
        n = model.nbodies
        self.key = (id(model.body_int), n, model.nq)
        self.ia = np.zeros((n, 3, 3))
        self.uu = np.zeros((n, 3, 6))
        self.dinv = np.zeros((n, 3, 3))
        self.gcol = np.zeros((n, 3, 3))
        self.rvec = np.zeros((n, 2))
        self.ub = np.zeros((n, 3))
        self.pa = np.zeros((n, 3))
        self.vel = np.zeros((n, 3))
        self.fsub = np.zeros((n, 2))
        self.kb = np.zeros(n)
        self.dmat = np.zeros((3, 3))
        self.j_stiff, self.j_damp = joint_spring_diagonals(model.body_int, model.elem_int, model.elem_real,
                                                           model.nq)


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


def solve_effective(model, q, qd, c_mass, c_damp, c_stiff, rhs, *, t=0.0, out=None, loop_rhs=None,
                    multipliers=False):
    """x from (c_mass M + c_damp C + c_stiff K) x = rhs in O(N) time and memory, never forming an nq x nq matrix;
    on a model with closed loops, the bordered solve of the Newton matrix of the constrained step.

    Parameters
    ----------
    model : Model
        A tree, or a tree with closed loops (m loop equations phi(q) = 0, Jacobian J (m, nq)).
    q, qd : array_like, shape (nq,)
        The state where M, C, K and J are taken (qd only enters lagged terms and is accepted for the interface).
    c_mass, c_damp, c_stiff : float
        Coefficients [1], [s], [s^2] (an implicit step's dqdd/dqdd, dqd/dqdd, dq/dqdd).
    rhs : array_like, shape (nq,)
    t : float
        Time (unused: the time-varying loads are lagged).
    out : ndarray (nq,), optional
        Where to write x.
    loop_rhs : array_like, shape (m,), optional
        With loops: the right-hand side c of the loop rows (default zeros).
    multipliers : bool
        Also return the multipliers lambda (m,) of the loop rows (empty for a tree).

    Returns
    -------
    x : ndarray, shape (nq,)
        Tree: S x = rhs with S = c_mass M + c_damp C + c_stiff K. With loops: the solution of

            [S  J^T] [x     ]   [rhs]
            [J  0  ] [lambda] = [c  ],

        by the Schur complement on the loop rows (``_kernels.planar.implicit.loop_schur``: m applies of the factors of
        S, then the m x m system J S^-1 J^T by its eigenvalues, which may be negative (S may be indefinite):
        minimum-norm where the loops are redundant, eigenvalues below 1e-10 of the largest),
        O(N m + m^3). J is the loop Jacobian at q (``loops.constraints``), whether or not q closes
        the loops.
    (x, lambda) when ``multipliers`` is True.

    The matrix S is the one documented in ``recursive_mbd.integrate.implicit``: M exact; K the gravity geometric
    stiffness T^T diag(K_b) T (exact for revolute/fixed joints, slide-rotation cross terms of prismatic/planar joints
    omitted) plus the joint springs' stiffness; C the joint dampers' damping; velocity-product terms, elements
    between bodies and the loop forces' geometric stiffness lambda d2phi/dq2 omitted. Raises ModelError naming
    the body whose joint block of S is singular.
    """
    ws, scratch = _scratch(model)
    q = as_vector(model, q, "q")
    as_vector(model, qd, "qd")
    rhs = as_vector(model, rhs, "rhs")
    c_mass = _coefficient(c_mass, "c_mass")
    c_damp = _coefficient(c_damp, "c_damp")
    c_stiff = _coefficient(c_stiff, "c_stiff")
    m = model.nconstraints
    if loop_rhs is not None:
        if not m:
            raise ModelError("solve_effective: loop_rhs is for models with closed loops; this model has none")
        loop_rhs = np.ascontiguousarray(_checks.real_array(loop_rhs, "loop_rhs"), dtype=float)
        if loop_rhs.shape != (m,):
            raise StateError(f"loop_rhs must have shape ({m},) (one entry per loop equation), got shape "
                             f"{loop_rhs.shape}")
        if not np.all(np.isfinite(loop_rhs)):
            raise StateError(f"loop_rhs[{int(np.flatnonzero(~np.isfinite(loop_rhs))[0])}] is not finite")
    if out is None:
        out = np.empty(model.nq)
    elif not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (model.nq,)
              and out.flags.c_contiguous and out.flags.writeable):
        raise TypeError(f"out must be a writeable C-contiguous float64 array of shape ({model.nq},)")
    j_diag = c_stiff * scratch.j_stiff + c_damp * scratch.j_damp
    status = kernels.effective_solve(model.body_int, model.body_real, model.gravity, q, ws.zeros, _NOT_DRIVEN,
                                     c_mass, c_stiff, j_diag, _NO_BLOCKS, rhs, ws.ws, scratch.ia, scratch.uu,
                                     scratch.dinv, scratch.gcol, scratch.rvec, scratch.ub, scratch.pa, scratch.vel,
                                     scratch.fsub, scratch.kb, scratch.dmat, out)
    if status:
        kind, index = L.decode_status(status)
        if kind == L.STATUS_SINGULAR:
            raise ModelError(f"solve_effective: the effective matrix is singular at the joint of body "
                             f"{model.body_names[index]!r} (index {index}) for c_mass = {c_mass:g}, "
                             f"c_damp = {c_damp:g}, c_stiff = {c_stiff:g}")
        raise_status(model, status, ("q", "qd", "rhs"))
    lam = np.zeros(m)
    if m:
        # out = S^-1 rhs; the factors of S stay in the scratch: resp = S^-1 J^T, gram = J S^-1 J^T, then
        # gram lambda = J S^-1 rhs - c and x = S^-1 rhs - resp^T lambda
        jac = np.ascontiguousarray(constraints(model, q)[2])
        resp = np.zeros((m, model.nq))
        gram = np.zeros((m, m))
        kernels.loop_schur(model.body_int, _NOT_DRIVEN, scratch.uu, scratch.dinv, scratch.gcol, scratch.rvec, jac,
                           np.arange(model.nq, dtype=np.int64), scratch.ub, scratch.pa, scratch.vel,
                           np.zeros(model.nq), resp, gram)
        schur_rhs = jac @ out - (0.0 if loop_rhs is None else loop_rhs)
        if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(schur_rhs))):
            raise StateError("solve_effective: the loop rows' Schur complement J S^-1 J^T is not finite (an "
                             "overflow: check q, rhs and the coefficients)")
        # S may be indefinite (c_stiff times a negative gravity stiffness: a body above its joint), and then so is
        # J S^-1 J^T: a pseudo-inverse by its eigenvalues, |s| below REDUNDANT_RCOND max |s| taken as redundant
        # rows (a null direction of J^T: no effect on x, lambda minimum-norm); not ``loops.filtered_solve``,
        # whose smooth filter (made for Runge-Kutta stages) assumes s >= 0 and perturbs s within 1e-4 of the
        # largest by (mu / s)^2
        values, vectors = np.linalg.eigh(gram)
        keep = np.abs(values) > REDUNDANT_RCOND * np.abs(values).max()
        lam = vectors[:, keep] @ ((vectors[:, keep].T @ schur_rhs) / values[keep])
        out -= resp.T @ lam
    return (out, lam) if multipliers else out


def gravity_stiffness(model, q):
    """The per-body gravity geometric stiffness K_b [N m/rad] (on each body's absolute angle), shape (nbodies,)."""
    ws, scratch = _scratch(model)
    q = as_vector(model, q, "q")
    from .._kernels.planar import tree  # noqa: PLC0415

    status = tree.check_finite(q, ws.zeros, ws.zeros)
    if status:
        raise_status(model, status)
    tree.kinematics_pass(model.body_int, model.body_real, q, ws.zeros, ws.ws, True)
    kernels.geometric_stiffness(model.body_int, model.body_real, model.gravity, ws.ws, scratch.fsub, scratch.kb)
    return scratch.kb.copy()


def simulate_generalized_alpha(model, q0, qd0, t0, t_end, dt, *, every=1, t_eval=None, tau=None, drivers=None,
                               events=None, rho_inf=0.9, newton_tol=1e-12, max_newton=50, max_steps=10_000_000,
                               progress=None, max_wall_time=None):
    """Generalised-alpha run (called by ``rm.simulate(method="generalized_alpha")``; options as there).

    Fixed step ``dt`` (the last one shortened to land on t_end), the whole time loop compiled
    (``_kernels.planar.implicit.integrate_generalized_alpha``). Newton on the new accelerations (and loop multipliers)
    with the matrix of ``solve_effective`` (c_mass = 1, c_damp = h gamma (1 - alpha_f) / (1 - alpha_m),
    c_stiff = h^2 beta (1 - alpha_f) / (1 - alpha_m)) factorised once per step, bordered by the loop Jacobian
    (stabilised index 2); converged when the correction of the new state max(c_stiff max|dqdd|, c_damp
    max|dqdd|, max|J^T dnu|) (positions [rad or m] and velocities [rad/s or m/s]) <= ``newton_tol`` plus the
    round-off of the update, or when a correction that no longer contracts is below 100 ``newton_tol`` or within
    the round-off of the residual measured at the iterate (the correction that changes of the state by two units
    in their last place make: where the links near a long chain's free end whip, e.g. a 1e3-link chain landing on
    a table, it is 1e-10 to 1e-9, above the default tolerance; ``nfev`` counts the probe). (The velocities
    count: an error left in them carries on as a position error growing with t, and at small steps, where c_damp
    >> c_stiff, it decided the accuracy: the four-bar's errors grew as dt fell below 2.5e-4.) With contacts, also
    when the error that the contraction predicts after a correction (theta / (1 - theta) times it, theta the ratio
    of the last two corrections, the contact modes unchanged between them; Hairer and Wanner, Solving ODEs II,
    IV.8) is within newton_tol plus 4 times the round-off measured at a stall of the last 16 steps. At most
    ``max_newton`` iterations a step (fast motion at the tip of a whip contracts at rates ~0.3: 10-20 iterations).
    ``tau`` constant or a function, ``drivers``, ``events``, ``t_eval`` (cubic Hermite dense output), progress
    and max_wall_time as for the other numba methods. The result has ``newton_iterations`` and
    ``newton_factorizations`` (totals) besides the usual fields, and with loops ``multipliers`` (nt, m): lambda
    of the converged step at the samples (linear in time between step ends at t_eval points and events);
    ``nfev`` counts residual (inverse-dynamics) evaluations. A step whose Newton iteration does not converge in
    ``max_newton`` iterations is taken again in two halves, each split again where it fails, down to dt / 16
    (``result.newton_split_steps`` counts the splits; a touch-down that changes thousands of contact rows' modes
    at once); where a piece of dt / 16 fails too, SimulationError with the samples so far. Contacts: their loads
    are in the residual (the anchors of the step's start held) with the law's modes at every iterate (clipped to
    the friction cone, touching or not), their stiffness and damping in the matrix (per-body blocks,
    ``_kernels.planar.contact.contact_newton_blocks``, with those modes), their state updated after every step;
    an impact whose compression spans fewer than 4 steps stops the run with SimulationError (its rebound would be
    wrong; docs/guide/contact.md).
    """
    workspace(model)
    if model.nq == 0:
        raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
    options = run_options(rho_inf, newton_tol, max_newton, t0, t_end, dt, max_steps, every, t_eval)
    t0 = options[3]
    q0 = as_vector(model, q0, "q0").copy()
    qd0 = as_vector(model, qd0, "qd0").copy()
    _runs.check_finite_start(q0, qd0)
    inputs = _runs._Inputs(model, tau, drivers)
    callback, key = inputs.callback()
    # Newton closes the loops every step; the fixed step stops at an impact it does not resolve
    loop = _runs.RecursiveTimeLoop(model, inputs, "none", tree_system=False, watch_impacts=True)
    event_functions = _runs._Events(model, events, inputs, loop)
    y0 = _runs.start_state(model, inputs, loop, callback, key, q0, qd0, t0)
    _, scratch = _scratch(model)
    result, _ = run_generalized_alpha(kernels.integrate_generalized_alpha, model, loop, callback, key, inputs,
                                      event_functions, y0, loop.system.free.size, scratch.j_stiff, scratch.j_damp, 6,
                                      options, max_steps, progress, max_wall_time, "M qdd - Q", kernels.MAX_SPLITS)
    return result
