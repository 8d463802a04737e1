"""Mechanisms through singular positions (issue 12, item 1): parallelograms through their change points in both
formulations, driven kinematics through a change point, a driven triple-rocker into its lock, and one warning
about redundant loops. References are closed forms: a parallelogram's motion keeps every crank at one angle and
one rate and its energy E = 5/6 w^2 + 2 g sin(theta) constant."""

import warnings

import numpy as np
import pytest
from _helpers import three_parallel_cranks

import recursive_mbd as rm
from recursive_mbd._kernels.planar import loops as kernels
from recursive_mbd.analysis.models import _rod
from recursive_mbd.dynamics._evaluation import loaded_state
from recursive_mbd.dynamics.loops import FILTER_RCOND, POSITION_RCOND, loop_workspace

G = 9.81


def parallelograms(n):
    """n parallelograms in a row: n + 1 cranks (1 m, 1 kg rods) hinged to the ground 1 m apart, n couplers (the
    same rods) each hinged to the tip of crank k and closed by a revolute loop at the tip of crank k + 1. Cranks
    vertical at t = 0, crank tips at 1 m/s. q = (crank angles, coupler angles relative to their crank)."""
    model = rm.Model(gravity=(0.0, -G))
    for k in range(n + 1):
        _rod(model, "ground", (float(k), 0.0), 1.0, 1.0, f"crank{k}")
    for k in range(n):
        _rod(model, f"crank{k}", (0.5, 0.0), 1.0, 1.0, f"coupler{k}")
        model.add_loop("revolute", f"coupler{k}", (0.5, 0.0), f"crank{k + 1}", (0.5, 0.0), name=f"tip{k + 1}")
    q0 = np.r_[np.full(n + 1, np.pi / 2), np.full(n, -np.pi / 2)]
    qd0 = np.r_[np.ones(n + 1), -np.ones(n)]
    return model, q0, qd0


def check_parallelogram_run(res, n):
    """Energy within 1e-6 relative and every crank at the first crank's angle and rate, at every
    sample."""
    kinetic, potential = res.energy()
    total = kinetic + potential
    exact = (n + 1) / 3 * 0.5 + n * 0.5 + (3 * n + 1) * 0.5 * G  # E(0): w = 1, theta = pi/2
    assert total[0] == pytest.approx(exact, rel=1e-12)
    assert np.abs(total / total[0] - 1.0).max() < 1e-6
    cranks = slice(0, n + 1)
    assert np.abs(res.qd[:, cranks] - res.qd[:, :1]).max() < 1e-6
    assert np.abs(res.q[:, cranks] - res.q[:, :1]).max() < 1e-7
    assert res.constraint_drift.max() < 1e-9
    assert abs(res.q[-1, 0] - np.pi / 2) > 2 * np.pi  # it went round: through the change points, many times


@pytest.mark.parametrize("method", ["dopri5", "dop853"])
@pytest.mark.parametrize("tol", [1e-8, 1e-9, 1e-10, 1e-11, 1e-12])
def test_parallelogram_through_change_points_recursive(method, tol):
    """Energy within 1e-6 relative and the cranks at one rate (1e-6 rad/s) and angle, at every tolerance."""
    model, q0, qd0 = parallelograms(1)
    res = rm.simulate(model, q0, qd0, 20.0, method=method, rtol=tol, atol=tol)
    check_parallelogram_run(res, 1)


