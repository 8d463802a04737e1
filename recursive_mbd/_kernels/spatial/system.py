"""The spatial (3D) recursive formulation as a time loop's system.

``SpatialSystem`` holds a ``Model3D``'s packed arrays, the run's inputs and the articulated-body workspace; the
functions below implement the interface of ``formulation`` for it. The integrated state is
y = (q (nq), v (nv), W_dissipated, W_applied), shape (nq + nv + 2,): configuration and velocity are kept apart
(nq != nv with quaternions). Its derivative: Euclidean coordinates (angles, slides, a free joint's position) have
q' = v; a quaternion (w, x, y, z) has quat' = 1/2 quat (x) (0, omega), omega the joint's angular velocity in the
CHILD frame (right multiplication, as ``rm.integrate_configuration``); v' = the articulated-body forward dynamics
(``spatial.forward_dynamics``, Featherstone 2008 table 7.1) under tau plus the force elements' generalised forces
(``_kernels.spatial.elements``); W_dissipated integrates the dampers' power, W_applied that of tau and of the applied
forces and torques. The projection renormalises every quaternion after
each accepted step (the exact flow keeps |quat| = 1; a Runge-Kutta step drifts by its truncation error), so a
time loop never builds up a norm drift; within a step (stages, trial and rejected steps) the dynamics and the
inputs see each quaternion normalised. ``recursive_mbd.integrate.simulate`` builds the system.

With closed loops (``Model3D.add_loop``) v' is the multiplier layer's (``spatial_loops.constrained_dynamics``:
M vdot + h = tau - J^T lambda, J vdot = gamma - 2 alpha phi' - beta^2 phi), and with stabilization "projection"
the projection also moves (q, v) back onto phi = 0, J v = 0 after each accepted step (``project_loops``: the
mass-orthogonal Gauss-Newton projection of the planar layer, ``_kernels.planar.loops.project``, with the position steps
taken along ``integrate_configuration`` so that quaternions stay unit).

With drivers (prescribed motion q_k = f(t) of revolute and prismatic joints) the driven coordinates leave the
integrated state, y = (q_free, v_free, W_dissipated, W_applied) (``load_state``, ``store_state``): each evaluation
puts the drivers' f, f' into q, v and f'' into vdot (the inputs callback fills them into u), the forward dynamics
is the hybrid one (``tree.hybrid_dynamics``: the driven joints' accelerations given, their driving forces out into
``drive``), and W_applied integrates the drivers' power too. generalized_alpha keeps the driven entries in y
(``free_q``, ``free_v`` every index: y = (q, v, W_dissipated, W_applied), those entries at the drivers' values),
its Newton step over the free velocities (``implicit``: the driven joints locked in its factors). With loops and
drivers v' is ``loops.driven_constrained_dynamics``'s (the responses M^-1 J^T with the driven joints held, the
driving forces with the loop forces' share) and the projection moves the free coordinates only (``_responses``).

With contacts (``Model3D.add_contact``) their loads join tau (``contact_loads``), their dissipated power W_dissipated,
and the rows' stick anchors follow the work terms in y, y = (q, v, W_dissipated, W_applied, state), with a zero rate:
the projection updates them after each accepted step (``contact.update_contacts``), as the planar system does.
The pairs of self-contact sets (``Model3D.add_self_contact``, ``pairs``) join the same loads; they keep no state.
"""

import math
from collections import namedtuple

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import copy_from, copy_into
from ..layout import LOOP_CHANGE_POINT, STATUS_LOOP_DEGENERATE, STATUS_LOOPS_OPEN, STATUS_NONFINITE_STATE, STATUS_OK
from ..planar.loops import BRANCH_ZONE, REDUNDANT, filtered_solve, gram_matrix
from ..planar.tree import check_output
from ..timeloops import formulation
from .contact import contact_forces, contact_newton_blocks, slip_reversals, transmitted_loads, update_contacts
from .elements import element_forces, subtree_forces
from .layout import LROW, N_CSTATE, PARENT
from .loops import (
    constrained_dynamics,
    constraint_responses,
    driven_constrained_dynamics,
    held_responses,
    loop_constraints,
)
from .pairs import pair_forces
from .tree import _force_to_parent_add, forward_dynamics, hybrid_dynamics, poses

# The cached machine code of these kernels embeds ``spatial.forward_dynamics`` as it was when they were compiled,
# and numba checks only this file's stamp: when the articulated-body workspace contract changes (sperf18: spherical
# joints fill no S, UD, uD rows; s18mem: nor do revolute joints), this file must change too or its __pycache__ be
# cleared (_kernels/spatial).
njit = numba.njit(cache=True, error_model="numpy", _nrt=True)

