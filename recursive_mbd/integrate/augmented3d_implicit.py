"""Generalised-alpha and BDF on a spatial model in absolute coordinates: ``rm.simulate(model3d,
method="generalized_alpha", formulation="augmented", dt=...)`` and ``rm.simulate(model3d, method="bdf",
formulation="augmented", rtol=..., atol=...)`` (the section "BDF" at the end).

Why absolute coordinates
------------------------
In joint coordinates (``spatial_implicit``) one joint's bending turns the whole subtree below it, so a step's
equations are strongly nonlinear in its unknowns and Newton from the predictor wanders on long chains swinging
widely (1000 spherical links tilted 0.3 rad stop at t = 0.02 s at dt = 0.01 s). Here every body has its own pose
(position and rotation), the joints are constraints between a body and its parent, and a kink turns one link:
the equations are mildly nonlinear (the route of Chrono, Exudyn and M-ABD).

Scheme
------
Index-3 generalised-alpha on the Lie group R^3 x SO(3) per body (Arnold & Bruls 2007; Bruls, Cardona & Arnold
2012). Body i has z_i = (c, R) and, inside the step, the velocity v_i = (c', omega_b), omega_b in BODY axes (the
run's ``zd`` holds omega = R omega_b in ground axes, as ``dynamics.augmented3d``); with the coefficients of
``newton.generalized_alpha_coefficients`` a step h:

    (1 - alpha_m) a+ + alpha_m a = (1 - alpha_f) vdot+ + alpha_f vdot,
    v+ = v + h (1 - gamma) a + h gamma a+,
    Delta = h v + h^2 (1/2 - beta) a + h^2 beta a+,     c+ = c + Delta_c,     R+ = R exp([Delta_omega]),
    r   = M vdot+ + G(z+)^T lambda+ - Q(z+, v+) = 0        (6 a body: m c'' ..., J_c omega_b' + omega_b x J_c
                                                            omega_b ... in body axes),
    r_C = C(z+) / c_stiff = 0                                    (the joints' rows),

the unknowns vdot+ (6 a body) and lambda+ (a multiplier a joint row, the force and moment components of
``_kernels.augmented.spatial3d``), G the joints' velocity rows and C their position residuals (the same rows),
Q gravity, the gyroscopic moment and the joint forces tau (constant). The rotation is updated on the group (the
quaternion multiplied on the right by exp(Delta_omega / 2)): unit by construction. Body axes for omega: a slender
link's spin is then decoupled exactly from its constraint forces (they have no moment about its axis at any
iterate), where in ground axes the axis of a turn is not the link's and Newton's first corrections on a 1000-link
chain spun its top links at 1e5 rad/s^2 and diverged. The position rows are divided by
c_stiff = h^2 beta (1 - alpha_f) / (1 - alpha_m), so that their derivative by vdot+ is G itself and the Newton
matrix stays well conditioned as h falls (the scaling of Bruls, Cardona & Arnold). Second order for every rho_inf
(measured in ``tests/test_augmented3d_implicit.py``); C = 0 at every step end to the Newton tolerance.

Velocities
----------
The index-3 step holds C(z+) = 0 but not G(z+) v+ = 0. Along a constraint's normal the position rows fix Delta, and
the update then gives v+ = (1 - gamma / beta) v + h (1 - gamma - gamma (1/2 - beta) / beta) a: the scheme's spurious
root, which changes sign from step to step and is damped by about rho_inf a step (Arnold & Bruls 2007; the
velocities and multipliers of the index-3 generalised-alpha lose an order: Arnold, Bruls & Cardona 2015, "Error
analysis of generalized-alpha Lie group time integration methods for constrained mechanical systems"). Where a step
cannot resolve the motion it leaves a large velocity gap along the normals: the whip of a slender chain turns its
last links at up to 90 rad/s (dopri5, 100 links at 0.5 rad; h omega = 0.9 at h = 0.01 s). So each converged step's
velocities are projected, mass-orthogonally, onto the joints' velocity rows: v+ <- v+ + dv, M dv + G^T mu = 0,
G dv = -G v+ (Bayo & Ledesma 1996, "Augmented Lagrangian and mass-orthogonal projection methods for constrained
multibody dynamics"; the positions hold already), before anything reads the step's end (tau's and the elements'
power and work, events, the t_eval samples, the next step). The system is the dynamics' [[M, G^T], [G, 0]], which
the step's own elimination solves with c_stiff = c_damp = 0 and the tangent maps 1 (no geometric stiffness,
gyroscopic or coupling block; ``kernels.project_velocity``: ``residual`` for the rows, ``factor``, ``solve``). On a
tree of spherical joints the fused passes solve it (``kernels.spherical_project``): the same pipeline and
elimination as a Newton iteration, on records (``kernels._projection_body``) that hold the matrix's blocks and the
rows' right-hand side G v, the joint points' velocity gap in the joint frame, where the iteration's hold its position
rows; exact (tested against the explicit augmented route's projection, ``augmented3d.project``, on random trees to
1e-12 of the change: measured 1e-14), O(N), one pass each way a step. The projection changes v+ by the step's
velocity error along the normals, O(h^2) where the motion is resolved, so the order stays 2
(``tests/test_augmented3d_implicit.py``). Models with closed loops or drivers are not projected (the plain index-3
step: the loops' rows would need the bordered solve, a driver's row its rate f'(t+) and its power's multiplier);
``PROJECT_VELOCITIES`` = False turns it off.
Only where the gaps exceed what the Newton tolerance leaves: Newton accepts a step whose velocities are off by up to
newton_tol in the correction's metric ("Convergence" below: each component of c' in m/s, each of omega_b times the
body's radius of gyration r_g), and such errors move a joint's velocity row g . v (coefficients a on c', b on
omega, ground axes) by up to newton_tol times the row's reach, |a|_1 + |R^T b|_1 / r_g summed over its two bodies
(``kernels._row_reach``: 5.4 on a slender link's transverse rows, 2 on its axial one). A step whose every row has
|g . v| <= PROJECTION_MARGIN (1) newton_tol times its reach is left as it is: its gaps are within what its accepted
Newton error makes by itself, and the projection would move its velocities by about as much. So a skipped
projection leaves every row's gap within newton_tol times its reach (tested after every step of a 1000-link swing,
against the rows of ``augmented3d.assemble``; and that the fused and the general kernels skip the same steps). The
rows are measured at the step's end in one pass over the bodies on numba's threads (``kernels.spherical_gaps``,
which gives tau's power there too; the general kernels from the rows that ``residual`` makes): 54 ns a body on one
thread at N = 1e4 and 1e5 (its arithmetic: both rotations, the joint frame, three rows' reach), against the
projection's 288. The gaps before the projection, largest a step (the chains of
``benchmarks/implicit3d.py``, 1 s at dt = 0.01 s, every step projected): the small swing (1e-3 rad, rho_inf = 0.9)
4.6e-12 to 2.1e-8 m/s at N = 1e4 (median 4.9e-11; at the pin until t = 0.55 s, then at the free end, where the
tilt's wave arrives) and 1.2e-12 to 2.6e-9 m/s at 1e5 (the free end's falling like the link's length); the whips
2.5e-6 to 2.5e-2 m/s (100 links at 0.5 rad, 1000 at 0.3 and 0.5 rad, rho_inf = 0.9 and 0.5), 1e4 to 1e8 times
newton_tol's reach, so they are projected at every step as before. Left unprojected, the small swing's gaps grow
back from zero towards the index-3 step's own offset (0.2 to 0.5 newton_tol's reach a step on the first steps, at
the pin) and the trigger projects every five to ten steps: 45, 34 and 27 of the 100 steps at N = 1e4, 1e5 and 1e6,
end velocities within 4e-8 (N = 1e4; 3.4e-6 rad/s is newton_tol at the last link's radius of gyration) of the run
projected at every step.
Why a projection, not the last factorisation reused: the Newton matrix of the step differs from [[M, G^T], [G, 0]]
by c_damp D_v + c_stiff (D_z + H) T and its rows by T (and the fused passes keep none of the local blocks' factors,
only K^-1 U), so its factors would solve the projection only as a preconditioner, each refinement a product by the
matrix and a solve: no cheaper than the one exact pass.
Why (measured on the slender chains of ``benchmarks/implicit3d.py``, 1 s at dt = 0.01 s, rho_inf = 0.9): without it
100 links at 0.5 rad stopped at t = 0.741 s, 1000 links at 0.3 rad at 0.789 s and at 0.5 rad at 0.673 s, the last
links' velocity gaps at the joints 1e-2 m/s after the whip and their angular velocities alternating from step to
step, until Newton found no root near its first guess; rho_inf <= 0.7 ran through (the gaps damped faster). With it
every case runs through (figures in ``benchmarks/implicit3d.py``). Its cost: the projection's records take 43 ns a
body against a Newton iteration's 152 (its elimination and back-substitution are an iteration's), about two thirds of
an iteration in all; 10-16% more CPU a link-step on the large swings at rho_inf = 0.5 (3 iterations a step), +34%
wall time on the small swing of 1e4 links (2 iterations a step) at every step. With the trigger above, the small
swing of N = 1e5 (one thread, the code before and this one in alternate processes, load 2 to 4): 973 and 979 ns of
CPU a link-step against 1157 and 1124 before (-13 to -16%), 844 and 842 without the projection (883 and 842 before);
N = 1e6 on one thread (load 2 to 3) 1001 ns against 1166 with every step projected and 855 without: the trigger
leaves 47% of the projection's cost, so the quiet 1e6 run of ``benchmarks/implicit3d.py`` (84.4 s before, 59.9 s
without the projection) measured 69.3 s on the quiet machine (27 projected steps, the gap pass on the other 73;
56.3 s without the projection, ``benchmarks/implicit3d.py``), above the 60 s it aims at. A leaner
elimination for it (its coupling and stiffness blocks are zero) was not tried.

Newton matrix
-------------
With dz+ = c_stiff T dvdot+ (T = diag(1, J_r(Delta_omega)) a body, J_r the right Jacobian of SO(3): the tangent
map of the update) and dv+ = c_damp dvdot+, c_damp = h gamma (1 - alpha_f) / (1 - alpha_m),

    [M + c_damp D_v + c_stiff (D_z + H) T    G^T]
    [G_C T                                   0  ],

* M = diag(m 1, J_c) per body (body axes: constant);
* D_v = d(omega_b x J_c omega_b)/d omega_b = [omega_b] J_c - [J_c omega_b] (the gyroscopic terms, unsymmetric);
* D_z = [R^T X]: the moment rows are R^T X (X the joints' moments on the body, ground axes), and turning R turns
  R^T;
* H: the derivative of the constraint forces G^T lambda by the poses, the multiplier-weighted geometric
  stiffness. A joint with force f (its linear rows' lambda along their directions) at the arm r_c from the child's
  centre of mass and rho from the parent's, and moment m (its angular rows), in ground axes and ground-axis turns:
  child rotation-rotation [f][r_c], the parent's rotation-rotation [rho][f] + [m], and child-parent couplings
  -[f], -[r_c][f] - [m], [f], -[f][r_c] (the directions turn with the parent); the universal joint's angular
  direction turns with both bodies (its own terms); taken into body axes by R^T on the moment rows and R on the
  turn columns. It couples a body with its parent only: tree structured;
* G_C: the position rows' exact gradient: G for the linear rows and the universal's; for the other angular rows
  the gradient of their residual (equal to G where C = 0, not off it).

Exact: every term above, so the matrix is the residual's derivative and Newton converges quadratically; with the
joint loads' blocks ("Loads that depend on the state" below: tau constant turning with the bodies, the joints'
spring-dampers, a tau function's own blocks by differences) too; left out of the matrix (slowing the contraction,
never changing the converged step): a tau function's dependence on other joints' coordinates and rates, and the
elements that act on bodies (point spring-dampers, forces, torques; below). Tested
(``tests/test_augmented3d_implicit.py``) entry by entry against Richardson-extrapolated central differences of the
step's residual on a random tree of every joint type whirling at up to 75 rad/s (h omega up to 0.75 at h = 0.01 s,
where a lagged velocity-product term, tangent map or multiplier-weighted second derivative would show at
O(h omega)): equal to 5e-10 of the largest entry (the body rows to 1e-11; the rest is the differences' round-off in
the position rows C / c_stiff); the fused spherical passes' correction likewise on a whirling tree of spherical
joints; from a far first guess there, each correction below 1e-3 times the square of the one before
(1.2e4, 1.7e3, 1.2e2, 0.84, 1.2e-5, then round-off).

Iterations a step, where they go (every correction of every step logged, the iteration run on past acceptance to
see the error each iterate leaves: the chains of ``benchmarks/implicit3d.py``, 100 and 1000 links swinging 0.3 and
0.5 rad with the sideways push at rho_inf = 0.9 and 0.5, and 1e2 to 1e5 links swinging 1e-3 rad, 1 s at
h = 0.01 s, 1056 steps): on 100 links at 0.3 rad, rho_inf = 0.9, a typical step's corrections are 5.8e-2, 1.6e-4,
1.2e-7, 6e-14 (quadratic, the matrix exact; the fourth is round-off, where the later ones stall at 2e-14 to
6e-14). The first correction is the first guess's: moving the bodies on at the last step's mean velocity puts the
new velocity off by about (gamma / beta) h a = 2 h a (a the acceleration: 5.8e-2 m/s at the free end, which
accelerates at about 3 m/s^2). Better first guesses, tried on the logs, left the iterations as they were: the
last two steps' mean velocities extrapolated linearly (on the rotations too) halved the first correction (4.18
iterations a step against 4.15), the multipliers extrapolated linearly (4.23), both (4.23), the centres of mass at
constant acceleration cut it to 1e-2 (4.10); on the small swing of 1e4 links the extrapolated velocities cut the
largest first correction from 1.7e-3 to 5.2e-4 and left the second at 5.5e-7 (5.9e-7): the second correction is
not the square of the first's size, which is mostly the centres of mass' motion, along which the step's equations
are nearly linear. So the iterations were the acceptance rule's: the linear contraction estimate theta / (1 -
theta) times the correction is 9e-11 after the third correction above, whose successor is round-off. Quadratic
convergence predicts the next correction as theta^2 times the last (Deuflhard's affine-covariant estimate: omega
|dx|^2 / 2 with omega from the last two corrections); taken on the largest correction it accepted 2 to 9 steps of
a run's 100 whose next correction was 1.2e-12 to 1e-10 (1000 links at 0.3 rad, rho_inf = 0.5: a step's corrections
1.35e-1, 4.4e-3, 1.9e-6, 1.0e-10, predicted 3e-13 after the third), because the parts converge at different rates: the
centres of mass dominate the first corrections and the rotations, slower on a wide swing, the later ones (100 links,
0.3 rad: 1.9e-1, 5.0e-3, 2.7e-6, 2.5e-11, of which the rotations' 5.7e-2, 5.0e-4, 2.7e-6, 8e-12). Predicted for the
centres of mass and the rotations apart (``kernels.predicted_correction``) and accepted when QUADRATIC_SAFETY = 10
times the prediction is <= newton_tol (beside the linear estimate and the stall rule below), replayed on the logs:
no accepted step leaves a next correction above newton_tol but at the round-off stalls of 1000 links (next
corrections 1.2e-12 to 4.8e-12 that no iteration reduces: the linear rule accepts those too); a factor of 5 leaves
one (1.2e-12), 3 two (to 3.5e-12). Iterations a step, the linear rule -> this one (replayed; the runs' own counts
in ``benchmarks/implicit3d.py``): rho_inf = 0.5: 100 links at 0.3 rad 3.51 -> 3.26, at 0.5 rad 3.86 -> 3.43; 1000
links 3.67 -> 3.45 and 4.13 -> 3.70; rho_inf = 0.9, 100 links at 0.3 rad 4.15 -> 3.97; the small swing 2.27 -> 2.00
(100 links), 2.48 -> 2.01 (1000), 2.48 -> 2.12 (1e4 and 1e5). End states within the reach of newton_tol (every
step's accelerations perturbed by newton_tol in random signs, max |z| apart: 1.1e-11 to 2.2e-10 on the large swings
at rho_inf = 0.5, 2.6e-9 at 0.9, where the whip amplifies) of the linear rule's (7e-13 to 1.9e-10; 3.7e-9),
and the differences between dt and dt / 2 the same to 7 digits. Where the third iteration on the small swing goes:
at 1e4 and 1e5 links the third correction is 2e-14 to 5.3e-13, within 6x of the round-off measured at the iterate
(``kernels.spherical_round_off``: 8.9e-14 to 1.2e-13 from 1e2 to 1e5 links, not growing with N on this chain of
1 kg in all) and the fourth stalls at 2e-14 to 5e-14: the third iteration only confirms round-off, but the
prediction after the second is up to 6.5e-13 (1e5 links), so the factor 10 keeps a third iteration on 12 steps of
100. A factor of 1 after the second iteration would take 2.00 iterations a step there, safely on these logs (no
large swing's step is accepted after two), but the predictions after the second correction were up to 160x too
low on the large swings (far from the tolerance: a third correction of 4.4e-7 predicted 2.7e-9), so it was not
adopted. At most 3 iterations a step on the large swings needs a first guess that cuts the second correction
(1.6e-4 above) by 10x: the constant acceleration cuts it 7x to 20x, but is safe only where the accelerations
are smooth ("First guess" below: 3.11 to 3.50 iterations a step at rho_inf = 0.5, 3.86 at 0.9).
It is factorised in tree order in O(N) time and memory: each body with its joint's rows forms a local block of
size 6 + m, factorised by LU with partial pivoting (neither symmetric nor positive definite: compressed links,
gyroscopic terms, the zero block; a pivot is zero below 1e-14 of its column's largest entry), and eliminated into
its parent's (``_kernels.augmented.implicit3d``, Baraff 1996
for the structure); a spherical joint's block by its 3 x 3 blocks, its rows solved for the position and its force
rows for the multipliers, leaving a 3 x 3 matrix inverted with partial pivoting (singular exactly when the block
is: the same failures). Full Newton: the matrix at every iterate.

A tree of spherical joints only (the long chains) takes an iteration in fused passes over the bodies, not five
(``kernels.spherical_forward``, ``FUSED_SPHERICAL``): first what each body's blocks need of its own pose and its
parent's (its own residual terms, the joint's rows, the coupling and stiffness blocks of the elimination: a record
of 114 numbers, ``kernels.LOCAL_SIZE``); then leaves first, each body's residual completed by its children's loads,
its local block eliminated, and its right-hand side eliminated into its parent's at once (the children's Schur terms,
loads and right-hand sides summed in the parent's row of ``diag``, which the parent clears as it reads them); then
roots first the back-substitution, which applies each body's correction to the unknowns as soon as it is complete
(not a pass of its own). The first two go range by range of bodies (``pipeline_range``: from
``kernels.PARALLEL_BODIES`` bodies PIPELINE_RANGES ranges, the last first), the records of two ranges kept, not
one a body: from PARALLEL_BODIES bodies, in each round one of numba's threads eliminates a range while the other
makes the records of the range before it (a round a range: the same bodies and the same arithmetic in the same
order whatever the ranges and threads, so the same bits). The matrix and the elimination
are the ones above with the spherical joint's blocks written out: its rows are the joint frame's axes F (G^-1 = F, no
inverse), its force has no moment about the joint point (the coupling blocks in closed form), and nothing of the
factorisation is kept beyond K^-1 U. The update's bodies are shared among the threads in a fixed number of ranges
(``kernels.CHUNKS``), so a run's results are the same bit for bit whatever the number of threads. Tested against the
general kernels on random trees of spherical joints with joint torques, below and above PARALLEL_BODIES (residual
and correction to round-off; whole runs with the same iterations). The run starts from the same passes: with
c_stiff = c_damp = 0 and the tangent maps 1 their matrix is the dynamics' [[M, G^T], [G, 0]], and from vdot = 0,
lam = 0 one pass each way gives the initial accelerations and multipliers (``kernels.spherical_dynamics``; tested
against the explicit augmented formulation's tree solve), where the explicit route's solve cost more than a Newton
iteration and allocated 1.1 KB a body of its own workspace. Measured on the shared 2-core machine at a load of 13 to
16 (``benchmarks/implicit3d.py``, its last table): N = 1e5 over 1 s, 0.96 us of CPU a link-step before the split,
1.05 after it on one thread, 1.59 on two (both threads' CPU; the wall time longer too: two threads of a process on a
machine this loaded wait for each other at the end of each parallel pass); N = 1e6 over 1 s on two threads 1.08 us
(0.99 before, quiet), peak memory 3.39 GB (2.99 before). On the quiet machine (load 1.3): N = 1e5 over 1 s in 7.7-8.1
s of wall time on two threads against 9.1-9.5 s before (15% less), 9.5 s on one thread (as before).

First guess: lambda+ = lambda, and vdot+ = vdot, the constant acceleration (the scheme's own predictor: a+, v+ and
Delta then follow from the update's formulas, so only the residual is off), where the accelerations are smooth; else
the vdot+ whose update moves every body on at the previous step's mean velocity, Delta = h (Delta_prev / h_prev)
(``kernels.first_guess``, ``kernels.predict``). Smooth: for the centres of mass and for the rotations apart, the
largest change of an acceleration over the last step, |vdot - vdot_prev| (the constant guess's error, h times the
jerk, where the motion is smooth), is at most the largest distance between the two guesses (the mean-velocity
guess's error there) and at most the part's largest acceleration (``kernels.SMOOTH_CHANGE``: an acceleration that
oscillates from step to step, damped by r <= 1 a step, changes by 1 + 1/r >= 2 times itself); the first step and a
step after a failed try take the mean velocity. The choice is the step's, not a body's: guesses mixed body by body
put neighbouring bodies apart by O(h^2 a), the length of a link of a long chain (a 3000-link chain tilted 0.3 rad
took 7.6 iterations a step that way over 0.05 s). The bound by half the acceleration: without it a 3000-link chain
tilted 0.3 rad (rho_inf = 0.9) took the constant acceleration on steps 16 to 26, while its top links' rotations
changed by 2300 to 6100 rad/s^2 a step (the two guesses further apart still), 5 to 9 iterations a step and a halved
step there: 4.24 iterations a step over 0.5 s against 3.20 with the mean velocity alone; with it 3.20 (no step takes
the constant acceleration there). The bound was half the part's largest acceleration; that refused the whip's
growing accelerations too (1000 links at 0.5 rad, rho_inf = 0.5: changes of 0.5 to 0.96 times the part's largest on
steps 57, 58, 66, 67, 72), where the constant acceleration's first error was 6x to 10x smaller than the mean
velocity's (9e-2 against 6e-1 m/s at step 57, which took 5 iterations). With the part's largest acceleration as the
bound, iterations a step at newton_tol = 1e-12 (the first guess replayed in Python with either bound, the runs
otherwise the same): 3.50 -> 3.36 (1000 links, 0.5 rad), 3.22 -> 3.17 (1000, 0.3 rad), 3.22 -> 3.15 (100, 0.5 rad),
3.11 -> 3.05 (100, 0.3 rad) at rho_inf = 0.5, 3.86 -> 3.80 (100, 0.3 rad) at 0.9; 3000 links at 0.3 rad over 0.5 s
3.20 both.

Why not the constant acceleration everywhere: a short link under tension has a stiff, quasi-static rotation whose
accelerations the scheme leaves oscillating from step to step (damped by about rho_inf a step), and they can be
huge: a chain of N links released tilted by theta falls sideways at g sin(theta) except at its pin, so the top
links' rotations accelerate at about N g theta / (chain length), with alternating signs down a boundary layer of a
few links. h^2 beta (1 - alpha_f) / (1 - alpha_m) times those accelerations turned the top link of a 1 m chain of
3e5 links, tilted 1e-3 rad, by 0.19 rad at the first guess (a turn growing like N: about 0.6 rad at 1e6 links), and
at 1e6 links the corrections then wandered between 1e-5 and 1e-3 for 15 iterations without contracting (not a wrong
matrix: along the corrections at 3e5 links, central differences of the residual agree with it to 5e-9 of the
residual); a 3000-link chain tilted 0.3 rad took 10.6 iterations a step and a halved step over 0.05 s, 1e4 links
26.4 and five halved steps, 1e5 links at 1e-3 rad 4.0. The step's choice sees those steps' accelerations jump and
takes the mean velocity there: the positions move smoothly, so that guess is within O(h^2) of the step's motion
(without the bound by half the acceleration: 3000 and 1e4 links tilted 0.3 rad 3.00 iterations a step over 0.1 s,
1e5 links at 1e-3 rad 2.00; with the mean-velocity guess alone 3e5 and 1e6 links converged in 2 iterations a step,
corrections 1e-4, 1e-9, 1e-13, over the first three steps).

Why the count falls, and by less than the first correction (the constant acceleration at every step after the first,
measured with ``benchmarks/implicit3d_guesses.py``'s logs): the mean-velocity guess leaves the velocities off by
about (gamma / beta) h a = 2 h a (Delta off by h^2 a, times the update's d v+ / d Delta = gamma / (beta h)); the
constant acceleration leaves vdot+ off by h times the jerk, the velocities by c_damp h jerk: on the 100-link chain
swinging 0.3 rad (rho_inf = 0.9) the median first correction falls 10x (9.0e-2 to 9.3e-3 m/s), at rho_inf = 0.5 14x
(7.9e-2 to 5.7e-3). Newton's corrections then follow e_(k+1) = K e_k^2, K measured part by part on every step's
logged corrections (medians): the mean-velocity guess's first correction lies along the centres of mass' motion,
where the step's equations are nearly linear (K = 0.04 to 0.09 /(m/s) from the first to the second correction), so
its second is 1.1e-3 (rho_inf 0.9) and 2.6e-4 (0.5), not K e_1^2 with the later K (0.2 to 1.7 for the centres of
mass, 25 to 1000 for the rotations); the constant acceleration's smaller first error lies along the nonlinear
directions (K = 0.3 to 2 for the centres of mass, 1.4 to 30 for the rotations from the first correction on), so the
second correction falls 7x to 20x, not 100x: 1.5e-4 (rho_inf 0.9), 1.2e-5 (0.5), the third 1.2e-7 and 1.6e-10. The
step is accepted after the third where QUADRATIC_SAFETY theta^2 times it, about 10 K e_3^2, is below newton_tol,
i.e. the rotations' e_3 below about 5e-8 for their K of 40 to 130 (e_2 below about 4e-5): met at rho_inf = 0.5 (100
of 100 steps on 100 links at 0.3 rad, 84 on 1000 links), not at 0.9 (31 of 100), where the oscillations that rho_inf
leaves undamped feed the steps' jerk. The constant acceleration at every step: 3.00 to 3.37 iterations a step at
rho_inf = 0.5, 3.78 at 0.9, but 10.6 on 3000 links tilted 0.3 rad (above). The step's choice with its bound by half
the acceleration keeps about half of the gain (the steps where the accelerations change by more than half
themselves, the free end's whip, take the mean velocity). Iterations a step, the mean-velocity guess -> the step's
choice (``benchmarks/implicit3d_guesses.py``, the chains of ``implicit3d.py``, dt = 0.01 s, 1 s): rho_inf = 0.5, 100
links at 0.3 rad 3.26 -> 3.11, at 0.5 rad 3.43 -> 3.22, 1000 links 3.45 -> 3.22 and 3.73 -> 3.50; rho_inf = 0.9, 100
links at 0.3 rad 3.97 -> 3.86; the small swing (1e-3 rad, 1000 links) 2.01 -> 2.00; 3000 links at 0.3 rad, rho_inf =
0.9, over 0.5 s 3.20 -> 3.20. The end states the same to the Newton tolerance's reach (measured on the constant
acceleration at every step: positions to 4e-15 m at rho_inf = 0.5 and 2.3e-11 m at 0.9, quaternions to 1.5e-9 and
4.3e-9, where nsteps newton_tol over a 1 mm link's radius of gyration is 3.4e-7). Tried on the same logs: 2 vdot -
vdot_prev (linear extrapolation: O(h^2) in vdot where smooth, but it amplifies the oscillations: 4.04 and 3.03 to
3.47 a step), (vdot + vdot_prev) / 2 (3.53 at rho_inf = 0.9, 3.01 to 3.37 at 0.5), the multipliers extrapolated
linearly (no change). The acceptance rule replayed on the constant acceleration's logs: QUADRATIC_SAFETY = 3 takes
3.55 a step on 100 links at rho_inf = 0.9 and 1 takes 3.38, both still above 3, and 3 accepts a step of 1000 links
whose next correction is 5e-12 (1 two, to 1e-11): not adopted. At a tolerance matched to the scheme's error
(newton_tol = 1e-10 m/s against a local error of about 1e-6 a step at dt = 0.01 s; the same rule replayed on the
step's choice): 3.46 (rho_inf = 0.9, 100 links, 0.3 rad), 2.99, 3.10, 3.13, 3.24 (rho_inf = 0.5), 2.00 on the small
swing.

Where a step's corrections go, part by part (every step's first seven corrections logged apart for the centres of
mass, the rotations and the multipliers, with the body where each part's is largest; newton_tol = 1e-12). The
matrix is exact and the last corrections above round-off show it: e_(k+1) / e_k^2 steady at 2 to 16 (m/s)^-1 (the
whip of 100 links at rho_inf = 0.9: 8e-3, 2e-3, 2e-5, 3e-9 m/s, ratios 31, 5, 7.5), where a lagged term would leave a
fixed e_(k+1) / e_k. The first ratio is 0.04 to 0.09 because the first correction (the first guess's error, largest
at the free end) lies along the centres of mass' motion, in which the body rows are linear (gravity, a constant M);
the joint rows are quadratic in it (a link turning at a relative velocity dv needs m dv^2 / l more force, summed
down the chain): the multipliers' second correction at the pin, 2.5e-2 N of 9.7 N after 0.22 N (100 links, rho_inf
= 0.9, step 20), is that term, and the second correction of the velocities (2.2e-4 m/s) follows from it, not from
e_1^2 at the later ratio. So 2.2e-4 -> 1.1e-7 is quadratic at the constant of the nonlinear directions and the
first pair predicts nothing (hence the acceptance rule's prediction from the last pair, with a margin). The steps that
take 4 to 6 iterations are the whip's: at the last links, whose tension is the weight of a few links (0.14 to 0.24
N against 10 N at the pin), the rotations' corrections barely contract over the first iterations (2.8e-3, 6.6e-3,
4.0e-3, 3.0e-5 on 1000 links at 0.5 rad, rho_inf = 0.5, step 56): Newton before its quadratic regime, whatever the
tolerance; only the first guess shortens it.

Which guess, then (``benchmarks/implicit3d_guesses.py --alternatives --trace``: other guesses replayed from every
step's start, newton_tol = 1e-10): on 1000 links every step before the whip takes 3 iterations but one at most,
and the steps of 4 or more are the whip's, whose slow corrections are at the last 20 links (turning at up to 56
rad/s, h omega = 0.56). No guess tried shortens them enough: at 0.5 rad, rho_inf = 0.5 and 0.7, the run's guess
takes 3.18 and 3.95 a step (3.80 its first tries), the best of eight guesses chosen at every step with hindsight
3.03 and 3.48, the exact multipliers with the constant acceleration 3.14 and 3.78, the accelerations extrapolated
linearly from the last two steps more than the constant acceleration, the same with an oscillation damped by
rho_inf a step taken out 3.22 and 3.75, and an exact acceptance (knowing the next correction) 3.10 and 3.74. The
guess with the joints' points closed (the centres of mass moved, in parent order, to close the gaps that a guess
extrapolated body by body leaves) took 3.11 and 3.36 (1000 links at 0.5 rad, 0.5, and 0.3 rad, 0.7), but stopped
the 0.5 rad swing at rho_inf = 0.7 on 900 to 1200 links, which the run's guess takes through: not adopted.

Newton's tolerance. newton_tol [m/s] bounds the error that a step's accepted iterate leaves in its velocities (the
correction's scale below); its default, ``NEWTON_TOL`` = 1e-10, was 1e-12. Why: (1) the corrections' round-off (the last
three of seven a step) is 3e-14 to 2.3e-13 (medians) and up to 2e-12 on 1000 links (the multipliers' 1e-12 to 9e-11 N):
at 1e-12 the fourth iteration of most large-swing steps confirmed round-off, and no estimate from the corrections could
accept after the third within 1 to 30 times the floor (replayed: two steps of 1000 links at 0.5 rad, rho_inf = 0.5,
accepted leaving 4.7 times the tolerance, at round-off stalls); at 1e-10 the rule unchanged leaves at most 0.51 times it
(replayed on every logged correction of the large swings and the 1e4-link small swing; tested on 100 links at both
rho_inf). (2) 1e-10 is far below the scheme's own error: the end states of 100 and 1000 links at 0.3 and 0.5 rad over 1
s at dt = 0.01 s differ from dt / 2's by 6e-3 to 5e-2 (max |z|) and their tips from dopri5's by 1.3e-4 to 2.4e-4 m,
unchanged to 1e-10 m by newton_tol from 1e-12 to 1e-9; the constraint drift stays at 2e-16; the end states at the
defaults are within 2e-8 (max |z|) and 1.4e-7 (max |zd|, the free end's angular velocity: 1e-10 m/s at a 1 mm link's
radius of gyration is 3.4e-7 rad/s) of runs iterated twice more at every step, to round-off. Hairer & Wanner's rule
(Solving ODEs II, IV.8: kappa = 0.01 to 0.1 times the error tolerance) would allow far more; 1e-10 keeps the accepted
iterates' error 100x above their round-off. Measured in one run (``benchmarks/implicit3d_newton_tol.py``: before =
newton_tol 1e-12 and the bound at half the acceleration, now = the defaults; iterations a step at rho_inf = 0.5): 100
links at 0.3 rad 3.11 -> 2.89, 1000 links 3.22 -> 3.05, 100 links at 0.5 rad 3.22 -> 3.00, 1000 links 3.50 -> 3.18;
rho_inf = 0.9, 100 links at 0.3 rad 3.86 -> 3.41, the small swing of 1e4 links 2.05 -> 2.00; the whips at rho_inf = 0.9
(1000 links at 0.3 rad, 100 at 0.5 rad) still stop at 0.789 and 0.741 s ("Measured" below: the free end's spurious
spin; they run through since the velocities are projected, "Velocities").

Convergence: the correction of the state, max(c_stiff, c_damp) times the largest |dvdot+| of the centres of mass and of
each body's rotation times its radius of gyration sqrt(trace J_c / 2 m) (the motion of the body's points: [m] and [m/s];
a body without mass counts its rotation in rad), <= newton_tol (default NEWTON_TOL, above); or the error it leaves,
estimated as theta / (1 - theta) times it (theta its ratio to the correction before: Hairer & Wanner's estimate) or as
QUADRATIC_SAFETY times the next correction that quadratic convergence predicts, theta^2 times it, for the centres of
mass and the rotations apart (``kernels.predicted_correction``; above), is; or, a step's first correction, where the
estimate of the step before vouches for it: QUADRATIC_SAFETY K |dx|^2 <= newton_tol for both parts, K the ratio of
that step's second correction to the square of its first (the Kantorovich constant omega / 2 in Deuflhard's form;
carried from step to step as Hairer & Wanner's RADAU5 carries its contraction estimate, and measured again at every
step that takes two iterations: ``kernels.first_correction_accepted``); or it no longer contracts (theta > 1/2) and
is below 100 newton_tol or within 4 times the round-off measured at the iterate (once a step, at the first stall above
100 newton_tol: the residual at the state changed by two units in its last place, taken through the step's factors; a
long chain's tension sums the weight of up to N bodies, so its corrections stall above a tight tolerance: about 1e-13 on
three bodies, where newton_tol = 1e-20 converges there, and no step is accepted while it still contracts). A step whose
correction, not accepted, grows by more than ``kernels.DIVERGENCE`` (2) at two iterations running is diverging from its
first guess and is given up there: on the whips (1000 links at 0.5 rad, rho_inf = 0.9 and 0.7; 3000 links at 0.5 rad)
every step that grew so went on to a singular block after 11 to 20 iterations, and no step that converged ever grew
twice running (the corrections of every step replayed, seven runs of 100 to 3000 links at 0.3 and 0.5 rad, rho_inf =
0.5 to 0.9). Given up, those steps took 4 to 16 iterations: 1000 links at 0.5 rad 4.00 -> 3.88 iterations a step
(rho_inf = 0.9, the step to t = 0.75 s given up at its fourth iteration, not its sixteenth), 3000 links at 0.5 rad
5.98 (15 split steps). The first correction accepted on the carried estimate: where the first guess is the constant
acceleration on a smooth motion, the first correction (1e-6 on chains of 1e2 to 1e5 links swinging in their first
modes, ``studies.hanging_swing_3d``) leaves a second at the round-off (2e-13; K 1e-2 to 3, the round-off making it
larger), and every step but the first takes one iteration: 100 links 200 -> 101 iterations over 1 s, 1e5 links 200
-> 111 and 10.8 -> 7.7 s (``benchmarks/hanging_swing3d.py``), the largest error against the linear modes the
same. Not where the guess is the mean velocity (its first correction 2 h a, 2e-4 on the small swing, leaves a second
of 2e-9): the chains released tilted at the pin (every step two, as before), the whips, and 1e6 links in their
modes, where one short link's rotation oscillates (its acceleration changing by twice itself from step to step:
"First guess"; the mode shape's second difference there is 5x its round-off elsewhere) and every step takes two
(199 iterations). Only without joint forces in the kernel (tau's power is taken at the last residual's
state, the first guess's there); with loads, whose powers are taken at the converged state, the loads' iteration
applies the same rule; bdf carries no estimate (its steps change in size and order). A step that does not converge in
max_newton iterations, that diverges, or whose
local block is singular, is split into two halves, recursively down
to dt / 2^MAX_SPLITS (``result.newton_split_steps`` counts the splits); where that fails too, the run stops with
SimulationError (time, cause, the samples so far in .result).

Measured (``python3 benchmarks/implicit3d.py``, the slender spherical chains of ``benchmarks/spatial_simulate.py``,
dt = 0.01 s, 1 s, newton_tol = 1e-12, on the shared 2-core machine at a load of about 5, so wall times 2-3x a quiet
machine's; dopri5 at rtol = atol = 1e-6 in the same conditions): the small swing (1e-3 rad), rho_inf = 0.9: N = 100:
2.04 Newton iterations a step, 0.17 s against dopri5's 0.26 s, N = 1000: 2.54, 2.2 s against 38.4 s (18x), tips 1e-6
m apart; the 0.3 rad swing with the sideways push: N = 100, rho_inf = 0.9: 4.10 iterations a step, 0.33 s against
0.44 s, tips 1.6e-4 m apart; N = 1000, rho_inf = 0.5: 3.33 iterations a step, 2.8 s against 39.3 s (14x), tips 1.3e-4
m apart; N = 1000, rho_inf = 0.9 stops at t = 0.78 s: there the whip reaches the free end, and the step from
t = 0.78 s, and each of its halves down to dt / 16, diverges from its first guess: 10 to 18 iterations with the
multipliers growing to 1e10 to 1e18 (the last accepted step's are below 11 N, its last twelve joints in tension,
0.5 to 1.1 N) until a local block is singular, at a different body in each try (``SimulationError`` names the time,
the body, the iterations and the multipliers reached); rho_inf = 0.5 damps the high modes that feed the whip and runs
through. The matrix is not the cause (exact, above): the step's equations have no root near the first guess.
With the first guess below it stops at the same time (t = 0.789 s); with the constant acceleration wherever the
accelerations changed by less than the guesses differ (without the bound by half the acceleration) at t = 0.784 s,
Newton not converging in 20 iterations at every split down to dt / 16. Why, from that run's samples beside dopri5's
(rtol = atol = 1e-6, joint coordinates, the same interval, sampled every 0.01 s): no compression: every joint is in
tension in both (the last joint's force along its parent's axis 0.0074 to 0.0176 N in the run from t = 0.65 s,
0.0099 to 0.0101 N in dopri5's, the last link's weight 0.0098 N); the tip follows dopri5's to 3.7e-4 m at t = 0.78 s
(3.6e-3 m at the whip's peak, t = 0.6 s). But the last link spins: the whip reaches the free end at t = 0.55 to 0.6
s (|omega| up to 46 rad/s at link 994 in dopri5, 47 at link 999 in the run); dopri5's free end then calms (its
largest |omega| 4 to 10 rad/s from t = 0.65 s, at links 908 to 992), while the run's last link keeps spinning at 9
to 134 rad/s, changing from step to step (24, 14, 38, 62, 21, 9, 44, 134, 60 rad/s at t = 0.70 ... 0.78 s): a mode
of the free end's short link that the scheme excites at the whip and rho_inf = 0.9 damps by only a tenth a step. At
134 rad/s the link turns by h omega = 1.3 rad in a step (its dynamics far from the step's resolution: the scheme's
answer there is not the motion), and the next step's equations, a turn of that size of a 1 mm link about its joint,
are where Newton stops converging (whether they still have a root there was not settled). So at dt = 0.01 s and
rho_inf = 0.9 the failure is the scheme's spurious spin of the free end, not the first guess and not compression,
and the steps before it already have the free end's rotation wrong (its position right); rho_inf = 0.5 damps that
mode and runs through. That spin is the index-3 scheme's spurious velocity along the joints' normals: with the
velocities projected onto the joints' velocity rows at every step ("Velocities") the run goes through at
rho_inf = 0.9 too.
Long chains, the small swing, rho_inf = 0.9 (``--formulations augmented --tilts 1e-3 --reference 0``, the same shared
machine at a load of 3 to 6, the run getting 40-75% of a core): 1 s of N = 1e4 in 4.2 s (4.2 us a link-step, 2.78
iterations a step), of N = 1e5 in 58 s (5.8 us, 3.07 iterations, peak resident memory of the process 0.73 GB,
``resource.getrusage``; rerun with the round-off test of stalled steps: 3.07 iterations a step again, no split, 150 s
at a load of 5.8 beside a test run); N = 1e6 over 0.1 s with the constant-acceleration first guess: 13.9 iterations a
step and 2 split steps (the corrections wandering between 4e-6 and 5e-4 without contracting, far above the residual's
round-off, 9e-14), 580 s of wall time at 40% of a core, peak resident memory 4.4 GB; with the mean-velocity first
guess (above) 2.00 iterations a step over three steps and 3.93 GB peak (``/usr/bin/time -v``, the compiler in the
process; about 2 KB a body of it the step's arrays), and N = 1e5 over 1 s 2.48 iterations a step (214 s of wall time
at a load of 18). One iteration costs about 1.0 us a body at N = 1e4 and at N = 1e5 (update 0.06, residual 0.17, the
matrix and its factorisation 0.72, the solve 0.08 at 1e4; 0.07, 0.19, 0.71, 0.10 at 1e5), against 2.9 us before the
spherical joints' blocks were eliminated by 3 x 3 blocks (0.06, 0.17, 2.06, 0.58 at 1e4; best of 7 calls, run back to
back at a load of 3), so the targets (1e5 links in 20 s, 1e6 in 60 s and under 4 GB: M-ABD's 0.84 us a link-step) are
not met yet: the matrix's assembly (the geometric-stiffness and coupling blocks, 3 x 3 products in several passes
over the arrays) was then the largest cost. The fused passes of a spherical tree (above) halve an iteration: CPU
time a body of one iteration at N = 1e4 and 1e5, measured in one run (``benchmarks/implicit3d_phases.py``, the
general kernels beside the fused ones, median of 5 interleaved rounds, load 20 on the 2 cores): 731 and 759 ns by
the general kernels (update 42, residual 174, matrix and factorisation 449, solve 66 at 1e4), 340 and 343 ns fused
(update 42, the forward pass 280, the back-substitution 17); whole runs of N = 1e4 over 0.5 s, one after the other
in one process at a load of 6 (``--runs 0.5``): 2.62 us a link-step of wall time (1.74 of CPU) by the general
kernels, 1.26 (0.83) fused, 2.00 iterations a step both, end states 1.7e-13 apart (velocities 6e-11). N = 1e6
over 5 steps: 2.00 iterations a step, peak resident memory 2.90 GB (``/usr/bin/time -v``, warm cache), 3.93 GB
before. The joint coordinates and the drift of the samples are compiled (``_kernels.augmented.recover3d``): they
took 2.2 s a sample at N = 1e4 in Python (0.05 s of N = 1e4 at dt = 0.01 s: 4.5 s before, 0.21 s now, at loads
below 1 and of 3).

Drivers
-------
A driven revolute or prismatic joint (``drivers=``, q_j = f(t)) has one row more, its driver's, after its joint's
rows in the same block (``_kernels.augmented.implicit3d``, its drivers section): r = (q_j(z+) - f(t+)) / c_stiff,
the position row like the joints' (index 3: f' and f'' are not needed), whose velocity row, the joint's angular
(revolute) or linear (prismatic) row along its axis g = F a, carries the multiplier: minus the driving force or
torque, the explicit routes' convention (``spatial3d.driver_row``). g is fixed in the parent as the joint's own
rows' directions, so the multiplier's geometric stiffness is theirs and the Newton matrix stays exact (a revolute
angle's gradient off the joint's other rows included: ``driver_gradient``; tested against finite differences); the
local block is 12 x 12, a fixed joint's size. ``result.driving_forces()`` holds the converged steps' multipliers
(negated) at the samples, their power -mu f'(t+) joins tau's in the applied work (trapezoidal), the first step
starts from the augmented dynamics with the drivers' rows (f'' prescribed: ``augmented3d.TimeLoop3D``'s system),
and ``constraint_drift`` includes |q_j - f(t)|. Second order like the rest (measured in
``tests/test_augmented3d_implicit.py``).

Closed loops
------------
A loop of ``Model3D.add_loop`` (spherical, revolute, distance) has the spatial loop layer's rows
(``_kernels.spatial.loops.loop_equations``, the explicit augmented and the recursive routes' numbers), written on
the absolute velocities of its two bodies; they are auxiliary rows of the step, after the joints' (their
multipliers mu in lam and their position rows in rc after the joints'):

    r   += G_aux^T mu          (the loop forces, the sign of ``spatial_loops``: M vdot + h = tau - J^T mu),
    r_L  = phi(z+) / c_stiff   (index 3, scaled as the joints' rows).

Every loop row is the exact gradient of its residual, so the position rows' derivative is G_aux T (the tangent map,
as the joints' linear rows). The multipliers' geometric stiffness H (the derivative of G_aux^T mu by the poses) is
exact: the loop point's arm turning under the force ([F][r_a] and -[F][r_b]), a distance loop's direction turning
with both bodies (A^T (mu / |d|)(1 - e e^T) A, A the gap's derivative by both poses), a revolute loop's axis rows
turning with both bodies. The two bodies of a loop are in general not a body and its parent, so H would couple
distant bodies of the tree: it is kept out of the tree's matrix K and taken with the loop rows by a bordered solve
(``_kernels.augmented.implicit3d``, its loops section): W = E K^-1 E^T, the compliance through the tree of the loop
bodies' coordinates (E selects them: 12 a loop), by one tree solve per coordinate, then the dense system
[[1 + W H, W G^T], [G_b, 0]] on (the loop bodies' corrections, mu), of size 12 L + m for L loops of m rows (with
H = 0 its Schur complement on mu is G_aux K^-1 G_aux^T), and one more tree solve for the correction. Cost an
iteration: 12 L + 2 tree solves, O(N L), and O((12 L + m)^3): for mechanisms with a few loops. The Newton matrix
stays the residual's exact derivative (tested against central differences of the step's residual on a random tree
of every joint type with a spherical, a revolute and a distance loop, between branches and to the ground, rotating
at up to 20 rad/s: equal to 6e-10 of the largest entry, the body rows to 8e-13; ``tests/
test_augmented3d_implicit_loops.py``). Models with loops take the general kernels (the fused spherical passes are
for trees). The run starts from the recursive route's projected start (``spatial_loops.consistent_start``; the first
step's multipliers those of the augmented dynamics there), ``result.multipliers`` (nt, m) holds the loops' mu of
the converged steps at the samples (the recursive route's lambda), and ``constraint_drift`` includes max |phi|. A
dense pivot below PIVOT_RTOL of its column (the loop rows have lost rank: redundant loops, such as a planar four-bar
built with a revolute loop, or a loop locked at a singular position) stops the run with SimulationError naming the
loop and the time: this route has no minimum-norm multipliers (the recursive route's generalized_alpha has); a
step that does not converge names the loop with the largest gap. The round-off probe of a stalled step
(``correction_round_off``) leaves the loops out (the tree's residual and factor): an estimate of the floor.
Measured (``tests/test_augmented3d_implicit_loops.py``): the RSSR linkage (a ball-joint loop) and the closed governor
(two distance loops between siblings) converge to dop853 at second order in the state and the loop multipliers
(error ratios 4.00 and 4.05-4.10 when dt halves), 2.8 to 3.5 iterations a step, |phi| at round-off (4e-16 m); the
multipliers carry an O(h) transient in the first 30 steps or so, after which they agree with the recursive route's
to O(dt^2). Not the start a_0 = vdot_0's (Arnold & Bruls 2007): with a_0 = vdot(t0 + (alpha_m - alpha_f) h), the
accelerations of the state Taylor-expanded to that time, the largest multiplier error in the first 30 steps is the
same (against ``spatial_loops.loop_dynamics`` at the samples: RSSR, rho_inf = 0.8, 33.3, 34.1, 34.5 dt N against
33.8, 34.6, 35.0 dt N at dt = 4e-3, 2e-3, 1e-3 s; the closed governor, 0.9: 9.7, 11.4, 12.3 dt N both ways), so it
was not adopted.
rho_inf = 1 is unstable on this index-3 scheme, trees included (the undamped trapezoidal rule on index-3
constraints, Cardona & Geradin 1989: the open governor's energy grows by 470 J over 20 s at dt = 2e-3 s); at
rho_inf = 0.9 the closed governor's energy error stays at 9e-4 J over 20 s. ``python3 benchmarks/spatial_loops.py
--implicit`` (a bent chain of N spherical links, its tip tied to the ground, released at rest; load 13 on the 2
cores): N = 10 over 0.5 s at dt = 1e-3 s: 3.00 iterations a step (the recursive route's 8.68), 0.48 s of wall time
(0.60), the middle link's point 4e-5 m from dop853's; N = 100 (1 cm links kinked by up to 1.5 rad) stops within
0.04 s on both routes (here: a local block singular after diverging iterations, at every split down to dt / 16).

Loads that depend on the state
------------------------------
tau as a function (tau(t) or tau(t, q, v), Python or numba-compiled, as ``rm.simulate`` documents) and the force
elements (``Model3D.add_spring_damper``, ``add_joint_spring_damper``, ``add_force``, ``add_torque``) are evaluated at
the joint state of each Newton iterate (q, v of the absolute state: ``_kernels.augmented.recover3d``, O(N)) by the
recursive route's inputs (``spatial_loop._SpatialInputs``) and elements kernel (``_kernels.spatial.elements``: their
generalised forces Q (nv,)), and enter the residual as joint forces tau + Q, each joint's pair of loads on its
child and its parent (``spatial3d.joint_rows``), as a constant tau does (the explicit augmented routes apply the
elements so too: ``augmented3d``). A joint's loads L_j = W(z) tau_j(q_j(z), v_j(z, zd)) (W the wrench of the joint
forces on the child and the parent) depend on the child's and the parent's state only, so their derivative
couples a body with its parent, as H does, and is in the matrix (``_kernels.augmented.loads3d``, added to A_ii,
A_ip, A_pi, A_pp by ``kernels.factor``): by central differences of L_j along the 12 Newton columns of the two
bodies (24 evaluations of one joint's recovery, spring-dampers and wrench a joint and iteration, relative step
1e-5: about 1e-10 relative error), with tau_j's dependence on the joint's own state from the joints' spring-dampers
(the elements' -k (q - rest) - c v, a spherical joint's -k phi - c omega) and from a tau function tau(t, q, v): its
diagonal blocks, d tau_j / d q_j and d tau_j / d v_j, by central differences once a step (at the first iterate,
4 nv calls of the function), its dependence on other joints' coordinates lagged. A constant tau takes the blocks
too (its wrench turns with the child or the parent: a spherical joint's moment R tau), in the fused spherical
passes in closed form (their section). Why by differences and not in closed form: q_j(z) and v_j are the
recovery's (``recover3d``), whose derivatives off the constraints (at every iterate) are not the joint's motion
subspace, for eight joint types; the differences take every one of them, and the wrench's turning, by one routine
(tested against the step residual's differences on a random tree of every joint type: ``tests/
test_augmented3d_loads.py``). Lagged: a tau function's dependence on the other joints, and the elements that act on
bodies (point spring-dampers, forces, torques), whose generalised forces reach every joint between the body and the
root (the blocks of their joint-space form are not tree structured; as body loads they would be, but the route
applies every element as joint forces, as the explicit routes do). Models with a tau function or elements take the
general kernels (a tree of spherical joints too: the fused passes take no blocks by differences). The BDF run
below takes the same loads, blocks and iteration (its section). The iteration runs
in Python around
``kernels.newton_step`` of one iteration (``_Loads.newton``): the loads at the iterate, one correction, the tests of
convergence of ``newton_step`` but its round-off measurement (a correction <= newton_tol, theta / (1 - theta) times
it <= newton_tol, or stalled and <= 100 newton_tol). Measured (``python3 benchmarks/implicit3d_loads.py``: the
three-joint chain of the tests, ``_helpers.swinging_chain``, 0.2 s, rho_inf = 0.9, Newton iterations a step at
dt = 0.01 / 0.005 s, before the blocks -> with them): tau constant 3.00 / 2.98 -> 3.00 / 3.00; joint dampers
tau = -c v, c = 0.01: 4.95 / 4.00 -> 3.00 / 2.98, c = 0.1: 7.80 / 5.95 -> 3.00 / 3.00, c = 1 N m s: 47.6 with every
step split / 13.8 -> 3.00 / 3.00, no split (the lagged damping contracted by c_damp c over the joints' inertias,
about 0.01 kg m^2 here); the same chain with a spring-damper on each joint, two point spring-dampers, a force and a
torque (``tests/test_augmented3d_implicit_features.py``, 0.3 s): 6.93 / 5.87 -> 5.40 / 4.50 (the point
spring-dampers, 20 and 10 N/m, the force and the torque lagged). ``applied_work`` holds the work of tau and of the
elements' forces and torques, ``dissipated_work`` that of the elements' dampers (trapezoidal on their powers at the
step ends, evaluated at the converged state), so E + dissipated - applied is the run's energy error with the
springs' potential in E. Drivers with tau functions or force elements: a driven joint's row is its driver's as
without loads, and the loads are the recursive route's (its coordinate and rate at the driver's values: its own
spring-damper's force does not depend on the state, only its wrench's turning is in the matrix); the run starts
from the explicit augmented dynamics with the drivers' rows and the loads at the start as a constant tau
(``augmented3d.TimeLoop3D``, ``loads_in_tau``). The joints' angles
(revolute, cylindrical, universal, planar) come out of the absolute state wrapped to (-pi, pi] (atan2); where the
run evaluates joint states (loads, events) each is taken within pi of its value at the last step's end
(``_Angles``), so a joint spring, a controller, an event and ``result.q`` see the turns a joint has made, as the
recursive route's q (without that a revolute spring's force jumped at the half turn); a run without loads and
events takes each sample's angles within pi of the sample's before (from q0's), which is continuous where a joint
turns by less than pi between samples (always with every = 1).

Output and events
-----------------
Without ``t_eval`` the samples are every ``every``-th step's end, t0 and t_end always. With ``t_eval`` (sorted, in
[t0, t_end]; t0 and t_end added) they are the steps' dense output at those times (``_kernels.augmented.dense3d``):
each centre of mass a cubic Hermite interpolant of its positions and velocities at the step's ends, each body's
velocities (c', omega_b) of themselves and their rates (the recursive generalized_alpha's interpolation, its
``hermite_span``), and each rotation on SO(3), R0 exp([phi(s)]) with phi the cubic Hermite interpolant in the
exponential coordinates at the step's start that meets both ends' rotations and angular velocities (a unit
quaternion at every s); the work terms and the drivers' multipliers linear. Third order in the step where the
scheme is second: the samples converge at its order to the states at those times (measured against runs that step
onto them). Events (``rm.simulate``'s ``events``: g(t, q, v), ``terminal``, ``direction``) are evaluated at every
step's end on the joint state, and a sign change is located on the same dense output by the Illinois method
(``integrators.illinois_update``, as the compiled loops' ``timeloops.newton.locate_span``); a terminal one ends the
run there, its last sample at the event (``result.status`` "event"). ``progress`` as ``rm.simulate``'s (a bar or
log records, over the steps); Ctrl-C stops the run after the step in progress and raises KeyboardInterrupt
(``runs.RunInterrupted``) whose ``result`` holds the samples so far (status "interrupted"), as the compiled loops'.

Scope: every joint type of the augmented formulation, closed loops, gravity, tau constant or a function, force elements,
drivers (with tau constant or a function, and elements), events, t_eval, progress, max_wall_time. ``result.qdd()`` is
the recursive formulation's dynamics at each sample's joint state with the run's tau and drivers. The result holds the
joint coordinates (``augmented3d.joint_from_absolute`` compiled: ``_kernels.augmented.recover3d``, O(N) a sample) and
the absolute state ``z``, ``zd``, with ``constraint_drift`` (max |C| a sample, the same pass, the loops' gaps included),
``multipliers`` (the loops', above), ``newton_iterations`` and ``newton_factorizations`` (equal: full Newton);
``applied_work`` is tau's (and the drivers', the elements' forces') work by the trapezoidal rule on its power at the
step ends, ``dissipated_work`` the elements' dampers'.

BDF
---
BDF on a spatial model in absolute coordinates: ``rm.simulate(model3d, method="bdf", formulation="augmented",
rtol=..., atol=...)``, variable step, orders 1 and 2.

The companion of the generalised-alpha method above (a fixed step on the same coordinates): the same unknowns,
residual and O(N) Newton matrix eliminated in tree order, the same loops, drivers, dense output, events and
failures; only the step's formula, its coefficients and the step-size control are BDF's (``simulate_bdf``), and the
loops' multipliers and drivers' forces it reports are the dynamics' at the samples (below), not the steps'.

Scheme
~~~~~~
BDF on the Lie group R^3 x SO(3) per body in local coordinates (Wieloch & Arnold, "BDF integrators for constrained
mechanical systems on Lie groups", J. Comput. Appl. Math. 2021): each step's history is expressed in the local
coordinates of the current pose (c_n, R_n), x_j = (c_j - c_n, log(R_n^T R_j)) for the past poses (x = 0 at the
current one), the new pose is c+ = c_n + x+_c, R+ = R_n exp([x+_omega]), and the velocities v = (c', omega_b)
(omega in body axes) lie in the Lie algebra, one vector space at every time. With the variable-step BDF-k
coefficients a_j [1/s] of the nodes t+, t_n, t_{n-1}, ... (y'(t+) ~ a_0 y+ + sum_{j >= 1} a_j y_{n+1-j}, the
derivative of the interpolating polynomial at t+), the step's equations are

    a_0 v+ + sum_{j >= 1} a_j v_{n+1-j} = vdot+                                     (velocities),
    a_0 x+ + J_r(x+) S_x = v+,   S_x = sum_{j >= 2} a_j x_{n+1-j}                   (positions),
    r   = M vdot+ + G(z+)^T lambda+ - Q(z+, v+) = 0,   r_C = C(z+) / c_stiff = 0    (the residual of the GA),

unknowns vdot+ and lambda+ as the GA's. The position rows are the BDF formula for x' = J_r(x)^-1 v (the local
coordinates' rate at R = R_n exp([x]), J_r SO(3)'s right Jacobian) multiplied by J_r(x+), which leaves a_0 x+ alone
(J_r(x) x = x). J_r(x+) S_x is taken at the predictor's x_pred instead of x+ (``_kernels.augmented.bdf3d.history``):
|J_r(x+) - J_r(x_pred)| <= |x+ - x_pred| / 2 = O(h^(k+1)) and S_x = O(h), so the change is O(h^(k+2)), an order
beyond the local error, and the step's update is then affine in the unknowns:

    v+ = v_b + c_damp vdot+,     x+ = x_b + c_stiff vdot+,     c_damp = 1 / a_0,     c_stiff = c_damp^2,

v_b = -c_damp sum_{j >= 1} a_j v_{n+1-j}, x_b = c_damp (v_b - J_r(x_pred) S_x) (S_x's linear part without J_r). This
is the generalised-alpha update of ``_kernels.augmented.implicit3d.update_state`` with alpha_m = alpha_f = 0,
gamma = beta = 1, h = c_damp and the start's velocities zb0 = v_b and accelerations acc0 = 2 (c_damp v_b - x_b) /
c_damp^2 (its v+ = zb0 + h vdot+, Delta = h zb0 - h^2 acc0 / 2 + h^2 vdot+): every kernel of the GA's step (the
update on the group, the residual, the Newton matrix M + c_damp D_v + c_stiff (D_z + H) T with T = J_r(x+), the
tree elimination, the fused spherical passes, the loops' bordered solve, the drivers' rows) runs unchanged with
these coefficients, and the matrix stays the exact derivative of the step's residual where the GA's is (its
module; tested there on random trees, and here by the iterations' quadratic convergence). The index-3 rows are
scaled by 1 / c_stiff as the GA's (Bruls, Cardona & Arnold 2012; Wieloch & Arnold's scaling). Orders 1 (implicit
Euler) and 2, both A-stable; higher orders are not offered (BDF3-5 lose A-stability, and the long undamped chains
sit at their stability limit: ``_kernels.planar.bdf``). A run starts at order 1 and takes order 2 (when max_order
allows) from its third step, when three poses fix the predictor.

Predictor, error estimate, step control
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The predictor y_pred is the polynomial through the k + 1 last accepted values at t+ (positions in the local
coordinates, velocities), at the first step the Taylor polynomial y_n + h y_n' (x' = v_n, v' = vdot_n, the initial
dynamics). Newton's first guess is the vdot+ that puts the bodies at x_pred (the GA's lesson: a stiff, quasi-static
rotation's accelerations oscillate from step to step, its position moves smoothly), lambda+ = lambda_n. The local
error is estimated from the predictor's miss (Milne's device): y_new - y_pred ~ y^(k+1) / (k+1)! prod_j (t+ - t_j)
over the predictor's nodes, and the error of BDF-k with constant steps is C_k h^(k+1) y^(k+1) (C_1 = 1/2, C_2 =
2/9), so err = C_k (k+1)! h^(k+1) / prod_j (t+ - t_j) (y_new - y_pred). Its norm is the largest over the bodies of
|err| / (atol + rtol |y|) on the centres of mass (|y| = |c|), the rotations at the radius of gyration (the motion of
the body's points [m], a turn of 1 rad as |y|), and the velocities weighted by h (|h err_v| / (atol + rtol h |v|):
on index-3 constraints the velocities' BDF error estimate is an order lower than the positions' (the velocities
meet the constraints' derivative only to O(h^k), and the error coefficient jumps when h changes), the weighting of
Hairer & Wanner's RADAU5 for index-2 components; without it the steps collapse on a changing step). A step is
accepted when the norm is <= 1, and the next h is h min(MAX_FACTOR, max(MIN_FACTOR, SAFETY norm^(-1 / (k+1))))
(at most doubled: variable-step BDF2 is zero-stable for ratios below 1 + sqrt 2), at most max_step; a rejected one
is retried with that h (< h). A step whose Newton iteration fails (max_newton iterations, a singular local block)
is retried at h / 4; where h falls below 1e-14 (1 + |t|), or after MAX_FAILS failed tries in a row, the run stops
with SimulationError naming the time, the cause (the GA's messages: the body, the correction, the residual) and
keeping the samples.

Newton's tolerance (``newton_tol``, the GA's test on the correction of the state in m: ``implicit3d.newton_step``)
defaults to 1e-3 min(rtol, atol) (not below 1e-14), far below the error the step control admits, so the
constraints C(z) = 0 hold at every step end to it, whatever the tolerances.

First step: h0 = first_step, or 0.5 sqrt(1 / max(|vdot_c| / (atol + rtol |c|))) from the initial accelerations of
the centres of mass (BDF1's miss is about h^2 vdot), at most max_step and t_end - t0.

Measured (``tests/test_augmented3d_bdf.py``): at fixed steps on a spatial double pendulum the errors fall by 2.01-2.03
(order 1) and 4.01-4.03 (order 2) when the step halves, 2.0 Newton iterations a step; variable steps on the mixed
chain of the tests, rtol = atol from 1e-3 to 1e-8: 13 to 421 steps, 2.8 to 2.0 iterations a step, the error at 0.5 s
falling as rtol^(2/3) (BDF2's error per step), the joints closed to the Newton tolerance. ``python3
benchmarks/implicit3d.py --methods bdf`` (the slender spherical chains, 1 s, rtol = atol; the shared 2-core machine
at a load of 10 to 13): N = 100, tilt 1e-3: 17 steps (3 rejected), 2.35 iterations a step at rtol 1e-4, 124 (16),
2.26 at 1e-6; tilt 0.3 with the push: 195 (20), 2.21 and 1268 (81), 2.13; N = 1000, tilt 1e-3: 21 (6), 2.57 and 157
(34), 2.43; tilt 0.3: 256 (46), 2.36, 1.16 s of wall time, and 2754 (74), 2.05, 10.0 s; N = 1e4, tilt 1e-3: 23 (6),
2.52, and 167 (38), 2.46 (iterations counted over every try, per accepted step). Wall time of N = 1e4 at rtol 1e-4:
1.0 s on one numba thread (4.4 us a link-step), 5.1 s on two at that load (the parallel passes' threads wait for
each other on a loaded machine, as the GA's docstring says); the GA at dt = 0.01 s in the same conditions, one
thread: 2.84 s per simulated second.

Loads that depend on the state (tau functions, force elements) are the generalised-alpha run's ("Loads that depend
on the state" above, ``_Loads``): evaluated at every iterate's joint state, their joint blocks in the Newton matrix
(``_kernels.augmented.loads3d``, the step's coefficients c_stiff = c_damp^2, c_damp = 1 / a_0 in place of the GA's:
the blocks are the derivative by the same affine update), a tau function's dependence on other joints and the
elements that act on bodies lagged, the iteration ``_Loads.newton``'s, the start ``_Loads.start``'s, and their
power (tau's, the elements' forces' and torques', the dampers') evaluated at each accepted step's end, its
trapezoidal sum in ``applied_work`` and ``dissipated_work`` (evaluated only where the error test accepts the step:
a rejected try leaves the work and the angles' reference as they were). A constant tau's turning is in the matrix
as the GA's (blocks by differences in the general kernels, closed form in the fused spherical passes). Measured
(``tests/test_augmented3d_bdf.py``): the chain with a spring-damper on each joint, point spring-dampers to the
ground and between bodies, a force of time, a follower torque and a tau(t, q, v), against the recursive route's
dopri5 run over 0.3 s: at fixed steps (BDF2, dt 4e-3 -> 2e-3 -> 1e-3 s) the state error 1.9e-2, 4.8e-3, 1.2e-3,
the energy balance 8.7e-3, 2.2e-3, 5.4e-4 (ratios 4.0, second order, and the applied and dissipated works' too);
variable steps (the elements alone), rtol = atol 1e-4 to 1e-7: 35 to 292 steps, 2.9 to 2.25 iterations a try (the point
spring-dampers, the force and the torque lagged), the error 6.4e-2 to 1.2e-3; joint dampers tau = -c v on the
three-joint chain (0.2 s, rtol = atol = 1e-6): 2.00 iterations a try at c = 0.1, 1 and 10 N m s, where with the
tau function's blocks left out 3.9, 8.5 (6 failed tries) and 8.5 (105 failed tries, 224 steps against 62).
The elements that act on bodies stay lagged (``python3 benchmarks/implicit3d_loads.py``: the three-joint chain with
a point spring-damper to the ground and one between two bodies, 0.3 s, iterations a try at rtol = atol = 1e-4 /
1e-6): k = 20 N/m 2.89 / 2.48, k = 200 N/m 3.52 / 2.85, without them 2.00 / 2.00 (generalized_alpha at dt = 0.01 /
0.005 s: 5.17 / 3.97, and 29.7 with 25 split steps / 7.75, without them 2.00 / 2.00): the step control's smaller
steps keep their contraction (c_stiff k over the inertias) small.

Multipliers and driving forces
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A step's multipliers lambda+ are those of BDF on the index-3 equations, outside the error test, and they carry an
error that does not fall with the tolerance where the steps are of order 1 and change size: the loops' multipliers
of the run's first steps were 17 to 28 % off the dynamics' at the steps' own states at rtol 1e-9 and 1e-11 alike (a
random tree of every joint type with a ball-joint loop), 1e-3 to 2e-3 at the shortened last step, 1e-6 to 5e-6 at
the median sample; a driven slider's force 4.187 N at the first step's end for the inverse dynamics' 4.224 N. So the
run reports, at every sample (step ends, t_eval times, events), those of the dynamics at the sample's state: the
recursive formulation's (the loop layer's lambda, the hybrid dynamics' driving forces) at its joint state (q, qd)
and time with the run's inputs (tau, a tau function, the force elements and the drivers evaluated at t; the driven
coordinates and rates at f(t), f'(t)), which ``result.qdd()`` evaluates too: ``result.multipliers`` once the run
ends (``SimulationResult._recursive_multipliers``: O(N) a sample and the loop layer's solve; a sample where they
cannot be evaluated gives None and a RuntimeWarning: ``integrate.result.sampled_multipliers``), ``driving_forces()``
when called. Why the joint state and not the augmented KKT system at the sample's (z, zd): the index-3 steps hold
the position rows C(z) = 0 to the Newton tolerance but the velocity rows G(z) zd = 0 only to the scheme's error, and
the KKT multipliers see those gaps in the rows' velocity products (on that tree at rtol 1e-9: zd up to 1.3e-6 m/s
off the image of (q, qd), the KKT multipliers at (z, zd) 2.7e-7 off, relative, those at the image of (q, qd) 2e-14);
the joint state drops the gaps (each joint's rates read off the relative motion, ``recover3d``), so its dynamics are
those of a state of the constrained tree, and the same as ``qdd()``'s. generalized_alpha keeps its converged steps'
multipliers (documented there).

Scope: every joint type of the augmented formulation, closed loops (the recursive route's projected start, the
loops' multipliers in ``result.multipliers``, above), drivers, tau constant, None or a function (tau(t), tau(t, q, v),
Python or compiled), force elements, gravity; t_eval (the dense output of ``_kernels.augmented.dense3d``: cubic
Hermite in the centres of mass and velocities, on SO(3) in the rotations, from each step's ends), events (located
on it), every, progress, max_wall_time, Ctrl-C. ``result.newton_iterations`` counts the iterations of every try,
``nrejected`` the steps the error test rejected, ``newton_failures`` the tries whose Newton iteration failed.
"""

