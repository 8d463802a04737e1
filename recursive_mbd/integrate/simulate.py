"""Time integration of the minimal-coordinate equations of motion: ``simulate``.

Methods are data (``METHODS``): a Butcher tableau (``tableaus``) plus, for embedded pairs, error weights and a
continuous extension; the implicit midpoint rule; generalized_alpha and bdf (Newton with an O(N) matrix); and
``"scipy:NAME"``, which hands the same right-hand side to scipy's solvers (``scipy_route``). The numba methods run
their whole time loop in compiled code (``_kernels.timeloops.integrators``), calling the recursive forward dynamics and
the force elements without returning to Python; time-varying inputs reach that loop through one callback (``_Inputs``).

A user function that fails stops the run: the bridge keeps its exception and the compiled loop returns a status,
so ``simulate`` raises SimulationError from it with the samples so far. A run polls a monitor (``_RunControl``)
every few milliseconds of work, so that Ctrl-C (KeyboardInterrupt) and ``max_wall_time`` stop it promptly, again
with the samples so far.

Layers: this module checks the options and dispatches downward to the method front ends, siblings that do not
import each other: ``implicit`` (generalized_alpha), ``spatial_implicit`` (generalized_alpha on a Model3D) and
``bdf``, which share ``newton`` (the Newton methods' options and result); the spatial front (``spatial_loop``), the
scipy route (``scipy_route``), the tableaus; and, below them all, the run machinery (``runs``: inputs, events,
monitor, progress, failure) and the result (``result``), so that no method module imports this one.
"""

import difflib
import inspect

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.timeloops import integrators
from ..dynamics._evaluation import as_vector
from ..model.spatial import Model3D
from ..model.workspace import workspace
from . import formulation_hooks  # noqa: F401  (every formulation's hooks, before a time loop is typed)
from .divergence import DivergenceWatch, can_gain_energy
from .method_names import FIXED_STEP, METHODS, unknown_method
from .result import _make_result
from .runs import (  # the run machinery shared with the method front ends; below them all
    RecursiveTimeLoop,
    _Events,
    _Inputs,
    _python_bridge,
    _raise_failure,
    _run_loop,
    _RunControl,
    check_finite_start,
    check_time_span,
    checked_t_eval,
    close_run,
    event_buffers,
    event_callback,
    fixed_step_count,
    joined,
    positive,
    raise_if_interrupted,
    start_state,
)
from .scipy_route import _scipy_run, _scipy_solver
from .spatial_loop import SpatialTimeLoop, _spatial_start, _SpatialInputs
from .tableaus import DENSE_OUTPUT, RK4, TABLEAUS

# ---- simulate -----------------------------------------------------------------------------------------------------

