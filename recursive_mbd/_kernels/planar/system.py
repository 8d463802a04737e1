"""The recursive formulation (tree, and the loop layer on top of it) as a time loop's system.

``RecursiveSystem`` holds the model's packed arrays, the run's inputs and the preallocated workspace; the
functions below implement the interface of ``formulation`` for it: the integrated state is
y = (q_free, qd_free, W_dissipated, W_applied), shape (2 nf + 2,), the free joint coordinates and rates (driven
coordinates follow their drivers) and the work terms. The equations are the recursive forward dynamics
(``tree.forward_dynamics``, the relative-coordinate lecture) or, with loops, the multiplier layer
(``loops.constrained_dynamics``; ``loops_sparse`` where the model's loop structure takes the sparse KKT path),
with the force elements of ``elements.element_forces``.
``recursive_mbd.integrate.simulate`` builds the system.
"""

from collections import namedtuple

import numba
from numba.core import types
from numba.extending import overload

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import readonly
from ..layout import N_CSTATE, STATUS_OK
from ..timeloops import formulation
from .contact import MODE_FREE, contact_forces, contact_newton_blocks, update_contacts
from .elements import element_forces
from .loops import BRANCH_ZONE, constrained_dynamics, project
from .loops_sparse import sparse_constrained_dynamics
from .pairs import pair_forces
from .tree import _forward_dynamics_serial, com_kinematics, forward_dynamics

# No reference counting, as the tree kernels (tree.NJIT_OPTIONS): these functions allocate nothing and return no
# array, and the system's ~40 arrays would otherwise be counted up and down on entry to and exit from each of them.
# Only compiled code calls them (the time loops; ``integrators.system_rhs`` and ``project_state`` are the entries
# from Python): compiled without the wrappers for calls from Python (``cache.CALLEE``).
_OPTIONS = dict(cache=True, error_model="numpy", _nrt=False, **_cache.CALLEE)
njit = numba.njit(**_OPTIONS)

RecursiveSystem = namedtuple("RecursiveSystem", [
    "body_int", "body_real", "gravity",  # the packed model (model.py)
    "elem_int", "elem_real",  # force elements
    "free",  # (nf,) int64: the integrated (free) coordinates
    "drv_coord",  # (nd,) int64: the driven coordinates
    "driven",  # (nbodies,) uint8 flags of driven joints, or (0,)
    "tau_const",  # (nq,) constant joint forces
    "offsets",  # (2,) int64: slot of tau in u (-1: tau is constant), first driver slot (f, f', f'' per driver)
    "u",  # (ninputs,) the input vector the input callback fills
    "q", "qd", "tau",  # (nq,) scratch: the full joint state and the joint forces of an evaluation
    "ws", "com",  # the recursive route's workspace (dynamics.workspace)
    "wrench",  # (nbodies, 3) element wrenches, or (0, 3) without elements
    "jforce",  # (nq,) element joint forces
    "element_energy",  # (3,) element energy, dissipated power, applied power
    "per_element",  # (nelements, 3)
    "qdd", "drive",  # (nq,) accelerations, driving forces of the driven coordinates
    # loops: (loop_int, loop_real, acc, phi, phid, jac, gamma, weights, resp, resp_drive, zeros, stab, lam, info,
    # jac_free (unused), settings (5,) = (project: on, tol, max_iter, its rcond; rcond of the dynamics' multiplier
    # solve), then the 14 arrays of the loops' structure (``loops.loop_pattern``, built once per model: loops[16:30])
    # and the sparse KKT path's two (``loops_sparse.pack``, empty where the model keeps the envelope path:
    # loops[30:32]), flat, as the parallel ensembles' kernels take tuples of arrays only); loop_int has no rows for
    # a tree
    "loops",
    # contacts: None without contacts, else (contact_int, contact_real, per_contact (nrows, N_PER_CONTACT),
    # shape_int, shape_real, order, boxes, stats, modes, impacts) (``contact``, ``pairs``; modes (3, nrows) int64:
    # the rows' modes in force (MODE_FREE: the law), those the law took at the last evaluation, those an implicit
    # step froze before (``contact_release``, ``contact_freeze``); impacts: a fixed-step run's watch of its impacts,
    # (nrows, 2), or (0, 2) for a run that does not watch them, last as in the spatial tuple); the rows' state
    # (layout: N_CSTATE per row) is carried after the work terms of y, y = (q_free, qd_free, W, state)
    "contacts",
])
# A model without loops: the same fields (its loops with no rows), its own type. The time loops compiled for it
# leave out the loop layer (the change-point search, the projection, the multiplier solves): more than half of what
# the adaptive time loop of a RecursiveSystem compiles. The implicit methods (generalized_alpha, bdf) take a
# RecursiveSystem whatever the model (``integrate.runs.build_system``): their Newton code is one for trees and loops.
TreeSystem = namedtuple("TreeSystem", RecursiveSystem._fields)


