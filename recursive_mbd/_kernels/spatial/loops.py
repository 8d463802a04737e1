"""Closed loops on a spatial tree: cut-joint equations and the Lagrange-multiplier layer.

The spatial counterpart of ``_kernels.planar.loops``. Each loop ties a point P_a of body a to a point P_b of body b
(either may be the ground) by equations phi(q) = 0 (``spatial.layout.LOOP_*``). Every row is written as weights on
the motion of the two bodies, ground axes:

    phi'_r = w_a . (v(P_a), omega_a) + w_b . (v(P_b), omega_b)   (weights (m, 12): lin_a, ang_a, lin_b, ang_b)

so the Jacobian J (m, nv) in the velocity coordinates v follows from the motion subspaces S of the joints on the
paths to the root (a joint column moves its body with the spatial velocity S_j, ground axes R_j S_j), and a
quaternion joint's columns are those of v, not of the quaternion's entries. gamma = -J' v is phi'' at vdot = 0,
from the point accelerations of the velocity-product pass (a_i = X_i a_parent + c_i, no gravity).

Rows:
    spherical  phi = P_a - P_b (3)
    revolute   the spherical rows, then phi_k = (R_a n_k) . (R_b u_b), k = 1, 2, with n_1, n_2 orthogonal to
               body a's axis (2): phi_k' = (omega_a - omega_b) . (n_k x u_b)
    distance   phi = |P_a - P_b| - length (1)

Constrained forward dynamics (the sign convention of the planar layer, ``recursive_mbd.dynamics.loops``):

    M vdot + h = tau - J^T lambda,      J vdot = gamma - 2 alpha phi' - beta^2 phi

solved in O(N m + m^3): vdot0 by the articulated-body pass, the responses Y = M^-1 J^T by m force-only passes
on its factorisation (``spatial.unit_force_responses``: no gravity, no velocity, no inertia formed again), then
(J Y) lambda = J vdot0 - rhs by the filtered regularised solve of the planar layer (``planar.loops.filtered_solve``),
vdot = vdot0 - Y lambda. The loop force on body a is -sum_r lambda_r w_a,r
(force at P_a, moment), on body b -sum_r lambda_r w_b,r.
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import STATUS_LOOP_DEGENERATE, STATUS_NONFINITE_STATE, STATUS_OK
from ..planar.loops import BRANCH_ZONE, filtered_solve, filtered_solve_weak, gram_matrix, multiplier_rhs
from .layout import (
    LAXB,
    LBODY_A,
    LBODY_B,
    LKIND,
    LLENGTH,
    LN1,
    LN2,
    LOOP_DISTANCE,
    LOOP_REVOLUTE,
    LPA,
    LPB,
    LROW,
    NVJ,
    PARENT,
    VIDX,
    WC,
    WV,
)
from .tree import _motion_to_child, forward_dynamics, hybrid_dynamics, motion_at, poses, unit_force_responses

# numba's cache checks this file's stamp only: it changes with the workspace contract of ``spatial`` (s18mem:
# revolute joints, as spherical ones, fill no S, UD, uD rows), so that no cached caller keeps the old kernels.

njit = numba.njit(cache=True, error_model="numpy", _nrt=True)


@njit
def bias_accelerations(body_int, ws, tmp, acc):
    """acc[i] (6,) = the spatial acceleration of body i at vdot = 0 without gravity, body coordinates: a_i =
    X_i a_parent + c_i (Featherstone 2008, table 5.1), from the velocity pass's c_i in ws."""
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        if p < 0:
            for m in range(6):
                acc[i, m] = ws[i, WC + m]
        else:
            _motion_to_child(ws, i, acc[p], 0, tmp, 0)
            for m in range(6):
                acc[i, m] = tmp[m] + ws[i, WC + m]


