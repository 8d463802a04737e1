"""Points of a spatial model's bodies from the poses of ``tree.poses`` (rot, pos, omega, vel: ground axes): body
points to the ground and back, and the velocity of a body's material point. Shared by the contacts (``contact``)
and the self-contact pairs (``pairs``); a module of its own so that neither builds on the other."""

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)

njit = numba.njit(cache=True, error_model="numpy", _nrt=False)


@njit
def _to_ground(rot, pos, body, x, y, z):
    """The ground position of the point (x, y, z) of ``body`` (body frame); for the ground (-1) the point itself."""
    if body < 0:
        return x, y, z
    return (pos[body, 0] + rot[body, 0, 0] * x + rot[body, 0, 1] * y + rot[body, 0, 2] * z,
            pos[body, 1] + rot[body, 1, 0] * x + rot[body, 1, 1] * y + rot[body, 1, 2] * z,
            pos[body, 2] + rot[body, 2, 0] * x + rot[body, 2, 1] * y + rot[body, 2, 2] * z)


@njit
def _to_body(rot, pos, body, x, y, z):
    """The ground point (x, y, z) in ``body``'s frame (the ground's: itself)."""
    if body < 0:
        return x, y, z
    dx = x - pos[body, 0]
    dy = y - pos[body, 1]
    dz = z - pos[body, 2]
    return (rot[body, 0, 0] * dx + rot[body, 1, 0] * dy + rot[body, 2, 0] * dz,
            rot[body, 0, 1] * dx + rot[body, 1, 1] * dy + rot[body, 2, 1] * dz,
            rot[body, 0, 2] * dx + rot[body, 1, 2] * dy + rot[body, 2, 2] * dz)


@njit
def _velocity(pos, omega, vel, body, x, y, z):
    """The ground velocity of ``body``'s material point at the ground position (x, y, z); 0 for the ground."""
    if body < 0:
        return 0.0, 0.0, 0.0
    ax = x - pos[body, 0]
    ay = y - pos[body, 1]
    az = z - pos[body, 2]
    return (vel[body, 0] + omega[body, 1] * az - omega[body, 2] * ay,
            vel[body, 1] + omega[body, 2] * ax - omega[body, 0] * az,
            vel[body, 2] + omega[body, 0] * ay - omega[body, 1] * ax)
