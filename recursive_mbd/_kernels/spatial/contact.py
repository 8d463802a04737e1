"""Contact of a spatial model: Hunt and Crossley's normal force and Coulomb friction with a stick phase, in 3D.

The planar contact (``_kernels.planar.contact``, where the law and its stick anchors are explained) in three
dimensions, with the same law (``_kernels.contact_law``: one implementation for both). A row is one shape of a body,
a sphere of radius r >= 0 about a body point or a capsule (a segment with a radius), against one surface, fixed to
the ground or carried by another body (``spatial.layout``, "contacts"): a plane over a rectangle of it (the
half-space below it is solid), or a solid cylinder about an infinite axis (a drum). With the depth d, the outward
normal n and the relative velocity v of the two material points at the contact point, a touching row pushes the
shape with F_n n, F_n = max(0, k d^p (1 + C d' / v_in)), and the tangential force

    F_t = -k_t xi - c_t v_t,    |F_t| clipped at mu F_n,

a vector in the tangent plane: xi (3) is the stretch between two stick anchors, one on the shape and one on the
surface, each measured along its own surface from the contact point (a great-circle arc on a sphere, the arc and
the axial distance on a cylinder, a straight distance on a plane or a capsule's side), so that a sphere rolling
without slip keeps xi to round-off. The anchors and the impact speed are state of the run, carried after the work
terms of the integrated state and changed only between steps (``update_contacts``): an anchor stretched past the
friction limit moves back onto it, keeping its direction (the contact slid), and both anchors move to the contact
point with the stretch kept.

Loads are wrenches on the bodies in body coordinates about their origins, which ``system`` maps to generalised
forces as the force elements' (``elements.subtree_forces``). Points are relative to the body frame's origin, in the
body frame.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..contact_law import coulomb_clip, hunt_crossley, slipped_stretch
from ..layout import (
    CBODY,
    CONTACT_TOO_DEEP,
    COWNER,
    CSHAPE,
    CSURFACE,
    SHAPE_SEGMENT,
    STATUS_NONFINITE_STATE,
    STATUS_OK,
    SURFACE_PLANE,
)
from .layout import (
    CCT,
    CCYL,
    CDAMP,
    CEXP,
    CK,
    CKT,
    CLO,
    CMU,
    CP0,
    CP1,
    CRAD,
    CS_ACTIVE,
    CS_BODY,
    CS_SURF,
    CS_VIN,
    CSN,
    CSP,
    CST,
    CVMIN,
    N_CSTATE,
    N_PER_CONTACT,
    PC_DEPTH,
    PC_NORMAL,
    PC_POINT,
    PC_TANGENTIAL,
)
from .tree import _add_force

njit = numba.njit(cache=True, error_model="numpy", _nrt=True)


@njit
def _to_ground(rot, pos, body, x, y, z):
    """The ground position of the point (x, y, z) of ``body`` (body frame); for the ground (-1) the point itself."""
    if body < 0:
        return x, y, z
    return (pos[body, 0] + rot[body, 0, 0] * x + rot[body, 0, 1] * y + rot[body, 0, 2] * z,
            pos[body, 1] + rot[body, 1, 0] * x + rot[body, 1, 1] * y + rot[body, 1, 2] * z,
            pos[body, 2] + rot[body, 2, 0] * x + rot[body, 2, 1] * y + rot[body, 2, 2] * z)


@njit
def _axes_to_ground(rot, body, x, y, z):
    """The direction (x, y, z) of ``body``'s axes in ground axes."""
    if body < 0:
        return x, y, z
    return (rot[body, 0, 0] * x + rot[body, 0, 1] * y + rot[body, 0, 2] * z,
            rot[body, 1, 0] * x + rot[body, 1, 1] * y + rot[body, 1, 2] * z,
            rot[body, 2, 0] * x + rot[body, 2, 1] * y + rot[body, 2, 2] * z)


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


@njit
def _anchor(rot, pos, body, x, y, z, state, index):
    """The ground point (x, y, z) in ``body``'s frame into state[index:index + 3]."""
    lx, ly, lz = _to_body(rot, pos, body, x, y, z)
    state[index] = lx
    state[index + 1] = ly
    state[index + 2] = lz


@njit
def _axis(contact_real, rot, pos, owner, r):
    """(point, unit direction) of a surface's CSP and CSN columns in the ground: a plane's point and normal, a
    cylinder's axis."""
    px, py, pz = _to_ground(rot, pos, owner, contact_real[r, CSP], contact_real[r, CSP + 1], contact_real[r, CSP + 2])
    ux, uy, uz = _axes_to_ground(rot, owner, contact_real[r, CSN], contact_real[r, CSN + 1], contact_real[r, CSN + 2])
    return px, py, pz, ux, uy, uz


