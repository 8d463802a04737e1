"""Force elements of spatial models (issue 18, item 3): point-to-point and joint spring-dampers, forces and torques
in ground or body axes. Their generalised forces Q against independent references (finite differences of the
spring potential along integrate_configuration; the virtual power J^T F with the point Jacobians of
tests/spatial_reference.py; the planar route on planar models rebuilt as spatial ones), energy conservation and the
power balance in rm.simulate, static equilibrium against closed forms, model files, and bad input."""

import io

import numba
import numpy as np
import pytest
from _helpers import spring_linkage
from spatial_reference import (
    SpatialReference,
    axis_rotation,
    planar_as_spatial,
    random_planar_spec,
    random_spatial_tree,
)

import recursive_mbd as rm
from recursive_mbd import cli
from recursive_mbd.errors import ModelError, SimulationError, StateError
from recursive_mbd.files.io import FileFormatError
from recursive_mbd.integrate import runs

# Under NUMBA_BOUNDSCHECK=1 in CI (.ci/run) only the kernel-level tests marked `boundscheck` below (the element
# kernel and forward dynamics): compiling the spatial time loops once more there would take CI past its budget.

EUCLIDEAN = ("revolute", "prismatic", "cylindrical", "universal", "planar")


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


def _tree(bodies, gravity):
    model = rm.Model3D(gravity=gravity)
    for body in bodies:
        model.add_body(**body)
    return model


def _rest_quaternion(rng):
    quat = np.concatenate(([1.0], 0.4 * rng.normal(size=3)))
    return quat / np.linalg.norm(quat)


def _add_springs(model, bodies, rng, damping):
    """Point-to-point spring-dampers (body to body, body to ground, with preloads) and a joint spring-damper on
    every joint that takes one (per-dof values, rest offsets; spherical: a rest quaternion)."""
    n = len(bodies)
    for e in range(4):
        a = int(rng.integers(-1, n))
        b = int(rng.integers(0, n))
        if a == b:
            a = -1
        model.add_spring_damper(a, rng.uniform(-1, 1, 3), b, rng.uniform(-1, 1, 3), stiffness=rng.uniform(5, 20),
                                damping=damping * rng.uniform(0.5, 2.0), rest_length=rng.uniform(0.1, 0.5),
                                preload=rng.normal(), name=f"spring{e}")
    for i, body in enumerate(bodies):
        joint = body["joint"]
        if joint in EUCLIDEAN:
            ndof = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "planar": 3}[joint]
            model.add_joint_spring_damper(i, rng.uniform(1, 5, ndof), damping * rng.uniform(0.5, 2.0, ndof),
                                          rest=rng.normal(size=ndof))
        elif joint == "spherical":
            model.add_joint_spring_damper(i, rng.uniform(1, 5), damping * rng.uniform(0.5, 2.0),
                                          rest=_rest_quaternion(rng))


def _small_state(model, rng, scale=0.5):
    """A state near the springs' rest (their rotation vectors well inside |phi| < pi, where V is smooth)."""
    q = rm.integrate_configuration(model, model.neutral(), scale * rng.normal(size=model.nv))
    return q, rng.normal(size=model.nv)


# ---- generalised forces against independent references ---------------------------------------------------------

@pytest.mark.boundscheck
@pytest.mark.parametrize("seed", range(4))
def test_spring_forces_are_minus_the_gradient_of_their_potential(seed):
    """Q_k = -dV/d delta_k along q (+) delta e_k (5-point central differences, h = 1e-3: error ~1e-12), for
    point-to-point springs with preloads and joint springs on every joint type (spherical: rotation vector)."""
    rng = np.random.default_rng(100 + seed)
    bodies = random_spatial_tree(rng, 7)
    model = _tree(bodies, (0.0, 0.0, -9.81))
    _add_springs(model, bodies, rng, damping=0.0)
    q, _ = _small_state(model, rng)
    rest = np.zeros(model.nv)
    forces = rm.element_forces(model, q, rest)["generalized_forces"]

    def potential(step, k):
        delta = np.zeros(model.nv)
        delta[k] = step
        return rm.element_forces(model, rm.integrate_configuration(model, q, delta), rest)["potential"]

    h = 1e-3
    gradient = np.array([(potential(-2 * h, k) - 8 * potential(-h, k) + 8 * potential(h, k) - potential(2 * h, k))
                         / (12 * h) for k in range(model.nv)])
    assert rel(forces, -gradient) < 1e-11  # measured: 7e-13


