"""Time integration of the minimal-coordinate equations of motion: ``simulate`` and its result.

Methods are data (``METHODS``): a Butcher tableau plus, for embedded pairs, error weights and a continuous
extension; the implicit midpoint rule; and ``"scipy:NAME"``, which hands the same right-hand side to
``scipy.integrate.solve_ivp``. The numba methods run their whole time loop in compiled code
(``_kernels.integrators``), calling the recursive forward dynamics and the force elements without returning to
Python; time-varying inputs reach that loop through one callback (``_Inputs``).
"""

import inspect
import itertools
import math
import sys
import warnings
import weakref
from dataclasses import dataclass, field

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from . import _checks
from ._kernels import integrators
from ._kernels import layout as L
from .dynamics import as_vector, element_inputs, energy, forward_kinematics, raise_status, workspace
from .errors import ModelError, SimulationError, StateError


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
METHODS = (*TABLEAUS, "implicit_midpoint")  # and "scipy:NAME"; the midpoint rule: integrators._midpoint_step
FIXED_STEP = ("rk4", "implicit_midpoint")
IMPLICIT_SCIPY = ("Radau", "BDF", "LSODA")  # given the structured Jacobian of integrators.rhs_jacobian


# ---- inputs: time-varying elements, tau as a function, drivers --------------------------------------------------

# key -> _Inputs of a run, called from compiled code through the bridge; weak, so a run's inputs live exactly as
# long as the run and its result
_PYTHON_INPUTS = weakref.WeakValueDictionary()
_KEYS = itertools.count(1)


def _call_python_inputs(key, t, q, qd, u):
    _PYTHON_INPUTS[key](t, q, qd, u)


@numba.njit(cache=True)
def _call_python(key, t, q, qd, u):
    with numba.objmode():
        _call_python_inputs(key, t, q, qd, u)


@numba.cfunc(integrators.CALLBACK)  # not cached: numba cannot reload a C callback that enters object mode
def _python_bridge(key, t, q, qd, u):
    """Input callback that leaves compiled code to run the Python inputs registered under ``key``."""
    _call_python(key, t, q, qd, u)


_TAU_ADAPTERS = {}


def _compiled_tau_adapter(function, arity):
    """A compiled input callback calling the compiled ``function`` (tau(t) or tau(t, q, qd)) into u[:nq]."""
    key = (function, arity)
    if key not in _TAU_ADAPTERS:
        if arity == 1:
            @numba.cfunc(integrators.CALLBACK)
            def adapter(key, t, q, qd, u):
                value = function(t)
                for k in range(min(value.shape[0], u.shape[0])):  # shape checked once from Python before the run
                    u[k] = value[k]
        else:
            @numba.cfunc(integrators.CALLBACK)
            def adapter(key, t, q, qd, u):
                value = function(t, q, qd)
                for k in range(min(value.shape[0], u.shape[0])):
                    u[k] = value[k]
        _TAU_ADAPTERS[key] = adapter
    return _TAU_ADAPTERS[key]


