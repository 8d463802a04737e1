"""The augmented absolute-coordinate formulation (the two-squares tutorial): an independent route beside the recursive
one.

Every body has absolute coordinates z_i = (x_i, y_i, theta_i) of its centre of mass, so its mass matrix is the
constant diagonal diag(m, m, J). Each joint of the same Model is a set of constraint equations C(z) = 0 (the two-squares
tutorial, eqs. 8, 9): with P_p = c_p + A_p s_p and P_c = c_c + A_c s_c the joint point as seen from the parent and
the child,

    revolute   P_p - P_c = 0                                           (2 equations)
    prismatic  n_p . (P_c - P_p) = 0, theta_c - theta_p - angle = 0      (n_p the axis normal, parent frame)
    fixed      P_p - P_c = 0, theta_c - theta_p - angle = 0              (3 equations)
    planar     none

Forward dynamics solves the KKT system of eq. (10) with the acceleration constraint (13) and optional Baumgarte
stabilisation (15)-(17):

    [M   C_z^T] [z'']   [Q                                ]
    [C_z   0  ] [lam] = [gamma - 2 alpha C' - beta^2 C     ],   C_z z'' = gamma,

by default with the compiled tree-ordered elimination of ``recursive_mbd._kernels.augmented.tree`` (O(N), loops and
drivers as auxiliary rows by a Schur complement), or for comparison with a general sparse factorisation
(scipy.sparse.linalg.splu) or densely. ``Q`` holds gravity, the model's force
elements (the same shared evaluation as every formulation) and the joint forces tau mapped by the joint-coordinate
Jacobian, so the same inputs give the same motion in both formulations.
"""

import functools
import math

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from .. import _checks
from .._kernels import layout as L
from .._kernels import sparse_kkt
from .._kernels.arrays import readonly_zeros
from .._kernels.augmented import entry
from .._kernels.augmented import tree as kernels
from .._kernels.planar import loops as loop_kernels
from ..errors import ModelError, StateError
from ..model import joints
from ..model.spatial import Model3D
from ..model.workspace import workspace
from . import augmented3d
from ._evaluation import _element_loads, as_vector
from .augmented_tree import (
    _as_absolute,
    _raise_tree,
    _tree_workspace,
    empty_kkt_structure,
    joint_row_starts,
    kkt_structure,
)
from .kinematics import _com_state
from .loops import FILTER_RCOND, POSITION_RCOND, RedundantConstraintWarning, loop_structure

# relative singular-value cut-off of the auxiliary (loop, driver) multiplier solve of the tree solver, as the
# recursive loop layer's: below it a row counts as redundant and the multipliers are the minimum-norm ones
RCOND = 1e-10


_SPATIAL_FUNCTIONS = ("absolute_from_joint", "joint_from_absolute", "constraints", "forward_dynamics", "loop_forces",
                      "project")


def _planar_only(model, name):
    """TypeError for a Model3D in a function of the planar absolute coordinates (x, y, theta) a body (the spatial
    ones are (c, quat), their mass matrix turns with the bodies: ``augmented3d``)."""
    if isinstance(model, Model3D):
        offered = ", ".join(_SPATIAL_FUNCTIONS)
        raise TypeError(f"rm.augmented.{name} takes a planar Model (x, y, theta a body), not a Model3D; for a Model3D "
                        f"rm.augmented offers {offered}")


def _absolute(model, z, what):
    """An absolute-coordinate array (nbodies, 3) or (3 nbodies,) of finite reals as a float64 (nbodies, 3) array;
    TypeError for what is not a Model or not real numbers, StateError naming ``what`` for a shape or a NaN."""
    workspace(model)  # compiles the model
    n = model.nbodies
    z = _checks.finite_array(z, what)
    if z.shape not in ((n, 3), (3 * n,)):
        raise StateError(f"{what} must have shape ({n}, 3) or ({3 * n},) for this model, got {z.shape}")
    return z.reshape(n, 3)


def _options(t, alpha=0.0, beta=0.0):
    return _checks.real(t, "t"), _checks.real(alpha, "alpha"), _checks.real(beta, "beta")


def _perp(v):
    """Rotate (..., 2) vectors by +90 degrees: (x, y) -> (-y, x)."""
    return np.stack((-v[..., 1], v[..., 0]), axis=-1)


def _rotate(theta, v):
    c, s = np.cos(theta), np.sin(theta)
    return np.stack((c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1]), axis=-1)


def absolute_from_joint(model, q, qd):
    """Absolute coordinates of the centres of mass from joint coordinates.

    Returns
    -------
    z, zd : ndarray, shape (nbodies, 3)
        (x, y, theta) of every centre of mass [m, m, rad] and their rates. A spatial model (``Model3D``, q and
        v (nv,)): z (nbodies, 7) = (centre of mass, quaternion (w, x, y, z) of the body-to-ground rotation) and
        zd (nbodies, 6) = (velocity of the centre of mass, angular velocity), ground axes (``augmented3d``).
    """
    if isinstance(model, Model3D):
        return augmented3d.absolute_from_joint(model, q, qd)
    com, theta, _, _, omega = _com_state(model, q, qd)
    return np.column_stack((com[:, :2], theta)), np.column_stack((com[:, 2:], omega))


class _Geometry:
    """Joint points, axes and their rates at the absolute state (z, zd), vectorised over the bodies."""

    def __init__(self, model, z, zd):
        model._require_compiled()
        self.model = model
        n = model.nbodies
        self.parent = model.body_parent
        self.jtype = model.joint_type
        has_parent = self.parent >= 0
        p = np.where(has_parent, self.parent, 0)
        zero = np.zeros(n)
        self.has_parent = has_parent
        self.theta_p = np.where(has_parent, z[p, 2], zero)
        self.omega_p = np.where(has_parent, zd[p, 2], zero)
        c_p = np.where(has_parent[:, None], z[p, :2], 0.0)
        v_p = np.where(has_parent[:, None], zd[p, :2], 0.0)
        real = model.body_real
        self.arm_p = _rotate(self.theta_p, real[:, L.PPX:L.PPX + 2])  # A_p s_p
        self.arm_c = _rotate(z[:, 2], -real[:, L.COX:L.COX + 2])  # A_c s_c
        self.point_p = c_p + self.arm_p
        self.point_c = z[:, :2] + self.arm_c
        self.gap = self.point_c - self.point_p  # D = P_c - P_p
        self.gap_rate = (zd[:, :2] + zd[:, 2:3] * _perp(self.arm_c)) - (v_p + self.omega_p[:, None] * _perp(self.arm_p))
        self.axis = _rotate(self.theta_p, real[:, L.AXX:L.AXX + 2])  # u_g (prismatic)
        self.normal = _perp(self.axis)
        self.theta = z[:, 2]
        self.omega = zd[:, 2]
        self.angle = real[:, L.ANGLE]


