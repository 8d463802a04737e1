"""Random trees with every joint type: the formulations against each other and against identities."""

import numba
import numpy as np
import pytest
from conftest import (
    TREE_SPECS,
    build,
    coordinate_slices,
    random_state,
    random_topological_order,
    random_tree_spec,
    rel_err,
)

import recursive_mbd as rm

pytestmark = pytest.mark.boundscheck  # also run under NUMBA_BOUNDSCHECK=1 in CI (.ci/run)

SPECS = TREE_SPECS


def _cases():
    for index, spec in enumerate(SPECS):
        yield pytest.param(index, id=f"tree{index}-{len(spec)}bodies")


@pytest.fixture(scope="module")
def models(tree_models):
    return tree_models


def test_random_trees_cover_every_joint_type():
    kinds = {body["joint"] for spec in SPECS for body in spec}
    assert kinds == {"revolute", "prismatic", "fixed", "planar"}
    assert max(len(spec) for spec in SPECS) >= 35


@pytest.mark.parametrize("index", range(len(SPECS)))
def test_recursive_equals_mass_matrix_and_identities(models, index):
    model = models[index]
    if model.nq == 0:
        pytest.skip("only fixed joints: nothing moves")  # not expected with these seeds; checked below
    q, qd, tau = random_state(model, index)
    qdd = rm.forward_dynamics(model, q, qd, tau)
    qdd_mm = rm.forward_dynamics(model, q, qd, tau, method="mass_matrix")
    assert rel_err(qdd, qdd_mm) < 1e-9

    # inverse of forward dynamics
    assert rel_err(rm.inverse_dynamics(model, q, qd, qdd), tau) < 1e-9

    # M qdd + h = tau, M symmetric positive definite, T = 1/2 qd' M qd
    mass = rm.mass_matrix(model, q)
    assert rel_err(mass @ qdd + rm.bias_forces(model, q, qd), tau) < 1e-9
    assert np.max(np.abs(mass - mass.T)) <= 1e-13 * np.max(np.abs(mass))
    assert np.linalg.eigvalsh(mass).min() > 0.0
    np.linalg.cholesky(mass)
    kinetic, _ = rm.energy(model, q, qd)
    assert abs(kinetic - 0.5 * qd @ mass @ qd) <= 1e-12 * max(kinetic, 1.0)


def test_no_tree_is_motionless(models):
    assert all(model.nq > 0 for model in models)


@pytest.mark.parametrize("index", range(0, len(SPECS), 4))
def test_power_balance_by_central_differences(models, index):
    # d(T + V)/dt = qd . tau along the motion, derivatives by central differences of the energy routine
    model = models[index]
    q, qd, tau = random_state(model, 1000 + index)
    qdd = rm.forward_dynamics(model, q, qd, tau)

    def total_energy(step):  # along the line through (q, qd) with the motion's tangent (qd, qdd)
        return sum(rm.energy(model, q + step * qd, qd + step * qdd))

    h = 1e-3  # 4th-order central stencil: truncation ~h^4, round-off ~eps E / h
    power = (-total_energy(2 * h) + 8 * total_energy(h) - 8 * total_energy(-h) + total_energy(-2 * h)) / (12 * h)
    kinetic, _ = rm.energy(model, q, qd)
    scale = max(abs(qd @ tau), kinetic, 1.0)
    assert abs(power - qd @ tau) <= 1e-8 * scale


@pytest.mark.parametrize("index", range(0, len(SPECS), 5))
def test_renumbered_tree_gives_the_same_physics(models, index):
    spec = SPECS[index]
    rng = np.random.default_rng(index)
    order = random_topological_order(rng, spec)
    original, renumbered = models[index], build(spec, order)
    q, qd, tau = random_state(original, 77 + index)
    old_slices, new_slices = coordinate_slices(spec), coordinate_slices(spec, order)
    permute = np.concatenate([np.arange(original.nq)[old_slices[old]] for old in order]).astype(int)
    qdd = rm.forward_dynamics(original, q, qd, tau)
    qdd_new = rm.forward_dynamics(renumbered, q[permute], qd[permute], tau[permute])
    for old in range(len(spec)):
        np.testing.assert_allclose(qdd_new[new_slices[old]], qdd[old_slices[old]], rtol=0,
                                   atol=1e-10 * np.max(np.abs(qdd)))
    poses, _ = rm.forward_kinematics(original, q, qd)
    poses_new, _ = rm.forward_kinematics(renumbered, q[permute], qd[permute])
    np.testing.assert_allclose(poses_new, poses[order], atol=1e-12)
    assert rm.energy(renumbered, q[permute], qd[permute]) == pytest.approx(rm.energy(original, q, qd), rel=1e-12)


