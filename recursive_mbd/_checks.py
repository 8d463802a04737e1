"""Argument validators shared by the public wrappers (dynamics, loops, analysis, augmented, chains, studies, simulate).

Numba does not bounds-check: an array or index that reaches a kernel unchecked is a crash or silent garbage
(DESIGN.md). Every validator here raises a TypeError for a value of the wrong kind (a string, complex numbers, a
Mechanism for a Model) and a ``StateError`` (a ``ValueError``) for a value of the right kind but outside its range,
in both cases naming the argument. They are cheap on the slow path and are not called on the hot path's fast path
(an array that is already float64, C-contiguous and of the right shape).
"""

import collections.abc
import math
import numbers
import os
import sys
import warnings

import numpy as np

from .errors import StateError

_FLOAT = np.dtype(np.float64)
_REAL_KINDS = "biuf"  # bool, signed, unsigned, float
_MODEL_MODULE = "recursive_mbd.model.planar"  # where Model is defined


def require_model(model, what="model"):
    """``model`` itself, or a TypeError naming ``what`` unless it is a ``recursive_mbd.Model``."""
    # recognised by its class (or a base class) recursive_mbd.model.planar.Model, not imported: model.py builds on this
    # module, which stays free of import circles
    cls = model.__class__
    if cls.__name__ == "Model" and cls.__module__ == _MODEL_MODULE:  # the common case, without the MRO walk
        return model
    if not any(cls.__name__ == "Model" and cls.__module__ == _MODEL_MODULE for cls in type(model).__mro__):
        hint = " (call its .build() to get a Model)" if type(model).__name__ == "Mechanism" else ""
        raise TypeError(f"{what} must be a recursive_mbd.Model, got {type(model).__name__}{hint}")
    return model


def real_array(x, what, dtype=np.float64):
    """``x`` as a float64 array; TypeError naming ``what`` for complex, string or object input.

    Complex numbers would silently lose their imaginary part in ``np.asarray(x, dtype=float)``, and strings such as
    "1" would be parsed: both are refused.
    """
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be an array of real numbers: {err}") from None
    if arr.dtype.kind not in _REAL_KINDS:
        kind = "complex" if arr.dtype.kind == "c" else type(x).__name__ if arr.dtype.kind == "O" else str(arr.dtype)
        raise TypeError(f"{what} must be an array of real numbers, got {kind} values")
    return np.asarray(arr, dtype=dtype)


