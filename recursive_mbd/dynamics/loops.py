"""Closed loops: cut-joint constraints and the Lagrange-multiplier layer on top of the recursive tree.

A loop (``Model.add_loop``) adds equations phi(q) = 0 between two bodies. With J = dphi/dq (m, nq) the constrained
equations of motion are

    M(q) qdd + h(q, qd) = tau + Q_elements - J^T lambda,        J qdd = gamma = -J' qd,

and ``lambda`` (m,) are the multipliers: the loop force on body a is -sum_r lambda_r w_a,r at its point P_a,
on body b -sum_r lambda_r w_b,r at P_b (``_kernels.planar.loops``). For a revolute loop lambda is the force that body b
exerts on body a, negated per axis: F_a = -(lambda_0, lambda_1). ``loop_dynamics`` solves the recursive way in
O(N m + m^3) at most (``_kernels.planar.loops``: O(N) for a row of loops, whose J M^-1 J^T is banded; where the
loops all reach the same chains, as on a ladder, the multipliers come from the sparse KKT factorisation of the
absolute-coordinate system instead, ``_kernels.planar.loops_sparse``, chosen per model by ``sparse_loop_structure``,
and so do the projection's steps, ``project``: O(N) an evaluation and a step along a ladder);
``forward_dynamics(..., method="mass_matrix")`` solves the dense KKT system as an independent check.
"""

from collections import namedtuple

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels import sparse_kkt
from .._kernels.arrays import readonly_zeros
from .._kernels.planar import loops as kernels
from .._kernels.planar import loops_sparse as sparse_kernels
from ..errors import ModelError
from ..model.statuses import raise_planar_loop_status
from ..model.workspace import workspace
from ._evaluation import _rnea, as_vector, loaded_state, tree_mass_matrix

# relative singular-value cut-off of dense least-squares solves on J-sized matrices (the KKT check, analyses)
RCOND = 1e-10
# relative cut-off mu / max(s) of the regularised multiplier solves (``_kernels.planar.loops.filtered_solve``) on the
# eigenvalues s of J M^-1 J^T: below it a direction of the loop equations counts as redundant (or singular).
# Chosen on the parallelogram through its change points (tests/test_singular.py): 1e-10 .. 1e-14 let round-off
# in the position (an error eps / sigma_min(J)^2 in the branch tangent) and in the multipliers reach the
# velocities near the change point (crank rates split by 1e-6 .. 1e-2 rad/s), 1e-8 keeps them below 4e-7;
# directions with s >> mu are solved to a relative (mu / s)^2. The time loops do not rely on it near change points:
# there (s <= 1e-6 max s, ``_kernels.planar.loops.BRANCH_ZONE``) they solve on the branch's normal space instead, which
# keeps the weak rows' forces that a row of parallelograms needs (the filter dropped them: crank rates split by
# 6e-5 rad/s).
FILTER_RCOND = 1e-8
# the same for the position steps of the projection: phi is known to round-off, so the branch is closed down to
# 1e-6 of the largest singular value of J (1e-8 left position errors of 2e-9 near the change points of a row of
# parallelograms); the velocity step keeps FILTER_RCOND, where the tangent, eps / sigma_min(J)^2, is reliable
POSITION_RCOND = 1e-12

# the change-point treatment of the time loops (``_kernels.planar.loops.branch_normals``) is off in the public
# single-state functions: they have no motion to tell the branch from
_NO_BRANCH = (0.0, 0.0, 0.0)

LoopSolution = namedtuple("LoopSolution", "qdd multipliers forces rank")
LoopSolution.__doc__ = """Constrained forward dynamics of a model with loops.

qdd (nq,) joint accelerations; multipliers (m,) Lagrange multipliers lambda; forces (nloops, 2, 3) the loop force
(Fx, Fy [N], moment [N m]) on body a at its loop point and on body b at its loop point, ground axes; rank of
J M^-1 J^T (< m when loop equations are redundant or singular at this state)."""