SpatialSystem = namedtuple("SpatialSystem", [
    "body_int", "body_real", "gravity",  # the packed Model3D (model/spatial.py)
    "euclid_q", "euclid_v",  # (ne,) int64: the Euclidean coordinates in q and their rates in v (q' = v)
    "quat_q", "quat_v",  # (nk,) int64: first index of each quaternion in q and of its omega (3) in v
    "tau_const",  # (nv,) constant generalised forces
    "tau_offset",  # (1,) int64: slot of tau in u, -1 when tau is constant
    "u",  # (ninputs,) the input vector the input callback fills
    "elements",  # (elem_int, elem_real, ws, S, tmp, rot, pos, omega, vel, wrench, Q, energy, per_element): the
    # force elements and their own scratch (``spatial.element_system``; ``_kernels.spatial.elements``)
    "q", "v", "tau", "vdot",  # (nq,), (nv,), (nv,), (nv,) scratch of one evaluation
    "ws", "S", "UD", "uD", "tmp",  # the articulated-body workspace (spatial.Workspace3D)
    # loops (``LOOP_*`` below name the entries): the packed loops (no rows for a tree), the loop layer's scratch
    # (spatial_loops.LoopWorkspace3D), Baumgarte's (alpha, beta), and settings (5,) = (project: on, tol, max_iter,
    # its rcond; rcond of the dynamics' multiplier solve)
    "loops",
    # contacts (``_kernels.spatial.contact``, ``pairs``): (contact_int, contact_real, per_contact (nrows,
    # N_PER_CONTACT), energy (2,), shape_int, shape_real, order (nshapes,) int64, boxes (nshapes, N_BOX), stats (2,),
    # impacts), with no rows and no shapes for a model without contacts or self-contact sets (one type for every
    # model: the time loops compiled for a spatial model serve contact models too); order, boxes and stats: the
    # pairs' sweep (``pairs.pair_forces``); impacts: a fixed-step run's watch of its impacts, (nrows, 2), or (0, 2)
    # for a run that does not watch them (``contact.update_contacts``), last as in the planar tuple. The rows' state
    # (``spatial.layout``: N_CSTATE per row) is carried after the work terms of y, y = (q, v, W, state); the pairs
    # keep none; the contacts use the force elements' scratch
    "contacts",
    # drivers (prescribed motion of revolute and prismatic joints, ``rm.simulate(..., drivers=...)``): the integrated
    # state is then y = (q_free, v_free, W, state), the driven coordinates left out (they follow their drivers):
    "driven_coords",  # (nd, 3) int64: per driver its coordinate in q, in v, and its first slot in u (f, f', f'')
    "free_q", "free_v",  # (nq - nd,), (nv - nd,) int64: the integrated coordinates of q and v (0 rows: no drivers;
    # every index for generalized_alpha, whose y keeps the driven entries)
    "driven",  # (nbodies,) uint8: nonzero for a driven joint (``tree.hybrid_dynamics``, which reads S, UD, uD of
    # every body: they have a row per body with drivers); (0,) without drivers
    "drive",  # (nv,) the joint force each driver supplies (its coordinate's entry; 0 rows: no drivers)
    "rate",  # (nq,) scratch: q' of the full configuration (0 rows: no drivers)
])

# entries of SpatialSystem.loops
LOOP_INT, LOOP_REAL, LOOP_ROT, LOOP_POS, LOOP_OMEGA, LOOP_VEL, LOOP_ACC, LOOP_POINT = range(8)
LOOP_PHI, LOOP_PHID, LOOP_JAC, LOOP_GAMMA, LOOP_WEIGHTS, LOOP_RESP = range(8, 14)
LOOP_ZEROS, LOOP_NO_GRAVITY, LOOP_STAB, LOOP_LAM, LOOP_INFO, LOOP_SETTINGS = range(14, 20)
LOOP_COEF, LOOP_GRAM, LOOP_DELTA, LOOP_RESP_DRIVE = range(20, 24)


def _is_spatial(system):
    return isinstance(system, types.BaseNamedTuple) and system.instance_class is SpatialSystem


@njit
def normalise_quaternions(system, y):
    """Renormalise every quaternion of y (its first nq entries are q) in place; a zero or non-finite one is
    STATUS_NONFINITE_STATE."""
    return normalise_at(system.quat_q, y)


@njit
def normalise_at(starts, y):
    """Renormalise the quaternions y[a:a + 4] for a in starts (nk,) int64 in place; a zero or non-finite one is
    STATUS_NONFINITE_STATE."""
    for j in range(starts.shape[0]):
        a = starts[j]
        norm = math.sqrt(y[a] * y[a] + y[a + 1] * y[a + 1] + y[a + 2] * y[a + 2] + y[a + 3] * y[a + 3])
        if not (norm > 0.0 and math.isfinite(norm)):
            return STATUS_NONFINITE_STATE
        for c in range(4):
            y[a + c] /= norm
    return STATUS_OK


