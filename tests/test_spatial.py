"""Spatial (3D) models (issue 18): rm.Model3D and the spatial formulation against an independent reference
(tests/spatial_reference.py: ground-frame screw Jacobians, Jdot v by complex step), identities, the planar route,
closed forms (conical pendulum, heavy top, hanging chain in both planes) and bad input."""

import re

import numpy as np
import pytest
import scipy.linalg
from _helpers import random_planar_case
from spatial_reference import (
    SpatialReference,
    axis_rotation,
    planar_as_spatial,
    random_configuration,
    random_spatial_tree,
)

import recursive_mbd as rm
from recursive_mbd.errors import ModelError, StateError

G = 9.81
GRAVITY = (0.4, -0.7, -G)
TREES = 200
CHUNKS = 10


def build(bodies, gravity=GRAVITY):
    model = rm.Model3D(gravity=gravity)
    for body in bodies:
        model.add_body(**body)
    return model


def rel(a, b):
    """Norm-wise relative difference max|a - b| / max|b|."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def tree_cases(chunk):
    """Trees chunk, chunk + CHUNKS, ... of the 200 seeded random trees (1 to 8 bodies), each with its state."""
    for index in range(chunk, TREES, CHUNKS):
        rng = np.random.default_rng(1800 + index)
        bodies = random_spatial_tree(rng, int(rng.integers(1, 9)))
        reference = SpatialReference(bodies, GRAVITY)
        yield index, bodies, build(bodies), reference, *random_configuration(reference, rng)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_trees_match_the_reference(chunk):
    """M, h, forward and inverse dynamics, poses, velocities and energy of 200 random trees (every joint type,
    random axes, offsets, joint-frame rotations, full inertia tensors) against the reference to 1e-10."""
    for index, bodies, model, ref, q, v, tau in tree_cases(chunk):
        where = f"tree {index} ({[b['joint'] for b in bodies]})"
        assert (model.nq, model.nv, model.nbodies) == (ref.nq, ref.nv, ref.nbodies), where
        for i, body in enumerate(ref.bodies):
            assert model.q_slice(i) == body["q_slice"] and model.v_slice(i) == body["v_slice"], where
        np.testing.assert_array_equal(model.neutral(), ref.neutral())
        M_ref = ref.mass_matrix(q)
        assert rel(rm.mass_matrix(model, q), M_ref) < 1e-10, where
        assert rel(rm.bias_forces(model, q, v), ref.bias_forces(q, v)) < 1e-10, where
        vdot_ref = ref.forward_dynamics(q, v, tau)
        assert rel(rm.forward_dynamics(model, q, v, tau), vdot_ref) < 1e-10, where
        assert rel(rm.inverse_dynamics(model, q, v, vdot_ref), tau) < 1e-10, where
        R, p, omega, origin_velocity = rm.forward_kinematics(model, q, v)
        R_ref, p_ref = ref.poses(q)
        omega_ref, origin_velocity_ref = ref.velocities(q, v)
        assert rel(R, R_ref) < 1e-12 and rel(p, p_ref) < 1e-12, where
        assert rel(omega, omega_ref) < 1e-12 and rel(origin_velocity, origin_velocity_ref) < 1e-12, where
        body = ref.nbodies - 1
        position, velocity = rm.point_kinematics(model, q, v, body, (0.3, -0.2, 0.5))
        position_ref, velocity_ref = ref.point_velocity(q, v, body, (0.3, -0.2, 0.5))
        assert rel(position, position_ref) < 1e-12 and rel(velocity, velocity_ref) < 1e-12, where
        T, V = rm.energy(model, q, v)
        T_ref, V_ref = ref.energy(q, v)
        assert abs(T - T_ref) <= 1e-12 * T_ref and abs(V - V_ref) <= 1e-12 * (1.0 + abs(V_ref)), where


def power_slope(model, q, v, vdot, step):
    """Central difference of E(q (+) h v, v + h vdot) at h = 0, whose exact h-derivative there is the power."""
    ends = [sum(rm.energy(model, rm.integrate_configuration(model, q, h * v), v + h * vdot)) for h in (step, -step)]
    return (ends[0] - ends[1]) / (2 * step)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_trees_identities(chunk):
    """ID(FD(tau)) = tau, M symmetric positive definite, T = v^T M v / 2, and the power balance
    d(T + V)/dt = tau . v along the motion (central differences along integrate_configuration, Richardson)."""
    for index, _, model, _, q, v, tau in tree_cases(chunk):
        vdot = rm.forward_dynamics(model, q, v, tau)
        assert rel(rm.inverse_dynamics(model, q, v, vdot), tau) < 1e-10, index
        M = rm.mass_matrix(model, q)
        assert np.max(np.abs(M - M.T)) <= 1e-14 * np.max(np.abs(M)), index
        assert np.linalg.eigvalsh(M)[0] > 0.0 and np.linalg.cholesky(M) is not None, index
        T, _ = rm.energy(model, q, v)
        assert abs(T - 0.5 * v @ M @ v) <= 1e-12 * T, index
        power = (4 * power_slope(model, q, v, vdot, 1e-3) - power_slope(model, q, v, vdot, 2e-3)) / 3  # O(step^4)
        assert abs(power - tau @ v) <= 1e-8 * (1.0 + abs(tau @ v) + np.max(np.abs(M)) * (v @ v)), index


@pytest.mark.parametrize("seed", range(8))
def test_planar_models_built_as_spatial_ones(seed):
    """The spec's mapping (axes along z, J -> diag(J, J, J), points and gravity in z = 0) gives the planar
    route's mass matrix, forward and inverse dynamics, energy and kinematics to 1e-12."""
    spec, planar, q, v, tau = random_planar_case(500 + seed, 9)
    spatial = build(planar_as_spatial(spec), gravity=(0.3, -G, 0.0))
    assert spatial.nq == spatial.nv == planar.nq
    assert rel(rm.mass_matrix(spatial, q), rm.mass_matrix(planar, q)) < 1e-12
    assert rel(rm.forward_dynamics(spatial, q, v, tau), rm.forward_dynamics(planar, q, v, tau)) < 1e-12
    assert rel(rm.inverse_dynamics(spatial, q, v, tau), rm.inverse_dynamics(planar, q, v, tau)) < 1e-12
    assert rel(rm.energy(spatial, q, v), rm.energy(planar, q, v)) < 1e-12
    poses, rates = rm.forward_kinematics(planar, q, v)
    R, p, omega, _ = rm.forward_kinematics(spatial, q, v)
    assert rel(p[:, :2], poses[:, :2]) < 1e-12 and np.all(p[:, 2] == 0.0)
    assert rel(R[:, 0, 0], np.cos(poses[:, 2])) < 1e-12 and rel(R[:, 1, 0], np.sin(poses[:, 2])) < 1e-12
    assert rel(omega[:, 2], rates[:, 2]) < 1e-12


