"""Force elements of a spatial model (``Model3D``): their generalised forces Q (nv,), conjugate to v, in O(N).

Each element's loads become a wrench on a body, kept in that body's coordinates about its frame origin (moment;
force), the force convention of ``_kernels.spatial.tree``. One pass tip to base then gives

    f_i = w_i + sum_{children c} X_c^T f_c,        Q_i = S_i^T f_i

(Featherstone, Rigid Body Dynamics Algorithms, 2008, sec. 5.3: the external forces of the recursive Newton-Euler
algorithm; the spatial form of the relative-coordinate lecture's force condensation, eq. 3.23, with no inertia): the
virtual power of every load, sum F . v_point + T . omega, equals Q . v exactly. Joint spring-dampers add to Q directly.
The forward dynamics then takes tau + Q (the articulated-body kernel is not touched).

Elements (``spatial.layout``, "force elements"; ``Model3D.add_spring_damper`` and the others for the physics):

* point-to-point spring-damper: with d = p_b - p_a, L = |d|, u = d / L, the tension f = f0 + k (L - L0) + c L'
  pulls point a by +f u and point b by -f u; potential f0 L + k (L - L0)^2 / 2, dissipation c L'^2. At L = 0
  the direction is undefined: as the planar elements (the two-squares tutorial) the damper acts on the whole relative
  velocity, F_a = c (v_b - v_a), and the spring not at all.
* joint spring-damper, Euclidean joints (revolute, prismatic, cylindrical, universal, planar): per coordinate d,
  Q_d = -k_d (q_d - rest_d) - c_d v_d.
* joint spring-damper, spherical joint: phi = the rotation vector of rest^-1 (x) quat (the shorter rotation,
  |phi| <= pi), potential k |phi|^2 / 2, Q = -k phi - c omega (omega in the child frame). -k phi is the exact
  generalised force: with R = R_rest Exp(phi), omega = J_r(phi) phi' and J_r(phi)^T phi = phi, so
  dV/dt = k phi . J_r^-1 omega = k phi . omega.
* force F at a body point, torque T on a body: in ground or body axes, constant or from the input vector u.
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import STATUS_OK
from ..planar.tree import check_output
from .layout import (
    EBODY_A,
    EBODY_B,
    EC,
    EFRAME,
    EJC,
    EJK,
    EJREST,
    EK,
    ELEM_FORCE,
    ELEM_JOINT_SPRING_DAMPER,
    ELEM_SPRING_DAMPER,
    ELEM_TORQUE,
    EPA,
    EPB,
    EPOINT,
    EPRELOAD,
    EREST,
    ESLOT,
    ETYPE,
    EVALUE,
    JTYPE,
    NVJ,
    PARENT,
    QIDX,
    SPHERICAL,
    VIDX,
)
from .tree import _add_force, _force_to_parent_add, poses

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)


@njit
def _point_state(rot, pos, omega, vel, body, px, py, pz):
    """Position and velocity (ground axes) of the point (px, py, pz) of ``body`` (body frame); for the ground (-1)
    the point itself, at rest."""
    if body < 0:
        return px, py, pz, 0.0, 0.0, 0.0
    ax = rot[body, 0, 0] * px + rot[body, 0, 1] * py + rot[body, 0, 2] * pz
    ay = rot[body, 1, 0] * px + rot[body, 1, 1] * py + rot[body, 1, 2] * pz
    az = rot[body, 2, 0] * px + rot[body, 2, 1] * py + rot[body, 2, 2] * pz
    wx = omega[body, 0]
    wy = omega[body, 1]
    wz = omega[body, 2]
    return (pos[body, 0] + ax, pos[body, 1] + ay, pos[body, 2] + az,
            vel[body, 0] + wy * az - wz * ay, vel[body, 1] + wz * ax - wx * az, vel[body, 2] + wx * ay - wy * ax)


@njit
def _spring_rotation(body_int, elem_real, e, q, i):
    """phi (3 floats): the rotation vector of rest^-1 (x) quat of the spherical joint spring e on body i, the
    shorter rotation (|phi| <= pi; module docstring)."""
    k = body_int[i, QIDX]
    w = q[k]
    x = q[k + 1]
    y = q[k + 2]
    z = q[k + 3]
    norm = math.sqrt(w * w + x * x + y * y + z * z)  # checked to 1e-6 by the kinematics pass
    w /= norm
    x /= norm
    y /= norm
    z /= norm
    # rel = conj(rest) (x) quat
    rw = elem_real[e, EJREST]
    rx = -elem_real[e, EJREST + 1]
    ry = -elem_real[e, EJREST + 2]
    rz = -elem_real[e, EJREST + 3]
    qw = rw * w - rx * x - ry * y - rz * z
    qx = rw * x + rx * w + ry * z - rz * y
    qy = rw * y - rx * z + ry * w + rz * x
    qz = rw * z + rx * y - ry * x + rz * w
    if qw < 0.0:  # q and -q are one rotation: the shorter way
        qw = -qw
        qx = -qx
        qy = -qy
        qz = -qz
    s = math.sqrt(qx * qx + qy * qy + qz * qz)
    # phi = 2 atan2(s, w) (x, y, z) / s; below s = 1e-8 its series 2 / w (error < 1e-16 relative)
    factor = 2.0 / qw if s < 1e-8 else 2.0 * math.atan2(s, qw) / s
    return qx * factor, qy * factor, qz * factor


@njit
def _spherical_spring(body_int, elem_real, e, q, v, i, out, per_element):
    """Q of a spherical joint's rotational spring-damper (module docstring) into out; returns (potential,
    dissipated power)."""
    kv = body_int[i, VIDX]
    phi = _spring_rotation(body_int, elem_real, e, q, i)
    stiffness = elem_real[e, EJK]
    damping = elem_real[e, EJC]
    potential = 0.0
    dissipated = 0.0
    for d in range(3):
        rate = v[kv + d]
        force = -stiffness * phi[d] - damping * rate
        out[kv + d] += force
        per_element[e, d] = force
        potential += 0.5 * stiffness * phi[d] * phi[d]
        dissipated += damping * rate * rate
    return potential, dissipated


@njit
def linearise_spherical_springs(body_int, elem_int, elem_real, q_start, q_new, delta, residual):
    """Replace, in ``residual`` (M vdot + h - tau - Q at q_new = q_start (+) delta), the force -k phi(q_new) of
    every spherical joint spring whose continued rotation phi(q_start) + delta (its joint's entries of delta)
    passes the half turn, |phi(q_start) + delta| >= pi, by its linearisation -k (phi(q_start) + delta); returns
    whether any was replaced.

    The model's spring force is periodic in the rotation (the shorter rotation from rest): beyond the half turn
    along the increment it is that of another turn, pulling the other way. An implicit step's first Newton iterate
    turns a stiff joint by h^2 a, of order (h omega)^2 times the swing, and Newton from there converges to a step
    that turns the body by whole turns (a root of the step's equations, at a velocity of 2 pi / h: an energy jump
    of (2 pi / swing)^2). Linearised at the step's start with the tangent k 1 the Newton matrix holds, the spring
    has no turns, and one Newton correction lands within O(|phi| |delta|) of the step's physical root; the later
    iterations use the model's force. Shapes: q_start, q_new (nq,), delta, residual (nv,)."""
    replaced = False
    for e in range(elem_int.shape[0]):
        i = elem_int[e, EBODY_A]
        if elem_int[e, ETYPE] != ELEM_JOINT_SPRING_DAMPER or body_int[i, JTYPE] != SPHERICAL:
            continue
        kv = body_int[i, VIDX]
        start = _spring_rotation(body_int, elem_real, e, q_start, i)
        cx = start[0] + delta[kv]
        cy = start[1] + delta[kv + 1]
        cz = start[2] + delta[kv + 2]
        if math.sqrt(cx * cx + cy * cy + cz * cz) < math.pi:
            continue
        now = _spring_rotation(body_int, elem_real, e, q_new, i)
        stiffness = elem_real[e, EJK]
        # residual = ... - Q: less the model's -k phi(q_new), plus the linearised -k (phi(q_start) + delta)
        residual[kv] += stiffness * (cx - now[0])
        residual[kv + 1] += stiffness * (cy - now[1])
        residual[kv + 2] += stiffness * (cz - now[2])
        replaced = True
    return replaced


@njit
def subtree_forces(body_int, ws, S, wrench, out):
    """out (nv,) += the generalised forces of the loads ``wrench`` (nbodies, 6) (each body's, body coordinates about
    its origin): tip to base, a body's subtree load projected on its joint's motion subspace (module docstring).
    ``ws`` and ``S`` hold the kinematics of the state (``tree.poses``); ``wrench`` is left holding the subtree loads."""
    for i in range(body_int.shape[0] - 1, -1, -1):
        kv = body_int[i, VIDX]
        for col in range(body_int[i, NVJ]):
            acc = 0.0
            for m in range(6):
                acc += S[i, col, m] * wrench[i, m]
            out[kv + col] += acc
        p = body_int[i, PARENT]
        if p >= 0:
            _force_to_parent_add(ws, i, wrench[i], 0, wrench[p], 0)


@njit
def element_forces(body_int, body_real, elem_int, elem_real, u, q, v, ws, S, tmp, rot, pos, omega, vel, wrench,
                   out, energy_out, per_element):
    """Q (nv,) into ``out``: the generalised forces of the elements at (q, v) and inputs u (module docstring).

    Shapes: elem_int (ne, N_EINT), elem_real (ne, N_EREAL), u (ninputs,), q (nq,), v (nv,); the kinematics
    workspace ws (nbodies, W_SPATIAL), S (nbodies, max_nv, 6), tmp (TMP_SIZE,), rot (nbodies, 3, 3), pos, omega,
    vel (nbodies, 3) (filled: the poses, ground axes); wrench (nbodies, 6) scratch (left holding each body's
    subtree load, body coordinates about its origin); energy_out (3,) = (spring potential [J], power dissipated by
    the dampers [W] (>= 0), power of the applied forces and torques [W]); per_element (ne, 3): spring-damper
    (tension [N], length [m], its rate [m/s]), joint spring-damper (its generalised force on each of the joint's
    velocities, up to 3), force and torque (the vector in ground axes). Returns a ``_kernels.spatial.tree`` status.
    """
    n = body_int.shape[0]
    status = poses(body_int, body_real, q, v, ws, S, tmp, rot, pos, omega, vel, np.bool_(True))
    if status != STATUS_OK:
        return status
    for i in range(n):
        for m in range(6):
            wrench[i, m] = 0.0
    for k in range(out.shape[0]):
        out[k] = 0.0
    potential = 0.0
    dissipated = 0.0
    applied = 0.0
    for e in range(elem_int.shape[0]):
        kind = elem_int[e, ETYPE]
        a = elem_int[e, EBODY_A]
        for m in range(3):
            per_element[e, m] = 0.0
        if kind == ELEM_SPRING_DAMPER:
            b = elem_int[e, EBODY_B]
            pax, pay, paz, vax, vay, vaz = _point_state(rot, pos, omega, vel, a, elem_real[e, EPA],
                                                        elem_real[e, EPA + 1], elem_real[e, EPA + 2])
            pbx, pby, pbz, vbx, vby, vbz = _point_state(rot, pos, omega, vel, b, elem_real[e, EPB],
                                                        elem_real[e, EPB + 1], elem_real[e, EPB + 2])
            dx = pbx - pax
            dy = pby - pay
            dz = pbz - paz
            dvx = vbx - vax
            dvy = vby - vay
            dvz = vbz - vaz
            k = elem_real[e, EK]
            c = elem_real[e, EC]
            rest = elem_real[e, EREST]
            preload = elem_real[e, EPRELOAD]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            if length > 0.0:
                ux = dx / length
                uy = dy / length
                uz = dz / length
                rate = ux * dvx + uy * dvy + uz * dvz
                tension = preload + k * (length - rest) + c * rate
                fx = tension * ux  # on point a; -f on point b
                fy = tension * uy
                fz = tension * uz
                potential += preload * length + 0.5 * k * (length - rest) * (length - rest)
                dissipated += c * rate * rate
                per_element[e, 0] = tension
                per_element[e, 1] = length
                per_element[e, 2] = rate
            else:  # the two-squares tutorial: at zero length the damper acts on the whole relative velocity
                fx = c * dvx
                fy = c * dvy
                fz = c * dvz
                potential += 0.5 * k * rest * rest
                dissipated += c * (dvx * dvx + dvy * dvy + dvz * dvz)
                per_element[e, 0] = preload - k * rest  # no direction: not applied
                per_element[e, 2] = math.sqrt(dvx * dvx + dvy * dvy + dvz * dvz)
            _add_force(rot, wrench, a, elem_real[e, EPA], elem_real[e, EPA + 1], elem_real[e, EPA + 2], fx, fy, fz,
                       False)
            _add_force(rot, wrench, b, elem_real[e, EPB], elem_real[e, EPB + 1], elem_real[e, EPB + 2], -fx, -fy,
                       -fz, False)
        elif kind == ELEM_JOINT_SPRING_DAMPER:
            if body_int[a, JTYPE] == SPHERICAL:
                spring, damper = _spherical_spring(body_int, elem_real, e, q, v, a, out, per_element)
                potential += spring
                dissipated += damper
            else:
                kq = body_int[a, QIDX]
                kv = body_int[a, VIDX]
                for d in range(body_int[a, NVJ]):
                    stretch = q[kq + d] - elem_real[e, EJREST + d]
                    rate = v[kv + d]
                    force = -elem_real[e, EJK + d] * stretch - elem_real[e, EJC + d] * rate
                    out[kv + d] += force
                    per_element[e, d] = force
                    potential += 0.5 * elem_real[e, EJK + d] * stretch * stretch
                    dissipated += elem_real[e, EJC + d] * rate * rate
        else:  # a force or a torque
            slot = elem_int[e, ESLOT]
            if slot >= 0:
                fx = u[slot]
                fy = u[slot + 1]
                fz = u[slot + 2]
            else:
                fx = elem_real[e, EVALUE]
                fy = elem_real[e, EVALUE + 1]
                fz = elem_real[e, EVALUE + 2]
            body_axes = elem_int[e, EFRAME] == 1
            # the vector in ground axes (per_element, power)
            if body_axes:
                gx = rot[a, 0, 0] * fx + rot[a, 0, 1] * fy + rot[a, 0, 2] * fz
                gy = rot[a, 1, 0] * fx + rot[a, 1, 1] * fy + rot[a, 1, 2] * fz
                gz = rot[a, 2, 0] * fx + rot[a, 2, 1] * fy + rot[a, 2, 2] * fz
            else:
                gx = fx
                gy = fy
                gz = fz
            per_element[e, 0] = gx
            per_element[e, 1] = gy
            per_element[e, 2] = gz
            if kind == ELEM_FORCE:
                px = elem_real[e, EPOINT]
                py = elem_real[e, EPOINT + 1]
                pz = elem_real[e, EPOINT + 2]
                _, _, _, vpx, vpy, vpz = _point_state(rot, pos, omega, vel, a, px, py, pz)
                _add_force(rot, wrench, a, px, py, pz, fx, fy, fz, body_axes)
                applied += gx * vpx + gy * vpy + gz * vpz
            elif kind == ELEM_TORQUE:
                if not body_axes:  # R^T T
                    fx = rot[a, 0, 0] * gx + rot[a, 1, 0] * gy + rot[a, 2, 0] * gz
                    fy = rot[a, 0, 1] * gx + rot[a, 1, 1] * gy + rot[a, 2, 1] * gz
                    fz = rot[a, 0, 2] * gx + rot[a, 1, 2] * gy + rot[a, 2, 2] * gz
                wrench[a, 0] += fx
                wrench[a, 1] += fy
                wrench[a, 2] += fz
                applied += gx * omega[a, 0] + gy * omega[a, 1] + gz * omega[a, 2]
    subtree_forces(body_int, ws, S, wrench, out)
    energy_out[0] = potential
    energy_out[1] = dissipated
    energy_out[2] = applied
    status = check_output(out)
    if status != STATUS_OK:
        return status
    return check_output(energy_out)
