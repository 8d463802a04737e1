"""Contact and friction of a spatial model (``Model3D.add_ground``, ``add_drum``, ``add_contact``) against closed
forms: restitution, sticking and sliding on a slope, a sphere rolling without slip, falling off a table's edge,
leaving a drum, and the energy balance with the contacts' work."""

import math
import re

import numpy as np
import pytest
from _helpers import child_on_its_parents_plane, lowered_until_touching

import recursive_mbd as rm
from recursive_mbd._kernels.spatial import contact as kernels
from recursive_mbd._kernels.spatial.layout import CS_ACTIVE, CS_BODY, CS_SURF, CS_VIN, N_CSTATE, N_PER_CONTACT
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
    ({"method": "scipy:Radau"}, "'scipy:Radau' does not integrate contacts yet"),
    ({"formulation": "augmented"}, "contacts act in the recursive formulation"),
])
def test_methods_that_do_not_integrate_spatial_contacts_refuse_them(options, message):
    with pytest.raises(ValueError, match=message):
        rm.simulate(_ball(stiffness=1e6), _at(0.2), AT_REST, 0.1, **options)


def test_the_compiled_forward_dynamics_takes_the_contacts_at_the_default_state():
    model = _ball(stiffness=1e6, gravity=(0.0, 0.0, -G), friction=0.3)
    q, v = np.array(_at(0.099)), np.array([0.3, 0.0, -0.1, 0.0, 1.0, 0.0])
    vdot = rm.compiled_forward_dynamics(model)(q, v)
    assert np.array_equal(vdot, rm.forward_dynamics(model, q, v))
    assert vdot[2] > 0.0  # pressed 1 mm in: pushed up


def test_forward_dynamics_takes_the_contact_state_the_run_integrated_with():
    # a ball rolling and a capsule held by its stretched stick springs on a slope: at every sample the accelerations
    # of rm.forward_dynamics at the run's contact state are those of the run's own dynamics (result.qdd)
    angle = math.atan(0.3)
    model = _pair(1e6, gravity=_slope(angle))
    result = rm.simulate(model, _resting(1e6, G * math.cos(angle)), np.zeros(12), 0.2,
                         t_eval=np.linspace(0.0, 0.2, 5), rtol=1e-8, atol=1e-10)
    assert np.all(result.contact_state[1:, :, CS_ACTIVE] == 1.0)
    run = result.qdd()
    for i in range(result.t.size):
        state = result.contact_state[i]
        vdot = rm.forward_dynamics(model, result.q[i], result.qd[i], contact_state=state)
        assert np.abs(vdot - run[i]).max() <= 1e-12 * np.abs(run[i]).max()
        dense = rm.forward_dynamics(model, result.q[i], result.qd[i], method="mass_matrix", contact_state=state)
        assert np.abs(dense - vdot).max() <= 1e-10 * np.abs(vdot).max()
    # the anchors matter: at rest on its stretched springs the capsule does not move; anchored afresh (the default
    # state, friction from the damper alone) it starts down the slope with g sin
    held = rm.forward_dynamics(model, result.q[-1], result.qd[-1], contact_state=result.contact_state[-1])
    fresh = rm.forward_dynamics(model, result.q[-1], result.qd[-1])
    assert abs(held[6]) < 1e-6
    assert fresh[6] == pytest.approx(G * math.sin(angle), rel=1e-3)
    with pytest.raises(rm.StateError, match="contact_state"):
        rm.forward_dynamics(model, result.q[-1], result.qd[-1], contact_state=np.zeros((3, 6)))


