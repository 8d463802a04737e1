"""Batched evaluation: the dynamics of one model at many states in one compiled, multi-threaded call.

Every function takes states as rows, ``Q`` and ``QD`` of shape (k, nq), and returns rows: row m is what the
single-state function of ``recursive_mbd.dynamics.calls`` returns for row m, bit for bit (the same kernels run in the
same order, once per row). The rows are spread over numba's threads (``prange``) with one workspace per thread;
the kernels release the GIL (``nogil``), so Python threads can share the work as well.

    QDD = rm.batch.forward_dynamics(model, Q, QD, TAU)      # (k, nq)
    TAU = rm.batch.inverse_dynamics(model, Q, QD, QDD)      # (k, nq)
    E = rm.batch.energy(model, Q, QD)                       # (k, 2): kinetic, potential [J]

On a ``Model3D`` the rows are (k, nq) coordinates (unit quaternions) and (k, nv) velocities, forces and
accelerations, and row m equals ``rm.forward_dynamics``, ``rm.inverse_dynamics``, ``rm.energy`` of the Model3D
to round-off (``spatial_batch`` says why not always bit for bit); its contacts and its forces that are functions of
the state (t, q, v) are not batched (ModelError).

The model's force elements act as in the single-state functions, all rows at the same time ``t``. Models with
closed loops are not batched (their constrained dynamics, ``rm.loops.loop_dynamics``, is one state at a time).
The rows are checked as the single-state functions check a state (``as_rows``): complex, string or object values
are a TypeError, never converted; a read-only array is copied.
"""

import threading

import numba
import numpy as np

from .. import _checks
from .._kernels import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .._kernels import layout as L
from .._kernels.planar import elements as element_kernels
from .._kernels.planar import tree
from ..errors import ModelError, StateError
from ..model.spatial import Model3D
from ..model.statuses import raise_spatial_status, raise_status
from ..model.workspace import workspace
from ._evaluation import element_inputs

__all__ = ["energy", "forward_dynamics", "inverse_dynamics"]

_parallel = numba.njit(cache=True, parallel=True, nogil=True, error_model="numpy")


# ---- kernels --------------------------------------------------------------------------------------------------------
# Per-thread scratch is one C array per field, (nthreads, rows + padding, ...): thread tid uses [tid, :rows], and the
# padding keeps two threads' blocks off a shared cache line (false sharing cost more than the second thread gave).
# ws_all[tid, :width].T is the (nbodies, width) column-major array the tree kernels take (the same type as the
# single-state Workspace.ws), so the very same compiled code runs per row. The three kernels open alike (a thread's
# scratch, a row's state): numba's prange wants each loop body in its kernel, and the element loads, the part they
# share, are one helper (``_thread_element_loads``).

@numba.njit(cache=True, nogil=True)
def _thread_element_loads(body_int, body_real, elem_int, elem_real, u, q, qd, ws, tid, com_all, wrench_all,
                          jforce_all, energy_all, per_element_all):
    """The force elements' loads at (q, qd) into thread ``tid``'s blocks of the per-thread arrays (wrench, joint
    forces, energy, per element; ``_kernels.planar.elements.element_forces``); returns its status."""
    nb = body_int.shape[0]
    return element_kernels.element_forces(body_int, body_real, elem_int, elem_real, u, q, qd, ws, com_all[tid, :nb],
                                          wrench_all[tid, :nb], jforce_all[tid, :q.shape[0]], energy_all[tid, :3],
                                          per_element_all[tid, :elem_int.shape[0]])


@_parallel
def _forward_dynamics_many(body_int, body_real, gravity, elem_int, elem_real, u, Q, QD, TAU, width, ws_all, com_all,
                           wrench_all, jforce_all, energy_all, per_element_all, tau_all, no_wrench, no_driven,
                           no_drive, QDD, status):
    """QDD[m] = forward dynamics at (Q[m], QD[m], TAU[m]) (+ element loads), status[m] its kernel status."""
    nb = body_int.shape[0]
    ne = elem_int.shape[0]
    nq = Q.shape[1]
    for m in numba.prange(Q.shape[0]):
        tid = numba.get_thread_id()
        ws = ws_all[tid, :width].T
        q = Q[m]
        qd = QD[m]
        tau = TAU[m]
        wrench = no_wrench
        if ne > 0:
            wrench = wrench_all[tid, :nb]
            jforce = jforce_all[tid, :nq]
            st = _thread_element_loads(body_int, body_real, elem_int, elem_real, u, q, qd, ws, tid, com_all,
                                       wrench_all, jforce_all, energy_all, per_element_all)
            if st != L.STATUS_OK:
                status[m] = st
                continue
            tau = tau_all[tid, :nq]
            for j in range(tau.shape[0]):
                tau[j] = TAU[m, j] + jforce[j]
        status[m] = tree.forward_dynamics(body_int, body_real, gravity, q, qd, tau, wrench, no_driven, ws, QDD[m],
                                          no_drive)