import math

import numba
import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.augmented import bdf3d, dense3d, recover3d
from .._kernels.augmented import implicit3d as kernels
from .._kernels.spatial import elements as element_kernels
from .._kernels.spatial import layout as SL
from .._kernels.timeloops import integrators
from ..dynamics import augmented3d, spatial
from ..errors import SimulationError, StateError
from ..model.statuses import raise_spatial_status
from . import runs as _runs
from .newton import run_options
from .result import SimulationResult, evaluate_system
from .spatial_loop import SpatialTimeLoop, _SpatialInputs

# a step whose Newton iteration fails is split in halves, at most this many times (down to dt / 16)
MAX_SPLITS = 4
# generalized_alpha's default newton_tol [m/s]: the error a step's accepted iterate may leave in the velocities
# (module docstring, "Newton's tolerance"): 100x above the corrections' round-off on long chains, far below the
# scheme's own error at dt = 0.01 s on the swinging chains
NEWTON_TOL = 1e-10
# a tree of spherical joints iterates by the fused passes of ``kernels.spherical_forward`` (False: the general kernels,
# the same matrix and answers to round-off)
FUSED_SPHERICAL = True
# the fused iteration's ranges of bodies from ``kernels.PARALLEL_BODIES`` (``pipeline_range``): each a round of two
# threads, one eliminating a range while the other makes the records of the next; few, since a loaded machine makes
# every round wait for both threads, many enough that the rounds overlap most of the work
PIPELINE_RANGES = 8
# generalized_alpha projects each converged step's velocities onto the joints' velocity rows (module docstring,
# "Velocities"): without it, rho_inf = 0.9 leaves the index-3 scheme's spurious velocities along the constraints'
# normals nearly undamped and a whip's free end spun them up until Newton failed (False: the plain index-3 scheme);
# only where a joint's velocity row is off by more than PROJECTION_MARGIN times the most that the step's accepted
# Newton error (newton_tol in the correction's metric) can move it ("Velocities": a gap within that is the Newton
# tolerance's own reach, and projecting it would change the velocities by about as much); 0: at every step
PROJECT_VELOCITIES = True
PROJECTION_MARGIN = 1.0


