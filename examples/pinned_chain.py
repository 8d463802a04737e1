"""A chain of 50 rigid links pinned at both ends: settled to static equilibrium, compared with the catenary, and
the support reactions against its weight; then a swing about it with joint dampers (the energy above the
equilibrium decays; the whole-chain swing is damped only weakly by joint dampers).

    python3 examples/pinned_chain.py [n_links] [t_end]
"""

import numpy as np
import scipy.optimize
from _options import links_and_time

import recursive_mbd as rm

n, t_end = links_and_time(__doc__, 50, 20.0, time_help="simulated swing [s]")
length, mass, span = 10.0, 5.0, 6.0
chain = rm.chains.serial_chain(n, length=length, mass=mass)
link = length / n
chain.add_loop("revolute", n - 1, (0.0, -link / 2), "ground", (span, 0.0), name="right support")
for i in range(1, n):  # light joint damping for the swing
    chain.add_joint_spring_damper(i, 0.0, damping=0.3)

slope = np.arcsin(span / length)  # a V through both supports: closed exactly, far from equilibrium
guess = np.zeros(n)
guess[0], guess[n // 2] = slope, np.pi - 2 * slope
eq = rm.static_equilibrium(chain, guess)
poses, _ = rm.forward_kinematics(chain, eq.q)
sag = -rm.point_kinematics(chain, eq.q, np.zeros(n), n // 2 - 1, (0.0, -link / 2))[0][1]
a = scipy.optimize.brentq(lambda a: 2 * a * np.sinh(span / (2 * a)) - length, 0.1, 100.0)
catenary_sag = a * (np.cosh(span / (2 * a)) - 1)
print(f"{n} links: equilibrium by {eq.method} in {eq.iterations} iterations ({'stable' if eq.stable else 'unstable'})")
print(f"mid-span sag {sag:.6f} m; continuous catenary of the same length {catenary_sag:.6f} m")
left = eq.reactions.joint[0, :2]
right = eq.reactions.loops[0, 0, :2]
print(f"support forces: left ({left[0]:.4f}, {left[1]:.4f}) N, right ({right[0]:.4f}, {right[1]:.4f}) N; "
      f"sum of vertical {left[1] + right[1]:.6f} N = weight {mass * 9.81:.6f} N")

rng = np.random.default_rng(0)
q0 = rm.assemble(chain, eq.q + rng.normal(0.0, 0.05, n))
res = rm.simulate(chain, q0, np.zeros(n), t_end, rtol=1e-8, atol=1e-10, every=50)
energy = np.sum(res.energy(), axis=0) - sum(rm.energy(chain, eq.q, np.zeros(n)))
print(res)
print(f"damped swing: energy above equilibrium {energy[0]:.3e} J at start, {energy[-1]:.3e} J at t = {t_end:g} s; "
      f"distance to the static shape "
      f"{np.abs(res.q[-1] - eq.q).max():.2e} rad; loop drift {res.constraint_drift.max():.1e} m")
