"""The names of ``rm.simulate``'s own integration methods, without importing the time loops (numba): model files
and the command line check a method name before anything is compiled. ``integrate`` builds its tableaus for
these names and checks that they agree."""

from ..errors import unknown_name

METHODS = ("dopri5", "dop853", "rk4", "implicit_midpoint", "generalized_alpha", "bdf")  # and "scipy:NAME"
FIXED_STEP = ("rk4", "implicit_midpoint", "generalized_alpha")
SCIPY_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")  # scipy.integrate's OdeSolvers, as "scipy:NAME"


def unknown_method(method):
    """The message for a method name that is neither one of ``METHODS`` nor "scipy:NAME" with NAME one of
    ``SCIPY_METHODS``: a scipy name given without its prefix ("RK45") is pointed to "scipy:RK45"; any other name
    gets the closest known one and the list of all."""
    known = [*METHODS, *(f"scipy:{name}" for name in SCIPY_METHODS)]
    if isinstance(method, str):
        scipy_name = next((name for name in SCIPY_METHODS if name.lower() == method.lower()), None)
        if scipy_name is not None:
            own = next((name for name in METHODS if name == method.lower()), None)
            also = f", or this package's own {own!r}" if own is not None else ""
            return f"unknown method {method!r}: scipy's solver {scipy_name} is method='scipy:{scipy_name}'{also}"
    return unknown_name("method", method, known, shown=len(known))
