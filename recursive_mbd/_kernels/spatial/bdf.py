"""method="bdf" on a spatial tree (``Model3D``): the Newton pieces of ``planar.bdf.integrate_bdf`` for the
spatial system.

One BDF time loop serves the planar and the spatial models: ``planar.bdf.integrate_bdf`` (step and order control,
the backward differences, STALD, dense output, events, work terms) calls the hooks declared in
``timeloops.newton`` (``newton_workspace``, ``corrector_predict``, ``corrector_residual``, ``newton_factor``,
``newton_update``, ``filtered_change``, ``accept_step``); this module registers their implementations for
``SpatialSystem`` with ``numba.extending.overload`` (compiled without reference counting, ``HOOK_OPTIONS``),
reusing the spatial
generalised-alpha kernels (``_kernels.spatial.implicit``: the RNEA residual and the O(N) factorisation of its
Newton matrix).

State and equations
-------------------
The state is the explicit spatial loops' y = (q (nq), v (nv), W_dissipated, W_applied) (``spatial.system``), with
each quaternion in R^4, and BDF integrates the same right-hand side f: q' = G(q) v (G per joint: the identity for
Euclidean coordinates, quat' = 1/2 quat (x) (0, omega) for a quaternion, at the quaternion as it is), v' = the
forward dynamics at the normalised q. Carrying (q, v) in their own coordinates keeps the BDF machinery (backward
differences, interpolation, error norm) a vector one; a Lie-group BDF (local charts per step) would need the
history re-expressed in the chart of every new step, for the same order of accuracy.

Newton on the second-order structure (the planar derivation of ``_kernels.planar.bdf``, in velocity coordinates): the
unknowns are the accelerations vdot of the new step, v_new = v_pred + d_v with d_v = c vdot - psi_v, and the q rows
are kept exactly,

    d_q = c G(q_new) v_new - psi_q,      q_new = q_pred + d_q,

by evaluating them at every iteration with G at the current iterate's q (so a converged step satisfies the BDF
corrector of every row; for Euclidean coordinates d_q changes by -c^2 dx exactly as on a planar model). The v rows
are M(q_new) vdot + h(q_new, v_new) - tau - Q_elements = 0: their residual is one recursive Newton-Euler pass
(``spatial_implicit.spatial_residual``) at the normalised q_new. With dv_new = c dvdot and dq_new = c^2 G dvdot (a
quaternion turned by the tangent increment c^2 dvdot, to first order), dR/dvdot = M + c C + c^2 K: the Newton matrix
of spatial generalised-alpha with c_mass = 1, c_damp = c, c_stiff = c^2,

    S = M(q) + c^2 sum_b T_b^T K_b T_b + diag(c^2 k_j + c c_j),

factorised by the articulated-body elimination and applied by two sweeps (``spatial_implicit.effective_factor`` /
``effective_apply``; no nv x nv matrix), with the same fallback to S without gravity's stiffness where
M + c^2 K is not positive definite. Exact and lagged terms are those listed in
``recursive_mbd.integrate.spatial_implicit`` (velocity products, point-to-point elements, forces and torques,
d(M vdot)/dq, tau's dependence on (q, v), the spherical spring's J_r^-1 - 1, gravity's parent-child coupling);
lagged in addition: the dependence of the quaternion rows on q through G (d(quat (x) (0, omega))/d quat, of
relative size c |omega| / 2 per iteration, as the gyroscopic terms already lagged), which the G at the previous
iterate carries. A lagged term only slows the
contraction; the converged step is the BDF step. The modified-Newton strategy (factors reused over the steps of
one c, CVODE's rate test, refactorisation of slow stale factors) is the shared loop's.

Unit quaternions
----------------
After a step passes its error test, its quaternions are renormalised and the corrections d of their rows set to
y_new - y_pred, so that the backward differences (the history of every later step, the interpolant) hold the
projected values (a projected BDF, Eich 1993, "Convergence results for a coordinate projection method applied to
mechanical systems with algebraic constraints", SIAM J. Numer. Anal. 30): the norm drift does not build up over
the steps. The error estimate is taken before the projection, from the corrector's own d: the exact flow keeps
|quat| = 1, so the corrector's drift off the unit sphere is part of the local error that the estimate measures
and the test bounds, and the projection moves y_new by that radial part only (never more than the accepted error).
Renormalising inside the corrector instead would hide that drift from the estimate and break the identity
d_q = c G v_new - psi_q the Newton iteration keeps. Dense output between steps may be off unit by the local error:
the result's q is renormalised (``integrate.SpatialTimeLoop.joint_states``), as for the explicit methods.

Drivers
-------
As on planar models the driven coordinates and rates are outside y, y = (q_free, v_free, W_dissipated, W_applied)
(``system.load_state``): the hooks scatter y's entries into the full q and v (``W_FREE_Q``, ``W_FREE_V``; each
quaternion's place in y in ``W_QUAT_Y``), the residual writes the drivers' f, f', f'' at t_new into the driven entries
(``implicit.spatial_residual``), takes the driven rows out as the driving forces, their power into W_applied
(``implicit.drive_rows``, after the loop forces J^T lambda), and S is factorised with the driven joints locked
(``effective_factor``'s driven mask: D^-1 = 0, the factors of the free block, exact), so dvdot is zero there. The q
rows of the free coordinates need the free velocities only (a driven joint is revolute or prismatic: one Euclidean
coordinate), and GGL's mu moves the free coordinates only (J_f J_f^T, J_f^T dmu). The contacts' update after a step
puts the drivers' values at t into q and v first (``system.contact_update``).

Starting step: Hairer's estimate with the change of f filtered by (I - h0 J)^-1 as on planar models, J's velocity
block by the Newton matrix at h0 (M r_v by a Newton-Euler pass at zero velocity and gravity) and its q block from
q' = G v; the stiffness term K r_q of the planar filter is lagged here.

Contacts
--------
As on planar models (``planar.bdf``): the contacts' state follows the work terms in y with a zero rate, the residual
(``system.contact_residual``) holds it over a step, and after each accepted step it is updated in D[0]
(``system.update_contact_state``, this module's ``_update_contacts`` hook). Their blocks [C_b | K_b]
(``contact.contact_newton_blocks``) are made at each factorisation from the step's state (``W_STEP_STATE``, copied
by ``corrector_predict``). Where the contacts are stiff on the step's scale, on a tree (a touching body's c^2 K_b +
c C_b has an entry in its translation rows and columns above EXACT_CONTACTS = 0.1 times its mass), the factorisation
is the exact matrix N of the spatial generalised-alpha instead of S (``newton.newton_factor`` with c_mass = 1,
c_damp = c, c_stiff = c^2 and no update's tangent map, at the iterate's (q, v, vdot); applied by
``newton.newton_apply``): C_b on each body's velocity change and K_b on its displacement c^2 J_b dvdot, the loads
turned with the joints above them (``system.contact_subtree_loads``), a sliding row's friction following its normal
force (unsymmetric), the rows between a body and its parent on the child's joint, and besides the contacts every
term of the Newton-Euler residual (velocity products, d(M vdot)/dq, gravity's parent-child coupling). Its Jacobian
is then exact but for the q rows' d G/dq (quaternions, above), the force elements other than the joint
spring-dampers, tau's dependence on (q, v), and the contact pairs between bodies not joined as parent and child
(``Model3D.add_self_contact``: lagged, their loads in the residual only); tested against central differences of the
corrector residual to 1e-8 (``tests/test_contact3d_newton.py``: a ball and a capsule on the floor and on a drum, a
chain's tip on the floor, sticking and sliding). N's factorisation costs about 30 times S's, so S stays where the
contacts are soft on the step's scale (nothing touching, or small steps: an impact, a chain's bending resolved,
where S's contact part, the symmetric part of c^2 K_b + c C_b on each touching body's inertia, lags terms below
EXACT_CONTACTS of the mass) and where N is singular (a subtree balanced above its joint at a large step). Measured
(``benchmarks/contact3d.py --bdf-newton``): a capsule sliding down a slope on k = 1e9 N/m^1.5, 1.5 s at rtol 1e-6,
4,111 steps (156 rejected) and 2.09 Newton iterations a step against 5,002 (984) and 2.39 with S alone, the same end
state; a chain of 20 capsule links landing sliding keeps S throughout (its steps, 15 us, are set by the error test)
and takes the same steps as with S alone, where N at every factorisation cost 20 to 30 % more wall time for the same
iterations. The spin hold of generalized_alpha's N (``integrate.spatial_implicit``) is not taken: BDF's own step
control cuts a step whose Newton iteration stalls.
With loops the contacts stay on S (the loop rows' Schur complement, ``loops.gram_matrix`` and
``loops.filtered_solve``, takes S^-1 J^T symmetric): the unsymmetric coupling of a sliding row and the terms S lags
are lagged there.

Closed loops: GGL (index 2)
---------------------------
With the m loop equations phi(q) = 0 of ``Model3D.add_loop`` (J = dphi/dv (m, nv) in the velocity coordinates,
``_kernels.spatial.loops``) the corrector is the planar one's stabilised index-2 form (``_kernels.planar.bdf``, Gear,
Gupta & Leimkuhler 1985) with the multiplier mu acting in the tangent space, q' = G(q) (v - J^T mu):

    d_q + psi_q = c G(q_new) (v_new - J^T mu),   M vdot + h - tau - Q + J^T lambda = 0,
    phi(q_new) = 0,   J(q_new) v_new = 0,

unknowns (vdot, lambda, mu), multipliers with the sign of ``spatial_loops``. With dq_new = c^2 dvdot - c J^T dmu
(tangent increments; d(phi(q (+) delta))/d delta taken as J, as the spatial generalised-alpha does) the Newton
matrix is the planar one, solved the same way by the same kernels: at each factorisation the m responses
S^-1 J_r^T (``spatial_implicit.effective_apply`` on the articulated-body factors), J S^-1 J^T
(``loops.gram_matrix``) and J J^T; per iteration dvdot, dlambda by ``implicit.schur_correction`` on the rows
J v / c, then (J J^T) dmu = c J dvdot - phi / c (``loops.filtered_solve``). O(N m + m^3) an iteration after
O(N m^2) per factorisation; no nv x nv matrix. The q rows are held as on a tree, G at the iterate's q, the mu
part accumulated over the iterations as the planar update does (mu and that accumulation restart at zero at
every attempt of a step). Lagged with loops, besides the tree's terms: lambda . d2phi/dq2, J' in the velocity
rows and in J^T lambda, K J^T dmu, dexp on the increment, and S^-1 J^T, J S^-1 J^T, J J^T at the factorisation's
iterate while the factors are reused. phi(q_new) and J(q_new) v_new are then zero to the Newton tolerance at
every accepted step (the quaternions' renormalisation of ``accept_step`` moves q by the radial part of the local
error only). The starting step's filter (``filtered_change``) ignores the loops (it only sizes the first step).
The multipliers lambda stay inside the loop (the planar bdf does not report them either).
"""

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..arrays import readonly
from ..layout import STATUS_NONFINITE_STATE, STATUS_OK, STATUS_SINGULAR
from ..planar.bdf import _update_contacts
from ..planar.loops import filtered_solve, gram_matrix
from ..timeloops import newton
from .implicit import drive_rows, effective_apply, effective_factor, spatial_residual
from .layout import MASS, N_CSTATE, NVJ
from .newton import SCRATCH_SIZE, factor_width, newton_apply, newton_factor
from .system import (
    LOOP_JAC,
    LOOP_LAM,
    LOOP_PHI,
    LOOP_PHID,
    LOOP_SETTINGS,
    SpatialSystem,
    _constraints,
    configuration_rate,
    contact_blocks,
    contact_residual,
    contact_subtree_loads,
    contact_update,
    normalise_at,
    normalise_quaternions,
    state_size,
)
from .tree import inverse_dynamics

