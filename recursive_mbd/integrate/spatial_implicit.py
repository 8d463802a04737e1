"""Generalised-alpha on spatial models (``Model3D``): the Lie-group scheme with an O(N) Newton matrix.

Scheme
------
Arnold & Bruls (2007, "Convergence of the generalized-alpha scheme for constrained mechanical systems"; the
Lie-group form of Bruls & Cardona 2010): the configuration q (nq) lives on R^ne x S^3 x ... (unit quaternions of
the spherical and free joints), the velocity v (nv) in the tangent space (a quaternion's omega in its child frame,
as ``rm.integrate_configuration``). With the coefficients of ``implicit.generalized_alpha_coefficients``, a step h:

    (1 - alpha_m) a+ + alpha_m a = (1 - alpha_f) vdot+ + alpha_f vdot,
    v+ = v + h (1 - gamma) a + h gamma a+,
    q+ = q (+) (h v + h^2 (1/2 - beta) a + h^2 beta a+),
    M(q+) vdot+ + h(q+, v+) = tau(t+, q+, v+) + Q_elements(t+, q+, v+),

where (+) is ``integrate_configuration`` (a quaternion times exp(delta / 2)): quaternions stay unit by
construction, never renormalised by hand. The unknown is vdot+ (nv); the residual M vdot+ + h - tau - Q is one
recursive Newton-Euler pass (``_kernels.spatial.tree.inverse_dynamics``) after the element loads, O(N). Second order
for every rho_inf in [0, 1] (Arnold & Bruls; measured in ``tests/test_spatial_implicit.py``).

Newton matrix
-------------
With dq+ = c_stiff T dvdot+ (T the tangent map of (+): the right Jacobian of SO(3) on a quaternion's rates),
dv+ = c_damp dvdot+, c_stiff = h^2 beta (1 - alpha_f) / (1 - alpha_m), c_damp = h gamma (1 - alpha_f) /
(1 - alpha_m), the Newton matrix of the residual is its derivative by vdot+. The loop iterates on a cheap
matrix S first and falls back to the exact one, N, where S stalls (below):

    S = M(q) + c_stiff sum_b T_b^T K_b T_b + diag(c_stiff k_j + c_damp c_j),
    N = d(M vdot + h)/d vdot+ + diag(c_stiff k_j + c_damp c_j),

* S: M exact (at the iterate where S is factorised) and gravity's geometric stiffness per body (the 3D form of
  the planar one in ``recursive_mbd.integrate.implicit``): body positions are c_i = sum over the path from the
  ground of R_b w_b (w_b: body-frame vectors from joint to centre of mass and from centre of mass to the next
  joint), so the potential V = -sum m_i g . c_i is sum_b V_b(R_b), each a function of one absolute rotation,
  V_b = -F_b . R_b e_b - sum over children k of F_k . R_b d_k (F_k the weight of the subtree of k; e_b = c_b -
  joint point of b, d_k = joint point of k - c_b). Turning R_b by exp([delta]) (delta in ground axes),
  -F . exp([delta]) r has the Hessian K(F, r) = (F . r) 1 - (F r^T + r F^T) / 2, and K_b = K(F_b, e_b) + sum_k
  K(F_k, d_k) acts on the body's angular velocity (T_b: the rows of the joint Jacobian giving it): R_b^T K_b R_b
  is added to the angular block of the body's spatial inertia (``_kernels.spatial.implicit.geometric_stiffness``)
  and the articulated-body elimination factors S in O(N) (``effective_factor``, ``effective_apply``). Exact
  where every V_b is stationary (a chain hanging straight); it lags the velocity products, d(M vdot)/dq, the
  tangent map of (+) and gravity's parent-child coupling of non-commuting rotations, whose effect on Newton grows
  like (h omega_max)^2. Where M + c_stiff K is not positive definite (subtrees above their joints at a large
  step) it is factorised without K.
* N: the first term exact: the derivative of the Newton-Euler residual in all its terms, M, the velocity products
  (c_damp dh/dv: Coriolis, gyroscopic, centrifugal) and the configuration terms (c_stiff: gravity's geometric
  stiffness with the parent-child coupling of non-commuting rotations, d(M vdot)/dq, the velocity products'
  configuration dependence, the joints' own subspace derivatives) through the tangent map T of the update. It is
  factorised in O(N) time and memory by a block elimination in tree order, the articulated-body algorithm carried
  to (velocity, acceleration) perturbations with different left and right joint columns
  (``_kernels.spatial.newton``, derived there), and applied by two sweeps; no nv x nv matrix is formed. Tested
  against finite differences of the residual on random trees of every joint type, with velocities, to 1e-8
  (``tests/test_spatial_implicit.py``). Its factorisation costs about 30 times S's (3.4 against 0.12 us a body
  on a spherical chain, where an iteration costs about 0.3 us a body with S's factors, 0.7 with N's).
* Contacts (``Model3D.add_contact``): their loads join the residual, the rows' anchors held over the step and
  updated after it (``_kernels.spatial.system.update_contact_state``, with the fixed step's watch of impacts); each
  body touching a ground-fixed surface gets a block [C | K] (``_kernels.spatial.contact.contact_newton_blocks``:
  the derivatives of its contact wrench by its velocity twist and by a displacement of its pose, exact on planes
  and drums): N adds C to the body's response to its velocity change and K to its response to its displacement,
  which the elimination carries through the tree beside the velocity and acceleration changes
  (``_kernels.spatial.newton``: exact, moving and sliding bodies included), and turns the contact loads with the
  joints above them (their subtree sums join the transmitted wrenches:
  ``_kernels.spatial.system.contact_subtree_loads``), S the symmetric part of c_stiff K + c_damp C
  to the body's inertia; with contacts S is factorised again at an iterate whose corrections shrank less than
  20x (a contact made or broken since), and the step goes on on N where S with the blocks is not positive definite
  (a sliding row's friction follows its normal force, with no term back). A row whose slip direction reversed since
  the last iterate takes that iterate's correction on its unclipped law, residual and blocks, in fresh factors
  (``_kernels.spatial.contact.slip_reversals``: without it Newton cycles between the two slip directions of a row
  that sticks, across a stick band narrow at a stiff contact and a long step).
* N's spin hold: the exact matrix's factorisations in a step add SPIN_DAMPING m e_a^2 (1e8:
  ``_kernels.spatial.implicit``) to the diagonal of every spherical joint's velocity a (e = centre of mass - joint
  point in the child's axes, m the body's mass), holding the turn about the link's own axis, until a correction has
  shrunk to SPIN_RELEASE (0.1) of the one before (the bending in Newton's quadratic reach) or to 100 newton_tol; then
  N is factorised again without it, and no step converges with the spins held. A joint's turn about its link
  turns the subtree below about that axis; on a slender chain that direction's inertia is the links' axial ones and
  the subtree's offset from the axis squared, far below the bending's (N = 100 hanging links: 8e-9 kg m^2 at the
  tip, 1e-4 at the top against 0.33 for the bending there; the exact Jacobian's smallest eigenvalue 2e-9, its
  largest 8), while the residual's rows there are quadratic in the bending: a spin corrected while the bending is
  still off by d overshoots by about (weight x length) d^2 over the spin's inertia, and the next correction takes it
  back. Traced (the first step of the small swing of N = 1000 below, Newton on N from the predictor, corrections
  in m/s): undamped 11.4 (in the spins), 0.10, 0.096, 4.2e-3, 11.2, ... twelve iterations; the spins held, 0.16
  and 8.8e-7 (the bending), 9.7e-9 (the spins), 4e-17: four, the spins' correction and its check after the
  bending's two (the planar chain's three and one more); the earlier damping that fell 100x a factorisation (300,
  3, 0.03, ...) let the spins go while the bending was off: 7.4 a step over the second. It changes the matrix,
  never the residual: the converged step is the same.
* The joint spring-dampers' stiffness k_j and damping c_j on their joint's velocities: exact for the Euclidean
  joints (revolute, prismatic, cylindrical, universal, planar); for a spherical joint's spring, -k phi with phi
  the rotation vector from the rest orientation, k 1 is its tangent stiffness at the rest orientation (the exact
  one is k J_r^-1(phi), J_r^-1 = 1 + [phi]/2 + O(phi^2)), the damper's c 1 is exact.
* A spherical spring's force is periodic in the rotation (the shorter rotation from rest), so a step's
  equations have a root for every whole number of turns. The first iterate (vdot+ = vdot) turns a stiff joint by
  h^2 a, of order (h omega)^2 times its swing: past the half turn, Newton from there ends on a root turned by
  whole turns (same orientation, velocity 2 pi / h too large: the energy of a 1e-3 rad swing x 4e7 at
  h omega = 100). Where the first iterate's continued rotation phi(q) + delta passes the half turn, the first
  correction therefore takes that spring's force linearised at the step's start, -k (phi(q) + delta) (no turns;
  its tangent is the k 1 of S), which lands within O(|phi| |delta|) of the physical root; every later iteration
  uses the model's force, and a step never converges on the linearised one
  (``_kernels.spatial.elements.linearise_spherical_springs``). A stiff spherical spring then follows the
  scheme's response on x'' = -omega^2 x (spectral radius rho_inf at h omega -> inf) as a revolute one does
  (``tests/test_spatial_implicit.py``, h omega up to 1e3).

Lagged in both (they slow the Newton contraction, never change the converged step): point-to-point
spring-dampers, forces and torques, tau's dependence on (q, v), the spherical spring's J_r^-1 - 1; with loops the
terms listed below. Where N is singular (a subtree balanced above its joint at a large step) the factorisation
falls back to M + the joint diagonal. A step that does not converge in max_newton iterations raises
SimulationError (time, cause, the samples so far in .result).

Iteration: a step starts on S (on a tree, after two steps in a row that ended on N, on N: S would stall again,
and its iterations count; every tenth such step tries S first, to return to it where the motion has calmed), its
factors made at an iterate and reused, over later steps too, while the
corrections of the state (max(c_stiff, c_damp) max |dvdot+|, positions and velocities) shrink at least 20x an
iteration (as the planar loop, ``recursive_mbd.integrate.implicit``): linear convergence, one cheap factorisation
a step or fewer. Where the corrections with fresh factors of S shrink by less than 0.5 an iteration, or at their
rate would not reach newton_tol within 20 iterations of the step, the rest of the step runs on N (from the
predictor where they grew): Newton proper, N factorised at every iterate whose last correction is above 1e5
newton_tol, then kept, and again where the corrections shrink less than 20x; quadratic convergence (measured on a
swinging chain's step in the tests: corrections 2e-4, 1e-8, 3e-17 m). A step that fails so is tried again from
the predictor on N alone, then on fresh factors of S alone. Runs that converge on S take the same iterates as
with S alone, at S's cost; N is paid for only where S stalls. ``result.newton_contraction`` is the geometric mean
of the ratios of successive corrections taken with kept factors (above 1e3 newton_tol; those of factors given up
after them, S's of an earlier step made again or S left for N, left out; 0 when every such iteration had fresh
factors), ``result.newton_contraction_max`` their largest. Output at ``t_eval`` and events use a cubic Hermite
interpolant of (q, q') and (v, vdot) at the step ends (quaternions renormalised in the result).

Measured (slender spherical chains of ``benchmarks/spatial_simulate.py``: N links, 1 m and 1 kg in all, axial
inertia a tenth of the transverse one, tilted and pushed sideways at 5/3 of the tilt per second; Newton
iterations a step, rho_inf = 0.9, newton_tol = 1e-12; in brackets with N alone at every step, then with S alone):
the small swing (1e-3 rad) at dt = 0.01 s: N = 10: 4.9 (3.0; 4.9), N = 100: 6.4 (4.1; 6.5), both on S throughout
and as fast as with S alone, about 3x and 4x faster than with N alone; N = 1000: 13.1, 9.6 factorisations a step
(9.1; diverged at the first step); at dt = 2e-3 s, N = 100: 5.9 (3.0; 6.0). The 0.3 rad swing: N = 30 at
dt = 0.01 s: 10.5 (6.5; diverged at the first step), N = 100 at dt = 1e-3 s: 8.8 over 0.1 s (4.8; diverged);
where S diverges, each step spends about 4 iterations and a factorisation of S before N takes over, about 5% of
the step's cost on a spherical chain (N = 30: the fastest of 9 runs 0.045 s a simulated second against 0.041 s
with N alone, the shared machine's spread 2x; N = 1000: within that spread).
Those figures are from before the spin damping (above). The 0.3 rad swing at dt = 0.01 s stopped N = 100 at t = 0.13
s with the exact matrix too: the trouble was not the matrix (N's Newton corrections equal those of the dense
Jacobian by finite differences to 3e-6, their error) but the start and the nonlinearity. At the first step of N =
100 (c_stiff = 2.5e-5 s^2, c_damp = 5.0e-3 s) the root lies 790 rad/s^2 from the predictor (vdot+ = vdot) in the
bending accelerations at the top, which change sign from step to step (the scheme's response to the fast modes, h
omega >> 1, where the chain kinks below its pivot), 2.3 and 0.33 across and in spin; the first exact correction,
1.3e2 and 1.7e2 rad/s^2 in bending, is 4.7e3 in the spin of the top joints (23 rad/s of spin velocity), and Newton
wanders: 17 iterations at the first step, none converging by the seventh. From the root moved back a fraction s of
the way to the predictor Newton takes 4 (s = 1e-3), 5 (1e-2), 8 (0.1) and 17 (1) iterations; with the root's bending
and the predictor's spins 4, with the root's spins and the predictor's bending 15. Damped Newton (the natural
monotonicity test, max or 2-norm of the correction) stalls at the second step (steps cut to 1/32, corrections
staying near 10), updating the bodies' absolute rotations in place of the joints' (a retraction without the
subtree's commutator terms) still stops at 0.14 s, and a predictor two steps back does not help; damping the spin
does: Newton on N alone then converges over the whole second in 7.0 iterations a step (Python, N = 100). With it,
and a tree's steps starting on N after two that ended there (``python3 benchmarks/implicit3d.py``, 2-core machine
shared, wall times 2-3x those above and varying 1.5x from run to run): the 0.3 rad swing of N = 100 runs 1 s at dt =
0.01 s in 7.5 iterations and 7.1 factorisations a step, 0.43 to 0.60 s against dopri5's 0.57 to 0.59 s at rtol 1e-6
(about as fast), tips 8e-5 m apart; N = 30: 7.4 (10.5 before), N = 10: 7.6 (10.6); the small swing of N = 1000: 7.4
iterations and 6.4 factorisations a step (13.1 and 9.6 before), 4.6 s against dopri5's 38.8 s (8.5x), tips 1e-6 m
apart; N = 100 small: 6.4 and 1.06 as before. N = 1000 on the 0.3 rad swing still stops at t = 0.06 s, at any
damping (spins alone or every velocity, 1e3 to 1e7 times a link's central transverse moment) or with either
predictor: its top joints' bending accelerations alternate by 4.6e3 rad/s^2 a step (the kink below the pivot, g
sin(0.3) / a with a = 1 mm links) and the first corrections there reach 8e3 rad/s^2. Absolute coordinates, in which
a link's spin is decoupled from the links below and a kink turns one link, not the subtree, are the route to it.
With the spins held (N's spin hold above, the same runs): the small swing of N = 1000 in 4.4 iterations and 3.5
factorisations a step (4 and 3 from the third step), the 0.3 rad swing of N = 100 in 6.3 and 5.0, N = 30: 31
iterations in its first 5 steps (41 before); N = 1000 at 0.3 rad stops at t = 0.02 s: traced, its bending
corrections from the predictor grow with the spins held too (11.5, 2.6, 29, 7.1 m/s at the first step, in the
top joints), a natural-monotonicity line search on them converges its first steps in 20 to 50 iterations, the
last of them stalled near 8e-12 at the spins' round-off (above newton_tol = 1e-12).

Drivers
-------
A driven joint (``rm.simulate(..., drivers=...)``: revolute and prismatic joints, q_k = f(t)) is no unknown of
the step: the state keeps its coordinate and rate at the driver's values (``SpatialTimeLoop(keep_driven=True)``),
each residual evaluation writes f, f', f'' at t+ into q+, v+ and vdot+ (``_kernels.spatial.implicit.set_driven``),
the residual's row at the joint is the force the driver supplies, taken out of the Newton system with its power
added to the applied work (``drive_rows``), and both matrices lock the joint: its block's inverse is zero in the
elimination (``effective_factor``, ``newton.newton_factor``), so its velocity's correction is zero and its parent
receives the whole articulated inertia, the hybrid dynamics' structure (``_kernels.spatial.tree.hybrid_dynamics``):
the factors are those of the free rows and columns, exact. With loops the responses N^-1 J^T and S^-1 J^T on
those factors are zero at the driven velocities, so the bordered solve is the free block's, the position unknowns nu
move the free velocities only (J_f^T nu), and a driven row of the residual, J^T lambda included, is the driving
force.

Closed loops (stabilised index 2)
---------------------------------
With the loop equations phi(q) = 0 of ``Model3D.add_loop`` (m rows; J = dphi/dv (m, nv) in the velocity
coordinates, ``recursive_mbd.dynamics.spatial_loops``) the step is the planar method's stabilised index-2 (GGL) form
(``recursive_mbd.integrate.implicit``, Arnold & Bruls 2007) carried to the group: the increment gains a correction along
the constraint normals, in the tangent space,

    q+ = q (+) (h v + h^2 (1/2 - beta) a + h^2 beta a+ + J^T nu),
    M vdot+ + h - tau - Q + J^T lambda = 0,     phi(q+) / c_stiff = 0,     J(q+) v+ / c_damp = 0,

unknowns (vdot+, lambda, nu), the multipliers with the sign of ``spatial_loops`` (M vdot + h = tau - J^T
lambda). phi at the new step is imposed through ``integrate_configuration``, so quaternions stay unit. The
derivative of phi(q (+) delta) by delta is J(q+) dexp(delta) = J(q+) (1 + O(|delta|)): taken as J (the tree's
rows carry their tangent map T; the loop rows' is lagged). The Newton matrix is then the planar one,

    [S   J^T  0             ]
    [J   0    J J^T / c_stiff]
    [J   0    0             ]

and is solved the same way, by the same kernels: X = S^-1 J^T by m applies of the articulated-body factors
(``_kernels.spatial.implicit.effective_apply``, O(N) each; N's by ``_kernels.spatial.newton.newton_apply`` where
the step has left S) at the iterate where S is factorised, G = J X (m, m);
per iteration Y = S^-1 r_1, G dlambda = J Y - r_3, dvdot = Y - X dlambda (``_kernels.timeloops.newton``:
``schur_correction``), then (J J^T) dnu = phi - c_stiff r_3 (``position_correction``); both small systems by the
filtered minimum-norm solve of the loop layer, so redundant rows (a planar mechanism built spatially: its
out-of-plane rows hold identically, J has zero rows there) get zero multipliers. One iteration costs a residual
(one Newton-Euler pass, the loop rows phi, J v, J: O(N m) up the loop paths), one apply and O(N m + m^3) for the
rows; a factorisation m applies more. No nv x nv matrix is formed.

Lagged with loops, besides the tree's terms above: the loop forces' geometric stiffness lambda . d2phi/dq2
(lambda times the constraint Hessian), the derivative of J in the velocity rows (J' v+) and in J^T lambda, K J^T
nu, the tangent map dexp of the increment on nu, and X, G taken at the factorisation's iterate while they are
reused (over steps too, as S). The contraction factor is reported as for trees (``result.newton_contraction``,
the correction there being max(c_stiff max |dvdot|, c_damp max |dvdot|, max |J^T dnu|); the RSSR linkage of the
tests stays on S, contracting by 0.017-0.022, 6.5-7.7 iterations a step). phi and J v are then zero to
the Newton tolerance at every step (RSSR: |phi| <= 3e-14 m, |J v| <= 7e-11 m/s at dt = 1e-3;
``tests/test_spatial_implicit_loops.py``), and the state and the multipliers converge at second order (error
ratios 4.04, 4.02 when dt halves). ``result.multipliers`` (nt,
m): lambda of the converged step at the step ends (linear in time between them at t_eval points and events), at
t0 that of the constrained dynamics at the start projected onto the loops; the same field as the planar method's. A loop
locked at a singular position (closed only where J loses rank: two links stretched straight to a tied tip) leaves
the position rows unsolvable: the correction stalls and the run stops with SimulationError naming the time and
the locked loops (the samples so far in .result); so does a step too large for fast motion (h omega ~ 1: the
lagged loop-force stiffness grows like omega^2), where a smaller dt helps.

Measured with S alone (the iteration before N was added; where S converges the loop takes the same iterates: the
tied chain below at dt = 0.01 s, N = 10 and 100, 5.0 and 7.1 iterations a step against 5.0 and 7.2 with S alone,
while N alone stops N = 100 at t = 0.49 s) (``python3 benchmarks/spatial_simulate.py loops``: the small 3D swing of
the hanging chain above, its tip also tied by two 0.3 m distance links to ground points beside it (m = 2), 1 s, each
method at its cheapest setting reaching 1e-3 of the amplitude against dop853; quiet 2-core machine): N = 10: 0.005 s
against dopri5's 0.004 s; N = 100: 0.075 s against 0.24 s (3.2x); N = 1000: 3.1 s against 24.4 s (7.9x); 3.9, 5.0
and 6.1 Newton iterations a step. As for the tree, N = 1000 converges only from dt = 6.25e-4 s (the lagged gravity
coupling above), not at 1.25e-3 s and larger; with the fallback to N it still fails at the first step at dt = 0.01 s.
"""

