"""Forward dynamics of a tree whose joints are all spherical or revolute: the route ``rm.forward_dynamics`` takes for
such a model (``entry.route``). ``tree.forward_dynamics`` stays the general route (every joint type), the one the
time loops, the implicit methods and the other kernels call.

The articulated-body algorithm of ``tree`` (Featherstone, Rigid Body Dynamics Algorithms, 2008, table 7.1), with
body i's spatial vectors in other coordinates: world-aligned axes at its joint point J_i (the child point cp_i),
instead of its own axes at its frame's origin. The algorithm is the same in any coordinates of each body; in these

- the transform from the parent's coordinates to the child's is a translation by r_i = J_i - J_p, r_i = R_p (pp_i -
  cp_p) (R_p the parent's child-to-world rotation): an inertia moves to the parent by the shift of
  ``tree._transformed_inertia`` without its three rotations, and a spherical joint's condensed inertia
  [[0, 0], [0, C^a]] by two cross-product sweeps;
- the motion subspace has no lever arm: (R_i; 0) for a spherical joint (its rates are in the child's axes, R_i the
  child-to-world rotation) and (a_i; 0), a_i = R_i a, for a revolute joint (a the axis, joint frame = child axes);
- the ground's acceleration (0; -g) is in these coordinates already.

Each body's own inertia about J_i is rotated to the world axes once (R I_J R^T). Operation counts per interior body
of a chain (``benchmarks/spatial_kernels.py``): 377 multiplies for a spherical joint, 422 for a revolute one,
against the general route's 492 and 592, with fewer divisions and square roots. The results are the general
route's to round-off (tests/test_spatial_perf.py compares them on random trees), not bit for bit: the arithmetic
differs.

A joint is singular (``STATUS_SINGULAR`` of its body) when a pivot of its joint block D = S^T I^A S (the LDL^T
pivots of a spherical joint's 3x3 block, a revolute joint's D) is not above SINGULAR_RTOL times its squared scale,
as in the general route. The squared scale is the general route's bound in these coordinates, without its square
roots: tr A + |l|^2 tr C, A and C the rotational and translational blocks of I^A at J_i and l the lever arm that
the general route's subspace carries at the body's origin (cp for a spherical joint, cp x a for a revolute one),
so that the entries that cancel in the shift from the origin to J_i (a point mass at the joint point, a gimbal
lock) are measured against the numbers they cancelled from.

Statuses: those of ``tree.forward_dynamics`` (non-finite input, -(body + 1) for a quaternion off unit norm by more
than QUATERNION_TOL, a singular joint, a non-finite output). The workspace is the first nbodies * W_SPATIAL floats
of ``spatial.Workspace3D.buffer``, rows of W_SPATIAL with the fields below (not ``spatial.layout``'s: nothing reads
what this route leaves there).
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import STATUS_OK, STATUS_SINGULAR
from ..trig import sincos
from .layout import (
    A1,
    CP,
    IC,
    JTYPE,
    MASS,
    MCOM,
    PARENT,
    PP,
    QIDX,
    QUATERNION_TOL,
    R0,
    SINGULAR_RTOL,
    SPHERICAL,
    VIDX,
)

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False)  # as ``tree``'s kernels
inline_njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False, inline="always")

# ---- workspace row (W_SPATIAL floats) -----------------------------------------------------------------------------
XR = 0  # R_i, child-to-world rotation, row-major (9)
XT = 9  # r_i = J_i - J_parent, world axes (3)
XV = 12  # the velocity (omega; velocity of J_i) after pass 1, the bias acceleration c after pass 2, the acceleration
# a after pass 3 (6)
XP = 18  # the bias forces the children moved here (6), valid while XF is set
XI = 24  # the inertias the children moved here (21, packed as ``spatial.layout`` PA, PB, PC), valid while XF is set;
# after the body's condensation: a spherical joint's K = D^-1 B (9, row-major) and D^-1 u (3); a revolute joint's
# K' (6) and D^-1 u - K . c (1) (``condense``) and its axis a_i (3)
XF = 45  # 0.0 until a first child has stored its inertia and force at XI and XP, then 1.0 (pass 1 clears it)


@inline_njit
def _is_identity(body_real, i):
    """True if body i's joint frame is its parent's (R0 = 1): the product with R0 is skipped."""
    return (body_real[i, R0] == 1.0 and body_real[i, R0 + 4] == 1.0 and body_real[i, R0 + 8] == 1.0
            and body_real[i, R0 + 1] == 0.0 and body_real[i, R0 + 2] == 0.0 and body_real[i, R0 + 3] == 0.0
            and body_real[i, R0 + 5] == 0.0 and body_real[i, R0 + 6] == 0.0 and body_real[i, R0 + 7] == 0.0)


@njit
def kinematics(body_int, body_real, q, v, ws):
    """Pass 1, base to tip: R_i, r_i and the velocity (omega; velocity of J_i) of every body, world axes; XF cleared.
    Returns STATUS_OK or -(body + 1) for a quaternion off unit norm."""
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        k = body_int[i, QIDX]
        kv = body_int[i, VIDX]
        # M = R_p R0
        if p < 0:
            p00 = p11 = p22 = 1.0
            p01 = p02 = p10 = p12 = p20 = p21 = 0.0
            pwx = pwy = pwz = pux = puy = puz = 0.0
            rx = body_real[i, PP]
            ry = body_real[i, PP + 1]
            rz = body_real[i, PP + 2]
        else:
            p00 = ws[p, XR]
            p01 = ws[p, XR + 1]
            p02 = ws[p, XR + 2]
            p10 = ws[p, XR + 3]
            p11 = ws[p, XR + 4]
            p12 = ws[p, XR + 5]
            p20 = ws[p, XR + 6]
            p21 = ws[p, XR + 7]
            p22 = ws[p, XR + 8]
            dx = body_real[i, PP] - body_real[p, CP]
            dy = body_real[i, PP + 1] - body_real[p, CP + 1]
            dz = body_real[i, PP + 2] - body_real[p, CP + 2]
            rx = p00 * dx + p01 * dy + p02 * dz
            ry = p10 * dx + p11 * dy + p12 * dz
            rz = p20 * dx + p21 * dy + p22 * dz
            pwx = ws[p, XV]
            pwy = ws[p, XV + 1]
            pwz = ws[p, XV + 2]
            pux = ws[p, XV + 3] + pwy * rz - pwz * ry
            puy = ws[p, XV + 4] + pwz * rx - pwx * rz
            puz = ws[p, XV + 5] + pwx * ry - pwy * rx
        if _is_identity(body_real, i):
            m00, m01, m02, m10, m11, m12, m20, m21, m22 = p00, p01, p02, p10, p11, p12, p20, p21, p22
        else:
            o = R0
            m00 = p00 * body_real[i, o] + p01 * body_real[i, o + 3] + p02 * body_real[i, o + 6]
            m01 = p00 * body_real[i, o + 1] + p01 * body_real[i, o + 4] + p02 * body_real[i, o + 7]
            m02 = p00 * body_real[i, o + 2] + p01 * body_real[i, o + 5] + p02 * body_real[i, o + 8]
            m10 = p10 * body_real[i, o] + p11 * body_real[i, o + 3] + p12 * body_real[i, o + 6]
            m11 = p10 * body_real[i, o + 1] + p11 * body_real[i, o + 4] + p12 * body_real[i, o + 7]
            m12 = p10 * body_real[i, o + 2] + p11 * body_real[i, o + 5] + p12 * body_real[i, o + 8]
            m20 = p20 * body_real[i, o] + p21 * body_real[i, o + 3] + p22 * body_real[i, o + 6]
            m21 = p20 * body_real[i, o + 1] + p21 * body_real[i, o + 4] + p22 * body_real[i, o + 7]
            m22 = p20 * body_real[i, o + 2] + p21 * body_real[i, o + 5] + p22 * body_real[i, o + 8]
        # the joint's rotation J (row-major), as ``tree._spherical_kinematics`` and ``tree._revolute_kinematics``,
        # and a revolute joint's angular velocity in world axes, M a vj (R a = M J a = M a)
        spherical = body_int[i, JTYPE] == SPHERICAL
        ox = oy = oz = 0.0
        if spherical:
            w = q[k]
            x = q[k + 1]
            y = q[k + 2]
            z = q[k + 3]
            norm2 = w * w + x * x + y * y + z * z
            if not abs(math.sqrt(norm2) - 1.0) <= QUATERNION_TOL:
                return -(i + 1)
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
            j00 = 1.0 - (yy + zz)
            j01 = xy - wz
            j02 = xz + wy
            j10 = xy + wz
            j11 = 1.0 - (xx + zz)
            j12 = yz - wx
            j20 = xz - wy
            j21 = yz + wx
            j22 = 1.0 - (xx + yy)
        else:
            ax = body_real[i, A1]
            ay = body_real[i, A1 + 1]
            az = body_real[i, A1 + 2]
            sn, cs = sincos(q[k])
            t = 1.0 - cs
            txy = t * ax * ay
            txz = t * ax * az
            tyz = t * ay * az
            j00 = cs + t * ax * ax
            j01 = txy - sn * az
            j02 = txz + sn * ay
            j10 = txy + sn * az
            j11 = cs + t * ay * ay
            j12 = tyz - sn * ax
            j20 = txz - sn * ay
            j21 = tyz + sn * ax
            j22 = cs + t * az * az
            rate = v[kv]
            ox = (m00 * ax + m01 * ay + m02 * az) * rate
            oy = (m10 * ax + m11 * ay + m12 * az) * rate
            oz = (m20 * ax + m21 * ay + m22 * az) * rate
        r00 = m00 * j00 + m01 * j10 + m02 * j20
        r01 = m00 * j01 + m01 * j11 + m02 * j21
        r02 = m00 * j02 + m01 * j12 + m02 * j22
        r10 = m10 * j00 + m11 * j10 + m12 * j20
        r11 = m10 * j01 + m11 * j11 + m12 * j21
        r12 = m10 * j02 + m11 * j12 + m12 * j22
        r20 = m20 * j00 + m21 * j10 + m22 * j20
        r21 = m20 * j01 + m21 * j11 + m22 * j21
        r22 = m20 * j02 + m21 * j12 + m22 * j22
        if spherical:  # its angular velocity in world axes, R vj
            jx = v[kv]
            jy = v[kv + 1]
            jz = v[kv + 2]
            ox = r00 * jx + r01 * jy + r02 * jz
            oy = r10 * jx + r11 * jy + r12 * jz
            oz = r20 * jx + r21 * jy + r22 * jz
        ws[i, XR] = r00
        ws[i, XR + 1] = r01
        ws[i, XR + 2] = r02
        ws[i, XR + 3] = r10
        ws[i, XR + 4] = r11
        ws[i, XR + 5] = r12
        ws[i, XR + 6] = r20
        ws[i, XR + 7] = r21
        ws[i, XR + 8] = r22
        ws[i, XT] = rx
        ws[i, XT + 1] = ry
        ws[i, XT + 2] = rz
        ws[i, XV] = pwx + ox
        ws[i, XV + 1] = pwy + oy
        ws[i, XV + 2] = pwz + oz
        ws[i, XV + 3] = pux
        ws[i, XV + 4] = puy
        ws[i, XV + 5] = puz
        ws[i, XF] = 0.0
    return STATUS_OK


@inline_njit
def _to_parent(ws, p, axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz, cxy,
               cxz, cyz, nx, ny, nz, fx, fy, fz):
    """Adds a child's condensed inertia and bias force, already at the parent's joint point, to ws[p] (XI, XP):
    stored by the first child (XF clear, then set), added by the others."""
    if ws[p, XF] == 0.0:
        ws[p, XF] = 1.0
        ws[p, XI] = axx
        ws[p, XI + 1] = ayy
        ws[p, XI + 2] = azz
        ws[p, XI + 3] = axy
        ws[p, XI + 4] = axz
        ws[p, XI + 5] = ayz
        ws[p, XI + 6] = b00
        ws[p, XI + 7] = b01
        ws[p, XI + 8] = b02
        ws[p, XI + 9] = b10
        ws[p, XI + 10] = b11
        ws[p, XI + 11] = b12
        ws[p, XI + 12] = b20
        ws[p, XI + 13] = b21
        ws[p, XI + 14] = b22
        ws[p, XI + 15] = cxx
        ws[p, XI + 16] = cyy
        ws[p, XI + 17] = czz
        ws[p, XI + 18] = cxy
        ws[p, XI + 19] = cxz
        ws[p, XI + 20] = cyz
        ws[p, XP] = nx
        ws[p, XP + 1] = ny
        ws[p, XP + 2] = nz
        ws[p, XP + 3] = fx
        ws[p, XP + 4] = fy
        ws[p, XP + 5] = fz
    else:
        ws[p, XI] += axx
        ws[p, XI + 1] += ayy
        ws[p, XI + 2] += azz
        ws[p, XI + 3] += axy
        ws[p, XI + 4] += axz
        ws[p, XI + 5] += ayz
        ws[p, XI + 6] += b00
        ws[p, XI + 7] += b01
        ws[p, XI + 8] += b02
        ws[p, XI + 9] += b10
        ws[p, XI + 10] += b11
        ws[p, XI + 11] += b12
        ws[p, XI + 12] += b20
        ws[p, XI + 13] += b21
        ws[p, XI + 14] += b22
        ws[p, XI + 15] += cxx
        ws[p, XI + 16] += cyy
        ws[p, XI + 17] += czz
        ws[p, XI + 18] += cxy
        ws[p, XI + 19] += cxz
        ws[p, XI + 20] += cyz
        ws[p, XP] += nx
        ws[p, XP + 1] += ny
        ws[p, XP + 2] += nz
        ws[p, XP + 3] += fx
        ws[p, XP + 4] += fy
        ws[p, XP + 5] += fz


@njit
def condense(body_int, body_real, v, tau, ws):
    """Pass 2, tip to base: each body's inertia at J_i (world axes), its bias force v x* I v and bias acceleration
    c = v x vJ (into XV), its articulated inertia and bias force (its own plus what its children moved to XI, XP),
    the condensation of its joint (kept at XI for pass 3) and the condensed inertia and force moved to the parent's
    joint point. Returns STATUS_OK or a singular joint's status."""
    for i in range(body_int.shape[0] - 1, -1, -1):
        p = body_int[i, PARENT]
        kv = body_int[i, VIDX]
        spherical = body_int[i, JTYPE] == SPHERICAL
        r00 = ws[i, XR]
        r01 = ws[i, XR + 1]
        r02 = ws[i, XR + 2]
        r10 = ws[i, XR + 3]
        r11 = ws[i, XR + 4]
        r12 = ws[i, XR + 5]
        r20 = ws[i, XR + 6]
        r21 = ws[i, XR + 7]
        r22 = ws[i, XR + 8]
        # the body's inertia at J_i: m, h = m (c - cp) and I_J = I_C + (|h|^2 1 - h h^T) / m in its axes, then
        # A = R I_J R^T and h in world axes (a massless body: h = 0, I_J = I_C, as ``tree._origin_inertia``)
        cpx = body_real[i, CP]
        cpy = body_real[i, CP + 1]
        cpz = body_real[i, CP + 2]
        mass = body_real[i, MASS]
        hx = body_real[i, MCOM] - mass * cpx
        hy = body_real[i, MCOM + 1] - mass * cpy
        hz = body_real[i, MCOM + 2] - mass * cpz
        inv = 1.0 / mass if mass > 0.0 else 0.0
        ixx = body_real[i, IC] + (hy * hy + hz * hz) * inv
        iyy = body_real[i, IC + 1] + (hx * hx + hz * hz) * inv
        izz = body_real[i, IC + 2] + (hx * hx + hy * hy) * inv
        ixy = body_real[i, IC + 3] - hx * hy * inv
        ixz = body_real[i, IC + 4] - hx * hz * inv
        iyz = body_real[i, IC + 5] - hy * hz * inv
        t00 = r00 * ixx + r01 * ixy + r02 * ixz
        t01 = r00 * ixy + r01 * iyy + r02 * iyz
        t02 = r00 * ixz + r01 * iyz + r02 * izz
        t10 = r10 * ixx + r11 * ixy + r12 * ixz
        t11 = r10 * ixy + r11 * iyy + r12 * iyz
        t12 = r10 * ixz + r11 * iyz + r12 * izz
        t20 = r20 * ixx + r21 * ixy + r22 * ixz
        t21 = r20 * ixy + r21 * iyy + r22 * iyz
        t22 = r20 * ixz + r21 * iyz + r22 * izz
        axx = t00 * r00 + t01 * r01 + t02 * r02
        ayy = t10 * r10 + t11 * r11 + t12 * r12
        azz = t20 * r20 + t21 * r21 + t22 * r22
        axy = t00 * r10 + t01 * r11 + t02 * r12
        axz = t00 * r20 + t01 * r21 + t02 * r22
        ayz = t10 * r20 + t11 * r21 + t12 * r22
        gx = r00 * hx + r01 * hy + r02 * hz
        gy = r10 * hx + r11 * hy + r12 * hz
        gz = r20 * hx + r21 * hy + r22 * hz
        # its bias force v x* I v: momentum (A w + h x u; m u + w x h), then (w x n + u x f; w x f)
        wx = ws[i, XV]
        wy = ws[i, XV + 1]
        wz = ws[i, XV + 2]
        ux = ws[i, XV + 3]
        uy = ws[i, XV + 4]
        uz = ws[i, XV + 5]
        nx = axx * wx + axy * wy + axz * wz + gy * uz - gz * uy
        ny = axy * wx + ayy * wy + ayz * wz + gz * ux - gx * uz
        nz = axz * wx + ayz * wy + azz * wz + gx * uy - gy * ux
        fx = mass * ux + wy * gz - wz * gy
        fy = mass * uy + wz * gx - wx * gz
        fz = mass * uz + wx * gy - wy * gx
        pnx = wy * nz - wz * ny + uy * fz - uz * fy
        pny = wz * nx - wx * nz + uz * fx - ux * fz
        pnz = wx * ny - wy * nx + ux * fy - uy * fx
        pfx = wy * fz - wz * fy
        pfy = wz * fx - wx * fz
        pfz = wx * fy - wy * fx
        # the joint's angular velocity jw (world axes) and c = v x (jw; 0) = (w x jw; u x jw)
        tx = ty = tz = sx = sy = sz = 0.0
        if spherical:
            tx = tau[kv]
            ty = tau[kv + 1]
            tz = tau[kv + 2]
            vx = v[kv]
            vy = v[kv + 1]
            vz = v[kv + 2]
            jx = r00 * vx + r01 * vy + r02 * vz
            jy = r10 * vx + r11 * vy + r12 * vz
            jz = r20 * vx + r21 * vy + r22 * vz
            # the squared lever arm of the general route's subspace at the body's origin: |cp|^2
            lever2 = cpx * cpx + cpy * cpy + cpz * cpz
        else:
            ex = body_real[i, A1]
            ey = body_real[i, A1 + 1]
            ez = body_real[i, A1 + 2]
            sx = r00 * ex + r01 * ey + r02 * ez
            sy = r10 * ex + r11 * ey + r12 * ez
            sz = r20 * ex + r21 * ey + r22 * ez
            rate = v[kv]
            jx = sx * rate
            jy = sy * rate
            jz = sz * rate
            lx = cpy * ez - cpz * ey
            ly = cpz * ex - cpx * ez
            lz = cpx * ey - cpy * ex
            lever2 = lx * lx + ly * ly + lz * lz
        c0 = wy * jz - wz * jy
        c1 = wz * jx - wx * jz
        c2 = wx * jy - wy * jx
        c3 = uy * jz - uz * jy
        c4 = uz * jx - ux * jz
        c5 = ux * jy - uy * jx
        ws[i, XV] = c0
        ws[i, XV + 1] = c1
        ws[i, XV + 2] = c2
        ws[i, XV + 3] = c3
        ws[i, XV + 4] = c4
        ws[i, XV + 5] = c5
        # the articulated inertia [[A, B], [B^T, C]] (B = [h]x, C = m 1 for the body alone) and bias force
        b00 = 0.0
        b01 = -gz
        b02 = gy
        b10 = gz
        b11 = 0.0
        b12 = -gx
        b20 = -gy
        b21 = gx
        b22 = 0.0
        cxx = mass
        cyy = mass
        czz = mass
        cxy = 0.0
        cxz = 0.0
        cyz = 0.0
        if ws[i, XF] != 0.0:
            axx += ws[i, XI]
            ayy += ws[i, XI + 1]
            azz += ws[i, XI + 2]
            axy += ws[i, XI + 3]
            axz += ws[i, XI + 4]
            ayz += ws[i, XI + 5]
            b00 += ws[i, XI + 6]
            b01 += ws[i, XI + 7]
            b02 += ws[i, XI + 8]
            b10 += ws[i, XI + 9]
            b11 += ws[i, XI + 10]
            b12 += ws[i, XI + 11]
            b20 += ws[i, XI + 12]
            b21 += ws[i, XI + 13]
            b22 += ws[i, XI + 14]
            cxx += ws[i, XI + 15]
            cyy += ws[i, XI + 16]
            czz += ws[i, XI + 17]
            cxy += ws[i, XI + 18]
            cxz += ws[i, XI + 19]
            cyz += ws[i, XI + 20]
            pnx += ws[i, XP]
            pny += ws[i, XP + 1]
            pnz += ws[i, XP + 2]
            pfx += ws[i, XP + 3]
            pfy += ws[i, XP + 4]
            pfz += ws[i, XP + 5]
        rx = ws[i, XT]
        ry = ws[i, XT + 1]
        rz = ws[i, XT + 2]
        bound = SINGULAR_RTOL * (abs(axx + ayy + azz) + lever2 * abs(cxx + cyy + czz))  # the squared scale
        if spherical:
            # S = (R; 0): D = R^T A R. Solved in world axes: D^-1 = R^T A^-1 R, so with K = A^-1 B and
            # D^-1 u = R^T A^-1 (R tau - n^A), vdot = R^T (A^-1 (R tau - n^A) - a'_w - K a'_v) (pass 3). A^-1 =
            # adj(A) / det(A): one division; the LDL^T pivots of A (axx, a22 / axx, det / a22) tested against
            # the scale (those of D are the same numbers up to the rotation, whose invariants they bound)
            a00 = ayy * azz - ayz * ayz
            a11 = axx * azz - axz * axz
            a22 = axx * ayy - axy * axy
            a01 = axz * ayz - axy * azz
            a02 = axy * ayz - axz * ayy
            a12 = axy * axz - axx * ayz
            det = axx * a00 + axy * a01 + axz * a02
            if not (axx > bound and a22 > bound * axx and det > bound * a22):
                return STATUS_SINGULAR | (i << 4)
            idet = 1.0 / det
            i00 = a00 * idet
            i11 = a11 * idet
            i22 = a22 * idet
            i01 = a01 * idet
            i02 = a02 * idet
            i12 = a12 * idet
            k00 = i00 * b00 + i01 * b10 + i02 * b20
            k01 = i00 * b01 + i01 * b11 + i02 * b21
            k02 = i00 * b02 + i01 * b12 + i02 * b22
            k10 = i01 * b00 + i11 * b10 + i12 * b20
            k11 = i01 * b01 + i11 * b11 + i12 * b21
            k12 = i01 * b02 + i11 * b12 + i12 * b22
            k20 = i02 * b00 + i12 * b10 + i22 * b20
            k21 = i02 * b01 + i12 * b11 + i22 * b21
            k22 = i02 * b02 + i12 * b12 + i22 * b22
            # the joint torque in world axes, u = R tau - n^A, and A^-1 u
            gnx = r00 * tx + r01 * ty + r02 * tz
            gny = r10 * tx + r11 * ty + r12 * tz
            gnz = r20 * tx + r21 * ty + r22 * tz
            ux_ = gnx - pnx
            uy_ = gny - pny
            uz_ = gnz - pnz
            ox = i00 * ux_ + i01 * uy_ + i02 * uz_
            oy = i01 * ux_ + i11 * uy_ + i12 * uz_
            oz = i02 * ux_ + i12 * uy_ + i22 * uz_
            ws[i, XI] = k00
            ws[i, XI + 1] = k01
            ws[i, XI + 2] = k02
            ws[i, XI + 3] = k10
            ws[i, XI + 4] = k11
            ws[i, XI + 5] = k12
            ws[i, XI + 6] = k20
            ws[i, XI + 7] = k21
            ws[i, XI + 8] = k22
            ws[i, XI + 9] = ox
            ws[i, XI + 10] = oy
            ws[i, XI + 11] = oz
            if p < 0:
                continue
            # I^a = [[0, 0], [0, C^a]], C^a = C - B^T K; p^a = (R tau; f + C^a c_v + B^T A^-1 u)
            qxx = cxx - (b00 * k00 + b10 * k10 + b20 * k20)
            qyy = cyy - (b01 * k01 + b11 * k11 + b21 * k21)
            qzz = czz - (b02 * k02 + b12 * k12 + b22 * k22)
            qxy = cxy - (b00 * k01 + b10 * k11 + b20 * k21)
            qxz = cxz - (b00 * k02 + b10 * k12 + b20 * k22)
            qyz = cyz - (b01 * k02 + b11 * k12 + b21 * k22)
            pfx += qxx * c3 + qxy * c4 + qxz * c5 + b00 * ox + b10 * oy + b20 * oz
            pfy += qxy * c3 + qyy * c4 + qyz * c5 + b01 * ox + b11 * oy + b21 * oz
            pfz += qxz * c3 + qyz * c4 + qzz * c5 + b02 * ox + b12 * oy + b22 * oz
            # to the parent's joint point: G = [r]C^a (columns c -> r x c), H = G[r] (rows g -> g x r); the
            # parent gains [[-H, G], [G^T, C^a]] and (R tau + r x f; f)
            g00 = ry * qxz - rz * qxy
            g10 = rz * qxx - rx * qxz
            g20 = rx * qxy - ry * qxx
            g01 = ry * qyz - rz * qyy
            g11 = rz * qxy - rx * qyz
            g21 = rx * qyy - ry * qxy
            g02 = ry * qzz - rz * qyz
            g12 = rz * qxz - rx * qzz
            g22 = rx * qyz - ry * qxz
            axx = g02 * ry - g01 * rz
            ayy = g10 * rz - g12 * rx
            azz = g21 * rx - g20 * ry
            axy = g00 * rz - g02 * rx
            axz = g01 * rx - g00 * ry
            ayz = g11 * rx - g10 * ry
            b00, b01, b02, b10, b11, b12, b20, b21, b22 = g00, g01, g02, g10, g11, g12, g20, g21, g22
            cxx, cyy, czz, cxy, cxz, cyz = qxx, qyy, qzz, qxy, qxz, qyz
            pnx = gnx
            pny = gny
            pnz = gnz
        else:
            # s = (a; 0): U = I^A s = (A a; B^T a), D = a . A a (a scalar)
            u0 = axx * sx + axy * sy + axz * sz
            u1 = axy * sx + ayy * sy + ayz * sz
            u2 = axz * sx + ayz * sy + azz * sz
            u3 = b00 * sx + b10 * sy + b20 * sz
            u4 = b01 * sx + b11 * sy + b21 * sz
            u5 = b02 * sx + b12 * sy + b22 * sz
            d = sx * u0 + sy * u1 + sz * u2
            if not d > bound:
                return STATUS_SINGULAR | (i << 4)
            dinv = 1.0 / d
            ud = dinv * (tau[kv] - (sx * pnx + sy * pny + sz * pnz))
            k0 = u0 * dinv
            k1 = u1 * dinv
            k2 = u2 * dinv
            k3 = u3 * dinv
            k4 = u4 * dinv
            k5 = u5 * dinv
            # for pass 3, vdot = D^-1 u - K . (X a_P + c) as D^-1 u - K . c - K' . a_P with K' = (K_w + r x K_v;
            # K_v) (K_v . (w x r) = w . (r x K_v)): the body-to-body chain of pass 3 is one dot product shorter
            ws[i, XI] = k0 + (ry * k5 - rz * k4)
            ws[i, XI + 1] = k1 + (rz * k3 - rx * k5)
            ws[i, XI + 2] = k2 + (rx * k4 - ry * k3)
            ws[i, XI + 3] = k3
            ws[i, XI + 4] = k4
            ws[i, XI + 5] = k5
            ws[i, XI + 6] = ud - ((k0 * c0 + k1 * c1) + (k2 * c2 + k3 * c3) + (k4 * c4 + k5 * c5))
            ws[i, XI + 7] = sx
            ws[i, XI + 8] = sy
            ws[i, XI + 9] = sz
            if p < 0:
                continue
            # I^a = I^A - K U^T (upper triangle), p^a = p^A + I^a c + U D^-1 u
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
            pnx += axx * c0 + axy * c1 + axz * c2 + b00 * c3 + b01 * c4 + b02 * c5 + u0 * ud
            pny += axy * c0 + ayy * c1 + ayz * c2 + b10 * c3 + b11 * c4 + b12 * c5 + u1 * ud
            pnz += axz * c0 + ayz * c1 + azz * c2 + b20 * c3 + b21 * c4 + b22 * c5 + u2 * ud
            pfx += b00 * c0 + b10 * c1 + b20 * c2 + cxx * c3 + cxy * c4 + cxz * c5 + u3 * ud
            pfy += b01 * c0 + b11 * c1 + b21 * c2 + cxy * c3 + cyy * c4 + cyz * c5 + u4 * ud
            pfz += b02 * c0 + b12 * c1 + b22 * c2 + cxz * c3 + cyz * c4 + czz * c5 + u5 * ud
            # to the parent's joint point (``tree._transformed_inertia`` without the rotations): E = B[r] (rows
            # b -> b x r), G = [r]C (columns c -> r x c), H = G[r]; A - E - E^T - H, B + G, C
            e00 = b01 * rz - b02 * ry
            e01 = b02 * rx - b00 * rz
            e02 = b00 * ry - b01 * rx
            e10 = b11 * rz - b12 * ry
            e11 = b12 * rx - b10 * rz
            e12 = b10 * ry - b11 * rx
            e20 = b21 * rz - b22 * ry
            e21 = b22 * rx - b20 * rz
            e22 = b20 * ry - b21 * rx
            g00 = ry * cxz - rz * cxy
            g10 = rz * cxx - rx * cxz
            g20 = rx * cxy - ry * cxx
            g01 = ry * cyz - rz * cyy
            g11 = rz * cxy - rx * cyz
            g21 = rx * cyy - ry * cxy
            g02 = ry * czz - rz * cyz
            g12 = rz * cxz - rx * czz
            g22 = rx * cyz - ry * cxz
            axx -= 2.0 * e00 + (g01 * rz - g02 * ry)
            ayy -= 2.0 * e11 + (g12 * rx - g10 * rz)
            azz -= 2.0 * e22 + (g20 * ry - g21 * rx)
            axy -= e01 + e10 + (g02 * rx - g00 * rz)
            axz -= e02 + e20 + (g00 * ry - g01 * rx)
            ayz -= e12 + e21 + (g10 * ry - g11 * rx)
            b00 += g00
            b01 += g01
            b02 += g02
            b10 += g10
            b11 += g11
            b12 += g12
            b20 += g20
            b21 += g21
            b22 += g22
        # the condensed force moved to the parent's joint point: n + r x f
        _to_parent(ws, p, axx, ayy, azz, axy, axz, ayz, b00, b01, b02, b10, b11, b12, b20, b21, b22, cxx, cyy, czz,
                   cxy, cxz, cyz, pnx + ry * pfz - rz * pfy, pny + rz * pfx - rx * pfz, pnz + rx * pfy - ry * pfx, pfx,
                   pfy, pfz)
    return STATUS_OK


