"""Inlinable sine and cosine for the kernels: one range reduction for both, branch-free polynomials.

``math.sin`` and ``math.cos`` are opaque calls into libm: two calls per body, each spilling the registers that
carry a recursion's state and each doing its own range reduction. ``sincos`` below is plain arithmetic that LLVM
inlines, schedules beside the recursion's dependency chain (the angles do not depend on it) and vectorises in a
loop over many angles (``sincos_array``).

Method: x = j pi/2 + r with j = round(2x/pi) and |r| <= pi/4, r kept as a double-double (r, r_lo). pi/2 is split
in two 33-bit parts and a tail (Cody and Waite), so j * part is exact for |j| < 2**20 and the reduction error is
below 1e-30 absolute. sin and cos of r are the minimax polynomials of degree 13 and 14 of Sun's fdlibm
(``k_sin.c``, ``k_cos.c``, coefficients only), with the r_lo correction. The quadrant j mod 4 swaps and negates
them without branches. Arguments beyond REDUCTION_LIMIT (and NaN, inf) go to libm, which reduces them exactly.

Accuracy (tests/test_trig.py, 1e7 random arguments against math.sin/math.cos): within 1 ulp.
"""

import math

import numba

from . import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)

# no reference counting, as tree.NJIT_OPTIONS: nothing here allocates or returns an array
_OPTIONS = dict(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False)
njit = numba.njit(**_OPTIONS)
inline_njit = numba.njit(inline="always", **_OPTIONS)  # inlined at numba IR level into the caller

# |x| up to this uses the inline reduction (j = round(2x/pi) < 2**19, so j times a 33-bit part is exact)
REDUCTION_LIMIT = 823550.0  # ~ 2**19 pi / 2

_TWO_OVER_PI = 6.36619772367581382433e-01
_ROUND = 6755399441055744.0  # 1.5 * 2**52: (y + _ROUND) - _ROUND rounds y to the nearest integer, |y| < 2**51
_PIO2_1 = 1.57079632673412561417e00  # first 33 bits of pi/2
_PIO2_2 = 6.07710050630396597660e-11  # next 33 bits
_PIO2_2T = 2.02226624879595063154e-21  # pi/2 - _PIO2_1 - _PIO2_2

# fdlibm k_sin.c: sin(r) ~ r + S1 r^3 + ... + S6 r^13 on |r| <= pi/4
_S1 = -1.66666666666666324348e-01
_S2 = 8.33333333332248946124e-03
_S3 = -1.98412698298579493134e-04
_S4 = 2.75573137070700676789e-06
_S5 = -2.50507602534068634195e-08
_S6 = 1.58969099521155010221e-10
# fdlibm k_cos.c: cos(r) ~ 1 - r^2/2 + C1 r^4 + ... + C6 r^14 on |r| <= pi/4
_C1 = 4.16666666666666019037e-02
_C2 = -1.38888888888741095749e-03
_C3 = 2.48015872894767294178e-05
_C4 = -2.75573143513906633035e-07
_C5 = 2.08757232129817482790e-09
_C6 = -1.13596475577881948265e-11


@inline_njit
def _reduced_sincos(x):
    """(sin x, cos x) for |x| <= REDUCTION_LIMIT, without branches (garbage, not an error, beyond it)."""
    j = (x * _TWO_OVER_PI + _ROUND) - _ROUND
    a = x - j * _PIO2_1  # exact: j has < 20 bits, _PIO2_1 33, and a is far smaller than x (Sterbenz)
    b = j * _PIO2_2  # exact
    hi = a - b
    back = hi - a  # two-sum: lo is the exact rounding error of hi = a - b, whatever their magnitudes
    lo = ((a - (hi - back)) - (b + back)) - j * _PIO2_2T  # ... less the tail of pi/2
    r = hi + lo
    r_lo = (hi - r) + lo
    z = r * r
    # sin(r + r_lo) = sin r + r_lo cos r, with cos r ~ 1 - z/2 at this order (fdlibm __kernel_sin)
    v = z * r
    ps = _S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))
    sin_r = r - ((z * (0.5 * r_lo - v * ps) - r_lo) - v * _S1)
    # cos(r + r_lo) = cos r - r_lo sin r, cos r = 1 - z/2 + z^2 pc, 1 - z/2 summed with its rounding error
    pc = z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    cos_r = w + (((1.0 - w) - hz) + (z * pc - r * r_lo))
    quadrant = numba.int64(j) & 3
    odd = (quadrant & 1) != 0
    s = cos_r if odd else sin_r
    c = sin_r if odd else cos_r
    if quadrant & 2:  # quadrants 2 and 3: sin negative
        s = -s
    if (quadrant + 1) & 2:  # quadrants 1 and 2: cos negative
        c = -c
    return s, c


@inline_njit
def sincos(x):
    """(sin x, cos x) of a float64 x, within 1 ulp of the correctly rounded values; NaN for NaN and +-inf."""
    if abs(x) <= REDUCTION_LIMIT:
        return _reduced_sincos(x)
    return math.sin(x), math.cos(x)  # large, inf or NaN: libm's exact (Payne-Hanek) reduction


@njit
def sincos_array(x, s, c):
    """s[k], c[k] = sin(x[k]), cos(x[k]) for 1-D float64 arrays of one length (s and c written, x read).

    The main loop has no branch (it vectorises); the rare argument beyond REDUCTION_LIMIT (or NaN, inf) is
    recomputed by libm in a second loop run only when the first saw one.
    """
    out_of_range = False
    for k in range(x.shape[0]):
        xk = x[k]
        s[k], c[k] = _reduced_sincos(xk)
        out_of_range |= not (abs(xk) <= REDUCTION_LIMIT)
    if out_of_range:
        for k in range(x.shape[0]):
            if not (abs(x[k]) <= REDUCTION_LIMIT):
                s[k] = math.sin(x[k])
                c[k] = math.cos(x[k])


@njit
def sincos_of_sum_array(x, y, s, c):
    """s[k], c[k] = sin(x[k] + y[k]), cos(x[k] + y[k]) for 1-D float64 arrays of one length: ``sincos_array`` of
    the sum without storing the sum (one stream fewer to memory for a kernel whose angles are offset + q).

    Bit for bit the values ``sincos_array`` gives for an array holding x + y.
    """
    out_of_range = False
    for k in range(x.shape[0]):
        xk = x[k] + y[k]
        s[k], c[k] = _reduced_sincos(xk)
        out_of_range |= not (abs(xk) <= REDUCTION_LIMIT)
    if out_of_range:
        for k in range(x.shape[0]):
            xk = x[k] + y[k]
            if not (abs(xk) <= REDUCTION_LIMIT):
                s[k] = math.sin(xk)
                c[k] = math.cos(xk)