import numpy as np

from . import runs as _runs
from .newton import run_generalized_alpha, run_options, spatial_joint_spring_diagonals


def simulate_generalized_alpha(model, inputs, loop, q0, qd0, t0, t_end, dt, *, every=1, t_eval=None, events=None,
                               rho_inf=0.9, newton_tol=1e-12, max_newton=50, max_steps=10_000_000, progress=None,
                               max_wall_time=None):
    """Generalised-alpha run on a Model3D (called by ``rm.simulate(model3d, method="generalized_alpha")``).

    ``inputs`` (the spatial run inputs: tau constant or a function, element input slots, drivers) and ``loop``
    (``SpatialTimeLoop``, with ``keep_driven``) come from ``integrate.simulate``; q0 (nq,) with unit quaternions
    and qd0 (nv,) checked there. Options as for the planar method (``implicit.simulate_generalized_alpha``); the result
    has ``newton_iterations``, ``newton_factorizations``, ``newton_contraction`` and ``newton_contraction_max`` (module
    docstring), and ``multipliers`` (nt, m) on a model with loops; ``nfev`` counts residual (inverse-dynamics)
    evaluations. Raises SimulationError with the samples so far when a step's Newton iteration does not converge in
    ``max_newton`` iterations.
    """
    from .._kernels.spatial import implicit as kernels  # noqa: PLC0415

    options = run_options(rho_inf, newton_tol, max_newton, t0, t_end, dt, max_steps, every, t_eval)
    t0 = options[3]
    callback, key = inputs.callback()
    event_functions = _runs._Events(model, events, inputs, loop)
    # the spatial run enters its compiled loop without a first evaluation of the dynamics in Python
    y0 = _runs.start_state(model, inputs, loop, callback, key, q0, qd0, t0, check_dynamics=False)
    j_stiff, j_damp = spatial_joint_spring_diagonals(model)
    result, info = run_generalized_alpha(kernels.integrate_generalized_alpha, model, loop, callback, key, inputs,
                                         event_functions, y0, model.nv, j_stiff, j_damp, 8, options, max_steps,
                                         progress, max_wall_time, "M vdot + h - Q")
    result.newton_contraction = float(np.exp(info[5] / info[6])) if info[6] else 0.0
    result.newton_contraction_max = float(info[7])
    return result
