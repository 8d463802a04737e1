"""The augmented absolute-coordinate formulation (seed 000) against the recursive one."""

import numpy as np
import pytest
from conftest import TREE_SPECS, build, random_state, rel_err
from scipy.integrate import solve_ivp

import recursive_mbd as rm
from recursive_mbd._kernels import layout as L
from recursive_mbd._kernels import sparse_kkt
from recursive_mbd._kernels.augmented import system as augmented_system
from recursive_mbd._kernels.timeloops import integrators
from recursive_mbd.dynamics import augmented
from recursive_mbd.integrate import simulate as integrate
from recursive_mbd.model import chains, joints
from recursive_mbd.model.workspace import workspace

SPECS = TREE_SPECS


@pytest.fixture(scope="module")
def models(tree_models):
    return tree_models


@pytest.mark.parametrize("index", range(len(SPECS)))
def test_augmented_accelerations_equal_recursive_on_random_trees(models, index):
    model = models[index]
    q, qd, tau = random_state(model, index)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    residual, _, rate, _ = augmented.constraints(model, z, zd)
    assert residual.size == 0 or np.abs(residual).max() < 1e-12
    assert rate.size == 0 or np.abs(rate).max() < 1e-11
    q_back, qd_back = augmented.joint_from_absolute(model, z, zd)
    np.testing.assert_allclose(np.angle(np.exp(1j * (q_back - q))), 0.0, atol=1e-12)
    np.testing.assert_allclose(qd_back, qd, atol=1e-12)
    if model.nq == 0:
        return
    zdd, _ = augmented.forward_dynamics(model, z, zd, tau)
    qdd = augmented.joint_accelerations(model, z, zd, zdd)
    assert rel_err(qdd, rm.forward_dynamics(model, q, qd, tau)) < 1e-9
    if index % 10 == 0:
        zdd_dense, _ = augmented.forward_dynamics(model, z, zd, tau, solver="dense")
        np.testing.assert_allclose(zdd_dense, zdd, rtol=1e-9, atol=1e-9 * np.abs(zdd).max())


@pytest.mark.parametrize("n", [1, 2, 10, 100])
def test_augmented_on_serial_chains(n):
    model = chains.serial_chain(n)
    rng = np.random.default_rng(n)
    q, qd = rng.uniform(-1, 1, n), rng.normal(size=n)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    zdd, _ = augmented.forward_dynamics(model, z, zd)
    assert rel_err(augmented.joint_accelerations(model, z, zd, zdd), rm.forward_dynamics(model, q, qd)) < 1e-9


@pytest.mark.parametrize("index", range(0, len(SPECS), 7))
def test_multipliers_give_the_newton_euler_joint_forces(models, index):
    model = models[index]
    if model.nq == 0:
        return
    q, qd, tau = random_state(model, 500 + index)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    zdd, lam = augmented.forward_dynamics(model, z, zd, tau)
    from_constraints = augmented.joint_constraint_forces(model, z, zd, lam)
    # recursive Newton-Euler: ws[:, QA:QA+3] holds the force the parent exerts on each subtree at its centre of mass
    qdd = rm.forward_dynamics(model, q, qd, tau)
    rm.inverse_dynamics(model, q, qd, qdd)
    transmitted = workspace(model).ws[:, L.QA:L.QA + 3].copy()
    poses, _ = rm.forward_kinematics(model, q)
    for i in range(model.nbodies):
        jt, k, body = model.joint_type[i], model.joint_q_index[i], model.body(i)
        expected = transmitted[i].copy()
        joint_point, _ = rm.point_kinematics(model, q, qd, i, body["child_point"])
        centre, _ = rm.point_kinematics(model, q, qd, i, body["com"])
        arm = joint_point - centre
        if jt == joints.REVOLUTE:  # the actuator torque is not a constraint force
            expected[2] -= tau[k]
        elif jt == joints.PRISMATIC:  # the actuator pushes along the axis at the joint point
            parent = model.body_parent[i]
            theta = poses[parent, 2] if parent >= 0 else 0.0
            c, s = np.cos(theta), np.sin(theta)
            axis = np.array([c * body["axis"][0] - s * body["axis"][1], s * body["axis"][0] + c * body["axis"][1]])
            force = tau[k] * axis
            expected -= np.array([force[0], force[1], arm[0] * force[1] - arm[1] * force[0]])
        elif jt == joints.PLANAR:
            continue
        scale = max(np.abs(transmitted).max(), 1.0)
        np.testing.assert_allclose(from_constraints[i], expected, atol=1e-9 * scale)


