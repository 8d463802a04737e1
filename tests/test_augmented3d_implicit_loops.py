"""generalized_alpha in absolute coordinates on spatial models with closed loops (``rm.simulate(model3d,
method="generalized_alpha", formulation="augmented")``, ``integrate.augmented3d_implicit``): the Newton matrix with
the loops' rows and their geometric stiffness against finite differences of the step's residual, the trajectories
and loop multipliers of an RSSR linkage and of the closed governor against dop853 and the recursive route's
generalized_alpha (second order in dt), energy over a long rho_inf = 1 run, the loops closed at round-off, and the
failures that name the loop."""

import numpy as np
from spatial_reference import random_spatial_tree
from test_augmented3d_implicit import Step, _jacobian

import recursive_mbd as rm
from recursive_mbd._kernels.augmented import implicit3d as kernels


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
        vdot, lam = self.split(x)
        kernels.update_state(self.z, self.zb, self.acc, self.vdot0, self.coef, vdot, a.zp, a.zbp, a.zdp, a.tangent)
        assert kernels.residual(m.body_int, m.body_real, m.gravity, self.starts, np.zeros(0), self.target, a.zp,
                                a.zdp, vdot, lam, self.coef[5], a.rb, a.rc, a.jc, a.jp, a.res, a.gam, a.power) == 0
        assert kernels.loop_residual(m.body_real, *self.loops[:2], self.starts[-1], self.coef[5], a.zp, a.zdp, lam,
                                     a.rb, a.rc, *self.loops[2:10]) == 0
        return np.concatenate((a.rb.ravel(), a.rc))

    def solve(self, x, rhs):
        m, a = self.model, self.arrays
        self.residual(x)
        vdot, lam = self.split(x)
        assert kernels.factor(m.body_int, m.body_real, self.starts, a.zp, a.zbp, vdot, lam, a.rb, a.tangent,
                              self.coef[5], self.coef[6], a.jc, a.jp, a.diag, a.api, a.lu, a.piv, a.wm) == 0
        xb, xj = self.split(np.array(rhs, dtype=float))
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
