"""Contact between the bodies of a spatial self-contact set (``Model3D.add_self_contact``): the narrow phase against
a brute-force minimum, equal and opposite forces at one point, momentum and restitution through an impact, a capsule
coming to rest on another, the energy balance, parent-child pairs, bad input and model files."""

import math
import re

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd._kernels.spatial import layout as SL
from recursive_mbd._kernels.spatial import pairs
from recursive_mbd.dynamics import spatial as spatial_dynamics
from recursive_mbd.errors import ModelError

ROD = ((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0))  # every capsule of these tests lies along its body's x axis
QUARTER_Z = [math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]  # a quarter turn about z: x onto y
IDENTITY = [1.0, 0.0, 0.0, 0.0]


def _rods(gravity=(0.0, 0.0, 0.0), fixed_first=False, **law):
    """Two rods of 1 kg (capsules of radius 0.05 about ROD) on free joints, or the first fixed at the origin."""
    model = rm.Model3D(gravity=gravity)
    model.add_body(joint="fixed" if fixed_first else "free", mass=1.0, inertia=0.01, name="a")
    model.add_body(joint="free", mass=1.0, inertia=0.01, name="b")
    law = {"stiffness": 1e6, "restitution": 0.8, "impact_speed": 1.0, **law}
    model.add_self_contact(["a", "b"], segment=ROD, radius=0.05, name="rods", **law)
    return model


def _brute_force(a0, a1, b0, b1):
    """The closest points of two segments (not parallel): the least distance among the stationary point inside
    the unit square of (s, t), those on its four edges and its corners."""
    d1, d2, r = a1 - a0, b1 - b0, a0 - b0
    candidates = [(s, t) for s in (0.0, 1.0) for t in (0.0, 1.0)]
    matrix = np.array([[d1 @ d1, -d1 @ d2], [-d1 @ d2, d2 @ d2]])
    s, t = np.linalg.solve(matrix, [-d1 @ r, d2 @ r])
    candidates.append((s, t))
    for fixed in (0.0, 1.0):
        candidates.append((fixed, ((a0 + fixed * d1 - b0) @ d2) / (d2 @ d2)))
        candidates.append((((b0 + fixed * d2 - a0) @ d1) / (d1 @ d1), fixed))
    inside = [(s, t) for s, t in candidates if 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0]
    s, t = min(inside, key=lambda st: np.linalg.norm(a0 + st[0] * d1 - b0 - st[1] * d2))
    return a0 + s * d1, b0 + t * d2


def _closest(a0, a1, b0, b1):
    s, t = pairs.closest_points(*a0, *a1, *b0, *b1)
    return a0 + s * (a1 - a0), b0 + t * (b1 - b0)


def test_the_closest_points_of_crossing_and_skew_axes_are_the_brute_force_minimum():
    # crossing at right angles, one above the other: they touch at interior points of both axes
    a0, a1 = np.array([-0.2, 0.0, 0.0]), np.array([0.2, 0.0, 0.0])
    b0, b1 = np.array([0.05, -0.3, 0.08]), np.array([0.05, 0.1, 0.08])
    ca, cb = _closest(a0, a1, b0, b1)
    assert np.allclose(ca, [0.05, 0.0, 0.0], rtol=0.0, atol=1e-15)
    assert np.allclose(cb, [0.05, 0.0, 0.08], rtol=0.0, atol=1e-15)
    rng = np.random.default_rng(7)
    for _ in range(200):  # skew segments at random: interior points, an end against an axis, two ends
        a0, a1, b0, b1 = rng.uniform(-1.0, 1.0, (4, 3))
        d1, d2 = a1 - a0, b1 - b0
        assert 1.0 - (d1 @ d2) ** 2 / ((d1 @ d1) * (d2 @ d2)) > pairs.PARALLEL_SINE2  # outside the blend
        ca, cb = _closest(a0, a1, b0, b1)
        ra, rb = _brute_force(a0, a1, b0, b1)
        assert np.linalg.norm(cb - ca) == pytest.approx(np.linalg.norm(rb - ra), rel=0.0, abs=1e-12)
        assert np.allclose(ca, ra, rtol=0.0, atol=1e-12) and np.allclose(cb, rb, rtol=0.0, atol=1e-12)


