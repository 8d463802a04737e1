"""Generalised-alpha on a spatial model (``Model3D``): the compiled loop, and the O(N) factorisation of the cheap
Newton matrix with gravity's per-body stiffness (the spatial bdf's, and the loop's first; the loop falls back to
``spatial.newton``'s exact one where its corrections stall).

Derivation and the list of exact and lagged terms: ``recursive_mbd.integrate.spatial_implicit``.
``effective_factor`` runs the tip-to-base pass of the articulated-body algorithm (Featherstone 2008, table 7.1) on
the inertias alone, with a joint diagonal added to every joint's D_i = S_i^T I^A_i S_i (as a rotor inertia or
armature would be), so that ``effective_apply`` gives x = (M + diag(j_diag))^-1 rhs by the force and acceleration
passes, O(N) each. Every joint, spherical ones too, takes the general path (S stored): the spherical register path
of ``_kernels.spatial.tree`` keeps no D_i to add to. With closed loops the time loop borders these factors by the loop
rows through the kernels it shares with the planar loop (``timeloops.newton.schur_correction``,
``position_correction``): m applies per factorisation give S^-1 J^T, no nv x nv matrix.
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import STATUS_NO_CONVERGENCE, STATUS_OK, STATUS_OUTPUT_FULL, STATUS_SINGULAR
from ..planar.loops import gram_matrix
from ..timeloops import integrators, newton
from .elements import linearise_spherical_springs
from .layout import CP, JTYPE, MASS, MCOM, NVJ, PA, PARENT, PB, PC, PP, SPHERICAL, VIDX, WC, WI, WP, WR, WT
from .newton import SCRATCH_SIZE, factor_width, newton_apply, newton_factor
from .system import (
    LOOP_JAC,
    LOOP_LAM,
    LOOP_PHI,
    LOOP_PHID,
    LOOP_SETTINGS,
    _constraints,
    applied_forces,
    configuration_rate,
    contact_blocks,
    contact_residual,
    contact_slip_reversals,
    contact_subtree_loads,
    integrate_configuration,
    system_rhs,
    update_contact_state,
)
from .tree import (
    _body_inertia,
    _cholesky_factor,
    _cholesky_solve,
    _force_to_parent_add,
    _inertia_transform_add,
    _motion_to_child,
    _pack_inertia,
    _rotate_symmetric,
    _unpack_inertia,
    inverse_dynamics,
    kinematics_pass,
)

njit = numba.njit(cache=True, error_model="numpy", _nrt=True)

# generalised-alpha Newton on the cheap matrix (``effective_factor``) switches to the exact one (``newton_factor``)
# for the rest of the step where the corrections with fresh cheap factors shrink by less than CHEAP_STALL an
# iteration, or at their rate would not reach newton_tol within CHEAP_ITERATIONS iterations of the step: a cheap
# iteration costs a tenth of an exact one with its factorisation on a spherical chain
CHEAP_STALL = 0.5
CHEAP_ITERATIONS = 20
# the exact factors are made again at every iterate whose last correction is above this many newton_tol (below, the
# iterate is within quadratic reach of the root: factors kept, the chord contracting by far more than 20x)
NEWTON_PROPER_ABOVE = 1e5
# the exact matrix holds a spherical joint's turn about its link (joint to centre of mass) by SPIN_DAMPING times the
# link's own moment there (``spin_weights``) on its diagonal until a correction has shrunk to SPIN_RELEASE of the one
# before (Newton's quadratic regime in the bending), then lets it go: the turn of a slender link's subtree about
# that axis has an inertia far below the bending's while the residual's rows there are quadratic in the bending
# (``recursive_mbd.integrate.spatial_implicit``), so a spin corrected while the bending is still off overshoots by
# that error squared over the spin's inertia, and the next correction takes it back (held: 3e9 times a slender rod's
# axial moment m e^2 / 30; a rod's bending pivot m (2 e)^2 / 3 stays 1e-8 of the damping, far above SINGULAR_RTOL)
SPIN_DAMPING = 1e8
SPIN_RELEASE = 0.1
# a tree's step after two in a row that ended on the exact matrix starts on it (the cheap one would stall again:
# its iterations are a tenth of an exact one's cost, but they count), and every CHEAP_RETRY-th such step tries the
# cheap one first, to return to it where the motion has calmed; after a single step on the exact matrix (a stall
# now and then on a small swing) the next one starts on the cheap matrix, which then costs far less
CHEAP_RETRY = 10


@njit
def _add_stiffness_term(kw, i, fx, fy, fz, rx, ry, rz):
    """kw[i] += (F . r) 1 - (F r^T + r F^T) / 2 (symmetric, packed xx, yy, zz, xy, xz, yz): the Hessian of
    -F . exp([delta]) r in delta at 0, the potential of a constant force F on a lever r turned by delta."""
    fr = fx * rx + fy * ry + fz * rz
    kw[i, 0] += fr - fx * rx
    kw[i, 1] += fr - fy * ry
    kw[i, 2] += fr - fz * rz
    kw[i, 3] -= 0.5 * (fx * ry + rx * fy)
    kw[i, 4] -= 0.5 * (fx * rz + rx * fz)
    kw[i, 5] -= 0.5 * (fy * rz + ry * fz)


@njit
def geometric_stiffness(body_int, body_real, gravity, ws, rot, fsub, kw):
    """Gravity geometric stiffness K_b of every body on its absolute rotation, body axes, packed symmetric (xx, yy,
    zz, xy, xz, yz) into kw (nbodies, 6) [N m / rad]; derivation in ``recursive_mbd.integrate.spatial_implicit``.

    Needs R of every body in ws (a kinematics pass). rot (nbodies, 3, 3) receives the body-to-ground rotations,
    fsub (nbodies, 3) the subtree weights F_b = sum of m g over the subtree of b. K_b (ground axes) = the terms
    (F . r) 1 - (F r^T + r F^T) / 2 of (F_b, e_b = c_b - joint point of b) and of (F_k, d_k = joint point of k -
    c_b) for every child k; then R_b^T K_b R_b.
    """
    n = body_int.shape[0]
    for i in range(n):
        p = body_int[i, PARENT]
        for a in range(3):
            for b in range(3):
                if p < 0:
                    rot[i, a, b] = ws[i, WR + 3 * a + b]
                else:
                    rot[i, a, b] = (rot[p, a, 0] * ws[i, WR + b] + rot[p, a, 1] * ws[i, WR + 3 + b]
                                    + rot[p, a, 2] * ws[i, WR + 6 + b])
        for a in range(3):
            fsub[i, a] = body_real[i, MASS] * gravity[a]
        for e in range(6):
            kw[i, e] = 0.0
    for i in range(n - 1, -1, -1):
        m = body_real[i, MASS]
        inv_m = 1.0 / m if m > 0.0 else 0.0  # a massless body: any reference point, used consistently
        ex = inv_m * body_real[i, MCOM] - body_real[i, CP]
        ey = inv_m * body_real[i, MCOM + 1] - body_real[i, CP + 1]
        ez = inv_m * body_real[i, MCOM + 2] - body_real[i, CP + 2]
        _add_stiffness_term(kw, i, fsub[i, 0], fsub[i, 1], fsub[i, 2],
                            rot[i, 0, 0] * ex + rot[i, 0, 1] * ey + rot[i, 0, 2] * ez,
                            rot[i, 1, 0] * ex + rot[i, 1, 1] * ey + rot[i, 1, 2] * ez,
                            rot[i, 2, 0] * ex + rot[i, 2, 1] * ey + rot[i, 2, 2] * ez)
        p = body_int[i, PARENT]
        if p < 0:
            continue
        m = body_real[p, MASS]
        inv_m = 1.0 / m if m > 0.0 else 0.0
        dx = body_real[i, PP] - inv_m * body_real[p, MCOM]
        dy = body_real[i, PP + 1] - inv_m * body_real[p, MCOM + 1]
        dz = body_real[i, PP + 2] - inv_m * body_real[p, MCOM + 2]
        _add_stiffness_term(kw, p, fsub[i, 0], fsub[i, 1], fsub[i, 2],
                            rot[p, 0, 0] * dx + rot[p, 0, 1] * dy + rot[p, 0, 2] * dz,
                            rot[p, 1, 0] * dx + rot[p, 1, 1] * dy + rot[p, 1, 2] * dz,
                            rot[p, 2, 0] * dx + rot[p, 2, 1] * dy + rot[p, 2, 2] * dz)
        for a in range(3):
            fsub[p, a] += fsub[i, a]
    for i in range(n):  # to body axes: R^T K R
        r = rot[i]
        (kw[i, 0], kw[i, 1], kw[i, 2], kw[i, 3], kw[i, 4], kw[i, 5]) = _rotate_symmetric(
            r[0, 0], r[1, 0], r[2, 0], r[0, 1], r[1, 1], r[2, 1], r[0, 2], r[1, 2], r[2, 2],
            kw[i, 0], kw[i, 1], kw[i, 2], kw[i, 3], kw[i, 4], kw[i, 5])


@njit
def _add_contact_block(ws, i, blocks, c_stiff, c_damp):
    """Body i's packed inertia ws[i, WI:] += the symmetric part of c_stiff K + c_damp C, blocks[i] = [C | K]."""
    for r in range(6):
        for c in range(r, 6):
            value = 0.5 * (c_stiff * (blocks[i, r, 6 + c] + blocks[i, c, 6 + r])
                           + c_damp * (blocks[i, r, c] + blocks[i, c, r]))
            if r < 3 and c < 3:  # the angular block: xx, yy, zz, xy, xz, yz
                ws[i, WI + PA + (r if r == c else r + c + 2)] += value
            elif r >= 3:  # the linear block, likewise
                ws[i, WI + PC + (r - 3 if r == c else r + c - 4)] += value
            else:  # the coupling, row r, column c - 3
                ws[i, WI + PB + 3 * r + c - 3] += value


