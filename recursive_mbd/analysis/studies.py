"""The n-link rigid pendulum against the continuous hanging chain (Takeno 2018's study), from 10 to 1e6 links.

Each study is a function returning arrays and a small report (a dict); examples/chain_studies.py runs them and
draws the plots, benchmarks/chain_studies.py records their cost.

- small oscillations: ``continuum_frequencies`` (omega_k = (j_0,k / 2) sqrt(g / L), Bessel zeros) against the
  n-link chain's (``chain_modes``, an O(N)-per-iteration Lanczos solve) in ``frequency_study``;
- ``continuous_catenary`` against ``discrete_catenary`` (a chain pinned at both ends) in ``catenary_study``;
- ``folded_chain_fall``: a chain hanging from two supports a small gap apart, one end released;
- ``chain_fountain``: a chain pulled out of a pile in a beaker by its end falling to the floor, over the rim;
- ``hanging_swing`` and its spatial sibling ``hanging_swing_3d``: the chain swinging in its lowest modes against
  the linear solution;
- ``whirling_chain``: a chain hung from a point turning on a small horizontal circle (``whirling_chain_model``),
  started on its steady whirl (``steady_whirl``, statics in the turning frame) and simulated; the discrete whirl
  against the continuous string's (``whirling_string``, a boundary-value solve) in ``whirl_convergence``;
- ``tip_whip``: a chain released from the horizontal, the tip speed and what the integrator pays for it.
"""

import itertools
import math
import numbers
import time
import types

import numpy as np
import scipy.integrate
import scipy.optimize
import scipy.sparse.linalg
import scipy.special

from .. import _checks
from .._kernels.arrays import readonly_zeros
from .._kernels.planar import tree
from ..dynamics.calls import forward_dynamics
from ..dynamics.kinematics import forward_kinematics, point_kinematics
from ..dynamics.spatial_kinematics import momentum as momentum_of
from ..errors import ModelError
from ..integrate.simulate import simulate
from ..integrate.sweeps import sweep
from ..model import chains
from ..model.configuration import difference, integrate_configuration
from ..model.planar import Model
from ..model.spatial import Model3D
from ..model.workspace import workspace
from .analyses import _load_stiffness, joint_reactions, modes, point_motion, static_equilibrium


def _map(function, grid, client):
    """function over the keyword grid (a dict of sequences, product), in a loop or with ``rm.sweep`` on Dask."""
    if client is None or client is False:
        names = list(grid)
        return [function(**dict(zip(names, combo, strict=True))) for combo in
                itertools.product(*grid.values())]
    return sweep(function, grid, client=None if client is True else client)


def _positive(value, what):
    value = _checks.real(value, what, allow_inf=True)  # TypeError for a string; inf and NaN refused below
    if not (math.isfinite(value) and value > 0.0):
        raise ModelError(f"{what} must be finite and > 0, got {value}")
    return value


def _links(n):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (numbers.Integral, numbers.Real)):
        raise TypeError(f"the number of links must be an integer >= 1, got {type(n).__name__} {n!r:.40}")
    if not (math.isfinite(n) and int(n) == n and n >= 1):
        raise ModelError(f"the number of links must be an integer >= 1, got {n!r}")
    return int(n)


def chain_points(q, length=1.0):
    """Joint positions of a ``serial_chain`` / ``bead_chain`` of total ``length`` from its coordinates q (..., n):
    (..., n + 1, 2), the support first and the free end last."""
    theta = np.cumsum(np.asarray(q, dtype=float), axis=-1)
    link = length / theta.shape[-1]
    steps = np.stack((link * np.sin(theta), -link * np.cos(theta)), axis=-1)
    zero = np.zeros((*theta.shape[:-1], 1, 2))
    return np.concatenate((zero, np.cumsum(steps, axis=-2)), axis=-2)


# ---- small oscillations -------------------------------------------------------------------------------------------

def continuum_frequencies(k, length=1.0, gravity=9.81):
    """The first k natural frequencies [rad/s] of a continuous uniform chain hanging from one end:
    omega_k = (j_0,k / 2) sqrt(g / L), j_0,k the zeros of the Bessel function J_0."""
    k = _checks.integer(k, "k", low=1, high=10**6)
    return 0.5 * scipy.special.jn_zeros(0, k) * math.sqrt(_positive(gravity, "gravity") / _positive(length, "length"))


def continuum_mode_shape(k, depth, length=1.0):
    """Lateral displacement of mode k (1-based) at ``depth`` below the suspension point: J_0(j_0,k sqrt(1 - depth/L))
    (the free end, depth = L, has amplitude 1)."""
    zero = scipy.special.jn_zeros(0, _checks.integer(k, "k", low=1, high=10**6))[-1]
    length = _positive(length, "length")
    return scipy.special.j0(zero * np.sqrt(np.clip(1.0 - np.asarray(depth) / length, 0.0, 1.0)))


def _orient_modes(shapes):
    """Flip each mode shape (column) in place to the sign convention of ``chain_modes``; returns shapes."""
    n = shapes.shape[0]
    weights = np.arange(n, 0, -1, dtype=float)  # sum_j theta_j = sum_j (n - j) q_j, theta the absolute angles
    for j in range(shapes.shape[1]):
        v = shapes[:, j]
        tip = weights @ v
        if abs(tip) <= 1e-8 * np.linalg.norm(weights) * np.linalg.norm(v):  # no clear free-end displacement
            tip = v[int(np.argmax(np.abs(v)))]
        if tip < 0.0:
            v *= -1.0
    return shapes


def chain_modes(model, k):
    """Lowest k frequencies [rad/s] and M-normalised mode shapes (nq, k) of a serial revolute chain hanging at rest.

    Deterministic: the Lanczos iteration starts from a fixed vector, and each mode shape has the sign that makes
    the sum of the absolute link angles, sum_j theta_j = sum_j (n - j + 1) q_j (for equal links proportional to
    the free end's lateral displacement), positive; should that vanish, its largest-magnitude entry is positive.
    So the same model gives the same bits in every process.

    At rest the stiffness is K_ij = kappa_max(i,j) (``analysis._load_stiffness``) = L diag(delta) L^T with L the
    upper triangle of ones, so K^-1 costs O(N); M v costs one Newton-Euler pass (no gravity, no velocity). The
    generalised problem M v = mu K v, mu = 1 / omega^2, is solved for its largest mu by scipy's Lanczos (eigsh):
    O(N) per iteration, no N x N matrix. Small chains (N <= 3 k + 10) go through the dense ``rm.modes``.
    """
    workspace(model)  # compiles the model, or a TypeError for what is not a Model
    n = model.nq
    k = _checks.integer(k, "k", low=1)
    if k > n:
        raise ModelError(f"k = {k} modes asked of a chain with {n} coordinates")
    if n <= 3 * k + 10:
        omega, shapes = modes(model, np.zeros(n), k)
        return omega, _orient_modes(shapes)
    if model.elem_int.shape[0] or model.nloops or np.any(model.body_parent != np.arange(n) - 1):
        raise ModelError("chain_modes needs a serial revolute chain without elements or loops; use rm.modes")
    kappa = _load_stiffness(model, np.zeros(n), np.zeros(0))
    delta = kappa - np.append(kappa[1:], 0.0)
    if not np.all(delta > 0.0):
        raise ModelError("the chain is not hanging stably at q = 0 (its stiffness is not positive definite)")
    ws = workspace(model)
    zero_g = readonly_zeros(2)  # read-only as the model's gravity: the inverse dynamics compile once
    out = np.zeros(n)

    def mass_times(v):
        tree.inverse_dynamics(model.body_int, model.body_real, zero_g, ws.zeros, ws.zeros, np.ascontiguousarray(v),
                              ws.no_wrench, ws.ws, out)
        return out.copy()

    def stiffness_times(v):  # L diag(delta) L^T v: (L^T v)_d = sum_{i <= d} v_i, (L w)_i = sum_{d >= i} w_d
        return np.cumsum((delta * np.cumsum(v))[::-1])[::-1]

    def stiffness_solve(b):
        w = b - np.append(b[1:], 0.0)  # L^-1 b
        c = w / delta
        return c - np.concatenate(([0.0], c[:-1]))  # L^-T c

    op = scipy.sparse.linalg.LinearOperator
    values, vectors = scipy.sparse.linalg.eigsh(op((n, n), matvec=mass_times, dtype=float), k=k,
                                                M=op((n, n), matvec=stiffness_times, dtype=float),
                                                Minv=op((n, n), matvec=stiffness_solve, dtype=float), which="LA",
                                                v0=np.random.default_rng(0).standard_normal(n))  # no random start
    order = np.argsort(values)[::-1]
    omega = 1.0 / np.sqrt(values[order])
    shapes = vectors[:, order]
    for j in range(k):  # M-normalise
        shapes[:, j] /= math.sqrt(shapes[:, j] @ mass_times(shapes[:, j]))
    return omega, _orient_modes(shapes)