def test_forward_dynamics_of_a_planar_model_in_3d_with_contacts_is_the_planar_one():
    # a disc and a capsule on planar joints (x, y, angle) touching a floor, stick anchors stretched: the same
    # accelerations from the planar model and the spatial one built in its xy plane (gravity -y, floor normal +y)
    law = {"stiffness": 1e5, "restitution": 0.5, "friction": 0.4, "min_impact_speed": 0.1}
    planar = rm.Model(gravity=(0.0, -G))
    spatial = rm.Model3D(gravity=(0.0, -G, 0.0))
    for model in (planar, spatial):
        three = model is spatial
        model.add_body(joint="planar", mass=1.0, inertia=(0.004 if not three else (0.002, 0.002, 0.004, 0, 0, 0)),
                       name="disc")
        model.add_body(joint="planar", mass=2.0, inertia=(0.03 if not three else (1e-3, 0.03, 0.03, 0, 0, 0)),
                       name="bar")
        model.add_ground("floor", normal=(0.0, 1.0, 0.0) if three else (0.0, 1.0))
        model.add_contact("disc", "floor", radius=0.1, **law)
        ends = ((-0.2, 0.0), (0.2, 0.0))
        model.add_contact("bar", "floor", segment=tuple(end + (0.0,) for end in ends) if three else ends,
                          radius=0.05, **law)
    q = np.array([0.01, 0.0995, 0.3, 1.0, 0.049, 0.002])  # depths 0.5, 1.4 and 0.6 mm
    qd = np.array([0.4, -0.1, 2.0, -0.2, 0.05, 0.3])
    state2 = np.zeros((3, 6))
    state3 = np.zeros((3, 8))
    for row, (body, point) in enumerate(((0, (0.0, -0.1)), (1, (-0.2, -0.05)), (1, (0.2, -0.05)))):
        x, y, angle = q[3 * body:3 * body + 3]
        turn = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
        ground = turn @ point + (x, y) + (1e-4 * (row + 1), 0.0)  # the surface's anchor 0.1 to 0.3 mm behind
        state2[row, :2] = state3[row, :2] = (1.0, 0.5)
        state2[row, 2:4] = state3[row, 2:4] = point
        state2[row, 4:6] = state3[row, 5:7] = ground
    expected = rm.forward_dynamics(planar, q, qd, contact_state=state2)
    got = rm.forward_dynamics(spatial, q, qd, contact_state=state3)
    assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max()
    free = rm.forward_dynamics(planar, q, qd, contact_state=np.zeros((3, 6)))  # the anchors change the result
    assert np.abs(free - expected).max() > 1e-3 * np.abs(expected).max()
    assert np.abs(rm.forward_dynamics(spatial, q, qd) - free).max() <= 1e-12 * np.abs(free).max()


def _contact_scene():
    """Three links on spherical joints from a free base, a tilted table with one open side and a drum on an
    oblique axis; a sphere on the base, capsules on the links (one list: a range entry in a file)."""
    model = rm.Model3D(name="scene")
    model.add_body(joint="free", mass=1.0, inertia=0.01, name="base")
    for k in range(3):
        model.add_body("base" if k == 0 else f"link{k - 1}", "spherical", parent_point=(0.1, 0.0, 0.0),
                       child_point=(-0.1, 0.0, 0.0), mass=0.2, inertia=(1e-4, 2e-3, 2e-3, 0.0, 0.0, 0.0),
                       name=f"link{k}")
    model.add_ground("table", point=(0.0, 0.0, -0.5), normal=(0.1, 0.0, 1.0), tangent=(1.0, 1.0, 0.0),
                     extent=((-1.0, 2.0), (-math.inf, 0.5)))
    model.add_drum("drum", center=(3.0, 0.0, 1.0), radius=0.25, axis=(0.0, 1.0, 0.2))
    model.add_contact("base", "table", point=(0.0, 0.0, -0.05), radius=0.05, stiffness=1e5, restitution=0.5,
                      friction=0.4, name="foot")
    model.add_contact(["link0", "link1", "link2"], "drum", segment=((-0.1, 0.0, 0.0), (0.1, 0.0, 0.0)),
                      radius=0.02, stiffness=2e4, exponent=1.0, restitution=0.3, friction=0.6,
                      tangential_stiffness=5e3, name="wrap")
    return model


