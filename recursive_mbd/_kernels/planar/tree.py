"""Recursive kernels on a tree of planar rigid bodies (the relative-coordinate lecture, generalised to trees and all
joint types).

Each body i is described at its centre of mass c_i by the velocity v_i = (xdot, ydot, thetadot) in ground axes and
the diagonal mass M_i = diag(m, m, J) (the relative-coordinate lecture, eq. 3.21). A joint to the parent P gives
(eqs. 3.18-3.19)

    v_i  = B_i v_P  + G_i qdot_i                      B_i = [[1, 0, -r_y], [0, 1, r_x], [0, 0, 1]]
    v_i' = B_i v_P' + G_i qddot_i + H_i               r = c_i - c_P

so B is fully described by r, and H has no angular component. With d = joint point - c_P and e = c_i - joint
point (r = d + e), omega_P the parent's and omega_i the child's angular velocity, and perp(x, y) = (-y, x):

    revolute   G = (perp(e), 1)       H = -omega_P^2 d - omega_i^2 e
    prismatic  G = (R_P a, 0)         H = -omega_P^2 r + 2 omega_P qdot perp(R_P a)
    fixed      G = (empty)            H = -omega_P^2 r
    planar     G = [R_P, perp(e); 0, 0, 1]
                                      H = -omega_P^2 d - omega_i^2 e + 2 omega_P perp(R_P (xdot, ydot))

All kernels are pure functions of arrays: the packed model (``body_int``, ``body_real``, ``gravity``), the state,
a workspace ``ws`` (``layout``) and preallocated outputs. They return a status code (``layout.decode_status``).
Bodies are numbered so that parents come before children, so every pass is a plain loop.
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .. import compile_notice  # noqa: F401  (says when numba compiles: in place before any kernel is called)
from ..joint_types import PLANAR, PRISMATIC, REVOLUTE
from ..layout import (
    ACC,
    ALL_REVOLUTE,
    ANGLE,
    AXX,
    COX,
    CS,
    FIRST_ROW_CHILD,
    FLAGS,
    GX,
    HX,
    IA,
    INERTIA,
    JTYPE,
    MASS,
    NDOF,
    NEXT_IS_CHILD,
    OM,
    PARENT,
    PDINV,
    PG,
    PPX,
    PU,
    PUU,
    QA,
    QIDX,
    ROW_CHILDREN,
    RX,
    SERIAL_REVOLUTE,
    SN,
    STATUS_NONFINITE_Q,
    STATUS_NONFINITE_QD,
    STATUS_NONFINITE_TAU,
    STATUS_OK,
    STATUS_OVERFLOW,
    STATUS_SINGULAR,
    TH,
    U1,
    UU,
)
from ..trig import sincos_array, sincos_of_sum_array

# FMA contraction only: the kernels rely on NaN comparisons (singularity and finiteness checks), which the
# 'nnan'/'ninf' fast-math flags would let LLVM delete. IEEE division (error_model="numpy"): a kernel never raises,
# it reports through its status code. No reference counting (_nrt=False): these kernels allocate nothing and return
# no array, they only read and write arrays that their caller holds for the duration of the call, so numba's
# atomic increments and decrements of every array argument on entry to and exit from each kernel (and the
# allocation of a reference-count record per array at a call from Python) are pure overhead; they cost more than
# the arithmetic of a 2-body model and a quarter of a time loop's evaluation of a 100-body chain.
NJIT_OPTIONS = dict(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=False)
njit = numba.njit(**NJIT_OPTIONS)

# A joint whose articulated inertia G^T M^ G is below this fraction of its scale is singular (a massless tip body,
# a point mass on its own hinge, ...). The scale is the same quadratic form with |M^| entries.
SINGULAR_RTOL = 1e-12


@njit
def check_finite(q, qd, tau):
    """Return a status naming the first non-finite entry of q, qd or tau (index = coordinate)."""
    # a branch-free OR over all entries (it vectorises); the loops below that find the entry run only if it is set
    bad = False
    for k in range(q.shape[0]):
        bad |= not math.isfinite(q[k])
    for k in range(qd.shape[0]):
        bad |= not math.isfinite(qd[k])
    for k in range(tau.shape[0]):
        bad |= not math.isfinite(tau[k])
    if not bad:
        return STATUS_OK
    for k in range(q.shape[0]):
        if not math.isfinite(q[k]):
            return STATUS_NONFINITE_Q | (k << 4)
    for k in range(qd.shape[0]):
        if not math.isfinite(qd[k]):
            return STATUS_NONFINITE_QD | (k << 4)
    for k in range(tau.shape[0]):
        if not math.isfinite(tau[k]):
            return STATUS_NONFINITE_TAU | (k << 4)
    return STATUS_OK


@njit
def check_output(x):
    """STATUS_OVERFLOW naming the first non-finite entry of the output x (its inputs were finite), or STATUS_OK."""
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return STATUS_OVERFLOW | (k << 4)
    return STATUS_OK


# kernels pass the flag as np.bool_, not a literal True/False: one compiled specialisation for both values
@njit
def kinematics_pass(body_int, body_real, q, qd, ws, every_row):
    """Pass 1, base to tip: angles, angular velocities, r (defines B), G and H of every joint (eqs. 3.18-3.19).

    The orientation (cos, sin, omega) of body i - 1 is carried in registers to its child i; it is stored in the
    workspace row only for bodies with other children, or for every body when ``every_row`` is True.
    """
    # the relative angles' sines and cosines first, in one branch-free vectorised loop (they are off the
    # recursion's chain); the main loop reads them from the CS/SN columns before it stores the absolute ones there
    for i in range(body_int.shape[0]):
        jt = body_int[i, JTYPE]
        k = body_int[i, QIDX]
        phi = body_real[i, ANGLE]
        if jt == REVOLUTE:
            phi += q[k]
        elif jt == PLANAR:
            phi += q[k + 2]
        ws[i, TH] = phi
    sincos_array(ws[:, TH], ws[:, SN], ws[:, CS])
    c = 1.0  # orientation of the previous body
    s = 0.0
    th = 0.0
    om = 0.0
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        jt = body_int[i, JTYPE]
        k = body_int[i, QIDX]
        if p < 0:
            th_p = 0.0
            cp = 1.0
            sp = 0.0
            om_p = 0.0
        elif p == i - 1:
            th_p = th
            cp = c
            sp = s
            om_p = om
        else:
            th_p = ws[p, TH]
            cp = ws[p, CS]
            sp = ws[p, SN]
            om_p = ws[p, OM]
        # d in the parent frame: parent point relative to the parent's centre of mass, plus the joint's slide
        dlx = body_real[i, PPX]
        dly = body_real[i, PPX + 1]
        phi = body_real[i, ANGLE]  # rotation of the child relative to the parent
        om = om_p
        vlx = 0.0  # joint slide rate, parent frame
        vly = 0.0
        if jt == REVOLUTE:
            phi += q[k]
            om += qd[k]
        elif jt == PRISMATIC:
            ax = body_real[i, AXX]
            ay = body_real[i, AXX + 1]
            dlx += q[k] * ax
            dly += q[k] * ay
            vlx = qd[k] * ax
            vly = qd[k] * ay
        elif jt == PLANAR:
            dlx += q[k]
            dly += q[k + 1]
            phi += q[k + 2]
            vlx = qd[k]
            vly = qd[k + 1]
            om += qd[k + 2]
        # compose the parent's rotation with the relative one: the trig sees the small relative angle, not the
        # absolute angle that grows along a chain (full range reduction would cost a third of this pass)
        th = th_p + phi
        s_phi = ws[i, SN]
        c_phi = ws[i, CS]
        c = cp * c_phi - sp * s_phi
        s = sp * c_phi + cp * s_phi
        dx = cp * dlx - sp * dly
        dy = sp * dlx + cp * dly
        colx = body_real[i, COX]
        coly = body_real[i, COX + 1]
        ex = c * colx - s * coly
        ey = s * colx + c * coly
        vgx = cp * vlx - sp * vly
        vgy = sp * vlx + cp * vly
        ws[i, RX] = dx + ex
        ws[i, RX + 1] = dy + ey
        ws[i, HX] = -om_p * om_p * dx - om * om * ex - 2.0 * om_p * vgy
        ws[i, HX + 1] = -om_p * om_p * dy - om * om * ey + 2.0 * om_p * vgx
        ws[i, TH] = th
        if jt == PRISMATIC:
            ws[i, GX] = cp * body_real[i, AXX] - sp * body_real[i, AXX + 1]
            ws[i, GX + 1] = sp * body_real[i, AXX] + cp * body_real[i, AXX + 1]
        else:
            ws[i, GX] = -ey
            ws[i, GX + 1] = ex
        if every_row or body_int[i, FLAGS] & ROW_CHILDREN:
            ws[i, CS] = c
            ws[i, SN] = s
            ws[i, OM] = om
        if jt == PLANAR:
            # G (row-major 3x3): columns x-slide, y-slide (parent axes), rotation
            ws[i, PG + 0] = cp
            ws[i, PG + 1] = -sp
            ws[i, PG + 2] = -ey
            ws[i, PG + 3] = sp
            ws[i, PG + 4] = cp
            ws[i, PG + 5] = ex
            ws[i, PG + 6] = 0.0
            ws[i, PG + 7] = 0.0
            ws[i, PG + 8] = 1.0


@njit
def motion_column(body_int, ws, i, col):
    """Column ``col`` of G_i (ground axes at the centre of mass of body i) as (gx, gy, g_theta)."""
    jt = body_int[i, JTYPE]
    if jt == PLANAR:
        return ws[i, PG + col], ws[i, PG + 3 + col], ws[i, PG + 6 + col]
    return ws[i, GX], ws[i, GX + 1], 1.0 if jt == REVOLUTE else 0.0


@njit
def _store_row(ws, i, a, b, c, d, e, f, f0, f1, f2):
    """ws[i, IA:IA+6] = the symmetric 3x3 (a..f), ws[i, QA:QA+3] = (f0, f1, f2)."""
    ws[i, IA + 0] = a
    ws[i, IA + 1] = b
    ws[i, IA + 2] = c
    ws[i, IA + 3] = d
    ws[i, IA + 4] = e
    ws[i, IA + 5] = f
    ws[i, QA + 0] = f0
    ws[i, QA + 1] = f1
    ws[i, QA + 2] = f2


@njit
def _inertia_row(ws, i):
    """The symmetric 3x3 (a..f) in ws[i, IA:IA+6] (``_store_row``)."""
    return ws[i, IA + 0], ws[i, IA + 1], ws[i, IA + 2], ws[i, IA + 3], ws[i, IA + 4], ws[i, IA + 5]


@njit
def _shift_inertia(rx, ry, a, b, c, d, e, f):
    """The entries (02, 12, 22) of B^T M B for the symmetric M = (a, b, c, d, e, f) and B of r = (rx, ry)
    (eq. 3.24b); its 00, 01 and 11 entries are M's own."""
    t02 = -ry * a + rx * b + c
    t12 = -ry * b + rx * d + e
    return t02, t12, -ry * t02 + rx * t12 - ry * c + rx * e + f


