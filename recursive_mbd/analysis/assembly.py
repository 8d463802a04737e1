"""Assembly: the coordinates that close every loop of a model, nearest a guess (``rm.assemble``), and the argument
helpers the analyses share. Below the other analyses and ``Mechanism`` (which assembles a placement that closes its
loops only roughly); sign conventions as ``rm.loops``."""

import numpy as np

from .. import _checks
from ..dynamics._evaluation import as_vector
from ..dynamics.loops import constraints
from ..errors import ModelError, StateError
from ..model.spatial import Model3D
from ..model.workspace import workspace


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

    A spatial model (``Model3D``): ``analysis.statics3d.assemble`` (Gauss-Newton along
    ``integrate_configuration``; ``fixed``: velocity indices or body names; a tree returns q_guess with its
    quaternions normalised).
    """
    if isinstance(model, Model3D):
        from . import statics3d  # noqa: PLC0415

        return statics3d.assemble(model, q_guess, fixed, tol=tol, max_iter=max_iter)
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
