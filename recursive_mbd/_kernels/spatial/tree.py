"""Recursive kernels on a tree of rigid bodies in three dimensions.

Spatial algebra in body coordinates (Featherstone, Rigid Body Dynamics Algorithms, 2008, ch. 2): a body's motion
is the 6-vector v = (omega; v_O), its angular velocity and the velocity of its frame origin O, both in body axes;
a force is (n_O; f), the moment about O and the force. A joint to the parent P is described by the child-to-parent
rotation R = R0 R_j(q) and the child origin r in the parent frame, so that

    X v_P = (R^T omega_P; R^T (v_P + omega_P x r))        (motion, parent to child coordinates)
    X^T f = (R n + r x (R f); R f)                         (force, child to parent coordinates)

and by its motion subspace S (6 x nv_joint, child coordinates; ``spatial.layout`` and ``Model3D`` for the joints):

    v_i = X_i v_P + S_i vj,      a_i = X_i a_P + S_i vj' + c_i,      c_i = S_i' vj + v_i x S_i vj

with S_i' the rate of S's components in the child frame (non-zero for universal, planar and free joints only).

Forward dynamics is the articulated-body algorithm (Featherstone 2008, ch. 7, table 7.1): the spatial form of the
mass and force condensation tip to base, accelerations base to tip, of the relative-coordinate lecture (eqs. 3.21-3.23:
M^ and Q^ become the articulated inertia I^A and bias force p^A, G becomes S). Gravity enters as a base acceleration -g
(Featherstone 2008, sec. 5.3), so the body accelerations of the last pass are offset by -g; qdd is exact.

All kernels are pure functions of arrays: the packed model (``body_int``, ``body_real``, ``gravity``), the state,
a workspace (``ws``, ``S``, ``UD``, ``uD``, ``tmp``, allocated once per model) and preallocated outputs. They
return a status: 0, a ``layout`` status (``kind | index << 4``), or -(body + 1) for a quaternion whose norm is off
by more than ``QUATERNION_TOL`` (an in-tolerance quaternion is normalised on the fly; q is never written).

numba's cache checks a kernel's own source file only: a cached caller in another module (``spatial_loops``,
``spatial.system``) keeps the machine code of these kernels it was compiled with, and one process that loads an
old caller beside new kernels can mix the two (seen: ``unit_force_responses`` of one version on the workspace that
``forward_dynamics`` of another left, wrong loop responses). When the workspace contract between these kernels
changes, clear the callers' ``__pycache__`` (CI starts from an empty cache).
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import STATUS_OK, STATUS_SINGULAR
from ..planar.tree import check_finite, check_output
from ..trig import sincos
from .layout import (
    A1,
    A2,
    CP,
    CYLINDRICAL,
    FREE,
    IC,
    JTYPE,
    MASS,
    MCOM,
    N_PACKED,
    NVJ,
    PA,
    PARENT,
    PB,
    PC,
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
    WCHILD,
    WD,
    WDINV,
    WI,
    WK,
    WP,
    WR,
    WT,
    WU,
    WUD,
    WV,
)

# as in planar.tree: FMA contraction only (the NaN tests must survive), IEEE division, statuses instead of raising
njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False)
# steps of the forward-dynamics passes shared by several kernels: inlined in numba's IR (as separate functions
# LLVM left them out of line and the revolute chain's pass was 15 % slower)
inline_njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False, inline="always")

TMP_SIZE = 320  # scratch floats a kernel call needs (tmp)


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


@inline_njit
def _joint_axis(body_real, i):
    """(ax, ay, az, cpx, cpy, cpz): body i's joint axis a (joint frame) and the child point cp."""
    return (body_real[i, A1], body_real[i, A1 + 1], body_real[i, A1 + 2], body_real[i, CP], body_real[i, CP + 1],
            body_real[i, CP + 2])


@njit
def _revolute_column(body_real, i):
    """A revolute joint's motion subspace S = (a; cp x a), child coordinates (``_column`` with l = 0), as six
    numbers: forward dynamics forms it where it is needed instead of storing it (48 bytes a body)."""
    ax, ay, az, cpx, cpy, cpz = _joint_axis(body_real, i)
    return ax, ay, az, cpy * az - cpz * ay, cpz * ax - cpx * az, cpx * ay - cpy * ax


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
    ax, ay, az, cpx, cpy, cpz = _joint_axis(body_real, i)
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


@inline_njit
def motion_at(m, o, rx, ry, rz):
    """(wx, wy, wz, lx, ly, lz): the angular part w of the motion m[o:o+6] = (w; u) and its linear part at the
    point r (the same axes), u + w x r. Inlined: its arithmetic takes the caller's compile options."""
    wx = m[o]
    wy = m[o + 1]
    wz = m[o + 2]
    return wx, wy, wz, m[o + 3] + wy * rz - wz * ry, m[o + 4] + wz * rx - wx * rz, m[o + 5] + wx * ry - wy * rx


@njit
def _motion_to_child(ws, i, src, s, tmp, o):
    """tmp[o:o+6] = X_i m, m = src[s:s+6] a motion in the parent's coordinates."""
    wx, wy, wz, lx, ly, lz = motion_at(src, s, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2])
    for m in range(3):
        tmp[o + m] = ws[i, WR + m] * wx + ws[i, WR + 3 + m] * wy + ws[i, WR + 6 + m] * wz
        tmp[o + 3 + m] = ws[i, WR + m] * lx + ws[i, WR + 3 + m] * ly + ws[i, WR + 6 + m] * lz


@njit
def _force_to_parent_add(ws, i, f, o, dst, d):
    """dst[d:d+6] += X_i^T f, f = f[o:o+6] a force in body i's coordinates."""
    n0, n1, n2, f0, f1, f2 = _force_in_parent(ws, i, f[o], f[o + 1], f[o + 2], f[o + 3], f[o + 4], f[o + 5])
    dst[d] += n0
    dst[d + 1] += n1
    dst[d + 2] += n2
    dst[d + 3] += f0
    dst[d + 4] += f1
    dst[d + 5] += f2


@inline_njit
def _force_to_parent(ws, i, p, nx, ny, nz, fx, fy, fz):
    """ws[p, WP:WP+6] += X_i^T f, f = (nx, ny, nz; fx, fy, fz) a force in body i's coordinates."""
    n0, n1, n2, f0, f1, f2 = _force_in_parent(ws, i, nx, ny, nz, fx, fy, fz)
    ws[p, WP] += n0
    ws[p, WP + 1] += n1
    ws[p, WP + 2] += n2
    ws[p, WP + 3] += f0
    ws[p, WP + 4] += f1
    ws[p, WP + 5] += f2


@inline_njit
def _force_in_parent(ws, i, nx, ny, nz, fx, fy, fz):
    """X_i^T f = (R n + r x R f; R f) for a force f = (n; f) in body i's coordinates, as 6 numbers."""
    gx = ws[i, WR] * fx + ws[i, WR + 1] * fy + ws[i, WR + 2] * fz
    gy = ws[i, WR + 3] * fx + ws[i, WR + 4] * fy + ws[i, WR + 5] * fz
    gz = ws[i, WR + 6] * fx + ws[i, WR + 7] * fy + ws[i, WR + 8] * fz
    mx = ws[i, WR] * nx + ws[i, WR + 1] * ny + ws[i, WR + 2] * nz
    my = ws[i, WR + 3] * nx + ws[i, WR + 4] * ny + ws[i, WR + 5] * nz
    mz = ws[i, WR + 6] * nx + ws[i, WR + 7] * ny + ws[i, WR + 8] * nz
    rx = ws[i, WT]
    ry = ws[i, WT + 1]
    rz = ws[i, WT + 2]
    return mx + ry * gz - rz * gy, my + rz * gx - rx * gz, mz + rx * gy - ry * gx, gx, gy, gz


@njit
def _origin_inertia(body_real, i):
    """The rotational inertia of body i about its frame's origin, body axes (xx, yy, zz, xy, xz, yz): the parallel
    axis theorem on the packed inertia about the centre of mass, I_O = I_C + m (|c|^2 1 - c c^T) =
    I_C + (|h|^2 1 - h h^T) / m with h = m c (MCOM); a massless body has h = 0 and I_O = I_C."""
    mass = body_real[i, MASS]
    hx = body_real[i, MCOM]
    hy = body_real[i, MCOM + 1]
    hz = body_real[i, MCOM + 2]
    inv = 1.0 / mass if mass > 0.0 else 0.0
    return (body_real[i, IC] + (hy * hy + hz * hz) * inv, body_real[i, IC + 1] + (hx * hx + hz * hz) * inv,
            body_real[i, IC + 2] + (hx * hx + hy * hy) * inv, body_real[i, IC + 3] - hx * hy * inv,
            body_real[i, IC + 4] - hx * hz * inv, body_real[i, IC + 5] - hy * hz * inv)


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
    ixx, iyy, izz, ixy, ixz, iyz = _origin_inertia(body_real, i)
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
    """ws[j, WI:WI+21] = the spatial inertia of body i about its origin, packed: [[I_O, [h]x], [[h]x^T, m 1]]."""
    ixx, iyy, izz, ixy, ixz, iyz = _origin_inertia(body_real, i)
    _store_inertia(ws, j, body_real[i, MASS], body_real[i, MCOM], body_real[i, MCOM + 1], body_real[i, MCOM + 2], ixx,
                   iyy, izz, ixy, ixz, iyz)


@njit
def _store_inertia(ws, j, m, hx, hy, hz, ixx, iyy, izz, ixy, ixz, iyz):
    """ws[j, WI:WI+21] = [[I_O, [h]x], [[h]x^T, m 1]] packed, from m, h = m c and I_O (xx, yy, zz, xy, xz, yz)."""
    ws[j, WI + PA] = ixx
    ws[j, WI + PA + 1] = iyy
    ws[j, WI + PA + 2] = izz
    ws[j, WI + PA + 3] = ixy
    ws[j, WI + PA + 4] = ixz
    ws[j, WI + PA + 5] = iyz
    b = WI + PB
    ws[j, b] = 0.0
    ws[j, b + 1] = -hz
    ws[j, b + 2] = hy
    ws[j, b + 3] = hz
    ws[j, b + 4] = 0.0
    ws[j, b + 5] = -hx
    ws[j, b + 6] = -hy
    ws[j, b + 7] = hx
    ws[j, b + 8] = 0.0
    ws[j, WI + PC] = m
    ws[j, WI + PC + 1] = m
    ws[j, WI + PC + 2] = m
    ws[j, WI + PC + 3] = 0.0
    ws[j, WI + PC + 4] = 0.0
    ws[j, WI + PC + 5] = 0.0


@njit
def _unpack_inertia(src, s, out, o):
    """out[o:o+36] = the full 6x6 (row-major) of the packed symmetric inertia src[s:s+21]."""
    for blk in range(2):
        e = s + (PA if blk == 0 else PC)
        d = o + 21 * blk  # the top-left block starts at 0, the bottom-right one at 6 * 3 + 3
        out[d] = src[e]
        out[d + 7] = src[e + 1]
        out[d + 14] = src[e + 2]
        out[d + 1] = out[d + 6] = src[e + 3]
        out[d + 2] = out[d + 12] = src[e + 4]
        out[d + 8] = out[d + 13] = src[e + 5]
    for r in range(3):
        for c in range(3):
            out[o + 6 * r + 3 + c] = out[o + 6 * (3 + c) + r] = src[s + PB + 3 * r + c]


