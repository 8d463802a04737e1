"""The Newton matrix of an implicit step on a spatial tree with its configuration terms exact, factorised in O(N).

Derivation
----------
Body-frame spatial algebra as in ``tree`` (Featherstone 2008, ch. 2): twists (omega; v), wrenches (n; f),
m x m' (crm) and m x* f (crf), X_i the parent-to-child motion transform, S_i the joint's motion subspace (6 x k_i).
The residual of a step is one recursive Newton-Euler pass, r = sum_i J_i^T f_i - tau - Q, with

    a_i = X_i a_P + S_i vdot_i + c_i(v)   (a_ground = (0; -g): gravity as a base acceleration),
    f_i = I_i a_i + v_i x* I_i v_i,       W_k = sum of f_i over the subtree of k, in k's frame (r_k = S_k^T W_k).

Its unknown is y = vdot+; the configuration moves with it by dq+ = c_stiff T dy (right-trivialised: a joint turned
by eps moves its child frame by exp(S eps)), the velocity by dv+ = c_damp dy. T is the tangent map of the update
q+ = q (+) delta (``spatial.system.integrate_configuration``): the identity on Euclidean coordinates, the right
Jacobian of SO(3), J_r(delta) = 1 - (1 - cos t) / t^2 [delta] + (t - sin t) / t^3 [delta]^2 (t = |delta|), on a
quaternion's rates (exp(delta + d) = exp(delta) exp(J_r(delta) d) to first order).

Turning joint k by eps_k changes no relative transform but X_k, to (1 - (S_k eps_k) x) X_k, and S_k itself where it
depends on q_k (universal, planar, free: dS_k[eps]). At fixed joint rates and accelerations this gives, body by
body (the terms with velocities left out, see below),

    da_i = X_i da_P + P_i eps_i,   P_i eps = (X_i a_P) x (S_i eps) + dS_i[eps] vdot_i,

and, from the rotated transmitted wrench (d(J^T) f: W_k . ((X_k dxi_P) x S_k eps + dS_k[eps] delta_k) for a virtual
motion delta), a wrench (S_k eps) x* W_k = G_k eps that joint k hands to its parent (seen by the joints above k,
not by k itself) and a joint block Dx_k eps, (Dx_k)_ab = W_k . d(S_k column a)/d(eps_b). Gravity and the inertial
(d'Alembert) forces enter together through a_P and W_k: this is the full stiffness of the Newton-Euler residual,
the parent-child coupling of gravity's geometric stiffness, d(M vdot)/dq and the non-commuting rotations included.
With dy the unknown's change, everything a body sees moves like a twist propagated with modified joint columns:

    N dy = J_S^T I J_S' dy + sum_k J_k^T G'_k dy_k - E_k^T S_k^T G'_k dy_k + (c_stiff Dx_k T_k + diag(j_diag_k)) dy_k,
    S'_k = S_k + c_stiff P_k T_k,   G'_k = c_stiff G_k T_k,

J_S, J_S' the body Jacobians built from the columns S and S' (the same transforms X). Block Gaussian elimination
in tree order (the articulated-body algorithm with different left and right columns) factors it: tip to base,
with the subtree's response F_k = I^A_k xi_k + p_k to body k's twist xi_k = X_k xi_P + S'_k x_k,

    U_r = I^A S' + G',  U_l = I^A^T S,  D = S^T I^A S' + c_stiff Dx T + diag(j_diag)   (k_i x k_i, not symmetric),
    x = D^-1 (u - U_l^T X xi_P),  u = rhs_k - S^T p,
    I^a = I^A - U_r D^-1 U_l^T,   p^a = p + U_r D^-1 u,   added to the parent as X^T I^a X, X^T p^a;

base to tip, x_k and xi_k follow from xi_ground = 0. O(N) time and memory: per body the columns S, S', U_r D^-1,
D^-1 U_l^T, D^-1 and the (non-symmetric) articulated inertia.

What stays lagged (the Newton iteration then contracts linearly, never changes the converged step): every term
with the velocities (c_damp dh/dv: Coriolis and gyroscopic; dc_i/dq: the velocity products' own configuration
dependence), relative size c_damp |omega| and c_stiff |omega|^2; the force elements other than the joint
spring-dampers (their diagonal as ``recursive_mbd.integrate.spatial_implicit`` says), tau's dependence on (q, v);
with loops the terms listed there. At zero velocity the matrix is the exact Jacobian of the residual
(``tests/test_spatial_implicit.py`` against finite differences on random trees of every joint type).
"""

