"""rm.compiled_forward_dynamics: the pre-bound short path equals rm.forward_dynamics and raises its errors."""

import numpy as np
import pytest

import recursive_mbd as rm


def _state(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-0.5, 0.5, n), rng.normal(size=n), rng.normal(size=n)


@pytest.mark.parametrize("n", [1, 2, 10, 57])
def test_equals_forward_dynamics_on_chains(n):
    model = rm.chains.serial_chain(n)
    fd = rm.compiled_forward_dynamics(model)
    q, qd, tau = _state(n)
    assert fd.short_path or n == 1  # the short path (a 1-body model's arrays type as C: full route)
    np.testing.assert_array_equal(fd(q, qd, tau), rm.forward_dynamics(model, q, qd, tau))
    np.testing.assert_array_equal(fd(q, qd), rm.forward_dynamics(model, q, qd))
    out = np.empty(n)
    assert fd(q, qd, tau, out=out) is out
    np.testing.assert_array_equal(out, rm.forward_dynamics(model, q, qd, tau))
    # lists, float32, strided views: converted by the full checks
    np.testing.assert_allclose(fd(list(q), qd.astype(np.float32), np.repeat(tau, 2)[::2]),
                               rm.forward_dynamics(model, list(q), qd.astype(np.float32), tau), rtol=1e-15)


def test_mixed_tree_with_prismatic_fixed_and_planar_joints():
    model = rm.Model()
    a = model.add_body(parent="ground", joint="planar", child_point=(0, 0.3), mass=2.0, inertia=0.1)
    b = model.add_body(parent=a, joint="revolute", parent_point=(0.1, 0), child_point=(0, 0.2), mass=1.0,
                       inertia=0.05)
    model.add_body(parent=a, joint="prismatic", parent_point=(0, -0.1), axis=(1, 0), mass=0.5, inertia=0.01)
    model.add_body(parent=b, joint="fixed", parent_point=(0, -0.2), mass=0.3, inertia=0.02)
    q, qd, tau = _state(model.nq, seed=4)
    fd = rm.compiled_forward_dynamics(model)
    np.testing.assert_array_equal(fd(q, qd, tau), rm.forward_dynamics(model, q, qd, tau))


def test_errors_name_the_argument_like_forward_dynamics():
    model = rm.chains.serial_chain(3)
    fd = rm.compiled_forward_dynamics(model)
    q, qd, tau = _state(3)
    with pytest.raises(rm.StateError, match="q must have shape"):
        fd(np.zeros(4), qd)
    with pytest.raises(rm.StateError, match="qd must have shape"):
        fd(q, np.zeros(2))
    with pytest.raises(rm.StateError, match="tau must have shape"):
        fd(q, qd, np.zeros(5))
    with pytest.raises(rm.StateError, match="out must have shape"):
        fd(q, qd, out=np.empty(2))
    with pytest.raises(TypeError, match="out must have dtype float64"):
        fd(q, qd, out=np.empty(3, dtype=np.float32))
    read_only = np.empty(3)
    read_only.flags.writeable = False
    with pytest.raises(rm.StateError, match="out is read-only"):
        fd(q, qd, out=read_only)
    bad = q.copy()
    bad[1] = np.nan
    with pytest.raises(rm.StateError, match=r"q\[1\] is not finite"):
        fd(bad, qd)
    with pytest.raises(rm.StateError, match="overflow"):
        fd(q, np.full(3, 1e200))
    with pytest.raises(TypeError):
        rm.compiled_forward_dynamics(None)


def test_models_with_elements_use_the_full_route():
    model = rm.chains.serial_chain(2)
    model.add_joint_spring_damper("link1", stiffness=3.0, damping=0.2)
    fd = rm.compiled_forward_dynamics(model)
    q, qd, tau = _state(2)
    assert not fd.short_path
    np.testing.assert_array_equal(fd(q, qd, tau), rm.forward_dynamics(model, q, qd, tau))
    assert not np.array_equal(fd(q, qd, tau), rm.forward_dynamics(rm.chains.serial_chain(2), q, qd, tau))