@inline_njit
def _inertia_times_subspace(ws, i, S, nvj, tmp):
    """U = I S into tmp[0:6 nvj] (6 per column) for the inertia stored in ws[i, WI:] (unpacked into tmp[234:270])
    and the nvj columns of body i's motion subspace S[i]: the first product of D = S^T I S."""
    _unpack_inertia(ws[i], WI, tmp, 234)
    for col in range(nvj):
        for r in range(6):
            acc = 0.0
            for c in range(6):
                acc += tmp[234 + 6 * r + c] * S[i, col, c]
            tmp[6 * col + r] = acc


@njit
def _pack_inertia(full, o, dst, d):
    """dst[d:d+21] = the packed form of the symmetric 6x6 full[o:o+36] (its upper triangle is read)."""
    for blk in range(2):
        e = d + (PA if blk == 0 else PC)
        f = o + 21 * blk
        dst[e] = full[f]
        dst[e + 1] = full[f + 7]
        dst[e + 2] = full[f + 14]
        dst[e + 3] = full[f + 1]
        dst[e + 4] = full[f + 2]
        dst[e + 5] = full[f + 8]
    for r in range(3):
        for c in range(3):
            dst[d + PB + 3 * r + c] = full[o + 6 * r + 3 + c]


@njit
def _rotate_symmetric(r00, r01, r02, r10, r11, r12, r20, r21, r22, xx, yy, zz, xy, xz, yz):
    """R M R^T of a symmetric 3x3 M (xx, yy, zz, xy, xz, yz), returned in the same order."""
    # T = R M (rows of R times M), then (T R^T)_rc = T_r . R_c
    t00 = r00 * xx + r01 * xy + r02 * xz
    t01 = r00 * xy + r01 * yy + r02 * yz
    t02 = r00 * xz + r01 * yz + r02 * zz
    t10 = r10 * xx + r11 * xy + r12 * xz
    t11 = r10 * xy + r11 * yy + r12 * yz
    t12 = r10 * xz + r11 * yz + r12 * zz
    t20 = r20 * xx + r21 * xy + r22 * xz
    t21 = r20 * xy + r21 * yy + r22 * yz
    t22 = r20 * xz + r21 * yz + r22 * zz
    return (t00 * r00 + t01 * r01 + t02 * r02, t10 * r10 + t11 * r11 + t12 * r12, t20 * r20 + t21 * r21 + t22 * r22,
            t00 * r10 + t01 * r11 + t02 * r12, t00 * r20 + t01 * r21 + t02 * r22, t10 * r20 + t11 * r21 + t12 * r22)


@njit
def _inertia_transform_add(ws, i, rx, ry, rz, src, s, dst, d):
    """dst[d:d+21] += X^T I X (packed), I = src[s:s+21] packed about a point of body i at r = (rx, ry, rz) in the
    parent frame, body i's axes (R = ws[i, WR], child-to-parent); the result is about the parent origin
    (``_transformed_inertia``)."""
    (axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz,
     cyz) = _transformed_inertia(ws, i, rx, ry, rz, src[s + PA], src[s + PA + 1], src[s + PA + 2], src[s + PA + 3],
                                 src[s + PA + 4], src[s + PA + 5], src[s + PB], src[s + PB + 1], src[s + PB + 2],
                                 src[s + PB + 3], src[s + PB + 4], src[s + PB + 5], src[s + PB + 6], src[s + PB + 7],
                                 src[s + PB + 8], src[s + PC], src[s + PC + 1], src[s + PC + 2], src[s + PC + 3],
                                 src[s + PC + 4], src[s + PC + 5])
    dst[d + PA] += axx
    dst[d + PA + 1] += ayy
    dst[d + PA + 2] += azz
    dst[d + PA + 3] += axy
    dst[d + PA + 4] += axz
    dst[d + PA + 5] += ayz
    dst[d + PB] += b00
    dst[d + PB + 1] += b01
    dst[d + PB + 2] += b02
    dst[d + PB + 3] += b10
    dst[d + PB + 4] += b11
    dst[d + PB + 5] += b12
    dst[d + PB + 6] += b20
    dst[d + PB + 7] += b21
    dst[d + PB + 8] += b22
    dst[d + PC] += cxx
    dst[d + PC + 1] += cyy
    dst[d + PC + 2] += czz
    dst[d + PC + 3] += cxy
    dst[d + PC + 4] += cxz
    dst[d + PC + 5] += cyz


@inline_njit
def _transformed_inertia(ws, i, rx, ry, rz, sxx, syy, szz, sxy, sxz, syz, s00, s01, s02, s10, s11, s12, s20, s21, s22,
                         qxx, qyy, qzz, qxy, qxz, qyz):
    """X^T I X packed (21 numbers), I = [[A, B], [B^T, C]] packed (A = s.., B = s00.., C = q..) about a point of body
    i at r = (rx, ry, rz) in the parent frame, body i's axes (R = ws[i, WR], child-to-parent): the inertia about
    the parent origin, parent axes.

    Featherstone 2008 sec. 2.8 / ch. 7 efficiency notes: with A', B', C' the blocks of I rotated to the parent axes
    (R A R^T, ...) and [r] the cross-product matrix of r, X^T I X = [[A' - B'[r] - (B'[r])^T - [r]C'[r],
    B' + [r]C'], [.., C']]: 3x3 rotations and cross products, never a 6x6 product.
    """
    r00 = ws[i, WR]
    r01 = ws[i, WR + 1]
    r02 = ws[i, WR + 2]
    r10 = ws[i, WR + 3]
    r11 = ws[i, WR + 4]
    r12 = ws[i, WR + 5]
    r20 = ws[i, WR + 6]
    r21 = ws[i, WR + 7]
    r22 = ws[i, WR + 8]
    axx, ayy, azz, axy, axz, ayz = _rotate_symmetric(r00, r01, r02, r10, r11, r12, r20, r21, r22, sxx, syy, szz, sxy,
                                                     sxz, syz)
    cxx, cyy, czz, cxy, cxz, cyz = _rotate_symmetric(r00, r01, r02, r10, r11, r12, r20, r21, r22, qxx, qyy, qzz, qxy,
                                                     qxz, qyz)
    # B' = R B R^T: T = R B, then B'_rc = T_r . R_c
    t00 = r00 * s00 + r01 * s10 + r02 * s20
    t01 = r00 * s01 + r01 * s11 + r02 * s21
    t02 = r00 * s02 + r01 * s12 + r02 * s22
    t10 = r10 * s00 + r11 * s10 + r12 * s20
    t11 = r10 * s01 + r11 * s11 + r12 * s21
    t12 = r10 * s02 + r11 * s12 + r12 * s22
    t20 = r20 * s00 + r21 * s10 + r22 * s20
    t21 = r20 * s01 + r21 * s11 + r22 * s21
    t22 = r20 * s02 + r21 * s12 + r22 * s22
    b00 = t00 * r00 + t01 * r01 + t02 * r02
    b01 = t00 * r10 + t01 * r11 + t02 * r12
    b02 = t00 * r20 + t01 * r21 + t02 * r22
    b10 = t10 * r00 + t11 * r01 + t12 * r02
    b11 = t10 * r10 + t11 * r11 + t12 * r12
    b12 = t10 * r20 + t11 * r21 + t12 * r22
    b20 = t20 * r00 + t21 * r01 + t22 * r02
    b21 = t20 * r10 + t21 * r11 + t22 * r12
    b22 = t20 * r20 + t21 * r21 + t22 * r22
    # E = B'[r]: each row b of B' becomes b x r
    e00 = b01 * rz - b02 * ry
    e01 = b02 * rx - b00 * rz
    e02 = b00 * ry - b01 * rx
    e10 = b11 * rz - b12 * ry
    e11 = b12 * rx - b10 * rz
    e12 = b10 * ry - b11 * rx
    e20 = b21 * rz - b22 * ry
    e21 = b22 * rx - b20 * rz
    e22 = b20 * ry - b21 * rx
    # G = [r]C': each column c of C' becomes r x c (C' symmetric: its columns are its rows)
    g00 = ry * cxz - rz * cxy
    g10 = rz * cxx - rx * cxz
    g20 = rx * cxy - ry * cxx
    g01 = ry * cyz - rz * cyy
    g11 = rz * cxy - rx * cyz
    g21 = rx * cyy - ry * cxy
    g02 = ry * czz - rz * cyz
    g12 = rz * cxz - rx * czz
    g22 = rx * cyz - ry * cxz
    # H = G[r] = [r]C'[r] (symmetric): each row g of G becomes g x r
    h00 = g01 * rz - g02 * ry
    h11 = g12 * rx - g10 * rz
    h22 = g20 * ry - g21 * rx
    h01 = g02 * rx - g00 * rz
    h02 = g00 * ry - g01 * rx
    h12 = g10 * ry - g11 * rx
    return (axx - 2.0 * e00 - h00, ayy - 2.0 * e11 - h11, azz - 2.0 * e22 - h22, axy - e01 - e10 - h01,
            axz - e02 - e20 - h02, ayz - e12 - e21 - h12, b00 + g00, b01 + g01, b02 + g02, b10 + g10, b11 + g11,
            b12 + g12, b20 + g20, b21 + g21, b22 + g22, cxx, cyy, czz, cxy, cxz, cyz)


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def kinematics_pass(body_int, body_real, q, v, ws, S, tmp, with_velocity):
    """Base to tip: R, r (ws WR, WT), S, and with ``with_velocity`` the body velocity (WV) and bias acceleration
    c = S' vj + v x S vj (WC). Returns STATUS_OK or -(body + 1) for a quaternion off unit norm."""
    return _kinematics(body_int, body_real, q, v, ws, S, tmp, with_velocity)


# ---- specialised joint steps, kept for speed (benchmarks/spatial_kernels.py): ``_spherical_kinematics`` /
# ``_revolute_kinematics``, ``_body_bias_force``, ``_spherical_condense`` / ``_revolute_condense``,
# ``_spherical_unit_condense`` / ``_revolute_unit_condense`` and ``_spherical_accelerate*`` / ``_revolute_accelerate*``
# mirror the general steps (``_general_kinematics``, ``_inertia_times`` with ``_cross_force``, ``_general_condense``,
# the general branch of ``unit_force_responses``, ``_joint_accelerate``) in registers, with the joint's subspace
# known, and ``_spherical_condense`` writes ``_inertia_transform_add``'s arithmetic out again: their repetition is
# deliberate. They are inlined into the passes of ``forward_dynamics``, which the time loops call. Measured again
# (a first call on a model of other joints, and the fastest calls, same loaded machine): with none of these steps
# inlined the first compile takes 18.5 s of CPU against 21.8 s, and calls are 35 to 50 % slower (a random tree of
# 100 bodies 168 against 113 ns a body; chains of 1e4 spherical joints 145 against 106, revolute 184 against 122).
# rm.forward_dynamics on a tree of spherical and revolute joints only takes ``rotary`` instead, which inlines
# nothing of this.
@inline_njit
def _store_pose(body_real, i, ws, j00, j01, j02, j10, j11, j12, j20, j21, j22):
    """R = R0 R_j and r = pp - R cp into ws[i, WR], ws[i, WT] for a joint with no translation (spherical,
    revolute), R_j = (j00, ..., j22) row-major."""
    cpx = body_real[i, CP]
    cpy = body_real[i, CP + 1]
    cpz = body_real[i, CP + 2]
    for r in range(3):
        a0 = body_real[i, R0 + 3 * r]
        a1 = body_real[i, R0 + 3 * r + 1]
        a2 = body_real[i, R0 + 3 * r + 2]
        m0 = a0 * j00 + a1 * j10 + a2 * j20
        m1 = a0 * j01 + a1 * j11 + a2 * j21
        m2 = a0 * j02 + a1 * j12 + a2 * j22
        ws[i, WR + 3 * r] = m0
        ws[i, WR + 3 * r + 1] = m1
        ws[i, WR + 3 * r + 2] = m2
        ws[i, WT + r] = body_real[i, PP + r] - (m0 * cpx + m1 * cpy + m2 * cpz)