@pytest.mark.parametrize("formulation", ["recursive", "augmented"])
def test_parallelogram_dop853_from_starts_ulps_apart(formulation):
    """dop853 at rtol = atol = 1e-8 from fourteen starts a few ulps apart: energy within 1e-6 relative in each. The
    energy left that bound at the top of the turn, far from the change points, in one run in ten (up to 1.5e-6):
    DOP853's combined error estimate (Hairer, Norsett & Wanner I, II.10) squares the near-zeros of its fifth-order
    part, one such estimate (7e-5) let the step triple to 0.45 s, and that step's estimate fell into another (0.05,
    its true local error 10). The same steps, by the same estimator, on the parallelogram's one-degree-of-freedom
    equation theta'' = -6/5 g cos(theta) give the same errors: the loops play no part. The step now grows at most
    twice after a combined estimate (``_kernels.timeloops.integrators.COMBINED_MAX_GROWTH``)."""
    model, q0, qd0 = parallelograms(1)
    options = {"formulation": "augmented", "stabilization": "projection"} if formulation == "augmented" else {}
    for k in range(14):
        q = q0.copy()
        q[0] += k * np.spacing(q[0])  # k ulps: round-off steers the step sequence
        res = rm.simulate(model, q, qd0, 20.0, method="dop853", rtol=1e-8, atol=1e-8, **options)
        check_parallelogram_run(res, 1)
        steps = np.diff(res.t)[:-1]  # every accepted step; the last is cut to t_end
        assert (steps[1:] <= 2.0 * steps[:-1] * (1.0 + 1e-12)).all()


@pytest.mark.parametrize(("method", "tol"), [("dopri5", 1e-10), ("dop853", 1e-10), ("dop853", 1e-12)])
def test_five_parallelograms_through_change_points(method, tol):
    """The row of five over 20 s: energy within 1e-6 and crank rates within 1e-6 rad/s (issue 12). Near a change
    point the cranks need loop forces ~ 1 / distance (their moments stay finite); the filtered multiplier solve
    dropped them and the cranks split by up to 6e-5 rad/s there. The branch's normal space from displaced points
    (``_kernels.planar.loops.branch_normals``) keeps them. benchmarks/parallelogram_row.py runs the full grid."""
    model, q0, qd0 = parallelograms(5)
    res = rm.simulate(model, q0, qd0, 20.0, method=method, rtol=tol, atol=tol)
    check_parallelogram_run(res, 5)
    rates = res.qd[:, :6]
    near = np.abs(np.sin(res.q[:, 0])) < 2e-2  # samples near a change point, where the split was
    assert near.sum() >= 5
    assert np.abs(rates[near] - rates[near, :1]).max() < 1e-6


def test_twenty_parallelograms_through_change_points():
    """The row of twenty over 5 s with the defaults (dopri5, projection): energy within 1e-6, crank rates within
    1e-6 rad/s, in about 45 steps per simulated second as for the row of five. The zone of weak eigenvalues of J
    M^-1 J^T widens with the row (|theta| < ~1e-3 n), and the branch's displaced points stayed inside it: no branch
    was told, the filtered solve dropped the weak loop forces and the steps collapsed (~1300 steps per simulated
    second at n = 20, the cranks split by 1e-4 rad/s at n = 16)."""
    model, q0, qd0 = parallelograms(20)
    res = rm.simulate(model, q0, qd0, 5.0, max_steps=600)
    check_parallelogram_run(res, 20)
    assert res.nsteps < 300


