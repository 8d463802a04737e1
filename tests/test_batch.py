"""rm.batch: many states in one parallel call, equal bit for bit to the single-state functions."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from _helpers import assert_same_results, compiled_specialisations, read_only
from conftest import TREE_SPECS, build
from spatial_reference import random_spatial_tree

import recursive_mbd as rm


def _states(model, k, seed):
    rng = np.random.default_rng(seed)
    nq = model.nq
    return rng.uniform(-np.pi, np.pi, (k, nq)), rng.normal(size=(k, nq)), 5.0 * rng.normal(size=(k, nq))


def _elements_tree(spec):
    """A random tree with a spring-damper, a joint spring-damper, a constant force and a torque on it."""
    model = rm.Model(gravity=(0.3, -9.81))
    for i, body in enumerate(spec):
        model.add_body(name=f"b{i}", **body)
    last = len(spec) - 1
    model.add_spring_damper(last, (0.1, 0.2), "ground", (1.0, -0.5), stiffness=30.0, damping=0.7, rest_length=0.4)
    movable = next(i for i, b in enumerate(spec) if b["joint"] in ("revolute", "prismatic"))
    model.add_joint_spring_damper(movable, stiffness=4.0, damping=0.3, rest=0.2)
    model.add_force(0, (0.2, 0.1), (1.5, -2.0), frame="body")
    model.add_torque(last, 0.8)
    return model.compile()


@pytest.mark.parametrize("index", range(0, 200, 10))
def test_batched_functions_equal_single_state_bit_for_bit_on_random_trees(index):
    spec = TREE_SPECS[index]
    for model in (build(spec), _elements_tree(spec)) if any(
            b["joint"] in ("revolute", "prismatic") for b in spec) else (build(spec),):
        if model.nq == 0:
            continue
        Q, QD, TAU = _states(model, 9, index)
        QDD = rm.batch.forward_dynamics(model, Q, QD, TAU, t=0.3)
        TAU_back = rm.batch.inverse_dynamics(model, Q, QD, QDD, t=0.3)
        E = rm.batch.energy(model, Q, QD)
        for m in range(Q.shape[0]):
            assert np.array_equal(QDD[m], rm.forward_dynamics(model, Q[m], QD[m], TAU[m], t=0.3))
            assert np.array_equal(TAU_back[m], rm.inverse_dynamics(model, Q[m], QD[m], QDD[m], t=0.3))
            assert np.array_equal(E[m], rm.energy(model, Q[m], QD[m]))
        # and the identity itself: ID undoes FD
        assert np.allclose(TAU_back, TAU, rtol=1e-9, atol=1e-9 * np.abs(TAU).max())


def test_default_tau_is_zero_and_the_output_is_fresh():
    model = rm.chains.serial_chain(5)
    Q, QD, _ = _states(model, 4, 1)
    QDD = rm.batch.forward_dynamics(model, Q, QD)
    assert np.array_equal(QDD, rm.batch.forward_dynamics(model, Q, QD, np.zeros_like(Q)))
    assert QDD.shape == (4, 5) and not np.shares_memory(QDD, Q)
    assert rm.batch.forward_dynamics(model, Q[:0], QD[:0]).shape == (0, 5)


def test_python_threads_share_the_work_and_get_the_same_numbers():
    model = rm.chains.serial_chain(20)
    Q, QD, TAU = _states(model, 400, 2)
    whole = rm.batch.forward_dynamics(model, Q, QD, TAU)
    chunks = [slice(i, i + 50) for i in range(0, 400, 50)]
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda s: rm.batch.forward_dynamics(model, Q[s], QD[s], TAU[s]), chunks))
    assert np.array_equal(np.concatenate(parts), whole)


def test_bad_input_names_the_member_and_argument():
    model = rm.chains.serial_chain(3)
    Q, QD, TAU = _states(model, 5, 3)
    with pytest.raises(rm.StateError, match=r"Q must have shape \(k, 3\)"):
        rm.batch.forward_dynamics(model, Q[:, :2], QD)
    with pytest.raises(rm.StateError, match="QD has 4 rows"):
        rm.batch.forward_dynamics(model, Q, QD[:4])
    bad = QD.copy()
    bad[3, 1] = np.nan
    with pytest.raises(rm.StateError, match=r"member 3: QD\[3, 1\] is not finite"):
        rm.batch.forward_dynamics(model, Q, bad)
    bad = TAU.copy()
    bad[2, 0] = np.inf
    with pytest.raises(rm.StateError, match=r"member 2: TAU\[2, 0\]"):
        rm.batch.forward_dynamics(model, Q, QD, bad)
    with pytest.raises(rm.StateError, match=r"member 4: QDD\[4, 2\]"):
        rm.batch.inverse_dynamics(model, Q, QD, np.where(np.arange(15).reshape(5, 3) == 14, np.nan, 0.0))
    with pytest.raises(TypeError, match="Q must be an array"):
        rm.batch.energy(model, [["a", "b", "c"]], QD[:1])


@pytest.mark.parametrize("call, match", [
    (lambda m, Q, QD, TAU: rm.batch.forward_dynamics(m, Q + 1j, QD), "Q must be an array of real numbers, got complex"),
    (lambda m, Q, QD, TAU: rm.batch.forward_dynamics(m, Q, QD.astype(str)), "QD must be an array of real numbers"),
    (lambda m, Q, QD, TAU: rm.batch.forward_dynamics(m, Q, QD, TAU + 1j), "TAU must be an array of real numbers"),
    (lambda m, Q, QD, TAU: rm.batch.inverse_dynamics(m, Q, QD, TAU.astype(str)), "QDD must be an array of real"),
    (lambda m, Q, QD, TAU: rm.batch.energy(m, Q.astype(str), QD), "Q must be an array of real numbers"),
    (lambda m, Q, QD, TAU: rm.batch.forward_dynamics(m, Q, QD, t="0.5"), "t must be a real number"),
    (lambda m, Q, QD, TAU: rm.batch.energy(m, Q, QD, t=True), "t must be a real number"),
])
def test_complex_and_string_values_are_refused_as_by_the_single_calls(call, match):
    """Complex rows lost their imaginary part and strings were parsed (np.ascontiguousarray(X, dtype=float)): the
    rows now go through the single calls' check (``_checks.real_array``), a TypeError naming the argument."""
    model = rm.chains.serial_chain(3)
    with pytest.raises(TypeError, match=match):
        call(model, *_states(model, 2, 4))


