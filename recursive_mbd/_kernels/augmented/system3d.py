"""The augmented absolute-coordinate formulation of a spatial model (``Model3D``) as a time loop's system.

``Augmented3DSystem`` holds the model's packed arrays, the run's inputs and the tree solve's workspace
(``spatial3d``); the functions below implement the interface of ``formulation`` for it. The integrated state is
y = (z (7 nbodies), zd (6 nbodies), W_dissipated, W_applied): every body's centre of mass and quaternion (w, x, y, z),
then its centre-of-mass velocity and angular velocity omega (ground axes), row by row, then the work terms. Its
derivative: c' = c-dot, quat' = 1/2 (0, omega) (x) quat (omega in ground axes: left multiplication), zd' from the
KKT solve (``spatial3d.factor_and_solve``, Baumgarte's terms with stab = (alpha, beta); a tree of revolute and
spherical joints without loops or drivers: ``rotary3d.factor_and_solve``, the same solution). After every accepted step
the projection renormalises each quaternion and, with stabilization "projection", moves (z, zd) onto C(z) = 0 and
C_v zd = 0: mass-orthogonal Gauss-Newton steps dz = -H^-1 (0, C) with the tree factor (the position part of dz is
(dc, dtheta), dtheta a rotation vector in ground axes applied as exp(dtheta) (x) quat), then the velocity
correction -H^-1 (0, C_v zd). Closed loops add their rows (``spatial3d.loop_rows``) to every solve as auxiliary
rows on the tree factor (``spatial3d.close_loops``): in the dynamics with Baumgarte's terms, in the projection with
their residuals and rates as the joints' (the position steps' multipliers filtered at POSITION_RCOND, the others at
FILTER_RCOND, as the recursive loop layer's). Drivers add one auxiliary row each after the loops'
(``spatial3d.driver_rows``: q_j(z) - f(t) = 0 with f, f', f'' from the inputs at t), in the dynamics and in the
projection (their velocity targets f'); their multipliers are minus the driving forces (``drive``), whose power
-mu f' joins the applied work. ``recursive_mbd.dynamics.augmented3d.TimeLoop3D`` builds the system.
"""

import math
from collections import namedtuple

import numpy as np
from numba.core import types
from numba.extending import overload

from ..layout import STATUS_LOOPS_OPEN, STATUS_NONFINITE_STATE, STATUS_OK
from ..spatial.layout import JTYPE, LROW, PARENT, VIDX
from ..timeloops import formulation
from . import rotary3d
from .spatial3d import ROWS_PER_JOINT, close_loops, driver_rows, factor_and_solve, loop_rows, njit, tree_solve

Augmented3DSystem = namedtuple("Augmented3DSystem", [
    "body_int", "body_real", "gravity",  # the packed Model3D
    "row_start",  # (nbodies + 1,) int64: first row of each body's joint
    "tau_const",  # (nv,) constant joint forces
    "tau_offset",  # (1,) int64: slot of tau in u, -1 when tau is constant
    "u",  # (ninputs,) the input vector the input callback fills
    "q", "v", "tau",  # (nq,), (nv,), (nv,): the joint state handed to the input callback (zero: tau(t) only), tau
    "z", "zd", "zdd",  # (nbodies, 7), (nbodies, 6), (nbodies, 6): the absolute state of an evaluation
    "lam",  # (rows,) the joints' multipliers
    "dinv", "sinv", "jc", "jp", "wreg", "res", "gam",  # the tree solve's factor (``spatial3d.factor_and_solve``)
    "no_wrench", "stab", "no_stab", "power",  # (0, 6); (alpha, beta); (0, 0); (1,)
    "xb", "xj",  # (nbodies, 6), (rows,) the projection's right-hand sides and solutions
    # the loops (k rows; none for a tree): the packed loops, their auxiliary rows (``spatial3d.loop_rows``): bodies
    # (k, 2), coefficients (k, 12), right-hand side, residual (k,), the loop layer's weights (k, 12), scratch point
    # (40,), axes (9,); the scratch of ``spatial3d.close_loops``: yb (nbodies, 6), yj (rows,), schur (k, k); and
    # the loops' multipliers mu (k,)
    "loop_int", "loop_real", "aux_body", "aux_coef", "aux_rhs", "aux_res", "aux_weights", "point", "axes", "yb",
    "yj", "schur", "mu",
    # the drivers (nd rows after the loops' in the auxiliary arrays and mu): (nd, 2) int64 = (driven body, slot of
    # its f in u); drive (nv,): each driver's force or torque at its joint's rate (zero elsewhere)
    "drv", "drive",
    "settings",  # (5,) = (project: on, tolerance, max iterations, rcond of the dynamics, of the position steps)
    # a tree of revolute and spherical joints without loops or drivers: (nbodies, rotary3d.W) the records of its
    # specialised tree solve (``rotary3d.factor_and_solve``), which the dynamics take; else (0, W)
    "rotary",
])


