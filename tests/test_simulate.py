"""simulate: energy conservation, convergence order, dense output, failures that keep their results."""

import inspect

import numba
import numpy as np
import pytest
from numba.core import types
from scipy.integrate import solve_ivp

import recursive_mbd as rm
from recursive_mbd import SimulationError
from recursive_mbd._kernels.planar.system import (
    ChainSystem,
    PlainChainSystem,
    RecursiveSystem,
    TreeSystem,
)
from recursive_mbd._kernels.timeloops import formulation, integrators
from recursive_mbd.integrate import runs
from recursive_mbd.integrate.tableaus import TABLEAUS
from recursive_mbd.model import chains


@pytest.mark.parametrize("name", sorted(TABLEAUS))
def test_tableau_invariants(name):
    tab = TABLEAUS[name]
    assert tab.B.sum() == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(tab.A.sum(axis=1), tab.C, atol=1e-15)
    assert np.all(np.triu(tab.A) == 0.0)  # explicit
    if tab.adaptive:
        assert tab.E.sum() == pytest.approx(0.0, abs=1e-15)
        if tab.E3 is not None:
            assert tab.E3.sum() == pytest.approx(0.0, abs=1e-15)
        np.testing.assert_array_equal(tab.A[-1], tab.B)  # first same as last


def test_chain_energy_is_conserved_over_ten_seconds():
    model = chains.serial_chain(10, length=1.0, mass=1.0)
    q0 = np.zeros(10)
    q0[0] = np.pi / 2
    res = rm.simulate(model, q0, np.zeros(10), 10.0, method="dopri5", rtol=1e-10, atol=1e-12)
    assert res.t[0] == 0.0 and res.t[-1] == 10.0
    assert res.q.shape == res.qd.shape == (res.t.size, 10)
    kinetic, potential = res.energy()
    total = kinetic + potential
    assert np.max(np.abs(total - total[0])) <= 1e-8 * 1.0 * 9.81 * 1.0
    assert np.max(kinetic) > 1.0  # it really moved
    # the result holds its own arrays: no view keeps the integrated states (q, qd, work) alive beside q and qd
    for array in (res.q, res.qd, res.dissipated_work, res.applied_work):
        assert array.base is None or array.base.size <= 2 * res.t.size


def test_rk4_is_fourth_order_on_a_double_pendulum():
    model = chains.serial_chain(2)
    q0, qd0 = np.array([1.0, 0.5]), np.zeros(2)
    reference = rm.simulate(model, q0, qd0, 1.0, rtol=1e-13, atol=1e-15).q[-1]
    errors = [np.max(np.abs(rm.simulate(model, q0, qd0, 1.0, method="rk4", dt=dt).q[-1] - reference))
              for dt in (0.01, 0.005, 0.0025)]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 14.0) & (ratios < 18.5)), ratios