def joint_from_absolute(model, z, zd):
    """Joint coordinates and rates from absolute ones (exact where the constraints hold).

    Parameters
    ----------
    z, zd : array_like, shape (nbodies, 3)

    Returns
    -------
    q, qd : ndarray, shape (nq,)
        (A spatial model: q (nq,) and v (nv,), from z (nbodies, 7) and zd (nbodies, 6).)
    """
    if isinstance(model, Model3D):
        return augmented3d.joint_from_absolute(model, z, zd)
    z = _absolute(model, z, "z")
    zd = _absolute(model, zd, "zd")
    g = _Geometry(model, z, zd)
    q = np.zeros(model.nq)
    qd = np.zeros(model.nq)
    index, jt = model.joint_q_index, g.jtype
    rel_angle = g.theta - g.theta_p - g.angle
    rel_rate = g.omega - g.omega_p
    rot = (jt == joints.REVOLUTE) | (jt == joints.PLANAR)
    k = index[rot] + np.where(jt[rot] == joints.PLANAR, 2, 0)
    q[k], qd[k] = rel_angle[rot], rel_rate[rot]
    pri = jt == joints.PRISMATIC  # q = u_g . D
    q[index[pri]] = np.einsum("ij,ij->i", g.axis[pri], g.gap[pri])
    qd[index[pri]] = (np.einsum("ij,ij->i", g.axis[pri], g.gap_rate[pri])
                      + g.omega_p[pri] * np.einsum("ij,ij->i", _perp(g.axis[pri]), g.gap[pri]))
    pla = jt == joints.PLANAR  # (x, y) = A_p^T D
    back = -g.theta_p[pla]
    xy = _rotate(back, g.gap[pla])
    xy_rate = _rotate(back, g.gap_rate[pla] - g.omega_p[pla][:, None] * _perp(g.gap[pla]))
    q[index[pla]], q[index[pla] + 1] = xy[:, 0], xy[:, 1]
    qd[index[pla]], qd[index[pla] + 1] = xy_rate[:, 0], xy_rate[:, 1]
    return q, qd


class _Triplets:
    """Coordinate-format entries of a sparse matrix, added a block of bodies at a time."""

    def __init__(self):
        self.rows, self.cols, self.vals = [], [], []

    def add(self, rows, cols, vals, where=None):
        """Entries (rows, cols, vals), broadcast together, for the bodies selected by the mask ``where``."""
        rows, cols, vals = np.broadcast_arrays(rows, cols, vals)
        if where is not None:
            rows, cols, vals = rows[where], cols[where], vals[where]
        self.rows.append(rows)
        self.cols.append(cols)
        self.vals.append(vals)

    def matrix(self, shape):
        return scipy.sparse.csr_matrix(
            (np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))), shape=shape)


def constraints(model, z, zd, t=0.0, drivers=()):
    """Constraint residual C, Jacobian C_z, its rate C' and gamma of C_z z'' = gamma.

    Rows: the joints body by body, then the loops, then one row q_k(z) - f(t) per driver in ``drivers`` (a list
    of (coordinate k, evaluate(t) -> (f, f', f''))): prescribed joint motion as a rheonomic constraint.

    Returns
    -------
    C : ndarray (m,), Cz : scipy.sparse.csr_matrix (m, 3 nbodies), C_dot : ndarray (m,), gamma : ndarray (m,)
        (A spatial model: Cz is the velocity Jacobian C_v (m, 6 nbodies), rows in ``augmented3d``'s order; no
        drivers.)
    """
    if isinstance(model, Model3D):
        if len(drivers):
            raise ModelError("drivers are not supported by the augmented formulation of a spatial model")
        return augmented3d.constraints(model, z, zd, t)
    z = _absolute(model, z, "z")
    zd = _absolute(model, zd, "zd")
    g = _Geometry(model, z, zd)
    starts = joint_row_starts(model)
    m = int(starts[-1])
    residual, gamma = np.zeros(m), np.zeros(m)
    entries = _Triplets()
    add = entries.add

    body = np.arange(model.nbodies)
    parent = np.where(g.has_parent, g.parent, 0)
    jt = g.jtype
    # P_p - P_c = 0 (revolute, fixed), eq. (8)
    point = np.flatnonzero((jt == joints.REVOLUTE) | (jt == joints.FIXED))
    for axis in range(2):
        r = starts[point] + axis
        residual[r] = -g.gap[point, axis]
        gamma[r] = g.arm_p[point, axis] * g.omega_p[point] ** 2 - g.arm_c[point, axis] * g.omega[point] ** 2
        add(r, 3 * body[point] + axis, -1.0)
        add(r, 3 * body[point] + 2, -_perp(g.arm_c[point])[:, axis])
        with_parent = g.has_parent[point]
        add(r, 3 * parent[point] + axis, 1.0, with_parent)
        add(r, 3 * parent[point] + 2, _perp(g.arm_p[point])[:, axis], with_parent)
    # n_p . (P_c - P_p) = 0 (prismatic), eq. (9)
    pri = np.flatnonzero(jt == joints.PRISMATIC)
    r = starts[pri]
    n, d, d_rate = g.normal[pri], g.gap[pri], g.gap_rate[pri]
    w_p, w_c = g.omega_p[pri], g.omega[pri]
    dot = np.einsum
    residual[r] = dot("ij,ij->i", n, d)
    curve = -g.arm_c[pri] * (w_c**2)[:, None] + g.arm_p[pri] * (w_p**2)[:, None]
    gamma[r] = -(-(w_p**2) * residual[r] + 2.0 * w_p * dot("ij,ij->i", _perp(n), d_rate) + dot("ij,ij->i", n, curve))
    add(r, 3 * body[pri], n[:, 0])
    add(r, 3 * body[pri] + 1, n[:, 1])
    add(r, 3 * body[pri] + 2, dot("ij,ij->i", n, _perp(g.arm_c[pri])))
    with_parent = g.has_parent[pri]
    add(r, 3 * parent[pri], -n[:, 0], with_parent)
    add(r, 3 * parent[pri] + 1, -n[:, 1], with_parent)
    add(r, 3 * parent[pri] + 2, dot("ij,ij->i", _perp(n), d) - dot("ij,ij->i", n, _perp(g.arm_p[pri])), with_parent)
    # theta_c - theta_p - angle = 0 (prismatic, fixed)
    ang = np.flatnonzero((jt == joints.PRISMATIC) | (jt == joints.FIXED))
    r = starts[ang] + np.where(jt[ang] == joints.FIXED, 2, 1)
    residual[r] = g.theta[ang] - g.theta_p[ang] - g.angle[ang]
    add(r, 3 * body[ang] + 2, 1.0)
    add(r, 3 * parent[ang] + 2, -1.0, g.has_parent[ang])
    loop_residual, loop_gamma, _ = _loop_rows(model, z, zd, m, add)
    cz = entries.matrix((m + loop_residual.size, 3 * model.nbodies))
    residual = np.concatenate((residual, loop_residual))
    gamma = np.concatenate((gamma, loop_gamma))
    rate = cz @ zd.reshape(-1)
    if len(drivers):
        coords = [k for k, _ in drivers]
        values = np.array([evaluate(t) for _, evaluate in drivers], dtype=float).reshape(-1, 3)
        q, qd = joint_from_absolute(model, z, zd)
        bias = joint_accelerations(model, z, zd, np.zeros_like(z))  # q'' at z'' = 0
        cz = scipy.sparse.vstack((cz, joint_jacobian(model, z)[coords])).tocsr()
        residual = np.concatenate((residual, q[coords] - values[:, 0]))
        rate = np.concatenate((rate, qd[coords] - values[:, 1]))
        gamma = np.concatenate((gamma, values[:, 2] - bias[coords]))
    for value, what in ((residual, "C"), (cz.data, "C_z"), (rate, "C_dot"), (gamma, "gamma")):
        _checks.check_finite_result(value, f"the augmented constraints: {what}")
    return residual, cz, rate, gamma


