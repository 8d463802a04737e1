"""Contact and friction of a spatial model (``Model3D.add_ground``, ``add_drum``, ``add_contact``) against closed
forms: restitution, sticking and sliding on a slope, a sphere rolling without slip, falling off a table's edge,
leaving a drum, and the energy balance with the contacts' work."""

import math

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd.errors import ModelError, SimulationError

G = 9.81
AT_REST = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def _ball(gravity=(0.0, 0.0, 0.0), mass=2.0, radius=0.1, extent=None, **law):
    """A solid sphere on a free joint over the floor z = 0 (the x axis downhill when gravity is tilted)."""
    model = rm.Model3D(gravity=gravity)
    model.add_body(joint="free", mass=mass, inertia=0.4 * mass * radius ** 2, name="ball")
    model.add_ground(extent=extent)
    model.add_contact("ball", "floor", radius=radius, **law)
    return model


def _at(height):
    return [0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0]


def _slope(angle):
    """Gravity of a slope at ``angle``: the floor's x axis runs downhill."""
    return (G * math.sin(angle), 0.0, -G * math.cos(angle))


def test_a_sphere_rebounds_with_the_coefficient_of_restitution_at_every_impact_speed():
    model = _ball(stiffness=1e6, restitution=0.7)
    for speed in (1.0, 3.0):
        result = rm.simulate(model, _at(0.1), [0.0, 0.0, -speed, 0.0, 0.0, 0.0], 0.05)
        assert result.success
        assert result.qd[-1, 2] / speed == pytest.approx(0.7, abs=1e-6)
        assert result.contact_state[-1, 0, 0] == 0.0  # the contact has opened again
    result = rm.simulate(model, _at(0.1), [0.0, 0.0, -1.0, 0.0, 0.0, 0.0], 0.05, method="rk4", dt=1e-5)
    assert result.qd[-1, 2] == pytest.approx(0.7, abs=1e-6)


def _block(angle, friction):
    """A capsule lying down the slope: its two end spheres hold it like a block's corners."""
    model = rm.Model3D(gravity=_slope(angle))
    model.add_body(joint="free", mass=1.0, inertia=0.02, name="block")
    model.add_ground()
    model.add_contact("block", "floor", segment=((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0)), radius=0.05, stiffness=1e6,
                      restitution=0.5, friction=friction, min_impact_speed=0.1)
    return model


def test_a_block_below_its_friction_angle_sticks_without_creeping():
    angle = math.atan(0.3)
    result = rm.simulate(_block(angle, 0.5), _at(0.05), AT_REST, 10.0, t_eval=np.linspace(0.0, 10.0, 11))
    assert result.success
    assert np.abs(result.q[-1, :3] - result.q[1, :3]).max() < 1e-9  # the anchors hold: no creep
    assert abs(result.q[1, 0]) < 1e-3  # settled on its stick springs
    forces = result.contact_forces()
    assert np.all(forces["active"][1:] == 2)
    # at rest, the two ends carry the weight: normal forces m g cos, friction m g sin up the slope (-x)
    assert forces["normal"][-1].sum() == pytest.approx(G * math.cos(angle), rel=1e-9)
    assert forces["tangential"][-1].sum(axis=0) == pytest.approx([-G * math.sin(angle), 0.0, 0.0], rel=1e-9,
                                                                  abs=1e-9)


def test_a_block_above_its_friction_angle_slides_with_coulombs_acceleration():
    angle, friction = math.atan(0.8), 0.5
    result = rm.simulate(_block(angle, friction), _at(0.05), AT_REST, 2.0, t_eval=np.linspace(0.0, 2.0, 21))
    rate = (result.qd[-1, 0] - result.qd[10, 0]) / (result.t[-1] - result.t[10])
    assert rate == pytest.approx(G * (math.sin(angle) - friction * math.cos(angle)), rel=1e-9)