@pytest.mark.boundscheck
@pytest.mark.parametrize("seed", range(6))
def test_element_forces_equal_their_virtual_power_by_the_reference_jacobians(seed):
    """Q = sum J_point^T F + J_omega^T T, every force computed from the reference's point positions and velocities
    (spring-dampers with preloads, forces and torques in ground and body axes); joint spring-dampers by their
    formula, the spherical one's rotation vector from rm.difference."""
    rng = np.random.default_rng(seed)
    bodies = random_spatial_tree(rng, 8)
    ref = SpatialReference(bodies, (0.0, 0.0, -9.81))
    model = _tree(bodies, (0.0, 0.0, -9.81))
    n = len(bodies)
    springs = []
    for _ in range(3):
        a, b = int(rng.integers(-1, n)), int(rng.integers(0, n))
        a = -1 if a == b else a
        spring = (a, rng.uniform(-1, 1, 3), b, rng.uniform(-1, 1, 3), rng.uniform(5, 20), rng.uniform(0.5, 2),
                  rng.uniform(0.1, 0.5), rng.normal())
        model.add_spring_damper(*spring[:4], stiffness=spring[4], damping=spring[5], rest_length=spring[6],
                                preload=spring[7])
        springs.append(spring)
    loads = []  # (kind, body, point, vector, frame)
    for frame in ("ground", "body"):
        body, point, vector = int(rng.integers(0, n)), rng.normal(size=3), rng.normal(size=3)
        model.add_force(body, point, vector, frame=frame)
        loads.append(("force", body, point, vector, frame))
        body, vector = int(rng.integers(0, n)), rng.normal(size=3)
        model.add_torque(body, vector, frame=frame)
        loads.append(("torque", body, np.zeros(3), vector, frame))
    joint_springs = []
    for i, body in enumerate(bodies):
        if body["joint"] in EUCLIDEAN or body["joint"] == "spherical":
            size = ref.bodies[i]["v_slice"].stop - ref.bodies[i]["v_slice"].start
            if body["joint"] == "spherical":
                k, c, rest = rng.uniform(1, 5), rng.uniform(0.1, 1), _rest_quaternion(rng)
            else:
                k, c, rest = rng.uniform(1, 5, size), rng.uniform(0.1, 1, size), rng.normal(size=size)
            model.add_joint_spring_damper(i, k, c, rest=rest)
            joint_springs.append((i, k, c, rest))
    q, v = _small_state(model, rng, scale=1.0)
    rot, _ = ref.poses(q)

    def point(body, local):
        """Position, velocity and Jacobian (3, nv) of a body point (the ground: at rest)."""
        if body < 0:
            return np.asarray(local, float), np.zeros(3), np.zeros((3, model.nv))
        points = np.zeros((n, 3))
        points[body] = local
        _, jv, rot_, pos = ref.jacobians(q, points)
        return pos[body] + rot_[body] @ local, jv[body] @ v, jv[body]

    expected = np.zeros(model.nv)
    for a, pa, b, pb, k, c, rest, preload in springs:
        xa, va, ja = point(a, pa)
        xb, vb, jb = point(b, pb)
        d = xb - xa
        length = np.linalg.norm(d)
        tension = preload + k * (length - rest) + c * (d / length) @ (vb - va)
        expected += ja.T @ (tension * d / length) - jb.T @ (tension * d / length)
    jw, _, _, _ = ref.jacobians(q)
    for kind, body, local, vector, frame in loads:
        world = rot[body] @ vector if frame == "body" else vector
        if kind == "force":
            expected += point(body, local)[2].T @ world
        else:
            expected += jw[body].T @ world
    for i, k, c, rest in joint_springs:
        span = model.v_slice(i)
        if bodies[i]["joint"] == "spherical":
            at_rest = q.copy()
            at_rest[model.q_slice(i)] = rest
            phi = rm.difference(model, at_rest, q)[span]  # rest (x) exp(phi / 2) = quat
            expected[span] += -k * phi - c * v[span]
        else:
            expected[span] += -k * (q[model.q_slice(i)] - rest) - c * v[span]
    result = rm.element_forces(model, q, v)
    assert rel(result["generalized_forces"], expected) < 1e-12
    # the applied power: forces and torques only (springs and dampers have their own terms)
    power = sum((rot[b] @ f if fr == "body" else f) @ (point(b, p)[1] if kind == "force" else jw[b] @ v)
                for kind, b, p, f, fr in loads)
    assert abs(result["power"] - power) < 1e-12 * max(1.0, abs(power))


