"""Bodies set down on a slope under the implicit methods at large steps (``Model3D.add_contact``): a capsule and a
box on two capsules stick below their friction angle, tan(theta) < mu, and slide with Coulomb's acceleration
g (sin theta - mu cos theta) above it; a sphere rolls without slipping at 5/7 g sin theta while tan(theta) < 7/2 mu
and slides above. generalized_alpha at dt = 10 ms and bdf, on contacts of k = 1e7 and 1e9 N/m^1.5, whose normal and
stick springs vibrate far faster than the step (``_kernels.spatial.contact.slip_reversals``: the Newton step that
ends the cycling between the two slip directions of a row)."""

import math

import numpy as np
import pytest

import recursive_mbd as rm

G = 9.81
METHODS = [
    pytest.param({"method": "generalized_alpha", "dt": 0.01}, id="generalized_alpha"),
    pytest.param({"method": "bdf", "rtol": 1e-6, "atol": 1e-8}, id="bdf"),
]
STIFFNESS = [1e7, 1e9]


def _slope(angle):
    """Gravity of a slope at ``angle``: the floor's x axis runs downhill."""
    return (G * math.sin(angle), 0.0, -G * math.cos(angle))


def _set_down(shape, stiffness, angle, friction):
    """(model, q0): ``shape`` on one free joint, set down at rest at the depth where its weight's normal part is
    carried (a sphere of radius 0.1, a capsule along x with end spheres of radius 0.05, a box held at the four ends
    of two such capsules)."""
    model = rm.Model3D(gravity=_slope(angle))
    law = {"stiffness": stiffness, "restitution": 0.5, "friction": friction, "min_impact_speed": 0.1}
    weight = G * math.cos(angle)
    if shape == "sphere":
        model.add_body(joint="free", mass=1.0, inertia=0.004, name="body")  # 2/5 m r^2: solid
        model.add_ground()
        model.add_contact("body", "floor", radius=0.1, **law)
        height = 0.1 - (weight / stiffness) ** (1.0 / 1.5)
    elif shape == "capsule":
        model.add_body(joint="free", mass=1.0, inertia=0.02, name="body")
        model.add_ground()
        model.add_contact("body", "floor", segment=((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0)), radius=0.05, **law)
        height = 0.05 - (0.5 * weight / stiffness) ** (1.0 / 1.5)
    else:
        model.add_body(joint="free", mass=2.0, inertia=(0.02, 0.03, 0.04, 0.0, 0.0, 0.0), name="body")
        model.add_ground()
        for side in (-0.1, 0.1):
            model.add_contact("body", "floor", segment=((-0.2, side, 0.0), (0.2, side, 0.0)), radius=0.05, **law)
        height = 0.05 - (0.5 * weight / stiffness) ** (1.0 / 1.5)  # four ends carry the weight of 2 kg
    return model, [0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0]


def _run(model, q0, options):
    result = rm.simulate(model, q0, np.zeros(6), 1.5, t_eval=np.linspace(0.0, 1.5, 16), **options)
    assert result.success
    return result


def _acceleration(result):
    """The mean acceleration down the slope from t = 0.5 s to the end, 1.5 s (after the set-down's transient)."""
    return (result.qd[-1, 0] - result.qd[5, 0]) / (result.t[-1] - result.t[5])


@pytest.mark.parametrize("options", METHODS)
@pytest.mark.parametrize("stiffness", STIFFNESS)
@pytest.mark.parametrize("shape", ["capsule", "box"])
def test_a_body_set_down_below_its_friction_angle_stays_put(shape, stiffness, options):
    angle = math.atan(0.3)
    model, q0 = _set_down(shape, stiffness, angle, 0.5)
    result = _run(model, q0, options)
    # settled on its stick springs (at k = 1e9 its vibration, undamped by the contacts at rest, takes some 0.2 s
    # to die out under generalized_alpha's rho_inf = 0.9), then no creep over the last second
    assert abs(result.q[5, 0]) < 1e-3
    assert np.abs(result.q[-1, :3] - result.q[5, :3]).max() < 1e-6
    forces = result.contact_forces()
    mass = 2.0 if shape == "box" else 1.0
    # friction carries the weight down the slope (at k = 1e9 to 2.6e-5 under generalized_alpha: the stick
    # springs' vibration, 3e-11 m, still dies out)
    assert forces["tangential"][-1].sum(axis=0) == pytest.approx(
        [-mass * G * math.sin(angle), 0.0, 0.0], rel=1e-8 if stiffness < 1e9 else 1e-4, abs=1e-8
    )


@pytest.mark.parametrize("options", METHODS)
@pytest.mark.parametrize("stiffness", STIFFNESS)
@pytest.mark.parametrize("shape", ["capsule", "box"])
def test_a_body_set_down_above_its_friction_angle_slides_with_coulombs_acceleration(shape, stiffness, options):
    angle, friction = math.atan(0.8), 0.5
    model, q0 = _set_down(shape, stiffness, angle, friction)
    result = _run(model, q0, options)
    exact = G * (math.sin(angle) - friction * math.cos(angle))
    assert _acceleration(result) == pytest.approx(exact, rel=1e-6)
    assert np.abs(result.qd[-1, 1:]).max() < 1e-6  # straight down the slope, flat on it


@pytest.mark.parametrize("options", METHODS)
@pytest.mark.parametrize("stiffness", STIFFNESS)
def test_a_sphere_set_down_on_a_slope_rolls_without_slipping(stiffness, options):
    # the rolling needs friction 2/7 m g sin(theta), within mu m g cos(theta) up to tan(theta) = 7/2 mu = 1.75
    angle = math.atan(0.8)
    model, q0 = _set_down("sphere", stiffness, angle, 0.5)
    result = _run(model, q0, options)
    # generalized_alpha to 1e-9; bdf (orders 1-2 on contacts) at rtol 1e-6 to 2.8e-5, its slip 7.6e-5 of the speed
    tolerance = 1e-6 if options["method"] == "generalized_alpha" else 2e-4
    assert _acceleration(result) == pytest.approx(5.0 / 7.0 * G * math.sin(angle), rel=tolerance)
    rotation = rm.forward_kinematics(model, result.q[-1])[0][0]
    spin = rotation @ result.qd[-1, 3:]  # omega in ground axes (a free joint's is in the body's)
    assert abs(result.qd[-1, 0] - 0.1 * spin[1]) < tolerance * result.qd[-1, 0]  # v = r omega_y: no slip


@pytest.mark.parametrize("options", METHODS)
@pytest.mark.parametrize("stiffness", STIFFNESS)
def test_a_sphere_set_down_above_its_rolling_limit_slides_with_coulombs_acceleration(stiffness, options):
    angle, friction = math.atan(0.8), 0.2  # tan(theta) > 7/2 mu = 0.7
    model, q0 = _set_down("sphere", stiffness, angle, friction)
    result = _run(model, q0, options)
    assert _acceleration(result) == pytest.approx(G * (math.sin(angle) - friction * math.cos(angle)), rel=1e-6)
