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
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..contact_law import coulomb_clip, hunt_crossley, slipped_stretch
from ..layout import (
    CBODY,
    CONTACT_TOO_DEEP,
    CONTACT_UNRESOLVED_IMPACT,
    COWNER,
    CSHAPE,
    CSURFACE,
    SHAPE_SEGMENT,
    STATUS_NONFINITE_STATE,
    STATUS_OK,
    SURFACE_PLANE,
)
from ..planar.contact import MIN_IMPACT_STEPS
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
    PARENT,
    PC_DEPTH,
    PC_NORMAL,
    PC_POINT,
    PC_TANGENTIAL,
)
from .points import _to_body, _to_ground, _velocity
from .tree import _add_force

njit = numba.njit(cache=True, error_model="numpy", _nrt=True)


@njit
def _axes_to_ground(rot, body, x, y, z):
    """The direction (x, y, z) of ``body``'s axes in ground axes."""
    if body < 0:
        return x, y, z
    return (rot[body, 0, 0] * x + rot[body, 0, 1] * y + rot[body, 0, 2] * z,
            rot[body, 1, 0] * x + rot[body, 1, 1] * y + rot[body, 1, 2] * z,
            rot[body, 2, 0] * x + rot[body, 2, 1] * y + rot[body, 2, 2] * z)


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
def _trial_friction(contact_int, contact_real, rot, pos, state, base, r, active, fn, nx, ny, nz, qx, qy, qz, vtx,
                    vty, vtz):
    """Row r's tangential spring-damper force before the Coulomb clip (the stretch from its anchor when ``active``,
    the tangential slip rate vt), its length and the clip's limit mu F_n: (fx, fy, fz, norm, limit)."""
    xi_x = xi_y = xi_z = 0.0
    if active:
        xi_x, xi_y, xi_z = _stretch(contact_int, contact_real, rot, pos, state, base, r, nx, ny, nz, qx, qy, qz)
    kt = contact_real[r, CKT]
    ct = contact_real[r, CCT]
    fx = -kt * xi_x - ct * vtx
    fy = -kt * xi_y - ct * vty
    fz = -kt * xi_z - ct * vtz
    return fx, fy, fz, math.sqrt(fx * fx + fy * fy + fz * fz), contact_real[r, CMU] * fn


@njit
def _row_law(contact_int, contact_real, rot, pos, state, base, r, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz):
    """The law of touching row r at its geometry (``_geometry``) before the Coulomb clip: (depth, rate d', the
    tangential slip rate vt (3), active, v_in, F_n, its elastic part, the trial friction f (3), |f|, mu F_n)."""
    depth = -gap
    rate = -(nx * vx + ny * vy + nz * vz)
    vtx, vty, vtz = _tangential(vx, vy, vz, nx, ny, nz)
    active = state[base + CS_ACTIVE] != 0.0
    v_in = state[base + CS_VIN] if active else max(rate, contact_real[r, CVMIN])
    fn, elastic = hunt_crossley(contact_real[r, CK], contact_real[r, CEXP], contact_real[r, CDAMP], depth, rate, v_in)
    fx, fy, fz, norm, limit = _trial_friction(contact_int, contact_real, rot, pos, state, base, r, active, fn, nx, ny,
                                              nz, qx, qy, qz, vtx, vty, vtz)
    return depth, rate, vtx, vty, vtz, active, v_in, fn, elastic, fx, fy, fz, norm, limit


