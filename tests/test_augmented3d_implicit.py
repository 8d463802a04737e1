"""generalized_alpha in absolute coordinates on spatial trees (``rm.simulate(model3d, method="generalized_alpha",
formulation="augmented")``, ``integrate.augmented3d_implicit``): the Newton matrix against finite differences of
the step's residual on a random tree of every joint type, Newton's quadratic convergence, the trajectory against
the recursive route's dopri5 run, second order in dt, and the failures."""

import inspect
import math
import re

import numba
import numpy as np
import pytest
from _helpers import swinging_chain
from spatial_reference import random_spatial_tree
from test_spatial_simulate import ARM, SLIDER, _arm_with_slider

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import implicit3d as kernels
from recursive_mbd._kernels.layout import STATUS_NO_CONVERGENCE
from recursive_mbd._kernels.spatial.layout import PARENT
from recursive_mbd.dynamics import augmented3d
from recursive_mbd.errors import SimulationError
from recursive_mbd.integrate import augmented3d_implicit
from recursive_mbd.integrate.newton import generalized_alpha_coefficients


class Step:
    """One step's pieces from a state (z, zb, acc, vdot0) of a model: its residual as a function of the unknowns
    x = (vdot (nbodies, 6), lam), and its Newton matrix's solve. ``driven``: bodies whose joints (revolute,
    prismatic) have a driver's row more, with random targets."""

    def __init__(self, model, q, v, h=0.01, rho_inf=0.9, seed=0, driven=()):
        rng = np.random.default_rng(seed)
        self.model = model
        n = model.nbodies
        z, zd = augmented3d.absolute_from_joint(model, q, v)
        self.z, self.zb = z, augmented3d_implicit.to_body_axes(z, zd)
        extra = np.zeros(n, dtype=np.int64)
        extra[list(driven)] = 1
        self.starts = augmented3d.row_starts(model) + np.concatenate(([0], np.cumsum(extra)))
        self.target = rng.normal(size=n) if len(driven) else np.zeros(0)
        self.arrays = augmented3d_implicit._Arrays(model, self.starts)
        am, af, gm, bt = generalized_alpha_coefficients(rho_inf)
        self.coef = np.array([h, am, af, gm, bt, h * h * bt * (1 - af) / (1 - am), h * gm * (1 - af) / (1 - am)])
        self.acc, self.vdot0 = rng.normal(size=(n, 6)), rng.normal(size=(n, 6))
        self.x0 = np.concatenate((3.0 * rng.normal(size=6 * n), rng.normal(size=int(self.starts[-1]))))

    def split(self, x):
        n = self.model.nbodies
        return np.ascontiguousarray(x[:6 * n].reshape(n, 6)), np.ascontiguousarray(x[6 * n:])

    def joint_forces(self):
        """tau at the updated state (arrays.zp, zdp): none here."""
        return np.zeros(0)

    def residual(self, x):
        m, a = self.model, self.arrays
        vdot, lam = self.split(x)
        kernels.update_state(self.z, self.zb, self.acc, self.vdot0, self.coef, vdot, a.zp, a.zbp, a.zdp, a.tangent)
        assert kernels.residual(m.body_int, m.body_real, m.gravity, self.starts, self.joint_forces(), self.target,
                                a.zp, a.zdp, vdot, lam, self.coef[5], a.rb, a.rc, a.jc, a.jp, a.res, a.gam,
                                a.power) == 0
        return np.concatenate((a.rb.ravel(), a.rc))

    def factored(self, x, rhs):
        """The residual and the tree's factor made at x: (lam at x, rhs split into its body and row parts)."""
        m, a = self.model, self.arrays
        self.residual(x)
        vdot, lam = self.split(x)
        assert kernels.factor(m.body_int, m.body_real, self.starts, a.zp, a.zbp, vdot, lam, a.rb, a.tangent,
                              self.coef[5], self.coef[6], a.jc, a.jp, a.diag, a.api, a.lu, a.piv, a.wm, a.loads[0]) == 0
        return lam, *self.split(np.array(rhs, dtype=float))

    def solve(self, x, rhs):
        """The Newton matrix at x solved for rhs (the residual and the factor made at x)."""
        m, a = self.model, self.arrays
        _, xb, xj = self.factored(x, rhs)
        kernels.solve(m.body_int, self.starts, a.jp, a.api, a.diag, a.lu, a.piv, a.wm, xb, xj)
        return np.concatenate((xb.ravel(), xj))


    def corrections(self, count):
        """The largest |dx| of ``count`` full Newton corrections from x0."""
        x = self.x0.copy()
        sizes = []
        for _ in range(count):
            dx = self.solve(x, -self.residual(x))
            x += dx
            sizes.append(np.abs(dx).max())
        return sizes

    def matrix(self, x):
        """The Newton matrix at x, dense: the inverse of its solve's columns."""
        return np.linalg.inv(np.array([self.solve(x, e) for e in np.eye(x.size)]).T)


def _jacobian(residual, x0, step, levels):
    """The Jacobian of ``residual`` at x0 by central differences of steps step, step / 2, ... (``levels`` of them)
    extrapolated by Richardson's rule (truncation error O(step^(2 levels)), so a large step: the position rows are
    C / c_stiff, whose round-off 1e-16 / c_stiff a small step would amplify)."""
    jacobian = np.zeros((x0.size, x0.size))
    for k in range(x0.size):
        columns = []
        for level in range(levels):
            e = np.zeros(x0.size)
            e[k] = step / 2**level
            columns.append((residual(x0 + e) - residual(x0 - e)) / (2.0 * e[k]))
        for level in range(1, levels):
            pairs = zip(columns, columns[1:], strict=False)
            columns = [(4**level * fine - coarse) / (4**level - 1) for coarse, fine in pairs]
        jacobian[:, k] = columns[0]
    return jacobian


def _tree_of_every_joint_type(seed=80):
    rng = np.random.default_rng(seed)
    model = rm.Model3D(gravity=(0.3, -0.5, -9.81))
    for body in random_spatial_tree(rng, 9):
        model.add_body(**body)
    model.compile()
    assert len({model.body(i)["joint"] for i in range(model.nbodies)}) == 8  # every joint type
    return model, rng


def test_the_newton_matrix_is_the_derivative_of_the_residual_at_fast_rotation():
    """Entry by entry, on a random tree of every joint type whirling at up to 75 rad/s (h omega up to 0.75 at
    h = 0.01 s, where a lagged velocity-product or tangent-map term would show at O(h omega)): the dense Newton
    matrix (the inverse of the O(N) solve) equals the central differences of the step's residual to 1e-8 of its
    largest entry (measured: 5e-10, the body rows 1e-11; the differences' round-off in the position rows). Without
    the gyroscopic term c_damp ([omega_b] J_c - [J_c omega_b]) this test and the two beside it fail."""
    model, rng = _tree_of_every_joint_type()
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    step = Step(model, q, 30.0 * rng.normal(size=model.nv))
    assert np.abs(step.zb[:, 3:]).max() > 70.0
    jacobian = _jacobian(step.residual, step.x0, 0.1, 3)
    mine = step.matrix(step.x0)
    assert np.abs(mine - jacobian).max() < 1e-8 * np.abs(jacobian).max()


def test_newton_converges_quadratically_at_fast_rotation():
    """From a first guess far from the root on the tree of every joint type whirling at up to 75 rad/s, h = 0.01 s:
    above round-off each correction is below 1e-3 times the square of the one before (the matrix exact at every
    iterate; a lagged term would leave a constant contraction factor). Measured: 1.2e4, 1.7e3, 1.2e2, 0.84, 1.2e-5,
    then round-off (2.5e-11, the accelerations being of order 1e3)."""
    model, rng = _tree_of_every_joint_type()
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    errors = Step(model, q, 30.0 * rng.normal(size=model.nv)).corrections(7)
    assert errors[0] > 1e3 and min(errors) < 1e-9
    for before, after in zip(errors, errors[1:], strict=False):
        if after > 1e-8:  # above round-off
            assert after < 1e-3 * before**2


