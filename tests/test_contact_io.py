"""Contacts in model files ([[ground]], [[drum]], [[contact]]), in result files (the contacts' state), in pictures
(surfaces, shapes and contact forces) and on the command line."""

import re
from pathlib import Path

import numpy as np
import pytest
from _helpers import rmbd
from matplotlib.collections import LineCollection, PolyCollection

import recursive_mbd as rm
from recursive_mbd.errors import ResultFileError
from recursive_mbd.files.model_file import FileFormatError
from recursive_mbd.integrate.result import SimulationResult

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "models" / "chain_on_table.toml"
CAPSULE = ((-0.025, 0.0), (0.025, 0.0))

TREE = """
[model]
name = "two links"

[[body]]
name = "a"
parent = "ground"
joint = "planar"
mass = 1.0
inertia = 0.01

[[body]]
name = "b"
parent = "a"
joint = "revolute"
parent_point = [0.5, 0.0]
mass = 1.0
inertia = 0.01

[[ground]]
name = "table"
point = [0.0, -1.0]
extent = [-2.0, 2.0]

[[drum]]
name = "pulley"
center = [3.0, 0.0]
radius = 0.5
"""
CONTACT = """
[[contact]]
body = ["a", "b"]
surface = "table"
segment = [[-0.25, 0.0], [0.25, 0.0]]
radius = 0.05
stiffness = 1e5
"""


def _disc(damping=0.0):
    """The disc of tests/test_contact.py's energy balance (its compiled time loop is the suite's), hung on a
    spring-damper of ``damping`` if given."""
    model = rm.Model(gravity=(0.0, -9.81))
    model.add_body(joint="planar", mass=2.0, inertia=0.01, name="disc")
    model.add_body(joint="fixed", mass=1.0, inertia=0.01, name="bystander")  # as there: two columns, one layout
    model.add_ground()
    model.add_contact("disc", "floor", radius=0.1, stiffness=1e5, restitution=0.6, friction=0.3)
    if damping:
        model.add_spring_damper("disc", (0.0, 0.0), "ground", (0.0, 1.0), 1.0, damping, 0.85)
    return model


@pytest.fixture(scope="module")
def disc_run():
    model = _disc()
    return model, rm.simulate(model, [0.0, 0.5, 0.0], [1.0, 0.0, 5.0], 0.5, t_eval=np.linspace(0.0, 0.5, 26))


def _chain_by_hand(n=8):
    """The model of examples/models/chain_on_table.toml, built with the API."""
    model = rm.Model(name="chain on a table")
    inertia = 0.02 * 0.05 * 0.05 / 12.0  # a rod: m L^2 / 12, as the file writes it
    model.add_body("ground", "planar", child_point=(-0.025, 0.0), mass=0.02, inertia=inertia, name="link1")
    for j in range(1, n):
        model.add_body(f"link{j}", "revolute", (0.025, 0.0), (-0.025, 0.0), mass=0.02, inertia=inertia,
                       name=f"link{j + 1}")
    model.add_ground("table", point=(0.0, 0.0), extent=(-0.3, 0.259))
    model.add_drum("edge", center=(0.26, -0.02), radius=0.02)
    model.add_ground("side", point=(0.28, -0.02), normal=(1.0, 0.0), extent=(0.001, 0.28))
    model.add_ground("floor", point=(0.0, -0.3))
    links = [f"link{j + 1}" for j in range(n)]
    for surface in ("table", "edge", "side", "floor"):
        model.add_contact(links, surface, segment=CAPSULE, radius=0.005, stiffness=1e4, exponent=1.0,
                          restitution=0.3, friction=0.4, name=surface)
    model.compile()
    return model


def test_the_example_file_reads_as_the_model_built_by_hand():
    spec = rm.io.load(EXAMPLE)
    hand = _chain_by_hand()
    for attr in ("contact_int", "contact_real", "body_int", "body_real"):
        np.testing.assert_array_equal(getattr(spec.model, attr), getattr(hand, attr), err_msg=attr)
    assert spec.model.contact_names == hand.contact_names
    assert spec.model.ncontacts == 8 * (2 + 1 + 2 + 2)  # a capsule: two rows on a plane, one on a drum
    assert "contact[0].tangential_stiffness = from the normal law" in spec.defaults


