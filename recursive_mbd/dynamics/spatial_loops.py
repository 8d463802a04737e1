"""Closed loops on spatial models (``Model3D.add_loop``): constraint equations and the multiplier layer.

The spatial counterpart of ``recursive_mbd.dynamics.loops``, with the same sign convention: with J = dphi/dv
(m, nv), the Jacobian in the velocity coordinates v (a quaternion joint's three rates, not its four entries), the
constrained equations of motion are

    M(q) vdot + h(q, v) = tau - J^T lambda,        J vdot = gamma = -J' v,

and ``lambda`` (m,) are the multipliers: the loop force on body a is -sum_r lambda_r w_a,r at its point P_a (force,
moment; ground axes), on body b -sum_r lambda_r w_b,r at P_b (``_kernels.spatial.loops``). For a spherical loop
F_a = -lambda[0:3], the force that body b exerts on body a. ``loop_dynamics`` solves the recursive way (O(N m +
m^3)) with the filtered regularised multiplier solve of the planar layer (``loops.FILTER_RCOND``);
``method="mass_matrix"`` solves the dense KKT system as an independent check.
"""

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.arrays import readonly_zeros
from .._kernels.planar.loops import BRANCH_ZONE, filtered_solve
from .._kernels.spatial import layout as SL
from .._kernels.spatial import loops as kernels
from ..errors import ModelError, StateError
from ..model.configuration import integrate_configuration
from ..model.spatial import Model3D
from ..model.statuses import raise_spatial_loop_status
from ._evaluation import state_vector
from .loops import (
    FILTER_RCOND,
    POSITION_RCOND,
    LoopArrays,
    LoopSolution,
    RedundantConstraintWarning,
    _warn_rank,
    attach_loop_workspace,
    forces_from_multipliers,
    kkt_solve,
)
from .spatial import _loaded, bias_forces, mass_matrix, workspace

__all__ = ["LoopSolution", "RedundantConstraintWarning", "constraints", "loop_dynamics", "project"]


class LoopWorkspace3D(LoopArrays):
    """Scratch arrays of the loop layer of one spatial model (allocated once, reused)."""

    def __init__(self, model):
        super().__init__(model.nconstraints, model.nv, 12)
        n = model.nbodies
        self.rot = np.zeros((n, 3, 3))
        self.pos = np.zeros((n, 3))
        self.omega = np.zeros((n, 3))
        self.vel = np.zeros((n, 3))
        self.acc = np.zeros((n, 6))
        self.point = np.zeros(40)
        self.no_gravity = readonly_zeros(3)  # read-only as the model's gravity: the tree kernels compile once
        self.stab = np.zeros(2)


def loop_workspace(model):
    """(the spatial workspace, the loop workspace) of ``model``; TypeError unless it is a Model3D."""
    return attach_loop_workspace(workspace(model), model, LoopWorkspace3D)


def constraints(model, q, v=None):
    """Loop residual and its derivatives at (q, v) of a spatial model.

    Returns
    -------
    phi (m,), phi_dot (m,) = J v, J (m, nv), gamma (m,) = -J' v: the acceleration constraint is J vdot = gamma.
    Rows in loop order (``Model3D.add_loop``): spherical (x, y, z of p_a - p_b, ground axes [m]), revolute (those,
    then the components of body b's axis along two directions fixed in body a across its axis), distance
    (|p_a - p_b| - length [m]).
    """
    ws, lw = loop_workspace(model)
    q = state_vector(q, model.nq, "q", "nq")
    v = ws.zeros if v is None else state_vector(v, model.nv, "v", "nv")
    status = kernels.loop_constraints(model.body_int, model.body_real, model.loop_int, model.loop_real, q, v, ws.ws,
                                      ws.S, ws.tmp, lw.rot, lw.pos, lw.omega, lw.vel, lw.acc, lw.point, lw.phi,
                                      lw.phid, lw.jac, lw.gamma, lw.weights)
    if status:
        raise_spatial_loop_status(model, status, ("q", "v"))
    return lw.phi.copy(), lw.phid.copy(), lw.jac.copy(), lw.gamma.copy()


