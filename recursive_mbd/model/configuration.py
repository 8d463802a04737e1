"""The configuration maps of spatial models: q (+) v dt (``integrate_configuration``) and its inverse, the log map
(``difference``), on Euclidean coordinates and unit quaternions; q (nq,) and v (nv,) differ in size (a quaternion has
4 coordinates and 3 rates). numpy only.
"""


import numpy as np

from .. import _checks
from .._kernels.spatial import layout as SL
from ..errors import StateError
from . import _validation as V
from .spatial import Model3D


def _model3d(model):
    if not isinstance(model, Model3D):
        raise TypeError(f"model must be a recursive_mbd.Model3D, got {type(model).__name__}")
    return model._require_compiled()


def _state_vector(x, n, what):
    arr = np.ascontiguousarray(V.real_numbers(x, what, "an array of real numbers"), dtype=np.float64)
    if arr.shape != (n,):
        raise StateError(f"{what} must have shape ({n},) for this model, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise StateError(f"{what}[{bad}] is not finite ({arr[bad]})")
    return arr


def _quaternions(model, q, what):
    """The (k, 4) quaternions of q's spherical and free joints, normalised; StateError if one is off by > 1e-6."""
    quats = q[model._quat_q[:, None] + np.arange(4)]
    norms = np.sqrt(np.einsum("ij,ij->i", quats, quats))
    bad = np.flatnonzero(np.abs(norms - 1.0) > SL.QUATERNION_TOL)
    if bad.size:
        b = int(bad[0])
        body = int(model._quat_body[b])
        raise StateError(f"{what}[{model._quat_q[b]}:{model._quat_q[b] + 4}], the quaternion of body "
                         f"{model.names[body]!r} (index {body}), has norm {norms[b]!r}, not 1 (to 1e-6)")
    return quats / norms[:, None]


def _quat_multiply(a, b):
    """Hamilton products of (k, 4) quaternion arrays (w, x, y, z)."""
    aw, ax, ay, az = a.T
    bw, bx, by, bz = b.T
    return np.stack((aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw), axis=-1)


def integrate_configuration(model, q, v, dt=1.0):
    """q (+) v dt: the configuration reached from q moving at the constant velocity v for dt.

    Euclidean coordinates (angles, slides, a free joint's position) add v dt; a quaternion becomes
    quat (x) exp(omega dt / 2) (omega in the child frame: right multiplication), renormalised.

    Parameters
    ----------
    model : Model3D
    q : (nq,) array_like
        Configuration; its quaternions must be unit to 1e-6 (they are normalised first).
    v : (nv,) array_like
        Velocity.
    dt : float
        Time step [s] (may be negative).

    Returns
    -------
    q_new : ndarray (nq,)

    Raises StateError where v dt is so large that the result overflows (no finite configuration).
    """
    model = _model3d(model)
    q = _state_vector(q, model._nq, "q")
    v = _state_vector(v, model._nv, "v")
    dt = _checks.real(dt, "dt")
    out = q.copy()
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below, naming the coordinate
        out[model._euclid_q] += v[model._euclid_v] * dt
        if model._quat_q.size:
            quats = _quaternions(model, q, "q")
            half = v[model._quat_v[:, None] + np.arange(3)] * (0.5 * dt)
            angle = np.linalg.norm(half, axis=1)
            # sin(angle)/angle without 0/0: its series below 1e-4 (error < 1e-17)
            small = angle < 1e-4
            sinc = np.where(small, 1.0 - angle * angle / 6.0, np.sin(angle) / np.where(small, 1.0, angle))
            step = np.column_stack((np.cos(angle), half * sinc[:, None]))
            new = _quat_multiply(quats, step)
            new /= np.linalg.norm(new, axis=1)[:, None]
            out[model._quat_q[:, None] + np.arange(4)] = new
    if not np.all(np.isfinite(out)):  # v dt overflowed (a rotation angle of 1e300 rad has no finite quaternion)
        bad = int(np.flatnonzero(~np.isfinite(out))[0])
        raise StateError(f"q (+) v dt is not finite: entry {bad} overflowed (v dt too large: dt = {dt!r}, "
                         f"max |v| = {float(np.abs(v).max())!r})")
    return out


def difference(model, q0, q1):
    """The velocity v (nv,) with ``integrate_configuration(model, q0, v) == q1`` (the log map, shortest rotation).

    Euclidean coordinates subtract; a quaternion pair gives omega = 2 log(conj(quat0) (x) quat1) in the child frame,
    taking the shorter of the two rotations (angle <= pi).
    """
    model = _model3d(model)
    q0 = _state_vector(q0, model._nq, "q0")
    q1 = _state_vector(q1, model._nq, "q1")
    v = np.zeros(model._nv)
    v[model._euclid_v] = q1[model._euclid_q] - q0[model._euclid_q]
    if model._quat_q.size:
        a = _quaternions(model, q0, "q0")
        b = _quaternions(model, q1, "q1")
        rel = _quat_multiply(a * np.array([1.0, -1.0, -1.0, -1.0]), b)
        rel[rel[:, 0] < 0.0] *= -1.0  # q and -q are the same rotation: take the shorter way
        s = np.linalg.norm(rel[:, 1:], axis=1)
        w = rel[:, 0]
        half = np.arctan2(s, w)  # half the rotation angle, in [0, pi/2]
        small = s < 1e-8
        factor = np.where(small, 2.0 / w, 2.0 * half / np.where(small, 1.0, s))
        v[model._quat_v[:, None] + np.arange(3)] = rel[:, 1:] * factor[:, None]
    return v
