"""The augmented absolute-coordinate formulation of a spatial model (``Model3D``) compiled: the joints' constraint
rows and a linear-time KKT solve (Baraff, "Linear-time dynamics using Lagrange multipliers", SIGGRAPH 1996), the
three-dimensional counterpart of ``tree`` (whose docstring derives the elimination).

Coordinates. Body i has z_i = (c, quat) (7): its centre of mass c in the ground frame and the unit quaternion
(w, x, y, z) of its body-to-ground rotation R_i, and the velocity zd_i = (c', omega) (6), omega its angular velocity
in GROUND axes. Its mass matrix is M_i = diag(m 1, J), J = R_i J_c R_i^T (J_c about the centre of mass, body axes),
and its applied force Q_i = (m g, -omega x J omega) plus loads.

Joints. With F = R_p R0 the parent's joint frame in ground axes (the ground's: R0), P_c = c_i + r_c and
P_p = c_p + r_p the joint point as seen from the child and from the parent (r_c = R_i (child_point - com_i),
r_p = R_p (parent_point - com_p); the ground: P_p = parent_point), d = P_c - P_p = F t_j(q) and the relative
rates w = omega_i - omega_p, u = (c_i' + omega_i x r_c) - (c_p' + omega_p x rho) (rho = P_c - c_p: u is the
velocity of the child's joint point relative to the parent's point that coincides with it), the joint's motion is
F^T (w, u) = S_j(q) v_j. Its constraint rows are the components of (w, u) along the directions g it locks:

    linear row   g . u = 0, residual C = g . d   (g = F e fixed in the parent: C' = g . u exactly)
    angular row  g . w = 0, residual C with C' = g . w where C = 0

    revolute     3 linear (the joint frame's axes), 2 angular (n1, n2, orthogonal to the axis a)     5 rows
    prismatic    3 angular (the joint frame's axes), 2 linear (n1, n2)                                 5
    cylindrical  2 angular, 2 linear (n1, n2)                                                           4
    universal    3 linear, 1 angular along (F a1) x (R_i a2) / |a1 x a2|                                4
    spherical    3 linear                                                                               3
    planar       2 angular (e_x, e_y), 1 linear (e_z)                                                   3
    free         none                                                                                   0
    fixed        3 linear, 3 angular                                                                    6

The angular residuals: revolute, cylindrical, planar C_1 = -(F n2) . (R_i a), C_2 = (F n1) . (R_i a) (the child's
axis stays the parent's); prismatic, fixed: the axial vector of the skew part of F^T R_i; universal:
-((F a1) . (R_i a2) - a1 . a2) / |a1 x a2|. The multipliers of a joint are therefore its constraint force (linear
rows: along the joint frame's axes, at the joint point) and moment components, in ground-axis directions fixed in
the parent. A row r of body i has the child block (g, r_c x g) (linear) or (0, g) (angular) on zd_i and the parent
block (-g, -rho x g) or (0, -g) on zd_p; its gamma (C_v zd'' = gamma) is -(g' . u + g . u0) (linear;
u0 = omega_i x (omega_i x r_c) - omega_p x (c_i' + omega_i x r_c - c_p'), u's rate at zd'' = 0) or -g' . w.

Joint forces tau (nv,) act as a wrench (moment, force at P_c) on the child and its opposite on the parent, the
wrench whose power on the joint's motion is tau . v_j.

Elimination (``tree`` for the derivation): bodies leaves first, 6 x 6 body pivots D_i = M_i + sum of the children's
Jp^T S^-1 Jp and m x m joint pivots S_i = Jc D_i^-1 Jc^T (m <= 6), by Cholesky; a body pivot that is not positive
definite (a point mass whose rotation its joint locks) is regularised by w Jc^T Jc as in ``tree``. O(N) time and
memory. All kernels return a status (``layout.decode_status``).

Loops (``loop_rows``, ``close_loops``): the spatial loop layer's rows (``_kernels.spatial.loops.loop_equations``) on
the absolute velocities of their two bodies, closed on the tree factor as auxiliary rows by their Schur complement.
Drivers (``driver_rows``): the row of a revolute or prismatic joint along its axis, q_j(z) - f(t) = 0, one more
auxiliary row.
"""

import math

import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..layout import (
    STATUS_LOOP_DEGENERATE,
    STATUS_NONFINITE_Q,
    STATUS_NONFINITE_QD,
    STATUS_NONFINITE_TAU,
    STATUS_OK,
    STATUS_SINGULAR,
)
from ..planar.loops import filtered_solve
from ..spatial.layout import (
    A1,
    A2,
    CP,
    CYLINDRICAL,
    FIXED,
    FREE,
    IC,
    JTYPE,
    LAXB,
    LBODY_A,
    LBODY_B,
    LKIND,
    LN1,
    LN2,
    LOOP_REVOLUTE,
    LPA,
    LPB,
    LROW,
    MASS,
    MCOM,
    PARENT,
    PLANAR,
    PP,
    PRISMATIC,
    QUATERNION_TOL,
    R0,
    REVOLUTE,
    SPHERICAL,
    UNIVERSAL,
    VIDX,
)
from ..spatial.loops import loop_equations
from .tree import _row_colours

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)
inline = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True, inline="always")

# constraint rows of each joint type, indexed by the spatial joint codes (revolute .. fixed)
ROWS_PER_JOINT = (5, 5, 4, 4, 3, 3, 0, 6)
# relative pivot tolerance of the Cholesky factorisations (a pivot below it times its diagonal entry is zero)
PIVOT_RTOL = 1e-12


# ---- 3-vectors and 3 x 3 matrices as tuples (registers, no arrays) -------------------------------------------------

@inline
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@inline
def _neg(a):
    return (-a[0], -a[1], -a[2], -a[3], -a[4], -a[5], -a[6], -a[7], -a[8])


@inline
def _skew_mm(a, b):
    """[a] b (a a 3-vector, b a 9-tuple) without the products by [a]'s zeros, which numba keeps (x * 0 is not 0
    for x infinite or NaN): the implicit route's spherical pass (``implicit3d``) with its products by a skew matrix
    written out cost 3-4% less of an iteration at N = 1e4 and 1e5 (``benchmarks/implicit3d.py``)."""
    return (a[1] * b[6] - a[2] * b[3], a[1] * b[7] - a[2] * b[4], a[1] * b[8] - a[2] * b[5],
            a[2] * b[0] - a[0] * b[6], a[2] * b[1] - a[0] * b[7], a[2] * b[2] - a[0] * b[8],
            a[0] * b[3] - a[1] * b[0], a[0] * b[4] - a[1] * b[1], a[0] * b[5] - a[1] * b[2])