def finite_array(x, what, shape=None):
    """A float64 array of ``x`` with every entry finite, and of ``shape`` if given (None entries: any length)."""
    arr = real_array(x, what)
    if shape is not None and (arr.ndim != len(shape) or any(s is not None and s != n
                                                           for s, n in zip(shape, arr.shape, strict=True))):
        expected = "(" + ", ".join("k" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise StateError(f"{what} must have shape {expected}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(~np.isfinite(arr))[0]), arr.shape))
        raise StateError(f"{what}{list(bad)} is not finite ({arr[bad]})")
    return arr


def real(value, what, *, low=None, strict=False, allow_inf=False, allow_none=False):
    """``value`` as a float: a real number (not a bool or string), not NaN, finite unless ``allow_inf``, and
    > ``low`` (``strict``) or >= ``low``. TypeError or StateError naming ``what``."""
    if value.__class__ is float and low is None and -math.inf < value < math.inf:
        return value  # the common case (a finite plain float; NaN fails the test): no abstract-class checks
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
            value = value.item()
        else:
            raise TypeError(f"{what} must be a real number, got {type(value).__name__} {value!r:.40}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise StateError(f"{what} must be {'a number' if allow_inf else 'finite'}, got {value}")
    if low is not None and (value <= low if strict else value < low):
        raise StateError(f"{what} must be {'>' if strict else '>='} {low:g}, got {value:g}")
    return value


def integer(value, what, *, low=None, high=None):
    """``value`` as an int (an integral number, not a bool; 3.0 is refused), in [low, high]; TypeError or
    StateError naming ``what``. ``high`` defaults to 2**62 so that it fits a kernel's int64."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r:.40}")
    value = int(value)
    high = 2**62 if high is None else high
    if (low is not None and value < low) or value > high:
        raise StateError(f"{what} must be an integer in [{low}, {high}], got {value}")
    return value


def index_array(indices, size, what):
    """Sorted unique int64 indices in [0, size) (C-contiguous, for a kernel), or TypeError / StateError naming
    ``what`` and the first bad entry. Negative indices are refused: a kernel would read before its buffer."""
    arr = np.asarray(indices)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise TypeError(f"{what} must be a 1-D sequence of integer indices, got {arr.dtype} of shape {arr.shape}")
    arr = arr.astype(np.int64)
    bad = (arr < 0) | (arr >= size)
    if bad.any():
        raise StateError(f"{what}: index {int(arr[bad][0])} out of range [0, {size})")
    return np.ascontiguousarray(np.unique(arr))


def output_buffer(out, shape, what="out"):
    """``out`` if it can receive a kernel's result: a writable, C-contiguous float64 ndarray of exactly ``shape``.

    Anything else is refused rather than converted, since a converted copy would not be the caller's buffer.
    """
    if out.__class__ is not np.ndarray:  # a list, or an ndarray subclass a kernel must not write into
        raise TypeError(f"{what} must be a numpy float64 array of shape {shape}, got {type(out).__name__}")
    if out.dtype is not _FLOAT and out.dtype != _FLOAT:
        raise TypeError(f"{what} must have dtype float64, got {out.dtype}")
    if out.shape != shape:
        raise StateError(f"{what} must have shape {shape}, got {out.shape}")
    if not out.flags.c_contiguous:
        raise StateError(f"{what} must be C-contiguous (a strided view would be written past its elements)")
    if not out.flags.writeable:
        raise StateError(f"{what} is read-only")
    return out


def check_finite_result(value, what, cause="the inputs are finite but too large: the computation overflowed"):
    """``value`` if every entry is finite, else a StateError naming ``what`` and ``cause``."""
    arr = np.asarray(value)
    if not np.all(np.isfinite(arr)):
        bad = np.unravel_index(int(np.flatnonzero(~np.isfinite(arr))[0]), arr.shape) if arr.ndim else ()
        bad = [int(i) for i in bad]
        raise StateError(f"{what}{list(bad) if bad else ''} is not finite: {cause}")
    return value


def step_limit(value, what="max_steps"):
    """``value`` as an int in [1, 2**62] (it fits a compiled loop's int64): an integer, or a float of integral
    value (a limit is often written 1e7); TypeError or StateError naming ``what``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, float, np.floating)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    if not (1 <= value <= 2**62) or value != int(value):
        raise StateError(f"{what} must be an integer in [1, 2**62], got {value!r}")
    return int(value)


def run_options(*, rtol, atol, every, max_step, first_step, max_steps, t_eval, alpha=0.0, beta=0.0,
                midpoint_tol=1e-13):
    """The step-control options of ``simulate`` (both formulations) and ``simulate_many`` checked and converted, in
    the order (rtol, atol, every, max_step, first_step, max_steps, alpha, beta, t_eval, midpoint_tol).

    rtol, atol, midpoint_tol: finite > 0; every: an integer >= 1, max_steps: ``step_limit`` (both below 2**62, so
    they fit the compiled loop's int64); max_step: > 0, inf allowed; first_step: None or finite > 0; alpha, beta:
    finite [1/s]; t_eval: None or a 1-D array of finite times (its order and range are the caller's to check
    against t0, t_end). Errors are TypeError (not a number) or StateError, naming the option.
    """
    return (real(rtol, "rtol", low=0.0, strict=True), real(atol, "atol", low=0.0, strict=True),
            integer(every, "every", low=1), real(max_step, "max_step", low=0.0, strict=True, allow_inf=True),
            real(first_step, "first_step", low=0.0, strict=True, allow_none=True),
            step_limit(max_steps), real(alpha, "alpha"), real(beta, "beta"),
            None if t_eval is None else finite_array(t_eval, "t_eval", (None,)),
            real(midpoint_tol, "midpoint_tol", low=0.0, strict=True))


def driver_value(name, evaluate, t):
    """(f, f', f'') of the driver of body ``name`` at t, or a StateError that names the driver and the time when
    it raises (the user's exception chained) or returns non-finite values."""
    try:
        value = evaluate(t)
    except Exception as err:  # noqa: BLE001 - say which driver failed and when
        raise StateError(f"driver of body {name!r} raised at t = {t:g}: {err!r}") from err
    if not all(math.isfinite(v) for v in value):
        raise StateError(f"driver of body {name!r}: non-finite value at t = {t:g}: {value}")
    return value


def arity(function, what):
    """1 or 3: whether ``function`` (a user's tau) takes (t) or (t, q, qd); a TypeError naming ``what`` otherwise.
    A numba-compiled function is inspected through its Python function."""
    import inspect  # noqa: PLC0415

    target = getattr(function, "py_func", function)
    try:
        params = [p for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return 3
    if len(params) not in (1, 3):
        raise TypeError(f"{what} must take (t) or (t, q, qd), got a function of {len(params)} arguments")
    return len(params)


def mapping(value, what, entries):
    """A dict-like argument (None: an empty dict), or a TypeError naming ``what`` and its ``entries`` (e.g.
    "body -> f(t)") for anything else (a list of them, say)."""
    if value is None:
        return {}
    if not isinstance(value, collections.abc.Mapping):
        shown = repr(value)
        raise TypeError(f"{what} must be a dict of {entries}, got a {type(value).__name__}: "
                        f"{shown if len(shown) <= 80 else shown[:77] + '...'}")
    return value


def counted(count, noun, plural=None):
    """``count`` and ``noun``, singular or plural as the count asks: "1 loop", "0 loops", "3 bodies" (``plural``
    defaults to ``noun + "s"``)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


_EXTRA_PACKAGES = {"plot": "matplotlib", "progress": "tqdm", "dask": '"dask[distributed]"', "xarray": "xarray"}


def install_hint(extras):
    """How to install the optional extras ``extras`` ("plot", or "plot,progress"), whichever way this package was
    installed: the packages themselves, the extra of an installed release, or of a clone of the repository."""
    packages = " ".join(_EXTRA_PACKAGES[extra] for extra in extras.split(","))
    return (f'pip install {packages} (or pip install "recursive-mbd[{extras}]"; in a clone of the repository: '
            f'pip install -e ".[{extras}]")')


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message, category=UserWarning):
    """``warnings.warn`` at the user's line: the first caller outside this package, however deep inside it the
    warning arises (``rm.simulate`` reaches its checks through several layers, and their number changes with the
    code)."""
    frame, level = sys._getframe(1), 2  # level 2 is warn's caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
