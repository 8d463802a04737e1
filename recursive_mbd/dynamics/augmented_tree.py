"""The tree solver of the augmented formulation (``_kernels.augmented.tree``): its workspace, the checked absolute
coordinates it takes, its statuses turned into errors, and the joints' constraint rows it orders body by body.
``augmented.forward_dynamics(..., solver="tree")`` and the augmented time loop run on these."""

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels import sparse_kkt
from .._kernels.augmented import entry
from ..errors import StateError
from ..model.statuses import raise_status


def joint_row_starts(model):
    """First constraint row of each body's joint (nbodies + 1,) int64, the total last
    (``_kernels.sparse_kkt.joint_row_starts``)."""
    return sparse_kkt.joint_row_starts(model.joint_type)


class _TreeWorkspace:
    """Arrays of the tree solver of one model (``_kernels.augmented.tree``), allocated once and reused."""

    def __init__(self, model):
        n, nq = model.nbodies, model.nq
        self.row_start = joint_row_starts(model)  # joint rows of body i
        self.tree_rows = int(self.row_start[-1])
        # the factor (n, F_WIDTH), a view of the first n rows of the short path's array (``_kernels.augmented.entry``)
        self.factor_buffer = entry.factor_buffer(model)
        self.factor = self.factor_buffer[:n, :sparse_kkt.F_WIDTH]
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


def kkt_structure(model, row_start, use=None):
    """The structure of the augmented KKT matrix with the loop rows inside (``_kernels.sparse_kkt.kkt_pattern``),
    fixed by the model. ``use``: whether the time loop solves with it (None: where its factor is estimated cheaper
    than the loop rows' Schur complement, as along a ladder; a tree or a model with drivers gets the empty structure
    from the caller)."""
    kkt = sparse_kkt.kkt_pattern(model.body_parent, model.loop_int, model.loop_rows, row_start, bool(use))
    if use is None and _sparse_is_cheaper(model, sparse_kkt.loop_row_bodies(model.loop_int, model.loop_rows),
                                          np.diff(kkt.l_start), model.nbodies, model.nconstraints):
        kkt.use[0] = 1
    return kkt


# the cost model of the choice between the loop rows' Schur complement and the sparse KKT factorisation: a tree
# solve costs about TREE_SOLVE_COST flops a body (``_kernels.sparse_kkt``; the recursive loop layer's choice uses it)
TREE_SOLVE_COST = sparse_kkt.TREE_SOLVE_COST


def _sparse_is_cheaper(model, aux_body, count, n, k):
    """Whether two sparse factorisations (``_kernels.sparse_kkt.loop_solve``; about sum count_j^2 flops each,
    count_j the entries of column j of L) cost less than the Schur complement's colours + 1 tree solves and the
    Cholesky factorisation of its envelope (``tree.add_auxiliary_rows``)."""
    from .._kernels.planar.loops import row_colours  # noqa: PLC0415  (numba only to run)

    if k == 0:
        return False
    _, ncolours, root = row_colours(model.body_int, aux_body)
    lowest, first = {}, np.arange(k)
    for r in range(k):
        for b in aux_body[r]:
            if b >= 0:
                lowest.setdefault(int(root[b]), r)
                first[r] = min(first[r], lowest[int(root[b])])
    width = np.arange(k) - first + 1
    schur = TREE_SOLVE_COST * (ncolours + 1) * n + float(np.sum(width.astype(float) ** 2))
    sparse = 2.0 * float(np.sum(count.astype(float) ** 2) + 10.0 * count.size)
    return sparse < schur


def empty_kkt_structure():
    """The structure of a model that keeps the Schur complement: ``_kernels.sparse_kkt.empty_kkt_structure``."""
    return sparse_kkt.empty_kkt_structure()
