"""Time integration of the minimal-coordinate equations of motion: ``simulate`` and its result.

Methods are data (``METHODS``): a Butcher tableau plus, for embedded pairs, error weights and a continuous
extension; the implicit midpoint rule; and ``"scipy:NAME"``, which hands the same right-hand side to
``scipy.integrate.solve_ivp``. The numba methods run their whole time loop in compiled code
(``_kernels.integrators``), calling the recursive forward dynamics and the force elements without returning to
Python; time-varying inputs reach that loop through one callback (``_Inputs``).

A user function that fails stops the run: the bridge keeps its exception and the compiled loop returns a status,
so ``simulate`` raises SimulationError from it with the samples so far. A run polls a monitor (``_RunControl``)
every few milliseconds of work, so that Ctrl-C (KeyboardInterrupt) and ``max_wall_time`` stop it promptly, again
with the samples so far.
"""

import difflib
import inspect
import itertools
import math
import os
import signal
import sys
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from io import BytesIO

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from . import _checks
from ._kernels import integrators
from ._kernels import layout as L
from ._kernels.recursive_system import RecursiveSystem
from ._method_names import FIXED_STEP, METHODS
from .dynamics import as_vector, element_inputs, energy, forward_kinematics, raise_status, workspace
from .errors import ModelError, ResultFileError, SimulationError, StateError
from .model3d import Model3D


@dataclass(frozen=True)
class Tableau:
    """An explicit Runge-Kutta method: y_n+1 = y_n + h sum_j B_j k_j, k_j = f(t + C_j h, y_n + h sum_m A_jm k_m).

    E = B - B_hat are the weights of the embedded error estimate (adaptive methods only); E3 those of a second,
    lower-order estimate (DOP853); DENSE the weights of the continuous extension's last term (Hairer's dopri5
    form); ORDER the order used by step-size control.
    """

    name: str
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    order: int
    E: np.ndarray = field(default=None)
    DENSE: np.ndarray = field(default=None)
    E3: np.ndarray = field(default=None)

    @property
    def adaptive(self):
        return self.E is not None


DOPRI5 = Tableau(
    name="dopri5",
    A=np.array([
        [0, 0, 0, 0, 0, 0, 0],
        [1 / 5, 0, 0, 0, 0, 0, 0],
        [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
        [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
        [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
    ]),
    B=np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]),
    C=np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1]),
    E=np.array([71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40]),
    DENSE=np.array([-12715105075 / 11282082432, 0, 87487479700 / 32700410799, -10690763975 / 1880347072,
                    701980252875 / 199316789632, -1453857185 / 822651844, 69997945 / 29380423]),
    order=5,
)

RK4 = Tableau(
    name="rk4",
    A=np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]]),
    B=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
    C=np.array([0, 0.5, 0.5, 1.0]),
    order=4,
)

def _dop853():
    """Dormand-Prince 8(5,3) with the stage f(t + h, y_new) appended as a 13th, FSAL stage (its row of A is B).

    The coefficients are the published ones (Hairer, Norsett & Wanner 1993, II.10) as scipy ships them.
    """
    from scipy.integrate._ivp import dop853_coefficients as coef  # noqa: PLC0415

    stages = coef.N_STAGES
    a = np.zeros((stages + 1, stages + 1))
    a[:stages, :stages] = coef.A[:stages, :stages]
    a[stages, :stages] = coef.B
    return Tableau(name="dop853", A=a, B=np.append(coef.B, 0.0), C=np.append(coef.C[:stages], 1.0), order=8,
                   E=np.array(coef.E5, dtype=float), E3=np.array(coef.E3, dtype=float))


DOP853 = _dop853()
TABLEAUS = {t.name: t for t in (DOPRI5, DOP853, RK4)}
# METHODS, FIXED_STEP (_method_names): the tableaus above and the midpoint rule (integrators._midpoint_step)
assert METHODS == (*TABLEAUS, "implicit_midpoint", "generalized_alpha", "bdf"), \
    "_method_names.METHODS must name the tableaus"
IMPLICIT_SCIPY = ("Radau", "BDF", "LSODA")  # given the structured Jacobian of integrators.rhs_jacobian


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


_TAU_ADAPTERS = {}


def _compiled_tau_adapter(function, arity):
    """A compiled input callback calling the compiled ``function`` (tau(t) or tau(t, q, qd)) into u[:nq]."""
    key = (function, arity)
    if key not in _TAU_ADAPTERS:
        # u is tau alone here (no other inputs); a wrong size or a non-finite value stops the run
        if arity == 1:
            @numba.cfunc(integrators.CALLBACK)
            def adapter(key, t, q, qd, u):
                value = function(t)
                if value.shape[0] != u.shape[0]:
                    return _WRONG_SHAPE_INPUT
                for k in range(u.shape[0]):
                    if not math.isfinite(value[k]):
                        return _NONFINITE_INPUT
                    u[k] = value[k]
                return L.STATUS_OK
        else:
            @numba.cfunc(integrators.CALLBACK)
            def adapter(key, t, q, qd, u):
                value = function(t, q, qd)
                if value.shape[0] != u.shape[0]:
                    return _WRONG_SHAPE_INPUT
                for k in range(u.shape[0]):
                    if not math.isfinite(value[k]):
                        return _NONFINITE_INPUT
                    u[k] = value[k]
                return L.STATUS_OK
        _TAU_ADAPTERS[key] = adapter
    return _TAU_ADAPTERS[key]


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
    spatial = False  # a Model3D's inputs (``_SpatialInputs``): tau of size nv, no elements or drivers

    def __init__(self, model, tau, drivers):
        nq = model.nq
        self.ntau = nq
        self.model = model
        self.tau_const = np.zeros(nq)
        self.tau_function = None
        self.tau_arity = 0
        offset = model.n_element_inputs
        self.tau_offset = -1
        if callable(tau):
            self.tau_function = tau
            self.tau_name = _function_name(tau)
            self.tau_arity = _checks.arity(tau, "tau")
            self.tau_offset = offset
            offset += nq
        elif tau is not None:
            self.tau_const = as_vector(model, tau, "tau").copy()
            if not np.all(np.isfinite(self.tau_const)):
                raise StateError(f"tau[{int(np.flatnonzero(~np.isfinite(self.tau_const))[0])}] is not finite")
        self.driver_offset = offset
        self.drivers = []  # (coordinate, body name, evaluate(t) -> (f, f', f''))
        driven = np.zeros(model.nbodies, dtype=np.uint8)
        for body, spec in (drivers or {}).items():
            index = model.body_index(body)
            name = model.body_names[index]
            if model.joint_ndof[index] != 1:
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
            self.drivers.append((int(model.joint_q_index[index]), name, evaluate))
        self.drivers.sort()
        self.driven = driven if self.drivers else np.zeros(0, dtype=np.uint8)
        self.driven_coords = np.array([c for c, _, _ in self.drivers], dtype=np.int64)
        self.size = offset + 3 * len(self.drivers)
        self.has_python = bool(model.element_functions or self.drivers) or (
            self.tau_function is not None and not isinstance(self.tau_function, CPUDispatcher))

    def __call__(self, t, q, qd, u):
        """Fill u at time t; driver values also go into q and qd before tau(t, q, qd) sees them."""
        if not self.spatial:
            element_inputs(self.model, t, u)
        for j, (coord, name, evaluate) in enumerate(self.drivers):
            value = _checks.driver_value(name, evaluate, t)
            slot = self.driver_offset + 3 * j
            u[slot:slot + 3] = value
            q[coord], qd[coord] = value[0], value[1]
        if self.tau_function is not None:
            try:
                value = self.tau_function(t) if self.tau_arity == 1 else self.tau_function(t, q, qd)
            except Exception as err:  # noqa: BLE001
                raise StateError(f"tau function {self.tau_name} raised at t = {t:g}: {err!r}") from err
            try:
                value = np.asarray(value, dtype=float).reshape(-1)
            except (TypeError, ValueError) as err:
                raise StateError(f"tau function must return {self.model.nq} finite numbers ({self.tau_name} at "
                                 f"t = {t:g} returned {_short(value)})") from err
            nq = self.ntau
            if value.shape != (nq,) or not np.all(np.isfinite(value)):
                raise StateError(f"tau function must return {nq} finite numbers ({self.tau_name} at t = {t:g} "
                                 f"returned shape {value.shape}: {_short(value)})")
            u[self.tau_offset:self.tau_offset + nq] = value

    def callback(self):
        """(numba callable, key) for the compiled time loop."""
        if not self.has_python and self.tau_function is None:
            return integrators.no_inputs, 0
        if not self.has_python:
            return _compiled_tau_adapter(self.tau_function, self.tau_arity), 0
        key = next(_KEYS)
        _PYTHON_INPUTS[key] = self
        return _python_bridge, key