def _arity(function, what):
    target = function.py_func if isinstance(function, CPUDispatcher) else function
    try:
        params = [p for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return 3
    if len(params) not in (1, 3):
        raise TypeError(f"{what} must take (t) or (t, q, qd), got a function of {len(params)} arguments")
    return len(params)


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
    """

    def __init__(self, model, tau, drivers):
        nq = model.nq
        self.model = model
        self.tau_const = np.zeros(nq)
        self.tau_function = None
        self.tau_arity = 0
        offset = model.n_element_inputs
        self.tau_offset = -1
        if callable(tau):
            self.tau_function = tau
            self.tau_arity = _arity(tau, "tau")
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
        element_inputs(self.model, t, u)
        for j, (coord, name, evaluate) in enumerate(self.drivers):
            try:
                value = evaluate(t)
            except Exception as err:  # noqa: BLE001 - say which driver failed and when
                raise StateError(f"driver of body {name!r} raised at t = {t:g}: {err!r}") from err
            if not all(math.isfinite(v) for v in value):
                raise StateError(f"driver of body {name!r}: non-finite value at t = {t:g}: {value}")
            slot = self.driver_offset + 3 * j
            u[slot:slot + 3] = value
            q[coord], qd[coord] = value[0], value[1]
        if self.tau_function is not None:
            try:
                value = self.tau_function(t) if self.tau_arity == 1 else self.tau_function(t, q, qd)
            except Exception as err:  # noqa: BLE001
                raise StateError(f"tau function raised at t = {t:g}: {err!r}") from err
            value = np.asarray(value, dtype=float).reshape(-1)
            nq = self.model.nq
            if value.shape != (nq,) or not np.all(np.isfinite(value)):
                raise StateError(f"tau function must return {nq} finite numbers, got shape {value.shape} at "
                                 f"t = {t:g}")
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
    """The tuple of arrays ``integrators.system_rhs`` reads (field list in that module)."""
    ws = workspace(model)
    nq, nb = model.nq, model.nbodies
    free = np.setdiff1d(np.arange(nq), inputs.driven_coords).astype(np.int64)
    has_elements = model.elem_int.shape[0] > 0
    m = model.nconstraints
    stab = np.array([alpha, beta, 0.0, 0.0]) if stabilization == "baumgarte" else np.zeros(4)
    loops = (model.loop_int, model.loop_real, np.zeros((nb, 3)), np.zeros(m), np.zeros(m), np.zeros((m, nq)),
             np.zeros(m), np.zeros((m, 6)), np.zeros((m, nq)), np.zeros((m, nq if inputs.drivers else 0)),
             np.zeros(nq), stab, np.zeros(m), np.zeros(1, dtype=np.int64), np.zeros((m, free.size)),
             np.array([1.0 if (stabilization == "projection" and m) else 0.0, projection_tol, 20.0]))
    return (model.body_int, model.body_real, model.gravity, model.elem_int, model.elem_real, free,
            inputs.driven_coords, inputs.driven, inputs.tau_const,
            np.array([inputs.tau_offset, inputs.driver_offset], dtype=np.int64), np.zeros(inputs.size),
            np.zeros(nq), np.zeros(nq), np.zeros(nq), ws.ws, ws.com, np.zeros((nb if has_elements else 0, 3)),
            np.zeros(nq), np.zeros(3), np.zeros((model.elem_int.shape[0], 3)), np.zeros(nq), np.zeros(nq), loops)


class _Events:
    """Event functions g(t, q, qd) -> float of one run, evaluated on the integrated state y."""

    def __init__(self, model, events, inputs, system):
        events = [events] if callable(events) else list(events or ())
        for g in events:
            if not callable(g):
                raise TypeError(f"events must be functions g(t, q, qd), got {g!r}")
        self.functions = events
        self.model = model
        self.inputs = inputs
        self.free = system[5]
        self.terminal = np.array([bool(getattr(g, "terminal", False)) for g in events], dtype=np.uint8)
        self.directions = np.array([float(getattr(g, "direction", 0.0)) for g in events])
        self.names = [getattr(g, "__name__", f"event{i}") for i, g in enumerate(events)]

    def state(self, t, y):
        """Full (q, qd) from the integrated state y (drivers evaluated at t)."""
        nq, nf = self.model.nq, self.free.size
        q, qd = np.zeros(nq), np.zeros(nq)
        q[self.free], qd[self.free] = y[:nf], y[nf:2 * nf]
        for coord, _, evaluate in self.inputs.drivers:
            q[coord], qd[coord] = evaluate(t)[:2]
        return q, qd

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


# ---- result -------------------------------------------------------------------------------------------------------

class SimulationResult:
    """Samples of a simulated trajectory.

    Attributes
    ----------
    t : ndarray, shape (nt,)
        Sample times [s]; always holds t0 and t_end (unless the run failed, then up to the failure).
    q, qd : ndarray, shape (nt, nq)
        Joint coordinates and rates at the samples (driven coordinates included).
    dissipated_work, applied_work : ndarray, shape (nt,)
        Work [J] dissipated by the dampers and done by tau, the applied forces and torques and the drivers since
        t0, integrated with the motion: E(t) + dissipated_work - applied_work = E(t0).
    method : str
    nfev, nsteps, nrejected : int
        Right-hand-side (forward-dynamics) evaluations, accepted and rejected steps.
    status : str
        "finished", or "event" when a terminal event ended the run (at t[-1]).
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

    def _require_model(self, what, inputs=True):
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
        if status:
            raise_status(self.model, status)
        return system, nf

    def qdd(self):
        """Joint accelerations at every sample, shape (nt, nq) (prescribed ones for driven coordinates)."""
        self._require_model("qdd()")
        return np.array([self._evaluate(i)[0][20].copy() for i in range(self.t.size)])

    def driving_forces(self):
        """Joint force of each driver at every sample, shape (nt, nq) (zero for free coordinates) [N m or N]."""
        self._require_model("driving_forces()")
        system = self._evaluator[2]
        out = np.zeros((self.t.size, self.model.nq))
        for i in range(self.t.size):
            self._evaluate(i)
            out[i, system[6]] = system[21][system[6]]
        return out

    def element_forces(self):
        """Per-element values at every sample, shape (nt, nelements, 3) (see ``rm.element_forces``)."""
        self._require_model("element_forces()")
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
        self._require_model("poses()", inputs=False)
        index = self.model.body_index(body)
        return np.array([forward_kinematics(self.model, q)[0][index] for q in self.q])

    def save(self, path):
        """Write the samples and statistics to a .npz file."""
        names = np.array(self.model.body_names if self.model is not None else ())
        np.savez(path, t=self.t, q=self.q, qd=self.qd, dissipated_work=self.dissipated_work,
                 applied_work=self.applied_work, method=np.array(self.method), body_names=names,
                 stats=np.array([self.nfev, self.nsteps, self.nrejected]))

    @classmethod
    def load(cls, path, model=None):
        """Read a result written by ``save``; pass the model to use energy() and poses() (not qdd() and forces)."""
        with np.load(path, allow_pickle=False) as data:
            if model is not None and tuple(data["body_names"]) != model.body_names:
                raise ValueError(f"{path}: the result's bodies {tuple(data['body_names'])[:5]}... do not match "
                                 "the model's")
            work = np.column_stack((data["dissipated_work"], data["applied_work"]))
            nfev, nsteps, nrejected = (int(v) for v in data["stats"])
            result = cls(model, data["t"], data["q"], data["qd"], work, str(data["method"]), nfev, nsteps,
                         nrejected)
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


def _scipy_event(events, index):
    values = np.empty(len(events.functions))

    def g(t, y):
        events(t, y, None, values)
        return values[index]

    g.terminal = bool(events.terminal[index])
    g.direction = float(events.directions[index])
    return g


def _scipy_run(method, callback, key, system, y0, t0, t_end, rtol, atol, t_eval, max_step, first_step, events):
    from scipy.integrate import solve_ivp  # noqa: PLC0415

    dy = np.empty_like(y0)
    failure = []

    def rhs(t, y):
        status = integrators.system_rhs(callback, key, system, t, y, dy)
        if status:
            failure.append((status, t))
            raise _StopRhs
        return dy.copy()

    kwargs = dict(method=method, rtol=rtol, atol=atol, max_step=max_step)
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

        kwargs["jac"] = jacobian
    if first_step is not None:
        kwargs["first_step"] = first_step
    if t_eval is not None:
        kwargs["t_eval"] = t_eval
    if events.functions:
        kwargs["events"] = [_scipy_event(events, i) for i in range(len(events.functions))]
    try:
        sol = solve_ivp(rhs, (t0, t_end), y0, **kwargs)
    except _StopRhs:
        status, t_fail = failure[0]
        return status, t_fail, np.array([t0]), y0[None, :], 0, 0, []
    records = []
    for i, (times, states) in enumerate(zip(sol.t_events or [], sol.y_events or [], strict=True)):
        records += [(i, float(t_ev), y_ev) for t_ev, y_ev in zip(times, states, strict=True)]
    if sol.status == 1:  # a terminal event
        return L.STATUS_EVENT, float(sol.t[-1]), sol.t, sol.y.T, sol.nfev, sol.t.size - 1, records
    if not sol.success:
        return L.STATUS_STEP_UNDERFLOW, float(sol.t[-1]), sol.t, sol.y.T, sol.nfev, sol.t.size - 1, records
    return L.STATUS_OK, t_end, sol.t, sol.y.T, sol.nfev, sol.t.size - 1, records


class _StopRhs(Exception):
    pass


def simulate(model, q0, qd0, t_end, method="dopri5", rtol=1e-9, atol=1e-12, *, t0=0.0, dt=None, t_eval=None,
             every=1, max_step=np.inf, first_step=None, max_steps=10_000_000, tau=None, drivers=None,
             events=None, midpoint_tol=1e-13, progress=None, formulation="recursive", stabilization=None,
             alpha=0.0, beta=0.0, **augmented_options):
    """Integrate M(q) qdd + h(q, qd) = tau + Q_elements from (q0, qd0) at t0 to t_end.

    Parameters
    ----------
    model : Model
    q0, qd0 : array_like, shape (nq,)
        Initial joint coordinates and rates (entries of driven coordinates are replaced by their drivers).
    t_end : float
        Final time [s], > t0.
    method : str
        "dopri5": adaptive Dormand-Prince 5(4) with error control by ``rtol``/``atol`` (per component of
        (q, qd)) and 4th-order dense output. "dop853": adaptive Dormand-Prince 8(5,3), for tight tolerances
        (no dense output: use ``every``). "rk4": classic fixed-step Runge-Kutta with step ``dt``.
        "implicit_midpoint": fixed step ``dt``, symmetric, bounded energy error on long conservative runs.
        "scipy:NAME": scipy's solve_ivp method NAME (RK45, DOP853, Radau, BDF, LSODA, ...) on the same
        right-hand side (one Python call per evaluation). For stiff problems (stiff damped springs) use
        "scipy:Radau" or "scipy:BDF": they get the Jacobian from ``integrators.rhs_jacobian`` (2 nf
        forward-dynamics evaluations in compiled code, structure exploited), evaluated only when their Newton
        iteration asks for it, not every step.
    t_eval : array_like, optional
        Sorted output times in [t0, t_end] (dopri5 and scipy methods); t0 and t_end are added.
    every : int
        Without t_eval: store every ``every``-th step (t0 and t_end always stored).
    max_step, first_step : float, optional
        Bounds on the adaptive step [s]; first_step defaults to Hairer's estimate.
    max_steps : int
        Maximum number of (accepted + rejected) steps before failing.
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
        Event functions ``g(t, q, qd) -> float`` (dopri5 and scipy methods). Each zero crossing is located on the
        dense output and recorded in ``result.t_events`` / ``q_events`` / ``qd_events``. As in scipy, an
        attribute ``g.terminal = True`` ends the run at the first crossing, and ``g.direction`` > 0 (< 0) counts
        only rising (falling) crossings.
    midpoint_tol : float
        Convergence tolerance of the implicit midpoint iteration (relative change per component).
    progress : bool, optional
        Show a tqdm progress bar over simulated time (the optional extra ``progress``). Default: only when
        stderr is a terminal. With a bar the run is split into 100 compiled pieces (an adaptive method restarts
        its step size at each).
    formulation : {"recursive", "augmented"}
        "augmented" integrates the absolute-coordinate formulation instead (``recursive_mbd.augmented.simulate``,
        option ``solver``); the result has ``z``, ``zd`` besides q and qd.
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
        converge, or singular dynamics; its ``result`` holds the samples up to the last accepted step and ``t``
        the time of failure.
    """
    rtol, atol, every, max_step, first_step, max_steps, alpha, beta, t_eval, midpoint_tol = _checks.run_options(
        rtol=rtol, atol=atol, every=every, max_step=max_step, first_step=first_step, max_steps=max_steps,
        alpha=alpha, beta=beta, t_eval=t_eval, midpoint_tol=midpoint_tol)
    t0, t_end = _checks.real(t0, "t0"), _checks.real(t_end, "t_end")
    if formulation == "augmented":
        from . import augmented  # noqa: PLC0415

        return augmented.simulate(model, q0, qd0, t_end, method, rtol, atol, t0=t0, dt=dt, t_eval=t_eval, tau=tau,
                                  drivers=drivers, events=events, max_steps=max_steps,
                                  stabilization=stabilization or "baumgarte", alpha=alpha, beta=beta,
                                  **augmented_options)
    if formulation != "recursive":
        raise ValueError(f"formulation must be 'recursive' or 'augmented', got {formulation!r}")
    if augmented_options:
        raise TypeError(f"unexpected options {sorted(augmented_options)} (they are for formulation='augmented')")
    scipy_method = method[6:] if isinstance(method, str) and method.startswith("scipy:") else None
    if scipy_method is None and method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {sorted(METHODS)} or 'scipy:NAME'")
    workspace(model)
    if model.nq == 0:
        raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
    q0 = as_vector(model, q0, "q0").copy()
    qd0 = as_vector(model, qd0, "qd0").copy()
    for vec, what in ((q0, "q0"), (qd0, "qd0")):
        if not np.all(np.isfinite(vec)):
            raise StateError(f"{what}[{int(np.flatnonzero(~np.isfinite(vec))[0])}] is not finite")
    t0 = float(t0)
    t_end = float(t_end)
    if not (np.isfinite(t0) and np.isfinite(t_end) and t_end > t0):
        raise ValueError(f"need finite t0 < t_end, got t0 = {t0}, t_end = {t_end}")
    fixed = method in FIXED_STEP
    if fixed and dt is None:
        raise ValueError(f"method {method!r} is fixed-step: give dt")
    if not fixed and dt is not None:
        raise ValueError(f"dt is for fixed-step methods; {method} chooses its steps from rtol and atol")
    if t_eval is not None and (fixed or (method in TABLEAUS and TABLEAUS[method].DENSE is None)):
        raise ValueError(f"t_eval needs a method with dense output (dopri5 or scipy:NAME); {method} stores "
                         "every-th step (every=)")

    inputs = _Inputs(model, tau, drivers)
    callback, key = inputs.callback()
    stabilization = _stabilization(model, stabilization, scipy_method)
    if model.nloops:
        q0, qd0 = _consistent_start(model, inputs, q0, qd0, t0)
    system = build_system(model, inputs, stabilization, float(alpha), float(beta))
    event_functions = _Events(model, events, inputs, system)
    if event_functions.functions and scipy_method is None and (
            method not in TABLEAUS or TABLEAUS[method].DENSE is None):
        raise ValueError(f"events need a method with dense output (dopri5 or scipy:NAME), not {method!r}")
    return _simulate(model, method, scipy_method, inputs, callback, key, system, q0, qd0, t0, t_end, rtol, atol, dt,
                     t_eval, every, max_step, first_step, max_steps, midpoint_tol, event_functions, progress)


def _stabilization(model, stabilization, scipy_method):
    if stabilization is None:
        return "projection" if model.nloops and scipy_method is None else "none"
    if stabilization not in ("projection", "baumgarte", "none"):
        raise ValueError(f"stabilization must be 'projection', 'baumgarte' or 'none', got {stabilization!r}")
    if stabilization == "projection" and scipy_method is not None and model.nloops:
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
                      "multipliers are the minimum-norm ones", RedundantConstraintWarning, stacklevel=4)
    return q0, qd0


