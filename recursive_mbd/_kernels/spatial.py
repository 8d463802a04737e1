"""Recursive kernels on a tree of rigid bodies in three dimensions (issue 18).

Spatial algebra in body coordinates (Featherstone, Rigid Body Dynamics Algorithms, 2008, ch. 2): a body's motion
is the 6-vector v = (omega; v_O), its angular velocity and the velocity of its frame origin O, both in body axes;
a force is (n_O; f), the moment about O and the force. A joint to the parent P is described by the child-to-parent
rotation R = R0 R_j(q) and the child origin r in the parent frame, so that

    X v_P = (R^T omega_P; R^T (v_P + omega_P x r))        (motion, parent to child coordinates)
    X^T f = (R n + r x (R f); R f)                         (force, child to parent coordinates)

and by its motion subspace S (6 x nv_joint, child coordinates; ``spatial_layout`` and ``Model3D`` for the joints):

    v_i = X_i v_P + S_i vj,      a_i = X_i a_P + S_i vj' + c_i,      c_i = S_i' vj + v_i x S_i vj

with S_i' the rate of S's components in the child frame (non-zero for universal, planar and free joints only).

Forward dynamics is the articulated-body algorithm (Featherstone 2008, ch. 7, table 7.1): the spatial form of the
mass and force condensation tip to base, accelerations base to tip, of seed 003 (eqs. 3.21-3.23: M^ and Q^ become
the articulated inertia I^A and bias force p^A, G becomes S). Gravity enters as a base acceleration -g
(Featherstone 2008, sec. 5.3), so the body accelerations of the last pass are offset by -g; qdd is exact.

All kernels are pure functions of arrays: the packed model (``body_int``, ``body_real``, ``gravity``), the state,
a workspace (``ws``, ``S``, ``UD``, ``uD``, ``tmp``, allocated once per model) and preallocated outputs. They
return a status: 0, a ``layout`` status (``kind | index << 4``), or -(body + 1) for a quaternion whose norm is off
by more than ``QUATERNION_TOL`` (an in-tolerance quaternion is normalised on the fly; q is never written).
"""

import math

import numba

