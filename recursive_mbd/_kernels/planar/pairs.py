"""Contact between the bodies of a set (a chain piling on itself): capsules found by sort and sweep, pushed apart by
the Hunt-Crossley law, with velocity-regularised Coulomb friction.

Each body of a self-contact set carries one capsule (a segment with a radius; a circle is a segment of zero length).
Which capsules can touch changes with every evaluation, so no pair keeps state: the broad phase sorts the capsules'
bounding boxes by their lower x (an insertion sort of the previous order, which is nearly sorted between
evaluations: O(N) in the usual case, never all pairs) and sweeps along x; the narrow phase tests the pairs whose boxes
overlap. Bodies joined to each other (parent and child) do not collide: neighbouring chain links overlap at their
joint by construction.

A pair touches at up to four end contacts, each end of one axis against the other axis (``pair_forces``); each at
depth d = r_a + r_b - |c_b - c_a| (c_a, c_b its two points, n from a to b) pushes b by

    F_n = max(0, k d^p (1 + c d')),    F_t = clip(-c_t v_t, -mu F_n, mu F_n),

with the damping c = C / v_ref of the impact speed v_ref the set was given (its restitution holds exactly at that
speed: a stateless pair cannot keep its impact speed), and friction regularised by the damper c_t (a pair slides at
v_t = F_t / c_t under a force below the limit: it creeps instead of sticking; the contacts of ``contact`` stick).

The implicit methods (generalized_alpha, bdf) take the pairs' loads in their residual and leave their stiffness and
damping out of the Newton matrix (lagged: a pair couples two bodies that are not parent and child). On a capsule
dropped onto another that rests on the floor (``benchmarks/contact_pairs.py``, k = 1e6 - 1e8 N/m^1.5) that costs
generalized_alpha about twice the Newton iterations a step of the same capsule dropped onto the floor, and stops it
at dt = 1 ms and k = 1e8, where c_stiff k / m of the pair passes 1; on the chain fountain's pile (some 80 pairs
touching) at dt = 0.1 ms, 32 - 106 iterations a step and hundreds of split steps at k = 1e6 - 1e7.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..contact_law import add_planar_force
from ..layout import CS, OM, PARENT, SBODY, SCT, SDAMP, SEXP, SK, SMU, SN, SP0, SP1, SRAD, SSET, STATUS_OK

njit = numba.njit(cache=True, error_model="numpy", _nrt=False)

# the columns of shape_int, shape_real and boxes are in ``layout``; stats: (2,) float64: pairs touching, pairs whose
# boxes overlapped (tested by the narrow phase)


@njit
def _point_on_segment(px, py, ax, ay, bx, by):
    """The point of segment ab nearest to p, and whether it is an end of ab (the projection clamped)."""
    ex = bx - ax
    ey = by - ay
    length2 = ex * ex + ey * ey
    s = ((px - ax) * ex + (py - ay) * ey) / length2 if length2 > 0.0 else 0.0
    clamped = not 0.0 < s < 1.0
    s = min(max(s, 0.0), 1.0)
    return ax + s * ex, ay + s * ey, clamped


@njit
def _boxes(shape_int, shape_real, ws, com, boxes):
    """The capsules' axes in the ground frame and their bounding boxes."""
    for s in range(shape_int.shape[0]):
        i = shape_int[s, SBODY]
        c = ws[i, CS]
        sn = ws[i, SN]
        r = shape_real[s, SRAD]
        x0 = com[i, 0] + c * shape_real[s, SP0] - sn * shape_real[s, SP0 + 1]
        y0 = com[i, 1] + sn * shape_real[s, SP0] + c * shape_real[s, SP0 + 1]
        x1 = com[i, 0] + c * shape_real[s, SP1] - sn * shape_real[s, SP1 + 1]
        y1 = com[i, 1] + sn * shape_real[s, SP1] + c * shape_real[s, SP1 + 1]
        boxes[s, 0] = min(x0, x1) - r
        boxes[s, 1] = max(x0, x1) + r
        boxes[s, 2] = min(y0, y1) - r
        boxes[s, 3] = max(y0, y1) + r
        boxes[s, 4] = x0
        boxes[s, 5] = y0
        boxes[s, 6] = x1
        boxes[s, 7] = y1


@njit
def _sort_by_lower_x(boxes, order):
    """Insertion sort of ``order`` by the boxes' lower x: O(N) for the nearly sorted order of the last evaluation."""
    for k in range(1, order.shape[0]):
        key = order[k]
        x = boxes[key, 0]
        j = k - 1
        while j >= 0 and boxes[order[j], 0] > x:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = key


