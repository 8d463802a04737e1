"""A forward-dynamics callable bound to one model, for callers that evaluate it millions of times.

    fd = rm.compiled_forward_dynamics(model)
    qdd = fd(q, qd)                 # = rm.forward_dynamics(model, q, qd), same checks, same errors
    fd(q, qd, tau, out=qdd)         # no allocation

``rm.forward_dynamics`` takes the same fixed-signature 8-argument kernel (``_kernels.planar.entry``) on a plain tree,
after looking the model's workspace up. The bound callable holds the model's arrays and workspace in a closure;
the kernel's dispatcher accepts only C-contiguous writable float64 vectors (so numba's own type dispatch is the
dtype, layout and writability check) and the kernel checks the lengths and the finiteness of q, qd, tau and the
result. Anything else (a list, float32, a strided view, a wrong length, NaN) falls back to the checks of
``rm.forward_dynamics`` and raises the same error. Models with force elements or loops are served by
``rm.forward_dynamics`` itself. A ``Model3D`` gets ``fd(q, v, tau=None, out=None) -> vdot`` on the spatial
fixed-signature kernel (``_kernels.spatial.entry``) the same way.
"""

import numba
import numpy as np

from .._kernels import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .._kernels.planar import entry, tree
from ..model.spatial import Model3D
from . import calls as dynamics

# specialize=True freezes the model's arrays into the machine code: only for small models (code size, compile time)
SPECIALIZE_MAX_BODIES = 64


def _specialized_kernel(model):
    """A 5-argument kernel (q, qd, tau, ws, qdd) with this model's arrays compiled in as constants (about 4 s of
    compilation, not cached: numba caches no closures), for one signature only."""
    body_int = np.ascontiguousarray(model.body_int)
    body_real = np.ascontiguousarray(model.body_real)
    gravity = np.ascontiguousarray(model.gravity)
    inner = tree.forward_dynamics_tree

    def kernel(q, qd, tau, ws, qdd):
        return inner(body_int, body_real, gravity, q, qd, tau, ws, qdd)

    signature = numba.int64(entry.VECTOR, entry.VECTOR, entry.VECTOR, entry.WORK, entry.VECTOR)
    compiled = numba.njit(signature, **entry.OPTIONS)(kernel)
    compiled.disable_compile()
    return compiled


