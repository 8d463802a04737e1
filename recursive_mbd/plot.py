"""Plots and animation with matplotlib (the optional extra ``plot``): coordinates, energy balance, constraint drift,
driving forces and joint reactions against time, drawings of the mechanism, mode shapes, and an animation written
to .gif (Pillow) or .mp4 (ffmpeg).

Every axis and legend names the body and the unit (``coordinate_labels``): "crank angle [rad]", "rod angle rel.
crank [rad]" (a joint coordinate is relative to the parent body), "piston position [m]".

Mechanism drawings (``draw``, ``snapshots``, ``mode_shapes``, ``animate``) are in x [m] / y [m] with equal aspect,
framed to the extent of everything drawn. A body is drawn from the points where it is attached (its joint, its
children's joints, loops, spring-dampers), in its own frame:

- points on one line: a bar between the outermost two (a rod); two points diagonal in the body frame: the
  rectangle they span (a block, e.g. seed 000's squares); three or more points not on a line: the plate they span;
- a body attached at one point only: a bar from that point through the centre of mass, as long as the uniform rod of
  the body's mass and inertia (the free end of a chain's last link), with a bob at the centre of mass when the
  inertia is that of a point mass; a body whose only point is its centre of mass: a disc of its radius of gyration;
- a body on a prismatic joint (tree or loop): a block along the sliding axis (a piston), in a guide;
- revolute joints: small open circles; spring-dampers: a zig-zag (spring) beside a dashpot (damper) between their
  points; joint springs: a coil around a revolute joint, a zig-zag along a prismatic one; the ground: a hatched
  support under every ground joint and spring anchor.

Spatial models (``Model3D``): ``snapshot3d`` (and ``draw``, which dispatches to it) draws a configuration as a
matplotlib 3D stick figure (``spatial_sticks``: bars from each body's joint to its centre of mass and its
children's joints, loops dashed), x / y / z [m] at equal scales; ``spatial_overview`` draws a spatial dynamics,
statics or modes result, ``animate`` a spatial motion.

Library code never selects a matplotlib backend: when ``matplotlib.pyplot`` is already imported (the user works with
pyplot) new figures come from it, otherwise from ``matplotlib.figure.Figure``, which needs no backend to be saved.
"""

import sys

import numpy as np

from .dynamics.calls import forward_kinematics
from .model import joints
from .model.spatial import Model3D, integrate_configuration

# ---- labels -------------------------------------------------------------------------------------------------------

# per joint type, the name and unit of each coordinate and of its rate, acceleration and generalised force
_QUANTITIES = {
    joints.REVOLUTE: {"q": [("angle", "rad")], "qd": [("rate", "rad/s")], "qdd": [("acceleration", "rad/s^2")],
                      "tau": [("torque", "N m")]},
    joints.PRISMATIC: {"q": [("position", "m")], "qd": [("velocity", "m/s")], "qdd": [("acceleration", "m/s^2")],
                       "tau": [("force", "N")]},
    joints.PLANAR: {"q": [("x", "m"), ("y", "m"), ("angle", "rad")],
                    "qd": [("x velocity", "m/s"), ("y velocity", "m/s"), ("rate", "rad/s")],
                    "qdd": [("x acceleration", "m/s^2"), ("y acceleration", "m/s^2"), ("acceleration", "rad/s^2")],
                    "tau": [("x force", "N"), ("y force", "N"), ("torque", "N m")]},
}
QUANTITY_KINDS = ("q", "qd", "qdd", "tau")
_UNIT_WORDS = {"rad": "angle", "m": "position", "rad/s": "rate", "m/s": "velocity", "rad/s^2": "angular acc.",
               "m/s^2": "acceleration", "N m": "torque", "N": "force"}


def coordinate_names_units(model, kind="q"):
    """Names and units of the joint coordinates (kind "q"), their rates ("qd"), accelerations ("qdd") or the joint
    forces ("tau"), in coordinate order: two lists of nq strings, e.g. ["crank angle", "rod angle rel. crank",
    "piston position"] and ["rad", "rad", "m"]. A coordinate is relative to the parent body ("rel. <parent>"), to
    the ground when the parent is the ground (DESIGN.md, joint conventions)."""
    model.compile()
    return names_units(model.body_names, model.joint_type, model.body_parent, kind)


def names_units(body_names, joint_type, body_parent, kind="q"):
    """``coordinate_names_units`` from the per-body names, joint type codes and parent indices (as a result file
    of ``rmbd run`` stores them)."""
    if kind not in QUANTITY_KINDS:
        raise ValueError(f"kind must be one of {QUANTITY_KINDS}, got {kind!r}")
    names, units = [], []
    for i, (jtype, parent) in enumerate(zip(joint_type, body_parent, strict=True)):
        relative = "" if parent < 0 else f" rel. {body_names[parent]}"
        for word, unit in _QUANTITIES.get(int(jtype), {}).get(kind, []):
            names.append(f"{body_names[i]} {word}{relative}")
            units.append(unit)
    return names, units


def coordinate_labels(model, kind="q"):
    """``coordinate_names_units`` joined as axis labels: ["crank angle [rad]", ..., "piston position [m]"]."""
    names, units = coordinate_names_units(model, kind)
    return [f"{name} [{unit}]" for name, unit in zip(names, units, strict=True)]


def _split_label(label):
    """("crank angle", "rad") from "crank angle [rad]"; the unit is "" when the label has none."""
    if label.endswith("]") and " [" in label:
        name, unit = label[:-1].rsplit(" [", 1)
        return name, unit
    return label, ""


# ---- figures without touching the backend ---------------------------------------------------------------------

def _require_matplotlib():
    try:
        import matplotlib  # noqa: PLC0415, F401
    except ModuleNotFoundError:
        raise ModuleNotFoundError("plotting needs matplotlib: pip install 'recursive-mbd[plot]'") from None


def figure(nrows=1, ncols=1, pyplot=None, **kwargs):
    """A new figure and its axes (``subplots(nrows, ncols, **kwargs)``), without selecting a backend: from pyplot
    when the caller already imported it (so ``plt.show()`` shows it), else a bare ``matplotlib.figure.Figure``
    (``fig.savefig`` works on it with no backend). ``pyplot=False`` always gives a bare Figure (file output)."""
    _require_matplotlib()
    figsize = kwargs.pop("figsize", None)
    if pyplot is not False and "matplotlib.pyplot" in sys.modules:
        return sys.modules["matplotlib.pyplot"].subplots(nrows, ncols, figsize=figsize, **kwargs)
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def _axes(ax, **kwargs):
    if ax is not None:
        return ax.figure, ax
    return figure(**kwargs)


def _legend(ax, count):
    if 0 < count <= 12:
        ax.legend(fontsize=7, loc="best")


def _unit_label(units, quantity):
    """One y-axis label for lines of the given units: "angle [rad]", or "[rad] / [m]" when they differ."""
    distinct = list(dict.fromkeys(u for u in units if u))
    if len(distinct) == 1:
        return f"{quantity} [{distinct[0]}]"
    return " / ".join(f"{_UNIT_WORDS.get(u, '')} [{u}]".strip() for u in distinct) if distinct else quantity


def _selection(count, most=8):
    """Indices of at most ``most`` series to draw of ``count``, spread over all of them (first and last kept)."""
    if count <= most:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, most).round().astype(int))