def build_system(model, inputs, stabilization="none", alpha=0.0, beta=0.0, projection_tol=1e-12):
    """The RecursiveSystem the time loops integrate (fields in ``_kernels.recursive_system``)."""
    from .loops import FILTER_RCOND, POSITION_RCOND  # noqa: PLC0415  (loops imports dynamics, as this module does)

    ws = workspace(model)
    nq, nb = model.nq, model.nbodies
    free = np.setdiff1d(np.arange(nq), inputs.driven_coords).astype(np.int64)
    has_elements = model.elem_int.shape[0] > 0
    m = model.nconstraints
    stab = np.array([alpha, beta, 0.0, 0.0]) if stabilization == "baumgarte" else np.zeros(4)
    loops = (model.loop_int, model.loop_real, np.zeros((nb, 3)), np.zeros(m), np.zeros(m), np.zeros((m, nq)),
             np.zeros(m), np.zeros((m, 6)), np.zeros((m, nq)), np.zeros((m, nq if inputs.drivers else 0)),
             np.zeros(nq), stab, np.zeros(m), np.zeros(1, dtype=np.int64), np.zeros((m, free.size)),
             np.array([1.0 if (stabilization == "projection" and m) else 0.0, projection_tol, 20.0, POSITION_RCOND,
                       FILTER_RCOND]))
    return RecursiveSystem(model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real, free,
            inputs.driven_coords, inputs.driven, inputs.tau_const,
            np.array([inputs.tau_offset, inputs.driver_offset], dtype=np.int64), np.zeros(inputs.size),
            np.zeros(nq), np.zeros(nq), np.zeros(nq), ws.ws, ws.com, np.zeros((nb if has_elements else 0, 3)),
            np.zeros(nq), np.zeros(3), np.zeros((model.elem_int.shape[0], 3)), np.zeros(nq), np.zeros(nq), loops)


class RecursiveTimeLoop:
    """The recursive formulation's pieces for the generic time loops (``rm.simulate``): the compiled system
    (``_kernels.recursive_system``: the tree, or the loop layer, with elements, inputs and drivers), the initial
    state (q0, qd0 projected onto the loops) and the map from the integrated states y = (q_free, qd_free, work)
    back to the full joint state."""

    name = "recursive"

    def __init__(self, model, inputs, stabilization="none", alpha=0.0, beta=0.0):
        self.model = model
        self.inputs = inputs
        self.system = build_system(model, inputs, stabilization, float(alpha), float(beta))

    def initial_state(self, q0, qd0, t0, callback, key):
        if self.model.nloops:
            q0, qd0 = _consistent_start(self.model, self.inputs, q0, qd0, t0)
        free = self.system.free
        return np.concatenate((q0[free], qd0[free], [0.0, 0.0]))

    def joint_states(self, t, y):
        """Full q, qd (nt, nq) of the integrated states y (nt, 2 nf + 2), driven coordinates from their drivers."""
        free = self.system.free
        nf = free.size
        y = np.atleast_2d(y)
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
        return y[:, 2 * self.system.free.size:]

    def finish(self, result, y, callback, key):
        """The evaluator of result.qdd() and the forces; the loops' drift max |phi| at every sample."""
        result._evaluator = (callback, key, self.system, self.inputs)  # holds inputs: the bridge still reaches them
        if self.model.nloops:
            from .loops import constraints  # noqa: PLC0415

            result.constraint_drift = np.array([np.abs(constraints(self.model, qi)[0]).max() for qi in result.q])


