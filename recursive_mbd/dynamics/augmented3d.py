"""The augmented absolute-coordinate formulation of a spatial model (``Model3D``): ``recursive_mbd.dynamics.augmented``
sends a Model3D here.

Every body has the absolute coordinates z_i = (c, quat) (7): its centre of mass c [m] in the ground frame and the unit
quaternion (w, x, y, z) of its body-to-ground rotation, and the velocity zd_i = (c', omega) (6): the centre of mass's
velocity and the angular velocity in GROUND axes. Why these: a quaternion has no singular orientation (Euler or
Cardan angles lock at 90 degrees, which a free or spherical body reaches), it is what the recursive route's spherical
and free joints already carry (the same normalisation, the same tolerance), and it costs one normalisation a step;
the velocity is omega rather than the quaternion's rate, so the mass matrix stays the 6 x 6 diag(m 1, J) per body
and a joint's constraint rows are plain (linear in the ground-axis velocities, ``_kernels.augmented.spatial3d``
writes them out). Ground axes rather than body axes for omega: the joints' rows, between two bodies, are then
differences of ground-axis vectors, and the gyroscopic force is -omega x J omega with J = R J_c R^T.

Forward dynamics solves the KKT system

    [M     C_v^T] [zd'   ]   [Q                             ]
    [C_v   0    ] [lambda] = [gamma - 2 alpha C' - beta^2 C  ],   C' = C_v zd,

by default with the compiled O(N) tree elimination (Baraff 1996; ``_kernels.augmented.spatial3d``), or for
comparison with scipy's sparse LU ("sparse") or densely ("dense"). A tree of revolute and spherical joints without
loops takes a specialised tree solve (``_kernels.augmented.rotary3d``: each body's block eliminated in closed form
at its joint point, the same accelerations and multipliers to round-off, in about a fifth of the time).
Q holds gravity, the gyroscopic forces, the joint forces tau (nv,) mapped onto the bodies and the force elements
(through their generalised forces, so accelerations are the recursive route's; the multipliers then count an
element's load along a locked direction as the joint's).
The multipliers of a joint are the components of its constraint force and moment (``_kernels.augmented.spatial3d``
lists the directions); -C_v^T lambda are the constraint forces on the bodies (force, moment about the centre of
mass).

Closed loops (``Model3D.add_loop``: spherical, revolute, distance) add their rows after the joints': the spatial loop
layer's equations (``spatial_loops``: the same residuals, gamma and weights, from ``_kernels.spatial.loops``) written
on the absolute velocities of their two bodies, so their multipliers are the recursive route's lambda, in its sign
convention (the loop forces -lambda_r w_r at the loop points). The tree solve takes them as auxiliary rows: its
O(N) factor, then the Schur complement on the loop rows (the recursive layer's J M^-1 J^T) by one tree solve per
group of rows on disjoint subtrees, solved densely by that layer's filtered regularised solve: redundant loops give
the minimum-norm multipliers and a ``RedundantConstraintWarning``, as ``rm.loop_dynamics`` does ("sparse" and
"dense" refuse them: ModelError, a singular KKT matrix).
"""

import math

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from .. import _checks
from .._kernels import layout as L
from .._kernels.augmented import rotary3d
from .._kernels.augmented import spatial3d as kernels
from .._kernels.spatial import layout as SL
from ..errors import ModelError, StateError
from ..model.statuses import raise_spatial_loop_status, raise_spatial_status
from . import spatial
from .loops import FILTER_RCOND, POSITION_RCOND, _warn_rank, forces_from_multipliers


def _require(model):
    """Compile the model (a Model3D: TypeError otherwise)."""
    spatial.workspace(model)


def row_starts(model):
    """First constraint row of each body's joint (nbodies + 1,) int64, the total last."""
    counts = np.array(kernels.ROWS_PER_JOINT, dtype=np.int64)[model.body_int[:, SL.JTYPE]]
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def _absolute(model, z, zd):
    n = model.nbodies
    z = _checks.finite_array(z, "z")
    zd = _checks.finite_array(zd, "zd")
    if z.shape not in ((n, 7), (7 * n,)):
        raise StateError(f"z must have shape ({n}, 7) or ({7 * n},) for this model (centre of mass and quaternion "
                         f"(w, x, y, z) a body), got {z.shape}")
    if zd.shape not in ((n, 6), (6 * n,)):
        raise StateError(f"zd must have shape ({n}, 6) or ({6 * n},) for this model (velocity of the centre of mass "
                         f"and angular velocity, ground axes), got {zd.shape}")
    z = np.ascontiguousarray(z.reshape(n, 7))
    norms = np.linalg.norm(z[:, 3:], axis=1)
    bad = np.flatnonzero(~(np.abs(norms - 1.0) <= SL.QUATERNION_TOL))
    if bad.size:
        i = int(bad[0])
        raise StateError(f"z[{i}, 3:7], the quaternion of body {model.names[i]!r} (index {i}), is not of unit norm "
                         f"(to {SL.QUATERNION_TOL:g}); normalise it")
    return z, np.ascontiguousarray(zd.reshape(n, 6))


