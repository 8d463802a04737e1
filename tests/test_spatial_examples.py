"""Spatial examples against their closed forms: seed 002's centrifugal governor (the sleeve height against the
spindle speed) and the symmetric heavy top (the steady precession rate); the example scripts run; a 3D snapshot."""

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
    ds = -a * sin - a * a * sin * cos / np.sqrt(b * b - a * a * sin * sin)
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
@pytest.mark.parametrize("spin", [40.0, 150.0])
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
    assert sticks["segments"].shape == (4, 2, 3) and sticks["ground"].shape == (1, 3)
    fig = rm.plot.snapshot3d(gov.model, q)
    path = tmp_path / "governor.png"
    fig.savefig(path)
    assert path.stat().st_size > 5000
    fig = rm.plot.draw(gov.model, q)  # draw dispatches on the model type
    assert fig.axes[0].name == "3d"
    with pytest.raises(TypeError, match="3D axes"):
        rm.plot.snapshot3d(gov.model, q, ax=rm.plot.figure()[1])


@pytest.mark.parametrize(("script", "marker"), [("governor.py", "max relative error of the sleeve drop"),
                                                ("spinning_top.py", "max relative difference")])
def test_spatial_example_scripts(script, marker, tmp_path):
    args = ["--plot", str(tmp_path / "governor.png")] if script == "governor.py" else []
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True, text=True,
                         check=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    line = next(line for line in out.stdout.splitlines() if line.startswith(marker))
    assert float(line.split()[-1]) < 1e-10, out.stdout
    if args:
        assert (tmp_path / "governor.png").stat().st_size > 5000
