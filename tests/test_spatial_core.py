"""Spatial core (issue 18): Model3D builder and validation, configuration maps, and the recursive spatial dynamics
checked against identities (ID(FD) = tau, M vdot + h = tau, power balance, finite differences of the kinematics)
and against the planar formulation."""

import numpy as np
import pytest
from _helpers import assert_read_only_inputs_change_nothing, per_call_functions, read_only

import recursive_mbd as rm
from recursive_mbd.dynamics import spatial as spatial_dynamics
from recursive_mbd.errors import ModelError, StateError
from recursive_mbd.model import spatial_fields

pytestmark = pytest.mark.boundscheck  # also run under NUMBA_BOUNDSCHECK=1 in CI (.ci/run)

JOINTS = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "free", "fixed")


def random_rotation(rng):
    quat = rng.normal(size=4)
    return quat / np.linalg.norm(quat)


def random_inertia(rng):
    """A random full inertia tensor (principal moments obeying the triangle inequality, random axes)."""
    a, b = rng.uniform(0.2, 1.0, size=2)
    moments = np.array([a, b, rng.uniform(abs(a - b) + 0.05, a + b - 0.05)])
    axes = spatial_fields.quaternion_matrix(random_rotation(rng))
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


def test_tiny_and_huge_axes_are_normalised_not_refused():
    """An axis of norm 1e-300 (its squares underflow) was refused as zero; it and a huge one are the unit axis."""
    for axis, unit in (((1e-300, 0.0, 0.0), (1.0, 0.0, 0.0)), ((0.0, 3e-200, 4e-200), (0.0, 0.6, 0.8)),
                       ((1e300, -1e300, 0.0), (2**-0.5, -(2**-0.5), 0.0))):
        tiny, plain = rm.Model3D(), rm.Model3D()
        tiny.add_body(axis=axis, inertia=1.0, com=(0.0, 1.0, 0.0))
        plain.add_body(axis=unit, inertia=1.0, com=(0.0, 1.0, 0.0))
        tiny.compile(), plain.compile()
        np.testing.assert_allclose(tiny.body_real, plain.body_real, rtol=0, atol=1e-15)


def test_integrate_configuration_overflow_is_a_state_error():
    """v dt ~ 1e300 on a free joint returned NaN quaternions."""
    model = rm.Model3D()
    model.add_body(joint="free", inertia=1.0)
    for v in ([0.0, 0.0, 0.0, 1e300, 0.0, 0.0], [1e300, 1e300, 0.0, 0.0, 0.0, 0.0]):
        with pytest.raises(StateError, match=r"q \(\+\) v dt is not finite: entry \d overflowed"):
            rm.integrate_configuration(model, model.neutral(), np.array(v), 1e10)