@njit
def integrate_configuration(system, q, delta):
    """q = q (+) delta in place (``rm.integrate_configuration`` with dt = 1): Euclidean coordinates add their entry
    of delta (nv,); a quaternion becomes quat (x) exp(omega / 2) (omega in the child frame), renormalised."""
    euclid_q = system.euclid_q
    euclid_v = system.euclid_v
    for k in range(euclid_q.shape[0]):
        q[euclid_q[k]] += delta[euclid_v[k]]
    quat_q = system.quat_q
    quat_v = system.quat_v
    for j in range(quat_q.shape[0]):
        a = quat_q[j]
        b = quat_v[j]
        hx = 0.5 * delta[b]
        hy = 0.5 * delta[b + 1]
        hz = 0.5 * delta[b + 2]
        angle = math.sqrt(hx * hx + hy * hy + hz * hz)
        # sin(angle) / angle without 0 / 0: its series below 1e-4 (error < 1e-17)
        sinc = 1.0 - angle * angle / 6.0 if angle < 1e-4 else math.sin(angle) / angle
        c = math.cos(angle)
        sx = hx * sinc
        sy = hy * sinc
        sz = hz * sinc
        w, x, yq, z = q[a], q[a + 1], q[a + 2], q[a + 3]
        nw = w * c - x * sx - yq * sy - z * sz
        nx = w * sx + x * c + yq * sz - z * sy
        ny = w * sy - x * sz + yq * c + z * sx
        nz = w * sz + x * sy - yq * sx + z * c
        norm = math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
        q[a] = nw / norm
        q[a + 1] = nx / norm
        q[a + 2] = ny / norm
        q[a + 3] = nz / norm


@njit
def project_loops(system, q, v):
    """Mass-orthogonal projection of q (nq,), then v (nv,), onto the loop constraints, in place; returns the status.

    The planar layer's projection (``planar.loops.project``, where the argument for the kinetic-energy metric is
    made) in the velocity coordinates: Gauss-Newton steps delta = -Y f(G) phi (nv,), Y = M^-1 J^T
    (``spatial_loops.constraint_responses``), G = J Y (``filtered_solve``), applied as q (+) delta so that quaternions
    stay unit, until max |delta| and max |phi| are below tol or the step stops shrinking (round-off); then
    v -= Y f(G) (J v). STATUS_LOOPS_OPEN (index: the loop with the largest gap) when max |phi| stays above 1e3 tol.
    """
    loops = system.loops
    loop_int = loops[LOOP_INT]
    phi = loops[LOOP_PHI]
    phid = loops[LOOP_PHID]
    resp = loops[LOOP_RESP]
    coef = loops[LOOP_COEF]
    delta = loops[LOOP_DELTA]
    settings = loops[LOOP_SETTINGS]
    tol = settings[1]
    max_iter = int(settings[2])
    m = phi.shape[0]
    nv = v.shape[0]
    last_step = np.inf
    for _ in range(max_iter + 1):
        status = _constraints(system, q, v)
        if status != STATUS_OK:
            return status
        size = 0.0
        for r in range(m):
            size = max(size, abs(phi[r]))
        if size == 0.0:
            break
        status = _filtered_coefficients(system, q, phi, settings[3])
        if status != STATUS_OK:
            return status
        step = 0.0
        for k in range(nv):
            d = 0.0
            for r in range(m):
                d -= resp[r, k] * coef[r]
            delta[k] = d
            step = max(step, abs(d))
        if (size <= tol and step <= tol) or not step < 0.5 * last_step:  # converged, or round-off reached
            break
        last_step = step
        integrate_configuration(system, q, delta)
    status = _constraints(system, q, v)
    if status != STATUS_OK:
        return status
    worst = 0.0
    worst_row = 0
    for r in range(m):
        if abs(phi[r]) > worst:
            worst = abs(phi[r])
            worst_row = r
    if not worst <= 1e3 * tol:  # no closed configuration near: the loop with the largest gap
        lp = 0
        while lp + 1 < loop_int.shape[0] and loop_int[lp + 1, LROW] <= worst_row:
            lp += 1
        return STATUS_LOOPS_OPEN | (lp << 4)
    status = _filtered_coefficients(system, q, phid, settings[4])
    if status != STATUS_OK:
        return status
    for k in range(nv):
        for r in range(m):
            v[k] -= resp[r, k] * coef[r]
    return STATUS_OK


