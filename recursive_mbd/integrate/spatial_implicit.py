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
With dq+ = c_stiff dvdot+ (in the tangent space), dv+ = c_damp dvdot+, c_stiff = h^2 beta (1 - alpha_f) /
(1 - alpha_m), c_damp = h gamma (1 - alpha_f) / (1 - alpha_m), the exact Newton matrix is
M + c_damp C + c_stiff K (C = -dQ/dv, K = -dQ/dq plus d(M vdot)/dq). The loop uses

    S = M(q) + c_stiff sum_b T_b^T K_b T_b + diag(c_stiff k_j + c_damp c_j),

* M exact (at the iterate where S is factorised).
* Gravity's geometric stiffness, per body (the 3D form of the planar one in ``recursive_mbd.integrate.implicit``): body
  positions are c_i = sum over the path from the ground of R_b w_b (w_b: body-frame vectors from joint to centre
  of mass and from centre of mass to the next joint), so the potential V = -sum m_i g . c_i is sum_b V_b(R_b),
  each a function of one absolute rotation, V_b = -F_b . R_b e_b - sum over children k of F_k . R_b d_k (F_k the
  weight of the subtree of k; e_b = c_b - joint point of b, d_k = joint point of k - c_b). Turning R_b by
  exp([delta]) (delta in ground axes), -F . exp([delta]) r has the Hessian

      K(F, r) = (F . r) 1 - (F r^T + r F^T) / 2        (a hanging pendulum: m g L on both horizontal axes),

  and K_b = K(F_b, e_b) + sum_k K(F_k, d_k), which acts on the body's angular velocity (T_b: the rows of the
  joint Jacobian giving it): R_b^T K_b R_b is added to the angular block of the body's spatial inertia before
  the elimination (``_kernels.spatial.implicit.geometric_stiffness``). It is the exact Hessian where every
  V_b is stationary (a chain hanging straight: tested against finite differences of the inverse dynamics); away
  from there the terms grad V_b . d^2(delta_b)/dq^2 (rotations do not commute) and the antisymmetric part are
  lagged: by Baker-Campbell-Hausdorff, sum_k G_k . (W_p(k) x W_k) / 2 (G_k the gravity moment of the subtree
  of k, W the bodies' absolute rotation increments), a parent-child coupling the per-body form leaves out.
  Relative to K it is of the order of the swing angle, and its effect on Newton grows like (h omega_max)^2:
  measured on the hanging chains of ``benchmarks/spatial_simulate.py`` (1 m, N spherical links), N = 100 hanging
  straight converges in 4 iterations a step at dt = 0.01 s (h omega_max ~ 10), but tilted by 0.02 rad it does
  not converge at dt = 0.01 s and needs dt = 2.5e-3 s; tilted by 0.3 rad, N = 20 needs dt <= 4e-3 s and
  N = 100 does not converge at dt = 1e-3 s; even at 1e-3 rad, N = 1000 converges only from dt = 6.25e-4 s
  (slender links: the coupling turns each link about its own axis, where its inertia is small). Still, on that
  small 3D swing (``python3 benchmarks/spatial_simulate.py implicit``, 1 s, error 1e-3 of the amplitude)
  it ran 3.7x (N = 100: 0.024 s against 0.089 s) and 4.7x (N = 1000: 1.8 s against 8.5 s) faster than dopri5 at
  matched accuracy, 5.1-5.2 Newton iterations a step (quiet 2-core machine). Large swings of long chains need
  the coupling in S (future work) or an explicit method.
  Where M + c_stiff K is not positive definite (subtrees above their joints with a large step) the
  factorisation falls back to S without K.
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

S has the form of a joint-space mass matrix with modified body inertias and a joint diagonal added to each
D_i = S_i^T I^A_i S_i (as rotor inertias or armatures would be): the articulated-body elimination factors it in
O(N) and two sweeps apply its inverse (``_kernels.spatial.implicit.effective_factor``, ``effective_apply``); no
nv x nv matrix is formed.

Lagged (omitted from S; they change the Newton contraction rate, never the converged step): point-to-point
spring-dampers, forces and torques, the velocity-product terms (Coriolis, gyroscopic) in C and K, d(M vdot)/dq, the
spherical spring's J_r^-1 - 1, tau's dependence on (q, v), the rest of gravity's stiffness above, and the tangent map of
(+) (dexp of the increment: 1 + O(h |v|)). The iteration is therefore linearly convergent; its contraction factor is
measured at every iteration (``result.newton_contraction``: the geometric mean of the ratios of successive corrections
of the state (positions and velocities) above 1e3 newton_tol, with factors kept from an earlier step included, and
``result.newton_contraction_max``). The velocity-product terms dominate on fast rotation: their ratio to M is about
c_damp |omega|, so a body spinning at omega needs h |omega| well below 1 for a fast contraction (measured 0.02-0.05 on
the spatial double pendulum of the tests at dt = 2.5e-3 - 1e-2, 6.6-9.7 iterations a step with positions and
velocities to newton_tol = 1e-12). A step
that does not converge in max_newton iterations raises SimulationError (time, cause, the samples so far in .result).

The factors are made at the first iterate of a step and reused, over later steps too, while the corrections
shrink at least 20x per iteration (as the planar loop, ``recursive_mbd.integrate.implicit``). Output at ``t_eval`` and
events use a cubic Hermite interpolant of (q, q') and (v, vdot) at the step ends (quaternions renormalised in the
result).

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
derivative of phi(q (+) delta) by delta is J(q+) dexp(delta) = J(q+) (1 + O(|delta|)): taken as J, as the tree's
tangent map is. The Newton matrix is then the planar one,

    [S   J^T  0             ]
    [J   0    J J^T / c_stiff]
    [J   0    0             ]

and is solved the same way, by the same kernels: X = S^-1 J^T by m applies of the articulated-body factors
(``_kernels.spatial.implicit.effective_apply``, O(N) each) at the iterate where S is factorised, G = J X (m, m);
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
the correction there being max(c_stiff max |dvdot|, c_damp max |dvdot|, max |J^T dnu|): 0.02-0.03 on the RSSR
linkage of the tests, 6.5-7.7 iterations a step). phi and J v are then zero to the Newton tolerance at every step (RSSR:
|phi| <= 3e-14 m, |J v| <= 7e-11 m/s at dt = 1e-3; ``tests/test_spatial_implicit_loops.py``), and the state and
the multipliers converge at second order (error ratios 4.04, 4.02 when dt halves). ``result.multipliers`` (nt,
m): lambda of the converged step at the step ends (linear in time between them at t_eval points and events), at
t0 that of the constrained dynamics at the start projected onto the loops; the same field as the planar method's. A loop
locked at a singular position (closed only where J loses rank: two links stretched straight to a tied tip) leaves
the position rows unsolvable: the correction stalls and the run stops with SimulationError naming the time and
the locked loops (the samples so far in .result); so does a step too large for fast motion (h omega ~ 1: the
lagged loop-force stiffness grows like omega^2), where a smaller dt helps.

