"""What every run of a planar or spatial time loop shares, below the method drivers.

``simulate`` (the explicit, midpoint and scipy methods, bdf through its segment runner) and the generalised-alpha
runs (``implicit``, ``spatial_implicit``, through ``newton``) build a run from these pieces, so that the method
modules import this module and not each other: the checked start (``check_finite_start``, ``start_state``), the
inputs of a run (``_Inputs``: time-varying elements, tau functions, drivers, reaching the compiled loops through
one callback), the recursive formulation's system and state map (``build_system``, ``RecursiveTimeLoop``), event
functions (``_Events``), the monitor that stops a run on Ctrl-C or its wall-clock limit (``_RunControl``), the
option and time-span checks, the end of a run (``close_run``: events; ``raise_if_interrupted``: Ctrl-C, raised
before the result is built), the run of a compiled loop with its progress shown (``_run_loop``), the output
budget of a run (``output_budget``: what its samples may take, so that a run that would outgrow memory stops with
its samples kept) and the error of a run that failed (``_raise_failure``). The result of a run
(``SimulationResult``, ``_make_result``) and its file format live beside it, in ``result``.

A user function that fails stops the run: the bridge keeps its exception and the compiled loop returns a status,
so the run raises SimulationError from it with the samples so far.
"""

import itertools
import logging
import math
import os
import signal
import sys
import threading
import time
import weakref

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from .. import _checks
from .._kernels import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .._kernels import layout as L
from .._kernels.layout import N_CSTATE
from .._kernels.planar.contact import MIN_IMPACT_STEPS, N_PER_CONTACT
from .._kernels.planar.system import ChainSystem, PlainChainSystem, RecursiveSystem, TreeSystem
from .._kernels.timeloops import integrators
from ..dynamics._evaluation import as_vector, element_inputs
from ..errors import ModelError, SimulationError, StateError
from ..model.spatial import Model3D
from ..model.workspace import bare_tree_forward_dynamics, workspace
from .kernel_status import raise_kernel_status

logger = logging.getLogger("recursive_mbd")

# ---- inputs: time-varying elements, tau as a function, drivers --------------------------------------------------

# key -> _Inputs of a run, called from compiled code through the bridge; weak, so a run's inputs live exactly as
# long as the run and its result
_PYTHON_INPUTS = weakref.WeakValueDictionary()
_KEYS = itertools.count(1)


def _call_python_inputs(key, t, q, qd, u):
    """Run the Python callback registered under ``key``; returns its status (None: STATUS_OK).

    An exception cannot cross compiled code (numba would print it as "Exception ignored" and go on): it is kept
    on the callback's ``failure``, with the time, and the run stops with STATUS_INPUT_FAILED.
    """
    target = _PYTHON_INPUTS.get(key)
    if target is None:  # pragma: no cover - the run holds its callbacks alive
        return L.STATUS_INPUT_FAILED
    try:
        return int(target(t, q, qd, u) or 0)
    except BaseException as exc:  # noqa: BLE001 - every exception, KeyboardInterrupt included, ends the run
        target.failure = (exc, float(t))
        return L.STATUS_INPUT_FAILED


@numba.njit(cache=True)
def _call_python(key, t, q, qd, u):
    with numba.objmode(status="int64"):
        status = _call_python_inputs(key, t, q, qd, u)
    return status


@numba.cfunc(integrators.CALLBACK)  # not cached: numba cannot reload a C callback that enters object mode
def _python_bridge(key, t, q, qd, u):
    """Callback that leaves compiled code to run the Python callable registered under ``key``."""
    return _call_python(key, t, q, qd, u)


_NONFINITE_INPUT = L.STATUS_INPUT_FAILED | (L.INPUT_NONFINITE << 4)
_WRONG_SHAPE_INPUT = L.STATUS_INPUT_FAILED | (L.INPUT_SHAPE << 4)
_RAISED_INPUT = L.STATUS_INPUT_FAILED | (L.INPUT_COMPILED_RAISED << 4)


_TAU_ADAPTERS = {}


@numba.njit(cache=True)
def _store_tau(value, u):
    """Copy the value of a compiled tau function into u (tau alone: no other inputs): STATUS_OK, or the input
    status that stops the run when its size is wrong or a value is not finite."""
    if value.shape[0] != u.shape[0]:
        return _WRONG_SHAPE_INPUT
    for k in range(u.shape[0]):
        if not math.isfinite(value[k]):
            return _NONFINITE_INPUT
        u[k] = value[k]
    return L.STATUS_OK


@numba.njit(cache=True)
def _compiled_tau_raised(key, t, q, qd, u):
    """The status of a compiled tau function that raised at (t, q, qd), which stops the run.

    numba passes no exception out of a C callback (it would print "Exception ignored" and go on with u as it
    was), so the adapter catches it, and its message is recovered here: for a run whose inputs are registered
    under ``key`` (``_Inputs.callback``), the same call is made again from Python through the bridge, which keeps
    the exception as for a Python tau. Without a key (an ensemble's parallel members: no Python there), or when
    the call from Python does not raise again, the status says only that it raised (INPUT_COMPILED_RAISED)."""
    if key != 0:
        status = _call_python(key, t, q, qd, u)
        if status != L.STATUS_OK:
            return status
    return _RAISED_INPUT


def _compiled_tau_adapter(function, arity):
    """A compiled input callback calling the compiled ``function`` (tau(t) or tau(t, q, qd)) into u[:nq]; an
    exception it raises stops the run (``_compiled_tau_raised``)."""
    key = (function, arity)
    if key not in _TAU_ADAPTERS:
        if arity == 1:
            @numba.cfunc(integrators.CALLBACK)
            def adapter(key, t, q, qd, u):
                raised = False
                try:
                    value = function(t)
                except Exception:  # noqa: BLE001 - numba catches any exception so, and binds none
                    raised = True
                if raised:
                    return _compiled_tau_raised(key, t, q, qd, u)
                return _store_tau(value, u)
        else:
            @numba.cfunc(integrators.CALLBACK)
            def adapter(key, t, q, qd, u):
                raised = False
                try:
                    value = function(t, q, qd)
                except Exception:  # noqa: BLE001 - numba catches any exception so, and binds none
                    raised = True
                if raised:
                    return _compiled_tau_raised(key, t, q, qd, u)
                return _store_tau(value, u)
        _TAU_ADAPTERS[key] = adapter
    return _TAU_ADAPTERS[key]


_INPUT_ADAPTERS = {}


@numba.njit(cache=True)
def _no_compiled_inputs(key, t, q, qd, u):
    """The first link of a chain of compiled input functions (``_compiled_inputs_adapter``): nothing to fill."""
    return L.STATUS_OK


@numba.njit(cache=True)
def _compiled_input_failed(key, t, q, qd, u, status):
    """The status of a compiled input function that raised or returned a bad value at (t, q, qd) (``status``),
    which stops the run. For a run whose inputs are registered under ``key``, the same inputs are evaluated again
    from Python through the bridge, whose exception names the function (the element, tau) and what it did; when
    that call does not fail (a function whose result depends on more than its arguments), ``status`` says only how
    it failed. (Its callers pass ``status`` as np.int64: a literal constant would compile it once per status.)"""
    if key != 0:
        recalled = _call_python(key, t, q, qd, u)
        if recalled != L.STATUS_OK:
            return recalled
    return status


