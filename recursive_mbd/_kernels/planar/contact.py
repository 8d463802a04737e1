"""Contact: compliant normal force (Hunt and Crossley 1975) and Coulomb friction with a stick phase, in the plane.

A contact row is one shape point of a body (a circle of radius r >= 0 about a body point, or the closest point of a
segment with a radius: a capsule) against one surface (a half-plane of finite extent, or a disc), either fixed to
the ground or carried by another body (``layout``: contact_int, contact_real). With the gap g (negative when the two
overlap), the depth d = -g and the outward normal n of the surface, a touching row pushes the shape with

    F_n = max(0, k d^p (1 + C d' / v_in)),    d' = -n . (v_shape - v_surface) at the contact point,

the Hunt-Crossley law with its damping c = C / v_in scaled by the impact speed v_in, so that the coefficient of
restitution is the same at every impact speed (``recursive_mbd.model.contact`` sets C from e); and the tangential
force

    F_t = clip(-k_t xi - c_t v_t, -mu F_n, mu F_n),

a spring and damper from a stick anchor: xi is the tangential distance between two material points, one on the
shape and one on the surface, which coincided when the contact was made. Sticking, the anchor holds (a body on a
slope below its friction angle stays put, to round-off); sliding, the force is mu F_n against the slip.

The anchors and the impact speed are state of the run, carried at the end of the integrated state y with a zero
rate and changed only between steps (``update_contacts``, after every accepted step): a step integrates a smooth
force law with its anchors fixed, the way the tangential history of discrete-element codes is kept (Cundall and
Strack 1979). After the step, an anchor stretched past the friction limit is moved back onto it (the contact slid),
and the anchors are moved to the current contact point with their tangential distance kept (so a rolling disc's
anchor follows the contact point instead of the material point it started on).

Energy: the normal force's elastic part k d^p has the potential k d^(p+1) / (p + 1) (added to the springs'); the
rest of the contacts' power, damping and friction, is dissipated power.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..contact_law import add_planar_force, coulomb_clip, hunt_crossley, slipped_stretch
from ..joint_types import PLANAR
from ..layout import (
    CBODY,
    CCT,
    CDAMP,
    CEXP,
    CK,
    CKT,
    CLO,
    CMU,
    CONTACT_TOO_DEEP,
    CONTACT_UNRESOLVED_IMPACT,
    COWNER,
    CP0,
    CP1,
    CRAD,
    CS,
    CS_ACTIVE,
    CS_BODY,
    CS_SURF,
    CS_VIN,
    CSHAPE,
    CSN,
    CSP,
    CSURFACE,
    CVMIN,
    JTYPE,
    N_CSTATE,
    NDOF,
    OM,
    PARENT,
    SHAPE_SEGMENT,
    SN,
    STATUS_NONFINITE_STATE,
    STATUS_OK,
    SURFACE_PLANE,
)
from .tree import motion_column

njit = numba.njit(cache=True, error_model="numpy", _nrt=False)

# per_contact columns: normal force [N], tangential force [N] (along t = (n_y, -n_x)), depth [m], contact point
# (x, y) [m], ground frame
N_PER_CONTACT = 5
# a fixed-step run's impact (a contact made faster than its min_impact_speed) must keep compressing, from touch-down
# to its deepest point, over at least this many steps, or the run stops: a step longer than about an eighth of the
# contact time gets the rebound wrong (a disc on a Hertz contact under generalized_alpha: -36 % to +340 % at 1 to
# 3 steps, within 6 % from 4 on; ``update_contacts``)
MIN_IMPACT_STEPS = 4
# a row's contact mode (``contact_forces``'s ``modes``): FREE, the law decides at each state (max(0, F_n) on touching
# rows, the Coulomb clip); else frozen by an implicit step for its Newton iteration (``system.contact_freeze``):
# APART (no force), STICK (F_n unclipped, extended to a negative depth; F_t the stick spring and damper unclipped),
# SLIP_POS and SLIP_NEG (F_n unclipped, F_t = +mu F_n or -mu F_n)
MODE_FREE = 0
MODE_APART = 1
MODE_STICK = 2
MODE_SLIP_POS = 3
MODE_SLIP_NEG = 4
# added to the frozen mode of a first touch (a row not touching at the step's start) whose damping the law scales by
# its own rate (v_in = max(d', min_impact_speed) = d'), so that the frozen step keeps that branch of the max too
MODE_FAST_TOUCH = 8


@njit
def _frame(ws, com, body):
    """(x, y, cos, sin, vx, vy, omega) of a body's centre of mass; the ground's origin at rest for body -1."""
    if body < 0:
        return 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0
    return com[body, 0], com[body, 1], ws[body, CS], ws[body, SN], com[body, 2], com[body, 3], ws[body, OM]


@njit
def _geometry(contact_int, contact_real, ws, com, r):
    """The row's gap g, normal n and tangent t (t = (n_y, -n_x)), its contact point on the shape (the shape's
    surface point nearest the surface) and the relative velocity of the two material points there. ``touching``
    is False outside a plane's extent or for a shape centre at a disc's centre (no normal)."""
    a = contact_int[r, CBODY]
    b = contact_int[r, COWNER]
    xa, ya, ca, sa, vxa, vya, oma = _frame(ws, com, a)
    xb, yb, cb, sb, vxb, vyb, omb = _frame(ws, com, b)
    lx = contact_real[r, CP0]
    ly = contact_real[r, CP0 + 1]
    cx = xa + ca * lx - sa * ly  # the shape's centre (a circle) or first end (a segment), ground frame
    cy = ya + sa * lx + ca * ly
    px = xb + cb * contact_real[r, CSP] - sb * contact_real[r, CSP + 1]  # the surface point or disc centre
    py = yb + sb * contact_real[r, CSP] + cb * contact_real[r, CSP + 1]
    radius = contact_real[r, CRAD]
    touching = True
    if contact_int[r, CSURFACE] == SURFACE_PLANE:
        nx = cb * contact_real[r, CSN] - sb * contact_real[r, CSN + 1]
        ny = sb * contact_real[r, CSN] + cb * contact_real[r, CSN + 1]
        along = ny * (cx - px) - nx * (cy - py)
        if along < contact_real[r, CLO] or along > contact_real[r, CLO + 1]:
            touching = False
        gap = nx * (cx - px) + ny * (cy - py) - radius
    else:
        if contact_int[r, CSHAPE] == SHAPE_SEGMENT:  # the segment's point closest to the disc's centre
            ex = ca * contact_real[r, CP1] - sa * contact_real[r, CP1 + 1] + xa - cx
            ey = sa * contact_real[r, CP1] + ca * contact_real[r, CP1 + 1] + ya - cy
            length2 = ex * ex + ey * ey
            s = ((px - cx) * ex + (py - cy) * ey) / length2 if length2 > 0.0 else 0.0
            s = min(max(s, 0.0), 1.0)
            cx += s * ex
            cy += s * ey
        dx = cx - px
        dy = cy - py
        dist = math.sqrt(dx * dx + dy * dy)
        if dist > 0.0:
            nx = dx / dist
            ny = dy / dist
        else:
            nx = 0.0
            ny = 1.0
            touching = False
        gap = dist - contact_real[r, CSN] - radius
    qx = cx - radius * nx  # the contact point: the shape's surface point on the normal
    qy = cy - radius * ny
    # material velocities at the contact point, shape minus surface
    vx = (vxa - oma * (qy - ya)) - (vxb - omb * (qy - yb))
    vy = (vya + oma * (qx - xa)) - (vyb + omb * (qx - xb))
    return touching and gap < 0.0, gap, nx, ny, ny, -nx, qx, qy, vx, vy


@njit
def _surface_centre(ws, com, contact_real, owner, r):
    """A disc surface's centre, ground frame."""
    x0, y0, c, s, _, _, _ = _frame(ws, com, owner)
    return (x0 + c * contact_real[r, CSP] - s * contact_real[r, CSP + 1],
            y0 + s * contact_real[r, CSP] + c * contact_real[r, CSP + 1])