def test_specialized_kernel_equals_forward_dynamics_and_raises_its_errors():
    model = rm.Model()
    a = model.add_body(parent="ground", joint="planar", child_point=(0, 0.3), mass=2.0, inertia=0.1)
    model.add_body(parent=a, joint="revolute", parent_point=(0.1, 0), child_point=(0, 0.2), mass=1.0, inertia=0.05)
    model.add_body(parent=a, joint="prismatic", parent_point=(0, -0.1), axis=(1, 0), mass=0.5, inertia=0.01)
    fd = rm.compiled_forward_dynamics(model, specialize=True)
    assert fd.short_path
    q, qd, tau = _state(model.nq, seed=5)
    np.testing.assert_array_equal(fd(q, qd, tau), rm.forward_dynamics(model, q, qd, tau))
    np.testing.assert_array_equal(fd(q, qd), rm.forward_dynamics(model, q, qd))
    np.testing.assert_array_equal(fd(list(q), qd, None), rm.forward_dynamics(model, q, qd))
    with pytest.raises(rm.StateError, match="qd must have shape"):
        fd(q, np.zeros(2))
    bad = qd.copy()
    bad[2] = np.inf
    with pytest.raises(rm.StateError, match=r"qd\[2\] is not finite"):
        fd(q, bad)


def _four_dof_tree(second_joint):
    """A branching tree of 4 one-dof joints: all revolute, or with a prismatic second joint."""
    model = rm.Model()
    model.add_body(child_point=(0, 0.5), mass=1.0, inertia=0.1, name="a")
    axis = dict(axis=(0.6, 0.8)) if second_joint == "prismatic" else {}
    model.add_body(parent="a", joint=second_joint, parent_point=(0, -0.5), child_point=(0, 0.4), mass=2.0,
                   inertia=0.2, name="b", **axis)
    model.add_body(parent="a", parent_point=(0.1, -0.5), child_point=(0, 0.3), mass=0.5, inertia=0.05, name="c")
    model.add_body(parent="b", parent_point=(0, -0.4), child_point=(0.1, 0.2), mass=1.5, inertia=0.1, name="d")
    return model


@pytest.mark.parametrize("make", [lambda: rm.chains.serial_chain(4), lambda: _four_dof_tree("revolute"),
                                  lambda: _four_dof_tree("prismatic")], ids=["serial", "revolute", "general"])
