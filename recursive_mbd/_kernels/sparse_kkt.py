"""The planar tree's KKT matrix in absolute coordinates with the loop rows inside, factorised sparse: O(N) for a
ladder. Shared by the augmented tree solver (``augmented.tree``, ``augmented.system``) and the recursive loop layer
(``planar.loops_sparse``), below both: it holds the tree joints' constraint rows on the absolute coordinates (and the
factor record of the augmented tree solver that stores their blocks), the symbolic structure of the matrix, its
numeric LDL^T and the solves.

Every body i has the absolute coordinates z_i = (x, y, theta) of its centre of mass and the constant mass
M_i = diag(m, m, J); the joint of body i to its parent contributes ROWS_PER_JOINT rows with a child block Jc_i on
z_i and a parent block Jp_i on the parent's (``_joint_rows``; the two-squares tutorial eqs. 8, 9). The augmented
tree solver (``augmented.tree``) eliminates bodies and joints leaves first and adds the k loop rows E z'' = g
(``planar.loops.loop_rows``) by a Schur complement S_E = E H^-1 E^T (H the tree's KKT matrix). Where every loop
reaches the same subtrees from the ground (a ladder: two chains joined by rungs) S_E is dense: k tree solves and an
O(k^3) factorisation. Here the whole matrix

    K = [M    Jt^T  E^T]        M = diag(m, m, J) per body, Jt the tree joints' rows, E the loops' rows
        [Jt   0     0  ]
        [E    0     s I]        (s = 0 to solve; s > 0 to count S_E's eigenvalues above s)

is factorised as P K P^T = L D L^T (scalar pivots, no pivoting) in a fixed order found once per model
(``kkt_pattern``): bodies by minimum degree on the graph whose edges are the joints and loops, each constraint's
rows right after the last of its bodies. With that order every pivot is the Schur complement of a leading block
that is a sub-mechanism (the eliminated bodies with the constraints among them): a body's 3 x 3 block
M_b + sum J^T (-pivot)^-1 J is positive definite, a constraint's block -J P J^T (P the sub-mechanism's projected
inverse mass) is negative definite wherever the whole constraint Jacobian has full rank, since a subset of
independent rows is independent, and by Cauchy interlacing no worse conditioned than the whole. Along a ladder the
front holds two bodies and a few rows, so the factor has O(N) entries and the work is O(N); a tree or a row of loops
keeps the Schur complement, which is banded there (``augmented.tree.add_auxiliary_rows``).

With s > 0 the Schur complement of K onto the loop rows is s I - S_E; by Sylvester's law of inertia K then has mt +
(number of eigenvalues of S_E above s) negative pivots (mt tree rows). ``loop_solve`` takes S_E as surely regular
when all k are above s = max(REGULAR_ZONE_MARGIN zone, REGULAR_RCOND_MARGIN rcond scale / top) top with top a
Gershgorin bound of the largest eigenvalue of E M^-1 E^T (>= that of S_E, since H's projected inverse mass is at
most M^-1), so that no eigenvalue of S_E lies at or below zone times its largest, as the tree solver's flag says
where its own test passes (``planar.loops.regular_factor``: a Rayleigh quotient above the same threshold of S_E's
largest absolute row sum). The two tests use different bounds of the largest eigenvalue and may part near the
threshold; on the ladders, rows and random trees with loops of the tests they agree state by state. Where the test
passes both paths solve the same regular system. Elsewhere (a change point near, a redundant row, a body without
inertia) it returns False and the caller takes the tree solver's path with its rank decisions.

The numeric factorisation is the up-looking LDL^T of T. A. Davis, "Algorithm 849: a concise sparse Cholesky
factorization package" (ACM TOMS 31, 2005): row k of L from the elimination tree, O(|L|) flops and no allocation;
its symbolic part (the elimination tree and the column counts of L) is Davis's ldl_symbolic, in ``kkt_pattern``.
"""

import heapq
import math
from collections import namedtuple

import numba
import numpy as np

from . import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .joint_types import FIXED, PLANAR, PRISMATIC, REVOLUTE
from .layout import ANGLE, AXX, COX, INERTIA, JTYPE, LBODY_A, LBODY_B, MASS, PARENT, PPX, QIDX

