"""Drawings of planar mechanisms: the outline of each body (``Outline``), supports, springs and dampers,
``draw``, ``snapshots``, ``mode_shapes`` and the joint reactions as arrows and bars (the rules are in the
package docstring)."""

import numpy as np

from .._kernels import layout as L
from ..dynamics.kinematics import forward_kinematics
from ..model import joints
from ..model.spatial import Model3D
from .series import LONG_CHAIN, _axes, body_colors, figure, joint_labels
from .spatial import snapshot3d

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
        self.surfaces = list(model._surfaces.values())  # contact surfaces: drawn in their owner's frame
        self.shape_body, self.shapes = _contact_shapes(model._contacts, self.size)

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
        shapes = [poses[b, :2] + _rotate(v, poses[b, 2]) for b, v in zip(self.shape_body, self.shapes, strict=True)]
        surfaces = []
        for surface in self.surfaces:  # in the ground frame: (kind, point or centre, normal, extent or radius, turn)
            owner = surface["owner"]
            x, y, turn = poses[owner] if owner >= 0 else (0.0, 0.0, 0.0)
            if surface["kind"] == "ground":
                surfaces.append(("ground", np.array([x, y]) + _rotate(surface["point"], turn),
                                 _rotate(surface["normal"], turn), surface["extent"], turn))
            else:
                surfaces.append(("drum", np.array([x, y]) + _rotate(surface["center"], turn), None,
                                 surface["radius"], turn))
        return {"bars": bars, "polygons": polygons, "pins": pins, "bobs": bobs, "springs": springs,
                "spring_ends": spring_ends, "poses": poses, "shapes": shapes, "surfaces": surfaces}

    def extent(self, placed):
        """(low (2,), high (2,)) of everything placed (``place``), with the ground supports and the contact
        surfaces (a ground's bounded ends, a drum's disc; an unbounded ground reaches to the edge of the view)."""
        parts = [placed["bars"].reshape(-1, 2), placed["pins"].reshape(-1, 2), placed["bobs"].reshape(-1, 2)]
        parts += [v for v in placed["polygons"]] + [line for group in placed["springs"] for line in group]
        parts += [np.array([point]) for _, point, _, _ in self.supports]  # (the symbols are small: not counted)
        parts += placed.get("shapes", [])
        for kind, point, normal, extent, _ in placed.get("surfaces", ()):
            if kind == "drum":
                parts.append(np.array([point - extent, point + extent]))
                continue
            tangent = np.array([normal[1], -normal[0]])
            parts.append(np.array([point] + [point + end * tangent for end in extent if np.isfinite(end)]))
        everything = np.concatenate([p for p in parts if p.size] or [np.zeros((1, 2))])
        return everything.min(axis=0), everything.max(axis=0)


def _contact_shapes(contacts, size):
    """(bodies, outlines): each body's contact shapes as closed polylines in its frame, once per distinct shape (a
    capsule against two surfaces is drawn once): a circle, a capsule (a segment with a radius: its two half circles
    and the two sides), a point (radius 0) as a small circle of 0.15 ``size``."""
    bodies, outlines, seen = [], [], set()
    for contact in contacts:
        radius = contact["radius"]
        ends = contact["segment"] if "segment" in contact else np.array([contact["point"], contact["point"]])
        key = (contact["body"], radius, *np.round(ends, 12).ravel())
        if key in seen:
            continue
        seen.add(key)
        along = ends[1] - ends[0]
        start = np.arctan2(along[1], along[0]) + 0.5 * np.pi if np.any(along) else 0.0
        half = np.linspace(0.0, np.pi, 13) if np.any(along) else np.linspace(0.0, 2.0 * np.pi, 25)
        radius = radius if radius > 0.0 else 0.15 * size
        arcs = [ends[0] + radius * np.column_stack((np.cos(start + half), np.sin(start + half)))]
        if np.any(along):
            back = start + np.pi + half
            arcs.append(ends[1] + radius * np.column_stack((np.cos(back), np.sin(back))))
        outline = np.concatenate(arcs)
        bodies.append(contact["body"])
        outlines.append(np.vstack((outline, outline[:1])))
    return np.array(bodies, dtype=int), outlines


def _clipped(point, tangent, extent, low, high):
    """The part (s0, s1) of the line point + s tangent, s within ``extent``, inside the box [low, high]; None if
    none."""
    lo, hi = float(extent[0]), float(extent[1])
    for axis in range(2):
        if abs(tangent[axis]) < 1e-12:
            if not low[axis] <= point[axis] <= high[axis]:
                return None
            continue
        a, b = sorted(((low[axis] - point[axis]) / tangent[axis], (high[axis] - point[axis]) / tangent[axis]))
        lo, hi = max(lo, a), min(hi, b)
    return (lo, hi) if lo < hi else None