class LoopArrays:
    """The arrays of the multiplier layer that planar and spatial loops share, for m loop equations on n rates
    (nq planar, nv spatial): phi, phi' (m,), J (m, n), gamma (m,), the row weights (m, 2 w) of the loop forces
    (``forces_from_multipliers``), the responses (m, n), lambda (m,) and the rank (1,)."""

    def __init__(self, m, n, weight_width):
        self.phi = np.zeros(m)
        self.phid = np.zeros(m)
        self.jac = np.zeros((m, n))
        self.gamma = np.zeros(m)
        self.weights = np.zeros((m, weight_width))
        self.resp = np.zeros((m, n))
        self.lam = np.zeros(m)
        self.info = np.zeros(1, dtype=np.int64)


class LoopWorkspace(LoopArrays):
    """Scratch arrays of the loop layer of one model (allocated once, reused), the loops' structure the kernels
    read J, the responses and J M^-1 J^T through (``loop_structure``) and the sparse KKT path's packed arrays
    (``sparse_loop_structure``: two empty arrays where the model keeps the envelope path), built once here."""

    def __init__(self, model):
        super().__init__(model.nconstraints, model.nq, 6)
        self.acc = np.zeros((model.nbodies, 3))
        self.no_resp_drive = np.zeros((model.nconstraints, 0))
        self.stab = np.zeros(4)  # alpha, beta, and the zero gravity of the response passes
        self.no_gravity = readonly_zeros(2)  # read-only as the model's gravity: the tree kernels compile once
        self.pattern = loop_structure(model)
        self.sparse = sparse_loop_structure(model, self.pattern)


def loop_structure(model):
    """The structure of a compiled planar model's loop rows (``_kernels.planar.loops.loop_pattern``: the columns of
    J and of the responses M^-1 J^T by rows and by columns, the colours of the response passes, the pairs of rows
    that meet in J M^-1 J^T and its envelope), fixed by the tree and the loops: built once per model and passed to
    the loop kernels. A model without loops gets the empty tuple of the same types without compiling the builder."""
    m, nq = model.nconstraints, model.nq
    if m:
        return kernels.loop_pattern(model.body_int, model.loop_int, m, nq)
    none = np.zeros(0, dtype=np.int64)
    starts = np.zeros(1, dtype=np.int64)
    columns = np.zeros(nq + 1, dtype=np.int64)
    return (starts, none, starts, none, np.zeros((0, 2), dtype=np.int64), columns, none, starts, none, starts, none,
            none, columns, none)


# the cost model of the choice between the envelope path of the multipliers (``_kernels.planar.loops``) and the sparse
# KKT factorisation (``_kernels.planar.loops_sparse``), in flops: a recursive pass costs about
# sparse_kkt.TREE_SOLVE_COST a body, as a tree solve does (measured, not derived: it only picks the faster of two
# paths that give the same multipliers)
ENVELOPE_SOLVE_PASSES = 10  # the regularity test's inverse iterations and the solve: ~10 sweeps of the envelope
SPARSE_FIXED_COST = 4000.0  # the sparse path's own calls and loop rows an evaluation (measured: a ladder of 5 rungs
# is solved faster by its envelope, one of 10 about as fast either way)


def _envelope_cost(model, pattern):
    """Flops of an evaluation's envelope path beyond what both paths do (the loop rows and J, the tree pass): a
    response pass per colour of rows, the pairs' products of J M^-1 J^T, its Cholesky factorisation and sweeps."""
    resp_start, colour_start, pair_start, pair_rows, first = (pattern[2], pattern[7], pattern[9], pattern[10],
                                                              pattern[11])
    resp_len = np.diff(resp_start).astype(float)
    pair_of = np.repeat(np.arange(pair_start.size - 1), np.diff(pair_start))
    products = float(np.sum(resp_len[pair_rows] + resp_len[pair_of]))
    width = (np.arange(first.size) - first + 1).astype(float)
    return (sparse_kkt.TREE_SOLVE_COST * (colour_start.size - 1) * model.nbodies + products
            + 0.5 * float(np.sum(width**2)) + ENVELOPE_SOLVE_PASSES * float(np.sum(width)))