def test_gimbal_lock_is_a_singular_articulated_inertia():
    """Three revolute joints z, y, x with massless bodies between: at pitch pi/2 the roll axis lines up with the
    yaw axis and the yaw joint moves nothing the roll joint does not; forward dynamics returned accelerations of
    1e14 (round-off over round-off) where the planar route refuses a singular articulated inertia. Away from the
    lock the accelerations are the mass matrix's, M vdot = -h."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "revolute", axis=(0.0, 0.0, 1.0), mass=0.0, name="yaw")
    model.add_body("yaw", "revolute", axis=(0.0, 1.0, 0.0), mass=0.0, name="pitch")
    model.add_body("pitch", "revolute", axis=(1.0, 0.0, 0.0), mass=2.0, inertia=(1.0, 2.0, 3.0, 0.0, 0.0, 0.0),
                   com=(0.1, 0.2, 0.3), name="roll")
    v = np.array([0.1, 0.2, 0.3])
    with pytest.raises(ModelError, match=r"body 'yaw' \(index 0\): the articulated inertia of its joint is singular"
                                         r".*gimbal lock"):
        rm.forward_dynamics(model, [0.2, np.pi / 2, 0.4], v)
    for pitch in (0.3, np.pi / 2 - 1e-3):
        q = np.array([0.2, pitch, 0.4])
        expected = np.linalg.solve(rm.mass_matrix(model, q), -rm.inverse_dynamics(model, q, v, np.zeros(3)))
        np.testing.assert_allclose(rm.forward_dynamics(model, q, v), expected, rtol=1e-9)


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
    expected = spatial_fields.quaternion_matrix(q) @ spatial_fields.axis_rotation([0.0, 0.0, 1.0], 0.4)
    assert np.allclose(spatial_fields.quaternion_matrix(q2), expected, atol=1e-15)
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


# ---- dynamics: identities on random trees ---------------------------------------------------------------------------

def _close(a, b, rtol):
    """|a - b| <= rtol * (largest entry of b, at least 1): a relative test that a zero entry cannot defeat."""
    scale = max(1.0, float(np.max(np.abs(b))))
    assert float(np.max(np.abs(np.asarray(a) - b))) <= rtol * scale, (a, b)


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_identities(seed):
    rng = np.random.default_rng(seed)
    model = random_tree(rng, int(rng.integers(8, 20)))
    q, v = random_state(rng, model)
    tau = rng.normal(size=model.nv)
    vdot = rm.forward_dynamics(model, q, v, tau)
    mass = rm.mass_matrix(model, q)
    h = rm.bias_forces(model, q, v)
    assert np.array_equal(mass, mass.T) or np.max(np.abs(mass - mass.T)) <= 1e-14 * np.max(np.abs(mass))
    assert np.linalg.eigvalsh(mass).min() > 0.0
    _close(rm.inverse_dynamics(model, q, v, vdot), tau, 1e-10)  # ID(FD(tau)) = tau
    _close(mass @ vdot + h, tau, 1e-10)  # M vdot + h = tau
    _close(vdot, np.linalg.solve(mass, tau - h), 1e-9)  # FD = M^-1 (tau - h)
    _close(rm.forward_dynamics(model, q, v, tau, method="mass_matrix"), vdot, 1e-9)
    # M column by column from ID: tau(e_k) - h, an independent route through the Newton-Euler pass
    columns = np.column_stack([rm.inverse_dynamics(model, q, v, e) - h for e in np.eye(model.nv)])
    _close(columns, mass, 1e-11)
    kinetic, _ = rm.energy(model, q, v)
    assert abs(kinetic - 0.5 * v @ mass @ v) <= 1e-12 * kinetic


def _power_residual(model, q, v, tau, step=1e-5):
    """dE/dt - v . tau by a centred difference along q (+) (+-step v), v +- step vdot: O(step^2)."""
    vdot = rm.forward_dynamics(model, q, v, tau)
    plus = sum(rm.energy(model, rm.integrate_configuration(model, q, v, step), v + step * vdot))
    minus = sum(rm.energy(model, rm.integrate_configuration(model, q, v, -step), v - step * vdot))
    return (plus - minus) / (2 * step) - v @ tau, abs(v @ tau) + abs(sum(rm.energy(model, q, v)))


@pytest.mark.parametrize("joint", JOINTS)
def test_every_joint_type_power_balance_and_identities(joint):
    """A chain of 4 bodies of one joint type (on a free base for variety): the energy's rate equals the power
    v . tau of the joint forces (gravity is in V), to 1e-7 of the energy scale (centred difference, step 1e-5)."""
    rng = np.random.default_rng(JOINTS.index(joint))
    model = random_tree(rng, 4, joints=(joint,) if joint != "fixed" else ("fixed", "revolute"))
    q, v = random_state(rng, model)
    tau = rng.normal(size=model.nv)
    residual, scale = _power_residual(model, q, v, tau)
    assert abs(residual) <= 1e-7 * scale
    vdot = rm.forward_dynamics(model, q, v, tau)
    _close(rm.inverse_dynamics(model, q, v, vdot), tau, 1e-10)
    _close(rm.mass_matrix(model, q) @ vdot + rm.bias_forces(model, q, v), tau, 1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_power_balance_random_tree(seed):
    rng = np.random.default_rng(100 + seed)
    model = random_tree(rng, 12)
    q, v = random_state(rng, model)
    tau = rng.normal(size=model.nv)
    residual, scale = _power_residual(model, q, v, tau)
    assert abs(residual) <= 1e-7 * scale
    # and a wrong bias force would show: the residual of vdot perturbed by 1e-4 is far above the tolerance
    vdot = rm.forward_dynamics(model, q, v, tau)
    assert abs(residual) < 1e-3 * abs(1e-4 * vdot @ rm.mass_matrix(model, q) @ v) + 1e-7 * scale


@pytest.mark.parametrize("seed", range(2))
def test_velocities_are_rates_of_the_poses(seed):
    """forward_kinematics' omega and origin velocities and point_kinematics' velocity equal centred differences of
    the poses along q (+) (+-step v): S of every joint checked against its kinematics."""
    rng = np.random.default_rng(200 + seed)
    model = random_tree(rng, 12)
    q, v = random_state(rng, model)
    step = 1e-6
    rot, pos, omega, vel = rm.forward_kinematics(model, q, v)
    r_plus, p_plus = rm.forward_kinematics(model, rm.integrate_configuration(model, q, v, step))
    r_minus, p_minus = rm.forward_kinematics(model, rm.integrate_configuration(model, q, v, -step))
    _close(vel, (p_plus - p_minus) / (2 * step), 1e-8)
    rdot = (r_plus - r_minus) / (2 * step)
    spin = rdot @ np.transpose(rot, (0, 2, 1))  # [omega]x = Rdot R^T
    _close(omega, np.stack((spin[:, 2, 1], spin[:, 0, 2], spin[:, 1, 0]), axis=1), 1e-8)
    point = rng.normal(size=3)
    position, velocity = rm.point_kinematics(model, q, v, 5, point)
    _close(position, pos[5] + rot[5] @ point, 1e-14)
    plus, _ = rm.point_kinematics(model, rm.integrate_configuration(model, q, v, step), v, 5, point)
    minus, _ = rm.point_kinematics(model, rm.integrate_configuration(model, q, v, -step), v, 5, point)
    _close(velocity, (plus - minus) / (2 * step), 1e-8)
    # the potential energy from the poses: V = -sum m g . c
    com = pos + np.einsum("ijk,ik->ij", rot, model._table.column("com"))
    masses = model._table.column("mass")
    _, potential = rm.energy(model, q, v)
    assert abs(potential + masses @ (com @ model.gravity)) <= 1e-12 * (abs(potential) + 1.0)


def test_compound_pendulum_closed_form():
    """A body on a revolute joint about a horizontal axis: theta'' = -m g l sin(theta) / (J + m l^2)."""
    m, length, inertia, g = 2.0, 0.7, 0.05, 9.81
    model = rm.Model3D(gravity=(0.0, 0.0, -g))
    model.add_body(joint="revolute", axis=(0.0, 1.0, 0.0), mass=m, inertia=(0.3, inertia, 0.3, 0.0, 0.0, 0.0),
                   com=(0.0, 0.0, -length))
    theta = 0.4
    vdot = rm.forward_dynamics(model, [theta], [1.3])
    expected = -m * g * length * np.sin(theta) / (inertia + m * length**2)
    assert abs(vdot[0] - expected) <= 1e-14 * abs(expected)


# ---- a planar model rebuilt as a spatial one gives the planar results ------------------------------------------------

def _planar_and_spatial(rng, n):
    gravity = rng.normal(size=2) * 5.0
    planar = rm.Model(gravity=gravity)
    spatial = rm.Model3D(gravity=(*gravity, 0.0))
    for i in range(n):
        joint = ("revolute", "prismatic", "planar", "fixed")[i % 4] if i < 4 else str(
            rng.choice(["revolute", "prismatic", "planar", "fixed", "revolute"]))
        parent = -1 if i == 0 else int(rng.integers(-1, i))
        pp, cp, com = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
        mass, inertia = rng.uniform(0.5, 2.0), rng.uniform(0.1, 1.0)
        angle = 0.0 if joint == "planar" else rng.uniform(-3.0, 3.0)
        axis = rng.normal(size=2) if joint == "prismatic" else None
        planar.add_body(parent, joint, parent_point=pp, child_point=cp, mass=mass, inertia=inertia, com=com,
                        angle=angle, axis=axis)
        rotation = spatial_fields.axis_rotation([0.0, 0.0, 1.0], angle)
        axis3 = None if axis is None else rotation.T @ np.array([*axis, 0.0])
        spatial.add_body(parent, joint, parent_point=(*pp, 0.0), child_point=(*cp, 0.0), mass=mass,
                         inertia=np.diag([inertia, inertia, inertia]), com=(*com, 0.0), rotation=rotation,
                         axis=None if joint != "prismatic" else axis3)
    return planar, spatial


@pytest.mark.parametrize("seed", range(3))
def test_planar_model_as_spatial(seed):
    rng = np.random.default_rng(300 + seed)
    planar, spatial = _planar_and_spatial(rng, 10)
    assert planar.nq == spatial.nq == spatial.nv
    q, qd, tau = rng.normal(size=(3, planar.nq))
    _close(rm.forward_dynamics(spatial, q, qd, tau), rm.forward_dynamics(planar, q, qd, tau), 1e-12)
    _close(rm.mass_matrix(spatial, q), rm.mass_matrix(planar, q), 1e-12)
    _close(rm.bias_forces(spatial, q, qd), rm.bias_forces(planar, q, qd), 1e-12)
    _close(rm.inverse_dynamics(spatial, q, qd, tau), rm.inverse_dynamics(planar, q, qd, tau), 1e-12)
    _close(rm.energy(spatial, q, qd), rm.energy(planar, q, qd), 1e-12)
    poses, vels = rm.forward_kinematics(planar, q, qd)
    rot, pos, omega, vel = rm.forward_kinematics(spatial, q, qd)
    _close(pos[:, :2], poses[:, :2], 1e-12)
    _close(np.arctan2(rot[:, 1, 0], rot[:, 0, 0]), np.angle(np.exp(1j * poses[:, 2])), 1e-12)
    _close(vel[:, :2], vels[:, :2], 1e-12)
    _close(omega[:, 2], vels[:, 2], 1e-12)
    assert np.all(pos[:, 2] == 0.0) and np.all(omega[:, :2] == 0.0)


# ---- bad input ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ball_chain():
    model = rm.Model3D()
    model.add_body(joint="revolute", inertia=0.1, com=(0.0, 0.0, -1.0), name="arm")
    model.add_body(1 - 1, "spherical", inertia=(0.1, 0.2, 0.25, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5),
                   parent_point=(0.0, 0.0, -1.0), name="ball")
    return model


def test_quaternion_norm_tolerance(ball_chain):
    q = ball_chain.neutral()
    q[1:5] = [0.9, 0.1, -0.3, 0.2]
    q[1:5] /= np.linalg.norm(q[1:5])
    v = np.array([0.3, 1.0, -2.0, 0.5])
    reference = rm.forward_dynamics(ball_chain, q, v)
    nearly = q.copy()
    nearly[1:5] *= 1.0 + 5e-7  # within 1e-6: normalised silently
    _close(rm.forward_dynamics(ball_chain, nearly, v), reference, 1e-14)
    off = q.copy()
    off[1:5] *= 1.01
    for function in (lambda x: rm.forward_dynamics(ball_chain, x, v), lambda x: rm.mass_matrix(ball_chain, x),
                     lambda x: rm.inverse_dynamics(ball_chain, x, v, v), lambda x: rm.energy(ball_chain, x, v),
                     lambda x: rm.forward_kinematics(ball_chain, x)):
        with pytest.raises(StateError, match=r"q\[1:5\], the quaternion of body 'ball' \(index 1\)"):
            function(off)


def test_state_errors(ball_chain):
    q, v = ball_chain.neutral(), np.zeros(4)
    with pytest.raises(StateError, match=r"q must have shape \(5,\) for this model \(nq = 5\)"):
        rm.forward_dynamics(ball_chain, np.zeros(4), v)
    with pytest.raises(StateError, match=r"v must have shape \(4,\) for this model \(nv = 4\)"):
        rm.forward_dynamics(ball_chain, q, np.zeros(5))
    with pytest.raises(StateError, match=r"tau must have shape \(4,\)"):
        rm.forward_dynamics(ball_chain, q, v, np.zeros(5))
    with pytest.raises(StateError, match=r"v\[2\] is not finite"):
        rm.forward_dynamics(ball_chain, q, [0.0, 0.0, np.inf, 0.0])
    with pytest.raises(StateError, match=r"q\[0\] is not finite"):
        rm.mass_matrix(ball_chain, [np.nan, 1.0, 0.0, 0.0, 0.0])
    with pytest.raises(StateError, match=r"vdot\[3\] is not finite"):
        rm.inverse_dynamics(ball_chain, q, v, [0.0, 0.0, 0.0, np.nan])
    rm.forward_dynamics(ball_chain, q, v)  # warm: the next calls could take the short path, which needs no t
    for t in (np.nan, np.inf):
        with pytest.raises(StateError, match="t must be finite"):
            rm.forward_dynamics(ball_chain, q, v, t=t)
    with pytest.raises(StateError, match=r"q\[0\] is not finite"):  # no elements: no kernel would see q
        rm.element_forces(ball_chain, [np.nan, 1.0, 0.0, 0.0, 0.0], v)
    with pytest.raises(StateError, match=r"v\[1\] is not finite"):
        rm.element_forces(ball_chain, q, [0.0, np.inf, 0.0, 0.0])
    with pytest.raises(TypeError, match="real numbers, got complex"):
        rm.forward_dynamics(ball_chain, q, v.astype(complex))
    with pytest.raises(TypeError, match="Model3D"):
        spatial_dynamics.forward_dynamics(rm.chains.serial_chain(2), np.zeros(2), np.zeros(2))
    with pytest.raises(StateError, match="unknown method"):
        rm.forward_dynamics(ball_chain, q, v, method="aba")
    with pytest.raises(StateError, match=r"point must have shape \(3,\)"):
        rm.point_kinematics(ball_chain, q, v, "ball", (0.0, 0.0))
    with pytest.raises(ModelError, match="unknown body 'nope'"):
        rm.point_kinematics(ball_chain, q, v, "nope")


def test_out_buffer(ball_chain):
    q, v = ball_chain.neutral(), np.array([0.1, 0.2, 0.3, 0.4])
    out = np.empty(4)
    assert rm.forward_dynamics(ball_chain, q, v, out=out) is out
    _close(out, rm.forward_dynamics(ball_chain, q, v), 0.0)
    with pytest.raises(TypeError, match="float64"):
        rm.forward_dynamics(ball_chain, q, v, out=np.empty(4, dtype=np.float32))
    with pytest.raises(StateError, match=r"out must have shape \(4,\)"):
        rm.forward_dynamics(ball_chain, q, v, out=np.empty(5))
    with pytest.raises(StateError, match="C-contiguous"):
        rm.forward_dynamics(ball_chain, q, v, out=np.empty(8)[::2])
    with pytest.raises(TypeError, match="list"):
        rm.forward_dynamics(ball_chain, q, v, out=[0.0] * 4)


def test_short_path_refusals_take_the_full_route(ball_chain):
    """Once the workspace exists, rm.forward_dynamics on a spatial tree calls the fixed-signature kernel
    (``_kernels.spatial.entry``): whatever its dispatch or its length check refuses gets the full route's answer or
    error, and what it accepts gets the full route's answer bit for bit."""
    from recursive_mbd.dynamics import spatial  # noqa: PLC0415  (imported lazily by rm.forward_dynamics)

    q, v, tau = ball_chain.neutral(), np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.5, -0.2, 0.1, 0.3])
    q[1:5] = [0.9, 0.1, -0.3, 0.2]
    q[1:5] /= np.linalg.norm(q[1:5])
    full = spatial.forward_dynamics(ball_chain, q, v, tau)  # the full route (no short path there)
    assert ball_chain._workspace3d.short_fd  # set by the first recursive forward dynamics
    np.testing.assert_array_equal(rm.forward_dynamics(ball_chain, q, v, tau), full)
    np.testing.assert_array_equal(rm.forward_dynamics(ball_chain, q, v), spatial.forward_dynamics(ball_chain, q, v))
    for q_like in (list(q), np.repeat(q, 2)[::2]):  # converted by the full route
        np.testing.assert_array_equal(rm.forward_dynamics(ball_chain, q_like, v, tau),
                                      spatial.forward_dynamics(ball_chain, q_like, v, tau))
    np.testing.assert_array_equal(rm.forward_dynamics(ball_chain, q, v, tau, t=1), full)  # an int time
    with pytest.raises(TypeError, match="t must be"):
        rm.forward_dynamics(ball_chain, q, v, tau, t="now")
    with pytest.raises(StateError, match=r"q must have shape \(5,\)"):
        rm.forward_dynamics(ball_chain, np.zeros(4), v, tau)
    with pytest.raises(StateError, match=r"v must have shape \(4,\)"):
        rm.forward_dynamics(ball_chain, q, np.zeros(5), tau)
    with pytest.raises(StateError, match=r"tau must have shape \(4,\)"):
        rm.forward_dynamics(ball_chain, q, v, np.zeros(3))
    with pytest.raises(StateError, match=r"tau\[1\] is not finite"):
        rm.forward_dynamics(ball_chain, q, v, np.array([0.0, np.nan, 0.0, 0.0]))
    off = q.copy()
    off[1:5] *= 1.01
    with pytest.raises(StateError, match=r"q\[1:5\], the quaternion of body 'ball'"):
        rm.forward_dynamics(ball_chain, off, v, tau)
    out = np.empty(4)
    assert rm.forward_dynamics(ball_chain, q, v, tau, out=out) is out  # checked once, then the short path
    np.testing.assert_array_equal(rm.forward_dynamics(ball_chain, q, v, tau, out=out), full)
    out.flags.writeable = False  # changed in place after its check: the dispatch refuses it, the full route says so
    with pytest.raises(StateError, match="read-only"):
        rm.forward_dynamics(ball_chain, q, v, tau, out=out)