def surface_lines(placed, low, high, size):
    """Line pieces (k, 2) of the contact surfaces placed (``Outline.place``): a ground as its surface line over its
    extent (an unbounded side to the edge of the box [low, high]), hatched on its solid side; a drum as its circle
    with a spoke, which turns with the body that carries it."""
    lines = []
    for kind, point, normal, extent, turn in placed["surfaces"]:
        if kind == "drum":
            angles = np.linspace(0.0, 2.0 * np.pi, 73)
            lines.append(point + extent * np.column_stack((np.cos(angles), np.sin(angles))))
            lines.append(np.array([point, point + extent * np.array([np.cos(turn), np.sin(turn)])]))
            continue
        tangent = np.array([normal[1], -normal[0]])
        span = _clipped(point, tangent, extent, low, high)
        if span is None:
            continue
        s0, s1 = span
        lines.append(np.array([point + s0 * tangent, point + s1 * tangent]))
        step = 0.5 * size
        count = min(400, int((s1 - s0) / step) + 1)
        for s in np.linspace(s0, s1, count):
            start = point + s * tangent
            lines.append(np.array([start, start - 0.6 * size * normal - 0.4 * size * tangent]))
    return lines


def drum_discs(placed):
    """The drums placed (``Outline.place``) as polygons (k, 2), to fill."""
    angles = np.linspace(0.0, 2.0 * np.pi, 73)
    return [point + radius * np.column_stack((np.cos(angles), np.sin(angles)))
            for kind, point, _, radius, _ in placed["surfaces"] if kind == "drum"]


def contact_directions(model, poses, points):
    """The outward unit normals (nrows, 2) of the contact rows' surfaces at the contact ``points`` (nrows, 2), for
    the body poses ``poses`` (``forward_kinematics``): a plane's normal turned with its owner, a disc's from its
    centre to the point; rows and their surfaces as ``model.contact_int`` / ``contact_real``."""
    owner = model.contact_int[:, L.COWNER]
    real = model.contact_real
    turn = np.where(owner >= 0, poses[owner, 2], 0.0)
    com = model.body_com[owner] if model.nbodies else np.zeros((owner.size, 2))
    origin = np.where((owner >= 0)[:, None], poses[owner, :2] + _rotate(com, turn), 0.0)
    plane = model.contact_int[:, L.CSURFACE] == L.SURFACE_PLANE
    normals = _rotate(real[:, L.CSN:L.CSN + 2], turn)
    away = points - (origin + _rotate(real[:, L.CSP:L.CSP + 2], turn))
    length = np.hypot(away[:, 0], away[:, 1])
    radial = away / np.where(length > 0.0, length, 1.0)[:, None]
    return np.where(plane[:, None], normals, radial)