def test_a_sphere_rolls_down_a_slope_without_slipping():
    angle, radius = math.atan(0.5), 0.1
    model = _ball(gravity=_slope(angle), mass=1.0, radius=radius, stiffness=1e6, restitution=0.5, friction=1.0)
    result = rm.simulate(model, _at(radius), AT_REST, 2.0, t_eval=np.linspace(0.0, 2.0, 21))
    rate = (result.qd[-1, 0] - result.qd[10, 0]) / (result.t[-1] - result.t[10])
    assert rate == pytest.approx(5.0 / 7.0 * G * math.sin(angle), rel=1e-8)  # a solid sphere: I = 2/5 m r^2
    rotation = rm.forward_kinematics(model, result.q[-1])[0][0]
    spin = rotation @ result.qd[-1, 3:]  # omega in ground axes (a free joint's is in the body's)
    assert abs(result.qd[-1, 0] - radius * spin[1]) < 1e-7  # v = r omega_y: no slip
    assert np.abs(result.energy_balance()).max() < 1e-9


def test_the_energy_balance_closes_with_the_contacts_work_through_bounces_spin_and_friction():
    model = _ball(gravity=(0.0, 0.0, -G), stiffness=1e5, restitution=0.6, friction=0.3)
    result = rm.simulate(model, _at(0.5), [1.0, 0.5, 0.0, 0.0, 3.0, 5.0], 1.5)
    assert result.success
    assert result.dissipated_work[-1] > 1.0  # the bounces and the slip dissipated energy
    assert np.abs(result.energy_balance()).max() < 1e-7 * result.dissipated_work[-1]
    forces = result.contact_forces()
    assert forces["dissipated_work"][-1] == result.dissipated_work[-1]
    assert forces["tangential"].shape == forces["point"].shape == (result.t.size, 1, 3)


def test_a_sphere_rolling_off_the_tables_edge_falls():
    model = _ball(gravity=(0.0, 0.0, -G), stiffness=1e6, restitution=0.5, friction=0.3, extent=((-1.0, 0.5),
                                                                                               (-1.0, 1.0)))
    result = rm.simulate(model, _at(0.1), [1.0, 0.0, 0.0, 0.0, 0.0, 0.0], 1.0, t_eval=np.linspace(0.0, 1.0, 11))
    on_table = result.q[:, 0] < 0.5
    assert np.abs(result.q[on_table, 2] - 0.1).max() < 1e-3  # carried while its centre is over the table
    assert result.q[-1, 0] > 0.5 and result.q[-1, 2] < -0.3  # then it falls past the edge
    assert result.contact_forces()["active"][-1] == 0


def test_a_point_leaves_a_frictionless_drum_where_gravity_no_longer_holds_it():
    # a particle starting on top of a cylinder at speed v0 leaves it at cos(phi) = (v0^2 / (g R) + 2) / 3
    radius, speed = 1.0, 0.5
    model = rm.Model3D()
    model.add_body(joint="free", mass=1.0, inertia=1.0, name="point")
    model.add_drum("drum", center=(0.0, 0.0, 0.0), radius=radius, axis=(0.0, 1.0, 0.0))
    model.add_contact("point", "drum", stiffness=1e9, exponent=1.0, restitution=0.5)
    times = np.linspace(0.0, 1.2, 2401)
    result = rm.simulate(model, _at(radius - G / 1e9), [speed, 0.0, 0.0, 0.0, 0.0, 0.0], 1.2, t_eval=times)
    leaves = np.flatnonzero(result.contact_forces()["normal"][:, 0] == 0.0)[0]
    angle = np.arctan2(result.q[leaves, 0], result.q[leaves, 2])
    assert math.cos(angle) == pytest.approx((speed ** 2 / (G * radius) + 2.0) / 3.0, abs=2e-3)


def test_a_contact_too_soft_for_its_impact_stops_the_run_naming_the_contact():
    # Hertz's peak depth ((p + 1) m v^2 / (2 k))^(1 / (p + 1)) = 0.33 m: the ball would pass through the floor
    model = _ball(stiffness=1e3, restitution=0.7)
    with pytest.raises(SimulationError, match="contact 'contact0' .* went deeper than its shape's radius") as err:
        rm.simulate(model, _at(0.1), [0.0, 0.0, -5.0, 0.0, 0.0, 0.0], 0.5)
    assert err.value.result.status == "failed" and err.value.result.t[-1] > 0.0  # the samples so far are kept


