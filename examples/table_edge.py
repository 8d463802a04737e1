"""A chain sliding off a frictionless table over its rounded edge, against the classic closed form: a uniform chain
of length L with x0 hanging slides with x(t) = x0 cosh(sqrt(g / L) t).

    python3 examples/table_edge.py [n_links] [t_end]

The chain (capsule links) lies on a table top whose edge is a small frictionless drum, and hangs over it. With the
table and the drum smooth, sliding the chain by ds moves a piece ds of it from the table's level to the end, x below
it, and every piece moves at the same speed: rho L x'' = rho g x with x the depth of the end below the chain's line
on the table (whatever the shape of the bend over the edge, which keeps its shape), whence the cosh. It holds while
the chain stays on the drum: the tension at the edge must exceed the centripetal rho v^2, which with v^2 = g (x^2 -
x0^2) / L holds until about half the chain hangs; the runs stop before that. The links over the edge form the
polygon of five chords circumscribed about the drum (each tangent to it at its middle: the drum's radius is 3.7
links), so the chain turns by 15 degrees at each of six joints. The discrete chain lags the closed form a little:
its links turn and swing as they pass the bend (their rotation takes energy a continuous chain does not have); the
lag shrinks with the turn per joint (0.3 % with five chords over the edge, 1.4 % with two at 50 links) and with the
links' length.

Measured (dopri5, rtol 1e-8; L = 1 m, 0.2 m of straight chain hanging, Hertz contacts 1e7 N/m^1.5, 0.4 s):

    links   x0 [m]   x(0.4 s) [m]   max |x - x0 cosh| / x0
      25     0.332      0.627             3.1e-03
      50     0.266      0.503             2.3e-03
     100     0.233      0.441             1.8e-03
"""

import math

import numpy as np
from _options import links_and_time

import recursive_mbd as rm

G = 9.81


def chain_on_table(n, hanging, length=1.0, mass=1.0, stiffness=1e7, corner=5):
    """(model, q0, x0, radius): n capsule links of ``radius``, ``hanging`` of them hanging over the edge,
    ``corner`` over the edge's drum, the rest lying on a frictionless table top (y = 0 up to the edge at x = 0);
    x0 the depth of the chain's end below its line on the table. The first link (its free end on the table) has a
    planar joint."""
    link = length / n
    radius = link / 4.0  # the capsules' radius
    turn = math.pi / 2.0 / (corner + 1)  # corner + 1 equal turns take the chain from the table down the drum's side
    rounded = link / (2.0 * math.tan(turn / 2.0))  # the drum radius plus the capsules' that makes both chords tangent
    drum = rounded - radius
    model = rm.Model(gravity=(0.0, -G), name=f"chain over a table edge, {n} links")
    names = [f"link{j + 1}" for j in range(n)]
    # absolute link angles: a link lies along its -y axis, theta = pi/2 points it along +x (the table), 0 down
    on_table = n - hanging - corner
    theta = np.concatenate((np.full(on_table, math.pi / 2.0), math.pi / 2.0 - turn * np.arange(1, corner + 1),
                            np.zeros(hanging)))
    # the first link's proximal end: the last table link's distal end lies link / 2 past the edge (the joint of
    # two tangent chords is half a chord from each tangent point)
    start = (link / 2.0 - on_table * link, radius)
    per_link = link / 12.0 * link * mass / n
    model.add_body(joint="planar", parent_point=start, child_point=(0.0, link / 2.0), mass=mass / n,
                   inertia=per_link, name=names[0])
    model.add_bodies(np.arange(n - 1), "revolute", parent_point=(0.0, -link / 2.0), child_point=(0.0, link / 2.0),
                     mass=mass / n, inertia=per_link, names=names[1:])
    model.add_ground("table", point=(0.0, 0.0), extent=(-2.0 * length, -1e-9))
    model.add_drum("edge", center=(0.0, -drum), radius=drum)
    for surface in ("table", "edge"):
        model.add_contact(names, surface, segment=((0.0, link / 2.0), (0.0, -link / 2.0)), radius=radius,
                          stiffness=stiffness, restitution=0.5)
    q0 = np.zeros(n + 2)
    q0[2] = theta[0]
    q0[3:] = np.diff(theta)
    return model, q0, hanging * link - link / 2.0 + rounded, radius


def end_depth(model, res, radius, length=1.0):
    """The depth x of the chain's free end below the chain's line on the table (y = ``radius``) at every
    sample."""
    n = model.nbodies
    tip = np.array([rm.point_kinematics(model, q, np.zeros_like(q), n - 1, (0.0, -length / n / 2.0))[0]
                    for q in res.q])
    return radius - tip[:, 1]


if __name__ == "__main__":
    n, t_end = links_and_time(__doc__, 50, 0.4, time_help="simulated slide [s]")
    length = 1.0
    hanging = round(0.2 / (length / n))
    model, q0, x0, radius = chain_on_table(n, hanging, length)
    times = np.linspace(0.0, t_end, 41)
    res = rm.simulate(model, q0, np.zeros_like(q0), t_end, t_eval=times, rtol=1e-8, atol=1e-10)
    print(res)
    print(f"{n} links, x0 = {x0:.4f} m")
    x = end_depth(model, res, radius, length)
    closed = x0 * np.cosh(math.sqrt(G / length) * times)
    for i in range(0, times.size, 5):
        print(f"t = {times[i]:.2f} s: x = {x[i]:.5f} m, x0 cosh = {closed[i]:.5f} m, "
              f"relative difference {(x[i] - closed[i]) / x0:+.1e}")
    print(f"max |x - x0 cosh| / x0 = {np.abs(x - closed).max() / x0:.2e}; energy balance "
          f"{np.abs(res.energy_balance()).max():.1e} J")