import math

import numba

from ..layout import STATUS_OK, STATUS_SINGULAR
from .layout import (
    A2,
    CP,
    FREE,
    JTYPE,
    NVJ,
    PARENT,
    PLANAR,
    SINGULAR_RTOL,
    SPHERICAL,
    UNIVERSAL,
    VIDX,
    WC,
    WI,
    WP,
    WR,
    WT,
)
from .tree import (
    _body_inertia,
    _force_to_parent_add,
    _motion_to_child,
    _parent_acceleration,
    _unpack_inertia,
    inverse_dynamics,
)

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False)

# offsets in the kernels' own scratch ``scr`` (SCRATCH_SIZE floats)
_AP = 0  # X a_P (6), then the apply's twist
_W = 6  # W_k (6)
_TAN = 12  # the tangent map T (6 x 6, row-major)
_DS = 48  # dS: d(column a)/d eps_b at 36 a + 6 b (+ row)
_X = 264  # X (6 x 6, row-major)
_B = 300  # 6 x 6 scratch; P's raw columns (6 per column)
_IA = 336  # I^a (6 x 6, row-major)
_D = 372  # D (6 x 6, stride 6), then its LU
_PIV = 408  # the LU's row order (6)
_COL = 414  # a column (6)
_UR = 420  # U_r (6 per column)
_UL = 456  # U_l (6 per column); first G's raw columns
_DX = 492  # Dx (6 x 6, stride 6)
_SCALE = 528  # the columns' pivot scales (6)
SCRATCH_SIZE = 544


@njit
def factor_width(max_nv):
    """Floats per body of the factors (``newton_factor``'s ``fac``) for joints of at most max_nv velocities."""
    return 24 * max_nv + max_nv * max_nv + 36


@njit
def _offsets(width):
    """(k, S, S', U_r D^-1, D^-1 U_l^T, D^-1, I^A): the stride k and the offsets in a row of ``fac``."""
    k = 1
    while 24 * k + k * k + 36 < width:
        k += 1
    return k, 0, 6 * k, 12 * k, 18 * k, 24 * k, 24 * k + k * k


@njit
def _right_jacobian(scr, d, kv, b):
    """scr[_TAN + 6 r + c] for r, c in b..b+2 = J_r(delta) of SO(3), delta = d[kv + b: kv + b + 3]."""
    x = d[kv + b]
    y = d[kv + b + 1]
    z = d[kv + b + 2]
    t2 = x * x + y * y + z * z
    if t2 < 1e-8:  # the series: error below 1e-18
        ca = 0.5 - t2 / 24.0
        cb = 1.0 / 6.0 - t2 / 120.0
    else:
        t = math.sqrt(t2)
        ca = (1.0 - math.cos(t)) / t2
        cb = (t - math.sin(t)) / (t2 * t)
    o = _TAN + 7 * b
    # J_r = 1 - ca [d] + cb [d]^2, [d]^2 = d d^T - t2 1
    scr[o] = 1.0 + cb * (x * x - t2)
    scr[o + 7] = 1.0 + cb * (y * y - t2)
    scr[o + 14] = 1.0 + cb * (z * z - t2)
    scr[o + 1] = ca * z + cb * x * y
    scr[o + 6] = -ca * z + cb * x * y
    scr[o + 2] = -ca * y + cb * x * z
    scr[o + 12] = ca * y + cb * x * z
    scr[o + 8] = ca * x + cb * y * z
    scr[o + 13] = -ca * x + cb * y * z


@njit
def _put_column(scr, o, wx, wy, wz, lx, ly, lz, cpx, cpy, cpz):
    """scr[o:o+6] = (w; l + cp x w), a joint column as ``tree._column`` forms it."""
    scr[o] = wx
    scr[o + 1] = wy
    scr[o + 2] = wz
    scr[o + 3] = lx + cpy * wz - cpz * wy
    scr[o + 4] = ly + cpz * wx - cpx * wz
    scr[o + 5] = lz + cpx * wy - cpy * wx