@njit
def _push(contact_int, rot, pos, wrench, r, qx, qy, qz, fx, fy, fz):
    """wrench (nbodies, 6) += row r's force (fx, fy, fz) on its shape's body at the contact point q, and its
    opposite on the surface's owner (nothing for the ground)."""
    a = contact_int[r, CBODY]
    b = contact_int[r, COWNER]
    lx, ly, lz = _to_body(rot, pos, a, qx, qy, qz)
    _add_force(rot, wrench, a, lx, ly, lz, fx, fy, fz, False)
    lx, ly, lz = _to_body(rot, pos, b, qx, qy, qz)
    _add_force(rot, wrench, b, lx, ly, lz, -fx, -fy, -fz, False)


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
        depth, rate, vtx, vty, vtz, _, _, fn, elastic, ftx, fty, ftz, norm, limit = _row_law(
            contact_int, contact_real, rot, pos, state, base, r, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz)
        ftx = coulomb_clip(ftx, norm, limit)
        fty = coulomb_clip(fty, norm, limit)
        ftz = coulomb_clip(ftz, norm, limit)
        _push(contact_int, rot, pos, wrench, r, qx, qy, qz, fn * nx + ftx, fn * ny + fty, fn * nz + ftz)
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
def update_contacts(contact_int, contact_real, rot, pos, omega, vel, state, offset, impacts):
    """The rows' state after an accepted step, at the poses of its end state (``tree.poses``): a row that touches
    for the first time records its impact speed and anchors at its contact point; one that touches still keeps its
    stretch, moved back onto the friction limit if the step stretched it past (it slid), with both anchors moved to
    the contact point; one that no longer touches is cleared. A row deeper than its shape's radius ends the run
    (STATUS_NONFINITE_STATE, index CONTACT_TOO_DEEP + row), as the planar rows do. ``impacts`` (nrows, 2): a
    fixed-step run's watch of its impacts, which ends the run at an impact compressing over fewer than
    MIN_IMPACT_STEPS step ends (STATUS_NONFINITE_STATE, index CONTACT_UNRESOLVED_IMPACT + row), as the planar
    ``update_contacts`` (no rows: no watch). Returns the status."""
    watch = impacts.shape[0] > 0
    for r in range(contact_int.shape[0]):
        base = offset + N_CSTATE * r
        touching, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz = _geometry(contact_int, contact_real, rot, pos, omega,
                                                                      vel, r)
        rate = -(nx * vx + ny * vy + nz * vz)
        if not touching:
            for col in range(N_CSTATE):
                state[base + col] = 0.0
            if watch:
                impacts[r, 0] = rate
                impacts[r, 1] = -1.0
            continue
        if -gap > contact_real[r, CRAD] > 0.0:
            return STATUS_NONFINITE_STATE | ((CONTACT_TOO_DEEP + r) << 4)
        if watch:
            if state[base + CS_ACTIVE] == 0.0:  # made at the last step: watched if it came in fast enough
                impacts[r, 1] = 0.0 if impacts[r, 0] >= contact_real[r, CVMIN] else -1.0
            if impacts[r, 1] >= 0.0:  # an impact still compressing at the last step end
                if rate > 0.0:
                    impacts[r, 1] += 1.0
                elif impacts[r, 1] < MIN_IMPACT_STEPS:
                    return STATUS_NONFINITE_STATE | ((CONTACT_UNRESOLVED_IMPACT + r) << 4)
                else:
                    impacts[r, 1] = -1.0
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


@njit
def _cross(ax, ay, az, bx, by, bz):
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@njit
def _arc_change(u, n, radius, du, dnx, dny, dnz):
    """The change of a sphere's shape stretch r atan2(|P u|, -n . u) P u / |P u| (``_stretch``; P = 1 - n n^T) for a
    change du (3) of u = anchor - centre and a turn (dnx, dny, dnz) of n (normal to n; zero on a plane); at
    |P u| = 0 (the anchor on the contact point) its limit r / (-n . u) d(P u)."""
    along = u[0] * n[0] + u[1] * n[1] + u[2] * n[2]
    wx, wy, wz = u[0] - along * n[0], u[1] - along * n[1], u[2] - along * n[2]
    d_along = du[0] * n[0] + du[1] * n[1] + du[2] * n[2] + u[0] * dnx + u[1] * dny + u[2] * dnz
    # d(P u) = du - d(n . u) n - (n . u) dn
    dwx = du[0] - d_along * n[0] - along * dnx
    dwy = du[1] - d_along * n[1] - along * dny
    dwz = du[2] - d_along * n[2] - along * dnz
    length = math.sqrt(wx * wx + wy * wy + wz * wz)
    h = -along
    if length <= 1e-12 * radius:
        scale = radius / h if h > 0.0 else 0.0
        return scale * dwx, scale * dwy, scale * dwz
    angle = math.atan2(length, h)
    d_length = (wx * dwx + wy * dwy + wz * dwz) / length
    d_angle = (h * d_length + length * d_along) / (length * length + h * h)  # dh = -d_along
    a = radius * (d_angle / length - angle * d_length / (length * length))
    b = radius * angle / length
    return a * wx + b * dwx, a * wy + b * dwy, a * wz + b * dwz


