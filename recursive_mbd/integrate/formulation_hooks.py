"""Every formulation's implementations of the time loops' hooks, registered together before any time loop runs.

The time loops (``_kernels.timeloops``) call a formulation through hooks (``timeloops.formulation``: the right-hand
side, the projection; ``timeloops.newton``: bdf's Newton pieces) that each formulation's kernel module implements
with ``numba.extending.overload``. numba types a hook as one function type holding the implementations registered
so far. A cached kernel's index names the system types it was compiled for, and one written by a process that ran
two formulations names both: loading it (which numba does while typing its caller) imports the other formulation's
module, whose implementations then change the hook's type in the middle of a time loop's typing, and the typing
fails ("Cannot unify Function(rhs) and Function(rhs)"). Importing them all first keeps the hooks' types fixed.
``simulate`` and ``ensemble``, the modules every run goes through, import this one.
"""

from .._kernels.augmented import system as augmented_system  # noqa: F401
from .._kernels.augmented import system3d as augmented_system3d  # noqa: F401
from .._kernels.planar import bdf as planar_bdf  # noqa: F401
from .._kernels.planar import system as planar_system  # noqa: F401
from .._kernels.spatial import bdf as spatial_bdf  # noqa: F401
from .._kernels.spatial import system as spatial_system  # noqa: F401