@njit
def _filtered_coefficients(system, q, rhs, rcond):
    """The coefficients f(G) rhs of a projection step into system.loops (LOOP_COEF): Y = M^-1 J^T at q
    (``_responses``), G = J Y (``gram_matrix``), ``filtered_solve`` with rcond; returns the status
    (STATUS_NONFINITE_STATE when the small system is not finite)."""
    loops = system.loops
    status = _responses(system, q)
    if status != STATUS_OK:
        return status
    gram_matrix(loops[LOOP_JAC], loops[LOOP_RESP], loops[LOOP_GRAM])
    if filtered_solve(loops[LOOP_GRAM], rhs, rcond, loops[LOOP_COEF]) < 0:
        return STATUS_NONFINITE_STATE
    return STATUS_OK


@njit
def _constraints(system, q, v):
    """phi, J v, J, gamma and the row weights of the loops at (q, v) into system.loops (the loop layer's kernel)."""
    loops = system.loops
    return loop_constraints(system.body_int, system.body_real, loops[LOOP_INT], loops[LOOP_REAL], q, v, system.ws,
                            system.S, system.tmp, loops[LOOP_ROT], loops[LOOP_POS], loops[LOOP_OMEGA],
                            loops[LOOP_VEL], loops[LOOP_ACC], loops[LOOP_POINT], loops[LOOP_PHI], loops[LOOP_PHID],
                            loops[LOOP_JAC], loops[LOOP_GAMMA], loops[LOOP_WEIGHTS])


@njit
def _responses(system, q):
    """Y = (M^-1 J^T)^T (m, nv) at q into system.loops (the loop layer's kernel); with drivers the driven joints
    held (``loops.held_responses``: their entries zero)."""
    loops = system.loops
    if system.driven_coords.shape[0] > 0:
        return held_responses(system.body_int, system.body_real, q, loops[LOOP_JAC], system.driven, system.ws,
                              system.S, system.UD, system.uD, system.tmp, loops[LOOP_ZEROS], loops[LOOP_NO_GRAVITY],
                              loops[LOOP_RESP], loops[LOOP_RESP_DRIVE])
    return constraint_responses(system.body_int, system.body_real, q, loops[LOOP_JAC], system.ws, system.S,
                                system.UD, system.uD, system.tmp, loops[LOOP_ZEROS], loops[LOOP_NO_GRAVITY],
                                loops[LOOP_RESP])


@njit
def applied_forces(system, q, v):
    """system.tau = the constant joint forces, tau's input (in system.u, filled by the inputs callback before) and
    the force elements' generalised forces at (q, v) (nv,); returns (status, the power dissipated by the dampers,
    the power applied by tau and the elements' forces and torques) [W]."""
    tau = system.tau
    nv = v.shape[0]
    offset = system.tau_offset[0]
    power = 0.0
    for k in range(nv):
        tau[k] = system.tau_const[k] + (system.u[offset + k] if offset >= 0 else 0.0)
        power += tau[k] * v[k]
    (elem_int, elem_real, ews, eS, etmp, rot, pos, omega, vel, wrench, forces, energy, per_element) = system.elements
    dissipated = 0.0
    if elem_int.shape[0] > 0:  # the force elements act in addition to tau
        status = element_forces(system.body_int, system.body_real, elem_int, elem_real, system.u, q, v, ews, eS, etmp,
                                rot, pos, omega, vel, wrench, forces, energy, per_element)
        if status != STATUS_OK:
            return status, dissipated, power
        for k in range(nv):
            tau[k] += forces[k]
        dissipated = energy[1]
        power += energy[2]
    return STATUS_OK, dissipated, power


@njit
def _contact_forces(system, q, v, y):
    """The contacts' generalised forces at (q, v) with the rows' state of y (``contact``) into the force elements'
    Q scratch (system.elements[10]); returns (status, the power they dissipate [W])."""
    contacts = system.contacts
    (_, _, ews, eS, etmp, rot, pos, omega, vel, wrench, forces, _, _) = system.elements
    status = poses(system.body_int, system.body_real, q, v, ews, eS, etmp, rot, pos, omega, vel, np.bool_(True))
    if status != STATUS_OK:
        return status, 0.0
    wrench[:, :] = 0.0
    forces[:] = 0.0
    energy = contacts[3]
    energy[:] = 0.0
    contact_forces(contacts[0], contacts[1], rot, pos, omega, vel, y, state_size(system) + 2, wrench, energy,
                   contacts[2])
    pair_forces(system.body_int, contacts[4], contacts[5], contacts[6], contacts[7], rot, pos, omega, vel, wrench,
                energy, contacts[8])
    subtree_forces(system.body_int, ews, eS, wrench, forces)  # wrenches to generalised forces, as the elements'
    status = check_output(forces)
    if status == STATUS_OK:
        status = check_output(energy)
    if status != STATUS_OK:
        return status, 0.0
    return STATUS_OK, energy[1]


@njit
def has_contacts(system):
    """True when the model has contact rows or self-contact shapes."""
    return system.contacts[0].shape[0] > 0 or system.contacts[4].shape[0] > 0


