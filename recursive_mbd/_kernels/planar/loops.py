"""Closed loops on top of the tree: cut-joint constraints and the Lagrange-multiplier layer (the relative-coordinate
lecture; Yoshimura's review of multibody formulations).

Each loop closes a cut joint between a point on body a and a point on body b (either may be the ground) with
equations phi(q) = 0 (``layout.LOOP_*``). With J the constraint Jacobian (m, nq) and gamma = -J' qd the part of
phi'' that does not depend on qdd, the constrained equations of motion are

    M qdd + h = tau + drive - J^T lambda,      J qdd = gamma - 2 alpha phi' - beta^2 phi   (Baumgarte; 0, 0: none)

solved without an N x N matrix: qdd0 from the recursive pass, the responses Y = M^-1 J^T from m further recursive
passes (no gravity, no velocity), then the small system (J Y) lambda = J qdd0 - rhs by a rank-revealing
least-squares solve (redundant loops give the minimum-norm multipliers), qdd = qdd0 - Y lambda. J Y is formed from
the nonzero entries of Y (a loop reaches only some branches of the tree) and, where it is surely regular, solved
by a Cholesky factorisation of its envelope (``regular_solve``): O(N m) for the passes, O(m b^2) for a J Y of
bandwidth b (a row of loops), the eigen-decomposition's O(m^3) only near singular positions that no branch
resolves.

Each equation is written as weights on the motion of the two bodies: row r reads
    phi'_r = w_a . (v(P_a), omega_a) + w_b . (v(P_b), omega_b),
so J follows from the point Jacobians along the two paths to the root, and the loop force on body a is
-sum_r lambda_r w_a (force at P_a, moment), on body b -sum_r lambda_r w_b (force at P_b, moment).

Near a change point (J losing rank) the time loops replace J by the normal space of the branch the motion
follows, taken from points displaced along it (``branch_normals``): the regularised solve alone drops the weak
rows there, and a row of parallelograms needs loop forces ~ 1 / distance in them (their moments stay finite).
That work keeps to the structure where the mechanism allows it: the zone is told by eigenvalue counts from
inertias of J M^-1 J^T's envelope (``eigen_counts``), a branch of few degrees of freedom is carried by a basis of
its tangent space (the tangent route of ``_branch_search``: small systems in T M T^T, no dense normals), and the
loop multipliers that give its constraint force come from a banded regularised least-squares solve
(``banded_filtered_solve``), and so do the Gauss-Newton steps that close the displaced points (``_closure_solve``):
no eigen-decomposition of a row of n parallelograms' J M^-1 J^T in the zone.

The time loops' evaluations and projections read J, the responses and J M^-1 J^T through the loops' structure
(``loop_pattern``), which the tree and the loops fix: row r of J lives on the joints of the paths of its loop's two
bodies to the ground, its response M^-1 J_r^T on the subtrees hung from the ground that hold them, and J M^-1 J^T
inside the envelope of the rows that share such a subtree (``gram_envelope``; the solves read that envelope only).
That structure (with the colours of the response passes, the pairs of rows that meet in J M^-1 J^T and J's rows by
column) is built once per model and passed to the kernels (the ``pattern`` argument). J and the responses keep
their dense (m, nq) arrays, but only those entries are written and read: O(N + entries + m b^2) an evaluation for
an envelope of width b, linear in n for a row of n parallelograms (3 entries of J, 4 of the responses a row,
b = 3); so are the change point's J J^T products (``normal_matrix``). A tree whose loops all reach one subtree (a
ladder between two hanging chains) has full responses and a full envelope: the same work as dense arrays, O(N m +
m^3). Such a model (chosen once per model by a cost model, ``recursive_mbd.dynamics.loops.sparse_loop_structure``)
solves with J M^-1 J^T through the sparse KKT factorisation of its absolute-coordinate system instead, O(N), where
that finds J M^-1 J^T surely regular (``sparse_loop_solve``, derived in ``loops_sparse``): the evaluations
(``loops_sparse``) and the projection's position and velocity steps (``project``). The normal route of the change
point's search for the branch (QR or SVD of J, the projector's eigen-decomposition) is still dense.
"""

import math
from collections import namedtuple

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import copy_into, readonly
from ..layout import (
    CS,
    HX,
    LANGLE,
    LAXX,
    LBODY_A,
    LBODY_B,
    LKIND,
    LLENGTH,
    LOOP_FIXED,
    LOOP_PRISMATIC,
    LOOP_REVOLUTE,
    LPAX,
    LPBX,
    LROW,
    NDOF,
    OM,
    PARENT,
    QIDX,
    RX,
    SN,
    STATUS_LOOP_DEGENERATE,
    STATUS_LOOPS_OPEN,
    STATUS_NONFINITE_STATE,
    STATUS_OK,
    TH,
)
from ..sparse_kkt import F_WIDTH, KKTStructure, loop_solve, tree_residuals
from .tree import com_kinematics, forward_dynamics, inverse_dynamics, motion_column

njit = numba.njit(cache=True, error_model="numpy", _nrt=True)
# small helpers with scalar results, inlined into the per-row loops (as ``_kernels.augmented.tree``'s)
inline = numba.njit(cache=True, error_model="numpy", inline="always", _nrt=True)

# Eigenvalues s of J M^-1 J^T below REDUNDANT * max(s) are round-off: redundant loop equations (or a position
# within ~1e-7 of a change point, where the branch cannot be told from J any more).
REDUNDANT = 1e-14
# Eigenvalues in (REDUNDANT, BRANCH_ZONE] * max(s) are weak: a loop Jacobian near a change point (sigma_min(J) /
# sigma_max(J) below ~1e-3), where the time loops take the branch's normal space from displaced points
# (``branch_normals``). It lies outside the multiplier filter (FILTER_RCOND = 1e-8 of recursive_mbd.dynamics.loops), so
# the filter acts only inside the zone, where the branch rows replace it.
BRANCH_ZONE = 1e-6
# the first displacement d [q units] of ``branch_normals``, tripled (up to BRANCH_ATTEMPTS - 1 times) until the
# displaced points are outside the zone; the points sit at q + c d v, c in BRANCH_OFFSETS, with weights of the projector
# (extrapolated to q: error O(d^4)) and of its derivative along the branch (times 1 / d: error O(d^4))
BRANCH_STEP = 1e-2
BRANCH_OFFSETS = np.array([1.0, -1.0, 2.0, -2.0])
BRANCH_WEIGHTS = np.array([2.0 / 3.0, 2.0 / 3.0, -1.0 / 6.0, -1.0 / 6.0])
BRANCH_SLOPES = np.array([8.0 / 12.0, -8.0 / 12.0, -1.0 / 12.0, 1.0 / 12.0])
# The zone widens with the mechanism: in a row of n parallelograms the smallest eigenvalue of J M^-1 J^T falls
# like 1 / n^2 at regular positions and like (theta / n)^2 near a change point, so the zone spans |theta| < ~1e-3 n
# there, and the displaced points (d along the unit rate vector: ~d / sqrt(2 n) in each angle) must reach
# ~1e-3 n^1.5 to leave it (d = 1 for n = 80). Eight tries reach d = 3^7 BRANCH_STEP ~ 22; a try whose first
# point is still in the zone costs one position closure.
BRANCH_ATTEMPTS = 8


@njit
def body_accelerations(body_int, ws, qdd, acc):
    """acc[i] = (ax, ay, alpha) of every centre of mass for the joint accelerations qdd (eq. 3.19a), from the
    pass-1 quantities in ws; qdd of shape (0,) gives the velocity-product part alone (qdd = 0)."""
    use_qdd = qdd.shape[0] > 0
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        if p >= 0:
            a0 = acc[p, 0]
            a1 = acc[p, 1]
            a2 = acc[p, 2]
        else:
            a0 = a1 = a2 = 0.0
        ax = a0 - a2 * ws[i, RX + 1] + ws[i, HX]
        ay = a1 + a2 * ws[i, RX] + ws[i, HX + 1]
        if use_qdd:
            k = body_int[i, QIDX]
            for col in range(body_int[i, NDOF]):
                gx, gy, g2 = motion_column(body_int, ws, i, col)
                ax += gx * qdd[k + col]
                ay += gy * qdd[k + col]
                a2 += g2 * qdd[k + col]
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = a2


@njit
def _point_state(ws, com, acc, body, sx, sy):
    """Position, velocity, velocity-product acceleration of the point s (relative to the centre of mass, body
    frame) of ``body``, its angle and angular velocity; the ground (body -1) holds s fixed."""
    if body < 0:
        return sx, sy, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    c = ws[body, CS]
    s = ws[body, SN]
    om = ws[body, OM]
    rx = c * sx - s * sy
    ry = s * sx + c * sy
    px = com[body, 0] + rx
    py = com[body, 1] + ry
    vx = com[body, 2] - om * ry
    vy = com[body, 3] + om * rx
    ax = acc[body, 0] - om * om * rx
    ay = acc[body, 1] - om * om * ry
    return px, py, vx, vy, ax, ay, ws[body, TH], om


@njit
def _add_point_jacobian(body_int, ws, com, body, px, py, wx, wy, wt, row):
    """row += w . d(v(P), omega)/d qdot for the point P = (px, py) of ``body``: one pass up its path to the root."""
    i = body
    while i >= 0:
        k = body_int[i, QIDX]
        cx = com[i, 0]
        cy = com[i, 1]
        for col in range(body_int[i, NDOF]):
            gx, gy, g2 = motion_column(body_int, ws, i, col)
            row[k + col] += wx * (gx - g2 * (py - cy)) + wy * (gy + g2 * (px - cx)) + wt * g2
        i = body_int[i, PARENT]


@njit
def _zero_path(body_int, body, row):
    """row[k] = 0 for the coordinates k of the joints on ``body``'s path to the ground (none for the ground, -1)."""
    i = body
    while i >= 0:
        for col in range(body_int[i, NDOF]):
            row[body_int[i, QIDX] + col] = 0.0
        i = body_int[i, PARENT]


@njit
def _wrap(angle):
    return math.atan2(math.sin(angle), math.cos(angle))



@njit
def _set_weights(weights, r, a_x, a_y, a_th, b_x, b_y, b_th):
    """Row r of a loop's weights: the row's coefficients on body a's (x, y, angle) and body b's. Element by element:
    a tuple assigned to the row (weights[r, :] = (...)) makes numba compile its broadcasting assignment with its
    error messages, about 6 s of CPU in every process that compiles the loop layer."""
    weights[r, 0] = a_x
    weights[r, 1] = a_y
    weights[r, 2] = a_th
    weights[r, 3] = b_x
    weights[r, 4] = b_y
    weights[r, 5] = b_th

@njit
def loop_equations(loop_real, lp, kind, b, r0, point_a, point_b, weights, phi, gamma):
    """Rows r0 .. of loop lp (of ``kind``, body b its second body, -1 the ground) from the state of its two points,
    each (px, py, vx, vy, ax, ay, theta, omega): position, velocity and velocity-product acceleration of the point,
    its body's angle and angular velocity (ground axes; any coordinates' z'' = 0 or qdd = 0). Writes the row
    weights (w_a, w_b) into weights[r] (6,), the residual phi[r] and gamma[r] (phi'' at zero accelerations, with
    the sign of the right-hand side: -phi''). Returns the number of rows, 0 for a distance loop whose points
    coincide (degenerate). Shared by the recursive loop layer and the augmented formulation."""
    pax, pay, vax, vay, aax, aay, tha, _ = point_a
    pbx, pby, vbx, vby, abx, aby, thb, omb = point_b
    dx = pax - pbx
    dy = pay - pby
    ddx = vax - vbx
    ddy = vay - vby
    bias_x = aax - abx  # phi'' at qdd = 0 of the point-difference rows
    bias_y = aay - aby
    nrows = 0
    if kind in (LOOP_REVOLUTE, LOOP_FIXED):
        _set_weights(weights, r0, 1.0, 0.0, 0.0, -1.0, 0.0, 0.0)
        _set_weights(weights, r0 + 1, 0.0, 1.0, 0.0, 0.0, -1.0, 0.0)
        phi[r0] = dx
        phi[r0 + 1] = dy
        gamma[r0] = -bias_x
        gamma[r0 + 1] = -bias_y
        nrows = 2
    elif kind == LOOP_PRISMATIC:  # n . d = 0 with n the axis normal turning with body b
        cb = math.cos(thb) if b >= 0 else 1.0
        sb = math.sin(thb) if b >= 0 else 0.0
        ux = cb * loop_real[lp, LAXX] - sb * loop_real[lp, LAXX + 1]
        uy = sb * loop_real[lp, LAXX] + cb * loop_real[lp, LAXX + 1]
        nx = -uy
        ny = ux
        along = -ny * dx + nx * dy  # perp(n) . d: the moment arm of the normal force about P_b
        _set_weights(weights, r0, nx, ny, 0.0, -nx, -ny, along)
        phi[r0] = nx * dx + ny * dy
        gamma[r0] = -(nx * bias_x + ny * bias_y - omb * omb * phi[r0] + 2.0 * omb * (-ny * ddx + nx * ddy))
        nrows = 1
    else:  # LOOP_DISTANCE
        length = math.sqrt(dx * dx + dy * dy)
        if not length > 0.0:
            return 0
        ex = dx / length
        ey = dy / length
        rate = ex * ddx + ey * ddy
        _set_weights(weights, r0, ex, ey, 0.0, -ex, -ey, 0.0)
        phi[r0] = length - loop_real[lp, LLENGTH]
        gamma[r0] = -(ex * bias_x + ey * bias_y + (ddx * ddx + ddy * ddy - rate * rate) / length)
        nrows = 1
    if kind in (LOOP_PRISMATIC, LOOP_FIXED):  # the relative angle row
        r = r0 + nrows
        _set_weights(weights, r, 0.0, 0.0, 1.0, 0.0, 0.0, -1.0)
        phi[r] = _wrap(tha - thb - loop_real[lp, LANGLE])
        gamma[r] = 0.0
        nrows += 1
    return nrows


@inline
def _loop_point(z, zd, body, lx, ly):
    """Arm A s from the centre of mass (ground axes), point, velocity, acceleration at z'' = 0, angle and rate of
    the loop point (lx, ly) of ``body`` (body frame, from the centre of mass; the ground's point is fixed)."""
    if body < 0:
        return 0.0, 0.0, lx, ly, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    th = z[body, 2]
    om = zd[body, 2]
    c = math.cos(th)
    s = math.sin(th)
    rx = c * lx - s * ly
    ry = s * lx + c * ly
    return (rx, ry, z[body, 0] + rx, z[body, 1] + ry, zd[body, 0] - om * ry, zd[body, 1] + om * rx,
            -om * om * rx, -om * om * ry, th, om)


