"""``rm.simulate(method="bdf")``: variable-step, variable-order BDF with an O(N) Newton iteration.

The whole time loop runs in ``_kernels.planar.bdf.integrate_bdf`` (the method, its Newton iteration on the second-order
structure and the Newton matrix S = M + c C + c^2 K, c = h / gamma_k, are derived in that module's docstring);
this module builds the Newton scratch arrays from the run's system tuple (``runs.build_system``) and wraps the
kernel as a segment runner of ``simulate._simulate``: the same inputs callback (tau functions, time-varying
elements, drivers), events, t_eval and monitor (Ctrl-C, max_wall_time) as the explicit methods.

Closed loops in the stabilised index-2 (GGL) form, by the Schur complement of ``_kernels.planar.implicit.loop_schur``.

Spatial models (``Model3D``, closed loops included) run in the same compiled loop: their Newton pieces
(quaternion rows, the articulated-body factorisation of the spatial Newton matrix bordered by the loop rows, unit
quaternions after every accepted step) are derived in ``_kernels.spatial.bdf``; ``spatial_newton_arrays`` builds
what they take.
"""

import math

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.arrays import readonly_zeros
from .._kernels.planar import bdf as kernels
from .._kernels.timeloops.integrators import output_rows
from .newton import joint_spring_diagonals, spatial_joint_spring_diagonals
from .runs import event_buffers

# joint diagonal that locks a driven coordinate in the Newton solve: its elimination then passes the articulated
# inertia on unchanged (U D^-1 U^T ~ 1e-200 |U|^2) and its unknown is ~1e-200 times the residual, i.e. the solve is
# that of the free coordinates' block S_ff
LOCK = 1e200


def newton_arrays(system):
    """The scratch tuple ``_kernels.planar.bdf._newton_direction`` takes, for the system tuple of a run."""
    body_int, elem_int, elem_real = system[0], system[3], system[4]
    nb = body_int.shape[0]
    nq = system[8].shape[0]
    j_stiff, j_damp = joint_spring_diagonals(body_int, elem_int, elem_real, nq)
    lock = np.zeros(nq)
    lock[system[6]] = LOCK  # the driven coordinates
    rows = 0 if system.contacts is None else system.contacts[0].shape[0]
    return (np.zeros((nb, 3, 3)), np.zeros((nb, 3, 6)), np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)),
            np.zeros((nb, 3)), np.zeros((nb, 2)), np.zeros(nb), np.zeros((3, 3)), j_stiff, j_damp, lock,
            readonly_zeros(2),  # no gravity: read-only as the model's, so the inverse dynamics compile once
            np.zeros(nq), np.zeros(nq), np.zeros(nq), np.zeros(nq), np.zeros((nb, 3, 3)),
            np.zeros((nb, 2)), np.zeros((nb if rows else 0, 3, 6)), np.zeros(L.N_CSTATE * rows))


def spatial_newton_arrays(model):
    """The ``newton`` tuple of a run on a spatial model: (j_stiff, j_damp), each (nv,), the joint spring-dampers'
    stiffness and damping on their joint's velocities. Registers the spatial Newton pieces (``_kernels.spatial.bdf``)
    with the compiled loop."""
    from .._kernels.spatial import bdf as spatial_bdf  # noqa: F401, PLC0415  (registers the SpatialSystem overloads)

    return spatial_joint_spring_diagonals(model)