@njit
def contact_loads(system, q, v, y):
    """tau += the contacts' generalised forces at (q, v) with the rows' state of y (``contact``); returns (status,
    the power they dissipate [W]). A no-op for a model without contacts."""
    if not has_contacts(system):
        return STATUS_OK, 0.0
    status, dissipated = _contact_forces(system, q, v, y)
    if status != STATUS_OK:
        return status, 0.0
    forces = system.elements[10]
    tau = system.tau
    for k in range(tau.shape[0]):
        tau[k] += forces[k]
    return STATUS_OK, dissipated


@njit
def contact_residual(system, q, v, y, residual, powers):
    """An implicit step's residual (nv,) less the contacts' generalised forces at (q, v) with the rows' state of y
    (held over the step), and powers[0] plus the power they dissipate; returns the status. A no-op for a model
    without contacts. The self-contact pairs are in the residual only (``contact_blocks`` leaves them out: lagged)."""
    if not has_contacts(system):
        return STATUS_OK
    status, dissipated = _contact_forces(system, q, v, y)
    if status != STATUS_OK:
        return status
    forces = system.elements[10]
    for k in range(residual.shape[0]):
        residual[k] -= forces[k]
    powers[0] += dissipated
    return STATUS_OK


@njit
def contact_slip_reversals(system, y, linear, residual):
    """After ``contact_residual`` at an iterate (its poses in the elements' scratch): the rows whose slip reversed
    since the last iterate marked in linear (nrows, 4) and taken on their unclipped law, residual (nv,) less what
    that adds to the contacts' generalised forces (``contact.slip_reversals``); returns the number marked."""
    contacts = system.contacts
    (_, _, ews, eS, _, rot, pos, omega, vel, wrench, forces, _, _) = system.elements
    wrench[:, :] = 0.0
    marked = slip_reversals(system.body_int, contacts[0], contacts[1], rot, pos, omega, vel, y,
                            state_size(system) + 2, linear, wrench)
    if marked:
        forces[:] = 0.0
        subtree_forces(system.body_int, ews, eS, wrench, forces)
        for k in range(residual.shape[0]):
            residual[k] -= forces[k]
    return marked


@njit
def contact_blocks(system, q, v, y, blocks, linear):
    """The contacts' blocks (nbodies, 6, 24) of an implicit step's Newton matrix at (q, v) with the rows' state of y
    (``contact.contact_newton_blocks``; linear (nrows, 4) or (0, 4): the rows ``contact_slip_reversals`` marked take
    their unclipped law); returns the status. Leaves blocks alone without contacts (no rows)."""
    if blocks.shape[0] == 0:
        return STATUS_OK
    contacts = system.contacts
    (_, _, ews, eS, etmp, rot, pos, omega, vel, _, _, _, _) = system.elements
    status = poses(system.body_int, system.body_real, q, v, ews, eS, etmp, rot, pos, omega, vel, np.bool_(True))
    if status != STATUS_OK:
        return status
    contact_newton_blocks(system.body_int, contacts[0], contacts[1], rot, pos, omega, vel, y, state_size(system) + 2,
                          blocks, linear)
    return STATUS_OK


@njit
def contact_subtree_loads(system, y, linear, loads):
    """loads (nbodies, 6): each body's subtree sum of the contact rows' loads with the rows' state of y, at the poses
    of the last ``contact_blocks`` (body axes about its origin; ``contact.transmitted_loads``: rows between a body
    and its parent left out, the rows marked in linear (nrows, 4) on their unclipped law), for the exact Newton
    matrix, whose transmitted wrenches they join (``newton.newton_factor``'s ``loads``). The self-contact pairs are
    left out (their loads' transmission lagged, as their blocks). Leaves loads alone without contacts (no rows)."""
    if loads.shape[0] == 0:
        return
    contacts = system.contacts
    (_, _, ews, _, _, rot, pos, omega, vel, _, _, _, _) = system.elements
    loads[:, :] = 0.0
    transmitted_loads(system.body_int, contacts[0], contacts[1], rot, pos, omega, vel, y, state_size(system) + 2,
                      linear, loads)
    for i in range(system.body_int.shape[0] - 1, -1, -1):  # tip to base: each body's subtree sum
        p = system.body_int[i, PARENT]
        if p >= 0:
            _force_to_parent_add(ews, i, loads[i], 0, loads[p], 0)


@njit
def update_contact_state(system, y):
    """The contacts' state in y after an accepted step, at its (q, v) (``contact.update_contacts``, with the run's
    impact watch); returns the status. A no-op for a model without contacts. Without drivers only: with them the
    driven coordinates are not in y (``project_state`` fills them)."""
    if system.contacts[0].shape[0] == 0:
        return STATUS_OK
    load_state(system, y)
    return _update_contacts_at(system, y)


