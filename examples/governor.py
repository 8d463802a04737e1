"""A centrifugal governor (KINE2D/KINE3D) as a spatial model: the sleeve height against the spindle speed.

A vertical spindle driven at omega, two fly-balls on arms hinged to the spindle, links from the balls to a sleeve
that slides on the spindle (``rm.models.centrifugal_governor``; arms as long as the links: the Porter governor). The
tree keeps the links as the symmetric motion's configuration map q(phi): for each omega the steady arm angle is the
zero of the reduced generalised force (gravity and the centrifugal load from ``rm.bias_forces`` of the spinning
tree, projected on dq/dphi), compared with the closed form 2 g (m + M) / (m omega^2) for the sleeve's depth below
the pivot. The same governor with its links as real distance loops (``closed=True``) gives it again from
``rm.static_equilibrium`` with the spindle held at omega (``velocity=``), no configuration map involved. At each
steady state the constrained dynamics (M, h of the tree, the two link constraints by Lagrange multipliers, the
spindle speed held) give zero accelerations, and the symmetric motion released off it settles to it under damping
(scipy's solve_ivp on the tree's equations projected on the links' tangent). Source: Sugiyama, Naitoh and
Toguchi, "Development of a computer simulation system for multibody mechanical systems" (KINE2D/KINE3D).

    python3 examples/governor.py [--plot FILE]
"""

import numpy as np
from _options import parse, parser
from scipy.integrate import solve_ivp

import recursive_mbd as rm

args = parse(parser(__doc__, plot="FILE"))
gov = rm.models.centrifugal_governor(ball_mass=1.0, sleeve_mass=2.0, arm=0.2, link=0.2, pivot_height=0.5)
model = gov.model
lift_off = gov.speed(0.0)
print(f"{model.name}: {model.nbodies} bodies, nq = {model.nq}, nv = {model.nv}; balls lift off at omega = "
      f"{lift_off:.4f} rad/s ({lift_off * 30 / np.pi:.1f} rpm)")


def link_constraints(q):
    """The two links as constraints c(q) = 0 (each ball's link reaches the sleeve on the axis) and their Jacobian
    (2, 4): c_i = (H - d) - a cos(phi_i) - sqrt(b^2 - a^2 sin^2(phi_i))."""
    a, b, top = gov.arm, gov.link, gov.pivot_height
    values, jac = np.zeros(2), np.zeros((2, 4))
    for i, phi in enumerate(q[1:3]):
        root = np.sqrt(b * b - a * a + (a * np.cos(phi)) ** 2)
        values[i] = (top - q[3]) - a * np.cos(phi) - root
        jac[i, 1 + i] = a * np.sin(phi) + a * a * np.sin(phi) * np.cos(phi) / root
        jac[i, 3] = -1.0
    return values, jac


def steady_accelerations(q, omega):
    """Accelerations of the arms and the sleeve with the spindle held at omega and the links closed (the
    multiplier layer by hand: [M J^T; J 0] (vdot, lambda) = (-h, 0); J' v = 0 at rest in the turning frame)."""
    v = np.array([omega, 0.0, 0.0, 0.0])
    free = [1, 2, 3]  # the spindle's speed is prescribed: its row (the driving torque) is dropped
    mass, bias = rm.mass_matrix(model, q)[np.ix_(free, free)], rm.bias_forces(model, q, v)[free]
    _, jac = link_constraints(q)
    jac = jac[:, free]
    kkt = np.block([[mass, jac.T], [jac, np.zeros((2, 2))]])
    return np.linalg.solve(kkt, np.concatenate([-bias, np.zeros(2)]))[:3]


rows = []
print(f"{'omega [rad/s]':>14} {'rpm':>7} {'phi [deg]':>10} {'sleeve drop [m]':>16} {'closed form [m]':>16} "
      f"{'rel. error':>11} {'max |accel.|':>13}")
for omega in np.linspace(1.25 * lift_off, 4 * lift_off, 8):
    phi = gov.steady_angle(omega)
    drop = gov.pivot_height - gov.sleeve_height(phi)
    exact = gov.sleeve_drop(omega)
    q = gov.q(phi)
    assert np.abs(link_constraints(q)[0]).max() < 1e-14
    accel = np.abs(steady_accelerations(q, omega)).max()
    rows.append((omega, drop, exact))
    print(f"{omega:>14.4f} {omega * 30 / np.pi:>7.1f} {np.degrees(phi):>10.4f} {drop:>16.12f} {exact:>16.12f} "
          f"{abs(drop - exact) / exact:>11.2e} {accel:>13.2e}")
