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

numba compiles each kernel at its first use (then caches it on disk): the logger "recursive_mbd" says so at INFO
level as each compile starts, and logs the progress of long runs off a terminal (``simulate``'s ``progress``);
``logging.basicConfig(level=logging.INFO)`` shows both, and ``rmbd`` prints them on stderr.
"""

import importlib

from .errors import ModelError, ResultFileError, SimulationError, StateError

__version__ = "0.1.0"

# Submodules reachable as attributes (``rm.chains``, ``rm.io``, ...) and where each lives, imported on first access.
_SUBMODULES = {
    "analysis": "analysis", "augmented": "dynamics.augmented", "batch": "dynamics.batch", "chains": "model.chains",
    "implicit": "integrate.implicit", "io": "files.io", "joints": "model.joints", "loops": "dynamics.loops",
    "models": "analysis.models", "plot": "plot", "spatial_loops": "dynamics.spatial_loops",
    "studies": "analysis.studies",
}

# Public names and the submodule that defines each, imported on first access.
_LAZY_NAMES = {
    "assemble": "analysis.assembly", "joint_reactions": "analysis.analyses", "kinematic_analysis": "analysis.analyses",
    "linearize": "analysis.analyses", "modes": "analysis.analyses", "static_equilibrium": "analysis.analyses",
    "bias_forces": "dynamics.calls", "forward_dynamics": "dynamics.calls", "inverse_dynamics": "dynamics.calls",
    "mass_matrix": "dynamics.calls", "element_forces": "dynamics.kinematics", "energy": "dynamics.kinematics",
    "forward_kinematics": "dynamics.kinematics", "point_kinematics": "dynamics.kinematics",
    "body_acceleration": "dynamics.spatial_kinematics", "body_jacobian": "dynamics.spatial_kinematics",
    "center_of_mass": "dynamics.spatial_kinematics", "center_of_mass_jacobian": "dynamics.spatial_kinematics",
    "frame_placement": "dynamics.spatial_kinematics", "momentum": "dynamics.spatial_kinematics",
    "point_acceleration": "dynamics.spatial_kinematics", "point_jacobian": "dynamics.spatial_kinematics",
    "METHODS": "integrate.method_names", "SimulationResult": "integrate.result", "simulate": "integrate.simulate",
    "LoopSolution": "dynamics.loops", "RedundantConstraintWarning": "dynamics.loops", "loop_dynamics": "dynamics.calls",
    "Mechanism": "analysis.mechanism",
    "Model": "model.planar",
    "Model3D": "model.spatial", "difference": "model.configuration", "integrate_configuration": "model.configuration",
    "solve_effective": "integrate.implicit",
    "compiled_forward_dynamics": "dynamics.compiled",
    "EnsembleResult": "integrate.ensemble", "simulate_many": "integrate.ensemble",
    "sweep": "integrate.sweeps",
    "load_mjcf": "files.mjcf", "load_urdf": "files.urdf",
}

# Every public name (tests/test_imports.py checks that it matches the two tables above).
__all__ = [
    "analysis", "assemble", "augmented", "batch", "bias_forces", "body_acceleration", "body_jacobian",
    "center_of_mass", "center_of_mass_jacobian", "chains", "compiled_forward_dynamics", "difference",
    "element_forces", "energy", "EnsembleResult", "forward_dynamics", "forward_kinematics", "frame_placement",
    "implicit", "integrate_configuration", "inverse_dynamics", "io", "joint_reactions", "joints",
    "kinematic_analysis", "linearize", "loop_dynamics", "loops", "LoopSolution", "mass_matrix", "Mechanism",
    "METHODS", "Model", "Model3D", "ModelError", "models", "modes", "momentum", "plot", "point_acceleration",
    "point_jacobian", "point_kinematics", "RedundantConstraintWarning", "ResultFileError", "simulate",
    "simulate_many", "SimulationError", "SimulationResult", "solve_effective", "spatial_loops", "StateError",
    "static_equilibrium", "studies", "sweep",
    "load_mjcf", "load_urdf",
]


def __getattr__(name):
    """Import a submodule or a public name on first access and keep it (PEP 562)."""
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{_SUBMODULES[name]}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