class ChainSystem(TreeSystem):
    """A TreeSystem of a serial chain of revolute joints (flag SERIAL_REVOLUTE: each body the child of the one
    before) without driven joints (``integrate.runs.build_system`` decides): its right-hand side calls the one
    route the forward dynamics takes for it (``tree._forward_dynamics_serial``), so a time loop compiled for it
    leaves the other routes out (a first ``rm.simulate`` of a chain compiles about half as much); the
    arithmetic, and so every result, is the same."""

    __slots__ = ()


class PlainChainSystem(ChainSystem):
    """A ChainSystem without force elements and contacts: its right-hand side leaves the element forces out too
    (with the kinematics they need), the rest of a first ``rm.simulate`` of a bare chain."""

    __slots__ = ()


_SYSTEM_CLASSES = (RecursiveSystem, TreeSystem, ChainSystem, PlainChainSystem)
_TREE_CLASSES = (TreeSystem, ChainSystem, PlainChainSystem)


def _system_class(system):
    """The class (RecursiveSystem, TreeSystem, ChainSystem, PlainChainSystem) of a numba type of one of them, else
    None."""
    if isinstance(system, types.BaseNamedTuple) and system.instance_class in _SYSTEM_CLASSES:
        return system.instance_class
    return None


def _is_tree(system):
    """True for the numba type of a system without the loop layer (TreeSystem and its chains)."""
    return _system_class(system) in _TREE_CLASSES


def _is_recursive(system):
    return _system_class(system) is RecursiveSystem


@njit
def _load_joint_state(inputs, key, t, y, free, drv_coord, offsets, u, q, qd, qdd):
    """q, qd from the integrated state y and the drivers at t (qdd of the driven coordinates too); fills the
    inputs u. Returns the inputs' status (a failed user function).

    Takes the arrays it uses, not the system: numba increments and decrements the reference count of every array
    of a tuple argument on entry to and exit from each compiled function (two atomic operations each, about 80 for
    the recursive system), which cost as much as the forward dynamics of a 100-body chain when paid at every level
    of every evaluation."""
    nf = free.shape[0]
    if nf == q.shape[0]:  # no driven joint: free is 0 .. nq - 1 (sorted), so plain copies, which vectorise
        for j in range(nf):
            q[j] = y[j]
            qd[j] = y[nf + j]
    else:
        for j in range(nf):
            q[free[j]] = y[j]
            qd[free[j]] = y[nf + j]
    status = inputs(key, t, q, qd, u)
    if status != STATUS_OK:
        return status
    for j in range(drv_coord.shape[0]):  # prescribed motion q = f(t), with f' and f''
        slot = offsets[1] + 3 * j
        q[drv_coord[j]] = u[slot]
        qd[drv_coord[j]] = u[slot + 1]
        qdd[drv_coord[j]] = u[slot + 2]
    return STATUS_OK


def has_contacts(contacts):
    """True for a system with contact rows (its ``contacts`` is not None)."""


def contact_loads(contacts, body_int, ws, com, y, offset, wrench, energy):
    """Add the contacts' loads (``contact.contact_forces``, ``pairs.pair_forces``) at the state whose kinematics
    ``ws``, ``com`` hold; a no-op for a system without contacts."""


def contact_update(inputs, key, system, t, y):
    """The contacts' state in y after an accepted step (``contact.update_contacts``); a no-op without contacts."""


def contact_matrix(contacts, body_int, ws, com, y, offset, c_stiff, c_damp, blocks):
    """The contacts' blocks c_stiff K + c_damp C of an implicit step's Newton matrix on each body and on each body's
    own joint (``contact.contact_newton_blocks``) at the state whose kinematics ``ws``, ``com`` hold, into blocks
    (nbodies, 3, 6); a no-op for a system without contacts (blocks then (0, 3, 6))."""