def _is_augmented3d(system):
    return isinstance(system, types.BaseNamedTuple) and system.instance_class is Augmented3DSystem


@njit
def _load_state(inputs, key, system, t, y):
    """(z, zd) from y, each quaternion normalised (a zero or non-finite one: STATUS_NONFINITE_STATE), and the inputs
    at t. Returns the status."""
    z = system.z
    zd = system.zd
    n = z.shape[0]
    for i in range(n):
        for c in range(7):
            z[i, c] = y[7 * i + c]
        for c in range(6):
            zd[i, c] = y[7 * n + 6 * i + c]
        norm = math.sqrt(z[i, 3] ** 2 + z[i, 4] ** 2 + z[i, 5] ** 2 + z[i, 6] ** 2)
        if not (norm > 0.0 and math.isfinite(norm)):
            return STATUS_NONFINITE_STATE | (i << 4)
        for c in range(3, 7):
            z[i, c] /= norm
    return inputs(key, t, system.q, system.v, system.u)


@njit
def system_rhs(inputs, key, system, t, y, dy):
    """dy = f(t, y): (c', quat', zdd, dissipated power, applied power); returns the status."""
    status = _load_state(inputs, key, system, t, y)
    if status != STATUS_OK:
        return status
    tau = system.tau
    offset = system.tau_offset[0]
    for k in range(tau.shape[0]):
        tau[k] = system.tau_const[k] + (system.u[offset + k] if offset >= 0 else 0.0)
    zdd = system.zdd
    if system.rotary.shape[0] > 0:
        status = rotary3d.factor_and_solve(system.body_int, system.body_real, system.gravity, system.row_start,
                                           system.z, system.zd, tau, system.stab, system.rotary, zdd, system.lam,
                                           system.power)
    else:
        status = factor_and_solve(system.body_int, system.body_real, system.gravity, system.row_start, system.z,
                                  system.zd, tau, system.no_wrench, system.stab, system.dinv, system.sinv, system.jc,
                                  system.jp, system.wreg, system.res, system.gam, zdd, system.lam, system.power)
    if status != STATUS_OK:
        return status
    power_drive = 0.0  # a driver's multiplier is minus its force: its power is -mu f'
    if system.aux_body.shape[0] > 0:
        status = _loop_rows(system, system.stab)
        if status != STATUS_OK:
            return status
        if _close(system, system.settings[3], zdd, system.lam) < 0:
            return STATUS_NONFINITE_STATE
        drv = system.drv
        first = system.mu.shape[0] - drv.shape[0]
        for j in range(drv.shape[0]):
            force = -system.mu[first + j]
            system.drive[system.body_int[drv[j, 0], VIDX]] = force
            power_drive += force * system.u[drv[j, 1] + 1]
    n = zdd.shape[0]
    zd = system.zd
    for i in range(n):
        w = y[7 * i + 3]  # the integrated quaternion, as it is: its rate keeps its norm to first order
        x = y[7 * i + 4]
        s = y[7 * i + 5]
        r = y[7 * i + 6]
        ox = zd[i, 3]
        oy = zd[i, 4]
        oz = zd[i, 5]
        for c in range(3):
            dy[7 * i + c] = zd[i, c]
        dy[7 * i + 3] = -0.5 * (ox * x + oy * s + oz * r)
        dy[7 * i + 4] = 0.5 * (w * ox + oy * r - oz * s)
        dy[7 * i + 5] = 0.5 * (w * oy + oz * x - ox * r)
        dy[7 * i + 6] = 0.5 * (w * oz + ox * s - oy * x)
        for c in range(6):
            dy[7 * n + 6 * i + c] = zdd[i, c]
    dy[13 * n] = 0.0
    dy[13 * n + 1] = system.power[0] + power_drive
    return STATUS_OK


@njit
def _factor_at(system):
    """Factor the KKT matrix at system.z (the residuals C into system.res); returns the status."""
    return factor_and_solve(system.body_int, system.body_real, system.gravity, system.row_start, system.z, system.zd,
                            system.tau[:0], system.no_wrench, system.no_stab, system.dinv, system.sinv, system.jc,
                            system.jp, system.wreg, system.res, system.gam, system.zdd, system.lam, system.power)


