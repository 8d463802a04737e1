"""Closed loops: the recursive multiplier layer against the dense KKT route and the augmented formulation,
conservation over long runs, redundant loops, and bad input."""


import numpy as np
import pytest
from _helpers import three_parallel_cranks
from conftest import TREE_SPECS, build, rel_err

import recursive_mbd as rm

MECHANISMS = {"four_bar": rm.models.four_bar, "slider_crank": rm.models.slider_crank}


def consistent_state(model, q0, seed):
    """A random state on the constraints near q0: perturbed, assembled, random rates projected."""
    rng = np.random.default_rng(seed)
    q = rm.assemble(model, q0 + rng.uniform(-0.2, 0.2, model.nq))
    q, qd, _ = rm.loops.project(model, q, rng.normal(size=model.nq))
    return q, qd, rng.normal(size=model.nq) * 3.0


def augmented_solution(model, q, qd, tau):
    z, zd = rm.augmented.absolute_from_joint(model, q, qd)
    zdd, lam = rm.augmented.forward_dynamics(model, z, zd, tau)
    return (rm.augmented.joint_accelerations(model, z, zd, zdd), lam[-model.nconstraints:],
            rm.augmented.loop_forces(model, z, zd, lam), rm.augmented.joint_constraint_forces(model, z, zd, lam))


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("seed", range(5))
def test_mechanism_matches_kkt_and_augmented(name, seed):
    model, q0 = MECHANISMS[name]()
    q, qd, tau = consistent_state(model, q0, seed)
    rec = rm.loop_dynamics(model, q, qd, tau)
    kkt = rm.loop_dynamics(model, q, qd, tau, method="mass_matrix")
    qdd_a, lam_a, loops_a, joints_a = augmented_solution(model, q, qd, tau)
    assert rel_err(rec.qdd, kkt.qdd) < 1e-9
    assert rel_err(rec.qdd, qdd_a) < 1e-9
    assert rel_err(rec.multipliers, kkt.multipliers) < 1e-9
    assert rel_err(rec.multipliers, lam_a) < 1e-9
    assert rel_err(rec.forces, loops_a) < 1e-9
    # the acceleration constraint holds
    _, _, jac, gamma = rm.loops.constraints(model, q, qd)
    assert np.abs(jac @ rec.qdd - gamma).max() < 1e-9 * max(1.0, np.abs(gamma).max())
    # joint reactions from the Newton-Euler pass with the loop forces equal the augmented constraint forces;
    # the actuation tau shows in the moment about a revolute joint, the force along a prismatic axis
    reactions = rm.joint_reactions(model, q, qd, rec.qdd, tau)
    assert rel_err(reactions.multipliers, rec.multipliers) < 1e-9
    revolute = model.joint_type == rm.joints.REVOLUTE
    assert rel_err(reactions.joint[revolute, :2], joints_a[revolute, :2]) < 1e-9
    np.testing.assert_allclose(reactions.joint[revolute, 2], tau[model.joint_q_index[revolute]], atol=1e-9)


LOOP_TREES = [i for i in range(0, 200, 7) if any(b["joint"] != "fixed" for b in TREE_SPECS[i])][:20]