def time_series(t, values, labels, ax=None, quantity="value", most=8):
    """Columns of ``values`` (nt, n) against t [s], each named by its label ("crank torque [N m]"); at most
    ``most`` of them (spread over all, the title says how many) so that a 1000-link chain stays readable."""
    fig, ax = _axes(ax)
    values = np.asarray(values, dtype=float).reshape(len(t), -1)
    if len(labels) != values.shape[1]:
        raise ValueError(f"{values.shape[1]} columns but {len(labels)} labels")
    chosen = _selection(values.shape[1], most)
    for k in chosen:
        ax.plot(t, values[:, k], label=labels[k])
    ax.set(xlabel="t [s]", ylabel=_unit_label([_split_label(labels[k])[1] for k in chosen], quantity))
    if chosen.size < values.shape[1]:
        ax.set_title(f"{chosen.size} of {values.shape[1]}, spread along the model", fontsize=8)
    _legend(ax, chosen.size)
    ax.grid(alpha=0.3)
    return fig


def trajectories(t, q, ax=None, names=None, model=None, kind="q"):
    """Joint coordinates (or, with ``kind``, their rates "qd" or accelerations "qdd") against time, labelled with
    the body and the unit from ``model`` (``coordinate_labels``), or with ``names`` (labels "name [unit]")."""
    q = np.asarray(q, dtype=float)
    if model is not None:
        labels = coordinate_labels(model, kind)
    elif names is not None:
        labels = list(names)
    else:
        labels = [f"q{k + 1}" for k in range(q.shape[1])]
    quantity = {"q": "joint coordinate", "qd": "joint rate", "qdd": "joint acceleration"}.get(kind, kind)
    return time_series(t, q, labels, ax, quantity)


def energy(t, total, ax=None, dissipated_work=None, applied_work=None):
    """Energy against time [J]. For a conservative run E(t) - E(0); when work was dissipated (dampers) or applied
    (forces, drivers), the energy balance E(t) + dissipated - applied work - E(0), which stays zero up to the
    integration error, with the size of each term in the legend (E alone would drift by the work done)."""
    fig, ax = _axes(ax)
    total = np.asarray(total, dtype=float)
    change = total - total[0]
    dissipated = np.zeros_like(total) if dissipated_work is None else np.asarray(dissipated_work, dtype=float)
    applied = np.zeros_like(total) if applied_work is None else np.asarray(applied_work, dtype=float)
    if np.any(dissipated != 0.0) or np.any(applied != 0.0):
        balance = change + dissipated - applied
        ax.plot(t, balance, color="C3", label=f"E + dissipated - applied - E(0): max |.| = "
                                              f"{np.abs(balance).max():.2e} J")
        ax.plot([], [], " ", label=f"E(t_end) - E(0) = {change[-1]:.4g} J, dissipated {dissipated[-1]:.4g} J, "
                                   f"applied {applied[-1]:.4g} J")
        ax.set(xlabel="t [s]", ylabel="energy balance [J]")
        ax.legend(fontsize=7, loc="best")
    else:
        ax.plot(t, change, label=f"E(t) - E(0): max |.| = {np.abs(change).max():.2e} J (no work done)")
        ax.set(xlabel="t [s]", ylabel="E(t) - E(0) [J]")
        ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    return fig


def drift(t, values, ax=None):
    """Loop constraint drift max |phi| against time (log scale) [m for positions, rad for angles]."""
    fig, ax = _axes(ax)
    ax.semilogy(t, np.maximum(values, 1e-17))
    ax.set(xlabel="t [s]", ylabel="loop constraint drift max |phi| [m, rad]")
    ax.grid(alpha=0.3)
    return fig


def joint_labels(body_names, parents=None):
    """A name per tree joint: "<parent>-<body> joint" ("ground-crank joint"), or "<body> joint" without parents."""
    if parents is None:
        return [f"{name} joint" for name in body_names]
    return [f"{'ground' if p < 0 else body_names[p]}-{name} joint" for name, p in zip(body_names, parents,
                                                                                     strict=True)]


def reactions(t, joint_reactions, loop_forces=None, ax=None, joint_names=None, loop_names=None):
    """Magnitude of the reaction force of every joint and loop against time [N]: |(Fx, Fy)| of ``joint_reactions``
    (nt, nbodies, 3) (the force the parent exerts on the body) and of ``loop_forces`` (nt, nloops, 2, 3) (on body
    a). Named by ``joint_names`` / ``loop_names``."""
    fig, ax = _axes(ax)
    joint_reactions = np.asarray(joint_reactions, dtype=float)
    nbodies = joint_reactions.shape[1]
    joint_names = joint_names or joint_labels([f"body {i}" for i in range(nbodies)])
    columns = [np.hypot(joint_reactions[:, :, 0], joint_reactions[:, :, 1])]
    labels = [f"{name} |F| [N]" for name in joint_names]
    if loop_forces is not None and np.size(loop_forces):
        loop_forces = np.asarray(loop_forces, dtype=float)
        columns.append(np.hypot(loop_forces[:, :, 0, 0], loop_forces[:, :, 0, 1]))
        loop_names = loop_names or [f"loop {k}" for k in range(loop_forces.shape[1])]
        labels += [f"loop {name} |F| [N]" for name in loop_names]
    time_series(t, np.hstack(columns), labels, ax, "reaction force")
    return fig


def driving_forces(t, forces, driven, model=None, ax=None, labels=None):
    """Driving forces (nt, nd) of the driven coordinates ``driven`` (nd,) against time: "crank torque [N m]",
    "piston force [N]" (from the model, or ``labels`` of every coordinate)."""
    labels = labels if labels is not None else coordinate_labels(model, "tau")
    return time_series(t, forces, [f"driving {labels[int(c)]}" for c in driven], ax, "driving force")


# ---- the mechanism ------------------------------------------------------------------------------------------------

def _rotate(points, angle):
    """Rotate points (..., 2) by angle (broadcast over the leading axes)."""
    c, s = np.cos(angle), np.sin(angle)
    x, y = points[..., 0], points[..., 1]
    return np.stack((c * x - s * y, s * x + c * y), axis=-1)