def test_change_point_zone_is_banded_and_matches_the_dense_reference():
    """A row of twenty at 1e-4 rad from its change point: the branch's work uses the row's structure (a tangent
    basis of its one degree of freedom instead of the dense 40 x 41 normals, inertia counts and a banded
    regularised solve instead of eigen-decompositions, a sparse J M^-1 J^T) and gives the dense reference's
    results to round-off: the normals of ``branch_normals`` (QR, eigh), the branch's accelerations from them with
    M dense, the eigenvalue counts of eigvalsh and the filtered loop multipliers of eigh."""
    model, _, _ = parallelograms(20)
    n = 20
    theta = 1e-4  # cranks at theta, couplers level; the tips at 1 m/s
    q = np.r_[np.full(n + 1, theta), np.full(n, -theta)]
    qd = np.r_[np.ones(n + 1), -np.ones(n)]
    ws, lw = loop_workspace(model)
    q, qd, tau, wrench = loaded_state(model, ws, q, qd, None, 0.0)
    args = (model.body_int, model.body_real, model.loop_int, model.loop_real, lw.pattern, q, qd, ws.ws, ws.com, lw.acc,
            lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights, lw.resp, ws.zeros, lw.no_gravity, 1e-12, POSITION_RCOND,
            kernels.BRANCH_ZONE)
    normals = np.zeros((2 * n, 2 * n + 1))
    curvature = np.zeros(2 * n)
    status, rank = kernels.branch_normals(*args, normals, curvature)
    assert status == 0 and rank == 2 * n  # the dense route: the normals of the displaced points' projectors
    status, rank, tangent_route, tangent, normal_accel = kernels._branch_at(*args)
    assert status == 0 and rank == 2 * n and tangent_route and tangent.shape == (1, 2 * n + 1)
    assert np.abs(normals @ tangent.T).max() < 1e-12
    assert np.abs(tangent @ tangent.T - 1.0).max() < 1e-14
    assert np.abs(normal_accel - normals.T @ curvature).max() < 1e-12  # rad/s^2 (the row's branch is straight)
    # the time loops' dynamics on the branch against M qdd + h = tau - N^T mu, N qdd = curvature, M dense
    qdd = np.zeros(model.nq)
    status = kernels.constrained_dynamics(
        model.body_int, model.body_real, model.gravity, model.loop_int, model.loop_real, lw.pattern, q, qd, tau,
        wrench, ws.no_driven, ws.ws, ws.com, lw.acc, qdd, ws.no_drive, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights,
        lw.resp, lw.no_resp_drive, ws.zeros, lw.stab, FILTER_RCOND, lw.lam, lw.info,
        (kernels.BRANCH_ZONE, 1e-12, POSITION_RCOND))
    assert status == 0 and lw.info[0] == np.linalg.matrix_rank(lw.jac, tol=1e-4)
    mass = rm.mass_matrix(model, q)
    bias = rm.inverse_dynamics(model, q, qd, np.zeros(model.nq))  # h - gravity's joint forces: M qdd0 = -bias
    kkt = np.block([[mass, normals.T], [normals, np.zeros((2 * n, 2 * n))]])
    reference = np.linalg.solve(kkt, np.r_[-bias, curvature])[:model.nq]
    assert np.abs(qdd - reference).max() < 1e-12 * np.abs(reference).max()
    # the multipliers that give the branch's constraint force, as the filtered solve by eigh gives them
    jac = lw.jac.copy()
    normal = jac @ jac.T
    values, vectors = np.linalg.eigh(normal)
    mu = FILTER_RCOND * values[-1]
    fit = jac @ (-bias - mass @ qdd)  # J (M (qdd0 - qdd)): J of the constraint force
    filtered = vectors @ (np.where(values > 0.0, values / (values**2 + mu**2), 0.0) * (vectors.T @ fit))
    assert np.abs(lw.lam - filtered).max() < 1e-7 * np.abs(filtered).max()  # round-off times top / mu = 1e8
    # the eigenvalue counts of J M^-1 J^T by inertias, as eigvalsh counts them; its banded assembly
    gram = np.empty((2 * n, 2 * n))
    kernels.constraint_responses(model.body_int, model.body_real, q, jac, ws.no_driven, ws.ws, lw.resp,
                                 lw.no_resp_drive, ws.zeros, lw.no_gravity)
    kernels.gram_matrix(jac, lw.resp, gram)
    dense = jac @ lw.resp.T
    assert np.abs(gram - 0.5 * (dense + dense.T)).max() < 1e-14 * np.abs(dense).max()
    values = np.linalg.eigvalsh(gram)
    thresholds = np.array([kernels.BRANCH_ZONE, FILTER_RCOND, kernels.REDUNDANT])
    counts = np.zeros(3, dtype=np.int64)
    assert kernels.eigen_counts(gram, thresholds, counts) == pytest.approx(values[-1], rel=1e-12)
    assert list(counts) == [int((values > c * values[-1]).sum()) for c in thresholds]
    assert counts[0] < counts[2]  # weak eigenvalues: inside the change point's zone
    solved = np.zeros(2 * n)  # the filtered solve f(G) rhs by banded Givens rotations, as eigh gives it
    assert kernels.banded_filtered_solve(gram, np.ones(2 * n), FILTER_RCOND, solved, 0.0)
    values, vectors = np.linalg.eigh(gram)
    mu = FILTER_RCOND * values[-1]
    filtered = vectors @ (np.where(values > 0.0, values / (values**2 + mu**2), 0.0) * vectors.sum(axis=0))
    assert np.abs(solved - filtered).max() < 1e-6 * np.abs(filtered).max()  # round-off times top / mu, again


