"""A long chain released from the horizontal: the O(N) forward dynamics inside a numba time loop.

    python3 examples/long_chain.py [N] [t_end]
"""

import time

import numpy as np
from _options import links_and_time

import recursive_mbd as rm

n, t_end = links_and_time(__doc__, 2000, 0.2)
chain = rm.chains.serial_chain(n, length=1.0, mass=1.0)
q0 = np.zeros(n)
q0[0] = np.pi / 2

start = time.perf_counter()
res = rm.simulate(chain, q0, np.zeros(n), t_end, rtol=1e-6, atol=1e-8, t_eval=np.linspace(0, t_end, 21))
wall = time.perf_counter() - start
kinetic, potential = res.energy()
print(res)
print(f"{n} links, {t_end} s simulated in {wall:.2f} s wall ({res.nsteps / wall:,.0f} steps/s)")
print(f"energy drift {np.max(np.abs(kinetic + potential - kinetic[0] - potential[0])):.2e} J")
poses, _ = rm.forward_kinematics(chain, res.q[-1])
print(f"tip link centre at t = {t_end}: ({poses[-1, 0]:.4f}, {poses[-1, 1]:.4f}) m")