class Outline:
    """How a model is drawn (module docstring), in body frames: computed once per model, placed at any q.

    Attributes: ``bars`` (nbar, 2, 2) end points with ``bar_body`` (nbar,); ``polygons`` list of (k, 2) vertex
    arrays with ``polygon_body``; ``pins`` (npin, 2) revolute joint points with ``pin_body``; ``bobs`` (nbob, 2)
    centres with radii; ``springs``: (body_a, point_a, body_b, point_b, stiffness, damping) per spring-damper;
    ``supports``: (kind "pin" | "guide", point (2,), axis (2,) of a guide, body) ground symbols, ``sliders``: body ->
    (sliding point, axis) in the body frame; ``size``: the symbol size [m].
    """

    def __init__(self, model):
        model.compile()
        self.model = model
        n = model.nbodies
        table = model._bodies
        parent, jtype = model.body_parent, model.joint_type
        parent_points, child_points = table.column("parent_point"), table.column("child_point")
        com, mass, inertia = model.body_com, model.body_mass, model.body_inertia
        # attachment points per body (body frame): own joint, children's joints, then loops and spring-dampers
        extra_owner, extra_points = [], []
        self.supports = []
        sliders = {}  # body -> (point, axis) in the body frame, for pistons
        for i in np.flatnonzero(parent < 0):
            if jtype[i] == joints.PRISMATIC:
                axis = table.column("axis")[i]
                self.supports.append(("guide", parent_points[i], axis, i))
            elif jtype[i] != joints.PLANAR:
                self.supports.append(("pin", parent_points[i], None, i))
        for i in np.flatnonzero(jtype == joints.PRISMATIC):
            axis_child = _rotate(table.column("axis")[i], -table.column("angle")[i])
            sliders[i] = (child_points[i], axis_child)
        for lp in model._loops:
            for body, point in ((lp["body_a"], lp["point_a"]), (lp["body_b"], lp["point_b"])):
                if body >= 0:
                    extra_owner.append(body)
                    extra_points.append(point)
            if lp["kind"] == "prismatic" and lp["body_a"] >= 0:  # body a slides along body b's axis
                # the axis is fixed in b's frame and theta_a = theta_b + angle: in a's frame it is turned by -angle
                sliders.setdefault(lp["body_a"], (lp["point_a"], _rotate(lp["axis"], -lp["angle"])))
                if lp["body_b"] < 0:
                    self.supports.append(("guide", lp["point_b"], lp["axis"], lp["body_a"]))
            elif lp["body_b"] < 0:
                self.supports.append(("pin", lp["point_b"], None, lp["body_a"]))
        self.springs = []
        self.joint_springs = [el["body_a"] for el in model._elements if el["kind"] == "joint_spring_damper"]
        for el in model._elements:
            if el["kind"] != "spring_damper":
                continue
            self.springs.append((el["body_a"], el["point_a"], el["body_b"], el["point_b"], el["stiffness"],
                                 el["damping"]))
            for body, point in ((el["body_a"], el["point_a"]), (el["body_b"], el["point_b"])):
                if body >= 0:
                    extra_owner.append(body)
                    extra_points.append(point)
        has_parent = parent >= 0
        owner = np.concatenate((np.arange(n), parent[has_parent], np.array(extra_owner, dtype=parent.dtype)))
        owned = np.concatenate((child_points, parent_points[has_parent], np.array(extra_points).reshape(-1, 2)))
        order = np.argsort(owner, kind="stable")
        owner, owned = owner[order], owned[order]
        counts = np.bincount(owner, minlength=n)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        # the common case in bulk (a million-link chain): two points along a body axis, no slider: a bar
        two = np.flatnonzero(counts == 2)
        ends = np.stack((owned[starts[two]], owned[starts[two] + 1]), axis=1)
        along = ends[:, 1] - ends[:, 0]
        length = np.hypot(along[:, 0], along[:, 1])
        slider = np.zeros(n, dtype=bool)
        slider[list(sliders)] = True
        fast = (length > 1e-12) & (np.minimum(np.abs(along[:, 0]), np.abs(along[:, 1])) <= 0.2 * length) & ~slider[two]
        bars, bar_body = list(ends[fast]), list(two[fast])
        polygons, polygon_body, bobs, bob_body, radii = [], [], [], [], []
        done = np.zeros(n, dtype=bool)
        done[two[fast]] = True
        for i in np.flatnonzero(~done):
            points = np.unique(np.round(owned[starts[i]:starts[i] + counts[i]], 12), axis=0)
            shape = self._shape(points, com[i], mass[i], inertia[i], i in sliders)
            for kind, geometry in shape:
                if kind == "bar":
                    bars.append(geometry)
                    bar_body.append(i)
                elif kind == "polygon":
                    polygons.append(geometry)
                    polygon_body.append(i)
                else:
                    bobs.append(geometry[0])
                    radii.append(geometry[1])
                    bob_body.append(i)
        by_body = np.argsort(np.array(bar_body, dtype=int), kind="stable")
        self.bars = np.array(bars).reshape(-1, 2, 2)[by_body]
        self.bar_body = np.array(bar_body, dtype=int)[by_body]
        lengths = np.hypot(*(self.bars[:, 1] - self.bars[:, 0]).T) if bars else np.zeros(0)
        span = self._span(model)
        typical = float(np.median(lengths)) if lengths.size else span / max(1, n)
        self.size = float(np.clip(0.15 * typical, 0.02 * span, 0.08 * span)) if span > 0 else 0.1
        for i, (point, slide) in sliders.items():  # pistons: a block along the axis, centred on the sliding point
            axis = slide / np.hypot(*slide)
            normal = np.array([-axis[1], axis[0]])
            half_long, half_wide = 1.2 * self.size, 0.7 * self.size
            polygons.append(np.array([point + sa * half_long * axis + sn * half_wide * normal
                                      for sa, sn in ((-1, -1), (1, -1), (1, 1), (-1, 1))]))
            polygon_body.append(i)
        self.sliders = sliders
        self.polygons = polygons
        self.polygon_body = np.array(polygon_body, dtype=int)
        self.bobs = np.array(bobs).reshape(-1, 2)
        self.bob_body = np.array(bob_body, dtype=int)
        self.bob_radius = np.array(radii)
        self.bob_radius = np.where(self.bob_radius > 0, self.bob_radius, 0.4 * self.size)
        revolute = np.flatnonzero(jtype == joints.REVOLUTE)
        loop_pins = [(lp["body_a"], lp["point_a"]) for lp in model._loops if lp["kind"] == "revolute"
                     and lp["body_a"] >= 0]
        self.pin_body = np.concatenate((revolute, [b for b, _ in loop_pins])).astype(int)
        self.pins = np.concatenate((child_points[revolute], np.array([p for _, p in loop_pins]).reshape(-1, 2)))

    @staticmethod
    def _span(model):
        poses, _ = forward_kinematics(model, np.zeros(model.nq))
        spread = np.ptp(poses[:, :2], axis=0) if model.nbodies > 1 else np.zeros(2)
        lengths = np.hypot(*(model._bodies.column("parent_point") - model._bodies.column("child_point")).T)
        return float(max(spread.max(), lengths.sum(), 1e-9))

    @staticmethod
    def _shape(points, com, mass, inertia, slider):
        """The pieces ("bar", (2, 2)) / ("polygon", (k, 2)) / ("bob", (centre, radius)) a body is drawn with."""
        gyration = np.sqrt(inertia / mass) if mass > 0 else 0.0  # J = m r^2
        if len(points) == 1:
            point = points[0]
            offset = com - point
            distance = float(np.hypot(*offset))
            if distance > 1e-12:
                direction = offset / distance
                half_rod = np.sqrt(3.0) * gyration  # a uniform rod of length L: J = m L^2 / 12
                shape = [("bar", np.array([point, com + direction * min(half_rod, distance)]))]
                if half_rod < 0.5 * distance:  # a point mass on a light rod: a bob at the centre of mass
                    shape.append(("bob", (com, max(np.sqrt(2.0) * gyration, 0.15 * distance))))
                return shape
            return [] if slider else [("bob", (com, np.sqrt(2.0) * gyration))]  # a disc: J = m r^2 / 2
        far = np.argmax(np.hypot(*(points - points[0]).T))
        start = np.argmax(np.hypot(*(points - points[far]).T))
        a, b = points[start], points[far]
        along = b - a
        length = float(np.hypot(*along))
        normal = np.array([-along[1], along[0]]) / length
        off_line = np.abs((points - a) @ normal)
        if off_line.max() <= 0.02 * length:
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            diagonal = min(abs(along[0]), abs(along[1])) > 0.2 * length
            if len(points) == 2 and diagonal and np.all(com >= lo - 1e-12) and np.all(com <= hi + 1e-12):
                return [("polygon", np.array([lo, (hi[0], lo[1]), hi, (lo[0], hi[1])]))]  # a block
            return [("bar", np.array([a, b]))]
        centre = points.mean(axis=0)
        order = np.argsort(np.arctan2(*(points - centre).T[::-1]))
        return [("polygon", _convex_hull(points[order]))]

    def place(self, q):
        """World coordinates at q: bars (nbar, 2, 2), polygons (list), pins (npin, 2), bobs (nbob, 2), springs."""
        poses, _ = forward_kinematics(self.model, q)
        return self.place_poses(poses)

    def place_poses(self, poses):
        def world(body, local):
            pose = poses[body]
            return pose[..., None, :2] + _rotate(local, pose[..., None, 2]) if local.ndim == 3 else (
                pose[..., :2] + _rotate(local, pose[..., 2]))

        bars = world(self.bar_body, self.bars) if self.bars.size else self.bars
        polygons = [poses[b, :2] + _rotate(v, poses[b, 2]) for b, v in zip(self.polygon_body, self.polygons,
                                                                              strict=True)]
        pins = world(self.pin_body, self.pins) if self.pins.size else self.pins
        bobs = world(self.bob_body, self.bobs) if self.bobs.size else self.bobs
        springs, spring_ends = [], []
        for body_a, point_a, body_b, point_b, k, c in self.springs:
            ends = [poses[b, :2] + _rotate(p, poses[b, 2]) if b >= 0 else p for b, p in ((body_a, point_a),
                                                                                            (body_b, point_b))]
            springs.append(_spring_damper_lines(ends[0], ends[1], k > 0, c > 0, self.size))
            spring_ends.append(ends)
        table = self.model._bodies
        for body in self.joint_springs:  # a coil around a revolute joint, a zig-zag along a prismatic one
            joint_point = poses[body, :2] + _rotate(table.column("child_point")[body], poses[body, 2])
            if self.model.joint_type[body] == joints.REVOLUTE:
                turn = np.linspace(0.0, 3.0 * np.pi, 40) + poses[body, 2]
                radius = self.size * np.linspace(0.35, 0.9, turn.size)
                springs.append([joint_point + np.column_stack((radius * np.cos(turn), radius * np.sin(turn)))])
            else:
                parent = self.model.body_parent[body]
                start = table.column("parent_point")[body]
                start = poses[parent, :2] + _rotate(start, poses[parent, 2]) if parent >= 0 else start
                springs.append(_spring_damper_lines(start, joint_point, True, False, self.size))
        return {"bars": bars, "polygons": polygons, "pins": pins, "bobs": bobs, "springs": springs,
                "spring_ends": spring_ends, "poses": poses}

    def extent(self, placed):
        """(low (2,), high (2,)) of everything placed (``place``), with the ground supports."""
        parts = [placed["bars"].reshape(-1, 2), placed["pins"].reshape(-1, 2), placed["bobs"].reshape(-1, 2)]
        parts += [v for v in placed["polygons"]] + [line for group in placed["springs"] for line in group]
        parts += [np.array([point]) for _, point, _, _ in self.supports]  # (the symbols are small: not counted)
        everything = np.concatenate([p for p in parts if p.size] or [np.zeros((1, 2))])
        return everything.min(axis=0), everything.max(axis=0)


