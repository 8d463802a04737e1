"""Array copies for the kernels, written as loops.

A slice assignment between arrays (``a[:n] = b[k:k + n]``, ``out[row] = y``) makes numba compile its generic
broadcasting assignment, with its shape checks and their error paths, once for every combination of array types in
every process that compiles a kernel using it: about 3 s of CPU each, more than most kernels take themselves (it was
7 of the 9 s that compiling a time loop's output buffer took). These loops compile in a fraction of that and run as
fast (LLVM turns them into the same vectorised copy). Scalar fills (``a[:] = 0.0``) are cheap and stay as they are.

Beside them, what keeps numba from compiling a kernel twice for arrays of one kind: ``readonly`` retypes an array as
read-only inside a kernel (a workspace slice passed where a model's read-only array goes) and
``readonly_zeros`` is such an array made in Python.
"""

import numba
import numpy as np
from numba.core import types
from numba.core.extending import intrinsic
from numba.core.imputils import impl_ret_borrowed

from . import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)

# no reference counting: the copies allocate nothing and return no array
njit = numba.njit(cache=True, error_model="numpy", _nrt=False)


@njit
def copy_into(dst, src, start):
    """dst[start + j] = src[j] for every j of src (1-D arrays)."""
    for j in range(src.shape[0]):
        dst[start + j] = src[j]


@njit
def copy_from(dst, src, start):
    """dst[j] = src[start + j] for every j of dst (1-D arrays)."""
    for j in range(dst.shape[0]):
        dst[j] = src[start + j]


@intrinsic
def readonly(typingctx, array):
    """``array`` typed read-only: the same data, no copy. numba types a read-only array apart from a writeable one
    and compiles a kernel, and every kernel it calls with that array, once for each; the model's arrays (gravity
    among them) are read-only, so a kernel that passes a slice of its workspace where the gravity goes (the zero
    gravity of the response passes) passes it through this, and its callees compile once."""
    if not isinstance(array, types.Array):
        return None
    result = array.copy(readonly=True)

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return result(array), codegen


def readonly_zeros(n):
    """A read-only float64 zero vector (n,): the zero gravity that Python passes to a kernel where a model's
    (read-only) gravity goes, typed like it (see ``readonly``)."""
    zeros = np.zeros(n)
    zeros.flags.writeable = False
    return zeros
