"""Contact and friction in the plane (``Model.add_ground``, ``add_drum``, ``add_contact``) against closed forms:
restitution at any impact speed, Hertz's contact time, sticking and sliding on a slope, rolling without slip,
leaving a drum, and the energy balance with the contacts' work."""

import math

import numpy as np
import pytest
from scipy.special import gamma

import recursive_mbd as rm
from recursive_mbd._kernels.layout import N_BOX
from recursive_mbd.errors import ModelError
from recursive_mbd.integrate.implicit import simulate_generalized_alpha
from recursive_mbd.model.contact import _rebound_speed, restitution_damping

G = 9.81


def _welded_bystander(model):
    """A body welded to the ground: no coordinate, no effect on the motion. With it a one-body model's packed
    arrays have two columns and type as the chain tests' (F-contiguous): a single body's type as C-contiguous, and
    every time loop it runs would be compiled a second time for it."""
    model.add_body(joint="fixed", mass=1.0, inertia=0.01, name="bystander")
    return model


def _disc(gravity=(0.0, 0.0), mass=2.0, inertia=0.01, radius=0.1, surface="floor", **law):
    model = rm.Model(gravity=gravity)
    model.add_body(joint="planar", mass=mass, inertia=inertia, name="disc")
    _welded_bystander(model)
    model.add_ground()
    model.add_contact("disc", surface, radius=radius, **law)
    return model


def _slope(angle):
    """Gravity of a slope at ``angle``: the floor's x axis runs downhill."""
    return (G * math.sin(angle), -G * math.cos(angle))


@pytest.mark.parametrize("restitution", [0.3, 0.7])
def test_the_damping_mapping_gives_the_restitution_it_was_solved_for(restitution):
    damping = restitution_damping(restitution, 1.5)
    assert _rebound_speed(damping, 1.5) == pytest.approx(restitution, abs=1e-10)
    assert restitution_damping(1.0, 1.5) == 0.0


def test_a_disc_rebounds_with_the_coefficient_of_restitution_at_every_impact_speed():
    model = _disc(stiffness=1e6, restitution=0.7)
    for speed in (1.0, 3.0):
        result = rm.simulate(model, [0.0, 0.1, 0.0], [0.0, -speed, 0.0], 0.05)
        assert result.success
        assert result.qd[-1, 1] / speed == pytest.approx(0.7, abs=1e-6)
        assert result.contact_state[-1, 0, 0] == 0.0  # the contact has opened again


def test_an_elastic_impact_lasts_hertz_contact_time():
    speed, k, p, mass = 2.0, 1e6, 1.5, 2.0
    model = _disc(stiffness=k, exponent=p, restitution=1.0)
    times = np.linspace(0.0, 0.02, 20001)
    result = rm.simulate(model, [0.0, 0.1, 0.0], [0.0, -speed, 0.0], 0.02, t_eval=times)
    gap = result.q[:, 1] - 0.1
    inside = np.flatnonzero(gap < 0.0)
    first, last = inside[0], inside[-1]
    t_in = times[first - 1] + (times[first] - times[first - 1]) * gap[first - 1] / (gap[first - 1] - gap[first])
    t_out = times[last] + (times[last + 1] - times[last]) * gap[last] / (gap[last] - gap[last + 1])
    # Hertz: the depth peaks at ((p + 1) m v^2 / (2 k))^(1 / (p + 1)); the time to it is that over v times
    # the integral of 1 / sqrt(1 - u^(p + 1)) from 0 to 1
    depth = ((p + 1.0) * mass * speed ** 2 / (2.0 * k)) ** (1.0 / (p + 1.0))
    a = 1.0 / (p + 1.0)
    duration = 2.0 * depth / speed * math.sqrt(math.pi) * gamma(1.0 + a) / gamma(0.5 + a)
    assert t_out - t_in == pytest.approx(duration, rel=1e-6)
    assert -gap.min() == pytest.approx(depth, rel=1e-6)
    assert result.qd[-1, 1] == pytest.approx(speed, rel=1e-6)


def _block(angle, friction):
    model = rm.Model(gravity=_slope(angle))
    model.add_body(joint="planar", mass=1.0, inertia=0.02, name="block")
    _welded_bystander(model)
    model.add_ground()
    model.add_contact("block", "floor", segment=((-0.2, 0.0), (0.2, 0.0)), radius=0.05, stiffness=1e6,
                      restitution=0.5, friction=friction, min_impact_speed=0.1)  # damped more at rest: settles fast
    return model