@inline
def _mm_skew(m, a):
    """m [a] (m a 9-tuple): row k is m's row k crossed with a."""
    r0 = _cross((m[0], m[1], m[2]), a)
    r1 = _cross((m[3], m[4], m[5]), a)
    r2 = _cross((m[6], m[7], m[8]), a)
    return (r0[0], r0[1], r0[2], r1[0], r1[1], r1[2], r2[0], r2[1], r2[2])


@inline
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@inline
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@inline
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@inline
def _scale(s, a):
    return (s * a[0], s * a[1], s * a[2])


@inline
def _mat_vec(m, a):
    """m a for m a row-major 3 x 3 tuple."""
    return (m[0] * a[0] + m[1] * a[1] + m[2] * a[2], m[3] * a[0] + m[4] * a[1] + m[5] * a[2],
            m[6] * a[0] + m[7] * a[1] + m[8] * a[2])


@inline
def _mat_t_vec(m, a):
    """m^T a."""
    return (m[0] * a[0] + m[3] * a[1] + m[6] * a[2], m[1] * a[0] + m[4] * a[1] + m[7] * a[2],
            m[2] * a[0] + m[5] * a[1] + m[8] * a[2])


@inline
def _column(m, k):
    return (m[k], m[3 + k], m[6 + k])


@inline
def _mat_mat(a, b):
    c0 = _mat_vec(a, _column(b, 0))
    c1 = _mat_vec(a, _column(b, 1))
    c2 = _mat_vec(a, _column(b, 2))
    return (c0[0], c1[0], c2[0], c0[1], c1[1], c2[1], c0[2], c1[2], c2[2])


@inline
def _quaternion_matrix(z, i):
    """The rotation (row-major 9-tuple) of the quaternion z[i, 3:7], normalised, and its norm."""
    w = z[i, 3]
    x = z[i, 4]
    y = z[i, 5]
    s = z[i, 6]
    norm = math.sqrt(w * w + x * x + y * y + s * s)
    inv = 1.0 / norm  # one division, not four (a tenth of the tree solve's time went to them)
    w *= inv
    x *= inv
    y *= inv
    s *= inv
    return (1.0 - 2.0 * (y * y + s * s), 2.0 * (x * y - w * s), 2.0 * (x * s + w * y),
            2.0 * (x * y + w * s), 1.0 - 2.0 * (x * x + s * s), 2.0 * (y * s - w * x),
            2.0 * (x * s - w * y), 2.0 * (y * s + w * x), 1.0 - 2.0 * (x * x + y * y)), norm


@inline
def _vec(arr, i, at):
    return (arr[i, at], arr[i, at + 1], arr[i, at + 2])


@inline
def _com(body_real, i):
    """The centre of mass in the body frame (the origin for a massless body)."""
    mass = body_real[i, MASS]
    if mass > 0.0:
        return (body_real[i, MCOM] / mass, body_real[i, MCOM + 1] / mass, body_real[i, MCOM + 2] / mass)
    return (0.0, 0.0, 0.0)


@inline
def _perpendiculars(a):
    """Unit n1, n2 with (n1, n2, a) right-handed and orthonormal, for the unit vector a."""
    ax = abs(a[0])
    ay = abs(a[1])
    az = abs(a[2])
    if ax <= ay and ax <= az:
        e = (1.0, 0.0, 0.0)
    elif ay <= az:
        e = (0.0, 1.0, 0.0)
    else:
        e = (0.0, 0.0, 1.0)
    n1 = _cross(a, e)
    n1 = _scale(1.0 / math.sqrt(_dot(n1, n1)), n1)
    return n1, _cross(a, n1)


@inline
def _body_state(z, zd, i):
    rot, norm = _quaternion_matrix(z, i)
    return rot, norm, _vec(z, i, 0), _vec(zd, i, 0), _vec(zd, i, 3)


@inline
def _linear_row(jc, jp, res, gam, i, r, g, omp, rc, rho, d, u, u0):
    """A linear row g . u = 0 (g fixed in the parent) of body i into row r of its blocks, residual and gamma."""
    rg = _cross(rc, g)
    pg = _cross(rho, g)
    for c in range(3):
        jc[i, r, c] = g[c]
        jc[i, r, 3 + c] = rg[c]
        jp[i, r, c] = -g[c]
        jp[i, r, 3 + c] = -pg[c]
    res[i, r] = _dot(g, d)
    gam[i, r] = -(_dot(_cross(omp, g), u) + _dot(g, u0))


@inline
def _angular_row(jc, jp, res, gam, i, r, g, gdot, w, residual):
    """An angular row g . w = 0 with the rate g' of g and the residual ``residual``."""
    for c in range(3):
        jc[i, r, c] = 0.0
        jc[i, r, 3 + c] = g[c]
        jp[i, r, c] = 0.0
        jp[i, r, 3 + c] = -g[c]
    res[i, r] = residual
    gam[i, r] = -_dot(gdot, w)


@inline
def joint_rows(body_int, body_real, z, zd, tau, i, jc, jp, res, gam, load):
    """The constraint rows of body i's joint at (z, zd) (module docstring): child and parent blocks into
    jc[i, :m], jp[i, :m] (m, 6), residuals C and gamma into res[i, :m], gam[i, :m]; the joint forces tau (nv,) or
    none (shape (0,)) as generalised forces on the child into load[0] and on the parent into load[1] (6 each).
    Returns m."""
    return _joint_rows(body_int, body_real, z, zd, tau, i, _quaternion_matrix(z, i)[0], jc, jp, res, gam, load)