def test_spatial_contacts_round_trip_through_a_model_file(tmp_path):
    model = _contact_scene()
    q0 = model.neutral()
    q0[2] = 0.3
    rm.io.save(model, tmp_path / "scene.toml", q0=q0)
    text = (tmp_path / "scene.toml").read_text()
    assert 'body = {first = "link0", last = "link2"}' in text  # the list is one range entry
    back = rm.io.load(tmp_path / "scene.toml")
    assert isinstance(back.model, rm.Model3D) and np.array_equal(back.q0, q0)
    model.compile()
    for key in ("contact_int", "contact_real"):  # every shape, surface and law exactly as built
        assert np.array_equal(getattr(back.model, key), getattr(model, key)), key
    assert back.model.contact_names == model.contact_names
    assert list(back.model._surfaces) == ["table", "drum"]
    for name, surface in model._surfaces.items():
        for key, value in surface.items():
            assert np.array_equal(back.model._surfaces[name][key], value), (name, key)
    rm.io.save(back.model, tmp_path / "again.toml", q0=back.q0)
    assert (tmp_path / "again.toml").read_text() == text


@pytest.mark.parametrize(("table", "where", "message"), [
    ('[[ground]]\nextent = [-1.0, 1.0]', "ground[0].extent", r"\[\[lo1, hi1\], \[lo2, hi2\]\]"),
    ('[[ground]]\nnormal = [0.0, 1.0]', "ground[0].normal", "array of 3 numbers"),
    ('[[drum]]\nname = "d"\ncenter = [0.0, 0.0, 1.0]\nradius = 0.5', "drum[0].axis", "missing"),
    ('[[ground]]\n\n[[contact]]\nbody = "b"\nsurface = "floor"\nstiffness = 1e5\nsegment = [[0.0, 0.0], [1.0, 0.0]]'
     '\nradius = 0.1', "contact[0].segment", ""),
    ('[[ground]]\n\n[[contact]]\nbody = "c"\nsurface = "floor"\nstiffness = 1e5', "contact[0].body",
     "unknown body 'c'"),
    ('[[ground]]\n\n[[contact]]\nbody = "b"\nsurface = "floor"\nstiffness = -1.0', "contact[0]",
     "stiffness must be > 0"),
])
def test_bad_spatial_contact_entries_name_the_file_and_entry(table, where, message):
    text = ('[model]\ndimension = 3\n\n[[body]]\nname = "b"\nparent = "ground"\njoint = "free"\nmass = 1.0\n'
            f'inertia = 0.01\n\n{table}\n')
    with pytest.raises(rm.io.FileFormatError, match=rf"scene.toml: {re.escape(where)}.*{message}"):
        rm.io.loads(text, "scene.toml")


# ---- the implicit methods: the contacts' blocks of the Newton matrix, resting, bouncing and sticking -------------

def _pair(stiffness, gravity=(0.0, 0.0, -G), friction=0.5):
    """A ball (radius 0.1) and a capsule lying along x (its end spheres of radius 0.05 at x = -0.2, 0.2), each of
    1 kg on a free joint over the floor: the one model of the implicit methods' tests."""
    model = rm.Model3D(gravity=gravity)
    model.add_body(joint="free", mass=1.0, inertia=0.004, name="ball")
    model.add_body(joint="free", mass=1.0, inertia=0.02, name="block")
    model.add_ground()
    law = {"stiffness": stiffness, "restitution": 0.5, "friction": friction, "min_impact_speed": 0.1}
    model.add_contact("ball", "floor", radius=0.1, **law)
    model.add_contact("block", "floor", segment=((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0)), radius=0.05, **law)
    return model


def _resting(stiffness, weight=G):
    """q0 of the pair at rest on the floor at the depths where Hertz's law k d^1.5 carries each one's weight
    (the ball at x = 0, the block at x = 1)."""
    ball = (weight / stiffness) ** (1.0 / 1.5)
    end = (0.5 * weight / stiffness) ** (1.0 / 1.5)
    return [0.0, 0.0, 0.1 - ball, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.05 - end, 1.0, 0.0, 0.0, 0.0]


def _rotation(vector):
    """exp([vector]) (Rodrigues)."""
    angle = np.linalg.norm(vector)
    if angle == 0.0:
        return np.eye(3)
    k = np.array([[0.0, -vector[2], vector[1]], [vector[2], 0.0, -vector[0]], [-vector[1], vector[0], 0.0]]) / angle
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * k @ k