def test_a_contact_body_is_a_name_a_list_or_a_range():
    by_list = rm.io.loads(TREE + CONTACT, "model.toml").model
    by_range = rm.io.loads(TREE + CONTACT.replace('["a", "b"]', '{first = "a", last = "b"}'), "model.toml").model
    single = rm.io.loads(TREE + CONTACT.replace('["a", "b"]', '"b"'), "model.toml").model
    np.testing.assert_array_equal(by_range.contact_real, by_list.contact_real)
    assert by_list.contact_names == by_range.contact_names == (
        "contact0 end 0", "contact0 end 1", "contact1 end 0", "contact1 end 1")
    np.testing.assert_array_equal(single.contact_int[:, 0], [1, 1])
    np.testing.assert_array_equal(single.contact_real, by_list.contact_real[2:])


@pytest.mark.parametrize(("change", "where", "words"), [
    (("stiffness = 1e5", "stiffness = 1e5\nstifness = 2.0"), "contact[0]", "unknown key 'stifness'"),
    (("stiffness = 1e5", 'stiffness = "stiff"'), "contact[0].stiffness", "expected a finite number"),
    (("stiffness = 1e5", "stiffness = -1e5"), "contact[0]", "stiffness must be > 0"),
    (("stiffness = 1e5", "stiffness = 1e5\nrestitution = 0.0"), "contact[0]", "restitution must be in"),
    (("stiffness = 1e5", "stiffness = 1e5\nfriction = -0.1"), "contact[0]", "friction must be >= 0"),
    (("stiffness = 1e5\n", ""), "contact[0].stiffness", "missing; expected a number"),
    (('["a", "b"]', '["a", "c"]'), "contact[0].body", "unknown body 'c'"),
    (('["a", "b"]', "[]"), "contact[0].body", "expected a body name"),
    (('["a", "b"]', '{first = "b", last = "a"}'), "contact[0].body", "the range runs backwards"),
    (('["a", "b"]', '{first = "a", last = "z"}'), "contact[0].body.last", "unknown body 'z'"),
    (('["a", "b"]', '{first = "a", to = "b"}'), "contact[0].body", "unknown key 'to'"),
    (('surface = "table"', 'surface = "tabel"'), "contact[0]", "unknown surface 'tabel'"),
    (("[[-0.25, 0.0], [0.25, 0.0]]", "[[0.25, 0.0], [0.25, 0.0]]"), "contact[0]", "zero-length capsule"),
    (("[[-0.25, 0.0], [0.25, 0.0]]", "[[0.25, 0.0]]"), "contact[0].segment", "expected 2 arrays of 2 numbers"),
    (("radius = 0.05\n", "radius = 0.05\npoint = [0.0, 0.0]\n"), "contact[0].point", "has no point"),
    (("radius = 0.05\n", ""), "contact[0]", "needs a radius > 0"),
    (("extent = [-2.0, 2.0]", "extent = [2.0, -2.0]"), "ground[0]", "extent must have lo < hi"),
    (("extent = [-2.0, 2.0]", 'extent = [-2.0, "edge"]'), "ground[0].extent", r"expected an array \[lo, hi\]"),
    (("extent = [-2.0, 2.0]", "extent = [-2.0, 2.0]\nheight = 1.0"), "ground[0]", "unknown key 'height'"),
    (("radius = 0.5", "radius = -0.5"), "drum[0]", "radius must be > 0"),
    (("radius = 0.5", ""), "drum[0].radius", "missing"),
    (("center = [3.0, 0.0]", "center = [0.0, -1.5]"), "drum[0]", "inside ground 'table'"),
    (('name = "pulley"', 'name = "table"'), "drum[0]", "duplicate surface name"),
    (('name = "pulley"', 'name = "pulley"\nbody = "c"'), "drum[0]", "'c'"),
])
def test_bad_contact_entries_are_refused_naming_the_file_and_the_entry(change, where, words):
    old, new = change
    text = TREE + CONTACT
    assert old in text
    with pytest.raises(FileFormatError, match=rf"^model\.toml: {re.escape(where)}: .*{words}"):
        rm.io.loads(text.replace(old, new, 1), "model.toml")