@njit
def accelerate(body_int, gravity, ws, out):
    """Pass 3, base to tip: a' = X a_P + c (the ground's a = (0; -g)), the joint's accelerations into out and
    a = a' + S vdot into XV."""
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        kv = body_int[i, VIDX]
        if p < 0:
            pwx = pwy = pwz = 0.0
            pvx = -gravity[0]
            pvy = -gravity[1]
            pvz = -gravity[2]
        else:
            pwx = ws[p, XV]
            pwy = ws[p, XV + 1]
            pwz = ws[p, XV + 2]
            pvx = ws[p, XV + 3]
            pvy = ws[p, XV + 4]
            pvz = ws[p, XV + 5]
        rx = ws[i, XT]
        ry = ws[i, XT + 1]
        rz = ws[i, XT + 2]
        wx = pwx + ws[i, XV]
        wy = pwy + ws[i, XV + 1]
        wz = pwz + ws[i, XV + 2]
        vx = pvx + (pwy * rz - pwz * ry) + ws[i, XV + 3]
        vy = pvy + (pwz * rx - pwx * rz) + ws[i, XV + 4]
        vz = pvz + (pwx * ry - pwy * rx) + ws[i, XV + 5]
        if body_int[i, JTYPE] == SPHERICAL:
            # A^-1 (R tau - n^A) - a'_w - K a'_v, world axes; vdot = R^T of it
            dx = ws[i, XI + 9] - wx - (ws[i, XI] * vx + ws[i, XI + 1] * vy + ws[i, XI + 2] * vz)
            dy = ws[i, XI + 10] - wy - (ws[i, XI + 3] * vx + ws[i, XI + 4] * vy + ws[i, XI + 5] * vz)
            dz = ws[i, XI + 11] - wz - (ws[i, XI + 6] * vx + ws[i, XI + 7] * vy + ws[i, XI + 8] * vz)
            out[kv] = ws[i, XR] * dx + ws[i, XR + 3] * dy + ws[i, XR + 6] * dz
            out[kv + 1] = ws[i, XR + 1] * dx + ws[i, XR + 4] * dy + ws[i, XR + 7] * dz
            out[kv + 2] = ws[i, XR + 2] * dx + ws[i, XR + 5] * dy + ws[i, XR + 8] * dz
        else:
            acc = ws[i, XI + 6] - ((ws[i, XI] * pwx + ws[i, XI + 1] * pwy) + (ws[i, XI + 2] * pwz + ws[i, XI + 3] * pvx)
                                   + (ws[i, XI + 4] * pvy + ws[i, XI + 5] * pvz))
            out[kv] = acc
            dx = ws[i, XI + 7] * acc
            dy = ws[i, XI + 8] * acc
            dz = ws[i, XI + 9] * acc
        ws[i, XV] = wx + dx
        ws[i, XV + 1] = wy + dy
        ws[i, XV + 2] = wz + dz
        ws[i, XV + 3] = vx
        ws[i, XV + 4] = vy
        ws[i, XV + 5] = vz