njit = numba.njit(cache=True, error_model="numpy", _nrt=True)
# helpers of the per-body loops are inlined and take (array, row, column offset) rather than views: a view or an
# out-of-line call with array arguments adds reference counting: with them the evaluation was 6x slower (measured)
inline = numba.njit(cache=True, error_model="numpy", inline="always", _nrt=True)

ROWS_PER_JOINT = (2, 2, 3, 0)  # constraint rows of a revolute, prismatic, fixed, planar joint (joints.* codes)

# ---- factor: (nbodies, F_WIDTH) float64, row-major, rows aligned to 64 bytes (``aligned_factor``): one body's
# record is five cache lines, ordered by who reads what, so that at large N (out of cache) each pass moves the lines
# it needs and no others. A revolute body with a regular pivot (the common case, the written-out step) touches
# lines 0 and 1 only, in both passes; its parent's update in the leaves-first pass touches line 0 only.
# line 0: the body pivot, and the sin/cos its children read
F_DINV = 0  # D_i^-1 of the body pivot, symmetric (00, 01, 02, 11, 12, 22); in the leaves-first pass, until body i
F_ACC = F_DINV  # is reached, the children's sum of Jp^T S^-1 Jp (D_i minus M_i) accumulates in the same slots
F_COS = 6  # cos and sin of the body's angle theta, computed once per body per evaluation (libm)
F_SIN = 7
# line 1: the joint pivot, and the four arms of a revolute joint (its blocks' only entries that vary)
F_W = 8  # w of a regularised pivot (0: none; module docstring)
F_SINV = 9  # S_i^-1 of the joint pivot, symmetric (00, 01, 02, 11, 12, 22); m = 2 uses 00, 01, 11
# a revolute body with w = 0: Jc = [[-1, 0, acy], [0, -1, -acx]], Jp = [[1, 0, -apy], [0, 1, apx]], the varying
# entries in S^-1's slots that m = 2 leaves free (02, 12, 22) and the line's last slot; its F_JC, F_JP are not
# written by ``factor_and_solve`` (``tree_residuals`` writes them for the readers of whole blocks)
F_REV_JC0 = F_SINV + 2  # Jc[0, 2] = acy
F_REV_JC1 = F_SINV + 4  # Jc[1, 2] = -acx
F_REV_JP0 = F_SINV + 5  # Jp[0, 2] = -apy
F_REV_JP1 = 15  # Jp[1, 2] = apx
# lines 2 .. 4: the joint's blocks, row-major
F_JC = 16  # child block Jc (3 x 3, row-major; rows >= m unused)
F_JP = 25  # parent block Jp (3 x 3, row-major)
F_WIDTH = 40  # 320 bytes: five whole lines

# ---- scratch: (4, 3) float64 --------------------------------------------------------------------------------------
S_RES = 0  # the joint's residual C (m)
S_GAM = 1  # its gamma (m)
S_FC = 2  # generalised force of the joint's tau on the child (3)
S_FP = 3  # ... on the parent (3)


def aligned_factor(rows):
    """A zeroed C-contiguous (rows, F_WIDTH) float64 array whose rows start on 64-byte boundaries (the cache lines
    of the record layout above; numpy aligns only to 16 bytes)."""
    flat = np.zeros(rows * F_WIDTH + 8)
    start = (-flat.ctypes.data % 64) // 8
    return flat[start:start + rows * F_WIDTH].reshape(rows, F_WIDTH)



@inline
def _rotated(c, s, x, y):
    """The vector (x, y) of a frame at the angle whose cosine and sine are (c, s), in ground axes."""
    return c * x - s * y, s * x + c * y