@njit
def _angle(ax, ay, bx, by):
    """The signed angle from vector a to vector b [rad]."""
    return math.atan2(ax * by - ay * bx, ax * bx + ay * by)


@njit
def _stretch(ws, com, contact_int, contact_real, state, base, r, nx, ny, qx, qy):
    """Tangential distance xi of the row's two anchors (shape's minus surface's), each measured along its own
    surface from the contact point: an arc on a circle (so a disc rolling without slip, or a shape rolling on a
    drum, keeps xi to round-off whatever the step), a distance along a straight edge."""
    tx = ny
    ty = -nx
    xa, ya, ca, sa, _, _, _ = _frame(ws, com, contact_int[r, CBODY])
    bx = xa + ca * state[base + CS_BODY] - sa * state[base + CS_BODY + 1]
    by = ya + sa * state[base + CS_BODY] + ca * state[base + CS_BODY + 1]
    radius = contact_real[r, CRAD]
    if contact_int[r, CSHAPE] != SHAPE_SEGMENT and radius > 0.0:
        # the anchor's angle about the circle's centre from the contact point; a turn counter-clockwise moves
        # along +t there
        along_shape = radius * _angle(-nx, -ny, bx - (qx + radius * nx), by - (qy + radius * ny))
    else:
        along_shape = tx * (bx - qx) + ty * (by - qy)
    owner = contact_int[r, COWNER]
    xb, yb, cb, sb, _, _, _ = _frame(ws, com, owner)
    sx = xb + cb * state[base + CS_SURF] - sb * state[base + CS_SURF + 1]
    sy = yb + sb * state[base + CS_SURF] + cb * state[base + CS_SURF + 1]
    if contact_int[r, CSURFACE] == SURFACE_PLANE:
        along_surface = tx * (sx - qx) + ty * (sy - qy)
    else:  # on the disc, a turn counter-clockwise from the normal moves along -t
        dx, dy = _surface_centre(ws, com, contact_real, owner, r)
        along_surface = -contact_real[r, CSN] * _angle(nx, ny, sx - dx, sy - dy)
    return along_shape - along_surface