def _sparse_cost(model, tree_rows, l_count):
    """Flops of an evaluation's sparse path beyond what both paths do: two sparse LDL^T factorisations (about
    sum count_j^2 each, count_j the entries of column j of L, as ``augmented_tree``'s cost model), the joints'
    blocks and the loop forces' pass (a tree pass each)."""
    nk = 3 * model.nbodies + tree_rows + model.nconstraints
    factor = float(np.sum(np.asarray(l_count, dtype=float) ** 2)) + 10.0 * nk
    return 2.0 * factor + 2.0 * sparse_kkt.TREE_SOLVE_COST * model.nbodies + SPARSE_FIXED_COST


def sparse_loop_structure(model, pattern, use=None):
    """The arrays of the sparse KKT path of the multipliers and the projection (``_kernels.planar.loops_sparse``),
    packed in two (``_kernels.planar.loops.pack``): the KKT structure with the loop rows inside
    (``_kernels.sparse_kkt.kkt_pattern``, its ``use`` set) and a ``_kernels.planar.loops.SparseLoopWork``. ``use``
    None: taken where the cost model (``_envelope_cost``, ``_sparse_cost``: an evaluation's multiplier solve; the
    projection's solves with J M^-1 J^T compare alike) finds the sparse path cheaper, as along a ladder (J M^-1 J^T
    full); a row of loops keeps its banded envelope. A model that does not take it (or has no loops) gets two empty
    arrays (one compiled signature). pattern: the model's ``loop_structure``."""
    m, n, nq = model.nconstraints, model.nbodies, model.nq
    if m and use is not False:
        row_start = sparse_kkt.joint_row_starts(model.joint_type)
        tree_rows = int(row_start[-1])
        envelope = _envelope_cost(model, pattern)
        # a lower bound of the sparse cost first (count_j >= 1): no symbolic factorisation where it cannot win
        if use or _sparse_cost(model, tree_rows, np.ones(3 * n + tree_rows + m)) < envelope:
            kkt = sparse_kkt.kkt_pattern(model.body_parent, model.loop_int, model.loop_rows, row_start, True)
            if use or _sparse_cost(model, tree_rows, np.diff(kkt.l_start)) < envelope:
                work = kernels.sparse_loop_work(n, nq, tree_rows, m)
                work.row_start[:] = row_start
                return kernels.pack(kkt, work)
    return kernels.no_sparse_path()


def attach_loop_workspace(ws, model, make):
    """(ws, its loop workspace): the latter made by ``make(model)`` on first use and kept on the model's workspace
    ``ws`` (planar ``LoopWorkspace``, spatial ``LoopWorkspace3D``)."""
    if getattr(ws, "loops", None) is None:
        ws.loops = make(model)
    return ws, ws.loops


def loop_workspace(model):
    """(the planar workspace, the loop workspace) of ``model``; TypeError unless it is a Model."""
    return attach_loop_workspace(workspace(model), model, LoopWorkspace)


def constraints(model, q, qd=None):
    """Loop residual and its derivatives at (q, qd).

    Returns
    -------
    phi (m,), phi_dot (m,) = J qd, J (m, nq), gamma (m,) = -J' qd: the acceleration constraint is J qdd = gamma.
    Rows in loop order; a loop's equations (``Model.add_loop``): revolute (x, y of p_a - p_b), prismatic (normal
    offset, angle), fixed (x, y, angle), distance (|p_a - p_b| - length) [m or rad].
    """
    ws, lw = loop_workspace(model)
    q = as_vector(model, q, "q")
    qd = ws.zeros if qd is None else as_vector(model, qd, "qd")
    status = kernels.loop_constraints(model.body_int, model.body_real, model.loop_int, model.loop_real, q, qd, ws.ws,
                                      ws.com, lw.acc, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights)
    if status:
        raise_planar_loop_status(model, status)
    return lw.phi.copy(), lw.phid.copy(), lw.jac.copy(), lw.gamma.copy()


