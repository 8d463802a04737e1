"""bdf's Newton matrix on spatial models with contacts (``_kernels.spatial.bdf``, "Contacts"): where the contacts are
stiff on the step's scale, the exact matrix N of the spatial joint coordinates (``_kernels.spatial.newton``, c_mass
1, c_damp c, c_stiff c^2), its contact blocks acting on each body's velocity and displacement; applied to random
vectors it equals central differences of bdf's corrector residual by the accelerations (the hooks the shared BDF
loop calls), on a ball and a capsule on the floor and on a drum, a three-link chain whose tip capsule lies on the
floor and a child pressing into a plane its parent carries, sticking and sliding, the bodies moving. A stiff
capsule sliding down a slope then runs without the Newton failures of S with the contacts' symmetric part."""

import math

import numba
import numpy as np
import pytest
from _helpers import child_on_its_parents_plane, lowered_until_touching

import recursive_mbd as rm
from recursive_mbd._kernels.spatial import bdf as spatial_bdf
from recursive_mbd._kernels.spatial import contact as kernels
from recursive_mbd._kernels.spatial import layout as layout3d
from recursive_mbd._kernels.spatial import tree as spatial_tree
from recursive_mbd._kernels.spatial.layout import CS_ACTIVE, CS_BODY, CS_SURF, CS_VIN, N_CSTATE, N_PER_CONTACT
from recursive_mbd._kernels.spatial.system import configuration_rate
from recursive_mbd._kernels.timeloops import newton
from recursive_mbd.integrate.bdf import spatial_newton_arrays
from recursive_mbd.integrate.spatial_loop import SpatialTimeLoop, _SpatialInputs

G = 9.81
LAW = {"stiffness": 1e6, "restitution": 0.5, "friction": 0.4, "min_impact_speed": 0.1}


@numba.njit
def _iterate(inputs, key, system, work, c, y_pred, psi, vdot, q_ref, d, y):
    """bdf's iterate at the accelerations vdot (nv,): d_v = c vdot - psi_v, d_q = c G(q_ref) v_new - psi_q (the q
    rows as ``newton_update`` holds them, G at q_ref), then the corrector's residual there; returns the status."""
    nq = q_ref.shape[0]
    nv = vdot.shape[0]
    v = np.zeros(nv)
    rate = np.zeros(nq)
    for j in range(nv):
        d[nq + j] = c * vdot[j] - psi[nq + j]
        v[j] = y_pred[nq + j] + d[nq + j]
    configuration_rate(system, q_ref, v, rate)
    for k in range(nq):
        d[k] = c * rate[k] - psi[k]
    for j in range(y.shape[0]):
        y[j] = y_pred[j] + d[j]
    status, _ = newton.corrector_residual(inputs, key, system, work, 0.0, c, psi, d, y)
    return status


@numba.njit
def _bdf_newton(inputs, key, system, arrays, c, y_pred, psi, vdot, steps, probes, residuals, inverse):
    """At bdf's iterate of the accelerations vdot (q rows consistent: q_ref = the iterate's q), the residuals at
    vdot + steps[s] probes[p] (residuals[s, p], nv) and the inverse of the Newton matrix that ``newton_factor``
    makes there (inverse, nv x nv, column by column); returns (status, 1.0 where the exact matrix was factorised)."""
    work = newton.newton_workspace(system, arrays)
    n = y_pred.shape[0]
    nq = system.q.shape[0]
    nv = vdot.shape[0]
    d = np.zeros(n)
    y = np.zeros(n)
    newton.corrector_predict(system, work, c, y_pred, psi, d, y)
    q_ref = np.zeros(nq)
    for k in range(nq):
        q_ref[k] = y[k]
    for _ in range(30):  # the q rows' fixed point d_q = c G(q_new) v_new - psi_q
        _iterate(inputs, key, system, work, c, y_pred, psi, vdot, q_ref, d, y)
        for k in range(nq):
            q_ref[k] = y[k]
    trial = np.zeros(nv)
    for s in range(steps.shape[0]):
        for p in range(probes.shape[0]):
            for j in range(nv):
                trial[j] = vdot[j] + steps[s] * probes[p, j]
            status = _iterate(inputs, key, system, work, c, y_pred, psi, trial, q_ref, d, y)
            if status != 0:
                return status, 0.0
            for j in range(nv):
                residuals[s, p, j] = work[spatial_bdf.W_RESIDUAL][j]
    status = _iterate(inputs, key, system, work, c, y_pred, psi, vdot, q_ref, d, y)
    if status != 0:
        return status, 0.0
    status = newton.newton_factor(system, work, c)
    if status != 0:
        return status, 0.0
    unit = np.zeros(nv)
    column = np.zeros(nv)
    for j in range(nv):
        unit[:] = 0.0
        unit[j] = 1.0
        spatial_bdf._solve(system, work, unit, column)
        for k in range(nv):
            inverse[k, j] = column[k]
    return 0, work[spatial_bdf.W_EXACT][0]


