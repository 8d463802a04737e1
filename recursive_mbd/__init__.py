"""recursive_mbd: planar rigid multibody dynamics with the recursive relative-coordinate formulation.

Quick start::

    import recursive_mbd as rm
    chain = rm.chains.serial_chain(100)
    qdd = rm.forward_dynamics(chain, q, qd)
    res = rm.simulate(chain, q0, qd0, t_end=2.0)
"""

from . import analysis, augmented, batch, chains, io, joints, loops, models, plot, studies
from .analysis import (
    assemble,
    joint_reactions,
    kinematic_analysis,
    linearize,
    modes,
    static_equilibrium,
)
from .dynamics import (
    bias_forces,
    element_forces,
    energy,
    forward_dynamics,
    forward_kinematics,
    inverse_dynamics,
    mass_matrix,
    point_kinematics,
)
from .ensemble import EnsembleResult, simulate_many
from .errors import ModelError, SimulationError, StateError
from .integrate import METHODS, SimulationResult, simulate
from .loops import LoopSolution, RedundantConstraintWarning, loop_dynamics
from .mechanism import Mechanism
from .model import Model
from .sweeps import sweep

__version__ = "0.1.0"

__all__ = [
    "METHODS", "Mechanism", "Model",
    "analysis", "assemble", "batch", "EnsembleResult", "simulate_many", "sweep",
    "joint_reactions", "kinematic_analysis", "linearize", "modes",
    "static_equilibrium", "ModelError", "SimulationError", "SimulationResult", "StateError", "augmented",
    "bias_forces", "chains", "element_forces", "energy", "forward_dynamics", "forward_kinematics",
    "inverse_dynamics", "joints", "LoopSolution", "loop_dynamics", "loops", "mass_matrix", "models",
    "io", "plot", "point_kinematics", "RedundantConstraintWarning", "simulate", "studies",
]
