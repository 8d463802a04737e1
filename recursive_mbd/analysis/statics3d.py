"""Static equilibrium, linearisation, modes, driven kinematics, joint reactions and point motion of spatial models
(``Model3D``, closed loops included), behind ``rm.static_equilibrium``, ``rm.linearize``, ``rm.modes``,
``rm.kinematic_analysis``, ``rm.joint_reactions`` and ``rm.analysis.point_motion`` (their assembly:
``analysis.assembly``).

Static equilibrium under gravity, the force elements and constant generalised forces tau (nv,): the configuration q
where the generalised forces vanish, g(q) = h(q, 0) - Q(q, 0) - tau = 0, with h = ``rm.bias_forces`` at rest (gravity
only) and Q the elements' generalised forces (springs, preloads, applied forces; ``rm.element_forces``). Newton (the
static analysis of Sugiyama, Naitoh and Toguchi's KINE2D/KINE3D) steps in the velocity space, q <- q (+) delta
(``integrate_configuration``), so the quaternions of spherical and free joints stay unit; the stiffness K = dg/ddelta
comes from central differences along ``integrate_configuration`` (it is the Hessian of the potential at an equilibrium
of a conservative load), and stability is no negative eigenvalue of K on the free coordinates (a zero one is a
neutral, zero-frequency mode such as a turn about the vertical, named in ``Equilibrium3D.neutral``).

With loops (``Model3D.add_loop``; ``recursive_mbd.dynamics.spatial_loops``): assembly is Gauss-Newton on phi(q) = 0 with
minimum-norm steps in the velocity space over the free coordinates, q <- q (+) delta; static equilibrium is Newton
on g(q, lambda) = h(q, v) - Q(q, v) - tau + J(q)^T lambda = 0, phi(q) = 0 (the loops' sign convention, M vdot + h =
tau + Q - J^T lambda) with the KKT matrix [[K, J^T], [J, 0]], K = dg/ddelta at fixed lambda by central differences
(the Hessian of the Lagrangian), and stability is no negative eigenvalue of K on the motions the loops allow
(J delta = 0).
A constant velocity ``velocity`` (a spindle driven at a constant rate) makes it the relative equilibrium of that
steady motion: h(q, v) then holds the centrifugal terms, and K is the stiffness in the frame turning with it
(gyroscopic terms left out).
"""

from dataclasses import dataclass, field

import numpy as np

from .. import _checks
from .._kernels.arrays import readonly_zeros
from .._kernels.spatial import layout as SL
from .._kernels.spatial import tree as spatial_tree
from ..dynamics.spatial import _element_loads, forward_kinematics, inverse_dynamics, workspace
from ..errors import ModelError, StateError
from ..model.configuration import integrate_configuration
from ..model.spatial import Model3D
from ..model.statuses import raise_spatial_status
from .assembly import _configuration, _held, _loop_gap, _size, _vector3d, assemble, stiffness_spectrum

_STEP = 1e-6  # central-difference step along integrate_configuration [rad or m]: truncation ~1e-12, round-off ~1e-10


def _where(model, g, free):
    """Where the residual is largest: "v[3] (body 'sleeve', prismatic joint)"."""
    index = int(free[np.argmax(np.abs(g[free]))])
    for body, joint in enumerate(model.joint_types):
        span = model.v_slice(body)
        if span.start <= index < span.stop:
            return f"v[{index}] (body {model.names[body]!r}, {joint} joint)"
    return f"v[{index}]"


def _forces(model, q, v, t=0.0):
    """h(q, v) - Q_elements(q, v, t) (nv,): the generalised forces that hold q at the velocity v without acceleration
    (gravity, velocity products, the force elements)."""
    return inverse_dynamics(model, q, v, np.zeros(model.nv), t=t)


def _lagrangian_stiffness(model, q, lam, velocity, t=0.0, step=_STEP):
    """K (nv, nv) = d(h(q, v) - Q(q, v) + J(q)^T lambda)/d delta at q with lambda and v = ``velocity`` fixed, delta
    the velocity-space displacement q (+) delta (central differences along ``integrate_configuration``): the Hessian
    of the Lagrangian V + lambda . phi at an equilibrium (there g + J^T lambda = 0, so the derivative of the map
    delta -> q (+) delta adds nothing at second order)."""
    from ..dynamics.spatial_loops import constraints  # noqa: PLC0415  (the loop layer builds on dynamics)

    def forces(config):
        return _forces(model, config, velocity, t) + constraints(model, config)[2].T @ lam

    columns = []
    for k in range(model.nv):
        delta = np.zeros(model.nv)
        delta[k] = step
        plus = forces(integrate_configuration(model, q, delta))
        minus = forces(integrate_configuration(model, q, -delta))
        columns.append((plus - minus) / (2 * step))
    return np.column_stack(columns)