@inline
def _joint_rows(body_int, body_real, z, zd, tau, i, fac, scratch):
    """Constraint rows of body i's joint at (z, zd): Jc, Jp into fac[i], residual and gamma into scratch, and the
    generalised forces of the joint's tau (d q / d z transposed, tau of shape (0,): none) on the child and the
    parent. Returns the number of rows m."""
    jt = body_int[i, JTYPE]
    p = body_int[i, PARENT]
    th = z[i, 2]
    om = zd[i, 2]
    # arm A_c s_c from the child's centre of mass to the joint point
    acx, acy = _rotated(math.cos(th), math.sin(th), -body_real[i, COX], -body_real[i, COX + 1])
    if p >= 0:
        thp = z[p, 2]
        omp = zd[p, 2]
        cpx = z[p, 0]
        cpy = z[p, 1]
        vpx = zd[p, 0]
        vpy = zd[p, 1]
    else:
        thp = omp = cpx = cpy = vpx = vpy = 0.0
    cp = math.cos(thp)
    sp = math.sin(thp)
    # arm A_p s_p from the parent's centre of mass (ground: origin) to the joint point
    apx, apy = _rotated(cp, sp, body_real[i, PPX], body_real[i, PPX + 1])
    gx = z[i, 0] + acx - cpx - apx  # gap D = P_c - P_p
    gy = z[i, 1] + acy - cpy - apy
    # element indexing, no array views: a view per body costs more than the whole row computation here
    for col in range(3):
        scratch[S_FC, col] = 0.0
        scratch[S_FP, col] = 0.0
    has_tau = tau.shape[0] > 0
    k = body_int[i, QIDX]
    m = 0
    if jt in (REVOLUTE, FIXED):  # P_p - P_c = 0 (eq. 8); rows x, y
        fac[i, F_JC + 0] = -1.0
        fac[i, F_JC + 1] = 0.0
        fac[i, F_JC + 2] = acy  # -perp(arm_c)_x
        fac[i, F_JP + 0] = 1.0
        fac[i, F_JP + 1] = 0.0
        fac[i, F_JP + 2] = -apy  # perp(arm_p)_x
        fac[i, F_JC + 3] = 0.0
        fac[i, F_JC + 4] = -1.0
        fac[i, F_JC + 5] = -acx
        fac[i, F_JP + 3] = 0.0
        fac[i, F_JP + 4] = 1.0
        fac[i, F_JP + 5] = apx
        scratch[S_RES, 0] = -gx
        scratch[S_RES, 1] = -gy
        scratch[S_GAM, 0] = apx * omp * omp - acx * om * om
        scratch[S_GAM, 1] = apy * omp * omp - acy * om * om
        m = 2
        if jt == REVOLUTE and has_tau:
            scratch[S_FC, 2] = tau[k]
            scratch[S_FP, 2] = -tau[k]
    elif jt == PRISMATIC:  # n_p . (P_c - P_p) = 0 (eq. 9), n_p = perp(u), u the axis in ground axes
        ux, uy = _rotated(cp, sp, body_real[i, AXX], body_real[i, AXX + 1])
        nx = -uy
        ny = ux
        rate_x = zd[i, 0] - om * acy - vpx + omp * apy  # D' = (c_c' + om perp(arm_c)) - (c_p' + om_p perp(arm_p))
        rate_y = zd[i, 1] + om * acx - vpy - omp * apx
        fac[i, F_JC + 0] = nx
        fac[i, F_JC + 1] = ny
        fac[i, F_JC + 2] = -nx * acy + ny * acx  # n . perp(arm_c)
        fac[i, F_JP + 0] = -nx
        fac[i, F_JP + 1] = -ny
        fac[i, F_JP + 2] = (-ny * gx + nx * gy) - (-nx * apy + ny * apx)  # perp(n) . D - n . perp(arm_p)
        scratch[S_RES, 0] = nx * gx + ny * gy
        curve_x = -acx * om * om + apx * omp * omp  # D'' at z'' = 0
        curve_y = -acy * om * om + apy * omp * omp
        scratch[S_GAM, 0] = -(-omp * omp * scratch[S_RES, 0] + 2.0 * omp * (-ny * rate_x + nx * rate_y)
                              + nx * curve_x + ny * curve_y)
        m = 1
        if has_tau:  # q = u . D: dq = u . dD + dtheta_p perp(u) . D
            f = tau[k]
            scratch[S_FC, 0] = f * ux
            scratch[S_FC, 1] = f * uy
            scratch[S_FC, 2] = f * (-ux * acy + uy * acx)
            scratch[S_FP, 0] = -f * ux
            scratch[S_FP, 1] = -f * uy
            scratch[S_FP, 2] = f * ((-uy * gx + ux * gy) - (-ux * apy + uy * apx))
    elif jt == PLANAR and has_tau:  # (x, y) = A_p^T D, phi = theta_c - theta_p - angle
        for col in range(2):
            ux = cp if col == 0 else -sp
            uy = sp if col == 0 else cp
            f = tau[k + col]
            scratch[S_FC, 0] += f * ux
            scratch[S_FC, 1] += f * uy
            scratch[S_FC, 2] += f * (-ux * acy + uy * acx)
            scratch[S_FP, 0] -= f * ux
            scratch[S_FP, 1] -= f * uy
            scratch[S_FP, 2] += f * ((-uy * gx + ux * gy) - (-ux * apy + uy * apx))
        scratch[S_FC, 2] += tau[k + 2]
        scratch[S_FP, 2] -= tau[k + 2]
    if jt in (PRISMATIC, FIXED):  # theta_c - theta_p - angle = 0
        fac[i, F_JC + 3 * m] = 0.0
        fac[i, F_JC + 3 * m + 1] = 0.0
        fac[i, F_JC + 3 * m + 2] = 1.0
        fac[i, F_JP + 3 * m] = 0.0
        fac[i, F_JP + 3 * m + 1] = 0.0
        fac[i, F_JP + 3 * m + 2] = -1.0
        scratch[S_RES, m] = th - thp - body_real[i, ANGLE]
        scratch[S_GAM, m] = 0.0
        m += 1
    return m