# The cached machine code of ``planar.bdf.integrate_bdf`` embeds the hooks below as they were when it was compiled,
# and numba checks only that file's stamp: after editing this file, clear _kernels/planar/__pycache__ (or touch
# planar/bdf.py).
njit = numba.njit(cache=True, error_model="numpy", _nrt=True)


def _is_spatial(system):
    return isinstance(system, types.BaseNamedTuple) and system.instance_class is SpatialSystem


# entries of the spatial Newton workspace (after lam, lam_start, mu (m,): the loops' multipliers, empty on a tree,
# and ``newton`` = (j_stiff, j_damp), the joint spring-dampers' stiffness and damping per velocity, built by
# ``recursive_mbd.integrate.bdf``); from W_RESP on the loop rows' (module doc, "Closed loops")
(W_WS, W_S, W_S_RESIDUAL, W_UD, W_DINV, W_UDV, W_TMP, W_ROT, W_FSUB, W_KW, W_ZEROS, W_DIAG, W_RESIDUAL, W_DX,
 W_VDOT, W_POWERS, W_Q, W_V, W_RATE, W_NO_GRAVITY, W_RESP, W_GRAM, W_GRAM_MU, W_RATE_SCALED, W_DLAM, W_DMU,
 W_WORK_M, W_TANGENT, W_SHIFT, W_FREE, W_STEP_STATE, W_BLOCKS) = range(4, 36)