@njit
def _point_state(ws, rot, pos, acc, body, point, o, out):
    """out[0:15] = position, velocity, velocity-product acceleration of the point ``point[o:o+3]`` of ``body``,
    its body's angular velocity and velocity-product angular acceleration (ground axes); the ground holds it fixed.

    Classical acceleration of a body point s from the spatial one (alpha; a_O): a = a_O + alpha x s + omega x v_s.
    """
    for m in range(15):
        out[m] = 0.0
    if body < 0:
        for m in range(3):
            out[m] = point[o + m]
        return
    sx = point[o]
    sy = point[o + 1]
    sz = point[o + 2]
    # body axes: v_s = u + w x s, a_s = a_O + alpha x s + w x v_s
    wx, wy, wz, vx, vy, vz = motion_at(ws[body], WV, sx, sy, sz)
    ax_, ay_, az_, lx, ly, lz = motion_at(acc[body], 0, sx, sy, sz)
    lx = lx + wy * vz - wz * vy
    ly = ly + wz * vx - wx * vz
    lz = lz + wx * vy - wy * vx
    for r in range(3):
        out[r] = pos[body, r] + rot[body, r, 0] * sx + rot[body, r, 1] * sy + rot[body, r, 2] * sz
        out[3 + r] = rot[body, r, 0] * vx + rot[body, r, 1] * vy + rot[body, r, 2] * vz
        out[6 + r] = rot[body, r, 0] * lx + rot[body, r, 1] * ly + rot[body, r, 2] * lz
        out[9 + r] = rot[body, r, 0] * wx + rot[body, r, 1] * wy + rot[body, r, 2] * wz
        out[12 + r] = rot[body, r, 0] * ax_ + rot[body, r, 1] * ay_ + rot[body, r, 2] * az_


@njit
def _add_point_jacobian(body_int, S, rot, pos, body, px, py, pz, w, o, row):
    """row += w[o:o+3] . d v(P)/dv + w[o+3:o+6] . d omega/dv for the point P of ``body``: up its path to the root.
    Column col of joint j moves body j with the spatial velocity S[j, col] (body j axes; ground axes R_j S)."""
    j = body
    while j >= 0:
        kv = body_int[j, VIDX]
        dx = px - pos[j, 0]
        dy = py - pos[j, 1]
        dz = pz - pos[j, 2]
        for col in range(body_int[j, NVJ]):
            gw0 = rot[j, 0, 0] * S[j, col, 0] + rot[j, 0, 1] * S[j, col, 1] + rot[j, 0, 2] * S[j, col, 2]
            gw1 = rot[j, 1, 0] * S[j, col, 0] + rot[j, 1, 1] * S[j, col, 1] + rot[j, 1, 2] * S[j, col, 2]
            gw2 = rot[j, 2, 0] * S[j, col, 0] + rot[j, 2, 1] * S[j, col, 1] + rot[j, 2, 2] * S[j, col, 2]
            gu0 = rot[j, 0, 0] * S[j, col, 3] + rot[j, 0, 1] * S[j, col, 4] + rot[j, 0, 2] * S[j, col, 5]
            gu1 = rot[j, 1, 0] * S[j, col, 3] + rot[j, 1, 1] * S[j, col, 4] + rot[j, 1, 2] * S[j, col, 5]
            gu2 = rot[j, 2, 0] * S[j, col, 3] + rot[j, 2, 1] * S[j, col, 4] + rot[j, 2, 2] * S[j, col, 5]
            # the velocity of P: u + w x (P - p_j)
            v0 = gu0 + gw1 * dz - gw2 * dy
            v1 = gu1 + gw2 * dx - gw0 * dz
            v2 = gu2 + gw0 * dy - gw1 * dx
            row[kv + col] += (w[o] * v0 + w[o + 1] * v1 + w[o + 2] * v2 + w[o + 3] * gw0 + w[o + 4] * gw1
                              + w[o + 5] * gw2)
        j = body_int[j, PARENT]


@njit
def _rotate(rot, body, vec, o, out, d):
    """out[d:d+3] = R_body vec[o:o+3] (the vector itself for the ground)."""
    for r in range(3):
        if body < 0:
            out[d + r] = vec[o + r]
        else:
            out[d + r] = rot[body, r, 0] * vec[o] + rot[body, r, 1] * vec[o + 1] + rot[body, r, 2] * vec[o + 2]