_BUILDERS = {"rods": chains.serial_chain, "beads": chains.bead_chain}


def _chain_frequencies(n, k, kind, length, gravity):
    """(the n-link chain's lowest min(k, n) frequencies, seconds taken): one row of ``frequency_study``."""
    start = time.perf_counter()
    omega = chain_modes(_BUILDERS[kind](int(n), length=length, mass=1.0, gravity=gravity), min(k, int(n)))[0]
    return omega, time.perf_counter() - start


def frequency_study(ns, k=3, kind="rods", length=1.0, gravity=9.81, client=None):
    """Convergence of the n-link chain's lowest k frequencies to the continuum's.

    kind: "rods" (``chains.serial_chain``) or "beads" (``chains.bead_chain``). Returns a dict with ``n``, ``omega``
    (len(ns), k), ``continuum`` (k,), ``error`` (signed relative error; an n-link chain has n modes, so for n < k
    the modes beyond the n-th are NaN in ``omega`` and ``error``), and per mode the fitted ``order`` p and
    ``constant`` C of |error| = C n^-p over the larger half of ns, and ``seconds`` per n. With ``client`` (a
    ``distributed.Client``, a scheduler address, or True for a LocalCluster) the n run on Dask (``rm.sweep``).
    """
    if kind not in _BUILDERS:
        raise ValueError(f"kind must be 'rods' or 'beads', got {kind!r}")
    ns = np.array([_links(n) for n in ns])
    exact = continuum_frequencies(k, length, gravity)
    omega = np.full((ns.size, k), np.nan)
    seconds = np.zeros(ns.size)
    grid = {"n": [int(n) for n in ns], "k": [k], "kind": [kind], "length": [length], "gravity": [gravity]}
    for row, (values, elapsed) in enumerate(_map(_chain_frequencies, grid, client)):
        omega[row, :values.size] = values
        seconds[row] = elapsed
    error = omega / exact - 1.0
    order, constant = np.full(k, np.nan), np.full(k, np.nan)
    tail = ns >= np.median(ns)
    for j in range(k):
        use = tail & np.isfinite(error[:, j]) & (np.abs(error[:, j]) > 0)
        if use.sum() >= 2:
            slope, intercept = np.polyfit(np.log(ns[use]), np.log(np.abs(error[use, j])), 1)
            order[j], constant[j] = -slope, math.exp(intercept)
    return {"kind": kind, "n": ns, "omega": omega, "continuum": exact, "error": error, "order": order,
            "constant": constant, "seconds": seconds}


# ---- catenary ------------------------------------------------------------------------------------------------------

def continuous_catenary(span, length, mass=1.0, gravity=9.81):
    """The uniform catenary y = a cosh(x / a) hanging between two supports at one height.

    Returns a dict: ``a`` [m] (2 a sinh(span / 2a) = length), ``sag`` [m], ``horizontal_tension`` H = w a,
    ``vertical_reaction`` = weight / 2 per support, ``support_tension`` [N] (w = m g / length).
    """
    span, length = _positive(span, "span"), _positive(length, "length")
    if not span < length:
        raise ModelError(f"the span {span} must be shorter than the chain ({length})")
    ratio = length / span
    u = scipy.optimize.brentq(lambda u: math.sinh(u) / u - ratio, 1e-12, 700.0, xtol=1e-15, rtol=1e-15)
    a = span / (2.0 * u)
    w = mass * gravity / length
    vertical = 0.5 * mass * gravity
    return {"a": a, "sag": a * (math.cosh(u) - 1.0), "horizontal_tension": w * a, "vertical_reaction": vertical,
            "support_tension": math.hypot(w * a, vertical)}


def pinned_chain(n, span, length=1.0, mass=1.0, gravity=9.81):
    """``serial_chain(n)`` with its free end pinned to the ground at (span, 0): a revolute loop."""
    span, length = _positive(span, "span"), _positive(length, "length")
    if not span < length:
        raise ModelError(f"the gap/span {span} m must be shorter than the chain ({length} m)")
    model = chains.serial_chain(_links(n), length=length, mass=mass, gravity=gravity)
    model.add_loop("revolute", n - 1, (0.0, -0.5 * length / n), "ground", (span, 0.0), name="second support")
    return model


def _catenary_guess(n, span, length):
    """Joint angles of n rods laid on the continuous catenary (slope atan(s / a) at arc length s from the bottom)."""
    a = continuous_catenary(span, length)["a"]
    s = -0.5 * length + (np.arange(n) + 0.5) * length / n
    theta = np.arctan(s / a) + 0.5 * np.pi  # rod direction (sin theta, -cos theta) = (cos phi, sin phi)
    return np.diff(theta, prepend=0.0)


def discrete_catenary(n, span, length=1.0, mass=1.0, gravity=9.81):
    """Static equilibrium of n rods pinned at (0, 0) and (span, 0) (``rm.static_equilibrium``).

    Returns a dict: ``model``, ``q``, ``sag`` (depth of the lowest joint or rod centre), ``horizontal_tension``
    and ``vertical_reaction`` (at the first support), ``slopes`` tan(phi_k) of the rods, ``equilibrium``.
    """
    model = pinned_chain(n, span, length, mass, gravity)
    eq = static_equilibrium(model, _catenary_guess(n, span, length))
    theta = np.cumsum(eq.q)
    phi = theta - 0.5 * np.pi
    link = length / n
    joints_y = np.concatenate(([0.0], np.cumsum(link * np.sin(phi))))
    centres_y = 0.5 * (joints_y[1:] + joints_y[:-1])
    support = eq.reactions.joint[0]
    return {"model": model, "q": eq.q, "sag": -min(joints_y.min(), centres_y.min()),
            "horizontal_tension": abs(support[0]), "vertical_reaction": support[1], "slopes": np.tan(phi),
            "equilibrium": eq}


def catenary_study(ns, span, length=1.0, mass=1.0, gravity=9.81, client=None):
    """Sag, horizontal tension and support reaction of the discrete catenary against the continuous one, with the
    fitted order of the sag error in the link length. ``client`` as in ``frequency_study``."""
    exact = continuous_catenary(span, length, mass, gravity)
    grid = {"n": list(ns), "span": [span], "length": [length], "mass": [mass], "gravity": [gravity]}
    rows = _map(discrete_catenary, grid, client)
    sag = np.array([r["sag"] for r in rows])
    tension = np.array([r["horizontal_tension"] for r in rows])
    reaction = np.array([r["vertical_reaction"] for r in rows])
    links = length / np.asarray(ns, dtype=float)
    error = sag - exact["sag"]
    order = float(np.polyfit(np.log(links[-3:]), np.log(np.abs(error[-3:])), 1)[0]) if len(ns) >= 3 else np.nan
    return {"n": np.asarray(ns), "sag": sag, "horizontal_tension": tension, "vertical_reaction": reaction,
            "sag_error": error, "tension_error": tension - exact["horizontal_tension"], "sag_order": order,
            "continuous": exact}


# ---- the falling folded chain -------------------------------------------------------------------------------------

def energy_conserving_speed(x, length, gravity=9.81):
    """Free-end speed of a folded chain of total length L after falling x, if no energy is lost:
    v^2 = g x (2L - x) / (L - x)."""
    x = np.asarray(x, dtype=float)
    return np.sqrt(gravity * x * (2.0 * length - x) / (length - x))


def energy_conserving_fall_time(length, gravity=9.81):
    """Time for the free end to fall the whole length L by ``energy_conserving_speed`` (shorter than free fall)."""
    value, _ = scipy.integrate.quad(lambda x: 1.0 / energy_conserving_speed(x, length, gravity), 0.0, length,
                                    limit=200)
    return value


