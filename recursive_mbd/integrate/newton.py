"""What the Newton-iteration methods share: generalized_alpha (planar, ``implicit``; spatial, ``spatial_implicit``)
and bdf (``bdf``), three sibling front ends that import this module and the run machinery, never each other.

The joint spring-dampers' stiffness and damping on the Newton matrix's diagonal (``joint_spring_diagonals``,
``spatial_joint_spring_diagonals``), the coefficients and checked options of a generalised-alpha run
(``generalized_alpha_coefficients``, ``run_options``), its compiled loop run
(``run_generalized_alpha``: monitor, events, output budget) and its result with the Newton statistics and the
error of a step that did not converge (``finish_run``).
"""

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.spatial import layout as SL
from ..errors import SimulationError
from . import runs as _runs
from .result import _make_result


def joint_spring_diagonals(body_int, elem_int, elem_real, nq):
    """(stiffness, damping), each shape (nq,): the joint spring-dampers' k and c summed on their coordinates."""
    j_stiff = np.zeros(nq)
    j_damp = np.zeros(nq)
    for e in range(elem_int.shape[0]):
        if elem_int[e, L.ETYPE] == L.JOINT_SPRING_DAMPER:
            k = body_int[elem_int[e, L.EBODY_A], L.QIDX]
            j_stiff[k] += elem_real[e, L.EK]
            j_damp[k] += elem_real[e, L.EC]
    return j_stiff, j_damp


def spatial_joint_spring_diagonals(model):
    """(stiffness, damping), each shape (nv,): the joint spring-dampers' k and c on their joint's velocities (a
    spherical joint's one k and c on its three)."""
    j_stiff = np.zeros(model.nv)
    j_damp = np.zeros(model.nv)
    for e in range(model.elem_int.shape[0]):
        if model.elem_int[e, SL.ETYPE] != SL.ELEM_JOINT_SPRING_DAMPER:
            continue
        body = model.elem_int[e, SL.EBODY_A]
        kv = model.body_int[body, SL.VIDX]
        nvj = model.body_int[body, SL.NVJ]
        spherical = model.body_int[body, SL.JTYPE] == SL.SPHERICAL
        for d in range(nvj):
            j_stiff[kv + d] += model.elem_real[e, SL.EJK + (0 if spherical else d)]
            j_damp[kv + d] += model.elem_real[e, SL.EJC + (0 if spherical else d)]
    return j_stiff, j_damp


def generalized_alpha_coefficients(rho_inf):
    """(alpha_m, alpha_f, gamma, beta) of the Chung-Hulbert scheme for spectral radius rho_inf in [0, 1]."""
    rho = _checks.real(rho_inf, "rho_inf")  # a TypeError for a string or a bool, as every option
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho_inf must be in [0, 1], got {rho_inf}")
    alpha_m = (2.0 * rho - 1.0) / (rho + 1.0)
    alpha_f = rho / (rho + 1.0)
    gamma = 0.5 + alpha_f - alpha_m
    beta = 0.25 * (gamma + 0.5) ** 2
    return alpha_m, alpha_f, gamma, beta


def run_options(rho_inf, newton_tol, max_newton, t0, t_end, dt, max_steps, every, t_eval):
    """The checked options of a generalised-alpha run: (coefficients (4,), newton_tol, max_newton, t0, t_end, dt,
    every, t_eval (with t0 and t_end) or None); TypeError (not a number of the right kind) or ValueError naming the
    option otherwise, as ``simulate``'s checks (``_checks``)."""
    coefficients = np.array(generalized_alpha_coefficients(rho_inf))
    newton_tol = _runs.positive(newton_tol, "newton_tol")
    max_newton = _checks.integer(max_newton, "max_newton", low=1)
    t0, t_end = _runs.check_time_span(t0, t_end)
    if dt is None:
        raise ValueError("method 'generalized_alpha' is fixed-step: give dt")
    dt = _runs.positive(dt, "dt")
    _runs.fixed_step_count(t0, t_end, dt, _checks.step_limit(max_steps))
    every = _checks.integer(every, "every", low=1)
    return coefficients, newton_tol, max_newton, t0, t_end, dt, every, _runs.checked_t_eval(t_eval, t0, t_end)


