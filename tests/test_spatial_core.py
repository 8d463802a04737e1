"""Spatial core (issue 18): Model3D builder and validation, configuration maps, and the recursive spatial dynamics
checked against identities (ID(FD) = tau, M vdot + h = tau, power balance, finite differences of the kinematics)
and against the planar formulation."""

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd.errors import ModelError, StateError

JOINTS = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "free", "fixed")


def random_rotation(rng):
    quat = rng.normal(size=4)
    return quat / np.linalg.norm(quat)


def random_inertia(rng):
    """A random full inertia tensor (principal moments obeying the triangle inequality, random axes)."""
    a, b = rng.uniform(0.2, 1.0, size=2)
    moments = np.array([a, b, rng.uniform(abs(a - b) + 0.05, a + b - 0.05)])
    axes = rm.model3d.quaternion_matrix(random_rotation(rng))
    return axes @ np.diag(moments) @ axes.T


def random_tree(rng, n, joints=JOINTS):
    """A random spatial tree: every joint type, random axes, offsets, rotations and full inertia tensors."""
    model = rm.Model3D(gravity=rng.normal(size=3) * 5.0)
    for i in range(n):
        joint = joints[i % len(joints)] if i < len(joints) else str(rng.choice(joints))
        parent = -1 if i == 0 else int(rng.integers(-1, i))
        axis = None
        if joint in ("revolute", "prismatic", "cylindrical"):
            axis = rng.normal(size=3)
        elif joint == "universal":
            axis = (rng.normal(size=3), rng.normal(size=3))
        model.add_body(parent, joint, parent_point=rng.normal(size=3), child_point=rng.normal(size=3),
                       mass=rng.uniform(0.5, 2.0), inertia=random_inertia(rng), com=rng.normal(size=3),
                       rotation=random_rotation(rng), axis=axis)
    return model


def random_state(rng, model):
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    return q, rng.normal(size=model.nv)


# ---- builder ---------------------------------------------------------------------------------------------------------

def test_sizes_slices_and_neutral():
    model = rm.Model3D()
    sizes = {"revolute": (1, 1), "prismatic": (1, 1), "cylindrical": (2, 2), "universal": (2, 2),
             "spherical": (4, 3), "planar": (3, 3), "free": (7, 6), "fixed": (0, 0)}
    for joint in JOINTS:
        model.add_body("ground", joint, mass=1.0, inertia=0.1, name=joint)
    assert model.nq == sum(s[0] for s in sizes.values()) and model.nv == sum(s[1] for s in sizes.values())
    assert model.names == list(JOINTS) and model.joint_types == list(JOINTS)
    assert model.parents.tolist() == [-1] * len(JOINTS)
    q = model.neutral()
    for joint, (nq, nv) in sizes.items():
        qs, vs = model.q_slice(joint), model.v_slice(joint)
        assert (qs.stop - qs.start, vs.stop - vs.start) == (nq, nv)
    assert q[model.q_slice("spherical")].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert q[model.q_slice("free")].tolist() == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert q.sum() == 2.0


def test_inertia_forms_agree():
    entries = (2.0, 3.0, 4.0, 0.1, -0.2, 0.3)
    matrix = [[2.0, 0.1, -0.2], [0.1, 3.0, 0.3], [-0.2, 0.3, 4.0]]
    a, b, c = rm.Model3D(), rm.Model3D(), rm.Model3D()
    a.add_body(inertia=entries)
    b.add_body(inertia=matrix)
    c.add_body(inertia=2.5)
    a.compile(), b.compile(), c.compile()
    assert np.array_equal(a.body_real, b.body_real)
    assert c.body_real[0, 4:10].tolist() == [2.5, 2.5, 2.5, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"inertia": [[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}, "inertia must be symmetric"),
    ({"inertia": (1.0, 1.0, -0.5, 0.0, 0.0, 0.0)}, "inertia must be positive semidefinite"),
    ({"inertia": (1.0, 1.0, 3.0, 0.0, 0.0, 0.0)}, "triangle inequality"),
    ({"inertia": np.eye(2)}, "inertia must be a number"),
    ({"axis": (0.0, 0.0, 0.0)}, "axis must be a non-zero vector"),
    ({"axis": (0.0, np.nan, 1.0)}, "axis must be finite"),
    ({"rotation": np.diag([1.0, 1.0, 1.1])}, "rotation is not orthonormal"),
    ({"rotation": np.diag([1.0, 1.0, -1.0])}, "reflection"),
    ({"rotation": (1.0, 0.1, 0.0, 0.0)}, "unit norm"),
    ({"mass": -1.0}, "mass must be >= 0"),
    ({"com": (0.0, 1.0)}, "com must be 3 numbers"),
    ({"parent": 3}, "unknown parent index 3"),
    ({"joint": "ball"}, "unknown joint type"),
    ({"joint": "spherical", "axis": (1.0, 0.0, 0.0)}, "axis applies to"),
    ({"joint": "universal", "axis": ((1.0, 0.0, 0.0), (2.0, 0.0, 0.0))}, "must not be parallel"),
])
def test_bad_bodies_name_body_and_argument(kwargs, message):
    model = rm.Model3D()
    model.add_body(name="base")
    with pytest.raises(ModelError, match=message) as info:
        model.add_body(**kwargs, name="arm")
    assert "body 'arm' (index 1)" in str(info.value)


