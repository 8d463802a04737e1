"""BDF on a spatial model in absolute coordinates: ``rm.simulate(model3d, method="bdf", formulation="augmented",
rtol=..., atol=...)``, variable step, orders 1 and 2.

The companion of ``augmented3d_implicit`` (generalised-alpha at a fixed step on the same coordinates): the same
unknowns, residual and O(N) Newton matrix eliminated in tree order, the same loops, drivers, dense output, events
and failures; only the step's formula, its coefficients and the step-size control are BDF's. Read that module's
docstring for the coordinates, the residual and what is exact in the matrix.

Scheme
------
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
---------------------------------------
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

Scope: every joint type of the augmented formulation, closed loops (the recursive route's projected start, the
loops' multipliers in ``result.multipliers``), drivers (tau constant), tau constant or None, gravity; t_eval (the
dense output of ``_kernels.augmented.dense3d``: cubic Hermite in the centres of mass and velocities, on SO(3) in
the rotations, from each step's ends), events (located on it), every, progress, max_wall_time, Ctrl-C. Not yet:
tau functions and force elements (ValueError: use generalized_alpha with formulation='augmented' or the recursive
route's bdf). ``result.newton_iterations`` counts the iterations of every try, ``nrejected`` the steps the error
test rejected, ``newton_failures`` the tries whose Newton iteration failed.
"""

import math

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.augmented import bdf3d
from .._kernels.augmented import implicit3d as kernels
from .._kernels.spatial import layout as SL
from ..dynamics import augmented3d, spatial
from ..errors import SimulationError, StateError
from . import augmented3d_implicit as ga
from . import runs as _runs
from .spatial_loop import _SpatialInputs

