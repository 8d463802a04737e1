"""Array copies for the kernels, written as loops.

A slice assignment between arrays (``a[:n] = b[k:k + n]``, ``out[row] = y``) makes numba compile its generic
broadcasting assignment, with its shape checks and their error paths, once for every combination of array types in
every process that compiles a kernel using it: about 3 s of CPU each, more than most kernels take themselves (it was
7 of the 9 s that compiling a time loop's output buffer took). These loops compile in a fraction of that and run as
fast (LLVM turns them into the same vectorised copy). Scalar fills (``a[:] = 0.0``) are cheap and stay as they are.
"""

import numba

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
