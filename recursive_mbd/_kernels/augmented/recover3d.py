"""The joint coordinates of a spatial model's absolute states compiled, and their constraint drift: what
``dynamics.augmented3d.joint_from_absolute`` computes body by body in Python, in one O(N) pass a sample, for the
runs that keep many samples of long chains (``integrate.augmented3d_implicit``).

Body i's joint state follows from its pose and its parent's (``spatial3d`` names them): the relative rotation
R_j = F^T R_i (F = R_p R0 the joint frame in ground axes), the joint point's offset t = F^T (P_c - P_p), and the
relative rates w = F^T (omega_i - omega_p), u = F^T (the child point's velocity less the parent's coinciding
point's); each joint type reads its coordinates from them (angles by atan2, quaternions with w >= 0 by Shepperd's
method), exactly where the joint's constraints hold.
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..spatial.layout import (
    A1,
    A2,
    CP,
    CYLINDRICAL,
    FREE,
    JTYPE,
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
from .implicit3d import CHUNKS, PARALLEL_BODIES, pnjit
from .spatial3d import (
    _add,
    _com,
    _cross,
    _dot,
    _mat_mat,
    _mat_t_vec,
    _mat_vec,
    _perpendiculars,
    _quaternion_matrix,
    _scale,
    _sub,
    _vec,
    joint_rows,
)

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)
inline = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True, inline="always")


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


@njit
def _sample_bodies(body_int, body_real, zs, zds, q, v, s, jc, jp, res, gam, start, stop):
    """Bodies start to stop - 1 of sample s of ``joint_states``; the largest |C| of their joints (NaN stays)."""
    no_tau = np.zeros(0)
    load = np.empty((2, 6))
    worst = 0.0
    for i in range(start, stop):
        _joint_state(body_int, body_real, zs, zds, i, q, v, s)
        m = joint_rows(body_int, body_real, zs, zds, no_tau, i, jc, jp, res, gam, load)
        for r in range(m):
            if not abs(res[i, r]) <= worst:  # a NaN stays
                worst = abs(res[i, r])
    return worst


@pnjit
def joint_states(body_int, body_real, z, zd, q, v, drift, jc, jp, res, gam):
    """The joint coordinates q (nt, nq), velocities v (nt, nv) and the constraint drift max |C| of the joints
    (nt,) of the absolute samples z (nt, nbodies, 7) and zd (nt, nbodies, 6) (omega in ground axes, unit
    quaternions; the caller checks shapes and dtypes). jc, jp (nbodies, 6, 6), res, gam (nbodies, 6) are scratch
    for the joints' rows. O(N) a sample; from PARALLEL_BODIES bodies on numba's threads (``prange``), in CHUNKS
    ranges of bodies (``implicit3d``'s constants: the same results whatever the threads)."""
    n = z.shape[1]
    parts = np.empty(CHUNKS)
    for s in range(z.shape[0]):
        zs = z[s]
        zds = zd[s]
        if n < PARALLEL_BODIES:
            drift[s] = _sample_bodies(body_int, body_real, zs, zds, q, v, s, jc, jp, res, gam, 0, n)
            continue
        for k in numba.prange(CHUNKS):
            parts[k] = _sample_bodies(body_int, body_real, zs, zds, q, v, s, jc, jp, res, gam, k * n // CHUNKS,
                                      (k + 1) * n // CHUNKS)
        worst = 0.0
        for k in range(CHUNKS):
            if not parts[k] <= worst:  # a NaN stays
                worst = parts[k]
        drift[s] = worst