# the integrated entries (module doc, "Drivers"): y's coordinates in q (nqf,) and velocities in v (nvf,), each
# quaternion's first index in y (nk,), and the full configuration (nq,) that y's coordinates are scattered into
W_FREE_Q, W_FREE_V, W_QUAT_Y, W_QY = range(36, 40)
# the contact rows' marks of ``contact.slip_reversals`` (nrows, 4): none marked, every row on the law's blocks
W_LINEAR = 40
# the exact Newton matrix where contacts touch (module doc, "Contacts"; a tree with contacts only, else no rows):
# its factors (nbodies, ``newton.factor_width``) and scratch (``newton.SCRATCH_SIZE``), the contacts' subtree loads
# (nbodies, 6), and which matrix the factors in use are (1,): 1.0 the exact one, 0.0 S
W_FAC, W_SCR, W_LOADS, W_EXACT = range(41, 45)
# the exact matrix where a body's contacts respond to its translation by more than this fraction of its mass
# (c^2 K + c C against m: module doc, "Contacts")
EXACT_CONTACTS = 0.1


@overload(newton.newton_workspace, inline="always")
def _spatial_newton_workspace(system, newton):
    if not _is_spatial(system):
        return None

    def impl(system, newton):
        body_int = system.body_int
        nb = body_int.shape[0]
        nq = system.q.shape[0]
        nv = system.v.shape[0]
        max_nv = 1
        for i in range(nb):
            max_nv = max(max_nv, body_int[i, NVJ])
        m = system.loops[LOOP_PHI].shape[0]
        rows = system.contacts[0].shape[0]
        exact = rows > 0 and m == 0  # the exact matrix where contacts touch (module doc, "Contacts")
        free_q, free_v, quat_y = _integrated_entries(system)
        lam = np.zeros(m)
        for r in range(m):  # the multipliers of the start (the first evaluation's), the first Newton iterate's
            lam[r] = system.loops[LOOP_LAM][r]
        # W_NO_GRAVITY read-only, as the model's gravity: inverse_dynamics compiles one specialisation for both
        return (lam, np.zeros(m), np.zeros(m), newton,
                np.zeros_like(system.ws), np.zeros((nb, max_nv, 6)), np.zeros((nb, max_nv, 6)),
                np.zeros((nb, max_nv, 6)), np.zeros((nb, max_nv, max_nv)), np.zeros((nb, max_nv)),
                np.zeros_like(system.tmp), np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((nb, 6)), np.zeros(nv),
                np.zeros(nv), np.zeros(nv), np.zeros(nv), np.zeros(nv), np.zeros(2), np.zeros(nq), np.zeros(nv),
                np.zeros(nq), readonly(np.zeros(3)), np.zeros((m, nv)), np.zeros((m, m)), np.zeros((m, m)), np.zeros(m),
                np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(nv), np.zeros(nq), np.arange(nv)) + (
                    np.zeros(state_size(system) + 2 + N_CSTATE * rows), np.zeros((nb if rows else 0, 6, 24)),
                    free_q, free_v, quat_y, np.zeros(nq), np.zeros((rows, 4))) + (
                    np.zeros((nb if exact else 0, factor_width(max_nv))), np.zeros(SCRATCH_SIZE if exact else 0),
                    np.zeros((nb if exact else 0, 6)), np.zeros(1))
    return impl


