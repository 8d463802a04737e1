"""What the tree (``dynamics``) and loop (``loops``) layers share: the model's workspace and one evaluation's checked
inputs (state vectors, element loads), kernel statuses turned into errors, and the mass-matrix and inverse-dynamics
passes. Below both, so that ``dynamics.forward_dynamics`` can hand a model with loops to ``loops.loop_dynamics``
and ``loops`` need not import ``dynamics`` (DESIGN.md, "Architecture": layers call downward only)."""

import numpy as np

from . import _checks
from ._kernels import elements as element_kernels
from ._kernels import entry, tree
from ._kernels import layout as L
from .errors import ModelError, StateError

_FLOAT = np.dtype(np.float64)


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
        # forward_dynamics' short path: (kernel, body_int, body_real, gravity, ws, zeros, nq) of a plain tree whose
        # arrays the fixed-signature kernel takes; None until the first recursive call decides, False for none
        self.short_fd = None


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


def tree_forward_dynamics(model, ws, q, qd, tau, wrench, qdd):
    """The status of the recursive forward-dynamics kernel on checked arrays: the fixed-signature kernel of a plain
    tree (``_kernels.entry``; one compiled kernel serves the short and the full route), the generic one otherwise."""
    if ws.short_fd is None:
        ws.short_fd = _short_route(model, ws)
    if ws.short_fd and wrench is ws.no_wrench:
        return ws.short_fd[0](model.body_int, model.body_real, model.gravity, q, qd, tau, ws.ws, qdd)
    return tree.forward_dynamics(model.body_int, model.body_real, model.gravity, q, qd, tau, wrench, ws.no_driven,
                                 ws.ws, qdd, ws.no_drive)


def _short_route(model, ws):
    """The fields of forward_dynamics' short path for this model (``Workspace.short_fd``), or False: models with
    loops or force elements, and arrays the fixed-signature kernel does not take, keep the full route."""
    if model.loop_int.shape[0] or model.elem_int.shape[0] or not entry.accepts_model(model, ws.ws):
        return False
    return (entry.forward_dynamics_tree_kernel(), model.body_int, model.body_real, model.gravity, ws.ws, ws.zeros,
            model._nq)
