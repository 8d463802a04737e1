"""Arrays the time loops hand to the kernels typed as the other callers' arrays, so each kernel compiles once."""

import numba

import recursive_mbd as rm
from recursive_mbd.analysis import models
from recursive_mbd.integrate import bdf, runs
from recursive_mbd.integrate.spatial_loop import SpatialTimeLoop, _SpatialInputs


def test_the_zero_gravities_of_the_time_loops_are_typed_as_the_models_gravity():
    """The zero gravity of the spatial loop layer's time loop and of bdf's Newton step go where the model's
    gravity goes (the response passes, the inverse dynamics): read-only as it is, or numba compiles those kernels,
    and every kernel beneath them, a second time."""
    from recursive_mbd._kernels.spatial.system import LOOP_NO_GRAVITY  # noqa: PLC0415  (numba types)

    governor = models.centrifugal_governor(closed=True)
    loop = SpatialTimeLoop(governor.model, _SpatialInputs(governor.model, None))
    assert numba.typeof(loop.system.loops[LOOP_NO_GRAVITY]) == numba.typeof(governor.model.gravity)
    chain = rm.chains.serial_chain(3).compile()
    system = runs.build_system(chain, runs._Inputs(chain, None, None), tree_system=False)
    assert numba.typeof(bdf.newton_arrays(system)[12]) == numba.typeof(chain.gravity)