def test_forward_dynamics_short_path_equals_the_generic_kernel_and_keeps_every_error(make):
    """rm.forward_dynamics itself takes the fixed-signature kernel of the model's route (a serial chain of revolute
    joints, a revolute tree, another tree) once a call has set it up: equal to the generic kernel bit for bit; every
    argument it refuses still gets the full route's error."""
    from recursive_mbd._kernels.planar import entry, tree  # noqa: PLC0415
    from recursive_mbd.model.workspace import workspace  # noqa: PLC0415

    model = make()
    q, qd, tau = _state(4, seed=7)
    first = rm.forward_dynamics(model, q, qd, tau)
    ws = workspace(model)
    assert ws.short_fd  # set up by the first call
    assert ws.short_fd[0] is entry.forward_dynamics_tree_kernel(entry.route(model.body_int))
    generic = np.empty(4)
    assert tree.forward_dynamics(model.body_int, model.body_real, model.gravity, q, qd, tau, ws.no_wrench,
                                 ws.no_driven, ws.ws, generic, ws.no_drive) == 0
    np.testing.assert_array_equal(first, generic)
    np.testing.assert_array_equal(rm.forward_dynamics(model, q, qd, tau), generic)
    np.testing.assert_array_equal(rm.forward_dynamics(model, list(q), tuple(qd), list(tau)), generic)
    np.testing.assert_array_equal(rm.forward_dynamics(model, q.astype(np.float32), qd, tau),
                                  rm.forward_dynamics(model, q.astype(np.float32).astype(float), qd, tau))
    out = np.empty(4)
    assert rm.forward_dynamics(model, q, qd, tau, out=out) is out
    np.testing.assert_array_equal(out, generic)
    with pytest.raises(rm.StateError, match=r"q must have shape \(4,\)"):
        rm.forward_dynamics(model, np.zeros(5), qd)
    with pytest.raises(rm.StateError, match=r"tau must have shape \(4,\)"):
        rm.forward_dynamics(model, q, qd, np.zeros(3))
    bad = qd.copy()
    bad[3] = np.nan
    with pytest.raises(rm.StateError, match=r"qd\[3\] is not finite"):
        rm.forward_dynamics(model, q, bad)
    with pytest.raises(rm.StateError, match="overflow"):
        rm.forward_dynamics(model, q, np.full(4, 1e200))
    with pytest.raises(TypeError, match="complex"):
        rm.forward_dynamics(model, q + 0j, qd)
    with pytest.raises(rm.StateError, match="out must have shape"):
        rm.forward_dynamics(model, q, qd, out=np.empty(5))
    with pytest.raises(TypeError, match="out must be a numpy float64 array"):
        rm.forward_dynamics(model, q, qd, out=np.empty(4).view(np.ma.MaskedArray))
    out.flags.writeable = False  # a checked buffer made read-only afterwards is refused, not written
    with pytest.raises(rm.StateError, match="out is read-only"):
        rm.forward_dynamics(model, q, qd, out=out)
    with pytest.raises(rm.StateError, match="unknown method"):
        rm.forward_dynamics(model, q, qd, method="nope")


def test_forward_dynamics_short_path_is_not_taken_with_elements_or_loops():
    springs = rm.chains.serial_chain(3)
    springs.add_joint_spring_damper("link2", stiffness=2.0, damping=0.1)
    q, qd, tau = _state(3, seed=8)
    with_springs = rm.forward_dynamics(springs, q, qd, tau)
    assert springs._workspace.short_fd is False
    np.testing.assert_array_equal(rm.forward_dynamics(springs, q, qd, tau), with_springs)
    plain = rm.chains.serial_chain(3)
    assert not np.array_equal(rm.forward_dynamics(plain, q, qd, tau), with_springs)


def test_kernels_without_reference_counting_leak_nothing():
    """The kernels compiled without numba's reference counting (tree.NJIT_OPTIONS, _nrt=False) and the time loops
    that call them allocate and free the same number of arrays: after warm-up calls, a batch of short-path calls,
    forward_dynamics calls and an rk4 run leave numba's allocation counters balanced (NRT statistics are switched
    on at start-up only, hence the subprocess)."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = """
import gc
import numpy as np
from numba.core.runtime import rtsys
import recursive_mbd as rm
model = rm.chains.serial_chain(5)
fd = rm.compiled_forward_dynamics(model)
q, qd = np.full(5, 0.2), np.zeros(5)
def work():
    for _ in range(200):
        fd(q, qd)
        rm.forward_dynamics(model, q, qd)
    res = rm.simulate(model, q, qd, 0.01, method="rk4", dt=1e-3)
    assert res.q.shape == (11, 5)
work()
gc.collect()
before = rtsys.get_allocation_stats()
work()
gc.collect()
after = rtsys.get_allocation_stats()
print(after.alloc - before.alloc, after.free - before.free, after.mi_alloc - before.mi_alloc,
      after.mi_free - before.mi_free)