@njit
def _add_joint_block(blocks, i, S, nvj, c_stiff, c_damp, tmp):
    """D_i (tmp[36:72], stride 6) += the symmetric part of S_i^T (c_stiff K + c_damp C) S_i, [C | K] =
    blocks[i, :, 12:24]: the contacts between body i and its parent, which move with its joint alone (their forces
    cancel on the parent's subtree: nothing else changes). Their pivot scales (tmp[72:78]) gain its diagonal."""
    for a in range(nvj):
        for b in range(nvj):
            acc = 0.0
            for r in range(6):
                for c in range(6):
                    e = c_damp * (blocks[i, r, 12 + c] + blocks[i, c, 12 + r]) + c_stiff * (
                        blocks[i, r, 18 + c] + blocks[i, c, 18 + r])
                    acc += S[i, a, r] * e * S[i, b, c]
            tmp[36 + 6 * a + b] += 0.5 * acc
        tmp[72 + a] += abs(tmp[36 + 7 * a])


@njit
def effective_factor(body_int, body_real, gravity, q, zeros, ws, S, tmp, c_stiff, j_diag, UD, dinv, rot, fsub, kw,
                     blocks, c_damp, driven):
    """Factor S = M(q) + c_stiff K_gravity + diag(j_diag) by the articulated-body elimination, tip to base, O(N);
    returns a status.

    K_gravity = sum over bodies of T_b^T K_b T_b (T_b: the body's angular velocity rows, K_b of
    ``geometric_stiffness``, which rot (nbodies, 3, 3), fsub (nbodies, 3), kw (nbodies, 6) are scratch of): the
    angular block of each body's inertia gains c_stiff K_b (skipped when c_stiff is 0).

    Fills ws (nbodies, W_SPATIAL: R, r, the articulated inertias), S (nbodies, max_nv, 6: every joint's motion
    subspace), UD = U D^-1 (nbodies, max_nv, 6) and dinv = D^-1 (nbodies, max_nv, max_nv) with
    D_i = S_i^T I^A_i S_i + diag(j_diag[joint i's velocities]). ``zeros`` (nv,) zero velocities, tmp (TMP_SIZE,)
    scratch (the layout of ``spatial.forward_dynamics``). STATUS_SINGULAR | (body << 4) for a D_i that is not
    positive definite (a Cholesky pivot below SINGULAR_RTOL of its scale).

    blocks (nbodies, 6, 24): the contacts' [C_b | K_b] (``contact.contact_newton_blocks``), or no rows; each body's
    inertia gains the symmetric part of c_stiff K_b + c_damp C_b (the factorisation is symmetric: the slip's and
    the geometric terms' unsymmetric parts are left to the exact matrix, ``newton.newton_factor``), and each joint's
    D_i that of S_i^T (c_stiff K + c_damp C) S_i, [C | K] = blocks[i, :, 12:24] of the contacts between body i and
    its parent (``_add_joint_block``).

    driven (nbodies,) uint8, or (0,): nonzero for a driven joint (``rm.simulate``'s drivers), locked: its velocities
    are no unknowns (D^-1 = 0, so ``effective_apply`` gives them x = 0 and the parent the whole I^A: the factors of
    the matrix's rows and columns of the free velocities, as ``tree.hybrid_dynamics`` eliminates them).
    """
    status = kinematics_pass(body_int, body_real, q, zeros, ws, S, tmp, np.bool_(False))
    if status:
        return status
    n = body_int.shape[0]
    for i in range(n):
        _body_inertia(body_real, i, ws, i)
    if c_stiff != 0.0:
        geometric_stiffness(body_int, body_real, gravity, ws, rot, fsub, kw)
        for i in range(n):
            for e in range(6):
                ws[i, WI + PA + e] += c_stiff * kw[i, e]
    for i in range(blocks.shape[0]):
        _add_contact_block(ws, i, blocks, c_stiff, c_damp)
    for i in range(n - 1, -1, -1):
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        _unpack_inertia(ws[i], WI, tmp, 234)
        for col in range(nvj):  # U = I^A S (tmp[0:36], 6 per column)
            for r in range(6):
                acc = 0.0
                for c in range(6):
                    acc += tmp[234 + 6 * r + c] * S[i, col, c]
                tmp[6 * col + r] = acc
        for r in range(6):
            tmp[228 + r] = math.sqrt(abs(tmp[234 + 7 * r]))
        for col in range(nvj):  # D = S^T U + diag(j_diag) (tmp[36:72], stride 6), pivot scales in tmp[72:78]
            scale = 0.0
            for r in range(6):
                scale += abs(S[i, col, r]) * tmp[228 + r]
            tmp[72 + col] = scale * scale + abs(j_diag[kv + col])
            for row in range(nvj):
                acc = 0.0
                for r in range(6):
                    acc += S[i, row, r] * tmp[6 * col + r]
                tmp[36 + 6 * row + col] = acc
            tmp[36 + 7 * col] += j_diag[kv + col]
        if blocks.shape[0] > 0:  # the contacts between the body and its parent: on its own joint alone
            _add_joint_block(blocks, i, S, nvj, c_stiff, c_damp, tmp)
        if driven.shape[0] > 0 and driven[i] != 0:  # locked: D^-1 = 0, hence U D^-1 = 0 and I^a = I^A
            for col in range(nvj):
                for r in range(nvj):
                    dinv[i, r, col] = 0.0
        else:
            status = _cholesky_factor(tmp, 36, 186, 72, nvj, i)  # Cholesky of D in place
            if status:
                return status
            for col in range(nvj):  # D^-1 column by column
                for r in range(nvj):
                    tmp[192 + 6 * col + r] = 0.0
                tmp[192 + 7 * col] = 1.0
                _cholesky_solve(tmp, 36, 186, nvj, 192 + 6 * col)
                for r in range(nvj):
                    dinv[i, r, col] = tmp[192 + 6 * col + r]
        for col in range(nvj):  # UD = U D^-1
            for r in range(6):
                acc = 0.0
                for k in range(nvj):
                    acc += tmp[6 * k + r] * dinv[i, k, col]
                UD[i, col, r] = acc
        p = body_int[i, PARENT]
        if p < 0:
            continue
        for r in range(6):  # I^a = I^A - U D^-1 U^T to the parent
            for c in range(r, 6):
                acc = tmp[234 + 6 * r + c]
                for col in range(nvj):
                    acc -= UD[i, col, r] * tmp[6 * col + c]
                tmp[84 + 6 * r + c] = acc
                tmp[84 + 6 * c + r] = acc
        _pack_inertia(tmp, 84, tmp, 270)
        _inertia_transform_add(ws, i, ws[i, WT], ws[i, WT + 1], ws[i, WT + 2], tmp, 270, ws[p], WI)
    return STATUS_OK


