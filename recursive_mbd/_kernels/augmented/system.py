"""The augmented absolute-coordinate formulation (the two-squares tutorial) as a time loop's system.

``AugmentedSystem`` holds the model's packed arrays, the run's inputs and the tree solver's preallocated
workspace (``augmented``); the functions below implement the interface of ``formulation`` for it. The integrated
state is y = (z, zd, W_dissipated, W_applied), shape (6 nbodies + 2,): the absolute coordinates (x, y, theta) of
every centre of mass and their rates, row by row, then the work terms. Each evaluation assembles the joints' rows
and solves the KKT system of the two-squares tutorial, eqs. 10, 13 (Baumgarte's terms, eqs. 15-17) by the tree-ordered
elimination (``augmented.factor_and_solve``); loops and drivers (q_k(z) = f(t), a rheonomic row) close it as auxiliary
rows (``augmented.add_auxiliary_rows``). The projection (the two-squares tutorial's alternative to Baumgarte) takes
mass-orthogonal Gauss-Newton steps onto C(z) = 0 and then removes C_z zd, each a solve with the same factor.
``recursive_mbd.dynamics.augmented`` builds the system.
"""

import math
from collections import namedtuple

import numpy as np
from numba.core import types
from numba.extending import overload

from ..joint_types import PRISMATIC
from ..layout import ANGLE, JTYPE, OM, PARENT, STATUS_NONFINITE_STATE, STATUS_OK
from ..planar.elements import element_forces
from ..planar.loops import (
    BRANCH_ATTEMPTS,
    BRANCH_OFFSETS,
    BRANCH_STEP,
    REGULAR_RCOND_MARGIN,
    REGULAR_ZONE_MARGIN,
    body_accelerations,
    branch_basis,
    branch_dynamics,
    branch_velocity,
    filtered_solve,
    loop_rows,
    zone_counts,
)
from ..planar.loops import BRANCH_ZONE as JOINT_BRANCH_ZONE
from ..planar.tree import com_kinematics
from ..sparse_kkt import F_JC, F_JP, loop_solve, tree_residuals
from ..timeloops import formulation
from .tree import (
    add_auxiliary_rows,
    factor_and_solve,
    inline,
    joint_coordinates,
    joint_gap,
    njit,  # the augmented kernels' compile options, as in tree.py
    prismatic_coordinate,
    tree_solve,
)

# Projected runs follow the branch through change points (``loops.branch_normals``): eigenvalues of the loop rows'
# Schur complement E H^-1 E^T (the recursive layer's J M^-1 J^T) in (REDUNDANT, zone] of the largest mark the zone.
# Where every joint has its coordinates as rows on z (revolute, prismatic, fixed) the recursive layer tells the
# branch and solves on it in joint coordinates, in its own zone (``_joint_branch_dynamics``); otherwise it is told
# here in absolute coordinates, in the zone below. The hard rank cut-off of the auxiliary solve (RCOND = 1e-10 of
# the scale) lies inside it, and below 1e-6 the displaced points need not go as far as in the recursive layer.
BRANCH_ZONE = 1e-8
# relative cut-off of the solves on the branch rows' Schur complement N H^-1 N^T: the joints' directions in N
# give round-off eigenvalues there (the tree solve holds them), the loops' are well conditioned
BRANCH_SOLVE_RCOND = 1e-10

AugmentedSystem = namedtuple("AugmentedSystem", [
    "body_int", "body_real", "gravity",  # the packed model (model.py)
    "elem_int", "elem_real",  # force elements
    "loop_int", "loop_real",  # loops
    "tau_const",  # (nq,) constant joint forces
    "offsets",  # (2,) int64: slot of tau in u (-1: tau is constant), first driver slot (f, f', f'' per driver)
    "drv_coord", "drv_body",  # (nd,) int64: the driven coordinates and the bodies whose joints hold them
    "u",  # (ninputs,) the input vector the input callback fills
    "q", "qd", "tau",  # (nq,) joint coordinates and rates recovered from (z, zd), joint forces of an evaluation
    "ws", "com", "wrench", "jforce", "element_energy", "per_element",  # the shared element evaluation's arrays
    "z", "zd", "zdd",  # (nbodies, 3) the absolute state of an evaluation and its accelerations
    "row_start",  # (nbodies + 1,) int64: first tree row of each body's joint
    "factor", "scratch", "stab", "power",  # the tree solver's workspace; stab (4,) = (alpha, beta, 0, 0)
    "lam",  # (tree rows + k,) multipliers: the joints', the loops', the drivers'
    # auxiliary rows (k = loop rows + drivers): bodies (k, 2), coefficients (k, 6), right-hand side, residual,
    # and the scratch of add_auxiliary_rows: xb (nbodies, 3), xj (tree rows), schur (k, k), info (2,)
    "aux_body", "aux_coef", "aux_rhs", "aux_res", "xb", "xj", "schur", "info",
    # the recursive loop layer's arrays for the branch in joint coordinates (``_joint_branch_dynamics``): acc
    # (nbodies, 3), phi, phid (m,), jac (m, nq), gamma (m,), weights (m, 6), resp (m, nq), zeros (nq,), no gravity
    # (2,), the loops' structure (``loops.loop_pattern``, built once per model), m the loops' rows
    "loop_ws",
    # the KKT matrix with the loop rows inside, factorised sparse where that is cheaper than the loop rows' Schur
    # complement (a ladder; ``sparse_kkt``); the empty structure otherwise
    "kkt",
    # settings (8,) = (project: on, tol, max_iter, rcond of the auxiliary solve, joint state needed: 1/0, branch in
    # joint coordinates: 1/0, rcond of the joint-coordinate position closures, rcond of the loop multipliers
    # fitted to the branch's constraint force there)
    "settings",
])


