"""Model building and bad input: every error says what is wrong and where."""

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd import ModelError, StateError
from recursive_mbd._kernels.planar import entry
from recursive_mbd.model import workspace


def _pendulum():
    model = rm.Model()
    model.add_body(parent="ground", joint="revolute", child_point=(0, 0.5), mass=1.0, inertia=1 / 12, name="rod1")
    return model


def test_parent_by_name_index_ground_and_minus_one():
    model = rm.Model()
    a = model.add_body(parent=-1, child_point=(0, 0.5), mass=1, inertia=0.1, name="a")
    b = model.add_body(parent="a", child_point=(0, 0.5), mass=1, inertia=0.1)
    c = model.add_body(parent=b, joint="prismatic", axis=(0, 2), mass=1, inertia=0.1)
    d = model.add_body(parent="ground", joint="planar", mass=1, inertia=0.1)
    assert (a, b, c, d) == (0, 1, 2, 3)
    assert model.nq == 6 and model.nbodies == 4
    assert model.body_names == ("a", "body1", "body2", "body3")
    model.compile()
    np.testing.assert_array_equal(model.body_parent, [-1, 0, 1, -1])
    np.testing.assert_array_equal(model.joint_q_index, [0, 1, 2, 3])
    assert model.body("body2")["axis"] == pytest.approx([0.0, 1.0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(parent="nope"), "unknown parent 'nope'"),
    (dict(parent=5), "unknown parent index 5"),
    (dict(joint="ball"), "unknown joint type 'ball'"),
    (dict(name="rod1"), "duplicate body name"),
    (dict(name="ground"), "reserved"),
    (dict(mass=-1.0), "mass must be >= 0"),
    (dict(mass=np.nan), "mass must be finite"),
    (dict(inertia=-0.1), "inertia must be >= 0"),
    (dict(inertia=np.inf), "inertia must be finite"),
    (dict(joint="prismatic", axis=(0.0, 0.0)), "prismatic axis must be non-zero"),
    (dict(joint="revolute", axis=(1.0, 0.0)), "axis applies to prismatic joints only"),
    (dict(parent_point=(0.0, np.nan)), "parent_point must be finite"),
    (dict(com=(1.0, 2.0, 3.0)), "com must be a pair"),
])
def test_bad_body_is_refused_with_its_name(kwargs, match):
    model = _pendulum()
    args = dict(parent="rod1", joint="revolute", child_point=(0, 0.5), mass=1.0, inertia=0.1, name="rod2")
    args.update(kwargs)
    with pytest.raises(ModelError, match=match) as info:
        model.add_body(**args)
    assert repr(args["name"]) in str(info.value)


@pytest.mark.parametrize("kwargs", [dict(mass="heavy"), dict(parent=1.5), dict(joint=3), dict(mass=True)])
def test_wrong_types_raise_type_error(kwargs):
    args = dict(child_point=(0, 0.5), mass=1.0, inertia=0.1, name="x")
    args.update(kwargs)
    with pytest.raises(TypeError):
        rm.Model().add_body(**args)


def test_massless_tip_body_is_singular_and_named():
    model = _pendulum()
    model.add_body(parent="rod1", child_point=(0, 0.5), mass=0.0, inertia=0.0, name="ghost")
    with pytest.raises(ModelError, match="'ghost'.*singular"):
        model.compile()


def test_a_serial_chain_with_force_elements_checks_its_joints_on_the_serial_routes_kernel(monkeypatch):
    """Model.compile checks the tree's joints alone (no loads), so a serial chain with force elements takes the
    fixed-signature kernel of the serial route, the one route its time loops take (a first run compiles that
    route only, not the generic forward dynamics with every route), and still names a singular body."""
    def generic(*args):
        raise AssertionError("the check took the generic forward dynamics")

    monkeypatch.setattr(workspace, "tree_forward_dynamics", generic)
    monkeypatch.setattr(workspace.tree, "forward_dynamics", generic)
    model = rm.chains.serial_chain(4)
    model.add_spring_damper("link4", (0, -0.125), "ground", (0.5, -1.0), stiffness=50.0, damping=0.5)
    model.compile()
    assert "serial" in entry._kernels
    model = _pendulum()
    model.add_body(parent="rod1", child_point=(0, 0.5), mass=0.0, inertia=0.0, name="ghost")
    model.add_spring_damper("ghost", (0, 0), "ground", (0.5, -1.0), stiffness=50.0, damping=0.5)
    with pytest.raises(ModelError, match="'ghost'.*singular"):
        model.compile()


