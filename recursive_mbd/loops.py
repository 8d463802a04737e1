"""Closed loops: cut-joint constraints and the Lagrange-multiplier layer on top of the recursive tree.

A loop (``Model.add_loop``) adds equations phi(q) = 0 between two bodies. With J = dphi/dq (m, nq) the constrained
equations of motion are

    M(q) qdd + h(q, qd) = tau + Q_elements - J^T lambda,        J qdd = gamma = -J' qd,

and ``lambda`` (m,) are the multipliers: the loop force on body a is -sum_r lambda_r w_a,r at its point P_a,
on body b -sum_r lambda_r w_b,r at P_b (``_kernels.loops``). For a revolute loop lambda is the force that body b
exerts on body a, negated per axis: F_a = -(lambda_0, lambda_1). ``loop_dynamics`` solves the recursive way in
O(N m + m^3); ``forward_dynamics(..., method="mass_matrix")`` solves the dense KKT system as an independent check.
"""

import warnings
from collections import namedtuple

import numpy as np

from . import _checks
from ._kernels import layout as L
from ._kernels import loops as kernels
from .dynamics import as_vector, loaded_state, mass_matrix, raise_status, workspace
from .errors import ModelError, StateError

# relative singular-value cut-off of the multiplier solve: below it a loop equation counts as redundant
RCOND = 1e-10

LoopSolution = namedtuple("LoopSolution", "qdd multipliers forces rank")
LoopSolution.__doc__ = """Constrained forward dynamics of a model with loops.

qdd (nq,) joint accelerations; multipliers (m,) Lagrange multipliers lambda; forces (nloops, 2, 3) the loop force
(Fx, Fy [N], moment [N m]) on body a at its loop point and on body b at its loop point, ground axes; rank of
J M^-1 J^T (< m when loop equations are redundant or singular at this state)."""


class LoopWorkspace:
    """Scratch arrays of the loop layer of one model (allocated once, reused)."""

    def __init__(self, model):
        m = model.nconstraints
        nq = model.nq
        n = model.nbodies
        self.acc = np.zeros((n, 3))
        self.phi = np.zeros(m)
        self.phid = np.zeros(m)
        self.jac = np.zeros((m, nq))
        self.gamma = np.zeros(m)
        self.weights = np.zeros((m, 6))
        self.resp = np.zeros((m, nq))
        self.no_resp_drive = np.zeros((m, 0))
        self.stab = np.zeros(4)  # alpha, beta, and the zero gravity of the response passes
        self.lam = np.zeros(m)
        self.info = np.zeros(1, dtype=np.int64)


def loop_workspace(model):
    ws = workspace(model)
    if getattr(ws, "loops", None) is None:
        ws.loops = LoopWorkspace(model)
    return ws, ws.loops


def _raise(model, status):
    kind, index = L.decode_status(status)
    if kind == L.STATUS_LOOP_DEGENERATE:
        raise StateError(f"loop {model.loop_names[index]!r} (index {index}): the two points of the distance loop "
                         "coincide, so its direction is undefined")
    raise_status(model, status)


def constraints(model, q, qd=None):
    """Loop residual and its derivatives at (q, qd).

    Returns
    -------
    phi (m,), phi_dot (m,) = J qd, J (m, nq), gamma (m,) = -J' qd: the acceleration constraint is J qdd = gamma.
    Rows in loop order; a loop's equations (``Model.add_loop``): revolute (x, y of p_a - p_b), prismatic (normal
    offset, angle), fixed (x, y, angle), distance (|p_a - p_b| - length) [m or rad].
    """
    ws, lw = loop_workspace(model)
    q = as_vector(model, q, "q")
    qd = ws.zeros if qd is None else as_vector(model, qd, "qd")
    status = kernels.loop_constraints(model.body_int, model.body_real, model.loop_int, model.loop_real, q, qd, ws.ws,
                                      ws.com, lw.acc, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights)
    if status:
        _raise(model, status)
    return lw.phi.copy(), lw.phid.copy(), lw.jac.copy(), lw.gamma.copy()


def forces_from_multipliers(model, lam, weights):
    """Loop forces (nloops, 2, 3) on bodies a and b from multipliers and the row weights of the kernel."""
    forces = np.zeros((model.nloops, 2, 3))
    for k in range(model.nloops):
        block = slice(model.loop_rows[k], model.loop_rows[k + 1])
        forces[k, 0] = -lam[block] @ weights[block, :3]
        forces[k, 1] = -lam[block] @ weights[block, 3:]
    return forces