@njit
def _row_block(contact_int, contact_real, rot, pos, omega, vel, state, offset, r, linear, blocks, first, u, n, du):
    """Row r's [C | K] (``contact_newton_blocks``) on the twist of its shape's body, its surface's owner held at rest
    relative to its motion (the owner's pose and velocity twist), added to blocks[body, :, first:first + 12]; u, n,
    du (3,) scratch. Returns False where the row does not touch."""
    touching, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz = _geometry(contact_int, contact_real, rot, pos, omega,
                                                                  vel, r)
    if not touching:
        return False
    body = contact_int[r, CBODY]
    base = offset + N_CSTATE * r
    plane = contact_int[r, CSURFACE] == SURFACE_PLANE
    radius = contact_real[r, CRAD]
    depth, rate, vtx, vty, vtz, active, v_in, fn, elastic, fx, fy, fz, norm, limit = _row_law(
        contact_int, contact_real, rot, pos, state, base, r, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz)
    kn = 0.0
    cn = 0.0
    if fn > 0.0:
        kn = contact_real[r, CEXP] * fn / depth
        if active or rate < contact_real[r, CVMIN]:
            cn = elastic * contact_real[r, CDAMP] / v_in
    kt = contact_real[r, CKT]
    ct = contact_real[r, CCT]
    # a row taken on its unclipped law at this iterate (``slip_reversals``) has its stick spring and damper's
    # derivatives, and its unclipped force in the geometric terms
    slip = norm > limit and not (linear.shape[0] > 0 and linear[r, 0] != 0.0)
    ftx, fty, ftz = fx, fy, fz
    if slip:
        ftx = fx / norm * limit
        fty = fy / norm * limit
        ftz = fz / norm * limit
    force_x = fn * nx + ftx
    force_y = fn * ny + fty
    force_z = fn * nz + ftz
    # the shape's centre (a capsule's point nearest the cylinder's axis), the anchor less the centre, the
    # cylinder's axis and the centre's distance from it
    cx = qx + radius * nx
    cy = qy + radius * ny
    cz = qz + radius * nz
    bx, by, bz = _to_ground(rot, pos, body, state[base + CS_BODY], state[base + CS_BODY + 1],
                            state[base + CS_BODY + 2])
    u[0] = bx - cx
    u[1] = by - cy
    u[2] = bz - cz
    n[0] = nx
    n[1] = ny
    n[2] = nz
    sphere = contact_int[r, CSHAPE] != SHAPE_SEGMENT and radius > 0.0
    owner = contact_int[r, COWNER]
    pax, pay, paz, ax, ay, az = _axis(contact_real, rot, pos, owner, r)
    dist = contact_real[r, CCYL] + radius - depth
    # on a cylinder: a capsule's point nearest the axis slides along its segment e as the body turns and moves
    # (``_geometry``: c = c_0 + s e, s = -(P c_0 - P p) . P e / |P e|^2, P = 1 - a a^T); inside the segment its
    # move is ds = -(dc . P e + dist n . d(e)) / |P e|^2 for a move dc of the material point at c (P (c - p) =
    # dist n there, normal to P e); at an end, or for a segment parallel to the axis, it is held
    seg_x = seg_y = seg_z = 0.0
    perp_x = perp_y = perp_z = 0.0
    length2 = 0.0
    if not plane and contact_int[r, CSHAPE] == SHAPE_SEGMENT:
        x0, y0, z0 = _to_ground(rot, pos, body, contact_real[r, CP0], contact_real[r, CP0 + 1],
                                contact_real[r, CP0 + 2])
        x1, y1, z1 = _to_ground(rot, pos, body, contact_real[r, CP1], contact_real[r, CP1 + 1],
                                contact_real[r, CP1 + 2])
        seg_x, seg_y, seg_z = x1 - x0, y1 - y0, z1 - z0
        perp_x, perp_y, perp_z = _tangential(seg_x, seg_y, seg_z, ax, ay, az)
        length2 = perp_x * perp_x + perp_y * perp_y + perp_z * perp_z
        if length2 > 0.0:
            s_near = -((x0 - pax) * perp_x + (y0 - pay) * perp_y + (z0 - paz) * perp_z) / length2
            if not 0.0 < s_near < 1.0:
                length2 = 0.0
    # on a cylinder: the surface's anchor (held: the surface's owner does not move here)
    sax, say, saz = _to_ground(rot, pos, owner, state[base + CS_SURF], state[base + CS_SURF + 1],
                               state[base + CS_SURF + 2])
    sr_x, sr_y, sr_z = _tangential(sax - pax, say - pay, saz - paz, ax, ay, az)
    # the material velocity of the centre
    vcx, vcy, vcz = _velocity(pos, omega, vel, body, cx, cy, cz)
    ox = pos[body, 0]
    oy = pos[body, 1]
    oz = pos[body, 2]
    lx = qx - ox  # the lever arm, ground axes
    ly = qy - oy
    lz = qz - oz
    for col in range(12):
        # the perturbation in ground axes: a velocity twist (col < 6) or a displacement (col >= 6), (ang; lin)
        k = col % 6
        ex = rot[body, 0, k % 3]
        ey = rot[body, 1, k % 3]
        ez = rot[body, 2, k % 3]
        tw_x = tw_y = tw_z = 0.0  # the turn
        tv_x = tv_y = tv_z = 0.0  # the origin's move (or velocity)
        if k < 3:
            tw_x, tw_y, tw_z = ex, ey, ez
        else:
            tv_x, tv_y, tv_z = ex, ey, ez
        dn_x = dn_y = dn_z = 0.0
        dxi_x = dxi_y = dxi_z = 0.0
        dl_x = dl_y = dl_z = 0.0
        if col < 6:  # the contact point's velocity changes by the twist's, its geometry stays
            cr_x, cr_y, cr_z = _cross(tw_x, tw_y, tw_z, lx, ly, lz)
            dv_x = tv_x + cr_x
            dv_y = tv_y + cr_y
            dv_z = tv_z + cr_z
            d_depth = 0.0
        else:
            cr_x, cr_y, cr_z = _cross(tw_x, tw_y, tw_z, cx - ox, cy - oy, cz - oz)
            dc_x = tv_x + cr_x  # the centre's move
            dc_y = tv_y + cr_y
            dc_z = tv_z + cr_z
            ds = 0.0
            if length2 > 0.0:  # a capsule's nearest point slides along its segment (turned by the twist)
                de_x, de_y, de_z = _cross(tw_x, tw_y, tw_z, seg_x, seg_y, seg_z)
                ds = -(dc_x * perp_x + dc_y * perp_y + dc_z * perp_z
                       + dist * (nx * de_x + ny * de_y + nz * de_z)) / length2
                dc_x += ds * seg_x
                dc_y += ds * seg_y
                dc_z += ds * seg_z
            d_depth = -(nx * dc_x + ny * dc_y + nz * dc_z)
            if not plane:  # the normal turns with the centre about the cylinder's axis
                along = dc_x * ax + dc_y * ay + dc_z * az
                px_, py_, pz_ = dc_x - along * ax, dc_y - along * ay, dc_z - along * az
                radial = px_ * nx + py_ * ny + pz_ * nz
                dn_x = (px_ - radial * nx) / dist
                dn_y = (py_ - radial * ny) / dist
                dn_z = (pz_ - radial * nz) / dist
            dq_x = dc_x - radius * dn_x
            dq_y = dc_y - radius * dn_y
            dq_z = dc_z - radius * dn_z
            dl_x = dq_x - tv_x
            dl_y = dq_y - tv_y
            dl_z = dq_z - tv_z
            # the relative velocity at q: the centre's (material: turned with the body) plus omega x (q - c)
            a1, a2, a3 = _cross(tw_x, tw_y, tw_z, vcx, vcy, vcz)
            w1, w2, w3 = _cross(tw_x, tw_y, tw_z, omega[body, 0], omega[body, 1], omega[body, 2])
            b1, b2, b3 = _cross(w1, w2, w3, nx, ny, nz)
            c1, c2, c3 = _cross(omega[body, 0], omega[body, 1], omega[body, 2], dn_x, dn_y, dn_z)
            e1, e2, e3 = _cross(omega[body, 0], omega[body, 1], omega[body, 2], ds * seg_x, ds * seg_y, ds * seg_z)
            dv_x = a1 + e1 - radius * (b1 + c1)  # (the centre's velocity at the point it slid to along the segment)
            dv_y = a2 + e2 - radius * (b2 + c2)
            dv_z = a3 + e3 - radius * (b3 + c3)
            if owner >= 0:  # the surface's material velocity at the moved contact point (its owner held)
                o1, o2, o3 = _cross(omega[owner, 0], omega[owner, 1], omega[owner, 2], dq_x, dq_y, dq_z)
                dv_x -= o1
                dv_y -= o2
                dv_z -= o3
            if active:
                if plane:
                    u1, u2, u3 = _cross(tw_x, tw_y, tw_z, u[0], u[1], u[2])  # the anchor turns about c
                    du[0] = u1
                    du[1] = u2
                    du[2] = u3
                    if sphere:
                        s1, s2, s3 = _arc_change(u, n, radius, du, 0.0, 0.0, 0.0)
                    else:
                        s1, s2, s3 = _tangential(u1, u2, u3, nx, ny, nz)
                    t1, t2, t3 = _tangential(dc_x, dc_y, dc_z, nx, ny, nz)  # the surface's anchor, held
                    dxi_x = s1 + t1
                    dxi_y = s2 + t2
                    dxi_z = s3 + t3
                else:
                    # the shape's part: the sphere's arc from the contact point to its anchor (both turned about
                    # the centre, n turned by dn), or P_n (b - q) (a capsule's or a point's)
                    u1, u2, u3 = _cross(tw_x, tw_y, tw_z, u[0], u[1], u[2])
                    if sphere:
                        du[0] = u1
                        du[1] = u2
                        du[2] = u3
                        s1, s2, s3 = _arc_change(u, n, radius, du, dn_x, dn_y, dn_z)
                    else:
                        m1, m2, m3 = _cross(tw_x, tw_y, tw_z, bx - ox, by - oy, bz - oz)  # the anchor's move
                        gx_, gy_, gz_ = bx - qx, by - qy, bz - qz
                        gn = gx_ * nx + gy_ * ny + gz_ * nz
                        dgn = gx_ * dn_x + gy_ * dn_y + gz_ * dn_z
                        s1, s2, s3 = _tangential(tv_x + m1 - dq_x, tv_y + m2 - dq_y, tv_z + m3 - dq_z, nx, ny, nz)
                        s1 -= gn * dn_x + dgn * nx
                        s2 -= gn * dn_y + dgn * ny
                        s3 -= gn * dn_z + dgn * nz
                    # the surface's part: the arc R atan2(w . r, n . r) along w = a x n and the distance (s - q) . a
                    # along the axis, r = P (s - p) of its anchor s (held)
                    w1, w2, w3 = _cross(ax, ay, az, nx, ny, nz)
                    dw1, dw2, dw3 = _cross(ax, ay, az, dn_x, dn_y, dn_z)
                    wr = w1 * sr_x + w2 * sr_y + w3 * sr_z
                    nr = nx * sr_x + ny * sr_y + nz * sr_z
                    arc = contact_real[r, CCYL] * math.atan2(wr, nr)
                    d_arc = contact_real[r, CCYL] * ((dw1 * sr_x + dw2 * sr_y + dw3 * sr_z) * nr - wr * (
                        dn_x * sr_x + dn_y * sr_y + dn_z * sr_z)) / (wr * wr + nr * nr)
                    d_axial = -(dq_x * ax + dq_y * ay + dq_z * az)
                    dxi_x = s1 - (d_arc * w1 + arc * dw1 + d_axial * ax)
                    dxi_y = s2 - (d_arc * w2 + arc * dw2 + d_axial * ay)
                    dxi_z = s3 - (d_arc * w3 + arc * dw3 + d_axial * az)
        d_rate = -(dn_x * vx + dn_y * vy + dn_z * vz + nx * dv_x + ny * dv_y + nz * dv_z)
        d_fn = kn * d_depth + cn * d_rate
        vn = nx * vx + ny * vy + nz * vz
        dvn = dn_x * vx + dn_y * vy + dn_z * vz + nx * dv_x + ny * dv_y + nz * dv_z
        # d v_t = dv - dvn n - vn dn, d f = -k_t d xi - c_t d v_t
        df_x = -kt * dxi_x - ct * (dv_x - dvn * nx - vn * dn_x)
        df_y = -kt * dxi_y - ct * (dv_y - dvn * ny - vn * dn_y)
        df_z = -kt * dxi_z - ct * (dv_z - dvn * nz - vn * dn_z)
        if slip:  # F_t = mu F_n f / |f|
            along = (fx * df_x + fy * df_y + fz * df_z) / norm
            g = contact_real[r, CMU] * d_fn / norm
            h = limit / norm
            df_x = g * fx + h * (df_x - along * fx / norm)
            df_y = g * fy + h * (df_y - along * fy / norm)
            df_z = g * fz + h * (df_z - along * fz / norm)
        dF_x = d_fn * nx + fn * dn_x + df_x
        dF_y = d_fn * ny + fn * dn_y + df_y
        dF_z = d_fn * nz + fn * dn_z + df_z
        # d W (ground axes) = (dl x F + l x dF; dF), then to body axes: d(R^T w) = R^T (dw - turn x w)
        m1, m2, m3 = _cross(dl_x, dl_y, dl_z, force_x, force_y, force_z)
        m4, m5, m6 = _cross(lx, ly, lz, dF_x, dF_y, dF_z)
        dm_x = m1 + m4
        dm_y = m2 + m5
        dm_z = m3 + m6
        if col >= 6:
            mx, my, mz = _cross(lx, ly, lz, force_x, force_y, force_z)
            t1, t2, t3 = _cross(tw_x, tw_y, tw_z, mx, my, mz)
            dm_x -= t1
            dm_y -= t2
            dm_z -= t3
            t1, t2, t3 = _cross(tw_x, tw_y, tw_z, force_x, force_y, force_z)
            dF_x -= t1
            dF_y -= t2
            dF_z -= t3
        for a in range(3):
            blocks[body, a, first + col] -= rot[body, 0, a] * dm_x + rot[body, 1, a] * dm_y + rot[body, 2, a] * dm_z
            blocks[body, 3 + a, first + col] -= (rot[body, 0, a] * dF_x + rot[body, 1, a] * dF_y
                                                 + rot[body, 2, a] * dF_z)
    return True


