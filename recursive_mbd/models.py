"""Reference models from the source documents, built through the public API."""

import numpy as np

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
