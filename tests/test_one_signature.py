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


def _signatures(dispatcher):
    """The signatures ``dispatcher`` has compiled in this process and those its cache holds: a kernel reached only
    through a caller loaded from the cache is never compiled here, so its signatures are read from the cache's
    index (each entry's key starts with the signature)."""
    return set(dispatcher.signatures) | {key[0] for key in dispatcher._cache._cache_file._load_index()}


def _literal_signatures(dispatcher):
    """The signatures of ``dispatcher`` with a literal argument (a constant int or bool that a kernel passed as it
    stands: numba compiles a specialisation for each such value, beside the one for the plain type)."""
    from numba.core import types  # noqa: PLC0415

    return [sig for sig in _signatures(dispatcher) if any(isinstance(arg, types.Literal) for arg in sig)]


def test_the_kernels_pass_flags_and_counters_typed_not_as_literals():
    """A kernel that passes a constant flag or counter to another passes it typed (np.bool_, np.int64), so the
    callee compiles once for every value and for callers that pass a variable: planar kinematics (forward
    dynamics of a model with a prismatic joint: every_row False; centre-of-mass kinematics: True), the
    event count of generalized_alpha's step outputs, and the augmented route's projection flags."""
    import numpy as np  # noqa: PLC0415

    from recursive_mbd._kernels.augmented import system as augmented_system  # noqa: PLC0415
    from recursive_mbd._kernels.planar import tree  # noqa: PLC0415
    from recursive_mbd._kernels.timeloops import integrators  # noqa: PLC0415

    model = rm.Model()
    model.add_body(parent="ground", joint="prismatic", axis=(1.0, 0.0), mass=1.0, inertia=0.1)
    model.add_body(parent=0, joint="revolute", child_point=(0.0, 0.5), mass=1.0, inertia=1 / 12)
    q, qd = np.array([0.1, 0.3]), np.array([0.2, -0.1])
    rm.forward_dynamics(model, q, qd)
    rm.energy(model, q, qd)
    rm.simulate(rm.chains.serial_chain(2), [0.3, 0.0], [0.0, 0.0], 0.02, method="generalized_alpha", dt=0.01)
    four_bar, q0 = models.four_bar()
    rm.simulate(four_bar, q0, np.zeros(3), 0.01, formulation="augmented", stabilization="projection")
    for dispatcher in (tree.kinematics_pass, integrators.step_outputs, augmented_system._auxiliary_solve,
                       augmented_system._correction):
        assert _signatures(dispatcher), dispatcher  # the calls above reach it
        assert not _literal_signatures(dispatcher), (dispatcher, _literal_signatures(dispatcher))


def test_the_joint_states_of_absolute_samples_compile_one_body_range_kernel():
    """``recover3d.joint_states`` hands its range of bodies to ``_sample_bodies`` from 0 on one thread and from
    k n / CHUNKS on numba's threads: the first body typed (np.int64), not the literal 0, or numba compiles the
    range kernel, with every joint's rows inlined in it (tens of seconds), once for each."""
    import numpy as np  # noqa: PLC0415

    from recursive_mbd._kernels.augmented import recover3d  # noqa: PLC0415
    from recursive_mbd.dynamics import augmented3d  # noqa: PLC0415
    from recursive_mbd.integrate import augmented3d_implicit  # noqa: PLC0415

    model = models.heavy_top()
    q, qd = model.neutral(), np.array([0.1, 0.0, 20.0])
    z, zd = augmented3d.absolute_from_joint(model, q, qd)
    arrays = augmented3d_implicit._Arrays(model, augmented3d.row_starts(model))
    mine_q, _, drift = augmented3d_implicit.joint_states(model, z[None], zd[None], arrays)
    assert np.abs(mine_q[0] - q).max() < 1e-14 and drift[0] < 1e-14  # the call reached the kernels
    assert _signatures(recover3d._sample_bodies)
    assert not _literal_signatures(recover3d._sample_bodies), _literal_signatures(recover3d._sample_bodies)


def test_the_fused_spherical_passes_compile_once_for_the_newton_iterations_and_the_projection():
    """The fused passes of a spherical tree serve both the Newton iterations (``spherical_forward``) and the
    velocities' projection (``spherical_project``): the projection hands them its zero gravity read-only and its
    flag typed, as the iterations hand the model's gravity and theirs, or numba compiles the passes and the bodies'
    records a second time."""
    import numpy as np  # noqa: PLC0415

    from recursive_mbd._kernels.augmented import implicit3d  # noqa: PLC0415

    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_bodies(np.arange(-1, 3), "spherical", parent_point=np.tile([0.0, 0.0, -0.25], (4, 1)), mass=0.25,
                     inertia=(0.005, 0.005, 0.0005, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.125))
    v0 = np.zeros(model.nv)
    v0[1] = 2.0
    result = rm.simulate(model, model.neutral(), v0, 0.05, method="generalized_alpha", formulation="augmented",
                         dt=0.01)
    assert result.velocity_projections > 0  # both callers reached the passes
    for dispatcher in (implicit3d._spherical_passes, implicit3d._spherical_bodies):
        assert len(_signatures(dispatcher)) == 1, (dispatcher, _signatures(dispatcher))