def test_point_mass_on_its_own_hinge_is_singular():
    model = rm.Model()
    model.add_body(joint="revolute", mass=2.0, inertia=0.0, com=(0, 0), child_point=(0, 0), name="dot")
    with pytest.raises(ModelError, match="'dot'"):
        rm.forward_dynamics(model, [0.0], [0.0])


def test_massless_body_with_massive_child_is_fine():
    # two prismatic joints and a revolute through massless intermediate bodies: a planar joint built by hand
    model = rm.Model()
    model.add_body(joint="prismatic", axis=(1, 0), mass=0.0, inertia=0.0, name="slider_x")
    model.add_body(parent="slider_x", joint="prismatic", axis=(0, 1), mass=0.0, inertia=0.0, name="slider_y")
    model.add_body(parent="slider_y", joint="revolute", mass=2.0, inertia=0.3, com=(0.1, 0.0), name="body")
    planar = rm.Model()
    planar.add_body(joint="planar", mass=2.0, inertia=0.3, com=(0.1, 0.0), name="body")
    q, qd = np.array([0.3, -0.2, 0.9]), np.array([0.5, 1.0, -2.0])
    np.testing.assert_allclose(rm.forward_dynamics(model, q, qd), rm.forward_dynamics(planar, q, qd), atol=1e-13)


def test_free_end_of_a_long_fine_chain_is_regular_and_equals_sliders_and_a_hinge():
    # 1e4 links of 1 cm and 1 g on a planar joint: its rotational pivot (about 1e-7 kg m^2) is small beside the
    # chain's 100 kg only in a mixed unit; the same chain on two massless sliders and a hinge has the same dynamics
    n, link, mass = 10_000, 0.01, 0.01
    inertia = mass * link ** 2 / 12.0
    rest = dict(parent_point=(0.0, -link / 2), child_point=(0.0, link / 2), mass=mass, inertia=inertia)
    planar = rm.Model()
    planar.add_body(joint="planar", child_point=(0.0, link / 2), mass=mass, inertia=inertia, name="link1")
    planar.add_bodies(np.arange(n - 1), "revolute", **rest)
    sliders = rm.Model()
    sliders.add_body(joint="prismatic", axis=(1, 0), mass=0.0, inertia=0.0, name="slider_x")
    sliders.add_body(parent="slider_x", joint="prismatic", axis=(0, 1), mass=0.0, inertia=0.0, name="slider_y")
    sliders.add_body(parent="slider_y", joint="revolute", child_point=(0.0, link / 2), mass=mass, inertia=inertia,
                     name="link1")
    sliders.add_bodies(np.arange(2, n + 1), "revolute", **rest)
    for q in (np.zeros(n + 2), np.r_[0.3, -0.2, 0.1 * np.sin(np.arange(n))]):  # straight, and waved
        qd = np.r_[0.5, 1.0, -2.0, np.cos(np.arange(n - 1))]
        expected = rm.forward_dynamics(sliders, q, qd)
        np.testing.assert_allclose(rm.forward_dynamics(planar, q, qd), expected, rtol=1e-9,
                                   atol=1e-9 * np.abs(expected).max())


def test_point_mass_on_a_planar_joint_is_singular():
    # off its frame's origin or not, a point mass gives the joint's rotation nothing to move
    for com in ((0.0, 0.0), (0.1, 0.0)):
        model = rm.Model()
        model.add_body(joint="planar", mass=2.0, inertia=0.0, com=com, name="dot")
        with pytest.raises(ModelError, match="'dot'.*singular"):
            model.compile()