@pytest.mark.parametrize("theta", [1e-3, 1e-4])
def test_change_point_zone_solves_without_eigen_decompositions(theta):
    """In a change point's zone J M^-1 J^T is not surely regular, and two solves there took its eigen-decomposition,
    O(n^3) for a row of n (an evaluation in the zone grew as n^2 from n = 20 to 160): the Gauss-Newton steps that
    close the displaced points of the branch search (``close_loops``) and the augmented route's auxiliary solve
    (``add_auxiliary_rows``: a pseudo-inverse with a rank cut-off). They take banded factorisations now and give
    the eigen-decomposition's results to round-off: the closures' f(G) rhs by the banded regularised solve, the
    pseudo-inverse by a Cholesky factorisation where every eigenvalue is above the cut-off (counted by inertia),
    which is the case at 1e-3 rad from the change point of a row of twenty, not at 1e-4 rad (there the eigenvalue
    ratio is 2.6e-11)."""
    n = 20
    model, _, _ = parallelograms(n)
    q = np.r_[np.full(n + 1, theta), np.full(n, -theta)]
    ws, lw = loop_workspace(model)
    no_driven = np.zeros(0, dtype=np.uint8)
    assert kernels.loop_constraints(model.body_int, model.body_real, model.loop_int, model.loop_real, q, ws.zeros,
                                    ws.ws, ws.com, lw.acc, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights) == 0
    assert kernels.constraint_responses(model.body_int, model.body_real, q, lw.jac, no_driven, ws.ws, lw.resp,
                                        lw.no_resp_drive, ws.zeros, lw.no_gravity) == 0
    gram = np.empty((2 * n, 2 * n))
    kernels.gram_matrix(lw.jac, lw.resp, gram)
    values, vectors = np.linalg.eigh(gram)
    rhs = np.linspace(1.0, 2.0, 2 * n)
    solved = np.empty(2 * n)
    threshold = kernels.REGULAR_RCOND_MARGIN * POSITION_RCOND
    # surely regular at 1e-3 rad (a Cholesky factorisation, before as now), not at 1e-4 rad (eigenvalue ratio
    # 2.6e-11 against the test's 1e-9): there the closures took the eigen-decomposition before
    assert kernels.regular_solve(gram, rhs, threshold, solved) == (theta == 1e-3)
    first = np.empty(2 * n, dtype=np.int64)  # G's envelope, as its builder knows it
    kernels._envelope_first(gram, first)
    assert kernels._closure_solve(gram, first, rhs, POSITION_RCOND, solved)
    mu = POSITION_RCOND * values[-1]
    filtered = vectors @ (values / (values**2 + mu**2) * (vectors.T @ rhs))
    # round-off (a few eps) times the condition number top / min(s): 4e8 at 1e-3 rad, 4e10 at 1e-4 rad
    assert np.abs(solved - filtered).max() < 1e-15 * values[-1] / values[0] * np.abs(filtered).max()
    cutoff = 1e-10 * values[-1]  # the augmented route's rank cut-off (RCOND 1e-10 of the rows' scale)
    full_rank = values[0] > cutoff
    assert full_rank == (theta == 1e-3)
    assert kernels.cutoff_solve(gram, rhs, cutoff, solved) == full_rank
    if full_rank:
        inverse = vectors @ ((vectors.T @ rhs) / values)
        assert np.abs(solved - inverse).max() < 1e-15 * values[-1] / values[0] * np.abs(inverse).max()


