"""Frames, Jacobians, accelerations, centre of mass and momentum of a spatial model (``Model3D``).

Every function runs the kinematics pass of the dynamics kernels (``_kernels.spatial.tree.poses``, O(N)), then a
kernel of ``_kernels.spatial.frames``: a body Jacobian walks the body's path to the root (O(depth)), the centre of
mass, its Jacobian and the momentum visit every body once (O(N)). They take a ``Model3D`` (a planar ``Model`` is a
TypeError) and check their inputs as ``rm.forward_dynamics`` does (StateError naming q, v, vdot or point, ModelError
for an unknown body); a result that overflows is a StateError naming it.

Conventions (``docs/guide/spatial.md``, "Frames, Jacobians and momentum", has the table against Pinocchio's):

- A Jacobian's columns are the velocity coordinates v (nv,), not the rates of q: a quaternion joint's columns are
  its angular velocity's (the child frame's), as ``rm.integrate_configuration`` moves q.
- Rows of a 6-row Jacobian or acceleration: linear first, then angular, as Pinocchio's. The linear rows belong to a
  point fixed on the body (``point``, body frame, default its origin).
- ``frame="world"``: ground axes, at the point (Pinocchio's LOCAL_WORLD_ALIGNED); ``"local"``: the body's axes,
  at the point (Pinocchio's LOCAL); ``"spatial"`` (Jacobians only): ground axes, the linear rows the velocity of
  the body-fixed point passing through the ground origin (Pinocchio's WORLD, Featherstone's spatial velocity).
- Accelerations are classical: the second time derivatives of the point's position and the angular acceleration,
  J vdot + J' v with J the "world" Jacobian, then expressed in the frame's axes; at vdot = 0 (``vdot=None``) they are
  the J-dot v term. Gravity is not in them (it is a force, not an acceleration of the frames).
"""

import numpy as np

from .. import _checks
from .._kernels.spatial import frames as frame_kernels
from .._kernels.spatial import layout as SL
from .._kernels.spatial import tree as kernels
from .._kernels.spatial.loops import bias_accelerations
from ..errors import ModelError, StateError
from ..model.statuses import raise_spatial_status
from ._evaluation import state_vector
from .spatial import _pose_arrays, workspace

_ORIGIN = (0.0, 0.0, 0.0)
_JACOBIAN_FRAMES = ("world", "local", "spatial")
_ACCELERATION_FRAMES = ("world", "local")