@njit
def _integrated_entries(system):
    """(free_q, free_v, quat_y): the entries of q (nqf,) and of v (nvf,) that y integrates, in y's order (every
    index without drivers), and the first index in y of each quaternion (nk,)."""
    nq = system.q.shape[0]
    nv = system.v.shape[0]
    drivers = system.driven_coords
    if drivers.shape[0] == 0:
        free_q = np.arange(nq)
        free_v = np.arange(nv)
    else:
        free_q = system.free_q.copy()
        free_v = system.free_v.copy()
    quat_q = system.quat_q
    quat_y = np.zeros(quat_q.shape[0], dtype=np.int64)
    for j in range(quat_q.shape[0]):
        a = quat_q[j]
        for k in range(free_q.shape[0]):
            if free_q[k] == a:
                quat_y[j] = k
    return free_q, free_v, quat_y


@njit
def _scatter(y, offset, free, full):
    """full[free[j]] = y[offset + j]: the integrated entries of y into the full vector (its other entries, the
    driven ones, left as they are)."""
    for j in range(free.shape[0]):
        full[free[j]] = y[offset + j]


@overload(newton.corrector_predict, jit_options=newton.HOOK_OPTIONS)
def _spatial_corrector_predict(system, work, c, y_pred, psi, d, y):
    if not _is_spatial(system):
        return None

    def impl(system, work, c, y_pred, psi, d, y):
        n = y.shape[0]
        free_q = work[W_FREE_Q]
        nqf = free_q.shape[0]
        qy = work[W_QY]
        v = work[W_V]
        rate = work[W_RATE]
        _scatter(y_pred, 0, free_q, qy)
        _scatter(y_pred, nqf, work[W_FREE_V], v)
        configuration_rate(system, qy, v, rate)  # q' = G(q_pred) v_pred
        shift = work[W_SHIFT]
        for k in range(shift.shape[0]):
            shift[k] = 0.0  # GGL's c G J^T mu, accumulated over the iterations: mu = 0 at the predictor
        for j in range(nqf):
            d[j] = c * rate[free_q[j]] - psi[j]
        for j in range(nqf, n):
            d[j] = 0.0
        for j in range(n):
            y[j] = y_pred[j] + d[j]
        step_state = work[W_STEP_STATE]  # the step's state, whose contact state the Newton matrix takes
        for j in range(step_state.shape[0]):
            step_state[j] = y[j]
    return impl


