"""Public functions of the spatial (3D) formulation: validate, then call the kernels of ``_kernels.spatial.tree``.

``rm.forward_dynamics``, ``inverse_dynamics``, ``mass_matrix``, ``bias_forces``, ``energy``,
``forward_kinematics`` and ``point_kinematics`` send a ``Model3D`` here. Equations of motion in the velocity
coordinates v (nv,): M(q) vdot + h(q, v) = tau, tau conjugate to v (a torque about a revolute axis, a force along a
prismatic one; a spherical joint's torque in the child frame; a free joint's force in the joint frame and torque in
the child frame). q (nq,) holds the joint coordinates, quaternions (w, x, y, z) for spherical and free joints: a
quaternion within 1e-6 of unit norm is normalised silently, one farther off is refused (StateError naming the body
and the index in q).

This module does not import ``dynamics`` (which imports it lazily to dispatch).
"""

import numpy as np
from numba.core.errors import TypingError

from .. import _checks
from .._kernels.spatial import contact as contact_kernels
from .._kernels.spatial import elements as element_kernels
from .._kernels.spatial import entry as spatial_entry
from .._kernels.spatial import layout as SL
from .._kernels.spatial import pairs as pair_kernels
from .._kernels.spatial import tree as kernels
from ..errors import ModelError
from ..model.spatial import Model3D
from ..model.statuses import raise_spatial_status
from ._evaluation import (
    body_points,
    cholesky_solve,
    contact_state_vector,
    element_inputs,
    into,
    recheck_out,
    state_vector,
    unknown_method,
)


class Workspace3D:
    """Scratch arrays of one spatial model, allocated once and reused by every kernel call.

    Forward dynamics of a model whose joints are all spherical or revolute needs only ``ws`` (46 floats a body) and
    ``tmp``: the articulated-body algorithm forms their motion subspaces from the model and keeps their
    condensation in ``ws``, so ``fd_S``, ``UD`` and ``uD`` have 0 rows there, and ``S`` (read by the other
    kernels) is allocated on first use. ``rm.forward_dynamics`` on such a model takes the route of
    ``_kernels.spatial.rotary`` (``route``), which uses the buffer's first nbodies * 46 floats in its own layout.
    """

    def __init__(self, model):
        n = model.nbodies
        self._n = n
        width = self._width = model._max_nv
        jtype = model.body_int[:, SL.JTYPE]
        rows = n if bool(np.any((jtype != SL.SPHERICAL) & (jtype != SL.REVOLUTE))) else 0
        # one buffer, the arrays its views (``_kernels.spatial.entry.forward_dynamics_packed`` takes it whole)
        size = rows * width * 6
        start = n * SL.W_SPATIAL + kernels.TMP_SIZE
        self.buffer = np.zeros(start + 2 * size + rows * width)
        self.ws = self.buffer[:n * SL.W_SPATIAL].reshape(n, SL.W_SPATIAL)
        self.tmp = self.buffer[n * SL.W_SPATIAL:start]
        self._S = None
        self.fd_S = self.buffer[start:start + size].reshape(rows, width, 6)  # the S that forward dynamics reads
        if rows:
            self._S = self.fd_S
        self.UD = self.buffer[start + size:start + 2 * size].reshape(rows, width, 6)
        self.uD = self.buffer[start + 2 * size:].reshape(rows, width)
        # rm.forward_dynamics' short path: (fixed-signature kernel, body_int, body_real, gravity, buffer); None until
        # the first recursive forward dynamics (the kernel is compiled or loaded then, not for other functions),
        # False for the full route (loops, force elements, or arrays of other types)
        self.short_fd = None
        self._zeros = None
        self._nv = model._nv
        self.pair = np.zeros(2)
        self.rot = self.pos = self.omega = self.vel = None  # poses, allocated on first use (not by dynamics)
        self.checked_out = None  # the last ``out`` forward_dynamics checked (as dynamics.Workspace)
        # the route of the model's forward dynamics, full route and short path alike (``_kernels.spatial.entry``):
        # "rotary" for spherical and revolute joints only (then rows == 0), with arrays of the fixed signature
        self.route = spatial_entry.route(model.body_int) if spatial_entry.accepts_model(model) else "general"

    @property
    def S(self):
        """Motion subspaces (nbodies, max_nv, 6) of every joint, written by ``kinematics_pass`` (first use)."""
        if self._S is None:
            self._S = np.zeros((self._n, self._width, 6))
        return self._S

    @property
    def zeros(self):
        """A zero vector (nv,) (the default tau, vdot), allocated on first use."""
        if self._zeros is None:
            self._zeros = np.zeros(self._nv)
        return self._zeros


