"""Ensembles of one model: many initial conditions and parameter sets integrated at once, on every core.

``simulate_many`` runs every member's whole time loop in compiled code: the members are spread over numba's
threads (``prange``), each thread with its own workspace, and each member calls the very time loop of
``rm.simulate`` (``_kernels.timeloops.integrators.integrate_fixed`` / ``integrate_adaptive``) on its own copy of the
packed model arrays. A member that fails (blows up, singular dynamics, too many steps, a compiled tau or event
function raising or returning a non-finite value) keeps its samples up to the failure and its status; the others run
on.

Ctrl-C and ``max_wall_time`` reach the running members: the calling thread waits while the kernel runs on a helper
thread, and writes the stop request into a per-thread control row that every member's time loop polls (a compiled
monitor, every 256 right-hand-side evaluations). Running members stop at their next poll, members not yet started
stop before their first step; all keep their samples so far. Ctrl-C then raises ``KeyboardInterrupt`` with the
``EnsembleResult`` in ``.result`` (members "interrupted"); the time limit returns the result (members
"time_limit").

What can vary per member without recompiling (``params``; k = number of members):

===========================  ===============  ===========================================================
name                         shape            meaning
===========================  ===============  ===========================================================
``"mass"``                   (k, nbodies)     every body's mass [kg]
``"mass:BODY"``              (k,)             one body's mass (BODY a body name)
``"inertia"``                (k, nbodies)     every body's rotational inertia about its centre of mass
``"inertia:BODY"``           (k,)             one body's inertia [kg m^2]
``"parent_point:BODY"``      (k, 2)           the joint point of BODY in its parent's frame [m]
``"child_point:BODY"``       (k, 2)           the joint point of BODY in its own frame [m] (lengths)
``"gravity"``                (k, 2)           the gravity vector [m/s^2]
``"stiffness:ELEMENT"``      (k,)             stiffness of a (joint) spring-damper [N/m or N m/rad]
``"damping:ELEMENT"``        (k,)             damping of a (joint) spring-damper [N s/m or N m s/rad]
``"rest:ELEMENT"``           (k,)             rest length [m] / rest joint coordinate of a (joint) spring
``"force:ELEMENT"``          (k, 2)           a constant applied force (in the element's own frame) [N]
``"torque:ELEMENT"``         (k,)             a constant applied torque [N m]
===========================  ===============  ===========================================================

A ``Model3D`` runs in the same kernels, each member with the spatial system of ``rm.simulate`` on it (its
parameters: ``spatial_ensemble``).

Centres of mass, joint types, the tree, prismatic axes and attachment points of elements are fixed by the model
(they change the packed layout or other bodies' data): build another model for those. Joint forces ``tau`` vary
per member through a (k, nq) array. Not supported in ensembles: closed loops, drivers, and time-varying element
or tau functions written in Python (they need the GIL); a numba-compiled ``tau(t)`` or ``tau(t, q, qd)`` is.
"""

import math
import os
import threading
import time
import warnings

import numba
import numpy as np
from numba.core.errors import NumbaExperimentalFeatureWarning
from numba.core.registry import CPUDispatcher
from numba.extending import overload

from .. import _checks
from .._kernels import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .._kernels import layout as L
from .._kernels.arrays import copy_into
from .._kernels.planar.system import TreeSystem
from .._kernels.timeloops import integrators
from ..dynamics._evaluation import as_vector
from ..dynamics.batch import as_rows, per_thread
from ..errors import ModelError, StateError, unknown_name
from ..model.spatial import Model3D
from ..model.workspace import workspace
from . import formulation_hooks  # noqa: F401  (every formulation's hooks, before a time loop is typed)
from .kernel_status import raise_kernel_status
from .method_names import FIXED_STEP
from .result import ENSEMBLE_FORMAT, SUCCESS_STATUSES, ResultArchive, read_npz, status_message, write_npz
from .runs import (
    _compiled_tau_adapter,
    _function_name,
    _Inputs,
    build_system,
    check_time_span,
    checked_t_eval,
    fixed_step_count,
    positive,
)
from .tableaus import DOPRI5, RK4, TABLEAUS

__all__ = ["EnsembleResult", "PARAMETERS", "simulate_many"]

_parallel = numba.njit(cache=True, parallel=True, nogil=True, error_model="numpy")

# the parameter kinds that can vary per member -> the shapes they take (the table in the module docstring)
PARAMETERS = {
    "mass": "(k, nbodies) or per body (k,)",
    "inertia": "(k, nbodies) or per body (k,)",
    "parent_point": "per body (k, 2)",
    "child_point": "per body (k, 2)",
    "gravity": "(k, 2)",
    "stiffness": "per element (k,)",
    "damping": "per element (k,)",
    "rest": "per element (k,)",
    "force": "per element (k, 2)",
    "torque": "per element (k,)",
}

STATUS_NAMES = {L.STATUS_OK: "finished", L.STATUS_EVENT: "event", L.STATUS_INTERRUPTED: "interrupted",
                L.STATUS_TIME_LIMIT: "time_limit"}
_WAIT_INTERVAL = 0.05  # [s] how often the waiting thread checks the wall-clock limit
_ENSEMBLE_VERSION = 1  # of the files EnsembleResult.save writes


# ---- kernels --------------------------------------------------------------------------------------------------------
# No Python runs inside the parallel loop, so the members' time loops poll this compiled monitor instead of
# integrate.py's bridge to _RunControl: each thread has a row CONTROL[tid] = (evaluation count of the next poll,
# count at this poll, stop status, padding). The Python thread that waits for the kernel writes the stop status
# (STATUS_INTERRUPTED on Ctrl-C, STATUS_TIME_LIMIT at max_wall_time) into every row; each member returns it at its
# next poll, and a member started after that returns it before its first step.
_POLL_EVALUATIONS = 256.0  # right-hand-side evaluations between polls (a call costs a few ns)
_STOP = 2  # column of the stop status in CONTROL
# a compiled event function returned a non-finite value, or raised (the INPUT_* reasons of ``layout``)
_EVENT_FAILED = L.STATUS_INPUT_FAILED | (L.INPUT_EVENT_NONFINITE << 4)
_EVENT_RAISED = L.STATUS_INPUT_FAILED | (L.INPUT_EVENT_RAISED << 4)