@inline
def _joint_geometry(body_int, body_real, z, zd, i, rot):
    """The state of body i's joint at (z, zd) (module docstring), ground axes: the parent's joint frame F (3 x 3,
    row-major), omega_p, omega_i, the child's arm r_c, rho = P_c - c_p, the gap d = P_c - P_p, the relative rates
    w and u, and u's rate at zd' = 0, u0; ``rot`` is body i's rotation."""
    p = body_int[i, PARENT]
    c_c = _vec(z, i, 0)
    v_c = _vec(zd, i, 0)
    om_c = _vec(zd, i, 3)
    r0 = (body_real[i, R0], body_real[i, R0 + 1], body_real[i, R0 + 2], body_real[i, R0 + 3], body_real[i, R0 + 4],
          body_real[i, R0 + 5], body_real[i, R0 + 6], body_real[i, R0 + 7], body_real[i, R0 + 8])
    if p >= 0:
        rot_p, _, c_p, v_p, om_p = _body_state(z, zd, p)
        arm_p = _mat_vec(rot_p, _sub(_vec(body_real, i, PP), _com(body_real, p)))
    else:
        rot_p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
        c_p = v_p = om_p = (0.0, 0.0, 0.0)
        arm_p = _vec(body_real, i, PP)
    frame = _mat_mat(rot_p, r0)
    r_c = _mat_vec(rot, _sub(_vec(body_real, i, CP), _com(body_real, i)))
    point_c = _add(c_c, r_c)
    d = _sub(point_c, _add(c_p, arm_p))
    rho = _sub(point_c, c_p)
    w = _sub(om_c, om_p)
    v_point = _add(v_c, _cross(om_c, r_c))
    rel = _sub(v_point, v_p)
    u = _sub(rel, _cross(om_p, rho))
    u0 = _sub(_cross(om_c, _cross(om_c, r_c)), _cross(om_p, rel))
    return frame, om_p, om_c, r_c, rho, d, w, u, u0


@inline
def _joint_rows(body_int, body_real, z, zd, tau, i, rot, jc, jp, res, gam, load):
    """``joint_rows`` with body i's rotation ``rot`` given (the tree solve shares it with ``_body_loads``)."""
    jt = body_int[i, JTYPE]
    frame, om_p, om_c, r_c, rho, d, w, u, u0 = _joint_geometry(body_int, body_real, z, zd, i, rot)
    a = _vec(body_real, i, A1)
    ex = _column(frame, 0)
    ey = _column(frame, 1)
    ez = _column(frame, 2)
    m = 0
    moment = (0.0, 0.0, 0.0)  # the joint forces' wrench on the child (ground axes, force at P_c)
    force = (0.0, 0.0, 0.0)
    has_tau = tau.shape[0] > 0
    k = body_int[i, VIDX]
    if jt in (REVOLUTE, UNIVERSAL, SPHERICAL, FIXED):  # the joint point is common: d = 0
        _linear_row(jc, jp, res, gam, i, 0, ex, om_p, r_c, rho, d, u, u0)
        _linear_row(jc, jp, res, gam, i, 1, ey, om_p, r_c, rho, d, u, u0)
        _linear_row(jc, jp, res, gam, i, 2, ez, om_p, r_c, rho, d, u, u0)
        m = 3
    if jt in (PRISMATIC, FIXED):  # no relative rotation: the axial vector of skew(F^T R_i)
        g0 = ex
        g1 = ey
        g2 = ez
        c0 = _column(rot, 0)
        c1 = _column(rot, 1)
        c2 = _column(rot, 2)
        _angular_row(jc, jp, res, gam, i, m, g0, _cross(om_p, g0), w, 0.5 * (_dot(g2, c1) - _dot(g1, c2)))
        _angular_row(jc, jp, res, gam, i, m + 1, g1, _cross(om_p, g1), w, 0.5 * (_dot(g0, c2) - _dot(g2, c0)))
        _angular_row(jc, jp, res, gam, i, m + 2, g2, _cross(om_p, g2), w, 0.5 * (_dot(g1, c0) - _dot(g0, c1)))
        m += 3
    if jt in (REVOLUTE, CYLINDRICAL, PLANAR):  # the child's axis stays the parent's
        axis = (0.0, 0.0, 1.0) if jt == PLANAR else a
        n1, n2 = _perpendiculars(axis)
        g1 = _mat_vec(frame, n1)
        g2 = _mat_vec(frame, n2)
        child_axis = _mat_vec(rot, axis)
        _angular_row(jc, jp, res, gam, i, m, g1, _cross(om_p, g1), w, -_dot(g2, child_axis))
        _angular_row(jc, jp, res, gam, i, m + 1, g2, _cross(om_p, g2), w, _dot(g1, child_axis))
        m += 2
    if jt in (PRISMATIC, CYLINDRICAL):  # the joint point slides along the axis only
        n1, n2 = _perpendiculars(a)
        _linear_row(jc, jp, res, gam, i, m, _mat_vec(frame, n1), om_p, r_c, rho, d, u, u0)
        _linear_row(jc, jp, res, gam, i, m + 1, _mat_vec(frame, n2), om_p, r_c, rho, d, u, u0)
        m += 2
    if jt == PLANAR:  # the joint point stays in the plane
        _linear_row(jc, jp, res, gam, i, m, ez, om_p, r_c, rho, d, u, u0)
        m += 1
    if jt == UNIVERSAL:  # the angle between a1 (parent) and a2 (child) is kept
        b = _vec(body_real, i, A2)
        size = math.sqrt(_dot(_cross(a, b), _cross(a, b)))
        g1 = _mat_vec(frame, a)
        g2 = _mat_vec(rot, b)
        g = _scale(1.0 / size, _cross(g1, g2))
        gdot = _scale(1.0 / size, _add(_cross(_cross(om_p, g1), g2), _cross(g1, _cross(om_c, g2))))
        _angular_row(jc, jp, res, gam, i, m, g, gdot, w, -(_dot(g1, g2) - _dot(a, b)) / size)
        m += 1
    if has_tau:
        force, moment = joint_wrench(body_real, jt, i, frame, rot, tau, k)
    for r in range(m, 6):  # rows m .. 5 of the blocks are not read; the residuals' are zero (max |C| reads them)
        res[i, r] = 0.0
        gam[i, r] = 0.0
    child_moment = _add(moment, _cross(r_c, force))
    parent_moment = _add(moment, _cross(rho, force))
    for c in range(3):
        load[0, c] = force[c]
        load[0, 3 + c] = child_moment[c]
        load[1, c] = -force[c]
        load[1, 3 + c] = -parent_moment[c]
    return m