def _is_augmented(system):
    return isinstance(system, types.BaseNamedTuple) and system.instance_class is AugmentedSystem


@inline
def coordinate_row(body_int, body_real, z, zd, i, coef):
    """The joint coordinate q_k of body i's revolute or prismatic joint as a row on z: coef (6,) = d q_k / d z on
    the child and on the parent (as ``recursive_mbd.dynamics.augmented.joint_jacobian``); returns (q_k, q_k', q_k''
    at z'' = 0)."""
    p = body_int[i, PARENT]
    thp = z[p, 2] if p >= 0 else 0.0
    omp = zd[p, 2] if p >= 0 else 0.0
    if body_int[i, JTYPE] != PRISMATIC:  # revolute: q = theta_c - theta_p - angle
        for col in range(6):
            coef[col] = 0.0
        coef[2] = 1.0
        coef[5] = -1.0
        return z[i, 2] - thp - body_real[i, ANGLE], zd[i, 2] - omp, 0.0
    # prismatic: q = u . D, D = P_c - P_p, u the axis in ground axes
    _, om, acx, acy, cp, sp, apx, apy, gx, gy, rx, ry = joint_gap(body_real, z, zd, i, p, thp, omp)
    ux, uy, value, rate = prismatic_coordinate(body_real, i, cp, sp, gx, gy, rx, ry, omp)
    curve_x = -acx * om * om + apx * omp * omp  # D'' at z'' = 0
    curve_y = -acy * om * om + apy * omp * omp
    coef[0] = ux
    coef[1] = uy
    coef[2] = -ux * acy + uy * acx  # u . perp(arm_c)
    coef[3] = -ux
    coef[4] = -uy
    coef[5] = (-uy * gx + ux * gy) - (-ux * apy + uy * apx)  # perp(u) . D - u . perp(arm_p)
    return value, rate, -omp * omp * value + 2.0 * omp * (-uy * rx + ux * ry) + ux * curve_x + uy * curve_y


@njit
def driver_rows(body_int, body_real, z, zd, drv_coord, drv_body, u, first_slot, stab, aux_body, aux_coef, aux_rhs,
                aux_res):
    """Row q_k(z) - f(t) = 0 of each driver (f, f', f'' in u from ``first_slot`` on) as auxiliary rows: the
    coefficients are d q_k / d z on the joint's child and parent (``coordinate_row``), aux_rhs = f'' - (q_k'' at
    z'' = 0) - 2 alpha (q_k' - f') - beta^2 (q_k - f), aux_res = q_k - f."""
    alpha = stab[0]
    beta = stab[1]
    for j in range(drv_coord.shape[0]):
        i = drv_body[j]
        slot = first_slot + 3 * j
        f = u[slot]
        f_rate = u[slot + 1]
        f_acc = u[slot + 2]
        aux_body[j, 0] = i
        aux_body[j, 1] = body_int[i, PARENT]
        value, rate, bias = coordinate_row(body_int, body_real, z, zd, i, aux_coef[j])
        aux_res[j] = value - f
        aux_rhs[j] = f_acc - bias - 2.0 * alpha * (rate - f_rate) - beta * beta * aux_res[j]


@njit
def _pack_rows(first, second, out):
    """out[:6 nbodies] = (first, second) row by row, the layout of the state y = (z, zd) (``_load_state``)."""
    n = first.shape[0]
    for i in range(n):
        for col in range(3):
            out[3 * i + col] = first[i, col]
            out[3 * n + 3 * i + col] = second[i, col]