def _kernel_array(x, shape):
    """Whether x is already the array the compiled kernels take: float64, C-contiguous, writable, of ``shape``."""
    return (x.__class__ is np.ndarray and x.dtype == np.float64 and x.shape == shape and x.flags.c_contiguous
            and x.flags.writeable)


def _com_local(model):
    mass = model.body_real[:, SL.MASS]
    com = np.zeros((model.nbodies, 3))
    massive = mass > 0.0
    com[massive] = model.body_real[massive, SL.MCOM:SL.MCOM + 3] / mass[massive, None]
    return com


def quaternion_from_matrix(rot):
    """Unit quaternions (w, x, y, z) (n, 4), w >= 0, of rotation matrices (n, 3, 3) (Shepperd's method: the
    largest of the four squared components first, for accuracy everywhere)."""
    rot = np.asarray(rot, dtype=float).reshape(-1, 3, 3)
    trace = np.trace(rot, axis1=1, axis2=2)
    squares = np.stack((1.0 + trace, 1.0 + 2.0 * rot[:, 0, 0] - trace, 1.0 + 2.0 * rot[:, 1, 1] - trace,
                        1.0 + 2.0 * rot[:, 2, 2] - trace), axis=1)  # 4 w^2, 4 x^2, 4 y^2, 4 z^2
    big = np.argmax(squares, axis=1)
    out = np.empty((rot.shape[0], 4))
    s = np.sqrt(np.maximum(squares[np.arange(rot.shape[0]), big], 0.0))  # 2 |component|
    r = rot
    pairs = {  # the others from the off-diagonal sums and differences, divided by 4 |component|
        0: (s / 2, (r[:, 2, 1] - r[:, 1, 2]) / (2 * s), (r[:, 0, 2] - r[:, 2, 0]) / (2 * s),
            (r[:, 1, 0] - r[:, 0, 1]) / (2 * s)),
        1: ((r[:, 2, 1] - r[:, 1, 2]) / (2 * s), s / 2, (r[:, 0, 1] + r[:, 1, 0]) / (2 * s),
            (r[:, 0, 2] + r[:, 2, 0]) / (2 * s)),
        2: ((r[:, 0, 2] - r[:, 2, 0]) / (2 * s), (r[:, 0, 1] + r[:, 1, 0]) / (2 * s), s / 2,
            (r[:, 1, 2] + r[:, 2, 1]) / (2 * s)),
        3: ((r[:, 1, 0] - r[:, 0, 1]) / (2 * s), (r[:, 0, 2] + r[:, 2, 0]) / (2 * s),
            (r[:, 1, 2] + r[:, 2, 1]) / (2 * s), s / 2),
    }
    with np.errstate(divide="ignore", invalid="ignore"):
        for k, parts in pairs.items():
            rows = big == k
            out[rows] = np.stack(parts, axis=1)[rows]
    out *= np.where(out[:, :1] < 0.0, -1.0, 1.0)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _quaternion_matrix(quat):
    quat = np.asarray(quat, dtype=float).reshape(-1, 4)
    quat = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    w, x, y, z = quat.T
    return np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                     2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                     2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)), axis=1).reshape(-1, 3, 3)


def absolute_from_joint(model, q, v):
    """Absolute coordinates from joint ones: z (nbodies, 7) = (centre of mass, quaternion (w, x, y, z)) and
    zd (nbodies, 6) = (its velocity, angular velocity), ground axes."""
    _require(model)
    rot, origin, omega, velocity = spatial.forward_kinematics(model, q, v)
    arm = np.einsum("nij,nj->ni", rot, _com_local(model))
    z = np.concatenate((origin + arm, quaternion_from_matrix(rot)), axis=1)
    zd = np.concatenate((velocity + np.cross(omega, arm), omega), axis=1)
    return z, zd


def _axis_angle(rot, axis):
    """The angle of a rotation ``rot`` (3, 3) about the unit ``axis`` (exact when it turns about it)."""
    n1 = np.cross(axis, np.eye(3)[np.argmin(np.abs(axis))])
    n1 /= np.linalg.norm(n1)
    turned = rot @ n1
    return float(np.arctan2(axis @ np.cross(n1, turned), n1 @ turned))