def _drum_pair(friction=0.5):
    """A ball (radius 0.1) and a capsule (its axis from (-0.2, 0, 0) to (0.2, 0, 0), radius 0.05), each of 1 kg on
    a free joint, on a drum of radius 0.5 about the ground's y axis: the ball on its crown, the capsule across it
    at y = 1 (one row at its axis' point nearest the drum's axis, inside the segment)."""
    model = rm.Model3D(gravity=(0.0, 0.0, -G))
    model.add_body(joint="free", mass=1.0, inertia=0.004, name="ball")
    model.add_body(joint="free", mass=1.0, inertia=0.02, name="block")
    model.add_drum("drum", center=(0.0, 0.0, 0.0), radius=0.5, axis=(0.0, 1.0, 0.0))
    law = {"stiffness": 1e6, "restitution": 0.5, "friction": friction, "min_impact_speed": 0.1}
    model.add_contact("ball", "drum", radius=0.1, **law)
    model.add_contact("block", "drum", segment=((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0)), radius=0.05, **law)
    return model


def _floor_rows(rng):
    """The floor pair's poses, twists and contact state for the blocks' test: the ball slides (its trial friction
    past mu F_n), the capsule's two end rows stick on anchors 1e-4 m from their contact points."""
    rot = np.array([_rotation(rng.normal(size=3) * 0.005) for _ in range(2)])
    pos = np.array([[0.0, 0.0, 0.099], [1.0, 0.0, 0.047]])
    omega = np.array([[0.3, -0.2, 0.5], [0.1, 0.2, -0.1]])
    vel = np.array([[0.5, 0.2, -0.05], [0.002, -0.001, 0.01]])
    rows = ((0, (0.0, 0.0, -0.1)), (1, (-0.2, 0.0, -0.05)), (1, (0.2, 0.0, -0.05)))
    return _pair(1e6), rot, pos, omega, vel, rows, [True, False, False], 1e-4


def _drum_rows(rng):
    """The drum pair's poses, twists and contact state for the blocks' test: the ball 0.9 mm into the drum off its
    crown, sliding; the capsule turned 0.3 rad about z (its nearest point off its middle) 0.47 mm in, sticking on
    anchors about 2e-5 m from its contact point."""
    rot = np.array([_rotation(rng.normal(size=3) * 0.005), _rotation(np.array([0.01, -0.02, 0.3]))])
    pos = np.array([[0.05, 0.0, 0.597], [-0.03, 1.0, 0.549]])
    omega = np.array([[0.3, -0.2, 0.5], [0.1, 0.2, -0.1]])
    vel = np.array([[0.5, 0.2, -0.05], [0.002, -0.001, 0.01]])
    centre = pos[0] / np.linalg.norm(pos[0])  # the ball's contact point: on its surface towards the drum's axis
    model = _drum_pair()
    packed = model._require_compiled()
    state = np.zeros(N_CSTATE * 2)
    per = np.zeros((2, N_PER_CONTACT))
    kernels.contact_forces(packed.contact_int, packed.contact_real, rot, pos, omega, vel, state, 0, np.zeros((2, 6)),
                           np.zeros(2), per)
    assert per[:, 4].min() > 4e-4  # both touch
    point = per[1, 5:8]
    rows = ((0, tuple(rot[0].T @ (pos[0] - 0.1 * centre - pos[0]))), (1, tuple(rot[1].T @ (point - pos[1]))))
    return model, rot, pos, omega, vel, rows, [True, False], 2e-5