@overload(newton.corrector_residual, jit_options=newton.HOOK_OPTIONS)
def _spatial_corrector_residual(inputs, key, system, work, t_new, c, psi, d, y):
    if not _is_spatial(system):
        return None

    def impl(inputs, key, system, work, t_new, c, psi, d, y):
        nv = system.v.shape[0]
        free_q = work[W_FREE_Q]
        free_v = work[W_FREE_V]
        nqf = free_q.shape[0]
        ns = nqf + free_v.shape[0]
        q = work[W_Q]
        v = work[W_V]
        vdot = work[W_VDOT]
        residual = work[W_RESIDUAL]
        powers = work[W_POWERS]
        for j in range(free_v.shape[0]):  # the iterate's accelerations: d_v + psi_v = c vdot
            vdot[free_v[j]] = (psi[nqf + j] + d[nqf + j]) / c
        _scatter(y, nqf, free_v, v)
        _scatter(y, 0, free_q, q)
        status = normalise_quaternions(system, q)  # the dynamics at unit quaternions, as the explicit loops' f
        if status != STATUS_OK:
            return status, np.inf
        # (the drivers' f, f', f'' at t_new into the driven entries of q, v and vdot)
        status = spatial_residual(inputs, key, system, t_new, q, v, vdot, work[W_S_RESIDUAL], residual, powers)
        if status == STATUS_OK:  # the contacts' loads, their state (in y) held over the step
            status = contact_residual(system, q, v, y, residual, powers)
        if status != STATUS_OK:
            return status, np.inf
        loops = system.loops
        m = loops[LOOP_PHI].shape[0]
        if m > 0:
            # phi, J v and J at the iterate; the residual gains J^T lambda (M vdot + h = Q - J^T lambda), and
            # J v_new = 0 is scaled by 1 / c so that its derivative by vdot is J (module doc)
            status = _constraints(system, q, v)
            if status != STATUS_OK:
                return status, np.inf
            jac = loops[LOOP_JAC]
            lam = work[0]
            rate_scaled = work[W_RATE_SCALED]
            for r in range(m):
                for j in range(nv):
                    residual[j] += jac[r, j] * lam[r]
                rate_scaled[r] = loops[LOOP_PHID][r] / c
        # the driven rows (the loop forces on them included) are the driving forces: out of the Newton rows, their
        # power applied
        drive_rows(system, v, residual, powers)
        res_max = 0.0
        for j in range(nv):
            res_max = max(res_max, abs(residual[j]))
        d[ns] = c * powers[0] - psi[ns]  # the work rows, explicit given q and v
        d[ns + 1] = c * powers[1] - psi[ns + 1]
        return STATUS_OK, res_max
    return impl