def hanging_body(mass, inertia, joint_above):
    """A body on a spherical joint at the ground origin whose centre of mass (its frame origin) lies
    ``joint_above`` below the joint when q is the identity quaternion (negative: above it)."""
    return dict(parent="ground", joint="spherical", parent_point=(0, 0, 0), child_point=(0, 0, joint_above),
                mass=mass, inertia=inertia, com=(0, 0, 0))


def tilt_about_x(angle):
    return np.array([np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0])


def test_conical_pendulum_steady_rate():
    """A symmetric body hanging from a spherical joint, its axis at theta from the downward vertical, turning
    rigidly about the vertical at Omega^2 = m g L / ((A + m L^2 - C) cos theta) (A, C about the centre of mass;
    a point mass gives g / (L cos theta)): the motion is steady, so FD gives vdot = 0 (the cone angle's
    acceleration included); 1 % off that rate it does not."""
    mass, length, theta = 1.5, 0.9, 0.6
    A, C = 0.12, 0.03
    model = build([hanging_body(mass, np.diag([A, A, C]), length)], gravity=(0, 0, -G))
    q = tilt_about_x(theta)
    R = axis_rotation((1.0, 0.0, 0.0), theta)
    rate = np.sqrt(mass * G * length / ((A + mass * length**2 - C) * np.cos(theta)))
    vdot = rm.forward_dynamics(model, q, R.T @ (rate * np.array([0.0, 0.0, 1.0])))
    assert np.max(np.abs(vdot)) < 1e-12 * G / length
    off = rm.forward_dynamics(model, q, R.T @ (1.01 * rate * np.array([0.0, 0.0, 1.0])))
    assert np.max(np.abs(off)) > 1e-3 * G / length