def test_planar_models_with_elements_rebuilt_as_spatial_give_the_planar_accelerations():
    """Random planar trees with spring-dampers, joint spring-dampers, forces (ground and body axes) and torques,
    rebuilt as spatial ones (all axes along z): rm.forward_dynamics, inverse dynamics and the spring energy agree
    with the planar route to 1e-12."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        spec = random_planar_spec(rng, 6)
        gravity = (0.7, -9.81)
        planar = rm.Model(gravity=gravity)
        for body in spec:
            planar.add_body(**{key: value for key, value in body.items() if key != "axis" or value is not None})
        spatial = _tree(planar_as_spatial(spec), (*gravity, 0.0))
        n = len(spec)
        for _ in range(3):
            a, b = int(rng.integers(-1, n)), int(rng.integers(0, n))
            a = -1 if a == b else a
            pa, pb = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
            k, c, rest = rng.uniform(5, 20), rng.uniform(0.5, 2), rng.uniform(0.1, 0.5)
            planar.add_spring_damper(a, pa, b, pb, k, c, rest_length=rest)
            spatial.add_spring_damper(a, (*pa, 0.0), b, (*pb, 0.0), k, c, rest_length=rest)
        for i, body in enumerate(spec):
            if body["joint"] in ("revolute", "prismatic"):
                k, c, rest = rng.uniform(1, 5), rng.uniform(0.1, 1), rng.normal()
                planar.add_joint_spring_damper(i, k, c, rest=rest)
                spatial.add_joint_spring_damper(i, k, c, rest=rest)
        for frame in ("ground", "body"):
            body, point, force = int(rng.integers(0, n)), rng.normal(size=2), rng.normal(size=2)
            planar.add_force(body, point, force, frame=frame)
            spatial.add_force(body, (*point, 0.0), (*force, 0.0), frame=frame)
        body, torque = int(rng.integers(0, n)), float(rng.normal())
        planar.add_torque(body, torque)
        spatial.add_torque(body, (0.0, 0.0, torque))
        if planar.nq == 0:
            continue
        q, qd, tau = rng.normal(size=planar.nq), rng.normal(size=planar.nq), rng.normal(size=planar.nq)
        qdd = rm.forward_dynamics(planar, q, qd, tau)
        assert rel(rm.forward_dynamics(spatial, q, qd, tau), qdd) < 1e-12
        assert rel(rm.inverse_dynamics(spatial, q, qd, qdd), tau) < 1e-12
        assert abs(rm.energy(spatial, q, qd)[1] - rm.energy(planar, q, qd)[1]) < 1e-12 * max(
            1.0, abs(rm.energy(planar, q, qd)[1]))


def test_dynamics_identities_with_elements():
    """ID(FD(tau)) = tau with the elements; FD by the mass-matrix route agrees; forward dynamics moves by exactly
    M^-1 Q when the elements are added (Q from element_forces)."""
    rng = np.random.default_rng(7)
    bodies = random_spatial_tree(rng, 6)
    model = _tree(bodies, (0.3, 0.0, -9.81))
    plain = _tree(bodies, (0.3, 0.0, -9.81))
    _add_springs(model, bodies, rng, damping=0.7)
    model.add_force(2, (0.1, 0.2, 0.3), lambda t: (np.sin(t), np.cos(t), t), frame="body")
    q, v = _small_state(model, rng)
    tau = rng.normal(size=model.nv)
    vdot = rm.forward_dynamics(model, q, v, tau, t=0.4)
    assert rel(rm.inverse_dynamics(model, q, v, vdot, t=0.4), tau) < 1e-10
    assert rel(rm.forward_dynamics(model, q, v, tau, t=0.4, method="mass_matrix"), vdot) < 1e-10
    loads = rm.element_forces(model, q, v, t=0.4)["generalized_forces"]
    assert rel(rm.forward_dynamics(plain, q, v, tau + loads), vdot) < 1e-12
    assert rel(rm.bias_forces(model, q, v), rm.bias_forces(plain, q, v)) == 0.0  # h holds no elements


# ---- time integration ---------------------------------------------------------------------------------------------

def _spring_model(damping, more=None):
    """The spring linkage (tests/_helpers.py) with a seeded random rest quaternion of the arm's joint spring."""
    return spring_linkage(damping, _rest_quaternion(np.random.default_rng(3)), more)


def test_energy_is_conserved_with_springs_only():
    model, q0, v0 = _spring_model(damping=0.0)
    result = rm.simulate(model, q0, v0, 2.0, method="dop853", rtol=1e-12, atol=1e-12)
    kinetic, potential = result.energy()
    total = kinetic + potential
    assert np.abs(total - total[0]).max() < 1e-11 * np.abs(kinetic).max()  # measured: 3e-13
    assert np.ptp(potential) > 0.1 * np.abs(kinetic).max()  # the springs did store energy
    assert result.dissipated_work[-1] == 0.0 and result.applied_work[-1] == 0.0


