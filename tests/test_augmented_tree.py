"""The augmented formulation's compiled tree solver (solver="tree") against the dense KKT solve, the recursive
route, its joint reactions, and bad input."""

import inspect
import warnings

import numpy as np
import pytest
from conftest import TREE_SPECS, build, rel_err

import recursive_mbd as rm
from recursive_mbd.dynamics import augmented
from recursive_mbd.model import chains, joints

pytestmark = pytest.mark.boundscheck  # also run under NUMBA_BOUNDSCHECK=1 in CI (.ci/run)


def tree_with_a_loop(spec, seed):
    """The random tree ``spec`` with a distance loop from its last body to a ground point, at a consistent state
    (q, qd) and random tau; also returns whether the loop is redundant (every joint fixed: nothing moves)."""
    rng = np.random.default_rng(seed)
    model = rm.Model(gravity=(0.3, -9.81))
    for i, body in enumerate(spec):
        model.add_body(name=f"b{i}", **body)
    nq = sum(joints.JOINT_DOF[joints.JOINT_CODES[b["joint"]]] for b in spec)
    q = rng.uniform(-np.pi, np.pi, nq)
    tip = len(spec) - 1
    length = rng.uniform(0.5, 1.5)
    direction = rng.uniform(0.0, 2.0 * np.pi)
    probe = rm.Model(gravity=(0.3, -9.81))
    for i, body in enumerate(spec):
        probe.add_body(name=f"b{i}", **body)
    poses, _ = rm.forward_kinematics(probe.compile(), q)
    anchor = poses[tip, :2] + length * np.array([np.cos(direction), np.sin(direction)])
    model.add_loop("distance", tip, (0.0, 0.0), "ground", anchor, length=length)
    model.compile()
    qd = rm.loops.project(model, q, rng.normal(size=nq))[1] if nq else np.zeros(0)
    return model, q, qd, rng.normal(size=nq) * 3.0


@pytest.mark.parametrize("index", range(len(TREE_SPECS)))
def test_tree_solver_equals_dense_and_recursive_on_random_trees_with_a_loop(index):
    model, q, qd, tau = tree_with_a_loop(TREE_SPECS[index], index)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.RedundantConstraintWarning)  # a locked tree: its loop is redundant
        zdd, lam = augmented.forward_dynamics(model, z, zd, tau, solver="tree")
        rec = rm.loop_dynamics(model, q, qd, tau)
    tree_rows = lam.size - model.nconstraints
    if rec.rank == model.nconstraints:  # the dense LU needs independent rows
        zdd_dense, lam_dense = augmented.forward_dynamics(model, z, zd, tau, solver="dense")
        # a locked model has z'' = 0 up to round-off: measure against gravity's scale too
        assert np.abs(zdd - zdd_dense).max() < 1e-9 * max(np.abs(zdd_dense).max(), 9.81)
        assert np.abs(lam - lam_dense).max() < 1e-9 * max(np.abs(lam_dense).max(), 1.0)
    if model.nq == 0:
        return
    qdd = augmented.joint_accelerations(model, z, zd, zdd)
    scale = max(np.abs(rec.qdd).max(), np.abs(rm.forward_dynamics(build(TREE_SPECS[index]), q, qd, tau)).max())
    assert np.abs(qdd - rec.qdd).max() < 1e-9 * scale  # a locked tree has qdd = 0: compare on the tree's scale
    assert np.abs(lam[tree_rows:] - rec.multipliers).max() < 1e-9 * max(1.0, np.abs(rec.multipliers).max())
    # the tree joints' constraint forces are the recursive joint reactions less the actuation, at the joint point
    forces = augmented.joint_constraint_forces(model, z, zd, lam)
    reactions = rm.joint_reactions(model, q, qd, rec.qdd, tau).joint
    poses, _ = rm.forward_kinematics(model, q)
    force_scale = max(np.abs(reactions).max(), 1.0)
    for i in range(model.nbodies):
        jt, k, body = model.joint_type[i], model.joint_q_index[i], model.body(i)
        point, _ = rm.point_kinematics(model, q, qd, i, body["child_point"])
        centre, _ = rm.point_kinematics(model, q, qd, i, body["com"])
        arm = point - centre
        fx, fy, moment_com = forces[i]
        expected = np.array([fx, fy, moment_com - (arm[0] * fy - arm[1] * fx)])  # moment about the joint point
        if jt == joints.REVOLUTE:
            expected[2] += tau[k]
        elif jt == joints.PRISMATIC:
            parent = model.body_parent[i]
            theta = poses[parent, 2] if parent >= 0 else 0.0
            c, s = np.cos(theta), np.sin(theta)
            expected[:2] += tau[k] * np.array([c * body["axis"][0] - s * body["axis"][1],
                                               s * body["axis"][0] + c * body["axis"][1]])
        elif jt == joints.PLANAR:
            assert np.all(forces[i] == 0.0)
            continue
        np.testing.assert_allclose(reactions[i], expected, atol=1e-9 * force_scale, err_msg=f"body {i}")