def test_a_block_below_its_friction_angle_sticks_without_creeping():
    model = _block(math.atan(0.3), 0.5)
    result = rm.simulate(model, [0.0, 0.05, 0.0], [0.0, 0.0, 0.0], 10.0, t_eval=np.linspace(0.0, 10.0, 11))
    assert result.success
    assert abs(result.q[-1, 0] - result.q[1, 0]) < 1e-9  # the issue's bound: 1e-6 m over 10 s
    assert abs(result.q[1, 0]) < 1e-3  # settled on its stick springs
    forces = result.contact_forces()
    assert np.all(forces["active"][1:] == 2)
    # at rest, the two ends carry the weight: normal forces m g cos, friction m g sin (up the slope: -t)
    assert forces["normal"][-1].sum() == pytest.approx(G * math.cos(math.atan(0.3)), rel=1e-9)
    assert forces["tangential"][-1].sum() == pytest.approx(-G * math.sin(math.atan(0.3)), rel=1e-9)


def test_a_block_above_its_friction_angle_slides_with_coulombs_acceleration():
    angle, friction = math.atan(0.8), 0.5
    result = rm.simulate(_block(angle, friction), [0.0, 0.05, 0.0], [0.0, 0.0, 0.0], 2.0,
                         t_eval=np.linspace(0.0, 2.0, 21))
    rate = (result.qd[-1, 0] - result.qd[10, 0]) / (result.t[-1] - result.t[10])
    assert rate == pytest.approx(G * (math.sin(angle) - friction * math.cos(angle)), rel=1e-9)


def test_a_disc_rolls_down_a_slope_without_slipping():
    angle, radius, mass = math.atan(0.5), 0.1, 1.0
    model = _disc(gravity=_slope(angle), mass=mass, inertia=0.5 * mass * radius ** 2, radius=radius,
                  stiffness=1e6, restitution=0.5, friction=1.0)
    result = rm.simulate(model, [0.0, radius, 0.0], [0.0, 0.0, 0.0], 2.0, t_eval=np.linspace(0.0, 2.0, 21))
    rate = (result.qd[-1, 0] - result.qd[10, 0]) / (result.t[-1] - result.t[10])
    assert rate == pytest.approx(2.0 / 3.0 * G * math.sin(angle), rel=1e-8)
    assert abs(result.qd[-1, 0] + radius * result.qd[-1, 2]) < 1e-7  # v = -r omega: no slip
    assert np.abs(result.energy_balance()).max() < 1e-9


def test_a_point_leaves_a_frictionless_drum_where_gravity_no_longer_holds_it():
    # a particle starting on top of a cylinder at speed v0 leaves it at cos(phi) = (v0^2 / (g R) + 2) / 3
    radius, speed = 1.0, 0.5
    model = rm.Model()
    model.add_body(joint="planar", mass=1.0, inertia=1.0, name="point")
    _welded_bystander(model)
    model.add_drum("drum", center=(0.0, 0.0), radius=radius)
    model.add_contact("point", "drum", stiffness=1e9, exponent=1.0, restitution=0.5)
    times = np.linspace(0.0, 1.2, 2401)
    result = rm.simulate(model, [0.0, radius - 9.81 / 1e9, 0.0], [speed, 0.0, 0.0], 1.2, t_eval=times)
    normal = result.contact_forces()["normal"][:, 0]
    leaves = np.flatnonzero(normal == 0.0)[0]
    angle = np.arctan2(result.q[leaves, 0], result.q[leaves, 1])
    assert math.cos(angle) == pytest.approx((speed ** 2 / (G * radius) + 2.0) / 3.0, abs=2e-3)


def test_the_energy_balance_closes_with_the_contacts_work_through_bounces_and_friction():
    model = _disc(gravity=(0.0, -G), stiffness=1e5, restitution=0.6, friction=0.3)
    result = rm.simulate(model, [0.0, 0.5, 0.0], [1.0, 0.0, 5.0], 1.5)
    assert result.success
    balance = result.energy_balance()
    assert result.dissipated_work[-1] > 1.0  # the bounces and the slip dissipated energy
    assert np.abs(balance).max() < 1e-7 * result.dissipated_work[-1]


@pytest.mark.parametrize(("build", "message"), [
    (lambda m: m.add_contact("b", "floor", radius=0.1, stiffness=-1.0), "stiffness must be > 0"),
    (lambda m: m.add_contact("b", "floor", radius=-0.1, stiffness=1.0), "radius must be >= 0"),
    (lambda m: m.add_contact("b", "floor", radius=0.1, stiffness=1.0, restitution=0.0), r"restitution must be in"),
    (lambda m: m.add_contact("b", "floor", radius=0.1, stiffness=1.0, friction=-0.2), "friction must be >= 0"),
    (lambda m: m.add_contact("b", "floor", radius=0.1, stiffness=1.0, exponent=0.5), "exponent must be >= 1"),
    (lambda m: m.add_contact("b", "floor", segment=((0, 0), (0, 0)), radius=0.1, stiffness=1.0), "coincide"),
    (lambda m: m.add_contact("c", "floor", radius=0.1, stiffness=1.0), "'c'"),
    (lambda m: m.add_contact("b", "table", radius=0.1, stiffness=1.0), "unknown surface 'table'"),
    (lambda m: m.add_drum("drum", center=(0.0, -1.0), radius=0.5), "inside ground 'floor'"),
    (lambda m: m.add_drum("drum", center=(0.0, 1.0), radius=0.0), "radius must be > 0"),
    (lambda m: m.add_ground("floor"), "duplicate surface name"),
    (lambda m: m.add_ground("wall", normal=(0.0, 0.0)), "normal must be non-zero"),
])
def test_bad_contact_input_is_a_model_error_naming_the_entry(build, message):
    model = rm.Model()
    model.add_body(joint="planar", name="b")
    model.add_ground("floor")
    with pytest.raises(ModelError, match=message):
        build(model)