def _axis_rotation(axis, angle):
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def joint_from_absolute(model, z, zd):
    """Joint coordinates q (nq,) and velocities v (nv,) from absolute ones (exact where the joints' constraints hold;
    a quaternion coordinate with w >= 0)."""
    _require(model)
    z, zd = _absolute(model, z, zd)
    rot = _quaternion_matrix(z[:, 3:])
    com = _com_local(model)
    real = model.body_real
    q = np.zeros(model.nq)
    v = np.zeros(model.nv)
    for i in range(model.nbodies):
        jt, p = model.body_int[i, SL.JTYPE], model.body_int[i, SL.PARENT]
        k, kv = model.body_int[i, SL.QIDX], model.body_int[i, SL.VIDX]
        if p >= 0:
            rot_p, c_p, v_p, om_p = rot[p], z[p, :3], zd[p, :3], zd[p, 3:]
            point_p = c_p + rot_p @ (real[i, SL.PP:SL.PP + 3] - com[p])
        else:
            rot_p, c_p, v_p, om_p = np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3)
            point_p = real[i, SL.PP:SL.PP + 3]
        frame = rot_p @ real[i, SL.R0:SL.R0 + 9].reshape(3, 3)
        arm = rot[i] @ (real[i, SL.CP:SL.CP + 3] - com[i])
        point_c = z[i, :3] + arm
        rel = frame.T @ rot[i]  # R_j
        t = frame.T @ (point_c - point_p)
        w = frame.T @ (zd[i, 3:] - om_p)
        u = frame.T @ (zd[i, :3] + np.cross(zd[i, 3:], arm) - v_p - np.cross(om_p, point_c - c_p))
        a = real[i, SL.A1:SL.A1 + 3]
        if jt in (SL.REVOLUTE, SL.CYLINDRICAL):
            q[k], v[kv] = _axis_angle(rel, a), a @ w
            if jt == SL.CYLINDRICAL:
                q[k + 1], v[kv + 1] = a @ t, a @ u
        elif jt == SL.PRISMATIC:
            q[k], v[kv] = a @ t, a @ u
        elif jt == SL.UNIVERSAL:
            b = real[i, SL.A2:SL.A2 + 3]
            turned = rel @ b  # Rot(a1, alpha) a2
            across = b - (a @ b) * a
            alpha = float(np.arctan2(a @ np.cross(across, turned), across @ turned))
            q[k], q[k + 1] = alpha, _axis_angle(_axis_rotation(a, -alpha) @ rel, b)
            normal = np.cross(a, turned)
            v[kv], v[kv + 1] = w @ np.cross(turned, normal) / (normal @ normal), w @ np.cross(normal, a) / (normal
                                                                                                            @ normal)
        elif jt == SL.SPHERICAL:
            q[k:k + 4], v[kv:kv + 3] = quaternion_from_matrix(rel)[0], rel.T @ w
        elif jt == SL.PLANAR:
            q[k:k + 3] = t[0], t[1], np.arctan2(rel[1, 0], rel[0, 0])
            v[kv:kv + 3] = u[0], u[1], w[2]
        elif jt == SL.FREE:
            q[k:k + 3], q[k + 3:k + 7] = t, quaternion_from_matrix(rel)[0]
            v[kv:kv + 3], v[kv + 3:kv + 6] = u, rel.T @ w
    return q, v


def _raise(model, status):
    raise_spatial_status(model, status, ("z", "zd", "tau"), output="the augmented solution")


def _loads(model, z, zd, tau, t):
    """tau (nv,) plus the force elements' generalised forces at the joint state of (z, zd), or the empty vector."""
    tau = np.zeros(0) if tau is None else np.ascontiguousarray(_checks.finite_array(tau, "tau", (model.nv,)))
    if not model._elements:
        return tau
    q, v = joint_from_absolute(model, z, zd)
    forces = spatial._element_loads(model, q, v, float(t)).forces
    return forces + tau if tau.size else forces.copy()


def assemble(model, z, zd, tau=None, t=0.0):
    """(mass (nbodies, 6, 6), force Q (nbodies, 6), blocks jc, jp (nbodies, 6, 6), residual, gamma (nbodies, 6)):
    every body's mass matrix and applied force and every joint's constraint rows (rows :m of body i's blocks, m
    its joint's row count, ``kernels.ROWS_PER_JOINT``)."""
    _require(model)
    z, zd = _absolute(model, z, zd)
    tau = _loads(model, z, zd, tau, _checks.real(t, "t"))
    n = model.nbodies
    mass, force = np.zeros((n, 6, 6)), np.zeros((n, 6))
    jc, jp, res, gam = np.zeros((n, 6, 6)), np.zeros((n, 6, 6)), np.zeros((n, 6)), np.zeros((n, 6))
    status = kernels.assemble(model.body_int, model.body_real, model.gravity, z, zd, tau, mass, force, jc, jp, res,
                              gam)
    if status:
        _raise(model, status)
    return mass, force, jc, jp, res, gam


def _sparse_rows(model, jc, jp, starts):
    """C_v (rows, 6 nbodies) as a CSR matrix from the blocks."""
    rows, cols, vals = [], [], []
    counts = np.diff(starts)
    parent = model.body_int[:, SL.PARENT]
    for r in range(6):
        bodies = np.flatnonzero(counts > r)
        row = starts[bodies] + r
        for block, owner in ((jc, bodies), (jp, parent[bodies])):
            keep = owner >= 0
            rows.append(np.repeat(row[keep], 6))
            cols.append((6 * owner[keep, None] + np.arange(6)).ravel())
            vals.append(block[bodies[keep], r].ravel())
    return scipy.sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                   shape=(int(starts[-1]), 6 * model.nbodies))