@njit
def tree_residuals(body_int, body_real, row_start, z, zd, fac, scratch, res):
    """The tree joints' residuals C (row order of ``factor_and_solve``) into res (tree rows), and the joints' whole
    blocks Jc, Jp into fac[:, F_JC:F_JP + 9] (``factor_and_solve`` stores only the varying entries of a revolute
    body's blocks): after ``factor_and_solve`` at the same z, fac is the factor with every block complete."""
    no_tau = np.zeros(0)
    for i in range(body_int.shape[0]):
        m = _joint_rows(body_int, body_real, z, zd, no_tau, i, fac, scratch)
        for r in range(m):
            res[row_start[i] + r] = scratch[S_RES, r]



@inline
def _aux_times(aux_body, aux_coef, r, x):
    """Row r of E times the body vector x (nbodies, 3)."""
    v = 0.0
    for side in range(2):
        body = aux_body[r, side]
        if body >= 0:
            v += (aux_coef[r, 3 * side] * x[body, 0] + aux_coef[r, 3 * side + 1] * x[body, 1]
                  + aux_coef[r, 3 * side + 2] * x[body, 2])
    return v



@inline
def free_body_scale(body_real, aux_body, aux_coef):
    """max_r E_r M^-1 E_r^T over the auxiliary rows: their free-body scale, the reference of the rank cut-off."""
    scale = 0.0
    for r in range(aux_body.shape[0]):
        v = 0.0
        for side in range(2):
            body = aux_body[r, side]
            if body >= 0:
                for col in range(3):
                    inertia = body_real[body, MASS] if col < 2 else body_real[body, INERTIA]
                    if inertia > 0.0:
                        v += aux_coef[r, 3 * side + col] ** 2 / inertia
        scale = max(scale, v)
    return scale



# The structure of K (``recursive_mbd.dynamics.augmented_tree.kkt_structure``, fixed per model) and the factor's
# workspace; a model that keeps the Schur complement gets the empty one (same types: one signature).
KKTStructure = namedtuple(
    "KKTStructure",
    [
        "use",  # (1,) int64: 1 where the time loop solves the loop rows with this factorisation
        "perm",  # (NK,) int64: perm[j] the original index of the j-th pivot (3 b + c body coordinates, 3 n + r rows)
        "col_start",
        "col_rows",  # the upper triangle of P K P^T by columns: (NK + 1,), (nnz,) rows i <= j
        "values",  # (nnz,) its values at an evaluation
        "etree",  # (NK,) int64: the elimination tree's parent of each column (-1: a root)
        "l_start",  # (NK + 1,) int64: first entry of column j of L
        "l_count",
        "l_rows",
        "l_values",
        "pivots",  # the factor: entries so far per column, rows, values; D (NK,)
        "work",
        "pattern",
        "flag",  # (NK,) float and int scratch of the factorisation
        "rhs",  # (NK,) the right-hand side and solution, permuted
        "pos_diag",  # (NK,) int64: the slot in values of each original diagonal entry
        "pos_child",
        "pos_parent",  # (mt, 3) int64: the slots of the tree rows' entries on the child and the parent
        "pos_aux",  # (k, 6) int64: the slots of the loop rows' entries on their two bodies (-1: the ground)
        "pair_start",
        "pair_rows",  # loop rows sharing a body with row r: pair_rows[pair_start[r]:pair_start[r + 1]]
    ],
)