@njit
def loop_rows(loop_int, loop_real, z, zd, stab, aux_body, aux_coef, aux_rhs, aux_res):
    """The loops' rows in absolute coordinates (as ``recursive_mbd.dynamics.augmented._loop_rows``) as auxiliary rows
    of the augmented tree solver (``_kernels.augmented.tree``) and of the sparse KKT factorisation (``sparse_kkt``):
    row r acts on bodies aux_body[r] = (a, b) (-1: the ground) with coefficients aux_coef[r] = (on a (3), on b
    (3)); aux_rhs[r] = gamma - 2 alpha C' - beta^2 C, aux_res[r] = C. A row w_a . (P_a', theta_a') +
    w_b . (P_b', theta_b') has coefficients (w_x, w_y, w_theta + w . perp(A s)) on each body; the rows' w, C and
    gamma are the recursive loop layer's (``loop_equations``). Returns the status."""
    alpha = stab[0]
    beta = stab[1]
    for lp in range(loop_int.shape[0]):
        kind = loop_int[lp, LKIND]
        a = loop_int[lp, LBODY_A]
        b = loop_int[lp, LBODY_B]
        r0 = loop_int[lp, LROW]
        rax, ray, pax, pay, vax, vay, aax, aay, tha, oma = _loop_point(z, zd, a, loop_real[lp, LPAX],
                                                                      loop_real[lp, LPAX + 1])
        rbx, rby, pbx, pby, vbx, vby, abx, aby, thb, omb = _loop_point(z, zd, b, loop_real[lp, LPBX],
                                                                      loop_real[lp, LPBX + 1])
        nrows = loop_equations(loop_real, lp, kind, b, r0, (pax, pay, vax, vay, aax, aay, tha, oma),
                               (pbx, pby, vbx, vby, abx, aby, thb, omb), aux_coef, aux_res, aux_rhs)
        if nrows == 0:
            return STATUS_LOOP_DEGENERATE | (lp << 4)
        for r in range(r0, r0 + nrows):
            w = aux_coef[r]
            aux_body[r, 0] = a
            aux_body[r, 1] = b
            # phi' = w_a . (v(P_a), omega_a) + w_b . (v(P_b), omega_b), before w becomes z-coefficients
            rate = w[0] * vax + w[1] * vay + w[2] * oma + w[3] * vbx + w[4] * vby + w[5] * omb
            w[2] += -w[0] * ray + w[1] * rax  # w . perp(A s)
            w[5] += -w[3] * rby + w[4] * rbx
            aux_rhs[r] += -2.0 * alpha * rate - beta * beta * aux_res[r]
    return STATUS_OK


@njit
def loop_constraints(body_int, body_real, loop_int, loop_real, q, qd, ws, com, acc, phi, phid, jac, gamma,
                     weights):
    """Residual phi (m,), its rate phi' = J qd, Jacobian J (m, nq), gamma = -J' qd (m,) of every loop, and the
    row weights (m, 6) = (w_a, w_b) that map multipliers to loop forces. Leaves every body's orientation in ws
    and its centre-of-mass state in com. Returns the status.

    Row r of J is written on the joints of the paths of its loop's two bodies to the ground only (``loop_pattern``:
    O(N + entries), not O(m nq)); its other entries are never written, so jac must be zero there (allocated with
    zeros, and written by this kernel alone)."""
    status = com_kinematics(body_int, body_real, q, qd, ws, com)
    if status != STATUS_OK:
        return status
    body_accelerations(body_int, ws, qd[:0], acc)
    for lp in range(loop_int.shape[0]):
        kind = loop_int[lp, LKIND]
        a = loop_int[lp, LBODY_A]
        b = loop_int[lp, LBODY_B]
        r0 = loop_int[lp, LROW]
        pax, pay, vax, vay, aax, aay, tha, oma = _point_state(ws, com, acc, a, loop_real[lp, LPAX],
                                                              loop_real[lp, LPAX + 1])
        pbx, pby, vbx, vby, abx, aby, thb, omb = _point_state(ws, com, acc, b, loop_real[lp, LPBX],
                                                              loop_real[lp, LPBX + 1])
        nrows = loop_equations(loop_real, lp, kind, b, r0, (pax, pay, vax, vay, aax, aay, tha, oma),
                               (pbx, pby, vbx, vby, abx, aby, thb, omb), weights, phi, gamma)
        if nrows == 0:
            return STATUS_LOOP_DEGENERATE | (lp << 4)
        for r in range(r0, r0 + nrows):
            w = weights[r]
            phid[r] = w[0] * vax + w[1] * vay + w[2] * oma + w[3] * vbx + w[4] * vby + w[5] * omb
            _zero_path(body_int, a, jac[r])
            _zero_path(body_int, b, jac[r])
            if a >= 0:
                _add_point_jacobian(body_int, ws, com, a, pax, pay, w[0], w[1], w[2], jac[r])
            if b >= 0:
                _add_point_jacobian(body_int, ws, com, b, pbx, pby, w[3], w[4], w[5], jac[r])
    return STATUS_OK


@njit
def constraint_responses(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros, no_gravity):
    """resp[r] = M^-1 J_r^T (m, nq): the joint accelerations that a unit multiplier of row r alone produces (no
    gravity, no velocity), by recursive passes; driven joints (``driven``) are held (their entries stay zero,
    resp_drive[r] the force holding them), so resp[r] = M_ff^-1 J_r,f^T on the free coordinates. Returns the
    status.

    M is block diagonal over the tree's branches from the ground (the subtrees of the bodies hinged to it): a row
    whose J_r touches some of them moves only those. Without driven joints, rows that touch disjoint sets of
    branches share one pass (``_response_colours``; a row of n parallelograms: 4 passes instead of 2 n), each row
    keeping the accelerations of its own branches, the same numbers as a pass of its own."""
    m = jac.shape[0]
    if driven.shape[0] > 0 or m < 2:
        return _row_responses(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros, no_gravity)
    nq = jac.shape[1]
    coord_root = np.empty(nq, dtype=np.int64)
    root = np.empty(body_int.shape[0], dtype=np.int64)
    for i in range(body_int.shape[0]):  # parents come first
        p = body_int[i, PARENT]
        root[i] = i if p < 0 else root[p]
        for col in range(body_int[i, NDOF]):
            coord_root[body_int[i, QIDX] + col] = root[i]
    colour, ncolours = _response_colours(jac, coord_root, body_int.shape[0])
    force = np.empty(nq)
    owner = np.full(body_int.shape[0], -1, dtype=np.int64)
    for c in range(ncolours):
        force[:] = 0.0
        for r in range(m):
            if colour[r] == c:
                for k in range(nq):
                    if jac[r, k] != 0.0:
                        force[k] = jac[r, k]
                        owner[coord_root[k]] = r
        first = -1
        for r in range(m):
            if colour[r] == c:
                first = r
                break
        status = forward_dynamics(body_int, body_real, no_gravity, q, zeros, force, resp[:0], driven, ws,
                                  resp[first], resp_drive[0, :0])
        if status != STATUS_OK:
            return status
        for r in range(first + 1, m):  # the other rows of the colour take their branches' accelerations
            if colour[r] == c:
                for k in range(nq):
                    resp[r, k] = resp[first, k] if owner[coord_root[k]] == r else 0.0
        for k in range(nq):
            if owner[coord_root[k]] != first:
                resp[first, k] = 0.0
    return STATUS_OK


@njit
def _response_colours(jac, coord_root, nbodies):
    """(colour (m,), number of colours): a greedy colouring of the rows of jac such that rows of one colour touch
    disjoint branches of the tree (coord_root[k]: the first body of the branch that moves coordinate k)."""
    m = jac.shape[0]
    nq = jac.shape[1]
    colour = np.empty(m, dtype=np.int64)
    stamp = np.full(nbodies, -1, dtype=np.int64)
    count = np.zeros(m + 1, dtype=np.int64)  # row r's branches: roots[count[r]:count[r + 1]]
    roots = np.empty(m * min(nbodies, nq), dtype=np.int64)
    for r in range(m):
        at = count[r]
        for k in range(nq):
            if jac[r, k] != 0.0 and stamp[coord_root[k]] != r:
                stamp[coord_root[k]] = r
                roots[at] = coord_root[k]
                at += 1
        count[r + 1] = at
    taken = np.full((m, nbodies), False)  # taken[c, b]: branch b is used by a row of colour c
    ncolours = 0
    for r in range(m):
        c = 0
        while c < ncolours:
            clash = False
            for at in range(count[r], count[r + 1]):
                if taken[c, roots[at]]:
                    clash = True
                    break
            if not clash:
                break
            c += 1
        ncolours = max(ncolours, c + 1)
        colour[r] = c
        for at in range(count[r], count[r + 1]):
            taken[c, roots[at]] = True
    return colour, ncolours


@njit
def _row_responses(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros, no_gravity):
    """``constraint_responses`` by one recursive pass a row (driven joints held)."""
    has_drivers = driven.shape[0] > 0
    for r in range(jac.shape[0]):
        if has_drivers:  # the responses hold the driven joints still: their accelerations are prescribed
            for i in range(body_int.shape[0]):
                if driven[i]:
                    resp[r, body_int[i, QIDX]] = 0.0
        status = forward_dynamics(body_int, body_real, no_gravity, q, zeros, jac[r], resp[:0],
                                  driven, ws, resp[r], resp_drive[r] if has_drivers else resp_drive[0, :0])
        if status != STATUS_OK:
            return status
    return STATUS_OK


@njit
def _row_nonzeros(mat):
    """(start (m + 1,), cols): the columns k with mat[r, k] != 0 of each row r, cols[start[r]:start[r + 1]] in
    increasing order (one pass over mat)."""
    m = mat.shape[0]
    nq = mat.shape[1]
    start = np.zeros(m + 1, dtype=np.int64)
    cols = np.empty(m * nq, dtype=np.int64)
    at = 0
    for r in range(m):
        for k in range(nq):
            if mat[r, k] != 0.0:
                cols[at] = k
                at += 1
        start[r + 1] = at
    return start, cols[:at]


@njit
def _columns_of(start, cols, ncols):
    """(col_start (ncols + 1,), rows): the same pattern by columns, rows[col_start[k]:col_start[k + 1]] the rows
    with an entry in column k, in increasing order."""
    m = start.shape[0] - 1
    col_start = np.zeros(ncols + 1, dtype=np.int64)
    for at in range(cols.shape[0]):
        col_start[cols[at] + 1] += 1
    for k in range(ncols):
        col_start[k + 1] += col_start[k]
    rows = np.empty(cols.shape[0], dtype=np.int64)
    fill = col_start[:ncols].copy()
    for r in range(m):
        for at in range(start[r], start[r + 1]):
            rows[fill[cols[at]]] = r
            fill[cols[at]] += 1
    return col_start, rows


@njit
def gram_matrix(jac, resp, gram):
    """gram = J M^-1 J^T (m, m) from the responses, symmetrised (it is symmetric positive semi-definite).

    Each response row M^-1 J_r^T is nonzero only on the coordinates of the tree's branches that loop row r
    reaches (a row of parallelograms: four of 2 n + 1), so only the pairs of rows (r, s) where J_r meets M^-1 J_s^T
    or J_s meets M^-1 J_r^T (found through the rows of each column) can be nonzero, and their products run over
    the nonzero entries (``_gram_pairs``): O(m nq) to gather them here, then O(k) a pair for k nonzero entries a
    row, O(m k^2 p) for p rows a column, instead of O(m^2 nq); each sum in the order of the dense product's nonzero
    terms. ``gram_envelope`` takes the same pairs from the loops' structure without the O(m nq) scans."""
    count, cols = _row_nonzeros(resp)  # row r's responses: cols[count[r]:count[r + 1]]
    jac_start, jac_cols = _row_nonzeros(jac)
    gram[:, :] = 0.0
    _gram_pairs(jac, resp, jac_start, jac_cols, count, cols, gram, np.empty(jac.shape[0], dtype=np.int64))


@njit
def _gram_pairs(jac, resp, jac_start, jac_cols, count, cols, gram, first):
    """G[r, s] = G[s, r] = (J_r . M^-1 J_s^T + J_s . M^-1 J_r^T) / 2 for the pairs of rows that meet, from the
    columns of each row of J (jac_cols[jac_start[r]:jac_start[r + 1]], increasing) and of its responses (cols,
    count; increasing), entries outside them zero; first[r] the first pair s <= r of row r (r where none), and
    G set to zero in row r's envelope [first[r], r] and its mirror before the pairs are written: G is complete
    inside the envelope ``first`` (O(m b) for a width b), untouched outside it."""
    pair_start, pair_rows = _meeting_rows(jac_start, jac_cols, count, cols, jac.shape[1], first)
    _pair_products(jac, resp, count, cols, pair_start, pair_rows, first, gram)


@njit
def _meeting_rows(jac_start, jac_cols, count, cols, nq, first):
    """(pair_start (m + 1,), pair_rows): the rows s <= r that meet row r, where J_r meets M^-1 J_s^T or M^-1 J_r^T
    meets J_s (the columns of J by rows jac_cols, jac_start and of the responses cols, count; increasing),
    pair_rows[pair_start[r]:pair_start[r + 1]] in the order they are found; first[r] the first of them (r where
    none): the envelope of G = J M^-1 J^T. Fixed by the columns alone (``loop_pattern`` keeps it)."""
    m = jac_start.shape[0] - 1
    resp_col_start, resp_col_rows = _columns_of(count, cols, nq)  # the rows s with resp[s, k] != 0, by column
    jac_col_start, jac_col_rows = _columns_of(jac_start, jac_cols, nq)
    bound = 0  # at most one pair a (column, row) incidence, and r + 1 a row
    for r in range(m):
        incidences = 0
        for at in range(jac_start[r], jac_start[r + 1]):
            incidences += resp_col_start[jac_cols[at] + 1] - resp_col_start[jac_cols[at]]
        for at in range(count[r], count[r + 1]):
            incidences += jac_col_start[cols[at] + 1] - jac_col_start[cols[at]]
        bound += min(incidences, r + 1)
    stamp = np.full(m, -1, dtype=np.int64)
    pair_start = np.zeros(m + 1, dtype=np.int64)
    pair_rows = np.empty(bound, dtype=np.int64)
    npairs = 0
    for r in range(m):
        first[r] = r
        for at in range(jac_start[r], jac_start[r + 1]):  # J_r meets M^-1 J_s^T
            k = jac_cols[at]
            for at_s in range(resp_col_start[k], resp_col_start[k + 1]):
                s = resp_col_rows[at_s]
                if s <= r and stamp[s] != r:
                    stamp[s] = r
                    pair_rows[npairs] = s
                    npairs += 1
                    first[r] = min(first[r], s)
        for at in range(count[r], count[r + 1]):  # M^-1 J_r^T meets J_s
            k = cols[at]
            for at_s in range(jac_col_start[k], jac_col_start[k + 1]):
                s = jac_col_rows[at_s]
                if s <= r and stamp[s] != r:
                    stamp[s] = r
                    pair_rows[npairs] = s
                    npairs += 1
                    first[r] = min(first[r], s)
        pair_start[r + 1] = npairs
    return pair_start, pair_rows[:npairs]