def _convex_hull(points):
    """Vertices of the convex hull of 2-D points (monotone chain), counter-clockwise."""
    pts = np.array(sorted({tuple(p) for p in points}))
    if len(pts) < 3:
        return pts

    def half(sequence):
        hull = []
        for p in sequence:
            while len(hull) >= 2 and np.cross(hull[-1] - hull[-2], p - hull[-2]) <= 0:
                hull.pop()
            hull.append(p)
        return hull[:-1]

    return np.array(half(pts) + half(pts[::-1]))


def _spring_damper_lines(a, b, spring, damper, size):
    """Polylines (k, 2) of a spring (zig-zag) beside a damper (dashpot) from a to b; either alone on the axis."""
    along = b - a
    length = float(np.hypot(*along))
    if length < 1e-12:
        return []
    u = along / length
    n = np.array([-u[1], u[0]])
    width = 0.35 * size

    def at(s, offset=0.0):
        return a + s * along + offset * n

    lines = []
    both = spring and damper
    offset = 1.2 * width if both else 0.0
    lo, hi = (0.15, 0.85)
    if both:
        lines += [np.array([a, at(lo)]), np.array([at(hi), b]),
                  np.array([at(lo, offset), at(lo, -offset)]), np.array([at(hi, offset), at(hi, -offset)])]
    else:
        lines += [np.array([a, at(lo)]), np.array([at(hi), b])]
    if spring:
        zigs = 10
        s = np.linspace(lo + 0.05, hi - 0.05, zigs + 1)
        side = np.array([0.0] + [(-1) ** k for k in range(zigs - 1)] + [0.0])
        coil = [at(lo, offset)] + [at(sk, offset + width * sd) for sk, sd in zip(s, side, strict=True)] + [
            at(hi, offset)]
        lines.append(np.array(coil))
    if damper:
        o = -offset
        mid = 0.5 * (lo + hi)
        lines += [np.array([at(lo, o), at(mid - 0.12, o)]),
                  np.array([at(mid + 0.1, o + width), at(mid - 0.12, o + width), at(mid - 0.12, o - width),
                            at(mid + 0.1, o - width)]),
                  np.array([at(mid + 0.02, o + 0.75 * width), at(mid + 0.02, o - 0.75 * width)]),
                  np.array([at(mid + 0.02, o), at(hi, o)])]
    return lines


def _support_lines(kind, point, axis, size, reach=None):
    """Line pieces of a hatched ground symbol: a pin support (a triangle on a hatched base, the base towards the
    unit vector ``axis``) or a sliding guide (a hatched line along ``axis`` from ``reach[0]`` to ``reach[1]``
    along it, below the block)."""
    lines = []
    if kind == "pin":
        h = 0.9 * size
        out = axis
        across = np.array([-out[1], out[0]])
        base = point + h * out
        lines.append(np.array([point, base - 0.6 * h * across, base + 0.6 * h * across, point]))
        lines.append(np.array([base - 1.1 * h * across, base + 1.1 * h * across]))
        for x in np.linspace(-1.1 * h, 0.8 * h, 6):
            lines.append(np.array([base + (x + 0.3 * h) * across, base + x * across + 0.3 * h * out]))
        return lines
    u = axis / np.hypot(*axis)
    n = np.array([-u[1], u[0]])
    start, end = reach if reach is not None else (-3 * size, 3 * size)
    wall = point - 0.75 * size * n  # under the block (half width 0.7 size)
    lines.append(np.array([wall + start * u, wall + end * u]))
    lines.append(np.array([point + 0.75 * size * n + start * u, point + 0.75 * size * n + end * u]))
    for s in np.linspace(start, end, max(3, int((end - start) / (0.5 * size)))):
        lines.append(np.array([wall + s * u, wall + (s - 0.3 * size) * u - 0.3 * size * n]))
    return lines


def _anchor_lines(point, toward, size):
    """A hatched wall at a spring's ground anchor, across the direction to the spring's other end."""
    u = toward - point
    u = u / np.hypot(*u) if np.hypot(*u) > 0 else np.array([0.0, 1.0])
    n = np.array([-u[1], u[0]])
    h = 0.8 * size
    lines = [np.array([point - h * n, point + h * n])]
    for s in np.linspace(-h, 0.6 * h, 5):
        lines.append(np.array([point + s * n, point + (s + 0.3 * h) * n - 0.35 * h * u]))
    return lines


class _Artists:
    """The matplotlib artists of one drawing of the mechanism, movable to another configuration (animation)."""

    def __init__(self, ax, outline, placed, color, alpha, label, thin):
        from matplotlib.collections import LineCollection, PolyCollection  # noqa: PLC0415

        self.outline = outline
        width = 1.5 if thin else 5.0
        has_bars = len(placed["bars"]) > 0
        self.bars = LineCollection(placed["bars"], colors=color, linewidths=width, alpha=alpha, capstyle="round",
                                   label=label if has_bars else None, zorder=2)
        ax.add_collection(self.bars)
        self.polygons = PolyCollection(placed["polygons"], facecolors=color, edgecolors="k", linewidths=0.8,
                                       alpha=0.35 * alpha + 0.1, zorder=2,
                                       label=None if has_bars else label)
        ax.add_collection(self.polygons)
        self.springs = LineCollection([line for group in placed["springs"] for line in group], colors="0.25",
                                      linewidths=1.0, alpha=alpha, zorder=3)
        ax.add_collection(self.springs)
        self.bobs = ax.scatter(*placed["bobs"].reshape(-1, 2).T, s=60, c=color, alpha=alpha, zorder=4,
                               edgecolors="k")
        pins = placed["pins"] if not thin else np.zeros((0, 2))
        self.pins = ax.scatter(*pins.reshape(-1, 2).T, s=18, facecolors="white", edgecolors="k", linewidths=0.8,
                               alpha=alpha, zorder=5)
        self.thin = thin

    def move(self, placed):
        self.bars.set_segments(placed["bars"])
        self.polygons.set_verts(placed["polygons"])
        self.springs.set_segments([line for group in placed["springs"] for line in group])
        self.bobs.set_offsets(placed["bobs"].reshape(-1, 2))
        if not self.thin:
            self.pins.set_offsets(placed["pins"].reshape(-1, 2))
        return [self.bars, self.polygons, self.springs, self.bobs, self.pins]