@njit
def contact_update(inputs, key, system, t, y):
    """``update_contact_state`` with drivers too: the contacts' state in y (its quaternions unit) after an accepted
    step at time t, at its (q, v) with the driven coordinates and rates at their drivers' values at t; returns the
    status. A no-op for a model without contacts."""
    if system.contacts[0].shape[0] == 0:
        return STATUS_OK
    if system.driven_coords.shape[0] == 0:
        return update_contact_state(system, y)
    load_state(system, y)
    status = inputs(key, t, system.q, system.v, system.u)
    if status != STATUS_OK:
        return status
    drive_state(system)
    return _update_contacts_at(system, y)


@njit
def _update_contacts_at(system, y):
    """``update_contact_state`` at the (q, v) in system.q, system.v."""
    contacts = system.contacts
    q = system.q
    v = system.v
    (_, _, ews, eS, etmp, rot, pos, omega, vel, _, _, _, _) = system.elements
    status = poses(system.body_int, system.body_real, q, v, ews, eS, etmp, rot, pos, omega, vel, np.bool_(True))
    if status != STATUS_OK:
        return status
    return update_contacts(contacts[0], contacts[1], rot, pos, omega, vel, y, state_size(system) + 2, contacts[9])


@njit
def state_size(system):
    """The coordinates and velocities that y integrates (the work terms follow): nq + nv, with drivers the entries of
    ``free_q`` and ``free_v`` (nq + nv less two per driver; all of them for generalized_alpha, whose y keeps the
    driven entries at their drivers' values)."""
    if system.driven_coords.shape[0] == 0:
        return system.q.shape[0] + system.v.shape[0]
    return system.free_q.shape[0] + system.free_v.shape[0]


@njit
def load_state(system, y):
    """(q, v) into system.q, system.v from the integrated state y: its first nq + nv entries without drivers, else
    its free coordinates and velocities (``free_q``, ``free_v``; the driven ones are left for ``drive_state``)."""
    q = system.q
    v = system.v
    if system.driven_coords.shape[0] == 0:
        copy_from(q, y, 0)
        copy_from(v, y, q.shape[0])
        return
    free_q = system.free_q
    free_v = system.free_v
    nqf = free_q.shape[0]
    for j in range(nqf):
        q[free_q[j]] = y[j]
    for j in range(free_v.shape[0]):
        v[free_v[j]] = y[nqf + j]


@njit
def store_state(system, y):
    """The inverse of ``load_state``: system.q, system.v into y (their free entries with drivers)."""
    q = system.q
    v = system.v
    if system.driven_coords.shape[0] == 0:
        copy_into(y, q, 0)
        copy_into(y, v, q.shape[0])
        return
    free_q = system.free_q
    free_v = system.free_v
    nqf = free_q.shape[0]
    for j in range(nqf):
        y[j] = q[free_q[j]]
    for j in range(free_v.shape[0]):
        y[nqf + j] = v[free_v[j]]


@njit
def drive_state(system):
    """The drivers' values (f, f', f'' in system.u, filled by the inputs callback) into q, v and vdot."""
    drivers = system.driven_coords
    u = system.u
    for j in range(drivers.shape[0]):
        slot = drivers[j, 2]
        system.q[drivers[j, 0]] = u[slot]
        system.v[drivers[j, 1]] = u[slot + 1]
        system.vdot[drivers[j, 1]] = u[slot + 2]


@njit
def project_state(inputs, key, system, t, y):
    """Renormalise every quaternion of y in place (a zero or non-finite one is STATUS_NONFINITE_STATE); with
    loops and stabilization "projection", then project (q, v) onto the loops (``project_loops``); then update the
    contacts' state at the result (``contact.update_contacts``; with drivers, at their values at t)."""
    q = system.q
    v = system.v
    if system.driven_coords.shape[0] > 0:
        load_state(system, y)
        status = normalise_quaternions(system, q)
        if status != STATUS_OK:
            return status
        if system.loops[LOOP_SETTINGS][0] != 0.0:  # onto the loops with the driven joints at their drivers' values
            status = inputs(key, t, q, v, system.u)
            if status != STATUS_OK:
                return status
            drive_state(system)
            status = project_loops(system, q, v)
            if status != STATUS_OK:
                return status
        store_state(system, y)
        return contact_update(inputs, key, system, t, y)
    status = normalise_quaternions(system, y)
    if status != STATUS_OK:
        return status
    if system.loops[LOOP_SETTINGS][0] != 0.0:
        load_state(system, y)
        status = project_loops(system, q, v)
        store_state(system, y)
        if status != STATUS_OK:
            return status
    return update_contact_state(system, y)