@njit
def loop_equations(loop_real, lp, kind, r0, point, axes, phi, gamma, weights):
    """The rows of loop ``lp`` (code ``kind``, first row r0) from the states of its two points (module docstring):
    point[0:15] of P_a and point[15:30] of P_b in ``_point_state``'s layout (ground axes); point[30:39] receives
    d = P_a - P_b, its rate and its velocity-product acceleration. A revolute loop reads axes[0:9] = (R_b u_b,
    R_a n_1, R_a n_2). Fills phi, gamma and the weights of its rows (the caller zeroes the weights); returns their
    number, 0 when a distance loop's points coincide (its direction is undefined). The spatial loop layer and the
    augmented formulation (``_kernels.augmented.spatial3d``) share it, so their rows are the same numbers."""
    for m in range(3):
        point[30 + m] = point[m] - point[15 + m]
        point[33 + m] = point[3 + m] - point[18 + m]
        point[36 + m] = point[6 + m] - point[21 + m]
    if kind == LOOP_DISTANCE:
        dist = math.sqrt(point[30] ** 2 + point[31] ** 2 + point[32] ** 2)
        if not dist > 0.0:
            return 0
        rate = 0.0
        speed2 = 0.0
        bias = 0.0
        for m in range(3):
            e = point[30 + m] / dist
            weights[r0, m] = e
            weights[r0, 6 + m] = -e
            rate += e * point[33 + m]
            speed2 += point[33 + m] ** 2
            bias += e * point[36 + m]
        phi[r0] = dist - loop_real[lp, LLENGTH]
        # |d|'' = e . d'' + (|d'|^2 - (e . d')^2) / |d|
        gamma[r0] = -(bias + (speed2 - rate * rate) / dist)
        return 1
    for m in range(3):
        weights[r0 + m, m] = 1.0
        weights[r0 + m, 6 + m] = -1.0
        phi[r0 + m] = point[30 + m]
        gamma[r0 + m] = -point[36 + m]
    if kind != LOOP_REVOLUTE:
        return 3
    # u = R_b u_b, n_k = R_a n_k; c = n_k x u; phi_k = n_k . u
    u0 = axes[0]
    u1 = axes[1]
    u2 = axes[2]
    dw0 = point[9] - point[24]
    dw1 = point[10] - point[25]
    dw2 = point[11] - point[26]
    # omega_b x u: the rate of u
    ud0 = point[25] * u2 - point[26] * u1
    ud1 = point[26] * u0 - point[24] * u2
    ud2 = point[24] * u1 - point[25] * u0
    for k in range(2):
        r = r0 + 3 + k
        n0 = axes[3 + 3 * k]
        n1 = axes[4 + 3 * k]
        n2 = axes[5 + 3 * k]
        c0 = n1 * u2 - n2 * u1
        c1 = n2 * u0 - n0 * u2
        c2 = n0 * u1 - n1 * u0
        weights[r, 3] = c0
        weights[r, 4] = c1
        weights[r, 5] = c2
        weights[r, 9] = -c0
        weights[r, 10] = -c1
        weights[r, 11] = -c2
        phi[r] = n0 * u0 + n1 * u1 + n2 * u2
        # c' = (omega_a x n) x u + n x (omega_b x u)
        na0 = point[10] * n2 - point[11] * n1
        na1 = point[11] * n0 - point[9] * n2
        na2 = point[9] * n1 - point[10] * n0
        e0 = na1 * u2 - na2 * u1 + n1 * ud2 - n2 * ud1
        e1 = na2 * u0 - na0 * u2 + n2 * ud0 - n0 * ud2
        e2 = na0 * u1 - na1 * u0 + n0 * ud1 - n1 * ud0
        gamma[r] = -((point[12] - point[27]) * c0 + (point[13] - point[28]) * c1
                     + (point[14] - point[29]) * c2 + dw0 * e0 + dw1 * e1 + dw2 * e2)
    return 5