def contact_release(contacts):
    """Let the law decide every row's mode again (MODE_FREE), the modes frozen so far kept for ``contact_freeze``
    to compare with; a no-op without contacts."""


def contact_freeze(contacts):
    """Freeze each row's mode as the law took it at the last evaluation of the contacts' loads after
    ``contact_release`` (``contact.contact_forces``), for an implicit step's Newton iterations; returns the number
    of rows whose mode differs from the modes frozen before; 0 without contacts."""


@overload(has_contacts, jit_options=_OPTIONS)
def _has_contacts(contacts):
    if isinstance(contacts, types.NoneType):
        return lambda contacts: False
    return lambda contacts: True


@overload(contact_loads, jit_options=_OPTIONS)
def _contact_loads(contacts, body_int, ws, com, y, offset, wrench, energy):
    if isinstance(contacts, types.NoneType):
        return lambda contacts, body_int, ws, com, y, offset, wrench, energy: STATUS_OK

    def loads(contacts, body_int, ws, com, y, offset, wrench, energy):
        status = contact_forces(contacts[0], contacts[1], ws, com, y, offset, wrench, energy, contacts[2],
                                contacts[8])
        if status != STATUS_OK:
            return status
        return pair_forces(body_int, contacts[3], contacts[4], contacts[5], contacts[6], ws, com, wrench, energy,
                           contacts[7])
    return loads


@overload(contact_matrix, jit_options=_OPTIONS)
def _contact_matrix(contacts, body_int, ws, com, y, offset, c_stiff, c_damp, blocks):
    if isinstance(contacts, types.NoneType):
        return lambda contacts, body_int, ws, com, y, offset, c_stiff, c_damp, blocks: 0

    def matrix(contacts, body_int, ws, com, y, offset, c_stiff, c_damp, blocks):
        return contact_newton_blocks(body_int, contacts[0], contacts[1], ws, com, y, offset, c_stiff, c_damp, blocks,
                                     contacts[8])
    return matrix


@overload(contact_release, jit_options=_OPTIONS)
def _contact_release(contacts):
    if isinstance(contacts, types.NoneType):
        return lambda contacts: None

    def release(contacts):
        modes = contacts[8]
        for r in range(modes.shape[1]):
            modes[2, r] = modes[0, r]
            modes[0, r] = MODE_FREE
    return release


@overload(contact_freeze, jit_options=_OPTIONS)
def _contact_freeze(contacts):
    if isinstance(contacts, types.NoneType):
        return lambda contacts: 0

    def freeze(contacts):
        modes = contacts[8]
        changed = 0
        for r in range(modes.shape[1]):
            modes[0, r] = modes[1, r]
            if modes[0, r] != modes[2, r]:
                changed += 1
        return changed
    return freeze


@overload(contact_update, jit_options=_OPTIONS)
def _contact_update(inputs, key, system, t, y):
    if isinstance(system.types[system.fields.index("contacts")], types.NoneType):
        return lambda inputs, key, system, t, y: STATUS_OK

    def update(inputs, key, system, t, y):
        status = _load_state(inputs, key, system, t, y)
        if status == STATUS_OK:
            status = com_kinematics(system.body_int, system.body_real, system.q, system.qd, system.ws, system.com)
        if status != STATUS_OK:
            return status
        contacts = system.contacts
        return update_contacts(contacts[0], contacts[1], system.ws, system.com, y, 2 * system.free.shape[0] + 2,
                               contacts[9])
    return update


@njit
def _branch(settings):
    """(zone, tol, rcond_position) of the change-point treatment (``loops.branch_normals``): the time loops
    follow the branch of the motion through change points."""
    return (BRANCH_ZONE, settings[1], settings[3])


@njit
def _load_state(inputs, key, system, t, y):
    """``_load_joint_state`` of the system's arrays (system.q, system.qd, system.qdd, system.u)."""
    return _load_joint_state(inputs, key, t, y, system.free, system.drv_coord, system.offsets, system.u, system.q,
                             system.qd, system.qdd)


