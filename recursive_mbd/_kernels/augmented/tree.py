"""The augmented absolute-coordinate formulation (the two-squares tutorial) compiled: assembly and a linear-time KKT
solve.

Every body i has the absolute coordinates z_i = (x, y, theta) of its centre of mass and the constant mass
M_i = diag(m, m, J). The joint of body i to its parent p contributes m_i constraint rows (revolute 2, prismatic 2,
fixed 3, planar 0) with a child block Jc_i (m_i, 3) on z_i and a parent block Jp_i (m_i, 3) on z_p (the two-squares
tutorial eqs. 8, 9; ``recursive_mbd.dynamics.augmented`` writes them out). The KKT system of eqs. 10 and 13 (with
Baumgarte's terms, eqs. 15-17)

    [M   J^T] [z''   ]   [Q                          ]
    [J   0  ] [lambda] = [gamma - 2 alpha C' - beta^2 C]

has the graph of a tree when the rows of a joint form one node between its child body and its parent body
(Baraff, "Linear-time dynamics using Lagrange multipliers", SIGGRAPH 1996). Eliminating the nodes leaves first
(body i, then its joint, for i = n-1 .. 0: children come after parents) creates no fill, so factor and solve are
O(N) in time and memory:

    body pivot    D_i = M_i + sum over child joints c of Jp_c^T S_c^-1 Jp_c            (3 x 3, SPD)
    joint pivot   D_j = -S_i,  S_i = Jc_i D_i^-1 Jc_i^T                               (m_i x m_i, SPD)
    forward       x_i <- x_i + sum_c Jp_c^T S_c^-1 x_c,    x_j <- x_j - Jc_i D_i^-1 x_i
    backward      x_j = S_i^-1 (Jp_i x_p - x_j),            x_i = D_i^-1 (x_i - Jc_i^T x_j)   (roots first)

A tree joint's child block always has full row rank, so S_i is SPD. A body pivot D_i can be singular where the
joint fixes what the body's inertia does not (a point mass, J = 0, on a prismatic joint: theta is set by the
joint's angle row, not by its inertia); then body i and its joint are eliminated together through the equivalent
system [[D_i + w Jc^T Jc, Jc^T], [Jc, 0]] with the body right-hand side x_i + w Jc^T x_j (Jc z_i'' = x_j makes the
added terms vanish): the same formulas with D_i' = D_i + w Jc^T Jc and S_i' = Jc D_i'^-1 Jc^T, except that the
parent's pivot gains Jp^T (S_i'^-1 - w I) Jp (= Jp^T S_i^-1 Jp by Woodbury where S_i exists) and the joint's
multipliers lose w Jp x_p in the backward pass. The tree part is therefore singular only where the model is (a
subtree without inertia along a joint's free motion). Loops
(and drivers) are k auxiliary rows E z'' = g on at most two bodies each; they are added by a Schur complement on
the k rows: y_r = H^-1 E^T e_r (a tree solve for each colour of rows that act on disjoint subtrees hung from the
ground, each row keeping its own subtrees' response: O(c N) for c colours, 4 for a row of parallelograms, at most
k), S_E = E Y (k x k, positive semi-definite), mu the
minimum-norm least-squares solution of S_E mu = E x0 - g (redundant rows: rank < k, like the recursive loop layer),
and x = x0 - H^-1 E^T mu (one more tree solve).

All kernels are pure functions of arrays that return a status (``layout.decode_status``); nothing is allocated
per call except the k x k system of a model with loops. The joints' rows (``_joint_rows``), the factor's record
layout (F_*) and the sparse KKT factorisation that the time loop takes along a ladder live in ``_kernels.sparse_kkt``,
below this module and the recursive loop layer, which both assemble the same KKT matrix.
"""

import math

import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..joint_types import FIXED, PRISMATIC, REVOLUTE
from ..layout import (
    ANGLE,
    AXX,
    COX,
    FIRST_ROW_CHILD,
    FLAGS,
    INERTIA,
    JTYPE,
    MASS,
    NEXT_IS_CHILD,
    PARENT,
    PPX,
    QIDX,
    ROW_CHILDREN,
    STATUS_NONFINITE_Q,
    STATUS_NONFINITE_QD,
    STATUS_NONFINITE_TAU,
    STATUS_OK,
    STATUS_SINGULAR,
)
from ..planar.loops import (
    REDUNDANT,
    REGULAR_RCOND_MARGIN,
    REGULAR_ZONE_MARGIN,
    cutoff_rank_solve_envelope,
    envelope_last,
    regular_solve_envelope,
    row_colours,
)
from ..sparse_kkt import (  # the joints' rows and the factor's record layout (shared with the sparse KKT path)
    F_ACC,
    F_COS,
    F_DINV,
    F_JC,
    F_JP,
    F_REV_JC0,
    F_REV_JC1,
    F_REV_JP0,
    F_REV_JP1,
    F_SIN,
    F_SINV,
    F_W,
    ROWS_PER_JOINT,
    S_FC,
    S_FP,
    S_GAM,
    S_RES,
    _aux_times,
    _joint_rows,
    _rotated,
    free_body_scale,
    inline,  # the compile options of the tree's kernels (module ``sparse_kkt``): helpers inlined into their loops
    njit,
)

_row_colours = row_colours  # the spatial route's name for it