def test_energy_and_the_dampers_work_balance():
    """E(t) + dissipated - applied = E(0) with dampers, a constant follower force, a torque in ground axes that is
    a function of time, and tau."""
    model, q0, v0 = _spring_model(damping=0.4, more=lambda m: (
        m.add_force("slider", (0.0, 0.1, 0.0), (0.0, 1.0, 0.5), frame="body"),
        m.add_torque("arm", lambda t: (0.3 * np.sin(3 * t), 0.0, 0.2))))
    result = rm.simulate(model, q0, v0, 2.0, method="dop853", rtol=1e-12, atol=1e-12, tau=np.full(model.nv, 0.1))
    kinetic, _ = result.energy()
    assert result.dissipated_work[-1] > 0.1 * np.abs(kinetic).max()  # the dampers did work
    assert np.all(np.diff(result.dissipated_work) >= 0.0)
    per_element = result.element_forces()  # (nt, nelements, 3): the torque function's value at each sample
    assert per_element.shape == (result.t.size, model.nelements, 3)
    assert np.array_equal(per_element[:, -1, 0], 0.3 * np.sin(3 * result.t))
    assert np.abs(result.energy_balance()).max() < 1e-11 * np.abs(kinetic).max()  # measured: 1.2e-13


# ---- forces and torques that are functions of the state ----------------------------------------------------------

ANCHOR, TIP, K_PULL, C_PULL, C_TWIST = np.array([0.3, -0.2, -0.5]), np.array([0.05, 0.02, 0.0]), 30.0, 0.7, 0.05


def _pull_model(pull):
    """The spring linkage with ``pull(model)`` adding a spring-damper from ANCHOR to the slider's point TIP."""
    return spring_linkage(0.2, _rest_quaternion(np.random.default_rng(3)), pull)


def _pull(p, vp):
    """The force of a spring-damper of free length 0 from ANCHOR on a point at p moving at vp."""
    d = p - ANCHOR
    length = np.linalg.norm(d)
    return -(K_PULL * length + C_PULL * (d / length) @ vp) * d / length


def test_a_force_of_the_state_is_the_spring_damper_it_writes_in_every_method():
    """force(t, q, v) on a body point (ground axes, a Python function of rm.point_kinematics) against the same
    spring-damper as a model element: the same loads (and J^T F as tau), and the same runs in every method."""
    holder = []

    def state_force(t, q, v):
        return _pull(*rm.point_kinematics(holder[0], q, v, "slider", TIP))

    model, q0, v0 = _pull_model(lambda m: m.add_force("slider", TIP, state_force, name="pull"))
    holder.append(model)
    element, _, _ = _pull_model(lambda m: m.add_spring_damper("ground", ANCHOR, "slider", TIP, K_PULL, C_PULL))
    plain, _, _ = _pull_model(None)
    force = _pull(*rm.point_kinematics(model, q0, v0, "slider", TIP))
    loads = rm.element_forces(model, q0, v0)
    assert np.array_equal(loads["per_element"][-1], force)
    assert rel(rm.forward_dynamics(model, q0, v0), rm.forward_dynamics(element, q0, v0)) < 1e-14
    tau = rm.point_jacobian(model, q0, "slider", TIP).T @ force  # J^T F, by the Jacobian of the kinematics module
    assert rel(rm.forward_dynamics(model, q0, v0), rm.forward_dynamics(plain, q0, v0, tau)) < 1e-12
    # statics and linearisation take it through the same per-call evaluation, at their own (q, v)
    rest = rm.static_equilibrium(element, q0, tol=1e-12).q
    assert np.abs(rm.static_equilibrium(model, q0, tol=1e-12).q - rest).max() < 1e-10
    linear, reference = rm.linearize(model, rest), rm.linearize(element, rest)
    assert rel(linear.C, reference.C) < 1e-8 and rel(linear.K, reference.K) < 1e-8
    # measured against the element: 2e-11 (dopri5, scipy), 8e-12 (dop853), 0 (rk4), 3e-15 (generalized_alpha),
    # 1e-9 (bdf: the work terms differ, so its steps do)
    for method, options, tol in (("dopri5", {}, 1e-9), ("dop853", {}, 1e-9), ("rk4", {"dt": 1e-3}, 1e-12),
                                 ("generalized_alpha", {"dt": 1e-3}, 1e-12), ("bdf", {}, 1e-7),
                                 ("scipy:RK45", {}, 1e-9)):
        tols = {} if "dt" in options else {"rtol": 1e-10, "atol": 1e-10}
        runs_ = [rm.simulate(m, q0, v0, 0.5, method=method, **options, **tols) for m in (model, element)]
        assert np.abs(runs_[0].qd[-1] - runs_[1].qd[-1]).max() < tol, method
        assert np.abs(runs_[0].q[-1] - runs_[1].q[-1]).max() < tol, method


@numba.njit
def _compiled_pull(t, q, v):
    """The spring-damper of ``_pull`` on the origin of a free body at q[:3] moving at v[:3] (ground axes)."""
    d = q[:3] - ANCHOR
    length = np.sqrt(d @ d)
    return -(K_PULL * length + C_PULL * (d @ v[:3]) / length) * d / length


@numba.njit
def _compiled_spring(t, q, v):
    """The undamped spring of free length 0 from ANCHOR on the origin of a free body at q[:3]."""
    return -K_PULL * (q[:3] - ANCHOR)