def _draw_ground(ax, outline, placements):
    """Hatched ground symbols; sliding guides reach over the travel of all ``placements``."""
    from matplotlib.collections import LineCollection  # noqa: PLC0415

    lines = []
    size = outline.size
    for kind, point, guide_axis, body in outline.supports:
        reach, direction = None, guide_axis
        if kind == "pin":  # the base away from the body: up for a hanging pendulum, down for a standing crank
            away = point - placements[0]["poses"][body, :2] if placements else np.array([0.0, -1.0])
            dominant = 1 if abs(away[1]) >= 0.5 * abs(away[0]) else 0  # prefer a base below or above
            direction = np.zeros(2)
            direction[dominant] = np.sign(away[dominant]) if away[dominant] else -1.0
        if kind == "guide":
            u = guide_axis / np.hypot(*guide_axis)
            local = outline.sliders[body][0]
            along = [(placed["poses"][body, :2] + _rotate(local, placed["poses"][body, 2]) - point) @ u
                     for placed in placements]
            reach = (min([0.0, *along]) - 2.5 * size, max([0.0, *along]) + 2.5 * size)
        lines += _support_lines(kind, point, direction, size, reach)
    if placements:
        for (body_a, point_a, body_b, point_b, _, _), (end_a, end_b) in zip(outline.springs,
                                                                            placements[0]["spring_ends"], strict=True):
            if body_a < 0:
                lines += _anchor_lines(point_a, end_b, size)
            if body_b < 0:
                lines += _anchor_lines(point_b, end_a, size)
    if lines:
        ax.add_collection(LineCollection(lines, colors="k", linewidths=0.9, zorder=1))


def _frame(ax, low, high, pad=0.08):
    """Axis limits around [low, high] (the extent of every drawing), equal aspect, x [m] / y [m]."""
    span = max(float(np.max(high - low)), 1e-9)
    margin = pad * span
    ax.set_xlim(low[0] - margin, high[0] + margin)
    ax.set_ylim(low[1] - margin, high[1] + margin)
    ax.set_aspect("equal", adjustable="box")
    ax.set(xlabel="x [m]", ylabel="y [m]")
    ax.grid(alpha=0.2)


def _draw_many(model, qs, ax, colors, alphas, labels, outline=None):
    outline = outline or Outline(model)
    placements = [outline.place(q) for q in qs]
    thin = model.nbodies > 60
    artists = [_Artists(ax, outline, placed, color, alpha, label, thin)
               for placed, color, alpha, label in zip(placements, colors, alphas, labels, strict=True)]
    _draw_ground(ax, outline, placements)
    bounds = [outline.extent(placed) for placed in placements]
    low = np.min([b[0] for b in bounds], axis=0)
    high = np.max([b[1] for b in bounds], axis=0)
    _frame(ax, low, high)
    return artists, outline, (low, high)


def draw(model, q, ax=None, outlines=None, color="C0", alpha=1.0, label=None):
    """Draw the mechanism at q (module docstring) on ``ax`` (a new figure if None), framed to its extent; returns
    the figure. ``outlines``: an ``Outline`` of the model to reuse. A spatial model (``Model3D``) is drawn by
    ``snapshot3d`` (``ax`` must then be a 3D axes)."""
    if isinstance(model, Model3D):
        return snapshot3d(model, q, ax, color=color, alpha=alpha, label=label)
    fig, ax = _axes(ax)
    _draw_many(model, [np.asarray(q, dtype=float)], ax, [color], [alpha], [label], outlines)
    if label:
        ax.legend(fontsize=7)
    return fig


# ---- spatial models ------------------------------------------------------------------------------------------------

def spatial_sticks(model, q):
    """The stick figure of a spatial model at q, in ground coordinates [m]: a dict with

    - ``segments`` (k, 2, 3): each body as bars from its joint point to its centre of mass and to the distinct
      joint points of its children (a body whose points all coincide has none);
    - ``joints`` (nbodies, 3): each body's joint point (child_point placed), ``coms`` (nbodies, 3): the centres of
      mass, ``ground`` (g, 3): the joint points of the bodies jointed to the ground (parent_point in the ground);
    - ``loops`` (nloops, 2, 3): each loop's two points (``Model3D.add_loop``; the ground's in the ground frame).
    """
    rotations, origins = forward_kinematics(model, q)
    parents = model.body_parent

    def place(index, points):  # body-frame points of the bodies ``index`` in ground coordinates
        return origins[index] + np.einsum("kij,kj->ki", rotations[index], points)

    every = np.arange(model.nbodies)
    joints_at = place(every, model.joint_child_point)
    coms = place(every, model.body_com)
    children = np.flatnonzero(parents >= 0)
    child_joints = place(parents[children], model.joint_parent_point[children])
    starts = np.concatenate([joints_at, joints_at[parents[children]]])
    ends = np.concatenate([coms, child_joints])
    # one bar per distinct (body, end point): children jointed at one point share a bar
    keyed = np.unique(np.column_stack([np.concatenate([every, parents[children]]), starts, ends]), axis=0)
    keep = np.linalg.norm(keyed[:, 4:7] - keyed[:, 1:4], axis=1) > 0.0
    segments = np.stack([keyed[keep, 1:4], keyed[keep, 4:7]], axis=1)
    ground = model.joint_parent_point[parents < 0]
    loops = np.zeros((model.nloops, 2, 3))
    for k in range(model.nloops):
        loop = model.loop(k)
        for end, (body, point) in enumerate(((loop["body_a"], loop["point_a"]), (loop["body_b"], loop["point_b"]))):
            loops[k, end] = point if body < 0 else origins[body] + rotations[body] @ point
    return {"segments": segments.reshape(-1, 2, 3), "joints": joints_at, "coms": coms, "ground": ground,
            "loops": loops}