@numba.njit(cache=True)
def _store_input(key, t, q, qd, u, value, slot, width):
    """Copy ``value`` (an array or a tuple) into u[slot:slot + width]: STATUS_OK, or the failure of a wrong size or
    a non-finite entry (``_compiled_input_failed``)."""
    if len(value) != width:
        return _compiled_input_failed(key, t, q, qd, u, np.int64(_WRONG_SHAPE_INPUT))
    for k in range(width):
        x = float(value[k])
        if not math.isfinite(x):
            return _compiled_input_failed(key, t, q, qd, u, np.int64(_NONFINITE_INPUT))
        u[slot + k] = x
    return L.STATUS_OK


def _compiled_input_step(function, nargs, slot, width, previous):
    """A compiled link of a chain of input functions: ``previous``, then ``function`` (f(t) or f(t, q, qd)) into
    u[slot:slot + width]."""
    if nargs == 1:
        @numba.njit
        def step(key, t, q, qd, u):
            status = previous(key, t, q, qd, u)
            if status != L.STATUS_OK:
                return status
            raised = False
            try:
                value = function(t)
            except Exception:  # noqa: BLE001 - numba catches any exception so, and binds none
                raised = True
            if raised:
                return _compiled_input_failed(key, t, q, qd, u, np.int64(_RAISED_INPUT))
            return _store_input(key, t, q, qd, u, value, np.int64(slot), np.int64(width))  # not literals: one compile
    else:
        @numba.njit
        def step(key, t, q, qd, u):
            status = previous(key, t, q, qd, u)
            if status != L.STATUS_OK:
                return status
            raised = False
            try:
                value = function(t, q, qd)
            except Exception:  # noqa: BLE001 - numba catches any exception so, and binds none
                raised = True
            if raised:
                return _compiled_input_failed(key, t, q, qd, u, np.int64(_RAISED_INPUT))
            return _store_input(key, t, q, qd, u, value, np.int64(slot), np.int64(width))  # not literals: one compile
    return step


def _compiled_inputs_adapter(entries):
    """A compiled input callback that calls every compiled function of ``entries`` ((function, arity, slot, width,
    name), the model's element functions and tau) into its slots of u, without leaving compiled code. A function
    that numba cannot call so (its result not 'width' floats, its arguments of other types) is a TypeError naming
    it, before the run."""
    key = tuple(entry[:4] for entry in entries)
    if key not in _INPUT_ADAPTERS:
        chain = _no_compiled_inputs
        for function, nargs, slot, width, name in entries:
            chain = _compiled_input_step(function, nargs, slot, width, chain)
            try:
                chain.compile(integrators.CALLBACK.args)
            except numba.core.errors.NumbaError as err:
                args = "(t)" if nargs == 1 else "(t, q, v)"
                raise TypeError(f"{name}: a compiled function must take {args} (a float64 and float64 arrays) and "
                                f"return {width} floats (an array or a tuple) in compiled code; numba could not "
                                "compile the call (its error is the cause of this one)") from err
        last = chain

        @numba.cfunc(integrators.CALLBACK)
        def adapter(key, t, q, qd, u):
            return last(key, t, q, qd, u)

        _INPUT_ADAPTERS[key] = adapter
    return _INPUT_ADAPTERS[key]


def _derivatives(function, step=1e-3):
    """f, f' and f'' of a scalar function of time, the derivatives by 4th-order central differences.

    With step 1e-3 the truncation error is about 3e-14 |f^(5)| for f' and 1e-14 |f^(6)| for f''; round-off
    about 3e-13 |f| and 1e-9 |f|: give the derivatives explicitly where that is not enough.
    """

    def evaluate(t):
        fm2, fm1, f0, fp1, fp2 = (float(function(t + k * step)) for k in (-2, -1, 0, 1, 2))
        first = (fm2 - 8.0 * fm1 + 8.0 * fp1 - fp2) / (12.0 * step)
        second = (-fm2 + 16.0 * fm1 - 30.0 * f0 + 16.0 * fp1 - fp2) / (12.0 * step * step)
        return f0, first, second

    return evaluate


def _given_derivatives(f, f_dot, f_ddot):
    def evaluate(t):
        return float(f(t)), float(f_dot(t)), float(f_ddot(t))

    return evaluate


