"""result.multipliers of rm.simulate on models with closed loops, for the methods that do not carry them in their
own iteration (every method but generalized_alpha): the constrained dynamics' lambda at each sample's state and
inputs. Checked against the augmented formulation's KKT solve at the same states (an independent route: absolute
coordinates, the tree joints as constraints too; its last m multipliers are the loops'), against an accurate
run's multipliers at t_eval, through a failure (the samples so far), a file round trip, and on a spatial
four-bar against the planar one (R^T lambda_spatial[:3] = lambda_planar); formulation="augmented" runs give
the loops' rows of their own KKT multipliers, checked against the recursive loop layer and kinematic_analysis."""

import warnings

import numpy as np
import pytest
from test_spatial_loops import _four_bar_planar, _rotated_four_bar

import recursive_mbd as rm
from recursive_mbd.dynamics import augmented
from recursive_mbd.errors import SimulationError
from recursive_mbd.integrate.result import sampled_multipliers
from recursive_mbd.model import spatial_fields


def _augmented_loop_multipliers(model, q, qd, tau):
    """The loops' multipliers of the augmented formulation's KKT solve at (q, qd) (the last m of its lambda)."""
    z, zd = augmented.absolute_from_joint(model, q, qd)
    _, lam = augmented.forward_dynamics(model, z, zd, tau, solver="tree")
    return lam[lam.size - model.nconstraints:]


def _crank_torque(t):
    return np.array([2.0 * np.sin(3.0 * t), 0.0, 0.0])


@pytest.mark.parametrize(("method", "options"), [
    ("bdf", {"rtol": 1e-10, "atol": 1e-12}),
    ("dopri5", {"rtol": 1e-10, "atol": 1e-12}),
    ("rk4", {"dt": 2e-3}),
    ("scipy:Radau", {"rtol": 1e-9, "atol": 1e-11, "stabilization": "baumgarte", "alpha": 0.0, "beta": 0.0}),
])
def test_multipliers_at_the_samples_are_the_constrained_dynamics(method, options):
    """A four-bar driven by a crank torque tau(t) for 1 s: result.multipliers (nt, 2) equal the augmented
    formulation's loop multipliers at every sample's (q, qd) with tau(t) to 1e-12 relative (measured 5e-16 -
    1.5e-15); where the method has dense output, those at t_eval equal a dopri5 run's at rtol 1e-12 to 3e-9
    relative (measured 2.5e-10 - 3.5e-10: the accuracy asked for)."""
    model, q0 = rm.models.four_bar()
    samples = np.linspace(0.0, 1.0, 21)
    dense = method != "rk4"
    result = rm.simulate(model, q0, np.zeros(3), 1.0, method=method, tau=_crank_torque,
                         t_eval=samples if dense else None, **options)
    assert result.multipliers.shape == (result.t.size, model.nconstraints)
    expected = np.array([_augmented_loop_multipliers(model, q, qd, _crank_torque(t))
                         for t, q, qd in zip(result.t, result.q, result.qd, strict=True)])
    scale = np.abs(expected).max()
    assert scale > 1.0  # the loop carries load
    np.testing.assert_allclose(result.multipliers, expected, rtol=0, atol=1e-12 * scale)
    if dense:
        reference = rm.simulate(model, q0, np.zeros(3), 1.0, tau=_crank_torque, rtol=1e-12, atol=1e-14,
                                t_eval=samples)
        np.testing.assert_allclose(result.multipliers, reference.multipliers, rtol=0, atol=3e-9 * scale)


def test_a_tree_has_none():
    chain = rm.chains.serial_chain(3)
    assert rm.simulate(chain, np.full(3, 0.3), np.zeros(3), 0.1, method="bdf").multipliers is None