def test_seed000_augmented_follows_the_recursive_trajectory():
    model, q0, qd0 = rm.models.two_squares()
    times = np.linspace(0.0, 3.0, 31)
    recursive = rm.simulate(model, q0, qd0, 3.0, rtol=1e-12, atol=1e-13, t_eval=times)
    z0, zd0 = augmented.absolute_from_joint(model, q0, qd0)
    np.testing.assert_allclose(z0, [[1.0, 1.0, 0.0], [3.0, 1.0, 0.0]], atol=1e-15)  # the seed's initial state
    sol = solve_ivp(lambda t, y: augmented.state_derivative(model, t, y, alpha=5.0, beta=5.0), (0.0, 3.0),
                    np.concatenate((z0.ravel(), zd0.ravel())), method="DOP853", rtol=1e-12, atol=1e-13,
                    t_eval=times)
    for k, t in enumerate(times):
        z, zd = sol.y[:6, k].reshape(2, 3), sol.y[6:, k].reshape(2, 3)
        q, _ = augmented.joint_from_absolute(model, z, zd)
        np.testing.assert_allclose(q, recursive.q[k], atol=1e-7, err_msg=f"t = {t}")


@pytest.mark.parametrize(("method", "options"), [("dopri5", {"rtol": 1e-12, "atol": 1e-13}),
                                                 ("dop853", {"rtol": 1e-12, "atol": 1e-13}), ("rk4", {"dt": 1e-3})])
