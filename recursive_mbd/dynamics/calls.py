"""Public dynamics functions: thin wrappers that validate, allocate outputs and call the numba kernels.

Equations of motion in joint coordinates: M(q) qdd + h(q, qd) = tau, where h holds the velocity-product and
gravity terms. Shapes: q, qd, qdd, tau are (nq,) float arrays in joint order (``Model.joint_q_index``).
"""

import numpy as np
from numba.core.errors import TypingError

from .. import _checks
from .._kernels import layout as L
from .._kernels.planar import tree
from ..errors import StateError
from ..model.spatial import Model3D
from ..model.workspace import raise_status, tree_forward_dynamics, workspace
from ._evaluation import (
    _element_loads,
    _rnea,
    as_vector,
    body_points,
    cholesky_solve,
    into,
    loaded_state,
    recheck_out,
    tree_mass_matrix,
    unknown_method,
)
from .loops import loop_dynamics

_ORIGIN = (0.0, 0.0)  # point_kinematics' default point (a spatial model's default is its own (0, 0, 0))


_spatial_module = []  # the spatial formulation once imported (an import statement per call costs ~0.2 us)


def _spatial():
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
        return _spatial().element_forces(model, q, qd, t)
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


def forward_dynamics(model, q, qd, tau=None, method="recursive", out=None, *, t=0.0):
    """Joint accelerations qdd from M(q) qdd + h(q, qd) = tau.

    Parameters
    ----------
    model : Model
    q, qd : array_like, shape (nq,)
        Joint coordinates [m or rad] and rates.
    tau : array_like, shape (nq,), optional
        Generalised joint forces (torque [N m] for revolute, force [N] for prismatic); default zero.
    method : {"recursive", "mass_matrix"}
        "recursive" is the O(N) B/G/H condensation of seed 003 (default); "mass_matrix" builds M and h and solves
        by Cholesky, O(N^3).
    out : ndarray, shape (nq,), optional
        Where to write the result (saves one allocation per call): a writable, C-contiguous float64 numpy array of
        exactly (nq,); anything else is a TypeError or StateError (never converted, never overrun). A buffer is
        checked on its first use and remembered.
    t : float
        Time [s], for force elements that are functions of time.

    Returns
    -------
    qdd : ndarray, shape (nq,)

    Notes
    -----
    The model's force elements (springs, dampers, applied forces) act in addition to tau, through the one shared
    evaluation ``element_forces``. A model with loops returns the constrained accelerations
    (``recursive_mbd.dynamics.loops.loop_dynamics``, which also gives the multipliers and loop forces).
    """
    if model.__class__ is Model3D and not model._loops:  # a spatial tree, straight to its formulation: the
        # planar lookups below would raise and catch an AttributeError first, about 1 us a call
        work = model._workspace3d
        short = None if work is None else work.short_fd
        if (short and method == "recursive" and (out is None or out is work.checked_out)
                and t.__class__ is float):
            # the short path, as the planar one below: the fixed-signature kernel's dispatch checks the dtype, layout
            # and writability of q, qd, tau and out, the kernel their lengths and finiteness; anything it refuses
            # takes the full route, which converts or raises the error naming it
            kernel, body_int, body_real, gravity, buffer = short
            vdot = np.empty(model._nv) if out is None else out
            try:
                status = kernel(body_int, body_real, gravity, q, qd, work.zeros if tau is None else tau, buffer, vdot)
            except TypeError:  # refused at dispatch: out is checked again (changed in place since its check?)
                work.checked_out = None
                status = -1
            if not status:
                return vdot
        return _spatial().forward_dynamics(model, q, qd, tau, out, t=t, method=method)
    try:
        ws = model._workspace
        short = ws.short_fd
    except AttributeError:  # not a Model (a Model3D goes to the spatial formulation), or no workspace yet: the
        # full route below says what is wrong
        if isinstance(model, Model3D):
            if model._loops:  # closed loops: the spatial multiplier layer, imported on first use
                from . import spatial_loops  # noqa: PLC0415

                vdot = spatial_loops.loop_dynamics(model, q, qd, tau, t=t, method=method).qdd
                if out is not None:
                    _checks.output_buffer(out, (model.nv,))[:] = vdot
                    return out
                return vdot
            return _spatial().forward_dynamics(model, q, qd, tau, out, t=t, method=method)
        ws = short = None
    if short and method == "recursive" and (out is None or out is ws.checked_out):
        # the short path (a plain tree): numba's dispatch of the fixed-signature kernel is the dtype, layout and
        # writability check of q, qd, tau and out, the kernel checks their lengths and finiteness; anything it
        # refuses (a list, float32, a strided view, a wrong length, NaN, a singular joint) takes the full route,
        # which converts or raises the error naming it
        kernel, body_int, body_real, gravity, work, zeros, nq = short
        qdd = np.empty(nq) if out is None else out
        try:
            status = kernel(body_int, body_real, gravity, q, qd, zeros if tau is None else tau, work, qdd)
        except TypeError:
            status = -5
        if not status:
            return qdd
    if ws is None:
        ws = workspace(model)  # TypeError unless a Model
    if out is not None and out is not ws.checked_out:  # a new buffer: check it once (about 0.3 us), then remember it
        ws.checked_out = _checks.output_buffer(out, (model._nq,))  # raises, naming what is wrong with out
    if method == "mass_matrix":  # the dense route has no kernel to find a NaN for it: refuse one here
        for x, what in ((q, "q"), (qd, "qd"), (tau, "tau")):
            if x is not None:
                _checks.finite_array(as_vector(model, x, what), what)
    if model.loop_int.shape[0]:
        return into(out, loop_dynamics(model, q, qd, tau, t=t, method=method).qdd)
    q, qd, tau, wrench = loaded_state(model, ws, q, qd, tau, t)
    if method == "recursive":
        qdd = np.empty(model._nq) if out is None else out
        try:
            status = tree_forward_dynamics(model, ws, q, qd, tau, wrench, qdd)
        except (TypingError, TypeError) as err:  # out's dimensions or flags were changed in place after its check
            recheck_out(ws, out, (model._nq,))
            raise err
        if status:
            raise_status(model, status, output="qdd")
        return qdd
    if method == "mass_matrix":
        mass = mass_matrix(model, q)
        rhs = tau - _rnea(model, ws, q, qd, ws.zeros, wrench)
        return into(out, cholesky_solve(mass, rhs, "qdd"))
    raise unknown_method(method)


