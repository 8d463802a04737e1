"""generalized_alpha in absolute coordinates on spatial models with closed loops (``rm.simulate(model3d,
method="generalized_alpha", formulation="augmented")``, ``integrate.augmented3d_implicit``): the Newton matrix with
the loops' rows and their geometric stiffness against finite differences of the step's residual, the trajectories
and loop multipliers of an RSSR linkage and of the closed governor against dop853 and the recursive route's
generalized_alpha (second order in dt), energy over a long run, the loops closed at round-off, and the failures
that name the loop."""

import numpy as np
import pytest
from spatial_reference import random_spatial_tree
from test_augmented3d_implicit import Step, _jacobian
from test_spatial_implicit_loops import _rssr
from test_spatial_loops import _four_bar_planar, _four_bar_spatial

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import implicit3d as kernels
from recursive_mbd._kernels.spatial.layout import JTYPE, REVOLUTE, VIDX
from recursive_mbd.dynamics import spatial_loops
from recursive_mbd.errors import SimulationError


class LoopStep(Step):
    """``Step`` with the loops: the unknowns x = (vdot, the joints' lam, the loops' mu), the residual with the loop
    rows (``kernels.loop_residual``) and the bordered solve (``kernels.loop_solve``)."""

    def __init__(self, model, q, v, h=0.01, rho_inf=0.9, seed=0):
        super().__init__(model, q, v, h, rho_inf, seed)
        rng = np.random.default_rng(seed + 1)
        self.x0 = np.concatenate((self.x0, 2.0 * rng.normal(size=model.nconstraints)))
        self.loops = self.arrays.loops

    def residual(self, x):
        m, a = self.model, self.arrays
        super().residual(x)  # the joints' (a.rc holds the loops' rows after them)
        lam = self.split(x)[1]
        assert kernels.loop_residual(m.body_real, *self.loops[:2], self.starts[-1], self.coef[5], a.zp, a.zdp, lam,
                                     a.rb, a.rc, *self.loops[2:10]) == 0
        return np.concatenate((a.rb.ravel(), a.rc))

    def solve(self, x, rhs):
        """The bordered solve (the loops') in place of the tree's."""
        m, a = self.model, self.arrays
        lam, xb, xj = self.factored(x, rhs)
        lp = self.loops
        assert kernels.loop_solve(m.body_int, m.body_real, lp[0], lp[1], self.starts, self.coef[5], a.zp, a.tangent,
                                  lam, a.jp, a.api, a.diag, a.lu, a.piv, a.wm, xb, xj, lp[5], lp[7], *lp[10:]) == 0
        return np.concatenate((xb.ravel(), xj))


def _looped_tree(seed=81, nbodies=9):
    """A random tree of every joint type with three loops: a spherical one and a revolute one between bodies on
    different branches, a distance one from a body to the ground (each body with more freedom along its path than
    its loops' rows take)."""
    rng = np.random.default_rng(seed)
    model = rm.Model3D(gravity=(0.3, -0.5, -9.81))
    for body in random_spatial_tree(rng, nbodies):
        model.add_body(**body)
    model.add_loop("spherical", 3, rng.uniform(-1, 1, 3), 7, rng.uniform(-1, 1, 3), name="ball")
    model.add_loop("revolute", 8, rng.uniform(-1, 1, 3), 6, rng.uniform(-1, 1, 3), axis=rng.normal(size=3),
                   axis_b=rng.normal(size=3), name="hinge")
    model.add_loop("distance", 4, rng.uniform(-1, 1, 3), "ground", rng.uniform(-1, 1, 3), length=0.7, name="rod")
    model.compile()
    return model, rng


def test_the_newton_matrix_with_loops_is_the_derivative_of_the_residual():
    """Entry by entry, on a random tree of every joint type with spherical, revolute and distance loops between
    bodies on different branches and to the ground, rotating at up to 20 rad/s, with random multipliers: the dense
    Newton matrix (the inverse of the bordered O(N) solve) equals the central differences of the step's residual
    (the loop rows included) to 1e-8 of its largest entry. Without the loops' geometric stiffness H (or with the
    tangent map left out of their rows) it fails."""
    model, rng = _looped_tree()
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    step = LoopStep(model, q, 8.0 * rng.normal(size=model.nv))
    assert np.abs(step.zb[:, 3:]).max() > 15.0
    jacobian = _jacobian(step.residual, step.x0, 0.1, 3)
    mine = step.matrix(step.x0)
    assert np.abs(mine - jacobian).max() < 1e-8 * np.abs(jacobian).max()


