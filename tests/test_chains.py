"""Serial chains: recursive forward dynamics against Takeno's closed form (seed 001, eqs. 18-22)."""

import numpy as np
import pytest
from conftest import rel_err

import recursive_mbd as rm
from recursive_mbd.model import chains

G = 9.81


def _random_chain_state(n, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, n), rng.normal(size=n) * 2.0


@pytest.mark.parametrize("n", [1, 2, 3, 10, 50, 200])
def test_recursive_matches_takeno_closed_form(n):
    model = chains.serial_chain(n, length=1.0, mass=1.0, gravity=G)
    for seed in range(5):
        q, qd = _random_chain_state(n, seed)
        qdd = rm.forward_dynamics(model, q, qd)
        theta_ddot = chains.takeno_forward_dynamics(chains.relative_to_absolute(q), chains.relative_to_absolute(qd),
                                                    np.full(n, 1.0 / n), density=1.0, gravity=G)
        assert rel_err(chains.relative_to_absolute(qdd), theta_ddot) < 1e-10


@pytest.mark.parametrize("n", [1, 2, 3, 10, 20])
def test_mass_matrix_route_matches_takeno(n):
    model = chains.serial_chain(n)
    q, qd = _random_chain_state(n, 7)
    qdd = rm.forward_dynamics(model, q, qd, method="mass_matrix")
    theta_ddot = chains.takeno_forward_dynamics(chains.relative_to_absolute(q), chains.relative_to_absolute(qd),
                                                np.full(n, 1.0 / n))
    assert rel_err(chains.relative_to_absolute(qdd), theta_ddot) < 1e-10


def test_rods_of_different_lengths_and_joint_torques():
    rng = np.random.default_rng(3)
    lengths = rng.uniform(0.1, 1.0, 12)
    density = 2.5
    model = chains.rod_chain(lengths, density=density, gravity=G)
    q, qd = _random_chain_state(12, 11)
    tau = rng.normal(size=12)
    qdd = rm.forward_dynamics(model, q, qd, tau)
    theta_ddot = chains.takeno_forward_dynamics(chains.relative_to_absolute(q), chains.relative_to_absolute(qd),
                                                lengths, density=density, gravity=G, tau=tau)
    assert rel_err(chains.relative_to_absolute(qdd), theta_ddot) < 1e-10


def test_double_pendulum_eq19_by_hand():
    # seed 001 eq. (19), two equal rods of length l, divided by rho l^2
    ell = 0.5
    model = chains.serial_chain(2, length=2 * ell, mass=3.0, gravity=G)
    q, qd = np.array([0.7, -1.9]), np.array([1.3, -0.4])
    t1, t2 = q[0], q[0] + q[1]
    w1, w2 = qd[0], qd[0] + qd[1]
    c, s = np.cos(t1 - t2), np.sin(t1 - t2)
    a_mat = np.array([[4 / 3, 0.5 * c], [0.5 * c, 1 / 3]])
    rhs = -np.array([0.5 * w2**2 * s + 1.5 * G / ell * np.sin(t1), -0.5 * w1**2 * s + 0.5 * G / ell * np.sin(t2)])
    expected = np.linalg.solve(a_mat, rhs)
    qdd = rm.forward_dynamics(model, q, qd)
    assert rel_err([qdd[0], qdd[0] + qdd[1]], expected) < 1e-12


def test_hanging_chain_is_an_equilibrium_and_conventions():
    model = chains.serial_chain(5, length=2.0, mass=3.0)
    assert model.nq == model.nbodies == 5
    assert model.body_names == ("link1", "link2", "link3", "link4", "link5")
    np.testing.assert_allclose(model.body_mass, 0.6)
    np.testing.assert_allclose(model.body_inertia, 0.6 * 0.4**2 / 12)
    assert np.max(np.abs(rm.forward_dynamics(model, np.zeros(5), np.zeros(5)))) == 0.0
    poses, _ = rm.forward_kinematics(model, np.zeros(5))
    np.testing.assert_allclose(poses[:, 0], 0.0, atol=1e-15)
    np.testing.assert_allclose(poses[:, 1], -0.2 - 0.4 * np.arange(5), atol=1e-14)
    # rod 1 swung to the horizontal (q1 = pi/2): its tip at (+0.4, 0)... counter-clockwise from straight down
    q = np.zeros(5)
    q[0] = np.pi / 2
    tip, _ = rm.point_kinematics(model, q, np.zeros(5), "link1", (0.0, -0.2))
    np.testing.assert_allclose(tip, [0.4, 0.0], atol=1e-15)


def test_tip_of_a_long_chain_against_an_extended_precision_sum():
    # seed 001 eq. (1): the tip is sum_k l p(theta_k), p(theta) = (sin theta, -cos theta)
    n = 100_000
    model = chains.serial_chain(n, length=1.0, mass=1.0)
    q = np.random.default_rng(5).uniform(-0.3, 0.3, n)
    theta = np.cumsum(q.astype(np.longdouble))
    expected = np.array([np.sum(np.sin(theta)), -np.sum(np.cos(theta))], dtype=float) / n
    tip, _ = rm.point_kinematics(model, q, np.zeros(n), f"link{n}", (0.0, -0.5 / n))
    np.testing.assert_allclose(tip, expected, rtol=0, atol=1e-12)


def test_relative_absolute_conversion_round_trip():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(4, 9))
    np.testing.assert_allclose(chains.absolute_to_relative(chains.relative_to_absolute(q)), q, atol=1e-14)
    np.testing.assert_allclose(chains.relative_to_absolute(q)[:, -1], q.sum(axis=1), rtol=1e-14)


@pytest.mark.parametrize("n", [1, 2, 5, 30])
def test_mass_matrix_equals_takeno_a_matrix(n):
    # eq. (18) row j is rod j's moment equation divided by rho l_j, so rho diag(l) A(theta) is the mass matrix in
    # absolute angles; with theta = T q (T lower-triangular ones) the joint-space one is T' rho diag(l) A T
    rng = np.random.default_rng(n)
    lengths = rng.uniform(0.2, 1.0, n)
    density = 1.7
    model = chains.rod_chain(lengths, density=density)
    q = rng.uniform(-np.pi, np.pi, n)
    a_mat, _, _ = chains.takeno_matrices(chains.relative_to_absolute(q), lengths)
    lower = np.tril(np.ones((n, n)))
    expected = lower.T @ (density * lengths[:, None] * a_mat) @ lower
    assert rel_err(rm.mass_matrix(model, q), expected) < 1e-13
