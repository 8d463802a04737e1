"""The augmented formulation's tree solve (``spatial3d``) for a tree whose joints are all revolute or spherical,
specialised for speed: the KKT system of ``spatial3d.factor_and_solve`` (the same rows, right-hand side and
multipliers), each body's local block eliminated in closed form at its joint point instead of by its 6 x 6 body
pivot and m x m joint pivot. ``recursive_mbd.dynamics.augmented3d.forward_dynamics`` takes it for such a model
without loops; the general kernel stays the route of every other model, of the time loops and of the projection.

Coordinates of the local block. Body i's unknowns are its acceleration x_i = (c'', omega') and its joint's
multipliers. Written at the joint point P_i (ground axes), y_i = (a_i, omega'_i) with a_i = c'' + omega' x r_c the
acceleration of P_i (r_c = P_i - c_i): x_i = X y_i, X = [[1, [r_c]], [0, 1]]. The body's rows of the KKT system,
multiplied by X^T, read

    D y_i + (f, mu) = b,

D = X^T (M_i + the children's terms) X its pivot at P_i and b its loads (force, moment about P_i), f = F lambda_lin
the joint's constraint force (ground axes; F = R_p R0 the joint frame, lambda_lin its three linear multipliers) and
mu the constraint moment (a revolute joint's: its two angular multipliers along F n1, F n2; a spherical joint: none).
The joint's rows fix the motion of P_i and, for a revolute joint, the angular acceleration but along its axis
g = F a:

    a_i = a_pp + c,    omega'_i = omega'_p + c_w + g s   (revolute; s free),

a_pp = a_p + omega'_p x rho the acceleration of the parent's point at P_i (rho = P_i - P_p, a_p the parent's a),
c = (omega_p x u - u0) - 2 alpha u - beta^2 d the linear rows' right-hand side as a ground vector (``spatial3d``'s
u, u0, d; the rows along F's axes are its components), c_w = omega_p x w - 2 alpha w - beta^2 (g x R_i a) the
angular rows' (its component along g is immaterial: s absorbs it).

Revolute: the free row g . (D y)_w = g . b_w gives s. With u = D (0, g), d = g . u_w and the articulated inertia
A = D - u u^T / d (6 x 6, rank 5), (f, mu) = w0 - A Y_pp, Y_pp = (a_pp, omega'_p), w0 = b - u (g . b_w) / d - A (c,
c_w), and s = s0 - u . Y_pp / d, s0 = (g . b_w - u . (c, c_w)) / d.
Spherical: omega'_i = D_ww^-1 (b_w - D_wa a_i), f = f0 - K a_pp with K = D_aa - D_aw D_ww^-1 D_wa (3 x 3) and
f0 = b_a - D_aw D_ww^-1 b_w - K c: A = [[K, 0], [0, 0]].

Elimination into the parent: its pivot gains A moved from P_i to P_p (T^T A T, T = [[1, -[rho]], [0, 1]]) and its
loads w0 moved there (force, moment + rho x force), the parent's equations then hold the parent's unknowns only.
This is the articulated-body algorithm's condensation (Featherstone, Rigid Body Dynamics Algorithms, 2008, ch. 7)
in absolute coordinates: the Lagrange multipliers come out of the same pass (Baraff, "Linear-time dynamics using
Lagrange multipliers", SIGGRAPH 1996, eliminates the same KKT matrix in the same tree order, with the joint pivot
S = Jc D^-1 Jc^T where this eliminates the block [[D, Jc^T], [Jc, 0]] through its null space). A pivot d (revolute)
or D_ww (spherical) that is not numerically positive is STATUS_SINGULAR of its body: the body and what hangs from it
cannot move about the joint's free directions (a massless leaf), where the KKT matrix is singular.

Work per interior body of a chain, counted by hand from the code below (additions and multiplications): the body's
and its parent's rotations from their quaternions 80, the joint's geometry, rates and right-hand sides 150, the
inertia in ground axes and the loads 150, the pivot at P_i 60, the local elimination 270 (revolute, with the
multipliers' directions) or 250 (spherical), the move into the parent 200, the back-substitution 115 or 60: about
1000 flops (about 550 multiplies, against 422 / 377 of the recursive route's ``_kernels.spatial.rotary``), three
square roots and six divisions (revolute; spherical: two and five); one record of W = 85 floats written once and
read once (680 B), against the general kernel's factor of 157 floats a body (1.26 kB) and its 6 x 6 products. The
blocks that are symmetric (the pivot's aa and ww, the articulated inertia's, their moves) are built from their
upper triangles: computed as products their round-off asymmetry grows along a chain (3e-9 relative at 1e5 links).

One record of W floats per body (``rec``): the children's sums of the moved pivots and loads while the body waits
(ACC_*, FLAG set by the first child to come, cleared by the back-substitution) and, after its step, what the
back-substitution reads.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import STATUS_NONFINITE_Q, STATUS_NONFINITE_QD, STATUS_NONFINITE_TAU, STATUS_OK, STATUS_SINGULAR
from ..spatial.layout import A1, CP, IC, JTYPE, MASS, MCOM, PARENT, PP, QUATERNION_TOL, R0, REVOLUTE, SPHERICAL, VIDX
from ..spatial.rotary import _is_identity
from .spatial3d import (
    PIVOT_RTOL,
    _add,
    _cross,
    _dot,
    _mat_mat,
    _mat_t_vec,
    _mat_vec,
    _mm_skew,
    _neg,
    _perpendiculars,
    _quaternion_matrix,
    _scale,
    _skew_mm,
    _sub,
    _sym3_inverse,
    _vec,
)

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False)
inline = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False, inline="always")

# ---- the record of a body (W floats) --------------------------------------------------------------------------------
# while the body waits for its step: its children's sums (pivot at its joint point: blocks aa (9, row-major), aw (9),
# ww (9); loads (6)) and FLAG (1.0 once a child has written them)
ACC = 0  # 27 floats: aa, aw, ww
ACC_B = 27  # (6)
FLAG = 33
# after its step (overwriting the sums), for the back-substitution:
RHO = 0  # rho = P_i - P_p (3)
RC = 3  # r_c = P_i - c_i (3)
CL = 6  # c, the linear rows' right-hand side, ground axes (3)
YA = 9  # the body's y = (a_i, omega'_i) once solved (6)
# spherical
S_AL = 15  # omega'_i at a_pp = 0: D_ww^-1 (b_w - D_wa c) (3)
S_G = 18  # D_ww^-1 D_wa (9)
S_L0 = 27  # F^T f0 (3)
S_FK = 30  # F^T K (9)
# revolute
R_CW = 15  # c_w (3)
R_G = 18  # g = F a (3)
R_S0 = 21  # s0 (1)
R_UD = 22  # u / d (6)
R_W0 = 28  # w0 (6)
R_A = 34  # A (36, row-major)
R_F = 70  # F's columns and F n1, F n2: the multipliers' directions, ground axes (15)
W = 85

ONE = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


# ---- 3 x 3 blocks as row-major 9-tuples ------------------------------------------------------------------------------

@inline
def _m_add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5], a[6] + b[6], a[7] + b[7],
            a[8] + b[8])


@inline
def _m_sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5], a[6] - b[6], a[7] - b[7],
            a[8] - b[8])


@inline
def _sym(a):
    """The symmetric matrix of a's upper triangle (a symmetric block computed once per pair of entries, exactly
    symmetric: the chain's sums keep no round-off asymmetry)."""
    return (a[0], a[1], a[2], a[1], a[4], a[5], a[2], a[5], a[8])