@inline_njit
def _store_velocity(ws, i, p, jx, jy, jz, lx, ly, lz):
    """Body i's velocity v = X v_P + vJ (WV) and bias acceleration c = v x vJ (WC), for a joint velocity
    vJ = (jx, jy, jz; lx, ly, lz) whose subspace is constant in the child frame (S' = 0: spherical, revolute)."""
    if p < 0:
        ox = jx
        oy = jy
        oz = jz
        ux = lx
        uy = ly
        uz = lz
    else:
        pwx, pwy, pwz, px, py, pz = motion_at(ws[p], WV, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2])
        ox = ws[i, WR] * pwx + ws[i, WR + 3] * pwy + ws[i, WR + 6] * pwz + jx
        oy = ws[i, WR + 1] * pwx + ws[i, WR + 4] * pwy + ws[i, WR + 7] * pwz + jy
        oz = ws[i, WR + 2] * pwx + ws[i, WR + 5] * pwy + ws[i, WR + 8] * pwz + jz
        ux = ws[i, WR] * px + ws[i, WR + 3] * py + ws[i, WR + 6] * pz + lx
        uy = ws[i, WR + 1] * px + ws[i, WR + 4] * py + ws[i, WR + 7] * pz + ly
        uz = ws[i, WR + 2] * px + ws[i, WR + 5] * py + ws[i, WR + 8] * pz + lz
    ws[i, WV] = ox
    ws[i, WV + 1] = oy
    ws[i, WV + 2] = oz
    ws[i, WV + 3] = ux
    ws[i, WV + 4] = uy
    ws[i, WV + 5] = uz
    ws[i, WC] = oy * jz - oz * jy
    ws[i, WC + 1] = oz * jx - ox * jz
    ws[i, WC + 2] = ox * jy - oy * jx
    ws[i, WC + 3] = oy * lz - oz * ly + uy * jz - uz * jy
    ws[i, WC + 4] = oz * lx - ox * lz + uz * jx - ux * jz
    ws[i, WC + 5] = ox * ly - oy * lx + ux * jy - uy * jx


@inline_njit
def _spherical_kinematics(body_real, q, v, i, k, kv, p, ws, with_velocity):
    """``_kinematics`` for a spherical joint, in registers (S = (e_c; cp x e_c) is not stored). Returns False for a
    quaternion off unit norm."""
    w = q[k]
    x = q[k + 1]
    y = q[k + 2]
    z = q[k + 3]
    norm2 = w * w + x * x + y * y + z * z
    norm = math.sqrt(norm2)
    if not abs(norm - 1.0) <= QUATERNION_TOL:
        return False
    # R_j of the normalised quaternion: the products scaled by 2 / |q|^2
    s = 2.0 / norm2
    xx = s * x * x
    yy = s * y * y
    zz = s * z * z
    xy = s * x * y
    xz = s * x * z
    yz = s * y * z
    wx = s * w * x
    wy = s * w * y
    wz = s * w * z
    _store_pose(body_real, i, ws, 1.0 - (yy + zz), xy - wz, xz + wy, xy + wz, 1.0 - (xx + zz), yz - wx, xz - wy,
                yz + wx, 1.0 - (xx + yy))
    if not with_velocity:
        return True
    # joint velocity (wJ; cp x wJ)
    cpx = body_real[i, CP]
    cpy = body_real[i, CP + 1]
    cpz = body_real[i, CP + 2]
    jx = v[kv]
    jy = v[kv + 1]
    jz = v[kv + 2]
    _store_velocity(ws, i, p, jx, jy, jz, cpy * jz - cpz * jy, cpz * jx - cpx * jz, cpx * jy - cpy * jx)
    return True