def test_axes_lying_side_by_side_touch_at_the_middle_of_their_overlap_and_move_it_continuously():
    a0, a1 = np.array([-0.2, 0.0, 0.0]), np.array([0.2, 0.0, 0.0])
    b0, b1 = np.array([-0.1, 0.0, 0.09]), np.array([0.3, 0.0, 0.09])
    ca, cb = _closest(a0, a1, b0, b1)
    assert np.allclose(ca, [0.05, 0.0, 0.0], rtol=0.0, atol=1e-15)  # the middle of a's part beside b, x in [-0.1, 0.2]
    assert np.allclose(cb, [0.05, 0.0, 0.09], rtol=0.0, atol=1e-15)
    assert np.linalg.norm(cb - ca) == pytest.approx(0.09, rel=0.0, abs=1e-12)  # the least distance
    # b turned about the y axis through its middle from -0.02 to 0.02 rad: the contact point on a moves from one
    # end of the overlap to the other without a jump (the closest points alone jump by 0.3 m at 0)
    middle = np.array([0.1, 0.0, 0.09])
    points = []
    for angle in np.linspace(-0.02, 0.02, 401):
        half = 0.2 * np.array([math.cos(angle), 0.0, math.sin(angle)])
        ca, cb = _closest(a0, a1, middle - half, middle + half)
        points.append(ca)
        if math.sin(angle) ** 2 >= pairs.PARALLEL_SINE2:  # outside the band: the closest points
            ra, rb = _brute_force(a0, a1, middle - half, middle + half)
            assert np.allclose(ca, ra, rtol=0.0, atol=1e-12) and np.allclose(cb, rb, rtol=0.0, atol=1e-12)
    steps = np.linalg.norm(np.diff(points, axis=0), axis=1)
    assert points[0][0] == 0.2  # a's end, beside b (b's lower end is right of it)
    assert points[-1][0] == pytest.approx(0.1 - 0.2 * math.cos(0.02), abs=1e-15)  # b's lower end, over a
    assert steps.max() < 0.01


def _pair_loads(model, q, v):
    """(wrench (nbodies, 6), energies, stats) of the model's pairs at (q, v) (``pairs.pair_forces``)."""
    ws = spatial_dynamics._poses(model, np.asarray(q, dtype=float), np.asarray(v, dtype=float))
    n = model.shape_int.shape[0]
    wrench, energies, stats = np.zeros((model.nbodies, 6)), np.zeros(2), np.zeros(2)
    pairs.pair_forces(model.body_int, model.shape_int, model.shape_real, np.arange(n, dtype=np.int64),
                      np.zeros((n, SL.N_BOX)), ws.rot, ws.pos, ws.omega, ws.vel, wrench, energies, stats)
    return wrench, energies, stats, ws


@pytest.mark.parametrize(("q_b", "v_b"), [
    ([0.1, 0.05, 0.09] + QUARTER_Z, [0.3, -0.2, -1.0, 0.5, 0.0, 2.0]),  # crossing at right angles, off-centre
    ([0.1, 0.0, 0.09] + IDENTITY, [0.4, 0.0, -1.0, 0.0, 0.3, 0.0]),  # lying side by side, half overlapping
])
def test_a_pair_pushes_its_bodies_equally_and_oppositely_at_one_point(q_b, v_b):
    model = _rods(friction=0.3)
    q = [0.0, 0.0, 0.0] + IDENTITY + q_b
    wrench, energies, stats, ws = _pair_loads(model, q, [0.0] * 6 + v_b)
    assert stats.tolist() == [1.0, 1.0]
    force = np.einsum("bij,bj->bi", ws.rot, wrench[:, 3:])  # ground axes
    moment = np.einsum("bij,bj->bi", ws.rot, wrench[:, :3]) + np.cross(ws.pos, force)  # about the ground origin
    assert np.linalg.norm(force[1]) > 1e3 and energies[0] > 0.0 and energies[1] > 0.0
    assert np.allclose(force.sum(axis=0), 0.0, rtol=0.0, atol=1e-12 * np.linalg.norm(force[1]))
    assert np.allclose(moment.sum(axis=0), 0.0, rtol=0.0, atol=1e-12 * np.linalg.norm(force[1]))


def _momenta(model, q, v):
    """Total linear and angular momentum (about the ground origin) of bodies whose centres of mass are their
    origins, with isotropic inertia 0.01."""
    ws = spatial_dynamics._poses(model, q, v)
    return ws.vel.sum(axis=0), (np.cross(ws.pos, ws.vel) + 0.01 * ws.omega).sum(axis=0)


