"""The arrays the library hands to its kernels have one numba type, so that each kernel compiles once: numba types
a read-only array apart from a writeable one, and the model's arrays (gravity among them) are read-only."""

import numba
import numpy as np

import recursive_mbd as rm
from recursive_mbd._kernels import arrays
from recursive_mbd.dynamics import augmented, augmented_tree, loops
from recursive_mbd.model import chains


def test_the_loop_layers_zero_gravity_types_as_the_models_gravity():
    four_bar, _ = rm.models.four_bar()
    four_bar.compile()
    _, lw = loops.loop_workspace(four_bar)
    assert numba.typeof(lw.no_gravity) == numba.typeof(four_bar.gravity)
    assert not lw.no_gravity.any()
    assert numba.typeof(arrays.readonly_zeros(3)) == numba.types.Array(numba.float64, 1, "C", readonly=True)


@numba.njit
def _first_two(x):
    return x[0] + x[1]


@numba.njit
def _through_readonly(stab):
    return _first_two(arrays.readonly(stab[2:4]))


def test_readonly_retypes_a_slice_in_a_kernel_without_copying_it():
    stab = np.array([1.0, 2.0, 3.0, 4.0])
    assert _through_readonly(stab) == 7.0
    (signature,) = _first_two.signatures
    assert signature[0] == numba.types.Array(numba.float64, 1, "C", readonly=True)


def test_the_tree_solver_gets_a_writeable_state_from_a_read_only_one():
    model = chains.serial_chain(3).compile()
    z, zd = augmented.absolute_from_joint(model, np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.0, -0.4]))
    z_ro, zd_ro = z.copy(), zd.copy()
    z_ro.flags.writeable = zd_ro.flags.writeable = False
    converted = augmented_tree._as_absolute(model, z_ro, "z")
    assert converted.flags.writeable and converted.flags.c_contiguous and np.array_equal(converted, z)
    assert augmented_tree._as_absolute(model, z, "z") is z  # a writeable one as it is
    zdd, lam = augmented.forward_dynamics(model, z, zd, solver="tree")
    zdd_ro, lam_ro = augmented.forward_dynamics(model, z_ro, zd_ro, solver="tree")
    assert np.array_equal(zdd, zdd_ro) and np.array_equal(lam, lam_ro)