def _null_basis(jac):
    """An orthonormal basis (ncols, ncols - rank) of the null space of ``jac`` (SVD, rank to 1e-10 relative): the
    velocity-space motions the loops allow."""
    _, singular, right = np.linalg.svd(jac)
    rank = int(np.sum(singular > 1e-10 * max(1.0, singular.max(initial=0.0))))
    return right[rank:].T


def stiffness(model, q, step=_STEP, velocity=None, t=0.0):
    """K (nv, nv) = d(h(q, v) - Q(q, v, t) - tau)/d delta at q (tau and v constant; v = ``velocity``, default zero),
    delta the velocity-space displacement q (+) delta (central differences along ``integrate_configuration``)."""
    q = _configuration(model, q, "q")
    rest = np.zeros(model.nv) if velocity is None else velocity
    columns = []
    for k in range(model.nv):
        delta = np.zeros(model.nv)
        delta[k] = step
        plus = _forces(model, integrate_configuration(model, q, delta), rest, t)
        minus = _forces(model, integrate_configuration(model, q, -delta), rest, t)
        columns.append((plus - minus) / (2 * step))
    return np.column_stack(columns)


def static_equilibrium(model, q_guess, tau=None, *, tol=1e-10, max_iter=50, fixed=(), velocity=None):
    """Static equilibrium of a spatial model (module docstring): Newton from ``q_guess`` with a backtracking line
    search on |g|; ``fixed`` velocity indices or body names are held (their generalised forces are then the
    support's, in ``Equilibrium.holding``). ``velocity`` (nv,), default zero: the constant velocity of a steady
    motion (e.g. a spindle held at a constant rate by ``fixed``), whose relative equilibrium is sought; with loops
    it must be one the loops allow (J v = 0 at the result, else ModelError). A model with loops is assembled first
    (``assemble`` with the same ``fixed``), and its multipliers are returned.

    Returns
    -------
    Equilibrium3D
        q (nq,), residual g (nv,), stiffness K (nv, nv), eigenvalues of its symmetric part on the free
        coordinates (ascending; with loops, on the free motions the loops allow), stable, iterations, holding (nv,):
        tau plus what the held coordinates' supports add; multipliers (m,) of the loops (loop forces as in
        ``spatial_loops.loop_dynamics``); neutral (nv, k0): the neutral, zero-frequency modes, the directions
        (velocity space) of the eigenvalues zero within 1e-8 of the largest (a turn about the vertical, a
        rigid-body motion). ``stable`` is judged on the other eigenvalues: True when none is negative.

    Raises
    ------
    ModelError
        When Newton does not converge (the residual left is named).
    """
    if not isinstance(model, Model3D):
        raise TypeError(f"model must be a Model3D, got {type(model).__name__}")
    q = _configuration(model, q_guess, "q_guess")
    tau = np.zeros(model.nv) if tau is None else _vector3d(model, tau, model.nv, "tau")
    tol = _checks.real(tol, "tol", low=0.0, strict=True)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    held = _held(model, fixed)
    free = np.setdiff1d(np.arange(model.nv), held)
    rest = np.zeros(model.nv) if velocity is None else _vector3d(model, velocity, model.nv, "velocity")
    if model.nloops:
        return _loop_equilibrium(model, q, tau, tol, max_iter, fixed, held, free, rest)

    def residual(config):
        return _forces(model, config, rest) - tau

    # scale of the loads, so that tol is relative: gravity's generalised forces at the guess, tau, and the weight
    # times the model's size (so that a guess that is already an equilibrium does not set the scale to zero)
    points = np.concatenate([model.joint_parent_point, model.joint_child_point, model.body_com])
    size = float(np.abs(points).max()) or 1.0
    weight = model.total_mass() * float(np.linalg.norm(model.gravity))
    scale = max(float(np.abs(residual(q) + tau).max()), float(np.abs(tau).max()), weight * size, 1e-300)
    g = residual(q)
    iterations = 0
    while np.abs(g[free]).max(initial=0.0) > tol * scale:
        if iterations >= max_iter:
            raise ModelError(f"no static equilibrium found: residual |g| = {np.abs(g[free]).max():.3g} (N or N m) "
                             f"after {iterations} Newton iterations from q_guess, largest at {_where(model, g, free)}")
        iterations += 1
        k_free = stiffness(model, q, velocity=rest)[np.ix_(free, free)]
        delta = np.zeros(model.nv)
        delta[free] = -np.linalg.lstsq(k_free, g[free], rcond=1e-9)[0]  # no step along free turns
        length, norm = 1.0, np.linalg.norm(g[free])
        while length > 1e-8:
            trial = integrate_configuration(model, q, length * delta)
            g_trial = residual(trial)
            if np.linalg.norm(g_trial[free]) < norm:
                break
            length *= 0.5
        else:
            raise ModelError(f"no static equilibrium found: Newton stalled at residual |g| = "
                             f"{np.abs(g[free]).max():.3g} (N or N m) after {iterations} iterations, largest at "
                             f"{_where(model, g, free)}")
        q, g = trial, g_trial
    k = stiffness(model, q, velocity=rest)
    k_free = k[np.ix_(free, free)]
    eigenvalues, neutral, stable = stiffness_spectrum(0.5 * (k_free + k_free.T), np.eye(model.nv)[:, free], 1e-8)
    holding = tau.copy()
    holding[held] += g[held]
    return Equilibrium3D(q, g, k, eigenvalues, stable, iterations, holding, neutral=neutral)


