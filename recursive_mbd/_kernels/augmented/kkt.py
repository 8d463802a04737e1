"""The augmented formulation's KKT matrix with the loop rows inside, factorised sparse: O(N) for a ladder.

The tree solver (``tree``) eliminates bodies and joints leaves first and adds the k loop rows E z'' = g by a
Schur complement S_E = E H^-1 E^T (H the tree's KKT matrix). Where every loop reaches the same subtrees from the
ground (a ladder: two chains joined by rungs) S_E is dense: k tree solves and an O(k^3) factorisation. Here the
whole matrix

    K = [M    Jt^T  E^T]        M = diag(m, m, J) per body, Jt the tree joints' rows, E the loops' rows
        [Jt   0     0  ]
        [E    0     s I]        (s = 0 to solve; s > 0 to count S_E's eigenvalues above s)

is factorised as P K P^T = L D L^T (scalar pivots, no pivoting) in a fixed order found once per model
(``recursive_mbd.dynamics.augmented_tree.kkt_structure``): bodies by minimum degree on the graph whose edges are
the joints and loops, each constraint's rows right after the last of its bodies. With that order every pivot is
the Schur complement of a leading block that is a sub-mechanism (the eliminated bodies with the constraints among
them): a body's 3 x 3 block M_b + sum J^T (-pivot)^-1 J is positive definite, a constraint's block -J P J^T (P the
sub-mechanism's projected inverse mass) is negative definite wherever the whole constraint Jacobian has full
rank, since a subset of independent rows is independent, and by Cauchy interlacing no worse conditioned than the
whole. Along a ladder the front holds two bodies and a few rows, so the factor has O(N) entries and the work is
O(N); a tree or a row of loops keeps the Schur complement, which is banded there (``tree.add_auxiliary_rows``).

With s > 0 the Schur complement of K onto the loop rows is s I - S_E; by Sylvester's law of inertia K then has mt +
(number of eigenvalues of S_E above s) negative pivots (mt tree rows). ``loop_solve`` takes S_E as surely regular
when all k are above s = max(REGULAR_ZONE_MARGIN zone, REGULAR_RCOND_MARGIN rcond scale / top) top with top a
Gershgorin bound of the largest eigenvalue of E M^-1 E^T (>= that of S_E, since H's projected inverse mass is at
most M^-1), so that no eigenvalue of S_E lies at or below zone times its largest, as the tree solver's flag says
where its own test passes (``loops.regular_factor``: a Rayleigh quotient above the same threshold of S_E's largest
absolute row sum). The two tests use different bounds of the largest eigenvalue and may part near the threshold;
on the ladders, rows and random trees with loops of the tests they agree state by state. Where the test passes
both paths solve the same regular system. Elsewhere (a change point near, a redundant row, a body without
inertia) it returns False and the caller takes the tree solver's path with its rank decisions.

The numeric factorisation is the up-looking LDL^T of T. A. Davis, "Algorithm 849: a concise sparse Cholesky
factorization package" (ACM TOMS 31, 2005): row k of L from the elimination tree, O(|L|) flops and no allocation.
"""

from collections import namedtuple

import numpy as np

from ..layout import INERTIA, MASS
from ..planar.loops import REGULAR_RCOND_MARGIN, REGULAR_ZONE_MARGIN
from .tree import F_JC, F_JP, _aux_times, free_body_scale, njit  # njit: the tree module's compile options

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
def loop_solve(body_int, body_real, row_start, fac, aux_body, aux_coef, aux_rhs, rcond, zone, zdd, lam, info, kkt):
    """Close the loop rows E z'' = g on the tree solution x0 = (zdd, lam[:tree rows]) by the sparse KKT
    factorisation (module docstring) where the loop rows' Schur complement is surely regular: the same result as
    ``tree.add_auxiliary_rows`` there (its Cholesky path), info = (k, 1), True. Returns False, touching nothing
    but kkt's scratch, where it is not surely regular or a pivot fails: the caller solves as before. fac holds the
    tree factor with every joint block complete (``tree.tree_residuals``)."""
    n = body_int.shape[0]
    k = aux_body.shape[0]
    mt = row_start[n]
    top = _free_body_top(body_real, aux_body, aux_coef, kkt)
    if not top > 0.0:
        return False
    scale = free_body_scale(body_real, aux_body, aux_coef)  # the tree solver's reference of the rank cut-off
    shift = max(REGULAR_ZONE_MARGIN * zone * top, REGULAR_RCOND_MARGIN * rcond * scale)
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