def test_adding_after_compile_is_refused():
    model = _pendulum()
    rm.forward_dynamics(model, [0.1], [0.0])
    with pytest.raises(ModelError, match="compiled"):
        model.add_body(parent="rod1", mass=1.0, inertia=0.1)


def test_empty_model_is_refused():
    with pytest.raises(ModelError, match="no bodies"):
        rm.Model().compile()


@pytest.mark.parametrize("q, qd, tau, match", [
    ([0.1, 0.2], [0.0], None, r"q must have shape \(1,\)"),
    ([0.1], [0.0, 1.0], None, r"qd must have shape \(1,\)"),
    ([0.1], [0.0], [1.0, 2.0], r"tau must have shape \(1,\)"),
    ([np.nan], [0.0], None, r"q\[0\] is not finite"),
    ([0.0], [np.inf], None, r"qd\[0\] is not finite"),
    ([0.0], [0.0], [np.nan], r"tau\[0\] is not finite"),
])
def test_bad_state_is_refused_before_the_kernel(q, qd, tau, match):
    model = _pendulum()
    with pytest.raises(StateError, match=match):
        rm.forward_dynamics(model, q, qd, tau)


def test_bad_state_in_other_entry_points():
    model = _pendulum()
    with pytest.raises(StateError, match="qdd"):
        rm.inverse_dynamics(model, [0.0], [0.0], [np.nan])
    with pytest.raises(StateError, match="q must have shape"):
        rm.mass_matrix(model, [0.0, 0.0])
    with pytest.raises(StateError, match="q0"):
        rm.simulate(model, [np.nan], [0.0], 1.0)
    with pytest.raises(TypeError, match="q must be an array"):
        rm.forward_dynamics(model, object(), [0.0])
    with pytest.raises(ValueError, match="unknown method"):
        rm.forward_dynamics(model, [0.0], [0.0], method="magic")


def test_gravity_and_offsets_enter_the_single_pendulum_exactly():
    # a rod of length 1 hinged at its end: qdd = -(m g l/2) sin(q) / (J + m (l/2)^2) = -1.5 g sin(q)
    model = rm.Model(gravity=(0.0, -9.81))
    model.add_body(child_point=(0.0, 0.5), mass=2.0, inertia=2.0 / 12)
    q = 0.7
    assert rm.forward_dynamics(model, [q], [3.0])[0] == pytest.approx(-1.5 * 9.81 * np.sin(q), rel=1e-14)
    # tilted gravity (g along +x) rotates the equilibrium by pi/2
    tilted = rm.Model(gravity=(9.81, 0.0))
    tilted.add_body(child_point=(0.0, 0.5), mass=2.0, inertia=2.0 / 12)
    assert rm.forward_dynamics(tilted, [np.pi / 2], [0.0])[0] == pytest.approx(0.0, abs=1e-14)


def test_model_with_only_fixed_joints():
    model = rm.Model()
    model.add_body(joint="fixed", parent_point=(1.0, 2.0), mass=2.0, inertia=0.1, com=(0.5, 0.0), name="block")
    assert model.nq == 0
    assert rm.forward_dynamics(model, [], []).shape == (0,)
    kinetic, potential = rm.energy(model, [], [])
    assert kinetic == 0.0 and potential == pytest.approx(2.0 * 9.81 * 2.0)
    poses, _ = rm.forward_kinematics(model, [])
    np.testing.assert_allclose(poses[0], [1.0, 2.0, 0.0])
    with pytest.raises(ValueError, match="no degrees of freedom"):
        rm.simulate(model, [], [], 1.0)