@njit
def _load_state(inputs, key, system, t, y):
    """(z, zd) from y, the joint state recovered from them where the inputs or elements need it, and the inputs
    at t. Returns the inputs' status."""
    z = system.z
    zd = system.zd
    n = z.shape[0]
    for i in range(n):
        for col in range(3):
            z[i, col] = y[3 * i + col]
            zd[i, col] = y[3 * n + 3 * i + col]
    if system.settings[4] != 0.0:
        joint_coordinates(system.body_int, system.body_real, z, zd, system.q, system.qd)
    return inputs(key, t, system.q, system.qd, system.u)


@njit
def _auxiliary_rows(system, stab):
    """The loops' and the drivers' rows at system.z, system.zd into the auxiliary arrays; returns the status."""
    nl = system.loop_int.shape[0]
    status = STATUS_OK
    k_loops = system.aux_body.shape[0] - system.drv_coord.shape[0]
    if nl > 0:
        status = loop_rows(system.loop_int, system.loop_real, system.z, system.zd, stab, system.aux_body[:k_loops],
                           system.aux_coef[:k_loops], system.aux_rhs[:k_loops], system.aux_res[:k_loops])
    if system.drv_coord.shape[0] > 0:
        driver_rows(system.body_int, system.body_real, system.z, system.zd, system.drv_coord, system.drv_body,
                    system.u, system.offsets[1], stab, system.aux_body[k_loops:], system.aux_coef[k_loops:],
                    system.aux_rhs[k_loops:], system.aux_res[k_loops:])
    return status


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def _auxiliary_solve(system, blocks_complete):
    """Close the auxiliary rows on the tree solution in system.zdd, system.lam (``tree.add_auxiliary_rows``): by
    the sparse KKT factorisation where the model takes it and it finds the loop rows surely regular
    (``sparse_kkt.loop_solve``, the same numbers), else by the Schur complement. blocks_complete: the factor holds the
    joints' whole blocks already (``tree.tree_residuals`` ran at this z; otherwise it runs here, into system.xj,
    where the sparse path is taken)."""
    if system.kkt.use[0] != 0:
        if not blocks_complete:
            tree_residuals(system.body_int, system.body_real, system.row_start, system.z, system.zd, system.factor,
                           system.scratch, system.xj)
        if loop_solve(system.body_int, system.body_real, system.row_start, system.factor, system.aux_body,
                      system.aux_coef, system.aux_rhs, REGULAR_RCOND_MARGIN * system.settings[3],
                      REGULAR_ZONE_MARGIN * _zone(system), system.zdd, system.lam, system.info, system.kkt):
            return
    add_auxiliary_rows(system.body_int, system.body_real, system.row_start, system.factor, system.aux_body,
                       system.aux_coef, system.aux_rhs, system.settings[3], _zone(system), system.zdd, system.lam,
                       system.xb, system.xj, system.schur, system.info)


@njit
def system_rhs(inputs, key, system, t, y, dy):
    """dy = f(t, y): (zd, zdd, dissipated power, applied power); returns the status."""
    status = _load_state(inputs, key, system, t, y)
    if status != STATUS_OK:
        return status
    tau = system.tau
    u = system.u
    offsets = system.offsets
    qd = system.qd
    power_tau = 0.0
    for k in range(tau.shape[0]):
        tau[k] = system.tau_const[k] + (u[offsets[0] + k] if offsets[0] >= 0 else 0.0)
        power_tau += tau[k] * qd[k]
    energy = system.element_energy
    has_elements = system.elem_int.shape[0] > 0
    if has_elements:
        status = element_forces(system.body_int, system.body_real, system.elem_int, system.elem_real, u, system.q,
                                qd, system.ws, system.com, system.wrench, system.jforce, energy, system.per_element)
        if status != STATUS_OK:
            return status
        for k in range(tau.shape[0]):
            tau[k] += system.jforce[k]
    zdd = system.zdd
    lam = system.lam
    status = factor_and_solve(system.body_int, system.body_real, system.gravity, system.row_start, system.z,
                              system.zd, tau, system.wrench, system.stab, system.factor, system.scratch, zdd, lam,
                              system.power)
    if status != STATUS_OK:
        return status
    k_aux = system.aux_body.shape[0]
    if k_aux > 0:
        status = _auxiliary_rows(system, system.stab)
        if status != STATUS_OK:
            return status
        _auxiliary_solve(system, np.bool_(False))
        near, strong = _near_change_point(system)
        if near:
            status = _branch_dynamics(system, strong)
            if status != STATUS_OK:
                return status
    n = zdd.shape[0]
    _pack_rows(system.zd, zdd, dy)
    power_drive = 0.0  # a driver's multiplier is minus its joint force: its power is -lambda f'
    nd = system.drv_coord.shape[0]
    first = lam.shape[0] - nd
    for j in range(nd):
        power_drive -= lam[first + j] * u[offsets[1] + 3 * j + 1]
    if not system.settings[4] != 0.0:  # no joint state: tau is constant zero or its power came from the solver
        power_tau = system.power[0]
    dy[6 * n] = energy[1] if has_elements else 0.0
    dy[6 * n + 1] = power_tau + (energy[2] if has_elements else 0.0) + power_drive
    return STATUS_OK