class _LoopArrays:
    """The loops' auxiliary rows of one model and the scratch of their solve (``kernels.loop_rows``,
    ``kernels.close_loops``), allocated once and reused; k = model.nconstraints rows, and ``drivers`` rows more
    after them (``kernels.driver_rows``) in the row arrays and the Schur complement's scratch."""

    def __init__(self, model, tree_rows, drivers=0):
        n, k = model.nbodies, model.nconstraints + drivers
        self.body = np.full((k, 2), -1, dtype=np.int64)  # the two bodies of each row (-1: the ground)
        self.coef = np.zeros((k, 12))  # its coefficients on their (c', omega)
        self.rhs = np.zeros(k)  # gamma - 2 alpha C' - beta^2 C
        self.res = np.zeros(k)  # C
        self.weights = np.zeros((model.nconstraints, 12))  # the loop layer's weights on the points' motion
        self.point = np.zeros(40)
        self.axes = np.zeros(9)
        self.yb, self.yj, self.schur = np.zeros((n, 6)), np.zeros(tree_rows), np.zeros((k, k))

    def fill(self, model, z, zd, stab):
        """The rows at (z, zd) with Baumgarte's stab = (alpha, beta) (checked arrays); StateError when a distance
        loop's points coincide."""
        status = kernels.loop_rows(model.body_real, model.loop_int, model.loop_real, z, zd, stab, self.point,
                                   self.axes, self.weights, self.body, self.coef, self.rhs, self.res)
        if status:
            raise_spatial_loop_status(model, status, ("z", "zd"))


def loop_rows(model, z, zd, alpha=0.0, beta=0.0):
    """The loops' rows in absolute coordinates (module docstring), in loop order (``Model3D.loop_rows``):
    (bodies (k, 2) int: the two bodies of each row, -1 the ground; coefficients (k, 12) on their (c', omega);
    residual C (k,); right-hand side gamma - 2 alpha C' - beta^2 C (k,); the loop layer's weights (k, 12))."""
    _require(model)
    z, zd = _absolute(model, z, zd)
    rows = _LoopArrays(model, 0)
    rows.fill(model, z, zd, np.array([_checks.real(alpha, "alpha"), _checks.real(beta, "beta")]))
    return rows.body, rows.coef, rows.res, rows.rhs, rows.weights


def loop_forces(model, z, zd, lam):
    """Loop forces (nloops, 2, 6) on body a and on body b (or the ground), (force at its loop point, moment), ground
    axes, from the loop multipliers (the last ``model.nconstraints`` entries of lam), as ``rm.loop_dynamics``'s
    ``forces``: the force of row r on side k is -lambda_r w_k,r (the loop layer's weights, ``loop_rows``)."""
    weights = loop_rows(model, z, zd)[4]
    lam = _checks.finite_array(lam, "lam", (None,))
    if lam.size < model.nconstraints:
        raise StateError(f"lam must hold at least the {model.nconstraints} loop multipliers, got {lam.size}")
    return forces_from_multipliers(model, lam[lam.size - model.nconstraints:], weights)


def _loop_matrix(model, body, coef):
    """The loops' rows (k, 6 nbodies) as a CSR matrix."""
    side = body.reshape(-1)  # (2 k,): a's then b's of each row
    keep = side >= 0
    rows = np.repeat(np.repeat(np.arange(body.shape[0]), 2)[keep], 6)
    cols = (6 * side[keep, None] + np.arange(6)).ravel()
    return scipy.sparse.csr_matrix((coef.reshape(-1, 6)[keep].ravel(), (rows, cols)),
                                   shape=(body.shape[0], 6 * model.nbodies))


def constraints(model, z, zd, t=0.0):
    """Constraint residual C (m,), velocity Jacobian C_v (m, 6 nbodies, sparse CSR), its rate C' = C_v zd and gamma
    of C_v zd' = gamma; rows body by body in each joint's order (``_kernels.augmented.spatial3d``), then the loops'
    (``loop_rows``)."""
    _, _, jc, jp, res, gam = assemble(model, z, zd, None, t)
    starts = row_starts(model)
    counts = np.diff(starts)
    keep = np.arange(6)[None, :] < counts[:, None]
    cv = _sparse_rows(model, jc, jp, starts)
    residual, gamma = res[keep], gam[keep]
    z, zd = _absolute(model, z, zd)
    if model.nconstraints:
        body, coef, loop_res, loop_gamma, _ = loop_rows(model, z, zd)
        cv = scipy.sparse.vstack((cv, _loop_matrix(model, body, coef)), format="csr")
        residual, gamma = np.concatenate((residual, loop_res)), np.concatenate((gamma, loop_gamma))
    return residual, cv, cv @ zd.reshape(-1), gamma


