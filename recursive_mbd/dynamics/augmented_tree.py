"""The tree solver of the augmented formulation (``_kernels.augmented.tree``): its workspace, the checked absolute
coordinates it takes, its statuses turned into errors, and the joints' constraint rows it orders body by body.
``augmented.forward_dynamics(..., solver="tree")`` and the augmented time loop run on these."""

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.augmented import entry
from .._kernels.augmented import tree as kernels
from ..errors import StateError
from ..model.statuses import raise_status


def joint_row_starts(model):
    """First constraint row of each body's joint (nbodies + 1,) int64, the total last; rows run body by body
    (revolute: x, y; prismatic: normal, angle; fixed: x, y, angle; planar: none)."""
    counts = np.array(kernels.ROWS_PER_JOINT, dtype=np.int64)[model.joint_type]
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


class _TreeWorkspace:
    """Arrays of the tree solver of one model (``_kernels.augmented.tree``), allocated once and reused."""

    def __init__(self, model):
        n, nq = model.nbodies, model.nq
        self.row_start = joint_row_starts(model)  # joint rows of body i
        self.tree_rows = int(self.row_start[-1])
        # the factor (n, F_WIDTH), a view of the first n rows of the short path's array (``_kernels.augmented.entry``)
        self.factor_buffer = entry.factor_buffer(model)
        self.factor = self.factor_buffer[:n, :kernels.F_WIDTH]
        self.scratch = np.zeros((4, 3))
        self.stab = np.zeros(2)  # alpha, beta
        self.power = np.zeros(1)
        self.no_tau = np.zeros(0)
        self.no_wrench = np.zeros((0, 3))
        self.q = np.zeros(nq)  # joint coordinates for the force elements
        self.qd = np.zeros(nq)
        self.loop_rows = model.nconstraints
        self.aux = self._aux_arrays(n, self.loop_rows) if self.loop_rows else None
        self.short = self._short_route(model)

    def _short_route(self, model):
        """forward_dynamics' short path (``_kernels.augmented.entry``): (kernel, body_int, body_real, row_start,
        factor buffer, no_tau, tree rows, (nq,)) of a model without loops or force elements whose arrays the
        fixed-signature kernel takes, else False."""
        if model.loop_int.shape[0] or model.elem_int.shape[0] or not entry.accepts_model(model):
            return False
        return (entry.forward_dynamics_kernel(), model.body_int, model.body_real, self.row_start, self.factor_buffer,
                self.no_tau, self.tree_rows, (model.nq,))

    def _aux_arrays(self, n, k):
        """(bodies (k, 2), coefficients (k, 6), right-hand side (k,), residual (k,), xb, xj, schur, info)."""
        return (np.full((k, 2), -1, dtype=np.int64), np.zeros((k, 6)), np.zeros(k), np.zeros(k), np.zeros((n, 3)),
                np.zeros(self.tree_rows), np.zeros((k, k)), np.zeros(2, dtype=np.int64))


def _tree_workspace(model):
    """The tree solver's workspace of the model, created on first use (compiles the model). It is kept apart from
    the recursive route's Workspace, which a model without force elements never needs here (at 1e6 bodies that
    is 216 MB not allocated)."""
    _checks.require_model(model)
    tw = getattr(model, "_augmented_workspace", None)
    if tw is None:
        model._require_compiled()
        tw = model._augmented_workspace = _TreeWorkspace(model)
    return tw


def _as_absolute(model, x, what):
    """``x`` as a writeable C-contiguous float64 (nbodies, 3) array (from (nbodies, 3) or (3 nbodies,)), or a
    StateError / TypeError naming ``what``. A read-only ``x`` is copied: numba types a read-only array apart from a
    writeable one, and the tree solver would compile a second time for it."""
    n = model.nbodies
    if (x.__class__ is np.ndarray and x.dtype == np.float64 and x.shape == (n, 3) and x.flags.c_contiguous
            and x.flags.writeable):
        return x
    try:
        if np.asarray(x).dtype.kind in "cSUV":  # complex would lose its imaginary part, strings would be parsed
            raise TypeError
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an array of {n} x 3 numbers, got {type(x).__name__}") from None
    if arr.shape not in ((n, 3), (3 * n,)):
        raise StateError(f"{what} must have shape ({n}, 3) or ({3 * n},) for this model (nbodies = {n}), got shape "
                         f"{arr.shape}")
    return arr.reshape(n, 3) if arr.flags.writeable else arr.reshape(n, 3).copy()


def _raise_tree(model, status):
    kind, index = L.decode_status(status)
    if kind in (L.STATUS_NONFINITE_Q, L.STATUS_NONFINITE_QD):
        what = "z" if kind == L.STATUS_NONFINITE_Q else "zd"
        raise StateError(f"{what} of body {model.body_names[index]!r} (index {index}) is not finite")
    if kind == L.STATUS_LOOP_DEGENERATE:
        raise StateError(f"loop {model.loop_names[index]!r} (index {index}): the two points of the distance loop "
                         "coincide, so its direction is undefined")
    raise_status(model, status)
