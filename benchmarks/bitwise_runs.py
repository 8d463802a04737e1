"""Bit-for-bit record of a broad, fixed set of computations through the public API, and a comparison of two records.

    python3 benchmarks/bitwise_runs.py record OUT.npz        # run every case, save every resulting array
    python3 benchmarks/bitwise_runs.py compare A.npz B.npz   # per key: identical / max abs diff; exit 1 on any change
    python3 benchmarks/bitwise_runs.py record OUT.npz --only simulate3d/ calls/   # the cases named so only

For checking that a change which should not change any number (moving the package's internal files, renaming
private helpers) does not: record before, record after, compare. Only public names are used (``rm.X``,
``rm.chains.X``, ``rm.models.X``, ``rm.augmented.X``, ``rm.loops.X``, ``rm.spatial_loops.X``, ``rm.batch.X``,
``rm.studies.X``, ``rm.io.X``, ``rm.implicit.X``, methods and attributes of the objects they return), so the same
script runs unchanged on both trees. Which tree it imports is printed first: run it with ``PYTHONPATH=TREE`` from
that tree to record another checkout than the installed one.

What is recorded (small models, short runs: 8 s wall, 7 s CPU with a warm numba cache on the 2-core machine, 25 s
wall at load average 6;
with an empty cache the compilation of every kernel the cases reach dominates: 31 min wall, 11 min CPU at load
average 5 to 8, most of it the first run of each family: planar and spatial dopri5, the augmented time loop, the
ensembles, generalized_alpha and bdf; ``--only`` runs a part):

- ``rm.simulate`` with every method of ``rm.METHODS`` and scipy's RK45 and Radau on planar models (a serial
  chain with constant, time and controller tau, Python and numba-compiled; seed 000's two squares with its
  spring-damper; a four-bar with its loop; a branched tree of every planar joint type with elements; a chain with
  every force element), with t_eval and events (one terminal) where the method takes them, drivers, the loop
  stabilisations, the augmented formulation (Baumgarte and projection); on spatial models (the heavy top,
  the closed centrifugal governor, a spatial four-bar, a tree of every spatial joint with elements) with
  dopri5, dop853, rk4, implicit_midpoint, generalized_alpha, bdf and scipy:RK45. Every numeric attribute of
  each result (t, q, qd, work, multipliers, drift, z, zd, events, step and Newton counters) and what its
  methods compute (energy, energy balance, qdd, element forces, driving forces);
- the per-state functions (forward dynamics by both routes, inverse dynamics, mass matrix, bias forces,
  energy, kinematics, element forces, loop dynamics, constraints, projections, compiled forward dynamics,
  ``solve_effective``, the augmented formulation's functions) on seeded random states, planar and spatial;
  ``rm.batch`` with one and two threads;
- assembly, kinematic analysis, static equilibrium, linearisation, modes and joint reactions; ``rm.simulate_many``
  (one and two threads); the chain studies at small sizes; the model files of ``examples/models`` read by
  ``rm.io.load`` and run as their ``[analysis]`` says (shortened); a ``SimulationResult`` saved and loaded.

Every case runs on its own: one that raises is reported with its traceback and the others go on; ``record`` then
exits with status 1. Wall times (the studies' ``seconds``) are left out: they are not results.

Compare records taken in the same numba cache state: both in processes that compiled the kernels (an empty cache,
e.g. ``NUMBA_CACHE_DIR=$(mktemp -d)``), or both in processes that loaded them from the cache (record twice, keep
the second). The two are not bit-identical everywhere: on the old tree (8b4aeac) the spatial tree's
generalized_alpha and bdf runs (``simulate3d/spatial_tree/{generalized_alpha,bdf}``, 16 keys) differ by up to
1.3e-13 (the Newton contraction estimate by 5e-10) between a process that compiled the kernels and one that loaded
them; every other key is identical, and each state on its own repeats to the bit. A moved package compiles afresh
on its first run (new file paths, new cache entries).
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import dataclasses
import math
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numba
import numpy as np

import recursive_mbd as rm

CASES = []
SKIPPED_NAMES = ("seconds",)  # wall times: keys containing these are not recorded
SKIPPED_ATTRIBUTES = {"model", "source"}  # the model object itself; a file's path (differs between checkouts)
MAX_DEPTH = 6


def case(name):
    """Register ``function`` as the case ``name``: it returns what to record (nested dicts, tuples, arrays...)."""
    def register(function):
        CASES.append((name, function))
        return function
    return register


# ---- flattening results into named arrays ---------------------------------------------------------------------------

def flatten(prefix, value, out, depth=0):
    """Store every number, array and string in ``value`` under keys beginning with ``prefix``."""
    if depth > MAX_DEPTH:
        raise RecursionError(f"{prefix}: nested deeper than {MAX_DEPTH}")
    if value is None or (callable(value) and not isinstance(value, np.ndarray)):
        return
    if isinstance(value, (rm.Model, rm.Model3D)):
        return
    if isinstance(value, (bool, int, float, complex, str, np.generic)):
        out[prefix] = np.asarray(value)
    elif isinstance(value, np.ndarray):
        if value.dtype == object:
            for i, item in enumerate(value.reshape(-1)):
                flatten(f"{prefix}/{i}", item, out, depth + 1)
        else:
            out[prefix] = np.array(value, copy=True)
    elif hasattr(value, "toarray"):  # a scipy.sparse matrix
        out[prefix] = np.asarray(value.toarray())
    elif isinstance(value, dict):
        for key, item in value.items():
            if not any(skip in str(key) for skip in SKIPPED_NAMES) and str(key) not in SKIPPED_ATTRIBUTES:
                flatten(f"{prefix}/{key}", item, out, depth + 1)
    elif isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        for key in value._fields:
            flatten(f"{prefix}/{key}", getattr(value, key), out, depth + 1)
    elif isinstance(value, (list, tuple)):
        if hasattr(value, "table"):  # a driver read from a file: its callables and the table it came from
            flatten(f"{prefix}/table", value.table, out, depth + 1)
        for i, item in enumerate(value):
            flatten(f"{prefix}/{i}", item, out, depth + 1)
    elif dataclasses.is_dataclass(value):
        flatten(prefix, {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, out, depth)
    elif hasattr(value, "__dict__"):
        flatten(prefix, {k: v for k, v in vars(value).items() if not k.startswith("_")}, out, depth)
    else:
        raise TypeError(f"{prefix}: cannot record a {type(value).__name__}")


def run_record(res, planar=True, drivers=False, inputs=True):
    """A SimulationResult's attributes and what its methods compute from them (``inputs``: the methods that
    evaluate the run's dynamics again, which an augmented-formulation run does not offer)."""
    record = {"result": res, "energy": res.energy(), "energy_balance": res.energy_balance()}
    if inputs:
        record["element_forces"] = res.element_forces()
        if planar:
            record["qdd"] = res.qdd()
        if drivers:
            record["driving_forces"] = res.driving_forces()
    return record