def test_methods_that_do_not_integrate_contacts_refuse_a_contact_model():
    model = _disc(stiffness=1e6)
    with pytest.raises(ValueError, match="does not integrate contacts"):
        rm.simulate(model, [0.0, 0.2, 0.0], [0.0, 0.0, 0.0], 0.1, method="scipy:Radau")
    with pytest.raises(ValueError, match="contacts act in the recursive formulation"):
        rm.simulate(model, [0.0, 0.2, 0.0], [0.0, 0.0, 0.0], 0.1, formulation="augmented")


def test_two_discs_of_a_self_contact_set_collide_with_the_restitution_at_its_impact_speed():
    model = rm.Model(gravity=(0.0, 0.0))
    model.add_body(joint="planar", mass=1.0, inertia=0.01, name="a")
    model.add_body(joint="planar", mass=3.0, inertia=0.01, name="b")
    model.add_self_contact(["a", "b"], radius=0.1, stiffness=1e6, restitution=0.6, impact_speed=2.0)
    result = rm.simulate(model, [0.0, 0.0, 0.0, 0.3, 0.0, 0.0], [1.5, 0.0, 0.0, -0.5, 0.0, 0.0], 0.3)
    va, vb = result.qd[-1, 0], result.qd[-1, 3]
    assert va + 3.0 * vb == pytest.approx(0.0, abs=1e-12)  # momentum
    assert (vb - va) / 2.0 == pytest.approx(0.6, abs=1e-6)  # restitution at the impact speed 2 m/s
    assert result.contact_forces()["pairs"].max() == 1
    assert np.abs(result.energy_balance()).max() < 1e-6  # of 1.5 J


def _end_contacts(a0, a1, b0, b1):
    """The end contacts of two capsule axes: (point on a, point on b, weight) of each end of one axis with its
    nearest point on the other (found on a fine parameter grid, then refined by projection), weight 1/2 where that
    nearest point is an end of the other axis."""
    contacts = []
    for end, (c0, c1), of_a in ((a0, (b0, b1), True), (a1, (b0, b1), True), (b0, (a0, a1), False),
                                (b1, (a0, a1), False)):
        grid = np.linspace(0.0, 1.0, 2001)
        u = grid[np.argmin(np.linalg.norm(c0 + grid[:, None] * (c1 - c0) - end, axis=1))]
        u = np.clip((end - c0) @ (c1 - c0) / ((c1 - c0) @ (c1 - c0)), max(u - 1e-3, 0.0), min(u + 1e-3, 1.0))
        other = c0 + u * (c1 - c0)
        weight = 0.5 if u in (0.0, 1.0) else 1.0
        contacts.append((end, other, weight) if of_a else (other, end, weight))
    return contacts


def test_the_sweep_finds_every_touching_pair_that_brute_force_finds():
    from recursive_mbd._kernels.planar import pairs as P  # noqa: PLC0415
    from recursive_mbd.model.workspace import workspace  # noqa: PLC0415

    rng = np.random.default_rng(3)
    n, half = 40, 0.15
    model = rm.Model(gravity=(0.0, 0.0))
    for k in range(n):
        model.add_body(joint="planar", mass=1.0, inertia=0.01, name=f"rod{k}")
    k_contact = 1e4
    model.add_self_contact(model.body_names, segment=((-half, 0.0), (half, 0.0)), radius=0.03, stiffness=k_contact,
                           exponent=1.0)
    q = np.column_stack((rng.uniform(0.0, 1.5, n), rng.uniform(0.0, 1.0, n), rng.uniform(-np.pi, np.pi, n))).ravel()
    ws = workspace(model)
    rm.energy(model, q, np.zeros(3 * n))  # the centre-of-mass kinematics into ws
    wrench, totals, stats = np.zeros((n, 3)), np.zeros(3), np.zeros(2)
    P.pair_forces(model.body_int, model.shape_int, model.shape_real, np.arange(n), np.zeros((n, N_BOX)), ws.ws,
                  ws.com, wrench, totals, stats)
    expected = np.zeros((n, 3))
    touching = 0
    for a in range(n):
        for b in range(a + 1, n):
            ends = []
            for body in (a, b):
                x, y, th = q[3 * body:3 * body + 3]
                e = half * np.array([np.cos(th), np.sin(th)])
                ends.append((np.array([x, y]) - e, np.array([x, y]) + e))
            found = False
            for ca, cb, weight in _end_contacts(*ends[0], *ends[1]):
                depth = 0.06 - np.linalg.norm(cb - ca)
                if depth <= 0.0:
                    continue
                found = True
                normal = (cb - ca) / np.linalg.norm(cb - ca)
                point = ca + (0.03 - depth / 2) * normal
                for body, sign in ((b, 1.0), (a, -1.0)):
                    force = sign * weight * k_contact * depth * normal
                    lever = point - q[3 * body:3 * body + 2]
                    expected[body] += (*force, lever[0] * force[1] - lever[1] * force[0])
            touching += found
    assert touching > 5
    assert stats[0] == touching
    assert stats[1] < n * (n - 1) / 2 / 3  # the sweep tested a fraction of the pairs
    np.testing.assert_allclose(wrench, expected, rtol=1e-12, atol=1e-9)