@pytest.mark.parametrize("index", range(0, len(SPECS), 10))
def test_point_velocity_is_the_derivative_of_point_position(models, index):
    model = models[index]
    q, qd, _ = random_state(model, 5 + index)
    h = 1e-6
    body = model.nbodies - 1
    point = np.array([0.3, -0.7])
    _, velocity = rm.point_kinematics(model, q, qd, body, point)
    plus, _ = rm.point_kinematics(model, q + h * qd, qd, body, point)
    minus, _ = rm.point_kinematics(model, q - h * qd, qd, body, point)
    np.testing.assert_allclose(velocity, (plus - minus) / (2 * h), rtol=1e-6, atol=1e-7)
    poses, vels = rm.forward_kinematics(model, q, qd)
    poses_plus, _ = rm.forward_kinematics(model, q + h * qd)
    poses_minus, _ = rm.forward_kinematics(model, q - h * qd)
    np.testing.assert_allclose(vels, (poses_plus - poses_minus) / (2 * h), rtol=1e-6, atol=1e-7)


def test_joint_definitions_hold_geometrically():
    # revolute: the two joint points coincide; prismatic: child point = parent point + q axis, angle fixed
    model = rm.Model()
    model.add_body(joint="revolute", parent_point=(0.2, 0.1), child_point=(0.0, 0.5), mass=1, inertia=0.1, name="a")
    model.add_body(parent="a", joint="prismatic", parent_point=(0.3, -0.2), child_point=(0.1, 0.1), axis=(3, 4),
                   angle=0.4, mass=1, inertia=0.1, name="b")
    model.add_body(parent="b", joint="planar", parent_point=(0.0, 0.0), child_point=(0.2, 0.0), angle=-0.3,
                   mass=1, inertia=0.1, name="c")
    model.add_body(parent="c", joint="fixed", parent_point=(0.5, 0.0), child_point=(-0.1, 0.0), angle=1.0,
                   mass=1, inertia=0.1, name="d")
    q = np.array([0.8, 0.25, 0.1, -0.2, 0.6])
    poses, _ = rm.forward_kinematics(model, q)
    zero = np.zeros(5)
    pa, _ = rm.point_kinematics(model, q, zero, "a", (0.0, 0.5))
    np.testing.assert_allclose(pa, [0.2, 0.1], atol=1e-15)
    assert poses[0, 2] == pytest.approx(0.8)
    pb, _ = rm.point_kinematics(model, q, zero, "b", (0.1, 0.1))
    on_a, _ = rm.point_kinematics(model, q, zero, "a", np.array([0.3, -0.2]) + 0.25 * np.array([0.6, 0.8]))
    np.testing.assert_allclose(pb, on_a, atol=1e-15)
    assert poses[1, 2] == pytest.approx(0.8 + 0.4)
    pc, _ = rm.point_kinematics(model, q, zero, "c", (0.2, 0.0))
    on_b, _ = rm.point_kinematics(model, q, zero, "b", (0.1, -0.2))
    np.testing.assert_allclose(pc, on_b, atol=1e-15)
    assert poses[2, 2] == pytest.approx(1.2 - 0.3 + 0.6)
    pd, _ = rm.point_kinematics(model, q, zero, "d", (-0.1, 0.0))
    on_c, _ = rm.point_kinematics(model, q, zero, "c", (0.5, 0.0))
    np.testing.assert_allclose(pd, on_c, atol=1e-15)
    assert poses[3, 2] == pytest.approx(1.5 + 1.0)