@njit
def _velocity(ws, com, body, px, py):
    """Velocity of the material point of ``body`` at the ground point (px, py)."""
    om = ws[body, OM]
    return com[body, 2] - om * (py - com[body, 1]), com[body, 3] + om * (px - com[body, 0])


@njit
def pair_forces(body_int, shape_int, shape_real, order, boxes, ws, com, wrench, energy_out, stats):
    """Add the self-contact pairs' loads to ``wrench`` at the state whose kinematics ``ws``, ``com`` hold; their
    potential energy to energy_out[0] and dissipated power to energy_out[1]; ``stats`` gets (pairs touching, pairs
    tested). ``order`` (nshapes,) int64 is the sweep's order, kept between calls. Returns the status."""
    stats[0] = 0.0
    stats[1] = 0.0
    n = shape_int.shape[0]
    if n == 0:
        return STATUS_OK
    _boxes(shape_int, shape_real, ws, com, boxes)
    _sort_by_lower_x(boxes, order)
    potential = 0.0
    dissipated = 0.0
    for k in range(n):
        a = order[k]
        for m in range(k + 1, n):
            b = order[m]
            if boxes[b, 0] > boxes[a, 1]:
                break  # this box and every later one start right of a's
            if boxes[b, 2] > boxes[a, 3] or boxes[b, 3] < boxes[a, 2] or shape_int[a, SSET] != shape_int[b, SSET]:
                continue
            body_a = shape_int[a, SBODY]
            body_b = shape_int[b, SBODY]
            if body_a == body_b or body_int[body_a, PARENT] == body_b or body_int[body_b, PARENT] == body_a:
                continue
            stats[1] += 1.0
            touching = False
            # four end contacts: each end of one axis against the other axis. In the plane, the closest points of
            # two axes that do not cross include an end, and each end contact moves continuously with the state,
            # so two capsules lying side by side touch at two points, not at one that jumps between their ends. An
            # end contact whose nearest point is an end of the other axis too (corner to corner) is found from both
            # sides: each counts half.
            for end in range(4):
                first = end < 2  # an end of a's axis against b's axis, else an end of b's against a's
                col = 4 + 2 * (end % 2)
                owner = a if first else b
                if end % 2 == 1 and boxes[owner, 4] == boxes[owner, 6] and boxes[owner, 5] == boxes[owner, 7]:
                    continue  # a circle (an axis of zero length) has one end
                if first:
                    ex, ey = boxes[a, col], boxes[a, col + 1]
                    ox, oy, clamped = _point_on_segment(ex, ey, boxes[b, 4], boxes[b, 5], boxes[b, 6], boxes[b, 7])
                    cax, cay, cbx, cby = ex, ey, ox, oy
                else:
                    ex, ey = boxes[b, col], boxes[b, col + 1]
                    ox, oy, clamped = _point_on_segment(ex, ey, boxes[a, 4], boxes[a, 5], boxes[a, 6], boxes[a, 7])
                    cax, cay, cbx, cby = ox, oy, ex, ey
                dist = math.sqrt((cbx - cax) ** 2 + (cby - cay) ** 2)
                ra = shape_real[a, SRAD]
                depth = ra + shape_real[b, SRAD] - dist
                if depth <= 0.0 or dist == 0.0:  # apart, or an end on the other axis (no normal)
                    continue
                touching = True
                weight = 0.5 if clamped else 1.0
                nx = (cbx - cax) / dist
                ny = (cby - cay) / dist
                px = cax + (ra - 0.5 * depth) * nx  # the middle of the overlap, on the line of the closest points
                py = cay + (ra - 0.5 * depth) * ny
                vax, vay = _velocity(ws, com, body_a, px, py)
                vbx, vby = _velocity(ws, com, body_b, px, py)
                vx = vbx - vax
                vy = vby - vay
                rate = -(nx * vx + ny * vy)
                vt = ny * vx - nx * vy
                exponent = shape_real[a, SEXP]
                elastic = weight * shape_real[a, SK] * depth ** exponent
                fn = max(0.0, elastic * (1.0 + shape_real[a, SDAMP] * rate))
                limit = shape_real[a, SMU] * fn
                ft = min(max(-weight * shape_real[a, SCT] * vt, -limit), limit)
                fx = fn * nx + ft * ny
                fy = fn * ny - ft * nx
                add_planar_force(wrench, com, body_b, px, py, fx, fy)
                add_planar_force(wrench, com, body_a, px, py, -fx, -fy)
                potential += elastic * depth / (exponent + 1.0)
                dissipated += (fn - elastic) * rate - ft * vt
            if touching:
                stats[0] += 1.0
    energy_out[0] += potential
    energy_out[1] += dissipated
    return STATUS_OK