def test_a_contact_that_sinks_deeper_than_its_shape_stops_the_run_naming_the_contact():
    # a heavy disc on a contact far too soft for it: the step cannot be right once the shape is through the surface
    model = _disc(gravity=(0.0, -G), stiffness=10.0, restitution=0.5)
    with pytest.raises(rm.SimulationError, match=r"contact 'contact0' \(row 0\) went deeper than its shape's radius") \
            as failure:
        rm.simulate(model, [0.0, 0.1, 0.0], [0.0, 0.0, 0.0], 2.0)
    assert 0.0 < failure.value.result.t[-1] < 1.0  # the samples before the step that failed are kept
    assert failure.value.result.q[-1, 1] > 0.0


# ---- generalized_alpha and bdf: the contacts in the residual and in the Newton matrix ------------------------------

# generalized_alpha at a step that resolves the bounce (about 90 steps in the contact), bdf at a tight tolerance
IMPLICIT_RUNS = [("generalized_alpha", {"dt": 2e-4}), ("bdf", {"rtol": 1e-8, "atol": 1e-10})]


def _slope_bench(angle):
    """On a slope of ``angle``: a block (friction 0.5) that slides, a disc (friction 1) that rolls, a
    frictionless ball thrown at a wall whose normal is square to gravity (it bounces as without gravity), and a
    frictionless pellet thrown at a free tray that carries a surface (a contact between two bodies, which both
    fall alike: their relative motion is gravity's free)."""
    model = rm.Model(gravity=_slope(angle))
    model.add_body(joint="planar", mass=1.0, inertia=0.02, name="block")
    model.add_body(joint="planar", mass=1.0, inertia=0.005, name="disc")
    model.add_body(joint="planar", mass=2.0, inertia=0.01, name="ball")
    model.add_body(joint="planar", mass=3.0, inertia=0.1, name="tray")
    model.add_body(joint="planar", mass=2.0, inertia=0.01, name="pellet")
    model.add_ground()
    model.add_ground("deck", body="tray")
    model.add_ground("wall", point=(0.0, 10.0), normal=(math.cos(angle), math.sin(angle)))
    # landings damped as by impacts at 0.1 m/s (min_impact_speed): the normal vibration dies out within the first
    # half second, before the accelerations are measured
    model.add_contact("block", "floor", segment=((-0.2, 0.0), (0.2, 0.0)), radius=0.05, stiffness=1e6,
                      restitution=0.5, friction=0.5, min_impact_speed=0.1)
    model.add_contact("disc", "floor", radius=0.1, stiffness=1e6, restitution=0.5, friction=1.0,
                      min_impact_speed=0.1)
    model.add_contact("ball", "wall", radius=0.1, stiffness=1e6, restitution=0.7, friction=0.0, min_impact_speed=0.1)
    model.add_contact("pellet", "deck", radius=0.1, stiffness=1e6, restitution=0.7, friction=0.0,
                      min_impact_speed=0.1)
    return model


