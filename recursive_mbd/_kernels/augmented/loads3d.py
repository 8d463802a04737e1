"""The joint loads' blocks of the absolute route's Newton matrix (``integrate.augmented3d_implicit``, "Loads that
depend on the state"), compiled.

A joint's forces tau_j (nv_j: tau constant, the joint's spring-dampers, a tau function's value) act on its child and
its parent as the wrench W(z) tau_j (``spatial3d.joint_wrench``: force at the joint point and moment, ground axes,
the opposite on the parent), and the joint forces depend on the state through the joint's coordinates and rates,
q_j(z) and v_j(z, zd), which the run recovers from the two bodies' poses and velocities (``_joint_state``
below, the recovery of ``recover3d``'s samples too):

    L_j(z, zd) = W(z_i, z_p) tau_j(q_j(z_i, z_p), v_j(z_i, z_p, zd_i, zd_p))

is a function of the child's and the parent's state only, so its derivative couples a body with its parent: tree
structured, like the joints' geometric stiffness H. Its derivative by the step's unknowns (dz = c_stiff T dvdot,
dzd = c_damp dvdot, the Newton matrix's columns) is taken by central differences of L_j along each of the 12
columns of the two bodies (``joint_load_blocks``), the bodies moved as the step's update moves them (a position by
c_stiff s, a rotation by R exp([c_stiff s T e_k]) in body axes, the velocities by c_damp s): one function of 12
numbers, smooth, evaluated 24 times a joint, with a relative step of 1e-5, whose error (truncation 1e-10 relative,
round-off 1e-11) is far below what would slow Newton's convergence. Why not the derivative in closed form: q_j(z)
and v_j are the recovery's, whose derivatives off the constraints (at every Newton iterate) differ from the joint's
motion subspace, for eight joint types; the differences take them all, and the wrench's turning with the bodies
(tau constant), by the same few lines.

In tau_j, what depends on the state: the joint's spring-dampers (elements: Euclidean joints' -k (q - rest) - c v,
linear, given as the blocks tq = -diag(k), tv = -diag(c); a spherical joint's -k phi(q), phi its rotation vector
from rest, evaluated here, and -c v in tv), and a tau function's dependence on the joint's own coordinates and rates
(tq, tv: its diagonal blocks by differences, ``augmented3d_implicit._Loads``); tq acts on the joint's tangent
increment of q (an angle's or a position's difference; a quaternion's rotation vector of q0^-1 q in child axes, as
v_j). A driven joint's coordinate and rate are its driver's (the run's inputs put them there): no increment.
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..spatial.elements import _spring_rotation
from ..spatial.layout import (
    A1,
    A2,
    CP,
    CYLINDRICAL,
    EJK,
    FREE,
    JTYPE,
    NVJ,
    PARENT,
    PLANAR,
    PP,
    PRISMATIC,
    QIDX,
    R0,
    REVOLUTE,
    SPHERICAL,
    UNIVERSAL,
    VIDX,
)
from .spatial3d import (
    _add,
    _com,
    _cross,
    _dot,
    _joint_geometry,
    _mat_mat,
    _mat_t_vec,
    _mat_vec,
    _perpendiculars,
    _quaternion_matrix,
    _scale,
    _sub,
    _vec,
    joint_wrench,
)

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)
inline = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True, inline="always")

# the central differences' step: a rotation's 1e-5 rad, a position's 1e-5 times the body's radius of gyration
STEP = 1e-5


# ---- a joint's state from its two bodies' poses (``recover3d``'s samples and the blocks below) -------------------

@inline
def _quaternion(m):
    """The unit quaternion (w, x, y, z), w >= 0, of the rotation m (row-major 9-tuple): Shepperd's method, the
    largest of the four squared components first."""
    trace = m[0] + m[4] + m[8]
    s0 = 1.0 + trace
    s1 = 1.0 + 2.0 * m[0] - trace
    s2 = 1.0 + 2.0 * m[4] - trace
    s3 = 1.0 + 2.0 * m[8] - trace
    big = 0
    top = s0
    if s1 > top:
        big = 1
        top = s1
    if s2 > top:
        big = 2
        top = s2
    if s3 > top:
        big = 3
        top = s3
    s = math.sqrt(max(top, 0.0))  # 2 |component|
    if big == 0:
        q = (s / 2, (m[7] - m[5]) / (2 * s), (m[2] - m[6]) / (2 * s), (m[3] - m[1]) / (2 * s))
    elif big == 1:
        q = ((m[7] - m[5]) / (2 * s), s / 2, (m[1] + m[3]) / (2 * s), (m[2] + m[6]) / (2 * s))
    elif big == 2:
        q = ((m[2] - m[6]) / (2 * s), (m[1] + m[3]) / (2 * s), s / 2, (m[5] + m[7]) / (2 * s))
    else:
        q = ((m[3] - m[1]) / (2 * s), (m[2] + m[6]) / (2 * s), (m[5] + m[7]) / (2 * s), s / 2)
    sign = -1.0 if q[0] < 0.0 else 1.0
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return (sign * q[0] / norm, sign * q[1] / norm, sign * q[2] / norm, sign * q[3] / norm)


@inline
def _axis_angle(m, axis):
    """The angle of the rotation m about the unit ``axis`` (exact when it turns about it)."""
    n1, _ = _perpendiculars(axis)
    turned = _mat_vec(m, n1)
    return math.atan2(_dot(axis, _cross(n1, turned)), _dot(n1, turned))


@inline
def _axis_rotation(axis, angle):
    """The rotation by ``angle`` about the unit ``axis`` (Rodrigues)."""
    s = math.sin(angle)
    c = 1.0 - math.cos(angle)
    x = axis[0]
    y = axis[1]
    z = axis[2]
    return (1.0 - c * (y * y + z * z), -s * z + c * x * y, s * y + c * x * z,
            s * z + c * x * y, 1.0 - c * (x * x + z * z), -s * x + c * y * z,
            -s * y + c * x * z, s * x + c * y * z, 1.0 - c * (x * x + y * y))


@inline
def _joint_state(body_int, body_real, z, zd, i, q, v, s):
    """Body i's joint coordinates and velocities from the sample's poses z (nbodies, 7) and velocities zd
    (nbodies, 6) into q[s], v[s]."""
    jt = body_int[i, JTYPE]
    p = body_int[i, PARENT]
    k = body_int[i, QIDX]
    kv = body_int[i, VIDX]
    rot, _ = _quaternion_matrix(z, i)
    c_i = _vec(z, i, 0)
    if p >= 0:
        rot_p, _ = _quaternion_matrix(z, p)
        c_p = _vec(z, p, 0)
        v_p = _vec(zd, p, 0)
        om_p = _vec(zd, p, 3)
        point_p = _add(c_p, _mat_vec(rot_p, _sub(_vec(body_real, i, PP), _com(body_real, p))))
    else:
        rot_p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
        c_p = v_p = om_p = (0.0, 0.0, 0.0)
        point_p = _vec(body_real, i, PP)
    r0 = (body_real[i, R0], body_real[i, R0 + 1], body_real[i, R0 + 2], body_real[i, R0 + 3], body_real[i, R0 + 4],
          body_real[i, R0 + 5], body_real[i, R0 + 6], body_real[i, R0 + 7], body_real[i, R0 + 8])
    frame = _mat_mat(rot_p, r0)
    frame_t = (frame[0], frame[3], frame[6], frame[1], frame[4], frame[7], frame[2], frame[5], frame[8])
    arm = _mat_vec(rot, _sub(_vec(body_real, i, CP), _com(body_real, i)))
    point_c = _add(c_i, arm)
    om = _vec(zd, i, 3)
    rel = _mat_mat(frame_t, rot)  # R_j
    t = _mat_t_vec(frame, _sub(point_c, point_p))
    w = _mat_t_vec(frame, _sub(om, om_p))
    u = _mat_t_vec(frame, _sub(_sub(_add(_vec(zd, i, 0), _cross(om, arm)), v_p), _cross(om_p, _sub(point_c, c_p))))
    a = _vec(body_real, i, A1)
    if jt in (REVOLUTE, CYLINDRICAL):
        q[s, k] = _axis_angle(rel, a)
        v[s, kv] = _dot(a, w)
        if jt == CYLINDRICAL:
            q[s, k + 1] = _dot(a, t)
            v[s, kv + 1] = _dot(a, u)
    elif jt == PRISMATIC:
        q[s, k] = _dot(a, t)
        v[s, kv] = _dot(a, u)
    elif jt == UNIVERSAL:
        b = _vec(body_real, i, A2)
        turned = _mat_vec(rel, b)  # Rot(a1, alpha) a2
        across = _sub(b, _scale(_dot(a, b), a))
        alpha = math.atan2(_dot(a, _cross(across, turned)), _dot(across, turned))
        q[s, k] = alpha
        q[s, k + 1] = _axis_angle(_mat_mat(_axis_rotation(a, -alpha), rel), b)
        normal = _cross(a, turned)
        nn = _dot(normal, normal)
        v[s, kv] = _dot(w, _cross(turned, normal)) / nn
        v[s, kv + 1] = _dot(w, _cross(normal, a)) / nn
    elif jt in (SPHERICAL, FREE):
        at = k
        if jt == FREE:
            for c in range(3):
                q[s, k + c] = t[c]
                v[s, kv + c] = u[c]
            at = k + 3
            kv += 3
        quat = _quaternion(rel)
        spin = _mat_t_vec(rel, w)
        for c in range(4):
            q[s, at + c] = quat[c]
        for c in range(3):
            v[s, kv + c] = spin[c]
    elif jt == PLANAR:
        q[s, k] = t[0]
        q[s, k + 1] = t[1]
        q[s, k + 2] = math.atan2(rel[3], rel[0])
        v[s, kv] = u[0]
        v[s, kv + 1] = u[1]
        v[s, kv + 2] = w[2]


@inline
def _rotation_gap(q0, k0, q, k):
    """The rotation vector (3) of conj(q0[k0:k0 + 4]) (x) q[k:k + 4] (unit quaternions), the shorter rotation."""
    aw = q0[k0]
    ax = -q0[k0 + 1]
    ay = -q0[k0 + 2]
    az = -q0[k0 + 3]
    bw = q[k]
    bx = q[k + 1]
    by = q[k + 2]
    bz = q[k + 3]
    w = aw * bw - ax * bx - ay * by - az * bz
    x = aw * bx + ax * bw + ay * bz - az * by
    y = aw * by - ax * bz + ay * bw + az * bx
    z = aw * bz + ax * by - ay * bx + az * bw
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    f = 2.0 / w if s < 1e-8 else 2.0 * math.atan2(s, w) / s
    return x * f, y * f, z * f


@inline
def _wrapped(a):
    """a taken into (-pi, pi] (a recovered angle's difference)."""
    return a - 2.0 * math.pi * math.floor((a + math.pi) / (2.0 * math.pi))


@njit
def _joint_loads(body_int, body_real, elem_real, sph_start, sph_elem, driven, tau, tq, tv, zp, zdp, i, qs, vs, q0,
                 v0, tloc, dq, out):
    """L_j of body i's joint at (zp, zdp) into out (12): the force and moment on the child, then on the parent
    (ground axes), of tau_j = tau + tq dq + tv dv + the spherical springs' -k (phi(q) - phi(q0)) (module
    docstring), dq, dv the joint's increments from its state (q0, v0: (1, nq), (1, nv)) at the iterate."""
    jt = body_int[i, JTYPE]
    nv = body_int[i, NVJ]
    k = body_int[i, QIDX]
    kv = body_int[i, VIDX]
    for d in range(6):
        tloc[d] = 0.0
        dq[d] = 0.0
        dq[6 + d] = 0.0
    held = driven.shape[0] > 0 and driven[i] != 0
    if not held:
        _joint_state(body_int, body_real, zp, zdp, i, qs, vs, 0)
        if jt == SPHERICAL:
            dq[0], dq[1], dq[2] = _rotation_gap(q0[0], k, qs[0], k)
        elif jt == FREE:
            for d in range(3):
                dq[d] = qs[0, k + d] - q0[0, k + d]
            dq[3], dq[4], dq[5] = _rotation_gap(q0[0], k + 3, qs[0], k + 3)
        else:
            for d in range(nv):
                dq[d] = _wrapped(qs[0, k + d] - q0[0, k + d])
        for d in range(nv):
            dq[6 + d] = vs[0, kv + d] - v0[0, kv + d]
    for d in range(nv):
        s = tau[kv + d]
        for e in range(nv):
            s += tq[i, d, e] * dq[e] + tv[i, d, e] * dq[6 + e]
        tloc[d] = s
    if not held:
        for at in range(sph_start[i], sph_start[i + 1]):
            e = sph_elem[at]
            now = _spring_rotation(body_int, elem_real, e, qs[0], i)
            before = _spring_rotation(body_int, elem_real, e, q0[0], i)
            for d in range(3):
                tloc[d] -= elem_real[e, EJK] * (now[d] - before[d])
    rot, _ = _quaternion_matrix(zp, i)
    frame, _, _, r_c, rho, _, _, _, _ = _joint_geometry(body_int, body_real, zp, zdp, i, rot)
    force, moment = joint_wrench(body_real, jt, i, frame, rot, tloc, 0)
    child = _add(moment, _cross(r_c, force))
    parent = _add(moment, _cross(rho, force))
    for c in range(3):
        out[c] = force[c]
        out[3 + c] = child[c]
        out[6 + c] = -force[c]
        out[9 + c] = -parent[c]


@inline
def _move(zp, zbp, zdp, tangent, b, col, pose, rate):
    """Body b moved along the Newton matrix's column col (0-2 its centre of mass, 3-5 its body-axis rotation) as
    the step's update moves it: the position by ``pose`` (or the rotation by R exp([pose T e_k])) and the velocity
    by ``rate`` (c' or omega_b; zdp's omega = R omega_b)."""
    if col < 3:
        zp[b, col] += pose
        zdp[b, col] += rate
        return
    c = col - 3
    tx = pose * tangent[b, 0, c]
    ty = pose * tangent[b, 1, c]
    tz = pose * tangent[b, 2, c]
    phi = math.sqrt(tx * tx + ty * ty + tz * tz)
    half = math.sin(0.5 * phi) / phi if phi > 0.0 else 0.5
    ew = math.cos(0.5 * phi)
    ex = half * tx
    ey = half * ty
    ez = half * tz
    qw = zp[b, 3]
    qx = zp[b, 4]
    qy = zp[b, 5]
    qz = zp[b, 6]
    nw = qw * ew - qx * ex - qy * ey - qz * ez
    nx = qw * ex + ew * qx + qy * ez - qz * ey
    ny = qw * ey + ew * qy + qz * ex - qx * ez
    nz = qw * ez + ew * qz + qx * ey - qy * ex
    norm = math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    zp[b, 3] = nw / norm
    zp[b, 4] = nx / norm
    zp[b, 5] = ny / norm
    zp[b, 6] = nz / norm
    rot, _ = _quaternion_matrix(zp, b)
    om = (zbp[b, 3], zbp[b, 4], zbp[b, 5])
    om = (om[0] + (rate if c == 0 else 0.0), om[1] + (rate if c == 1 else 0.0), om[2] + (rate if c == 2 else 0.0))
    w = _mat_vec(rot, om)
    for r in range(3):
        zdp[b, 3 + r] = w[r]


@njit
def joint_load_blocks(body_int, body_real, elem_real, sph_start, sph_elem, loaded, driven, tau, tq, tv, zp, zbp,
                      zdp, tangent, c_stiff, c_damp, scale, kload, qs, vs, q0, v0):
    """The joint loads' blocks of the Newton matrix (module docstring) into kload (nbodies, 12, 12): for each body
    i in ``loaded`` (its joint's loads depend on the state), minus the derivative of L_j by the columns of the
    child (0-5) and the parent (6-11; none at the ground), the moment rows in body axes (R^T times the ground
    ones; the turn of R^T on the moments is ``implicit3d.factor``'s), by central differences; the other bodies'
    blocks zero. tau (nv,): the joint forces at the iterate (zp, zbp, zdp: poses, velocities with omega in body and
    ground axes; tangent (nbodies, 3, 3) the update's tangent maps); tq, tv (nbodies, nvmax, nvmax): each joint's
    tau_j by its tangent increment of q and by v; elem_real the model's elements, sph_start (nbodies + 1,) and
    sph_elem the spherical joint springs of each body; driven (nbodies,) flags, or (0,); scale (nbodies,) the
    bodies' radii of gyration [m] (a position column's step); qs, q0 (1, nq), vs, v0 (1, nv) scratch. The poses
    moved are put back bit for bit."""
    n = body_int.shape[0]
    tloc = np.empty(6)
    dq = np.empty(12)
    plus = np.empty(12)
    minus = np.empty(12)
    for i in range(n):
        for r in range(12):
            for c in range(12):
                kload[i, r, c] = 0.0
    for i in loaded:
        p = body_int[i, PARENT]
        _joint_state(body_int, body_real, zp, zdp, i, q0, v0, 0)
        rot, _ = _quaternion_matrix(zp, i)
        if p >= 0:
            rot_p, _ = _quaternion_matrix(zp, p)
        else:
            rot_p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
        for side in range(2 if p >= 0 else 1):
            b = i if side == 0 else p
            saved_z = (zp[b, 0], zp[b, 1], zp[b, 2], zp[b, 3], zp[b, 4], zp[b, 5], zp[b, 6])
            saved_v = (zdp[b, 0], zdp[b, 1], zdp[b, 2], zdp[b, 3], zdp[b, 4], zdp[b, 5])
            for col in range(6):
                pose = STEP * (scale[b] if col < 3 else 1.0)
                s = pose / c_stiff  # the column's amount: the pose moves by c_stiff s
                for sign in range(2):
                    _move(zp, zbp, zdp, tangent, b, col, pose if sign == 0 else -pose,
                          c_damp * s if sign == 0 else -c_damp * s)
                    _joint_loads(body_int, body_real, elem_real, sph_start, sph_elem, driven, tau, tq, tv, zp, zdp,
                                 i, qs, vs, q0, v0, tloc, dq, plus if sign == 0 else minus)
                    for c in range(7):
                        zp[b, c] = saved_z[c]
                    for c in range(6):
                        zdp[b, c] = saved_v[c]
                for r in range(12):
                    plus[r] = (plus[r] - minus[r]) / (2.0 * s)
                moment_c = _mat_t_vec(rot, (plus[3], plus[4], plus[5]))
                moment_p = _mat_t_vec(rot_p, (plus[9], plus[10], plus[11]))
                at = 6 * side + col
                for r in range(3):  # the residual is M vdot + ... - L: minus the loads' derivative
                    kload[i, r, at] = -plus[r]
                    kload[i, 3 + r, at] = -moment_c[r]
                    kload[i, 6 + r, at] = -plus[6 + r]
                    kload[i, 9 + r, at] = -moment_p[r]