@njit
def zero_envelope(gram, first):
    """G = 0 wherever the envelope solves read it: row r on [first[r], last[r]] (``envelope_last``), both
    triangles. Row r's range can hold columns c > r whose own rows start after r (first[c] > r: a row that meets
    neither r nor the rows before it, while a later row reaches back past r); those entries are zero and written by
    no product, so they are set here: column c on the rows from min(first[j] for j >= c) to c, and its mirror.
    O(m b) for an envelope of width b, no allocation."""
    low = gram.shape[0]
    for c in range(gram.shape[0] - 1, -1, -1):
        low = min(low, first[c])
        for s in range(low, c + 1):
            gram[s, c] = 0.0
            gram[c, s] = 0.0


@njit
def _pair_products(jac, resp, count, cols, pair_start, pair_rows, first, gram):
    """G[r, s] = G[s, r] = (J_r . M^-1 J_s^T + J_s . M^-1 J_r^T) / 2 for the pairs of ``_meeting_rows`` (the
    responses' columns cols, count), G first set to zero on its envelope (``zero_envelope``): O(m b + the pairs'
    products), no allocation."""
    zero_envelope(gram, first)
    for r in range(jac.shape[0]):
        for p in range(pair_start[r], pair_start[r + 1]):
            s = pair_rows[p]
            g = 0.0
            for at in range(count[s], count[s + 1]):
                g += jac[r, cols[at]] * resp[s, cols[at]]
            for at in range(count[r], count[r + 1]):
                g += jac[s, cols[at]] * resp[r, cols[at]]
            gram[r, s] = 0.5 * g
            gram[s, r] = 0.5 * g


@njit
def row_colours(body_int, row_bodies):
    """(colour (k,), number of colours, root (nbodies,)): a greedy colouring of k rows that act on at most two bodies
    each (row_bodies (k, 2), -1: none) such that rows of one colour act on disjoint subtrees hung from the ground
    (root[i]: the body of body i's subtree that is hinged to the ground). The mass matrix (and the augmented
    route's KKT matrix) is block diagonal over those subtrees, so one recursive pass (tree solve) with the rows of
    a colour loaded together gives each row's response on its own subtrees (a row of parallelograms: 4 colours for
    its 2 n rows)."""
    n = body_int.shape[0]
    k = row_bodies.shape[0]
    root = np.empty(n, dtype=np.int64)
    for i in range(n):  # parents come first
        p = body_int[i, PARENT]
        root[i] = i if p < 0 else root[p]
    colour = np.full(k, -1, dtype=np.int64)
    stamp = np.full(n, -1, dtype=np.int64)  # stamp[b]: the last colour whose rows took subtree b
    done = 0
    ncolours = 0
    while done < k:
        c = ncolours
        ncolours += 1
        for r in range(k):
            if colour[r] >= 0:
                continue
            free = True
            for side in range(2):
                body = row_bodies[r, side]
                if body >= 0 and stamp[root[body]] == c:
                    free = False
            if free:
                colour[r] = c
                done += 1
                for side in range(2):
                    body = row_bodies[r, side]
                    if body >= 0:
                        stamp[root[body]] = c
    return colour, ncolours, root


@njit
def loop_pattern(body_int, loop_int, m, nq):
    """The structure of the loop rows, fixed by the tree and the loops (not by the state): (jac_start (m + 1,),
    jac_cols, resp_start (m + 1,), resp_cols, row_bodies (m, 2), resp_col_start (nq + 1,), resp_col_rows,
    colour_start, colour_rows, pair_start (m + 1,), pair_rows, first (m,), jac_col_start (nq + 1,), jac_col_rows).
    Row r of J can be nonzero only on the coordinates of the joints on the paths of its loop's two bodies to the
    ground, jac_cols[jac_start[r]:jac_start[r + 1]] (increasing), and its response M^-1 J_r^T only on the
    coordinates of the subtrees hung from the ground that hold those bodies (M is block diagonal over them),
    resp_cols[resp_start[r]:resp_start[r + 1]] (increasing); resp_col_rows[resp_col_start[k]:...] the rows whose
    responses reach coordinate k (increasing); row_bodies[r] the loop's bodies a, b (-1: the ground). O(N + the
    number of entries): a row of n parallelograms has 3 columns of J and 4 of its response a row, where the dense
    (m, nq) arrays hold 2 n + 1. Then, as fixed as those: the rows by colour of ``row_colours`` (rows on disjoint
    subtrees share a response pass), colour_rows[colour_start[c]:colour_start[c + 1]] (increasing); the pairs of
    rows s <= r that meet in J M^-1 J^T, pair_rows[pair_start[r]:pair_start[r + 1]] (``_meeting_rows``), and its
    envelope first (m,); J's rows by column, jac_col_rows[jac_col_start[k]:jac_col_start[k + 1]] (increasing).
    Built once per model (``recursive_mbd.dynamics.loops.LoopWorkspace``, the time loops' systems) and passed to
    the kernels, which allocate none of it per evaluation."""
    nb = body_int.shape[0]
    nloops = loop_int.shape[0]
    root = np.empty(nb, dtype=np.int64)
    branch_start = np.zeros(nb + 1, dtype=np.int64)  # the coordinates of each subtree hung from the ground
    for i in range(nb):  # parents come first
        p = body_int[i, PARENT]
        root[i] = i if p < 0 else root[p]
        branch_start[root[i] + 1] += body_int[i, NDOF]
    for i in range(nb):
        branch_start[i + 1] += branch_start[i]
    branch_coords = np.empty(max(nq, 1), dtype=np.int64)
    fill = branch_start[:nb].copy()
    for i in range(nb):  # coordinates in body order: increasing within each subtree
        for col in range(body_int[i, NDOF]):
            branch_coords[fill[root[i]]] = body_int[i, QIDX] + col
            fill[root[i]] += 1
    row_bodies = np.full((m, 2), -1, dtype=np.int64)
    jac_start = np.zeros(m + 1, dtype=np.int64)
    resp_start = np.zeros(m + 1, dtype=np.int64)
    stamp = np.full(max(nq, 1), -1, dtype=np.int64)
    loop_cols = np.empty(max(nq, 1), dtype=np.int64)
    jac_cols = np.empty(0, dtype=np.int64)
    resp_cols = np.empty(0, dtype=np.int64)
    for grow in range(2):  # count, then fill
        jac_at = 0
        resp_at = 0
        for lp in range(nloops):
            r0 = loop_int[lp, LROW]
            r1 = loop_int[lp + 1, LROW] if lp + 1 < nloops else m
            ncols = 0
            for side in range(2):  # the joints on the two bodies' paths to the ground
                i = loop_int[lp, LBODY_A] if side == 0 else loop_int[lp, LBODY_B]
                while i >= 0:
                    for col in range(body_int[i, NDOF]):
                        k = body_int[i, QIDX] + col
                        if stamp[k] != lp:
                            stamp[k] = lp
                            loop_cols[ncols] = k
                            ncols += 1
                    i = body_int[i, PARENT]
            ordered = np.sort(loop_cols[:ncols])
            a = loop_int[lp, LBODY_A]
            b = loop_int[lp, LBODY_B]
            ra = root[a] if a >= 0 else -1
            rb = root[b] if b >= 0 else -1
            if ra == rb:
                rb = -1
            if ra < 0:
                ra = rb
                rb = -1
            for r in range(r0, r1):
                row_bodies[r, 0] = a
                row_bodies[r, 1] = b
                if grow == 1:
                    jac_cols[jac_at:jac_at + ncols] = ordered
                jac_at += ncols
                jac_start[r + 1] = jac_at
                # the two subtrees' coordinates, merged in increasing order
                ia = branch_start[ra] if ra >= 0 else 0
                ea = branch_start[ra + 1] if ra >= 0 else 0
                ib = branch_start[rb] if rb >= 0 else 0
                eb = branch_start[rb + 1] if rb >= 0 else 0
                while ia < ea or ib < eb:
                    if ib >= eb or (ia < ea and branch_coords[ia] < branch_coords[ib]):
                        k = branch_coords[ia]
                        ia += 1
                    else:
                        k = branch_coords[ib]
                        ib += 1
                    if grow == 1:
                        resp_cols[resp_at] = k
                    resp_at += 1
                resp_start[r + 1] = resp_at
        if grow == 0:
            jac_cols = np.empty(jac_at, dtype=np.int64)
            resp_cols = np.empty(resp_at, dtype=np.int64)
            stamp[:] = -1
    resp_col_start, resp_col_rows = _columns_of(resp_start, resp_cols, nq)
    colour, ncolours, _ = row_colours(body_int, row_bodies)
    colour_start, colour_rows = _columns_of(np.arange(m + 1), colour, ncolours)
    first = np.empty(m, dtype=np.int64)
    pair_start, pair_rows = _meeting_rows(jac_start, jac_cols, resp_start, resp_cols, nq, first)
    jac_col_start, jac_col_rows = _columns_of(jac_start, jac_cols, nq)
    return (jac_start, jac_cols, resp_start, resp_cols, row_bodies, resp_col_start, resp_col_rows, colour_start,
            colour_rows, pair_start, pair_rows, first, jac_col_start, jac_col_rows)


@njit
def gram_envelope(jac, resp, pattern, gram, first):
    """G = J M^-1 J^T (``gram_matrix``) inside its envelope first (m,), from the loops' structure
    (``loop_pattern``): O(m b + the pairs' products) for a width b, G untouched outside the envelope, which the
    envelope solves (``_zone_solve``, ``_closure_solve``) do not read; the same numbers as ``gram_matrix``."""
    copy_into(first, pattern[11], 0)
    _pair_products(jac, resp, pattern[2], pattern[3], pattern[9], pattern[10], first, gram)


@njit
def loop_responses(body_int, body_real, q, jac, pattern, ws, resp, zeros, no_gravity):
    """``constraint_responses`` without driven joints on the loops' structure (``loop_pattern``): resp[r] =
    M^-1 J_r^T on row r's response columns, one recursive pass a colour of rows on disjoint subtrees
    (``row_colours``, kept in the pattern), O(colours N + entries) against the dense arrays' O(m nq). Entries of
    resp outside a row's response columns are left as they are (readers take the columns of ``loop_pattern``).
    Returns the status."""
    jac_start, jac_cols, resp_start, resp_cols = pattern[0], pattern[1], pattern[2], pattern[3]
    colour_start, colour_rows = pattern[7], pattern[8]
    force = np.zeros(jac.shape[1])
    no_driven = np.zeros(0, dtype=np.uint8)
    for c in range(colour_start.shape[0] - 1):
        first = colour_rows[colour_start[c]]
        for at_r in range(colour_start[c], colour_start[c + 1]):
            r = colour_rows[at_r]
            for at in range(jac_start[r], jac_start[r + 1]):
                force[jac_cols[at]] = jac[r, jac_cols[at]]
        status = forward_dynamics(body_int, body_real, no_gravity, q, zeros, force, resp[:0], no_driven, ws,
                                  resp[first], resp[0, :0])
        if status != STATUS_OK:
            return status
        for at_r in range(colour_start[c], colour_start[c + 1]):  # the other rows take their subtrees' accelerations
            r = colour_rows[at_r]
            for at in range(jac_start[r], jac_start[r + 1]):
                force[jac_cols[at]] = 0.0
            if r > first:
                for at in range(resp_start[r], resp_start[r + 1]):
                    resp[r, resp_cols[at]] = resp[first, resp_cols[at]]
    return STATUS_OK


@njit
def pattern_times(mat, start, cols, vec, out):
    """out = mat vec (rows,) over each row's columns cols[start[r]:start[r + 1]] (increasing; the others zero):
    ``matrix_times``' sums, O(entries)."""
    for r in range(mat.shape[0]):
        v = 0.0
        for at in range(start[r], start[r + 1]):
            v += mat[r, cols[at]] * vec[cols[at]]
        out[r] = v


@njit
def multiplier_rhs(jac, acc, gamma, phid, phi, stab, rhs):
    """rhs = J acc - (gamma - 2 alpha phi' - beta^2 phi) (m,), stab = (alpha, beta, ...): the right-hand side of the
    multipliers' system (J Y) lambda = rhs for the unconstrained accelerations acc (Baumgarte's terms; 0, 0: none).
    Shared by the planar and the spatial loop layers."""
    matrix_times(jac, acc, rhs)
    baumgarte_rhs(gamma, phid, phi, stab, rhs)


@njit
def baumgarte_rhs(gamma, phid, phi, stab, rhs):
    """rhs -= gamma - 2 alpha phi' - beta^2 phi, stab = (alpha, beta, ...): ``multiplier_rhs`` after J acc."""
    alpha = stab[0]
    beta = stab[1]
    for r in range(rhs.shape[0]):
        rhs[r] = rhs[r] - (gamma[r] - 2.0 * alpha * phid[r] - beta * beta * phi[r])


@njit
def matrix_times(mat, vec, out):
    """out = mat vec (rows,), each row's sum taken in column order (bit for bit the written-out loops it replaces)."""
    for r in range(mat.shape[0]):
        v = 0.0
        for k in range(mat.shape[1]):
            v += mat[r, k] * vec[k]
        out[r] = v


# ``regular_solve`` takes G as regular when the Rayleigh quotient of inverse iteration (an upper bound of its smallest
# eigenvalue, near it after REGULAR_ITERATIONS steps) exceeds these multiples of zone and rcond times a bound of its
# largest (its largest absolute row sum); otherwise the eigen-decomposition decides.
REGULAR_ZONE_MARGIN = 2.0
REGULAR_RCOND_MARGIN = 1e3
REGULAR_ITERATIONS = 4


@njit
def _envelope_cholesky(gram, low, first):
    """low (m, m) lower triangular with low low^T = gram on G's envelope (first: ``_envelope_first``, or the
    envelope its builder knows; no fill before it): only the entries of low inside the envelope are written and
    read, so low may be uninitialised scratch. False when a pivot is not positive."""
    m = gram.shape[0]
    for i in range(m):
        for j in range(first[i], i + 1):
            v = gram[i, j]
            for k in range(max(first[i], first[j]), j):
                v -= low[i, k] * low[j, k]
            if j < i:
                low[i, j] = v / low[j, j]
            elif v > 0.0:
                low[i, i] = math.sqrt(v)
            else:
                return False
    return True


