"""Two squares, two pins and a spring-damper, simulated for 5 s: a tutorial's worked example.

    python3 examples/two_squares.py [--plot out.png]

Prints the body poses at the end and the energy balance: the energy lost equals the work of the damper. With
--plot (needs matplotlib: pip install matplotlib) it draws the coordinates and the energy terms.
Source: the tutorial "Multibody dynamics, a very short introduction" (planar rigid bodies).
"""

import numpy as np
from _options import parse, parser, pyplot

import recursive_mbd as rm

args = parse(parser(__doc__, plot="FILE"))

model, q0, qd0 = rm.models.two_squares(m=5.0, a=1.0, k=10.0, c=1.0, g=9.81)
times = np.linspace(0.0, 5.0, 501)
res = rm.simulate(model, q0, qd0, 5.0, method="dopri5", rtol=1e-11, atol=1e-12, t_eval=times)
print(res)

kinetic, potential = res.energy()
total = kinetic + potential
balance = res.energy_balance()
print(f"E(0) = {total[0]:.9f} J, E(5 s) = {total[-1]:.9f} J, lost {total[0] - total[-1]:.9f} J")
print(f"work dissipated by the damper: {res.dissipated_work[-1]:.9f} J")
print(f"energy balance E(t) + W_damper(t) - E(0): max |.| = {np.max(np.abs(balance)):.2e} J "
      f"({np.max(np.abs(balance)) / abs(total[0]):.1e} of E(0))")
for name in model.body_names:
    x, y, theta = res.poses(name)[-1]
    print(f"{name} at t = 5 s: x = {x:+.6f} m, y = {y:+.6f} m, theta = {theta:+.6f} rad")

if args.plot:
    fig, (ax1, ax2) = pyplot().subplots(2, 1, figsize=(7, 6), sharex=True)
    for name in model.body_names:
        pose = res.poses(name)
        ax1.plot(res.t, pose[:, 0], label=f"x of {name}")
        ax1.plot(res.t, pose[:, 1], "--", label=f"y of {name}")
    ax1.set_ylabel("frame position [m]")
    ax1.legend(ncol=2, fontsize=8)
    ax2.plot(res.t, total, label="E = T + V")
    ax2.plot(res.t, res.dissipated_work, label="damper work")
    ax2.plot(res.t, total + res.dissipated_work, ":", label="E + damper work")
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("energy [J]")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    print(f"wrote {args.plot}")