class _Arrays:
    """The step's arrays of one model (its joints' rows start at ``starts``), allocated once a run: only what the
    solve needs is kept per body (the local blocks' factors, K^-1 U and the coupling rows), sized by the largest
    joint (a chain of spherical joints: 1.9 KB a body). ``fused``: every joint is spherical and the iterations are
    ``kernels.spherical_forward``'s (xb, xj its corrections, diag its children's sums, loc the records of two ranges
    of bodies; no local factors and no joints' rows kept: 1.1 KB a body); else xb, xj are empty and the iterations
    are ``kernels.residual``, ``factor`` and ``solve``'s. ``loaded``: the joint loads' blocks are taken into the
    matrix (``load_arrays``: 1.2 KB a body more), ``driven`` the drivers' flags (nbodies,) or None."""

    def __init__(self, model, starts, fused=False, loaded=False, driven=None):
        # numba's threads started before the steps' kernels run: a fresh process whose first kernel call was
        # ``kernels.newton_step`` from the cache (its parallel callees never called from Python) stopped with a
        # segmentation fault in it
        numba.get_num_threads()
        n = model.nbodies
        rows = max(int(np.diff(starts).max(initial=0)), 1)
        spherical = bool((model.body_int[:, SL.JTYPE] == SL.SPHERICAL).all())
        if fused and not spherical:
            raise ValueError("the fused iteration takes trees of spherical joints only")
        kept = 0 if fused else n  # the local blocks' factors: the fused iteration keeps none
        self.zp, self.zbp, self.zdp = np.zeros((n, 7)), np.zeros((n, 6)), np.zeros((n, 6))
        self.tangent = np.zeros((n, 3, 3))
        # the loops' position rows follow the joints' in rc (and their multipliers the joints' in lam)
        self.rc = np.zeros(int(starts[-1]) + model.nconstraints)
        self.nbodies, self.rows = n, rows
        if fused:  # the residual and the joints' rows are not kept (``joint_rows`` makes them where needed)
            self.loc = np.zeros((2 * pipeline_range(n), kernels.LOCAL_SIZE))
            self.diag = np.zeros((n, kernels.SUMS, 6))
            self.rb, self.res, self.gam = np.zeros((0, 6)), np.zeros((0, 6)), np.zeros((0, 6))
            self.jc, self.jp = np.zeros((0, rows, 6)), np.zeros((0, rows, 6))
        else:
            self.loc = np.zeros((0, kernels.LOCAL_SIZE))
            self.diag = np.zeros((n, 6, 6))
            self.rb, self.res, self.gam = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6))
            self.jc, self.jp = np.zeros((n, rows, 6)), np.zeros((n, rows, 6))
        self.api = np.zeros((kept, 6, 6))
        # a spherical joint's local block is kept as five 3 x 3 blocks, without pivots (``kernels.factor``)
        self.lu = np.zeros((kept, 5, 9)) if spherical else np.zeros((kept, 12, 12))
        self.piv = np.zeros((kept, 1 if spherical else 12), dtype=np.int64)
        self.wm = np.zeros((n, 6 + rows, 6))
        self.xb, self.xj = (np.zeros((n, 6)), np.zeros(int(starts[-1]))) if fused else (np.zeros((0, 6)), np.zeros(0))
        self.power = np.zeros(1)
        self.info = np.zeros(4)
        self.loops = loop_arrays(model, starts)
        self.loads = load_arrays(model, driven, loaded)

    def step_arrays(self):
        return (self.zp, self.zbp, self.zdp, self.tangent, self.rb, self.rc, self.jc, self.jp, self.res, self.gam,
                self.diag, self.api, self.lu, self.piv, self.wm, self.loc, self.xb, self.xj, self.power, self.info,
                self.loops, self.loads)

    def joint_rows(self):
        """(rb, jc, jp, res, gam): the residual's and the joints' rows' arrays of ``kernels.residual`` and
        ``recover3d.joint_states`` (nbodies rows): the step's own, or, where the fused iteration keeps none, made
        at the first call (0.4 KB a body for a tree of spherical joints)."""
        if self.rb.shape[0] != self.nbodies:
            n = self.nbodies
            self.rb, self.res, self.gam = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6))
            self.jc, self.jp = np.zeros((n, self.rows, 6)), np.zeros((n, self.rows, 6))
        return self.rb, self.jc, self.jp, self.res, self.gam

    def release(self):
        """Drop the steps' own per-body arrays (at a run's end, before its result's joint coordinates are made, which
        take ``joint_rows`` only): no step can be taken after it."""
        for name in ("zp", "zbp", "zdp", "tangent", "diag", "api", "lu", "piv", "wm", "loc", "xb", "xj", "loops",
                     "loads"):
            self.__dict__.pop(name, None)