def folded_chain_fall(n, gap=None, length=1.0, mass=1.0, gravity=9.81, rtol=1e-10, atol=1e-12, samples=400,
                      method="dopri5"):
    """The classic falling folded chain: n rods hanging from supports at (0, 0) and (gap, 0), settled to static
    equilibrium; then the second support is removed and the free end falls until the chain snaps taut.

    Returns a dict with the run (``result``), the free end's ``t``, ``x`` (fall distance), ``speed``,
    ``acceleration`` (vertical, from the dynamics), the ``support_force`` (nt, 2) at the remaining support,
    ``fall_time`` (first time the free end stops falling), ``free_fall_time`` sqrt(2L/g),
    ``energy_conserving_time``, ``max_speed`` and ``energy_error`` (max |E - E0| / (m g L)).
    """
    n = _links(n)
    gap = length / n if gap is None else _positive(gap, "gap")
    if not gap < length:
        raise ModelError(f"the gap {gap} m must be shorter than the chain ({length} m)")
    settled = discrete_catenary(n, gap, length, mass, gravity)
    chain = chains.serial_chain(n, length=length, mass=mass, gravity=gravity)
    tip = (0.0, -0.5 * length / n)

    def taut(t, q, qd):  # the free end's vertical velocity turns from falling to rising
        return point_kinematics(chain, q, qd, n - 1, tip)[1][1]

    taut.terminal = True
    taut.direction = 1.0
    free_fall = math.sqrt(2.0 * length / gravity)
    res = simulate(chain, settled["q"], np.zeros(n), 3.0 * free_fall, method=method, rtol=rtol, atol=atol,
                   t_eval=np.linspace(0.0, 3.0 * free_fall, samples), events=taut)
    qdd = res.qdd()
    position, velocity, acceleration = point_motion(chain, res.q, res.qd, qdd, n - 1, tip)
    height, speed, accel = position[:, 1], -velocity[:, 1], acceleration[:, 1]
    support = np.array([joint_reactions(chain, q, qd, a).joint[0, :2] for q, qd, a in zip(res.q, res.qd, qdd,
                                                                                           strict=True)])
    kinetic, potential = res.energy()
    energy = kinetic + potential
    return {"result": res, "t": res.t, "x": -height, "speed": speed, "acceleration": accel,
            "support_force": support, "fall_time": res.t_events[0][0] if res.t_events[0].size else np.nan,
            "free_fall_time": free_fall, "energy_conserving_time": energy_conserving_fall_time(length, gravity),
            "max_speed": float(np.abs(velocity).max()),
            "energy_error": float(np.abs(energy - energy[0]).max() / (mass * gravity * length))}


def _fall_summary(n, **options):
    summary = folded_chain_fall(n, **options)
    del summary["result"]  # the run holds compiled callbacks, which do not travel between processes
    return summary


def folded_chain_study(ns, gap=None, length=1.0, mass=1.0, gravity=9.81, rtol=1e-10, atol=1e-12, samples=400,
                       method="dopri5", client=None):
    """``folded_chain_fall`` for each n in ``ns``: a list of its dicts without the run itself (``result``).

    ``client`` as in ``frequency_study``: with Dask the n run in parallel processes or on a cluster.
    """
    grid = {"n": list(ns), "gap": [gap], "length": [length], "mass": [mass], "gravity": [gravity], "rtol": [rtol],
            "atol": [atol], "samples": [samples], "method": [method]}
    return _map(_fall_summary, grid, client)


# ---- the chain fountain -------------------------------------------------------------------------------------------