@njit
def effective_apply(body_int, ws, S, UD, dinv, rhs, tmp, ud, out):
    """out = (M + diag(j_diag))^-1 rhs (nv,) with the factors of ``effective_factor``: two sweeps, O(N).

    The articulated-body algorithm at zero velocity without gravity (the bias terms vanish): tip to base
    u = rhs - S^T p^A, p^a = p^A + U D^-1 u to the parent; base to tip from a_ground = 0, x = D^-1 u - (U D^-1)^T a',
    a = a' + S x. Overwrites the p^A and acceleration entries of ws; ud (nbodies, max_nv) scratch.
    """
    n = body_int.shape[0]
    for i in range(n):
        for m in range(6):
            ws[i, WP + m] = 0.0
    for i in range(n - 1, -1, -1):
        nvj = body_int[i, NVJ]
        kv = body_int[i, VIDX]
        for col in range(nvj):
            acc = rhs[kv + col]
            for m in range(6):
                acc -= S[i, col, m] * ws[i, WP + m]
            tmp[78 + col] = acc
        for r in range(nvj):
            acc = 0.0
            for col in range(nvj):
                acc += dinv[i, r, col] * tmp[78 + col]
            ud[i, r] = acc
        p = body_int[i, PARENT]
        if p < 0:
            continue
        for m in range(6):  # U D^-1 u
            acc = ws[i, WP + m]
            for col in range(nvj):
                acc += UD[i, col, m] * tmp[78 + col]
            tmp[120 + m] = acc
        _force_to_parent_add(ws, i, tmp, 120, ws[p], WP)
    for i in range(n):
        p = body_int[i, PARENT]
        kv = body_int[i, VIDX]
        if p < 0:
            for m in range(6):
                tmp[m] = 0.0
        else:
            _motion_to_child(ws, i, ws[p], WC, tmp, 0)
        nvj = body_int[i, NVJ]
        # every x from a' first: with the joint diagonal (U D^-1)^T S is no longer the identity, so a' must not
        # take a column's S x before the next column's x is formed (the forward-dynamics kernel may interleave)
        for col in range(nvj):
            acc = ud[i, col]
            for m in range(6):
                acc -= UD[i, col, m] * tmp[m]
            out[kv + col] = acc
        for col in range(nvj):
            for m in range(6):
                tmp[m] += S[i, col, m] * out[kv + col]
        for m in range(6):
            ws[i, WC + m] = tmp[m]