@njit
def system_rhs(inputs, key, system, t, y, dy):
    """dy = (q', v', dissipated power, applied power) at (t, y), the driven coordinates left out; returns the status
    (the inputs', the kernel's)."""
    q = system.q
    v = system.v
    tau = system.tau
    vdot = system.vdot
    nq = q.shape[0]
    nv = v.shape[0]
    drivers = system.driven_coords
    load_state(system, y)
    # the rotation of a quaternion off unit norm (a trial step, a rejected one) is that of its normalised value:
    # f extends off the unit sphere so that any stage is defined, and the inputs and the kernel see unit ones
    status = normalise_quaternions(system, q)
    if status != STATUS_OK:
        return status
    status = inputs(key, t, q, v, system.u)
    if status != STATUS_OK:
        return status
    drive_state(system)
    status, dissipated, power = applied_forces(system, q, v)
    if status != STATUS_OK:
        return status
    status, contact_dissipated = contact_loads(system, q, v, y)
    if status != STATUS_OK:
        return status
    dissipated += contact_dissipated
    loops = system.loops
    if loops[LOOP_INT].shape[0] > 0 and drivers.shape[0] > 0:  # the multiplier layer on the hybrid dynamics
        status = driven_constrained_dynamics(
            system.body_int, system.body_real, system.gravity, loops[LOOP_INT], loops[LOOP_REAL], q, v, tau,
            system.driven, system.ws, system.S, system.UD, system.uD, system.tmp, loops[LOOP_ROT], loops[LOOP_POS],
            loops[LOOP_OMEGA], loops[LOOP_VEL], loops[LOOP_ACC], loops[LOOP_POINT], loops[LOOP_PHI],
            loops[LOOP_PHID], loops[LOOP_JAC], loops[LOOP_GAMMA], loops[LOOP_WEIGHTS], loops[LOOP_RESP],
            loops[LOOP_RESP_DRIVE], loops[LOOP_ZEROS], loops[LOOP_NO_GRAVITY], loops[LOOP_STAB],
            loops[LOOP_SETTINGS][4], loops[LOOP_LAM], vdot, system.drive, loops[LOOP_INFO])
        if status == STATUS_OK:
            status = _change_point(loops[LOOP_INFO], loops[LOOP_JAC], loops[LOOP_RESP], loops[LOOP_SETTINGS])
        for j in range(drivers.shape[0]):  # the drivers' power
            power += system.drive[drivers[j, 1]] * v[drivers[j, 1]]
    elif loops[LOOP_INT].shape[0] > 0:
        status = constrained_dynamics(
            system.body_int, system.body_real, system.gravity, loops[LOOP_INT], loops[LOOP_REAL], q, v, tau,
            system.ws, system.S, system.UD, system.uD, system.tmp, loops[LOOP_ROT], loops[LOOP_POS],
            loops[LOOP_OMEGA], loops[LOOP_VEL], loops[LOOP_ACC], loops[LOOP_POINT], loops[LOOP_PHI],
            loops[LOOP_PHID], loops[LOOP_JAC], loops[LOOP_GAMMA], loops[LOOP_WEIGHTS], loops[LOOP_RESP],
            loops[LOOP_ZEROS], loops[LOOP_NO_GRAVITY], loops[LOOP_STAB], loops[LOOP_SETTINGS][4], loops[LOOP_LAM],
            vdot, loops[LOOP_INFO])
        if status == STATUS_OK:
            status = _change_point(loops[LOOP_INFO], loops[LOOP_JAC], loops[LOOP_RESP], loops[LOOP_SETTINGS])
    elif drivers.shape[0] > 0:
        status = hybrid_dynamics(system.body_int, system.body_real, system.gravity, q, v, tau, system.driven,
                                 system.ws, system.S, system.UD, system.uD, system.tmp, vdot, system.drive)
        for j in range(drivers.shape[0]):  # the drivers' power
            power += system.drive[drivers[j, 1]] * v[drivers[j, 1]]
    else:
        status = forward_dynamics(system.body_int, system.body_real, system.gravity, q, v, tau, system.ws, system.S,
                                  system.UD, system.uD, system.tmp, vdot)
    if status != STATUS_OK:
        return status
    if drivers.shape[0] == 0:
        configuration_rate(system, y, v, dy)
        for k in range(nv):
            dy[nq + k] = vdot[k]
    else:  # the free entries of the full q' and vdot
        rate = system.rate
        configuration_rate(system, q, v, rate)
        free_q = system.free_q
        free_v = system.free_v
        nqf = free_q.shape[0]
        for j in range(nqf):
            dy[j] = rate[free_q[j]]
        for j in range(free_v.shape[0]):
            dy[nqf + j] = vdot[free_v[j]]
    n = state_size(system)
    dy[n] = dissipated
    dy[n + 1] = power
    for k in range(n + 2, y.shape[0]):  # the contacts' state changes between steps only
        dy[k] = 0.0
    return STATUS_OK


