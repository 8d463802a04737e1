"""The joint loads in the Newton matrix of generalized_alpha in absolute coordinates (``augmented3d_implicit``,
"Loads that depend on the state"; ``_kernels.augmented.loads3d``): a constant tau's turning with the bodies, the
joints' spring-dampers and a tau function's own blocks against central differences of the step's residual on a
random tree of every joint type; the Newton iterations a step on damped chains; drivers with tau functions and
elements against the recursive route's dopri5 run."""

import numpy as np
import pytest
from _helpers import swinging_chain
from spatial_reference import random_spatial_tree
from test_augmented3d_implicit import Step, _jacobian, _spherical_tree
from test_augmented3d_implicit_features import ABS, _reference, _sprung_chain, _state_error
from test_spatial_simulate import ARM, SLIDER, _arm_with_slider

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import implicit3d as kernels
from recursive_mbd._kernels.spatial.layout import FIXED, FREE, JTYPE, NVJ, QIDX, SPHERICAL, VIDX
from recursive_mbd.integrate import augmented3d_implicit
from recursive_mbd.integrate.spatial_loop import _SpatialInputs


class LoadedStep(Step):
    """``Step`` with the run's joint loads: tau (constant (nv,) or a function tau(t, q, v)) and the model's
    elements, evaluated at each x's joint state as the run evaluates them (``_Loads.at``), and their blocks in the
    Newton matrix (``kernels.joint_load_blocks``; ``blocks=False``: left out)."""

    def __init__(self, model, q, v, tau, blocks=True, **options):
        super().__init__(model, q, v, **options)
        self.arrays = augmented3d_implicit._Arrays(model, self.starts, loaded=True)
        function = callable(tau)
        self.loads = augmented3d_implicit._Loads(model, _SpatialInputs(model, tau, None), tau if not function else
                                                 np.zeros(0), self.arrays, augmented3d_implicit._Angles(model, q))
        self.blocks = blocks
        self.t = 0.3

    def joint_forces(self):
        self.loads.at(self.t, self.arrays.zp, self.arrays.zdp)
        return self.loads.tau

    def factored(self, x, rhs):
        m, a = self.model, self.arrays
        self.residual(x)
        vdot, lam = self.split(x)
        kload = a.loads[0]
        if self.blocks:
            if self.loads.by_state:
                self.loads._tau_blocks(self.t)
            kernels.joint_load_blocks(m.body_int, m.body_real, *a.loads[1:6], self.loads.tau, *a.loads[6:8], a.zp,
                                      a.zbp, a.zdp, a.tangent, self.coef[5], self.coef[6],
                                      augmented3d_implicit.radii_of_gyration(m), kload, *a.loads[8:])
        else:
            kload = kload[:0]
        assert kernels.factor(m.body_int, m.body_real, self.starts, a.zp, a.zbp, vdot, lam, a.rb, a.tangent,
                              self.coef[5], self.coef[6], a.jc, a.jp, a.diag, a.api, a.lu, a.piv, a.wm, kload) == 0
        return lam, *self.split(np.array(rhs, dtype=float))


def _loaded_tree(springs, seed=80):
    """The random tree of every joint type of ``test_augmented3d_implicit`` with, where ``springs``, a stiff and
    strongly damped spring-damper on every joint that takes one (a random rest, a spherical joint's a random
    rotation)."""
    rng = np.random.default_rng(seed)
    model = rm.Model3D(gravity=(0.3, -0.5, -9.81))
    for body in random_spatial_tree(rng, 9):
        model.add_body(**body)
    for i in range(model.nbodies) if springs else ():
        joint = model.body(i)["joint"]
        if joint in ("free", "fixed"):
            continue
        if joint == "spherical":
            rest = rng.normal(size=4)
            model.add_joint_spring_damper(i, stiffness=40.0, damping=3.0, rest=rest / np.linalg.norm(rest))
        else:
            nv = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "planar": 3}[joint]
            model.add_joint_spring_damper(i, stiffness=rng.uniform(20.0, 60.0, nv), damping=rng.uniform(1.0, 4.0, nv),
                                          rest=rng.normal(size=nv))
    model.compile()
    assert len({model.body(i)["joint"] for i in range(model.nbodies)}) == 8  # every joint type
    return model, rng