class _TreeWorkspace:
    """The tree solve's factor arrays of one model (``kernels.factor_and_solve``), allocated once and reused. With
    ``rotary``, a tree of revolute and spherical joints without loops gets instead the records of its specialised
    solve (``rotary3d.factor_and_solve``: no factor kept for other solves) in ``rotary``, else None."""

    def __init__(self, model, rotary=False):
        n = model.nbodies
        self.row_start = row_starts(model)
        self.rows = int(self.row_start[-1])
        self.stab = np.zeros(2)
        self.power = np.zeros(1)
        self.no_wrench = np.zeros((0, 6))
        self.loops = _LoopArrays(model, self.rows) if model.nconstraints else None
        self.rotary = self.factor = None
        if rotary and self.loops is None and rotary3d.rotary_ok(model.body_int):
            self.rotary = np.zeros((n, rotary3d.W))  # zeros: every record's FLAG clear
        else:  # D^-1, S^-1, Jc, Jp, w, residual, gamma
            self.factor = (np.empty((n, 6, 6)), np.empty((n, 6, 6)), np.empty((n, 6, 6)), np.empty((n, 6, 6)),
                           np.empty(n), np.empty((n, 6)), np.empty((n, 6)))


def release_workspace(model):
    """Drop the tree solver's workspace that ``forward_dynamics`` keeps on ``model`` between calls (about 1.3 KB a
    body, 0.7 KB for a tree of revolute and spherical joints; made again by the next call): for a caller that needs
    one solve of a long chain and its memory back."""
    model.__dict__.pop("_augmented3d_workspace", None)


def _tree_workspace(model):
    ws = getattr(model, "_augmented3d_workspace", None)
    if ws is None:
        ws = model._augmented3d_workspace = _TreeWorkspace(model, rotary=True)
    return ws