@pytest.mark.parametrize("drive", [False, True])
def test_the_newton_matrix_is_the_derivative_of_the_residual_on_a_random_tree_of_every_joint_type(drive):
    """The O(N) elimination solves the residual's Jacobian (central differences of steps 1e-2 and 5e-3 with
    Richardson's extrapolation, whose error falls as the step grows: round-off, not truncation) to 2e-8 of the
    solution: every term claimed exact is (the geometric stiffness of each joint type, the gyroscopic terms, the
    tangent maps of the body-axis rotation update). ``drive``: the revolute and prismatic joints driven (a driver's
    row more each, random targets, so the iterate is off the drivers' rows and the joints'): the drivers' rows,
    their exact gradients (a revolute angle's off its joint's other rows included) and their multipliers' geometric
    stiffness are exact too."""
    model, rng = _tree_of_every_joint_type()
    driven = [i for i in range(model.nbodies) if drive and model.body(i)["joint"] in ("revolute", "prismatic")]
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    step = Step(model, q, rng.normal(size=model.nv), driven=driven)
    assert step.starts[-1] == augmented3d.row_starts(model)[-1] + len(driven)
    x0 = step.x0
    if drive:
        assert {model.body(i)["joint"] for i in driven} == {"revolute", "prismatic"}
        assert np.abs(step.residual(x0)[6 * model.nbodies + step.starts[np.array(driven) + 1] - 1]).min() > 1.0
    rhs = rng.normal(size=x0.size)
    expected = np.linalg.solve(_jacobian(step.residual, x0, 1e-2, 2), rhs)
    mine = step.solve(x0, rhs)
    assert np.abs(mine - expected).max() < 2e-8 * np.abs(expected).max()


def test_the_compiled_joint_states_are_the_python_ones_on_a_random_tree_of_every_joint_type():
    """The run's joint coordinates, velocities and constraint drift (compiled, a pass over the bodies a sample)
    against ``augmented3d.joint_from_absolute`` and ``augmented3d.assemble``, to round-off, on two samples: one on
    the constraints, one off them (the poses perturbed)."""
    _check_joint_states(*_tree_of_every_joint_type())


def test_the_compiled_joint_states_on_numbas_threads_are_the_python_ones_on_a_large_spherical_tree():
    """The same from PARALLEL_BODIES bodies, where the samples' bodies are shared among numba's threads, in the
    arrays of the fused iteration (the joints' rows in the memory of its record)."""
    _check_joint_states(*_spherical_tree(86, kernels.PARALLEL_BODIES + 300), fused=True)


def _check_joint_states(model, rng, fused=False):
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    z, zd = augmented3d.absolute_from_joint(model, q, rng.normal(size=model.nv))
    off = z.copy()
    off[:, :3] += 1e-3 * rng.normal(size=(model.nbodies, 3))
    off[:, 3:] += 1e-3 * rng.normal(size=(model.nbodies, 4))
    off[:, 3:] /= np.linalg.norm(off[:, 3:], axis=1, keepdims=True)
    starts = augmented3d.row_starts(model)
    arrays = augmented3d_implicit._Arrays(model, starts, fused=fused)
    mine_q, mine_v, mine_drift = augmented3d_implicit.joint_states(model, np.array([z, off]), np.array([zd, zd]),
                                                                   arrays)
    keep = np.arange(6)[None, :] < np.diff(starts)[:, None]
    for sample, poses in enumerate((z, off)):
        expected_q, expected_v = augmented3d.joint_from_absolute(model, poses, zd)
        np.testing.assert_allclose(mine_q[sample], expected_q, rtol=0, atol=1e-13)
        np.testing.assert_allclose(mine_v[sample], expected_v, rtol=0, atol=1e-12 * np.abs(expected_v).max())
        residuals = augmented3d.assemble(model, poses, zd)[4]
        assert abs(mine_drift[sample] - np.abs(residuals[keep]).max()) <= 1e-15
    assert mine_drift[0] < 1e-14 and mine_drift[1] > 1e-4
    with pytest.raises(ValueError, match="z and zd must have shapes"):
        augmented3d_implicit.joint_states(model, z, zd, arrays)


def test_newton_converges_quadratically_on_a_swinging_chain_step():
    model, q0, v0 = swinging_chain()
    errors = Step(model, q0, 3.0 * v0, h=0.02).corrections(5)
    # from 50 to round-off in four corrections, each below a tenth of the square of the one before (measured: 53,
    # 0.72, 2.5e-5, 6.3e-13)
    assert errors[0] > 10.0 and errors[3] < 1e-11
    for before, after in zip(errors[:3], errors[1:4], strict=True):
        assert after < 0.1 * before**2


def test_a_swinging_chain_of_mixed_joints_follows_the_recursive_dopri5_run_at_second_order():
    """With constant joint forces tau: the trajectory, tau's work and the constraint drift."""
    model, q0, v0 = swinging_chain()
    t_end = 0.2
    tau = np.array([0.3, -0.2, 0.1, 0.4, -0.3, 0.2])
    reference = rm.simulate(model, q0, v0, t_end, rtol=1e-10, atol=1e-12, tau=tau)
    errors = []
    for dt in (2e-3, 1e-3):
        result = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", formulation="augmented", dt=dt,
                             tau=tau)
        assert result.method == "augmented generalized_alpha" and result.t[-1] == t_end
        assert result.z.shape == (result.t.size, 3, 7) and result.zd.shape == (result.t.size, 3, 6)
        assert result.constraint_drift.max() < 1e-12  # the position rows hold at every step end
        assert result.newton_iterations <= 4 * result.nsteps
        errors.append(max(np.abs(rm.difference(model, reference.q[-1], result.q[-1])).max(),
                          np.abs(reference.qd[-1] - result.qd[-1]).max()))
    assert abs(result.applied_work[-1] - reference.applied_work[-1]) < 1e-5 * abs(reference.applied_work[-1])
    assert errors[1] < 4e-5
    driving = result.driving_forces()  # no drivers: zeros
    assert driving.shape == (result.t.size, model.nv) and not driving.any()
    expected = rm.forward_dynamics(model, q0, v0, tau)  # qdd(): the recursive dynamics at the samples
    np.testing.assert_allclose(result.qdd()[0], expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert 3.5 < errors[0] / errors[1] < 4.5  # second order


def test_driven_joints_follow_the_recursive_dopri5_run_at_second_order():
    """Drivers as rows of the step: the arm with a spherical root and driven revolute and prismatic joints (ARM,
    SLIDER), with constant joint forces tau, against the recursive route's dopri5 run (rtol 1e-12) over 0.5 s at
    dt = 0.005 and 0.0025: the free coordinates and rates and the applied work (tau's and the drivers') converge at
    second order (errors 4x smaller when dt halves: measured 4.00, 4.00, 4.00), the driving forces (minus the
    drivers' rows' multipliers of the converged steps) at least so (4.86; at dt = 0.01 their error is 100 times
    dt = 0.005's: the multipliers' oscillation from the start, damped by rho_inf a step, not yet gone). Measured at
    dt = 0.0025: 4.3e-6 in the coordinates, 7.5e-6 in the rates, 9.5e-6 N (N m) of driving forces of 1.0 and 2.2,
    3.7e-7 J of work of 0.33; the bounds are 1.5 times these. The driven coordinates are their drivers' values at
    every step end to the Newton tolerance (in constraint_drift), and ``qdd()`` is the recursive forward dynamics at
    the samples: the reference's at t0 (1e-12), within the scheme's error at t_end (measured 2.7e-5 relative), the
    drivers' f'' at every sample."""
    model = _arm_with_slider()
    q0, v0 = model.neutral(), np.array([0.5, -0.4, 1.0, 0.0, 0.0])
    tau = np.array([0.2, -0.1, 0.3, 0.0, 0.0])
    drivers = {"arm": ARM, "slider": SLIDER}
    t_end = 0.5
    reference = rm.simulate(model, q0, v0, t_end, rtol=1e-12, atol=1e-12, drivers=drivers, tau=tau,
                            t_eval=[0.0, t_end])
    forces = reference.driving_forces()[-1]
    assert np.abs(forces[3:]).min() > 0.1
    errors = []
    for dt in (0.005, 0.0025):
        result = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", formulation="augmented", dt=dt,
                             drivers=drivers, tau=tau)
        assert result.newton_split_steps == 0 and result.newton_iterations <= 4 * result.nsteps
        assert result.constraint_drift.max() < 1e-12  # joints and drivers at every step end
        for body, (f, _, _) in drivers.items():
            np.testing.assert_allclose(result.q[:, model.q_slice(body).start], [f(t) for t in result.t], rtol=0,
                                       atol=1e-12)
        driving = result.driving_forces()
        assert driving.shape == (result.t.size, model.nv) and np.all(driving[:, :3] == 0.0)
        errors.append((np.abs(rm.difference(model, reference.q[-1], result.q[-1])).max(),
                       np.abs(reference.qd[-1] - result.qd[-1]).max(),
                       np.abs(driving[-1] - forces).max(),
                       abs(result.applied_work[-1] - reference.applied_work[-1])))
    errors = np.array(errors)
    np.testing.assert_allclose(errors[0, [0, 1, 3]] / errors[1, [0, 1, 3]], 4.0, rtol=0.1, err_msg=str(errors))
    assert 3.5 < errors[0, 2] / errors[1, 2] < 6.0, errors
    assert np.all(errors[1] < [6.5e-6, 1.1e-5, 1.4e-5, 5.6e-7]), errors
    qdd, expected = result.qdd(), reference.qdd()
    np.testing.assert_allclose(qdd[0], expected[0], rtol=0, atol=1e-12 * np.abs(expected[0]).max())
    assert np.abs(qdd[-1] - expected[-1]).max() < 4e-5 * np.abs(expected[-1]).max()
    np.testing.assert_array_equal(qdd[:, 3:], [[ARM[2](t), SLIDER[2](t)] for t in result.t])