@pytest.mark.parametrize("surface", ["floor", "drum"])
@pytest.mark.parametrize("reversed_slip", [False, True])
def test_the_contact_blocks_are_the_derivative_of_the_contact_loads(reversed_slip, surface):
    # the blocks [C | K] of every body against central differences of its contact wrench, by its velocity twist
    # (C) and by a displacement of its pose, (R, o) -> (R exp(e_w), o + R e_v) with its body-axes twist held (K):
    # the ball slides (its friction clipped at mu F_n), the capsule sticks on stretched anchors (on the floor its two
    # end rows, on the drum its row at its axis' point nearest the drum's axis, which slides along the axis as the
    # capsule turns); with reversed_slip the ball's slip turned round since the last Newton iterate, so the blocks
    # and the loads are its unclipped law's (``slip_reversals``). On the drum the normal turns with the shape's
    # centre and the stretch is measured along the drum's arc and axis and along the sphere's great circle
    rng = np.random.default_rng(7)
    rows_of = _floor_rows if surface == "floor" else _drum_rows
    model, rot, pos, omega, vel, points, slides_expected, spread = rows_of(rng)
    packed = model._require_compiled()
    rows, real = packed.contact_int, packed.contact_real
    nrows = rows.shape[0]
    state = np.zeros(N_CSTATE * nrows)
    for row, (body, point) in enumerate(points):
        ground = rot[body] @ np.array(point) + pos[body]  # about the contact point: the anchors ``spread`` apart
        state[N_CSTATE * row + CS_ACTIVE] = 1.0
        state[N_CSTATE * row + CS_VIN] = 0.5
        state[N_CSTATE * row + CS_BODY:N_CSTATE * row + CS_BODY + 3] = rot[body].T @ (
            ground + rng.normal(size=3) * spread - pos[body])
        state[N_CSTATE * row + CS_SURF:N_CSTATE * row + CS_SURF + 3] = ground + rng.normal(size=3) * spread

    linear = np.zeros((nrows, 4))

    def wrench(rot, pos, omega, vel, per_contact=None):
        out = np.zeros((2, 6))
        kernels.contact_forces(rows, real, rot, pos, omega, vel, state, 0, out, np.zeros(2),
                               np.zeros((nrows, N_PER_CONTACT)) if per_contact is None else per_contact)
        if reversed_slip:  # the last iterate's slip direction opposite this one's: the ball's row is marked
            if per_contact is not None:
                linear[0, 1:] = -per_contact[0, 1:4]
            marks = linear.copy()
            assert kernels.slip_reversals(packed.body_int, rows, real, rot, pos, omega, vel, state, 0, marks, out) == 1
            assert marks[:, 0].tolist() == [1.0] + [0.0] * (nrows - 1)
        return out

    per_contact = np.zeros((nrows, N_PER_CONTACT))
    wrench(rot, pos, omega, vel, per_contact)
    limits = 0.5 * per_contact[:, 0]
    slides = np.linalg.norm(per_contact[:, 1:4], axis=1) >= limits * (1.0 - 1e-12)
    assert np.all(per_contact[:, 0] > 0.0) and list(slides) == slides_expected
    blocks = np.zeros((2, 6, 24))
    linear[0, 0] = 1.0 if reversed_slip else 0.0  # the mark ``slip_reversals`` set
    assert kernels.contact_newton_blocks(packed.body_int, rows, real, rot, pos, omega, vel, state, 0, blocks,
                                         linear) == nrows
    assert not blocks[:, :, 12:].any()  # no contact between a body and its parent
    twist_w = np.einsum("bji,bj->bi", rot, omega)  # the body-axes twists, held under a displacement
    twist_v = np.einsum("bji,bj->bi", rot, vel)
    for body in range(2):
        numeric = np.zeros((6, 12))
        for col in range(12):
            sides = []
            for step in (1e-7, -1e-7):
                r, p, w, v = rot.copy(), pos.copy(), omega.copy(), vel.copy()
                e = np.zeros(6)
                e[col % 6] = step
                if col < 6:
                    w[body] = rot[body] @ (twist_w[body] + e[:3])
                    v[body] = rot[body] @ (twist_v[body] + e[3:])
                else:
                    r[body] = rot[body] @ _rotation(e[:3])
                    p[body] = pos[body] + rot[body] @ e[3:]
                    w[body] = r[body] @ twist_w[body]
                    v[body] = r[body] @ twist_v[body]
                sides.append(wrench(r, p, w, v)[body])
            numeric[:, col] = -(sides[0] - sides[1]) / 2e-7
        error = np.abs(blocks[body, :, :12] - numeric).max() / np.abs(numeric).max()
        assert error < 1e-7, (surface, body, error)


@pytest.mark.parametrize("options", [{"method": "generalized_alpha", "dt": 1e-2},
                                     {"method": "bdf", "rtol": 1e-8, "atol": 1e-10}])
