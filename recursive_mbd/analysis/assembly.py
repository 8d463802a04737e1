"""Assembly: the coordinates that close every loop of a planar or spatial model, nearest a guess (``rm.assemble``),
and the argument helpers the analyses share (the spatial ones with ``statics3d``). Below the other analyses and
``Mechanism`` (which assembles a placement that closes its loops only roughly); sign conventions as ``rm.loops``."""

import numpy as np

from .. import _checks
from ..dynamics._evaluation import as_vector
from ..dynamics.loops import constraints
from ..errors import ModelError, StateError
from ..model.configuration import integrate_configuration
from ..model.spatial import Model3D
from ..model.workspace import workspace


def stiffness_spectrum(reduced, basis, rtol, scale=None):
    """The stability of an equilibrium from its stiffness ``reduced`` (k, k), symmetric, on the motions ``basis``
    (n, k) allows (columns): (eigenvalues, ascending; neutral (n, k0), the directions of the eigenvalues zero within
    tol = ``rtol`` max(1, ``scale``) (default scale: the largest |eigenvalue|); stable). A zero eigenvalue is a
    neutral, zero-frequency mode (a turn about the vertical that no load resists, a rigid-body motion): it is no
    instability, so ``stable`` means no eigenvalue below -tol."""
    if not basis.size:
        return np.zeros(0), np.zeros((basis.shape[0], 0)), True
    eigenvalues, vectors = np.linalg.eigh(reduced)
    tol = rtol * max(1.0, float(np.abs(eigenvalues).max()) if scale is None else scale)
    zero = np.abs(eigenvalues) <= tol
    return eigenvalues, basis @ vectors[:, zero], bool(not np.any(eigenvalues < -tol))


def _vector(model, x, what):
    """A float copy of the (nq,) vector x, compiling the model first."""
    workspace(model)
    x = as_vector(model, x, what).copy()
    if not np.all(np.isfinite(x)):
        raise StateError(f"{what}[{int(np.flatnonzero(~np.isfinite(x))[0])}] is not finite")
    return x


def _coordinates(model, names):
    """Coordinate indices from ints or body names (a body name stands for all its joint's coordinates)."""
    out = []
    for item in names if isinstance(names, (list, tuple, set, np.ndarray)) else [names]:
        if isinstance(item, str):
            index = model.body_index(item)
            start, count = model.joint_q_index[index], model.joint_ndof[index]
            out.extend(range(start, start + count))
        else:
            k = _checks.integer(item, "coordinate index")
            if not 0 <= k < model.nq:
                raise StateError(f"coordinate index {k} out of range for nq = {model.nq}")
            out.append(k)
    return np.array(sorted(set(out)), dtype=np.int64)


def _worst_loop(model, phi):
    r = int(np.argmax(np.abs(phi)))
    lp = int(np.searchsorted(model.loop_rows, r, side="right") - 1)
    return model.loop_names[lp], float(abs(phi[r]))


# ---- assembly ---------------------------------------------------------------------------------------------------

def assemble(model, q_guess, fixed=(), *, tol=1e-12, max_iter=50):
    """Coordinates that close every loop, nearest ``q_guess``, keeping the coordinates in ``fixed``.

    Gauss-Newton on phi(q) = 0 over the free coordinates with minimum-norm steps (so the answer stays near the
    guess) and a backtracking line search on |phi|. ``fixed``: coordinate indices and/or body names.

    Returns
    -------
    q : ndarray (nq,)

    Raises
    ------
    ModelError
        When the loops cannot close (lengths that do not fit, a coordinate held where the mechanism cannot
        reach): names the loop with the largest gap and its size.

    A spatial model (``Model3D``): Gauss-Newton along ``integrate_configuration`` (``fixed``: velocity indices or
    body names; a tree returns q_guess with its quaternions normalised).
    """
    if isinstance(model, Model3D):
        return _assemble_spatial(model, q_guess, fixed, tol, max_iter)
    q = _vector(model, q_guess, "q_guess")
    tol = _checks.real(tol, "tol", low=0.0)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    if model.nloops == 0:
        return q
    free = np.setdiff1d(np.arange(model.nq), _coordinates(model, fixed))
    phi, _, jac, _ = constraints(model, q)
    norm = np.linalg.norm(phi)
    for _ in range(max_iter):
        if np.abs(phi).max() <= tol:
            return q
        step = np.linalg.lstsq(jac[:, free], phi, rcond=None)[0]
        length = 1.0
        while length > 1e-6:
            trial = q.copy()
            trial[free] -= length * step
            phi_t, _, jac_t, _ = constraints(model, trial)
            if np.linalg.norm(phi_t) < norm:
                break
            length *= 0.5
        else:  # no descent: a least-squares minimum with a gap left
            break
        q, phi, jac, norm = trial, phi_t, jac_t, np.linalg.norm(phi_t)
    if np.abs(phi).max() <= max(tol, 1e-9):
        return q
    name, gap = _worst_loop(model, phi)
    raise ModelError(f"the loops cannot be closed: loop {name!r} stays open by {gap:.6g} (m or rad) at the "
                     f"closest configuration found (|phi| = {norm:.3g}); check the lengths, or the fixed coordinates")