class ElementWorkspace3D:
    """Scratch arrays of the force elements of one spatial model (``Model3D.add_spring_damper`` and the others),
    allocated once, on the first evaluation; apart from ``Workspace3D`` so that the dynamics kernels' workspace is
    the same with and without elements."""

    def __init__(self, model):
        n, nv, ne = model.nbodies, model._nv, len(model._elements)
        self.ws = np.zeros((n, SL.W_SPATIAL))
        self.S = np.zeros((n, model._max_nv, 6))
        self.tmp = np.zeros(kernels.TMP_SIZE)
        self.rot, self.pos, self.omega, self.vel = np.zeros((n, 3, 3)), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(
            (n, 3))
        self.wrench = np.zeros((n, 6))
        self.forces = np.zeros(nv)  # Q (nv,)
        self.energy = np.zeros(3)  # spring potential, dissipated power, applied power
        self.per_element = np.zeros((ne, 3))
        self.u = np.zeros(model.n_element_inputs)  # values of the elements' functions of time
        self.loaded = np.zeros(nv)  # tau + Q


def element_system(model):
    """The force elements' part of a time loop's ``SpatialSystem`` (``_kernels.spatial.system``): (elem_int,
    elem_real, then fresh scratch as ``ElementWorkspace3D``'s: ws, S, tmp, rot, pos, omega, vel, wrench, Q, energy,
    per_element); a model without elements gets empty scratch, unless it has contacts (they use the same scratch,
    ``_kernels.spatial.system.contact_loads``)."""
    ew = ElementWorkspace3D(model) if model._elements or model._contacts or model._self_contacts else None

    def scratch(name, shape):
        return np.zeros(shape) if ew is None else getattr(ew, name)

    width = model._max_nv
    return (model.elem_int, model.elem_real, scratch("ws", (0, SL.W_SPATIAL)), scratch("S", (0, width, 6)),
            scratch("tmp", (0,)), scratch("rot", (0, 3, 3)), scratch("pos", (0, 3)), scratch("omega", (0, 3)),
            scratch("vel", (0, 3)), scratch("wrench", (0, 6)), scratch("forces", (0,)), scratch("energy", (3,)),
            scratch("per_element", (0, 3)))


def _element_loads(model, q, v, t):
    """Evaluate the model's force elements at checked (q, v) and time t; returns their workspace (Q in ``forces``)."""
    ew = model._element_workspace
    if ew is None:
        ew = model._element_workspace = ElementWorkspace3D(model)
    element_inputs(model, t, ew.u, q, v)
    status = element_kernels.element_forces(model.body_int, model.body_real, model.elem_int, model.elem_real, ew.u, q,
                                            v, ew.ws, ew.S, ew.tmp, ew.rot, ew.pos, ew.omega, ew.vel, ew.wrench,
                                            ew.forces, ew.energy, ew.per_element)
    if status:
        raise_spatial_status(model, status, ("q", "v"), output="the element forces")
    return ew