def _loop_point(model, z, zd, body, local):
    """Arm A s (from the centre of mass), point, velocity, acceleration at zdd = 0, angle, rate of a loop point."""
    if body < 0:
        return np.zeros(2), local, np.zeros(2), np.zeros(2), 0.0, 0.0
    theta, omega = z[body, 2], zd[body, 2]
    arm = _rotate(theta, local)
    return (arm, z[body, :2] + arm, zd[body, :2] + omega * _perp(arm), -(omega**2) * arm, theta, omega)


def _loop_rows(model, z, zd, first_row, add):
    """The loop equations of ``Model.add_loop`` in absolute coordinates: residual and gamma, Jacobian entries
    added from row ``first_row`` on, and the row weights (rows, 6) = (w_a, w_b). Each row is
    w_a . (P_a', theta_a') + w_b . (P_b', theta_b') with P' = c' + theta' perp(A s), so its entries on body k are
    (w_x, w_y, w_theta + w . perp(A s))."""
    residual, gamma, weights = [], [], []
    for lp in range(model.nloops):
        kind = model.loop_int[lp, L.LKIND]
        a, b = model.loop_int[lp, L.LBODY_A], model.loop_int[lp, L.LBODY_B]
        real = model.loop_real[lp]
        arm_a, p_a, v_a, acc_a, th_a, om_a = _loop_point(model, z, zd, a, real[L.LPAX:L.LPAX + 2])
        arm_b, p_b, v_b, acc_b, th_b, om_b = _loop_point(model, z, zd, b, real[L.LPBX:L.LPBX + 2])
        d, d_rate, d_acc = p_a - p_b, v_a - v_b, acc_a - acc_b
        rows = []  # (w_a (3,), w_b (3,), residual, gamma)
        if kind in (L.LOOP_REVOLUTE, L.LOOP_FIXED):
            for axis in range(2):
                w = np.eye(3)[axis]
                rows.append((w, -w, d[axis], -d_acc[axis]))
        elif kind == L.LOOP_PRISMATIC:
            normal = _perp(_rotate(th_b, real[L.LAXX:L.LAXX + 2]))
            offset = normal @ d
            rows.append((np.array([*normal, 0.0]), np.array([*-normal, _perp(normal) @ d]), offset,
                         -(normal @ d_acc - om_b**2 * offset + 2.0 * om_b * _perp(normal) @ d_rate)))
        else:
            length = float(np.hypot(*d))
            if not length > 0.0:
                raise ModelError(f"loop {model.loop_names[lp]!r}: the two points of the distance loop coincide")
            e = d / length
            rate = e @ d_rate
            rows.append((np.array([*e, 0.0]), np.array([*-e, 0.0]), length - real[L.LLENGTH],
                         -(e @ d_acc + (d_rate @ d_rate - rate**2) / length)))
        if kind in (L.LOOP_PRISMATIC, L.LOOP_FIXED):
            rel = th_a - th_b - real[L.LANGLE]
            rows.append((np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, -1.0]), np.arctan2(np.sin(rel), np.cos(rel)),
                         0.0))
        for w_a, w_b, value, acc in rows:
            r = first_row + len(residual)
            for body, arm, w in ((a, arm_a, w_a), (b, arm_b, w_b)):
                if body >= 0:
                    add(r, 3 * body + np.arange(3), np.array([w[0], w[1], w[2] + w[:2] @ _perp(arm)]))
            residual.append(value)
            gamma.append(acc)
            weights.append(np.concatenate((w_a, w_b)))
    return np.array(residual), np.array(gamma), np.array(weights).reshape(-1, 6)


def loop_forces(model, z, zd, lam):
    """Loop forces (nloops, 2, 3): (Fx, Fy, moment) on body a at its loop point and on body b (or the ground) at
    its loop point, from the loop multipliers (the last ``model.nconstraints`` entries of lam), as
    ``rm.loop_dynamics`` gives: the force of row r on side k is -lambda_r w_k,r (``_loop_rows``). A spatial model:
    (nloops, 2, 6), (force at the loop point, moment), ground axes (``augmented3d.loop_forces``)."""
    if isinstance(model, Model3D):
        return augmented3d.loop_forces(model, z, zd, lam)
    z = _absolute(model, z, "z")
    zd = _absolute(model, zd, "zd")
    _, _, weights = _loop_rows(model, z, zd, 0, lambda *args: None)
    from .loops import forces_from_multipliers  # noqa: PLC0415  (loops imports dynamics, as this module does)

    lam = _checks.finite_array(lam, "lam", (None,))
    if lam.size < model.nconstraints:
        raise StateError(f"lam must hold at least the {model.nconstraints} loop multipliers, got {lam.size}")
    return forces_from_multipliers(model, lam[lam.size - model.nconstraints:], weights)


