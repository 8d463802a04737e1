"""A chain over a fixed drum held by friction, against the capstan law T_high / T_low = exp(mu theta): the chain
of light links wrapped over the top half of a drum (theta = pi) between two hanging weights slides steadily, and
the tension ratio measured from its acceleration tends to exp(mu pi) as the number of links on the drum grows.

    python3 examples/capstan.py [--links M [M ...]] [--friction MU] [--t-end T]

The chain touches the drum at its joints only (a point contact at each link's lower end): over the drum it is the
regular polygon of M chords inscribed in the half circle, turning by alpha = pi / M at each inner joint and by
alpha / 2 at the two end joints, where the straight hanging parts leave the drum. At a joint that turns the chain by
beta and slides, the normal force is (T1 + T2) sin(beta / 2) and friction mu times it balances
(T1 - T2) cos(beta / 2), so

    T1 / T2 = (1 + mu tan(beta / 2)) / (1 - mu tan(beta / 2)),

and the whole wrap multiplies these: R_M = f(alpha / 2)^2 f(alpha)^(M - 1), which tends to exp(mu pi) as M grows
(its logarithm is mu pi plus terms of order mu alpha^2). A weight m_high on the left end (a slider on a vertical
guide) and m_low on the right one (a bob) with m_high / m_low = 1.1 R_M slide the chain steadily: the tensions
m_high (g - a) and m_low (g + a) at the ends give R = m_high (g - a) / (m_low (g + a)) from the measured
acceleration a (a quadratic fitted to the slider's fall over the last two thirds of the run). The chain's own mass
is a thousandth of the weights', so the inertia and weight of its links change the ratio by about 1e-4.

Measured (dopri5, rtol 1e-6; mu = 0.3, exp(mu pi) = 2.566332; drum radius 0.1 m, linear contacts 1e5 N/m):

    links M   R_M (discrete)   R measured   measured / R_M - 1   measured / exp(mu pi) - 1
       25       2.569706         2.569417        -1.1e-04               +1.2e-03
       50       2.567187         2.567529        +1.3e-04               +4.7e-04
      100       2.566548         2.567138        +2.3e-04               +3.1e-04
      200       2.566386         2.565778        -2.4e-04               -2.2e-04

Below R_M the chain holds: with m_high / m_low = 0.9 R_M (12 links) it slips 0.6 mm as the contacts take the load,
then stays put (tests/test_contact_studies.py).
"""

import math

import numpy as np
from _options import parse, parser

import recursive_mbd as rm

G = 9.81


def polygon_ratio(links, friction):
    """R_M: the tension ratio of a chain sliding over a half drum that it touches at the M + 1 joints of an
    inscribed regular polygon of ``links`` chords (the end joints turn it by half the inner joints' angle)."""
    def per_joint(beta):
        slope = friction * math.tan(beta / 2.0)
        return (1.0 + slope) / (1.0 - slope)

    alpha = math.pi / links
    return per_joint(alpha / 2.0) ** 2 * per_joint(alpha) ** (links - 1)


def chain_over_drum(links, friction, weight_ratio, radius=0.1, low_mass=1.0, chain_mass=1e-3, hanging=(2, 10),
                    stiffness=1e5):
    """(model, q0): a chain of ``links`` equal chords over the top half of a drum of ``radius`` [m] at the origin,
    with ``hanging`` (left, right) more links down each side; a slider of ``weight_ratio`` * ``low_mass`` [kg] on
    a vertical guide at the left end (its coordinate q[0], the end's fall), a point mass ``low_mass`` at the right
    end (the last link's lower end). The joints touch the drum (linear law, restitution 0.9, impact speed scale
    1 m/s: light links on a drum need little damping, and more would only shorten the steps)."""
    chord = 2.0 * radius * math.sin(math.pi / (2.0 * links))
    left, right = hanging
    model = rm.Model(gravity=(0.0, -G), name=f"chain over a drum, {links} links")
    model.add_body(joint="prismatic", axis=(0.0, 1.0), parent_point=(-radius, -left * chord),
                   mass=weight_ratio * low_mass, name="high weight")
    angles = math.pi - np.arange(links + 1) * math.pi / links  # the polygon's corners on the drum
    corners = radius * np.column_stack((np.cos(angles), np.sin(angles)))
    directions = np.vstack((np.tile((0.0, 1.0), (left, 1)), np.diff(corners, axis=0) / chord,
                            np.tile((0.0, -1.0), (right + 1, 1))))
    # a link lies along its -y axis: its absolute angle theta points it along (sin theta, -cos theta)
    theta = np.unwrap(np.arctan2(directions[:, 0], -directions[:, 1]))
    count = len(directions)
    masses = np.full(count, chain_mass / (count - 1))
    masses[-1] = low_mass  # the bob: the last link's lower end
    inertia = masses * chord ** 2 / 12.0
    inertia[-1] = 0.0
    com = np.zeros((count, 2))
    com[-1, 1] = -chord / 2.0
    parent_point = np.tile((0.0, -chord / 2.0), (count, 1))
    parent_point[0] = 0.0
    names = [f"link{j + 1}" for j in range(count)]
    model.add_bodies(np.arange(count), "revolute", parent_point=parent_point, child_point=(0.0, chord / 2.0),
                     mass=masses, inertia=inertia, com=com, names=names)
    model.add_drum("drum", center=(0.0, 0.0), radius=radius)
    model.add_contact(names[:-1], "drum", point=(0.0, -chord / 2.0), stiffness=stiffness, exponent=1.0,
                      restitution=0.9, min_impact_speed=1.0, friction=friction)
    q0 = np.concatenate(([0.0], np.diff(theta, prepend=0.0)))
    return model, q0


def measured_ratio(links, friction, t_end=0.3, excess=1.1):
    """(R measured, R_M, the run): the chain slid by weights in the ratio ``excess`` * R_M for ``t_end`` [s]."""
    exact = polygon_ratio(links, friction)
    model, q0 = chain_over_drum(links, friction, excess * exact)
    times = np.linspace(0.0, t_end, 61)
    res = rm.simulate(model, q0, np.zeros_like(q0), t_end, t_eval=times, rtol=1e-6, atol=1e-10)
    if not res.success:
        raise rm.SimulationError(f"{model.name}: {res.message}")
    steady = times >= t_end / 3.0  # after the stick springs have let go and the start's waves have died out
    fall = -2.0 * np.polyfit(times[steady], res.q[steady, 0], 2)[0]
    return excess * exact * (G - fall) / (G + fall), exact, res


if __name__ == "__main__":
    arg_parser = parser(__doc__)
    arg_parser.add_argument("--links", type=int, nargs="+", default=[25, 50],
                            help="links over the drum (default 25 50; the table above: 25 50 100 200)")
    arg_parser.add_argument("--friction", type=float, default=0.3, help="mu (default 0.3)")
    arg_parser.add_argument("--t-end", type=float, default=0.3, help="simulated slide [s] (default 0.3)")
    args = parse(arg_parser)
    capstan = math.exp(args.friction * math.pi)
    print(f"capstan ratio exp(mu pi) = {capstan:.6f} (mu = {args.friction:g})")
    print(" links  R_M (discrete)  R measured  measured/R_M - 1  measured/exp(mu pi) - 1  steps  energy balance [J]")
    for links in args.links:
        ratio, exact, res = measured_ratio(links, args.friction, args.t_end)
        print(f"{links:6d}  {exact:14.6f}  {ratio:10.6f}  {ratio / exact - 1.0:16.1e}  {ratio / capstan - 1.0:23.1e}"
              f"  {res.nsteps:5d}  {np.abs(res.energy_balance()).max():.1e}")