def _loaded(model, q, v, tau, t):
    """tau + Q_elements(q, v, t) (a workspace array), or tau itself for a model without force elements."""
    if not model._elements:
        return tau
    ew = _element_loads(model, q, v, t)
    np.add(tau, ew.forces, out=ew.loaded)
    return ew.loaded


def element_forces(model, q, v, t=0.0):
    """Loads of a spatial model's force elements at the state (q, v) and time t (``rm.element_forces``).

    Returns
    -------
    dict with
        ``generalized_forces`` (nv,): Q, conjugate to v (M vdot + h = tau + Q), from an O(N) tip-to-base pass of
        the element wrenches projected on the joints' motion subspaces (``_kernels.spatial.elements``);
        ``per_element`` (nelements, 3): spring-damper (tension [N], length [m], length rate [m/s]), joint
        spring-damper (its generalised force on each of the joint's velocities, up to 3), force and torque (the
        vector in ground axes); ``potential`` [J] of the springs, ``dissipation`` [W] of the dampers (>= 0),
        ``power`` [W] of the applied forces and torques.
    """
    workspace(model)
    t = _checks.real(t, "t")
    q, v = _state(model, q, v)
    if not model._elements:  # no kernel runs to check the state: check it here
        _checks.finite_array(q, "q")
        _checks.finite_array(v, "v")
        return {"generalized_forces": np.zeros(model._nv), "per_element": np.zeros((0, 3)), "potential": 0.0,
                "dissipation": 0.0, "power": 0.0}
    ew = _element_loads(model, q, v, t)
    return {"generalized_forces": ew.forces.copy(), "per_element": ew.per_element.copy(),
            "potential": float(ew.energy[0]), "dissipation": float(ew.energy[1]), "power": float(ew.energy[2])}


def workspace(model):
    """The model's workspace, created on first use (freezes the model); TypeError unless ``model`` is a Model3D."""
    if not isinstance(model, Model3D):
        raise TypeError(f"model must be a recursive_mbd.Model3D, got {type(model).__name__}")
    model._require_compiled()
    if model._workspace3d is None:
        model._workspace3d = Workspace3D(model)
    return model._workspace3d


def release_workspace(model):
    """Drop the scratch arrays that a Model3D keeps between calls (``Workspace3D``: 46 floats a body, and the poses
    and motion subspaces once a function has used them: 82 more), made again by the next call that needs them: for a
    caller that needs a long chain's memory back (the absolute-coordinate time loop, 0.7 GB at 1e6 bodies)."""
    model._workspace3d = None


def _short_route(model, ws):
    """The fields of rm.forward_dynamics' short path for this model (``Workspace3D.short_fd``), or False."""
    if (model._loops or model._elements or model._contacts or model._self_contacts
            or not spatial_entry.accepts_model(model)):
        return False
    return (spatial_entry.kernel(ws.route), model.body_int, model.body_real, model.gravity, ws.buffer)


def _state(model, q, v):
    return state_vector(q, model._nq, "q", "nq"), state_vector(v, model._nv, "v", "nv")


