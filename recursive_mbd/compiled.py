"""A forward-dynamics callable bound to one model, for callers that evaluate it millions of times.

    fd = rm.compiled_forward_dynamics(model)
    qdd = fd(q, qd)                 # = rm.forward_dynamics(model, q, qd), same checks, same errors
    fd(q, qd, tau, out=qdd)         # no allocation

``rm.forward_dynamics`` looks the model's workspace up, checks every argument and calls an 11-argument kernel on
every call. The bound callable holds the model's arrays and workspace, calls an 8-argument kernel whose dispatcher
accepts only C-contiguous writable float64 vectors (so numba's own type dispatch is the dtype, layout and
writability check) and lets the kernel check the lengths and the finiteness of q, qd, tau and the result. Anything
else (a list, float32, a strided view, a wrong length, NaN) falls back to the checks of ``rm.forward_dynamics`` and
raises the same error. Models with force elements or loops are served by ``rm.forward_dynamics`` itself.
"""

import numba
import numpy as np

from . import dynamics
from ._kernels import tree

_VECTOR = numba.float64[::1]
_BODY_INT = numba.types.Array(numba.int64, 2, "F", readonly=True)  # the frozen model's arrays
_BODY_REAL = numba.types.Array(numba.float64, 2, "F", readonly=True)
_GRAVITY = numba.types.Array(numba.float64, 1, "C", readonly=True)
_WORK = numba.float64[::1, :]
_kernel = None


def _bound_kernel():
    """``tree.forward_dynamics_tree`` compiled for exactly one signature (C-contiguous float64), no other."""
    global _kernel  # noqa: PLW0603  (compiled on first use: import stays cheap)
    if _kernel is None:
        signature = numba.int64(_BODY_INT, _BODY_REAL, _GRAVITY, _VECTOR, _VECTOR, _VECTOR, _WORK, _VECTOR)
        kernel = numba.njit(signature, cache=True, fastmath={"contract"}, error_model="numpy")(
            tree.forward_dynamics_tree.py_func)
        kernel.disable_compile()  # other types are a TypeError at dispatch, not a new specialisation
        _kernel = kernel
    return _kernel


class CompiledForwardDynamics:
    """``rm.forward_dynamics`` of one model as a callable: ``fd(q, qd, tau=None, out=None) -> qdd``.

    Arguments, units, shapes, result and errors as ``rm.forward_dynamics`` (method "recursive", t = 0). The
    workspace is the model's own, so calls on one model do not run concurrently (the kernels hold the GIL).
    """

    __slots__ = ("model", "nq", "_args", "_zeros", "_kernel", "_plain", "_ws")

    def __init__(self, model):
        ws = dynamics.workspace(model)  # TypeError unless a Model; compiles it
        self.model = model
        self.nq = model.nq
        self._plain = model.loop_int.shape[0] == 0 and model.elem_int.shape[0] == 0
        self._zeros = np.zeros(self.nq)
        self._args = (model.body_int, model.body_real, model.gravity)
        arrays_ok = (numba.typeof(model.body_int).key == _BODY_INT.key
                     and numba.typeof(model.body_real).key == _BODY_REAL.key
                     and numba.typeof(model.gravity).key == _GRAVITY.key and numba.typeof(ws.ws).key == _WORK.key)
        self._kernel = _bound_kernel() if self._plain and arrays_ok else None
        self._ws = ws.ws if self._kernel is not None else None

    def __call__(self, q, qd, tau=None, out=None):
        kernel = self._kernel
        if kernel is None:
            return dynamics.forward_dynamics(self.model, q, qd, tau, out=out)
        body_int, body_real, gravity = self._args
        qdd = np.empty(self.nq) if out is None else out
        try:
            status = kernel(body_int, body_real, gravity, q, qd, self._zeros if tau is None else tau, self._ws, qdd)
        except TypeError:  # not C-contiguous writable float64 vectors: the full checks convert or name the culprit
            return dynamics.forward_dynamics(self.model, q, qd, tau, out=out)
        if status:  # a wrong length, NaN, a singular joint or overflow: the full route raises the error naming it
            return dynamics.forward_dynamics(self.model, q, qd, tau, out=out)
        return qdd

    def __repr__(self):
        return f"CompiledForwardDynamics(nbodies={self.model.nbodies}, nq={self.nq})"


def compiled_forward_dynamics(model):
    """A callable ``fd(q, qd, tau=None, out=None) -> qdd`` equal to ``rm.forward_dynamics(model, ...)``.

    The short path for small models called many times (about half the per-call cost of ``rm.forward_dynamics`` at
    N = 2, see benchmarks/forward_dynamics.py): the model's arrays and workspace are bound once, and arguments that
    are already C-contiguous writable float64 (nq,) arrays are checked by the kernel's dispatch and the kernel
    itself at no extra cost. Anything else gets the full checks and errors of ``rm.forward_dynamics``. Models with
    force elements or loops are accepted and served by ``rm.forward_dynamics``.
    """
    return CompiledForwardDynamics(model)
