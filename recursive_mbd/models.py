"""Reference models from the source documents, built through the public API."""

import numpy as np

from .errors import ModelError
from .model import Model


def two_squares(m=5.0, a=1.0, k=10.0, c=1.0, g=9.81):
    """Seed 000's worked example: two uniform squares and a spring-damper, as a tree.

    Two squares of side 2a and mass m (J = 2/3 m a^2 about the centre); body 1 pinned to the ground at its corner
    (-a, -a), body 2 pinned to body 1 (body-1 point (a, a) = body-2 point (-a, a)); a spring-damper (rest length
    0, stiffness k, damping c on the rate of its length) from body-2 point (a, -a) to the ground point (4a, 0).
    Initial state (seed): body 1 at (a, a, 0), body 2 at (3a, a, 0), at rest, which is q = 0 here.

    Returns
    -------
    model : Model (bodies "body1", "body2"; joint angles q = (theta1, theta2 - theta1))
    q0, qd0 : ndarray, shape (2,)
    """
    inertia = 2.0 / 3.0 * m * a * a
    model = Model(gravity=(0.0, -g), name="seed 000: two squares")
    model.add_body(parent="ground", joint="revolute", parent_point=(0.0, 0.0), child_point=(-a, -a), mass=m,
                   inertia=inertia, name="body1")
    model.add_body(parent="body1", joint="revolute", parent_point=(a, a), child_point=(-a, a), mass=m,
                   inertia=inertia, name="body2")
    model.add_spring_damper("body2", (a, -a), "ground", (4.0 * a, 0.0), stiffness=k, damping=c, rest_length=0.0,
                            name="spring_damper")
    return model, np.zeros(2), np.zeros(2)


def _rod(model, parent, parent_point, length, mass, name, joint="revolute"):
    """A uniform slender rod along its local x axis, jointed at its proximal end (-length/2, 0)."""
    return model.add_body(parent=parent, joint=joint, parent_point=parent_point, child_point=(-length / 2, 0.0),
                          mass=mass, inertia=mass * length * length / 12.0, name=name)


def four_bar(ground=3.0, crank=1.0, coupler=2.0, rocker=1.5, density=1.0, g=9.81, crank_angle=1.0):
    """A four-bar linkage of uniform rods: crank and rocker hinged to the ground at (0, 0) and (ground, 0), the
    coupler hinged to the crank's tip; the loop is cut at the coupler-rocker hinge (a revolute loop).

    Returns
    -------
    model : Model (bodies "crank", "coupler", "rocker"; q = (crank angle, coupler relative to crank, rocker
        angle), rod frames at the rod centres along their x axes)
    q0 : ndarray (3,), an assembled configuration with the crank at ``crank_angle`` (the coupler-rocker hinge
        to the left of the line from the crank tip to the rocker pivot)
    """
    model = Model(gravity=(0.0, -g), name="four-bar")
    _rod(model, "ground", (0.0, 0.0), crank, density * crank, "crank")
    _rod(model, "crank", (crank / 2, 0.0), coupler, density * coupler, "coupler")
    _rod(model, "ground", (ground, 0.0), rocker, density * rocker, "rocker")
    model.add_loop("revolute", "coupler", (coupler / 2, 0.0), "rocker", (rocker / 2, 0.0), name="coupler-rocker")
    # closed form of the assembly: the crank tip B, the rocker tip C on both circles, elbow up
    b = crank * np.array([np.cos(crank_angle), np.sin(crank_angle)])
    d = np.array([ground, 0.0]) - b
    dist = np.hypot(*d)
    along = (coupler**2 - rocker**2 + dist**2) / (2 * dist)
    if not abs(along) <= coupler:
        raise ModelError(f"four_bar: the coupler and rocker cannot meet at crank_angle = {crank_angle} (crank tip "
                         f"{dist:.6g} m from the rocker pivot; coupler + rocker = {coupler + rocker:.6g} m)")
    c = b + along * d / dist + np.sqrt(coupler**2 - along**2) * np.array([-d[1], d[0]]) / dist
    theta_coupler = np.arctan2(*(c - b)[::-1])
    theta_rocker = np.arctan2(*(c - np.array([ground, 0.0]))[::-1])
    return model, np.array([crank_angle, theta_coupler - crank_angle, theta_rocker])


def slider_crank(crank=0.5, rod=1.5, crank_mass=1.0, rod_mass=2.0, piston_mass=3.0, g=9.81, crank_angle=0.0):
    """A slider-crank (the piston mechanism of seed 002): crank hinged at the origin, connecting rod hinged to
    its tip, piston sliding on the ground x axis; the loop is cut at the rod-piston pin (a revolute loop).

    Piston position x = r cos(theta) + sqrt(l^2 - r^2 sin^2(theta)) for crank angle theta.

    Returns
    -------
    model : Model (bodies "crank", "rod", "piston"; q = (crank angle, rod relative to crank, piston x))
    q0 : ndarray (3,), the assembled configuration at ``crank_angle``
    """
    model = Model(gravity=(0.0, -g), name="slider-crank")
    _rod(model, "ground", (0.0, 0.0), crank, crank_mass, "crank")
    _rod(model, "crank", (crank / 2, 0.0), rod, rod_mass, "rod")
    model.add_body(parent="ground", joint="prismatic", axis=(1.0, 0.0), mass=piston_mass, name="piston")
    model.add_loop("revolute", "rod", (rod / 2, 0.0), "piston", (0.0, 0.0), name="wrist pin")
    s = crank * np.sin(crank_angle)
    x = crank * np.cos(crank_angle) + np.sqrt(rod**2 - s**2)
    phi = -np.arcsin(s / rod)  # rod angle
    return model, np.array([crank_angle, phi - crank_angle, x])