@njit
def _loop_rows(system, stab):
    """The loops' and the drivers' auxiliary rows at (system.z, system.zd) and the inputs in system.u, with
    Baumgarte's stab; returns the status."""
    k = system.aux_body.shape[0] - system.drv.shape[0]  # the loops' rows, then the drivers'
    if system.drv.shape[0] > 0:
        driver_rows(system.body_int, system.body_real, system.z, system.zd, system.drv, system.u, stab,
                    system.aux_body[k:], system.aux_coef[k:], system.aux_rhs[k:], system.aux_res[k:])
    if system.loop_int.shape[0] == 0:
        return STATUS_OK
    return loop_rows(system.body_real, system.loop_int, system.loop_real, system.z, system.zd, stab, system.point,
                     system.axes, system.aux_weights, system.aux_body[:k], system.aux_coef[:k], system.aux_rhs[:k],
                     system.aux_res[:k])


@njit
def _close(system, rcond, xb, xj):
    """The loops' rows E x = aux_rhs closed on the tree solution (xb, xj) in place, their multipliers into
    system.mu; returns the rank (-1: not finite)."""
    return close_loops(system.body_int, system.row_start, system.dinv, system.sinv, system.jc, system.jp,
                       system.wreg, system.aux_body, system.aux_coef, system.aux_rhs, rcond, xb, xj, system.mu,
                       system.yb, system.yj, system.schur)


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def _loop_correction(system, rates):
    """The loops' and the drivers' part of ``_correction``: their rows at system.z with the targets -C (rates False)
    or -(E zd - f') (True; f' the drivers' rates, zero for a loop's row), closed on the joints' correction in
    system.xb, xj; returns (max |C| or |E zd - f'|, the status)."""
    status = _loop_rows(system, system.no_stab)
    if status != STATUS_OK:
        return 0.0, status
    zd = system.zd
    gap = 0.0
    first = system.aux_rhs.shape[0] - system.drv.shape[0]  # the first driver's row
    for r in range(system.aux_rhs.shape[0]):
        v = system.aux_res[r]
        if rates:
            v = -system.u[system.drv[r - first, 1] + 1] if r >= first else 0.0
            for side in range(2):
                body = system.aux_body[r, side]
                if body >= 0:
                    for c in range(6):
                        v += system.aux_coef[r, 6 * side + c] * zd[body, c]
        system.aux_rhs[r] = -v
        gap = max(gap, abs(v))
    rcond = system.settings[3] if rates else system.settings[4]
    if _close(system, rcond, system.xb, system.xj) < 0:
        return gap, STATUS_NONFINITE_STATE
    return gap, STATUS_OK


@njit
def _loops_closed(system, limit):
    """STATUS_LOOPS_OPEN (index: the loop with the largest gap) when a loop's residual in system.aux_res exceeds
    ``limit`` after the projection (no closed configuration near, as the recursive route's ``project_loops``)."""
    worst = 0.0
    worst_row = 0
    for r in range(system.aux_res.shape[0] - system.drv.shape[0]):  # the loops' rows
        if abs(system.aux_res[r]) > worst:
            worst = abs(system.aux_res[r])
            worst_row = r
    if worst <= limit:
        return STATUS_OK
    loop_int = system.loop_int
    lp = 0
    while lp + 1 < loop_int.shape[0] and loop_int[lp + 1, LROW] <= worst_row:
        lp += 1
    return STATUS_LOOPS_OPEN | (lp << 4)


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def _correction(system, rates):
    """xb = -H^-1 (0, r) (its body part), r the joints' residuals C (rates False) or C_v zd (True), with the factor
    at system.z; returns max |r|."""
    body_int = system.body_int
    row_start = system.row_start
    xb = system.xb
    xj = system.xj
    zd = system.zd
    gap = 0.0
    n = xb.shape[0]
    for i in range(n):
        p = body_int[i, PARENT]
        for c in range(6):
            xb[i, c] = 0.0
        for r in range(ROWS_PER_JOINT[body_int[i, JTYPE]]):
            if rates:
                v = 0.0
                for c in range(6):
                    v += system.jc[i, r, c] * zd[i, c]
                    if p >= 0:
                        v += system.jp[i, r, c] * zd[p, c]
            else:
                v = system.res[i, r]
            xj[row_start[i] + r] = -v
            gap = max(gap, abs(v))
    tree_solve(body_int, row_start, system.dinv, system.sinv, system.jc, system.jp, system.wreg, xb, xj)
    return gap