@njit
def _anchor(ws, com, body, px, py, state, index):
    """The ground point (px, py) in a body's frame, relative to its centre of mass, into state[index:index + 2]."""
    x0, y0, c, s, _, _, _ = _frame(ws, com, body)
    state[index] = c * (px - x0) + s * (py - y0)
    state[index + 1] = -s * (px - x0) + c * (py - y0)


@njit
def _normal_force(contact_real, r, depth, rate, v_in):
    """(F_n, its elastic part k d^p) of the Hunt-Crossley law at depth d > 0 and rate d' (``contact_law``)."""
    return hunt_crossley(contact_real[r, CK], contact_real[r, CEXP], contact_real[r, CDAMP], depth, rate, v_in)


@njit
def _frozen_normal_force(contact_real, r, depth, scaled_rate):
    """(F_n, its elastic part) of a row frozen touching: the Hunt-Crossley law k d^p (1 + C d' / v_in) without its
    clip at 0 (``scaled_rate`` = d' / v_in), its elastic part extended to a negative depth as -k |d|^p (smooth
    through d = 0 for p >= 1), so that the force of a frozen step is one smooth law through the iterates."""
    elastic = contact_real[r, CK] * math.copysign(abs(depth) ** contact_real[r, CEXP], depth)
    return elastic * (1.0 + contact_real[r, CDAMP] * scaled_rate), elastic


@njit
def _frozen_rate(contact_real, r, mode, active, rate, v_in):
    """(d' / v_in, its derivative by d') of a frozen row: a first touch frozen fast has v_in = d' (1, 0), one frozen
    slow v_in = min_impact_speed."""
    if not active:
        if mode & MODE_FAST_TOUCH:
            return 1.0, 0.0
        return rate / contact_real[r, CVMIN], 1.0 / contact_real[r, CVMIN]
    return rate / v_in, 1.0 / v_in


@njit
def _row_mode(contact_real, r, fn, ft, active, rate):
    """The mode the law takes on a touching row: APART where its force is clipped at 0, STICK within the friction
    limit (the clip leaves F_t as it is), else SLIP in the sign of the spring and damper's pull ``ft``; plus
    MODE_FAST_TOUCH on a first touch at least as fast as its min_impact_speed."""
    if not fn > 0.0:
        return MODE_APART
    fast = MODE_FAST_TOUCH if not active and rate >= contact_real[r, CVMIN] else 0
    if abs(ft) <= contact_real[r, CMU] * fn:
        return MODE_STICK + fast
    return (MODE_SLIP_POS if ft > 0.0 else MODE_SLIP_NEG) + fast


@njit
def contact_forces(contact_int, contact_real, ws, com, state, offset, wrench, energy_out, per_contact, modes):
    """Add the contacts' loads to ``wrench`` (nbodies, 3) (force and moment at each centre of mass, ground axes).

    ``com`` and ``ws`` hold the centre-of-mass kinematics of the state (``tree.com_kinematics``); the rows' state
    is state[offset + N_CSTATE r + column] (``layout``). Adds the contacts' potential energy to energy_out[0] and
    their dissipated power to energy_out[1]; per_contact (nrows, N_PER_CONTACT) gets each row's forces, depth and
    contact point (zeros where it does not touch). ``modes`` (>= 2, nrows) int64 (an implicit step's; (2, 0): the
    law on every row): modes[0] each row's mode (MODE_FREE: the law; else frozen for a step's Newton iterations), and
    modes[1] gets the mode the law takes on each MODE_FREE row (``_row_mode``), which the step then freezes.
    Returns the status.
    """
    potential = 0.0
    dissipated = 0.0
    frozen = modes.shape[1] > 0
    for r in range(contact_int.shape[0]):
        touching, gap, nx, ny, tx, ty, qx, qy, vx, vy = _geometry(contact_int, contact_real, ws, com, r)
        for col in range(N_PER_CONTACT):
            per_contact[r, col] = 0.0
        mode = modes[0, r] if frozen else MODE_FREE
        if mode == MODE_APART or (mode == MODE_FREE and not touching):
            if frozen and mode == MODE_FREE:
                modes[1, r] = MODE_APART
            continue
        base = offset + N_CSTATE * r
        depth = -gap
        rate = -(nx * vx + ny * vy)
        vt = tx * vx + ty * vy
        active = state[base + CS_ACTIVE] != 0.0
        v_in = state[base + CS_VIN] if active else max(rate, contact_real[r, CVMIN])
        if mode == MODE_FREE:
            fn, elastic = _normal_force(contact_real, r, depth, rate, v_in)
        else:
            scaled, _ = _frozen_rate(contact_real, r, mode, active, rate, v_in)
            fn, elastic = _frozen_normal_force(contact_real, r, depth, scaled)
        xi = _stretch(ws, com, contact_int, contact_real, state, base, r, nx, ny, qx, qy) if active else 0.0
        ft = -contact_real[r, CKT] * xi - contact_real[r, CCT] * vt
        kind = mode & (MODE_FAST_TOUCH - 1)
        if mode == MODE_FREE:
            if frozen:
                modes[1, r] = _row_mode(contact_real, r, fn, ft, active, rate)
            ft = coulomb_clip(ft, abs(ft), contact_real[r, CMU] * fn)
        elif kind == MODE_SLIP_POS:
            ft = contact_real[r, CMU] * fn
        elif kind == MODE_SLIP_NEG:
            ft = -contact_real[r, CMU] * fn
        fx = fn * nx + ft * tx
        fy = fn * ny + ft * ty
        add_planar_force(wrench, com, contact_int[r, CBODY], qx, qy, fx, fy)
        add_planar_force(wrench, com, contact_int[r, COWNER], qx, qy, -fx, -fy)
        potential += elastic * depth / (contact_real[r, CEXP] + 1.0)
        dissipated += (fn - elastic) * rate - ft * vt  # all but the elastic normal part's power
        per_contact[r, 0] = fn
        per_contact[r, 1] = ft
        per_contact[r, 2] = depth
        per_contact[r, 3] = qx
        per_contact[r, 4] = qy
    energy_out[0] += potential
    energy_out[1] += dissipated
    return STATUS_OK


