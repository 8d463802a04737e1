"""The chain studies against their closed forms and laws (seed 001's question: does the n-link pendulum approach
the continuous chain?)."""

import math

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd.analysis import studies

BESSEL_J0_ZEROS = (2.404825557695773, 5.520078110286311, 8.653727912911013)  # Abramowitz & Stegun, table 9.5


def test_continuum_frequencies_from_tabulated_bessel_zeros():
    omega = studies.continuum_frequencies(3, length=2.0, gravity=9.81)
    np.testing.assert_allclose(omega, 0.5 * np.array(BESSEL_J0_ZEROS) * math.sqrt(9.81 / 2.0), rtol=1e-14)
    assert abs(studies.continuum_mode_shape(1, 2.0, length=2.0) - 1.0) < 1e-15  # free end
    assert abs(studies.continuum_mode_shape(1, 0.0, length=2.0)) < 1e-15  # J0(j_0,1) = 0 at the support


def test_rod_chain_frequencies_converge_with_order_two_from_above():
    study = studies.frequency_study([1, 2, 8, 32, 128, 256, 512], k=2, kind="rods", length=1.0)
    g, length = 9.81, 1.0
    assert abs(study["omega"][0, 0] - math.sqrt(3 * g / (2 * length))) < 1e-12  # one rod
    rod = length / 2
    np.testing.assert_allclose(study["omega"][1] ** 2, (g / rod) * (3 + np.array([-1, 1]) * 6 / math.sqrt(7)),
                               rtol=1e-12)
    np.testing.assert_allclose(study["order"], 2.0, atol=0.02)
    assert np.all(study["error"][2:] > 0)  # rods are stiffer than the continuum: from above
    beads = studies.frequency_study([64, 128, 256], k=2, kind="beads")
    assert np.all(beads["error"] < 0)  # point masses converge from below
    np.testing.assert_allclose(beads["order"], 1.0, atol=0.05)


def test_sparse_chain_modes_equal_dense_modes():
    chain = rm.chains.serial_chain(120)
    omega, shapes = studies.chain_modes(chain, 4)
    dense_omega, dense_shapes = rm.modes(chain, np.zeros(120), 4)
    np.testing.assert_allclose(omega, dense_omega, rtol=1e-11)
    np.testing.assert_allclose(np.abs(shapes), np.abs(dense_shapes), atol=1e-8)


def test_discrete_catenary_slope_law_and_convergence():
    """20 one-metre rods between supports 10 m apart: tan(slope) of the rods is an arithmetic progression (the
    horizontal tension is constant and each rod adds its weight to the vertical force)."""
    result = studies.discrete_catenary(20, 10.0, length=20.0, mass=20.0)
    slopes = result["slopes"]
    assert np.abs(np.diff(slopes, 2)).max() < 1e-9
    np.testing.assert_allclose(slopes, -slopes[::-1], atol=1e-9)
    # the step is the rod weight over the horizontal tension
    assert abs(np.diff(slopes).mean() - 9.81 / result["horizontal_tension"]) < 1e-9
    assert abs(result["vertical_reaction"] - 10 * 9.81) < 1e-9
    study = studies.catenary_study([10, 20, 40, 80], 6.0, length=10.0)
    assert abs(study["sag_order"] - 2.0) < 0.02
    assert np.all(np.abs(np.diff(np.log(np.abs(study["sag_error"])))) > 1.3)  # each halving: about / 4


def test_folded_chain_fall_conserves_energy_and_whips():
    fall = studies.folded_chain_fall(50, gap=0.05, rtol=1e-11, atol=1e-13)
    assert fall["energy_error"] < 1e-8
    assert fall["max_speed"] > 5 * math.sqrt(9.81 * 1.0)
    # faster than free fall, close to the energy-conserving theory
    assert fall["fall_time"] < fall["free_fall_time"]
    assert abs(fall["fall_time"] / fall["energy_conserving_time"] - 1) < 0.01
    half = np.searchsorted(fall["x"][: np.argmax(fall["speed"])], 0.5)
    assert abs(fall["speed"][half] / studies.energy_conserving_speed(fall["x"][half], 1.0) - 1) < 0.01
    assert (-fall["acceleration"]).max() > 9.81  # the free end accelerates faster than g


