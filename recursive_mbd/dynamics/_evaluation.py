"""What the tree (``dynamics``) and loop (``loops``) layers share: the model's workspace and one evaluation's checked
inputs (state vectors, element loads), kernel statuses turned into errors, and the mass-matrix and inverse-dynamics
passes. Below both, so that ``dynamics.forward_dynamics`` can hand a model with loops to ``loops.loop_dynamics``
and ``loops`` need not import ``dynamics`` (DESIGN.md, "Architecture": layers call downward only)."""

import numpy as np

from .. import _checks
from .._kernels.planar import elements as element_kernels
from .._kernels.planar import tree
from ..errors import StateError
from ..model.workspace import raise_status

_FLOAT = np.dtype(np.float64)


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


def _rnea(model, ws, q, qd, qdd, wrench):
    tau = np.empty(model._nq)
    status = tree.inverse_dynamics(model.body_int, model.body_real, model.gravity, q, qd, qdd, wrench, ws.ws, tau)
    if status:
        raise_status(model, status, ("q", "qd", "qdd"), output="tau")
    return tau


def tree_mass_matrix(model, ws, q):
    """M(q) (nq, nq) of a checked q by the composite-rigid-body kernel (``dynamics.mass_matrix`` is the public one)."""
    out = np.zeros((model._nq, model._nq))
    status = tree.mass_matrix(model.body_int, model.body_real, q, ws.zeros, ws.ws, out)
    if status:
        raise_status(model, status, ("q",), output="M (diagonal)")
    return out