def simulate(model, q0, qd0, t_end, method, **options):
    """rm.simulate with the RedundantConstraintWarning of the spatial loops kept quiet (it is expected)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.RedundantConstraintWarning)
        return rm.simulate(model, q0, qd0, t_end, method, **options)


# ---- models -------------------------------------------------------------------------------------------------------

def chain3():
    return rm.chains.serial_chain(3, length=1.5, mass=2.0)


def element_chain():
    """The README's chain with every planar force element, one of them a function of time."""
    model = rm.chains.serial_chain(3)
    model.add_spring_damper("link3", (0, -1 / 6), "ground", (0.5, -1.0), stiffness=50.0, damping=0.5,
                            rest_length=0.2)
    model.add_joint_spring_damper("link1", stiffness=2.0, damping=0.1, rest=0.0)
    model.add_force("link2", (0, 0), lambda t: (np.sin(t), 0.0), frame="ground")
    model.add_force("link3", (0.02, -0.1), (0.3, -0.2), frame="body")
    model.add_torque("link1", 0.3)
    return model


def joint_tree():
    """A branched planar tree with revolute, prismatic, fixed and planar joints and constant elements."""
    model = rm.Model(gravity=(0.0, -9.81), name="joint tree")
    model.add_body("ground", "revolute", parent_point=(0.0, 0.0), child_point=(0.0, 0.4), mass=1.2, inertia=0.07,
                   name="arm")
    model.add_body("arm", "prismatic", parent_point=(0.0, -0.4), axis=(0.3, -1.0), mass=0.6, inertia=0.01,
                   com=(0.02, 0.01), name="slider")
    model.add_body("slider", "fixed", parent_point=(0.1, 0.0), child_point=(-0.05, 0.0), angle=0.4, mass=0.3,
                   inertia=0.004, name="tab")
    model.add_body("arm", "revolute", parent_point=(0.0, 0.2), child_point=(0.0, 0.25), angle=0.3, mass=0.8,
                   inertia=0.02, com=(0.01, -0.02), name="branch")
    model.add_body("ground", "planar", parent_point=(1.0, 0.5), mass=0.5, inertia=0.01, com=(0.03, 0.0),
                   name="puck")
    model.add_spring_damper("puck", (0.05, 0.0), "branch", (0.0, -0.2), stiffness=20.0, damping=0.4,
                            rest_length=0.3)
    model.add_joint_spring_damper("slider", stiffness=15.0, damping=0.2, rest=0.1)
    model.add_torque("branch", -0.2)
    return model


def heavy_top_state():
    tilt, spin = 0.3, 150.0
    q0 = np.array([math.cos(tilt / 2), math.sin(tilt / 2), 0.0, 0.0])
    return rm.models.heavy_top(), q0, np.array([0.0, 0.0, spin])


def governor_state():
    gov = rm.models.centrifugal_governor(arm=0.2, link=0.25, closed=True)
    phi0, rate0, omega0 = 0.6, 0.8, 8.0
    v0 = np.array([omega0, 0.0, 0.0, 0.0]) + gov.dq_dphi(phi0) * rate0
    return gov, gov.q(phi0), v0


def spatial_four_bar():
    """The planar four-bar of tests/test_spatial_loops.py built spatially, closed by a distance loop."""
    model = rm.Model3D(gravity=(0.0, -9.81, 0.0), name="spatial four-bar")
    crank, coupler, rocker, base = 1.0, 2.0, 1.5, 2.5
    for name, parent, length, point in (("crank", "ground", crank, (0.0, 0.0, 0.0)),
                                        ("coupler", "crank", coupler, (crank, 0.0, 0.0)),
                                        ("rocker", "ground", rocker, (base, 0.0, 0.0))):
        inertia = (0.05 + 0.05 * length, 0.07 + 0.05 * length, 0.1 * length, 0.0, 0.0, 0.0)
        model.add_body(parent, "revolute", parent_point=point, mass=1.0 + length, inertia=inertia,
                       com=(length / 2, 0.02, 0.0), name=name)
    model.add_loop("distance", "coupler", (coupler, 0.0, 0.0), "rocker", (0.0, 0.0, 0.0), length=rocker)
    q0 = rm.assemble(model, np.array([0.9, -0.5, 1.4]), fixed=["crank"])
    return model, q0


