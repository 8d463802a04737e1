"""Test cases shared by several test files: model-file texts and their fuzzing, and small models with the states
or runs the tests compare (each written once here, used as they were written in each test)."""

import contextlib
import io as std_io
import math
import os
import sys
from pathlib import Path

import numpy as np
from hypothesis import strategies as st
from numba.core.registry import CPUDispatcher
from spatial_reference import random_planar_spec

import recursive_mbd as rm
from recursive_mbd import cli

# The arm-and-slider tree of the planar model-file tests (tests/test_cli_errors.py, tests/test_files_cli.py): an arm
# hinged to the ground, a slider on it, a spring from the slider to the ground. Its [[body]] and [[spring_damper]]
# tables; each file adds its own [model], [[loop]], [initial] and [analysis] tables.
ARM_AND_SLIDER_TABLES = """[[body]]
name = "arm"
parent = "ground"
joint = "revolute"
child_point = [0.0, 0.5]
mass = 1.0
inertia = 0.1

[[body]]
name = "slider"
parent = "arm"
joint = "prismatic"
parent_point = [0.0, -0.5]
axis = [0.0, -1.0]
mass = 0.5
inertia = 0.01

[[spring_damper]]
body_a = "slider"
point_a = [0.0, 0.0]
body_b = "ground"
point_b = [1.0, -1.0]
stiffness = 5.0
rest_length = 0.0
"""


def fuzzed(data, text, values):
    """``text`` after 1 to 3 random edits drawn from the hypothesis ``data``: a line deleted, the value of a
    ``key = value`` line replaced by one of ``values``, or a line of junk inserted."""
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(lines) - 1))
        action = data.draw(st.sampled_from(["delete", "value", "junk"]))
        if action == "delete":
            del lines[index]
        elif action == "value" and "=" in lines[index]:
            key = lines[index].split("=")[0]
            value = data.draw(st.sampled_from(values))
            lines[index] = f"{key}= {value}"
        else:
            lines.insert(index, data.draw(st.text(alphabet="[]=\"a1. \n", max_size=12)))
        if not lines:
            lines = [""]
    return "\n".join(lines)


def damaged_copies(raw, seed=12, flips=300, cuts=60):
    """Damaged copies of a file's bytes ``raw``: truncations at random lengths, and single bits flipped at random
    positions and every 97th byte (for the tests that a damaged result file gives one clear error)."""
    rng = np.random.default_rng(seed)
    positions = np.unique(np.concatenate((rng.integers(0, len(raw), flips), np.arange(0, len(raw), 97))))
    cases = [raw[:cut] for cut in np.unique(rng.integers(0, len(raw), cuts))]
    for pos in positions:
        flipped = bytearray(raw)
        flipped[pos] ^= 1 << int(rng.integers(0, 8))
        cases.append(bytes(flipped))
    return cases


def three_parallel_cranks():
    """Three equal parallel cranks joined by one coupler (4 loop equations of rank 3), with a state on the
    constraints: (model, q, qd)."""
    model = rm.Model()
    model.add_body("ground", "revolute", (0, 0), (0, 0.5), mass=1, inertia=0.1, name="crank1")
    model.add_body("crank1", "revolute", (0, -0.5), (-1, 0), mass=2, inertia=0.5, name="coupler")
    model.add_body("ground", "revolute", (1, 0), (0, 0.5), mass=1, inertia=0.1, name="crank2")
    model.add_body("ground", "revolute", (2, 0), (0, 0.5), mass=1, inertia=0.1, name="crank3")
    model.add_loop("revolute", "coupler", (0, 0), "crank2", (0, -0.5))
    model.add_loop("revolute", "coupler", (1, 0), "crank3", (0, -0.5))
    return model, np.array([0.4, -0.4, 0.4, 0.4]), np.array([1.0, -1.0, 1.0, 1.0])


