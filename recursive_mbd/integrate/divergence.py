"""The divergence watch of fixed-step explicit runs (rk4): a step beyond the method's stability limit makes the
state grow by orders of magnitude each second while the run goes on to "finished" (a free body on a spring of
k = 1e8 N/m at dt = 1e-3 s: energy x 9e51). On a run without time-varying inputs (no tau function, drivers or
force elements that are functions of time) the energy balance E(t) + dissipated work - applied work stays at
E(t0) up to the integration error; the watch stops the run where it has grown past E(t0)'s scale by orders of
magnitude and makes up most of the energy there, and names the step size, the stiffest rate of the model at the
start and the step the method needs (or an implicit method).

Cheap: one energy evaluation each time the run's monitor is polled (every few milliseconds of work) and at the end
of a run (then a bisection over the stored samples for the first diverged one); the estimate of the stiffest rate
(power iteration on the Jacobian of the equations of motion by central differences of the forward dynamics,
``stiffest_rate``) only on the failure route.
"""

import math

import numpy as np

from .._kernels import layout as L
from ..dynamics.calls import forward_dynamics
from ..dynamics.kinematics import energy
from ..errors import ModelError, StateError
from ..model.configuration import integrate_configuration
from ..model.spatial import Model3D

# the balance residual r = E + dissipated - applied - E(t0) counts as divergence when it exceeds GROWTH times the
# start's energy scale T(t0) + |V(t0)| and FRACTION of the energy magnitudes T + |V| + |dissipated| + |applied|
# there: a stable run's r is its integration error, far below both (a stiff spring at h omega = 2.5, inside rk4's
# stability limit 2.83, loses energy)
GROWTH = 100.0
FRACTION = 0.5
# power iterations of ``stiffest_rate``: the estimate's error falls like (omega_2 / omega_max)^ITERATIONS
ITERATIONS = 40


def can_gain_energy(model, inputs):
    """Whether a run's inputs vary in time (a tau function, drivers or force elements that are functions of
    time), which may feed the motion energy at any rate: the watch stays off for such runs."""
    return bool(inputs.tau_function is not None or inputs.drivers or model.element_functions)