def _loop_equilibrium(model, q, tau, tol, max_iter, fixed, held, free, velocity):
    """``static_equilibrium`` of a model with loops (module docstring): Newton on (delta, lambda)."""
    from ..dynamics.spatial_loops import constraints  # noqa: PLC0415  (the loop layer builds on dynamics)

    q = assemble(model, q, fixed)
    m = model.nconstraints
    size = _size(model)

    def forces(config, lam):
        """g (nv,) = h(q, v) - Q(q, v) - tau + J^T lambda, phi (m,), J (m, nv)."""
        phi, _, jac, _ = constraints(model, config)
        return _forces(model, config, velocity) - tau + jac.T @ lam, phi, jac

    def hessian(config, lam):
        return _lagrangian_stiffness(model, config, lam, velocity)

    g0, phi, jac = forces(q, np.zeros(m))
    # the multipliers that balance the loads best at the assembled guess
    lam = np.linalg.lstsq(jac[:, free].T, -g0[free], rcond=1e-10)[0]
    weight = model.total_mass() * float(np.linalg.norm(model.gravity))
    scale = max(float(np.abs(g0).max()), float(np.abs(tau).max()), weight * size, 1e-300)
    g, phi, jac = forces(q, lam)

    def merit(g, phi):
        return np.linalg.norm(np.concatenate((g[free] / scale, phi / size)))

    iterations = 0
    while not (np.abs(g[free]).max(initial=0.0) <= tol * scale and np.abs(phi).max() <= 1e-12 * size):
        if iterations >= max_iter:
            raise ModelError(f"no static equilibrium found: residual |g| = {np.abs(g[free]).max():.3g} (N or N m), "
                             f"largest at {_where(model, g, free)}, max |phi| = {np.abs(phi).max():.3g} at "
                             f"{_loop_gap(model, phi)}, after {iterations} Newton iterations")
        iterations += 1
        k_free = hessian(q, lam)[np.ix_(free, free)]
        jac_free = jac[:, free]
        kkt = np.block([[k_free, jac_free.T], [jac_free, np.zeros((m, m))]])
        step = np.linalg.lstsq(kkt, -np.concatenate((g[free], phi)), rcond=1e-12)[0]
        delta = np.zeros(model.nv)
        delta[free] = step[:free.size]
        length, norm = 1.0, merit(g, phi)
        while length > 1e-8:
            trial = integrate_configuration(model, q, length * delta)
            lam_trial = lam + length * step[free.size:]
            g_trial, phi_trial, jac_trial = forces(trial, lam_trial)
            if merit(g_trial, phi_trial) < norm:
                break
            length *= 0.5
        else:
            raise ModelError(f"no static equilibrium found: Newton stalled at residual |g| = "
                             f"{np.abs(g[free]).max():.3g} (N or N m), largest at {_where(model, g, free)}, max |phi| "
                             f"= {np.abs(phi).max():.3g}, after {iterations} iterations")
        q, lam, g, phi, jac = trial, lam_trial, g_trial, phi_trial, jac_trial
    drift = np.abs(jac @ velocity).max(initial=0.0)
    if drift > 1e-9 * max(1.0, float(np.abs(jac).max()) * float(np.abs(velocity).max(initial=0.0))):
        raise ModelError(f"velocity is not a motion the loops allow: |J v| = {drift:.3g} at the equilibrium, "
                         f"largest at {_loop_gap(model, jac @ velocity)}")
    k = hessian(q, lam)
    k_free = k[np.ix_(free, free)]
    basis = _null_basis(jac[:, free])  # the free motions the loops allow
    reduced = basis.T @ (0.5 * (k_free + k_free.T)) @ basis
    eigenvalues, neutral, stable = stiffness_spectrum(reduced, np.eye(model.nv)[:, free] @ basis, 1e-8)
    holding = tau.copy()
    holding[held] += g[held]
    return Equilibrium3D(q, g, k, eigenvalues, stable, iterations, holding, multipliers=lam, neutral=neutral)