def _simulate(model, method, scipy_method, inputs, callback, key, system, q0, qd0, t0, t_end, rtol, atol, dt, t_eval,
              every, max_step, first_step, max_steps, midpoint_tol, events, progress):
    free = system[5]
    if inputs.has_python or inputs.tau_function is not None:
        # a first evaluation in Python: a function that fails or returns the wrong shape is reported clearly here
        inputs(t0, q0.copy(), qd0.copy(), np.zeros(inputs.size))
    y0 = np.concatenate((q0[free], qd0[free], [0.0, 0.0]))
    status = integrators.system_rhs(callback, key, system, t0, y0, np.empty_like(y0))
    if status:
        raise_status(model, status)

    n = y0.size
    nrejected = 0
    t_eval_arr = None
    if t_eval is not None:
        t_eval_arr = np.asarray(t_eval, dtype=float).ravel()
        if (t_eval_arr.size == 0 or np.any(np.diff(t_eval_arr) < 0) or t_eval_arr[0] < t0
                or t_eval_arr[-1] > t_end):
            raise ValueError(f"t_eval must be a non-empty sorted array within [t0, t_end] = [{t0}, {t_end}]")
        t_eval_arr = np.unique(np.concatenate(([t0], t_eval_arr, [t_end])))  # t0 and t_end always

    if scipy_method is not None:
        if progress:
            warnings.warn("progress bars are for the numba methods; scipy:NAME runs without one", stacklevel=3)
        rtol = _positive(rtol, "rtol")
        atol = _positive(atol, "atol")
        status, t_fail, t_out, y_out, nfev, nsteps, event_records = _scipy_run(
            scipy_method, callback, key, system, y0, t0, t_end, rtol, atol, t_eval_arr,
            max_step if np.isfinite(max_step) else np.inf, first_step, events)
        if t_eval_arr is None and every > 1:
            keep = np.unique(np.r_[0:t_out.size:every, t_out.size - 1])
            t_out, y_out = t_out[keep], y_out[keep]
    else:
        segment = _numba_segment_runner(method, callback, key, system, n, rtol, atol, dt, every, max_step,
                                        first_step, max_steps, midpoint_tol, events)
        status, t_fail, t_out, y_out, nfev, nsteps, nrejected, event_records = _run_segments(
            segment, y0, t0, t_end, t_eval_arr, dt if method in FIXED_STEP else None, progress)

    result = _make_result(model, inputs, callback, key, system, np.array(t_out), np.array(y_out), method, nfev,
                          nsteps, nrejected)
    for i in range(len(events.functions)):
        hits = [(t_ev, y_ev) for index, t_ev, y_ev in event_records if index == i]
        states = [events.state(t_ev, y_ev) for t_ev, y_ev in hits]
        result.t_events.append(np.array([t_ev for t_ev, _ in hits]))
        result.q_events.append(np.array([q for q, _ in states]).reshape(-1, model.nq))
        result.qd_events.append(np.array([qd for _, qd in states]).reshape(-1, model.nq))
    if status == L.STATUS_EVENT:
        result.status = "event"
        status = L.STATUS_OK
    if status != L.STATUS_OK:
        kind, _ = L.decode_status(status)
        reasons = {
            L.STATUS_STEP_UNDERFLOW: "step size underflow (the solution blows up or the problem is too stiff)",
            L.STATUS_MAX_STEPS: f"more than max_steps = {max_steps} steps",
            L.STATUS_NONFINITE_STATE: "the state became non-finite in the step from there (blow-up; try a smaller dt)",
            L.STATUS_NO_CONVERGENCE: "the implicit iteration did not converge (the step is too large or the problem "
                                     "stiff)",
        }
        if kind in reasons:
            reason = reasons[kind]
        else:
            try:
                raise_status(model, status)
            except (ModelError, StateError) as err:
                reason = str(err)
            else:  # pragma: no cover - raise_status always raises
                reason = f"status {status}"
        raise SimulationError(f"{method} failed at t = {t_fail:.9g} s: {reason}; "
                              f"{result.t.size} samples up to t = {result.t[-1]:.9g} s are kept in .result",
                              t_fail, result)
    return result