@numba.njit
def _compiled_twist(t, q, v):
    """A rotational damper on a free body, in its own axes (v[3:6]: its angular velocity there): a tuple."""
    return -C_TWIST * v[3], -C_TWIST * v[4], -C_TWIST * v[5]


def _puck(force=None, torque=None, damping=C_PULL):
    """A free body with a bob on a spherical joint; the pull as a force of the state (or as a spring-damper
    element), the twist as a torque of the state in body axes."""
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    model.add_body("ground", "free", mass=1.5, inertia=(0.05, 0.07, 0.09, 0.01, 0.0, 0.0), com=(0.02, 0.0, 0.01),
                   name="puck")
    model.add_body("puck", "spherical", parent_point=(0.0, 0.0, -0.3), child_point=(0.0, 0.0, 0.2), mass=0.6,
                   inertia=0.02, name="bob")
    if force is None:
        model.add_spring_damper("ground", ANCHOR, "puck", (0.0, 0.0, 0.0), K_PULL, damping)
    else:
        model.add_force("puck", (0.0, 0.0, 0.0), force, name="pull")
    if torque is not None:
        model.add_torque("puck", torque, frame="body", name="twist")
    return model


def _twist_as_tau(t, q, v):
    tau = np.zeros(9)
    tau[3:6] = -C_TWIST * v[3:6]  # a free joint's torque in the child frame
    return tau


def test_compiled_forces_of_the_state_run_inside_the_time_loop(monkeypatch):
    """numba-compiled force(t, q, v) and torque(t, q, v): called without leaving compiled code (the Python inputs
    run once, the start's check), the same run as the Python functions (bit for bit) and as the spring-damper
    element with the torque as tau; without damping T + V + k L^2 / 2 stays constant."""
    calls = []
    call = runs._Inputs.__call__
    monkeypatch.setattr(runs._Inputs, "__call__", lambda self, *args: calls.append(1) or call(self, *args))
    compiled = _puck(_compiled_pull, _compiled_twist)
    python = _puck(_compiled_pull.py_func, _compiled_twist.py_func)
    element = _puck()
    q0 = rm.integrate_configuration(element, element.neutral(), (0.1, 0.2, -0.1, 0.3, -0.2, 0.5, 0.2, 0.1, -0.3))
    v0 = np.array([0.5, -0.4, 1.0, 0.3, -0.6, 0.2, 0.1, 0.4, -0.2])
    for method, options in (("dopri5", {"rtol": 1e-10, "atol": 1e-10}), ("generalized_alpha", {"dt": 2e-3})):
        calls.clear()
        fast = rm.simulate(compiled, q0, v0, 0.5, method=method, **options)
        assert len(calls) == 1, method
        slow = rm.simulate(python, q0, v0, 0.5, method=method, **options)
        assert len(calls) > 100
        assert np.array_equal(fast.q, slow.q) and np.array_equal(fast.qd, slow.qd)
        reference = rm.simulate(element, q0, v0, 0.5, method=method, tau=_twist_as_tau, **options)
        assert np.abs(fast.q[-1] - reference.q[-1]).max() < 1e-9, method  # measured: 5e-12, 2e-16
    undamped = _puck(_compiled_spring)  # a spring from ANCHOR: T + V + k L^2 / 2 is constant
    result = rm.simulate(undamped, q0, v0, 1.0, method="dop853", rtol=1e-12, atol=1e-12)
    kinetic, potential = result.energy()
    total = kinetic + potential + 0.5 * K_PULL * np.sum((result.q[:, :3] - ANCHOR) ** 2, axis=1)
    assert np.ptp(total) < 1e-11 * np.abs(kinetic).max()
    assert np.ptp(kinetic) > 0.1 * np.abs(kinetic).max()  # the spring did store energy


@numba.njit
def _fence(t, q, v):
    """No force inside |x| <= 1; NaN beyond x = 1, an exception beyond x = -1."""
    if q[0] > 1.0:
        return np.array([np.nan, 0.0, 0.0])
    if q[0] < -1.0:
        raise ValueError("left the fence")
    return np.zeros(3)


@numba.njit
def _matrix_force(t, q, v):
    return np.zeros((3, 3))


