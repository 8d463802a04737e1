"""What a time loop asks of a formulation: the interface between ``integrators`` and the formulations' kernels.

A time loop (``integrators``) integrates a state y (1-d float64) of some ``system``: a NamedTuple of arrays
that one formulation builds from the one Model (``planar.system.RecursiveSystem``,
``augmented.system.AugmentedSystem``). It calls only the three functions below, whatever the formulation;
each formulation registers its implementation for its own NamedTuple class with ``numba.extending.overload``,
so numba resolves the call statically per system type. A time loop compiled for one formulation is therefore
one ordinary, cached kernel (the system's type is part of its signature, and a NamedTuple class pickles by
name), with no function pointer per evaluation and no recompilation per process. A time loop never imports a
formulation: it is compiled for whichever system it is handed.

Every function but ``integrated_size`` returns a status (``layout``); ``inputs(key, t, q, qd, u)`` is the run's
input callback (``integrators.CALLBACK``) that fills time-varying inputs (tau as a function, element inputs, drivers).
"""


def rhs(inputs, key, system, t, y, dy):
    """dy = f(t, y) of the formulation's equations of motion (the work terms included); returns the status."""
    raise NotImplementedError(f"no formulation registered a right-hand side for {type(system).__name__}")


def project(inputs, key, system, t, y):
    """Move y onto the formulation's constraints (position and velocity level) in place; returns the status."""
    raise NotImplementedError(f"no formulation registered a projection for {type(system).__name__}")


def projects(system):
    """True when the run projects y onto the constraints after every accepted step."""
    raise NotImplementedError(f"no formulation registered projects() for {type(system).__name__}")


def integrated_size(system, n):
    """How many leading entries of the state y (size n) are integrated: the error norm's count. The rest is state
    that a formulation changes between steps only (the contacts' anchors), with a zero rate."""
    raise NotImplementedError(f"no integrated_size for {type(system).__name__}")