@pytest.mark.parametrize("index", LOOP_TREES)
def test_random_trees_with_a_loop(index):
    """A distance loop from the last body of a random tree to a ground point, at a consistent state."""
    spec = TREE_SPECS[index]
    tree = build(spec)
    rng = np.random.default_rng(index)
    q = rng.uniform(-np.pi, np.pi, tree.nq)
    poses, _ = rm.forward_kinematics(tree, q)
    tip = len(spec) - 1
    direction = rng.uniform(0, 2 * np.pi)
    length = rng.uniform(0.5, 1.5)
    anchor = poses[tip, :2] + length * np.array([np.cos(direction), np.sin(direction)])
    model = rm.Model(gravity=(0.3, -9.81))
    for i, body in enumerate(spec):
        model.add_body(name=f"b{i}", **body)
    model.add_loop("distance", tip, (0.0, 0.0), "ground", anchor, length=length)
    assert abs(rm.loops.constraints(model, q)[0][0]) < 1e-12
    qd = rm.loops.project(model, q, rng.normal(size=model.nq))[1]
    tau = rng.normal(size=model.nq)
    rec = rm.loop_dynamics(model, q, qd, tau)
    kkt = rm.loop_dynamics(model, q, qd, tau, method="mass_matrix")
    scale = np.abs(rm.forward_dynamics(tree, q, qd, tau)).max()  # a locked tree has qdd = 0: compare absolutely
    assert np.abs(rec.qdd - kkt.qdd).max() < 1e-8 * scale
    _, _, jac, gamma = rm.loops.constraints(model, q, qd)
    assert np.abs(jac @ rec.qdd - gamma).max() < 1e-8 * max(1.0, np.abs(gamma).max(), np.abs(jac).max())
    assert rec.rank == model.nconstraints  # the anchor is off the tip's reach limits: one independent equation
    assert np.abs(rec.qdd - augmented_solution(model, q, qd, tau)[0]).max() < 1e-8 * scale


def test_conservative_four_bar_keeps_energy_and_closure():
    model, q0 = rm.models.four_bar()
    q, qd, _ = rm.loops.project(model, q0, np.array([2.0, 0.0, 0.0]))
    res = rm.simulate(model, q, qd, 10.0, rtol=1e-10, atol=1e-12)
    energy = np.array([sum(rm.energy(model, a, b)) for a, b in zip(res.q, res.qd, strict=True)])
    assert np.abs(energy - energy[0]).max() < 1e-8 * np.abs(energy).max()
    assert res.constraint_drift.max() < 1e-10
    # without stabilisation the loop opens slowly; Baumgarte holds it
    free = rm.simulate(model, q, qd, 10.0, rtol=1e-8, atol=1e-10, stabilization="none")
    held = rm.simulate(model, q, qd, 10.0, rtol=1e-8, atol=1e-10, stabilization="baumgarte", alpha=10.0,
                       beta=10.0)
    assert held.constraint_drift.max() < 0.1 * free.constraint_drift.max()


def test_slider_crank_driven_closed_form():
    r, l, omega, theta0 = 0.5, 1.5, 2.0, 0.3
    model, q0 = rm.models.slider_crank(crank=r, rod=l, crank_angle=theta0)
    t = np.linspace(0.0, np.pi / omega * 2, 41)  # one revolution
    res = rm.kinematic_analysis(model, {"crank": (lambda t: theta0 + omega * t, lambda t: omega, lambda t: 0.0)},
                                t, q0)
    th = theta0 + omega * t
    s, c = np.sin(th), np.cos(th)
    root = np.sqrt(l * l - r * r * s * s)
    x = r * c + root
    dx = -r * s - r * r * s * c / root  # dx/dtheta
    ddx = -r * c - r * r * (c * c - s * s) / root - r**4 * s * s * c * c / root**3
    assert np.abs(res.q[:, 2] - x).max() < 1e-10
    assert np.abs(res.qd[:, 2] - omega * dx).max() < 1e-10
    assert np.abs(res.qdd[:, 2] - omega**2 * ddx).max() < 1e-10
    position, velocity, acceleration = res.point("piston")
    assert np.abs(acceleration[:, 0] - omega**2 * ddx).max() < 1e-10
    # virtual work: the driving torque's power equals the rate of energy, sum of qdot . (M qdd + h)
    power = np.array([qd @ rm.inverse_dynamics(model, q, qd, qdd)
                      for q, qd, qdd in zip(res.q, res.qd, res.qdd, strict=True)])
    np.testing.assert_allclose(res.driving_forces[:, 0] * omega, power, atol=1e-9 * np.abs(power).max())
    # the same motion simulated with the driver: same piston motion and driving torque
    sim = rm.simulate(model, q0, np.zeros(3), t[-1], t_eval=t, rtol=1e-11, atol=1e-12,
                      drivers={"crank": (lambda t: theta0 + omega * t, lambda t: omega, lambda t: 0.0)})
    assert np.abs(sim.q[:, 2] - x).max() < 1e-8
    assert rel_err(sim.driving_forces()[:, 0], res.driving_forces[:, 0]) < 1e-6