def test_a_mechanism_form_file_takes_contacts_checked_by_the_entry():
    text = (ROOT / "examples" / "models" / "four_bar.toml").read_text() + """
[[ground]]
name = "stop"
point = [0.0, -0.9]

[[contact]]
body = ["crank", "rocker"]
surface = "stop"
point = [0.5, 0.0]
radius = 0.05
stiffness = 1e6
"""
    spec = rm.io.loads(text, "four_bar.toml")
    model = spec.model
    # on the built model: bodies by name, the point in the body frame of the placement (relative to the centre of
    # mass in contact_real), the ground's surface point and normal
    assert [model.body_names[row] for row in model.contact_int[:, 0]] == ["crank", "rocker"]
    coms = model.body_com[model.contact_int[:, 0]]
    np.testing.assert_allclose(model.contact_real[:, 0:2] + coms, [[0.5, 0.0], [0.5, 0.0]], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(model.contact_real[:, 5:9], [[0.0, -0.9, 0.0, 1.0]] * 2)
    np.testing.assert_array_equal(rm.io.loads(rm.io.dumps(model, spec.q0)).model.contact_real, model.contact_real)
    with pytest.raises(FileFormatError, match=r"four_bar.toml: contact\[0\]: contact0: stiffness must be > 0"):
        rm.io.loads(text.replace("stiffness = 1e6", "stiffness = -1e6"), "four_bar.toml")
    with pytest.raises(FileFormatError, match=r"four_bar.toml: contact\[0\].body: unknown body 'rokker'"):
        rm.io.loads(text.replace('"rocker"]', '"rokker"]'), "four_bar.toml")


def test_a_chain_form_file_takes_contacts_on_its_links():
    text = """
[model]
form = "chain"
[chain]
n = 4
length = 1.0
mass = 1.0
[[drum]]
name = "drum"
center = [0.0, -2.0]
radius = 0.3
[[contact]]
body = {first = "link2", last = "link4"}
surface = "drum"
segment = [[0.0, 0.125], [0.0, -0.125]]
radius = 0.01
stiffness = 1e6
friction = 0.5
"""
    model = rm.io.loads(text, "chain.toml").model
    np.testing.assert_array_equal(model.contact_int[:, 0], [1, 2, 3])
    assert model.contact_names == ("contact0", "contact1", "contact2")


def test_saving_writes_the_contacts_back_and_a_round_trip_gives_the_same_model(tmp_path):
    model = _chain_by_hand(5)  # ranges
    model_copy = rm.Model()
    for body in ("p", "r"):
        model_copy.add_body(joint="planar", mass=1.0, inertia=0.1, name=body)
    # (a normal of length 1 to the bit: add_ground normalises the unit normal it wrote again on reading)
    model_copy.add_ground(point=(0.0, -1.0), normal=(-1.2, 1.6), extent=(-np.inf, 2.0), body="p")
    model_copy.add_drum("wheel", center=(0.5, 0.0), radius=0.2, body="p")
    model_copy.add_contact("r", "floor", point=(0.1, 0.0), stiffness=1e5, exponent=1.2, restitution=0.5,
                           friction=0.7, tangential_stiffness=3e3, tangential_damping=2.0, min_impact_speed=0.3,
                           name="corner")
    model_copy.add_contact(["r"], "wheel", radius=0.05, stiffness=1e5)  # a list of one: named contact1
    model_copy.compile()
    for built in (model, model_copy):
        path = tmp_path / "contact.toml"
        rm.io.save(built, path)
        again = rm.io.load(path).model
        for attr in ("contact_int", "contact_real", "body_int", "body_real"):
            np.testing.assert_array_equal(getattr(again, attr), getattr(built, attr), err_msg=attr)
        assert again.contact_names == built.contact_names
        assert rm.io.dumps(again) == path.read_text()
    text = rm.io.dumps(model)
    assert text.count("[[contact]]") == 4 and 'body = {first = "link1", last = "link5"}' in text
    assert "extent = [-inf, 2.0]" in rm.io.dumps(model_copy)


def test_results_keep_the_contacts_state_and_give_their_forces_when_loaded(tmp_path, disc_run):
    model, res = disc_run
    forces = res.contact_forces()
    res.save(tmp_path / "disc.npz")
    back = SimulationResult.load(tmp_path / "disc.npz", model)
    np.testing.assert_array_equal(back.contact_state, res.contact_state)
    loaded = back.contact_forces()  # without the run's inputs: the contact law needs none
    for key, value in forces.items():
        np.testing.assert_array_equal(loaded[key], value, err_msg=key)
    assert forces["active"].max() == 1 and forces["active"][0] == 0
    np.testing.assert_array_equal(SimulationResult.load(tmp_path / "disc.npz").contact_state, res.contact_state)


def test_the_contact_work_is_the_dissipated_work_when_nothing_else_dissipates(disc_run):
    model, res = disc_run
    forces = res.contact_forces()
    np.testing.assert_array_equal(forces["dissipated_work"], res.dissipated_work)
    assert res.dissipated_work[-1] > 1.0 and np.all(forces["power"] >= -1e-9)
    kinetic, potential = res.energy()
    gravity = model.body_mass[0] * 9.81 * res.q[:, 1]
    np.testing.assert_allclose(forces["elastic_energy"], potential - gravity, rtol=0, atol=1e-12)
    assert forces["elastic_energy"].max() > 0.0
    damped = _disc(damping=0.5)
    run = rm.simulate(damped, [0.0, 0.15, 0.0], [0.0, 0.0, 0.0], 0.02, t_eval=np.linspace(0.0, 0.02, 3))
    assert run.contact_forces()["dissipated_work"] is None  # the run summed the damper's and the contacts' work


@pytest.mark.parametrize(("edit", "model", "words"), [
    (lambda a: a.pop("contact_state"), "disc", "entry 'contact_state' is missing, but the model has 1 contact"),
    (lambda a: None, "none", "entry 'contact_state' holds contacts, but the model has none"),
    (lambda a: a.update(contact_state=a["contact_state"][:, :, :4]), "disc", "entry 'contact_state' has shape"),
    (lambda a: a["contact_state"].__setitem__((3, 0, 0), 0.5), "disc", "active flag .* neither 0 nor 1"),
    (lambda a: a["contact_state"].__setitem__((3, 0, 2), np.nan), "disc", "holds non-finite values"),
    (lambda a: a.update(version=np.array(4)), "disc", r"result file version 4, this library reads version 3"),
])
def test_a_result_file_whose_contact_state_does_not_fit_is_refused(tmp_path, disc_run, edit, model, words):
    disc, res = disc_run
    res.save(tmp_path / "disc.npz")
    with np.load(tmp_path / "disc.npz") as data:
        arrays = {key: data[key].copy() for key in data.files}
    edit(arrays)
    np.savez(tmp_path / "bad.npz", **arrays)
    other = rm.Model(gravity=(0.0, -9.81))
    other.add_body(joint="planar", mass=2.0, inertia=0.01, name="disc")
    other.add_body(joint="fixed", mass=1.0, inertia=0.01, name="bystander")
    with pytest.raises(ResultFileError, match=f"bad.npz: .*{words}"):
        SimulationResult.load(tmp_path / "bad.npz", disc if model == "disc" else other)


def test_a_version_2_file_has_no_contact_state(tmp_path, disc_run):
    model, res = disc_run
    res.save(tmp_path / "disc.npz")
    with np.load(tmp_path / "disc.npz") as data:
        arrays = {key: data[key] for key in data.files if key != "contact_state"}
    np.savez(tmp_path / "v2.npz", **dict(arrays, version=np.array(2)))
    back = SimulationResult.load(tmp_path / "v2.npz", model)
    assert back.contact_state is None
    with pytest.raises(ValueError, match="the model has no contacts"):
        back.contact_forces()


def _segments(ax, kind=LineCollection):
    return [seg for c in ax.collections if type(c) is kind for seg in
            (c.get_segments() if kind is LineCollection else [p.vertices for p in c.get_paths()])]


def test_pictures_draw_the_table_over_its_extent_the_drum_the_capsules_and_the_contact_forces():
    model = _chain_by_hand(3)
    q = np.array([0.0, 0.0051, 0.0, 0.0, 0.0])  # on the table, 0.1 mm deep
    fig = rm.plot.draw(model, q)
    ax = fig.axes[0]
    lines = _segments(ax)
    # the table top: one line over its extent; the floor: unbounded, to the edges of the view
    assert any(len(seg) == 2 and np.allclose(seg, [[-0.3, 0.0], [0.259, 0.0]]) for seg in lines)
    x0, x1 = ax.get_xlim()
    assert any(len(seg) == 2 and np.allclose(seg, [[x0, -0.3], [x1, -0.3]]) for seg in lines)
    hatches = [seg for seg in lines if len(seg) == 2 and np.isclose(seg[0, 1], 0.0) and seg[1, 1] < 0.0
               and -0.3 <= seg[0, 0] <= 0.259]
    assert len(hatches) > 10  # hatched below, the solid side
    (disc,) = _segments(ax, PolyCollection)[-1:]
    np.testing.assert_allclose(np.hypot(*(disc - (0.26, -0.02)).T), 0.02, rtol=1e-12)  # the drum
    # each link's capsule: every point of its outline 5 mm from its segment
    placed = rm.plot.Outline(model).place(q)
    assert len(placed["shapes"]) == 3  # one per link, though each touches four surfaces
    poses = rm.forward_kinematics(model, q)[0]
    for body, outline in enumerate(placed["shapes"]):
        ends = poses[body, :2] + np.array(CAPSULE)
        s = np.clip((outline[:, 0] - ends[0, 0]) / 0.05, 0.0, 1.0)
        nearest = ends[0] + s[:, None] * (ends[1] - ends[0])
        np.testing.assert_allclose(np.hypot(*(outline - nearest).T), 0.005, rtol=1e-9)
    # the contact forces: normal up plus friction along t = (1, 0) at the contact points, the largest 15 % long
    rows = model.ncontacts
    normal, tangential = np.zeros(rows), np.zeros(rows)
    points = np.zeros((rows, 2))
    normal[0], tangential[0], points[0] = 3.0, -1.0, (-0.025, 0.0)
    normal[2], points[2] = 1.0, (0.025, 0.0)
    arrows = rm.plot.contact_arrows(model, q, normal, tangential, points, ax)
    shafts = [seg for seg in arrows.get_segments() if len(seg) == 2]
    assert len(shafts) == 2
    direction = shafts[0][1] - shafts[0][0]
    np.testing.assert_allclose(direction / np.hypot(*direction), np.array([-1.0, 3.0]) / np.sqrt(10.0))
    np.testing.assert_allclose(shafts[0][0], points[0])
    assert np.hypot(*direction) == pytest.approx(np.hypot(*(shafts[1][1] - shafts[1][0])) * np.sqrt(10.0))
    assert "largest 3.162 N" in arrows.get_label()


def test_a_drum_carried_by_a_body_turns_with_it():
    model = rm.Model(gravity=(0.0, 0.0))
    model.add_body(joint="revolute", mass=1.0, inertia=0.1, name="wheel")
    model.add_drum("rim", center=(0.0, 0.0), radius=0.5, body="wheel")
    placed = rm.plot.Outline(model).place(np.array([0.7]))
    lines = rm.plot.mechanism.surface_lines(placed, np.array([-1.0, -1.0]), np.array([1.0, 1.0]), 0.1)
    np.testing.assert_allclose(lines[1], [[0.0, 0.0], [0.5 * np.cos(0.7), 0.5 * np.sin(0.7)]], atol=1e-15)


def test_the_command_line_runs_plots_and_animates_the_example_contact_model(tmp_path):
    code, text = rmbd("run", str(EXAMPLE), "-o", "chain.npz", cwd=tmp_path)
    assert code == 0, text
    assert "contact rows touching" in text
    spec = rm.io.load(EXAMPLE)
    with np.load(tmp_path / "chain.npz") as data:
        arrays = dict(data)
    assert arrays["contact_normal"].shape == (46, spec.model.ncontacts)
    assert arrays["contact_point"].shape == (46, spec.model.ncontacts, 2)
    assert arrays["contact_active"].max() > 4 and np.abs(arrays["energy_balance"]).max() < 1e-6
    # the run stored the forces of its contact law: the same as a replay of the file's model
    res = rm.simulate(spec.model, spec.q0, spec.qd0, 0.45, t_eval=np.linspace(0.0, 0.45, 46))
    np.testing.assert_array_equal(arrays["contact_normal"], res.contact_forces()["normal"])
    code, text = rmbd("info", str(EXAMPLE), cwd=tmp_path)
    assert code == 0 and "drum edge: radius 0.02 m" in text and "more contacts" in text
    code, text = rmbd("plot", "chain.npz", "-o", "chain.png", cwd=tmp_path)
    assert code == 0, text
    assert (tmp_path / "chain.png").read_bytes()[:4] == b"\x89PNG"
    code, text = rmbd("animate", str(EXAMPLE), "chain.npz", "-o", "chain.gif", "--frames", "3", cwd=tmp_path)
    assert code == 0, text
    assert (tmp_path / "chain.gif").read_bytes()[:3] == b"GIF"


def test_overview_of_a_contact_run_has_the_contact_panel_and_arrows(disc_run):
    model, res = disc_run
    fig = rm.plot.overview(res)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert "total normal force [N]" in labels and "touching contact rows [-]" in labels
    mechanism = fig.axes[0]
    assert any(c.get_label().startswith("contact forces on the bodies") for c in mechanism.collections) == bool(
        res.contact_forces()["active"][-1])


SELF_CONTACT = """
[[self_contact]]
name = "pile"
bodies = ["a", "b"]
segment = [[-0.25, 0.0], [0.25, 0.0]]
radius = 0.04
stiffness = 2e5
restitution = 0.5
impact_speed = 2.0
"""


def test_a_self_contact_entry_reads_as_add_self_contact_and_saves_back(tmp_path):
    spec = rm.io.loads(TREE + SELF_CONTACT, "model.toml")
    hand = rm.Model(name="two links")
    hand.add_body(joint="planar", mass=1.0, inertia=0.01, name="a")
    hand.add_body("a", "revolute", (0.5, 0.0), mass=1.0, inertia=0.01, name="b")
    hand.add_ground("table", point=(0.0, -1.0), extent=(-2.0, 2.0))
    hand.add_drum("pulley", center=(3.0, 0.0), radius=0.5)
    hand.add_self_contact(["a", "b"], segment=((-0.25, 0.0), (0.25, 0.0)), radius=0.04, stiffness=2e5,
                          restitution=0.5, impact_speed=2.0, name="pile")
    hand.compile()
    for attr in ("shape_int", "shape_real"):
        np.testing.assert_array_equal(getattr(spec.model, attr), getattr(hand, attr), err_msg=attr)
    assert spec.model._self_contacts[0]["name"] == "pile"
    assert "self_contact[0].tangential_damping = from the normal law" in spec.defaults
    # a circle (point) on a range of bodies, every key given; capsules on bodies out of order: an array
    model = rm.Model()
    for body in ("p", "q", "r", "s"):
        model.add_body(joint="planar", mass=1.0, inertia=0.1, name=body)
    model.add_self_contact(["q", "r", "s"], point=(0.1, 0.0), radius=0.05, stiffness=1e5, exponent=1.0,
                           restitution=0.7, impact_speed=0.5, friction=0.3, tangential_damping=2.0)
    model.add_self_contact(["s", "p"], segment=((0.0, -0.1), (0.0, 0.1)), radius=0.02, stiffness=3e4, name="rods")
    model.compile()
    text = rm.io.dumps(model)
    assert 'bodies = {first = "q", last = "s"}' in text and 'bodies = ["s", "p"]' in text
    path = tmp_path / "pile.toml"
    rm.io.save(model, path)
    again = rm.io.load(path).model
    for attr in ("shape_int", "shape_real", "body_int", "body_real"):
        np.testing.assert_array_equal(getattr(again, attr), getattr(model, attr), err_msg=attr)
    assert [group["name"] for group in again._self_contacts] == ["self_contact0", "rods"]
    assert rm.io.dumps(again) == text
    code, text = rmbd("info", str(path), cwd=tmp_path)
    assert code == 0 and "self_contact rods: capsules of radius 0.02 m on 2 bodies (s, p), k 30000" in text


def test_a_mechanism_form_file_takes_a_self_contact_set():
    text = (ROOT / "examples" / "models" / "four_bar.toml").read_text() + """
[[self_contact]]
bodies = ["crank", "rocker"]
point = [0.5, 0.0]
radius = 0.05
stiffness = 1e6
"""
    spec = rm.io.loads(text, "four_bar.toml")
    model = spec.model
    assert [model.body_names[body] for body in model.shape_int[:, 0]] == ["crank", "rocker"]
    with pytest.raises(rm.ModelError, match="has loops and contacts; the loop layer leaves contacts out"):
        rm.forward_dynamics(model, spec.q0, np.zeros(model.nq))
    with pytest.raises(FileFormatError, match=r"four_bar.toml: self_contact\[0\]: self_contact0: stiffness must be"):
        rm.io.loads(text.replace("stiffness = 1e6", "stiffness = -1e6"), "four_bar.toml")


@pytest.mark.parametrize(("change", "where", "words"), [
    (("stiffness = 2e5", "stiffness = 2e5\nstifness = 2.0"), "self_contact[0]", "unknown key 'stifness'"),
    (("stiffness = 2e5", "stiffness = -2e5"), "self_contact[0]", "self_contact 'pile': stiffness must be > 0"),
    (("stiffness = 2e5\n", ""), "self_contact[0].stiffness", "missing; expected a number"),
    (("radius = 0.04\n", ""), "self_contact[0].radius", "missing; expected a number"),
    (("radius = 0.04", "radius = 0.0"), "self_contact[0]", "radius must be > 0"),
    (("restitution = 0.5", "restitution = 1.5"), "self_contact[0]", "restitution must be in"),
    (("impact_speed = 2.0", 'impact_speed = "fast"'), "self_contact[0].impact_speed", "expected a finite number"),
    (('["a", "b"]', '["a", "c"]'), "self_contact[0].bodies", "unknown body 'c'"),
    (('["a", "b"]', '"a"'), "self_contact[0]", "needs two bodies or more"),
    (('["a", "b"]', '{first = "b", last = "a"}'), "self_contact[0].bodies", "the range runs backwards"),
    (('bodies = ["a", "b"]\n', ""), "self_contact[0].bodies", "missing"),
    (("radius = 0.04\n", "radius = 0.04\npoint = [0.0, 0.0]\n"), "self_contact[0].point", "has no point"),
    (("[[-0.25, 0.0], [0.25, 0.0]]", "[[0.25, 0.0]]"), "self_contact[0].segment", "expected 2 arrays of 2 numbers"),
])
def test_bad_self_contact_entries_are_refused_naming_the_file_and_the_entry(change, where, words):
    old, new = change
    text = TREE + SELF_CONTACT
    assert old in text
    with pytest.raises(FileFormatError, match=rf"^model\.toml: {re.escape(where)}: .*{words}"):
        rm.io.loads(text.replace(old, new, 1), "model.toml")


def test_self_contact_tables_in_spatial_files_take_points_of_three_numbers():
    spatial = (ROOT / "examples" / "models" / "spatial" / "heavy_top.toml").read_text()
    entry = ('\n[[self_contact]]\nbodies = ["top", "top"]\nradius = 0.1\nstiffness = 1e5\n'
             'segment = [[0.0, 0.0], [1.0, 0.0]]\n')
    with pytest.raises(FileFormatError, match=r"top.toml: self_contact\[0\].segment: expected an array of 3"):
        rm.io.loads(spatial + entry, "top.toml")