def test_implicit_methods_name_the_change_point():
    """generalized_alpha solves the loop equations at the state itself: at the first change point of the row of
    five (t = 0.719 s, or the next at 1.238 s) its Newton iteration stalls, and the error says that the loops are
    at a change point and which methods follow the branch, with the samples so far kept."""
    model, q0, qd0 = parallelograms(5)
    with pytest.raises(rm.SimulationError, match="near a change point") as info:
        rm.simulate(model, q0, qd0, 1.5, method="generalized_alpha", dt=1e-3)
    assert "dopri5 or dop853" in str(info.value)
    assert min(abs(info.value.t - 0.719), abs(info.value.t - 1.238)) < 0.01  # at one of the first change points
    assert info.value.result.t[-1] < info.value.t


def simulate_augmented_row(n, method, tol, t_end):
    """The row of n through the absolute-coordinate route with projection to t_end: it gets there, with the energy
    within 1e-6 relative and every crank at the first crank's rate (1e-6 rad/s) and angle (1e-7 rad)."""
    model, q0, qd0 = parallelograms(n)
    res = rm.simulate(model, q0, qd0, t_end, method=method, rtol=tol, atol=tol, formulation="augmented",
                      stabilization="projection")
    assert res.t[-1] == t_end
    kinetic, potential = res.energy()
    total = kinetic + potential
    assert np.abs(total / total[0] - 1.0).max() < 1e-6
    cranks = slice(0, n + 1)
    assert np.abs(res.qd[:, cranks] - res.qd[:, :1]).max() < 1e-6
    assert np.abs(res.q[:, cranks] - res.q[:, :1]).max() < 1e-7
    return res


@pytest.mark.parametrize(("method", "tol", "t_end"), [("dop853", 1e-8, 20.0), ("dopri5", 1e-10, 2.5),
                                                       ("dop853", 1e-12, 2.5)])
def test_parallelogram_through_change_points_augmented(method, tol, t_end):
    """The absolute-coordinate route with projection (it raised at the first collinear passage, t = 0.708 s)."""
    res = simulate_augmented_row(1, method, tol, t_end)
    assert abs(res.q[-1, 0] - np.pi / 2) > np.pi  # past the first change points (theta = pi at t = 0.708 s)


@pytest.mark.parametrize(("method", "tol", "t_end"), [("dop853", 1e-8, 1.3), ("dopri5", 1e-10, 1.3),
                                                       ("dopri5", 1e-12, 1.3), ("dop853", 1e-12, 0.8)])
def test_five_parallelograms_augmented(method, tol, t_end):
    """The absolute-coordinate route with projection on the row of five, through its first change points (t =
    0.719 s, and 1.238 s): energy within 1e-6 and the crank rates within 1e-6 rad/s. They split by up to 1.6e-4
    rad/s at samples within ~2e-4 rad of a change point before the projection and the dynamics followed the
    branch there (``_kernels.augmented.system._branch``); benchmarks/parallelogram_row.py measures the
    full 20 s grid."""
    res = simulate_augmented_row(5, method, tol, t_end)
    assert res.constraint_drift.max() < 1e-9
    assert abs(res.q[-1, 0] - np.pi / 2) > np.pi / 2  # past the first change point (theta = pi at t = 0.719 s)


