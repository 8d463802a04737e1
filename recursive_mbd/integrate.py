"""Time integration of the minimal-coordinate equations of motion: ``simulate`` and its result.

Methods are data (``METHODS``): a Butcher tableau plus, for embedded pairs, error weights and a continuous
extension. Every method's whole time loop runs in numba (``_kernels.integrators``), calling the recursive
forward dynamics without returning to Python.
"""

from dataclasses import dataclass, field

import numpy as np

from ._kernels import integrators
from ._kernels import layout as L
from .dynamics import as_vector, energy, forward_dynamics, raise_status, workspace
from .errors import ModelError, SimulationError, StateError


@dataclass(frozen=True)
class Tableau:
    """An explicit Runge-Kutta method: y_n+1 = y_n + h sum_j B_j k_j, k_j = f(t + C_j h, y_n + h sum_m A_jm k_m).

    E = B - B_hat are the weights of the embedded error estimate (adaptive methods only); DENSE the weights of the
    continuous extension's last term (Hairer's dopri5 form); ORDER the order used by step-size control.
    """

    name: str
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    order: int
    E: np.ndarray = field(default=None)
    DENSE: np.ndarray = field(default=None)

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

METHODS = {t.name: t for t in (DOPRI5, RK4)}


class SimulationResult:
    """Samples of a simulated trajectory.

    Attributes
    ----------
    t : ndarray, shape (nt,)
        Sample times [s]; always holds t0 and t_end (unless the run failed, then up to the failure).
    q, qd : ndarray, shape (nt, nq)
        Joint coordinates and rates at the samples.
    method : str
    nfev, nsteps, nrejected : int
        Right-hand-side (forward-dynamics) evaluations, accepted and rejected steps.
    """

    def __init__(self, model, t, y, method, nfev, nsteps, nrejected, tau):
        nq = model.nq
        self.model = model
        self.t = t
        self.q = y[:, :nq]
        self.qd = y[:, nq:]
        self.method = method
        self.nfev = int(nfev)
        self.nsteps = int(nsteps)
        self.nrejected = int(nrejected)
        self.tau = tau

    def energy(self):
        """Kinetic and potential energy at every sample: (T, V), each shape (nt,) [J]."""
        pairs = np.array([energy(self.model, q, qd) for q, qd in zip(self.q, self.qd, strict=True)]).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]

    def qdd(self):
        """Joint accelerations at every sample, shape (nt, nq)."""
        return np.array([forward_dynamics(self.model, q, qd, self.tau) for q, qd in zip(self.q, self.qd, strict=True)])

    def __repr__(self):
        return (f"<SimulationResult {self.method}: {self.t.size} samples, t = {self.t[0]:g} .. {self.t[-1]:g} s, "
                f"{self.nsteps} steps ({self.nrejected} rejected), {self.nfev} evaluations>")


def _positive(value, what):
    value = float(value)
    if not (value > 0.0 and np.isfinite(value)):
        raise ValueError(f"{what} must be finite and > 0, got {value}")
    return value


