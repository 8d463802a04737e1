"""Analyses on top of the dynamics and the time loops: assembly, driven kinematics, statics, linearisation and
modes (``assembly`` and ``analyses``, together the public ``rm.analysis``), spatial statics, mechanisms from
absolute placements, the reference models with their closed forms, and the chain studies.

``rm.analysis.NAME`` is the analysis of that name; the names load on first use (PEP 562), so importing a module of
this package (``rm.models``, ``rm.Mechanism``) does not load the time loops.
"""

import importlib

# each public name and the module that defines it
_NAMES = {"assemble": "assembly", **dict.fromkeys(
    ("Equilibrium", "KinematicResult", "Linearization", "Reactions", "joint_reactions", "kinematic_analysis",
     "linearize", "modes", "point_motion", "static_equilibrium"), "analyses")}
__all__ = list(_NAMES)


def __getattr__(name):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