def test_read_only_state_arrays_give_the_results_of_writable_ones(ball_chain):
    """A read-only q, v or tau is taken as a writable one: the same bits on the short path and the full route, and
    no other compiled specialisation (numba types a read-only array differently); a read-only out stays refused."""
    q = rm.integrate_configuration(ball_chain, ball_chain.neutral(), [0.3, 0.4, -0.2, 0.1])
    v, tau = np.array([0.3, 1.0, -2.0, 0.5]), np.array([0.5, -0.2, 0.1, 0.3])
    assert_read_only_inputs_change_nothing(ball_chain, q, v, tau, per_call_functions("ball", (0.1, 0.0, -0.2)))
    with pytest.raises(StateError, match="out is read-only"):
        rm.forward_dynamics(ball_chain, q, v, tau, out=read_only(np.zeros(4)))


def test_point_mass_on_a_spherical_joint_is_singular():
    model = rm.Model3D()
    model.add_body(joint="revolute", inertia=0.1, name="arm")
    model.add_body("arm", "spherical", mass=1.0, inertia=0.0, name="bob")  # the mass at the joint's centre
    with pytest.raises(ModelError, match=r"body 'bob' \(index 1\): the articulated inertia of its joint is singular"):
        rm.forward_dynamics(model, model.neutral(), np.zeros(4))
    offset = rm.Model3D()  # the same point mass away from the centre: a rotation about the arm is still singular
    offset.add_body("ground", "spherical", mass=1.0, inertia=0.0, com=(0.0, 0.0, -1.0), name="bob")
    with pytest.raises(ModelError, match=r"body 'bob' \(index 0\)"):
        rm.forward_dynamics(offset, offset.neutral(), np.zeros(3))


