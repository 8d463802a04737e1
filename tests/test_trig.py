"""The kernels' inline sincos (recursive_mbd._kernels.trig) against libm over 1e7 random arguments.

Measured maximum error against libm (glibc math.sin / math.cos, themselves within about 0.5 ulp of the exact
values): 1 ulp for both, over small, medium, near-multiple-of-pi/2, tiny and huge arguments. Asserted: <= 1 ulp.
"""

import math

import numba
import numpy as np
import pytest

from recursive_mbd._kernels import trig

MAX_ULPS = 1.0


@numba.njit(cache=True)
def _libm(x, s, c):
    for k in range(x.shape[0]):
        s[k] = math.sin(x[k])
        c[k] = math.cos(x[k])


@numba.njit(cache=True)
def _scalar(x, s, c):
    for k in range(x.shape[0]):
        s[k], c[k] = trig.sincos(x[k])


def _arguments(count, seed=17):
    """Arguments the kernels see (relative angles) and far beyond: every range reduction branch and its edges."""
    rng = np.random.default_rng(seed)
    part = count // 8
    near_multiples = np.round(rng.uniform(-5e5, 5e5, part)) * (np.pi / 2)  # r = x - j pi/2 cancels most bits
    near_multiples += rng.normal(scale=1e-9, size=part) * rng.integers(0, 2, part)
    pieces = [
        rng.uniform(-np.pi / 4, np.pi / 4, part),
        rng.uniform(-4.0, 4.0, part),
        rng.uniform(-200.0, 200.0, part),
        rng.uniform(-trig.REDUCTION_LIMIT, trig.REDUCTION_LIMIT, part),
        near_multiples,
        np.exp(rng.uniform(-700.0, 0.0, part)) * rng.choice([-1.0, 1.0], part),  # tiny down to subnormal-ish
        rng.uniform(-1.0, 1.0, part) * 10.0 ** rng.uniform(5.0, 300.0, part),  # large: libm's reduction
    ]
    rest = count - len(pieces) * part
    pieces.append(trig.REDUCTION_LIMIT * (1.0 + rng.uniform(-1e-6, 1e-6, rest)))  # both sides of the switch
    x = np.concatenate(pieces)
    return x


def _ulps(value, reference):
    """|value - reference| in units in the last place of the reference (0 where both are 0)."""
    return np.abs(value - reference) / np.spacing(np.abs(reference))


def test_sincos_array_within_one_ulp_of_libm_over_1e7_arguments():
    x = _arguments(10_000_000)
    s, c = np.empty_like(x), np.empty_like(x)
    ref_s, ref_c = np.empty_like(x), np.empty_like(x)
    trig.sincos_array(x, s, c)
    _libm(x, ref_s, ref_c)
    err_s, err_c = _ulps(s, ref_s), _ulps(c, ref_c)
    assert err_s.max() <= MAX_ULPS, (x[err_s.argmax()], err_s.max())
    assert err_c.max() <= MAX_ULPS, (x[err_c.argmax()], err_c.max())
    # most results are the correctly rounded ones: the error is not systematically 1 ulp
    assert np.mean(s == ref_s) > 0.9 and np.mean(c == ref_c) > 0.9
    # numpy's own sin/cos (possibly SIMD implementations) agree as closely
    assert _ulps(s, np.sin(x)).max() <= 2.0 * MAX_ULPS and _ulps(c, np.cos(x)).max() <= 2.0 * MAX_ULPS


def test_scalar_sincos_within_one_ulp_of_python_math():
    # the inlined scalar form (the one the recursive passes use) may differ from the vectorised loop in FMA use
    x = _arguments(100_000, seed=3)
    s, c = np.empty_like(x), np.empty_like(x)
    _scalar(x, s, c)
    ref_s = np.array([math.sin(v) for v in x])
    ref_c = np.array([math.cos(v) for v in x])
    assert _ulps(s, ref_s).max() <= MAX_ULPS and _ulps(c, ref_c).max() <= MAX_ULPS


@pytest.mark.parametrize("value", [0.0, -0.0, np.pi / 4, -np.pi / 2, np.pi, 1e-300, 5e-324])
def test_exact_points(value):
    s, c = np.empty(1), np.empty(1)
    trig.sincos_array(np.array([value]), s, c)
    assert _ulps(s, np.array([math.sin(value)]))[0] <= MAX_ULPS
    assert _ulps(c, np.array([math.cos(value)]))[0] <= MAX_ULPS
    if value == 0.0:
        assert s[0] == 0.0 and c[0] == 1.0


def test_non_finite_arguments_give_nan_like_libm():
    x = np.array([np.nan, np.inf, -np.inf, 1.0])
    s, c = np.empty(4), np.empty(4)
    trig.sincos_array(x, s, c)
    assert np.isnan(s[:3]).all() and np.isnan(c[:3]).all()
    assert s[3] == pytest.approx(math.sin(1.0), rel=1e-16, abs=0)


def test_sincos_of_sum_equals_sincos_array_of_the_sum_bit_for_bit():
    # the serial-chain pass takes sin and cos of offset + q without storing the sum: the values must be those of
    # sincos_array on the stored sum, over every reduction branch (out of range: libm; NaN and inf: NaN)
    x = _arguments(100_000, seed=5)
    offset = np.random.default_rng(5).uniform(-np.pi, np.pi, x.shape[0])
    q = x - offset
    q[:3] = (np.nan, np.inf, -np.inf)
    total = offset + q
    s, c = np.empty_like(x), np.empty_like(x)
    ref_s, ref_c = np.empty_like(x), np.empty_like(x)
    trig.sincos_of_sum_array(offset, q, s, c)
    trig.sincos_array(total, ref_s, ref_c)
    assert np.array_equal(s, ref_s, equal_nan=True) and np.array_equal(c, ref_c, equal_nan=True)
    assert np.isnan(s[:3]).all() and np.isnan(c[:3]).all()
    assert np.any(np.abs(total) > trig.REDUCTION_LIMIT)  # the libm branch was taken
