"""Mechanism analyses (those of Sugiyama, Naitoh and Toguchi's KINE2D): driven kinematics, static equilibrium,
joint reactions, linearisation (assembly is in ``assembly``).

All of them work on any Model, loops included, through the same kernels as the dynamics: the recursive
Newton-Euler pass for the forces a state needs, the loop layer (``recursive_mbd.dynamics.loops``) for the constraint
residual, Jacobian J and acceleration term gamma. Sign conventions as ``recursive_mbd.dynamics.loops``:

    M qdd + h(q, qd) = tau + Q_elements - J^T lambda.

Reactions are reported as the force and moment [N, N m] that the parent (or the ground) exerts on a body through
its joint, in ground axes, the moment taken about the joint point; a loop's force acts on each of its two bodies
at its loop point.

Each of them also takes a spatial model (``Model3D``, loops and force elements included), which goes to
``statics3d``: joint reactions and linearisation come back as the same ``Reactions`` and ``Linearization`` (3D
shapes: velocities v (nv,), 6-number wrenches), kinematics and statics as ``KinematicResult3D`` and
``Equilibrium3D``.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.optimize

from .. import _checks
from .._kernels import layout as L
from .._kernels.planar import tree
from ..dynamics._evaluation import _element_loads
from ..dynamics.calls import inverse_dynamics, mass_matrix
from ..dynamics.kinematics import forward_kinematics
from ..dynamics.loops import RCOND, branch_normals, constraints, forces_from_multipliers, loop_workspace
from ..errors import ModelError, StateError
from ..model import joints
from ..model.spatial import Model3D
from ..model.statuses import raise_status
from ..model.workspace import workspace
from .assembly import _coordinates, _vector, assemble, stiffness_spectrum

# ---- reactions --------------------------------------------------------------------------------------------------

def _loop_wrench(model, q, forces, wrench):
    """Add the loop forces (at loop points) to the per-body wrench at the centres of mass."""
    poses, _ = forward_kinematics(model, q)
    for lp in range(model.nloops):
        for side, column in ((0, L.LPAX), (1, L.LPBX)):
            body = model.loop_int[lp, L.LBODY_A + side]
            if body < 0:
                continue
            c, s = math.cos(poses[body, 2]), math.sin(poses[body, 2])
            sx, sy = model.loop_real[lp, column:column + 2]
            arm = (c * sx - s * sy, s * sx + c * sy)  # loop point relative to the centre of mass
            fx, fy, moment = forces[lp, side]
            wrench[body] += (fx, fy, moment + arm[0] * fy - arm[1] * fx)


@dataclass
class Reactions:
    """Joint and loop reactions at one state.

    joint (nbodies, 3): (Fx, Fy, M) the parent or ground exerts on each body through its joint, at the joint point,
    ground axes [N, N m] (actuation along the joint's own direction included: for a revolute joint M is its
    torque); loops (nloops, 2, 3): loop forces on body a and body b at their loop points; multipliers (m,);
    tau (nq,): the joint forces used (for kinematic analysis: the driving forces on driven coordinates).
    A spatial model's (``statics3d.joint_reactions``): joint (nbodies, 6) (Fx, Fy, Fz, Mx, My, Mz), loops
    (nloops, 2, 6) (force, moment), tau (nv,).
    """

    joint: np.ndarray
    loops: np.ndarray
    multipliers: np.ndarray
    tau: np.ndarray


def _joint_forces(model, q, qd, qdd, lam, t):
    """Rows (Fx, Fy, M about the joint point) of every tree joint, by the Newton-Euler pass with the loop forces
    as external loads, and the joint forces tau it implies."""
    ws = workspace(model)
    wrench = np.zeros((model.nbodies, 3))
    if model.elem_int.shape[0]:
        _element_loads(model, ws, q, qd, float(t))
        wrench += ws.wrench
    loop_forces = np.zeros((model.nloops, 2, 3))
    if model.nloops:
        _, lw = loop_workspace(model)
        constraints(model, q, qd)  # fills the row weights
        loop_forces = forces_from_multipliers(model, lam, lw.weights)
        _loop_wrench(model, q, loop_forces, wrench)
    tau = np.empty(model.nq)
    status = tree.inverse_dynamics(model.body_int, model.body_real, model.gravity, q, qd, qdd,
                                   wrench if model.nbodies else ws.no_wrench, ws.ws, tau)
    if status:
        raise_status(model, status, ("q", "qd", "qdd"))
    at_com = ws.ws[:, L.QA:L.QA + 3].copy()  # force of the parent on the subtree, at the centre of mass
    # moment about the joint point P: M_c + (c - P) x F, with c - P the child-point arm e = R (com - child_point)
    poses, _ = forward_kinematics(model, q)
    c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    local = model.body_com - model._child_points
    ex, ey = c * local[:, 0] - s * local[:, 1], s * local[:, 0] + c * local[:, 1]
    joint = at_com.copy()
    joint[:, 2] += ex * at_com[:, 1] - ey * at_com[:, 0]
    if model.elem_int.shape[0]:
        tau -= ws.jforce
    return joint, loop_forces, tau


def joint_reactions(model, q, qd, qdd, tau=None, *, t=0.0):
    """Reactions of every joint and loop at the state (q, qd) with accelerations qdd: a ``Reactions``.

    The multipliers are those that balance the given tau: -J^T lambda = M qdd + h - Q_elements - tau in the least
    squares sense (exact when qdd is the motion that tau produces, e.g. from ``rm.forward_dynamics``).
    A spatial model (``Model3D``, loops and force elements included): ``statics3d.joint_reactions`` (qd, qdd and
    tau are v, vdot and tau (nv,); 6 numbers a joint: force and moment in 3D).
    """
    if isinstance(model, Model3D):
        from . import statics3d  # noqa: PLC0415

        return Reactions(*statics3d.joint_reactions(model, q, qd, qdd, tau, t=t))
    q = _vector(model, q, "q")
    qd = _vector(model, qd, "qd")
    qdd = _vector(model, qdd, "qdd")
    tau = np.zeros(model.nq) if tau is None else _vector(model, tau, "tau")
    t = _checks.real(t, "t")
    lam = np.zeros(model.nconstraints)
    if model.nloops:
        needed = inverse_dynamics(model, q, qd, qdd, t=t) - tau
        _, _, jac, _ = constraints(model, q, qd)
        lam = np.linalg.lstsq(-jac.T, needed, rcond=RCOND)[0]
    joint, loops, _ = _joint_forces(model, q, qd, qdd, lam, t)
    for value, what in ((joint, "joint reactions"), (loops, "loop forces"), (lam, "multipliers")):
        _checks.check_finite_result(value, what)
    return Reactions(joint, loops, lam, tau)


# ---- driven kinematics ------------------------------------------------------------------------------------------

@dataclass
class KinematicResult:
    """Kinematic analysis under prescribed motion (``kinematic_analysis``), all arrays over the times t (nt,).

    q, qd, qdd (nt, nq); driving_forces (nt, nd) in the order of ``driven`` (coordinate indices); multipliers
    (nt, m); joint_reactions (nt, nbodies, 3) and loop_forces (nt, nloops, 2, 3) as ``Reactions``.
    """

    model: object
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    driven: np.ndarray
    driving_forces: np.ndarray
    multipliers: np.ndarray
    joint_reactions: np.ndarray
    loop_forces: np.ndarray

    def point(self, body, point=(0.0, 0.0)):
        """Position, velocity and acceleration of a point fixed on a body (body frame) at every t: 3 x (nt, 2)."""
        return point_motion(self.model, self.q, self.qd, self.qdd, body, point)


def point_motion(model, q, qd, qdd, body, point=None):
    """Position, velocity and acceleration [m, m/s, m/s^2] of a point fixed on a body (body frame, [m]; default the
    body frame's origin) for the states (q, qd, qdd), each (nt, nq): three (nt, 2) arrays, ground axes. O(N) per
    state. A spatial model (``Model3D``): ``statics3d.point_motion`` (qd, qdd are v, vdot (nt, nv); a point (3,);
    three (nt, 3) arrays)."""
    if isinstance(model, Model3D):
        from . import statics3d  # noqa: PLC0415

        return statics3d.point_motion(model, q, qd, qdd, body, point)
    from .._kernels.planar.loops import body_accelerations  # noqa: PLC0415

    ws = workspace(model)
    index = model.body_index(body)
    acc = np.zeros((model.nbodies, 3))
    local = _checks.finite_array((0.0, 0.0) if point is None else point, "point", (2,)) - model.body_com[index]
    # each row goes to the kernels, which read nq entries: every row must be a finite (nq,) float64 vector
    q, qd, qdd = (np.atleast_2d(_checks.finite_array(x, what)) for x, what in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
    for x, what in ((q, "q"), (qd, "qd"), (qdd, "qdd")):
        if x.ndim != 2 or x.shape != (q.shape[0], model.nq):
            raise StateError(f"{what} must have shape (nt, {model.nq}) (or ({model.nq},)) with one row per state "
                             f"like q {q.shape}, got {x.shape}")
    out = np.zeros((3, q.shape[0], 2))
    for n in range(q.shape[0]):
        status = tree.com_kinematics(model.body_int, model.body_real, np.ascontiguousarray(q[n]),
                                     np.ascontiguousarray(qd[n]), ws.ws, ws.com)
        if status:
            raise_status(model, status, ("q", "qd"), output=f"a centre of mass at sample {n} (entry = body)")
        body_accelerations(model.body_int, ws.ws, np.ascontiguousarray(qdd[n]), acc)
        c, s, om = ws.ws[index, L.CS], ws.ws[index, L.SN], ws.ws[index, L.OM]
        rx, ry = c * local[0] - s * local[1], s * local[0] + c * local[1]
        alpha = acc[index, 2]
        out[0, n] = ws.com[index, 0] + rx, ws.com[index, 1] + ry
        out[1, n] = ws.com[index, 2] - om * ry, ws.com[index, 3] + om * rx
        out[2, n] = (acc[index, 0] - alpha * ry - om * om * rx, acc[index, 1] + alpha * rx - om * om * ry)
    _checks.check_finite_result(out, "point motion [0 position, 1 velocity, 2 acceleration; sample; axis]")
    return out[0], out[1], out[2]


# J_f (the loop Jacobian on the coordinates the drivers leave free) with sigma_min below this fraction of sigma_max
# is near a change point, where its round-off error eps / sigma_min(J_f) in the rates grows without bound (at one
# 1e-14 rad from a parallelogram's change point the rates came out on the crossing branch, the accelerations
# at 6e14): there the rates come from the branch's normal space (``loops.branch_normals``), as in the time
# loops, whose zone (eigenvalues of J M^-1 J^T below 1e-6 of the largest) is about this one
CHANGE_POINT_ZONE = 1e-3


def _branch_rates(model, q, qd, qdd, free, jf, tol):
    """Near a change point, set qd[free] and qdd[free] (in place) on the branch that the predicted velocity qd
    follows: N qd = 0 and N qdd = curvature with the branch's normal space N, which it returns; None where J_f is
    well conditioned or no branch can be told (a dead point of the drivers: the caller takes J_f)."""
    values = np.linalg.svd(jf, compute_uv=False)
    if values.size == free.size and values[-1] > CHANGE_POINT_ZONE * values[0]:
        return None
    normals, _ = branch_normals(model, q, qd, tol=tol)
    if normals.shape[0] == 0 or np.linalg.matrix_rank(normals[:, free]) < free.size:
        return None
    qd[free] += np.linalg.lstsq(normals[:, free], -normals @ qd, rcond=None)[0]
    rows = normals.shape[0]
    normals, curvature = branch_normals(model, q, qd, tol=tol)  # the curvature along the velocity just found
    if normals.shape[0] != rows:
        return None
    qdd[free] += np.linalg.lstsq(normals[:, free], curvature - normals @ qdd, rcond=None)[0]
    return normals


def kinematic_analysis(model, drivers, t, q_guess=None, *, tol=1e-12):
    """Positions, velocities, accelerations, driving forces and reactions under prescribed joint motions.

    Parameters
    ----------
    drivers : dict
        body (index or name) -> f(t), or (f, f', f'') for exact derivatives, prescribing that body's 1-dof joint
        coordinate [m or rad] (as ``rm.simulate(drivers=...)``). Together with the loops they must take up every
        degree of freedom.
    t : array_like (nt,)
        Times [s], increasing; each solution starts from the previous one, predicted to the new time with its
        velocity and acceleration (the first from ``q_guess``, default zero), then closed by minimum-norm
        Gauss-Newton (``assemble``), so the mechanism stays on one assembly branch, through change points too,
        whether or not a sample falls on one: near a change point (two branches cross and the loop Jacobian loses
        rank) the velocities, accelerations and driving forces come from the normal space of the branch that the
        predicted velocity follows (``loops.branch_normals``, as in the time loops); the loop forces there grow
        like 1 / distance to it where the mechanism needs them to.

    Returns
    -------
    KinematicResult

    A spatial model (``Model3D``): ``analysis.statics3d.kinematic_analysis`` (revolute or prismatic joints
    driven; q (nt, nq), v and vdot (nt, nv)), returning a ``KinematicResult3D``.
    """
    if isinstance(model, Model3D):
        from . import statics3d  # noqa: PLC0415

        return statics3d.kinematic_analysis(model, drivers, t, q_guess, tol=tol)
    from ..integrate.runs import _Inputs  # noqa: PLC0415  (the drivers' parsing and derivatives)

    times = np.atleast_1d(np.asarray(t, dtype=float))
    if times.ndim != 1 or not np.all(np.isfinite(times)):
        raise StateError("t must be a 1-D array of finite times")
    workspace(model)  # compiles the model
    spec = _Inputs(model, None, drivers)
    driven = np.array([c for c, _, _ in spec.drivers], dtype=np.int64)
    free = np.setdiff1d(np.arange(model.nq), driven)
    nq, m, nt = model.nq, model.nconstraints, times.size
    q = np.zeros(nq) if q_guess is None else _vector(model, q_guess, "q_guess")
    out = {name: np.zeros((nt, nq)) for name in ("q", "qd", "qdd")}
    forces = np.zeros((nt, driven.size))
    lams = np.zeros((nt, m))
    reactions = np.zeros((nt, model.nbodies, 3))
    loop_forces = np.zeros((nt, model.nloops, 2, 3))
    qd_pred = np.zeros(nq)
    qdd_pred = np.zeros(nq)
    deficient_before = False
    for n, time in enumerate(times):
        if n > 0:  # continuation: predict from the previous solution (its velocity and acceleration)
            step = time - times[n - 1]
            q = q + step * out["qd"][n - 1] + 0.5 * step * step * out["qdd"][n - 1]
            qd_pred = out["qd"][n - 1] + step * out["qdd"][n - 1]
            qdd_pred = out["qdd"][n - 1]
        qd = qd_pred.copy()
        qdd = qdd_pred.copy()
        for coord, _, evaluate in spec.drivers:
            q[coord], qd[coord], qdd[coord] = evaluate(time)
        try:
            q = assemble(model, q, fixed=driven, tol=tol)
        except ModelError as err:
            raise ModelError(f"kinematic analysis at t = {time:g}: {err}") from None
        normals = None
        if free.size:
            if model.nloops == 0:
                raise ModelError(f"the drivers take up {driven.size} of {nq} degrees of freedom and the model has "
                                 "no loops; drive every coordinate")
            _, _, jac, gamma = constraints(model, q, qd)
            jf = jac[:, free]
            normals = _branch_rates(model, q, qd, qdd, free, jf, tol) if n > 0 else None
            rank = free.size if normals is not None else np.linalg.matrix_rank(jf)
            # an isolated rank drop that no branch resolves is passed with the continuation's rates; one at the
            # start, or at two times in a row, is a mechanism the drivers do not drive
            if rank < free.size and (n == 0 or deficient_before):
                raise ModelError(f"kinematic analysis at t = {time:g}: the drivers and loops leave "
                                 f"{free.size - rank} degree(s) of freedom undetermined")
            deficient_before = rank < free.size
            if normals is None:
                # velocities and accelerations nearest the predicted ones that meet the loop equations: exact where
                # J_f has full column rank
                qd[free] += np.linalg.lstsq(jf, -jac @ qd, rcond=None)[0]
                _, _, jac, gamma = constraints(model, q, qd)
                qdd[free] += np.linalg.lstsq(jf, gamma - jac @ qdd, rcond=None)[0]
        needed = inverse_dynamics(model, q, qd, qdd, t=time)  # = tau_drive - J^T lambda
        lam = np.zeros(m)
        if m:
            _, _, jac, _ = constraints(model, q, qd)
            if normals is None:
                lam = np.linalg.lstsq(-jac[:, free].T, needed[free], rcond=RCOND)[0] if free.size else np.zeros(m)
                tau = needed + jac.T @ lam
            else:
                # near a change point the loop forces can grow like 1 / distance to it (a cut-off would drop them,
                # and their finite work on the drivers with them): the multipliers without cut-off, the driving
                # forces from the branch's normal space
                lam = np.linalg.lstsq(-jac[:, free].T, needed[free], rcond=None)[0]
                tau = needed + normals.T @ np.linalg.lstsq(-normals[:, free].T, needed[free], rcond=None)[0]
        else:
            tau = needed
        joint, loops, _ = _joint_forces(model, q, qd, qdd, lam, time)
        out["q"][n], out["qd"][n], out["qdd"][n] = q, qd, qdd
        forces[n], lams[n], reactions[n], loop_forces[n] = tau[driven], lam, joint, loops
    return KinematicResult(model, times, out["q"], out["qd"], out["qdd"], driven, forces, lams, reactions,
                           loop_forces)


# ---- static equilibrium ------------------------------------------------------------------------------------------

def _static_residual(model, q, lam, tau, t):
    """g(q, lambda) = h(q, 0) - Q_elements(q, 0) - tau + J^T lambda: zero at a static equilibrium."""
    zeros = np.zeros(model.nq)
    g = inverse_dynamics(model, q, zeros, zeros, t=t) - tau
    if model.nloops:
        phi, _, jac, _ = constraints(model, q)
        return g + jac.T @ lam, phi, jac
    return g, np.zeros(0), np.zeros((0, model.nq))


def _stiffness(model, q, lam, tau, t, step=1e-7):
    """d g / d q at fixed multipliers (central differences, 2 nq Newton-Euler passes), symmetrised."""
    nq = model.nq
    k = np.zeros((nq, nq))
    for j in range(nq):
        h = step * max(1.0, abs(q[j]))
        qp, qm = q.copy(), q.copy()
        qp[j] += h
        qm[j] -= h
        k[:, j] = (_static_residual(model, qp, lam, tau, t)[0] - _static_residual(model, qm, lam, tau, t)[0]) / (2 * h)
    return 0.5 * (k + k.T)


def _null_basis(jac, nq):
    return np.eye(nq) if jac.shape[0] == 0 else scipy.linalg.null_space(jac, rcond=1e-10)


@dataclass
class Equilibrium:
    """A static equilibrium (``static_equilibrium``).

    q (nq,); reactions (``Reactions`` at rest); stiffness (nq, nq) d(h - Q + J^T lambda)/dq; reduced_stiffness
    eigenvalues on the loops' admissible motions (ascending); stable: none of them negative, where eigenvalues
    zero within 1e-9 of the largest stiffness entry are neutral, zero-frequency modes (a free rigid-body motion, a
    hinge no load turns), not instability; method: "newton" or "energy"; iterations; neutral (nq, k0): the
    directions of those neutral modes.
    """

    q: np.ndarray
    reactions: "Reactions"
    stiffness: np.ndarray
    eigenvalues: np.ndarray
    stable: bool
    method: str
    iterations: int
    neutral: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


def _conservative_potential(model, q, tau, t):
    """Potential of gravity, springs, the constant tau and constant ground-frame forces and torques."""
    from ..dynamics.kinematics import energy  # noqa: PLC0415

    value = energy(model, q, np.zeros(model.nq), t=t)[1] - tau @ q
    poses, _ = forward_kinematics(model, q)
    for el in model._elements:
        if el["kind"] == "force":
            if callable(el["value"]) or el["frame"] != "ground":
                raise ModelError(f"element {el['name']!r} is not conservative: the energy fallback of "
                                 "static_equilibrium needs constant ground-frame forces")
            x, y, th = poses[el["body_a"]]
            px, py = el["point_a"]
            value -= el["value"] @ (x + math.cos(th) * px - math.sin(th) * py, y + math.sin(th) * px
                                    + math.cos(th) * py)
        elif el["kind"] == "torque":
            if callable(el["value"]):
                raise ModelError(f"element {el['name']!r} is not conservative (a function of time)")
            value -= el["value"] * poses[el["body_a"], 2]
    return value


def static_equilibrium(model, q_guess, tau=None, *, t=0.0, tol=1e-10, max_iter=50, fixed=(), prefer_stable=True,
                       velocity=None):
    """Static equilibrium under gravity, springs, constant loads and tau, loops included.

    Newton-Raphson (KINE2D's static analysis) on g(q, lambda) = 0, phi(q) = 0 with line search (stiffness from the
    loads, or by central differences); if it does not converge, or (with ``prefer_stable``) lands on an unstable
    equilibrium, the potential energy is minimised on the loop constraints from the guess (scipy SLSQP) and polished
    with Newton; an unstable Newton result is kept only if that finds nothing stable. ``fixed`` coordinates (indices
    or body names) are held at their guess values (their reactions are then in ``reactions.tau``). Stability: the
    stiffness restricted to the motions the loops allow must be positive definite.

    Returns
    -------
    Equilibrium

    A spatial model (``Model3D``, loops included): ``analysis.statics3d.static_equilibrium`` (Newton in the
    velocity space under gravity and tau (nv,), with the loop multipliers; ``velocity`` (nv,): the constant
    velocity of a steady motion, e.g. a spindle held at a constant rate by ``fixed``; ``t`` and ``prefer_stable``
    do not apply), returning an ``Equilibrium3D``. ``velocity`` applies to spatial models only.
    """
    if isinstance(model, Model3D):
        from . import statics3d  # noqa: PLC0415

        return statics3d.static_equilibrium(model, q_guess, tau, tol=tol, max_iter=max_iter, fixed=fixed,
                                            velocity=velocity)
    if velocity is not None:
        raise TypeError("static_equilibrium: velocity applies to spatial models (Model3D) only")
    q = _vector(model, q_guess, "q_guess")
    tau = np.zeros(model.nq) if tau is None else _vector(model, tau, "tau")
    t = _checks.real(t, "t")
    tol = _checks.real(tol, "tol", low=0.0, strict=True)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    held = _coordinates(model, fixed)
    free = np.setdiff1d(np.arange(model.nq), held)
    m = model.nconstraints
    if model.nloops:
        q = assemble(model, q, fixed=held)
    q, lam, iterations, converged = _newton_static(model, q, np.zeros(m), tau, t, free, tol, max_iter)
    found = (q, lam, "newton", *_stability(model, q, lam, tau, t, held)) if converged else None
    if found is None or (prefer_stable and not found[5]):
        try:
            start = _minimise_potential(model, _vector(model, q_guess, "q_guess"), tau, t, free)
        except ModelError:
            if found is None:
                raise
            start = None
        if start is not None:
            q, lam, more, converged = _newton_static(model, start, np.zeros(m), tau, t, free, tol, 20)  # polish
            iterations += more
            if converged:
                candidate = (q, lam, "energy", *_stability(model, q, lam, tau, t, held))
                if found is None or candidate[5]:
                    found = candidate
    if found is None:
        g, phi, _ = _static_residual(model, q, lam, tau, t)
        raise ModelError(f"no static equilibrium found: residual |g| = {np.abs(g[free]).max():.3g}, "
                         f"|phi| = {np.abs(phi).max(initial=0.0):.3g} after {iterations} iterations")
    q, lam, method, stiffness, eigenvalues, stable, neutral = found
    g, _, _ = _static_residual(model, q, lam, tau, t)
    holding = tau.copy()
    holding[held] += g[held]  # what the held coordinates' supports must add
    zeros = np.zeros(model.nq)
    joint, loops, _ = _joint_forces(model, q, zeros, zeros, lam, t)
    return Equilibrium(q, Reactions(joint, loops, lam, holding), stiffness, eigenvalues, stable, method,
                       iterations, neutral)


def _stiffness_matrix(model, q, lam, tau, t):
    """d g / d q: from the loads where ``_direct_stiffness`` applies, else by central differences."""
    return _direct_stiffness(model, q, lam) if _direct_route(model) else _stiffness(model, q, lam, tau, t)


def _stability(model, q, lam, tau, t, held):
    """(stiffness, eigenvalues on the admissible motions (ascending), stable, neutral (nq, k0)): eigenvalues zero
    within 1e-9 of the largest stiffness entry are neutral modes, not instability (``stiffness_spectrum``)."""
    stiffness = _stiffness_matrix(model, q, lam, tau, t)
    jac = constraints(model, q)[2] if model.nloops else np.zeros((0, model.nq))
    basis = _null_basis(np.vstack((jac, np.eye(model.nq)[held])), model.nq)
    reduced = basis.T @ stiffness @ basis
    eigenvalues, neutral, stable = stiffness_spectrum(0.5 * (reduced + reduced.T), basis, 1e-9,
                                                      float(np.abs(stiffness).max()))
    return stiffness, eigenvalues, stable, neutral


def _newton_static(model, q, lam, tau, t, free, tol, max_iter):
    """Newton on (g_free, phi) over (q_free, lambda); returns (q, lambda, iterations, converged)."""
    nf, m = free.size, model.nconstraints

    def merit(q, lam):
        g, phi, jac = _static_residual(model, q, lam, tau, t)
        return np.concatenate((g[free], phi)), jac

    res, jac = merit(q, lam)
    scale = max(1.0, np.abs(_static_residual(model, q, np.zeros(m), tau, t)[0]).max())
    for iteration in range(max_iter):
        if np.abs(res).max() <= tol * scale:
            return q, lam, iteration, True
        stiffness = _stiffness_matrix(model, q, lam, tau, t)[np.ix_(free, free)]
        kkt = np.block([[stiffness, jac[:, free].T], [jac[:, free], np.zeros((m, m))]])
        step = np.linalg.lstsq(kkt, -res, rcond=RCOND)[0]
        length = 1.0
        norm = np.linalg.norm(res)
        while length > 1e-4:
            q_t = q.copy()
            q_t[free] += length * step[:nf]
            lam_t = lam + length * step[nf:]
            res_t, jac_t = merit(q_t, lam_t)
            if np.all(np.isfinite(res_t)) and np.linalg.norm(res_t) < norm:
                break
            length *= 0.5
        else:
            return q, lam, iteration, False
        q, lam, res, jac = q_t, lam_t, res_t, jac_t
    return q, lam, max_iter, bool(np.abs(res).max() <= tol * scale)


def _minimise_potential(model, q0, tau, t, free):
    def objective(x):
        q = q0.copy()
        q[free] = x
        return _conservative_potential(model, q, tau, t)

    def gradient(x):
        q = q0.copy()
        q[free] = x
        zeros = np.zeros(model.nq)
        return (inverse_dynamics(model, q, zeros, zeros, t=t) - tau)[free]

    cons = []
    if model.nloops:
        def phi(x):
            q = q0.copy()
            q[free] = x
            return constraints(model, q)[0]

        def phi_jac(x):
            q = q0.copy()
            q[free] = x
            return constraints(model, q)[2][:, free]

        cons = [{"type": "eq", "fun": phi, "jac": phi_jac}]
    result = scipy.optimize.minimize(objective, q0[free], jac=gradient, constraints=cons, method="SLSQP",
                                     options={"maxiter": 500, "ftol": 1e-14})
    q = q0.copy()
    q[free] = result.x
    return q


# ---- linearisation ------------------------------------------------------------------------------------------------

@dataclass
class Linearization:
    """M qdd_r + C qd_r + K q_r = 0 in independent coordinates q = q_eq + basis @ q_r (basis (nq, nr), orthonormal
    columns spanning the motions the loops allow; the identity without loops). A spatial model's: q = q_eq (+)
    basis @ q_r (``rm.integrate_configuration``) and v = basis @ qd_r, basis (nv, nr): the displacements live in the
    velocity space (a quaternion joint's three rotation rates), q (nq,) is q_eq."""

    M: np.ndarray
    C: np.ndarray
    K: np.ndarray
    basis: np.ndarray
    q: np.ndarray


def _direct_route(model):
    """True when K and C follow from loads without differencing: revolute joints only; elements only joint
    spring-dampers, constant torques and constant ground-frame forces; loops only revolute or fixed."""
    kinds = {el["kind"] for el in model._elements}
    constant = all(not callable(el.get("value")) and el.get("frame", "ground") == "ground" for el in model._elements)
    return (bool(np.all(model.joint_type == joints.REVOLUTE)) and kinds <= {"joint_spring_damper", "torque", "force"}
            and constant and all(lp["kind"] in ("revolute", "fixed") for lp in model._loops))


def _load_stiffness(model, q, lam):
    """kappa (nbodies,): the stiffness of each revolute joint d under constant loads, without Newton-Euler passes.

    Every load is a constant force F at a point P of a body (gravity m g at each centre of mass, the applied
    forces, and each loop's force at its two points, F_a = -lambda, F_b = +lambda for the point rows). For joints
    i, j one an ancestor of the other and d the deeper, d^2 P / dq_i dq_j = -(P - P_d) for a point P beyond d, so
    K_ij = kappa_d = sum over loads beyond d of F . (P - P_d). O(N).
    """
    n = model.nbodies
    poses, _ = forward_kinematics(model, q)
    c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])

    def world(body, local):  # body-frame points to ground coordinates (body: index or array of indices)
        local = np.asarray(local, dtype=float)
        return poses[body, :2] + np.stack((c[body] * local[..., 0] - s[body] * local[..., 1],
                                           s[body] * local[..., 0] + c[body] * local[..., 1]), axis=-1)

    bodies = np.arange(n)
    gravity = model.body_mass[:, None] * model.gravity
    moment = np.einsum("ij,ij->i", gravity, world(bodies, model.body_com))  # sum of F . P per body
    total = gravity.copy()  # sum of F per body
    loads = [(el["body_a"], el["point_a"], np.asarray(el["value"], float)) for el in model._elements
             if el["kind"] == "force"]
    row = 0
    for lp in model._loops:
        force = np.asarray(lam[row:row + 2])
        loads += [(body, point, sign * force) for body, point, sign in
                  ((lp["body_a"], lp["point_a"], -1.0), (lp["body_b"], lp["point_b"], 1.0)) if body >= 0]
        row += 3 if lp["kind"] == "fixed" else 2
    for body, point, force in loads:
        moment[body] += force @ world(body, point)
        total[body] += force
    parent = model.body_parent
    if np.all(parent == bodies - 1):  # a serial chain: subtree sums are suffix sums
        moment = np.cumsum(moment[::-1])[::-1]
        total = np.cumsum(total[::-1], axis=0)[::-1]
    else:
        for i in range(n - 1, -1, -1):
            if parent[i] >= 0:
                moment[parent[i]] += moment[i]
                total[parent[i]] += total[i]
    joint_point = world(bodies, model._child_points)
    return moment - np.einsum("ij,ij->i", total, joint_point)


def _direct_stiffness(model, q, lam):
    """K = d(h - Q + J^T lambda)/dq for ``_direct_route`` models: kappa_d (``_load_stiffness``) filled into
    K_ij = kappa_d for d the deeper of two joints one of which is an ancestor of the other (0 otherwise), plus
    the joint springs on the diagonal."""
    kappa = _load_stiffness(model, q, lam)
    n = model.nbodies
    parent = model.body_parent
    if np.all(parent == np.arange(n) - 1):  # a serial chain: K_ij = kappa_max(i, j)
        index = np.arange(n)
        k = kappa[np.maximum.outer(index, index)]
    else:
        k = np.zeros((n, n))
        for d in range(n):  # d and its ancestors
            a = d
            while a >= 0:
                k[a, d] = k[d, a] = kappa[d]
                a = parent[a]
    for el in model._elements:
        if el["kind"] == "joint_spring_damper":
            k[el["body_a"], el["body_a"]] += el["stiffness"]
    return k


def _planar_size(model):
    """A length scale of a planar model [m]: its largest joint, centre-of-mass or loop point coordinate (1 for a
    model of points at the origin)."""
    points = [model._bodies.column(key) for key in ("parent_point", "child_point", "com")]
    points += [np.array([lp["point_a"], lp["point_b"]]) for lp in model._loops]
    return float(np.abs(np.concatenate(points)).max()) or 1.0


def _holding_multipliers(model, q, tau, t):
    """The loop multipliers lambda (m,) that hold the model at rest at q under gravity, the elements and tau, after
    checking that q is a static equilibrium the loops close: ModelError naming the open loop or the coordinate
    whose residual g + J^T lambda (g = h(q, 0) - Q_elements - tau) is above 1e-6 of the model's size or loads.

    A linearisation about any other state is no linearisation about an equilibrium: K would lack the terms that
    the residual's own motion brings, and the frequencies would be wrong without a sign of it."""
    nq, m = model.nq, model.nconstraints
    g, phi, jac = _static_residual(model, q, np.zeros(m), tau, t)
    size = _planar_size(model)
    if m and np.abs(phi).max() > 1e-6 * size:
        row = int(np.argmax(np.abs(phi)))
        k = int(np.searchsorted(model.loop_rows, row, side="right") - 1)
        raise ModelError(f"q_eq does not close the loops: loop {model._loops[k]['name']!r} (index {k}) is open by "
                         f"{np.abs(phi).max():.3g} (m or rad); assemble it (rm.assemble, rm.static_equilibrium)")
    lam = np.linalg.lstsq(-jac.T, g, rcond=RCOND)[0] if m else np.zeros(0)  # the multipliers that hold q_eq
    left = g + jac.T @ lam
    weight = model.total_mass() * float(np.linalg.norm(model.gravity))
    scale = max(float(np.abs(g).max(initial=0.0)), float(np.abs(tau).max(initial=0.0)), weight * size, 1e-300)
    if nq and np.abs(left).max() > 1e-6 * scale:
        index = int(np.argmax(np.abs(left)))
        body = int(np.searchsorted(model.joint_q_index, index, side="right") - 1)
        while model.joint_ndof[body] == 0:  # fixed joints own no coordinate
            body -= 1
        raise ModelError(f"q_eq is not a static equilibrium: the residual |g + J^T lambda| is "
                         f"{np.abs(left).max():.3g} (N or N m) at q[{index}] (body {model.body_names[body]!r}), above "
                         f"1e-6 of the loads ({scale:.3g}); find it with rm.static_equilibrium (or hold it by tau)")
    return lam


def linearize(model, q_eq, tau=None, *, t=0.0, step=None):
    """Linearisation about a static equilibrium q_eq (``static_equilibrium``): a ``Linearization``.

    M from the composite-rigid-body pass; K = d(h - Q + J^T lambda)/dq and C = d(h - Q)/dqd at rest directly from
    the loads where ``_direct_stiffness`` applies (revolute trees, revolute/fixed loops, joint spring-dampers,
    constant forces: no extra passes), otherwise by central differences of the Newton-Euler pass (2 nq passes
    each, step ``step``, default 1e-7). With loops, everything is restricted to the null space of J at q_eq
    (``basis``), lambda being the multipliers that hold q_eq. ModelError if q_eq does not close the loops or is not
    a static equilibrium under tau (|phi|, or the residual after the multipliers, above 1e-6 of the model's size or
    loads), as for a spatial model.

    A spatial model (``Model3D``, loops and force elements included): ``statics3d.linearize``, in the velocity
    space (tau (nv,); K and C by central differences along ``rm.integrate_configuration``, step default 1e-6;
    K symmetrised; with loops, q_eq must close them and be an equilibrium: ModelError otherwise).
    """
    if isinstance(model, Model3D):
        from . import statics3d  # noqa: PLC0415

        return Linearization(*statics3d.linearize(model, q_eq, tau, t=t, step=step))
    step = 1e-7 if step is None else step
    q = _vector(model, q_eq, "q_eq")
    tau = np.zeros(model.nq) if tau is None else _vector(model, tau, "tau")
    t = _checks.real(t, "t")
    step = _checks.real(step, "step", low=0.0, strict=True)
    nq = model.nq
    lam = _holding_multipliers(model, q, tau, t)
    jac = constraints(model, q)[2] if model.nloops else np.zeros((0, nq))
    stiffness = _stiffness_matrix(model, q, lam, tau, t)
    damping = np.zeros((nq, nq))
    if _direct_route(model):
        for el in model._elements:
            if el["kind"] == "joint_spring_damper":
                damping[el["body_a"], el["body_a"]] += el["damping"]
    elif model.elem_int.shape[0]:
        zeros = np.zeros(nq)
        for j in range(nq):
            e = np.zeros(nq)
            e[j] = step
            damping[:, j] = (inverse_dynamics(model, q, e, zeros, t=t) - inverse_dynamics(model, q, -e, zeros, t=t)) \
                / (2 * step)
    basis = _null_basis(jac, nq)
    mass = mass_matrix(model, q)
    return Linearization(basis.T @ mass @ basis, basis.T @ damping @ basis, basis.T @ stiffness @ basis, basis, q)


def modes(model, q_eq, k=None, tau=None, *, t=0.0):
    """Natural frequencies [rad/s] (ascending) and mode shapes (nq, k) in joint coordinates about q_eq.

    Undamped: K v = omega^2 M v on the linearisation (generalised symmetric eigenproblem, scipy.linalg.eigh).
    Mode shapes are M-normalised. Raises ModelError if q_eq is not a static equilibrium the loops close
    (``linearize``) or if K has a negative eigenvalue (not a stable equilibrium).
    A spatial model (``Model3D``, closed loops included): ``analysis.statics3d.modes`` (tau (nv,); shapes
    (nv, k) in the velocity space, with loops on the motions the loops allow).
    """
    if isinstance(model, Model3D):
        from . import statics3d  # noqa: PLC0415

        return statics3d.modes(model, q_eq, k, tau, t=t)
    lin = linearize(model, q_eq, tau, t=t)
    n = lin.M.shape[0]
    k = n if k is None else _checks.integer(k, "k")
    if not 1 <= k <= n:
        raise StateError(f"k must be between 1 and {n}, got {k}")
    values, vectors = scipy.linalg.eigh(lin.K, lin.M, subset_by_index=(0, k - 1))
    if values[0] < -1e-9 * max(1.0, np.abs(values).max()):
        raise ModelError(f"q_eq is not a stable equilibrium: the stiffness has a negative eigenvalue "
                         f"{values[0]:.6g} (omega^2)")
    return np.sqrt(np.maximum(values, 0.0)), lin.basis @ vectors