def test_two_free_capsules_rebound_with_the_sets_restitution_at_its_impact_speed():
    model = _rods(restitution=0.8, impact_speed=1.0)
    q0 = [0.0, 0.0, 0.0] + IDENTITY + [0.0, 0.0, 0.11] + QUARTER_Z  # crossing at right angles, 1 cm apart
    result = rm.simulate(model, q0, [0.0] * 8 + [-1.0, 0.0, 0.0, 0.0], 0.05, rtol=1e-10, atol=1e-12)
    assert result.status == "finished"
    assert (result.qd[-1, 8] - result.qd[-1, 2]) == pytest.approx(0.8, rel=1e-3)  # separating at e v
    assert result.contact_forces()["pairs"].tolist()[-1] == 0


def test_an_impact_keeps_the_momentum_and_the_energy_balance_closes_with_the_contacts_work():
    model = _rods(restitution=0.6, friction=0.3)
    q0 = [0.0, 0.0, 0.0] + IDENTITY + [0.1, 0.05, 0.11] + QUARTER_Z  # crossing off-centre, 1 cm apart
    v0 = [0.0] * 6 + [0.3, -0.2, -1.0, 0.5, 0.0, 2.0]  # sliding and spinning into it
    result = rm.simulate(model, q0, v0, 0.04, rtol=1e-10, atol=1e-12, t_eval=np.linspace(0.0, 0.04, 41))
    touching = result.contact_forces()["pairs"]
    assert touching.max() == 1 and touching[-1] == 0
    linear0, angular0 = _momenta(model, result.q[0], result.qd[0])
    linear1, angular1 = _momenta(model, result.q[-1], result.qd[-1])
    assert np.allclose(linear1, linear0, rtol=0.0, atol=1e-9)
    assert np.allclose(angular1, angular0, rtol=0.0, atol=1e-9)
    assert not np.allclose(result.qd[-1, 9:], result.qd[0, 9:], rtol=0.0, atol=1e-3)  # friction turned b
    assert result.dissipated_work[-1] > 0.05  # damping and friction took a part of the 0.7 J
    assert np.abs(result.energy_balance()).max() < 1e-8


def test_a_capsule_dropped_across_another_resting_on_the_floor_comes_to_rest_on_it_under_every_method():
    law = {"stiffness": 1e5, "restitution": 0.3, "friction": 0.5}
    model = _rods(gravity=(0.0, 0.0, -9.81), **law)
    model.add_ground()
    model.add_contact("a", "floor", segment=ROD, radius=0.05, min_impact_speed=0.1, **law)
    pair_depth = (9.81 / 1e5) ** (1.0 / 1.5)  # where k d^1.5 carries b's weight
    floor_depth = (9.81 / 1e5) ** (1.0 / 1.5)  # each end sphere of a carries half of both weights
    q0 = [0.0, 0.0, 0.05 - floor_depth] + IDENTITY + [0.0, 0.0, 0.17] + QUARTER_Z  # b 2 cm above a
    results = [rm.simulate(model, q0, np.zeros(12), 1.5, t_eval=[1.5]),
               rm.simulate(model, q0, np.zeros(12), 1.5, method="bdf", rtol=1e-6, atol=1e-9, t_eval=[1.5]),
               rm.simulate(model, q0, np.zeros(12), 1.5, method="generalized_alpha", dt=1.25e-4, t_eval=[1.5])]
    for result in results:
        assert result.status == "finished", result.method
        assert result.q[-1, 9] == pytest.approx(0.15 - floor_depth - pair_depth, abs=2e-6), result.method
        assert result.contact_forces()["pairs"].tolist() == [0, 1]


def test_parent_and_child_do_not_touch_but_the_grandparent_does():
    model = rm.Model3D()
    model.add_body(joint="free", mass=1.0, inertia=0.01, name="link0")
    for k in (1, 2):
        model.add_body(f"link{k - 1}", "spherical", parent_point=(0.1, 0.0, 0.0), child_point=(-0.1, 0.0, 0.0),
                       mass=0.2, inertia=0.001, name=f"link{k}")
    # capsules of radius 0.11 about (-0.1, 0.1) along x: neighbours overlap deeply at their joint, link0 and link2
    # (0.2 m apart, end to end) by 2 cm
    model.add_self_contact(["link0", "link1", "link2"], segment=((-0.1, 0.0, 0.0), (0.1, 0.0, 0.0)), radius=0.11,
                           stiffness=1e5)
    wrench, energies, stats, _ = _pair_loads(model, model.neutral(), np.zeros(model.nv))
    assert stats.tolist() == [1.0, 1.0]  # one pair tested, the one touching
    assert np.all(wrench[1] == 0.0) and wrench[0, 3] < 0.0 < wrench[2, 3]  # pushed apart along x
    assert energies[0] == pytest.approx(1e5 * 0.02 ** 2.5 / 2.5, rel=1e-12)
    assert rm.energy(model, model.neutral(), np.zeros(model.nv))[1] == pytest.approx(energies[0], rel=1e-12)