@njit
def _assemble(body_real, row_start, fac, aux_body, aux_coef, s, kkt):
    """kkt.values = the upper triangle of P K P^T at the factor's z (the joints' whole blocks in fac:
    ``tree.tree_residuals``) and the loop rows aux_coef, s on the loop rows' diagonal."""
    values = kkt.values
    values[:] = 0.0
    n = body_real.shape[0]
    mt = row_start[n]
    for i in range(n):
        values[kkt.pos_diag[3 * i]] = body_real[i, MASS]
        values[kkt.pos_diag[3 * i + 1]] = body_real[i, MASS]
        values[kkt.pos_diag[3 * i + 2]] = body_real[i, INERTIA]
        for r in range(row_start[i + 1] - row_start[i]):
            row = row_start[i] + r
            for col in range(3):
                values[kkt.pos_child[row, col]] += fac[i, F_JC + 3 * r + col]
                if kkt.pos_parent[row, col] >= 0:
                    values[kkt.pos_parent[row, col]] += fac[i, F_JP + 3 * r + col]
    for r in range(aux_body.shape[0]):
        values[kkt.pos_diag[3 * n + mt + r]] = s
        for j in range(6):
            if kkt.pos_aux[r, j] >= 0:
                values[kkt.pos_aux[r, j]] += aux_coef[r, j]


@njit
def ldl_factor(kkt):
    """P K P^T = L D L^T from kkt.values (Davis's up-looking LDL^T, module docstring). Returns the number of
    negative pivots, or -1 where a pivot is zero or not finite (the factor is then unusable)."""
    nk = kkt.perm.shape[0]
    col_start = kkt.col_start
    col_rows = kkt.col_rows
    values = kkt.values
    etree = kkt.etree
    l_start = kkt.l_start
    l_count = kkt.l_count
    l_rows = kkt.l_rows
    l_values = kkt.l_values
    d = kkt.pivots
    y = kkt.work
    pattern = kkt.pattern
    flag = kkt.flag
    negatives = 0
    for k in range(nk):
        # the nonzero pattern of row k of L: the paths up the elimination tree from the rows of column k of K
        y[k] = 0.0
        top = nk
        flag[k] = k
        l_count[k] = 0
        for p in range(col_start[k], col_start[k + 1]):
            i = col_rows[p]
            y[i] += values[p]
            length = 0
            while flag[i] != k:
                pattern[length] = i
                length += 1
                flag[i] = k
                i = etree[i]
            while length > 0:
                top -= 1
                length -= 1
                pattern[top] = pattern[length]
        dk = y[k]
        y[k] = 0.0
        for t in range(top, nk):  # a sparse triangular solve for row k of L, in topological order
            i = pattern[t]
            yi = y[i]
            y[i] = 0.0
            end = l_start[i] + l_count[i]
            for p in range(l_start[i], end):
                y[l_rows[p]] -= l_values[p] * yi
            lki = yi / d[i]
            dk -= lki * yi
            l_rows[end] = k
            l_values[end] = lki
            l_count[i] += 1
        if not (dk != 0.0 and abs(dk) < np.inf):
            return -1
        d[k] = dk
        if dk < 0.0:
            negatives += 1
    return negatives


@njit
def ldl_solve(kkt):
    """kkt.rhs = (L D L^T)^-1 kkt.rhs in the permuted order (the factor of ``ldl_factor``)."""
    x = kkt.rhs
    nk = x.shape[0]
    for j in range(nk):
        xj = x[j]
        for p in range(kkt.l_start[j], kkt.l_start[j] + kkt.l_count[j]):
            x[kkt.l_rows[p]] -= kkt.l_values[p] * xj
    for j in range(nk):
        x[j] /= kkt.pivots[j]
    for j in range(nk - 1, -1, -1):
        v = x[j]
        for p in range(kkt.l_start[j], kkt.l_start[j] + kkt.l_count[j]):
            v -= kkt.l_values[p] * x[kkt.l_rows[p]]
        x[j] = v