def test_the_implicit_methods_hold_a_sphere_and_a_capsule_at_rest_on_a_stiff_floor(options):
    # k = 1e9 N/m^1.5: the normal and the stick springs vibrate at 1800 rad/s (rk4 would need dt < 1.6 ms); the
    # implicit methods step over it (generalized_alpha at 10 ms, bdf in a few steps)
    model = _pair(1e9)
    result = rm.simulate(model, _resting(1e9), np.zeros(12), 1.0, **options)
    assert result.success and result.nsteps <= 100
    assert np.abs(result.q[-1] - result.q[0]).max() < 1e-12
    normal = result.contact_forces()["normal"][-1]
    assert normal[0] == pytest.approx(G, rel=1e-8)  # the ball's weight on its one row
    assert normal[1:].sum() == pytest.approx(G, rel=1e-8)  # the block's on its two ends


def _apex(result):
    """The ball's flight apex z + vz^2 / (2 g) at the run's end (in flight: the contact open)."""
    assert result.contact_forces()["active"][-1] == 2  # the block rests, the ball flies
    return result.q[-1, 2] + result.qd[-1, 2] ** 2 / (2.0 * G)


def test_a_ball_rebounds_under_the_implicit_methods_as_under_dopri5():
    # dropped from 0.2 m onto a contact of k = 1e7 N/m^1.5 (contact time 4 ms), at the flight after its rebound
    model = _pair(1e7)
    q0 = _resting(1e7)
    q0[2] = 0.3
    reference = _apex(rm.simulate(model, q0, np.zeros(12), 0.3, rtol=1e-10, atol=1e-12))
    assert reference == pytest.approx(0.1 + 0.25 * 0.2, rel=2e-2)  # e^2 of the drop, Hunt-Crossley's e = 0.5
    bdf = rm.simulate(model, q0, np.zeros(12), 0.3, method="bdf", rtol=1e-6, atol=1e-9)
    assert _apex(bdf) == pytest.approx(reference, rel=1e-3)
    # generalized_alpha, second order: 1.9e-3 at 0.25 ms (about 8 steps in the compression), 2.6e-4 at 0.125 ms
    alpha = rm.simulate(model, q0, np.zeros(12), 0.3, method="generalized_alpha", dt=1.25e-4)
    assert _apex(alpha) == pytest.approx(reference, rel=5e-4)


def test_generalized_alpha_stops_at_a_spatial_impact_its_step_does_not_resolve():
    model = _pair(1e7)
    q0 = _resting(1e7)
    q0[2] = 0.3
    with pytest.raises(SimulationError, match="contact 'contact0' .* was still compressing at only") as err:
        rm.simulate(model, q0, np.zeros(12), 0.3, method="generalized_alpha", dt=2e-3)
    assert err.value.result.t[-1] > 0.2  # the samples up to the impact are kept


def test_generalized_alpha_holds_a_capsule_below_its_friction_angle():
    # (the ball rolls off down the slope meanwhile)
    angle = math.atan(0.3)
    model = _pair(1e7, gravity=_slope(angle))
    result = rm.simulate(model, _resting(1e7, G * math.cos(angle)), np.zeros(12), 1.0, method="generalized_alpha",
                         dt=1e-3, every=100)
    assert np.abs(result.q[-1, 7:10] - result.q[5, 7:10]).max() < 1e-9  # no creep after it settled
    forces = result.contact_forces()
    assert forces["tangential"][-1, 1:].sum(axis=0) == pytest.approx([-G * math.sin(angle), 0.0, 0.0], rel=1e-8,
                                                                      abs=1e-8)