@inline
def _m_t(a):
    return (a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8])


@inline
def _get9(rec, i, at):
    return (rec[i, at], rec[i, at + 1], rec[i, at + 2], rec[i, at + 3], rec[i, at + 4], rec[i, at + 5],
            rec[i, at + 6], rec[i, at + 7], rec[i, at + 8])


@inline
def _put9(rec, i, at, a):
    for k in range(9):
        rec[i, at + k] = a[k]


@inline
def _acc9(rec, i, at, a):
    for k in range(9):
        rec[i, at + k] += a[k]


@inline
def _moved(aa, aw, ww, rho):
    """The pivot blocks (aa, aw, ww) at a point moved to the point -rho from it (T^T A T, T = [[1, -[rho]], [0, 1]]):
    (aa, aw - aa [rho], ww + E + E^T - [rho] aa [rho]), E = [rho] aw."""
    aar = _mm_skew(aa, rho)
    e = _skew_mm(rho, aw)
    return aa, _m_sub(aw, aar), _sym(_m_sub(_m_add(ww, _m_add(e, _m_t(e))), _skew_mm(rho, aar)))


@inline
def _local_com(body_real, i):
    mass = body_real[i, MASS]
    inv = 1.0 / mass if mass > 0.0 else 0.0
    return (body_real[i, MCOM] * inv, body_real[i, MCOM + 1] * inv, body_real[i, MCOM + 2] * inv)