def copy_bodies(source, target):
    """Add the bodies of the model ``source`` to the model ``target``."""
    for i in range(source.nbodies):
        body = source.body(i)
        keys = ("parent", "joint", "parent_point", "child_point", "mass", "inertia", "com", "angle", "name")
        target.add_body(**{key: body[key] for key in keys}, axis=body["axis"] if body["joint"] == "prismatic" else None)
    return target


def binary_tree(n):
    model = rm.Model()
    for i in range(n):
        model.add_body(parent=(i - 1) // 2 if i else -1, parent_point=(0.0, -0.05) if i else (0.0, 0.0),
                       child_point=(0.0, 0.05), mass=0.1, inertia=0.1 * 0.1**2 / 12)
    return model.compile()


@pytest.mark.parametrize("build", [chains.serial_chain, binary_tree], ids=["chain", "binary_tree"])
@pytest.mark.parametrize("n", [1, 2, 3, 64, 500])
def test_chains_and_binary_trees_follow_the_recursive_route(build, n):
    model = build(n)
    rng = np.random.default_rng(n)
    q, qd, tau = rng.uniform(-1, 1, n), rng.normal(size=n), rng.normal(size=n)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    zdd, lam = augmented.forward_dynamics(model, z, zd, tau, solver="tree")
    assert zdd.shape == (n, 3) and lam.shape == (2 * n,)
    assert rel_err(augmented.joint_accelerations(model, z, zd, zdd), rm.forward_dynamics(model, q, qd, tau)) < 1e-9
    zdd_sparse, lam_sparse = augmented.forward_dynamics(model, z, zd, tau, solver="sparse")
    assert rel_err(zdd, zdd_sparse) < 1e-9 and rel_err(lam, lam_sparse) < 1e-9


def test_point_mass_on_a_prismatic_joint_regularised_pivot():
    """The slider-crank's piston has J = 0: its body pivot is singular and is eliminated with its joint."""
    model, q0 = rm.models.slider_crank()
    assert model.body("piston")["inertia"] == 0.0
    rng = np.random.default_rng(1)
    q = rm.assemble(model, q0)
    q, qd, _ = rm.loops.project(model, q, rng.normal(size=model.nq))
    tau = rng.normal(size=model.nq)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    zdd, lam = augmented.forward_dynamics(model, z, zd, tau, solver="tree")
    zdd_dense, lam_dense = augmented.forward_dynamics(model, z, zd, tau, solver="dense")
    assert rel_err(zdd, zdd_dense) < 1e-9 and rel_err(lam, lam_dense) < 1e-9
    assert rel_err(augmented.joint_accelerations(model, z, zd, zdd), rm.loop_dynamics(model, q, qd, tau).qdd) < 1e-9


def test_duplicated_loop_gives_minimum_norm_multipliers():
    """A four-bar whose closing loop is added twice: 4 rows of rank 2; the tree solver warns and returns the
    minimum-norm multipliers (each copy carries half the force), like the recursive layer; LU refuses."""
    single, q0 = rm.models.four_bar()
    double = copy_bodies(single, rm.Model(gravity=tuple(single.gravity)))
    lp = single._loops[0]
    for name in ("close", "close_again"):
        double.add_loop("revolute", lp["body_a"], lp["point_a"] + single.body(lp["body_a"])["com"],
                        lp["body_b"], lp["point_b"] + single.body(lp["body_b"])["com"], name=name)
    double.compile()
    q, qd, _ = rm.loops.project(single, q0, np.array([1.5, 0.0, 0.0]))
    z, zd = augmented.absolute_from_joint(double, q, qd)
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 4"):
        zdd, lam = augmented.forward_dynamics(double, z, zd, solver="tree")
    with pytest.warns(rm.RedundantConstraintWarning):
        rec = rm.loop_dynamics(double, q, qd)
    zdd_single, lam_single = augmented.forward_dynamics(single, z, zd, solver="tree")
    assert rel_err(zdd, zdd_single) < 1e-9
    assert rel_err(lam[-4:], rec.multipliers) < 1e-9
    np.testing.assert_allclose(lam[-4:], np.tile(lam_single[-2:] / 2.0, 2), rtol=1e-9)
    with pytest.raises(rm.ModelError, match="singular"):
        augmented.forward_dynamics(double, z, zd, solver="sparse")


