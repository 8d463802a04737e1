"""The O(N) Newton matrix solve (solve_effective) and the generalised-alpha integrator (rm.implicit)."""

import itertools

import numpy as np
import pytest
from conftest import TREE_SPECS, build, random_state, rel_err

import recursive_mbd as rm
from recursive_mbd.integrate.implicit import generalized_alpha_coefficients, simulate_generalized_alpha
from recursive_mbd.model.joints import PLANAR, REVOLUTE

# Under NUMBA_BOUNDSCHECK=1 in CI (.ci/run) only the tests marked `boundscheck` below: the Newton-matrix kernels (each
# generalized-alpha loop specialisation compiles for about a minute there).


def _rotation_rows(model):
    """T (nbodies, nq): d theta_b / d q, 1 for every rotational coordinate of b and its ancestors."""
    rows = np.zeros((model.nbodies, model.nq))
    for b in range(model.nbodies):
        parent, jt, k = model.body_parent[b], model.joint_type[b], model.joint_q_index[b]
        if parent >= 0:
            rows[b] = rows[parent]
        if jt == REVOLUTE:
            rows[b, k] = 1.0
        elif jt == PLANAR:
            rows[b, k + 2] = 1.0
    return rows


def _body_stiffness(spec, model, q, gravity):
    """K_b = F_b . e_b + sum_k F_k . d_k from the body poses (independent of the kernel's recursion)."""
    poses, _ = rm.forward_kinematics(model, q)
    n = model.nbodies
    rot = [np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]) for th in poses[:, 2]]
    com = np.array([poses[b, :2] + rot[b] @ spec[b]["com"] for b in range(n)])
    e = np.array([rot[b] @ (np.asarray(spec[b]["com"]) - spec[b]["child_point"]) for b in range(n)])
    weight = np.array([spec[b]["mass"] * np.asarray(gravity) for b in range(n)])
    subtree = weight.copy()
    for b in range(n - 1, -1, -1):  # parents come first in spec order
        if spec[b]["parent"] >= 0:
            subtree[spec[b]["parent"]] += subtree[b]
    stiff = np.array([subtree[b] @ e[b] for b in range(n)])
    for k in range(n):
        parent = spec[k]["parent"]
        if parent >= 0:
            stiff[parent] += subtree[k] @ (com[k] - e[k] - com[parent])
    return stiff