@njit
def spin_weights(body_int, body_real, out):
    """out (nv,): m e_a^2 on the velocities a = x, y, z of every spherical joint (e = centre of mass - joint point,
    child axes; m the body's mass) [kg m^2], 0 elsewhere: diag of the moment m e e^T, the one a link turned
    about its axis (joint to centre of mass) would have if its mass sat on a lever |e| across it."""
    for j in range(out.shape[0]):
        out[j] = 0.0
    for i in range(body_int.shape[0]):
        if body_int[i, JTYPE] != SPHERICAL:
            continue
        m = body_real[i, MASS]
        inv_m = 1.0 / m if m > 0.0 else 0.0
        kv = body_int[i, VIDX]
        for a in range(3):
            e = inv_m * body_real[i, MCOM + a] - body_real[i, CP + a]
            out[kv + a] = m * e * e


@njit
def set_driven(system, q, v, vdot):
    """The drivers' f, f', f'' (in system.u, filled by the inputs callback) into the driven entries of q, v and
    vdot (nothing without drivers)."""
    drivers = system.driven_coords
    u = system.u
    for j in range(drivers.shape[0]):
        slot = drivers[j, 2]
        q[drivers[j, 0]] = u[slot]
        v[drivers[j, 1]] = u[slot + 1]
        vdot[drivers[j, 1]] = u[slot + 2]


@njit
def _undriven(system, nv):
    """The velocities (indices into v) that are not driven: all nv without drivers."""
    drivers = system.driven_coords
    keep = np.ones(nv, dtype=np.bool_)
    for j in range(drivers.shape[0]):
        keep[drivers[j, 1]] = False
    return np.flatnonzero(keep)


@njit
def drive_rows(system, v, residual, powers):
    """The driven joints' rows of an implicit step's residual (M vdot + h - tau - loads at a driven velocity): each
    is the force its driver supplies; its power joins the applied one (powers[1]) and the row leaves the Newton
    system (set to 0: a driven velocity is no unknown, the factors lock it)."""
    drivers = system.driven_coords
    for j in range(drivers.shape[0]):
        k = drivers[j, 1]
        powers[1] += residual[k] * v[k]
        residual[k] = 0.0


@njit
def spatial_residual(inputs, key, system, t, q, v, vdot, S, tau_need, powers):
    """residual = M(q) vdot + h(q, v) - tau - Q_elements (nv,) into ``tau_need`` by one Newton-Euler pass, after the
    inputs (tau functions, time-varying element loads, drivers: their f, f', f'' written into the driven entries of
    q, v and vdot) and the force elements at (t, q, v); q must hold unit quaternions. powers = (dissipated by the
    dampers, applied by tau and the forces and torques) [W]. S (nbodies, max_nv, 6) scratch for the kinematics.
    Returns the status."""
    status = inputs(key, t, q, v, system.u)
    if status != STATUS_OK:
        return status
    set_driven(system, q, v, vdot)
    tau = system.tau
    nv = v.shape[0]
    status, dissipated, power = applied_forces(system, q, v)
    if status != STATUS_OK:
        return status
    status = inverse_dynamics(system.body_int, system.body_real, system.gravity, q, v, vdot, system.ws, S,
                              system.tmp, tau_need)
    if status != STATUS_OK:
        return status
    for k in range(nv):
        tau_need[k] -= tau[k]
    powers[0] = dissipated
    powers[1] = power
    return STATUS_OK


@njit
def cheap_stalls(correction, previous, fresh, newton_tol, iterations_left):
    """True where generalised-alpha leaves the cheap Newton matrix for the step: its last correction (with fresh
    factors: ``previous`` finite) shrank by less than CHEAP_STALL, or at that rate would still be above newton_tol
    after ``iterations_left`` more iterations; or none are left."""
    if iterations_left <= 0:
        return True
    if not fresh or not previous < np.inf or correction <= newton_tol:
        return False
    ratio = correction / previous
    return ratio > CHEAP_STALL or correction * ratio**iterations_left > newton_tol