@overload(newton.newton_factor, jit_options=newton.HOOK_OPTIONS)
def _spatial_newton_factor(system, work, c):
    if not _is_spatial(system):
        return None

    def impl(system, work, c):
        # at the last residual's iterate, its accelerations the exact matrix's configuration terms take
        status = _factor(system, work, c, work[W_Q], work[W_V], work[W_VDOT], work[W_STEP_STATE], True)
        loops = system.loops
        jac = loops[LOOP_JAC]
        m = jac.shape[0]
        if status != STATUS_OK or m == 0:
            return status
        # the loop rows at the factors' iterate: S^-1 J_r^T (m applies), J S^-1 J^T and GGL's J J^T
        resp = work[W_RESP]
        gram_mu = work[W_GRAM_MU]
        for r in range(m):
            effective_apply(system.body_int, work[W_WS], work[W_S], work[W_UD], work[W_DINV], jac[r], work[W_TMP],
                            work[W_UDV], resp[r])
        gram_matrix(jac, resp, work[W_GRAM])
        free_v = work[W_FREE_V]
        for r in range(m):  # J_f J_f^T: mu moves the integrated coordinates only
            for s in range(r + 1):
                g = 0.0
                for j in free_v:
                    g += jac[r, j] * jac[s, j]
                gram_mu[r, s] = g
                gram_mu[s, r] = g
        return STATUS_OK
    return impl


@njit
def _stiff_contacts(body_real, blocks, c):
    """Whether a body's contacts respond to its translation with a force comparable to its inertia: the largest
    entry of c^2 K + c C in the blocks' translation rows and columns (its own, and its joint's for a row on its
    parent) above EXACT_CONTACTS times its mass (module doc, "Contacts")."""
    for i in range(blocks.shape[0]):
        limit = EXACT_CONTACTS * body_real[i, MASS]
        for half in range(2):
            o = 12 * half
            for a in range(3, 6):
                for b in range(3, 6):
                    if abs(c * c * blocks[i, a, o + 6 + b] + c * blocks[i, a, o + b]) > limit:
                        return True
    return False