def inverse_dynamics(model, q, qd, qdd, *, t=0.0):
    """Joint forces tau = M(q) qdd + h(q, qd) - Q_elements(q, qd, t) by the recursive Newton-Euler pass, O(N).

    The forces the joints' actuators must supply for the accelerations qdd, given the model's force elements;
    ``inverse_dynamics(model, q, qd, forward_dynamics(model, q, qd, tau))`` returns tau. Shapes as
    ``forward_dynamics``. A ``Model3D`` goes to ``recursive_mbd.dynamics.spatial``.
    """
    if isinstance(model, Model3D):
        return _spatial().inverse_dynamics(model, q, qd, qdd, t=t)
    ws = workspace(model)
    q = as_vector(model, q, "q")
    qd = as_vector(model, qd, "qd")
    qdd = as_vector(model, qdd, "qdd")
    if not model.elem_int.shape[0]:
        return _rnea(model, ws, q, qd, qdd, ws.no_wrench)
    _element_loads(model, ws, q, qd, _checks.real(t, "t"))
    return _rnea(model, ws, q, qd, qdd, ws.wrench) - ws.jforce


def mass_matrix(model, q):
    """Joint-space mass matrix M(q), shape (nq, nq), symmetric positive definite, by composite rigid bodies.

    A ``Model3D``: (nv, nv), ``recursive_mbd.dynamics.spatial.mass_matrix``."""
    if isinstance(model, Model3D):
        return _spatial().mass_matrix(model, q)
    ws = workspace(model)
    return tree_mass_matrix(model, ws, as_vector(model, q, "q"))


def bias_forces(model, q, qd):
    """h(q, qd): velocity-product and gravity terms of M qdd + h = tau + Q_elements, shape (nq,).

    The force elements are not part of h; ``element_forces`` gives them. A ``Model3D``: (nv,), ``spatial``.
    """
    if isinstance(model, Model3D):
        return _spatial().bias_forces(model, q, qd)
    ws = workspace(model)
    return _rnea(model, ws, as_vector(model, q, "q"), as_vector(model, qd, "qd"), ws.zeros, ws.no_wrench)


def energy(model, q, qd, *, t=0.0):
    """Kinetic and potential energy (T, V) [J] at the state (q, qd).

    V is the gravitational potential -sum m_i g . c_i (zero with every centre of mass at the ground origin) plus
    the potential energy of the model's springs. A ``Model3D``: ``recursive_mbd.dynamics.spatial.energy``.
    """
    if isinstance(model, Model3D):
        return _spatial().energy(model, q, qd, t=t)
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
        _checks.check_finite_result(potential, "the potential energy (gravity and springs)")
    return kinetic, potential


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
        return _spatial().forward_kinematics(model, q, qd)
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
            return _spatial().point_kinematics(model, q, qd, body)
        return _spatial().point_kinematics(model, q, qd, body, point)
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