@njit
def integrate_generalized_alpha(inputs, key, system, y0, carry, t0, t_end, dt, nsteps_total, every, t_eval,
                                coefficients, newton_tol, max_newton, j_stiff, j_damp, t_out, y_out, output_budget,
                                events, events_key, directions, terminal, ev_t, ev_y, monitor, monitor_key, control,
                                info):
    """Lie-group generalised-alpha (Arnold & Bruls 2007) on a spatial system from t0 to t_end in ``nsteps_total``
    steps of dt (the last one landing on t_end), the whole loop compiled; the planar loop's conventions
    (``planar.implicit.integrate_generalized_alpha``) on the state y = (q (nq), v (nv), W_dissipated, W_applied).

    Each step: unknown vdot+ (nv); a+ from (1 - alpha_m) a+ + alpha_m a = (1 - alpha_f) vdot+ + alpha_f vdot,
    v+ = v + h (1 - gamma) a + h gamma a+, q+ = q (+) (h v + h^2 (1/2 - beta) a + h^2 beta a+ + J^T nu)
    (``spatial.system.integrate_configuration``: unit quaternions by construction; nu only with loops);
    residual = inverse dynamics minus tau and the element loads at (t+, q+, v+), plus J^T lambda with loops;
    Newton first with the cheap matrix S = M + c_stiff K_gravity + diag(c_stiff j_stiff + c_damp j_damp)
    (``effective_factor``) factorised at an iterate and reused, over later steps too, while the corrections shrink
    >= 20x per iteration (as the planar loop); where its corrections with fresh factors shrink by less than
    CHEAP_STALL or would not reach newton_tol within CHEAP_ITERATIONS iterations (``cheap_stalls``), the rest of
    the step on the exact matrix N = d(inverse dynamics)/d vdot+ + the same diagonal (``newton.newton_factor``, the
    update's tangent map included; from the predictor where the corrections grew) factorised at that iterate and
    again at every iterate whose last correction is above NEWTON_PROPER_ABOVE newton_tol or shrank less than 20x,
    the spherical joints' spins held (SPIN_DAMPING times ``spin_weights`` on the diagonal) until a correction on it
    has shrunk to SPIN_RELEASE of the one before or to 100 newton_tol, then factorised again without the damping;
    no step converges with the spins held.
    A step that fails so is tried again from the predictor on N alone, then on fresh factors of S alone (with
    loops, whose forces' stiffness both lag, S may converge where N stalls). The first correction from the
    predictor takes the spherical springs past their half turn linearised at the step's start
    (``elements.linearise_spherical_springs``) and never ends the iteration. With the m loop equations of
    ``system.loops`` (``recursive_mbd.integrate.spatial_implicit``: stabilised index 2) the correction is bordered
    by the rows J v+ / c_damp (``newton.schur_correction`` on the responses S^-1 J^T, m applies of the factors) and
    phi(q+) / c_stiff (``newton.position_correction``), O(N m + m^3) an iteration.
    With contacts the residual has their loads (``system.contact_residual``: the rows' state of y held over the
    step), both matrices their per-body blocks at the iterate they are made at (``system.contact_blocks``), S is
    made again where its corrections shrink by less than SLOW_CONTRACTION, and after each step the rows' state in y
    is updated (``system.update_contact_state``: a fixed step's impact that it does not resolve ends the run). A
    row whose slip direction reversed since the attempt's last iterate takes that iterate's correction on its
    unclipped law, in the residual and in fresh factors (``contact.slip_reversals``: it ends Newton's cycling
    between the two slip directions of a row that sticks), and no such iterate ends the iteration; where S is not
    positive definite with the contacts' blocks (a sliding row's unsymmetric coupling to its normal force), the
    step goes on on N.
    carry (2 + 2 nv + m + 1): (powers, a, vdot, lambda, started). y_out rows (n + m): the state y, then the
    multipliers lambda at that sample (linear in time between step ends at t_eval points and events), the buffers
    growing to at most ``output_budget`` floats with the events' (STATUS_OUTPUT_FULL beyond). info (8,):
    on a Newton failure (last correction of the state, max |residual|, step, iterations); info[4] factorisations
    (added to); info[5], info[6]: the sum of log(correction ratio) and the number of ratios measured (corrections
    above 1e3 newton_tol, leaving out those of factors given up after them: the contraction factor before
    round-off); info[7] the largest ratio.
    Returns (status, t_fail, count, t_out, y_out, nfev, nsteps, newton_iterations, nev, ev_t, ev_y).
    """
    body_int = system.body_int
    body_real = system.body_real
    elem_int = system.elements[0]
    elem_real = system.elements[1]
    nb = body_int.shape[0]
    nq = system.q.shape[0]
    nv = system.v.shape[0]
    n = y0.shape[0]
    nsmooth = nq + nv
    alpha_m = coefficients[0]
    alpha_f = coefficients[1]
    gamma = coefficients[2]
    beta = coefficients[3]
    loops = system.loops
    phi = loops[LOOP_PHI]
    phid = loops[LOOP_PHID]  # J v at the last residual's state
    jac = loops[LOOP_JAC]
    m = phi.shape[0]
    rcond = loops[LOOP_SETTINGS][4]
    max_nv = 1
    for i in range(nb):
        max_nv = max(max_nv, body_int[i, NVJ])
    ws_f = np.zeros_like(system.ws)  # the factors' kinematics, apart from the residual's
    s_f = np.zeros((nb, max_nv, 6))
    s_r = np.zeros((nb, max_nv, 6))
    fac = np.zeros((nb, factor_width(max_nv)))
    scr = np.zeros(SCRATCH_SIZE)
    work_nv = np.zeros(nv)
    # the cheap matrix's factors (``effective_factor``), kept over steps apart from the exact matrix's
    ws_c = np.zeros_like(system.ws)
    s_c = np.zeros((nb, max_nv, 6))
    ud_c = np.zeros((nb, max_nv, 6))
    dinv = np.zeros((nb, max_nv, max_nv))
    rot = np.zeros((nb, 3, 3))
    fsub = np.zeros((nb, 3))
    kw = np.zeros((nb, 6))
    zeros = np.zeros(nv)
    ud = np.zeros((nb, max_nv))
    tmp_f = np.zeros_like(system.tmp)
    j_diag = np.zeros(nv)
    spin = np.zeros(nv)  # the spherical joints' spin weights (``spin_weights``)
    spin_weights(body_int, body_real, spin)
    holds_spin = False  # any spherical joint's spin to hold (without, the held matrix is the exact one)
    for j in range(nv):
        holds_spin = holds_spin or spin[j] > 0.0
    j_exact = np.zeros(nv)  # j_diag + the spin damping of the exact factorisation
    residual = np.zeros(nv)
    dx = np.zeros(nv)
    acc = np.zeros(nv)
    vdot = np.zeros(nv)
    vdot_new = np.zeros(nv)
    acc_new = np.zeros(nv)
    delta = np.zeros(nv)
    q_new = np.zeros(nq)
    v_new = np.zeros(nv)
    # the loop rows (m = 0 for a tree): every velocity is an unknown of their bordered solve (a driven one's
    # response is zero: its joint is locked in the factors); the position unknowns nu move the free velocities only
    free = np.arange(nv)
    moved = _undriven(system, nv)
    resp = np.zeros((m, nv))  # N^-1 J^T at the exact factors' iterate
    gram = np.zeros((m, m))
    resp_c = np.zeros((m, nv))  # S^-1 J^T, J S^-1 J^T with the cheap factors
    gram_c = np.zeros((m, m))
    gram_pos = np.zeros((m, m))
    work_m = np.zeros(m)
    rate_scaled = np.zeros(m)
    dlam = np.zeros(m)
    dnu = np.zeros(m)
    lam = np.zeros(m)
    lam_old = np.zeros(m)
    shift = np.zeros(nv)  # J^T nu: the position correction of the stabilised index-2 form, in the tangent space
    xfull = np.zeros(nv)
    # the contacts' blocks of the Newton matrix (``contact.contact_newton_blocks``), at each factorisation
    with_contacts = system.contacts[0].shape[0] > 0
    blocks = np.zeros((nb if with_contacts else 0, 6, 24))
    # the contacts' subtree loads, which the exact matrix turns with the joints (``system.contact_subtree_loads``)
    loads = np.zeros((nb if with_contacts else 0, 6))
    # the rows taken on their unclipped law at the iterate, their slip reversed (``contact.slip_reversals``)
    linear = np.zeros((system.contacts[0].shape[0], 4))
    # the state, its rates (q', v') at the step's ends for the dense output, the work rates, an output row
    y, y_new, rate, rate_new, powers, powers_new, ytmp, row = newton.run_state(y0, m)
    nfev = 0
    iterations = 0
    count = 0
    t = t0
    if not newton.load_carry(carry, powers, acc, vdot, lam):
        status = system_rhs(inputs, key, system, t0, y, ytmp)  # vdot, lambda, powers at the start
        nfev += 1
        if status != STATUS_OK:
            return status, t, count, t_out, y_out, nfev, 0, iterations, 0, ev_t, ev_y
        for j in range(nv):
            vdot[j] = ytmp[nq + j]
            acc[j] = vdot[j]
        set_driven(system, y[:nq], y[nq:nq + nv], vdot)  # q0 and v0 follow the drivers at t0
        for r in range(m):
            lam[r] = loops[LOOP_LAM][r]
        powers[0] = ytmp[nq + nv]
        powers[1] = ytmp[nq + nv + 1]
    configuration_rate(system, y, y[nq:nq + nv], rate)
    for j in range(nv):
        rate[nq + j] = vdot[j]
    use_eval = t_eval.shape[0] > 0
    newton.output_row(y, lam, lam, 1.0, row)
    nev = np.int64(0)  # int64, not a literal: step_outputs compiles once
    status, t_fail, count, next_eval, t_out, y_out, ev = integrators.open_outputs(
        t_out, y_out, t_eval, t0, row, y, events, events_key, directions, ev_t, ev_y, output_budget)
    if status != STATUS_OK:
        return status, t_fail, count, t_out, y_out, nfev, 0, iterations, nev, ev_t, ev_y
    scale = (1.0 - alpha_f) / (1.0 - alpha_m)
    factored_h = -1.0  # the step size of the cheap factors (and of resp_c, gram_c), kept over steps; -1: none
    fresh = False
    exact_run = 0  # the steps in a row that ended on the exact matrix (trees only; 0: the last one ended on S)
    for step in range(nsteps_total):
        t_new = t_end if step == nsteps_total - 1 else t0 + (step + 1) * dt
        h = t_new - t
        c_damp = h * gamma * scale
        c_stiff = h * h * beta * scale
        for j in range(nv):
            vdot_new[j] = vdot[j]
            j_diag[j] = c_stiff * j_stiff[j] + c_damp * j_damp[j]
            shift[j] = 0.0
        for r in range(m):
            lam_old[r] = lam[r]
        converged = False
        correction = np.inf
        res_max = np.inf
        for attempt in range(3):
            # the first attempt on the cheap matrix (on the exact one after two steps that ended there, for trees:
            # but every CHEAP_RETRY-th), the exact one from where that stalls; where it fails, again
            # from the predictor on the exact matrix alone, then on fresh cheap factors alone (with loops, whose
            # forces' stiffness both lag, the cheap matrix may contract where the exact one stalls)
            exact = attempt == 1 or (attempt == 0 and m == 0 and exact_run >= 2 and exact_run % CHEAP_RETRY != 0)
            if attempt > 0:
                newton.restart_attempt(vdot_new, vdot, shift, lam, lam_old)
            if attempt == 2:
                factored_h = -1.0
            factor_exact = exact  # the exact matrix is due at this iterate
            at_predictor = True  # the iterate is the step's predictor
            fresh = False  # the factors in use were made in this attempt
            spin_held = holds_spin  # the exact factorisations damp the spins (SPIN_DAMPING) until released
            exact_previous = np.inf  # the attempt's last correction on the exact matrix
            previous = np.inf
            correction = np.inf
            linear[:, :] = 0.0  # no slip direction seen yet
            marked = 0
            for iteration in range(max_newton):
                status = integrators._poll(monitor, monitor_key, control, t, y, nfev)
                if status != STATUS_OK:
                    return status, t, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
                acc_max = 0.0
                for j in range(nv):
                    acc_new[j] = ((1.0 - alpha_f) * vdot_new[j] + alpha_f * vdot[j] - alpha_m * acc[j]) / (
                        1.0 - alpha_m)
                    delta[j] = h * y[nq + j] + h * h * ((0.5 - beta) * acc[j] + beta * acc_new[j]) + shift[j]
                    v_new[j] = y[nq + j] + h * ((1.0 - gamma) * acc[j] + gamma * acc_new[j])
                    acc_max = max(acc_max, abs(acc_new[j]))
                pred_max = 0.0
                for k in range(nq):
                    q_new[k] = y[k]
                    pred_max = max(pred_max, abs(y[k]))
                for j in range(nv):
                    pred_max = max(pred_max, abs(y[nq + j]))
                integrate_configuration(system, q_new, delta)
                status = spatial_residual(inputs, key, system, t_new, q_new, v_new, vdot_new, s_r, residual,
                                          powers_new)
                if status == STATUS_OK:  # the contacts' loads, their state (in y) held over the step
                    status = contact_residual(system, q_new, v_new, y, residual, powers_new)
                # rows whose slip reversed since the last iterate take this step on their unclipped law (residual
                # and blocks), which lands on the root where it sticks (``contact.slip_reversals``); the factors are
                # made again at such an iterate and at the one after it (the law's blocks again)
                relinearise = marked > 0
                marked = 0
                if status == STATUS_OK and with_contacts:
                    marked = contact_slip_reversals(system, y, linear, residual)
                    relinearise = relinearise or marked > 0
                # the predictor's spherical springs past their half turn: linearised at the step's start for the
                # first correction from it (``elements.linearise_spherical_springs``), never the converged iterate
                linearised = status == STATUS_OK and at_predictor and linearise_spherical_springs(
                    body_int, elem_int, elem_real, y, q_new, delta, residual)
                at_predictor = False
                if status == STATUS_OK and m > 0:
                    # phi(q+), J v+ and J at (q+, v+); the residual gains J^T lambda (M vdot + h = Q - J^T lambda)
                    status = _constraints(system, q_new, v_new)
                    for r in range(m):
                        for j in range(nv):
                            residual[j] += jac[r, j] * lam[r]
                        rate_scaled[r] = phid[r] / c_damp  # the velocity rows J v+ / c_damp: d/dvdot+ = J
                # the driving forces (the loop forces on the driven joints included) out of the Newton rows
                drive_rows(system, v_new, residual, powers_new)
                nfev += 1
                if status != STATUS_OK:
                    if integrators._fatal(status):
                        return status, t, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
                    correction = np.inf  # a non-finite state: the iteration diverged
                    break
                res_max = 0.0
                for j in range(nv):
                    res_max = max(res_max, abs(residual[j]))
                # the cheap factors, made again where they are due (with contacts, also factors of this step that
                # contract slowly: a contact made or broken since they were made, a stiff force switched on that the
                # matrix does not have)
                cheap_made = False
                if not exact and (newton.refactor_due(factored_h, h, fresh, correction, previous) or relinearise or (
                        with_contacts and correction > newton.SLOW_CONTRACTION * previous)):
                    status = contact_blocks(system, q_new, v_new, y, blocks, linear)
                    if status == STATUS_OK:
                        status = effective_factor(body_int, body_real, system.gravity, q_new, zeros, ws_c, s_c,
                                                  tmp_f, c_stiff, j_diag, ud_c, dinv, rot, fsub, kw, blocks,
                                                  c_damp, system.driven)
                    if (status & 15) == STATUS_SINGULAR:
                        # gravity's stiffness is negative where a subtree hangs above its joint (a top, an arm
                        # swung up): M + c_stiff K may be indefinite for a large step; then lag it too
                        status = effective_factor(body_int, body_real, system.gravity, q_new, zeros, ws_c, s_c,
                                                  tmp_f, 0.0, j_diag, ud_c, dinv, rot, fsub, kw, blocks, c_damp,
                                                  system.driven)
                    if (status & 15) == STATUS_SINGULAR and with_contacts:
                        # a sliding row's friction follows its normal force, mu dF_n along the slip, with no term
                        # back: the symmetric part of that coupling, c_stiff mu k_n / 2 between the normal and the
                        # slip direction (whose own entry is the bare mass: the clipped force does not change along
                        # it), is indefinite where c_stiff k_n > 4 m / mu^2 or so (a capsule sliding on k = 1e9
                        # at 10 ms: c_stiff k_n = 60 m); the exact matrix takes it unsymmetric, from this iterate on
                        factored_h = -1.0
                        exact = True
                        factor_exact = True
                    elif status != STATUS_OK:
                        newton.record_failure(info, np.inf, res_max, step, iterations)
                        return status, t_new, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
                    else:
                        for r in range(m):  # the loop rows' responses S^-1 J_r^T and J S^-1 J^T: m applies
                            effective_apply(body_int, ws_c, s_c, ud_c, dinv, jac[r], tmp_f, ud, resp_c[r])
                        gram_matrix(jac, resp_c, gram_c)
                        factored_h = h
                        fresh = True
                        info[4] += 1
                        previous = np.inf
                        cheap_made = True
                if exact:
                    # Newton proper from where the cheap matrix stalled: factors at every iterate while the last
                    # correction is above NEWTON_PROPER_ABOVE newton_tol (chord steps far from the root overshoot
                    # and diverge on slender chains), then kept, and again where they shrink less than
                    # SLOW_CONTRACTION an iteration
                    if (factor_exact or relinearise or correction > NEWTON_PROPER_ABOVE * newton_tol
                            or correction > newton.SLOW_CONTRACTION * previous):
                        # with its configuration terms at (q+, v+, vdot+) and the update's tangent map, the spins
                        # held until the bending's corrections contract
                        held = SPIN_DAMPING if spin_held else 0.0
                        for j in range(nv):
                            j_exact[j] = j_diag[j] + held * spin[j]
                        status = contact_blocks(system, q_new, v_new, y, blocks, linear)
                        if status == STATUS_OK:
                            contact_subtree_loads(system, y, linear, loads)  # at contact_blocks' poses
                            status = newton_factor(body_int, body_real, system.gravity, q_new, v_new, vdot_new,
                                                   delta, c_stiff, c_damp, j_exact, ws_f, s_f, tmp_f, work_nv, scr,
                                                   fac, blocks, system.driven, loads)
                        if (status & 15) == STATUS_SINGULAR:
                            # M + c_stiff K singular (a subtree balanced above its joint at a large step): lag K
                            status = newton_factor(body_int, body_real, system.gravity, q_new, v_new, vdot_new,
                                                   delta, 0.0, 0.0, j_exact, ws_f, s_f, tmp_f, work_nv, scr, fac,
                                                   blocks, system.driven, loads)
                        if status != STATUS_OK:
                            newton.record_failure(info, np.inf, res_max, step, iterations)
                            return status, t_new, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
                        for r in range(m):  # the loop rows' responses N^-1 J_r^T and J N^-1 J^T: m applies
                            newton_apply(body_int, ws_f, fac, jac[r], tmp_f, ud, resp[r])
                        gram_matrix(jac, resp, gram)
                        factor_exact = False
                        fresh = True
                        info[4] += 1
                        previous = np.inf
                    else:
                        previous = correction
                    newton_apply(body_int, ws_f, fac, residual, tmp_f, ud, dx)
                else:
                    if not cheap_made:
                        previous = correction
                    effective_apply(body_int, ws_c, s_c, ud_c, dinv, residual, tmp_f, ud, dx)
                ok = True
                if m > 0:
                    if exact:
                        ok = newton.schur_correction(free, jac, resp, gram, rcond, rate_scaled, dx, dlam, work_m)
                    else:
                        ok = newton.schur_correction(free, jac, resp_c, gram_c, rcond, rate_scaled, dx, dlam,
                                                     work_m)
                    if ok:
                        ok = newton.position_correction(jac, moved, phi, rate_scaled, c_stiff, rcond, gram_pos,
                                                        work_m, dnu, xfull)
                iterations += 1
                dx_max = 0.0
                for j in range(nv):
                    vdot_new[j] -= dx[j]
                    dx_max = max(dx_max, abs(dx[j]))
                # the change of q+ and of v+ (a velocity left off carries on as a position error growing with t: at
                # small steps, where c_damp >> c_stiff, the velocity test decides)
                correction = max(c_stiff, c_damp) * dx_max
                if m > 0:  # lambda -= dlam; shift -= J^T dnu (in xfull), a position correction too
                    for r in range(m):
                        lam[r] -= dlam[r]
                    for j in range(nv):
                        shift[j] -= xfull[j]
                        correction = max(correction, abs(xfull[j]))
                if not (ok and math.isfinite(correction)):
                    correction = np.inf
                    break
                # the cheap matrix's corrections shrink too slowly (or not at all) for this step: the exact matrix
                # from the next iterate
                switch = attempt == 0 and not exact and cheap_stalls(correction, previous, fresh, newton_tol,
                                                                     CHEAP_ITERATIONS - iteration - 1)
                # the contraction measured leaves out the ratios of factors given up after them (the cheap ones of an
                # earlier step made again, the cheap matrix left for the exact one)
                given_up = switch or (not exact and not fresh and correction > newton.SLOW_CONTRACTION * previous)
                # the spins held: let them go (factors without the damping at the next iterate) once a correction
                # has shrunk to SPIN_RELEASE of the last, or once it is at the tolerance, which the held matrix
                # reaches with the spins' rows unsolved; no step converges with them held
                release = exact and spin_held and (
                    (exact_previous < np.inf and correction <= SPIN_RELEASE * exact_previous)
                    or correction <= 100.0 * newton_tol)
                if exact:
                    exact_previous = correction
                if previous < np.inf and previous > 1e3 * newton_tol and correction > 0.0 and not given_up:
                    ratio = correction / previous
                    info[5] += math.log(ratio)
                    info[6] += 1.0
                    info[7] = max(info[7], ratio)
                # floor: the round-off of the update (q, v of order pred_max, h^2 beta a+, h gamma a+)
                floor = 16.0 * 2.220446049250313e-16 * max(pred_max, h * max(h * beta, gamma) * acc_max)
                # (a step taken on a row's unclipped law is no step of the law: never the last)
                if not linearised and marked == 0 and not (exact and spin_held) and (
                        correction <= newton_tol + floor
                        or (fresh and correction <= 100.0 * newton_tol and correction > 0.5 * previous)):
                    converged = True
                    break
                if release:
                    spin_held = False
                    factor_exact = True
                if switch:
                    exact = True
                    factor_exact = True
                    fresh = False
                    if correction >= previous:  # they grew: the exact matrix from the predictor
                        newton.restart_attempt(vdot_new, vdot, shift, lam, lam_old)
                        at_predictor = True
            if converged:
                break
        exact_run = exact_run + 1 if exact and m == 0 else 0
        if not converged:
            newton.record_failure(info, correction, res_max, step, iterations)
            return STATUS_NO_CONVERGENCE, t_new, count, t_out, y_out, nfev, step, iterations, nev, ev_t, ev_y
        # the converged step's state, from the final vdot+ (and the final shift)
        for j in range(nv):
            acc_new[j] = ((1.0 - alpha_f) * vdot_new[j] + alpha_f * vdot[j] - alpha_m * acc[j]) / (1.0 - alpha_m)
            delta[j] = h * y[nq + j] + h * h * ((0.5 - beta) * acc[j] + beta * acc_new[j]) + shift[j]
            y_new[nq + j] = y[nq + j] + h * ((1.0 - gamma) * acc[j] + gamma * acc_new[j])
        for k in range(nq):
            y_new[k] = y[k]
        integrate_configuration(system, y_new[:nq], delta)
        set_driven(system, y_new[:nq], y_new[nq:nq + nv], vdot_new)  # the drivers at t+ (the last residual's u)
        configuration_rate(system, y_new, y_new[nq:nq + nv], rate_new)
        for j in range(nv):
            rate_new[nq + j] = vdot_new[j]
        # work terms: trapezoidal rule on the powers (second order, like the scheme)
        y_new[nsmooth] = y[nsmooth] + 0.5 * h * (powers[0] + powers_new[0])
        y_new[nsmooth + 1] = y[nsmooth + 1] + 0.5 * h * (powers[1] + powers_new[1])
        interpolant = newton.SpatialHermite(y, y_new, rate, rate_new, nsmooth, lam_old, lam, row)
        status, t_fail, stepped, count, next_eval, nev, t_out, y_out, ev_t, ev_y = integrators.step_outputs(
            interpolant, t, h, t_new, y_new, events, events_key, directions, terminal, ev, ytmp, t_eval, next_eval,
            t_out, y_out, count, ev_t, ev_y, nev, output_budget)
        if status != STATUS_OK:  # a failed event function (the step not taken), a full buffer, a terminal event
            done = step + 1 if stepped else step
            return status, t_fail, count, t_out, y_out, nfev, done, iterations, nev, ev_t, ev_y
        for j in range(n):
            y[j] = y_new[j]
            rate[j] = rate_new[j]
        for j in range(nv):
            acc[j] = acc_new[j]
            vdot[j] = vdot_new[j]
        powers[0] = powers_new[0]
        powers[1] = powers_new[1]
        t = t_new
        if with_contacts:  # the contacts' state after the step (anchors, impact speeds, the impacts' watch)
            status = update_contact_state(system, y)
            if status != STATUS_OK:
                return status, t, count, t_out, y_out, nfev, step + 1, iterations, nev, ev_t, ev_y
            for j in range(nsmooth + 2, n):
                y_new[j] = y[j]
        if not use_eval and ((step + 1) % every == 0 or step == nsteps_total - 1):
            stored, count, t_out, y_out = newton.store_row(t_out, y_out, count, t, y, lam, row,
                                                           integrators._left(output_budget, ev_t, ev_y))
            if not stored:
                return STATUS_OUTPUT_FULL, t, count, t_out, y_out, nfev, step + 1, iterations, nev, ev_t, ev_y
    newton.save_carry(carry, powers, acc, vdot, lam)
    return STATUS_OK, t, count, t_out, y_out, nfev, nsteps_total, iterations, nev, ev_t, ev_y