@numba.cfunc(integrators.CALLBACK, cache=True)
def _stop_monitor(key, t, y, _, control):
    """The monitor of every member: the stop status the waiting thread wrote (0: run on)."""
    control[0] = control[1] + _POLL_EVALUATIONS
    return np.int64(control[_STOP])


# The system rm.simulate builds for the model (``runs.build_system``, ``spatial_loop.SpatialTimeLoop``) reaches the
# kernels as flat parts, (head, part1, part2, part3): numba's parallel loops take tuples of arrays but no tuple
# nested in one. head holds the system's array fields, the parts its tuples: a planar TreeSystem's head has every field
# but loops (part1) and contacts (None; part2 and part3 empty), a SpatialSystem's every field but elements (part1),
# loops (part2) and contacts (part3).
_SPATIAL_NESTED = ("elements", "loops", "contacts")
_SPATIAL_HEAD = 25  # the SpatialSystem's fields less _SPATIAL_NESTED: its parts are told from a TreeSystem's by this


def system_parts(template):
    """(head, part1, part2, part3) of a TreeSystem or SpatialSystem (the comment above)."""
    if isinstance(template, TreeSystem):
        return tuple(template[:-2]), template.loops, (), ()
    head = tuple(value for name, value in zip(template._fields, template, strict=True) if name not in _SPATIAL_NESTED)
    assert len(head) == _SPATIAL_HEAD
    return head, template.elements, template.loops, template.contacts


def _member_system(head, part1, part2, part3, members, scratch, dims, m, tid):
    """The system of member m on thread tid (compiled code only; ``_member_system_overload``)."""
    raise NotImplementedError("_member_system is called from compiled code only")


@overload(_member_system, jit_options={"cache": True})
def _member_system_overload(head, part1, part2, part3, members, scratch, dims, m, tid):
    """The member's system of the kind of the parts (``system_parts``): a planar TreeSystem (``_planar_member``) or
    a SpatialSystem (``spatial_ensemble.spatial_member``)."""
    if len(head) == _SPATIAL_HEAD:
        from .spatial_ensemble import spatial_member  # noqa: PLC0415  (spatial kernels only for spatial models)

        return lambda head, part1, part2, part3, members, scratch, dims, m, tid: spatial_member(  # noqa: PLW0108
            head, part1, part2, part3, members, scratch, m, tid)
    return lambda head, part1, part2, part3, members, scratch, dims, m, tid: _planar_member(  # noqa: PLW0108
        head, part1, members, scratch, dims, m, tid)


@numba.njit(cache=True)
def _planar_member(head, loops, members, scratch, dims, m, tid):
    """The TreeSystem (``_kernels.planar.system``: ensembles take trees only, so their time loops compile no loop
    layer) of member m on thread tid: the template's fields ``head`` and ``loops`` (``system_parts``) with member
    m's packed arrays ``members`` = (BODY_REAL, GRAVITY, ELEM_REAL, TAU_CONST) and thread tid's blocks of
    ``scratch`` = (U, Qs, QDs, TAUs, WS, COM, WRENCH, JFORCE, EEN, PER, QDD, DRIVE).

    Per-thread scratch is padded (``batch.per_thread``): thread tid's block is [tid, :rows], with the row counts
    dims = (nq, nbodies, nelements, wrench rows, inputs, workspace width).
    """
    BODY_REAL, GRAVITY, ELEM_REAL, TAU_CONST = members
    U, Qs, QDs, TAUs, WS, COM, WRENCH, JFORCE, EEN, PER, QDD, DRIVE = scratch
    nq, nb, ne, nw, nu, width = dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]
    # head: body_int, body_real, gravity, elem_int, elem_real, free, drv_coord, driven, tau_const, offsets, ...
    return TreeSystem(head[0], BODY_REAL[m].T, GRAVITY[m], head[3], ELEM_REAL[m], head[5], head[6], head[7],
                      TAU_CONST[m], head[9], U[tid, :nu], Qs[tid, :nq], QDs[tid, :nq], TAUs[tid, :nq],
                      WS[tid, :width].T, COM[tid, :nb], WRENCH[tid, :nw], JFORCE[tid, :nq], EEN[tid, :3],
                      PER[tid, :ne], QDD[tid, :nq], DRIVE[tid, :nq], loops, None)


@numba.njit(cache=True)
def _member_start(head, part1, part2, part3, members, scratch, dims, m, tid, CONTROL):
    """(system, control) of member m on thread tid: its system (``_member_system``) and the thread's control row
    CONTROL[tid], its counts zeroed so that the time loop polls before the first step (a member started after a
    stop request does not run)."""
    system = _member_system(head, part1, part2, part3, members, scratch, dims, m, tid)
    control = CONTROL[tid]
    control[0] = 0.0
    control[1] = 0.0
    return system, control


