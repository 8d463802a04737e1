"""Public dynamics functions: thin wrappers that validate, allocate outputs and call the numba kernels.

Equations of motion in joint coordinates: M(q) qdd + h(q, qd) = tau, where h holds the velocity-product and
gravity terms. Shapes: q, qd, qdd, tau are (nq,) float arrays in joint order (``Model.joint_q_index``).
"""

import numpy as np
from numba.core.errors import TypingError

from . import _checks
from ._kernels import elements as element_kernels
from ._kernels import layout as L
from ._kernels import tree
from .errors import ModelError, StateError
from .model3d import Model3D

_FLOAT = np.dtype(np.float64)
_ORIGIN = (0.0, 0.0)  # point_kinematics' default point (a spatial model's default is its own (0, 0, 0))


def _spatial():
    """The spatial formulation, imported on first use (it does not import this module)."""
    from . import spatial  # noqa: PLC0415  (lazy: planar users never load the spatial kernels)

    return spatial


class Workspace:
    """Scratch arrays of one model, allocated once and reused by every kernel call.

    The kernels hold the GIL, so concurrent calls on one model from several threads run one after another.
    """

    def __init__(self, model):
        n = model.nbodies
        width = L.W_PLANAR if model.has_planar else L.W_TREE
        self.ws = np.zeros((n, width), order="F")  # per-body fields (_kernels.layout), column-major
        self.zeros = np.zeros(model.nq)  # a zero qd / tau / qdd
        self.com = np.zeros((n, 4))  # centre-of-mass position and velocity
        self.pair = np.zeros(2)  # (kinetic, potential)
        ne = model.elem_int.shape[0]
        self.wrench = np.zeros((n, 3))  # element force and moment at each centre of mass
        self.jforce = np.zeros(model.nq)  # element generalised joint forces
        self.element_energy = np.zeros(3)  # spring potential, dissipated power, applied power
        self.per_element = np.zeros((ne, 3))
        self.u = np.zeros(model.n_element_inputs)  # values of the time-varying elements
        self.no_wrench = np.zeros((0, 3))
        self.no_driven = np.zeros(0, dtype=np.uint8)
        self.no_drive = np.zeros(0)
        # the last ``out`` that forward_dynamics checked (held, so numpy refuses to resize it in place; its size can
        # then no longer change, and a change of its dimensions or flags makes numba refuse it, not overrun it)
        self.checked_out = None


def workspace(model):
    """The model's workspace, created on first use (compiles the model); TypeError unless ``model`` is a Model."""
    _checks.require_model(model)
    model._require_compiled()
    if model._workspace is None:
        model._workspace = Workspace(model)
    return model._workspace


def as_vector(model, x, what):
    """``x`` as a C-contiguous float64 (nq,) array, or a StateError/TypeError naming ``what``.

    Fast path: an ndarray that is already float64, C-contiguous and (nq,) is returned as it is. Complex, string or
    object input is a TypeError (a complex array would otherwise lose its imaginary part silently).
    """
    nq = model._nq
    if x.__class__ is np.ndarray and x.dtype is _FLOAT and x.shape == (nq,) and x.flags.c_contiguous:
        return x
    arr = np.ascontiguousarray(_checks.real_array(x, what))
    if arr.shape != (nq,):
        raise StateError(f"{what} must have shape ({nq},) for this model (nq = {nq}), got shape {arr.shape}")
    return arr


def raise_status(model, status, names=("q", "qd", "tau"), output="the result"):
    """Turn a kernel status into the exception it stands for (``output`` names the kernel's result)."""
    kind, index = L.decode_status(status)
    if kind in (L.STATUS_NONFINITE_Q, L.STATUS_NONFINITE_QD, L.STATUS_NONFINITE_TAU):
        what = names[kind - L.STATUS_NONFINITE_Q]
        raise StateError(f"{what}[{index}] is not finite")
    if kind == L.STATUS_OVERFLOW:
        raise StateError(f"overflow: {output} (entry {index}) is not finite although {', '.join(names)} are: the "
                         "inputs are too large for float64 (e.g. rates near 1e155, whose squares overflow)")
    if kind == L.STATUS_SINGULAR:
        raise ModelError(
            f"body {model.body_names[index]!r} (index {index}): the articulated inertia of its joint is singular "
            "(the body and its subtree have no mass or inertia that the joint can move, e.g. a massless tip body "
            "or a point mass on its own hinge)")
    raise RuntimeError(f"kernel failed with status {status} (kind {kind}, index {index})")


def element_inputs(model, t, u):
    """Evaluate the model's time-varying elements (force(t), torque(t)) at t into u; errors name the element."""
    for slot, width, function, name in model.element_functions:
        try:
            value = np.asarray(function(t), dtype=float).reshape(-1)
        except Exception as err:  # noqa: BLE001 - the user's function failed: say which element and when
            raise StateError(f"element {name!r}: its function raised at t = {t:g}: {err!r}") from err
        if value.shape != (width,) or not np.all(np.isfinite(value)):
            raise StateError(f"element {name!r}: its function must return {width} finite number(s) at "
                             f"t = {t:g}, got {value.tolist()}")
        u[slot:slot + width] = value
    return u


def _element_loads(model, ws, q, qd, t):
    """Run the shared element evaluation into ws.wrench, ws.jforce, ws.element_energy, ws.per_element."""
    element_inputs(model, t, ws.u)
    status = element_kernels.element_forces(model.body_int, model.body_real, model.elem_int, model.elem_real, ws.u,
                                            q, qd, ws.ws, ws.com, ws.wrench, ws.jforce, ws.element_energy,
                                            ws.per_element)
    if status:
        raise_status(model, status)