class DivergenceWatch:
    """Watches a fixed-step explicit run of ``method`` with step ``dt`` from (t0, y0) for divergence (module
    docstring); ``loop`` maps the integrated states to joint states and work terms, ``tau`` is the run's constant
    tau (for the stiffest-rate estimate)."""

    def __init__(self, model, loop, method, dt, tau, t0, y0):
        self.model, self.loop, self.method, self.dt, self.tau = model, loop, method, dt, tau
        self.t0, self.y0 = t0, np.array(y0)
        kinetic, potential = self._energy(t0, self.y0)
        self.start = kinetic + potential
        self.scale = kinetic + abs(potential)
        self.fired = False  # whether the watch stopped the run
        self.reached = math.nan  # the balance residual where it did [J]

    def _energy(self, t, y):
        q, qd = self.loop.joint_states(t, y[None])
        return energy(self.model, q[0], qd[0], t=t)

    def diverged(self, t, y):
        """Whether the state y at t has diverged (module docstring). A non-finite state is left to the loops."""
        if not np.all(np.isfinite(y)):
            return False
        try:
            kinetic, potential = self._energy(t, y)
        except (ModelError, StateError):  # an energy that overflows: a state grown far past any stable run's
            return True
        dissipated, applied = self.loop.work(y[None])[0]
        residual = kinetic + potential + dissipated - applied - self.start
        magnitude = kinetic + abs(potential) + abs(dissipated) + abs(applied)
        if residual > GROWTH * self.scale and residual > FRACTION * magnitude:
            self.reached = residual
            return True
        return False

    def __call__(self, t, y):
        """The monitor's check: STATUS_NONFINITE_STATE (the loops' status of a blow-up) where the state at t has
        diverged, else STATUS_OK."""
        self.fired = self.diverged(t, y)
        return L.STATUS_NONFINITE_STATE if self.fired else L.STATUS_OK

    def after_run(self, status, t_fail, times, states):
        """A run that ended with STATUS_OK is checked at its last sample; if it diverged, it ends at its first
        diverged sample (a bisection over the samples: the growth is monotone once it dominates) with
        STATUS_NONFINITE_STATE. ``times``, ``states``: the pieces of the run's samples (``runs._run_loop``),
        joined only for the bisection. Returns (status, t_fail, times, states)."""
        last = next((k for k in range(len(times) - 1, -1, -1) if len(times[k])), None)
        if status != L.STATUS_OK or last is None or not self.diverged(times[last][-1], states[last][-1]):
            return status, t_fail, times, states
        t_out, y_out = np.concatenate(times), np.concatenate(states)
        low, high = 0, len(t_out) - 1  # sample low has not diverged (the start), sample high has
        while high - low > 1:
            middle = (low + high) // 2
            if self.diverged(t_out[middle], y_out[middle]):
                high = middle
            else:
                low = middle
        self.fired = True
        return L.STATUS_NONFINITE_STATE, float(t_out[high]), [t_out[:high + 1]], [y_out[:high + 1]]

    def reason(self, blow_up):
        """Why the run stopped with STATUS_NONFINITE_STATE (the watch fired, or the state overflowed: the loops'
        reason ``blow_up``, extended), naming the step size and what to use instead."""
        rate = stiffest_rate(self.model, self.loop, self.t0, self.y0, self.tau)
        if rate is not None and self.dt * rate > 2.0:  # past the step the stiffest rate allows
            advice = (f"{self.method} with dt = {self.dt:.6g} s is unstable here: use an implicit method "
                      f"(generalized_alpha, bdf, scipy:Radau) or dt below about 2 / omega_max = {2.0 / rate:.3g} s "
                      f"(omega_max ~ {rate:.3g} rad/s, the stiffest rate of the model at the start)")
        elif self.fired:  # the rate at the start does not explain it (a state far from the start's)
            advice = (f"use a smaller dt than {self.dt:.6g} s or an implicit method (generalized_alpha, bdf, "
                      "scipy:Radau)")
        else:
            return blow_up
        if self.fired:
            return (f"the run diverges: its energy balance E + dissipated - applied work grew by {self.reached:.3g} J "
                    f"from E(t0) = {self.start:.6g} J on a model without time-varying inputs; {advice}")
        return f"{blow_up}; {advice}"


def stiffest_rate(model, loop, t0, y0, tau):
    """omega_max [1/s]: the spectral radius of the Jacobian of the first-order equations of motion at the start,
    d(q, qd)/dt by (q, qd) (positions in the tangent space of a Model3D), estimated by ITERATIONS power
    iterations on central differences of ``forward_dynamics`` (two evaluations each); None where they fail."""
    q0, qd0 = (x[0] for x in loop.joint_states(t0, np.asarray(y0)[None]))
    spatial = isinstance(model, Model3D)
    npos = qd0.size  # tangent positions: nv for a Model3D, nq in the plane

    def moved(dq, dv, scale):
        q = integrate_configuration(model, q0, dq, scale) if spatial else q0 + scale * dq
        return forward_dynamics(model, q, qd0 + scale * dv, tau, t=t0)

    def jacobian_times(x):
        dq, dv = x[:npos], x[npos:]
        step = 1e-7 * max(1.0, float(np.abs(q0).max(initial=0.0)), float(np.abs(qd0).max(initial=0.0)))
        acceleration = (moved(dq, dv, step) - moved(dq, dv, -step)) / (2.0 * step)
        return np.concatenate((dv, acceleration))

    x = np.random.default_rng(0).standard_normal(2 * npos)
    x /= np.linalg.norm(x)
    growth = []
    try:
        for _ in range(ITERATIONS):
            x = jacobian_times(x)
            norm = float(np.linalg.norm(x))
            if not (math.isfinite(norm) and norm > 0.0):
                return None
            growth.append(norm)
            x /= norm
    except (ModelError, StateError):
        return None
    # a complex pair turns x within its plane: the mean of the last two growth factors
    return math.sqrt(growth[-1] * growth[-2])