@inline
def joint_wrench(body_real, jt, i, frame, rot, tau, k):
    """(force, moment) of the joint forces tau[k:k + nv_j] of body i's joint (type jt, parent's joint frame F =
    ``frame``, child rotation ``rot``) on the child, ground axes, the force at the joint point P_c: the wrench whose
    power on the joint's motion is tau . v_j (module docstring); its opposite acts on the parent."""
    moment = (0.0, 0.0, 0.0)
    force = (0.0, 0.0, 0.0)
    a = _vec(body_real, i, A1)
    if jt == REVOLUTE:
        moment = _scale(tau[k], _mat_vec(frame, a))
    elif jt == PRISMATIC:
        force = _scale(tau[k], _mat_vec(frame, a))
    elif jt == CYLINDRICAL:
        moment = _scale(tau[k], _mat_vec(frame, a))
        force = _scale(tau[k + 1], _mat_vec(frame, a))
    elif jt == UNIVERSAL:  # omega_rel = g1 alpha' + g2 beta' in ground axes: the dual basis of (g1, g2) in their plane
        g1 = _mat_vec(frame, a)
        g2 = _mat_vec(rot, _vec(body_real, i, A2))
        n = _cross(g1, g2)
        nn = _dot(n, n)
        moment = _scale(1.0 / nn, _add(_scale(tau[k], _cross(g2, n)), _scale(tau[k + 1], _cross(n, g1))))
    elif jt == SPHERICAL:  # a moment in the child's axes
        moment = _mat_vec(rot, (tau[k], tau[k + 1], tau[k + 2]))
    elif jt == PLANAR:
        force = _add(_scale(tau[k], _column(frame, 0)), _scale(tau[k + 1], _column(frame, 1)))
        moment = _scale(tau[k + 2], _column(frame, 2))
    elif jt == FREE:  # the force in the joint frame, the moment in the child's axes
        force = _mat_vec(frame, (tau[k], tau[k + 1], tau[k + 2]))
        moment = _mat_vec(rot, (tau[k + 3], tau[k + 4], tau[k + 5]))
    return force, moment


@inline
def body_loads(body_real, gravity, z, zd, i, out):
    """The body's mass matrix M_i = diag(m 1, J) into out[:6, :6] and its applied force (m g, -omega x J omega)
    into out[6, :6] (ground axes)."""
    _body_loads(body_real, gravity, _quaternion_matrix(z, i)[0], _vec(zd, i, 3), i, out)


@inline
def _body_loads(body_real, gravity, rot, om, i, out):
    """``body_loads`` with the body's rotation and angular velocity given."""
    mass = body_real[i, MASS]
    xx = body_real[i, IC]
    yy = body_real[i, IC + 1]
    zz = body_real[i, IC + 2]
    xy = body_real[i, IC + 3]
    xz = body_real[i, IC + 4]
    yz = body_real[i, IC + 5]
    inertia = (xx, xy, xz, xy, yy, yz, xz, yz, zz)
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    for r in range(3):
        out[r, r] = mass
    # J = R J_c R^T, a column at a time
    for c in range(3):
        col = _mat_vec(rot, _mat_vec(inertia, (rot[3 * c], rot[3 * c + 1], rot[3 * c + 2])))
        for r in range(3):
            out[3 + r, 3 + c] = col[r]
    spin = (out[3, 3] * om[0] + out[3, 4] * om[1] + out[3, 5] * om[2],
            out[4, 3] * om[0] + out[4, 4] * om[1] + out[4, 5] * om[2],
            out[5, 3] * om[0] + out[5, 4] * om[1] + out[5, 5] * om[2])
    gyro = _cross(om, spin)
    for c in range(3):
        out[6, c] = mass * gravity[c]
        out[6, 3 + c] = -gyro[c]


@njit
def assemble(body_int, body_real, gravity, z, zd, tau, mass, force, jc, jp, res, gam):
    """Every body's mass matrix (nbodies, 6, 6) and applied force (nbodies, 6) with the joint forces tau (nv,)
    or none (0,), and every joint's rows (``joint_rows``), for the sparse and dense routes. Returns the status."""
    n = body_int.shape[0]
    load = np.empty((2, 6))
    block = np.empty((7, 6))
    for k in range(tau.shape[0]):
        if not math.isfinite(tau[k]):
            return STATUS_NONFINITE_TAU | (k << 4)
    for i in range(n):
        status = _check_body(z, zd, i)
        if status:
            return status
    for i in range(n):
        for c in range(6):
            force[i, c] = 0.0
    for i in range(n - 1, -1, -1):
        body_loads(body_real, gravity, z, zd, i, block)
        for r in range(6):
            for c in range(6):
                mass[i, r, c] = block[r, c]
            force[i, r] += block[6, r]
        joint_rows(body_int, body_real, z, zd, tau, i, jc, jp, res, gam, load)
        p = body_int[i, PARENT]
        for c in range(6):
            force[i, c] += load[0, c]
            if p >= 0:
                force[p, c] += load[1, c]
    return STATUS_OK


@inline
def _check_body(z, zd, i):
    """STATUS_NONFINITE_Q for a non-finite z or a quaternion off unit norm by more than QUATERNION_TOL (the caller
    tells them apart), STATUS_NONFINITE_QD for a non-finite zd, of body i."""
    for c in range(7):
        if not math.isfinite(z[i, c]):
            return STATUS_NONFINITE_Q | (i << 4)
    norm = math.sqrt(z[i, 3] * z[i, 3] + z[i, 4] * z[i, 4] + z[i, 5] * z[i, 5] + z[i, 6] * z[i, 6])
    if not abs(norm - 1.0) <= QUATERNION_TOL:
        return STATUS_NONFINITE_Q | (i << 4)
    for c in range(6):
        if not math.isfinite(zd[i, c]):
            return STATUS_NONFINITE_QD | (i << 4)
    return STATUS_OK


# ---- the tree solve -------------------------------------------------------------------------------------------------