@njit
def update_contacts(contact_int, contact_real, ws, com, state, offset, impacts):
    """The rows' state after an accepted step, at its end state (``com``, ``ws`` hold its kinematics): a row that
    touches for the first time records its impact speed and anchors at its contact point; one that touches still
    keeps its tangential distance, moved back onto the friction limit if the step stretched it past (it slid), with
    both anchors moved to the contact point; one that no longer touches is cleared. A row deeper than its shape's
    radius ends the run (STATUS_NONFINITE_STATE, index CONTACT_TOO_DEEP + row): the step did not resolve the contact,
    whose force would then push the wrong way or not at all.

    ``impacts`` (nrows, 2), a fixed-step run's watch of its impacts (no rows: no watch; the run's scratch, not
    state): column 0 the row's approach speed (its depth rate at the last step end while apart), column 1 the step
    ends since the impact at which the row was still compressing (-1: not watched). A row made at an approach
    speed of at least its min_impact_speed is watched until its depth rate turns; if that took fewer than
    MIN_IMPACT_STEPS steps, the run ends (STATUS_NONFINITE_STATE, index CONTACT_UNRESOLVED_IMPACT + row). A row
    already touching at the first step's end has no approach speed and is not watched."""
    watch = impacts.shape[0] > 0
    for r in range(contact_int.shape[0]):
        base = offset + N_CSTATE * r
        touching, gap, nx, ny, tx, ty, qx, qy, vx, vy = _geometry(contact_int, contact_real, ws, com, r)
        rate = -(nx * vx + ny * vy)
        if not touching:
            for col in range(N_CSTATE):
                state[base + col] = 0.0
            if watch:
                impacts[r, 0] = rate
                impacts[r, 1] = -1.0
            continue
        if -gap > contact_real[r, CRAD] > 0.0:
            return STATUS_NONFINITE_STATE | ((CONTACT_TOO_DEEP + r) << 4)
        first_touch = state[base + CS_ACTIVE] == 0.0
        if watch:
            if first_touch:
                impacts[r, 1] = 0.0 if impacts[r, 0] >= contact_real[r, CVMIN] else -1.0
            if impacts[r, 1] >= 0.0:  # an impact still compressing at the last step end
                if rate > 0.0:
                    impacts[r, 1] += 1.0
                elif impacts[r, 1] < MIN_IMPACT_STEPS:
                    return STATUS_NONFINITE_STATE | ((CONTACT_UNRESOLVED_IMPACT + r) << 4)
                else:
                    impacts[r, 1] = -1.0
        xi = 0.0
        if first_touch:
            state[base + CS_ACTIVE] = 1.0
            state[base + CS_VIN] = max(rate, contact_real[r, CVMIN])
        else:
            xi = _stretch(ws, com, contact_int, contact_real, state, base, r, nx, ny, qx, qy)
            fn, _ = _normal_force(contact_real, r, -gap, rate, state[base + CS_VIN])
            xi = slipped_stretch(xi, abs(xi), contact_real[r, CKT], contact_real[r, CMU] * fn)
        # anchors (body frames): the shape's at the contact point, the surface's xi behind it along the surface
        owner = contact_int[r, COWNER]
        _anchor(ws, com, contact_int[r, CBODY], qx, qy, state, base + CS_BODY)
        if contact_int[r, CSURFACE] == SURFACE_PLANE:
            _anchor(ws, com, owner, qx - xi * tx, qy - xi * ty, state, base + CS_SURF)
        else:  # the disc's point at the arc xi behind (a turn by xi / R counter-clockwise from the normal)
            radius = contact_real[r, CSN]
            dx, dy = _surface_centre(ws, com, contact_real, owner, r)
            c = math.cos(xi / radius)
            s = math.sin(xi / radius)
            _anchor(ws, com, owner, dx + radius * (c * nx - s * ny), dy + radius * (s * nx + c * ny), state,
                    base + CS_SURF)
    return STATUS_OK