@njit
def envelope_last(first, last):
    """last[i]: the last row j whose envelope reaches column i (i where none): for a symmetric G with the
    envelope ``first``, row i is zero outside [first[i], last[i]]. O(m b) for an envelope of width b."""
    for i in range(first.shape[0]):
        last[i] = i
    for j in range(first.shape[0]):
        for i in range(first[j], j):
            last[i] = max(last[i], j)


@njit
def _row_abs_sum(gram, r, first, last):
    """sum_k |G[r, k]| over row r's nonzero range [first[r], last[r]] (column order: the dense sum's value)."""
    v = 0.0
    for k in range(first[r], last[r] + 1):
        v += abs(gram[r, k])
    return v


@njit
def _envelope_solve(low, first, rhs, out):
    """out = (low low^T)^-1 rhs for the factor of ``_envelope_cholesky``: O(m b) for an envelope of width b (the
    backward sweep visits the rows j > i whose envelope reaches column i, up to last[i])."""
    m = rhs.shape[0]
    last = np.empty(m, dtype=np.int64)
    envelope_last(first, last)
    for i in range(m):
        v = rhs[i]
        for k in range(first[i], i):
            v -= low[i, k] * out[k]
        out[i] = v / low[i, i]
    for i in range(m - 1, -1, -1):
        v = out[i]
        for j in range(i + 1, last[i] + 1):
            if first[j] <= i:
                v -= low[j, i] * out[j]
        out[i] = v / low[i, i]


@njit
def regular_factor(gram, threshold, low, first):
    """True when the smallest eigenvalue of the finite symmetric G is surely above threshold times its largest,
    with its Cholesky factor in low (m, m, scratch) on G's envelope first (m,) (``_envelope_cholesky``); False
    otherwise (the factorisation failed or the test did not pass). The smallest eigenvalue is the Rayleigh
    quotient after REGULAR_ITERATIONS steps of inverse iteration from a fixed irregular start (it bounds the
    eigenvalue from above), the largest is bounded by the largest absolute row sum (Gershgorin), so the test errs
    on the side of the eigen-decomposition. Reads G inside its envelope only: O(m b^2) for a width b."""
    m = gram.shape[0]
    last = np.empty(m, dtype=np.int64)
    envelope_last(first, last)
    top = 0.0
    for r in range(m):
        top = max(top, _row_abs_sum(gram, r, first, last))
    if not top > 0.0 or not _envelope_cholesky(gram, low, first):
        return False
    x = np.empty(m)
    y = np.empty(m)
    for r in range(m):
        x[r] = 1.0 + 0.5 * math.sin(1.7 * r + 0.3)
    for _ in range(REGULAR_ITERATIONS):
        size = 0.0
        for r in range(m):
            size = max(size, abs(x[r]))
        for r in range(m):
            x[r] /= size
        _envelope_solve(low, first, x, y)
        copy_into(x, y, 0)
    numerator = 0.0
    denominator = 0.0
    for r in range(m):
        gx = 0.0
        for k in range(first[r], last[r] + 1):
            gx += gram[r, k] * x[k]
        numerator += x[r] * gx
        denominator += x[r] * x[r]
    return numerator > threshold * top * denominator


@njit
def regular_solve(gram, rhs, threshold, out):
    """out = G^-1 rhs by a Cholesky factorisation where ``regular_factor`` finds G surely regular (True);
    False (out undefined) otherwise. G dense; its envelope found by a scan (``regular_solve_envelope`` where the
    caller knows it)."""
    first = np.empty(rhs.shape[0], dtype=np.int64)
    _envelope_first(gram, first)
    return regular_solve_envelope(gram, first, rhs, threshold, out)


@njit
def regular_solve_envelope(gram, first, rhs, threshold, out):
    """``regular_solve`` on G's envelope first (m,): G is read inside it only (the entries outside may be
    anything), O(m b^2) for a width b."""
    m = rhs.shape[0]
    low = np.empty((m, m))
    if not regular_factor(gram, threshold, low, first):
        return False
    _envelope_solve(low, first, rhs, out)
    return True


@njit
def cutoff_solve(gram, rhs, cutoff, out):
    """out = G^-1 rhs for the finite symmetric G where every eigenvalue of G is above cutoff > 0 (then G's
    pseudo-inverse with that cut-off is its inverse): True, with out from a Cholesky factorisation of G's envelope;
    False (out undefined) where some eigenvalue is not (counted by inertia, ``_inertia_above``) or a factorisation
    breaks down. O(m b^2) for a G of bandwidth b: a pseudo-inverse solve that needs no eigen-decomposition where
    G has full rank but is not surely regular (``regular_solve``), as near a change point. G dense
    (``cutoff_solve_envelope`` where the caller knows its envelope)."""
    first = np.empty(rhs.shape[0], dtype=np.int64)
    _envelope_first(gram, first)
    return cutoff_solve_envelope(gram, first, rhs, cutoff, out)


@njit
def cutoff_solve_envelope(gram, first, rhs, cutoff, out):
    """``cutoff_solve`` on G's envelope first (m,): G read inside it only."""
    return _cutoff_solve(gram, first, rhs, cutoff, 0.0, out, False) == rhs.shape[0]


@njit
def cutoff_rank_solve_envelope(gram, first, rhs, cutoff, floor, out):
    """The rank of the finite symmetric positive semi-definite G at the cut-off cutoff > 0 (its eigenvalues above
    it, counted by inertia) and out = its pseudo-inverse solve, without the eigen-decomposition: where every
    eigenvalue is above the cut-off, G^-1 rhs (``cutoff_solve``); elsewhere, where every eigenvalue is above floor
    (0 < floor < cutoff), the banded regularised least-squares solve with mu = cutoff (``banded_filtered_solve``:
    f(s) = s / (s^2 + mu^2)), which gives the pseudo-inverse's 1 / s in every direction whose eigenvalue s lies far
    above the cut-off (to a relative (mu / s)^2) and damps those below it by s / mu^2; the two part only for
    eigenvalues within a few decades of the cut-off, deep in a change point's zone, where the filter is the smooth
    one. O(m b^2) for a G of bandwidth b on its envelope first (m,) against the eigen-decomposition's O(m^3).
    Returns the rank, or -1 (out undefined: the caller takes the eigen-decomposition) where an eigenvalue lies at
    or below floor (round-off: redundant rows, whose right-hand side components the pseudo-inverse drops and
    s / mu^2 would amplify) or a factorisation breaks down."""
    return _cutoff_solve(gram, first, rhs, cutoff, floor, out, True)


@njit
def _cutoff_solve(gram, first, rhs, cutoff, floor, out, filtered):
    """``cutoff_rank_solve_envelope``; without ``filtered`` -1 where the rank is below m (no regularised solve)."""
    m = rhs.shape[0]
    low = np.empty((m, m))
    pivots = np.empty(m)
    rank = _inertia_above(gram, cutoff, first, low, pivots) if cutoff > 0.0 else -1
    if rank == m:
        if not _envelope_cholesky(gram, low, first):
            return -1
        _envelope_solve(low, first, rhs, out)
        return m
    if rank < 0 or not filtered or not 0.0 < floor < cutoff or _inertia_above(gram, floor, first, low, pivots) != m:
        return -1
    # mu = 1 * cutoff: the regularisation is the cut-off itself, not a fraction of the largest eigenvalue
    if not banded_filtered_solve_envelope(gram, first, rhs, 1.0, out, cutoff):
        return -1
    return rank


@njit
def filtered_solve(gram, rhs, rcond, out):
    """out = f(G) rhs (``filtered_solve_weak``, which documents it); returns the numerical rank of G, or -1."""
    rank, _ = filtered_solve_weak(gram, rhs, rcond, out, 0.0)
    return rank


@njit
def filtered_solve_weak(gram, rhs, rcond, out, zone):
    """out = f(G) rhs for the symmetric positive semi-definite G = J M^-1 J^T: a regularised minimum-norm solve.

    With G = U diag(s) U^T, f(s) = s / (s^2 + mu^2) and mu = rcond * max(s): directions with s >> mu are solved
    exactly (relative error (mu / s)^2), those with s << mu are dropped smoothly, and every component of out is
    bounded by |rhs| / (2 mu). f(G) is a smooth (analytic) function of G, so the solution is a smooth function of
    the state: no rank decision that a Runge-Kutta step could see flip between its stages (a hard singular-value
    cut-off does, and then the step's error estimate is meaningless near a singular position). Returns the
    number of s > mu, the numerical rank of G, or -1 (out left NaN) when G or rhs is not finite (an overflow),
    and the number of weak eigenvalues, REDUNDANT * max(s) < s <= zone * max(s) (``branch_normals``: a loop
    Jacobian near a change point; none for zone = 0).

    Where G is surely regular (``regular_solve``: its smallest eigenvalue above REGULAR_ZONE_MARGIN zone and
    REGULAR_RCOND_MARGIN rcond times its largest) out = G^-1 rhs by a Cholesky factorisation instead, O(m b^2) for
    a G of bandwidth b (a row of loops) against the eigen-decomposition's O(m^3); it differs from f(G) rhs by at
    most (rcond / REGULAR_RCOND_MARGIN)^2 relative, 1e-6 in the weakest direction where the paths meet.
    """
    m = rhs.shape[0]
    finite = True
    for r in range(m):
        out[r] = 0.0
        finite = finite and math.isfinite(rhs[r])
        for k in range(m):
            finite = finite and math.isfinite(gram[r, k])
    if not finite:
        out[:] = np.nan
        return -1, 0
    if m == 0:
        return 0, 0
    if regular_solve(gram, rhs, max(REGULAR_ZONE_MARGIN * zone, REGULAR_RCOND_MARGIN * rcond), out):
        return m, 0
    values, vectors = np.linalg.eigh(gram)
    top = 0.0
    for r in range(m):
        top = max(top, values[r])
    if not top > 0.0:  # no constraint acts at all (J = 0)
        return 0, 0
    mu = rcond * top
    rank = 0
    weak = 0
    for r in range(m):
        s = values[r]
        if s > mu:
            rank += 1
        if REDUNDANT * top < s <= zone * top:
            weak += 1
        if not s > 0.0:  # round-off below zero: a null direction
            continue
        proj = 0.0
        for k in range(m):
            proj += vectors[k, r] * rhs[k]
        proj *= s / (s * s + mu * mu)
        for k in range(m):
            out[k] += proj * vectors[k, r]
    return rank, weak


# ``eigen_counts`` brackets the largest eigenvalue by bisection to this relative width (eigvalsh's own error is
# ~1e-16 of it; the counts' thresholds sit at 1e-14 and above).
TOP_WIDTH = 1e-13


@njit
def _inertia_above(gram, sigma, first, low, pivots):
    """The number of eigenvalues of the symmetric G above sigma, by Sylvester's law of inertia: the positive
    pivots of the factorisation G - sigma I = L D L^T on G's envelope (first: ``_envelope_cholesky``; no
    pivoting, O(m b^2) for a G of bandwidth b), into low and pivots; -1 where a pivot vanishes or overflows."""
    m = gram.shape[0]
    count = 0
    for i in range(m):
        start = first[i]
        for j in range(start, i):
            v = gram[i, j]
            for k in range(max(start, first[j]), j):
                v -= low[i, k] * pivots[k] * low[j, k]
            low[i, j] = v / pivots[j]
        v = gram[i, i] - sigma
        for k in range(start, i):
            v -= low[i, k] * low[i, k] * pivots[k]
        if not (v != 0.0 and math.isfinite(v)):
            return -1
        pivots[i] = v
        if v > 0.0:
            count += 1
    return count


@njit
def _envelope_first(gram, first):
    """first[i]: the column of the first nonzero entry of row i of G (i where none before the diagonal)."""
    for i in range(gram.shape[0]):
        first[i] = i
        for k in range(i):
            if gram[i, k] != 0.0:
                first[i] = k
                break


@njit
def _largest_eigenvalue(gram, first, low, pivots):
    """The largest eigenvalue of the finite symmetric G by bisection (to TOP_WIDTH) between its largest diagonal
    entry (a Rayleigh quotient) and its largest absolute row sum (Gershgorin), each step an inertia
    (``_inertia_above``, scratch low (m, m), pivots (m,)); -1 where a factorisation broke down or G has no
    positive diagonal entry."""
    m = gram.shape[0]
    last = np.empty(m, dtype=np.int64)
    envelope_last(first, last)
    lo = 0.0
    hi = 0.0
    for i in range(m):
        lo = max(lo, gram[i, i])
        hi = max(hi, _row_abs_sum(gram, i, first, last))
    if not lo > 0.0:
        return -1.0
    while hi - lo > TOP_WIDTH * lo:
        mid = 0.5 * (lo + hi)
        above = _inertia_above(gram, mid, first, low, pivots)
        if above < 0:
            return -1.0
        if above > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@njit
def eigen_counts(gram, thresholds, counts):
    """counts[i] = the number of eigenvalues s > thresholds[i] * top of the finite symmetric positive semi-definite
    G, top its largest eigenvalue, as ``np.linalg.eigvalsh`` would count them but from inertias on G's envelope
    (``_inertia_above``, ``_largest_eigenvalue``): O(m b^2) a factorisation for a G of bandwidth b (a row of loops)
    against eigvalsh's O(m^3). Returns top, or -1 where a factorisation broke down or G has no positive diagonal
    entry: then the caller takes the eigenvalues."""
    first = np.empty(gram.shape[0], dtype=np.int64)
    _envelope_first(gram, first)
    return eigen_counts_envelope(gram, first, thresholds, counts)


@njit
def eigen_counts_envelope(gram, first, thresholds, counts):
    """``eigen_counts`` on G's envelope first (m,): G read inside it only."""
    m = gram.shape[0]
    low = np.empty((m, m))
    pivots = np.empty(m)
    top = _largest_eigenvalue(gram, first, low, pivots)
    if not top > 0.0:
        return -1.0
    for i in range(thresholds.shape[0]):
        counts[i] = _inertia_above(gram, thresholds[i] * top, first, low, pivots)
        if counts[i] < 0:
            return -1.0
    return top