def contact_force_lines(model, poses, forces, scale, size):
    """Arrows (shaft and head as line pieces (k, 2)) of the contact forces on the shapes at one sample:
    ``forces`` = (normal (nrows,), tangential (nrows,), point (nrows, 2)) as ``SimulationResult.contact_forces``
    gives them at that sample; ``scale`` [m/N]. Rows that do not touch (zero forces) draw nothing."""
    normal, tangential, points = (np.asarray(v, dtype=float) for v in forces)
    n = contact_directions(model, poses, points)
    t = np.column_stack((n[:, 1], -n[:, 0]))
    vectors = (normal[:, None] * n + tangential[:, None] * t) * scale
    lines = []
    for start, vector in zip(points, vectors, strict=True):
        length = float(np.hypot(*vector))
        if length == 0.0:
            continue
        tip = start + vector
        u = vector / length
        head = min(0.35 * length, 0.6 * size)
        side = np.array([-u[1], u[0]])
        lines += [np.array([start, tip]), np.array([tip - head * u + 0.5 * head * side, tip,
                                                    tip - head * u - 0.5 * head * side])]
    return lines


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
    """The matplotlib artists of one drawing of the mechanism, movable to another configuration (animation).
    ``color``: one colour for the whole drawing, or None for a colour per body (``body_colors``)."""

    def __init__(self, ax, outline, placed, color, alpha, label, thin):
        from matplotlib.collections import LineCollection, PolyCollection  # noqa: PLC0415

        self.outline = outline
        width = 1.5 if thin else 5.0
        has_bars = len(placed["bars"]) > 0
        if color is None:
            palette = body_colors(outline.model.nbodies)
            bar_colors, bob_colors = palette[outline.bar_body], palette[outline.bob_body]
            polygon_colors = palette[outline.polygon_body] if len(outline.polygon_body) else "C0"
        else:
            bar_colors = polygon_colors = bob_colors = color
        self.bars = LineCollection(placed["bars"], colors=bar_colors, linewidths=width, alpha=alpha,
                                   capstyle="round", label=label if has_bars else None, zorder=2)
        ax.add_collection(self.bars)
        self.polygons = PolyCollection(placed["polygons"], facecolors=polygon_colors, edgecolors="k",
                                       linewidths=0.8, alpha=0.35 * alpha + 0.1, zorder=2,
                                       label=None if has_bars else label)
        ax.add_collection(self.polygons)
        self.springs = LineCollection([line for group in placed["springs"] for line in group], colors="0.25",
                                      linewidths=1.0, alpha=alpha, zorder=3)
        ax.add_collection(self.springs)
        bobs = placed["bobs"].reshape(-1, 2)
        self.bobs = ax.scatter(*bobs.T, s=60, c=bob_colors if len(bobs) else None, alpha=alpha, zorder=4,
                               edgecolors="k")
        pins = placed["pins"] if not thin else np.zeros((0, 2))
        self.pins = ax.scatter(*pins.reshape(-1, 2).T, s=18, facecolors="white", edgecolors="k", linewidths=0.8,
                               alpha=alpha, zorder=5)
        shape_colors = palette[outline.shape_body] if color is None and len(outline.shape_body) else (color or "k")
        self.shapes = LineCollection(placed["shapes"], colors=shape_colors, linewidths=0.9, alpha=alpha, zorder=3)
        ax.add_collection(self.shapes)
        self.thin = thin

    def move(self, placed):
        self.bars.set_segments(placed["bars"])
        self.polygons.set_verts(placed["polygons"])
        self.springs.set_segments([line for group in placed["springs"] for line in group])
        self.bobs.set_offsets(placed["bobs"].reshape(-1, 2))
        if not self.thin:
            self.pins.set_offsets(placed["pins"].reshape(-1, 2))
        self.shapes.set_segments(placed["shapes"])
        return [self.bars, self.polygons, self.springs, self.bobs, self.pins, self.shapes]


class _SurfaceArtists:
    """The contact surfaces of one placement (``surface_lines``, ``drum_discs``) in the view of ``ax`` (an
    unbounded ground reaches to its edges), movable to another placement (a surface a body carries moves)."""

    def __init__(self, ax, outline, placed, alpha=1.0):
        from matplotlib.collections import LineCollection, PolyCollection  # noqa: PLC0415

        self.ax, self.size = ax, outline.size
        self.discs = PolyCollection(drum_discs(placed), facecolors="0.85", edgecolors="none", alpha=alpha, zorder=1)
        ax.add_collection(self.discs)
        self.lines = LineCollection(self._lines(placed), colors="0.2", linewidths=1.0, alpha=alpha, zorder=1)
        ax.add_collection(self.lines)

    def _lines(self, placed):
        (x0, x1), (y0, y1) = self.ax.get_xlim(), self.ax.get_ylim()
        return surface_lines(placed, np.array([x0, y0]), np.array([x1, y1]), self.size)

    def move(self, placed):
        self.discs.set_verts(drum_discs(placed))
        self.lines.set_segments(self._lines(placed))
        return [self.discs, self.lines]


class _ForceArtists:
    """Arrows of the contact forces (``contact_force_lines``) at one sample, movable to another."""

    def __init__(self, ax, outline, scale, label=None):
        from matplotlib.collections import LineCollection  # noqa: PLC0415

        self.outline, self.scale = outline, scale
        self.lines = LineCollection([], colors="C3", linewidths=1.4, zorder=6, label=label)
        ax.add_collection(self.lines)

    def move(self, placed, forces):
        self.lines.set_segments(contact_force_lines(self.outline.model, placed["poses"], forces, self.scale,
                                                    self.outline.size))
        return [self.lines]


def force_scale(outline, forces, low, high, fraction=0.15):
    """(scale [m/N], largest force [N]): the largest contact force of ``forces`` (normal, tangential, ...: arrays
    over samples and rows) drawn ``fraction`` of the drawing's size [low, high] long; (0, 0) without forces."""
    largest = float(np.hypot(np.asarray(forces[0]), np.asarray(forces[1])).max(initial=0.0))
    if largest == 0.0:
        return 0.0, 0.0
    return fraction * max(float(np.max(high - low)), 1e-9) / largest, largest


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
    _draw_surfaces(ax, outline, placements, alphas)
    return artists, outline, (low, high)


