"""Force elements: forward dynamics against the generalised force J^T F added by hand, and power balance."""

import numpy as np
import pytest
from conftest import JOINT_DOF, build, random_trees, rel_err

import recursive_mbd as rm
from recursive_mbd import ModelError, StateError

SPECS = [spec for spec in random_trees(count=34, max_bodies=12, seed=77)
         if sum(JOINT_DOF[body["joint"]] for body in spec) > 0][:30]


def _state(model, seed):
    rng = np.random.default_rng(seed)
    nq = model.nq
    return rng.uniform(-np.pi, np.pi, nq), rng.normal(size=nq), rng.normal(size=nq)


def _point_jacobian(model, q, body, point):
    """(2, nq): column k is the point's velocity for qd = e_k (the velocity is linear in qd)."""
    eye = np.eye(model.nq)
    return np.column_stack([rm.point_kinematics(model, q, eye[k], body, point)[1] for k in range(model.nq)])


def _angular_jacobian(model, q, body):
    eye = np.eye(model.nq)
    return np.array([rm.forward_kinematics(model, q, eye[k])[1][body, 2] for k in range(model.nq)])


def _point(model, q, qd, body, point):
    if body == "ground":
        return np.asarray(point, float), np.zeros(2), np.zeros((2, model.nq))
    p, v = rm.point_kinematics(model, q, qd, body, point)
    return p, v, _point_jacobian(model, q, body, point)


def _with_elements(spec, add):
    model = build(spec)  # compiled: rebuild the same tree uncompiled to add elements
    fresh = rm.Model(gravity=model.gravity.copy())
    for i in range(model.nbodies):
        body = model.body(i)
        fresh.add_body(**{k: v for k, v in body.items() if k != "axis" or body["joint"] == "prismatic"})
    add(fresh)
    return model, fresh.compile()


@pytest.mark.parametrize("index", range(len(SPECS)))
def test_spring_damper_equals_jt_f(index):
    spec = SPECS[index]
    rng = np.random.default_rng(index)
    last = len(spec) - 1
    pa, pb, ground_point = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
    k, c, rest = 7.0, 1.3, 0.4
    other = int(rng.integers(0, len(spec)))
    plain, loaded = _with_elements(spec, lambda m: (
        m.add_spring_damper(f"b{last}", pa, "ground", ground_point, k, c, rest_length=rest, name="s1"),
        m.add_spring_damper(other, pb, f"b{last}", pa + 0.3, 2.0, 0.5, name="s2") if other != last else None))
    q, qd, tau = _state(plain, index)
    generalised = np.zeros(plain.nq)
    for body_a, point_a, body_b, point_b, kk, cc, ll in (
            (f"b{last}", pa, "ground", ground_point, k, c, rest),
            *([(other, pb, f"b{last}", pa + 0.3, 2.0, 0.5, 0.0)] if other != last else [])):
        xa, va, ja = _point(plain, q, qd, body_a, point_a)
        xb, vb, jb = _point(plain, q, qd, body_b, point_b)
        d = xb - xa
        length = np.linalg.norm(d)
        u = d / length
        tension = kk * (length - ll) + cc * u @ (vb - va)
        generalised += ja.T @ (tension * u) - jb.T @ (tension * u)
    expected = rm.forward_dynamics(plain, q, qd, tau + generalised)
    assert rel_err(rm.forward_dynamics(loaded, q, qd, tau), expected) < 1e-10
    assert rel_err(rm.forward_dynamics(loaded, q, qd, tau, method="mass_matrix"), expected) < 1e-9
    qdd = rm.forward_dynamics(loaded, q, qd, tau)
    assert rel_err(rm.inverse_dynamics(loaded, q, qd, qdd), tau) < 1e-9


@pytest.mark.parametrize("index", range(len(SPECS)))
def test_forces_torques_and_joint_springs_equal_their_generalised_forces(index):
    spec = SPECS[index]
    rng = np.random.default_rng(100 + index)
    body = int(rng.integers(0, len(spec)))
    point, force, torque = rng.normal(size=2), rng.normal(size=2) * 3, float(rng.normal())
    one_dof = [i for i, b in enumerate(spec) if b["joint"] in ("revolute", "prismatic")]
    spring_body = one_dof[0] if one_dof else None

    def add(m):
        m.add_force(body, point, force, frame="ground")
        m.add_force(body, point, lambda t: force * (1 + t), frame="body")
        m.add_torque(body, lambda t: torque * np.cos(t))
        if spring_body is not None:
            m.add_joint_spring_damper(spring_body, 5.0, 0.7, rest=0.2)

    plain, loaded = _with_elements(spec, add)
    q, qd, tau = _state(plain, 200 + index)
    t = 0.6
    jacobian = _point_jacobian(plain, q, body, point)
    theta = rm.forward_kinematics(plain, q)[0][body, 2]
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    generalised = jacobian.T @ force + jacobian.T @ (rot @ (force * (1 + t)))
    generalised += _angular_jacobian(plain, q, body) * torque * np.cos(t)
    if spring_body is not None:
        k = plain.joint_q_index[spring_body]
        generalised[k] += -5.0 * (q[k] - 0.2) - 0.7 * qd[k]
    expected = rm.forward_dynamics(plain, q, qd, tau + generalised)
    assert rel_err(rm.forward_dynamics(loaded, q, qd, tau, t=t), expected) < 1e-10