@njit
def _rotate_in(tri, extent, qtb, row, lo, hi, beta):
    """Givens rotations that take the row (its nonzero entries in [lo, hi], right-hand side beta) into the upper
    triangular factor tri (row j nonzero up to column extent[j], -1: not yet started; tri is read and written in
    [j, extent[j]] only) and its right-hand side qtb; leaves row zero."""
    start = lo
    j = lo
    while j <= hi:
        w = row[j]
        if w != 0.0:
            if extent[j] < 0:  # an empty row of the factor: this row is it
                for k in range(j, hi + 1):
                    tri[j, k] = row[k]
                extent[j] = hi
                qtb[j] = beta
                break
            d = tri[j, j]
            radius = math.hypot(d, w)
            c = d / radius
            s = w / radius
            end = max(extent[j], hi)
            for k in range(extent[j] + 1, end + 1):  # the factor's row grows: its new entries start at zero
                tri[j, k] = 0.0
            for k in range(j, end + 1):
                t = tri[j, k]
                u = row[k]
                tri[j, k] = c * t + s * u
                row[k] = c * u - s * t
            t = qtb[j]
            qtb[j] = c * t + s * beta
            beta = c * beta - s * t
            extent[j] = end
            hi = end
        j += 1
    for k in range(start, hi + 1):
        row[k] = 0.0


@njit
def banded_filtered_solve(gram, rhs, rcond, out, top):
    """out = f(G) rhs of ``filtered_solve_weak`` (f(s) = s / (s^2 + mu^2), mu = rcond * top) for a finite symmetric
    positive semi-definite G without its eigen-decomposition: the regularised least-squares solution of
    min |G x - rhs|^2 + mu^2 |x|^2, i.e. (G^2 + mu^2 I) x = G rhs, by Givens rotations of the stacked rows (G; mu I)
    into a triangular factor (``_rotate_in``; bandwidth up to twice G's), then back substitution: O(m b^2) for a G
    of bandwidth b against eigh's O(m^3), and as well conditioned (top / mu, not its square). top: G's largest
    eigenvalue where the caller has it (``eigen_counts``), else 0 (then ``_largest_eigenvalue``). False where it
    cannot be bracketed (then the caller takes the eigen-decomposition)."""
    first = np.empty(rhs.shape[0], dtype=np.int64)
    _envelope_first(gram, first)
    return banded_filtered_solve_envelope(gram, first, rhs, rcond, out, top)


@njit
def banded_filtered_solve_envelope(gram, first, rhs, rcond, out, top):
    """``banded_filtered_solve`` on G's envelope first (m,): G read inside it only."""
    m = rhs.shape[0]
    if not top > 0.0:
        top = _largest_eigenvalue(gram, first, np.empty((m, m)), np.empty(m))
    if not top > 0.0:
        return False
    mu = rcond * top
    last = np.empty(m, dtype=np.int64)  # G symmetric: row i nonzero in [first[i], last[i]]
    envelope_last(first, last)
    tri = np.empty((m, m))
    extent = np.full(m, -1, dtype=np.int64)
    qtb = np.zeros(m)
    row = np.zeros(m)
    for i in range(m):
        for k in range(first[i], last[i] + 1):
            row[k] = gram[i, k]
        _rotate_in(tri, extent, qtb, row, first[i], last[i], rhs[i])
        row[i] = mu
        _rotate_in(tri, extent, qtb, row, i, i, 0.0)
    for i in range(m - 1, -1, -1):
        v = qtb[i]
        for k in range(i + 1, extent[i] + 1):
            v -= tri[i, k] * out[k]
        out[i] = v / tri[i, i]
    return True


@njit
def _zone_solve(gram, first, rhs, rcond, out, zone):
    """``filtered_solve_weak`` for the time loops' dynamics and projection (zone > 0) without eigen-decompositions
    where G's envelope allows: where G is finite and not surely regular, (rank, weak) come from ``eigen_counts``;
    with weak eigenvalues (a change point's zone, where the branch replaces the filtered solve) out is left unset,
    so that the caller, where it finds no branch, calls ``filtered_solve_weak`` itself; without, out = f(G) rhs by
    ``banded_filtered_solve``. Elsewhere ``filtered_solve_weak``'s (rank, weak) and out. G is read inside its
    envelope first (m,) only (``gram_envelope``: O(m b^2) for a width b where G is finite and has no weak
    eigenvalue), and set to zero outside it where the eigen-decomposition has to be taken."""
    m = rhs.shape[0]
    last = np.empty(m, dtype=np.int64)
    envelope_last(first, last)
    if zone > 0.0 and m > 0 and _envelope_finite(gram, first, last, rhs):
        if regular_solve_envelope(gram, first, rhs, max(REGULAR_ZONE_MARGIN * zone, REGULAR_RCOND_MARGIN * rcond),
                                  out):
            return m, 0
        counts = np.empty(3, dtype=np.int64)
        top = eigen_counts_envelope(gram, first, np.array([rcond, zone, REDUNDANT]), counts)
        if top > 0.0:
            if counts[2] > counts[1]:
                return counts[0], counts[2] - counts[1]
            # no weak eigenvalue: f(G) rhs without eigh
            if banded_filtered_solve_envelope(gram, first, rhs, rcond, out, top):
                return counts[0], 0
    zero_outside_envelope(gram, first, last)
    return filtered_solve_weak(gram, rhs, rcond, out, zone)


@njit
def _envelope_finite(gram, first, last, rhs):
    """True where rhs and G inside its envelope [first[r], last[r]] (a row r's nonzero range) are finite (rhs of
    shape (0,): G alone)."""
    for r in range(first.shape[0]):
        if rhs.shape[0] > 0 and not math.isfinite(rhs[r]):
            return False
        for k in range(first[r], last[r] + 1):
            if not math.isfinite(gram[r, k]):
                return False
    return True


@njit
def zero_outside_envelope(gram, first, last):
    """G[r, k] = 0 outside row r's range [first[r], last[r]]: the dense G of an envelope's entries, for the dense
    solves (the eigen-decomposition). O(m^2)."""
    m = gram.shape[0]
    for r in range(m):
        for k in range(first[r]):
            gram[r, k] = 0.0
        for k in range(last[r] + 1, m):
            gram[r, k] = 0.0


@njit
def _strong_rank(body_int, body_real, q, jac, ws, resp, pattern, zeros, no_gravity, gram, zone):
    """(number of eigenvalues s > zone * max(s) of J M^-1 J^T at q, number in (REDUNDANT, zone] * max(s)) for
    the jac of q, or (-1, 0) on a failed pass; on the loops' structure (``loop_pattern``, no driven joint)."""
    if loop_responses(body_int, body_real, q, jac, pattern, ws, resp, zeros, no_gravity) != STATUS_OK:
        return -1, 0
    m = gram.shape[0]
    first = np.empty(m, dtype=np.int64)
    last = np.empty(m, dtype=np.int64)
    gram_envelope(jac, resp, pattern, gram, first)
    envelope_last(first, last)
    if not _envelope_finite(gram, first, last, gram[0, :0]):
        return -1, 0
    if regular_factor(gram, REGULAR_ZONE_MARGIN * zone, np.empty((m, m)), first):
        return m, 0
    return zone_counts_envelope(gram, first, zone)


@njit
def zone_counts(gram, zone):
    """(number of eigenvalues s > zone * max(s) of the finite symmetric positive semi-definite G, number in
    (REDUNDANT, zone] * max(s)) by inertias on its envelope (``eigen_counts``), by eigvalsh where a factorisation
    breaks down."""
    first = np.empty(gram.shape[0], dtype=np.int64)
    _envelope_first(gram, first)
    return zone_counts_envelope(gram, first, zone)


@njit
def zone_counts_envelope(gram, first, zone):
    """``zone_counts`` on G's envelope first (m,): G read inside it only, set to zero outside it where the
    eigenvalues have to be taken."""
    counts = np.empty(2, dtype=np.int64)
    if eigen_counts_envelope(gram, first, np.array([zone, REDUNDANT]), counts) > 0.0:
        return counts[0], counts[1] - counts[0]
    last = np.empty(first.shape[0], dtype=np.int64)
    envelope_last(first, last)
    zero_outside_envelope(gram, first, last)
    values = np.linalg.eigvalsh(gram)
    top = values[-1]
    strong = 0
    weak = 0
    for r in range(values.shape[0]):
        if values[r] > zone * top:
            strong += 1
        elif values[r] > REDUNDANT * top:
            weak += 1
    return strong, weak


@njit
def branch_basis(rows, rank, qd, speed, step, normals, curvature):
    """The branch's normal space at a point from orthonormal bases rows[c, :rank] (npts, >= rank, ncols) of the
    normal spaces at the points displaced by BRANCH_OFFSETS[c] * step along qd / speed (``branch_normals``; any
    coordinates): normals[:rank] the rank dominant eigenvectors (orthonormal) of the extrapolated projector sum_c
    BRANCH_WEIGHTS[c] Q_c^T Q_c, curvature[:rank] = -N (dP/dt) qd with dP/dt = speed sum_c BRANCH_SLOPES[c]
    Q_c^T Q_c / step."""
    npts = BRANCH_OFFSETS.shape[0]
    nq = qd.shape[0]
    # the weighted sum of the projectors Q_c^T Q_c (nq, nq) and its rank dominant eigenvectors
    projector = np.zeros((nq, nq))
    for j in range(npts):
        basis = np.ascontiguousarray(rows[j, :rank])
        projector += BRANCH_WEIGHTS[j] * (basis.T @ basis)
    for a in range(nq):  # symmetric up to round-off
        for b in range(a):
            v = 0.5 * (projector[a, b] + projector[b, a])
            projector[a, b] = v
            projector[b, a] = v
    _, vectors = np.linalg.eigh(projector)
    for t in range(rank):
        for k in range(nq):
            normals[t, k] = vectors[k, nq - 1 - t]
    # (dP/dsigma) qd = sum_c s_c Q_c^T (Q_c qd) / step
    slope = np.zeros(nq)
    for j in range(npts):
        for t in range(rank):
            c = 0.0
            for k in range(nq):
                c += rows[j, t, k] * qd[k]
            c *= BRANCH_SLOPES[j] / step
            for k in range(nq):
                slope[k] += c * rows[j, t, k]
    for t in range(rank):
        c = 0.0
        for k in range(nq):
            c += normals[t, k] * slope[k]
        curvature[t] = -c * speed


@njit
def normal_matrix(jac, pattern, out, first):
    """out = J J^T (m, m) inside its envelope first (m,), on the loops' structure (``loop_pattern``: J's rows by
    column): each entry's sum over the shared columns in column order, the dense product's, O(entries + the sum
    of the squared column counts) (bounded counts in a row of loops) instead of O(m^2 nq); out is set inside the
    envelope only (zero there outside the products) and first is the dense matrix's (``_envelope_first``: the first
    nonzero entry of each row), found from the structure's envelope in O(m b)."""
    m = jac.shape[0]
    start, rows = pattern[12], pattern[13]
    jac_start, jac_cols = pattern[0], pattern[1]
    for r in range(m):  # the structure's envelope: the first row that shares a column with row r
        f = r
        for at in range(jac_start[r], jac_start[r + 1]):
            k = jac_cols[at]
            if start[k + 1] > start[k]:
                f = min(f, rows[start[k]])
        first[r] = f
    zero_envelope(out, first)  # the whole range the envelope solves read, not row r's [first[r], r] alone
    for k in range(jac.shape[1]):
        for at in range(start[k], start[k + 1]):
            r = rows[at]
            v = jac[r, k]
            for at_s in range(start[k], at + 1):
                out[r, rows[at_s]] += v * jac[rows[at_s], k]
    for r in range(m):
        for s in range(first[r], r):
            out[s, r] = out[r, s]
        while first[r] < r and out[r, first[r]] == 0.0:  # the first nonzero entry, as a scan of the row finds it
            first[r] += 1


# A seed of ``_tangent_basis`` whose part in the null space (after the directions found) is below this fraction of
# it is dropped: nearly dependent on the others.
TANGENT_SEED_MIN = 1e-3


@njit
def _remove_components(v, basis, count):
    """v -= (basis[u] . v) basis[u] for u < count, in order (one Gram-Schmidt sweep against orthonormal rows)."""
    for u in range(count):
        c = 0.0
        for k in range(v.shape[0]):
            c += basis[u, k] * v[k]
        for k in range(v.shape[0]):
            v[k] -= c * basis[u, k]


@njit
def _append_unit(basis, count, v, minimum):
    """basis[count] = v / |v| and count + 1 if |v| > minimum, else count (v is round-off: dropped)."""
    norm = 0.0
    for k in range(v.shape[0]):
        norm += v[k] * v[k]
    norm = math.sqrt(norm)
    if norm > minimum:
        for k in range(v.shape[0]):
            basis[count, k] = v[k] / norm
        count += 1
    return count


@njit
def _tangent_basis(jac, pattern, qd, speed, tangents):
    """tangents (size, nq): an orthonormal basis of the null space of a J (m, nq) of full row rank m = nq - size,
    from the direction of qd (a motion along the branch: nearly tangent) and then the coordinate axes, each
    projected onto the null space twice, v - J^T (J J^T)^-1 J v (J J^T by ``normal_matrix`` and its envelope
    Cholesky factor, products with J on the loops' structure), and orthogonalised against the directions found.
    False when J J^T is not positive definite or the axes give fewer than size independent directions (then the
    normal route)."""
    m = jac.shape[0]
    nq = jac.shape[1]
    size = tangents.shape[0]
    gram = np.empty((m, m))
    first = np.empty(m, dtype=np.int64)
    normal_matrix(jac, pattern, gram, first)
    low = np.empty((m, m))
    if not _envelope_cholesky(gram, low, first):
        return False
    start, rows = pattern[12], pattern[13]
    v = np.empty(nq)
    w = np.empty(m)
    y = np.empty(m)
    found = 0
    seed = -1
    while found < size and seed < nq:
        if seed < 0:
            for k in range(nq):
                v[k] = qd[k] / speed
        else:
            v[:] = 0.0
            v[seed] = 1.0
        seed += 1
        for _ in range(2):
            w[:] = 0.0
            for k in range(nq):
                for at in range(start[k], start[k + 1]):
                    w[rows[at]] += jac[rows[at], k] * v[k]
            _envelope_solve(low, first, w, y)
            for k in range(nq):
                for at in range(start[k], start[k + 1]):
                    v[k] -= jac[rows[at], k] * y[rows[at]]
            _remove_components(v, tangents, found)
        found = _append_unit(tangents, found, v, TANGENT_SEED_MIN)  # the seeds have length 1
    return found == size


# Directions of the displaced points' tangents that Gram-Schmidt leaves below this length (of 1) are round-off:
# ``branch_tangent_basis`` drops them.
TANGENT_SPAN_MIN = 1e-12