"""
    env = dict(os.environ, NUMBA_NRT_STATS="1")
    out = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    alloc, free, mi_alloc, mi_free = (int(x) for x in out.stdout.split())
    assert alloc > 0 and mi_alloc > 0  # the run allocated (its output buffers), so the counters are live
    assert (alloc, mi_alloc) == (free, mi_free)


def _spatial_tree(more=None):
    """A Model3D of every joint type that moves (free, spherical, universal, cylindrical, prismatic, revolute,
    planar) and a fixed one (``more(model)`` adds to it), with a start state (q with unit quaternions), v and tau."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "free", mass=2.0, inertia=(0.2, 0.25, 0.3, 0.01, 0.0, 0.02), name="base")
    model.add_body("base", "spherical", parent_point=(0.1, 0.0, -0.2), child_point=(0.0, 0.0, 0.3), mass=1.0,
                   inertia=0.05, com=(0.01, 0.0, 0.0), name="ball")
    model.add_body("ball", "universal", parent_point=(0.0, 0.0, -0.3), child_point=(0.0, 0.1, 0.2), mass=0.8,
                   inertia=0.03, name="cross")
    model.add_body("base", "cylindrical", parent_point=(0.2, 0.1, 0.0), axis=(0.0, 0.6, 0.8), mass=0.5,
                   inertia=0.02, name="sleeve")
    model.add_body("sleeve", "prismatic", axis=(1.0, 0.0, 0.0), mass=0.4, inertia=0.01, name="slide")
    model.add_body("cross", "revolute", parent_point=(0.0, 0.0, -0.2), axis=(0.0, 1.0, 0.0), mass=0.3,
                   inertia=0.01, com=(0.0, 0.0, -0.1), name="hinge")
    model.add_body("hinge", "planar", parent_point=(0.0, 0.0, -0.2), mass=0.2, inertia=0.01, name="puck")
    model.add_body("puck", "fixed", parent_point=(0.1, 0.0, 0.0), mass=0.1, inertia=0.01, name="tip")
    if more is not None:
        more(model)
    rng = np.random.default_rng(7)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    return model, q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def test_spatial_models_equal_forward_dynamics_and_raise_its_errors():
    """A Model3D's fd(q, v, tau, out) is rm.forward_dynamics bit for bit, on the short path of a plain tree; a tree
    with elements or loops takes the full route; bad input raises what rm.forward_dynamics raises."""
    model, q, v, tau = _spatial_tree()
    fd = rm.compiled_forward_dynamics(model)
    assert fd.short_path and (fd.nq, fd.nv) == (model.nq, model.nv)
    np.testing.assert_array_equal(fd(q, v, tau), rm.forward_dynamics(model, q, v, tau))
    np.testing.assert_array_equal(fd(q, v), rm.forward_dynamics(model, q, v))
    out = np.empty(model.nv)
    assert fd(q, v, tau, out=out) is out
    np.testing.assert_array_equal(out, rm.forward_dynamics(model, q, v, tau, method="recursive"))
    assert np.abs(out - rm.forward_dynamics(model, q, v, tau, method="mass_matrix")).max() < 1e-10 * np.abs(out).max()
    np.testing.assert_array_equal(fd(list(q), v.astype(np.float32), np.repeat(tau, 2)[::2]),
                                  rm.forward_dynamics(model, q, v.astype(np.float32), tau))
    with pytest.raises(rm.StateError, match="q must have shape"):
        fd(q[:-1], v)
    with pytest.raises(rm.StateError, match="v must have shape"):
        fd(q, v[:-1])
    with pytest.raises(rm.StateError, match="tau must have shape"):
        fd(q, v, tau[:-1])
    with pytest.raises(rm.StateError, match=r"quaternion of body 'base'"):
        fd(np.where(np.arange(model.nq) < 7, 0.0, q), v)
    with pytest.raises(ValueError, match="specialize=True compiles a planar model's own kernel"):
        rm.compiled_forward_dynamics(model, specialize=True)
    for more in (lambda m: m.add_spring_damper("ground", (0.0, 0.0, 1.0), "slide", (0.0, 0.0, 0.0), 20.0, 0.5),
                 lambda m: m.add_loop("distance", "tip", (0.0, 0.0, 0.0), "ground", (0.0, 0.0, -1.0), length=1.0)):
        other, q, v, tau = _spatial_tree(more)
        fd = rm.compiled_forward_dynamics(other)
        assert not fd.short_path
        np.testing.assert_array_equal(fd(q, v, tau), rm.forward_dynamics(other, q, v, tau))