def snapshot3d(model, q, ax=None, color="C0", alpha=1.0, label=None):
    """Draw a spatial model (``Model3D``) at configuration q (nq,) as a matplotlib 3D stick figure; returns the
    figure.

    Each body is drawn as bars from its joint point to its centre of mass and to its children's joints
    (``spatial_sticks``), joints as open circles, centres of mass as dots (area growing with the mass), the
    ground joints as black triangles; axes x, y, z [m] with equal scales, framed to the figure. ``ax``: a 3D axes
    (``projection="3d"``) to draw on; None makes a new figure (``figure``: no backend selected).
    """
    if not isinstance(model, Model3D):
        raise TypeError(f"snapshot3d draws a Model3D; got {type(model).__name__} (use draw for a planar Model)")
    if ax is None:
        fig, ax = figure(pyplot=None, subplot_kw={"projection": "3d"}, figsize=(6, 6))
    else:
        if getattr(ax, "name", None) != "3d":
            raise TypeError("snapshot3d needs a 3D axes: fig.add_subplot(projection='3d')")
        fig = ax.figure
    from mpl_toolkits.mplot3d.art3d import Line3DCollection  # noqa: PLC0415

    sticks = spatial_sticks(model, q)
    if len(sticks["segments"]):
        ax.add_collection3d(Line3DCollection(sticks["segments"], colors=color, alpha=alpha, linewidths=2.0,
                                             label=label))
    if len(sticks["loops"]):  # the loops: dashed, from point a to point b (a point for a closed spherical loop)
        ax.add_collection3d(Line3DCollection(sticks["loops"], colors=color, alpha=alpha, linewidths=1.2,
                                             linestyles="--"))
    joints_at, coms = sticks["joints"], sticks["coms"]
    ax.scatter(*joints_at.T, facecolors="white", edgecolors=color, alpha=alpha, s=25, depthshade=False)
    masses = model.body_mass
    sizes = 10.0 + 60.0 * masses / max(float(masses.max()), 1e-300)
    ax.scatter(*coms.T, color=color, alpha=alpha, s=sizes, depthshade=False)
    if len(sticks["ground"]):
        ax.scatter(*sticks["ground"].T, color="k", marker="^", s=40, depthshade=False)
    everything = np.vstack([joints_at, coms, sticks["ground"], sticks["segments"].reshape(-1, 3),
                            sticks["loops"].reshape(-1, 3)])
    low, high = everything.min(axis=0), everything.max(axis=0)
    centre, half = 0.5 * (low + high), 0.5 * max(float(np.max(high - low)), 1e-9) * 1.1
    ax.set(xlim=(centre[0] - half, centre[0] + half), ylim=(centre[1] - half, centre[1] + half),
           zlim=(centre[2] - half, centre[2] + half), xlabel="x [m]", ylabel="y [m]", zlabel="z [m]")
    ax.set_box_aspect((1.0, 1.0, 1.0))
    if label:
        ax.legend(fontsize=7)
    return fig


_QUATERNION = tuple((f"quaternion {c}", "-") for c in "wxyz")
_OMEGA = tuple((f"omega {c}", "rad/s") for c in "xyz")  # a quaternion joint's rates: omega in the child frame
_SPATIAL_COORDINATES = {  # joint type: (name, unit) of each entry of its q, and of its v
    "revolute": ((("angle", "rad"),), (("rate", "rad/s"),)),
    "prismatic": ((("slide", "m"),), (("speed", "m/s"),)),
    "cylindrical": ((("angle", "rad"), ("slide", "m")), (("rate", "rad/s"), ("speed", "m/s"))),
    "universal": ((("angle 1", "rad"), ("angle 2", "rad")), (("rate 1", "rad/s"), ("rate 2", "rad/s"))),
    "spherical": (_QUATERNION, _OMEGA),
    "planar": ((("x", "m"), ("y", "m"), ("angle", "rad")), (("x rate", "m/s"), ("y rate", "m/s"), ("rate", "rad/s"))),
    "free": ((("x", "m"), ("y", "m"), ("z", "m"), *_QUATERNION),
             (("x rate", "m/s"), ("y rate", "m/s"), ("z rate", "m/s"), *_OMEGA)),
    "fixed": ((), ())}


def spatial_coordinate_labels(model, kind="q"):
    """Labels of a spatial model's configuration q (nq,), or with kind "v" of its velocity v (nv,):
    "<body> <coordinate> [<unit>]" ("arm1 angle [rad]", "top quaternion w [-]", "top omega x [rad/s]"), in order."""
    column = {"q": 0, "v": 1}[kind]
    return [f"{name} {what} [{unit}]" for name, joint in zip(model.names, model.joint_types, strict=True)
            for what, unit in _SPATIAL_COORDINATES[joint][column]]


def spatial_snapshots(model, t, q, times, ax):
    """The spatial model at the samples (t (nt,), q (nt, nq)) nearest ``times`` on the 3D axes ``ax``, fading from
    light to dark, framed so that every snapshot fits (equal scales)."""
    index = [int(np.argmin(np.abs(np.asarray(t) - ti))) for ti in times]
    count = len(index)
    points = []
    for k, i in enumerate(index):
        snapshot3d(model, q[i], ax, color=f"C{k % 10}", alpha=0.4 + 0.6 * (k + 1) / count, label=f"t = {t[i]:.3g} s")
        sticks = spatial_sticks(model, q[i])
        points.append(np.vstack([sticks["joints"], sticks["coms"], sticks["ground"], sticks["loops"].reshape(-1, 3)]))
    points = np.vstack(points)
    low, high = points.min(axis=0), points.max(axis=0)
    centre, half = 0.5 * (low + high), 0.55 * max(float(np.max(high - low)), 1e-9)
    ax.set(xlim=(centre[0] - half, centre[0] + half), ylim=(centre[1] - half, centre[1] + half),
           zlim=(centre[2] - half, centre[2] + half))
    return ax.figure


def _spatial_dynamics(result, model):
    """``spatial_overview`` of a dynamics result: 3D snapshots at four times, then q, the energy (balance) and the
    loop drift against time."""
    from matplotlib.figure import Figure  # noqa: PLC0415

    t, q = np.asarray(result["t"], dtype=float), np.asarray(result["q"], dtype=float)
    panels = ["q", *(key for key in ("energy", "drift") if key in result)]
    fig = Figure(figsize=(8, 6 + 2.8 * len(panels)))
    grid = fig.add_gridspec(1 + len(panels), 1, height_ratios=[2.2] + [1.0] * len(panels))
    spatial_snapshots(model, t, q, np.linspace(t[0], t[-1], 4), fig.add_subplot(grid[0], projection="3d"))
    for row, panel in enumerate(panels, start=1):
        ax = fig.add_subplot(grid[row])
        if panel == "q":
            time_series(t, q, spatial_coordinate_labels(model), ax, "joint coordinate")
        elif panel == "energy":
            energy(t, result["energy"], ax, result.get("dissipated_work"), result.get("applied_work"))
        else:
            drift(t, result["drift"], ax)
    fig.tight_layout()
    return fig


def spatial_overview(result, model, most=4, amplitude=0.3):
    """The figure ``rmbd plot`` draws for a spatial model's result (a dict of the .npz ``rmbd run`` wrote): for
    dynamics, 3D snapshots at four times over the coordinates, the energy (balance) and the loop drift against time;
    otherwise the static equilibrium q as a 3D snapshot, and for modes one 3D panel per mode (at most ``most``): the
    equilibrium (grey) and the configuration displaced along the mode, q (+) s shape, with s such that the largest
    velocity-space component is ``amplitude`` [rad or m]."""
    if "t" in result:
        return _spatial_dynamics(result, model)
    q = np.asarray(result["q"], dtype=float)
    omega = np.asarray(result["omega"]) if "omega" in result else np.zeros(0)
    count = min(most, omega.size)
    fig, axes = figure(1, max(count, 1), pyplot=False, subplot_kw={"projection": "3d"},
                       figsize=(5 * max(count, 1), 5), squeeze=False)
    axes = axes[0]
    if count == 0:
        snapshot3d(model, q, axes[0], label="static equilibrium")
        return fig
    shapes = np.asarray(result["shapes"], dtype=float)
    for k, ax in enumerate(axes):
        shape = shapes[:, k] * amplitude / max(float(np.abs(shapes[:, k]).max()), 1e-300)
        snapshot3d(model, q, ax, color="0.6", alpha=0.5)
        snapshot3d(model, integrate_configuration(model, q, shape), ax, color=f"C{k % 10}")
        ax.set_title(f"mode {k + 1}: {omega[k]:.4g} rad/s")
    return fig


def snapshots(model, result, times, ax=None):
    """The mechanism at the samples of ``result`` (t, q) nearest ``times``, fading from light to dark, framed so
    that every snapshot fits."""
    fig, ax = _axes(ax)
    index = [int(np.argmin(np.abs(result.t - t))) for t in times]
    count = len(index)
    _draw_many(model, [result.q[i] for i in index], ax, [f"C{k % 10}" for k in range(count)],
               [0.4 + 0.6 * (k + 1) / count for k in range(count)], [f"t = {result.t[i]:.3g} s" for i in index])
    ax.legend(fontsize=7)
    return fig


