"""Kernels compiled for exactly one signature: the short path of a forward-dynamics call from Python.

numba's dispatch of a call from Python costs about 50 ns per argument, and a generic dispatcher also matches the
argument types against every compiled specialisation. ``forward_dynamics_tree_kernel(route)`` is the 8-argument entry
of ``tree.forward_dynamics`` for a plain tree (``tree.forward_dynamics_tree``, or for a serial chain or a tree of
revolute joints the entry of that route alone, so that a first call compiles only the route the model takes)
compiled for one signature only, with compilation disabled: its dispatch is the dtype, layout and writability check
of every argument (anything else is a TypeError, never a new specialisation), and the kernel itself checks the
lengths and the finiteness. Both ``dynamics.forward_dynamics`` and ``compiled.compiled_forward_dynamics`` call it,
so it lives below both of them."""

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import ALL_REVOLUTE, FLAGS, SERIAL_REVOLUTE
from . import tree

VECTOR = numba.float64[::1]  # q, qd, tau, qdd: C-contiguous writable float64
BODY_INT = numba.types.Array(numba.int64, 2, "F", readonly=True)  # the frozen model's arrays
BODY_REAL = numba.types.Array(numba.float64, 2, "F", readonly=True)
GRAVITY = numba.types.Array(numba.float64, 1, "C", readonly=True)
WORK = numba.float64[::1, :]
OPTIONS = dict(fastmath={"contract"}, error_model="numpy", _nrt=False)  # those of the kernels (tree.NJIT_OPTIONS)
_kernels = {}
# the entry of each route of ``tree.forward_dynamics``, by the model's flags (``route``)
ROUTES = {"serial": tree.forward_dynamics_serial_tree, "revolute": tree.forward_dynamics_revolute_tree,
          "general": tree.forward_dynamics_tree}


def route(body_int):
    """The route ``tree.forward_dynamics`` takes for a model without driven joints: "serial" (a serial chain of
    revolute joints), "revolute" (revolute joints only) or "general"."""
    flags = body_int[0, FLAGS]
    return "serial" if flags & SERIAL_REVOLUTE else "revolute" if flags & ALL_REVOLUTE else "general"


def forward_dynamics_tree_kernel(model_route="general"):
    """``tree.forward_dynamics_tree`` (or, for a ``route`` "serial" or "revolute", the entry of that route alone:
    the same arithmetic, a first call compiling a third as much) compiled for exactly (BODY_INT, BODY_REAL,
    GRAVITY, VECTOR x 3, WORK, VECTOR) on first use (loaded from numba's cache after the first process), no other
    signature."""
    kernel = _kernels.get(model_route)
    if kernel is None:
        signature = numba.int64(BODY_INT, BODY_REAL, GRAVITY, VECTOR, VECTOR, VECTOR, WORK, VECTOR)
        kernel = numba.njit(signature, cache=True, **OPTIONS)(ROUTES[model_route].py_func)
        kernel.disable_compile()  # other types are a TypeError at dispatch, not a new specialisation
        _kernels[model_route] = kernel
    return kernel


def accepts_model(model, work):
    """True if the model's packed arrays and workspace ``work`` have the types of the fixed signature (a 1-body
    model's arrays are both C- and F-contiguous and type as C: it takes the generic route)."""
    return (numba.typeof(model.body_int).key == BODY_INT.key and numba.typeof(model.body_real).key == BODY_REAL.key
            and numba.typeof(model.gravity).key == GRAVITY.key and numba.typeof(work).key == WORK.key)