def test_failing_functions_of_the_state_stop_the_run_naming_the_element():
    """A compiled function that returns NaN or raises stops the run with SimulationError naming the element and
    the time (its exception the cause), the samples so far kept; one numba cannot call so, or a function of two
    arguments, is a TypeError before the run; a Python function of the state sees (t, q, v) in the per-call
    functions."""
    model = _puck(_fence)
    q0 = model.neutral()
    for method, options, speed in (("dopri5", {}, 25.0), ("generalized_alpha", {"dt": 0.01}, -25.0)):
        what = "must return 3 finite" if speed > 0 else "raised"
        with pytest.raises(SimulationError, match=rf"{method} failed at t = 0\.0[4-9]\d* s: element 'pull': its "
                           rf"function {what}") as info:
            rm.simulate(model, q0, np.concatenate(([speed], np.zeros(8))), 1.0, method=method, **options)
        assert 0.0 < info.value.result.t[-1] <= 0.04 < info.value.t and info.value.result.status == "failed"
        assert (info.value.__cause__ is None) if speed > 0 else isinstance(info.value.__cause__, ValueError)
    with pytest.raises(TypeError, match=r"element 'pull': a compiled function must take \(t, q, v\)"):
        rm.simulate(_puck(_matrix_force), q0, np.zeros(9), 0.1)
    with pytest.raises(TypeError, match=r"force 'pull': force must take \(t\) or \(t, q, qd\)"):
        _puck(lambda t, q: (0.0, 0.0, 0.0))
    model = _puck(lambda t, q, v: (q[0] + t, 0.0, v[2]), lambda t, q, v: (0.0, v[5], 0.0))
    q, v = rm.integrate_configuration(model, q0, np.full(9, 0.1)), np.arange(9.0)
    loads = rm.element_forces(model, q, v, t=0.5)
    assert np.array_equal(loads["per_element"][0], [q[0] + 0.5, 0.0, 2.0])
    assert abs(loads["power"] - ((q[0] + 0.5) * v[0] + 2.0 * v[2] + v[5] * v[4])) < 1e-12  # the origin: v[:3]


# ---- statics ------------------------------------------------------------------------------------------------------

def test_a_spring_hung_slider_rests_where_the_spring_carries_its_weight():
    """A body on a vertical slider hung from (0, 0, H) by a preloaded spring: f0 + k (L - L0) = m g."""
    mass, g, k, rest, preload, height = 2.0, 9.81, 150.0, 0.4, 3.0, 1.5
    model = rm.Model3D(gravity=(0.0, 0.0, -g))
    model.add_body("ground", "prismatic", axis=(0.0, 0.0, 1.0), mass=mass, inertia=0.1, name="bob")
    model.add_spring_damper("ground", (0.0, 0.0, height), "bob", (0.0, 0.0, 0.0), k, 1.0, rest_length=rest,
                            preload=preload)
    equilibrium = rm.static_equilibrium(model, [0.0], tol=1e-13)
    assert abs(equilibrium.q[0] - (height - rest - (mass * g - preload) / k)) < 1e-12
    assert equilibrium.stable and abs(equilibrium.eigenvalues[0] - k) < 1e-6 * k


def test_a_spherical_joint_spring_balances_a_torque_about_its_rest():
    """Rotational spring with rest Rot(x, alpha), a constant torque T about the ground x axis, no gravity: the
    equilibrium is Rot(x, alpha + T / k), and K = k on every axis."""
    k, alpha, torque = 4.0, 0.3, 1.1
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body("ground", "spherical", mass=1.0, inertia=(0.1, 0.2, 0.25, 0.0, 0.01, 0.0), name="ball")
    model.add_joint_spring_damper("ball", k, 0.5, rest=(np.cos(alpha / 2), np.sin(alpha / 2), 0.0, 0.0))
    model.add_torque("ball", (torque, 0.0, 0.0))
    equilibrium = rm.static_equilibrium(model, model.neutral(), tol=1e-13)
    angle = alpha + torque / k
    assert np.abs(equilibrium.q - [np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0]).max() < 1e-12
    assert equilibrium.stable


def test_kinematic_analysis_drives_against_the_elements_at_each_time():
    """A driven hinge about z (theta = t^2 / 2) with a joint spring and a torque T(t) = t about z: the driving
    torque is J theta'' + k theta - t."""
    inertia, k = 0.3, 2.0
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body("ground", "revolute", mass=1.0, inertia=(0.1, 0.2, inertia, 0.0, 0.0, 0.0), name="crank")
    model.add_joint_spring_damper("crank", k)
    model.add_torque("crank", lambda t: (0.0, 0.0, t))
    times = np.linspace(0.0, 2.0, 5)
    result = rm.kinematic_analysis(model, {"crank": (lambda t: 0.5 * t * t, lambda t: t, lambda t: 1.0)}, times)
    assert np.abs(result.driving_forces[:, 0] - (inertia + k * 0.5 * times**2 - times)).max() < 1e-12