@njit
def _geometry(contact_int, contact_real, rot, pos, omega, vel, r):
    """(touching, gap, normal n (3), contact point (3), relative velocity shape minus surface there (3)) of row r.
    The contact point is the shape's surface point on the normal through its centre (a capsule's: of its axis'
    point nearest the plane's or the cylinder's surface; one parallel to a cylinder's axis touches at its middle).
    ``touching`` is False outside a plane's rectangle, and for a shape centre on a cylinder's axis (no normal)."""
    a = contact_int[r, CBODY]
    b = contact_int[r, COWNER]
    cx, cy, cz = _to_ground(rot, pos, a, contact_real[r, CP0], contact_real[r, CP0 + 1], contact_real[r, CP0 + 2])
    px, py, pz, ux, uy, uz = _axis(contact_real, rot, pos, b, r)
    radius = contact_real[r, CRAD]
    touching = True
    if contact_int[r, CSURFACE] == SURFACE_PLANE:
        nx, ny, nz = ux, uy, uz
        t1x, t1y, t1z = _axes_to_ground(rot, b, contact_real[r, CST], contact_real[r, CST + 1],
                                        contact_real[r, CST + 2])
        t2x = ny * t1z - nz * t1y  # t2 = n x t1
        t2y = nz * t1x - nx * t1z
        t2z = nx * t1y - ny * t1x
        dx = cx - px
        dy = cy - py
        dz = cz - pz
        along1 = t1x * dx + t1y * dy + t1z * dz
        along2 = t2x * dx + t2y * dy + t2z * dz
        if (along1 < contact_real[r, CLO] or along1 > contact_real[r, CLO + 1] or along2 < contact_real[r, CLO + 2]
                or along2 > contact_real[r, CLO + 3]):
            touching = False
        gap = nx * dx + ny * dy + nz * dz - radius
    else:
        if contact_int[r, CSHAPE] == SHAPE_SEGMENT:  # the axis' point nearest the cylinder's axis
            ex, ey, ez = _to_ground(rot, pos, a, contact_real[r, CP1], contact_real[r, CP1 + 1],
                                    contact_real[r, CP1 + 2])
            ex -= cx
            ey -= cy
            ez -= cz
            along = ex * ux + ey * uy + ez * uz  # the segment and its start, less their parts along the axis
            perp_x = ex - along * ux
            perp_y = ey - along * uy
            perp_z = ez - along * uz
            along = (cx - px) * ux + (cy - py) * uy + (cz - pz) * uz
            wx = cx - px - along * ux
            wy = cy - py - along * uy
            wz = cz - pz - along * uz
            length2 = perp_x * perp_x + perp_y * perp_y + perp_z * perp_z
            s = -(wx * perp_x + wy * perp_y + wz * perp_z) / length2 if length2 > 0.0 else 0.5
            s = min(max(s, 0.0), 1.0)
            cx += s * ex
            cy += s * ey
            cz += s * ez
        along = (cx - px) * ux + (cy - py) * uy + (cz - pz) * uz
        dx = cx - px - along * ux
        dy = cy - py - along * uy
        dz = cz - pz - along * uz
        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
        if dist > 0.0:
            nx = dx / dist
            ny = dy / dist
            nz = dz / dist
        else:
            nx = ny = 0.0
            nz = 1.0
            touching = False
        gap = dist - contact_real[r, CCYL] - radius
    qx = cx - radius * nx  # the contact point: the shape's surface point on the normal
    qy = cy - radius * ny
    qz = cz - radius * nz
    vax, vay, vaz = _velocity(pos, omega, vel, a, qx, qy, qz)
    vbx, vby, vbz = _velocity(pos, omega, vel, b, qx, qy, qz)
    return touching and gap < 0.0, gap, nx, ny, nz, qx, qy, qz, vax - vbx, vay - vby, vaz - vbz


@njit
def _tangential(x, y, z, nx, ny, nz):
    """The part of (x, y, z) normal to the unit n."""
    along = x * nx + y * ny + z * nz
    return x - along * nx, y - along * ny, z - along * nz