def spherical_pendulum_with_elements():
    """A spherical pendulum with a point spring-damper to the ground, a damper on its joint and a tau(t) function,
    its event (omega_x crossing zero) and its dopri5 reference to 2 s at rtol = atol = 1e-12, sampled at t_eval (41
    points) with the event: (model, q0, v0, tau, crossing, t_eval, reference)."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body(joint="spherical", mass=1.0, inertia=(0.02, 0.03, 0.01, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5))
    model.add_spring_damper("ground", (0.3, 0.0, -0.5), 0, (0.0, 0.0, -0.5), stiffness=20.0, damping=0.5,
                            rest_length=0.2)
    model.add_joint_spring_damper(0, stiffness=0.0, damping=0.05)
    q0 = rm.integrate_configuration(model, model.neutral(), [0.4, -0.3, 0.0])
    v0 = np.array([0.0, 0.5, 1.0])

    def tau(t):
        return np.array([0.0, 0.0, 0.2 * np.sin(3.0 * t)])

    def crossing(t, q, v):
        return v[0]

    t_eval = np.linspace(0.0, 2.0, 41)
    reference = rm.simulate(model, q0, v0, 2.0, method="dopri5", rtol=1e-12, atol=1e-12, tau=tau, t_eval=t_eval,
                            events=crossing)
    return model, q0, v0, tau, crossing, t_eval, reference


def spring_linkage(damping, arm_rest, more=None):
    """A spherical pendulum ("arm"), a universal-jointed link and a slider on it, hung by springs (preloads, a
    spherical joint spring with the rest quaternion ``arm_rest``), every damper ``damping``; ``more(model)`` adds
    elements. (model, q0, v0). Also the accuracy model of benchmarks/spatial_elements.py."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "spherical", child_point=(0.0, 0.0, 0.4), mass=1.2, inertia=(0.05, 0.07, 0.09, 0.01,
                   0.0, 0.0), com=(0.02, 0.0, 0.0), name="arm")
    model.add_body("arm", "universal", parent_point=(0.0, 0.0, -0.4), child_point=(0.0, 0.0, 0.3), mass=0.8,
                   inertia=0.02, name="link", axis=((1.0, 0.0, 0.0), (0.0, 1.0, 0.2)))
    model.add_body("link", "prismatic", parent_point=(0.0, 0.0, -0.3), axis=(0.0, 0.3, 1.0), mass=0.5,
                   inertia=0.01, name="slider")
    model.add_spring_damper("ground", (0.5, 0.0, 0.2), "link", (0.05, 0.0, 0.0), 40.0, damping, rest_length=0.3,
                            preload=2.0)
    model.add_spring_damper("arm", (0.1, 0.1, 0.0), "slider", (0.0, 0.0, 0.0), 25.0, damping, rest_length=0.2)
    model.add_joint_spring_damper("arm", 3.0, damping, rest=arm_rest)
    model.add_joint_spring_damper("link", (2.0, 1.0), (damping, damping), rest=(0.1, -0.2))
    model.add_joint_spring_damper("slider", 30.0, damping, rest=-0.1)
    if more is not None:
        more(model)
    q0 = rm.integrate_configuration(model, model.neutral(), (0.3, -0.2, 0.5, 0.2, 0.1, 0.05))
    return model, q0, np.array([0.5, -0.4, 1.0, 0.3, -0.6, 0.2])


def planar_chain_and_its_spatial_twin():
    """serial_chain(3, length=1.5, mass=2.0) and the same chain built as a Model3D (revolute axes along z, gravity
    along -y), with a start state: (planar, spatial, q0, qd0)."""
    planar = rm.chains.serial_chain(3, length=1.5, mass=2.0)
    model = rm.Model3D(gravity=(0.0, -9.81, 0.0))
    rod, mass = 0.5, 2.0 / 3
    for i in range(3):
        model.add_body(parent=i - 1, joint="revolute", parent_point=(0.0, -rod / 2 if i else 0.0, 0.0),
                       child_point=(0.0, rod / 2, 0.0), mass=mass, inertia=mass * rod**2 / 12)
    return planar, model, np.array([1.0, -0.5, 0.3]), np.array([0.0, 1.0, -2.0])


