"""Public dynamics functions: thin wrappers that validate, allocate outputs and call the numba kernels (the functions
of a state that solve no equations of motion, kinematics, energy and element loads, are in ``kinematics``).

Equations of motion in joint coordinates: M(q) qdd + h(q, qd) = tau, where h holds the velocity-product and
gravity terms. Shapes: q, qd, qdd, tau are (nq,) float arrays in joint order (``Model.joint_q_index``).
"""

import numpy as np
from numba.core.errors import TypingError

from .. import _checks
from ..errors import ModelError
from ..model.spatial import Model3D
from ..model.statuses import raise_status
from ..model.workspace import tree_forward_dynamics, workspace
from ._evaluation import (
    _element_loads,
    _rnea,
    as_vector,
    cholesky_solve,
    contact_state_vector,
    contact_wrench,
    into,
    loaded_state,
    recheck_out,
    tree_mass_matrix,
    unknown_method,
)
from .kinematics import spatial_formulation
from .loops import loop_dynamics as planar_loop_dynamics


def forward_dynamics(model, q, qd, tau=None, method="recursive", out=None, *, t=0.0, contact_state=None):
    """Joint accelerations qdd from M(q) qdd + h(q, qd) = tau.

    Parameters
    ----------
    model : Model
    q, qd : array_like, shape (nq,)
        Joint coordinates [m or rad] and rates.
    tau : array_like, shape (nq,), optional
        Generalised joint forces (torque [N m] for revolute, force [N] for prismatic); default zero.
    method : {"recursive", "mass_matrix"}
        "recursive" is the O(N) B/G/H condensation of the relative-coordinate formulation (default); "mass_matrix"
        builds M and h and solves by Cholesky, O(N^3).
    out : ndarray, shape (nq,), optional
        Where to write the result (saves one allocation per call): a writable, C-contiguous float64 numpy array of
        exactly (nq,); anything else is a TypeError or StateError (never converted, never overrun). A buffer is
        checked on its first use and remembered.
    t : float
        Time [s], for force elements that are functions of time.
    contact_state : array_like, shape (ncontacts, N_CSTATE), optional
        The contact rows' state (stick anchors, impact speeds; ``SimulationResult.contact_state[i]`` of a run's
        sample) of a model with contacts (N_CSTATE = 6 a row for a planar model, 8 for a ``Model3D``). Default: no
        row has touched yet, as at a run's start: each touching row is anchored at its contact point (no stick
        spring stretch, friction from the damper alone) and damped as an impact at its current rate (at least its
        min_impact_speed). A model without contacts ignores it.

    Returns
    -------
    qdd : ndarray, shape (nq,)

    Notes
    -----
    The model's force elements (springs, dampers, applied forces) act in addition to tau, through the one shared
    evaluation ``element_forces``, and so do its contacts (``Model.add_contact``, ``add_self_contact``) at
    ``contact_state``: the accelerations the time loops integrate at that state. A model with loops returns the
    constrained accelerations (``recursive_mbd.dynamics.loops.loop_dynamics``, which also gives the multipliers and
    loop forces); one with loops and contacts is a ModelError (the loop layer leaves contacts out: ``rm.simulate``
    integrates them).
    """
    if model.__class__ is Model3D and not model._loops:  # a spatial tree, straight to its formulation: the
        # planar lookups below would raise and catch an AttributeError first, about 1 us a call
        work = model._workspace3d
        short = None if work is None else work.short_fd
        if (short and method == "recursive" and (out is None or out is work.checked_out)
                and t.__class__ is float and t - t == 0.0):  # (a NaN or infinite t fails it: the full route names it)
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
        return spatial_formulation().forward_dynamics(model, q, qd, tau, out, t=t, method=method,
                                                      contact_state=contact_state)
    try:
        ws = model._workspace
        short = ws.short_fd
    except AttributeError:  # not a Model (a Model3D goes to the spatial formulation), or no workspace yet: the
        # full route below says what is wrong
        if isinstance(model, Model3D):
            if model._loops:  # closed loops: the spatial multiplier layer, imported on first use
                if model.has_contacts:
                    raise ModelError("forward_dynamics: this model has loops and contacts; the loop layer leaves "
                                     "contacts out (rm.simulate integrates them)") from None
                from . import spatial_loops  # noqa: PLC0415

                vdot = spatial_loops.loop_dynamics(model, q, qd, tau, t=t, method=method).qdd
                if out is not None:
                    _checks.output_buffer(out, (model.nv,))[:] = vdot
                    return out
                return vdot
            return spatial_formulation().forward_dynamics(model, q, qd, tau, out, t=t, method=method,
                                                          contact_state=contact_state)
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
        if ws.contacts:
            raise ModelError("forward_dynamics: this model has loops and contacts; the loop layer leaves contacts out "
                             "(rm.simulate integrates them)")
        return into(out, planar_loop_dynamics(model, q, qd, tau, t=t, method=method).qdd)
    q, qd, tau, wrench = loaded_state(model, ws, q, qd, tau, t)
    if ws.contacts:  # (models with contacts never take the short path above)
        wrench = contact_wrench(model, ws, q, qd, contact_state_vector(model, contact_state), wrench)
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