def simulate(model, q0, qd0, t_end, method="dopri5", rtol=1e-9, atol=1e-12, *, t0=0.0, dt=None, t_eval=None,
             every=1, max_step=np.inf, first_step=None, max_steps=10_000_000, tau=None):
    """Integrate M(q) qdd + h(q, qd) = tau from (q0, qd0) at t0 to t_end.

    Parameters
    ----------
    model : Model
    q0, qd0 : array_like, shape (nq,)
        Initial joint coordinates and rates.
    t_end : float
        Final time [s], > t0.
    method : {"dopri5", "rk4"}
        "dopri5": adaptive Dormand-Prince 5(4) with error control by ``rtol``/``atol`` (per component of
        (q, qd)) and 4th-order dense output. "rk4": classic fixed-step Runge-Kutta with step ``dt``.
    t_eval : array_like, optional
        Sorted output times in [t0, t_end] (dopri5 only; interpolated, no extra steps); t0 and t_end are added.
    every : int
        Without t_eval: store every ``every``-th step (t0 and t_end always stored).
    max_step, first_step : float, optional
        Bounds on the adaptive step [s]; first_step defaults to Hairer's estimate.
    max_steps : int
        Maximum number of (accepted + rejected) steps before failing.
    tau : array_like, shape (nq,), optional
        Constant generalised joint forces.

    Returns
    -------
    SimulationResult

    Raises
    ------
    SimulationError
        On a blow-up (non-finite state, step size underflow), too many steps, or singular dynamics; its
        ``result`` holds the samples up to the last accepted step and ``t`` the time of failure.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {sorted(METHODS)}")
    tableau = METHODS[method]
    ws = workspace(model)
    if model.nq == 0:
        raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
    q0 = as_vector(model, q0, "q0")
    qd0 = as_vector(model, qd0, "qd0")
    for vec, what in ((q0, "q0"), (qd0, "qd0")):
        if not np.all(np.isfinite(vec)):
            raise StateError(f"{what}[{int(np.flatnonzero(~np.isfinite(vec))[0])}] is not finite")
    tau = np.zeros(model.nq) if tau is None else as_vector(model, tau, "tau").copy()
    if not np.all(np.isfinite(tau)):
        raise StateError(f"tau[{int(np.flatnonzero(~np.isfinite(tau))[0])}] is not finite")
    t0 = float(t0)
    t_end = float(t_end)
    if not (np.isfinite(t0) and np.isfinite(t_end) and t_end > t0):
        raise ValueError(f"need finite t0 < t_end, got t0 = {t0}, t_end = {t_end}")
    every = int(every)
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    forward_dynamics(model, q0, qd0, tau)  # a clear error for a bad start (singular model) before the loop
    y0 = np.concatenate((q0, qd0))
    n = y0.size
    k = np.zeros((tableau.C.size, n))
    capacity = 1024
    t_out = np.empty(capacity)
    y_out = np.empty((capacity, n))

    if tableau.adaptive:
        if dt is not None:
            raise ValueError(f"dt is for fixed-step methods; {method} chooses its steps from rtol and atol")
        rtol = _positive(rtol, "rtol")
        atol = _positive(atol, "atol")
        max_step = _positive(max_step, "max_step") if np.isfinite(max_step) else np.inf
        first = 0.0 if first_step is None else _positive(first_step, "first_step")
        if t_eval is None:
            t_eval_arr = np.empty(0)
        else:
            t_eval_arr = np.asarray(t_eval, dtype=float).ravel()
            if (t_eval_arr.size == 0 or np.any(np.diff(t_eval_arr) < 0) or t_eval_arr[0] < t0
                    or t_eval_arr[-1] > t_end):
                raise ValueError(f"t_eval must be a non-empty sorted array within [t0, t_end] = [{t0}, {t_end}]")
            t_eval_arr = np.unique(np.concatenate(([t0], t_eval_arr, [t_end])))  # t0 and t_end always
        status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected = integrators.integrate_adaptive(
            model.body_int, model.body_real, model.gravity, tau, ws.ws, y0, t0, t_end, rtol, atol, first,
            max_step, int(max_steps), t_eval_arr, every, tableau.A, tableau.B, tableau.C, tableau.E,
            tableau.order, tableau.DENSE, k, t_out, y_out)
    else:
        if dt is None:
            raise ValueError(f"method {method!r} is fixed-step: give dt")
        dt = _positive(dt, "dt")
        if t_eval is not None:
            raise ValueError(f"t_eval needs an adaptive method with dense output; {method} stores every-th step")
        status, t_fail, count, t_out, y_out, nfev, nsteps = integrators.integrate_fixed(
            model.body_int, model.body_real, model.gravity, tau, ws.ws, y0, t0, t_end, dt, every, tableau.A,
            tableau.B, tableau.C, k, t_out, y_out)
        nrejected = 0

    result = SimulationResult(model, t_out[:count].copy(), y_out[:count].copy(), method, nfev, nsteps, nrejected,
                              tau)
    if status != L.STATUS_OK:
        kind, index = L.decode_status(status)
        reasons = {
            L.STATUS_STEP_UNDERFLOW: "step size underflow (the solution blows up or the problem is too stiff)",
            L.STATUS_MAX_STEPS: f"more than max_steps = {max_steps} steps",
            L.STATUS_NONFINITE_STATE: "the state became non-finite in the step from there (blow-up; try a smaller dt)",
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
                              f"{count} samples up to t = {result.t[-1]:.9g} s are kept in .result",
                              t_fail, result)
    return result
