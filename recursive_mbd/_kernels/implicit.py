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
def _locked(driven, i):
    """True when body i's joint is driven (its coordinate prescribed: no unknown of the Newton step)."""
    return driven.shape[0] > 0 and driven[i] != 0


@njit
def effective_factor(body_int, body_real, gravity, ws, driven, c_mass, c_stiff, j_diag, ia, uu, dinv, gcol, rvec,
                     fsub, kb, dmat):
    """Tip-to-base elimination of S = c_mass M + c_stiff T^T diag(K_i) T + diag(j_diag) at the state in ``ws``.

    ``ws`` must hold pass 1 with every row (``kinematics_pass(..., True)``). Writes the factors that
    ``effective_apply`` needs and nothing else reads: uu (n, 3, 3) U = IA G, dinv (n, 3, 3) D^-1, gcol (n, 3, 3)
    the columns of G (gcol[i, :, col]), rvec (n, 2) r of B; ia (n, 3, 3), fsub (n, 2), kb (n,), dmat (3, 3) are
    scratch. Driven joints (``driven`` (nbodies,) uint8, or (0,)) are locked: their coordinates are no unknowns.
    Returns STATUS_SINGULAR | (body << 4) when a joint block is singular.
    """
    n = body_int.shape[0]
    geometric_stiffness(body_int, body_real, gravity, ws, fsub, kb)
    for i in range(n):
        rvec[i, 0] = ws[i, RX]
        rvec[i, 1] = ws[i, RX + 1]
        for a in range(3):
            for b in range(3):
                ia[i, a, b] = 0.0
    for i in range(n - 1, -1, -1):
        m = c_mass * body_real[i, MASS]
        ia[i, 0, 0] += m
        ia[i, 1, 1] += m
        ia[i, 2, 2] += c_mass * body_real[i, INERTIA] + c_stiff * kb[i]
        nd = 0 if _locked(driven, i) else body_int[i, NDOF]
        k = body_int[i, QIDX]
        for col in range(nd):  # U = IA G
            gx, gy, gt = motion_column(body_int, ws, i, col)
            gcol[i, 0, col] = gx
            gcol[i, 1, col] = gy
            gcol[i, 2, col] = gt
            for a in range(3):
                uu[i, a, col] = ia[i, a, 0] * gx + ia[i, a, 1] * gy + ia[i, a, 2] * gt
        for r in range(nd):  # D = G^T IA G + joint diagonal
            for col in range(nd):
                dmat[r, col] = gcol[i, 0, r] * uu[i, 0, col] + gcol[i, 1, r] * uu[i, 1, col] + gcol[i, 2, r] * uu[
                    i, 2, col]
            dmat[r, r] += j_diag[k + r]
        if nd > 0 and not _inverse_small(dmat, nd, dinv[i]):
            return STATUS_SINGULAR | (i << 4)
        p = body_int[i, PARENT]
        if p < 0:
            continue
        # articulated matrix Ia = IA - U D^-1 U^T, shifted to the parent by B^T . B
        for a in range(3):
            for b in range(3):
                acc = ia[i, a, b]
                for r in range(nd):
                    for col in range(nd):
                        acc -= uu[i, a, r] * dinv[i, r, col] * uu[i, b, col]
                dmat[a, b] = acc
        rx = rvec[i, 0]
        ry = rvec[i, 1]
        # B = [[1, 0, -ry], [0, 1, rx], [0, 0, 1]]: B^T S B written out
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
    return STATUS_OK


@njit
def effective_apply(body_int, driven, uu, dinv, gcol, rvec, rhs, ub, pa, vel, x):
    """x = S^-1 rhs (nq,) with the factors of ``effective_factor``: two sweeps, no kinematics, O(N).

    Scratch ub, pa, vel (n, 3). Entries of driven coordinates in rhs are ignored and x is zero there.
    """
    n = body_int.shape[0]
    for i in range(n):
        pa[i, 0] = 0.0
        pa[i, 1] = 0.0
        pa[i, 2] = 0.0
    for i in range(n - 1, -1, -1):  # tip to base: u = rhs - G^T pA, pA_parent += B^T (pA + U D^-1 u)
        nd = 0 if _locked(driven, i) else body_int[i, NDOF]
        k = body_int[i, QIDX]
        fx = pa[i, 0]
        fy = pa[i, 1]
        ft = pa[i, 2]
        for col in range(nd):
            ub[i, col] = rhs[k + col] - (gcol[i, 0, col] * fx + gcol[i, 1, col] * fy + gcol[i, 2, col] * ft)
        for r in range(nd):
            w = 0.0
            for col in range(nd):
                w += dinv[i, r, col] * ub[i, col]
            fx += uu[i, 0, r] * w
            fy += uu[i, 1, r] * w
            ft += uu[i, 2, r] * w
        p = body_int[i, PARENT]
        if p >= 0:
            pa[p, 0] += fx
            pa[p, 1] += fy
            pa[p, 2] += -rvec[i, 1] * fx + rvec[i, 0] * fy + ft
    for i in range(n):  # base to tip: x_i = D^-1 (u - U^T B v_P), v_i = B v_P + G x_i
        p = body_int[i, PARENT]
        bx = 0.0
        by = 0.0
        bt = 0.0
        if p >= 0:
            bt = vel[p, 2]
            bx = vel[p, 0] - rvec[i, 1] * bt
            by = vel[p, 1] + rvec[i, 0] * bt
        k = body_int[i, QIDX]
        if _locked(driven, i):
            x[k] = 0.0
            nd = 0
        else:
            nd = body_int[i, NDOF]
        for r in range(nd):
            w = 0.0
            for col in range(nd):
                w += dinv[i, r, col] * (ub[i, col] - (uu[i, 0, col] * bx + uu[i, 1, col] * by + uu[i, 2, col] * bt))
            x[k + r] = w
        for col in range(nd):
            bx += gcol[i, 0, col] * x[k + col]
            by += gcol[i, 1, col] * x[k + col]
            bt += gcol[i, 2, col] * x[k + col]
        vel[i, 0] = bx
        vel[i, 1] = by
        vel[i, 2] = bt


@njit
def effective_solve(body_int, body_real, gravity, q, zero_qd, driven, c_mass, c_stiff, j_diag, rhs, ws,
                    ia, uu, dinv, gcol, rvec, ub, pa, vel, fsub, kb, dmat, x):
    """x from (c_mass M(q) + c_stiff T^T diag(K_i) T + diag(j_diag)) x = rhs in O(N); returns a status.

    ``effective_factor`` at q, then ``effective_apply``. Scratch (n = nbodies): ia, uu, dinv, gcol (n, 3, 3);
    ub, pa, vel (n, 3); rvec, fsub (n, 2); kb (n,); dmat (3, 3). ``ws`` is the model workspace. Status
    STATUS_SINGULAR | (body << 4) when a joint block of the eliminated matrix is singular.
    """
    status = check_finite(q, zero_qd, rhs)
    if status != STATUS_OK:
        return status
    kinematics_pass(body_int, body_real, q, zero_qd, ws, True)
    status = effective_factor(body_int, body_real, gravity, ws, driven, c_mass, c_stiff, j_diag, ia, uu, dinv, gcol,
                              rvec, fsub, kb, dmat)
    if status != STATUS_OK:
        return status
    effective_apply(body_int, driven, uu, dinv, gcol, rvec, rhs, ub, pa, vel, x)
    return STATUS_OK