@njit
def _add_row(ws, i, a, b, c, d, e, f, f0, f1, f2):
    """ws[i, IA:IA+6] += the symmetric 3x3 (a..f), ws[i, QA:QA+3] += (f0, f1, f2)."""
    ws[i, IA + 0] += a
    ws[i, IA + 1] += b
    ws[i, IA + 2] += c
    ws[i, IA + 3] += d
    ws[i, IA + 4] += e
    ws[i, IA + 5] += f
    ws[i, QA + 0] += f0
    ws[i, QA + 1] += f1
    ws[i, QA + 2] += f2


@njit
def _shift_force_to_parent(ws, i, p, f0, f1, f2):
    """ws[p, QA:QA+3] += B_i^T f: a force at c_i moved to c_P keeps its resultant and gains the moment r x f."""
    ws[p, QA] += f0
    ws[p, QA + 1] += f1
    ws[p, QA + 2] += f2 - ws[i, RX + 1] * f0 + ws[i, RX] * f1


@njit
def _condense_planar(ws, i, tau, k):
    """Eliminate the 3 coordinates of a planar joint (eq. 3.23) in place; returns False if singular.

    On entry ws[i, IA:IA+6] holds M^ and ws[i, QA:QA+3] holds Q^ - M^ H; on exit they hold the reduced
    M^ - U D^-1 U^T and Q^ - M^ H - U D^-1 u, and U, D^-1, u are stored for the acceleration pass.
    """
    # full symmetric M^ from its 6 stored entries
    a, b, c, d, e, f = _inertia_row(ws, i)
    for col in range(3):
        g0 = ws[i, PG + col]
        g1 = ws[i, PG + 3 + col]
        g2 = ws[i, PG + 6 + col]
        ws[i, PU + col] = a * g0 + b * g1 + c * g2
        ws[i, PU + 3 + col] = b * g0 + d * g1 + e * g2
        ws[i, PU + 6 + col] = c * g0 + e * g1 + f * g2
    # D = G^T U (symmetric positive definite unless singular), by Cholesky. Each pivot is judged against the
    # size of the terms its diagonal entry is summed from, (sum_r |G_rk| sqrt(M^_rr))^2 (M^ positive semidefinite:
    # |M^_rs| <= sqrt(M^_rr M^_ss)), in its own unit: kg for a translation, kg m^2 for the rotation. One scale for
    # all three (|a| + |d| + |f|) mixed the units and refused regular joints whose rotational inertia is small
    # beside the subtree's mass (the free end of a chain of 1e4 links of 1 cm).
    sa = math.sqrt(abs(a))
    sd = math.sqrt(abs(d))
    sf = math.sqrt(abs(f))
    scale0 = sa * abs(ws[i, PG + 0]) + sd * abs(ws[i, PG + 3]) + sf * abs(ws[i, PG + 6])
    scale1 = sa * abs(ws[i, PG + 1]) + sd * abs(ws[i, PG + 4]) + sf * abs(ws[i, PG + 7])
    scale2 = sa * abs(ws[i, PG + 2]) + sd * abs(ws[i, PG + 5]) + sf * abs(ws[i, PG + 8])
    dm00 = ws[i, PG + 0] * ws[i, PU + 0] + ws[i, PG + 3] * ws[i, PU + 3] + ws[i, PG + 6] * ws[i, PU + 6]
    dm01 = ws[i, PG + 0] * ws[i, PU + 1] + ws[i, PG + 3] * ws[i, PU + 4] + ws[i, PG + 6] * ws[i, PU + 7]
    dm02 = ws[i, PG + 0] * ws[i, PU + 2] + ws[i, PG + 3] * ws[i, PU + 5] + ws[i, PG + 6] * ws[i, PU + 8]
    dm11 = ws[i, PG + 1] * ws[i, PU + 1] + ws[i, PG + 4] * ws[i, PU + 4] + ws[i, PG + 7] * ws[i, PU + 7]
    dm12 = ws[i, PG + 1] * ws[i, PU + 2] + ws[i, PG + 4] * ws[i, PU + 5] + ws[i, PG + 7] * ws[i, PU + 8]
    dm22 = ws[i, PG + 2] * ws[i, PU + 2] + ws[i, PG + 5] * ws[i, PU + 5] + ws[i, PG + 8] * ws[i, PU + 8]
    det = (dm00 * (dm11 * dm22 - dm12 * dm12) - dm01 * (dm01 * dm22 - dm12 * dm02)
           + dm02 * (dm01 * dm12 - dm11 * dm02))
    p1 = dm00
    p2 = dm00 * dm11 - dm01 * dm01
    # the LDL^T pivots p1, p2 / p1 and det / p2 positive <=> D positive definite, each above its scale
    if not (p1 > SINGULAR_RTOL * scale0 * scale0 and p2 > SINGULAR_RTOL * scale1 * scale1 * p1
            and det > SINGULAR_RTOL * scale2 * scale2 * p2):
        return False
    inv_det = 1.0 / det
    ws[i, PDINV + 0] = (dm11 * dm22 - dm12 * dm12) * inv_det
    ws[i, PDINV + 1] = (dm02 * dm12 - dm01 * dm22) * inv_det
    ws[i, PDINV + 2] = (dm01 * dm12 - dm02 * dm11) * inv_det
    ws[i, PDINV + 3] = ws[i, PDINV + 1]
    ws[i, PDINV + 4] = (dm00 * dm22 - dm02 * dm02) * inv_det
    ws[i, PDINV + 5] = (dm01 * dm02 - dm00 * dm12) * inv_det
    ws[i, PDINV + 6] = ws[i, PDINV + 2]
    ws[i, PDINV + 7] = ws[i, PDINV + 5]
    ws[i, PDINV + 8] = (dm00 * dm11 - dm01 * dm01) * inv_det
    # u = tau + G^T (Q^ - M^ H)
    for col in range(3):
        ws[i, PUU + col] = (tau[k + col] + ws[i, PG + col] * ws[i, QA] + ws[i, PG + 3 + col] * ws[i, QA + 1]
                            + ws[i, PG + 6 + col] * ws[i, QA + 2])
    # W = U D^-1 (3x3), then reduce: M^ -= W U^T, Q -= W u
    for row in range(3):
        w0 = 0.0
        w1 = 0.0
        w2 = 0.0
        for m in range(3):
            w0 += ws[i, PU + 3 * row + m] * ws[i, PDINV + 3 * m + 0]
            w1 += ws[i, PU + 3 * row + m] * ws[i, PDINV + 3 * m + 1]
            w2 += ws[i, PU + 3 * row + m] * ws[i, PDINV + 3 * m + 2]
        ws[i, QA + row] -= w0 * ws[i, PUU] + w1 * ws[i, PUU + 1] + w2 * ws[i, PUU + 2]
        for col in range(row, 3):
            red = w0 * ws[i, PU + 3 * col] + w1 * ws[i, PU + 3 * col + 1] + w2 * ws[i, PU + 3 * col + 2]
            if row == 0:
                ws[i, IA + col] -= red
            elif row == 1:
                ws[i, IA + 2 + col] -= red
            else:
                ws[i, IA + 5] -= red
    return True