def linearize(model, q_eq, tau=None, *, t=0.0, step=None, caller="linearize"):
    """The linearisation of a spatial model about the equilibrium q_eq under gravity, the force elements (at time t)
    and constant generalised forces ``tau`` (nv,), default zero: (M, C, K, basis, q_eq with its quaternions
    normalised), the fields of the ``Linearization`` that ``rm.linearize`` returns, of M x'' + C x' + K x = 0 with
    q = q_eq (+) basis @ x (``integrate_configuration``: the displacement lives in the velocity space, the tangent
    space of the quaternion joints, so nq != nv is no obstacle) and v = basis @ x' (the spatial ``rm.linearize``).

    M = ``rm.mass_matrix`` at q_eq; K the symmetric part of d(h - Q - tau)/d delta (``stiffness``, central
    differences of step ``step`` (default 1e-6) along ``integrate_configuration``; with loops the Hessian of the
    Lagrangian, ``_lagrangian_stiffness``, with the multipliers lambda that hold q_eq: least squares on g(q_eq) +
    J^T lambda = 0); C = d(h - Q)/dv at v = 0 (central differences: the dampers; the velocity products vanish at
    rest). Without loops basis is the identity (nv, nv); with them an orthonormal basis (nv, nr) of the null space
    of J at q_eq, the motions the loops allow, and M, C, K are projected on it (as the planar ``rm.linearize``).

    Raises
    ------
    ModelError
        With loops: q_eq does not close them or is not an equilibrium (|phi| or the residual after the multipliers
        above 1e-6 of the model's size or loads: assemble it and find it with ``static_equilibrium``).
    """
    from ..dynamics.spatial import mass_matrix  # noqa: PLC0415

    if not isinstance(model, Model3D):
        raise TypeError(f"model must be a Model3D, got {type(model).__name__}")
    q = _configuration(model, q_eq, "q_eq")
    tau = np.zeros(model.nv) if tau is None else _vector3d(model, tau, model.nv, "tau")
    t = _checks.real(t, "t")
    step = _STEP if step is None else _checks.real(step, "step", low=0.0, strict=True)
    rest = np.zeros(model.nv)
    if model.nloops:
        from ..dynamics.spatial_loops import constraints  # noqa: PLC0415  (the loop layer builds on dynamics)

        phi, _, jac, _ = constraints(model, q)
        if np.abs(phi).max() > 1e-6 * _size(model):
            raise ModelError(f"{caller}: q_eq does not close the loops: {_loop_gap(model, phi)} is open by "
                             f"{np.abs(phi).max():.3g} (m or rad); assemble it (rm.assemble, rm.static_equilibrium)")
        g = _forces(model, q, rest, t) - tau
        lam = np.linalg.lstsq(-jac.T, g, rcond=1e-10)[0]  # the multipliers that hold q_eq
        left = g + jac.T @ lam
        weight = model.total_mass() * float(np.linalg.norm(model.gravity))
        scale = max(float(np.abs(g).max()), float(np.abs(tau).max()), weight * _size(model), 1e-300)
        if np.abs(left).max() > 1e-6 * scale:
            free = np.arange(model.nv)
            raise ModelError(f"{caller}: q_eq is not an equilibrium: residual |g + J^T lambda| = "
                             f"{np.abs(left).max():.3g} (N or N m), largest at {_where(model, left, free)}; find it "
                             "with rm.static_equilibrium")
        k_matrix = _lagrangian_stiffness(model, q, lam, rest, t, step)
        basis = _null_basis(jac)
    else:
        k_matrix = stiffness(model, q, step, t=t)
        basis = np.eye(model.nv)
    damping = np.zeros((model.nv, model.nv))
    if model._elements:  # only the elements depend on v at rest to first order
        for k in range(model.nv):
            rate = np.zeros(model.nv)
            rate[k] = step
            damping[:, k] = (_forces(model, q, rate, t) - _forces(model, q, -rate, t)) / (2 * step)
    k_matrix = basis.T @ (0.5 * (k_matrix + k_matrix.T)) @ basis
    return basis.T @ mass_matrix(model, q) @ basis, basis.T @ damping @ basis, k_matrix, basis, q