@njit
def branch_tangent_basis(rows, qd, speed, step, tangent, normal_accel):
    """The tangent route's ``branch_basis``: from orthonormal bases rows[c] (npts, size, nq) of the tangent spaces
    at the displaced points, tangent (size, nq) an orthonormal basis of the branch's tangent space at the point
    and normal_accel (nq,) = N^T c, the branch's normal acceleration (``branch_basis``'s N^T curvature).

    With the normal projectors P_c = I - T_c^T T_c and BRANCH_WEIGHTS summing to one, the extrapolated projector
    is I - S, S = sum_c w_c T_c^T T_c: its dominant eigenvectors (the normals) span the complement of S's size
    dominant ones, which lie in the span of the T_c, so S is decomposed there (an orthonormal basis of the span
    by Gram-Schmidt, twice; a matrix of at most npts size rows). BRANCH_SLOPES sum to zero, so
    (dP/dsigma) qd = -sum_c s_c T_c^T (T_c qd) / step, and N^T c = -speed (I - T^T T) (dP/dsigma) qd."""
    npts = rows.shape[0]
    size = rows.shape[1]
    nq = qd.shape[0]
    span = np.zeros((npts * size, nq))
    count = 0
    v = np.empty(nq)
    for j in range(npts):
        for t in range(size):
            copy_into(v, rows[j, t], 0)
            for _ in range(2):
                _remove_components(v, span, count)
            count = _append_unit(span, count, v, TANGENT_SPAN_MIN)
    inner = np.empty((npts, size, count))  # T_c's rows on the span's basis
    for j in range(npts):
        for t in range(size):
            for a in range(count):
                c = 0.0
                for k in range(nq):
                    c += rows[j, t, k] * span[a, k]
                inner[j, t, a] = c
    small = np.zeros((count, count))
    for a in range(count):
        for b in range(a + 1):
            c = 0.0
            for j in range(npts):
                for t in range(size):
                    c += BRANCH_WEIGHTS[j] * inner[j, t, a] * inner[j, t, b]
            small[a, b] = c
            small[b, a] = c
    _, vectors = np.linalg.eigh(small)
    for t in range(size):
        for k in range(nq):
            c = 0.0
            for a in range(count):
                c += vectors[a, count - 1 - t] * span[a, k]
            tangent[t, k] = c
    slope = np.zeros(nq)
    for j in range(npts):
        for t in range(size):
            c = 0.0
            for k in range(nq):
                c += rows[j, t, k] * qd[k]
            c *= BRANCH_SLOPES[j] / step
            for k in range(nq):
                slope[k] -= c * rows[j, t, k]
    for k in range(nq):
        normal_accel[k] = slope[k]
    for t in range(size):
        c = 0.0
        for k in range(nq):
            c += tangent[t, k] * slope[k]
        for k in range(nq):
            normal_accel[k] -= c * tangent[t, k]
    for k in range(nq):
        normal_accel[k] *= -speed


@njit
def _tangent_coordinates(body_int, body_real, q, tangent, x, zeros, no_gravity, ws, mass_tangent, coef):
    """coef (size,) = (T M T^T)^-1 (T M x) for the tangent basis T (size, nq): x's M-orthogonal projection onto
    the tangent space is T^T coef. mass_tangent (size, nq) returns M T^T's columns (inverse dynamics at rest
    without gravity: O(N) each). Returns the status."""
    size = tangent.shape[0]
    nq = q.shape[0]
    no_wrench = np.zeros((0, 3))
    for t in range(size):
        status = inverse_dynamics(body_int, body_real, no_gravity, q, zeros, tangent[t], no_wrench, ws,
                                  mass_tangent[t])
        if status != STATUS_OK:
            return status
    small = np.empty((size, size))
    rhs = np.empty(size)
    for a in range(size):
        c = 0.0
        for k in range(nq):
            c += mass_tangent[a, k] * x[k]
        rhs[a] = c
        for b in range(a + 1):
            c = 0.0
            for k in range(nq):
                c += tangent[a, k] * mass_tangent[b, k]
            small[a, b] = c
            small[b, a] = c
    if filtered_solve(small, rhs, REDUNDANT, coef) < 0:
        return STATUS_NONFINITE_STATE
    return STATUS_OK


@njit
def branch_normals(body_int, body_real, loop_int, loop_real, pattern, q, qd, ws, com, acc, phi, phid, jac, gamma,
                   weights, resp, zeros, no_gravity, tol, rcond_position, zone, normals, curvature):
    """The normal space of the branch that the motion follows through a change point: (status, r), r its
    dimension (0: not near a change point, or it cannot be told), its orthonormal basis in normals[:r] (r, nq)
    and curvature[:r] = -N (dP/dt) qd, so that N qdd = curvature[:r] is the branch's acceleration constraint.

    Near a change point J(q) loses rank (its smallest singular values go to zero like the distance to it) and
    neither J nor J M^-1 J^T at q can say which of the branches crossing there the motion is on; a J-at-q
    tangent has a round-off error eps / sigma_min(J), and the regularised multiplier solve drops the weak rows
    altogether (then the motion coasts across the zone, its weak constraint forces missing: a row of
    parallelograms needs forces ~ 1 / distance there, whose moments stay finite). The branch itself is smooth:
    its normal space N (the row space of J at regular points, projector P = N^T N) is a smooth function of the
    position along it. So P at q comes from points q + c d v (v = qd / |qd|, c = +-1, +-2) each closed onto
    the loops by Gauss-Newton (``close_loops``) and outside the zone (their J has the full, higher, rank r):
    P(q) = sum w_c P(c) with the weights of BRANCH_WEIGHTS (exact to O(d^4)), N its r dominant eigenvectors,
    and dP/dsigma = sum s_c P(c) / d (BRANCH_SLOPES, O(d^4)); along the branch P qd = 0, so
    N qdd = -N (dP/dsigma) qd |qd|. Allocates (it runs only in the zone). ws, com, jac ... are left at a
    displaced point.
    """
    status, rank, _, speed, step, rows = _branch_search(body_int, body_real, loop_int, loop_real, pattern, q, qd, ws,
                                                        com, acc, phi, phid, jac, gamma, weights, resp, zeros,
                                                        no_gravity, tol, rcond_position, zone, np.bool_(False))
    if status != STATUS_OK or rank <= 0:
        return status, 0
    branch_basis(rows, rank, qd, speed, step, normals, curvature)
    return STATUS_OK, rank


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def _branch_search(body_int, body_real, loop_int, loop_real, pattern, q, qd, ws, com, acc, phi, phid, jac, gamma,
                   weights, resp, zeros, no_gravity, tol, rcond_position, zone, allow_tangent):
    """The displaced points of ``branch_normals``: (status, r, tangent, speed, step, rows) with r the rank of J
    there (0: none found), speed = |qd|, step the displacement d that left the zone and rows[c] (npts, size, nq)
    orthonormal bases at the points: of J's row space (size r), or, with ``allow_tangent`` where the tangent
    route applies (``TANGENT_ROUTE``; tangent True), of J's null space (size nq - r)."""
    m = phi.shape[0]
    nq = q.shape[0]
    npts = BRANCH_OFFSETS.shape[0]
    speed = 0.0
    for k in range(nq):
        speed += qd[k] * qd[k]
    speed = math.sqrt(speed)
    rows = np.zeros((npts, 0, nq))
    rank = np.int64(-1)  # int64, not Literal[int](-1): branch_basis compiles once
    tangent = False
    step = BRANCH_STEP
    if not speed > 0.0 or m == 0:
        return STATUS_OK, np.int64(0), tangent, speed, step, rows
    no_driven = np.zeros(0, dtype=np.uint8)
    no_resp_drive = np.zeros((m, 0))
    # the displaced points close inside the zone, where J M^-1 J^T is not surely regular: the envelope path alone
    no_sparse_ints = np.zeros(0, dtype=np.int64)
    no_sparse_floats = np.zeros(0)
    gram = np.empty((m, m))
    status = loop_constraints(body_int, body_real, loop_int, loop_real, q, qd, ws, com, acc, phi, phid, jac, gamma,
                              weights)
    if status != STATUS_OK:
        return status, np.int64(0), tangent, speed, step, rows
    rank_q, _ = _strong_rank(body_int, body_real, q, jac, ws, resp, pattern, zeros, no_gravity, gram, zone)
    if rank_q < 0:
        return STATUS_OK, np.int64(0), tangent, speed, step, rows
    shifted = np.empty(nq)
    for route in range(2):  # the tangent route where it applies, the normal route where its J J^T fails
        settled = True
        for attempt in range(BRANCH_ATTEMPTS):
            step = BRANCH_STEP * 3.0**attempt
            rank = np.int64(-1)
            for j in range(npts):
                for k in range(nq):
                    shifted[k] = q[k] + BRANCH_OFFSETS[j] * step * qd[k] / speed
                status, gap, _ = close_loops(body_int, body_real, loop_int, loop_real, pattern, shifted, qd, no_driven,
                                             ws, com, acc, phi, phid, jac, gamma, weights, resp, no_resp_drive, zeros,
                                             no_gravity, tol, np.int64(20),  # int64, not Literal[int](20): one compile
                                             rcond_position, 1e3 * tol, no_sparse_ints, no_sparse_floats, 0.0)
                if status != STATUS_OK or not gap <= 1e3 * tol:
                    rank = np.int64(-1)
                    break
                status = loop_constraints(body_int, body_real, loop_int, loop_real, shifted, qd, ws, com, acc, phi,
                                          phid, jac, gamma, weights)
                if status != STATUS_OK:
                    rank = np.int64(-1)
                    break
                strong, weak = _strong_rank(body_int, body_real, shifted, jac, ws, resp, pattern, zeros, no_gravity,
                                            gram, zone)
                if weak > 0 or strong <= rank_q or (j > 0 and strong != rank):
                    rank = np.int64(-1)
                    break
                rank = strong
                if j == 0:  # the route, and the bases' size, from the rank at the first point
                    tangent = allow_tangent and route == 0 and rank == m and nq > m and npts * (nq - m) <= nq
                    size = nq - rank if tangent else m
                    if rows.shape[1] != size:
                        rows = np.zeros((npts, size, nq))
                if tangent:
                    if not _tangent_basis(jac, pattern, qd, speed, rows[j]):
                        settled = False
                        break
                elif rank == m:  # J's row space: an orthonormal basis by QR where J has full row rank, else its SVD
                    basis, _ = np.linalg.qr(np.ascontiguousarray(jac.T))
                    for r in range(rank):
                        for k in range(nq):
                            rows[j, r, k] = basis[k, r]
                else:
                    _, _, vt = np.linalg.svd(jac, full_matrices=False)
                    for r in range(rank):
                        copy_into(rows[j, r], vt[r], 0)
            if rank > 0 or not settled:
                break
        if settled:
            break
    if rank <= 0:
        return STATUS_OK, np.int64(0), tangent, speed, step, rows
    return STATUS_OK, rank, tangent, speed, step, rows


@njit
def _branch_at(body_int, body_real, loop_int, loop_real, pattern, q, qd, ws, com, acc, phi, phid, jac, gamma, weights,
               resp, zeros, no_gravity, tol, rcond_position, zone):
    """(status, r, tangent, basis, vector): the branch through a change point at q (``branch_normals``, or its
    tangent route where it applies), then the loop state (ws, com, acc, phi, phid, jac, gamma, weights) restored at
    q, where the branch search left it at a displaced point. The status is the search's where it failed, else the
    restoration's; r 0: no branch told. The normal route (tangent False): basis (m, nq) the normals N[:r], vector
    (m,) the curvature c[:r] (``branch_basis``). The tangent route: basis (nq - r, nq) an orthonormal basis T of
    the branch's tangent space, vector (nq,) N^T c (``branch_tangent_basis``). Allocates both here."""
    m = phi.shape[0]
    nq = q.shape[0]
    status, rank, tangent, speed, step, rows = _branch_search(body_int, body_real, loop_int, loop_real, pattern, q, qd,
                                                              ws, com, acc, phi, phid, jac, gamma, weights, resp, zeros,
                                                              no_gravity, tol, rcond_position, zone, np.bool_(True))
    found = status == STATUS_OK and rank > 0
    if found and tangent:
        basis = np.zeros((nq - rank, nq))
        vector = np.zeros(nq)
        branch_tangent_basis(rows, qd, speed, step, basis, vector)
    else:
        basis = np.zeros((m, nq))
        vector = np.zeros(m)
        if found:
            branch_basis(rows, rank, qd, speed, step, basis, vector)
    restored = loop_constraints(body_int, body_real, loop_int, loop_real, q, qd, ws, com, acc, phi, phid, jac,
                                gamma, weights)
    if status == STATUS_OK:
        status = restored
    return status, rank if found else np.int64(0), found and tangent, basis, vector


@njit
def _fitted_multipliers(jac, pattern, force, rcond, lam):
    """lam: the loop multipliers that best produce the generalised constraint force, J^T lam ~ force (the filtered
    solve of (J J^T) lam = J force, ``normal_matrix``, ``banded_filtered_solve``; J on the loops' structure,
    ``loop_pattern``); False when it overflowed."""
    m = jac.shape[0]
    normal = np.empty((m, m))
    first = np.empty(m, dtype=np.int64)
    fit = np.empty(m)
    pattern_times(jac, pattern[0], pattern[1], force, fit)
    normal_matrix(jac, pattern, normal, first)
    finite = True
    for r in range(m):
        finite = finite and math.isfinite(fit[r])
    if finite and banded_filtered_solve_envelope(normal, first, fit, rcond, lam, 0.0):
        return True
    last = np.empty(m, dtype=np.int64)
    envelope_last(first, last)
    zero_outside_envelope(normal, first, last)
    return filtered_solve(normal, fit, rcond, lam) >= 0


@njit
def _tangent_branch_dynamics(body_int, body_real, q, qd, ws, qdd, jac, pattern, zeros, stab, rcond, lam, tangent,
                             normal_accel):
    """``branch_dynamics`` on the tangent route: qdd0 (in qdd) -> qdd = a + T^T coef with a = N^T c' the
    branch's normal acceleration (c' = c - 2 alpha N qd, Baumgarte's velocity term) and coef from the tangential
    equations T (M qdd - M qdd0) = 0 (``_tangent_coordinates``); the constraint force M (qdd0 - qdd), then lam
    (``_fitted_multipliers``). Returns the status."""
    nq = q.shape[0]
    size = tangent.shape[0]
    alpha = stab[0]
    target = normal_accel.copy()
    if alpha != 0.0:  # -2 alpha (I - T^T T) qd
        for k in range(nq):
            target[k] -= 2.0 * alpha * qd[k]
        for t in range(size):
            c = 0.0
            for k in range(nq):
                c += tangent[t, k] * qd[k]
            for k in range(nq):
                target[k] += 2.0 * alpha * c * tangent[t, k]
    free_part = np.empty(nq)
    for k in range(nq):
        free_part[k] = qdd[k] - target[k]
    mass_tangent = np.empty((size, nq))
    coef = np.empty(size)
    status = _tangent_coordinates(body_int, body_real, q, tangent, free_part, zeros, readonly(stab[2:4]), ws,
                                  mass_tangent, coef)
    if status != STATUS_OK:
        return status
    force = np.empty(nq)
    status = inverse_dynamics(body_int, body_real, readonly(stab[2:4]), q, zeros, free_part, np.zeros((0, 3)), ws,
                              force)
    if status != STATUS_OK:
        return status
    for k in range(nq):
        v = target[k]
        for t in range(size):
            v += coef[t] * tangent[t, k]
            force[k] -= coef[t] * mass_tangent[t, k]
        qdd[k] = v
    if not _fitted_multipliers(jac, pattern, force, rcond, lam):
        return STATUS_NONFINITE_STATE
    return STATUS_OK