@njit
def _free_body_top(body_real, aux_body, aux_coef, kkt):
    """An upper bound of the largest eigenvalue of E M^-1 E^T: its largest absolute row sum (Gershgorin), from the
    pairs of loop rows that share a body."""
    top = 0.0
    for r in range(aux_body.shape[0]):
        row = 0.0
        for q in range(kkt.pair_start[r], kkt.pair_start[r + 1]):
            s = kkt.pair_rows[q]
            v = 0.0
            for side_r in range(2):
                body = aux_body[r, side_r]
                if body < 0:
                    continue
                for side_s in range(2):
                    if aux_body[s, side_s] != body:
                        continue
                    for col in range(3):
                        inertia = body_real[body, MASS] if col < 2 else body_real[body, INERTIA]
                        if inertia > 0.0:
                            v += aux_coef[r, 3 * side_r + col] * aux_coef[s, 3 * side_s + col] / inertia
            row += abs(v)
        top = max(top, row)
    return top


@njit
def loop_solve(body_int, body_real, row_start, fac, aux_body, aux_coef, aux_rhs, rcond_shift, zone_shift, zdd, lam,
               info, kkt):
    """Close the loop rows E z'' = g on the tree solution x0 = (zdd, lam[:tree rows]) by the sparse KKT
    factorisation (module docstring) where the loop rows' Schur complement is surely regular: the same result as
    ``tree.add_auxiliary_rows`` there (its Cholesky path), info = (k, 1), True. Returns False, touching nothing
    but kkt's scratch, where it is not surely regular or a pivot fails: the caller solves as before. fac holds the
    tree factor with every joint block complete (``tree_residuals``). The shift of the inertia count is
    max(zone_shift top, rcond_shift scale) (module docstring; the callers pass the margins of their own regularity
    tests times their zone and rcond: ``_kernels.planar.loops.REGULAR_ZONE_MARGIN``, ``REGULAR_RCOND_MARGIN``)."""
    n = body_int.shape[0]
    k = aux_body.shape[0]
    mt = row_start[n]
    top = _free_body_top(body_real, aux_body, aux_coef, kkt)
    if not top > 0.0:
        return False
    scale = free_body_scale(body_real, aux_body, aux_coef)  # the tree solver's reference of the rank cut-off
    shift = max(zone_shift * top, rcond_shift * scale)
    _assemble(body_real, row_start, fac, aux_body, aux_coef, shift, kkt)
    if ldl_factor(kkt) != mt + k:  # some eigenvalue of S_E at or below the shift, or a failed pivot
        return False
    _assemble(body_real, row_start, fac, aux_body, aux_coef, 0.0, kkt)
    if ldl_factor(kkt) != mt + k:
        return False
    # K (dz, dlam, mu) = (0, 0, g - E zdd0): the correction of the tree solution, as the Schur complement's
    x = kkt.rhs
    x[:] = 0.0
    pinv_base = 3 * n + mt
    for j in range(x.shape[0]):
        orig = kkt.perm[j]
        if orig >= pinv_base:
            r = orig - pinv_base
            x[j] = aux_rhs[r] - _aux_times(aux_body, aux_coef, r, zdd)
    ldl_solve(kkt)
    for j in range(x.shape[0]):
        orig = kkt.perm[j]
        if orig < 3 * n:
            zdd[orig // 3, orig % 3] += x[j]
        elif orig < pinv_base:
            lam[orig - 3 * n] += x[j]
        else:
            lam[orig - 3 * n] = x[j]
    info[0] = k
    info[1] = 1
    return True


# the cost models of the choice between this factorisation and the Schur complement of the loop rows (the augmented
# route, ``recursive_mbd.dynamics.augmented_tree``) or their envelope (the recursive route,
# ``recursive_mbd.dynamics.loops``): a tree solve, or a recursive pass, costs about TREE_SOLVE_COST flops a body
# (measured, not derived: it only picks the faster of two exact paths)
TREE_SOLVE_COST = 40.0


# ---- the symbolic structure (Python, once per model) ---------------------------------------------------------------

def joint_row_starts(joint_type):
    """First constraint row of each body's joint (nbodies + 1,) int64, the total last, from the joints' types
    (nbodies,); rows run body by body (revolute: x, y; prismatic: normal, angle; fixed: x, y, angle; planar: none)."""
    counts = np.array(ROWS_PER_JOINT, dtype=np.int64)[joint_type]
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def _minimum_degree(n, adjacency):
    """An elimination order of the n bodies by minimum degree on the graph ``adjacency`` (a set of neighbours per
    body; consumed), ties to the highest index (a tree's leaves first, children before parents)."""
    heap = [(len(adjacency[v]), -v) for v in range(n)]
    heapq.heapify(heap)
    done = np.zeros(n, dtype=bool)
    order = []
    while heap:
        degree, v = heapq.heappop(heap)
        v = -v
        if done[v] or degree != len(adjacency[v]):
            continue  # eliminated already, or a stale degree
        done[v] = True
        order.append(v)
        neighbours = adjacency[v]
        for u in neighbours:
            adjacency[u].discard(v)
            adjacency[u] |= neighbours - {u}  # the fill of eliminating v: its neighbours form a clique
            heapq.heappush(heap, (len(adjacency[u]), -u))
        adjacency[v] = set()
    return order


def loop_row_bodies(loop_int, loop_rows):
    """The bodies (k, 2) int64 of each loop row: loop lp's rows loop_rows[lp]:loop_rows[lp + 1] act on its bodies
    a and b (-1: the ground)."""
    aux_body = np.full((int(loop_rows[-1]), 2), -1, dtype=np.int64)
    for lp in range(loop_int.shape[0]):
        aux_body[loop_rows[lp]:loop_rows[lp + 1]] = (int(loop_int[lp, LBODY_A]), int(loop_int[lp, LBODY_B]))
    return aux_body


def kkt_pattern(body_parent, loop_int, loop_rows, row_start, use):
    """The structure of the KKT matrix with the loop rows inside (module docstring): the elimination order, the
    upper triangle's pattern, the factor's pattern and the slots of every entry, fixed by the tree (body_parent
    (n,), row_start (n + 1,): ``joint_row_starts``) and the loops (loop_int, loop_rows (nloops + 1,): the model's).
    ``use``: whether the time loop solves with it (its ``use`` flag). Python, once per model."""
    n = body_parent.shape[0]
    mt = int(row_start[-1])
    parent = body_parent
    aux_body = loop_row_bodies(loop_int, loop_rows)
    k = aux_body.shape[0]
    nk = 3 * n + mt + k
    # constraint nodes: their original rows and their bodies
    nodes = [(range(3 * n + row_start[i], 3 * n + row_start[i + 1]), {i, int(parent[i])} - {-1})
             for i in range(n) if row_start[i + 1] > row_start[i]]
    for lp in range(loop_int.shape[0]):
        r0, r1 = int(loop_rows[lp]), int(loop_rows[lp + 1])
        nodes.append((range(3 * n + mt + r0, 3 * n + mt + r1), set(aux_body[r0].tolist()) - {-1}))
    adjacency = [set() for _ in range(n)]
    of_body = [[] for _ in range(n)]
    for j, (_, bodies) in enumerate(nodes):
        for b in bodies:
            adjacency[b] |= bodies - {b}
            of_body[b].append(j)
    waiting = [len(bodies) for _, bodies in nodes]
    perm = []
    for b in _minimum_degree(n, adjacency):
        perm += [3 * b, 3 * b + 1, 3 * b + 2]
        for j in of_body[b]:
            waiting[j] -= 1
            if waiting[j] == 0:  # the constraint's rows right after the last of its bodies
                perm += list(nodes[j][0])
    perm = np.asarray(perm, dtype=np.int64)
    pinv = np.empty(nk, dtype=np.int64)
    pinv[perm] = np.arange(nk)
    # the entries of K's upper triangle, permuted: (row, column) with row <= column
    entries = [(pinv[i], pinv[i]) for i in range(nk)]
    child = [(3 * n + row_start[i] + r, 3 * i + c) for i in range(n) for r in range(row_start[i + 1] - row_start[i])
             for c in range(3)]
    with_parent = [(3 * n + row_start[i] + r, 3 * parent[i] + c) for i in range(n) if parent[i] >= 0
                   for r in range(row_start[i + 1] - row_start[i]) for c in range(3)]
    aux = [(3 * n + mt + r, 3 * aux_body[r, side] + c) for r in range(k) for side in range(2)
           if aux_body[r, side] >= 0 for c in range(3)]
    for a, b in child + with_parent + aux:
        entries.append((min(pinv[a], pinv[b]), max(pinv[a], pinv[b])))
    slot_of = {}
    for e in entries:
        slot_of.setdefault(e, len(slot_of))
    ordered = sorted(slot_of, key=lambda e: (e[1], e[0]))  # by column
    renumber = {e: s for s, e in enumerate(ordered)}
    col_rows = np.array([e[0] for e in ordered], dtype=np.int64)
    col_start = np.searchsorted(np.array([e[1] for e in ordered]), np.arange(nk + 1)).astype(np.int64)

    def slot(a, b):
        return renumber[(min(pinv[a], pinv[b]), max(pinv[a], pinv[b]))]

    pos_diag = np.array([slot(i, i) for i in range(nk)], dtype=np.int64)
    pos_child = np.array([slot(a, b) for a, b in child], dtype=np.int64).reshape(mt, 3)
    pos_parent = np.full((mt, 3), -1, dtype=np.int64)
    for a, b in with_parent:
        pos_parent[a - 3 * n, b % 3] = slot(a, b)
    pos_aux = np.full((k, 6), -1, dtype=np.int64)
    for r in range(k):
        for side in range(2):
            if aux_body[r, side] >= 0:
                for c in range(3):
                    pos_aux[r, 3 * side + c] = slot(3 * n + mt + r, 3 * aux_body[r, side] + c)
    # elimination tree and column counts of L (Davis's ldl_symbolic)
    etree = np.full(nk, -1, dtype=np.int64)
    flag = np.full(nk, -1, dtype=np.int64)
    count = np.zeros(nk, dtype=np.int64)
    for j in range(nk):
        flag[j] = j
        for p in range(col_start[j], col_start[j + 1]):
            i = col_rows[p]
            while flag[i] != j:
                if etree[i] == -1:
                    etree[i] = j
                count[i] += 1
                flag[i] = j
                i = etree[i]
    l_start = np.concatenate(([0], np.cumsum(count))).astype(np.int64)
    # the loop rows that share a body with each loop row (Gershgorin bound of E M^-1 E^T)
    rows_of = [[] for _ in range(n)]
    for r in range(k):
        for b in set(aux_body[r].tolist()) - {-1}:
            rows_of[b].append(r)
    pairs = [sorted({s for b in set(aux_body[r].tolist()) - {-1} for s in rows_of[b]}) for r in range(k)]
    pair_start = np.concatenate(([0], np.cumsum([len(p) for p in pairs]))).astype(np.int64)
    pair_rows = np.array([s for p in pairs for s in p], dtype=np.int64)
    nnz = int(l_start[-1])
    return KKTStructure(
        np.array([1 if use else 0], dtype=np.int64), perm, col_start, col_rows, np.zeros(col_rows.size), etree,
        l_start, np.zeros(nk, dtype=np.int64), np.zeros(nnz, dtype=np.int64), np.zeros(nnz), np.zeros(nk),
        np.zeros(nk), np.zeros(nk, dtype=np.int64), np.zeros(nk, dtype=np.int64), np.zeros(nk), pos_diag,
        pos_child, pos_parent, pos_aux, pair_start, pair_rows)


def empty_kkt_structure():
    """The structure of a model that keeps the Schur complement (no loops, drivers): empty arrays of
    ``kkt_pattern``'s types, so that the time loop compiles one signature."""
    ints, floats = np.zeros(0, dtype=np.int64), np.zeros(0)
    return KKTStructure(np.zeros(1, dtype=np.int64), ints, np.zeros(1, dtype=np.int64), ints, floats, ints,
                        np.zeros(1, dtype=np.int64), ints, ints, floats, floats, floats, ints, ints, floats, ints,
                        np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3), dtype=np.int64),
                        np.zeros((0, 6), dtype=np.int64), np.zeros(1, dtype=np.int64), ints)