@njit
def _joint_rates(body_int, row_start, factor, zd, lam):
    """lam[:tree rows] = -C_z zd, the joints' rows of the factor (their blocks complete: ``tree_residuals``) times
    zd (nbodies, 3); returns max |C_z zd|."""
    gap = 0.0
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        for r in range(row_start[i + 1] - row_start[i]):
            v = (factor[i, F_JC + 3 * r] * zd[i, 0] + factor[i, F_JC + 3 * r + 1] * zd[i, 1]
                 + factor[i, F_JC + 3 * r + 2] * zd[i, 2])
            if p >= 0:
                v += (factor[i, F_JP + 3 * r] * zd[p, 0] + factor[i, F_JP + 3 * r + 1] * zd[p, 1]
                      + factor[i, F_JP + 3 * r + 2] * zd[p, 2])
            lam[row_start[i] + r] = -v
            gap = max(gap, abs(v))
    return gap


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def _correction(system, rates):
    """The mass-orthogonal correction -M^-1 C_z^T (C_z M^-1 C_z^T)^+ r into system.zdd, for r the constraints'
    residuals (rates False) or their rates C_z zd - (0, f') (rates True; f' the drivers' rates), with the factor
    at system.z: the KKT system with the right-hand side (0, -r). Returns max |r|."""
    row_start = system.row_start
    zdd = system.zdd
    lam = system.lam
    zd = system.zd
    mt = row_start[zdd.shape[0]]
    gap = 0.0
    zdd[:, :] = 0.0
    if rates:
        gap = _joint_rates(system.body_int, row_start, system.factor, zd, lam)
    else:
        for r in range(mt):
            lam[r] = -system.xj[r]
            gap = max(gap, abs(system.xj[r]))
    tree_solve(system.body_int, row_start, system.factor, zdd, lam[:mt])
    k = system.aux_body.shape[0]
    if k > 0:
        k_loops = k - system.drv_coord.shape[0]
        for r in range(k):
            if rates:  # E zd, minus f' for a driver's row q_k' = f'
                v = 0.0
                for side in range(2):
                    body = system.aux_body[r, side]
                    if body >= 0:
                        for col in range(3):
                            v += system.aux_coef[r, 3 * side + col] * zd[body, col]
                if r >= k_loops:
                    v -= system.u[system.offsets[1] + 3 * (r - k_loops) + 1]
            else:
                v = system.aux_res[r]
            system.aux_rhs[r] = -v
            gap = max(gap, abs(v))
        _auxiliary_solve(system, np.bool_(True))
    return gap


@njit
def _factor_at(system):
    """Factor the KKT matrix at system.z (rows of the joints, the loops, the drivers), the tree residuals into
    system.xj; returns the status."""
    status = factor_and_solve(system.body_int, system.body_real, system.gravity, system.row_start, system.z,
                              system.zd, system.tau[:0], system.wrench[:0], system.stab[2:4], system.factor,
                              system.scratch, system.zdd, system.lam, system.power)
    if status != STATUS_OK:
        return status
    tree_residuals(system.body_int, system.body_real, system.row_start, system.z, system.zd, system.factor,
                   system.scratch, system.xj)
    if system.aux_body.shape[0] > 0:
        return _auxiliary_rows(system, system.stab[2:4])
    return STATUS_OK


@njit
def _residual_gap(system):
    """max |C| of the joints' rows (system.xj, as ``_factor_at`` leaves it) and the auxiliary rows (aux_res)."""
    gap = 0.0
    for r in range(system.row_start[-1]):
        gap = max(gap, abs(system.xj[r]))
    for r in range(system.aux_res.shape[0]):
        gap = max(gap, abs(system.aux_res[r]))
    return gap


@njit
def _close_positions(system):
    """The Gauss-Newton steps of ``project_state`` on system.z in place, the factor left at the final z; returns
    (status, max |C| at the final z). (system.xj is the correction's scratch after a step was computed: the gap
    is the correction's own measure of the residual, or ``_residual_gap`` after a fresh factorisation.)"""
    z = system.z
    zdd = system.zdd
    n = z.shape[0]
    tol = system.settings[1]
    last_step = math.inf
    stale = True
    gap = math.inf
    for _ in range(int(system.settings[2])):
        status = _factor_at(system)
        stale = False
        if status != STATUS_OK:
            return status, gap
        gap = _correction(system, np.bool_(False))
        size = 0.0
        for i in range(n):
            for col in range(3):
                size = max(size, abs(zdd[i, col]))
        if (gap <= tol and size <= tol) or not size < 0.5 * last_step:
            break
        last_step = size
        for i in range(n):
            for col in range(3):
                z[i, col] += zdd[i, col]
        stale = True
    if stale:
        status = _factor_at(system)
        return status, _residual_gap(system)
    return STATUS_OK, gap