# ---- specialised passes, kept for speed (benchmarks/forward_dynamics.py): ``_kinematics_pass_revolute`` and
# ``_forward_dynamics_revolute`` mirror the general ``kinematics_pass`` and ``forward_dynamics`` (all joints revolute),
# ``_kinematics_pass_serial`` and ``_forward_dynamics_serial`` mirror them again for a serial chain, and
# ``inverse_dynamics_serial`` mirrors ``inverse_dynamics``: the same arithmetic in the same order (bit for bit),
# written out without the general passes' loads and branches. Their repetition is deliberate: change a pass and
# its mirrors together.
@njit
def _kinematics_pass_revolute(body_int, body_real, q, qd, ws):
    """``kinematics_pass`` of a model whose joints are all revolute (coordinate i is body i's): the same
    arithmetic, without the joint-type loads and branches per body; G = (perp(e), 1) and H = -omega_P^2 d -
    omega_i^2 e (eqs. 3.18-3.19); the relative angle is read back from the TH column it was written to."""
    n = body_int.shape[0]
    for i in range(n):
        ws[i, TH] = body_real[i, ANGLE] + q[i]
    sincos_array(ws[:, TH], ws[:, SN], ws[:, CS])
    c = 1.0
    s = 0.0
    th = 0.0
    om = 0.0
    for i in range(n):
        p = body_int[i, PARENT]
        if p < 0:
            th_p = 0.0
            cp = 1.0
            sp = 0.0
            om_p = 0.0
        elif p == i - 1:
            th_p = th
            cp = c
            sp = s
            om_p = om
        else:
            th_p = ws[p, TH]
            cp = ws[p, CS]
            sp = ws[p, SN]
            om_p = ws[p, OM]
        dlx = body_real[i, PPX]
        dly = body_real[i, PPX + 1]
        om = om_p + qd[i]
        th = th_p + ws[i, TH]
        s_phi = ws[i, SN]
        c_phi = ws[i, CS]
        c = cp * c_phi - sp * s_phi
        s = sp * c_phi + cp * s_phi
        dx = cp * dlx - sp * dly
        dy = sp * dlx + cp * dly
        colx = body_real[i, COX]
        coly = body_real[i, COX + 1]
        ex = c * colx - s * coly
        ey = s * colx + c * coly
        ws[i, RX] = dx + ex
        ws[i, RX + 1] = dy + ey
        ws[i, HX] = -om_p * om_p * dx - om * om * ex
        ws[i, HX + 1] = -om_p * om_p * dy - om * om * ey
        ws[i, GX] = -ey
        ws[i, GX + 1] = ex
        if body_int[i, FLAGS] & ROW_CHILDREN:  # the orientation only where a child other than i + 1 reads it
            ws[i, TH] = th
            ws[i, CS] = c
            ws[i, SN] = s
            ws[i, OM] = om


