"""The tree solver of the augmented formulation (``_kernels.augmented.tree``): its workspace, the checked absolute
coordinates it takes, its statuses turned into errors, and the joints' constraint rows it orders body by body.
``augmented.forward_dynamics(..., solver="tree")`` and the augmented time loop run on these."""

import heapq

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


def _minimum_degree(n, adjacency):
    """An elimination order of the n bodies by minimum degree on the graph ``adjacency`` (a set of neighbours per
    body; consumed), ties to the highest index (a tree's leaves first, children before parents)."""
    heap = [(len(adjacency[v]), -v) for v in range(n)]
    heapq.heapify(heap)
    done = np.zeros(n, dtype=bool)
    order = []
    while heap:
        degree, v = heapq.heappop(heap)
        v = -v
        if done[v] or degree != len(adjacency[v]):
            continue  # eliminated already, or a stale degree
        done[v] = True
        order.append(v)
        neighbours = adjacency[v]
        for u in neighbours:
            adjacency[u].discard(v)
            adjacency[u] |= neighbours - {u}  # the fill of eliminating v: its neighbours form a clique
            heapq.heappush(heap, (len(adjacency[u]), -u))
        adjacency[v] = set()
    return order


def kkt_structure(model, row_start, use=None):
    """The structure of the augmented KKT matrix with the loop rows inside (``_kernels.augmented.kkt``): the
    elimination order, the upper triangle's pattern, the factor's pattern and the slots of every entry, fixed by
    the model. ``use``: whether the time loop solves with it (None: where its factor is estimated cheaper than
    the loop rows' Schur complement, as along a ladder; a tree or a model with drivers gets the empty
    structure from the caller)."""
    from .._kernels.augmented.kkt import KKTStructure  # noqa: PLC0415  (numba only to run)

    n = model.nbodies
    mt = int(row_start[-1])
    parent = model.body_parent
    loop_int = model.loop_int
    k = model.nconstraints
    nk = 3 * n + mt + k
    # constraint nodes: their original rows and their bodies
    nodes = [(range(3 * n + row_start[i], 3 * n + row_start[i + 1]), {i, int(parent[i])} - {-1})
             for i in range(n) if row_start[i + 1] > row_start[i]]
    aux_body = np.full((k, 2), -1, dtype=np.int64)
    for lp in range(loop_int.shape[0]):
        r0, r1 = model.loop_rows[lp], model.loop_rows[lp + 1]
        a, b = int(loop_int[lp, L.LBODY_A]), int(loop_int[lp, L.LBODY_B])
        aux_body[r0:r1] = (a, b)
        nodes.append((range(3 * n + mt + r0, 3 * n + mt + r1), {a, b} - {-1}))
    adjacency = [set() for _ in range(n)]
    of_body = [[] for _ in range(n)]
    for j, (_, bodies) in enumerate(nodes):
        for b in bodies:
            adjacency[b] |= bodies - {b}
            of_body[b].append(j)
    waiting = [len(bodies) for _, bodies in nodes]
    perm = []
    for b in _minimum_degree(n, adjacency):
        perm += [3 * b, 3 * b + 1, 3 * b + 2]
        for j in of_body[b]:
            waiting[j] -= 1
            if waiting[j] == 0:  # the constraint's rows right after the last of its bodies
                perm += list(nodes[j][0])
    perm = np.asarray(perm, dtype=np.int64)
    pinv = np.empty(nk, dtype=np.int64)
    pinv[perm] = np.arange(nk)
    # the entries of K's upper triangle, permuted: (row, column) with row <= column
    entries = [(pinv[i], pinv[i]) for i in range(nk)]
    child = [(3 * n + row_start[i] + r, 3 * i + c) for i in range(n) for r in range(row_start[i + 1] - row_start[i])
             for c in range(3)]
    with_parent = [(3 * n + row_start[i] + r, 3 * parent[i] + c) for i in range(n) if parent[i] >= 0
                   for r in range(row_start[i + 1] - row_start[i]) for c in range(3)]
    aux = [(3 * n + mt + r, 3 * aux_body[r, side] + c) for r in range(k) for side in range(2)
           if aux_body[r, side] >= 0 for c in range(3)]
    for a, b in child + with_parent + aux:
        entries.append((min(pinv[a], pinv[b]), max(pinv[a], pinv[b])))
    slot_of = {}
    for e in entries:
        slot_of.setdefault(e, len(slot_of))
    ordered = sorted(slot_of, key=lambda e: (e[1], e[0]))  # by column
    renumber = {e: s for s, e in enumerate(ordered)}
    col_rows = np.array([e[0] for e in ordered], dtype=np.int64)
    col_start = np.searchsorted(np.array([e[1] for e in ordered]), np.arange(nk + 1)).astype(np.int64)

    def slot(a, b):
        return renumber[(min(pinv[a], pinv[b]), max(pinv[a], pinv[b]))]

    pos_diag = np.array([slot(i, i) for i in range(nk)], dtype=np.int64)
    pos_child = np.array([slot(a, b) for a, b in child], dtype=np.int64).reshape(mt, 3)
    pos_parent = np.full((mt, 3), -1, dtype=np.int64)
    for a, b in with_parent:
        pos_parent[a - 3 * n, b % 3] = slot(a, b)
    pos_aux = np.full((k, 6), -1, dtype=np.int64)
    for r in range(k):
        for side in range(2):
            if aux_body[r, side] >= 0:
                for c in range(3):
                    pos_aux[r, 3 * side + c] = slot(3 * n + mt + r, 3 * aux_body[r, side] + c)
    # elimination tree and column counts of L (Davis's ldl_symbolic)
    etree = np.full(nk, -1, dtype=np.int64)
    flag = np.full(nk, -1, dtype=np.int64)
    count = np.zeros(nk, dtype=np.int64)
    for j in range(nk):
        flag[j] = j
        for p in range(col_start[j], col_start[j + 1]):
            i = col_rows[p]
            while flag[i] != j:
                if etree[i] == -1:
                    etree[i] = j
                count[i] += 1
                flag[i] = j
                i = etree[i]
    l_start = np.concatenate(([0], np.cumsum(count))).astype(np.int64)
    # the loop rows that share a body with each loop row (Gershgorin bound of E M^-1 E^T)
    rows_of = [[] for _ in range(n)]
    for r in range(k):
        for b in set(aux_body[r].tolist()) - {-1}:
            rows_of[b].append(r)
    pairs = [sorted({s for b in set(aux_body[r].tolist()) - {-1} for s in rows_of[b]}) for r in range(k)]
    pair_start = np.concatenate(([0], np.cumsum([len(p) for p in pairs]))).astype(np.int64)
    pair_rows = np.array([s for p in pairs for s in p], dtype=np.int64)
    if use is None:
        use = _sparse_is_cheaper(model, aux_body, count, n, k)
    nnz = int(l_start[-1])
    return KKTStructure(
        np.array([1 if use else 0], dtype=np.int64), perm, col_start, col_rows, np.zeros(col_rows.size), etree,
        l_start, np.zeros(nk, dtype=np.int64), np.zeros(nnz, dtype=np.int64), np.zeros(nnz), np.zeros(nk),
        np.zeros(nk), np.zeros(nk, dtype=np.int64), np.zeros(nk, dtype=np.int64), np.zeros(nk), pos_diag,
        pos_child, pos_parent, pos_aux, pair_start, pair_rows)


# the cost model of the choice between the loop rows' Schur complement and the sparse KKT factorisation: a tree
# solve costs about TREE_SOLVE_COST flops a body (measured, not derived: it only picks the faster of two exact
# paths)
TREE_SOLVE_COST = 40.0


def _sparse_is_cheaper(model, aux_body, count, n, k):
    """Whether two sparse factorisations (``_kernels.augmented.kkt.loop_solve``; about sum count_j^2 flops each,
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
    """The structure of a model that keeps the Schur complement (no loops, drivers): empty arrays of
    ``kkt_structure``'s types, so that the time loop compiles one signature."""
    from .._kernels.augmented.kkt import KKTStructure  # noqa: PLC0415  (numba only to run)

    ints, floats = np.zeros(0, dtype=np.int64), np.zeros(0)
    return KKTStructure(np.zeros(1, dtype=np.int64), ints, np.zeros(1, dtype=np.int64), ints, floats, ints,
                        np.zeros(1, dtype=np.int64), ints, ints, floats, floats, floats, ints, ints, floats, ints,
                        np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3), dtype=np.int64),
                        np.zeros((0, 6), dtype=np.int64), np.zeros(1, dtype=np.int64), ints)