def _exact_matrix(model, q, v, blocks, loads, c_stiff, c_damp):
    """The exact Newton matrix of generalized_alpha (``newton.newton_factor`` at q, v, vdot = 0 and no update),
    from its factors (its inverse column by column)."""
    from recursive_mbd._kernels.spatial import layout as layout3d  # noqa: PLC0415
    from recursive_mbd._kernels.spatial import newton as spatial_newton  # noqa: PLC0415
    from recursive_mbd._kernels.spatial import tree as spatial_tree  # noqa: PLC0415

    packed = model._require_compiled()
    nb, nv, mx = model.nbodies, model.nv, int(packed.body_int[:, layout3d.NVJ].max())
    ws, s, tmp = np.zeros((nb, layout3d.W_SPATIAL)), np.zeros((nb, mx, 6)), np.zeros(spatial_tree.TMP_SIZE)
    fac = np.zeros((nb, spatial_newton.factor_width(mx)))
    assert spatial_newton.newton_factor(packed.body_int, packed.body_real, packed.gravity, q, v, np.zeros(nv),
                                        np.zeros(nv), c_stiff, c_damp, np.zeros(nv), ws, s, tmp, np.zeros(nv),
                                        np.zeros(spatial_newton.SCRATCH_SIZE), fac, blocks,
                                        np.zeros(0, dtype=np.uint8), loads) == 0
    inverse = np.zeros((nv, nv))
    for j in range(nv):
        spatial_newton.newton_apply(packed.body_int, ws, fac, np.eye(nv)[j], tmp, np.zeros((nb, mx)), inverse[:, j])
    return np.linalg.inv(inverse)


@pytest.mark.parametrize("case", ["ball on the floor", "ball on the drum", "revolute chain", "spherical chain",
                                  "spherical child on its parent's plane"])