def test_pinned_chain_equilibrium_is_symmetric_and_balanced():
    n, span = 10, 6.0
    chain = rm.chains.serial_chain(n, length=10.0, mass=5.0)
    chain.add_loop("revolute", n - 1, (0.0, -0.5), "ground", (span, 0.0))
    slope = np.arcsin(span / n)  # a V through both supports: exact closure, far from the equilibrium shape
    guess = np.zeros(n)
    guess[0] = slope
    guess[n // 2] = np.pi - 2 * slope
    eq = rm.static_equilibrium(chain, guess)
    poses, _ = rm.forward_kinematics(chain, eq.q)
    x, y = poses[:, 0], poses[:, 1]
    np.testing.assert_allclose(x + x[::-1], span, atol=1e-9)  # mirror symmetric about x = span / 2
    np.testing.assert_allclose(y, y[::-1], atol=1e-9)
    assert eq.stable
    support = eq.reactions.joint[0, :2]  # the ground hinge on link 1
    loop = eq.reactions.loops[0, 0, :2]  # the loop force on body a: the ground support on the last link
    np.testing.assert_allclose(support + loop, [0.0, 5.0 * 9.81], atol=1e-9)
    np.testing.assert_allclose(support[1], loop[1], atol=1e-9)  # each support carries half the weight


def test_energy_fallback_finds_the_newton_equilibrium():
    """With Newton cut short (max_iter=2) static_equilibrium minimises the potential energy on the loop
    constraints, then polishes: the same equilibrium as Newton's."""
    n, span = 8, 5.0
    chain = rm.chains.serial_chain(n, length=8.0, mass=3.0)
    chain.add_loop("revolute", n - 1, (0.0, -0.5), "ground", (span, 0.0))
    chain.add_force(2, (0.0, 0.0), (0.0, -4.0))  # a constant load: part of the potential
    slope = np.arcsin(span / n)
    guess = np.zeros(n)
    guess[0], guess[n // 2] = slope, np.pi - 2 * slope
    newton = rm.static_equilibrium(chain, guess)
    fallback = rm.static_equilibrium(chain, guess, max_iter=2)
    assert newton.method == "newton" and fallback.method == "energy"
    np.testing.assert_allclose(fallback.q, newton.q, atol=1e-9)
    assert fallback.stable


def test_redundant_loops_warn_and_still_solve():
    """Three equal parallel cranks joined by one coupler: 4 loop equations of rank 3."""
    model, q, qd = three_parallel_cranks()
    assert np.abs(rm.loops.constraints(model, q)[0]).max() < 1e-15
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 3 of 4"):
        rec = rm.loop_dynamics(model, q, qd)
    with pytest.warns(rm.RedundantConstraintWarning):
        kkt = rm.loop_dynamics(model, q, qd, method="mass_matrix")
    assert rel_err(rec.qdd, kkt.qdd) < 1e-9
    assert np.all(np.isfinite(rec.multipliers))
    with pytest.warns(rm.RedundantConstraintWarning, match="redundant at q0"):
        res = rm.simulate(model, q, qd, 1.0, rtol=1e-10, atol=1e-12)
    assert res.constraint_drift.max() < 1e-10 and np.all(np.isfinite(res.q))
    # the assembled augmented KKT matrix is singular with redundant constraints: a clear error from the general
    # factorisations; the tree solver gives the minimum-norm multipliers, as the recursive layer does
    z, zd = rm.augmented.absolute_from_joint(model, q, qd)
    for solver in ("sparse", "dense"):
        with pytest.raises(rm.ModelError, match="singular"):
            rm.augmented.forward_dynamics(model, z, zd, solver=solver)
    with pytest.warns(rm.RedundantConstraintWarning, match="rank 3 of 4"):
        zdd, lam = rm.augmented.forward_dynamics(model, z, zd)
    assert rel_err(rm.augmented.joint_accelerations(model, z, zd, zdd), rec.qdd) < 1e-9
    assert rel_err(lam[-model.nconstraints:], rec.multipliers) < 1e-9


def test_loop_input_errors():
    model, _ = rm.models.four_bar()
    fresh = rm.Model()
    fresh.add_body("ground", "revolute", name="a", mass=1, inertia=0.1, child_point=(0, 1))
    with pytest.raises(rm.ModelError, match="unknown"):
        fresh.add_loop("revolute", "missing", (0, 0))
    with pytest.raises(rm.ModelError, match="length must be > 0"):
        fresh.add_loop("distance", "a", (0, 0), "ground", (1, 0), length=0.0)
    with pytest.raises(rm.ModelError, match="needs its length"):
        fresh.add_loop("distance", "a", (0, 0), "ground", (1, 0))
    with pytest.raises(rm.ModelError, match="unknown loop kind"):
        fresh.add_loop("spherical", "a", (0, 0))
    with pytest.raises(rm.ModelError, match="same"):
        fresh.add_loop("revolute", "a", (0, 0), "a", (1, 0))
    with pytest.raises(rm.ModelError, match="axis must be non-zero"):
        fresh.add_loop("prismatic", "a", (0, 0), axis=(0, 0))
    # a loop that cannot close: crank tip and rocker tip 3 m apart at best, joined by a 1 m link
    short = rm.Model()
    short.add_body("ground", "revolute", child_point=(-0.5, 0), mass=1, inertia=0.1, name="crank")
    short.add_body("ground", "revolute", (3, 0), (-0.1, 0), mass=1, inertia=0.1, name="rocker")
    short.add_loop("distance", "crank", (0.5, 0), "rocker", (0.1, 0), length=1.0)
    with pytest.raises(rm.ModelError, match="cannot be closed.*stays open by"):
        rm.assemble(short, np.zeros(2))
    with pytest.raises(rm.StateError, match="does not close the loops"):
        rm.simulate(model, np.zeros(3), np.zeros(3), 1.0)
    with pytest.raises(rm.ModelError, match="compiled"):
        model.add_loop("revolute", "crank", (0, 0))


def test_prismatic_and_fixed_loops_match_augmented():
    """A body held on a slanted ground rail by a prismatic loop, and a rod welded to a pendulum by a fixed loop."""
    model = rm.Model(gravity=(0.2, -9.81))
    model.add_body("ground", "revolute", (0, 0), (0, 0.6), mass=1.0, inertia=0.12, name="arm")
    model.add_body("arm", "planar", (0, -0.6), (0, 0), mass=0.7, inertia=0.05, com=(0.1, 0.0), name="slider")
    model.add_body("ground", "revolute", (2, 0), (0, 0.5), mass=0.8, inertia=0.07, name="pendulum")
    model.add_body("ground", "planar", (0, 0), (0, 0), mass=0.5, inertia=0.03, name="welded")
    model.add_loop("prismatic", "slider", (0.0, 0.0), "ground", (0.0, -1.0), axis=(1.0, 0.3), angle=0.2)
    model.add_loop("fixed", "welded", (0.2, 0.0), "pendulum", (0.0, -0.5), angle=0.4)
    rng = np.random.default_rng(3)
    q = rm.assemble(model, rng.uniform(-0.3, 0.3, model.nq))
    q, qd, _ = rm.loops.project(model, q, rng.normal(size=model.nq))
    tau = rng.normal(size=model.nq)
    rec = rm.loop_dynamics(model, q, qd, tau)
    qdd_a, lam_a, loops_a, _ = augmented_solution(model, q, qd, tau)
    assert rel_err(rec.qdd, qdd_a) < 1e-9
    assert rel_err(rec.multipliers, lam_a) < 1e-9
    assert rel_err(rec.forces, loops_a) < 1e-9
    assert rel_err(rec.qdd, rm.loop_dynamics(model, q, qd, tau, method="mass_matrix").qdd) < 1e-9