def simulate(model, q0, qd0, t_end, method="dopri5", rtol=1e-9, atol=1e-12, *, t0=0.0, dt=None, t_eval=None,
             every=1, max_step=np.inf, first_step=None, max_steps=10_000_000, tau=None, drivers=None,
             events=None, midpoint_tol=1e-13, progress=None, formulation="recursive", stabilization=None,
             alpha=0.0, beta=0.0, max_wall_time=None, rho_inf=None, newton_tol=None, max_order=None,
             **augmented_options):
    """Integrate M(q) qdd + h(q, qd) = tau + Q_elements from (q0, qd0) at t0 to t_end.

    A ``Model3D`` (spatial model) integrates M(q) vdot + h(q, v) = tau with the state (q (nq), v (nv)):
    q' = v for Euclidean coordinates, quat' = 1/2 quat (x) (0, omega) for a quaternion (omega in the child frame),
    vdot by the articulated-body algorithm (``_kernels.spatial.system``). Every quaternion is renormalised after
    each accepted step of the numba methods (within a step, and in scipy's, the dynamics see it normalised), and
    ``result.q`` holds unit quaternions; ``result.qd`` holds v (nt, nv). tau is (nv,) or tau(t) / tau(t, q, v);
    q0's quaternions off unit norm by more than 1e-12 are normalised with a RuntimeWarning (zero: StateError).
    Its forces and torques may be functions of the state, force(t, q, v) (``Model3D.add_force``): every method
    evaluates them at each stage and Newton iterate, inside the compiled loop when they (and tau) are all
    numba-compiled.
    With loops (``Model3D.add_loop``) vdot comes from the multiplier layer (``spatial_loops``) and stabilization
    works as for a planar model (the projection steps along ``integrate_configuration``; see ``stabilization``).
    ``formulation="augmented"`` on a Model3D integrates the absolute coordinates of every body (centre of mass,
    quaternion; their velocity and angular velocity, ``augmented3d.TimeLoop3D``), loops as auxiliary rows, with tau
    constant or tau(t) and no force elements (its generalized_alpha: tau functions and force elements too, below).
    Drivers on a Model3D: revolute and prismatic joints, every method of
    both formulations (the augmented one's generalized_alpha: trees), trees and models with loops alike; in the
    augmented formulation a driver is one more constraint row on the absolute coordinates, its multiplier minus
    the driving force.

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
        (no dense output: use ``every``). "rk4": classic fixed-step Runge-Kutta with step ``dt``;
        a run past its stability limit on a model without time-varying inputs (no tau function, drivers or force
        elements of time), whose energy balance grows by orders of magnitude, stops with SimulationError naming
        dt and the step the stiffest rate at the start allows (``integrate.divergence``).
        "implicit_midpoint": fixed step ``dt``, symmetric, bounded energy error on long conservative runs.
        The fixed-step methods stop with SimulationError at an impact of a contact that their step does not
        resolve (its compression over fewer than 4 steps: docs/guide/contact.md).
        "generalized_alpha": fixed step ``dt``, Chung-Hulbert generalised-alpha (second order, L-stable for rho_inf < 1)
        with numerical damping set by ``rho_inf`` in [0, 1] (default 0.9; 1 = none, 0 = the highest frequencies
        annihilated in one step), Newton with an O(N) matrix (``recursive_mbd.integrate.implicit``; closed loops by
        its Schur complement, O(N m + m^3), stabilised index 2), converged to ``newton_tol`` (default 1e-12) [rad or
        m on positions, rad/s or m/s on velocities; 1e-10 m/s in absolute coordinates, below]: for long chains and
        stiff springs, where explicit steps shrink like 1/N.
        t_eval and events on its cubic Hermite dense output; everything else as for the other numba methods; a
        step whose Newton iteration fails is taken again in halves, down to dt / 16 (``result.newton_split_steps``;
        on a Model (planar) and on the augmented route of a Model3D). On a
        Model3D: the Lie-group form (q+ = q (+) increment, unit quaternions by construction), Newton on vdot with the
        O(N) matrix M + c K_gravity + joint spring-damper terms (``recursive_mbd.integrate.spatial_implicit``: what
        is exact, what is lagged, where Newton needs smaller steps); tau, force elements, drivers (the driven joints
        locked in the Newton matrices), t_eval, events, work terms, progress, max_wall_time;
        ``result.newton_contraction`` measures the linear convergence; closed loops as in the plane (stabilised index 2,
        the Schur complement on the articulated-body factors). With loops ``result.multipliers`` (nt, m) holds the
        multipliers lambda at the samples (both models). A Model3D with ``formulation="augmented"``: the absolute
        coordinates stepped by index-3 generalised-alpha on R^3 x SO(3) per body with the exact Newton matrix eliminated
        in tree order, O(N) (``recursive_mbd.integrate.augmented3d_implicit``): for long chains swinging widely; trees,
        tau constant or a function, force elements (their loads lagged in the Newton matrix), drivers (one more row
        of the driven joint; with tau constant and no elements), t_eval and events on the steps' dense output (on
        SO(3) in the rotations), progress, max_wall_time; a step whose Newton iteration fails is split in halves
        (at most 4 times, ``result.newton_split_steps``).
        "bdf": variable-step, variable-order BDF (orders 1-5, Shampine-Reichelt form) with error control by
        ``rtol``/``atol``, dense output (t_eval, events) and Newton iterations of O(N) cost (the Newton matrix
        M + c C + c^2 K factorised by ``implicit.effective_factor`` and reused across steps;
        ``recursive_mbd._kernels.planar.bdf``), the whole loop compiled; closed loops in the index-2 (GGL) form;
        ``result.newton_iterations``, ``result.newton_factorizations``. ``max_order`` (1..5, default 5) caps the
        order: BDF3-5 are not A-stable, and on a long undamped chain its unexcited high modes grow at orders 3-5
        until the steps sit at their stability limit; the run detects that limit (a RuntimeWarning says when,
        and ``result.order_limited_at`` holds that time [s], None when no limit was found) and goes on at orders
        1-2 (A-stable), but give max_order=2 there from the start: the steps spent before the detection and
        after it are many (serial_chain(10_000) over 10 s: 10,249 against 1,401; ``benchmarks/bdf.py``). On a
        model with contacts the default is 2: a stiff contact's normal vibration is such a lightly damped mode
        (a block sliding on a contact of k = 1e9 N/m^1.5, rtol = atol = 1e-6: 4,556 steps at orders 1-5, 542
        at 1-2). On a
        Model3D: the same loop on (q, v) with quaternions in R^4, Newton on vdot with the spatial O(N) matrix of
        generalized_alpha (closed loops in the GGL form, bordered as generalized_alpha's), quaternions
        renormalised after every accepted step
        (``recursive_mbd._kernels.spatial.bdf``: the design, the lagged terms); tau, force elements, drivers (the
        driven coordinates outside the state, their joints locked in the Newton matrix), t_eval, events, work
        terms, progress, max_wall_time, max_steps as the explicit methods.
        "scipy:NAME": scipy's solve_ivp method NAME (RK45, DOP853, Radau, BDF, LSODA, ...) on the same
        right-hand side (one Python call per evaluation). For stiff problems (stiff damped springs) use
        "scipy:Radau" or "scipy:BDF": they get the Jacobian from ``integrators.rhs_jacobian`` (2 nf
        forward-dynamics evaluations in compiled code, structure exploited), evaluated only when their Newton
        iteration asks for it, not every step.
    t_eval : array_like, optional
        Sorted output times in [t0, t_end] (dopri5, generalized_alpha, bdf and scipy methods); t0 and t_end
        are added.
    every : int
        Without t_eval: store every ``every``-th step (t0 and t_end always stored). Every sample keeps the whole
        state (serial_chain(10_000): 160 kB), and the samples of a run (every method) may take at most its output
        budget, a quarter of the memory available when the run starts (``runs.output_budget``: MemAvailable of
        /proc/meminfo, or a container's cgroup limit if lower; no limit where neither can be read): a run that
        would outgrow it stops with SimulationError, its samples so far kept. Pass every=K or t_eval for fewer.
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
        per evaluation (benchmarks/integrators.py). Either may raise: the run stops with SimulationError at that
        time, the exception as its cause, the samples so far kept. numba passes no exception out of compiled
        code, so a compiled tau that raised is called again from Python with the same (t, q, qd) to recover its
        exception: keep it free of side effects (one that does not raise again is reported without its message).
    drivers : dict, optional
        Prescribed motion ``{body: f}`` or ``{body: (f, f_dot, f_ddot)}`` for revolute or prismatic joints:
        q_j = f(t); without derivatives they are taken by central differences. Driven coordinates leave the
        integrated state; ``result.driving_forces()`` gives the joint force each driver supplies, and
        ``applied_work`` includes the drivers' work. On a Model3D the same (the rate f' in v, f'' prescribed to the
        articulated-body algorithm: Featherstone's hybrid dynamics, ``_kernels.spatial.tree.hybrid_dynamics``),
        with the methods the Model3D paragraph above names; with loops the multiplier layer's responses hold the
        driven joints (``_kernels.spatial.loops.driven_constrained_dynamics``) and the driving forces include
        the loop forces' share, as on a planar model.
    events : callable or list of callables, optional
        Event functions ``g(t, q, qd) -> float`` (dopri5, generalized_alpha, bdf and scipy methods). Each
        zero crossing is located on the dense output and recorded in ``result.t_events`` / ``q_events`` /
        ``qd_events``. As in scipy, an attribute ``g.terminal = True`` ends the run at the first crossing, and
        ``g.direction`` > 0 (< 0) counts only rising (falling) crossings. They are called from Python (compiled
        or not), and one that raises stops the run as a failing tau does.
    midpoint_tol : float
        Convergence tolerance of the implicit midpoint iteration (relative change per component).
    progress : bool, optional
        True: show a tqdm progress bar over simulated time (the optional extra ``progress``). False: show
        nothing. None (default): a bar when stderr is a terminal and tqdm is installed; otherwise, for a run that
        takes longer than 10 s, a record of its progress every 10 s of wall time (simulated time reached,
        evaluations, wall time) at INFO level to the ``logging`` logger "recursive_mbd" (shown once logging is
        configured, e.g. ``logging.basicConfig(level=logging.INFO)``). The progress follows the run without
        changing it: the result is the same, bit for bit, with or without it. The scipy methods show none.
    formulation : {"recursive", "augmented"}
        "augmented" integrates the absolute-coordinate formulation instead (``augmented.TimeLoop``: the state
        (z, zd) of every centre of mass, the tree solver of ``augmented.forward_dynamics``, loops and drivers as
        auxiliary rows) in the same compiled time loops, with every method but bdf, and but generalized_alpha on a
        planar model (a Model3D's has its own, above); the
        result has ``z``, ``zd`` and ``constraint_drift`` besides q and qd. A Model3D: ``z`` (nt, nbodies, 7),
        ``zd`` (nt, nbodies, 6) (``augmented3d``).
    stabilization : {"projection", "baumgarte", "none"}, optional
        How loop constraints (and, in the augmented formulation, joint constraints) are kept: "projection" moves
        q and qd back onto phi = 0, phi' = 0 after every accepted step (numba methods; the default for a model
        with loops); "baumgarte" adds 2 alpha phi' + beta^2 phi to the acceleration constraint (``alpha``,
        ``beta`` [1/s]; the augmented default, with 0, 0); "none". Not options of generalized_alpha and bdf
        (ValueError): their Newton rows hold phi = 0 and J qd = 0. A model with loops starts from (q0, qd0)
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
        raises or returns non-finite values or the wrong shape (the exception chained as ``__cause__``),
        ``max_wall_time``, or samples that would outgrow the output budget (see ``every``); its ``result`` holds
        the samples up to the last accepted step, or the last that fitted in the budget (``result.status``
        "failed" or "time_limit") and ``t`` the time of failure (of the first sample that did not fit).
    StateError
        Before the run, on invalid inputs, including a tau function, a driver or a time-varying element that
        already fails at t0 (each is called once there; the exception chained as ``__cause__``): no samples.
    KeyboardInterrupt
        On Ctrl-C (SIGINT, in the main thread) during the run, within milliseconds however many samples were
        stored; its ``result`` holds the samples so far (``result.status`` "interrupted"), built on its first
        access (copying the samples takes time in proportion to them).
    """
    _check_options(augmented_options, formulation)
    if method in ("generalized_alpha", "bdf") and (stabilization is not None or alpha or beta):
        raise ValueError(f"stabilization, alpha and beta are not options of method {method!r}: it holds loop "
                         "constraints at position and velocity level in its Newton rows (stabilised index 2)")
    spatial = isinstance(model, Model3D)
    if spatial:
        _refuse_spatial_options(model, method, formulation, drivers, stabilization, alpha, beta)
    rtol, atol, every, max_step, first_step, max_steps, alpha, beta, t_eval, midpoint_tol = _checks.run_options(
        rtol=rtol, atol=atol, every=every, max_step=max_step, first_step=first_step, max_steps=max_steps,
        alpha=alpha, beta=beta, t_eval=t_eval, midpoint_tol=midpoint_tol)
    t0, t_end = _checks.real(t0, "t0"), _checks.real(t_end, "t_end")
    max_wall_time = None if max_wall_time is None else positive(max_wall_time, "max_wall_time")
    if formulation not in _FORMULATIONS:
        raise ValueError(f"formulation must be 'recursive' or 'augmented', got {formulation!r}")
    if spatial and formulation == "augmented" and method == "bdf":
        return _bdf_augmented3d(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval, progress,
                                max_wall_time, max_steps, rtol, atol, first_step, max_step, max_order, rho_inf,
                                newton_tol, augmented_options)
    if formulation != "recursive" and method in ("generalized_alpha", "bdf") and not spatial:
        raise ValueError(f"method {method!r} integrates the recursive formulation (its Newton matrix is the joint-"
                         f"space one), not {formulation!r}")
    if method == "generalized_alpha":
        if max_order is not None:
            raise ValueError("max_order is an option of method 'bdf', not 'generalized_alpha'")
        if spatial and formulation == "augmented":
            return _generalized_alpha_augmented3d(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval,
                                                  progress, max_wall_time, max_steps, rho_inf, newton_tol,
                                                  augmented_options)
        if spatial:
            return _generalized_alpha_spatial(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval,
                                              progress, max_wall_time, max_steps, rho_inf, newton_tol)
        return _generalized_alpha(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval, progress,
                                  max_wall_time, max_steps, rho_inf, newton_tol)
    if rho_inf is not None or newton_tol is not None:
        raise ValueError(f"rho_inf and newton_tol are options of method 'generalized_alpha', not {method!r}")
    scipy_method = method[6:] if isinstance(method, str) and method.startswith("scipy:") else None
    if scipy_method is None and method not in METHODS:
        raise ValueError(unknown_method(method))
    if scipy_method is not None:
        _scipy_solver(scipy_method)
    if spatial:
        if model.nv == 0:
            raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
        q0, qd0 = _spatial_start(model, q0, qd0)
    else:
        workspace(model)
        if model.has_contacts:
            _refuse_contact_options(method, formulation)
        if model.nq == 0:
            raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
        q0 = as_vector(model, q0, "q0").copy()
        qd0 = as_vector(model, qd0, "qd0").copy()
    check_finite_start(q0, qd0)
    t0, t_end = check_time_span(t0, t_end)
    fixed = method in FIXED_STEP
    if fixed and dt is None:
        raise ValueError(f"method {method!r} is fixed-step: give dt")
    if not fixed and dt is not None:
        raise ValueError(f"dt is for fixed-step methods; {method} chooses its steps from rtol and atol")
    if fixed:
        dt = positive(dt, "dt")
        fixed_step_count(t0, t_end, dt, max_steps)
    elif not float(max_step) > 0.0:
        raise ValueError(f"max_step must be > 0 (inf for no bound), got {max_step}")
    elif np.isfinite(float(max_step)) and (t_end - t0) / positive(max_step, "max_step") > max_steps:
        raise ValueError(f"max_step = {float(max_step):g} s needs more than max_steps = {max_steps} steps from "
                         f"t0 = {t0:g} to t_end = {t_end:g} s: raise max_step or max_steps")
    if t_eval is not None and (fixed or (method in TABLEAUS and TABLEAUS[method].DENSE is None)):
        raise ValueError(f"t_eval needs a method with dense output ({', '.join(DENSE_OUTPUT)} or scipy:NAME); "
                         f"{method} stores every-th step (every=)")

    if spatial:
        inputs = _SpatialInputs(model, tau, drivers)
        callback, key = inputs.callback()
        stabilization = _stabilization(model, stabilization, scipy_method, formulation)
        if formulation == "augmented":
            loop = _augmented(model, inputs, stabilization, float(alpha), float(beta), **augmented_options)
        else:
            loop = SpatialTimeLoop(model, inputs, stabilization, float(alpha), float(beta), watch_impacts=fixed)
    else:
        inputs = _Inputs(model, tau, drivers)
        callback, key = inputs.callback()
        stabilization = _stabilization(model, stabilization, scipy_method, formulation)
        # the recursive formulation's options: bdf's Newton code takes a RecursiveSystem, trees and loops alike
        # (a fixed-step run stops at an impact that its step does not resolve)
        options = ({"tree_system": method != "bdf", "watch_impacts": fixed} if formulation == "recursive"
                   else augmented_options)
        loop = _FORMULATIONS[formulation](model, inputs, stabilization, float(alpha), float(beta), **options)
    event_functions = _Events(model, events, inputs, loop)
    if event_functions.functions and scipy_method is None and method != "bdf" and (
            method not in TABLEAUS or TABLEAUS[method].DENSE is None):
        raise ValueError(f"events need a method with dense output ({', '.join(DENSE_OUTPUT)} or scipy:NAME), "
                         f"not {method!r}")
    return _simulate(model, method, scipy_method, inputs, callback, key, loop, q0, qd0, t0, t_end, rtol, atol, dt,
                     t_eval, every, max_step, first_step, max_steps, midpoint_tol, event_functions, progress,
                     max_wall_time, _max_order(method, max_order, model.ncontacts > 0))


