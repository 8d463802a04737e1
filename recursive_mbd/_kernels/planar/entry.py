"""Kernels compiled for exactly one signature: the short path of a forward-dynamics call from Python.

numba's dispatch of a call from Python costs about 50 ns per argument, and a generic dispatcher also matches the
argument types against every compiled specialisation. ``forward_dynamics_tree_kernel()`` is
``tree.forward_dynamics_tree`` (8 arguments) compiled for one signature only, with compilation disabled: its
dispatch is the dtype, layout and writability check of every argument (anything else is a TypeError, never a new
specialisation), and the kernel itself checks the lengths and the finiteness. Both ``dynamics.forward_dynamics``
and ``compiled.compiled_forward_dynamics`` call it, so it lives below both of them.
"""

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from . import tree

VECTOR = numba.float64[::1]  # q, qd, tau, qdd: C-contiguous writable float64
BODY_INT = numba.types.Array(numba.int64, 2, "F", readonly=True)  # the frozen model's arrays
BODY_REAL = numba.types.Array(numba.float64, 2, "F", readonly=True)
GRAVITY = numba.types.Array(numba.float64, 1, "C", readonly=True)
WORK = numba.float64[::1, :]
OPTIONS = dict(fastmath={"contract"}, error_model="numpy", _nrt=False)  # those of the kernels (tree.NJIT_OPTIONS)
_kernel = None


def forward_dynamics_tree_kernel():
    """``tree.forward_dynamics_tree`` compiled for exactly (BODY_INT, BODY_REAL, GRAVITY, VECTOR x 3, WORK, VECTOR)
    on first use (loaded from numba's cache after the first process), no other signature."""
    global _kernel  # noqa: PLW0603  (compiled on first use: import stays cheap)
    if _kernel is None:
        signature = numba.int64(BODY_INT, BODY_REAL, GRAVITY, VECTOR, VECTOR, VECTOR, WORK, VECTOR)
        kernel = numba.njit(signature, cache=True, **OPTIONS)(tree.forward_dynamics_tree.py_func)
        kernel.disable_compile()  # other types are a TypeError at dispatch, not a new specialisation
        _kernel = kernel
    return _kernel


def accepts_model(model, work):
    """True if the model's packed arrays and workspace ``work`` have the types of the fixed signature (a 1-body
    model's arrays are both C- and F-contiguous and type as C: it takes the generic route)."""
    return (numba.typeof(model.body_int).key == BODY_INT.key and numba.typeof(model.body_real).key == BODY_REAL.key
            and numba.typeof(model.gravity).key == GRAVITY.key and numba.typeof(work).key == WORK.key)