def test_read_only_rows_give_the_same_bits_and_compile_nothing_new():
    model = rm.chains.serial_chain(3)
    Q, QD, TAU = _states(model, 3, 5)
    reference = (rm.batch.forward_dynamics(model, Q, QD, TAU), rm.batch.inverse_dynamics(model, Q, QD, TAU),
                 rm.batch.energy(model, Q, QD))
    before = compiled_specialisations()
    frozen = [read_only(X) for X in (Q, QD, TAU)]
    assert_same_results((rm.batch.forward_dynamics(model, *frozen), rm.batch.inverse_dynamics(model, *frozen),
                         rm.batch.energy(model, *frozen[:2])), reference, "read-only rows")
    assert compiled_specialisations() == before  # a read-only array is another numba type: copied, not compiled for


def test_closed_loops_are_refused_clearly():
    model = rm.models.four_bar()
    model = model[0] if isinstance(model, tuple) else model
    Q = np.zeros((2, model.nq))
    with pytest.raises(rm.ModelError, match="closed loops"):
        rm.batch.forward_dynamics(model, Q, Q)


def _random_spatial_model(seed, nbodies):
    """A random spatial tree (every joint type) with a spring-damper, a joint spring-damper, a force and a torque."""
    rng = np.random.default_rng(seed)
    model = rm.Model3D(gravity=(0.3, -1.0, -9.81))
    for body in random_spatial_tree(rng, nbodies):
        model.add_body(**body)
    model.add_spring_damper(nbodies - 1, (0.1, 0.2, 0.0), "ground", (1.0, -0.5, 0.3), stiffness=30.0, damping=0.7,
                            rest_length=0.4)
    springy = next(i for i in range(nbodies) if model.joint_types[i] not in ("free", "fixed"))
    model.add_joint_spring_damper(springy, stiffness=4.0, damping=0.3)
    model.add_force(0, (0.2, 0.1, -0.1), (1.5, -2.0, 0.5), frame="body")
    model.add_torque(nbodies - 1, (0.8, 0.0, -0.3))
    return model, rng


@pytest.mark.parametrize("seed", range(4))
def test_batched_functions_equal_single_state_calls_on_random_spatial_trees(seed):
    """Rows (k, nq) and (k, nv) of a Model3D: forward dynamics, inverse dynamics and energy equal the single-state
    functions of each row to 1e-13 relative, not bit for bit: the spatial kernels allow fused multiply-adds, which
    the compiler may place otherwise where a kernel is inlined into the parallel loop (inverse dynamics rows were
    seen one or two ulps off). A row with a quaternion off unit norm is refused naming its member."""
    model, rng = _random_spatial_model(seed, 3 + seed)
    k = 6
    Q = np.array([rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv)) for _ in range(k)])
    QD, TAU = rng.normal(size=(k, model.nv)), 3.0 * rng.normal(size=(k, model.nv))
    QDD = rm.batch.forward_dynamics(model, Q, QD, TAU, t=0.5)
    back = rm.batch.inverse_dynamics(model, Q, QD, QDD, t=0.5)
    E = rm.batch.energy(model, Q, QD)
    assert QDD.shape == (k, model.nv) and E.shape == (k, 2)
    for m in range(k):
        for got, want in ((QDD[m], rm.forward_dynamics(model, Q[m], QD[m], TAU[m], t=0.5)),
                          (back[m], rm.inverse_dynamics(model, Q[m], QD[m], QDD[m], t=0.5)),
                          (E[m], rm.energy(model, Q[m], QD[m]))):
            assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()
    assert np.abs(back - TAU).max() < 1e-9 * (1.0 + np.abs(TAU).max())
    if model.nq != model.nv:
        bad = Q.copy()
        bad[4] += 0.01  # every quaternion of row 4 off unit norm
        with pytest.raises(rm.errors.StateError, match=r"member 4: Q\[\d+:\d+\], the quaternion of body"):
            rm.batch.forward_dynamics(model, bad, QD, TAU)
    with pytest.raises(rm.errors.StateError, match=rf"QD must have shape \(k, {model.nv}\).*nv = {model.nv}"):
        rm.batch.energy(model, Q, np.zeros((k, model.nv + 1)))