def test_add_bodies_matches_add_body():
    rng = np.random.default_rng(7)
    k = 6
    parents = np.array([-1, 0, 1, 1, 3, 0])
    kwargs = dict(parent_point=rng.normal(size=(k, 3)), child_point=rng.normal(size=(k, 3)),
                  mass=rng.uniform(0.5, 2.0, size=k), inertia=np.array([random_inertia(rng) for _ in range(k)]),
                  com=rng.normal(size=(k, 3)), rotation=np.array([random_rotation(rng) for _ in range(k)]))
    for joint, axis in (("universal", rng.normal(size=(k, 2, 3))), ("revolute", rng.normal(size=(k, 3))),
                        ("spherical", None)):
        one, many = rm.Model3D(), rm.Model3D()
        for i in range(k):
            one.add_body(int(parents[i]), joint, axis=None if axis is None else axis[i],
                         **{key: value[i] for key, value in kwargs.items()})
        assert many.add_bodies(parents, joint, axis=axis, **kwargs).tolist() == list(range(k))
        one.compile(), many.compile()
        assert np.array_equal(one.body_int, many.body_int)
        assert np.allclose(one.body_real, many.body_real, rtol=0, atol=1e-15)
        assert one.names == many.names


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mass": [1.0, -1.0, 1.0]}, r"body 'body1' \(index 1\): mass must be >= 0"),
    ({"inertia": [1.0, 1.0, np.nan]}, r"body 'body2' \(index 2\): inertia must be finite"),
    ({"inertia": [(1.0, 1.0, 1.0, 0, 0, 0), (1.0, 1.0, 3.0, 0, 0, 0), (1.0, 1.0, 1.0, 0, 0, 0)]},
     r"body 'body1' \(index 1\): inertia violates the triangle inequality"),
    ({"axis": [(0.0, 0.0, 1.0), (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)]}, r"body 'body2' \(index 2\): axis must be a non-"),
    ({"rotation": [(1.0, 0, 0, 0), (1.0, 0, 0, 0), (1.1, 0, 0, 0)]}, r"body 'body2' \(index 2\): rotation"),
    ({"com": np.zeros((2, 3))}, r"add_bodies: com must be \(3,\) or \(3, 3\)"),
])
def test_add_bodies_errors_name_the_first_bad_body(kwargs, message):
    with pytest.raises(ModelError, match=message):
        rm.Model3D().add_bodies(np.array([-1, 0, 1]), "revolute", **kwargs)