def loop_dynamics(model, q, qd, tau=None, *, t=0.0, alpha=0.0, beta=0.0, method="recursive"):
    """Constrained forward dynamics with the loop multipliers and forces: a ``LoopSolution``.

    A ``Model`` (planar): ``recursive_mbd.dynamics.loops.loop_dynamics`` (qdd (nq,), multipliers (m,), forces
    (nloops, 2, 3)). A ``Model3D``: ``recursive_mbd.dynamics.spatial_loops.loop_dynamics`` (qd and the returned
    qdd are the velocities v and their rates (nv,), tau (nv,); forces (nloops, 2, 6): force at the loop point, then
    moment, ground axes). Both solve M qdd + h = tau + Q_elements - J^T lambda with J qdd = gamma - 2 alpha phi' -
    beta^2 phi (Baumgarte's terms ``alpha``, ``beta`` [1/s]); ``method`` "recursive" (O(N) passes and the filtered
    regularised multiplier solve) or "mass_matrix" (the dense KKT system). Redundant or singular loop equations give
    the minimum-norm multipliers and a ``RedundantConstraintWarning``.
    """
    if isinstance(model, Model3D):  # the spatial multiplier layer, imported on first use (planar users never load it)
        from . import spatial_loops  # noqa: PLC0415

        return spatial_loops.loop_dynamics(model, q, qd, tau, t=t, alpha=alpha, beta=beta, method=method)
    return planar_loop_dynamics(model, q, qd, tau, t=t, alpha=alpha, beta=beta, method=method)


def inverse_dynamics(model, q, qd, qdd, *, t=0.0):
    """Joint forces tau = M(q) qdd + h(q, qd) - Q_elements(q, qd, t) by the recursive Newton-Euler pass, O(N).

    The forces the joints' actuators must supply for the accelerations qdd, given the model's force elements;
    ``inverse_dynamics(model, q, qd, forward_dynamics(model, q, qd, tau))`` returns tau. Shapes as
    ``forward_dynamics``. A ``Model3D`` goes to ``recursive_mbd.dynamics.spatial``.
    """
    if isinstance(model, Model3D):
        return spatial_formulation().inverse_dynamics(model, q, qd, qdd, t=t)
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
        return spatial_formulation().mass_matrix(model, q)
    ws = workspace(model)
    return tree_mass_matrix(model, ws, as_vector(model, q, "q"))


def bias_forces(model, q, qd):
    """h(q, qd): velocity-product and gravity terms of M qdd + h = tau + Q_elements, shape (nq,).

    The force elements are not part of h; ``element_forces`` gives them. A ``Model3D``: (nv,), ``spatial``.
    """
    if isinstance(model, Model3D):
        return spatial_formulation().bias_forces(model, q, qd)
    ws = workspace(model)
    return _rnea(model, ws, as_vector(model, q, "q"), as_vector(model, qd, "qd"), ws.zeros, ws.no_wrench)