def compiled_forward_dynamics(model, specialize=False):
    """A callable ``fd(q, qd, tau=None, out=None) -> qdd`` equal to ``rm.forward_dynamics(model, ...)``.

    The short path for small models called many times: the model's arrays and workspace are bound once (in a
    closure: no attribute look-ups per call), and arguments that are already C-contiguous writable float64 (nq,)
    arrays are checked by the kernel's dispatch and the kernel itself at no extra cost. Anything else gets the full
    checks and errors of ``rm.forward_dynamics``. Models with force elements, contacts or loops are accepted and
    served by ``rm.forward_dynamics`` (contacts at its default contact state). Arguments, units, shapes and errors
    as ``rm.forward_dynamics`` (method "recursive", t = 0). The workspace is the model's own, so calls on one
    model do not run concurrently (the kernels hold the GIL). The callable has attributes ``model``, ``nq`` and
    ``short_path`` (False when it defers every call).

    ``specialize=True`` (plain trees of at most SPECIALIZE_MAX_BODIES bodies) compiles a kernel for this one model
    with its arrays as constants, so a call passes 5 arrays instead of 8: the fastest call at N = 2, bought with
    about 4 s of compilation per model (in every process: it cannot be cached) and a workspace of its own.

    A ``Model3D``: ``fd(q, v, tau=None, out=None) -> vdot`` (q (nq,), v, tau, vdot (nv,)) equal to
    ``rm.forward_dynamics(model, q, v, ...)``, a spatial tree's short path its fixed-signature articulated-body kernel
    (``_kernels.spatial.entry``); attributes ``nv`` besides ``nq``. ``specialize`` is for planar models (ValueError).
    """
    if isinstance(model, Model3D):
        return _spatial_forward_dynamics(model, specialize)
    ws = dynamics.workspace(model)  # TypeError unless a Model; compiles it
    nq = model.nq
    full_route = dynamics.forward_dynamics
    plain = model.loop_int.shape[0] == 0 and model.elem_int.shape[0] == 0 and not ws.contacts
    arrays_ok = entry.accepts_model(model, ws.ws)
    if not (plain and arrays_ok):
        def fd(q, qd, tau=None, out=None):
            return full_route(model, q, qd, tau, out=out)
    elif specialize and model.nbodies <= SPECIALIZE_MAX_BODIES:
        kernel = _specialized_kernel(model)
        work = np.zeros_like(ws.ws, order="F")
        zeros = np.zeros(nq)
        empty = np.empty

        def fd(q, qd, tau=zeros, out=None):
            qdd = empty(nq) if out is None else out
            try:
                status = kernel(q, qd, tau, work, qdd)
            except TypeError:  # not C-contiguous writable float64 vectors (or tau=None): the full checks convert them
                return full_route(model, q, qd, None if tau is zeros else tau, out=out)
            if status:  # a wrong length, NaN, a singular joint or overflow: the full route raises the error naming it
                return full_route(model, q, qd, None if tau is zeros else tau, out=out)
            return qdd
    else:
        kernel = entry.forward_dynamics_tree_kernel(entry.route(model.body_int))
        body_int, body_real, gravity, work = model.body_int, model.body_real, model.gravity, ws.ws
        zeros = np.zeros(nq)
        empty = np.empty

        def fd(q, qd, tau=zeros, out=None):
            qdd = empty(nq) if out is None else out
            try:
                status = kernel(body_int, body_real, gravity, q, qd, tau, work, qdd)
            except TypeError:  # not C-contiguous writable float64 vectors (or tau=None): the full checks convert them
                return full_route(model, q, qd, None if tau is zeros else tau, out=out)
            if status:  # a wrong length, NaN, a singular joint or overflow: the full route raises the error naming it
                return full_route(model, q, qd, None if tau is zeros else tau, out=out)
            return qdd

    fd.model = model
    fd.nq = nq
    fd.short_path = plain and arrays_ok
    fd.__doc__ = f"forward dynamics of a model with {model.nbodies} bodies, nq = {nq}: fd(q, qd, tau=None, out=None)"
    return fd


def _spatial_forward_dynamics(model, specialize):
    """``compiled_forward_dynamics`` of a Model3D: the short path of ``rm.forward_dynamics`` bound to the model (its
    arrays and workspace buffer in a closure), anything the kernel refuses sent to the full route."""
    from .._kernels.spatial import entry as spatial_entry  # noqa: PLC0415  (spatial kernels only for spatial models)
    from . import spatial  # noqa: PLC0415

    if specialize:
        raise ValueError("specialize=True compiles a planar model's own kernel; a Model3D takes the shared "
                         "fixed-signature kernel (specialize=False)")
    ws = spatial.workspace(model)  # compiles the model
    nv = model.nv
    full_route = dynamics.forward_dynamics
    plain = not model._loops and not model._elements and not model._contacts
    arrays_ok = spatial_entry.accepts_model(model)
    if not (plain and arrays_ok):
        def fd(q, v, tau=None, out=None):
            return full_route(model, q, v, tau, out=out)
    else:
        kernel = spatial_entry.kernel(ws.route)
        body_int, body_real, gravity, buffer = model.body_int, model.body_real, model.gravity, ws.buffer
        zeros = np.zeros(nv)
        empty = np.empty

        def fd(q, v, tau=zeros, out=None):
            vdot = empty(nv) if out is None else out
            try:
                status = kernel(body_int, body_real, gravity, q, v, tau, buffer, vdot)
            except TypeError:  # not C-contiguous writable float64 vectors (or tau=None): the full checks convert them
                return full_route(model, q, v, None if tau is zeros else tau, out=out)
            if status:  # a wrong length, NaN, a quaternion off unit norm, overflow: the full route handles or names it
                return full_route(model, q, v, None if tau is zeros else tau, out=out)
            return vdot

    fd.model = model
    fd.nq = model.nq
    fd.nv = nv
    fd.short_path = plain and arrays_ok
    fd.__doc__ = (f"forward dynamics of a spatial model with {model.nbodies} bodies, nq = {model.nq}, nv = {nv}: "
                  "fd(q, v, tau=None, out=None)")
    return fd
