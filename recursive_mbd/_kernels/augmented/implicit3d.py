"""Generalised-alpha on the augmented absolute coordinates of a spatial model compiled: the step's update on
R^3 x SO(3) per body, its residual and its Newton matrix, factorised and solved in tree order in O(N).
``recursive_mbd.integrate.augmented3d_implicit`` derives the scheme and says what is exact; this module writes the
pieces out.

Coordinates and rows are those of ``spatial3d``: body i has z_i = (c, quat) and its joint's m rows
(``spatial3d.ROWS_PER_JOINT``) have the child block jc and the parent block jp (m x 6), ground axes. The step's
velocities and accelerations carry omega in BODY axes (zbp, vdot; the ground-axis omega = R omega_b for the rows):
the rotation is updated as R+ = R exp([Delta]), a pose is perturbed by (dc, dtheta_b), R -> R exp([dtheta_b]), and
the moment rows of the residual are the body-axis ones, J_c omega_b' + omega_b x J_c omega_b + R^T X (X the
joints' moments on the body, ground axes). Why body axes: a slender link's spin is then decoupled exactly (its
constraint moments have no axial part, whatever the iterate), where in ground axes the axis a step turns about is
not the link's and Newton from the predictor threw 1000-link chains' top links into spins of 1e5 rad/s^2.

Newton matrix, for body i with parent p (c_s = c_stiff, c_d = c_damp, T_i = diag(1, J_r(Delta_omega_i)) the
tangent map of the rotation update, J_r SO(3)'s right Jacobian):

    rows of body i:   A_ii dvdot_i + A_ip dvdot_p + sum_children A_ik dvdot_k + jc_i^T dlam_i + sum_k jp_k^T dlam_k
    rows of joint i:  jcb_i dvdot_i + jpb_i dvdot_p

with A_ii = M_i + c_d ([omega_b] J_c - [J_c omega_b]) + c_s ([R^T X] + R^T H_ii R) T_i, A_ip = c_s R_i^T H_ip R_p
T_p, A_pi = c_s R_p^T H_pi R_i T_i (the moment rows and turn columns; the force rows and position columns without
R), H the derivative of the constraint forces jc^T lam, jp^T lam by ground-axis turns (the multiplier-weighted
geometric stiffness; a joint's H couples its child and its parent only), jc, jp the rows with their moment columns
times R (body axes), jcb = (dC/dz) R T the position rows' exact gradient times the tangent map (linear rows and the
universal's angular row: jc itself; the other angular rows: (theta_i - theta_p) . v with v the residual's exact
gradient, which equals jc's g where C = 0).

Elimination, leaves first: body i and its joint's rows form the local (6 + m) x (6 + m) block
K_i = [[D_i, jc_i^T], [jcb_i, 0]] (D_i = A_ii less its children's Schur terms), coupled to the parent's unknowns by
U_i = [A_ip; jpb_i] (columns) and V_i = [A_pi, jp_i^T] (rows): K_i is factorised by LU with partial pivoting (it is
neither symmetric nor definite: the geometric stiffness of compressed links, the gyroscopic terms, the zero block),
W_i = K_i^-1 U_i is kept and D_p -= V_i W_i. The solve: leaves first y_i = K_i^-1 b_i, b_p -= V_i y_i; roots first
y_i -= W_i x_p. O(N) time and memory, no nbodies x nbodies matrix.

A spherical joint (the long chains' joint) has 3 linear rows [G, B] whose position block G (the joint frame's axes)
is invertible whatever the iterate: its K_i is eliminated by 3 x 3 blocks instead (``_spherical_factor``), the
rows giving the position, the force rows the multipliers, and only a 3 x 3 matrix S (the rotation block reduced
onto the constraints) inverted with partial pivoting; S is singular exactly when K_i is, so the same failures are
found (its pivots tested against its own columns, the same PIVOT_RTOL). Only the blocks the solve reads are kept:
G^-1, E, Hm, P, S^-1 (45 numbers, where the LU of K_i took 144; D11, D12 stay in D_i).

A tree of spherical joints only (the long chains) iterates in fused passes instead of five (``spherical_forward``,
then ``spherical_back_substitute``): what each body's blocks need of its own pose and its parent's
(``_spherical_bodies``), then the residual's completion, the factorisation and the right-hand side's elimination
leaves first (``_spherical_eliminate``), the same matrix and elimination with the spherical joint's blocks written
out (its section), range by range of bodies, the first part of a range on one of numba's threads while the range
after it is eliminated on the other. With c_stiff = c_damp = 0 the same passes solve the dynamics at the run's start
(``spherical_dynamics``).
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import readonly
from ..layout import STATUS_NO_CONVERGENCE, STATUS_NONFINITE_Q, STATUS_OK, STATUS_SINGULAR
from ..spatial.layout import (
    A1,
    A2,
    CP,
    CYLINDRICAL,
    FIXED,
    IC,
    JTYPE,
    LAXB,
    LBODY_A,
    LBODY_B,
    LKIND,
    LN1,
    LN2,
    LOOP_DISTANCE,
    LOOP_REVOLUTE,
    LPA,
    LPB,
    LROW,
    MASS,
    PARENT,
    PLANAR,
    PP,
    PRISMATIC,
    R0,
    REVOLUTE,
    SPHERICAL,
    UNIVERSAL,
    VIDX,
)
from .loads3d import joint_load_blocks
from .spatial3d import (
    ROWS_PER_JOINT,
    _add,
    _column,
    _com,
    _cross,
    _dot,
    _mat_mat,
    _mat_t_vec,
    _mat_vec,
    _mm_skew,
    _neg,
    _perpendiculars,
    _quaternion_matrix,
    _scale,
    _skew_mm,
    _sub,
    _vec,
    body_loads,
    driver_row,
    joint_rows,
    loop_rows,
)

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)
inline = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True, inline="always")
# the passes whose bodies are independent (the update, the spherical blocks) run on numba's threads (``prange``) from
# PARALLEL_BODIES bodies, in CHUNKS ranges of bodies, whatever the number of threads (so the same results; a call a
# range, not a body: numba's parallel pass cannot take the tuples of the bodies' arithmetic inside its loop)
pnjit = numba.njit(cache=True, parallel=True, fastmath={"contract"}, error_model="numpy", _nrt=True)
PARALLEL_BODIES = 4096
CHUNKS = 16

# a pivot of the local LU below this fraction of the largest entry of its column is zero (the block is singular)
PIVOT_RTOL = 1e-14
# a step whose Newton iteration stalls (no longer contracting) is converged when its correction is within this factor
# of the round-off measured at the iterate (``correction_round_off``); the stalled corrections scatter about it
ROUND_OFF_MARGIN = 4.0
# a step is accepted when this factor times the next correction that Newton's quadratic convergence predicts
# (``predicted_correction``) is <= the tolerance: replayed on every correction of 1056 logged steps, no step it
# accepts leaves a next correction above the tolerance, where 5 accepts one of 1.2e-12 (``integrate.
# augmented3d_implicit``, "Iterations a step"); far from convergence the prediction can be 160x too low
QUADRATIC_SAFETY = 10.0
# ``first_guess`` takes the constant acceleration where no part's accelerations changed over the last step by more
# than this times the part's largest one: an acceleration oscillating from step to step (vdot0 = -r vdot_before,
# r <= 1: a stiff coordinate's, damped by r a step) changes by (1 + 1/r) >= 2 times itself, while a whip's growing
# accelerations change by less than themselves (0.5 refused those too: 3.50 against 3.36 iterations a step on 1000
# links swinging 0.5 rad at rho_inf = 0.5, ``integrate.augmented3d_implicit``, "First guess")
SMOOTH_CHANGE = 1.0
# a step whose Newton correction grows by more than this factor at two iterations running (far from the tolerance and
# the round-off: not accepted) is diverging from its first guess and is given up (STATUS_NO_CONVERGENCE: the stepper
# splits it) instead of iterating on to max_newton or to a singular block: on the whips of 1000 to 3000 links every
# such step went on growing to a singular block after 11 to 20 iterations, and no step that converged ever grew
# twice running (``integrate.augmented3d_implicit``, "Convergence")
DIVERGENCE = 2.0


# ---- 3 x 3 helpers on row-major 9-tuples ---------------------------------------------------------------------------

@inline
def _skew(a):
    return (0.0, -a[2], a[1], a[2], 0.0, -a[0], -a[1], a[0], 0.0)


@inline
def _mm(a, b):
    return _mat_mat(a, b)


@inline
def _lin(sa, a, sb, b):
    """sa a + sb b of 9-tuples."""
    return (sa * a[0] + sb * b[0], sa * a[1] + sb * b[1], sa * a[2] + sb * b[2], sa * a[3] + sb * b[3],
            sa * a[4] + sb * b[4], sa * a[5] + sb * b[5], sa * a[6] + sb * b[6], sa * a[7] + sb * b[7],
            sa * a[8] + sb * b[8])


@inline
def _put(out, i, r0, c0, s, a):
    """out[i, r0:r0 + 3, c0:c0 + 3] += s a."""
    for r in range(3):
        for c in range(3):
            out[i, r0 + r, c0 + c] += s * a[3 * r + c]


@inline
def _tangent(tangent, i):
    return (tangent[i, 0, 0], tangent[i, 0, 1], tangent[i, 0, 2], tangent[i, 1, 0], tangent[i, 1, 1],
            tangent[i, 1, 2], tangent[i, 2, 0], tangent[i, 2, 1], tangent[i, 2, 2])


@inline
def _inertia(body_real, rot, i):
    """J = R J_c R^T (ground axes) of body i."""
    xx = body_real[i, IC]
    yy = body_real[i, IC + 1]
    zz = body_real[i, IC + 2]
    xy = body_real[i, IC + 3]
    xz = body_real[i, IC + 4]
    yz = body_real[i, IC + 5]
    jc = (xx, xy, xz, xy, yy, yz, xz, yz, zz)
    return _mat_mat(_mat_mat(rot, jc), (rot[0], rot[3], rot[6], rot[1], rot[4], rot[7], rot[2], rot[5], rot[8]))


# ---- the step's update ---------------------------------------------------------------------------------------------

@inline
def _advance(h, am, af, gm, bt, zb0, acc0, vdot0, vdot, i, c):
    """(zbp[i, c], Delta[i, c]) of ``update_state``."""
    a_new = ((1.0 - af) * vdot[i, c] + af * vdot0[i, c] - am * acc0[i, c]) / (1.0 - am)
    return (zb0[i, c] + h * ((1.0 - gm) * acc0[i, c] + gm * a_new),
            h * zb0[i, c] + h * h * ((0.5 - bt) * acc0[i, c] + bt * a_new))


@inline
def _ground_omega(zp, zbp, zdp, i):
    """zdp[i]'s angular velocity (ground axes) = R_i zbp[i]'s (body axes), R_i of the quaternion zp[i, 3:]."""
    rot, _ = _quaternion_matrix(zp, i)
    om = _mat_vec(rot, _vec(zbp, i, 3))
    for c in range(3):
        zdp[i, 3 + c] = om[c]


@inline
def _update_body(z0, zb0, acc0, vdot0, vdot, zp, zbp, zdp, tangent, h, am, af, gm, bt, i):
    """Body i of ``update_state``."""
    for c in range(3):
        v_new, d = _advance(h, am, af, gm, bt, zb0, acc0, vdot0, vdot, i, c)
        zbp[i, c] = v_new
        zp[i, c] = z0[i, c] + d
        zdp[i, c] = v_new
    w_dx, dx = _advance(h, am, af, gm, bt, zb0, acc0, vdot0, vdot, i, 3)
    zbp[i, 3] = w_dx
    w_dy, dy = _advance(h, am, af, gm, bt, zb0, acc0, vdot0, vdot, i, 4)
    zbp[i, 4] = w_dy
    w_dz, dz = _advance(h, am, af, gm, bt, zb0, acc0, vdot0, vdot, i, 5)
    zbp[i, 5] = w_dz
    phi2 = dx * dx + dy * dy + dz * dz
    phi = math.sqrt(phi2)
    if phi < 1e-4:  # series: the closed forms lose digits
        half = 0.5 - phi2 / 48.0
        b = 0.5 - phi2 / 24.0
        cc = 1.0 / 6.0 - phi2 / 120.0
        ew = 1.0 - phi2 / 8.0
    else:
        half = math.sin(0.5 * phi) / phi
        b = (1.0 - math.cos(phi)) / phi2
        cc = (phi - math.sin(phi)) / (phi2 * phi)
        ew = math.cos(0.5 * phi)
    ex = half * dx
    ey = half * dy
    ez = half * dz
    qw = z0[i, 3]
    qx = z0[i, 4]
    qy = z0[i, 5]
    qz = z0[i, 6]
    nw = qw * ew - qx * ex - qy * ey - qz * ez
    nx = qw * ex + ew * qx + qy * ez - qz * ey
    ny = qw * ey + ew * qy + qz * ex - qx * ez
    nz = qw * ez + ew * qz + qx * ey - qy * ex
    norm = math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    zp[i, 3] = nw / norm
    zp[i, 4] = nx / norm
    zp[i, 5] = ny / norm
    zp[i, 6] = nz / norm
    _ground_omega(zp, zbp, zdp, i)
    k = _skew((dx, dy, dz))
    k2 = _mat_mat(k, k)
    for r in range(3):
        for c in range(3):
            tangent[i, r, c] = (1.0 if r == c else 0.0) - b * k[3 * r + c] + cc * k2[3 * r + c]


@njit
def _update_bodies(z0, zb0, acc0, vdot0, vdot, zp, zbp, zdp, tangent, h, am, af, gm, bt, start, stop):
    """Bodies start to stop - 1 of ``update_state`` (a call a range of bodies: a call a body cost half the update)."""
    for i in range(start, stop):
        _update_body(z0, zb0, acc0, vdot0, vdot, zp, zbp, zdp, tangent, h, am, af, gm, bt, i)


@pnjit
def update_state(z0, zb0, acc0, vdot0, coef, vdot, zp, zbp, zdp, tangent):
    """The new state of a step from its new accelerations ``vdot`` (nbodies, 6; the rotations' in body axes): with
    coef = (h, alpha_m, alpha_f, gamma, beta), a+ = ((1 - alpha_f) vdot + alpha_f vdot0 - alpha_m acc0) /
    (1 - alpha_m), zbp = zb0 + h (1 - gamma) acc0 + h gamma a+ (velocities, omega in body axes),
    Delta = h zb0 + h^2 ((1/2 - beta) acc0 + beta a+), zp = (c0 + Delta_c, R0 exp([Delta_omega])) (the quaternion
    multiplied on the right: unit by construction), zdp the new velocities with omega in ground axes, and
    tangent[i] = J_r(Delta_omega) (3 x 3), the right Jacobian of SO(3): exp([Delta + d]) = exp([Delta])
    exp([J_r d]). From PARALLEL_BODIES bodies, on numba's threads (``prange``)."""
    h = coef[0]
    am = coef[1]
    af = coef[2]
    gm = coef[3]
    bt = coef[4]
    n = z0.shape[0]
    if n < PARALLEL_BODIES:
        _update_bodies(z0, zb0, acc0, vdot0, vdot, zp, zbp, zdp, tangent, h, am, af, gm, bt, 0, n)
        return
    for k in numba.prange(CHUNKS):
        _update_bodies(z0, zb0, acc0, vdot0, vdot, zp, zbp, zdp, tangent, h, am, af, gm, bt, k * n // CHUNKS,
                       (k + 1) * n // CHUNKS)


@inline
def _mean_velocity_guess(h, am, af, bt, zb0, acc0, vdot0, rate, i, c):
    """vdot[i, c] of ``predict``: the acceleration whose update moves the body by h rate[i, c]."""
    a_new = ((rate[i, c] - zb0[i, c]) / h - (0.5 - bt) * acc0[i, c]) / bt
    return ((1.0 - am) * a_new - af * vdot0[i, c] + am * acc0[i, c]) / (1.0 - af)


@njit
def predict(zb0, acc0, vdot0, rate, coef, vdot):
    """Newton's first guess of a step (nbodies, 6) into vdot: the accelerations whose update (``update_state``)
    moves each body by h times ``rate`` (nbodies, 6; the previous step's mean velocity, Delta / h, omega in body
    axes), i.e. Delta = h rate: a+ = (rate / h - zb0 / h - (1/2 - beta) acc0) / beta and
    vdot = ((1 - alpha_m) a+ - alpha_f vdot0 + alpha_m acc0) / (1 - alpha_f). coef = (h, alpha_m, alpha_f, gamma,
    beta). Why not vdot0 (constant acceleration) at every step: a stiff, quasi-static coordinate (the rotation of a
    short link under tension) has accelerations the scheme leaves oscillating from step to step (of order N at the
    top of an N-link hanging chain, from the kink that its initial tilt puts at the pin), and h^2 beta times them
    turned the top links of a 1e6-link chain by radians: far outside Newton's region of quadratic convergence. Its
    position moves smoothly, so the previous step's mean velocity predicts it to O(h^2) of the true motion
    (``first_guess`` takes vdot0 where the accelerations are smooth)."""
    h, am, af, bt = coef[0], coef[1], coef[2], coef[4]
    for i in range(zb0.shape[0]):
        for c in range(6):
            vdot[i, c] = _mean_velocity_guess(h, am, af, bt, zb0, acc0, vdot0, rate, i, c)


@njit
def _guess_range(h, am, af, bt, zb0, acc0, vdot0, vdot_before, rate, history, vdot, start, stop, out, k):
    """Bodies start to stop - 1 of ``first_guess``: ``predict``'s guess into vdot and, where history, the maxima
    (change, diff, size of the centres of mass, then of the rotations) into out[k]."""
    change_com = change_rot = diff_com = diff_rot = size_com = size_rot = 0.0
    for i in range(start, stop):
        for c in range(6):
            guess = _mean_velocity_guess(h, am, af, bt, zb0, acc0, vdot0, rate, i, c)
            if history != 0:
                change = abs(vdot0[i, c] - vdot_before[i, c])  # (read before vdot, which may be vdot_before)
                diff = abs(vdot0[i, c] - guess)
                if c < 3:
                    change_com = max(change_com, change)
                    diff_com = max(diff_com, diff)
                    size_com = max(size_com, abs(vdot0[i, c]))
                else:
                    change_rot = max(change_rot, change)
                    diff_rot = max(diff_rot, diff)
                    size_rot = max(size_rot, abs(vdot0[i, c]))
            vdot[i, c] = guess
    for c, value in enumerate((change_com, diff_com, size_com, change_rot, diff_rot, size_rot)):
        out[k, c] = value


@njit
def _copy_range(src, dst, start, stop):
    for i in range(start, stop):
        for c in range(src.shape[1]):
            dst[i, c] = src[i, c]


@pnjit
def first_guess(zb0, acc0, vdot0, vdot_before, rate, coef, history, vdot):
    """Newton's first guess of a step into vdot (nbodies, 6): the constant acceleration vdot = vdot0 (the last step's,
    the scheme's own predictor: a+, v+ and Delta then follow from the update's formulas, and the guess is off by
    O(h) in vdot, O(h^2) in the velocities, where the mean-velocity guess of ``predict`` is off by O(1) in vdot,
    about 2 h a in the velocities) where the accelerations are smooth, else ``predict``'s. Smooth: for the
    centres of mass and for the rotations apart, the largest change of an acceleration over the last step,
    |vdot0 - vdot_before| (vdot_before (nbodies, 6) the accelerations of the step before; the constant guess's
    error where they are smooth), is at most the largest distance between the two guesses (the mean-velocity
    guess's error there), and at most SMOOTH_CHANGE (1) times the part's largest acceleration (an acceleration
    oscillating from step to step, damped by r <= 1 a step, changes by 1 + 1/r >= 2 times itself). Where a stiff
    coordinate's accelerations oscillate (the kink at the pin of a long chain released tilted, ``predict``) the
    step takes the mean-velocity guess:
    the choice is the step's, not a body's (a guess mixed body by body puts the joints apart by O(h^2 a), the
    length of a link of a long chain). history 0 (the first step, or after a step that failed: vdot_before is
    not the step before's): ``predict``'s. vdot may be vdot_before itself (read before it is written). Returns 1
    where the guess is vdot0, else 0. One pass makes ``predict``'s guess and the maxima together (the constant
    acceleration copied over it where smooth), range by range on numba's threads from PARALLEL_BODIES bodies, in
    CHUNKS ranges (maxima: the same results whatever the threads)."""
    h, am, af, bt = coef[0], coef[1], coef[2], coef[4]
    n = zb0.shape[0]
    ranges = np.zeros((CHUNKS, 6))
    if n < PARALLEL_BODIES:
        _guess_range(h, am, af, bt, zb0, acc0, vdot0, vdot_before, rate, history, vdot, 0, n, ranges, 0)
    else:
        for k in numba.prange(CHUNKS):
            _guess_range(h, am, af, bt, zb0, acc0, vdot0, vdot_before, rate, history, vdot, k * n // CHUNKS,
                         (k + 1) * n // CHUNKS, ranges, k)
    if history == 0:
        return 0
    change_com = change_rot = diff_com = diff_rot = size_com = size_rot = 0.0
    for k in range(CHUNKS):
        change_com = max(change_com, ranges[k, 0])
        diff_com = max(diff_com, ranges[k, 1])
        size_com = max(size_com, ranges[k, 2])
        change_rot = max(change_rot, ranges[k, 3])
        diff_rot = max(diff_rot, ranges[k, 4])
        size_rot = max(size_rot, ranges[k, 5])
    smooth = (change_com <= diff_com and change_rot <= diff_rot and change_com <= SMOOTH_CHANGE * size_com
              and change_rot <= SMOOTH_CHANGE * size_rot)
    if not smooth:
        return 0
    if n < PARALLEL_BODIES:
        _copy_range(vdot0, vdot, 0, n)
    else:
        for k in numba.prange(CHUNKS):
            _copy_range(vdot0, vdot, k * n // CHUNKS, (k + 1) * n // CHUNKS)
    return 1


@njit
def end_step(zb0, coef, vdot0, vdot, acc, rate):
    """At a converged step (its new accelerations vdot, the old ones vdot0, zb0 the old velocities), in place: acc
    (nbodies, 6) the new algorithmic accelerations a+ = ((1 - alpha_f) vdot + alpha_f vdot0 - alpha_m acc) /
    (1 - alpha_m), and rate (nbodies, 6) the step's mean velocity Delta / h = zb0 + h ((1/2 - beta) acc + beta a+)
    (``update_state``'s Delta, the old acc), ``predict``'s input for the next step."""
    h, am, af, bt = coef[0], coef[1], coef[2], coef[4]
    for i in range(zb0.shape[0]):
        for c in range(6):
            a_new = ((1.0 - af) * vdot[i, c] + af * vdot0[i, c] - am * acc[i, c]) / (1.0 - am)
            rate[i, c] = zb0[i, c] + h * ((0.5 - bt) * acc[i, c] + bt * a_new)
            acc[i, c] = a_new


# ---- drivers: one more row of a driven joint ----------------------------------------------------------------------
#
# A driven revolute or prismatic joint (q_j = f(t)) has its driver's row after its joint's rows, in the same
# block: C = q_j(z) - f(t+), its velocity row (``spatial3d.driver_row``) the joint's angular or linear row along
# g = F a, fixed in the parent as the joint's own rows, so its multiplier enters the forces and the geometric
# stiffness of ``factor`` as theirs do; the local block is then 12 x 12 (a revolute joint's rows are a fixed
# joint's). Its position gradient: a prismatic row's is the row itself (a linear row, exact); a revolute row's,
# the angle's, ``driver_gradient``.

@inline
def driven_row(body_int, body_real, zp, zdp, i, r, f, jc, jp, res):
    """Row r of body i's blocks jc, jp (ground axes) and residual res: its driver's row q_j(zp) - f
    (``spatial3d.driver_row``; the gamma is not read). Returns r + 1."""
    child_lin, child_ang, parent_lin, parent_ang, gap, _, _ = driver_row(body_int, body_real, zp, zdp, i, f)
    for c in range(3):
        jc[i, r, c] = child_lin[c]
        jc[i, r, 3 + c] = child_ang[c]
        jp[i, r, c] = parent_lin[c]
        jp[i, r, 3 + c] = parent_ang[c]
    res[i, r] = gap
    return r + 1


@inline
def driver_gradient(body_real, i, rot, frame):
    """v with dC = (theta_i - theta_p) . v (ground-axis turns) for a revolute driver's row C = atan2(y, x) - f,
    y = (F n2) . t, x = (F n1) . t, t = R_i n1 (n1, n2 = a x n1 the axis's perpendiculars): turning t by theta_i and
    F by theta_p, dy = (theta_i - theta_p) . (t x F n2), dx = (theta_i - theta_p) . (t x F n1), so
    v = t x (x F n2 - y F n1) / (x^2 + y^2), which is g = F a where the joint's other rows hold."""
    n1, n2 = _perpendiculars(_vec(body_real, i, A1))
    g1 = _mat_vec(frame, n1)
    g2 = _mat_vec(frame, n2)
    t = _mat_vec(rot, n1)
    x = _dot(g1, t)
    y = _dot(g2, t)
    return _scale(1.0 / (x * x + y * y), _cross(t, _sub(_scale(x, g2), _scale(y, g1))))


# ---- residual ------------------------------------------------------------------------------------------------------

@inline
def _nonfinite_pose(zp):
    """STATUS_NONFINITE_Q with the first body whose pose zp[i] (nbodies, 7) is not finite, else STATUS_OK."""
    for i in range(zp.shape[0]):
        for c in range(7):
            if not math.isfinite(zp[i, c]):
                return STATUS_NONFINITE_Q | (i << 4)
    return STATUS_OK


@njit
def residual(body_int, body_real, gravity, row_start, tau, target, zp, zdp, vdot, lam, c_stiff, rb, rc, jc, jp, res,
             gam, power):
    """The step's residual at the new state (zp, zdp: omega in ground axes) and unknowns (vdot: the rotations' in
    body axes, lam): rb (nbodies, 6) = M vdot + jc^T lam (+ the children's jp^T lam) - Q (gravity, gyroscopic, the
    joint forces tau (nv,) or (0,)), its moment rows in body axes (R^T times the ground ones: J_c omega_b' +
    omega_b x J_c omega_b - R^T moments), rc (rows) = C(zp) / c_stiff; the rows' blocks jc, jp (ground axes),
    residuals and gammas (``spatial3d.joint_rows``) at zp are left in jc, jp, res, gam, and the power of tau at
    (zp, zdp) in power[0]. A driven joint has one row more in row_start than its type's, its driver's
    q_j(zp) - target[i] (``driven_row``; target (nbodies,), or (0,) without drivers). Returns the status (a
    non-finite state: its body)."""
    n = body_int.shape[0]
    tau_power = 0.0
    load = np.empty((2, 6))
    block = np.empty((7, 6))
    status = _nonfinite_pose(zp)
    if status:
        return status
    for i in range(n):
        for c in range(6):
            rb[i, c] = 0.0
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        body_loads(body_real, gravity, zp, zdp, i, block)
        m = joint_rows(body_int, body_real, zp, zdp, tau, i, jc, jp, res, gam, load)
        if row_start[i + 1] - row_start[i] > m:
            m = driven_row(body_int, body_real, zp, zdp, i, m, target[i], jc, jp, res)
        rot, _ = _quaternion_matrix(zp, i)
        wd = _mat_vec(rot, _vec(vdot, i, 3))  # omega' in ground axes (= R omega_b')
        acc = (vdot[i, 0], vdot[i, 1], vdot[i, 2], wd[0], wd[1], wd[2])
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += block[r, c] * acc[c]
            rb[i, r] += s - block[6, r] - load[0, r]
            tau_power += load[0, r] * zdp[i, r]
            if p >= 0:
                rb[p, r] -= load[1, r]
                tau_power += load[1, r] * zdp[p, r]
        r0 = row_start[i]
        for k in range(m):
            lk = lam[r0 + k]
            for c in range(6):
                rb[i, c] += jc[i, k, c] * lk
                if p >= 0:
                    rb[p, c] += jp[i, k, c] * lk
            rc[r0 + k] = res[i, k] / c_stiff
    for i in range(n):  # the moment rows into body axes
        rot, _ = _quaternion_matrix(zp, i)
        moment = _mat_t_vec(rot, _vec(rb, i, 3))
        for c in range(3):
            rb[i, 3 + c] = moment[c]
    power[0] = tau_power
    return STATUS_OK


# ---- Newton matrix -------------------------------------------------------------------------------------------------

@inline
def _angular_gradient(jcb, jpb, i, r, v, t_c, t_p, has_parent):
    """Row r of the bottom blocks for an angular residual with gradient (theta_i - theta_p) . v, times the tangent
    maps."""
    vc = (v[0] * t_c[0] + v[1] * t_c[3] + v[2] * t_c[6], v[0] * t_c[1] + v[1] * t_c[4] + v[2] * t_c[7],
          v[0] * t_c[2] + v[1] * t_c[5] + v[2] * t_c[8])
    vp = (v[0] * t_p[0] + v[1] * t_p[3] + v[2] * t_p[6], v[0] * t_p[1] + v[1] * t_p[4] + v[2] * t_p[7],
          v[0] * t_p[2] + v[1] * t_p[5] + v[2] * t_p[8])
    for c in range(3):
        jcb[i, r, c] = 0.0
        jcb[i, r, 3 + c] = vc[c]
        jpb[i, r, c] = 0.0
        jpb[i, r, 3 + c] = -vp[c] if has_parent else 0.0


@inline
def _row_times_tangent(jc, jcb, i, r, t):
    """jcb[0, r] = jc[i, r] with its rotation part multiplied on the right by t."""
    a = (jc[i, r, 3], jc[i, r, 4], jc[i, r, 5])
    for c in range(3):
        jcb[0, r, c] = jc[i, r, c]
        jcb[0, r, 3 + c] = a[0] * t[c] + a[1] * t[3 + c] + a[2] * t[6 + c]


@inline
def _lu_factor(a, piv, size, colmax):
    """LU with partial pivoting of a[:size, :size] in place (unit lower L below the diagonal); False when a pivot
    falls below PIVOT_RTOL times the largest entry of its column in a (the columns' units differ: forces and
    moments, a link's axial inertia 1e-16 kg m^2 beside its rows' 1). colmax (size,) is scratch."""
    for c in range(size):
        big = 0.0
        for r in range(size):
            big = max(big, abs(a[r, c]))
        colmax[c] = big
    for k in range(size):
        best = k
        for r in range(k + 1, size):
            if abs(a[r, k]) > abs(a[best, k]):
                best = r
        piv[k] = best
        if not abs(a[best, k]) > PIVOT_RTOL * colmax[k]:
            return False
        if best != k:
            for c in range(size):
                tmp = a[k, c]
                a[k, c] = a[best, c]
                a[best, c] = tmp
        inv = 1.0 / a[k, k]
        for r in range(k + 1, size):
            a[r, k] *= inv
            f = a[r, k]
            if f != 0.0:
                for c in range(k + 1, size):
                    a[r, c] -= f * a[k, c]
    return True


@inline
def _lu_solve(a, piv, size, y):
    """y[:size] = a^-1 y[:size] with the factor of ``_lu_factor``."""
    for k in range(size):  # the row interchanges first (the factor swapped whole rows, L's included)
        p = piv[k]
        if p != k:
            tmp = y[k]
            y[k] = y[p]
            y[p] = tmp
    for k in range(size):
        for r in range(k + 1, size):
            y[r] -= a[r, k] * y[k]
    for k in range(size - 1, -1, -1):
        s = y[k]
        for c in range(k + 1, size):
            s -= a[k, c] * y[c]
        y[k] = s / a[k, k]


# ---- the spherical joint's local block by its 3 x 3 blocks ---------------------------------------------------------

@inline
def _block(a, i, r0, c0):
    """a[i, r0:r0 + 3, c0:c0 + 3] as a row-major 9-tuple."""
    return (a[i, r0, c0], a[i, r0, c0 + 1], a[i, r0, c0 + 2], a[i, r0 + 1, c0], a[i, r0 + 1, c0 + 1],
            a[i, r0 + 1, c0 + 2], a[i, r0 + 2, c0], a[i, r0 + 2, c0 + 1], a[i, r0 + 2, c0 + 2])


@inline
def _block_t(a, i, r0, c0):
    """a[i, r0:r0 + 3, c0:c0 + 3]^T."""
    return (a[i, r0, c0], a[i, r0 + 1, c0], a[i, r0 + 2, c0], a[i, r0, c0 + 1], a[i, r0 + 1, c0 + 1],
            a[i, r0 + 2, c0 + 1], a[i, r0, c0 + 2], a[i, r0 + 1, c0 + 2], a[i, r0 + 2, c0 + 2])


@inline
def _tr(a):
    return (a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8])


@inline
def _store(out, i, r, a):
    """out[i, r, :9] = a (a 9-tuple kept in a row of the local block's storage)."""
    for c in range(9):
        out[i, r, c] = a[c]


@inline
def _load(out, i, r):
    return (out[i, r, 0], out[i, r, 1], out[i, r, 2], out[i, r, 3], out[i, r, 4], out[i, r, 5], out[i, r, 6],
            out[i, r, 7], out[i, r, 8])


@inline
def _put_block(out, i, r0, c0, a):
    """out[i, r0:r0 + 3, c0:c0 + 3] = a."""
    for r in range(3):
        for c in range(3):
            out[i, r0 + r, c0 + c] = a[3 * r + c]


@inline
def _inverse3(a, work):
    """(a^-1, True) by Gauss-Jordan elimination with partial pivoting, or (anything, False) when a pivot falls below
    PIVOT_RTOL times the largest entry of its column in a. work (3, 6) is scratch."""
    for r in range(3):
        for c in range(3):
            work[r, c] = a[3 * r + c]
            work[r, 3 + c] = 1.0 if r == c else 0.0
    for k in range(3):
        big = max(abs(a[k]), abs(a[3 + k]), abs(a[6 + k]))
        best = k
        for r in range(k + 1, 3):
            if abs(work[r, k]) > abs(work[best, k]):
                best = r
        if not abs(work[best, k]) > PIVOT_RTOL * big:
            return a, False
        if best != k:
            for c in range(6):
                tmp = work[k, c]
                work[k, c] = work[best, c]
                work[best, c] = tmp
        inv = 1.0 / work[k, k]
        for c in range(6):
            work[k, c] *= inv
        for r in range(3):
            if r != k:
                f = work[r, k]
                for c in range(6):
                    work[r, c] -= f * work[k, c]
    return _block(work.reshape((1, 3, 6)), 0, 0, 3), True


@inline
def _spherical_factor(diag, aip, api, jc, jp, jcb, jpb, lu, wm, i, p, work):
    """The local block K = [[D, jc^T], [jcb, 0]] of body i with a spherical joint (3 linear rows) factorised by its
    3 x 3 blocks, and (with a parent p >= 0) W = K^-1 U into wm[i] and D_p -= V W (module docstring). With
    x = (x1, x2, lam) (position, rotation, multipliers), jc = [G, Bc] and jcb = [G, Bb]: the rows G x1 + Bb x2 = b3
    give x1 = G^-1 b3 - E x2 (E = G^-1 Bb; G the joint frame's axes, invertible), the force rows
    lam = G^-T (b1 - D11 x1 - D12 x2), and the moment rows leave the 3 x 3 system S x2 = b2 - Hm b1 - P G^-1 b3 with
    Hm = Bc^T G^-T, P = D21 - Hm D11 and S = D22 - Hm D12 - P E, inverted with partial pivoting (S is singular
    exactly when K is). lu[i] keeps G^-1, E, Hm, P and S^-1 (a row each) for ``_spherical_solve``.
    False where S is singular."""
    d11 = _block(diag, i, 0, 0)
    d12 = _block(diag, i, 0, 3)
    d21 = _block(diag, i, 3, 0)
    d22 = _block(diag, i, 3, 3)
    g = _block(jc, i, 0, 0)
    g_inv, _ = _inverse3(g, work)  # orthonormal rows: never singular
    e = _mm(g_inv, _block(jcb, 0, 0, 3))
    hm = _tr(_mm(g_inv, _block(jc, i, 0, 3)))
    pm = _lin(1.0, d21, -1.0, _mm(hm, d11))
    sm = _lin(1.0, _lin(1.0, d22, -1.0, _mm(hm, d12)), -1.0, _mm(pm, e))
    s_inv, ok = _inverse3(sm, work)
    if not ok:
        return False
    _store(lu, i, 0, g_inv)
    _store(lu, i, 1, e)
    _store(lu, i, 2, hm)
    _store(lu, i, 3, pm)
    _store(lu, i, 4, s_inv)
    if p < 0:
        return True
    g_it = _tr(g_inv)
    # W's first three columns: U = [0; 0; jpb's position columns]
    gb = _mm(g_inv, _block(jpb, 0, 0, 0))
    x2a = _lin(-1.0, _mm(s_inv, _mm(pm, gb)), 0.0, gb)
    x1a = _lin(1.0, gb, -1.0, _mm(e, x2a))
    la = _mm(g_it, _lin(-1.0, _mm(d11, x1a), -1.0, _mm(d12, x2a)))
    # the last three: U = [A_ip's turn columns; jpb's turn columns]
    u1 = _block(aip, 0, 0, 3)
    gb = _mm(g_inv, _block(jpb, 0, 0, 3))
    x2b = _mm(s_inv, _lin(1.0, _lin(1.0, _block(aip, 0, 3, 3), -1.0, _mm(hm, u1)), -1.0, _mm(pm, gb)))
    x1b = _lin(1.0, gb, -1.0, _mm(e, x2b))
    lb = _mm(g_it, _lin(1.0, _lin(1.0, u1, -1.0, _mm(d11, x1b)), -1.0, _mm(d12, x2b)))
    _put_block(wm, i, 0, 0, x1a)
    _put_block(wm, i, 3, 0, x2a)
    _put_block(wm, i, 6, 0, la)
    _put_block(wm, i, 0, 3, x1b)
    _put_block(wm, i, 3, 3, x2b)
    _put_block(wm, i, 6, 3, lb)
    # D_p -= V W, V = [A_pi, jp^T] (A_pi's force rows are zero: a spherical joint's loads on the parent are moments)
    jl = _block_t(jp, i, 0, 0)
    jm = _block_t(jp, i, 0, 3)
    a1 = _block(api, i, 3, 0)
    a2 = _block(api, i, 3, 3)
    _put(diag, p, 0, 0, -1.0, _mm(jl, la))
    _put(diag, p, 0, 3, -1.0, _mm(jl, lb))
    _put(diag, p, 3, 0, -1.0, _lin(1.0, _lin(1.0, _mm(a1, x1a), 1.0, _mm(a2, x2a)), 1.0, _mm(jm, la)))
    _put(diag, p, 3, 3, -1.0, _lin(1.0, _lin(1.0, _mm(a1, x1b), 1.0, _mm(a2, x2b)), 1.0, _mm(jm, lb)))
    return True


@inline
def _spherical_solve(lu, diag, i, y):
    """y[:9] = K^-1 y[:9] with the factor of ``_spherical_factor`` (and D11, D12 from diag[i], which the
    elimination leaves as they were)."""
    g_inv = _load(lu, i, 0)
    b1 = (y[0], y[1], y[2])
    gb = _mat_vec(g_inv, (y[6], y[7], y[8]))
    x2 = _mat_vec(_load(lu, i, 4), _sub(_sub((y[3], y[4], y[5]), _mat_vec(_load(lu, i, 2), b1)),
                                        _mat_vec(_load(lu, i, 3), gb)))
    x1 = _sub(gb, _mat_vec(_load(lu, i, 1), x2))
    lam = _mat_t_vec(g_inv, _sub(_sub(b1, _mat_vec(_block(diag, i, 0, 0), x1)), _mat_vec(_block(diag, i, 0, 3), x2)))
    for c in range(3):
        y[c] = x1[c]
        y[3 + c] = x2[c]
        y[6 + c] = lam[c]


@njit
def factor(body_int, body_real, row_start, zp, zbp, vdot, lam, rb, tangent, c_stiff, c_damp, jc, jp, diag, api, lu,
           piv, wm, kload):
    """Build the Newton matrix at (zp, zbp, vdot, lam) (module docstring; zbp the velocities with omega in body
    axes, rb the residual there and jc, jp the ground-axis rows, both as ``residual`` left them) and factorise it
    leaves first: lu (nbodies, 12, 12) and piv (nbodies, 12) the local blocks' LU (a spherical joint's: its 3 x 3
    blocks, ``_spherical_factor``, in lu[i, :5, :9], piv unused: (nbodies, 5, 9) and (nbodies, 1) where every joint
    is spherical), wm (nbodies, 6 + rows, 6) = K_i^-1 U_i; diag (nbodies, 6, 6) the body blocks D_i (reduced), api
    (nbodies, 6, 6) A_pi (its force rows zero but for the joint loads'); jc, jp (nbodies, rows, 6), rows the most of
    any joint, are turned into body axes (their moment columns times R), the rows of the solve. kload (nbodies, 12,
    12), or (0, 12, 12) where the joint loads' dependence on the state is left out: each joint's loads' blocks of
    the matrix (``_kernels.augmented.loads3d.joint_load_blocks``: its child's rows and its parent's on their
    columns), added to A_ii, A_ip, A_pi and A_pp. Returns the status (a singular local block: its body)."""
    n = body_int.shape[0]
    y = np.empty(12)
    work = np.empty((3, 6))
    # a body's A_ip and its rows' gradients jcb, jpb: scratch, used while the body is eliminated
    aip, jcb, jpb = np.zeros((1, 6, 6)), np.zeros((1, 6, 6)), np.zeros((1, 6, 6))
    for i in range(n):  # the body's own terms: inertia, gyroscopic forces, the turn of R^T on the applied moments
        inertia = (body_real[i, IC], body_real[i, IC + 3], body_real[i, IC + 4], body_real[i, IC + 3],
                   body_real[i, IC + 1], body_real[i, IC + 5], body_real[i, IC + 4], body_real[i, IC + 5],
                   body_real[i, IC + 2])
        om = _vec(zbp, i, 3)
        jom = _mat_vec(inertia, om)
        # d(omega x J_c omega)/d omega = [omega] J_c - [J_c omega]
        gyro_w = _lin(1.0, _mm(_skew(om), inertia), -1.0, _skew(jom))
        # the moment rows are R^T X (X: the joints' ground-axis moments); turning R by exp([theta]) adds [R^T X] theta
        spin = _add(_mat_vec(inertia, _vec(vdot, i, 3)), _cross(om, jom))
        applied = _sub(_vec(rb, i, 3), spin)
        conf = _mm(_skew(applied), _tangent(tangent, i))
        mass = body_real[i, MASS]
        for r in range(6):
            for c in range(6):
                diag[i, r, c] = 0.0
        for r in range(3):
            diag[i, r, r] = mass
            for c in range(3):
                diag[i, 3 + r, 3 + c] = inertia[3 * r + c] + c_damp * gyro_w[3 * r + c] + c_stiff * conf[3 * r + c]
    for i in range(n - 1, -1, -1):
        jt = body_int[i, JTYPE]
        p = body_int[i, PARENT]
        r0 = row_start[i]
        m = row_start[i + 1] - r0  # a driven joint's driver row included
        rot, _ = _quaternion_matrix(zp, i)
        t_c = _mm(rot, _tangent(tangent, i))  # a body-axis turn theta_b is the ground one R theta_b
        r0m = (body_real[i, R0], body_real[i, R0 + 1], body_real[i, R0 + 2], body_real[i, R0 + 3],
               body_real[i, R0 + 4], body_real[i, R0 + 5], body_real[i, R0 + 6], body_real[i, R0 + 7],
               body_real[i, R0 + 8])
        if p >= 0:
            rot_p, _ = _quaternion_matrix(zp, p)
            c_p = _vec(zp, p, 0)
            t_p = _mm(rot_p, _tangent(tangent, p))
        else:
            rot_p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
            c_p = (0.0, 0.0, 0.0)
            t_p = rot_p
        rot_t = (rot[0], rot[3], rot[6], rot[1], rot[4], rot[7], rot[2], rot[5], rot[8])
        rot_pt = (rot_p[0], rot_p[3], rot_p[6], rot_p[1], rot_p[4], rot_p[7], rot_p[2], rot_p[5], rot_p[8])
        frame = _mat_mat(rot_p, r0m)
        r_c = _mat_vec(rot, _sub(_vec(body_real, i, CP), _com(body_real, i)))
        rho = _sub(_add(_vec(zp, i, 0), r_c), c_p)
        # the joint's force f (linear rows) and moment (angular rows) on the child, ground axes
        f = (0.0, 0.0, 0.0)
        mc = (0.0, 0.0, 0.0)
        for k in range(m):
            lk = lam[r0 + k]
            f = _add(f, _scale(lk, (jc[i, k, 0], jc[i, k, 1], jc[i, k, 2])))
            mc = _add(mc, _scale(lk, (jc[i, k, 3], jc[i, k, 4], jc[i, k, 5])))
        m_ang = _sub(mc, _cross(r_c, f))
        sf = _skew(f)
        src = _skew(r_c)
        # child-child, child-parent, parent-child, parent-parent rotation blocks (the derivative of the constraint
        # forces jc^T lam, jp^T lam by the ground-axis turns); g fixed in the parent for every angular row but the
        # universal's
        hii = _mm(sf, src)
        hip = _lin(-1.0, _mm(src, sf), -1.0, _skew(m_ang))
        hpi = _lin(-1.0, _mm(sf, src), 0.0, sf)
        hpp = _lin(1.0, _mm(_skew(rho), sf), 1.0, _skew(m_ang))
        for k in range(m):  # the bottom rows: linear rows are exact as they stand
            _row_times_tangent(jc, jcb, i, k, t_c)
            _row_times_tangent(jp, jpb, i, k, t_p)
        g0 = _column(frame, 0)
        g1 = _column(frame, 1)
        g2 = _column(frame, 2)
        if jt in (PRISMATIC, FIXED):  # C = axial vector of skew(F^T R_i): exact gradients
            at = 3 if jt == FIXED else 0
            c0 = _column(rot, 0)
            c1 = _column(rot, 1)
            c2 = _column(rot, 2)
            _angular_gradient(jcb, jpb, 0, at, _scale(0.5, _sub(_cross(c1, g2), _cross(c2, g1))), t_c, t_p, p >= 0)
            _angular_gradient(jcb, jpb, 0, at + 1, _scale(0.5, _sub(_cross(c2, g0), _cross(c0, g2))), t_c, t_p,
                              p >= 0)
            _angular_gradient(jcb, jpb, 0, at + 2, _scale(0.5, _sub(_cross(c0, g1), _cross(c1, g0))), t_c, t_p,
                              p >= 0)
        elif jt in (REVOLUTE, CYLINDRICAL, PLANAR):  # C1 = -(F n2) . (R a), C2 = (F n1) . (R a)
            at = 3 if jt == REVOLUTE else 0
            axis = (0.0, 0.0, 1.0) if jt == PLANAR else _vec(body_real, i, A1)
            n1, n2 = _perpendiculars(axis)
            ca = _mat_vec(rot, axis)
            _angular_gradient(jcb, jpb, 0, at, _cross(_mat_vec(frame, n2), ca), t_c, t_p, p >= 0)
            _angular_gradient(jcb, jpb, 0, at + 1, _cross(ca, _mat_vec(frame, n1)), t_c, t_p, p >= 0)
        elif jt == UNIVERSAL:  # g = (F a1) x (R a2) / |a1 x a2| turns with both bodies
            a1 = _vec(body_real, i, A1)
            a2 = _vec(body_real, i, A2)
            size = math.sqrt(_dot(_cross(a1, a2), _cross(a1, a2)))
            u1 = _skew(_mat_vec(frame, a1))
            u2 = _skew(_mat_vec(rot, a2))
            lk = lam[r0 + 3] / size
            g12 = _mm(u1, u2)
            g21 = _mm(u2, u1)
            hii = _lin(1.0, hii, -lk, g12)
            hip = _lin(1.0, _lin(-1.0, _mm(src, sf), 0.0, sf), lk, g21)
            hpi = _lin(1.0, hpi, lk, g12)
            hpp = _lin(1.0, _mm(_skew(rho), sf), -lk, g21)
        if jt == REVOLUTE and m > ROWS_PER_JOINT[jt]:  # its driver's row, the angle's exact gradient
            _angular_gradient(jcb, jpb, 0, m - 1, driver_gradient(body_real, i, rot, frame), t_c, t_p, p >= 0)
        # into body axes: a moment row times R^T, a turn column times R T (t_c, t_p)
        _put(diag, i, 3, 3, c_stiff, _mm(rot_t, _mm(hii, t_c)))
        if p >= 0:
            for r in range(6):
                for c in range(6):
                    aip[0, r, c] = 0.0
                    api[i, r, c] = 0.0
            _put(aip, 0, 0, 3, -c_stiff, _mm(sf, t_p))  # the child's force turns with the parent
            _put(aip, 0, 3, 3, c_stiff, _mm(rot_t, _mm(hip, t_p)))
            _put(api, i, 3, 0, c_stiff, _mm(rot_pt, sf))  # A_pi's moment rows (its force rows are the loads')
            _put(api, i, 3, 3, c_stiff, _mm(rot_pt, _mm(hpi, t_c)))
            _put(diag, p, 0, 3, c_stiff, _mm(sf, t_p))
            _put(diag, p, 3, 0, -c_stiff, _mm(rot_pt, sf))
            _put(diag, p, 3, 3, c_stiff, _mm(rot_pt, _mm(hpp, t_p)))
        if kload.shape[0] > 0:  # the joint loads' stiffness and damping: a body and its parent, as H
            for r in range(6):
                for c in range(6):
                    diag[i, r, c] += kload[i, r, c]
                    if p >= 0:
                        aip[0, r, c] += kload[i, r, 6 + c]
                        api[i, r, c] += kload[i, 6 + r, c]
                        diag[p, r, c] += kload[i, 6 + r, 6 + c]
        for k in range(m):  # the rows' moment columns into body axes (jc^T lam's moment rows times R^T)
            a = _mat_t_vec(rot, (jc[i, k, 3], jc[i, k, 4], jc[i, k, 5]))
            b = _mat_t_vec(rot_p, (jp[i, k, 3], jp[i, k, 4], jp[i, k, 5]))
            for c in range(3):
                jc[i, k, 3 + c] = a[c]
                jp[i, k, 3 + c] = b[c]
        if jt == SPHERICAL:  # by its 3 x 3 blocks
            if not _spherical_factor(diag, aip, api, jc, jp, jcb, jpb, lu, wm, i, p, work):
                return STATUS_SINGULAR | (i << 4)
            continue
        # the local block [[D_i, jc^T], [jcb, 0]]
        size = 6 + m
        for r in range(size):
            for c in range(size):
                if r < 6 and c < 6:
                    lu[i, r, c] = diag[i, r, c]
                elif r < 6:
                    lu[i, r, c] = jc[i, c - 6, r]
                elif c < 6:
                    lu[i, r, c] = jcb[0, r - 6, c]
                else:
                    lu[i, r, c] = 0.0
        if not _lu_factor(lu[i], piv[i], size, y):
            return STATUS_SINGULAR | (i << 4)
        if p < 0:
            continue
        for c in range(6):  # W = K^-1 U, a column at a time
            for r in range(size):
                y[r] = aip[0, r, c] if r < 6 else jpb[0, r - 6, c]
            _lu_solve(lu[i], piv[i], size, y)
            for r in range(size):
                wm[i, r, c] = y[r]
        for r in range(6):  # D_p -= V W, V = [A_pi, jp^T]
            for c in range(6):
                s = 0.0
                for k in range(6):
                    s += api[i, r, k] * wm[i, k, c]
                for k in range(m):
                    s += jp[i, k, r] * wm[i, 6 + k, c]
                diag[p, r, c] -= s
    return STATUS_OK


@njit
def solve(body_int, row_start, jp, api, diag, lu, piv, wm, xb, xj):
    """Solve the factorised Newton system in place: xb (nbodies, 6) and xj (rows) hold the right-hand side on entry
    and the solution on return. O(N)."""
    n = body_int.shape[0]
    y = np.empty(12)
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        r0 = row_start[i]
        m = row_start[i + 1] - r0
        size = 6 + m
        for c in range(6):
            y[c] = xb[i, c]
        for k in range(m):
            y[6 + k] = xj[r0 + k]
        if body_int[i, JTYPE] == SPHERICAL:
            _spherical_solve(lu, diag, i, y)
        else:
            _lu_solve(lu[i], piv[i], size, y)
        for c in range(6):
            xb[i, c] = y[c]
        for k in range(m):
            xj[r0 + k] = y[6 + k]
        if p >= 0:
            for r in range(6):
                s = 0.0
                for k in range(6):
                    s += api[i, r, k] * y[k]
                for k in range(m):
                    s += jp[i, k, r] * y[6 + k]
                xb[p, r] -= s
    _back_substitute(body_int, row_start, wm, xb, xj)


@inline
def _back_substitute(body_int, row_start, wm, xb, xj):
    """The solve's second pass, roots first: y_i -= W_i x_p (wm[i] = W_i, y_i in xb[i] and xj at body i's rows)."""
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        if p < 0:
            continue
        r0 = row_start[i]
        m = row_start[i + 1] - r0
        for r in range(6 + m):
            s = 0.0
            for c in range(6):
                s += wm[i, r, c] * xb[p, c]
            if r < 6:
                xb[i, r] -= s
            else:
                xj[r0 + r - 6] -= s


# ---- a tree of spherical joints: one iteration in two passes -------------------------------------------------------
#
# Specialised for speed (the long chains' joint): ``residual``, ``factor`` and ``solve``'s first pass in one pass
# leaves first, the same matrix and elimination (``_spherical_factor``) with what a spherical joint makes of them
# written out. Its rows are g_k = F e_k (F = R_p R0, orthonormal), so G = F^T and G^-1 = F (no inverse); with
# rcb = child_point - com the joint point from the child's centre of mass in body axes (r_c = R rcb), f = F lam the
# joint's force on the child (its moment r_c x f: the ``m_ang`` of ``factor`` is zero), Q = R^T R_p and T the
# tangent maps: A_ii's turn block gains c_s [R^T f][rcb] T_i (R^T [a] R = [R^T a]), E = -R [rcb] T_i,
# Hm = [rcb] R^T, A_ip = (-c_s [f] R_p T_p; -c_s [rcb][R^T f] Q T_p) on the parent's turn, jpb = (-F^T,
# F^T [rho] R_p T_p), A_pi = c_s ([R_p^T f] R_p^T, -Q^T [R^T f][rcb] T_i) and jp^T = (-F; -R_p^T [rho] F), so that
# F F^T = 1 leaves V W's force rows (y, -y') with y = D11 x1 + D12 x2 and no product by F. Every body's own
# residual is complete when the pass reaches it (its children came first), so its right-hand side is eliminated
# there too: the iteration reads each body's arrays twice (this pass and the back-substitution), not five times.
#
# Why a chain is not eliminated from both ends at once (the twisted factorisation of block-tridiagonal systems, van der
# Vorst, "Large tridiagonal and block tridiagonal linear systems on vector and parallel computers", 1987: tips to a
# middle body on one thread, root to it on the other). From the root, the end of the chain's graph is the root
# joint's rows, whose diagonal block is zero: they go with the first body as one pivot block, the K_i above. But its
# Schur complement U_k Q V_k (Q the eliminated body's 6 x 6 compliance, U_k = [A_kp; jpb_k], V_k = [A_pk, jp_k^T])
# lands on the next joint's rows as well as on the next body: their diagonal block becomes minus the compliance of
# the root side at the joint point (rank 2 on a straight chain, whose end cannot move along it: no pivot of its own)
# and their position block 1 + O(c_s), not F^T. Each root-side body is then a full 9 x 9 block: the Schur product
# (about 15 products of 3 x 3 blocks), its factorisation by three 3 x 3 pivots (the rows for the position, the force
# rows for the multipliers, the rotation: 8 products, 3 inverses) and its compliance for the next body (10), some 33
# products and 3 inverses against the 19 and one of a body eliminated from the tips here. (Re-rooting the root side at
# the middle body, to keep this structure, fails at its first block: a link held by both its joints leaves its
# tension undetermined by its own rows, a singular block.) The records already run beside the elimination on the
# other thread and cost about as much (``benchmarks/implicit3d.py``: 151 and 143 ns a body), so two ends would bound
# the pass at (r + e_t)(r + e_r) / (2 r + e_t + e_r) a body (r a record, e_t, e_r the two ends' eliminations, e_r
# about 1.5 e_t): 163 ns, against 159 ns for these ranges with their ramp: no gain.

@inline
def _scale9(s, a):
    return (s * a[0], s * a[1], s * a[2], s * a[3], s * a[4], s * a[5], s * a[6], s * a[7], s * a[8])


@inline
def _skew_skew(a, b):
    """[a][b] = b a^T - (a . b) 1."""
    d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    return (b[0] * a[0] - d, b[0] * a[1], b[0] * a[2], b[1] * a[0], b[1] * a[1] - d, b[1] * a[2],
            b[2] * a[0], b[2] * a[1], b[2] * a[2] - d)


# the per-body record of ``_spherical_body`` (LOCAL_SIZE numbers a body, a row of ``spherical_forward``'s loc): the
# blocks of the elimination that do not depend on the bodies eliminated before (9-tuples, row-major, at these offsets)
LOC_E = 0  # E = -R [rcb] T_i
LOC_HM = 9  # Hm = [rcb] R^T
LOC_GB = 18  # G^-1 of the rows' right-hand side, -F r_c (3)
LOC_F = 21  # F = R_p R0, the joint frame
LOC_U1 = 30  # A_ip's force rows on the parent's turn, -c_s [f] R_p T_p
LOC_U2 = 39  # A_ip's moment rows on the parent's turn less Hm times its force rows, -c_s ([rcb][R^T f] R^T R_p T_p
#              - Hm [f] R_p T_p): the combination the elimination reads (one product off its sequential pass)
LOC_GU = 48  # jpb's turn block, [rho] R_p T_p
LOC_A1 = 57  # A_pi's moment rows on the child's position, c_s [R_p^T f] R_p^T
LOC_A2 = 66  # A_pi's moment rows on the child's turn, -c_s R_p^T R ([R^T f][rcb] + [tau]) T_i
LOC_ARM = 75  # R_p^T [rho] (jp^T's moment rows, times -F)
LOC_KPP = 84  # the joint's stiffness on the parent's turn block, c_s ([R_p^T rho][R_p^T f] + [R_p^T m]) T_p
LOC_UP = 93  # the joint's load on the parent's residual: -f, R_p^T m (m = -rho x f + R tau, ground axes) (6)
LOC_RB = 99  # the body's own residual terms (6: its children's loads come in the elimination)
LOC_D22 = 105  # the turn block of its own local block, J_c + c_d D_v + c_s (D_z + H) T (its force block is m 1)
LOCAL_SIZE = 114
# the rows of ``spherical_forward``'s children's sums a body (its diag (nbodies, SUMS, 6)): the Schur terms of its
# children on its local block (rows 0 to 5), their loads on its residual (SUM_LOAD) and their V y on its right-hand
# side (SUM_VY)
SUM_LOAD = 6
SUM_VY = 7
SUMS = 8
# the fused pass takes the bodies in ranges (of PIPELINE_BODIES in a run: ``integrate.augmented3d_implicit._Arrays``),
# leaves first, with two ranges' records in loc at a time (the first part of a range written while the range after it
# is eliminated: on two threads at once from PARALLEL_BODIES bodies), so that the records are not kept for every body
# and stay in the shared cache; a round of two threads a range
PIPELINE_BODIES = 8192


@inline
def _get9(loc, i, k):
    return (loc[i, k], loc[i, k + 1], loc[i, k + 2], loc[i, k + 3], loc[i, k + 4], loc[i, k + 5], loc[i, k + 6],
            loc[i, k + 7], loc[i, k + 8])


@inline
def _set(loc, i, k, a):
    """loc[i, k:k + len(a)] = a."""
    for c in range(len(a)):
        loc[i, k + c] = a[c]


@inline
def _joint_arms(body_real, zp, rot, rot_p, c_p, i):
    """Body i's spherical joint at the poses zp (rot, rot_p: its and its parent's rotation matrices, c_p the
    parent's centre of mass; the identity and 0 at the ground): (F = R_p R0 the joint frame, rcb the joint point
    from the body's centre of mass in body axes, r_c = R rcb, rho = c_i + r_c - c_p the joint point from the
    parent's centre of mass)."""
    frame = _mat_mat(rot_p, (body_real[i, R0], body_real[i, R0 + 1], body_real[i, R0 + 2], body_real[i, R0 + 3],
                             body_real[i, R0 + 4], body_real[i, R0 + 5], body_real[i, R0 + 6],
                             body_real[i, R0 + 7], body_real[i, R0 + 8]))
    rcb = _sub(_vec(body_real, i, CP), _com(body_real, i))
    r_c = _mat_vec(rot, rcb)
    return frame, rcb, r_c, _sub(_add(_vec(zp, i, 0), r_c), c_p)


@inline
def _spherical_body(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, c_stiff, c_damp,
                    rc, loc, i, s):
    """Body i of ``spherical_forward``'s first part, into loc's row s (the LOC_ offsets) and its joint's rows of rc;
    returns its share of tau's power."""
    one = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    power = 0.0
    p = body_int[i, PARENT]
    r0 = row_start[i]
    rot, _ = _quaternion_matrix(zp, i)
    rot_t = _tr(rot)
    t_i = _tangent(tangent, i)
    if p >= 0:
        rot_p, _ = _quaternion_matrix(zp, p)
        c_p = _vec(zp, p, 0)
        arm_p = _mat_vec(rot_p, _sub(_vec(body_real, i, PP), _com(body_real, p)))
        om_p = _vec(zdp, p, 3)
        t_p = _mm(rot_p, _tangent(tangent, p))
    else:
        rot_p = one
        c_p = (0.0, 0.0, 0.0)
        arm_p = _vec(body_real, i, PP)
        om_p = (0.0, 0.0, 0.0)
        t_p = one
    frame, rcb, r_c, rho = _joint_arms(body_real, zp, rot, rot_p, c_p, i)
    f = _mat_vec(frame, (lam[r0], lam[r0 + 1], lam[r0 + 2]))
    om_g = _vec(zdp, i, 3)
    if c_stiff > 0.0:
        row = _scale(1.0 / c_stiff, _mat_t_vec(frame, _sub(rho, arm_p)))  # C_k = g_k . d
    else:
        row = _mat_t_vec(frame, _sub(_cross(om_g, _cross(om_g, r_c)), _cross(om_p, _cross(om_p, arm_p))))
    # the residual's own terms: the joint's moment on the body (r_c x f, less R tau), into body axes
    moment = _cross(r_c, f)
    turned = (0.0, 0.0, 0.0)
    tau_b = (0.0, 0.0, 0.0)
    if tau.shape[0] > 0:  # a moment R tau on the child, its opposite on the parent
        k = body_int[i, VIDX]
        tau_b = (tau[k], tau[k + 1], tau[k + 2])
        turned = _mat_vec(rot, tau_b)
        moment = _sub(moment, turned)
        power += _dot(turned, _sub(om_g, om_p))  # om_p zero at the ground
    applied = _mat_vec(rot_t, moment)
    mass = body_real[i, MASS]
    inertia = (body_real[i, IC], body_real[i, IC + 3], body_real[i, IC + 4], body_real[i, IC + 3],
               body_real[i, IC + 1], body_real[i, IC + 5], body_real[i, IC + 4], body_real[i, IC + 5],
               body_real[i, IC + 2])
    om = _vec(zbp, i, 3)
    jom = _mat_vec(inertia, om)
    spin = _add(_mat_vec(inertia, _vec(vdot, i, 3)), _cross(om, jom))
    for c in range(3):
        loc[s, LOC_RB + c] = mass * (vdot[i, c] - gravity[c]) + f[c]
        loc[s, LOC_RB + 3 + c] = spin[c] + applied[c]
        rc[r0 + c] = row[c]
    # the local block's own terms: M, the gyroscopic and the geometric stiffness of the body's own joint
    f_b = _mat_t_vec(rot, f)
    fr_t = _mm(_skew_skew(f_b, rcb), t_i)  # [R^T f][rcb] T_i
    # tau turns with the child: its moment row R^T (-R tau) = -tau is constant, where [applied] T_i turns it as a
    # ground-fixed moment (c_s [-tau] T_i): taken back by c_s [tau] T_i; on the parent, R_p^T R tau turns by
    # -R_p^T R [tau] theta_b
    tau_t = _skew_mm(tau_b, t_i)
    gyro_w = _lin(1.0, _skew_mm(om, inertia), -1.0, _skew(jom))
    _set(loc, s, LOC_D22, _lin(1.0, _lin(1.0, inertia, c_damp, gyro_w), c_stiff,
                               _lin(1.0, _lin(1.0, _skew_mm(applied, t_i), 1.0, fr_t), 1.0, tau_t)))
    hm = _skew_mm(rcb, rot_t)
    _set(loc, s, LOC_E, _neg(_mm(rot, _skew_mm(rcb, t_i))))
    _set(loc, s, LOC_HM, hm)
    _set(loc, s, LOC_GB, _scale(-1.0, _mat_vec(frame, row)))
    _set(loc, s, LOC_F, frame)
    if p < 0:
        return power
    rot_pt = _tr(rot_p)
    f_p = _mat_t_vec(rot_p, f)
    back = _sub(turned, _cross(rho, f))  # the joint's moment on the parent, ground axes
    up = _mat_t_vec(rot_p, back)
    u1 = _scale9(-c_stiff, _skew_mm(f, t_p))
    _set(loc, s, LOC_U1, u1)
    _set(loc, s, LOC_U2, _lin(-c_stiff, _mm(_skew_skew(rcb, f_b), _mm(rot_t, t_p)), -1.0, _mm(hm, u1)))
    _set(loc, s, LOC_GU, _skew_mm(rho, t_p))
    _set(loc, s, LOC_A1, _scale9(c_stiff, _skew_mm(f_p, rot_pt)))
    _set(loc, s, LOC_A2, _scale9(-c_stiff, _mm(_mm(rot_pt, rot), _lin(1.0, fr_t, 1.0, tau_t))))
    _set(loc, s, LOC_ARM, _mm_skew(rot_pt, rho))
    _set(loc, s, LOC_KPP, _scale9(c_stiff, _mm(_lin(1.0, _skew_skew(_mat_t_vec(rot_p, rho), f_p), 1.0,
                                                      _skew(up)), _tangent(tangent, p))))
    _set(loc, s, LOC_UP, (-f[0], -f[1], -f[2], up[0], up[1], up[2]))
    return power


@inline
def _parent_side(body_real, zp, zdp, i, p):
    """Body i's spherical joint on its parent p (-1: the ground) at the poses zp and velocities zdp (omega in ground
    axes): (R_p, c_p, arm_p = R_p (pp - com_p) the joint point from the parent's centre of mass, w_p, the joint
    point's velocity on the parent c_p' + w_p x arm_p); the identity, the joint point and zeros at the ground."""
    if p >= 0:
        rot_p, _ = _quaternion_matrix(zp, p)
        arm_p = _mat_vec(rot_p, _sub(_vec(body_real, i, PP), _com(body_real, p)))
        om_p = _vec(zdp, p, 3)
        return rot_p, _vec(zp, p, 0), arm_p, om_p, _add(_vec(zdp, p, 0), _cross(om_p, arm_p))
    zero = (0.0, 0.0, 0.0)
    return (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), zero, _vec(body_real, i, PP), zero, zero


@inline
def _projection_body(body_int, body_real, row_start, zp, zdp, rc, loc, i, s):
    """Body i's record of the velocities' projection (``spherical_project``) into loc's row s and its joint's rows
    of rc: the record ``_spherical_body`` makes with c_stiff = c_damp = 0, the tangent maps 1 and no gravity, tau,
    velocities, accelerations or multipliers (the matrix [[M, G^T], [G, 0]], every stiffness and coupling block
    zero, the body's residual zero), but the rows G v = F^T (c_i' + w_i x r_c - c_p' - w_p x arm_p), the child's
    joint point's velocity less the parent's in the joint frame (zdp: omega in ground axes), where the step has its
    position rows: so that the passes solve M dv + G^T mu = 0, G dv = -G v."""
    p = body_int[i, PARENT]
    r0 = row_start[i]
    rot, _ = _quaternion_matrix(zp, i)
    rot_p, c_p, _, _, vel_p = _parent_side(body_real, zp, zdp, i, p)
    frame, rcb, r_c, rho = _joint_arms(body_real, zp, rot, rot_p, c_p, i)
    row = _mat_t_vec(frame, _sub(_add(_vec(zdp, i, 0), _cross(_vec(zdp, i, 3), r_c)), vel_p))
    for c in range(3):
        rc[r0 + c] = row[c]
    for k in range(LOCAL_SIZE):  # the stiffness and coupling blocks, the loads and the residual: zero
        loc[s, k] = 0.0
    _set(loc, s, LOC_D22, (body_real[i, IC], body_real[i, IC + 3], body_real[i, IC + 4], body_real[i, IC + 3],
                           body_real[i, IC + 1], body_real[i, IC + 5], body_real[i, IC + 4], body_real[i, IC + 5],
                           body_real[i, IC + 2]))
    _set(loc, s, LOC_E, _neg(_mm(rot, _skew(rcb))))
    _set(loc, s, LOC_HM, _skew_mm(rcb, _tr(rot)))
    _set(loc, s, LOC_GB, _scale(-1.0, _mat_vec(frame, row)))
    _set(loc, s, LOC_F, frame)
    if p >= 0:
        _set(loc, s, LOC_GU, _skew_mm(rho, rot_p))
        _set(loc, s, LOC_ARM, _mm_skew(_tr(rot_p), rho))


@njit
def _spherical_bodies(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, c_stiff,
                      c_damp, rc, loc, start, stop, slot, project):
    """Bodies start to stop - 1 of ``spherical_forward``'s first part, into loc's rows slot + (i - start); their
    share of tau's power, NaN where a pose zp[i] is not finite (tested here, on the threads' side of the pipeline,
    not in a pass of its own). ``project``: the records of the velocities' projection instead
    (``_projection_body``; power 0)."""
    power = 0.0
    finite = True
    for i in range(start, stop):
        for c in range(7):
            if not math.isfinite(zp[i, c]):
                finite = False
        if project:
            _projection_body(body_int, body_real, row_start, zp, zdp, rc, loc, i, slot + i - start)
        else:
            power += _spherical_body(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent,
                                     c_stiff, c_damp, rc, loc, i, slot + i - start)
    return power if finite else math.nan


@njit
def _spherical_eliminate(body_int, body_real, row_start, diag, wm, loc, xb, xj, start, stop, slot, out):
    """Bodies stop - 1 down to start of ``spherical_forward``'s second part, their records in loc's rows slot +
    (i - start): each body's local block (its own terms and its children's sums, diag[i], which it clears)
    eliminated, W_i into wm[i] and y into xb[i] and xj with their multiplier rows as the joint force F lam (ground
    axes), the joint frame F into diag[i]'s first 9 entries (for ``spherical_back_substitute``, which turns them and
    clears it), and its Schur terms, load and V y added to its parent's sums. out receives (status, the largest
    |residual| of these bodies, its body)."""
    work = np.empty((3, 6))
    worst = 0.0
    where = stop - 1
    minus_one = (-1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0)
    out[0] = 0.0
    for i in range(stop - 1, start - 1, -1):
        s = slot + i - start
        p = body_int[i, PARENT]
        r0 = row_start[i]
        # its residual, complete: its own terms and its children's loads
        rb = (loc[s, LOC_RB] + diag[i, SUM_LOAD, 0], loc[s, LOC_RB + 1] + diag[i, SUM_LOAD, 1],
              loc[s, LOC_RB + 2] + diag[i, SUM_LOAD, 2], loc[s, LOC_RB + 3] + diag[i, SUM_LOAD, 3],
              loc[s, LOC_RB + 4] + diag[i, SUM_LOAD, 4], loc[s, LOC_RB + 5] + diag[i, SUM_LOAD, 5])
        for c in range(6):
            if not abs(rb[c]) <= worst:
                worst = abs(rb[c])
                where = i
        # the local block (its own terms, m 1 and d22, and its children's Schur terms) by the spherical elimination
        mass = body_real[i, MASS]
        d11 = _lin(1.0, (mass, 0.0, 0.0, 0.0, mass, 0.0, 0.0, 0.0, mass), 1.0, _block(diag, i, 0, 0))
        d12 = _block(diag, i, 0, 3)
        d21 = _block(diag, i, 3, 0)
        d22 = _lin(1.0, _get9(loc, s, LOC_D22), 1.0, _block(diag, i, 3, 3))
        vy_children = (diag[i, SUM_VY, 0], diag[i, SUM_VY, 1], diag[i, SUM_VY, 2], diag[i, SUM_VY, 3],
                       diag[i, SUM_VY, 4], diag[i, SUM_VY, 5])
        for r in range(SUMS):
            for c in range(6):
                diag[i, r, c] = 0.0
        e = _get9(loc, s, LOC_E)
        hm = _get9(loc, s, LOC_HM)
        pm = _lin(1.0, d21, -1.0, _mm(hm, d11))
        s_inv, ok = _inverse3(_lin(1.0, _lin(1.0, d22, -1.0, _mm(hm, d12)), -1.0, _mm(pm, e)), work)
        if not ok:
            out[0] = STATUS_SINGULAR | (i << 4)
            return
        # y = K^-1 b, b = -(rb, rc) less the children's V y
        b1 = (-rb[0] - vy_children[0], -rb[1] - vy_children[1], -rb[2] - vy_children[2])
        b2 = (-rb[3] - vy_children[3], -rb[4] - vy_children[4], -rb[5] - vy_children[5])
        gb = (loc[s, LOC_GB], loc[s, LOC_GB + 1], loc[s, LOC_GB + 2])
        x2 = _mat_vec(s_inv, _sub(_sub(b2, _mat_vec(hm, b1)), _mat_vec(pm, gb)))
        x1 = _sub(gb, _mat_vec(e, x2))
        yl = _sub(_sub(b1, _mat_vec(d11, x1)), _mat_vec(d12, x2))
        # the multipliers' rows stay the joint force f = F lam (ground axes) until the back-substitution, which
        # turns them by F^T (a product by a vector there, not two by matrices here, on the sequential pass): the
        # joint frame F waits in the body's own sums, read and cleared above
        frame = _get9(loc, s, LOC_F)
        for c in range(3):
            xb[i, c] = x1[c]
            xb[i, 3 + c] = x2[c]
            xj[r0 + c] = yl[c]
        for c in range(6):
            diag[i, 0, c] = frame[c]
        for c in range(3):
            diag[i, 1, c] = frame[6 + c]
        if p < 0:
            continue
        # U = [A_ip; jpb]: W's first three columns (the parent's position: jpb's -F^T, so G^-1 U = -1)
        x2a = _mm(s_inv, pm)
        x1a = _lin(1.0, minus_one, -1.0, _mm(e, x2a))
        ya = _lin(1.0, _mm(d11, x1a), 1.0, _mm(d12, x2a))
        # the last three (the parent's turn)
        u1 = _get9(loc, s, LOC_U1)
        gu = _get9(loc, s, LOC_GU)
        x2b = _mm(s_inv, _lin(1.0, _get9(loc, s, LOC_U2), -1.0, _mm(pm, gu)))
        x1b = _lin(1.0, gu, -1.0, _mm(e, x2b))
        yb = _lin(1.0, u1, -1.0, _lin(1.0, _mm(d11, x1b), 1.0, _mm(d12, x2b)))
        _put_block(wm, i, 0, 0, x1a)
        _put_block(wm, i, 3, 0, x2a)
        _put_block(wm, i, 6, 0, _neg(ya))  # the force rows (F W's multiplier rows)
        _put_block(wm, i, 0, 3, x1b)
        _put_block(wm, i, 3, 3, x2b)
        _put_block(wm, i, 6, 3, yb)
        # the parent's D: the joint's stiffness on it less V W (V = [A_pi, jp^T], A_pi's force rows zero)
        a1 = _get9(loc, s, LOC_A1)
        a2 = _get9(loc, s, LOC_A2)
        arm = _get9(loc, s, LOC_ARM)
        _put(diag, p, 0, 0, -1.0, ya)
        _put(diag, p, 0, 3, 1.0, _lin(-1.0, u1, 1.0, yb))
        _put(diag, p, 3, 0, -1.0, _lin(1.0, _lin(1.0, a1, 1.0, _mm(a1, x1a)), 1.0,
                                       _lin(1.0, _mm(a2, x2a), 1.0, _mm(arm, ya))))
        _put(diag, p, 3, 3, 1.0, _lin(1.0, _lin(1.0, _get9(loc, s, LOC_KPP), -1.0, _mm(a1, x1b)),
                                      -1.0, _lin(1.0, _mm(a2, x2b), -1.0, _mm(arm, yb))))
        # the parent's residual: the joint's load; its right-hand side less V y
        vy = _add(_add(_mat_vec(a1, x1), _mat_vec(a2, x2)), _scale(-1.0, _mat_vec(arm, yl)))
        for c in range(6):
            diag[p, SUM_LOAD, c] += loc[s, LOC_UP + c]
        for c in range(3):
            diag[p, SUM_VY, c] -= yl[c]
            diag[p, SUM_VY, 3 + c] += vy[c]
    out[1] = worst
    out[2] = where


@pnjit
def _spherical_round(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, c_stiff, c_damp,
                     rc, diag, wm, loc, xb, xj, first, last, out, project):
    """One round of ``spherical_forward``'s pipeline on two of numba's threads at once: the bodies first to last - 1
    eliminated (``_spherical_eliminate``, their records in loc's first or second half as first / half is even or
    odd, half = the ranges' size, loc.shape[0] / 2) and the first part of the range before them, first - half ...
    first - 1 (``_spherical_bodies``, into the other half; nothing where first = 0). They touch different arrays,
    rows and records. out receives the elimination's (status, worst, where) and the first part's power. ``project``:
    the velocities' projection's records (``_spherical_bodies``)."""
    half = loc.shape[0] // 2
    for k in numba.prange(2):
        if k == 0:
            _spherical_eliminate(body_int, body_real, row_start, diag, wm, loc, xb, xj, first, last,
                                 half * ((first // half) % 2), out)
        elif first > 0:
            start = first - half
            out[3] = _spherical_bodies(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent,
                                       c_stiff, c_damp, rc, loc, start, first, half * ((start // half) % 2), project)


@inline
def _clear_sums(diag):
    """diag = 0 (the sums of the bodies not reached and the frames of those eliminated, after a failure)."""
    for i in range(diag.shape[0]):
        for k in range(diag.shape[1]):
            for c in range(6):
                diag[i, k, c] = 0.0


@pnjit
def _spherical_bodies_split(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, c_stiff,
                            c_damp, rc, loc, start, stop, slot, out, project):
    """``_spherical_bodies`` of bodies start to stop - 1 in two halves on two of numba's threads at once (the
    pipeline's first range, which nothing else overlaps); out[0], out[1] receive the halves' powers."""
    middle = (start + stop) // 2
    for k in numba.prange(2):
        if k == 0:
            out[0] = _spherical_bodies(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent,
                                       c_stiff, c_damp, rc, loc, start, middle, slot, project)
        else:
            out[1] = _spherical_bodies(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent,
                                       c_stiff, c_damp, rc, loc, middle, stop, slot + middle - start, project)


@njit
def spherical_forward(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, c_stiff,
                      c_damp, rc, diag, wm, loc, xb, xj, power, info):
    """One Newton iteration's first pass on a tree of spherical joints (every joint spherical; the section's
    comment), leaves first: the step's residual at (zp, zbp, zdp, vdot, lam) (its joints' rows into rc), as
    ``residual``; the Newton matrix built and factorised, as ``factor`` (W_i into wm (nbodies, 9, 6)); and the
    right-hand side -(rb, rc) eliminated, as ``solve``'s first pass: xb (nbodies, 6), xj (rows) hold y for
    ``spherical_back_substitute`` (its multipliers' rows as joint forces). diag (nbodies, SUMS, 6) holds the
    children's sums, zero on entry; left holding each body's joint frame for ``spherical_back_substitute``, which
    leaves it zero (cleared here on a failure); loc (2 B, LOCAL_SIZE) the records of two ranges of B bodies
    (scratch; B = nbodies: one range, ``_Arrays`` takes B = min(nbodies, PIPELINE_BODIES)). power[0] receives
    tau's power at (zp, zdp), info[2], info[3] the largest |residual| and its body. Returns the status (a
    non-finite state or a singular local block: its body). The bodies in ranges of B, the last range first: what each
    body's blocks need of its own state and its parent's (``_spherical_bodies``: a record in loc), then the
    elimination leaves first (``_spherical_eliminate``), which adds each body's Schur terms and loads to its
    parent's sums; from PARALLEL_BODIES bodies a range's first part runs on one of numba's threads while the range
    after it is eliminated on the other (``_spherical_round``; the first range's on both, ``_spherical_bodies_split``).
    The same results whatever the number of threads."""
    return _spherical_passes(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, c_stiff,
                             c_damp, rc, diag, wm, loc, xb, xj, power, info, np.bool_(False))


@njit
def _spherical_passes(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, c_stiff,
                      c_damp, rc, diag, wm, loc, xb, xj, power, info, project):
    """``spherical_forward`` (its arguments and results), or with ``project`` the same passes on the records of the
    velocities' projection (``spherical_project``: ``_projection_body``, which reads only zp, zdp of the state)."""
    n = body_int.shape[0]
    half = loc.shape[0] // 2
    out = np.zeros(4)
    total = 0.0
    worst = 0.0
    where = 0
    ranges = (n + half - 1) // half if n else 0
    if n >= PARALLEL_BODIES:  # the last range's first part (on both threads), then a round a range
        start = (ranges - 1) * half
        halves = np.zeros(2)
        _spherical_bodies_split(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent,
                                c_stiff, c_damp, rc, loc, start, n, half * ((ranges - 1) % 2), halves, project)
        total += halves[0] + halves[1]
    for r in range(ranges - 1, -1, -1):
        first = r * half
        last = min(first + half, n)
        slot = half * (r % 2)
        out[3] = 0.0
        if n >= PARALLEL_BODIES:
            _spherical_round(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, c_stiff,
                             c_damp, rc, diag, wm, loc, xb, xj, first, last, out, project)
        else:
            total += _spherical_bodies(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent,
                                       c_stiff, c_damp, rc, loc, first, last, slot, project)
            _spherical_eliminate(body_int, body_real, row_start, diag, wm, loc, xb, xj, first, last, slot, out)
        total += out[3]
        if out[0] != 0.0:  # a singular block, or a non-finite pose (the records' power NaN) that made it so
            _clear_sums(diag)
            status = _nonfinite_pose(zp)
            return status if status else int(out[0])
        if not out[1] <= worst:
            worst = out[1]
            where = int(out[2])
    if not math.isfinite(total):  # NaN power: a pose not finite (its first body), or tau's power itself
        status = _nonfinite_pose(zp)
        if status:
            _clear_sums(diag)
            return status
    power[0] = total
    info[2] = worst
    info[3] = where
    return STATUS_OK


@inline
def spherical_back_substitute(body_int, row_start, wm, diag, xb, xj):
    """``spherical_forward``'s second pass, roots first: y_i -= W_i x_p (wm[i] = W_i, y_i in xb[i] and xj at body
    i's rows), the multipliers' rows of y and W_i being the joint force f = F lam in ground axes, turned into the
    multipliers lam = F^T f here (F, the joint frame, in diag[i]'s first 9 entries, which this clears: diag is
    left zero for the next ``spherical_forward``)."""
    _back_substitute_pass(body_int, row_start, wm, diag, xb, xj, xb[:0], xj[:0], xj[:0])


@inline
def _back_substitute_pass(body_int, row_start, wm, diag, xb, xj, vdot, lam, gyration):
    """``spherical_back_substitute``; with vdot (nbodies, 6) non-empty also Newton's correction applied in the same
    pass, each body's as soon as it is complete (vdot += xb, lam += xj: ``newton_step``'s, the same sums, so the same
    bits; a pass over the unknowns fewer an iteration): returns the largest |xb| of the centres of mass and of
    gyration[i] |xb| of the rotations (NaN-propagating, as ``newton_step`` compares them), else (0, 0)."""
    apply = vdot.shape[0] > 0
    com = 0.0
    rot = 0.0
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        r0 = row_start[i]
        f0 = xj[r0]
        f1 = xj[r0 + 1]
        f2 = xj[r0 + 2]
        if p >= 0:
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += wm[i, r, c] * xb[p, c]
                xb[i, r] -= s
            for c in range(6):
                f0 -= wm[i, 6, c] * xb[p, c]
                f1 -= wm[i, 7, c] * xb[p, c]
                f2 -= wm[i, 8, c] * xb[p, c]
        xj[r0] = diag[i, 0, 0] * f0 + diag[i, 0, 3] * f1 + diag[i, 1, 0] * f2
        xj[r0 + 1] = diag[i, 0, 1] * f0 + diag[i, 0, 4] * f1 + diag[i, 1, 1] * f2
        xj[r0 + 2] = diag[i, 0, 2] * f0 + diag[i, 0, 5] * f1 + diag[i, 1, 2] * f2
        for c in range(6):
            diag[i, 0, c] = 0.0
        for c in range(3):
            diag[i, 1, c] = 0.0
        if apply:
            com, rot = _apply_correction(vdot, lam, xb, xj, gyration, i, r0, row_start[i + 1], com, rot)
    return com, rot


@inline
def _apply_correction(vdot, lam, xb, xj, gyration, i, r0, r1, com, rot):
    """Body i's Newton correction applied: vdot[i] += xb[i], lam[r0:r1] += xj[r0:r1] (its joint's rows); returns the
    largest |xb| of the centres of mass and of gyration |xb| of the rotations so far, (com, rot) updated
    (NaN-propagating: a NaN is larger than any)."""
    for c in range(3):
        vdot[i, c] += xb[i, c]
        if not abs(xb[i, c]) <= com:
            com = abs(xb[i, c])
    for c in range(3, 6):
        vdot[i, c] += xb[i, c]
        size = abs(xb[i, c]) * gyration[i]
        if not size <= rot:
            rot = size
    for k in range(r0, r1):
        lam[k] += xj[k]
    return com, rot


# ---- closed loops: auxiliary rows of the step's Newton system ----------------------------------------------------
#
# The loops' rows as auxiliary rows of the step's Newton system, their multipliers' geometric stiffness, and the
# bordered solve on the tree elimination (``newton_step`` with loops: ``loop_residual`` after ``residual``,
# ``loop_solve`` in place of ``solve``).
#
# Rows. A loop's rows are the spatial loop layer's (``_kernels.spatial.loops.loop_equations`` through
# ``spatial3d.loop_rows``: spherical, revolute, distance), the same numbers as the explicit augmented route's and the
# recursive route's: row r acts on the bodies a, b (-1: the ground) with the coefficients g_r on their (c', omega)
# (ground axes), its multiplier mu_r adds g_r^T mu_r to their rows (M vdot + G^T lambda - Q: the sign of
# ``spatial_loops``, M vdot + h = tau - J^T lambda) and its position row is phi_r(z+) / c_stiff (index 3, scaled as
# the joints' rows). Every loop row is holonomic with g_r its exact gradient (d P = dc + theta x r; d(n . u) =
# (theta_a - theta_b) . (n x u); d|d| = e . dd), so the position rows' derivative by vdot+ is g_r with its turn
# columns times R T (T the tangent map of the rotation update), as the joints' linear rows.
#
# Geometric stiffness (the derivative of the loop forces G^T mu by the poses, ground axes, ground turns). Let F be the
# force on body a at its loop point (sum of mu_r times the rows' linear weights on a: mu for a spherical loop's three
# rows, mu e for a distance loop) and r_a, r_b the loop points' arms from the centres of mass:
#
#     point rows (every kind)   moment_a by theta_a: [F][r_a];   moment_b by theta_b: -[F][r_b]
#     distance, additionally    A^T B A with A = [1, -[r_a], -1, [r_b]] (dd by (c_a, theta_a, c_b, theta_b)) and
#                               B = mu / |d| (1 - e e^T) (de = B dd / mu): couples every coordinate of a and b
#     revolute axis rows        with n_k = R_a n0_k, u = R_b u0 and d(n_k x u) = [u][n_k] theta_a - [n_k][u] theta_b:
#                               moment_a by (theta_a, theta_b): mu_k ([u][n_k], -[n_k][u]), moment_b: the opposite
#
# taken into body axes (a moment row times R^T, a turn column times R T) and times c_stiff. The turn of R^T on the
# loop moments ([R^T X] T on the body's own turn) is ``implicit3d.factor``'s: it reads the residual's moment rows,
# which hold the loop moments (``loop_residual`` adds them). a and b are any two bodies, not a body and its parent, so
# this 12 x 12 block H_l of loop l would break the tree structure: it is kept out of the tree's matrix K (the joints'
# Newton matrix, factorised by ``implicit3d.factor`` as for a tree) and taken with the loop rows by a bordered solve.
#
# Bordered solve. With E (12 L x 6 N) selecting the loop bodies' coordinates (two slots of 6 a loop, L loops; a ground
# side selects nothing), Gt and Gb (m x 12 L) the loop rows on those slots (multiplier columns: moment part times R^T;
# position rows: times R T), H = blockdiag(H_l), the Newton system
#
#     [K + E^T H E   E^T Gt^T] [x ]   [b]
#     [Gb E          0       ] [mu] = [c]
#
# is, with x = K^-1 (b - E^T f), f = H e + Gt^T mu, e = E x and W = E K^-1 E^T (12 L x 12 L, the loop bodies'
# compliance through the tree),
#
#     [1 + W H   W Gt^T] [e ]   [E K^-1 b]
#     [Gb        0     ] [mu] = [c       ]
#
# a dense system of size 12 L + m, solved by LU with partial pivoting (neither symmetric nor definite); with H = 0 its
# Schur complement on mu is S = Gb W Gt^T = G_aux K^-1 G_aux^T. Cost an iteration: 12 L tree solves for W (6 for a
# loop to the ground) and two for x, O(N L), and O((12 L + m)^3): for mechanisms with a few loops. A pivot below
# ``implicit3d.PIVOT_RTOL`` of its column is a singular system: the loop rows have lost rank (redundant loops, or a loop
# locked at a singular position), reported with the loop of the pivot's unknown.

_ONE = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
_ZERO = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@inline
def _side(body_real, zp, tangent, body, loop_real, lp, at):
    """(R, R T, arm r = P - c, the point P), ground axes, of a loop's side: the ground's R = 1, T = 1, r = 0."""
    local = _vec(loop_real, lp, at)
    if body < 0:
        return _ONE, _ONE, (0.0, 0.0, 0.0), local
    rot, _ = _quaternion_matrix(zp, body)
    arm = _mat_vec(rot, _sub(local, _com(body_real, body)))
    return rot, _mm(rot, _tangent(tangent, body)), arm, _add(_vec(zp, body, 0), arm)


@njit
def loop_residual(body_real, loop_int, loop_real, tree_rows, c_stiff, zp, zdp, lam, rb, rc, stab, point, axes,
                  weights, aux_body, aux_coef, aux_rhs, aux_res):
    """The loops' part of the step's residual at the new state (zp, zdp), after ``implicit3d.residual``: the rows
    (``spatial3d.loop_rows``: aux_body (m, 2), aux_coef (m, 12) on (c', omega) ground axes, aux_res = phi; weights
    (m, 12), point (40,), axes (9,), aux_rhs (m,) scratch, stab (2,) zeros) at zp, their forces g^T mu (mu =
    lam[tree_rows:]) added to rb (nbodies, 6; moment rows in body axes, as ``residual`` leaves them) and the
    position rows rc[tree_rows + r] = phi_r / c_stiff. Returns the status (a distance loop whose points coincide:
    STATUS_LOOP_DEGENERATE and its loop)."""
    status = loop_rows(body_real, loop_int, loop_real, zp, zdp, stab, point, axes, weights, aux_body, aux_coef,
                       aux_rhs, aux_res)
    if status:
        return status
    for r in range(aux_body.shape[0]):
        mu = lam[tree_rows + r]
        for side in range(2):
            body = aux_body[r, side]
            if body < 0:
                continue
            o = 6 * side
            rot, _ = _quaternion_matrix(zp, body)
            moment = _mat_t_vec(rot, (aux_coef[r, o + 3], aux_coef[r, o + 4], aux_coef[r, o + 5]))
            for c in range(3):
                rb[body, c] += aux_coef[r, o + c] * mu
                rb[body, 3 + c] += moment[c] * mu
        rc[tree_rows + r] = aux_res[r] / c_stiff
    return STATUS_OK


@inline
def _turned(hmat, lp, s, t, left, right, c_stiff, ground_s, ground_t):
    """Block (s, t) of loop lp's 12 x 12 stiffness (3 x 3 blocks: s, t = 0 force a / c_a, 1 moment a / theta_a,
    2, 3 body b's) into body axes in place: c_stiff left H right, or zero for a ground side."""
    blk = _block(hmat, lp, 3 * s, 3 * t)
    out = _ZERO if ground_s or ground_t else _mm(left, _mm(blk, right))
    for r in range(3):
        for c in range(3):
            hmat[lp, 3 * s + r, 3 * t + c] = c_stiff * out[3 * r + c]


@njit
def loop_blocks(body_real, loop_int, loop_real, tree_rows, c_stiff, zp, tangent, lam, weights, aux_coef, hmat, gt,
                gb):
    """The loops' blocks of the step's Newton matrix at the iterate (module docstring), from the rows that
    ``loop_residual`` left (weights, aux_coef): hmat (nloops, 12, 12) each loop's geometric stiffness H_l on its
    bodies' (c, theta_b) of a, then b, body axes, times c_stiff; gt, gb (m, 12) each row on its loop's slots, as a
    multiplier column (moment part R^T g) and as a position row (moment part T^T R^T g)."""
    for lp in range(loop_int.shape[0]):
        kind = loop_int[lp, LKIND]
        a = loop_int[lp, LBODY_A]
        b = loop_int[lp, LBODY_B]
        r0 = loop_int[lp, LROW]
        rows = 1 if kind == LOOP_DISTANCE else (5 if kind == LOOP_REVOLUTE else 3)
        rot_a, turn_a, arm_a, point_a = _side(body_real, zp, tangent, a, loop_real, lp, LPA)
        rot_b, turn_b, arm_b, point_b = _side(body_real, zp, tangent, b, loop_real, lp, LPB)
        for r in range(12):
            for c in range(12):
                hmat[lp, r, c] = 0.0
        force = (0.0, 0.0, 0.0)  # on body a at its loop point
        for r in range(r0, r0 + rows):
            force = _add(force, _scale(lam[tree_rows + r], (weights[r, 0], weights[r, 1], weights[r, 2])))
        sf = _skew(force)
        _put(hmat, lp, 3, 3, 1.0, _mm(sf, _skew(arm_a)))
        _put(hmat, lp, 9, 9, -1.0, _mm(sf, _skew(arm_b)))
        if kind == LOOP_DISTANCE:  # A^T B A
            d = _sub(point_a, point_b)
            dist2 = _dot(d, d)
            dist = math.sqrt(dist2)
            bm = lam[tree_rows + r0] / dist
            e = _scale(1.0 / dist, d)
            proj = (1.0 - e[0] * e[0], -e[0] * e[1], -e[0] * e[2], -e[1] * e[0], 1.0 - e[1] * e[1], -e[1] * e[2],
                    -e[2] * e[0], -e[2] * e[1], 1.0 - e[2] * e[2])
            bmat = (bm * proj[0], bm * proj[1], bm * proj[2], bm * proj[3], bm * proj[4], bm * proj[5],
                    bm * proj[6], bm * proj[7], bm * proj[8])
            # A's blocks on (c_a, theta_a, c_b, theta_b) and A^T's (their transposes: [r]^T = -[r])
            cols = (_ONE, _scale9(-1.0, _skew(arm_a)), _scale9(-1.0, _ONE), _skew(arm_b))
            for s in range(4):
                left = _mm(_tr(cols[s]), bmat)
                for t in range(4):
                    _put(hmat, lp, 3 * s, 3 * t, 1.0, _mm(left, cols[t]))
        elif kind == LOOP_REVOLUTE:
            u = _mat_vec(rot_b, _vec(loop_real, lp, LAXB))
            su = _skew(u)
            for k in range(2):
                mu = lam[tree_rows + r0 + 3 + k]
                sn = _skew(_mat_vec(rot_a, _vec(loop_real, lp, LN1 if k == 0 else LN2)))
                un = _mm(su, sn)
                nu = _mm(sn, su)
                _put(hmat, lp, 3, 3, mu, un)
                _put(hmat, lp, 3, 9, -mu, nu)
                _put(hmat, lp, 9, 3, -mu, un)
                _put(hmat, lp, 9, 9, mu, nu)
        rot_at = _tr(rot_a)
        rot_bt = _tr(rot_b)
        for s in range(4):
            left = _ONE if s % 2 == 0 else (rot_at if s == 1 else rot_bt)
            for t in range(4):
                right = _ONE if t % 2 == 0 else (turn_a if t == 1 else turn_b)
                _turned(hmat, lp, s, t, left, right, c_stiff, (a if s < 2 else b) < 0, (a if t < 2 else b) < 0)
        for r in range(r0, r0 + rows):
            for side in range(2):
                o = 6 * side
                rot_t = rot_at if side == 0 else rot_bt
                turn = turn_a if side == 0 else turn_b
                moment = (aux_coef[r, o + 3], aux_coef[r, o + 4], aux_coef[r, o + 5])
                top = _mat_vec(rot_t, moment)
                bottom = _mat_t_vec(turn, moment)
                for c in range(3):
                    gt[r, o + c] = aux_coef[r, o + c]
                    gb[r, o + c] = aux_coef[r, o + c]
                    gt[r, o + 3 + c] = top[c]
                    gb[r, o + 3 + c] = bottom[c]


@inline
def _slot_body(loop_int, s):
    """The body of slot s (loop s // 2, side s % 2), -1 for the ground."""
    return loop_int[s // 2, LBODY_A if s % 2 == 0 else LBODY_B]


@njit
def loop_solve(body_int, body_real, loop_int, loop_real, row_start, c_stiff, zp, tangent, lam, jp, api, diag, lu,
               piv, wm, xb, xj, weights, aux_coef, row_loop, hmat, gt, gb, wmat, dense, dpiv, vec, colmax, yb, yj,
               kept_b, kept_j):
    """Solve the step's Newton system with the loops (module docstring) in place, after ``implicit3d.factor`` made
    the tree's factor K at the iterate (lam, zp, tangent: the iterate's): xb (nbodies, 6) and xj (tree rows + m)
    hold the right-hand side on entry (the loops' position rows last) and the correction (the loops' multipliers'
    last) on return. row_loop (m,) the loop of each row; hmat (nloops, 12, 12), gt, gb (m, 12), wmat (12 L, 12 L),
    dense (12 L + m, 12 L + m), dpiv, vec, colmax (12 L + m,), yb, kept_b (nbodies, 6), yj, kept_j (tree rows)
    scratch. Returns the status: STATUS_SINGULAR with index nbodies + l where the bordered system is
    singular at an unknown of loop l (its rows have lost rank)."""
    n = body_int.shape[0]
    nl = loop_int.shape[0]
    ne = 12 * nl
    m = gt.shape[0]
    size = ne + m
    tree = row_start[n]
    loop_blocks(body_real, loop_int, loop_real, tree, c_stiff, zp, tangent, lam, weights, aux_coef, hmat, gt, gb)
    # W = E K^-1 E^T, a column a time
    for s in range(2 * nl):
        body = _slot_body(loop_int, s)
        for c in range(6):
            col = 6 * s + c
            if body < 0:
                for r in range(ne):
                    wmat[r, col] = 0.0
                continue
            yb[:, :] = 0.0
            yj[:] = 0.0
            yb[body, c] = 1.0
            solve(body_int, row_start, jp, api, diag, lu, piv, wm, yb, yj)
            for s2 in range(2 * nl):
                b2 = _slot_body(loop_int, s2)
                for c2 in range(6):
                    wmat[6 * s2 + c2, col] = yb[b2, c2] if b2 >= 0 else 0.0
    # x0 = K^-1 b (the right-hand side kept for the second solve)
    for i in range(n):
        for c in range(6):
            kept_b[i, c] = xb[i, c]
    for k in range(tree):
        kept_j[k] = xj[k]
    solve(body_int, row_start, jp, api, diag, lu, piv, wm, xb, xj[:tree])
    # the bordered system [[1 + W H, W Gt^T], [Gb, 0]] (e, mu) = (E x0, c)
    for r in range(size):
        for c in range(size):
            dense[r, c] = 0.0
    for r in range(ne):
        for c in range(ne):
            lp = c // 12
            s = 0.0
            for k in range(12):
                s += wmat[r, 12 * lp + k] * hmat[lp, k, c - 12 * lp]
            dense[r, c] = s + (1.0 if r == c else 0.0)
        for q in range(m):
            lp = row_loop[q]
            s = 0.0
            for k in range(12):
                s += wmat[r, 12 * lp + k] * gt[q, k]
            dense[r, ne + q] = s
    for q in range(m):
        lp = row_loop[q]
        for k in range(12):
            dense[ne + q, 12 * lp + k] = gb[q, k]
    for s in range(2 * nl):
        body = _slot_body(loop_int, s)
        for c in range(6):
            vec[6 * s + c] = xb[body, c] if body >= 0 else 0.0
    for q in range(m):
        vec[ne + q] = xj[tree + q]
    for k in range(size):
        dpiv[k] = -1
    if not _lu_factor(dense, dpiv, size, colmax):
        failed = 0
        for k in range(size):  # the factorisation stopped at the last column it pivoted
            if dpiv[k] >= 0:
                failed = k
        lp = failed // 12 if failed < ne else row_loop[failed - ne]
        return STATUS_SINGULAR | ((n + lp) << 4)
    _lu_solve(dense, dpiv, size, vec)
    # f = H e + Gt^T mu on the slots; x = K^-1 (b - E^T f)
    for i in range(n):
        for c in range(6):
            xb[i, c] = kept_b[i, c]
    for k in range(tree):
        xj[k] = kept_j[k]
    for lp in range(nl):
        for k in range(12):
            f = 0.0
            for c in range(12):
                f += hmat[lp, k, c] * vec[12 * lp + c]
            body = _slot_body(loop_int, 2 * lp + k // 6)
            if body >= 0:
                xb[body, k % 6] -= f
    for q in range(m):
        lp = row_loop[q]
        mu = vec[ne + q]
        for k in range(12):
            body = _slot_body(loop_int, 2 * lp + k // 6)
            if body >= 0:
                xb[body, k % 6] -= gt[q, k] * mu
        xj[tree + q] = mu
    solve(body_int, row_start, jp, api, diag, lu, piv, wm, xb, xj[:tree])
    return STATUS_OK


@njit
def spherical_dynamics(body_int, body_real, gravity, row_start, tau, z, zb, zd, tangent, rc, diag, wm, loc, xb, xj,
                       vdot, lam, power, info):
    """The accelerations vdot (nbodies, 6; the rotations' in body axes) and the multipliers lam (rows) of a tree of
    spherical joints at the state z (nbodies, 7), zb, zd (nbodies, 6; omega in body and in ground axes): M vdot +
    G^T lam = Q (gravity, gyroscopic, tau), G vdot = -gamma (the joints' acceleration constraints, their velocity
    terms gamma = F^T (w_i x (w_i x r_c) - w_p x (w_p x arm_p)) where the position and velocity constraints hold).
    With c_stiff = c_damp = 0 and the tangent maps 1, ``spherical_forward``'s matrix is [[M, G^T], [G, 0]] and its
    right-hand side at vdot = 0, lam = 0 is (Q, -gamma): one pass each way solves the system (linear in them), in
    O(N). tangent, rc, diag, wm, loc, xb, xj are scratch (the step's arrays; diag zero, as ``spherical_forward``
    leaves it); power[0] receives tau's power at
    (z, zd), info[2], info[3] the largest |Q| and its body. Returns the status (a non-finite pose, a singular block:
    a body without inertia along a motion its joint leaves free)."""
    for i in range(z.shape[0]):
        for c in range(6):
            vdot[i, c] = 0.0
        for r in range(3):
            for c in range(3):
                tangent[i, r, c] = 1.0 if r == c else 0.0
    for k in range(lam.shape[0]):
        lam[k] = 0.0
    status = spherical_forward(body_int, body_real, gravity, row_start, tau, z, zb, zd, vdot, lam, tangent, 0.0, 0.0,
                               rc, diag, wm, loc, xb, xj, power, info)
    if status:
        return status
    spherical_back_substitute(body_int, row_start, wm, diag, xb, xj)
    for i in range(z.shape[0]):
        for c in range(6):
            vdot[i, c] = xb[i, c]
    for k in range(lam.shape[0]):
        lam[k] = xj[k]
    return STATUS_OK

# ---- the velocities projected onto the joints' velocity rows ------------------------------------------------------
#
# The index-3 step holds C(z+) = 0 but not G(z+) v+ = 0: along the constraints' normals its velocities carry the
# scheme's spurious root, which changes sign from step to step and is damped only by about rho_inf a step
# (``integrate.augmented3d_implicit``, "Velocities"). ``project_velocity`` and ``spherical_project`` take it out at
# each converged step: the mass-orthogonal projection v+ <- v+ + dv, M dv + G^T mu = 0, G dv = -G v+ (Bayo &
# Ledesma 1996, "Augmented Lagrangian and mass-orthogonal projection methods for constrained multibody dynamics"),
# the system of the dynamics' tree solve, [[M, G^T], [G, 0]], solved by the step's own elimination at
# c_stiff = c_damp = 0 with the tangent maps 1 (its right-hand side (0, -G v)).
#
# Only where a gap is larger than the step's accepted Newton error can make it: Newton accepts velocities whose error
# is up to newton_tol in the correction's metric (each component of c' [m/s], each of omega_b [rad/s] times the body's
# radius of gyration r_g), and such an error moves a velocity row g . v (linear coefficients a on c', angular b on
# omega, ground axes) by up to newton_tol times its reach, |a|_1 + |R^T b|_1 / r_g summed over the row's two bodies
# (``_row_reach``). A step whose every row has |g . v| <= tol times its reach (tol: the run's projection tolerance, a
# multiple of newton_tol) is left as it is: its gaps are within what the Newton tolerance leaves anyway, and the
# projection would change its velocities by about as much.

@inline
def _projected_velocities(zp, zbp, zdp, dv):
    """zbp += dv (nbodies, 6; omega in body axes), and zdp the same velocities with omega in ground axes."""
    for i in range(zp.shape[0]):
        for c in range(6):
            zbp[i, c] += dv[i, c]
        for c in range(3):
            zdp[i, c] = zbp[i, c]
        _ground_omega(zp, zbp, zdp, i)


@inline
def _l1(a):
    return abs(a[0]) + abs(a[1]) + abs(a[2])


@inline
def _row_reach(lin, ang, rot, gyration):
    """How far the velocity errors that Newton's tolerance accepts (the section's comment) move a velocity row, on one
    of its bodies: lin, ang (3 each) its coefficients on the body's c' and omega (ground axes), rot the body's
    rotation, gyration its radius of gyration (1 for a massless body, as the correction counts it): |lin|_1 +
    |R^T ang|_1 / gyration, per unit of the tolerance."""
    return _l1(lin) + _l1(_mat_t_vec(rot, ang)) / gyration


@inline
def _spherical_gap(body_int, body_real, zp, zdp, gyration, tau, i):
    """Body i's spherical joint at a converged step's end (zp; zdp, omega in ground axes): (the largest of its three
    velocity rows' |G_k v| over their reach, ``_row_reach`` of both bodies; its share of tau's power). The rows are
    ``_projection_body``'s: G_k v = F_k . (c_i' + w_i x r_c - c_p' - w_p x arm_p), F_k the joint frame's axis k."""
    p = body_int[i, PARENT]
    rot, _ = _quaternion_matrix(zp, i)
    om = _vec(zdp, i, 3)
    rot_p, c_p, arm_p, om_p, vel_p = _parent_side(body_real, zp, zdp, i, p)
    frame, _, r_c, _ = _joint_arms(body_real, zp, rot, rot_p, c_p, i)
    rel = _sub(_add(_vec(zdp, i, 0), _cross(om, r_c)), vel_p)
    worst = 0.0
    for k in range(3):
        axis = (frame[k], frame[3 + k], frame[6 + k])
        reach = _row_reach(axis, _cross(r_c, axis), rot, gyration[i])
        if p >= 0:
            reach += _row_reach(axis, _cross(arm_p, axis), rot_p, gyration[p])
        ratio = abs(_dot(axis, rel)) / reach
        if not ratio <= worst and not math.isnan(worst):  # (a NaN kept)
            worst = ratio
    power = 0.0
    if tau.shape[0] > 0:  # R tau on the child, its opposite on the parent
        k = body_int[i, VIDX]
        power = _dot(_mat_vec(rot, (tau[k], tau[k + 1], tau[k + 2])), _sub(om, om_p))
    return worst, power


@njit
def _spherical_gaps_range(body_int, body_real, zp, zdp, gyration, tau, start, stop, out, k):
    """``spherical_gaps`` of bodies start to stop - 1 into out[k]."""
    worst = 0.0
    where = start
    power = 0.0
    for i in range(start, stop):
        ratio, share = _spherical_gap(body_int, body_real, zp, zdp, gyration, tau, i)
        if not ratio <= worst and not math.isnan(worst):
            worst = ratio
            where = i
        power += share
    out[k, 0] = worst
    out[k, 1] = where
    out[k, 2] = power


@pnjit
def spherical_gaps(body_int, body_real, zp, zdp, gyration, tau, out):
    """The velocity rows of a tree of spherical joints at a converged step's end (zp (nbodies, 7); zdp (nbodies, 6),
    omega in ground axes; gyration (nbodies,) the radii of gyration): out (CHUNKS, 3) receives, range by range of
    bodies (CHUNKS ranges, on numba's threads from PARALLEL_BODIES bodies; one range below), the largest |G_k v| over
    its reach (``_spherical_gap``), its body, and the range's share of tau's power (tau (nv,) or (0,)). The same
    results whatever the number of threads."""
    n = body_int.shape[0]
    for k in range(CHUNKS):
        out[k, 0] = 0.0
        out[k, 1] = 0.0
        out[k, 2] = 0.0
    if n < PARALLEL_BODIES:
        _spherical_gaps_range(body_int, body_real, zp, zdp, gyration, tau, 0, n, out, 0)
        return
    for k in numba.prange(CHUNKS):
        _spherical_gaps_range(body_int, body_real, zp, zdp, gyration, tau, k * n // CHUNKS, (k + 1) * n // CHUNKS,
                              out, k)


@njit
def project_velocity(body_int, body_real, gravity, row_start, tau, target, zp, zbp, zdp, vdot, lam, tangent, rb, rc,
                     jc, jp, res, gam, diag, api, lu, piv, wm, kload, power, gyration, tol, gap):
    """The new velocities zbp, zdp (nbodies, 6; omega in body and in ground axes) of a converged step at zp
    projected, in place, mass-orthogonally onto the joints' velocity rows G v = 0 (the section's comment) by the
    general kernels: ``residual`` for the rows at zp, ``factor`` at c_stiff = c_damp = 0 with the tangent maps 1
    (its matrix [[M, G^T], [G, 0]]; kload (0, 12, 12)), ``solve`` with the right-hand side (0, -G v). For trees
    without drivers (a driver's row would need its rate f'(t)). vdot, lam: the step's unknowns (read by
    ``residual`` and ``factor``, their terms vanishing at c_stiff = c_damp = 0); tangent, rb, rc, jc, jp, res, gam,
    diag, api, lu, piv, wm are scratch (the step's arrays; tangent left 1); power[0] receives tau's power at the
    (projected) state. tol > 0: not projected where every row's |G_k v| is at most tol times its reach
    (``_row_reach``; gyration (nbodies,) the radii of gyration of the correction); gap (3,) receives the largest
    |G_k v| over its reach (-1 where tol <= 0: not measured), its body, and 1 where the velocities were projected,
    else 0. Returns the status (a singular local block: a body without inertia along a motion its joint leaves
    free)."""
    n = body_int.shape[0]
    status = residual(body_int, body_real, gravity, row_start, tau, target, zp, zdp, vdot, lam, 1.0, rb, rc, jc, jp,
                      res, gam, power)
    if status:
        return status
    worst = 0.0
    where = 0
    for i in range(n):
        p = body_int[i, PARENT]
        r0 = row_start[i]
        rot, _ = _quaternion_matrix(zp, i)
        rot_p = _ONE
        if p >= 0:
            rot_p, _ = _quaternion_matrix(zp, p)
        for k in range(row_start[i + 1] - r0):  # G v: the rows' moment columns in ground axes, as zdp's omega
            gv = 0.0
            for c in range(6):
                gv += jc[i, k, c] * zdp[i, c]
                if p >= 0:
                    gv += jp[i, k, c] * zdp[p, c]
            rc[r0 + k] = -gv
            if tol > 0.0:
                reach = _row_reach(_vec(jc[i], k, 0), _vec(jc[i], k, 3), rot, gyration[i])
                if p >= 0:
                    reach += _row_reach(_vec(jp[i], k, 0), _vec(jp[i], k, 3), rot_p, gyration[p])
                ratio = abs(gv) / reach
                if not ratio <= worst and not math.isnan(worst):  # (a NaN kept)
                    worst = ratio
                    where = i
        for c in range(6):
            rb[i, c] = 0.0
        for r in range(3):
            for c in range(3):
                tangent[i, r, c] = 1.0 if r == c else 0.0
    gap[0] = worst if tol > 0.0 else -1.0
    gap[1] = where
    gap[2] = 0.0
    if tol > 0.0 and worst <= tol:  # within the accepted Newton error: tau's power is the residual's, at this state
        return STATUS_OK
    gap[2] = 1.0
    status = factor(body_int, body_real, row_start, zp, zbp, vdot, lam, rb, tangent, 0.0, 0.0, jc, jp, diag, api, lu,
                    piv, wm, kload)
    if status:
        return status
    solve(body_int, row_start, jp, api, diag, lu, piv, wm, rb, rc)
    _projected_velocities(zp, zbp, zdp, rb)
    power[0] = 0.0
    if tau.shape[0] > 0:  # tau's power at the projected velocities
        return residual(body_int, body_real, gravity, row_start, tau, target, zp, zdp, vdot, lam, 1.0, rb, rc, jc, jp,
                        res, gam, power)
    return STATUS_OK


@njit
def spherical_project(body_int, body_real, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, rc, diag, wm, loc, xb,
                      xj, power, info, gyration, tol, gap):
    """``project_velocity`` on a tree of spherical joints by the fused passes: ``spherical_forward``'s pipeline and
    elimination on the projection's records (``_projection_body``: the matrix [[M, G^T], [G, 0]] of c_stiff =
    c_damp = 0 and the tangent maps 1, the right-hand side (0, -G v) with the rows G v given, not the position
    rows), then ``spherical_back_substitute``: dv in xb, mu in xj, exact (no shifted state). vdot, lam, tangent:
    unread (the projection's records take none of them; passed for the pipeline's signature); rc, diag, wm, loc,
    xb, xj are scratch (diag zero, as ``spherical_forward`` leaves it); power[0] receives tau's power at the
    (projected) state (tau (nv,) or (0,)), info[2], info[3] are left as they were. tol, gyration, gap as
    ``project_velocity``'s: with tol > 0 the rows are measured first (``spherical_gaps``, one parallel pass, which
    gives tau's power where the velocities stay). Returns the status."""
    if tol > 0.0:
        ranges = np.empty((CHUNKS, 3))
        spherical_gaps(body_int, body_real, zp, zdp, gyration, tau, ranges)
        worst = 0.0
        where = 0.0
        total = 0.0
        for k in range(CHUNKS):
            if not ranges[k, 0] <= worst and not math.isnan(worst):
                worst = ranges[k, 0]
                where = ranges[k, 1]
            total += ranges[k, 2]
        gap[0] = worst
        gap[1] = where
        gap[2] = 0.0
        if worst <= tol:  # within the accepted Newton error (NaN: projected, and the passes report it)
            power[0] = total
            return STATUS_OK
    else:
        gap[0] = -1.0
        gap[1] = 0.0
    gap[2] = 1.0
    kept = (info[2], info[3])
    status = _spherical_passes(body_int, body_real, readonly(np.zeros(3)), row_start, tau, zp, zbp, zdp, vdot, lam,
                               tangent, 0.0, 0.0, rc, diag, wm, loc, xb, xj, power, info, np.bool_(True))
    info[2], info[3] = kept
    if status:
        return status
    spherical_back_substitute(body_int, row_start, wm, diag, xb, xj)
    _projected_velocities(zp, zbp, zdp, xb)
    total = 0.0
    if tau.shape[0] > 0:  # tau's power at the projected velocities: R tau on the child, its opposite on the parent
        for i in range(zp.shape[0]):
            p = body_int[i, PARENT]
            rot, _ = _quaternion_matrix(zp, i)
            k = body_int[i, VIDX]
            rel = _vec(zdp, i, 3)
            if p >= 0:
                rel = _sub(rel, _vec(zdp, p, 3))
            total += _dot(_mat_vec(rot, (tau[k], tau[k + 1], tau[k + 2])), rel)
    power[0] = total
    return STATUS_OK

# ---- one step ------------------------------------------------------------------------------------------------------

@inline
def _round_off_state(zp, zdp):
    """zp, zdp (the new poses and velocities) with every entry changed by two units in its last place, alternating in
    sign along the coordinates (the zigzag that a chain's sums of many terms amplify most)."""
    for i in range(zp.shape[0]):
        for c in range(7):
            zp[i, c] *= 1.0 + (2.0 if (7 * i + c) % 2 == 0 else -2.0) * 2.220446049250313e-16
        for c in range(6):
            zdp[i, c] *= 1.0 + (2.0 if (6 * i + c) % 2 == 0 else -2.0) * 2.220446049250313e-16


@njit
def correction_round_off(body_int, body_real, gravity, row_start, tau, target, z0, zb0, acc0, vdot0, coef, gyration,
                         vdot, lam, zp, zbp, zdp, tangent, rb, rc, jc, jp, res, gam, api, diag, lu, piv, wm, power,
                         probe_b, probe_c):
    """The round-off of a Newton correction at the iterate (vdot, lam), measured: the change of the residual that
    a change of two units in the last place of the new state makes (``_round_off_state``), taken through the
    factors of the last ``factor`` (those of the iterate before: the same to round-off), scaled as newton_step's
    correction. Where the tension of a long chain sums the weight of up to N bodies, this floor is far above a tight
    tolerance (a 1e6-link chain: about 1e-11 against newton_tol = 1e-12) and no iteration can go below it.
    probe_b (nbodies, 6), probe_c (rows) are scratch; zp, zbp, zdp, tangent, rb, rc, jc, jp, res, gam are left as
    ``residual`` leaves them at the iterate, with jp's moment columns in body axes (as ``factor`` left them).
    0 where a residual is not finite (the plain tests decide)."""
    n = body_int.shape[0]
    c_stiff = coef[5]
    update_state(z0, zb0, acc0, vdot0, coef, vdot, zp, zbp, zdp, tangent)
    _round_off_state(zp, zdp)
    if residual(body_int, body_real, gravity, row_start, tau, target, zp, zdp, vdot, lam, c_stiff, probe_b, probe_c,
                jc, jp, res, gam, power):
        return 0.0
    update_state(z0, zb0, acc0, vdot0, coef, vdot, zp, zbp, zdp, tangent)
    if residual(body_int, body_real, gravity, row_start, tau, target, zp, zdp, vdot, lam, c_stiff, rb, rc, jc, jp, res,
                gam, power):
        return 0.0
    for i in range(n):
        for c in range(6):
            probe_b[i, c] -= rb[i, c]
        p = body_int[i, PARENT]
        if p >= 0:  # the rows' moment columns into body axes, as ``factor`` turns them
            rot_p, _ = _quaternion_matrix(zp, p)
            for k in range(row_start[i + 1] - row_start[i]):
                b = _mat_t_vec(rot_p, (jp[i, k, 3], jp[i, k, 4], jp[i, k, 5]))
                for c in range(3):
                    jp[i, k, 3 + c] = b[c]
    for k in range(rc.shape[0]):
        probe_c[k] -= rc[k]
    solve(body_int, row_start, jp, api, diag, lu, piv, wm, probe_b, probe_c)
    size = 0.0
    for i in range(n):
        for c in range(6):
            size = max(size, abs(probe_b[i, c]) * (1.0 if c < 3 else gyration[i]))
    return max(c_stiff, coef[6]) * size if math.isfinite(size) else 0.0



@njit
def spherical_round_off(body_int, body_real, gravity, row_start, tau, z0, zb0, acc0, vdot0, coef, gyration, vdot,
                        lam, zp, zbp, zdp, tangent, rc, diag, wm, loc, xb, xj, power, info, probe_b, probe_c):
    """``correction_round_off`` on a tree of spherical joints (``spherical_forward``): the corrections of the
    iterate (vdot, lam) at the state changed by two units in its last place and at the state itself, each through
    its own matrix (the same to round-off: the difference is the round-off of the right-hand side's), their
    largest difference scaled as newton_step's correction. xb, xj are left with the iterate's correction, info as
    it was; 0 where a residual is not finite."""
    n = body_int.shape[0]
    kept = (info[2], info[3])
    update_state(z0, zb0, acc0, vdot0, coef, vdot, zp, zbp, zdp, tangent)
    _round_off_state(zp, zdp)
    status = spherical_forward(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent, coef[5],
                               coef[6], rc, diag, wm, loc, probe_b, probe_c, power, info)
    spherical_back_substitute(body_int, row_start, wm, diag, probe_b, probe_c)
    update_state(z0, zb0, acc0, vdot0, coef, vdot, zp, zbp, zdp, tangent)
    status |= spherical_forward(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent,
                                coef[5], coef[6], rc, diag, wm, loc, xb, xj, power, info)
    spherical_back_substitute(body_int, row_start, wm, diag, xb, xj)
    info[2], info[3] = kept
    if status:
        return 0.0
    size = 0.0
    for i in range(n):
        for c in range(6):
            size = max(size, abs(probe_b[i, c] - xb[i, c]) * (1.0 if c < 3 else gyration[i]))
    return max(coef[5], coef[6]) * size if math.isfinite(size) else 0.0


@njit
def predicted_correction(com, rot, com_before, rot_before):
    """The next Newton correction that quadratic convergence predicts from the last two, part by part: the centres
    of mass' (com, com_before) and the rotations' (rot, rot_before; each scaled as ``newton_step``'s correction),
    each theta^2 times its last correction with theta = its ratio to the one before (Deuflhard's affine-covariant
    estimate of the Kantorovich quantity, theta = omega |dx| / 2: the next correction omega |dx|^2 / 2 = theta
    |dx|), and the correction itself for a part that does not contract by at least half (no quadratic regime
    there); the largest of the two. Part by part, since the parts converge at different rates (the rotations'
    more slowly on a wide swing): theta of their maximum, where the centres of mass dominate the first
    corrections, predicted next corrections of 2.5e-11 and 1e-10 as below 1e-12 on chains swinging 0.3 rad."""
    out = 0.0
    for now, before in ((com, com_before), (rot, rot_before)):
        if now <= 0.0:
            continue
        theta = now / before if before > 0.0 else 1.0
        out = max(out, theta * theta * now if theta < 0.5 else now)
    return out


@njit
def quadratic_ratio(now, before):
    """now / before^2, a correction over the square of the one before it: the estimate of the Kantorovich constant
    omega / 2 of Newton's iteration (its next correction omega |dx|^2 / 2; Deuflhard's a posteriori estimate, a
    lower bound of it, the round-off of a converged correction making it larger); 0 where now is 0, inf where
    before is 0 and now is not."""
    if now == 0.0:
        return 0.0
    return now / (before * before) if before > 0.0 else math.inf


@njit
def first_correction_accepted(estimate, com, rot, tol):
    """Whether the first correction of a step (its parts com, rot, scaled as ``newton_step``'s) is accepted on the
    estimate of an earlier step (``estimate``: (K_com, K_rot), ``quadratic_ratio`` of that step's first two
    corrections, part by part; NaN: none): QUADRATIC_SAFETY times the next correction it predicts, K |dx|^2 for each
    part, <= tol. Hairer & Wanner's RADAU5 carries its contraction estimate over from step to step in the same way;
    a step's Newton matrix changes little from the step before, and a correction that grows to where the estimate
    no longer vouches for it takes a second iteration, which measures the estimate again."""
    return QUADRATIC_SAFETY * estimate[0] * com * com <= tol and QUADRATIC_SAFETY * estimate[1] * rot * rot <= tol


@njit
def newton_step(body_int, body_real, gravity, row_start, tau, target, z0, zb0, acc0, vdot0, coef, gyration, tol,
                max_newton, vdot, lam, zp, zbp, zdp, tangent, rb, rc, jc, jp, res, gam, diag, api, lu, piv, wm, loc, xb,
                xj, power, info, loops, loads, estimate):
    """Newton's iteration of one step from the first guess (vdot, lam), full Newton (the matrix at every iterate);
    on return vdot, lam and the new state (zp; zbp, zdp: omega in body and in ground axes) of the last iterate
    (velocities and accelerations zb0, acc0, vdot0, vdot with omega in body axes). The correction of the state is
    max(c_stiff, c_damp) times the largest of |dvdot| on the centres of mass and gyration[i] |dvdot| on the
    rotations (the motion of body i's points at its radius of gyration); converged when it is <= tol, when the
    error it leaves, estimated as theta / (1 - theta) times it (theta: its ratio to the correction before, Hairer &
    Wanner's estimate) or as QUADRATIC_SAFETY times the next correction that quadratic convergence predicts for the
    centres of mass and the rotations apart (``predicted_correction``), is, or, the first correction of a step
    without joint forces (tau empty: tau's power at the last residual's state is 0 whatever the correction), when
    the estimate of an earlier step vouches for it (``first_correction_accepted``), or when it is no longer contracting
    (by less than half) and <= 100 tol or within
    ROUND_OFF_MARGIN of the round-off measured at the iterate (``correction_round_off``, once a step, at the first
    stall above 100 tol: the floor of a long chain's sums); given up as diverging where the correction, not
    accepted, grows by more than DIVERGENCE at two iterations running. coef = (h, alpha_m,
    alpha_f, gamma, beta, c_stiff, c_damp). info receives (iterations, last correction, max |residual| of the last
    iterate, its body). xb (nbodies, 6) and xj (rows) non-empty: every joint is spherical and an iteration is
    ``spherical_forward`` and ``spherical_back_substitute`` (diag (nbodies, SUMS, 6) its children's sums, loc its
    records; rb, jc, jp, res, gam, api, lu, piv unused); empty ((0, 6), (0,)):
    ``residual``, ``factor``, ``solve``. target (nbodies,): the drivers' f(t+) of the driven joints' rows
    (``residual``), or (0,) without drivers. Returns the status (STATUS_NO_CONVERGENCE after max_newton iterations, at a
    non-finite correction or diverging; a singular local block or a non-finite state: theirs); power[0] is tau's power
    at the last residual's state. loops: the closed loops' arrays (``loop_residual``, ``loop_solve``: loop_int,
    loop_real, stab, point, axes, weights, aux_body, aux_coef, aux_rhs, aux_res, row_loop, hmat, gt, gb, wmat, dense,
    dpiv, vec, colmax, yb, yj, kept_b, kept_j; loop_int (0, 4) for a tree), their multipliers in lam[row_start[-1]:] and
    their position rows in rc[row_start[-1]:], after the joints' (the general kernels only: xb, xj empty). loads: the
    joint loads' arrays (``loads3d.joint_load_blocks``: kload, elem_real, sph_start, sph_elem, loaded, driven, tq, tv,
    qs, vs, q0, v0), whose blocks of the matrix (kload) are taken at every iterate with the joint forces tau
    (``factor``; kload (0, 12, 12): none, the joint loads' dependence on the state left out), the general kernels
    only. estimate (4,): (K_com, K_rot), the centres of mass' and the rotations' ``quadratic_ratio`` of the first
    two corrections of the last step that took two or more (NaN: none; written where this step takes two), and
    (com, rot), the last correction's parts (written)."""
    n = body_int.shape[0]
    (loop_int, loop_real, stab, point, axes, weights, aux_body, aux_coef, aux_rhs, aux_res, row_loop, hmat, gt, gb,
     wmat, dense, dpiv, vec, colmax, yb, yj, kept_b, kept_j) = loops
    kload, elem_real, sph_start, sph_elem, loaded, driven, tq, tv, qs, vs, q0, v0 = loads
    closed = loop_int.shape[0] > 0
    c_stiff = coef[5]
    c_damp = coef[6]
    scale = max(c_stiff, c_damp)
    fused = xb.shape[0] > 0
    previous = np.inf
    com_before = np.inf
    rot_before = np.inf
    growing = 0  # the iterations running whose correction grew by more than DIVERGENCE
    info[0] = 0.0
    round_off = -1.0  # the correction's round-off at a stalled iterate; -1: not measured in this step
    probe_b, probe_c = np.empty((0, 6)), np.empty(0)
    for it in range(max_newton):
        update_state(z0, zb0, acc0, vdot0, coef, vdot, zp, zbp, zdp, tangent)
        if fused:
            status = spherical_forward(body_int, body_real, gravity, row_start, tau, zp, zbp, zdp, vdot, lam, tangent,
                                       c_stiff, c_damp, rc, diag, wm, loc, xb, xj, power, info)
            if status:
                return status
            # the correction applied to (vdot, lam) in the back-substitution's pass (its sums and maxima as below)
            com, rot = _back_substitute_pass(body_int, row_start, wm, diag, xb, xj, vdot, lam, gyration)
        else:
            status = residual(body_int, body_real, gravity, row_start, tau, target, zp, zdp, vdot, lam, c_stiff, rb,
                              rc, jc, jp, res, gam, power)
            if closed and not status:
                status = loop_residual(body_real, loop_int, loop_real, row_start[n], c_stiff, zp, zdp, lam, rb, rc,
                                       stab, point, axes, weights, aux_body, aux_coef, aux_rhs, aux_res)
            if status:
                return status
            worst = 0.0
            where = 0
            for i in range(n):
                for c in range(6):
                    if not abs(rb[i, c]) <= worst:
                        worst = abs(rb[i, c])
                        where = i
            info[2] = worst
            info[3] = where
            if kload.shape[0] > 0:
                joint_load_blocks(body_int, body_real, elem_real, sph_start, sph_elem, loaded, driven, tau, tq, tv, zp,
                                  zbp, zdp, tangent, c_stiff, c_damp, gyration, kload, qs, vs, q0, v0)
            status = factor(body_int, body_real, row_start, zp, zbp, vdot, lam, rb, tangent, c_stiff, c_damp, jc, jp,
                            diag, api, lu, piv, wm, kload)
            if status:
                return status
            for i in range(n):
                for c in range(6):
                    rb[i, c] = -rb[i, c]
            for k in range(rc.shape[0]):
                rc[k] = -rc[k]
            if closed:
                status = loop_solve(body_int, body_real, loop_int, loop_real, row_start, c_stiff, zp, tangent, lam, jp,
                                    api, diag, lu, piv, wm, rb, rc, weights, aux_coef, row_loop, hmat, gt, gb, wmat,
                                    dense, dpiv, vec, colmax, yb, yj, kept_b, kept_j)
                if status:
                    return status
            else:
                solve(body_int, row_start, jp, api, diag, lu, piv, wm, rb, rc)
            com = 0.0  # the correction of the centres of mass and of the rotations, apart (``predicted_correction``)
            rot = 0.0
            for i in range(n):
                com, rot = _apply_correction(vdot, lam, rb, rc, gyration, i, row_start[i], row_start[i + 1], com,
                                             rot)
            for k in range(row_start[n], rc.shape[0]):  # the loops' rows
                lam[k] += rc[k]
        com *= scale
        rot *= scale
        correction = max(com, rot) if math.isfinite(com) and math.isfinite(rot) else math.inf
        info[0] = it + 1
        info[1] = correction
        estimate[2] = com
        estimate[3] = rot
        if not math.isfinite(correction):
            return STATUS_NO_CONVERGENCE
        if it == 1:  # the estimate of the steps that follow
            estimate[0] = quadratic_ratio(com, com_before)
            estimate[1] = quadratic_ratio(rot, rot_before)
        theta = correction / previous  # the contraction: the error left is about theta / (1 - theta) correction
        stalled = theta > 0.5
        if stalled and correction > 100.0 * tol and round_off < 0.0:  # measured once a step, only where stalled
            if probe_b.shape[0] != n:
                probe_b, probe_c = np.empty((n, 6)), np.empty(rc.shape[0])
            if fused:
                round_off = spherical_round_off(body_int, body_real, gravity, row_start, tau, z0, zb0, acc0, vdot0,
                                                coef, gyration, vdot, lam, zp, zbp, zdp, tangent, rc, diag, wm, loc,
                                                xb, xj, power, info, probe_b, probe_c)
            else:
                round_off = correction_round_off(body_int, body_real, gravity, row_start, tau, target, z0, zb0, acc0,
                                                 vdot0, coef, gyration, vdot, lam, zp, zbp, zdp, tangent, rb, rc, jc,
                                                 jp, res, gam, api, diag, lu, piv, wm, power, probe_b, probe_c)
        if (correction <= tol or (it == 0 and tau.shape[0] == 0 and first_correction_accepted(estimate, com, rot, tol))
                or (it > 0 and theta < 1.0 and theta / (1.0 - theta) * correction <= tol)
                or (it > 0 and QUADRATIC_SAFETY * predicted_correction(com, rot, com_before, rot_before) <= tol)
                or (stalled and (correction <= 100.0 * tol or correction <= tol + ROUND_OFF_MARGIN * round_off))):
            update_state(z0, zb0, acc0, vdot0, coef, vdot, zp, zbp, zdp, tangent)
            return STATUS_OK
        growing = growing + 1 if theta > DIVERGENCE else 0
        if growing == 2:  # diverging: given up (info holds the iterations and the last correction)
            return STATUS_NO_CONVERGENCE
        previous = correction
        com_before = com
        rot_before = rot
    return STATUS_NO_CONVERGENCE