def test_dopri5_matches_scipy_solve_ivp_on_the_same_rhs():
    model = chains.serial_chain(6)
    q0, qd0 = np.linspace(0.5, -0.5, 6), np.zeros(6)

    def rhs(_, y):
        return np.concatenate((y[6:], rm.forward_dynamics(model, y[:6], y[6:])))

    sol = solve_ivp(rhs, (0.0, 1.0), np.concatenate((q0, qd0)), method="DOP853", rtol=1e-13, atol=1e-14)
    res = rm.simulate(model, q0, qd0, 1.0, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(res.q[-1], sol.y[:6, -1], atol=1e-9)


def test_dense_output_at_given_times():
    model = chains.serial_chain(3)
    q0, qd0 = np.array([1.0, -0.5, 0.2]), np.zeros(3)
    times = np.linspace(0.0, 2.0, 17)
    dense = rm.simulate(model, q0, qd0, 2.0, rtol=1e-11, atol=1e-13, t_eval=times)
    np.testing.assert_array_equal(dense.t, times)
    inner = rm.simulate(model, q0, qd0, 2.0, t_eval=[0.5, 1.0])
    np.testing.assert_array_equal(inner.t, [0.0, 0.5, 1.0, 2.0])  # t0 and t_end always
    for t, q in zip(times[1:], dense.q[1:], strict=True):
        direct = rm.simulate(model, q0, qd0, t, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(q, direct.q[-1], atol=2e-8)


def test_output_every_nth_step_keeps_the_end_points():
    model = chains.serial_chain(2)
    every = rm.simulate(model, [1.0, 0.0], [0.0, 0.0], 1.3, method="rk4", dt=0.01, every=10)
    assert every.t[0] == 0.0 and every.t[-1] == 1.3
    np.testing.assert_allclose(every.t[1:4], [0.1, 0.2, 0.3])
    full = rm.simulate(model, [1.0, 0.0], [0.0, 0.0], 1.3, method="rk4", dt=0.01)
    assert full.t.size == 131
    np.testing.assert_allclose(every.q[-1], full.q[-1], rtol=0, atol=0)
    adaptive = rm.simulate(model, [1.0, 0.0], [0.0, 0.0], 1.3, every=5)
    assert adaptive.t[-1] == 1.3 and adaptive.t.size == 1 + int(np.ceil(adaptive.nsteps / 5))


def test_joint_torque_drives_the_motion():
    model = chains.serial_chain(1, length=1.0, mass=1.0)
    # a constant torque m g l/2 holds the rod at the horizontal
    res = rm.simulate(model, [np.pi / 2], [0.0], 2.0, tau=[1.0 * 9.81 * 0.5])
    np.testing.assert_allclose(res.q[-1], [np.pi / 2], atol=1e-10)


def test_blow_up_raises_with_time_and_keeps_the_result():
    model = chains.serial_chain(20)
    q0 = np.full(20, 0.3)
    with pytest.raises(SimulationError, match=r"rk4 failed at t = .*(non-finite|diverges)") as info:
        rm.simulate(model, q0, np.zeros(20), 100.0, method="rk4", dt=0.5)
    err = info.value
    assert 0.0 < err.t < 100.0
    assert err.result.t[-1] <= err.t
    assert np.all(np.isfinite(err.result.q))
    assert err.result.t[0] == 0.0


@pytest.mark.parametrize(("h_omega", "steps", "diverged_at"), [(10.0, 100, 1), (2.9, 20, 14)])
def test_rk4_past_its_stability_limit_stops_naming_the_step(h_omega, steps, diverged_at):
    """A rod on a stiff joint spring, omega = sqrt(k / I) = 3000 rad/s (k = 3e6 N m/rad, I = 1/3 kg m^2, no
    gravity): rk4 at h omega = 10 grew the energy x 1.6e5 in one step and ran on to "finished". It stops where
    the energy has grown 100-fold (h omega = 10: the first step, seen by the run's monitor; 2.9, just past rk4's
    limit 2.83, energy x 1.42 a step: step 14 of a 20-step run, found after it), naming dt, omega_max (the power
    iteration's estimate) and 2 / omega_max; at h omega = 2.5 (stable) it finishes."""
    model = chains.serial_chain(1, gravity=0.0)
    model.add_joint_spring_damper(0, 3e6)
    omega = 3000.0
    dt = h_omega / omega
    expected = (rf"rk4 failed at t = .*the run diverges.*rk4 with dt = {dt:.6g} s is unstable here.*"
                r"2 / omega_max = 0.000667 s \(omega_max ~ 3e\+03")
    with pytest.raises(SimulationError, match=expected) as info:
        rm.simulate(model, [1e-3], [0.0], steps * dt, method="rk4", dt=dt)
    result = info.value.result
    assert result.status == "failed"
    assert result.t.size == diverged_at + 1 and result.t[-1] == pytest.approx(diverged_at * dt, rel=1e-12)
    kinetic, potential = result.energy()
    growth = (kinetic + potential) / 1.5  # E(t0) = k q0^2 / 2
    assert growth[0] == pytest.approx(1.0, rel=1e-12)
    assert growth[-1] > 100.0 and np.all(growth[:-1] < 100.0)
    stable = rm.simulate(model, [1e-3], [0.0], 20 * 2.5 / omega, method="rk4", dt=2.5 / omega)
    assert stable.status == "finished"


def test_step_size_underflow_raises_with_time():
    # a tolerance below round-off can never be met: the step shrinks until it underflows at t0 = 1
    model = chains.serial_chain(3)
    with pytest.raises(SimulationError, match=r"dopri5 failed at t = 1 s: step size underflow") as info:
        rm.simulate(model, np.full(3, 0.5), np.zeros(3), 2.0, t0=1.0, rtol=1e-20, atol=1e-300)
    assert info.value.t == 1.0
    np.testing.assert_array_equal(info.value.result.t, [1.0])


def test_too_many_steps_keeps_the_result():
    model = chains.serial_chain(5)
    with pytest.raises(SimulationError, match="max_steps") as info:
        rm.simulate(model, np.full(5, 0.5), np.zeros(5), 10.0, max_steps=50, rtol=1e-10)
    assert 0.0 < info.value.result.t[-1] < 10.0
    assert info.value.result.nsteps <= 50


def test_results_carry_success_and_message_as_scipy_does(tmp_path):
    model = chains.serial_chain(5)
    done = rm.simulate(model, np.full(5, 0.5), np.zeros(5), 0.25)
    assert done.success is True and done.message == "the integration reached t_end = 0.25 s"
    with pytest.raises(SimulationError, match="max_steps") as info:
        rm.simulate(model, np.full(5, 0.5), np.zeros(5), 10.0, max_steps=50, rtol=1e-10)
    kept = info.value.result  # the samples a failure keeps say that they end early, and why
    assert kept.status == "failed" and kept.success is False and kept.message == str(info.value)
    kept.save(tmp_path / "kept.npz")
    back = rm.SimulationResult.load(tmp_path / "kept.npz")
    assert back.success is False and back.message == str(info.value)
    done.save(tmp_path / "done.npz")
    assert rm.SimulationResult.load(tmp_path / "done.npz").message == done.message


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="euler"), "unknown method"),
    (dict(method="RK45"), r"^unknown method 'RK45': scipy's solver RK45 is method='scipy:RK45'$"),
    (dict(method="Radau"), r"^unknown method 'Radau': scipy's solver Radau is method='scipy:Radau'$"),
    (dict(method="BDF"), r"^unknown method 'BDF': scipy's solver BDF is method='scipy:BDF', or this package's own "
                         r"'bdf'$"),
    (dict(method="dopri"), r"^unknown method 'dopri' \(did you mean 'dopri5'\?\); known methods: 'dopri5', 'dop853', "
                           r"'rk4', 'implicit_midpoint', 'generalized_alpha', 'bdf', 'scipy:RK45', 'scipy:RK23', "
                           r"'scipy:DOP853', 'scipy:Radau', 'scipy:BDF', 'scipy:LSODA'$"),
    (dict(method="scipy:rk45"), r"^unknown method 'scipy:rk45' \(did you mean 'scipy:RK45'\?\)"),
    (dict(method="rk4"), "give dt"),
    (dict(dt=0.1), "dt is for fixed-step"),
    (dict(rtol=-1.0), "rtol must be"),
    (dict(t_eval=[0.5, 0.2]), "t_eval must be"),
    (dict(every=0), "every must be"),
])
def test_bad_options_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.simulate(chains.serial_chain(2), [0.1, 0.0], [0.0, 0.0], 1.0, **kwargs)


