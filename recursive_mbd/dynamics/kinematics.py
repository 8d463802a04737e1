"""Public functions of a state that solve no equations of motion: body and point kinematics, kinetic and potential
energy, and the loads of the force elements. They are the tree's: a model's closed loops do not change them. Shapes
as in ``calls``: q, qd (nq,) in joint order; a ``Model3D`` goes to ``recursive_mbd.dynamics.spatial``.
"""

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.planar import contact, pairs, tree
from ..errors import StateError
from ..model.spatial import Model3D
from ..model.statuses import raise_status
from ..model.workspace import workspace
from ._evaluation import _element_loads, as_vector, body_points

_ORIGIN = (0.0, 0.0)  # point_kinematics' default point (a spatial model's default is its own (0, 0, 0))


_spatial_module = []  # the spatial formulation once imported (an import statement per call costs ~0.2 us)


def spatial_formulation():
    """The spatial formulation, imported on first use (it does not import this module)."""
    if not _spatial_module:
        from . import spatial  # noqa: PLC0415  (lazy: planar users never load the spatial kernels)

        _spatial_module.append(spatial)
    return _spatial_module[0]


def element_forces(model, q, qd, t=0.0):
    """Loads of the model's force elements at the state (q, qd) and time t.

    Returns
    -------
    dict with
        ``wrench`` (nbodies, 3): force [N] and moment [N m] at each centre of mass, ground axes;
        ``joint_forces`` (nq,): generalised joint forces of the joint spring-dampers;
        ``per_element`` (nelements, 3): spring-damper (tension, length, length rate), joint spring-damper
        (joint force, q - rest, qdot), force (Fx, Fy, 0) in ground axes, torque (torque, 0, 0);
        ``potential`` [J] of the springs, ``dissipation`` [W] of the dampers (>= 0), ``power`` [W] of the applied
        forces and torques.

    A ``Model3D`` returns its generalised forces Q (nv,) (``generalized_forces``) in place of the wrench and joint
    forces: ``recursive_mbd.dynamics.spatial.element_forces``.
    """
    if isinstance(model, Model3D):
        return spatial_formulation().element_forces(model, q, qd, t)
    ws = workspace(model)
    q = as_vector(model, q, "q")
    qd = as_vector(model, qd, "qd")
    _element_loads(model, ws, q, qd, _checks.real(t, "t"))
    for value, what in ((ws.wrench, "wrench"), (ws.jforce, "joint_forces"), (ws.per_element, "per_element"),
                        (ws.element_energy, "(potential, dissipation, power)")):
        _checks.check_finite_result(value, f"element_forces: {what}")
    return {"wrench": ws.wrench.copy(), "joint_forces": ws.jforce.copy(), "per_element": ws.per_element.copy(),
            "potential": float(ws.element_energy[0]), "dissipation": float(ws.element_energy[1]),
            "power": float(ws.element_energy[2])}


def energy(model, q, qd, *, t=0.0):
    """Kinetic and potential energy (T, V) [J] at the state (q, qd).

    V is the gravitational potential -sum m_i g . c_i (zero with every centre of mass at the ground origin) plus
    the potential energy of the model's springs and of its contacts' elastic normal forces (k d^(p+1) / (p + 1)).
    A ``Model3D``: ``recursive_mbd.dynamics.spatial.energy``.
    """
    if isinstance(model, Model3D):
        return spatial_formulation().energy(model, q, qd, t=t)
    ws = workspace(model)
    q = as_vector(model, q, "q")
    qd = as_vector(model, qd, "qd")
    status = tree.energy(model.body_int, model.body_real, model.gravity, q, qd, ws.ws, ws.com, ws.pair)
    if status:
        raise_status(model, status, ("q", "qd"), output="the energy (0 kinetic, 1 potential) or a centre of mass")
    kinetic, potential = float(ws.pair[0]), float(ws.pair[1])
    if model.elem_int.shape[0]:
        _element_loads(model, ws, q, qd, _checks.real(t, "t"))
        potential += float(ws.element_energy[0])
    if model.has_contacts:  # the contacts' elastic normal forces (their potential needs no stick state)
        potential += _contact_potential(model, ws)
    _checks.check_finite_result(potential, "the potential energy (gravity, springs and contacts)")
    return kinetic, potential