def random_planar_case(seed, max_bodies):
    """A random planar tree from ``seed`` (random_planar_spec, 2 to max_bodies - 1 bodies) and a random state, in
    this order from one generator: (spec, its compiled rm.Model at gravity (0.3, -9.81), q, v, tau)."""
    rng = np.random.default_rng(seed)
    spec = random_planar_spec(rng, int(rng.integers(2, max_bodies)))
    planar = rm.Model(gravity=(0.3, -9.81))
    for body in spec:
        planar.add_body(**body)
    planar = planar.compile()
    q, v, tau = rng.normal(size=planar.nq), rng.normal(size=planar.nq), rng.normal(size=planar.nq)
    return spec, planar, q, v, tau


def compiled_specialisations():
    """How many specialisations the package's kernels (every numba dispatcher of a ``recursive_mbd`` module) hold in
    this process: a call that makes numba compile or load another one (an argument of another type, such as a
    read-only array) raises it."""
    modules = [module for name, module in list(sys.modules.items()) if name.startswith("recursive_mbd.")]
    return sum(len(value.signatures) for module in modules for value in vars(module).values()
               if isinstance(value, CPUDispatcher))


def read_only(array):
    """A read-only copy of ``array`` (as a frozen buffer or a view the caller may not write)."""
    frozen = np.array(array, dtype=float)
    frozen.setflags(write=False)
    return frozen


def assert_same_results(result, reference, where):
    """``result`` equals ``reference`` bit for bit: arrays, numbers, and tuples, lists and dicts of them."""
    if isinstance(reference, dict):
        assert result.keys() == reference.keys(), where
        for key in reference:
            assert_same_results(result[key], reference[key], f"{where}[{key!r}]")
    elif isinstance(reference, (tuple, list)):
        assert len(result) == len(reference), where
        for i, (got, expected) in enumerate(zip(result, reference, strict=True)):
            assert_same_results(got, expected, f"{where}[{i}]")
    else:
        np.testing.assert_array_equal(result, reference, err_msg=where)


def per_call_functions(body, point):
    """The public per-call functions of a model (planar or spatial), each on (model, q, qd, tau) positionally: tau
    is qdd for inverse dynamics; point_kinematics of ``point`` on ``body``."""
    return {
        "forward_dynamics": rm.forward_dynamics,
        "forward_dynamics (mass_matrix)": lambda m, q, qd, tau: rm.forward_dynamics(m, q, qd, tau, "mass_matrix"),
        "forward_dynamics (out)": lambda m, q, qd, tau: rm.forward_dynamics(m, q, qd, tau, out=np.empty(len(tau))),
        "inverse_dynamics": rm.inverse_dynamics,
        "mass_matrix": lambda m, q, qd, tau: rm.mass_matrix(m, q),
        "bias_forces": lambda m, q, qd, tau: rm.bias_forces(m, q, qd),
        "energy": lambda m, q, qd, tau: rm.energy(m, q, qd),
        "element_forces": lambda m, q, qd, tau: rm.element_forces(m, q, qd),
        "forward_kinematics": lambda m, q, qd, tau: rm.forward_kinematics(m, q, qd),
        "point_kinematics": lambda m, q, qd, tau: rm.point_kinematics(m, q, qd, body, point),
    }


def assert_read_only_inputs_change_nothing(model, q, qd, tau, calls):
    """Every call of ``calls`` (``per_call_functions``) with q, qd, tau read-only, one at a time and all together,
    gives the bits of the writable call, and nothing new is compiled."""
    references = {name: call(model, q, qd, tau) for name, call in calls.items()}  # warm: the short paths set
    before = compiled_specialisations()
    for frozen in ((0,), (1,), (2,), (0, 1, 2)):
        args = [read_only(x) if i in frozen else x for i, x in enumerate((q, qd, tau))]
        for name, call in calls.items():
            assert_same_results(call(model, *args), references[name], f"{name}, read-only {frozen}")
    assert compiled_specialisations() == before