@pytest.mark.parametrize("stabilization", ["none", "baumgarte", "projection"])
def test_seed000_compiled_augmented_loop_follows_the_recursive_trajectory(method, options, stabilization):
    """The compiled augmented time loop on the seed's two squares stays within 1e-9 of the recursive trajectory
    (a DOP853 run at rtol 1e-13) over 3 s, whatever the method and the stabilisation."""
    model, q0, qd0 = rm.models.two_squares()
    reference = rm.simulate(model, q0, qd0, 3.0, method="dop853", rtol=1e-13, atol=1e-14)
    extra = {"alpha": 5.0, "beta": 5.0} if stabilization == "baumgarte" else {}
    res = rm.simulate(model, q0, qd0, 3.0, method=method, formulation="augmented", stabilization=stabilization,
                      **options, **extra)
    assert res.method == f"augmented {method}" and res.t[-1] == 3.0
    np.testing.assert_allclose(res.q[-1], reference.q[-1], rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(res.qd[-1], reference.qd[-1], rtol=0.0, atol=1e-9)
    assert res.constraint_drift.max() < (1e-12 if stabilization == "projection" else 1e-8)
    assert np.abs(res.energy_balance()).max() < (1e-7 if method == "rk4" else 1e-9)  # rk4: truncation


def test_augmented_implicit_midpoint_runs_compiled():
    """Every method of rm.METHODS runs the augmented formulation (the implicit midpoint rule was refused)."""
    model, q0, qd0 = rm.models.two_squares()
    reference = rm.simulate(model, q0, qd0, 1.0, method="implicit_midpoint", dt=1e-3)
    res = rm.simulate(model, q0, qd0, 1.0, method="implicit_midpoint", dt=1e-3, formulation="augmented",
                      stabilization="projection")
    assert res.nsteps == 1000
    np.testing.assert_allclose(res.q, reference.q, rtol=0.0, atol=1e-5)  # both second order, O(dt^2) apart


def test_compiled_right_hand_side_equals_the_python_route():
    """The time loop's compiled augmented right-hand side (tree solve, loop and driver rows, work terms) against
    ``augmented.state_derivative`` (Python assembly of the driver rows, the same tree kernels), and its projection
    against ``augmented.project``."""
    model, q0 = rm.models.slider_crank(crank_angle=0.3)
    workspace(model)  # compiles the model
    drive = {"crank": (lambda t: 0.3 + 2.0 * t, lambda t: 2.0, lambda t: 0.5)}
    inputs = integrate._Inputs(model, [0.0, 1.5, 0.0], drive)
    callback, key = inputs.callback()
    loop = augmented.TimeLoop(model, inputs, "baumgarte", 3.0, 4.0)
    qd0 = np.array([0.3, -0.2, 0.1])
    z, zd = augmented.absolute_from_joint(model, q0, qd0)
    z[1, 0] += 1e-3  # off the constraints, so that Baumgarte's terms act
    y = np.concatenate((z.ravel(), zd.ravel(), [0.0, 0.0]))
    dy = np.zeros_like(y)
    t = 0.2
    assert integrators.system_rhs(callback, key, loop.system, t, y, dy) == 0
    driven = [(coord, lambda s, f=evaluate: f(s)) for coord, _, evaluate in inputs.drivers]
    expected = augmented.state_derivative(model, t, y, tau=[0.0, 1.5, 0.0], alpha=3.0, beta=4.0, drivers=driven)
    np.testing.assert_allclose(dy, expected, rtol=1e-12, atol=1e-12)

    assert augmented_system.project_state(callback, key, loop.system, t, y) == 0
    z_ref, zd_ref = augmented.project(model, z, zd, t=t, drivers=driven)
    np.testing.assert_allclose(y[:9].reshape(3, 3), z_ref, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(y[9:18].reshape(3, 3), zd_ref, rtol=0.0, atol=1e-12)
    residual, _, rate, _ = augmented.constraints(model, y[:9], y[9:18], t, driven)
    assert np.abs(residual).max() < 1e-13 and np.abs(rate).max() < 1e-12


def test_unknown_solver_is_refused():
    model = chains.serial_chain(2)
    z, zd = augmented.absolute_from_joint(model, np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="unknown solver"):
        augmented.forward_dynamics(model, z, zd, solver="magic")


def test_augmented_simulation_drift_baumgarte_and_projection():
    model = chains.serial_chain(4)
    q0, qd0 = np.array([0.8, -0.3, 0.2, 0.1]), np.zeros(4)
    reference = rm.simulate(model, q0, qd0, 1.0, rtol=1e-11, atol=1e-12)
    drift = {}
    for label, options in (("none", dict(stabilization="none")), ("baumgarte", dict(alpha=10.0, beta=10.0)),
                           ("projection", dict(stabilization="projection"))):
        res = rm.simulate(model, q0, qd0, 1.0, formulation="augmented", rtol=1e-9, atol=1e-11, **options)
        assert res.t[0] == 0.0 and res.t[-1] == 1.0 and res.z.shape == (res.t.size, 4, 3)
        np.testing.assert_allclose(res.q[-1], reference.q[-1], atol=1e-7)
        drift[label] = res.constraint_drift
    assert drift["none"][-1] > 10 * drift["baumgarte"][-1]  # Baumgarte holds the constraints better
    assert drift["projection"].max() < 1e-12  # projection: round-off
    assert drift["none"][-1] > drift["none"][1]  # without stabilisation the drift grows
    with pytest.raises(ValueError, match="method 'rk4' is fixed-step: give dt"):
        rm.simulate(model, q0, qd0, 1.0, formulation="augmented", method="rk4")
    with pytest.raises(ValueError, match="solver='tree'"):
        rm.simulate(model, q0, qd0, 1.0, formulation="augmented", solver="sparse")
    with pytest.raises(ValueError, match="projection runs inside the numba integrators"):
        rm.simulate(model, q0, qd0, 1.0, formulation="augmented", method="scipy:RK45", stabilization="projection")


def test_twenty_link_drift_over_twenty_seconds():
    """RK4 (dt = 0.01 s) on a 20-link, 20 m chain bent into an arc: without stabilisation the joints drift
    apart (metres); Baumgarte (alpha = beta = 10 / s) keeps them within 5 cm; projection at round-off."""
    chain = chains.serial_chain(20, length=20.0, mass=20.0)
    q0 = np.full(20, 0.15)
    drift = {}
    for label, options in (("none", dict(stabilization="none")),
                           ("baumgarte", dict(stabilization="baumgarte", alpha=10.0, beta=10.0)),
                           ("projection", dict(stabilization="projection"))):
        res = rm.simulate(chain, q0, np.zeros(20), 20.0, method="rk4", dt=0.01, formulation="augmented", **options)
        assert res.t[-1] == 20.0
        drift[label] = res.constraint_drift
    none = drift["none"]
    assert none[-200:].max() > 1000 * none[:200].max() and none.max() > 1.0  # grows, to metres
    assert drift["baumgarte"].max() < 0.05
    assert drift["projection"].max() < 1e-12


def test_augmented_work_tau_function_and_t_eval():
    """Seed 000's squares with a time-varying joint torque: the augmented run with t_eval follows the recursive
    one, and its integrated work closes the energy balance."""
    model, q0, qd0 = rm.models.two_squares()
    torque = lambda t: np.array([2.0 * np.sin(3.0 * t), 0.0])  # noqa: E731
    times = np.linspace(0.0, 2.0, 21)
    recursive = rm.simulate(model, q0, qd0, 2.0, rtol=1e-11, atol=1e-12, t_eval=times, tau=torque)
    res = rm.simulate(model, q0, qd0, 2.0, formulation="augmented", rtol=1e-11, atol=1e-12, t_eval=times,
                      tau=torque, stabilization="projection")
    np.testing.assert_array_equal(res.t, times)
    np.testing.assert_allclose(res.q, recursive.q, atol=1e-7)
    np.testing.assert_allclose(res.dissipated_work, recursive.dissipated_work, atol=1e-7)
    np.testing.assert_allclose(res.applied_work, recursive.applied_work, atol=1e-7)
    assert np.abs(res.energy_balance()).max() < 1e-6


def test_augmented_drivers_and_events_follow_the_recursive_route():
    """Prescribed crank motion as a rheonomic constraint, and event location on the dense output."""
    model, q0 = rm.models.slider_crank(crank_angle=0.3)
    drive = {"crank": (lambda t: 0.3 + 2.0 * t, lambda t: 2.0, lambda t: 0.0)}
    times = np.linspace(0.0, 1.0, 11)
    options = dict(t_eval=times, drivers=drive, rtol=1e-11, atol=1e-12)
    recursive = rm.simulate(model, q0, np.zeros(3), 1.0, **options)
    aug = rm.simulate(model, q0, np.zeros(3), 1.0, formulation="augmented", stabilization="projection", **options)
    np.testing.assert_allclose(aug.q, recursive.q, atol=1e-9)
    np.testing.assert_allclose(aug.applied_work, recursive.applied_work, atol=1e-8)  # the driver's work
    assert np.abs(aug.energy_balance()).max() < 1e-8 and aug.constraint_drift.max() < 1e-10
    _driving_forces_and_accelerations_agree(aug, recursive)


def _driving_forces_and_accelerations_agree(aug, recursive):
    """An augmented run's driving forces (minus its driver rows' multipliers) and joint accelerations (its absolute
    ones mapped back) at the samples equal the recursive run's to 1e-9 of their size; a free coordinate has none."""
    forces = recursive.driving_forces()
    assert np.abs(forces).max() > 1.0
    np.testing.assert_allclose(aug.driving_forces(), forces, rtol=0, atol=1e-9 * np.abs(forces).max())
    qdd = recursive.qdd()
    np.testing.assert_allclose(aug.qdd(), qdd, rtol=0, atol=1e-9 * np.abs(qdd).max())


def test_a_driven_four_bar_in_absolute_coordinates_follows_the_recursive_route():
    """The four-bar with its crank driven (a loop and a driver row on the tree): coordinates, loop multipliers,
    driving torque and accelerations equal the recursive run's, under projection and Baumgarte."""
    model, q0 = rm.models.four_bar(crank_angle=0.8)
    crank = (lambda t: 0.8 + 0.4 * np.sin(3.0 * t), lambda t: 1.2 * np.cos(3.0 * t), lambda t: -3.6 * np.sin(3.0 * t))
    options = dict(t_eval=np.linspace(0.0, 1.0, 11), drivers={0: crank}, rtol=1e-11, atol=1e-12)
    recursive = rm.simulate(model, q0, np.zeros(model.nq), 1.0, **options)
    for stabilization in ({"stabilization": "projection"}, {"stabilization": "baumgarte", "alpha": 5.0, "beta": 10.0}):
        aug = rm.simulate(model, q0, np.zeros(model.nq), 1.0, formulation="augmented", **options, **stabilization)
        np.testing.assert_allclose(aug.q, recursive.q, rtol=0, atol=1e-9)
        np.testing.assert_allclose(aug.multipliers, recursive.multipliers, rtol=0,
                                   atol=1e-9 * np.abs(recursive.multipliers).max())
        _driving_forces_and_accelerations_agree(aug, recursive)

    chain = chains.serial_chain(2)

    def crossing(t, q, qd):
        return q[0]

    crossing.direction = -1.0
    runs = [rm.simulate(chain, [0.5, 0.0], [0.0, 0.0], 3.0, events=crossing, rtol=1e-11, atol=1e-12, **extra)
            for extra in ({}, {"formulation": "augmented"})]
    np.testing.assert_allclose(runs[1].t_events[0], runs[0].t_events[0], atol=1e-9)
    assert runs[0].t_events[0].size == 2
    crossing.terminal = True
    stopped = rm.simulate(chain, [0.5, 0.0], [0.0, 0.0], 3.0, events=crossing, formulation="augmented")
    assert stopped.status == "event" and abs(stopped.t[-1] - runs[0].t_events[0][0]) < 1e-7


@pytest.mark.parametrize("case", ["chain", "random_tree", "slider_crank"])
def test_factor_rows_are_cache_lines_and_tree_residuals_complete_the_blocks(case):
    """The factor's rows start on 64-byte boundaries (its record layout is by cache line), and after
    ``tree_residuals`` at the factored z every joint's blocks Jc, Jp equal C_z of ``augmented.constraints`` and its
    residuals C, with the factor's pivots (lines 0 and 1, where a revolute body's blocks are kept) unchanged: the
    projection reads whole blocks, which ``factor_and_solve`` leaves out for a revolute body with a regular pivot."""
    kernels = sparse_kkt  # the joints' rows and the factor's record layout
    if case == "slider_crank":  # a prismatic joint and a regularised pivot (the piston's J = 0)
        model, q0 = rm.models.slider_crank()
        q = rm.assemble(model, q0)
    else:
        model = chains.serial_chain(37) if case == "chain" else build(TREE_SPECS[3])
        q = np.random.default_rng(5).uniform(-1.0, 1.0, model.nq)
    z, zd = augmented.absolute_from_joint(model, q, np.random.default_rng(6).normal(size=model.nq))
    augmented.forward_dynamics(model, z, zd)
    tw = model._augmented_workspace
    for factor in (tw.factor, tw.factor_buffer, kernels.aligned_factor(model.nbodies)):
        assert factor.flags.c_contiguous and factor.ctypes.data % 64 == 0 and factor.strides[0] % 64 == 0
    pivots = tw.factor[:, :kernels.F_JC].copy()
    rows = tw.tree_rows
    residuals = np.full(rows, np.nan)
    kernels.tree_residuals(model.body_int, model.body_real, tw.row_start, z, zd, tw.factor, np.zeros((4, 3)),
                           residuals)
    assert np.array_equal(tw.factor[:, :kernels.F_JC], pivots)
    c, cz, _, _ = augmented.constraints(model, z, zd)
    dense = np.zeros((rows, 3 * model.nbodies))
    for i, parent in enumerate(model.body_int[:, L.PARENT]):
        for r in range(tw.row_start[i + 1] - tw.row_start[i]):
            dense[tw.row_start[i] + r, 3 * i:3 * i + 3] = tw.factor[i, kernels.F_JC + 3 * r:kernels.F_JC + 3 * r + 3]
            if parent >= 0:
                dense[tw.row_start[i] + r, 3 * parent:3 * parent + 3] = tw.factor[
                    i, kernels.F_JP + 3 * r:kernels.F_JP + 3 * r + 3]
    assert np.abs(dense - cz.toarray()[:rows]).max() < 1e-12
    assert np.abs(residuals - c[:rows]).max() < 1e-12