@inline
def _frame(body_real, i, rot_p):
    """F = R_p R0 of body i's joint (the product skipped where R0 is the identity)."""
    if _is_identity(body_real, i):
        return rot_p
    return _mat_mat(rot_p, _get9(body_real, i, R0))


@inline
def _outer(a, b):
    return (a[0] * b[0], a[0] * b[1], a[0] * b[2], a[1] * b[0], a[1] * b[1], a[1] * b[2], a[2] * b[0], a[2] * b[1],
            a[2] * b[2])


@inline
def _a_times(rec, i, row, x, y):
    """Rows row .. row + 2 of the stored A (6 x 6) times (x, y)."""
    at = R_A + 6 * row
    return (rec[i, at] * x[0] + rec[i, at + 1] * x[1] + rec[i, at + 2] * x[2] + rec[i, at + 3] * y[0]
            + rec[i, at + 4] * y[1] + rec[i, at + 5] * y[2],
            rec[i, at + 6] * x[0] + rec[i, at + 7] * x[1] + rec[i, at + 8] * x[2] + rec[i, at + 9] * y[0]
            + rec[i, at + 10] * y[1] + rec[i, at + 11] * y[2],
            rec[i, at + 12] * x[0] + rec[i, at + 13] * x[1] + rec[i, at + 14] * x[2] + rec[i, at + 15] * y[0]
            + rec[i, at + 16] * y[1] + rec[i, at + 17] * y[2])


@njit
def rotary_ok(body_int):
    """True when every joint is revolute or spherical (this module's route applies)."""
    for i in range(body_int.shape[0]):
        jt = body_int[i, JTYPE]
        if jt not in (REVOLUTE, SPHERICAL):
            return False
    return True