@njit
def _turn(z, i, dx, dy, dz):
    """z[i, 3:7] = exp(d) (x) quat for the rotation vector d in ground axes, normalised."""
    angle = math.sqrt(dx * dx + dy * dy + dz * dz)
    half = 0.5 * angle
    c = math.cos(half)
    s = 0.5 if angle == 0.0 else math.sin(half) / angle
    ex = s * dx
    ey = s * dy
    ez = s * dz
    w = z[i, 3]
    x = z[i, 4]
    y = z[i, 5]
    r = z[i, 6]
    nw = c * w - ex * x - ey * y - ez * r
    nx = c * x + ex * w + ey * r - ez * y
    ny = c * y + ey * w + ez * x - ex * r
    nz = c * r + ez * w + ex * y - ey * x
    norm = math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    z[i, 3] = nw / norm
    z[i, 4] = nx / norm
    z[i, 5] = ny / norm
    z[i, 6] = nz / norm


@njit
def project_state(inputs, key, system, t, y):
    """Renormalise y's quaternions and, with projection on, project (z, zd) onto C(z) = 0 and C_v zd = 0 (joints
    and loops) in place (module docstring): Gauss-Newton steps until the step and |C| are below the tolerance or
    the steps stop contracting, then the velocity correction. Returns the status."""
    status = _load_state(inputs, key, system, t, y)
    if status != STATUS_OK:
        return status
    z = system.z
    zd = system.zd
    xb = system.xb
    n = z.shape[0]
    if system.settings[0] != 0.0:
        tol = system.settings[1]
        last_step = math.inf
        for _ in range(int(system.settings[2])):
            status = _factor_at(system)
            if status != STATUS_OK:
                return status
            gap = _correction(system, np.bool_(False))
            if system.aux_body.shape[0] > 0:
                loop_gap, status = _loop_correction(system, np.bool_(False))
                if status != STATUS_OK:
                    return status
                gap = max(gap, loop_gap)
            size = 0.0
            for i in range(n):
                for c in range(6):
                    size = max(size, abs(xb[i, c]))
            if (gap <= tol and size <= tol) or not size < 0.5 * last_step:
                break
            last_step = size
            for i in range(n):
                for c in range(3):
                    z[i, c] += xb[i, c]
                _turn(z, i, xb[i, 3], xb[i, 4], xb[i, 5])
        status = _factor_at(system)
        if status != STATUS_OK:
            return status
        _correction(system, np.bool_(True))
        if system.aux_body.shape[0] > 0:
            status = _loop_correction(system, np.bool_(True))[1]  # also the loops' residuals at the projected z
            if status != STATUS_OK:
                return status
            status = _loops_closed(system, 1e3 * tol)
            if status != STATUS_OK:
                return status
        for i in range(n):
            for c in range(6):
                zd[i, c] += xb[i, c]
    for i in range(n):
        for c in range(7):
            y[7 * i + c] = z[i, c]
        for c in range(6):
            y[7 * n + 6 * i + c] = zd[i, c]
    return STATUS_OK


@njit
def constraint_gap(inputs, key, system, t, y, out):
    """out[0] = max |C| of the joints' and the loops' constraints at (t, y); returns the status."""
    status = _load_state(inputs, key, system, t, y)
    if status == STATUS_OK:
        status = _factor_at(system)
    gap = 0.0
    for i in range(system.res.shape[0]):
        for r in range(6):
            gap = max(gap, abs(system.res[i, r]))
    if status == STATUS_OK and system.aux_body.shape[0] > 0:
        status = _loop_rows(system, system.no_stab)
        for r in range(system.aux_res.shape[0]):
            gap = max(gap, abs(system.aux_res[r]))
    out[0] = gap
    return status


@njit
def projects(system):
    """True: every accepted step renormalises the quaternions (and projects, with stabilization "projection")."""
    return system.z.shape[0] > 0


@overload(formulation.rhs, jit_options={"cache": True, "_nrt": True})
def _rhs(inputs, key, system, t, y, dy):
    if _is_augmented3d(system):
        return lambda inputs, key, system, t, y, dy: system_rhs(inputs, key, system, t, y, dy)  # noqa: PLW0108
    return None


@overload(formulation.project, jit_options={"cache": True, "_nrt": True})
def _project(inputs, key, system, t, y):
    if _is_augmented3d(system):
        return lambda inputs, key, system, t, y: project_state(inputs, key, system, t, y)  # noqa: PLW0108
    return None


@overload(formulation.projects, jit_options={"cache": True, "_nrt": True})
def _projects(system):
    if _is_augmented3d(system):
        return lambda system: projects(system)  # noqa: PLW0108
    return None


@overload(formulation.integrated_size, jit_options={"cache": True, "_nrt": True})
def _integrated_size(system, n):
    if _is_augmented3d(system):
        return lambda system, n: n  # every entry of y is integrated
    return None