def pipeline_range(n):
    """The size of the ranges of bodies of the fused iteration (``kernels.spherical_forward``) on n bodies: all of
    them below ``kernels.PARALLEL_BODIES`` (no threads), else n / PIPELINE_RANGES, at least
    ``kernels.PIPELINE_BODIES``: a round of numba's threads a range, and two ranges' records kept (on 1e6 bodies 28
    numbers a body, where a record a body took 99)."""
    if n < kernels.PARALLEL_BODIES:
        return max(n, 1)
    return min(n, max(-(-n // PIPELINE_RANGES), kernels.PIPELINE_BODIES))


def load_arrays(model, driven=None, loaded=True):
    """The joint loads' arrays of ``kernels.newton_step`` (``loads3d.joint_load_blocks``): (kload (nbodies, 12,
    12), elem_real, sph_start, sph_elem, loaded, driven, tq, tv (nbodies, w, w), and the joint-state scratch qs,
    vs, q0, v0), tq and tv the joints' spring-dampers' (Euclidean -diag(k), -diag(c); spherical -c 1, its spring's
    -k phi taken by the kernel from sph_start, sph_elem), the loaded bodies every body whose joint has a degree of
    freedom; ``driven`` (nbodies,) flags or None. ``loaded`` False: empty arrays of the same types (kload (0, 12,
    12): the joint loads left out of the matrix)."""
    n, bi = (model.nbodies, model.body_int) if loaded else (0, model.body_int[:0])
    width = max(int(bi[:, SL.NVJ].max(initial=0)), 1)
    tq, tv = np.zeros((n, width, width)), np.zeros((n, width, width))
    springs = [[] for _ in range(n)]
    ei, er = model.elem_int, np.ascontiguousarray(model.elem_real, dtype=float).reshape(-1, SL.N_EREAL)
    for e in np.flatnonzero(ei[:, SL.ETYPE] == SL.ELEM_JOINT_SPRING_DAMPER) if loaded and ei.shape[0] else ():
        i = int(ei[e, SL.EBODY_A])
        if bi[i, SL.JTYPE] == SL.SPHERICAL:
            tv[i, :3, :3] -= er[e, SL.EJC] * np.eye(3)
            springs[i].append(int(e))
        else:
            for d in range(int(bi[i, SL.NVJ])):
                tq[i, d, d] -= er[e, SL.EJK + d]
                tv[i, d, d] -= er[e, SL.EJC + d]
    sph_start = np.concatenate(([0], np.cumsum([len(x) for x in springs]))).astype(np.int64)
    sph_elem = np.array([e for x in springs for e in x], dtype=np.int64)
    flags = np.zeros(0, dtype=np.int64) if driven is None or not len(driven) else np.asarray(driven, dtype=np.int64)
    nq, nv = (model.nq, model.nv) if loaded else (0, 0)
    return (np.zeros((n, 12, 12)), er, sph_start, sph_elem, np.flatnonzero(bi[:, SL.NVJ] > 0).astype(np.int64),
            flags, tq, tv, np.zeros((1, nq)), np.zeros((1, nv)), np.zeros((1, nq)), np.zeros((1, nv)))


def loop_arrays(model, starts):
    """The closed loops' arrays of ``kernels.newton_step`` (``kernels.loop_residual``, ``kernels.loop_solve``) for
    a model whose joints' rows start at ``starts``: m = model.nconstraints loop rows, L = model.nloops loops, each
    with two slots of 6 coordinates in the bordered system (12 L + m unknowns). A tree gets empty arrays of the
    same types (one compiled signature)."""
    n, m, nl = model.nbodies, model.nconstraints, model.nloops
    size = 12 * nl + m
    row_loop = np.zeros(m, dtype=np.int64)  # the loop of each row
    if nl:
        row_loop[:] = np.searchsorted(model.loop_int[:, SL.LROW], np.arange(m), side="right") - 1
    tree = int(starts[-1]) if nl else 0
    return (model.loop_int, model.loop_real, np.zeros(2), np.zeros(40), np.zeros(9), np.zeros((m, 12)),
            np.full((m, 2), -1, dtype=np.int64), np.zeros((m, 12)), np.zeros(m), np.zeros(m), row_loop,
            np.zeros((nl, 12, 12)), np.zeros((m, 12)), np.zeros((m, 12)), np.zeros((12 * nl, 12 * nl)),
            np.zeros((size, size)), np.zeros(size, dtype=np.int64), np.zeros(size), np.zeros(size),
            np.zeros((n if nl else 0, 6)), np.zeros(tree), np.zeros((n if nl else 0, 6)), np.zeros(tree))


def check_model(model):
    """The route's own checks of the model (``augmented3d._require``, which compiles its kernels): it takes every
    model of the augmented formulation."""
    augmented3d._require(model)  # compiles


def radii_of_gyration(model):
    """sqrt(trace J_c / (2 m)) a body [m] (the scale of its rotation in the correction), 1 for a massless one."""
    mass = model.body_real[:, SL.MASS]
    trace = model.body_real[:, SL.IC:SL.IC + 3].sum(axis=1)
    out = np.ones(model.nbodies)
    massive = mass > 0.0
    out[massive] = np.sqrt(np.maximum(trace[massive], 0.0) / (2.0 * mass[massive]))
    return out


def _run_start(model, q0, v0, t0, tau, drivers):
    """The start both methods' runs share: tau checked (constant: (nv,), or none: (0,)), the drivers, the start put
    onto the loops (the driven joints held: the recursive and explicit routes' start), the absolute state, and the
    steps' arrays. Loads that depend on the state (a tau function, elements) take the general kernels and their
    blocks of the matrix (``_Loads``); a constant tau too, but on a tree of spherical joints, whose fused passes take
    its blocks. Returns (tau, inputs, drive, q0, v0, z, zd, zb, fused, arrays, angles, loads or None)."""
    function = callable(tau)
    if not function:
        tau = np.zeros(0) if tau is None else np.ascontiguousarray(_checks.finite_array(tau, "tau", (model.nv,)))
    inputs = _SpatialInputs(model, tau if function or tau.size else None, drivers)
    drive = _Drivers(model, inputs)
    q0, v0 = drive.start(q0, v0, t0)
    if model.nloops:
        from ..dynamics.spatial_loops import consistent_start  # noqa: PLC0415

        q0, v0 = consistent_start(model, q0, v0, drive.inputs.driven if drive.bodies.size else None)
    drive.at(t0)
    z, zd = augmented3d.absolute_from_joint(model, q0, v0)
    zb = to_body_axes(z, zd)
    by_state = function or bool(model._elements)
    fused = (FUSED_SPHERICAL and not model.nloops and not by_state
             and bool((model.body_int[:, SL.JTYPE] == SL.SPHERICAL).all()))
    loaded = by_state or (not fused and bool(np.any(tau)))
    if fused:  # the joint-coordinate workspace of the conversion (1 KB a body) goes before the steps' arrays come
        spatial.release_workspace(model)
    arrays = _Arrays(model, drive.starts, fused=fused, loaded=loaded, driven=drive.inputs.driven)
    angles = _Angles(model, q0)
    loads = _Loads(model, inputs, tau, arrays, angles) if by_state else None
    return tau, inputs, drive, q0, v0, z, zd, zb, fused, arrays, angles, loads


def simulate_generalized_alpha(model, q0, v0, t0, t_end, dt, *, tau=None, drivers=None, every=1, t_eval=None,
                               events=None, rho_inf=0.9, newton_tol=None, max_newton=20, max_steps=10_000_000,
                               progress=None, max_wall_time=None):
    """Generalised-alpha in absolute coordinates (module docstring), called by ``rm.simulate(model3d,
    method="generalized_alpha", formulation="augmented")``; q0 (nq,) and v0 (nv,) checked there, tau None, constant
    (nv,) or a function tau(t) / tau(t, q, v) (Python or numba-compiled), drivers as ``rm.simulate``'s (revolute and
    prismatic joints: body -> f(t) or (f, f', f'')), ``events`` as ``rm.simulate``'s (g(t, q, v), ``terminal``,
    ``direction``), ``progress`` as ``rm.simulate``'s. Returns the SimulationResult (joint coordinates at the
    ``t_eval`` times, t0 and t_end added, or at every ``every``-th step, t0 and t_end always; ``z``, ``zd``,
    ``constraint_drift``, ``newton_iterations``, ``newton_factorizations``; ``driving_forces()`` the drivers' rows'
    multipliers at the samples, negated; ``t_events``, ``q_events``, ``qd_events``). Raises SimulationError with the
    samples so far when a step does not converge or its Newton matrix is singular, when a driver, tau or an event
    function fails, or at max_wall_time; KeyboardInterrupt (``runs.RunInterrupted``, its ``result`` the samples so
    far, status "interrupted") on Ctrl-C; StateError before the run for a tau function that fails at t0."""
    check_model(model)
    newton_tol = NEWTON_TOL if newton_tol is None else newton_tol
    options = run_options(rho_inf, newton_tol, max_newton, t0, t_end, dt, max_steps, every, t_eval)
    (alpha_m, alpha_f, gamma, beta), newton_tol, max_newton, t0, t_end, dt, every, t_eval = options
    tau, inputs, drive, q0, v0, z, zd, zb, fused, arrays, angles, loads = _run_start(model, q0, v0, t0, tau, drivers)
    starts = drive.starts
    vdot, lam, dissipation = None, None, 0.0
    if loads is not None:  # tau and the elements at the start (a function that fails here: StateError, no run)
        vdot, lam, power, dissipation = loads.start(t0, starts, drive, z, zd, tau, q0, v0)
        tau = loads.tau
    elif fused:  # a tree of spherical joints: the start in the fused passes (tau's power at the start with them)
        vdot, lam = np.empty((model.nbodies, 6)), np.empty(int(starts[-1]))
        if kernels.spherical_dynamics(model.body_int, model.body_real, model.gravity, starts, tau, z, zb, zd,
                                      arrays.tangent, arrays.rc, arrays.diag, arrays.wm, arrays.loc, arrays.xb,
                                      arrays.xj, vdot, lam, arrays.power, arrays.info):
            vdot = None  # (failed: the general start below, with its errors)
        else:
            power = float(arrays.power[0])
    if vdot is None:  # the general start: the augmented dynamics, the drivers' rows as the explicit runs'
        vdot, lam = drive.initial_dynamics(z, zd, tau, q0, v0, t0)
        vdot = to_body_axes(z, vdot)
        power = _power(model, starts, tau, drive, z, zd, vdot, lam, arrays)
    # the explicit routes' tree-solve workspace and the joint-coordinate one: the steps use neither (1.1 and 0.7 KB a
    # body, beside the steps' 2 KB a body)
    augmented3d.release_workspace(model)
    spatial.release_workspace(model)
    acc = vdot.copy()
    steps = _runs.fixed_step_count(t0, t_end, dt, max_steps)
    stepper = _Stepper(model, starts, tau, drive, (alpha_m, alpha_f, gamma, beta), newton_tol, max_newton,
                       [z, zb, zd, acc, vdot, lam, power, 0.0, zb.copy(), dissipation, 0.0], arrays, loads)
    states = _AbsoluteStates(model, arrays, angles)
    event_functions = _runs._Events(model, events, inputs, states)
    output = stepper.output = _Output(model, t0, stepper.state, drive, t_eval, event_functions, states,
                                      loads is not None)
    del z, zb, zd, acc, vdot, lam  # the stepper's state holds them (and lets them go before the result is made)
    control = _runs._RunControl(max_wall_time)
    shown = control.progress = _runs.run_progress(progress, "generalized_alpha", t0, t_end)
    t = t0
    t_new = t0
    accepted = 0
    failure = None
    try:
        with control:
            if output.failure is not None:  # an event function that fails at t0
                failure = output.failure
            for step in range(1, steps + 1) if failure is None else ():
                h = min(dt, t_end - t) if step == steps else dt
                t_new = t_end if step == steps else t0 + step * dt
                failure = stepper.advance(h, t, step)
                if failure is not None and failure[0] != "event":
                    break
                failure = None
                t = t_new
                accepted = step
                if shown is not None:
                    shown.update(t, stepper.iterations)
                if output.stopped:
                    break
                if t_eval is None and (step == steps or step % every == 0):
                    output.store_step_end(t, stepper.state, last=step == steps)
                if control.interrupted:
                    break
                if max_wall_time is not None and control.status() == L.STATUS_TIME_LIMIT and step < steps:
                    failure = ("time_limit", f"generalized_alpha: the run reached max_wall_time = {max_wall_time:g} s "
                                             f"at t = {t:.9g} s")
                    break
    except KeyboardInterrupt:  # raised in Python code where the run's handler is not installed (not the main thread)
        control.interrupted = True
    finally:
        control.progress = None
        if shown is not None:
            shown.close(t, stepper.iterations)
    status = L.STATUS_EVENT if output.stopped else L.STATUS_OK

    def build():
        # the steps' arrays and state go before the result's arrays come (its joint coordinates take joint_rows)
        arrays.release()
        stepper.state = stepper.spare = None
        result = _result(model, output.t, output.z, output.zd, output.work, arrays, stepper.iterations, accepted)
        if output.track:  # the angles continuous, as the run's loads and events saw them
            angles.unwrap(result.q, np.array(output.refs).reshape(result.t.size, -1))
        elif angles.columns.size:  # from q0's, each within pi of the sample's before: whole turns taken off (the
            # angles unchanged, bit for bit, where none is)
            wrapped = result.q[:, angles.columns]
            jumps = np.diff(wrapped, axis=0, prepend=angles.ref[None, :])
            result.q[:, angles.columns] = wrapped - 2.0 * np.pi * np.cumsum(np.round(jumps / (2.0 * np.pi)), axis=0)
        result.newton_split_steps = stepper.splits
        result.velocity_projections = stepper.projections
        if model.nloops:
            result.multipliers = np.array(output.mu)
        drive.finish(result, output.driving)
        _runs.close_run(result, status, control, event_functions, output.records)
        return result

    _runs.raise_if_interrupted("generalized_alpha", L.STATUS_INTERRUPTED if control.interrupted else status, t,
                               control, [np.array(output.t)], build)
    result = build()
    if failure is not None:
        result.status, why = failure[:2]
        error = SimulationError(f"{why}. {_runs.kept_samples(result).capitalize()}", t_new if result.status
                                == "failed" else t, result)
        result.message = str(error)
        raise error from (failure[2] if len(failure) > 2 else None)
    return result


class _Angles:
    """The joints' angle coordinates (revolute, cylindrical, universal, planar: ``columns`` of q) continuous over a
    run, as the recursive route's q: the absolute state gives each angle wrapped to (-pi, pi] (``recover3d``, atan2),
    so an angle is taken within pi of ``ref``, its continuous value at the last accepted step's end (a step turns a
    joint by far less than pi). A joint spring's force -k (q - rest), a controller tau(t, q, v) and an event see the
    turns a joint has made; without it they would jump at the half turn."""

    def __init__(self, model, q0):
        jt, k = model.body_int[:, SL.JTYPE], model.body_int[:, SL.QIDX]  # (vectorised: a 1e6-link chain)
        self.columns = np.sort(np.concatenate((k[np.isin(jt, (SL.REVOLUTE, SL.CYLINDRICAL, SL.UNIVERSAL))],
                                               k[jt == SL.UNIVERSAL] + 1, k[jt == SL.PLANAR] + 2))).astype(np.int64)
        self.ref = np.array(q0[self.columns], dtype=float)

    def unwrap(self, q, ref=None):
        """q (..., nq) in place with its angles within pi of ref (default ``ref``; (..., nangles))."""
        ref = self.ref if ref is None else ref
        turn = q[..., self.columns] - ref
        q[..., self.columns] = ref + (turn - 2.0 * np.pi * np.round(turn / (2.0 * np.pi)))
        return q

    def accept(self, q):
        """The continuous angles of the accepted state q (unwrapped) as the next reference."""
        self.ref[:] = q[self.columns]


class _AbsoluteStates:
    """The map from a run's absolute states y = (z (nbodies, 7) raveled, zd (nbodies, 6) raveled: omega in ground
    axes) to joint states, in the form the runs' event machinery reads (``runs._Events``, ``runs.close_run``)."""

    def __init__(self, model, arrays, angles):
        self.model, self.arrays, self.angles = model, arrays, angles

    def y(self, z, zd):
        """The state y of (z, zd): (z, zd) raveled, then the angles' reference (``_Angles``) it is read against."""
        return np.concatenate((z.ravel(), zd.ravel(), self.angles.ref))

    def joint_states(self, t, y):
        """q (nt, nq) and v (nt, nv) of the states y (nt, 13 nbodies + nangles) (``joint_states``, compiled, O(N) a
        state; the angles continuous, ``_Angles``)."""
        n = self.model.nbodies
        y = np.atleast_2d(y)
        q, v, _ = joint_states(self.model, y[:, :7 * n].reshape(-1, n, 7), y[:, 7 * n:13 * n].reshape(-1, n, 6),
                               self.arrays)
        return self.angles.unwrap(q, y[:, 13 * n:]), v


class _Output:
    """What a run keeps: its samples (times ``t``, poses ``z``, velocities ``zd`` (omega in ground axes), work terms
    ``work`` (dissipated, applied), drivers' forces ``driving``, the loops' multipliers ``mu``) and its events
    (``records``: (index, t, state y as ``_AbsoluteStates`` reads it)). With ``t_eval`` (sorted, t0 and t_end
    included) the samples are the step's dense output at those times (``_kernels.augmented.dense3d``: cubic Hermite
    in c and the velocities, on SO(3) in the rotations), else the run loop stores every ``every``-th step's end
    (``store_step_end``). Events: each
    function's sign change between the ends of a step (in its ``direction``) is located on the same dense output by
    the Illinois method (``integrators.illinois_update``, the iteration of the compiled loops' ``locate_span``); a
    ``terminal`` one ends the run at its earliest time in the step, its last sample there (``stopped``). An event
    function that fails sets ``failure`` ("failed", message, cause) and the run stops."""

    def __init__(self, model, t0, state, drive, t_eval, events, states, tracked):
        z, _, zd, _, _, lam, _, work, _, _, dissipated = state
        self.drive, self.t_eval, self.events, self.states = drive, t_eval, events, states
        self.t, self.z, self.zd, self.work, self.driving = [t0], [z.copy()], [zd.copy()], [(dissipated, work)], [
            drive.forces(lam)]
        self.loop_rows = int(drive.starts[-1])  # the loops' multipliers follow the joints' (and drivers') in lam
        self.mu = [lam[self.loop_rows:].copy()]
        self.next = 1  # the first t_eval time left (t_eval[0] = t0 is stored)
        self.records = []
        self.stopped = False
        self.failure = None
        n = model.nbodies
        self.z_tmp, self.zd_tmp = np.empty((n, 7)), np.empty((n, 6))
        self.values = np.zeros(len(events.functions))
        # the angles are tracked (``_Angles``) where joint states are evaluated in the run: loads, events
        self.track = bool(events.functions) or tracked
        self.tracked = tracked
        self.refs = [states.angles.ref.copy()]
        if events.functions:
            self.failure = self._evaluate(t0, self._y(z, zd), self.values)

    def _y(self, z, zd):
        return self.states.y(z, zd)

    def _evaluate(self, t, y, out):
        """The event functions at (t, y) into out; None, or the failure of one that raised."""
        try:
            self.events(t, y, None, out)
        except StateError as error:
            return "failed", f"generalized_alpha failed at t = {t:.9g} s: {error}", error.__cause__
        return None

    def store_step_end(self, t, state, last=False):
        """The state at a step's end as a sample; ``last``: the run's last step (its arrays are kept, not copied)."""
        z, _, zd, _, _, lam, _, work, _, _, dissipated = state
        self._store(t, z, zd, (dissipated, work), self.drive.forces(lam), lam[self.loop_rows:].copy(), not last)

    def _store(self, t, z, zd, work, driving, mu, copy=True):
        self.mu.append(mu)
        self.t.append(t)
        self.z.append(z.copy() if copy else z)  # the state's arrays are reused by the steps
        self.zd.append(zd.copy() if copy else zd)
        self.work.append(work)
        self.driving.append(driving)
        self.refs.append(self.states.angles.ref.copy())

    def step(self, t, h, start, end, rate):
        """After the converged step from t to t + h (``start``, ``end``: the stepper's states at its ends; ``rate``
        (nbodies, 6) its mean velocity Delta / h, ``kernels.end_step``'s): its events and t_eval samples. Returns a
        failure or None."""
        if not self.events.functions and self.t_eval is None:
            return None
        t_new = t + h
        delta = h * rate[:, 3:]  # the rotation increments
        t_stop, y_stop, theta_stop = math.inf, None, 1.0
        if self.events.functions:
            z1, zd1 = end[0], end[2]
            if not self.tracked:  # the end's angles from the last step's (the loads track them where there are any)
                self.states.angles.accept(self.states.joint_states(t_new, self._y(z1, zd1))[0][0])
            values = np.zeros_like(self.values)
            failure = self._evaluate(t_new, self._y(z1, zd1), values)
            if failure is not None:
                return failure
            for i, (g0, g1) in enumerate(zip(self.values, values, strict=True)):
                direction = self.events.directions[i]
                if not ((g0 < 0.0 <= g1 and direction >= 0.0) or (g0 > 0.0 >= g1 and direction <= 0.0)):
                    continue
                located = self._locate(i, t, h, g0, g1, start, end, delta)
                if located[0] == "failed":
                    return located
                t_event, y_event, theta = located
                self.records.append((i, t_event, y_event))
                if self.events.terminal[i] and t_event < t_stop:
                    t_stop, y_stop, theta_stop = t_event, y_event, theta
            self.values = values
        if self.t_eval is not None:
            # a time at the step's end to round-off (t + h against the run's t0 + k dt) is the end itself, bit for bit
            at_end = 4.0 * 2.220446049250313e-16 * max(abs(t), abs(t_new))
            while self.next < self.t_eval.size and self.t_eval[self.next] <= min(t_new + at_end, t_stop):
                ts = float(self.t_eval[self.next])
                self._sample(ts, 1.0 if ts >= t_new - at_end else (ts - t) / h, h, start, end, delta)
                self.next += 1
        if y_stop is not None:
            self._sample(t_stop, theta_stop, h, start, end, delta)  # the event's own state, bit for bit
            self.stopped = True
        return None

    def _dense(self, theta, h, start, end, delta):
        """The state at theta of the step into z_tmp, zd_tmp (the end's own where theta >= 1)."""
        if theta >= 1.0:
            self.z_tmp[:], self.zd_tmp[:] = end[0], end[2]
            return
        dense3d.dense_state(start[0], start[1], start[4], end[0], end[1], end[4], delta, h, theta, self.z_tmp,
                            self.zd_tmp)

    def _sample(self, ts, theta, h, start, end, delta):
        """A sample at ts (theta of the step): the dense state, the work terms, driving forces and loops'
        multipliers linear."""
        self._dense(theta, h, start, end, delta)
        work = tuple((1.0 - theta) * a + theta * b for a, b in ((start[10], end[10]), (start[7], end[7])))
        driving = (1.0 - theta) * self.drive.forces(start[5]) + theta * self.drive.forces(end[5])
        mu = (1.0 - theta) * start[5][self.loop_rows:] + theta * end[5][self.loop_rows:]
        self._store(ts, self.z_tmp, self.zd_tmp, work, driving, mu)

    def _locate(self, index, t, h, g0, g1, start, end, delta):
        """(t_event, y there, theta: its fraction of the step) of event ``index``'s sign change in the step (values
        g0, g1 at its ends), by the Illinois method on the dense output (the compiled loops' ``newton.locate_span``),
        or a failure."""
        lo, hi, g_lo, g_hi, side = 0.0, 1.0, g0, g1, 0
        values = np.zeros_like(self.values)
        theta = 1.0
        for _ in range(100):
            theta = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
            self._dense(theta, h, start, end, delta)
            failure = self._evaluate(t + theta * h, self._y(self.z_tmp, self.zd_tmp), values)
            if failure is not None:
                return failure
            g = values[index]
            if g == 0.0 or not math.isfinite(g):
                break
            # (its Python function: the compiled one has no Python wrapper, being inlined in the compiled loops)
            lo, hi, g_lo, g_hi, side = integrators.illinois_update.py_func(theta, g, lo, hi, g_lo, g_hi, side)
            if (hi - lo) * abs(h) <= 4.0 * 2.220446049250313e-16 * max(abs(t), abs(h)):
                break
        self._dense(theta, h, start, end, delta)
        return t + theta * h, self._y(self.z_tmp, self.zd_tmp), theta


class _Loads:
    """A run's applied joint loads: tau constant or a function (tau(t), tau(t, q, v); Python or compiled) and the
    force elements' generalised forces Q(t, q, v) (``_kernels.spatial.elements``), both evaluated at the joint state
    of the step's iterate (``joint_states``: the absolute state's joint coordinates, O(N)) and applied as joint
    forces (``tau`` (nv,) = tau + Q: each joint's pair of loads on its child and its parent, as a constant tau;
    ``augmented3d``'s explicit routes apply the elements so too). ``tau_user`` the last evaluation's tau. Their
    dependence on the joint's own state is in the Newton matrix (``blocks``, ``_kernels.augmented.loads3d``): the
    wrench's turning with the bodies, the joints' spring-dampers, a tau function's diagonal blocks (its derivative
    by each joint's own coordinates and rates, by central differences once a step); lagged: a tau function's
    dependence on other joints' coordinates, and the elements that act on bodies (point spring-dampers, forces,
    torques: their generalised forces reach every joint between the body and the root). A driven joint's
    coordinate and rate are its driver's (the run's inputs put them there): no dependence on the state."""

    def __init__(self, model, inputs, tau, arrays, angles):
        self.model, self.inputs, self.arrays, self.angles = model, inputs, arrays, angles
        self.function = inputs.tau_function is not None
        self.tau_const = np.zeros(model.nv) if self.function or not tau.size else tau
        self.u = np.zeros(inputs.size)
        self.tau = np.zeros(model.nv)  # tau + Q: the kernels' joint forces
        self.tau_user = self.tau_const.copy()
        self.elements = spatial.ElementWorkspace3D(model) if model._elements else None
        self.state = (np.zeros(model.nq), np.zeros(model.nv))
        _, _, _, _, self.loaded, self.driven, self.tq, self.tv, *_ = arrays.loads
        # the elements' blocks; a tau function's own (by each undriven joint's coordinates and rates) are added to them
        # where it reads the state
        self.tq_el, self.tv_el = self.tq.copy(), self.tv.copy()
        self.by_state = self.function and self.inputs.tau_arity != 1

    def at(self, t, zp, zdp):
        """Evaluate tau and Q at time t and the absolute state (zp, zdp) (omega in ground axes) into ``tau``; a
        StateError for a tau or element function that fails (the run's ``_SpatialInputs``)."""
        model = self.model
        q, v, _ = joint_states(model, zp[None], zdp[None], self.arrays)
        q, v = self.angles.unwrap(q[0]), v[0]
        self.inputs(t, q, v, self.u)
        self.tau_user[:] = self.u[self.inputs.tau_offset:self.inputs.tau_offset + model.nv] if self.function else \
            self.tau_const
        self.tau[:] = self.tau_user
        self.state = (q, v)
        ew = self.elements
        if ew is not None:
            status = element_kernels.element_forces(model.body_int, model.body_real, model.elem_int, model.elem_real,
                                                    self.u, q, v, ew.ws, ew.S, ew.tmp, ew.rot, ew.pos, ew.omega,
                                                    ew.vel, ew.wrench, ew.forces, ew.energy, ew.per_element)
            if status:
                raise_spatial_status(model, status, ("q", "v"), output=f"the element forces at t = {t:.9g} s")
            self.tau += ew.forces

    def start(self, t0, starts, drive, z, zd, tau, q0, v0):
        """The run's start with the loads: (vdot (nbodies, 6), omega' in body axes, lam, applied power, dissipated
        power) at t0 and (z, zd) (q0, v0 its joint state), tau and the elements evaluated there (a function that
        fails: StateError, no run). The augmented dynamics, the drivers' rows as the explicit runs' (their inputs
        hold tau and the elements as a constant tau: ``_Drivers.initial_dynamics``)."""
        self.at(t0, z, zd)
        if drive.bodies.size:
            vdot, lam = drive.initial_dynamics(z, zd, tau, q0, v0, t0, self.tau)
        else:
            vdot, lam = augmented3d.forward_dynamics(self.model, z, zd, self.tau_user, t0)
        vdot = to_body_axes(z, vdot)
        return (vdot, lam, *self.powers(t0, starts, drive, z, zd, vdot, lam))

    def powers(self, t, starts, drive, zp, zdp, vdot, lam):
        """(applied, dissipated) power [W] at time t and the state (zp, zdp), the step's end (the loads evaluated
        there first, its angles the next reference: ``_Angles``; vdot, lam the step's unknowns; ``drive`` the run's
        ``_Drivers``, none here): tau's as a constant tau's (``_power``: its joint loads times the bodies'
        velocities), the elements' forces' and torques', the dampers'."""
        self.at(t, zp, zdp)
        self.angles.accept(self.state[0])
        tau = self.tau_user if self.function or self.tau_const.any() else np.zeros(0)
        applied = _power(self.model, starts, tau, drive, zp, zdp, vdot, lam, self.arrays)
        if self.elements is None:
            return applied, 0.0
        return applied + float(self.elements.energy[2]), float(self.elements.energy[1])

    def _tau_blocks(self, t):
        """tq, tv: the elements' blocks plus the tau function's derivatives by each undriven joint's own tangent
        increments of q and rates v at the last ``at``'s joint state, by central differences (the other joints'
        coordinates held: their part of its derivative is lagged). 4 nv calls of the function."""
        bi = self.model.body_int
        q, v = (x.copy() for x in self.state)
        self.tq[:], self.tv[:] = self.tq_el, self.tv_el
        for i in self.loaded:
            if self.driven.size and self.driven[i]:
                continue
            jt, k, kv, nvj = (int(bi[i, c]) for c in (SL.JTYPE, SL.QIDX, SL.VIDX, SL.NVJ))
            for d in range(nvj):
                for rates in (False, True):
                    x = v if rates else q
                    at = kv + d if rates else k + d
                    quaternion = not rates and (jt == SL.SPHERICAL or (jt == SL.FREE and d >= 3))
                    step = 1e-5 if quaternion else 1e-5 * max(1.0, abs(x[at]))
                    kept = x.copy() if quaternion else x[at]
                    values = []
                    for sign in (1.0, -1.0):
                        if quaternion:
                            _turn_quaternion(x, k + (3 if jt == SL.FREE else 0), d % 3, sign * step)
                        else:
                            x[at] = kept + sign * step
                        values.append(self._tau_value(t, q, v)[kv:kv + nvj])
                        if quaternion:
                            x[:] = kept
                        else:
                            x[at] = kept
                    (self.tv if rates else self.tq)[i, :nvj, d] += (values[0] - values[1]) / (2.0 * step)

    def _tau_value(self, t, q, v):
        """The tau function at (t, q, v), checked as the run's inputs check it."""
        inputs = self.inputs
        try:
            value = np.asarray(inputs.tau_function(t, q, v), dtype=float).reshape(-1)
        except Exception as err:  # noqa: BLE001
            raise StateError(f"tau function {inputs.tau_name} raised at t = {t:g}: {err!r}") from err
        if value.shape != (self.model.nv,) or not np.all(np.isfinite(value)):
            raise StateError(f"tau function must return {self.model.nv} finite numbers ({inputs.tau_name} at "
                             f"t = {t:g} returned shape {value.shape})")
        return value

    def newton(self, stepper, z, zb, acc, vdot, coef, t_new, vdot_new, lam_new):
        """Newton's iteration of one step with the loads evaluated at every iterate (``at``), their blocks in the
        matrix (``blocks``), and held over its correction (``kernels.newton_step`` of one iteration). Converged
        when the correction is <= newton_tol, when the error it leaves, theta / (1 - theta) times it (theta its
        ratio to the one before), is, its first correction when the estimate of an earlier step vouches for it
        (``kernels.first_correction_accepted``; tau's and the elements' powers are taken at the converged state), or
        when it no longer contracts (by less than half) and is <= 100 newton_tol: the tests of ``newton_step`` but
        its quadratic prediction within the step and its round-off measurement (a long chain's floor); given up as
        diverging as there (the correction growing by more than ``kernels.DIVERGENCE`` at two iterations running).
        Returns the status; a StateError of a function that fails propagates."""
        model, arrays = self.model, self.arrays
        tol = stepper.newton_tol
        previous = math.inf
        growing = 0
        parts = np.full(4, np.nan)  # (the kernel's iteration alone: no estimate; the correction's parts)
        before = (math.inf, math.inf)  # the parts of the correction before
        for it in range(stepper.max_newton):
            kernels.update_state(z, zb, acc, vdot, coef, vdot_new, arrays.zp, arrays.zbp, arrays.zdp, arrays.tangent)
            self.at(t_new, arrays.zp, arrays.zdp)
            if it == 0 and self.by_state:  # the tau function's own blocks, once a step (``_tau_blocks``)
                self._tau_blocks(t_new)
            status = kernels.newton_step(model.body_int, model.body_real, model.gravity, stepper.starts, self.tau,
                                         stepper.drive.target, z, zb, acc, vdot, coef, stepper.gyration, tol, 1,
                                         vdot_new, lam_new, *arrays.step_arrays(), parts)
            stepper.iterations += 1
            arrays.info[0] = it + 1
            com, rot = parts[2], parts[3]
            if it == 1 and (status == L.STATUS_OK or L.decode_status(status)[0] == L.STATUS_NO_CONVERGENCE):
                stepper.estimate[:2] = (kernels.quadratic_ratio(com, before[0]),
                                        kernels.quadratic_ratio(rot, before[1]))
            if status == L.STATUS_OK:
                return status
            correction = float(arrays.info[1])
            if L.decode_status(status)[0] != L.STATUS_NO_CONVERGENCE or not math.isfinite(correction):
                return status
            theta = correction / previous
            if (it == 0 and kernels.first_correction_accepted(stepper.estimate, com, rot, tol)) or (it > 0 and (
                    (theta < 1.0 and theta / (1.0 - theta) * correction <= tol)
                    or (theta > 0.5 and correction <= 100.0 * tol))):
                kernels.update_state(z, zb, acc, vdot, coef, vdot_new, arrays.zp, arrays.zbp, arrays.zdp,
                                     arrays.tangent)
                return L.STATUS_OK
            growing = growing + 1 if theta > kernels.DIVERGENCE else 0
            if growing == 2:
                return L.STATUS_NO_CONVERGENCE
            previous, before = correction, (com, rot)
        return L.STATUS_NO_CONVERGENCE


def _turn_quaternion(q, k, axis, angle):
    """q[k:k + 4] (a unit quaternion) times exp(angle e_axis / 2) on the right in place: turned about its own
    frame's axis, the tangent increment of a spherical joint's coordinates (``loads3d``)."""
    half = 0.5 * angle
    e = np.zeros(4)
    e[0], e[1 + axis] = math.cos(half), math.sin(half)
    a = q[k:k + 4].copy()
    q[k] = a[0] * e[0] - a[1:] @ e[1:]
    q[k + 1:k + 4] = a[0] * e[1:] + e[0] * a[1:] + np.cross(a[1:], e[1:])


class _Drivers:
    """The drivers of a run (``inputs``: its ``_SpatialInputs``) as rows of the step: a driven joint's rows in lam
    are its type's and then its driver's (``starts`` (nbodies + 1,): the first row of each body's joint, the total
    last), whose residual is q_j(z+) - target[i] with target (nbodies,) = f(t+) (``kernels.driven_row``), and whose
    multiplier is minus the driving force (torque) along the joint's axis; its power, -mu f'(t+), joins tau's in
    the applied work. Without drivers target is empty and starts are ``augmented3d.row_starts``."""

    def __init__(self, model, inputs):
        self.model, self.inputs = model, inputs
        self.bodies = np.array([model.body_index(name) for _, name, _ in inputs.drivers], dtype=np.int64)
        driven = np.zeros(model.nbodies, dtype=np.int64)
        driven[self.bodies] = 1
        self.starts = augmented3d.row_starts(model) + np.concatenate(([0], np.cumsum(driven)))
        self.rows = self.starts[self.bodies + 1] - 1  # each driver's row in lam, in the drivers' order
        self.target = np.zeros(model.nbodies if self.bodies.size else 0)
        self.rates = np.zeros(self.bodies.size)  # f'(t) of each driver
        self.callback = inputs.callback()  # (compiled callable, key) that evaluates the inputs at t

    def at(self, t):
        """target and rates at t (the drivers evaluated: a StateError naming a driver that fails)."""
        for j, (_, name, evaluate) in enumerate(self.inputs.drivers):
            f, f_dot, _ = _checks.driver_value(name, evaluate, t)
            self.target[self.bodies[j]] = f
            self.rates[j] = f_dot

    def start(self, q0, v0, t0):
        """(q0, v0) with the driven coordinates and rates at their drivers' values at t0."""
        if not self.bodies.size:
            return q0, v0
        q0, v0 = q0.copy(), v0.copy()
        self.inputs(t0, q0, v0, np.zeros(self.inputs.size))
        return q0, v0

    def initial_dynamics(self, z, zd, tau, q0, v0, t0, loads=None):
        """(vdot (nbodies, 6), omega' in ground axes, lam (rows,)) at the start: the augmented dynamics, the drivers'
        rows as the explicit runs' (``augmented3d.TimeLoop3D``: f'' prescribed, their multipliers in its mu).
        ``loads``: the run's joint forces at the start (nv,) (a tau function's and the elements', ``_Loads``), which
        the explicit system takes as a constant tau (it evaluates neither)."""
        if not self.bodies.size:
            return augmented3d.forward_dynamics(self.model, z, zd, tau if tau.size else None, t0)
        inputs, callback, key = self.inputs, *self.callback
        if loads is not None:
            drivers = {name: tuple(lambda t, e=evaluate, k=k: e(t)[k] for k in range(3))
                       for _, name, evaluate in self.inputs.drivers}
            inputs = _SpatialInputs(self.model, loads.copy(), drivers)
            callback, key = inputs.callback()
        loop = augmented3d.TimeLoop3D(self.model, inputs, "none", loads_in_tau=loads is not None)
        system = loop.system
        evaluate_system(self.model, callback, key, system, inputs, t0,
                        loop.initial_state(q0, v0, t0, callback, key))
        loops = self.model.nconstraints
        lam = np.zeros(int(self.starts[-1]) + loops)
        plain = augmented3d.row_starts(self.model)
        for i in range(self.model.nbodies):  # the joints' rows, then each driver's after its joint's
            lam[self.starts[i]:self.starts[i] + plain[i + 1] - plain[i]] = system.lam[plain[i]:plain[i + 1]]
        lam[self.rows] = system.mu[loops:]  # the auxiliary rows: the loops', then the drivers'
        lam[int(self.starts[-1]):] = system.mu[:loops]
        return system.zdd.copy(), lam

    def power(self, lam):
        """The drivers' power at the last ``at``: -mu . f'."""
        return -float(lam[self.rows] @ self.rates) if self.bodies.size else 0.0

    def forces(self, lam):
        """The driving forces (nd,) of the multipliers lam."""
        return -lam[self.rows]

    def finish(self, result, samples):
        """The result's driving forces (nt, nv) (``result.driving_forces()``; ``samples`` (nt, nd); None: evaluated
        there, at each sample's state), its constraint drift with the drivers' gaps |q_j - f(t)| (a revolute angle's
        wrapped to (-pi, pi]), and what ``result.qdd()`` and ``driving_forces()`` evaluate: the recursive
        formulation's dynamics at each sample's joint state with the run's inputs."""
        result._without_drivers = not self.bodies.size  # no (nt, nv) zeros kept: a long chain's would be large
        if self.bodies.size and samples is not None:
            result._driving = np.zeros((result.t.size, self.model.nv))
            result._driving[:, self.inputs.driven_rates] = samples
        for coord, name, evaluate in self.inputs.drivers:
            values = np.array([_checks.driver_value(name, evaluate, float(t))[0] for t in result.t])
            gap = result.q[:, coord] - values
            if self.model.body_int[self.model.body_index(name), SL.JTYPE] == SL.REVOLUTE:
                gap = np.arctan2(np.sin(gap), np.cos(gap))
            result.constraint_drift = np.maximum(result.constraint_drift, np.abs(gap))
        result._evaluator = (*self.callback, None, self.inputs, _RunInputs())


class _RunInputs:
    """The time loop of a result's evaluator (``SimulationResult._evaluator``) for a run of this route: its dynamics
    are evaluated again in the recursive formulation (``SimulationResult.qdd``), without stabilization terms."""

    name = "augmented"
    stabilization = ("none", 0.0, 0.0)
    recursive_loop_class = SpatialTimeLoop


class _Stepper:
    """The run's state [z, zb, zd, acc, vdot, lam, applied power, applied work, rate, dissipated power, dissipated
    work] (omega in body axes in zb, acc, vdot, rate; in ground axes in zd; rate the last step's mean velocity
    Delta / h, the initial velocity before the first, ``kernels.predict``; the powers and works of tau, the drivers
    and the elements' forces, and of the elements' dampers) and its steps: ``advance`` takes a step of h, split in
    halves where Newton does not converge (at most MAX_SPLITS times), counting the Newton iterations of every try.
    ``loads``: the state-dependent loads (``_Loads``: tau functions, force elements), None for tau constant;
    ``output`` (``_Output``) sees every converged (sub)step: its events and t_eval samples."""

    output = None

    def __init__(self, model, starts, tau, drive, coefficients, newton_tol, max_newton, state, arrays, loads=None):
        self.model, self.starts, self.tau, self.drive = model, starts, tau, drive
        self.coefficients, self.newton_tol, self.max_newton = coefficients, newton_tol, max_newton
        self.state, self.arrays, self.loads = state, arrays, loads
        self.spare = (np.empty_like(state[4]), np.empty_like(state[5]))  # the next step's unknowns
        self.gyration = radii_of_gyration(model)
        self.iterations = 0
        self.splits = 0
        # the estimate that accepts a step's first correction (``kernels.newton_step``: (K_com, K_rot) of the last
        # step that took two corrections, NaN before the first; the last correction's parts)
        self.estimate = np.full(4, np.nan)
        self.history = False  # the spare vdot holds the accelerations of the step before the last (``first_guess``)
        self.constant_guesses = 0  # steps whose first guess was the constant acceleration
        # the velocities projected onto the joints' velocity rows at every converged step ("Velocities"; trees
        # without drivers: the loops' rows would need the bordered solve, a driver's row its rate)
        self.projected = PROJECT_VELOCITIES and not model.nloops and not drive.bodies.size
        self.no_load_blocks = np.zeros((0, 12, 12))  # (the projection's matrix takes no joint loads' blocks)
        self.projection_tol = PROJECTION_MARGIN * newton_tol  # (the rows' gaps in units of their reach)
        self.gap = np.zeros(3)  # the last step's largest gap over its reach, its body, whether it was projected
        self.projections = 0  # the converged (sub)steps whose velocities were projected

    def project(self, vdot, lam):
        """The converged step's new velocities (arrays.zbp, zdp) projected mass-orthogonally onto the joints' velocity
        rows ("Velocities": ``kernels.spherical_project`` on a tree of spherical joints, else
        ``kernels.project_velocity``; vdot, lam the step's unknowns), tau's power at the projected state in
        arrays.power[0]; only where a row's gap exceeds ``projection_tol`` times its reach (``self.gap``: the
        largest ratio, its body, 1 where projected). Returns the status."""
        model, arrays = self.model, self.arrays
        tau = self.tau if self.loads is None else self.loads.tau
        if arrays.xb.shape[0]:
            return kernels.spherical_project(model.body_int, model.body_real, self.starts, tau, arrays.zp, arrays.zbp,
                                             arrays.zdp, vdot, lam, arrays.tangent, arrays.rc, arrays.diag, arrays.wm,
                                             arrays.loc, arrays.xb, arrays.xj, arrays.power, arrays.info,
                                             self.gyration, self.projection_tol, self.gap)
        return kernels.project_velocity(model.body_int, model.body_real, model.gravity, self.starts, tau,
                                        self.drive.target, arrays.zp, arrays.zbp, arrays.zdp, vdot, lam,
                                        arrays.tangent, arrays.rb, arrays.rc, arrays.jc, arrays.jp, arrays.res,
                                        arrays.gam, arrays.diag, arrays.api, arrays.lu, arrays.piv, arrays.wm,
                                        self.no_load_blocks, arrays.power, self.gyration, self.projection_tol,
                                        self.gap)

    def advance(self, h, t, step, depth=0):
        """Step from t by h; None, or ("failed", message) where even the steps of h / 2^MAX_SPLITS fail, or
        ("failed", message, cause) where a driver, a tau, element or event function fails at t + h."""
        try:
            self.drive.at(t + h)
        except StateError as error:
            return "failed", f"generalized_alpha failed at t = {t + h:.9g} s: {error}", error.__cause__
        alpha_m, alpha_f, gamma, beta = self.coefficients
        z, zb, zd, acc, vdot, lam, power, work, rate, dissipation, dissipated = self.state
        c_stiff = h * h * beta * (1.0 - alpha_f) / (1.0 - alpha_m)
        c_damp = h * gamma * (1.0 - alpha_f) / (1.0 - alpha_m)
        coef = np.array([h, alpha_m, alpha_f, gamma, beta, c_stiff, c_damp])
        vdot_new, lam_new = self.spare  # (vdot_new: the accelerations of the step before, where self.history)
        self.constant_guesses += kernels.first_guess(zb, acc, vdot, vdot_new, rate, coef, int(self.history), vdot_new)
        self.history = False  # (the spare arrays now hold this step's iterates)
        lam_new[:] = lam
        model, arrays = self.model, self.arrays
        if self.loads is None:
            status = kernels.newton_step(model.body_int, model.body_real, model.gravity, self.starts, self.tau,
                                         self.drive.target, z, zb, acc, vdot, coef, self.gyration, self.newton_tol,
                                         self.max_newton, vdot_new, lam_new, *arrays.step_arrays(), self.estimate)
            self.iterations += int(arrays.info[0])
        else:
            try:
                status = self.loads.newton(self, z, zb, acc, vdot, coef, t + h, vdot_new, lam_new)
            except StateError as error:
                return "failed", f"generalized_alpha failed at t = {t + h:.9g} s: {error}", error.__cause__
        if not status and self.projected:  # the velocities onto the joints' velocity rows ("Velocities")
            status = self.project(vdot_new, lam_new)
            self.projections += int(self.gap[2])
        if status:
            if depth == MAX_SPLITS:
                return _step_failure(model, status, t + h, step, h, arrays.info, self.newton_tol, self.max_newton,
                                     float(np.abs(lam_new).max(initial=0.0)), arrays.loops[9])
            self.splits += 1
            return self.advance(0.5 * h, t, step, depth + 1) or self.advance(0.5 * h, t + 0.5 * h, step, depth + 1)
        kernels.end_step(zb, coef, vdot, vdot_new, acc, rate)  # acc and rate in place
        self.history = True  # the spare arrays will hold this step's start accelerations: the next step's history
        if self.loads is None:
            new_power, new_dissipation = float(arrays.power[0]) + self.drive.power(lam_new), 0.0
        else:  # tau and the elements at the converged state (their last evaluation was at the iterate before)
            try:
                new_power, new_dissipation = self.loads.powers(t + h, self.starts, self.drive, arrays.zp, arrays.zdp,
                                                               vdot_new, lam_new)
            except StateError as error:
                return "failed", f"generalized_alpha failed at t = {t + h:.9g} s: {error}", error.__cause__
        start = self.state
        # the step's arrays hold the new state: swapped with the old one's, which the next step overwrites
        self.state = [arrays.zp, arrays.zbp, arrays.zdp, acc, vdot_new, lam_new, new_power,
                      work + 0.5 * h * (power + new_power), rate, new_dissipation,
                      dissipated + 0.5 * h * (dissipation + new_dissipation)]
        failure = None
        if self.output is not None:  # the events and samples in the step, on its dense output
            failure = self.output.step(t, h, start, self.state, rate)
        arrays.zp, arrays.zbp, arrays.zdp, self.spare = z, zb, zd, (vdot, lam)
        if failure is None and self.output is not None and self.output.stopped:
            return "event", "a terminal event"
        return failure


def to_body_axes(z, vectors):
    """(nbodies, 6) vectors (linear, angular in ground axes) with the angular part in each body's axes (R^T w)."""
    rot = augmented3d._quaternion_matrix(z[:, 3:])
    out = np.array(vectors, dtype=float)
    out[:, 3:] = np.einsum("nji,nj->ni", rot, vectors[:, 3:])
    return out


def _power(model, starts, tau, drive, z, zd, vdot, lam, arrays):
    """The power of tau at (z, zd) and of the drivers (their multipliers in lam, ``drive.at`` the start's time)."""
    if not tau.size:
        return drive.power(lam)
    rb, jc, jp, res, gam = arrays.joint_rows()
    kernels.residual(model.body_int, model.body_real, model.gravity, starts, tau, drive.target, z, zd, vdot, lam, 1.0,
                     rb, arrays.rc, jc, jp, res, gam, arrays.power)
    return float(arrays.power[0]) + drive.power(lam)


def _step_failure(model, status, t_fail, step, h, info, newton_tol, max_newton, multipliers, loop_gaps):
    """("failed", message) of a step that did not converge or whose Newton matrix is singular; ``multipliers`` the
    largest |lambda| of the last iterate (the joints' forces [N] and moments [N m]), named for a singular matrix:
    reached after several iterations with forces far beyond the model's, it says the iteration diverged.
    ``loop_gaps`` (m,): the loop rows' residuals phi at the last iterate, whose largest names a loop that does not
    close (empty for a tree)."""
    kind, index = L.decode_status(status)
    head = f"generalized_alpha: Newton did not converge at t = {t_fail:.9g} s (step {step}, dt = {h:g} s)"
    if kind == L.STATUS_SINGULAR and index >= model.nbodies:
        name = model.loop_names[index - model.nbodies]
        return "failed", (f"generalized_alpha: the Newton matrix is singular at t = {t_fail:.9g} s (step {step}, dt "
                          f"= {h:g} s) at loop {name!r} after {int(info[0])} Newton iterations: its rows have lost "
                          "rank with the others' (redundant loops, or a loop locked at a singular position; use "
                          "formulation='recursive', whose multipliers are the minimum-norm ones)")
    if kind == L.STATUS_LOOP_DEGENERATE:
        return "failed", (f"{head}: the two points of the distance loop {model.loop_names[index]!r} coincide (its "
                          "direction is undefined); reduce dt")
    if kind == L.STATUS_SINGULAR:
        return "failed", (f"generalized_alpha: the Newton matrix is singular at t = {t_fail:.9g} s (step {step}, dt = "
                          f"{h:g} s) at body {model.names[index]!r} (index {index}) after {int(info[0])} Newton "
                          f"iterations, the joints' multipliers up to {multipliers:.3g}: the iteration diverged from "
                          "its first guess (a step too large for the motion: reduce dt), or a body has no inertia "
                          "along a motion its joint leaves free")
    if kind == L.STATUS_NONFINITE_Q:
        return "failed", (f"{head}: the iteration diverged (the state of body {model.names[index]!r} is not "
                          "finite); reduce dt")
    correction, worst, where = info[1], info[2], int(info[3])
    if math.isfinite(correction):
        if info[0] < max_newton:  # given up: diverging (``kernels.DIVERGENCE``)
            why = (f"the iteration diverged: after {int(info[0])} iterations its correction of the state had grown "
                   f"to {correction:.3g} (more than {kernels.DIVERGENCE:g}x at two iterations running)")
        else:
            why = (f"after {int(info[0])} iterations (max_newton = {max_newton}) the correction of the state is "
                   f"{correction:.3g} > newton_tol = {newton_tol:g}")
        why += f"; the residual max |M vdot + G^T lambda - Q| is {worst:.3g} at body {model.names[where]!r}"
        if loop_gaps.size:
            row = int(np.argmax(np.abs(loop_gaps)))
            loop = int(np.searchsorted(model.loop_rows, row, side="right") - 1)
            why += (f", the loops' largest gap |phi| {abs(loop_gaps[row]):.3g} at loop "
                    f"{model.loop_names[loop]!r}")
        why += "; reduce dt"
    else:
        why = "the iteration diverged (a non-finite correction): the step is too large; reduce dt"
    return "failed", f"{head}: {why}"


def joint_states(model, z, zd, arrays):
    """Joint coordinates q (nt, nq), velocities v (nt, nv) and the constraint drift max |C| (nt,) of the absolute
    samples z (nt, nbodies, 7) and zd (nt, nbodies, 6) (omega in ground axes), compiled in O(N) a sample (the
    joints' rows computed in the run's arrays, scratch here)."""
    nt, n = len(z), model.nbodies
    z = np.ascontiguousarray(z, dtype=float)
    zd = np.ascontiguousarray(zd, dtype=float)
    if z.shape != (nt, n, 7) or zd.shape != (nt, n, 6):
        raise ValueError(f"z and zd must have shapes ({nt}, {n}, 7) and ({nt}, {n}, 6), got {z.shape} and {zd.shape}")
    q, v, drift = np.zeros((nt, model.nq)), np.zeros((nt, model.nv)), np.zeros(nt)
    _, jc, jp, res, gam = arrays.joint_rows()
    recover3d.joint_states(model.body_int, model.body_real, z, zd, q, v, drift, jc, jp, res, gam)
    return q, v, drift


def _result(model, samples_t, samples_z, samples_zd, samples_work, arrays, iterations, nsteps):
    """The run's SimulationResult from its samples of (z, zd) (lists of (nbodies, 7) and (nbodies, 6) arrays, each
    dropped from its list as it is copied into the result's: a long chain's samples are not held twice)."""
    nt = len(samples_t)
    z, zd = np.empty((nt, model.nbodies, 7)), np.empty((nt, model.nbodies, 6))
    for k in range(nt):
        z[k], zd[k] = np.reshape(samples_z[k], (model.nbodies, 7)), np.reshape(samples_zd[k], (model.nbodies, 6))
        samples_z[k] = samples_zd[k] = None
    q, v, drift = joint_states(model, z, zd, arrays)
    for i in range(nt if model.nloops else 0):  # the loops' gaps |phi| too
        drift[i] = max(drift[i], float(np.abs(augmented3d.loop_rows(model, z[i], zd[i])[2]).max()))
    work = np.array(samples_work, dtype=float).reshape(nt, 2)  # (dissipated, applied) a sample
    result = SimulationResult(model, np.array(samples_t), q, v, work, "augmented generalized_alpha", iterations, nsteps,
                              0)
    result.z, result.zd, result.constraint_drift = z, zd, drift
    result.newton_iterations = iterations
    result.newton_factorizations = iterations
    return result


BDF_MAX_ORDER = 2
BDF_SAFETY = 0.9
BDF_MIN_FACTOR = 0.2
BDF_MAX_FACTOR = 2.0
BDF_MAX_FAILS = 10  # tries in a row whose Newton iteration fails before the run stops
BDF_ERROR_CONSTANT = (0.0, 0.5, 2.0 / 9.0)  # C_k of BDF-k at a constant step: its local error C_k h^(k+1) y^(k+1)


def bdf_coefficients(nodes):
    """a (k + 1,) [1/s] with y'(nodes[0]) ~ sum_j a[j] y(nodes[j]): the derivative at nodes[0] of the Lagrange
    basis of the k + 1 distinct ``nodes`` (t+, t_n, t_{n-1}, ...)."""
    nodes = np.asarray(nodes, dtype=float)
    k = nodes.size - 1
    a = np.empty(k + 1)
    a[0] = sum(1.0 / (nodes[0] - nodes[m]) for m in range(1, k + 1))
    for j in range(1, k + 1):
        num = np.prod([nodes[0] - nodes[m] for m in range(1, k + 1) if m != j])
        den = np.prod([nodes[j] - nodes[m] for m in range(k + 1) if m != j])
        a[j] = num / den
    return a


def extrapolation_weights(nodes, t):
    """w with p(t) = sum_j w[j] y(nodes[j]) for the polynomial p through the values at ``nodes``."""
    nodes = np.asarray(nodes, dtype=float)
    return np.array(
        [
            np.prod([(t - nodes[m]) / (nodes[j] - nodes[m]) for m in range(nodes.size) if m != j])
            for j in range(nodes.size)
        ]
    )


class _BdfStepper:
    """The run's state as ``augmented3d_implicit._Stepper``'s list [z, zb, zd, acc, vdot, lam, power, work, rate,
    dissipation, dissipated] (acc unused here: vdot's copy; rate the last step's mean velocity in local coordinates
    x+ / h, the dense output's rotation increments), the past states (t, z, zb) the last first, and ``step``: one
    try of a step of h from t. ``loads``: the state-dependent loads (``_Loads``: tau functions, force elements),
    iterated by the generalised-alpha run's ``_Loads.newton``; None for tau constant."""

    def __init__(self, model, starts, tau, drive, state, arrays, rtol, atol, max_order, newton_tol, max_newton,
                 loads=None):
        n = model.nbodies
        self.model, self.starts, self.tau, self.drive = model, starts, tau, drive
        self.state, self.arrays, self.loads = state, arrays, loads
        self.rtol, self.atol, self.max_order = rtol, atol, max_order
        self.newton_tol, self.max_newton = newton_tol, max_newton
        self.gyration = radii_of_gyration(model)
        self.past_t = []
        self.past_z = np.zeros((max_order, n, 7))
        self.past_zb = np.zeros((max_order, n, 6))
        self.base_x, self.zb_eff, self.acc_eff = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6))
        self.x_pred, self.v_pred, self.rate = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6))
        self.vdot_new, self.lam_new = np.empty_like(state[4]), np.empty_like(state[5])
        self.unused = np.zeros((n, 6))  # the GA's vdot0, which alpha_f = 0 leaves out
        self.where = np.zeros(1, dtype=np.int64)
        self.iterations = 0
        self.newton_failures = 0
        # no estimate carried over (``kernels.newton_step``): its steps change in size and order, and one step's
        # estimate is not the next one's; NaN again before every step
        self.estimate = np.full(4, np.nan)
        self.order = 1

    def step(self, t, h):
        """Try a step of h from t: ("newton", status) where Newton fails, ("error", norm, order) where it converged
        (the new state in ``arrays``, vdot_new, lam_new, rate); a StateError of a driver propagates."""
        self.drive.at(t + h)
        z, zb, _, _, vdot, lam = self.state[:6]
        npast = len(self.past_t)
        k = min(self.max_order, npast) if npast else 1
        self.order = k
        t_new = t + h
        times = [t, *self.past_t]
        a = bdf_coefficients([t_new, *times[:k]])
        if npast:  # the polynomial through the k + 1 last values
            nodes = times[: k + 1]
            w, w_d = extrapolation_weights(nodes, t_new), 0.0
            product = np.prod([t_new - s for s in nodes])
        else:  # the first step: Taylor's, y_n + h y_n'
            w, w_d, product = np.ones(1), h, h * h
        scale = BDF_ERROR_CONSTANT[k] * math.factorial(k + 1) * h ** (k + 1) / product
        c_damp = 1.0 / a[0]
        c_stiff = c_damp * c_damp
        used = len(w) - 1
        bdf3d.history(
            z,
            zb,
            vdot,
            self.past_z,
            self.past_zb,
            used,
            a,
            w,
            w_d,
            c_damp,
            self.base_x,
            self.zb_eff,
            self.acc_eff,
            self.vdot_new,
            self.x_pred,
            self.v_pred,
        )
        # the GA's coefficients that give this update (module docstring): (h, alpha_m, alpha_f, gamma, beta,
        # c_stiff, c_damp)
        coef = np.array([c_damp, 0.0, 0.0, 1.0, 1.0, c_stiff, c_damp])
        self.lam_new[:] = lam
        self.estimate[:2] = np.nan
        model, arrays = self.model, self.arrays
        if self.loads is not None:  # the loads at every iterate, their blocks in the matrix (counts its iterations)
            status = self.loads.newton(self, z, self.zb_eff, self.acc_eff, self.unused, coef, t_new, self.vdot_new,
                                       self.lam_new)
        else:
            status = kernels.newton_step(
                model.body_int,
                model.body_real,
                model.gravity,
                self.starts,
                self.tau,
                self.drive.target,
                z,
                self.zb_eff,
                self.acc_eff,
                self.unused,
                coef,
                self.gyration,
                self.newton_tol,
                self.max_newton,
                self.vdot_new,
                self.lam_new,
                *arrays.step_arrays(),
                self.estimate,
            )
            self.iterations += int(arrays.info[0])
        if status:
            self.newton_failures += 1
            return "newton", status
        norm = bdf3d.error_norm(
            arrays.zp,
            arrays.zbp,
            self.vdot_new,
            self.base_x,
            c_stiff,
            self.x_pred,
            self.v_pred,
            scale,
            self.atol,
            self.rtol,
            self.gyration,
            h,
            self.rate,
            h,
            self.where,
        )
        return "error", norm, k

    def accept(self, t, h):
        """Take the converged step of h from t: the state moves on (the old one into the past), its power and
        work terms (the loads' evaluated at the new state: a StateError of a function that fails there propagates,
        the state unchanged); returns (start, end) states for the output."""
        arrays = self.arrays
        start = self.state
        z, zb, zd, acc, vdot, lam, power, work, _, dissipation, dissipated = start
        if self.loads is not None:  # tau and the elements at the converged state (their last evaluation: the iterate
            # before)
            new_power, new_dissipation = self.loads.powers(t + h, self.starts, self.drive, arrays.zp, arrays.zdp,
                                                           self.vdot_new, self.lam_new)
        else:
            new_power = float(arrays.power[0]) + self.drive.power(self.lam_new) if self.tau.size else \
                self.drive.power(self.lam_new)
            new_dissipation = 0.0
        self.past_z[1:] = self.past_z[:-1].copy()
        self.past_zb[1:] = self.past_zb[:-1].copy()
        self.past_z[0], self.past_zb[0] = z, zb
        self.past_t = [t, *self.past_t][: self.max_order]
        end = [
            arrays.zp.copy(),
            arrays.zbp.copy(),
            arrays.zdp.copy(),
            self.vdot_new.copy(),
            self.vdot_new.copy(),
            self.lam_new.copy(),
            new_power,
            work + 0.5 * h * (power + new_power),
            self.rate.copy(),
            new_dissipation,
            dissipated + 0.5 * h * (dissipation + new_dissipation),
        ]
        self.state = end
        return start, end