def forces_from_multipliers(model, lam, weights):
    """Loop forces (nloops, 2, w) on bodies a and b from multipliers and the row weights (m, 2 w) of the kernel:
    planar w = 3 (Fx, Fy, moment), spatial w = 6 (force at the loop point, moment), ground axes."""
    width = weights.shape[1] // 2
    forces = np.zeros((model.nloops, 2, width))
    for k in range(model.nloops):
        block = slice(model.loop_rows[k], model.loop_rows[k + 1])
        forces[k, 0] = -lam[block] @ weights[block, :width]
        forces[k, 1] = -lam[block] @ weights[block, width:]
    return forces


def kkt_solve(mass, jac, rhs_tree, phi, phid, gamma, alpha, beta):
    """(accelerations, multipliers, rank of J M^-1 J^T) from the dense KKT system [[M, J^T], [J, 0]] with the tree's
    right-hand side tau - h and the Baumgarte-stabilised acceleration constraint (the "mass_matrix" check)."""
    m, n = jac.shape
    kkt = np.block([[mass, jac.T], [jac, np.zeros((m, m))]])
    rhs = np.concatenate((rhs_tree, gamma - 2.0 * alpha * phid - beta**2 * phi))
    solution, _, rank_kkt, _ = np.linalg.lstsq(kkt, rhs, rcond=RCOND)
    return solution[:n], solution[n:], rank_kkt - n


def _warn_rank(model, rank):
    m = model.nconstraints
    if rank < m:
        _checks.warn(f"the loop equations are redundant or singular at this state: rank {rank} of {m}; the "
                     "multipliers are the minimum-norm ones", RedundantConstraintWarning)


class RedundantConstraintWarning(UserWarning):
    """Loop equations that are not independent (a redundant loop, or a singular configuration)."""


def loop_dynamics(model, q, qd, tau=None, *, t=0.0, alpha=0.0, beta=0.0, method="recursive"):
    """Constrained forward dynamics with the loop multipliers and forces: a ``LoopSolution``.

    Parameters as ``rm.forward_dynamics``; ``alpha``, ``beta`` [1/s] add Baumgarte's terms to the acceleration
    constraint, J qdd = gamma - 2 alpha phi' - beta^2 phi. ``method``: "recursive" (O(N m + m^3) at most, module
    docstring) or "mass_matrix" (dense KKT system with M from the composite-rigid-body pass, O(N^3)). Redundant
    or singular loop equations give the minimum-norm multipliers and a ``RedundantConstraintWarning``.
    """
    ws, lw = loop_workspace(model)
    q, qd, tau, wrench = loaded_state(model, ws, q, qd, tau, t)
    lw.stab[:2] = alpha, beta
    if method == "recursive":
        qdd = np.zeros(model.nq)
        status = sparse_kernels.sparse_constrained_dynamics(
            model.body_int, model.body_real, model.gravity, model.loop_int, model.loop_real, lw.pattern, *lw.sparse,
            q, qd, tau, wrench,
            ws.no_driven, ws.ws, ws.com, lw.acc, qdd, ws.no_drive, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights,
            lw.resp, lw.no_resp_drive, ws.zeros, lw.stab, FILTER_RCOND, lw.lam, lw.info, _NO_BRANCH)
        if status:
            raise_planar_loop_status(model, status)
        lam, rank = lw.lam.copy(), int(lw.info[0])
    elif method == "mass_matrix":
        phi, phid, jac, gamma = constraints(model, q, qd)  # also fills lw.weights
        rhs_q = tau - _rnea(model, ws, q, qd, ws.zeros, wrench)
        qdd, lam, rank = kkt_solve(tree_mass_matrix(model, ws, q), jac, rhs_q, phi, phid, gamma, alpha, beta)
    else:
        raise ValueError(f"unknown method {method!r}; expected 'recursive' or 'mass_matrix'")
    _warn_rank(model, rank)
    return LoopSolution(qdd, lam, forces_from_multipliers(model, lam, lw.weights), rank)