@inline
def joint_gap(body_real, z, zd, i, p, thp, omp):
    """The geometry of body i's joint at (z, zd), p its parent (-1: the ground) at the angle thp, turning at omp:
    (th, om, acx, acy, cp, sp, apx, apy, gx, gy, rx, ry) with th, om the child's angle and rate, (acx, acy) the arm
    A_c s_c from the child's centre of mass to the joint point, (cp, sp) the cosine and sine of thp, (apx, apy) the
    arm A_p s_p from the parent's centre of mass (the ground's origin), (gx, gy) the gap D = P_c - P_p and (rx, ry)
    its rate D'."""
    th = z[i, 2]
    om = zd[i, 2]
    acx, acy = _rotated(math.cos(th), math.sin(th), -body_real[i, COX], -body_real[i, COX + 1])
    cp = math.cos(thp)
    sp = math.sin(thp)
    apx, apy = _rotated(cp, sp, body_real[i, PPX], body_real[i, PPX + 1])
    cpx = z[p, 0] if p >= 0 else 0.0
    cpy = z[p, 1] if p >= 0 else 0.0
    vpx = zd[p, 0] if p >= 0 else 0.0
    vpy = zd[p, 1] if p >= 0 else 0.0
    gx = z[i, 0] + acx - cpx - apx
    gy = z[i, 1] + acy - cpy - apy
    rx = zd[i, 0] - om * acy - vpx + omp * apy
    ry = zd[i, 1] + om * acx - vpy - omp * apx
    return th, om, acx, acy, cp, sp, apx, apy, gx, gy, rx, ry


@inline
def prismatic_coordinate(body_real, i, cp, sp, gx, gy, rx, ry, omp):
    """(ux, uy, q, q') of body i's prismatic joint from ``joint_gap``: its axis u in ground axes, q = u . D and
    q' = u . D' + omega_p perp(u) . D."""
    ux, uy = _rotated(cp, sp, body_real[i, AXX], body_real[i, AXX + 1])
    return ux, uy, ux * gx + uy * gy, ux * rx + uy * ry + omp * (-uy * gx + ux * gy)


@inline
def _sym_inverse(a00, a01, a02, a11, a12, a22, m, fac, i, at, tol=1e-13):
    """out = the inverse of the symmetric positive definite m x m matrix (m = 1, 2, 3) given by its upper entries,
    stored (00, 01, 02, 11, 12, 22), into fac[i, at:at + 6]. Returns False when it is not numerically positive
    definite (its determinant below ``tol`` times the product of its diagonal, the largest it can be: Hadamard)."""
    if m == 1:
        if not a00 > 0.0:
            return False
        fac[i, at + 0] = 1.0 / a00
        return True
    if m == 2:
        det = a00 * a11 - a01 * a01
        if not det > tol * a00 * a11:
            return False
        fac[i, at + 0] = a11 / det
        fac[i, at + 1] = -a01 / det
        fac[i, at + 3] = a00 / det
        return True
    ok, e00, e01, e02, e11, e12, e22 = _sym3_inverse(a00, a01, a02, a11, a12, a22, tol)
    if not ok:
        return False
    fac[i, at + 0] = e00
    fac[i, at + 1] = e01
    fac[i, at + 2] = e02
    fac[i, at + 3] = e11
    fac[i, at + 4] = e12
    fac[i, at + 5] = e22
    return True


@inline
def _sym3_inverse(a00, a01, a02, a11, a12, a22, tol):
    """(ok, the upper entries 00, 01, 02, 11, 12, 22 of the inverse) of a symmetric 3 x 3 matrix by cofactors; ok is
    False when it is not numerically positive definite (``_sym_inverse``)."""
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    det = a00 * c00 + a01 * c01 + a02 * c02
    if not det > tol * a00 * a11 * a22:
        return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    inv = 1.0 / det
    return (True, c00 * inv, c01 * inv, c02 * inv, (a00 * a22 - a02 * a02) * inv, (a01 * a02 - a00 * a12) * inv,
            (a00 * a11 - a01 * a01) * inv)