def modes(model, q_eq, k=None, tau=None, *, t=0.0):
    """Natural frequencies [rad/s] (ascending) and mode shapes (nv, k) of a spatial model about the equilibrium
    q_eq under gravity, the force elements (at time t) and constant generalised forces ``tau`` (nv,), default zero.

    On the linearisation (``linearize``): a tree: K x = omega^2 M x with K the symmetric part of ``stiffness`` and
    M = ``rm.mass_matrix``. With loops:
    the multipliers lambda that hold q_eq (least squares on g(q_eq) + J^T lambda = 0), K the Hessian of the
    Lagrangian (``_lagrangian_stiffness``), and both K and M projected onto the motions the loops allow, x = N y
    with N an orthonormal basis of the null space of J (m, nv) at q_eq: N^T K N y = omega^2 N^T M N y (as the planar
    ``rm.modes`` restricts its linearisation). Shapes are velocity-space displacements (q = q_eq (+) shape),
    M-normalised (x^T M x = 1), and with loops they satisfy J x = 0. Generalised symmetric eigenproblem
    (scipy.linalg.eigh).

    Raises
    ------
    ModelError
        q_eq is not an equilibrium the loops close (|phi| or the residual after the multipliers above 1e-6 of the
        model's size or loads: assemble it and find it with ``static_equilibrium``), K has a negative eigenvalue
        (not a stable equilibrium), or the mass matrix is singular on the allowed motions.
    """
    import scipy.linalg  # noqa: PLC0415

    mass, _, k_matrix, basis, _ = linearize(model, q_eq, tau, t=t, caller="modes")
    size = basis.shape[1]
    if size == 0:
        raise ModelError("modes: the loops leave the model no motion (J has full column rank at q_eq)")
    count = size if k is None else _checks.integer(k, "k")
    if not 1 <= count <= size:
        raise StateError(f"k must be between 1 and {size} (the motions the loops allow), got {count}")
    try:
        values, vectors = scipy.linalg.eigh(0.5 * (k_matrix + k_matrix.T), 0.5 * (mass + mass.T),
                                            subset_by_index=(0, count - 1))
    except np.linalg.LinAlgError:
        raise ModelError("modes: the mass matrix at q_eq is not positive definite (a body with no inertia about "
                         "a joint axis: e.g. a point mass or a rod without torsional inertia on a spherical "
                         "joint)") from None
    if values[0] < -1e-9 * max(1.0, np.abs(values).max()):
        raise ModelError(f"q_eq is not a stable equilibrium: the stiffness has a negative eigenvalue "
                         f"{values[0]:.6g} (omega^2)")
    return np.sqrt(np.maximum(values, 0.0)), basis @ vectors


@dataclass
class Equilibrium3D:
    """A static equilibrium of a spatial tree (``static_equilibrium``; fields as documented there)."""

    q: np.ndarray
    residual: np.ndarray
    stiffness: np.ndarray
    eigenvalues: np.ndarray
    stable: bool
    iterations: int
    holding: np.ndarray
    method: str = "newton"
    multipliers: np.ndarray = field(default_factory=lambda: np.zeros(0))
    neutral: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def __repr__(self):
        neutral = f", {_checks.counted(self.neutral.shape[1], 'neutral mode')}" if self.neutral.size else ""
        return (f"Equilibrium3D({'stable' if self.stable else 'not stable'}{neutral}, "
                f"{_checks.counted(self.iterations, 'Newton iteration')}, "
                f"max |residual| = {np.abs(self.residual).max(initial=0.0):.2e} N or N m)")


# ---- kinematic analysis ------------------------------------------------------------------------------------------