@_parallel
def _fixed_many(inputs, key, head, part1, part2, part3, members, scratch, dims, K, T_BUF, Y_BUF, monitor, CONTROL, Y0,
                t0, t_end, dt, nsteps_total, every, a, b, c, midpoint, tol, max_iter, Y, status, t_fail, count, stats):
    """Each member's fixed-step time loop (``integrators.integrate_fixed``, ``nsteps_total`` steps): samples into
    Y (k, nt, n). ``monitor`` (``_stop_monitor``) is polled with CONTROL[tid], the row of thread tid."""
    for m in numba.prange(Y0.shape[0]):
        tid = numba.get_thread_id()
        # np.int64(m): numba types the prange index of one of these loops uint64 and of the other int64, which
        # would compile the member's system (and _member_start) once for each
        system, control = _member_start(head, part1, part2, part3, members, scratch, dims, np.int64(m), tid, CONTROL)
        # np.int64, not the literals 0 and 1: a literal argument would compile the whole time loop once more
        # beside ``rm.simulate``'s specialisation of it
        st, tf, cnt, t_out, y_out, nfev, nsteps = integrators.integrate_fixed(
            inputs, key, system, Y0[m], t0, t_end, dt, nsteps_total, every, a, b, c, midpoint, tol, max_iter,
            K[tid, :c.shape[0]], T_BUF[tid, :Y.shape[1]], Y_BUF[tid, :Y.shape[1]], np.inf, monitor, np.int64(0),
            control)
        cnt = min(cnt, Y.shape[1])
        for r in range(cnt):  # (a loop: a slice assignment compiles numba's broadcasting, ``_kernels.arrays``)
            copy_into(Y[m, r], y_out[r], 0)
        Y[m, cnt:] = np.nan
        status[m] = st
        t_fail[m] = tf
        count[m] = cnt
        stats[m, 0] = nfev
        stats[m, 1] = nsteps


@_parallel
def _adaptive_many(inputs, key, head, part1, part2, part3, members, scratch, dims, K, T_BUF, Y_BUF, monitor, CONTROL,
                   Y0, t0, t_end, rtol, atol, first_step, max_step, max_steps, t_eval, a, b, c, e, e3, order, dense,
                   events, directions, terminal, Y, status, t_fail, count, stats, EVENT):
    """Each member's adaptive time loop (``integrators.integrate_adaptive``) with output at t_eval.

    EVENT[m] = (time, state...) of the member's first event, NaN without one; a terminal event's state is not a
    sample (the samples stop at the last t_eval before it).
    """
    for m in numba.prange(Y0.shape[0]):
        tid = numba.get_thread_id()
        system, control = _member_start(head, part1, part2, part3, members, scratch, dims, np.int64(m), tid,
                                        CONTROL)  # (np.int64(m): as in _fixed_many)
        (st, tf, cnt, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t,
         ev_y) = integrators.integrate_adaptive(
            inputs, key, system, Y0[m], t0, t_end, rtol, atol, first_step, max_step, max_steps, t_eval, np.int64(1),
            a, b, c, e, e3, order, dense, K[tid, :c.shape[0]], T_BUF[tid, :Y.shape[1] + 1],
            Y_BUF[tid, :Y.shape[1] + 1], np.inf, events, np.int64(0), directions, terminal, np.empty(4),
            np.empty((4, Y0.shape[1] + 1)), monitor, np.int64(0), control)  # (np.int64: as integrate_fixed's above)
        if st == L.STATUS_EVENT:
            cnt -= 1  # the stop state is the event's, kept in EVENT
        cnt = min(cnt, Y.shape[1])
        for r in range(cnt):  # (a loop: a slice assignment compiles numba's broadcasting, ``_kernels.arrays``)
            copy_into(Y[m, r], y_out[r], 0)
        Y[m, cnt:] = np.nan
        EVENT[m, :] = np.nan
        if nev > 0:
            EVENT[m, 0] = ev_t[0]
            copy_into(EVENT[m], ev_y[0, 1:], 1)
        status[m] = st
        t_fail[m] = tf
        count[m] = cnt
        stats[m, 0] = nfev
        stats[m, 1] = nsteps
        stats[m, 2] = nrejected


_EVENT_ADAPTERS = {}


def _compiled_event_adapter(function, nq, nv):
    """A compiled event callback: values[0] = function(t, q, qd) on the integrated state y = (q (nq), qd (nv),
    work); a non-finite value (``_EVENT_FAILED``) or an exception (``_EVENT_RAISED``: numba passes none out of a C
    callback) stops the member."""
    key = (function, nq, nv)
    if key not in _EVENT_ADAPTERS:
        @numba.cfunc(integrators.CALLBACK)
        def adapter(key, t, y, _, values):
            raised = False
            try:
                value = function(t, y[:nq], y[nq:nq + nv])
            except Exception:  # noqa: BLE001 - numba catches any exception so, and binds none
                raised = True
            if raised:
                return _EVENT_RAISED
            if not math.isfinite(value):
                return _EVENT_FAILED
            values[0] = value
            return L.STATUS_OK
        _EVENT_ADAPTERS[key] = adapter
    return _EVENT_ADAPTERS[key]


# ---- parameters -----------------------------------------------------------------------------------------------------

def _member_values(value, k, shape, name):
    arr = _checks.real_array(value, f"params[{name!r}]")  # complex or string values are refused, not converted
    if arr.shape != (k, *shape):
        raise StateError(f"params[{name!r}] must have shape {(k, *shape)} (one row per member), got {arr.shape}")
    bad = ~np.isfinite(arr.reshape(k, -1))
    if bad.any():
        member = int(np.argwhere(bad)[0][0])
        raise StateError(f"member {member}: params[{name!r}] is not finite ({arr[member]})")
    return arr


def _nonnegative(arr, name):
    if np.any(arr < 0):
        member = int(np.argwhere(arr.reshape(arr.shape[0], -1) < 0)[0][0])
        raise StateError(f"member {member}: params[{name!r}] must be >= 0, got {arr[member]}")
    return arr


def _element(model, target, name, kinds):
    names = model.element_names
    if target not in names:
        raise ModelError(f"params[{name!r}]: {unknown_name('element', target, names)}")
    e = names.index(target)
    element = model._elements[e]
    if element["kind"] not in kinds:
        raise ModelError(f"params[{name!r}]: element {target!r} is a {element['kind']}, this parameter is for "
                         f"{' or '.join(kinds)}")
    if callable(element.get("value")):
        raise ModelError(f"params[{name!r}]: element {target!r} is a function of time, not a constant")
    return e


