"""The spatial reference (tests/spatial_reference.py) against closed forms and against the planar route.

These check the reference itself, so that tests/test_spatial.py can trust it: a body about each joint type with
its closed-form equations of motion, Euler's equations of a free and of a spherically hinged body, a gimbal
(universal-joint) pendulum from Lagrange's equations by hand, and random planar trees rebuilt as spatial ones
against rm.forward_dynamics of the planar model (a separate implementation).
"""

import numpy as np
import pytest
from _helpers import random_planar_case
from spatial_reference import (
    SpatialReference,
    axis_rotation,
    planar_as_spatial,
    random_inertia,
    random_rotation,
)

import recursive_mbd as rm

G = 9.81


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("seed", range(3))
def test_revolute_body_about_a_fixed_axis(seed):
    """theta'' = (tau + u . (r x m g)) / (u^T I_g u + m |u x r|^2) about the ground axis u through the joint."""
    rng = np.random.default_rng(seed)
    rotation = random_rotation(rng)
    axis = rng.normal(size=3)
    inertia = random_inertia(rng)
    body = dict(parent="ground", joint="revolute", parent_point=rng.normal(size=3), child_point=rng.normal(size=3),
                mass=1.7, inertia=inertia, com=rng.normal(size=3), rotation=rotation, axis=axis)
    gravity = np.array([0.4, -0.3, -G])
    ref = SpatialReference([body], gravity)
    theta, rate, tau = rng.normal(size=3)
    R, p = ref.poses([theta])
    u = rotation @ axis / np.linalg.norm(axis)
    r = R[0] @ body["com"] - R[0] @ body["child_point"]  # centre of mass from the joint point
    inertia_g = R[0] @ inertia @ R[0].T
    moment = u @ inertia_g @ u + 1.7 * np.cross(u, r) @ np.cross(u, r)
    expected = (tau + u @ np.cross(r, 1.7 * gravity)) / moment
    assert rel(ref.forward_dynamics([theta], [rate], [tau]), [expected]) < 1e-12
    assert rel(ref.mass_matrix([theta]), [[moment]]) < 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_prismatic_and_cylindrical_bodies(seed):
    """Sliding: d'' = (f + m g . u) / m; a cylindrical joint's turn and slide about one axis decouple."""
    rng = np.random.default_rng(seed)
    rotation = random_rotation(rng)
    axis = rng.normal(size=3)
    u = rotation @ axis / np.linalg.norm(axis)
    inertia = random_inertia(rng)
    gravity = np.array([0.2, 0.5, -G])
    common = dict(parent="ground", parent_point=rng.normal(size=3), child_point=rng.normal(size=3), mass=2.3,
                  inertia=inertia, com=rng.normal(size=3), rotation=rotation, axis=axis)
    slider = SpatialReference([dict(common, joint="prismatic")], gravity)
    d, rate, force = rng.normal(size=3)
    assert rel(slider.forward_dynamics([d], [rate], [force]), [(force + 2.3 * gravity @ u) / 2.3]) < 1e-12

    cylinder = SpatialReference([dict(common, joint="cylindrical")], gravity)
    q, v, tau = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
    R, _ = cylinder.poses(q)
    r = R[0] @ (common["com"] - common["child_point"])  # from a point of the axis (t_j is along u)
    moment = u @ R[0] @ inertia @ R[0].T @ u + 2.3 * np.cross(u, r) @ np.cross(u, r)
    expected = [(tau[0] + u @ np.cross(r, 2.3 * gravity)) / moment, (tau[1] + 2.3 * gravity @ u) / 2.3]
    assert rel(cylinder.forward_dynamics(q, v, tau), expected) < 1e-12


@pytest.mark.parametrize("joint", ["spherical", "free"])
def test_euler_equations(joint):
    """A body turning about its centre of mass (spherical joint there, or free): I w' + w x I w = torque in the
    body frame; a free body's joint point (its centre of mass) falls with g, expressed in the joint frame."""
    rng = np.random.default_rng(7)
    inertia = random_inertia(rng)
    rotation = random_rotation(rng)
    gravity = np.array([0.3, -1.1, -G])
    body = dict(parent="ground", joint=joint, parent_point=rng.normal(size=3), child_point=(0, 0, 0), mass=1.3,
                inertia=inertia, com=(0, 0, 0), rotation=rotation)
    ref = SpatialReference([body], gravity)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    omega, torque = rng.normal(size=3), rng.normal(size=3)
    euler = np.linalg.solve(inertia, torque - np.cross(omega, inertia @ omega))
    if joint == "spherical":
        assert rel(ref.forward_dynamics(quat, omega, torque), euler) < 1e-12
    else:
        q = np.concatenate([rng.normal(size=3), quat])
        v = np.concatenate([rng.normal(size=3), omega])
        force = rng.normal(size=3)
        accel = (force + 1.3 * rotation.T @ gravity) / 1.3
        got = ref.forward_dynamics(q, v, np.concatenate([force, torque]))
        assert rel(got, np.concatenate([accel, euler])) < 1e-12


def test_gimbal_pendulum_lagrange():
    """Point mass on a massless rod of length L in a universal joint (axes x then y), gravity -z: Lagrange's
    equations by hand, T = m L^2 (b'^2 + cos^2 b a'^2) / 2, V = -m g L cos a cos b:
    a'' = 2 tan b a' b' - (g / L) sin a / cos b,  b'' = -sin b cos b a'^2 - (g / L) sin b cos a."""
    length = 0.8
    ref = SpatialReference([dict(parent="ground", joint="universal", mass=0.6, inertia=0.0, com=(0, 0, -length),
                                 axis=((1, 0, 0), (0, 1, 0)))])
    a, b, da, db = 0.4, -0.7, 1.3, -0.9
    expected = [2 * np.tan(b) * da * db - G / length * np.sin(a) / np.cos(b),
                -np.sin(b) * np.cos(b) * da**2 - G / length * np.sin(b) * np.cos(a)]
    assert rel(ref.forward_dynamics([a, b], [da, db]), expected) < 1e-12


def test_planar_joint_body():
    """A body on a planar joint whose plane is vertical, centre of mass at the joint point: x'' and y'' are the
    in-plane gravity components, theta'' = torque / Izz."""
    rotation = axis_rotation((1.0, 0.0, 0.0), np.pi / 2)  # joint frame's xy plane = ground xz plane
    inertia = np.diag([0.5, 0.6, 0.7])
    ref = SpatialReference([dict(parent="ground", joint="planar", mass=2.0, inertia=inertia, rotation=rotation)])
    got = ref.forward_dynamics([0.1, 0.2, 0.3], [1.0, -2.0, 3.0], [0.0, 0.0, 1.4])
    assert rel(got, [0.0, -G, 1.4 / 0.7]) < 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_planar_trees_against_the_planar_route(seed):
    """Random planar trees (revolute, prismatic, fixed, planar joints with angle 0) through the reference and
    through rm's planar recursive formulation: M, h and forward dynamics to 1e-11."""
    spec, planar, q, v, tau = random_planar_case(100 + seed, 7)
    ref = SpatialReference(planar_as_spatial(spec), gravity=(0.3, -G, 0.0))
    assert ref.nv == planar.nq
    assert rel(ref.mass_matrix(q), rm.mass_matrix(planar, q)) < 1e-11
    assert rel(ref.bias_forces(q, v), rm.bias_forces(planar, q, v)) < 1e-11
    assert rel(ref.forward_dynamics(q, v, tau), rm.forward_dynamics(planar, q, v, tau)) < 1e-11