def loaded_state(model, ws, q, qd, tau, t):
    """Validated (q, qd, tau) with the element joint forces added to tau, and the element wrench (or none)."""
    q = as_vector(model, q, "q")
    qd = as_vector(model, qd, "qd")
    tau = ws.zeros if tau is None else as_vector(model, tau, "tau")
    if not model.elem_int.shape[0]:
        return q, qd, tau, ws.no_wrench
    _element_loads(model, ws, q, qd, _checks.real(t, "t"))
    return q, qd, tau + ws.jforce, ws.wrench


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
    """
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
    (``recursive_mbd.loops.loop_dynamics``, which also gives the multipliers and loop forces).
    """
    try:
        ws = model._workspace
    except AttributeError:  # not a Model: a Model3D goes to the spatial formulation; workspace() names the rest
        if isinstance(model, Model3D):
            if model._loops:  # closed loops: the multiplier layer (it builds on this module, as loops does)
                from .spatial_loops import loop_dynamics  # noqa: PLC0415

                vdot = loop_dynamics(model, q, qd, tau, t=t, method=method).qdd
                if out is not None:
                    _checks.output_buffer(out, (model.nv,))[:] = vdot
                    return out
                return vdot
            return _spatial().forward_dynamics(model, q, qd, tau, out, t=t, method=method)
        ws = None
    if ws is None:
        ws = workspace(model)
    if out is not None and out is not ws.checked_out:  # a new buffer: check it once (about 0.3 us), then remember it
        ws.checked_out = _checks.output_buffer(out, (model._nq,))  # raises, naming what is wrong with out
    if method == "mass_matrix":  # the dense route has no kernel to find a NaN for it: refuse one here
        for x, what in ((q, "q"), (qd, "qd"), (tau, "tau")):
            if x is not None:
                _checks.finite_array(as_vector(model, x, what), what)
    if model.loop_int.shape[0]:
        from .loops import loop_dynamics  # noqa: PLC0415  (loops builds on this module)

        qdd = loop_dynamics(model, q, qd, tau, t=t, method=method).qdd
        if out is not None:
            out[:] = qdd
            return out
        return qdd
    q, qd, tau, wrench = loaded_state(model, ws, q, qd, tau, t)
    if method == "recursive":
        qdd = np.empty(model._nq) if out is None else out
        try:
            status = tree.forward_dynamics(model.body_int, model.body_real, model.gravity, q, qd, tau, wrench,
                                           ws.no_driven, ws.ws, qdd, ws.no_drive)
        except TypingError:  # out's dimensions or flags were changed in place after its check: say so
            if out is None:
                raise
            ws.checked_out = None
            _checks.output_buffer(out, (model._nq,))
            raise
        if status:
            raise_status(model, status, output="qdd")
        return qdd
    if method == "mass_matrix":
        import scipy.linalg  # noqa: PLC0415  (scipy only for this route: `rmbd info` starts faster)

        mass = mass_matrix(model, q)
        rhs = tau - _rnea(model, ws, q, qd, ws.zeros, wrench)
        try:
            factor = scipy.linalg.cho_factor(mass, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            raise ModelError("the mass matrix is not positive definite at this q (a body or subtree without "
                             "inertia along its joint)") from None
        qdd = _checks.check_finite_result(scipy.linalg.cho_solve(factor, rhs, check_finite=False), "qdd")
        if out is not None:
            out[:] = qdd
            return out
        return qdd
    raise StateError(f"unknown method {method!r}; expected 'recursive' or 'mass_matrix'")


def _rnea(model, ws, q, qd, qdd, wrench):
    tau = np.empty(model._nq)
    status = tree.inverse_dynamics(model.body_int, model.body_real, model.gravity, q, qd, qdd, wrench, ws.ws, tau)
    if status:
        raise_status(model, status, ("q", "qd", "qdd"), output="tau")
    return tau


def inverse_dynamics(model, q, qd, qdd, *, t=0.0):
    """Joint forces tau = M(q) qdd + h(q, qd) - Q_elements(q, qd, t) by the recursive Newton-Euler pass, O(N).

    The forces the joints' actuators must supply for the accelerations qdd, given the model's force elements;
    ``inverse_dynamics(model, q, qd, forward_dynamics(model, q, qd, tau))`` returns tau. Shapes as
    ``forward_dynamics``. A ``Model3D`` goes to ``recursive_mbd.spatial``.
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

    A ``Model3D``: (nv, nv), ``recursive_mbd.spatial.mass_matrix``."""
    if isinstance(model, Model3D):
        return _spatial().mass_matrix(model, q)
    ws = workspace(model)
    q = as_vector(model, q, "q")
    out = np.zeros((model._nq, model._nq))
    status = tree.mass_matrix(model.body_int, model.body_real, q, ws.zeros, ws.ws, out)
    if status:
        raise_status(model, status, ("q",), output="M (diagonal)")
    return out


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
    the potential energy of the model's springs. A ``Model3D``: ``recursive_mbd.spatial.energy``.
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
    index = model.body_index(body)
    pts = _checks.real_array(point, "point")
    if pts.shape[-1:] != (2,) or pts.ndim > 2:
        raise StateError(f"point must have shape (2,) or (k, 2), got {pts.shape}")
    _checks.finite_array(pts, "point")
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