def _refuse_contact_options(method, formulation):
    """ValueError for a method or formulation that does not integrate contacts yet."""
    if formulation != "recursive":
        raise ValueError(f"contacts act in the recursive formulation; formulation={formulation!r} does not take them "
                         "yet")
    if isinstance(method, str) and method.startswith("scipy:"):
        raise ValueError(f"method {method!r} does not integrate contacts yet: use the numba methods "
                         f"({', '.join(METHODS)}), which update the contacts' stick anchors after every step")


def _refuse_spatial_options(model, method, formulation, drivers, stabilization, alpha, beta):
    """ValueError for a spatial model (``Model3D``) or an option of simulate that it does not take yet."""
    if formulation not in ("recursive", "augmented"):
        raise ValueError(f"formulation must be 'recursive' or 'augmented', got {formulation!r}")
    if formulation == "recursive" and not model.nloops and (stabilization not in (None, "none") or alpha or beta):
        raise ValueError("stabilization, alpha and beta are for loop constraints; this Model3D has none (its "
                         "quaternions are renormalised after every accepted step)")
    if model.has_contacts:
        _refuse_contact_options(method, formulation)


def _augmented(model, inputs, stabilization, alpha, beta, solver=None):
    """The augmented formulation's time-loop pieces (``augmented.TimeLoop``); its KKT solves are the tree
    solver's (the other solvers of ``augmented.forward_dynamics`` are Python, for comparison)."""
    from ..dynamics.augmented import TimeLoop  # noqa: PLC0415  (scipy.sparse only for this formulation)

    if solver not in (None, "tree"):
        raise ValueError(f"the augmented time loop solves with solver='tree' (compiled), not {solver!r}; "
                         "augmented.forward_dynamics(..., solver=...) evaluates the others")
    if isinstance(model, Model3D):
        from ..dynamics.augmented3d import TimeLoop3D  # noqa: PLC0415

        loop = TimeLoop3D(model, inputs, stabilization, alpha, beta)
        loop.recursive_loop_class = SpatialTimeLoop  # what the result's qdd() evaluates (SimulationResult.qdd)
        return loop
    return TimeLoop(model, inputs, stabilization, alpha, beta)