def joint_jacobian(model, z):
    """d q / d z, shape (nq, 3 nbodies), sparse: maps joint forces to absolute ones, Q_z = J^T tau."""
    _planar_only(model, "joint_jacobian")
    z = _absolute(model, z, "z")
    g = _Geometry(model, z, np.zeros_like(z))
    index = model.joint_q_index
    body = np.arange(model.nbodies)
    parent = np.where(g.has_parent, g.parent, 0)
    jt = g.jtype
    entries = _Triplets()
    add = entries.add

    # relative angle rows: revolute q, planar phi
    rot = np.flatnonzero((jt == joints.REVOLUTE) | (jt == joints.PLANAR))
    r = index[rot] + np.where(jt[rot] == joints.PLANAR, 2, 0)
    add(r, 3 * body[rot] + 2, 1.0)
    add(r, 3 * parent[rot] + 2, -1.0, g.has_parent[rot])
    # slide rows: dq = u . dD + dtheta_p e, dD = dc_c + dtheta_c perp(arm_c) - dc_p - dtheta_p perp(arm_p)
    pri = np.flatnonzero(jt == joints.PRISMATIC)
    pla = np.flatnonzero(jt == joints.PLANAR)
    ex = _rotate(g.theta_p[pla], np.array([1.0, 0.0]))
    ey = _rotate(g.theta_p[pla], np.array([0.0, 1.0]))
    perp_gap = _perp(g.gap[pla])
    slides = (  # (bodies, rows, directions u, extra parent-angle term e)
        (pri, index[pri], g.axis[pri], np.einsum("ij,ij->i", _perp(g.axis[pri]), g.gap[pri])),
        (pla, index[pla], ex, -np.einsum("ij,ij->i", ex, perp_gap)),  # (A_p^T D) = A_p^T (dD - dtheta_p perp(D))
        (pla, index[pla] + 1, ey, -np.einsum("ij,ij->i", ey, perp_gap)),
    )
    for bodies, r, u, extra in slides:
        add(r, 3 * body[bodies], u[:, 0])
        add(r, 3 * body[bodies] + 1, u[:, 1])
        add(r, 3 * body[bodies] + 2, np.einsum("ij,ij->i", u, _perp(g.arm_c[bodies])))
        with_parent = g.has_parent[bodies]
        add(r, 3 * parent[bodies], -u[:, 0], with_parent)
        add(r, 3 * parent[bodies] + 1, -u[:, 1], with_parent)
        add(r, 3 * parent[bodies] + 2, extra - np.einsum("ij,ij->i", u, _perp(g.arm_p[bodies])), with_parent)
    return entries.matrix((model.nq, 3 * model.nbodies))


def mass_matrix(model):
    """The constant absolute-coordinate mass matrix diag(m, m, J) per body, sparse (3 nbodies, 3 nbodies)."""
    _planar_only(model, "mass_matrix")
    model._require_compiled()
    diagonal = np.column_stack((model.body_mass, model.body_mass, model.body_inertia)).reshape(-1)
    return scipy.sparse.diags(diagonal, format="csr")


def applied_forces(model, z, zd, tau=None, t=0.0, powers=None):
    """Q: gravity, the force elements and the joint forces tau on the absolute coordinates, shape (3 nbodies,).

    ``powers`` (2,), if given, receives the power dissipated by the dampers and the power of tau and the applied
    forces [W] (the integrands of ``SimulationResult.dissipated_work`` / ``applied_work``).
    """
    _planar_only(model, "applied_forces")
    ws = workspace(model)  # compiles the model
    t = _checks.real(t, "t")
    q, qd = joint_from_absolute(model, z, zd)
    tau = np.zeros(model.nq) if tau is None else as_vector(model, tau, "tau")
    gravity = np.outer(model.body_mass, model.gravity)
    forces = np.column_stack((gravity, np.zeros(model.nbodies)))
    joint_forces = tau.copy()
    if powers is not None:
        powers[:] = 0.0, tau @ qd
    if model.elem_int.shape[0]:
        _element_loads(model, ws, q, qd, float(t))
        forces += ws.wrench
        joint_forces += ws.jforce
        if powers is not None:
            powers += model._workspace.element_energy[1:]
    return forces.reshape(-1) + joint_jacobian(model, z).T @ joint_forces


def _driver_rows(model, z, zd, t, drivers, alpha, beta, aux_body, aux_coef, aux_rhs, aux_res):
    """Rows q_k(z) - f(t) = 0 of the drivers as auxiliary rows (Python: drivers are few and rare)."""
    coords = [k for k, _ in drivers]
    values = np.array([evaluate(t) for _, evaluate in drivers], dtype=float).reshape(-1, 3)
    q, qd = joint_from_absolute(model, z, zd)
    bias = joint_accelerations(model, z, zd, np.zeros_like(z))  # q'' at z'' = 0
    rows = joint_jacobian(model, z)[coords].toarray()
    owner = np.searchsorted(model.joint_q_index, coords, side="right") - 1  # the body whose joint has q_k
    for r, (k, body) in enumerate(zip(coords, owner, strict=True)):
        parent = model.body_parent[body]
        aux_body[r] = body, parent
        aux_coef[r, :3] = rows[r, 3 * body:3 * body + 3]
        aux_coef[r, 3:] = rows[r, 3 * parent:3 * parent + 3] if parent >= 0 else 0.0
        aux_res[r] = q[k] - values[r, 0]
        aux_rhs[r] = values[r, 2] - bias[k] - 2.0 * alpha * (qd[k] - values[r, 1]) - beta**2 * aux_res[r]