class _Runner:
    """One compiled BDF loop per call (y, ta, tb, t_eval, budget) -> (status, t_fail, t, y, nfev, nsteps, nrejected,
    events), as ``simulate._numba_segment_runner`` returns; keeps the Newton statistics over its calls."""

    def __init__(self, callback, key, system, rtol, atol, first_step, max_step, max_steps, max_order, every,
                 events_fn, events_key, events, monitor, control, newton=None):
        self.args = (callback, key, system, newton_arrays(system) if newton is None else newton)
        self.options = (float(rtol), float(atol), float(first_step), float(max_step), int(max_steps),
                        int(max_order))
        self.every = int(every)
        self.events = (events_fn, events_key, events.directions, events.terminal)
        self.event_functions = events
        self.monitor = monitor
        self.control = control
        self.info = np.zeros(kernels.INFO_SIZE)
        self.newton_iterations = 0
        self.solves = 0
        self.factorizations = 0
        self.order_limited_at = None  # the time the stability limit of orders 3-5 was found (first segment)

    def __call__(self, y_start, ta, tb, t_eval, budget):
        n = y_start.size
        ev_t, ev_y, ev_floats = event_buffers(self.event_functions, n)
        # at most ~16 MB unless t_eval asks for more, and within the budget; they double when full, up to it
        capacity = output_rows(n, t_eval, budget - ev_floats)
        self.control.restart()
        events_fn, events_key, directions, terminal = self.events
        rtol, atol, first, max_step, max_steps, max_order = self.options
        (status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t, ev_y) = kernels.integrate_bdf(
            *self.args, np.ascontiguousarray(y_start, dtype=float), float(ta), float(tb), rtol, atol, first,
            max_step, max_steps, max_order,
            np.empty(0) if t_eval is None else np.ascontiguousarray(t_eval, dtype=float), self.every,
            np.empty(capacity), np.empty((capacity, n)), float(budget), events_fn, events_key, directions, terminal,
            ev_t, ev_y, *self.monitor, self.info)
        self.newton_iterations += int(self.info[kernels.INFO_ITERATIONS])
        self.solves += int(self.info[kernels.INFO_SOLVES])
        self.factorizations += int(self.info[kernels.INFO_FACTORIZATIONS])
        limited_at = float(self.info[kernels.INFO_ORDER_LIMITED_AT])
        if not math.isnan(limited_at) and self.order_limited_at is None:
            self.order_limited_at = limited_at
            self.options = (*self.options[:5], min(max_order, 2))  # the later segments of a progress bar too
            _checks.warn(
                f"bdf: orders 3-5 reached their stability limit at t = {limited_at:.6g} s (an oscillatory root "
                f"|r| = {self.info[kernels.INFO_ORDER_LIMITED_ROOT]:.3f} at "
                f"{self.info[kernels.INFO_ORDER_LIMITED_ANGLE]:.2f} rad per step dominated the error estimates: a "
                "lightly damped mode the steps do not resolve); the run went on at orders 1-2 (A-stable). On such "
                "models (long undamped chains) pass max_order=2 to skip the steps spent finding the limit.",
                RuntimeWarning)  # simulate's caller (simulate, _simulate, _run_loop)
        if status == kernels.STATUS_NO_CONVERGENCE:
            self.control.detail = (
                f": Newton did not converge at the smallest step h = {self.info[kernels.INFO_FAIL_STEP]:.3g} s "
                f"(its last correction {self.info[kernels.INFO_FAIL_CORRECTION]:.3g} in units of the error "
                f"tolerance; residual of the equations of motion max |M qdd - Q| = "
                f"{self.info[kernels.INFO_FAIL_RESIDUAL]:.3g} N m or N)")
        records = [(int(row[0]), t_ev, row[1:]) for t_ev, row in zip(ev_t[:nev], ev_y[:nev], strict=True)]
        return status, t_fail, t_out[:count], y_out[:count], nfev, nsteps, nrejected, records


def segment_runner(callback, key, system, rtol, atol, first_step, max_step, max_steps, max_order, every, events_fn,
                   events_key, events, monitor, control, newton=None):
    """The segment runner of ``simulate._simulate`` for method "bdf" (arguments as ``_numba_segment_runner``;
    ``max_order`` in 1..5, the highest BDF order the run may use; ``newton`` the Newton tuple of the system, by
    default the planar one of ``newton_arrays``, ``spatial_newton_arrays`` for a spatial tree)."""
    return _Runner(callback, key, system, rtol, atol, first_step, max_step, max_steps, max_order, every, events_fn,
                   events_key, events, monitor, control, newton)