@njit
def contact_newton_blocks(body_int, contact_int, contact_real, rot, pos, omega, vel, state, offset, blocks,
                          linear):
    """The contacts' part of an implicit step's Newton matrix, per body: blocks (nbodies, 6, 24), [:, :, :12] =
    [C_b | K_b] on each body's twist (omega; v) in body axes (``tree``'s spatial vectors), zeroed first, summed over
    the rows touching a surface of the ground at the poses ``contact_forces`` takes (the rows' state of ``state``
    held, as over a step). Returns the number of rows added.

    C_b = -d W_b / d V_b and K_b = -d W_b / d eps_b: the derivatives of the body's contact wrench W_b (body
    coordinates about its origin, as ``contact_forces`` adds it) by its velocity twist V_b and by a displacement
    eps_b of its pose (R, o) -> (R exp([eps_w]), o + R eps_v), its velocity twist in body axes held. Exact for the
    rows on a plane (every capsule on a plane is two sphere rows) and on a cylinder: the normal force's stiffness
    p F_n / d and damping (none at a first touch faster than the smallest impact speed, whose damping is scaled by
    the rate itself), the stick spring and damper through the stretch's own map (the sphere's arc; on a cylinder
    also the surface's arc and axial distance, with the normal's turn), the slip's derivative of the clipped force
    mu F_n f / |f| (unsymmetric), and the geometric terms: the lever arm's change, the body axes' turn, the velocity
    of the contact point moved, on a cylinder the normal's turn with the shape's centre (the drum's curvature) and
    a capsule's nearest point sliding along its segment. A row whose shape's body is the child of its surface's owner
    moves with the child's joint alone, its forces cancelling on the parent's subtree: its [C | K] on the child's
    twist with the parent held (the surface's pose and velocity the parent's; the surface's material velocity at
    the moved contact point in) goes to blocks[child, :, 12:24], which the factorisations take on the child's joint
    alone (``implicit.effective_factor``, ``newton.newton_factor``); one whose surface the child carries, the
    parent's shape on it, likewise, from its block on the parent's twist (``_to_surface_owner``). Rows between
    bodies not joined as parent and child: lagged (``benchmarks/contact_pairs.py`` measures the cost: twice the
    Newton iterations a step on one pair, none converging once c_stiff k / m of the pair passes 1).
    linear (nrows, 4) (``slip_reversals``), or (0, 4): a row with linear[r, 0] != 0 takes the derivatives of its
    unclipped law (its stick block) while it slides."""
    for i in range(blocks.shape[0]):
        for a in range(6):
            for b in range(blocks.shape[2]):
                blocks[i, a, b] = 0.0
    added = 0
    u = np.empty(3)
    n = np.empty(3)
    du = np.empty(3)
    # a parent's row on its child's surface: its block on the parent's twist first, then moved to the child's
    onto_child = 0
    for r in range(contact_int.shape[0]):
        owner = contact_int[r, COWNER]
        if owner >= 0 and body_int[owner, PARENT] == contact_int[r, CBODY]:
            onto_child += 1
    shape_block = np.zeros((blocks.shape[0] if onto_child > 0 else 0, 6, 24))
    wrench = np.zeros((blocks.shape[0] if onto_child > 0 else 0, 6))
    for r in range(contact_int.shape[0]):
        owner = contact_int[r, COWNER]
        body = contact_int[r, CBODY]
        first = 0
        if owner >= 0:
            if body_int[owner, PARENT] == body:  # the parent's shape on its child's surface
                for a in range(6):
                    for b in range(12):
                        shape_block[body, a, b] = 0.0
                if _row_block(contact_int, contact_real, rot, pos, omega, vel, state, offset, r, linear, shape_block,
                              np.int64(0), u, n, du):
                    _to_surface_owner(contact_int, contact_real, rot, pos, omega, vel, state, offset, r, shape_block,
                                      wrench, blocks, linear)
                    added += 1
                continue
            if body_int[body, PARENT] != owner:
                continue  # bodies not joined as parent and child: lagged
            first = 12  # the child's shape on its parent's surface: the child's joint block
        if _row_block(contact_int, contact_real, rot, pos, omega, vel, state, offset, r, linear, blocks, first, u, n,
                      du):
            added += 1
    return added