@njit
def _forward_dynamics_revolute(body_int, body_real, gravity, q, qd, tau, wrench, ws, qdd):
    """``forward_dynamics`` of a model whose joints are all revolute and none driven (``ALL_REVOLUTE``): the same
    arithmetic in the same order (results equal bit for bit), without the joint-type and dof loads and branches per
    body. Chosen once per call from a flag of the model, so each pass is one straight path per body."""
    n = body_int.shape[0]
    has_wrench = wrench.shape[0] > 0
    _kinematics_pass_revolute(body_int, body_real, q, qd, ws)

    # pass 2, tip to base (eqs. 3.23, 3.24b); G = (gx, gy, 1)
    ca = cb = cc = cd = ce = cf = cq0 = cq1 = cq2 = 0.0
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        flags = body_int[i, FLAGS]
        a = body_real[i, MASS]
        b = 0.0
        c = 0.0
        d = a
        e = 0.0
        f = body_real[i, INERTIA]
        q0 = a * gravity[0]
        q1 = a * gravity[1]
        q2 = 0.0
        if has_wrench:
            q0 += wrench[i, 0]
            q1 += wrench[i, 1]
            q2 += wrench[i, 2]
        if flags & NEXT_IS_CHILD:
            a += ca
            b += cb
            c += cc
            d += cd
            e += ce
            f += cf
            q0 += cq0
            q1 += cq1
            q2 += cq2
        if flags & ROW_CHILDREN:
            a += ws[i, IA + 0]
            b += ws[i, IA + 1]
            c += ws[i, IA + 2]
            d += ws[i, IA + 3]
            e += ws[i, IA + 4]
            f += ws[i, IA + 5]
            q0 += ws[i, QA + 0]
            q1 += ws[i, QA + 1]
            q2 += ws[i, QA + 2]
        hx = ws[i, HX]
        hy = ws[i, HX + 1]
        f0 = q0 - (a * hx + b * hy)
        f1 = q1 - (b * hx + d * hy)
        f2 = q2 - (c * hx + e * hy)
        gx = ws[i, GX]
        gy = ws[i, GX + 1]
        u0 = a * gx + b * gy + c
        u1 = b * gx + d * gy + e
        u2 = c * gx + e * gy + f
        dd = gx * u0 + gy * u1 + u2
        scale = (abs(a) + abs(d)) * (gx * gx + gy * gy) + abs(f)
        if not (dd > SINGULAR_RTOL * scale):
            return STATUS_SINGULAR | (i << 4)
        dinv = 1.0 / dd
        uu = tau[i] + gx * f0 + gy * f1 + f2
        k0 = u0 * dinv
        k1 = u1 * dinv
        k2 = u2 * dinv
        w = uu * dinv
        ws[i, U1 + 0] = k0
        ws[i, U1 + 1] = k1
        ws[i, U1 + 2] = k2
        ws[i, UU] = w
        a -= u0 * k0
        b -= u0 * k1
        c -= u0 * k2
        d -= u1 * k1
        e -= u1 * k2
        f -= u2 * k2
        f0 -= u0 * w
        f1 -= u1 * w
        f2 -= u2 * w
        if p >= 0:
            rx = ws[i, RX]
            ry = ws[i, RX + 1]
            t02, t12, t22 = _shift_inertia(rx, ry, a, b, c, d, e, f)
            m0 = f2 - ry * f0 + rx * f1
            if p == i - 1:
                ca, cb, cc, cd, ce, cf, cq0, cq1, cq2 = a, b, t02, d, t12, t22, f0, f1, m0
            elif flags & FIRST_ROW_CHILD:
                _store_row(ws, p, a, b, t02, d, t12, t22, f0, f1, m0)
            else:
                _add_row(ws, p, a, b, t02, d, t12, t22, f0, f1, m0)

    # pass 3, base to tip (eqs. 3.23, 3.19a); overflow probe as in forward_dynamics
    a0 = a1 = a2 = 0.0
    probe = 0.0
    for i in range(n):
        p = body_int[i, PARENT]
        if p < 0:
            ap0 = ap1 = ap2 = 0.0
        elif p == i - 1:
            ap0 = a0
            ap1 = a1
            ap2 = a2
        else:
            ap0 = ws[p, ACC]
            ap1 = ws[p, ACC + 1]
            ap2 = ws[p, ACC + 2]
        b0 = ap0 - ws[i, RX + 1] * ap2
        b1 = ap1 + ws[i, RX] * ap2
        acc = ws[i, UU] - (ws[i, U1] * b0 + ws[i, U1 + 1] * b1 + ws[i, U1 + 2] * ap2)
        qdd[i] = acc
        probe += acc * 0.0
        a0 = b0 + ws[i, HX] + ws[i, GX] * acc
        a1 = b1 + ws[i, HX + 1] + ws[i, GX + 1] * acc
        a2 = ap2 + acc
        if body_int[i, FLAGS] & ROW_CHILDREN:  # only a child other than i + 1 reads it from the row
            ws[i, ACC] = a0
            ws[i, ACC + 1] = a1
            ws[i, ACC + 2] = a2
    if not math.isfinite(probe):
        return check_output(qdd)
    return STATUS_OK



@njit
def _kinematics_pass_serial(body_real, q, qd, ws):
    """Pass 1 of a serial chain (``SERIAL_REVOLUTE``: the parent of body i is i - 1), base to tip: each body's
    orientation (cos, sin) and angular velocity into ws[:, CS], ws[:, SN], ws[:, OM], the parent's carried in
    registers (the composition of ``_kinematics_pass_revolute``). The relative angles' sines and cosines come first
    from one vectorised loop over offset + q (no angle column written). The joint geometry r, G, H is left to pass 2
    (``_forward_dynamics_serial``), whose dependency chain leaves the issue slots it needs idle: this pass is then
    only its own chain. Returns a probe: NaN if some q[i] or qd[i] is not finite, else 0."""
    n = body_real.shape[0]
    sincos_of_sum_array(body_real[:, ANGLE], q, ws[:, SN], ws[:, CS])
    c = 1.0  # the ground's orientation and angular velocity
    s = 0.0
    om = 0.0
    probe = 0.0
    for i in range(n):
        s_phi = ws[i, SN]
        c_phi = ws[i, CS]
        probe += s_phi * qd[i] * 0.0  # NaN if q[i] (hence s_phi) or qd[i] is not finite, else 0
        om = om + qd[i]
        c, s = c * c_phi - s * s_phi, s * c_phi + c * s_phi
        ws[i, CS] = c
        ws[i, SN] = s
        ws[i, OM] = om
    return probe


@njit
def _input_status_or(q, qd, tau, status):
    """The status naming the first non-finite entry of q, qd or tau, or ``status`` if they are all finite."""
    first = check_finite(q, qd, tau)
    return status if first == STATUS_OK else first