def _tree_forward_dynamics(model, z, zd, tau, t, alpha, beta, powers, drivers):
    """forward_dynamics(..., solver="tree"): the compiled O(N) route (``_kernels.augmented.tree``)."""
    _checks.require_model(model)
    tw = getattr(model, "_augmented_workspace", None)
    if tw is None:
        tw = _tree_workspace(model)
    z = _as_absolute(model, z, "z")
    zd = _as_absolute(model, zd, "zd")
    tau = tw.no_tau if tau is None else as_vector(model, tau, "tau")
    wrench, joint_forces = tw.no_wrench, tau
    if model.elem_int.shape[0]:
        ws = workspace(model)  # the shared element evaluation works on the recursive route's workspace
        kernels.joint_coordinates(model.body_int, model.body_real, z, zd, tw.q, tw.qd)
        _element_loads(model, ws, tw.q, tw.qd, float(t))
        wrench = ws.wrench
        joint_forces = ws.jforce + tau if tau.size else ws.jforce
    tw.stab[0] = alpha
    tw.stab[1] = beta
    aux = tw.aux
    if len(drivers):
        aux = tw._aux_arrays(model.nbodies, tw.loop_rows + len(drivers))
    k = 0 if aux is None else aux[0].shape[0]
    n = z.shape[0]
    zdd = np.empty((n, 3))
    lam = np.empty(tw.tree_rows + k)
    status = kernels.factor_and_solve(model.body_int, model.body_real, model.gravity, tw.row_start, z, zd,
                                      joint_forces, wrench, tw.stab, tw.factor, tw.scratch, zdd, lam, tw.power)
    if status:
        _raise_tree(model, status)
    if k:
        aux_body, aux_coef, aux_rhs, aux_res, xb, xj, schur, info = aux
        if tw.loop_rows:
            status = loop_kernels.loop_rows(model.loop_int, model.loop_real, z, zd, tw.stab, aux_body, aux_coef,
                                            aux_rhs, aux_res)
            if status:
                _raise_tree(model, status)
        if len(drivers):
            m = tw.loop_rows
            _driver_rows(model, z, zd, t, drivers, alpha, beta, aux_body[m:], aux_coef[m:], aux_rhs[m:],
                         aux_res[m:])
        kernels.add_auxiliary_rows(model.body_int, model.body_real, tw.row_start, tw.factor, aux_body, aux_coef,
                                   aux_rhs, RCOND, 0.0, zdd, lam, xb, xj, schur, info)
        if info[0] < k:
            _checks.warn(f"the loop and driver equations are redundant or singular at this state: rank {info[0]} "
                         f"of {k}; the multipliers are the minimum-norm ones", RedundantConstraintWarning)
    if not math.isfinite(zdd.sum() + lam.sum()):  # one reduction: a NaN or inf anywhere makes the sum non-finite
        _checks.check_finite_result(zdd, "zdd")
        _checks.check_finite_result(lam, "lam")
    if powers is not None:
        powers[0] = 0.0
        if model.elem_int.shape[0]:
            powers[1] = float(tau @ tw.qd) if tau.size else 0.0
            powers += model._workspace.element_energy[1:]
        else:
            powers[1] = tw.power[0]
    return zdd, lam