def member_arrays(model, params, k):
    """Per-member packed model arrays (body_real, gravity, elem_real) with ``params`` applied; see the table.

    Member m's arrays are body_real[m].T, gravity[m] and elem_real[m], read-only: in the kernels they have the
    numba types of ``rm.simulate``'s arrays of a model with 2 bodies or more and at most one element, so the members
    call the very compiled time loop that ``rm.simulate`` compiles (a different layout or a writeable array would
    compile, and cache, the whole chain of kernels under it a second time: measured 40 s of CPU with an empty cache).
    elem_real is row-major: a few numbers per element, read once per evaluation. A Model3D's arrays and parameters
    come from ``spatial_ensemble.spatial_member_arrays``."""
    params = _checks.mapping(params, "params", "name -> per-member values (k rows)")
    for name in params:
        if not isinstance(name, str):
            raise TypeError(f"params keys must be strings, got {name!r}")
    if isinstance(model, Model3D):
        from .spatial_ensemble import spatial_member_arrays  # noqa: PLC0415  (spatial kernels only for spatial models)

        return spatial_member_arrays(model, params, k, _member_values, _nonnegative, _element)
    body_real = np.repeat(np.ascontiguousarray(model.body_real.T)[None], k, axis=0)  # (k, N_REAL, nbodies)
    elem_real = np.repeat(np.ascontiguousarray(model.elem_real)[None], k, axis=0)  # (k, nelements, N_EREAL)
    gravity = np.repeat(np.asarray(model.gravity, dtype=float)[None], k, axis=0)
    n = model.nbodies
    for name, value in params.items():
        kind, _, target = name.partition(":")
        if kind not in PARAMETERS:
            raise ModelError(f"params[{name!r}]: {kind!r} cannot vary per member; the parameters that can: "
                             f"{sorted(PARAMETERS)} (see recursive_mbd.integrate.ensemble)")
        if kind in ("mass", "inertia"):
            column = L.MASS if kind == "mass" else L.INERTIA
            if target:
                body = model.body_index(target)
                body_real[:, column, body] = _nonnegative(_member_values(value, k, (), name), name)
            else:
                body_real[:, column, :] = _nonnegative(_member_values(value, k, (n,), name), name)
        elif kind in ("parent_point", "child_point"):
            if not target:
                raise ModelError(f"params[{name!r}]: name the body, e.g. '{kind}:{model.body_names[0]}'")
            body = model.body_index(target)
            point = _member_values(value, k, (2,), name)
            if kind == "parent_point":  # PPX = parent point - parent's centre of mass (layout)
                parent = int(model.body_parent[body])
                offset = model.body_com[parent] if parent >= 0 else np.zeros(2)
                body_real[:, L.PPX:L.PPX + 2, body] = point - offset
            else:  # COX = centre of mass - child point
                body_real[:, L.COX:L.COX + 2, body] = model.body_com[body] - point
        elif kind == "gravity":
            if target:
                raise ModelError(f"params[{name!r}]: gravity belongs to the model, give 'gravity' with shape (k, 2)")
            gravity[:] = _member_values(value, k, (2,), name)
        elif kind in ("stiffness", "damping", "rest"):
            e = _element(model, target, name, ("spring_damper", "joint_spring_damper"))
            arr = _member_values(value, k, (), name)
            column = {"stiffness": L.EK, "damping": L.EC, "rest": L.EREST}[kind]
            elem_real[:, e, column] = arr if kind == "rest" else _nonnegative(arr, name)
        elif kind == "force":
            e = _element(model, target, name, ("force",))
            elem_real[:, e, L.EPBX:L.EPBX + 2] = _member_values(value, k, (2,), name)
        else:  # torque
            e = _element(model, target, name, ("torque",))
            elem_real[:, e, L.EPBX] = _member_values(value, k, (), name)
    for arr in (body_real, gravity, elem_real):
        arr.flags.writeable = False
    return body_real, gravity, elem_real


# ---- result ---------------------------------------------------------------------------------------------------------