@inline_njit
def _revolute_kinematics(body_real, q, v, i, k, kv, p, ws, with_velocity):
    """``_kinematics`` for a revolute joint, in registers (its S = (a; cp x a) is not stored): R_j by Rodrigues'
    formula with the inline sine and cosine (``_kernels.trig``), then R, r and with ``with_velocity`` v and c as a
    spherical joint's. Every kernel's pass goes through here, so that they all see the same R and r."""
    ax, ay, az, cpx, cpy, cpz = _joint_axis(body_real, i)
    sn, cs = sincos(q[k])
    t = 1.0 - cs
    txy = t * ax * ay
    txz = t * ax * az
    tyz = t * ay * az
    _store_pose(body_real, i, ws, cs + t * ax * ax, txy - sn * az, txz + sn * ay, txy + sn * az, cs + t * ay * ay,
                tyz - sn * ax, txz - sn * ay, tyz + sn * ax, cs + t * az * az)
    if not with_velocity:
        return
    rate = v[kv]
    _store_velocity(ws, i, p, ax * rate, ay * rate, az * rate, (cpy * az - cpz * ay) * rate,
                    (cpz * ax - cpx * az) * rate, (cpx * ay - cpy * ax) * rate)


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def _kinematics(body_int, body_real, q, v, ws, S, tmp, with_velocity):
    """``kinematics_pass``: every joint's S written; spherical and revolute joints by the steps forward dynamics
    takes (the same R, r, v, c)."""
    for i in range(body_int.shape[0]):
        if body_int[i, JTYPE] == SPHERICAL:
            if not _spherical_kinematics(body_real, q, v, i, body_int[i, QIDX], body_int[i, VIDX],
                                         body_int[i, PARENT], ws, with_velocity):
                return -(i + 1)
            cpx = body_real[i, CP]
            cpy = body_real[i, CP + 1]
            cpz = body_real[i, CP + 2]
            _column(S, i, 0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
            _column(S, i, 1, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
            _column(S, i, 2, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, cpx, cpy, cpz)
        elif body_int[i, JTYPE] == REVOLUTE:
            _revolute_kinematics(body_real, q, v, i, body_int[i, QIDX], body_int[i, VIDX], body_int[i, PARENT], ws,
                                 with_velocity)
            s0, s1, s2, s3, s4, s5 = _revolute_column(body_real, i)
            S[i, 0, 0] = s0
            S[i, 0, 1] = s1
            S[i, 0, 2] = s2
            S[i, 0, 3] = s3
            S[i, 0, 4] = s4
            S[i, 0, 5] = s5
        elif not _general_kinematics(body_int, body_real, q, v, i, ws, S, tmp, with_velocity):
            return -(i + 1)
    return STATUS_OK


@njit
def _forward_kinematics(body_int, body_real, q, v, ws, S, tmp):
    """The kinematics pass of ``forward_dynamics``, base to tip: R, r, v, c of every body (spherical and revolute
    joints in registers, their S not written), then its bias force v x* I v (WP), and its WCHILD flag cleared
    (``spatial.layout``). Returns STATUS_OK or -(body + 1) for a quaternion off unit norm."""
    for i in range(body_int.shape[0]):
        jt = body_int[i, JTYPE]
        if jt == SPHERICAL:
            if not _spherical_kinematics(body_real, q, v, i, body_int[i, QIDX], body_int[i, VIDX],
                                         body_int[i, PARENT], ws, True):
                return -(i + 1)
        elif jt == REVOLUTE:
            _revolute_kinematics(body_real, q, v, i, body_int[i, QIDX], body_int[i, VIDX], body_int[i, PARENT], ws,
                                 True)
        elif not _general_kinematics(body_int, body_real, q, v, i, ws, S, tmp, np.bool_(True)):
            return -(i + 1)
        _body_bias_force(body_real, i, ws)
        ws[i, WCHILD] = 0.0
    return STATUS_OK


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def _general_kinematics(body_int, body_real, q, v, i, ws, S, tmp, with_velocity):
    """R, r, S and with ``with_velocity`` v and c of body i, any joint (``joint_kinematics``). Returns False for a
    quaternion off unit norm."""
    if not joint_kinematics(body_int, body_real, q, i, S, tmp):
        return False
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
        return True
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
    return True


@inline_njit
def _body_bias_force(body_real, i, ws):
    """ws[i, WP:WP+6] = v x* I_i v, v = ws[i, WV:WV+6] (``_inertia_times`` then ``_cross_force``, in registers)."""
    mass = body_real[i, MASS]
    hx = body_real[i, MCOM]
    hy = body_real[i, MCOM + 1]
    hz = body_real[i, MCOM + 2]
    wx = ws[i, WV]
    wy = ws[i, WV + 1]
    wz = ws[i, WV + 2]
    ux = ws[i, WV + 3]
    uy = ws[i, WV + 4]
    uz = ws[i, WV + 5]
    ixx, iyy, izz, ixy, ixz, iyz = _origin_inertia(body_real, i)
    nx = ixx * wx + ixy * wy + ixz * wz + hy * uz - hz * uy
    ny = ixy * wx + iyy * wy + iyz * wz + hz * ux - hx * uz
    nz = ixz * wx + iyz * wy + izz * wz + hx * uy - hy * ux
    fx = mass * ux + wy * hz - wz * hy
    fy = mass * uy + wz * hx - wx * hz
    fz = mass * uz + wx * hy - wy * hx
    ws[i, WP] = wy * nz - wz * ny + uy * fz - uz * fy
    ws[i, WP + 1] = wz * nx - wx * nz + uz * fx - ux * fz
    ws[i, WP + 2] = wx * ny - wy * nx + ux * fy - uy * fx
    ws[i, WP + 3] = wy * fz - wz * fy
    ws[i, WP + 4] = wz * fx - wx * fz
    ws[i, WP + 5] = wx * fy - wy * fx


@inline_njit
def _articulated_inertia(body_real, i, ws):
    """Body i's articulated inertia I^A, packed (21 numbers: A, B, C as ``spatial.layout`` PA, PB, PC): its own
    inertia about its origin plus the condensed inertias its children stored in ws[i, WI] (none while WCHILD is
    clear: those slots then hold stale numbers, its velocity among them)."""
    mass = body_real[i, MASS]
    hx = body_real[i, MCOM]
    hy = body_real[i, MCOM + 1]
    hz = body_real[i, MCOM + 2]
    axx, ayy, azz, axy, axz, ayz = _origin_inertia(body_real, i)
    b00 = 0.0
    b01 = -hz
    b02 = hy
    b10 = hz
    b11 = 0.0
    b12 = -hx
    b20 = -hy
    b21 = hx
    b22 = 0.0
    cxx = mass
    cyy = mass
    czz = mass
    cxy = 0.0
    cxz = 0.0
    cyz = 0.0
    if ws[i, WCHILD] != 0.0:
        axx += ws[i, WI + PA]
        ayy += ws[i, WI + PA + 1]
        azz += ws[i, WI + PA + 2]
        axy += ws[i, WI + PA + 3]
        axz += ws[i, WI + PA + 4]
        ayz += ws[i, WI + PA + 5]
        b00 += ws[i, WI + PB]
        b01 += ws[i, WI + PB + 1]
        b02 += ws[i, WI + PB + 2]
        b10 += ws[i, WI + PB + 3]
        b11 += ws[i, WI + PB + 4]
        b12 += ws[i, WI + PB + 5]
        b20 += ws[i, WI + PB + 6]
        b21 += ws[i, WI + PB + 7]
        b22 += ws[i, WI + PB + 8]
        cxx += ws[i, WI + PC]
        cyy += ws[i, WI + PC + 1]
        czz += ws[i, WI + PC + 2]
        cxy += ws[i, WI + PC + 3]
        cxz += ws[i, WI + PC + 4]
        cyz += ws[i, WI + PC + 5]
    return (axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz,
            cyz)


@inline_njit
def _condensed_inertia_to_parent(ws, p, axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22,
                                 cxx, cyy, czz, cxy, cxz, cyz):
    """Adds a child's condensed inertia, packed and about the parent's origin in its axes, to ws[p, WI]: stored by
    the first child (WCHILD clear, then set), added by the others."""
    if ws[p, WCHILD] == 0.0:
        ws[p, WCHILD] = 1.0
        ws[p, WI + PA] = axx
        ws[p, WI + PA + 1] = ayy
        ws[p, WI + PA + 2] = azz
        ws[p, WI + PA + 3] = axy
        ws[p, WI + PA + 4] = axz
        ws[p, WI + PA + 5] = ayz
        ws[p, WI + PB] = b00
        ws[p, WI + PB + 1] = b01
        ws[p, WI + PB + 2] = b02
        ws[p, WI + PB + 3] = b10
        ws[p, WI + PB + 4] = b11
        ws[p, WI + PB + 5] = b12
        ws[p, WI + PB + 6] = b20
        ws[p, WI + PB + 7] = b21
        ws[p, WI + PB + 8] = b22
        ws[p, WI + PC] = cxx
        ws[p, WI + PC + 1] = cyy
        ws[p, WI + PC + 2] = czz
        ws[p, WI + PC + 3] = cxy
        ws[p, WI + PC + 4] = cxz
        ws[p, WI + PC + 5] = cyz
    else:
        ws[p, WI + PA] += axx
        ws[p, WI + PA + 1] += ayy
        ws[p, WI + PA + 2] += azz
        ws[p, WI + PA + 3] += axy
        ws[p, WI + PA + 4] += axz
        ws[p, WI + PA + 5] += ayz
        ws[p, WI + PB] += b00
        ws[p, WI + PB + 1] += b01
        ws[p, WI + PB + 2] += b02
        ws[p, WI + PB + 3] += b10
        ws[p, WI + PB + 4] += b11
        ws[p, WI + PB + 5] += b12
        ws[p, WI + PB + 6] += b20
        ws[p, WI + PB + 7] += b21
        ws[p, WI + PB + 8] += b22
        ws[p, WI + PC] += cxx
        ws[p, WI + PC + 1] += cyy
        ws[p, WI + PC + 2] += czz
        ws[p, WI + PC + 3] += cxy
        ws[p, WI + PC + 4] += cxz
        ws[p, WI + PC + 5] += cyz


@inline_njit
def _spherical_accelerate_from_parent(body_real, i, p, kv, ws, out):
    """``_spherical_accelerate`` for a body with a parent body, on the workspace rows: a' = X a_P + c, then
    vdot and a = a' + S vdot into ws[i, WC:WC+6]."""
    pwx, pwy, pwz, lx, ly, lz = motion_at(ws[p], WC, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2])
    wx = ws[i, WR] * pwx + ws[i, WR + 3] * pwy + ws[i, WR + 6] * pwz + ws[i, WC]
    wy = ws[i, WR + 1] * pwx + ws[i, WR + 4] * pwy + ws[i, WR + 7] * pwz + ws[i, WC + 1]
    wz = ws[i, WR + 2] * pwx + ws[i, WR + 5] * pwy + ws[i, WR + 8] * pwz + ws[i, WC + 2]
    vx = ws[i, WR] * lx + ws[i, WR + 3] * ly + ws[i, WR + 6] * lz + ws[i, WC + 3]
    vy = ws[i, WR + 1] * lx + ws[i, WR + 4] * ly + ws[i, WR + 7] * lz + ws[i, WC + 4]
    vz = ws[i, WR + 2] * lx + ws[i, WR + 5] * ly + ws[i, WR + 8] * lz + ws[i, WC + 5]
    cpx = body_real[i, CP]
    cpy = body_real[i, CP + 1]
    cpz = body_real[i, CP + 2]
    jx = vx - (cpy * wz - cpz * wy)
    jy = vy - (cpz * wx - cpx * wz)
    jz = vz - (cpx * wy - cpy * wx)
    dx = ws[i, WU] - wx - (ws[i, WK] * jx + ws[i, WK + 1] * jy + ws[i, WK + 2] * jz)
    dy = ws[i, WU + 1] - wy - (ws[i, WK + 3] * jx + ws[i, WK + 4] * jy + ws[i, WK + 5] * jz)
    dz = ws[i, WU + 2] - wz - (ws[i, WK + 6] * jx + ws[i, WK + 7] * jy + ws[i, WK + 8] * jz)
    out[kv] = dx
    out[kv + 1] = dy
    out[kv + 2] = dz
    ws[i, WC] = wx + dx
    ws[i, WC + 1] = wy + dy
    ws[i, WC + 2] = wz + dz
    ws[i, WC + 3] = vx + cpy * dz - cpz * dy
    ws[i, WC + 4] = vy + cpz * dx - cpx * dz
    ws[i, WC + 5] = vz + cpx * dy - cpy * dx


@njit
def _cholesky_factor(tmp, d, inv, scale, nvj, i):
    """L L^T of the joint block D in tmp[d:d+36] (stride 6, lower triangle), in place, and the reciprocals of L's
    diagonal into tmp[inv:inv+nvj]; STATUS_SINGULAR of body i when a pivot is not above SINGULAR_RTOL times its
    scale in tmp[scale:scale+nvj] (a singular articulated inertia), else STATUS_OK."""
    for c in range(nvj):
        piv = tmp[d + 7 * c]
        for k in range(c):
            piv -= tmp[d + 6 * c + k] * tmp[d + 6 * c + k]
        if not piv > SINGULAR_RTOL * tmp[scale + c]:
            return STATUS_SINGULAR | (i << 4)
        piv = math.sqrt(piv)
        tmp[d + 7 * c] = piv
        tmp[inv + c] = 1.0 / piv
        for r in range(c + 1, nvj):
            acc = tmp[d + 6 * r + c]
            for k in range(c):
                acc -= tmp[d + 6 * r + k] * tmp[d + 6 * c + k]
            tmp[d + 6 * r + c] = acc * tmp[inv + c]
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


@inline_njit
def _spherical_condense(body_int, body_real, tau, i, ws):
    """The tip-to-base step of the articulated-body algorithm for a spherical joint, in registers.

    About the joint point J (at cp in the child frame) the motion subspace is S = [1; 0], so with the articulated
    inertia moved there, I^A_J = [[A_J, B_J], [B_J^T, C]] (A_J = A + B[cp] + (B[cp])^T - [cp]C[cp], B_J = B - [cp]C,
    Featherstone 2008 eq. 2.66 with r = -cp): U = [A_J; B_J^T], D = A_J, and the condensed inertia
    I^a = I^A_J - U D^-1 U^T is [[0, 0], [0, C - B_J^T D^-1 B_J]], the bias force p^a = (tau; f + C^a c_J +
    B_J^T D^-1 u) (its moment is the joint torque). Only a 3x3 block goes to the parent. Stores K = D^-1 B_J
    (row-major) at ws[i, WK] and D^-1 u at ws[i, WU] (the slots of body i's articulated inertia, read no more) for
    ``_spherical_accelerate``. Returns a status.
    """
    cpx = body_real[i, CP]
    cpy = body_real[i, CP + 1]
    cpz = body_real[i, CP + 2]
    (axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz,
     cyz) = _articulated_inertia(body_real, i, ws)
    # scales of the pivots as in the general path: (sum_r |S_rc| sqrt(I_rr))^2, S_c = (e_c; cp x e_c)
    sx = math.sqrt(abs(cxx))
    sy = math.sqrt(abs(cyy))
    sz = math.sqrt(abs(czz))
    scale0 = math.sqrt(abs(axx)) + abs(cpz) * sy + abs(cpy) * sz
    scale1 = math.sqrt(abs(ayy)) + abs(cpz) * sx + abs(cpx) * sz
    scale2 = math.sqrt(abs(azz)) + abs(cpy) * sx + abs(cpx) * sy
    # E = B[cp] (rows b -> b x cp), G = [cp]C (columns c -> cp x c), H = G[cp] (rows g -> g x cp)
    e00 = b01 * cpz - b02 * cpy
    e01 = b02 * cpx - b00 * cpz
    e02 = b00 * cpy - b01 * cpx
    e10 = b11 * cpz - b12 * cpy
    e11 = b12 * cpx - b10 * cpz
    e12 = b10 * cpy - b11 * cpx
    e20 = b21 * cpz - b22 * cpy
    e21 = b22 * cpx - b20 * cpz
    e22 = b20 * cpy - b21 * cpx
    g00 = cpy * cxz - cpz * cxy
    g10 = cpz * cxx - cpx * cxz
    g20 = cpx * cxy - cpy * cxx
    g01 = cpy * cyz - cpz * cyy
    g11 = cpz * cxy - cpx * cyz
    g21 = cpx * cyy - cpy * cxy
    g02 = cpy * czz - cpz * cyz
    g12 = cpz * cxz - cpx * czz
    g22 = cpx * cyz - cpy * cxz
    h00 = g01 * cpz - g02 * cpy
    h11 = g12 * cpx - g10 * cpz
    h22 = g20 * cpy - g21 * cpx
    h01 = g02 * cpx - g00 * cpz
    h02 = g00 * cpy - g01 * cpx
    h12 = g10 * cpy - g11 * cpx
    # D = A_J and B_J
    d00 = axx + 2.0 * e00 - h00
    d11 = ayy + 2.0 * e11 - h11
    d22 = azz + 2.0 * e22 - h22
    d01 = axy + e01 + e10 - h01
    d02 = axz + e02 + e20 - h02
    d12 = ayz + e12 + e21 - h12
    j00 = b00 - g00
    j01 = b01 - g01
    j02 = b02 - g02
    j10 = b10 - g10
    j11 = b11 - g11
    j12 = b12 - g12
    j20 = b20 - g20
    j21 = b21 - g21
    j22 = b22 - g22
    # D^-1 = adj(D) / det(D): one division, beside the products of adj(D) below (a chain of three dependent
    # divisions in an LDL^T factorisation would lie on the tip-to-base recursion's critical path). The LDL^T pivots
    # are d00, a22 / d00 and det / a22: each above its scale, or the articulated inertia is singular
    a00 = d11 * d22 - d12 * d12
    a11 = d00 * d22 - d02 * d02
    a22 = d00 * d11 - d01 * d01
    a01 = d02 * d12 - d01 * d22
    a02 = d01 * d12 - d02 * d11
    a12 = d01 * d02 - d00 * d12
    det = d00 * a00 + d01 * a01 + d02 * a02
    if not (d00 > SINGULAR_RTOL * scale0 * scale0 and a22 > SINGULAR_RTOL * scale1 * scale1 * d00
            and det > SINGULAR_RTOL * scale2 * scale2 * a22):
        return STATUS_SINGULAR | (i << 4)
    idet = 1.0 / det
    i00 = a00 * idet
    i11 = a11 * idet
    i22 = a22 * idet
    i01 = a01 * idet
    i02 = a02 * idet
    i12 = a12 * idet
    # K = D^-1 B_J
    k00 = i00 * j00 + i01 * j10 + i02 * j20
    k01 = i00 * j01 + i01 * j11 + i02 * j21
    k02 = i00 * j02 + i01 * j12 + i02 * j22
    k10 = i01 * j00 + i11 * j10 + i12 * j20
    k11 = i01 * j01 + i11 * j11 + i12 * j21
    k12 = i01 * j02 + i11 * j12 + i12 * j22
    k20 = i02 * j00 + i12 * j10 + i22 * j20
    k21 = i02 * j01 + i12 * j11 + i22 * j21
    k22 = i02 * j02 + i12 * j12 + i22 * j22
    ws[i, WK] = k00
    ws[i, WK + 1] = k01
    ws[i, WK + 2] = k02
    ws[i, WK + 3] = k10
    ws[i, WK + 4] = k11
    ws[i, WK + 5] = k12
    ws[i, WK + 6] = k20
    ws[i, WK + 7] = k21
    ws[i, WK + 8] = k22
    # u = tau - S_J^T p^A_J, the moment of p^A about J: n_O - cp x f
    kv = body_int[i, VIDX]
    fx = ws[i, WP + 3]
    fy = ws[i, WP + 4]
    fz = ws[i, WP + 5]
    tx = tau[kv]
    ty = tau[kv + 1]
    tz = tau[kv + 2]
    ux = tx - ws[i, WP] + cpy * fz - cpz * fy
    uy = ty - ws[i, WP + 1] + cpz * fx - cpx * fz
    uz = tz - ws[i, WP + 2] + cpx * fy - cpy * fx
    ox = i00 * ux + i01 * uy + i02 * uz
    oy = i01 * ux + i11 * uy + i12 * uz
    oz = i02 * ux + i12 * uy + i22 * uz
    ws[i, WU] = ox
    ws[i, WU + 1] = oy
    ws[i, WU + 2] = oz
    # D^-1 for the unit-force solves of the loop layer (``unit_force_responses``)
    ws[i, WD] = i00
    ws[i, WD + 1] = i11
    ws[i, WD + 2] = i22
    ws[i, WD + 3] = i01
    ws[i, WD + 4] = i02
    ws[i, WD + 5] = i12
    p = body_int[i, PARENT]
    if p < 0:
        return STATUS_OK
    # C^a = C - B_J^T K (symmetric)
    qxx = cxx - (j00 * k00 + j10 * k10 + j20 * k20)
    qyy = cyy - (j01 * k01 + j11 * k11 + j21 * k21)
    qzz = czz - (j02 * k02 + j12 * k12 + j22 * k22)
    qxy = cxy - (j00 * k01 + j10 * k11 + j20 * k21)
    qxz = cxz - (j00 * k02 + j10 * k12 + j20 * k22)
    qyz = cyz - (j01 * k02 + j11 * k12 + j21 * k22)
    # p^a_J linear part: f + C^a c_J + B_J^T D^-1 u, c_J = (c_w; c_v - cp x c_w)
    cwx = ws[i, WC]
    cwy = ws[i, WC + 1]
    cwz = ws[i, WC + 2]
    cvx = ws[i, WC + 3] - (cpy * cwz - cpz * cwy)
    cvy = ws[i, WC + 4] - (cpz * cwx - cpx * cwz)
    cvz = ws[i, WC + 5] - (cpx * cwy - cpy * cwx)
    fx += qxx * cvx + qxy * cvy + qxz * cvz + j00 * ox + j10 * oy + j20 * oz
    fy += qxy * cvx + qyy * cvy + qyz * cvz + j01 * ox + j11 * oy + j21 * oz
    fz += qxz * cvx + qyz * cvy + qzz * cvz + j02 * ox + j12 * oy + j22 * oz
    # to the parent: rotate by R, then move from J (at pp in the parent frame) to the parent origin
    r00 = ws[i, WR]
    r01 = ws[i, WR + 1]
    r02 = ws[i, WR + 2]
    r10 = ws[i, WR + 3]
    r11 = ws[i, WR + 4]
    r12 = ws[i, WR + 5]
    r20 = ws[i, WR + 6]
    r21 = ws[i, WR + 7]
    r22 = ws[i, WR + 8]
    rx = body_real[i, PP]
    ry = body_real[i, PP + 1]
    rz = body_real[i, PP + 2]
    cxx, cyy, czz, cxy, cxz, cyz = _rotate_symmetric(r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                                     qxx, qyy, qzz, qxy, qxz, qyz)
    # G = [r]C', H = G[r]
    g00 = ry * cxz - rz * cxy
    g10 = rz * cxx - rx * cxz
    g20 = rx * cxy - ry * cxx
    g01 = ry * cyz - rz * cyy
    g11 = rz * cxy - rx * cyz
    g21 = rx * cyy - ry * cxy
    g02 = ry * czz - rz * cyz
    g12 = rz * cxz - rx * czz
    g22 = rx * cyz - ry * cxz
    # the parent gains [[-H, G], [G^T, C']]
    _condensed_inertia_to_parent(ws, p, -(g01 * rz - g02 * ry), -(g12 * rx - g10 * rz), -(g20 * ry - g21 * rx),
                                 -(g02 * rx - g00 * rz), -(g00 * ry - g01 * rx), -(g10 * ry - g11 * rx), g00, g01, g02,
                                 g10, g11, g12, g20, g21, g22, cxx, cyy, czz, cxy, cxz, cyz)
    # force: (R n + r x R f; R f), n = tau the joint torque
    gx = r00 * fx + r01 * fy + r02 * fz
    gy = r10 * fx + r11 * fy + r12 * fz
    gz = r20 * fx + r21 * fy + r22 * fz
    ws[p, WP] += r00 * tx + r01 * ty + r02 * tz + ry * gz - rz * gy
    ws[p, WP + 1] += r10 * tx + r11 * ty + r12 * tz + rz * gx - rx * gz
    ws[p, WP + 2] += r20 * tx + r21 * ty + r22 * tz + rx * gy - ry * gx
    ws[p, WP + 3] += gx
    ws[p, WP + 4] += gy
    ws[p, WP + 5] += gz
    return STATUS_OK


@njit
def _spherical_accelerate(body_real, i, kv, ws, a, out):
    """The base-to-tip step for a spherical joint: a[0:6] holds a' = X a_P + c (body i's coordinates) and becomes
    a = a' + S vdot; vdot = D^-1 (u - U^T a') = D^-1 u - a'_w - K a'_J (``_spherical_condense``), with
    a'_J = a'_v - cp x a'_w the linear part of a' at the joint point."""
    cpx = body_real[i, CP]
    cpy = body_real[i, CP + 1]
    cpz = body_real[i, CP + 2]
    wx = a[0]
    wy = a[1]
    wz = a[2]
    jx = a[3] - (cpy * wz - cpz * wy)
    jy = a[4] - (cpz * wx - cpx * wz)
    jz = a[5] - (cpx * wy - cpy * wx)
    dx = ws[i, WU] - wx - (ws[i, WK] * jx + ws[i, WK + 1] * jy + ws[i, WK + 2] * jz)
    dy = ws[i, WU + 1] - wy - (ws[i, WK + 3] * jx + ws[i, WK + 4] * jy + ws[i, WK + 5] * jz)
    dz = ws[i, WU + 2] - wz - (ws[i, WK + 6] * jx + ws[i, WK + 7] * jy + ws[i, WK + 8] * jz)
    out[kv] = dx
    out[kv + 1] = dy
    out[kv + 2] = dz
    a[0] = wx + dx
    a[1] = wy + dy
    a[2] = wz + dz
    a[3] += cpy * dz - cpz * dy
    a[4] += cpz * dx - cpx * dz
    a[5] += cpx * dy - cpy * dx


@njit
def _general_condense(body_int, body_real, tau, i, ws, S, UD, uD, tmp):
    """The tip-to-base step of ``forward_dynamics`` for a joint other than spherical (tmp layout there): U = I^A S,
    D = S^T U, its Cholesky factor, U D^-1 and D^-1 u, then the condensed inertia and bias force added to the
    parent's. A function of its own so that the driver's loops stay small (registers for the spherical path).
    Returns a status."""
    nvj = body_int[i, NVJ]
    kv = body_int[i, VIDX]
    # I^A into ws[i, WI], where ``unit_force_responses`` reads it
    (ws[i, WI + PA], ws[i, WI + PA + 1], ws[i, WI + PA + 2], ws[i, WI + PA + 3], ws[i, WI + PA + 4],
     ws[i, WI + PA + 5], ws[i, WI + PB], ws[i, WI + PB + 1], ws[i, WI + PB + 2], ws[i, WI + PB + 3],
     ws[i, WI + PB + 4], ws[i, WI + PB + 5], ws[i, WI + PB + 6], ws[i, WI + PB + 7], ws[i, WI + PB + 8],
     ws[i, WI + PC], ws[i, WI + PC + 1], ws[i, WI + PC + 2], ws[i, WI + PC + 3], ws[i, WI + PC + 4],
     ws[i, WI + PC + 5]) = _articulated_inertia(body_real, i, ws)
    _inertia_times_subspace(ws, i, S, nvj, tmp)
    # the largest rotational and translational diagonal entries of I^A, for every row of their block (the
    # entries along S_c alone cancel where the joints below take up S_c's motion: ``_revolute_condense``)
    rotation = math.sqrt(max(abs(tmp[234]), abs(tmp[241]), abs(tmp[248])))
    translation = math.sqrt(max(abs(tmp[255]), abs(tmp[262]), abs(tmp[269])))
    for r in range(6):
        tmp[228 + r] = rotation if r < 3 else translation
    for col in range(nvj):
        # the scale of D_cc: (sum_r |S_rc| sqrt(I_rr))^2 >= S_c^T I^A S_c (Cauchy-Schwarz, I^A PSD), with the
        # block maxima above for I_rr
        scale = 0.0
        for r in range(6):
            scale += abs(S[i, col, r]) * tmp[228 + r]
        tmp[72 + col] = scale * scale
        for row_ in range(nvj):
            acc = 0.0
            for r in range(6):
                acc += S[i, row_, r] * tmp[6 * col + r]
            tmp[36 + 6 * row_ + col] = acc
    status = _cholesky_factor(tmp, 36, 186, 72, nvj, i)  # a pivot below its scale: singular articulated inertia
    if status:
        return status
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
        return STATUS_OK
    # I^a = I^A - U D^-1 U^T,  p^a = p^A + I^a c + U D^-1 u
    for r in range(6):
        for c in range(r, 6):  # symmetric
            acc = tmp[234 + 6 * r + c]
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
    _pack_inertia(tmp, 84, tmp, 270)
    if ws[p, WCHILD] == 0.0:
        ws[p, WCHILD] = 1.0
        for m in range(N_PACKED):
            ws[p, WI + m] = 0.0
    _inertia_transform_add(ws, i, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2], tmp, 270, ws[p], WI)
    _force_to_parent_add(ws, i, tmp, 120, ws[p], WP)
    return STATUS_OK