@njit
def _joint_derivatives(body_int, body_real, S, i, scr):
    """The derivatives of body i's columns by its own coordinates, scr[_DS + 36 a + 6 b:+6] = d(S_a)/d(eps_b): zero
    but for universal joints (the first column turns about the second axis), planar ones (the translation columns
    turn with the angle) and free ones (the translation columns turn with the rotation); returns whether any is
    non-zero."""
    jt = body_int[i, JTYPE]
    if jt not in (UNIVERSAL, PLANAR, FREE):
        return False
    for e in range(36 * body_int[i, NVJ]):
        scr[_DS + e] = 0.0
    cpx = body_real[i, CP]
    cpy = body_real[i, CP + 1]
    cpz = body_real[i, CP + 2]
    if jt == UNIVERSAL:  # d/d beta of Rot(b, beta)^T a = u x b
        bx = body_real[i, A2]
        by = body_real[i, A2 + 1]
        bz = body_real[i, A2 + 2]
        ux = S[i, 0, 0]
        uy = S[i, 0, 1]
        uz = S[i, 0, 2]
        _put_column(scr, _DS + 6, uy * bz - uz * by, uz * bx - ux * bz, ux * by - uy * bx, 0.0, 0.0, 0.0,
                    cpx, cpy, cpz)
    elif jt == PLANAR:  # d/d theta of R_j^T e = (R_j^T e) x e_z
        for a in range(2):
            _put_column(scr, _DS + 36 * a + 12, 0.0, 0.0, 0.0, S[i, a, 4], -S[i, a, 3], 0.0, cpx, cpy, cpz)
    else:  # free: R_j^T e_m turned by eps in child axes, (R_j^T e_m) x e_b
        for a in range(3):
            lx = S[i, a, 3]
            ly = S[i, a, 4]
            lz = S[i, a, 5]
            _put_column(scr, _DS + 36 * a + 18, 0.0, 0.0, 0.0, 0.0, lz, -ly, cpx, cpy, cpz)
            _put_column(scr, _DS + 36 * a + 24, 0.0, 0.0, 0.0, -lz, 0.0, lx, cpx, cpy, cpz)
            _put_column(scr, _DS + 36 * a + 30, 0.0, 0.0, 0.0, ly, -lx, 0.0, cpx, cpy, cpz)
    return True