def test_loops_with_elements_match_the_dense_route_and_the_elements_as_tau():
    rng = np.random.default_rng(5)
    model = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    plain = rm.Model3D(gravity=(0.0, 0.0, -9.81))
    for m in (model, plain):
        m.add_body("ground", "revolute", axis=(0, 1, 0), child_point=(0, 0, 0.5), mass=1.0, inertia=0.05, name="a")
        m.add_body("a", "spherical", parent_point=(0, 0, -0.5), child_point=(0, 0, 0.5), mass=1.0, inertia=0.05,
                   name="b")
        m.add_loop("distance", "b", (0, 0, -0.5), "ground", (0.6, 0.0, -0.8), length=0.5)
    model.add_spring_damper("a", (0.0, 0.1, 0.0), "ground", (0.3, 0.3, 0.3), 20.0, 0.5, rest_length=0.1)
    model.add_joint_spring_damper("b", 2.0, 0.3)
    q = rm.assemble(model, rm.integrate_configuration(model, model.neutral(), (0.3, 0.1, 0.2, -0.1)))
    v = rm.spatial_loops.project(model, q, rng.normal(size=model.nv))[1]
    loads = rm.element_forces(model, q, v)["generalized_forces"]
    vdot = rm.forward_dynamics(model, q, v)
    assert rel(rm.spatial_loops.loop_dynamics(model, q, v, method="mass_matrix").qdd, vdot) < 1e-9
    assert rel(rm.forward_dynamics(plain, q, v, loads), vdot) < 1e-12


# ---- files and bad input ------------------------------------------------------------------------------------------

def test_model_files_round_trip_the_elements(tmp_path):
    model, q0, v0 = _spring_model(damping=0.3, more=lambda m: (
        m.add_force("slider", (0.0, 0.1, 0.0), (0.0, 1.0, 0.5), frame="body", name="push"),
        m.add_torque("arm", (0.3, 0.0, 0.2), name="twist")))
    path = tmp_path / "springs.toml"
    rm.io.save(model, path, q0, v0)
    loaded = rm.io.load(path)
    assert loaded.model.element_names == model.element_names
    # the element tables are written back as read (a body axis may move in its last bit when renormalised)
    written, again = path.read_text(), rm.io.dumps(loaded.model, loaded.q0, loaded.v0)
    assert again[again.index("[[spring_damper]]"):] == written[written.index("[[spring_damper]]"):]
    assert rel(rm.forward_dynamics(loaded.model, loaded.q0, loaded.v0), rm.forward_dynamics(model, q0, v0)) < 1e-14
    assert rel(rm.energy(loaded.model, q0, v0), rm.energy(model, q0, v0)) < 1e-14
    out = io.StringIO()
    assert cli.main(["info", str(path)], out=out) == 0
    assert "element push: force" in out.getvalue() and "element joint_spring_damper2: joint_spring_damper" in \
        out.getvalue()
    timed = rm.Model3D()
    timed.add_body("ground", "spherical", mass=1.0, inertia=0.1)
    timed.add_torque(0, lambda t: (t, 0.0, 0.0), name="timed")
    with pytest.raises(FileFormatError, match="'timed'.*function of time"):
        rm.io.dumps(timed)


def test_model_files_refuse_bad_elements_by_entry():
    head = '[model]\ndimension = 3\n[[body]]\nname = "a"\nparent = "ground"\njoint = "spherical"\nmass = 1.0\n' \
           'inertia = 0.1\n'
    with pytest.raises(FileFormatError, match=r"spring_damper\[0\].point_b"):
        rm.io.loads(head + '[[spring_damper]]\nbody_a = "ground"\npoint_a = [0.0, 0.0, 1.0]\nbody_b = "a"\n'
                    'point_b = [0.0, 0.0]\nstiffness = 1.0\nrest_length = 0.5\n')
    with pytest.raises(FileFormatError, match=r"joint_spring_damper\[0\].*rest"):
        rm.io.loads(head + '[[joint_spring_damper]]\nbody = "a"\nstiffness = 1.0\nrest = [2.0, 0.0, 0.0, 0.0]\n')
    with pytest.raises(FileFormatError, match=r"torque\[0\].frame"):
        rm.io.loads(head + '[[torque]]\nbody = "a"\ntorque = [0.0, 0.0, 1.0]\nframe = "joint"\n')


