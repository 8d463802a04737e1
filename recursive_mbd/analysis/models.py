"""Reference models from the source documents, built through the public API."""

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from ..model.planar import Model


def two_squares(m=5.0, a=1.0, k=10.0, c=1.0, g=9.81):
    """Two uniform squares and a spring-damper, as a tree: the worked example of the tutorial "Multibody dynamics, a
    very short introduction".

    Two squares of side 2a and mass m (J = 2/3 m a^2 about the centre); body 1 pinned to the ground at its corner
    (-a, -a), body 2 pinned to body 1 (body-1 point (a, a) = body-2 point (-a, a)); a spring-damper (rest length
    0, stiffness k, damping c on the rate of its length) from body-2 point (a, -a) to the ground point (4a, 0).
    Initial state (the tutorial's): body 1 at (a, a, 0), body 2 at (3a, a, 0), at rest, which is q = 0 here.

    Returns
    -------
    model : Model (bodies "body1", "body2"; joint angles q = (theta1, theta2 - theta1))
    q0, qd0 : ndarray, shape (2,)
    """
    inertia = 2.0 / 3.0 * m * a * a
    model = Model(gravity=(0.0, -g), name="two squares")
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
    """A slider-crank (the piston mechanism of KINE2D): crank hinged at the origin, connecting rod hinged to
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


# ---- spatial reference models (rm.Model3D) -------------------------------------------------------------------------

@dataclass(frozen=True)
class Governor:
    """The centrifugal governor of Sugiyama, Naitoh and Toguchi's KINE2D/KINE3D paper (section 5.3) as a spatial
    tree: a vertical spindle driven about the ground z axis at a rate omega, two fly-balls on arms hinged to the
    spindle at the top pivot (height ``pivot_height`` on the axis), and a sleeve sliding on the spindle, tied to
    each ball by a massless link of length ``link``.

    The tree (bodies "spindle", "arm1", "arm2", "sleeve"; q = v = (spindle angle, arm1 angle, arm2 angle, sleeve
    height)) has the arms' angles phi from the downward spindle axis, arm1 swinging out along the spindle's +x axis
    and arm2 along -x, and the sleeve on a prismatic joint along z. The two links close two loops: real distance
    loops with ``centrifugal_governor(closed=True)``; the tree alone keeps them as the configuration map ``q(phi)``
    of the symmetric motion (both arms at phi, the sleeve where the links put it) and its tangent ``dq_dphi``: the
    links are massless two-force members, so they do no virtual work along that tangent, and the steady state in the
    rotating frame is the zero of the reduced generalised force Q(phi) = -dq_dphi . h(q(phi), v) with v = (omega, 0,
    0, 0) and h = ``rm.bias_forces`` (gravity and the centrifugal terms of the spinning tree).

    Closed form (virtual work in the rotating frame, point balls, massless arms and links; a ball's own spin adds a
    constant energy when its inertia is isotropic): with a = ``arm``, b = ``link``, the sleeve at
    s(phi) = a cos(phi) + sqrt(b^2 - a^2 sin^2(phi)) below the pivot, the rotating-frame potential is
    U = -2 m g a cos(phi) - M g s(phi) - m omega^2 a^2 sin^2(phi), and dU/dphi = 0 gives
    omega^2 = g [2 m + M (1 + a cos(phi) / sqrt(b^2 - a^2 sin^2(phi)))] / (2 m a cos(phi)) (``speed``). For a = b
    (the Porter governor) that is omega^2 = g (m + M) / (m h) with h = a cos(phi): the sleeve is 2 h =
    2 g (m + M) / (m omega^2) below the pivot (``sleeve_drop``), for omega^2 > g (m + M) / (m a).
    """

    model: object
    ball_mass: float
    sleeve_mass: float
    arm: float
    link: float
    pivot_height: float
    g: float

    def _link_height(self, phi):
        """The link's vertical extent sqrt(b^2 - a^2 sin^2(phi)), written b^2 - a^2 + (a cos(phi))^2 so that it
        stays accurate (a cos(phi) for a = b) as phi nears pi/2."""
        return np.sqrt(self.link**2 - self.arm**2 + (self.arm * np.cos(phi)) ** 2)

    def sleeve_height(self, phi):
        """The sleeve's height on the spindle [m] (its joint coordinate) with both arms at phi [rad]."""
        return self.pivot_height - self.arm * np.cos(phi) - self._link_height(phi)

    def q(self, phi, spindle_angle=0.0):
        """The tree's configuration (4,) with both arms at phi and the links closed."""
        return np.array([spindle_angle, phi, phi, self.sleeve_height(phi)])

    def dq_dphi(self, phi):
        """d q / d phi (4,) along the symmetric motion (the loops closed)."""
        a, root = self.arm, self._link_height(phi)
        return np.array([0.0, 1.0, 1.0, a * np.sin(phi) + a * a * np.sin(phi) * np.cos(phi) / root])

    def reduced_force(self, phi, omega):
        """Q(phi) [N m]: the generalised force of gravity and the centrifugal load on the symmetric motion, in the
        frame turning with the spindle at omega [rad/s] (from ``rm.bias_forces`` of the tree; zero in the steady
        state; positive drives phi up)."""
        from ..dynamics.calls import bias_forces  # noqa: PLC0415  (the dynamics are needed only here)

        velocity = np.array([omega, 0.0, 0.0, 0.0])
        return -float(self.dq_dphi(phi) @ bias_forces(self.model, self.q(phi), velocity))

    def _tangent_rate(self, phi):
        """d^2 q / d phi^2 (4,): only the sleeve's entry is not zero (f' for f = a sin + a^2 sin cos / r,
        r = sqrt(b^2 - a^2 sin^2), r' = -a^2 sin cos / r)."""
        a, root = self.arm, self._link_height(phi)
        sin, cos = np.sin(phi), np.cos(phi)
        return np.array([0.0, 0.0, 0.0, a * cos + a * a * (cos * cos - sin * sin) / root
                         + (a * a * sin * cos) ** 2 / root**3])

    def arm_acceleration(self, phi, phi_rate, omega, damping=0.0):
        """phi'' [rad/s^2] of the symmetric motion with the spindle held at omega [rad/s] and the links closed: the
        tree's equations M vdot + h = tau projected on the tangent t = dq/dphi (the links' forces do no work along
        it), with vdot = t phi'' + t' phi'^2 (the spindle's rate constant) and a damping torque -damping phi' [N m s]
        on each arm's hinge:  (t^T M t) phi'' = -t^T (h + M t' phi'^2) - 2 damping phi'."""
        from ..dynamics.calls import bias_forces, mass_matrix  # noqa: PLC0415

        q, tangent = self.q(phi), self.dq_dphi(phi)
        velocity = np.array([omega, 0.0, 0.0, 0.0]) + tangent * phi_rate
        mass = mass_matrix(self.model, q)
        force = tangent @ (bias_forces(self.model, q, velocity) + mass @ self._tangent_rate(phi) * phi_rate**2)
        return float(-(force + 2 * damping * phi_rate) / (tangent @ mass @ tangent))

    def jacobi_integral(self, phi, phi_rate, omega):
        """The energy conserved by the undamped motion at a constant spindle rate omega (the Jacobi integral of the
        spinning tree, a time-independent Lagrangian): T2 - T0 + V [J], with T2 the kinetic energy of the motion
        relative to the spindle, T0 that of the rigid rotation at omega, V gravity's (``rm.energy``)."""
        from ..dynamics.kinematics import energy  # noqa: PLC0415

        q = self.q(phi)
        relative = energy(self.model, q, self.dq_dphi(phi) * phi_rate)[0]
        rigid, potential = energy(self.model, q, np.array([omega, 0.0, 0.0, 0.0]))
        return relative - rigid + potential

    def steady_angle(self, omega, xtol=1e-15):
        """The arms' steady angle phi [rad] at spindle rate omega: the root of ``reduced_force`` in (0, phi_max),
        bracketed (brentq). ModelError when omega is below the speed at which the balls lift off."""
        from scipy.optimize import brentq  # noqa: PLC0415

        low = 1e-9
        high = min(np.pi / 2, np.arcsin(min(1.0, self.link / self.arm))) - 1e-9
        if not self.reduced_force(low, omega) > 0 > self.reduced_force(high, omega):
            raise ModelError(f"governor: at omega = {omega:g} rad/s the balls do not lift off (the lift-off speed is "
                             f"{self.speed(0.0):.6g} rad/s)")
        return brentq(self.reduced_force, low, high, args=(omega,), xtol=xtol, rtol=4 * np.finfo(float).eps)

    def speed(self, phi):
        """The closed form: the spindle rate omega [rad/s] at which phi [rad] is the steady angle."""
        m, big_m, a, g = self.ball_mass, self.sleeve_mass, self.arm, self.g
        c = np.cos(phi)
        ratio = a * c / self._link_height(phi)
        return np.sqrt(g * (2 * m + big_m * (1 + ratio)) / (2 * m * a * c))

    def sleeve_drop(self, omega):
        """The closed form for the Porter geometry (arm == link): the sleeve's depth below the pivot,
        2 g (m + M) / (m omega^2) [m]."""
        if self.arm != self.link:
            raise ModelError("governor: the sleeve-drop closed form is for arm == link; use speed(phi)")
        return 2 * self.g * (self.ball_mass + self.sleeve_mass) / (self.ball_mass * omega**2)