def forward_dynamics(model, q, v, tau=None, out=None, *, t=0.0, method="recursive", contact_state=None):
    """Accelerations vdot (nv,) from M(q) vdot + h(q, v) = tau + Q_elements(q, v, t) + Q_contacts(q, v, state).

    Parameters
    ----------
    model : Model3D
    q : (nq,) array_like
        Joint coordinates (quaternions (w, x, y, z) for spherical and free joints).
    v : (nv,) array_like
        Joint velocities.
    tau : (nv,) array_like, optional
        Generalised forces conjugate to v; default zero.
    out : ndarray (nv,), optional
        Where to write the result: a writable, C-contiguous float64 numpy array of exactly (nv,), else TypeError or
        StateError (never converted, never overrun). Checked on first use and remembered.
    t : float
        Time [s], for force elements that are functions of time.
    method : {"recursive", "mass_matrix"}
        "recursive": the articulated-body algorithm, O(N) (default); "mass_matrix": M and h by the composite-rigid-
        body and Newton-Euler algorithms, then a Cholesky solve, O(N^3) (a second route, for checks).
    contact_state : (ncontacts, N_CSTATE) array_like, optional
        The contact rows' state (N_CSTATE = 8 a row: the touching flag, the impact speed, the stick anchors on the
        shape's body and on the surface, each in its body's frame; ``SimulationResult.contact_state[i]`` of a run's
        sample) of a model with contacts (``Model3D.add_contact``; its self-contact pairs keep no state). Default:
        no row has touched yet, as at a run's start: each touching row is anchored at its contact point (no stick
        spring stretch, friction from the damper alone) and damped as an impact at its current rate (at least its
        min_impact_speed). The contacts' loads are those the time loops apply at that state, so vdot is the
        acceleration they integrate there. A model without contacts ignores it.
    """
    ws = model._workspace3d if model.__class__ is Model3D else None
    if ws is None:
        ws = workspace(model)
    if model._loops:
        raise ModelError(f"{model!r} has closed loops: this is the tree's forward dynamics, which ignores them; use "
                         "rm.forward_dynamics or recursive_mbd.dynamics.spatial_loops.loop_dynamics")
    if out is not None and out is not ws.checked_out:
        ws.checked_out = _checks.output_buffer(out, (model._nv,))
    if not (t.__class__ is float and t - t == 0.0):  # a plain finite float skips the call (NaN, inf fail the test)
        t = _checks.real(t, "t")
    q, v = _state(model, q, v)
    tau = ws.zeros if tau is None else state_vector(tau, model._nv, "tau", "nv")
    if model._elements:  # the force elements act in addition to tau
        tau = _loaded(model, q, v, tau, t)
    if model.has_contacts:  # and so do the contacts, at the rows' state given
        tau = tau + contact_loads(model, q, v, contact_state_vector(model, contact_state, SL))
    if method == "recursive":
        vdot = np.empty(model._nv) if out is None else out
        try:
            if ws.route == "rotary":  # the short path's kernel: the same arithmetic, and a first call compiles it only
                status = spatial_entry.kernel("rotary")(model.body_int, model.body_real, model.gravity, q, v, tau,
                                                        ws.buffer, vdot)
            else:
                status = kernels.forward_dynamics(model.body_int, model.body_real, model.gravity, q, v, tau, ws.ws,
                                                  ws.fd_S, ws.UD, ws.uD, ws.tmp, vdot)
        except (TypingError, TypeError) as err:  # out's dimensions or flags were changed in place after its check
            recheck_out(ws, out, (model._nv,))
            raise err
        if status:
            raise_spatial_status(model, status, ("q", "v", "tau"), output="vdot")
        if ws.short_fd is None:
            ws.short_fd = _short_route(model, ws)
        return vdot
    if method == "mass_matrix":
        _checks.finite_array(tau, "tau")
        mass = mass_matrix(model, q)
        rhs = tau - bias_forces(model, q, v)
        return into(out, cholesky_solve(mass, rhs, "vdot"))
    raise unknown_method(method)


def inverse_dynamics(model, q, v, vdot, *, t=0.0):
    """tau = M(q) vdot + h(q, v) - Q_elements(q, v, t) (nv,) by the recursive Newton-Euler algorithm, O(N): the
    generalised forces the joints must supply for vdot, given the model's force elements."""
    ws = workspace(model)
    t = _checks.real(t, "t")
    q, v = _state(model, q, v)
    vdot = state_vector(vdot, model._nv, "vdot", "nv")
    tau = np.empty(model._nv)
    status = kernels.inverse_dynamics(model.body_int, model.body_real, model.gravity, q, v, vdot, ws.ws, ws.S, ws.tmp,
                                      tau)
    if status:
        raise_spatial_status(model, status, ("q", "v", "vdot"), output="tau")
    if model._elements:
        tau -= _element_loads(model, q, v, t).forces
    return tau


