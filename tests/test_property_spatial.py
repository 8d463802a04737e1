"""The property test of ``test_property`` over more of the spatial models and the implicit methods' options (that
file has the spatial per-call functions on a chain of a revolute and a spherical joint, and generalized_alpha's
options): the functions of a tree of every moving joint type with force elements, the spatial loop layer, assembly
and statics, and bdf's options, each called with one hostile argument, either return a finite result or raise one
of the promised exceptions with a message of this package's own."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_property import KINDS, case, check_outcome, vec, vectors

import recursive_mbd as rm
from recursive_mbd.dynamics import spatial_loops

# Not in the NUMBA_BOUNDSCHECK run of CI, for test_property's reason.


def _spatial_tree():
    """Every kind of joint that moves: free base, spherical, universal, revolute, prismatic, with force elements."""
    model = rm.Model3D(name="mixed tree")
    model.add_body("ground", "free", mass=2.0, inertia=(0.02, 0.03, 0.04, 0.0, 0.0, 0.0), name="base")
    model.add_body("base", "spherical", parent_point=(0.1, 0.0, 0.0), mass=1.0, inertia=0.01, com=(0.0, 0.0, -0.2),
                   name="ball")
    model.add_body("ball", "universal", parent_point=(0.0, 0.0, -0.4), mass=0.5, inertia=0.005,
                   com=(0.0, 0.0, -0.1), name="cross")
    model.add_body("cross", "revolute", parent_point=(0.0, 0.0, -0.2), axis=(0.0, 1.0, 0.0), mass=0.3,
                   inertia=0.002, com=(0.1, 0.0, 0.0), name="hinge")
    model.add_body("hinge", "prismatic", parent_point=(0.2, 0.0, 0.0), axis=(1.0, 0.0, 0.0), mass=0.2,
                   inertia=0.001, name="slider")
    model.add_joint_spring_damper("ball", stiffness=5.0, damping=0.1)
    model.add_spring_damper("base", (0.0, 0.1, 0.0), "slider", (0.0, 0.0, 0.0), stiffness=20.0, damping=0.2,
                            rest_length=0.3)
    return model


TREE = _spatial_tree()
V = np.linspace(-0.5, 0.5, TREE.nv)
Q = rm.integrate_configuration(TREE, TREE.neutral(), V, dt=0.3)  # every joint off its zero
GOVERNOR = rm.models.centrifugal_governor(closed=True)
QG = GOVERNOR.q(0.7)
VG = np.array([10.0, 0.0, 0.0, 0.0])
TOP = rm.models.heavy_top()
NQ, NV = TREE.nq, TREE.nv

CASES = [
    case("mass_matrix_3d", rm.mass_matrix, dict(model=TREE, q=Q), dict(q=vec(NQ))),
    case("bias_forces_3d", rm.bias_forces, dict(model=TREE, q=Q, qd=V), dict(q=vec(NQ), qd=vec(NV))),
    case("element_forces_3d", rm.element_forces, dict(model=TREE, q=Q, qd=V, t=0.0),
         dict(q=vec(NQ), qd=vec(NV), t="scalar")),
    case("forward_kinematics_3d", rm.forward_kinematics, dict(model=TREE, q=Q, qd=V), dict(q=vec(NQ), qd=vec(NV))),
    case("integrate_configuration", rm.integrate_configuration, dict(model=TREE, q=Q, v=V, dt=0.1),
         dict(q=vec(NQ), v=vec(NV), dt="scalar")),
    case("loop_dynamics_3d", spatial_loops.loop_dynamics, dict(model=GOVERNOR.model, q=QG, v=VG, tau=None),
         dict(q=vec(4), v=vec(4), tau=vec(4))),
    case("project_3d", spatial_loops.project, dict(model=GOVERNOR.model, q=QG, v=VG, tol=1e-12, max_iter=20),
         dict(q=vec(4), v=vec(4), tol="scalar", max_iter="int")),
    case("assemble_3d", rm.assemble, dict(model=GOVERNOR.model, q_guess=QG, fixed=(), tol=1e-12, max_iter=50),
         dict(q_guess=vec(4), fixed="indices", tol="scalar", max_iter="int")),
    case("static_equilibrium_3d", rm.static_equilibrium, dict(model=TOP, q_guess=TOP.neutral(), tau=None),
         dict(q_guess=vec(4), tau=vec(3))),
    case("simulate_3d", rm.simulate, dict(model=TREE, q0=Q, qd0=V, t_end=0.01, rtol=1e-6, atol=1e-8, every=1,
                                          max_step=np.inf, first_step=None, progress=False),
         dict(q0=vec(NQ), qd0=vec(NV), rtol="scalar", atol="scalar", every="int", max_step="scalar",
              first_step="scalar")),
    # the implicit methods' options, planar and spatial, loops included
    case("generalized_alpha_3d_loops", rm.simulate,
         dict(model=GOVERNOR.model, q0=QG, qd0=VG, t_end=0.01, method="generalized_alpha", dt=1e-3, rho_inf=0.6),
         dict(q0=vec(4), qd0=vec(4), dt="scalar", rho_inf="scalar")),
    case("bdf", rm.simulate,
         dict(model=rm.chains.serial_chain(3), q0=np.full(3, 0.3), qd0=np.zeros(3), t_end=0.01, method="bdf",
              rtol=1e-6, atol=1e-8, max_order=5, newton_tol=None, max_steps=1000),
         dict(rtol="scalar", atol="scalar", max_order="int", newton_tol="scalar", max_steps="int")),
    case("bdf_3d", rm.simulate,
         dict(model=TREE, q0=Q, qd0=V, t_end=0.01, method="bdf", rtol=1e-6, atol=1e-8, max_order=5),
         dict(q0=vec(NQ), qd0=vec(NV), rtol="scalar", atol="scalar", max_order="int")),
]


@pytest.mark.parametrize("function, kwargs, kinds", CASES)
@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_arguments_to_spatial_models_and_implicit_options_give_a_promised_error_or_a_finite_result(
        function, kwargs, kinds, data):
    name = data.draw(st.sampled_from(sorted(kinds)), label="argument")
    kind = kinds[name]
    bad = data.draw(vectors(kind[1]) if isinstance(kind, tuple) else KINDS[kind], label=name)
    check_outcome(function, {**kwargs, name: bad})