def test_the_exact_newton_matrix_has_the_contacts_derivative_at_rest(case):
    # generalized_alpha's exact Newton matrix with the contacts' blocks and subtree loads minus without them, against
    # c_stiff (-dQ/dq) + c_damp (-dQ/dv) of the contacts' generalised force Q (central differences of M vdot + h from
    # forward dynamics with the contact state, gravity off; q moved by q (+) e as a step moves it), the bodies at
    # rest and the stick springs stretched: the blocks on the touching body and the contact loads turning with the
    # joints above it (a chain's tip on the floor; the free ball's joint, whose translation turns with its rotation);
    # a row between a body and its parent on the child's joint alone (a sphere on a spherical joint's child pressing
    # into a plane that its parent, hinged about y, carries).
    # Moving and sliding bodies: ``test_contact3d_newton.py`` (the same matrix in bdf, against its corrector residual)
    from recursive_mbd._kernels.spatial import layout as layout3d  # noqa: PLC0415
    from recursive_mbd._kernels.spatial import tree as spatial_tree  # noqa: PLC0415

    law = {"stiffness": 1e5, "restitution": 0.5, "friction": 0.3, "min_impact_speed": 0.5}
    if case.startswith("ball"):
        model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
        model.add_body(joint="free", mass=1.0, inertia=0.004, name="ball")
        if case.endswith("floor"):
            model.add_ground()
            q = np.array([0.0, 0.0, 0.1 - 4e-4, 1.0, 0.0, 0.0, 0.0])
        else:
            model.add_drum("floor", center=(0.0, 0.0, 0.0), radius=0.5, axis=(0.0, 1.0, 0.0))
            q = np.array([0.05, 0.0, 0.597, 1.0, 0.0, 0.0, 0.0])
        model.add_contact("ball", "floor", radius=0.1, **law)
    elif case.endswith("plane"):
        model, q = child_on_its_parents_plane((0.0, 0.0, 0.0), law)
    else:
        joint = case.split()[0]
        model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
        axis = {"axis": (0.0, 1.0, 0.0)} if joint == "revolute" else {}
        inertia = (0.001, 0.02, 0.02, 0.0, 0.0, 0.0)
        model.add_body(parent="ground", joint=joint, parent_point=(0, 0, 0.5), child_point=(-0.25, 0, 0), mass=1.0,
                       inertia=inertia, name="a", **axis)
        model.add_body(parent="a", joint=joint, parent_point=(0.25, 0, 0), child_point=(-0.25, 0, 0), mass=1.0,
                       inertia=inertia, name="b", **axis)
        model.add_ground()
        model.add_contact("b", "floor", point=(0.25, 0, 0), radius=0.02, **law)
    packed = model._require_compiled()
    nb, nv = model.nbodies, model.nv
    mx = int(packed.body_int[:, layout3d.NVJ].max())
    zero = np.zeros(nv)

    def kinematics(q, v):
        rot, pos, omega, vel = np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3))
        ws, s = np.zeros((nb, layout3d.W_SPATIAL)), np.zeros((nb, mx, 6))
        assert spatial_tree.poses(packed.body_int, packed.body_real, q, v, ws, s, np.zeros(spatial_tree.TMP_SIZE),
                                  rot, pos, omega, vel, True) == 0
        return ws, rot, pos, omega, vel

    def per_contact(q, state):
        _, rot, pos, omega, vel = kinematics(q, zero)
        per = np.zeros((1, N_PER_CONTACT))
        kernels.contact_forces(packed.contact_int, packed.contact_real, rot, pos, omega, vel, state, 0,
                               np.zeros((nb, 6)), np.zeros(2), per)
        return per[0]

    if case.endswith("chain"):  # the second joint turned until the tip sphere is 0.4 mm deep (bisection)
        def pose(angle):
            if joint == "revolute":
                return np.array([0.6, angle])
            turns = []
            for direction, a in (((0.1, 1.0, 0.05), 0.6), ((0.0, 1.0, -0.2), angle)):
                unit = np.array(direction) / np.linalg.norm(direction)
                turns.append(np.r_[math.cos(a / 2), math.sin(a / 2) * unit])
            return np.concatenate(turns)

        def tip_height(angle):
            _, rot, pos, _, _ = kinematics(pose(angle), zero)
            return (pos[1] + rot[1] @ np.array([0.25, 0.0, 0.0]))[2]

        q = pose(lowered_until_touching(tip_height, -1.0, 0.0, 0.0196))  # the tip above the floor at -1, below at 0
    state = np.zeros(N_CSTATE)
    per = per_contact(q, state)
    assert 3.9e-4 < per[4] < 1e-3  # the depth
    body = packed.contact_int[0, 0]
    _, rot, pos, omega, vel = kinematics(q, zero)
    point = per[5:8]
    state[CS_ACTIVE] = 1.0
    state[CS_VIN] = 0.7
    state[CS_BODY:CS_BODY + 3] = rot[body].T @ (point + np.array([1e-7, -2e-7, 0.0]) - pos[body])
    owner = packed.contact_int[0, 1]  # the surface's anchor in its owner's frame (the ground's for -1)
    state[CS_SURF:CS_SURF + 3] = point if owner < 0 else rot[owner].T @ (point - pos[owner])
    per = per_contact(q, state)
    assert np.linalg.norm(per[1:4]) < 0.3 * per[0]  # sticking, the stick spring stretched

    def force(q, v):
        return rm.mass_matrix(model, q) @ rm.forward_dynamics(model, q, v, contact_state=state[None, :]) + (
            rm.bias_forces(model, q, v))

    c_stiff, c_damp, h = 2.5e-5, 5e-3, 1e-7
    expected = np.zeros((nv, nv))
    for j in range(nv):
        e = np.eye(nv)[j] * h
        expected[:, j] = -(c_stiff * (force(rm.integrate_configuration(model, q, e), zero) - force(
            rm.integrate_configuration(model, q, -e), zero)) + c_damp * (force(q, e) - force(q, -e))) / (2 * h)
    ws, rot, pos, omega, vel = kinematics(q, zero)
    blocks = np.zeros((nb, 6, 24))
    assert kernels.contact_newton_blocks(packed.body_int, packed.contact_int, packed.contact_real, rot, pos, omega,
                                         vel, state, 0, blocks, np.zeros((0, 4))) == 1
    loads = np.zeros((nb, 6))  # the subtree loads, as ``system.contact_subtree_loads`` makes them
    kernels.transmitted_loads(packed.body_int, packed.contact_int, packed.contact_real, rot, pos, omega, vel, state,
                              0, np.zeros((0, 4)), loads)
    for i in range(nb - 1, 0, -1):
        spatial_tree._force_to_parent_add(ws, i, loads[i], 0, loads[i - 1], 0)
    added = (_exact_matrix(model, q, zero, blocks, loads, c_stiff, c_damp)
             - _exact_matrix(model, q, zero, np.zeros((nb, 6, 24)), np.zeros((0, 6)), c_stiff, c_damp))
    assert np.abs(added - expected).max() < 1e-7 * np.abs(expected).max()