@njit
def _configuration_columns(body_int, body_real, gravity, q_rates, delta, c_stiff, i, ws, S, tmp, scr, row, o_sp):
    """Body i's configuration terms (module doc): S' = S + c_stiff P T into row[o_sp:], c_stiff G T into
    scr[_UR:] (added to U_r later) and c_stiff Dx T into scr[_DX:] (stride 6). ws must hold the Newton-Euler pass
    (a_i at WC, W_i at WP), q_rates the joint accelerations vdot it used."""
    nvj = body_int[i, NVJ]
    kv = body_int[i, VIDX]
    jt = body_int[i, JTYPE]
    _parent_acceleration(gravity, i, body_int[i, PARENT], ws, tmp)
    ox = tmp[0]
    oy = tmp[1]
    oz = tmp[2]
    vx = tmp[3]
    vy = tmp[4]
    vz = tmp[5]
    nx = ws[i, WP]
    ny = ws[i, WP + 1]
    nz = ws[i, WP + 2]
    fx = ws[i, WP + 3]
    fy = ws[i, WP + 4]
    fz = ws[i, WP + 5]
    has_ds = _joint_derivatives(body_int, body_real, S, i, scr)
    for b in range(nvj):
        sw0 = S[i, b, 0]
        sw1 = S[i, b, 1]
        sw2 = S[i, b, 2]
        sv0 = S[i, b, 3]
        sv1 = S[i, b, 4]
        sv2 = S[i, b, 5]
        o = _B + 6 * b  # P = (X a_P) x S_b + dS[e_b] vdot
        scr[o] = oy * sw2 - oz * sw1
        scr[o + 1] = oz * sw0 - ox * sw2
        scr[o + 2] = ox * sw1 - oy * sw0
        scr[o + 3] = oy * sv2 - oz * sv1 + vy * sw2 - vz * sw1
        scr[o + 4] = oz * sv0 - ox * sv2 + vz * sw0 - vx * sw2
        scr[o + 5] = ox * sv1 - oy * sv0 + vx * sw1 - vy * sw0
        g = _UL + 6 * b  # G = S_b x* W
        scr[g] = sw1 * nz - sw2 * ny + sv1 * fz - sv2 * fy
        scr[g + 1] = sw2 * nx - sw0 * nz + sv2 * fx - sv0 * fz
        scr[g + 2] = sw0 * ny - sw1 * nx + sv0 * fy - sv1 * fx
        scr[g + 3] = sw1 * fz - sw2 * fy
        scr[g + 4] = sw2 * fx - sw0 * fz
        scr[g + 5] = sw0 * fy - sw1 * fx
        for a in range(nvj):
            dx = 0.0
            if has_ds:
                d = _DS + 36 * a + 6 * b
                for r in range(6):
                    scr[o + r] += q_rates[kv + a] * scr[d + r]
                dx = (nx * scr[d] + ny * scr[d + 1] + nz * scr[d + 2] + fx * scr[d + 3] + fy * scr[d + 4]
                      + fz * scr[d + 5])
            scr[_DX + 6 * a + b] = dx
    # the tangent map T of the update (identity but for a quaternion's rates)
    for a in range(nvj):
        for b in range(nvj):
            scr[_TAN + 6 * a + b] = 1.0 if a == b else 0.0
    if jt == SPHERICAL:
        _right_jacobian(scr, delta, kv, 0)
    elif jt == FREE:
        _right_jacobian(scr, delta, kv, 3)
    for b in range(nvj):
        for r in range(6):
            p_acc = 0.0
            g_acc = 0.0
            for e in range(nvj):
                t = scr[_TAN + 6 * e + b]
                p_acc += scr[_B + 6 * e + r] * t
                g_acc += scr[_UL + 6 * e + r] * t
            row[o_sp + 6 * b + r] = S[i, b, r] + c_stiff * p_acc
            scr[_UR + 6 * b + r] = c_stiff * g_acc
    for a in range(nvj):
        for b in range(nvj):
            acc = 0.0
            for e in range(nvj):
                acc += scr[_DX + 6 * a + e] * scr[_TAN + 6 * e + b]
            scr[_COL + b] = acc
        for b in range(nvj):
            scr[_DX + 6 * a + b] = c_stiff * scr[_COL + b]


@njit
def _lu_inverse(scr, nvj, i, out, o, k):
    """D^-1 of the nvj x nvj block scr[_D:] (stride 6) into out[o + k a + b] by an LU with partial pivoting (D is
    overwritten); STATUS_SINGULAR of body i when a pivot is not above SINGULAR_RTOL times the largest of the
    columns' scales scr[_SCALE:]."""
    scale = 0.0
    for a in range(nvj):
        scale = max(scale, scr[_SCALE + a])
    for a in range(nvj):
        scr[_PIV + a] = a
    for c in range(nvj):
        best = c
        for r in range(c + 1, nvj):
            if abs(scr[_D + 6 * r + c]) > abs(scr[_D + 6 * best + c]):
                best = r
        if not abs(scr[_D + 6 * best + c]) > SINGULAR_RTOL * scale:
            return STATUS_SINGULAR | (i << 4)
        if best != c:
            for e in range(nvj):
                t = scr[_D + 6 * c + e]
                scr[_D + 6 * c + e] = scr[_D + 6 * best + e]
                scr[_D + 6 * best + e] = t
            t = scr[_PIV + c]
            scr[_PIV + c] = scr[_PIV + best]
            scr[_PIV + best] = t
        inv = 1.0 / scr[_D + 7 * c]
        for r in range(c + 1, nvj):
            f = scr[_D + 6 * r + c] * inv
            scr[_D + 6 * r + c] = f
            for e in range(c + 1, nvj):
                scr[_D + 6 * r + e] -= f * scr[_D + 6 * c + e]
    for b in range(nvj):  # column b of D^-1: solve L U x = P e_b
        for r in range(nvj):
            acc = 1.0 if int(scr[_PIV + r]) == b else 0.0
            for e in range(r):
                acc -= scr[_D + 6 * r + e] * scr[_COL + e]
            scr[_COL + r] = acc
        for r in range(nvj - 1, -1, -1):
            acc = scr[_COL + r]
            for e in range(r + 1, nvj):
                acc -= scr[_D + 6 * r + e] * scr[_COL + e]
            scr[_COL + r] = acc / scr[_D + 7 * r]
        for r in range(nvj):
            out[o + k * r + b] = scr[_COL + r]
    return STATUS_OK