def forward_dynamics(model, z, zd, tau=None, t=0.0, alpha=0.0, beta=0.0, solver="tree"):
    """Absolute accelerations zdd (nbodies, 6) = (c'', omega') and the multipliers lam (m,) of a spatial model: the
    joints' rows body by body, then the loops' (``augmented.forward_dynamics`` documents the arguments; tau is
    (nv,))."""
    _require(model)
    t, alpha, beta = (_checks.real(t, "t"), _checks.real(alpha, "alpha"), _checks.real(beta, "beta"))
    n = model.nbodies
    if solver == "tree":
        if not (_kernel_array(z, (n, 7)) and _kernel_array(zd, (n, 6))):  # else the kernel checks them
            z, zd = _absolute(model, z, zd)
        loads = _loads(model, z, zd, tau, t)
        ws = _tree_workspace(model)
        zdd, lam = np.empty((n, 6)), np.empty(ws.rows + model.nconstraints)
        ws.stab[0] = alpha
        ws.stab[1] = beta
        if ws.rotary is not None:
            status = rotary3d.factor_and_solve(model.body_int, model.body_real, model.gravity, ws.row_start, z, zd,
                                               loads, ws.stab, ws.rotary, zdd, lam, ws.power)
        else:
            status = kernels.factor_and_solve(model.body_int, model.body_real, model.gravity, ws.row_start, z, zd,
                                              loads, ws.no_wrench, ws.stab, *ws.factor, zdd, lam, ws.power)
        if status:
            _absolute(model, z, zd)  # a NaN or a quaternion off unit norm: the message that names it
            _raise(model, status)
        if ws.loops is not None:
            _close_loops(model, ws, z, zd, zdd, lam)
        if not math.isfinite(zdd.sum() + lam.sum()):  # one reduction: a NaN or inf anywhere makes it non-finite
            _checks.check_finite_result(zdd, "zdd")
            _checks.check_finite_result(lam, "lam")
        return zdd, lam
    z, zd = _absolute(model, z, zd)
    if solver not in ("sparse", "dense"):
        raise ValueError(f"unknown solver {solver!r}; expected 'tree', 'sparse' or 'dense'")
    mass, force, jc, jp, res, gam = assemble(model, z, zd, tau, t)
    starts = row_starts(model)
    counts = np.diff(starts)
    keep = np.arange(6)[None, :] < counts[:, None]
    cv = _sparse_rows(model, jc, jp, starts)
    rhs_c = gam[keep] - 2.0 * alpha * (cv @ zd.reshape(-1)) - beta * beta * res[keep]
    if model.nconstraints:
        body, coef, _, loop_rhs, _ = loop_rows(model, z, zd, alpha, beta)
        cv = scipy.sparse.vstack((cv, _loop_matrix(model, body, coef)), format="csr")
        rhs_c = np.concatenate((rhs_c, loop_rhs))
    kkt = scipy.sparse.bmat([[scipy.sparse.block_diag(list(mass)), cv.T], [cv, None]], format="csc")
    rhs = np.concatenate((force.reshape(-1), rhs_c))
    m = rhs_c.size
    singular = ModelError(f"the augmented system is singular at this state: {m} constraint equations on "
                          f"{6 * n} coordinates (a body without inertia along a motion its joint leaves free, or "
                          "redundant loops: solver='tree' gives their minimum-norm multipliers)")
    if solver == "sparse":
        try:
            factor = scipy.sparse.linalg.splu(kkt)
        except RuntimeError:  # "Factor is exactly singular"
            raise singular from None
        pivots = np.abs(factor.U.diagonal())
        solution = factor.solve(rhs)
    else:
        try:
            lu, piv = scipy.linalg.lu_factor(kkt.toarray(), check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            raise singular from None
        pivots = np.abs(np.diag(lu))
        solution = scipy.linalg.lu_solve((lu, piv), rhs, check_finite=False)
    if pivots.size and not pivots.min() > 1e-11 * pivots.max():
        raise singular
    _checks.check_finite_result(solution, "the solution (zdd, lam) of the augmented system")
    return solution[:6 * n].reshape(n, 6), solution[6 * n:]


def _close_loops(model, ws, z, zd, zdd, lam):
    """The loops' rows on the tree solution (zdd, lam[:tree rows]) in place, their multipliers into lam[tree rows:]
    (``kernels.close_loops``); a RedundantConstraintWarning where they are redundant or singular."""
    rows = ws.loops
    rows.fill(model, z, zd, ws.stab)
    rank = kernels.close_loops(model.body_int, ws.row_start, *ws.factor[:5], rows.body, rows.coef, rows.rhs,
                               FILTER_RCOND, zdd, lam[:ws.rows], lam[ws.rows:], rows.yb, rows.yj, rows.schur)
    if rank < 0:
        raise_spatial_loop_status(model, L.STATUS_NONFINITE_STATE, ("z", "zd"))
    _warn_rank(model, rank)


def _loop_system_arrays(model, tree_rows, drivers=0):
    """The loop fields of ``Augmented3DSystem`` after loop_int, loop_real: the auxiliary rows (the loops', then
    ``drivers`` rows), the scratch of their solve and their multipliers (no rows for a tree without drivers: the
    same compiled types)."""
    rows = _LoopArrays(model, tree_rows, drivers)
    return (rows.body, rows.coef, rows.rhs, rows.res, rows.weights, rows.point, rows.axes, rows.yb, rows.yj,
            rows.schur, np.zeros(model.nconstraints + drivers))


class _NoInputs:
    """The input layout of a system evaluated outside a run (``project``): tau zero, no input slots but the
    drivers' (f, f', f'' of each, filled by ``values``)."""

    def __init__(self, model, drivers=()):
        self.tau_const = np.zeros(model.nv)
        self.tau_offset = -1
        self.drivers = _driven_joints(model, drivers)
        self.size = 3 * len(self.drivers)
        self.driver_offset = 0

    def values(self, t):
        """u (3 nd,): (f, f', f'') of each driver at t (a StateError naming one that fails)."""
        return np.concatenate([_checks.driver_value(name, evaluate, t) for _, name, evaluate in self.drivers] or
                              [np.zeros(0)]).astype(float)


def _driven_joints(model, drivers):
    """[(coordinate, body name, evaluate)] of ``drivers``, a list of (coordinate k in q, evaluate(t) -> (f, f',
    f'')) as ``augmented.project``'s: k the coordinate of a revolute or prismatic joint, each at most once
    (ModelError otherwise)."""
    out = []
    joints = {int(model.body_int[i, SL.QIDX]): i for i in range(model.nbodies)
              if model.body_int[i, SL.JTYPE] in (SL.REVOLUTE, SL.PRISMATIC)}
    for entry in drivers:
        coord, evaluate = entry
        if isinstance(coord, bool) or not isinstance(coord, (int, np.integer)) or int(coord) not in joints:
            raise ModelError(f"driver of coordinate {coord!r}: not the coordinate of a revolute or prismatic joint of "
                             f"{model!r} (only those can be driven)")
        if any(c == int(coord) for c, _, _ in out):
            raise ModelError(f"driver of coordinate {int(coord)}: given twice")
        if not callable(evaluate):
            raise TypeError(f"driver of coordinate {int(coord)}: give a function evaluate(t) -> (f, f', f'')")
        out.append((int(coord), model.names[joints[int(coord)]], evaluate))
    return out


def project(model, z, zd, tol=1e-12, max_iter=20, t=0.0, drivers=()):
    """Project (z, zd) of a spatial model onto C(z) = 0 and C_v zd = 0 (the joints' rows, the loops' and the
    drivers'), mass-orthogonally: the projection of ``rm.simulate(..., formulation="augmented",
    stabilization="projection")`` (``_kernels.augmented.system3d.project_state``: Gauss-Newton steps
    dz = -H^-1 (0, C) on the tree factor with the loops and drivers as auxiliary rows, rotations applied as
    exp(dtheta) (x) quat, until the step and |C| are below ``tol`` or the steps stop contracting, at most
    ``max_iter``; then the velocity correction). ``drivers``: a list of (coordinate k in q of a revolute or
    prismatic joint, evaluate(t) -> (f, f', f'')), rows q_k(z) - f(t) = 0 and v_k - f'(t) = 0 at time ``t``.
    Returns new z (nbodies, 7) and zd (nbodies, 6). ModelError when a loop stays open (above 1e3 tol) after the
    steps."""
    from .._kernels.augmented import system3d  # noqa: PLC0415  (registers its overloads)
    from .._kernels.timeloops import integrators  # noqa: PLC0415

    _require(model)
    z, zd = _absolute(model, z, zd)
    tol = _checks.real(tol, "tol", low=0.0, strict=True)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    t = _checks.real(t, "t")
    inputs = _NoInputs(model, drivers)
    system = _system(model, inputs, "projection", 0.0, 0.0, tol, rotary=False)  # no dynamics: no records
    system.settings[2] = float(max_iter)
    system.u[:] = inputs.values(t)  # the inputs' callback leaves u as it is
    n = model.nbodies
    y = np.concatenate((z.ravel(), zd.ravel(), [0.0, 0.0]))
    status = system3d.project_state(integrators.no_inputs, 0, system, t, y)
    kind, index = L.decode_status(status)
    if kind == L.STATUS_LOOPS_OPEN:
        raise ModelError(f"the loops cannot be closed near this state: loop {model.loop_names[index]!r} stays open "
                         f"after {max_iter} Gauss-Newton steps (max |C| above {1e3 * tol:g})")
    if status:
        raise_spatial_loop_status(model, status, ("z", "zd"))
    return y[:7 * n].reshape(n, 7).copy(), y[7 * n:13 * n].reshape(n, 6).copy()


def _system(model, inputs, stabilization, alpha, beta, projection_tol, rotary=True):
    """The compiled system (``_kernels.augmented.system3d.Augmented3DSystem``) of ``model`` with the run's
    ``inputs`` (tau, the drivers' slots), ``stabilization`` ("baumgarte": alpha, beta; "projection"; "none").
    ``rotary`` False: the dynamics by the general tree solve even where ``rotary3d``'s applies."""
    from .._kernels.augmented.system3d import Augmented3DSystem  # noqa: PLC0415  (registers its overloads)

    if stabilization != "baumgarte":
        alpha = beta = 0.0
    n = model.nbodies
    ws = _TreeWorkspace(model)
    # each driver's body and the slot of its f in u (the drivers are sorted by coordinate, as their slots)
    drv = np.array([[model.body_index(name), inputs.driver_offset + 3 * j]
                    for j, (_, name, _) in enumerate(inputs.drivers)], dtype=np.int64).reshape(-1, 2)
    # the dynamics of a tree of revolute and spherical joints without loops or drivers by ``rotary3d``
    rotary = rotary and not model.nconstraints and not drv.shape[0] and rotary3d.rotary_ok(model.body_int)
    return Augmented3DSystem(
            model.body_int, model.body_real, model.gravity, ws.row_start, inputs.tau_const,
            np.array([inputs.tau_offset], dtype=np.int64), np.zeros(inputs.size), np.zeros(model.nq),
            np.zeros(model.nv), np.zeros(model.nv), np.zeros((n, 7)), np.zeros((n, 6)), np.zeros((n, 6)),
            np.zeros(ws.rows), *ws.factor, ws.no_wrench, np.array([float(alpha), float(beta)]), np.zeros(2),
            np.zeros(1), np.zeros((n, 6)), np.zeros(ws.rows), model.loop_int, model.loop_real,
            *_loop_system_arrays(model, ws.rows, drv.shape[0]), drv, np.zeros(model.nv),
            np.array([1.0 if stabilization == "projection" else 0.0, projection_tol, 20.0, FILTER_RCOND,
                      POSITION_RCOND]), np.zeros((n if rotary else 0, rotary3d.W)))


class TimeLoop3D:
    """The augmented formulation's pieces for the generic time loops of ``rm.simulate(model3d,
    formulation="augmented")``: the compiled system (``_kernels.augmented.system3d``: right-hand side, quaternion
    renormalisation and projection), the initial state from the joint state and the map from the integrated states
    back to joint coordinates (``joint_from_absolute``), absolute coordinates and the constraint drift.

    ``inputs`` is the run's input layout (``integrate._SpatialInputs``): tau constant or a function of t; a function
    tau(t, q, v) and force elements, which need the joint state inside the compiled loop, are refused (ValueError).
    Drivers of revolute and prismatic joints are rheonomic rows q_j(z) - f(t) = 0 after the loops'
    (``_kernels.augmented.spatial3d.driver_rows``): their multipliers are minus the driving forces, which the result's
    ``driving_forces()`` reports as the recursive route's (at the joints' rates in v), and their power joins the
    applied work.
    ``stabilization``: "baumgarte" (alpha, beta), "projection" (onto C = 0 and C_v zd = 0 after every accepted step,
    tolerance ``projection_tol``) or "none", for the joints' rows and the loops' alike. With loops the run starts from
    the recursive route's projected start and its result's ``multipliers`` are the loops' (``multiplier_probe``).
    """

    name = "augmented"

    def __init__(self, model, inputs, stabilization="baumgarte", alpha=0.0, beta=0.0, projection_tol=1e-12,
                 loads_in_tau=False):
        _require(model)
        if model._elements and not loads_in_tau:  # (loads_in_tau: the caller's constant tau holds the elements' forces)
            raise ValueError("force elements are not supported by the augmented formulation of a spatial model in "
                             "rm.simulate yet (use formulation='recursive')")
        if inputs.tau_function is not None and inputs.tau_arity != 1:
            raise ValueError("tau(t, q, v) is not supported by the augmented formulation of a spatial model in "
                             "rm.simulate yet: give tau constant or as a function of t (or use "
                             "formulation='recursive')")
        self.model = model
        self.inputs = inputs
        self.stabilization = (stabilization, alpha, beta)  # the recursive system of ``result.qdd()`` takes them
        self.system = _system(model, inputs, stabilization, alpha, beta, projection_tol)

    def initial_state(self, q0, qd0, t0, callback, key):
        """y0 = (z0, zd0, 0, 0) from the joint state (on the joints' constraints by construction; the driven
        coordinates and rates at their drivers' values at t0), with loops projected onto them first as the recursive
        route's start (``spatial_loops.consistent_start``, holding the driven joints: a gap above 1e-6 is a
        StateError, redundant loops a RedundantConstraintWarning)."""
        driven = None
        if self.inputs.drivers:
            q0, qd0 = q0.copy(), qd0.copy()
            self.inputs(t0, q0, qd0, np.zeros(self.inputs.size))
            driven = self.inputs.driven
        if self.model.nloops:
            from .spatial_loops import consistent_start  # noqa: PLC0415

            q0, qd0 = consistent_start(self.model, q0, qd0, driven)
        z0, zd0 = absolute_from_joint(self.model, q0, qd0)
        return np.concatenate((z0.ravel(), zd0.ravel(), [0.0, 0.0]))

    def joint_states(self, t, y):
        """Joint coordinates q (nt, nq) and velocities v (nt, nv) of the integrated states y (nt, 13 nbodies + 2)."""
        n = self.model.nbodies
        y = np.atleast_2d(y)
        q, v = np.zeros((y.shape[0], self.model.nq)), np.zeros((y.shape[0], self.model.nv))
        for row in range(y.shape[0]):
            z = y[row, :7 * n].reshape(n, 7).copy()
            z[:, 3:] /= np.linalg.norm(z[:, 3:], axis=1, keepdims=True)
            q[row], v[row] = joint_from_absolute(self.model, z, y[row, 7 * n:13 * n])
        return q, v

    def work(self, y):
        return y[:, 13 * self.model.nbodies:]

    def finish(self, result, y, callback, key):
        """The absolute coordinates, the constraint drift max |C| of the joints, loops and drivers at every sample,
        and the run's system and inputs, to evaluate its dynamics again (``driving_forces``)."""
        from .._kernels.augmented import system3d  # noqa: PLC0415

        result._evaluator = (callback, key, self.system, self.inputs, self)
        n = self.model.nbodies
        result.z = y[:, :7 * n].reshape(-1, n, 7)
        result.zd = y[:, 7 * n:13 * n].reshape(-1, n, 6)
        drift = np.zeros(y.shape[0])
        out = np.zeros(1)
        for row in range(y.shape[0]):
            system3d.constraint_gap(callback, key, self.system, float(result.t[row]), np.ascontiguousarray(y[row]),
                                    out)
            drift[row] = out[0]
        result.constraint_drift = drift

    def multiplier_probe(self, result, y, i):
        """(state, lam): sample i's integrated (z, zd) and the loops' multipliers (m,) that the dynamics there fill
        (the recursive loop layer's lambda)."""
        return np.ascontiguousarray(y[i]), self.system.mu[:self.model.nconstraints]

    def sample_state(self, result, i):
        """The integrated state y of sample i of ``result`` (its z, zd; zero work terms), for evaluating the run's
        dynamics there again."""
        return np.concatenate((result.z[i].ravel(), result.zd[i].ravel(), [0.0, 0.0]))

    def driving_forces_now(self):
        """(columns, forces): the drivers' rates in v and their forces or torques [N, N m] of the last evaluation of
        the system (minus their rows' multipliers)."""
        rates = self.inputs.driven_rates
        return rates, self.system.drive[rates]
