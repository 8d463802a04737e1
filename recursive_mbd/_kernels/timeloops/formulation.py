"""What a time loop asks of a formulation: the interface between ``integrators`` and the formulations' kernels.

A time loop (``integrators``) integrates a state y (1-d float64) of some ``system``: a NamedTuple of arrays
that one formulation builds from the one Model (``planar.system.RecursiveSystem``,
``augmented.system.AugmentedSystem``). It calls only the three functions below, whatever the formulation;
each formulation registers its implementation for its own NamedTuple class with ``numba.extending.overload``,
so numba resolves the call statically per system type. A time loop compiled for one formulation is therefore
one ordinary, cached kernel (the system's type is part of its signature, and a NamedTuple class pickles by
name), with no function pointer per evaluation and no recompilation per process. A time loop never imports a
formulation: it is compiled for whichever system it is handed.

A formulation may also register, with ``register_never_projects``, a test of a system's numba type that says a run
of it never projects (``never_projects``): a time loop typed for such a system leaves the projection out, so it is
not compiled at all (``projects`` alone is a run-time answer, and the branch it guards would be compiled anyway).

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


# typing-time tests, one per formulation that registers one: a system's numba type -> True when no run of a system
# of that type projects (``projects`` is False for every value)
_NEVER_PROJECTS = []


def register_never_projects(test):
    """Register ``test(system_type)``: True when no system of that numba type ever projects."""
    _NEVER_PROJECTS.append(test)


def never_projects(system_type):
    """True when a registered test says that no system of this numba type projects: decided while a time loop is
    typed, so that its projection is left out of the compiled code."""
    return any(test(system_type) for test in _NEVER_PROJECTS)