def test_a_driven_run_that_fails_names_the_time_and_the_cause():
    """A step of a driven run that does not converge (max_newton = 1) stops the run with the time, the step and the
    residual's body, the samples kept; a driver that raises stops it at the step's end time, the driver named, its
    exception the cause."""
    model = _arm_with_slider()
    q0, v0 = model.neutral(), np.array([0.5, -0.4, 1.0, 0.0, 0.0])
    with pytest.raises(SimulationError, match=r"Newton did not converge at t = 0.000625 s \(step 1, dt = 0.000625 "
                                              r"s\).*the residual .* at body") as error:
        augmented3d_implicit.simulate_generalized_alpha(model, q0, v0, 0.0, 0.1, 0.01, drivers={"arm": ARM},
                                                        max_newton=1)
    assert error.value.result.status == "failed" and error.value.result.t.tolist() == [0.0]

    def stalling(t):
        if t > 0.055:
            raise ValueError("encoder lost")
        return ARM[0](t)

    with pytest.raises(SimulationError, match=r"generalized_alpha failed at t = 0.06 s: driver of body 'arm' raised "
                                              r"at t = 0.06.*encoder lost") as error:
        rm.simulate(model, q0, v0, 0.1, method="generalized_alpha", formulation="augmented", dt=0.01,
                    drivers={"arm": (stalling, ARM[1], ARM[2])})
    assert isinstance(error.value.__cause__, ValueError)
    result = error.value.result
    assert result.status == "failed" and np.allclose(result.t, np.linspace(0.0, 0.05, 6))
    np.testing.assert_allclose(result.q[:, model.q_slice("arm").start], [ARM[0](t) for t in result.t], rtol=0,
                               atol=1e-12)


def test_a_tolerance_below_the_round_off_converges_on_the_measured_round_off():
    """Newton's corrections stall in round-off (about 2e-13 here) far below 100 newton_tol: the step is converged
    within a few times the round-off measured at the iterate, with the answer of a tolerance it reaches: newton_tol
    bounds a step's correction of the centres of mass [m, m/s] and of the rotations times each body's radius of
    gyration, so the 1e-12 run's angles and rates are within nsteps 1e-12 / (the smallest radius) of the other's."""
    model, q0, v0 = swinging_chain()
    runs = [rm.simulate(model, q0, v0, 0.05, method="generalized_alpha", formulation="augmented", dt=0.01,
                        newton_tol=tol) for tol in (1e-12, 1e-20)]
    assert runs[1].newton_split_steps == 0 and runs[1].newton_iterations <= 4 * runs[1].nsteps
    reach = runs[0].nsteps * 1e-12 / augmented3d_implicit.radii_of_gyration(model).min()  # 2.9e-11 here
    np.testing.assert_allclose(runs[1].q[-1], runs[0].q[-1], rtol=0, atol=reach)
    np.testing.assert_allclose(runs[1].qd[-1], runs[0].qd[-1], rtol=0, atol=reach)


def test_a_step_that_does_not_converge_stops_the_run_with_the_samples_kept():
    model, q0, v0 = swinging_chain()
    with pytest.raises(SimulationError, match=r"Newton did not converge at t = 0.000625 s") as error:
        augmented3d_implicit.simulate_generalized_alpha(model, q0, v0, 0.0, 0.1, 0.01, max_newton=1)
    result = error.value.result
    assert result.status == "failed" and result.t.tolist() == [0.0] and result.newton_split_steps == 4
    np.testing.assert_allclose(result.q[0], q0, rtol=0, atol=1e-15)


def test_the_first_guess_moves_each_body_at_the_given_mean_velocity():
    """``kernels.predict`` gives the accelerations whose update moves every body by h times the given mean velocity:
    the centres of mass by h rate, the rotations R0 exp([h rate_omega]) (body axes)."""
    model, q0, v0 = swinging_chain()
    step = Step(model, q0, v0)
    rng = np.random.default_rng(3)
    rate = rng.normal(size=step.zb.shape)
    vdot = np.zeros_like(rate)
    kernels.predict(step.zb, step.acc, step.vdot0, rate, step.coef, vdot)
    a = step.arrays
    kernels.update_state(step.z, step.zb, step.acc, step.vdot0, step.coef, vdot, a.zp, a.zbp, a.zdp, a.tangent)
    h = step.coef[0]
    np.testing.assert_allclose(a.zp[:, :3], step.z[:, :3] + h * rate[:, :3], rtol=0, atol=1e-14)
    rotations = augmented3d._quaternion_matrix(step.z[:, 3:])
    turned = augmented3d._quaternion_matrix(a.zp[:, 3:])
    for i in range(model.nbodies):
        phi = h * rate[i, 3:]
        angle = np.linalg.norm(phi)
        k = np.cross(np.eye(3), phi / angle)  # [axis] (columns: axis x e_j)
        exp = np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * k @ k
        np.testing.assert_allclose(turned[i], rotations[i] @ exp, rtol=0, atol=1e-14)


@pytest.mark.parametrize("change, smooth", [(0.5, True), (3.0, False)])
def test_the_first_guess_is_the_same_on_numba_s_threads(change, smooth):
    """``kernels.first_guess`` from PARALLEL_BODIES bodies (its pass in ranges on numba's threads, the maxima taken
    range by range): the same bits as the rule applied in numpy to ``predict``'s guess, on random states whose
    accelerations changed smoothly (by half the largest: vdot0) and not (a change of 3 times it at the last body of
    the last range: the mean velocity), the result written over the history (one array, as in a run)."""
    n = kernels.PARALLEL_BODIES + 300
    rng = np.random.default_rng(7)
    zb, acc, vdot0 = rng.normal(size=(n, 6)), rng.normal(size=(n, 6)), rng.normal(size=(n, 6))
    rate = zb + 0.01 * rng.normal(size=(n, 6))
    coef = np.array([0.01, *generalized_alpha_coefficients(0.9)])
    before = vdot0 + 0.5 * np.abs(vdot0).max() * rng.uniform(-1.0, 1.0, size=(n, 6))
    before[-1, 0] = vdot0[-1, 0] + change * np.abs(vdot0[:, :3]).max()
    mean = np.zeros((n, 6))
    kernels.predict(zb, acc, vdot0, rate, coef, mean)
    rule = all(np.abs(vdot0 - before)[:, part].max() <= min(np.abs(vdot0 - mean)[:, part].max(),
                                                             np.abs(vdot0)[:, part].max())
               for part in (slice(0, 3), slice(3, 6)))
    assert rule == smooth
    assert kernels.first_guess(zb, acc, vdot0, before, rate, coef, 1, before) == smooth
    np.testing.assert_array_equal(before, vdot0 if smooth else mean)


def test_the_first_guess_is_the_constant_acceleration_where_the_accelerations_are_smooth():
    """``kernels.first_guess``: vdot0 where, for the centres of mass and the rotations apart, the accelerations
    changed over the last step by no more than the two guesses differ and than the part's largest acceleration
    (``kernels.SMOOTH_CHANGE``);
    ``predict``'s (the mean velocity) where one part changed by more than either (an oscillating stiff coordinate),
    and without a history (the first step)."""
    model, q0, v0 = swinging_chain()
    step = Step(model, q0, v0)
    rng = np.random.default_rng(5)
    rate = step.zb + 100.0 * rng.normal(size=step.zb.shape)  # the mean-velocity guess far from vdot0
    mean = np.zeros_like(rate)
    kernels.predict(step.zb, step.acc, step.vdot0, rate, step.coef, mean)
    gap = np.abs(step.vdot0 - mean)
    size = np.abs(step.vdot0)
    guess = np.zeros_like(rate)
    for part in (slice(0, 3), slice(3, 6)):
        assert gap[:, part].max() > size[:, part].max()
        before = step.vdot0.copy()
        before[:, part] += 0.95 * size[:, part].max()  # a smooth change: the constant acceleration
        assert kernels.first_guess(step.zb, step.acc, step.vdot0, before, rate, step.coef, 1, guess) == 1
        np.testing.assert_array_equal(guess, step.vdot0)
        before[0, part.start] += 0.1 * size[:, part].max()  # above the largest acceleration: the mean velocity
        assert kernels.first_guess(step.zb, step.acc, step.vdot0, before, rate, step.coef, 1, guess) == 0
        np.testing.assert_array_equal(guess, mean)
        before[0, part.start] += 2.0 * gap[:, part].max()  # above the guesses' distance too
        assert kernels.first_guess(step.zb, step.acc, step.vdot0, before, rate, step.coef, 1, guess) == 0
        np.testing.assert_array_equal(guess, mean)
    before = step.vdot0.copy()
    assert kernels.first_guess(step.zb, step.acc, step.vdot0, before, rate, step.coef, 0, guess) == 0
    np.testing.assert_array_equal(guess, mean)
    # vdot and the history may be one array (the run's spare one)
    assert kernels.first_guess(step.zb, step.acc, step.vdot0, before, rate, step.coef, 1, before) == 1
    np.testing.assert_array_equal(before, step.vdot0)


