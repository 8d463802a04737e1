"""The augmented absolute-coordinate formulation (seed 000) as a time loop's system.

``AugmentedSystem`` holds the model's packed arrays, the run's inputs and the tree solver's preallocated
workspace (``augmented``); the functions below implement the interface of ``formulation`` for it. The integrated
state is y = (z, zd, W_dissipated, W_applied), shape (6 nbodies + 2,): the absolute coordinates (x, y, theta) of
every centre of mass and their rates, row by row, then the work terms. Each evaluation assembles the joints' rows
and solves the KKT system of seed 000 eqs. 10, 13 (Baumgarte's terms, eqs. 15-17) by the tree-ordered elimination
(``augmented.factor_and_solve``); loops and drivers (q_k(z) = f(t), a rheonomic row) close it as auxiliary rows
(``augmented.add_auxiliary_rows``). The projection (seed 000's alternative to Baumgarte) takes mass-orthogonal
Gauss-Newton steps onto C(z) = 0 and then removes C_z zd, each a solve with the same factor.
``recursive_mbd.augmented`` builds the system.
"""

import math
from collections import namedtuple

import numba
from numba.core import types
from numba.extending import overload

from ..joints import PRISMATIC
from . import formulation
from .augmented import (
    F_JC,
    F_JP,
    add_auxiliary_rows,
    factor_and_solve,
    joint_coordinates,
    loop_rows,
    tree_residuals,
    tree_solve,
)
from .elements import element_forces
from .layout import ANGLE, AXX, COX, JTYPE, PARENT, PPX, STATUS_OK

njit = numba.njit(cache=True, error_model="numpy")

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
    # and the scratch of add_auxiliary_rows: xb (nbodies, 3), xj (tree rows), schur (k, k), info (1,)
    "aux_body", "aux_coef", "aux_rhs", "aux_res", "xb", "xj", "schur", "info",
    # settings (5,) = (project: on, tol, max_iter, rcond of the auxiliary solve, joint state needed: 1/0)
    "settings",
])


def _is_augmented(system):
    return isinstance(system, types.BaseNamedTuple) and system.instance_class is AugmentedSystem


