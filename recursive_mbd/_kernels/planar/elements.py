"""Force elements: one evaluation shared by forward and inverse dynamics, energy and the integrators.

``element_forces`` turns the model's elements into external wrenches on the bodies (force and moment at each
centre of mass, ground axes) and generalised joint forces, and returns the elements' potential energy, dissipated
power and the power of the applied forces, so every formulation loads the tree the same way.
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import (
    BODY_TORQUE,
    CS,
    EBODY_A,
    EBODY_B,
    EC,
    EFRAME,
    EK,
    EPAX,
    EPBX,
    EREST,
    ESLOT,
    ETYPE,
    JOINT_SPRING_DAMPER,
    OM,
    POINT_FORCE,
    QIDX,
    SN,
    SPRING_DAMPER,
    STATUS_OK,
)
from .tree import com_kinematics

njit = numba.njit(cache=True, error_model="numpy", _nrt=True)


@njit
def _point_state(ws, com, body, lx, ly):
    """Lever arm (ground axes) from the centre of mass, position and velocity of a point of ``body``.

    (lx, ly) is the point relative to the centre of mass in the body frame; for the ground (body -1) it is the
    ground point itself, at rest.
    """
    if body < 0:
        return 0.0, 0.0, lx, ly, 0.0, 0.0
    c = ws[body, CS]
    s = ws[body, SN]
    om = ws[body, OM]
    rx = c * lx - s * ly
    ry = s * lx + c * ly
    return rx, ry, com[body, 0] + rx, com[body, 1] + ry, com[body, 2] - om * ry, com[body, 3] + om * rx


@njit
def _apply(wrench, body, rx, ry, fx, fy):
    """Add force (fx, fy) acting at lever arm (rx, ry) from the centre of mass of ``body`` (no-op for the ground)."""
    if body >= 0:
        wrench[body, 0] += fx
        wrench[body, 1] += fy
        wrench[body, 2] += rx * fy - ry * fx


@njit
def element_forces(body_int, body_real, elem_int, elem_real, u, q, qd, ws, com, wrench, jforce, energy_out,
                   per_element):
    """Element loads at the state (q, qd) and inputs u.

    Outputs: wrench (nbodies, 3) external force and moment at each centre of mass; jforce (nq,) generalised joint
    forces; energy_out (3,) = (potential energy of the springs [J], power dissipated by the dampers [W] (>= 0),
    power of the applied forces and torques [W]); per_element (nelements, 3): spring-damper (tension [N], length,
    length rate), joint spring-damper (joint force, q - rest, qdot), force (Fx, Fy in ground axes, 0), torque
    (torque, 0, 0). Leaves the centre-of-mass kinematics in ``com`` and ``ws``.
    """
    wrench[:, :] = 0.0
    jforce[:] = 0.0
    energy_out[:] = 0.0
    status = com_kinematics(body_int, body_real, q, qd, ws, com)
    if status != STATUS_OK:
        return status
    potential = 0.0
    dissipated = 0.0
    applied = 0.0
    for e in range(elem_int.shape[0]):
        kind = elem_int[e, ETYPE]
        a = elem_int[e, EBODY_A]
        if kind == SPRING_DAMPER:
            b = elem_int[e, EBODY_B]
            rax, ray, pax, pay, vax, vay = _point_state(ws, com, a, elem_real[e, EPAX], elem_real[e, EPAX + 1])
            rbx, rby, pbx, pby, vbx, vby = _point_state(ws, com, b, elem_real[e, EPBX], elem_real[e, EPBX + 1])
            k = elem_real[e, EK]
            c = elem_real[e, EC]
            rest = elem_real[e, EREST]
            dx = pbx - pax
            dy = pby - pay
            dvx = vbx - vax
            dvy = vby - vay
            length = math.sqrt(dx * dx + dy * dy)
            if length > 0.0:
                ux = dx / length
                uy = dy / length
                rate = ux * dvx + uy * dvy
                tension = k * (length - rest) + c * rate
                fx = tension * ux  # on point a; -f on point b
                fy = tension * uy
                potential += 0.5 * k * (length - rest) ** 2
                dissipated += c * rate * rate
                per_element[e, 0] = tension
                per_element[e, 1] = length
                per_element[e, 2] = rate
            else:  # the two-squares tutorial: at zero length the damper acts on the whole relative velocity
                fx = c * dvx
                fy = c * dvy
                potential += 0.5 * k * rest * rest
                dissipated += c * (dvx * dvx + dvy * dvy)
                per_element[e, 0] = -k * rest  # the spring pushes with k L0 in no defined direction: not applied
                per_element[e, 1] = 0.0
                per_element[e, 2] = math.sqrt(dvx * dvx + dvy * dvy)
            _apply(wrench, a, rax, ray, fx, fy)
            _apply(wrench, b, rbx, rby, -fx, -fy)
        elif kind == JOINT_SPRING_DAMPER:
            j = body_int[a, QIDX]
            stretch = q[j] - elem_real[e, EREST]
            rate = qd[j]
            joint_force = -(elem_real[e, EK] * stretch + elem_real[e, EC] * rate)
            jforce[j] += joint_force
            per_element[e, 0] = joint_force
            per_element[e, 1] = stretch
            per_element[e, 2] = rate
            potential += 0.5 * elem_real[e, EK] * stretch * stretch
            dissipated += elem_real[e, EC] * rate * rate
        elif kind == POINT_FORCE:
            slot = elem_int[e, ESLOT]
            if slot >= 0:
                fx = u[slot]
                fy = u[slot + 1]
            else:
                fx = elem_real[e, EPBX]
                fy = elem_real[e, EPBX + 1]
            if elem_int[e, EFRAME] == 1:  # body axes -> ground axes
                c = ws[a, CS]
                s = ws[a, SN]
                fx, fy = c * fx - s * fy, s * fx + c * fy
            rax, ray, _, _, vax, vay = _point_state(ws, com, a, elem_real[e, EPAX], elem_real[e, EPAX + 1])
            _apply(wrench, a, rax, ray, fx, fy)
            applied += fx * vax + fy * vay
            per_element[e, 0] = fx
            per_element[e, 1] = fy
            per_element[e, 2] = 0.0
        elif kind == BODY_TORQUE:
            slot = elem_int[e, ESLOT]
            torque = u[slot] if slot >= 0 else elem_real[e, EPBX]
            wrench[a, 2] += torque
            applied += torque * ws[a, OM]
            per_element[e, 0] = torque
            per_element[e, 1] = 0.0
            per_element[e, 2] = 0.0
    energy_out[0] = potential
    energy_out[1] = dissipated
    energy_out[2] = applied
    return STATUS_OK