def spatial_tree():
    """A spatial tree with every joint type and every spatial force element (one a function of time)."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81), name="spatial tree")
    model.add_body("ground", "spherical", mass=1.0, inertia=(0.03, 0.03, 0.02, 0.001, 0.0, 0.0),
                   com=(0.0, 0.0, -0.3), name="ball")
    model.add_body("ball", "revolute", parent_point=(0.0, 0.0, -0.6), axis=(1.0, 0.2, 0.0), mass=0.7,
                   inertia=(0.01, 0.01, 0.004, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.2), name="hinge")
    model.add_body("hinge", "prismatic", parent_point=(0.0, 0.0, -0.4), axis=(0.0, 0.0, -1.0), mass=0.4,
                   inertia=0.002, name="slide")
    model.add_body("ball", "universal", parent_point=(0.1, 0.0, -0.3), axis=((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
                   mass=0.5, inertia=(0.004, 0.005, 0.003, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.15), name="cardan")
    model.add_body("cardan", "cylindrical", parent_point=(0.0, 0.0, -0.3), axis=(0.0, 0.3, 1.0), mass=0.3,
                   inertia=0.001, com=(0.05, 0.0, 0.0), name="sleeve")
    model.add_body("ground", "free", parent_point=(1.0, 0.0, 0.0), mass=0.8,
                   inertia=(0.01, 0.02, 0.015, 0.0, 0.001, 0.0), name="flyer")
    tilt = np.array([0.9, 0.1, 0.3, 0.2])
    model.add_body("slide", "fixed", parent_point=(0.05, 0.0, 0.0), rotation=tilt / np.linalg.norm(tilt), mass=0.2,
                   inertia=0.0005, com=(0.02, 0.0, 0.0), name="tag")
    model.add_body("ground", "planar", parent_point=(-1.0, 0.0, 0.5), mass=0.6, inertia=0.01, name="skate")
    model.add_spring_damper("flyer", (0.05, 0.0, 0.0), "slide", (0.0, 0.0, 0.0), stiffness=30.0, damping=0.5,
                            rest_length=0.8)
    model.add_joint_spring_damper("hinge", stiffness=3.0, damping=0.1, rest=0.2)
    model.add_joint_spring_damper("ball", stiffness=1.0, damping=0.05)
    model.add_force("cardan", (0.0, 0.0, -0.1), lambda t: (0.2 * np.sin(3 * t), 0.1, 0.0), frame="ground")
    model.add_torque("skate", (0.0, 0.0, 0.1), frame="body")
    q0 = model.neutral()
    rng = np.random.default_rng(7)
    v0 = 0.3 * rng.standard_normal(model.nv)
    return model, q0, v0


def random_state(model, seed, planar=True):
    """A seeded random state: planar (q, qd, tau, qdd), spatial (q with unit quaternions, v, tau, vdot)."""
    rng = np.random.default_rng(seed)
    if planar:
        n = model.nq
        return rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    q = rm.integrate_configuration(model, model.neutral(), rng.uniform(-0.8, 0.8, model.nv))
    return q, rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)


@numba.njit
def njit_tau(t, q, qd):
    return -0.3 * qd + 0.1 * np.sin(2.0 * t)


@numba.njit
def njit_flip(t, q, qd):
    return q[0] - 0.5


def python_tau(t, q, qd):
    return -0.5 * qd + 0.2 * np.cos(t)


def event_q1(t, q, qd):
    return q[1]


def event_rising(t, q, qd):
    return qd[0] - 0.1


event_rising.direction = 1.0


def event_stop(t, q, qd):
    return q[0] - 0.9


event_stop.terminal = True
event_stop.direction = -1.0

EVENT_METHODS = ("dopri5", "generalized_alpha", "bdf", "scipy:RK45", "scipy:Radau")  # t_eval and events
ALL_METHODS = (*rm.METHODS, "scipy:RK45", "scipy:Radau")


def method_options(method, t_end, samples=11, adaptive=None):
    """Options of a short run: dt for fixed-step methods, tolerances for adaptive ones, t_eval where taken."""
    if method in ("rk4", "implicit_midpoint", "generalized_alpha"):
        options = {"dt": t_end / 40}
    else:
        options = dict(adaptive or {"rtol": 1e-8, "atol": 1e-10})
    if method in EVENT_METHODS:
        options["t_eval"] = np.linspace(0.0, t_end, samples)
    elif method != "rk4":
        options["every"] = 2
    return options


# ---- planar simulate ------------------------------------------------------------------------------------------------

def _planar_runs():
    models = {
        "chain3": (chain3, lambda m: (np.array([np.pi / 2, 0.1, -0.2]), np.zeros(3))),
        "two_squares": (lambda: rm.models.two_squares()[0], lambda m: (np.zeros(2), np.zeros(2))),
        "four_bar": (lambda: rm.models.four_bar()[0], lambda m: (rm.models.four_bar()[1], np.array([1.0, 0.0, 0.0]))),
        "joint_tree": (joint_tree, lambda m: (np.array([0.4, 0.05, -0.3, 0.1, 0.05, 0.2]), np.zeros(6))),
        "element_chain": (element_chain, lambda m: (np.array([0.3, -0.2, 0.1]), np.array([0.0, 0.5, 0.0]))),
    }
    for model_name, (build, state) in models.items():
        for method in ALL_METHODS:
            def run(build=build, state=state, method=method, model_name=model_name):
                model = build()
                q0, qd0 = state(model)
                t_end = 0.4
                options = method_options(method, t_end)
                if model_name == "chain3":
                    options["tau"] = {"dopri5": python_tau, "rk4": njit_tau, "dop853": np.array([0.1, 0.0, -0.1]),
                                      "generalized_alpha": python_tau, "bdf": njit_tau,
                                      "implicit_midpoint": lambda t: np.array([np.sin(t), 0.0, 0.0]),
                                      "scipy:RK45": python_tau, "scipy:Radau": njit_tau}[method]
                if method in EVENT_METHODS:
                    options["events"] = {"four_bar": event_rising, "chain3": [event_q1, event_rising, event_stop]}.get(
                        model_name, [event_q1, event_rising])
                if method == "bdf" and model_name == "joint_tree":
                    options["max_order"] = 2
                if method == "generalized_alpha" and model_name == "two_squares":
                    options["rho_inf"] = 0.6
                return run_record(simulate(model, q0, qd0, t_end, method, **options))
            case(f"simulate/{model_name}/{method}")(run)


_planar_runs()


@case("simulate/element_chain/drivers")
def _drivers_runs():
    out = {}
    for method in ("dopri5", "rk4", "generalized_alpha", "bdf", "scipy:RK45"):
        model = element_chain()
        options = method_options(method, 0.4)
        drivers = {"link1": np.sin} if method != "rk4" else {"link2": (np.cos, lambda t: -np.sin(t),
                                                                        lambda t: -np.cos(t))}
        res = simulate(model, np.zeros(3), np.zeros(3), 0.4, method, drivers=drivers, **options)
        out[method] = run_record(res, drivers=True)
    return out


@case("simulate/four_bar/stabilization")
def _stabilization_runs():
    out = {}
    model, q0 = rm.models.four_bar()
    qd0 = np.array([1.0, 0.0, 0.0])
    for method in ("dopri5", "rk4", "dop853"):
        for stabilization, extra in (("projection", {}), ("baumgarte", {"alpha": 5.0, "beta": 5.0}),
                                     ("none", {})):
            options = method_options(method, 0.4)
            res = simulate(model, q0, qd0, 0.4, method, stabilization=stabilization, **extra, **options)
            out[f"{method}/{stabilization}"] = run_record(res)
    return out


@case("simulate/slider_crank")
def _slider_crank_runs():
    out = {}
    model, q0 = rm.models.slider_crank(crank_angle=0.4)
    for method in ("dopri5", "generalized_alpha", "bdf"):
        res = simulate(model, q0, np.array([2.0, 0.0, 0.0]), 0.3, method, **method_options(method, 0.3))
        out[method] = run_record(res)
    return out


@case("simulate/augmented")
def _augmented_runs():
    out = {}
    builds = {"two_squares": lambda: rm.models.two_squares()[:2] + (np.array([0.5, -0.3]),),
              "four_bar": lambda: rm.models.four_bar() + (np.array([1.0, 0.0, 0.0]),),
              "slider_crank": lambda: rm.models.slider_crank(crank_angle=0.4) + (np.array([2.0, 0.0, 0.0]),),
              "joint_tree": lambda: (joint_tree(), np.array([0.4, 0.05, -0.3, 0.1, 0.05, 0.2]), np.zeros(6))}
    for name, build in builds.items():
        for method in ("dopri5", "dop853", "rk4", "implicit_midpoint", "scipy:RK45"):
            for stabilization, extra in (("baumgarte", {"alpha": 5.0, "beta": 5.0}), ("projection", {})):
                if method.startswith("scipy") and stabilization == "projection":
                    continue
                model, q0, qd0 = build()
                options = method_options(method, 0.3)
                if method in EVENT_METHODS:
                    options["events"] = event_rising
                res = simulate(model, q0, qd0, 0.3, method, formulation="augmented", stabilization=stabilization,
                               **extra, **options)
                out[f"{name}/{method}/{stabilization}"] = run_record(res, inputs=False)
    model = element_chain()
    res = simulate(model, np.zeros(3), np.zeros(3), 0.3, "dopri5", formulation="augmented", tau=python_tau,
                   drivers={"link2": np.sin}, t_eval=np.linspace(0, 0.3, 7))
    out["element_chain/dopri5/drivers_tau"] = run_record(res, inputs=False)
    return out


@case("simulate/result_save_load")
def _save_load():
    model, q0 = rm.models.four_bar()
    res = simulate(model, q0, np.array([1.0, 0.0, 0.0]), 0.3, "dopri5", t_eval=np.linspace(0, 0.3, 5),
                   events=event_rising)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.npz"
        res.save(path)
        loaded = rm.SimulationResult.load(path, model)
    return {"loaded": loaded, "energy": loaded.energy()}


# ---- spatial simulate -----------------------------------------------------------------------------------------------

SPATIAL_METHODS = ("dopri5", "dop853", "rk4", "implicit_midpoint", "generalized_alpha", "bdf", "scipy:RK45")


def _spatial_runs():
    def governor():
        gov, q0, v0 = governor_state()
        return gov.model, q0, v0

    builds = {"heavy_top": (heavy_top_state, 0.2), "governor_closed": (governor, 0.2),
              "spatial_tree": (spatial_tree, 0.2), "spatial_four_bar": (
                  lambda: spatial_four_bar() + (np.zeros(3),), 0.3)}
    for name, (build, t_end) in builds.items():
        for method in SPATIAL_METHODS:
            def run(build=build, t_end=t_end, method=method, name=name):
                model, q0, v0 = build()
                adaptive = {"rtol": 1e-7, "atol": 1e-9}
                options = method_options(method, t_end, adaptive=adaptive)
                if method == "generalized_alpha" and name == "heavy_top":
                    options["dt"] = 2e-3  # h |omega| < 1 for the spinning top
                if name == "spatial_tree":
                    options["tau"] = python_tau if method in ("dopri5", "bdf", "rk4") else np.full(model.nv, 0.05)
                if method in EVENT_METHODS:
                    options["events"] = lambda t, q, v: v[0] - 0.05
                return run_record(simulate(model, q0, v0, t_end, method, **options), planar=False)
            case(f"simulate3d/{name}/{method}")(run)


_spatial_runs()


@case("simulate3d/governor_closed/baumgarte")
def _governor_baumgarte():
    gov, q0, v0 = governor_state()
    res = simulate(gov.model, q0, v0, 0.2, "dopri5", stabilization="baumgarte", alpha=10.0, beta=10.0, rtol=1e-8,
                   atol=1e-10, t_eval=np.linspace(0, 0.2, 5))
    return run_record(res, planar=False)


# ---- per-state functions, planar ------------------------------------------------------------------------------------

PLANAR_MODELS = {"chain3": chain3, "element_chain": element_chain, "joint_tree": joint_tree,
                 "two_squares": lambda: rm.models.two_squares()[0], "chain40": lambda: rm.chains.serial_chain(40)}


def _planar_calls():
    for name, build in PLANAR_MODELS.items():
        def run(build=build, name=name):
            model = build()
            out = {}
            for seed in range(3):
                q, qd, tau, qdd = random_state(model, seed)
                t = 0.1 * seed
                buffer = np.zeros(model.nq)
                rm.forward_dynamics(model, q, qd, tau, out=buffer, t=t)
                body = model.body_names[-1]
                out[f"seed{seed}"] = {
                    "fd": rm.forward_dynamics(model, q, qd, tau, t=t),
                    "fd_out": buffer,
                    "fd_mass_matrix": rm.forward_dynamics(model, q, qd, tau, method="mass_matrix", t=t),
                    "fd_no_tau": rm.forward_dynamics(model, q, qd),
                    "id": rm.inverse_dynamics(model, q, qd, qdd, t=t),
                    "mass_matrix": rm.mass_matrix(model, q),
                    "bias_forces": rm.bias_forces(model, q, qd),
                    "energy": rm.energy(model, q, qd, t=t),
                    "forward_kinematics": rm.forward_kinematics(model, q, qd),
                    "forward_kinematics_q": rm.forward_kinematics(model, q),
                    "point_kinematics": rm.point_kinematics(model, q, qd, body, (0.1, -0.05)),
                    "point_kinematics_many": rm.point_kinematics(model, q, qd, 0, np.array([[0.1, 0.2], [-0.3, 0.0]])),
                    "element_forces": rm.element_forces(model, q, qd, t=t),
                    "joint_reactions": rm.joint_reactions(model, q, qd, qdd, tau, t=t),
                    "solve_effective": rm.solve_effective(model, q, qd, 1.0, 0.01, 1e-4, tau),
                }
            return out
        case(f"calls/{name}")(run)


_planar_calls()


@case("calls/loops")
def _loop_calls():
    out = {}
    for name, (model, q_closed) in {"four_bar": rm.models.four_bar(),
                                    "slider_crank": rm.models.slider_crank(crank_angle=0.7)}.items():
        for seed in range(2):
            _, qd, tau, qdd = random_state(model, 10 + seed)
            q = q_closed + 0.01 * seed
            out[f"{name}/seed{seed}"] = {
                "loop_dynamics": rm.loop_dynamics(model, q, qd, tau),
                "loop_dynamics_baumgarte": rm.loop_dynamics(model, q, qd, tau, alpha=3.0, beta=4.0),
                "loop_dynamics_mass_matrix": rm.loop_dynamics(model, q, qd, tau, method="mass_matrix"),
                "loops_module": rm.loops.loop_dynamics(model, q, qd, tau, t=0.2),
                "fd": rm.forward_dynamics(model, q, qd, tau),
                "fd_mass_matrix": rm.forward_dynamics(model, q, qd, tau, method="mass_matrix"),
                "constraints": rm.loops.constraints(model, q, qd),
                "project": rm.loops.project(model, q, qd),
                "joint_reactions": rm.joint_reactions(model, q, qd, qdd, tau),
                "solve_effective": rm.solve_effective(model, q, qd, 1.0, 0.02, 1e-3, tau, multipliers=True),
                "solve_effective_rhs": rm.solve_effective(model, q, qd, 1.0, 0.0, 1e-3, tau,
                                                          loop_rhs=np.array([0.1, -0.2])),
            }
    return out


@case("calls/compiled_forward_dynamics")
def _compiled_calls():
    out = {}
    for name, build in (("chain3", chain3), ("element_chain", element_chain),
                        ("four_bar", lambda: rm.models.four_bar()[0]),
                        ("chain2_specialized", lambda: rm.chains.serial_chain(2))):
        model = build()
        fd = rm.compiled_forward_dynamics(model, specialize=name.endswith("specialized"))
        q, qd, tau, _ = random_state(model, 21)
        buffer = np.zeros(model.nq)
        fd(q, qd, tau, out=buffer)
        out[name] = {"fd": fd(q, qd), "fd_tau": fd(q, qd, tau), "out": buffer, "short_path": fd.short_path}
    return out


@case("calls/augmented")
def _augmented_calls():
    aug = rm.augmented
    out = {}
    models = {"two_squares": rm.models.two_squares()[0], "four_bar": rm.models.four_bar()[0],
              "joint_tree": joint_tree(), "element_chain": element_chain()}
    for name, model in models.items():
        q, qd, tau, _ = random_state(model, 31)
        if name == "four_bar":
            q = rm.models.four_bar()[1]
        z, zd = aug.absolute_from_joint(model, q, qd)
        powers = np.zeros(2)
        record = {"z": z, "zd": zd, "joint_from_absolute": aug.joint_from_absolute(model, z, zd),
                  "constraints": aug.constraints(model, z, zd, t=0.1), "joint_jacobian": aug.joint_jacobian(model, z),
                  "mass_matrix": aug.mass_matrix(model), "applied_forces": aug.applied_forces(model, z, zd, tau, 0.1,
                                                                                              powers),
                  "powers": powers, "project": aug.project(model, z + 1e-4, zd + 1e-3)}
        for solver in ("tree", "sparse", "dense", "filtered"):
            zdd, lam = aug.forward_dynamics(model, z, zd, tau, 0.1, solver=solver)
            record[f"fd_{solver}"] = (zdd, lam)
            record[f"joint_accelerations_{solver}"] = aug.joint_accelerations(model, z, zd, zdd)
            record[f"joint_constraint_forces_{solver}"] = aug.joint_constraint_forces(model, z, zd, lam)
            if model.nloops:
                record[f"loop_forces_{solver}"] = aug.loop_forces(model, z, zd, lam)
        record["fd_baumgarte"] = aug.forward_dynamics(model, z, zd, tau, alpha=2.0, beta=3.0)
        y = np.concatenate((z.reshape(-1), zd.reshape(-1), [0.0, 0.0]))
        record["state_derivative"] = aug.state_derivative(model, 0.2, y, tau)
        record["state_derivative_tau_fn"] = aug.state_derivative(model, 0.2, y[:-2], python_tau, alpha=1.0, beta=1.0)
        out[name] = record
    return out


@case("calls/batch")
def _batch_calls():
    out = {}
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS, 2} & set(range(1, numba.config.NUMBA_NUM_THREADS
                                                                                 + 1))):
            numba.set_num_threads(threads)
            for name, build in (("chain3", chain3), ("element_chain", element_chain), ("joint_tree", joint_tree)):
                model = build()
                rng = np.random.default_rng(41)
                k = 9
                Q, QD, TAU, QDD = (rng.uniform(-1, 1, (k, model.nq)) for _ in range(4))
                out[f"threads{threads}/{name}"] = {
                    "forward_dynamics": rm.batch.forward_dynamics(model, Q, QD, TAU, t=0.3),
                    "forward_dynamics_no_tau": rm.batch.forward_dynamics(model, Q, QD),
                    "inverse_dynamics": rm.batch.inverse_dynamics(model, Q, QD, QDD, t=0.3),
                    "energy": rm.batch.energy(model, Q, QD, t=0.3)}
    finally:
        numba.set_num_threads(before)
    return out


@case("calls/chains_and_models")
def _chain_calls():
    rng = np.random.default_rng(51)
    theta, theta_dot = rng.uniform(-1, 1, 5), rng.uniform(-1, 1, 5)
    lengths = np.array([0.3, 0.2, 0.25, 0.1, 0.15])
    rods = rm.chains.rod_chain(lengths, density=2.0)
    beads = rm.chains.bead_chain(4, length=2.0, mass=3.0)
    q = rm.chains.absolute_to_relative(theta)
    gov = rm.models.centrifugal_governor()
    return {
        "takeno": rm.chains.takeno_forward_dynamics(theta, theta_dot, lengths, density=2.0, tau=rng.uniform(-1, 1, 5)),
        "rod_chain_fd": rm.forward_dynamics(rods, q, rm.chains.absolute_to_relative(theta_dot)),
        "relative_to_absolute": rm.chains.relative_to_absolute(q),
        "bead_chain_fd": rm.forward_dynamics(beads, theta[:4], theta_dot[:4]),
        "bead_chain_mass": beads.body_mass, "rod_chain_inertia": rods.body_inertia,
        "heavy_top_precession": rm.models.heavy_top_precession(150.0, 0.3),
        "governor": {"speed": gov.speed(0.5), "steady_angle": gov.steady_angle(15.0),
                     "sleeve_drop": gov.sleeve_drop(15.0),
                     "q": gov.q(0.5, 0.2), "dq_dphi": gov.dq_dphi(0.5), "sleeve_height": gov.sleeve_height(0.5),
                     "reduced_force": gov.reduced_force(0.5, 10.0),
                     "arm_acceleration": gov.arm_acceleration(0.5, 0.3, 10.0, damping=0.1),
                     "jacobi_integral": gov.jacobi_integral(0.5, 0.3, 10.0)},
    }


@case("calls/mechanism")
def _mechanism():
    mech = rm.Mechanism()
    mech.add_body("crank", mass=1.0, inertia=0.08, pose=(0.270, 0.421, 1.0))
    mech.add_body("coupler", mass=2.0, inertia=0.67, pose=(1.501, 1.121, 0.283))
    mech.add_body("rocker", mass=1.5, inertia=0.28, pose=(2.730, 0.700, 1.938))
    mech.add_joint("revolute", "ground", (0, 0), "crank", (-0.5, 0), name="A")
    mech.add_joint("revolute", "crank", (0.5, 0), "coupler", (-1.0, 0), name="B")
    mech.add_joint("revolute", "coupler", (1.0, 0), "rocker", (0.75, 0), name="C")
    mech.add_joint("revolute", "rocker", (-0.75, 0), "ground", (3.0, 0), name="D")
    model, q0, loops = mech.build(cut=["C"])
    return {"q0": q0, "loops": loops, "body_mass": model.body_mass, "joint_type": model.joint_type,
            "fd": rm.forward_dynamics(model, q0, np.array([1.0, 0.0, 0.0]))}


# ---- per-state functions, spatial -----------------------------------------------------------------------------------

@case("calls3d/trees")
def _spatial_calls():
    out = {}
    models = {"heavy_top": rm.models.heavy_top(), "governor_open": rm.models.centrifugal_governor().model,
              "spatial_tree": spatial_tree()[0]}
    for name, model in models.items():
        for seed in range(2):
            q, v, tau, vdot = random_state(model, 60 + seed, planar=False)
            t = 0.3 * seed
            buffer = np.zeros(model.nv)
            rm.forward_dynamics(model, q, v, tau, out=buffer, t=t)
            body = model.names[-1]
            out[f"{name}/seed{seed}"] = {
                "fd": rm.forward_dynamics(model, q, v, tau, t=t), "fd_out": buffer,
                "fd_mass_matrix": rm.forward_dynamics(model, q, v, tau, method="mass_matrix", t=t),
                "id": rm.inverse_dynamics(model, q, v, vdot, t=t), "mass_matrix": rm.mass_matrix(model, q),
                "bias_forces": rm.bias_forces(model, q, v), "energy": rm.energy(model, q, v, t=t),
                "forward_kinematics": rm.forward_kinematics(model, q, v),
                "forward_kinematics_q": rm.forward_kinematics(model, q),
                "point_kinematics": rm.point_kinematics(model, q, v, body, (0.1, -0.05, 0.2)),
                "point_kinematics_many": rm.point_kinematics(model, q, v, 0, np.array([[0.1, 0.2, 0.0],
                                                                                       [-0.3, 0.0, 0.1]])),
                "element_forces": rm.element_forces(model, q, v, t=t),
                "integrate_configuration": rm.integrate_configuration(model, q, v, 0.1),
                "difference": rm.difference(model, q, rm.integrate_configuration(model, q, v, 0.1)),
            }
    return out


@case("calls3d/loops")
def _spatial_loop_calls():
    out = {}
    gov, q_gov, _ = governor_state()
    four, q_four = spatial_four_bar()
    for name, model, q in (("governor_closed", gov.model, q_gov), ("spatial_four_bar", four, q_four)):
        _, v, tau, vdot = random_state(model, 70, planar=False)
        out[name] = {
            "loop_dynamics": rm.spatial_loops.loop_dynamics(model, q, v, tau),
            "loop_dynamics_baumgarte": rm.spatial_loops.loop_dynamics(model, q, v, tau, alpha=2.0, beta=3.0),
            "loop_dynamics_mass_matrix": rm.spatial_loops.loop_dynamics(model, q, v, tau, method="mass_matrix"),
            "fd": rm.forward_dynamics(model, q, v, tau),
            "constraints": rm.spatial_loops.constraints(model, q, v),
            "project": rm.spatial_loops.project(model, rm.integrate_configuration(model, q, 1e-3 * v), v),
            "energy": rm.energy(model, q, v),
        }
    return out


# ---- analyses -------------------------------------------------------------------------------------------------------

@case("analysis/four_bar")
def _four_bar_analysis():
    model, q0 = rm.models.four_bar()
    t = np.linspace(0.0, 1.0, 11)
    kin = rm.kinematic_analysis(model, {"crank": lambda t: 1.0 + 0.5 * t}, t, q0)
    kin_tuple = rm.kinematic_analysis(model, {"crank": (lambda t: 1.0 + np.sin(t), np.cos, lambda t: -np.sin(t))},
                                      t, q0)
    eq = rm.static_equilibrium(model, q0 + 0.05)
    lin = rm.linearize(model, eq.q)
    omega, shapes = rm.modes(model, eq.q)
    qd = np.array([1.0, 0.0, 0.0])
    q_closed = rm.assemble(model, q0 + 0.05, fixed=["crank"])
    return {"assemble": q_closed, "assemble_free": rm.assemble(model, q0 + 0.05),
            "kinematic_analysis": kin, "point": kin.point("coupler", (1.0, 0.0)), "kinematic_analysis_tuple": kin_tuple,
            "static_equilibrium": eq, "linearize": lin, "modes": (omega, shapes),
            "joint_reactions": rm.joint_reactions(model, q_closed, qd, rm.forward_dynamics(model, q_closed, qd))}


@case("analysis/slider_crank")
def _slider_crank_analysis():
    model, q0 = rm.models.slider_crank()
    t = np.linspace(0.0, 0.2, 9)
    kin = rm.kinematic_analysis(model, {"crank": lambda t: 10.0 * t}, t, q0)
    return {"kinematic_analysis": kin, "point": kin.point("rod", (0.2, 0.0)),
            "static_equilibrium": rm.static_equilibrium(model, q0 + 0.02, tau=np.array([0.5, 0.0, 2.0]))}


@case("analysis/pinned_chain")
def _pinned_chain():
    n = 8
    pinned = rm.chains.serial_chain(n, length=10.0, mass=5.0)
    pinned.add_loop("revolute", f"link{n}", (0, -10.0 / n / 2), "ground", (6.0, 0.0))
    v = np.zeros(n)
    v[0], v[n // 2] = np.arcsin(0.6), np.pi - 2 * np.arcsin(0.6)
    eq = rm.static_equilibrium(pinned, v)
    return {"static_equilibrium": eq, "linearize": rm.linearize(pinned, eq.q), "modes": rm.modes(pinned, eq.q, 3)}


@case("analysis/trees")
def _tree_analysis():
    out = {}
    for name, build in (("chain3", chain3), ("joint_tree", joint_tree), ("element_chain", element_chain)):
        model = build()
        guess = np.full(model.nq, 0.1)
        if name == "element_chain":
            model = rm.chains.serial_chain(3)  # static: its constant elements only
            model.add_spring_damper("link3", (0, -1 / 6), "ground", (0.5, -1.0), stiffness=50.0, damping=0.5,
                                    rest_length=0.2)
            model.add_joint_spring_damper("link1", stiffness=2.0, damping=0.1, rest=0.0)
            model.add_torque("link1", 0.3)
        if name == "joint_tree":
            continue  # its planar joint has no equilibrium under gravity
        eq = rm.static_equilibrium(model, guess, tau=np.full(model.nq, 0.05))
        out[name] = {"static_equilibrium": eq, "linearize": rm.linearize(model, eq.q, tau=np.full(model.nq, 0.05)),
                     "modes": rm.modes(model, eq.q, tau=np.full(model.nq, 0.05)), "assemble": rm.assemble(model, guess)}
    return out


@case("analysis3d")
def _spatial_analysis():
    gov = rm.models.centrifugal_governor(ball_mass=1.0, sleeve_mass=2.0, arm=0.2, link=0.2, pivot_height=0.5,
                                         closed=True)
    omega = 1.5 * gov.speed(0.0)
    steady = rm.static_equilibrium(gov.model, gov.q(0.6), fixed=["spindle"], velocity=np.array([omega, 0, 0, 0]))
    four, q_four = spatial_four_bar()
    eq_four = rm.static_equilibrium(four, rm.assemble(four, np.array([-1.2, 0.5, -1.0]), fixed=["crank"]))
    tree = rm.Model3D(name="hanging pair")
    tree.add_body("ground", "spherical", mass=1.0, inertia=(0.02, 0.02, 0.01, 0, 0, 0), com=(0, 0, -0.3), name="a")
    tree.add_body("a", "universal", parent_point=(0, 0, -0.6), mass=0.5, inertia=(0.01, 0.01, 0.004, 0, 0, 0),
                  com=(0, 0, -0.2), name="b")
    guess = rm.integrate_configuration(tree, tree.neutral(), np.array([0.1, -0.1, 0.05, 0.1, 0.1]))
    eq_tree = rm.static_equilibrium(tree, guess)
    return {"governor_steady": steady, "four_bar_equilibrium": eq_four, "four_bar_modes": rm.modes(four, eq_four.q),
            "four_bar_assemble": rm.assemble(four, q_four + 0.03, fixed=["crank"]),
            "tree_equilibrium": eq_tree, "tree_modes": rm.modes(tree, eq_tree.q, 3)}  # kinematics: files/spatial/


@case("ensemble")
def _ensembles():
    out = {}
    before = numba.get_num_threads()
    model = rm.chains.serial_chain(2)
    k = 6
    rng = np.random.default_rng(81)
    Q0, QD0 = rng.uniform(-1, 1, (k, 2)), np.zeros((k, 2))
    params = {"mass:link2": np.linspace(0.5, 2.0, k), "gravity": np.tile([0.0, -9.81], (k, 1))}
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            out[f"threads{threads}"] = {
                "dopri5": rm.simulate_many(model, Q0, QD0, 0.5, t_eval=np.linspace(0, 0.5, 6), params=params),
                "rk4": rm.simulate_many(model, Q0, QD0, 0.5, "rk4", dt=0.01, every=5, tau=np.array([0.1, -0.1])),
                "implicit_midpoint": rm.simulate_many(model, Q0, QD0, 0.5, "implicit_midpoint", dt=0.02,
                                                      tau=rng.uniform(-1, 1, (k, 2)) * 0 + 0.05),
                "tau_fn": rm.simulate_many(model, Q0, QD0, 0.3, tau=njit_tau, t_eval=[0.0, 0.1, 0.3]),
                "events": rm.simulate_many(model, 3 * Q0, 4 * QD0 + 3, 0.5, t_eval=[0, 0.5], events=njit_flip),
            }
    finally:
        numba.set_num_threads(before)
    out["member_equals_simulate"] = rm.simulate(model, Q0[0], QD0[0], 0.5, t_eval=np.linspace(0, 0.5, 6)).q
    return out


@case("studies")
def _studies():
    st = rm.studies
    omega, shapes = st.chain_modes(rm.chains.serial_chain(60), 3)
    fall = st.folded_chain_fall(6, samples=40)
    fall.pop("result")
    return {
        "continuum_frequencies": st.continuum_frequencies(3),
        "continuum_mode_shape": st.continuum_mode_shape(2, np.linspace(0, 1, 7)),
        "chain_modes": (omega, shapes),
        "frequency_study_rods": st.frequency_study([2, 4, 8], k=2),
        "frequency_study_beads": st.frequency_study([2, 4, 8], k=2, kind="beads"),
        "catenary_study": st.catenary_study([4, 8], span=6.0, length=10.0),
        "continuous_catenary": st.continuous_catenary(6.0, 10.0),
        "discrete_catenary": st.discrete_catenary(6, 6.0, 10.0),
        "chain_points": st.chain_points(np.array([0.1, 0.2, -0.1])),
        "folded_chain_fall": fall,
        "folded_chain_study": st.folded_chain_study([4], samples=20),
        "hanging_swing": st.hanging_swing(20, t_end=0.1, dt=5e-3),
        "hanging_swing_bdf": st.hanging_swing(10, t_end=0.1, method="bdf", rtol=1e-6, atol=1e-9),
        "tip_whip": st.tip_whip(5, t_end=0.3, samples=30),
        "tip_whip_rk4": st.tip_whip(4, t_end=0.2, method="rk4", dt=1e-3, samples=20),
        "energy_conserving": (st.energy_conserving_speed(np.linspace(0, 0.9, 5), 1.0),
                              st.energy_conserving_fall_time(1.0)),
    }


# ---- model files -----------------------------------------------------------------------------------------------------

def examples_folder():
    return Path(rm.__file__).resolve().parents[1] / "examples" / "models"


def _run_file(spec):
    """What ``rmbd run`` would do with the file's [analysis], on a shortened time span."""
    model, analysis = spec.model, spec.analysis
    planar = isinstance(model, rm.Model)
    kind = analysis.get("type", "dynamics")
    if kind == "dynamics":
        t_end = min(float(analysis.get("t_end", 0.05)), 0.05)
        options = {"rtol": analysis.get("rtol", 1e-8), "atol": analysis.get("atol", 1e-10),
                   "t_eval": np.linspace(0.0, t_end, 6)}
        if spec.drivers:
            options["drivers"] = spec.drivers
        res = simulate(model, spec.q0, spec.qd0, t_end, "dopri5", **options)
        return run_record(res, planar=planar, drivers=bool(spec.drivers))
    if kind == "kinematics":
        t_end = min(float(analysis["t_end"]), 0.2)
        return rm.kinematic_analysis(model, spec.drivers, np.linspace(0.0, t_end, 11), spec.q0)
    if kind == "statics":
        return rm.static_equilibrium(model, spec.q0)
    if kind == "modes":
        eq = rm.static_equilibrium(model, spec.q0)
        count = min(analysis["count"], model.nv if not planar else model.nq - model.nconstraints)
        return {"equilibrium": eq, "modes": rm.modes(model, eq.q, count)}
    raise ValueError(f"unknown analysis {kind!r}")


