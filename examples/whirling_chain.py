"""A hanging chain whirling in a cone: the steady shapes of a chain of rods on spherical joints turning rigidly about
the vertical at omega (Takeno 2018's hanging chain, in three dimensions), and the chain hung off the axis, from a
point on a small horizontal circle, against the whirling string.

In the frame turning with the chain, a steady whirl is a relative equilibrium: with every joint at rest relative to
its parent and the first rod turning at omega about the vertical, the spatial bias forces (gravity and the
centrifugal and gyroscopic terms, ``rm.bias_forces``) must vanish. Newton on the rods' angles in their common
vertical plane finds the shape; it is checked against the closed form of the effective potential
U(theta) = V - omega^2 / 2 e_z^T I(theta) e_z (I the chain's inertia about the vertical axis through the pivot),
differentiated by hand, and one rod gives the compound conical pendulum cos(theta) = m g c / (omega^2 (I1' - I3)).
Below the chain's first natural frequency (``rm.modes`` of the hanging chain) the chain hangs straight; above it,
it whirls out.

Hung from the tip of an arm of radius a = 0.1 m driven at 4.5 rad/s (``rm.studies.whirling_chain_model``), the
chain has one whirl that grows out of the hanging chain. ``rm.studies.steady_whirl`` finds it from statics in the
turning frame, ``rm.studies.whirling_string`` the continuous string's by a boundary-value solve; the discrete
shape and the top joint's force approach the string's with order 2 in the number of rods
(``rm.studies.whirl_convergence``), and a run started on the discrete whirl (``rm.studies.whirling_chain``) stays
on it. With --plot FILE (matplotlib), the shapes and the errors against n.

    python3 examples/whirling_chain.py [N] [--quick] [--plot FILE]
"""

import numpy as np
from _options import parse, parser, pyplot
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
    arguments = parser(__doc__, plot="FILE")
    arguments.add_argument("n", nargs="?", type=int, default=4, help="number of rods (default 4)")
    arguments.add_argument("--quick", action="store_true", help="fewer rods off the axis (about a second)")
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

    # hung off the axis: the arm's tip on a circle of radius a, the discrete whirl against the whirling string
    radius, rate = 0.1, 4.5
    ns = [4, 8, 16, 32] + ([] if args.quick else [64, 128])
    study = rm.studies.whirl_convergence(ns, radius, rate)
    string = study["string"]
    top = string["top_tension"]
    print(f"\nhung {radius} m off the axis, whirled at {rate} rad/s: the string's free end at x = "
          f"{string['tip'][0]:.6f} m, z = {string['tip'][2]:.6f} m, its top tension ({top[0]:.6f}, {top[2]:.6f}) N")
    print(f"{'n':>5} {'free end x [m]':>15} {'free end z [m]':>15} {'shape error [m]':>16} {'top tension error':>18}")
    for n, tip, shape, tension in zip(ns, study["tip"], study["shape_error"], study["tension_error"], strict=True):
        print(f"{n:>5} {tip[0]:>15.8f} {tip[2]:>15.8f} {shape:>16.3e} {tension:>18.3e}")
    print(f"order in n: shape {study['shape_order']:.3f}, top tension {study['tension_order']:.3f}")
    run = rm.studies.whirling_chain(8, radius, rate, 2.0 if args.quick else 10.0)
    print(f"8 rods started on their steady whirl, {run['t'][-1]:g} s of dopri5 (rtol 1e-10, {run['nsteps']} steps): "
          f"largest distance from the steady shape in the turning frame {run['shape_deviation']:.1e} m, top tension "
          f"off by {run['tension_deviation']:.1e} (relative), driving torque up to {run['driving_torque']:.1e} N m, "
          f"energy drift {run['energy_error']:.1e} m g L")
    if args.plot:
        plt = pyplot()
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.5))
        s = np.linspace(0.0, 1.0, 201)
        ax1.plot(string["shape"](s)[:, 0], string["shape"](s)[:, 2], "k-", label="string (solve_bvp)")
        for n in ns[:3]:
            points = rm.studies.steady_whirl(n, radius, rate)["points"]
            ax1.plot(points[:, 0], points[:, 2], "o--", ms=3, label=f"{n} rods")
        ax1.axvline(0.0, color="grey", lw=0.8)
        ax1.set(xlabel="x, out along the arm [m]", ylabel="z [m]", aspect="equal",
                title=f"steady whirl, a = {radius} m, {rate} rad/s (turning frame)")
        ax1.legend(fontsize=7)
        ax2.loglog(ns, study["shape_error"], "o-", label=f"shape [m], order {study['shape_order']:.2f}")
        ax2.loglog(ns, study["tension_error"], "s-",
                   label=f"top tension (relative), order {study['tension_order']:.2f}")
        ax2.set(xlabel="rods n [-]", ylabel="error against the string", title="discrete whirl against the string")
        ax2.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"wrote {args.plot}")