@njit
def _near_change_point(system):
    """(near, strong) after an auxiliary solve (system.schur): near is True where the change-point treatment
    applies (a projected run with loops and no driver) and the Schur complement has weak eigenvalues (a change
    point near, ``_schur_counts``), strong the number of its eigenvalues above the zone (``_zone``)."""
    k = system.aux_body.shape[0]
    if system.settings[0] != 0.0 and k > 0 and system.drv_coord.shape[0] == 0:
        strong, weak = _schur_counts(system)
        return weak > 0, strong
    return False, 0


@njit
def _zone(system):
    """The zone of weak eigenvalues of the loops' Schur complement (relative to its largest) where projected runs
    follow the branch: the recursive layer's (``loops.BRANCH_ZONE``) where the branch is told in joint coordinates
    (``_branch``; the Schur complement is its J M^-1 J^T), else BRANCH_ZONE."""
    return JOINT_BRANCH_ZONE if system.settings[5] != 0.0 else BRANCH_ZONE


@njit
def _schur_counts(system):
    """(strong, weak) after an auxiliary solve: the eigenvalues of the symmetric Schur complement (system.schur)
    above ``_zone`` times the largest, and those in (REDUNDANT, zone] of it (a change point near), by inertias on
    its envelope (``loops.zone_counts``: banded for a row of loops); no count where the solve found it surely
    regular above the zone (system.info[1])."""
    schur = system.schur
    if system.info[1] != 0:
        return schur.shape[0], 0
    for r in range(schur.shape[0]):
        for c in range(schur.shape[1]):
            if not math.isfinite(schur[r, c]):
                return 0, 0
    return zone_counts(schur, _zone(system))


@njit
def _dense_jacobian(system, out):
    """out (tree rows + k, 3 nbodies) = C_z, the joints' rows and the auxiliary rows, at the factored z."""
    body_int = system.body_int
    factor = system.factor
    row_start = system.row_start
    n = system.z.shape[0]
    mt = row_start[n]
    out[:, :] = 0.0
    for i in range(n):
        p = body_int[i, PARENT]
        for r in range(row_start[i + 1] - row_start[i]):
            for col in range(3):
                out[row_start[i] + r, 3 * i + col] = factor[i, F_JC + 3 * r + col]
                if p >= 0:
                    out[row_start[i] + r, 3 * p + col] = factor[i, F_JP + 3 * r + col]
    for r in range(system.aux_body.shape[0]):
        for side in range(2):
            body = system.aux_body[r, side]
            if body >= 0:
                for col in range(3):
                    out[mt + r, 3 * body + col] += system.aux_coef[r, 3 * side + col]


@njit
def _branch_normals(system, strong_here):
    """(status, R, normals, curvature): the normal space (normals[:R], orthonormal rows of 3 nbodies columns) of
    the branch that (z, zd) follows through a change point, and curvature[:R] = -N (dP/dt) zd, as
    ``loops.branch_normals`` does in joint coordinates, here from the whole constraint Jacobian C_z (joints and
    loops) at the points z + c d zd / |zd| closed by ``_close_positions``; R = 0 when no branch can be told.
    system.z and zd are restored, the factor and the auxiliary rows are left at a displaced point. Allocates (only
    in the zone): normals (tree rows + k, 3 nbodies) and curvature (tree rows + k,)."""
    z = system.z
    zd = system.zd
    n = z.shape[0]
    mt = system.row_start[n]
    k = system.aux_body.shape[0]
    tol = system.settings[1]
    normals = np.zeros((mt + k, 3 * n))
    curvature = np.zeros(mt + k)
    start = z.copy()
    rates = zd.copy().reshape(3 * n)
    speed = 0.0
    for j in range(3 * n):
        speed += rates[j] * rates[j]
    speed = math.sqrt(speed)
    if not speed > 0.0:
        return STATUS_OK, 0, normals, curvature
    npts = BRANCH_OFFSETS.shape[0]
    rows = np.zeros((npts, mt + k, 3 * n))
    dense = np.empty((mt + k, 3 * n))
    rank = -1
    step = BRANCH_STEP
    status = STATUS_OK
    for attempt in range(BRANCH_ATTEMPTS):
        step = BRANCH_STEP * 3.0**attempt
        rank = -1
        for j in range(npts):
            for i in range(n):
                for col in range(3):
                    z[i, col] = start[i, col] + BRANCH_OFFSETS[j] * step * rates[3 * i + col] / speed
            status, gap = _close_positions(system)
            if status != STATUS_OK:
                rank = -1
                break
            if not gap <= 1e3 * tol:
                rank = -1
                break
            _auxiliary_solve(system, np.bool_(True))
            strong, weak = _schur_counts(system)
            if weak > 0 or strong <= strong_here or (j > 0 and mt + strong != rank):
                rank = -1
                break
            rank = mt + strong
            _dense_jacobian(system, dense)
            _, _, vt = np.linalg.svd(dense, full_matrices=False)
            rows[j, :rank] = vt[:rank]
        if rank > 0 or status != STATUS_OK:
            break
    z[:, :] = start
    if status != STATUS_OK or rank <= 0:
        return status, 0, normals, curvature
    branch_basis(rows, rank, rates, speed, step, normals, curvature)
    return STATUS_OK, rank, normals, curvature


