"""The piston mechanism of KINE2D: a slider-crank with a gas-pressure force on the piston over one revolution.

1. Kinematic analysis at constant crank speed: piston motion against the closed form, the driving torque the
   crank needs against the gas force and the inertia, checked by virtual work (power balance).
2. Dynamic response: the same mechanism with a flywheel-sized crank, driven by the mean torque, the crank speed
   fluctuating over the revolution.

    python3 examples/slider_crank.py
"""

import numpy as np
from _options import parse, parser

import recursive_mbd as rm

parse(parser(__doc__))
r, l, omega = 0.05, 0.2, 300.0  # crank radius and rod length [m], crank speed [rad/s] (about 2900 rpm)
bore_area, p_peak = 5e-3, 4e6  # piston area [m^2], peak gas pressure [Pa]


def crank_angle(t):
    return omega * t


def gas_force(t):
    """Gas pressure on the piston (pushing it away from the crank, -x here) peaking just after top dead centre."""
    theta = np.mod(crank_angle(t), 2 * np.pi)
    return (-bore_area * p_peak * np.exp(-((theta - 0.3) / 0.35) ** 2), 0.0)


def mechanism(crank_inertia_boost=0.0):
    model, q0 = rm.models.slider_crank(crank=r, rod=l, crank_mass=2.0, rod_mass=0.8, piston_mass=0.6, crank_angle=0.0)
    if crank_inertia_boost:
        model = rm.Model(gravity=(0.0, -9.81), name="slider-crank with flywheel")
        model.add_body("ground", "revolute", (0, 0), (-r / 2, 0), mass=2.0, inertia=crank_inertia_boost, name="crank")
        model.add_body("crank", "revolute", (r / 2, 0), (-l / 2, 0), mass=0.8, inertia=0.8 * l * l / 12, name="rod")
        model.add_body("ground", "prismatic", axis=(1.0, 0.0), mass=0.6, name="piston")
        model.add_loop("revolute", "rod", (l / 2, 0), "piston", (0, 0), name="wrist pin")
    model.add_force("piston", (0.0, 0.0), gas_force, name="gas")
    return model, q0


model, q0 = mechanism()
period = 2 * np.pi / omega
t = np.linspace(0.0, period, 181)
kin = rm.kinematic_analysis(model, {"crank": (crank_angle, lambda t: omega, lambda t: 0.0)}, t, q0)
theta = crank_angle(t)
x_exact = r * np.cos(theta) + np.sqrt(l**2 - (r * np.sin(theta)) ** 2)
print(f"piston position against the closed form: max error {np.abs(kin.q[:, 2] - x_exact).max():.1e} m")
power = np.array([qd @ rm.inverse_dynamics(model, q, qd, qdd, t=ti)
                  for q, qd, qdd, ti in zip(kin.q, kin.qd, kin.qdd, t, strict=True)])
torque = kin.driving_forces[:, 0]
print(f"driving torque: min {torque.min():.1f}, max {torque.max():.1f}, mean {torque.mean():.2f} N m; "
      f"virtual-work check max |T omega - P| = {np.abs(torque * omega - power).max():.1e} W")
print(f"peak wrist-pin force {np.abs(kin.loop_forces[:, 0, :2]).max():.0f} N, "
      f"peak main-bearing force {np.hypot(*kin.joint_reactions[:, 0, :2].T).max():.0f} N")

mean_torque = float(np.trapezoid(torque, t) / period)
flywheel, q0 = mechanism(crank_inertia_boost=0.05)
res = rm.simulate(flywheel, q0, kin.qd[0], period, tau=np.array([mean_torque, 0, 0]), rtol=1e-10, atol=1e-12,
                  t_eval=t)  # start at the crank speed omega: the consistent rates of the kinematic analysis
speed = res.qd[:, 0]
print(f"dynamic response with a 0.05 kg m^2 flywheel and the mean torque {mean_torque:.2f} N m: crank speed "
      f"{speed.min():.2f} .. {speed.max():.2f} rad/s (fluctuation {(speed.max() - speed.min()) / omega:.2%}), "
      f"loop drift {res.constraint_drift.max():.1e} m")
balance = res.energy_balance()
print(f"energy balance (E + W_diss - W_applied - E0) max |.| = {np.abs(balance).max():.1e} J")