@njit
def _forward_dynamics_serial(body_real, gravity, q, qd, tau, wrench, ws, qdd):
    """``_forward_dynamics_revolute`` of a serial chain (flag SERIAL_REVOLUTE): the same arithmetic in the same
    order (results equal bit for bit), with every parent's and child's data in registers, so no pass loads a
    parent index or a flag or branches on them per body (a quarter of what passes 2 and 3 did beyond their
    dependency chains); the body accelerations are not stored (no other child reads them). Pass 1 leaves every
    body's orientation in ws[:, CS], ws[:, SN], ws[:, OM]; passes 2 and 3 compute the joint geometry from them, off
    their dependency chains, so the workspace holds per body only those 3 and the gains U1, UU (4) that pass 2
    leaves for pass 3 (ws[:, RX], HX and GX are not written). Counted per body, the passes read 208 bytes and
    write 80 (q, qd, tau, 7 model fields, the relative sin/cos, 7 workspace fields; qdd) where the revolute-tree
    passes with their finiteness sweep read 312 and write 112 (an angle column, parent and flag loads in every
    pass, the geometry stored by pass 1 and read by passes 2 and 3): the difference is most of what a chain of
    1e6 bodies, out of cache, paid beyond one of 1e4.

    The finiteness of q, qd and tau is checked on the way, not by a sweep of its own before (at 1e6 bodies that
    sweep is a read of all three from memory): the passes add x * 0 of every input entry into a probe, off the
    dependency chains, and an exit (a singular joint, a non-finite probe) first asks ``check_finite`` for the entry
    to name. The statuses are those of ``forward_dynamics``; only qdd and ws are written before a failure is seen.
    """
    n = body_real.shape[0]
    has_wrench = wrench.shape[0] > 0
    probe = _kinematics_pass_serial(body_real, q, qd, ws)

    # pass 2, tip to base (eqs. 3.23, 3.24b); G = (gx, gy, 1); the child's condensed mass and force in registers.
    # First the joint geometry (eqs. 3.18-3.19) from the orientations of body i (carried from the previous step) and
    # of its parent i - 1, in the arithmetic of _kinematics_pass_revolute. Not stored: pass 3 computes it again
    # (recomputing costs its short chain nothing; storing and loading cost 6 streams of memory per body)
    ca = cb = cc = cd = ce = cf = cq0 = cq1 = cq2 = 0.0
    c_i = ws[n - 1, CS]
    s_i = ws[n - 1, SN]
    om_i = ws[n - 1, OM]
    for i in range(n - 1, -1, -1):
        if i > 0:
            cp = ws[i - 1, CS]
            sp = ws[i - 1, SN]
            om_p = ws[i - 1, OM]
        else:  # the ground
            cp = 1.0
            sp = 0.0
            om_p = 0.0
        dlx = body_real[i, PPX]
        dly = body_real[i, PPX + 1]
        dx = cp * dlx - sp * dly
        dy = sp * dlx + cp * dly
        colx = body_real[i, COX]
        coly = body_real[i, COX + 1]
        ex = c_i * colx - s_i * coly
        ey = s_i * colx + c_i * coly
        rx = dx + ex
        ry = dy + ey
        hx = -om_p * om_p * dx - om_i * om_i * ex
        hy = -om_p * om_p * dy - om_i * om_i * ey
        gx = 0.0 - ey  # not -ey: LLVM would fold that negation into the products below, rounding them otherwise
        gy = ex
        c_i = cp
        s_i = sp
        om_i = om_p
        a = body_real[i, MASS]
        b = 0.0
        c = 0.0
        d = a
        e = 0.0
        f = body_real[i, INERTIA]
        q0 = a * gravity[0]
        q1 = a * gravity[1]
        q2 = 0.0
        if has_wrench:
            q0 += wrench[i, 0]
            q1 += wrench[i, 1]
            q2 += wrench[i, 2]
        if i < n - 1:  # the tip has no child
            a += ca
            b += cb
            c += cc
            d += cd
            e += ce
            f += cf
            q0 += cq0
            q1 += cq1
            q2 += cq2
        f0 = q0 - (a * hx + b * hy)
        f1 = q1 - (b * hx + d * hy)
        f2 = q2 - (c * hx + e * hy)
        u0 = a * gx + b * gy + c
        u1 = b * gx + d * gy + e
        u2 = c * gx + e * gy + f
        dd = gx * u0 + gy * u1 + u2
        scale = (abs(a) + abs(d)) * (gx * gx + gy * gy) + abs(f)
        if not (dd > SINGULAR_RTOL * scale):  # or NaN, from a non-finite input
            return _input_status_or(q, qd, tau, STATUS_SINGULAR | (i << 4))
        dinv = 1.0 / dd
        uu = tau[i] + gx * f0 + gy * f1 + f2
        probe += tau[i] * 0.0
        k0 = u0 * dinv
        k1 = u1 * dinv
        k2 = u2 * dinv
        w = uu * dinv
        ws[i, U1 + 0] = k0
        ws[i, U1 + 1] = k1
        ws[i, U1 + 2] = k2
        ws[i, UU] = w
        a -= u0 * k0
        b -= u0 * k1
        c -= u0 * k2
        d -= u1 * k1
        e -= u1 * k2
        f -= u2 * k2
        f0 -= u0 * w
        f1 -= u1 * w
        f2 -= u2 * w
        ct02, ct12, ct22 = _shift_inertia(rx, ry, a, b, c, d, e, f)
        ca, cb, cc, cd, ce, cf = a, b, ct02, d, ct12, ct22
        cq0, cq1, cq2 = f0, f1, f2 - ry * f0 + rx * f1

    # pass 3, base to tip (eqs. 3.23, 3.19a); the parent's acceleration in registers; overflow probe as in
    # forward_dynamics
    a0 = a1 = a2 = 0.0
    cp = 1.0  # the ground
    sp = 0.0
    om_p = 0.0
    for i in range(n):
        # the joint geometry again, as in pass 2 (bit for bit: the same expressions of the same values)
        c_i = ws[i, CS]
        s_i = ws[i, SN]
        om_i = ws[i, OM]
        dlx = body_real[i, PPX]
        dly = body_real[i, PPX + 1]
        dx = cp * dlx - sp * dly
        dy = sp * dlx + cp * dly
        colx = body_real[i, COX]
        coly = body_real[i, COX + 1]
        ex = c_i * colx - s_i * coly
        ey = s_i * colx + c_i * coly
        rx = dx + ex
        ry = dy + ey
        hx = -om_p * om_p * dx - om_i * om_i * ex
        hy = -om_p * om_p * dy - om_i * om_i * ey
        gx = 0.0 - ey
        gy = ex
        cp = c_i
        sp = s_i
        om_p = om_i
        b0 = a0 - ry * a2  # B a_P
        b1 = a1 + rx * a2
        acc = ws[i, UU] - (ws[i, U1] * b0 + ws[i, U1 + 1] * b1 + ws[i, U1 + 2] * a2)
        qdd[i] = acc
        probe += acc * 0.0
        a0 = b0 + hx + gx * acc
        a1 = b1 + hy + gy * acc
        a2 = a2 + acc
    if not math.isfinite(probe):  # a non-finite input (named first) or output
        return _input_status_or(q, qd, tau, check_output(qdd))
    return STATUS_OK


