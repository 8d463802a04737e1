"""O(N) solve of the Newton matrix of an implicit step in joint coordinates (derivation:
``recursive_mbd.integrate.implicit``), and the planar generalised-alpha time loop (its bookkeeping shared with the
spatial loop's: ``timeloops.newton``).

``effective_solve`` solves (J^T diag(A_i) J + diag(j_diag)) x = rhs, where J maps joint rates to the body
velocities (v_i = B_i v_P + G_i qdot_i, the relative-coordinate lecture, eq. 3.18), A_i = diag(c_m m_i, c_m m_i, c_m J_i
+ c_k K_i) with K_i the gravity geometric stiffness of body i (plus a 3x3 block per body where the caller
gives one: the contacts' stiffness and damping, not necessarily symmetric), by an articulated-body recursion: tip
to base, every joint is eliminated from its subtree (eq. 3.23 with the modified inertias); base to tip, the joint
unknowns follow.

The contacts' blocks need not be symmetric (a sliding row's force mu F_n follows F_n's derivatives, a damped row's
force turns with its normal), so the elimination keeps a left and a right factor. With v_i = B_i v_P + G_i x_i
(v_P the parent's velocity, x_i the joint unknowns) and f_i = IA_i v_i + p_i the force that body i's subtree
needs at body i (IA_i its modified inertia plus the children's articulated ones shifted to it, p_i the children's
shifted right-hand sides), the joint rows G_i^T f_i = u_i give

    x_i = D_i^-1 (u_i - G_i^T p_i - U_L,i^T B_i v_P),     D_i = G_i^T IA_i G_i,  U_L,i = IA_i^T G_i,

and, put back into f_i, f_i = Ia_i B_i v_P + p_i + U_i D_i^-1 (u_i - G_i^T p_i) with U_i = IA_i G_i and

    Ia_i = IA_i - U_i D_i^-1 U_L,i^T,

which B_i^T . B_i shifts to the parent (all nine entries: B^T Ia B keeps no symmetry it is not given). Tip to base
the right factor U carries the right-hand sides to the parent; base to tip the left factor U_L takes the parent's
velocity into the joint unknowns. Where IA is symmetric U_L = U and this is the symmetric recursion; otherwise it
is three multiply-adds a joint column more in the factorisation and the same two sweeps. (The loops' Schur
complement ``loop_schur`` still takes J S^-1 J^T's symmetric part.)
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import (
    COX,
    CS,
    FLAGS,
    GX,
    INERTIA,
    MASS,
    NDOF,
    PARENT,
    QIDX,
    RX,
    SERIAL_REVOLUTE,
    SN,
    STATUS_NO_CONVERGENCE,
    STATUS_OK,
    STATUS_OUTPUT_FULL,
    STATUS_SINGULAR,
)
from ..timeloops import integrators, newton
from .elements import element_forces
from .loops import loop_constraints
from .system import (
    _load_state,
    contact_freeze,
    contact_loads,
    contact_matrix,
    contact_release,
    contact_update,
    has_contacts,
)
from .tree import check_finite, inverse_dynamics, inverse_dynamics_serial, kinematics_pass, motion_column

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)

# A joint block of the effective matrix is singular below this fraction of the norm of its entries' scale
SINGULAR_RTOL = 1e-13
# a step whose Newton iteration stalls (fresh factors, no longer contracting) is converged when its correction is
# within this factor of the round-off measured at the iterate (``correction_round_off``: the correction that changes
# of two units in the last place of the state make; one probe samples it, and the stalled corrections scatter about
# it: a 1e3-link chain landing, median 0.18 and at most 3 times the probe)
ROUND_OFF_MARGIN = 4.0
# a round-off measured at a stalled iterate (``correction_round_off``) serves the convergence tests of the steps that
# follow for this many steps (the state, and with it the round-off, moves little over them: a 1e3-link chain on a
# table at 0.125 ms); then the next stall measures it again
ROUND_OFF_STEPS = 16
# a generalised-alpha step whose Newton iteration fails is taken again in two halves, each split again where it
# fails, down to dt / 2^MAX_SPLITS (as the spatial absolute-coordinate route): a touch-down whose first iterate
# changes the modes of thousands of contact rows at once converges at a smaller step
MAX_SPLITS = 4


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
def _effective_factor_serial(body_real, gravity, ws, c_mass, c_stiff, j_diag, blocks, uu, dinv, gcol, rvec, kb):
    """``effective_factor`` on a serial revolute chain without driven joints (flag SERIAL_REVOLUTE): one tip-to-base
    pass instead of three (geometric_stiffness's, its initialisation's and the elimination's), the child's
    subtree weight, gravity-stiffness term and shifted articulated inertia (all 9 entries, as the tree kernel
    forms them) carried in registers rather than added into the parent's rows; the same arithmetic in the same
    order. Writes uu[:, :, 0] and uu[:, :, 3], dinv[:, 0, 0], gcol[:, :, 0], rvec and kb; returns the status."""
    n = body_real.shape[0]
    with_blocks = blocks.shape[0] > 0
    wx = 0.0  # the child's subtree weight, its stiffness term F . d, its B^T Ia B (row-major 3x3)
    wy = 0.0
    k_child = 0.0
    s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = 0.0
    for i in range(n - 1, -1, -1):
        c = ws[i, CS]
        s = ws[i, SN]
        rx = ws[i, RX]
        ry = ws[i, RX + 1]
        gx = ws[i, GX]
        gy = ws[i, GX + 1]
        rvec[i, 0] = rx
        rvec[i, 1] = ry
        # geometric_stiffness: the subtree's weight acts through e_i, the children's through d_k
        m_i = body_real[i, MASS]
        fx = m_i * gravity[0] + wx
        fy = m_i * gravity[1] + wy
        ex = c * body_real[i, COX] - s * body_real[i, COX + 1]
        ey = s * body_real[i, COX] + c * body_real[i, COX + 1]
        k_i = k_child + (fx * ex + fy * ey)
        kb[i] = k_i
        k_child = fx * (rx - ex) + fy * (ry - ey)
        wx = fx
        wy = fy
        # IA = (the child's shifted Ia) + M_i, then U = IA G, D = G^T U + joint diagonal (G = (gx, gy, 1))
        m = c_mass * m_i
        a00 = s00 + m
        a01 = s01
        a02 = s02
        a10 = s10
        a11 = s11 + m
        a12 = s12
        a20 = s20
        a21 = s21
        a22 = s22 + (c_mass * body_real[i, INERTIA] + c_stiff * k_i)
        if with_blocks:  # the body's own block (the contacts')
            a00 += blocks[i, 0, 0]
            a01 += blocks[i, 0, 1]
            a02 += blocks[i, 0, 2]
            a10 += blocks[i, 1, 0]
            a11 += blocks[i, 1, 1]
            a12 += blocks[i, 1, 2]
            a20 += blocks[i, 2, 0]
            a21 += blocks[i, 2, 1]
            a22 += blocks[i, 2, 2]
        gcol[i, 0, 0] = gx
        gcol[i, 1, 0] = gy
        gcol[i, 2, 0] = 1.0
        u0 = a00 * gx + a01 * gy + a02 * 1.0
        u1 = a10 * gx + a11 * gy + a12 * 1.0
        u2 = a20 * gx + a21 * gy + a22 * 1.0
        uu[i, 0, 0] = u0
        uu[i, 1, 0] = u1
        uu[i, 2, 0] = u2
        # U_L = IA^T G, the left factor (U where the contacts' blocks leave IA symmetric)
        v0 = u0
        v1 = u1
        v2 = u2
        if with_blocks:
            v0 = a00 * gx + a10 * gy + a20 * 1.0
            v1 = a01 * gx + a11 * gy + a21 * 1.0
            v2 = a02 * gx + a12 * gy + a22 * 1.0
        uu[i, 0, 3] = v0
        uu[i, 1, 3] = v1
        uu[i, 2, 3] = v2
        d = gx * u0 + gy * u1 + 1.0 * u2
        d += j_diag[i]
        if with_blocks:  # the joint's own block (the contacts between the body and its parent)
            d += blocks[i, 0, 3]
        if d == 0.0 or not math.isfinite(d):
            return STATUS_SINGULAR | (i << 4)
        d_inv = 1.0 / d
        dinv[i, 0, 0] = d_inv
        # articulated Ia = IA - U D^-1 U_L^T, shifted to the parent by B^T . B
        t00 = a00 - u0 * d_inv * v0
        t01 = a01 - u0 * d_inv * v1
        t02 = a02 - u0 * d_inv * v2
        t10 = a10 - u1 * d_inv * v0
        t11 = a11 - u1 * d_inv * v1
        t12 = a12 - u1 * d_inv * v2
        t20 = a20 - u2 * d_inv * v0
        t21 = a21 - u2 * d_inv * v1
        t22 = a22 - u2 * d_inv * v2
        c02 = -ry * t00 + rx * t01 + t02
        c12 = -ry * t10 + rx * t11 + t12
        c22 = -ry * t20 + rx * t21 + t22
        s00 = t00
        s01 = t01
        s10 = t10
        s11 = t11
        s02 = c02
        s12 = c12
        s20 = -ry * t00 + rx * t10 + t20
        s21 = -ry * t01 + rx * t11 + t21
        s22 = -ry * c02 + rx * c12 + c22
    return STATUS_OK


@njit
def effective_factor(body_int, body_real, gravity, ws, driven, c_mass, c_stiff, j_diag, blocks, ia, uu, dinv, gcol,
                     rvec, fsub, kb, dmat):
    """Tip-to-base elimination of S = c_mass M + c_stiff T^T diag(K_i) T + J^T diag(B_i) J + diag(E_i) + diag(j_diag)
    at the state in ``ws``, B_i = blocks[i, :, :3] (blocks (nbodies, 3, 6)) on body i's (x_com, y_com, theta),
    added to its modified inertia, and E_i = blocks[i, :nd, 3:3 + nd] on the nd coordinates of body i's own joint,
    added to its joint block D_i (the contacts' stiffness and damping, E_i those of the contacts between body i and
    its parent: ``contact.contact_newton_blocks``); neither need be symmetric (the module docstring: left and right
    factors); blocks (0, 3, 6): none.

    ``ws`` must hold pass 1 with every row (``kinematics_pass(..., True)``). Writes the factors that
    ``effective_apply`` needs and nothing else reads: uu (n, 3, 6) U = IA G in uu[:, :, :3] and the left factor
    U_L = IA^T G in uu[:, :, 3:], dinv (n, 3, 3) D^-1, gcol (n, 3, 3)
    the columns of G (gcol[i, :, col]), rvec (n, 2) r of B; ia (n, 3, 3), fsub (n, 2), kb (n,), dmat (3, 3) are
    scratch. Driven joints (``driven`` (nbodies,) uint8, or (0,)) are locked: their coordinates are no unknowns.
    A serial revolute chain without driven joints takes ``_effective_factor_serial`` (ia, fsub, dmat unused).
    Returns STATUS_SINGULAR | (body << 4) when a joint block is singular.
    """
    n = body_int.shape[0]
    if n > 0 and driven.shape[0] == 0 and body_int[0, FLAGS] & SERIAL_REVOLUTE:
        return _effective_factor_serial(body_real, gravity, ws, c_mass, c_stiff, j_diag, blocks, uu, dinv, gcol,
                                        rvec, kb)
    geometric_stiffness(body_int, body_real, gravity, ws, fsub, kb)
    with_blocks = blocks.shape[0] > 0
    for i in range(n):
        rvec[i, 0] = ws[i, RX]
        rvec[i, 1] = ws[i, RX + 1]
        for a in range(3):
            for b in range(3):
                ia[i, a, b] = blocks[i, a, b] if with_blocks else 0.0
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
            for a in range(3):  # U_L = IA^T G, the left factor (U where the contacts leave IA symmetric)
                uu[i, a, 3 + col] = ia[i, 0, a] * gx + ia[i, 1, a] * gy + ia[i, 2, a] * gt if with_blocks else (
                    uu[i, a, col])
        for r in range(nd):  # D = G^T IA G + joint diagonal
            for col in range(nd):
                dmat[r, col] = gcol[i, 0, r] * uu[i, 0, col] + gcol[i, 1, r] * uu[i, 1, col] + gcol[i, 2, r] * uu[
                    i, 2, col]
            dmat[r, r] += j_diag[k + r]
            if with_blocks:  # the joint's own block (the contacts between the body and its parent)
                for col in range(nd):
                    dmat[r, col] += blocks[i, r, 3 + col]
        if nd > 0 and not _inverse_small(dmat, nd, dinv[i]):
            return STATUS_SINGULAR | (i << 4)
        p = body_int[i, PARENT]
        if p < 0:
            continue
        # articulated matrix Ia = IA - U D^-1 U_L^T, shifted to the parent by B^T . B
        for a in range(3):
            for b in range(3):
                acc = ia[i, a, b]
                for r in range(nd):
                    for col in range(nd):
                        acc -= uu[i, a, r] * dinv[i, r, col] * uu[i, b, 3 + col]
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
def _effective_apply_serial(uu, dinv, gcol, rvec, rhs, ub, x):
    """``effective_apply`` on a serial revolute chain (flag SERIAL_REVOLUTE: the parent of body i is i - 1, q_i is
    its joint's coordinate) without driven joints: the same arithmetic in the same order, the child's condensed
    force (tip to base) and the parent's velocity (base to tip) carried in registers instead of the pa and vel rows
    (no store and reload through memory on the sweeps' dependency chains, no parent, flag or joint-type loads)."""
    n = uu.shape[0]
    fx = 0.0  # B^T (pA + U D^-1 u) of the child, carried to its parent
    fy = 0.0
    ft = 0.0
    for i in range(n - 1, -1, -1):  # tip to base: u = rhs - G^T pA, pA_parent = B^T (pA + U D^-1 u)
        u = rhs[i] - (gcol[i, 0, 0] * fx + gcol[i, 1, 0] * fy + ft)  # G = (gx, gy, 1)
        ub[i, 0] = u
        w = dinv[i, 0, 0] * u
        fx += uu[i, 0, 0] * w
        fy += uu[i, 1, 0] * w
        ft += uu[i, 2, 0] * w
        ft = -rvec[i, 1] * fx + rvec[i, 0] * fy + ft
    vx = 0.0  # v of the parent (the ground's: zero)
    vy = 0.0
    vt = 0.0
    for i in range(n):  # base to tip: x_i = D^-1 (u - U_L^T B v_P), v_i = B v_P + G x_i
        bx = vx - rvec[i, 1] * vt
        by = vy + rvec[i, 0] * vt
        xi = dinv[i, 0, 0] * (ub[i, 0] - (uu[i, 0, 3] * bx + uu[i, 1, 3] * by + uu[i, 2, 3] * vt))
        x[i] = xi
        vx = bx + gcol[i, 0, 0] * xi
        vy = by + gcol[i, 1, 0] * xi
        vt = vt + xi


@njit
def effective_apply(body_int, driven, uu, dinv, gcol, rvec, rhs, ub, pa, vel, x):
    """x = S^-1 rhs (nq,) with the factors of ``effective_factor``: two sweeps, no kinematics, O(N).

    Scratch ub, pa, vel (n, 3). Entries of driven coordinates in rhs are ignored and x is zero there. A serial
    revolute chain without driven joints takes ``_effective_apply_serial`` (pa, vel not written).
    """
    n = body_int.shape[0]
    if n > 0 and driven.shape[0] == 0 and body_int[0, FLAGS] & SERIAL_REVOLUTE:
        _effective_apply_serial(uu, dinv, gcol, rvec, rhs, ub, x)
        return
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
    for i in range(n):  # base to tip: x_i = D^-1 (u - U_L^T B v_P), v_i = B v_P + G x_i
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
                w += dinv[i, r, col] * (ub[i, col] - (uu[i, 0, 3 + col] * bx + uu[i, 1, 3 + col] * by
                                                      + uu[i, 2, 3 + col] * bt))
            x[k + r] = w
        for col in range(nd):
            bx += gcol[i, 0, col] * x[k + col]
            by += gcol[i, 1, col] * x[k + col]
            bt += gcol[i, 2, col] * x[k + col]
        vel[i, 0] = bx
        vel[i, 1] = by
        vel[i, 2] = bt


@njit
def effective_solve(body_int, body_real, gravity, q, zero_qd, driven, c_mass, c_stiff, j_diag, blocks, rhs, ws,
                    ia, uu, dinv, gcol, rvec, ub, pa, vel, fsub, kb, dmat, x):
    """x from (c_mass M(q) + c_stiff T^T diag(K_i) T + J^T diag(blocks) J + diag(j_diag)) x = rhs in O(N) (blocks
    as ``effective_factor``'s); returns a status.

    ``effective_factor`` at q, then ``effective_apply``. Scratch (n = nbodies): ia, dinv, gcol (n, 3, 3), uu (n, 3, 6);
    ub, pa, vel (n, 3); rvec, fsub (n, 2); kb (n,); dmat (3, 3). ``ws`` is the model workspace. Status
    STATUS_SINGULAR | (body << 4) when a joint block of the eliminated matrix is singular.
    """
    status = check_finite(q, zero_qd, rhs)
    if status != STATUS_OK:
        return status
    kinematics_pass(body_int, body_real, q, zero_qd, ws, np.bool_(True))
    status = effective_factor(body_int, body_real, gravity, ws, driven, c_mass, c_stiff, j_diag, blocks, ia, uu,
                              dinv, gcol, rvec, fsub, kb, dmat)
    if status != STATUS_OK:
        return status
    effective_apply(body_int, driven, uu, dinv, gcol, rvec, rhs, ub, pa, vel, x)
    return STATUS_OK


# ---- the generalised-alpha time loop --------------------------------------------------------------------------------


@njit
def newton_residual(inputs, key, system, t, y, qdd_free, lam, tau_need, residual, powers):
    """The residual of the dynamics at the state y = (q_free, qd_free, ...) with accelerations qdd_free (nf,) and
    loop multipliers lam (m,):

        residual[j] = (M qdd + h - tau - Q_elements + J^T lam)[free[j]]     (nf,)  [N m or N]

    by one inverse-dynamics pass (O(N)) after the inputs (tau functions, time-varying elements, drivers: their
    q, qd, qdd), the force elements and the contacts (their state in y after the work terms, held over the step)
    at (t, q, qd). With loops the loop residual phi, Jacobian J, ... are left in
    the loop scratch of ``system`` (system[22]: phi in [3], J in [5]). powers = (dissipated by the dampers,
    applied by tau, elements and drivers) [W] at this state. ``tau_need`` (nq,) is scratch. Returns the status.
    """
    body_int = system[0]
    free = system[5]
    drv_coord = system[6]
    tau_const = system[8]
    offsets = system[9]
    u = system[10]
    q = system[11]
    qd = system[12]
    tau = system[13]
    qdd = system[20]
    loops = system[22]
    nf = free.shape[0]
    status = _load_state(inputs, key, system, t, y)  # q, qd, u; qdd of the driven coordinates
    if status != STATUS_OK:
        return status
    for j in range(nf):
        qdd[free[j]] = qdd_free[j]
    power_tau = 0.0
    for k in range(tau.shape[0]):
        tau[k] = tau_const[k] + (u[offsets[0] + k] if offsets[0] >= 0 else 0.0)
        power_tau += tau[k] * qd[k]
    energy = system[18]
    energy[1] = 0.0
    energy[2] = 0.0
    if system[3].shape[0] > 0 or has_contacts(system[23]):
        status = element_forces(body_int, system[1], system[3], system[4], u, q, qd, system[14], system[15],
                                system[16], system[17], energy, system[19])
        if status != STATUS_OK:
            return status
        status = contact_loads(system[23], system[0], system[14], system[15], y, 2 * nf + 2, system[16], energy)
        if status != STATUS_OK:
            return status
        for k in range(tau.shape[0]):
            tau[k] += system[17][k]
    if loops[0].shape[0] == 0 and body_int.shape[0] > 0 and body_int[0, FLAGS] & SERIAL_REVOLUTE:
        # a serial chain: two register passes (the loops would read the kinematics columns this leaves out)
        status = inverse_dynamics_serial(system[1], system[2], q, qd, qdd, system[16], system[14], tau_need)
    else:
        status = inverse_dynamics(body_int, system[1], system[2], q, qd, qdd, system[16], system[14], tau_need)
    if status != STATUS_OK:
        return status
    for k in range(tau.shape[0]):
        tau_need[k] -= tau[k]
    if loops[0].shape[0] > 0:
        jac = loops[5]
        status = loop_constraints(body_int, system[1], loops[0], loops[1], q, qd, system[14], system[15], loops[2],
                                  loops[3], loops[4], jac, loops[6], loops[7])
        if status != STATUS_OK:
            return status
        for r in range(lam.shape[0]):
            for k in range(tau_need.shape[0]):
                tau_need[k] += jac[r, k] * lam[r]
    power_drive = 0.0  # the driver supplies what the equations at its coordinate lack
    for j in range(drv_coord.shape[0]):
        power_drive += tau_need[drv_coord[j]] * qd[drv_coord[j]]
    for j in range(nf):
        residual[j] = tau_need[free[j]]
    powers[0] = energy[1]
    powers[1] = power_tau + energy[2] + power_drive
    return STATUS_OK


@njit
def loop_schur(body_int, driven, uu, dinv, gcol, rvec, jac, free, ub, pa, vel, xcol, resp, gram):
    """The loop part of the Newton matrix [S J^T; J 0] (J: jac (m, nq) restricted to the free coordinates):
    resp[r] = S^-1 J_r^T (m solves with the factors of ``effective_factor``), gram = J S^-1 J^T (m, m),
    symmetrised. xcol (nq,) is scratch. O(N m + N m^2)."""
    m = jac.shape[0]
    for r in range(m):
        effective_apply(body_int, driven, uu, dinv, gcol, rvec, jac[r], ub, pa, vel, xcol)
        for j in range(free.shape[0]):
            resp[r, j] = xcol[free[j]]
    for r in range(m):
        for s in range(r + 1):
            g = 0.0
            for j in range(free.shape[0]):
                g += jac[r, free[j]] * resp[s, j] + jac[s, free[j]] * resp[r, j]
            gram[r, s] = 0.5 * g
            gram[s, r] = 0.5 * g


@njit
def newton_correction(body_int, driven, uu, dinv, gcol, rvec, free, residual, phi_scaled, jac, resp, gram, rcond,
                      ub, pa, vel, xfull, rhs_full, dx, dlam, work_m):
    """The Newton correction (dx (nf,), dlam (m,)) of [S J^T; J 0] [dx; dlam] = [residual; phi_scaled] by the
    Schur complement: Y = S^-1 residual, (J S^-1 J^T) dlam = J Y - phi_scaled (``loops.filtered_solve``:
    exact where the loops are independent, minimum-norm where redundant), dx = Y - (S^-1 J^T) dlam. Needs
    ``loop_schur``'s resp and gram (m = 0: dx = S^-1 residual). Returns False if the small system is not finite."""
    nf = free.shape[0]
    for k in range(rhs_full.shape[0]):
        rhs_full[k] = 0.0
    for j in range(nf):
        rhs_full[free[j]] = residual[j]
    effective_apply(body_int, driven, uu, dinv, gcol, rvec, rhs_full, ub, pa, vel, xfull)
    for j in range(nf):
        dx[j] = xfull[free[j]]
    return newton.schur_correction(free, jac, resp, gram, rcond, phi_scaled, dx, dlam, work_m)


@njit
def round_off_probe(y, nf, probe):
    """The state y with every position and velocity changed by two units in its last place, alternating in sign
    along the coordinates (the zigzag that a chain's sums of many terms amplify most), into ``probe``
    (``correction_round_off`` takes the residual there)."""
    for j in range(y.shape[0]):
        probe[j] = y[j]
    for j in range(2 * nf):
        probe[j] = y[j] * (1.0 + (2.0 if j % 2 == 0 else -2.0) * 2.220446049250313e-16)


@njit
def correction_round_off(system, residual, rate_scaled, c_damp, residual_probe, rate_probe, body_int, driven, uu,
                         dinv, gcol, rvec, jac, resp, gram, rcond, ub, pa, vel, xfull, rhs_full, dx_probe, dlam_probe,
                         work_m):
    """The round-off of a Newton correction at an iterate (its residual in ``residual``, its velocity rows
    J qd+ / c_damp in ``rate_scaled``) from the residual at the same iterate in ``round_off_probe``'s state
    (``residual_probe``, overwritten; its J qd+ in the loop scratch of ``system``): the change of the residual
    taken through the step's factors, max |S^-1 (residual change)| (the caller scales it as the state's correction
    max(c_stiff, c_damp) max |dqdd|). Where the accelerations along a whipping chain grow link by link, this floor
    is far above the tolerance (a 1e3-link chain landing: 2e-10 against newton_tol 1e-12), and no iteration can go
    below it. 0 where the correction is not finite."""
    nf = residual.shape[0]
    loops = system[22]
    for j in range(nf):
        residual_probe[j] -= residual[j]
    for r in range(rate_probe.shape[0]):
        rate_probe[r] = loops[4][r] / c_damp - rate_scaled[r]
    if not newton_correction(body_int, driven, uu, dinv, gcol, rvec, system[5], residual_probe, rate_probe, jac, resp,
                             gram, rcond, ub, pa, vel, xfull, rhs_full, dx_probe, dlam_probe, work_m):
        return 0.0
    size = 0.0
    for j in range(nf):
        size = max(size, abs(dx_probe[j]))
    return size


@njit
def integrate_generalized_alpha(inputs, key, system, y0, carry, t0, t_end, dt, nsteps_total, every, t_eval,
                                coefficients, newton_tol, max_newton, j_stiff, j_damp, t_out, y_out, output_budget,
                                events, events_key, directions, terminal, ev_t, ev_y, monitor, monitor_key, control,
                                info):
    """Generalised-alpha (Chung-Hulbert, Arnold-Bruls form; derivation in ``recursive_mbd.integrate.implicit``) from
    t0 to t_end in ``nsteps_total`` steps of dt (the last one landing on t_end), the whole loop compiled.

    State y = (q_free, qd_free, W_dissipated, W_applied) as in ``integrators``, then the contacts' state (anchors held
    over a step, in its residual and in the contacts' blocks of its Newton matrix; ``contact_update`` after it, as
    the explicit methods do). The contacts' modes (touching or not, sticking or sliding and which way, a first
    touch's damping scaled by its own rate or not) are the law's at every iterate (an active-set, semi-smooth
    Newton): each residual is the law's, clipped (a sticking row whose spring pulls past mu F_n slides at once), and
    the matrix's contact blocks take the modes it took (``contact_freeze``), factorised again where they changed;
    a step ends at an iterate whose correction of the law's residual converges, so the accepted state solves the
    law itself. (Holding the modes until Newton had converged on them let a row frozen sticking carry its stick
    spring far outside the friction cone at the iterates, up to 11 mu F_n on a 50-link landing, and took a pass of
    iterations per correction: 9.9 iterations a step against 5.2 on a 1e3-link landing.) y_out rows (n + m) are y
    and the loop multipliers lambda at the sample (linear in time between step ends at t_eval points and events);
    ``carry`` (2 + 2 nf + m + 1) keeps
    (powers (2), a (nf), qdd (nf), lam (m), started flag) from one call to the next (a progress bar's pieces): a
    call with carry[-1] = 0 starts from qdd = f(t0, y0) and a = qdd. coefficients = (alpha_m, alpha_f, gamma,
    beta). Each step: Newton on (qdd_free, lam, nu) with the matrix S factorised once at the step's first
    iterate (modified Newton: the matrix's own lagged terms already make the contraction linear), bordered by the
    loop rows in the stabilised index-2 form (J qd+ / c_damp by ``newton_correction``, phi / c_stiff by
    ``position_correction``; ``recursive_mbd.integrate.implicit``), converged when the correction of the new state
    max(c_stiff max |dqdd|, c_damp max |dqdd|, max |J^T dnu|) (positions and velocities) is <= newton_tol + the
    round-off of the update, or stalls (fresh factors, contracting by less than half) below 100 newton_tol or
    within ROUND_OFF_MARGIN of the correction's round-off measured at the iterate (``correction_round_off``, once
    per attempt: long chains whose accelerations grow towards their tip); with contacts, also when the error that
    the contraction predicts after the correction, theta / (1 - theta) times it (theta = correction / previous
    correction, at an iterate whose contact modes did not change), is within newton_tol, the round-off of the
    update and ROUND_OFF_MARGIN times the round-off measured at a stall of this step or of one of the last
    ROUND_OFF_STEPS (a landed 1e3-link chain's iteration reaches its round-off, 1e-10, in 2 to 3 iterations, and
    iterating on to a stall cost it 2 more iterations, a factorisation and a probe a step). Work terms by the
    trapezoidal rule on the
    powers of the last residual evaluation (within newton_tol of the step's state).
    Output at t_eval (cubic Hermite dense output) or every ``every``-th step; events located on the same
    interpolant; the buffers grow to at most ``output_budget`` floats with the events' (``integrators._store``): a
    sample or event that does not fit ends the run with STATUS_OUTPUT_FULL, t_fail its time. A step whose Newton
    iteration does not converge is taken again in two halves from its start (state, accelerations a and qdd,
    multipliers; the contacts' modes taken again at each half's first iterate, their anchors those of the state),
    each half split again where it fails, down to dt / 2^MAX_SPLITS: outputs and events between the halves as
    between steps, the ``every``-th sample at whole steps' ends; where a piece of dt / 2^MAX_SPLITS fails, the run
    stops with STATUS_NO_CONVERGENCE. info (6,): on a Newton failure (last correction of the state, max |residual|,
    step, iterations); info[4] counts the factorisations, info[5] the steps split in halves (added to).
    Returns (status, t_fail, count, t_out, y_out, nfev, nsteps, newton_iterations, nev, ev_t, ev_y).
    """
    free = system[5]
    nf = free.shape[0]
    n = y0.shape[0]
    nb = system[0].shape[0]
    nq = system[11].shape[0]
    body_int = system[0]
    body_real = system[1]
    loops = system[22]
    driven = system[7]
    ws = system[14]
    jac = loops[5]
    m = loops[3].shape[0]
    rcond = loops[15][4]
    alpha_m = coefficients[0]
    alpha_f = coefficients[1]
    gamma = coefficients[2]
    beta = coefficients[3]
    # factors and scratch, allocated once per run
    ia = np.zeros((nb, 3, 3))
    uu = np.zeros((nb, 3, 6))
    dinv = np.zeros((nb, 3, 3))
    gcol = np.zeros((nb, 3, 3))
    rvec = np.zeros((nb, 2))
    ub = np.zeros((nb, 3))
    pa = np.zeros((nb, 3))
    vel = np.zeros((nb, 3))
    fsub = np.zeros((nb, 2))
    kb = np.zeros(nb)
    dmat = np.zeros((3, 3))
    with_contacts = has_contacts(system[23])
    blocks = np.zeros((nb if with_contacts else 0, 3, 6))  # the contacts' part of the Newton matrix
    j_diag = np.zeros(nq)
    tau_need = np.zeros(nq)
    xfull = np.zeros(nq)
    rhs_full = np.zeros(nq)
    resp = np.zeros((m, nf))
    gram = np.zeros((m, m))
    work_m = np.zeros(m)
    rate_scaled = np.zeros(m)
    dlam = np.zeros(m)
    dnu = np.zeros(m)
    gram_pos = np.zeros((m, m))
    shift = np.zeros(nf)  # J_f^T nu: the position correction of the stabilised index-2 form
    lam = np.zeros(m)
    residual = np.zeros(nf)
    dx = np.zeros(nf)
    acc = np.zeros(nf)
    qdd = np.zeros(nf)
    qdd_new = np.zeros(nf)
    acc_new = np.zeros(nf)
    q_pred = np.zeros(nf)
    qd_pred = np.zeros(nf)
    # the round-off probe's scratch (``correction_round_off``)
    probe = np.zeros(n)
    residual_probe = np.zeros(nf)
    rate_probe = np.zeros(m)
    powers_probe = np.zeros(2)
    dx_probe = np.zeros(nf)
    qdd_probe = np.zeros(nf)
    lam_probe = np.zeros(m)
    dlam_probe = np.zeros(m)
    # the state, its rates (qd, qdd) at the step's ends for the dense output, the work rates, an output row
    y, y_new, rate, rate_new, powers, powers_new, ytmp, row = newton.run_state(y0, m)
    nfev = 0
    iterations = 0
    count = 0
    t = t0
    if not newton.load_carry(carry, powers, acc, qdd, lam):
        status = integrators.system_rhs(inputs, key, system, t0, y, ytmp)  # qdd, lam, powers at the start
        nfev += 1
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, 0, iterations, 0, ev_t, ev_y
        for j in range(nf):
            qdd[j] = ytmp[nf + j]
            acc[j] = qdd[j]
        for r in range(m):
            lam[r] = loops[12][r]
        powers[0] = ytmp[2 * nf]
        powers[1] = ytmp[2 * nf + 1]
    use_eval = t_eval.shape[0] > 0
    newton.output_row(y, lam, lam, 1.0, row)
    nev = np.int64(0)  # int64, not a literal: step_outputs compiles once
    status, t_fail, count, next_eval, t_out, y_out, ev = integrators.open_outputs(
        t_out, y_out, t_eval, t0, row, y, events, events_key, directions, ev_t, ev_y, output_budget)
    if status != STATUS_OK:
        return status, t_fail, count, t_out, y_out, nfev, 0, iterations, nev, ev_t, ev_y
    scale = (1.0 - alpha_f) / (1.0 - alpha_m)
    factored_h = -1.0  # the step of the factors in (ia, uu, dinv, gcol, rvec, resp, gram); -1: none
    fresh = False
    kept_round_off = 0.0  # the last round-off measured (``correction_round_off``, scaled) and its step
    kept_step = -ROUND_OFF_STEPS - 1
    lam_old = np.zeros(m)
    # a step of dt in pieces of 2^(MAX_SPLITS - depth) units of dt / 2^MAX_SPLITS, ``taken`` units of it taken
    units = 1 << MAX_SPLITS
    depth = 0
    taken = 0
    step = 0
    while step < nsteps_total:
        t_step = t_end if step == nsteps_total - 1 else t0 + (step + 1) * dt
        size = 1 << (MAX_SPLITS - depth)
        t_start = t0 + step * dt
        t_new = t_step if taken + size == units else t_start + (taken + size) * ((t_step - t_start) / units)
        h = t_new - t
        c_damp = h * gamma * scale
        c_stiff = h * h * beta * scale
        for j in range(nf):
            q_pred[j] = y[j] + h * y[nf + j] + h * h * (0.5 - beta) * acc[j]
            qd_pred[j] = y[nf + j] + h * (1.0 - gamma) * acc[j]
            qdd_new[j] = qdd[j]
            shift[j] = 0.0
        for r in range(m):
            lam_old[r] = lam[r]
        for k in range(nq):
            j_diag[k] = c_stiff * j_stiff[k] + c_damp * j_damp[k]
        converged = False
        correction = np.inf
        res_max = np.inf
        # attempt 0 reuses the factors of an earlier step (same h) while they contract fast; attempt 1, only when
        # that failed, starts again from the predictor with factors made at the step's own iterate
        for attempt in range(2):
            if attempt == 1:
                if fresh:
                    break
                factored_h = -1.0
                newton.restart_attempt(qdd_new, qdd, shift, lam, lam_old)
            fresh = False
            previous = np.inf
            correction = np.inf
            round_off = -1.0  # the correction's round-off at a stalled iterate; -1: not measured in this attempt
            # with contacts, a recent step's measured round-off while it serves (ROUND_OFF_STEPS), else 0
            kept = kept_round_off if with_contacts and step - kept_step <= ROUND_OFF_STEPS else 0.0
            for _iteration in range(max_newton):
                if with_contacts:  # the law decides each row's mode at this iterate (frozen below)
                    contact_release(system[23])
                status = integrators._poll(monitor, monitor_key, control, t, y, nfev)
                if status != STATUS_OK:
                    return status, t, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
                acc_max = 0.0
                pred_max = 0.0
                for j in range(nf):
                    acc_new[j] = ((1.0 - alpha_f) * qdd_new[j] + alpha_f * qdd[j] - alpha_m * acc[j]) / (1.0 - alpha_m)
                    y_new[j] = q_pred[j] + h * h * beta * acc_new[j] + shift[j]
                    y_new[nf + j] = qd_pred[j] + h * gamma * acc_new[j]
                    acc_max = max(acc_max, abs(acc_new[j]))
                    pred_max = max(pred_max, abs(q_pred[j]), abs(qd_pred[j]))
                status = newton_residual(inputs, key, system, t_new, y_new, qdd_new, lam, tau_need, residual,
                                         powers_new)
                nfev += 1
                if status != STATUS_OK:
                    if integrators._fatal(status):
                        return status, t, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
                    correction = np.inf  # a non-finite state: the iteration diverged
                    break
                changed = 0
                if with_contacts:  # the residual is the law's: freeze the modes it took for the matrix
                    changed = contact_freeze(system[23])
                res_max = 0.0
                for j in range(nf):
                    res_max = max(res_max, abs(residual[j]))
                for r in range(m):  # the velocity rows J qd+ (loops[4]) scaled by 1 / c_damp: d/dqdd+ = J
                    rate_scaled[r] = loops[4][r] / c_damp
                # (re)factorise at the current iterate: no factors for this h yet (steps t0 + k dt differ by
                # round-off: the same step), or a slow contraction with factors of an earlier step (the state has
                # moved on: make them again)
                # with contacts, also factors of this step that contract slowly: a contact made or broken since
                # they were made (a stiff force switched on that the matrix does not have; full Newton then)
                if newton.refactor_due(factored_h, h, fresh, correction, previous) or (with_contacts and (
                        changed > 0 or correction > newton.SLOW_CONTRACTION * previous)):
                    kinematics_pass(body_int, body_real, system[11], system[12], ws, np.bool_(True))
                    # the contacts' blocks from the residual's centre-of-mass positions and velocities and the
                    # orientations of every body from the pass above (the residual's inverse dynamics leaves them
                    # only in the rows of bodies with several children)
                    contact_matrix(system[23], body_int, ws, system[15], y_new, 2 * nf + 2, c_stiff, c_damp, blocks)
                    status = effective_factor(body_int, body_real, system[2], ws, driven, 1.0, c_stiff, j_diag,
                                              blocks, ia, uu, dinv, gcol, rvec, fsub, kb, dmat)
                    if status != STATUS_OK:
                        newton.record_failure(info, np.inf, res_max, step, iterations)
                        return status, t_new, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
                    if m > 0:
                        loop_schur(body_int, driven, uu, dinv, gcol, rvec, jac, free, ub, pa, vel, xfull, resp,
                                   gram)
                    factored_h = h
                    fresh = True
                    info[4] += 1  # factorisations
                previous = correction
                ok = newton_correction(body_int, driven, uu, dinv, gcol, rvec, free, residual, rate_scaled, jac,
                                       resp, gram, rcond, ub, pa, vel, xfull, rhs_full, dx, dlam, work_m)
                if ok and m > 0:
                    ok = newton.position_correction(jac, free, loops[3], rate_scaled, c_stiff, rcond, gram_pos, work_m,
                                             dnu, xfull)
                iterations += 1
                dx_max = 0.0
                for j in range(nf):
                    qdd_new[j] -= dx[j]
                    dx_max = max(dx_max, abs(dx[j]))
                for r in range(m):
                    lam[r] -= dlam[r]
                # the change of q+ and of qd+ (a velocity left off by d carries on as a position error growing like
                # d t: at small steps, where c_damp >> c_stiff, the velocity test decides)
                correction = max(c_stiff, c_damp) * dx_max
                if m > 0:  # shift -= J_f^T dnu (in xfull from position_correction), a position correction too
                    for j in range(nf):
                        shift[j] -= xfull[free[j]]
                        correction = max(correction, abs(xfull[free[j]]))
                if not (ok and math.isfinite(correction)):
                    correction = np.inf
                    break
                # floor: the round-off of q_pred + h^2 beta a+ and qd_pred + h gamma a+ (large terms that cancel
                # when h omega >> 1)
                floor = 16.0 * 2.220446049250313e-16 * max(pred_max, h * max(h * beta, gamma) * acc_max)
                # converged; or, with factors of this step, stalled at the round-off of the residual (sums over up
                # to N bodies): no longer contracting, more iterations cannot improve it; just above the tolerance,
                # or within the round-off measured at the iterate (once per attempt, on this route only)
                stalled = fresh and correction > 0.5 * previous
                if stalled and correction > max(100.0 * newton_tol, newton_tol + ROUND_OFF_MARGIN * kept) and (
                        round_off < 0.0):
                    for j in range(nf):  # the accelerations of the residual's iterate (before this correction)
                        qdd_probe[j] = qdd_new[j] + dx[j]
                    for r in range(m):
                        lam_probe[r] = lam[r] + dlam[r]
                    round_off_probe(y_new, nf, probe)
                    status = newton_residual(inputs, key, system, t_new, probe, qdd_probe, lam_probe, tau_need,
                                             residual_probe, powers_probe)
                    nfev += 1
                    round_off = 0.0  # (a probe that is not finite measures nothing: the plain tests decide)
                    if status == STATUS_OK:
                        round_off = correction_round_off(system, residual, rate_scaled, c_damp, residual_probe,
                                                         rate_probe, body_int, driven, uu, dinv, gcol, rvec, jac, resp,
                                                         gram, rcond, ub, pa, vel, xfull, rhs_full, dx_probe,
                                                         dlam_probe, work_m)
                    elif integrators._fatal(status):
                        return status, t, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
                    round_off *= max(c_stiff, c_damp)
                    kept_round_off = round_off
                    kept_step = step
                    kept = round_off
                # the error left after this correction, from the contraction theta = correction / previous of two
                # iterates with the same contact modes: theta / (1 - theta) correction (Hairer and Wanner, Solving
                # ODEs II, IV.8: the sum of the corrections still to come), within the tolerance and the round-off
                # (the iteration cannot go below the round-off: the next correction would be noise)
                reach = newton_tol + floor + ROUND_OFF_MARGIN * max(round_off, kept)
                theta = correction / previous if previous < np.inf else 1.0
                if correction <= newton_tol + floor or (with_contacts and changed == 0 and theta < 1.0 and (
                        theta / (1.0 - theta) * correction <= reach)) or (stalled and (
                        correction <= 100.0 * newton_tol or correction <= reach)):
                    converged = True
                    break
            if converged:
                break
        if not converged:
            if depth == MAX_SPLITS:
                newton.record_failure(info, correction, res_max, step, iterations)
                return STATUS_NO_CONVERGENCE, t_new, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
            depth += 1  # the piece again in two halves from its start (y, acc, qdd unchanged; lam restored)
            info[5] += 1
            for r in range(m):
                lam[r] = lam_old[r]
            continue
        for j in range(nf):
            acc_new[j] = ((1.0 - alpha_f) * qdd_new[j] + alpha_f * qdd[j] - alpha_m * acc[j]) / (1.0 - alpha_m)
            y_new[j] = q_pred[j] + h * h * beta * acc_new[j] + shift[j]
            y_new[nf + j] = qd_pred[j] + h * gamma * acc_new[j]
            rate[j] = y[nf + j]
            rate[nf + j] = qdd[j]
            rate_new[j] = y_new[nf + j]
            rate_new[nf + j] = qdd_new[j]
        # work terms: trapezoidal rule on the powers (second order, like the scheme)
        y_new[2 * nf] = y[2 * nf] + 0.5 * h * (powers[0] + powers_new[0])
        y_new[2 * nf + 1] = y[2 * nf + 1] + 0.5 * h * (powers[1] + powers_new[1])
        interpolant = newton.PlanarHermite(y, y_new, rate, rate_new, 2 * nf, lam_old, lam, row)
        status, t_fail, stepped, count, next_eval, nev, t_out, y_out, ev_t, ev_y = integrators.step_outputs(
            interpolant, t, h, t_new, y_new, events, events_key, directions, terminal, ev, ytmp, t_eval, next_eval,
            t_out, y_out, count, ev_t, ev_y, nev, output_budget)
        if status != STATUS_OK:  # a failed event function (the step not taken), a full buffer, a terminal event
            done = step + 1 if stepped else step
            return status, t_fail, count, t_out, y_out, nfev, done, iterations, nev, ev_t, ev_y
        for j in range(n):
            y[j] = y_new[j]
        for j in range(nf):
            acc[j] = acc_new[j]
            qdd[j] = qdd_new[j]
        powers[0] = powers_new[0]
        powers[1] = powers_new[1]
        t = t_new
        if with_contacts:  # the contacts' state after the step (anchors, impact speeds), for the next
            status = contact_update(inputs, key, system, t, y)
            if status != STATUS_OK:
                return status, t, count, t_out, y_out, nfev, step + 1, iterations, nev, ev_t, ev_y
            for j in range(2 * nf + 2, n):
                y_new[j] = y[j]
        taken += size
        if taken < units:  # a half taken: the next one; both halves of a piece taken: the piece is
            while depth > 0 and taken % (2 * size) == 0:
                depth -= 1
                size *= 2
            continue
        if not use_eval and ((step + 1) % every == 0 or step == nsteps_total - 1):
            stored, count, t_out, y_out = newton.store_row(t_out, y_out, count, t, y, lam, row,
                                                           integrators._left(output_budget, ev_t, ev_y))
            if not stored:
                return STATUS_OUTPUT_FULL, t, count, t_out, y_out, nfev, step + 1, iterations, nev, ev_t, ev_y
        step += 1
        depth = 0
        taken = 0
    newton.save_carry(carry, powers, acc, qdd, lam)
    return STATUS_OK, t, count, t_out, y_out, nfev, nsteps_total, iterations, nev, ev_t, ev_y
