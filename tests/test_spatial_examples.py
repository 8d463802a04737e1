"""Spatial examples against their closed forms: seed 002's centrifugal governor (the sleeve height against the
spindle speed) and the symmetric heavy top (the steady precession rate); the example scripts run; a 3D snapshot."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import recursive_mbd as rm

ROOT = Path(__file__).resolve().parents[1]


def governor_potential_slope(gov, phi, omega):
    """dU/dphi of the rotating-frame potential of the governor, written out independently of ``Governor``:
    U = 2 m g z_ball + M g z_sleeve - m omega^2 r^2 (two balls at radius r = a sin(phi), height -a cos(phi) below
    the pivot; the sleeve s(phi) = a cos(phi) + sqrt(b^2 - a^2 sin^2(phi)) below it), differentiated by hand."""
    m, big_m, a, b, g = gov.ball_mass, gov.sleeve_mass, gov.arm, gov.link, gov.g
    sin, cos = np.sin(phi), np.cos(phi)
    ds = -a * sin - a * a * sin * cos / np.sqrt(b * b - a * a + a * a * cos * cos)
    return 2 * m * g * a * sin - big_m * g * ds - 2 * m * omega**2 * a * a * sin * cos


@pytest.mark.parametrize("geometry", [{}, {"arm": 0.25, "link": 0.3, "ball_mass": 1.5, "sleeve_mass": 0.7}],
                         ids=["porter", "unequal"])
def test_governor_reduced_force_is_the_rotating_frame_potential_slope(geometry):
    """Gravity and the centrifugal load from the spinning tree's bias forces, projected on the symmetric motion,
    equal -dU/dphi of the closed form at any arm angle and speed (1e-10 relative)."""
    gov = rm.models.centrifugal_governor(**geometry)
    for phi in (0.2, 0.6, 1.0):
        for omega in (0.0, 5.0, 17.0):
            expected = -governor_potential_slope(gov, phi, omega)
            scale = 2 * gov.ball_mass * gov.g * gov.arm + gov.ball_mass * omega**2 * gov.arm**2
            assert abs(gov.reduced_force(phi, omega) - expected) <= 1e-10 * scale


def test_governor_sleeve_height_against_the_closed_form():
    gov = rm.models.centrifugal_governor(ball_mass=1.0, sleeve_mass=2.0, arm=0.2, link=0.2, pivot_height=0.5)
    lift_off = np.sqrt(gov.g * 3.0 / 0.2)  # omega^2 = g (m + M) / (m a): the balls lift off
    assert gov.speed(0.0) == pytest.approx(lift_off, rel=1e-15)
    for omega in (1.1 * lift_off, 2.0 * lift_off, 5.0 * lift_off):
        phi = gov.steady_angle(omega)
        drop = gov.pivot_height - gov.sleeve_height(phi)
        exact = 2 * gov.g * (gov.ball_mass + gov.sleeve_mass) / (gov.ball_mass * omega**2)
        assert abs(drop - exact) <= 1e-10 * exact
        assert abs(phi - np.arccos(exact / (2 * gov.arm))) <= 1e-10
    with pytest.raises(rm.ModelError, match="lift off"):
        gov.steady_angle(0.9 * lift_off)


def test_governor_unequal_arms_speed_closed_form():
    gov = rm.models.centrifugal_governor(arm=0.25, link=0.3, ball_mass=1.5, sleeve_mass=0.7)
    for omega in (12.0, 20.0, 40.0):
        phi = gov.steady_angle(omega)
        assert abs(gov.speed(phi) - omega) <= 1e-10 * omega


def test_governor_dynamics_rest_at_the_steady_state():
    """With the links as constraints (multipliers by hand) and the spindle held at omega, the steady state has zero
    accelerations, and 5 % faster the arms accelerate outwards: the steady state is the dynamics' rest point."""
    gov = rm.models.centrifugal_governor()
    model, omega = gov.model, 20.0
    phi = gov.steady_angle(omega)
    tangent = gov.dq_dphi(phi)

    def arm_acceleration(speed):
        q = gov.q(phi)
        v = np.array([speed, 0.0, 0.0, 0.0])
        mass, bias = rm.mass_matrix(model, q)[1:, 1:], rm.bias_forces(model, q, v)[1:]
        # one degree of freedom along the tangent (the links closed): (t^T M t) phi'' = -t^T h at rest
        return -(tangent[1:] @ bias) / (tangent[1:] @ mass @ tangent[1:])

    assert abs(arm_acceleration(omega)) < 1e-10 * omega**2
    assert arm_acceleration(1.05 * omega) > 0.01 * omega**2 * np.sin(phi) * np.cos(phi)