def loop_dynamics(model, q, v, tau=None, *, t=0.0, alpha=0.0, beta=0.0, method="recursive"):
    """Constrained forward dynamics of a spatial model with loops: a ``LoopSolution``.

    Parameters as ``rm.forward_dynamics``; ``alpha``, ``beta`` [1/s] add Baumgarte's terms to the acceleration
    constraint, J vdot = gamma - 2 alpha phi' - beta^2 phi. ``method``: "recursive" (articulated-body passes and the
    filtered regularised multiplier solve, module docstring) or "mass_matrix" (the dense KKT system with M from the
    composite-rigid-body pass and h from Newton-Euler, O(N^3)). Redundant or singular loop equations give the
    minimum-norm multipliers and a ``RedundantConstraintWarning``.

    Returns
    -------
    LoopSolution
        qdd: vdot (nv,); multipliers (m,); forces (nloops, 2, 6): on body a and on body b, (force at its loop point,
        moment), ground axes; rank of J M^-1 J^T.
    """
    if not isinstance(model, Model3D):
        raise TypeError(f"model must be a recursive_mbd.Model3D, got {type(model).__name__}")
    ws, lw = loop_workspace(model)
    t = _checks.real(t, "t")
    q = state_vector(q, model.nq, "q", "nq")
    v = state_vector(v, model.nv, "v", "nv")
    tau = _loaded(model, q, v, ws.zeros if tau is None else state_vector(tau, model.nv, "tau", "nv"), t)  # + elements
    alpha = _checks.real(alpha, "alpha")
    beta = _checks.real(beta, "beta")
    if method == "recursive":
        vdot = np.zeros(model.nv)
        lw.stab[:] = alpha, beta
        status = kernels.constrained_dynamics(
            model.body_int, model.body_real, model.gravity, model.loop_int, model.loop_real, q, v, tau, ws.ws, ws.S,
            ws.UD, ws.uD, ws.tmp, lw.rot, lw.pos, lw.omega, lw.vel, lw.acc, lw.point, lw.phi, lw.phid, lw.jac,
            lw.gamma, lw.weights, lw.resp, ws.zeros, lw.no_gravity, lw.stab, FILTER_RCOND, lw.lam, vdot, lw.info)
        if status:
            raise_spatial_loop_status(model, status, ("q", "v", "tau"))
        lam, rank = lw.lam.copy(), int(lw.info[0])
    elif method == "mass_matrix":
        phi, phid, jac, gamma = constraints(model, q, v)  # also fills lw.weights
        vdot, lam, rank = kkt_solve(mass_matrix(model, q), jac, tau - bias_forces(model, q, v), phi, phid, gamma,
                                    alpha, beta)
    else:
        raise StateError(f"unknown method {method!r}; expected 'recursive' or 'mass_matrix'")
    _checks.check_finite_result(vdot, "vdot")
    _warn_rank(model, rank)
    return LoopSolution(vdot, lam, forces_from_multipliers(model, lam, lw.weights), rank)



def _responses(model, ws, lw, q, jac, driven=None):
    """Y (m, nv) = (M^-1 J^T)^T and G = J M^-1 J^T (m, m), symmetrised, at q (one articulated-body pass, then
    ``unit_force_responses`` on its factorisation); with ``driven`` (nbodies,) uint8 the driven joints held
    (``held_responses``: Y's driven entries zero, G = J_f M_ff^-1 J_f^T)."""
    jac = np.ascontiguousarray(jac)
    if driven is not None:
        rows = (model.nbodies, model._max_nv)
        status = kernels.held_responses(model.body_int, model.body_real, q, jac, driven, ws.ws, ws.S,
                                        np.zeros((*rows, 6)), np.zeros(rows), ws.tmp, ws.zeros, lw.no_gravity,
                                        lw.resp, np.zeros_like(lw.resp))
    else:
        status = kernels.constraint_responses(model.body_int, model.body_real, q, jac, ws.ws, ws.S, ws.UD, ws.uD,
                                              ws.tmp, ws.zeros, lw.no_gravity, lw.resp)
    if status:
        raise_spatial_loop_status(model, status, ("q",))
    gram = jac @ lw.resp.T
    return lw.resp.copy(), 0.5 * (gram + gram.T)


def _filtered(model, gram, rhs, rcond):
    out = np.zeros(rhs.size)
    if filtered_solve(np.ascontiguousarray(gram), np.ascontiguousarray(rhs, dtype=float), rcond, out) < 0:
        raise_spatial_loop_status(model, L.STATUS_NONFINITE_STATE, ("q", "v"))
    return out


