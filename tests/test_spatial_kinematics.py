"""Frames, Jacobians, accelerations, centre of mass and momentum of spatial models (rm.frame_placement,
rm.body_jacobian, rm.point_jacobian, rm.body_acceleration, rm.point_acceleration, rm.center_of_mass,
rm.center_of_mass_jacobian, rm.momentum) against finite differences of the kinematics along q (+) v dt and against
independent routes: the poses and velocities of rm.forward_kinematics / rm.point_kinematics, the mass matrix.
Pinocchio's agreement is in benchmarks/spatial_kinematics.py (it is not a test dependency)."""

import numpy as np
import pytest
from test_spatial_core import random_state, random_tree

import recursive_mbd as rm
from recursive_mbd.errors import ModelError, StateError

STEP = 1e-5  # centred differences: error ~ STEP^2 times third derivatives of order 1 on these trees


def _close(a, b, rtol):
    """|a - b| <= rtol * max |b| (at least 1e-12, for an all-zero b)."""
    scale = max(1e-12, float(np.max(np.abs(b))))
    assert float(np.max(np.abs(np.asarray(a) - b))) <= rtol * scale, (a, b)


def _spin(rdot, rot):
    """The angular velocity (ground axes) of a rotation whose rate is rdot: [omega]x = Rdot R^T."""
    w = rdot @ rot.T
    return np.array([w[2, 1], w[0, 2], w[1, 0]])


def _along(model, q, direction, h):
    return rm.integrate_configuration(model, q, direction, h)


@pytest.fixture(scope="module")
def trees():
    """Two small random trees (every joint type: free and spherical with quaternions, nq != nv) and states."""
    cases = []
    for seed in range(2):
        rng = np.random.default_rng(300 + seed)
        model = random_tree(rng, 10).compile()
        q, v = random_state(rng, model)
        cases.append((model, q, v, rng.normal(size=model.nv), rng.normal(size=(model.nbodies, 3))))
    return cases


@pytest.mark.boundscheck
def test_jacobians_are_derivatives_of_the_placements(trees):
    """Column k of the body Jacobian is the rate of the point and the body's spin along q (+) e_k t, every body and
    every joint type; "local" and "spatial" are the documented maps of "world"; J v is point_kinematics' velocity
    and forward_kinematics' omega."""
    for model, q, v, _, points in trees:
        rot_all, _, omega, _ = rm.forward_kinematics(model, q, v)
        for body in range(model.nbodies):
            point = points[body]
            rot, position = rm.frame_placement(model, q, body, point)
            _close(rot, rot_all[body], 0.0)
            jac = rm.body_jacobian(model, q, body, point)
            differences = np.zeros_like(jac)
            for k in range(model.nv):
                e = np.zeros(model.nv)
                e[k] = 1.0
                r_plus, p_plus = rm.frame_placement(model, _along(model, q, e, STEP), body, point)
                r_minus, p_minus = rm.frame_placement(model, _along(model, q, e, -STEP), body, point)
                differences[:3, k] = (p_plus - p_minus) / (2 * STEP)
                differences[3:, k] = _spin((r_plus - r_minus) / (2 * STEP), rot)
            _close(jac, differences, 1e-7)
            _close(jac @ v, np.concatenate((rm.point_kinematics(model, q, v, body, point)[1], omega[body])), 1e-13)
            local = rm.body_jacobian(model, q, body, point, frame="local")
            _close(local, np.vstack((rot.T @ jac[:3], rot.T @ jac[3:])), 1e-13)
            spatial = rm.body_jacobian(model, q, body, point, frame="spatial")
            _close(spatial, np.vstack((jac[:3] + np.cross(position, jac[3:], axis=0), jac[3:])), 1e-13)
            _close(rm.point_jacobian(model, q, body, point), jac[:3], 0.0)
            _close(rm.point_jacobian(model, q, body, point, "local"), local[:3], 0.0)
            # the columns of joints off the body's path to the root are zero
            path = set()
            j = body
            while j >= 0:
                path.update(range(model.nv)[model.v_slice(j)])
                j = model.parents[j]
            assert not np.any(jac[:, sorted(set(range(model.nv)) - path)])