def _central(func, x, direction, step=1e-3):
    """4th-order central difference of func along direction at x."""
    return (-func(x + 2 * step * direction) + 8 * func(x + step * direction) - 8 * func(x - step * direction)
            + func(x - 2 * step * direction)) / (12 * step)


@pytest.mark.parametrize("index", range(0, len(SPECS), 8))
def test_bias_forces_equal_lagrange_equations_from_mass_matrix_and_potential(models, index):
    # h = Mdot qd - 1/2 d(qd' M qd)/dq + dV/dq, built from M(q) and V(q) alone (no velocity-product kernel code)
    model = models[index]
    q, qd, _ = random_state(model, 300 + index)
    nq = model.nq
    zero = np.zeros(nq)
    mdot = _central(lambda x: rm.mass_matrix(model, x), q, qd)
    expected = mdot @ qd
    for k in range(nq):
        unit = np.eye(nq)[k]
        expected[k] -= 0.5 * _central(lambda x: qd @ rm.mass_matrix(model, x) @ qd, q, unit)
        expected[k] += _central(lambda x: rm.energy(model, x, zero)[1], q, unit)
    assert rel_err(rm.bias_forces(model, q, qd), expected) < 1e-7


def assert_bit_for_bit(actual, expected):
    """Equal bit for bit, as the optimised kernels are; under NUMBA_BOUNDSCHECK=1 (the CI's second run, whose
    code generation differs kernel by kernel) equal to round-off."""
    if numba.config.BOUNDSCHECK:
        assert rel_err(actual, expected) < 1e-13
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("seed", range(6))
def test_all_revolute_kernel_equals_the_general_passes_bit_for_bit(seed):
    """Models whose joints are all revolute take the specialised passes (flag ALL_REVOLUTE on body 0), serial chains
    among them their own (flag SERIAL_REVOLUTE); with the flags cleared the same arrays take the general passes:
    qdd and the condensed gains agree bit for bit over the three routes, with and without an external wrench, on
    random trees, on a serial chain of identical rods and on serial chains of random bodies (whose route leaves
    the orientations of pass 1 in the workspace, bit for bit those of the general pass 1)."""
    from recursive_mbd._kernels import layout as L  # noqa: PLC0415
    from recursive_mbd._kernels.planar import tree  # noqa: PLC0415
    from recursive_mbd.dynamics.kinematics import _com_state  # noqa: PLC0415
    from recursive_mbd.model.workspace import workspace  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    spec = [dict(body, joint="revolute", axis=None) for body in random_tree_spec(rng, int(rng.integers(1, 30)))]
    chain_spec = [dict(body, joint="revolute", axis=None, parent=i - 1, angle=float(rng.uniform(-4.0, 4.0)))
                  for i, body in enumerate(random_tree_spec(rng, int(rng.integers(2, 40))))]
    models = [build(spec), rm.chains.serial_chain(int(rng.integers(2, 40))).compile(), build(chain_spec)]
    mixed = build(TREE_SPECS[seed])
    assert not mixed.body_int[0, L.FLAGS] & (L.ALL_REVOLUTE | L.SERIAL_REVOLUTE)
    for model in models:
        assert model.body_int[0, L.FLAGS] & L.ALL_REVOLUTE
        serial = np.array_equal(model.body_int[:, L.PARENT], np.arange(model.nbodies) - 1)
        assert bool(model.body_int[0, L.FLAGS] & L.SERIAL_REVOLUTE) == serial
        assert not np.any(model.body_int[1:, L.FLAGS] & (L.ALL_REVOLUTE | L.SERIAL_REVOLUTE))
        general = np.array(model.body_int, order="F")
        general[0, L.FLAGS] &= ~(L.ALL_REVOLUTE | L.SERIAL_REVOLUTE)
        revolute_tree = np.array(model.body_int, order="F")
        revolute_tree[0, L.FLAGS] &= ~L.SERIAL_REVOLUTE
        for copy in (general, revolute_tree):  # read-only as the model's own: one compiled specialisation serves all
            copy.setflags(write=False)
        ws = workspace(model)
        q, qd, tau = random_state(model, seed)
        q[::3] *= 1e6  # relative angles beyond the inline range reduction (libm's) too
        # the serial route keeps the orientations in the workspace (pass 1 of every row) and not the geometry;
        # those of the general pass 1 (through com_kinematics, which forward_kinematics compiles anyway)
        _, _, cos_theta, sin_theta, omega = _com_state(model, q, qd)
        for wrench in (ws.no_wrench, rng.normal(size=(model.nbodies, 3))):
            results = []
            for body_int in (model.body_int, general, revolute_tree):
                qdd = np.empty(model.nq)
                ws.ws[:] = np.nan
                status = tree.forward_dynamics(body_int, model.body_real, model.gravity, q, qd, tau, wrench,
                                               ws.no_driven, ws.ws, qdd, ws.no_drive)
                assert status == 0
                results.append((qdd, ws.ws[:, [L.U1, L.U1 + 1, L.U1 + 2, L.UU]].copy()))
                if serial and body_int is model.body_int:
                    assert_bit_for_bit(ws.ws[:, [L.CS, L.SN, L.OM]], np.column_stack([cos_theta, sin_theta, omega]))
            for other in results[1:]:
                assert_bit_for_bit(results[0][0], other[0])
                assert_bit_for_bit(results[0][1], other[1])
            # and all are the dynamics: M qdd + h = tau + J^T wrench, checked through the mass-matrix route
            if wrench is ws.no_wrench:
                reference = rm.forward_dynamics(model, q, qd, tau, method="mass_matrix")
                assert rel_err(results[0][0], reference) < 1e-9