def _contact_potential(model, ws):
    """The potential energy of the contacts' elastic normal forces at the state whose kinematics ``ws`` holds."""
    totals, wrench, nshapes = np.zeros(3), np.zeros((model.nbodies, 3)), model.shape_int.shape[0]
    contact.contact_forces(model.contact_int, model.contact_real, ws.ws, ws.com, np.zeros(model.ncontacts
                           * L.N_CSTATE), 0, wrench, totals, np.zeros((model.ncontacts, contact.N_PER_CONTACT)),
                           np.zeros((2, 0), dtype=np.int64))
    pairs.pair_forces(model.body_int, model.shape_int, model.shape_real, np.arange(nshapes, dtype=np.int64),
                      np.zeros((nshapes, L.N_BOX)), ws.ws, ws.com, wrench, totals, np.zeros(2))
    return float(totals[0])


def _com_state(model, q, qd):
    ws = workspace(model)
    q = as_vector(model, q, "q")
    qd = ws.zeros if qd is None else as_vector(model, qd, "qd")
    status = tree.com_kinematics(model.body_int, model.body_real, q, qd, ws.ws, ws.com)
    if status:
        raise_status(model, status, ("q", "qd"), output="a centre of mass position or velocity (entry = body)")
    columns = ws.ws[:, [L.TH, L.CS, L.SN, L.OM]]  # a copy: theta, cos, sin (composed joint by joint), omega
    return ws.com.copy(), *columns.T


def forward_kinematics(model, q, qd=None):
    """Poses and velocities of the body frames.

    Returns
    -------
    poses : ndarray, shape (nbodies, 3)
        (x, y, theta) of each body frame's origin in the ground frame [m, m, rad].
    vels : ndarray, shape (nbodies, 3)
        (xdot, ydot, thetadot) of each frame origin [m/s, m/s, rad/s]; zero if ``qd`` is None.

    A ``Model3D`` returns (R, p) or, with velocities, (R, p, omega, velocity): ``spatial.forward_kinematics``.
    """
    if isinstance(model, Model3D):
        return spatial_formulation().forward_kinematics(model, q, qd)
    com, theta, c, s, omega = _com_state(model, q, qd)
    lx, ly = model.body_com[:, 0], model.body_com[:, 1]
    offx, offy = c * lx - s * ly, s * lx + c * ly  # centre of mass relative to the frame origin, ground axes
    poses = np.column_stack((com[:, 0] - offx, com[:, 1] - offy, theta))
    vels = np.column_stack((com[:, 2] + omega * offy, com[:, 3] - omega * offx, omega))
    # The kernel checks the centres of mass only; the angles (sums of joint angles) and the frame origins' terms
    # can overflow on their own (q near 1e308 without qd).
    for what, values in (("pose", poses), ("velocity", vels)):
        rows = np.flatnonzero(~np.isfinite(values).all(axis=1))
        if rows.size:
            raise StateError(f"overflow: the {what} of body {model.body(int(rows[0]))['name']!r} (entry "
                             f"{int(rows[0])}) is not finite although q, qd are: the inputs are too large for float64")
    return poses, vels


def point_kinematics(model, q, qd, body, point=_ORIGIN):
    """Ground-frame position and velocity of point(s) fixed on a body.

    Parameters
    ----------
    body : int or str
        Body index or name.
    point : array_like, shape (2,) or (k, 2)
        Point(s) in the body frame [m].

    Returns
    -------
    position, velocity : ndarray, shape like ``point``

    A ``Model3D`` takes (3,) or (k, 3) points, default its body origin: ``spatial.point_kinematics``.
    """
    if isinstance(model, Model3D):
        if point is _ORIGIN:
            return spatial_formulation().point_kinematics(model, q, qd, body)
        return spatial_formulation().point_kinematics(model, q, qd, body, point)
    workspace(model)
    index, pts = body_points(model, body, point, 2)
    poses, vels = forward_kinematics(model, q, qd)
    x, y, theta = poses[index]
    vx, vy, omega = vels[index]
    c, s = np.cos(theta), np.sin(theta)
    rx = c * pts[..., 0] - s * pts[..., 1]
    ry = s * pts[..., 0] + c * pts[..., 1]
    position = np.stack((x + rx, y + ry), axis=-1)
    velocity = np.stack((vx - omega * ry, vy + omega * rx), axis=-1)
    _checks.check_finite_result(position, "position")
    _checks.check_finite_result(velocity, "velocity")
    return position, velocity