@njit
def _joint_state(system):
    """(q, qd, driven, resp_drive): the joint state of system.z, system.zd (``joint_coordinates``; exact where the
    joints hold) and the empty held-joint arrays of the recursive loop layer's calls. Allocates (only in the zone)."""
    nq = system.q.shape[0]
    q = np.empty(nq)
    qd = np.empty(nq)
    joint_coordinates(system.body_int, system.body_real, system.z, system.zd, q, qd)
    return q, qd, np.zeros(0, dtype=np.uint8), np.zeros((system.loop_ws[1].shape[0], 0))


@njit
def _joint_branch_dynamics(system):
    """zdd on the branch through a change point, solved by the recursive loop layer at the joint state
    (``loops.branch_dynamics``: the branch told from displaced points, its tangent route where the branch has few
    degrees of freedom, the loop multipliers fitted to the branch's constraint force), then written as absolute
    accelerations (``loops.body_accelerations`` at q, qd). The two are the same equations: with every joint a set
    of rows on z (revolute, prismatic, fixed; ``settings[5]``) z'' = (dz/dq) qdd + (z'' at qdd = 0), E H^-1 E^T
    is the recursive layer's J M^-1 J^T, and the tree's joints, which curve the branch in absolute coordinates,
    add no extrapolation error in joint coordinates (a row of parallelograms: straight there, every crank at one
    angle). Each piece keeps to the row's structure: O(n) an evaluation for a row of n parallelograms where the
    branch's normal rows on z and their Schur complement took O(n^3). The loops' rows of lam take the fitted
    multipliers; the joints' rows keep those of the filtered solve (the time loop reports the loops' only).
    Returns (status, done): done False where no branch could be told (the filtered solution stays)."""
    body_int = system.body_int
    acc, phi, phid, jac, gamma, weights, resp, zeros, _, pattern = system.loop_ws
    q, qd, _, _ = _joint_state(system)
    qdd = np.empty(q.shape[0])
    fitted = np.empty(phi.shape[0])
    settings = system.settings
    status, done = branch_dynamics(body_int, system.body_real, system.gravity, system.loop_int, system.loop_real,
                                   pattern, q, qd, system.tau, system.wrench, system.ws, system.com, acc, qdd, phi,
                                   phid, jac, gamma, weights, resp, zeros, system.stab, settings[7], fitted,
                                   (JOINT_BRANCH_ZONE, settings[1], settings[6]))
    if status != STATUS_OK or not done:
        return status, done
    status = com_kinematics(body_int, system.body_real, q, qd, system.ws, system.com)  # pass 1 at (q, qd) again
    if status != STATUS_OK:
        return status, True
    body_accelerations(body_int, system.ws, qdd, system.zdd)
    first = system.row_start[body_int.shape[0]]
    for r in range(fitted.shape[0]):
        system.lam[first + r] = fitted[r]
    return STATUS_OK, True