_FORMULATIONS = {"recursive": RecursiveTimeLoop, "augmented": _augmented}


def _max_order(method, max_order, contacts=False):
    """The checked ``max_order`` of method "bdf" (default 5; 2 on a model with ``contacts``: A-stable orders, which
    step over a stiff contact's lightly damped vibration); refused for any other method."""
    if max_order is None:
        return 2 if contacts else 5
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


def _generalized_alpha_spatial(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval, progress,
                               max_wall_time, max_steps, rho_inf, newton_tol):
    """Dispatch a Model3D to ``spatial_implicit.simulate_generalized_alpha`` (its compiled time loop; the state keeps
    the driven entries, which its Newton step locks)."""
    from . import spatial_implicit  # noqa: PLC0415

    if model.nv == 0:
        raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
    q0, qd0 = _spatial_start(model, q0, qd0)
    check_finite_start(q0, qd0)
    inputs = _SpatialInputs(model, tau, drivers)
    loop = SpatialTimeLoop(model, inputs, watch_impacts=True, keep_driven=True)
    return spatial_implicit.simulate_generalized_alpha(
        model, inputs, loop, q0, qd0, t0, t_end, dt, every=every, t_eval=t_eval, events=events,
        rho_inf=0.9 if rho_inf is None else rho_inf, newton_tol=1e-12 if newton_tol is None else newton_tol,
        max_steps=max_steps, progress=progress, max_wall_time=max_wall_time)