def _bad_model():
    model = rm.Model3D()
    model.add_body("ground", "spherical", mass=1.0, inertia=0.1, name="ball")
    model.add_body("ball", "free", mass=1.0, inertia=0.1, name="puck")
    model.add_body("puck", "cylindrical", mass=1.0, inertia=0.1, name="sleeve")
    return model


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda m: m.add_spring_damper("ball", (0, 0, 0), "nobody", (0, 0, 0), 1.0), ModelError,
     r"spring_damper 'spring_damper0': body_b: unknown body 'nobody'"),
    (lambda m: m.add_spring_damper("ball", (0, 0), "ground", (0, 0, 0), 1.0), ModelError, "point_a must be 3"),
    (lambda m: m.add_spring_damper("ball", (0, 0, 0), "ball", (1, 0, 0), 1.0), ModelError, "the same body"),
    (lambda m: m.add_spring_damper("ball", (0, 0, 0), "ground", (0, 0, 0), -1.0, name="s"), ModelError,
     r"spring_damper 's': stiffness must be >= 0"),
    (lambda m: m.add_spring_damper("ball", (0, 0, 0), "ground", (0, 0, 0), 1.0, preload=np.nan), ModelError,
     "preload must be finite"),
    (lambda m: m.add_spring_damper("ball", (0, 0, 0), "ground", (0, 0, 0), "1"), TypeError,
     "stiffness must be a real number"),
    (lambda m: m.add_joint_spring_damper("puck", 1.0), ModelError, "'puck' has a free joint"),
    (lambda m: m.add_joint_spring_damper("sleeve", (1.0, 2.0, 3.0)), ModelError,
     r"stiffness must be one number or 2 .*cylindrical"),
    (lambda m: m.add_joint_spring_damper("sleeve", (1.0, -2.0)), ModelError, "stiffness must be >= 0"),
    (lambda m: m.add_joint_spring_damper("ball", 1.0, rest=(1.0, 0.1, 0.0, 0.0)), ModelError,
     "rest must be a unit quaternion"),
    (lambda m: m.add_joint_spring_damper("ball", (1.0, 2.0, 3.0)), TypeError, "stiffness must be a real number"),
    (lambda m: m.add_joint_spring_damper("ground", 1.0), ModelError, "body: must be a body, not the ground"),
    (lambda m: m.add_force("ball", (0, 0, 0), (1.0, 2.0)), ModelError, r"force 'force0': force must be 3"),
    (lambda m: m.add_force("ball", (0, 0, 0), (1.0, 2.0, 3.0), frame="joint"), ModelError,
     "frame must be 'ground' or 'body'"),
    (lambda m: m.add_force(7, (0, 0, 0), (1.0, 2.0, 3.0)), ModelError, "body index 7 out of range"),
    (lambda m: m.add_torque("ball", (1.0, np.inf, 0.0)), ModelError, r"torque 'torque0': torque must be finite"),
    (lambda m: m.add_torque("ball", "spin"), TypeError, "torque must be 3 real numbers"),
    (lambda m: m.add_torque("ball", (1.0, 0.0, 0.0), name=""), TypeError, "element name must be a non-empty"),
])
def test_bad_elements_are_refused_naming_element_and_argument(call, error, match):
    with pytest.raises(error, match=match):
        call(_bad_model())


def test_duplicate_names_late_elements_and_bad_functions_are_refused():
    model = _bad_model()
    model.add_torque("ball", (1.0, 0.0, 0.0), name="twist")
    with pytest.raises(ModelError, match="'twist': duplicate element name"):
        model.add_force("ball", (0, 0, 0), (1.0, 0.0, 0.0), name="twist")
    model.add_force("sleeve", (0, 0, 0), lambda t: (1.0, 2.0), name="short")
    q, v = model.neutral(), np.zeros(model.nv)
    with pytest.raises(StateError, match=r"element 'short': its function must return 3 finite number\(s\) at t = 0.5"):
        rm.forward_dynamics(model, q, v, t=0.5)
    with pytest.raises(ModelError, match="cannot add torque 'late': the model was compiled"):
        model.add_torque("ball", (1.0, 0.0, 0.0), name="late")
    with pytest.raises(StateError, match="element 'short'"):
        rm.simulate(model, q, v, 0.1)


def test_spring_at_zero_length_damps_the_relative_velocity():
    """Seed 000's rule: at L = 0 the damper acts on the whole relative velocity, the spring not at all."""
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body("ground", "free", mass=2.0, inertia=0.1, name="puck")
    model.add_spring_damper("ground", (0.0, 0.0, 0.0), "puck", (0.0, 0.0, 0.0), 10.0, 3.0, rest_length=0.5)
    q, v = model.neutral(), np.array([1.0, -2.0, 0.5, 0.0, 0.0, 0.0])
    result = rm.element_forces(model, q, v)
    assert np.array_equal(result["generalized_forces"], np.concatenate((-3.0 * v[:3], np.zeros(3))))
    assert result["potential"] == 0.5 * 10.0 * 0.5**2 and result["dissipation"] == 3.0 * (v @ v)
    assert np.isfinite(rm.forward_dynamics(model, q, v)).all()


def test_joint_springs_of_a_rebuilt_planar_chain_about_a_tilted_axis():
    """A revolute joint spring on an axis tilted by a joint-frame rotation: Q = -k (q - rest) - c v exactly."""
    model = rm.Model3D(gravity=(0.0, 0.0, 0.0))
    model.add_body("ground", "revolute", rotation=axis_rotation((1.0, 1.0, 0.0) / np.sqrt(2), 0.7), mass=1.0,
                   inertia=0.1, com=(0.3, 0.0, 0.0))
    model.add_joint_spring_damper(0, 5.0, 0.5, rest=0.2)
    result = rm.element_forces(model, [1.0], [2.0])
    assert result["generalized_forces"][0] == -5.0 * (1.0 - 0.2) - 0.5 * 2.0
    assert result["per_element"][0, 0] == result["generalized_forces"][0]