def _draw_surfaces(ax, outline, placements, alphas):
    """The contact surfaces (after framing: an unbounded ground reaches to the edges of the view): once when all
    are fixed, else at each placement with its opacity."""
    if not outline.surfaces:
        return []
    if all(surface["owner"] < 0 for surface in outline.surfaces):
        return [_SurfaceArtists(ax, outline, placements[-1])]
    return [_SurfaceArtists(ax, outline, placed, alpha) for placed, alpha in zip(placements, alphas, strict=True)]


def _body_legend(ax, model, extra=(), title=None):
    """A legend naming each body in its colour (``body_colors``), then the ``extra`` (handle) entries."""
    from matplotlib.lines import Line2D  # noqa: PLC0415

    handles = [Line2D([], [], color=c, lw=4, label=name) for c, name in zip(body_colors(model.nbodies),
                                                                             model.body_names, strict=True)]
    ax.legend(handles=[*handles, *extra], fontsize=7, title=title, title_fontsize=7)


def draw(model, q, ax=None, outlines=None, color=None, alpha=1.0, label=None):
    """Draw the mechanism at q (module docstring) on ``ax`` (a new figure if None), framed to its extent; returns
    the figure. ``color``: one colour for the whole mechanism; default a colour per body, named in a legend (a
    model of more than 20 bodies, a long chain: one colour). ``outlines``: an ``Outline`` of the model to reuse.
    A spatial model (``Model3D``) is drawn by ``snapshot3d`` (``ax`` must then be a 3D axes)."""
    if isinstance(model, Model3D):
        return snapshot3d(model, q, ax, color=color, alpha=alpha, label=label)
    fig, ax = _axes(ax)
    by_body = color is None and model.nbodies <= LONG_CHAIN
    if color is None and not by_body:
        color = "C0"
    _draw_many(model, [np.asarray(q, dtype=float)], ax, [color], [alpha], [label], outlines)
    if by_body:
        from matplotlib.lines import Line2D  # noqa: PLC0415

        _body_legend(ax, model, [Line2D([], [], color="0.4", lw=4, label=label)] if label else ())
    elif label:
        ax.legend(fontsize=7)
    return fig


def snapshots(model, result, times, ax=None):
    """The mechanism at the samples of ``result`` (t, q) nearest ``times``, framed so that every snapshot fits.

    Up to 20 bodies: each body in its own colour (``body_colors``), named in the legend, time shown by opacity
    (faint early, solid late; the legend gives the times). A long chain (more than 20 bodies) is drawn by its shape,
    one colour per time, from light to dark."""
    from matplotlib.lines import Line2D  # noqa: PLC0415

    fig, ax = _axes(ax)
    index = [int(np.argmin(np.abs(result.t - t))) for t in times]
    count = len(index)
    alphas = [0.25 + 0.75 * (k + 1) / count for k in range(count)]
    stamps = [f"t = {result.t[i]:.3g} s" for i in index]
    if model.nbodies <= LONG_CHAIN:
        _draw_many(model, [result.q[i] for i in index], ax, [None] * count, alphas, [None] * count)
        times_shown = [Line2D([], [], color="0.3", alpha=alpha, lw=4, label=stamp)
                       for alpha, stamp in zip(alphas, stamps, strict=True)]
        _body_legend(ax, model, times_shown)
    else:
        from matplotlib import colormaps  # noqa: PLC0415
        from matplotlib.colors import to_hex  # noqa: PLC0415

        shades = [to_hex(shade) for shade in colormaps["Blues"](np.linspace(0.4, 1.0, count))]
        _draw_many(model, [result.q[i] for i in index], ax, shades, [1.0] * count, stamps)
        ax.legend(fontsize=7, title=f"shape of the {model.nbodies} bodies", title_fontsize=7)
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


def contact_arrows(model, q, normal, tangential, point, ax, fraction=0.15):
    """Arrows of the contact forces on the bodies' shapes at one sample of a contact model drawn at q: the normal
    force along the surface's normal plus the friction force along its tangent, at each touching row's contact
    point; ``normal``, ``tangential`` (nrows,) and ``point`` (nrows, 2) as ``SimulationResult.contact_forces()``
    gives them at that sample. The largest is ``fraction`` of the drawing's size long; the legend gives it. None
    when no row touches."""
    forces = (np.asarray(normal, dtype=float).reshape(-1), np.asarray(tangential, dtype=float).reshape(-1),
              np.asarray(point, dtype=float).reshape(-1, 2))
    outline = Outline(model)
    placed = outline.place(q)
    low, high = outline.extent(placed)
    scale, largest = force_scale(outline, forces, low, high, fraction)
    if largest == 0.0:
        return None
    arrows = _ForceArtists(ax, outline, scale, f"contact forces on the bodies (largest {largest:.4g} N)")
    arrows.move(placed, forces)
    return arrows.lines


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
