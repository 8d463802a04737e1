"""The exact Newton matrix of an implicit step on a spatial tree (the Jacobian of the Newton-Euler residual by the
accelerations), factorised in O(N).

Derivation
----------
Body-frame spatial algebra as in ``tree`` (Featherstone 2008, ch. 2): twists (omega; v), wrenches (n; f),
m x m' (crm) and m x* f (crf), X_i the parent-to-child motion transform, S_i the joint's motion subspace (6 x k_i).
The residual of a step is one recursive Newton-Euler pass, r = sum_i J_i^T f_i - tau - Q, with

    v_i = X_i v_P + S_i vj_i,   a_i = X_i a_P + S_i vdot_i + kappa_i + v_i x S_i vj_i   (a_ground = (0; -g)),
    f_i = I_i a_i + v_i x* I_i v_i,   W_k = sum of f_i over the subtree of k, in k's frame (r_k = S_k^T W_k),

kappa_i = S_i' vj_i the joint's own term (universal, planar and free joints, ``tree._kinematics``). The unknown is
y = vdot+; the configuration moves with it by eps = c_stiff T dy (right-trivialised: a joint turned by eps moves its
child frame by exp(S eps)), the velocity by dvj = c_damp dy. T is the tangent map of the update q+ = q (+) delta
(``spatial.system.integrate_configuration``): the identity on Euclidean coordinates, the right Jacobian of SO(3),
J_r(delta) = 1 - (1 - cos t) / t^2 [delta] + (t - sin t) / t^3 [delta]^2 (t = |delta|), on a quaternion's rates
(exp(delta + d) = exp(delta) exp(J_r(delta) d) to first order).

Turning joint k by eps_k changes no relative transform but X_k, to (1 - (S_k eps_k) x) X_k, and S_k itself where it
depends on q_k (dS_k[eps]: universal, planar, free). Differentiating the two recursions body by body,

    dv_i = X_i dv_P + V_i dy_i,
    V_i = c_stiff ((X_i v_P) x S_i + dS_i[.] vj_i) T_i + c_damp S_i,
    da_i = X_i da_P - (S_i vj_i) x dv_i + A_i dy_i,
    A_i = S_i + c_stiff ((X_i a_P) x S_i + dS_i[.] vdot_i + v_i x dS_i[.] vj_i + dkappa_i/deps) T_i
          + c_damp (v_i x S_i + dkappa_i/dvj),
    df_i = I_i da_i + Gamma_i dv_i,   Gamma_i dv = v_i x* I_i dv + dv x* I_i v_i,

and, from the rotated transmitted wrench (d(J^T) f: W_k . ((X_k dxi_P) x S_k eps + dS_k[eps] delta_k) for a
virtual motion delta), a wrench (S_k eps) x* W_k = G_k eps that joint k hands to its parent (seen by the joints
above k, not by k itself) and a joint block Dx_k, (Dx_k)_ab = W_k . d(S_k column a)/d(eps_b). Gravity and the
inertial forces enter together through a_P and W_k: every term of the residual is in, the parent-child coupling
of gravity's geometric stiffness (non-commuting rotations), d(M vdot)/dq, Coriolis, gyroscopic and centrifugal
terms and their configuration dependence. So each body's perturbation z_i = (dv_i, da_i) (12) propagates like a
twist, z_i = Y_i z_P + Z_i dy_i with

    Y_i = [[X_i, 0], [-(S_i vj_i) x X_i, X_i]],   Z_i = [V_i; A_i - (S_i vj_i) x V_i],

and the body's wrench is Lambda_i z_i, Lambda_i = [Gamma_i, I_i] (6 x 12). Block Gaussian elimination in tree order
(the articulated-body algorithm on z, with different left (S) and right (Z) columns) factors N: tip to base, with
the subtree's response F_k = Lambda_k z_k + p_k,

    U_r = Lambda Z + c_stiff G T,  U_l = Lambda^T S,  D = U_l^T Z + c_stiff Dx T + diag(j_diag)   (not symmetric),
    x = D^-1 (u - U_l^T Y z_P),  u = rhs_k - S^T p,
    Lambda^a = Lambda - U_r D^-1 U_l^T,  p^a = p + U_r D^-1 u,  added to the parent as X^T Lambda^a Y, X^T p^a;

base to tip, x_k and z_k follow from z_ground = 0. O(N) time and memory: per body the columns S, Z, U_r D^-1,
D^-1 U_l^T, D^-1, the articulated Lambda (6 x 12), S vj and v.

Exact: the Jacobian of the inverse dynamics (tested against finite differences on random trees of every joint
type, ``tests/test_spatial_implicit.py``). Not in it (the loop's residual has them; the Newton iteration then
contracts linearly, never changes the converged step): the force elements other than the joint spring-dampers
(their diagonal, ``recursive_mbd.integrate.spatial_implicit``), tau's dependence on (q, v), and with loops the
terms listed there.

Contacts (``newton_factor``'s ``blocks`` and ``loads``): a body's contact wrench W_c(pose, twist) joins its f_i
with the opposite sign: C_b = -dW_c/dv acts on dv_i and K_b = -dW_c/d eps (``contact``) on the body's displacement
(its pose turned and moved in its own axes, its body twist held), which propagates like a twist as well,

    eps_i = X_i eps_P + c_stiff S_i T_i dy_i,

so with contacts z_i = (dv_i, da_i, eps_i) (18, stride ZW), Y_i gains the block X_i on eps, Z_i the part
c_stiff S_i T_i and Lambda_i = [Gamma_i + C_b, I_i, K_b] (6 x 18); the elimination above is unchanged but for
these lengths. The subtree sums of the contact loads join W_k, so that G_k and Dx_k turn them with the joints as they
turn the inertial forces. A contact between a body and its parent (blocks[:, :, 12:24]) sees the joint's motion
alone: C on V_i dy, K on c_stiff S_i T_i dy join D. Exact, moving bodies, sliding rows and the update's tangent
map included (``tests/test_contact3d_newton.py``: against central differences of a generalised-alpha step's
residual, 2e-10, and of bdf's corrector residual, to 1e-8; K_b taken on c_stiff da_i instead, the displacement's
leading part, is off by the velocity products of da_i, 2e-3 relative on bodies sliding at 0.5 m/s). Without
contacts z keeps its 12 entries.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
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
    WV,
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
_AP = 0  # X a_P (6)
_VP = 6  # X v_P (6)
_SV = 12  # S vj (6)
_TAN = 18  # the tangent map T (6 x 6, row-major)
_DS = 54  # dS: d(column a)/d eps_b at 36 a + 6 b (+ row)
_KE = 270  # d kappa / d eps (6 per column)
_KV = 306  # d kappa / d vj (6 per column)
_PC = 342  # the configuration part of V (6 per column, before T)
_PA = 378  # the configuration part of A (6 per column, before T)
_GR = 414  # G (6 per column), then c_stiff G T
_DX = 450  # Dx (6 x 6, stride 6), then c_stiff Dx T
_D = 486  # D (6 x 6, stride 6), then its LU
_PIV = 522  # the LU's row order (6)
_COL = 528  # a column (18)
_SCALE = 546  # the columns' pivot scales (6)
_UR = 552  # U_r (6 per column)
_UL = 588  # U_l (ZW per column)
_LA = 696  # the articulated Lambda^a (6 x ZW, row-major)
_X = 804  # X (6 x 6, row-major)
_M1 = 840  # 6 x 6 scratch
_B = 876  # 6 x ZW scratch
_I = 984  # the body's spatial inertia (6 x 6, row-major)
SCRATCH_SIZE = 1020
# a body's perturbation z = (dv, da, eps) is stored with this stride; its first 12 entries (dv, da) are all there is
# without contacts, the displacement eps (6) joins them where the contacts' stiffness acts on it (module doc)
ZW = 18


@njit
def factor_width(max_nv):
    """Floats per body of the factors (``newton_factor``'s ``fac``) for joints of at most max_nv velocities."""
    return 48 * max_nv + max_nv * max_nv + 121


@njit
def _offsets(width):
    """(k, S, Z, U_r D^-1, D^-1 U_l^T, D^-1, Lambda, S vj, v, nz): the stride k and the offsets in a row of ``fac``
    (nz: the length of z the factors were made with, 12 or ZW, kept in the first row)."""
    k = 1
    while 48 * k + k * k + 121 < width:
        k += 1
    o = 48 * k + k * k
    return k, 0, 6 * k, 24 * k, 30 * k, 48 * k, o, o + 6 * ZW, o + 6 * ZW + 6, o + 6 * ZW + 12


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
def _kappa_derivatives(body_int, body_real, S, v, i, scr):
    """The derivatives of kappa = S' vj (the joint's own term of the bias acceleration, ``tree._kinematics``) by the
    joint's rates (scr[_KV + 6 b:+6]) and coordinates (scr[_KE + 6 b:+6]); zero but for universal, planar and free
    joints (then True is returned)."""
    jt = body_int[i, JTYPE]
    if jt not in (UNIVERSAL, PLANAR, FREE):
        return False
    nvj = body_int[i, NVJ]
    kv = body_int[i, VIDX]
    for e in range(6 * nvj):
        scr[_KE + e] = 0.0
        scr[_KV + e] = 0.0
    if jt == UNIVERSAL:  # kappa = (d; cp x d), d = (u x b) alpha' beta', du/d beta = u x b
        cpx = body_real[i, CP]
        cpy = body_real[i, CP + 1]
        cpz = body_real[i, CP + 2]
        bx = body_real[i, A2]
        by = body_real[i, A2 + 1]
        bz = body_real[i, A2 + 2]
        ux = S[i, 0, 0]
        uy = S[i, 0, 1]
        uz = S[i, 0, 2]
        wx = uy * bz - uz * by
        wy = uz * bx - ux * bz
        wz = ux * by - uy * bx
        ra = v[kv]
        rb = v[kv + 1]
        _put_column(scr, _KV, wx * rb, wy * rb, wz * rb, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        _put_column(scr, _KV + 6, wx * ra, wy * ra, wz * ra, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        ab = ra * rb
        _put_column(scr, _KE + 6, (wy * bz - wz * by) * ab, (wz * bx - wx * bz) * ab, (wx * by - wy * bx) * ab,
                    0.0, 0.0, 0.0, cpx, cpy, cpz)
    elif jt == PLANAR:  # kappa = t x e_z theta' (linear rows), t = S_0 x' + S_1 y', dt/d theta = t x e_z
        th = v[kv + 2]
        tx = S[i, 0, 3] * v[kv] + S[i, 1, 3] * v[kv + 1]
        ty = S[i, 0, 4] * v[kv] + S[i, 1, 4] * v[kv + 1]
        for a in range(2):
            scr[_KV + 6 * a + 3] = S[i, a, 4] * th
            scr[_KV + 6 * a + 4] = -S[i, a, 3] * th
        scr[_KV + 15] = ty
        scr[_KV + 16] = -tx
        scr[_KE + 15] = -tx * th
        scr[_KE + 16] = -ty * th
    else:  # free: kappa = -omega x t (linear rows), t = sum S_m v_m, dt/d eps_b = t x e_b
        tx = S[i, 0, 3] * v[kv] + S[i, 1, 3] * v[kv + 1] + S[i, 2, 3] * v[kv + 2]
        ty = S[i, 0, 4] * v[kv] + S[i, 1, 4] * v[kv + 1] + S[i, 2, 4] * v[kv + 2]
        tz = S[i, 0, 5] * v[kv] + S[i, 1, 5] * v[kv + 1] + S[i, 2, 5] * v[kv + 2]
        ox = v[kv + 3]
        oy = v[kv + 4]
        oz = v[kv + 5]
        for m in range(3):
            lx = S[i, m, 3]
            ly = S[i, m, 4]
            lz = S[i, m, 5]
            scr[_KV + 6 * m + 3] = -(oy * lz - oz * ly)
            scr[_KV + 6 * m + 4] = -(oz * lx - ox * lz)
            scr[_KV + 6 * m + 5] = -(ox * ly - oy * lx)
        # -e_b x t = t x e_b; -omega x (t x e_b)
        scr[_KV + 18 + 4] = tz
        scr[_KV + 18 + 5] = -ty
        scr[_KV + 24 + 3] = -tz
        scr[_KV + 24 + 5] = tx
        scr[_KV + 30 + 3] = ty
        scr[_KV + 30 + 4] = -tx
        for b in range(3):
            cx = scr[_KV + 18 + 6 * b + 3]
            cy = scr[_KV + 18 + 6 * b + 4]
            cz = scr[_KV + 18 + 6 * b + 5]
            scr[_KE + 18 + 6 * b + 3] = -(oy * cz - oz * cy)
            scr[_KE + 18 + 6 * b + 4] = -(oz * cx - ox * cz)
            scr[_KE + 18 + 6 * b + 5] = -(ox * cy - oy * cx)
    return True


@njit
def _crm(m0, m1, m2, m3, m4, m5, scr, s, out):
    """scr[out:out+6] = m x n (crm) for n = scr[s:s+6]; returns nothing (out may not overlap s)."""
    n0 = scr[s]
    n1 = scr[s + 1]
    n2 = scr[s + 2]
    n3 = scr[s + 3]
    n4 = scr[s + 4]
    n5 = scr[s + 5]
    scr[out] = m1 * n2 - m2 * n1
    scr[out + 1] = m2 * n0 - m0 * n2
    scr[out + 2] = m0 * n1 - m1 * n0
    scr[out + 3] = m1 * n5 - m2 * n4 + m4 * n2 - m5 * n1
    scr[out + 4] = m2 * n3 - m0 * n5 + m5 * n0 - m3 * n2
    scr[out + 5] = m0 * n4 - m1 * n3 + m3 * n1 - m4 * n0


@njit
def _joint_columns(body_int, body_real, gravity, v, q_rates, delta, c_stiff, c_damp, i, ws, S, tmp, scr, row, o_z,
                   with_eps):
    """Body i's columns (module doc): Z = [V; A - (S vj) x V; c_stiff S T] into row[o_z + ZW b:] (the last part,
    the displacement's, only ``with_eps``), c_stiff G T into scr[_GR:] and c_stiff Dx T into scr[_DX:] (stride 6).
    ws holds the Newton-Euler pass (a at WC, W at WP), scr[_VP:], scr[_SV:] X v_P and S vj, v and q_rates the joint
    rates and accelerations of that pass."""
    nvj = body_int[i, NVJ]
    kv = body_int[i, VIDX]
    jt = body_int[i, JTYPE]
    _parent_acceleration(gravity, i, body_int[i, PARENT], ws, tmp)
    for m in range(6):
        scr[_AP + m] = tmp[m]
    vi0 = scr[_VP] + scr[_SV]
    vi1 = scr[_VP + 1] + scr[_SV + 1]
    vi2 = scr[_VP + 2] + scr[_SV + 2]
    vi3 = scr[_VP + 3] + scr[_SV + 3]
    vi4 = scr[_VP + 4] + scr[_SV + 4]
    vi5 = scr[_VP + 5] + scr[_SV + 5]
    nx = ws[i, WP]
    ny = ws[i, WP + 1]
    nz = ws[i, WP + 2]
    fx = ws[i, WP + 3]
    fy = ws[i, WP + 4]
    fz = ws[i, WP + 5]
    has_ds = _joint_derivatives(body_int, body_real, S, i, scr)
    has_kappa = _kappa_derivatives(body_int, body_real, S, v, i, scr)
    for b in range(nvj):
        for r in range(6):
            scr[_COL + r] = S[i, b, r]
        # (X v_P) x S_b, (X a_P) x S_b
        _crm(scr[_VP], scr[_VP + 1], scr[_VP + 2], scr[_VP + 3], scr[_VP + 4], scr[_VP + 5], scr, _COL, _PC + 6 * b)
        _crm(scr[_AP], scr[_AP + 1], scr[_AP + 2], scr[_AP + 3], scr[_AP + 4], scr[_AP + 5], scr, _COL, _PA + 6 * b)
        sw0 = S[i, b, 0]
        sw1 = S[i, b, 1]
        sw2 = S[i, b, 2]
        sv0 = S[i, b, 3]
        sv1 = S[i, b, 4]
        sv2 = S[i, b, 5]
        g = _GR + 6 * b  # G = S_b x* W
        scr[g] = sw1 * nz - sw2 * ny + sv1 * fz - sv2 * fy
        scr[g + 1] = sw2 * nx - sw0 * nz + sv2 * fx - sv0 * fz
        scr[g + 2] = sw0 * ny - sw1 * nx + sv0 * fy - sv1 * fx
        scr[g + 3] = sw1 * fz - sw2 * fy
        scr[g + 4] = sw2 * fx - sw0 * fz
        scr[g + 5] = sw0 * fy - sw1 * fx
        for a in range(nvj):
            scr[_DX + 6 * a + b] = 0.0
        if has_ds:
            for r in range(6):
                scr[_COL + 6 + r] = 0.0  # dS[e_b] vj
            for a in range(nvj):
                d = _DS + 36 * a + 6 * b
                for r in range(6):
                    scr[_PA + 6 * b + r] += q_rates[kv + a] * scr[d + r]
                    scr[_COL + 6 + r] += v[kv + a] * scr[d + r]
                scr[_DX + 6 * a + b] = (nx * scr[d] + ny * scr[d + 1] + nz * scr[d + 2] + fx * scr[d + 3]
                                        + fy * scr[d + 4] + fz * scr[d + 5])
            for r in range(6):
                scr[_PC + 6 * b + r] += scr[_COL + 6 + r]
            _crm(vi0, vi1, vi2, vi3, vi4, vi5, scr, _COL + 6, _COL)  # v_i x dS[e_b] vj
            for r in range(6):
                scr[_PA + 6 * b + r] += scr[_COL + r]
        if has_kappa:
            for r in range(6):
                scr[_PA + 6 * b + r] += scr[_KE + 6 * b + r]
    for a in range(nvj):  # the tangent map T of the update (identity but for a quaternion's rates)
        for b in range(nvj):
            scr[_TAN + 6 * a + b] = 1.0 if a == b else 0.0
    if jt == SPHERICAL:
        _right_jacobian(scr, delta, kv, 0)
    elif jt == FREE:
        _right_jacobian(scr, delta, kv, 3)
    sv0 = scr[_SV]
    sv1 = scr[_SV + 1]
    sv2 = scr[_SV + 2]
    sv3 = scr[_SV + 3]
    sv4 = scr[_SV + 4]
    sv5 = scr[_SV + 5]
    for b in range(nvj):
        for r in range(6):
            scr[_COL + 6 + r] = S[i, b, r]
        _crm(vi0, vi1, vi2, vi3, vi4, vi5, scr, _COL + 6, _COL)  # v_i x S_b
        for r in range(6):
            pc = 0.0
            pa = 0.0
            g = 0.0
            for e in range(nvj):
                t = scr[_TAN + 6 * e + b]
                pc += scr[_PC + 6 * e + r] * t
                pa += scr[_PA + 6 * e + r] * t
                g += scr[_GR + 6 * e + r] * t
            kappa = scr[_KV + 6 * b + r] if has_kappa else 0.0
            row[o_z + ZW * b + r] = c_stiff * pc + c_damp * S[i, b, r]  # V
            row[o_z + ZW * b + 6 + r] = S[i, b, r] + c_stiff * pa + c_damp * (scr[_COL + r] + kappa)  # A
            scr[_B + 6 * b + r] = c_stiff * g
            if with_eps:  # the body's displacement relative to its parent, c_stiff S T
                st = 0.0
                for e in range(nvj):
                    st += S[i, e, r] * scr[_TAN + 6 * e + b]
                row[o_z + ZW * b + 12 + r] = c_stiff * st
        vb = o_z + ZW * b
        v0 = row[vb]
        v1 = row[vb + 1]
        v2 = row[vb + 2]
        v3 = row[vb + 3]
        v4 = row[vb + 4]
        v5 = row[vb + 5]
        # A - (S vj) x V
        row[vb + 6] -= sv1 * v2 - sv2 * v1
        row[vb + 7] -= sv2 * v0 - sv0 * v2
        row[vb + 8] -= sv0 * v1 - sv1 * v0
        row[vb + 9] -= sv1 * v5 - sv2 * v4 + sv4 * v2 - sv5 * v1
        row[vb + 10] -= sv2 * v3 - sv0 * v5 + sv5 * v0 - sv3 * v2
        row[vb + 11] -= sv0 * v4 - sv1 * v3 + sv3 * v1 - sv4 * v0
    for b in range(nvj):
        for r in range(6):
            scr[_GR + 6 * b + r] = scr[_B + 6 * b + r]
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
def _transform_to_parent(ws, i, sv, scr, dst, d, nz):
    """dst[d:] += X^T Lambda^a Y (6 x nz, row-major with stride ZW), Lambda^a = scr[_LA:] in body i's frame and
    Y = [[X, 0, 0], [-(S vj) x X, X, 0], [0, 0, X]] the map of the parent's (dv, da, eps) to body i's (X: ws's
    transform of body i, S vj = sv[0:6]; eps only where nz = ZW): M1 = L1 - L2 (S vj) x, then [X^T M1 X, X^T L2 X,
    X^T L3 X]."""
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
    for c in range(6):  # M1 column c = L1 column c - L2 (S vj x e_c)
        for m in range(6):
            scr[_COL + 6 + m] = 1.0 if m == c else 0.0
        _crm(sv[0], sv[1], sv[2], sv[3], sv[4], sv[5], scr, _COL + 6, _COL)
        for r in range(6):
            acc = scr[_LA + ZW * r + c]
            for m in range(6):
                acc -= scr[_LA + ZW * r + 6 + m] * scr[_COL + m]
            scr[_M1 + 6 * r + c] = acc
    for r in range(6):  # B = [M1 X, L2 X, L3 X]
        for c in range(6):
            acc1 = 0.0
            acc2 = 0.0
            for e in range(6):
                x = scr[_X + 6 * e + c]
                acc1 += scr[_M1 + 6 * r + e] * x
                acc2 += scr[_LA + ZW * r + 6 + e] * x
            scr[_B + ZW * r + c] = acc1
            scr[_B + ZW * r + 6 + c] = acc2
            if nz == ZW:
                acc3 = 0.0
                for e in range(6):
                    acc3 += scr[_LA + ZW * r + 12 + e] * scr[_X + 6 * e + c]
                scr[_B + ZW * r + 12 + c] = acc3
    for r in range(6):  # X^T B
        for c in range(nz):
            acc = 0.0
            for e in range(6):
                acc += scr[_X + 6 * e + r] * scr[_B + ZW * e + c]
            dst[d + ZW * r + c] += acc


@njit
def newton_factor(body_int, body_real, gravity, q, v, q_rates, delta, c_stiff, c_damp, j_diag, ws, S, tmp, work, scr,
                  fac, blocks, driven, loads):
    """Factor N = M + c_damp C + c_stiff K + diag(j_diag) (the Jacobian of the Newton-Euler residual by the
    accelerations, module doc) at (q, v, vdot = q_rates), tip to base, O(N); returns a status (a Newton-Euler
    pass's, or STATUS_SINGULAR | (body << 4) for a joint block D whose LU pivot is not above SINGULAR_RTOL of
    its scale).

    delta (nv,): the update whose tangent map the configuration terms carry (q = q_start (+) delta; zeros: none).
    With c_stiff = c_damp = 0 the factors are those of M + diag(j_diag). ws (nbodies, W_SPATIAL),
    S (nbodies, max_nv, 6), tmp (``tree.TMP_SIZE``), work (nv,), scr (SCRATCH_SIZE) scratch; fac (nbodies,
    ``factor_width(max_nv)``) receives the factors (``newton_apply``), ws keeps the transforms they need.
    blocks (nbodies, 6, 24): the contacts' [C_b | K_b] on each body's twist (``contact.contact_newton_blocks``), or
    no rows: C_b joins the body's response to its velocity change, K_b its response to its displacement (carried
    as a third part of z: module doc), both exact. blocks[:, :, 12:24], the [C | K] of the contacts between a body
    and its parent, act on the joint's own part Z dy of the body's velocity and displacement alone (the motion
    relative to the parent): S^T (C Z_v + K Z_eps) joins the joint's D.
    driven (nbodies,) uint8, or (0,): nonzero for a driven joint, locked (D^-1 = 0: ``newton_apply`` gives its
    velocities x = 0, its columns U_r D^-1 and D^-1 U_l^T vanish and its parent gets the whole Lambda).
    loads (nbodies, 6), or no rows: each body's subtree sum of applied loads that the residual takes away from the
    inertial wrench (the contacts', ``system.contact_subtree_loads``; body axes about its origin), taken away from
    the transmitted wrench W_k too, so that G_k and Dx_k (module doc) turn the loads with the joints as they turn
    the inertial forces and gravity: their geometric stiffness through the tree (a chain resting on a table: the
    table's push cancels gravity's term).
    """
    status = inverse_dynamics(body_int, body_real, gravity, q, v, q_rates, ws, S, tmp, work)
    if status:
        return status
    for i in range(loads.shape[0]):  # W_k less the applied loads' subtree sums
        for m in range(6):
            ws[i, WP + m] -= loads[i, m]
    n = body_int.shape[0]
    k, o_s, o_z, o_urd, o_dul, o_dinv, o_lam, o_sv, o_vel, o_nz = _offsets(fac.shape[1])
    # z = (dv, da), and with contacts the displacement eps, on which their stiffness acts
    nz = ZW if blocks.shape[0] > 0 else 12
    if n > 0:
        fac[0, o_nz] = nz
    for i in range(n):
        row = fac[i]
        for m in range(6):
            row[o_vel + m] = ws[i, WV + m]
        _body_inertia(body_real, i, ws, i)  # over the velocity (WV), kept in fac
        _unpack_inertia(ws[i], WI, scr, _I)
        for m in range(6):  # h = I v
            acc = 0.0
            for c in range(6):
                acc += scr[_I + 6 * m + c] * row[o_vel + c]
            scr[_COL + m] = acc
        # Lambda = [Gamma, I]: the body force's response to (dv, da), Gamma dv = v x* I dv + dv x* h
        w0 = row[o_vel]
        w1 = row[o_vel + 1]
        w2 = row[o_vel + 2]
        u0 = row[o_vel + 3]
        u1 = row[o_vel + 4]
        u2 = row[o_vel + 5]
        h0 = scr[_COL]
        h1 = scr[_COL + 1]
        h2 = scr[_COL + 2]
        h3 = scr[_COL + 3]
        h4 = scr[_COL + 4]
        h5 = scr[_COL + 5]
        for c in range(6):
            n0 = scr[_I + c]
            n1 = scr[_I + 6 + c]
            n2 = scr[_I + 12 + c]
            f0 = scr[_I + 18 + c]
            f1 = scr[_I + 24 + c]
            f2 = scr[_I + 30 + c]
            g0 = w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1
            g1 = w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2
            g2 = w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0
            g3 = w1 * f2 - w2 * f1
            g4 = w2 * f0 - w0 * f2
            g5 = w0 * f1 - w1 * f0
            if c < 3:  # e_c x* h: angular unit
                e0 = 1.0 if c == 0 else 0.0
                e1 = 1.0 if c == 1 else 0.0
                e2 = 1.0 if c == 2 else 0.0
                g0 += e1 * h2 - e2 * h1
                g1 += e2 * h0 - e0 * h2
                g2 += e0 * h1 - e1 * h0
                g3 += e1 * h5 - e2 * h4
                g4 += e2 * h3 - e0 * h5
                g5 += e0 * h4 - e1 * h3
            else:
                e0 = 1.0 if c == 3 else 0.0
                e1 = 1.0 if c == 4 else 0.0
                e2 = 1.0 if c == 5 else 0.0
                g0 += e1 * h5 - e2 * h4
                g1 += e2 * h3 - e0 * h5
                g2 += e0 * h4 - e1 * h3
            row[o_lam + c] = g0
            row[o_lam + ZW + c] = g1
            row[o_lam + 2 * ZW + c] = g2
            row[o_lam + 3 * ZW + c] = g3
            row[o_lam + 4 * ZW + c] = g4
            row[o_lam + 5 * ZW + c] = g5
            for r in range(6):
                row[o_lam + ZW * r + 6 + c] = scr[_I + 6 * r + c]
        if nz == ZW:  # the contacts' damping on the body's velocity, their stiffness on its displacement
            for r in range(6):
                for c in range(6):
                    row[o_lam + ZW * r + c] += blocks[i, r, c]
                    row[o_lam + ZW * r + 12 + c] = blocks[i, r, 6 + c]
    for i in range(n - 1, -1, -1):
        row = fac[i]
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        p = body_int[i, PARENT]
        for b in range(nvj):
            for r in range(6):
                row[o_s + 6 * b + r] = S[i, b, r]
        if p < 0:
            for m in range(6):
                scr[_VP + m] = 0.0
        else:
            _motion_to_child(ws, i, fac[p], o_vel, scr, _VP)
        for m in range(6):
            scr[_SV + m] = row[o_vel + m] - scr[_VP + m]
            row[o_sv + m] = scr[_SV + m]
        _joint_columns(body_int, body_real, gravity, v, q_rates, delta, c_stiff, c_damp, i, ws, S, tmp, scr, row,
                       o_z, nz == ZW)
        # U_r = Lambda Z + G', U_l = Lambda^T S (nz per column), D = U_l^T Z + Dx' + diag(j_diag)
        for b in range(nvj):
            for r in range(6):
                acc = scr[_GR + 6 * b + r]
                for c in range(nz):
                    acc += row[o_lam + ZW * r + c] * row[o_z + ZW * b + c]
                scr[_UR + 6 * b + r] = acc
            for c in range(nz):
                acc = 0.0
                for r in range(6):
                    acc += row[o_lam + ZW * r + c] * S[i, b, r]
                scr[_UL + ZW * b + c] = acc
        for b in range(nvj):
            scale = abs(j_diag[kv + b]) + abs(scr[_DX + 7 * b])
            for r in range(6):
                for c in range(nz):
                    scale += abs(S[i, b, r]) * abs(row[o_lam + ZW * r + c]) * abs(row[o_z + ZW * b + c])
            scr[_SCALE + b] = scale
            for a in range(nvj):
                acc = scr[_DX + 6 * a + b]
                for c in range(nz):
                    acc += scr[_UL + ZW * a + c] * row[o_z + ZW * b + c]
                scr[_D + 6 * a + b] = acc
            scr[_D + 7 * b] += j_diag[kv + b]
        if nz == ZW:
            # the contacts between the body and its parent move with its joint alone: their response to the
            # joint's own part Z dy of the body's velocity and displacement, C on V dy and K on c_stiff S T dy,
            # joins D alone
            for a in range(nvj):
                for b in range(nvj):
                    acc = 0.0
                    for r in range(6):
                        w = 0.0
                        for c in range(6):
                            w += (blocks[i, r, 12 + c] * row[o_z + ZW * b + c]
                                  + blocks[i, r, 18 + c] * row[o_z + ZW * b + 12 + c])
                        acc += S[i, a, r] * w
                    scr[_D + 6 * a + b] += acc
        if driven.shape[0] > 0 and driven[i] != 0:  # a driven joint: no unknown of the step
            for a in range(nvj):
                for b in range(nvj):
                    row[o_dinv + k * a + b] = 0.0
        else:
            status = _lu_inverse(scr, nvj, i, row, o_dinv, k)
            if status:
                return status
        for b in range(nvj):  # U_r D^-1 (6 per column), D^-1 U_l^T (nz per row)
            for r in range(6):
                acc = 0.0
                for a in range(nvj):
                    acc += scr[_UR + 6 * a + r] * row[o_dinv + k * a + b]
                row[o_urd + 6 * b + r] = acc
            for c in range(nz):
                acc = 0.0
                for a in range(nvj):
                    acc += row[o_dinv + k * b + a] * scr[_UL + ZW * a + c]
                row[o_dul + ZW * b + c] = acc
        if p < 0:
            continue
        for r in range(6):  # Lambda^a = Lambda - U_r D^-1 U_l^T, to the parent
            for c in range(nz):
                acc = row[o_lam + ZW * r + c]
                for a in range(nvj):
                    acc -= row[o_urd + 6 * a + r] * scr[_UL + ZW * a + c]
                scr[_LA + ZW * r + c] = acc
        _transform_to_parent(ws, i, row[o_sv:o_sv + 6], scr, fac[p], o_lam, nz)
    return STATUS_OK


@njit
def newton_apply(body_int, ws, fac, rhs, tmp, ud, out):
    """out = N^-1 rhs (nv,) with the factors of ``newton_factor``: two sweeps, O(N). Tip to base u = rhs - S^T p,
    p^a = p + U_r D^-1 u to the parent; base to tip from z_ground = 0, z' = Y z_P (z = (dv, da), with contacts
    (dv, da, eps)), x = D^-1 u - D^-1 U_l^T z', z = z' + Z x. Overwrites the WP and WC entries of ws (p, then dv
    and da) and, with contacts, the first 6 of WI (eps); ud (nbodies, max_nv) scratch."""
    n = body_int.shape[0]
    k, o_s, o_z, o_urd, o_dul, o_dinv, o_lam, o_sv, o_vel, o_nz = _offsets(fac.shape[1])
    if n == 0:
        return
    nz = int(fac[0, o_nz])
    # tmp: z (ZW) at 0, u at ZW, p^a at ZW + 6, a transformed motion at ZW + 12
    o_u = ZW
    o_p = ZW + 6
    o_m = ZW + 12
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
            tmp[o_u + a] = acc
        for a in range(nvj):
            acc = 0.0
            for b in range(nvj):
                acc += row[o_dinv + k * a + b] * tmp[o_u + b]
            ud[i, a] = acc
        p = body_int[i, PARENT]
        if p < 0:
            continue
        for m in range(6):
            acc = ws[i, WP + m]
            for a in range(nvj):
                acc += row[o_urd + 6 * a + m] * tmp[o_u + a]
            tmp[o_p + m] = acc
        _force_to_parent_add(ws, i, tmp, o_p, ws[p], WP)
    for i in range(n):
        row = fac[i]
        p = body_int[i, PARENT]
        kv = body_int[i, VIDX]
        nvj = body_int[i, NVJ]
        if p < 0:
            for m in range(nz):
                tmp[m] = 0.0
        else:  # dv' = X dv_P, da' = X da_P - (S vj) x dv', eps' = X eps_P
            _motion_to_child(ws, i, ws[p], WP, tmp, o_m)
            for m in range(6):
                tmp[m] = tmp[o_m + m]
            _motion_to_child(ws, i, ws[p], WC, tmp, 6)
            if nz == ZW:
                _motion_to_child(ws, i, ws[p], WI, tmp, 12)
            s0 = row[o_sv]
            s1 = row[o_sv + 1]
            s2 = row[o_sv + 2]
            s3 = row[o_sv + 3]
            s4 = row[o_sv + 4]
            s5 = row[o_sv + 5]
            tmp[6] -= s1 * tmp[2] - s2 * tmp[1]
            tmp[7] -= s2 * tmp[0] - s0 * tmp[2]
            tmp[8] -= s0 * tmp[1] - s1 * tmp[0]
            tmp[9] -= s1 * tmp[5] - s2 * tmp[4] + s4 * tmp[2] - s5 * tmp[1]
            tmp[10] -= s2 * tmp[3] - s0 * tmp[5] + s5 * tmp[0] - s3 * tmp[2]
            tmp[11] -= s0 * tmp[4] - s1 * tmp[3] + s3 * tmp[1] - s4 * tmp[0]
        for a in range(nvj):
            acc = ud[i, a]
            for m in range(nz):
                acc -= row[o_dul + ZW * a + m] * tmp[m]
            out[kv + a] = acc
        for a in range(nvj):
            for m in range(nz):
                tmp[m] += row[o_z + ZW * a + m] * out[kv + a]
        for m in range(6):
            ws[i, WP + m] = tmp[m]
            ws[i, WC + m] = tmp[6 + m]
        if nz == ZW:
            for m in range(6):
                ws[i, WI + m] = tmp[12 + m]