def test_governor_dynamics_keep_the_jacobi_integral_and_settle_to_the_steady_angle():
    """The symmetric motion with the spindle held at omega (the tree's M and h projected on the links' tangent):
    undamped it keeps the Jacobi integral T2 - T0 + V (from rm.energy, an independent quantity) to 1e-10
    relative; with damping on the arms' hinges it settles to the closed-form steady angle."""
    from scipy.integrate import solve_ivp  # noqa: PLC0415

    gov = rm.models.centrifugal_governor()
    omega = 20.0

    def rhs(t, y, damping):
        return [y[1], gov.arm_acceleration(y[0], y[1], omega, damping)]

    free = solve_ivp(rhs, (0.0, 1.0), [1.0, 0.0], args=(0.0,), rtol=1e-12, atol=1e-12)
    jacobi = np.array([gov.jacobi_integral(phi, rate, omega) for phi, rate in free.y.T])
    assert np.ptp(free.y[0]) > 0.3  # it swings
    assert np.abs(jacobi - jacobi[0]).max() < 1e-10 * abs(jacobi[0])
    damped = solve_ivp(rhs, (0.0, 6.0), [1.0, 0.0], args=(1.0,), rtol=1e-11, atol=1e-13)
    steady = np.arccos(gov.sleeve_drop(omega) / (2 * gov.arm))  # Porter: a cos(phi) = g (m + M) / (m omega^2)
    assert abs(damped.y[0, -1] - steady) < 1e-8


def steady_precession(tilt, spin, rate):
    """(q, v, expected vdot) of a top tilted about the ground x axis, precessing at ``rate`` about the vertical with
    the angular velocity component ``spin`` along its symmetry axis (body z)."""
    q = np.array([np.cos(tilt / 2), np.sin(tilt / 2), 0.0, 0.0])
    rotation = np.array([[1, 0, 0], [0, np.cos(tilt), -np.sin(tilt)], [0, np.sin(tilt), np.cos(tilt)]])
    vertical = np.array([0.0, 0.0, 1.0])
    relative = spin - rate * np.cos(tilt)
    v = rate * rotation.T @ vertical + relative * vertical
    # ground-axis angular velocity rate e_z + relative a, the axis a turning at rate e_z: d/dt = relative rate e_z x a
    vdot = rotation.T @ (relative * rate * np.cross(vertical, rotation @ vertical))
    return q, v, vdot


@pytest.mark.parametrize("tilt", [0.3, 1.2])
@pytest.mark.parametrize("spin", [60.0, 150.0])
def test_heavy_top_steady_precession(tilt, spin):
    """The forward dynamics at the closed-form precession rates give exactly steady precession (1e-10 relative);
    1 % off the rate they do not (a nutation acceleration about the line of nodes, ground x)."""
    top = dict(mass=0.8, length=0.12, transverse=3e-3, axial=5e-3)
    model = rm.models.heavy_top(**top)
    for rate in rm.models.heavy_top_precession(spin, tilt, **top):
        q, v, expected = steady_precession(tilt, spin, rate)
        vdot = rm.forward_dynamics(model, q, v)
        assert np.linalg.norm(vdot - expected) <= 1e-10 * np.linalg.norm(expected)
        q, v, expected = steady_precession(tilt, spin, 1.01 * rate)
        rotation = rm.forward_kinematics(model, q)[0][0]
        nutation = (rotation @ (rm.forward_dynamics(model, q, v) - expected))[0]
        assert abs(nutation) > 1e-4 * np.linalg.norm(expected)