@njit
def _row_derivatives(contact_real, r, mode, active, depth, rate, v_in, xi, vt):
    """The law of a touching row (mode ``mode``: MODE_FREE, the law's own, or frozen) and its derivatives:
    (F_n, F_t, k_n = dF_n/d depth, c_n = dF_n/d depth-rate, stick, k_t, c_t, slip), with stick True where F_t is the
    stick spring and damper -k_t xi - c_t v_t (k_t 0 at a first touch, which has no anchor yet), else slip = +1 or -1
    where F_t = slip mu F_n. k_n is 0 where F_n is clipped at 0 and c_n 0 at a first touch faster than the smallest
    impact speed (its damping scaled by the rate itself); a frozen row's are the unclipped law's (its stiffness
    where the damping factor 1 + C d' / v_in is positive)."""
    kn = 0.0
    cn = 0.0
    if mode == MODE_FREE:
        fn, elastic = _normal_force(contact_real, r, depth, rate, v_in)
        if fn > 0.0:
            kn = contact_real[r, CEXP] * fn / depth
            if active or rate < contact_real[r, CVMIN]:
                cn = elastic * contact_real[r, CDAMP] / v_in
    else:
        scaled, per_rate = _frozen_rate(contact_real, r, mode, active, rate, v_in)
        fn, elastic = _frozen_normal_force(contact_real, r, depth, scaled)
        p = contact_real[r, CEXP]
        factor = max(0.0, 1.0 + contact_real[r, CDAMP] * scaled)  # the damping's, on the stiffness
        kn = p * contact_real[r, CK] * abs(depth) ** (p - 1.0) * factor
        cn = max(0.0, elastic * contact_real[r, CDAMP] * per_rate)
    trial = -contact_real[r, CKT] * xi - contact_real[r, CCT] * vt
    kind = mode & (MODE_FAST_TOUCH - 1)
    stick = kind == MODE_STICK or (mode == MODE_FREE and abs(trial) < contact_real[r, CMU] * fn)
    slip = 0.0
    ft = trial
    if not stick:
        if kind == MODE_SLIP_POS or (mode == MODE_FREE and trial > 0.0):
            slip = 1.0
        else:
            slip = -1.0
        ft = slip * contact_real[r, CMU] * fn
    kt = 0.0
    ct = 0.0
    if stick:
        kt = contact_real[r, CKT] if active else 0.0  # (a first touch has no anchor yet: its xi is 0)
        ct = contact_real[r, CCT]
    return fn, ft, kn, cn, stick, kt, ct, slip


@njit
def _row_law_derivatives(contact_int, contact_real, ws, com, state, base, r, mode, gap, nx, ny, qx, qy, vx, vy):
    """``_row_derivatives`` of touching row r at its geometry (``_geometry``'s gap, normal, contact point, relative
    velocity), its stretch from its anchors in ``state``: (active, F_n, F_t, k_n, c_n, stick, k_t, c_t, slip)."""
    rate = -(nx * vx + ny * vy)
    vt = ny * vx - nx * vy
    active = state[base + CS_ACTIVE] != 0.0
    v_in = state[base + CS_VIN] if active else max(rate, contact_real[r, CVMIN])
    xi = _stretch(ws, com, contact_int, contact_real, state, base, r, nx, ny, qx, qy) if active else 0.0
    fn, ft, kn, cn, stick, kt, ct, slip = _row_derivatives(contact_real, r, mode, active, -gap, rate, v_in, xi, vt)
    return active, fn, ft, kn, cn, stick, kt, ct, slip


@njit
def _pair_child(body_int, contact_int, r):
    """(child, sign) of a row whose shape's body and surface's owner are child and parent (either way round): the
    child body and the sign of the row's force on it (+1: the child carries the shape, -1: the surface); (-1, 0.0)
    for a row on the ground's surface or between bodies not so joined."""
    a = contact_int[r, CBODY]
    b = contact_int[r, COWNER]
    if b < 0:
        return -1, 0.0
    if body_int[a, PARENT] == b:
        return a, 1.0
    if body_int[b, PARENT] == a:
        return b, -1.0
    return -1, 0.0


@njit
def _unit_motion(body_int, ws, com, child, k, x, y):
    """The velocity at the ground point (x, y) of the child's material point there per unit rate of its joint's
    coordinate k, its parent at rest (G's column k as a rigid motion: (gx, gy) at the centre of mass, g_theta), and
    g_theta."""
    gx, gy, gt = motion_column(body_int, ws, child, k)
    return gx - gt * (y - com[child, 1]), gy + gt * (x - com[child, 0]), gt


