"""The recursive loop layer's multipliers from the sparse KKT factorisation of the absolute-coordinate system: O(N)
an evaluation for a ladder, where J M^-1 J^T is full.

``loops.constrained_dynamics`` solves (J M^-1 J^T) lambda = rhs with rhs = J qdd0 - (gamma - 2 alpha phi' - beta^2 phi)
from the responses M^-1 J^T and the envelope of J M^-1 J^T. Where every loop reaches the same subtrees from the
ground (a ladder: two chains joined by rungs) both are full: m recursive passes, O(m^2 N) products and an O(m^3)
factorisation. The same multipliers come from the tree written in absolute coordinates. With z the bodies'
centres of mass and angles, M_b = diag(m, m, J) per body, Jt the tree joints' rows on z and E the loops' rows on z
(``_kernels.sparse_kkt.tree_residuals``: the joints' blocks; ``loops.loop_rows``), the joint coordinates
parametrise the motions that the tree joints allow, z' = T qd with Jt T = 0, and

    M = T^T M_b T,        J = E T        (the loop equations are the same functions of the configuration).

The matrix H = [[M_b, Jt^T], [Jt, 0]] is the tree's KKT matrix; the upper-left block of H^-1 is T M^-1 T^T (the
projected inverse mass of the tree's motions), so E H^-1 E^T restricted to it is E T M^-1 T^T E^T = J M^-1 J^T.
Hence the KKT matrix with the loop rows inside,

    K = [[M_b, Jt^T, E^T], [Jt, 0, 0], [E, 0, 0]],    K (x, y, mu) = (0, 0, -rhs)   gives   mu = (J M^-1 J^T)^-1 rhs,

the recursive route's lambda (its Schur complement onto the loop rows is -J M^-1 J^T). K is factorised by the
augmented route's sparse LDL^T in its fixed elimination order (``_kernels.sparse_kkt``, the kernel module below
both routes: bodies by minimum degree, each constraint's rows after its last body), O(N) entries and flops along a
ladder, and only where its inertia count finds J M^-1 J^T surely regular (``sparse_kkt.loop_solve``); elsewhere (a
change point's zone, redundant rows, a body without inertia) the evaluation falls back to
``loops.constrained_dynamics`` as it was. The
right-hand side is the recursive route's own (J qdd0, the loop rows' gamma and Baumgarte's terms: the same numbers),
and the constrained accelerations follow as there, qdd = qdd0 - M^-1 J^T lambda, from one recursive pass with the
loop forces -E^T lambda as wrenches at the centres of mass (J^T lambda = T^T E^T lambda) instead of the m
responses. Per evaluation: the loop rows and J (as before), two tree passes, the joints' blocks, two sparse
factorisations (the inertia count at the shift, then the solve's) and one sparse solve.

The regularity test is the augmented route's (``sparse_kkt.loop_solve``: every eigenvalue of J M^-1 J^T above
max(REGULAR_ZONE_MARGIN zone top, REGULAR_RCOND_MARGIN rcond scale), top a Gershgorin bound of the largest
eigenvalue, scale the rows' free-body scale), with zone raised to REGULAR_RCOND_MARGIN rcond / REGULAR_ZONE_MARGIN
at least, so that the path is taken only where the dense route's own test (``loops.regular_factor``: the smallest
eigenvalue above max(REGULAR_ZONE_MARGIN zone, REGULAR_RCOND_MARGIN rcond) times a bound of the largest) would
solve G^-1 rhs too, or its filtered solve f(G) rhs, which differs from G^-1 rhs by (mu / s)^2 <
(rcond / REGULAR_RCOND_MARGIN)^2 relative there, and with no weak eigenvalue (no branch to follow). Which models take
the path is fixed per model by a cost model (``recursive_mbd.dynamics.loops.sparse_loop_structure``): a row of
loops keeps the banded envelope.

The path's arrays (the KKT structure and the workspace below, 37 arrays) ride in the loop structure as two flat
arrays, ints and floats (``pack``; ``unpack`` takes views of them inside the kernel): every compiled call that takes
the time loop's system counts each array of it up and down, and a small loop model (a four-bar) that keeps the
envelope path carries two empty arrays instead of 37.
"""