def _own_state_tau(model):
    """A tau function each joint's part of which reads only that joint's own coordinates and rates (its diagonal
    blocks are the whole of its derivative): a damper and a nonlinear spring on every coordinate (a quaternion's
    vector part)."""
    bi = model.body_int

    def tau(t, q, v):
        out = -2.0 * v - 0.5 * np.sin(t) * v**3
        for i in range(model.nbodies):
            k, nv, jt = bi[i, QIDX], bi[i, NVJ], bi[i, JTYPE]
            if jt == SPHERICAL:
                out[bi[i, VIDX]:bi[i, VIDX] + 3] -= 30.0 * q[k + 1:k + 4] * q[k]
            elif jt == FREE:
                out[bi[i, VIDX]:bi[i, VIDX] + 3] -= 20.0 * np.sin(q[k:k + 3])
            elif jt != FIXED:
                out[bi[i, VIDX]:bi[i, VIDX] + nv] -= 25.0 * np.sin(q[k:k + nv])
        return out

    return tau


@pytest.mark.parametrize("case", ["constant tau", "joint spring-dampers", "tau function"])
def test_the_newton_matrix_holds_the_joint_loads_on_a_random_tree_of_every_joint_type(case):
    """The O(N) elimination with the joint loads' blocks solves the Jacobian of the step's residual with the loads
    (central differences of steps 1e-2 and 5e-3 with Richardson's extrapolation) to 2e-8 of the solution, at an
    iterate off the constraints, on the random tree of every joint type: a constant tau (its wrench turning with
    the child or the parent), stiff and strongly damped spring-dampers on every joint that takes one (spherical:
    the rotation vector from a random rest), and a tau function whose joints' parts read their own coordinates and
    rates only (its diagonal blocks by differences are its whole derivative). Without the blocks (the lagged matrix
    of the revision before them) the solution is off by more than 500 times the tolerance (measured: 3.4e-5 of
    itself for the constant tau, whose turning is a term c_stiff tau beside the inertia)."""
    model, rng = _loaded_tree(case == "joint spring-dampers")
    tau = _own_state_tau(model) if case == "tau function" else 3.0 * rng.normal(size=model.nv)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    v = rng.normal(size=model.nv)
    step = LoadedStep(model, q, v, tau)
    x0 = step.x0
    rhs = rng.normal(size=x0.size)
    expected = np.linalg.solve(_jacobian(step.residual, x0, 1e-2, 2), rhs)
    mine = step.solve(x0, rhs)
    assert np.abs(mine - expected).max() < 2e-8 * np.abs(expected).max()
    lagged = LoadedStep(model, q, v, tau, blocks=False).solve(x0, rhs)
    assert np.abs(lagged - expected).max() > 1e-5 * np.abs(expected).max()


def test_the_fused_spherical_passes_hold_a_constant_taus_turning():
    """On a random tree of spherical joints whirling at up to 70 rad/s with joint torques of up to 10 N m, the
    fused passes' correction (``spherical_forward``) is the Newton correction of the residual's Jacobian by central
    differences to 1e-8 of its largest entry: the torque turns with the child (its body-axis moment row is
    constant, its parent's R_p^T R tau turns with both)."""
    model, rng = _spherical_tree(83, 8)
    q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    tau = 4.0 * rng.normal(size=model.nv)
    step = LoadedStep(model, q, 30.0 * rng.normal(size=model.nv), tau, seed=3)
    vdot, lam = step.split(step.x0)
    m, a = model, step.arrays
    r = step.residual(step.x0)  # leaves the state of x0 in a.zp, a.zbp, a.zdp, a.tangent
    fused = augmented3d_implicit._Arrays(model, step.starts, fused=True)
    info = np.zeros(4)
    assert kernels.spherical_forward(m.body_int, m.body_real, m.gravity, step.starts, tau, a.zp, a.zbp, a.zdp, vdot,
                                     lam, a.tangent, step.coef[5], step.coef[6], fused.rc, fused.diag, fused.wm,
                                     fused.loc, fused.xb, fused.xj, fused.power, info) == 0
    kernels.spherical_back_substitute(m.body_int, step.starts, fused.wm, fused.diag, fused.xb, fused.xj)
    n = m.nbodies
    np.testing.assert_allclose(fused.rc, r[6 * n:], rtol=0, atol=1e-12 * np.abs(r).max())
    assert abs(info[2] - np.abs(r[:6 * n]).max()) <= 1e-12 * np.abs(r).max()
    mine = np.concatenate((fused.xb.ravel(), fused.xj))
    expected = np.linalg.solve(_jacobian(step.residual, step.x0, 0.1, 3), -r)
    assert np.abs(mine - expected).max() < 1e-8 * np.abs(expected).max()
    general = step.solve(step.x0, -r)  # the general kernels with the loads' blocks by differences: the same
    assert np.abs(general - mine).max() < 1e-9 * np.abs(mine).max()