def forward_dynamics(model, z, zd, tau=None, t=0.0, alpha=0.0, beta=0.0, solver="tree", powers=None, drivers=()):
    """Absolute accelerations and multipliers from the KKT system (the two-squares tutorial, eqs. 10, 13, 15-17).

    Parameters
    ----------
    z, zd : array_like, shape (nbodies, 3)
        Centre-of-mass coordinates (x, y, theta) and rates.
    tau : array_like (nq,), optional
        Joint forces, as in the recursive formulation.
    alpha, beta : float
        Baumgarte parameters: the acceleration constraint becomes C'' + 2 alpha C' + beta^2 C = 0.
    solver : {"tree", "sparse", "dense", "filtered"}
        "tree" (default): the compiled tree-ordered block elimination (Baraff 1996), O(N) time and memory, with
        loops and drivers as auxiliary rows by a Schur complement, O(c N) for c colours of such rows that act on
        disjoint subtrees from the ground (c <= k; 4 in a row of parallelograms); redundant loop or driver
        rows give the minimum-norm multipliers and a ``RedundantConstraintWarning`` (the tree joints themselves
        are never redundant). "sparse": scipy's sparse LU of the assembled KKT matrix; "dense": dense LU. Both
        raise ModelError on a singular (redundant) system. "filtered": the Schur complement C M^-1 C^T solved by
        the regularised minimum-norm solve of the loop layer (``_kernels.planar.loops.filtered_solve``), dense, for
        mechanisms that pass singular positions (the default of ``simulate`` for models with loops).
        A spatial model (``Model3D``: z (nbodies, 7), zd (nbodies, 6), tau (nv,); ``augmented3d``) takes "tree",
        "sparse" and "dense", loops as on a planar one; no drivers or powers.
    powers : ndarray (2,), optional
        Receives the power dissipated by the dampers and the power of tau and the applied forces [W].

    Returns
    -------
    zdd : ndarray, shape (nbodies, 3)
    lam : ndarray, shape (m,)
        Multipliers: the joints' rows body by body, then the loops', then the drivers'; -C_z^T lam are the
        constraint forces on the absolute coordinates.
    """
    try:
        short = model._augmented_workspace.short
    except AttributeError:  # not a Model, or no tree workspace yet: the full route says what is wrong or makes it
        short = None
    if (short and solver == "tree" and powers is None and drivers.__class__ is tuple and not drivers
            and alpha.__class__ is float and alpha == 0.0 and beta.__class__ is float and beta == 0.0
            and t.__class__ is float and -math.inf < t < math.inf
            and (tau is None or (tau.__class__ is np.ndarray and tau.shape == short[7]))):
        # the short path: numba's dispatch of the fixed-signature kernel checks the dtype, layout and writability of
        # z, zd and tau, the kernel their shapes and finiteness and the results'; anything it refuses (a list, a
        # (3 nbodies,) vector, float32, a NaN, a singular pivot) takes the full route, which converts or raises
        kernel, body_int, body_real, row_start, factor, no_tau, rows, _ = short
        zdd = np.empty((body_int.shape[0], 3))
        lam = np.empty(rows)
        try:
            status = kernel(body_int, body_real, row_start, z, zd, no_tau if tau is None else tau, factor, zdd, lam)
        except TypeError:
            status = entry.BAD_SHAPE
        if not status:
            return zdd, lam
    if isinstance(model, Model3D):
        if len(drivers) or powers is not None:
            raise ModelError("drivers and powers are not supported by the augmented formulation of a spatial model")
        return augmented3d.forward_dynamics(model, z, zd, tau, t, alpha, beta, solver)
    t, alpha, beta = _options(t, alpha, beta)
    if solver == "tree":
        return _tree_forward_dynamics(model, z, zd, tau, t, alpha, beta, powers, drivers)
    z = _absolute(model, z, "z")
    zd = _absolute(model, zd, "zd")
    residual, cz, rate, gamma = constraints(model, z, zd, t, drivers)
    rhs_c = gamma - 2.0 * alpha * rate - beta * beta * residual  # beta * beta: inf on overflow, caught below
    q_force = applied_forces(model, z, zd, tau, t, powers)
    m = residual.size
    if solver == "filtered":
        return _filtered_dynamics(model, cz, q_force, rhs_c)
    kkt = scipy.sparse.bmat([[mass_matrix(model), cz.T], [cz, None]], format="csc")
    rhs = np.concatenate((q_force, rhs_c))
    singular = ModelError(f"the augmented system is singular at this state: the {m} constraint equations on "
                          f"{3 * model.nbodies} coordinates are redundant or degenerate (the recursive route "
                          "handles redundant loops: rm.loop_dynamics, and so does solver='tree')")
    if solver == "sparse":
        try:
            factor = scipy.sparse.linalg.splu(kkt)
        except RuntimeError:  # "Factor is exactly singular"
            raise singular from None
        pivots = np.abs(factor.U.diagonal())
        solution = factor.solve(rhs)
    elif solver == "dense":
        try:
            lu, piv = scipy.linalg.lu_factor(kkt.toarray(), check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            raise singular from None
        pivots = np.abs(np.diag(lu))
        solution = scipy.linalg.lu_solve((lu, piv), rhs, check_finite=False)
    else:
        raise ValueError(f"unknown solver {solver!r}; expected 'tree', 'sparse', 'dense' or 'filtered'")
    # LU with pivoting leaves a round-off-sized pivot for every dependent equation
    if pivots.size and not pivots.min() > 1e-11 * pivots.max():
        raise singular
    _checks.check_finite_result(solution, "the solution (zdd, lam) of the augmented system")
    return solution[:3 * model.nbodies].reshape(model.nbodies, 3), solution[3 * model.nbodies:]


# above this many constraint rows the dense regularised solves give way to sparse factorisations (large chains)
DENSE_ROWS = 600


def _solve_metric(model, cz):
    """(W^-1, rho) of the metric W = M + rho C^T C of the filtered solves: W^-1 the diagonal M^-1 as a vector
    (rho = 0) where every body has mass and inertia, else a dense matrix. Massless coordinates (a point-mass
    slider's angle) leave M singular; adding rho C^T C changes neither the KKT solution (its rows add rho C^T
    times the constraint rows) nor the metric on the admissible motions (C dz = 0), where it stays M."""
    diagonal = np.column_stack((model.body_mass, model.body_mass, model.body_inertia)).reshape(-1)
    if np.all(diagonal > 0.0):
        return 1.0 / diagonal, 0.0
    dense = cz.toarray() if scipy.sparse.issparse(cz) else np.asarray(cz, dtype=float)
    normal = dense.T @ dense
    rho = diagonal[diagonal > 0.0].mean() / max(np.diag(normal).mean(), np.finfo(float).tiny)
    return np.linalg.inv(np.diag(diagonal) + rho * normal), rho


def _apply(inverse, x):
    """W^-1 x for the (vector or matrix) inverse metric of ``_solve_metric``; x (3 nbodies,) or (3 nbodies, k)."""
    return (inverse * x.T).T if inverse.ndim == 1 else inverse @ x


def _filtered_multipliers(model, cz, rhs, metric=None):
    """(Y = W^-1 C^T (3 nbodies, m), c = f(C W^-1 C^T) rhs, the numerical rank): the regularised minimum-norm
    solve of the loop layer (``_kernels.planar.loops.filtered_solve``) on the Schur complement, W = M in general
    (``_solve_metric``); M is diagonal, so it costs O(m^2 nbodies). Beyond ``DENSE_ROWS`` rows (large chains,
    all bodies massive): a sparse solve of the (then assumed regular) Schur complement, rank m."""
    inverse, _ = _solve_metric(model, cz) if metric is None else metric
    if cz.shape[0] > DENSE_ROWS and scipy.sparse.issparse(cz) and inverse.ndim == 1:
        resp = scipy.sparse.diags(inverse) @ cz.T
        return resp, scipy.sparse.linalg.spsolve((cz @ resp).tocsc(), rhs), cz.shape[0]
    cz = cz.toarray() if scipy.sparse.issparse(cz) else np.asarray(cz, dtype=float)
    resp = np.ascontiguousarray(_apply(inverse, cz.T))
    gram = cz @ resp
    gram = np.ascontiguousarray(0.5 * (gram + gram.T))
    coef = np.zeros(cz.shape[0])
    rank = loop_kernels.filtered_solve(gram, np.ascontiguousarray(rhs, dtype=float), FILTER_RCOND, coef)
    if rank < 0:
        raise StateError("the multiplier solve overflowed: C M^-1 C^T or its right-hand side is not finite at this "
                         "state (z, zd or the forces too large)")
    return resp, coef, rank


def _filtered_dynamics(model, cz, q_force, rhs_c):
    """zdd, lam of the KKT system by the Schur complement: C W^-1 C^T lam = C W^-1 Q~ - rhs_c, zdd = W^-1 (Q~ -
    C^T lam), Q~ = Q + rho C^T rhs_c (``_solve_metric``), with the regularised solve (bounded multipliers
    through rank drops)."""
    metric = _solve_metric(model, cz)
    force = q_force + metric[1] * (cz.T @ rhs_c)
    free_motion = _apply(metric[0], force)
    resp, lam, _ = _filtered_multipliers(model, cz, cz @ free_motion - rhs_c, metric)
    zdd = free_motion - resp @ lam
    return zdd.reshape(model.nbodies, 3), lam


def joint_accelerations(model, z, zd, zdd):
    """Joint accelerations qdd from absolute ones: qdd = J zdd + (the velocity-product part of q(z)'')."""
    _planar_only(model, "joint_accelerations")
    z = _absolute(model, z, "z")
    zd = _absolute(model, zd, "zd")
    g = _Geometry(model, z, zd)
    qdd = joint_jacobian(model, z) @ _absolute(model, zdd, "zdd").reshape(-1)
    index, jt = model.joint_q_index, g.jtype
    w_p = g.omega_p[:, None]
    curve = -g.arm_c * (g.omega**2)[:, None] + g.arm_p * w_p**2  # D'' at zero accelerations
    pri = jt == joints.PRISMATIC  # (u_g . D)'' with zdd = 0
    u = g.axis[pri]
    qdd[index[pri]] += (-(g.omega_p[pri] ** 2) * np.einsum("ij,ij->i", u, g.gap[pri])
                        + 2.0 * g.omega_p[pri] * np.einsum("ij,ij->i", _perp(u), g.gap_rate[pri])
                        + np.einsum("ij,ij->i", u, curve[pri]))
    pla = jt == joints.PLANAR  # (A_p^T D)'' with zdd = 0 = A_p^T (-w^2 D - 2 w perp(D') + D''_0)
    extra = _rotate(-g.theta_p[pla], -(w_p[pla] ** 2) * g.gap[pla] - 2.0 * w_p[pla] * _perp(g.gap_rate[pla])
                    + curve[pla])
    qdd[index[pla]] += extra[:, 0]
    qdd[index[pla] + 1] += extra[:, 1]
    return qdd


def joint_constraint_forces(model, z, zd, lam):
    """Force and moment each joint's constraint exerts on its child body, at the child's centre of mass.

    Returns
    -------
    ndarray, shape (nbodies, 3)
        Row i: (Fx, Fy, moment) from the constraint equations of body i's parent joint, ground axes [N, N m]
        (zero for planar joints). Actuation (tau along a joint's free direction) is not included.
    """
    _planar_only(model, "joint_constraint_forces")
    z = _absolute(model, z, "z")
    _, cz, _, _ = constraints(model, z, zd)
    lam = _checks.finite_array(lam, "lam", (cz.shape[0],))
    starts = joint_row_starts(model)
    cz = cz.tocsr()
    forces = np.zeros((model.nbodies, 3))
    for i in range(model.nbodies):
        rows = slice(starts[i], starts[i + 1])
        forces[i] = -(cz[rows, 3 * i:3 * i + 3].T @ lam[rows])
    return forces


def state_derivative(model, t, y, tau=None, alpha=0.0, beta=0.0, solver="tree", drivers=()):
    """y' for y = (z, zd, W_dissipated, W_applied) flattened, shape (6 nbodies + 2,), or (z, zd) without the
    work terms (6 nbodies,): hand it to scipy.integrate.solve_ivp. ``tau``: None, (nq,), or tau(t) / tau(t, q, qd).
    """
    _planar_only(model, "state_derivative")
    workspace(model)
    n = model.nbodies
    y = _checks.finite_array(y, "y", (None,))
    if y.size not in (6 * n, 6 * n + 2):
        raise StateError(f"y must have {6 * n} or {6 * n + 2} entries for this model, got {y.size}")
    z, zd = y[:3 * n].reshape(n, 3), y[3 * n:6 * n].reshape(n, 3)
    if callable(tau):
        name = getattr(tau, "__name__", "tau")
        try:
            value = tau(t, *joint_from_absolute(model, z, zd)) if _checks.arity(tau, "tau") == 3 else tau(t)
            tau = np.asarray(value, dtype=float).reshape(-1)
        except Exception as err:  # noqa: BLE001 - say when the user's function failed
            raise StateError(f"tau function {name!r} raised at t = {t:g}: {err!r}") from err
        if tau.shape != (model.nq,) or not np.all(np.isfinite(tau)):  # a NaN torque is no zero torque
            raise StateError(f"tau function must return {model.nq} finite numbers ({name!r} at t = {t:g} returned "
                             f"shape {tau.shape}: {np.array2string(tau, threshold=6)[:80]})")
    powers = np.zeros(2)
    zdd, lam = forward_dynamics(model, z, zd, tau, t, alpha, beta, solver, powers, drivers)
    if len(drivers):  # a driver's multiplier is minus its joint force: its power is -lambda_k f'(t)
        rates = np.array([evaluate(t)[1] for _, evaluate in drivers])
        powers[1] -= lam[len(lam) - len(drivers):] @ rates
    return np.concatenate((y[3 * n:6 * n], zdd.reshape(-1), powers[:y.size - 6 * n]))


def _warn_redundant(model, z, zd, t, drivers):
    """Warn once, before a run, when the constraints (joints, loops, drivers) are redundant at its start; the
    regularised solve then gives the minimum-norm multipliers, as the recursive route does."""
    from .loops import RedundantConstraintWarning  # noqa: PLC0415

    _, cz, _, _ = constraints(model, z, zd, t, drivers)
    rows = cz.shape[0]
    if not model.nconstraints or rows > DENSE_ROWS:
        return
    rank = _filtered_multipliers(model, cz, np.zeros(rows))[2]
    if rank < rows:
        _checks.warn(f"the constraint equations are redundant at the start: rank {rank} of {rows} (joints, loops "
                     "and drivers); the multipliers are the minimum-norm ones", RedundantConstraintWarning)


def project(model, z, zd, tol=1e-13, max_iter=20, t=0.0, drivers=()):
    """Project (z, zd) onto C(z) = 0 and C_z zd = 0, mass-orthogonally (the two-squares tutorial's projection
    alternative to Baumgarte). Returns new (z, zd), shape (nbodies, 3).

    Gauss-Newton with the steps dz = -M^-1 C_z^T (C_z M^-1 C_z^T)^+ C until the step and |C| are below ``tol``
    (the step, not |C|, is the distance to the constraints near a singular position), then the velocity correction
    dzd = -M^-1 C_z^T (C_z M^-1 C_z^T)^+ C_z zd, which leaves the kinetic energy unchanged to second order in the
    drift C_z zd (the derivation is in ``recursive_mbd._kernels.planar.loops.project``). (.)^+ is the regularised
    minimum-norm solve of the loop layer, so redundant constraints and rank drops are fine.

    A spatial model (``Model3D``: z (nbodies, 7), zd (nbodies, 6)): the joints', the loops' and the drivers' rows
    (k a revolute or prismatic joint's coordinate in q), by the tree factor (``augmented3d.project``, the
    projection of its augmented runs).
    """
    if isinstance(model, Model3D):
        return augmented3d.project(model, z, zd, tol, max_iter, t, drivers)
    z = _absolute(model, z, "z").copy()
    zd = _absolute(model, zd, "zd").copy()
    tol = _checks.real(tol, "tol", low=0.0)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    t = _checks.real(t, "t")
    last_step = np.inf
    for _ in range(max_iter):
        residual, cz, _, _ = constraints(model, z, zd, t, drivers)
        if residual.size == 0 or not np.any(residual):
            break
        resp, coef, _ = _filtered_multipliers(model, cz, residual)
        step = resp @ coef
        size = np.abs(step).max()
        if (np.abs(residual).max() <= tol and size <= tol) or not size < 0.5 * last_step:
            break
        last_step = size
        z -= step.reshape(model.nbodies, 3)
    _, cz, rate, _ = constraints(model, z, zd, t, drivers)
    if rate.size:
        resp, coef, _ = _filtered_multipliers(model, cz, rate)
        zd -= (resp @ coef).reshape(model.nbodies, 3)
    return z, zd


class TimeLoop:
    """The augmented formulation's pieces for the generic time loops of ``rm.simulate(formulation="augmented")``:
    the compiled system (``_kernels.augmented.system``: right-hand side, projection), the initial state and the
    map from the integrated states back to joint coordinates, absolute coordinates and the constraint drift.

    ``inputs`` is the run's input layout (``integrate._Inputs``: constant tau, the slots of tau and the drivers in
    the input vector, the driven coordinates); ``stabilization``: "baumgarte" (alpha, beta), "projection" (onto
    C = 0 and C' = 0 after every accepted step, tolerance ``projection_tol``) or "none". The KKT solves are the
    tree solver's, loops and drivers as auxiliary rows with minimum-norm multipliers where they are redundant.
    """

    name = "augmented"

    def __init__(self, model, inputs, stabilization="baumgarte", alpha=0.0, beta=0.0, projection_tol=1e-13):
        from .._kernels.augmented.system import AugmentedSystem  # noqa: PLC0415  (numba only to run)

        ws = workspace(model)  # compiles the model; the element evaluation uses its arrays
        n, nq = model.nbodies, model.nq
        row_start = joint_row_starts(model)
        coords = np.asarray(inputs.driven_coords, dtype=np.int64)
        # the body whose joint holds coordinate k: the last body whose first coordinate is <= k
        drv_body = (np.searchsorted(model.joint_q_index, coords, side="right") - 1).astype(np.int64)
        k = model.nconstraints + coords.size
        has_elements = model.elem_int.shape[0] > 0
        if stabilization != "baumgarte":
            alpha = beta = 0.0
        joint_state = has_elements or inputs.size > 0
        # change points: the branch is told in joint coordinates (the recursive loop layer's search), where every
        # joint has its coordinates as rows on z (``_kernels.augmented.system.coordinate_row``)
        m = model.nconstraints
        joint_branch = m > 0 and not np.any(model.joint_type == joints.PLANAR)
        self.model = model
        self.inputs = inputs
        self.system = AugmentedSystem(
            model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real, model.loop_int,
            model.loop_real, inputs.tau_const, np.array([inputs.tau_offset, inputs.driver_offset], dtype=np.int64),
            coords, drv_body, np.zeros(inputs.size), np.zeros(nq), np.zeros(nq), np.zeros(nq), ws.ws, ws.com,
            np.zeros((n if has_elements else 0, 3)), np.zeros(nq), np.zeros(3), np.zeros((model.elem_int.shape[0], 3)),
            np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3)), row_start, sparse_kkt.aligned_factor(n),
            np.zeros((4, 3)), np.array([float(alpha), float(beta), 0.0, 0.0]), np.zeros(1),
            np.zeros(int(row_start[-1]) + k), np.full((k, 2), -1, dtype=np.int64), np.zeros((k, 6)), np.zeros(k),
            np.zeros(k), np.zeros((n, 3)), np.zeros(int(row_start[-1])), np.zeros((k, k)), np.zeros(2, dtype=np.int64),
            (np.zeros((n, 3)), np.zeros(m), np.zeros(m), np.zeros((m, nq)), np.zeros(m), np.zeros((m, 6)),
             np.zeros((m, nq)), np.zeros(nq), readonly_zeros(2),
             loop_structure(model)),  # no gravity: read-only as the model's
            kkt_structure(model, row_start) if m > 0 and coords.size == 0 else empty_kkt_structure(),
            np.array([1.0 if stabilization == "projection" else 0.0, projection_tol, 20.0, RCOND,
                      1.0 if joint_state else 0.0, 1.0 if joint_branch else 0.0, POSITION_RCOND, FILTER_RCOND]))

    def initial_state(self, q0, qd0, t0, callback, key):
        """y0 = (z0, zd0, 0, 0) from the joint state (driven coordinates at their drivers), projected onto the
        constraints (the joints hold by construction; loops and drivers may need it); warns when the constraints
        are redundant at the start."""
        from .._kernels.augmented import system as augmented_system  # noqa: PLC0415

        q0, qd0 = q0.copy(), qd0.copy()
        for coord, name, evaluate in self.inputs.drivers:
            q0[coord], qd0[coord] = _checks.driver_value(name, evaluate, t0)[:2]
        z0, zd0 = absolute_from_joint(self.model, q0, qd0)
        driven = [(coord, functools.partial(_checks.driver_value, name, evaluate))
                  for coord, name, evaluate in self.inputs.drivers]
        _warn_redundant(self.model, z0, zd0, t0, driven)  # the caller of rm.simulate
        y0 = np.concatenate((z0.ravel(), zd0.ravel(), [0.0, 0.0]))
        system = self.system
        settings = system.settings.copy()
        system.settings[2] = 20.0
        status = augmented_system.project_state(callback, key, system, t0, y0)
        system.settings[:] = settings
        if status:
            _raise_tree(self.model, status)
        return y0

    def joint_states(self, t, y):
        """Joint coordinates and rates (nt, nq) of the integrated states y (nt, 6 nbodies + 2)."""
        n, nq = self.model.nbodies, self.model.nq
        y = np.atleast_2d(y)
        q, qd = np.zeros((y.shape[0], nq)), np.zeros((y.shape[0], nq))
        for row in range(y.shape[0]):
            z = np.ascontiguousarray(y[row, :3 * n].reshape(n, 3))
            zd = np.ascontiguousarray(y[row, 3 * n:6 * n].reshape(n, 3))
            kernels.joint_coordinates(self.model.body_int, self.model.body_real, z, zd, q[row], qd[row])
        return q, qd

    def work(self, y):
        return y[:, 6 * self.model.nbodies:]

    def finish(self, result, y, callback, key):
        """The absolute coordinates and the constraint drift max |C| (joints, loops, drivers) at every sample, and
        the run's system and inputs, to evaluate its dynamics again (``qdd``, ``driving_forces``)."""
        from .._kernels.augmented import system as augmented_system  # noqa: PLC0415

        result._evaluator = (callback, key, self.system, self.inputs, self)
        n = self.model.nbodies
        result.z = y[:, :3 * n].reshape(-1, n, 3)
        result.zd = y[:, 3 * n:6 * n].reshape(-1, n, 3)
        drift = np.zeros(y.shape[0])
        out = np.zeros(1)
        for row in range(y.shape[0]):
            augmented_system.constraint_gap(callback, key, self.system, float(result.t[row]),
                                            np.ascontiguousarray(y[row]), out)
            drift[row] = out[0]
        result.constraint_drift = drift

    def sample_state(self, result, i):
        """The integrated state y of sample i of ``result`` (its z, zd; zero work terms), for evaluating the run's
        dynamics there again."""
        return np.concatenate((result.z[i].ravel(), result.zd[i].ravel(), [0.0, 0.0]))

    def driving_forces_now(self):
        """(columns, forces): the driven coordinates and their drivers' forces or torques [N, N m] of the last
        evaluation of the system (minus the drivers' rows' multipliers)."""
        nd = self.system.drv_coord.shape[0]
        return self.system.drv_coord, -self.system.lam[self.system.lam.shape[0] - nd:]

    def accelerations_now(self):
        """The joint accelerations qdd (nq,) of the last evaluation of the system: its absolute accelerations
        mapped by ``joint_accelerations`` (a driven coordinate's is its driver's f'' where its row holds)."""
        system = self.system
        return joint_accelerations(self.model, system.z, system.zd, system.zdd)

    def multiplier_probe(self, result, y, i):
        """(state, lam): sample i's integrated (z, zd) and the loops' rows of the KKT multipliers (m,) that the
        dynamics there fill (lam holds the joints' rows, the loops', the drivers'; the loops' equal the recursive
        loop layer's lambda)."""
        first = int(self.system.row_start[-1])
        return np.ascontiguousarray(y[i]), self.system.lam[first:first + self.model.nconstraints]