def test_free_body_closed_forms():
    """A free body falls at g (joint-frame coordinates R0^T g) and turns by Euler's equations
    I omega' = -omega x I omega (principal axes, the joint at its centre of mass)."""
    rng = np.random.default_rng(11)
    gravity = np.array([0.3, -1.0, -9.81])
    rotation = random_rotation(rng)
    inertia = np.array([1.0, 2.0, 2.5])
    model = rm.Model3D(gravity=gravity)
    model.add_body(joint="free", mass=3.0, inertia=np.diag(inertia), com=(0.2, -0.1, 0.4), child_point=(0.2, -0.1, 0.4),
                   parent_point=(1.0, 2.0, 3.0), rotation=rotation)
    q, _ = random_state(rng, model)
    omega = np.array([0.7, -1.1, 0.4])
    vdot = rm.forward_dynamics(model, q, np.array([0.5, -0.2, 0.1, *omega]))
    expected_omega = -np.cross(omega, inertia * omega) / inertia
    _close(vdot[3:], expected_omega, 1e-14)
    # the joint point is the centre of mass, whose position in the joint frame is t: t'' = R0^T g, spin or not
    _close(vdot[:3], spatial_fields.quaternion_matrix(rotation).T @ gravity, 1e-14)


def test_fixed_joints_only():
    model = rm.Model3D()
    model.add_body(joint="fixed", mass=1.0)
    model.add_body(0, "fixed", mass=2.0, com=(0.0, 0.0, 1.0))
    assert (model.nq, model.nv) == (0, 0)
    assert rm.forward_dynamics(model, [], []).shape == (0,)
    assert rm.mass_matrix(model, []).shape == (0, 0)
    assert rm.energy(model, [], []) == (0.0, pytest.approx(2.0 * 9.81, rel=1e-15))
