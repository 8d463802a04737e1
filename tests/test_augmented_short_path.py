"""The short path of ``augmented.forward_dynamics(solver="tree")`` (``_kernels.augmented.entry``): the same answer as
the full route, bit for bit, and every input it does not take sent to the full route, which raises the same errors
as on a first call."""

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import entry as augmented_entry
from recursive_mbd.dynamics import augmented
from recursive_mbd.model import chains

pytestmark = pytest.mark.boundscheck  # also run under NUMBA_BOUNDSCHECK=1 in CI (.ci/run)


def binary_tree(n):
    model = rm.Model()
    for i in range(n):
        model.add_body(-1 if i == 0 else (i - 1) // 2, "revolute", (0.0, 0.0) if i == 0 else (0.0, -0.05),
                       (0.0, 0.05), mass=0.1 + 0.01 * i, inertia=1e-4)
    return model.compile()


def warm(model, seed=0):
    """A state of ``model`` and one call that makes the tree workspace (the short path exists from the second)."""
    rng = np.random.default_rng(seed)
    q, qd = rng.uniform(-1, 1, model.nq), rng.normal(size=model.nq)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    augmented.forward_dynamics(model, z, zd)
    return z, zd, rng.normal(size=model.nq)


@pytest.mark.parametrize("build", [chains.serial_chain, binary_tree], ids=["chain", "binary_tree"])
@pytest.mark.parametrize("n", [2, 3, 50])
def test_short_path_equals_the_full_route_bit_for_bit(build, n):
    model = build(n)
    z, zd, tau = warm(model, n)
    assert model._augmented_workspace.short  # a plain tree takes the short path
    for torque in (None, tau):
        zdd, lam = augmented.forward_dynamics(model, z, zd, torque)
        zdd_full, lam_full = augmented._tree_forward_dynamics(model, z, zd, torque, 0.0, 0.0, 0.0, None, ())
        np.testing.assert_array_equal(zdd, zdd_full)
        np.testing.assert_array_equal(lam, lam_full)
        again, lam_again = augmented.forward_dynamics(model, z, zd, torque)
        assert again is not zdd and lam_again is not lam  # fresh outputs: an earlier result is never overwritten
        np.testing.assert_array_equal(again, zdd)
    # and the recursive route's accelerations, to round-off
    q, qd = augmented.joint_from_absolute(model, z, zd)
    qdd = augmented.joint_accelerations(model, z, zd, augmented.forward_dynamics(model, z, zd, tau)[0])
    np.testing.assert_allclose(qdd, rm.forward_dynamics(model, q, qd, tau), rtol=1e-9, atol=1e-9)


def test_inputs_the_short_path_refuses_raise_the_full_routes_errors():
    model = chains.serial_chain(3)
    z, zd, tau = warm(model)
    with pytest.raises(rm.StateError, match=r"z must have shape \(3, 3\).*got shape \(2, 3\)"):
        augmented.forward_dynamics(model, z[:2], zd)
    with pytest.raises(rm.StateError, match=r"zd must have shape"):
        augmented.forward_dynamics(model, z, np.zeros((4, 3)))
    with pytest.raises(TypeError, match="z must be an array of 3 x 3 numbers"):
        augmented.forward_dynamics(model, "abc", zd)
    for bad_tau in (np.zeros(4), np.zeros(0), np.zeros((3, 1))):
        with pytest.raises(rm.StateError, match=r"tau must have shape \(3,\)"):
            augmented.forward_dynamics(model, z, zd, bad_tau)
    bad = z.copy()
    bad[1, 2] = np.nan
    with pytest.raises(rm.StateError, match="z of body 'link2' .index 1. is not finite"):
        augmented.forward_dynamics(model, bad, zd)
    bad = zd.copy()
    bad[2, 0] = -np.inf
    with pytest.raises(rm.StateError, match="zd of body 'link3' .index 2. is not finite"):
        augmented.forward_dynamics(model, z, bad)
    with pytest.raises(rm.StateError, match=r"tau\[2\] is not finite"):
        augmented.forward_dynamics(model, z, zd, np.array([0.0, 0.0, np.inf]))
    with pytest.raises(rm.StateError, match=r"overflow|not finite"):  # finite inputs, a non-finite result
        augmented.forward_dynamics(model, z, zd * 1e160)
    for name, value in (("t", np.nan), ("alpha", np.inf), ("beta", "1")):
        with pytest.raises((rm.StateError, TypeError), match=name):
            augmented.forward_dynamics(model, z, zd, **{name: value})


