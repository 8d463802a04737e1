"""O(N) solve of the Newton matrix of an implicit step in joint coordinates (derivation: ``recursive_mbd.implicit``).

``effective_solve`` solves (J^T diag(A_i) J + diag(j_diag)) x = rhs, where J maps joint rates to the body
velocities (v_i = B_i v_P + G_i qdot_i, seed 003 eq. 3.18), A_i = diag(c_m m_i, c_m m_i, c_m J_i + c_k K_i) with
K_i the gravity geometric stiffness of body i, by an articulated-body recursion: tip to base, every joint is
eliminated from its subtree (eq. 3.23 with the modified inertias); base to tip, the joint unknowns follow.
"""

import math

import numba

from .layout import (
    COX,
    CS,
    INERTIA,
    MASS,
    NDOF,
    PARENT,
    QIDX,
    RX,
    SN,
    STATUS_OK,
    STATUS_SINGULAR,
)
from .tree import check_finite, kinematics_pass, motion_column

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy")

# A joint block of the effective matrix is singular below this fraction of the norm of its entries' scale
SINGULAR_RTOL = 1e-13


@njit
def geometric_stiffness(body_int, body_real, gravity, ws, fsub, kb):
    """Gravity geometric stiffness K_i [N m / rad] of every body (on its absolute angle) into ``kb``.

    Needs pass 1 with every row (CS, SN, RX). K_i = f_i . e_i + sum over children k of F_k . d_k, with f_i = m_i g,
    F_k the weight of the subtree of k, e_i = c_i - (joint point of i), d_k = (joint point of k) - c_i.
    ``fsub`` (n, 2) receives the subtree weights.
    """
    n = body_int.shape[0]
    for i in range(n):
        fsub[i, 0] = body_real[i, MASS] * gravity[0]
        fsub[i, 1] = body_real[i, MASS] * gravity[1]
        kb[i] = 0.0
    for i in range(n - 1, -1, -1):
        c = ws[i, CS]
        s = ws[i, SN]
        ex = c * body_real[i, COX] - s * body_real[i, COX + 1]
        ey = s * body_real[i, COX] + c * body_real[i, COX + 1]
        kb[i] += fsub[i, 0] * ex + fsub[i, 1] * ey  # the whole subtree's weight acts through e_i
        p = body_int[i, PARENT]
        if p >= 0:
            dx = ws[i, RX] - ex
            dy = ws[i, RX + 1] - ey
            kb[p] += fsub[i, 0] * dx + fsub[i, 1] * dy
            fsub[p, 0] += fsub[i, 0]
            fsub[p, 1] += fsub[i, 1]


@njit
def _inverse_small(dmat, nd, out):
    """Inverse of the leading nd x nd block of ``dmat`` into ``out``; returns False if it is singular."""
    if nd == 1:
        if dmat[0, 0] == 0.0 or not math.isfinite(dmat[0, 0]):
            return False
        out[0, 0] = 1.0 / dmat[0, 0]
        return True
    a, b, c = dmat[0, 0], dmat[0, 1], dmat[0, 2]
    d, e, f = dmat[1, 0], dmat[1, 1], dmat[1, 2]
    g, h, k = dmat[2, 0], dmat[2, 1], dmat[2, 2]
    c00 = e * k - f * h
    c01 = -(d * k - f * g)
    c02 = d * h - e * g
    det = a * c00 + b * c01 + c * c02
    scale = abs(a * c00) + abs(b * c01) + abs(c * c02)
    if not (abs(det) > SINGULAR_RTOL * scale):
        return False
    out[0, 0] = c00 / det
    out[1, 0] = c01 / det
    out[2, 0] = c02 / det
    out[0, 1] = -(b * k - c * h) / det
    out[1, 1] = (a * k - c * g) / det
    out[2, 1] = -(a * h - b * g) / det
    out[0, 2] = (b * f - c * e) / det
    out[1, 2] = -(a * f - c * d) / det
    out[2, 2] = (a * e - b * d) / det
    return True


