"""The workspace of a planar model (its Data object: scratch arrays allocated once, reused by every kernel call) and
the forward-dynamics call on checked arrays. Beside the builder, below the dynamics: ``Model.compile`` checks a new
model's joints with it, and every dynamics layer evaluates through it."""

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.planar import entry, tree


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
        self.contacts = model.has_contacts  # contact rows or self-contact sets: forward_dynamics adds their loads


def workspace(model):
    """The model's workspace, created on first use (compiles the model); TypeError unless ``model`` is a Model."""
    _checks.require_model(model)
    model._require_compiled()
    if model._workspace is None:
        model._workspace = Workspace(model)
    return model._workspace


def tree_forward_dynamics(model, ws, q, qd, tau, wrench, qdd):
    """The status of the recursive forward-dynamics kernel on checked arrays: the fixed-signature kernel of a plain
    tree's route (``_kernels.planar.entry``), the generic one otherwise."""
    if ws.short_fd is None:
        ws.short_fd = _short_route(model, ws)
    if ws.short_fd and wrench is ws.no_wrench:
        return ws.short_fd[0](model.body_int, model.body_real, model.gravity, q, qd, tau, ws.ws, qdd)
    return tree.forward_dynamics(model.body_int, model.body_real, model.gravity, q, qd, tau, wrench, ws.no_driven,
                                 ws.ws, qdd, ws.no_drive)


def bare_tree_forward_dynamics(model, ws, q, qd, tau, qdd):
    """The status of the recursive forward dynamics of the model's tree alone (no loads, loops or driven joints: the
    check of ``Model.compile``) on checked arrays, through the kernel its runs compile anyway: a plain tree's short
    path (``tree_forward_dynamics``), and for a serial chain of revolute joints with force elements or contacts the
    fixed-signature kernel of the serial route (``_kernels.planar.entry``), the one route its time loops take
    (``ChainSystem``), not the generic kernel with every route; the generic kernel otherwise."""
    if ws.short_fd is None:
        ws.short_fd = _short_route(model, ws)
    if (not ws.short_fd and not model.loop_int.shape[0] and entry.accepts_model(model, ws.ws)
            and entry.route(model.body_int) == "serial"):
        kernel = entry.forward_dynamics_tree_kernel("serial")
        return kernel(model.body_int, model.body_real, model.gravity, q, qd, tau, ws.ws, qdd)
    return tree_forward_dynamics(model, ws, q, qd, tau, ws.no_wrench, qdd)


def _short_route(model, ws):
    """The fields of forward_dynamics' short path for this model (``Workspace.short_fd``), or False: models with
    loops, force elements or contacts, and arrays the fixed-signature kernel does not take, keep the full route."""
    if model.loop_int.shape[0] or model.elem_int.shape[0] or ws.contacts or not entry.accepts_model(model, ws.ws):
        return False
    kernel = entry.forward_dynamics_tree_kernel(entry.route(model.body_int))
    return kernel, model.body_int, model.body_real, model.gravity, ws.ws, ws.zeros, model._nq