@njit
def _factor(system, work, c, q, v, vdot, y, exact):
    """Factor the Newton matrix at q (unit quaternions) for c, with the contacts' blocks at (q, v) and the contact
    state of y (``system.contact_blocks``): where ``exact``, the workspace has the exact matrix's arrays (a tree with
    contacts) and a row touches, the exact matrix N at (q, v, vdot) (module doc, "Contacts"), else S; returns the
    status. work[W_EXACT][0] says which factors were made."""
    newton = work[3]
    j_stiff = newton[0]
    j_damp = newton[1]
    j_diag = work[W_DIAG]
    for j in range(j_diag.shape[0]):
        j_diag[j] = c * c * j_stiff[j] + c * j_damp[j]
    blocks = work[W_BLOCKS]
    linear = work[W_LINEAR]
    status = contact_blocks(system, q, v, y, blocks, linear)
    if status != STATUS_OK:
        return status
    fac = work[W_FAC]
    if exact and fac.shape[0] > 0 and _stiff_contacts(system.body_real, blocks, c):
        loads = work[W_LOADS]
        contact_subtree_loads(system, y, linear, loads)  # at contact_blocks' poses
        # c_mass = 1, c_damp = c, c_stiff = c^2, no update's tangent map (the q rows' increment is c^2 dvdot in
        # the tangent space); W_DX is scratch until the next apply
        status = newton_factor(system.body_int, system.body_real, system.gravity, q, v, vdot, work[W_ZEROS],
                               c * c, c, j_diag, work[W_WS], work[W_S], work[W_TMP], work[W_DX], work[W_SCR], fac,
                               blocks, system.driven, loads)
        if status == STATUS_OK:
            work[W_EXACT][0] = 1.0
            return status
        if (status & 15) != STATUS_SINGULAR:
            return status
        # N singular (a subtree balanced above its joint at a large step): S, whose fallback lags gravity's stiffness
    work[W_EXACT][0] = 0.0
    status = effective_factor(system.body_int, system.body_real, system.gravity, q, work[W_ZEROS], work[W_WS],
                              work[W_S], work[W_TMP], c * c, j_diag, work[W_UD], work[W_DINV], work[W_ROT],
                              work[W_FSUB], work[W_KW], blocks, c, system.driven)
    if (status & 15) == STATUS_SINGULAR:
        # gravity's stiffness is negative where a subtree hangs above its joint: M + c^2 K may be indefinite for
        # a large step; then it is lagged too (as generalized_alpha)
        status = effective_factor(system.body_int, system.body_real, system.gravity, q, work[W_ZEROS], work[W_WS],
                                  work[W_S], work[W_TMP], 0.0, j_diag, work[W_UD], work[W_DINV], work[W_ROT],
                                  work[W_FSUB], work[W_KW], blocks, c, system.driven)
    return status


@njit
def _solve(system, work, rhs, out):
    """out = the Newton matrix's inverse times rhs (nv,), with the factors in use (``_factor``)."""
    if work[W_EXACT][0] != 0.0:
        newton_apply(system.body_int, work[W_WS], work[W_FAC], rhs, work[W_TMP], work[W_UDV], out)
    else:
        effective_apply(system.body_int, work[W_WS], work[W_S], work[W_UD], work[W_DINV], rhs, work[W_TMP],
                        work[W_UDV], out)


@overload(newton.newton_update, jit_options=newton.HOOK_OPTIONS)
def _spatial_newton_update(system, work, c, y_pred, psi, d, y, scale):
    if not _is_spatial(system):
        return None

    def impl(system, work, c, y_pred, psi, d, y, scale):
        nv = system.v.shape[0]
        n = y.shape[0]
        free_q = work[W_FREE_Q]
        free_v = work[W_FREE_V]
        nqf = free_q.shape[0]
        dx = work[W_DX]
        v = work[W_V]
        rate = work[W_RATE]
        qy = work[W_QY]
        _solve(system, work, work[W_RESIDUAL], dx)  # zero at the driven velocities (locked)
        _scatter(y, 0, free_q, qy)  # this iterate's configuration (driven entries: their q rows are not y's)
        ok = True
        loops = system.loops
        jac = loops[LOOP_JAC]
        m = jac.shape[0]
        shift = work[W_SHIFT]
        if m > 0:
            phi = loops[LOOP_PHI]
            rcond = loops[LOOP_SETTINGS][4]
            lam = work[0]
            mu = work[2]
            dlam = work[W_DLAM]
            dmu = work[W_DMU]
            work_m = work[W_WORK_M]
            tangent = work[W_TANGENT]
            # [S J^T; J 0] (dx, dlam) = (residual, J v / c) by the Schur complement
            ok = newton.schur_correction(work[W_FREE], jac, work[W_RESP], work[W_GRAM], rcond, work[W_RATE_SCALED],
                                  dx, dlam, work_m)
            for r in range(m):  # GGL: (J J^T) dmu = c J dx - phi / c
                g = -phi[r] / c
                for j in range(nv):
                    g += c * jac[r, j] * dx[j]
                work_m[r] = g
            if filtered_solve(work[W_GRAM_MU], work_m, rcond, dmu) < 0:
                ok = False
            for j in free_v:  # J_f^T dmu: the driven coordinates follow their drivers
                g = 0.0
                for r in range(m):
                    g += jac[r, j] * dmu[r]
                tangent[j] = g
            for r in range(m):
                mu[r] -= dmu[r]
                lam[r] -= dlam[r]
            configuration_rate(system, qy, tangent, rate)  # mu -= dmu: c G J^T mu -= c G J^T dmu
            for k in free_q:
                shift[k] -= c * rate[k]
        acc = 0.0
        for j in range(free_v.shape[0]):  # vdot -= dx: d_v -= c dx
            k = free_v[j]
            d[nqf + j] -= c * dx[k]
            v[k] = y_pred[nqf + j] + d[nqf + j]
            acc += (c * dx[k] / scale[nqf + j]) ** 2
        # the q rows held exactly at the new velocities, G at this iterate's q (its change with q lagged), less
        # GGL's accumulated c G J^T mu
        configuration_rate(system, qy, v, rate)
        for j in range(nqf):
            k = free_q[j]
            d_q = c * rate[k] - psi[j] - shift[k]
            acc += ((d_q - d[j]) / scale[j]) ** 2
            d[j] = d_q
        for j in range(n):
            y[j] = y_pred[j] + d[j]
        return ok, acc
    return impl