Measured (``python3 benchmarks/spatial_simulate.py loops``: the small 3D swing of the hanging chain above, its tip
also tied by two 0.3 m distance links to ground points beside it (m = 2), 1 s, each method at its cheapest
setting reaching 1e-3 of the amplitude against dop853; quiet 2-core machine): N = 10: 0.005 s against dopri5's
0.004 s; N = 100: 0.075 s against 0.24 s (3.2x); N = 1000: 3.1 s against 24.4 s (7.9x); 3.9, 5.0 and 6.1 Newton
iterations a step. As for the tree, N = 1000 converges only from dt = 6.25e-4 s
(the lagged gravity coupling above), not at 1.25e-3 s and larger.
"""

import numpy as np

from . import runs as _runs
from .newton import run_generalized_alpha, run_options, spatial_joint_spring_diagonals


def simulate_generalized_alpha(model, inputs, loop, q0, qd0, t0, t_end, dt, *, every=1, t_eval=None, events=None,
                               rho_inf=0.9, newton_tol=1e-12, max_newton=50, max_steps=10_000_000, progress=None,
                               max_wall_time=None):
    """Generalised-alpha run on a Model3D (called by ``rm.simulate(model3d, method="generalized_alpha")``).

    ``inputs`` (the spatial run inputs: tau constant or a function, element input slots) and ``loop``
    (``SpatialTimeLoop``) come from ``integrate.simulate``; q0 (nq,) with unit quaternions and qd0 (nv,) checked
    there. Options as for the planar method (``implicit.simulate_generalized_alpha``); the result has
    ``newton_iterations``, ``newton_factorizations``, ``newton_contraction`` and ``newton_contraction_max`` (module
    docstring), and ``multipliers`` (nt, m) on a model with loops; ``nfev`` counts residual (inverse-dynamics)
    evaluations. Raises SimulationError with the samples so far when a step's Newton iteration does not converge
    in ``max_newton`` iterations.
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
