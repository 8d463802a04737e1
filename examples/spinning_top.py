"""A symmetric heavy top on a spherical joint: the steady precession rate against the closed form.

For a tilt of the symmetry axis and a spin about it, the closed form gives the slow and the fast steady
precession rates (the roots of I1' Omega^2 cos(tilt) - I3 spin Omega + m g l = 0, ``rm.models.heavy_top_precession``).
The spatial forward dynamics at that state must give exactly the acceleration of steady precession (the axis
turning about the vertical at Omega with no nutation): checked here for each rate, and the nutation acceleration
(the rate of change of the tilt's rate) is zero. Away from the closed-form rate it is not.

    python3 examples/spinning_top.py
"""

import numpy as np
from _options import parse, parser

import recursive_mbd as rm

parse(parser(__doc__))
mass, length, transverse, axial = 1.0, 0.1, 2e-3, 4e-3
model = rm.models.heavy_top(mass, length, transverse, axial)
print(f"{model.name}: nq = {model.nq}, nv = {model.nv} (a unit quaternion and the body angular velocity)")


def precession_state(tilt, spin, rate):
    """q, v of the top tilted by ``tilt`` about the ground x axis, its body frame turning about the vertical at
    ``rate`` while spinning so that its angular velocity along the symmetry axis is ``spin``."""
    q = np.array([np.cos(tilt / 2), np.sin(tilt / 2), 0.0, 0.0])
    rotation = np.array([[1, 0, 0], [0, np.cos(tilt), -np.sin(tilt)], [0, np.sin(tilt), np.cos(tilt)]])
    relative_spin = spin - rate * np.cos(tilt)  # psi' (Euler angles): spin = psi' + Omega cos(tilt)
    omega_body = rate * rotation.T @ np.array([0.0, 0.0, 1.0]) + relative_spin * np.array([0.0, 0.0, 1.0])
    return q, omega_body, rotation, relative_spin


def steady_acceleration(rotation, rate, relative_spin):
    """Body-axis angular acceleration of steady precession: the ground-axis angular velocity Omega e_z + psi' a
    (a = the symmetry axis, turning at Omega e_z) changes at psi' Omega e_z x a; in body axes R^T of that (the
    body-axis derivative of R^T w adds -w_b x w_b = 0)."""
    axis = rotation @ np.array([0.0, 0.0, 1.0])
    return rotation.T @ (relative_spin * rate * np.cross([0.0, 0.0, 1.0], axis))


def nutation_acceleration(vdot, rotation, rate, relative_spin):
    """The tilt's second derivative from the body-axis angular acceleration: the tilt turns about the line of
    nodes (ground x rotated by the precession; here at t = 0 the ground x axis), so theta'' = e_x . (w_g' -
    (d/dt of the other components' directions)); with steady values that difference is e_x . (R vdot - steady)."""
    return float(np.array([1.0, 0.0, 0.0]) @ (rotation @ (vdot - steady_acceleration(rotation, rate,
                                                                                        relative_spin))))


HEADER = (("tilt [deg]", 10), ("spin [rad/s]", 12), ("root", 5), ("Omega [rad/s]", 14),
          ("|FD - steady| / |steady|", 25), ("theta'' [rad/s^2]", 18), ("theta'' at 1.01 Omega", 22))
print(" ".join(f"{text:>{width}}" for text, width in HEADER))
worst = 0.0
for tilt in (0.3, 1.0):
    for spin in (60.0, 150.0):
        for label, rate in zip(("slow", "fast"), rm.models.heavy_top_precession(spin, tilt, mass, length, transverse,
                                                                                axial), strict=True):
            q, v, rotation, relative_spin = precession_state(tilt, spin, rate)
            vdot = rm.forward_dynamics(model, q, v)
            expected = steady_acceleration(rotation, rate, relative_spin)
            error = np.linalg.norm(vdot - expected) / np.linalg.norm(expected)
            worst = max(worst, error)
            q_off, v_off, _, spin_off = precession_state(tilt, spin, 1.01 * rate)
            off = nutation_acceleration(rm.forward_dynamics(model, q_off, v_off), rotation, 1.01 * rate, spin_off)
            print(f"{np.degrees(tilt):>10.2f} {spin:>12.1f} {label:>5} {rate:>14.6f} {error:>25.2e} "
                  f"{nutation_acceleration(vdot, rotation, rate, relative_spin):>18.2e} {off:>22.3e}")
print(f"max relative difference of the forward dynamics from steady precession: {worst:.2e}")