def test_study_input_errors():
    with pytest.raises(rm.ModelError, match="integer >= 1"):
        studies.frequency_study([0], k=1)
    with pytest.raises(rm.ModelError, match="length must be finite and > 0"):
        studies.continuous_catenary(1.0, -2.0)
    with pytest.raises(rm.ModelError, match="mass must be finite and > 0"):
        studies.discrete_catenary(10, 1.0, length=2.0, mass=0.0)
    with pytest.raises(rm.ModelError, match="shorter than the chain"):
        studies.folded_chain_fall(10, gap=1.5, length=1.0)
    with pytest.raises(rm.ModelError, match="integer >= 1"):
        studies.tip_whip(0)


# ---- the hanging swing in space -------------------------------------------------------------------------------------

def test_spherical_chain_modes_are_the_planar_modes_twice():
    """Linearised about the hanging chain, the spatial chain's horizontal directions decouple into two copies of the
    planar chain (the n twists are free: zero frequency); the tilts of ``tilted_chain`` read back exactly."""
    model = studies.spherical_chain(3)
    omega3d = rm.modes(model, model.neutral())[0]
    planar = rm.modes(rm.chains.serial_chain(3), np.zeros(3))[0]
    assert np.abs(omega3d[:3]).max() < 1e-6
    np.testing.assert_allclose(omega3d[3:], np.repeat(planar, 2), rtol=1e-10)
    tilts = np.array([[0.3, -0.2], [-1.0, 0.5], [1e-9, 2.0]])
    np.testing.assert_allclose(studies.swing_tilts(model, studies.tilted_chain(model, tilts)), tilts, rtol=0,
                               atol=1e-14)


def test_hanging_swing_3d_follows_the_planar_modes_on_both_axes():
    """3 rods, mode 1 along x (1e-3 rad) and mode 2 along y (5e-4 rad) over 2 s, dopri5 at rtol 1e-10: each axis
    follows the planar linear solution up to the nonlinear terms, amplitude^2 relative (measured 1.65e-6; the
    integration error is 1e-9 of that); doubling both amplitudes quadruples it (measured 3.995)."""
    small = rm.studies.hanging_swing_3d(3, (1e-3, 5e-4), 2.0, modes=(1, 2))
    large = rm.studies.hanging_swing_3d(3, (2e-3, 1e-3), 2.0, modes=(1, 2))
    assert 1e-6 < small["max_rel_error"] < 2.5e-6
    assert 3.8 < large["max_rel_error"] / small["max_rel_error"] < 4.2
    omega = rm.modes(rm.chains.serial_chain(3), np.zeros(3))[0]
    np.testing.assert_allclose(small["omegas"], omega[:2], rtol=1e-12)
    assert small["tilts"].shape == (small["t"].size, 3, 2) and small["t"][-1] == 2.0
    np.testing.assert_allclose(np.abs(small["tilts0"]).max(axis=0), [1e-3, 5e-4], rtol=1e-15)