@inline
def _sym_get(fac, i, at, r, c):
    """Entry (r, c) of the symmetric 3 x 3 matrix stored (00, 01, 02, 11, 12, 22) in fac[i, at:at + 6]."""
    if r > c:
        r, c = c, r
    return fac[i, at + r * 3 - (r * (r - 1)) // 2 + c - r]


@inline
def _eliminate_joint(body_int, row_start, fac, i, m, xb, xj):
    """Forward elimination of body i's joint: x_j -= Jc D_i^-1 x_i, then onto the parent
    x_p += Jp^T S^-1 x_j (its pivot was already updated by the factorisation)."""
    r0 = row_start[i]
    w = fac[i, F_W]
    if w != 0.0:  # regularised pivot: x_i += w Jc^T x_j
        for r in range(m):
            xb[i, 0] += w * fac[i, F_JC + 3 * r] * xj[r0 + r]
            xb[i, 1] += w * fac[i, F_JC + 3 * r + 1] * xj[r0 + r]
            xb[i, 2] += w * fac[i, F_JC + 3 * r + 2] * xj[r0 + r]
    y0 = fac[i, F_DINV + 0] * xb[i, 0] + fac[i, F_DINV + 1] * xb[i, 1] + fac[i, F_DINV + 2] * xb[i, 2]  # D_i^-1 x_i
    y1 = fac[i, F_DINV + 1] * xb[i, 0] + fac[i, F_DINV + 3] * xb[i, 1] + fac[i, F_DINV + 4] * xb[i, 2]
    y2 = fac[i, F_DINV + 2] * xb[i, 0] + fac[i, F_DINV + 4] * xb[i, 1] + fac[i, F_DINV + 5] * xb[i, 2]
    for r in range(m):
        xj[r0 + r] -= fac[i, F_JC + 3 * r] * y0 + fac[i, F_JC + 3 * r + 1] * y1 + fac[i, F_JC + 3 * r + 2] * y2
    p = body_int[i, PARENT]
    if p >= 0:
        for r in range(m):
            v = 0.0  # (S^-1 x_j)_r
            for c in range(m):
                v += _sym_get(fac, i, F_SINV, r, c) * xj[r0 + c]
            xb[p, 0] += fac[i, F_JP + 3 * r] * v
            xb[p, 1] += fac[i, F_JP + 3 * r + 1] * v
            xb[p, 2] += fac[i, F_JP + 3 * r + 2] * v


@njit
def _back_substitute(body_int, row_start, fac, xb, xj):
    """Roots first: x_j = S^-1 (Jp x_p - x_j), x_i = D_i^-1 (x_i - Jc^T x_j) (a regularised pivot: x_j loses
    w Jp x_p afterwards). In place on xb (n, 3), xj (rows). A revolute body with a regular pivot takes the same
    operations less the products by the blocks' constant 0 and +-1 entries, written out (no helpers with array
    arguments, whose reference counting costs more than the arithmetic: ``factor_and_solve``)."""
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        r0 = row_start[i]
        b0 = xb[i, 0]
        b1 = xb[i, 1]
        b2 = xb[i, 2]
        if body_int[i, JTYPE] == REVOLUTE and fac[i, F_W] == 0.0:
            acy = fac[i, F_REV_JC0]  # Jc = [[-1, 0, acy], [0, -1, nacx]], Jp = [[1, 0, napy], [0, 1, apx]]
            nacx = fac[i, F_REV_JC1]
            napy = fac[i, F_REV_JP0]
            apx = fac[i, F_REV_JP1]
            t0 = -xj[r0]  # Jp x_p - x_j
            t1 = -xj[r0 + 1]
            if p >= 0:
                t0 += xb[p, 0] + napy * xb[p, 2]
                t1 += xb[p, 1] + apx * xb[p, 2]
            f00 = fac[i, F_SINV + 0]
            f01 = fac[i, F_SINV + 1]
            f11 = fac[i, F_SINV + 3]
            lam0 = f00 * t0 + f01 * t1
            lam1 = f01 * t0 + f11 * t1
            b0 += lam0  # x_i - Jc^T x_j
            b2 -= acy * lam0
            b1 += lam1
            b2 -= nacx * lam1
            xj[r0] = lam0
            xj[r0 + 1] = lam1
        else:
            m = ROWS_PER_JOINT[body_int[i, JTYPE]]
            if m > 0:
                t0 = t1 = t2 = 0.0  # Jp x_p - x_j
                for r in range(m):
                    v = -xj[r0 + r]
                    if p >= 0:
                        v += (fac[i, F_JP + 3 * r] * xb[p, 0] + fac[i, F_JP + 3 * r + 1] * xb[p, 1]
                              + fac[i, F_JP + 3 * r + 2] * xb[p, 2])
                    if r == 0:
                        t0 = v
                    elif r == 1:
                        t1 = v
                    else:
                        t2 = v
                w = fac[i, F_W]
                for r in range(m):
                    lam = _sym_get(fac, i, F_SINV, r, 0) * t0 + _sym_get(fac, i, F_SINV, r, 1) * t1
                    if m == 3:
                        lam += _sym_get(fac, i, F_SINV, r, 2) * t2
                    b0 -= fac[i, F_JC + 3 * r] * lam
                    b1 -= fac[i, F_JC + 3 * r + 1] * lam
                    b2 -= fac[i, F_JC + 3 * r + 2] * lam
                    if w != 0.0 and p >= 0:
                        lam -= w * (fac[i, F_JP + 3 * r] * xb[p, 0] + fac[i, F_JP + 3 * r + 1] * xb[p, 1]
                                    + fac[i, F_JP + 3 * r + 2] * xb[p, 2])
                    xj[r0 + r] = lam
        xb[i, 0] = fac[i, F_DINV + 0] * b0 + fac[i, F_DINV + 1] * b1 + fac[i, F_DINV + 2] * b2
        xb[i, 1] = fac[i, F_DINV + 1] * b0 + fac[i, F_DINV + 3] * b1 + fac[i, F_DINV + 4] * b2
        xb[i, 2] = fac[i, F_DINV + 2] * b0 + fac[i, F_DINV + 4] * b1 + fac[i, F_DINV + 5] * b2


@njit
def tree_solve(body_int, row_start, fac, xb, xj):
    """Solve H x = b with the factor of ``factor_and_solve``: xb (nbodies, 3) and xj (tree rows) hold b on entry,
    x on return. O(N)."""
    for i in range(body_int.shape[0] - 1, -1, -1):
        if body_int[i, JTYPE] == REVOLUTE and fac[i, F_W] == 0.0:
            # _eliminate_joint written out for a revolute body (as in ``_back_substitute``): the same operations
            # less the products by the blocks' constant 0 and +-1 entries
            y0 = fac[i, F_DINV + 0] * xb[i, 0] + fac[i, F_DINV + 1] * xb[i, 1] + fac[i, F_DINV + 2] * xb[i, 2]
            y1 = fac[i, F_DINV + 1] * xb[i, 0] + fac[i, F_DINV + 3] * xb[i, 1] + fac[i, F_DINV + 4] * xb[i, 2]
            y2 = fac[i, F_DINV + 2] * xb[i, 0] + fac[i, F_DINV + 4] * xb[i, 1] + fac[i, F_DINV + 5] * xb[i, 2]
            r0 = row_start[i]
            x0 = xj[r0] - (-y0 + fac[i, F_REV_JC0] * y2)
            x1 = xj[r0 + 1] - (-y1 + fac[i, F_REV_JC1] * y2)
            xj[r0] = x0
            xj[r0 + 1] = x1
            p = body_int[i, PARENT]
            if p >= 0:
                v0 = fac[i, F_SINV + 0] * x0 + fac[i, F_SINV + 1] * x1
                v1 = fac[i, F_SINV + 1] * x0 + fac[i, F_SINV + 3] * x1
                xb[p, 0] += v0
                xb[p, 2] += fac[i, F_REV_JP0] * v0
                xb[p, 1] += v1
                xb[p, 2] += fac[i, F_REV_JP1] * v1
        else:
            m = ROWS_PER_JOINT[body_int[i, JTYPE]]
            if m > 0:
                _eliminate_joint(body_int, row_start, fac, i, m, xb, xj)
    _back_substitute(body_int, row_start, fac, xb, xj)


@njit
def factor_and_solve(body_int, body_real, gravity, row_start, z, zd, tau, wrench, stab, fac, scratch, zdd, lam,
                     power):
    """Tree-joint rows, KKT factor and solution in one leaves-first pass plus one roots-first pass (module
    docstring): zdd (nbodies, 3) and the tree multipliers lam[:row_start[-1]] (lam may be longer: auxiliary rows
    follow). ``tau`` (nq,) or (0,), ``wrench`` (nbodies, 3) or (0, 3) the element loads at the centres of mass,
    stab = (alpha, beta); power[0] receives tau . qd. Returns the status (z, zd, tau not finite; singular pivot)."""
    n = body_int.shape[0]
    alpha = stab[0]
    beta = stab[1]
    gx = gravity[0]
    gy = gravity[1]
    has_wrench = wrench.shape[0] > 0
    for k in range(tau.shape[0]):
        if not math.isfinite(tau[k]):
            return STATUS_NONFINITE_TAU | (k << 4)
    tau_power = 0.0
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        # a body's record (its pivot sums, zdd, sin/cos: once per body, not again for every child) is set up by its
        # first child to come, the highest-index one (the model's flags), or by itself if it has none: no sweep
        # over the records before this pass (NaN for a non-finite theta: refused at that body's step)
        flags = body_int[i, FLAGS]
        leaf = not flags & (NEXT_IS_CHILD | ROW_CHILDREN)
        first_child = p >= 0 and (flags & FIRST_ROW_CHILD or (p == i - 1 and not body_int[p, FLAGS] & ROW_CHILDREN))
        for side in range(2):  # written out, not a helper: see the revolute step below
            if side == 0 and not leaf or side == 1 and not first_child:
                continue
            b = i if side == 0 else p
            for col in range(6):
                fac[b, F_ACC + col] = 0.0
            zdd[b, 0] = 0.0
            zdd[b, 1] = 0.0
            zdd[b, 2] = 0.0
            th = z[b, 2]
            fac[b, F_COS] = math.cos(th)  # libm; LLVM fuses the pair
            fac[b, F_SIN] = math.sin(th)
        if not (math.isfinite(z[i, 0]) and math.isfinite(z[i, 1]) and math.isfinite(z[i, 2])):
            return STATUS_NONFINITE_Q | (i << 4)
        if not (math.isfinite(zd[i, 0]) and math.isfinite(zd[i, 1]) and math.isfinite(zd[i, 2])):
            return STATUS_NONFINITE_QD | (i << 4)
        if body_int[i, JTYPE] == REVOLUTE:
            # the revolute step, written out here rather than in an inlined helper: numba counts the references to
            # every array handed to a helper, inlined or not, and those atomic updates cost more than all the
            # arithmetic (130 -> 48 ns per body, measured). The same floating-point operations as the general step
            # below (``_joint_rows`` and the rest of the loop), in the same order, less the products by the
            # constant entries 0 and +-1 of the revolute blocks Jc = [[-1, 0, a_cy], [0, -1, -a_cx]] and
            # Jp = [[1, 0, -a_py], [0, 1, a_px]], which change no value (x * 1 and x + 0 * y are x; at most the sign
            # of a zero differs), and with the sin/cos of the body and of its parent read from F_COS, F_SIN (once
            # per body) instead of computed again for every child. Only the blocks' four varying entries are
            # stored (F_REV_*, line 1 of the record, for ``tree_solve`` and ``_back_substitute``): writing the
            # whole blocks moved two more cache lines per body at large N; the projection's readers of whole
            # blocks get them from ``tree_residuals``.
            cos_i = fac[i, F_COS]
            sin_i = fac[i, F_SIN]
            om = zd[i, 2]
            cox = -body_real[i, COX]
            coy = -body_real[i, COX + 1]
            acx = cos_i * cox - sin_i * coy  # arm A_c s_c from the child's centre of mass to the joint point
            acy = sin_i * cox + cos_i * coy
            if p >= 0:
                omp = zd[p, 2]
                cpx = z[p, 0]
                cpy = z[p, 1]
                cp = fac[p, F_COS]
                sp = fac[p, F_SIN]
            else:
                omp = cpx = cpy = 0.0
                cp = 1.0  # cos and sin of the ground's angle 0, as math.cos(0.0), math.sin(0.0)
                sp = 0.0
            ppx = body_real[i, PPX]
            ppy = body_real[i, PPX + 1]
            apx = cp * ppx - sp * ppy  # arm A_p s_p from the parent's centre of mass (ground: origin)
            apy = sp * ppx + cp * ppy
            res0 = -(z[i, 0] + acx - cpx - apx)  # C = P_p - P_c (eq. 8)
            res1 = -(z[i, 1] + acy - cpy - apy)
            gam0 = apx * omp * omp - acx * om * om
            gam1 = apy * omp * omp - acy * om * om
            # body pivot D_i = M_i + children's Jp^T S^-1 Jp
            mass = body_real[i, MASS]
            ok, e00, e01, e02, e11, e12, e22 = _sym3_inverse(
                mass + fac[i, F_ACC + 0], fac[i, F_ACC + 1], fac[i, F_ACC + 2], mass + fac[i, F_ACC + 3],
                fac[i, F_ACC + 4], body_real[i, INERTIA] + fac[i, F_ACC + 5], 1e-8)
            if ok:
                fac[i, F_DINV + 0] = e00
                fac[i, F_DINV + 1] = e01
                fac[i, F_DINV + 2] = e02
                fac[i, F_DINV + 3] = e11
                fac[i, F_DINV + 4] = e12
                fac[i, F_DINV + 5] = e22
                fac[i, F_W] = 0.0
                # right-hand side Q_i: gravity, the element wrench, tau (a moment on the child, minus it on
                # the parent)
                torque = tau[body_int[i, QIDX]] if tau.shape[0] > 0 else 0.0
                zdd[i, 0] += mass * gx + 0.0
                zdd[i, 1] += mass * gy + 0.0
                zdd[i, 2] += torque
                if wrench.shape[0] > 0:
                    zdd[i, 0] += wrench[i, 0]
                    zdd[i, 1] += wrench[i, 1]
                    zdd[i, 2] += wrench[i, 2]
                tau_power += torque * zd[i, 2]
                if p >= 0:
                    zdd[p, 2] -= torque
                    tau_power += -torque * zd[p, 2]
                # joint pivot S = Jc D^-1 Jc^T (2 x 2) and its right-hand side gamma - 2 alpha C' - beta^2 C
                y0 = -e00 + e02 * acy  # D^-1 Jc_0^T
                y1 = -e01 + e12 * acy
                y2 = -e02 + e22 * acy
                s00 = -y0 + acy * y2
                s01 = -y1 - acx * y2
                y0 = -e01 - e02 * acx  # D^-1 Jc_1^T
                y1 = -e11 - e12 * acx
                y2 = -e12 - e22 * acx
                s11 = -y1 - acx * y2
                rate0 = -zd[i, 0] + acy * zd[i, 2]  # C' = Jc z_i' + Jp z_p'
                rate1 = -zd[i, 1] - acx * zd[i, 2]
                if p >= 0:
                    rate0 += zd[p, 0] - apy * zd[p, 2]
                    rate1 += zd[p, 1] + apx * zd[p, 2]
                r0 = row_start[i]
                x0 = gam0 - 2.0 * alpha * rate0 - beta * beta * res0
                x1 = gam1 - 2.0 * alpha * rate1 - beta * beta * res1
                det = s00 * s11 - s01 * s01
                if not det > 1e-13 * s00 * s11:
                    return STATUS_SINGULAR | (i << 4)
                f00 = s11 / det  # S^-1
                f01 = -s01 / det
                f11 = s00 / det
                fac[i, F_SINV + 0] = f00
                fac[i, F_SINV + 1] = f01
                fac[i, F_SINV + 3] = f11
                fac[i, F_REV_JC0] = acy  # the blocks' varying entries, in the record's line 1 (layout above)
                fac[i, F_REV_JC1] = -acx
                fac[i, F_REV_JP0] = -apy
                fac[i, F_REV_JP1] = apx
                # forward elimination: x_j -= Jc D^-1 x_i, then x_p += Jp^T S^-1 x_j
                b0 = zdd[i, 0]
                b1 = zdd[i, 1]
                b2 = zdd[i, 2]
                y0 = e00 * b0 + e01 * b1 + e02 * b2
                y1 = e01 * b0 + e11 * b1 + e12 * b2
                y2 = e02 * b0 + e12 * b1 + e22 * b2
                x0 -= -y0 + acy * y2
                x1 -= -y1 - acx * y2
                lam[r0] = x0
                lam[r0 + 1] = x1
                if p >= 0:
                    # the parent's pivot gains Jp^T S^-1 Jp, a row of Jp at a time
                    u2 = -(f00 * apy) + f01 * apx  # row 0 of S^-1 Jp is (f00, f01, u2)
                    fac[p, F_ACC + 0] += f00
                    fac[p, F_ACC + 1] += f01
                    fac[p, F_ACC + 2] += u2
                    fac[p, F_ACC + 5] += -apy * u2
                    u2 = -(f01 * apy) + f11 * apx  # row 1: (f01, f11, u2)
                    fac[p, F_ACC + 3] += f11
                    fac[p, F_ACC + 4] += u2
                    fac[p, F_ACC + 5] += apx * u2
                    v0 = f00 * x0 + f01 * x1  # S^-1 x_j
                    v1 = f01 * x0 + f11 * x1
                    zdd[p, 0] += v0
                    zdd[p, 2] += -apy * v0
                    zdd[p, 1] += v1
                    zdd[p, 2] += apx * v1
                continue
            # a singular body pivot: the general step below regularises it
        m = _joint_rows(body_int, body_real, z, zd, tau, i, fac, scratch)
        # body pivot D_i = M_i + children's Jp^T S^-1 Jp, and the right-hand side Q_i (gravity, elements, tau)
        mass = body_real[i, MASS]
        d00 = mass + fac[i, F_ACC + 0]
        d11 = mass + fac[i, F_ACC + 3]
        d22 = body_real[i, INERTIA] + fac[i, F_ACC + 5]
        w = 0.0
        d01 = fac[i, F_ACC + 1]
        d02 = fac[i, F_ACC + 2]
        d12 = fac[i, F_ACC + 4]
        if not _sym_inverse(d00, d01, d02, d11, d12, d22, 3, fac, i, F_DINV, 1e-8):
            if m == 0:
                return STATUS_SINGULAR | (i << 4)
            # regularised pivot D' = D + w Jc^T Jc, w scaled to D (module docstring)
            norm = 0.0
            for c in range(3 * m):
                norm += fac[i, F_JC + c] * fac[i, F_JC + c]
            w = max(d00 + d11 + d22, 1e-300) / norm
            for r in range(m):
                j0 = fac[i, F_JC + 3 * r]
                j1 = fac[i, F_JC + 3 * r + 1]
                j2 = fac[i, F_JC + 3 * r + 2]
                d00 += w * j0 * j0
                d01 += w * j0 * j1
                d02 += w * j0 * j2
                d11 += w * j1 * j1
                d12 += w * j1 * j2
                d22 += w * j2 * j2
            if not _sym_inverse(d00, d01, d02, d11, d12, d22, 3, fac, i, F_DINV):
                return STATUS_SINGULAR | (i << 4)
        fac[i, F_W] = w
        zdd[i, 0] += mass * gx + scratch[S_FC, 0]
        zdd[i, 1] += mass * gy + scratch[S_FC, 1]
        zdd[i, 2] += scratch[S_FC, 2]
        if has_wrench:
            zdd[i, 0] += wrench[i, 0]
            zdd[i, 1] += wrench[i, 1]
            zdd[i, 2] += wrench[i, 2]
        tau_power += scratch[S_FC, 0] * zd[i, 0] + scratch[S_FC, 1] * zd[i, 1] + scratch[S_FC, 2] * zd[i, 2]
        if p >= 0:
            zdd[p, 0] += scratch[S_FP, 0]
            zdd[p, 1] += scratch[S_FP, 1]
            zdd[p, 2] += scratch[S_FP, 2]
            tau_power += scratch[S_FP, 0] * zd[p, 0] + scratch[S_FP, 1] * zd[p, 1] + scratch[S_FP, 2] * zd[p, 2]
        if m == 0:
            continue
            # joint pivot S = Jc D^-1 Jc^T (m x m, SPD) and its right-hand side gamma - 2 alpha C' - beta^2 C
        r0 = row_start[i]
        s00 = s01 = s02 = s11 = s12 = s22 = 0.0
        for r in range(m):
            j0 = fac[i, F_JC + 3 * r]
            j1 = fac[i, F_JC + 3 * r + 1]
            j2 = fac[i, F_JC + 3 * r + 2]
            y0 = fac[i, F_DINV + 0] * j0 + fac[i, F_DINV + 1] * j1 + fac[i, F_DINV + 2] * j2  # D^-1 Jc_r^T
            y1 = fac[i, F_DINV + 1] * j0 + fac[i, F_DINV + 3] * j1 + fac[i, F_DINV + 4] * j2
            y2 = fac[i, F_DINV + 2] * j0 + fac[i, F_DINV + 4] * j1 + fac[i, F_DINV + 5] * j2
            for c in range(r, m):
                v = fac[i, F_JC + 3 * c] * y0 + fac[i, F_JC + 3 * c + 1] * y1 + fac[i, F_JC + 3 * c + 2] * y2
                if r == 0:
                    if c == 0:
                        s00 = v
                    elif c == 1:
                        s01 = v
                    else:
                        s02 = v
                elif r == 1:
                    if c == 1:
                        s11 = v
                    else:
                        s12 = v
                else:
                    s22 = v
            rate = j0 * zd[i, 0] + j1 * zd[i, 1] + j2 * zd[i, 2]
            if p >= 0:
                rate += (fac[i, F_JP + 3 * r] * zd[p, 0] + fac[i, F_JP + 3 * r + 1] * zd[p, 1]
                         + fac[i, F_JP + 3 * r + 2] * zd[p, 2])
            lam[r0 + r] = scratch[S_GAM, r] - 2.0 * alpha * rate - beta * beta * scratch[S_RES, r]
        if not _sym_inverse(s00, s01, s02, s11, s12, s22, m, fac, i, F_SINV):
            return STATUS_SINGULAR | (i << 4)
        if p >= 0:  # the parent's pivot gains Jp^T (S^-1 - w I) Jp, a row of Jp at a time
            for r in range(m):
                u0 = -w * fac[i, F_JP + 3 * r]  # row r of (S^-1 - w I) Jp
                u1 = -w * fac[i, F_JP + 3 * r + 1]
                u2 = -w * fac[i, F_JP + 3 * r + 2]
                for c in range(m):
                    sv = _sym_get(fac, i, F_SINV, r, c)
                    u0 += sv * fac[i, F_JP + 3 * c]
                    u1 += sv * fac[i, F_JP + 3 * c + 1]
                    u2 += sv * fac[i, F_JP + 3 * c + 2]
                j0 = fac[i, F_JP + 3 * r]
                j1 = fac[i, F_JP + 3 * r + 1]
                j2 = fac[i, F_JP + 3 * r + 2]
                fac[p, F_ACC] += j0 * u0
                fac[p, F_ACC + 1] += j0 * u1
                fac[p, F_ACC + 2] += j0 * u2
                fac[p, F_ACC + 3] += j1 * u1
                fac[p, F_ACC + 4] += j1 * u2
                fac[p, F_ACC + 5] += j2 * u2
        _eliminate_joint(body_int, row_start, fac, i, m, zdd, lam)
    _back_substitute(body_int, row_start, fac, zdd, lam)
    power[0] = tau_power
    return STATUS_OK


@inline
def _aux_load(aux_body, aux_coef, r, scale, xb):
    """xb += scale * (row r of E)^T."""
    for side in range(2):
        body = aux_body[r, side]
        if body >= 0:
            xb[body, 0] += scale * aux_coef[r, 3 * side]
            xb[body, 1] += scale * aux_coef[r, 3 * side + 1]
            xb[body, 2] += scale * aux_coef[r, 3 * side + 2]


@njit
def _auxiliary_schur(body_int, row_start, fac, aux_body, aux_coef, xb, xj, schur, first, last):
    """schur (k, k) = E H^-1 E^T inside its envelope, column r by column r's row responses: a tree solve per colour
    of rows that act on disjoint subtrees (``loops.row_colours``), each entry E_s H^-1 E_r^T summed from the sides
    of row s in row r's subtrees, in the order of a solve per row (the same numbers): O(colours N + k b) for a
    width b instead of O(k N). Rows s and r meet only where they act on a common subtree, so row s of the Schur
    complement is zero outside [first[s], last[s]], the first and the last row that shares a subtree with it
    (filled here); only that range is set, the entries outside it are left as they are (zero in the system's
    array, which nothing else writes)."""
    k = aux_body.shape[0]
    colour, ncolours, root = row_colours(body_int, aux_body)
    owner = np.full(body_int.shape[0], -1, dtype=np.int64)  # owner[b]: the row of the colour on subtree b
    lowest = np.full(body_int.shape[0], k, dtype=np.int64)  # lowest[b]: the first row on subtree b
    for s in range(k):
        first[s] = s
        for side in range(2):
            body = aux_body[s, side]
            if body >= 0:
                lowest[root[body]] = min(lowest[root[body]], s)
                first[s] = min(first[s], lowest[root[body]])
    envelope_last(first, last)
    for s in range(k):
        for r in range(first[s], last[s] + 1):
            schur[s, r] = 0.0
    for c in range(ncolours):
        xb[:, :] = 0.0
        xj[:] = 0.0
        for r in range(k):
            if colour[r] == c:
                _aux_load(aux_body, aux_coef, r, 1.0, xb)
                for side in range(2):
                    body = aux_body[r, side]
                    if body >= 0:
                        owner[root[body]] = r
        tree_solve(body_int, row_start, fac, xb, xj)
        for s in range(k):
            for side in range(2):
                body = aux_body[s, side]
                if body < 0:
                    continue
                r = owner[root[body]]
                if r < 0 or colour[r] != c:
                    continue
                schur[s, r] += (aux_coef[s, 3 * side] * xb[body, 0] + aux_coef[s, 3 * side + 1] * xb[body, 1]
                                + aux_coef[s, 3 * side + 2] * xb[body, 2])


@njit
def add_auxiliary_rows(body_int, body_real, row_start, fac, aux_body, aux_coef, aux_rhs, rcond, zone, zdd, lam, xb,
                       xj, schur, info):
    """Close the auxiliary rows E z'' = g (loops, drivers) on the tree solution x0 = (zdd, lam[:tree rows]) by the
    Schur complement on the k rows (module docstring); their multipliers go to lam[tree rows:]. xb (nbodies, 3),
    xj (tree rows) and schur (k, k, left holding E H^-1 E^T inside its envelope; zero outside it on entry, as
    allocated) are scratch. info (2,) receives the rank of
    E H^-1 E^T (minimum-norm multipliers below k) and 1 where the Schur complement was surely regular, with no
    eigenvalue at or below ``zone`` times its largest, else 0.

    Where it is surely regular (``loops.regular_solve``: its smallest eigenvalue above REGULAR_RCOND_MARGIN times
    the rank cut-off below and REGULAR_ZONE_MARGIN zone of the largest) the multipliers come from a Cholesky
    factorisation of its envelope (a row of loops: banded), not from the O(k^3) eigen-decomposition; so they do
    where it is not but every eigenvalue lies above the rank cut-off (``loops.cutoff_solve``: a change point's zone).
    Below that the rank is counted by inertia and the multipliers come from the banded regularised solve with the
    cut-off as its parameter (``loops.cutoff_rank_solve_envelope``: the pseudo-inverse's to a relative (cut-off /
    s)^2 for eigenvalues s far above it); the eigen-decomposition remains where an eigenvalue is round-off (below
    REDUNDANT times the Gershgorin bound: redundant rows) or a factorisation breaks down.

    The rank is decided against the rows' free-body scale max_r E_r M^-1 E_r^T, an upper bound of the diagonal of
    E H^-1 E^T, not against its own largest eigenvalue: a row that the tree locks completely (a loop on a body
    welded to the ground) has E_r H^-1 E_r^T = 0 up to round-off, and a relative cut-off would count that
    round-off as rank (the recursive layer sees an exact zero row there)."""
    n = body_int.shape[0]
    k = aux_body.shape[0]
    mt = row_start[n]
    scale = free_body_scale(body_real, aux_body, aux_coef)
    first = np.empty(k, dtype=np.int64)
    last = np.empty(k, dtype=np.int64)
    _auxiliary_schur(body_int, row_start, fac, aux_body, aux_coef, xb, xj, schur, first, last)
    rhs = np.empty(k)
    for s in range(k):
        rhs[s] = _aux_times(aux_body, aux_coef, s, zdd) - aux_rhs[s]
    for r in range(k):  # symmetrise the round-off before the eigen-decomposition
        for s in range(first[r], r):
            mean = 0.5 * (schur[r, s] + schur[s, r])
            schur[r, s] = mean
            schur[s, r] = mean
    mu = np.zeros(k)
    top = 0.0  # a bound of the largest eigenvalue: the largest absolute row sum
    for r in range(k):
        row = 0.0
        for s in range(first[r], last[r] + 1):
            row += abs(schur[r, s])
        top = max(top, row)
    regular = top > 0.0 and regular_solve_envelope(
        schur, first, rhs, max(REGULAR_ZONE_MARGIN * zone, REGULAR_RCOND_MARGIN * rcond * scale / top), mu)
    rank = k
    # near a change point: not surely regular; the rank by inertia at the cut-off, and a Cholesky factorisation
    # where every eigenvalue is above it (the pseudo-inverse is the inverse), else the banded regularised solve
    # with mu = the cut-off (``loops.cutoff_rank_solve_envelope``): no eigen-decomposition of a row's banded S_E
    if not regular:  # round-off eigenvalues (below REDUNDANT of the Gershgorin bound): the eigen-decomposition
        rank = cutoff_rank_solve_envelope(schur, first, rhs, rcond * scale, REDUNDANT * top, mu)
    if rank < 0:  # redundant rows, or a factorisation broke down
        values, vectors = np.linalg.eigh(schur)  # positive semi-definite: mu = pseudo-inverse times rhs
        mu[:] = 0.0
        rank = 0
        for e in range(k):
            if values[e] > rcond * scale:
                rank += 1
                weight = 0.0
                for s in range(k):
                    weight += vectors[s, e] * rhs[s]
                weight /= values[e]
                for s in range(k):
                    mu[s] += weight * vectors[s, e]
    info[0] = rank
    info[1] = 1 if regular else 0
    xb[:, :] = 0.0
    xj[:] = 0.0
    for r in range(k):
        _aux_load(aux_body, aux_coef, r, -mu[r], xb)
    tree_solve(body_int, row_start, fac, xb, xj)
    for i in range(n):
        zdd[i, 0] += xb[i, 0]
        zdd[i, 1] += xb[i, 1]
        zdd[i, 2] += xb[i, 2]
    for r in range(mt):
        lam[r] += xj[r]
    for r in range(k):
        lam[mt + r] = mu[r]


@njit
def joint_coordinates(body_int, body_real, z, zd, q, qd):
    """Joint coordinates q and rates qd (nq,) from absolute ones (exact where the joints' constraints hold), as
    ``recursive_mbd.dynamics.augmented.joint_from_absolute``."""
    for i in range(body_int.shape[0]):
        jt = body_int[i, JTYPE]
        if jt == FIXED:
            continue
        p = body_int[i, PARENT]
        k = body_int[i, QIDX]
        if p >= 0:
            thp = z[p, 2]
            omp = zd[p, 2]
        else:
            thp = omp = 0.0
        if jt == REVOLUTE:
            q[k] = z[i, 2] - thp - body_real[i, ANGLE]
            qd[k] = zd[i, 2] - omp
            continue
        th, om, _, _, cp, sp, _, _, gx, gy, rx, ry = joint_gap(body_real, z, zd, i, p, thp, omp)
        if jt == PRISMATIC:  # q = u . D, q' = u . D' + omega_p perp(u) . D
            _, _, value, rate = prismatic_coordinate(body_real, i, cp, sp, gx, gy, rx, ry, omp)
            q[k] = value
            qd[k] = rate
        else:  # planar: (x, y) = A_p^T D, (x, y)' = A_p^T (D' - omega_p perp(D))
            q[k] = cp * gx + sp * gy
            q[k + 1] = -sp * gx + cp * gy
            wx = rx + omp * gy
            wy = ry - omp * gx
            qd[k] = cp * wx + sp * wy
            qd[k + 1] = -sp * wx + cp * wy
            q[k + 2] = th - thp - body_real[i, ANGLE]
            qd[k + 2] = om - omp