from collections import namedtuple

import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import readonly
from ..layout import OM, STATUS_OK, TH
from ..sparse_kkt import F_WIDTH, KKTStructure, loop_solve, tree_residuals
from .loops import (
    REGULAR_RCOND_MARGIN,
    REGULAR_ZONE_MARGIN,
    baumgarte_rhs,
    constrained_dynamics,
    loop_constraints,
    loop_rows,
    njit,
    pattern_times,
)
from .tree import forward_dynamics

# The loop layer's structure (``recursive_mbd.dynamics.loops.loop_structure``) is one flat tuple of arrays (the time
# loops' systems hold it flat): the 14 arrays of ``loops.loop_pattern``, then this path's two (``pack``). A model
# that keeps the envelope path gets two empty arrays (same types: one signature).
PATTERN_SIZE = 14

SparseLoopWork = namedtuple(
    "SparseLoopWork",
    [
        "stats",  # (2,) int64: evaluations solved by the sparse factorisation, evaluations that fell back
        "row_start",  # (nbodies + 1,) int64: the first tree row of each body's joint (the augmented route's order)
        "z",
        "zd",  # (nbodies, 3): centre-of-mass position and angle, and their rates
        "fac",  # (nbodies, tree.F_WIDTH): the joints' blocks (``tree.tree_residuals``)
        "scratch",  # (4, 3)
        "res",  # (tree rows,): the joints' residuals (not read)
        "aux_body",  # (m, 2) int64: the loop rows' bodies (-1: the ground)
        "aux_coef",  # (m, 6): E, the loop rows' coefficients on z of their two bodies
        "aux_rhs",  # (m,): the right-hand side of the loop rows, -rhs
        "aux_res",  # (m,): the loop residuals (not read)
        "zdd",  # (nbodies, 3): the correction of z'' (not read)
        "lam",  # (tree rows + m,): the KKT solve's multipliers, the loop rows' last
        "info",  # (2,) int64
        "wrench",  # (nbodies, 3): the loop forces -E^T lambda at the centres of mass
        "dqdd",  # (nq,): -M^-1 J^T lambda
    ],
)


@njit
def _absolute_state(body_int, ws, com, z, zd):
    """z, zd (nbodies, 3) = the centres of mass and angles, and their rates, from the kinematics that
    ``loops.loop_constraints`` leaves (com (nbodies, 4), the angles and rates in ws)."""
    for i in range(body_int.shape[0]):
        z[i, 0] = com[i, 0]
        z[i, 1] = com[i, 1]
        z[i, 2] = ws[i, TH]
        zd[i, 0] = com[i, 2]
        zd[i, 1] = com[i, 3]
        zd[i, 2] = ws[i, OM]