@njit
def project_state(inputs, key, system, t, y):
    """Project the free coordinates and rates in y onto the loop constraints (``loops.project``: mass-orthogonal,
    driven joints held), in place. A gap above 1e3 times the projection tolerance left is STATUS_LOOPS_OPEN: no
    closed configuration is near (a driven mechanism pushed past its lock)."""
    loops = system.loops
    free = system.free
    q = system.q
    qd = system.qd
    status = _load_state(inputs, key, system, t, y)
    if status != STATUS_OK:
        return status
    settings = loops[15]
    # the zero gravity (stab[2:4]) read-only, as the one rm.project passes (dynamics.loops): one compile of the
    # projection and its callees serves both
    status, _, _ = project(system.body_int, system.body_real, loops[0], loops[1], loops[16:30], q, qd, system.driven,
                        system.ws, system.com, loops[2], loops[3], loops[4], loops[5], loops[6], loops[7], loops[8],
                        loops[9], loops[10], readonly(loops[11][2:4]), settings[1], int(settings[2]), settings[3],
                        settings[4], 1e3 * settings[1], _branch(settings), loops[30], loops[31])
    nf = free.shape[0]
    for j in range(nf):
        y[j] = q[free[j]]
        y[nf + j] = qd[free[j]]
    return status


def _make_rhs(with_loops, serial_chain=False, loads=True):
    """dy = f(t, y) of a RecursiveSystem (``with_loops``), a TreeSystem, a ChainSystem (``serial_chain``) or a
    PlainChainSystem (not ``loads``): the same function, the loop branch removed before typing for a tree
    (``with_loops`` is a constant of the closure, and numba prunes the branches on constants), so that a time loop
    compiled for a tree leaves the loop layer out; for a serial chain the forward dynamics is its serial route
    alone, and for a plain one the element and contact loads are left out too."""

    @njit
    def system_rhs(inputs, key, system, t, y, dy):
        """dy = f(t, y); returns the forward-dynamics status."""
        body_int = system.body_int
        free = system.free
        drv_coord = system.drv_coord
        tau_const = system.tau_const
        offsets = system.offsets
        u = system.u
        q = system.q
        qd = system.qd
        tau = system.tau
        qdd = system.qdd
        drive = system.drive
        nf = free.shape[0]
        status = _load_joint_state(inputs, key, t, y, free, drv_coord, offsets, u, q, qd, qdd)
        if status != STATUS_OK:
            return status
        nq = tau.shape[0]
        tau_slot = offsets[0]
        if tau_slot >= 0:
            for k in range(nq):
                tau[k] = tau_const[k] + u[tau_slot + k]
        else:
            for k in range(nq):
                tau[k] = tau_const[k]
        # tau . qd in four interleaved partial sums: four independent add chains instead of one (this sum was a
        # dependent chain as long as the forward dynamics' own on small models)
        p0 = p1 = p2 = p3 = 0.0
        k = 0
        while k + 4 <= nq:
            p0 += tau[k] * qd[k]
            p1 += tau[k + 1] * qd[k + 1]
            p2 += tau[k + 2] * qd[k + 2]
            p3 += tau[k + 3] * qd[k + 3]
            k += 4
        while k < nq:
            p0 += tau[k] * qd[k]
            k += 1
        power_tau = (p0 + p1) + (p2 + p3)
        energy = system.element_energy
        # force elements or contacts: wrench (system.wrench) has a row per body, else (0, 3)
        if loads and (system.elem_int.shape[0] > 0 or has_contacts(system.contacts)):
            status = element_forces(body_int, system.body_real, system.elem_int, system.elem_real, u, q, qd,
                                    system.ws, system.com, system.wrench, system.jforce, energy, system.per_element)
            if status != STATUS_OK:
                return status
            status = contact_loads(system.contacts, body_int, system.ws, system.com, y, 2 * nf + 2, system.wrench,
                                   energy)
            if status != STATUS_OK:
                return status
            for k in range(tau.shape[0]):
                tau[k] += system.jforce[k]
        use_tree = True
        if with_loops:  # pruned before typing for a TreeSystem
            loops = system.loops
            if loops[0].shape[0] > 0:
                use_tree = False
                if loops[30].shape[0] > 0:  # the sparse KKT path's arrays (``loops_sparse``): a ladder
                    status = sparse_constrained_dynamics(
                        body_int, system.body_real, system.gravity, loops[0], loops[1], loops[16:30], loops[30],
                        loops[31], q, qd, tau, system.wrench, system.driven, system.ws, system.com, loops[2], qdd,
                        drive, loops[3], loops[4], loops[5], loops[6], loops[7], loops[8], loops[9], loops[10],
                        loops[11], loops[15][4], loops[12], loops[13], _branch(loops[15]))
                else:
                    status = constrained_dynamics(body_int, system.body_real, system.gravity, loops[0], loops[1],
                                                  loops[16:30], q, qd, tau, system.wrench, system.driven, system.ws,
                                                  system.com, loops[2], qdd, drive, loops[3], loops[4], loops[5],
                                                  loops[6], loops[7], loops[8], loops[9], loops[10], loops[11],
                                                  loops[15][4], loops[12], loops[13], _branch(loops[15]))
        if serial_chain:  # the route forward_dynamics takes for a serial chain without driven joints
            status = _forward_dynamics_serial(system.body_real, system.gravity, q, qd, tau, system.wrench,
                                              system.ws, qdd)
        elif use_tree:
            status = forward_dynamics(body_int, system.body_real, system.gravity, q, qd, tau, system.wrench,
                                      system.driven, system.ws, qdd, drive)
        if status != STATUS_OK:
            return status
        power_drive = 0.0
        for j in range(drv_coord.shape[0]):
            power_drive += drive[drv_coord[j]] * qd[drv_coord[j]]
        if nf == q.shape[0]:  # no driven joint (see _load_state)
            for j in range(nf):
                dy[j] = qd[j]
                dy[nf + j] = qdd[j]
        else:
            for j in range(nf):
                dy[j] = qd[free[j]]
                dy[nf + j] = qdd[free[j]]
        dy[2 * nf] = energy[1]
        dy[2 * nf + 1] = power_tau + energy[2] + power_drive
        for j in range(2 * nf + 2, y.shape[0]):  # the contacts' state changes between steps only
            dy[j] = 0.0
        return STATUS_OK

    return system_rhs


