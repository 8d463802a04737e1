"""Analyses on top of the dynamics and the time loops: assembly, driven kinematics, statics, linearisation and
modes (``analyses``, the public ``rm.analysis``), spatial statics, mechanisms from absolute placements, the
reference models with their closed forms, and the chain studies.

``rm.analysis.NAME`` is the analysis of that name; the names load on first use (PEP 562), so importing a module of
this package (``rm.models``, ``rm.Mechanism``) does not load the time loops.
"""

import importlib

__all__ = ["Equilibrium", "KinematicResult", "Linearization", "Reactions", "assemble", "joint_reactions",
           "kinematic_analysis", "linearize", "modes", "point_motion", "static_equilibrium"]


def __getattr__(name):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(".analyses", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