class _Inputs:
    """Everything time-varying of one run, laid out in the input vector u:

    [model element slots | tau (nq) if tau is a function | f, f', f'' of each driver].

    ``failure`` keeps (exception, t) of a call from compiled code that failed (``_call_python_inputs``).
    """

    failure = None
    spatial = False  # a Model3D's inputs (``_SpatialInputs``): tau of size nv, drivers' rates in v

    def __init__(self, model, tau, drivers):
        offset = self._take_tau(model, tau, model.nq, lambda value: as_vector(model, value, "tau"))
        self._take_drivers(model, drivers, offset, model.joint_ndof, model.joint_q_index, model.joint_q_index)
        self.has_python = self._needs_python()

    def _take_drivers(self, model, drivers, offset, joint_ndof, q_index, v_index):
        """The drivers of a run, ``drivers`` (body -> f(t) or (f, f', f'')), their (f, f', f'') in u from slot
        ``offset`` on: ``drivers`` [(coordinate in q, body name, evaluate(t) -> (f, f', f''))] sorted,
        ``driven_rates`` (nd,) their rates' indices (in qd, or a Model3D's v), ``driven`` (nbodies,) flags, or (0,)
        without drivers. ``joint_ndof``, ``q_index``, ``v_index``: per body its joint's degrees of freedom and the
        index of its first coordinate in q and in the rates."""
        self.driver_offset = offset
        entries = []
        driven = np.zeros(model.nbodies, dtype=np.uint8)
        for body, spec in _checks.mapping(drivers, "drivers", "body (index or name) -> f(t) or (f, f', f'')").items():
            index = model.body_index(body)
            name = model.body_names[index]
            if joint_ndof[index] != 1:
                raise ModelError(f"driver of body {name!r}: only revolute and prismatic joints can be driven")
            if driven[index]:
                raise ModelError(f"driver of body {name!r}: given twice")
            driven[index] = 1
            if callable(spec):
                evaluate = _derivatives(spec)
            elif isinstance(spec, (tuple, list)) and len(spec) == 3 and all(callable(f) for f in spec):
                evaluate = _given_derivatives(*spec)
            else:
                raise TypeError(f"driver of body {name!r}: give f(t) or a tuple (f, f', f'') of functions")
            entries.append((int(q_index[index]), name, evaluate, int(v_index[index])))
        entries.sort(key=lambda entry: entry[0])
        self.drivers = [entry[:3] for entry in entries]
        self.driven_rates = np.array([entry[3] for entry in entries], dtype=np.int64)
        self.driven = driven if self.drivers else np.zeros(0, dtype=np.uint8)
        self.driven_coords = np.array([c for c, _, _ in self.drivers], dtype=np.int64)
        self.size = offset + 3 * len(self.drivers)

    def _take_tau(self, model, tau, ntau, vector):
        """The tau fields of a run on ``model`` with ntau generalised forces: ``tau`` a function (its ntau slots of u
        after the model's element slots), a constant (``vector(tau)``: the (ntau,) array, its shape checked) or
        None (zeros). Returns the first slot of u after them."""
        self.model = model
        self.ntau = ntau
        self.tau_const = np.zeros(ntau)
        self.tau_function = None
        self.tau_arity = 0
        self.tau_offset = -1
        offset = model.n_element_inputs
        if callable(tau):
            self.tau_function = tau
            self.tau_name = _function_name(tau)
            self.tau_arity = _checks.arity(tau, "tau")
            self.tau_offset = offset
            offset += ntau
        elif tau is not None:
            value = vector(tau).copy()
            if not np.all(np.isfinite(value)):
                raise StateError(f"tau[{int(np.flatnonzero(~np.isfinite(value))[0])}] is not finite")
            self.tau_const = value
        return offset

    def _needs_python(self):
        """Whether the compiled loop must call back into Python for these inputs (``callback``): drivers, a tau
        function that numba has not compiled, or the model's element functions (a Model3D's: unless every one of
        them is compiled)."""
        functions = self.model.element_functions
        compiled = self.spatial and all(isinstance(entry[2], CPUDispatcher) for entry in functions)
        return bool(self.drivers) or (bool(functions) and not compiled) or (
            self.tau_function is not None and not isinstance(self.tau_function, CPUDispatcher))

    def __call__(self, t, q, qd, u):
        """Fill u at time t; driver values also go into q and qd before tau(t, q, qd) sees them."""
        element_inputs(self.model, t, u, q, qd)
        for j, (coord, name, evaluate) in enumerate(self.drivers):
            value = _checks.driver_value(name, evaluate, t)
            slot = self.driver_offset + 3 * j
            u[slot:slot + 3] = value
            q[coord], qd[self.driven_rates[j]] = value[0], value[1]
        if self.tau_function is not None:
            try:
                value = self.tau_function(t) if self.tau_arity == 1 else self.tau_function(t, q, qd)
            except Exception as err:  # noqa: BLE001
                raise StateError(f"tau function {self.tau_name} raised at t = {t:g}: {err!r}") from err
            try:
                value = np.asarray(value, dtype=float).reshape(-1)
            except (TypeError, ValueError) as err:
                raise StateError(f"tau function must return {self.ntau} finite numbers ({self.tau_name} at "
                                 f"t = {t:g} returned {_short(value)})") from err
            nq = self.ntau
            if value.shape != (nq,) or not np.all(np.isfinite(value)):
                raise StateError(f"tau function must return {nq} finite numbers ({self.tau_name} at t = {t:g} "
                                 f"returned shape {value.shape}: {_short(value)})")
            u[self.tau_offset:self.tau_offset + nq] = value

    def compiled_functions(self):
        """The compiled functions of the run, for a failure that only the compiled call saw: "the compiled tau
        function NAME", or, with a Model3D's compiled element functions, "one of the compiled functions (...)"."""
        names = [f"element {entry[3]!r}" for entry in self.model.element_functions if not self.has_python]
        if not names:
            return f"the compiled tau function {self.tau_name}"
        if self.tau_function is not None:
            names.append(f"tau function {self.tau_name}")
        return f"one of the compiled functions ({', '.join(names)})"

    def callback(self):
        """(numba callable, key) for the compiled time loop."""
        functions = self.model.element_functions
        if not self.has_python and self.tau_function is None and not functions:
            return integrators.no_inputs, 0
        key = next(_KEYS)
        _PYTHON_INPUTS[key] = self
        if self.has_python:
            return _python_bridge, key
        # compiled functions only; the key: a failure of one is recovered through the bridge
        if functions:  # a Model3D's compiled element functions, and tau
            entries = [(function, nargs, slot, width, f"element {name!r}")
                       for slot, width, function, name, nargs in functions]
            if self.tau_function is not None:
                entries.append((self.tau_function, self.tau_arity, self.tau_offset, self.ntau,
                                f"tau function {self.tau_name}"))
            return _compiled_inputs_adapter(entries), key
        return _compiled_tau_adapter(self.tau_function, self.tau_arity), key


def build_system(model, inputs, stabilization="none", alpha=0.0, beta=0.0, projection_tol=1e-12, tree_system=True,
                 watch_impacts=False):
    """The RecursiveSystem the time loops integrate (fields in ``_kernels.planar.system``); a TreeSystem, the same
    fields, for a model without loops when ``tree_system`` (the time loops compiled for it leave the loop layer
    out; the implicit methods take a RecursiveSystem always), and of it a ChainSystem for a serial chain of
    revolute joints without driven joints (its time loops compile one route of the forward dynamics), a
    PlainChainSystem if it has no force elements and contacts either (nor do they compile the element forces).
    ``watch_impacts``: a fixed-step run, which stops at an impact its step does not resolve
    (``_kernels.planar.contact.update_contacts``)."""
    from ..dynamics.loops import FILTER_RCOND, POSITION_RCOND, loop_workspace  # noqa: PLC0415  (loops imports dynamics, as this module does)

    ws = workspace(model)
    lw = loop_workspace(model)[1]
    nq, nb = model.nq, model.nbodies
    free = np.setdiff1d(np.arange(nq), inputs.driven_coords).astype(np.int64)
    has_elements = model.elem_int.shape[0] > 0
    m = model.nconstraints
    stab = np.array([alpha, beta, 0.0, 0.0]) if stabilization == "baumgarte" else np.zeros(4)
    loops = (model.loop_int, model.loop_real, np.zeros((nb, 3)), np.zeros(m), np.zeros(m), np.zeros((m, nq)),
             np.zeros(m), np.zeros((m, 6)), np.zeros((m, nq)), np.zeros((m, nq if inputs.drivers else 0)),
             np.zeros(nq), stab, np.zeros(m), np.zeros(1, dtype=np.int64), np.zeros((m, free.size)),
             np.array([1.0 if (stabilization == "projection" and m) else 0.0, projection_tol, 20.0, POSITION_RCOND,
                       FILTER_RCOND]), *lw.pattern, *lw.sparse)  # the loops' structure and the sparse KKT
    # path's arrays flat: the parallel ensembles' kernels take tuples of arrays, not tuples holding tuples
    system_class = TreeSystem if tree_system and m == 0 else RecursiveSystem
    if system_class is TreeSystem and model.body_int[0, L.FLAGS] & L.SERIAL_REVOLUTE and not inputs.driven.size:
        system_class = ChainSystem if has_elements or model.has_contacts else PlainChainSystem
    contacts = None
    if model.has_contacts:
        nshapes = model.shape_int.shape[0]
        contacts = (model.contact_int, model.contact_real, np.zeros((model.ncontacts, N_PER_CONTACT)),
                    model.shape_int, model.shape_real, np.arange(nshapes, dtype=np.int64),
                    np.zeros((nshapes, L.N_BOX)), np.zeros(2),
                    np.zeros((3, model.ncontacts), dtype=np.int64),
                    np.zeros((model.ncontacts if watch_impacts else 0, 2)))
    return system_class(model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real, free,
            inputs.driven_coords, inputs.driven, inputs.tau_const,
            np.array([inputs.tau_offset, inputs.driver_offset], dtype=np.int64), np.zeros(inputs.size),
            np.zeros(nq), np.zeros(nq), np.zeros(nq), ws.ws, ws.com,
            np.zeros((nb if has_elements or contacts else 0, 3)), np.zeros(nq), np.zeros(3),
            np.zeros((model.elem_int.shape[0], 3)), np.zeros(nq), np.zeros(nq), loops, contacts)