def test_a_spatial_contact_result_keeps_its_anchors_through_a_file(tmp_path):
    model = _ball(stiffness=1e6, restitution=0.7)
    result = rm.simulate(model, _at(0.1), [0.0, 0.0, -1.0, 0.0, 0.0, 0.0], 0.01)
    result.save(tmp_path / "ball.npz")
    back = rm.SimulationResult.load(tmp_path / "ball.npz", model)
    assert np.array_equal(back.contact_state, result.contact_state)
    assert np.array_equal(back.contact_forces()["normal"], result.contact_forces()["normal"])


@pytest.mark.parametrize(("build", "message"), [
    (lambda m: m.add_contact("b", "floor", radius=0.1, stiffness=-1.0), "contact0: stiffness must be > 0"),
    (lambda m: m.add_contact("b", "floor", radius=-0.1, stiffness=1.0), "radius must be >= 0"),
    (lambda m: m.add_contact("b", "floor", radius=0.1, stiffness=1.0, restitution=0.0), r"restitution must be in"),
    (lambda m: m.add_contact("b", "floor", radius=0.1, stiffness=1.0, friction=-0.2), "friction must be >= 0"),
    (lambda m: m.add_contact("b", "floor", radius=0.1, stiffness=1.0, exponent=0.5), "exponent must be >= 1"),
    (lambda m: m.add_contact("b", "floor", segment=((0, 0, 0), (0, 0, 0)), radius=0.1, stiffness=1.0), "coincide"),
    (lambda m: m.add_contact("c", "floor", radius=0.1, stiffness=1.0, name="foot"), "contact 'foot': body.*'c'"),
    (lambda m: m.add_contact("b", "table", radius=0.1, stiffness=1.0), "unknown surface 'table'"),
    (lambda m: m.add_drum("drum", center=(0.0, 0.0, -1.0), radius=0.5, axis=(0, 1, 0)), "inside ground 'floor'"),
    (lambda m: m.add_drum("drum", center=(0.0, 0.0, 1.0), radius=0.0, axis=(0, 1, 0)), "radius must be > 0"),
    (lambda m: m.add_drum("drum", center=(0.0, 0.0, 1.0), radius=0.5, axis=(0, 0, 0)), "axis must be non-zero"),
    (lambda m: m.add_ground("floor"), "duplicate surface name"),
    (lambda m: m.add_ground("wall", normal=(0.0, 0.0, 0.0)), "ground 'wall': normal must be non-zero"),
    (lambda m: m.add_ground("wall", normal=(1.0, 0.0, 0.0), tangent=(2.0, 0.0, 0.0)), "parallel to the normal"),
    (lambda m: m.add_ground("table", extent=((1.0, -1.0), (0.0, 1.0))), "extent along the tangent must have lo"),
])
def test_bad_contact_input_is_a_model_error_naming_the_entry(build, message):
    model = rm.Model3D()
    model.add_body(joint="free", name="b")
    model.add_ground("floor")
    with pytest.raises(ModelError, match=message):
        build(model)


@pytest.mark.parametrize(("options", "message"), [
    ({"method": "bdf"}, "'bdf' does not integrate the contacts of a Model3D"),
    ({"method": "generalized_alpha", "dt": 1e-3}, "'generalized_alpha' does not integrate the contacts"),
    ({"method": "scipy:Radau"}, "'scipy:Radau' does not integrate the contacts"),
    ({"formulation": "augmented"}, "contacts act in the recursive formulation"),
])
def test_methods_that_do_not_integrate_spatial_contacts_refuse_them(options, message):
    with pytest.raises(ValueError, match=message):
        rm.simulate(_ball(stiffness=1e6), _at(0.2), AT_REST, 0.1, **options)


def test_the_single_state_call_and_the_model_file_refuse_what_they_would_leave_out(tmp_path):
    model = _ball(stiffness=1e6)
    with pytest.raises(ModelError, match="has contacts: the single-state functions of a Model3D leave them out"):
        rm.forward_dynamics(model, _at(0.05), AT_REST)
    with pytest.raises(ModelError, match="has contacts"):
        rm.compiled_forward_dynamics(model)(np.array(_at(0.05)), np.zeros(6))
    with pytest.raises(ModelError, match="spatial model files cannot describe them yet"):
        rm.io.save(model, tmp_path / "ball.toml")