def test_add_bodies_equals_body_by_body():
    """The bulk builder packs exactly what add_body packs (a random revolute tree), and names a bad body."""
    rng = np.random.default_rng(5)
    n = 30
    parents = np.array([int(rng.integers(-1, i)) for i in range(n)])
    points = rng.uniform(-1, 1, (n, 2)), rng.uniform(-1, 1, (n, 2)), rng.uniform(-0.5, 0.5, (n, 2))
    masses, inertias, angles = rng.uniform(0.5, 2, n), rng.uniform(0.05, 0.3, n), rng.uniform(-1, 1, n)
    one = rm.Model()
    for i in range(n):
        one.add_body(int(parents[i]), "revolute", points[0][i], points[1][i], mass=masses[i], inertia=inertias[i],
                     com=points[2][i], angle=angles[i], name=f"b{i}")
    bulk = rm.Model()
    bulk.add_bodies(parents, "revolute", points[0], points[1], mass=masses, inertia=inertias, com=points[2],
                    angle=angles, names=[f"b{i}" for i in range(n)])
    one.compile()
    bulk.compile()
    np.testing.assert_array_equal(bulk.body_int, one.body_int)
    np.testing.assert_array_equal(bulk.body_real, one.body_real)
    assert bulk.body_names == one.body_names
    a, b = bulk.body("b7"), one.body("b7")
    assert a.keys() == b.keys() and all(np.array_equal(a[key], b[key]) for key in a)
    bad = rm.Model()
    with pytest.raises(rm.ModelError, match=r"body 'x2' \(index 2\): mass must be >= 0"):
        bad.add_bodies(np.arange(4) - 1, mass=[1.0, 1.0, -1.0, 1.0], names=["x0", "x1", "x2", "x3"])
    with pytest.raises(rm.ModelError, match=r"index 1\): unknown parent"):
        bad.add_bodies(np.array([-1, 5]))
    with pytest.raises(rm.ModelError, match="duplicate"):
        bad.add_bodies(np.array([-1, 0]), names=["same", "same"])


def test_unknown_names_get_the_known_ones_and_the_closest_match():
    # a chain of 120 links: the message lists the first and last few names, the count, and the close match
    model = rm.Model()
    for i in range(120):
        model.add_body(parent=i - 1, child_point=(0, 0.5), mass=1.0, inertia=0.1, name=f"link{i}")
    with pytest.raises(ModelError) as info:
        model.body_index("Link1")
    assert str(info.value) == ("unknown body 'Link1' (did you mean 'link1'?); known bodies: 'link0', 'link1', "
                               "'link2', 'link3', 'link4', ..., 'link115', 'link116', 'link117', 'link118', "
                               "'link119' (120 in all)")
    with pytest.raises(ModelError, match=r"unknown parent 'lnk7' \(did you mean 'link7'\?\); known bodies: "
                                         r"'ground', 'link0'"):
        model.add_body(parent="lnk7", mass=1.0, inertia=0.1)
    with pytest.raises(ModelError, match=r"unknown joint type 'revolut' \(did you mean 'revolute'\?\); known joint "
                                         r"types: 'fixed', 'planar', 'prismatic', 'revolute'$"):
        model.add_body(parent="link0", joint="revolut", mass=1.0, inertia=0.1)
    with pytest.raises(ModelError, match=r"spring_damper 's': body_b: unknown body 'link500' \(did you mean "
                                         r"'link50'\?\); known bodies: 'link0', 'link1'"):
        model.add_spring_damper("link0", (0, 0), "link500", (0, 0), 1.0, name="s")
    spatial = rm.Model3D()
    spatial.add_body(parent="ground", joint="revolute", mass=1.0, inertia=1.0, name="crank")
    with pytest.raises(ModelError, match=r"unknown body 'Crank' \(did you mean 'crank'\?\); known bodies: 'crank'$"):
        spatial.body_index("Crank")
    with pytest.raises(ModelError, match=r"unknown loop 'loop0'; there are no loops$"):
        spatial.loop("loop0")
    mechanism = rm.Mechanism()
    mechanism.add_body("crank", mass=1.0, inertia=0.1)
    with pytest.raises(ModelError, match=r"unknown body 'crnk' \(did you mean 'crank'\?\); known bodies: 'ground', "
                                         r"'crank'$"):
        mechanism.add_joint("revolute", "ground", (0, 0), "crnk", (0, 0))


def test_summaries_count_in_the_singular_for_one():
    assert repr(_pendulum()) == "<Model: 1 body, not compiled>"
    spatial = rm.Model3D()
    spatial.add_body(parent="ground", joint="revolute", mass=1.0, inertia=1.0)
    assert repr(spatial) == "Model3D(1 body, nq=?, name=None)"