@njit
def _column_motion(body_int, ws, com, child, k, x, y, joint):
    """Column k of the row block's coordinates as a rigid motion of the child: the velocity of its material point at
    the ground point (x, y) per unit rate, the turn rate, and the motion of the point its velocity field turns about
    with the other coordinates' rates held (ux, uy, g, pivot_x, pivot_y). ``joint``: the child's joint coordinates,
    its parent at rest (``_unit_motion``; the pivot, the joint point, held, a planar joint's turning translations
    aside); else the child's own (x_com, y_com, theta) in ground axes, whose rates are its centre's velocity and its
    angular velocity: the translations move the centre of mass, the pivot of the held velocity field."""
    if joint:
        ux, uy, g = _unit_motion(body_int, ws, com, child, k, x, y)
        return ux, uy, g, 0.0, 0.0
    if k == 0:
        return 1.0, 0.0, 0.0, 1.0, 0.0
    if k == 1:
        return 0.0, 1.0, 0.0, 0.0, 1.0
    return -(y - com[child, 1]), x - com[child, 0], 1.0, 0.0, 0.0


@njit
def _row_block(body_int, contact_int, contact_real, ws, com, state, base, r, mode, c_stiff, c_damp, blocks, child,
               sign, joint):
    """-(c_stiff dQ/dq + c_damp dQ/dqd) of row r, exact (the normal's and the lever arm's turn, the contact point's
    and the nearest point's moves, a sliding row's mu dF_n included), Q the generalised force of the row on the
    child's coordinates q (``_column_motion``: its joint's (``joint``) or its own (x_com, y_com, theta)), with sign
    +1 where the child carries the shape, -1 the surface; the other body held (its motion and velocity). ``joint``:
    added to blocks[child, m, 3 + k] (a row between a child and its parent, ``_pair_child``); else to
    blocks[child, m, k] (a row on the ground's surface: ``contact_newton_blocks``)."""
    touching, gap, nx, ny, tx, ty, qx, qy, vx, vy = _geometry(contact_int, contact_real, ws, com, r)
    active, fn, ft, kn, cn, stick, kt, ct, slip = _row_law_derivatives(contact_int, contact_real, ws, com, state, base,
                                                                       r, mode, gap, nx, ny, qx, qy, vx, vy)
    mu = contact_real[r, CMU]
    fx = fn * nx + ft * tx  # the row's force on the shape
    fy = fn * ny + ft * ty
    a = contact_int[r, CBODY]
    owner = contact_int[r, COWNER]
    # the relative angular velocity of the shape's body and the surface's owner, and the child's joint rate of
    # turning about its child point (a planar joint's theta rate: the rate its theta column turns its translations)
    spin = ws[a, OM] - (ws[owner, OM] if owner >= 0 else 0.0)
    planar = joint and body_int[child, JTYPE] == PLANAR
    turn_rate = 0.0
    if planar:
        parent = owner if sign > 0.0 else a
        turn_rate = ws[child, OM] - ws[parent, OM]
    # the geometry the derivatives need: the shape's centre c (a capsule's point nearest a disc), the anchors
    radius = contact_real[r, CRAD]
    cx = qx + radius * nx
    cy = qy + radius * ny
    xa, ya, ca, sa, _, _, _ = _frame(ws, com, a)
    bx = xa + ca * state[base + CS_BODY] - sa * state[base + CS_BODY + 1]  # the shape's anchor
    by = ya + sa * state[base + CS_BODY] + ca * state[base + CS_BODY + 1]
    xb, yb, cb, sb, _, _, _ = _frame(ws, com, owner)
    sx = xb + cb * state[base + CS_SURF] - sb * state[base + CS_SURF + 1]  # the surface's anchor
    sy = yb + sb * state[base + CS_SURF] + cb * state[base + CS_SURF + 1]
    px = xb + cb * contact_real[r, CSP] - sb * contact_real[r, CSP + 1]  # the surface point or disc centre
    py = yb + sb * contact_real[r, CSP] + cb * contact_real[r, CSP + 1]
    plane = contact_int[r, CSURFACE] == SURFACE_PLANE
    circle = contact_int[r, CSHAPE] != SHAPE_SEGMENT and radius > 0.0
    segment = contact_int[r, CSHAPE] == SHAPE_SEGMENT and not plane
    ex = ey = 0.0
    length2 = 0.0
    interior = False
    if segment:
        x0 = xa + ca * contact_real[r, CP0] - sa * contact_real[r, CP0 + 1]
        y0 = ya + sa * contact_real[r, CP0] + ca * contact_real[r, CP0 + 1]
        ex = xa + ca * contact_real[r, CP1] - sa * contact_real[r, CP1 + 1] - x0
        ey = ya + sa * contact_real[r, CP1] + ca * contact_real[r, CP1 + 1] - y0
        length2 = ex * ex + ey * ey
        s = ((px - x0) * ex + (py - y0) * ey) / length2 if length2 > 0.0 else 0.0
        interior = 0.0 < s < 1.0
    dist = gap + radius + (0.0 if plane else contact_real[r, CSN])  # a disc's centre to the shape's centre
    nd = body_int[child, NDOF] if joint else 3
    col0 = 3 if joint else 0
    for k in range(nd):
        # (1) the child turned and moved along its column k, the other body held: every point x of the child moves
        # by U_k(x) (a rigid motion turning by gk); a planar joint's theta column (about the child point, which the
        # translations move) turns the child's velocity by -theta' e_z x U_k as well; (pvx, pvy) the move of the
        # pivot of the child's held velocity field
        _, _, gk, pvx, pvy = _column_motion(body_int, ws, com, child, k, 0.0, 0.0, joint)
        ga = gk if sign > 0.0 else 0.0  # the turns of the shape's body and of the surface's owner
        gb = 0.0 if sign > 0.0 else gk
        wx = wy = 0.0
        if planar and k < 2:
            ux, uy, _ = _unit_motion(body_int, ws, com, child, k, 0.0, 0.0)
            wx = sign * turn_rate * uy  # the relative velocity's share, shape minus surface
            wy = -sign * turn_rate * ux
        dax = day = 0.0  # the shape's centre's material motion (zero where the shape is held)
        if sign > 0.0:
            dax, day, _, _, _ = _column_motion(body_int, ws, com, child, k, cx, cy, joint)
        # the normal's turn (dnx, dny), the depth's change, the shape centre's and the contact point's moves
        dpx = dpy = 0.0
        if sign < 0.0:
            dpx, dpy, _, _, _ = _column_motion(body_int, ws, com, child, k, px, py, joint)
        if plane:
            dnx = -gb * ny
            dny = gb * nx
            d_depth = -(dnx * (cx - px) + dny * (cy - py) + nx * (dax - dpx) + ny * (day - dpy))
            dcx = dax
            dcy = day
        else:
            dcx = dax
            dcy = day
            if segment and interior:  # the nearest point slides along the axis as the two move
                dex = -ga * ey
                dey = ga * ex
                ds = -((dax - dpx) * ex + (day - dpy) * ey + (cx - px) * dex + (cy - py) * dey) / length2
                dcx += ds * ex
                dcy += ds * ey
            relx = dcx - dpx
            rely = dcy - dpy
            along = nx * relx + ny * rely
            dnx = (relx - along * nx) / dist
            dny = (rely - along * ny) / dist
            d_depth = -along
        dqx = dcx - radius * dnx
        dqy = dcy - radius * dny
        dtx = dny
        dty = -dnx
        # the relative velocity at the moved contact point (the velocity fields held, the child's about its moved
        # pivot)
        dvx = -spin * (dqy - pvy) + wx
        dvy = spin * (dqx - pvx) + wy
        d_rate = -(dnx * vx + dny * vy + nx * dvx + ny * dvy)
        d_vt = dtx * vx + dty * vy + tx * dvx + ty * dvy
        d_xi = 0.0
        if active:
            d_phi = nx * dny - ny * dnx  # the normal's turn
            if circle:
                d_xi = radius * (ga - d_phi)
            else:
                mx = my = 0.0
                if sign > 0.0:
                    mx, my, _, _, _ = _column_motion(body_int, ws, com, child, k, bx, by, joint)
                d_xi = dtx * (bx - qx) + dty * (by - qy) + tx * (mx - dqx) + ty * (my - dqy)
            if plane:
                mx = my = 0.0
                if sign < 0.0:
                    mx, my, _, _, _ = _column_motion(body_int, ws, com, child, k, sx, sy, joint)
                d_xi -= dtx * (sx - qx) + dty * (sy - qy) + tx * (mx - dqx) + ty * (my - dqy)
            else:
                d_xi += contact_real[r, CSN] * (gb - d_phi)
        d_fn = kn * d_depth + cn * d_rate
        d_ft = -kt * d_xi - ct * d_vt if stick else slip * mu * d_fn
        dfx = d_fn * nx + fn * dnx + d_ft * tx + ft * dtx
        dfy = d_fn * ny + fn * dny + d_ft * ty + ft * dty
        # (2) the child's rate k, the other body's motion held: the relative velocity at q changes by sign U_k(q)
        vkx, vky, _, _, _ = _column_motion(body_int, ws, com, child, k, qx, qy, joint)
        d_rate_v = -sign * (nx * vkx + ny * vky)
        d_vt_v = sign * (tx * vkx + ty * vky)
        d_fn_v = cn * d_rate_v
        d_ft_v = -ct * d_vt_v if stick else slip * mu * d_fn_v
        dfx_v = d_fn_v * nx + d_ft_v * tx
        dfy_v = d_fn_v * ny + d_ft_v * ty
        for m in range(nd):
            # Q_m = sign F . U_m(q): its change by the force's change and by U_m at the moved point relative to the
            # moved pivot (and, for a planar joint's theta column, by the child point moved under it by the
            # translations)
            umx, umy, gm, _, _ = _column_motion(body_int, ws, com, child, m, qx, qy, joint)
            d_q = dfx * umx + dfy * umy + gm * (fy * (dqx - pvx) - fx * (dqy - pvy))
            if planar and m == 2 and k < 2:
                ux, uy, _ = _unit_motion(body_int, ws, com, child, k, 0.0, 0.0)
                d_q += fx * uy - fy * ux  # F . (-e_z x U_k)
            d_qd = dfx_v * umx + dfy_v * umy
            blocks[child, m, col0 + k] -= sign * (c_stiff * d_q + c_damp * d_qd)