def test_symmetric_heavy_top_steady_precession():
    """A symmetric top on a spherical pivot, centre of mass l above it, axis at theta from the vertical,
    spinning at omega_3 about its axis: steady precession at phi_dot, the slow root of
    A' cos(theta) phi_dot^2 - C omega_3 phi_dot + m g l = 0 (A' = A + m l^2 about the pivot). In steady
    precession omega_body = R^T phi_dot z + psi_dot e3, so omega_body' = psi_dot omega_body x e3 exactly
    (no nutation acceleration, constant spin); 1 % off phi_dot the nutation acceleration is not zero."""
    mass, lever, theta, spin = 0.8, 0.05, 0.5, 60.0
    A, C = 2e-3, 3e-3
    model = build([hanging_body(mass, np.diag([A, A, C]), -lever)], gravity=(0, 0, -G))
    pivot_A = A + mass * lever**2
    disc = (C * spin) ** 2 - 4 * pivot_A * np.cos(theta) * mass * G * lever
    precession = (C * spin - np.sqrt(disc)) / (2 * pivot_A * np.cos(theta))
    psi_dot = spin - precession * np.cos(theta)
    q = tilt_about_x(theta)
    R = axis_rotation((1.0, 0.0, 0.0), theta)
    e3 = np.array([0.0, 0.0, 1.0])

    def nutation_acceleration(phi_dot):
        """d^2/dt^2 of cos(theta) = z . R e3, i.e. z . R (omega' x e3 + omega x (omega x e3)) (body axes)."""
        omega = R.T @ (phi_dot * e3) + (spin - phi_dot * np.cos(theta)) * e3
        vdot = rm.forward_dynamics(model, q, omega)
        return e3 @ R @ (np.cross(vdot, e3) + np.cross(omega, np.cross(omega, e3))), vdot, omega

    cos_accel, vdot, omega = nutation_acceleration(precession)
    assert rel(vdot, psi_dot * np.cross(omega, e3)) < 1e-11
    assert abs(cos_accel) < 1e-11 * spin * precession
    assert abs(nutation_acceleration(1.01 * precession)[0]) > 1e-4 * spin * precession


def spatial_chain(n, joint, length=1.0, mass=1.0):
    """rm.chains.serial_chain's rods (along body -y, frame at the centre) hanging along -z: each rod's frame is
    the planar one turned by +90 degrees about x, so the planar rod's -y is the spatial -z."""
    link, rod_mass = length / n, mass / n
    rod = rod_mass * link**2 / 12
    axial = 1e-3 * rod
    bodies = []
    for i in range(n):
        body = dict(parent="ground" if i == 0 else i - 1, joint=joint,
                    parent_point=(0.0, 0.0, 0.0 if i == 0 else -link / 2), child_point=(0.0, 0.0, link / 2),
                    mass=rod_mass, inertia=np.diag([rod, rod, axial]), com=(0, 0, 0), name=f"link{i + 1}")
        if joint == "universal":
            body["axis"] = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
        bodies.append(body)
    return build(bodies, gravity=(0.0, 0.0, -G))


@pytest.mark.parametrize("joint", ["spherical", "universal"])
def test_hanging_chain_frequencies_in_both_planes(joint):
    """Small oscillations of a 3D hanging chain: M from rm.mass_matrix, K = -dQ_g/dq by central differences of
    the generalised gravity forces (-bias_forces at v = 0) along integrate_configuration. The swinging
    frequencies are the planar chain's (rm.modes), each twice (the xz and yz planes); a spherical chain's rod
    twists add n zero frequencies."""
    n = 6
    model = spatial_chain(n, joint)
    q_eq = model.neutral()
    M = rm.mass_matrix(model, q_eq)
    step = 1e-5
    K = np.empty((model.nv, model.nv))
    for j in range(model.nv):
        e = np.zeros(model.nv)
        e[j] = step
        gravity_plus = -rm.bias_forces(model, rm.integrate_configuration(model, q_eq, e), np.zeros(model.nv))
        gravity_minus = -rm.bias_forces(model, rm.integrate_configuration(model, q_eq, -e), np.zeros(model.nv))
        K[:, j] = -(gravity_plus - gravity_minus) / (2 * step)
    assert np.max(np.abs(K - K.T)) < 1e-8 * np.max(np.abs(K))
    omega_squared = scipy.linalg.eigh(0.5 * (K + K.T), M, eigvals_only=True)
    planar, _ = rm.modes(rm.chains.serial_chain(n), np.zeros(n))
    expected = np.sort(np.concatenate([planar, planar]) ** 2)
    if joint == "spherical":
        assert np.all(np.abs(omega_squared[:n]) < 1e-8 * expected[-1])
        omega_squared = omega_squared[n:]
    assert rel(omega_squared, expected) < 1e-8


def test_integrate_and_difference_round_trip():
    """difference(q0, integrate(q0, v)) = v for every joint type (rotations under pi), integrate keeps unit
    quaternions, and integrate matches the reference's exp map."""
    rng = np.random.default_rng(3)
    bodies = random_spatial_tree(rng, 12)
    model, ref = build(bodies), SpatialReference(bodies, GRAVITY)
    q0 = ref.integrate(ref.neutral(), rng.normal(size=ref.nv))
    v = 0.5 * rng.normal(size=ref.nv)
    q1 = rm.integrate_configuration(model, q0, v)
    assert rel(q1, ref.integrate(q0, v)) < 1e-14
    assert rel(rm.difference(model, q0, q1), v) < 1e-10
    assert rel(rm.integrate_configuration(model, q0, v, 0.25), ref.integrate(q0, v, 0.25)) < 1e-14


