"""Static equilibrium, linearisation and modes against hand solutions, closed forms and simulation."""

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize
from conftest import rel_err

import recursive_mbd as rm
from recursive_mbd.analysis import analyses as analysis


def compound_pendulum(mass=2.0, inertia=0.1, d=0.4):
    model = rm.Model()
    model.add_body("ground", "revolute", (0, 0), (0, d), mass=mass, inertia=inertia, name="pendulum")
    return model


def test_static_equilibrium_of_a_pendulum_with_a_torsional_spring():
    m, d, k, rest, g = 2.0, 0.4, 20.0, 0.5, 9.81
    model = compound_pendulum(m, 0.1, d)
    model.add_joint_spring_damper("pendulum", k, rest=rest)
    eq = rm.static_equilibrium(model, [0.0])
    hand = scipy.optimize.brentq(lambda q: k * (q - rest) + m * g * d * math.sin(q), -1.0, 1.0, xtol=1e-15)
    assert abs(eq.q[0] - hand) < 1e-12
    assert eq.stable and eq.method == "newton"
    # the hinge carries the weight; its moment is the spring torque that holds the pendulum
    np.testing.assert_allclose(eq.reactions.joint[0], [0.0, m * g, -k * (hand - rest)], atol=1e-9)
    # upside down without a spring: an unstable equilibrium is found and reported as such
    bare = compound_pendulum(m, 0.1, d)
    top = rm.static_equilibrium(bare, [3.0], prefer_stable=False)
    assert abs(top.q[0] - math.pi) < 1e-12 and not top.stable
    hanging = rm.static_equilibrium(bare, [3.0])  # by default a stable equilibrium is preferred
    assert abs(math.remainder(hanging.q[0], 2 * math.pi)) < 1e-10 and hanging.stable and hanging.method == "energy"


def test_compound_pendulum_frequency():
    m, inertia, d, g = 2.0, 0.1, 0.4, 9.81
    omega, shape = rm.modes(compound_pendulum(m, inertia, d), [0.0])
    assert abs(omega[0] - math.sqrt(m * g * d / (inertia + m * d * d))) < 1e-12
    assert shape.shape == (1, 1)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_rod_chain_frequencies_from_takeno_linearised(n):
    """K v = w^2 M v against seed 001's eq. (22) linearised at rest: A(0) theta'' + g diag(L) theta = 0."""
    lengths = np.linspace(1.0, 0.5, n)
    chain = rm.chains.rod_chain(lengths)
    a_mat, _, lever = rm.chains.takeno_matrices(np.zeros(n), lengths)
    # rows of eq. (22) are divided by rho l_j, so A is not symmetric: the eigenvalues of A^-1 g diag(L)
    expected = np.sqrt(np.sort(np.linalg.eigvals(np.linalg.solve(a_mat, 9.81 * np.diag(lever))).real))
    omega, shapes = rm.modes(chain, np.zeros(n))
    assert rel_err(omega, expected) < 1e-10
    if n == 1:
        assert abs(omega[0] - math.sqrt(3 * 9.81 / 2)) < 1e-12
    # M-normalised mode shapes
    mass = rm.mass_matrix(chain, np.zeros(n))
    np.testing.assert_allclose(shapes.T @ mass @ shapes, np.eye(n), atol=1e-10)


def test_double_rod_pendulum_closed_form():
    """Two equal rods of length l: omega^2 = (g / l)(3 -+ 6 / sqrt(7))."""
    omega, _ = rm.modes(rm.chains.serial_chain(2, length=2.0, mass=2.0), np.zeros(2))
    np.testing.assert_allclose(omega**2, 9.81 * (3 + np.array([-1, 1]) * 6 / math.sqrt(7)), rtol=1e-12)


@pytest.mark.parametrize("with_loop", [False, True])
def test_direct_stiffness_equals_differences(with_loop):
    """The load-based K of revolute trees (gravity, joint springs, a constant force, a revolute or fixed loop)
    against central differences of the Newton-Euler pass, at a random state with random multipliers."""
    rng = np.random.default_rng(7)
    model = rm.Model(gravity=(0.4, -9.81))
    for i in range(8):
        model.add_body(int(rng.integers(-1, i)), "revolute", rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2),
                       mass=rng.uniform(0.5, 2), inertia=rng.uniform(0.05, 0.3), com=rng.uniform(-0.3, 0.3, 2))
    model.add_joint_spring_damper(3, 5.0, damping=0.7, rest=0.2)
    model.add_force(5, (0.3, -0.2), (1.5, -2.0))
    model.add_torque(2, 0.8)
    if with_loop:
        model.add_loop("revolute", 7, (0.2, 0.1), 4, (-0.3, 0.2))
        model.add_loop("fixed", 6, (0.1, 0.0), "ground", (1.0, 1.0))
    assert analysis._direct_route(model)
    q = rng.uniform(-np.pi, np.pi, model.nq)
    lam = rng.normal(size=model.nconstraints) * 3.0
    direct = analysis._direct_stiffness(model, q, lam)
    differences = analysis._stiffness(model, q, lam, np.zeros(model.nq), 0.0)
    assert rel_err(direct, differences) < 1e-7