@_parallel
def _inverse_dynamics_many(body_int, body_real, gravity, elem_int, elem_real, u, Q, QD, QDD, width, ws_all, com_all,
                           wrench_all, jforce_all, energy_all, per_element_all, no_wrench, TAU, status):
    """TAU[m] = inverse dynamics at (Q[m], QD[m], QDD[m]) less the element joint forces, status[m]."""
    nb = body_int.shape[0]
    ne = elem_int.shape[0]
    has_elements = ne > 0
    nq = Q.shape[1]
    for m in numba.prange(Q.shape[0]):
        tid = numba.get_thread_id()
        ws = ws_all[tid, :width].T
        q = Q[m]
        qd = QD[m]
        wrench = no_wrench
        jforce = jforce_all[tid, :nq]
        if has_elements:
            wrench = wrench_all[tid, :nb]
            st = _thread_element_loads(body_int, body_real, elem_int, elem_real, u, q, qd, ws, tid, com_all,
                                       wrench_all, jforce_all, energy_all, per_element_all)
            if st != L.STATUS_OK:
                status[m] = st
                continue
        tau = TAU[m]
        status[m] = tree.inverse_dynamics(body_int, body_real, gravity, q, qd, QDD[m], wrench, ws, tau)
        if has_elements:
            for j in range(tau.shape[0]):
                tau[j] = tau[j] - jforce[j]


@_parallel
def _energy_many(body_int, body_real, gravity, elem_int, elem_real, u, Q, QD, width, ws_all, com_all, wrench_all,
                 jforce_all, energy_all, per_element_all, pair_all, E, status):
    """E[m] = (kinetic, potential incl. springs) at (Q[m], QD[m]), status[m]."""
    nb = body_int.shape[0]
    ne = elem_int.shape[0]
    for m in numba.prange(Q.shape[0]):
        tid = numba.get_thread_id()
        ws = ws_all[tid, :width].T
        pair = pair_all[tid, :2]
        com = com_all[tid, :nb]
        st = tree.energy(body_int, body_real, gravity, Q[m], QD[m], ws, com, pair)
        if st == L.STATUS_OK and ne > 0:
            energy_out = energy_all[tid, :3]
            st = _thread_element_loads(body_int, body_real, elem_int, elem_real, u, Q[m], QD[m], ws, tid, com_all,
                                       wrench_all, jforce_all, energy_all, per_element_all)
            E[m, 0] = pair[0]
            E[m, 1] = pair[1] + energy_out[0]
        else:
            E[m, 0] = pair[0]
            E[m, 1] = pair[1]
        status[m] = st


# ---- per-thread workspaces ----------------------------------------------------------------------------------------

CACHE_LINE_DOUBLES = 16  # 128 bytes: a cache line, or two where the prefetcher pairs them