system_rhs = _make_rhs(with_loops=True)
tree_rhs = _make_rhs(with_loops=False)
chain_rhs = _make_rhs(with_loops=False, serial_chain=True)
plain_chain_rhs = _make_rhs(with_loops=False, serial_chain=True, loads=False)


@njit
def projects(system):
    """True when the run projects onto the loop constraints (stabilization "projection" and loops) or updates
    contacts between steps."""
    return system.loops[15][0] != 0.0 or has_contacts(system.contacts)


@njit
def project_recursive(inputs, key, system, t, y):
    """After an accepted step: the projection onto the loop constraints (when the run projects), then the
    contacts' state."""
    if system.loops[15][0] != 0.0:
        status = project_state(inputs, key, system, t, y)
        if status != STATUS_OK:
            return status
    return contact_update(inputs, key, system, t, y)


@overload(formulation.rhs, jit_options=_OPTIONS)
def _rhs(inputs, key, system, t, y, dy):
    # the function itself, not a lambda calling it: one compiled level (and its reference counts) fewer
    return {RecursiveSystem: system_rhs.py_func, TreeSystem: tree_rhs.py_func,
            ChainSystem: chain_rhs.py_func, PlainChainSystem: plain_chain_rhs.py_func}.get(_system_class(system))


@overload(formulation.project, jit_options=_OPTIONS)
def _project(inputs, key, system, t, y):
    if _is_recursive(system):
        return lambda inputs, key, system, t, y: project_recursive(inputs, key, system, t, y)  # noqa: PLW0108
    if _is_tree(system):  # no loop constraints to project onto; contacts (if any) to update
        return lambda inputs, key, system, t, y: contact_update(inputs, key, system, t, y)  # noqa: PLW0108
    return None


@overload(formulation.projects, jit_options=_OPTIONS)
def _projects(system):
    if _is_recursive(system):
        return lambda system: projects(system)  # noqa: PLW0108
    if _is_tree(system):
        return lambda system: has_contacts(system.contacts)  # noqa: PLW0108
    return None


def _never_projects(system):
    """A tree without contacts: no loops to project onto, no contact state to update (``_projects``)."""
    return _is_tree(system) and isinstance(system.types[system.fields.index("contacts")], types.NoneType)


formulation.register_never_projects(_never_projects)


@overload(formulation.integrated_size, jit_options=_OPTIONS)
def _integrated_size(system, n):
    if _system_class(system) is None:
        return None
    if isinstance(system.types[system.fields.index("contacts")], types.NoneType):
        return lambda system, n: n
    return lambda system, n: n - N_CSTATE * system.contacts[0].shape[0]  # the contacts' state is not integrated