@pytest.mark.parametrize(("method", "options"), IMPLICIT_RUNS)
def test_the_implicit_methods_slide_roll_and_bounce_as_the_closed_forms(method, options):
    angle = math.atan(0.8)
    normal = np.array([math.cos(angle), math.sin(angle)])
    speed = 1.0
    ball = np.array([0.0, 10.0]) + 0.1 * normal  # touching the wall, moving into it
    q0 = [0.0, 0.05, 0.0, 1.0, 0.1, 0.0, *ball, 0.0, 20.0, 0.0, 0.0, 20.0, 0.1, 0.0]
    qd0 = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, *(-speed * normal), 0.0, 0.0, 0.5, 0.0, 0.0, -1.0, 0.0]
    result = rm.simulate(_slope_bench(angle), q0, qd0, 1.0, method=method, t_eval=np.linspace(0.0, 1.0, 11),
                         **options)
    assert result.success
    span = result.t[-1] - result.t[5]
    slide = (result.qd[-1, 0] - result.qd[5, 0]) / span
    assert slide == pytest.approx(G * (math.sin(angle) - 0.5 * math.cos(angle)), rel=1e-9)
    roll = (result.qd[-1, 3] - result.qd[5, 3]) / span
    assert roll == pytest.approx(2.0 / 3.0 * G * math.sin(angle), rel=1e-9)
    assert abs(result.qd[-1, 3] + 0.1 * result.qd[-1, 5]) < 1e-9  # no slip
    # the rebound along the wall's normal (about 18 ms of contact): generalized_alpha's error at 2e-4 s is 4.4e-5
    # (1.3e-5 at 1e-4 s: second order), bdf's at rtol 1e-8 (orders 1-2 on contacts) 2.5e-6
    rebound = result.qd[-1, 6:8] @ normal / speed
    assert rebound == pytest.approx(0.7, abs=2e-4 if method == "generalized_alpha" else 1e-5)
    # the pellet on the tray: the relative speed 1.5 m/s comes back times e (the reduced mass's bounce), the
    # momentum kept; the two bodies' coupling is left out of the Newton matrix (lagged), the residual has it (errors
    # 6.7e-5 and 2.4e-6, as the ball's)
    relative = result.qd[-1, 13] - result.qd[-1, 10]
    assert relative / 1.5 == pytest.approx(0.7, abs=2e-4 if method == "generalized_alpha" else 1e-5)
    assert 3.0 * result.qd[-1, 10] + 2.0 * result.qd[-1, 13] == pytest.approx(
        3.0 * 0.5 - 2.0 * 1.0 - 5.0 * G * math.cos(angle) * result.t[-1], rel=1e-9)
    state = result.contact_state[-1]
    assert np.all(state[3:, 0] == 0.0) and np.all(state[:3, 0] == 1.0)  # ball, pellet gone; block, disc touch
    forces = result.contact_forces()
    assert np.all(forces["active"][1:] == 3)


@pytest.mark.parametrize(("method", "options"), IMPLICIT_RUNS)
def test_the_implicit_methods_hold_a_block_below_its_friction_angle_without_creep(method, options):
    model = _block(math.atan(0.3), 0.5)
    result = rm.simulate(model, [0.0, 0.05, 0.0], [0.0, 0.0, 0.0], 10.0, method=method,
                         t_eval=np.linspace(0.0, 10.0, 11), **{**options, "dt": 1e-3} if "dt" in options else options)
    assert abs(result.q[-1, 0] - result.q[1, 0]) < 1e-9
    forces = result.contact_forces()
    assert forces["normal"][-1].sum() == pytest.approx(G * math.cos(math.atan(0.3)), rel=1e-9)
    assert forces["tangential"][-1].sum() == pytest.approx(-G * math.sin(math.atan(0.3)), rel=1e-9)


def test_a_stiff_contact_does_not_force_small_steps_on_the_implicit_methods():
    # a block sliding on a contact of k = 1e9 N/m^1.5: its normal vibration has omega = 2260 rad/s (2.8 ms), rk4's
    # stability limit is 2.83 / omega = 1.25 ms; at 10 ms rk4 diverges, generalized_alpha (its numerical damping
    # rho_inf = 0.5 damps the unresolved vibration) and bdf (orders 1-2 on contacts) give Coulomb's acceleration
    angle, friction = math.atan(0.8), 0.5
    model = rm.Model(gravity=_slope(angle))
    model.add_body(joint="planar", mass=1.0, inertia=0.02, name="block")
    _welded_bystander(model)
    model.add_ground()
    model.add_contact("block", "floor", segment=((-0.2, 0.0), (0.2, 0.0)), radius=0.05, stiffness=1e9,
                      restitution=0.5, friction=friction)
    depth = (G * math.cos(angle) / 2.0 / 1e9) ** (1.0 / 1.5)  # each end carries half the weight
    q0, qd0 = [0.0, 0.05 - depth, 0.0], [0.0, 0.0, 0.0]
    with pytest.raises(rm.SimulationError, match="diverges"):
        rm.simulate(model, q0, qd0, 1.0, method="rk4", dt=0.01)
    exact = G * (math.sin(angle) - friction * math.cos(angle))
    alpha = rm.simulate(model, q0, qd0, 1.0, method="generalized_alpha", dt=0.01, rho_inf=0.5)
    assert alpha.newton_iterations < 4 * alpha.nsteps
    bdf = rm.simulate(model, q0, qd0, 1.0, method="bdf", rtol=1e-6, atol=1e-6)
    assert np.diff(bdf.t).max() > 0.1  # steps of 100 ms once the landing's vibration has died out
    for result in (alpha, bdf):
        assert result.success
        half = np.searchsorted(result.t, 0.5)
        rate = (result.qd[-1, 0] - result.qd[half, 0]) / (result.t[-1] - result.t[half])
        assert rate == pytest.approx(exact, rel=1e-8)
        assert abs(result.q[-1, 1] - (0.05 - depth)) < 1e-8  # on the floor, at its static depth