class EnsembleResult:
    """Samples of k simulated members on one time grid.

    Attributes
    ----------
    t : ndarray, shape (nt,)
        Sample times [s] (t0 and t_end included).
    q, qd : ndarray, shape (k, nt, nq)
        Joint coordinates and rates per member; NaN after a member's failure or terminal event.
    dissipated_work, applied_work : ndarray, shape (k, nt)
        As in ``SimulationResult``.
    status : ndarray of str, shape (k,)
        "finished", "event" (a terminal event ended the member at ``t_event``), "failed" (why: ``reasons[m]``),
        "time_limit" (``max_wall_time``) or "interrupted" (Ctrl-C).
    t_stop : ndarray, shape (k,)
        t_end, the event time, or the time at which the member failed or stopped [s] (``SimulationError.t`` of
        ``rm.simulate`` on the same member; for a compiled function that raised, the start of the step in which it
        did, where rm.simulate names the time of the call).
    nsamples : ndarray of int, shape (k,)
        Valid samples per member (the first ``nsamples[m]`` of the grid).
    t_event : ndarray, shape (k,)
        Time of each member's first event (NaN without one); ``q_event``, ``qd_event`` (k, nq) the state there.
    nfev, nsteps, nrejected : ndarray of int, shape (k,)
    success : ndarray of bool, shape (k,)
        Per member, as scipy's ``OdeResult.success``: True when it reached t_end or a terminal event ended it.
    message : ndarray of str, shape (k,)
        Per member, what ended it in words: "the integration reached t_end = 1 s", "a terminal event ended the
        run at t = ...", or when it stopped early when and why ("failed at t = 0.31 s: step size underflow ...").
    """

    def __init__(self, t, q, qd, work, status_codes, t_stop, nsamples, stats, event, method, reasons=None):
        self.t = t
        self.q = q
        self.qd = qd
        self.dissipated_work = work[..., 0]
        self.applied_work = work[..., 1]
        self.status_codes = status_codes
        self.status = np.array([STATUS_NAMES.get(int(s), "failed") for s in status_codes])
        self.t_stop = t_stop
        self.nsamples = nsamples
        self.nfev, self.nsteps, self.nrejected = (stats[:, i].copy() for i in range(3))
        nq, nv = q.shape[2], qd.shape[2]
        self.t_event = event[:, 0].copy()
        self.q_event = event[:, 1:1 + nq].copy()
        self.qd_event = event[:, 1 + nq:1 + nq + nv].copy()
        self.method = method
        self.reasons = reasons if reasons is not None else [""] * len(status_codes)

    @property
    def success(self):
        """Per member: True when it reached t_end or a terminal event ended it (scipy's ``OdeResult.success``)."""
        return np.isin(self.status, SUCCESS_STATUSES)

    @property
    def message(self):
        """Per member: what ended it, in words (scipy's ``OdeResult.message``), with the reason of an early stop."""
        return np.array([f"{status_message(status, t_stop)}: {reason}" if reason else status_message(status, t_stop)
                         for status, t_stop, reason in zip(self.status, self.t_stop, self.reasons, strict=True)])

    @property
    def failed(self):
        """Indices of the members that failed."""
        return np.flatnonzero(self.status == "failed")

    def save(self, path):
        """Write every field to ``path``, exactly that name (an .npz archive whatever the suffix; no suffix is
        added), beside the target first and then renamed onto it (an interrupted save leaves no truncated file).
        ``EnsembleResult.load`` reads it back."""
        write_npz(path, {
            "format": np.array(ENSEMBLE_FORMAT), "version": np.array(_ENSEMBLE_VERSION, dtype=np.int64),
            "t": self.t, "q": self.q, "qd": self.qd,
            "work": np.stack((self.dissipated_work, self.applied_work), axis=-1), "status_codes": self.status_codes,
            "t_stop": self.t_stop, "nsamples": self.nsamples,
            "stats": np.column_stack((self.nfev, self.nsteps, self.nrejected)).astype(np.int64).reshape(-1, 3),
            "event": np.column_stack((self.t_event, self.q_event, self.qd_event)).reshape(self.q.shape[0], -1),
            "method": np.array(self.method), "reasons": np.array(self.reasons, dtype=str)})

    @classmethod
    def load(cls, path):
        """Read a result written by ``save``.

        Raises ResultFileError (a ValueError) naming the file and the entry when it is not an ensemble result
        file, is corrupted or truncated, or its entries disagree (shapes, statuses, sample counts, times); OSError
        when it cannot be opened.
        """
        path = os.fspath(path)
        archive = ResultArchive(path, read_npz(path, "EnsembleResult.save"))
        fail, entry = archive.fail, archive.entry
        archive.check_format(ENSEMBLE_FORMAT, (_ENSEMBLE_VERSION,), "EnsembleResult.save")
        t = archive.times()
        nt = t.size
        q = entry("q", "f", 3, (None, nt, None), finite=False)
        k, nq = q.shape[0], q.shape[2]
        qd = entry("qd", "f", 3, (k, nt, None), finite=False)  # (k, nt, nv): a Model3D's nv may differ from nq
        work = entry("work", "f", 3, (k, nt, 2), finite=False)
        codes = archive.counts("status_codes", (k,), "member statuses")
        nsamples = archive.counts("nsamples", (k,), "samples per member")
        stats = archive.counts("stats", (k, 3), "evaluations, steps, rejected steps")
        t_stop = entry("t_stop", "f", 1, (k,))
        event = entry("event", "f", 2, (k, 1 + nq + qd.shape[2]), finite=False)
        method = str(entry("method", "U", 0))
        reasons = [str(r) for r in entry("reasons", "U", 1, (k,))]
        result = cls(t, q, qd, work, codes, t_stop, nsamples, stats, event, method, reasons)
        for m in range(k):
            status, count = result.status[m], int(nsamples[m])
            if count > nt or (status == "finished" and count != nt):
                fail(f"entry 'nsamples': member {m} ({status}) has {count} samples of {nt}")
            if not t[0] <= t_stop[m] <= t[-1] or (status == "finished" and t_stop[m] != t[-1]):
                fail(f"entry 't_stop': member {m} ({status}) stopped at t = {t_stop[m]:.9g} s, expected "
                     + (f"the end of the samples, {t[-1]:.9g} s" if status == "finished" else
                        f"a time within the samples' {t[0]:.9g} .. {t[-1]:.9g} s"))
            if (reasons[m] == "") != (status in ("finished", "event")):
                fail(f"entry 'reasons': member {m} ({status}) has reason {reasons[m]!r}")
            for name, values in (("q", q), ("qd", qd), ("work", work)):
                if not (np.all(np.isfinite(values[m, :count])) and np.all(np.isnan(values[m, count:]))):
                    fail(f"entry {name!r}: member {m} must hold finite values in its {count} samples and NaN "
                         "after them")
            row = event[m]
            if not (np.all(np.isnan(row)) or (np.all(np.isfinite(row)) and t[0] <= row[0] <= t_stop[m])):
                fail(f"entry 'event': member {m}'s event must be all NaN (none) or finite, at a time within "
                     f"{t[0]:.9g} .. {t_stop[m]:.9g} s")
        return result

    def to_xarray(self):
        """An ``xarray.Dataset`` with dimensions (member, time, coordinate) (needs the optional ``xarray``)."""
        try:
            import xarray  # noqa: PLC0415 - optional extra
        except ImportError as err:
            raise ModuleNotFoundError(f"to_xarray() needs xarray: {_checks.install_hint('xarray')}") from err
        dims = ("member", "time", "coordinate")
        return xarray.Dataset(
            {"q": (dims, self.q), "qd": (dims, self.qd),
             "dissipated_work": (dims[:2], self.dissipated_work), "applied_work": (dims[:2], self.applied_work),
             "status": ("member", self.status), "t_stop": ("member", self.t_stop),
             "t_event": ("member", self.t_event)},
            coords={"time": self.t, "member": np.arange(self.q.shape[0]), "coordinate": np.arange(self.q.shape[2])},
            attrs={"method": self.method})

    def __repr__(self):
        counts = {s: int(np.sum(self.status == s)) for s in ("finished", "event", "failed", "time_limit",
                                                              "interrupted")}
        stopped = "".join(f", {counts[s]} {s}" for s in ("time_limit", "interrupted") if counts[s])
        return (f"<EnsembleResult {self.method}: {_checks.counted(self.q.shape[0], 'member')} x "
                f"{_checks.counted(self.t.size, 'sample')}, {counts['finished']} finished, "
                f"{_checks.counted(counts['event'], 'event')}, {counts['failed']} failed{stopped}>")