def _generalized_alpha_augmented3d(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval, progress,
                                   max_wall_time, max_steps, rho_inf, newton_tol, augmented_options):
    """Dispatch a Model3D with formulation="augmented" to ``augmented3d_implicit.simulate_generalized_alpha``
    (absolute coordinates: trees; tau constant or a function, force elements, drivers, events, t_eval)."""
    from . import augmented3d_implicit  # noqa: PLC0415

    if augmented_options.get("solver") not in (None, "tree"):
        raise ValueError(f"generalized_alpha in absolute coordinates solves with its own tree elimination, not "
                         f"solver={augmented_options['solver']!r}")
    if model.nv == 0:
        raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
    augmented3d_implicit.check_model(model)
    q0, qd0 = _spatial_start(model, q0, qd0)
    check_finite_start(q0, qd0)
    return augmented3d_implicit.simulate_generalized_alpha(
        model, q0, qd0, t0, t_end, dt, tau=tau, drivers=drivers, every=every, t_eval=t_eval, events=events,
        rho_inf=0.9 if rho_inf is None else rho_inf,
        newton_tol=augmented3d_implicit.NEWTON_TOL if newton_tol is None else newton_tol,
        max_steps=max_steps, progress=progress, max_wall_time=max_wall_time)


def _bdf_augmented3d(model, q0, qd0, t0, t_end, dt, every, tau, drivers, events, t_eval, progress, max_wall_time,
                     max_steps, rtol, atol, first_step, max_step, max_order, rho_inf, newton_tol, augmented_options):
    """Dispatch a Model3D with method="bdf", formulation="augmented" to ``augmented3d_implicit.simulate_bdf``
    (absolute coordinates, variable step, orders 1-2)."""
    from . import augmented3d_implicit  # noqa: PLC0415

    if augmented_options.get("solver") not in (None, "tree"):
        raise ValueError(f"bdf in absolute coordinates solves with its own tree elimination, not "
                         f"solver={augmented_options['solver']!r}")
    if dt is not None or rho_inf is not None:
        raise ValueError("bdf chooses its steps from rtol and atol: dt and rho_inf are options of "
                         "method='generalized_alpha'")
    if model.nv == 0:
        raise ValueError("the model has no degrees of freedom (only fixed joints): nothing to integrate")
    augmented3d_implicit.check_model(model)
    q0, qd0 = _spatial_start(model, q0, qd0)
    check_finite_start(q0, qd0)
    t0, t_end = check_time_span(t0, t_end)
    return augmented3d_implicit.simulate_bdf(
        model, q0, qd0, t0, t_end, rtol=rtol, atol=atol, tau=tau, drivers=drivers, every=every, t_eval=t_eval,
        events=events, max_order=augmented3d_implicit.BDF_MAX_ORDER if max_order is None else max_order,
        first_step=first_step, max_step=max_step, newton_tol=newton_tol, max_steps=max_steps, progress=progress,
        max_wall_time=max_wall_time)