@pytest.mark.boundscheck
def test_accelerations_are_rates_of_the_velocities(trees):
    """vdot=None gives J' v, the rate of J(q) v along q (+) v t; with vdot the classical acceleration is the rate
    of point_kinematics' velocity and of forward_kinematics' omega along the motion (q (+) (v t + vdot t^2 / 2),
    v + vdot t); "local" is it in body axes."""
    for model, q, v, vdot, points in trees:
        q_plus, q_minus = (_along(model, q, v * h + vdot * h * h / 2, 1.0) for h in (STEP, -STEP))
        _, _, omega_plus, _ = rm.forward_kinematics(model, q_plus, v + STEP * vdot)
        _, _, omega_minus, _ = rm.forward_kinematics(model, q_minus, v - STEP * vdot)
        scale = 0.0
        for body in range(model.nbodies):
            point = points[body]
            bias = rm.body_acceleration(model, q, v, None, body, point)
            jac_rate = (rm.body_jacobian(model, _along(model, q, v, STEP), body, point)
                        - rm.body_jacobian(model, _along(model, q, v, -STEP), body, point)) / (2 * STEP)
            # relative to the largest over the bodies (a body near the root can have a small J' v)
            scale = max(scale, float(np.max(np.abs(jac_rate @ v))))
            assert np.max(np.abs(bias - jac_rate @ v)) <= 1e-7 * scale
            acc = rm.body_acceleration(model, q, v, vdot, body, point)
            velocity_plus = rm.point_kinematics(model, q_plus, v + STEP * vdot, body, point)[1]
            velocity_minus = rm.point_kinematics(model, q_minus, v - STEP * vdot, body, point)[1]
            rates = np.concatenate(((velocity_plus - velocity_minus) / (2 * STEP),
                                    (omega_plus[body] - omega_minus[body]) / (2 * STEP)))
            _close(acc, rates, 1e-7)
            _close(acc, rm.body_jacobian(model, q, body, point) @ vdot + bias, 1e-13)
            _close(rm.point_acceleration(model, q, v, vdot, body, point), acc[:3], 0.0)
            rot, _ = rm.frame_placement(model, q, body)
            local = rm.body_acceleration(model, q, v, vdot, body, point, frame="local")
            _close(local, np.concatenate((rot.T @ acc[:3], rot.T @ acc[3:])), 1e-13)
            _close(rm.point_acceleration(model, q, v, None, body, point, "local"), rot.T @ bias[:3], 1e-13)


def _body_centres(model, q):
    """Each body's centre of mass in the ground frame, from forward_kinematics."""
    rot, pos = rm.forward_kinematics(model, q)
    return pos + np.einsum("ijk,ik->ij", rot, model.body_com)


@pytest.mark.boundscheck
def test_center_of_mass_its_jacobian_and_momentum(trees):
    """The centre of mass is the mass-weighted mean of the bodies'; its Jacobian the weighted mean of their point
    Jacobians and the derivative of the centre of mass; the linear momentum the total mass times its velocity; the
    angular momentum the sum over the bodies (velocities from their Jacobians); 1/2 v^T M v the sum of the bodies'
    kinetic energies with the same velocities."""
    for model, q, v, _, _ in trees:
        masses, total = model.body_mass, model.total_mass()
        centres = _body_centres(model, q)
        com, com_velocity = rm.center_of_mass(model, q, v)
        _close(rm.center_of_mass(model, q), com, 0.0)
        _close(com, masses @ centres / total, 1e-14)
        jac = rm.center_of_mass_jacobian(model, q)
        weighted = sum(m * rm.point_jacobian(model, q, i, model.body_com[i]) for i, m in enumerate(masses)) / total
        _close(jac, weighted, 1e-13)
        differences = np.zeros_like(jac)
        for k in range(model.nv):
            e = np.zeros(model.nv)
            e[k] = 1.0
            differences[:, k] = (rm.center_of_mass(model, _along(model, q, e, STEP))
                                 - rm.center_of_mass(model, _along(model, q, e, -STEP))) / (2 * STEP)
        _close(jac, differences, 1e-7)
        _close(com_velocity, jac @ v, 1e-13)

        linear, angular = rm.momentum(model, q, v)
        linear_origin, angular_origin = rm.momentum(model, q, v, about="origin")
        _close(linear, total * com_velocity, 1e-13)
        _close(linear_origin, linear, 0.0)
        expected, kinetic = np.zeros(3), 0.0
        for i, m in enumerate(masses):
            twist = rm.body_jacobian(model, q, i, model.body_com[i]) @ v  # (velocity of the centre; omega)
            rot, _ = rm.frame_placement(model, q, i)
            inertia = rot @ model.body_inertia[i] @ rot.T
            expected += np.cross(centres[i] - com, m * twist[:3]) + inertia @ twist[3:]
            kinetic += 0.5 * m * twist[:3] @ twist[:3] + 0.5 * twist[3:] @ inertia @ twist[3:]
        _close(angular, expected, 1e-13)
        _close(angular_origin, angular + np.cross(com, linear), 1e-13)
        assert abs(kinetic - 0.5 * v @ rm.mass_matrix(model, q) @ v) <= 1e-13 * kinetic