def _file_cases():
    names = ("double_pendulum.toml", "two_squares.toml", "four_bar.toml", "slider_crank.toml", "chain_1000.toml",
             "kine2d_double_pendulum.deck", "spatial/governor.toml", "spatial/hanging_rods.toml",
             "spatial/heavy_top.toml", "spatial/rssr.toml")
    for name in names:
        def run(name=name):
            spec = rm.io.load(examples_folder() / name)
            text = rm.io.dumps(spec.model, spec.q0, spec.qd0, spec.analysis or None, spec.drivers or None)
            again = rm.io.loads(text)
            return {"spec": spec, "run": _run_file(spec), "dumps": text, "loads_q0": again.q0, "loads_qd0": again.qd0}
        case(f"files/{name}")(run)


_file_cases()


# ---- record and compare ---------------------------------------------------------------------------------------------

def record(path, only=()):
    print(f"recursive_mbd from {Path(rm.__file__).resolve().parent}")
    print(f"numba {numba.__version__}, numpy {np.__version__}, {numba.config.NUMBA_NUM_THREADS} numba threads")
    arrays, failed = {}, []
    start = time.perf_counter()
    cases = [(name, function) for name, function in CASES if not only or name.startswith(tuple(only))]
    for name, function in cases:
        began = time.perf_counter()
        try:
            found = {}
            flatten(name, function(), found)
        except Exception:  # noqa: BLE001 - report every failing case, run the others
            failed.append(name)
            print(f"FAILED {name}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
            continue
        duplicate = set(found) & set(arrays)
        if duplicate:
            raise KeyError(f"{name}: keys recorded twice: {sorted(duplicate)[:5]}")
        arrays.update(found)
        print(f"{time.perf_counter() - began:7.2f} s  {len(found):5d} keys  {name}", flush=True)
    arrays["meta/failed_cases"] = np.array(failed, dtype=str)
    np.savez(path, **arrays)
    print(f"{len(cases) - len(failed)} of {len(cases)} cases, {len(arrays)} keys written to {path} in "
          f"{time.perf_counter() - start:.1f} s")
    if failed:
        print(f"FAILED ({len(failed)}): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def difference(a, b):
    """'identical', or what differs between two recorded arrays."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"DIFFERENT dtype/shape {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if a.tobytes() == b.tobytes():
        return "identical"
    if a.dtype.kind in "fc":
        diff = np.abs(a - b)
        both_nan = np.isnan(a) & np.isnan(b)
        nan_mismatch = int(np.count_nonzero(np.isnan(a) != np.isnan(b)))
        diff = np.where(both_nan, 0.0, diff)
        worst = float(np.nanmax(diff)) if diff.size else 0.0
        changed = int(np.count_nonzero((diff != 0) | (np.isnan(diff) & ~both_nan)))
        if not changed and not nan_mismatch:
            return "DIFFERENT in the bits only: equal values (signed zeros or NaN payloads)"
        return f"DIFFERENT max abs diff {worst:.3e} ({changed} of {a.size} entries; NaN mismatches {nan_mismatch})"
    if a.dtype.kind in "iub":
        return f"DIFFERENT max abs diff {np.abs(a.astype(float) - b.astype(float)).max():.3e}"
    return f"DIFFERENT {a!r} vs {b!r}"[:300]


def compare(path_a, path_b):
    with np.load(path_a) as fa, np.load(path_b) as fb:
        a, b = {k: fa[k] for k in fa.files}, {k: fb[k] for k in fb.files}
    bad = 0
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            print(f"{key}: MISSING in {path_a if key not in a else path_b}")
            bad += 1
            continue
        verdict = difference(a[key], b[key])
        print(f"{key}: {verdict}")
        bad += verdict != "identical"
    print(f"{len(set(a) | set(b))} keys: {bad} differ or are missing" if bad else
          f"{len(a)} keys: all identical")
    return 1 if bad else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run every case and save the arrays")
    rec.add_argument("out", help="output .npz file")
    rec.add_argument("--only", nargs="+", default=(), metavar="PREFIX",
                     help="run only the cases whose names begin with one of these (for trying a case out)")
    cmp_ = sub.add_parser("compare", help="compare two records key by key")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out, args.only)
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