@overload(newton.filtered_change, inline="always")
def _spatial_filtered_change(system, work, h, y0, err):
    if not _is_spatial(system):
        return None

    def impl(system, work, h, y0, err):
        free_q = work[W_FREE_Q]
        free_v = work[W_FREE_V]
        nqf = free_q.shape[0]
        q = work[W_Q]
        vdot = work[W_VDOT]
        residual = work[W_RESIDUAL]
        dx = work[W_DX]
        rate = work[W_RATE]
        v = work[W_V]
        # the driven coordinates and rates at their drivers' values of the last evaluation (the starting trial's),
        # their accelerations' change zero: locked, they take no part
        for k in range(q.shape[0]):
            q[k] = system.q[k]
        for k in range(v.shape[0]):
            vdot[k] = 0.0
            v[k] = system.v[k]
        _scatter(y0, 0, free_q, q)
        status = normalise_quaternions(system, q)
        if status != STATUS_OK:
            return status
        _scatter(err, nqf, free_v, vdot)
        # M r_v: Newton-Euler at zero velocity without gravity
        status = inverse_dynamics(system.body_int, system.body_real, work[W_NO_GRAVITY], q, work[W_ZEROS], vdot,
                                  system.ws, work[W_S_RESIDUAL], system.tmp, residual)
        if status != STATUS_OK:
            return status
        _scatter(y0, nqf, free_v, v)
        # S, the contacts' blocks at y0 with its contact state (the filter only sizes the first step)
        status = _factor(system, work, h, q, v, vdot, y0, False)
        if status != STATUS_OK:
            return status
        effective_apply(system.body_int, work[W_WS], work[W_S], work[W_UD], work[W_DINV], residual, work[W_TMP],
                        work[W_UDV], dx)
        for j in range(dx.shape[0]):
            if not math.isfinite(dx[j]):
                return STATUS_NONFINITE_STATE  # err unchanged: the unfiltered change sets the step
        configuration_rate(system, q, dx, rate)
        for j in range(nqf):
            err[j] += h * rate[free_q[j]]
        for j in range(free_v.shape[0]):
            err[nqf + j] = dx[free_v[j]]
        return STATUS_OK
    return impl


@overload(_update_contacts, jit_options=newton.HOOK_OPTIONS)
def _spatial_update_contacts(inputs, key, system, t, y):
    if not _is_spatial(system):
        return None
    return lambda inputs, key, system, t, y: contact_update(inputs, key, system, t, y)  # noqa: PLW0108


@overload(newton.accept_step, jit_options=newton.HOOK_OPTIONS)
def _spatial_accept_step(system, work, y_pred, d, y):
    if not _is_spatial(system):
        return None

    def impl(system, work, y_pred, d, y):
        quat_y = work[W_QUAT_Y]
        status = normalise_at(quat_y, y)
        if status != STATUS_OK:
            return status
        for j in range(quat_y.shape[0]):
            a = quat_y[j]
            for k in range(a, a + 4):
                d[k] = y[k] - y_pred[k]
        return STATUS_OK
    return impl