def run_generalized_alpha(integrate, model, loop, callback, key, inputs, event_functions, y0, nv, j_stiff, j_damp,
                          info_size, options, max_steps, progress, max_wall_time, residual_name, max_splits=0):
    """Run a generalised-alpha loop and return (result, info): ``integrate`` is the compiled loop of the planar or
    the spatial kernels (``integrate_generalized_alpha``), run by ``runs._run_loop`` under the run's monitor
    (Ctrl-C, max_wall_time, progress) and output budget; nv the velocity unknowns (the carry holds two
    accelerations, the multipliers and the step count), j_stiff and j_damp the joint spring diagonals, info (of
    ``info_size``) what the kernel reports of its Newton iterations; ``options`` those of ``run_options``.
    ``residual_name`` names the equations of motion in the error of a step that does not converge; ``max_splits``
    > 0 for a loop that takes a step whose Newton iteration fails again in halves, down to dt / 2^max_splits,
    counting the split steps in info[5] (``result.newton_split_steps``)."""
    coefficients, newton_tol, max_newton, t0, t_end, dt, every, t_eval_arr = options
    system = loop.system
    control = _runs._RunControl(max_wall_time)
    monitor = (_runs._python_bridge, control.key, control.control)
    events_fn, events_key = _runs.event_callback(event_functions)
    m = model.nconstraints
    carry = np.zeros(2 + 2 * nv + m + 1)
    info = np.zeros(info_size)
    totals = {"iterations": 0}
    n = y0.size
    steps = _runs.fixed_step_count(t0, t_end, dt, max_steps)

    def run(y_start, ta, tb, piece_eval, budget):
        control.restart()
        ev_t, ev_y, ev_floats = _runs.event_buffers(event_functions, n)
        capacity = _runs.fixed_step_capacity(steps, every, n + m, t_eval_arr, budget - ev_floats)
        (status, t_fail, count, t_out, y_out, nfev, nsteps, iterations, nev, ev_t,
         ev_y) = integrate(
            callback, key, system, np.ascontiguousarray(y_start[:n]), carry, ta, tb, dt,
            _runs.fixed_step_count(ta, tb, dt, max_steps), every, np.empty(0) if piece_eval is None else piece_eval,
            coefficients, newton_tol, max_newton, j_stiff, j_damp, np.empty(capacity), np.empty((capacity, n + m)),
            float(budget), events_fn, events_key, event_functions.directions, event_functions.terminal, ev_t, ev_y,
            *monitor, info)
        totals["iterations"] += iterations
        records = [(int(row[0]), t_ev, row[1:]) for t_ev, row in zip(ev_t[:nev], ev_y[:nev], strict=True)]
        return status, t_fail, t_out[:count], y_out[:count], nfev, nsteps, 0, records

    with control:
        status, t_fail, times, rows, nfev, nsteps, _, records = _runs._run_loop(
            run, y0, t0, t_end, t_eval_arr, progress, control, "generalized_alpha")
    result = finish_run(model, loop, callback, key, inputs, event_functions, control, times, rows, n, nfev,
                        nsteps, records, status, t_fail, info, totals["iterations"], dt, newton_tol, max_newton,
                        max_steps, f"{residual_name} + J^T lambda" if m else residual_name, max_splits)
    return result, info


def finish_run(model, loop, callback, key, inputs, event_functions, control, times, rows, n, nfev, nsteps, records,
               status, t_fail, info, iterations, dt, newton_tol, max_newton, max_steps, residual_name, max_splits=0):
    """The result of a generalised-alpha run (planar or spatial loop) from the pieces of its samples (``times``,
    ``rows``: the output rows, the state (n) then the loops' lambda at the samples, if any), with
    ``newton_iterations`` and ``newton_factorizations`` (and ``newton_split_steps``, info[5], where ``max_splits``
    > 0: the loop splits failed steps down to dt / 2^max_splits) and its events; KeyboardInterrupt (``RunInterrupted``,
    raised before the result is built), or SimulationError with the samples so far in .result, for a run that
    did not end well."""

    def build():
        """The run's result (events recorded, its status set) and the status left to report."""
        y = rows[0] if len(rows) == 1 else _runs.joined(rows)  # (its columns are copied below)
        result = _make_result(model, loop, callback, key, _runs.joined(times), np.array(y[:, :n]),
                              "generalized_alpha", nfev, nsteps, 0, np.array(y[:, n:]) if y.shape[1] > n else None)
        result.newton_iterations = iterations
        result.newton_factorizations = int(info[4])
        if max_splits:
            result.newton_split_steps = int(info[5])
        return result, _runs.close_run(result, status, control, event_functions, records)

    _runs.raise_if_interrupted("generalized_alpha", status, t_fail, control, times, lambda: build()[0])
    result, status = build()
    kind = L.decode_status(status)[0]
    if kind == L.STATUS_NO_CONVERGENCE:
        result.status = "failed"
        correction, residual, step = info[:3]
        if np.isfinite(correction):
            # with loops, a correction that stalls may also mean that no closed configuration is near: a loop
            # locked at a singular position (its Jacobian rank-deficient there), where a smaller dt does not help
            locked = (", or the loops are locked (no closed configuration near this one: a singular position)"
                      if model.nloops else "")
            change_point = _runs.change_point_note(model, result)
            if change_point:
                locked = f"; {change_point}"
            why = (f"after {max_newton} iterations the correction of the state is {correction:.3g} > newton_tol = "
                   f"{newton_tol:g} and the residual max |{residual_name}| is {residual:.3g}; reduce dt{locked}")
        else:
            why = (f"the iteration diverged (residual max |{residual_name}| {residual:.3g}): the step is too large, "
                   "or no state at this time satisfies the equations (a driven mechanism past its lock, a singular "
                   "position)")
        split = f", split in halves down to dt / {2 ** max_splits:d} = {dt / 2 ** max_splits:g} s" if max_splits else ""
        raise SimulationError(
            f"generalized_alpha: Newton did not converge at t = {t_fail:.9g} s (step {int(step)}, dt = {dt:g} s"
            f"{split}): {why}. {_runs.kept_samples(result).capitalize()}", t_fail, result)
    if status != L.STATUS_OK:
        _runs._raise_failure(model, "generalized_alpha", status, t_fail, result, max_steps, control, inputs,
                             event_functions, loop)
    return result