def centrifugal_governor(ball_mass=1.0, sleeve_mass=2.0, arm=0.2, link=0.2, pivot_height=0.5, ball_radius=0.03,
                         spindle_mass=0.5, g=9.81, closed=False):
    """The KINE2D/KINE3D paper's centrifugal governor as a ``Model3D`` tree (see ``Governor``; SI units: kg, m, m/s^2).

    The balls are uniform spheres of radius ``ball_radius`` at the arms' ends (their isotropic inertia leaves the
    steady state unchanged), the arms and links massless, the sleeve a thin ring about the spindle axis.
    ``closed``: the two links become real loops, distance loops "link1", "link2" of length ``link`` from each
    ball's centre to the sleeve's origin on the spindle axis (``Model3D.add_loop``; then ``rm.forward_dynamics``
    and ``rm.static_equilibrium`` enforce them); default False keeps the tree, whose links live only in the
    configuration map ``Governor.q``.
    """
    from ..model.spatial import Model3D  # noqa: PLC0415  (planar users never load the spatial builder)

    for name, value in (("ball_mass", ball_mass), ("sleeve_mass", sleeve_mass), ("arm", arm), ("link", link),
                        ("g", g)):
        if not value > 0:
            raise ModelError(f"centrifugal_governor: {name} must be > 0, got {value!r}")
    model = Model3D(gravity=(0.0, 0.0, -g), name="centrifugal governor")
    model.add_body(parent="ground", joint="revolute", axis=(0.0, 0.0, 1.0), mass=spindle_mass,
                   inertia=(0.01, 0.01, 0.001, 0.0, 0.0, 0.0), com=(0.0, 0.0, pivot_height / 2), name="spindle")
    ball = 0.4 * ball_mass * ball_radius**2
    # arm1 turns about -y so that a positive angle swings its ball out along +x; arm2 about +y, out along -x
    for name, hinge in (("arm1", (0.0, -1.0, 0.0)), ("arm2", (0.0, 1.0, 0.0))):
        model.add_body(parent="spindle", joint="revolute", parent_point=(0.0, 0.0, pivot_height), axis=hinge,
                       mass=ball_mass, inertia=ball, com=(0.0, 0.0, -arm), name=name)
    ring = sleeve_mass * 0.02**2
    model.add_body(parent="spindle", joint="prismatic", axis=(0.0, 0.0, 1.0), mass=sleeve_mass,
                   inertia=(0.6 * ring, 0.6 * ring, ring, 0.0, 0.0, 0.0), name="sleeve")
    if closed:
        for k in (1, 2):
            model.add_loop("distance", f"arm{k}", (0.0, 0.0, -arm), "sleeve", (0.0, 0.0, 0.0), length=link,
                           name=f"link{k}")
    return Governor(model, ball_mass, sleeve_mass, arm, link, pivot_height, g)