class RecursiveTimeLoop:
    """The recursive formulation's pieces for the generic time loops (``rm.simulate``): the compiled system
    (``_kernels.planar.system``: the tree, or the loop layer, with elements, inputs and drivers), the initial
    state (q0, qd0 projected onto the loops) and the map from the integrated states y = (q_free, qd_free, work)
    back to the full joint state."""

    name = "recursive"

    def __init__(self, model, inputs, stabilization="none", alpha=0.0, beta=0.0, tree_system=True,
                 watch_impacts=False):
        self.model = model
        self.inputs = inputs
        self.system = build_system(model, inputs, stabilization, float(alpha), float(beta), tree_system=tree_system,
                                   watch_impacts=watch_impacts)

    def initial_state(self, q0, qd0, t0, callback, key):
        if self.model.nloops:
            q0, qd0 = _consistent_start(self.model, self.inputs, q0, qd0, t0)
        free = self.system.free
        # the work terms, then the contacts' state: none touching yet (``_kernels.planar.contact``)
        return np.concatenate((q0[free], qd0[free], [0.0, 0.0], np.zeros(N_CSTATE * self.model.ncontacts)))

    def joint_states(self, t, y):
        """Full q, qd (nt, nq) of the integrated states y (nt, 2 nf + 2), driven coordinates from their drivers."""
        free = self.system.free
        nf = free.size
        y = np.atleast_2d(y)
        if not self.inputs.drivers:  # every coordinate free, in order: slices (an indexed assignment is ~5x slower)
            return y[:, :nf].copy(), y[:, nf:2 * nf].copy()
        q = np.zeros((y.shape[0], self.model.nq))
        qd = np.zeros((y.shape[0], self.model.nq))
        q[:, free] = y[:, :nf]
        qd[:, free] = y[:, nf:2 * nf]
        for coord, _, evaluate in self.inputs.drivers:
            values = np.array([evaluate(ti) for ti in np.atleast_1d(t)]).reshape(-1, 3)
            q[:, coord] = values[:, 0]
            qd[:, coord] = values[:, 1]
        return q, qd

    def work(self, y):
        return y[:, 2 * self.system.free.size:2 * self.system.free.size + 2]

    def contact_state(self, y):
        """The contacts' state (nt, nrows, N_CSTATE) of the integrated states y."""
        return y[:, 2 * self.system.free.size + 2:].reshape(y.shape[0], -1, N_CSTATE)

    def finish(self, result, y, callback, key):
        """The evaluator of result.qdd() and the forces; the loops' drift max |phi| at every sample."""
        result._evaluator = (callback, key, self.system, self.inputs)  # holds inputs: the bridge still reaches them
        if self.model.has_contacts:
            result.contact_state = self.contact_state(y).copy()
        if self.model.nloops:
            from ..dynamics.loops import constraints  # noqa: PLC0415

            result.constraint_drift = np.array([np.abs(constraints(self.model, qi)[0]).max() for qi in result.q])

    def multiplier_probe(self, result, y, i):
        """(state, lam): the state at which the dynamics give sample i's loop multipliers, and the array (m,)
        their evaluation fills (the loop layer's lam, loops[12])."""
        return y[i], self.system.loops[12]


def _function_name(function):
    """How messages name a user function: its __name__ in quotes, or its repr."""
    name = getattr(function, "__name__", None)
    return repr(name) if isinstance(name, str) else repr(function)[:60]


def _short(value, limit=80):
    """A value for a message, cut to ``limit`` characters (a 1000-element array must not fill the screen)."""
    text = np.array2string(value, threshold=6) if isinstance(value, np.ndarray) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Events:
    """Event functions g(t, q, qd) -> float of one run, evaluated on the integrated state y."""

    failure = None  # (exception, t) of a call from compiled code that failed

    def __init__(self, model, events, inputs, loop):
        events = [events] if callable(events) else list(events or ())
        for g in events:
            if not callable(g):
                raise TypeError(f"events must be functions g(t, q, qd), got {g!r}")
        self.functions = events
        self.model = model
        self.inputs = inputs
        self.loop = loop
        self.terminal = np.array([bool(getattr(g, "terminal", False)) for g in events], dtype=np.uint8)
        self.directions = np.array([float(getattr(g, "direction", 0.0)) for g in events])
        self.names = [getattr(g, "__name__", f"event{i}") for i, g in enumerate(events)]

    def state(self, t, y):
        """Full (q, qd) from the integrated state y (drivers evaluated at t)."""
        q, qd = self.loop.joint_states(np.array([t]), np.asarray(y)[None, :])
        return q[0], qd[0]

    def __call__(self, t, y, _, out):
        q, qd = self.state(t, y)
        for i, g in enumerate(self.functions):
            try:
                value = float(g(t, q, qd))
            except Exception as err:  # noqa: BLE001 - say which event function failed and when
                raise StateError(f"event function {self.names[i]!r} raised at t = {t:g}: {err!r}") from err
            if not math.isfinite(value):
                raise StateError(f"event function {self.names[i]!r} returned {value} at t = {t:g}")
            out[i] = value


class _RunControl:
    """Stops a run on Ctrl-C or at its wall-clock limit; the compiled loops poll it (``integrators._poll``).

    While the run lasts, a SIGINT handler that only raises a flag replaces Python's default one (main thread only,
    and only where the default handler is installed: a program's own handler is left alone); the previous handler
    is restored afterwards. Python runs a signal handler only between bytecodes, so the flag is set at the next
    poll, which enters Python: polls are spaced to about ``POLL_INTERVAL`` seconds of work, from the evaluation
    rate the previous polls measured (the spacing at most quadruples from one poll to the next).

    It also holds the run's output budget (``output_budget``, taken when the run starts: floats that the compiled
    loops' output buffers may hold) and the floats of one sample (``sample_floats``, set by ``_run_loop``),
    and a fixed-step explicit run's divergence watch (``watch``), which checks the state at every poll, and the
    run's progress (``progress``: a bar or log records, ``run_progress``), which each poll tells the time the loop
    has reached and its evaluations: the polls, and so the progress shown, change nothing in the run.
    """

    POLL_INTERVAL = 2e-3  # [s]
    failure = None
    watch = None  # a check of the state, (t, y) -> status, at every poll (``divergence.DivergenceWatch``)
    progress = None  # what the run shows of its progress, told at every poll (``run_progress``, ``_run_loop``)

    def __init__(self, max_wall_time=None):
        self.started = time.perf_counter()
        self.deadline = None if max_wall_time is None else self.started + max_wall_time
        self.max_wall_time = max_wall_time
        self.interrupted = False
        self.control = np.array([1.0, 0.0])  # (evaluation count of the next poll, count at this poll)
        self._last_poll = (self.started, 0.0)
        self._batch = 1.0
        self._previous_handler = None
        self.key = next(_KEYS)
        _PYTHON_INPUTS[self.key] = self
        self.output_budget = output_budget()
        self.sample_floats = 0

    def __enter__(self):
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous_handler = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc_info):
        if self._previous_handler is not None:
            signal.signal(signal.SIGINT, self._previous_handler)
            self._previous_handler = None

    def _on_sigint(self, signum, frame):
        self.interrupted = True

    def restart(self):
        """Before each compiled loop (a progress bar runs several): its evaluation count starts at 0."""
        self.control[:] = (1.0, 0.0)
        self._last_poll = (time.perf_counter(), 0.0)

    def status(self):
        """STATUS_INTERRUPTED, STATUS_TIME_LIMIT or STATUS_OK (for time loops in Python)."""
        if self.interrupted:
            return L.STATUS_INTERRUPTED
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return L.STATUS_TIME_LIMIT
        return L.STATUS_OK

    def __call__(self, t, y, _, control):
        """The monitor callback: the status, and control[0] set to the evaluation count of the next poll."""
        now = time.perf_counter()
        last_time, last_count = self._last_poll
        evaluations = control[1] - last_count
        if now > last_time and evaluations > 0:
            wanted = evaluations * self.POLL_INTERVAL / (now - last_time)
            self._batch = max(1.0, min(wanted, 4.0 * self._batch))
        control[0] = control[1] + self._batch
        self._last_poll = (now, control[1])
        if self.progress is not None:
            self.progress.update(t, control[1])
        status = self.status()
        if status == L.STATUS_OK and self.watch is not None:
            status = self.watch(t, y)
        return status