def _held_joints(model, free):
    """The per-body mask of joints held still by a projection that may change only the coordinates ``free``."""
    if free is None:
        return np.zeros(0, dtype=np.uint8)
    values = _checks.index_array(free, model.nq, "free")
    held = np.ones(model.nq, dtype=bool)
    held[values] = False
    mask = np.zeros(model.nbodies, dtype=np.uint8)
    for k in np.flatnonzero(held):
        body = int(np.searchsorted(model.joint_q_index, k, side="right") - 1)
        while model.joint_ndof[body] == 0:  # fixed joints own no coordinate: step back to the joint that does
            body -= 1
        if model.joint_ndof[body] != 1:
            raise ModelError(f"free: coordinate {k} belongs to the {model.joint_ndof[body]}-dof joint of body "
                             f"{model.body_names[body]!r}; a projection can hold only 1-dof joints (leave all of "
                             "its coordinates free)")
        mask[body] = 1
    return mask if mask.any() else np.zeros(0, dtype=np.uint8)


def project(model, q, qd, *, free=None, tol=1e-12, max_iter=20):
    """The state nearest (q, qd) in the kinetic-energy metric that closes every loop: (q, qd) copies, and max
    |phi| reached.

    Mass-orthogonal projection (``_kernels.planar.loops.project``, where its effect on the energy is derived):
    positions by Gauss-Newton with the steps dq = -M^-1 J^T (J M^-1 J^T)^+ phi until the step and |phi| are
    below ``tol``, velocities by one correction qd -= M^-1 J^T (J M^-1 J^T)^+ J qd, with a regularised
    minimum-norm solve (redundant loops and singular positions are fine). Only the coordinates in ``free``
    (default all) change; the others must be whole 1-dof joints, held as drivers hold them. Far from the loops
    the steps may grow before they converge (a long ladder moved 0.05 rad in every joint starts metres open); the
    iteration stops early only once max |phi| is below ``sqrt(tol)`` and the steps stop shrinking (round-off).
    Raises ModelError, naming the loop with the largest gap, when the loops are still open (max |phi| above
    ``sqrt(tol)``) after the max_iter + 1 steps allowed. Where the model takes the sparse KKT path
    (``sparse_loop_structure``: a ladder) and no coordinate is held, each step solves with J M^-1 J^T through it
    where it finds J M^-1 J^T surely regular (O(N) a step instead of O(N m + m^3)); the same state to round-off.
    """
    ws, lw = loop_workspace(model)
    q = as_vector(model, q, "q").copy()
    qd = as_vector(model, qd, "qd").copy()
    tol = _checks.real(tol, "tol", low=0.0, strict=True)
    max_iter = _checks.integer(max_iter, "max_iter", low=0, high=10**9)
    driven = _held_joints(model, free)
    resp_drive = np.zeros((model.nconstraints, model.nq if driven.size else 0))
    status, worst, steps = kernels.project(model.body_int, model.body_real, model.loop_int, model.loop_real,
                                           lw.pattern, q, qd, driven, ws.ws, ws.com, lw.acc, lw.phi, lw.phid, lw.jac,
                                           lw.gamma, lw.weights, lw.resp, resp_drive, ws.zeros, lw.no_gravity, tol,
                                           int(max_iter), POSITION_RCOND, FILTER_RCOND, np.sqrt(tol), _NO_BRANCH,
                                           *lw.sparse)
    kind, index = L.decode_status(status)
    if kind == L.STATUS_LOOPS_OPEN:
        raise ModelError(f"the loops cannot be closed near this state: loop {model.loop_names[index]!r} stays open, "
                         f"max |phi| = {worst:.3g} (above sqrt(tol) = {np.sqrt(tol):.3g}) after {steps} Gauss-Newton "
                         f"steps, all that max_iter = {max_iter} allows: no closed configuration is near, or more "
                         f"steps would reach one")
    if status:
        raise_planar_loop_status(model, status)
    return q, qd, worst


