"""What the tree (``dynamics``) and loop (``loops``) layers share: the model's workspace and one evaluation's checked
inputs (state vectors, element loads), kernel statuses turned into errors, and the mass-matrix and inverse-dynamics
passes. Below both, so that ``dynamics.forward_dynamics`` can hand a model with loops to ``loops.loop_dynamics``
and ``loops`` need not import ``dynamics`` (DESIGN.md, "Architecture": layers call downward only)."""

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.planar import contact as contact_kernels
from .._kernels.planar import elements as element_kernels
from .._kernels.planar import pairs, tree
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


def contact_state_vector(model, state, layout=L):
    """The contact rows' state of ``forward_dynamics(..., contact_state=...)`` as the kernels take it, flat
    (nrows * N_CSTATE,): zeros (no row touching yet: anchors at the contact points) for None, else a checked
    (nrows, N_CSTATE) array (``SimulationResult.contact_state[i]``); StateError naming what is wrong. ``layout``:
    the formulation's (``_kernels.layout`` for a planar model, ``_kernels.spatial.layout`` for a Model3D)."""
    if state is None:
        return np.zeros(model.ncontacts * layout.N_CSTATE)
    state = _checks.finite_array(state, "contact_state", (model.ncontacts, layout.N_CSTATE))
    active = state[:, layout.CS_ACTIVE]
    if np.any((active != 0.0) & (active != 1.0)):
        row = int(np.flatnonzero((active != 0.0) & (active != 1.0))[0])
        raise StateError(f"contact_state[{row}, {layout.CS_ACTIVE}] (row {model.contact_names[row]!r}): the active "
                         f"flag must be 0 or 1, got {active[row]:g}")
    if np.any((active == 1.0) & ~(state[:, layout.CS_VIN] > 0.0)):
        row = int(np.flatnonzero((active == 1.0) & ~(state[:, layout.CS_VIN] > 0.0))[0])
        raise StateError(f"contact_state[{row}, {layout.CS_VIN}] (row {model.contact_names[row]!r}): an active row's "
                         f"impact speed must be > 0, got {state[row, layout.CS_VIN]:g}")
    return np.ascontiguousarray(state).reshape(-1)


def contact_wrench(model, ws, q, qd, state, wrench):
    """``wrench`` (nbodies, 3) plus the contacts' loads at (q, qd) (rows with the flat ``state`` of
    ``contact_state_vector``, and the self-contact pairs), a new array: the force and moment at each centre of
    mass, ground axes, as the time loops apply them."""
    status = tree.com_kinematics(model.body_int, model.body_real, q, qd, ws.ws, ws.com)
    if status:
        raise_status(model, status, ("q", "qd"), output="a centre of mass position or velocity")
    loads = np.zeros((model.nbodies, 3))
    if wrench.shape[0]:
        loads += wrench
    energies, nshapes = np.zeros(3), model.shape_int.shape[0]
    contact_kernels.contact_forces(model.contact_int, model.contact_real, ws.ws, ws.com, state, 0, loads, energies,
                                   np.zeros((model.ncontacts, contact_kernels.N_PER_CONTACT)),
                                   np.zeros((2, 0), dtype=np.int64))
    pairs.pair_forces(model.body_int, model.shape_int, model.shape_real, np.arange(nshapes, dtype=np.int64),
                      np.zeros((nshapes, L.N_BOX)), ws.ws, ws.com, loads, energies, np.zeros(2))
    return loads


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