def chain_fountain_model(n, drop, link=0.01, hanging=30, rise=1, stiffness=1e5, friction=0.2, restitution=0.3,
                         density=0.1, gravity=9.81):
    """A chain of n capsule links folded in a pile in a beaker, its end led over the rim and hanging down beside
    the beaker towards a floor ``drop`` [m] below the beaker's floor (``chain_fountain``).

    The beaker: its floor (y = 0, a ground with an extent), a wall on the left (a ground with normal +x) and, on the
    right, a lip: a fixed drum of radius rho whose top, at 2 rho, is the rim. Below the lip a stand (a ground with
    normal +x under the lip's centre, from y = 0 to the floor) keeps the hanging chain from swinging under the
    beaker (a ground is solid below its whole extent). The pile: rows of equal links lying flat, stacked 2.1 radii
    apart, each row joined to the next by one link inclined between them (rows alternate in direction); its top row
    runs towards the lip, where ``rise`` links stand up to the height of the rim, links lie across the lip and
    ``hanging`` links (and the few that the pile's whole rows leave) hang beside it. The pile takes the rest, in
    rows of about 20 links: chains with the same n - ``hanging`` have the same pile, whatever the drop. Links are
    ``link`` [m] long with capsules of a quarter of that in radius, ``density`` [kg/m]; every link touches the
    beaker, the lip, the stand, the floor and the other links (``add_self_contact``), all with one Hunt-Crossley law
    (``stiffness`` [N/m^1.5], ``restitution``, ``friction``). Link 1 (a planar joint, q[0:2]) is the hanging end;
    q[2] its angle from the downward vertical, q[3:] the joint angles.

    Returns (model, q0, geometry): geometry a dict with ``link``, ``radius``, ``rim`` (the rim's height above the
    beaker's floor), ``pile_top`` (the top row's height), ``lip_center``, ``lip_radius``, ``drop``, ``layers`` and
    ``row`` (the pile's rows and links per row), ``hanging`` (links hanging at the start) and ``mass`` (the
    chain's, kg).
    """
    n = _links(n)
    drop, link = _positive(drop, "drop"), _positive(link, "link")
    rise = _checks.integer(rise, "rise", low=1)
    radius = link / 4.0
    gap = 0.05 * radius
    spacing = 2.0 * radius + gap  # between the rows' axes: the rows lie on each other
    shift = math.sqrt(link * link - spacing * spacing)  # the horizontal span of the link joining two rows
    # the rim's height sets the lip (2 rho), the lip the links across it: estimate them to size the pile
    hanging = _checks.integer(hanging, "hanging", low=1)
    budget = n - hanging - rise - 6
    layers = max(1, (budget + 1) // 21)  # rows of about 20 links
    layers -= 1 - layers % 2  # an odd number: the top row runs towards the lip
    row = (budget + 1) // layers - 1
    if row < 2:
        raise ModelError(f"{n} links are too few for a pile, the rise and {hanging} hanging links")
    points = [(0.0, radius)]  # the joints, from the pile's bottom end up to the hanging end
    x, y = 0.0, radius
    for layer in range(layers):
        direction = 1.0 if layer % 2 == 0 else -1.0
        for _ in range(row):
            x += direction * link
            points.append((x, y))
        if layer < layers - 1:
            x -= direction * shift
            y += spacing
            points.append((x, y))
    pile_top = y
    for _ in range(rise):
        y += link
        points.append((x, y))
    lip = (y - radius - gap) / 2.0  # the links across the lip rest a twentieth of a radius above it
    centre = x + radius + 2.0 * gap + lip
    over = math.ceil((centre + lip + radius + gap - x) / link)
    for _ in range(over):
        x += link
        points.append((x, y))
    left = n - (len(points) - 1)  # the hanging links, and those the pile's whole rows did not take
    if left < 1:
        raise ModelError(f"{n} links are too few for the pile, the rise and the links across the lip")
    if left * link >= y + drop - radius:
        raise ModelError(f"the {left} hanging links would reach below the floor {drop} m down: take fewer links "
                         "or a larger drop")
    for _ in range(left):
        y -= link
        points.append((x, y))
    points = np.array(points[::-1])
    steps = np.diff(points, axis=0)
    theta = np.arctan2(steps[:, 0], -steps[:, 1])  # a link points along (sin theta, -cos theta)
    model = Model(gravity=(0.0, -_positive(gravity, "gravity")), name=f"chain fountain, {n} links")
    names = [f"link{j + 1}" for j in range(n)]
    mass = _positive(density, "density") * link
    inertia = mass * link * link / 12.0
    model.add_body(joint="planar", child_point=(0.0, link / 2.0), mass=mass, inertia=inertia, name=names[0])
    model.add_bodies(np.arange(n - 1), "revolute", parent_point=(0.0, -link / 2.0), child_point=(0.0, link / 2.0),
                     mass=mass, inertia=inertia, names=names[1:])
    wall = -shift - radius - gap
    model.add_ground("beaker", point=(0.0, 0.0), extent=(wall, centre))
    model.add_ground("wall", point=(wall, 0.0), normal=(1.0, 0.0), extent=(-8.0 * lip, 0.0))  # 4 rims tall
    model.add_drum("rim", center=(centre, lip), radius=lip)
    # the stand's face under the lip's centre: a link coming down beside the lip cannot be within a radius of it
    # where the face begins (y = 0), so no contact is made at once at a depth by entering its extent
    model.add_ground("stand", point=(centre, 0.0), normal=(1.0, 0.0), extent=(0.0, drop))
    model.add_ground("floor", point=(0.0, -drop))
    segment = ((0.0, link / 2.0), (0.0, -link / 2.0))
    law = {"stiffness": stiffness, "restitution": restitution, "friction": friction}
    for surface in ("beaker", "wall", "rim", "stand", "floor"):
        model.add_contact(names, surface, segment=segment, radius=radius, name=surface, **law)
    model.add_self_contact(names, segment=segment, radius=radius, name="links", **law)
    q0 = np.concatenate((points[0], [theta[0]], np.diff(theta)))
    return model, q0, {"link": link, "radius": radius, "rim": 2.0 * lip, "pile_top": pile_top,
                       "lip_center": (centre, lip), "lip_radius": lip, "drop": drop, "layers": layers, "row": row,
                       "hanging": left, "mass": n * mass}


def _chain_joints(q, qd, link):
    """Joint positions and velocities (..., n + 1, 2) of a chain whose first link has a planar joint (q[0:2] its
    free end) and links ``link`` long along their -y axes."""
    theta = np.cumsum(q[..., 2:], axis=-1)
    rate = np.cumsum(qd[..., 2:], axis=-1)
    along = np.stack((np.sin(theta), -np.cos(theta)), axis=-1) * link
    turn = np.stack((np.cos(theta), np.sin(theta)), axis=-1) * (link * rate)[..., None]
    position = np.concatenate((q[..., None, 0:2], q[..., None, 0:2] + np.cumsum(along, axis=-2)), axis=-2)
    velocity = np.concatenate((qd[..., None, 0:2], qd[..., None, 0:2] + np.cumsum(turn, axis=-2)), axis=-2)
    return position, velocity


def chain_fountain(n, drop, t_end=0.8, samples=81, rtol=1e-5, atol=1e-8, method="dopri5", *, dt=None,
                   newton_tol=None, **options):
    """A chain fountain (Biggins and Warner 2014) in the plane: the chain of ``chain_fountain_model(n, drop,
    **options)`` let go at rest; its hanging end pulls it out of the pile, over the lip and down to the floor.

    Integrated by ``method``: dopri5 by default, with ``rtol``/``atol``; a fixed-step method takes ``dt`` (and
    ``newton_tol`` for the implicit ones). Measured at ``samples`` times over ``t_end`` [s]: ``top``, the height of
    the chain's highest joint over the beaker (left of the lip's outer side) above the rim plus a link's radius [m]
    (0: the chain lies on the rim; negative: below); ``speed``, the chain's speed where it falls, the median speed
    of the joints outside the beaker below its floor and above the lowest tenth of the drop (m/s; NaN before any
    is there); ``pile``, the height of the pile's top (the highest
    joint in the beaker left of the lip moving slower than a tenth of the chain, m; NaN when none is) and
    ``remaining``, the number of such joints; ``rim_contacts``, the links touching the lip; ``landed``, whether the
    hanging end has reached the floor.

    Returns a dict with those series, ``t``, the run (``result``), ``geometry`` (``chain_fountain_model``'s) and
    ``summary``: over the samples after the end has landed while a row of the pile is left (the fountain
    running; ``samples_running``), the mean, least and largest ``top`` (``mean_top``, ``min_top``,
    ``max_top``), the fraction of them with the chain clear of the lip (``clear``), the mean ``speed`` and
    ``pile`` (``mean_speed``, ``mean_pile``), Biggins and Warner's drop h1 (pick-up to floor, ``h1``) and rise h2
    (pick-up to the arch's top, ``h2``), both from the means; and for the whole run the ``energy_balance`` (the
    largest |E + W_dissipated - E0| [J], W including the contacts' work) against the scale of the chain's energy
    ``energy_scale`` = m g drop [J], ``nsteps`` and the wall ``seconds`` of the run. With no sample running (the
    end did not land before the pile ran out) the summary has only the whole run's entries.

    Measured (``examples/chain_fountain.py --drops 0.35 0.5 0.7 1.0``: 200 links, 30 hanging, 0.8 s, dopri5 at rtol
    1e-5): h2 / h1 = 0.075, 0.072, 0.071 and 0.061 at drops of 0.35, 0.5, 0.7 and 1 m, the mean top 6.7, 11.5, 20.1
    and 24.9 mm above the rim: the rise grows roughly in proportion to the drop, as Biggins and Warner's h2 / h1 =
    alpha / (1 - alpha - beta) has it (alpha about 0.07 for beta = 0). Qualitative only: the chain is still speeding
    up when the pile runs out, most at the largest drop, where the end falls 0.7 m before it lands.
    """
    model, q0, geometry = chain_fountain_model(n, drop, **options)
    t_end = _positive(t_end, "t_end")
    samples = _checks.integer(samples, "samples", low=2)
    start = time.perf_counter()
    steps = {"dt": dt} if dt is not None else {"rtol": rtol, "atol": atol}
    if newton_tol is not None:
        steps["newton_tol"] = newton_tol
    res = simulate(model, q0, np.zeros_like(q0), t_end, method=method, t_eval=np.linspace(0.0, t_end, samples),
                   **steps)
    seconds = time.perf_counter() - start
    link, rim = geometry["link"], geometry["rim"] + geometry["radius"]  # the axis of a chain lying on the rim
    outer = geometry["lip_center"][0] + geometry["lip_radius"]
    position, velocity = _chain_joints(res.q, res.qd, link)
    x, y = position[..., 0], position[..., 1]
    speeds = np.hypot(velocity[..., 0], velocity[..., 1])
    inside = x <= outer
    top = np.where(inside, y, -np.inf).max(axis=1) - rim
    falling = (x > outer) & (y < 0.0) & (y > -0.9 * drop)
    speed = np.array([np.median(s[f]) if f.any() else np.nan for s, f in zip(speeds, falling, strict=True)])
    resting = inside & (x < geometry["lip_center"][0] - geometry["lip_radius"]) \
        & (speeds < 0.1 * np.nan_to_num(speed, nan=np.inf)[:, None])
    remaining = np.count_nonzero(resting, axis=1)
    pile = np.where(remaining > 0, np.where(resting, y, -np.inf).max(axis=1), np.nan)
    forces = res.contact_forces()
    rim_rows = np.array([name.startswith("rim") for name in model.contact_names])
    rim_contacts = np.count_nonzero(forces["normal"][:, rim_rows] > 0.0, axis=1)
    landed = np.minimum.accumulate(y[:, 0]) <= -drop + 2.0 * link
    running = landed & np.isfinite(speed) & (remaining >= geometry["row"])  # until the pile's last row
    energy_scale = geometry["mass"] * -model.gravity[1] * drop
    summary = {"energy_balance": float(np.abs(res.energy_balance()).max()), "energy_scale": energy_scale,
               "nsteps": res.nsteps, "seconds": seconds, "samples_running": int(running.sum())}
    if running.any():
        summary.update({"mean_top": float(top[running].mean()), "min_top": float(top[running].min()),
                        "max_top": float(top[running].max()),
                        "clear": float(np.mean(rim_contacts[running] == 0)),
                        "mean_speed": float(speed[running].mean()), "mean_pile": float(pile[running].mean()),
                        "h1": float(pile[running].mean() + drop),
                        "h2": float(top[running].mean() + rim - pile[running].mean())})
    return {"t": res.t, "top": top, "speed": speed, "pile": pile, "remaining": remaining,
            "rim_contacts": rim_contacts, "landed": landed,
            "result": res, "geometry": geometry, "summary": summary}


# ---- the hanging swing -----------------------------------------------------------------------------------------------

def _scaled_mode(shape, amplitude):
    """A mode shape (n,) scaled to a largest |entry| of ``amplitude``: the one formula of ``hanging_swing`` and
    ``hanging_swing_3d``, so that a swing in one plane starts from the same bits in both (amplitude * shape / max
    and amplitude * (shape / max) may differ in the last bit)."""
    return amplitude * shape / np.max(np.abs(shape))


def hanging_swing(n, amplitude=1e-3, t_end=1.0, method="generalized_alpha", *, dt=None, rtol=1e-9, atol=1e-12,
                  rho_inf=None, every=1, length=1.0, mass=1.0, gravity=9.81):
    """A hanging chain swinging in its first mode, against the linear solution q0 cos(omega_1 t).

    ``serial_chain(n)`` starts at rest in its first mode (``chain_modes``) with the largest joint angle equal to
    ``amplitude`` [rad] (nonlinear effects relative to the swing are about amplitude^2), and is integrated to
    ``t_end`` [s] with ``method``: a fixed-step one takes ``dt`` (and ``rho_inf`` for generalized_alpha), an
    adaptive one ``rtol``/``atol``. Samples: every ``every``-th step (keep the memory of long chains in check:
    a sample holds 2 n numbers).

    Returns a dict: ``max_rel_error`` = max over samples and joints of |q - q0 cos(omega_1 t)| / max|q0|,
    ``seconds`` (wall time of the run alone, without the modes), ``modes_seconds``, ``omega_1`` [rad/s],
    ``nsteps``, ``nfev``, ``newton_iterations`` (generalized_alpha; else None), ``t`` and ``q0``.
    """
    n = _links(n)
    amplitude = _positive(amplitude, "amplitude")
    t_end = _positive(t_end, "t_end")
    chain = chains.serial_chain(n, length=length, mass=mass, gravity=gravity)
    start = time.perf_counter()
    omega, shapes = chain_modes(chain, 1)
    modes_seconds = time.perf_counter() - start
    q0 = _scaled_mode(shapes[:, 0], amplitude)
    options = {"dt": dt} if dt is not None else {"rtol": rtol, "atol": atol}
    if rho_inf is not None:
        options["rho_inf"] = rho_inf
    start = time.perf_counter()
    res = simulate(chain, q0, np.zeros(n), t_end, method=method, every=every, **options)
    seconds = time.perf_counter() - start
    worst = 0.0
    for t, q in zip(res.t, res.q, strict=True):  # row by row: no second (samples, n) array
        worst = max(worst, float(np.max(np.abs(q - math.cos(omega[0] * t) * q0))))
    return {"max_rel_error": worst / amplitude, "seconds": seconds, "modes_seconds": modes_seconds,
            "omega_1": float(omega[0]), "nsteps": res.nsteps, "nfev": res.nfev,
            "newton_iterations": getattr(res, "newton_iterations", None), "t": res.t, "q0": q0}


def spherical_chain(n, length=1.0, mass=1.0, gravity=9.81):
    """``serial_chain(n)`` in space: n identical uniform rods on spherical joints hanging from the origin along -z.

    A ``Model3D`` with gravity (0, 0, -``gravity``); rod j ("link<j>", length/n long, mass/n heavy, its frame at its
    centre) hangs from the previous rod's lower end. Its transverse inertia is (mass/n)(length/n)^2/12, as in the
    planar chain, and its axial inertia that of a solid rod of radius length/(50 n), (mass/n)(length/(50 n))^2/2
    (a spherical joint needs one; it does not enter a swing that carries no twist). q holds n unit quaternions
    (w, x, y, z) of the joints' relative rotations, v their angular velocities in the child frames (3 n).
    """
    n, length, mass, gravity = chains._check_chain(n, length, mass, gravity)
    model = Model3D(gravity=(0.0, 0.0, -gravity), name=f"spherical_chain({n})")
    _hang_rods(model, n, -1, (0.0, 0.0, 0.0), length, mass)
    return model


def _rod_inertias(n, length, mass):
    """(rod length, rod mass, transverse inertia, axial inertia) of each of the n rods of a ``spherical_chain``."""
    rod, m = length / n, mass / n
    return rod, m, m * rod**2 / 12.0, m * (rod / 50.0) ** 2 / 2.0


def _hang_rods(model, n, parent, top, length, mass):
    """Add the n rods of a ``spherical_chain`` ("link1" ... "link<n>") to ``model``, the first hung by a spherical
    joint from the point ``top`` of body ``parent`` (-1: the ground), each along -z from the one before."""
    rod, m, transverse, axial = _rod_inertias(n, length, mass)
    parent_point = np.zeros((n, 3))
    parent_point[0] = top
    parent_point[1:, 2] = -0.5 * rod
    first = model.nbodies
    model.add_bodies(np.append(parent, first + np.arange(n - 1)), "spherical", parent_point=parent_point,
                     child_point=(0.0, 0.0, 0.5 * rod), mass=m, inertia=(transverse, transverse, axial, 0.0, 0.0, 0.0),
                     names=[f"link{j + 1}" for j in range(n)])


def swing_tilts(model, q):
    """The horizontal tilts (..., n, 2) [rad] of a ``spherical_chain``'s joints from its coordinates q (..., 4 n).

    Joint j's relative rotation is exp(r_j) with r_j its rotation vector (the log map, ``rm.difference`` from the
    straight chain; r_j is the same in the parent's and the child's axes). A small rotation r moves the lower end of
    a rod hanging along -z by r x (0, 0, -l) = l (-r_y, r_x, 0), so the tilts are (-r_y, r_x): the relative angle
    towards +x and towards +y, each the planar chain's joint coordinate in that vertical plane (exactly so for a
    swing in one plane). The twist r_z is dropped.
    """
    q = np.asarray(q, dtype=float)
    straight = model.neutral()
    flat = q.reshape(-1, q.shape[-1])
    r = np.array([difference(model, straight, row) for row in flat]).reshape(*flat.shape[:-1], -1, 3)
    return np.stack((-r[..., 1], r[..., 0]), axis=-1).reshape(*q.shape[:-1], -1, 2)


def tilted_chain(model, tilts):
    """The coordinates q (4 n,) of a ``spherical_chain`` with the given horizontal tilts (n, 2) [rad] and no twist:
    joint j turned by exp(r_j), r_j = (tilt_y, -tilt_x, 0) (the inverse of ``swing_tilts``)."""
    tilts = _checks.real_array(tilts, "tilts")
    n = model.nv // 3
    if tilts.shape != (n, 2):
        raise ModelError(f"tilts must have shape ({n}, 2), got {tilts.shape}")
    r = np.column_stack((tilts[:, 1], -tilts[:, 0], np.zeros(n))).ravel()
    return integrate_configuration(model, model.neutral(), r)


def hanging_swing_3d(n, amplitudes=(1e-3, 5e-4), t_end=1.0, method="dopri5", *, modes=(1, 1), dt=None,
                     rtol=1e-10, atol=1e-12, rho_inf=None, every=1, length=1.0, mass=1.0, gravity=9.81,
                     formulation="recursive"):
    """A spatial hanging chain swinging in a planar mode along x and one along y, against the linear solution.

    ``spherical_chain(n)`` starts at rest with the horizontal tilts (``swing_tilts``) of its joints set to
    a_x s_kx and a_y s_ky, (a_x, a_y) = ``amplitudes`` [rad] (the largest tilt of each axis; one may be 0) and
    s_k the planar ``serial_chain(n)``'s mode k (``chain_modes``; ``modes`` = (k_x, k_y), 1-based), scaled to a
    largest entry of 1. Linearised about the hanging chain the two horizontal directions decouple and each is the
    planar chain (the discrete Bessel modes of the hanging string), so the linear solution is
    tilt_x = a_x s_kx cos(omega_kx t), tilt_y = a_y s_ky cos(omega_ky t); the nonlinear terms, including those
    that couple x and y, are about amplitude^2 relative. A swing in one plane (a_y = 0) is the planar chain's.

    Integrated to ``t_end`` [s] with ``method``: by default dopri5 with ``rtol``/``atol``; a fixed-step method
    takes ``dt`` (``rho_inf`` for generalized_alpha). Samples: every ``every``-th step. ``formulation``: as
    ``simulate``'s ("augmented": the absolute-coordinate route, whose generalized_alpha takes long chains at large
    steps).

    Returns a dict: ``max_rel_error`` = max over samples, joints and both axes of |tilt - linear| / max(a_x, a_y),
    ``rel_errors`` (that maximum per axis, (2,)), ``seconds`` (wall time of the run alone), ``modes_seconds``,
    ``omegas`` [rad/s] (omega_kx, omega_ky), ``nsteps``, ``nfev``, ``newton_iterations`` (generalized_alpha; else
    None), ``t`` (samples,), ``tilts`` (samples, n, 2) [rad] and ``tilts0`` (n, 2).
    """
    n = _links(n)
    amplitudes = _checks.real_array(amplitudes, "amplitudes")
    if amplitudes.shape != (2,) or not np.all(np.isfinite(amplitudes)) or np.any(amplitudes < 0.0) \
            or not np.any(amplitudes > 0.0):
        raise ModelError(f"amplitudes must be two finite values >= 0, not both 0, got {amplitudes!r:.60}")
    if len(modes) != 2:
        raise ModelError(f"modes must be two mode numbers (k_x, k_y), got {modes!r:.60}")
    modes = [_checks.integer(k, f"modes[{axis}]", low=1, high=n) for axis, k in enumerate(modes)]
    t_end = _positive(t_end, "t_end")
    model = spherical_chain(n, length=length, mass=mass, gravity=gravity)
    start = time.perf_counter()
    omega, shapes = chain_modes(chains.serial_chain(n, length=length, mass=mass, gravity=gravity), max(modes))
    modes_seconds = time.perf_counter() - start
    omegas = omega[[k - 1 for k in modes]]
    tilts0 = np.column_stack([_scaled_mode(shapes[:, k - 1], a) for k, a in zip(modes, amplitudes, strict=True)])
    options = {"dt": dt} if dt is not None else {"rtol": rtol, "atol": atol}
    if rho_inf is not None:
        options["rho_inf"] = rho_inf
    start = time.perf_counter()
    res = simulate(model, tilted_chain(model, tilts0), np.zeros(3 * n), t_end, method=method, every=every,
                   formulation=formulation, **options)
    seconds = time.perf_counter() - start
    tilts = swing_tilts(model, res.q)
    linear = np.cos(res.t[:, None, None] * omegas) * tilts0
    rel_errors = np.abs(tilts - linear).max(axis=(0, 1)) / amplitudes.max()
    return {"max_rel_error": float(rel_errors.max()), "rel_errors": rel_errors, "seconds": seconds,
            "modes_seconds": modes_seconds, "omegas": omegas, "nsteps": res.nsteps, "nfev": res.nfev,
            "newton_iterations": getattr(res, "newton_iterations", None), "t": res.t, "tilts": tilts,
            "tilts0": tilts0}


# ---- the whirling chain ---------------------------------------------------------------------------------------------

def whirling_chain_model(n, radius, length=1.0, mass=1.0, gravity=9.81):
    """A ``spherical_chain(n)`` hung from the tip of a massless arm that turns about the vertical: the whirling chain.

    Body 0, "arm", turns about the ground z axis on a revolute joint at the origin; it has no mass and no inertia,
    so that it adds nothing to the chain's energy or momentum: its motion is to be prescribed by a driver
    (``rm.simulate(..., drivers={"arm": ...})``, which does not eliminate a driven joint, so a massless body is
    fine). Driven at angle rate*t, its tip (``radius``, 0, 0) [m] runs on a horizontal circle of that radius at the
    rate: the suspension point of the whirling string. Rods "link1" ... "link<n>" are those of ``spherical_chain``
    (length/n long, mass/n heavy, frames at their centres), the first hung from the arm's tip by a spherical joint.

    Why a driven arm: a driver prescribes the suspension point's motion exactly (no stiff spring or penalty), the
    driving torque comes back as ``result.driving_forces()[:, 0]`` (zero on a steady whirl, whose angular
    momentum is constant), and in the arm's frame a steady whirl has every spherical joint at rest: q is constant
    but for the arm's angle. q: the arm's angle [rad], then n unit quaternions (w, x, y, z); v: the arm's rate
    [rad/s], then the rods' angular velocities relative to their parents, child axes (1 + 3 n).
    """
    n, length, mass, gravity = chains._check_chain(n, length, mass, gravity)
    radius = _positive(radius, "radius")
    gravity = _positive(gravity, "gravity")
    model = Model3D(gravity=(0.0, 0.0, -gravity), name=f"whirling_chain_model({n}, {radius:g})")
    model.add_body(joint="revolute", axis=(0.0, 0.0, 1.0), mass=0.0, inertia=0.0, name="arm")
    _hang_rods(model, n, 0, (radius, 0.0, 0.0), length, mass)
    return model


def _whirl_check(n, radius, rate, length, mass, gravity):
    """The arguments of the whirling chain's functions, checked: n an integer >= 1, the others finite and > 0."""
    n, length, mass, gravity = chains._check_chain(n, length, mass, gravity)
    return n, _positive(radius, "radius"), _positive(rate, "rate"), length, mass, _positive(gravity, "gravity")


def _whirl_geometry(theta, radius, rod):
    """(joint points (n + 1, 2), rod centres (n, 2)) as (x, z) in the arm's vertical plane, the rods at the angles
    theta (n,) from the downward vertical, out towards +x, hung from (radius, 0)."""
    step = rod * np.column_stack((np.sin(theta), -np.cos(theta)))
    points = np.vstack(([radius, 0.0], [radius, 0.0] + np.cumsum(step, axis=0)))
    return points, points[:-1] + 0.5 * step


def _whirl_moments(theta, radius, rate, rod, m, transverse, axial, gravity):
    """The moments (n,) [N m] about each joint (its y axis) of the loads on the rods below it, in the frame turning
    with the arm: gravity and the centrifugal force at each rod's centre, and each rod's centrifugal couple
    -rate^2 (transverse - axial) sin(theta) cos(theta) (the Euler equation of a rod turning at rate about the
    vertical: its angular momentum turns, d/dt (I rate e_z) = rate e_z x I rate e_z). Zero at a steady whirl."""
    points, centres = _whirl_geometry(theta, radius, rod)
    fx, fz = m * rate**2 * centres[:, 0], -m * gravity

    def below(values):  # suffix sums: the rods from joint j down
        return np.cumsum(values[::-1])[::-1]

    couple = -rate**2 * (transverse - axial) * np.sin(theta) * np.cos(theta)
    # (c - p) x F, y component: (c - p)_z F_x - (c - p)_x F_z, summed over the rods k >= j
    return (below(centres[:, 1] * fx) - points[:-1, 1] * below(fx) - below(centres[:, 0] * fz)
            + points[:-1, 0] * below(np.full(theta.size, fz)) + below(couple))


def _rate_continuation(rate, steps, start, solve, what):
    """The first whirling mode at ``rate`` [rad/s], followed up from the hanging chain or string ``start`` (the
    state at rate 0): ``solve(r, state)`` -> (state at rate r, accepted, why not) from the state at the last rate
    reached. The rate goes up in steps of rate / ``steps``; a step whose solve is not accepted (no convergence,
    another whirl, too large a jump) is halved and tried again, and the step grows back after each accepted one.
    A ModelError naming ``what`` if the step falls below rate / steps / 2^20."""
    state, reached, step = start, 0.0, rate / steps
    while reached < rate:
        target = rate if reached + step >= rate * (1.0 - 1e-12) else reached + step
        new, accepted, why = solve(target, state)
        if accepted:
            state, reached, step = new, target, min(2.0 * step, rate / steps)
        elif step < rate / steps * 2.0**-20:
            raise ModelError(f"{what}: no first whirling mode found beyond the rate {reached:g} rad/s (of {rate:g}): "
                             f"{why}")
        else:
            step *= 0.5
    return state


def steady_whirl(n, radius, rate, length=1.0, mass=1.0, gravity=9.81, steps=20):
    """The steady whirl of the discrete chain (``whirling_chain_model``): its shape and joint forces, computed from
    statics in the frame turning with the arm, independently of the dynamics.

    In that frame a steady whirl is an equilibrium of the rods in the arm's vertical plane (x out along the arm,
    z up): each rod carries its weight m g, the centrifugal force m rate^2 x_c at its centre and the centrifugal
    couple of its inertia (``_whirl_moments``), balanced by the joint forces. The n rod angles theta (from the
    downward vertical, out towards +x) make the moment about every joint of the loads below it vanish;
    ``scipy.optimize.root`` solves that from the hanging chain, stepping the rate up from 0 in ``steps`` steps,
    halved where a step fails or jumps (the first whirling mode: the shape that grows out of the hanging chain,
    every rod out on the arm's side and below its joint; other whirls exist above the first natural frequency).
    The joint forces follow from each rod's force balance, from the free end up.

    Returns a dict: ``theta`` (n,) [rad], ``points`` (n + 1, 3) the joints and the free end, ``centres`` (n, 3)
    the rods' centres, ``tensions`` (n, 3) the force [N] the body above exerts on rod j at its top joint, all in
    the arm's frame (ground axes at t = 0), ``tension`` (n,) their magnitudes, ``residual`` the largest moment
    left over [N m], ``q`` (1 + 4 n,), ``v`` (1 + 3 n,) the state at t = 0 (the arm at angle 0 turning at rate,
    every spherical joint at rest). A ModelError if the steps cannot reach ``rate`` on the first mode.
    """
    n, radius, rate, length, mass, gravity = _whirl_check(n, radius, rate, length, mass, gravity)
    steps = _checks.integer(steps, "steps", low=1)
    rod, m, transverse, axial = _rod_inertias(n, length, mass)
    scale = mass * gravity * length

    def solve(step_rate, previous):
        solution = scipy.optimize.root(lambda angles: _whirl_moments(
            angles, radius, step_rate, rod, m, transverse, axial, gravity) / scale, previous, method="hybr", tol=1e-15)
        angles = solution.x
        residual = float(np.abs(_whirl_moments(angles, radius, step_rate, rod, m, transverse, axial, gravity)).max())
        if not (np.all(np.isfinite(angles)) and residual <= 1e-12 * scale):
            return angles, False, f"the largest moment left is {residual:.3g} N m ({solution.message})"
        if not np.all((angles > 0.0) & (angles < 0.5 * np.pi)):  # the first mode has every rod out and down
            return angles, False, (f"the root finder reached another whirl (rod angles from {angles.min():.3g} to "
                                   f"{angles.max():.3g} rad, not all in (0, pi/2))")
        jump = float(np.abs(angles - previous).max())
        return angles, jump <= 0.2, f"the rod angles jump by {jump:.3g} rad"

    theta = _rate_continuation(rate, steps, np.zeros(n), solve, f"steady_whirl of {n} rods, radius {radius:g} m")
    residual = float(np.abs(_whirl_moments(theta, radius, rate, rod, m, transverse, axial, gravity)).max())
    points, centres = _whirl_geometry(theta, radius, rod)
    # rod j's force balance: T_j - T_(j+1) + m g_vec = m a_j, a_j = -rate^2 x_c e_x (the centripetal acceleration)
    tensions = np.zeros((n, 3))
    tensions[:, 0] = -np.cumsum((m * rate**2 * centres[:, 0])[::-1])[::-1]
    tensions[:, 2] = m * gravity * np.arange(n, 0, -1)
    relative = np.diff(theta, prepend=0.0)
    q = np.concatenate(([0.0], np.column_stack((np.cos(relative / 2), np.zeros(n), -np.sin(relative / 2),
                                                 np.zeros(n))).ravel()))
    v = np.zeros(1 + 3 * n)
    v[0] = rate

    def spatial(xz):
        return np.column_stack((xz[:, 0], np.zeros(len(xz)), xz[:, 1]))

    return {"theta": theta, "points": spatial(points), "centres": spatial(centres), "tensions": tensions,
            "tension": np.linalg.norm(tensions, axis=1), "residual": residual, "q": q, "v": v}


def whirling_string(radius, rate, length=1.0, mass=1.0, gravity=9.81, tol=1e-10, steps=10):
    """The steady whirl of the continuous string (uniform, inextensible, perfectly flexible) hung from a point on a
    horizontal circle of ``radius`` [m] turning at ``rate`` [rad/s]: a boundary-value solve (scipy's solve_bvp).

    In the frame turning with the suspension point the string lies in a vertical plane through the axis; with
    rho = mass/length, T(s) the force the part above s exerts on the part below (s the arc length from the top),
    the part below s balances: T' = -rho (g e_z - rate^2 x e_x), T(L) = 0. Its vertical part is the weight below,
    rho g (L - s); its horizontal part H (inwards) obeys H' = -rho rate^2 x. Written in sigma = L - s (the length
    from the free end) with u = tan(phi) = H / (rho g sigma) (phi the string's angle from the downward vertical):

        x' = -u / sqrt(1 + u^2),   (sigma u)' = rate^2 x / g,   z' = 1 / sqrt(1 + u^2),

    a singular term at the free end that solve_bvp takes as S y / sigma with the regularity condition
    u(0) = rate^2 x(0) / g, and x(L) = radius, z(L) = 0 at the top. Solved from the hanging string, stepping the
    rate up from 0 in ``steps`` steps (halved where a step fails or jumps), each solve starting from the one before
    (the first whirling mode, as ``steady_whirl``: above the string's first natural frequency other branches exist,
    the string on the axis's far side among them); the steps at tolerance max(``tol``, 1e-6), then the whirl at
    ``rate`` to ``tol``.

    Returns a dict: ``shape(s)`` -> (..., 3) the points at arc lengths s from the top [m] (x, 0, z; the turning
    frame), ``tension(s)`` -> (..., 3) the force vector T(s) [N], ``top_tension`` T(0) (3,), ``tip`` the free end
    (3,), ``solution`` (scipy's). A ModelError if the steps cannot reach ``rate`` on the first mode.
    """
    _, radius, rate, length, mass, gravity = _whirl_check(1, radius, rate, length, mass, gravity)
    tol = _positive(tol, "tol")
    steps = _checks.integer(steps, "steps", low=1)
    rho = mass / length

    def rhs(sigma, y):
        secant = 1.0 / np.sqrt(1.0 + y[1] ** 2)
        return np.vstack((-y[1] * secant, np.zeros_like(sigma), secant))

    def bvp(step_rate, previous, step_tol):
        ratio = step_rate**2 / gravity
        singular = np.array([[0.0, 0.0, 0.0], [ratio, -1.0, 0.0], [0.0, 0.0, 0.0]])
        return scipy.integrate.solve_bvp(
            rhs, lambda bottom, top: np.array([bottom[1] - ratio * bottom[0], top[0] - radius, top[2]]),
            previous.x, previous.y, S=singular, tol=step_tol, bc_tol=step_tol, max_nodes=100000)

    def solve(step_rate, previous):
        solution = bvp(step_rate, previous, max(tol, 1e-6))
        if not solution.success:
            return solution, False, f"solve_bvp did not converge ({solution.message})"
        if not np.all(solution.y[1] > 0.0):  # u = tan(phi) > 0: the first mode, out on the arm's side all along
            return solution, False, (f"the solve reached another whirl (the string turns back towards the axis, "
                                     f"tan(phi) down to {solution.y[1].min():.3g})")
        jump = max(abs(solution.y[0, 0] - previous.y[0, 0]),
                   abs(math.atan(solution.y[1, -1]) - math.atan(previous.y[1, -1])))
        return solution, jump <= 0.2, f"the free end or the top angle jumps by {jump:.3g}"

    sigma = np.linspace(0.0, length, 101)
    hanging = types.SimpleNamespace(x=sigma, y=np.vstack((np.full_like(sigma, radius), np.zeros_like(sigma),
                                                          sigma - length)))  # as a solution: its mesh and values
    solution = _rate_continuation(rate, steps, hanging, solve, f"whirling_string, radius {radius:g} m")
    if tol < 1e-6:  # the steps at 1e-6, then the whirl at the rate to tol
        solution = bvp(rate, solution, tol)
        if not (solution.success and np.all(solution.y[1] > 0.0)):
            raise ModelError(f"whirling_string: solve_bvp did not reach tol {tol:g} at rate {rate:g} rad/s, radius "
                             f"{radius:g} m, on the first mode ({solution.message})")

    def shape(s):
        values = solution.sol(length - np.asarray(s, dtype=float))
        return np.stack((values[0], np.zeros_like(values[0]), values[2]), axis=-1)

    def tension(s):
        below = length - np.asarray(s, dtype=float)
        values = solution.sol(below)
        return np.stack((-rho * gravity * below * values[1], np.zeros_like(values[0]), rho * gravity * below),
                        axis=-1)

    return {"shape": shape, "tension": tension, "top_tension": tension(0.0), "tip": shape(length),
            "solution": solution}


def whirl_convergence(ns, radius, rate, length=1.0, mass=1.0, gravity=9.81):
    """The discrete steady whirl (``steady_whirl``) against the continuous string's (``whirling_string``) as the
    number of rods n grows: the rods' joints against the string's points at the same arc lengths.

    Returns a dict: ``n`` (k,), ``shape_error`` (k,) the largest distance [m] of a joint or the free end from the
    string's point, ``tension_error`` (k,) |T_1 - T(0)| / |T(0)| at the top joint, ``shape_order`` and
    ``tension_order`` (the slopes p of log error = log C - p log n fitted over the ns), ``string`` (the
    continuum's dict) and ``tip`` (k, 3) the discrete free ends.
    """
    ns = [_links(n) for n in ns]
    if len(ns) < 2:
        raise ModelError(f"ns must hold at least two link counts, got {ns!r:.60}")
    whirls = [steady_whirl(n, radius, rate, length, mass, gravity) for n in ns]
    string = whirling_string(radius, rate, length, mass, gravity, tol=1e-12)
    shape_error, tension_error = [], []
    for n, whirl in zip(ns, whirls, strict=True):
        s = np.linspace(0.0, length, n + 1)
        shape_error.append(float(np.linalg.norm(whirl["points"] - string["shape"](s), axis=1).max()))
        top = string["top_tension"]
        tension_error.append(float(np.linalg.norm(whirl["tensions"][0] - top) / np.linalg.norm(top)))
    shape_error, tension_error = np.array(shape_error), np.array(tension_error)
    log_n = np.log(np.array(ns, dtype=float))
    return {"n": np.array(ns), "shape_error": shape_error, "tension_error": tension_error,
            "shape_order": float(-np.polyfit(log_n, np.log(shape_error), 1)[0]),
            "tension_order": float(-np.polyfit(log_n, np.log(tension_error), 1)[0]), "string": string,
            "tip": np.array([whirl["points"][-1] for whirl in whirls])}


def whirling_chain(n, radius=0.1, rate=4.5, t_end=2.0, method="dopri5", *, perturbation=0.0, dt=None, rtol=1e-10,
                   atol=1e-12, every=1, length=1.0, mass=1.0, gravity=9.81):
    """The whirling chain simulated from its steady whirl: does the dynamics keep the shape and the tension that
    statics gives?

    ``whirling_chain_model(n, radius)`` starts on the discrete steady whirl (``steady_whirl``): the rods at their
    steady angles in the arm's plane, the arm turning at ``rate`` [rad/s] and every spherical joint at rest (the
    chain turning rigidly with the arm); ``perturbation`` [rad] (default 0) turns every rod that much further out
    of the steady angles, in the arm's plane, to watch how the whirl answers a disturbance. The arm is driven,
    angle = rate t, and the run goes to ``t_end`` [s] with ``method``: dopri5 by default with ``rtol``/``atol``,
    or another explicit method (dop853; rk4 and implicit_midpoint with ``dt``), or generalized_alpha with ``dt``
    (the arm's joint locked in its Newton step), or bdf with ``rtol``/``atol``.
    Samples: every ``every``-th step. Unperturbed, a steady whirl stays put in the turning frame (every spherical
    joint at rest: the integrated state does not move), so the deviations below are round-off; perturbed, they
    measure the motion about the whirl (it stays of the perturbation's size where the whirl is stable).

    Returns a dict: ``shape_deviation`` [m] the largest distance over the samples of a joint or the free end,
    turned back by -rate t about the vertical, from its steady place; ``top_tension`` (samples, 3) [N] the force
    of the arm on the first rod (``rm.joint_reactions`` of the first rod's joint, from the Newton-Euler pass at
    the sample's state with the accelerations of the forward dynamics under the driving torque), in the turning
    frame; ``tension_deviation`` the largest |top_tension - T_1| / |T_1| against the reference; ``driving_torque``
    the largest |torque| [N m] the arm's driver supplies (zero on a steady whirl: the chain's angular momentum is
    constant); ``energy_error`` max |E - E0| / (m g L) and ``momentum_error`` max |h_z - h_z0| / |h_z0| (h_z the
    angular momentum about the vertical axis); ``reference`` (``steady_whirl``'s dict), ``t``, ``seconds`` (the
    run alone), ``nsteps``, ``nfev`` and the run itself (``result``).
    """
    n, radius, rate, length, mass, gravity = _whirl_check(n, radius, rate, length, mass, gravity)
    t_end = _positive(t_end, "t_end")
    perturbation = _checks.real(perturbation, "perturbation")
    reference = steady_whirl(n, radius, rate, length, mass, gravity)
    model = whirling_chain_model(n, radius, length, mass, gravity)
    q0 = reference["q"].copy()
    if perturbation:  # the first joint turned further out about y: every rod below it turns with it
        q0[1:5] = [math.cos(-0.5 * (reference["theta"][0] + perturbation)), 0.0,
                   math.sin(-0.5 * (reference["theta"][0] + perturbation)), 0.0]
    options = {"dt": dt} if dt is not None else {"rtol": rtol, "atol": atol}
    arm = (lambda t: rate * t, lambda t: rate, lambda t: 0.0)
    start = time.perf_counter()
    res = simulate(model, q0, reference["v"], t_end, method=method, every=every, drivers={"arm": arm}, **options)
    seconds = time.perf_counter() - start
    rod = length / n
    torque = res.driving_forces()[:, 0]
    shape_deviation, top, momentum = 0.0, np.zeros((res.t.size, 3)), np.zeros(res.t.size)
    for i, (t, q, v) in enumerate(zip(res.t, res.q, res.qd, strict=True)):
        c, s = math.cos(rate * t), math.sin(rate * t)
        back = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])  # Rz(-rate t): ground to the turning frame
        rot, pos = forward_kinematics(model, q)
        joints = np.vstack((pos[1:] + rot[1:, :, 2] * 0.5 * rod, pos[-1] - rot[-1, :, 2] * 0.5 * rod))
        shape_deviation = max(shape_deviation, float(np.linalg.norm(joints @ back.T - reference["points"],
                                                                    axis=1).max()))
        tau = np.zeros(model.nv)
        tau[0] = torque[i]
        vdot = forward_dynamics(model, q, v, tau)
        top[i] = back @ joint_reactions(model, q, v, vdot, tau).joint[1, :3]
        momentum[i] = momentum_of(model, q, v, about="origin")[1][2]
    kinetic, potential = res.energy()
    energy = kinetic + potential
    first = reference["tensions"][0]
    return {"shape_deviation": shape_deviation, "top_tension": top,
            "tension_deviation": float(np.linalg.norm(top - first, axis=1).max() / np.linalg.norm(first)),
            "driving_torque": float(np.abs(torque).max()),
            "energy_error": float(np.abs(energy - energy[0]).max() / (mass * gravity * length)),
            "momentum_error": float(np.abs(momentum - momentum[0]).max() / abs(momentum[0])),
            "reference": reference, "t": res.t, "seconds": seconds, "nsteps": res.nsteps, "nfev": res.nfev,
            "result": res}


