"""Jacobians, centre of mass and momentum of a spatial tree, from the poses of ``tree.poses``.

Each kernel reads what ``tree.poses`` left: the body-to-ground rotations ``rot`` (n, 3, 3), the origins ``pos``
(n, 3), the motion subspaces S (n, max_nv, 6, child coordinates, angular rows first) that its kinematics pass
wrote for every joint, and with velocities the body velocities (omega; v_O) in ``ws[:, WV:WV+6]`` (body axes). A
joint column moves body j with the spatial velocity S_j[col], in ground axes (R_j S_ang, R_j S_lin), the linear
part being the velocity of body j's origin; a point P then moves at R_j S_lin + (R_j S_ang) x (P - p_j).

The public layer (``recursive_mbd.dynamics.spatial_kinematics``) orders its Jacobian rows linear first, as
Pinocchio and the loops' row weights do; these kernels write them in that order. The public layer checks their
outputs for overflow.
"""

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .layout import MASS, MCOM, NVJ, PARENT, VIDX, WV
from .tree import _inertia_times

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False)


@njit
def _ground_column(rot, S, j, col):
    """(gw0, gw1, gw2, gu0, gu1, gu2): joint column ``col`` of body j in ground axes, angular velocity and the
    velocity of body j's origin."""
    gw0 = rot[j, 0, 0] * S[j, col, 0] + rot[j, 0, 1] * S[j, col, 1] + rot[j, 0, 2] * S[j, col, 2]
    gw1 = rot[j, 1, 0] * S[j, col, 0] + rot[j, 1, 1] * S[j, col, 1] + rot[j, 1, 2] * S[j, col, 2]
    gw2 = rot[j, 2, 0] * S[j, col, 0] + rot[j, 2, 1] * S[j, col, 1] + rot[j, 2, 2] * S[j, col, 2]
    gu0 = rot[j, 0, 0] * S[j, col, 3] + rot[j, 0, 1] * S[j, col, 4] + rot[j, 0, 2] * S[j, col, 5]
    gu1 = rot[j, 1, 0] * S[j, col, 3] + rot[j, 1, 1] * S[j, col, 4] + rot[j, 1, 2] * S[j, col, 5]
    gu2 = rot[j, 2, 0] * S[j, col, 3] + rot[j, 2, 1] * S[j, col, 4] + rot[j, 2, 2] * S[j, col, 5]
    return gw0, gw1, gw2, gu0, gu1, gu2


@njit
def frame_jacobian(body_int, S, rot, pos, body, point, out):
    """out (6, nv): rows 0-2 the velocity of the point of ``body`` now at ``point`` (ground coordinates), rows 3-5
    the body's angular velocity, both ground axes, per unit rate of each v entry. Walks the path from ``body`` to
    the root, O(depth); out must be zero on entry (the columns off the path are not written)."""
    j = body
    while j >= 0:
        kv = body_int[j, VIDX]
        dx = point[0] - pos[j, 0]
        dy = point[1] - pos[j, 1]
        dz = point[2] - pos[j, 2]
        for col in range(body_int[j, NVJ]):
            gw0, gw1, gw2, gu0, gu1, gu2 = _ground_column(rot, S, j, col)
            out[0, kv + col] = gu0 + gw1 * dz - gw2 * dy
            out[1, kv + col] = gu1 + gw2 * dx - gw0 * dz
            out[2, kv + col] = gu2 + gw0 * dy - gw1 * dx
            out[3, kv + col] = gw0
            out[4, kv + col] = gw1
            out[5, kv + col] = gw2
        j = body_int[j, PARENT]


@njit
def mass_totals(body_int, body_real, ws, rot, pos, tmp, out):
    """out (10,) = (total mass, first moment sum m_i c_i (3), linear momentum (3), angular momentum about the
    ground origin (3)), ground axes, from the poses and the body velocities in ws (zero velocities give zero
    momenta). A body's momentum about its origin is I_i v_i (``tree._inertia_times``, body axes): moved to the
    ground origin, L = R (I v)_ang + p x R (I v)_lin."""
    for m in range(10):
        out[m] = 0.0
    for i in range(body_int.shape[0]):
        mass = body_real[i, MASS]
        _inertia_times(body_real, i, ws[i], WV, tmp, 0)
        out[0] += mass
        for r in range(3):
            out[1 + r] += (mass * pos[i, r] + rot[i, r, 0] * body_real[i, MCOM] + rot[i, r, 1] * body_real[i, MCOM + 1]
                           + rot[i, r, 2] * body_real[i, MCOM + 2])
            tmp[6 + r] = rot[i, r, 0] * tmp[0] + rot[i, r, 1] * tmp[1] + rot[i, r, 2] * tmp[2]
            tmp[9 + r] = rot[i, r, 0] * tmp[3] + rot[i, r, 1] * tmp[4] + rot[i, r, 2] * tmp[5]
        out[4] += tmp[9]
        out[5] += tmp[10]
        out[6] += tmp[11]
        out[7] += tmp[6] + pos[i, 1] * tmp[11] - pos[i, 2] * tmp[10]
        out[8] += tmp[7] + pos[i, 2] * tmp[9] - pos[i, 0] * tmp[11]
        out[9] += tmp[8] + pos[i, 0] * tmp[10] - pos[i, 1] * tmp[9]


@njit
def center_of_mass_jacobian(body_int, body_real, S, rot, pos, sub, out):
    """out (3, nv) = sum_i m_i d c_i / dv (the total mass times the centre of mass Jacobian), ground axes, O(N):
    the subtree masses and first moments sub (n, 4) tip to base, then joint column col of body j moves its subtree's
    centre of mass at (its mass) (u_j + w_j x (c_sub - p_j)). Every entry of out is written."""
    n = body_int.shape[0]
    for i in range(n):
        mass = body_real[i, MASS]
        sub[i, 0] = mass
        for r in range(3):
            sub[i, 1 + r] = (mass * pos[i, r] + rot[i, r, 0] * body_real[i, MCOM]
                             + rot[i, r, 1] * body_real[i, MCOM + 1] + rot[i, r, 2] * body_real[i, MCOM + 2])
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        if p >= 0:
            for m in range(4):
                sub[p, m] += sub[i, m]
    for j in range(n):
        kv = body_int[j, VIDX]
        mass = sub[j, 0]
        # the subtree's first moment about body j's origin
        hx = sub[j, 1] - mass * pos[j, 0]
        hy = sub[j, 2] - mass * pos[j, 1]
        hz = sub[j, 3] - mass * pos[j, 2]
        for col in range(body_int[j, NVJ]):
            gw0, gw1, gw2, gu0, gu1, gu2 = _ground_column(rot, S, j, col)
            out[0, kv + col] = mass * gu0 + gw1 * hz - gw2 * hy
            out[1, kv + col] = mass * gu1 + gw2 * hx - gw0 * hz
            out[2, kv + col] = mass * gu2 + gw0 * hy - gw1 * hx