def test_momentum_is_conserved_in_free_flight():
    """A free-floating tree without gravity or forces: its linear momentum and its angular momentum about the ground
    origin stay constant at every step of a dop853 run, its centre of mass moves on a straight line."""
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body(joint="free", mass=2.0, inertia=(0.3, 0.4, 0.5, 0.02, 0.0, 0.01), name="base")
    model.add_body("base", "revolute", parent_point=(0.3, 0.0, 0.0), child_point=(-0.2, 0.0, 0.0), axis=(0, 1, 1),
                   mass=0.5, inertia=0.02, com=(0.05, 0.0, 0.0))
    model.add_body("base", "spherical", parent_point=(0.0, 0.0, 0.4), child_point=(0.0, 0.0, -0.1), mass=0.7,
                   inertia=(0.05, 0.06, 0.03, 0.0, 0.01, 0.0), com=(0.0, 0.02, 0.1))
    rng = np.random.default_rng(31)
    q0, v0 = random_state(rng, model.compile())
    res = rm.simulate(model, q0, v0, 1.0, method="dop853", rtol=1e-12, atol=1e-12)
    start = rm.momentum(model, q0, v0, about="origin")
    com0, com_velocity0 = rm.center_of_mass(model, q0, v0)
    for t, q, v in zip(res.t, res.q, res.qd, strict=True):
        linear, angular = rm.momentum(model, q, v, about="origin")
        _close(linear, start[0], 1e-10)
        _close(angular, start[1], 1e-10)
        _close(rm.center_of_mass(model, q), com0 + t * com_velocity0, 1e-10)


def test_bad_input_names_the_argument(trees):
    model, q, v, _, _ = trees[0]
    with pytest.raises(ModelError, match="unknown body 'nope'"):
        rm.body_jacobian(model, q, "nope")
    with pytest.raises(ModelError, match="body index 10"):
        rm.frame_placement(model, q, 10)
    with pytest.raises(StateError, match=rf"q must have shape \({model.nq},\)"):
        rm.point_jacobian(model, q[:-1], 0)
    with pytest.raises(StateError, match=rf"v must have shape \({model.nv},\)"):
        rm.momentum(model, q, v[:-1])
    with pytest.raises(StateError, match=rf"vdot must have shape \({model.nv},\)"):
        rm.body_acceleration(model, q, v, v[:-1], 0)
    with pytest.raises(StateError, match=r"vdot\[2\] is not finite"):  # not "the inputs are finite but too large"
        rm.point_acceleration(model, q, v, np.where(np.arange(model.nv) == 2, np.nan, v), 0)
    bad = q.copy()
    bad[1] = np.nan
    with pytest.raises(StateError, match=r"q\[1\] is not finite"):
        rm.center_of_mass_jacobian(model, bad)
    with pytest.raises(StateError, match=r"v\[0\] is not finite"):
        rm.center_of_mass(model, q, np.full(model.nv, np.inf))
    with pytest.raises(StateError, match=r"point must have shape \(3,\)"):
        rm.body_jacobian(model, q, 0, (1.0, 2.0))
    with pytest.raises(StateError, match=r"point\[2\] is not finite"):
        rm.frame_placement(model, q, 0, (1.0, 2.0, np.nan))
    with pytest.raises(StateError, match="frame must be one of 'world', 'local', 'spatial', got 'global'"):
        rm.body_jacobian(model, q, 0, frame="global")
    with pytest.raises(StateError, match="frame must be one of 'world', 'local', got 'spatial'"):
        rm.point_acceleration(model, q, v, None, 0, frame="spatial")
    with pytest.raises(StateError, match="about must be 'com' or 'origin', got 'base'"):
        rm.momentum(model, q, v, about="base")
    off = model.neutral()
    free = model.joint_types.index("free")
    quaternion = model.q_slice(free).start + 3
    off[quaternion] = 1.1
    with pytest.raises(StateError, match=rf"q\[{quaternion}:{quaternion + 4}\], the quaternion of body"):
        rm.body_acceleration(model, off, v, None, free)
    with pytest.raises(TypeError, match="Model3D"):
        rm.center_of_mass(rm.chains.serial_chain(2), np.zeros(2))
    massless = rm.Model3D()
    massless.add_body(mass=0.0, inertia=0.1)
    with pytest.raises(ModelError, match="has no mass"):
        rm.center_of_mass(massless, [0.0])
    with pytest.raises(ModelError, match="has no mass"):
        rm.center_of_mass_jacobian(massless, [0.0])