def test_twenty_parallelograms_augmented_defaults():
    """The row of twenty on the absolute-coordinate route with rm.simulate's tolerances (rtol 1e-9, atol 1e-12)
    through its first two change points (t = 0.721 and 1.243 s): energy within 1e-6, crank rates within 1e-6
    rad/s, in about 70 steps per simulated second. The branch used to be told in absolute coordinates, where the
    tree's joints curve it: the displaced points' closure was judged by a stale residual and went out ten times
    further, the extrapolated curvature erred by 1e-4 of the accelerations (the energy off by 2e-4 at the first
    change point, then ~1e-5 s steps); now the recursive layer tells it in joint coordinates."""
    n = 20
    model, q0, qd0 = parallelograms(n)
    res = rm.simulate(model, q0, qd0, 1.5, formulation="augmented", stabilization="projection", max_steps=200)
    assert res.t[-1] == 1.5
    kinetic, potential = res.energy()
    total = kinetic + potential
    assert np.abs(total / total[0] - 1.0).max() < 1e-6
    cranks = slice(0, n + 1)
    assert np.abs(res.qd[:, cranks] - res.qd[:, :1]).max() < 1e-6
    assert np.abs(res.q[:, cranks] - res.q[:, :1]).max() < 1e-7
    assert res.constraint_drift.max() < 1e-9
    assert res.q[-1, 0] > 2.0 * np.pi  # through both change points (theta = pi at 0.721 s, 2 pi at 1.243 s)
    assert res.nsteps < 150


@pytest.mark.parametrize("theta", [1e-4, 1e-3])
def test_augmented_change_point_zone_is_the_recursive_layers(theta):
    """The row of twenty near its change point on the absolute-coordinate route (projection): its dynamics on the
    branch are the recursive time loops' (the same equations, solved by the recursive layer at the joint state:
    the branch's tangent and banded solves, O(n) an evaluation, where the branch's normal rows on z, their dense
    SVDs and their Schur complement took O(n^3)): the same joint accelerations and the same loop multipliers,
    those fitted to the branch's constraint force. The multipliers were the filtered solve's at the state, which
    drops the weak rows: 5e3 against 14.5 at 1e-4 rad, 67 % off at 1e-3 rad. The loops' Schur complement
    E H^-1 E^T, a tree solve per colour of rows on disjoint subtrees (4 for the 40 rows), equals the dense one."""
    from recursive_mbd._kernels.augmented import system as augmented_system  # noqa: PLC0415
    from recursive_mbd.dynamics.augmented import TimeLoop  # noqa: PLC0415
    from recursive_mbd.integrate.runs import _Inputs  # noqa: PLC0415

    n = 20
    model, _, _ = parallelograms(n)
    q = np.r_[np.full(n + 1, theta), np.full(n, -theta)]  # cranks at theta, couplers level; the tips at 1 m/s
    qd = np.r_[np.ones(n + 1), -np.ones(n)]
    ws, lw = loop_workspace(model)
    q, qd, tau, wrench = loaded_state(model, ws, q, qd, None, 0.0)
    qdd = np.zeros(model.nq)
    status = kernels.constrained_dynamics(
        model.body_int, model.body_real, model.gravity, model.loop_int, model.loop_real, lw.pattern, q, qd, tau,
        wrench, ws.no_driven, ws.ws, ws.com, lw.acc, qdd, ws.no_drive, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights,
        lw.resp, lw.no_resp_drive, ws.zeros, lw.stab, FILTER_RCOND, lw.lam, lw.info,
        (kernels.BRANCH_ZONE, 1e-13, POSITION_RCOND))  # the augmented route's projection tolerance, 1e-13
    assert status == 0
    inputs = _Inputs(model, None, None)
    callback, key = inputs.callback()
    system = TimeLoop(model, inputs, "projection").system
    z, zd = rm.augmented.absolute_from_joint(model, q, qd)
    y = np.r_[z.ravel(), zd.ravel(), 0.0, 0.0]
    dy = np.empty_like(y)
    assert augmented_system.system_rhs(callback, key, system, 0.0, y, dy) == 0
    assert augmented_system._near_change_point(system) == (True, n)  # in the zone: n of the 2n rows are weak
    nb = model.nbodies
    qdd_augmented = rm.augmented.joint_accelerations(model, z, zd, dy[3 * nb:6 * nb].reshape(nb, 3))
    assert np.abs(qdd_augmented - qdd).max() < 1e-12 * np.abs(qdd).max()
    first = int(system.row_start[-1])
    np.testing.assert_allclose(system.lam[first:first + 2 * n], lw.lam, rtol=0.0, atol=1e-9 * np.abs(lw.lam).max())
    # E H^-1 E^T against the dense KKT matrix of the joints' rows, H = [[M, C^T], [C, 0]]
    _, cz, _, _ = rm.augmented.constraints(model, z, zd)
    cz = cz.toarray()
    joints, loop_rows = cz[:first], cz[first:]
    kkt = np.block([[rm.augmented.mass_matrix(model).toarray(), joints.T], [joints, np.zeros((first, first))]])
    responses = np.linalg.solve(kkt, np.r_[loop_rows.T, np.zeros((first, 2 * n))])[:3 * nb]
    dense = loop_rows @ responses
    assert np.abs(system.schur - 0.5 * (dense + dense.T)).max() < 1e-12 * np.abs(dense).max()