@njit
def _joint_branch_velocity(system):
    """The velocity correction of ``project_state`` near a change point on the joint route, into system.zdd: zd
    projected mass-orthogonally onto the joints' rows (a tree solve with the factor at z that the position closure
    left), then, at the joint state, onto the tangent of
    the branch it follows by the recursive loop layer (``loops.branch_velocity``; M-orthogonal in joint coordinates
    is mass-orthogonal among the motions the joints allow), written back as absolute rates (``com_kinematics``).
    Returns (status, done): done False where no branch could be told (zdd undefined)."""
    body_int = system.body_int
    zd = system.zd
    zdd = system.zdd
    n = zd.shape[0]
    mt = system.row_start[n]
    _joint_rates(body_int, system.row_start, system.factor, zd, system.lam)
    zdd[:, :] = 0.0
    tree_solve(body_int, system.row_start, system.factor, zdd, system.lam[:mt])
    for i in range(n):
        for col in range(3):
            zd[i, col] += zdd[i, col]
    q, qd, driven, resp_drive = _joint_state(system)
    for i in range(n):  # zd back: zdd is the correction
        for col in range(3):
            zd[i, col] -= zdd[i, col]
    acc, phi, phid, jac, gamma, weights, resp, zeros, no_gravity, pattern = system.loop_ws
    status, done = branch_velocity(body_int, system.body_real, system.loop_int, system.loop_real, pattern, q, qd,
                                   driven, system.ws, system.com, acc, phi, phid, jac, gamma, weights, resp, resp_drive,
                                   zeros, no_gravity, system.settings[1], system.settings[6], JOINT_BRANCH_ZONE)
    if status != STATUS_OK or not done:
        return status, done
    status = com_kinematics(body_int, system.body_real, q, qd, system.ws, system.com)
    if status != STATUS_OK:
        return status, True
    com = system.com
    ws = system.ws
    for i in range(n):
        zdd[i, 0] = com[i, 2] - zd[i, 0]
        zdd[i, 1] = com[i, 3] - zd[i, 1]
        zdd[i, 2] = ws[i, OM] - zd[i, 2]
    return STATUS_OK, True


@njit
def _branch_responses(system, normals, rank, resp, tree_resp):
    """resp[r] = the tree-constrained response H^-1 N_r^T (z part, (3 nbodies,)) of each branch row and
    tree_resp[r] its joint multipliers, by tree solves with the factor at z; returns the Schur complement
    N H^-1 N^T (rank, rank)."""
    n = system.z.shape[0]
    mt = system.row_start[n]
    xb = system.xb
    xj = system.xj
    for r in range(rank):
        for i in range(n):
            for col in range(3):
                xb[i, col] = normals[r, 3 * i + col]
        xj[:] = 0.0
        tree_solve(system.body_int, system.row_start, system.factor, xb, xj)
        for i in range(n):
            for col in range(3):
                resp[r, 3 * i + col] = xb[i, col]
        for c in range(mt):
            tree_resp[r, c] = xj[c]
    schur = np.empty((rank, rank))
    for r in range(rank):
        for c in range(r + 1):
            v = 0.0
            for j in range(3 * n):
                v += 0.5 * (normals[r, j] * resp[c, j] + normals[c, j] * resp[r, j])
            schur[r, c] = v
            schur[c, r] = v
    return schur


@njit
def _branch_correction(system, normals, rank, rhs, lam_rows):
    """system.zdd -= H^-1 N^T mu with (N H^-1 N^T) mu = rhs (the filtered solve; N = normals[:rank]), and the first
    lam_rows joint multipliers likewise: the tree-constrained correction onto the branch of ``_branch_velocity``
    (lam_rows 0) and ``_branch_dynamics`` (all tree rows). Returns the status."""
    zdd = system.zdd
    lam = system.lam
    n = zdd.shape[0]
    resp = np.empty((rank, 3 * n))
    tree_resp = np.empty((rank, system.row_start[n]))
    schur = _branch_responses(system, normals, rank, resp, tree_resp)
    mu = np.empty(rank)
    if filtered_solve(schur, rhs, BRANCH_SOLVE_RCOND, mu) < 0:
        return STATUS_NONFINITE_STATE
    for r in range(rank):
        for i in range(n):
            for col in range(3):
                zdd[i, col] -= mu[r] * resp[r, 3 * i + col]
        for c in range(lam_rows):
            lam[c] -= mu[r] * tree_resp[r, c]
    return STATUS_OK


@njit
def _branch_velocity(system, strong_here):
    """The velocity correction of ``project_state`` near a change point, into system.zdd: the mass-orthogonal
    projection of zd onto the tangent of the branch it follows (``_branch_normals``): first onto the joints'
    constraints (a tree solve), then along H^-1 N^T onto N zd = 0 (the tree-constrained responses keep the
    joints). On the joint route (``settings[5]``) the recursive loop layer's (``_joint_branch_velocity``). Leaves
    the ordinary correction where no branch can be told. Returns the status."""
    if system.settings[5] != 0.0:
        status, done = _joint_branch_velocity(system)
        if status == STATUS_OK and not done:
            _correction(system, np.bool_(True))
        return status
    zd = system.zd
    zdd = system.zdd
    n = zd.shape[0]
    mt = system.row_start[n]
    status, rank, normals, _ = _branch_normals(system, strong_here)
    if status != STATUS_OK:
        return status
    status = _factor_at(system)
    if status != STATUS_OK:
        return status
    if rank == 0:
        _correction(system, np.bool_(True))
        return STATUS_OK
    lam = system.lam
    # the joints' rows: lam = -C_z zd, then the tree solve's correction
    _joint_rates(system.body_int, system.row_start, system.factor, zd, lam)
    zdd[:, :] = 0.0
    tree_solve(system.body_int, system.row_start, system.factor, zdd, lam[:mt])
    rate = np.empty(rank)
    for r in range(rank):
        v = 0.0
        for i in range(n):
            for col in range(3):
                v += normals[r, 3 * i + col] * (zd[i, col] + zdd[i, col])
        rate[r] = v
    return _branch_correction(system, normals, rank, rate, np.int64(0))  # int64: one compile