def _mode_scale(outline, q_eq, shape, fraction=0.15):
    """The amplitude that moves the farthest-moving point of the drawing by ``fraction`` of the model's extent
    (linear in the amplitude for small amplitudes: measured at a small one)."""
    base = outline.place(q_eq)
    low, high = outline.extent(base)
    span = max(float(np.max(high - low)), 1e-9)
    trial = 1e-6 / max(np.abs(shape).max(), 1e-300)
    moved = outline.place(q_eq + trial * shape)
    step = max(float(np.max(np.abs(moved["bars"] - base["bars"]), initial=0.0)),
               float(np.max(np.abs(moved["bobs"] - base["bobs"]), initial=0.0)),
               max((float(np.max(np.abs(m - b))) for m, b in zip(moved["polygons"], base["polygons"], strict=True)),
                   default=0.0))
    return trial * fraction * span / step if step > 0 else trial


def mode_shapes(model, q_eq, shapes, omega, scale=None, ax=None, most=4, axes=None):
    """Mode shapes about the equilibrium q_eq: the equilibrium in grey, each mode at +/- an amplitude that moves the
    model's farthest point by 15 % of its size (``scale`` times the shape normalised to its largest entry if given).
    One panel per mode (at most ``most``) on a new figure or on ``axes`` (a list), or all modes on ``ax``. Labels
    give the frequency in Hz and rad/s."""
    shapes = np.asarray(shapes, dtype=float).reshape(model.nq, -1)
    omega = np.asarray(omega, dtype=float)
    separate, new = ax is None, ax is None and axes is None
    count = min(shapes.shape[1], most if axes is None else len(axes)) if separate else shapes.shape[1]
    if axes is not None:
        fig, axes = axes[0].figure, list(axes)
    elif separate:
        fig, axes = figure(1, count, figsize=(3.2 * count + 0.6, 3.8), squeeze=False)
        axes = list(axes[0])
    else:
        fig, axes = ax.figure, [ax] * count
    outline = Outline(model)
    for k in range(count):
        v = shapes[:, k] / np.abs(shapes[:, k]).max()
        amplitude = scale if scale is not None else _mode_scale(outline, q_eq, v)
        label = f"mode {k + 1}: {omega[k] / (2 * np.pi):.4g} Hz ({omega[k]:.4g} rad/s)"
        qs = [q_eq, q_eq + amplitude * v, q_eq - amplitude * v]
        colors = ["0.65", f"C{k}", f"C{k}"]
        labels = ["equilibrium" if k == 0 or separate else None, label, None]
        _draw_many(model, qs, axes[k], colors, [0.8, 1.0, 0.35], labels, outline)
        if separate:
            axes[k].set_title(label, fontsize=8)
    if not separate:
        ax.legend(fontsize=7)
    if new:
        fig.tight_layout()
    return fig


def reaction_arrows(model, q, joint_reactions, ax, fraction=0.2):
    """Arrows of the joint reaction forces (nbodies, 3) (the parent on the body) at the joint points of the
    mechanism at q, the largest ``fraction`` of the drawing's size long; the legend gives the scale."""
    joint_reactions = np.asarray(joint_reactions, dtype=float).reshape(model.nbodies, 3)
    poses, _ = forward_kinematics(model, q)
    local = model._bodies.column("child_point")
    points = poses[:, :2] + _rotate(local, poses[:, 2])
    force = joint_reactions[:, :2]
    largest = float(np.hypot(force[:, 0], force[:, 1]).max(initial=0.0))
    if largest == 0.0:
        return None
    low, high = Outline(model).extent(Outline(model).place(q))
    length = fraction * max(float(np.max(high - low)), 1e-9)
    arrows = ax.quiver(points[:, 0], points[:, 1], force[:, 0], force[:, 1], angles="xy", scale_units="xy",
                       scale=largest / length, color="C3", width=0.006, zorder=6,
                       label=f"joint reactions on the bodies (largest {largest:.4g} N)")
    tips = points + force * (length / largest)
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    margin = 0.05 * length
    ax.set_xlim(min(x0, tips[:, 0].min() - margin), max(x1, tips[:, 0].max() + margin))
    ax.set_ylim(min(y0, tips[:, 1].min() - margin), max(y1, tips[:, 1].max() + margin))
    return arrows


def reaction_bars(joint_reactions, loop_forces=None, ax=None, joint_names=None, loop_names=None):
    """Reactions at one state (statics): Fx, Fy [N] of every joint ((nbodies, 3), the parent on the body) and loop
    ((nloops, 2, 3), on body a), as grouped bars (lines against the joint for more than 30 joints)."""
    fig, ax = _axes(ax)
    joint_reactions = np.asarray(joint_reactions, dtype=float).reshape(-1, 3)
    rows = [joint_reactions[:, :2]]
    names = list(joint_names or joint_labels([f"body {i}" for i in range(joint_reactions.shape[0])]))
    if loop_forces is not None and np.size(loop_forces):
        loop_forces = np.asarray(loop_forces, dtype=float).reshape(-1, 2, 3)
        rows.append(loop_forces[:, 0, :2])
        names += [f"loop {name}" for name in (loop_names or range(loop_forces.shape[0]))]
    forces = np.vstack(rows)
    index = np.arange(forces.shape[0])
    if forces.shape[0] <= 30:
        ax.bar(index - 0.2, forces[:, 0], 0.4, label="Fx [N]")
        ax.bar(index + 0.2, forces[:, 1], 0.4, label="Fy [N]")
        ax.set_xticks(index, names, rotation=30, ha="right", fontsize=7)
    else:
        ax.plot(index, forces[:, 0], label="Fx [N]")
        ax.plot(index, forces[:, 1], label="Fy [N]")
        ax.set_xlabel(f"joint ({names[0]} ... {names[-1]})")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_ylabel("reaction force [N]")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    return fig


# ---- one figure of a whole result -----------------------------------------------------------------------------

class _Samples:
    """(t, q) in the shape ``snapshots`` reads."""

    def __init__(self, t, q):
        self.t, self.q = t, q


def _as_arrays(result):
    """The arrays of a SimulationResult or KinematicResult under the names ``rmbd run`` saves; a mapping as is."""
    if hasattr(result, "dissipated_work"):  # SimulationResult
        data = {"kind": "dynamics", "t": result.t, "q": result.q, "qd": result.qd,
                "dissipated_work": result.dissipated_work, "applied_work": result.applied_work}
        if result.model is not None:
            kinetic, potential = result.energy()
            data["energy"] = kinetic + potential
        if result.constraint_drift is not None:
            data["drift"] = result.constraint_drift
        return data
    if hasattr(result, "driving_forces") and hasattr(result, "driven"):  # KinematicResult
        return {"kind": "kinematics", "t": result.t, "q": result.q, "qd": result.qd, "qdd": result.qdd,
                "driving_forces": result.driving_forces, "driven": result.driven,
                "joint_reactions": result.joint_reactions, "loop_forces": result.loop_forces}
    return result


def _stored_labels(data, model, kind, count):
    """Labels of the coordinates (kind "q", "qd", "qdd", "tau"): from the model, else from the bodies' names, joint
    types and parents a result file stores, else plain "q1" (a result written before they were stored)."""
    if model is not None:
        return coordinate_labels(model, kind)
    if all(key in data for key in ("body_names", "joint_type", "body_parent")):
        names, units = names_units([str(n) for n in data["body_names"]], data["joint_type"], data["body_parent"],
                                   kind)
        if len(names) == count:
            return [f"{name} [{unit}]" for name, unit in zip(names, units, strict=True)]
    return [f"{kind}{k + 1}" for k in range(count)]