def _driver(model, body, motion):
    """(q index, v index, evaluate(t) -> (x, x', x'')) of a driver prescribing ``body``'s 1-dof joint."""
    index = model.body_index(body)
    if model.joint_types[index] not in ("revolute", "prismatic"):
        raise ModelError(f"drivers: body {model.names[index]!r} (index {index}) has a {model.joint_types[index]} "
                         "joint; a driver prescribes a revolute or prismatic joint's coordinate")
    if callable(motion):
        def evaluate(t, f=motion, h=1e-3):
            # five-point central differences: truncation h^4 f^(5) / 30 (~1e-13 for smooth motions), round-off
            # ~1e-13 / h^2 in the acceleration (documented in ``kinematic_analysis``)
            values = [float(f(t + k * h)) for k in (-2, -1, 0, 1, 2)]
            rate = (values[0] - 8 * values[1] + 8 * values[3] - values[4]) / (12 * h)
            curve = (-values[0] + 16 * values[1] - 30 * values[2] + 16 * values[3] - values[4]) / (12 * h * h)
            return values[2], rate, curve
    else:
        try:
            f, df, ddf = motion
        except (TypeError, ValueError):
            raise TypeError(f"drivers[{body!r}] must be f(t) or a triple (f, f', f'') of callables") from None
        if not (callable(f) and callable(df) and callable(ddf)):
            raise TypeError(f"drivers[{body!r}] must be f(t) or a triple (f, f', f'') of callables")

        def evaluate(t, f=f, df=df, ddf=ddf):
            return float(f(t)), float(df(t)), float(ddf(t))
    return model.q_slice(index).start, model.v_slice(index).start, evaluate


def kinematic_analysis(model, drivers, t, q_guess=None, *, tol=1e-12):
    """Positions, velocities, accelerations, driving forces and loop multipliers of a spatial model with loops
    under prescribed joint motions (the spatial ``rm.kinematic_analysis``).

    Parameters
    ----------
    drivers : dict
        body (index or name) -> f(t), or (f, f', f'') for exact derivatives, prescribing that body's revolute or
        prismatic joint coordinate [rad or m]; with f alone its derivatives come from five-point central
        differences (step 1e-3 s: errors ~1e-10 in the acceleration for smooth motions). Together with the loops
        they must take up every degree of freedom.
    t : array_like (nt,)
        Times [s], increasing; each solution starts from the previous one, predicted to the new time with its
        velocity and acceleration along ``integrate_configuration`` (the first from ``q_guess``, default the
        neutral configuration), then closed by ``assemble`` with the driven joints held.

    Returns
    -------
    KinematicResult3D
        q (nt, nq), v and vdot (nt, nv), driven (nd,) v indices, driving_forces (nt, nd) [N m or N] (the joint
        forces of the drivers: M vdot + h = tau_drive - J^T lambda), multipliers (nt, m).
    """
    from ..dynamics.spatial_loops import constraints  # noqa: PLC0415

    if not isinstance(model, Model3D):
        raise TypeError(f"model must be a Model3D, got {type(model).__name__}")
    if not isinstance(drivers, dict) or not drivers:
        raise TypeError("drivers must be a non-empty dict body -> f(t) or (f, f', f'')")
    times = np.atleast_1d(_checks.real_array(t, "t")).astype(float)
    if times.ndim != 1 or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
        raise StateError("t must be a 1-D array of finite, increasing times")
    specs = [_driver(model, body, motion) for body, motion in drivers.items()]
    driven = np.array([kv for _, kv, _ in specs], dtype=np.int64)
    if np.unique(driven).size != driven.size:
        raise ModelError("drivers: a joint is driven twice")
    free = np.setdiff1d(np.arange(model.nv), driven)
    q = model.neutral() if q_guess is None else _configuration(model, q_guess, "q_guess")
    nt, m = times.size, model.nconstraints
    out_q, out_v, out_a = np.zeros((nt, model.nq)), np.zeros((nt, model.nv)), np.zeros((nt, model.nv))
    forces, lams = np.zeros((nt, driven.size)), np.zeros((nt, m))
    v, a = np.zeros(model.nv), np.zeros(model.nv)
    for n, time in enumerate(times):
        if n > 0:  # continuation along the previous solution's velocity and acceleration
            step = time - times[n - 1]
            q = integrate_configuration(model, q, v * step + 0.5 * step * step * a)
            v = v + step * a
        for kq, kv, evaluate in specs:
            q[kq], v[kv], a[kv] = evaluate(time)
        try:
            q = assemble(model, q, driven, tol=tol)
        except ModelError as err:
            raise ModelError(f"kinematic analysis at t = {time:g}: {err}") from None
        if free.size:
            _, _, jac, _ = constraints(model, q)
            jac_free = jac[:, free]
            rank = np.linalg.matrix_rank(jac_free)
            if rank < free.size:
                raise ModelError(f"kinematic analysis at t = {time:g}: the drivers and loops leave {free.size - rank} "
                                 "degree(s) of freedom undetermined (or the mechanism is at a singular position)")
            v[free] = np.linalg.lstsq(jac_free, -jac[:, driven] @ v[driven], rcond=None)[0]
            _, _, jac, gamma = constraints(model, q, v)
            a[free] = np.linalg.lstsq(jac_free, gamma - jac[:, driven] @ a[driven], rcond=None)[0]
        needed = inverse_dynamics(model, q, v, a, t=time)  # = tau_drive - J^T lambda (elements at this time)
        lam = np.zeros(m)
        if m:
            _, _, jac, _ = constraints(model, q)
            if free.size:
                lam = np.linalg.lstsq(-jac[:, free].T, needed[free], rcond=1e-10)[0]
            needed = needed + jac.T @ lam
        out_q[n], out_v[n], out_a[n] = q, v, a
        forces[n], lams[n] = needed[driven], lam
    return KinematicResult3D(model, times, out_q, out_v, out_a, driven, forces, lams)