def positive(value, what):
    """``value`` as a float, finite and > 0: a TypeError naming ``what`` for anything but a real number (a string
    such as "0.01", a bool, a complex number: ``_checks.real``), a StateError (a ValueError) for NaN, inf or <= 0."""
    value = _checks.real(value, what, allow_inf=True)
    if not (value > 0.0 and np.isfinite(value)):
        raise StateError(f"{what} must be finite and > 0, got {value}")
    return value


_MAX_TIME = 1e15  # [s]: beyond, float64 resolves times to worse than 0.1 s


def check_time_span(t0, t_end):
    """(t0, t_end) as floats, finite, t0 < t_end and within +-1e15 s (beyond, float64 times are coarser than
    0.1 s); otherwise a TypeError (not a real number, ``_checks.real``) or a ValueError naming them."""
    t0, t_end = _checks.real(t0, "t0", allow_inf=True), _checks.real(t_end, "t_end", allow_inf=True)
    if not (np.isfinite(t0) and np.isfinite(t_end) and t_end > t0):
        raise ValueError(f"need finite t0 < t_end, got t0 = {t0}, t_end = {t_end}")
    if max(abs(t0), abs(t_end)) > _MAX_TIME:
        raise ValueError(f"t0 = {t0:g}, t_end = {t_end:g} s: times beyond {_MAX_TIME:g} s are not supported (float64 "
                         "resolves them to worse than 0.1 s; a run that long cannot finish)")
    return t0, t_end


def checked_t_eval(t_eval, t0, t_end):
    """The output times of a run: None, or ``t_eval`` as a sorted float array within [t0, t_end] with t0 and t_end
    added; a TypeError or StateError (not a 1-D array of finite real numbers, ``_checks.finite_array``) or a
    ValueError otherwise."""
    if t_eval is None:
        return None
    t_eval_arr = _checks.finite_array(t_eval, "t_eval", (None,))
    if (t_eval_arr.size == 0 or np.any(np.diff(t_eval_arr) < 0) or t_eval_arr[0] < t0
            or t_eval_arr[-1] > t_end):
        raise ValueError(f"t_eval must be a non-empty sorted array within [t0, t_end] = [{t0}, {t_end}]")
    return np.unique(np.concatenate(([t0], t_eval_arr, [t_end])))  # t0 and t_end always


def event_callback(events):
    """(callback, key) through which a compiled time loop evaluates the run's event functions (``_Events``): the
    Python bridge with the events registered under a fresh key, or (None, 0) when there are none: the time loops
    are then compiled without their event location (``integrators.scan_events``)."""
    if not events.functions:
        return None, 0
    key = next(_KEYS)
    _PYTHON_INPUTS[key] = events
    return _python_bridge, key