@inline_njit
def _revolute_condense(body_int, body_real, tau, i, ws):
    """``_general_condense`` for a revolute joint, in registers: its one column s = (a; cp x a)
    (``_revolute_column``), U = I^A s, D = s^T U (a scalar: no factorisation), U D^-1, D^-1 and D^-1 u into the
    workspace row (``spatial.layout`` WUD, WDINV, WU, over I^A: read no more), then the rank-1 update
    I^a = I^A - U D^-1 U^T and p^a = p^A + I^a c + U D^-1 u moved to the parent (``_transformed_inertia``,
    ``_force_to_parent``). Stores nothing in S, UD, uD. Returns a status."""
    kv = body_int[i, VIDX]
    s0, s1, s2, s3, s4, s5 = _revolute_column(body_real, i)
    (axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz,
     cyz) = _articulated_inertia(body_real, i, ws)
    # U = I^A s = (A a + B l; B^T a + C l), s = (a; l), the sums in pairs (a shorter chain of dependent adds)
    u0 = (axx * s0 + axy * s1) + (axz * s2 + b00 * s3) + (b01 * s4 + b02 * s5)
    u1 = (axy * s0 + ayy * s1) + (ayz * s2 + b10 * s3) + (b11 * s4 + b12 * s5)
    u2 = (axz * s0 + ayz * s1) + (azz * s2 + b20 * s3) + (b21 * s4 + b22 * s5)
    u3 = (b00 * s0 + b10 * s1) + (b20 * s2 + cxx * s3) + (cxy * s4 + cxz * s5)
    u4 = (b01 * s0 + b11 * s1) + (b21 * s2 + cxy * s3) + (cyy * s4 + cyz * s5)
    u5 = (b02 * s0 + b12 * s1) + (b22 * s2 + cxz * s3) + (cyz * s4 + czz * s5)
    d = (s0 * u0 + s1 * u1) + (s2 * u2 + s3 * u3) + (s4 * u4 + s5 * u5)
    # the scale of D: |s|'s rotational and translational parts times the square roots of the largest rotational
    # and translational diagonal entries of I^A (>= sqrt(s^T I^A s), Cauchy-Schwarz, I^A PSD), as
    # _general_condense: the entries along s alone cancel where the joints below take up this axis's motion (a
    # gimbal lock: three revolute joints z, y, x, massless between, pitch pi/2), and D is then round-off
    rotation = math.sqrt(max(abs(axx), abs(ayy), abs(azz)))
    translation = math.sqrt(max(abs(cxx), abs(cyy), abs(czz)))
    scale = (abs(s0) + abs(s1) + abs(s2)) * rotation + (abs(s3) + abs(s4) + abs(s5)) * translation
    if not d > SINGULAR_RTOL * scale * scale:
        return STATUS_SINGULAR | (i << 4)
    dinv = 1.0 / d
    px = ws[i, WP]
    py = ws[i, WP + 1]
    pz = ws[i, WP + 2]
    fx = ws[i, WP + 3]
    fy = ws[i, WP + 4]
    fz = ws[i, WP + 5]
    u = tau[kv] - ((s0 * px + s1 * py) + (s2 * pz + s3 * fx) + (s4 * fy + s5 * fz))
    ud = dinv * u
    k0 = u0 * dinv
    k1 = u1 * dinv
    k2 = u2 * dinv
    k3 = u3 * dinv
    k4 = u4 * dinv
    k5 = u5 * dinv
    ws[i, WUD] = k0
    ws[i, WUD + 1] = k1
    ws[i, WUD + 2] = k2
    ws[i, WUD + 3] = k3
    ws[i, WUD + 4] = k4
    ws[i, WUD + 5] = k5
    ws[i, WDINV] = dinv
    ws[i, WU] = ud
    p = body_int[i, PARENT]
    if p < 0:
        return STATUS_OK
    # I^a = I^A - K U^T (K = U D^-1), upper triangle: entry (r, c) is I_rc - K_r U_c
    axx -= k0 * u0
    ayy -= k1 * u1
    azz -= k2 * u2
    axy -= k0 * u1
    axz -= k0 * u2
    ayz -= k1 * u2
    b00 -= k0 * u3
    b01 -= k0 * u4
    b02 -= k0 * u5
    b10 -= k1 * u3
    b11 -= k1 * u4
    b12 -= k1 * u5
    b20 -= k2 * u3
    b21 -= k2 * u4
    b22 -= k2 * u5
    cxx -= k3 * u3
    cyy -= k4 * u4
    czz -= k5 * u5
    cxy -= k3 * u4
    cxz -= k3 * u5
    cyz -= k4 * u5
    # p^a = p^A + I^a c + U D^-1 u
    c0 = ws[i, WC]
    c1 = ws[i, WC + 1]
    c2 = ws[i, WC + 2]
    c3 = ws[i, WC + 3]
    c4 = ws[i, WC + 4]
    c5 = ws[i, WC + 5]
    px += (axx * c0 + axy * c1) + (axz * c2 + b00 * c3) + (b01 * c4 + b02 * c5) + u0 * ud
    py += (axy * c0 + ayy * c1) + (ayz * c2 + b10 * c3) + (b11 * c4 + b12 * c5) + u1 * ud
    pz += (axz * c0 + ayz * c1) + (azz * c2 + b20 * c3) + (b21 * c4 + b22 * c5) + u2 * ud
    fx += (b00 * c0 + b10 * c1) + (b20 * c2 + cxx * c3) + (cxy * c4 + cxz * c5) + u3 * ud
    fy += (b01 * c0 + b11 * c1) + (b21 * c2 + cxy * c3) + (cyy * c4 + cyz * c5) + u4 * ud
    fz += (b02 * c0 + b12 * c1) + (b22 * c2 + cxz * c3) + (cyz * c4 + czz * c5) + u5 * ud
    (axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz,
     cyz) = _transformed_inertia(ws, i, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2], axx, ayy, azz, axy, axz, ayz, b00,
                                 b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz, cyz)
    _condensed_inertia_to_parent(ws, p, axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22,
                                 cxx, cyy, czz, cxy, cxz, cyz)
    _force_to_parent(ws, i, p, px, py, pz, fx, fy, fz)
    return STATUS_OK