@njit
def _sparse_dynamics(body_int, body_real, gravity, loop_int, loop_real, pattern, q, qd, tau, wrench, driven, ws, com,
                     acc, qdd, drive, phi, phid, jac, gamma, weights, zeros, stab, rcond, lam, info, zone, kkt, work):
    """qdd and lam by the sparse KKT factorisation (module docstring): (status, True), or (STATUS_OK, False) where it
    does not find J M^-1 J^T surely regular (qdd, lam then undefined: the caller solves the envelope way)."""
    status = loop_constraints(body_int, body_real, loop_int, loop_real, q, qd, ws, com, acc, phi, phid, jac, gamma,
                              weights)
    if status != STATUS_OK:
        return status, True
    z = work.z
    _absolute_state(body_int, ws, com, z, work.zd)
    status = forward_dynamics(body_int, body_real, gravity, q, qd, tau, wrench, driven, ws, qdd, drive)
    if status != STATUS_OK:
        return status, True
    status = loop_rows(loop_int, loop_real, z, work.zd, stab, work.aux_body, work.aux_coef, work.aux_rhs,
                       work.aux_res)
    if status != STATUS_OK:
        return status, True
    # the recursive route's right-hand side, negated: K (x, y, mu) = (0, 0, -rhs) on E z'' = g with z''0 = 0
    rhs = work.aux_rhs
    pattern_times(jac, pattern[0], pattern[1], qdd, rhs)
    baumgarte_rhs(gamma, phid, phi, stab, rhs)
    m = rhs.shape[0]
    for r in range(m):
        rhs[r] = -rhs[r]
    work.zdd[:, :] = 0.0
    work.lam[:] = 0.0
    tree_residuals(body_int, body_real, work.row_start, z, work.zd, work.fac, work.scratch, work.res)
    zone = max(zone, REGULAR_RCOND_MARGIN * rcond / REGULAR_ZONE_MARGIN)
    if not loop_solve(body_int, body_real, work.row_start, work.fac, work.aux_body, work.aux_coef, rhs,
                      REGULAR_RCOND_MARGIN * rcond, REGULAR_ZONE_MARGIN * zone, work.zdd, work.lam, work.info, kkt):
        return STATUS_OK, False
    mt = work.lam.shape[0] - m
    force = work.wrench
    force[:, :] = 0.0
    aux_body = work.aux_body
    aux_coef = work.aux_coef
    for r in range(m):  # the loop forces -E^T lambda on the rows' bodies
        lam[r] = work.lam[mt + r]
        for side in range(2):
            body = aux_body[r, side]
            if body >= 0:
                for col in range(3):
                    force[body, col] -= lam[r] * aux_coef[r, 3 * side + col]
    # -M^-1 J^T lambda: their accelerations from rest without gravity (the responses' pass, loaded by all rows)
    dqdd = work.dqdd
    status = forward_dynamics(body_int, body_real, readonly(stab[2:4]), q, zeros, zeros, force, driven, ws, dqdd,
                              dqdd[:0])
    if status != STATUS_OK:
        return status, True
    for k in range(qdd.shape[0]):
        qdd[k] += dqdd[k]
    info[0] = m
    return STATUS_OK, True


@njit
def sparse_constrained_dynamics(body_int, body_real, gravity, loop_int, loop_real, pattern, sparse_ints, sparse_floats,
                                q, qd, tau, wrench, driven, ws, com, acc, qdd, drive, phi, phid, jac, gamma, weights,
                                resp, resp_drive, zeros, stab, rcond, lam, info, branch):
    """``loops.constrained_dynamics`` (same arguments, same results to round-off; pattern its 14 arrays) through the
    sparse KKT factorisation where the model's structure takes it (sparse_ints, sparse_floats: ``pack``, not empty,
    its ``use`` set) and no joint is driven, and J M^-1 J^T is surely regular at this state (module docstring);
    elsewhere ``loops.constrained_dynamics`` itself. Counts the evaluations either way in the workspace's stats.
    Returns the status."""
    if sparse_ints.shape[0] > 0 and driven.shape[0] == 0:
        kkt, work = unpack(sparse_ints, sparse_floats)
        if kkt.use[0] != 0:
            status, done = _sparse_dynamics(body_int, body_real, gravity, loop_int, loop_real, pattern, q, qd, tau,
                                            wrench, driven, ws, com, acc, qdd, drive, phi, phid, jac, gamma, weights,
                                            zeros, stab, rcond, lam, info, branch[0], kkt, work)
            if done:
                if status == STATUS_OK:
                    work.stats[0] += 1
                return status
            work.stats[1] += 1
    return constrained_dynamics(body_int, body_real, gravity, loop_int, loop_real, pattern, q, qd, tau, wrench,
                                driven, ws, com, acc, qdd, drive, phi, phid, jac, gamma, weights, resp, resp_drive,
                                zeros, stab, rcond, lam, info, branch)


# ---- the path's arrays packed in two (``pack``): ints = a header of (offset, rows, columns) per array in FIELDS
# order (columns 0: one-dimensional), then the int64 arrays; floats = the float64 arrays, at their offsets
FIELDS = KKTStructure._fields + SparseLoopWork._fields
HEADER = 3 * len(FIELDS)


