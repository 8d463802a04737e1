"""Batched evaluation on a ``Model3D``: the kernels behind ``rm.batch`` for spatial models (``batch``).

Row m of each result is what the single-state function of ``dynamics.spatial`` returns for row m: the same kernels
(``_kernels.spatial.tree``, ``_kernels.spatial.elements``) run per row, in the same order, on one workspace per
thread of the shapes of the model's own (``spatial.Workspace3D``, ``spatial.ElementWorkspace3D``). Equal to
round-off, not always bit for bit: the spatial kernels let the compiler fuse multiply-adds (``fastmath`` "contract"),
and where a kernel is inlined into the parallel loop it may fuse other pairs than in its own compiled copy (measured:
inverse dynamics rows differing from the single call by one or two ulps); and ``rm.forward_dynamics`` of a tree of
spherical and revolute joints takes a route of its own (``_kernels.spatial.rotary``), the rows the general one.
"""

import numba
import numpy as np

from .._kernels import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .._kernels import layout as L
from .._kernels.spatial import elements as element_kernels
from .._kernels.spatial import layout as SL
from .._kernels.spatial import tree as kernels
from ..errors import ModelError
from .spatial import ElementWorkspace3D, workspace

_parallel = numba.njit(cache=True, parallel=True, nogil=True, error_model="numpy")


# Per-thread scratch (``batch.per_thread``): thread tid's block of an array is [tid, :rows], the row counts in
# dims = (nbodies, rows of forward dynamics' S, UD, uD (0 or nbodies, as ``spatial.Workspace3D.fd_S``), TMP_SIZE,
# nv, nelements).

@numba.njit(cache=True, nogil=True)
def _thread_element_forces(body_int, body_real, elem_int, elem_real, u, q, v, elements, dims, tid):
    """The force elements' generalised forces at (q, v) into thread tid's blocks of ``elements`` (the arrays of
    ``spatial.ElementWorkspace3D``); returns (status, forces (nv,), energy (3,): spring potential, dissipated and
    applied power)."""
    WS, S, TMP, ROT, POS, OMEGA, VEL, WRENCH, FORCES, ENERGY, PER = elements
    nb = dims[0]
    forces = FORCES[tid, :dims[3]]
    energy = ENERGY[tid, :3]
    status = element_kernels.element_forces(body_int, body_real, elem_int, elem_real, u, q, v, WS[tid, :nb],
                                            S[tid, :nb], TMP[tid, :dims[2]], ROT[tid, :nb], POS[tid, :nb],
                                            OMEGA[tid, :nb], VEL[tid, :nb], WRENCH[tid, :nb], forces, energy,
                                            PER[tid, :dims[4]])
    return status, forces, energy


@_parallel
def forward_dynamics_many(body_int, body_real, gravity, elem_int, elem_real, u, Q, V, TAU, dims, dynamics, elements,
                          LOADED, VDOT, status):
    """VDOT[m] = forward dynamics at (Q[m], V[m], TAU[m] + the element forces), status[m] its kernel status."""
    WS, S, UD, UDV, TMP = dynamics
    nb, rows = dims[0], dims[1]
    for m in numba.prange(Q.shape[0]):
        tid = numba.get_thread_id()
        tau = TAU[m]
        if elem_int.shape[0] > 0:
            st, forces, _ = _thread_element_forces(body_int, body_real, elem_int, elem_real, u, Q[m], V[m], elements,
                                                   dims, tid)
            if st != L.STATUS_OK:
                status[m] = st
                continue
            tau = LOADED[tid, :dims[3]]
            for j in range(tau.shape[0]):
                tau[j] = TAU[m, j] + forces[j]
        status[m] = kernels.forward_dynamics(body_int, body_real, gravity, Q[m], V[m], tau, WS[tid, :nb],
                                             S[tid, :rows], UD[tid, :rows], UDV[tid, :rows], TMP[tid, :dims[2]],
                                             VDOT[m])