@inline_njit
def _revolute_accelerate_from_parent(body_real, i, p, kv, ws, out):
    """``_revolute_accelerate`` for a body with a parent body, on the workspace rows: a' = X a_P + c, then
    vdot and a = a' + s vdot into ws[i, WC:WC+6]."""
    pwx, pwy, pwz, lx, ly, lz = motion_at(ws[p], WC, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2])
    wx = ws[i, WR] * pwx + ws[i, WR + 3] * pwy + ws[i, WR + 6] * pwz + ws[i, WC]
    wy = ws[i, WR + 1] * pwx + ws[i, WR + 4] * pwy + ws[i, WR + 7] * pwz + ws[i, WC + 1]
    wz = ws[i, WR + 2] * pwx + ws[i, WR + 5] * pwy + ws[i, WR + 8] * pwz + ws[i, WC + 2]
    vx = ws[i, WR] * lx + ws[i, WR + 3] * ly + ws[i, WR + 6] * lz + ws[i, WC + 3]
    vy = ws[i, WR + 1] * lx + ws[i, WR + 4] * ly + ws[i, WR + 7] * lz + ws[i, WC + 4]
    vz = ws[i, WR + 2] * lx + ws[i, WR + 5] * ly + ws[i, WR + 8] * lz + ws[i, WC + 5]
    acc = ws[i, WU] - ((ws[i, WUD] * wx + ws[i, WUD + 1] * wy) + (ws[i, WUD + 2] * wz + ws[i, WUD + 3] * vx)
                       + (ws[i, WUD + 4] * vy + ws[i, WUD + 5] * vz))
    out[kv] = acc
    s0, s1, s2, s3, s4, s5 = _revolute_column(body_real, i)
    ws[i, WC] = wx + s0 * acc
    ws[i, WC + 1] = wy + s1 * acc
    ws[i, WC + 2] = wz + s2 * acc
    ws[i, WC + 3] = vx + s3 * acc
    ws[i, WC + 4] = vy + s4 * acc
    ws[i, WC + 5] = vz + s5 * acc


@njit
def _revolute_accelerate(body_real, i, kv, ws, a, out):
    """The base-to-tip step for a revolute joint: a[0:6] holds a' = X a_P + c and becomes a = a' + s vdot,
    vdot = D^-1 u - (U D^-1)^T a' (``_revolute_condense``'s WU, WUD)."""
    s0, s1, s2, s3, s4, s5 = _revolute_column(body_real, i)
    acc = ws[i, WU]
    for m in range(6):
        acc -= ws[i, WUD + m] * a[m]
    out[kv] = acc
    a[0] += s0 * acc
    a[1] += s1 * acc
    a[2] += s2 * acc
    a[3] += s3 * acc
    a[4] += s4 * acc
    a[5] += s5 * acc


@inline_njit
def _parent_acceleration(gravity, i, p, ws, tmp):
    """X a_P into tmp[0:6]: the parent's acceleration (ws[p, WC:WC+6]) in body i's frame, the ground's (0; -g)
    for p < 0 (tmp[126:132] scratch)."""
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


@inline_njit
def _joint_accelerate(body_int, body_real, i, ws, S, UD, uD, tmp, out):
    """With a' in tmp[0:6]: vdot = D^-1 u - (U D^-1)^T a' of body i's joint into out (spherical, revolute: their
    condensation in ws; other joints: UD, uD), a = a' + S vdot into tmp[0:6] and ws[i, WC:WC+6]."""
    kv = body_int[i, VIDX]
    if body_int[i, JTYPE] == SPHERICAL:
        _spherical_accelerate(body_real, i, kv, ws, tmp, out)
    elif body_int[i, JTYPE] == REVOLUTE:
        _revolute_accelerate(body_real, i, kv, ws, tmp, out)
    else:
        _subspace_accelerate(body_int, i, S, UD, uD, tmp, out)
    for m in range(6):
        ws[i, WC + m] = tmp[m]


@inline_njit
def _subspace_accelerate(body_int, i, S, UD, uD, tmp, out):
    """With a' in tmp[0:6]: vdot = D^-1 u - (U D^-1)^T a' of body i's joint from UD, uD (``_general_condense``) into
    out, and a = a' + S vdot into tmp[0:6]."""
    kv = body_int[i, VIDX]
    for col in range(body_int[i, NVJ]):
        acc = uD[i, col]
        for m in range(6):
            acc -= UD[i, col, m] * tmp[m]
        out[kv + col] = acc
        for m in range(6):
            tmp[m] += S[i, col, m] * acc