def test_a_long_chain_tilted_at_its_pin_converges_in_a_few_iterations_a_step():
    """A chain of 3000 spherical links (1 m, 1 kg) released tilted 0.3 rad about its pin: at t = 0 the straight
    chain falls sideways at g sin(tilt) but its pin holds the top, so the scheme's accelerations of the top links'
    rotations are of order N g tilt / (1 m) (the kink at the pin) and oscillate from step to step. Newton's first guess
    moves the bodies on at the last step's mean velocity, not at constant acceleration (which turned the top link
    by radians and took 10 iterations a step and halved steps here: 1e6 links at 1e-3 rad likewise):
    at most 4 iterations a step, no halved step, the joints closed."""
    model, q0, v0 = _tilted_chain(3000)
    result = rm.simulate(model, q0, v0, 0.05, method="generalized_alpha", formulation="augmented", dt=0.01)
    assert result.nsteps == 5 and result.newton_split_steps == 0
    assert result.newton_iterations <= 4 * result.nsteps
    assert result.constraint_drift.max() < 1e-12


def _tilted_chain(n, tilt=0.3):
    """n slender spherical links (1 m, 1 kg in all, axial inertia a tenth of the transverse one) hanging from the
    origin, tilted ``tilt`` about x at the pin, the top link turning about y at 5/3 tilt per second."""
    rod, mass = 1.0 / n, 1.0 / n
    inertia = mass * rod**2 / 12.0
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    points = np.tile([0.0, 0.0, -rod], (n, 1))
    points[0] = 0.0
    model.add_bodies(np.arange(-1, n - 1), "spherical", parent_point=points, mass=mass,
                     inertia=(inertia, inertia, 0.1 * inertia, 0.0, 0.0, 0.0), com=(0.0, 0.0, -rod / 2.0))
    delta = np.zeros(model.nv)
    delta[0] = tilt
    q0 = rm.integrate_configuration(model, model.neutral(), delta)
    v0 = np.zeros(model.nv)
    v0[1] = tilt * 5.0 / 3.0
    return model, q0, v0


def _modal_chain(n):
    """``studies.spherical_chain(n)`` at rest in its first mode along x and y, largest tilts 1e-3 and 5e-4 rad
    (``studies.hanging_swing_3d``'s start): the swing whose accelerations are smooth from the first step."""
    model = rm.studies.spherical_chain(n)
    _, shapes = rm.studies.chain_modes(rm.chains.serial_chain(n), 1)
    shape = shapes[:, 0] / shapes[np.argmax(np.abs(shapes[:, 0])), 0]
    return model, rm.studies.tilted_chain(model, np.column_stack([1e-3 * shape, 5e-4 * shape])), np.zeros(3 * n)


def test_the_whip_of_a_long_chain_runs_through_or_stops_naming_time_and_cause():
    """1000 links tilted 0.3 rad with the push, rho_inf = 0.9, 1 s at dt = 0.01 s: the whip reaching the free end
    near t = 0.78 s. Either the run reaches 1 s with the joints closed, or it stops with SimulationError naming the
    time, the body, the Newton iterations and the multipliers the iteration reached, the samples kept. (Measured:
    with the step's velocities projected onto the joints' velocity rows it runs through, 3.33 iterations a step;
    without, it stopped at t = 0.789375 s, every split of the step down to dt / 16 failing to converge, the joints
    near the free end in tension, not compression; the last link spinning at up to 134 rad/s where dopri5's free end
    turns at 4 to 10 rad/s: ``augmented3d_implicit``, "Velocities" and "Measured".)"""
    model, q0, v0 = _tilted_chain(1000)
    try:
        result = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", formulation="augmented", dt=0.01,
                             every=10)
    except SimulationError as error:
        message = str(error)
        assert re.search(r"at t = 0\.\d+ s \(step \d+, dt = [\d.e-]+ s\) at body 'body\d+' \(index \d+\) after "
                         r"\d+ Newton iterations, the joints' multipliers up to [\d.e+]+: the iteration diverged",
                         message) or "Newton did not converge at t = " in message, message
        result = error.result
        assert result.status == "failed" and result.t[-1] >= 0.5 and np.allclose(np.diff(result.t), 0.1)
    else:
        assert result.t[-1] == 1.0 and result.constraint_drift.max() < 1e-12


def test_a_diverging_step_is_given_up_once_its_correction_has_grown_twice_running_and_split(monkeypatch):
    """1000 links tilted 0.5 rad with the push, rho_inf = 0.9: the step to t = 0.75 s diverges from its first guess
    (its corrections 0.2, 0.19, 0.41, 1.4, ... on to a singular block after 15 iterations, before the divergence
    test). It is given up as soon as its correction has grown by more than ``kernels.DIVERGENCE`` at two iterations
    running (the replayed corrections say so, and not before), well before max_newton (20), and split; the run goes
    on with the joints closed."""
    model, q0, v0 = _tilted_chain(1000, 0.5)
    original = kernels.newton_step
    where = list(inspect.signature(original.py_func).parameters).index
    calls = []

    def logged(*args):
        vdot, lam, info = args[where("vdot")], args[where("lam")], args[where("info")]
        guess = vdot.copy(), lam.copy()
        status = original(*args)
        if status:  # the corrections of the failed iteration, replayed on copies of its first guess
            iterations = int(info[0])
            sizes = []
            for k in range(1, iterations + 1):
                original(*args[:13], k, guess[0].copy(), guess[1].copy(), *args[16:-1], args[-1].copy())
                sizes.append(float(info[1]))
            calls.append((status, iterations, sizes))
            info[0] = iterations
        return status

    monkeypatch.setattr(kernels, "newton_step", logged)
    result = rm.simulate(model, q0, v0, 0.8, method="generalized_alpha", formulation="augmented", dt=0.01,
                         every=10**9)
    assert calls and result.newton_split_steps == len(calls)
    for status, iterations, sizes in calls:
        assert status == STATUS_NO_CONVERGENCE and iterations < 10
        ratios = np.array(sizes[1:]) / np.array(sizes[:-1])
        assert ratios[-1] > kernels.DIVERGENCE and ratios[-2] > kernels.DIVERGENCE, sizes
        assert not np.any((ratios[1:-1] > kernels.DIVERGENCE) & (ratios[:-2] > kernels.DIVERGENCE)), sizes
    assert result.t[-1] == 0.8 and result.constraint_drift.max() < 1e-12


def _spherical_tree(seed, nbodies):
    """A random tree of spherical joints (random joint frames, points, centres of mass and full inertias)."""
    rng = np.random.default_rng(seed)
    model = rm.Model3D(gravity=(0.3, -0.5, -9.81))
    for body in random_spatial_tree(rng, nbodies):
        body["joint"] = "spherical"
        body.pop("axis", None)
        model.add_body(**body)
    model.compile()
    return model, rng