def test_mass_orthogonal_velocity_projection_keeps_the_admissible_part():
    """loops.project removes exactly the M-orthogonal complement of the admissible velocities: the projected qd
    is the admissible one of least kinetic-energy distance, so T drops by the energy of the removed part."""
    model, q0, _ = parallelograms(1)
    q = q0 + np.array([0.3, 0.3, -0.3])  # on the parallelogram branch, away from the change points
    drift = np.array([0.2, -0.1, 0.05])
    admissible = np.array([1.0, 1.0, -1.0])
    _, qd, _ = rm.loops.project(model, q, admissible + drift)
    mass = rm.mass_matrix(model, q)
    # qd = c * admissible, and (qd - (admissible + drift)) is M-orthogonal to the admissible direction
    c = (admissible @ mass @ (admissible + drift)) / (admissible @ mass @ admissible)
    np.testing.assert_allclose(qd, c * admissible, rtol=1e-12, atol=1e-14)


def test_kinematic_analysis_through_the_change_point():
    """Crank 0 driven at -pi/2 rad/s from vertical through the collinear change point (t = 1) to vertical down:
    the parallelogram branch throughout, with the closed-form driving torque 2 g cos(theta) (theta'' = 0)."""
    model, q0, _ = parallelograms(1)
    times = np.linspace(0.0, 2.0, 41)  # t = 1 is the change point itself
    rate = -np.pi / 2
    drive = (lambda t: np.pi / 2 + rate * t, lambda t: rate, lambda t: 0.0)
    res = rm.kinematic_analysis(model, {"crank0": drive}, times, q_guess=q0)
    theta = np.pi / 2 + rate * times
    np.testing.assert_allclose(res.q, np.column_stack((theta, theta, -theta)), atol=1e-9)
    np.testing.assert_allclose(res.qd, np.tile([rate, rate, -rate], (times.size, 1)), atol=1e-9)
    np.testing.assert_allclose(res.qdd, 0.0, atol=1e-8)
    np.testing.assert_allclose(res.driving_forces[:, 0], 2 * G * np.cos(theta), atol=1e-7)


@pytest.mark.parametrize("times", [np.linspace(0.0, 1.0, 41), np.linspace(0.0, 1.0, 401), np.linspace(0.0, 1.0, 4001),
                                   np.array([0.0, 0.1, 0.2, 0.25 + 1e-11, 0.3, 0.5])])