@njit
def forward_dynamics(body_int, body_real, gravity, q, qd, tau, wrench, driven, ws, qdd, drive):
    """Recursive O(N) forward dynamics: qdd from M(q) qdd + h(q, qd) = tau + J^T wrench (the relative-coordinate
    lecture, eqs. 3.18-3.24).

    Pass 1 (base to tip) joint kinematics; pass 2 (tip to base) eliminates each joint's acceleration (3.23) and
    condenses the body's mass and force onto its parent (3.24b); pass 3 (base to tip) recovers the joint and body
    accelerations. The body accelerations and orientations pass from body i to body i + 1 in registers: only bodies
    with other children (ROW_CHILDREN) keep them in ws[i, ACC:ACC+3] and ws[i, TH/CS/SN/OM] (``kinematics_pass``).
    A model whose joints are all revolute (flag ALL_REVOLUTE of body 0) without driven joints takes
    ``_forward_dynamics_revolute``: the same arithmetic without the per-body joint-type branches; a serial chain of
    them (flag SERIAL_REVOLUTE) ``_forward_dynamics_serial``, without parent or flag loads either.

    wrench (nbodies, 3): external force and moment at each centre of mass, or shape (0, 3) for none.
    driven (nbodies,): nonzero for a 1-dof joint whose acceleration is prescribed (in qdd on entry); such a joint
    is not eliminated, and drive[k] returns the joint force its driver must add to tau[k]. Shape (0,) for none.
    """
    has_drivers = driven.shape[0] > 0
    if body_int[0, FLAGS] & SERIAL_REVOLUTE and not has_drivers:  # properties of the model: a branch per call
        return _forward_dynamics_serial(body_real, gravity, q, qd, tau, wrench, ws, qdd)  # checks q, qd, tau itself
    status = check_finite(q, qd, tau)
    if status != STATUS_OK:
        return status
    n = body_int.shape[0]
    has_wrench = wrench.shape[0] > 0
    if body_int[0, FLAGS] & ALL_REVOLUTE and not has_drivers:
        return _forward_dynamics_revolute(body_int, body_real, gravity, q, qd, tau, wrench, ws, qdd)
    kinematics_pass(body_int, body_real, q, qd, ws, np.bool_(False))

    # pass 2, tip to base: condense mass and force onto the parent (eqs. 3.23, 3.24b). The contribution of body
    # i + 1 to its parent i is carried in registers (ca..cf, cq0..cq2); other children add into the parent's row.
    ca = cb = cc = cd = ce = cf = cq0 = cq1 = cq2 = 0.0
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        nd = body_int[i, NDOF]
        flags = body_int[i, FLAGS]
        # M^ = diag(m, m, J) + condensed children, Q^ = m g + condensed children
        a = body_real[i, MASS]
        b = 0.0
        c = 0.0
        d = a
        e = 0.0
        f = body_real[i, INERTIA]
        q0 = a * gravity[0]
        q1 = a * gravity[1]
        q2 = 0.0
        if has_wrench:
            q0 += wrench[i, 0]
            q1 += wrench[i, 1]
            q2 += wrench[i, 2]
        if flags & NEXT_IS_CHILD:
            a += ca
            b += cb
            c += cc
            d += cd
            e += ce
            f += cf
            q0 += cq0
            q1 += cq1
            q2 += cq2
        if flags & ROW_CHILDREN:
            a += ws[i, IA + 0]
            b += ws[i, IA + 1]
            c += ws[i, IA + 2]
            d += ws[i, IA + 3]
            e += ws[i, IA + 4]
            f += ws[i, IA + 5]
            q0 += ws[i, QA + 0]
            q1 += ws[i, QA + 1]
            q2 += ws[i, QA + 2]
        hx = ws[i, HX]
        hy = ws[i, HX + 1]
        # F = Q^ - M^ H
        f0 = q0 - (a * hx + b * hy)
        f1 = q1 - (b * hx + d * hy)
        f2 = q2 - (c * hx + e * hy)
        if nd == 1 and has_drivers and driven[i]:
            # prescribed acceleration: nothing to eliminate; G qdd is known and enters like H (eq. 3.19a).
            # M^ and Q^ are kept for the driving force of pass 3.
            gx = ws[i, GX]
            gy = ws[i, GX + 1]
            g2 = 1.0 if body_int[i, JTYPE] == REVOLUTE else 0.0
            _store_row(ws, i, a, b, c, d, e, f, q0, q1, q2)
            acc = qdd[body_int[i, QIDX]]
            f0 -= (a * gx + b * gy + c * g2) * acc
            f1 -= (b * gx + d * gy + e * g2) * acc
            f2 -= (c * gx + e * gy + f * g2) * acc
        elif nd == 1:
            gx = ws[i, GX]
            gy = ws[i, GX + 1]
            g2 = 1.0 if body_int[i, JTYPE] == REVOLUTE else 0.0
            u0 = a * gx + b * gy + c * g2
            u1 = b * gx + d * gy + e * g2
            u2 = c * gx + e * gy + f * g2
            dd = gx * u0 + gy * u1 + g2 * u2
            scale = (abs(a) + abs(d)) * (gx * gx + gy * gy) + abs(f) * g2 * g2
            if not (dd > SINGULAR_RTOL * scale):
                return STATUS_SINGULAR | (i << 4)
            dinv = 1.0 / dd
            uu = tau[body_int[i, QIDX]] + gx * f0 + gy * f1 + g2 * f2
            # the gain U / D and u / D: pass 3 needs only these (qdd = u/D - (U/D)^T B a_P), one store fewer and
            # no multiply by 1 / D left for it
            k0 = u0 * dinv
            k1 = u1 * dinv
            k2 = u2 * dinv
            w = uu * dinv
            ws[i, U1 + 0] = k0
            ws[i, U1 + 1] = k1
            ws[i, U1 + 2] = k2
            ws[i, UU] = w
            # M^ - U U^T / D and Q^ - M^ H - U u / D
            a -= u0 * k0
            b -= u0 * k1
            c -= u0 * k2
            d -= u1 * k1
            e -= u1 * k2
            f -= u2 * k2
            f0 -= u0 * w
            f1 -= u1 * w
            f2 -= u2 * w
        elif nd == 3:
            _store_row(ws, i, a, b, c, d, e, f, f0, f1, f2)
            if not _condense_planar(ws, i, tau, body_int[i, QIDX]):
                return STATUS_SINGULAR | (i << 4)
            a = ws[i, IA + 0]
            b = ws[i, IA + 1]
            c = ws[i, IA + 2]
            d = ws[i, IA + 3]
            e = ws[i, IA + 4]
            f = ws[i, IA + 5]
            f0 = ws[i, QA + 0]
            f1 = ws[i, QA + 1]
            f2 = ws[i, QA + 2]
        if p >= 0:
            # B^T M B and B^T F: the reduced inertia and force moved from c_i to c_P (eq. 3.24b)
            rx = ws[i, RX]
            ry = ws[i, RX + 1]
            t02, t12, t22 = _shift_inertia(rx, ry, a, b, c, d, e, f)
            m0 = f2 - ry * f0 + rx * f1
            if p == i - 1:
                ca, cb, cc, cd, ce, cf, cq0, cq1, cq2 = a, b, t02, d, t12, t22, f0, f1, m0
            elif flags & FIRST_ROW_CHILD:
                _store_row(ws, p, a, b, t02, d, t12, t22, f0, f1, m0)
            else:
                _add_row(ws, p, a, b, t02, d, t12, t22, f0, f1, m0)

    # pass 3, base to tip: joint accelerations (eq. 3.23) and body accelerations (eq. 3.19a); the previous body's
    # acceleration is carried in registers for its child. Every entry of qdd also goes into probe (x * 0 is 0 for
    # finite x, NaN otherwise): one add off the chain instead of a second sweep over qdd for overflow.
    a0 = a1 = a2 = 0.0
    probe = 0.0
    for i in range(n):
        p = body_int[i, PARENT]
        nd = body_int[i, NDOF]
        k = body_int[i, QIDX]
        if p < 0:
            ap0 = ap1 = ap2 = 0.0
        elif p == i - 1:
            ap0 = a0
            ap1 = a1
            ap2 = a2
        else:
            ap0 = ws[p, ACC]
            ap1 = ws[p, ACC + 1]
            ap2 = ws[p, ACC + 2]
        b0 = ap0 - ws[i, RX + 1] * ap2  # B a_P
        b1 = ap1 + ws[i, RX] * ap2
        b2 = ap2
        a0 = b0 + ws[i, HX]
        a1 = b1 + ws[i, HX + 1]
        a2 = b2
        if nd == 1 and has_drivers and driven[i]:
            g2 = 1.0 if body_int[i, JTYPE] == REVOLUTE else 0.0
            acc = qdd[k]
            probe += acc * 0.0
            a0 += ws[i, GX] * acc
            a1 += ws[i, GX + 1] * acc
            a2 += g2 * acc
            # joint force the subtree needs, G^T (M^ a - Q^) (eq. 3.21 with the parent held), less what tau gives
            m0 = ws[i, IA] * a0 + ws[i, IA + 1] * a1 + ws[i, IA + 2] * a2 - ws[i, QA]
            m1 = ws[i, IA + 1] * a0 + ws[i, IA + 3] * a1 + ws[i, IA + 4] * a2 - ws[i, QA + 1]
            m2 = ws[i, IA + 2] * a0 + ws[i, IA + 4] * a1 + ws[i, IA + 5] * a2 - ws[i, QA + 2]
            drive[k] = ws[i, GX] * m0 + ws[i, GX + 1] * m1 + g2 * m2 - tau[k]
        elif nd == 1:
            g2 = 1.0 if body_int[i, JTYPE] == REVOLUTE else 0.0
            acc = ws[i, UU] - (ws[i, U1] * b0 + ws[i, U1 + 1] * b1 + ws[i, U1 + 2] * b2)
            qdd[k] = acc
            probe += acc * 0.0
            a0 += ws[i, GX] * acc
            a1 += ws[i, GX + 1] * acc
            a2 += g2 * acc
        elif nd == 3:
            r0 = ws[i, PUU + 0] - (ws[i, PU + 0] * b0 + ws[i, PU + 3] * b1 + ws[i, PU + 6] * b2)
            r1 = ws[i, PUU + 1] - (ws[i, PU + 1] * b0 + ws[i, PU + 4] * b1 + ws[i, PU + 7] * b2)
            r2 = ws[i, PUU + 2] - (ws[i, PU + 2] * b0 + ws[i, PU + 5] * b1 + ws[i, PU + 8] * b2)
            for col in range(3):
                acc = ws[i, PDINV + 3 * col] * r0 + ws[i, PDINV + 3 * col + 1] * r1 + ws[i, PDINV + 3 * col + 2] * r2
                qdd[k + col] = acc
                probe += acc * 0.0
                a0 += ws[i, PG + col] * acc
                a1 += ws[i, PG + 3 + col] * acc
                a2 += ws[i, PG + 6 + col] * acc
        if body_int[i, FLAGS] & ROW_CHILDREN:  # only a child other than i + 1 reads it from the row
            ws[i, ACC] = a0
            ws[i, ACC + 1] = a1
            ws[i, ACC + 2] = a2
    if not math.isfinite(probe):
        return check_output(qdd)  # names the first non-finite entry, as before
    return STATUS_OK