@njit
def _vector(ints, data, f):
    """Array f of FIELDS (one-dimensional) as a view of data (ints or floats)."""
    at = ints[3 * f]
    return data[at:at + ints[3 * f + 1]]


@njit
def _matrix(ints, data, f):
    """Array f of FIELDS (two-dimensional, C order) as a view of data."""
    at = ints[3 * f]
    rows = ints[3 * f + 1]
    cols = ints[3 * f + 2]
    return data[at:at + rows * cols].reshape((rows, cols))


@njit
def unpack(ints, floats):
    """(KKTStructure, SparseLoopWork) as views of the packed arrays (``pack``): nothing copied or allocated. ints must
    hold the header (not the empty arrays of ``no_sparse_path``: numba does not check the bounds), as
    ``sparse_constrained_dynamics`` checks before it calls this."""
    kkt = KKTStructure(
        _vector(ints, ints, 0), _vector(ints, ints, 1), _vector(ints, ints, 2), _vector(ints, ints, 3),
        _vector(ints, floats, 4), _vector(ints, ints, 5), _vector(ints, ints, 6), _vector(ints, ints, 7),
        _vector(ints, ints, 8), _vector(ints, floats, 9), _vector(ints, floats, 10), _vector(ints, floats, 11),
        _vector(ints, ints, 12), _vector(ints, ints, 13), _vector(ints, floats, 14), _vector(ints, ints, 15),
        _matrix(ints, ints, 16), _matrix(ints, ints, 17), _matrix(ints, ints, 18), _vector(ints, ints, 19),
        _vector(ints, ints, 20))
    w = 21
    work = SparseLoopWork(
        _vector(ints, ints, w), _vector(ints, ints, w + 1), _matrix(ints, floats, w + 2),
        _matrix(ints, floats, w + 3), _matrix(ints, floats, w + 4), _matrix(ints, floats, w + 5),
        _vector(ints, floats, w + 6), _matrix(ints, ints, w + 7), _matrix(ints, floats, w + 8),
        _vector(ints, floats, w + 9), _vector(ints, floats, w + 10), _matrix(ints, floats, w + 11),
        _vector(ints, floats, w + 12), _vector(ints, ints, w + 13), _matrix(ints, floats, w + 14),
        _vector(ints, floats, w + 15))
    return kkt, work


def pack(kkt, work):
    """(ints, floats): the arrays of a KKTStructure and a SparseLoopWork packed for ``unpack`` (copies; the kernels
    work on the packed arrays)."""
    arrays = tuple(kkt) + tuple(work)
    ints = [np.zeros(HEADER, dtype=np.int64)]
    floats = []
    used = {np.dtype(np.int64): HEADER, np.dtype(np.float64): 0}
    for f, a in enumerate(arrays):
        assert a.ndim in (1, 2) and a.dtype in used, (FIELDS[f], a.dtype, a.ndim)
        ints[0][3 * f:3 * f + 3] = used[a.dtype], a.shape[0], a.shape[1] if a.ndim == 2 else 0
        used[a.dtype] += a.size
        (ints if a.dtype == np.int64 else floats).append(a.ravel())
    return np.concatenate(ints), np.concatenate(floats) if floats else np.zeros(0)


def sparse_loop_work(n, nq, tree_rows, m):
    """A SparseLoopWork for n bodies, nq coordinates, the tree's rows and m loop rows (zeros)."""
    return SparseLoopWork(
        np.zeros(2, dtype=np.int64), np.zeros(n + 1, dtype=np.int64), np.zeros((n, 3)), np.zeros((n, 3)),
        np.zeros((n, F_WIDTH)), np.zeros((4, 3)), np.zeros(tree_rows), np.full((m, 2), -1, dtype=np.int64),
        np.zeros((m, 6)), np.zeros(m), np.zeros(m), np.zeros((n, 3)), np.zeros(tree_rows + m),
        np.zeros(2, dtype=np.int64), np.zeros((n, 3)), np.zeros(nq))


def no_sparse_path():
    """The two empty arrays of a model that keeps the envelope path."""
    return np.zeros(0, dtype=np.int64), np.zeros(0)