@njit
def effective_solve(body_int, body_real, gravity, q, zero_qd, c_mass, c_stiff, j_diag, rhs, ws,
                    ia, uu, dinv, ub, pa, vel, fsub, kb, dmat, x):
    """x from (c_mass M(q) + c_stiff T^T diag(K_i) T + diag(j_diag)) x = rhs in O(N); returns a status.

    Scratch (n = nbodies): ia, uu, dinv (n, 3, 3); ub, pa, vel (n, 3); fsub (n, 2); kb (n,); dmat (3, 3).
    ``ws`` is the model workspace (pass 1 writes every row). Status STATUS_SINGULAR | (body << 4) when a joint
    block of the eliminated matrix is singular.
    """
    status = check_finite(q, zero_qd, rhs)
    if status != STATUS_OK:
        return status
    n = body_int.shape[0]
    kinematics_pass(body_int, body_real, q, zero_qd, ws, True)
    geometric_stiffness(body_int, body_real, gravity, ws, fsub, kb)
    for i in range(n):
        for a in range(3):
            pa[i, a] = 0.0
            for b in range(3):
                ia[i, a, b] = 0.0
    # tip to base: eliminate each joint from its subtree
    for i in range(n - 1, -1, -1):
        m = c_mass * body_real[i, MASS]
        ia[i, 0, 0] += m
        ia[i, 1, 1] += m
        ia[i, 2, 2] += c_mass * body_real[i, INERTIA] + c_stiff * kb[i]
        nd = body_int[i, NDOF]
        k = body_int[i, QIDX]
        for col in range(nd):  # U = IA G, u = rhs - G^T pA
            gx, gy, gt = motion_column(body_int, ws, i, col)
            for a in range(3):
                uu[i, a, col] = ia[i, a, 0] * gx + ia[i, a, 1] * gy + ia[i, a, 2] * gt
            ub[i, col] = rhs[k + col] - (gx * pa[i, 0] + gy * pa[i, 1] + gt * pa[i, 2])
        for r in range(nd):  # D = G^T IA G + joint diagonal
            gx, gy, gt = motion_column(body_int, ws, i, r)
            for col in range(nd):
                dmat[r, col] = gx * uu[i, 0, col] + gy * uu[i, 1, col] + gt * uu[i, 2, col]
            dmat[r, r] += j_diag[k + r]
        if nd > 0 and not _inverse_small(dmat, nd, dinv[i]):
            return STATUS_SINGULAR | (i << 4)
        p = body_int[i, PARENT]
        if p < 0:
            continue
        # articulated matrix Ia = IA - U D^-1 U^T and force pA + U D^-1 u, shifted to the parent by B^T . B
        for a in range(3):
            for b in range(3):
                acc = ia[i, a, b]
                for r in range(nd):
                    for col in range(nd):
                        acc -= uu[i, a, r] * dinv[i, r, col] * uu[i, b, col]
                dmat[a, b] = acc
        fx = pa[i, 0]
        fy = pa[i, 1]
        ft = pa[i, 2]
        for r in range(nd):
            w = 0.0
            for col in range(nd):
                w += dinv[i, r, col] * ub[i, col]
            fx += uu[i, 0, r] * w
            fy += uu[i, 1, r] * w
            ft += uu[i, 2, r] * w
        rx = ws[i, RX]
        ry = ws[i, RX + 1]
        # B = [[1, 0, -ry], [0, 1, rx], [0, 0, 1]]: (B^T S B) and B^T f written out
        s00, s01, s02 = dmat[0, 0], dmat[0, 1], dmat[0, 2]
        s10, s11, s12 = dmat[1, 0], dmat[1, 1], dmat[1, 2]
        s20, s21, s22 = dmat[2, 0], dmat[2, 1], dmat[2, 2]
        c02 = -ry * s00 + rx * s01 + s02  # (S B)[:, 2]
        c12 = -ry * s10 + rx * s11 + s12
        c22 = -ry * s20 + rx * s21 + s22
        ia[p, 0, 0] += s00
        ia[p, 0, 1] += s01
        ia[p, 1, 0] += s10
        ia[p, 1, 1] += s11
        ia[p, 0, 2] += c02
        ia[p, 1, 2] += c12
        ia[p, 2, 0] += -ry * s00 + rx * s10 + s20
        ia[p, 2, 1] += -ry * s01 + rx * s11 + s21
        ia[p, 2, 2] += -ry * c02 + rx * c12 + c22
        pa[p, 0] += fx
        pa[p, 1] += fy
        pa[p, 2] += -ry * fx + rx * fy + ft
    # base to tip: joint unknowns and body "velocities" v_i = B_i v_P + G_i x_i
    for i in range(n):
        p = body_int[i, PARENT]
        bx = 0.0
        by = 0.0
        bt = 0.0
        if p >= 0:
            bt = vel[p, 2]
            bx = vel[p, 0] - ws[i, RX + 1] * bt
            by = vel[p, 1] + ws[i, RX] * bt
        nd = body_int[i, NDOF]
        k = body_int[i, QIDX]
        for r in range(nd):
            dmat[0, r] = ub[i, r] - (uu[i, 0, r] * bx + uu[i, 1, r] * by + uu[i, 2, r] * bt)
        for r in range(nd):
            w = 0.0
            for col in range(nd):
                w += dinv[i, r, col] * dmat[0, col]
            x[k + r] = w
        for col in range(nd):
            gx, gy, gt = motion_column(body_int, ws, i, col)
            bx += gx * x[k + col]
            by += gy * x[k + col]
            bt += gt * x[k + col]
        vel[i, 0] = bx
        vel[i, 1] = by
        vel[i, 2] = bt
    return STATUS_OK
