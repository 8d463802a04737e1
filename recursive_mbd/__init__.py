"""recursive_mbd: planar rigid multibody dynamics with the recursive relative-coordinate formulation.

Quick start::

    import numpy as np
    import recursive_mbd as rm
    chain = rm.chains.serial_chain(100)
    q, qd = np.zeros(100), np.zeros(100)
    qdd = rm.forward_dynamics(chain, q, qd)
    res = rm.simulate(chain, q, qd, t_end=2.0)

Conventions (units, frames, signs, joints, the serial-chain convention, the file format): ``docs/conventions.md``.

Importing the package is cheap: the submodules and the public names below are imported on first use (PEP 562),
so ``import recursive_mbd`` loads neither numba, scipy nor matplotlib, and compiles nothing. ``rm.NAME`` and
``from recursive_mbd import NAME`` work as for eager imports, and ``dir(recursive_mbd)`` lists every name.
"""

import importlib

from .errors import ModelError, ResultFileError, SimulationError, StateError

__version__ = "0.1.0"

# Submodules reachable as attributes (``rm.chains``, ``rm.io``, ...), imported on first access.
_SUBMODULES = ("analysis", "augmented", "batch", "chains", "implicit", "io", "joints", "loops", "models", "plot",
               "spatial_loops", "studies")

# Public names and the submodule that defines each, imported on first access.
_LAZY_NAMES = {
    "assemble": "analysis", "joint_reactions": "analysis", "kinematic_analysis": "analysis",
    "linearize": "analysis", "modes": "analysis", "static_equilibrium": "analysis",
    "bias_forces": "dynamics", "element_forces": "dynamics", "energy": "dynamics", "forward_dynamics": "dynamics",
    "forward_kinematics": "dynamics", "inverse_dynamics": "dynamics", "mass_matrix": "dynamics",
    "point_kinematics": "dynamics",
    "METHODS": "integrate", "SimulationResult": "integrate", "simulate": "integrate",
    "LoopSolution": "loops", "RedundantConstraintWarning": "loops", "loop_dynamics": "loops",
    "Mechanism": "mechanism",
    "Model": "model",
    "Model3D": "model3d", "difference": "model3d", "integrate_configuration": "model3d",
    "solve_effective": "implicit",
    "compiled_forward_dynamics": "compiled",
    "EnsembleResult": "ensemble", "simulate_many": "ensemble",
    "sweep": "sweeps",
}

# Every public name (tests/test_imports.py checks that it matches the two tables above).
__all__ = [
    "analysis", "assemble", "augmented", "batch", "bias_forces", "chains", "compiled_forward_dynamics", "difference",
    "element_forces", "energy", "EnsembleResult", "forward_dynamics", "forward_kinematics", "implicit",
    "integrate_configuration", "inverse_dynamics", "io", "joint_reactions", "joints", "kinematic_analysis",
    "linearize", "loop_dynamics", "loops", "LoopSolution", "mass_matrix", "Mechanism", "METHODS", "Model", "Model3D",
    "ModelError", "models", "modes", "plot", "point_kinematics", "RedundantConstraintWarning", "ResultFileError",
    "simulate", "simulate_many", "SimulationError", "SimulationResult", "solve_effective", "spatial_loops",
    "StateError", "static_equilibrium", "studies", "sweep",
]


def __getattr__(name):
    """Import a submodule or a public name on first access and keep it (PEP 562)."""
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