@njit
def branch_dynamics(body_int, body_real, gravity, loop_int, loop_real, pattern, q, qd, tau, wrench, ws, com, acc, qdd,
                    phi, phid, jac, gamma, weights, resp, zeros, stab, rcond, lam, branch):
    """qdd (and lam) on the branch through a change point (``constrained_dynamics``, ``branch_normals``); returns
    (status, done): done False when no branch could be told (the caller goes on with the filtered solve)."""
    nq = q.shape[0]
    status, rank, tangent, basis, vector = _branch_at(body_int, body_real, loop_int, loop_real, pattern, q, qd, ws, com,
                                                      acc, phi, phid, jac, gamma, weights, resp, zeros,
                                                      readonly(stab[2:4]),
                                                      branch[1], branch[2], branch[0])
    if status != STATUS_OK or rank == 0:
        return status, False
    no_drive = np.zeros(0)
    no_driven = np.zeros(0, dtype=np.uint8)
    status = forward_dynamics(body_int, body_real, gravity, q, qd, tau, wrench, no_driven, ws, qdd, no_drive)
    if status != STATUS_OK:
        return status, True
    if tangent:
        return _tangent_branch_dynamics(body_int, body_real, q, qd, ws, qdd, jac, pattern, zeros, stab, rcond, lam,
                                        basis, vector), True
    rows = basis[:rank]
    curvature = vector
    status = constraint_responses(body_int, body_real, q, rows, no_driven, ws, resp[:rank], np.zeros((rank, 0)),
                                  zeros, readonly(stab[2:4]))
    if status != STATUS_OK:
        return status, True
    gram = np.empty((rank, rank))
    rhs = np.empty(rank)
    rate = np.empty(rank)
    mu = np.empty(rank)
    alpha = stab[0]
    # Baumgarte's velocity term on the branch rows; no position term: the loops' residual phi is no residual of
    # the branch near its change point (the projection, or the closed displaced points, keep positions on it)
    matrix_times(rows, qdd, rhs)
    matrix_times(rows, qd, rate)
    for t in range(rank):
        rhs[t] = rhs[t] - (curvature[t] - 2.0 * alpha * rate[t])
    gram_matrix(rows, resp[:rank], gram)
    if filtered_solve(gram, rhs, REDUNDANT, mu) < 0:
        return STATUS_NONFINITE_STATE, True
    force = np.zeros(nq)  # the generalised constraint force N^T mu, then the loop multipliers that give it
    for t in range(rank):
        for k in range(nq):
            qdd[k] -= mu[t] * resp[t, k]
            force[k] += mu[t] * rows[t, k]
    if not _fitted_multipliers(jac, pattern, force, rcond, lam):
        return STATUS_NONFINITE_STATE, True
    return STATUS_OK, True


@njit
def constrained_dynamics(body_int, body_real, gravity, loop_int, loop_real, pattern, q, qd, tau, wrench, driven, ws,
                         com, acc, qdd, drive, phi, phid, jac, gamma, weights, resp, resp_drive, zeros, stab, rcond,
                         lam, info, branch):
    """Constrained forward dynamics (module docstring): qdd, drive (with driven joints), multipliers lam (m,).

    resp (m, nq) and resp_drive (m, nq or 0) are scratch for the responses; zeros (nq,) a zero vector; stab =
    (alpha, beta, 0-gravity x, 0-gravity y) with entries 2, 3 zero; rcond the relative cut-off of the regularised
    multiplier solve (``filtered_solve``). info[0] returns the numerical rank of J M^-1 J^T (< m: redundant or
    singular loops). branch = (zone, tol, rcond_position), a tuple; zone 0: off. With it, and no driven joint, a
    state near a change point (eigenvalues of J M^-1 J^T in (REDUNDANT, zone] of the largest) is solved on the
    branch the motion follows: M qdd + h = tau - N^T mu, N qdd = c with the branch's normal space N and c from
    ``branch_normals`` (whose position closures use tol, rcond_position), a well-conditioned solve; lam then
    holds the loop multipliers that best produce the same generalised force, J^T lam ~ N^T mu (filtered: they
    grow like 1 / distance to the change point). Returns the status.
    """
    status = loop_constraints(body_int, body_real, loop_int, loop_real, q, qd, ws, com, acc, phi, phid, jac,
                              gamma, weights)
    if status != STATUS_OK:
        return status
    status = forward_dynamics(body_int, body_real, gravity, q, qd, tau, wrench, driven, ws, qdd, drive)
    if status != STATUS_OK:
        return status
    m = phi.shape[0]
    nq = q.shape[0]
    has_drivers = driven.shape[0] > 0
    gram = np.empty((m, m))
    first = np.empty(m, dtype=np.int64)
    rhs = np.empty(m)
    if has_drivers:  # one pass a row, dense (the responses hold the driven joints)
        status = constraint_responses(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros,
                                      readonly(stab[2:4]))
        if status != STATUS_OK:
            return status
        gram_matrix(jac, resp, gram)
        _envelope_first(gram, first)
    else:  # the loops' structure: O(N + entries) for a row of loops, not O(m nq)
        status = loop_responses(body_int, body_real, q, jac, pattern, ws, resp, zeros, readonly(stab[2:4]))
        if status != STATUS_OK:
            return status
        gram_envelope(jac, resp, pattern, gram, first)
    pattern_times(jac, pattern[0], pattern[1], qdd, rhs)
    baumgarte_rhs(gamma, phid, phi, stab, rhs)
    zone = 0.0 if has_drivers else branch[0]
    info[0], weak = _zone_solve(gram, first, rhs, rcond, lam, zone)
    if info[0] < 0:
        return STATUS_NONFINITE_STATE
    if weak > 0:
        status, done = branch_dynamics(body_int, body_real, gravity, loop_int, loop_real, pattern, q, qd, tau, wrench,
                                       ws, com, acc, qdd, phi, phid, jac, gamma, weights, resp, zeros, stab, rcond, lam,
                                       branch)
        if status != STATUS_OK or done:
            return status
        # no branch told: the search left resp at a displaced point (it restores the loop state, jac included, at
        # q, not the responses), so they are taken again at q for the filtered solve's forces
        status = loop_responses(body_int, body_real, q, jac, pattern, ws, resp, zeros, readonly(stab[2:4]))
        if status != STATUS_OK:
            return status
        last = np.empty(m, dtype=np.int64)
        envelope_last(first, last)
        zero_outside_envelope(gram, first, last)
        info[0], _ = filtered_solve_weak(gram, rhs, rcond, lam, zone)  # no branch: the filtered solve at q
        if info[0] < 0:
            return STATUS_NONFINITE_STATE
    resp_start, resp_cols = pattern[2], pattern[3]
    for r in range(m):
        for at in range(resp_start[r], resp_start[r + 1]):
            qdd[resp_cols[at]] -= lam[r] * resp[r, resp_cols[at]]
        if has_drivers:
            for k in range(nq):
                drive[k] -= lam[r] * resp_drive[r, k]
    return STATUS_OK


# ---- the sparse KKT path's solve (``loops_sparse``, whose docstring derives it): the loop rows' J M^-1 J^T solved
# through the sparse LDL^T of the tree's absolute-coordinate KKT matrix with the loop rows inside, O(N) for a ladder.
# Its arrays and solve live here, below ``loops_sparse``, because the projection (``close_loops``, ``project``)
# takes its solves too.

SparseLoopWork = namedtuple(
    "SparseLoopWork",
    [
        "stats",  # (4,) int64: evaluations solved by the sparse factorisation, evaluations that fell back; the
        # projection's solves (Gauss-Newton and velocity steps) solved by it, and those that fell back
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
        "zero_stab",  # (4,): zeros, the projection's Baumgarte terms and gravity (its loop rows' right-hand side
        # is set apart)
    ],
)


@njit
def absolute_state(body_int, ws, com, z, zd):
    """z, zd (nbodies, 3) = the centres of mass and angles, and their rates, from the kinematics that
    ``loop_constraints`` leaves (com (nbodies, 4), the angles and rates in ws)."""
    for i in range(body_int.shape[0]):
        z[i, 0] = com[i, 0]
        z[i, 1] = com[i, 1]
        z[i, 2] = ws[i, TH]
        zd[i, 0] = com[i, 2]
        zd[i, 1] = com[i, 3]
        zd[i, 2] = ws[i, OM]