def _warn_rank(model, rank):
    m = model.nconstraints
    if rank < m:
        warnings.warn(f"the loop equations are redundant or singular at this state: rank {rank} of {m}; the "
                      "multipliers are the minimum-norm ones", RedundantConstraintWarning, stacklevel=3)


class RedundantConstraintWarning(UserWarning):
    """Loop equations that are not independent (a redundant loop, or a singular configuration)."""


def loop_dynamics(model, q, qd, tau=None, *, t=0.0, alpha=0.0, beta=0.0, method="recursive"):
    """Constrained forward dynamics with the loop multipliers and forces: a ``LoopSolution``.

    Parameters as ``rm.forward_dynamics``; ``alpha``, ``beta`` [1/s] add Baumgarte's terms to the acceleration
    constraint, J qdd = gamma - 2 alpha phi' - beta^2 phi. ``method``: "recursive" (O(N m + m^3), module
    docstring) or "mass_matrix" (dense KKT system with M from the composite-rigid-body pass, O(N^3)). Redundant
    or singular loop equations give the minimum-norm multipliers and a ``RedundantConstraintWarning``.
    """
    ws, lw = loop_workspace(model)
    q, qd, tau, wrench = loaded_state(model, ws, q, qd, tau, t)
    lw.stab[:2] = alpha, beta
    if method == "recursive":
        qdd = np.zeros(model.nq)
        status = kernels.constrained_dynamics(
            model.body_int, model.body_real, model.gravity, model.loop_int, model.loop_real, q, qd, tau, wrench,
            ws.no_driven, ws.ws, ws.com, lw.acc, qdd, ws.no_drive, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights,
            lw.resp, lw.no_resp_drive, ws.zeros, lw.stab, RCOND, lw.lam, lw.info)
        if status:
            _raise(model, status)
        lam, rank = lw.lam.copy(), int(lw.info[0])
    elif method == "mass_matrix":
        from .dynamics import _rnea  # noqa: PLC0415

        phi, phid, jac, gamma = constraints(model, q, qd)  # also fills lw.weights
        rhs_q = tau - _rnea(model, ws, q, qd, ws.zeros, wrench)
        m, nq = jac.shape
        kkt = np.block([[mass_matrix(model, q), jac.T], [jac, np.zeros((m, m))]])
        rhs = np.concatenate((rhs_q, gamma - 2.0 * alpha * phid - beta**2 * phi))
        solution, _, rank_kkt, _ = np.linalg.lstsq(kkt, rhs, rcond=RCOND)
        qdd, lam, rank = solution[:nq], solution[nq:], rank_kkt - nq
    else:
        raise ValueError(f"unknown method {method!r}; expected 'recursive' or 'mass_matrix'")
    _warn_rank(model, rank)
    return LoopSolution(qdd, lam, forces_from_multipliers(model, lam, lw.weights), rank)


def project(model, q, qd, *, free=None, tol=1e-12, max_iter=20):
    """The state nearest (q, qd) that closes every loop: (q, qd) copies, and max |phi| reached.

    Positions by Gauss-Newton with minimum-norm steps, velocities by one minimum-norm correction, changing only
    the coordinates in ``free`` (default all). Raises ModelError when the loops cannot be closed from here
    (max |phi| stays above ``sqrt(tol)``).
    """
    ws, lw = loop_workspace(model)
    q = as_vector(model, q, "q").copy()
    qd = as_vector(model, qd, "qd").copy()
    # the kernel indexes q and J's columns with free: every entry must be in range (numba does not bounds-check)
    free = np.arange(model.nq) if free is None else _checks.index_array(free, model.nq, "free")
    tol = _checks.real(tol, "tol", low=0.0, strict=True)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    status, worst = kernels.project(model.body_int, model.body_real, model.loop_int, model.loop_real, q, qd, free,
                                    ws.ws, ws.com, lw.acc, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights,
                                    np.zeros((model.nconstraints, free.shape[0])), tol, max_iter, RCOND)
    if status:
        _raise(model, status)
    if not worst <= np.sqrt(tol):
        raise ModelError(f"the loops cannot be closed near this state: max |phi| = {worst:.3g} after {max_iter} "
                         "Gauss-Newton steps")
    return q, qd, worst