def test_generalized_alpha_stops_at_an_impact_its_step_does_not_resolve():
    # a disc dropped 0.2 m onto the floor (impact at 1.98 m/s, about 11 ms of contact, its compression 5.5 ms): a
    # step of 4 ms jumps through the compression and gets the rebound wrong (before the watch, the run finished with
    # the disc falling again at 0.3 s where it rises at 0.114 m/s); the run stops at the step after the touch-down,
    # naming the contact, with the samples before it kept
    model = _slope_bench(0.0)
    q0 = [0.0, 0.05, 0.0, 1.0, 0.3, 0.0, 5.0, 5.0, 0.0, 20.0, 0.0, 0.0, 20.0, 0.1, 0.0]  # the ball far from the wall
    with pytest.raises(rm.SimulationError, match=r"at t = 0.208 s: contact 'contact1' \(row 2\) was made at 1.96 m/s "
                                                 r"and was still compressing at only 1 step end") as failure:
        rm.simulate(model, q0, np.zeros(15), 0.3, method="generalized_alpha", dt=4e-3)
    kept = failure.value.result
    assert kept.t[-1] == pytest.approx(0.204, abs=1e-12) and kept.q[-2, 4] > 0.1 > kept.q[-1, 4]  # up to the touch-down
    # at a step that resolves the impact the watch lets the run go on: the ball thrown at the wall (square to
    # gravity) rebounds with its restitution, the disc bounces off the floor
    q0[6], q0[7] = 0.15, 5.0  # the ball 5 cm from the wall
    qd0 = np.zeros(15)
    qd0[6] = -1.0
    result = rm.simulate(model, q0, qd0, 0.3, method="generalized_alpha", dt=2e-4)
    assert result.success
    assert result.qd[-1, 6] == pytest.approx(0.7, abs=2e-4)
    assert result.qd[-1, 4] > 0.0  # rising after the bounce


