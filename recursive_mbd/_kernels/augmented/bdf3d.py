"""BDF on the augmented absolute coordinates of a spatial model compiled: each step's history in the local
coordinates of the current pose, the affine update it gives the generalised-alpha kernels, and the local error
estimate. ``recursive_mbd.integrate.augmented3d_implicit`` (its section "BDF") derives the scheme; this module
writes the per-body pieces.

Body i has the pose z_i = (c, quat) and the velocities zb_i = (c', omega_b), omega_b in body axes (an element of the
Lie algebra R^3 x so(3), the same vector space at every time). A past pose is read in the local coordinates of the
current one, x = (c_past - c_now, log(R_now^T R_past)) (the rotation vector in the current body axes, of length
<= pi), the current pose is x = 0, and the new one is R_new = R_now exp([x_new]).
"""

import math

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)


@njit
def _relative_rotation(z_now, z_past, i):
    """log(R_now^T R_past) of body i (rotation vector, body axes of the current pose): the quaternion
    conj(q_now) q_past taken with a non-negative scalar part (the shorter turn)."""
    aw, ax, ay, az = z_now[i, 3], -z_now[i, 4], -z_now[i, 5], -z_now[i, 6]
    bw, bx, by, bz = z_past[i, 3], z_past[i, 4], z_past[i, 5], z_past[i, 6]
    w = aw * bw - ax * bx - ay * by - az * bz
    x = aw * bx + ax * bw + ay * bz - az * by
    y = aw * by + ay * bw + az * bx - ax * bz
    z = aw * bz + az * bw + ax * by - ay * bx
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-8:  # 2 atan2(s, w) / s by its series (w ~ 1): the closed form loses digits
        k = 2.0 / w * (1.0 - s * s / (3.0 * w * w))
    else:
        k = 2.0 * math.atan2(s, w) / s
    return k * x, k * y, k * z


@njit
def _right_jacobian_times(dx, dy, dz, wx, wy, wz):
    """J_r(phi) w for phi = (dx, dy, dz): w - (1 - cos|phi|) / |phi|^2 [phi] w + (|phi| - sin|phi|) / |phi|^3
    [phi]^2 w (series below |phi| = 1e-4)."""
    phi2 = dx * dx + dy * dy + dz * dz
    if phi2 < 1e-8:
        b = 0.5 - phi2 / 24.0
        cc = 1.0 / 6.0 - phi2 / 120.0
    else:
        phi = math.sqrt(phi2)
        b = (1.0 - math.cos(phi)) / phi2
        cc = (phi - math.sin(phi)) / (phi2 * phi)
    cx = dy * wz - dz * wy
    cy = dz * wx - dx * wz
    cz = dx * wy - dy * wx
    c2x = dy * cz - dz * cy
    c2y = dz * cx - dx * cz
    c2z = dx * cy - dy * cx
    return wx - b * cx + cc * c2x, wy - b * cy + cc * c2y, wz - b * cz + cc * c2z


