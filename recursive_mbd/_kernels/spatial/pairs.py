"""Contact between the bodies of a spatial self-contact set (a chain piling on itself): the planar pairs
(``_kernels.planar.pairs``, where the stateless law is explained) in three dimensions.

Each body of a set carries one capsule (a segment with a radius; a sphere is a segment of zero length). The broad
phase is the planar one: the capsules' bounding boxes, now in 3D, sorted by their lower x (the planar insertion sort
of the previous order: O(N) for a set that moves little between evaluations) and swept along x; the narrow phase
tests the pairs whose boxes overlap in y and z too. Bodies joined to each other (parent and child) do not collide.
The implicit methods lag the pairs as in the plane (loads in the residual, no block in the Newton matrix; the cost
measured there).

A pair touches at one point. Its axes' closest points c_a, c_b (``closest_points``: skew axes in 3D touch at interior
points, unlike the plane) give the depth d = r_a + r_b - |c_b - c_a|, the normal n from a to b and the contact point,
the middle of the overlap on the line c_a c_b; there the law of the planar pairs (``_kernels.contact_law``) pushes b by

    F = F_n n + F_t,    F_n = max(0, k d^p (1 + c d')),    F_t = -c_t v_t clipped at |F_t| <= mu F_n,

v_t the relative velocity's part in the tangent plane (a 3D vector), and a by -F. The elastic part's potential
k d^(p+1) / (p + 1) and the power of the rest enter the energy terms; where c_a, c_b are the closest points, d' is
the exact rate of the depth (the closest points are stationary), so the energy balance closes.

Axes lying side by side (parallel or nearly) have no single closest pair, or one that jumps from one end of their
overlap to the other as the angle between them passes through zero. So below the angle whose sine squared is
PARALLEL_SINE2 (about 0.57 degrees) the point on a's axis is blended, linearly in the sine squared, towards the
middle of the part of a's axis that lies beside b's (b's ends projected onto a's axis, clamped to a's ends): exactly
the middle for parallel axes, the closest point from that angle on; the point on b's axis is the nearest to it. The
contact point thus moves continuously with the state (the cost: within that band the depth is measured between
points a little off the closest ones, so d' is not quite the depth's rate and the energy balance is closed only to
that small part of the contact's work).

As in the plane, no pair is watched between steps: a step that carries one capsule's axis into another (a pair
deeper than its radii) is not stopped; the contact rows (``contact``) are.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..contact_law import coulomb_clip, hunt_crossley
from ..layout import SBODY, SSET, STATUS_OK
from ..planar.pairs import _sort_by_lower_x
from .layout import PARENT, SCT, SDAMP, SEXP, SK, SMU, SP0, SP1, SRAD
from .points import _to_body, _to_ground, _velocity
from .tree import _add_force

njit = numba.njit(cache=True, error_model="numpy", _nrt=False)

# sin^2 of the angle between two axes below which their contact point is blended towards the middle of their overlap
PARALLEL_SINE2 = 1e-4

# shape_int, shape_real and boxes: columns in ``spatial.layout``; stats: (2,) float64: pairs touching, pairs whose
# boxes overlapped (tested by the narrow phase)


@njit
def _unit_clamp(x):
    return min(max(x, 0.0), 1.0)


@njit
def closest_points(ax, ay, az, bx, by, bz, cx, cy, cz, dx, dy, dz):
    """(s, t) in [0, 1]^2: the points a + s (b - a) of the segment ab and c + t (d - c) of the segment cd that the
    pairs push apart: the segments' closest points (the minimiser of the distance over both segments, unique for
    axes that are not parallel: Ericson, Real-Time Collision Detection, 2005, 5.1.9), blended for nearly parallel
    axes towards the middle of their overlap (module docstring). Zero-length segments (spheres) are points."""
    d1x, d1y, d1z = bx - ax, by - ay, bz - az
    d2x, d2y, d2z = dx - cx, dy - cy, dz - cz
    rx, ry, rz = ax - cx, ay - cy, az - cz
    aa = d1x * d1x + d1y * d1y + d1z * d1z
    ee = d2x * d2x + d2y * d2y + d2z * d2z
    ff = d2x * rx + d2y * ry + d2z * rz
    if aa <= 0.0:
        return 0.0, _unit_clamp(ff / ee) if ee > 0.0 else 0.0
    cc = d1x * rx + d1y * ry + d1z * rz
    if ee <= 0.0:
        return _unit_clamp(-cc / aa), 0.0
    bb = d1x * d2x + d1y * d2y + d1z * d2z
    denom = aa * ee - bb * bb
    s = _unit_clamp((bb * ff - cc * ee) / denom) if denom > 0.0 else 0.0
    t = (bb * s + ff) / ee
    if t < 0.0:
        t = 0.0
        s = _unit_clamp(-cc / aa)
    elif t > 1.0:
        t = 1.0
        s = _unit_clamp((bb - cc) / aa)
    sine2 = max(denom, 0.0) / (aa * ee)
    if sine2 < PARALLEL_SINE2:
        u0 = -cc / aa  # c and d projected onto a's axis
        u1 = (bb - cc) / aa
        middle = _unit_clamp(0.5 * (max(0.0, min(u0, u1)) + min(1.0, max(u0, u1))))
        weight = 1.0 - sine2 / PARALLEL_SINE2
        s = (1.0 - weight) * s + weight * middle
        t = _unit_clamp((ff + s * bb) / ee)
    return s, t


@njit
def _boxes(shape_int, shape_real, rot, pos, boxes):
    """The capsules' axes in ground axes and their bounding boxes."""
    for s in range(shape_int.shape[0]):
        i = shape_int[s, SBODY]
        r = shape_real[s, SRAD]
        x0, y0, z0 = _to_ground(rot, pos, i, shape_real[s, SP0], shape_real[s, SP0 + 1], shape_real[s, SP0 + 2])
        x1, y1, z1 = _to_ground(rot, pos, i, shape_real[s, SP1], shape_real[s, SP1 + 1], shape_real[s, SP1 + 2])
        boxes[s, 0] = min(x0, x1) - r
        boxes[s, 1] = max(x0, x1) + r
        boxes[s, 2] = min(y0, y1) - r
        boxes[s, 3] = max(y0, y1) + r
        boxes[s, 4] = min(z0, z1) - r
        boxes[s, 5] = max(z0, z1) + r
        boxes[s, 6] = x0
        boxes[s, 7] = y0
        boxes[s, 8] = z0
        boxes[s, 9] = x1
        boxes[s, 10] = y1
        boxes[s, 11] = z1