def test_linearized_damping_of_joint_dampers():
    model = rm.chains.serial_chain(3)
    model.add_joint_spring_damper("link2", 4.0, damping=0.3)
    lin = rm.linearize(model, np.zeros(3))
    np.testing.assert_allclose(lin.C, np.diag([0.0, 0.3, 0.0]), atol=1e-15)


def test_four_bar_frequency_matches_small_oscillation():
    """The one mode of a four-bar about its gravity equilibrium, against the period of a simulated swing."""
    model, q0 = rm.models.four_bar(crank_angle=-1.0)  # hanging: Newton from crank_angle = +1 finds the
    eq = rm.static_equilibrium(model, q0)  # upright equilibrium, reported unstable
    assert eq.stable and eq.eigenvalues.size == 1
    lin = rm.linearize(model, eq.q)
    assert lin.M.shape == (1, 1)
    omega, shape = rm.modes(model, eq.q)
    _, _, jac, _ = rm.loops.constraints(model, eq.q)
    assert np.abs(jac @ shape).max() < 1e-9  # the mode moves along the constraints
    amplitude = 1e-4
    q_start = rm.assemble(model, eq.q + amplitude * shape[:, 0] / np.abs(shape[:, 0]).max())
    period = 2 * math.pi / omega[0]
    crank = lambda t, q, qd: qd[0]  # noqa: E731 - zero crossings of the crank rate: half periods
    res = rm.simulate(model, q_start, np.zeros(3), 3.2 * period, rtol=1e-11, atol=1e-13, events=crank)
    crossings = res.t_events[0]
    measured = 2 * np.diff(crossings).mean()
    assert abs(measured / period - 1) < 1e-5


def test_kinematic_analysis_needs_every_degree_of_freedom():
    model, q0 = rm.models.four_bar()
    with pytest.raises(rm.ModelError, match="undetermined"):
        rm.kinematic_analysis(model, {}, [0.0, 0.1], q0)
    pendulum = rm.chains.serial_chain(2)
    with pytest.raises(rm.ModelError, match="drive every coordinate"):
        rm.kinematic_analysis(pendulum, {"link1": lambda t: t}, [0.0])


def test_a_zero_stiffness_is_a_neutral_mode_not_an_instability():
    # without gravity no load turns the pendulum: every angle is an equilibrium, its one mode has zero frequency
    weightless = rm.Model(gravity=(0.0, 0.0))
    weightless.add_body("ground", "revolute", (0, 0), (0, 0.4), mass=2.0, inertia=0.1, name="pendulum")
    eq = rm.static_equilibrium(weightless, [0.3])
    assert eq.q.tolist() == [0.3] and abs(eq.eigenvalues[0]) < 1e-12
    assert eq.stable and eq.neutral.shape == (1, 1) and abs(eq.neutral[0, 0]) == pytest.approx(1.0, abs=1e-15)
    # the judgement still fails an unstable equilibrium: upside down under gravity, no neutral mode
    top = rm.static_equilibrium(compound_pendulum(), [3.0], prefer_stable=False)
    assert not top.stable and top.eigenvalues[0] < 0.0 and top.neutral.shape == (1, 0)


def test_modes_refuse_a_state_that_is_not_an_equilibrium():
    """A linearisation about a state that is not a static equilibrium (a pendulum held nowhere at 1 rad, a four-bar
    whose loop is open) is no small-oscillation problem: refused by name, as for a spatial model. Held by the tau
    that balances gravity, the pendulum's frequency is sqrt(m g d cos(q) / (J + m d^2))."""
    m, inertia, d, g = 2.0, 0.1, 0.4, 9.81
    model = compound_pendulum(m, inertia, d)
    for call in (rm.modes, rm.linearize):
        with pytest.raises(rm.ModelError, match="not a static equilibrium.*q\\[0\\] \\(body 'pendulum'\\)"):
            call(model, [1.0])
    omega, _ = rm.modes(model, [1.0], tau=[m * g * d * math.sin(1.0)])
    assert rel_err(omega[0], math.sqrt(m * g * d * math.cos(1.0) / (inertia + m * d * d))) < 1e-12
    four_bar, q0 = rm.models.four_bar()
    with pytest.raises(rm.ModelError, match="does not close the loops: loop 'coupler-rocker'"):
        rm.modes(four_bar, np.zeros(3))
    with pytest.raises(rm.ModelError, match="not a static equilibrium"):
        rm.linearize(four_bar, q0)  # assembled, but gravity turns it
    with pytest.raises(rm.ModelError, match="does not close the loops"):
        rm.studies.chain_modes(four_bar, 1)  # small models take the dense route