def test_heavy_top_closed_form_errors():
    with pytest.raises(rm.ModelError, match="too slow"):
        rm.models.heavy_top_precession(1.0, 0.3)


def test_snapshot3d_draws_the_governor(tmp_path):
    gov = rm.models.centrifugal_governor()
    q = gov.q(0.6)
    sticks = rm.plot.spatial_sticks(gov.model, q)
    # arm1's bar from the pivot to its ball, out along +x: (a sin(phi), 0, H - a cos(phi))
    ball = np.array([0.2 * np.sin(0.6), 0.0, 0.5 - 0.2 * np.cos(0.6)])
    np.testing.assert_allclose(sticks["coms"][1], ball, atol=1e-15)
    np.testing.assert_allclose(sticks["coms"][2], ball * [-1, 1, 1], atol=1e-15)
    # the spindle up to the arms' hinge, each arm from its hinge to its ball; the sleeve slides on the spindle
    assert sticks["segments"].shape == (3, 2, 3) and sticks["ground"].shape == (1, 3)
    np.testing.assert_array_equal(sticks["segment_body"], [0, 1, 2])
    fig = rm.plot.snapshot3d(gov.model, q)
    path = tmp_path / "governor.png"
    fig.savefig(path)
    assert path.stat().st_size > 5000
    fig = rm.plot.draw(gov.model, q)  # draw dispatches on the model type
    assert fig.axes[0].name == "3d"
    with pytest.raises(TypeError, match="3D axes"):
        rm.plot.snapshot3d(gov.model, q, ax=rm.plot.figure()[1])


def test_animate_a_spatial_motion(tmp_path):
    """rm.plot.animate on a Model3D: the precessing top (its closed-form motion, R(t) = Rz(Omega t) Rx(tilt)
    Rz(psi' t)) to a .gif, one frame per sample."""
    model = rm.models.heavy_top()
    tilt, spin = 0.4, 150.0
    rate = rm.models.heavy_top_precession(spin, tilt)[0]
    t = np.linspace(0.0, 2 * np.pi / rate, 6)
    relative = spin - rate * np.cos(tilt)

    def quat(axis, angle):
        return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * np.asarray(axis, dtype=float)])

    def times(a, b):
        return np.concatenate([[a[0] * b[0] - a[1:] @ b[1:]], a[0] * b[1:] + b[0] * a[1:] + np.cross(a[1:], b[1:])])

    q = np.array([times(times(quat([0, 0, 1], rate * s), quat([1, 0, 0], tilt)), quat([0, 0, 1], relative * s))
                  for s in t])
    path = tmp_path / "top.gif"
    rm.plot.animate(model, t, q, path, fps=5)
    assert path.stat().st_size > 5000
    from PIL import Image  # noqa: PLC0415  (matplotlib's gif writer needs Pillow)

    with Image.open(path) as movie:
        assert movie.n_frames == 6