@pytest.mark.parametrize("nbodies", [12, kernels.PARALLEL_BODIES + 300])
def test_the_fused_spherical_iteration_is_the_general_one_on_a_random_tree(nbodies):
    """On a tree of spherical joints an iteration is ``spherical_forward`` and the back-substitution (one pass
    each way, the spherical joint's blocks written out; from PARALLEL_BODIES bodies the bodies' own blocks on
    numba's threads): its residual, tau's power and its correction are those of ``residual``, ``factor`` and
    ``solve`` at a state far from converged, to round-off (the correction to 1e-11 of its largest: the general
    kernels take tau's turning by central differences, ``loads3d``, the fused passes in closed form); range by range
    of bodies (the records of two ranges kept), the same bits whatever the ranges and threads, again on the same
    arrays (the children's sums left zero)."""
    model, rng = _spherical_tree(81, nbodies)
    parents = model.body_int[:, PARENT]
    assert np.bincount(parents[parents >= 0]).max() > 1 and (parents == -1).sum() > 1  # branches, several roots
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    step = Step(model, q, rng.normal(size=model.nv), seed=2)
    step.arrays = augmented3d_implicit._Arrays(model, step.starts, loaded=True)  # tau's turning: the loads' blocks
    tau = 3.0 * rng.normal(size=model.nv)
    vdot, lam = step.split(step.x0)
    m, a = model, step.arrays
    kernels.update_state(step.z, step.zb, step.acc, step.vdot0, step.coef, vdot, a.zp, a.zbp, a.zdp, a.tangent)
    assert kernels.residual(m.body_int, m.body_real, m.gravity, step.starts, tau, np.zeros(0), a.zp, a.zdp, vdot,
                            lam, step.coef[5], a.rb, a.rc, a.jc, a.jp, a.res, a.gam, a.power) == 0
    expected_r, expected_power = np.concatenate((a.rb.ravel(), a.rc)), a.power[0]
    kernels.joint_load_blocks(m.body_int, m.body_real, *a.loads[1:6], tau, *a.loads[6:8], a.zp, a.zbp, a.zdp,
                              a.tangent, step.coef[5], step.coef[6], augmented3d_implicit.radii_of_gyration(m),
                              a.loads[0], *a.loads[8:])
    assert kernels.factor(m.body_int, m.body_real, step.starts, a.zp, a.zbp, vdot, lam, a.rb, a.tangent, step.coef[5],
                          step.coef[6], a.jc, a.jp, a.diag, a.api, a.lu, a.piv, a.wm, a.loads[0]) == 0
    xb, xj = -a.rb, -a.rc
    kernels.solve(m.body_int, step.starts, a.jp, a.api, a.diag, a.lu, a.piv, a.wm, xb, xj)
    expected_x = np.concatenate((xb.ravel(), xj))
    fused = augmented3d_implicit._Arrays(model, step.starts, fused=True)
    size = augmented3d_implicit.pipeline_range(nbodies)
    assert fused.loc.shape == (2 * size, kernels.LOCAL_SIZE) and size <= nbodies  # two ranges' records
    body_r = expected_r[:6 * nbodies].reshape(nbodies, 6)
    threads = numba.get_num_threads()
    first = None
    # the run's ranges, ranges of 1000 bodies (several rounds: on two threads), the same on one thread, and again on
    # the same arrays (the children's sums are left zero for the next call)
    for size, count in ((None, threads), (1000, threads), (1000, 1), (1000, threads)):
        if size is not None:
            fused.loc = np.zeros((2 * min(nbodies, size), kernels.LOCAL_SIZE))
        info = np.zeros(4)
        numba.set_num_threads(count)
        try:
            assert kernels.spherical_forward(m.body_int, m.body_real, m.gravity, step.starts, tau, a.zp, a.zbp, a.zdp,
                                             vdot, lam, a.tangent, step.coef[5], step.coef[6], fused.rc, fused.diag,
                                             fused.wm, fused.loc, fused.xb, fused.xj, fused.power, info) == 0
        finally:
            numba.set_num_threads(threads)
        kernels.spherical_back_substitute(m.body_int, step.starts, fused.wm, fused.diag, fused.xb, fused.xj)
        assert not fused.diag.any()  # the children's sums and the joint frames left zero for the next call
        x = np.concatenate((fused.xb.ravel(), fused.xj))
        assert np.abs(expected_r).max() > 10.0 and np.abs(expected_x).max() > 1.0  # far from converged
        np.testing.assert_allclose(fused.rc, expected_r[6 * nbodies:], rtol=0, atol=1e-12 * np.abs(expected_r).max())
        assert abs(fused.power[0] - expected_power) <= 1e-12 * abs(expected_power)
        # the largest |residual| of the body rows and its body
        assert abs(info[2] - np.abs(body_r).max()) <= 1e-12 * np.abs(body_r).max()
        assert abs(np.abs(body_r[int(info[3])]).max() - info[2]) <= 1e-12 * info[2]
        np.testing.assert_allclose(x, expected_x, rtol=0, atol=1e-11 * np.abs(expected_x).max())
        first = x if first is None else first
        assert np.array_equal(x, first)  # the same bits whatever the ranges and threads


@pytest.mark.parametrize("nbodies", [12, kernels.PARALLEL_BODIES + 300])
def test_the_fused_spherical_iteration_names_the_first_body_whose_pose_is_not_finite(nbodies):
    """``spherical_forward`` at a state whose poses are not all finite (one body's NaN, a later one's infinite; the
    records test them, on the threads' side of the pipeline from PARALLEL_BODIES bodies): STATUS_NONFINITE_Q with
    the first such body, the children's sums and frames left zero, and the next call on a finite state the same
    bits as on fresh arrays."""
    model, rng = _spherical_tree(84, nbodies)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    step = Step(model, q, rng.normal(size=model.nv), seed=4)
    vdot, lam = step.split(step.x0)
    m, a = model, step.arrays
    kernels.update_state(step.z, step.zb, step.acc, step.vdot0, step.coef, vdot, a.zp, a.zbp, a.zdp, a.tangent)

    def forward(fused, zp):
        status = kernels.spherical_forward(m.body_int, m.body_real, m.gravity, step.starts, np.zeros(0), zp, a.zbp,
                                           a.zdp, vdot, lam, a.tangent, step.coef[5], step.coef[6], fused.rc,
                                           fused.diag, fused.wm, fused.loc, fused.xb, fused.xj, fused.power,
                                           np.zeros(4))
        if status == 0:
            kernels.spherical_back_substitute(m.body_int, step.starts, fused.wm, fused.diag, fused.xb, fused.xj)
        return status

    fused = augmented3d_implicit._Arrays(model, step.starts, fused=True)
    bad = a.zp.copy()
    first, later = nbodies // 3, nbodies - 2
    bad[later, 0] = np.inf
    bad[first, 5] = np.nan
    status = forward(fused, bad)
    assert status & 0xF == kernels.STATUS_NONFINITE_Q and status >> 4 == first
    assert not fused.diag.any()
    assert forward(fused, a.zp) == 0
    fresh = augmented3d_implicit._Arrays(model, step.starts, fused=True)
    assert forward(fresh, a.zp) == 0
    assert np.array_equal(fused.xb, fresh.xb) and np.array_equal(fused.xj, fresh.xj)


