"""The names of ``rm.simulate``'s own integration methods, without importing the time loops (numba): model files
and the command line check a method name before anything is compiled. ``integrate`` builds its tableaus for
these names and checks that they agree."""

METHODS = ("dopri5", "dop853", "rk4", "implicit_midpoint", "generalized_alpha", "bdf")  # and "scipy:NAME"
FIXED_STEP = ("rk4", "implicit_midpoint", "generalized_alpha")