def heavy_top(mass=1.0, length=0.1, transverse=2e-3, axial=4e-3, g=9.81):
    """A symmetric heavy top on a spherical joint at the ground origin (a ``Model3D``, body "top").

    Its centre of mass is ``length`` [m] along the body z axis (the symmetry axis) from the pivot; its inertia
    about the centre of mass is diag(``transverse``, ``transverse``, ``axial``) [kg m^2]. q is the unit quaternion
    (w, x, y, z) of the top's frame, v its angular velocity in body axes.
    """
    from ..model.spatial import Model3D  # noqa: PLC0415

    model = Model3D(gravity=(0.0, 0.0, -g), name="heavy top")
    model.add_body(parent="ground", joint="spherical", mass=mass, inertia=(transverse, transverse, axial, 0, 0, 0),
                   com=(0.0, 0.0, length), name="top")
    return model


def heavy_top_precession(spin, tilt, mass=1.0, length=0.1, transverse=2e-3, axial=4e-3, g=9.81):
    """The steady precession rates [rad/s] of a symmetric heavy top (closed form): the roots Omega of
    I1' Omega^2 cos(tilt) - I3 spin Omega + m g l = 0 (the Euler-angle Lagrangian with zero nutation rate), with
    I1' = transverse + m l^2 about the pivot, I3 = axial, spin = the angular velocity component along the
    symmetry axis [rad/s], tilt the axis's angle from the upward vertical [rad]. Returns (slow, fast);
    ModelError when the top spins too slowly to precess steadily at that tilt."""
    i1 = transverse + mass * length**2
    a, b, c = i1 * np.cos(tilt), -axial * spin, mass * g * length
    disc = b * b - 4 * a * c
    if disc < 0:
        raise ModelError(f"heavy_top_precession: spin {spin:g} rad/s is too slow for steady precession at tilt "
                         f"{tilt:g} rad (needs spin^2 >= {4 * a * c / axial**2:.6g})")
    root = np.sqrt(disc)
    # the slow root in the cancellation-free form 2c / (-b + root)
    return 2 * c / (-b + root), (-b + root) / (2 * a)