@njit
def _transform_add(ws, i, scr, src, dst, d):
    """dst[d:d+36] += X^T A X, A = scr[src:src+36] (row-major, any 6 x 6 in body i's frame), X body i's
    parent-to-child motion transform [[E, 0], [-E [r], E]] (E = R^T, from ws)."""
    for a in range(3):
        for b in range(3):
            e = ws[i, WR + 3 * b + a]
            scr[_X + 6 * a + b] = e
            scr[_X + 6 * (a + 3) + b + 3] = e
            scr[_X + 6 * a + b + 3] = 0.0
    rx = ws[i, WT]
    ry = ws[i, WT + 1]
    rz = ws[i, WT + 2]
    for a in range(3):  # -E [r]: row a of E times the columns of [r]
        e0 = scr[_X + 6 * a]
        e1 = scr[_X + 6 * a + 1]
        e2 = scr[_X + 6 * a + 2]
        scr[_X + 6 * (a + 3)] = -(e1 * rz - e2 * ry)
        scr[_X + 6 * (a + 3) + 1] = -(e2 * rx - e0 * rz)
        scr[_X + 6 * (a + 3) + 2] = -(e0 * ry - e1 * rx)
    for r in range(6):  # B = A X
        for c in range(6):
            acc = 0.0
            for e in range(6):
                acc += scr[src + 6 * r + e] * scr[_X + 6 * e + c]
            scr[_B + 6 * r + c] = acc
    for r in range(6):  # X^T B
        for c in range(6):
            acc = 0.0
            for e in range(6):
                acc += scr[_X + 6 * e + r] * scr[_B + 6 * e + c]
            dst[d + 6 * r + c] += acc


@njit
def newton_factor(body_int, body_real, gravity, q, v, q_rates, delta, c_stiff, j_diag, ws, S, tmp, work, scr, fac):
    """Factor N = M + c_stiff (configuration terms, module doc) + diag(j_diag) at (q, v, vdot = q_rates), tip to
    base, O(N); returns a status (a Newton-Euler pass's, or STATUS_SINGULAR | (body << 4) for a joint block D
    whose LU pivot is not above SINGULAR_RTOL of its scale).

    delta (nv,): the update whose tangent map the configuration terms carry (q = q_start (+) delta; zeros: none).
    With c_stiff = 0 the factors are those of M + diag(j_diag). ws (nbodies, W_SPATIAL), S (nbodies, max_nv, 6),
    tmp (``tree.TMP_SIZE``), work (nv,), scr (SCRATCH_SIZE) scratch; fac (nbodies, ``factor_width(max_nv)``)
    receives the factors (``newton_apply``), ws keeps the transforms they need.
    """
    status = inverse_dynamics(body_int, body_real, gravity, q, v, q_rates, ws, S, tmp, work)
    if status:
        return status
    n = body_int.shape[0]
    k, o_s, o_sp, o_urd, o_dul, o_dinv, o_ia = _offsets(fac.shape[1])
    for i in range(n):
        _body_inertia(body_real, i, ws, i)  # over the velocity (WV), read no more
        _unpack_inertia(ws[i], WI, fac[i], o_ia)
    for i in range(n - 1, -1, -1):
        row = fac[i]
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        for b in range(nvj):
            for r in range(6):
                row[o_s + 6 * b + r] = S[i, b, r]
        if c_stiff != 0.0:
            _configuration_columns(body_int, body_real, gravity, q_rates, delta, c_stiff, i, ws, S, tmp, scr, row,
                                   o_sp)
        else:
            for b in range(nvj):
                for r in range(6):
                    row[o_sp + 6 * b + r] = S[i, b, r]
                    scr[_UR + 6 * b + r] = 0.0
                for a in range(nvj):
                    scr[_DX + 6 * a + b] = 0.0
        # U_r = I^A S' + G', U_l = I^A^T S, D = U_l^T S' + Dx' + diag(j_diag)
        for b in range(nvj):
            for r in range(6):
                acc_r = scr[_UR + 6 * b + r]
                acc_l = 0.0
                for c in range(6):
                    acc_r += row[o_ia + 6 * r + c] * row[o_sp + 6 * b + c]
                    acc_l += row[o_ia + 6 * c + r] * S[i, b, c]
                scr[_UR + 6 * b + r] = acc_r
                scr[_UL + 6 * b + r] = acc_l
        for b in range(nvj):
            scale = abs(j_diag[kv + b]) + abs(scr[_DX + 7 * b])
            for r in range(6):
                for c in range(6):
                    scale += abs(S[i, b, r]) * abs(row[o_ia + 6 * r + c]) * abs(row[o_sp + 6 * b + c])
            scr[_SCALE + b] = scale
            for a in range(nvj):
                acc = scr[_DX + 6 * a + b]
                for r in range(6):
                    acc += scr[_UL + 6 * a + r] * row[o_sp + 6 * b + r]
                scr[_D + 6 * a + b] = acc
            scr[_D + 7 * b] += j_diag[kv + b]
        status = _lu_inverse(scr, nvj, i, row, o_dinv, k)
        if status:
            return status
        for b in range(nvj):  # U_r D^-1 (6 per column), D^-1 U_l^T (6 per row)
            for r in range(6):
                acc_r = 0.0
                acc_l = 0.0
                for a in range(nvj):
                    acc_r += scr[_UR + 6 * a + r] * row[o_dinv + k * a + b]
                    acc_l += row[o_dinv + k * b + a] * scr[_UL + 6 * a + r]
                row[o_urd + 6 * b + r] = acc_r
                row[o_dul + 6 * b + r] = acc_l
        p = body_int[i, PARENT]
        if p < 0:
            continue
        for r in range(6):  # I^a = I^A - U_r D^-1 U_l^T, to the parent as X^T I^a X
            for c in range(6):
                acc = row[o_ia + 6 * r + c]
                for a in range(nvj):
                    acc -= row[o_urd + 6 * a + r] * scr[_UL + 6 * a + c]
                scr[_IA + 6 * r + c] = acc
        _transform_add(ws, i, scr, _IA, fac[p], o_ia)
    return STATUS_OK


