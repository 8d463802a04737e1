"""The dense output of a generalised-alpha step in absolute coordinates (``integrate.augmented3d_implicit``): the
state at t + theta h between the step's ends, for its samples at t_eval and its events.

Each body's centre of mass and its velocities are cubic Hermite interpolants of their values and rates at the two
ends (c from c and c', the velocities (c', omega_b) from themselves and their rates (c'', omega_b'), omega_b in body
axes), as the joint-coordinate loops' ``timeloops.newton.hermite_span``. The rotation is interpolated on SO(3), in
the exponential coordinates at the step's start, R(s) = R0 exp([phi(s)]): phi is the cubic Hermite interpolant of
phi(0) = 0, phi(1) = Delta (the step's rotation increment, R1 = R0 exp([Delta])), phi'(0) = h omega_b0 and
phi'(1) = h J_r(Delta)^-1 omega_b1 (omega_b = J_r(phi) phi' / h along the curve, J_r SO(3)'s right Jacobian), so
the curve meets both ends' rotations and angular velocities and stays a rotation (a unit quaternion) at every s.
Third order in the step at each end's data, beyond the scheme's second order: the interpolation adds no error of
its own order.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .spatial3d import _mat_vec, _quaternion_matrix
from .system3d import _turn

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)


@njit
def _right_jacobian_inverse_times(dx, dy, dz, wx, wy, wz):
    """J_r(phi)^-1 w for phi = (dx, dy, dz): w + [phi] w / 2 + (1 / |phi|^2 - (1 + cos|phi|) / (2 |phi| sin|phi|))
    [phi]^2 w (the series 1/12 + |phi|^2 / 720 below |phi| = 1e-4)."""
    phi2 = dx * dx + dy * dy + dz * dz
    if phi2 < 1e-8:
        e = 1.0 / 12.0 + phi2 / 720.0
    else:
        phi = math.sqrt(phi2)
        e = 1.0 / phi2 - (1.0 + math.cos(phi)) / (2.0 * phi * math.sin(phi))
    # [phi] w and [phi]^2 w
    cx = dy * wz - dz * wy
    cy = dz * wx - dx * wz
    cz = dx * wy - dy * wx
    c2x = dy * cz - dz * cy
    c2y = dz * cx - dx * cz
    c2z = dx * cy - dy * cx
    return wx + 0.5 * cx + e * c2x, wy + 0.5 * cy + e * c2y, wz + 0.5 * cz + e * c2z


@njit
def dense_state(z0, zb0, vdot0, z1, zb1, vdot1, delta, h, theta, z_out, zd_out):
    """The state at t + theta h (theta in [0, 1]) of the step of length h from (z0, zb0, vdot0) to (z1, zb1, vdot1)
    (poses (nbodies, 7): c, unit quaternion; velocities zb and accelerations vdot (nbodies, 6), omega in body axes)
    whose rotation increments are delta (nbodies, 3) (R1 = R0 exp([delta])): the poses into z_out (nbodies, 7) and
    the velocities, omega in GROUND axes (the run's zd), into zd_out (nbodies, 6) (module docstring)."""
    s = theta
    h00 = (1.0 + 2.0 * s) * (1.0 - s) ** 2
    h10 = s * (1.0 - s) ** 2
    h01 = s * s * (3.0 - 2.0 * s)
    h11 = s * s * (s - 1.0)
    for i in range(z0.shape[0]):
        for c in range(3):
            z_out[i, c] = h00 * z0[i, c] + h * h10 * zb0[i, c] + h01 * z1[i, c] + h * h11 * zb1[i, c]
        for c in range(6):  # omega_b's into zd_out[i, 3:] for now, turned into ground axes below
            zd_out[i, c] = h00 * zb0[i, c] + h * h10 * vdot0[i, c] + h01 * zb1[i, c] + h * h11 * vdot1[i, c]
        dx = delta[i, 0]
        dy = delta[i, 1]
        dz = delta[i, 2]
        ex, ey, ez = _right_jacobian_inverse_times(dx, dy, dz, zb1[i, 3], zb1[i, 4], zb1[i, 5])
        px = h * h10 * zb0[i, 3] + h01 * dx + h * h11 * ex
        py = h * h10 * zb0[i, 4] + h01 * dy + h * h11 * ey
        pz = h * h10 * zb0[i, 5] + h01 * dz + h * h11 * ez
        # R0 exp([phi]) = exp([R0 phi]) R0: the start's quaternion turned in ground axes
        rot0, _ = _quaternion_matrix(z0, i)
        d = _mat_vec(rot0, (px, py, pz))
        for c in range(3, 7):
            z_out[i, c] = z0[i, c]
        _turn(z_out, i, d[0], d[1], d[2])
        rot, _ = _quaternion_matrix(z_out, i)  # omega = R(s) omega_b
        omega = _mat_vec(rot, (zd_out[i, 3], zd_out[i, 4], zd_out[i, 5]))
        for c in range(3):
            zd_out[i, 3 + c] = omega[c]