# ---- simulate_many --------------------------------------------------------------------------------------------------

def _fixed_grid(t0, t_end, dt, nsteps, every):
    """The sample times of ``integrators.integrate_fixed`` taking ``nsteps`` steps: t0, every ``every``-th step,
    t_end."""
    times = [t0]
    for step in range(nsteps):
        if (step + 1) % every == 0 or step == nsteps - 1:
            times.append(t_end if step == nsteps - 1 else t0 + (step + 1) * dt)
    return np.array(times)


def _tau_table(model, tau, k):
    """(callback source, per-member constant tau (k, nq); (k, nv) for a Model3D)."""
    spatial = isinstance(model, Model3D)
    if tau is None or callable(tau):
        if callable(tau) and not isinstance(tau, CPUDispatcher):
            raise TypeError("simulate_many: tau as a function must be numba-compiled (@numba.njit), tau(t) or "
                            "tau(t, q, qd) returning (nq,); a Python function would need the GIL in every member")
        return tau, np.zeros((k, model.nv if spatial else model.nq))
    arr = _checks.real_array(tau, "tau")
    if arr.ndim == 1:
        arr = np.repeat(arr[None] if spatial else as_vector(model, arr, "tau")[None], k, axis=0)
    return None, as_rows(model, arr, "tau", k, rates=True)


def simulate_many(model, Q0, QD0, t_end, method="dopri5", rtol=1e-9, atol=1e-12, *, t0=0.0, dt=None, t_eval=None,
                  every=1, max_step=np.inf, first_step=None, max_steps=10_000_000, tau=None, params=None, events=None,
                  max_wall_time=None):
    """Integrate k members of one model at once, in parallel: member m starts from (Q0[m], QD0[m]).

    Parameters
    ----------
    model : Model or Model3D
        A tree (closed loops are not supported here), without drivers, contacts or Python time functions.
    Q0, QD0 : array_like, shape (k, nq)
        Initial joint coordinates and rates, one member per row; a Model3D's Q0 (k, nq) (each quaternion off unit
        norm by more than 1e-12 normalised with a RuntimeWarning, as ``rm.simulate`` does) and QD0 (k, nv), and
        q (k, nt, nq) with unit quaternions, qd (k, nt, nv) in the result.
    t_end : float
        Final time [s].
    method : {"dopri5", "rk4", "implicit_midpoint"}
        As in ``rm.simulate``: dopri5 (adaptive, ``rtol``, ``atol``, output at ``t_eval``, default 101 equally
        spaced times), or a fixed step ``dt`` storing every ``every``-th step.
    tau : array_like (nq,) or (k, nq), or numba-compiled function, optional
        Joint forces ((nv,) or (k, nv) on a Model3D): the same for all, one row per member, or ``tau(t)`` /
        ``tau(t, q, qd)`` compiled with numba.
        A compiled function that raises, or returns a non-finite value or the wrong shape, stops its member
        ("failed"; numba passes no exception out of the parallel members: ``reasons[m]`` says that it raised,
        ``rm.simulate`` of the member shows the exception).
    params : dict, optional
        Per-member model parameters, name -> (k, ...) array (table in ``recursive_mbd.integrate.ensemble``; a
        Model3D's in ``recursive_mbd.integrate.spatial_ensemble``).
    max_wall_time : float, optional
        Wall-clock limit [s]: members still running then stop with status "time_limit" and their samples so far.
    events : numba-compiled function, optional
        ``g(t, q, qd) -> float`` (dopri5): each member's first zero crossing is located on the dense output and
        recorded in ``t_event``, ``q_event``, ``qd_event``; ``g.terminal = True`` ends the member there, and
        ``g.direction`` selects rising (> 0) or falling (< 0) crossings, as in ``rm.simulate``. One that raises
        or returns a non-finite value stops its member, as a failing tau does.

    Returns
    -------
    EnsembleResult
        Member m equals ``rm.simulate`` of the same member to round-off (the same compiled loop runs). A member
        that fails is marked "failed" with its time and reason (``reasons[m]``) and keeps its samples so far; the
        others run on. Ctrl-C raises ``KeyboardInterrupt`` with the result so far in ``.result``.

    Raises
    ------
    TypeError, StateError, ModelError, ValueError
        Before any member runs, for what ``rm.simulate`` refuses, through the same checks: complex, string or
        object values in Q0, QD0, tau or params (never converted), a string or a bool for a number, a fraction for
        a count (every, max_steps), a non-finite or unsorted t_eval, the errors naming the argument (and member).
    """
    spatial = isinstance(model, Model3D)
    if spatial:
        from ..dynamics.spatial import workspace as spatial_workspace  # noqa: PLC0415  (spatial kernels: spatial only)
        from .spatial_ensemble import checked_starts, thread_scratch  # noqa: PLC0415
        from .spatial_loop import SpatialTimeLoop, _SpatialInputs  # noqa: PLC0415

        spatial_workspace(model)
    else:
        workspace(model)
    if model.loop_int.shape[0]:
        raise ModelError("simulate_many does not handle closed loops; run rm.simulate per member (or rm.sweep)")
    if model.has_contacts:
        raise ModelError("simulate_many does not handle contacts yet; run rm.simulate per member")
    if model.element_functions:
        names = [entry[3] for entry in model.element_functions]
        raise ModelError(f"simulate_many: elements {names} are Python functions of time (they need the GIL); give "
                         "them constant values and vary them with params")
    nq = model.nq
    nv = model.nv if spatial else nq
    if nv == 0:
        raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
    if method not in ("dopri5", "rk4", "implicit_midpoint"):
        raise ValueError(f"simulate_many supports 'dopri5', 'rk4' and 'implicit_midpoint', not {method!r}")
    Q0 = as_rows(model, Q0, "Q0")
    k = Q0.shape[0]
    QD0 = as_rows(model, QD0, "QD0", k, rates=True)
    if spatial:
        Q0 = checked_starts(model, Q0, QD0)
    tau_function, tau_const = _tau_table(model, tau, k)
    body_real, gravity, elem_real = member_arrays(model, params, k)
    t0, t_end = check_time_span(t0, t_end)
    # the checks of rm.simulate's options, so that a member refuses what a single run refuses
    rtol, atol, every, max_step, first_step, max_steps, _, _, t_eval, _ = _checks.run_options(
        rtol=rtol, atol=atol, every=every, max_step=max_step, first_step=first_step, max_steps=max_steps,
        t_eval=t_eval)
    fixed = method in FIXED_STEP
    if fixed and dt is None:
        raise ValueError(f"method {method!r} is fixed-step: give a finite dt > 0, got {dt}")
    if fixed:
        dt = positive(dt, "dt")
        if t_eval is not None:
            raise ValueError(f"t_eval needs method 'dopri5' (dense output); {method} stores every-th step (every=)")
    if not fixed and dt is not None:
        raise ValueError("dt is for fixed-step methods; dopri5 chooses its steps from rtol and atol")
    if events is not None and (fixed or not isinstance(events, CPUDispatcher)):
        raise TypeError("simulate_many: events must be one numba-compiled function g(t, q, qd) -> float, with "
                        "method='dopri5'")

    inputs = _SpatialInputs(model, tau_function) if spatial else _Inputs(model, tau_function, None)
    callback = integrators.no_inputs if tau_function is None else _compiled_tau_adapter(tau_function,
                                                                                       inputs.tau_arity)
    n = nq + nv + 2
    Y0 = np.zeros((k, n))
    Y0[:, :nq] = Q0
    Y0[:, nq:nq + nv] = QD0
    threads = numba.config.NUMBA_NUM_THREADS
    if spatial:  # the system rm.simulate builds (its time loop's), with each member's arrays and scratch swapped in
        loop = SpatialTimeLoop(model, inputs)
        template, joint_states = loop.system, loop.joint_states
        scratch = thread_scratch(template, threads)
        dims = np.zeros(0, dtype=np.int64)
    else:
        template, joint_states = build_system(model, inputs), None
        nb, ne = model.nbodies, model.elem_int.shape[0]
        width, nw = template.ws.shape[1], template.wrench.shape[0]
        dims = np.array([nq, nb, ne, nw, inputs.size, width], dtype=np.int64)
        scratch = (per_thread(threads, inputs.size), per_thread(threads, nq), per_thread(threads, nq),
                   per_thread(threads, nq), per_thread(threads, width, nb), per_thread(threads, nb, 4),
                   per_thread(threads, nw, 3), per_thread(threads, nq), per_thread(threads, 3),
                   per_thread(threads, ne, 3), per_thread(threads, nq), per_thread(threads, nq))
    if tau_function is not None:  # a first evaluation in Python: a wrong shape is reported here, not in a thread
        try:
            value = np.asarray(tau_function(t0) if inputs.tau_arity == 1 else tau_function(t0, Q0[0], QD0[0]))
        except Exception:  # noqa: BLE001 - member 0's own failure: it stops that member, as at any other time
            value = np.zeros(nv)
        if value.shape != (nv,):
            raise StateError(f"tau function must return shape ({nv},), got {value.shape}")
    shared = (callback, 0, *system_parts(template), (body_real, gravity, elem_real, tau_const), scratch, dims)
    if max_wall_time is not None:
        max_wall_time = positive(max_wall_time, "max_wall_time")
    return _run(model, method, fixed, shared, threads, Y0, k, n, nq, nv, joint_states, t0, t_end, dt, every, t_eval,
                rtol, atol, first_step, max_step, max_steps, events, max_wall_time,
                getattr(inputs, "tau_name", "tau"))


