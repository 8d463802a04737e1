"""The short path of ``augmented.forward_dynamics(solver="tree")`` from Python: one kernel compiled for one signature.

numba's dispatch of a call from Python costs about 0.2 us per array argument, and a generic dispatcher also matches
the argument types against every compiled specialisation. ``forward_dynamics_kernel()`` is
``forward_dynamics_tree`` below (9 arguments: the tree solver's scratch, Baumgarte parameters, power and the
model's gravity are packed into an extra row of its factor array) compiled for one signature only, with
compilation disabled: its dispatch is the dtype, layout and writability check of every argument (anything else is a
TypeError, never a new specialisation), and the kernel checks the shapes, the finiteness of the inputs
(``factor_and_solve``) and of the results. A nonzero status sends the caller to the full route, which converts
what it can and raises the error that names the argument, body or entry. (``_kernels.planar.entry`` holds the recursive
route's counterpart.) numba's cache keys this kernel on this file only: after editing ``augmented.factor_and_solve``
in a checkout, touch this file (or clear its ``__pycache__``), or the cached kernel keeps the old code.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import readonly
from ..layout import NDOF, QIDX
from ..sparse_kkt import F_WIDTH, aligned_factor
from .tree import factor_and_solve

VECTOR = numba.float64[::1]  # tau, lam: C-contiguous writable float64
STATE = numba.float64[:, ::1]  # z, zd, zdd (nbodies, 3); the factor (nbodies + 1, F_WIDTH): C-contiguous, writable
ROWS = numba.int64[::1]  # row_start (nbodies + 1,)
BODY_INT = numba.types.Array(numba.int64, 2, "F", readonly=True)  # the frozen model's arrays
BODY_REAL = numba.types.Array(numba.float64, 2, "F", readonly=True)
SIGNATURE = numba.int64(BODY_INT, BODY_REAL, ROWS, STATE, STATE, VECTOR, STATE, STATE, VECTOR)

# ---- the factor's extra row: factor (nbodies + 1, F_WIDTH), rows 0 .. nbodies - 1 the tree solver's factor, row
# nbodies the per-call scalars below (one array argument instead of four) -----------------------------------------
SMALL_SCRATCH = 0  # factor_and_solve's scratch (4, 3), row-major
SMALL_STAB = 12  # (alpha, beta) = (0, 0): the short path has no Baumgarte terms
SMALL_POWER = 14  # the power of tau (1,)
SMALL_GRAVITY = 15  # the model's gravity (2,), copied when the workspace is made (a compiled model is frozen)
SMALL_SIZE = 17  # <= F_WIDTH

# statuses of the shape and result checks (factor_and_solve's own statuses are positive)
BAD_SHAPE = -1
NOT_FINITE = -2

_kernel = None


def forward_dynamics_tree(body_int, body_real, row_start, z, zd, tau, factor, zdd, lam):
    """``factor_and_solve`` without loads, loops or Baumgarte terms, with shapes checked: z, zd, zdd (nbodies, 3),
    tau (nq,) or (0,) (none), factor (nbodies + 1, F_WIDTH) (the factor, then the row of per-call scalars),
    row_start (nbodies + 1,), lam (row_start[-1],). Returns 0, factor_and_solve's status (> 0), BAD_SHAPE, or
    NOT_FINITE when zdd or lam is."""
    n = body_int.shape[0]
    nq = body_int[n - 1, QIDX] + body_int[n - 1, NDOF] if n else 0
    if (z.shape[0] != n or z.shape[1] != 3 or zd.shape[0] != n or zd.shape[1] != 3 or zdd.shape[0] != n
            or zdd.shape[1] != 3 or factor.shape[0] != n + 1 or factor.shape[1] < max(F_WIDTH, SMALL_SIZE)
            or row_start.shape[0] != n + 1):
        return BAD_SHAPE
    if (tau.shape[0] != nq and tau.shape[0] != 0) or lam.shape[0] != row_start[n]:
        return BAD_SHAPE
    small = factor[n]
    small[SMALL_STAB] = 0.0
    small[SMALL_STAB + 1] = 0.0
    scratch = small[SMALL_SCRATCH:SMALL_STAB].reshape((4, 3))
    # the gravity read-only, as the model's that the full route passes: one compile of factor_and_solve for both
    status = factor_and_solve(body_int, body_real, readonly(small[SMALL_GRAVITY:SMALL_SIZE]), row_start, z, zd, tau,
                              z[:0], small[SMALL_STAB:SMALL_POWER], factor[:n], scratch, zdd, lam,
                              small[SMALL_POWER:SMALL_GRAVITY])
    if status:
        return status
    total = 0.0  # one reduction: a NaN or inf anywhere makes the sum non-finite
    for i in range(n):
        total += zdd[i, 0] + zdd[i, 1] + zdd[i, 2]
    for r in range(lam.shape[0]):
        total += lam[r]
    return 0 if math.isfinite(total) else NOT_FINITE


def factor_buffer(model):
    """The (nbodies + 1, F_WIDTH) array whose rows 0 .. nbodies - 1 are the tree solver's factor and whose last row
    the short path's per-call scalars, gravity filled in."""
    buffer = aligned_factor(model.nbodies + 1)  # F_WIDTH >= SMALL_SIZE
    buffer[model.nbodies, SMALL_GRAVITY:SMALL_SIZE] = model.gravity
    return buffer


def forward_dynamics_kernel():
    """``forward_dynamics_tree`` compiled for exactly ``SIGNATURE`` on first use (loaded from numba's cache after the
    first process), no other signature."""
    global _kernel  # noqa: PLW0603  (compiled on first use: import stays cheap)
    if _kernel is None:
        kernel = numba.njit(SIGNATURE, cache=True, error_model="numpy")(forward_dynamics_tree)
        kernel.disable_compile()  # other types are a TypeError at dispatch, not a new specialisation
        _kernel = kernel
    return _kernel


def accepts_model(model):
    """True if the model's packed arrays have the types of the fixed signature (a 1-body model's arrays are both C-
    and F-contiguous and type as C: it takes the full route)."""
    return numba.typeof(model.body_int).key == BODY_INT.key and numba.typeof(model.body_real).key == BODY_REAL.key