def per_thread(nthreads, rows, *rest):
    """Zeros of shape (nthreads, rows + padding, *rest): thread t uses [t, :rows]; the padding (at least 128 bytes)
    keeps the blocks of two threads off a shared cache line."""
    row = max(1, int(np.prod(rest, dtype=np.int64)))
    pad = -(-CACHE_LINE_DOUBLES // row)
    return np.zeros((nthreads, rows + pad, *rest))


class ThreadWorkspaces:
    """Scratch arrays of one model for ``nthreads`` threads, indexed by ``numba.get_thread_id()`` (see per_thread)."""

    def __init__(self, model, nthreads):
        n = model.nbodies
        nq = model.nq
        ne = model.elem_int.shape[0]
        self.width = L.W_PLANAR if model.has_planar else L.W_TREE
        self.nthreads = nthreads
        self.ws = per_thread(nthreads, self.width, n)  # ws[t, :width].T: thread t's (n, width) column-major block
        self.com = per_thread(nthreads, n, 4)
        self.wrench = per_thread(nthreads, n, 3)
        self.jforce = per_thread(nthreads, nq)
        self.element_energy = per_thread(nthreads, 3)
        self.per_element = per_thread(nthreads, ne, 3)
        self.tau = per_thread(nthreads, nq)
        self.pair = per_thread(nthreads, 2)
        self.u = np.zeros(model.n_element_inputs)
        self.no_wrench = np.zeros((0, 3))
        self.no_driven = np.zeros(0, dtype=np.uint8)
        self.no_drive = np.zeros(0)


_POOL_LOCK = threading.Lock()


class _Borrowed:
    """A ThreadWorkspaces taken from the model's pool for one call (so concurrent Python threads never share one)."""

    def __init__(self, model):
        self.model = model
        self.nthreads = numba.config.NUMBA_NUM_THREADS  # get_thread_id() < this, whatever set_num_threads says
        with _POOL_LOCK:
            pool = model.__dict__.setdefault("_batch_pool", [])
            self.workspaces = pool.pop() if pool else None
        if self.workspaces is None or self.workspaces.nthreads != self.nthreads:
            if isinstance(model, Model3D):
                self.workspaces = _spatial().ThreadWorkspaces3D(model, self.nthreads, per_thread)
            else:
                self.workspaces = ThreadWorkspaces(model, self.nthreads)

    def __enter__(self):
        return self.workspaces

    def __exit__(self, *exc):
        with _POOL_LOCK:
            self.model.__dict__["_batch_pool"].append(self.workspaces)


# ---- validation ---------------------------------------------------------------------------------------------------

def _spatial():
    """The spatial batch kernels (``spatial_batch``), imported for a Model3D only."""
    from . import spatial_batch  # noqa: PLC0415  (spatial kernels only for spatial models)

    return spatial_batch


def _prepare(model):
    if isinstance(model, Model3D):
        _spatial().prepare(model)  # compiles the model
    else:
        workspace(model)  # compiles the model
    if model.loop_int.shape[0]:
        raise ModelError("rm.batch does not handle closed loops: evaluate rm.loops.loop_dynamics state by state")
    return model


def as_rows(model, X, what, k=None, rates=False):
    """``X`` as a C-contiguous, writable float64 (k, nq) array of finite numbers ((k, nv) with ``rates``: a
    Model3D's velocities, forces and accelerations), or an error naming the member (row): a TypeError for complex,
    string or object values (``_checks.real_array``: never converted), a StateError for a wrong shape or a
    non-finite entry. A read-only or unaligned array is copied (the compiled kernels are typed for writable ones)."""
    size, size_name = (model.nv, "nv") if rates and isinstance(model, Model3D) else (model.nq, "nq")
    arr = np.ascontiguousarray(_checks.real_array(X, what))
    if not arr.flags.carray:
        arr = arr.copy()
    if arr.ndim != 2 or arr.shape[1] != size:
        raise StateError(f"{what} must have shape (k, {size}) for this model (one state per row, {size_name} = "
                         f"{size}), got shape {arr.shape}")
    if k is not None and arr.shape[0] != k:
        raise StateError(f"{what} has {arr.shape[0]} rows but the first state array has {k}: one row per member")
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise StateError(f"member {row}: {what}[{row}, {col}] is not finite ({arr[row, col]})")
    return arr


def _inputs(model, ws, t):
    t = _checks.real(t, "t")  # checked with or without time-varying elements, as the rows
    if model.n_element_inputs:
        element_inputs(model, t, ws.u)
    return ws.u


def _check(model, status, names):
    failed = np.flatnonzero(status)
    if failed.size:
        member = int(failed[0])
        try:
            if isinstance(model, Model3D):
                raise_spatial_status(model, int(status[member]), names)
            raise_status(model, int(status[member]), names)
        except (ModelError, StateError) as err:
            raise type(err)(f"member {member}: {err}") from None


# ---- public functions ---------------------------------------------------------------------------------------------

def forward_dynamics(model, Q, QD, TAU=None, *, t=0.0):
    """Joint accelerations of many states, row by row: ``QDD[m] = rm.forward_dynamics(model, Q[m], QD[m], TAU[m])``.

    Parameters
    ----------
    model : Model or Model3D
        A tree (no closed loops); a Model3D without contacts or forces that are functions of the state.
    Q, QD : array_like, shape (k, nq)
        Joint coordinates and rates, one state (member) per row; a Model3D's Q (k, nq) (unit quaternions), its
        velocities QD (k, nv).
    TAU : array_like, shape (k, nq), optional
        Generalised joint forces per row ((k, nv) on a Model3D); default zero.
    t : float
        Time [s] of the model's time-varying force elements (the same for every row).

    Returns
    -------
    QDD : ndarray, shape (k, nq) ((k, nv) on a Model3D)
        Equal bit for bit to the single-state ``rm.forward_dynamics`` of each row (recursive method; a Model3D's
        to round-off, ``spatial_batch``).
    """
    _prepare(model)
    Q = as_rows(model, Q, "Q")
    k = Q.shape[0]
    QD = as_rows(model, QD, "QD", k, rates=True)
    TAU = np.zeros_like(QD) if TAU is None else as_rows(model, TAU, "TAU", k, rates=True)
    QDD = np.empty_like(QD)
    status = np.zeros(k, dtype=np.int64)
    if isinstance(model, Model3D):
        with _Borrowed(model) as ws:
            _spatial().forward_dynamics_many(
                model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real,
                _inputs(model, ws, t), Q, QD, TAU, ws.dims, (ws.ws, ws.fd_S, ws.UD, ws.uD, ws.tmp), ws.elements,
                ws.loaded, QDD, status)
        _check(model, status, ("Q", "QD", "TAU"))
        return QDD
    with _Borrowed(model) as ws:
        _forward_dynamics_many(model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real,
                               _inputs(model, ws, t), Q, QD, TAU, ws.width, ws.ws, ws.com, ws.wrench, ws.jforce,
                               ws.element_energy, ws.per_element, ws.tau, ws.no_wrench, ws.no_driven, ws.no_drive,
                               QDD, status)
    _check(model, status, ("Q", "QD", "TAU"))
    return QDD


def inverse_dynamics(model, Q, QD, QDD, *, t=0.0):
    """Joint forces of many states, row by row: ``TAU[m] = rm.inverse_dynamics(model, Q[m], QD[m], QDD[m])``.

    Q, QD, QDD of shape (k, nq) (a Model3D's QD and QDD (k, nv)); returns TAU (k, nq) ((k, nv)), equal bit for bit
    to the single-state function per row (a Model3D's to round-off, ``spatial_batch``).
    """
    _prepare(model)
    Q = as_rows(model, Q, "Q")
    k = Q.shape[0]
    QD = as_rows(model, QD, "QD", k, rates=True)
    QDD = as_rows(model, QDD, "QDD", k, rates=True)
    TAU = np.empty_like(QD)
    status = np.zeros(k, dtype=np.int64)
    if isinstance(model, Model3D):
        with _Borrowed(model) as ws:
            _spatial().inverse_dynamics_many(
                model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real,
                _inputs(model, ws, t), Q, QD, QDD, ws.dims, (ws.ws, ws.S, ws.tmp), ws.elements, TAU, status)
        _check(model, status, ("Q", "QD", "QDD"))
        return TAU
    with _Borrowed(model) as ws:
        _inverse_dynamics_many(model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real,
                               _inputs(model, ws, t), Q, QD, QDD, ws.width, ws.ws, ws.com, ws.wrench, ws.jforce,
                               ws.element_energy, ws.per_element, ws.no_wrench, TAU, status)
    _check(model, status, ("Q", "QD", "QDD"))
    return TAU


def energy(model, Q, QD, *, t=0.0):
    """Kinetic and potential energy of many states: ``E[m] = rm.energy(model, Q[m], QD[m])``, shape (k, 2) [J].

    Column 0 is the kinetic energy, column 1 the potential (gravity and springs), bit for bit as the single-state
    function.
    """
    _prepare(model)
    Q = as_rows(model, Q, "Q")
    k = Q.shape[0]
    QD = as_rows(model, QD, "QD", k, rates=True)
    E = np.empty((k, 2))
    status = np.zeros(k, dtype=np.int64)
    if isinstance(model, Model3D):
        with _Borrowed(model) as ws:
            _spatial().energy_many(
                model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real,
                _inputs(model, ws, t), Q, QD, ws.dims, (ws.ws, ws.S, ws.tmp, ws.rot, ws.pos, ws.omega, ws.vel, ws.pair),
                ws.elements, E, status)
        _check(model, status, ("Q", "QD", "QD"))
        return E
    with _Borrowed(model) as ws:
        _energy_many(model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real,
                     _inputs(model, ws, t), Q, QD, ws.width, ws.ws, ws.com, ws.wrench, ws.jforce, ws.element_energy,
                     ws.per_element, ws.pair, E, status)
    _check(model, status, ("Q", "QD", "QD"))
    return E