@njit
def _general_accelerate(body_int, body_real, gravity, i, ws, S, UD, uD, tmp, out):
    """The base-to-tip step of ``forward_dynamics`` for body i unless it is a spherical joint's child of a body:
    a' = X a_P + c (a_ground = (0; -g)), vdot = D^-1 u - (U D^-1)^T a', a = a' + S vdot into ws[i, WC:WC+6]."""
    _parent_acceleration(gravity, i, body_int[i, PARENT], ws, tmp)
    for m in range(6):
        tmp[m] += ws[i, WC + m]
    _joint_accelerate(body_int, body_real, i, ws, S, UD, uD, tmp, out)


@njit
def forward_dynamics(body_int, body_real, gravity, q, v, tau, ws, S, UD, uD, tmp, out):
    """vdot = FD(q, v, tau) by the articulated-body algorithm (Featherstone 2008, table 7.1), O(N).

    Shapes: q (nq,), v, tau, out (nv,); ws (nbodies, W_SPATIAL), S and UD (nbodies, max_nv, 6), uD (nbodies,
    max_nv), tmp (TMP_SIZE,). Spherical and revolute joints read and write none of S, UD, uD (their S is formed
    from the model, their condensation is kept in ws): for a model of such joints only, S, UD and uD may have 0
    rows.
    Three passes: kinematics with each body's bias force (``_forward_kinematics``), condensation tip to base (a
    body's own inertia added there to what its children stored, ``_articulated_inertia``), accelerations.
    Returns a status (module docstring). Leaves in the workspace what depends on q only, for
    ``unit_force_responses``: a spherical joint's K and D^-1 (``spatial.layout`` WK, WD), a revolute joint's
    U D^-1 and D^-1 (WUD, WDINV), the other joints' articulated inertia I^A (WI), U D^-1 and S.
    """
    status = check_finite(q, v, tau)
    if status:
        return status
    status = _forward_kinematics(body_int, body_real, q, v, ws, S, tmp)
    if status:
        return status
    n = body_int.shape[0]
    # tip to base: U = I^A S, D = S^T U, u = tau - S^T p^A; condense onto the parent (the relative-coordinate
    # lecture, eq. 3.23). I^A is the body's inertia plus what its children stored (``_articulated_inertia``).
    # tmp layout (general joints): U 0:36 (column-major, 6 per column), D/L 36:72 (stride 6), scale 72:78, rhs
    # 78:84, Ia 84:120, pa 120:126, c-product 126:132, 1/L_kk 186:192, D^-1 192:228 (stride 6), sqrt(I^A_rr)
    # 228:234, I^A unpacked 234:270, I^a packed 270:291. Spherical and revolute joints: in registers.
    for i in range(n - 1, -1, -1):
        status = _condense(body_int, body_real, tau, i, ws, S, UD, uD, tmp)
        if status:
            return status
    # base to tip: a' = X a_P + c, vdot = D^-1 u - (U D^-1)^T a', a = a' + S vdot; the ground's a is (0; -g)
    for i in range(n):
        _accelerate(body_int, body_real, gravity, i, ws, S, UD, uD, tmp, out)
    return check_output(out)


@inline_njit
def _condense(body_int, body_real, tau, i, ws, S, UD, uD, tmp):
    """The tip-to-base step of ``forward_dynamics`` for body i, by its joint type; returns a status."""
    jt = body_int[i, JTYPE]
    if jt == SPHERICAL:
        return _spherical_condense(body_int, body_real, tau, i, ws)
    if jt == REVOLUTE:
        return _revolute_condense(body_int, body_real, tau, i, ws)
    return _general_condense(body_int, body_real, tau, i, ws, S, UD, uD, tmp)


@inline_njit
def _accelerate(body_int, body_real, gravity, i, ws, S, UD, uD, tmp, out):
    """The base-to-tip step of ``forward_dynamics`` for body i, by its joint type."""
    p = body_int[i, PARENT]
    jt = body_int[i, JTYPE]
    if p >= 0 and jt == SPHERICAL:
        _spherical_accelerate_from_parent(body_real, i, p, body_int[i, VIDX], ws, out)
    elif p >= 0 and jt == REVOLUTE:
        _revolute_accelerate_from_parent(body_real, i, p, body_int[i, VIDX], ws, out)
    else:
        _general_accelerate(body_int, body_real, gravity, i, ws, S, UD, uD, tmp, out)


@njit
def hybrid_dynamics(body_int, body_real, gravity, q, v, tau, driven, ws, S, UD, uD, tmp, out, drive):
    """``forward_dynamics`` with prescribed accelerations of driven joints: Featherstone's hybrid dynamics
    (Rigid Body Dynamics Algorithms, 2008, sec. 9.2), O(N).

    driven (nbodies,) uint8: nonzero for a body whose 1-dof joint (revolute or prismatic) has its acceleration
    prescribed, in out[k] on entry (k its index in v). Such a joint is not eliminated in the tip-to-base pass: its
    articulated inertia passes to the parent whole, with the bias force p^A + I^A (c + s vdot_k)
    (``_driven_condense``); in the base-to-tip pass its body's acceleration is a = X a_P + c + s vdot_k, and
    drive[k] returns the joint force its driver must add to tau[k]: s^T (I^A a + p^A) - tau[k]
    (``_driven_accelerate``); entries of drive other than the driven joints' are left alone. The other joints take
    the general steps of ``forward_dynamics`` whatever their type (``_general_condense``, ``_subspace_accelerate``:
    compiled once, where the register steps of spherical and revolute joints would be compiled again), so S, UD and
    uD have a row for every body (nbodies, max_nv, 6), S written by the kinematics pass (``_kinematics``). Returns a
    status (module docstring). The workspace it leaves is not the one ``unit_force_responses`` reads.
    """
    status = check_finite(q, v, tau)
    if status:
        return status
    status = _kinematics(body_int, body_real, q, v, ws, S, tmp, np.bool_(True))
    if status:
        return status
    n = body_int.shape[0]
    for i in range(n):  # the bias forces from the velocities, before the condensation writes over them (WV in WI)
        _body_bias_force(body_real, i, ws)
        ws[i, WCHILD] = 0.0
    for i in range(n - 1, -1, -1):
        if driven[i]:
            _driven_condense(body_int, body_real, tau, i, ws, S, out)
        else:
            status = _general_condense(body_int, body_real, tau, i, ws, S, UD, uD, tmp)
            if status:
                return status
    for i in range(n):
        if driven[i]:
            _driven_accelerate(body_int, gravity, i, ws, S, tmp, out, drive)
        else:
            _parent_acceleration(gravity, i, body_int[i, PARENT], ws, tmp)
            for m in range(6):
                tmp[m] += ws[i, WC + m]
            _subspace_accelerate(body_int, i, S, UD, uD, tmp, out)
            for m in range(6):
                ws[i, WC + m] = tmp[m]
    status = check_output(out)
    if status:
        return status
    return check_output(drive)


@inline_njit
def _driven_column(S, i):
    """The motion subspace s (6 numbers) of body i's driven 1-dof joint, as the kinematics pass wrote it into S."""
    return S[i, 0, 0], S[i, 0, 1], S[i, 0, 2], S[i, 0, 3], S[i, 0, 4], S[i, 0, 5]


@njit
def _driven_condense(body_int, body_real, tau, i, ws, S, out):
    """The tip-to-base step of ``hybrid_dynamics`` for a driven joint (vdot_k = out[k] given): U = I^A s and
    u = tau_k - s^T p^A into the workspace row (WUD, WU: read by ``_driven_accelerate``), then I^A whole and
    p^A + I^A (c + s vdot_k) moved to the parent (Featherstone 2008, table 9.6)."""
    kv = body_int[i, VIDX]
    s0, s1, s2, s3, s4, s5 = _driven_column(S, i)
    (axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz,
     cyz) = _articulated_inertia(body_real, i, ws)
    # U = I^A s = (A a + B l; B^T a + C l), s = (a; l)
    u0 = axx * s0 + axy * s1 + axz * s2 + b00 * s3 + b01 * s4 + b02 * s5
    u1 = axy * s0 + ayy * s1 + ayz * s2 + b10 * s3 + b11 * s4 + b12 * s5
    u2 = axz * s0 + ayz * s1 + azz * s2 + b20 * s3 + b21 * s4 + b22 * s5
    u3 = b00 * s0 + b10 * s1 + b20 * s2 + cxx * s3 + cxy * s4 + cxz * s5
    u4 = b01 * s0 + b11 * s1 + b21 * s2 + cxy * s3 + cyy * s4 + cyz * s5
    u5 = b02 * s0 + b12 * s1 + b22 * s2 + cxz * s3 + cyz * s4 + czz * s5
    px = ws[i, WP]
    py = ws[i, WP + 1]
    pz = ws[i, WP + 2]
    fx = ws[i, WP + 3]
    fy = ws[i, WP + 4]
    fz = ws[i, WP + 5]
    ws[i, WUD] = u0  # over I^A, read no more
    ws[i, WUD + 1] = u1
    ws[i, WUD + 2] = u2
    ws[i, WUD + 3] = u3
    ws[i, WUD + 4] = u4
    ws[i, WUD + 5] = u5
    ws[i, WU] = tau[kv] - (s0 * px + s1 * py + s2 * pz + s3 * fx + s4 * fy + s5 * fz)
    p = body_int[i, PARENT]
    if p < 0:
        return
    # p^a = p^A + I^A (c + s vdot_k)
    acc = out[kv]
    c0 = ws[i, WC] + s0 * acc
    c1 = ws[i, WC + 1] + s1 * acc
    c2 = ws[i, WC + 2] + s2 * acc
    c3 = ws[i, WC + 3] + s3 * acc
    c4 = ws[i, WC + 4] + s4 * acc
    c5 = ws[i, WC + 5] + s5 * acc
    px += axx * c0 + axy * c1 + axz * c2 + b00 * c3 + b01 * c4 + b02 * c5
    py += axy * c0 + ayy * c1 + ayz * c2 + b10 * c3 + b11 * c4 + b12 * c5
    pz += axz * c0 + ayz * c1 + azz * c2 + b20 * c3 + b21 * c4 + b22 * c5
    fx += b00 * c0 + b10 * c1 + b20 * c2 + cxx * c3 + cxy * c4 + cxz * c5
    fy += b01 * c0 + b11 * c1 + b21 * c2 + cxy * c3 + cyy * c4 + cyz * c5
    fz += b02 * c0 + b12 * c1 + b22 * c2 + cxz * c3 + cyz * c4 + czz * c5
    (axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz,
     cyz) = _transformed_inertia(ws, i, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2], axx, ayy, azz, axy, axz, ayz, b00,
                                 b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy, cxz, cyz)
    _condensed_inertia_to_parent(ws, p, axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22,
                                 cxx, cyy, czz, cxy, cxz, cyz)
    _force_to_parent(ws, i, p, px, py, pz, fx, fy, fz)