from .layout import STATUS_OK, STATUS_SINGULAR
from .spatial_layout import (
    A1,
    A2,
    CP,
    CYLINDRICAL,
    FREE,
    IO,
    JTYPE,
    MASS,
    MCOM,
    NVJ,
    PARENT,
    PLANAR,
    PP,
    PRISMATIC,
    QIDX,
    QUATERNION_TOL,
    R0,
    REVOLUTE,
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
from .tree import check_finite, check_output

# as in _kernels.tree: FMA contraction only (the NaN tests must survive), IEEE division, statuses instead of raising
njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy")

TMP_SIZE = 256  # scratch floats a kernel call needs (tmp)


@njit
def _axis_rotation(ax, ay, az, c, s, out, o):
    """Rodrigues: out[o:o+9] = Rot(a, angle) row-major, a unit, c = cos(angle), s = sin(angle)."""
    t = 1.0 - c
    out[o] = c + t * ax * ax
    out[o + 1] = t * ax * ay - s * az
    out[o + 2] = t * ax * az + s * ay
    out[o + 3] = t * ax * ay + s * az
    out[o + 4] = c + t * ay * ay
    out[o + 5] = t * ay * az - s * ax
    out[o + 6] = t * ax * az - s * ay
    out[o + 7] = t * ay * az + s * ax
    out[o + 8] = c + t * az * az


@njit
def _quaternion_rotation(q, k, out, o):
    """out[o:o+9] = R(quat) of q[k:k+4] = (w, x, y, z) normalised; False if its norm is off by > QUATERNION_TOL."""
    w = q[k]
    x = q[k + 1]
    y = q[k + 2]
    z = q[k + 3]
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if not abs(norm - 1.0) <= QUATERNION_TOL:
        return False
    w /= norm
    x /= norm
    y /= norm
    z /= norm
    out[o] = 1.0 - 2.0 * (y * y + z * z)
    out[o + 1] = 2.0 * (x * y - w * z)
    out[o + 2] = 2.0 * (x * z + w * y)
    out[o + 3] = 2.0 * (x * y + w * z)
    out[o + 4] = 1.0 - 2.0 * (x * x + z * z)
    out[o + 5] = 2.0 * (y * z - w * x)
    out[o + 6] = 2.0 * (x * z - w * y)
    out[o + 7] = 2.0 * (y * z + w * x)
    out[o + 8] = 1.0 - 2.0 * (x * x + y * y)
    return True


@njit
def _column(S, i, col, wx, wy, wz, lx, ly, lz, cpx, cpy, cpz):
    """S[i, col] = (w; l + cp x w): a joint rate giving angular velocity w and child-point velocity l (child
    axes) moves the child origin at l + w x (-cp) = l + cp x w."""
    S[i, col, 0] = wx
    S[i, col, 1] = wy
    S[i, col, 2] = wz
    S[i, col, 3] = lx + cpy * wz - cpz * wy
    S[i, col, 4] = ly + cpz * wx - cpx * wz
    S[i, col, 5] = lz + cpx * wy - cpy * wx


@njit
def joint_kinematics(body_int, body_real, q, i, S, tmp):
    """R_j(q) into tmp[0:9], t_j(q) into tmp[9:12] (joint frame) and the motion subspace S[i] (child coordinates).

    Returns False for a quaternion off unit norm. S's linear rows are R_j^T dt_j/dq + cp x (angular rows).
    """
    jt = body_int[i, JTYPE]
    k = body_int[i, QIDX]
    for m in range(12):
        tmp[m] = 0.0
    tmp[0] = 1.0
    tmp[4] = 1.0
    tmp[8] = 1.0
    ax = body_real[i, A1]
    ay = body_real[i, A1 + 1]
    az = body_real[i, A1 + 2]
    cpx = body_real[i, CP]
    cpy = body_real[i, CP + 1]
    cpz = body_real[i, CP + 2]
    if jt == REVOLUTE:
        _axis_rotation(ax, ay, az, math.cos(q[k]), math.sin(q[k]), tmp, 0)
        _column(S, i, 0, ax, ay, az, 0.0, 0.0, 0.0, cpx, cpy, cpz)
    elif jt == PRISMATIC:
        tmp[9] = ax * q[k]
        tmp[10] = ay * q[k]
        tmp[11] = az * q[k]
        _column(S, i, 0, 0.0, 0.0, 0.0, ax, ay, az, cpx, cpy, cpz)
    elif jt == CYLINDRICAL:
        _axis_rotation(ax, ay, az, math.cos(q[k]), math.sin(q[k]), tmp, 0)
        tmp[9] = ax * q[k + 1]
        tmp[10] = ay * q[k + 1]
        tmp[11] = az * q[k + 1]
        _column(S, i, 0, ax, ay, az, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        _column(S, i, 1, 0.0, 0.0, 0.0, ax, ay, az, cpx, cpy, cpz)  # R_j^T a = a: R_j turns about a
    elif jt == UNIVERSAL:
        bx = body_real[i, A2]
        by = body_real[i, A2 + 1]
        bz = body_real[i, A2 + 2]
        _axis_rotation(ax, ay, az, math.cos(q[k]), math.sin(q[k]), tmp, 12)
        _axis_rotation(bx, by, bz, math.cos(q[k + 1]), math.sin(q[k + 1]), tmp, 21)
        for r in range(3):
            for c in range(3):
                tmp[3 * r + c] = (tmp[12 + 3 * r] * tmp[21 + c] + tmp[13 + 3 * r] * tmp[24 + c]
                                  + tmp[14 + 3 * r] * tmp[27 + c])
        # omega_rel = Rot(a2, beta)^T a1 alpha' + a2 beta' (child axes)
        ux = tmp[21] * ax + tmp[24] * ay + tmp[27] * az
        uy = tmp[22] * ax + tmp[25] * ay + tmp[28] * az
        uz = tmp[23] * ax + tmp[26] * ay + tmp[29] * az
        _column(S, i, 0, ux, uy, uz, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        _column(S, i, 1, bx, by, bz, 0.0, 0.0, 0.0, cpx, cpy, cpz)
    elif jt == SPHERICAL:
        if not _quaternion_rotation(q, k, tmp, 0):
            return False
        _column(S, i, 0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        _column(S, i, 1, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        _column(S, i, 2, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
    elif jt == PLANAR:
        _axis_rotation(0.0, 0.0, 1.0, math.cos(q[k + 2]), math.sin(q[k + 2]), tmp, 0)
        tmp[9] = q[k]
        tmp[10] = q[k + 1]
        # R_j^T e_x, R_j^T e_y: the first two rows of R_j
        _column(S, i, 0, 0.0, 0.0, 0.0, tmp[0], tmp[1], tmp[2], cpx, cpy, cpz)
        _column(S, i, 1, 0.0, 0.0, 0.0, tmp[3], tmp[4], tmp[5], cpx, cpy, cpz)
        _column(S, i, 2, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
    elif jt == FREE:
        if not _quaternion_rotation(q, k + 3, tmp, 0):
            return False
        tmp[9] = q[k]
        tmp[10] = q[k + 1]
        tmp[11] = q[k + 2]
        for m in range(3):
            _column(S, i, m, 0.0, 0.0, 0.0, tmp[3 * m], tmp[3 * m + 1], tmp[3 * m + 2], cpx, cpy, cpz)
        _column(S, i, 3, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        _column(S, i, 4, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        _column(S, i, 5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
    return True


@njit
def _motion_to_child(ws, i, src, s, tmp, o):
    """tmp[o:o+6] = X_i m, m = src[s:s+6] a motion in the parent's coordinates."""
    wx = src[s]
    wy = src[s + 1]
    wz = src[s + 2]
    rx = ws[i, WT]
    ry = ws[i, WT + 1]
    rz = ws[i, WT + 2]
    lx = src[s + 3] + wy * rz - wz * ry
    ly = src[s + 4] + wz * rx - wx * rz
    lz = src[s + 5] + wx * ry - wy * rx
    for m in range(3):
        tmp[o + m] = ws[i, WR + m] * wx + ws[i, WR + 3 + m] * wy + ws[i, WR + 6 + m] * wz
        tmp[o + 3 + m] = ws[i, WR + m] * lx + ws[i, WR + 3 + m] * ly + ws[i, WR + 6 + m] * lz


@njit
def _force_to_parent_add(ws, i, f, o, dst, d):
    """dst[d:d+6] += X_i^T f, f = f[o:o+6] a force in body i's coordinates."""
    fx = ws[i, WR] * f[o + 3] + ws[i, WR + 1] * f[o + 4] + ws[i, WR + 2] * f[o + 5]
    fy = ws[i, WR + 3] * f[o + 3] + ws[i, WR + 4] * f[o + 4] + ws[i, WR + 5] * f[o + 5]
    fz = ws[i, WR + 6] * f[o + 3] + ws[i, WR + 7] * f[o + 4] + ws[i, WR + 8] * f[o + 5]
    nx = ws[i, WR] * f[o] + ws[i, WR + 1] * f[o + 1] + ws[i, WR + 2] * f[o + 2]
    ny = ws[i, WR + 3] * f[o] + ws[i, WR + 4] * f[o + 1] + ws[i, WR + 5] * f[o + 2]
    nz = ws[i, WR + 6] * f[o] + ws[i, WR + 7] * f[o + 1] + ws[i, WR + 8] * f[o + 2]
    rx = ws[i, WT]
    ry = ws[i, WT + 1]
    rz = ws[i, WT + 2]
    dst[d] += nx + ry * fz - rz * fy
    dst[d + 1] += ny + rz * fx - rx * fz
    dst[d + 2] += nz + rx * fy - ry * fx
    dst[d + 3] += fx
    dst[d + 4] += fy
    dst[d + 5] += fz


@njit
def _inertia_times(body_real, i, m, o, out, d):
    """out[d:d+6] = I_i m[o:o+6]: the body's spatial inertia about its origin times a motion (its momentum)."""
    mass = body_real[i, MASS]
    hx = body_real[i, MCOM]
    hy = body_real[i, MCOM + 1]
    hz = body_real[i, MCOM + 2]
    wx = m[o]
    wy = m[o + 1]
    wz = m[o + 2]
    vx = m[o + 3]
    vy = m[o + 4]
    vz = m[o + 5]
    ixx = body_real[i, IO]
    iyy = body_real[i, IO + 1]
    izz = body_real[i, IO + 2]
    ixy = body_real[i, IO + 3]
    ixz = body_real[i, IO + 4]
    iyz = body_real[i, IO + 5]
    # angular momentum about O: I_O omega + h x v_O; linear: m v_O + omega x h  (h = m c)
    out[d] = ixx * wx + ixy * wy + ixz * wz + hy * vz - hz * vy
    out[d + 1] = ixy * wx + iyy * wy + iyz * wz + hz * vx - hx * vz
    out[d + 2] = ixz * wx + iyz * wy + izz * wz + hx * vy - hy * vx
    out[d + 3] = mass * vx + wy * hz - wz * hy
    out[d + 4] = mass * vy + wz * hx - wx * hz
    out[d + 5] = mass * vz + wx * hy - wy * hx


@njit
def _cross_force(v, o, f, fo, out, d):
    """out[d:d+6] += v x* f (Featherstone's crf): (w x n + u x f; w x f), v = (w; u)."""
    wx = v[o]
    wy = v[o + 1]
    wz = v[o + 2]
    ux = v[o + 3]
    uy = v[o + 4]
    uz = v[o + 5]
    nx = f[fo]
    ny = f[fo + 1]
    nz = f[fo + 2]
    fx = f[fo + 3]
    fy = f[fo + 4]
    fz = f[fo + 5]
    out[d] += wy * nz - wz * ny + uy * fz - uz * fy
    out[d + 1] += wz * nx - wx * nz + uz * fx - ux * fz
    out[d + 2] += wx * ny - wy * nx + ux * fy - uy * fx
    out[d + 3] += wy * fz - wz * fy
    out[d + 4] += wz * fx - wx * fz
    out[d + 5] += wx * fy - wy * fx


@njit
def _body_inertia(body_real, i, ws, j):
    """ws[j, WI:WI+36] = the 6x6 spatial inertia of body i about its origin: [[I_O, [h]x], [[h]x^T, m 1]]."""
    hx = body_real[i, MCOM]
    hy = body_real[i, MCOM + 1]
    hz = body_real[i, MCOM + 2]
    m = body_real[i, MASS]
    for e in range(36):
        ws[j, WI + e] = 0.0
    ws[j, WI] = body_real[i, IO]
    ws[j, WI + 7] = body_real[i, IO + 1]
    ws[j, WI + 14] = body_real[i, IO + 2]
    ws[j, WI + 1] = ws[j, WI + 6] = body_real[i, IO + 3]
    ws[j, WI + 2] = ws[j, WI + 12] = body_real[i, IO + 4]
    ws[j, WI + 8] = ws[j, WI + 13] = body_real[i, IO + 5]
    # [h]x in the top right block, its transpose bottom left
    ws[j, WI + 4] = ws[j, WI + 24] = -hz
    ws[j, WI + 5] = ws[j, WI + 30] = hy
    ws[j, WI + 9] = ws[j, WI + 19] = hz
    ws[j, WI + 11] = ws[j, WI + 31] = -hx
    ws[j, WI + 15] = ws[j, WI + 20] = -hy
    ws[j, WI + 16] = ws[j, WI + 26] = hx
    ws[j, WI + 21] = m
    ws[j, WI + 28] = m
    ws[j, WI + 35] = m


@njit
def _inertia_to_parent_add(ws, i, src, s, p, tmp):
    """ws[p, WI:WI+36] += X_i^T I X_i, I = src[s:s+36] (6x6 row-major, symmetric, body i's coordinates).

    Blocks I = [[A, B], [B^T, C]]: with A', B', C' the blocks rotated to the parent axes (R A R^T, ...) and
    [r] the cross-product matrix of r, X^T I X = [[A' - B'[r] - (B'[r])^T - [r]C'[r], B' + [r]C'], [.., C']].
    """
    # rotated blocks: tmp[0:9] = A', tmp[9:18] = B', tmp[18:27] = C' (via tmp[27:54] = R M)
    for blk in range(3):
        ro = 0 if blk < 2 else 3
        co = 0 if blk == 0 else 3
        for r in range(3):
            for c in range(3):
                tmp[27 + 3 * r + c] = (ws[i, WR + 3 * r] * src[s + 6 * ro + co + c]
                                       + ws[i, WR + 3 * r + 1] * src[s + 6 * (ro + 1) + co + c]
                                       + ws[i, WR + 3 * r + 2] * src[s + 6 * (ro + 2) + co + c])
        for r in range(3):
            for c in range(3):
                tmp[9 * blk + 3 * r + c] = (tmp[27 + 3 * r] * ws[i, WR + 3 * c]
                                            + tmp[27 + 3 * r + 1] * ws[i, WR + 3 * c + 1]
                                            + tmp[27 + 3 * r + 2] * ws[i, WR + 3 * c + 2])
    rx = ws[i, WT]
    ry = ws[i, WT + 1]
    rz = ws[i, WT + 2]
    # tmp[27:36] = B'[r], tmp[36:45] = [r]C', tmp[45:54] = [r]C'[r]
    for row in range(3):
        b0 = tmp[9 + 3 * row]
        b1 = tmp[9 + 3 * row + 1]
        b2 = tmp[9 + 3 * row + 2]
        # a row b of B' times [r] is (b [r]) = b x r (written out)
        tmp[27 + 3 * row] = b1 * rz - b2 * ry
        tmp[27 + 3 * row + 1] = b2 * rx - b0 * rz
        tmp[27 + 3 * row + 2] = b0 * ry - b1 * rx
    for c in range(3):
        c0 = tmp[18 + c]
        c1 = tmp[21 + c]
        c2 = tmp[24 + c]
        tmp[36 + c] = ry * c2 - rz * c1
        tmp[39 + c] = rz * c0 - rx * c2
        tmp[42 + c] = rx * c1 - ry * c0
    for row in range(3):
        d0 = tmp[36 + 3 * row]
        d1 = tmp[36 + 3 * row + 1]
        d2 = tmp[36 + 3 * row + 2]
        tmp[45 + 3 * row] = d1 * rz - d2 * ry
        tmp[45 + 3 * row + 1] = d2 * rx - d0 * rz
        tmp[45 + 3 * row + 2] = d0 * ry - d1 * rx
    for r in range(3):
        for c in range(3):
            top_left = tmp[3 * r + c] - tmp[27 + 3 * r + c] - tmp[27 + 3 * c + r] - tmp[45 + 3 * r + c]
            top_right = tmp[9 + 3 * r + c] + tmp[36 + 3 * r + c]
            ws[p, WI + 6 * r + c] += top_left
            ws[p, WI + 6 * r + 3 + c] += top_right
            ws[p, WI + 6 * (3 + c) + r] += top_right
            ws[p, WI + 6 * (3 + r) + 3 + c] += tmp[18 + 3 * r + c]


@njit
def kinematics_pass(body_int, body_real, q, v, ws, S, tmp, with_velocity):
    """Base to tip: R, r (ws WR, WT), S, and with ``with_velocity`` the body velocity (WV) and bias acceleration
    c = S' vj + v x S vj (WC). Returns STATUS_OK or -(body + 1) for a quaternion off unit norm."""
    for i in range(body_int.shape[0]):
        if not joint_kinematics(body_int, body_real, q, i, S, tmp):
            return -(i + 1)
        # R = R0 R_j,  r = pp + R0 t - R cp
        for r in range(3):
            for c in range(3):
                ws[i, WR + 3 * r + c] = (body_real[i, R0 + 3 * r] * tmp[c] + body_real[i, R0 + 3 * r + 1] * tmp[3 + c]
                                         + body_real[i, R0 + 3 * r + 2] * tmp[6 + c])
        for r in range(3):
            ws[i, WT + r] = (body_real[i, PP + r] + body_real[i, R0 + 3 * r] * tmp[9]
                             + body_real[i, R0 + 3 * r + 1] * tmp[10] + body_real[i, R0 + 3 * r + 2] * tmp[11]
                             - ws[i, WR + 3 * r] * body_real[i, CP] - ws[i, WR + 3 * r + 1] * body_real[i, CP + 1]
                             - ws[i, WR + 3 * r + 2] * body_real[i, CP + 2])
        if not with_velocity:
            continue
        p = body_int[i, PARENT]
        jt = body_int[i, JTYPE]
        kv = body_int[i, VIDX]
        nvj = body_int[i, NVJ]
        # joint velocity vJ = S vj in tmp[12:18]
        for m in range(6):
            acc = 0.0
            for col in range(nvj):
                acc += S[i, col, m] * v[kv + col]
            tmp[12 + m] = acc
        if p < 0:
            for m in range(6):
                ws[i, WV + m] = tmp[12 + m]
        else:
            _motion_to_child(ws, i, ws[p], WV, tmp, 18)
            for m in range(6):
                ws[i, WV + m] = tmp[18 + m] + tmp[12 + m]
        # c = S' vj + v x vJ (crm: (w x wJ; w x vJ_lin + u x wJ))
        wx = ws[i, WV]
        wy = ws[i, WV + 1]
        wz = ws[i, WV + 2]
        ux = ws[i, WV + 3]
        uy = ws[i, WV + 4]
        uz = ws[i, WV + 5]
        jx = tmp[12]
        jy = tmp[13]
        jz = tmp[14]
        lx = tmp[15]
        ly = tmp[16]
        lz = tmp[17]
        c0 = wy * jz - wz * jy
        c1 = wz * jx - wx * jz
        c2 = wx * jy - wy * jx
        c3 = wy * lz - wz * ly + uy * jz - uz * jy
        c4 = wz * lx - wx * lz + uz * jx - ux * jz
        c5 = wx * ly - wy * lx + ux * jy - uy * jx
        if jt == UNIVERSAL:
            # d/dt of Rot(a2, beta)^T a1 = (u x a2) beta'; the linear rows follow as cp x (that)
            ab = v[kv] * v[kv + 1]
            ux_ = S[i, 0, 0]
            uy_ = S[i, 0, 1]
            uz_ = S[i, 0, 2]
            bx = body_real[i, A2]
            by = body_real[i, A2 + 1]
            bz = body_real[i, A2 + 2]
            dx = (uy_ * bz - uz_ * by) * ab
            dy = (uz_ * bx - ux_ * bz) * ab
            dz = (ux_ * by - uy_ * bx) * ab
            cpx = body_real[i, CP]
            cpy = body_real[i, CP + 1]
            cpz = body_real[i, CP + 2]
            c0 += dx
            c1 += dy
            c2 += dz
            c3 += cpy * dz - cpz * dy
            c4 += cpz * dx - cpx * dz
            c5 += cpx * dy - cpy * dx
        elif jt == PLANAR:
            # d/dt of R_j^T (xdot, ydot, 0) at fixed rates = (R_j^T t') x e_z thetadot
            th = v[kv + 2]
            tx = S[i, 0, 3] * v[kv] + S[i, 1, 3] * v[kv + 1]
            ty = S[i, 0, 4] * v[kv] + S[i, 1, 4] * v[kv + 1]
            c3 += ty * th
            c4 -= tx * th
        elif jt == FREE:
            # d/dt of R_j^T t' at fixed rates = -omega_rel x (R_j^T t')
            tx = S[i, 0, 3] * v[kv] + S[i, 1, 3] * v[kv + 1] + S[i, 2, 3] * v[kv + 2]
            ty = S[i, 0, 4] * v[kv] + S[i, 1, 4] * v[kv + 1] + S[i, 2, 4] * v[kv + 2]
            tz = S[i, 0, 5] * v[kv] + S[i, 1, 5] * v[kv + 1] + S[i, 2, 5] * v[kv + 2]
            ox = v[kv + 3]
            oy = v[kv + 4]
            oz = v[kv + 5]
            c3 -= oy * tz - oz * ty
            c4 -= oz * tx - ox * tz
            c5 -= ox * ty - oy * tx
        ws[i, WC] = c0
        ws[i, WC + 1] = c1
        ws[i, WC + 2] = c2
        ws[i, WC + 3] = c3
        ws[i, WC + 4] = c4
        ws[i, WC + 5] = c5
    return STATUS_OK


@njit
def _cholesky_solve(tmp, d, inv, nvj, b):
    """Solve L L^T x = tmp[b:b+nvj] in place, L the lower Cholesky factor in tmp[d:d+36] (stride 6) and the
    reciprocals of its diagonal in tmp[inv:inv+nvj]."""
    for r in range(nvj):
        acc = tmp[b + r]
        for k in range(r):
            acc -= tmp[d + 6 * r + k] * tmp[b + k]
        tmp[b + r] = acc * tmp[inv + r]
    for r in range(nvj - 1, -1, -1):
        acc = tmp[b + r]
        for k in range(r + 1, nvj):
            acc -= tmp[d + 6 * k + r] * tmp[b + k]
        tmp[b + r] = acc * tmp[inv + r]


@njit
def forward_dynamics(body_int, body_real, gravity, q, v, tau, ws, S, UD, uD, tmp, out):
    """vdot = FD(q, v, tau) by the articulated-body algorithm (Featherstone 2008, table 7.1), O(N).

    Shapes: q (nq,), v, tau, out (nv,); ws (nbodies, W_SPATIAL), S and UD (nbodies, max_nv, 6), uD (nbodies,
    max_nv), tmp (TMP_SIZE,). Returns a status (module docstring).
    """
    status = check_finite(q, v, tau)
    if status:
        return status
    status = kinematics_pass(body_int, body_real, q, v, ws, S, tmp, True)
    if status:
        return status
    n = body_int.shape[0]
    # articulated inertia and bias force of each body alone: I_i and v x* I_i v
    for i in range(n):
        _body_inertia(body_real, i, ws, i)
        _inertia_times(body_real, i, ws[i], WV, tmp, 0)
        for m in range(6):
            ws[i, WP + m] = 0.0
        _cross_force(ws[i], WV, tmp, 0, ws[i], WP)
    # tip to base: U = I^A S, D = S^T U, u = tau - S^T p^A; condense onto the parent (seed 003 eq. 3.23)
    # tmp layout: U 0:36 (column-major, 6 per column), D/L 36:72 (stride 6), scale 72:78, rhs 78:84, Ia 84:120,
    # pa 120:126, c-product 126:132, scratch for the transform 132:186, 1/L_kk 186:192, D^-1 192:228 (stride 6),
    # sqrt(I^A_rr) 228:234
    for i in range(n - 1, -1, -1):
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        for col in range(nvj):
            for r in range(6):
                acc = 0.0
                for c in range(6):
                    acc += ws[i, WI + 6 * r + c] * S[i, col, c]
                tmp[6 * col + r] = acc
        for r in range(6):
            tmp[228 + r] = math.sqrt(abs(ws[i, WI + 7 * r]))
        for col in range(nvj):
            # the scale of D_cc: (sum_r |S_rc| sqrt(I_rr))^2 >= S_c^T I^A S_c (Cauchy-Schwarz, I^A PSD)
            scale = 0.0
            for r in range(6):
                scale += abs(S[i, col, r]) * tmp[228 + r]
            tmp[72 + col] = scale * scale
            for row_ in range(nvj):
                acc = 0.0
                for r in range(6):
                    acc += S[i, row_, r] * tmp[6 * col + r]
                tmp[36 + 6 * row_ + col] = acc
        # Cholesky of D in place (lower), a pivot below its scale: singular articulated inertia
        for c in range(nvj):
            piv = tmp[36 + 7 * c]
            for k in range(c):
                piv -= tmp[36 + 6 * c + k] * tmp[36 + 6 * c + k]
            if not piv > SINGULAR_RTOL * tmp[72 + c]:
                return STATUS_SINGULAR | (i << 4)
            piv = math.sqrt(piv)
            tmp[36 + 7 * c] = piv
            tmp[186 + c] = 1.0 / piv
            for r in range(c + 1, nvj):
                acc = tmp[36 + 6 * r + c]
                for k in range(c):
                    acc -= tmp[36 + 6 * r + k] * tmp[36 + 6 * c + k]
                tmp[36 + 6 * r + c] = acc * tmp[186 + c]
        # D^-1 column by column, then uD = D^-1 (tau - S^T p^A) and UD = U D^-1
        for col in range(nvj):
            for r in range(nvj):
                tmp[192 + 6 * col + r] = 0.0
            tmp[192 + 7 * col] = 1.0
            _cholesky_solve(tmp, 36, 186, nvj, 192 + 6 * col)
        for col in range(nvj):
            acc = tau[kv + col]
            for r in range(6):
                acc -= S[i, col, r] * ws[i, WP + r]
            tmp[78 + col] = acc
        for col in range(nvj):
            acc = 0.0
            for k in range(nvj):
                acc += tmp[192 + 6 * col + k] * tmp[78 + k]
            uD[i, col] = acc
        for col in range(nvj):
            for r in range(6):
                acc = 0.0
                for k in range(nvj):
                    acc += tmp[6 * k + r] * tmp[192 + 6 * k + col]
                UD[i, col, r] = acc
        p = body_int[i, PARENT]
        if p < 0:
            continue
        # I^a = I^A - U D^-1 U^T,  p^a = p^A + I^a c + U D^-1 u
        for r in range(6):
            for c in range(r, 6):  # symmetric
                acc = ws[i, WI + 6 * r + c]
                for col in range(nvj):
                    acc -= UD[i, col, r] * tmp[6 * col + c]
                tmp[84 + 6 * r + c] = acc
                tmp[84 + 6 * c + r] = acc
        for r in range(6):
            acc = ws[i, WP + r]
            for c in range(6):
                acc += tmp[84 + 6 * r + c] * ws[i, WC + c]
            for col in range(nvj):
                acc += tmp[6 * col + r] * uD[i, col]
            tmp[120 + r] = acc
        _inertia_to_parent_add(ws, i, tmp, 84, p, tmp[132:])
        _force_to_parent_add(ws, i, tmp, 120, ws[p], WP)
    # base to tip: a' = X a_P + c, vdot = D^-1 u - (U D^-1)^T a', a = a' + S vdot; the ground's a is (0; -g)
    for i in range(n):
        p = body_int[i, PARENT]
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        if p < 0:
            tmp[126] = 0.0
            tmp[127] = 0.0
            tmp[128] = 0.0
            tmp[129] = -gravity[0]
            tmp[130] = -gravity[1]
            tmp[131] = -gravity[2]
            _motion_to_child(ws, i, tmp, 126, tmp, 0)
        else:
            _motion_to_child(ws, i, ws[p], WC, tmp, 0)
        for m in range(6):
            tmp[m] += ws[i, WC + m]
        for col in range(nvj):
            acc = uD[i, col]
            for m in range(6):
                acc -= UD[i, col, m] * tmp[m]
            out[kv + col] = acc
            for m in range(6):
                tmp[m] += S[i, col, m] * acc
        for m in range(6):
            ws[i, WC + m] = tmp[m]
    return check_output(out)


@njit
def inverse_dynamics(body_int, body_real, gravity, q, v, vdot, ws, S, tmp, out):
    """tau = M vdot + h by the recursive Newton-Euler algorithm (Featherstone 2008, table 5.1), O(N)."""
    status = check_finite(q, v, vdot)
    if status:
        return status
    status = kinematics_pass(body_int, body_real, q, v, ws, S, tmp, True)
    if status:
        return status
    n = body_int.shape[0]
    for i in range(n):
        p = body_int[i, PARENT]
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        if p < 0:
            tmp[126] = 0.0
            tmp[127] = 0.0
            tmp[128] = 0.0
            tmp[129] = -gravity[0]
            tmp[130] = -gravity[1]
            tmp[131] = -gravity[2]
            _motion_to_child(ws, i, tmp, 126, tmp, 0)
        else:
            _motion_to_child(ws, i, ws[p], WC, tmp, 0)
        for m in range(6):
            acc = tmp[m] + ws[i, WC + m]
            for col in range(nvj):
                acc += S[i, col, m] * vdot[kv + col]
            ws[i, WC + m] = acc
        # f = I a + v x* I v
        _inertia_times(body_real, i, ws[i], WC, ws[i], WP)
        _inertia_times(body_real, i, ws[i], WV, tmp, 0)
        _cross_force(ws[i], WV, tmp, 0, ws[i], WP)
    for i in range(n - 1, -1, -1):
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        for col in range(nvj):
            acc = 0.0
            for m in range(6):
                acc += S[i, col, m] * ws[i, WP + m]
            out[kv + col] = acc
        p = body_int[i, PARENT]
        if p >= 0:
            _force_to_parent_add(ws, i, ws[i], WP, ws[p], WP)
    return check_output(out)


@njit
def mass_matrix(body_int, body_real, q, ws, S, tmp, out):
    """M(q) (nv, nv) into out by the composite-rigid-body algorithm (Featherstone 2008, table 6.2).

    out must be zero on entry (entries of unrelated branches are not written).
    """
    status = check_finite(q, q[:0], q[:0])
    if status:
        return status
    status = kinematics_pass(body_int, body_real, q, q, ws, S, tmp, False)
    if status:
        return status
    n = body_int.shape[0]
    for i in range(n):
        _body_inertia(body_real, i, ws, i)
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        if p >= 0:
            _inertia_to_parent_add(ws, i, ws[i], WI, p, tmp[132:])
    # F = I^C S in tmp[0:36] (6 per column), carried to the base: M_ji = S_j^T F
    for i in range(n):
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        for col in range(nvj):
            for r in range(6):
                acc = 0.0
                for c in range(6):
                    acc += ws[i, WI + 6 * r + c] * S[i, col, c]
                tmp[6 * col + r] = acc
        for row in range(nvj):
            for col in range(nvj):
                acc = 0.0
                for m in range(6):
                    acc += S[i, row, m] * tmp[6 * col + m]
                out[kv + row, kv + col] = acc
        j = i
        while body_int[j, PARENT] >= 0:
            for col in range(nvj):
                for m in range(6):
                    tmp[36 + m] = 0.0
                _force_to_parent_add(ws, j, tmp, 6 * col, tmp, 36)
                for m in range(6):
                    tmp[6 * col + m] = tmp[36 + m]
            j = body_int[j, PARENT]
            kj = body_int[j, VIDX]
            for row in range(body_int[j, NVJ]):
                for col in range(nvj):
                    acc = 0.0
                    for m in range(6):
                        acc += S[j, row, m] * tmp[6 * col + m]
                    out[kj + row, kv + col] = acc
                    out[kv + col, kj + row] = acc
    for i in range(out.shape[0]):
        if not math.isfinite(out[i, i]):
            return check_output(out[i])
    return STATUS_OK


@njit
def poses(body_int, body_real, q, v, ws, S, tmp, rot, pos, omega, vel, with_velocity):
    """Body-to-ground rotations rot (nbodies, 3, 3), origins pos (nbodies, 3) and, with ``with_velocity``, the
    angular velocities omega and origin velocities vel (nbodies, 3), ground axes."""
    status = check_finite(q, v, v[:0])
    if status:
        return status
    status = kinematics_pass(body_int, body_real, q, v, ws, S, tmp, with_velocity)
    if status:
        return status
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        for r in range(3):
            if p < 0:
                for c in range(3):
                    rot[i, r, c] = ws[i, WR + 3 * r + c]
                pos[i, r] = ws[i, WT + r]
            else:
                for c in range(3):
                    rot[i, r, c] = (rot[p, r, 0] * ws[i, WR + c] + rot[p, r, 1] * ws[i, WR + 3 + c]
                                    + rot[p, r, 2] * ws[i, WR + 6 + c])
                pos[i, r] = (pos[p, r] + rot[p, r, 0] * ws[i, WT] + rot[p, r, 1] * ws[i, WT + 1]
                             + rot[p, r, 2] * ws[i, WT + 2])
        if with_velocity:
            for r in range(3):
                omega[i, r] = rot[i, r, 0] * ws[i, WV] + rot[i, r, 1] * ws[i, WV + 1] + rot[i, r, 2] * ws[i, WV + 2]
                vel[i, r] = (rot[i, r, 0] * ws[i, WV + 3] + rot[i, r, 1] * ws[i, WV + 4]
                             + rot[i, r, 2] * ws[i, WV + 5])
    return STATUS_OK


@njit
def energy(body_int, body_real, gravity, q, v, ws, S, tmp, rot, pos, omega, vel, pair):
    """pair = (T, V): kinetic energy sum v_i . I_i v_i / 2 and gravity potential -sum g . (m_i p_i + R_i h_i)."""
    status = poses(body_int, body_real, q, v, ws, S, tmp, rot, pos, omega, vel, True)
    if status:
        return status
    kinetic = 0.0
    potential = 0.0
    for i in range(body_int.shape[0]):
        _inertia_times(body_real, i, ws[i], WV, tmp, 0)
        for m in range(6):
            kinetic += 0.5 * ws[i, WV + m] * tmp[m]
        for r in range(3):
            moment = (body_real[i, MASS] * pos[i, r] + rot[i, r, 0] * body_real[i, MCOM]
                      + rot[i, r, 1] * body_real[i, MCOM + 1] + rot[i, r, 2] * body_real[i, MCOM + 2])
            potential -= gravity[r] * moment
    pair[0] = kinetic
    pair[1] = potential
    return check_output(pair)