def fixed_step_capacity(steps, every, n, t_eval, budget=math.inf):
    """Rows of n floats a fixed-step loop's output buffers start with: the samples the run can store (t0, every-th
    step, t_end) or the shared policy's rows (at most ~16 MB: 1024 rows of a 1e5-link state would be 1.6 GB, and
    what the output ``budget`` holds), whichever is fewer; with t_eval, the policy's rows for it. The compiled
    ``_store`` doubles a full buffer, up to the budget."""
    if t_eval is None:
        return min(2 + steps // every, integrators.output_rows(n, None, budget))
    return integrators.output_rows(n, t_eval, budget)


def event_buffers(events, n):
    """(ev_t, ev_y, floats) of a compiled loop on a state of n floats: 16 rows of (index, state) to start with
    when the run has event functions (``_store`` doubles them), none without; floats: what they hold, which the
    output budget counts."""
    rows = 16 if events.functions else 0
    return np.empty(rows), np.empty((rows, n + 1)), rows * (n + 2)


def fixed_step_count(t0, t_end, dt, max_steps):
    """Number of steps of dt from t0 to t_end: rounded up, at least one (a dt beyond the span takes one step of
    t_end - t0); a ValueError when it exceeds max_steps, before anything runs."""
    ratio = (t_end - t0) / dt
    if not ratio <= max_steps:
        raise ValueError(f"dt = {dt:g} s needs {ratio:.3g} steps from t0 = {t0:g} to t_end = {t_end:g} s, more "
                         f"than max_steps = {max_steps}: raise dt or max_steps")
    return max(1, math.ceil(ratio - 1e-9))  # the slack: a span that is a whole number of steps up to round-off


def check_finite_start(q0, qd0):
    """A StateError naming the first non-finite entry of q0, then of qd0 (the checked start of a run)."""
    for vec, what in ((q0, "q0"), (qd0, "qd0")):
        if not np.all(np.isfinite(vec)):
            raise StateError(f"{what}[{int(np.flatnonzero(~np.isfinite(vec))[0])}] is not finite")


def start_state(model, inputs, loop, callback, key, q0, qd0, t0, check_dynamics=True):
    """The integrated state y0 a run starts from (``loop.initial_state``: projected onto the loops).

    The run's Python inputs are called once first, so that a function that fails or returns the wrong shape is
    reported clearly here; with ``check_dynamics`` the system's right-hand side is evaluated once at y0 and a kernel
    status raises its error before anything runs."""
    if inputs.has_python or inputs.tau_function is not None or inputs.model.element_functions:
        # a first evaluation in Python: a function that fails or returns the wrong shape is reported clearly here
        inputs(t0, q0.copy(), qd0.copy(), np.zeros(inputs.size))
    y0 = loop.initial_state(q0, qd0, t0, callback, key)
    if check_dynamics:
        if _bare_tree_start(loop.system, inputs, callback):
            system = loop.system
            nq = system.q.shape[0]
            system.q[:] = y0[:nq]
            system.qd[:] = y0[nq:2 * nq]
            system.tau[:] = system.tau_const
            status = bare_tree_forward_dynamics(model, workspace(model), system.q, system.qd, system.tau, system.qdd)
        else:
            status = integrators.system_rhs(callback, key, loop.system, t0, y0, np.empty_like(y0))
        if status:
            raise_kernel_status(model, status)
    return y0


def _bare_tree_start(system, inputs, callback):
    """Whether the right-hand side of ``system`` at the start is the forward dynamics of its tree alone: a
    TreeSystem (or a chain of one) without force elements, contacts, driven joints or inputs, its joint forces
    tau_const. Its status there is then that of the kernel that ``Model.compile`` checked the model with
    (``bare_tree_forward_dynamics``: the same routes of the forward dynamics), so the start is checked without
    compiling the time loops' right-hand side for a call from Python as well (about 0.6 s of a first run)."""
    return (isinstance(system, TreeSystem) and callback is integrators.no_inputs and not inputs.size
            and not system.elem_int.shape[0] and system.contacts is None and not system.drv_coord.shape[0]
            and system.free.shape[0] == system.q.shape[0])


def _consistent_start(model, inputs, q0, qd0, t0):
    """(q0, qd0) projected onto the loop constraints (drivers applied first); a large gap is an error."""
    from ..dynamics.loops import RedundantConstraintWarning, constraints, project  # noqa: PLC0415

    q0, qd0 = q0.copy(), qd0.copy()
    inputs(t0, q0, qd0, np.zeros(inputs.size))
    gap = np.abs(constraints(model, q0)[0]).max()
    if gap > 1e-6:
        raise StateError(f"q0 does not close the loops (max |phi| = {gap:.3g}); find a consistent q0 with "
                         "rm.assemble(model, q0)")
    free = np.setdiff1d(np.arange(model.nq), inputs.driven_coords)
    q0, qd0, _ = project(model, q0, qd0, free=free)
    rank = np.linalg.matrix_rank(constraints(model, q0)[2][:, free], tol=None)
    if rank < model.nconstraints:  # the run solves them by least squares, as loop_dynamics does
        _checks.warn(f"the loop equations are redundant at q0: rank {rank} of {model.nconstraints}; the "
                     "multipliers are the minimum-norm ones", RedundantConstraintWarning)
    return q0, qd0


def interrupted(control, status):
    """Whether Ctrl-C stopped the run (``control``: its _RunControl) that ended with ``status``."""
    return control.interrupted or L.decode_status(status)[0] == L.STATUS_INTERRUPTED


class RunInterrupted(KeyboardInterrupt):
    """The KeyboardInterrupt of a run that Ctrl-C stopped, raised as soon as its time loop has stopped.

    ``t``: the time at which it stopped. ``result``: the samples so far (status "interrupted", ``success`` False,
    ``message`` this exception's), built on first access: building it copies every sample (and evaluates a
    model's loops at each), which would delay the interrupt in proportion to the samples stored.
    """

    def __init__(self, message, t, build):
        super().__init__(message)
        self.t = t
        self._build = build
        self._result = None

    @property
    def result(self):
        if self._build is not None:
            self._result, self._build = self._build(), None
            self._result.message = str(self)
        return self._result

    @result.setter
    def result(self, value):
        self._result, self._build = value, None


def raise_if_interrupted(method, status, t_fail, control, times, build):
    """Raise the RunInterrupted of a run that Ctrl-C stopped (``interrupted``), before its result is built:
    ``times`` the pieces of its sample times (``_run_loop``), ``build()`` returns its result (``close_run``
    marks it "interrupted"). Nothing for any other run."""
    if not interrupted(control, status):
        return
    count = sum(piece.size for piece in times)
    last = next((f" up to t = {piece[-1]:.9g} s" for piece in reversed(times) if piece.size), "")
    raise RunInterrupted(f"{method} interrupted at t = {t_fail:.9g} s; {_checks.counted(count, 'sample')}{last} "
                         f"{'is' if count == 1 else 'are'} kept in .result",
                         t_fail, build)


def close_run(result, status, control, events, records):
    """The end of a run that has its result: the events' records (index, t, y) into ``result.t_events``,
    ``q_events``, ``qd_events``; "event" status for a run a terminal event ended; "interrupted" for a run stopped
    by Ctrl-C (its RunInterrupted is raised before, by ``raise_if_interrupted``). Returns the status left to
    report (STATUS_OK, or a failure's)."""
    for i in range(len(events.functions)):
        hits = [(t_ev, y_ev) for index, t_ev, y_ev in records if index == i]
        states = [events.state(t_ev, y_ev) for t_ev, y_ev in hits]
        result.t_events.append(np.array([t_ev for t_ev, _ in hits]))
        result.q_events.append(np.array([q for q, _ in states]).reshape(-1, result.q.shape[1]))
        result.qd_events.append(np.array([qd for _, qd in states]).reshape(-1, result.qd.shape[1]))
    if status == L.STATUS_EVENT:
        result.status = "event"
        status = L.STATUS_OK
    if interrupted(control, status):
        result.status = "interrupted"
        return L.STATUS_OK
    return status


def _raise_failure(model, method, status, t_fail, result, max_steps, control, inputs, events, loop):
    """The SimulationError (or the user's own BaseException) of a run that ended with ``status``."""
    kind, index = L.decode_status(status)
    cause = None
    result.status = "failed"
    if kind == L.STATUS_TIME_LIMIT:
        result.status = "time_limit"
        reason = (f"the wall-clock limit max_wall_time = {control.max_wall_time:g} s was reached "
                  f"({time.perf_counter() - control.started:.3g} s)")
    elif kind == L.STATUS_INPUT_FAILED:
        failure, t_failure = inputs.failure or events.failure or (None, t_fail)
        inputs.failure = events.failure = None
        t_fail = t_failure
        if index == L.INPUT_NONFINITE:
            reason = f"{inputs.compiled_functions()} returned a non-finite value"
        elif index == L.INPUT_SHAPE:
            reason = f"{inputs.compiled_functions()} returned the wrong number of values"
        elif index == L.INPUT_COMPILED_RAISED:
            reason = (f"{inputs.compiled_functions()} raised an exception (numba passes none out of compiled code, "
                      "and called again from Python with the same arguments it did not raise)")
        elif failure is None:  # pragma: no cover - the bridge keeps every failure
            reason = "a user function failed"
        elif not isinstance(failure, Exception):  # KeyboardInterrupt, SystemExit from a user function: pass it on
            if isinstance(failure, KeyboardInterrupt):
                result.status = "interrupted"
            failure.result = result
            raise failure
        else:
            # our own StateError says which function (tau, element, driver, event) and when; chain the user's
            reason = str(failure) if isinstance(failure, StateError) else f"a user function raised {failure!r}"
            # (our own StateError about a returned value has no cause: the message says it all)
            cause = failure.__cause__ if isinstance(failure, StateError) else failure
    else:
        reasons = {
            L.STATUS_STEP_UNDERFLOW: "step size underflow (the solution blows up or the problem is too stiff)",
            L.STATUS_MAX_STEPS: f"more than max_steps = {max_steps} steps",
            L.STATUS_NONFINITE_STATE: "the state became non-finite in the step from there (blow-up; try a smaller dt)",
            L.STATUS_NO_CONVERGENCE: "the implicit iteration did not converge (the step is too large or the problem "
                                     "stiff)",
        }
        if kind == L.STATUS_NONFINITE_STATE and index >= L.CONTACT_TOO_DEEP:
            row = index - L.CONTACT_TOO_DEEP
            reason = (f"contact {model.contact_names[row]!r} (row {row}) went deeper than its shape's radius in the "
                      "step to there: the step did not resolve the contact (too stiff for the step: take smaller "
                      "steps, dt or max_step), or the contact is too soft for its load (raise its stiffness)")
        elif kind == L.STATUS_NONFINITE_STATE and index >= L.CONTACT_UNRESOLVED_IMPACT:
            row = index - L.CONTACT_UNRESOLVED_IMPACT
            speed, steps = loop.system.contacts[-1][row]  # the impacts' watch, last of the planar and spatial tuples
            reason = (f"contact {model.contact_names[row]!r} (row {row}) was made at {speed:.3g} m/s and was still "
                      f"compressing at only {steps:.0f} step end(s) before its deepest point: the step does not "
                      f"resolve the impact, whose rebound would be wrong (it needs at least {MIN_IMPACT_STEPS}: a "
                      "step of at most about an eighth of the contact time): take a smaller dt, or bdf or dopri5, "
                      "whose error control resolves impacts")
        elif status == L.STATUS_OUTPUT_FULL:
            reason = _output_full_reason(control, result)
        elif kind == L.STATUS_NONFINITE_STATE and control.watch is not None:  # a fixed-step explicit run
            reason = control.watch.reason(reasons[kind])
        elif kind in reasons:
            reason = reasons[kind] + getattr(control, "detail", "")
        elif kind == L.STATUS_LOOPS_OPEN:
            reason = (f"after the step to this time the projection cannot close loop {model.loop_names[index]!r}: "
                      "no configuration of the free coordinates closes it")
        elif kind == L.STATUS_LOOP_DEGENERATE and index >= L.LOOP_CHANGE_POINT:
            reason = _change_point_reason(model, loop.system.q, index - L.LOOP_CHANGE_POINT)
        else:
            try:
                raise_kernel_status(model, status)
            except (ModelError, StateError) as err:
                reason = str(err)
            else:  # pragma: no cover - raise_status always raises
                reason = f"status {status}"
    change_point = change_point_note(model, result) if kind == L.STATUS_NO_CONVERGENCE else None
    if change_point:
        reason = f"{reason}; {change_point}"
    free = getattr(loop.system, "free", None)  # the recursive formulation's free coordinates
    if free is not None and model.nloops and kind in (L.STATUS_STEP_UNDERFLOW, L.STATUS_LOOPS_OPEN):
        from ..dynamics.loops import lock_diagnosis  # noqa: PLC0415  (a driven mechanism in a dead point)

        lock = lock_diagnosis(model, result.q[-1], free)
        if lock is not None:
            reason = f"{lock} at t = {result.t[-1]:.9g} s; {reason}"
    raise SimulationError(f"{method} failed at t = {t_fail:.9g} s: {reason}; {kept_samples(result)}", t_fail,
                          result) from cause


def change_point_note(model, result):
    """The change point of a planar model's loops that an implicit run stopped at, a sentence, or None
    (``dynamics.loops.change_point_diagnosis`` at the last sample)."""
    if isinstance(model, Model3D) or not model.nloops or not result.t.size:
        return None
    from ..dynamics.loops import change_point_diagnosis  # noqa: PLC0415  (only on the failure route)

    return change_point_diagnosis(model, result.q[-1], result.q[0])


def kept_samples(result):
    """The end of a failed run's message: what its ``.result`` keeps."""
    if not result.t.size:
        return "no sample was stored (it failed at the start)"
    kept = "is" if result.t.size == 1 else "are"
    return f"{_checks.counted(result.t.size, 'sample')} up to t = {result.t[-1]:.9g} s {kept} kept in .result"


def _change_point_reason(model, q, row):
    """Why a spatial run stopped at a change point of its loops (``_kernels.spatial.system._change_point``): the
    vanishing ``row`` of J, or (row = m) rows that became dependent, at the configuration q where it was seen."""
    if row < model.nconstraints:
        loop = int(np.searchsorted(model.loop_rows, row, side="right") - 1)
        how = (f"the equation of loop {model.loop_names[loop]!r} (row {row} of J) no longer moves the mechanism: "
               "its row of J has shrunk below 1e-3 of its size at the start")
    else:
        from ..dynamics.spatial_loops import change_point  # noqa: PLC0415  (spatial kernels only for spatial models)

        names, ratio = change_point(model, q)
        how = (f"the equations of loop(s) {', '.join(repr(name) for name in names) or '?'} become dependent "
               f"(smallest / largest eigenvalue of J M^-1 J^T {ratio:.1e})")
    return (f"the mechanism reaches a singular position (a change point, where branches of its motion cross): {how}. "
            "The spatial loop layer does not follow a motion through a change point: the constraint "
            "force along the lost direction, and the energy with it, would be lost; stop the run before it, or keep "
            "the mechanism from reaching it (a stop, a spring)")


def _tqdm(asked, desc):
    """tqdm's bar class, or None where tqdm is not installed (with a warning when ``asked`` for a bar)."""
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415 - optional extra
    except ImportError:
        if asked:
            _checks.warn(f"progress=True needs tqdm ({_checks.install_hint('progress')}); {desc} runs without a bar")
        return None
    return tqdm


def progress_bar(enabled, total, desc, unit, unit_scale=False):
    """A tqdm bar (``desc``, ``total`` in ``unit``), or None: off unless asked for or stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    tqdm = _tqdm(True, desc)
    return None if tqdm is None else tqdm(total=total, unit=unit, unit_scale=unit_scale, desc=desc, leave=False)


PROGRESS_LOG_INTERVAL = 10.0  # [s] of wall time between two log records of a run's progress


def _time_digits(span):
    """Decimals that show a time within a span of ``span`` seconds to three significant digits of the span."""
    return max(0, 2 - math.floor(math.log10(span)))


class _ProgressBar:
    """A run's tqdm bar over simulated time: t - t0 of t_end - t0 seconds, with the decimals the span needs."""

    def __init__(self, tqdm, label, t0, t_end):
        digits = _time_digits(t_end - t0)
        self.t0 = t0
        self.bar = tqdm(total=t_end - t0, desc=label, leave=False,
                        bar_format=f"{{desc}}: {{percentage:3.0f}}%|{{bar}}| {{n:.{digits}f}}/{{total:.{digits}f}} s "
                                   "[{elapsed}<{remaining}]")

    def update(self, t, evaluations):
        if t - self.t0 > self.bar.n:
            self.bar.update(t - self.t0 - self.bar.n)

    def close(self, t, evaluations):
        self.update(t, evaluations)
        self.bar.close()


class _ProgressLog:
    """A run's progress as INFO records of the logger "recursive_mbd", one every ``interval`` seconds of wall time
    (none for a shorter run): the simulated time reached, the evaluations of the equations of motion, the wall
    time; and a last one when the run ends, after any other. The clock starts at the compiled loop's first poll,
    so that the kernels' compilation (announced apart) is not counted as the run's time."""

    def __init__(self, label, t0, t_end, interval):
        self.label, self.t_end, self.interval = label, t_end, interval
        self.span, self.digits = t_end - t0, _time_digits(t_end - t0)
        self.t0 = t0
        self.started = None
        self.logged = False

    def update(self, t, evaluations):
        now = time.perf_counter()
        if self.started is None:
            self.started, self.next_record = now, now + self.interval
            return
        if now < self.next_record:
            return
        self.next_record = now + self.interval
        self.logged = True
        logger.info("%s: t = %.*f of %.*f s (%.0f%%), %d evaluations, %.0f s wall time", self.label, self.digits, t,
                    self.digits, self.t_end, 100.0 * (t - self.t0) / self.span, evaluations, now - self.started)

    def close(self, t, evaluations):
        if self.logged:
            logger.info("%s: ended at t = %.*f s, %d evaluations, %.1f s wall time", self.label, self.digits, t,
                        evaluations, time.perf_counter() - self.started)


def run_progress(progress, label, t0, t_end, interval=None):
    """What a run from t0 to t_end shows of its progress (``simulate``'s ``progress``), or None: nothing.

    None (the default): a tqdm bar when stderr is a terminal and tqdm is installed, otherwise INFO records of the
    logger "recursive_mbd" (``_ProgressLog``: every ``interval`` seconds of wall time, by default
    PROGRESS_LOG_INTERVAL; only where that logger shows INFO records). True: a bar (where tqdm is missing, a
    warning and the records). False: nothing. ``label`` names the run (its method).
    """
    if progress is not None and not progress:
        return None
    if progress or sys.stderr.isatty():
        tqdm = _tqdm(bool(progress), label)
        if tqdm is not None:
            return _ProgressBar(tqdm, label, t0, t_end)
    if not logger.isEnabledFor(logging.INFO):
        return None
    return _ProgressLog(label, t0, t_end, PROGRESS_LOG_INTERVAL if interval is None else interval)


# ---- the output budget: a long run that would outgrow memory stops with its samples ------------------------------

OUTPUT_MEMORY_FRACTION = 0.25  # of the memory available when a run starts: its output buffers' budget


def available_memory():
    """Bytes of memory available to this process now, or None where it cannot be read.

    Linux: MemAvailable of /proc/meminfo (free memory plus the page cache the kernel can reclaim), less where a
    cgroup v2 limit (/sys/fs/cgroup/memory.max minus memory.current: a container's) leaves less; elsewhere the
    free physical pages (os.sysconf SC_AVPHYS_PAGES x SC_PAGE_SIZE) where the platform has them."""
    available = None
    try:
        with open("/proc/meminfo") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024  # kB
                    break
    except (OSError, ValueError, IndexError):
        available = None
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            return None
    try:
        with open("/sys/fs/cgroup/memory.max") as file:
            limit = file.read().strip()
        with open("/sys/fs/cgroup/memory.current") as file:
            used = int(file.read().strip())
        if limit != "max":
            available = min(available, max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    return available if available > 0 else None


def output_budget():
    """The output budget of a run that starts now [floats of 8 bytes]: OUTPUT_MEMORY_FRACTION (a quarter) of the
    memory available (``available_memory``), math.inf (no limit) where that cannot be read.

    A quarter, because a run's samples take about three times their size at the end: the compiled loop's buffers
    (which double when full: up to twice the samples while they grow), their copy in the result and its q and qd.
    The compiled loops stop a run whose samples (and events) would outgrow it with STATUS_OUTPUT_FULL, its samples
    so far kept (``integrators._store``), instead of failing an allocation inside compiled code (which loses every
    sample) or overcommitting memory that the process is killed for when it touches it."""
    available = available_memory()
    return math.inf if available is None else OUTPUT_MEMORY_FRACTION * available / 8.0


def _output_full_reason(control, result):
    """Why a run stopped with STATUS_OUTPUT_FULL (its samples would outgrow the output budget), and what to do."""
    floats = control.sample_floats
    budget = control.output_budget
    # generalized_alpha's samples carry the loops' multipliers; the other methods evaluate them after the run
    lam = " and the loop multipliers" if "generalized_alpha" in result.method and result.multipliers is not None else ""
    # the advice first: the command line shows the first 160 characters of the message
    return (f"its samples would outgrow the run's output budget of {8e-6 * budget:.4g} MB: pass every=K (every K-th "
            f"step) or t_eval (those times) to keep fewer (each sample keeps {floats} floats, "
            f"{8e-6 * floats:.4g} MB: the time, the state{lam}; every accepted step is a sample unless told "
            f"otherwise; the budget is by default {OUTPUT_MEMORY_FRACTION:g} of the memory available when the run "
            "starts)")


def _memory_error(error, n, budget):
    """The MemoryError of a compiled loop whose allocation failed below the output budget (memory taken by others
    meanwhile, or none readable: ``output_budget``): says what happened and what to do."""
    limit = (f"below the run's output budget ({8e-6 * budget:.4g} MB: memory taken meanwhile?)" if budget < math.inf
             else "(no output budget: the available memory could not be read)")
    return MemoryError(
        f"the run's output could not grow: each sample keeps the state ({n} floats, {8e-6 * n:.3g} MB) and every "
        "accepted step is a sample unless every= or t_eval= say otherwise; pass every=K (every K-th step) or t_eval "
        f"(those times) to keep fewer. Memory ran out {limit} inside the compiled loop, so the samples of this run "
        "are lost")


def _run_loop(run, y0, t0, t_end, t_eval, progress, control, label="simulate"):
    """Run the compiled loop ``run(y, ta, tb, t_eval, budget)`` from t0 to t_end in one call, its output buffers
    (and event buffers) holding at most ``control.output_budget`` floats, and show its progress (``run_progress``
    of ``progress`` as ``simulate``'s, ``label`` naming the run): the bar or the log records follow the times the
    loop's polls of ``control`` report (``_RunControl``), so that the run is the same, bit for bit, with or
    without them. Returns (status, t_fail, times, states, nfev, nsteps,
    nrejected, events), the samples as lists of pieces (here one: views of the loop's buffers), which the caller
    joins (``joined``) when it builds the result: a run that Ctrl-C stopped raises before that
    (``raise_if_interrupted``), at a cost independent of its samples.
    """
    budget = control.output_budget
    control.progress = shown = run_progress(progress, label, t0, t_end)
    t_reached, evaluations = t0, 0
    try:
        try:
            status, t_fail, t_out, y_out, *rest = run(y0, t0, t_end, t_eval, budget)
        except MemoryError as error:
            raise _memory_error(error, y0.size, budget) from error
        t_reached, evaluations = (float(t_out[-1]) if t_out.size else t0), rest[0]
    finally:
        control.progress = None
        if shown is not None:
            shown.close(t_reached, evaluations)
    control.sample_floats = y_out.shape[1] + 1
    return status, t_fail, [t_out], [y_out], *rest


def joined(pieces):
    """One array of the pieces of a run's samples (``_run_loop``), a copy: the run's result owns its samples,
    and the loops' buffers (up to twice as large) are freed."""
    return np.concatenate(pieces)