@njit
def _to_surface_owner(contact_int, contact_real, rot, pos, omega, vel, state, offset, r, shape_block, wrench,
                      blocks, linear):
    """blocks[b, :, 12:24] += the [C | K] of row r on the twist of its surface's owner b, its shape's body a held,
    from the row's [C_a | K_a] on a's twist with b held (shape_block[a, :, :12], ``_row_block``). The law sees the
    two bodies' relative motion alone: b turned and moved by eps (its body axes) is a moved by -A eps, A = Ad of
    b's frame in a's (twists in b's axes about its origin to a's), and b's velocity twist changed by d is a's by
    -A d; b's wrench is -A^T W_a, whose transform turns with b: C_b = A^T C_a A, K_b = A^T K_a A + the turn's
    term, -dW_b = (eps x* W_b) = [[-[n_b]x, -[f_b]x], [-[f_b]x, 0]] eps, W_b = (n_b; f_b), the force unclipped
    where ``linear`` marks the row (``contact_newton_blocks``). wrench (nbodies, 6) scratch."""
    a = contact_int[r, CBODY]
    b = contact_int[r, COWNER]
    adj = np.zeros((6, 6))  # A: (omega; v) in b's axes about b's origin to a's axes about a's origin
    for i in range(3):
        for j in range(3):
            value = rot[a, 0, i] * rot[b, 0, j] + rot[a, 1, i] * rot[b, 1, j] + rot[a, 2, i] * rot[b, 2, j]
            adj[i, j] = value
            adj[3 + i, 3 + j] = value
    # b's origin in a's axes about a's origin: p; the lower left block [p]x R_ab
    px, py, pz = _to_body(rot, pos, a, pos[b, 0], pos[b, 1], pos[b, 2])
    for j in range(3):
        adj[3, j] = py * adj[2, j] - pz * adj[1, j]
        adj[4, j] = pz * adj[0, j] - px * adj[2, j]
        adj[5, j] = px * adj[1, j] - py * adj[0, j]
    for half in range(2):
        for i in range(6):
            for j in range(6):
                acc = 0.0
                for k in range(6):
                    for m in range(6):
                        acc += adj[k, i] * shape_block[a, k, 6 * half + m] * adj[m, j]
                blocks[b, i, 12 + 6 * half + j] += acc
    # b's wrench from the row, its axes about its origin: the force on the shape, reversed, at the contact point
    for i in range(6):
        wrench[b, i] = 0.0
    touching, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz = _geometry(contact_int, contact_real, rot, pos, omega, vel, r)
    base = offset + N_CSTATE * r
    _, _, _, _, _, _, _, fn, _, fx, fy, fz, norm, limit = _row_law(contact_int, contact_real, rot, pos, state, base, r,
                                                                gap, nx, ny, nz, qx, qy, qz, vx, vy, vz)
    if not (linear.shape[0] > 0 and linear[r, 0] != 0.0):  # a row marked by ``slip_reversals``: its unclipped law
        fx = coulomb_clip(fx, norm, limit)
        fy = coulomb_clip(fy, norm, limit)
        fz = coulomb_clip(fz, norm, limit)
    lx, ly, lz = _to_body(rot, pos, b, qx, qy, qz)
    _add_force(rot, wrench, b, lx, ly, lz, -(fn * nx + fx), -(fn * ny + fy), -(fn * nz + fz), False)
    n0, n1, n2, f0, f1, f2 = wrench[b, 0], wrench[b, 1], wrench[b, 2], wrench[b, 3], wrench[b, 4], wrench[b, 5]
    # K_b += [[-[n]x, -[f]x], [-[f]x, 0]] ([x]x the cross-product matrix)
    _add_cross(blocks, b, 0, 0, n0, n1, n2)
    _add_cross(blocks, b, 0, 3, f0, f1, f2)
    _add_cross(blocks, b, 3, 0, f0, f1, f2)