@_parallel
def inverse_dynamics_many(body_int, body_real, gravity, elem_int, elem_real, u, Q, V, VDOT, dims, dynamics, elements,
                          TAU, status):
    """TAU[m] = inverse dynamics at (Q[m], V[m], VDOT[m]) less the element forces, status[m]."""
    WS, S, TMP = dynamics
    nb = dims[0]
    for m in numba.prange(Q.shape[0]):
        tid = numba.get_thread_id()
        st = kernels.inverse_dynamics(body_int, body_real, gravity, Q[m], V[m], VDOT[m], WS[tid, :nb], S[tid, :nb],
                                      TMP[tid, :dims[2]], TAU[m])
        if st == L.STATUS_OK and elem_int.shape[0] > 0:
            st, forces, _ = _thread_element_forces(body_int, body_real, elem_int, elem_real, u, Q[m], V[m], elements,
                                                   dims, tid)
            for j in range(forces.shape[0]):
                TAU[m, j] -= forces[j]
        status[m] = st


@_parallel
def energy_many(body_int, body_real, gravity, elem_int, elem_real, u, Q, V, dims, dynamics, elements, E, status):
    """E[m] = (kinetic, potential incl. springs) at (Q[m], V[m]), status[m]."""
    WS, S, TMP, ROT, POS, OMEGA, VEL, PAIR = dynamics
    nb = dims[0]
    for m in numba.prange(Q.shape[0]):
        tid = numba.get_thread_id()
        pair = PAIR[tid, :2]
        st = kernels.energy(body_int, body_real, gravity, Q[m], V[m], WS[tid, :nb], S[tid, :nb], TMP[tid, :dims[2]],
                            ROT[tid, :nb], POS[tid, :nb], OMEGA[tid, :nb], VEL[tid, :nb], pair)
        E[m, 0] = pair[0]
        E[m, 1] = pair[1]
        if st == L.STATUS_OK and elem_int.shape[0] > 0:
            st, _, energy = _thread_element_forces(body_int, body_real, elem_int, elem_real, u, Q[m], V[m], elements,
                                                   dims, tid)
            E[m, 1] = pair[1] + energy[0]
        status[m] = st


class ThreadWorkspaces3D:
    """Scratch arrays of one Model3D for ``nthreads`` threads (``batch.per_thread``), of the shapes of its
    ``spatial.Workspace3D`` and ``spatial.ElementWorkspace3D``."""

    def __init__(self, model, nthreads, per_thread):
        ws = workspace(model)
        nb, nv, ne, width = model.nbodies, model.nv, len(model._elements), model._max_nv
        rows = ws.fd_S.shape[0]
        self.nthreads = nthreads
        self.dims = np.array([nb, rows, kernels.TMP_SIZE, nv, ne], dtype=np.int64)
        self.ws = per_thread(nthreads, nb, SL.W_SPATIAL)
        self.S = per_thread(nthreads, nb, width, 6)  # every joint's (inverse dynamics, energy)
        self.tmp = per_thread(nthreads, kernels.TMP_SIZE)
        self.fd_S, self.UD = per_thread(nthreads, rows, width, 6), per_thread(nthreads, rows, width, 6)
        self.uD = per_thread(nthreads, rows, width)
        self.rot, self.pos = per_thread(nthreads, nb, 3, 3), per_thread(nthreads, nb, 3)
        self.omega, self.vel = per_thread(nthreads, nb, 3), per_thread(nthreads, nb, 3)
        self.pair = per_thread(nthreads, 2)
        self.loaded = per_thread(nthreads, nv)
        self.u = np.zeros(model.n_element_inputs)
        elements = ElementWorkspace3D(model)  # shapes of the single-state element scratch
        self.elements = tuple(per_thread(nthreads, arr.shape[0], *arr.shape[1:]) for arr in (
            elements.ws, elements.S, elements.tmp, elements.rot, elements.pos, elements.omega, elements.vel,
            elements.wrench, elements.forces, elements.energy, elements.per_element))


def prepare(model):
    """Refuse what ``rm.batch`` does not evaluate on a Model3D: contacts (their friction needs a run's contact
    state) and forces that are functions of the state (called from Python per row)."""
    workspace(model)
    if model.has_contacts:
        raise ModelError(f"rm.batch does not handle the contacts of {model!r} (the single-state functions of a "
                         "Model3D leave them out too)")
    state_functions = [entry[3] for entry in model.element_functions if entry[4] != 1]
    if state_functions:
        raise ModelError(f"rm.batch: elements {state_functions} are functions of the state (t, q, v), called from "
                         "Python: evaluate them state by state (rm.forward_dynamics)")