# ---- the tip whip ---------------------------------------------------------------------------------------------------

def tip_whip(n, t_end=None, length=1.0, mass=1.0, gravity=9.81, method="dopri5", rtol=1e-8, atol=1e-10,
             samples=2000, dt=None, rho_inf=None):
    """A chain released from the horizontal: the tip speed over the first swing, and what it costs to integrate.

    ``method`` with ``rtol``/``atol`` (adaptive) or ``dt`` (fixed-step; ``rho_inf`` for generalized_alpha).

    Returns a dict: ``t``, ``q`` (at most ``samples`` of the steps), ``tip_speed``, ``max_tip_speed`` and
    ``whip_time`` (when the tip speed peaks),
    ``free_fall_speed`` sqrt(2 g L) for scale, ``energy_error`` (relative to m g L), the integrator's ``nsteps``,
    ``nrejected``, ``nfev``, ``whip_step`` (the step size at the whip) and the wall ``seconds``.
    """
    n = _links(n)
    t_end = 1.2 * math.sqrt(length / gravity) * 2.0 if t_end is None else _positive(t_end, "t_end")
    chain = chains.serial_chain(n, length=length, mass=mass, gravity=gravity)
    q0 = np.zeros(n)
    q0[0] = 0.5 * np.pi
    start = time.perf_counter()
    options = {"dt": dt} if dt is not None else {"rtol": rtol, "atol": atol}
    if rho_inf is not None:
        options["rho_inf"] = rho_inf
    res = simulate(chain, q0, np.zeros(n), t_end, method=method, every=1, **options)
    seconds = time.perf_counter() - start
    tip = np.array([point_kinematics(chain, q, qd, n - 1, (0.0, -0.5 * length / n))[1]
                    for q, qd in zip(res.q, res.qd, strict=True)])
    speed = np.hypot(tip[:, 0], tip[:, 1])
    peak = int(np.argmax(speed))
    kinetic, potential = res.energy()
    energy = kinetic + potential
    keep = np.unique(np.linspace(0, res.t.size - 1, min(samples, res.t.size)).astype(int))
    return {"t": res.t[keep], "q": res.q[keep], "tip_speed": speed[keep], "max_tip_speed": float(speed[peak]),
            "whip_time": float(res.t[peak]), "free_fall_speed": math.sqrt(2.0 * gravity * length),
            "energy_error": float(np.abs(energy - energy[0]).max() / (mass * gravity * length)),
            "nsteps": res.nsteps, "nrejected": res.nrejected, "nfev": res.nfev,
            "whip_step": float(res.t[min(peak + 1, res.t.size - 1)] - res.t[max(peak - 1, 0)]) / 2, "seconds": seconds}


__all__ = ["catenary_study", "chain_fountain", "chain_fountain_model", "chain_modes", "chain_points",
           "continuous_catenary", "continuum_frequencies",
           "continuum_mode_shape", "discrete_catenary", "energy_conserving_fall_time", "energy_conserving_speed",
           "folded_chain_fall", "frequency_study", "hanging_swing", "hanging_swing_3d", "pinned_chain",
           "spherical_chain", "steady_whirl", "swing_tilts", "tilted_chain", "tip_whip", "whirl_convergence",
           "whirling_chain", "whirling_chain_model", "whirling_string"]