def _cross(a, b):
    """a x b of 3-vectors, or of a 3-vector and the columns of a (3, k) array (np.cross costs ~15 us a call)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _frame(frame, allowed):
    if frame not in allowed:
        listed = ", ".join(repr(f) for f in allowed)
        raise StateError(f"frame must be one of {listed}, got {frame!r}")
    return frame


def _run_poses(model, q, v):
    """The workspace after the kinematics pass at (q, v) (v None: positions only)."""
    ws = _pose_arrays(workspace(model), model.nbodies)
    q = state_vector(q, model._nq, "q", "nq")
    with_velocity = v is not None
    v = state_vector(v, model._nv, "v", "nv") if with_velocity else ws.zeros
    status = kernels.poses(model.body_int, model.body_real, q, v, ws.ws, ws.S, ws.tmp, ws.rot, ws.pos, ws.omega,
                           ws.vel, with_velocity)
    if status:
        raise_spatial_status(model, status, ("q", "v"))
    return ws  # the poses are not checked here: each function checks the result it makes of them


def _body_point(model, body, point):
    """(body index, point (3,) as finite float64); the errors name the body or the point."""
    workspace(model)  # TypeError for a model that is not a Model3D, before its body_index is asked
    index = model.body_index(body)
    return index, _checks.finite_array(point, "point", (3,))


def _world_jacobian(model, ws, index, point):
    """The "world" Jacobian (6, nv) of the body point ``point`` (body frame) from the poses in ws, and that point in
    ground coordinates."""
    rot = ws.rot[index]
    position = ws.pos[index] + rot @ point
    jac = np.zeros((6, model._nv))
    frame_kernels.frame_jacobian(model.body_int, ws.S, ws.rot, ws.pos, index, position, jac)
    return _checks.check_finite_result(jac, "the Jacobian"), position


def frame_placement(model, q, body, point=_ORIGIN):
    """Orientation and position of a body's frame, or of a point fixed on the body.

    Parameters
    ----------
    model : Model3D
    q : (nq,) array_like
    body : int or str
        Body index or name.
    point : (3,) array_like
        A point in the body frame [m]; default its origin.

    Returns
    -------
    R : ndarray (3, 3)
        Body-to-ground rotation (its columns are the body axes in ground axes).
    p : ndarray (3,)
        The point in the ground frame [m]: p_body + R point.

    Pinocchio: ``data.oMf[frame]`` of a frame on the body at ``point`` gives (``rotation``, ``translation``).
    """
    index, point = _body_point(model, body, point)
    ws = _run_poses(model, q, None)
    rot = _checks.check_finite_result(ws.rot[index].copy(), "R")
    return rot, _checks.check_finite_result(ws.pos[index] + rot @ point, "p")


def body_jacobian(model, q, body, point=_ORIGIN, frame="world"):
    """J (6, nv): the velocity of a point fixed on a body (rows 0-2) and the body's angular velocity (rows 3-5) per
    unit of each velocity coordinate, (v_point; omega) = J v.

    Parameters
    ----------
    model : Model3D
    q : (nq,) array_like
    body : int or str
        Body index or name.
    point : (3,) array_like
        The point in the body frame [m]; default the body frame's origin.
    frame : {"world", "local", "spatial"}
        "world": ground axes (Pinocchio's LOCAL_WORLD_ALIGNED); "local": the body's axes (Pinocchio's LOCAL);
        "spatial": ground axes, the linear rows the velocity of the body-fixed point at the ground origin
        (Pinocchio's WORLD; ``point`` does not change it).

    Columns off the body's path to the root are zero. O(N) for the poses, then O(depth).
    """
    index, point = _body_point(model, body, point)
    frame = _frame(frame, _JACOBIAN_FRAMES)
    ws = _run_poses(model, q, None)
    jac, position = _world_jacobian(model, ws, index, point)
    if frame == "local":
        rot_t = ws.rot[index].T
        jac[:3] = rot_t @ jac[:3]
        jac[3:] = rot_t @ jac[3:]
    elif frame == "spatial":  # v(origin) = v(P) + omega x (0 - P) = v(P) + P x omega
        jac[:3] += _cross(position, jac[3:])
        _checks.check_finite_result(jac, "the Jacobian")
    return jac


def point_jacobian(model, q, body, point=_ORIGIN, frame="world"):
    """J (3, nv): the velocity of a point fixed on a body per unit of each velocity coordinate, v_point = J v.

    ``point`` in the body frame [m] (default its origin); ``frame`` "world" (ground axes) or "local" (the body's
    axes). The first three rows of ``body_jacobian``.
    """
    return body_jacobian(model, q, body, point, _frame(frame, _ACCELERATION_FRAMES))[:3].copy()


def body_acceleration(model, q, v, vdot, body, point=_ORIGIN, frame="world"):
    """(a_point; alpha) (6,): the classical acceleration of a point fixed on a body [m/s^2] and the body's angular
    acceleration [rad/s^2], for the velocity coordinates v and their rates vdot.

    In ground axes ("world") it is J vdot + J' v with J = ``body_jacobian(..., frame="world")``; ``vdot=None``
    gives the J-dot v term J' v (the acceleration at vdot = 0). ``frame="local"`` expresses the same vectors in the
    body's axes (Pinocchio's ``getFrameClassicalAcceleration`` with LOCAL; it is not the derivative of the local
    Jacobian's J v: that is Pinocchio's spatial ``getFrameAcceleration`` with LOCAL, whose linear part lacks
    omega x v_point). Gravity is not included. O(N).
    """
    index, point = _body_point(model, body, point)
    frame = _frame(frame, _ACCELERATION_FRAMES)
    ws = _run_poses(model, q, v)
    if vdot is not None:  # checked here: no kernel sees it (a NaN would read as an overflow of the result)
        vdot = _checks.finite_array(state_vector(vdot, model._nv, "vdot", "nv"), "vdot")
    acc = np.empty((model.nbodies, 6))
    bias_accelerations(model.body_int, ws.ws, ws.tmp, acc)
    # body axes: a_P = a_O + alpha x s + omega x (v_O + omega x s), at vdot = 0 (Featherstone's spatial acceleration
    # (alpha; a_O) of the velocity-product pass made classical)
    omega, velocity = ws.ws[index, SL.WV:SL.WV + 3], ws.ws[index, SL.WV + 3:SL.WV + 6]
    alpha, origin_acc = acc[index, :3], acc[index, 3:]
    point_acc = origin_acc + _cross(alpha, point) + _cross(omega, velocity + _cross(omega, point))
    rot = ws.rot[index]
    result = np.concatenate((rot @ point_acc, rot @ alpha))
    if vdot is not None:
        jac, _ = _world_jacobian(model, ws, index, point)
        result += jac @ vdot
    if frame == "local":
        result = np.concatenate((rot.T @ result[:3], rot.T @ result[3:]))
    return _checks.check_finite_result(result, "the acceleration")


def point_acceleration(model, q, v, vdot, body, point=_ORIGIN, frame="world"):
    """The classical acceleration (3,) [m/s^2] of a point fixed on a body: J vdot + J' v in ground axes ("world")
    or the same vector in the body's axes ("local"); ``vdot=None`` gives J' v. The first three entries of
    ``body_acceleration``."""
    return body_acceleration(model, q, v, vdot, body, point, frame)[:3].copy()


def _totals(model, q, v):
    """(total mass, sum m c, linear momentum, angular momentum about the ground origin) at (q, v) (v None: zero)."""
    ws = _run_poses(model, q, v)
    out = np.empty(10)
    frame_kernels.mass_totals(model.body_int, model.body_real, ws.ws, ws.rot, ws.pos, ws.tmp, out)
    if not out[0] > 0.0:
        raise ModelError(f"{model!r} has no mass: its centre of mass is undefined")
    _checks.check_finite_result(out, "the centre of mass or the momentum")
    return out


def center_of_mass(model, q, v=None):
    """The model's centre of mass (3,) [m] in the ground frame, and with ``v`` its velocity (3,) [m/s]:
    ``c`` or ``(c, cdot)``. ModelError for a model without mass.

    Every body counts, those welded to the ground by fixed joints too (Pinocchio merges them into its universe,
    which its ``centerOfMass`` leaves out)."""
    out = _totals(model, q, v)
    com = out[1:4] / out[0]
    if v is None:
        return com
    return com, out[4:7] / out[0]


def center_of_mass_jacobian(model, q):
    """J_c (3, nv) with cdot = J_c v, ground axes: the mass-weighted mean of the bodies' centre of mass Jacobians,
    by one tip-to-base pass over the subtrees, O(N). ModelError for a model without mass."""
    ws = _run_poses(model, q, None)
    total = model.total_mass()
    if not total > 0.0:
        raise ModelError(f"{model!r} has no mass: its centre of mass is undefined")
    jac = np.empty((3, model._nv))
    sub = np.empty((model.nbodies, 4))
    frame_kernels.center_of_mass_jacobian(model.body_int, model.body_real, ws.S, ws.rot, ws.pos, sub, jac)
    jac /= total
    return _checks.check_finite_result(jac, "the centre of mass Jacobian")


def momentum(model, q, v, about="com"):
    """Linear momentum (3,) [kg m/s] and angular momentum (3,) [kg m^2/s] of the whole model, ground axes.

    ``about="com"``: the angular momentum about the model's centre of mass (Pinocchio's
    ``computeCentroidalMomentum``, ``data.hg``: its ``linear`` and ``angular``); ``"origin"``: about the ground
    origin (h_origin = h_com + c x linear, c the centre of mass). The linear momentum is the total mass times the
    centre of mass velocity.
    """
    workspace(model)
    if about not in ("com", "origin"):
        raise StateError(f"about must be 'com' or 'origin', got {about!r}")
    out = _totals(model, q, state_vector(v, model._nv, "v", "nv"))
    linear, angular = out[4:7].copy(), out[7:10].copy()
    if about == "com":
        angular -= _cross(out[1:4] / out[0], linear)
    return linear, _checks.check_finite_result(angular, "the angular momentum")