def _augmented_run(model, q0, t_end, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the augmented route's own notes on its stabilisation
        return rm.simulate(model, q0, np.zeros(3), t_end, formulation="augmented", **options)


def test_the_augmented_formulation_gives_the_loop_multipliers():
    """formulation="augmented", a four-bar under a crank torque tau(t): result.multipliers (nt, 2) are the loops'
    rows of its KKT multipliers at every sample, the recursive loop layer's lambda (``loop_dynamics``) at the same
    (q, qd) and tau(t) to 1e-12 relative (measured 1.7e-15), and a recursive run's at t_eval to the accuracy asked
    for, 1e-10 (measured 4.4e-12)."""
    model, q0 = rm.models.four_bar()
    samples = np.linspace(0.0, 0.5, 11)
    options = {"tau": _crank_torque, "t_eval": samples, "rtol": 1e-10, "atol": 1e-12}
    result = _augmented_run(model, q0, 0.5, **options)
    assert result.multipliers.shape == (samples.size, model.nconstraints)
    same_state = np.array([rm.loop_dynamics(model, q, qd, _crank_torque(t)).multipliers
                           for t, q, qd in zip(result.t, result.q, result.qd, strict=True)])
    scale = np.abs(same_state).max()
    assert scale > 1.0  # the loop carries load
    np.testing.assert_allclose(result.multipliers, same_state, rtol=0, atol=1e-12 * scale)
    recursive = rm.simulate(model, q0, np.zeros(3), 0.5, **options)
    np.testing.assert_allclose(result.multipliers, recursive.multipliers, rtol=0, atol=1e-10 * scale)


def test_the_augmented_formulation_drives_with_the_kinematic_analysis_multipliers():
    """The four-bar's crank driven at 1 + 0.5 t rad, formulation="augmented": the loops' multipliers (the driver's
    row is not among them) equal rm.kinematic_analysis's (an independent route) to 3e-10 relative (measured
    2.1e-11)."""
    model, q0 = rm.models.four_bar()
    samples = np.linspace(0.0, 1.0, 11)
    drivers = {"crank": lambda t: 1.0 + 0.5 * t}
    kinematic = rm.kinematic_analysis(model, drivers, samples, q0)
    result = _augmented_run(model, q0, 1.0, drivers=drivers, t_eval=samples, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(result.multipliers, kinematic.multipliers, rtol=0,
                               atol=3e-10 * np.abs(kinematic.multipliers).max())


def test_a_failed_run_keeps_the_multipliers_of_its_samples_and_a_file_keeps_them():
    """A tau function that raises at t >= 0.3 s stops bdf with SimulationError: its result holds the samples
    before, each with its multipliers; save / load returns them unchanged."""
    model, q0 = rm.models.four_bar()

    def failing(t):
        if t >= 0.3:
            raise RuntimeError("sensor lost")
        return _crank_torque(t)

    with pytest.raises(SimulationError, match="sensor lost") as caught:
        rm.simulate(model, q0, np.zeros(3), 1.0, method="bdf", tau=failing, rtol=1e-8)
    partial = caught.value.result
    assert partial.t[-1] < 0.3 and partial.multipliers.shape == (partial.t.size, 2)
    np.testing.assert_allclose(partial.multipliers[-1], _augmented_loop_multipliers(
        model, partial.q[-1], partial.qd[-1], _crank_torque(partial.t[-1])), rtol=1e-12)


def test_multipliers_survive_a_file_round_trip(tmp_path):
    model, q0 = rm.models.four_bar()
    result = rm.simulate(model, q0, np.zeros(3), 0.2, method="bdf", rtol=1e-8)
    result.save(tmp_path / "run.npz")
    loaded = rm.SimulationResult.load(tmp_path / "run.npz", model)
    np.testing.assert_array_equal(loaded.multipliers, result.multipliers)


def test_a_sample_where_the_dynamics_cannot_be_evaluated_gives_none_and_says_where():
    result = rm.simulate(rm.chains.serial_chain(2), np.zeros(2), np.zeros(2), 0.1, method="rk4", dt=0.01)

    def lam_at(i):
        if i == 3:
            raise ValueError("no state here")
        return np.zeros(2)

    with pytest.warns(RuntimeWarning, match=r"sample 3 \(t = 0\.03 s\): ValueError: no state here"):
        assert sampled_multipliers(result, lam_at) is None


def test_spatial_four_bar_gives_the_planar_multipliers():
    """The planar four-bar built spatially with its plane turned by R (revolute loop, 5 equations, 3 redundant):
    bdf and dopri5 give result.multipliers (nt, 5) with R^T lambda[:3] = (lambda_planar, 0) and lambda[3:] = 0,
    lambda_planar from the planar model's dopri5 run at rtol 1e-12 at the same t_eval (to 3e-9 relative, measured
    3.1e-10 and 3.6e-10; the out-of-plane entries to 1e-12, measured 2e-15), and equal to
    spatial_loops.loop_dynamics at each sample (measured: identical). (bdf at rtol 1e-10 used to fail here: its
    Newton corrections on the redundant rows stall at round-off with a rate >= 1, which failed the iteration
    before the round-off test could accept it, down to h = 8e-16 s.)"""
    planar = _four_bar_planar()
    turn = spatial_fields.axis_rotation(np.array((1.0, 2.0, -0.5)) / np.sqrt(5.25), 0.7)
    spatial = _rotated_four_bar(turn)
    q0 = rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])
    _, _, jac, _ = rm.loops.constraints(planar, q0)
    qd0 = np.linalg.svd(jac)[2][-1] * 2.5  # the mechanism's one motion
    samples = np.linspace(0.0, 0.5, 11)
    reference = rm.simulate(planar, q0, qd0, 0.5, rtol=1e-12, atol=1e-14, t_eval=samples).multipliers
    scale = np.abs(reference).max()
    for method in ("bdf", "dopri5"):
        with pytest.warns(rm.RedundantConstraintWarning, match="rank 2 of 5"):
            result = rm.simulate(spatial, q0, qd0, 0.5, method=method, rtol=1e-10, atol=1e-12, t_eval=samples)
        assert result.multipliers.shape == (11, 5)
        in_plane = result.multipliers[:, :3] @ turn  # rows of R^T lambda
        np.testing.assert_allclose(in_plane[:, :2], reference, rtol=0, atol=3e-9 * scale)
        assert np.abs(in_plane[:, 2]).max() < 1e-12 * scale
        assert np.abs(result.multipliers[:, 3:]).max() < 1e-12 * scale
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rm.RedundantConstraintWarning)
            own = np.array([rm.spatial_loops.loop_dynamics(spatial, q, v).multipliers
                            for q, v in zip(result.q, result.qd, strict=True)])
        np.testing.assert_allclose(result.multipliers, own, rtol=0, atol=1e-12 * scale)


def test_a_driven_mechanism_gives_the_kinematic_analysis_multipliers():
    """The four-bar's crank driven at 1 + 0.5 t rad: the run's multipliers at t_eval equal those of
    rm.kinematic_analysis (the driven motion solved position by position, an independent route) to 1e-10 relative
    (measured 5e-11 N, 3e-12 of the largest)."""
    model, q0 = rm.models.four_bar()
    samples = np.linspace(0.0, 1.0, 11)
    kinematic = rm.kinematic_analysis(model, {"crank": lambda t: 1.0 + 0.5 * t}, samples, q0)
    result = rm.simulate(model, q0, np.zeros(3), 1.0, drivers={"crank": lambda t: 1.0 + 0.5 * t}, t_eval=samples,
                         rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(result.multipliers, kinematic.multipliers, rtol=0,
                               atol=1e-10 * np.abs(kinematic.multipliers).max())