class _SpatialInputs(_Inputs):
    """The inputs of a run on a ``Model3D``: tau (nv,) constant, or a function tau(t) / tau(t, q, v) (q (nq,) with
    unit quaternions, v (nv,)); u = [tau] when tau is a function. Spatial models have no force elements or drivers
    yet."""

    spatial = True

    def __init__(self, model, tau):
        nv = model.nv
        self.model = model
        self.ntau = nv
        self.tau_const = np.zeros(nv)
        self.tau_function = None
        self.tau_arity = 0
        self.tau_offset = -1
        if callable(tau):
            self.tau_function = tau
            self.tau_name = _function_name(tau)
            self.tau_arity = _checks.arity(tau, "tau")
            self.tau_offset = 0
        elif tau is not None:
            arr = np.asarray(_checks.real_array(tau, "tau"), dtype=float)
            if arr.shape != (nv,):
                raise StateError(f"tau must have shape ({nv},) for this model (nv = {nv}), got shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise StateError(f"tau[{int(np.flatnonzero(~np.isfinite(arr))[0])}] is not finite")
            self.tau_const = arr.copy()
        self.driver_offset = nv if self.tau_function is not None else 0
        self.drivers = []
        self.driven = np.zeros(0, dtype=np.uint8)
        self.driven_coords = np.zeros(0, dtype=np.int64)
        self.size = self.driver_offset
        self.has_python = self.tau_function is not None and not isinstance(self.tau_function, CPUDispatcher)


class SpatialTimeLoop:
    """The spatial formulation's pieces for the generic time loops (``rm.simulate`` on a ``Model3D``): the compiled
    system (``_kernels.spatial_system``), the initial state y = (q0, v0, 0, 0) and the map back from the integrated
    states: q with every quaternion renormalised (a dense-output sample between two projected steps may be off unit
    by the local error), v as integrated."""

    name = "recursive"

    def __init__(self, model, inputs):
        from . import spatial  # noqa: PLC0415  (spatial kernels only for spatial models)
        from ._kernels.spatial_system import SpatialSystem  # noqa: PLC0415  (registers its overloads)

        self.model = model
        self.inputs = inputs
        ws = spatial.workspace(model)
        nq, nv = model.nq, model.nv
        self.system = SpatialSystem(
            model.body_int, model.body_real, model.gravity, model._euclid_q.astype(np.int64),
            model._euclid_v.astype(np.int64), model._quat_q, model._quat_v, inputs.tau_const,
            np.array([inputs.tau_offset], dtype=np.int64), np.zeros(inputs.size), np.zeros(nq), np.zeros(nv),
            np.zeros(nv), np.zeros(nv), np.zeros_like(ws.ws), np.zeros_like(ws.S), np.zeros_like(ws.UD),
            np.zeros_like(ws.uD), np.zeros_like(ws.tmp))

    def initial_state(self, q0, qd0, t0, callback, key):
        return np.concatenate((q0, qd0, [0.0, 0.0]))

    def joint_states(self, t, y):
        """q (nt, nq) with unit quaternions and v (nt, nv) of the integrated states y (nt, nq + nv + 2)."""
        nq, nv = self.model.nq, self.model.nv
        y = np.atleast_2d(y)
        q = y[:, :nq].copy()
        columns = self.model._quat_q[:, None] + np.arange(4)
        if columns.size:
            quats = q[:, columns]  # (nt, k, 4)
            q[:, columns] = quats / np.linalg.norm(quats, axis=2)[:, :, None]
        return q, y[:, nq:nq + nv].copy()

    def work(self, y):
        return y[:, self.model.nq + self.model.nv:]

    def finish(self, result, y, callback, key):
        result._evaluator = None


def _spatial_start(model, q0, qd0):
    """(q0, v0) of a run on a Model3D as float64 arrays: shapes (nq,), (nv,), finite; each quaternion off unit norm
    by more than 1e-12 is normalised with a RuntimeWarning (one that is zero is a StateError naming body and index)."""
    from .model3d import _state_vector  # noqa: PLC0415

    q0 = _state_vector(q0, model.nq, "q0").copy()
    qd0 = _state_vector(qd0, model.nv, "qd0").copy()
    for start, body in zip(model._quat_q, model._quat_body, strict=True):
        quat = q0[start:start + 4]
        norm = float(np.linalg.norm(quat))
        where = f"q0[{start}:{start + 4}], the quaternion of body {model.names[body]!r} (index {body}),"
        if not norm > 0.0:
            raise StateError(f"{where} is zero: not a rotation")
        if abs(norm - 1.0) > 1e-12:
            warnings.warn(f"{where} has norm {norm!r}; simulate normalises it", RuntimeWarning, stacklevel=3)
            q0[start:start + 4] = quat / norm
    return q0, qd0


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
    """

    POLL_INTERVAL = 2e-3  # [s]
    failure = None

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
        return self.status()


# ---- result -------------------------------------------------------------------------------------------------------

_RESULT_FORMAT = "recursive_mbd.SimulationResult"  # the marker of files SimulationResult.save writes
_RESULT_VERSION = 1
_RESULT_STATUSES = ("finished", "event", "failed", "interrupted", "time_limit")

def read_npz(path, writer="`rmbd run`"):
    """All arrays of an .npz result file as a dict, read without pickles.

    Raises ResultFileError (a ValueError) naming the file when it is not a regular file, not an .npz archive
    ("not a result file (expected the .npz that <writer> writes)"), or corrupted or truncated (zip, header and
    CRC errors alike); OSError when it cannot be opened. Never blocks on a FIFO.
    """
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isfile(path):
        raise ResultFileError(f"{path}: not a regular file (expected the .npz that {writer} writes)")
    with open(path, "rb") as file:
        raw = file.read()
    if not raw.startswith(b"PK"):
        raise ResultFileError(f"{path}: not a result file (expected the .npz that {writer} writes)")
    try:
        with np.load(BytesIO(raw), allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except Exception as err:  # noqa: BLE001 - zip, npy header and CRC errors alike: one error naming the file
        raise ResultFileError(f"{path}: corrupted or truncated result file ({type(err).__name__}: "
                              f"{str(err)[:120]})") from None


class SimulationResult:
    """Samples of a simulated trajectory.

    Attributes
    ----------
    t : ndarray, shape (nt,)
        Sample times [s]; always holds t0 and t_end (unless the run failed, then up to the failure).
    q, qd : ndarray, shape (nt, nq)
        Joint coordinates and rates at the samples (driven coordinates included). For a ``Model3D``: q (nt, nq)
        the configurations (every quaternion unit norm) and qd (nt, nv) the joint VELOCITIES v (a spherical
        joint's omega in the child frame), not dq/dt; ``qdd()``, ``driving_forces()``, ``element_forces()`` and
        ``poses()`` are for planar models only (ValueError).
    dissipated_work, applied_work : ndarray, shape (nt,)
        Work [J] dissipated by the dampers and done by tau, the applied forces and torques and the drivers since
        t0, integrated with the motion: E(t) + dissipated_work - applied_work = E(t0).
    method : str
    nfev, nsteps, nrejected : int
        Right-hand-side (forward-dynamics) evaluations, accepted and rejected steps.
    status : str
        "finished"; "event" when a terminal event ended the run (at t[-1]); on the ``result`` of an exception:
        "failed" (SimulationError), "time_limit" (max_wall_time reached), "interrupted" (KeyboardInterrupt).
    constraint_drift : ndarray, shape (nt,), or None
        max |phi| of the loop constraints at each sample (models with loops, and the augmented formulation).
    z, zd : ndarray, shape (nt, nbodies, 3)
        Absolute coordinates and rates of the centres of mass (augmented formulation only).
    t_events, q_events, qd_events : list of ndarray
        Per event function: the times of its zero crossings (nev,) and the states there (nev, nq).
    """

    def __init__(self, model, t, q, qd, work, method, nfev, nsteps, nrejected, evaluator=None):
        self.model = model
        self.t = t
        self.q = q
        self.qd = qd
        self.dissipated_work = work[:, 0]
        self.applied_work = work[:, 1]
        self.method = method
        self.nfev = int(nfev)
        self.nsteps = int(nsteps)
        self.nrejected = int(nrejected)
        self._evaluator = evaluator  # (callback, key, system, inputs) of the run, to evaluate its dynamics again
        self.status = "finished"
        self.constraint_drift = None  # max |phi| per sample, for models with loops
        self.t_events = []  # per event function: times of its zero crossings, and the state there
        self.q_events = []
        self.qd_events = []

    def _require_model(self, what, inputs=True, spatial=True):
        if not spatial and isinstance(self.model, Model3D):
            raise ValueError(f"{what} is not available for a Model3D's result yet (planar models only)")
        if self.model is None:
            raise ValueError(f"{what} needs the model: load the result with SimulationResult.load(path, model)")
        if inputs and self._evaluator is None:
            raise ValueError(f"{what} needs the inputs of the run (tau, drivers); this result was loaded from a file")

    def _evaluate(self, index):
        """Run the right-hand side at sample ``index``: qdd, driving forces and element loads land in the system."""
        callback, key, system, inputs = self._evaluator
        free = system[5]
        nf = free.size
        y = np.concatenate((self.q[index, free], self.qd[index, free], [0.0, 0.0]))
        status = integrators.system_rhs(callback, key, system, float(self.t[index]), y, np.empty_like(y))
        if L.decode_status(status)[0] == L.STATUS_INPUT_FAILED and inputs.failure is not None:
            failure, inputs.failure = inputs.failure[0], None
            raise failure
        if status:
            raise_status(self.model, status)
        return system, nf

    def qdd(self):
        """Joint accelerations at every sample, shape (nt, nq) (prescribed ones for driven coordinates)."""
        self._require_model("qdd()", spatial=False)
        return np.array([self._evaluate(i)[0][20].copy() for i in range(self.t.size)])

    def driving_forces(self):
        """Joint force of each driver at every sample, shape (nt, nq) (zero for free coordinates) [N m or N]."""
        self._require_model("driving_forces()", spatial=False)
        system = self._evaluator[2]
        out = np.zeros((self.t.size, self.model.nq))
        for i in range(self.t.size):
            self._evaluate(i)
            out[i, system[6]] = system[21][system[6]]
        return out

    def element_forces(self):
        """Per-element values at every sample, shape (nt, nelements, 3) (see ``rm.element_forces``)."""
        self._require_model("element_forces()", spatial=False)
        return np.array([self._evaluate(i)[0][19].copy() for i in range(self.t.size)])

    def energy(self):
        """Kinetic and potential energy (gravity and springs) at every sample: (T, V), each shape (nt,) [J]."""
        self._require_model("energy()", inputs=False)
        pairs = np.array([energy(self.model, q, qd, t=t) for t, q, qd in zip(self.t, self.q, self.qd, strict=True)])
        return pairs.reshape(-1, 2)[:, 0], pairs.reshape(-1, 2)[:, 1]

    def energy_balance(self):
        """E(t) + dissipated work - applied work - E(t0) at every sample [J]: zero up to the integration error."""
        kinetic, potential = self.energy()
        total = kinetic + potential
        return total + self.dissipated_work - self.applied_work - total[0]

    def poses(self, body):
        """Pose (x, y, theta) of a body's frame at every sample, shape (nt, 3)."""
        self._require_model("poses()", inputs=False, spatial=False)
        index = self.model.body_index(body)
        return np.array([forward_kinematics(self.model, q)[0][index] for q in self.q])

    def save(self, path):
        """Write every field (samples, work, status, statistics, events, constraint drift, augmented z and zd) to
        ``path``, exactly that name (an .npz archive whatever the suffix; no suffix is added).

        The file is written beside the target and renamed onto it, so an interrupted save never leaves a
        truncated result. ``SimulationResult.load`` reads it back.
        """
        path = os.fspath(path)
        arrays = {
            "format": np.array(_RESULT_FORMAT), "version": np.array(_RESULT_VERSION, dtype=np.int64),
            "t": self.t, "q": self.q, "qd": self.qd, "dissipated_work": self.dissipated_work,
            "applied_work": self.applied_work, "method": np.array(self.method), "status": np.array(self.status),
            "stats": np.array([self.nfev, self.nsteps, self.nrejected], dtype=np.int64),
            "body_names": np.array(self._body_names(), dtype=str),
            "n_events": np.array(len(self.t_events), dtype=np.int64),
        }
        for i, (t_ev, q_ev, qd_ev) in enumerate(zip(self.t_events, self.q_events, self.qd_events, strict=True)):
            arrays[f"t_events_{i}"], arrays[f"q_events_{i}"], arrays[f"qd_events_{i}"] = t_ev, q_ev, qd_ev
        for name in ("constraint_drift", "z", "zd"):
            if getattr(self, name, None) is not None:
                arrays[name] = getattr(self, name)
        partial = f"{path}.partial"
        try:
            with open(partial, "wb") as file:  # a file object: np.savez would append .npz to a name without it
                np.savez(file, **arrays)
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.remove(partial)

    def _body_names(self):
        if self.model is None:
            return getattr(self, "body_names", ())
        return self.model.names if isinstance(self.model, Model3D) else self.model.body_names

    @classmethod
    def load(cls, path, model=None):
        """Read a result written by ``save``; pass the model to use energy() and poses() (not qdd() and forces).

        Raises ResultFileError (a ValueError) naming the file when it is not a result file, is corrupted or
        truncated, or does not fit ``model`` (bodies, coordinates); OSError when it cannot be opened.
        """
        path = os.fspath(path)
        return cls._from_arrays(path, read_npz(path, "SimulationResult.save or `rmbd run`"), model)

    @classmethod
    def _from_arrays(cls, path, arrays, model):
        def fail(what):
            raise ResultFileError(f"{path}: {what}")

        if "format" not in arrays:
            if "t" in arrays and "kind" in arrays:
                fail("a file of `rmbd run`, not of SimulationResult.save: read it with numpy.load")
            fail("not a result file of SimulationResult.save (no 'format' entry)")
        if arrays["format"].shape != () or str(arrays["format"]) != _RESULT_FORMAT:
            fail("not a result file of SimulationResult.save (wrong 'format' entry)")
        version = arrays.get("version")
        if version is None or version.shape != () or version.dtype.kind != "i" or int(version) != _RESULT_VERSION:
            fail(f"result file version {version}, this library reads version {_RESULT_VERSION}")

        def entry(name, kind, ndim, shape=None):
            if name not in arrays:
                fail(f"entry {name!r} is missing")
            value = arrays[name]
            if value.dtype.kind != kind or value.ndim != ndim:
                fail(f"entry {name!r} has dtype {value.dtype} and {value.ndim} dimensions, expected kind {kind!r} "
                     f"and {ndim}")
            if shape is not None and any(want is not None and got != want
                                         for got, want in zip(value.shape, shape, strict=True)):
                fail(f"entry {name!r} has shape {value.shape}, expected {tuple(shape)}")
            if kind == "f" and not np.all(np.isfinite(value)):
                fail(f"entry {name!r} holds non-finite values")
            return value

        t = entry("t", "f", 1)
        nt = t.size
        if nt == 0 or np.any(np.diff(t) < 0.0):
            fail("entry 't' must be a non-empty, non-decreasing array of times")
        names = entry("body_names", "U", 1)
        model_names = None if model is None else tuple(model.names if isinstance(model, Model3D)
                                                       else model.body_names)
        if model is not None and tuple(names) != model_names:
            fail(f"the result's bodies {tuple(names)[:5]}{'...' if len(names) > 5 else ''} do not match the "
                 f"model's {model_names[:5]}{'...' if model.nbodies > 5 else ''}")
        nq = model.nq if model is not None else None
        q = entry("q", "f", 2, (nt, nq))
        nq = q.shape[1]
        # a Model3D's qd holds v (nv columns); a planar model's qd has nq columns; without a model: as stored
        nv = model.nv if isinstance(model, Model3D) else (nq if model is not None else None)
        qd = entry("qd", "f", 2, (nt, nv))
        nv = qd.shape[1]
        work = np.column_stack((entry("dissipated_work", "f", 1, (nt,)), entry("applied_work", "f", 1, (nt,))))
        method = str(entry("method", "U", 0))
        status = str(entry("status", "U", 0))
        if status not in _RESULT_STATUSES:
            fail(f"entry 'status' is {status!r}, expected one of {_RESULT_STATUSES}")
        stats = entry("stats", "i", 1, (3,))
        if np.any(stats < 0):
            fail("entry 'stats' (evaluations, steps, rejected steps) holds negative counts")
        result = cls(model, t, q, qd, work, method, *(int(v) for v in stats))
        result.status = status
        result.body_names = tuple(str(name) for name in names)
        n_events = int(entry("n_events", "i", 0))
        if not 0 <= n_events <= len(arrays):
            fail(f"entry 'n_events' is {n_events}")
        for i in range(n_events):
            t_ev = entry(f"t_events_{i}", "f", 1)
            result.t_events.append(t_ev)
            result.q_events.append(entry(f"q_events_{i}", "f", 2, (t_ev.size, nq)))
            result.qd_events.append(entry(f"qd_events_{i}", "f", 2, (t_ev.size, nv)))
        if "constraint_drift" in arrays:
            result.constraint_drift = entry("constraint_drift", "f", 1, (nt,))
        if ("z" in arrays) != ("zd" in arrays):
            fail("entries 'z' and 'zd' come together")
        if "z" in arrays:
            nbodies = len(names)
            result.z = entry("z", "f", 3, (nt, nbodies, 3))
            result.zd = entry("zd", "f", 3, (nt, nbodies, 3))
        return result

    def __repr__(self):
        return (f"<SimulationResult {self.method}: {self.t.size} samples, t = {self.t[0]:g} .. {self.t[-1]:g} s, "
                f"{self.nsteps} steps ({self.nrejected} rejected), {self.nfev} evaluations>")


# ---- simulate -----------------------------------------------------------------------------------------------------

def _positive(value, what):
    value = float(value)
    if not (value > 0.0 and np.isfinite(value)):
        raise ValueError(f"{what} must be finite and > 0, got {value}")
    return value


def _scipy_solver(name):
    """scipy's OdeSolver class of that name (RK45, DOP853, Radau, BDF, LSODA, RK23), or a ValueError."""
    import scipy.integrate  # noqa: PLC0415

    solver = getattr(scipy.integrate, name, None)
    if not (isinstance(solver, type) and issubclass(solver, scipy.integrate.OdeSolver)
            and solver is not scipy.integrate.OdeSolver):
        raise ValueError(f"unknown method 'scipy:{name}'; scipy's solvers are scipy:RK45, scipy:RK23, scipy:DOP853, "
                         "scipy:Radau, scipy:BDF, scipy:LSODA")
    return solver


class _StopRhs(Exception):
    """A right-hand side evaluation failed inside a scipy solver (its status is in the run's failures)."""


def _scipy_run(method, callback, key, system, y0, t0, t_end, rtol, atol, t_eval, max_step, first_step, events,
               max_steps, control):
    """scipy's solver ``method`` stepped from Python on the compiled right-hand side, so that a failure keeps the
    samples so far. Output, events and statistics as the compiled adaptive loop: returns (status, t_fail, t, y,
    nfev, nsteps, event records)."""
    from scipy.optimize import brentq  # noqa: PLC0415

    dy = np.empty_like(y0)
    failure = []

    def rhs(t, y):
        status = integrators.system_rhs(callback, key, system, t, y, dy)
        if status:
            failure.append((status, t))
            raise _StopRhs
        return dy.copy()

    options = dict(rtol=rtol, atol=atol, max_step=max_step)
    if method in IMPLICIT_SCIPY:
        n = y0.size
        f0, ytmp, ftmp, jac = np.empty(n), np.empty(n), np.empty(n), np.empty((n, n))

        def jacobian(t, y):
            status = integrators.system_rhs(callback, key, system, t, y, f0)
            if not status:
                status = integrators.rhs_jacobian(callback, key, system, t, y, f0, ytmp, ftmp, jac)
            if status:
                failure.append((status, t))
                raise _StopRhs
            return jac.copy()

        options["jac"] = jacobian
    if first_step is not None:
        options["first_step"] = first_step
    n_events = len(events.functions)
    values = np.empty(n_events)

    def event_values(t, y):
        events(t, y, None, values)
        return values.copy()

    times, states, records = [], [], []
    outputs = t_eval
    next_output = 0
    if outputs is None:
        times.append(t0)
        states.append(y0.copy())
    else:  # t_eval holds t0
        times.append(outputs[0])
        states.append(y0.copy())
        next_output = 1
    nsteps = 0
    solver = None
    status, t_fail = L.STATUS_OK, t0
    try:
        g_old = event_values(t0, y0) if n_events else None
        solver = _scipy_solver(method)(rhs, t0, y0, t_end, **options)
        while solver.status == "running":
            if nsteps >= max_steps:
                status, t_fail = L.STATUS_MAX_STEPS, solver.t
                break
            status = control.status()
            if status:
                t_fail = solver.t
                break
            t_old = solver.t
            solver.step()
            if solver.status == "failed":
                status, t_fail = L.STATUS_STEP_UNDERFLOW, solver.t
                break
            nsteps += 1
            dense = solver.dense_output() if (outputs is not None or n_events) else None
            t_stop = None
            if n_events:  # sign changes as in integrators.integrate_adaptive, located by brentq on the dense output
                g_new = event_values(solver.t, solver.y)
                for i in range(n_events):
                    g0, g1, direction = g_old[i], g_new[i], events.directions[i]
                    if (g0 < 0.0 <= g1 and direction >= 0.0) or (g0 > 0.0 >= g1 and direction <= 0.0):
                        t_hit = solver.t if g1 == 0.0 else brentq(
                            lambda s, i=i, dense=dense: event_values(s, dense(s))[i], t_old, solver.t,
                            xtol=4 * np.finfo(float).eps * max(1.0, abs(solver.t)))
                        y_hit = solver.y.copy() if t_hit == solver.t else dense(t_hit)
                        records.append((i, float(t_hit), y_hit))
                        if events.terminal[i] and (t_stop is None or t_hit < t_stop):
                            t_stop = float(t_hit)
                g_old = g_new
            if outputs is not None:
                last = solver.t if t_stop is None else t_stop
                while next_output < outputs.size and outputs[next_output] <= last:
                    t_out = outputs[next_output]
                    times.append(t_out)
                    states.append(solver.y.copy() if t_out == solver.t else dense(t_out))
                    next_output += 1
            if t_stop is not None:  # a terminal event ends the run there
                if times[-1] != t_stop:
                    times.append(t_stop)
                    states.append(dense(t_stop))
                status, t_fail = L.STATUS_EVENT, t_stop
                break
            if outputs is None:
                times.append(solver.t)
                states.append(solver.y.copy())
    except _StopRhs:
        status, t_fail = failure[0]
    except Exception as exc:  # noqa: BLE001 - an event function that failed: kept for the wrapper, as the bridge does
        status, t_fail = L.STATUS_INPUT_FAILED, (solver.t if solver is not None else t0)
        events.failure = (exc, t_fail)
    nfev = solver.nfev if solver is not None else 0
    return status, t_fail, np.array(times), np.array(states).reshape(-1, y0.size), nfev, nsteps, records


def simulate(model, q0, qd0, t_end, method="dopri5", rtol=1e-9, atol=1e-12, *, t0=0.0, dt=None, t_eval=None,
             every=1, max_step=np.inf, first_step=None, max_steps=10_000_000, tau=None, drivers=None,
             events=None, midpoint_tol=1e-13, progress=None, formulation="recursive", stabilization=None,
             alpha=0.0, beta=0.0, max_wall_time=None, rho_inf=None, newton_tol=None, max_order=None,
             **augmented_options):
    """Integrate M(q) qdd + h(q, qd) = tau + Q_elements from (q0, qd0) at t0 to t_end.

    A ``Model3D`` (spatial model) integrates M(q) vdot + h(q, v) = tau with the state (q (nq), v (nv)):
    q' = v for Euclidean coordinates, quat' = 1/2 quat (x) (0, omega) for a quaternion (omega in the child frame),
    vdot by the articulated-body algorithm (``_kernels.spatial_system``). Every quaternion is renormalised after
    each accepted step of the numba methods (within a step, and in scipy's, the dynamics see it normalised), and
    ``result.q`` holds unit quaternions; ``result.qd`` holds v (nt, nv). tau is (nv,) or tau(t) / tau(t, q, v);
    q0's quaternions off unit norm by more than 1e-12 are normalised with a RuntimeWarning (zero: StateError).
    Not for a Model3D yet: drivers, formulation, stabilization / alpha / beta, generalized_alpha (ValueError).

    Parameters
    ----------
    model : Model or Model3D
    q0, qd0 : array_like, shape (nq,)
        Initial joint coordinates and rates (entries of driven coordinates are replaced by their drivers); for a
        Model3D q0 (nq,) and the velocities v0 (nv,).
    t_end : float
        Final time [s], > t0.
    method : str
        "dopri5": adaptive Dormand-Prince 5(4) with error control by ``rtol``/``atol`` (per component of
        (q, qd)) and 4th-order dense output. "dop853": adaptive Dormand-Prince 8(5,3), for tight tolerances
        (no dense output: use ``every``). "rk4": classic fixed-step Runge-Kutta with step ``dt``.
        "implicit_midpoint": fixed step ``dt``, symmetric, bounded energy error on long conservative runs.
        "generalized_alpha": fixed step ``dt``, Chung-Hulbert generalised-alpha (second order, L-stable for
        rho_inf < 1) with numerical damping set by ``rho_inf`` in [0, 1] (default 0.9; 1 = none, 0 = the highest
        frequencies annihilated in one step), Newton with an O(N) matrix (``recursive_mbd.implicit``; closed
        loops by its Schur complement, O(N m + m^3), index 3), converged to ``newton_tol`` (default 1e-12)
        [rad or m]: for long chains and stiff springs, where explicit steps shrink like 1/N. t_eval and events
        on its cubic Hermite dense output; everything else as for the other numba methods.
        "bdf": variable-step, variable-order BDF (orders 1-5, Shampine-Reichelt form) with error control by
        ``rtol``/``atol``, dense output (t_eval, events) and Newton iterations of O(N) cost (the Newton matrix
        M + c C + c^2 K factorised by ``implicit.effective_factor`` and reused across steps;
        ``recursive_mbd._kernels.bdf``), the whole loop compiled; closed loops in the index-2 (GGL) form;
        ``result.newton_iterations``, ``result.newton_factorizations``. ``max_order`` (1..5, default 5) caps the
        order: BDF3-5 are not A-stable, and on a long undamped chain its unexcited high modes grow at orders 3-5
        until the steps sit at their stability limit; the run detects that limit (a RuntimeWarning says when)
        and goes on at orders 1-2 (A-stable), but give max_order=2 there from the start: the steps spent
        before the detection and after it are many (serial_chain(10_000) over 10 s: 10,953 against 1,401;
        ``benchmarks/bdf.py``).
        "scipy:NAME": scipy's solve_ivp method NAME (RK45, DOP853, Radau, BDF, LSODA, ...) on the same
        right-hand side (one Python call per evaluation). For stiff problems (stiff damped springs) use
        "scipy:Radau" or "scipy:BDF": they get the Jacobian from ``integrators.rhs_jacobian`` (2 nf
        forward-dynamics evaluations in compiled code, structure exploited), evaluated only when their Newton
        iteration asks for it, not every step.
    t_eval : array_like, optional
        Sorted output times in [t0, t_end] (dopri5, generalized_alpha, bdf and scipy methods); t0 and t_end
        are added.
    every : int
        Without t_eval: store every ``every``-th step (t0 and t_end always stored).
    max_step, first_step : float, optional
        Bounds on the adaptive step [s]; first_step defaults to Hairer's estimate.
    dt : float
        Step [s] of the fixed-step methods: (t_end - t0) / dt steps, rounded up, the last one shortened to land
        on t_end; a dt longer than t_end - t0 takes one step of t_end - t0. A step count above ``max_steps`` is
        refused before the run.
    max_steps : int
        Maximum number of steps (accepted + rejected) of every method; a run that needs more fails.
    max_wall_time : float, optional
        Wall-clock limit [s]: the run stops with SimulationError (``result.status`` "time_limit") once it is
        spent, keeping the samples so far.
    tau : array_like (nq,), or callable
        Generalised joint forces: constant, ``tau(t)`` or a controller ``tau(t, q, qd)``, returning (nq,). A
        numba-compiled function (``@numba.njit``) is called inside the compiled time loop (one compilation of the
        loop per function, then about 0.1 us per evaluation); a plain Python function costs about 6 us more
        per evaluation (benchmarks/integrators.py).
    drivers : dict, optional
        Prescribed motion ``{body: f}`` or ``{body: (f, f_dot, f_ddot)}`` for revolute or prismatic joints:
        q_j = f(t); without derivatives they are taken by central differences. Driven coordinates leave the
        integrated state; ``result.driving_forces()`` gives the joint force each driver supplies.
    events : callable or list of callables, optional
        Event functions ``g(t, q, qd) -> float`` (dopri5, generalized_alpha, bdf and scipy methods). Each
        zero crossing is located on the dense output and recorded in ``result.t_events`` / ``q_events`` /
        ``qd_events``. As in scipy, an attribute ``g.terminal = True`` ends the run at the first crossing, and
        ``g.direction`` > 0 (< 0) counts only rising (falling) crossings.
    midpoint_tol : float
        Convergence tolerance of the implicit midpoint iteration (relative change per component).
    progress : bool, optional
        Show a tqdm progress bar over simulated time (the optional extra ``progress``). Default: only when
        stderr is a terminal. With a bar the run is split into 100 compiled pieces (an adaptive method restarts
        its step size at each).
    formulation : {"recursive", "augmented"}
        "augmented" integrates the absolute-coordinate formulation instead (``augmented.TimeLoop``: the state
        (z, zd) of every centre of mass, the tree solver of ``augmented.forward_dynamics``, loops and drivers as
        auxiliary rows) in the same compiled time loops, with every method but generalized_alpha; the result
        has ``z``, ``zd`` and ``constraint_drift`` besides q and qd.
    stabilization : {"projection", "baumgarte", "none"}, optional
        How loop constraints (and, in the augmented formulation, joint constraints) are kept: "projection" moves
        q and qd back onto phi = 0, phi' = 0 after every accepted step (numba methods; the default for a model
        with loops); "baumgarte" adds 2 alpha phi' + beta^2 phi to the acceleration constraint (``alpha``,
        ``beta`` [1/s]; the augmented default, with 0, 0); "none". A model with loops starts from (q0, qd0)
        projected onto the constraints (a gap above 1e-6 is an error: use ``rm.assemble``); its result has
        ``constraint_drift``, max |phi| at each sample.

    Returns
    -------
    SimulationResult

    Raises
    ------
    SimulationError
        On a blow-up (non-finite state, step size underflow), too many steps, an implicit iteration that does not
        converge, singular dynamics, a user function (tau, a time-varying element, a driver, an event) that
        raises or returns non-finite values or the wrong shape (the exception chained as ``__cause__``), or
        ``max_wall_time``; its ``result`` holds the samples up to the last accepted step (``result.status``
        "failed" or "time_limit") and ``t`` the time of failure.
    KeyboardInterrupt
        On Ctrl-C (SIGINT, in the main thread) during the run, within milliseconds; its ``result`` holds the
        samples so far (``result.status`` "interrupted").
    """
    _check_options(augmented_options, formulation)
    spatial = isinstance(model, Model3D)
    if spatial:
        _refuse_spatial_options(model, method, formulation, drivers, stabilization, alpha, beta)
    max_steps = _max_steps(max_steps)
    rtol, atol, every, max_step, first_step, max_steps, alpha, beta, t_eval, midpoint_tol = _checks.run_options(
        rtol=rtol, atol=atol, every=every, max_step=max_step, first_step=first_step, max_steps=max_steps,
        alpha=alpha, beta=beta, t_eval=t_eval, midpoint_tol=midpoint_tol)
    t0, t_end = _checks.real(t0, "t0"), _checks.real(t_end, "t_end")
    max_wall_time = None if max_wall_time is None else _positive(max_wall_time, "max_wall_time")
    if formulation not in _FORMULATIONS:
        raise ValueError(f"formulation must be 'recursive' or 'augmented', got {formulation!r}")
    if formulation != "recursive" and method in ("generalized_alpha", "bdf"):
        raise ValueError(f"method {method!r} integrates the recursive formulation (its Newton matrix is the joint-"
                         f"space one), not {formulation!r}")
    if method == "generalized_alpha":
        if max_order is not None:
            raise ValueError("max_order is an option of method 'bdf', not 'generalized_alpha'")
        return _generalized_alpha(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval, progress,
                                  max_wall_time, max_steps, rho_inf, newton_tol)
    if rho_inf is not None or newton_tol is not None:
        raise ValueError(f"rho_inf and newton_tol are options of method 'generalized_alpha', not {method!r}")
    scipy_method = method[6:] if isinstance(method, str) and method.startswith("scipy:") else None
    if scipy_method is None and method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {sorted(METHODS)} or 'scipy:NAME'")
    if scipy_method is not None:
        _scipy_solver(scipy_method)
    if spatial:
        if model.nv == 0:
            raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
        q0, qd0 = _spatial_start(model, q0, qd0)
    else:
        workspace(model)
        if model.nq == 0:
            raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
        q0 = as_vector(model, q0, "q0").copy()
        qd0 = as_vector(model, qd0, "qd0").copy()
    for vec, what in ((q0, "q0"), (qd0, "qd0")):
        if not np.all(np.isfinite(vec)):
            raise StateError(f"{what}[{int(np.flatnonzero(~np.isfinite(vec))[0])}] is not finite")
    t0, t_end = check_time_span(t0, t_end)
    fixed = method in FIXED_STEP
    if fixed and dt is None:
        raise ValueError(f"method {method!r} is fixed-step: give dt")
    if not fixed and dt is not None:
        raise ValueError(f"dt is for fixed-step methods; {method} chooses its steps from rtol and atol")
    if fixed:
        dt = _positive(dt, "dt")
        fixed_step_count(t0, t_end, dt, max_steps)
    elif not float(max_step) > 0.0:
        raise ValueError(f"max_step must be > 0 (inf for no bound), got {max_step}")
    elif np.isfinite(float(max_step)) and (t_end - t0) / _positive(max_step, "max_step") > max_steps:
        raise ValueError(f"max_step = {float(max_step):g} s needs more than max_steps = {max_steps} steps from "
                         f"t0 = {t0:g} to t_end = {t_end:g} s: raise max_step or max_steps")
    if t_eval is not None and (fixed or (method in TABLEAUS and TABLEAUS[method].DENSE is None)):
        raise ValueError(f"t_eval needs a method with dense output (dopri5 or scipy:NAME); {method} stores "
                         "every-th step (every=)")

    if spatial:
        inputs = _SpatialInputs(model, tau)
        callback, key = inputs.callback()
        loop = SpatialTimeLoop(model, inputs)
    else:
        inputs = _Inputs(model, tau, drivers)
        callback, key = inputs.callback()
        stabilization = _stabilization(model, stabilization, scipy_method, formulation)
        loop = _FORMULATIONS[formulation](model, inputs, stabilization, float(alpha), float(beta),
                                          **augmented_options)
    event_functions = _Events(model, events, inputs, loop)
    if event_functions.functions and scipy_method is None and method != "bdf" and (
            method not in TABLEAUS or TABLEAUS[method].DENSE is None):
        raise ValueError(f"events need a method with dense output (dopri5 or scipy:NAME), not {method!r}")
    return _simulate(model, method, scipy_method, inputs, callback, key, loop, q0, qd0, t0, t_end, rtol, atol, dt,
                     t_eval, every, max_step, first_step, max_steps, midpoint_tol, event_functions, progress,
                     max_wall_time, _max_order(method, max_order))


def _refuse_spatial_options(model, method, formulation, drivers, stabilization, alpha, beta):
    """ValueError for a spatial model (``Model3D``) or an option of simulate that it does not take yet."""
    if model.nloops:
        raise ValueError(f"simulating a Model3D with closed loops is not available yet ({model.nloops} loop(s)); "
                         "recursive_mbd.spatial_loops gives their forward dynamics, assembly and statics")
    if formulation != "recursive":
        raise ValueError(f"a Model3D is integrated by the spatial recursive formulation; formulation={formulation!r} "
                         "is for planar models")
    if method in ("generalized_alpha", "bdf"):
        raise ValueError(f"method {method!r} integrates planar models only; for a Model3D use dopri5, "
                         "dop853, rk4, implicit_midpoint or scipy:NAME")
    if drivers:
        raise ValueError("drivers are not supported on a Model3D yet (prescribe the motion through tau)")
    if stabilization not in (None, "none") or alpha or beta:
        raise ValueError("stabilization, alpha and beta are for loop constraints; a Model3D has none (its "
                         "quaternions are renormalised after every accepted step)")


def _augmented(model, inputs, stabilization, alpha, beta, solver=None):
    """The augmented formulation's time-loop pieces (``augmented.TimeLoop``); its KKT solves are the tree
    solver's (the other solvers of ``augmented.forward_dynamics`` are Python, for comparison)."""
    from .augmented import TimeLoop  # noqa: PLC0415  (scipy.sparse only for this formulation)

    if solver not in (None, "tree"):
        raise ValueError(f"the augmented time loop solves with solver='tree' (compiled), not {solver!r}; "
                         "augmented.forward_dynamics(..., solver=...) evaluates the others")
    return TimeLoop(model, inputs, stabilization, alpha, beta)


_FORMULATIONS = {"recursive": RecursiveTimeLoop, "augmented": _augmented}


def _max_order(method, max_order):
    """The checked ``max_order`` of method "bdf" (default 5); refused for any other method."""
    if max_order is None:
        return 5
    if method != "bdf":
        raise ValueError(f"max_order is an option of method 'bdf', not {method!r}")
    if isinstance(max_order, bool) or not isinstance(max_order, (int, np.integer)) or not 1 <= max_order <= 5:
        raise ValueError(f"max_order must be an integer in 1..5 (the BDF orders), got {max_order!r}")
    return int(max_order)


def _generalized_alpha(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval, progress, max_wall_time,
                       max_steps, rho_inf, newton_tol):
    """Dispatch to ``implicit.simulate_generalized_alpha`` (its compiled time loop)."""
    from . import implicit  # noqa: PLC0415

    return implicit.simulate_generalized_alpha(
        model, q0, qd0, t0, t_end, dt, every=every, t_eval=t_eval, tau=tau, drivers=drivers, events=events,
        rho_inf=0.9 if rho_inf is None else rho_inf, newton_tol=1e-12 if newton_tol is None else newton_tol,
        max_steps=max_steps, progress=progress, max_wall_time=max_wall_time)


# the keyword arguments of simulate (and the augmented formulation's own), for "did you mean" suggestions
_AUGMENTED_OPTIONS = ("solver",)
_MAX_TIME = 1e15  # [s]: beyond, float64 resolves times to worse than 0.1 s


def _check_options(options, formulation):
    """Unknown keyword arguments of simulate: a TypeError naming them, with the nearest known name."""
    if not options:
        return
    known = [*inspect.signature(simulate).parameters, *_AUGMENTED_OPTIONS]
    known = [name for name in known if name not in ("augmented_options", "model", "q0", "qd0", "t_end")]
    unknown = [name for name in options if name not in _AUGMENTED_OPTIONS]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, known, n=1)
            hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
        raise TypeError(f"simulate() got unexpected keyword argument(s) {', '.join(hints)}")
    if options and formulation != "augmented":
        raise TypeError(f"options {sorted(options)} are for formulation='augmented'")


def _max_steps(max_steps):
    if isinstance(max_steps, (bool, np.bool_)) or not isinstance(max_steps, (int, np.integer, float)):
        raise TypeError(f"max_steps must be an integer, got {max_steps!r}")
    if not (1 <= max_steps <= 2**62) or max_steps != int(max_steps):
        raise StateError(f"max_steps must be an integer in [1, 2**62], got {max_steps!r}")
    return int(max_steps)


def check_time_span(t0, t_end):
    """(t0, t_end) as floats, finite, t0 < t_end and within +-1e15 s (beyond, float64 times are coarser than
    0.1 s); otherwise a ValueError naming them."""
    t0, t_end = float(t0), float(t_end)
    if not (np.isfinite(t0) and np.isfinite(t_end) and t_end > t0):
        raise ValueError(f"need finite t0 < t_end, got t0 = {t0}, t_end = {t_end}")
    if max(abs(t0), abs(t_end)) > _MAX_TIME:
        raise ValueError(f"t0 = {t0:g}, t_end = {t_end:g} s: times beyond {_MAX_TIME:g} s are not supported (float64 "
                         "resolves them to worse than 0.1 s; a run that long cannot finish)")
    return t0, t_end


def fixed_step_count(t0, t_end, dt, max_steps):
    """Number of steps of dt from t0 to t_end: rounded up, at least one (a dt beyond the span takes one step of
    t_end - t0); a ValueError when it exceeds max_steps, before anything runs."""
    ratio = (t_end - t0) / dt
    if not ratio <= max_steps:
        raise ValueError(f"dt = {dt:g} s needs {ratio:.3g} steps from t0 = {t0:g} to t_end = {t_end:g} s, more "
                         f"than max_steps = {max_steps}: raise dt or max_steps")
    return max(1, math.ceil(ratio - 1e-9))  # the slack: a span that is a whole number of steps up to round-off


def _stabilization(model, stabilization, scipy_method, formulation="recursive"):
    if stabilization is None and formulation != "recursive":  # the joints are constraints too: alpha, beta
        return "baumgarte"
    if stabilization is None:
        return "projection" if model.nloops and scipy_method is None else "none"
    if stabilization not in ("projection", "baumgarte", "none"):
        raise ValueError(f"stabilization must be 'projection', 'baumgarte' or 'none', got {stabilization!r}")
    if stabilization == "projection" and scipy_method is not None and (model.nloops or formulation != "recursive"):
        raise ValueError("projection runs inside the numba integrators; with scipy:NAME use 'baumgarte' or 'none'")
    return stabilization


def _consistent_start(model, inputs, q0, qd0, t0):
    """(q0, qd0) projected onto the loop constraints (drivers applied first); a large gap is an error."""
    from .loops import RedundantConstraintWarning, constraints, project  # noqa: PLC0415

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
        warnings.warn(f"the loop equations are redundant at q0: rank {rank} of {model.nconstraints}; the "
                      "multipliers are the minimum-norm ones", RedundantConstraintWarning, stacklevel=5)
    return q0, qd0


def _simulate(model, method, scipy_method, inputs, callback, key, loop, q0, qd0, t0, t_end, rtol, atol, dt, t_eval,
              every, max_step, first_step, max_steps, midpoint_tol, events, progress, max_wall_time, max_order=5):
    system = loop.system
    if inputs.has_python or inputs.tau_function is not None:
        # a first evaluation in Python: a function that fails or returns the wrong shape is reported clearly here
        inputs(t0, q0.copy(), qd0.copy(), np.zeros(inputs.size))
    y0 = loop.initial_state(q0, qd0, t0, callback, key)
    status = integrators.system_rhs(callback, key, system, t0, y0, np.empty_like(y0))
    if status:
        _raise_kernel_status(model, status)

    n = y0.size
    nrejected = 0
    t_eval_arr = None
    if t_eval is not None:
        t_eval_arr = np.asarray(t_eval, dtype=float).ravel()
        if (t_eval_arr.size == 0 or np.any(np.diff(t_eval_arr) < 0) or t_eval_arr[0] < t0
                or t_eval_arr[-1] > t_end):
            raise ValueError(f"t_eval must be a non-empty sorted array within [t0, t_end] = [{t0}, {t_end}]")
        t_eval_arr = np.unique(np.concatenate(([t0], t_eval_arr, [t_end])))  # t0 and t_end always

    control = _RunControl(max_wall_time)
    if scipy_method is not None:
        if progress:
            warnings.warn("progress bars are for the numba methods; scipy:NAME runs without one", stacklevel=3)
        rtol = _positive(rtol, "rtol")
        atol = _positive(atol, "atol")
        with control:
            status, t_fail, t_out, y_out, nfev, nsteps, event_records = _scipy_run(
                scipy_method, callback, key, system, y0, t0, t_end, rtol, atol, t_eval_arr,
                max_step if np.isfinite(max_step) else np.inf, first_step, events, max_steps, control)
        if t_eval_arr is None and every > 1:
            keep = np.unique(np.r_[0:t_out.size:every, t_out.size - 1])
            t_out, y_out = t_out[keep], y_out[keep]
    else:
        segment = _numba_segment_runner(method, callback, key, system, n, rtol, atol, dt, every, max_step,
                                        first_step, max_steps, midpoint_tol, events, control, max_order)
        with control:
            status, t_fail, t_out, y_out, nfev, nsteps, nrejected, event_records = _run_segments(
                segment, y0, t0, t_end, t_eval_arr, dt if method in FIXED_STEP else None, progress)

    result = _make_result(model, loop, callback, key, np.array(t_out), np.array(y_out), method, nfev, nsteps,
                          nrejected)
    if method == "bdf":
        result.newton_iterations = segment.newton_iterations
        result.newton_factorizations = segment.factorizations
    for i in range(len(events.functions)):
        hits = [(t_ev, y_ev) for index, t_ev, y_ev in event_records if index == i]
        states = [events.state(t_ev, y_ev) for t_ev, y_ev in hits]
        result.t_events.append(np.array([t_ev for t_ev, _ in hits]))
        result.q_events.append(np.array([q for q, _ in states]).reshape(-1, result.q.shape[1]))
        result.qd_events.append(np.array([qd for _, qd in states]).reshape(-1, result.qd.shape[1]))
    if status == L.STATUS_EVENT:
        result.status = "event"
        status = L.STATUS_OK
    if control.interrupted or L.decode_status(status)[0] == L.STATUS_INTERRUPTED:
        result.status = "interrupted"
        interrupt = KeyboardInterrupt(f"{method} interrupted at t = {t_fail:.9g} s; {result.t.size} samples up to "
                                      f"t = {result.t[-1]:.9g} s are kept in .result")
        interrupt.result = result
        interrupt.t = t_fail
        raise interrupt
    if status != L.STATUS_OK:
        _raise_failure(model, method, status, t_fail, result, max_steps, control, inputs, events, loop)
    return result


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
            reason = f"the compiled tau function {inputs.tau_name} returned a non-finite value"
        elif index == L.INPUT_SHAPE:
            reason = f"the compiled tau function {inputs.tau_name} returned the wrong number of values"
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
        if kind in reasons:
            reason = reasons[kind] + getattr(control, "detail", "")
        elif kind == L.STATUS_LOOPS_OPEN:
            reason = (f"after the step to this time the projection cannot close loop {model.loop_names[index]!r}: "
                      "no configuration of the free coordinates closes it")
        else:
            try:
                _raise_kernel_status(model, status)
            except (ModelError, StateError) as err:
                reason = str(err)
            else:  # pragma: no cover - raise_status always raises
                reason = f"status {status}"
    free = getattr(loop.system, "free", None)  # the recursive formulation's free coordinates
    if free is not None and model.nloops and kind in (L.STATUS_STEP_UNDERFLOW, L.STATUS_LOOPS_OPEN):
        from .loops import lock_diagnosis  # noqa: PLC0415  (a driven mechanism in a dead point)

        lock = lock_diagnosis(model, result.q[-1], free)
        if lock is not None:
            reason = f"{lock} at t = {result.t[-1]:.9g} s; {reason}"
    raise SimulationError(f"{method} failed at t = {t_fail:.9g} s: {reason}; "
                          f"{result.t.size} samples up to t = {result.t[-1]:.9g} s are kept in .result",
                          t_fail, result) from cause


def _raise_kernel_status(model, status):
    """The exception of a kernel status: the planar route's, or the spatial one's (q, v, tau of a Model3D)."""
    if isinstance(model, Model3D):
        from .spatial import _raise  # noqa: PLC0415

        _raise(model, status, ("q", "v", "tau"))
    raise_status(model, status)


def _numba_segment_runner(method, callback, key, system, n, rtol, atol, dt, every, max_step, first_step,
                          max_steps, midpoint_tol, events, control, max_order=5):
    """A function (y, ta, tb, t_eval) -> (status, t_fail, t, y, nfev, nsteps, nrejected, events) running one
    compiled time loop from ta to tb, polling ``control`` (a _RunControl)."""
    monitor = (_python_bridge, control.key, control.control)
    if method in FIXED_STEP:
        dt = _positive(dt, "dt")
        midpoint = method == "implicit_midpoint"
        tableau = RK4 if midpoint else TABLEAUS[method]  # the midpoint rule uses 2 rows of k, no tableau

        def run(y_start, ta, tb, _):
            control.restart()
            capacity = integrators.output_rows(n)
            status, t_fail, count, t_out, y_out, nfev, nsteps = integrators.integrate_fixed(
                callback, key, system, y_start, ta, tb, dt, fixed_step_count(ta, tb, dt, max_steps), every,
                tableau.A, tableau.B, tableau.C, midpoint, float(midpoint_tol), 50, np.zeros((tableau.C.size, n)),
                np.empty(capacity), np.empty((capacity, n)), *monitor)
            return status, t_fail, t_out[:count], y_out[:count], nfev, nsteps, 0, []

        return run
    tableau = TABLEAUS.get(method)
    rtol = _positive(rtol, "rtol")
    atol = _positive(atol, "atol")
    max_step = _positive(max_step, "max_step") if np.isfinite(max_step) else np.inf
    first = 0.0 if first_step is None else _positive(first_step, "first_step")
    if events.functions:
        events_fn, events_key = _python_bridge, next(_KEYS)
        _PYTHON_INPUTS[events_key] = events
    else:
        events_fn, events_key = integrators.no_inputs, 0
    if method == "bdf":
        from .bdf import segment_runner  # noqa: PLC0415

        return segment_runner(callback, key, system, rtol, atol, first, max_step, max_steps, max_order, every,
                              events_fn, events_key, events, monitor, control)
    optional = [np.empty(0) if v is None else v for v in (tableau.E3, tableau.DENSE)]

    def run(y_start, ta, tb, t_eval):
        control.restart()
        capacity = integrators.output_rows(n, t_eval)
        (status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t,
         ev_y) = integrators.integrate_adaptive(
            callback, key, system, y_start, ta, tb, rtol, atol, first, max_step, int(max_steps),
            np.empty(0) if t_eval is None else t_eval, every, tableau.A, tableau.B, tableau.C, tableau.E,
            optional[0], tableau.order, optional[1], np.zeros((tableau.C.size, n)), np.empty(capacity),
            np.empty((capacity, n)), events_fn, events_key, events.directions, events.terminal, np.empty(16),
            np.empty((16, n + 1)), *monitor)
        records = [(int(row[0]), t_ev, row[1:]) for t_ev, row in zip(ev_t[:nev], ev_y[:nev], strict=True)]
        return status, t_fail, t_out[:count], y_out[:count], nfev, nsteps, nrejected, records

    return run


def _progress_bar(enabled, t0, t_end):
    """A tqdm bar over simulated time, or None: off unless asked for or stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415 - optional extra
    except ImportError:
        warnings.warn("progress=True needs tqdm (pip install 'recursive-mbd[progress]'); running without a bar",
                      stacklevel=4)
        return None
    return tqdm(total=t_end - t0, unit="s", unit_scale=True, desc="simulate", leave=False)


def _run_segments(run, y0, t0, t_end, t_eval, dt, progress, segments=100):
    """Run the compiled loop in one piece, or, with a progress bar, in ``segments`` consecutive pieces.

    Pieces of a fixed-step method end on its dt grid, so the steps are the same as in one piece; an adaptive
    method restarts its step-size estimate at each piece. Samples, statistics and events are concatenated.
    """
    bar = _progress_bar(progress, t0, t_end)
    if bar is None:
        return run(y0, t0, t_end, t_eval)
    if dt is not None:
        total = math.ceil((t_end - t0) / dt - 1e-9)
        per = max(1, math.ceil(total / segments))
        bounds = [t0 + m * dt for m in range(0, total, per)] + [t_end]
    else:
        bounds = list(np.linspace(t0, t_end, segments + 1))
    times, states, records = [], [], []
    nfev = nsteps = nrejected = 0
    status, t_fail, y = L.STATUS_OK, t_end, y0
    try:
        for i, (ta, tb) in enumerate(itertools.pairwise(bounds)):
            piece_eval = None
            if t_eval is not None:  # the piece's ends too: its last state starts the next piece
                piece_eval = np.unique(np.concatenate(([ta], t_eval[(t_eval > ta) & (t_eval < tb)], [tb])))
            status, t_fail, t_piece, y_piece, f, st, rj, ev = run(y, ta, tb, piece_eval)
            keep = np.ones(t_piece.size, dtype=bool)
            if t_eval is not None:
                keep &= np.isin(t_piece, t_eval) | (status != L.STATUS_OK)  # a run's last sample always stays
            if i > 0:
                keep &= t_piece != ta  # the joint sample, once
            times.append(t_piece[keep])
            states.append(y_piece[keep])
            records += ev
            nfev, nsteps, nrejected = nfev + f, nsteps + st, nrejected + rj
            if t_piece.size:
                bar.update(float(t_piece[-1]) - bar.n)
            if status != L.STATUS_OK or t_piece.size == 0 or t_piece[-1] != tb:
                break
            y = y_piece[-1]
    finally:
        bar.close()
    return status, t_fail, np.concatenate(times), np.concatenate(states), nfev, nsteps, nrejected, records


def _make_result(model, loop, callback, key, t, y, method, nfev, nsteps, nrejected):
    """The result of the integrated samples: the full joint state by the formulation's map, the work terms, and
    what the formulation adds (``finish``)."""
    q, qd = loop.joint_states(t, y)
    name = method if loop.name == "recursive" else f"{loop.name} {method}"
    result = SimulationResult(model, t, q, qd, loop.work(y), name, nfev, nsteps, nrejected)
    loop.finish(result, y, callback, key)
    return result