@njit
def _stretch(contact_int, contact_real, rot, pos, state, base, r, nx, ny, nz, qx, qy, qz):
    """The stretch xi (3) between the row's two anchors: the shape's minus the surface's, each measured along its
    own surface from the contact point (module docstring)."""
    a = contact_int[r, CBODY]
    bx, by, bz = _to_ground(rot, pos, a, state[base + CS_BODY], state[base + CS_BODY + 1], state[base + CS_BODY + 2])
    radius = contact_real[r, CRAD]
    if contact_int[r, CSHAPE] != SHAPE_SEGMENT and radius > 0.0:
        # the great-circle arc from the contact point to the anchor, about the sphere's centre
        ux = bx - (qx + radius * nx)
        uy = by - (qy + radius * ny)
        uz = bz - (qz + radius * nz)
        tx, ty, tz = _tangential(ux, uy, uz, nx, ny, nz)
        length = math.sqrt(tx * tx + ty * ty + tz * tz)
        scale = radius * math.atan2(length, -(ux * nx + uy * ny + uz * nz)) / length if length > 0.0 else 0.0
        shape_x = scale * tx
        shape_y = scale * ty
        shape_z = scale * tz
    else:
        shape_x, shape_y, shape_z = _tangential(bx - qx, by - qy, bz - qz, nx, ny, nz)
    owner = contact_int[r, COWNER]
    sx, sy, sz = _to_ground(rot, pos, owner, state[base + CS_SURF], state[base + CS_SURF + 1],
                            state[base + CS_SURF + 2])
    if contact_int[r, CSURFACE] == SURFACE_PLANE:
        surf_x, surf_y, surf_z = _tangential(sx - qx, sy - qy, sz - qz, nx, ny, nz)
    else:  # the arc about the axis from the normal (along w = axis x n), and the distance along the axis
        px, py, pz, ux, uy, uz = _axis(contact_real, rot, pos, owner, r)
        wx = uy * nz - uz * ny
        wy = uz * nx - ux * nz
        wz = ux * ny - uy * nx
        axial = (sx - qx) * ux + (sy - qy) * uy + (sz - qz) * uz
        rx, ry, rz = _tangential(sx - px, sy - py, sz - pz, ux, uy, uz)
        arc = contact_real[r, CCYL] * math.atan2(wx * rx + wy * ry + wz * rz, nx * rx + ny * ry + nz * rz)
        surf_x = arc * wx + axial * ux
        surf_y = arc * wy + axial * uy
        surf_z = arc * wz + axial * uz
    return shape_x - surf_x, shape_y - surf_y, shape_z - surf_z


@njit
def contact_forces(contact_int, contact_real, rot, pos, omega, vel, state, offset, wrench, energy_out, per_contact):
    """Add the contacts' loads to ``wrench`` (nbodies, 6) (body coordinates about the origins, as the elements'),
    at the poses rot, pos, omega, vel (``tree.poses``); the rows' state is state[offset + N_CSTATE r + column].
    Adds their potential energy to energy_out[0] and their dissipated power to energy_out[1]; per_contact
    (nrows, N_PER_CONTACT) gets each row's forces, depth and contact point (zeros where it does not touch)."""
    potential = 0.0
    dissipated = 0.0
    for r in range(contact_int.shape[0]):
        touching, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz = _geometry(contact_int, contact_real, rot, pos, omega,
                                                                      vel, r)
        for col in range(N_PER_CONTACT):
            per_contact[r, col] = 0.0
        if not touching:
            continue
        base = offset + N_CSTATE * r
        depth = -gap
        rate = -(nx * vx + ny * vy + nz * vz)
        vtx, vty, vtz = _tangential(vx, vy, vz, nx, ny, nz)
        active = state[base + CS_ACTIVE] != 0.0
        v_in = state[base + CS_VIN] if active else max(rate, contact_real[r, CVMIN])
        fn, elastic = hunt_crossley(contact_real[r, CK], contact_real[r, CEXP], contact_real[r, CDAMP], depth, rate,
                                    v_in)
        xi_x = xi_y = xi_z = 0.0
        if active:
            xi_x, xi_y, xi_z = _stretch(contact_int, contact_real, rot, pos, state, base, r, nx, ny, nz, qx, qy, qz)
        kt = contact_real[r, CKT]
        ct = contact_real[r, CCT]
        ftx = -kt * xi_x - ct * vtx
        fty = -kt * xi_y - ct * vty
        ftz = -kt * xi_z - ct * vtz
        norm = math.sqrt(ftx * ftx + fty * fty + ftz * ftz)
        limit = contact_real[r, CMU] * fn
        ftx = coulomb_clip(ftx, norm, limit)
        fty = coulomb_clip(fty, norm, limit)
        ftz = coulomb_clip(ftz, norm, limit)
        fx = fn * nx + ftx
        fy = fn * ny + fty
        fz = fn * nz + ftz
        a = contact_int[r, CBODY]
        b = contact_int[r, COWNER]
        lx, ly, lz = _to_body(rot, pos, a, qx, qy, qz)
        _add_force(rot, wrench, a, lx, ly, lz, fx, fy, fz, False)
        lx, ly, lz = _to_body(rot, pos, b, qx, qy, qz)
        _add_force(rot, wrench, b, lx, ly, lz, -fx, -fy, -fz, False)
        potential += elastic * depth / (contact_real[r, CEXP] + 1.0)
        dissipated += (fn - elastic) * rate - (ftx * vtx + fty * vty + ftz * vtz)  # all but the elastic normal part
        per_contact[r, PC_NORMAL] = fn
        per_contact[r, PC_TANGENTIAL] = ftx
        per_contact[r, PC_TANGENTIAL + 1] = fty
        per_contact[r, PC_TANGENTIAL + 2] = ftz
        per_contact[r, PC_DEPTH] = depth
        per_contact[r, PC_POINT] = qx
        per_contact[r, PC_POINT + 1] = qy
        per_contact[r, PC_POINT + 2] = qz
    energy_out[0] += potential
    energy_out[1] += dissipated