def branch_normals(model, q, qd, *, tol=1e-12):
    """The normal space of the branch that the motion qd follows at q, near a change point (where two branches
    cross and J loses rank): (normals (r, nq), orthonormal rows; curvature (r,)), with N qd = 0 the branch's
    velocity constraint and N qdd = curvature its acceleration constraint, as the time loops use them
    (``_kernels.planar.loops.branch_normals``: from points displaced along qd and closed onto the loops to
    ``tol``). r = 0 (empty arrays) where q is not near a change point, or no branch can be told (qd = 0, a dead
    point of the drivers rather than a crossing of branches)."""
    ws, lw = loop_workspace(model)
    q = as_vector(model, q, "q")
    qd = as_vector(model, qd, "qd")
    normals = np.zeros((model.nconstraints, model.nq))
    curvature = np.zeros(model.nconstraints)
    status, rank = kernels.branch_normals(model.body_int, model.body_real, model.loop_int, model.loop_real, lw.pattern,
                                          q, qd, ws.ws, ws.com, lw.acc, lw.phi, lw.phid, lw.jac, lw.gamma, lw.weights,
                                          lw.resp, ws.zeros, lw.no_gravity, float(tol), POSITION_RCOND,
                                          kernels.BRANCH_ZONE, normals, curvature)
    if status:
        raise_planar_loop_status(model, status)
    return normals[:rank].copy(), curvature[:rank].copy()


def _gram_spread(model, q):
    """Smallest over largest eigenvalue of J M^-1 J^T at q (0 where J = 0)."""
    q = np.ascontiguousarray(q, dtype=float)
    _, _, jac, _ = constraints(model, q)
    gram = jac @ np.linalg.solve(tree_mass_matrix(model, workspace(model), q), jac.T)
    values = np.linalg.eigvalsh(0.5 * (gram + gram.T))
    return values[0] / values[-1] if values[-1] > 0.0 else 0.0


def change_point_diagnosis(model, q, q_start, drop=1e-3):
    """Why an implicit method cannot step on at q, or None: a sentence when the planar ``model``'s loops are near
    a change point there (a singular position where branches of the motion cross), told by the spread of the
    eigenvalues of J M^-1 J^T (smallest over largest) having fallen below ``drop`` times its value at q_start."""
    if not model.nloops:
        return None
    here, before = _gram_spread(model, q), _gram_spread(model, q_start)
    if not here < drop * before:
        return None
    return (f"the loops are near a change point there (a singular position where branches of the motion cross: "
            f"the smallest eigenvalue of J M^-1 J^T is {here:.1e} of the largest, {before:.1e} at the start); the "
            f"implicit methods solve the loop equations at the state itself and cannot tell which branch the motion "
            f"follows: simulate with dopri5 or dop853 (their projection follows the branch)")


def lock_diagnosis(model, q, free=None, threshold=1e-3):
    """Why a driven mechanism cannot move on at q, or None: a sentence naming the loop whose equations lose rank
    on the free coordinates (the drivers push the mechanism into a dead point, where J_f, the loop Jacobian
    restricted to the coordinates the drivers leave free, is singular: its smallest singular value is below
    ``threshold`` times its largest)."""
    _, _, jac, _ = constraints(model, q)
    jac = jac if free is None else jac[:, np.asarray(free, dtype=np.int64)]
    if jac.size == 0:
        return None
    left, values, _ = np.linalg.svd(jac)
    rank_needed = min(jac.shape)
    smallest = values[rank_needed - 1] if values.size >= rank_needed else 0.0
    if not smallest < threshold * values[0]:
        return None
    row = int(np.argmax(np.abs(left[:, rank_needed - 1])))
    lp = int(np.searchsorted(model.loop_rows, row, side="right") - 1)
    return (f"the mechanism locks: loop {model.loop_names[lp]!r} (index {lp}) and the drivers leave no motion, the "
            f"loop Jacobian on the free coordinates is singular there (smallest singular value {smallest:.3g} of "
            f"{values[0]:.3g})")