@njit
def inverse_dynamics(body_int, body_real, gravity, q, qd, qdd, wrench, ws, tau):
    """Recursive Newton-Euler: tau = M(q) qdd + h(q, qd) - J^T wrench, O(N) (wrench shape (0, 3) for none).

    Base to tip: body accelerations (eq. 3.19a) and the force each body needs, M_i a_i - Q_i. Tip to base: the
    force transmitted by each joint, F_i = f_i + sum over children B_c^T F_c, and tau_i = G_i^T F_i (eq. 3.21).
    On return ws[i, QA:QA+3] holds F_i, the force the parent exerts on body i's subtree at c_i.
    """
    status = check_finite(q, qd, qdd)
    if status != STATUS_OK:
        return status
    n = body_int.shape[0]
    kinematics_pass(body_int, body_real, q, qd, ws, np.bool_(False))
    for i in range(n):
        p = body_int[i, PARENT]
        k = body_int[i, QIDX]
        if p >= 0:
            ap2 = ws[p, ACC + 2]
            a0 = ws[p, ACC] - ws[i, RX + 1] * ap2
            a1 = ws[p, ACC + 1] + ws[i, RX] * ap2
            a2 = ap2
        else:
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
        a0 += ws[i, HX]
        a1 += ws[i, HX + 1]
        for col in range(body_int[i, NDOF]):
            gx, gy, g2 = motion_column(body_int, ws, i, col)
            a0 += gx * qdd[k + col]
            a1 += gy * qdd[k + col]
            a2 += g2 * qdd[k + col]
        ws[i, ACC] = a0
        ws[i, ACC + 1] = a1
        ws[i, ACC + 2] = a2
        m = body_real[i, MASS]
        ws[i, QA] = m * (a0 - gravity[0])
        ws[i, QA + 1] = m * (a1 - gravity[1])
        ws[i, QA + 2] = body_real[i, INERTIA] * a2
        if wrench.shape[0] > 0:
            ws[i, QA] -= wrench[i, 0]
            ws[i, QA + 1] -= wrench[i, 1]
            ws[i, QA + 2] -= wrench[i, 2]
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        k = body_int[i, QIDX]
        f0 = ws[i, QA]
        f1 = ws[i, QA + 1]
        f2 = ws[i, QA + 2]
        for col in range(body_int[i, NDOF]):
            gx, gy, g2 = motion_column(body_int, ws, i, col)
            tau[k + col] = gx * f0 + gy * f1 + g2 * f2
        if p >= 0:
            _shift_force_to_parent(ws, i, p, f0, f1, f2)
    return check_output(tau)


@njit
def inverse_dynamics_serial(body_real, gravity, q, qd, qdd, wrench, ws, tau):
    """``inverse_dynamics`` of a serial revolute chain (flag SERIAL_REVOLUTE of body 0: the parent of body i is
    i - 1 and q_i its joint's angle): tau = M(q) qdd + h(q, qd) - J^T wrench in two passes, the parent's (base to
    tip) and the child's (tip to base) data in registers, as ``_forward_dynamics_serial`` does.

    Base to tip: each body's orientation, joint geometry (eqs. 3.18-3.19, the arithmetic of
    ``_kinematics_pass_revolute``), acceleration (3.19a) and the force it needs, f_i = M_i a_i - Q_i, stored in
    ws[:, QA:QA+3] beside its orientation in ws[:, CS], ws[:, SN]. Tip to base: F_i = f_i + B_{i+1}^T F_{i+1} and
    tau_i = G_i^T F_i (3.21), the geometry of body i computed again from the two orientations (cheaper than
    storing and loading it). Per body it reads q, qd, qdd, 6 model fields and writes 5 workspace fields and tau:
    no finiteness sweep (a probe x * 0 of every input rides along; ``check_finite`` names the entry when it is
    NaN), no angle, r, G, H or acceleration columns, no parent or flag loads. The statuses are
    ``inverse_dynamics``'s; ws[:, QA:QA+3] holds f_i (not F_i) on return and no other workspace column is kept.
    """
    n = body_real.shape[0]
    has_wrench = wrench.shape[0] > 0
    sincos_of_sum_array(body_real[:, ANGLE], q, ws[:, SN], ws[:, CS])
    c = 1.0  # the parent's orientation, angular velocity and acceleration (the ground's first)
    s = 0.0
    om = 0.0
    a0 = a1 = a2 = 0.0
    probe = 0.0
    for i in range(n):
        s_phi = ws[i, SN]
        c_phi = ws[i, CS]
        acc = qdd[i]
        probe += s_phi * qd[i] * 0.0 + acc * 0.0  # NaN if q[i], qd[i] or qdd[i] is not finite, else 0
        cp = c
        sp = s
        om_p = om
        om = om_p + qd[i]
        c = cp * c_phi - sp * s_phi
        s = sp * c_phi + cp * s_phi
        dlx = body_real[i, PPX]
        dly = body_real[i, PPX + 1]
        dx = cp * dlx - sp * dly
        dy = sp * dlx + cp * dly
        colx = body_real[i, COX]
        coly = body_real[i, COX + 1]
        ex = c * colx - s * coly
        ey = s * colx + c * coly
        rx = dx + ex
        ry = dy + ey
        hx = -om_p * om_p * dx - om * om * ex
        hy = -om_p * om_p * dy - om * om * ey
        a0 = a0 - ry * a2 + hx - ey * acc  # B a_P + H + G qdd, G = (-ey, ex, 1)
        a1 = a1 + rx * a2 + hy + ex * acc
        a2 = a2 + acc
        m = body_real[i, MASS]
        f0 = m * (a0 - gravity[0])
        f1 = m * (a1 - gravity[1])
        f2 = body_real[i, INERTIA] * a2
        if has_wrench:
            f0 -= wrench[i, 0]
            f1 -= wrench[i, 1]
            f2 -= wrench[i, 2]
        ws[i, CS] = c
        ws[i, SN] = s
        ws[i, QA] = f0
        ws[i, QA + 1] = f1
        ws[i, QA + 2] = f2
    # tip to base: F_i = f_i + B_{i+1}^T F_{i+1}, the child's shifted force in registers
    g0 = g1 = g2 = 0.0
    c_i = ws[n - 1, CS] if n > 0 else 1.0
    s_i = ws[n - 1, SN] if n > 0 else 0.0
    for i in range(n - 1, -1, -1):
        if i > 0:
            cp = ws[i - 1, CS]
            sp = ws[i - 1, SN]
        else:  # the ground
            cp = 1.0
            sp = 0.0
        dlx = body_real[i, PPX]
        dly = body_real[i, PPX + 1]
        colx = body_real[i, COX]
        coly = body_real[i, COX + 1]
        ex = c_i * colx - s_i * coly
        ey = s_i * colx + c_i * coly
        rx = cp * dlx - sp * dly + ex
        ry = sp * dlx + cp * dly + ey
        c_i = cp
        s_i = sp
        f0 = ws[i, QA] + g0
        f1 = ws[i, QA + 1] + g1
        f2 = ws[i, QA + 2] + g2
        t = -ey * f0 + ex * f1 + f2
        tau[i] = t
        probe += t * 0.0
        g0 = f0
        g1 = f1
        g2 = f2 - ry * f0 + rx * f1
    if not math.isfinite(probe):  # a non-finite input (named first) or output
        return _input_status_or(q, qd, qdd, check_output(tau))
    return STATUS_OK