# the keyword arguments of simulate (and the augmented formulation's own), for "did you mean" suggestions
_AUGMENTED_OPTIONS = ("solver",)


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


def _simulate(model, method, scipy_method, inputs, callback, key, loop, q0, qd0, t0, t_end, rtol, atol, dt, t_eval,
              every, max_step, first_step, max_steps, midpoint_tol, events, progress, max_wall_time, max_order=5):
    system = loop.system
    y0 = start_state(model, inputs, loop, callback, key, q0, qd0, t0)

    n = y0.size
    nrejected = 0
    t_eval_arr = checked_t_eval(t_eval, t0, t_end)

    control = _RunControl(max_wall_time)
    if method in FIXED_STEP and method in TABLEAUS and not can_gain_energy(model, inputs):  # explicit: rk4
        control.watch = DivergenceWatch(model, loop, method, dt, inputs.tau_const, t0, y0)
    if scipy_method is not None:
        if progress:
            _checks.warn("progress bars are for the numba methods; scipy:NAME runs without one")
        rtol = positive(rtol, "rtol")
        atol = positive(atol, "atol")
        with control:
            status, t_fail, t_out, y_out, nfev, nsteps, event_records = _scipy_run(
                scipy_method, callback, key, system, y0, t0, t_end, rtol, atol, t_eval_arr, every,
                max_step if np.isfinite(max_step) else np.inf, first_step, events, max_steps, control)
        times, states = [t_out], [y_out]
    else:
        newton = None
        if method == "bdf" and isinstance(model, Model3D):
            from .bdf import spatial_newton_arrays  # noqa: PLC0415

            newton = spatial_newton_arrays(model)
        segment = _numba_segment_runner(method, callback, key, system, n, rtol, atol, dt, every, max_step,
                                        first_step, max_steps, midpoint_tol, events, control, max_order, newton)
        with control:
            status, t_fail, times, states, nfev, nsteps, nrejected, event_records = _run_loop(
                segment, y0, t0, t_end, t_eval_arr, progress, control, method)
        if control.watch is not None:
            status, t_fail, times, states = control.watch.after_run(status, t_fail, times, states)

    def build():
        """The run's result (events recorded, its status set) and the status left to report."""
        result = _make_result(model, loop, callback, key, joined(times), joined(states), method, nfev, nsteps,
                              nrejected)
        if method == "bdf":
            result.newton_iterations = segment.newton_iterations
            result.newton_factorizations = segment.factorizations
            result.order_limited_at = segment.order_limited_at  # [s] or None: when the orders were capped at 2
        return result, close_run(result, status, control, events, event_records)

    raise_if_interrupted(method, status, t_fail, control, times, lambda: build()[0])
    result, status = build()
    if status != L.STATUS_OK:
        _raise_failure(model, method, status, t_fail, result, max_steps, control, inputs, events, loop)
    return result