def _ball_and_capsule(surface):
    """A ball (radius 0.1) and a capsule (segment from (-0.2, 0, 0) to (0.2, 0, 0), radius 0.05), 1 kg each on free
    joints, on the floor or on a drum of radius 0.5 about the ground's y axis (the capsule across it at y = 1)."""
    model = rm.Model3D(gravity=(0.0, 0.0, -G))
    model.add_body(joint="free", mass=1.0, inertia=(0.004, 0.005, 0.006, 0.0002, 0.0, 0.0001), name="ball")
    model.add_body(joint="free", mass=1.0, inertia=(0.002, 0.02, 0.02, 0.0, 0.0001, 0.0), name="capsule")
    if surface == "floor":
        model.add_ground()
        q = [0.1, 0.0, 0.1 - 5e-4, 1.0, 0.02, -0.01, 0.0, 1.0, 0.0, 0.05 - 4e-4, 1.0, 0.0, 0.0, 0.03]
    else:
        model.add_drum("floor", center=(0.0, 0.0, 0.0), radius=0.5, axis=(0.0, 1.0, 0.0))
        q = [0.05, 0.0, math.sqrt(0.6 ** 2 - 0.05 ** 2) - 5e-4, 1.0, 0.02, -0.01, 0.0,
             -0.03, 1.0, math.sqrt(0.55 ** 2 - 0.03 ** 2) - 4e-4, 1.0, 0.0, 0.0, 0.03]
    model.add_contact("ball", "floor", radius=0.1, **LAW)
    model.add_contact("capsule", "floor", segment=((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0)), radius=0.05, **LAW)
    q = np.array(q)
    model._require_compiled()
    for start in model._quat_q:
        q[start:start + 4] /= np.linalg.norm(q[start:start + 4])
    return model, q


def _chain():
    """Three capsule links (0.4 m, 1 kg) hinged at 0.5 m over the floor (revolute about y, then two spherical
    joints), bent down so that the last link's far end sphere (radius 0.03) lies 0.5 mm deep on the floor; the middle
    link's far end sphere clear above it."""
    model = rm.Model3D(gravity=(0.0, 0.0, -G))
    inertia = (0.002, 0.014, 0.014, 0.0, 0.0, 0.0)
    model.add_body(parent="ground", joint="revolute", parent_point=(0.0, 0.0, 0.5), child_point=(-0.2, 0.0, 0.0),
                   mass=1.0, inertia=inertia, axis=(0.0, 1.0, 0.0), name="a")
    model.add_body(parent="a", joint="spherical", parent_point=(0.2, 0.0, 0.0), child_point=(-0.2, 0.0, 0.0),
                   mass=1.0, inertia=inertia, name="b")
    model.add_body(parent="b", joint="spherical", parent_point=(0.2, 0.0, 0.0), child_point=(-0.2, 0.0, 0.0),
                   mass=1.0, inertia=inertia, name="c")
    model.add_ground()
    model.add_contact("b", "floor", point=(0.2, 0.0, 0.0), radius=0.03, **LAW)
    model.add_contact("c", "floor", segment=((-0.2, 0.0, 0.0), (0.2, 0.0, 0.0)), radius=0.03, **LAW)
    packed = model._require_compiled()

    def pose(angle):
        turn = np.array([0.1, 1.0, 0.05]) / np.linalg.norm([0.1, 1.0, 0.05])
        return np.r_[0.3, math.cos(0.15), math.sin(0.15) * turn, math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0]

    def tip_height(angle):
        nb = model.nbodies
        rot, pos = np.zeros((nb, 3, 3)), np.zeros((nb, 3))
        assert spatial_tree.poses(packed.body_int, packed.body_real, pose(angle), np.zeros(model.nv),
                                  np.zeros((nb, layout3d.W_SPATIAL)), np.zeros((nb, 3, 6)),
                                  np.zeros(spatial_tree.TMP_SIZE), rot, pos, np.zeros((nb, 3)), np.zeros((nb, 3)),
                                  True) == 0
        return (pos[2] + rot[2] @ np.array([0.2, 0.0, 0.0]))[2]

    # the tip's sphere 0.5 mm deep: its centre at the radius less that
    return model, pose(lowered_until_touching(tip_height, -1.0, 0.0, 0.0295))