@dataclass
class KinematicResult3D:
    """Kinematic analysis of a spatial model (``kinematic_analysis``; fields as documented there)."""

    model: object
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    vdot: np.ndarray
    driven: np.ndarray
    driving_forces: np.ndarray
    multipliers: np.ndarray

    def point(self, body, point=None):
        """Position, velocity and acceleration of a point fixed on a body (body frame; default its origin) at every
        t: 3 x (nt, 3), ground axes (``point_motion``)."""
        return point_motion(self.model, self.q, self.v, self.vdot, body, point)


# ---- point motion and joint reactions ----------------------------------------------------------------------------

def _states(model, q, v, vdot):
    """q (nt, nq), v and vdot (nt, nv): finite float arrays with one row per state (a single state: one row)."""
    rows = []
    for x, what, size in ((q, "q", model.nq), (v, "v", model.nv), (vdot, "vdot", model.nv)):
        arr = np.atleast_2d(_checks.finite_array(x, what))
        count = rows[0].shape[0] if rows else arr.shape[0]
        if arr.ndim != 2 or arr.shape != (count, size):
            raise StateError(f"{what} must have shape (nt, {size}) (or ({size},)) with one row per state like q "
                             f"({count} rows), got {arr.shape}")
        rows.append(arr)
    return rows


def point_motion(model, q, v, vdot, body, point=None):
    """Position, velocity and acceleration [m, m/s, m/s^2] of a point fixed on a body of a spatial model (body
    frame [m], default its origin) for the states (q, v, vdot), each (nt, nq), (nt, nv), (nt, nv) or one state:
    three (nt, 3) arrays, ground axes (the spatial ``rm.analysis.point_motion``).

    The body's pose and velocity come from the forward kinematics kernel, its spatial acceleration (alpha; the
    acceleration of the point of the body at the origin's place, minus omega x its velocity) from the forward pass
    of the recursive Newton-Euler kernel without gravity; the point's acceleration is then a + alpha x r + omega x
    (v + omega x r), r the point relative to the body origin. O(N) per state.
    """
    ws = workspace(model)
    index = model.body_index(body)
    local = np.zeros(3) if point is None else _checks.finite_array(point, "point", (3,))
    q, v, vdot = _states(model, q, v, vdot)
    n = model.nbodies
    rot, pos, omega, vel = np.zeros((n, 3, 3)), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    no_gravity, forces = readonly_zeros(3), np.empty(model.nv)  # read-only as the model's gravity: one compile
    out = np.zeros((3, q.shape[0], 3))
    for k in range(q.shape[0]):
        qk, vk, ak = (np.ascontiguousarray(x[k]) for x in (q, v, vdot))
        status = spatial_tree.poses(model.body_int, model.body_real, qk, vk, ws.ws, ws.S, ws.tmp, rot, pos, omega,
                                    vel, True)
        if not status:  # the accelerations of every body (ws WC: body axes), from the same kinematics
            status = spatial_tree.inverse_dynamics(model.body_int, model.body_real, no_gravity, qk, vk, ak, ws.ws,
                                                   ws.S, ws.tmp, forces)
        if status:
            raise_spatial_status(model, status, ("q", "v", "vdot"), output=f"the motion at sample {k}")
        turn = rot[index]
        arm = turn @ local
        alpha = turn @ ws.ws[index, SL.WC:SL.WC + 3]
        velocity = vel[index] + np.cross(omega[index], arm)
        out[0, k] = pos[index] + arm
        out[1, k] = velocity
        out[2, k] = turn @ ws.ws[index, SL.WC + 3:SL.WC + 6] + np.cross(alpha, arm) + np.cross(omega[index], velocity)
    _checks.check_finite_result(out, "point motion [0 position, 1 velocity, 2 acceleration; sample; axis]")
    return out[0], out[1], out[2]