def _with_joint_springs(spec, rng, loops_at=None):
    """The model of spec with a random joint spring-damper on every 1-dof joint; also returns (k, c) per q.

    With ``loops_at`` (a q), also two distance loops closed there, from a point of the last body and one of the
    middle body to ground points (2 loop equations)."""
    model = rm.Model(gravity=(0.3, -9.81))
    for b, body in enumerate(spec):
        model.add_body(name=f"b{b}", **body)
    k_joint, c_joint = [], []
    for b, body in enumerate(spec):
        if body["joint"] in ("revolute", "prismatic"):
            k, c = rng.uniform(0.0, 50.0), rng.uniform(0.0, 5.0)
            model.add_joint_spring_damper(f"b{b}", k, c, rest=rng.uniform(-1, 1))
            k_joint.append((b, k))
            c_joint.append((b, c))
    if loops_at is not None:
        poses, _ = rm.forward_kinematics(build(spec), loops_at)
        for body in (len(spec) - 1, len(spec) // 2):
            point = rng.uniform(-0.5, 0.5, 2)
            c, s = np.cos(poses[body, 2]), np.sin(poses[body, 2])
            at = poses[body, :2] + np.array([c * point[0] - s * point[1], s * point[0] + c * point[1]])
            length = rng.uniform(0.5, 1.5)
            direction = rng.uniform(0.0, 2.0 * np.pi)
            model.add_loop("distance", body, point, "ground",
                           at + length * np.array([np.cos(direction), np.sin(direction)]), length=length)
    return model.compile(), k_joint, c_joint


def _dense_effective(spec, model, q, qd, c_mass, c_damp, c_stiff):
    """The documented S = c_mass M + c_damp C + c_stiff K, dense: M from rm.mass_matrix; K = T^T diag(K_b) T with
    K_b from the body poses and T from the joint types; the joint springs' K and dampers' C by central differences
    of the element joint forces."""
    nq = model.nq
    rows = _rotation_rows(model)
    stiff = rows.T @ np.diag(_body_stiffness(spec, model, q, (0.3, -9.81))) @ rows
    damp = np.zeros((nq, nq))
    step = 1e-4
    for j in range(nq):
        dq = np.zeros(nq)
        dq[j] = step
        stiff[:, j] -= (rm.element_forces(model, q + dq, qd)["joint_forces"]
                        - rm.element_forces(model, q - dq, qd)["joint_forces"]) / (2 * step)
        damp[:, j] -= (rm.element_forces(model, q, qd + dq)["joint_forces"]
                       - rm.element_forces(model, q, qd - dq)["joint_forces"]) / (2 * step)
    return c_mass * rm.mass_matrix(model, q) + c_damp * damp + c_stiff * stiff


@pytest.mark.boundscheck
def test_solve_effective_equals_dense_solve_of_the_documented_matrix():
    """200 random trees (all joint types, joint spring-dampers): x equals the dense solve to 1e-9 relative."""
    rng = np.random.default_rng(15)
    worst = 0.0
    for n, spec in enumerate(TREE_SPECS):
        model, _, _ = _with_joint_springs(spec, rng)
        q, qd, _ = random_state(model, n)
        c_mass, c_damp, c_stiff = rng.uniform(0.5, 2.0), rng.uniform(0.0, 0.1), rng.uniform(0.0, 0.01)
        dense = _dense_effective(spec, model, q, qd, c_mass, c_damp, c_stiff)
        rhs = rng.normal(size=model.nq)
        x = rm.solve_effective(model, q, qd, c_mass, c_damp, c_stiff, rhs)
        worst = max(worst, rel_err(x, np.linalg.solve(dense, rhs)))
    assert worst < 1e-9, worst  # measured 1e-12 .. 1e-11


@pytest.mark.boundscheck
def test_solve_effective_with_loops_equals_the_dense_bordered_solve():
    """200 random trees with joint spring-dampers and two distance loops (m = 2): x and the multipliers equal the dense
    solve of [S J^T; J 0] [x; lambda] = [rhs; c] (S as documented, J from loops.constraints) to 1e-9 relative;
    J x = c holds; redundant loop rows (locked trees) give the same x with minimum-norm multipliers."""
    rng = np.random.default_rng(1515)
    worst_x = worst_lam = worst_rows = 0.0
    full_rank = 0
    for spec in TREE_SPECS:
        q = rng.uniform(-np.pi, np.pi, build(spec).nq)
        model, _, _ = _with_joint_springs(spec, rng, loops_at=q)
        nq, m = model.nq, model.nconstraints
        assert m == 2 and np.abs(rm.loops.constraints(model, q)[0]).max() < 1e-12
        qd = rng.normal(size=nq)
        c_mass, c_damp, c_stiff = rng.uniform(0.5, 2.0), rng.uniform(0.0, 0.1), rng.uniform(0.0, 0.01)
        dense = _dense_effective(spec, model, q, qd, c_mass, c_damp, c_stiff)
        jac = rm.loops.constraints(model, q)[2]
        rhs, c = rng.normal(size=nq), rng.normal(size=m)
        x, lam = rm.solve_effective(model, q, qd, c_mass, c_damp, c_stiff, rhs, loop_rhs=c, multipliers=True)
        if nq and np.linalg.matrix_rank(jac) == m:
            full_rank += 1
            kkt = np.block([[dense, jac.T], [jac, np.zeros((m, m))]])
            exact = np.linalg.solve(kkt, np.concatenate((rhs, c)))
            worst_x = max(worst_x, rel_err(x, exact[:nq]))
            worst_lam = max(worst_lam, rel_err(lam, exact[nq:]))
            worst_rows = max(worst_rows, np.abs(jac @ x - c).max() / max(1.0, np.abs(c).max()))
        elif nq:  # redundant rows, c in the range of J: the same x, lambda the minimum-norm solution
            c = jac @ rng.normal(size=nq)
            x, lam = rm.solve_effective(model, q, qd, c_mass, c_damp, c_stiff, rhs, loop_rhs=c, multipliers=True)
            kkt = np.block([[dense, jac.T], [jac, np.zeros((m, m))]])
            exact = np.linalg.lstsq(kkt, np.concatenate((rhs, c)), rcond=1e-12)[0]
            worst_x = max(worst_x, rel_err(x, exact[:nq]))
    assert full_rank >= 150, full_rank  # 194 of 200
    # measured x 1.2e-11, lambda 8.9e-12, rows 1.3e-14
    assert worst_x < 1e-9 and worst_lam < 1e-9 and worst_rows < 1e-9, (worst_x, worst_lam, worst_rows)
    # without loop_rhs the loop rows are homogeneous: J x = 0
    x = rm.solve_effective(model, q, qd, 1.0, 0.0, 0.0, rhs)
    assert np.abs(rm.loops.constraints(model, q)[2] @ x).max() < 1e-12 * max(1.0, np.abs(x).max())


def _revolute_only(spec):
    out = []
    for body in spec:
        copy = dict(body)
        if copy["joint"] in ("prismatic", "planar"):
            copy["joint"], copy["axis"] = "revolute", None
        out.append(copy)
    return out


@pytest.mark.boundscheck
def test_gravity_stiffness_is_the_hessian_of_the_potential_on_revolute_trees():
    """On revolute/fixed trees T^T diag(K_b) T is exactly d h / d q at qd = 0 (Richardson central differences)."""
    worst = 0.0
    for n, random_spec in enumerate(TREE_SPECS[:40]):
        model = build(_revolute_only(random_spec))
        q, _, _ = random_state(model, n)
        nq = model.nq
        zero = np.zeros(nq)

        def jacobian(step, model=model, q=q, nq=nq, zero=zero):
            out = np.zeros((nq, nq))
            for j in range(nq):
                dq = np.zeros(nq)
                dq[j] = step
                out[:, j] = (rm.bias_forces(model, q + dq, zero) - rm.bias_forces(model, q - dq, zero)) / (2 * step)
            return out

        hessian = (4.0 * jacobian(5e-4) - jacobian(1e-3)) / 3.0
        rows = _rotation_rows(model)
        documented = rows.T @ np.diag(rm.implicit.gravity_stiffness(model, q)) @ rows
        worst = max(worst, rel_err(documented, hessian))
    assert worst < 1e-8, worst


def test_serial_chain_residual_and_correction_passes_equal_the_tree_kernels():
    """The register passes of a serial revolute chain give the generic tree kernels' results: the residual's
    (inverse_dynamics_serial) and the correction's (effective_apply's serial sweeps) bit for bit, with and without
    element wrenches, the factorisation's to round-off; the same statuses for a non-finite input and a singular
    joint."""
    from recursive_mbd._kernels.layout import FLAGS, SERIAL_REVOLUTE, STATUS_SINGULAR  # noqa: PLC0415
    from recursive_mbd._kernels.planar import implicit as kernels  # noqa: PLC0415
    from recursive_mbd._kernels.planar import tree  # noqa: PLC0415
    from recursive_mbd.model.workspace import workspace  # noqa: PLC0415

    rng = np.random.default_rng(7)
    no_driven = np.zeros(0, dtype=np.uint8)
    for n in (1, 2, 9, 40):
        chain = rm.chains.serial_chain(n).compile()
        body_int, body_real, gravity, ws = chain.body_int, chain.body_real, chain.gravity, workspace(chain).ws
        generic = body_int.copy(order="F")  # the same chain without the serial flag: the tree passes
        generic[0, FLAGS] &= ~SERIAL_REVOLUTE
        generic.setflags(write=False)
        assert body_int[0, FLAGS] & SERIAL_REVOLUTE
        q, qd, qdd = rng.normal(size=(3, n))
        for wrench in (np.zeros((0, 3)), rng.normal(size=(n, 3))):
            tau, tau_serial = np.zeros(n), np.zeros(n)
            assert tree.inverse_dynamics(body_int, body_real, gravity, q, qd, qdd, wrench, ws, tau) == 0
            assert tree.inverse_dynamics_serial(body_real, gravity, q, qd, qdd, wrench, ws, tau_serial) == 0
            assert np.array_equal(tau_serial, tau)
        for bad in (q, qd, qdd):  # the entry named, as inverse_dynamics names it
            saved = bad[n // 2]
            bad[n // 2] = np.nan
            expected = tree.inverse_dynamics(body_int, body_real, gravity, q, qd, qdd, wrench, ws, tau)
            assert expected != 0
            assert tree.inverse_dynamics_serial(body_real, gravity, q, qd, qdd, wrench, ws, tau) == expected
            bad[n // 2] = saved
        # the factors (uu, dinv, gcol, rvec, kb: what effective_apply and the bdf loop read) to round-off (the fused
        # pass contracts its products into fused multiply-adds where the tree kernel stored them first), and the
        # serial sweeps on the same factors bit for bit
        tree.kinematics_pass(body_int, body_real, q, qd, ws, True)
        j_diag = rng.uniform(0.0, 1.0, n)
        rhs = rng.normal(size=n)
        results = []
        for model_int in (body_int, generic):
            ia, dinv, gcol = (np.zeros((n, 3, 3)) for _ in range(3))
            uu = np.zeros((n, 3, 6))  # U and the left factor U_L
            rvec, kb, x = np.zeros((n, 2)), np.zeros(n), np.zeros(n)
            assert kernels.effective_factor(model_int, body_real, gravity, ws, no_driven, 1.0, 0.3, j_diag,
                                            np.zeros((0, 3, 3)), ia, uu, dinv, gcol, rvec, np.zeros((n, 2)), kb,
                                            np.zeros((3, 3))) == 0
            results.append((uu, dinv, gcol, rvec, kb))
        for serial_part, generic_part in zip(*results, strict=True):
            assert rel_err(serial_part, generic_part) < 1e-13
        x, x_generic = np.zeros(n), np.zeros(n)
        for model_int, out in ((body_int, x), (generic, x_generic)):
            kernels.effective_apply(model_int, no_driven, *results[1][:4], rhs, np.zeros((n, 3)), np.zeros((n, 3)),
                                    np.zeros((n, 3)), out)
        assert np.array_equal(x, x_generic)
        statuses = [kernels.effective_factor(model_int, body_real, gravity, ws, no_driven, 0.0, 0.0, np.zeros(n),
                                             np.zeros((0, 3, 3)), np.zeros((n, 3, 3)), np.zeros((n, 3, 6)),
                                             np.zeros((n, 3, 3)), np.zeros((n, 3, 3)),
                                             np.zeros((n, 2)), np.zeros((n, 2)), np.zeros(n), np.zeros((3, 3)))
                    for model_int in (body_int, generic)]  # S = 0: the tip's joint is the first singular one
        assert statuses == [STATUS_SINGULAR | ((n - 1) << 4)] * 2


def test_solve_effective_errors():
    model = build(TREE_SPECS[3])
    q, qd, _ = random_state(model, 3)
    with pytest.raises(rm.ModelError, match="singular at the joint of body"):
        rm.solve_effective(model, q, qd, 0.0, 0.0, 0.0, np.ones(model.nq))
    with pytest.raises(rm.StateError, match="rhs"):
        rm.solve_effective(model, q, qd, 1.0, 0.0, 0.0, np.ones(model.nq + 1))
    bad = q.copy()
    bad[0] = np.nan
    with pytest.raises(rm.StateError, match=r"q\[0\]"):
        rm.solve_effective(model, bad, qd, 1.0, 0.0, 0.0, np.ones(model.nq))
    with pytest.raises(rm.ModelError, match="loop_rhs is for models with closed loops"):
        rm.solve_effective(model, q, qd, 1.0, 0.0, 0.0, np.ones(model.nq), loop_rhs=[0.0])
    four_bar, q0 = rm.models.four_bar()
    with pytest.raises(rm.StateError, match=r"loop_rhs must have shape \(2,\)"):
        rm.solve_effective(four_bar, q0, np.zeros(3), 1.0, 0.0, 0.0, np.ones(3), loop_rhs=[0.0])
    with pytest.raises(rm.StateError, match=r"loop_rhs\[1\] is not finite"):
        rm.solve_effective(four_bar, q0, np.zeros(3), 1.0, 0.0, 0.0, np.ones(3), loop_rhs=[0.0, np.inf])


def _double_pendulum():
    model = rm.Model(gravity=(0.0, -9.81))
    model.add_body(mass=1.0, inertia=0.05, com=(0.5, 0.0))
    model.add_body(parent=0, mass=1.0, inertia=0.05, parent_point=(1.0, 0.0), com=(0.5, 0.0))
    return model.compile()


@pytest.mark.parametrize("rho_inf", [1.0, 0.5])
def test_generalized_alpha_is_second_order(rho_inf):
    model = _double_pendulum()
    q0, qd0 = np.array([0.3, 0.2]), np.zeros(2)
    ref = rm.simulate(model, q0, qd0, 2.0, method="dop853", rtol=1e-13, atol=1e-13).q[-1]
    errors = []
    for dt in (4e-3, 2e-3, 1e-3):
        res = rm.simulate(model, q0, qd0, 2.0, method="generalized_alpha", dt=dt, rho_inf=rho_inf)
        errors.append(np.max(np.abs(res.q[-1] - ref)))
        # lagged Coriolis terms: a linear contraction, measured 6.4 - 7.5 iterations per step at newton_tol 1e-12
        # on the positions and velocities
        assert res.newton_iterations <= 8 * res.nsteps
    for coarse, fine in zip(errors, errors[1:], strict=False):
        assert abs(coarse / fine - 4.0) < 0.3, errors


def _spring_rotor(stiffness, gravity=(0.0, 0.0)):
    """One body on a revolute joint at its centre of mass (J = 1) with a joint spring: omega = sqrt(stiffness)."""
    model = rm.Model(gravity=gravity)
    model.add_body(mass=1.0, inertia=1.0)
    model.add_joint_spring_damper(0, stiffness)
    return model.compile()


def test_newton_takes_two_iterations_where_the_matrix_is_exact():
    """Linear model, exact Newton matrix: the first iteration solves the step, the second confirms it."""
    model = _spring_rotor(100.0)
    res = rm.simulate(model, [0.1], [0.0], 1.0, method="generalized_alpha", dt=0.01)
    assert res.newton_iterations == 2 * res.nsteps


def test_rho_inf_sets_the_damping_of_unresolved_modes():
    """h omega = 1000: the generalised-alpha spectral radius at infinity is rho_inf (a double root), so the
    amplitude after k steps is about k rho_inf^k; rho_inf = 0 annihilates the mode in two steps, rho_inf = 1 keeps
    it; a resolved mode (h omega = 0.01) keeps its amplitude with rho_inf = 0.5."""
    stiff = _spring_rotor(1e6)  # omega = 1000 rad/s, dt = 1 s
    amplitude = {}
    for rho_inf in (0.0, 0.5, 0.8, 1.0):
        res = simulate_generalized_alpha(stiff, [1.0], [0.0], 0.0, 40.0, 1.0, rho_inf=rho_inf)
        amplitude[rho_inf] = np.abs(res.q[:, 0])
        assert res.newton_iterations <= 2 * res.nsteps + 1  # round-off may cost one step a third iteration
    assert np.max(amplitude[0.0][3:]) < 1e-5 and amplitude[0.0][-1] < 1e-60
    for rho_inf in (0.5, 0.8):
        assert 0.1 * rho_inf**40 < amplitude[rho_inf][40] < 100 * 40 * rho_inf**40
    assert np.min(amplitude[1.0]) > 0.98
    soft = _spring_rotor(1.0)  # omega = 1 rad/s, period 2 pi
    res = rm.simulate(soft, [1.0], [0.0], 10 * np.pi, method="generalized_alpha", dt=0.01, rho_inf=0.5)
    assert abs(np.max(np.abs(res.q[-700:, 0])) - 1.0) < 1e-4


def test_rho_one_keeps_the_energy_of_a_linear_chain_swing_bounded():
    """Small swing (1e-2 rad) of a 3-link chain in its first mode, 1000 periods (40 000 steps, 40 per period) with
    rho_inf = 1: the energy error stays small (below 1e-5 of the swing energy) and does not grow (its maximum over
    the last quarter is at most 1.5 x that over the first; measured 1.07e-7 in both)."""
    chain = rm.chains.serial_chain(3)
    omega, shapes = rm.studies.chain_modes(chain, 1)
    q0 = 0.01 * shapes[:, 0] / np.max(np.abs(shapes[:, 0]))
    period = 2 * np.pi / omega[0]
    zero = np.zeros(chain.nq)
    res = rm.simulate(chain, q0, zero, 1000 * period, method="generalized_alpha", dt=period / 40, rho_inf=1.0,
                      every=10)
    assert res.nsteps == 40_000
    rest = sum(rm.energy(chain, zero, zero))
    swing = sum(rm.energy(chain, q0, zero)) - rest
    error = np.array([sum(rm.energy(chain, q, qd)) - rest - swing for q, qd in zip(res.q, res.qd, strict=True)]) / swing
    quarter = error.size // 4
    assert np.max(np.abs(error)) < 1e-5  # measured 1.07e-7
    assert np.max(np.abs(error[-quarter:])) <= 1.5 * np.max(np.abs(error[:quarter]))


def test_generalized_alpha_failures_keep_the_samples():
    model = _double_pendulum()
    # an unreachable tolerance: Newton stops short of it at the step where round-off stalls above the floor
    # (the failing step split in halves down to dt / 16 first: the time is a piece's end within the step)
    with pytest.raises(rm.SimulationError, match=r"did not converge at t = .* s \(step \d+, dt = 0.001 s, split in "
                                                 r"halves down to dt / 16 = 6.25e-05 s\).*residual") as info:
        simulate_generalized_alpha(model, [0.3, 0.2], [0.0, 0.0], 0.0, 1.0, 1e-3, newton_tol=1e-300, max_newton=3)
    result = info.value.result
    assert result.status == "failed" and result.t.size > 1
    np.testing.assert_allclose(result.t, 1e-3 * np.arange(result.t.size), rtol=0, atol=1e-15)
    pieces = (info.value.t - result.t[-1]) / (1e-3 / 16)
    assert 1.0 <= round(pieces) <= 16 and pieces == pytest.approx(round(pieces), abs=1e-9)
    assert np.all(np.isfinite(result.q))
    with pytest.raises(ValueError, match="rho_inf"):
        rm.simulate(model, [0.3, 0.2], [0.0, 0.0], 1.0, method="generalized_alpha", dt=1e-3, rho_inf=1.5)
    with pytest.raises(ValueError, match="not 'dopri5'"):
        rm.simulate(model, [0.3, 0.2], [0.0, 0.0], 1.0, rho_inf=0.5)
    assert generalized_alpha_coefficients(1.0) == (0.5, 0.5, 0.5, 0.25)


def test_generalized_alpha_work_terms_close_the_energy_balance():
    """Joint damper and a constant tau: E(t) + dissipated - applied = E(t0) to O(dt^2) (ratio ~4 when dt halves),
    and the result re-evaluates its dynamics (qdd() solves M qdd = Q at the samples)."""
    model = rm.Model(gravity=(0.0, -9.81))
    model.add_body(mass=1.0, inertia=0.05, com=(0.5, 0.0))
    model.add_body(parent=0, mass=1.0, inertia=0.05, parent_point=(1.0, 0.0), com=(0.5, 0.0))
    model.add_joint_spring_damper(1, 2.0, damping=0.5)
    model.compile()
    tau = np.array([0.7, -0.2])
    gaps = []
    for dt in (2e-3, 1e-3):
        res = rm.simulate(model, [0.3, 0.2], [0.0, 0.0], 2.0, method="generalized_alpha", dt=dt, tau=tau,
                          rho_inf=0.8)
        total = np.array([sum(rm.energy(model, q, qd)) for q, qd in zip(res.q, res.qd, strict=True)])
        assert res.dissipated_work[-1] > 0.1 and abs(res.applied_work[-1]) > 0.01
        gaps.append(np.max(np.abs(total + res.dissipated_work - res.applied_work - total[0])))
    assert gaps[1] < 1e-4 and 3.5 < gaps[0] / gaps[1] < 4.5, gaps  # measured 2.5e-5, ratio 4.0
    qdd = res.qdd()
    np.testing.assert_allclose(qdd[-1], rm.forward_dynamics(model, res.q[-1], res.qd[-1], tau), rtol=1e-12)


def _orders(errors):
    return [coarse / fine for coarse, fine in itertools.pairwise(errors)]


def test_four_bar_converges_at_second_order_to_dop853():
    """Closed loop (index 3, Schur complement of [S J^T; J 0]): against dop853 at rtol 1e-10 the error falls 4x
    when dt halves, the loop stays closed to the Newton tolerance, and the loop forces equal those of the
    explicit run's constrained dynamics (the result's qdd() at the samples)."""
    model, q0 = rm.models.four_bar()
    q, qd, _ = rm.loops.project(model, q0, np.array([2.0, 0.0, 0.0]))
    ref = rm.simulate(model, q, qd, 1.0, method="dop853", rtol=1e-10, atol=1e-12).q[-1]
    errors = []
    for dt in (4e-3, 2e-3, 1e-3):
        res = rm.simulate(model, q, qd, 1.0, method="generalized_alpha", dt=dt, rho_inf=0.8)
        errors.append(np.max(np.abs(res.q[-1] - ref)))
        assert res.constraint_drift.max() < 1e-10
        # lagged: velocity terms, lambda d2phi/dq2, and factors reused over steps; measured 7.1 at dt = 4e-3
        assert res.newton_iterations <= 8 * res.nsteps
    assert all(abs(ratio - 4.0) < 0.3 for ratio in _orders(errors)), errors
    assert errors[-1] < 1e-4


def test_small_steps_keep_second_order_in_the_state_and_the_multipliers():
    """Down to dt = 6.25e-5 (16,000 steps a second) the errors in q and in the loop multipliers still fall 4x when
    dt halves (measured 4.0 and 4.0): Newton stops on the correction of the velocities as well as the positions.
    (Stopping on the positions alone, c_stiff |dqdd| <= newton_tol, left velocity errors up to newton_tol / (beta
    h) a step that add up over the run: the errors grew as dt fell below 2.5e-4, 1.2e-7 -> 8.5e-6 rad in q.)"""
    model, q0 = rm.models.four_bar()
    samples = np.linspace(0.0, 1.0, 11)
    reference = rm.simulate(model, q0, np.zeros(3), 1.0, method="dopri5", rtol=1e-12, atol=1e-14, t_eval=samples)
    q_errors, lam_errors = [], []
    for dt in (2.5e-4, 1.25e-4, 6.25e-5):
        res = rm.simulate(model, q0, np.zeros(3), 1.0, method="generalized_alpha", dt=dt, t_eval=samples)
        q_errors.append(np.abs(res.q - reference.q).max())
        lam_errors.append(np.abs(res.multipliers - reference.multipliers).max())
    assert all(abs(ratio - 4.0) < 0.3 for ratio in _orders(q_errors)), q_errors
    assert all(abs(ratio - 4.0) < 0.3 for ratio in _orders(lam_errors)), lam_errors
    assert q_errors[-1] < 3e-8 and lam_errors[-1] < 2e-6 * np.abs(reference.multipliers).max()


def test_four_bar_velocities_stay_on_the_loop_constraint_over_ten_seconds():
    """Stabilised index 2: phi(q+) = 0 and J qd+ = 0 both hold to the Newton tolerance at every step over 10 s,
    for rho_inf = 0.8 and 1, measured by loops.constraints at every sample (independent of the integrator):
    max |phi| < 1e-11 m, max |J qd| < 1e-9 m/s (measured 1.6e-13 and 8e-11). The index-3 form it replaces closed
    the positions only (J qd drifted to 5.9e-3 m/s) and with rho_inf = 1 stopped at t = 3.35 s."""
    model, q0 = rm.models.four_bar()
    q, qd, _ = rm.loops.project(model, q0, np.array([2.0, 0.0, 0.0]))
    for rho_inf in (0.8, 1.0):
        res = rm.simulate(model, q, qd, 10.0, method="generalized_alpha", dt=4e-3, rho_inf=rho_inf)
        levels = np.array([[np.abs(phi).max(), np.abs(rate).max()]
                           for phi, rate, _, _ in (rm.loops.constraints(model, a, b)
                                                   for a, b in zip(res.q, res.qd, strict=True))])
        assert res.t[-1] == 10.0 and res.t.size == 2501
        assert levels[:, 0].max() < 1e-11 and levels[:, 1].max() < 1e-9, levels.max(axis=0)


def _driven_pendulum():
    model = rm.Model(gravity=(0.0, -9.81))
    model.add_body(mass=1.0, inertia=0.05, com=(0.5, 0.0), name="a")
    model.add_body(parent=0, mass=1.0, inertia=0.05, parent_point=(1.0, 0.0), com=(0.5, 0.0), name="b")
    model.add_body(parent=1, mass=0.5, inertia=0.02, parent_point=(1.0, 0.0), com=(0.5, 0.0), name="c")
    model.add_joint_spring_damper("c", 3.0, damping=0.2)
    return model.compile()


def test_tau_function_and_drivers_converge_at_second_order():
    """A controller tau(t, q, qd) and a driven joint (prescribed q_b(t)) inside the compiled loop: second order
    against dop853, and the driver's work closes the energy balance to O(dt^2)."""
    model = _driven_pendulum()

    def tau(t, q, qd):
        return np.array([0.5 * np.sin(3.0 * t) - 0.3 * qd[0], 0.0, -0.1 * q[2]])

    drivers = {"b": lambda t: 0.2 * np.sin(2.0 * t)}
    q0, qd0 = np.array([0.3, 0.0, -0.2]), np.array([0.0, 0.4, 0.0])
    ref = rm.simulate(model, q0, qd0, 1.5, method="dop853", rtol=1e-12, atol=1e-12, tau=tau, drivers=drivers)
    errors, gaps = [], []
    for dt in (4e-3, 2e-3, 1e-3):
        res = rm.simulate(model, q0, qd0, 1.5, method="generalized_alpha", dt=dt, tau=tau, drivers=drivers,
                          rho_inf=0.9)
        errors.append(np.max(np.abs(res.q[-1] - ref.q[-1])))
        total = np.array([sum(rm.energy(model, a, b)) for a, b in zip(res.q, res.qd, strict=True)])
        gaps.append(np.max(np.abs(total + res.dissipated_work - res.applied_work - total[0])))
        np.testing.assert_allclose(res.q[:, 1], 0.2 * np.sin(2.0 * res.t), rtol=0, atol=1e-9)
    assert all(abs(ratio - 4.0) < 0.4 for ratio in _orders(errors)), errors
    assert all(3.5 < ratio < 4.5 for ratio in _orders(gaps)), gaps


def test_t_eval_and_events_on_the_dense_output():
    """t_eval samples (cubic Hermite between steps) and a terminal event agree with dop853 to the scheme's
    accuracy, and the samples at step times equal those of a run without t_eval."""
    model = _double_pendulum()
    q0, qd0 = np.array([0.3, 0.2]), np.zeros(2)

    def crossing(t, q, qd):
        return q[0]

    crossing.terminal = True
    crossing.direction = -1.0
    ref = rm.simulate(model, q0, qd0, 2.0, method="dopri5", rtol=1e-12, atol=1e-12, events=crossing,
                      t_eval=np.linspace(0.0, 0.3, 7))
    res = rm.simulate(model, q0, qd0, 2.0, method="generalized_alpha", dt=1e-3, rho_inf=1.0, events=crossing,
                      t_eval=np.linspace(0.0, 0.3, 7) + 3e-4)
    plain = rm.simulate(model, q0, qd0, 0.3, method="generalized_alpha", dt=1e-3, rho_inf=1.0)
    assert res.status == "event" and ref.status == "event"
    assert abs(res.t_events[0][0] - ref.t_events[0][0]) < 1e-5  # measured ~1e-6 at dt = 1e-3
    assert res.t[-1] == res.t_events[0][0] and abs(res.q[-1, 0]) < 1e-12
    on_steps = rm.simulate(model, q0, qd0, 0.3, method="generalized_alpha", dt=1e-3, rho_inf=1.0,
                           t_eval=[0.1, 0.2])
    np.testing.assert_allclose(on_steps.q[1:], plain.q[[100, 200, 300]], rtol=0, atol=1e-13)
    samples = res.t[:-1]  # t0 and the t_eval times before the event
    assert samples.size >= 4
    exact = rm.simulate(model, q0, qd0, 0.5, method="dopri5", rtol=1e-12, atol=1e-12, t_eval=samples)
    assert np.max(np.abs(res.q[:-1] - exact.q[:-1])) < 1e-5


def test_wall_time_limit_and_interrupt_keep_the_samples():
    chain = rm.chains.serial_chain(50)
    q0 = np.full(50, 0.01)
    with pytest.raises(rm.SimulationError, match="max_wall_time") as info:
        rm.simulate(chain, q0, np.zeros(50), 1e4, method="generalized_alpha", dt=1e-3, max_wall_time=0.2, every=50)
    assert info.value.result.status == "time_limit" and info.value.result.t.size > 1


def test_newton_failure_names_time_and_correction_at_a_locked_loop():
    """A four-bar driven through its lock: past crank angle arccos(-3/8) = 1.955 (coupler and rocker stretched,
    t = 0.318 s) no closed configuration exists; Newton stops with the time and the size of the correction, the
    samples before are kept."""
    model, q0 = rm.models.four_bar()
    drivers = {"crank": lambda t: 1.0 + 3.0 * t}
    with pytest.raises(rm.SimulationError, match=r"at t = .* s.*(correction|singular|converge)") as info:
        rm.simulate(model, q0, np.zeros(3), 3.0, method="generalized_alpha", dt=1e-2, drivers=drivers)
    result = info.value.result
    lock = (np.arccos(-0.375) - 1.0) / 3.0
    assert result.status == "failed" and lock - 0.05 < result.t[-1] < lock < info.value.t < lock + 0.02
    assert np.all(np.isfinite(result.q))
    assert result.constraint_drift.max() < 1e-9


def test_hanging_swing_matches_the_linear_first_mode():
    """studies.hanging_swing: 40 links in their first mode (1e-3 rad) over 2 s; at dt = 2e-3 (rho_inf = 1) the
    phase error omega t (omega dt)^2 / 12 = 1.1e-4 dominates (measured max relative error 1.2e-4); at dt = 1e-3
    it falls 4x. Newton: 2.4 iterations per step (target <= 4) with the factors of the first step reused
    throughout. dop853 (rtol 1e-10) sees only the nonlinearity, about amplitude^2."""
    coarse = rm.studies.hanging_swing(40, 1e-3, 2.0, dt=2e-3, rho_inf=1.0)
    fine = rm.studies.hanging_swing(40, 1e-3, 2.0, dt=1e-3, rho_inf=1.0)
    exact = rm.studies.hanging_swing(40, 1e-3, 2.0, method="dop853", rtol=1e-10, atol=1e-13)
    assert 3e-5 < coarse["max_rel_error"] < 3e-4 and exact["max_rel_error"] < 1e-5
    assert 3.5 < coarse["max_rel_error"] / fine["max_rel_error"] < 4.5
    assert coarse["newton_iterations"] <= 2.5 * coarse["nsteps"] and exact["newton_iterations"] is None
    assert coarse["omega_1"] == pytest.approx(rm.studies.continuum_frequencies(1)[0], rel=0.01)


def test_a_progress_bar_leaves_the_run_with_loops_unchanged():
    """With a progress bar the run of a closed loop is the same, bit for bit: samples, multipliers, work."""
    model, q0 = rm.models.four_bar()
    q, qd, _ = rm.loops.project(model, q0, np.array([2.0, 0.0, 0.0]))
    whole = rm.simulate(model, q, qd, 0.5, method="generalized_alpha", dt=1e-3, progress=False)
    shown = rm.simulate(model, q, qd, 0.5, method="generalized_alpha", dt=1e-3, progress=True)
    for name in ("t", "q", "qd", "multipliers", "dissipated_work", "applied_work"):
        np.testing.assert_array_equal(getattr(shown, name), getattr(whole, name), err_msg=name)


@pytest.mark.parametrize("method, options", [("generalized_alpha", {"dt": 1e-3}), ("bdf", {})])
@pytest.mark.parametrize("stabilization", [{"stabilization": "projection"},
                                           {"stabilization": "baumgarte", "alpha": 5.0}, {"beta": 5.0}])
def test_implicit_methods_refuse_stabilization_options(method, options, stabilization):
    """The implicit methods hold the loops by their own rows: a stabilization the run would ignore is an error."""
    model, q0 = rm.models.four_bar()
    with pytest.raises(ValueError, match=f"not options of method '{method}'"):
        rm.simulate(model, q0, np.zeros(3), 0.01, method=method, **options, **stabilization)