def _wait_for(kernel, args, control, chunk_size, max_wall_time):
    """Run ``kernel(*args)`` on a helper thread (the kernels release the GIL) while this thread waits, so that Ctrl-C
    and the wall-clock limit reach the members: they are written into control[:, _STOP] (``_stop_monitor``).
    Returns True when Ctrl-C was pressed."""
    failure = []
    done = threading.Event()  # not Thread.join: a join interrupted by Ctrl-C can report a running thread as ended

    nthreads = numba.get_num_threads()  # the caller's numba.set_num_threads, a per-thread setting like the chunk size

    def work():
        numba.set_num_threads(nthreads)
        previous = numba.set_parallel_chunksize(chunk_size)
        try:
            kernel(*args)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread, which raises it
            failure.append(err)
        finally:
            numba.set_parallel_chunksize(previous)
            done.set()

    deadline = None if max_wall_time is None else time.perf_counter() + max_wall_time
    interrupted = False
    # A kernel's first compilation (the event and tau adapters are first-class functions) made numba print
    # "First-class function type feature is experimental" twice into the user's output; it says nothing about the
    # run. The filter is held here, in the waiting thread, for the whole run: the warning filters are global.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=NumbaExperimentalFeatureWarning)
        worker = threading.Thread(target=work, name="simulate_many", daemon=True)
        worker.start()
        while not done.is_set():
            try:
                done.wait(_WAIT_INTERVAL)
            except KeyboardInterrupt:
                interrupted = True
                control[:, _STOP] = L.STATUS_INTERRUPTED
                continue
            if deadline is not None and not interrupted and time.perf_counter() > deadline:
                control[:, _STOP] = L.STATUS_TIME_LIMIT
        worker.join()
    if failure:
        raise failure[0]
    return interrupted