def test_type_errors():
    model = rm.Model3D()
    with pytest.raises(TypeError, match="mass must be a real number"):
        model.add_body(mass="1")
    with pytest.raises(TypeError, match="parent must be"):
        model.add_body(parent=1.5)
    with pytest.raises(TypeError, match="joint must be a string"):
        model.add_body(joint=3)
    with pytest.raises(TypeError, match="inertia must be real numbers"):
        model.add_body(inertia=1j)


def test_frozen_after_compile():
    model = rm.Model3D()
    model.add_body()
    model.compile()
    with pytest.raises(ModelError, match="frozen"):
        model.add_body()


# ---- configuration maps ----------------------------------------------------------------------------------------------

def test_integrate_difference_round_trip():
    rng = np.random.default_rng(1)
    model = random_tree(rng, 16)
    for _ in range(5):
        q0, v = random_state(rng, model)
        v *= 0.5  # rotations below pi, where the log map is the inverse of the exponential
        q1 = rm.integrate_configuration(model, q0, v, dt=1.3)
        assert np.allclose(rm.difference(model, q0, q1), 1.3 * v, rtol=0, atol=1e-12)
        assert np.allclose(rm.integrate_configuration(model, q0, rm.difference(model, q0, q1)), q1, atol=1e-14)
        back = rm.integrate_configuration(model, q1, v, dt=-1.3)
        assert np.allclose(back, q0, atol=1e-13)
        for index in model._quat_q:
            assert abs(np.linalg.norm(q1[index:index + 4]) - 1.0) < 1e-15
    assert np.allclose(rm.difference(model, q0, q0), 0.0, rtol=0, atol=1e-15)


def test_quaternion_exponential_is_a_rotation_about_omega():
    model = rm.Model3D()
    model.add_body(joint="spherical", inertia=1.0)
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    q = rm.integrate_configuration(model, model.neutral(), 0.7 * axis)
    assert np.allclose(q, [np.cos(0.35), *(np.sin(0.35) * axis)], atol=1e-15)
    # child-frame omega: right multiplication, so a second step about the body axis composes on the right
    q2 = rm.integrate_configuration(model, q, np.array([0.0, 0.0, 0.4]))
    expected = rm.model3d.quaternion_matrix(q) @ rm.model3d.axis_rotation([0.0, 0.0, 1.0], 0.4)
    assert np.allclose(rm.model3d.quaternion_matrix(q2), expected, atol=1e-15)
    # the shorter way: a rotation by 1.5 pi is reached back by -0.5 pi
    q3 = rm.integrate_configuration(model, model.neutral(), 1.5 * np.pi * axis)
    assert np.allclose(rm.difference(model, model.neutral(), q3), -0.5 * np.pi * axis, atol=1e-14)


def test_configuration_map_errors():
    model = rm.Model3D()
    model.add_body(joint="spherical", inertia=1.0, name="ball")
    with pytest.raises(StateError, match=r"quaternion of body 'ball' \(index 0\).*norm"):
        rm.integrate_configuration(model, [1.0, 0.1, 0.0, 0.0], np.zeros(3))
    with pytest.raises(StateError, match=r"v must have shape \(3,\)"):
        rm.integrate_configuration(model, model.neutral(), np.zeros(4))
    with pytest.raises(StateError, match=r"q0\[1\] is not finite"):
        rm.difference(model, [1.0, np.nan, 0.0, 0.0], model.neutral())
    with pytest.raises(TypeError, match="Model3D"):
        rm.difference(rm.chains.serial_chain(2), np.zeros(2), np.zeros(2))