def _numba_segment_runner(method, callback, key, system, n, rtol, atol, dt, every, max_step, first_step,
                          max_steps, midpoint_tol, events):
    """A function (y, ta, tb, t_eval) -> (status, t_fail, t, y, nfev, nsteps, nrejected, events) running one
    compiled time loop from ta to tb."""
    capacity = 1024
    if method in FIXED_STEP:
        dt = _positive(dt, "dt")
        midpoint = method == "implicit_midpoint"
        tableau = RK4 if midpoint else TABLEAUS[method]  # the midpoint rule uses 2 rows of k, no tableau

        def run(y_start, ta, tb, _):
            status, t_fail, count, t_out, y_out, nfev, nsteps = integrators.integrate_fixed(
                callback, key, system, y_start, ta, tb, dt, every, tableau.A, tableau.B, tableau.C, midpoint,
                float(midpoint_tol), 50, np.zeros((tableau.C.size, n)), np.empty(capacity),
                np.empty((capacity, n)))
            return status, t_fail, t_out[:count], y_out[:count], nfev, nsteps, 0, []

        return run
    tableau = TABLEAUS[method]
    rtol = _positive(rtol, "rtol")
    atol = _positive(atol, "atol")
    max_step = _positive(max_step, "max_step") if np.isfinite(max_step) else np.inf
    first = 0.0 if first_step is None else _positive(first_step, "first_step")
    if events.functions:
        events_fn, events_key = _python_bridge, next(_KEYS)
        _PYTHON_INPUTS[events_key] = events
    else:
        events_fn, events_key = integrators.no_inputs, 0
    optional = [np.empty(0) if v is None else v for v in (tableau.E3, tableau.DENSE)]

    def run(y_start, ta, tb, t_eval):
        (status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t,
         ev_y) = integrators.integrate_adaptive(
            callback, key, system, y_start, ta, tb, rtol, atol, first, max_step, int(max_steps),
            np.empty(0) if t_eval is None else t_eval, every, tableau.A, tableau.B, tableau.C, tableau.E,
            optional[0], tableau.order, optional[1], np.zeros((tableau.C.size, n)), np.empty(capacity),
            np.empty((capacity, n)), events_fn, events_key, events.directions, events.terminal, np.empty(16),
            np.empty((16, n + 1)))
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


def _make_result(model, inputs, callback, key, system, t, y, method, nfev, nsteps, nrejected):
    """Full q, qd (driven coordinates from their drivers) from the integrated samples."""
    free = system[5]
    nf = free.size
    nq = model.nq
    q = np.empty((t.size, nq))
    qd = np.empty((t.size, nq))
    q[:, free] = y[:, :nf]
    qd[:, free] = y[:, nf:2 * nf]
    for coord, _, evaluate in inputs.drivers:
        values = np.array([evaluate(ti) for ti in t]).reshape(-1, 3)
        q[:, coord] = values[:, 0]
        qd[:, coord] = values[:, 1]
    evaluator = (callback, key, system, inputs)  # holds inputs, so the bridge can still reach them
    result = SimulationResult(model, t, q, qd, y[:, 2 * nf:], method, nfev, nsteps, nrejected, evaluator)
    if model.nloops:
        from .loops import constraints  # noqa: PLC0415

        result.constraint_drift = np.array([np.abs(constraints(model, qi)[0]).max() for qi in q])
    return result