@njit
def history(z, zb, vdot, past_z, past_zb, npast, a, w, w_d, c_damp, base_x, zb_eff, acc_eff, guess, x_pred, v_pred):
    """A step's history, predictor and first guess, every body.

    In: the current state z (nbodies, 7), zb, vdot (nbodies, 6); the past states past_z (P, nbodies, 7), past_zb
    (P, nbodies, 6), the last first, of which the first ``npast`` are used; the BDF coefficients a (k + 1,) [1/s] with
    y'(t_new) = a[0] y_new + a[1] y_now + sum_{j >= 2} a[j] past[j - 2] (k <= npast + 1); the predictor's weights w
    (npast + 1,) on (y_now, past[0], ...) and w_d [s] on y_now' (its Taylor term; 0 when the past points suffice);
    c_damp = 1 / a[0] [s].

    Out (nbodies, 6 each): v_new = zb_eff + c_damp vdot_new is the velocity rows of the BDF formula,
    a[0] v_new + sum_j a[j] v_j = vdot_new; x_new = base_x + c_damp^2 vdot_new the position rows (local
    coordinates), a[0] x_new + J_r(x_pred) S_x = v_new with S_x = sum_{j >= 2} a[j] x_j (the exact rows have
    J_r(x_new); ``integrate.augmented3d_implicit``, section "BDF", says why x_pred's is taken); acc_eff is the
    generalised-alpha kernels' acc0 that gives this update (``affine_update`` there: alpha_m = alpha_f = 0,
    gamma = beta = 1, h = c_damp); x_pred, v_pred the predictor (local coordinates, body-axis velocities), and
    guess the vdot_new that puts the bodies at x_pred (Newton's first guess)."""
    n = z.shape[0]
    k = a.shape[0] - 1
    c2 = c_damp * c_damp
    for i in range(n):
        # the past poses' local coordinates (linear part, rotation part) and their sums
        sx = [0.0] * 6
        xp = [0.0] * 6
        for c in range(6):
            xp[c] = w_d * zb[i, c]  # d x / dt at x = 0 is v (J_r(0) = 1)
        for j in range(npast):
            rx, ry, rz = _relative_rotation(z, past_z[j], i)
            x = (past_z[j, i, 0] - z[i, 0], past_z[j, i, 1] - z[i, 1], past_z[j, i, 2] - z[i, 2], rx, ry, rz)
            for c in range(6):
                if j + 2 <= k:
                    sx[c] += a[j + 2] * x[c]
                xp[c] += w[j + 1] * x[c]
        for c in range(6):
            sv = a[1] * zb[i, c]
            vp = w[0] * zb[i, c] + w_d * vdot[i, c]
            for j in range(npast):
                if j + 2 <= k:
                    sv += a[j + 2] * past_zb[j, i, c]
                vp += w[j + 1] * past_zb[j, i, c]
            zb_eff[i, c] = -sv * c_damp
            v_pred[i, c] = vp
            x_pred[i, c] = xp[c]
        jx, jy, jz = _right_jacobian_times(xp[3], xp[4], xp[5], sx[3], sx[4], sx[5])
        sx[3], sx[4], sx[5] = jx, jy, jz
        for c in range(6):
            bx = c_damp * (zb_eff[i, c] - sx[c])
            base_x[i, c] = bx
            acc_eff[i, c] = 2.0 * (c_damp * zb_eff[i, c] - bx) / c2
            guess[i, c] = (x_pred[i, c] - bx) / c2


@njit
def error_norm(
    z_new, zb_new, vdot, base_x, c_stiff, x_pred, v_pred, scale, atol, rtol, gyration, v_weight, rate, h, where
):
    """The local error estimate's norm of a converged step, max over the bodies' components of
    |scale (y_new - y_pred)| / (atol + rtol |y|): the centres of mass (|y| = |c_new|), the rotations' local
    coordinates times the radius of gyration (their points' motion [m]; |y| = the radius: a turn of 1 rad), and the
    velocities times v_weight [s] (|y| = their own size times v_weight). Also rate (nbodies, 6) = x_new / h, the
    step's mean velocity in local coordinates (the dense output's rotation increments are h rate[:, 3:]); where[0]
    the body of the largest term."""
    worst = 0.0
    body = 0
    for i in range(z_new.shape[0]):
        for c in range(6):
            x = base_x[i, c] + c_stiff * vdot[i, c]
            rate[i, c] = x / h
            if c < 3:
                e = abs(scale * (x - x_pred[i, c])) / (atol + rtol * abs(z_new[i, c]))
            else:
                e = abs(scale * (x - x_pred[i, c])) * gyration[i] / (atol + rtol * gyration[i])
            ev = abs(scale * (zb_new[i, c] - v_pred[i, c])) * v_weight
            ev /= atol + rtol * abs(zb_new[i, c]) * v_weight
            e = max(e, ev)
            if not e <= worst:
                worst = e
                body = i
    where[0] = body
    return worst