def _numba_segment_runner(method, callback, key, system, n, rtol, atol, dt, every, max_step, first_step,
                          max_steps, midpoint_tol, events, control, max_order=5, newton=None):
    """A function (y, ta, tb, t_eval, budget) -> (status, t_fail, t, y, nfev, nsteps, nrejected, events) running
    one compiled time loop from ta to tb, polling ``control`` (a _RunControl), its output buffers (and event
    buffers) holding at most ``budget`` floats (``_run_loop``)."""
    monitor = (_python_bridge, control.key, control.control)
    if method in FIXED_STEP:
        dt = positive(dt, "dt")
        midpoint = method == "implicit_midpoint"
        tableau = RK4 if midpoint else TABLEAUS[method]  # the midpoint rule uses 2 rows of k, no tableau

        def run(y_start, ta, tb, _, budget):
            control.restart()
            capacity = integrators.output_rows(n, None, budget)
            status, t_fail, count, t_out, y_out, nfev, nsteps = integrators.integrate_fixed(
                callback, key, system, y_start, ta, tb, dt, fixed_step_count(ta, tb, dt, max_steps), every,
                tableau.A, tableau.B, tableau.C, midpoint, float(midpoint_tol), 50, np.zeros((tableau.C.size, n)),
                np.empty(capacity), np.empty((capacity, n)), float(budget), *monitor)
            return status, t_fail, t_out[:count], y_out[:count], nfev, nsteps, 0, []

        return run
    tableau = TABLEAUS.get(method)
    rtol = positive(rtol, "rtol")
    atol = positive(atol, "atol")
    max_step = positive(max_step, "max_step") if np.isfinite(max_step) else np.inf
    first = 0.0 if first_step is None else positive(first_step, "first_step")
    events_fn, events_key = event_callback(events)
    if method == "bdf":
        from .bdf import segment_runner  # noqa: PLC0415

        return segment_runner(callback, key, system, rtol, atol, first, max_step, max_steps, max_order, every,
                              events_fn, events_key, events, monitor, control, newton)
    optional = [np.empty(0) if v is None else v for v in (tableau.E3, tableau.DENSE)]

    def run(y_start, ta, tb, t_eval, budget):
        control.restart()
        ev_t, ev_y, ev_floats = event_buffers(events, n)
        capacity = integrators.output_rows(n, t_eval, budget - ev_floats)
        (status, t_fail, count, t_out, y_out, nfev, nsteps, nrejected, nev, ev_t,
         ev_y) = integrators.integrate_adaptive(
            callback, key, system, y_start, ta, tb, rtol, atol, first, max_step, int(max_steps),
            np.empty(0) if t_eval is None else t_eval, every, tableau.A, tableau.B, tableau.C, tableau.E,
            optional[0], tableau.order, optional[1], np.zeros((tableau.C.size, n)), np.empty(capacity),
            np.empty((capacity, n)), float(budget), events_fn, events_key, events.directions, events.terminal, ev_t,
            ev_y, *monitor)
        records = [(int(row[0]), t_ev, row[1:]) for t_ev, row in zip(ev_t[:nev], ev_y[:nev], strict=True)]
        return status, t_fail, t_out[:count], y_out[:count], nfev, nsteps, nrejected, records

    return run