def test_serial_route_reports_the_statuses_of_the_general_passes():
    """The serial route checks q, qd and tau by probes inside its passes, not by a sweep before them: every bad
    input must still be named as the general passes name it (the first non-finite entry of q, then qd, then tau),
    and an overflow likewise."""
    from recursive_mbd._kernels import layout as L  # noqa: PLC0415
    from recursive_mbd._kernels.planar import tree  # noqa: PLC0415
    from recursive_mbd.model.workspace import workspace  # noqa: PLC0415

    model = rm.chains.serial_chain(7).compile()
    assert model.body_int[0, L.FLAGS] & L.SERIAL_REVOLUTE
    general = np.array(model.body_int, order="F")
    general[0, L.FLAGS] &= ~(L.ALL_REVOLUTE | L.SERIAL_REVOLUTE)
    general.setflags(write=False)
    ws = workspace(model)
    q, qd, tau = random_state(model, 7)
    cases = []
    for which in range(3):
        for index, value in ((0, np.nan), (3, np.inf), (6, -np.inf)):
            state = [q.copy(), qd.copy(), tau.copy()]
            state[which][index] = value
            state[which][(index + 4) % 7] = np.nan  # a second bad entry: the first is named
            cases.append(state)
    cases.append([np.where(np.arange(7) == 5, np.nan, q), qd, np.where(np.arange(7) == 0, np.nan, tau)])  # q first
    cases.append([q, np.full(7, 1e200), tau])  # finite inputs, overflowing rates
    statuses = []
    for state in cases:
        found = []
        for body_int in (model.body_int, general):
            qdd = np.empty(7)
            found.append(tree.forward_dynamics(body_int, model.body_real, model.gravity, *state, ws.no_wrench,
                                               ws.no_driven, ws.ws, qdd, ws.no_drive))
        assert found[0] == found[1] != 0, (state, found)
        statuses.append(found[0])
    kinds = {L.decode_status(status)[0] for status in statuses}
    assert kinds == {L.STATUS_NONFINITE_Q, L.STATUS_NONFINITE_QD, L.STATUS_NONFINITE_TAU, L.STATUS_OVERFLOW}
    with pytest.raises(rm.StateError, match=r"tau\[3\] is not finite"):
        rm.forward_dynamics(model, q, qd, np.where(np.arange(7) == 3, np.inf, tau))