def overview(result, model=None, pyplot=None):
    """One figure of everything a result holds, as ``rmbd plot`` draws it.

    ``result``: a SimulationResult or KinematicResult (its model is used), or a mapping of the arrays ``rmbd run``
    saves (``kind`` "dynamics" | "kinematics" | "statics" | "modes", ``q``, ``t``, ...). With a model the mechanism is
    drawn too: snapshots (dynamics, kinematics), the equilibrium (statics), the mode shapes (modes). Panels:
    coordinates; energy (the balance when work was done) and loop drift (dynamics); driving forces and reaction
    forces (kinematics); reaction forces (statics).
    """
    data = _as_arrays(result)
    model = model if model is not None else getattr(result, "model", None)
    kind = str(data["kind"]) if "kind" in data else "dynamics"
    q = np.asarray(data["q"])
    nq = q.shape[-1]
    if model is not None and model.nq != nq:
        raise ValueError(f"the result has {nq} coordinates but the model {model.nq}")
    if model is not None:
        joint_names = joint_labels(model.body_names, model.body_parent)
        loop_names = list(model.loop_names)
    else:
        joint_names = joint_labels([str(n) for n in data["body_names"]], data["body_parent"]) if all(
            key in data for key in ("body_names", "body_parent")) else None
        loop_names = [str(n) for n in data["loop_names"]] if "loop_names" in data else None
    if kind == "modes":
        omega, shapes = np.asarray(data["omega"]), np.asarray(data["shapes"])
        if model is not None:
            count = min(4, omega.size)
            fig, axes = figure(1, count, pyplot=pyplot, figsize=(3.2 * count + 0.6, 3.8), squeeze=False)
            mode_shapes(model, q, shapes, omega, axes=list(axes[0]))
        else:
            fig, ax = figure(pyplot=pyplot, figsize=(7, 4))
            for k, w in enumerate(omega):
                ax.plot(np.arange(nq), shapes[:, k] / np.abs(shapes[:, k]).max(), "-o", ms=3,
                        label=f"mode {k + 1}: {w / (2 * np.pi):.4g} Hz ({w:.4g} rad/s)")
            if nq <= 20:
                ax.set_xticks(np.arange(nq), _stored_labels(data, None, "q", nq), rotation=30, ha="right",
                              fontsize=7)
            ax.set(ylabel="mode shape (largest entry 1)", title="mode shapes in joint coordinates")
            ax.legend(fontsize=7)
    elif kind == "statics":
        panels = 2 if model is not None else 1
        fig, axes = figure(panels, 1, pyplot=pyplot, figsize=(8, 4 * panels), squeeze=False)
        if model is not None:
            draw(model, q, axes[0, 0], label="static equilibrium")
            reaction_arrows(model, q, data["joint_reactions"], axes[0, 0])
            axes[0, 0].legend(fontsize=7)
        reaction_bars(data["joint_reactions"], data.get("loop_forces"), axes[-1, 0], joint_names, loop_names)
        stable = "stable" if "eigenvalues" in data and np.all(np.asarray(data["eigenvalues"]) > 0) else \
            "stability not known"
        axes[0, 0].set_title(f"static equilibrium ({stable})", fontsize=9)
    else:
        t = np.asarray(data["t"])
        panels = ["mechanism"] if model is not None else []
        panels.append("q")
        if kind == "kinematics":
            panels += ["driving"] if np.size(data.get("driving_forces", ())) else []
            panels += ["reactions"] if "joint_reactions" in data else []
        else:
            panels += [key for key in ("energy", "drift") if key in data]
        heights = [1.8 if panel == "mechanism" else 1.0 for panel in panels]
        fig, axes = figure(len(panels), 1, pyplot=pyplot, figsize=(8, 2.8 * sum(heights) + 0.5), squeeze=False,
                           gridspec_kw={"height_ratios": heights})
        for ax, panel in zip(axes[:, 0], panels, strict=True):
            if panel == "mechanism":
                snapshots(model, _Samples(t, q), np.linspace(t[0], t[-1], 4), ax)
            elif panel == "q":
                trajectories(t, q, ax, names=_stored_labels(data, model, "q", nq))
            elif panel == "driving":
                forces = np.asarray(data["driving_forces"])
                driven = data["driven"] if "driven" in data else np.arange(forces.shape[1])
                driving_forces(t, forces, driven, ax=ax, labels=_stored_labels(data, model, "tau", nq))
            elif panel == "reactions":
                reactions(t, data["joint_reactions"], data.get("loop_forces"), ax, joint_names, loop_names)
            elif panel == "energy":
                energy(t, data["energy"], ax, data.get("dissipated_work"), data.get("applied_work"))
            else:
                drift(t, data["drift"], ax)
    fig.tight_layout()
    return fig


def _animate3d(model, t, q, index, path, fps, dpi):
    """``animate`` for a spatial model: each frame a ``snapshot3d``, the axes fixed to the extent of every frame."""
    from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter  # noqa: PLC0415

    fig, ax = figure(pyplot=False, subplot_kw={"projection": "3d"}, figsize=(6, 6))
    sticks = [spatial_sticks(model, q[k]) for k in index]
    points = np.vstack([np.vstack([s["joints"], s["coms"], s["ground"], s["loops"].reshape(-1, 3)]) for s in sticks])
    low, high = points.min(axis=0), points.max(axis=0)
    centre, half = 0.5 * (low + high), 0.55 * max(float(np.max(high - low)), 1e-9)

    def frame(k):
        ax.cla()
        snapshot3d(model, q[index[k]], ax)
        ax.set(xlim=(centre[0] - half, centre[0] + half), ylim=(centre[1] - half, centre[1] + half),
               zlim=(centre[2] - half, centre[2] + half), title=f"t = {t[index[k]]:.3f} s")
        return []

    movie = FuncAnimation(fig, frame, frames=len(index), blit=False)
    writer = PillowWriter(fps=fps) if str(path).endswith(".gif") else FFMpegWriter(fps=fps)
    movie.save(path, writer=writer, dpi=dpi)
    return path


def animate(model, t, q, path, fps=25, frames=None, dpi=80):
    """Write an animation of the samples (t, q) to ``path`` (.gif with Pillow, .mp4 with ffmpeg), framed to the
    extent of every frame. A spatial model (``Model3D``) is animated as 3D snapshots (``snapshot3d``)."""
    _require_matplotlib()
    from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter  # noqa: PLC0415

    count = t.size if frames is None else min(frames, t.size)
    if isinstance(model, Model3D):
        return _animate3d(model, t, q, np.linspace(0, t.size - 1, count).round().astype(int), path, fps, dpi)
    index = np.linspace(0, t.size - 1, count).round().astype(int)
    fig, ax = figure(pyplot=False)
    outline = Outline(model)
    placements = [outline.place(q[k]) for k in index]
    artists = _Artists(ax, outline, placements[0], "C0", 1.0, None, model.nbodies > 60)
    _draw_ground(ax, outline, placements)
    bounds = [outline.extent(placed) for placed in placements]
    _frame(ax, np.min([b[0] for b in bounds], axis=0), np.max([b[1] for b in bounds], axis=0))
    label = ax.set_title("")

    def frame(k):
        moved = artists.move(placements[k])
        label.set_text(f"t = {t[index[k]]:.3f} s")
        return [*moved, label]

    movie = FuncAnimation(fig, frame, frames=count, blit=False)
    writer = PillowWriter(fps=fps) if str(path).endswith(".gif") else FFMpegWriter(fps=fps)
    movie.save(path, writer=writer, dpi=dpi)
    return path
