"""A four-bar linkage released from rest under gravity: the loop closed by a Lagrange multiplier, kept by
projection; energy, loop closure and the reaction forces at the hinges.

    python3 examples/four_bar.py [t_end] [--plot FILE]   (--plot: snapshots, energy and drift with rm.plot)
"""

import numpy as np
from _options import parse, parser

import recursive_mbd as rm

arg_parser = parser(__doc__, plot="FILE")
arg_parser.add_argument("t_end", type=float, nargs="?", default=10.0, help="simulated time [s] (default 10)")
args = parse(arg_parser)
t_end, plot_file = args.t_end, args.plot
model, q0 = rm.models.four_bar(crank_angle=1.0)  # crank 1 m, coupler 2 m, rocker 1.5 m, pivots 3 m apart
res = rm.simulate(model, q0, np.zeros(3), t_end, rtol=1e-10, atol=1e-12, t_eval=np.linspace(0, t_end, 201))
print(res)
energy = np.sum(res.energy(), axis=0)
print(f"max |E(t) - E(0)| = {np.abs(energy - energy[0]).max():.2e} J, "
      f"loop closure max |phi| = {res.constraint_drift.max():.1e} m")

qdd = res.qdd()
print("   t [s]   crank [rad]   ground-crank hinge force [N]   coupler-rocker pin force on coupler [N]")
for i in range(0, res.t.size, 40):
    r = rm.joint_reactions(model, res.q[i], res.qd[i], qdd[i])
    print(f"{res.t[i]:8.2f}  {res.q[i, 0]:12.4f}   ({r.joint[0, 0]:9.3f}, {r.joint[0, 1]:9.3f})"
          f"          ({r.loops[0, 0, 0]:9.3f}, {r.loops[0, 0, 1]:9.3f})")

eq = rm.static_equilibrium(model, rm.models.four_bar(crank_angle=-1.0)[1])
omega, _ = rm.modes(model, eq.q)
print(f"hanging equilibrium q = {np.round(eq.q, 6)} ({'stable' if eq.stable else 'unstable'}), "
      f"small-oscillation frequency {omega[0]:.6f} rad/s")

if plot_file:
    import matplotlib.pyplot as plt  # the optional extra "plot"

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    rm.plot.snapshots(model, res, np.linspace(0, min(t_end, 2.0), 5), axes[0])
    rm.plot.energy(res.t, energy, axes[1])
    rm.plot.drift(res.t, res.constraint_drift, axes[2])
    fig.tight_layout()
    fig.savefig(plot_file, dpi=100)
    print(f"wrote {plot_file}")