@njit
def driver_rows(body_int, body_real, z, zd, drv_coord, drv_body, u, first_slot, stab, aux_body, aux_coef, aux_rhs,
                aux_res):
    """Row q_k(z) - f(t) = 0 of each driver (f, f', f'' in u from ``first_slot`` on) as auxiliary rows: the
    coefficients are d q_k / d z on the joint's child and parent (as ``recursive_mbd.augmented.joint_jacobian``),
    aux_rhs = f'' - (q_k'' at z'' = 0) - 2 alpha (q_k' - f') - beta^2 (q_k - f), aux_res = q_k - f."""
    alpha = stab[0]
    beta = stab[1]
    for j in range(drv_coord.shape[0]):
        i = drv_body[j]
        p = body_int[i, PARENT]
        slot = first_slot + 3 * j
        f = u[slot]
        f_rate = u[slot + 1]
        f_acc = u[slot + 2]
        thp = z[p, 2] if p >= 0 else 0.0
        omp = zd[p, 2] if p >= 0 else 0.0
        aux_body[j, 0] = i
        aux_body[j, 1] = p
        if body_int[i, JTYPE] != PRISMATIC:  # revolute: q = theta_c - theta_p - angle
            value = z[i, 2] - thp - body_real[i, ANGLE]
            rate = zd[i, 2] - omp
            bias = 0.0
            for col in range(6):
                aux_coef[j, col] = 0.0
            aux_coef[j, 2] = 1.0
            aux_coef[j, 5] = -1.0
        else:  # prismatic: q = u . D, D = P_c - P_p, u the axis in ground axes
            th = z[i, 2]
            om = zd[i, 2]
            c = math.cos(th)
            s = math.sin(th)
            cox = -body_real[i, COX]
            coy = -body_real[i, COX + 1]
            acx = c * cox - s * coy
            acy = s * cox + c * coy
            cp = math.cos(thp)
            sp = math.sin(thp)
            apx = cp * body_real[i, PPX] - sp * body_real[i, PPX + 1]
            apy = sp * body_real[i, PPX] + cp * body_real[i, PPX + 1]
            cpx = z[p, 0] if p >= 0 else 0.0
            cpy = z[p, 1] if p >= 0 else 0.0
            vpx = zd[p, 0] if p >= 0 else 0.0
            vpy = zd[p, 1] if p >= 0 else 0.0
            gx = z[i, 0] + acx - cpx - apx
            gy = z[i, 1] + acy - cpy - apy
            rx = zd[i, 0] - om * acy - vpx + omp * apy  # D'
            ry = zd[i, 1] + om * acx - vpy - omp * apx
            ux = cp * body_real[i, AXX] - sp * body_real[i, AXX + 1]
            uy = sp * body_real[i, AXX] + cp * body_real[i, AXX + 1]
            value = ux * gx + uy * gy
            rate = ux * rx + uy * ry + omp * (-uy * gx + ux * gy)
            curve_x = -acx * om * om + apx * omp * omp  # D'' at z'' = 0
            curve_y = -acy * om * om + apy * omp * omp
            bias = -omp * omp * value + 2.0 * omp * (-uy * rx + ux * ry) + ux * curve_x + uy * curve_y
            aux_coef[j, 0] = ux
            aux_coef[j, 1] = uy
            aux_coef[j, 2] = -ux * acy + uy * acx  # u . perp(arm_c)
            aux_coef[j, 3] = -ux
            aux_coef[j, 4] = -uy
            aux_coef[j, 5] = (-uy * gx + ux * gy) - (-ux * apy + uy * apx)  # perp(u) . D - u . perp(arm_p)
        aux_res[j] = value - f
        aux_rhs[j] = f_acc - bias - 2.0 * alpha * (rate - f_rate) - beta * beta * aux_res[j]


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
        add_auxiliary_rows(system.body_int, system.body_real, system.row_start, system.factor, system.aux_body,
                           system.aux_coef, system.aux_rhs, system.settings[3], zdd, lam, system.xb, system.xj,
                           system.schur, system.info)
    n = zdd.shape[0]
    for i in range(n):
        for col in range(3):
            dy[3 * i + col] = system.zd[i, col]
            dy[3 * n + 3 * i + col] = zdd[i, col]
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
def _correction(system, rates):
    """The mass-orthogonal correction -M^-1 C_z^T (C_z M^-1 C_z^T)^+ r into system.zdd, for r the constraints'
    residuals (rates False) or their rates C_z zd - (0, f') (rates True; f' the drivers' rates), with the factor
    at system.z: the KKT system with the right-hand side (0, -r). Returns max |r|."""
    body_int = system.body_int
    factor = system.factor
    row_start = system.row_start
    zdd = system.zdd
    lam = system.lam
    zd = system.zd
    n = zdd.shape[0]
    mt = row_start[n]
    gap = 0.0
    zdd[:, :] = 0.0
    if rates:
        for i in range(n):
            p = body_int[i, PARENT]
            for r in range(row_start[i + 1] - row_start[i]):
                v = (factor[i, F_JC + 3 * r] * zd[i, 0] + factor[i, F_JC + 3 * r + 1] * zd[i, 1]
                     + factor[i, F_JC + 3 * r + 2] * zd[i, 2])
                if p >= 0:
                    v += (factor[i, F_JP + 3 * r] * zd[p, 0] + factor[i, F_JP + 3 * r + 1] * zd[p, 1]
                          + factor[i, F_JP + 3 * r + 2] * zd[p, 2])
                lam[row_start[i] + r] = -v
                gap = max(gap, abs(v))
    else:
        for r in range(mt):
            lam[r] = -system.xj[r]
            gap = max(gap, abs(system.xj[r]))
    tree_solve(body_int, row_start, factor, zdd, lam[:mt])
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
        add_auxiliary_rows(body_int, system.body_real, row_start, factor, system.aux_body, system.aux_coef,
                           system.aux_rhs, system.settings[3], zdd, lam, system.xb, system.xj, system.schur,
                           system.info)
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
def project_state(inputs, key, system, t, y):
    """Project y onto C(z) = 0 (joints, loops, drivers at t) and C_z zd = 0 in place (``recursive_mbd.augmented
    .project``): Gauss-Newton steps dz = -M^-1 C_z^T (C_z M^-1 C_z^T)^+ C until the step and |C| are below the
    tolerance or the steps stop contracting (a singular position), then the velocity correction. Returns the
    status."""
    status = _load_state(inputs, key, system, t, y)
    if status != STATUS_OK:
        return status
    z = system.z
    zd = system.zd
    zdd = system.zdd
    n = z.shape[0]
    tol = system.settings[1]
    last_step = math.inf
    stale = True
    for _ in range(int(system.settings[2])):
        status = _factor_at(system)
        stale = False
        if status != STATUS_OK:
            return status
        gap = _correction(system, False)
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
        if status != STATUS_OK:
            return status
    _correction(system, True)
    for i in range(n):
        for col in range(3):
            zd[i, col] += zdd[i, col]
            y[3 * i + col] = z[i, col]
            y[3 * n + 3 * i + col] = zd[i, col]
    return STATUS_OK


@njit
def constraint_gap(inputs, key, system, t, y, out):
    """out[0] = max |C| of the joints', loops' and drivers' constraints at (t, y); returns the status."""
    status = _load_state(inputs, key, system, t, y)
    if status == STATUS_OK:
        status = _factor_at(system)
    gap = 0.0
    for r in range(system.row_start[-1]):
        gap = max(gap, abs(system.xj[r]))
    for r in range(system.aux_res.shape[0]):
        gap = max(gap, abs(system.aux_res[r]))
    out[0] = gap
    return status


@njit
def projects(system):
    """True when the run projects onto the constraints (stabilization "projection")."""
    return system.settings[0] != 0.0


@overload(formulation.rhs, jit_options={"cache": True})
def _rhs(inputs, key, system, t, y, dy):
    if _is_augmented(system):
        return lambda inputs, key, system, t, y, dy: system_rhs(inputs, key, system, t, y, dy)  # noqa: PLW0108
    return None


@overload(formulation.project, jit_options={"cache": True})
def _project(inputs, key, system, t, y):
    if _is_augmented(system):
        return lambda inputs, key, system, t, y: project_state(inputs, key, system, t, y)  # noqa: PLW0108
    return None


@overload(formulation.projects, jit_options={"cache": True})
def _projects(system):
    if _is_augmented(system):
        return lambda system: projects(system)  # noqa: PLW0108
    return None