@njit
def loop_constraints(body_int, body_real, loop_int, loop_real, q, v, ws, S, tmp, rot, pos, omega, vel, acc, point,
                     phi, phid, jac, gamma, weights):
    """Residual phi (m,), phi' = J v (m,), Jacobian J (m, nv), gamma = -J' v (m,) and the row weights (m, 12) of
    every loop (module docstring). Scratch: ws, S, tmp (the spatial kernels'), rot (n, 3, 3), pos, omega, vel
    (n, 3), acc (n, 6), point (40,). Returns the status (a spatial kernel's, or STATUS_LOOP_DEGENERATE | loop << 4
    when a distance loop's points coincide)."""
    status = poses(body_int, body_real, q, v, ws, S, tmp, rot, pos, omega, vel, np.bool_(True))
    if status != STATUS_OK:
        return status
    bias_accelerations(body_int, ws, tmp, acc)
    jac[:, :] = 0.0
    weights[:, :] = 0.0
    for lp in range(loop_int.shape[0]):
        kind = loop_int[lp, LKIND]
        a = loop_int[lp, LBODY_A]
        b = loop_int[lp, LBODY_B]
        r0 = loop_int[lp, LROW]
        _point_state(ws, rot, pos, acc, a, loop_real[lp], LPA, point[0:15])
        _point_state(ws, rot, pos, acc, b, loop_real[lp], LPB, point[15:30])
        if kind == LOOP_REVOLUTE:  # body b's axis and body a's two normals in ground axes
            _rotate(rot, b, loop_real[lp], LAXB, tmp, 0)
            _rotate(rot, a, loop_real[lp], LN1, tmp, 3)
            _rotate(rot, a, loop_real[lp], LN2, tmp, 6)
        nrows = loop_equations(loop_real, lp, kind, r0, point, tmp, phi, gamma, weights)
        if nrows == 0:
            return STATUS_LOOP_DEGENERATE | (lp << 4)
        for r in range(r0, r0 + nrows):
            if a >= 0:
                _add_point_jacobian(body_int, S, rot, pos, a, point[0], point[1], point[2], weights[r], 0, jac[r])
            if b >= 0:
                _add_point_jacobian(body_int, S, rot, pos, b, point[15], point[16], point[17], weights[r], 6,
                                    jac[r])
            rate = 0.0
            for k in range(v.shape[0]):
                rate += jac[r, k] * v[k]
            phid[r] = rate
    return STATUS_OK


@njit
def constraint_responses(body_int, body_real, q, jac, ws, S, UD, uD, tmp, zeros, no_gravity, resp):
    """resp[r] = M^-1 J_r^T (m, nv): the accelerations that a unit multiplier of row r alone produces (no gravity,
    no velocity): one articulated-body pass for row 0 (it factorises at q), then the force and acceleration passes
    of ``unit_force_responses`` on that factorisation for the others. zeros (nv,), no_gravity (3,) zero. S must
    hold every joint's subspace (``spatial.Workspace3D.S``). Returns the status."""
    if jac.shape[0] == 0:
        return STATUS_OK
    status = forward_dynamics(body_int, body_real, no_gravity, q, zeros, jac[0], ws, S, UD, uD, tmp, resp[0])
    if status != STATUS_OK:
        return status
    unit_force_responses(body_int, body_real, jac[1:], ws, S, UD, uD, tmp, resp[1:])
    return STATUS_OK


@njit
def constrained_dynamics(body_int, body_real, gravity, loop_int, loop_real, q, v, tau, ws, S, UD, uD, tmp, rot, pos,
                         omega, vel, acc, point, phi, phid, jac, gamma, weights, resp, zeros, no_gravity, stab, rcond,
                         lam, vdot, info):
    """Constrained forward dynamics (module docstring): vdot (nv,) and the multipliers lam (m,).

    resp (m, nv) is scratch for the responses M^-1 J_r^T; zeros (nv,), no_gravity (3,) (unused since the
    responses reuse the factorisation of the forward-dynamics pass; kept so that the signature stays);
    stab = (alpha, beta) Baumgarte's rates [1/s]; rcond the relative cut-off of ``filtered_solve``. info[0]
    returns the numerical rank of J M^-1 J^T (< m: redundant or singular loops); an info of 3 entries (the time
    loops') also gets in info[2] the number of its weak eigenvalues, near a change point (``filtered_solve_weak``,
    zone ``BRANCH_ZONE``). Returns the status.
    """
    status = loop_constraints(body_int, body_real, loop_int, loop_real, q, v, ws, S, tmp, rot, pos, omega, vel, acc,
                              point, phi, phid, jac, gamma, weights)
    if status != STATUS_OK:
        return status
    status = forward_dynamics(body_int, body_real, gravity, q, v, tau, ws, S, UD, uD, tmp, vdot)
    if status != STATUS_OK:
        return status
    # the responses on the factorisation just made at q (two O(N) force passes per row)
    unit_force_responses(body_int, body_real, jac, ws, S, UD, uD, tmp, resp)
    return _multipliers(jac, resp, gamma, phid, phi, stab, rcond, lam, vdot, info)