def test_hanging_swing_3d_in_one_plane_is_the_planar_swing():
    """With no tilt along y the spatial chain swings in the x-z plane as the planar chain does: the same start
    bits, no y tilt at all, and the end states at the same rtol (1e-10) agree to 1e-9 of the amplitude (measured
    9.5e-13 rad against 1e-3)."""
    spatial = rm.studies.hanging_swing_3d(3, (1e-3, 0.0), 2.0)
    planar = rm.studies.hanging_swing(3, 1e-3, 2.0, "dopri5", rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(spatial["tilts0"][:, 0], planar["q0"])
    assert not np.any(spatial["tilts"][:, :, 1])
    res = rm.simulate(rm.chains.serial_chain(3), planar["q0"], np.zeros(3), 2.0, rtol=1e-10, atol=1e-12)
    assert np.abs(spatial["tilts"][-1, :, 0] - res.q[-1]).max() < 5e-12
    assert abs(spatial["max_rel_error"] - planar["max_rel_error"]) < 1e-2 * planar["max_rel_error"]


def test_hanging_swing_3d_input_errors():
    with pytest.raises(rm.ModelError, match="amplitudes"):
        rm.studies.hanging_swing_3d(3, (0.0, 0.0))
    with pytest.raises(rm.ModelError, match="amplitudes"):
        rm.studies.hanging_swing_3d(3, (1e-3, -1e-3))
    with pytest.raises(rm.ModelError, match="modes"):
        rm.studies.hanging_swing_3d(3, modes=(1,))
    with pytest.raises(rm.StateError, match="modes"):
        rm.studies.hanging_swing_3d(3, modes=(1, 4))
    with pytest.raises(rm.ModelError, match="tilts"):
        studies.tilted_chain(studies.spherical_chain(2), np.zeros((3, 2)))


# ---- the whirling chain ---------------------------------------------------------------------------------------------

def test_steady_whirl_balances_every_rod_and_is_a_rest_point_of_the_dynamics():
    """4 rods hung 0.1 m off the axis, whirled at 4.5 rad/s (above the hanging chain's first frequency, 3.77
    rad/s: a wide whirl). Each rod, checked here on its own: its joint forces, weight and centripetal acceleration
    balance (force) and the moments of its joint forces about its centre equal the rate of change of its angular
    momentum, rate e_z x I rate e_z (moment), to round-off. The dynamics agree independently: at the whirl's state
    the forward dynamics give zero accelerations (the arm needs no torque either) and the joint reactions are the
    statics' joint forces."""
    n, radius, rate, g = 4, 0.1, 4.5, 9.81
    whirl = studies.steady_whirl(n, radius, rate)
    rod, m = 1.0 / n, 1.0 / n
    points, centres, forces = whirl["points"], whirl["centres"], whirl["tensions"]
    assert np.all(whirl["theta"] > 0.8) and whirl["residual"] < 1e-14
    np.testing.assert_allclose(points[0], [radius, 0.0, 0.0], rtol=0, atol=0)
    below = np.vstack((forces[1:], np.zeros(3)))  # the force rod j + 1 takes from rod j, zero below the last
    inertia_body = np.diag([m * rod**2 / 12, m * rod**2 / 12, m * (rod / 50) ** 2 / 2])
    spin = np.array([0.0, 0.0, rate])
    for j in range(n):
        force = forces[j] - below[j] + m * np.array([0.0, 0.0, -g]) + m * rate**2 * centres[j, 0] * np.array([1, 0, 0])
        assert np.abs(force).max() < 1e-13 * m * g
        axis = (points[j] - points[j + 1]) / rod  # the rod's body z axis (from its lower end to its upper one)
        assert abs(np.linalg.norm(points[j + 1] - points[j]) - rod) < 1e-15
        side = np.cross([0.0, 1.0, 0.0], axis)
        rotation = np.column_stack((side, [0.0, 1.0, 0.0], axis))
        inertia = rotation @ inertia_body @ rotation.T
        moment = np.cross(points[j] - centres[j], forces[j]) + np.cross(points[j + 1] - centres[j], -below[j])
        np.testing.assert_allclose(moment, np.cross(spin, inertia @ spin), rtol=0, atol=1e-14 * m * g * rod)
    model = studies.whirling_chain_model(n, radius)
    q, v = whirl["q"], whirl["v"]
    assert np.abs(rm.forward_dynamics(model, q, v)).max() < 1e-12 * rate**2
    reactions = rm.joint_reactions(model, q, v, np.zeros(model.nv)).joint
    np.testing.assert_allclose(reactions[1:, :3], forces, rtol=0, atol=1e-12 * g)
    assert np.abs(reactions[1:, 3:]).max() < 1e-12 * g * rod  # a spherical joint carries no moment


def test_whirling_chain_run_stays_on_its_steady_whirl():
    """The 4 rods above started on their steady whirl, the arm driven at 4.5 rad/s, 2 s (1.4 turns) of dopri5 at
    rtol 1e-10: in the frame turning with the arm the joints stay where statics put them and the top joint's force
    (``rm.joint_reactions``) stays the statics' (measured 1.7e-13 m and 1.0e-12 relative); the driver does no work
    (torque 1.4e-12 N m), energy and the angular momentum about the axis keep their values. A steady whirl is a
    rest point of the integrated state (the spherical joints' rotations and rates, the arm being driven), so what
    is left is round-off, whatever the rtol. Turned 1e-4 rad further out, the chain stays near the whirl (the
    shape within 2.0e-4 m over the 2 s: the whirl is stable), and twice the turn gives twice the deviation: the
    measures see a motion that is there."""
    run = rm.studies.whirling_chain(4, 0.1, 4.5, 2.0)
    assert run["t"][-1] == 2.0 and run["nsteps"] > 10
    assert run["shape_deviation"] < 1e-11
    assert run["tension_deviation"] < 1e-11
    top = run["reference"]["tensions"][0]
    np.testing.assert_allclose(run["top_tension"][-1], top, rtol=0, atol=1e-11 * np.linalg.norm(top))
    assert run["driving_torque"] < 1e-10
    assert run["energy_error"] < 1e-12 and run["momentum_error"] < 1e-11
    turned = [rm.studies.whirling_chain(4, 0.1, 4.5, 2.0, perturbation=angle) for angle in (1e-4, 2e-4)]
    assert 1e-4 < turned[0]["shape_deviation"] < 3e-4
    assert abs(turned[1]["shape_deviation"] / turned[0]["shape_deviation"] - 2.0) < 1e-3
    assert abs(turned[1]["tension_deviation"] / turned[0]["tension_deviation"] - 2.0) < 1e-3


def test_whirling_string_is_the_limit_of_the_discrete_whirl():
    """The continuous string's whirl (solve_bvp) satisfies its own equations (tangent along -T, T' the load, checked
    by differences) and boundary conditions; the discrete whirls of 8, 16 and 32 rods approach it with order 2 in
    the tension at the top (measured 1.993) and nearly 2 in the shape (1.81 here, 1.86 from 64 to 128 rods)."""
    radius, rate, g = 0.1, 4.5, 9.81
    study = studies.whirl_convergence([8, 16, 32], radius, rate)
    string = study["string"]
    np.testing.assert_allclose(string["shape"](0.0), [radius, 0.0, 0.0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(string["tension"](1.0), 0.0, rtol=0, atol=1e-12)
    assert abs(string["top_tension"][2] - g) < 1e-12
    s, h = np.linspace(0.05, 0.95, 7), 1e-4
    slope = (string["shape"](s + h) - string["shape"](s - h)) / (2 * h)
    tension = string["tension"](s)
    np.testing.assert_allclose(slope, -tension / np.linalg.norm(tension, axis=1)[:, None], rtol=0, atol=1e-7)
    load = (string["tension"](s + h) - string["tension"](s - h)) / (2 * h)
    np.testing.assert_allclose(load[:, 0], rate**2 * string["shape"](s)[:, 0], rtol=1e-7)
    np.testing.assert_allclose(load[:, 2], -g, rtol=1e-9)
    assert np.all(np.diff(study["shape_error"]) < 0) and np.all(np.diff(study["tension_error"]) < 0)
    assert 1.75 < study["shape_order"] < 1.9
    assert abs(study["tension_order"] - 2.0) < 0.02
    assert study["shape_error"][-1] < 1.5e-4
    # 1 cm off the axis, just above the first frequency: the whirl turns out fast with the rate there (the steps
    # halve); both solves stay on the first mode (every rod out and below its joint) and agree
    near = studies.steady_whirl(8, 0.01, 4.0)
    assert np.all(near["theta"] > 0.35) and np.all(near["theta"] < 0.7)
    assert np.linalg.norm(near["points"][-1] - studies.whirling_string(0.01, 4.0)["tip"]) < 1e-2


def test_whirling_chain_input_errors():
    for call in (lambda: studies.steady_whirl(0, 0.1, 4.5), lambda: studies.whirling_chain_model(0, 0.1)):
        with pytest.raises(ValueError, match="n must be an integer"):
            call()
    with pytest.raises(ValueError, match="radius must be finite and > 0"):
        studies.whirling_chain(3, -0.1, 4.5)
    with pytest.raises(ValueError, match="rate must be finite and > 0"):
        studies.steady_whirl(3, 0.1, -4.5)
    with pytest.raises(ValueError, match="rate must be finite and > 0"):
        studies.whirling_string(0.1, float("inf"))
    with pytest.raises(ValueError, match="ns must hold at least two"):
        studies.whirl_convergence([8], 0.1, 4.5)
    with pytest.raises(ValueError, match="perturbation"):
        studies.whirling_chain(3, 0.1, 4.5, perturbation=float("nan"))
    # a continuation whose every solve is refused halves its step 20 times, then says where it stopped and why
    calls = []

    def refuse(rate, state):
        calls.append(rate)
        return state, False, "no convergence"

    with pytest.raises(rm.ModelError, match=r"demo: no first whirling mode found beyond the rate 0 rad/s \(of 4.5\): "
                                            "no convergence"):
        studies._rate_continuation(4.5, 10, np.zeros(3), refuse, "demo")
    assert len(calls) == 22 and calls[0] == 0.45 and calls[-1] == 0.45 * 2.0**-21