# ---- spatial models (Model3D): steps in the velocity space, q <- q (+) delta --------------------------------------

def _configuration(model, q, what):
    """A float copy of q (nq,) with its quaternions normalised (as the dynamics do: refused off by > 1e-6)."""
    return integrate_configuration(model, _vector3d(model, q, model.nq, what), np.zeros(model.nv))


def _vector3d(model, x, size, what):
    """A float copy of the (size,) vector x of a spatial model, refused if not finite."""
    arr = _checks.real_array(x, what)
    if arr.shape != (size,):
        raise StateError(f"{what} must have shape ({size},) for this model, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise StateError(f"{what}[{int(np.flatnonzero(~np.isfinite(arr))[0])}] is not finite")
    return np.array(arr, dtype=np.float64)


def _loop_gap(model, phi):
    """The loop with the largest |phi|: "loop 'name' (index k)"."""
    row = int(np.argmax(np.abs(phi)))
    k = int(np.searchsorted(model.loop_rows, row, side="right") - 1)
    return f"loop {model.loop_names[k]!r} (index {k})"


def _size(model):
    """A length scale of the model [m]: its largest point coordinate (1 for a model of points at the origin)."""
    points = np.concatenate([model.joint_parent_point, model.joint_child_point, model.body_com,
                             model.loop_real[:, :6].reshape(-1, 3)])
    return float(np.abs(points).max()) or 1.0


def _assemble_spatial(model, q_guess, fixed, tol, max_iter):
    """Coordinates that close every loop near ``q_guess``, keeping the joints in ``fixed`` (velocity indices or body
    names): Gauss-Newton on phi(q) = 0 with minimum-norm steps delta on the free velocity coordinates, q <- q (+)
    delta (quaternions stay unit), and a backtracking line search on |phi|. A tree returns q_guess with its
    quaternions normalised (refused off by > 1e-6).

    Raises ModelError naming the loop with the largest gap when |phi| does not fall below ``tol`` times the model's
    size (lengths that do not fit, a held joint that the loops cannot follow)."""
    from ..dynamics.spatial_loops import constraints as spatial_constraints  # noqa: PLC0415  (spatial kernels)

    q = _configuration(model, q_guess, "q_guess")
    tol = _checks.real(tol, "tol", low=0.0, strict=True)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    if not model.nloops:
        return q
    free = np.setdiff1d(np.arange(model.nv), _held(model, fixed))
    limit = tol * _size(model)
    phi, _, jac, _ = spatial_constraints(model, q)
    for _ in range(max_iter):
        if np.abs(phi).max() <= limit:
            return q
        delta = np.zeros(model.nv)
        delta[free] = -np.linalg.lstsq(jac[:, free], phi, rcond=1e-10)[0]
        length, norm = 1.0, np.linalg.norm(phi)
        while length > 1e-6:
            trial = integrate_configuration(model, q, length * delta)
            phi_trial, _, jac_trial, _ = spatial_constraints(model, trial)
            if np.linalg.norm(phi_trial) < norm:
                break
            length *= 0.5
        else:
            break  # no descent: round-off reached, or no closed configuration near
        q, phi, jac = trial, phi_trial, jac_trial
    if np.abs(phi).max() <= limit:
        return q
    raise ModelError(f"the loops cannot be closed near q_guess: {_loop_gap(model, phi)} stays open, max |phi| = "
                     f"{np.abs(phi).max():.3g} (m or rad) after Gauss-Newton from q_guess")


def _held(model, fixed):
    """Velocity indices held (body names or indices of v)."""
    held = []
    for item in fixed:
        if isinstance(item, str):
            span = model.v_slice(item)
            held += list(range(span.start, span.stop))
        else:
            index = _checks.integer(item, "fixed", low=0, high=model.nv - 1)
            held.append(index)
    return np.unique(np.array(held, dtype=np.int64))