@pytest.mark.parametrize(("change", "message"), [
    ({"bodies": ["a", "c"]}, "unknown body 'c'"),
    ({"bodies": ["a"]}, "needs two bodies or more"),
    ({"radius": 0.0}, "radius must be > 0"),
    ({"stiffness": -1.0}, "stiffness must be > 0"),
    ({"friction": -0.1}, "friction must be >= 0"),
    ({"tangential_damping": -1.0}, "tangential_damping must be >= 0"),
    ({"impact_speed": 0.0}, "impact_speed must be > 0"),
    ({"restitution": 0.0}, r"restitution must be in \(0, 1\]"),
    ({"segment": ((0.0, 0.0), (1.0, 0.0))}, "segment end"),
    ({"segment": ((0.0, 0.0, 0.0),)}, "segment must be two points"),
])
def test_bad_self_contact_input_is_a_model_error_naming_the_set(change, message):
    model = rm.Model3D()
    model.add_body(joint="free", name="a")
    model.add_body(joint="free", name="b")
    arguments = {"bodies": ["a", "b"], "segment": ROD, "radius": 0.05, "stiffness": 1e5, "name": "rods", **change}
    with pytest.raises(ModelError, match=rf"self_contact 'rods'.*{message}"):
        model.add_self_contact(**arguments)


def test_forward_dynamics_includes_the_self_contact_pairs_as_the_run_does():
    # rod b crosses rod a 1 mm deep (axes 0.099 m apart, radii 0.05): Hertz's k d^1.5 pushes them apart, equal and
    # opposite, and rm.forward_dynamics gives the accelerations of the run's own dynamics (the pairs keep no state)
    turn = [math.cos(math.pi / 4.0), 0.0, 0.0, math.sin(math.pi / 4.0)]
    q = np.array([0.0, 0.0, 0.0] + IDENTITY + [0.0, 0.0, 0.099] + turn)
    v = np.zeros(12)
    model = _rods()
    vdot = rm.forward_dynamics(model, q, v)
    assert vdot[8] == pytest.approx(1e6 * 1e-3 ** 1.5, rel=1e-9) and vdot[2] == pytest.approx(-vdot[8], rel=1e-12)
    result = rm.simulate(model, q, v, 1e-5, rtol=1e-8, atol=1e-12)
    assert np.abs(result.qdd()[0] - vdot).max() <= 1e-12 * np.abs(vdot).max()


def test_spatial_self_contact_sets_round_trip_through_a_model_file(tmp_path):
    model = rm.Model3D(name="pile")
    model.add_body(joint="free", mass=1.0, inertia=0.01, name="base")
    for k in range(3):
        model.add_body("base" if k == 0 else f"link{k - 1}", "spherical", parent_point=(0.1, 0.0, 0.0),
                       child_point=(-0.1, 0.0, 0.0), mass=0.2, inertia=0.001, name=f"link{k}")
    model.add_self_contact(["link0", "link1", "link2"], segment=((-0.1, 0.0, 0.01), (0.1, 0.0, 0.0)), radius=0.02,
                           stiffness=2e4, exponent=1.0, restitution=0.3, impact_speed=0.5, friction=0.6, name="links")
    model.add_self_contact(["base", "link2"], point=(0.0, 0.03, 0.0), radius=0.05, stiffness=1e5,
                           tangential_damping=3.0, name="beads")
    rm.io.save(model, tmp_path / "pile.toml")
    text = (tmp_path / "pile.toml").read_text()
    assert 'bodies = {first = "link0", last = "link2"}' in text and 'bodies = ["base", "link2"]' in text
    back = rm.io.load(tmp_path / "pile.toml")
    model.compile()
    assert back.model.has_contacts and back.model.ncontacts == 0
    for key in ("shape_int", "shape_real"):  # every capsule, sphere and law exactly as built
        assert np.array_equal(getattr(back.model, key), getattr(model, key)), key
    rm.io.save(back.model, tmp_path / "again.toml")
    assert (tmp_path / "again.toml").read_text() == text
    bad = text.replace("[0.0, 0.03, 0.0]", "[0.0, 0.03]")
    with pytest.raises(rm.io.FileFormatError, match=re.escape("pile.toml: self_contact[1].point") + ".*3 numbers"):
        rm.io.loads(bad, "pile.toml")