def _anchored_state(model, q, v, stretch):
    """The contact state of every row touching at (q, v): active, its anchors laid at the contact point, the body's
    moved by ``stretch`` (3, ground axes) from it."""
    packed = model._require_compiled()
    nb, rows = model.nbodies, packed.contact_int.shape[0]
    rot, pos, omega, vel = np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3))
    assert spatial_tree.poses(packed.body_int, packed.body_real, q, v, np.zeros((nb, layout3d.W_SPATIAL)),
                              np.zeros((nb, 6, 6)), np.zeros(spatial_tree.TMP_SIZE), rot, pos, omega, vel, True) == 0
    per = np.zeros((rows, N_PER_CONTACT))
    state = np.zeros(N_CSTATE * rows)
    kernels.contact_forces(packed.contact_int, packed.contact_real, rot, pos, omega, vel, state, 0,
                           np.zeros((nb, 6)), np.zeros(2), per)
    touching = 0
    for r in range(rows):
        if per[r, 4] <= 0.0:
            continue
        touching += 1
        body = packed.contact_int[r, 0]
        point = per[r, 5:8]
        base = N_CSTATE * r
        state[base + CS_ACTIVE] = 1.0
        state[base + CS_VIN] = 0.5
        state[base + CS_BODY:base + CS_BODY + 3] = rot[body].T @ (point + stretch - pos[body])
        owner = packed.contact_int[r, 1]  # the surface's anchor in its owner's frame (the ground's for -1)
        state[base + CS_SURF:base + CS_SURF + 3] = point if owner < 0 else rot[owner].T @ (point - pos[owner])
    kernels.contact_forces(packed.contact_int, packed.contact_real, rot, pos, omega, vel, state, 0,
                           np.zeros((nb, 6)), np.zeros(2), per)
    return state, per, touching


CASES = ["ball and capsule on the floor", "ball and capsule on the drum", "chain on the floor",
         "child on its parent's plane"]