# the record of compiling ``uncompiled_probe()`` for floats
PROBE_NOTICE = ("compiling the kernel probe for planar models (first use with these argument types; cached for "
                "later runs)")


def uncompiled_probe():
    """A tiny kernel, as if of this package's planar kernels, calling another: new and not compiled (no cache), so
    that its first call compiles both (in a tenth of a second) and ``compile_notice`` says so (``PROBE_NOTICE``)."""
    import numba  # noqa: PLC0415

    def inner(x):
        return x + 1.0

    def probe(x):
        return 2.0 * inner_kernel(x)

    for function in (inner, probe):
        function.__module__ = "recursive_mbd._kernels.planar.probe"
    inner_kernel = numba.njit(inner)
    return numba.njit(probe)


def rmbd(*args, cwd):
    """Run the command line in-process from ``cwd``: (exit code, stdout and stderr)."""
    out, err = std_io.StringIO(), std_io.StringIO()
    here = Path.cwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stderr(err):
            code = cli.main(list(args), out=out)
    finally:
        os.chdir(here)
    return code, out.getvalue() + err.getvalue()


def swinging_chain(extend=None):
    """A spherical, a revolute and a universal joint in a chain and a swinging state of it (the
    augmented formulation's tests in 3D: tests/test_augmented3d.py, tests/test_augmented3d_implicit.py);
    ``extend(model)``, where given, adds to the model (elements) before it is compiled."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "spherical", child_point=(0.0, 0.0, -0.5), mass=1.0, inertia=(0.05, 0.05, 0.02, 0, 0, 0))
    model.add_body(0, "revolute", parent_point=(0.0, 0.0, 0.3), child_point=(0.0, 0.0, -0.4), axis=(1.0, 0.0, 0.0),
                   mass=0.5, inertia=0.01)
    model.add_body(1, "universal", parent_point=(0.0, 0.0, 0.4), child_point=(0.0, 0.1, -0.3),
                   axis=((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), mass=0.4, inertia=0.02)
    if extend is not None:
        extend(model)
    model.compile()
    rng = np.random.default_rng(0)
    q0 = rm.integrate_configuration(model, model.neutral(), 0.5 * rng.normal(size=model.nv))
    return model, q0, rng.normal(size=model.nv)


def lowered_until_touching(height, low, high, level, iterations=60):
    """The pose parameter in [low, high] where ``height`` (a decreasing crossing: above ``level`` at low, below it at
    high) meets ``level``, by bisection, on the touching side (height just below level: the shape that far deep)."""
    assert height(low) > level > height(high)
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if height(middle) > level else (low, middle)
    return high


def child_on_its_parents_plane(gravity, law):
    """An arm hinged about y at the ground carrying a plane at its far end, and a child on a spherical joint at the
    arm's end whose sphere (radius 0.02, the contact ``law``) presses 0.4 mm into that plane, the child turned 1
    mrad: a contact row between a body and its parent. Returns (model, q)."""
    model = rm.Model3D(gravity=gravity)
    model.add_body(parent="ground", joint="revolute", child_point=(-0.5, 0.0, 0.0), mass=2.0,
                   inertia=(0.01, 0.2, 0.2, 0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0), name="arm")
    model.add_body(parent="arm", joint="spherical", parent_point=(0.5, 0.0, 0.0), child_point=(-0.3, 0.0, 0.0),
                   mass=1.0, inertia=(0.01, 0.05, 0.05, 0.0, 0.0, 0.0), name="child")
    model.add_ground("stop", point=(0.9, 0.0, -0.1), normal=(0.0, 0.0, 1.0), body="arm")
    model.add_contact("child", "stop", point=(0.1, 0.0, -0.1 + 0.02 - 4e-4), radius=0.02, **law)
    turn = np.array([0.3, 1.0, 0.2]) / np.linalg.norm([0.3, 1.0, 0.2])
    return model, np.r_[0.3, math.cos(5e-4), math.sin(5e-4) * turn]