def test_forward_dynamics_has_the_contacts_at_a_given_contact_state():
    # a block resting on a slope below its friction angle: with the run's contact state (its stick anchors) the
    # contacts hold it (zero accelerations); with the default state (anchors at the contact points: no stick spring
    # stretch) nothing holds it along the slope at rest, which it then starts down at g sin(theta)
    angle = math.atan(0.3)
    model = _block(angle, 0.5)
    # the end state is at rest to the run's atol only: dopri5 keeps the stick springs' stiff mode (rate ~720 1/s)
    # at its stability limit with velocities ~ atol, and the held accelerations are that mode's ~720/s x |qd|, not
    # round-off of the forces (one ulp of a stick anchor moves them by 2e-12). With the default atol (1e-12) they
    # were 4e-10 (median) to 1.1e-9 over 40 starts a few ulps apart; with atol 1e-14, 4e-12 to 2.4e-11 over 200
    # starts, |qd| at most 2.6e-14.
    result = rm.simulate(model, [0.0, 0.05, 0.0], [0.0, 0.0, 0.0], 2.0, t_eval=[0.0, 2.0], atol=1e-14)
    q, qd, state = result.q[-1], result.qd[-1], result.contact_state[-1]
    held = rm.forward_dynamics(model, q, qd, contact_state=state)
    assert np.abs(qd).max() < 1e-13
    assert np.abs(held).max() < 1e-9
    loose = rm.forward_dynamics(model, q, qd)
    assert loose[0] == pytest.approx(G * math.sin(angle), rel=1e-9)
    assert abs(loose[1]) < 1e-9  # the normal forces still carry the block
    np.testing.assert_allclose(rm.forward_dynamics(model, q, qd, method="mass_matrix"), loose, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(rm.compiled_forward_dynamics(model)(q, qd), loose)
    with pytest.raises(rm.StateError, match=r"contact_state must have shape \(2, 6\)"):
        rm.forward_dynamics(model, q, qd, contact_state=state[:1])
    with pytest.raises(rm.StateError, match=r"contact_state\[1, 0\] \(row 'contact0 end 1'\): the active flag"):
        rm.forward_dynamics(model, q, qd, contact_state=state * [[1.0], [2.0]])


def _dropped_chain(n, height=0.05, link=0.01, mass=0.01, radius=0.0025):
    """(model, q0): ``benchmarks/contact.py``'s chain of n capsule links (1 cm, 10 g) held horizontally with a gentle
    wave and dropped onto a table, its first link free in the plane (two sliders and a hinge)."""
    model = rm.Model(gravity=(0.0, -G))
    names = [f"link{j + 1}" for j in range(n)]
    inertia = mass * link ** 2 / 12.0
    model.add_body(joint="prismatic", axis=(1.0, 0.0), mass=0.0, name="slider x")
    model.add_body("slider x", joint="prismatic", axis=(0.0, 1.0), mass=0.0, name="slider y")
    model.add_body("slider y", child_point=(0.0, link / 2.0), mass=mass, inertia=inertia, name=names[0])
    model.add_bodies(np.arange(2, n + 1), "revolute", parent_point=(0.0, -link / 2.0), child_point=(0.0, link / 2.0),
                     mass=mass, inertia=inertia, names=names[1:])
    model.add_ground("table")
    model.add_contact(names, "table", segment=((0.0, link / 2.0), (0.0, -link / 2.0)), radius=radius, stiffness=1e4,
                      exponent=1.0, restitution=0.3, friction=0.3, min_impact_speed=1.0)
    theta = math.pi / 2.0 + 0.12 * np.sin(2.0 * math.pi * np.arange(n) * link / 0.5)
    q0 = np.zeros(n + 2)
    q0[1] = radius + height
    q0[2] = theta[0]
    q0[3:] = np.diff(theta)
    return model, q0


def test_generalized_alpha_lands_a_chain_with_its_contact_modes_from_the_law_at_each_iterate():
    # links landing at 1 m/s, touching, sticking and sliding, bouncing off again: each iterate's residual is the law's
    # and the contacts' blocks of the matrix take the modes it took (refactorised where they change), made at the
    # iterate's orientations; before, the blocks had a stale orientation of the links: 9.2 iterations and 7.8
    # factorisations a step at this step
    model, q0 = _dropped_chain(20)
    times = np.array([0.05, 0.15])
    result = rm.simulate(model, q0, np.zeros_like(q0), 0.15, method="generalized_alpha", dt=1.25e-4, rho_inf=0.5,
                         t_eval=times)
    assert result.success
    assert result.newton_iterations < 3.5 * result.nsteps
    assert result.newton_factorizations < 0.5 * result.nsteps
    reference = rm.simulate(model, q0, np.zeros_like(q0), 0.15, rtol=1e-9, atol=1e-12, t_eval=times)
    assert reference.contact_forces()["active"][-1] == 0  # between bounces: the whole chain in the air again
    centres = rm.augmented.absolute_from_joint(model, result.q[-1], result.qd[-1])[0][2:, :2]
    exact = rm.augmented.absolute_from_joint(model, reference.q[-1], reference.qd[-1])[0][2:, :2]
    assert np.abs(centres - exact).max() < 1e-3  # the links' centres (0.40 mm; the capsules' radius is 2.5 mm)


def test_generalized_alpha_keeps_every_iterate_of_a_landing_inside_the_friction_cone():
    # 200 links landing: where a step's modes were frozen until Newton converged on them, a row frozen sticking
    # carried its stick spring unclipped, up to 11 times mu F_n at the iterates of a 50-link landing (5.6e3 N against
    # 170 N normal on the 1e4-link chain), until the check at convergence switched it to sliding and Newton converged
    # again: 5.7 iterations and 2.4 factorisations a step here. With the modes the law's at every iterate (clipped
    # at mu F_n, switched to sliding at once) it takes 3.9 and 1.45, and lands on the same states (to 2e-14 m).
    # Landed, the iteration reaches its round-off (corrections of 1e-11, above newton_tol) in 2 to 3 iterations;
    # iterating on until it stalled with fresh factors, then probing the round-off there, cost 154 probes over the
    # 1,200 steps. Accepted where the error its contraction predicts is within the tolerance and a recent step's
    # measured round-off: 3.43 iterations and 1.28 factorisations a step, 6 probes (the links' centres 5e-13 m
    # from the earlier test's)
    model, q0 = _dropped_chain(200)
    result = rm.simulate(model, q0, np.zeros_like(q0), 0.15, method="generalized_alpha", dt=1.25e-4, rho_inf=0.5,
                         t_eval=[0.15])
    assert result.success and result.newton_split_steps == 0
    assert result.newton_iterations < 3.65 * result.nsteps
    assert result.newton_factorizations < 1.4 * result.nsteps
    # nfev: the start's evaluation, one residual an iteration, and the round-off probes
    assert result.nfev - result.newton_iterations - 1 < 30


def test_generalized_alpha_lands_a_long_chain_at_the_default_newton_tol_past_the_round_off_of_its_residual():
    # 600 links landing at 1 m/s: the links near the free end whip (joint accelerations growing four-fold link by
    # link, 7e4 rad/s^2 at the end), and changes of the state by one unit in its last place move the accelerations by
    # 1e-6 rad/s^2 there: the corrections stall at 1e-10 to 1e-9, far above newton_tol = 1e-12; before, Newton failed
    # at t = 0.101 s; now a stalled iteration is converged within the round-off measured at its iterate
    model, q0 = _dropped_chain(600)
    # a tolerance above the round-off converges by the plain test: the same state to the round-off
    loose = rm.simulate(model, q0, np.zeros_like(q0), 0.11, method="generalized_alpha", dt=1.25e-4, rho_inf=0.5,
                        t_eval=[0.11], newton_tol=1e-10)
    other = rm.augmented.absolute_from_joint(model, loose.q[-1], loose.qd[-1])[0][2:, :2]
    # and so does the run from a start one unit in the last place of one joint angle away: last bits (this change,
    # or arithmetic rounded otherwise: another processor, another compiler) decide no step's convergence. When the
    # contact modes were held frozen until Newton had converged on them and then checked, a check at the round-off
    # floor could take a correction below half the last one for a contraction still going on: this run split two
    # steps in halves and ended 1.3e-4 m from the other (the scheme's error at dt / 2), where the start as given
    # split none
    nudged = q0.copy()
    nudged[26] = np.nextafter(nudged[26], np.inf)
    for start in (q0, nudged):
        result = rm.simulate(model, start, np.zeros_like(q0), 0.11, method="generalized_alpha", dt=1.25e-4,
                             rho_inf=0.5, t_eval=[0.11])
        assert result.success and result.contact_forces()["active"][-1] > 100
        assert result.newton_split_steps == 0
        centres = rm.augmented.absolute_from_joint(model, result.q[-1], result.qd[-1])[0][2:, :2]
        assert np.abs(centres - other).max() < 1e-10  # [m] (1.5e-14 with an empty kernel cache, 1e-11 with the suite's)
        # the free end's rates carry the whip's sensitivity to last bits: 8.2e-9 with an empty kernel cache, up to
        # 1.0e-5 (the nudged start) with the cache the whole suite leaves (the same kernels' machine code rounded
        # otherwise); the positions above and the splits are what a step converged elsewhere would move
        assert np.abs(result.qd[-1] - loose.qd[-1]).max() < 1e-4  # [m/s, rad/s]


def test_generalized_alpha_takes_a_step_whose_newton_iteration_fails_again_in_halves():
    # at the touch-down the 20-link chain's contact modes change from iterate to iterate: at max_newton = 6 a step of
    # 0.125 ms does not converge there (before the splits, the run stopped at t = 0.101125 s); such a step is taken
    # again in halves from its start, down to dt / 16 where needed, and the chain lands as at dt / 2 (where the
    # landing needs no split); the t_eval point inside the first split step is on the halves' interpolant
    model, q0 = _dropped_chain(20)
    times = np.array([0.05, 0.1010625, 0.15])
    split = simulate_generalized_alpha(model, q0, np.zeros_like(q0), 0.0, 0.15, 1.25e-4, t_eval=times, rho_inf=0.5,
                                       max_newton=6)
    assert split.success and split.nsteps == 1200 and split.newton_split_steps > 10
    np.testing.assert_array_equal(split.t[1:], times)
    half = rm.simulate(model, q0, np.zeros_like(q0), 0.15, method="generalized_alpha", dt=6.25e-5, rho_inf=0.5,
                       t_eval=times)
    assert half.newton_split_steps == 0
    # the links' centres: 1.6e-3 mm inside the first split step, 0.49 mm at 0.15 s after the bounces (an unsplit run
    # at dt, max_newton 50, is 2.2e-3 mm and 0.47 mm from the run at dt / 2 there)
    for k, tolerance in ((2, 1e-5), (3, 1e-3)):
        centres = rm.augmented.absolute_from_joint(model, split.q[k], split.qd[k])[0][2:, :2]
        exact = rm.augmented.absolute_from_joint(model, half.q[k], half.qd[k])[0][2:, :2]
        assert np.abs(centres - exact).max() < tolerance
    # a step that fails even in pieces of dt / 16 (max_newton = 2: too few iterations for the touch-down) stops the run
    # there, naming the time, with the samples before it (step 810; before the contacts' blocks were exact, step 809)
    with pytest.raises(rm.SimulationError, match=r"did not converge at t = 0.101132813 s \(step 810, dt = 0.000125 s, "
                                                 r"split in halves down to dt / 16 = 7.8125e-06 s\)") as failure:
        simulate_generalized_alpha(model, q0, np.zeros_like(q0), 0.0, 0.15, 1.25e-4, t_eval=times, rho_inf=0.5,
                                   max_newton=2)
    kept = failure.value.result
    assert kept.status == "failed" and kept.newton_split_steps >= 4
    np.testing.assert_array_equal(kept.t, [0.0, 0.05, 0.1010625])
    np.testing.assert_array_equal(kept.q[1], split.q[1])
