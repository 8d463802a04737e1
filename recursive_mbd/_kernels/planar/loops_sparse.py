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

The projection of the time loops and of ``rm.loops.project`` (``loops.project``: the Gauss-Newton position steps
dq = -M^-1 J^T (J M^-1 J^T)^-1 phi and the velocity step qd -= M^-1 J^T (J M^-1 J^T)^-1 J qd, mass-orthogonal)
solves with the same J M^-1 J^T: it takes the same factorisation with phi or J qd as the right-hand side and the
same recursive pass (``loops.sparse_loop_solve``, shared with the evaluation here), step by step where the inertia
count finds J M^-1 J^T surely regular at the velocity step's threshold (the position steps too: ``loops.close_loops``
says why), the envelope path's solves and rank decisions elsewhere.

The path's arrays (the KKT structure and its workspace, ``loops.SparseLoopWork``: 38 arrays) ride in the loop
structure as two flat arrays, ints and floats (``loops.pack``; ``loops.unpack`` takes views of them inside the
kernel): every compiled call that takes the time loop's system counts each array of it up and down, and a small
loop model (a four-bar) that keeps the envelope path carries two empty arrays instead of 38. They live in
``loops``, below this module, because the projection there solves with them too.
"""

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import readonly
from ..layout import STATUS_OK
from .loops import (
    absolute_state,
    baumgarte_rhs,
    constrained_dynamics,
    loop_constraints,
    njit,
    pattern_times,
    sparse_loop_solve,
    unpack,
)
from .tree import forward_dynamics

# The loop layer's structure (``recursive_mbd.dynamics.loops.loop_structure``) is one flat tuple of arrays (the time
# loops' systems hold it flat): the 14 arrays of ``loops.loop_pattern``, then this path's two (``pack``). A model
# that keeps the envelope path gets two empty arrays (same types: one signature).
PATTERN_SIZE = 14


@njit
def _sparse_dynamics(body_int, body_real, gravity, loop_int, loop_real, pattern, q, qd, tau, wrench, driven, ws, com,
                     acc, qdd, drive, phi, phid, jac, gamma, weights, zeros, stab, rcond, lam, info, zone, kkt, work):
    """qdd and lam by the sparse KKT factorisation (module docstring): (status, True), or (STATUS_OK, False) where it
    does not find J M^-1 J^T surely regular (qdd, lam then undefined: the caller solves the envelope way)."""
    status = loop_constraints(body_int, body_real, loop_int, loop_real, q, qd, ws, com, acc, phi, phid, jac, gamma,
                              weights)
    if status != STATUS_OK:
        return status, True
    absolute_state(body_int, ws, com, work.z, work.zd)
    status = forward_dynamics(body_int, body_real, gravity, q, qd, tau, wrench, driven, ws, qdd, drive)
    if status != STATUS_OK:
        return status, True
    # the recursive route's right-hand side, J qdd0 - (gamma - 2 alpha phi' - beta^2 phi), in lam
    pattern_times(jac, pattern[0], pattern[1], qdd, lam)
    baumgarte_rhs(gamma, phid, phi, stab, lam)
    dqdd = work.dqdd
    status, solved = sparse_loop_solve(body_int, body_real, loop_int, loop_real, q, driven, ws, zeros,
                                       readonly(stab[2:4]), stab, lam, rcond, zone, kkt, work, lam, dqdd)
    if status != STATUS_OK or not solved:
        return status, solved
    for k in range(qdd.shape[0]):
        qdd[k] += dqdd[k]
    info[0] = lam.shape[0]
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