# ---- bad input ---------------------------------------------------------------------------------------------

def one_body(**changes):
    body = dict(parent="ground", joint="revolute", parent_point=(0, 0, 0), child_point=(0, 0, 0.5), mass=1.0,
                inertia=np.diag([0.1, 0.1, 0.05]), com=(0, 0, 0), name="arm")
    body.update(changes)
    return body


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_the_triangle_inequality_of_huge_moments_is_judged_without_overflow():
    model = rm.Model3D()
    model.add_body(**one_body(inertia=np.diag([1e308, 1e308, 1e308])))  # I1 + I2 overflows: still a rigid body
    with pytest.raises(ModelError, match="triangle inequality"):
        model.add_body(**one_body(inertia=np.diag([1e306, 1e306, 1e308]), name="flat"))


@pytest.mark.parametrize(("changes", "argument"), [
    (dict(inertia=np.diag([0.1, -0.1, 0.05])), "inertia"),  # not positive semidefinite
    (dict(inertia=[[0.1, 0.02, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]]), "inertia"),  # not symmetric
    (dict(inertia=np.diag([0.1, 0.1, 0.5])), "inertia"),  # triangle inequality: 0.5 > 0.1 + 0.1
    (dict(inertia=(0.1, 0.1, 0.05, 0.0, 0.0, np.nan)), "inertia"),
    (dict(axis=(0.0, 0.0, 0.0)), "axis"),
    (dict(axis=(0.0, np.inf, 1.0)), "axis"),
    (dict(joint="prismatic", axis=(np.nan, 0.0, 1.0)), "axis"),
    (dict(joint="universal", axis=((1, 0, 0), (2, 0, 0))), "ax[ie]s"),  # parallel axes
    (dict(rotation=np.diag([1.0, 1.0, 1.1])), "rotation"),
    (dict(rotation=(1.0, 0.1, 0.0, 0.0)), "rotation"),  # quaternion off unit norm
])
def test_bad_model_input_names_body_and_argument(changes, argument):
    model = rm.Model3D(gravity=(0, 0, -G))
    model.add_body(**one_body(name="base"))
    with pytest.raises(ModelError, match=argument) as err:
        model.add_body(**one_body(parent="base", **changes))
    assert re.search(r"arm|\b1\b", str(err.value)), str(err.value)


def test_quaternion_norm_in_states():
    """Within 1e-6 of unit norm a quaternion is normalised silently (same result as the unit one); further off,
    StateError naming the body and the index."""
    model = build([one_body(joint="spherical"), one_body(parent=0, joint="free", name="tip")])
    q = model.neutral()
    q[0:4] = (0.9, 0.3, -0.2, 0.1)
    q[0:4] /= np.linalg.norm(q[0:4])
    v = np.arange(1.0, model.nv + 1)
    exact = rm.forward_dynamics(model, q, v)
    nudged = q.copy()
    nudged[0:4] *= 1 + 5e-7
    assert rel(rm.forward_dynamics(model, nudged, v), exact) < 1e-12
    bad = q.copy()
    bad[4 + 3:4 + 7] *= 1.01  # the free joint's quaternion, body "tip"
    with pytest.raises(StateError, match="tip|1"):
        rm.forward_dynamics(model, bad, v)
    with pytest.raises(StateError):
        rm.forward_dynamics(model, np.where(np.arange(model.nq) == 0, np.nan, q), v)


@pytest.mark.parametrize("call", [
    lambda m, q, v: rm.forward_dynamics(m, q[:-1], v),
    lambda m, q, v: rm.forward_dynamics(m, q, v[:-1]),
    lambda m, q, v: rm.forward_dynamics(m, q, v, np.ones(m.nv + 1)),
    lambda m, q, v: rm.mass_matrix(m, np.zeros(m.nv)),  # nv-sized q: a quaternion missing
    lambda m, q, v: rm.inverse_dynamics(m, q, v, np.ones(m.nq)),
    lambda m, q, v: rm.integrate_configuration(m, q, np.ones(m.nq)),
])
def test_wrong_sizes_are_refused(call):
    model = build([one_body(joint="spherical"), one_body(parent=0, joint="revolute", name="tip")])
    assert (model.nq, model.nv) == (5, 4)
    with pytest.raises(ValueError, match=r"\d"):
        call(model, model.neutral(), np.zeros(model.nv))