def test_drivers_not_a_dict_are_a_type_error():
    """drivers given as a list (of functions, or of body names) raised an AttributeError from inside simulate."""
    for drivers in ([lambda t: t], ["link1"]):
        with pytest.raises(TypeError, match=r"drivers must be a dict of body \(index or name\) -> f\(t\) .*got a list"):
            rm.simulate(chains.serial_chain(2), [0.1, 0.0], [0.0, 0.0], 1.0, drivers=drivers)


def test_output_buffers_start_small_and_grow_to_the_same_result(monkeypatch):
    # a long chain's state is large (1024 rows of a 1e5-link state: 1.6 GB): the time loops start their output
    # buffers at OUTPUT_START_FLOATS (or the t_eval samples) and double them when full; the output is the same
    assert integrators.output_rows(200_002) == 10 and integrators.output_rows(4) == 1024
    assert integrators.output_rows(200_002, np.linspace(0.0, 1.0, 41)) == 43
    model = chains.serial_chain(3)
    q0 = np.array([0.4, -0.2, 0.1])
    runs = [("dopri5", {"every": 1}), ("rk4", {"dt": 1e-3}), ("bdf", {"every": 1}),
            ("dopri5", {"t_eval": np.linspace(0.0, 1.0, 7)})]
    default = [rm.simulate(model, q0, np.zeros(3), 1.0, method=m, rtol=1e-8, atol=1e-10, **kw) for m, kw in runs]
    monkeypatch.setattr(integrators, "OUTPUT_START_FLOATS", 1)  # two rows: the buffers double again and again
    for (method, options), reference in zip(runs, default, strict=True):
        small = rm.simulate(model, q0, np.zeros(3), 1.0, method=method, rtol=1e-8, atol=1e-10, **options)
        assert small.t.size == reference.t.size > 5
        np.testing.assert_array_equal(small.t, reference.t)
        np.testing.assert_array_equal(small.q, reference.q)
        np.testing.assert_array_equal(small.qd, reference.qd)