@pytest.mark.parametrize("slides", [False, True], ids=["sticking", "sliding"])
@pytest.mark.parametrize("case", CASES)
def test_bdf_newton_matrix_with_contacts_against_central_differences(case, slides):
    if case.startswith("ball"):
        model, q = _ball_and_capsule(case.split()[-1])
    else:
        model, q = _chain() if case.startswith("chain") else child_on_its_parents_plane((0.0, 0.0, -G), LAW)
    nq, nv = model.nq, model.nv
    rng = np.random.default_rng(29)
    # moving bodies: sliding at about 0.5 m/s with the anchors 2 mm off (the friction clipped at mu F_n), or
    # creeping at 1e-3 with the anchors 1e-7 m off (the stick spring and damper inside the limit)
    v = (0.5 if slides else 1e-3) * rng.normal(size=nv)
    state, per, touching = _anchored_state(model, q, v, np.array([2e-3, -1e-3, 0.0]) if slides else
                                           np.array([1e-7, -2e-7, 0.0]))
    assert touching >= (2 if case.startswith("ball") else 1)
    for r in range(per.shape[0]):
        if per[r, 4] > 0.0:  # each touching row clipped (sliding) or well inside the friction limit (sticking)
            ratio = np.linalg.norm(per[r, 1:4]) / (LAW["friction"] * per[r, 0])
            assert (abs(ratio - 1.0) < 1e-12) if slides else ratio < 0.5
    inputs = _SpatialInputs(model, None)
    loop = SpatialTimeLoop(model, inputs)
    callback, key = inputs.callback()
    c = 4e-3  # h / gamma_k of a step of a few ms
    vdot = rng.normal(size=nv)
    psi = np.r_[np.zeros(nq), rng.normal(size=nv) * c, 0.0, 0.0, np.zeros_like(state)]
    # q_pred such that the iterate's q is q (to first order): psi_q = c G(q) v_new, v_new = v_pred + c vdot - psi_v
    v_pred = v - c * vdot + psi[nq:nq + nv]
    rate = np.zeros(nq)
    configuration_rate(loop.system, q, v, rate)
    psi[:nq] = c * rate
    y_pred = np.r_[q, v_pred, 0.0, 0.0, state]
    probes = rng.normal(size=(4, nv))
    steps = np.array([1e-2, 5e-3])
    residuals = np.zeros((2, 4, nv))
    minus = np.zeros((2, 4, nv))
    inverse = np.zeros((nv, nv))
    arrays = spatial_newton_arrays(model)
    status, exact = _bdf_newton(callback, key, loop.system, arrays, c, y_pred, psi, vdot, steps, probes, residuals,
                                inverse)
    assert status == 0 and exact == 1.0
    status, _ = _bdf_newton(callback, key, loop.system, arrays, c, y_pred, psi, vdot, -steps, probes, minus,
                            np.zeros((nv, nv)))
    assert status == 0
    central = (residuals - minus) / (2.0 * steps[:, None, None])
    derivative = (4.0 * central[1] - central[0]) / 3.0  # Richardson: J probes (4, nv)
    matrix = np.linalg.inv(inverse)
    applied = probes @ matrix.T
    error = np.abs(applied - derivative).max() / np.abs(derivative).max()
    # measured 1.5e-11 .. 2.0e-10 (the child on its parent's plane 4.8e-11, 6.1e-11); S with the contacts' symmetric
    # part 1.7e-5 .. 0.13, the exact matrix with their stiffness on c^2 times each body's acceleration change in
    # place of its displacement 3.3e-6 .. 2.4e-4
    assert error < 1e-8, error


def test_bdf_keeps_the_cheap_matrix_where_the_contacts_are_soft_on_the_steps_scale():
    # the same state at c = 1e-5 (c^2 K + c C far below the bodies' masses): S, whose contact part is then within
    # 1e-2 of N's (``spatial.bdf.EXACT_CONTACTS``)
    model, q = _ball_and_capsule("floor")
    nq, nv = model.nq, model.nv
    state, _, _ = _anchored_state(model, q, np.zeros(nv), np.array([1e-7, -2e-7, 0.0]))
    inputs = _SpatialInputs(model, None)
    loop = SpatialTimeLoop(model, inputs)
    callback, key = inputs.callback()
    for c, expected in ((1e-5, 0.0), (4e-3, 1.0)):
        status, exact = _bdf_newton(callback, key, loop.system, spatial_newton_arrays(model), c,
                                    np.r_[q, np.zeros(nv), 0.0, 0.0, state], np.zeros(nq + nv + 2 + state.size),
                                    np.zeros(nv), np.zeros(1), np.zeros((1, nv)), np.zeros((1, 1, nv)),
                                    np.zeros((nv, nv)))
        assert status == 0 and exact == expected


def test_bdf_slides_a_stiff_capsule_down_a_slope_without_newton_failures():
    # a capsule on a Hertz contact of k = 1e9 sliding down a slope (tan 0.5 > mu = 0.3), 1.5 s: with the exact
    # matrix 1,974 steps, 125 rejected, 2.1 Newton iterations a step; with S and the contacts' symmetric part 2,896
    # steps, 1,015 rejected (Newton failures at the steps the error test allows), 2.7 iterations. The end state is
    # Coulomb's (``test_contact3d_slope.py``)
    from test_contact3d_slope import _set_down  # noqa: PLC0415

    model, q0 = _set_down("capsule", 1e9, 0.5, 0.3)
    result = rm.simulate(model, q0, np.zeros(6), 1.5, method="bdf", rtol=1e-6, atol=1e-8)
    assert result.nrejected < 0.15 * result.nsteps
    assert result.newton_iterations < 2.3 * result.nsteps
    acceleration = G * (math.sin(0.5) - 0.3 * math.cos(0.5))
    assert result.qd[-1, 0] == pytest.approx(acceleration * 1.5, rel=1e-4)