def bias_forces(model, q, v):
    """h(q, v) (nv,): the velocity-product and gravity terms of M vdot + h = tau + Q_elements (the force elements
    are not part of h: ``element_forces``)."""
    ws = workspace(model)
    q, v = _state(model, q, v)
    tau = np.empty(model._nv)
    status = kernels.inverse_dynamics(model.body_int, model.body_real, model.gravity, q, v, ws.zeros, ws.ws, ws.S,
                                      ws.tmp, tau)
    if status:
        raise_spatial_status(model, status, ("q", "v"), output="h")
    return tau


def mass_matrix(model, q):
    """M(q) (nv, nv), symmetric positive definite, by the composite-rigid-body algorithm."""
    ws = workspace(model)
    q = state_vector(q, model._nq, "q", "nq")
    out = np.zeros((model._nv, model._nv))
    status = kernels.mass_matrix(model.body_int, model.body_real, q, ws.ws, ws.S, ws.tmp, out)
    if status:
        raise_spatial_status(model, status, ("q",), output="M (row)")
    return out


def _pose_arrays(ws, n):
    if ws.rot is None:
        ws.rot, ws.pos, ws.omega, ws.vel = np.zeros((n, 3, 3)), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    return ws


def _poses(model, q, v):
    ws = _pose_arrays(workspace(model), model.nbodies)
    q = state_vector(q, model._nq, "q", "nq")
    v = ws.zeros if v is None else state_vector(v, model._nv, "v", "nv")
    status = kernels.poses(model.body_int, model.body_real, q, v, ws.ws, ws.S, ws.tmp, ws.rot, ws.pos, ws.omega,
                           ws.vel, True)
    if status:
        raise_spatial_status(model, status, ("q", "v"))
    return ws


def forward_kinematics(model, q, v=None):
    """Body frames in the ground frame.

    Returns
    -------
    R : ndarray (nbodies, 3, 3)
        Body-to-ground rotation of each body (its columns are the body axes in ground axes).
    p : ndarray (nbodies, 3)
        Origin of each body frame in the ground frame [m].
    omega, velocity : ndarray (nbodies, 3), only if ``v`` is given
        Angular velocity [rad/s] and velocity of the body frame origin [m/s], ground axes.
    """
    ws = _poses(model, q, v)
    for value, what in ((ws.rot, "R"), (ws.pos, "p")):
        _checks.check_finite_result(value, what)
    if v is None:
        return ws.rot.copy(), ws.pos.copy()
    _checks.check_finite_result(ws.omega, "omega")
    _checks.check_finite_result(ws.vel, "velocity")
    return ws.rot.copy(), ws.pos.copy(), ws.omega.copy(), ws.vel.copy()


def point_kinematics(model, q, v, body, point=(0.0, 0.0, 0.0)):
    """Ground-frame position and velocity of point(s) fixed on a body.

    Parameters
    ----------
    body : int or str
        Body index or name.
    point : (3,) or (k, 3) array_like
        Point(s) in the body frame [m].

    Returns
    -------
    position, velocity : ndarray, shaped like ``point`` [m, m/s]
    """
    workspace(model)
    index, pts = body_points(model, body, point, 3)
    ws = _poses(model, q, v)
    rot = ws.rot[index]
    arm = pts @ rot.T  # the point relative to the body origin, ground axes
    position = ws.pos[index] + arm
    velocity = ws.vel[index] + np.cross(ws.omega[index], arm)
    _checks.check_finite_result(position, "position")
    _checks.check_finite_result(velocity, "velocity")
    return position, velocity