@inline
def _cholesky_inverse(a, size, out, i, rtol):
    """out[i, :size, :size] = the inverse of the symmetric positive definite a[:size, :size] (its lower triangle is
    read) by Cholesky; a is overwritten. Returns False when a pivot falls below rtol times its diagonal entry (not
    numerically positive definite)."""
    for j in range(size):
        diag = a[j, j]
        s = diag
        for k in range(j):
            s -= a[j, k] * a[j, k]
        if not s > rtol * abs(diag) or not s > 0.0:
            return False
        ljj = math.sqrt(s)
        a[j, j] = ljj
        for r in range(j + 1, size):
            s = a[r, j]
            for k in range(j):
                s -= a[r, k] * a[j, k]
            a[r, j] = s / ljj
    for c in range(size):  # X = L^-1 (lower) into out, column by column
        for r in range(size):
            if r < c:
                out[i, r, c] = 0.0
                continue
            s = 1.0 if r == c else 0.0
            for k in range(c, r):
                s -= a[r, k] * out[i, k, c]
            out[i, r, c] = s / a[r, r]
    for c in range(size):  # the inverse X^T X, lower triangle into a (L is read no more)
        for r in range(c, size):
            s = 0.0
            for k in range(r, size):
                s += out[i, k, r] * out[i, k, c]
            a[r, c] = s
    for r in range(size):
        for c in range(r + 1):
            out[i, r, c] = a[r, c]
            out[i, c, r] = a[r, c]
    return True


@inline
def _sym3_inverse(a, tol):
    """(ok, the inverse) of the symmetric 3 x 3 matrix a (row-major 9-tuple) by cofactors; ok is False when it is
    not numerically positive definite (its determinant below tol times the product of its diagonal: Hadamard)."""
    c00 = a[4] * a[8] - a[5] * a[5]
    c01 = a[2] * a[5] - a[1] * a[8]
    c02 = a[1] * a[5] - a[2] * a[4]
    det = a[0] * c00 + a[1] * c01 + a[2] * c02
    if not (det > tol * a[0] * a[4] * a[8] and a[0] > 0.0 and a[4] > 0.0 and a[8] > 0.0):
        return False, a
    inv = 1.0 / det
    c11 = (a[0] * a[8] - a[2] * a[2]) * inv
    c12 = (a[1] * a[2] - a[0] * a[5]) * inv
    c22 = (a[0] * a[4] - a[1] * a[1]) * inv
    c00 *= inv
    c01 *= inv
    c02 *= inv
    return True, (c00, c01, c02, c01, c11, c12, c02, c12, c22)


@inline
def _mat_t_mat(a, b):
    """a^T b of row-major 9-tuples."""
    c0 = _mat_t_vec(a, _column(b, 0))
    c1 = _mat_t_vec(a, _column(b, 1))
    c2 = _mat_t_vec(a, _column(b, 2))
    return (c0[0], c1[0], c2[0], c0[1], c1[1], c2[1], c0[2], c1[2], c2[2])


@inline
def _mat_mat_t(a, b):
    """a b^T of row-major 9-tuples."""
    c0 = _mat_vec(a, (b[0], b[1], b[2]))
    c1 = _mat_vec(a, (b[3], b[4], b[5]))
    c2 = _mat_vec(a, (b[6], b[7], b[8]))
    return (c0[0], c1[0], c2[0], c0[1], c1[1], c2[1], c0[2], c1[2], c2[2])


# out of line: inlined at its three call sites in factor_and_solve it doubled that kernel's compile time (the first
# call took 36 s of CPU against 19 s out of line, at the same run time)
@njit
def _spd6_inverse(d, out, i, tol):
    """out[i] = the inverse of the symmetric 6 x 6 matrix d (its lower triangle read) by its 3 x 3 blocks
    [[A, B^T], [B, C]]: with K = A^-1 B^T and the Schur complement Z = C - B K, the inverse is
    [[A^-1 + K Z^-1 K^T, -K Z^-1], [-Z^-1 K^T, Z^-1]]. Returns False when A or Z is not numerically positive
    definite (``_sym3_inverse``'s test with ``tol``)."""
    a = (d[0, 0], d[1, 0], d[2, 0], d[1, 0], d[1, 1], d[2, 1], d[2, 0], d[2, 1], d[2, 2])
    bt = (d[3, 0], d[4, 0], d[5, 0], d[3, 1], d[4, 1], d[5, 1], d[3, 2], d[4, 2], d[5, 2])  # B^T (rows of A's side)
    c = (d[3, 3], d[4, 3], d[5, 3], d[4, 3], d[4, 4], d[5, 4], d[5, 3], d[5, 4], d[5, 5])
    ok, ai = _sym3_inverse(a, tol)
    if not ok:
        return False
    k = _mat_mat(ai, bt)
    bk = _mat_t_mat(bt, k)
    ok, zi = _sym3_inverse((c[0] - bk[0], c[1] - bk[1], c[2] - bk[2], c[3] - bk[3], c[4] - bk[4], c[5] - bk[5],
                            c[6] - bk[6], c[7] - bk[7], c[8] - bk[8]), tol)
    if not ok:
        return False
    kz = _mat_mat(k, zi)
    top = _mat_mat_t(kz, k)
    for r in range(3):
        for col in range(3):
            out[i, r, col] = ai[3 * r + col] + top[3 * r + col]
            out[i, r, 3 + col] = -kz[3 * r + col]
            out[i, 3 + col, r] = -kz[3 * r + col]
            out[i, 3 + r, 3 + col] = zi[3 * r + col]
    return True


@inline
def _clear(sinv, zdd, i):
    for r in range(6):
        zdd[i, r] = 0.0
        for c in range(6):
            sinv[i, r, c] = 0.0