def test_kinematic_analysis_passes_a_change_point_between_samples(times):
    """four_bar(2, 1, 2, 1) is a parallelogram (rods of 1 kg/m): its crank driven at -2 rad/s from 0.5 rad passes
    the change point theta = 0 at t = 0.25, where no sample need fall (the velocities from J at a sample 1e-14 rad
    off it were the crossing branch's, the accelerations 6e14; ModelError at t = 0.2525 with 401 samples). On the
    parallelogram branch the coupler keeps its angle and the rocker the crank's, q = (theta, -theta, theta), and
    the driving torque balances gravity alone, 3 g cos(theta); the loop forces grow like 1 / |theta| there."""
    model, q0 = rm.models.four_bar(ground=2.0, crank=1.0, coupler=2.0, rocker=1.0, crank_angle=0.5)
    rate = -2.0
    res = rm.kinematic_analysis(model, {"crank": (lambda t: 0.5 + rate * t, lambda t: rate, lambda t: 0.0)}, times,
                                q_guess=q0)
    theta = 0.5 + rate * times
    np.testing.assert_allclose(res.q, np.column_stack((theta, -theta, theta)), rtol=0, atol=1e-11)
    np.testing.assert_allclose(res.qd, np.tile([rate, -rate, rate], (times.size, 1)), rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.qdd, 0.0, atol=1e-6)
    np.testing.assert_allclose(res.driving_forces[:, 0], 3 * G * np.cos(theta), rtol=0, atol=1e-7)
    assert max(np.abs(rm.loops.constraints(model, q)[0]).max() for q in res.q) < 1e-12


@pytest.mark.parametrize("method", ["dopri5", "dop853"])
def test_triple_rocker_driven_into_its_lock(method):
    """A non-Grashof four-bar (ground 2, input 1.5, coupler 1, rocker 1.2 m: 1 + 2 > 1.5 + 1.2) with its input
    rocker driven at 1 rad/s from 1 rad: it locks when coupler and rocker stretch into a line, |B - D| = 2.2 m,
    cos(theta_lock) = (1.5^2 + 2^2 - 2.2^2) / (2 1.5 2)."""
    ground, crank, coupler, rocker = 2.0, 1.5, 1.0, 1.2
    model, q0 = rm.models.four_bar(ground, crank, coupler, rocker, crank_angle=1.0)
    t_lock = np.arccos((crank**2 + ground**2 - (coupler + rocker) ** 2) / (2 * crank * ground)) - 1.0
    drive = (lambda t: 1.0 + t, lambda t: 1.0, lambda t: 0.0)
    with pytest.raises(rm.SimulationError, match="locks: loop 'coupler-rocker'") as info:
        rm.simulate(model, q0, np.zeros(3), 1.0, method=method, drivers={"crank": drive}, rtol=1e-10, atol=1e-10)
    err = info.value
    assert err.t == pytest.approx(t_lock, abs=1e-7)
    assert err.result.t[-1] == pytest.approx(t_lock, abs=1e-7)
    assert err.result.t.size > 10 and err.result.constraint_drift.max() < 1e-9  # the samples up to the lock


def test_redundant_loops_warn_once_in_both_formulations():
    """Three parallel cranks on one coupler: 4 loop equations of rank 3. One warning per run, and the augmented
    route (which raised: singular KKT) runs and follows the recursive one."""
    model, q, qd = three_parallel_cranks()
    runs = {}
    for formulation in ("recursive", "augmented"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            runs[formulation] = rm.simulate(model, q, qd, 1.0, rtol=1e-10, atol=1e-12, formulation=formulation,
                                            stabilization="projection", t_eval=[0.5, 1.0])
        redundant = [w for w in caught if issubclass(w.category, rm.RedundantConstraintWarning)]
        assert len(redundant) == 1, formulation
        assert redundant[0].filename == __file__
    np.testing.assert_allclose(runs["augmented"].q, runs["recursive"].q, atol=1e-8)
    np.testing.assert_allclose(runs["augmented"].qd, runs["recursive"].qd, atol=1e-8)