MAX_ORDER = 2
SAFETY = 0.9
MIN_FACTOR = 0.2
MAX_FACTOR = 2.0
MAX_FAILS = 10  # tries in a row whose Newton iteration fails before the run stops
ERROR_CONSTANT = (0.0, 0.5, 2.0 / 9.0)  # C_k of BDF-k at a constant step: its local error C_k h^(k+1) y^(k+1)


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
    try of a step of h from t."""

    def __init__(self, model, starts, tau, drive, state, arrays, rtol, atol, max_order, newton_tol, max_newton):
        n = model.nbodies
        self.model, self.starts, self.tau, self.drive = model, starts, tau, drive
        self.state, self.arrays = state, arrays
        self.rtol, self.atol, self.max_order = rtol, atol, max_order
        self.newton_tol, self.max_newton = newton_tol, max_newton
        self.gyration = ga.radii_of_gyration(model)
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
        scale = ERROR_CONSTANT[k] * math.factorial(k + 1) * h ** (k + 1) / product
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
        model, arrays = self.model, self.arrays
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
        work terms; returns (start, end) states for the output."""
        arrays = self.arrays
        start = self.state
        z, zb, zd, acc, vdot, lam, power, work, _, dissipation, dissipated = start
        new_power = (
            float(arrays.power[0]) + self.drive.power(self.lam_new) if self.tau.size else self.drive.power(self.lam_new)
        )
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
            0.0,
            dissipated,
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
    max_order=MAX_ORDER,
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
    ``rm.simulate(model3d, method="bdf", formulation="augmented")``; q0 (nq,) and v0 (nv,) checked there, tau None or
    constant (nv,), drivers as ``rm.simulate``'s (revolute and prismatic joints: body -> f(t) or (f, f', f'')),
    ``events`` as ``rm.simulate``'s, rtol, atol the local error's tolerances (m, rad at the radius of gyration, m/s
    times the step), max_order 1 or 2, first_step and max_step [s], newton_tol [m] (default 1e-3 min(rtol, atol)).
    Returns the SimulationResult (joint coordinates at the ``t_eval`` times, t0 and t_end added, or at every
    ``every``-th step, t0 and t_end always; ``z``, ``zd``, ``constraint_drift``, ``newton_iterations``,
    ``newton_factorizations``, ``newton_failures``, ``nrejected``). Raises SimulationError with the samples so far
    when a step's Newton iteration keeps failing down to the smallest step, when a driver or an event function
    fails, or at max_wall_time; KeyboardInterrupt (``runs.RunInterrupted``) on Ctrl-C. ``dt`` [s], where given,
    fixes the step (no error control, no rejected step; Newton failures still quarter it): for measuring the
    order of convergence."""
    ga.check_model(model)
    if callable(tau) or model._elements:
        raise ValueError(
            "bdf with formulation='augmented' on a Model3D takes tau constant and no force elements yet "
            "(use method='generalized_alpha' with formulation='augmented', or formulation='recursive')"
        )
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
    tau = np.zeros(0) if tau is None else np.ascontiguousarray(_checks.finite_array(tau, "tau", (model.nv,)))
    inputs = _SpatialInputs(model, tau if tau.size else None, drivers)
    drive = ga._Drivers(model, inputs)
    q0, v0 = drive.start(q0, v0, t0)
    if model.nloops:  # onto the loops, the driven joints held: the generalised-alpha run's start
        from ..dynamics.spatial_loops import consistent_start  # noqa: PLC0415

        q0, v0 = consistent_start(model, q0, v0, drive.inputs.driven if drive.bodies.size else None)
    drive.at(t0)
    z, zd = augmented3d.absolute_from_joint(model, q0, v0)
    zb = ga.to_body_axes(z, zd)
    starts = drive.starts
    fused = ga.FUSED_SPHERICAL and not model.nloops and bool((model.body_int[:, SL.JTYPE] == SL.SPHERICAL).all())
    arrays = ga._Arrays(model, starts, fused=fused)
    angles = ga._Angles(model, q0)
    vdot, lam = drive.initial_dynamics(z, zd, tau, q0, v0, t0)
    vdot = ga.to_body_axes(z, vdot)
    power = ga._power(model, starts, tau, drive, z, zd, vdot, lam, arrays)
    augmented3d.release_workspace(model)
    spatial.release_workspace(model)
    stepper = _BdfStepper(
        model,
        starts,
        tau,
        drive,
        [z, zb, zd, vdot.copy(), vdot, lam, power, 0.0, zb.copy(), 0.0, 0.0],
        arrays,
        rtol,
        atol,
        max_order,
        newton_tol,
        max_newton,
    )
    states = ga._AbsoluteStates(model, arrays, angles)
    event_functions = _runs._Events(model, events, inputs, states)
    output = _Output(model, t0, stepper.state, drive, t_eval, event_functions, states, False)
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
                    if fails > MAX_FAILS or 0.25 * h < 1e-14 * (1.0 + abs(t)):
                        failure = _newton_failure(model, tried[1], t + h, accepted + 1, h, arrays, stepper)
                        break
                    h *= 0.25
                    continue
                fails = 0
                norm, k = tried[1], tried[2]
                factor = SAFETY * norm ** (-1.0 / (k + 1)) if norm > 0.0 else MAX_FACTOR
                if dt is not None:  # fixed steps: the error estimate is not used
                    norm, factor = 0.0, dt / h
                if norm > 1.0:
                    rejected += 1
                    h *= min(max(factor, MIN_FACTOR), 0.9)
                    if h < 1e-14 * (1.0 + abs(t)):
                        failure = (
                            "failed",
                            f"bdf: the step size fell below {h:.3g} s at t = {t:.9g} s (the local "
                            f"error test kept failing at body {model.names[int(stepper.where[0])]!r})",
                        )
                        break
                    continue
                t_new = t_end if h == t_end - t else t + h
                start, end = stepper.accept(t, t_new - t)
                failure = output.step(t, t_new - t, start, end, stepper.rate)
                t = t_new
                accepted += 1
                h = min(h * min(max(factor, 1.0), MAX_FACTOR), max_step) if dt is None else min(h * factor, dt)
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
        result = ga._result(model, output.t, output.z, output.zd, output.work, arrays, stepper.iterations, accepted)
        result.method = "augmented bdf"
        result.nrejected = rejected
        result.newton_failures = stepper.newton_failures
        if output.track:  # the angles continuous, as the run's events saw them
            angles.unwrap(result.q, np.array(output.refs).reshape(result.t.size, -1))
        elif angles.columns.size:  # from q0's, each within pi of the sample's before (whole turns taken off)
            wrapped = result.q[:, angles.columns]
            jumps = np.diff(wrapped, axis=0, prepend=angles.ref[None, :])
            result.q[:, angles.columns] = wrapped - 2.0 * np.pi * np.cumsum(np.round(jumps / (2.0 * np.pi)), axis=0)
        if model.nloops:
            result.multipliers = np.array(output.mu)
        drive.finish(result, output.driving)
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


def _newton_failure(model, status, t_fail, step, h, arrays, stepper):
    """("failed", message) of a step whose Newton iteration failed at every try down to the smallest step: the
    generalised-alpha route's diagnosis (``augmented3d_implicit._step_failure``: the body, the correction, the
    residual, a singular block or loop), named for bdf."""
    kind, why = ga._step_failure(
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
        f"{why} (after {stepper.newton_failures} failed tries in the run, the last {MAX_FAILS} in a row "
        f"or down to the smallest step)",
    )


class _Output(ga._Output):
    """``augmented3d_implicit._Output`` whose failures of an event function are named for bdf."""

    def _evaluate(self, t, y, out):
        failure = super()._evaluate(t, y, out)
        if failure is None:
            return None
        return failure[0], failure[1].replace("generalized_alpha", "bdf", 1), failure[2]