@njit
def factor_and_solve(body_int, body_real, gravity, row_start, z, zd, tau, wrench, stab, dinv, sinv, jc, jp, wreg,
                     res, gam, zdd, lam, power):
    """The KKT system's factor and solution in one leaves-first pass and one roots-first pass: zdd (nbodies, 6) and
    the tree multipliers lam[:row_start[-1]]. ``tau`` (nv,) or (0,); ``wrench`` (nbodies, 6) or (0, 6) loads at the
    centres of mass (force, moment; ground axes); stab = (alpha, beta) of Baumgarte's terms. dinv, sinv, jc, jp
    (nbodies, 6, 6), wreg (nbodies,), res, gam (nbodies, 6) are the factor, kept for ``tree_solve``; power[0]
    receives the power of tau. Returns the status (z, zd, tau not finite; a singular pivot: its body)."""
    n = body_int.shape[0]
    alpha = stab[0]
    beta = stab[1]
    load = np.empty((2, 6))
    block = np.empty((7, 6))
    ydm = np.empty((6, 6))
    y = np.empty(12)
    for k in range(tau.shape[0]):
        if not math.isfinite(tau[k]):
            return STATUS_NONFINITE_TAU | (k << 4)
    has_wrench = wrench.shape[0] > 0
    tau_power = 0.0
    for i in range(n):
        status = _check_body(z, zd, i)
        if status:
            return status
        # the children's sum of Jp^T S^-1 Jp accumulates in sinv[i] and their loads in zdd[i] until body i is reached;
        # both are cleared by the first child to come (or by body i itself, a leaf), which wreg[i] < 0 tells: one
        # pass over 8 bytes a body rather than 336
        wreg[i] = -1.0
    for i in range(n - 1, -1, -1):
        p = body_int[i, PARENT]
        if wreg[i] < 0.0:
            _clear(sinv, zdd, i)
        if p >= 0 and wreg[p] < 0.0:
            _clear(sinv, zdd, p)
            wreg[p] = 0.0
        rot = _quaternion_matrix(z, i)[0]
        m = _joint_rows(body_int, body_real, z, zd, tau, i, rot, jc, jp, res, gam, load)
        _body_loads(body_real, gravity, rot, _vec(zd, i, 3), i, block)
        for c in range(6):
            zdd[i, c] += block[6, c] + load[0, c]
            if has_wrench:
                zdd[i, c] += wrench[i, c]
            tau_power += load[0, c] * zd[i, c]
            if p >= 0:
                zdd[p, c] += load[1, c]
                tau_power += load[1, c] * zd[p, c]
        for r in range(6):
            for c in range(6):
                block[r, c] += sinv[i, r, c]
                ydm[r, c] = block[r, c]
        w = 0.0
        if not _spd6_inverse(ydm, dinv, i, 1e-8):
            if m == 0:
                return STATUS_SINGULAR | (i << 4)
            trace = 0.0
            norm = 0.0
            for r in range(6):
                trace += block[r, r]
                for c in range(m):
                    norm += jc[i, c, r] * jc[i, c, r]
            w = max(trace, 1e-300) / norm
            for r in range(6):
                for c in range(6):
                    s = block[r, c]
                    for k in range(m):
                        s += w * jc[i, k, r] * jc[i, k, c]
                    ydm[r, c] = s
            if not _spd6_inverse(ydm, dinv, i, PIVOT_RTOL):
                return STATUS_SINGULAR | (i << 4)
        wreg[i] = w
        if m == 0:
            continue
        r0 = row_start[i]
        # the products run over the joint's m rows outermost and 6 columns innermost (fixed: LLVM unrolls and
        # vectorises them); S is padded with the identity beyond its m rows for the 6 x 6 block inverse
        for c in range(m):  # Y = D^-1 Jc^T (6 x m) into ydm
            for r in range(6):
                s = 0.0
                for k in range(6):
                    s += dinv[i, r, k] * jc[i, c, k]
                ydm[r, c] = s
        for r in range(6):  # S = Jc Y into block, its lower triangle (all that _spd6_inverse reads)
            for c in range(6):
                block[r, c] = 1.0 if r == c else 0.0
        for r in range(m):
            for c in range(r + 1):
                s = 0.0
                for k in range(6):
                    s += jc[i, r, k] * ydm[k, c]
                block[r, c] = s
        for r in range(m):
            rate = 0.0
            for c in range(6):
                rate += jc[i, r, c] * zd[i, c]
                if p >= 0:
                    rate += jp[i, r, c] * zd[p, c]
            lam[r0 + r] = gam[i, r] - 2.0 * alpha * rate - beta * beta * res[i, r]
        if not _spd6_inverse(block, sinv, i, PIVOT_RTOL):
            return STATUS_SINGULAR | (i << 4)
        _eliminate(body_int, row_start, dinv, sinv, jc, jp, wreg, i, m, zdd, lam, y)
        if p >= 0:  # the parent's pivot gains Jp^T (S^-1 - w I) Jp
            for r in range(m):
                for c in range(6):
                    s = -w * jp[i, r, c]
                    for k in range(m):
                        s += sinv[i, r, k] * jp[i, k, c]
                    ydm[r, c] = s  # (S^-1 - w I) Jp
            for k in range(m):  # its lower triangle only: the parent's pivot is read from there
                for r in range(6):
                    jkr = jp[i, k, r]
                    for c in range(r + 1):
                        sinv[p, r, c] += jkr * ydm[k, c]
    _back_substitute(body_int, row_start, dinv, sinv, jc, jp, wreg, zdd, lam)
    power[0] = tau_power
    return STATUS_OK


@inline
def _eliminate(body_int, row_start, dinv, sinv, jc, jp, wreg, i, m, xb, xj, y):
    """Forward elimination of body i's joint (m rows): (regularised pivot: x_i += w Jc^T x_j), x_j -= Jc D_i^-1 x_i,
    then x_p += Jp^T S^-1 x_j. y (12,) is scratch."""
    r0 = row_start[i]
    w = wreg[i]
    if w != 0.0:
        for r in range(m):
            for c in range(6):
                xb[i, c] += w * jc[i, r, c] * xj[r0 + r]
    for r in range(6):  # y = D^-1 x_i
        s = 0.0
        for c in range(6):
            s += dinv[i, r, c] * xb[i, c]
        y[r] = s
    for r in range(m):
        s = 0.0
        for c in range(6):
            s += jc[i, r, c] * y[c]
        xj[r0 + r] -= s
    p = body_int[i, PARENT]
    if p >= 0:
        for r in range(m):
            s = 0.0
            for c in range(m):
                s += sinv[i, r, c] * xj[r0 + c]
            for c in range(6):
                xb[p, c] += jp[i, r, c] * s


@njit
def _back_substitute(body_int, row_start, dinv, sinv, jc, jp, wreg, xb, xj):
    """Roots first: x_j = S^-1 (Jp x_p - x_j), x_i = D_i^-1 (x_i - Jc^T x_j) (a regularised pivot: x_j loses
    w Jp x_p afterwards)."""
    t = np.empty(6)
    b = np.empty(6)
    for i in range(body_int.shape[0]):
        p = body_int[i, PARENT]
        m = ROWS_PER_JOINT[body_int[i, JTYPE]]
        r0 = row_start[i]
        for c in range(6):
            b[c] = xb[i, c]
        for r in range(m):
            s = -xj[r0 + r]
            if p >= 0:
                for c in range(6):
                    s += jp[i, r, c] * xb[p, c]
            t[r] = s
        w = wreg[i]
        for r in range(m):
            lam = 0.0
            for c in range(m):
                lam += sinv[i, r, c] * t[c]
            for c in range(6):
                b[c] -= jc[i, r, c] * lam
            if w != 0.0 and p >= 0:
                for c in range(6):
                    lam -= w * jp[i, r, c] * xb[p, c]
            xj[r0 + r] = lam
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += dinv[i, r, c] * b[c]
            xb[i, r] = s