def load_example(name):
    """An example script as a module (its command line runs only under __main__)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return module


def test_whirling_rod_is_the_compound_conical_pendulum():
    whirl = load_example("whirling_chain")
    model, rod, m, transverse, axial = whirl.whirling_chain(1)
    for omega in (5.0, 9.0):
        theta = whirl.steady_whirl(model, omega, np.array([1.0]))
        exact = np.arccos(m * 9.81 * rod / 2 / (omega**2 * (transverse + m * rod**2 / 4 - axial)))
        assert abs(theta[0] - exact) < 1e-10


def test_whirling_chain_steady_shapes_against_the_effective_potential():
    """3 rods: above the first natural frequency the steady whirl makes the hand-differentiated effective potential
    stationary (1e-10 of m g L) and the forward dynamics give zero accelerations; below it the chain hangs."""
    whirl = load_example("whirling_chain")
    model, rod, m, transverse, axial = whirl.whirling_chain(3)
    first = rm.modes(model, model.neutral())[0][3]
    theta = whirl.steady_whirl(model, 1.5 * first, np.array([0.8, 1.0, 1.2]))
    assert np.all(np.abs(theta) > 0.3)
    slope = whirl.potential_slope(theta, 1.5 * first, rod, m, transverse, axial)
    assert np.abs(slope).max() < 1e-10 * 9.81
    q, v = whirl.state(theta, 1.5 * first)
    assert np.abs(rm.forward_dynamics(model, q, v)).max() < 1e-10 * first**2
    hanging = whirl.steady_whirl(model, 0.9 * first, np.array([0.3, 0.4, 0.5]))
    assert np.abs(hanging).max() < 1e-8


def test_whirling_chain_simulated_from_its_steady_shape_stays_steady():
    """The relative equilibrium found by Newton (3 rods at 1.5 times the first frequency), integrated by dopri5
    (rtol 1e-10) for one revolution: in the frame turning at omega about the vertical the rods' centres stay put
    (measured 1e-11 m), the outer joints do not move and every angular velocity keeps its value (round-off), and
    the first joint turns rigidly, quaternion Rz(omega t) (x) q_1(0) (measured 5.8e-12): the dynamics and the
    independent steady-whirl computation agree."""
    whirl = load_example("whirling_chain")
    model = whirl.whirling_chain(3)[0]
    omega = 1.5 * rm.modes(model, model.neutral())[0][3]
    theta = whirl.steady_whirl(model, omega, np.array([0.8, 1.0, 1.2]))
    q0, v0 = whirl.state(theta, omega)
    res = rm.simulate(model, q0, v0, 2.0 * np.pi / omega, method="dopri5", rtol=1e-10, atol=1e-12)
    assert res.t.size > 20
    half = 0.5 * omega * res.t
    turn = np.column_stack([np.cos(half), np.zeros_like(half), np.zeros_like(half), np.sin(half)])
    first = q0[:4]
    expected = np.column_stack([turn[:, 0] * first[0] - turn[:, 1:] @ first[1:],
                                turn[:, :1] * first[1:] + first[0] * turn[:, 1:] + np.cross(turn[:, 1:], first[1:])])
    assert np.abs(res.q[:, :4] - expected).max() < 1e-10
    assert np.abs(res.q[:, 4:] - q0[4:]).max() < 1e-13 and np.abs(res.qd - v0).max() < 1e-12
    start = rm.forward_kinematics(model, q0)[1]
    for t, q in zip(res.t, res.q, strict=True):
        c, s = np.cos(omega * t), np.sin(omega * t)
        back = rm.forward_kinematics(model, q)[1] @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        assert np.abs(back - start).max() < 1e-9  # Rz(-omega t) p, rows as vectors


@pytest.mark.parametrize(("script", "marker"), [("governor.py", "max relative error of the sleeve drop"),
                                                ("spinning_top.py", "max relative difference"),
                                                ("whirling_chain.py", "max |dU/dtheta|")])
def test_spatial_example_scripts(script, marker, tmp_path):
    args = {"governor.py": ["--plot", str(tmp_path / "governor.png")], "whirling_chain.py": ["--quick"]}.get(script, [])
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True, text=True,
                         check=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    line = next(line for line in out.stdout.splitlines() if line.startswith(marker))
    assert float(line.split()[-1]) < 1e-10, out.stdout
    if script == "whirling_chain.py":  # hung off the axis: the top tension converges to the string's with order 2
        line = next(line for line in out.stdout.splitlines() if line.startswith("order in n:"))
        assert abs(float(line.split()[-1]) - 2.0) < 0.03, out.stdout
    if script == "governor.py":
        assert (tmp_path / "governor.png").stat().st_size > 5000


# ---- statics of spatial trees (rm.assemble / rm.static_equilibrium on a Model3D) -------------------------------

def test_static_equilibrium_pendulum_with_a_torque():
    """A pendulum hinged about the ground x axis, centre of mass l below the hinge, holds tau where
    m g l sin(theta) = tau."""
    mass, length, tau = 2.0, 0.7, 5.0
    model = rm.Model3D()
    model.add_body(joint="revolute", axis=(1.0, 0.0, 0.0), mass=mass, inertia=(0.1, 0.08, 0.05, 0.0, 0.0, 0.01),
                   com=(0.0, 0.0, -length))
    theta = np.arcsin(tau / (mass * 9.81 * length))
    eq = rm.static_equilibrium(model, [1.2], [tau])
    assert abs(eq.q[0] - theta) < 1e-10
    assert eq.stable and eq.eigenvalues[0] == pytest.approx(mass * 9.81 * length * np.cos(theta), rel=1e-6)
    eq = rm.static_equilibrium(model, [2.0], [tau])  # Newton finds the nearer, unstable equilibrium
    assert abs(eq.q[0] - (np.pi - theta)) < 1e-10 and not eq.stable


def test_static_equilibrium_holds_fixed_coordinates():
    """Two rods hinged about x: the first held at a, the second hangs plumb (q2 = -a), and the support of the first
    joint holds the moment of both weights, (m1 c1 + m2 L1) g sin(a)."""
    a, m1, m2, c1, length1 = 0.6, 1.0, 2.0, 0.3, 0.5
    model = rm.Model3D()
    model.add_body(joint="revolute", axis=(1.0, 0.0, 0.0), mass=m1, inertia=0.01, com=(0.0, 0.0, -c1), name="upper")
    model.add_body(parent="upper", joint="revolute", axis=(1.0, 0.0, 0.0), parent_point=(0.0, 0.0, -length1),
                   mass=m2, inertia=0.02, com=(0.0, 0.0, -0.2), name="lower")
    eq = rm.static_equilibrium(model, [a, 0.3], fixed=["upper"])
    assert eq.q[0] == a and abs(eq.q[1] + a) < 1e-12
    assert eq.holding[0] == pytest.approx((m1 * c1 + m2 * length1) * 9.81 * np.sin(a), rel=1e-12)
    assert eq.holding[1] == 0.0 and eq.eigenvalues.size == 1 and eq.stable


def test_static_equilibrium_spherical_pendulum_keeps_unit_quaternions():
    """A body on a spherical joint with a torque (tau_x, 0, 0) in its own frame: the upward vertical in body axes
    u = R^T e_z settles at (0, tau_x / (m g l), sqrt(1 - ...)) (c x R^T G + tau = 0 with c = (0, 0, -l)); the
    turn about the vertical (body-axis rotation about u) is free: the stiffness maps it to zero."""
    mass, length, tau_x = 1.5, 0.4, 2.0
    model = rm.Model3D()
    model.add_body(joint="spherical", mass=mass, inertia=(0.02, 0.03, 0.015, 0.001, 0.0, 0.0),
                   com=(0.0, 0.0, -length), name="bob")
    guess = np.array([np.cos(0.3), 0.2, np.sin(0.3) * 0.9, 0.1])
    guess /= np.linalg.norm(guess)
    eq = rm.static_equilibrium(model, guess, [tau_x, 0.0, 0.0])
    assert abs(np.linalg.norm(eq.q) - 1.0) < 1e-15
    rotation = rm.forward_kinematics(model, eq.q)[0][0]
    ratio = tau_x / (mass * 9.81 * length)
    up = rotation.T @ [0.0, 0.0, 1.0]
    np.testing.assert_allclose(up, [0.0, ratio, np.sqrt(1 - ratio**2)], rtol=0, atol=1e-10)
    assert np.abs(eq.stiffness @ up).max() < 1e-6 * np.abs(eq.stiffness).max()
    np.testing.assert_array_equal(rm.assemble(model, eq.q), eq.q)


def test_static_equilibrium_planar_chain_rebuilt_in_space():
    """A planar 3-link chain with joint torques, rebuilt as a spatial model (revolute axes along z, gravity along
    -y: the spec's mapping), rests where the planar route's static equilibrium puts it (1e-10)."""
    planar = rm.chains.serial_chain(3, length=1.5, mass=2.0)
    tau = np.array([1.0, -0.5, 0.3])
    reference = rm.static_equilibrium(planar, np.zeros(3), tau, tol=1e-13)
    model = rm.Model3D(gravity=(0.0, -9.81, 0.0))
    rod, mass = 0.5, 2.0 / 3
    inertia = mass * rod**2 / 12
    for i in range(3):
        model.add_body(parent=i - 1, joint="revolute", parent_point=(0.0, -rod / 2 if i else 0.0, 0.0),
                       child_point=(0.0, rod / 2, 0.0), mass=mass, inertia=inertia)
    eq = rm.static_equilibrium(model, np.zeros(3), tau, tol=1e-13)
    np.testing.assert_allclose(eq.q, reference.q, rtol=0, atol=1e-10)
    assert eq.stable == reference.stable


def test_modes_of_a_pendulum_on_a_universal_joint():
    """A body hanging from a universal joint (axes ground x, then body y) swings at sqrt(m g l / I_x) and
    sqrt(m g l / I_y), the moments about the pivot's axes (compound pendulum, two planes)."""
    mass, length, ix, iy = 1.2, 0.5, 0.03, 0.05
    model = rm.Model3D()
    model.add_body(joint="universal", axis=((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), mass=mass,
                   inertia=(ix, iy, 0.04, 0.0, 0.0, 0.0), com=(0.0, 0.0, -length))
    eq = rm.static_equilibrium(model, [0.1, -0.2])
    np.testing.assert_allclose(eq.q, 0.0, atol=1e-12)
    again = rm.static_equilibrium(model, eq.q)  # from an equilibrium: no step
    assert again.iterations == 0 and np.array_equal(again.q, eq.q)
    omega, shapes = rm.modes(model, eq.q)
    expected = np.sqrt(mass * 9.81 * length / (np.array([iy, ix]) + mass * length**2))
    np.testing.assert_allclose(omega, expected, rtol=1e-8)
    assert abs(shapes[1, 0]) > 0.99 * np.abs(shapes[:, 0]).sum()  # the slower mode swings about the y axis


def test_modes_of_a_spatial_chain_equal_the_planar_chain_in_both_planes():
    """A 3-link chain of spherical joints hanging in space: each planar chain frequency (rm.modes on
    chains.serial_chain) twice (the two planes), plus the torsion modes of zero frequency about the vertical."""
    n, rod, mass = 3, 0.4, 0.5
    planar = rm.chains.serial_chain(n, length=n * rod, mass=n * mass)
    planar_omega, _ = rm.modes(planar, np.zeros(n))
    model = rm.Model3D()
    inertia = mass * rod**2 / 12
    for i in range(n):
        model.add_body(parent=i - 1, joint="spherical", parent_point=(0.0, 0.0, -rod / 2 if i else 0.0),
                       child_point=(0.0, 0.0, rod / 2), mass=mass, inertia=(inertia, inertia, 0.1 * inertia, 0, 0, 0))
    omega, _ = rm.modes(model, model.neutral())
    assert np.all(omega[:n] < 1e-3 * omega[n])  # the rods' torsion about the vertical: no restoring force
    np.testing.assert_allclose(omega[n:], np.repeat(planar_omega, 2), rtol=1e-7)


def test_static_equilibrium_of_a_spatial_tree_refuses_bad_input():
    model = rm.models.heavy_top()
    with pytest.raises(rm.StateError, match="q_guess"):
        rm.static_equilibrium(model, np.zeros(3))
    with pytest.raises(rm.StateError, match="'top'"):
        rm.static_equilibrium(model, [1.0, 0.5, 0.0, 0.0])
    with pytest.raises(rm.StateError, match="tau"):
        rm.static_equilibrium(model, model.neutral(), np.zeros(4))
    with pytest.raises(rm.ModelError, match=r"no static equilibrium found.*v\[3\] \(body 'sleeve', prismatic"):
        rm.static_equilibrium(rm.models.centrifugal_governor().model, np.zeros(4))  # no links: the sleeve falls
    flat = rm.Model3D()
    flat.add_body(joint="spherical", mass=1.0, inertia=(0.1, 0.1, 0.0, 0, 0, 0), com=(0.0, 0.0, -1.0))
    with pytest.raises(rm.ModelError, match="mass matrix"):
        rm.modes(flat, flat.neutral())