@njit
def newton_apply(body_int, ws, fac, rhs, tmp, ud, out):
    """out = N^-1 rhs (nv,) with the factors of ``newton_factor``: two sweeps, O(N). Tip to base
    u = rhs - S^T p, p^a = p + U_r D^-1 u to the parent; base to tip from xi_ground = 0, x = D^-1 u - D^-1 U_l^T
    X xi_P, xi = X xi_P + S' x. Overwrites the WP and WC entries of ws; ud (nbodies, max_nv) scratch."""
    n = body_int.shape[0]
    k, o_s, o_sp, o_urd, o_dul, o_dinv, o_ia = _offsets(fac.shape[1])
    for i in range(n):
        for m in range(6):
            ws[i, WP + m] = 0.0
    for i in range(n - 1, -1, -1):
        row = fac[i]
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        for a in range(nvj):
            acc = rhs[kv + a]
            for m in range(6):
                acc -= row[o_s + 6 * a + m] * ws[i, WP + m]
            tmp[12 + a] = acc
        for a in range(nvj):
            acc = 0.0
            for b in range(nvj):
                acc += row[o_dinv + k * a + b] * tmp[12 + b]
            ud[i, a] = acc
        p = body_int[i, PARENT]
        if p < 0:
            continue
        for m in range(6):
            acc = ws[i, WP + m]
            for a in range(nvj):
                acc += row[o_urd + 6 * a + m] * tmp[12 + a]
            tmp[18 + m] = acc
        _force_to_parent_add(ws, i, tmp, 18, ws[p], WP)
    for i in range(n):
        row = fac[i]
        p = body_int[i, PARENT]
        kv = body_int[i, VIDX]
        nvj = body_int[i, NVJ]
        if p < 0:
            for m in range(6):
                tmp[m] = 0.0
        else:
            _motion_to_child(ws, i, ws[p], WC, tmp, 0)
        for a in range(nvj):
            acc = ud[i, a]
            for m in range(6):
                acc -= row[o_dul + 6 * a + m] * tmp[m]
            out[kv + a] = acc
        for a in range(nvj):
            for m in range(6):
                tmp[m] += row[o_sp + 6 * a + m] * out[kv + a]
        for m in range(6):
            ws[i, WC + m] = tmp[m]