def joint_reactions(model, q, v, vdot, tau=None, *, t=0.0):
    """Reactions of every joint and loop of a spatial model at the state (q, v) with accelerations vdot: the fields
    (joint, loops, multipliers, tau) of the ``Reactions`` that ``rm.joint_reactions`` returns.

    joint (nbodies, 6): (Fx, Fy, Fz, Mx, My, Mz), the force and moment that the parent (or the ground) exerts on
    each body through its joint, ground axes, the moment about the joint point (the body's child point); the
    actuation along the joint's own motions included (a revolute joint's moment along its axis is its torque, a
    joint spring-damper's load is part of it). loops (nloops, 2, 6): the loop forces on body a and on body b (force
    at the loop point, moment; ground axes, as ``spatial_loops.loop_dynamics``). multipliers (m,): those that
    balance the given tau (nv,) in the least-squares sense, -J^T lambda = M vdot + h - Q_elements - tau (exact when
    vdot is the motion tau produces). tau: the generalised forces used.

    From the recursive Newton-Euler pass: the force each joint carries to its subtree, minus the subtree's external
    loads (the force elements' wrenches and the loop forces), carried to the joint point.
    """
    from ..dynamics.loops import RCOND, forces_from_multipliers  # noqa: PLC0415  (the loop layer builds on dynamics)
    from ..dynamics.spatial_loops import constraints, loop_workspace  # noqa: PLC0415

    ws = workspace(model)
    q = _configuration(model, q, "q")
    v = _vector3d(model, v, model.nv, "v")
    vdot = _vector3d(model, vdot, model.nv, "vdot")
    tau = np.zeros(model.nv) if tau is None else _vector3d(model, tau, model.nv, "tau")
    t = _checks.real(t, "t")
    n = model.nbodies
    lam = np.zeros(model.nconstraints)
    loop_forces = np.zeros((model.nloops, 2, 6))
    if model.nloops:
        needed = inverse_dynamics(model, q, v, vdot, t=t) - tau
        _, _, jac, _ = constraints(model, q, v)  # fills the row weights
        lam = np.linalg.lstsq(-jac.T, needed, rcond=RCOND)[0]
        loop_forces = forces_from_multipliers(model, lam, loop_workspace(model)[1].weights)
    rot, pos = forward_kinematics(model, q)
    forces = np.empty(model.nv)
    status = spatial_tree.inverse_dynamics(model.body_int, model.body_real, model.gravity, q, v, vdot, ws.ws, ws.S,
                                           ws.tmp, forces)
    if status:
        raise_spatial_status(model, status, ("q", "v", "vdot"), output="the joint forces")
    carried = ws.ws[:, SL.WP:SL.WP + 6].copy()  # what each joint carries to its subtree (moment; force), body axes
    if model._elements:
        carried -= _element_loads(model, q, v, t).wrench  # the elements' loads on the subtree, the same form
    force = np.einsum("nij,nj->ni", rot, carried[:, 3:])
    arm = np.einsum("nij,nj->ni", rot, model.joint_child_point)  # joint point relative to the body origin
    moment = np.einsum("nij,nj->ni", rot, carried[:, :3]) - np.cross(arm, force)
    if model.nloops:  # the loop forces on each subtree: force and moment about the ground origin
        load = np.zeros((n, 6))
        for k in range(model.nloops):
            for side, column in ((0, SL.LPA), (1, SL.LPB)):
                b = int(model.loop_int[k, SL.LBODY_A + side])
                if b >= 0:
                    point = pos[b] + rot[b] @ model.loop_real[k, column:column + 3]
                    load[b, :3] += loop_forces[k, side, :3]
                    load[b, 3:] += loop_forces[k, side, 3:] + np.cross(point, loop_forces[k, side, :3])
        for i in range(n - 1, -1, -1):
            parent = int(model.body_parent[i])
            if parent >= 0:
                load[parent] += load[i]
        force -= load[:, :3]
        moment -= load[:, 3:] - np.cross(pos + arm, load[:, :3])
    joint = np.hstack((force, moment))
    for value, what in ((joint, "joint reactions"), (loop_forces, "loop forces"), (lam, "multipliers")):
        _checks.check_finite_result(value, what)
    return joint, loop_forces, lam, tau