@pytest.mark.parametrize("nbodies", [12, kernels.PARALLEL_BODIES + 300])
def test_the_initial_dynamics_of_a_spherical_tree_are_the_augmented_formulations(nbodies):
    """``spherical_dynamics`` (the fused passes with c_stiff = c_damp = 0: the run's start on a tree of spherical
    joints) gives the accelerations and multipliers of the explicit augmented formulation's tree solve
    (``augmented3d.forward_dynamics``) on a random tree whirling at up to 60 rad/s with joint torques, to 1e-10 of
    their largest, and tau's power at the state."""
    model, rng = _spherical_tree(85, nbodies)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    v, tau = 20.0 * rng.normal(size=model.nv), 3.0 * rng.normal(size=model.nv)
    z, zd = augmented3d.absolute_from_joint(model, q, v)
    assert np.abs(zd[:, 3:]).max() > 40.0
    expected, expected_lam = augmented3d.forward_dynamics(model, z, zd, tau)
    expected = augmented3d_implicit.to_body_axes(z, expected)
    starts = augmented3d.row_starts(model)
    a = augmented3d_implicit._Arrays(model, starts, fused=True)
    vdot, lam = np.full((model.nbodies, 6), np.nan), np.full(int(starts[-1]), np.nan)
    assert kernels.spherical_dynamics(model.body_int, model.body_real, model.gravity, starts, tau, z,
                                      augmented3d_implicit.to_body_axes(z, zd), zd, a.tangent, a.rc, a.diag, a.wm,
                                      a.loc, a.xb, a.xj, vdot, lam, a.power, a.info) == 0
    np.testing.assert_allclose(vdot, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    np.testing.assert_allclose(lam, expected_lam, rtol=0, atol=1e-10 * np.abs(expected_lam).max())
    parents = model.body_int[:, PARENT]
    omega = np.vstack((zd[:, 3:], np.zeros(3)))  # the ground's turn last, at index -1
    turned = np.einsum("nij,nj->ni", augmented3d._quaternion_matrix(z[:, 3:]), tau.reshape(-1, 3))
    power = float(np.sum(turned * (omega[:-1] - omega[parents])))
    assert abs(a.power[0] - power) <= 1e-12 * np.abs(turned).sum() * np.abs(omega).max()


def test_a_spherical_tree_runs_the_same_fused_or_not(monkeypatch):
    """A run of a random tree of spherical joints with joint torques, by the fused iteration and by the general
    kernels: the same Newton iterations, the same states to round-off, the same work of tau."""
    model, rng = _spherical_tree(82, 10)
    q0 = rm.integrate_configuration(model, model.neutral(), 0.3 * rng.normal(size=model.nv))
    v0, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    runs = []
    for fused in (True, False):
        monkeypatch.setattr(augmented3d_implicit, "FUSED_SPHERICAL", fused)
        runs.append(rm.simulate(model, q0, v0, 0.1, method="generalized_alpha", formulation="augmented", dt=0.01,
                                tau=tau))
    assert runs[0].newton_iterations == runs[1].newton_iterations
    np.testing.assert_allclose(runs[0].z[-1], runs[1].z[-1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(runs[0].zd[-1], runs[1].zd[-1], rtol=0, atol=1e-11 * np.abs(runs[1].zd[-1]).max())
    assert abs(runs[0].applied_work[-1] - runs[1].applied_work[-1]) <= 1e-12 * abs(runs[1].applied_work[-1])


def test_the_fused_spherical_iteration_solves_the_residuals_derivative_at_fast_rotation():
    """The fused passes' correction (``spherical_forward``, ``spherical_back_substitute``: their own assembly of the
    matrix) is the Newton correction of the residual's Jacobian by central differences, on a random tree of
    spherical joints whirling at up to 70 rad/s, to 1e-8 of its largest entry."""
    model, rng = _spherical_tree(83, 8)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    step = Step(model, q, 30.0 * rng.normal(size=model.nv), seed=3)
    assert np.abs(step.zb[:, 3:]).max() > 50.0
    vdot, lam = step.split(step.x0)
    m, a = model, step.arrays
    r = step.residual(step.x0)  # leaves the state of x0 in a.zp, a.zbp, a.zdp, a.tangent
    fused = augmented3d_implicit._Arrays(model, step.starts, fused=True)
    assert kernels.spherical_forward(m.body_int, m.body_real, m.gravity, step.starts, np.zeros(0), a.zp, a.zbp, a.zdp,
                                     vdot, lam, a.tangent, step.coef[5], step.coef[6], fused.rc, fused.diag, fused.wm,
                                     fused.loc, fused.xb, fused.xj, fused.power, np.zeros(4)) == 0
    kernels.spherical_back_substitute(m.body_int, step.starts, fused.wm, fused.diag, fused.xb, fused.xj)
    mine = np.concatenate((fused.xb.ravel(), fused.xj))
    expected = np.linalg.solve(_jacobian(step.residual, step.x0, 0.1, 3), -r)
    assert np.abs(mine - expected).max() < 1e-8 * np.abs(expected).max()


def test_the_predicted_correction_is_quadratic_part_by_part():
    """``kernels.predicted_correction``: theta^2 times each part's last correction (theta its ratio to the one
    before), the part itself where it contracts by less than half, the largest of the two parts."""
    assert kernels.predicted_correction(1e-6, 0.0, 1e-3, 0.0) == pytest.approx(1e-12, rel=1e-14)
    assert kernels.predicted_correction(1e-6, 1e-8, 1e-3, 1e-4) == pytest.approx(1e-12, rel=1e-14)
    # the rotations contract more slowly: their prediction, 1e-2^2 1e-8, is the larger
    assert kernels.predicted_correction(1e-7, 1e-8, 1e-3, 1e-6) == pytest.approx(1e-12, rel=1e-14)
    # a part contracting by less than half predicts itself (no quadratic regime yet); one growing from zero too
    assert kernels.predicted_correction(1e-6, 6e-9, 1e-3, 1e-8) == 6e-9
    assert kernels.predicted_correction(1e-6, 1e-9, 1e-3, 0.0) == 1e-9


def _corrections_of_each_step(monkeypatch, model, q0, v0, t_end, rho_inf, count, newton_tol=None):
    """Run generalized_alpha (dt = 0.01 s, ``newton_tol``: None the default) and, at each step, the first ``count``
    corrections of the step's Newton
    iteration from its first guess (the kernel run again on copies with newton_tol = 0, stopped after 1, 2, ...
    iterations; the list ends early where a correction stalls at the round-off that the kernel measures): a list of
    (iterations the step took, [corrections])."""
    original = kernels.newton_step
    where = list(inspect.signature(original.py_func).parameters).index
    steps = []

    def logged(*args):
        # the first guess, overwritten by the iterations
        vdot, lam, info = args[where("vdot")], args[where("lam")], args[where("info")]
        sizes = []
        for k in range(1, count + 1):
            original(*args[:12], 0.0, k, vdot.copy(), lam.copy(), *args[16:-1], args[-1].copy())
            if info[0] < k:  # accepted at a stall within the round-off
                break
            sizes.append(float(info[1]))
        status = original(*args)
        steps.append((int(info[0]), sizes))
        return status

    monkeypatch.setattr(kernels, "newton_step", logged)
    rm.simulate(model, q0, v0, t_end, method="generalized_alpha", formulation="augmented", dt=0.01, rho_inf=rho_inf,
                every=10**9, newton_tol=newton_tol)
    return steps


def test_no_step_is_accepted_with_its_next_correction_above_the_tolerance(monkeypatch):
    """The acceptance rule (``kernels.newton_step``: the correction, the linear contraction estimate, or
    QUADRATIC_SAFETY times ``predicted_correction``, <= newton_tol) on a 100-link chain swinging 0.3 rad with the
    push, rho_inf = 0.9, over 0.7 s (the wave reaching the free end near 0.5 s): every accepted step's next
    correction (the error it left) is <= newton_tol = 1e-12, from the run's first guesses (``kernels.first_guess``)
    and from the mean-velocity guess alone (``kernels.predict``). From the latter, steps whose fourth correction
    exceeds it are not accepted after three iterations, although the quadratic estimate of the largest correction
    (theta^2 times it, theta its ratio to the one before) is below it there: that estimate, the centres of mass
    dominating the first corrections, misses the rotations' slower convergence (measured: 18 steps with a fourth
    correction above 1e-12, 5 of them with that estimate below it, their fourth corrections 1.3e-12 to 2.5e-11; the
    largest next correction of an accepted step 2.4e-13; from the run's first guesses no fourth correction exceeds
    1e-12)."""
    model, q0, v0 = _tilted_chain(100)
    for guess in ("the run's", "mean velocity"):
        if guess == "mean velocity":
            monkeypatch.undo()
            monkeypatch.setattr(kernels, "first_guess", lambda zb, acc, vdot, before, rate, coef, history, out:
                                kernels.predict(zb, acc, vdot, rate, coef, out) or 0)
        steps = _corrections_of_each_step(monkeypatch, model, q0, v0, 0.7, 0.9, 6, newton_tol=1e-12)
        assert len(steps) == 70
        checked = [(taken, sizes) for taken, sizes in steps if taken < len(sizes)]  # (the others: round-off next)
        assert len(checked) >= 60 and all(sizes[taken] <= 1e-12 for taken, sizes in checked), (guess, checked)
    refused = [sizes for taken, sizes in steps if sizes[3] > 1e-12]  # (and so not accepted after three, above)
    fooled = [sizes for sizes in refused if (sizes[2] / sizes[1]) ** 2 * sizes[2] <= 1e-12]
    assert len(fooled) >= 2, refused


@pytest.mark.parametrize("swing, rho_inf", [("whip", 0.5), ("whip", 0.9), ("modes", 0.9)])
def test_at_the_default_tolerance_no_step_is_accepted_with_its_next_correction_above_it(monkeypatch, swing, rho_inf):
    """The acceptance rule at the default newton_tol (``augmented3d_implicit.NEWTON_TOL``, 1e-10 m/s) on the
    100-link chain swinging 0.3 rad with the push over 1 s (the whip reaching the free end) and swinging in its
    first modes: every accepted step's next correction (the error it left) is below a quarter of it (measured: at
    most 1.3e-11 on the whip at rho_inf = 0.5, after two iterations, and 5.7e-12 at 0.9). On the modes every step
    but the first is accepted after its first correction on the estimate of the step before (``kernels.
    first_correction_accepted``), its next correction at the round-off (below 1e-12)."""
    tol = augmented3d_implicit.NEWTON_TOL
    assert tol == 1e-10
    model, q0, v0 = _tilted_chain(100) if swing == "whip" else _modal_chain(100)
    steps = _corrections_of_each_step(monkeypatch, model, q0, v0, 1.0, rho_inf, 6)
    assert len(steps) == 100
    checked = [(taken, sizes) for taken, sizes in steps if taken < len(sizes)]
    assert len(checked) >= 90 and max(sizes[taken] for taken, sizes in checked) <= 0.25 * tol, checked
    if swing == "modes":
        assert [taken for taken, _ in steps] == [2] + [1] * 99
        assert max(sizes[1] for _, sizes in steps[1:]) < 1e-12


def test_a_first_correction_is_accepted_where_the_estimate_of_an_earlier_step_vouches_for_it():
    """``kernels.quadratic_ratio`` (a correction over the square of the one before) and
    ``kernels.first_correction_accepted`` (QUADRATIC_SAFETY K |dx|^2 <= tol for both parts): no estimate (NaN) or
    an infinite one accepts nothing, a part that did not move accepts with any finite estimate."""
    assert kernels.quadratic_ratio(1e-8, 1e-4) == pytest.approx(1.0, rel=1e-15)
    assert kernels.quadratic_ratio(0.0, 0.0) == 0.0 and kernels.quadratic_ratio(1e-9, 0.0) == math.inf
    tol = 1e-10
    k = tol / kernels.QUADRATIC_SAFETY / 1e-6**2  # a first correction of 1e-6 predicts exactly tol / SAFETY
    assert kernels.first_correction_accepted(np.array([k, k, 0.0, 0.0]), 1e-6, 1e-6, tol)
    assert not kernels.first_correction_accepted(np.array([k, k, 0.0, 0.0]), 1e-6, 1.01e-6, tol)
    assert not kernels.first_correction_accepted(np.array([k, 1.01 * k, 0.0, 0.0]), 1e-6, 1e-6, tol)
    assert kernels.first_correction_accepted(np.array([k, 1e30, 0.0, 0.0]), 1e-6, 0.0, tol)
    for none in (np.nan, math.inf):
        assert not kernels.first_correction_accepted(np.array([none, k, 0.0, 0.0]), 1e-9, 1e-9, tol)
        assert not kernels.first_correction_accepted(np.array([k, none, 0.0, 0.0]), 1e-9, 0.0, tol)


def test_a_step_with_joint_forces_or_loads_accepts_its_first_correction_only_with_their_power_at_the_new_state():
    """100 links swinging in their first modes (1 s at dt = 0.01 s): 101 Newton iterations; with a constant tau (a
    moment of 1e-10 N m at the pin, whose power the kernel would take at the first guess's velocities) every step
    takes two (the rule is off); with the same moment from a tau function (the loads' iteration, their power taken
    at the converged state) 101 again, and the applied work is the integral of the moment's power in both runs."""
    model, q0, v0 = _modal_chain(100)
    common = dict(method="generalized_alpha", formulation="augmented", dt=0.01, every=1)
    plain = rm.simulate(model, q0, v0, 1.0, **common)
    assert plain.newton_iterations == 101
    tau = np.zeros(model.nv)
    tau[1] = 1e-10  # (a larger moment, suddenly applied, sets the top links oscillating: no smooth guess)
    constant = rm.simulate(model, q0, v0, 1.0, tau=tau, **common)
    assert constant.newton_iterations == 200
    function = rm.simulate(model, q0, v0, 1.0, tau=lambda t, q, v: tau, **common)
    assert function.newton_iterations == 101
    for run in (constant, function):
        rate = run.qd[:, 1]  # the pin's turning rate about y, tau's only entry
        work = np.concatenate(([0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1]) * tau[1] * np.diff(run.t))))
        assert np.allclose(run.applied_work, work, rtol=0.0, atol=1e-12 * np.abs(work).max()), run.applied_work


def test_the_swinging_chains_take_fewer_newton_iterations_a_step():
    """Iterations a step (a count) of the benchmark's chains at dt = 0.01 s over 1 s (``benchmarks/implicit3d.py``):
    100 links swinging 1e-3 rad, rho_inf = 0.9: 2 every step (2.27 a step on the linear contraction estimate alone:
    the third correction, 1e-13, confirms round-off; the first, 2e-4 from the mean-velocity guess where the
    rotations at the pin oscillate, leaves a second of 2e-9: the estimate of the step before accepts none); 0.3
    rad, rho_inf = 0.5: 2.89 a step at the default newton_tol (1e-10 m/s) with the constant-acceleration first guess
    where no part's accelerations changed by more than themselves (``kernels.first_guess``; 3.11 at newton_tol =
    1e-12 with the bound at half of them, 3.26 with the mean-velocity guess alone, 3.51 with the linear contraction
    estimate too); rho_inf = 0.9: 3.41 a step (3.86, 3.97)."""
    model, q0, v0 = _tilted_chain(100, 1e-3)
    small = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", formulation="augmented", dt=0.01, every=100)
    assert small.nsteps == 100 and small.newton_split_steps == 0 and small.newton_iterations == 200
    model, q0, v0 = _tilted_chain(100)
    for rho_inf, most in ((0.5, 300), (0.9, 350)):
        large = rm.simulate(model, q0, v0, 1.0, method="generalized_alpha", formulation="augmented", dt=0.01,
                            every=100, rho_inf=rho_inf)
        assert large.nsteps == 100 and large.newton_split_steps == 0 and large.newton_iterations <= most, rho_inf
        assert large.constraint_drift.max() < 1e-12


def _projected(model, z, zd, fused, gap=None):
    """The velocities (zd, omega in ground axes) of the state (z, zd) after the step's projection onto the joints'
    velocity rows (``_Stepper.project``: ``kernels.spherical_project`` fused, else ``kernels.project_velocity``), at
    newton_tol = 1e-10; gap (3,), where given, receives the stepper's ``gap`` (the largest row gap over its reach,
    its body, 1 where projected)."""
    starts = augmented3d.row_starts(model)
    arrays = augmented3d_implicit._Arrays(model, starts, fused=fused)
    arrays.zp[:], arrays.zdp[:], arrays.zbp[:] = z, zd, augmented3d_implicit.to_body_axes(z, zd)
    drive = augmented3d_implicit._Drivers(model, augmented3d_implicit._SpatialInputs(model, None, None))
    vdot, lam = np.zeros((model.nbodies, 6)), np.zeros(int(starts[-1]))
    stepper = augmented3d_implicit._Stepper(model, starts, np.zeros(0), drive, generalized_alpha_coefficients(0.9),
                                            1e-10, 20, [z, None, None, None, vdot, lam], arrays)
    assert stepper.projected
    assert stepper.project(vdot, lam) == 0
    if fused:  # the children's sums left zero for the next pass
        assert not arrays.diag.any()
    if gap is not None:
        gap[:] = stepper.gap
    return arrays.zdp.copy()


def _row_gaps(model, z, zd):
    """Each joint velocity row's gap |g . v| over its reach (numpy, from ``augmented3d.assemble``'s rows, not the
    step's kernels): the most that velocity errors within Newton's tolerance of 1 in the correction's metric (each
    c' component by 1 m/s, each omega_b component by 1 / r_g, r_g the body's radius of gyration) move the row,
    |a|_1 + |R^T b|_1 / r_g over its two bodies (a, b its coefficients on c' and omega, ground axes). (rows,)"""
    _, _, jc, jp, _, _ = augmented3d.assemble(model, z, zd)
    counts = np.diff(augmented3d.row_starts(model))
    parent = model.body_int[:, PARENT]
    rot = augmented3d._quaternion_matrix(z[:, 3:])
    gyration = augmented3d_implicit.radii_of_gyration(model)
    out = []
    for i in range(model.nbodies):
        p = parent[i]
        for k in range(counts[i]):
            gap = jc[i, k] @ zd[i]
            reach = np.abs(jc[i, k, :3]).sum() + np.abs(rot[i].T @ jc[i, k, 3:]).sum() / gyration[i]
            if p >= 0:
                gap += jp[i, k] @ zd[p]
                reach += np.abs(jp[i, k, :3]).sum() + np.abs(rot[p].T @ jp[i, k, 3:]).sum() / gyration[p]
            out.append(abs(gap) / reach)
    return np.array(out)


def _projection_case(kind, seed):
    """(model, rng, z, zd): a random tree of every joint type, or of spherical joints (12 bodies, or above
    PARALLEL_BODIES: "spherical, on numba's threads"), at random joint coordinates and velocities (z, zd on the
    joints' velocity rows)."""
    if kind == "every joint type":
        model, rng = _tree_of_every_joint_type()
    else:
        model, rng = _spherical_tree(seed, 12 if kind == "spherical" else kernels.PARALLEL_BODIES + 300)
    q = rm.integrate_configuration(model, model.neutral(), 0.5 * rng.normal(size=model.nv))
    z, zd = augmented3d.absolute_from_joint(model, q, rng.normal(size=model.nv))
    return model, rng, z, zd


@pytest.mark.parametrize("kind", ["every joint type", "spherical", "spherical, on numba's threads"])
def test_the_steps_velocity_projection_is_the_mass_orthogonal_one(kind):
    """A state on the joints' positions with random velocities off their velocity rows, on a random tree of every
    joint type and on random trees of spherical joints (below and above PARALLEL_BODIES, where the fused passes run
    as a pipeline on two threads): the step's projection (the general kernels; and the fused passes on the spherical
    trees, ``kernels.spherical_project``) is the explicit augmented route's mass-orthogonal projection
    (``augmented3d.project``: its own tree solve, the same system [[M, G^T], [G, 0]]) to 1e-12 of the change it
    makes, and G v = 0 after it to round-off (measured: 3e-15 to 1.6e-14 of the change apart, G v 2.6e-15 to
    4e-14)."""
    model, rng, z, zd = _projection_case(kind, 85)
    zd = zd + 0.3 * rng.normal(size=zd.shape)  # off the velocity rows
    assert np.abs(augmented3d.constraints(model, z, zd)[2]).max() > 0.1
    _, reference = augmented3d.project(model, z, zd)
    change = np.abs(reference - zd).max()
    for fused in (False,) if kind == "every joint type" else (False, True):
        projected = _projected(model, z, zd, fused)
        np.testing.assert_allclose(projected, reference, rtol=0, atol=1e-12 * change, err_msg=f"fused {fused}")
        assert np.abs(augmented3d.constraints(model, z, projected)[2]).max() < 1e-12 * change, fused


@pytest.mark.parametrize("kind", ["every joint type", "spherical", "spherical, on numba's threads"])
def test_the_projection_is_skipped_where_every_gap_is_within_the_newton_tolerances_reach(kind):
    """The step's projection runs only where a joint velocity row's gap exceeds newton_tol (1e-10 here) times its
    reach (the most that velocity errors within the Newton tolerance move it, ``kernels._row_reach``): on random
    trees (every joint type: the general kernels; spherical: the fused passes too), a state on the joints' positions
    with velocities off their rows by random errors of 3e-11 (every row's gap over its reach below 1e-10, measured
    apart in numpy from ``augmented3d.assemble``'s rows) is left bit for bit, and with errors of 0.3 projected; the
    largest gap over its reach that the step reports is numpy's to 1e-15 (the round-off of G v at velocities of
    order 1 m/s) and to 1e-12 of itself."""
    model, rng, z, on_rows = _projection_case(kind, 86)
    for size, projected in ((3e-11, False), (0.3, True)):
        zd = on_rows + size * rng.normal(size=on_rows.shape)
        ratios = _row_gaps(model, z, zd)
        assert (ratios.max() < 1e-10) != projected, ratios.max()
        for fused in (False,) if kind == "every joint type" else (False, True):
            gap = np.zeros(3)
            after = _projected(model, z, zd, fused, gap)
            assert gap[2] == projected, (size, fused)
            np.testing.assert_allclose(gap[0], ratios.max(), rtol=1e-12, atol=1e-15, err_msg=f"{size} {fused}")
            if not projected:
                assert np.array_equal(after, zd), fused
            else:
                assert np.abs(_row_gaps(model, z, after)).max() < 1e-13, fused


def test_the_steps_gaps_stay_within_the_newton_tolerances_reach_where_they_are_not_projected(monkeypatch):
    """The small swing of 1000 links (1e-3 rad, rho_inf = 0.9, 0.5 s at dt = 0.01 s): some steps are projected and
    some are not (their gaps within the Newton tolerance's reach), and after every step every joint velocity row's
    gap is at most newton_tol times its reach (``_row_gaps``, measured apart on the samples); the general kernels
    (``project_velocity``) project the same steps, to the same end state (positions to 1e-12, velocities to 1e-9:
    the general and fused Newton iterations stop at different iterates within newton_tol, 3.4e-7 rad/s at the 1 mm
    links' radius of gyration)."""
    model, q0, v0 = _tilted_chain(1000, 1e-3)
    tol = augmented3d_implicit.NEWTON_TOL
    runs = []
    for fused in (True, False):
        monkeypatch.setattr(augmented3d_implicit, "FUSED_SPHERICAL", fused)
        runs.append(rm.simulate(model, q0, v0, 0.5, method="generalized_alpha", formulation="augmented", dt=0.01))
    fused, general = runs
    assert fused.nsteps == 50 and 5 <= fused.velocity_projections <= 45, fused.velocity_projections
    assert general.velocity_projections == fused.velocity_projections
    worst = max(_row_gaps(model, z, zd).max() for z, zd in zip(fused.z, fused.zd, strict=True))
    assert worst <= tol * (1.0 + 1e-9), worst
    assert np.abs(general.zd[-1] - fused.zd[-1]).max() < 1e-9
    assert np.abs(general.z[-1] - fused.z[-1]).max() < 1e-12


def test_the_whip_of_a_short_chain_runs_through_at_rho_inf_0_9_with_the_velocities_projected(monkeypatch):
    """30 slender links tilted 0.5 rad with the push, rho_inf = 0.9, dt = 0.01 s, 0.8 s: the whip reaches the free
    end near t = 0.5 s. The index-3 step leaves its velocities off the joints' velocity rows along the constraints'
    normals, by the scheme's spurious root (changing sign each step, damped by rho_inf a step); without the
    projection (PROJECT_VELOCITIES off: the plain index-3 step) the free end's velocity gaps grow after the whip
    until Newton fails (measured: at t = 0.77 s, every split of the step down to dt / 16). With it the run reaches
    0.8 s with no split step, G v = 0 at every step's end to round-off, the tip within 5e-3 m of dopri5's (rtol 1e-9,
    joint coordinates) at every step's end and within 1e-3 m at the end."""
    model, q0, v0 = _tilted_chain(30, 0.5)
    monkeypatch.setattr(augmented3d_implicit, "PROJECT_VELOCITIES", False)
    with pytest.raises(SimulationError, match=r"at t = 0\.7"):
        rm.simulate(model, q0, v0, 0.8, method="generalized_alpha", formulation="augmented", dt=0.01, every=10**9)
    monkeypatch.setattr(augmented3d_implicit, "PROJECT_VELOCITIES", True)
    result = rm.simulate(model, q0, v0, 0.8, method="generalized_alpha", formulation="augmented", dt=0.01)
    assert result.t[-1] == 0.8 and result.nsteps == 80 and result.newton_split_steps == 0
    assert result.velocity_projections == 80  # (every step's gaps beyond the Newton tolerance's reach)
    assert result.constraint_drift.max() < 1e-12
    gaps = [np.abs(augmented3d.constraints(model, z, zd)[2]).max() / np.abs(zd).max()
            for z, zd in zip(result.z, result.zd, strict=True)]
    assert max(gaps) < 1e-13, max(gaps)
    reference = rm.simulate(model, q0, v0, 0.8, method="dopri5", rtol=1e-9, atol=1e-9, t_eval=result.t)

    def tip(q):
        return rm.point_kinematics(model, q, np.zeros(model.nv), 29, (0.0, 0.0, -1.0 / 30))[0]

    errors = [np.linalg.norm(tip(a) - tip(b)) for a, b in zip(result.q, reference.q, strict=True)]
    assert max(errors) < 5e-3 and errors[-1] < 1e-3, (max(errors), errors[-1])


def test_the_projected_steps_of_a_spherical_chain_converge_at_second_order():
    """The fused passes with the projection (a chain of spherical joints, constant joint torques), against the
    recursive route's dopri5 run over 0.3 s at dt = 4e-3, 2e-3, 1e-3 s: the coordinates, the rates and tau's work
    converge at second order (error ratios about 4 when dt halves), G v = 0 at the end."""
    model, q0, v0 = _tilted_chain(6, 0.5)
    tau = 0.01 * np.sin(np.arange(model.nv) + 1.0)
    reference = rm.simulate(model, q0, v0, 0.3, rtol=1e-11, atol=1e-12, tau=tau)
    errors = []
    for dt in (4e-3, 2e-3, 1e-3):
        result = rm.simulate(model, q0, v0, 0.3, method="generalized_alpha", formulation="augmented", dt=dt, tau=tau,
                             every=10**9)
        assert np.abs(augmented3d.constraints(model, result.z[-1], result.zd[-1])[2]).max() < 1e-13
        errors.append((np.abs(rm.difference(model, reference.q[-1], result.q[-1])).max(),
                       np.abs(reference.qd[-1] - result.qd[-1]).max(),
                       abs(result.applied_work[-1] - reference.applied_work[-1])))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((3.5 < ratios) & (ratios < 4.6)), (errors, ratios)


def test_the_hanging_swing_in_absolute_coordinates_follows_the_linear_modes_at_second_order():
    """``studies.hanging_swing_3d`` on the absolute route (formulation="augmented"): 10 rods, mode 1 along x and
    mode 2 along y, generalized_alpha over 2 s. Against the linear solution the error is the scheme's phase error,
    second order: dt / 2 takes it down 4x (measured 2.2e-2 and 5.6e-3 of the amplitude, ratio 3.98; the nonlinear
    terms, about 1e-6 relative, are below 1e-3 of them), while the joint-coordinate route's generalized_alpha at the
    same dt, a different discretisation, lands elsewhere (so the option reached the run), but only by the nonlinear
    terms: the linearised swing is one linear system in either set of coordinates, on which the scheme is the
    same, so the two differ by less than amplitude^2 relative, 1e-6 (measured 7.2e-8 of the amplitude)."""
    runs = [rm.studies.hanging_swing_3d(10, (1e-3, 5e-4), 2.0, "generalized_alpha", modes=(1, 2), dt=dt,
                                        formulation=formulation)
            for dt, formulation in ((0.02, "augmented"), (0.01, "augmented"), (0.02, "recursive"))]
    coarse, fine, joints = runs
    assert 3.7 < coarse["max_rel_error"] / fine["max_rel_error"] < 4.3, (coarse["max_rel_error"],
                                                                        fine["max_rel_error"])
    apart = np.abs(coarse["tilts"] - joints["tilts"]).max() / 1e-3
    assert 1e-8 < apart < 1e-6, apart