@njit
def _driven_accelerate(body_int, gravity, i, ws, S, tmp, out, drive):
    """The base-to-tip step of ``hybrid_dynamics`` for a driven joint: a = X a_P + c + s vdot_k into
    ws[i, WC:WC+6], and drive[k] = s^T (I^A a + p^A) - tau_k = U . a - u (``_driven_condense``'s WUD, WU)."""
    kv = body_int[i, VIDX]
    _parent_acceleration(gravity, i, body_int[i, PARENT], ws, tmp)
    s0, s1, s2, s3, s4, s5 = _driven_column(S, i)
    acc = out[kv]
    tmp[0] += ws[i, WC] + s0 * acc
    tmp[1] += ws[i, WC + 1] + s1 * acc
    tmp[2] += ws[i, WC + 2] + s2 * acc
    tmp[3] += ws[i, WC + 3] + s3 * acc
    tmp[4] += ws[i, WC + 4] + s4 * acc
    tmp[5] += ws[i, WC + 5] + s5 * acc
    force = -ws[i, WU]
    for m in range(6):
        force += ws[i, WUD + m] * tmp[m]
        ws[i, WC + m] = tmp[m]
    drive[kv] = force


@njit
def _spherical_unit_condense(body_int, body_real, tau, i, ws):
    """The tip-to-base step of ``unit_force_responses`` for a spherical joint: u = tau - (moment of p^A about J),
    D^-1 u into ws[i, WU] (for ``_spherical_accelerate``), and p^a = (tau; f + B_J^T D^-1 u) at the joint point
    (``_spherical_condense`` with c = 0; B_J^T D^-1 u = K^T u as D^-1 is symmetric) added to the parent's p^A."""
    cpx = body_real[i, CP]
    cpy = body_real[i, CP + 1]
    cpz = body_real[i, CP + 2]
    kv = body_int[i, VIDX]
    fx = ws[i, WP + 3]
    fy = ws[i, WP + 4]
    fz = ws[i, WP + 5]
    tx = tau[kv]
    ty = tau[kv + 1]
    tz = tau[kv + 2]
    ux = tx - ws[i, WP] + cpy * fz - cpz * fy
    uy = ty - ws[i, WP + 1] + cpz * fx - cpx * fz
    uz = tz - ws[i, WP + 2] + cpx * fy - cpy * fx
    ws[i, WU] = ws[i, WD] * ux + ws[i, WD + 3] * uy + ws[i, WD + 4] * uz
    ws[i, WU + 1] = ws[i, WD + 3] * ux + ws[i, WD + 1] * uy + ws[i, WD + 5] * uz
    ws[i, WU + 2] = ws[i, WD + 4] * ux + ws[i, WD + 5] * uy + ws[i, WD + 2] * uz
    p = body_int[i, PARENT]
    if p < 0:
        return
    fx += ws[i, WK] * ux + ws[i, WK + 3] * uy + ws[i, WK + 6] * uz
    fy += ws[i, WK + 1] * ux + ws[i, WK + 4] * uy + ws[i, WK + 7] * uz
    fz += ws[i, WK + 2] * ux + ws[i, WK + 5] * uy + ws[i, WK + 8] * uz
    # to the parent: (R n + r x R f; R f), n = tau the moment about J, r = pp the joint point in the parent frame
    gx = ws[i, WR] * fx + ws[i, WR + 1] * fy + ws[i, WR + 2] * fz
    gy = ws[i, WR + 3] * fx + ws[i, WR + 4] * fy + ws[i, WR + 5] * fz
    gz = ws[i, WR + 6] * fx + ws[i, WR + 7] * fy + ws[i, WR + 8] * fz
    rx = body_real[i, PP]
    ry = body_real[i, PP + 1]
    rz = body_real[i, PP + 2]
    ws[p, WP] += ws[i, WR] * tx + ws[i, WR + 1] * ty + ws[i, WR + 2] * tz + ry * gz - rz * gy
    ws[p, WP + 1] += ws[i, WR + 3] * tx + ws[i, WR + 4] * ty + ws[i, WR + 5] * tz + rz * gx - rx * gz
    ws[p, WP + 2] += ws[i, WR + 6] * tx + ws[i, WR + 7] * ty + ws[i, WR + 8] * tz + rx * gy - ry * gx
    ws[p, WP + 3] += gx
    ws[p, WP + 4] += gy
    ws[p, WP + 5] += gz


@njit
def _revolute_unit_condense(body_int, body_real, tau, i, ws, tmp):
    """The tip-to-base step of ``unit_force_responses`` for a revolute joint: u = tau - s^T p^A, D^-1 u into
    ws[i, WU] (for ``_revolute_accelerate``), p^a = p^A + U D^-1 u added to the parent's p^A."""
    s0, s1, s2, s3, s4, s5 = _revolute_column(body_real, i)
    u = tau[body_int[i, VIDX]] - (s0 * ws[i, WP] + s1 * ws[i, WP + 1] + s2 * ws[i, WP + 2] + s3 * ws[i, WP + 3]
                                  + s4 * ws[i, WP + 4] + s5 * ws[i, WP + 5])
    ws[i, WU] = ws[i, WDINV] * u
    p = body_int[i, PARENT]
    if p < 0:
        return
    for m in range(6):
        tmp[120 + m] = ws[i, WP + m] + ws[i, WUD + m] * u
    _force_to_parent_add(ws, i, tmp, 120, ws[p], WP)


@njit
def unit_force_responses(body_int, body_real, jac, ws, S, UD, uD, tmp, resp):
    """resp[r] = M^-1 jac[r] (m, nv) for every row r of jac (m, nv), on the factorisation that the last
    ``forward_dynamics`` call at the same q left in ws, S, UD (its docstring): O(N) per row, no inertia formed
    (a non-spherical joint's D = S^T I^A S is factorised again, nv_j x nv_j).

    M^-1 tau is the articulated-body algorithm at zero velocity without gravity: the bias forces and c vanish, and
    I^A, U D^-1, D^-1, K depend on q only, so only the force pass (tip to base: u = tau - S^T p^A, p^a = p^A +
    U D^-1 u to the parent) and the acceleration pass (base to tip from a_ground = 0: vdot = D^-1 u - (U D^-1)^T
    a', a = a' + S vdot) run again (Featherstone 2008, table 7.1; the loop layer's m responses, as the planar
    layer reuses its factorisation). Overwrites the p^A, acceleration and D^-1 u entries of ws and uD.
    """
    n = body_int.shape[0]
    for row in range(jac.shape[0]):
        tau = jac[row]
        out = resp[row]
        for i in range(n):
            for m in range(6):
                ws[i, WP + m] = 0.0
        for i in range(n - 1, -1, -1):
            if body_int[i, JTYPE] == SPHERICAL:
                _spherical_unit_condense(body_int, body_real, tau, i, ws)
                continue
            if body_int[i, JTYPE] == REVOLUTE:
                _revolute_unit_condense(body_int, body_real, tau, i, ws, tmp)
                continue
            nvj = body_int[i, NVJ]
            kv = body_int[i, VIDX]
            # D = S^T I^A S again from the I^A forward dynamics left in WI (not stored there: the forward-dynamics-
            # only path keeps its stores), its Cholesky factor (tmp layout of forward_dynamics), uD = D^-1 u
            _inertia_times_subspace(ws, i, S, nvj, tmp)
            for col in range(nvj):
                for row_ in range(nvj):
                    acc = 0.0
                    for r in range(6):
                        acc += S[i, row_, r] * tmp[6 * col + r]
                    tmp[36 + 6 * row_ + col] = acc
            for c in range(nvj):
                piv = tmp[36 + 7 * c]
                for k in range(c):
                    piv -= tmp[36 + 6 * c + k] * tmp[36 + 6 * c + k]
                piv = math.sqrt(piv)  # > 0: forward_dynamics checked the same pivots at this q
                tmp[36 + 7 * c] = piv
                tmp[186 + c] = 1.0 / piv
                for r in range(c + 1, nvj):
                    acc = tmp[36 + 6 * r + c]
                    for k in range(c):
                        acc -= tmp[36 + 6 * r + k] * tmp[36 + 6 * c + k]
                    tmp[36 + 6 * r + c] = acc * tmp[186 + c]
            for col in range(nvj):
                acc = tau[kv + col]
                for m in range(6):
                    acc -= S[i, col, m] * ws[i, WP + m]
                tmp[78 + col] = acc
            _cholesky_solve(tmp, 36, 186, nvj, 78)
            for col in range(nvj):
                uD[i, col] = tmp[78 + col]
            p = body_int[i, PARENT]
            if p < 0:
                continue
            # p^a = p^A + U D^-1 u
            for m in range(6):
                acc = ws[i, WP + m]
                for col in range(nvj):
                    acc += tmp[6 * col + m] * tmp[78 + col]
                tmp[120 + m] = acc
            _force_to_parent_add(ws, i, tmp, 120, ws[p], WP)
        for i in range(n):
            p = body_int[i, PARENT]
            if p < 0:
                for m in range(6):
                    tmp[m] = 0.0
            else:
                _motion_to_child(ws, i, ws[p], WC, tmp, 0)
            _joint_accelerate(body_int, body_real, i, ws, S, UD, uD, tmp, out)


@njit
def inverse_dynamics(body_int, body_real, gravity, q, v, vdot, ws, S, tmp, out):
    """tau = M vdot + h by the recursive Newton-Euler algorithm (Featherstone 2008, table 5.1), O(N)."""
    status = check_finite(q, v, vdot)
    if status:
        return status
    status = kinematics_pass(body_int, body_real, q, v, ws, S, tmp, np.bool_(True))
    if status:
        return status
    n = body_int.shape[0]
    for i in range(n):
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        _parent_acceleration(gravity, i, body_int[i, PARENT], ws, tmp)
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
    status = kinematics_pass(body_int, body_real, q, q, ws, S, tmp, np.bool_(False))
    if status:
        return status
    n = body_int.shape[0]
    for i in range(n):
        _body_inertia(body_real, i, ws, i)
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        if p >= 0:
            _inertia_transform_add(ws, i, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2], ws[i], WI, ws[p], WI)
    # F = I^C S in tmp[0:36] (6 per column), carried to the base: M_ji = S_j^T F
    for i in range(n):
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        _inertia_times_subspace(ws, i, S, nvj, tmp)
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


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
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
    status = poses(body_int, body_real, q, v, ws, S, tmp, rot, pos, omega, vel, np.bool_(True))
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


@njit
def _add_force(rot, wrench, body, px, py, pz, fx, fy, fz, body_axes):
    """wrench[body] += the force (fx, fy, fz) at the body point (px, py, pz), in body coordinates about the origin;
    (fx, fy, fz) in ground axes, or in body axes if ``body_axes``. No-op for the ground."""
    if body < 0:
        return
    if not body_axes:  # R^T F
        gx = fx
        gy = fy
        gz = fz
        fx = rot[body, 0, 0] * gx + rot[body, 1, 0] * gy + rot[body, 2, 0] * gz
        fy = rot[body, 0, 1] * gx + rot[body, 1, 1] * gy + rot[body, 2, 1] * gz
        fz = rot[body, 0, 2] * gx + rot[body, 1, 2] * gy + rot[body, 2, 2] * gz
    wrench[body, 0] += py * fz - pz * fy
    wrench[body, 1] += pz * fx - px * fz
    wrench[body, 2] += px * fy - py * fx
    wrench[body, 3] += fx
    wrench[body, 4] += fy
    wrench[body, 5] += fz