def _run(model, method, fixed, shared, threads, Y0, k, n, nq, nv, joint_states, t0, t_end, dt, every, t_eval, rtol,
         atol, first_step, max_step, max_steps, events, max_wall_time, tau_name):
    """Validate the time arguments, run the ensemble kernel, collect the result (q, qd of the samples through
    ``joint_states`` when given: a Model3D's quaternions renormalised as ``rm.simulate`` reports them)."""
    status = np.zeros(k, dtype=np.int64)
    t_stop = np.zeros(k)
    count = np.zeros(k, dtype=np.int64)
    stats = np.zeros((k, 3), dtype=np.int64)
    event = np.full((k, 1 + n), np.nan)
    control = per_thread(threads, 3)  # CONTROL: one polling row per thread (``_stop_monitor``)
    # members differ in cost (adaptive steps, early failures, terminal events): hand them out in small chunks
    chunk_size = max(1, k // (32 * threads))
    if fixed:
        nsteps_total = fixed_step_count(t0, t_end, dt, max_steps)
        times = _fixed_grid(t0, t_end, dt, nsteps_total, every)
        midpoint = method == "implicit_midpoint"
        tableau = RK4 if midpoint else TABLEAUS[method]
        Y = np.empty((k, times.size, n))
        args = (*shared, per_thread(threads, tableau.C.size, n), per_thread(threads, times.size),
                per_thread(threads, times.size, n), _stop_monitor, control, Y0, t0, t_end, dt, nsteps_total,
                every, tableau.A, tableau.B, tableau.C, midpoint, 1e-13, 50, Y, status, t_stop, count, stats)
        interrupted = _wait_for(_fixed_many, args, control, chunk_size, max_wall_time)
    else:
        times = checked_t_eval(np.linspace(t0, t_end, 101) if t_eval is None else t_eval, t0, t_end)
        first_step = 0.0 if first_step is None else first_step
        if events is not None:
            events_fn = _compiled_event_adapter(events, nq, nv)
            directions = np.array([float(getattr(events, "direction", 0.0))])
            terminal = np.array([bool(getattr(events, "terminal", False))], dtype=np.uint8)
        else:
            events_fn, directions, terminal = integrators.no_inputs, np.zeros(0), np.zeros(0, dtype=np.uint8)
        Y = np.empty((k, times.size, n))
        tab = DOPRI5
        args = (*shared, per_thread(threads, tab.C.size, n), per_thread(threads, times.size + 1),
                per_thread(threads, times.size + 1, n), _stop_monitor, control, Y0, t0, t_end, rtol,
                atol, first_step, max_step, max_steps, times, tab.A, tab.B, tab.C, tab.E, np.empty(0),
                tab.order, tab.DENSE, events_fn, directions, terminal, Y, status, t_stop, count, stats, event)
        interrupted = _wait_for(_adaptive_many, args, control, chunk_size, max_wall_time)
    event_name = "" if events is None else _function_name(events)
    reasons = [_reason(model, int(s), max_steps, max_wall_time, tau_name, event_name) for s in status]
    event_state = np.full((k, 1 + nq + nv), np.nan)
    event_state[:, 0] = event[:, 0]
    event_state[:, 1:] = event[:, 1:1 + nq + nv]
    q, qd = Y[:, :, :nq], Y[:, :, nq:nq + nv]
    if joint_states is not None:
        q, qd = (part.reshape(k, times.size, -1) for part in joint_states(times, Y.reshape(k * times.size, n)))
    result = EnsembleResult(times, q, qd, Y[:, :, nq + nv:], status, t_stop, count, stats, event_state, method,
                            reasons)
    if interrupted:
        stopped = int(np.sum(result.status == "interrupted"))
        interrupt = KeyboardInterrupt(f"simulate_many interrupted: {stopped} of {k} members stopped early; the "
                                      "samples so far are kept in .result")
        interrupt.result = result
        raise interrupt
    return result


def _reason(model, status, max_steps, max_wall_time=None, tau_name="tau", event_name=""):
    """Why a member stopped, in words ('' for a finished run or a terminal event)."""
    kind, index = L.decode_status(status)
    if kind in (L.STATUS_OK, L.STATUS_EVENT):
        return ""
    reasons = {
        L.STATUS_STEP_UNDERFLOW: "step size underflow (the solution blows up or the problem is too stiff)",
        L.STATUS_MAX_STEPS: f"more than max_steps = {max_steps} steps",
        L.STATUS_NONFINITE_STATE: "the state became non-finite (blow-up; try a smaller dt)",
        L.STATUS_NO_CONVERGENCE: "the implicit iteration did not converge",
        L.STATUS_INTERRUPTED: "interrupted (Ctrl-C)",
        L.STATUS_TIME_LIMIT: f"the wall-clock limit max_wall_time = {max_wall_time} s was reached",
    }
    if kind in reasons:
        return reasons[kind]
    if kind == L.STATUS_INPUT_FAILED:
        # numba passes no exception out of the parallel members: rm.simulate of the member shows it
        raised = "raised an exception (its message stays in compiled code: rm.simulate of this member shows it)"
        return {L.INPUT_NONFINITE: f"the compiled tau function {tau_name} returned a non-finite value",
                L.INPUT_SHAPE: f"the compiled tau function {tau_name} returned the wrong number of values",
                L.INPUT_COMPILED_RAISED: f"the compiled tau function {tau_name} {raised}",
                L.INPUT_EVENT_NONFINITE: f"the compiled event function {event_name} returned a non-finite value",
                L.INPUT_EVENT_RAISED: f"the compiled event function {event_name} {raised}",
                }.get(index, f"a compiled user function failed (reason {index})")
    if kind in (L.STATUS_NONFINITE_Q, L.STATUS_NONFINITE_QD, L.STATUS_NONFINITE_TAU, L.STATUS_OVERFLOW,
                L.STATUS_SINGULAR):
        try:
            raise_kernel_status(model, status)
        except (ModelError, StateError) as err:
            return str(err)
    return f"kernel status {status} (kind {kind}, index {index})"  # not expected without loops
