"""What the tree (``dynamics``) and loop (``loops``) layers share: the model's workspace and one evaluation's checked
inputs (state vectors, element loads), kernel statuses turned into errors, and the mass-matrix and inverse-dynamics
passes. Below both, so that ``dynamics.forward_dynamics`` can hand a model with loops to ``loops.loop_dynamics``
and ``loops`` need not import ``dynamics`` (DESIGN.md, "Architecture": layers call downward only)."""

import numpy as np

from .. import _checks
from .._kernels.planar import elements as element_kernels
from .._kernels.planar import tree
from ..errors import ModelError, StateError
from ..model.statuses import raise_status

_FLOAT = np.dtype(np.float64)


def state_vector(x, n, what, size_name):
    """``x`` as a C-contiguous float64 (n,) array, or a StateError/TypeError naming ``what`` (and the model's size
    ``size_name``: "nq", "nv").

    Fast path: an ndarray that is already float64, (n,) and a C array (C-contiguous, aligned, writable: the type the
    kernels are compiled for) is returned as it is. A read-only or unaligned array is copied: numba types it
    differently, and the one-signature kernels refuse it. Complex, string or object input is a TypeError (a complex
    array would otherwise lose its imaginary part silently).
    """
    if x.__class__ is np.ndarray and x.dtype is _FLOAT and x.shape == (n,) and x.flags.carray:
        return x
    arr = np.ascontiguousarray(_checks.real_array(x, what))
    if not arr.flags.carray:  # read-only or unaligned (the caller's own array): a copy the kernels take
        arr = arr.copy()
    if arr.shape != (n,):
        raise StateError(f"{what} must have shape ({n},) for this model ({size_name} = {n}), got shape {arr.shape}")
    return arr


def as_vector(model, x, what):
    """``x`` as a C-contiguous float64 (nq,) array of a planar model (``state_vector``), fast path inline."""
    nq = model._nq
    if x.__class__ is np.ndarray and x.dtype is _FLOAT and x.shape == (nq,) and x.flags.carray:
        return x
    return state_vector(x, nq, what, "nq")


def body_points(model, body, point, dim):
    """(index of ``body``, ``point`` as a finite real array (dim,) or (k, dim)) for ``point_kinematics``; the errors
    name the body or the point."""
    index = model.body_index(body)
    pts = _checks.real_array(point, "point")
    if pts.shape[-1:] != (dim,) or pts.ndim > 2:
        raise StateError(f"point must have shape ({dim},) or (k, {dim}), got {pts.shape}")
    _checks.finite_array(pts, "point")
    return index, pts


def cholesky_solve(mass, rhs, what):
    """The solution x of mass x = rhs by Cholesky (the "mass_matrix" route of forward dynamics): ModelError if the
    mass matrix is not positive definite, StateError if x is not finite (``what`` names it)."""
    import scipy.linalg  # noqa: PLC0415  (scipy only for this route: `rmbd info` starts faster)

    try:
        factor = scipy.linalg.cho_factor(mass, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ModelError("the mass matrix is not positive definite at this q (a body or subtree without "
                         "inertia along its joint)") from None
    return _checks.check_finite_result(scipy.linalg.cho_solve(factor, rhs, check_finite=False), what)


def recheck_out(ws, out, shape):
    """After a kernel refused the caller's buffer ``out`` (numba's TypingError or TypeError: its dimensions or flags
    were changed in place after its check): forget that check and check it again, raising the error that says what
    is wrong with it. Nothing for out None (the caller re-raises the kernel's error)."""
    if out is not None:
        ws.checked_out = None
        _checks.output_buffer(out, shape)


def into(out, result):
    """``result`` copied into the caller's buffer ``out`` and ``out`` returned, or ``result`` if out is None."""
    if out is not None:
        out[:] = result
        return out
    return result


def unknown_method(method):
    """The StateError of a forward-dynamics ``method`` that is neither "recursive" nor "mass_matrix"."""
    return StateError(f"unknown method {method!r}; expected 'recursive' or 'mass_matrix'")


def element_inputs(model, t, u, q=None, v=None):
    """Evaluate the model's time-varying elements (force(t), torque(t); a Model3D's force(t, q, v), torque(t, q,
    v) at the state q, v) into u; errors name the element."""
    for slot, width, function, name, nargs in model.element_functions:
        try:
            value = np.asarray(function(t) if nargs == 1 else function(t, q, v), dtype=float).reshape(-1)
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
