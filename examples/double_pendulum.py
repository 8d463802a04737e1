"""A double pendulum of two uniform rods released from the horizontal: simulate, check energy, compare with
Takeno's closed form (Takeno 2018, eq. 19) at the final state.

    python3 examples/double_pendulum.py
"""

import numpy as np
from _options import parse, parser

import recursive_mbd as rm

parse(parser(__doc__))
model = rm.chains.serial_chain(2, length=1.0, mass=1.0)
q0 = np.array([np.pi / 2, 0.0])  # first rod horizontal, second rod in line with it
res = rm.simulate(model, q0, np.zeros(2), 5.0, rtol=1e-10, atol=1e-12, t_eval=np.linspace(0, 5, 501))
print(res)

kinetic, potential = res.energy()
total = kinetic + potential
print(f"max |E(t) - E(0)| = {np.max(np.abs(total - total[0])):.2e} J")

# absolute rod angles (Takeno's theta) and the closed-form accelerations at the final state
theta = rm.chains.relative_to_absolute(res.q[-1])
theta_dot = rm.chains.relative_to_absolute(res.qd[-1])
closed_form = rm.chains.takeno_forward_dynamics(theta, theta_dot, lengths=[0.5, 0.5], density=1.0)
recursive = rm.chains.relative_to_absolute(rm.forward_dynamics(model, res.q[-1], res.qd[-1]))
print(f"theta = {theta}, recursive theta'' = {recursive}, closed form {closed_form}")

tip, tip_velocity = rm.point_kinematics(model, res.q[-1], res.qd[-1], "link2", (0.0, -0.25))
print(f"tip at t = {res.t[-1]:g} s: position {tip}, velocity {tip_velocity}")