def test_inputs_the_short_path_refuses_are_converted_to_the_same_answer():
    model = chains.serial_chain(4)
    z, zd, tau = warm(model, 4)
    reference, lam = augmented.forward_dynamics(model, z, zd, tau)
    frozen = z.copy()
    frozen.setflags(write=False)
    variants = (
        (np.asfortranarray(z), zd, tau, {}),  # another layout
        (z.ravel(), zd.ravel(), tau, {}),  # (3 nbodies,) vectors
        (frozen, zd, tau, {}),  # a read-only array
        (z.tolist(), zd, list(tau), {}),  # lists
        (z, zd, tau, dict(t=0, alpha=0, beta=0)),  # plain ints
        (z, zd, tau, dict(t=np.float64(0.0), alpha=np.float64(0.0))),  # numpy scalars
        (z, zd, tau, dict(powers=np.zeros(2))),  # the powers the short path does not compute
    )
    for zz, zzd, torque, options in variants:
        zdd, lam_variant = augmented.forward_dynamics(model, zz, zzd, torque, **options)
        np.testing.assert_array_equal(zdd, reference)
        np.testing.assert_array_equal(lam_variant, lam)
    off = z + 1e-3  # off the constraints, Baumgarte's terms act: alpha and beta reach the kernel
    stabilised = augmented.forward_dynamics(model, off, zd, tau, alpha=1.0, beta=2.0)[0]
    sparse = augmented.forward_dynamics(model, off, zd, tau, alpha=1.0, beta=2.0, solver="sparse")[0]
    np.testing.assert_allclose(stabilised, sparse, rtol=1e-9, atol=1e-9)
    assert np.abs(stabilised - augmented.forward_dynamics(model, off, zd, tau)[0]).max() > 1e-3


def test_the_short_path_kernel_compiles_no_other_signature_and_checks_shapes():
    model = chains.serial_chain(3)
    z, zd, _ = warm(model)
    kernel, body_int, body_real, row_start, factor, no_tau, rows, _ = model._augmented_workspace.short
    zdd, lam = np.empty((3, 3)), np.empty(rows)
    assert kernel(body_int, body_real, row_start, z, zd, no_tau, factor, zdd, lam) == 0
    with pytest.raises(TypeError):
        kernel(body_int, body_real, row_start, z.astype(np.float32), zd, no_tau, factor, zdd, lam)
    assert len(kernel.signatures) == 1
    for bad in ((z[:2], zd, no_tau, zdd, lam), (z, zd, np.zeros(2), zdd, lam), (z, zd, no_tau, zdd, lam[:-1]),
                (z, zd, no_tau, np.empty((3, 2)), lam)):
        zz, zzd, torque, out, multipliers = bad
        assert kernel(body_int, body_real, row_start, np.ascontiguousarray(zz), zzd, torque, factor, out,
                      multipliers) == augmented_entry.BAD_SHAPE


def test_models_with_loops_or_elements_keep_the_full_route():
    four_bar, q0 = rm.models.four_bar()
    springy = rm.Model()
    springy.add_body("ground", "revolute", (0, 0), (0, 0.5), mass=1.0, inertia=0.1)
    springy.add_body(0, "revolute", (0, -0.5), (0, 0.5), mass=1.0, inertia=0.1)
    springy.add_joint_spring_damper(0, stiffness=3.0, damping=0.1)
    springy.compile()
    for model, q in ((four_bar, rm.assemble(four_bar, q0)), (springy, np.array([0.3, -0.2]))):
        z, zd = augmented.absolute_from_joint(model, q, np.zeros(model.nq))
        augmented.forward_dynamics(model, z, zd)
        assert model._augmented_workspace.short is False


def test_a_massless_revolute_body_leaves_the_revolute_step_for_the_regularised_one():
    """A massless, inertia-free middle rod: its body pivot is singular (only its child's two joint rows reach it),
    so the kernel's written-out revolute step hands it to the general step, which regularises it; the result equals
    the dense KKT solve and the recursive route."""
    model = rm.Model()
    model.add_body("ground", "revolute", (0, 0), (0, 0.5), mass=1.0, inertia=0.1)
    model.add_body(0, "revolute", (0, -0.5), (0, 0.5), mass=0.0, inertia=0.0)
    model.add_body(1, "revolute", (0, -0.5), (0, 0.5), mass=1.0, inertia=0.1)
    model.compile()
    rng = np.random.default_rng(3)
    q, qd, tau = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    for _ in range(2):  # the full route, then the short path
        zdd, lam = augmented.forward_dynamics(model, z, zd, tau)
        zdd_dense, lam_dense = augmented.forward_dynamics(model, z, zd, tau, solver="dense")
        np.testing.assert_allclose(zdd, zdd_dense, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lam, lam_dense, rtol=1e-12, atol=1e-12)
    weights = model._augmented_workspace.factor[:, augmented.kernels.F_W]
    assert weights[1] > 0.0 and weights[0] == weights[2] == 0.0  # only the massless body was regularised
    qdd = augmented.joint_accelerations(model, z, zd, zdd)
    np.testing.assert_allclose(qdd, rm.forward_dynamics(model, q, qd, tau), rtol=1e-9, atol=1e-9)