@njit
def mass_matrix(body_int, body_real, q, zero_qd, ws, out):
    """Composite-rigid-body mass matrix M(q) into ``out`` (nq, nq); O(N d) for tree depth d.

    The composite inertia of each subtree is condensed tip to base at the body's centre of mass with the same
    B-shift as eq. 3.24b (no joint elimination). Column block of joint i: the force F = Ic_i G_i carried to every
    ancestor j by B^T gives M[j, i] = G_j^T F.
    """
    status = check_finite(q, zero_qd, zero_qd)
    if status != STATUS_OK:
        return status
    n = body_int.shape[0]
    kinematics_pass(body_int, body_real, q, zero_qd, ws, np.bool_(False))
    for i in range(n):
        m = body_real[i, MASS]
        ws[i, IA + 0] = m
        ws[i, IA + 1] = 0.0
        ws[i, IA + 2] = 0.0
        ws[i, IA + 3] = m
        ws[i, IA + 4] = 0.0
        ws[i, IA + 5] = body_real[i, INERTIA]
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        if p >= 0:
            a, b, c = ws[i, IA], ws[i, IA + 1], ws[i, IA + 2]
            d, e, f = ws[i, IA + 3], ws[i, IA + 4], ws[i, IA + 5]
            t02, t12, t22 = _shift_inertia(ws[i, RX], ws[i, RX + 1], a, b, c, d, e, f)
            _add_row(ws, p, a, b, t02, d, t12, t22, 0.0, 0.0, 0.0)  # the force columns are unused here
    for i in range(n):
        a, b, c, d, e, f = _inertia_row(ws, i)
        ki = body_int[i, QIDX]
        for col in range(body_int[i, NDOF]):
            gx, gy, g2 = motion_column(body_int, ws, i, col)
            f0 = a * gx + b * gy + c * g2
            f1 = b * gx + d * gy + e * g2
            f2 = c * gx + e * gy + f * g2
            for col2 in range(body_int[i, NDOF]):
                hx, hy, h2 = motion_column(body_int, ws, i, col2)
                out[ki + col2, ki + col] = hx * f0 + hy * f1 + h2 * f2
            j = i
            while body_int[j, PARENT] >= 0:
                f2 = f2 - ws[j, RX + 1] * f0 + ws[j, RX] * f1
                j = body_int[j, PARENT]
                kj = body_int[j, QIDX]
                for col2 in range(body_int[j, NDOF]):
                    hx, hy, h2 = motion_column(body_int, ws, j, col2)
                    val = hx * f0 + hy * f1 + h2 * f2
                    out[kj + col2, ki + col] = val
                    out[ki + col, kj + col2] = val
    for k in range(out.shape[0]):  # M is positive semi-definite, |M_jk| <= sqrt(M_jj M_kk): the diagonal suffices
        if not math.isfinite(out[k, k]):
            return STATUS_OVERFLOW | (k << 4)
    return STATUS_OK


@njit
def com_kinematics(body_int, body_real, q, qd, ws, com):
    """Position and velocity of every centre of mass, com[i] = (x, y, xdot, ydot), ground frame (eq. 3.18a).

    Also leaves the angles and angular velocities in ws[:, TH], ws[:, OM].
    """
    status = check_finite(q, qd, qd)
    if status != STATUS_OK:
        return status
    kinematics_pass(body_int, body_real, q, qd, ws, np.bool_(True))
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        k = body_int[i, QIDX]
        rx = ws[i, RX]
        ry = ws[i, RX + 1]
        if p >= 0:
            om_p = ws[p, OM]
            x = com[p, 0] + rx
            y = com[p, 1] + ry
            vx = com[p, 2] - om_p * ry
            vy = com[p, 3] + om_p * rx
        else:
            x = rx
            y = ry
            vx = 0.0
            vy = 0.0
        for col in range(body_int[i, NDOF]):
            gx, gy, g2 = motion_column(body_int, ws, i, col)
            vx += gx * qd[k + col]
            vy += gy * qd[k + col]
        com[i, 0] = x
        com[i, 1] = y
        com[i, 2] = vx
        com[i, 3] = vy
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(vx) and math.isfinite(vy)):
            return STATUS_OVERFLOW | (i << 4)  # index = body
    return STATUS_OK


@njit
def energy(body_int, body_real, gravity, q, qd, ws, com, out):
    """Kinetic and gravitational potential energy into out[0], out[1] [J]; V = -sum m g . c (zero at the origin)."""
    status = com_kinematics(body_int, body_real, q, qd, ws, com)
    if status != STATUS_OK:
        return status
    kinetic = 0.0
    potential = 0.0
    for i in range(body_int.shape[0]):
        m = body_real[i, MASS]
        om = ws[i, OM]
        kinetic += 0.5 * (m * (com[i, 2] * com[i, 2] + com[i, 3] * com[i, 3]) + body_real[i, INERTIA] * om * om)
        potential -= m * (gravity[0] * com[i, 0] + gravity[1] * com[i, 1])
    out[0] = kinetic
    out[1] = potential
    if not math.isfinite(kinetic):
        return STATUS_OVERFLOW
    if not math.isfinite(potential):
        return STATUS_OVERFLOW | (1 << 4)
    return STATUS_OK


@njit
def _tree_lengths(body_int, q, qd, tau, qdd):
    """0 if q, qd, tau and qdd are (nq,) (nq: the last body's first coordinate plus its count, bodies being in joint
    order), else -1, -2, -3 or -4 naming the first one that is not."""
    n = body_int.shape[0]
    nq = body_int[n - 1, QIDX] + body_int[n - 1, NDOF]
    if q.shape[0] != nq:
        return -1
    if qd.shape[0] != nq:
        return -2
    if tau.shape[0] != nq:
        return -3
    if qdd.shape[0] != nq:
        return -4
    return 0


@njit
def forward_dynamics_tree(body_int, body_real, gravity, q, qd, tau, ws, qdd):
    """``forward_dynamics`` of a plain tree (no wrench, no driven joint) with 8 arguments instead of 11.

    The short path of ``recursive_mbd.dynamics.compiled``: numba's dispatch costs grow with the argument count. The
    empty wrench, driven and drive arrays are views of the arguments (no allocation). The lengths of q, qd, tau and qdd
    are checked here against nq: status -1, -2, -3, -4 names the first one of them that is not (nq,).
    """
    status = _tree_lengths(body_int, q, qd, tau, qdd)
    if status:
        return status
    # the empty views typed as the arrays every other caller passes (wrench (0, 3) and driven (0,) uint8, both C):
    # one compiled specialisation of forward_dynamics serves this path too (ws[:0, :3] would be an 'A' array)
    empty = qdd[:0]
    no_wrench, no_driven = empty.reshape((0, 3)), empty.view(numba.uint8)
    return forward_dynamics(body_int, body_real, gravity, q, qd, tau, no_wrench, no_driven, ws, qdd, empty)


@njit
def forward_dynamics_revolute_tree(body_int, body_real, gravity, q, qd, tau, ws, qdd):
    """``forward_dynamics_tree`` of a model whose joints are all revolute (flag ALL_REVOLUTE): the route
    ``forward_dynamics`` takes for it, compiled without the others (a first call compiles a third as much)."""
    status = _tree_lengths(body_int, q, qd, tau, qdd)
    if status:
        return status
    status = check_finite(q, qd, tau)
    if status != STATUS_OK:
        return status
    return _forward_dynamics_revolute(body_int, body_real, gravity, q, qd, tau, qdd[:0].reshape((0, 3)), ws, qdd)


@njit
def forward_dynamics_serial_tree(body_int, body_real, gravity, q, qd, tau, ws, qdd):
    """``forward_dynamics_tree`` of a serial chain of revolute joints (flag SERIAL_REVOLUTE): the route
    ``forward_dynamics`` takes for it, compiled without the others."""
    status = _tree_lengths(body_int, q, qd, tau, qdd)
    if status:
        return status
    return _forward_dynamics_serial(body_real, gravity, q, qd, tau, qdd[:0].reshape((0, 3)), ws, qdd)