def test_baumgarte_elements_drivers_and_powers_equal_the_sparse_solver():
    model, q0 = rm.models.slider_crank(crank_angle=0.3)
    model_springs = rm.Model(gravity=(0.0, -9.81))
    for k in range(3):
        model_springs.add_body("ground" if k == 0 else k - 1, "revolute", (0, 0) if k == 0 else (0, -0.5),
                               (0, 0.5), mass=1.0 + k, inertia=0.1, name=f"l{k}")
    model_springs.add_spring_damper("l2", (0, -0.5), "ground", (1.0, -1.0), stiffness=30.0, damping=2.0)
    model_springs.add_joint_spring_damper("l1", stiffness=5.0, damping=0.5)
    model_springs.add_torque("l0", lambda t: 2.0 * np.sin(t))
    model_springs.compile()
    rng = np.random.default_rng(4)
    drivers = [(0, lambda t: (0.3 + 2.0 * t, 2.0, 0.0))]
    cases = ((model, rm.assemble(model, q0), dict(alpha=5.0, beta=7.0, drivers=drivers)),
             (model_springs, rng.uniform(-1, 1, 3), dict(alpha=0.0, beta=0.0, t=0.7)))
    for mdl, q, options in cases:
        qd = rng.normal(size=mdl.nq)
        z, zd = augmented.absolute_from_joint(mdl, q + 1e-3, qd)  # off the loop: Baumgarte's terms act
        tau = rng.normal(size=mdl.nq)
        p_tree, p_sparse = np.zeros(2), np.zeros(2)
        zdd, lam = augmented.forward_dynamics(mdl, z, zd, tau, solver="tree", powers=p_tree, **options)
        zdd_s, lam_s = augmented.forward_dynamics(mdl, z, zd, tau, solver="sparse", powers=p_sparse, **options)
        assert rel_err(zdd, zdd_s) < 1e-9 and rel_err(lam, lam_s) < 1e-9
        np.testing.assert_allclose(p_tree, p_sparse, rtol=1e-12, atol=1e-12)
        assert p_tree[1] != 0.0


def test_bad_inputs_are_refused_before_the_kernel():
    model = chains.serial_chain(3)
    z, zd = augmented.absolute_from_joint(model, np.zeros(3), np.zeros(3))
    with pytest.raises(rm.StateError, match=r"z must have shape \(3, 3\).*got shape \(2, 3\)"):
        augmented.forward_dynamics(model, z[:2], zd)
    with pytest.raises(rm.StateError, match=r"zd must have shape"):
        augmented.forward_dynamics(model, z, np.zeros(8))
    with pytest.raises(TypeError, match="z must be an array of 3 x 3 numbers"):
        augmented.forward_dynamics(model, "abc", zd)
    with pytest.raises(rm.StateError, match=r"tau must have shape \(3,\)"):
        augmented.forward_dynamics(model, z, zd, np.zeros(4))
    bad = z.copy()
    bad[1, 2] = np.nan
    with pytest.raises(rm.StateError, match="z of body 'link2' .index 1. is not finite"):
        augmented.forward_dynamics(model, bad, zd)
    with pytest.raises(rm.StateError, match=r"tau\[2\] is not finite"):
        augmented.forward_dynamics(model, z, zd, [0.0, 0.0, np.inf])
    # other dtypes and layouts are converted, not misread: the same answer as the float64 C-ordered state
    reference = augmented.forward_dynamics(model, z, zd)[0]
    np.testing.assert_array_equal(augmented.forward_dynamics(model, np.asfortranarray(z), zd.ravel())[0], reference)
    np.testing.assert_array_equal(augmented.forward_dynamics(model, z.astype(np.float32).astype(object),
                                                             zd)[0],
                                  augmented.forward_dynamics(model, z.astype(np.float32), zd)[0])
    assert inspect.signature(augmented.forward_dynamics).parameters["solver"].default == "tree"
    with pytest.raises(ValueError, match="expected 'tree', 'sparse', 'dense' or 'filtered'"):
        augmented.forward_dynamics(model, z, zd, solver="magic")