def project(model, q, v, *, tol=1e-12, max_iter=20, driven=None):
    """The state nearest (q, v) in the kinetic-energy metric that closes every loop: (q, v) new arrays, and max
    |phi| reached (the spatial ``recursive_mbd.dynamics.loops.project``).

    Positions: Gauss-Newton steps delta = -Y f(G) phi along ``integrate_configuration`` (quaternions stay unit), Y =
    M^-1 J^T, G = J Y, f the filtered regularised inverse (``loops.POSITION_RCOND``), until the step and |phi| are
    below ``tol`` or the step stops shrinking; velocities: one correction v -= Y f(G) (J v) (``FILTER_RCOND``), the
    admissible velocity nearest v in the norm v^T M v (its kinetic energy changes only at second order in J v).
    ``driven`` (nbodies,) uint8, optional: joints held (their coordinates and rates stay put; the metric is that of
    the free velocities). Raises ModelError naming the loop with the largest gap when |phi| stays above sqrt(tol).
    """
    if not isinstance(model, Model3D):
        raise TypeError(f"model must be a recursive_mbd.Model3D, got {type(model).__name__}")
    ws, lw = loop_workspace(model)
    tol = _checks.real(tol, "tol", low=0.0, strict=True)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    q = integrate_configuration(model, state_vector(q, model.nq, "q", "nq"), ws.zeros)  # a copy, quaternions normalised
    v = state_vector(v, model.nv, "v", "nv").copy()
    last_step = np.inf
    for _ in range(max_iter + 1):
        phi, _, jac, _ = constraints(model, q)
        size = float(np.abs(phi).max(initial=0.0))
        if size == 0.0:
            break
        resp, gram = _responses(model, ws, lw, q, jac, driven)
        delta = -resp.T @ _filtered(model, gram, phi, POSITION_RCOND)
        step = float(np.abs(delta).max())
        if (size <= tol and step <= tol) or not step < 0.5 * last_step:  # converged, or round-off reached
            break
        last_step = step
        q = integrate_configuration(model, q, delta)
    phi, _, jac, _ = constraints(model, q)
    worst = float(np.abs(phi).max(initial=0.0))
    if not worst <= np.sqrt(tol):
        row = int(np.argmax(np.abs(phi)))
        k = int(np.searchsorted(model.loop_rows, row, side="right") - 1)
        raise ModelError(f"the loops cannot be closed near this state: loop {model.loop_names[k]!r} stays open, "
                         f"max |phi| = {worst:.3g} after {max_iter} Gauss-Newton steps")
    resp, gram = _responses(model, ws, lw, q, jac, driven)
    v -= resp.T @ _filtered(model, gram, jac @ v, FILTER_RCOND)
    return q, v, worst


def consistent_start(model, q0, v0, driven=None):
    """(q0, v0) of a Model3D projected onto its loops (``project``; ``driven`` (nbodies,) uint8: joints held): the
    start of ``rm.simulate`` in either formulation. A gap above 1e-6 is a StateError naming the loop, redundant loop
    equations at q0 a RedundantConstraintWarning."""
    phi, _, jac, _ = constraints(model, q0)
    gap = float(np.abs(phi).max())
    if gap > 1e-6:
        row = int(np.argmax(np.abs(phi)))
        k = int(np.searchsorted(model.loop_rows, row, side="right") - 1)
        raise StateError(f"q0 does not close the loops (max |phi| = {gap:.3g}, loop {model.loop_names[k]!r}); find "
                         "a consistent q0 with rm.assemble(model, q0)")
    q0, v0, _ = project(model, q0, v0, driven=driven)
    jac = constraints(model, q0)[2]
    if driven is not None:  # the rank of the free columns: those the multipliers move
        jac = np.delete(jac, model.body_int[driven != 0, SL.VIDX], axis=1)
    rank = np.linalg.matrix_rank(jac, tol=None)
    if rank < model.nconstraints:  # the run solves them by least squares, as loop_dynamics does
        _checks.warn(f"the loop equations are redundant at q0: rank {rank} of {model.nconstraints}; the "
                     "multipliers are the minimum-norm ones", RedundantConstraintWarning)
    return q0, v0


def change_point(model, q):
    """Where the loop equations of a spatial model lose rank at q: (the names of the loops whose rows carry the weak
    directions, the smallest over the largest eigenvalue of J M^-1 J^T). A weak direction is an eigenvector with
    eigenvalue at most ``BRANCH_ZONE`` times the largest (the zone of the time loops' change-point check)."""
    _, _, jac, _ = constraints(model, q)
    gram = jac @ np.linalg.solve(mass_matrix(model, q), jac.T)
    values, vectors = np.linalg.eigh(gram)
    top = max(float(values[-1]), np.finfo(float).tiny)
    weak = vectors[:, values <= BRANCH_ZONE * top]
    rows = np.flatnonzero(np.abs(weak).max(axis=1, initial=0.0) > 0.1)  # rows with a real share of a weak direction
    loops = np.unique(np.searchsorted(model.loop_rows, rows, side="right") - 1)
    return [model.loop_names[k] for k in loops], max(float(values[0]), 0.0) / top