@njit
def _multipliers(jac, resp, gamma, phid, phi, stab, rcond, lam, vdot, info):
    """The multipliers lam (m,) of (J Y) lam = J vdot0 - rhs (the filtered solve; info as ``constrained_dynamics``'s)
    and vdot -= Y^T lam, with the responses Y = resp (m, nv) and vdot0 in vdot on entry; returns the status."""
    m = phi.shape[0]
    nv = vdot.shape[0]
    gram = np.empty((m, m))
    rhs = np.empty(m)
    multiplier_rhs(jac, vdot, gamma, phid, phi, stab, rhs)
    gram_matrix(jac, resp, gram)
    if info.shape[0] > 2:
        info[0], info[2] = filtered_solve_weak(gram, rhs, rcond, lam, BRANCH_ZONE)
    else:
        info[0] = filtered_solve(gram, rhs, rcond, lam)
    if info[0] < 0:
        return STATUS_NONFINITE_STATE
    for r in range(m):
        for k in range(nv):
            vdot[k] -= lam[r] * resp[r, k]
    return STATUS_OK


@njit
def held_responses(body_int, body_real, q, jac, driven, ws, S, UD, uD, tmp, zeros, no_gravity, resp, resp_drive):
    """resp[r] (m, nv): the accelerations that a unit multiplier of row r alone produces (no gravity, no velocity)
    with the driven joints (``driven`` (nbodies,) uint8) held still, their entries zero: M_ff^-1 J_f^T on the free
    velocities; resp_drive[r] (m, nv): the joint force each driver then supplies (its entry, the others zero). One
    hybrid-dynamics pass a row (``tree.hybrid_dynamics``, the driven accelerations zero), O(N) each, as the planar
    layer's responses with drivers (``planar.loops.constraint_responses``). S, UD, uD with a row per body. Returns
    the status."""
    nv = zeros.shape[0]
    for r in range(jac.shape[0]):
        for k in range(nv):
            resp[r, k] = 0.0
            resp_drive[r, k] = 0.0
        status = hybrid_dynamics(body_int, body_real, no_gravity, q, zeros, jac[r], driven, ws, S, UD, uD, tmp,
                                 resp[r], resp_drive[r])
        if status != STATUS_OK:
            return status
    return STATUS_OK


@njit
def driven_constrained_dynamics(body_int, body_real, gravity, loop_int, loop_real, q, v, tau, driven, ws, S, UD, uD,
                                tmp, rot, pos, omega, vel, acc, point, phi, phid, jac, gamma, weights, resp,
                                resp_drive, zeros, no_gravity, stab, rcond, lam, vdot, drive, info):
    """``constrained_dynamics`` with driven joints (``driven`` (nbodies,) uint8; their accelerations prescribed in
    vdot on entry), the planar layer's way (``planar.loops.constrained_dynamics``): vdot0 and the driving forces
    drive0 by the hybrid dynamics (``tree.hybrid_dynamics``), the responses with the driven joints held
    (``held_responses``: Y, Y_drive), the multipliers by the same filtered solve, then vdot = vdot0 - Y^T lam and
    drive = drive0 - Y_drive^T lam (the driven entries of drive: the joint force each driver supplies, the loop
    forces' share included). O(N m + m^3). Returns the status."""
    status = loop_constraints(body_int, body_real, loop_int, loop_real, q, v, ws, S, tmp, rot, pos, omega, vel, acc,
                              point, phi, phid, jac, gamma, weights)
    if status != STATUS_OK:
        return status
    status = hybrid_dynamics(body_int, body_real, gravity, q, v, tau, driven, ws, S, UD, uD, tmp, vdot, drive)
    if status != STATUS_OK:
        return status
    status = held_responses(body_int, body_real, q, jac, driven, ws, S, UD, uD, tmp, zeros, no_gravity, resp,
                            resp_drive)
    if status != STATUS_OK:
        return status
    status = _multipliers(jac, resp, gamma, phid, phi, stab, rcond, lam, vdot, info)
    if status != STATUS_OK:
        return status
    for r in range(phi.shape[0]):
        for k in range(drive.shape[0]):
            drive[k] -= lam[r] * resp_drive[r, k]
    return STATUS_OK