@njit
def update_contacts(contact_int, contact_real, rot, pos, omega, vel, state, offset):
    """The rows' state after an accepted step, at the poses of its end state (``tree.poses``): a row that touches
    for the first time records its impact speed and anchors at its contact point; one that touches still keeps its
    stretch, moved back onto the friction limit if the step stretched it past (it slid), with both anchors moved to
    the contact point; one that no longer touches is cleared. A row deeper than its shape's radius ends the run
    (STATUS_NONFINITE_STATE, index CONTACT_TOO_DEEP + row), as the planar rows do. Returns the status."""
    for r in range(contact_int.shape[0]):
        base = offset + N_CSTATE * r
        touching, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz = _geometry(contact_int, contact_real, rot, pos, omega,
                                                                      vel, r)
        if not touching:
            for col in range(N_CSTATE):
                state[base + col] = 0.0
            continue
        if -gap > contact_real[r, CRAD] > 0.0:
            return STATUS_NONFINITE_STATE | ((CONTACT_TOO_DEEP + r) << 4)
        rate = -(nx * vx + ny * vy + nz * vz)
        xi_x = xi_y = xi_z = 0.0
        if state[base + CS_ACTIVE] == 0.0:
            state[base + CS_ACTIVE] = 1.0
            state[base + CS_VIN] = max(rate, contact_real[r, CVMIN])
        else:
            xi_x, xi_y, xi_z = _stretch(contact_int, contact_real, rot, pos, state, base, r, nx, ny, nz, qx, qy, qz)
            fn, _ = hunt_crossley(contact_real[r, CK], contact_real[r, CEXP], contact_real[r, CDAMP], -gap, rate,
                                  state[base + CS_VIN])
            norm = math.sqrt(xi_x * xi_x + xi_y * xi_y + xi_z * xi_z)
            kt = contact_real[r, CKT]
            limit = contact_real[r, CMU] * fn
            xi_x = slipped_stretch(xi_x, norm, kt, limit)
            xi_y = slipped_stretch(xi_y, norm, kt, limit)
            xi_z = slipped_stretch(xi_z, norm, kt, limit)
        # anchors (body frames): the shape's at the contact point, the surface's xi behind it along the surface
        a = contact_int[r, CBODY]
        owner = contact_int[r, COWNER]
        _anchor(rot, pos, a, qx, qy, qz, state, base + CS_BODY)
        if contact_int[r, CSURFACE] == SURFACE_PLANE:
            sx = qx - xi_x
            sy = qy - xi_y
            sz = qz - xi_z
        else:  # the cylinder's point the arc xi . w and the axial distance xi . axis behind
            px, py, pz, ux, uy, uz = _axis(contact_real, rot, pos, owner, r)
            wx = uy * nz - uz * ny
            wy = uz * nx - ux * nz
            wz = ux * ny - uy * nx
            cylinder = contact_real[r, CCYL]
            turn = -(xi_x * wx + xi_y * wy + xi_z * wz) / cylinder
            axial = (qx - px) * ux + (qy - py) * uy + (qz - pz) * uz - (xi_x * ux + xi_y * uy + xi_z * uz)
            c = math.cos(turn)
            s = math.sin(turn)
            sx = px + axial * ux + cylinder * (c * nx + s * wx)
            sy = py + axial * uy + cylinder * (c * ny + s * wy)
            sz = pz + axial * uz + cylinder * (c * nz + s * wz)
        _anchor(rot, pos, owner, sx, sy, sz, state, base + CS_SURF)
    return STATUS_OK