worst = max(abs(d - e) / e for _, d, e in rows)
print(f"max relative error of the sleeve drop against 2 g (m + M) / (m omega^2): {worst:.2e}")

# the links as real loops: static equilibrium in the frame turning with the spindle, continued from one speed to
# the next (the first guess: arms at 0.6 rad, assembled by the loop layer)
closed = rm.models.centrifugal_governor(ball_mass=1.0, sleeve_mass=2.0, arm=0.2, link=0.2, pivot_height=0.5,
                                        closed=True).model
guess, worst_loops = gov.q(0.6), 0.0
for omega, _, exact in rows:
    state = rm.static_equilibrium(closed, guess, fixed=["spindle"], velocity=np.array([omega, 0.0, 0.0, 0.0]))
    worst_loops = max(worst_loops, abs(gov.pivot_height - state.q[3] - exact) / exact)
    guess = state.q
print(f"with the links as distance loops (rm.static_equilibrium, spindle held at omega): max relative error of the "
      f"sleeve drop {worst_loops:.2e}")

# dynamics settling to it: the symmetric motion (the tree's M and h on the links' tangent) from 0.15 rad below the
# steady angle, with a damper on each arm's hinge; undamped, the Jacobi integral T2 - T0 + V is kept
omega = rows[1][0]
steady = gov.steady_angle(omega)


def motion(t, y, damping):
    return [y[1], gov.arm_acceleration(y[0], y[1], omega, damping)]


free = solve_ivp(motion, (0.0, 1.0), [steady - 0.15, 0.0], args=(0.0,), rtol=1e-12, atol=1e-12)
jacobi = np.array([gov.jacobi_integral(phi, rate, omega) for phi, rate in free.y.T])
damped = solve_ivp(motion, (0.0, 6.0), [steady - 0.15, 0.0], args=(1.0,), rtol=1e-11, atol=1e-13)
print(f"dynamics at omega = {omega:.4f} rad/s: undamped, phi swings over {np.degrees(np.ptp(free.y[0])):.2f} deg "
      f"keeping the Jacobi integral (energy) to {np.ptp(jacobi) / abs(jacobi[0]):.1e} relative; with 1 N m s dampers "
      f"on the hinges it settles at phi = {np.degrees(damped.y[0, -1]):.8f} deg, steady "
      f"{np.degrees(steady):.8f} deg")
print("limitation: the dynamics use the symmetric motion's configuration map and are integrated here with scipy, "
      "not rm.simulate: it integrates the governor with its links as loops (examples/models/spatial/governor.toml), "
      "but takes no drivers on spatial models yet, so it cannot hold the spindle at omega")

if args.plot:
    fig = rm.plot.figure(1, 1, figsize=(10, 4.5))[0]
    fig.clear()
    left = fig.add_subplot(1, 2, 1)
    omegas = np.array([r[0] for r in rows])
    dense = np.linspace(omegas[0], omegas[-1], 200)
    left.plot(dense * 30 / np.pi, gov.sleeve_drop(dense), "-", label="closed form 2 g (m + M) / (m omega^2)")
    left.plot(omegas * 30 / np.pi, [r[1] for r in rows], "o", label="Model3D (reduced force = 0)")
    left.set(xlabel="spindle speed [rpm]", ylabel="sleeve drop below the pivot [m]")
    left.legend()
    right = fig.add_subplot(1, 2, 2, projection="3d")
    q = gov.q(gov.steady_angle(omegas[2]))
    rm.plot.snapshot3d(model, q, ax=right)
    sticks = rm.plot.spatial_sticks(model, q)
    for ball in sticks["coms"][1:3]:  # the links (loops, not in the tree): dashed from each ball to the sleeve
        right.plot(*np.array([ball, sticks["coms"][3]]).T, "k--", linewidth=1.0)
    right.set_title(f"{omegas[2] * 30 / np.pi:.0f} rpm")
    fig.savefig(args.plot, dpi=90)
    print(f"wrote {args.plot}")