@njit
def _change_point(info, jac, resp, settings):
    """The status of the loop equations' rank along a run, after ``constrained_dynamics``: info = (rank, the rank
    at the first state, -1 until it is taken, weak eigenvalues), settings[5:] the M^-1-norms squared of the rows of J
    at the first state (J M^-1 J^T's diagonal; negative until taken; 0 for a row that vanishes there).

    A change point (a singular position where branches of the mechanism cross) shows as a row of J that vanishes
    (its norm below sqrt(BRANCH_ZONE), 1e-3, of the first state's: the loop's equation no longer moves the
    mechanism, as when every loop of a symmetric mechanism goes singular at once, where J M^-1 J^T shrinks as a
    whole), as a weak eigenvalue of J M^-1 J^T, or as a rank below the first state's. The multiplier solve there
    loses the constraint force along the lost direction, and the energy with it, so the run stops
    (``LOOP_CHANGE_POINT`` + the vanishing row, or + m for dependent rows) instead of passing it with a wrong
    answer. Loop equations redundant from the start keep their rank and are not flagged."""
    m = jac.shape[0]
    first = info[1] < 0
    if first:
        info[1] = info[0]
    largest = 0.0
    for r in range(m):
        norm2 = 0.0
        for k in range(jac.shape[1]):
            norm2 += jac[r, k] * resp[r, k]
        if first:
            settings[5 + r] = norm2
            largest = max(largest, norm2)
        elif norm2 <= BRANCH_ZONE * settings[5 + r] and settings[5 + r] > 0.0:
            return STATUS_LOOP_DEGENERATE | ((LOOP_CHANGE_POINT + r) << 4)
    for r in range(m if first else 0):  # rows that vanish from the start (redundant equations) are not watched
        if settings[5 + r] <= REDUNDANT * largest:
            settings[5 + r] = 0.0
    if info[2] > 0 or info[0] < info[1]:
        return STATUS_LOOP_DEGENERATE | ((LOOP_CHANGE_POINT + m) << 4)
    return STATUS_OK


@njit
def configuration_rate(system, y, v, dy):
    """dy[:nq] = q' of the configuration y[:nq] at the velocities v (nv,): Euclidean coordinates q' = v, a
    quaternion quat' = 1/2 quat (x) (0, omega)."""
    euclid_q = system.euclid_q
    euclid_v = system.euclid_v
    for k in range(euclid_q.shape[0]):
        dy[euclid_q[k]] = v[euclid_v[k]]
    quat_q = system.quat_q
    quat_v = system.quat_v
    for j in range(quat_q.shape[0]):
        a = quat_q[j]
        b = quat_v[j]
        w, x, yq, z = y[a], y[a + 1], y[a + 2], y[a + 3]
        ox, oy, oz = v[b], v[b + 1], v[b + 2]
        # quat' = 1/2 quat (x) (0, omega): the Hamilton product with a pure quaternion on the right
        dy[a] = -0.5 * (x * ox + yq * oy + z * oz)
        dy[a + 1] = 0.5 * (w * ox + yq * oz - z * oy)
        dy[a + 2] = 0.5 * (w * oy - x * oz + z * ox)
        dy[a + 3] = 0.5 * (w * oz + x * oy - yq * ox)


@njit
def projects(system):
    """True when the model has quaternions (spherical or free joints) to renormalise after every accepted step,
    loops to project onto (stabilization "projection") or contacts to update."""
    return (system.quat_q.shape[0] > 0 or system.loops[LOOP_SETTINGS][0] != 0.0
            or system.contacts[0].shape[0] > 0)


@overload(formulation.rhs, jit_options={"cache": True, "_nrt": True})
def _rhs(inputs, key, system, t, y, dy):
    if _is_spatial(system):
        return lambda inputs, key, system, t, y, dy: system_rhs(inputs, key, system, t, y, dy)  # noqa: PLW0108
    return None


@overload(formulation.project, jit_options={"cache": True, "_nrt": True})
def _project(inputs, key, system, t, y):
    if _is_spatial(system):
        return lambda inputs, key, system, t, y: project_state(inputs, key, system, t, y)  # noqa: PLW0108
    return None


@overload(formulation.projects, jit_options={"cache": True, "_nrt": True})
def _projects(system):
    if _is_spatial(system):
        return lambda system: projects(system)  # noqa: PLW0108
    return None


@overload(formulation.integrated_size, jit_options={"cache": True, "_nrt": True})
def _integrated_size(system, n):
    if _is_spatial(system):
        return lambda system, n: n - N_CSTATE * system.contacts[0].shape[0]  # the contacts' state is not integrated
    return None