def test_a_tree_runs_on_the_tree_system_with_the_recursive_systems_right_hand_side_to_the_bit():
    """A model without loops is integrated as a TreeSystem (its time loops compile no loop layer); its right-hand
    side is the RecursiveSystem's with the loop branch pruned, so both give the same dy to the bit, elements, tau
    and drivers included."""
    model = chains.serial_chain(4)
    model.add_spring_damper("link4", (0, -0.125), "ground", (0.5, -1.0), stiffness=50.0, damping=0.5)
    model.compile()
    inputs = runs._Inputs(model, np.full(4, 0.3), {"link2": np.sin})
    callback, key = inputs.callback()
    tree = runs.RecursiveTimeLoop(model, inputs).system
    full = runs.RecursiveTimeLoop(model, inputs, tree_system=False).system
    assert type(tree) is TreeSystem and type(full) is RecursiveSystem
    rng = np.random.default_rng(7)
    for _ in range(3):
        y = rng.standard_normal(2 * tree.free.size + 2)
        dy_tree, dy_full = np.zeros_like(y), np.zeros_like(y)
        assert integrators.system_rhs(callback, key, tree, 0.4, y, dy_tree) == 0
        assert integrators.system_rhs(callback, key, full, 0.4, y, dy_full) == 0
        np.testing.assert_array_equal(dy_tree, dy_full)
        assert np.all(dy_tree[tree.free.size:] != 0.0)
    four_bar, _ = rm.models.four_bar()
    four_bar.compile()
    assert type(runs.RecursiveTimeLoop(four_bar, runs._Inputs(four_bar, None, None)).system) is RecursiveSystem