def energy(model, q, v, *, t=0.0):
    """Kinetic and potential energy (T, V) [J]: V = -sum m_i g . c_i (c_i the centres of mass) plus the potential
    energy of the springs (``Model3D.add_spring_damper``, ``add_joint_spring_damper``) and of the contacts' elastic
    normal forces (k d^(p+1) / (p + 1), ``Model3D.add_contact``, ``add_self_contact``)."""
    ws = _pose_arrays(workspace(model), model.nbodies)
    t = _checks.real(t, "t")
    q, v = _state(model, q, v)
    status = kernels.energy(model.body_int, model.body_real, model.gravity, q, v, ws.ws, ws.S, ws.tmp, ws.rot, ws.pos,
                            ws.omega, ws.vel, ws.pair)
    if status:
        raise_spatial_status(model, status, ("q", "v"), output="the energy (0 kinetic, 1 potential)")
    if not (model._elements or model.has_contacts):
        return float(ws.pair[0]), float(ws.pair[1])
    potential = float(ws.pair[1])
    if model.has_contacts:  # at the poses the energy kernel left in ws (their potential needs no anchors)
        potential += float(_contact_terms(model, ws, np.zeros(model.ncontacts * SL.N_CSTATE))[1][0])
    if model._elements:
        potential += float(_element_loads(model, q, v, t).energy[0])
    return float(ws.pair[0]), _checks.check_finite_result(potential, "the potential energy (gravity, springs and "
                                                          "contacts)")


def _contact_terms(model, ws, state, wrench=None):
    """(per_contact (nrows, N_PER_CONTACT), (elastic energy, dissipated power), the number of touching pairs) of the
    contacts and the self-contact pairs at the poses in ``ws`` (rot, pos, omega, vel) with the rows' state
    ``state`` (nrows N_CSTATE,); their loads are added to ``wrench`` (nbodies, 6) where given (``contact_loads``)."""
    per_contact = np.zeros((model.ncontacts, SL.N_PER_CONTACT))
    energies = np.zeros(2)
    if wrench is None:
        wrench = np.zeros((model.nbodies, 6))
    contact_kernels.contact_forces(model.contact_int, model.contact_real, ws.rot, ws.pos, ws.omega, ws.vel, state, 0,
                                   wrench, energies, per_contact)
    nshapes, stats = model.shape_int.shape[0], np.zeros(2)
    if nshapes:  # (a model without sets does not compile the pairs' kernel)
        pair_kernels.pair_forces(model.body_int, model.shape_int, model.shape_real, np.arange(nshapes, dtype=np.int64),
                                 np.zeros((nshapes, SL.N_BOX)), ws.rot, ws.pos, ws.omega, ws.vel, wrench, energies,
                                 stats)
    return per_contact, energies, int(stats[0])


def contact_rows(model, q, v, state):
    """The contacts of a Model3D at the state (q, v) with the rows' state ``state`` (nrows, N_CSTATE) (a run's
    ``contact_state`` at a sample): (per_contact (nrows, N_PER_CONTACT), (their elastic energy [J], the power they
    dissipate [W]), the number of touching self-contact pairs) (``_kernels.spatial.contact.contact_forces``,
    ``_kernels.spatial.pairs.pair_forces``)."""
    ws = _poses(model, q, v)
    return _contact_terms(model, ws, np.ascontiguousarray(state, dtype=np.float64).reshape(-1))


def contact_loads(model, q, v, state):
    """The generalised forces (nv,) of the contacts and the self-contact pairs of a Model3D at checked (q, v) with
    the rows' flat state ``state`` (nrows N_CSTATE,): each body's contact wrench (body coordinates about its origin,
    ``_kernels.spatial.contact.contact_forces``) mapped to the joints as the time loops map it
    (``_kernels.spatial.elements.subtree_forces``)."""
    ws = _poses(model, q, v)
    wrench = np.zeros((model.nbodies, 6))
    _contact_terms(model, ws, state, wrench)
    forces = np.zeros(model._nv)
    element_kernels.subtree_forces(model.body_int, ws.ws, ws.S, wrench, forces)
    return _checks.check_finite_result(forces, "the contact forces")