@pytest.mark.parametrize("c", [0.1, 1.0])
def test_joint_dampers_by_a_tau_function_take_few_newton_iterations(c):
    """tau = -c v on the three-joint swinging chain (``_helpers.swinging_chain``), 0.2 s at dt = 0.01 s: with the tau
    function's own blocks in the matrix the iteration converges as without loads (measured: 3.00 iterations a step
    at c = 0.1 and at c = 1, no split; the lagged matrix took 7.80 and 47.6 with every step split, its contraction
    c_damp c over the joints' inertias of about 0.01 kg m^2), and the run follows the recursive route's dopri5 run
    to the scheme's error."""
    model, q0, v0 = swinging_chain()

    def damper(t, q, v):
        return -c * v

    run = rm.simulate(model, q0, v0, 0.2, dt=0.01, tau=damper, **ABS)
    assert run.newton_split_steps == 0 and run.newton_iterations <= 3.2 * run.nsteps
    assert _state_error(run, _reference(model, q0, v0, 0.2, tau=damper)) < 1e-3


def test_force_elements_take_fewer_newton_iterations():
    """The chain with a spring-damper on each joint, two point spring-dampers, a force of time and a follower torque
    (``_sprung_chain``), 0.3 s at dt = 0.01 s: the joints' spring-dampers in the matrix, the point spring-dampers,
    the force and the torque lagged (their generalised forces reach every joint to the root), measured 5.40
    iterations a step (6.93 with every load lagged)."""
    model, q0, v0 = _sprung_chain()
    run = rm.simulate(model, q0, v0, 0.3, dt=0.01, **ABS)
    assert run.newton_split_steps == 0 and run.newton_iterations <= 5.6 * run.nsteps


def test_driven_joints_with_a_tau_function_and_elements_follow_the_recursive_dopri5_run_at_second_order():
    """Drivers together with state-dependent loads: the arm of ``test_augmented3d_implicit`` (a spherical root, a
    driven revolute and a driven prismatic joint) with a spring-damper on each joint (the driven joints' at their
    drivers' coordinates and rates, as the recursive route evaluates them), a point spring-damper from the ground
    to the slider and a tau function (a damper and a spring on the root's rotation), against the recursive route's
    dopri5 run (rtol 1e-12) over 0.5 s at dt = 0.005 and 0.0025 s: the free coordinates and rates, the driving
    forces and the applied and dissipated work converge at second order (errors about 4x smaller when dt halves),
    the driven coordinates are their drivers' values at every step end."""
    model = _arm_with_slider()
    model.add_joint_spring_damper("root", stiffness=2.0, damping=0.3)
    model.add_joint_spring_damper("arm", stiffness=1.5, damping=0.2, rest=0.1)
    model.add_joint_spring_damper("slider", stiffness=4.0, damping=0.5)
    model.add_spring_damper("ground", (0.3, -0.2, -1.0), "slider", (0.0, 0.0, 0.0), stiffness=8.0, damping=0.4,
                            rest_length=0.2)
    model.compile()
    q0, v0 = model.neutral(), np.array([0.5, -0.4, 1.0, 0.0, 0.0])

    def tau(t, q, v):
        out = np.zeros(5)
        out[:3] = -0.4 * v[:3] - 1.5 * q[1:4] * q[0] + 0.2 * np.sin(3.0 * t)
        return out

    drivers = {"arm": ARM, "slider": SLIDER}
    t_end = 0.5
    reference = rm.simulate(model, q0, v0, t_end, rtol=1e-12, atol=1e-12, drivers=drivers, tau=tau,
                            t_eval=[0.0, t_end])
    forces = reference.driving_forces()[-1]
    errors = []
    for dt in (0.005, 0.0025):
        result = rm.simulate(model, q0, v0, t_end, dt=dt, drivers=drivers, tau=tau, **ABS)
        assert result.newton_split_steps == 0 and result.newton_iterations <= 4 * result.nsteps
        assert result.constraint_drift.max() < 1e-12  # joints and drivers at every step end
        for body, (f, _, _) in drivers.items():
            np.testing.assert_allclose(result.q[:, model.q_slice(body).start], [f(t) for t in result.t], rtol=0,
                                       atol=1e-12)
        errors.append((_state_error(result, reference), np.abs(result.driving_forces()[-1] - forces).max(),
                       abs(result.applied_work[-1] - reference.applied_work[-1]),
                       abs(result.dissipated_work[-1] - reference.dissipated_work[-1])))
    errors = np.array(errors)
    assert np.all((errors[0] / errors[1] > 3.5) & (errors[0] / errors[1] < 4.6)), errors
    assert errors[1, 0] < 2e-5 and reference.dissipated_work[-1] > 0.01, errors