@njit
def _add_cross(blocks, b, row, col, x, y, z):
    """blocks[b, row:row + 3, 18 + col:18 + col + 3] -= [(x, y, z)]x, the cross-product matrix."""
    blocks[b, row, 18 + col + 1] += z
    blocks[b, row, 18 + col + 2] -= y
    blocks[b, row + 1, 18 + col] -= z
    blocks[b, row + 1, 18 + col + 2] += x
    blocks[b, row + 2, 18 + col] += y
    blocks[b, row + 2, 18 + col + 1] -= x


@njit
def transmitted_loads(body_int, contact_int, contact_real, rot, pos, omega, vel, state, offset, linear, wrench):
    """wrench (nbodies, 6) += the loads of the rows not between a body and its parent, as the residual takes them
    (``contact_forces``' clipped law; the rows that ``slip_reversals`` marked in linear (nrows, 4), or (0, 4), on
    their unclipped law): the loads whose turn with the joints above them the exact Newton matrix takes
    (``system.contact_subtree_loads``). A row between a body and its parent is left out: its forces cancel on the
    parent's subtree, so they hand nothing to the joints above the child, and its block is on the child's joint
    alone (``contact_newton_blocks``)."""
    marks = linear.shape[0] > 0
    for r in range(contact_int.shape[0]):
        a = contact_int[r, CBODY]
        b = contact_int[r, COWNER]
        if b >= 0 and (body_int[a, PARENT] == b or body_int[b, PARENT] == a):
            continue
        touching, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz = _geometry(contact_int, contact_real, rot, pos, omega,
                                                                      vel, r)
        if not touching:
            continue
        base = offset + N_CSTATE * r
        _, _, _, _, _, _, _, fn, _, fx, fy, fz, norm, limit = _row_law(
            contact_int, contact_real, rot, pos, state, base, r, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz)
        if not (marks and linear[r, 0] != 0.0):
            fx = coulomb_clip(fx, norm, limit)
            fy = coulomb_clip(fy, norm, limit)
            fz = coulomb_clip(fz, norm, limit)
        _push(contact_int, rot, pos, wrench, r, qx, qy, qz, fn * nx + fx, fn * ny + fy, fn * nz + fz)