@pytest.mark.parametrize("index", range(0, len(SPECS), 3))
def test_power_balance_with_elements(index):
    # d(T + V)/dt = -dissipation + power of tau and the applied loads, by central differences
    spec = SPECS[index]
    last = len(spec) - 1
    one_dof = [i for i, b in enumerate(spec) if b["joint"] in ("revolute", "prismatic")]

    def add(m):
        m.add_spring_damper(f"b{last}", (0.2, 0.1), "ground", (0.5, -1.0), 9.0, 0.8, rest_length=0.3)
        m.add_spring_damper(0, (0.0, 0.3), f"b{last}", (0.1, 0.0), 3.0, 0.2) if last else None
        m.add_force(last, (0.3, 0.0), (1.0, -2.0), frame="body")
        m.add_torque(0, 0.7)
        if one_dof:
            m.add_joint_spring_damper(one_dof[-1], 4.0, 0.5, rest=-0.1)

    _, model = _with_elements(spec, add)
    q, qd, tau = _state(model, 300 + index)
    qdd = rm.forward_dynamics(model, q, qd, tau)
    loads = rm.element_forces(model, q, qd)

    def total_energy(step):
        return sum(rm.energy(model, q + step * qd, qd + step * qdd))

    h = 1e-3
    power = (-total_energy(2 * h) + 8 * total_energy(h) - 8 * total_energy(-h) + total_energy(-2 * h)) / (12 * h)
    expected = qd @ tau - loads["dissipation"] + loads["power"]
    scale = max(abs(qd @ tau), loads["dissipation"], abs(loads["power"]), rm.energy(model, q, qd)[0], 1.0)
    assert abs(power - expected) <= 1e-9 * scale
    assert loads["dissipation"] > 0.0


def test_zero_length_spring_damper_follows_seed_000():
    model = rm.Model()
    model.add_body(joint="planar", mass=2.0, inertia=0.5, name="box")
    model.add_spring_damper("box", (1.0, 0.0), "ground", (1.0, 0.0), stiffness=10.0, damping=3.0)
    # at zero length the damper acts on the whole relative velocity, F_on_box = -c v, at the point (1, 0)
    qd = np.array([0.4, -0.2, 0.0])
    loads = rm.element_forces(model, np.zeros(3), qd)
    force = -3.0 * qd[:2]
    np.testing.assert_allclose(loads["wrench"][0], [force[0], force[1], 1.0 * force[1]], atol=1e-15)
    assert loads["dissipation"] == pytest.approx(3.0 * (0.4**2 + 0.2**2))
    qdd = rm.forward_dynamics(model, np.zeros(3), qd)
    np.testing.assert_allclose(qdd, [force[0] / 2.0, force[1] / 2.0 - 9.81, force[1] / 0.5], atol=1e-14)


def test_spring_potential_enters_energy():
    model = rm.Model(gravity=(0.0, 0.0))
    model.add_body(joint="prismatic", axis=(1, 0), mass=1.0, inertia=0.1, name="slider")
    model.add_spring_damper("slider", (0.0, 0.0), "ground", (0.0, 0.0), stiffness=4.0, damping=0.0,
                            rest_length=0.5)
    model.add_joint_spring_damper("slider", 6.0, rest=0.1)
    _, potential = rm.energy(model, [2.0], [0.0])
    assert potential == pytest.approx(0.5 * 4.0 * 1.5**2 + 0.5 * 6.0 * 1.9**2, rel=1e-14)
    names = model.element_names
    assert names == ("spring_damper0", "joint_spring_damper1")


@pytest.mark.parametrize("call, match", [
    (lambda m: m.add_spring_damper("nope", (0, 0), "ground", (0, 0), 1.0), "unknown body 'nope'"),
    (lambda m: m.add_spring_damper("rod", (0, 0), "ground", (0, 0), -1.0), "stiffness must be >= 0"),
    (lambda m: m.add_spring_damper("rod", (0, 0), "ground", (0, 0), 1.0, damping=-2.0), "damping must be >= 0"),
    (lambda m: m.add_spring_damper("rod", (0, np.nan), "ground", (0, 0), 1.0), "point_a must be finite"),
    (lambda m: m.add_spring_damper("rod", (0, 0), "rod", (1, 0), 1.0), "the same body"),
    (lambda m: m.add_joint_spring_damper("rod", np.inf), "stiffness must be finite"),
    (lambda m: m.add_joint_spring_damper("free", 1.0), "planar joint"),
    (lambda m: m.add_force("rod", (0, 0), (1.0, 2.0), frame="world"), "frame must be"),
    (lambda m: m.add_force(7, (0, 0), (1.0, 2.0)), "out of range"),
    (lambda m: m.add_torque("rod", "big"), "must be a real number"),
])
def test_bad_elements_are_refused_with_their_name(call, match):
    model = rm.Model()
    model.add_body(child_point=(0, 0.5), mass=1.0, inertia=0.1, name="rod")
    model.add_body(joint="planar", mass=1.0, inertia=0.1, name="free")
    with pytest.raises((ModelError, TypeError), match=match):
        call(model)


def test_element_function_of_wrong_shape_is_named():
    model = rm.Model()
    model.add_body(child_point=(0, 0.5), mass=1.0, inertia=0.1, name="rod")
    model.add_force("rod", (0, 0), lambda t: (1.0, 2.0, 3.0), name="push")
    with pytest.raises(StateError, match="element 'push'.*2 finite"):
        rm.forward_dynamics(model, [0.0], [0.0])
    with pytest.raises(StateError, match="element 'push'"):
        rm.simulate(model, [0.0], [0.0], 1.0)


def test_elements_after_compile_are_refused():
    model = rm.chains.serial_chain(2)
    rm.forward_dynamics(model, np.zeros(2), np.zeros(2))
    with pytest.raises(ModelError, match="compiled"):
        model.add_torque("link1", 1.0)