def _state_error(model, reference, result):
    """max of the tangent-space difference of the final q (revolute angles modulo 2 pi: this route recovers them
    in (-pi, pi]) and of the final v against the reference's."""
    gap = rm.difference(model, reference.q[-1], result.q[-1])
    hinges = model.body_int[model.body_int[:, JTYPE] == REVOLUTE, VIDX]
    gap[hinges] = np.angle(np.exp(1j * gap[hinges]))
    return max(np.abs(gap).max(), np.abs(result.qd[-1] - reference.qd[-1]).max())


def test_rssr_converges_at_second_order_to_dop853_and_to_the_recursive_route():
    """The RSSR linkage (a ball-joint loop between a coupler and a rocker on different branches), 1 s from a random
    velocity: against dop853 (rtol 1e-12) the final state's error and the loop multipliers' (against
    spatial_loops.loop_dynamics at dop853's final state) fall 4 +- 0.4 times when dt halves; the recursive route's
    generalized_alpha (stabilised index 2, another scheme of the same order) is as close to dop853, and after the
    start's transient (t >= 0.2 s) the two routes' multipliers agree at every sample to O(dt^2) (their largest gap
    falls 4 +- 0.4 times when dt halves; measured 0.23, 0.056, 0.014 N). In the first steps the index-3 scheme's
    multipliers carry the O(dt) transient of its start a_0 = vdot_0 (Arnold & Bruls 2007; measured 34 dt N at
    most, against loop_dynamics at the samples, decaying over about 30 steps). At t0 the multipliers are
    loop_dynamics' own; at every sample the loop closes to round-off (|phi| < 1e-12 m, ``constraint_drift``), and
    Newton takes at most 4 iterations a step."""
    model, q0 = _rssr()
    v0 = 2.0 * np.random.default_rng(3).normal(size=model.nv)
    reference = rm.simulate(model, q0, v0, 1.0, method="dop853", rtol=1e-12, atol=1e-12)
    final = spatial_loops.loop_dynamics(model, reference.q[-1], reference.qd[-1]).multipliers
    assert np.ptp(reference.q[:, 0]) > 1.0  # the crank turned
    errors, lam_errors, gaps = [], [], []
    for dt in (4e-3, 2e-3, 1e-3):
        result = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", dt=dt, rho_inf=0.8,
                             formulation="augmented")
        assert result.t[-1] == 1.0 and result.multipliers.shape == (result.t.size, 3)
        errors.append(_state_error(model, reference, result))
        lam_errors.append(np.abs(result.multipliers[-1] - final).max())
        start = spatial_loops.loop_dynamics(model, result.q[0], result.qd[0]).multipliers
        np.testing.assert_allclose(result.multipliers[0], start, rtol=1e-10)
        assert result.constraint_drift.max() < 1e-12 and result.newton_iterations <= 4 * result.nsteps
        recursive = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", dt=dt, rho_inf=0.8)
        assert _state_error(model, reference, recursive) < 3.0 * errors[-1]
        gap = np.abs(result.multipliers - recursive.multipliers).max(axis=1)
        assert gap.max() < 60.0 * dt
        gaps.append(gap[result.t >= 0.2].max())
    for series in (errors, lam_errors, gaps):
        ratios = np.array(series[:-1]) / np.array(series[1:])
        assert np.all(np.abs(ratios - 4.0) < 0.4), (series, ratios)
    assert errors[-1] < 1e-3


def _governor():
    """KINE2D's governor with its two links as distance loops between the arms and the sleeve (siblings on the
    spindle: the loops' stiffness couples bodies that are not parent and child), spinning freely from the arms at
    0.6 rad with a push on one arm (an asymmetric motion)."""
    gov = rm.models.centrifugal_governor(ball_mass=1.0, sleeve_mass=2.0, arm=0.2, link=0.2, pivot_height=0.5,
                                         closed=True)
    q0 = gov.q(0.6)
    v0 = np.array([6.0, 1.0, 0.0, 0.0])  # projected onto the loops by simulate
    return gov.model, q0, v0