@njit
def slip_reversals(body_int, contact_int, contact_real, rot, pos, omega, vel, state, offset, linear, wrench):
    """Mark the rows whose slip reversed at this Newton iterate and add to ``wrench`` (nbodies, 6) what taking them
    on their unclipped law adds to the contacts' loads, f - clip(f), at the poses ``contact_forces`` took; returns
    the number of rows marked (rows on a ground-fixed surface, and rows between a body and its parent, whose blocks
    are exact; the other rows' blocks are lagged, so they keep the clipped law). linear
    (nrows, 4): per row its mark (column 0: 1.0 marked, else 0.0) and the unit direction of its trial friction f
    at the last iterate where it slid (columns 1-3; zeros before the first), kept over a step's iterations (zeroed
    at each attempt's start by the caller).

    Why (one row, along its slip direction, a the body's acceleration there): an implicit step's residual is
    R(a) = m a - F - F_t(a), F_t the clipped law clip(f), with f = f_k - K (a - a_k) over the step, K = c_stiff k_t
    + c_damp c_t (the stick spring's and damper's responses). R has the slope m + K inside the stick band
    |f| <= mu F_n and m outside it (the clipped force's derivative along its own direction is zero: the block of a
    sliding row), so R's slope is at least m everywhere and a Newton step from a sliding iterate lands at or beyond
    the root. Where the root sticks and the band, 2 mu F_n / K in a, is narrower than that step (a stiff stick
    spring or damper at a long step), it lands past the band, sliding the other way, and the next step comes back:
    Newton cycles between the roots of the two sliding pieces, g (sin theta -/+ mu cos theta) on a slope. From an
    iterate whose slip reversed the step is taken on the row's unclipped law R_lin(a) = m a - F - f(a) (residual
    R(a_k) + clip(f_k) - f_k, the stick block in the matrix): R_lin is the band's own linear piece, so that step
    lands on the root where the root sticks; where it slides, the stick piece's root a_s has f(a_s) beyond the
    limit on the side the root lies (R(a_s) has the sign of a_s's distance from the root), so it lands on the root's
    own sliding piece, which the next, plain, step solves. A reversal needs both pieces visited, so a row that slides
    one way throughout never leaves the plain semismooth step. In 3D f is a vector: a reversal is a turn of its
    direction by more than a right angle, d_k . d_k-1 < 0, and the argument holds along the slip.
    """
    marked = 0
    for r in range(contact_int.shape[0]):
        linear[r, 0] = 0.0
        owner = contact_int[r, COWNER]
        if owner >= 0 and body_int[owner, PARENT] != contact_int[r, CBODY] and body_int[contact_int[r, CBODY],
                                                                                        PARENT] != owner:
            continue  # between bodies not parent and child: lagged in the blocks, left to the clipped law
        touching, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz = _geometry(contact_int, contact_real, rot, pos, omega,
                                                                      vel, r)
        if not touching:
            continue
        base = offset + N_CSTATE * r
        _, _, _, _, _, _, _, fn, _, fx, fy, fz, norm, limit = _row_law(
            contact_int, contact_real, rot, pos, state, base, r, gap, nx, ny, nz, qx, qy, qz, vx, vy, vz)
        if not norm > limit:
            continue
        dx = fx / norm
        dy = fy / norm
        dz = fz / norm
        if dx * linear[r, 1] + dy * linear[r, 2] + dz * linear[r, 3] < 0.0:
            linear[r, 0] = 1.0
            marked += 1
            scale = 1.0 - limit / norm  # f - clip(f)
            _push(contact_int, rot, pos, wrench, r, qx, qy, qz, scale * fx, scale * fy, scale * fz)
        linear[r, 1] = dx
        linear[r, 2] = dy
        linear[r, 3] = dz
    return marked