@njit
def contact_newton_blocks(body_int, contact_int, contact_real, ws, com, state, offset, c_stiff, c_damp, blocks,
                          modes):
    """The contacts' part of an implicit step's Newton matrix: blocks (nbodies, 3, 6), zeroed first. On each body's
    (x_com, y_com, theta), blocks[:, :, :3] = c_stiff K + c_damp C summed over the touching rows against
    ground-fixed surfaces; on each body's own joint coordinates
    (nd <= 3 of them), blocks[:, :nd, 3:3 + nd] = c_stiff K + c_damp C of the rows between that body and its
    parent (either one carrying the surface), at the state whose kinematics ``com``, ``ws`` hold
    (``contact_forces``'s arguments, ``ws`` with every row of a kinematics pass; anchors fixed, as in a step).

    A row on the ground's surface: K = -dW/dX and C = -dW/dV of its load W (force and moment at the centre of mass)
    on the body's position X = (x_com, y_com, theta) and velocity V, exact (``_row_block``): the Hunt-Crossley
    law's k_n = dF_n/d depth and c_n = dF_n/d depth-rate (0 where F_n is clipped at 0, and c_n at a first touch
    faster than the smallest impact speed, whose damping is scaled by the rate itself), the stick spring and damper
    k_t, c_t while the row sticks (k_t from the step after the first touch, which lays the anchor), mu dF_n while
    it slides, the turn of the normal and of the lever arm, the contact point's move. It is unsymmetric (a sliding
    row's mu dF_n, the force's turn with the lever arm), which the elimination takes as it is
    (``implicit.effective_factor``: left and right factors). Lagged in joint space, as the inertial terms are: the
    turn of the load with the joints above the body (-(dJ^T/dq) W: in a landing the contacts' loads are met by
    inertial ones, whose turn, d(M qdd)/dq, is lagged too; with the one and not the other the 1e4-link chain's
    touch-down went wrong in ``benchmarks/contact.py``), and the change of the contact point's velocity with the
    joint angles at fixed joint rates.

    A row between a child and its parent moves with the child's joint coordinates alone (the relative motion of
    the two bodies is the child's joint's), and its force on the pair is internal to the parent's subtree: its
    generalised force sits on the child's joint and depends on that joint's coordinates and rates only. Its block
    there is its exact derivative (``_row_block``: geometric terms, the normal's turn and a sliding row's
    mu dF_n included; unsymmetric, which the joint block's inverse takes as it is), and it couples nothing else.
    Rows between bodies not so joined couple two bodies: left out (lagged; what the lag costs Newton is measured by
    ``benchmarks/contact_pairs.py``: twice the iterations a step on one pair, 30 - 100 a step and split steps on a
    pile at dt = 0.1 ms, none converging once c_stiff k / m of the pairs passes 1).

    With ``modes`` (``contact_forces``'s), a frozen row takes its mode's law: APART adds nothing, STICK and SLIP the
    unclipped normal force's derivatives (its stiffness where the damping factor 1 + C d' / v_in is positive),
    STICK the stick spring and damper. Returns the number of rows added."""
    for i in range(blocks.shape[0]):
        for a in range(3):
            for b in range(blocks.shape[2]):
                blocks[i, a, b] = 0.0
    added = 0
    frozen = modes.shape[1] > 0
    for r in range(contact_int.shape[0]):
        pair = contact_int[r, COWNER] >= 0
        if pair and _pair_child(body_int, contact_int, r)[0] < 0:
            continue
        mode = modes[0, r] if frozen else MODE_FREE
        if mode == MODE_APART:
            continue
        touching, gap, nx, ny, tx, ty, qx, qy, vx, vy = _geometry(contact_int, contact_real, ws, com, r)
        if mode == MODE_FREE and not touching:
            continue
        base = offset + N_CSTATE * r
        added += 1
        if pair:
            child, sign = _pair_child(body_int, contact_int, r)
            _row_block(body_int, contact_int, contact_real, ws, com, state, base, r, mode, c_stiff, c_damp, blocks,
                       child, sign, True)
            continue
        _row_block(body_int, contact_int, contact_real, ws, com, state, base, r, mode, c_stiff, c_damp, blocks,
                   contact_int[r, CBODY], 1.0, False)
    return added