@njit
def sparse_loop_solve(body_int, body_real, loop_int, loop_real, q, driven, ws, zeros, no_gravity, stab, rhs, rcond,
                      zone, kkt, work, lam, out):
    """lam = (J M^-1 J^T)^-1 rhs (m,) and out = -M^-1 J^T lam (nq,) by the sparse KKT factorisation (``loops_sparse``)
    where its inertia count finds J M^-1 J^T surely regular for the solve it replaces, whose cut-offs are rcond
    (relative to the rows' scale) and zone (its weak eigenvalues, 0: none): (status, True); (STATUS_OK, False)
    elsewhere, lam and out untouched (the caller solves the envelope way). rhs may be lam itself.

    work.z, work.zd hold the absolute state at q (``absolute_state``); no joint may be driven (driven of shape
    (0,)). stab: the (alpha, beta) of the loop rows (``loop_rows``; their right-hand side is set here, so any);
    no_gravity (2,) zero. Leaves ws at out's pass (at rest, no gravity: the loop forces -E^T lam as wrenches)."""
    status = loop_rows(loop_int, loop_real, work.z, work.zd, stab, work.aux_body, work.aux_coef, work.aux_rhs,
                       work.aux_res)
    if status != STATUS_OK:
        return status, True
    # K (x, y, mu) = (0, 0, -rhs) on E z'' = g with z''0 = 0
    m = rhs.shape[0]
    aux_rhs = work.aux_rhs
    for r in range(m):
        aux_rhs[r] = -rhs[r]
    work.zdd[:, :] = 0.0
    work.lam[:] = 0.0
    tree_residuals(body_int, body_real, work.row_start, work.z, work.zd, work.fac, work.scratch, work.res)
    zone = max(zone, REGULAR_RCOND_MARGIN * rcond / REGULAR_ZONE_MARGIN)
    if not loop_solve(body_int, body_real, work.row_start, work.fac, work.aux_body, work.aux_coef, aux_rhs,
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
    status = forward_dynamics(body_int, body_real, no_gravity, q, zeros, zeros, force, driven, ws, out, out[:0])
    return status, True


@njit
def _sparse_step(body_int, body_real, loop_int, loop_real, q, driven, ws, com, zeros, no_gravity, rhs, rcond, zone,
                 sparse_ints, sparse_floats, coef, out):
    """A solve of the projection (``close_loops``, ``project``) by the sparse KKT path (``sparse_loop_solve``) where
    the model's structure takes it (sparse_ints, sparse_floats: ``pack``, not empty, its ``use`` set), no joint is
    held and J M^-1 J^T is surely regular at q (ws, com: ``loop_constraints`` at q): coef = (J M^-1 J^T)^-1 rhs,
    out = -M^-1 J^T coef, (status, True), counted in the workspace's stats[2]; (STATUS_OK, False) elsewhere, counted
    in stats[3] where the model takes the path: the caller solves the envelope way."""
    if sparse_ints.shape[0] == 0 or driven.shape[0] > 0:
        return STATUS_OK, False
    kkt, work = unpack(sparse_ints, sparse_floats)
    if kkt.use[0] == 0:
        return STATUS_OK, False
    absolute_state(body_int, ws, com, work.z, work.zd)
    status, solved = sparse_loop_solve(body_int, body_real, loop_int, loop_real, q, driven, ws, zeros, no_gravity,
                                       work.zero_stab, rhs, rcond, zone, kkt, work, coef, out)
    if status == STATUS_OK:
        work.stats[2 if solved else 3] += 1
    return status, solved


# ---- the path's arrays packed in two (``pack``): ints = a header of (offset, rows, columns) per array in FIELDS
# order (columns 0: one-dimensional), then the int64 arrays; floats = the float64 arrays, at their offsets. Every
# compiled call that takes the time loop's system counts each array of it up and down, and a small loop model (a
# four-bar) that keeps the envelope path carries two empty arrays instead of 38.
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
    hold the header (not the empty arrays of ``no_sparse_path``: numba does not check the bounds), as the callers
    (``loops_sparse.sparse_constrained_dynamics``, ``_sparse_step``) check before they call this."""
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
        _vector(ints, floats, w + 15), _vector(ints, floats, w + 16))
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
        np.zeros(4, dtype=np.int64), np.zeros(n + 1, dtype=np.int64), np.zeros((n, 3)), np.zeros((n, 3)),
        np.zeros((n, F_WIDTH)), np.zeros((4, 3)), np.zeros(tree_rows), np.full((m, 2), -1, dtype=np.int64),
        np.zeros((m, 6)), np.zeros(m), np.zeros(m), np.zeros((n, 3)), np.zeros(tree_rows + m),
        np.zeros(2, dtype=np.int64), np.zeros((n, 3)), np.zeros(nq), np.zeros(4))


def no_sparse_path():
    """The two empty arrays of a model that keeps the envelope path."""
    return np.zeros(0, dtype=np.int64), np.zeros(0)


@njit
def _closure_solve(gram, first, rhs, rcond, out):
    """out = f(G) rhs of ``filtered_solve`` for the Gauss-Newton steps of ``close_loops`` without the
    eigen-decomposition where G's envelope allows: a Cholesky factorisation where G is surely regular
    (``regular_solve``), else the banded regularised least-squares solve (``banded_filtered_solve``: the same
    f(G) rhs to round-off, O(m b^2) a factorisation for a G of bandwidth b against eigh's O(m^3)). The displaced
    points of a change point's search (``_branch_search``) close inside its zone, where G is not surely regular.
    False where G or rhs is not finite (out NaN). G is read inside its envelope first (m,) only (``gram_envelope``)
    and set to zero outside it where the eigen-decomposition has to be taken."""
    m = rhs.shape[0]
    last = np.empty(m, dtype=np.int64)
    envelope_last(first, last)
    if m > 0 and _envelope_finite(gram, first, last, rhs):
        if regular_solve_envelope(gram, first, rhs, REGULAR_RCOND_MARGIN * rcond, out):
            return True
        if banded_filtered_solve_envelope(gram, first, rhs, rcond, out, 0.0):
            return True
    zero_outside_envelope(gram, first, last)
    return filtered_solve(gram, rhs, rcond, out) >= 0


@njit
def close_loops(body_int, body_real, loop_int, loop_real, pattern, q, qd, driven, ws, com, acc, phi, phid, jac, gamma,
                weights, resp, resp_drive, zeros, no_gravity, tol, max_iter, rcond_position, far, sparse_ints,
                sparse_floats, sparse_zone):
    """The Gauss-Newton position steps of ``project`` on q in place; returns (status, max |phi| at the last
    evaluation, the number of steps taken). Leaves ws, jac, resp of an iterate, not necessarily of the final q
    (without driven joints resp on the response columns of ``loop_pattern`` only).

    A step that is not below half the one before ends the iteration as round-off (or no progress) only where
    max |phi| is within ``far`` (the gap the caller accepts as closed): farther off, Gauss-Newton steps grow before
    they converge (a ladder of 40 rungs with every joint moved by 0.05 rad starts 19 m open, and its third step is
    five times its second), and the iteration goes on, up to max_iter + 1 steps.

    Each step's solve is the sparse KKT path's where the model's structure takes it (sparse_ints, sparse_floats:
    ``pack``; two empty arrays: never) and every eigenvalue of J M^-1 J^T at the iterate is surely above
    REGULAR_ZONE_MARGIN sparse_zone times the largest (``_sparse_step``: the same step to round-off, O(N) for a
    ladder), the envelope's (``_closure_solve``) elsewhere. ``project`` passes its velocity step's threshold: the
    position cut-off alone (REGULAR_RCOND_MARGIN rcond_position, 1e-9) would take the sparse path well inside a
    change point's zone, where J M^-1 J^T is conditioned up to 1e9 and two factorisations' round-off parts the
    closed positions by up to 1e-9 relative (a row of parallelograms 1e-3 rad from its change point, forced onto
    the path); there the envelope's steps stay as they were."""
    m = phi.shape[0]
    nq = q.shape[0]
    coef = np.empty(m)
    gram = np.empty((0, 0))  # allocated at the first step solved the envelope way
    first = np.empty(m, dtype=np.int64)
    dq = np.empty(nq if sparse_ints.shape[0] > 0 else 0)
    worst = np.inf
    last_step = np.inf
    steps = 0
    for _ in range(max_iter + 1):
        status = loop_constraints(body_int, body_real, loop_int, loop_real, q, qd, ws, com, acc, phi, phid, jac,
                                  gamma, weights)
        if status != STATUS_OK:
            return status, worst, steps
        size = 0.0
        for r in range(m):
            size = max(size, abs(phi[r]))
        worst = size
        if size == 0.0:
            break
        status, solved = _sparse_step(body_int, body_real, loop_int, loop_real, q, driven, ws, com, zeros, no_gravity,
                                      phi, rcond_position, sparse_zone, sparse_ints, sparse_floats, coef, dq)
        if status != STATUS_OK:
            return status, worst, steps
        step = 0.0
        if solved:  # dq = -M^-1 J^T (J M^-1 J^T)^-1 phi
            for k in range(nq):
                step = max(step, abs(dq[k]))
        else:
            if gram.shape[0] != m:
                gram = np.empty((m, m))
            status = _responses_and_gram(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros,
                                         no_gravity, pattern, gram, first)
            if status != STATUS_OK:
                return status, worst, steps
            if not _closure_solve(gram, first, phi, rcond_position, coef):
                return STATUS_NONFINITE_STATE, worst, steps
            for k in range(nq):
                step = max(step, abs(_response_sum(resp, pattern, coef, k)))
        if size <= tol and step <= tol:
            break
        if not step < 0.5 * last_step and size <= far:  # round-off reached (or no progress): keep the last iterate
            break
        last_step = step
        if solved:
            for k in range(nq):
                q[k] += dq[k]
        else:
            _subtract_responses(resp, pattern, coef, q)
        steps += 1
    return STATUS_OK, worst, steps


@njit
def _responses_and_gram(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros, no_gravity, pattern, gram,
                        first):
    """The responses (``constraint_responses``) and G = J M^-1 J^T with its envelope first: dense with driven
    joints, on the loops' structure without (``loop_responses``, ``gram_envelope``). Returns the status."""
    if driven.shape[0] > 0:
        status = constraint_responses(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros, no_gravity)
        if status == STATUS_OK:
            gram_matrix(jac, resp, gram)
            _envelope_first(gram, first)
        return status
    status = loop_responses(body_int, body_real, q, jac, pattern, ws, resp, zeros, no_gravity)
    if status == STATUS_OK:
        gram_envelope(jac, resp, pattern, gram, first)
    return status


@njit
def _response_sum(resp, pattern, coef, k):
    """sum_r resp[r, k] coef[r] over the rows whose responses reach coordinate k (``loop_pattern``), in row order:
    the dense sum's value."""
    col_start, col_rows = pattern[5], pattern[6]
    v = 0.0
    for at in range(col_start[k], col_start[k + 1]):
        v += resp[col_rows[at], k] * coef[col_rows[at]]
    return v


@njit
def _subtract_responses(resp, pattern, coef, x):
    """x[k] -= resp[r, k] coef[r], r in row order, over the rows whose responses reach k (``loop_pattern``)."""
    col_start, col_rows = pattern[5], pattern[6]
    for k in range(x.shape[0]):
        for at in range(col_start[k], col_start[k + 1]):
            x[k] -= resp[col_rows[at], k] * coef[col_rows[at]]


@njit
def branch_velocity(body_int, body_real, loop_int, loop_real, pattern, q, qd, driven, ws, com, acc, phi, phid, jac,
                    gamma, weights, resp, resp_drive, zeros, no_gravity, tol, rcond_position, zone):
    """qd projected in place onto the tangent of the branch it follows through a change point (``_branch_at``),
    M-orthogonally: on the tangent route qd = T^T (T M T^T)^-1 T M qd, on the normal route qd -= Y_N (N Y_N)^-1 N qd
    with Y_N = M^-1 N^T (``project``'s velocity step near a change point, no held joint). Returns (status, done):
    done False where no branch could be told (qd unchanged; ws, jac, resp left at a displaced point)."""
    nq = q.shape[0]
    status, rank, tangent, basis, _ = _branch_at(body_int, body_real, loop_int, loop_real, pattern, q, qd, ws, com, acc,
                                                 phi, phid, jac, gamma, weights, resp, zeros, no_gravity, tol,
                                                 rcond_position, zone)
    if status != STATUS_OK or rank == 0:
        return status, False
    if tangent:  # qd = T^T (T M T^T)^-1 T M qd: the same M-orthogonal projection
        size = basis.shape[0]
        tangent_coef = np.empty(size)
        status = _tangent_coordinates(body_int, body_real, q, basis, qd, zeros, no_gravity, ws,
                                      np.empty((size, nq)), tangent_coef)
        if status != STATUS_OK:
            return status, True
        for k in range(nq):
            v = 0.0
            for t in range(size):
                v += tangent_coef[t] * basis[t, k]
            qd[k] = v
        return STATUS_OK, True
    rows = basis[:rank]
    status = constraint_responses(body_int, body_real, q, rows, driven, ws, resp[:rank], resp_drive[:rank],
                                  zeros, no_gravity)
    if status != STATUS_OK:
        return status, True
    gram_rows = np.empty((rank, rank))
    gram_matrix(rows, resp[:rank], gram_rows)
    rate = np.empty(rank)
    matrix_times(rows, qd, rate)
    coef = np.empty(rank)
    if filtered_solve(gram_rows, rate, REDUNDANT, coef) < 0:
        return STATUS_NONFINITE_STATE, True
    for k in range(nq):
        for t in range(rank):
            qd[k] -= resp[t, k] * coef[t]
    return STATUS_OK, True


@njit
def project(body_int, body_real, loop_int, loop_real, pattern, q, qd, driven, ws, com, acc, phi, phid, jac, gamma,
            weights, resp, resp_drive, zeros, no_gravity, tol, max_iter, rcond_position, rcond, gap_tol, branch,
            sparse_ints, sparse_floats):
    """Mass-orthogonal projection of q, then qd, onto the loop constraints; driven joints (``driven``) stay put.

    Positions: Gauss-Newton with the steps dq = -Y f(G) phi, Y = M^-1 J^T (``constraint_responses``), G = J Y
    (``filtered_solve``): the smallest step in the kinetic-energy metric dq^T M dq that closes the linearised
    loops. It stops when the step has reached max |dq| <= tol and max |phi| <= tol, or stops shrinking (round-off).
    The step, not |phi|, measures the distance to the constraint manifold: near a singular position (a loop
    Jacobian losing rank) |phi| <= tol still allows a distance |phi| / sigma_min(J) to the branch, and with it
    velocities off the branch's tangent by that over the distance to the singular point.
    Velocities: qd -= Y f(G) (J qd), exact in one step. ``rcond_position`` and ``rcond`` are the cut-offs of
    ``filtered_solve`` for the position and the velocity steps. ``branch`` = (zone, ...), a tuple (zone 0: off); with
    it, and no held joint, near a change point (``constrained_dynamics``) the velocities are projected onto the
    tangent of the branch that qd follows, qd -= Y_N (N Y_N)^-1 N qd with its normal space N from
    ``branch_normals`` (Y_N = M^-1 N^T: still M-orthogonal), instead of the filtered J at q, which no longer
    enforces the weak rows there. Returns (status, max |phi| at the end, the Gauss-Newton steps taken); the status is
    STATUS_LOOPS_OPEN (index: the loop with the largest gap) when max |phi| stays above ``gap_tol``.

    Where the model's structure takes the sparse KKT path (sparse_ints, sparse_floats: ``pack``; two empty arrays:
    never) and no joint is held, each solve with J M^-1 J^T, the position steps' and the velocity step's, is the
    path's where it finds J M^-1 J^T surely regular (``_sparse_step``: G^-1 rhs, as the envelope's Cholesky
    factorisation there, and Y G^-1 rhs from one recursive pass with the loop forces instead of the m responses:
    O(N) for a ladder, whose G is full); elsewhere (a change point's zone, redundant rows) the envelope path
    decides as without it, rank decisions and branch included.

    Why M-orthogonal (energy): write qd = v + w with J v = 0 and w = Y c in the range of M^-1 J^T. Then
    v^T M w = (J v)^T c = 0, so the projected velocity v has T(v) = T(qd) - w^T M w / 2: the kinetic energy
    changes only at second order in the velocity drift J qd (w^T M w = (J qd)^T G^+ (J qd)), and v is the
    admissible velocity nearest to qd in the kinetic-energy norm. A Euclidean (minimum-norm) correction is not
    M-orthogonal to the admissible velocities: it changes T at first order in the drift, qd^T M dqd != 0. The
    position step moves along M^-1 J^T, the directions of the constraint forces, in which the exact motion has no
    velocity component; its effect on the energy is first order in phi, which is the integrator's local error.
    """
    m = phi.shape[0]
    coef = np.empty(m)
    zone = branch[0] if driven.shape[0] == 0 else 0.0
    # the position steps leave the sparse path where the velocity step does (``close_loops``)
    sparse_zone = max(zone, REGULAR_RCOND_MARGIN * rcond / REGULAR_ZONE_MARGIN)
    status, worst, steps = close_loops(body_int, body_real, loop_int, loop_real, pattern, q, qd, driven, ws, com, acc,
                                       phi, phid, jac, gamma, weights, resp, resp_drive, zeros, no_gravity, tol,
                                       max_iter, rcond_position, gap_tol, sparse_ints, sparse_floats, sparse_zone)
    if status != STATUS_OK:
        return status, worst, steps
    status = loop_constraints(body_int, body_real, loop_int, loop_real, q, qd, ws, com, acc, phi, phid, jac,
                              gamma, weights)
    if status != STATUS_OK:
        return status, worst, steps
    worst = 0.0
    worst_row = 0
    for r in range(m):
        if abs(phi[r]) > worst:
            worst = abs(phi[r])
            worst_row = r
    if not worst <= gap_tol:  # no closed configuration near: the loop with the largest gap
        lp = 0
        while lp + 1 < loop_int.shape[0] and loop_int[lp + 1, LROW] <= worst_row:
            lp += 1
        return STATUS_LOOPS_OPEN | (lp << 4), worst, steps
    nq = q.shape[0]
    dq = np.empty(nq if sparse_ints.shape[0] > 0 else 0)
    status, solved = _sparse_step(body_int, body_real, loop_int, loop_real, q, driven, ws, com, zeros, no_gravity, phid,
                                  rcond, zone, sparse_ints, sparse_floats, coef, dq)
    if status != STATUS_OK:
        return status, worst, steps
    if solved:  # qd -= M^-1 J^T (J M^-1 J^T)^-1 J qd
        for k in range(nq):
            qd[k] += dq[k]
        return STATUS_OK, worst, steps
    gram = np.empty((m, m))
    first = np.empty(m, dtype=np.int64)
    status = _responses_and_gram(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros, no_gravity,
                                 pattern, gram, first)
    if status != STATUS_OK:
        return status, worst, steps
    rank, weak = _zone_solve(gram, first, phid, rcond, coef, zone)
    if rank < 0:
        return STATUS_NONFINITE_STATE, worst, steps
    if weak > 0:
        status, done = branch_velocity(body_int, body_real, loop_int, loop_real, pattern, q, qd, driven, ws, com, acc,
                                       phi, phid, jac, gamma, weights, resp, resp_drive, zeros, no_gravity, tol,
                                       rcond_position, zone)
        if status != STATUS_OK or done:
            return status, worst, steps
        # no branch could be told: the filtered solve at q, again (the search moved the workspace)
        status = _responses_and_gram(body_int, body_real, q, jac, driven, ws, resp, resp_drive, zeros, no_gravity,
                                     pattern, gram, first)
        if status != STATUS_OK:
            return status, worst, steps
        last = np.empty(m, dtype=np.int64)
        envelope_last(first, last)
        zero_outside_envelope(gram, first, last)
        if filtered_solve(gram, phid, rcond, coef) < 0:
            return STATUS_NONFINITE_STATE, worst, steps
    _subtract_responses(resp, pattern, coef, qd)
    return STATUS_OK, worst, steps