@njit
def factor_and_solve(body_int, body_real, gravity, row_start, z, zd, tau, stab, rec, zdd, lam, power):
    """zdd (nbodies, 6) = (c'', omega') and the joints' multipliers lam[:row_start[-1]] of a tree whose joints are
    all revolute or spherical (``rotary_ok``), as ``spatial3d.factor_and_solve`` gives them (no wrench): one pass
    leaves first, one roots first (module docstring). tau (nv,) or (0,); stab = (alpha, beta); rec (nbodies, W)
    the records, FLAG clear on entry (zeros, or as this kernel leaves them); power[0] receives tau's power.
    Returns the status (z, zd, tau not finite or a quaternion off unit norm; a singular pivot: its body)."""
    n = body_int.shape[0]
    alpha = stab[0]
    beta2 = stab[1] * stab[1]
    gx = gravity[0]
    gy = gravity[1]
    gz = gravity[2]
    for k in range(tau.shape[0]):
        if not math.isfinite(tau[k]):
            return STATUS_NONFINITE_TAU | (k << 4)
    has_tau = tau.shape[0] > 0
    tau_power = 0.0
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        jt = body_int[i, JTYPE]
        total = 0.0
        for c in range(7):
            total += z[i, c]
        if not math.isfinite(total):
            _clear_flags(rec)
            return STATUS_NONFINITE_Q | (i << 4)
        total = 0.0
        for c in range(6):
            total += zd[i, c]
        if not math.isfinite(total):
            _clear_flags(rec)
            return STATUS_NONFINITE_QD | (i << 4)
        rot, norm = _quaternion_matrix(z, i)
        if not abs(norm - 1.0) <= QUATERNION_TOL:
            _clear_flags(rec)
            return STATUS_NONFINITE_Q | (i << 4)
        # ---- the joint's geometry and rates (``spatial3d._joint_geometry``)
        mass = body_real[i, MASS]
        r_c = _mat_vec(rot, _sub(_vec(body_real, i, CP), _local_com(body_real, i)))
        c_c = _vec(z, i, 0)
        om_c = _vec(zd, i, 3)
        point = _add(c_c, r_c)
        if p >= 0:
            rot_p, _ = _quaternion_matrix(z, p)
            com_p = _local_com(body_real, p)
            c_p = _vec(z, p, 0)
            v_p = _vec(zd, p, 0)
            om_p = _vec(zd, p, 3)
            arm_p = _mat_vec(rot_p, _sub(_vec(body_real, i, PP), com_p))
            rho = _sub(point, _add(c_p, _mat_vec(rot_p, _sub(_vec(body_real, p, CP), com_p))))
        else:
            rot_p = ONE
            c_p = v_p = om_p = (0.0, 0.0, 0.0)
            arm_p = _vec(body_real, i, PP)
            rho = (0.0, 0.0, 0.0)
        frame = _frame(body_real, i, rot_p)
        gap = _sub(point, _add(c_p, arm_p))
        rho_c = _sub(point, c_p)
        rel = _sub(_add(_vec(zd, i, 0), _cross(om_c, r_c)), v_p)
        u = _sub(rel, _cross(om_p, rho_c))
        u0 = _sub(_cross(om_c, _cross(om_c, r_c)), _cross(om_p, rel))
        cl = _sub(_sub(_cross(om_p, u), u0), _add(_scale(2.0 * alpha, u), _scale(beta2, gap)))
        # ---- the body's inertia in ground axes, J = R J_c R^T, and its loads about P_i
        jcr = (body_real[i, IC], body_real[i, IC + 3], body_real[i, IC + 4], body_real[i, IC + 3],
               body_real[i, IC + 1], body_real[i, IC + 5], body_real[i, IC + 4], body_real[i, IC + 5],
               body_real[i, IC + 2])
        rj = _mat_mat(rot, jcr)
        rt0 = (rot[0], rot[1], rot[2])
        rt1 = (rot[3], rot[4], rot[5])
        rt2 = (rot[6], rot[7], rot[8])
        j0 = _mat_vec(rj, rt0)
        j1 = _mat_vec(rj, rt1)
        j2 = _mat_vec(rj, rt2)
        jw = (j0[0] * om_c[0] + j1[0] * om_c[1] + j2[0] * om_c[2], j0[1] * om_c[0] + j1[1] * om_c[1] + j2[1] * om_c[2],
              j0[2] * om_c[0] + j1[2] * om_c[1] + j2[2] * om_c[2])
        weight = (mass * gx, mass * gy, mass * gz)
        moment = _sub(_cross(weight, r_c), _cross(om_c, jw))  # about P_i: -r_c x m g - omega x J omega
        tau_moment = (0.0, 0.0, 0.0)
        if has_tau:
            k = body_int[i, VIDX]
            if jt == REVOLUTE:
                tau_moment = _scale(tau[k], _mat_vec(frame, _vec(body_real, i, A1)))
            else:
                tau_moment = _mat_vec(rot, (tau[k], tau[k + 1], tau[k + 2]))
            tau_power += _dot(tau_moment, _sub(om_c, om_p))
            moment = _add(moment, tau_moment)
        # ---- the pivot at P_i: X^T M X plus the children's sums
        mr = _scale(mass, r_c)
        rr = _dot(r_c, r_c)
        d_aa = (mass, 0.0, 0.0, 0.0, mass, 0.0, 0.0, 0.0, mass)
        d_aw = (0.0, -mr[2], mr[1], mr[2], 0.0, -mr[0], -mr[1], mr[0], 0.0)  # m [r_c]
        d_ww = _sym((j0[0] + mass * rr - mr[0] * r_c[0], j1[0] - mr[0] * r_c[1], j2[0] - mr[0] * r_c[2],
                     j0[1] - mr[1] * r_c[0], j1[1] + mass * rr - mr[1] * r_c[1], j2[1] - mr[1] * r_c[2],
                     j0[2] - mr[2] * r_c[0], j1[2] - mr[2] * r_c[1], j2[2] + mass * rr - mr[2] * r_c[2]))
        b_a = weight
        b_w = moment
        if rec[i, FLAG] != 0.0:
            d_aa = _m_add(d_aa, _get9(rec, i, ACC))
            d_aw = _m_add(d_aw, _get9(rec, i, ACC + 9))
            d_ww = _m_add(d_ww, _get9(rec, i, ACC + 18))
            b_a = _add(b_a, _vec(rec, i, ACC_B))
            b_w = _add(b_w, _vec(rec, i, ACC_B + 3))
        m_aa = m_aw = m_ww = ONE  # the moved pivot blocks (a root has none)
        if jt == REVOLUTE:
            a = _vec(body_real, i, A1)
            g = _mat_vec(frame, a)
            w = _sub(om_c, om_p)
            cw = _sub(_sub(_cross(om_p, w), _scale(2.0 * alpha, w)), _scale(beta2, _cross(g, _mat_vec(rot, a))))
            ua = _mat_vec(d_aw, g)
            uw = _mat_vec(d_ww, g)
            d = _dot(g, uw)
            scale = d_ww[0] + d_ww[4] + d_ww[8] + rr * (d_aa[0] + d_aa[4] + d_aa[8])
            if not (d > PIVOT_RTOL * scale and d > 0.0):
                _clear_flags(rec)
                return STATUS_SINGULAR | (i << 4)
            inv_d = 1.0 / d
            uda = _scale(inv_d, ua)
            udw = _scale(inv_d, uw)
            # A = D - u u^T / d
            k_aa = _sym(_m_sub(d_aa, _outer(ua, uda)))
            k_aw = _m_sub(d_aw, _outer(ua, udw))
            k_ww = _sym(_m_sub(d_ww, _outer(uw, udw)))
            gb = _dot(g, b_w)
            s0 = (gb - _dot(ua, cl) - _dot(uw, cw)) * inv_d
            # w0 = b - u (g . b_w) / d - A (c, c_w)
            w0a = _sub(_sub(b_a, _scale(gb, uda)), _add(_mat_vec(k_aa, cl), _mat_vec(k_aw, cw)))
            w0w = _sub(_sub(b_w, _scale(gb, udw)), _add(_mat_t_vec(k_aw, cl), _mat_vec(k_ww, cw)))
            for c in range(3):
                rec[i, RHO + c] = rho[c]
                rec[i, RC + c] = r_c[c]
                rec[i, CL + c] = cl[c]
                rec[i, R_CW + c] = cw[c]
                rec[i, R_G + c] = g[c]
                rec[i, R_UD + c] = uda[c]
                rec[i, R_UD + 3 + c] = udw[c]
                rec[i, R_W0 + c] = w0a[c]
                rec[i, R_W0 + 3 + c] = w0w[c]
            rec[i, R_S0] = s0
            for r in range(3):
                for c in range(3):
                    rec[i, R_A + 6 * r + c] = k_aa[3 * r + c]
                    rec[i, R_A + 6 * r + 3 + c] = k_aw[3 * r + c]
                    rec[i, R_A + 18 + 6 * r + c] = k_aw[3 * c + r]
                    rec[i, R_A + 21 + 6 * r + c] = k_ww[3 * r + c]
            n1, n2 = _perpendiculars(a)
            _put9(rec, i, R_F, frame)
            if p >= 0:
                m_aa, m_aw, m_ww = _moved(k_aa, k_aw, k_ww, rho)
            g1 = _mat_vec(frame, n1)
            g2 = _mat_vec(frame, n2)
            for c in range(3):
                rec[i, R_F + 9 + c] = g1[c]
                rec[i, R_F + 12 + c] = g2[c]
        else:
            ok, dwi = _sym3_inverse(d_ww, PIVOT_RTOL)
            if not ok:
                _clear_flags(rec)
                return STATUS_SINGULAR | (i << 4)
            d_wa = _m_t(d_aw)
            gm = _mat_mat(dwi, d_wa)  # D_ww^-1 D_wa
            k_aa = _sym(_m_sub(d_aa, _mat_mat(d_aw, gm)))
            al = _mat_vec(dwi, b_w)
            f0 = _sub(_sub(b_a, _mat_vec(d_aw, al)), _mat_vec(k_aa, cl))
            al = _sub(al, _mat_vec(gm, cl))
            w0a = f0
            w0w = (0.0, 0.0, 0.0)
            if p >= 0:  # A = [[K, 0], [0, 0]] moved: (K, -K [rho], -[rho] K [rho])
                kr = _mm_skew(k_aa, rho)
                m_aa = k_aa
                m_aw = _neg(kr)
                m_ww = _sym(_neg(_skew_mm(rho, kr)))
            lam0 = _mat_t_vec(frame, f0)
            fk = _mat_mat(_m_t(frame), k_aa)
            for c in range(3):
                rec[i, RHO + c] = rho[c]
                rec[i, RC + c] = r_c[c]
                rec[i, CL + c] = cl[c]
                rec[i, S_AL + c] = al[c]
                rec[i, S_L0 + c] = lam0[c]
            _put9(rec, i, S_G, gm)
            _put9(rec, i, S_FK, fk)
        if p < 0:
            continue
        # ---- into the parent: A moved from P_i to P_p (m_*, above), w0 with it, the reaction of tau
        w_moved = _sub(_add(w0w, _cross(rho, w0a)), tau_moment)
        if rec[p, FLAG] == 0.0:
            _put9(rec, p, ACC, m_aa)
            _put9(rec, p, ACC + 9, m_aw)
            _put9(rec, p, ACC + 18, m_ww)
            for c in range(3):
                rec[p, ACC_B + c] = w0a[c]
                rec[p, ACC_B + 3 + c] = w_moved[c]
            rec[p, FLAG] = 1.0
        else:
            _acc9(rec, p, ACC, m_aa)
            _acc9(rec, p, ACC + 9, m_aw)
            _acc9(rec, p, ACC + 18, m_ww)
            for c in range(3):
                rec[p, ACC_B + c] += w0a[c]
                rec[p, ACC_B + 3 + c] += w_moved[c]
    # ---- back-substitution, roots first
    for i in range(n):
        p = body_int[i, PARENT]
        if p >= 0:
            al_p = _vec(rec, p, YA + 3)
            a_pp = _add(_vec(rec, p, YA), _cross(al_p, _vec(rec, i, RHO)))
        else:
            al_p = a_pp = (0.0, 0.0, 0.0)
        a_i = _add(a_pp, _vec(rec, i, CL))
        r0 = row_start[i]
        if body_int[i, JTYPE] == REVOLUTE:
            s = rec[i, R_S0] - (_dot(_vec(rec, i, R_UD), a_pp) + _dot(_vec(rec, i, R_UD + 3), al_p))
            al_i = _add(_add(al_p, _vec(rec, i, R_CW)), _scale(s, _vec(rec, i, R_G)))
            f = _sub(_vec(rec, i, R_W0), _a_times(rec, i, 0, a_pp, al_p))
            mu = _sub(_vec(rec, i, R_W0 + 3), _a_times(rec, i, 3, a_pp, al_p))
            lf = _mat_t_vec(_get9(rec, i, R_F), f)
            lam[r0] = lf[0]
            lam[r0 + 1] = lf[1]
            lam[r0 + 2] = lf[2]
            lam[r0 + 3] = _dot(_vec(rec, i, R_F + 9), mu)
            lam[r0 + 4] = _dot(_vec(rec, i, R_F + 12), mu)
        else:
            al_i = _sub(_vec(rec, i, S_AL), _mat_vec(_get9(rec, i, S_G), a_pp))
            lf = _sub(_vec(rec, i, S_L0), _mat_vec(_get9(rec, i, S_FK), a_pp))
            lam[r0] = lf[0]
            lam[r0 + 1] = lf[1]
            lam[r0 + 2] = lf[2]
        acc = _add(a_i, _cross(_vec(rec, i, RC), al_i))
        for c in range(3):
            rec[i, YA + c] = a_i[c]
            rec[i, YA + 3 + c] = al_i[c]
            zdd[i, c] = acc[c]
            zdd[i, 3 + c] = al_i[c]
        rec[i, FLAG] = 0.0
    power[0] = tau_power
    return STATUS_OK


@njit
def _clear_flags(rec):
    for i in range(rec.shape[0]):
        rec[i, FLAG] = 0.0