def test_governor_with_distance_loops_converges_at_second_order_and_keeps_its_energy():
    """The closed governor (two distance loops), 0.5 s: against dop853 (rtol 1e-12) the final state and the loop
    multipliers converge at second order (ratios 4 +- 0.4 when dt halves); the links stay closed to round-off at
    every sample. Over 20 s (10^4 steps) at rho_inf = 0.9 the energy error of the conservative model stays bounded:
    below 3e-3 of the kinetic energy (measured 8.9e-4 J of 0.51 J, the potential 11.1 J), and the last 10 s's
    largest below 1.1 times the first 10 s's (measured 1.004): no drift. rho_inf = 1 is outside this index-3
    scheme's stable range (the undamped trapezoidal rule on index-3 constraints: Cardona & Geradin 1989): there the
    energy of this governor grows by 450 J within 2 s, of its tree (the links as its configuration map) by 470 J
    over 20 s."""
    model, q0, v0 = _governor()
    reference = rm.simulate(model, q0, v0, 0.5, method="dop853", rtol=1e-12, atol=1e-12)
    final = spatial_loops.loop_dynamics(model, reference.q[-1], reference.qd[-1]).multipliers
    errors, lam_errors = [], []
    for dt in (4e-3, 2e-3, 1e-3):
        result = rm.simulate(model, q0, v0, 0.5, method="generalized_alpha", dt=dt, formulation="augmented")
        errors.append(_state_error(model, reference, result))
        lam_errors.append(np.abs(result.multipliers[-1] - final).max())
        assert result.constraint_drift.max() < 1e-12
    for series in (errors, lam_errors):
        ratios = np.array(series[:-1]) / np.array(series[1:])
        assert np.all(np.abs(ratios - 4.0) < 0.4), (series, ratios)
    long = rm.simulate(model, q0, v0, 20.0, method="generalized_alpha", dt=2e-3, rho_inf=0.9,
                       formulation="augmented", every=10)
    energy = np.array([sum(rm.energy(model, q, v)) for q, v in zip(long.q, long.qd, strict=True)])
    kinetic = rm.energy(model, long.q[0], long.qd[0])[0]
    drift = np.abs(energy - energy[0])
    half = energy.size // 2
    assert drift.max() < 3e-3 * kinetic, drift.max() / kinetic
    assert drift[half:].max() < 1.1 * drift[:half].max()
    assert long.constraint_drift.max() < 1e-12


def test_a_loop_whose_rows_lose_rank_stops_the_run_naming_it():
    """The planar four-bar built spatially with a revolute loop: three of its five rows hold identically for a
    planar motion (redundant: the recursive route takes their minimum-norm multipliers), so the step's bordered
    system is singular at every split of the first step: SimulationError naming the loop and the time (the last
split's, dt / 16), the samples so far (t0) kept."""
    model = _four_bar_spatial()
    planar = _four_bar_planar()
    q0 = rm.assemble(planar, np.array([0.9, -0.7, 1.6]), fixed=[0])
    with pytest.warns(rm.RedundantConstraintWarning):
        with pytest.raises(SimulationError, match=r"singular at t = 0.000625 s .* at loop 'loop0'") as caught:
            rm.simulate(model, q0, np.zeros(3), 1.0, method="generalized_alpha", dt=0.01, formulation="augmented")
    assert caught.value.result.t.tolist() == [0.0]


def test_the_angles_of_a_run_without_loads_are_continuous_as_the_recursive_routes():
    """The RSSR's rocker turns past pi within 0.3 s: the absolute state gives its angle wrapped to (-pi, pi], and a
    run without loads or events (nothing tracks the angles a step) must still report it continuous, sample to sample,
    as the recursive route does (every = 1 and every = 5)."""
    model, q0 = _rssr()
    v0 = np.zeros(model.nv)
    recursive = rm.simulate(model, q0, v0, 0.3, method="generalized_alpha", dt=2e-3)
    assert recursive.q[0, -1] < np.pi < recursive.q[:, -1].max()  # the case: the rocker's angle passes pi
    for every in (1, 5):
        absolute = rm.simulate(model, q0, v0, 0.3, method="generalized_alpha", formulation="augmented", dt=2e-3,
                               every=every)
        np.testing.assert_allclose(absolute.q, recursive.q[::every], rtol=0, atol=1e-4)
