"""A hanging chain whirling in a cone: the steady shapes of a chain of rods on spherical joints turning rigidly about
the vertical at omega (Takeno 2018's hanging chain, in three dimensions).

In the frame turning with the chain, a steady whirl is a relative equilibrium: with every joint at rest relative to
its parent and the first rod turning at omega about the vertical, the spatial bias forces (gravity and the
centrifugal and gyroscopic terms, ``rm.bias_forces``) must vanish. Newton on the rods' angles in their common
vertical plane finds the shape; it is checked against the closed form of the effective potential
U(theta) = V - omega^2 / 2 e_z^T I(theta) e_z (I the chain's inertia about the vertical axis through the pivot),
differentiated by hand, and one rod gives the compound conical pendulum cos(theta) = m g c / (omega^2 (I1' - I3)).
Below the chain's first natural frequency (``rm.modes`` of the hanging chain) the chain hangs straight; above it,
it whirls out.

    python3 examples/whirling_chain.py [N]
"""

import numpy as np
from _options import parse, parser
from scipy.optimize import fsolve

import recursive_mbd as rm

LENGTH, MASS, G = 1.0, 1.0, 9.81


def whirling_chain(n, length=LENGTH, mass=MASS, g=G):
    """n uniform rods (length/n long, mass/n heavy, a torsional inertia of a thin rod of radius l/50) on spherical
    joints, hanging from the ground origin along -z; rod frames at their centres."""
    rod, m = length / n, mass / n
    model = rm.Model3D(gravity=(0.0, 0.0, -g), name=f"whirling chain of {n} rods")
    transverse, axial = m * rod**2 / 12, m * (rod / 50) ** 2 / 2
    for i in range(n):
        model.add_body(parent=i - 1, joint="spherical", parent_point=(0.0, 0.0, -rod / 2 if i else 0.0),
                       child_point=(0.0, 0.0, rod / 2), mass=m, inertia=(transverse, transverse, axial, 0, 0, 0),
                       name=f"rod{i + 1}")
    return model, rod, m, transverse, axial


def state(theta, omega):
    """q, v of the chain with rod i at the absolute angle theta_i from the downward vertical (turned about the
    ground y axis, out towards -x) and the whole chain turning rigidly at omega about the vertical."""
    relative = np.diff(np.concatenate([[0.0], theta]))
    q = np.concatenate([[np.cos(a / 2), 0.0, np.sin(a / 2), 0.0] for a in relative])
    v = np.zeros(3 * theta.size)
    v[:3] = omega * np.array([-np.sin(theta[0]), 0.0, np.cos(theta[0])])  # R1^T e_z, R1 = Rot_y(theta_1)
    return q, v


def in_plane_forces(theta, model, omega):
    """The bias forces about each joint's y axis (the whirl plane's normal): zero at a steady whirl."""
    q, v = state(theta, omega)
    return rm.bias_forces(model, q, v)[1::3]


def potential_slope(theta, omega, rod, m, transverse, axial, g=G):
    """dU/dtheta_j of U = sum_i m g z_i - omega^2 / 2 sum_i (m x_i^2 + transverse sin^2 + axial cos^2), with the
    centre of rod i at x_i = -(sum_{k<i} rod sin(theta_k) + rod/2 sin(theta_i)), z_i likewise with cos."""
    n = theta.size
    sin, cos = np.sin(theta), np.cos(theta)
    x = -(np.concatenate([[0.0], np.cumsum(rod * sin)[:-1]]) + rod / 2 * sin)
    slope = np.zeros(n)
    for j in range(n):
        # d x_i / d theta_j = -rod cos(theta_j) for i > j, -rod/2 cos(theta_j) for i = j; z = -(...cos) likewise
        weight = np.where(np.arange(n) > j, rod, 0.0) + np.where(np.arange(n) == j, rod / 2, 0.0)
        dz = weight * sin[j]
        dx = -weight * cos[j]
        slope[j] = m * g * dz.sum() - omega**2 * (m * x @ dx)
        slope[j] -= omega**2 * (transverse - axial) * sin[j] * cos[j]
    return slope


def steady_whirl(model, omega, guess, tol=1e-11):
    """The rods' angles (n,) of the steady whirl at omega from ``guess`` (fsolve on ``in_plane_forces``), checked:
    the in-plane forces below tol times the chain's weight moment, the out-of-plane and torsion ones zero."""
    theta = fsolve(in_plane_forces, guess, args=(model, omega), xtol=1e-14, full_output=True)[0]  # checked below
    if not np.all(np.isfinite(theta)):
        raise RuntimeError(f"no steady whirl found at omega = {omega} from the guess {guess} (Newton diverged)")
    theta = np.mod(theta + np.pi, 2 * np.pi) - np.pi  # angles in [-pi, pi)
    scale = float(model._table.column("mass").sum()) * G * LENGTH
    q, v = state(theta, omega)
    if np.abs(rm.bias_forces(model, q, v)).max() > tol * scale:
        raise RuntimeError(f"no steady whirl found at omega = {omega} from the guess {guess}")
    return theta


if __name__ == "__main__":
    arguments = parser(__doc__)
    arguments.add_argument("n", nargs="?", type=int, default=4, help="number of rods (default 4)")
    args = parse(arguments)
    # one rod: the compound conical pendulum
    model, rod, m, transverse, axial = whirling_chain(1)
    pivot = transverse + m * rod**2 / 4
    print("one rod (compound conical pendulum): cos(theta) = m g c / (omega^2 (I1' - I3))")
    for omega in (5.0, 8.0, 12.0):
        theta = steady_whirl(model, omega, np.array([1.0]))
        exact = np.arccos(m * G * rod / 2 / (omega**2 * (pivot - axial)))
        print(f"  omega = {omega:5.2f} rad/s: theta = {theta[0]:.15f} rad, closed form {exact:.15f}, "
              f"difference {abs(theta[0] - exact):.1e}")
    n = args.n
    model, rod, m, transverse, axial = whirling_chain(n)
    first = rm.modes(model, model.neutral())[0][n]  # the n rods' torsions come first, at zero frequency
    print(f"{n} rods: first natural frequency of the hanging chain {first:.6f} rad/s")
    print(f"{'omega / omega1':>15} {'rod angles [deg]':>40} {'|dU/dtheta| (closed form)':>27} {'max |vdot|':>11}")
    worst = 0.0
    fan = np.linspace(0.8, 1.2, n)
    guess = fan
    for ratio in (2.5, 1.6, 1.2, 1.05, 1.01, 0.9):  # from fast to slow, each shape the next one's guess
        omega = ratio * first
        theta = steady_whirl(model, omega, guess if ratio > 1 else fan)
        if theta[0] < 0:  # the mirror image of the same whirl
            theta = -theta
        slope = np.abs(potential_slope(theta, omega, rod, m, transverse, axial)).max()
        worst = max(worst, slope)
        q, v = state(theta, omega)
        vdot = np.abs(rm.forward_dynamics(model, q, v)).max()  # a steady whirl: every joint rate stays constant
        angles = ", ".join(f"{a:.3f}" for a in np.degrees(theta))
        print(f"{ratio:>15.2f} {angles:>40} {slope:>27.2e} {vdot:>11.2e}")
        guess = theta
    print(f"max |dU/dtheta| of the closed-form effective potential at the steady whirls [N m]: {worst:.2e}")