def test_a_serial_chain_runs_on_the_chain_system_with_the_tree_systems_right_hand_side_to_the_bit():
    """A serial chain of revolute joints without drivers is integrated as a ChainSystem, whose time loops compile
    the serial route of the forward dynamics alone, and without force elements as a PlainChainSystem, whose time
    loops leave the element forces out too; the right-hand side of either is the TreeSystem's, to the bit. A chain
    with a driver stays a TreeSystem (the test above)."""
    rng = np.random.default_rng(11)
    for with_element, kind in ((True, ChainSystem), (False, PlainChainSystem)):
        model = chains.serial_chain(4)
        if with_element:
            model.add_spring_damper("link4", (0, -0.125), "ground", (0.5, -1.0), stiffness=50.0, damping=0.5)
        model.compile()
        inputs = runs._Inputs(model, np.array([0.3, -0.2, 0.1, 0.4]), None)
        callback, key = inputs.callback()
        chain = runs.RecursiveTimeLoop(model, inputs).system
        assert type(chain) is kind
        tree = TreeSystem(*chain)
        for _ in range(3):
            y = rng.standard_normal(2 * chain.free.size + 2)
            dy_chain, dy_tree = np.zeros_like(y), np.zeros_like(y)
            assert integrators.system_rhs(callback, key, chain, 0.4, y, dy_chain) == 0
            assert integrators.system_rhs(callback, key, tree, 0.4, y, dy_tree) == 0
            np.testing.assert_array_equal(dy_chain, dy_tree)
            assert np.all(dy_chain[chain.free.size:-2] != 0.0) and dy_chain[-1] != 0.0  # qdd, power of tau
            assert (dy_chain[-2] != 0.0) == with_element  # the damper's dissipation


def test_a_run_without_event_functions_runs_a_time_loop_compiled_without_them():
    """Without event functions the time loop is handed None for them, so numba compiles it without the event
    location; a bare serial chain's time loop is the PlainChainSystem's (one forward-dynamics route)."""
    model = chains.serial_chain(3)
    res = rm.simulate(model, np.full(3, 0.3), np.zeros(3), 0.05)
    assert res.t[-1] == 0.05 and res.t_events == []
    names = list(inspect.signature(integrators.integrate_adaptive.py_func).parameters)
    system, events = names.index("system"), names.index("events")
    compiled = [(sig[system].instance_class, sig[events]) for sig in integrators.integrate_adaptive.signatures]
    assert (PlainChainSystem, types.none) in compiled


def test_a_tree_without_contacts_runs_a_time_loop_compiled_without_projection_and_event_location():
    """A tree without contacts never projects (``formulation.never_projects``, decided while typing), so its time
    loops leave the projection out, and a run without event functions leaves the event scan out: neither is
    compiled for it. A model with loops, or a tree with contacts, may project."""
    model = chains.serial_chain(3)
    res = rm.simulate(model, np.full(3, 0.3), np.zeros(3), 0.05)
    fixed = rm.simulate(model, np.full(3, 0.3), np.zeros(3), 0.05, method="rk4", dt=0.01)
    assert res.t[-1] == fixed.t[-1] == 0.05
    system = runs.RecursiveTimeLoop(model, runs._Inputs(model, None, None)).system
    assert type(system) is PlainChainSystem and formulation.never_projects(numba.typeof(system))
    # The run's own typing, whatever this process compiled before (a tree with contacts rightly compiles the
    # projection; the time loops may come from the disk cache, which compiles none of their callees): the step's
    # projection typed afresh, uncached, for this system. Had it kept project_state, typing it would add a
    # signature for a system that never projects; none may exist, from this probe or any run before.
    # (a lambda: project_step itself is a stub that only its overload compiles)
    probe = numba.njit(lambda inputs, key, system, t, y: integrators.project_step(inputs, key, system, t, y))  # noqa: PLW0108
    y = np.zeros(6)  # q, qd: never read (the step does not project)
    assert probe(integrators.no_inputs, 0, system, 0.0, y) == (0, False)
    assert not [sig for sig in integrators.project_state.signatures if formulation.never_projects(sig[2])]
    assert not [sig for sig in integrators.scan_events.signatures if sig[1] == types.none]
    four_bar, _ = rm.models.four_bar()
    four_bar.compile()
    loops = runs.RecursiveTimeLoop(four_bar, runs._Inputs(four_bar, None, None)).system
    assert not formulation.never_projects(numba.typeof(loops))
    with_contacts = TreeSystem(*system[:-1], contacts=(np.zeros((1, 1), np.int64),))
    assert not formulation.never_projects(numba.typeof(with_contacts))