@njit
def tree_solve(body_int, row_start, dinv, sinv, jc, jp, wreg, xb, xj):
    """Solve H x = b with the factor of ``factor_and_solve``: xb (nbodies, 6) and xj (tree rows) hold b on entry, x
    on return. O(N)."""
    y = np.empty(12)
    for i in range(body_int.shape[0] - 1, -1, -1):
        m = ROWS_PER_JOINT[body_int[i, JTYPE]]
        if m > 0:
            _eliminate(body_int, row_start, dinv, sinv, jc, jp, wreg, i, m, xb, xj, y)
    _back_substitute(body_int, row_start, dinv, sinv, jc, jp, wreg, xb, xj)


# ---- loops: auxiliary rows on the tree solve ------------------------------------------------------------------------

@inline
def _loop_point(body_real, z, zd, body, loop_real, lp, at, point, o):
    """point[o:o+15] = the state of the loop point loop_real[lp, at:at+3] (body frame) of ``body`` in the layout of
    the spatial loop layer (``_kernels.spatial.loops._point_state``): position, velocity, acceleration at zd' = 0
    (omega x (omega x r)), angular velocity, angular acceleration at zd' = 0 (none), ground axes; the ground holds
    it fixed. Returns the arm r = P - c (ground axes) and the body's rotation."""
    for m in range(15):
        point[o + m] = 0.0
    local = _vec(loop_real, lp, at)
    if body < 0:
        for m in range(3):
            point[o + m] = local[m]
        return (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    rot, _, c, v, om = _body_state(z, zd, body)
    arm = _mat_vec(rot, _sub(local, _com(body_real, body)))
    spin = _cross(om, arm)
    curve = _cross(om, spin)
    for m in range(3):
        point[o + m] = c[m] + arm[m]
        point[o + 3 + m] = v[m] + spin[m]
        point[o + 6 + m] = curve[m]
        point[o + 9 + m] = om[m]
    return arm, rot


@njit
def loop_rows(body_real, loop_int, loop_real, z, zd, stab, point, axes, weights, aux_body, aux_coef, aux_rhs,
              aux_res):
    """The loops' rows (``_kernels.spatial.loops.loop_equations``: the spatial loop layer's rows, residuals, gamma
    and weights) in absolute coordinates: row r acts on the bodies aux_body[r] = (a, b) (-1: the ground) with the
    coefficients aux_coef[r] = (on zd_a (6), on zd_b (6)); a weight (w_lin, w_ang) on (v(P), omega) of a body is
    (w_lin, w_ang + r x w_lin) on its (c', omega), r = P - c. aux_res = C, aux_rhs = gamma - 2 alpha C' - beta^2 C
    (stab = (alpha, beta)). weights (k, 12) receives the loop layer's weights (the loop forces); point (40,) and
    axes (9,) are scratch. Returns the status (a distance loop whose points coincide)."""
    alpha = stab[0]
    beta = stab[1]
    weights[:, :] = 0.0
    for lp in range(loop_int.shape[0]):
        kind = loop_int[lp, LKIND]
        a = loop_int[lp, LBODY_A]
        b = loop_int[lp, LBODY_B]
        r0 = loop_int[lp, LROW]
        arm_a, rot_a = _loop_point(body_real, z, zd, a, loop_real, lp, LPA, point, 0)
        arm_b, rot_b = _loop_point(body_real, z, zd, b, loop_real, lp, LPB, point, 15)
        if kind == LOOP_REVOLUTE:  # body b's axis and body a's two normals in ground axes
            u = _mat_vec(rot_b, _vec(loop_real, lp, LAXB))
            n1 = _mat_vec(rot_a, _vec(loop_real, lp, LN1))
            n2 = _mat_vec(rot_a, _vec(loop_real, lp, LN2))
            for m in range(3):
                axes[m] = u[m]
                axes[3 + m] = n1[m]
                axes[6 + m] = n2[m]
        nrows = loop_equations(loop_real, lp, kind, r0, point, axes, aux_res, aux_rhs, weights)
        if nrows == 0:
            return STATUS_LOOP_DEGENERATE | (lp << 4)
        for r in range(r0, r0 + nrows):
            aux_body[r, 0] = a
            aux_body[r, 1] = b
            rate = 0.0
            for side in range(2):
                body = a if side == 0 else b
                arm = arm_a if side == 0 else arm_b
                o = 6 * side
                lin = (weights[r, o], weights[r, o + 1], weights[r, o + 2])
                moment = _add((weights[r, o + 3], weights[r, o + 4], weights[r, o + 5]), _cross(arm, lin))
                for c in range(3):
                    aux_coef[r, o + c] = lin[c] if body >= 0 else 0.0
                    aux_coef[r, o + 3 + c] = moment[c] if body >= 0 else 0.0
                if body >= 0:
                    for c in range(6):
                        rate += aux_coef[r, o + c] * zd[body, c]
            aux_rhs[r] -= 2.0 * alpha * rate + beta * beta * aux_res[r]
    return STATUS_OK


@inline
def driver_row(body_int, body_real, z, zd, i, f):
    """The row q_j(z) - f = 0 of body i's driven joint (revolute or prismatic) at (z, zd): the joint's velocity v_j
    is the component along g = F a (the axis in ground axes, fixed in the parent) of w (revolute) or of u
    (prismatic), the direction its constraint rows leave free, so the row is the joint rows' angular or linear row
    along g (``_joint_rows``). Returns (child block's linear and angular parts, parent block's (for a parent),
    C = q_j(z) - f (a revolute angle's difference wrapped to (-pi, pi]: the angle about a of F^T R_i, as
    ``recursive_mbd.dynamics.augmented3d.joint_from_absolute`` reads it; a prismatic joint's g . d - f), v_j, and
    g' . w (or g' . u + g . u0): v_j's rate at zd' = 0), 3-tuples and floats."""
    rot = _quaternion_matrix(z, i)[0]
    frame, om_p, _, r_c, rho, d, w, rel, u0 = _joint_geometry(body_int, body_real, z, zd, i, rot)
    a = _vec(body_real, i, A1)
    g = _mat_vec(frame, a)
    gdot = _cross(om_p, g)
    if body_int[i, JTYPE] == REVOLUTE:
        n1 = _mat_vec(frame, _perpendiculars(a)[0])
        turned = _mat_vec(rot, _perpendiculars(a)[0])
        gap = math.atan2(_dot(g, _cross(n1, turned)), _dot(n1, turned)) - f
        gap = math.atan2(math.sin(gap), math.cos(gap))
        zero = (0.0, 0.0, 0.0)
        return zero, g, zero, _scale(-1.0, g), gap, _dot(g, w), _dot(gdot, w)
    return (g, _cross(r_c, g), _scale(-1.0, g), _scale(-1.0, _cross(rho, g)), _dot(g, d) - f, _dot(g, rel),
            _dot(gdot, rel) + _dot(g, u0))


@njit
def driver_rows(body_int, body_real, z, zd, drv, u, stab, aux_body, aux_coef, aux_rhs, aux_res):
    """Row q_j(z) - f(t) = 0 of each driven joint (revolute or prismatic) as an auxiliary row (``driver_row``): drv
    (nd, 2) = (body i, slot of f in u; f', f'' follow it); aux_body[j] = (i, parent), aux_coef[j] = (child block,
    parent block), aux_res = C = q_j(z) - f, aux_rhs = f'' - g' . w (or f'' - g' . u - g . u0) - 2 alpha (C') -
    beta^2 C with C' = v_j - f' and stab = (alpha, beta). Its multiplier is minus the driving force (torque) along
    g."""
    alpha = stab[0]
    beta = stab[1]
    for j in range(drv.shape[0]):
        i = drv[j, 0]
        slot = drv[j, 1]
        p = body_int[i, PARENT]
        child_lin, child_ang, parent_lin, parent_ang, gap, rate, bias = driver_row(body_int, body_real, z, zd, i,
                                                                                   u[slot])
        aux_body[j, 0] = i
        aux_body[j, 1] = p
        for c in range(3):
            aux_coef[j, c] = child_lin[c]
            aux_coef[j, 3 + c] = child_ang[c]
            aux_coef[j, 6 + c] = parent_lin[c] if p >= 0 else 0.0
            aux_coef[j, 9 + c] = parent_ang[c] if p >= 0 else 0.0
        aux_res[j] = gap
        aux_rhs[j] = u[slot + 2] - bias - 2.0 * alpha * (rate - u[slot + 1]) - beta * beta * gap


@inline
def _aux_times(aux_body, aux_coef, r, x):
    """Row r of E times the body vector x (nbodies, 6)."""
    v = 0.0
    for side in range(2):
        body = aux_body[r, side]
        if body >= 0:
            for c in range(6):
                v += aux_coef[r, 6 * side + c] * x[body, c]
    return v


@inline
def _aux_load(aux_body, aux_coef, r, scale, xb):
    """xb += scale * (row r of E)^T."""
    for side in range(2):
        body = aux_body[r, side]
        if body >= 0:
            for c in range(6):
                xb[body, c] += scale * aux_coef[r, 6 * side + c]


@njit
def close_loops(body_int, row_start, dinv, sinv, jc, jp, wreg, aux_body, aux_coef, aux_rhs, rcond, xb, xj, mu, yb,
                yj, schur):
    """Close the auxiliary rows E zd' = aux_rhs (the loops', ``loop_rows``) on the tree solution x0 = (xb, xj) of
    H x = b (the factor of ``factor_and_solve``): the multipliers mu (k,) of the whole system [[H, E^T], [E, 0]]
    from the Schur complement, E H^-1 E^T mu = E x0 - aux_rhs, and x = x0 - H^-1 E^T mu in place. The Schur
    complement is the recursive loop layer's J M^-1 J^T (the tree rows eliminated), built by one tree solve per
    colour of rows on disjoint subtrees (``tree._row_colours``: O(colours N + k^2)), and solved by that layer's
    filtered regularised solve (``planar.loops.filtered_solve``: minimum-norm multipliers for redundant rows).
    yb (nbodies, 6), yj (tree rows) and schur (k, k) are scratch. Returns the numerical rank of E H^-1 E^T, or
    -1 when it or the right-hand side is not finite."""
    k = aux_body.shape[0]
    colour, ncolours, root = _row_colours(body_int, aux_body)
    owner = np.full(body_int.shape[0], -1, dtype=np.int64)  # owner[b]: the row of the colour on subtree b
    schur[:, :] = 0.0
    for c in range(ncolours):
        yb[:, :] = 0.0
        yj[:] = 0.0
        for r in range(k):
            if colour[r] == c:
                _aux_load(aux_body, aux_coef, r, 1.0, yb)
                for side in range(2):
                    body = aux_body[r, side]
                    if body >= 0:
                        owner[root[body]] = r
        tree_solve(body_int, row_start, dinv, sinv, jc, jp, wreg, yb, yj)
        for s in range(k):
            for side in range(2):
                body = aux_body[s, side]
                if body < 0:
                    continue
                r = owner[root[body]]
                if r < 0 or colour[r] != c:
                    continue
                for col in range(6):
                    schur[s, r] += aux_coef[s, 6 * side + col] * yb[body, col]
    for r in range(k):  # symmetrise the round-off
        for s in range(r):
            mean = 0.5 * (schur[r, s] + schur[s, r])
            schur[r, s] = mean
            schur[s, r] = mean
    rhs = np.empty(k)
    for r in range(k):
        rhs[r] = _aux_times(aux_body, aux_coef, r, xb) - aux_rhs[r]
    rank = filtered_solve(schur, rhs, rcond, mu)
    if rank < 0:
        return rank
    yb[:, :] = 0.0
    yj[:] = 0.0
    for r in range(k):
        _aux_load(aux_body, aux_coef, r, -mu[r], yb)
    tree_solve(body_int, row_start, dinv, sinv, jc, jp, wreg, yb, yj)
    for i in range(xb.shape[0]):
        for c in range(6):
            xb[i, c] += yb[i, c]
    for r in range(xj.shape[0]):
        xj[r] += yj[r]
    return rank