@njit
def _branch_dynamics(system, strong_here):
    """zdd (and the joints' multipliers) on the branch through a change point, as ``loops.constrained_dynamics``
    does: the tree solution zdd0 at z (system.tau, system.wrench), then the correction -H^-1 N^T mu with
    (N H^-1 N^T) mu = N zdd0 - c (``_branch_normals``; the tree-constrained responses keep the joints' rows).
    On the joint route (``settings[5]``) the recursive loop layer's (``_joint_branch_dynamics``). Where no branch
    can be told the filtered solution stays. Returns the status."""
    if system.settings[5] != 0.0:
        status, _ = _joint_branch_dynamics(system)
        return status
    z = system.z
    n = z.shape[0]
    mt = system.row_start[n]
    k = system.aux_body.shape[0]
    saved_zdd = system.zdd.copy()
    saved_lam = system.lam.copy()
    saved_power = system.power[0]
    status, rank, normals, curvature = _branch_normals(system, strong_here)
    if status != STATUS_OK:
        return status
    if rank == 0:
        system.zdd[:, :] = saved_zdd
        system.lam[:] = saved_lam
        system.power[0] = saved_power
        return STATUS_OK
    zdd = system.zdd
    lam = system.lam
    status = factor_and_solve(system.body_int, system.body_real, system.gravity, system.row_start, z, system.zd,
                              system.tau, system.wrench, system.stab, system.factor, system.scratch, zdd, lam,
                              system.power)
    if status != STATUS_OK:
        return status
    for r in range(k):  # the loop rows' multipliers: the filtered ones (not used by the time loop)
        lam[mt + r] = saved_lam[mt + r]
    rhs = np.empty(rank)
    for r in range(rank):
        v = 0.0
        for i in range(n):
            for col in range(3):
                v += normals[r, 3 * i + col] * zdd[i, col]
        rhs[r] = v - curvature[r]
    return _branch_correction(system, normals, rank, rhs, mt)


@njit
def project_state(inputs, key, system, t, y):
    """Project y onto C(z) = 0 (joints, loops, drivers at t) and C_z zd = 0 in place (``recursive_mbd.dynamics.augmented
    .project``): Gauss-Newton steps dz = -M^-1 C_z^T (C_z M^-1 C_z^T)^+ C until the step and |C| are below the
    tolerance or the steps stop contracting (a singular position), then the velocity correction. Returns the
    status."""
    status = _load_state(inputs, key, system, t, y)
    if status != STATUS_OK:
        return status
    status, _ = _close_positions(system)
    if status != STATUS_OK:
        return status
    _correction(system, np.bool_(True))
    near, strong = _near_change_point(system)
    if near:
        status = _branch_velocity(system, strong)
        if status != STATUS_OK:
            return status
    zd = system.zd
    for i in range(zd.shape[0]):
        for col in range(3):
            zd[i, col] += system.zdd[i, col]
    _pack_rows(system.z, zd, y)
    return STATUS_OK


@njit
def constraint_gap(inputs, key, system, t, y, out):
    """out[0] = max |C| of the joints', loops' and drivers' constraints at (t, y); returns the status."""
    status = _load_state(inputs, key, system, t, y)
    if status == STATUS_OK:
        status = _factor_at(system)
    out[0] = _residual_gap(system)
    return status


@njit
def projects(system):
    """True when the run projects onto the constraints (stabilization "projection")."""
    return system.settings[0] != 0.0


@overload(formulation.rhs, jit_options={"cache": True, "_nrt": True})
def _rhs(inputs, key, system, t, y, dy):
    if _is_augmented(system):
        return lambda inputs, key, system, t, y, dy: system_rhs(inputs, key, system, t, y, dy)  # noqa: PLW0108
    return None


@overload(formulation.project, jit_options={"cache": True, "_nrt": True})
def _project(inputs, key, system, t, y):
    if _is_augmented(system):
        return lambda inputs, key, system, t, y: project_state(inputs, key, system, t, y)  # noqa: PLW0108
    return None


@overload(formulation.projects, jit_options={"cache": True, "_nrt": True})
def _projects(system):
    if _is_augmented(system):
        return lambda system: projects(system)  # noqa: PLW0108
    return None


@overload(formulation.integrated_size, jit_options={"cache": True, "_nrt": True})
def _integrated_size(system, n):
    if _is_augmented(system):
        return lambda system, n: n  # every entry of y is integrated
    return None