@njit
def pair_forces(body_int, shape_int, shape_real, order, boxes, rot, pos, omega, vel, wrench, energy_out, stats):
    """Add the self-contact pairs' loads to ``wrench`` (nbodies, 6) (body coordinates about the origins, as the
    contacts' of ``contact``) at the poses rot, pos, omega, vel (``tree.poses``); their potential energy to
    energy_out[0] and dissipated power to energy_out[1]; ``stats`` gets (pairs touching, pairs tested). ``order``
    (nshapes,) int64 is the sweep's order, kept between calls. Returns the status."""
    stats[0] = 0.0
    stats[1] = 0.0
    n = shape_int.shape[0]
    if n == 0:
        return STATUS_OK
    _boxes(shape_int, shape_real, rot, pos, boxes)
    _sort_by_lower_x(boxes, order)
    potential = 0.0
    dissipated = 0.0
    for k in range(n):
        a = order[k]
        for m in range(k + 1, n):
            b = order[m]
            if boxes[b, 0] > boxes[a, 1]:
                break  # this box and every later one start right of a's
            if (boxes[b, 2] > boxes[a, 3] or boxes[b, 3] < boxes[a, 2] or boxes[b, 4] > boxes[a, 5]
                    or boxes[b, 5] < boxes[a, 4] or shape_int[a, SSET] != shape_int[b, SSET]):
                continue
            body_a = shape_int[a, SBODY]
            body_b = shape_int[b, SBODY]
            if body_a == body_b or body_int[body_a, PARENT] == body_b or body_int[body_b, PARENT] == body_a:
                continue
            stats[1] += 1.0
            s, t = closest_points(boxes[a, 6], boxes[a, 7], boxes[a, 8], boxes[a, 9], boxes[a, 10], boxes[a, 11],
                                  boxes[b, 6], boxes[b, 7], boxes[b, 8], boxes[b, 9], boxes[b, 10], boxes[b, 11])
            cax = boxes[a, 6] + s * (boxes[a, 9] - boxes[a, 6])
            cay = boxes[a, 7] + s * (boxes[a, 10] - boxes[a, 7])
            caz = boxes[a, 8] + s * (boxes[a, 11] - boxes[a, 8])
            nx = boxes[b, 6] + t * (boxes[b, 9] - boxes[b, 6]) - cax
            ny = boxes[b, 7] + t * (boxes[b, 10] - boxes[b, 7]) - cay
            nz = boxes[b, 8] + t * (boxes[b, 11] - boxes[b, 8]) - caz
            dist = math.sqrt(nx * nx + ny * ny + nz * nz)
            ra = shape_real[a, SRAD]
            depth = ra + shape_real[b, SRAD] - dist
            if depth <= 0.0 or dist == 0.0:  # apart, or axes that cross (no normal)
                continue
            nx /= dist
            ny /= dist
            nz /= dist
            px = cax + (ra - 0.5 * depth) * nx  # the middle of the overlap, on the line of the two points
            py = cay + (ra - 0.5 * depth) * ny
            pz = caz + (ra - 0.5 * depth) * nz
            vax, vay, vaz = _velocity(pos, omega, vel, body_a, px, py, pz)
            vbx, vby, vbz = _velocity(pos, omega, vel, body_b, px, py, pz)
            vx = vbx - vax
            vy = vby - vay
            vz = vbz - vaz
            along = nx * vx + ny * vy + nz * vz
            rate = -along
            vtx = vx - along * nx
            vty = vy - along * ny
            vtz = vz - along * nz
            exponent = shape_real[a, SEXP]
            # the set's damping is c = C / v_ref already: the law's impact speed is 1
            fn, elastic = hunt_crossley(shape_real[a, SK], exponent, shape_real[a, SDAMP], depth, rate, 1.0)
            ct = shape_real[a, SCT]
            norm = ct * math.sqrt(vtx * vtx + vty * vty + vtz * vtz)
            limit = shape_real[a, SMU] * fn
            ftx = coulomb_clip(-ct * vtx, norm, limit)
            fty = coulomb_clip(-ct * vty, norm, limit)
            ftz = coulomb_clip(-ct * vtz, norm, limit)
            fx = fn * nx + ftx
            fy = fn * ny + fty
            fz = fn * nz + ftz
            lx, ly, lz = _to_body(rot, pos, body_b, px, py, pz)
            _add_force(rot, wrench, body_b, lx, ly, lz, fx, fy, fz, False)
            lx, ly, lz = _to_body(rot, pos, body_a, px, py, pz)
            _add_force(rot, wrench, body_a, lx, ly, lz, -fx, -fy, -fz, False)
            potential += elastic * depth / (exponent + 1.0)
            dissipated += (fn - elastic) * rate - (ftx * vtx + fty * vty + ftz * vtz)
            stats[0] += 1.0
    energy_out[0] += potential
    energy_out[1] += dissipated
    return STATUS_OK
