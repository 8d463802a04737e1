"""The spatial (3D) recursive formulation as a time loop's system.

``SpatialSystem`` holds a ``Model3D``'s packed arrays, the run's inputs and the articulated-body workspace; the
functions below implement the interface of ``formulation`` for it. The integrated state is
y = (q (nq), v (nv), W_dissipated, W_applied), shape (nq + nv + 2,): configuration and velocity are kept apart
(nq != nv with quaternions). Its derivative: Euclidean coordinates (angles, slides, a free joint's position) have
q' = v; a quaternion (w, x, y, z) has quat' = 1/2 quat (x) (0, omega), omega the joint's angular velocity in the
CHILD frame (right multiplication, as ``rm.integrate_configuration``); v' = the articulated-body forward dynamics
(``spatial.forward_dynamics``, Featherstone 2008 table 7.1). The projection renormalises every quaternion after
each accepted step (the exact flow keeps |quat| = 1; a Runge-Kutta step drifts by its truncation error), so a
time loop never builds up a norm drift; within a step (stages, trial and rejected steps) the dynamics and the
inputs see each quaternion normalised. ``recursive_mbd.integrate`` builds the system.
"""

import math
from collections import namedtuple

import numba
from numba.core import types
from numba.extending import overload

from . import formulation
from .layout import STATUS_NONFINITE_STATE, STATUS_OK
from .spatial import forward_dynamics

# The cached machine code of these kernels embeds ``spatial.forward_dynamics`` as it was when they were compiled,
# and numba checks only this file's stamp: when the articulated-body workspace contract changes (sperf18: spherical
# joints fill no S, UD, uD rows), this file must change too or its __pycache__ be cleared (_kernels/spatial).
njit = numba.njit(cache=True, error_model="numpy")

SpatialSystem = namedtuple("SpatialSystem", [
    "body_int", "body_real", "gravity",  # the packed Model3D (model3d.py)
    "euclid_q", "euclid_v",  # (ne,) int64: the Euclidean coordinates in q and their rates in v (q' = v)
    "quat_q", "quat_v",  # (nk,) int64: first index of each quaternion in q and of its omega (3) in v
    "tau_const",  # (nv,) constant generalised forces
    "tau_offset",  # (1,) int64: slot of tau in u, -1 when tau is constant
    "u",  # (ninputs,) the input vector the input callback fills
    "q", "v", "tau", "vdot",  # (nq,), (nv,), (nv,), (nv,) scratch of one evaluation
    "ws", "S", "UD", "uD", "tmp",  # the articulated-body workspace (spatial.Workspace3D)
])


def _is_spatial(system):
    return isinstance(system, types.BaseNamedTuple) and system.instance_class is SpatialSystem


@njit
def project_state(inputs, key, system, t, y):
    """Renormalise every quaternion of y in place; a zero or non-finite one is STATUS_NONFINITE_STATE."""
    quat_q = system.quat_q
    for j in range(quat_q.shape[0]):
        a = quat_q[j]
        norm = math.sqrt(y[a] * y[a] + y[a + 1] * y[a + 1] + y[a + 2] * y[a + 2] + y[a + 3] * y[a + 3])
        if not (norm > 0.0 and math.isfinite(norm)):
            return STATUS_NONFINITE_STATE
        for c in range(4):
            y[a + c] /= norm
    return STATUS_OK


@njit
def system_rhs(inputs, key, system, t, y, dy):
    """dy = (q', v', dissipated power, applied power) at (t, y); returns the status (the inputs', the kernel's)."""
    q = system.q
    v = system.v
    tau = system.tau
    vdot = system.vdot
    nq = q.shape[0]
    nv = v.shape[0]
    for k in range(nq):
        q[k] = y[k]
    for k in range(nv):
        v[k] = y[nq + k]
    # the rotation of a quaternion off unit norm (a trial step, a rejected one) is that of its normalised value:
    # f extends off the unit sphere so that any stage is defined, and the inputs and the kernel see unit ones
    status = project_state(inputs, key, system, t, q)
    if status != STATUS_OK:
        return status
    status = inputs(key, t, q, v, system.u)
    if status != STATUS_OK:
        return status
    offset = system.tau_offset[0]
    power = 0.0
    for k in range(nv):
        tau[k] = system.tau_const[k] + (system.u[offset + k] if offset >= 0 else 0.0)
        power += tau[k] * v[k]
    status = forward_dynamics(system.body_int, system.body_real, system.gravity, q, v, tau, system.ws, system.S,
                              system.UD, system.uD, system.tmp, vdot)
    if status != STATUS_OK:
        return status
    euclid_q = system.euclid_q
    euclid_v = system.euclid_v
    for k in range(euclid_q.shape[0]):
        dy[euclid_q[k]] = v[euclid_v[k]]
    quat_q = system.quat_q
    quat_v = system.quat_v
    for j in range(quat_q.shape[0]):
        a = quat_q[j]
        b = quat_v[j]
        w, x, yq, z = y[a], y[a + 1], y[a + 2], y[a + 3]
        ox, oy, oz = v[b], v[b + 1], v[b + 2]
        # quat' = 1/2 quat (x) (0, omega): the Hamilton product with a pure quaternion on the right
        dy[a] = -0.5 * (x * ox + yq * oy + z * oz)
        dy[a + 1] = 0.5 * (w * ox + yq * oz - z * oy)
        dy[a + 2] = 0.5 * (w * oy - x * oz + z * ox)
        dy[a + 3] = 0.5 * (w * oz + x * oy - yq * ox)
    for k in range(nv):
        dy[nq + k] = vdot[k]
    dy[nq + nv] = 0.0  # no dampers on spatial models yet
    dy[nq + nv + 1] = power
    return STATUS_OK


@njit
def projects(system):
    """True when the model has quaternions (spherical or free joints) to renormalise after every accepted step."""
    return system.quat_q.shape[0] > 0


@overload(formulation.rhs, jit_options={"cache": True})
def _rhs(inputs, key, system, t, y, dy):
    if _is_spatial(system):
        return lambda inputs, key, system, t, y, dy: system_rhs(inputs, key, system, t, y, dy)  # noqa: PLW0108
    return None


@overload(formulation.project, jit_options={"cache": True})
def _project(inputs, key, system, t, y):
    if _is_spatial(system):
        return lambda inputs, key, system, t, y: project_state(inputs, key, system, t, y)  # noqa: PLW0108
    return None


@overload(formulation.projects, jit_options={"cache": True})
def _projects(system):
    if _is_spatial(system):
        return lambda system: projects(system)  # noqa: PLW0108
    return None
