"""A chain falling onto a table (Hamm and Geminard 2010; Grewal, Johnson and Ruina 2011): the force on the table
against three times the weight of the chain already landed, and the fall of the top end against free fall.

    python3 examples/falling_chain.py [n_links] [--plot FILE]

A chain of n capsule links (length L = 1 m, mass M = 1 kg) hangs vertically with its lower end touching the table
and is let go. The ideal theory: the part still in the air falls freely (nothing pulls on it), so the top end falls
y = g t^2 / 2 and the chain lands at the speed v = g t, v^2 = 2 g y. The table carries the landed length y, weight
M g y / L, and stops the arriving chain: a mass rate (M / L) v arriving at speed v, the momentum flux
(M / L) v^2 = 2 M g y / L. Together F = 3 M g y / L, three times the weight of the chain already landed, until the
top lands at t = sqrt(2 L / g) (then F drops to M g). Hamm and Geminard measured the top end falling faster than g
(their chain's links pull the falling part down as they land); here, a chain of hinged rigid links that lands
folding, it falls at g to about 1 %.

The links are capsules of a quarter of their length in radius on a table with Hunt-Crossley contacts (Hertz, k = 1e7
N/m^1.5: a link's weight presses it a few micrometres in, an end landing head-on at 4.4 m/s a quarter of the radius;
restitution 0.3, so that links do not bounce; friction 0.3). A perfectly straight chain landing end-on is a rigid
column that stops the chain above it at once (an impact through the whole chain): the chain starts as a zig-zag, its
links at +-0.05 rad, which folds as it lands, the way a real chain does. The force on the table is averaged over
windows of a tenth of the fall from the table's impulse (the change of the chain's momentum plus its weight's
impulse: exact, where the sampled contact forces are a train of impacts).

Measured (dopri5, rtol 1e-6, the zig-zag +-0.05 rad; F / (M g y / L) over the last nine tenths of the fall, from
the impulse; the top's acceleration fitted over the first nine tenths):

    links   F / (M g y / L)   top's acceleration / g   steps
      50         3.013                 0.9998               4587
     100         3.027                 1.0121              25090
     200         3.056                 1.0000              50754
"""

import math

import numpy as np
from _options import parse, parser, pyplot

import recursive_mbd as rm

G = 9.81


def falling_chain(n, length=1.0, mass=1.0, zigzag=0.05, stiffness=1e7, restitution=0.3, friction=0.3):
    """(model, q0): n capsule links hanging as a zig-zag (links at +-``zigzag`` rad) from the top end at the
    origin (the first link has a planar joint: q[0:2] is the top end), the lowest capsule touching a table."""
    link = length / n
    radius = link / 4.0
    model = rm.Model(gravity=(0.0, -G), name=f"falling chain, {n} links")
    names = [f"link{j + 1}" for j in range(n)]
    m = mass / n
    model.add_body(joint="planar", child_point=(0.0, link / 2.0), mass=m, inertia=m * link ** 2 / 12.0, name=names[0])
    model.add_bodies(np.arange(n - 1), "revolute", parent_point=(0.0, -link / 2.0), child_point=(0.0, link / 2.0),
                     mass=m, inertia=m * link ** 2 / 12.0, names=names[1:])
    model.add_ground("table", point=(0.0, -length * math.cos(zigzag) - radius))
    model.add_contact(names, "table", segment=((0.0, link / 2.0), (0.0, -link / 2.0)), radius=radius,
                      stiffness=stiffness, restitution=restitution, friction=friction)
    q0 = np.zeros(n + 2)
    q0[2] = zigzag
    q0[3:] = -2.0 * zigzag * (-1.0) ** np.arange(n - 1)
    return model, q0


def table_impulse(model, res, mass=1.0):
    """The table's impulse since t = 0 at every sample: the change of the chain's vertical momentum plus its
    weight's impulse (links of equal mass)."""
    momentum = np.array([rm.augmented.absolute_from_joint(model, q, qd)[1][:, 1].sum() for q, qd in
                         zip(res.q, res.qd, strict=True)]) * mass / model.nbodies
    return momentum - momentum[0] + mass * G * res.t


def fall(n, samples=401, length=1.0, mass=1.0):
    """(res, landed length y, impulse, t_land): the chain released, simulated until the top would land."""
    model, q0 = falling_chain(n, length, mass)
    t_land = math.sqrt(2.0 * length / G)
    res = rm.simulate(model, q0, np.zeros_like(q0), t_land, t_eval=np.linspace(0.0, t_land, samples), rtol=1e-6,
                      atol=1e-9)
    if not res.success:
        raise rm.SimulationError(f"{model.name}: {res.message}")
    return res, -res.q[:, 1], table_impulse(model, res, mass), t_land


if __name__ == "__main__":
    arg_parser = parser(__doc__, plot="FILE")
    arg_parser.add_argument("n", type=int, nargs="?", default=50, help="links (default 50)")
    args = parse(arg_parser)
    length, mass = 1.0, 1.0
    res, landed, impulse, t_land = fall(args.n)
    print(res)
    weight = mass * G / length  # the landed chain's weight per length
    edges = np.searchsorted(res.t, np.linspace(0.0, t_land, 11))
    edges[-1] = res.t.size - 1
    print(" t [s]           top's fall [m]  free fall [m]  mean F [N]  3 M g y / L [N]  ratio F / (M g y / L)")
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        force = (impulse[b] - impulse[a]) / (res.t[b] - res.t[a])
        y = landed[a:b + 1].mean()
        print(f" {res.t[a]:.3f}-{res.t[b]:.3f}  {landed[b]:14.4f}  {0.5 * G * res.t[b] ** 2:13.4f}  {force:10.3f}"
              f"  {3.0 * weight * y:15.3f}  {force / (weight * y):21.2f}")
    first = edges[1]
    # the whole fall but its first tenth: the impulse against the integral of M g y / L over the same span
    integral = np.trapezoid(weight * landed[first:], res.t[first:])
    air = res.t <= 0.9 * t_land  # the top's acceleration before it comes near the table: y = a t^2 / 2 fitted
    top = np.linalg.lstsq(0.5 * res.t[air, None] ** 2, landed[air])[0][0]
    print(f"F / (M g y / L) over the last nine tenths of the fall: {(impulse[-1] - impulse[first]) / integral:.3f} "
          f"(ideal 3); the top's acceleration over the first nine tenths {top / G:.5f} g; energy balance "
          f"{np.abs(res.energy_balance()).max():.1e} J; {res.nsteps} steps")
    if args.plot:
        plt = pyplot()
        bins = np.searchsorted(res.t, np.linspace(0.0, t_land, 41))
        bins[-1] = res.t.size - 1
        mean = np.diff(impulse[bins]) / np.diff(res.t[bins])
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.stairs(mean, res.t[bins], label="force on the table, mean over each 40th of the fall (impulse)")
        ax.plot(res.t, 3.0 * weight * landed, "k--", label="3 M g y / L (y: the top's fall)")
        ax.plot(res.t, weight * landed, "k:", label="M g y / L")
        ax.set(xlabel="t [s]", ylabel="force [N]", title=f"{args.n}-link chain falling onto a table")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot)
        print(f"figure: {args.plot}")