def simulate_bdf(
    model,
    q0,
    v0,
    t0,
    t_end,
    *,
    rtol=1e-6,
    atol=1e-6,
    tau=None,
    drivers=None,
    every=1,
    t_eval=None,
    events=None,
    max_order=BDF_MAX_ORDER,
    first_step=None,
    max_step=np.inf,
    newton_tol=None,
    max_newton=10,
    max_steps=10_000_000,
    progress=None,
    max_wall_time=None,
    dt=None,
):
    """Variable-step BDF (orders 1 and 2) in absolute coordinates (module docstring), called by
    ``rm.simulate(model3d, method="bdf", formulation="augmented")``; q0 (nq,) and v0 (nv,) checked there, tau None,
    constant (nv,) or a function tau(t) / tau(t, q, v) (Python or numba-compiled; it and the model's force elements
    are the generalised-alpha run's ``_Loads``), drivers as ``rm.simulate``'s (revolute and prismatic joints:
    body -> f(t) or (f, f', f'')), ``events`` as ``rm.simulate``'s, rtol, atol the local error's tolerances (m, rad
    at the radius of gyration, m/s times the step), max_order 1 or 2, first_step and max_step [s], newton_tol [m]
    (default 1e-3 min(rtol, atol)).
    Returns the SimulationResult (joint coordinates at the ``t_eval`` times, t0 and t_end added, or at every
    ``every``-th step, t0 and t_end always; ``z``, ``zd``, ``constraint_drift``, ``newton_iterations``,
    ``newton_factorizations``, ``newton_failures``, ``nrejected``; ``applied_work``, ``dissipated_work``). Raises
    SimulationError with the samples so far when a step's Newton iteration keeps failing down to the smallest step,
    when a driver, tau, an element or an event function fails, or at max_wall_time; StateError before the run for a
    tau function that fails at t0; KeyboardInterrupt (``runs.RunInterrupted``) on Ctrl-C. ``dt`` [s], where given,
    fixes the step (no error control, no rejected step; Newton failures still quarter it): for measuring the
    order of convergence."""
    check_model(model)
    if max_order not in (1, 2):
        raise ValueError(
            f"max_order of bdf in absolute coordinates must be 1 or 2 (the A-stable orders), got {max_order!r}"
        )
    rtol, atol = float(rtol), float(atol)
    if not (rtol >= 0.0 and atol > 0.0):
        raise ValueError(f"bdf in absolute coordinates needs rtol >= 0 and atol > 0, got rtol = {rtol}, atol = {atol}")
    newton_tol = (
        max(1e-3 * min(rtol, atol) if rtol > 0.0 else 1e-3 * atol, 1e-14)
        if newton_tol is None
        else _runs.positive(newton_tol, "newton_tol")
    )
    max_newton = int(max_newton)
    every = int(every)
    if t_eval is not None:
        t_eval = np.unique(np.concatenate(([t0], np.asarray(t_eval, dtype=float), [t_end])))
        if t_eval[0] < t0 or t_eval[-1] > t_end:
            raise ValueError(f"t_eval must lie in [t0, t_end] = [{t0:g}, {t_end:g}]")
    tau, inputs, drive, q0, v0, z, zd, zb, fused, arrays, angles, loads = _run_start(model, q0, v0, t0, tau, drivers)
    starts = drive.starts
    dissipation = 0.0
    if loads is not None:  # tau and the elements at the start (a function that fails here: StateError, no run)
        vdot, lam, power, dissipation = loads.start(t0, starts, drive, z, zd, tau, q0, v0)
        tau = loads.tau
    else:
        vdot, lam = drive.initial_dynamics(z, zd, tau, q0, v0, t0)
        vdot = to_body_axes(z, vdot)
        power = _power(model, starts, tau, drive, z, zd, vdot, lam, arrays)
    augmented3d.release_workspace(model)
    spatial.release_workspace(model)
    stepper = _BdfStepper(
        model,
        starts,
        tau,
        drive,
        [z, zb, zd, vdot.copy(), vdot, lam, power, 0.0, zb.copy(), dissipation, 0.0],
        arrays,
        rtol,
        atol,
        max_order,
        newton_tol,
        max_newton,
        loads,
    )
    states = _AbsoluteStates(model, arrays, angles)
    event_functions = _runs._Events(model, events, inputs, states)
    output = _BdfOutput(model, t0, stepper.state, drive, t_eval, event_functions, states, loads is not None)
    control = _runs._RunControl(max_wall_time)
    shown = control.progress = _runs.run_progress(progress, "bdf", t0, t_end)
    span = t_end - t0
    max_step = min(float(max_step), span)
    if first_step is None:
        weights = atol + rtol * np.abs(z[:, :3])
        size = float(np.max(np.abs(vdot[:, :3]) / weights, initial=0.0))
        h = 0.5 / math.sqrt(size) if size > 0.0 else max_step
    else:
        h = _runs.positive(first_step, "first_step")
    h = min(h, max_step) if dt is None else _runs.positive(dt, "dt")
    t = t0
    accepted = rejected = fails = 0
    failure = None
    try:
        with control:
            failure = output.failure
            while failure is None and t < t_end:
                if accepted >= max_steps:
                    failure = ("failed", f"bdf: max_steps = {max_steps} steps reached at t = {t:.9g} s")
                    break
                if t + 1.1 * h >= t_end:  # the last step onto t_end (stretched by up to 10 %)
                    h = t_end - t
                try:
                    tried = stepper.step(t, h)
                except StateError as error:
                    failure = ("failed", f"bdf failed at t = {t + h:.9g} s: {error}", error.__cause__)
                    break
                if tried[0] == "newton":
                    fails += 1
                    if fails > BDF_MAX_FAILS or 0.25 * h < 1e-14 * (1.0 + abs(t)):
                        failure = _bdf_newton_failure(model, tried[1], t + h, accepted + 1, h, arrays, stepper)
                        break
                    h *= 0.25
                    continue
                fails = 0
                norm, k = tried[1], tried[2]
                factor = BDF_SAFETY * norm ** (-1.0 / (k + 1)) if norm > 0.0 else BDF_MAX_FACTOR
                if dt is not None:  # fixed steps: the error estimate is not used
                    norm, factor = 0.0, dt / h
                if norm > 1.0:
                    rejected += 1
                    h *= min(max(factor, BDF_MIN_FACTOR), 0.9)
                    if h < 1e-14 * (1.0 + abs(t)):
                        failure = (
                            "failed",
                            f"bdf: the step size fell below {h:.3g} s at t = {t:.9g} s (the local "
                            f"error test kept failing at body {model.names[int(stepper.where[0])]!r})",
                        )
                        break
                    continue
                t_new = t_end if h == t_end - t else t + h
                try:
                    start, end = stepper.accept(t, t_new - t)
                except StateError as error:  # a tau or element function at the converged state
                    failure = ("failed", f"bdf failed at t = {t_new:.9g} s: {error}", error.__cause__)
                    break
                failure = output.step(t, t_new - t, start, end, stepper.rate)
                t = t_new
                accepted += 1
                h = min(h * min(max(factor, 1.0), BDF_MAX_FACTOR), max_step) if dt is None else min(h * factor, dt)
                if failure is not None:
                    break
                if shown is not None:
                    shown.update(t, stepper.iterations)
                if output.stopped:
                    break
                if t_eval is None and (t == t_end or accepted % every == 0):
                    output.store_step_end(t, stepper.state)
                if control.interrupted:
                    break
                if max_wall_time is not None and control.status() == L.STATUS_TIME_LIMIT and t < t_end:
                    failure = (
                        "time_limit",
                        f"bdf: the run reached max_wall_time = {max_wall_time:g} s at t = {t:.9g} s",
                    )
                    break
    except KeyboardInterrupt:
        control.interrupted = True
    finally:
        control.progress = None
        if shown is not None:
            shown.close(t, stepper.iterations)
    status = L.STATUS_EVENT if output.stopped else L.STATUS_OK

    def build():
        result = _result(model, output.t, output.z, output.zd, output.work, arrays, stepper.iterations, accepted)
        result.method = "augmented bdf"
        result.nrejected = rejected
        result.newton_failures = stepper.newton_failures
        if output.track:  # the angles continuous, as the run's events saw them
            angles.unwrap(result.q, np.array(output.refs).reshape(result.t.size, -1))
        elif angles.columns.size:  # from q0's, each within pi of the sample's before (whole turns taken off)
            wrapped = result.q[:, angles.columns]
            jumps = np.diff(wrapped, axis=0, prepend=angles.ref[None, :])
            result.q[:, angles.columns] = wrapped - 2.0 * np.pi * np.cumsum(np.round(jumps / (2.0 * np.pi)), axis=0)
        # the loops' multipliers and the drivers' forces at each sample's state, not the steps' (whose first, order
        # 1 steps leave them inaccurate: module docstring, "Multipliers and driving forces")
        drive.finish(result, None)
        if model.nloops:
            result.multipliers = result._recursive_multipliers()
        _runs.close_run(result, status, control, event_functions, output.records)
        return result

    _runs.raise_if_interrupted(
        "bdf", L.STATUS_INTERRUPTED if control.interrupted else status, t, control, [np.array(output.t)], build
    )
    result = build()
    if failure is not None:
        result.status, why = failure[:2]
        error = SimulationError(f"{why}. {_runs.kept_samples(result).capitalize()}", t, result)
        result.message = str(error)
        raise error from (failure[2] if len(failure) > 2 else None)
    return result


def _bdf_newton_failure(model, status, t_fail, step, h, arrays, stepper):
    """("failed", message) of a step whose Newton iteration failed at every try down to the smallest step: the
    generalised-alpha route's diagnosis (``augmented3d_implicit._step_failure``: the body, the correction, the
    residual, a singular block or loop), named for bdf."""
    kind, why = _step_failure(
        model,
        status,
        t_fail,
        step,
        h,
        arrays.info,
        stepper.newton_tol,
        stepper.max_newton,
        float(np.abs(stepper.lam_new).max(initial=0.0)),
        arrays.loops[9],
    )
    why = why.replace("generalized_alpha", "bdf", 1).replace("reduce dt", "tighten rtol or lower first_step")
    return (
        kind,
        f"{why} (after {stepper.newton_failures} failed tries in the run, the last {BDF_MAX_FAILS} in a row "
        f"or down to the smallest step)",
    )


class _BdfOutput(_Output):
    """``augmented3d_implicit._BdfOutput`` whose failures of an event function are named for bdf."""

    def _evaluate(self, t, y, out):
        failure = super()._evaluate(t, y, out)
        if failure is None:
            return None
        return failure[0], failure[1].replace("generalized_alpha", "bdf", 1), failure[2]