def test_generalized_alpha_exact_matrix_with_moving_contacts_against_central_differences():
    # generalized_alpha's exact matrix N (``newton.newton_factor``) with the contacts' blocks, at a step's iterate
    # q+ = q (+) delta (its tangent map in the displacement) with the bodies sliding at about 0.5 m/s: the Jacobian
    # of the step's residual M (vdot+ - forward dynamics with the contacts) by vdot+, central differences. Measured
    # 2.0e-10; with the contacts' stiffness on c_stiff times each body's acceleration change, not its shift, 2.3e-3
    from recursive_mbd._kernels.spatial import newton as spatial_newton  # noqa: PLC0415

    model, q_new = _ball_and_capsule("floor")
    packed = model._require_compiled()
    nb, nv, rows = model.nbodies, model.nv, packed.contact_int.shape[0]
    rng = np.random.default_rng(33)
    v = 0.5 * rng.normal(size=nv)
    vdot = rng.normal(size=nv)
    delta = 0.3 * rng.normal(size=nv)
    q = rm.integrate_configuration(model, q_new, -delta)  # q (+) delta = q_new
    state, per, touching = _anchored_state(model, q_new, v, np.array([2e-3, -1e-3, 0.0]))
    assert touching == 3
    c_stiff, c_damp = 1e-4, 1e-2

    def residual(y):
        q_y = rm.integrate_configuration(model, q, delta + c_stiff * y)
        accelerations = rm.forward_dynamics(model, q_y, v + c_damp * y, contact_state=state.reshape(rows, N_CSTATE))
        return rm.mass_matrix(model, q_y) @ (vdot + y - accelerations)

    central = [np.array([(residual(h * e) - residual(-h * e)) / (2.0 * h) for e in np.eye(nv)]).T
               for h in (1e-3, 5e-4)]
    jacobian = (4.0 * central[1] - central[0]) / 3.0  # Richardson
    rot, pos, omega, vel = np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3))
    assert spatial_tree.poses(packed.body_int, packed.body_real, q_new, v, np.zeros((nb, layout3d.W_SPATIAL)),
                              np.zeros((nb, 6, 6)), np.zeros(spatial_tree.TMP_SIZE), rot, pos, omega, vel, True) == 0
    blocks, loads = np.zeros((nb, 6, 24)), np.zeros((nb, 6))  # two free bodies: their own loads are the subtree sums
    assert kernels.contact_newton_blocks(packed.body_int, packed.contact_int, packed.contact_real, rot, pos, omega,
                                         vel, state, 0, blocks, np.zeros((0, 4))) == 3
    kernels.transmitted_loads(packed.body_int, packed.contact_int, packed.contact_real, rot, pos, omega, vel, state,
                              0, np.zeros((0, 4)), loads)
    ws, s, tmp = np.zeros((nb, layout3d.W_SPATIAL)), np.zeros((nb, 6, 6)), np.zeros(spatial_tree.TMP_SIZE)
    fac = np.zeros((nb, spatial_newton.factor_width(6)))
    assert spatial_newton.newton_factor(packed.body_int, packed.body_real, packed.gravity, q_new, v, vdot, delta,
                                        c_stiff, c_damp, np.zeros(nv), ws, s, tmp, np.zeros(nv),
                                        np.zeros(spatial_newton.SCRATCH_SIZE), fac, blocks,
                                        np.zeros(0, dtype=np.uint8), loads) == 0
    inverse = np.zeros((nv, nv))
    for j in range(nv):
        spatial_newton.newton_apply(packed.body_int, ws, fac, np.eye(nv)[j], tmp, np.zeros((nb, 6)), inverse[:, j])
    error = np.abs(np.linalg.inv(inverse) - jacobian).max() / np.abs(jacobian).max()
    assert error < 1e-8, error
