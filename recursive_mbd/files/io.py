"""Model files (TOML): a tree or a mechanism from absolute placements, force elements, loops, drivers, the initial
state and the analysis to run.

Format reference. Units: lengths m, angles rad, masses kg, inertias kg m^2, forces N, torques N m, times s. A key
marked *required* must be given; an optional key takes the default shown, and only keys with a physical default
are optional (a point defaults to the frame origin, an angle, offset, phase or damping to zero). A file never
gets a mass, an inertia, a parent, a joint or a run length it did not state: a missing required key is a
``FileFormatError`` naming the file and the entry (``model.toml: body[2].mass: missing; ...``). ``rmbd info FILE``
lists every default the file relied on. Text is UTF-8; any unicode name is allowed::

    [model]            form = "tree" | "mechanism" | "chain" (default "tree"), name (default none),
                       gravity = [gx, gy] (default [0.0, -9.81] m/s^2), cut = ["joint", ...] (mechanism only)
    [chain]            chain form, ``chains.serial_chain``: n (integer >= 1), length, mass: all required
                       (bodies "link1" .. "linkn"); loops and elements may refer to its links
    [[body]]  tree:    parent ("ground" or a body name), joint ("revolute" | "prismatic" | "fixed" | "planar"),
                       mass, inertia (about the centre of mass): required; axis: required for a prismatic joint
                       (unit direction in the parent frame); name (default "body<i>"), parent_point,
                       child_point (default [0, 0], the frame origins), com (default [0, 0]), angle (default 0)
              mechanism: name, mass, inertia, pose = [x, y, angle]: required; com (default [0, 0])
    [[joint]]          mechanism only: kind ("revolute" | "prismatic" | "fixed"), body_a, point_a, body_b, point_b:
                       required; axis: required for prismatic (in body a's frame); name (default "joint<i>")
    [[loop]]           tree and chain forms: kind ("revolute" | "prismatic" | "fixed" | "distance"), body_a,
                       point_a, body_b ("ground" or a body), point_b: required; axis: required for prismatic;
                       length: required for distance; angle (default 0); name
    [[spring_damper]]  body_a, point_a, body_b, point_b, stiffness, rest_length: required; damping (default 0);
                       name
    [[joint_spring_damper]]  tree and chain forms: body, stiffness: required; damping (default 0), rest (default 0,
                       the joint's zero); name
    [[force]]          body, force = [Fx, Fy]: required; point (default [0, 0]), frame ("ground" | "body",
                       default "ground"); name
    [[torque]]         body, torque: required; name
    [[driver]]         body, kind: required; kind = "polynomial": coefficients = [c0, c1, ...] required
                       (q = sum c_k t^k); kind = "harmonic": amplitude, frequency [rad/s] required, offset, phase
                       (default 0): q = offset + amplitude sin(frequency t + phase)
    [[ground]]         a flat contact surface (``Model.add_ground``): name (default "floor"), point (default
                       [0, 0]), normal (default [0, 1]: up), extent = [lo, hi] along the tangent (default
                       unbounded; inf and -inf allowed for one open side), body (default "ground"; a body carries
                       the surface in its frame)
    [[drum]]           a circular contact surface (``Model.add_drum``): name, center, radius: required; body
                       (default "ground")
    [[contact]]        shapes of bodies touching a surface (``Model.add_contact``): body, surface, stiffness:
                       required; body is a name, an array of names (one contact each, the same shape and law) or a
                       range {first = "link1", last = "link20"} (every body from first to last in the order of the
                       file's bodies, or of the chain's links); point (default [0, 0]), radius (default 0), or
                       segment = [[x0, y0], [x1, y1]] with a radius > 0 (a capsule) instead of point; exponent
                       (default 1.5), restitution (default 1), friction (default 0), min_impact_speed (default 1),
                       tangential_stiffness, tangential_damping (default: from the normal law and the body's mass,
                       ``Model.add_contact``); name (a list or range names its contacts <name><k>)
    [[self_contact]]   a set of bodies whose shapes touch each other (``Model.add_self_contact``): bodies, radius,
                       stiffness: required; bodies is an array of two names or more, or a range as a contact's
                       body; point (default [0, 0]) or segment = [[x0, y0], [x1, y1]] (a capsule); exponent (default
                       1.5), restitution (default 1), impact_speed (default 1), friction (default 0),
                       tangential_damping (default: from the normal law and the bodies' masses); name
    [initial]          q (default: zeros for a tree or chain, the placement for a mechanism), qd (default zeros)
    [analysis]         optional as a table (without it the file describes a model only and ``rmbd run`` refuses it);
                       if present, type = "dynamics" | "statics" | "kinematics" | "modes" is required, and:
                       dynamics: t_end required; method (default "dopri5"; one of ``integrate.METHODS`` or
                       "scipy:NAME" with NAME one of scipy's solve_ivp methods); dt required for the fixed-step
                       methods ("rk4", "implicit_midpoint") and refused for the others; rtol, atol (adaptive methods
                       only; defaults those of ``simulate``); samples (default 201: output times; at most
                       10,000,000, ``model_file.MAX_SAMPLES``, here and for kinematics); stabilization
                       ("projection" | "baumgarte" | "none")
                       kinematics: t_end required; samples (default 101)
                       statics: nothing more; modes: count (default 5)

Spatial models (``rm.Model3D``; docs/conventions.md, "Spatial model files") use the same tables with
``dimension = 3`` in ``[model]``; ``load`` then returns a ModelFile whose ``model`` is a Model3D::

    [model]            dimension = 3 (default 2: the planar format above), name (default none),
                       gravity = [gx, gy, gz] (default [0.0, 0.0, -9.81] m/s^2), form = "tree" (the only form)
    [[body]]           parent ("ground" or a body name), joint ("revolute" | "prismatic" | "cylindrical" |
                       "universal" | "spherical" | "planar" | "free" | "fixed"), mass, inertia: required;
                       inertia (about the centre of mass, body axes, kg m^2) is a number s (s times the identity),
                       its 6 entries [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] (tensor entries) or the 3x3 matrix as three rows;
                       axis: required for revolute, prismatic and cylindrical joints ([ax, ay, az] in the joint
                       frame) and for universal joints (two axes [[a1], [a2]]), refused for the others;
                       name (default "body<i>"), parent_point, child_point, com (default [0, 0, 0]), rotation of the
                       joint frame relative to the parent frame (default none: the identity; a unit quaternion
                       [w, x, y, z] or a 3x3 rotation matrix as three rows)
    [[loop]]           closed loops (``Model3D.add_loop``): kind ("spherical" | "revolute" | "distance"), body_a,
                       point_a, body_b, point_b (body names or "ground"; points [x, y, z] in their body's frame):
                       required; axis (revolute: required, in body_a's frame), axis_b (revolute: optional, default
                       axis, in body_b's frame), length (distance: required), name (default "loop<k>"); a key
                       that the kind does not take is refused
    [initial]          q (nq numbers; default ``model.neutral()``: zeros and identity quaternions; a quaternion whose
                       norm is off 1 by more than 1e-6 is refused), v (nv numbers; default zeros): the velocity
                       coordinates of ``Model3D`` (a quaternion joint has 4 coordinates but 3 velocities), so ``qd`` is
                       refused; ``ModelFile.qd0`` (alias ``v0``) holds v
    [[spring_damper]]  body_a, point_a, body_b, point_b ([x, y, z]), stiffness, rest_length: required; damping,
                       preload (tension at the free length [N]) (default 0); name
    [[joint_spring_damper]]  body, stiffness: required; damping (default 0), rest (default the joint's zero; a
                       spherical joint's: the identity): numbers, or one per joint coordinate for cylindrical,
                       universal and planar joints; a spherical joint's rest is a unit quaternion [w, x, y, z]; name
    [[force]]          body, force = [Fx, Fy, Fz]: required; point (default [0, 0, 0]), frame ("ground" | "body",
                       default "ground"); name
    [[torque]]         body, torque = [Tx, Ty, Tz]: required; frame ("ground" | "body", default "ground"); name
    [[driver]]         as above (body, kind: required; the same keys), for revolute and prismatic joints only (the
                       joints ``rm.kinematic_analysis`` and ``rm.simulate`` of a Model3D drive; another joint is
                       refused, naming the entry): q of that joint = the polynomial or harmonic of t
    [[ground]]         as above (``Model3D.add_ground``) with 3-vectors: point (default [0, 0, 0]), normal (default
                       [0, 0, 1]), tangent (default: the x axis projected onto the plane, its y axis for a normal
                       along x), extent = [[lo1, hi1], [lo2, hi2]] along the tangent t1 and along normal x t1
                       (default unbounded; inf and -inf allowed)
    [[drum]]           as above (``Model3D.add_drum``) with a centre [x, y, z] and its axis [ax, ay, az]: required
    [[contact]]        as above (``Model3D.add_contact``), point [x, y, z], segment [[x0, y0, z0], [x1, y1, z1]]
    [[self_contact]]   as above (``Model3D.add_self_contact``), point [x, y, z], segment [[x0, y0, z0], [x1, y1, z1]]
    [analysis]         as above; ``rmbd run`` runs "dynamics" (``rm.simulate`` of the Model3D, its loops, force
                       elements and drivers included: the drivers' forces are reported; drivers and loops together
                       are refused), "statics", "modes" and "kinematics" (``rm.kinematic_analysis`` with the file's
                       drivers) of a spatial model

Spatial files have no [chain] or [[joint]] tables (each is refused, by name).

Robot descriptions: ``load`` also reads a .urdf file (``recursive_mbd.files.urdf``: the root link fixed to the
ground) and a .xml file whose root element is <mujoco> (MJCF, ``recursive_mbd.files.mjcf``) or <robot> (URDF), into
a ModelFile holding a Model3D, its file's initial configuration (``model.imported.q0``), zero velocities, no drivers
and no analysis (``rmbd run --t-end`` supplies a dynamics one).

Errors are ``FileFormatError`` naming the file, the table and entry (``body[3].mass``) and what is expected; a TOML
syntax error keeps the parser's line and column. ``save`` writes any Model in the tree form, every key explicit,
names escaped as TOML basic strings, and ``load`` reads it back unchanged (drivers too, given as ``save(...,
drivers=spec.drivers)``; contacts too: consecutive contacts of consecutive bodies that share their surface, shape
and law and are named <name><k> by a list are written as one range entry, and a self-contact set's consecutive
bodies as a range; normals, tangents and axes are written as the unit vectors the builders stored, which keep a
vector of unit length to round-off as given, so they come back bit for bit).
"""

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .._kernels.spatial import layout as spatial_layout
from ..analysis.mechanism import Mechanism
from ..errors import ModelError, StateError, closest_name, unknown_name
from ..integrate.method_names import FIXED_STEP, METHODS, SCIPY_METHODS, unknown_method
from ..model import chains, joints
from ..model.planar import GROUND, Model
from ..model.spatial import Model3D
from .mjcf import load_mjcf
from .model_file import FileFormatError, ModelFile, too_many_samples
from .urdf import load_urdf

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ANALYSES = ("dynamics", "statics", "kinematics", "modes")
MAX_FIXED_STEPS = 10_000_000  # simulate's default max_steps: a fixed-step analysis asking for more is refused
_REQUIRED = object()


class _Reader:
    def __init__(self, source):
        self.source = source
        self.defaults = []

    def default(self, where, key, value):
        """A key the file left out that has a physical default: recorded (``rmbd info`` shows them)."""
        if value is not None:
            shown = value.tolist() if isinstance(value, np.ndarray) else value
            self.defaults.append(f"{where}.{key} = {shown!r}")
        return value

    def fail(self, where, message):
        raise FileFormatError(f"{self.source}: {where + ': ' if where else ''}{message}")

    def table(self, data, key, where):
        value = data.get(key, {})
        if not isinstance(value, dict):
            self.fail(where, f"expected a table, got {type(value).__name__}")
        return value

    def entries(self, data, key):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.fail(key, "expected an array of tables ([[" + key + "]])")
        return value

    def keys(self, entry, allowed, where):
        unknown = sorted(set(entry) - set(allowed))
        if unknown:
            close = closest_name(unknown[0], allowed)
            hint = f" (did you mean {close!r}?)" if close is not None else ""
            self.fail(where, f"unknown key {unknown[0]!r}{hint}; expected some of {sorted(allowed)}")

    def number(self, entry, key, where, default=_REQUIRED):
        if key not in entry:
            if default is _REQUIRED:
                self.fail(f"{where}.{key}", "missing; expected a number")
            return self.default(where, key, default)
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(f"{where}.{key}", f"expected a finite number, got {value!r}")
        return float(value)

    def string(self, entry, key, where, default=_REQUIRED, choices=None):
        if key not in entry:
            if default is _REQUIRED:
                self.fail(f"{where}.{key}", "missing; expected a string"
                          + (f" (one of {list(choices)})" if choices is not None else ""))
            return self.default(where, key, default)
        value = entry[key]
        if not isinstance(value, str):
            self.fail(f"{where}.{key}", f"expected a string, got {value!r}")
        if choices is not None and value not in choices:
            self.fail(f"{where}.{key}", f"expected one of {list(choices)}, got {value!r}")
        return value

    def vector(self, entry, key, where, size=None, default=_REQUIRED):
        if key not in entry:
            if default is _REQUIRED:
                self.fail(f"{where}.{key}", f"missing; expected an array of {size or 'some'} numbers")
            return self.default(where, key, default)
        value = entry[key]
        if (not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)
                or (size is not None and len(value) != size) or not all(math.isfinite(v) for v in value)):
            self.fail(f"{where}.{key}", f"expected an array of {size or 'finite'} numbers, got {value!r}")
        return np.array(value, dtype=float)

    def call(self, where, function, **kwargs):
        """Run a builder call; its ModelError is reported at ``where``."""
        try:
            return function(**kwargs)
        except (ModelError, TypeError, ValueError) as err:
            self.fail(where, str(err))


def loads(text, source="<string>", *, check=True):
    """A ``ModelFile`` from TOML text (module docstring); ``check`` as ``Model.compile``."""
    reader = _Reader(source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise FileFormatError(f"{source}: TOML syntax error: {err}") from None
    reader.keys(data, ("model", "chain", "body", "joint", "loop", "spring_damper", "joint_spring_damper", "force",
                       "torque", "ground", "drum", "contact", "self_contact", "driver", "initial", "analysis"),
                "top level")
    head = reader.table(data, "model", "model")
    reader.keys(head, ("name", "gravity", "form", "cut", "dimension"), "model")
    dimension = head.get("dimension", 2)
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension not in (2, 3):
        reader.fail("model.dimension", f"expected 2 (planar) or 3 (spatial), got {dimension!r}")
    if dimension == 3:
        return _spatial(reader, data, head)
    form = reader.string(head, "form", "model", "tree", ("tree", "mechanism", "chain"))
    gravity = reader.vector(head, "gravity", "model", 2, np.array([0.0, -9.81]))
    name = reader.string(head, "name", "model", None)
    build = {"tree": _tree, "mechanism": _mechanism, "chain": _chain}[form]
    model, placement_q0 = build(reader, data, gravity, name, head)
    if form != "mechanism":  # (a mechanism's are replayed by its build)
        _surfaces_and_contacts(reader, data, model)
    try:
        model.compile(check=check)
    except ModelError as err:
        reader.fail("model", str(err))
    initial = reader.table(data, "initial", "initial")
    reader.keys(initial, ("q", "qd"), "initial")
    q0 = reader.vector(initial, "q", "initial", model.nq, None)
    if q0 is None:
        q0 = placement_q0 if placement_q0 is not None else np.zeros(model.nq)
        reader.defaults.append("initial.q = the placement" if placement_q0 is not None else
                               f"initial.q = zeros ({model.nq})")
    qd0 = reader.vector(initial, "qd", "initial", model.nq, None)
    if qd0 is None:
        qd0 = np.zeros(model.nq)
        reader.defaults.append(f"initial.qd = zeros ({model.nq})")
    drivers = _drivers(reader, data, lambda body: body in model.body_names, model.body_names)
    analysis = _analysis(reader, data)
    return ModelFile(model, q0, qd0, drivers, analysis, source, reader.defaults)


def load(path, *, check=True):
    """A ``ModelFile`` from a TOML file, or from a KINE2D deck (``recursive_mbd.files.deck``: a .deck file, or text
    whose first command is TITL), or from a robot description: a .urdf file (``load_urdf``: the root link fixed) or
    a .xml file whose root element is <mujoco> (MJCF, ``load_mjcf``) or <robot> (URDF). A robot description states
    no analysis; its initial state is ``model.imported.q0`` (neutral for URDF, MuJoCo's qpos0 for MJCF) at rest.
    ``check=False`` skips the dynamics check of ``Model.compile`` (faster; for describing a file)."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a FIFO would block the read, a directory fails obscurely
        raise FileFormatError(f"{path}: not a regular file")
    if path.suffix.lower() in (".urdf", ".xml"):
        return _robot_description(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise FileFormatError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError:
        raise FileFormatError(f"{path}: not a UTF-8 text file") from None
    first = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("*")), "")
    if path.suffix.lower() == ".deck" or first.upper().startswith("TITL"):
        from .deck import loads_deck  # noqa: PLC0415  (the deck reader builds on this module)

        return loads_deck(text, str(path))
    return loads(text, str(path), check=check)


def _robot_description(path):
    """The ModelFile of a URDF or MJCF file (``load``): the model, its file's initial configuration, at rest."""
    kind = "robot" if path.suffix.lower() == ".urdf" else _root_tag(path)
    if kind not in ("robot", "mujoco", None):
        raise FileFormatError(f"{path}: the root element is <{kind}>: neither a URDF (<robot>) nor an MJCF "
                              "(<mujoco>) file")
    model = load_urdf(path) if kind == "robot" else load_mjcf(path)  # None: the reader says what is wrong
    described = "neutral: zeros, identity quaternions" if kind == "robot" else "the file's qpos0"
    return ModelFile(model, model.imported.q0.copy(), np.zeros(model.nv), {}, {}, str(path),
                     [f"initial.q = {described}", f"initial.v = zeros ({model.nv})"])


def _root_tag(path):
    """The tag of an XML file's root element, read up to its start only; None if the file cannot be parsed."""
    try:
        for _, element in ET.iterparse(path, events=("start",)):
            return element.tag
    except (ET.ParseError, OSError):
        return None
    return None


_ELEMENT_KEYS = {
    "spring_damper": ("body_a", "point_a", "body_b", "point_b", "stiffness", "damping", "rest_length", "name"),
    "force": ("body", "point", "force", "frame", "name"),
    "torque": ("body", "torque", "name"),
    "joint_spring_damper": ("body", "stiffness", "damping", "rest", "name"),
}


def _element_entries(reader, data, element_keys, refused=None):
    """(kind, where, entry, name) of every force-element table, in file order by kind, its keys checked; a kind in
    ``refused`` (kind: why) is refused with that reason when the file has one."""
    for kind, keys in element_keys.items():
        entries = reader.entries(data, kind)
        if entries and refused and kind in refused:
            reader.fail(f"{kind}[0]", refused[kind])
        for i, entry in enumerate(entries):
            where = f"{kind}[{i}]"
            reader.keys(entry, keys, where)
            yield kind, where, entry, reader.string(entry, "name", where, None)


def _spring_damper(reader, entry, where, dimension):
    """The arguments of ``add_spring_damper`` from a [[spring_damper]] table (points of ``dimension`` numbers), in
    the order they are read and checked."""
    return {"body_a": reader.string(entry, "body_a", where),
            "point_a": reader.vector(entry, "point_a", where, dimension),
            "body_b": reader.string(entry, "body_b", where),
            "point_b": reader.vector(entry, "point_b", where, dimension),
            "stiffness": reader.number(entry, "stiffness", where),
            "damping": reader.number(entry, "damping", where, 0.0),
            "rest_length": reader.number(entry, "rest_length", where)}


def _elements(reader, data, target, allow_joint_springs):
    refused = None if allow_joint_springs else {
        "joint_spring_damper": "joint spring-dampers belong to the tree form (model.form = 'tree')"}
    for kind, where, entry, name in _element_entries(reader, data, _ELEMENT_KEYS, refused):
        if kind == "spring_damper":
            reader.call(where, target.add_spring_damper, **_spring_damper(reader, entry, where, 2), name=name)
        elif kind == "force":
            reader.call(where, target.add_force, body=reader.string(entry, "body", where),
                        point=reader.vector(entry, "point", where, 2, np.zeros(2)),
                        force=reader.vector(entry, "force", where, 2),
                        frame=reader.string(entry, "frame", where, "ground", ("ground", "body")), name=name)
        elif kind == "torque":
            reader.call(where, target.add_torque, body=reader.string(entry, "body", where),
                        torque=reader.number(entry, "torque", where), name=name)
        else:
            reader.call(where, target.add_joint_spring_damper, body=reader.string(entry, "body", where),
                        stiffness=reader.number(entry, "stiffness", where),
                        damping=reader.number(entry, "damping", where, 0.0),
                        rest=reader.number(entry, "rest", where, 0.0), name=name)


def _chain(reader, data, gravity, name, head):
    table = reader.table(data, "chain", "chain")
    reader.keys(table, ("n", "length", "mass"), "chain")
    n = table.get("n")
    if n is None:
        reader.fail("chain.n", "missing; expected the number of links (an integer >= 1)")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        reader.fail("chain.n", f"expected an integer >= 1, got {n!r}")
    if gravity[0] != 0.0 or not gravity[1] <= 0.0:
        reader.fail("model.gravity", "a chain hangs in gravity along -y: expected [0, -g]")
    if reader.entries(data, "body") or reader.entries(data, "joint"):
        reader.fail("body", "the chain form builds its bodies from [chain]; use the tree form to list bodies")
    model = reader.call("chain", chains.serial_chain, n=n, length=reader.number(table, "length", "chain"),
                        mass=reader.number(table, "mass", "chain"), gravity=-gravity[1])
    if name:
        model.name = name
    _loops(reader, data, model)
    _elements(reader, data, model, allow_joint_springs=True)
    return model, None


def _loops(reader, data, model):
    for i, entry in enumerate(reader.entries(data, "loop")):
        where = f"loop[{i}]"
        reader.keys(entry, ("kind", "body_a", "point_a", "body_b", "point_b", "axis", "angle", "length", "name"),
                    where)
        kind = reader.string(entry, "kind", where, choices=("revolute", "prismatic", "fixed", "distance"))
        reader.call(where, model.add_loop, kind=kind,
                    body_a=reader.string(entry, "body_a", where), point_a=reader.vector(entry, "point_a", where, 2),
                    body_b=reader.string(entry, "body_b", where), point_b=reader.vector(entry, "point_b", where, 2),
                    axis=reader.vector(entry, "axis", where, 2, _REQUIRED if kind == "prismatic" else None),
                    angle=reader.number(entry, "angle", where, 0.0) if kind != "distance" else 0.0,
                    length=reader.number(entry, "length", where, _REQUIRED if kind == "distance" else None),
                    name=reader.string(entry, "name", where, None))


def _body_entries(reader, data, orientation, joint_types):
    """(where, entry, joint) of every [[body]] table (ModelFileError if none), in file order, its keys checked (the
    joint frame's ``orientation``: "angle" in the plane, "rotation" in space) and its joint type (one of
    ``joint_types``) read."""
    bodies = reader.entries(data, "body")
    if not bodies:
        reader.fail("body", "the model has no bodies ([[body]] tables)")
    keys = ("name", "parent", "joint", "parent_point", "child_point", "mass", "inertia", "com", orientation, "axis")
    for i, entry in enumerate(bodies):
        where = f"body[{i}]"
        reader.keys(entry, keys, where)
        yield where, entry, reader.string(entry, "joint", where, choices=joint_types)


def _tree(reader, data, gravity, name, head):
    if reader.entries(data, "joint"):
        reader.fail("joint[0]", "[[joint]] tables belong to the mechanism form (model.form = 'mechanism'); a tree "
                    "gives each body its parent and joint")
    model = Model(gravity=gravity, name=name)
    for where, entry, joint in _body_entries(reader, data, "angle", tuple(joints.JOINT_CODES)):
        reader.call(where, model.add_body, parent=reader.string(entry, "parent", where), joint=joint,
                    parent_point=reader.vector(entry, "parent_point", where, 2, np.zeros(2)),
                    child_point=reader.vector(entry, "child_point", where, 2, np.zeros(2)),
                    mass=reader.number(entry, "mass", where), inertia=reader.number(entry, "inertia", where),
                    com=reader.vector(entry, "com", where, 2, np.zeros(2)),
                    angle=reader.number(entry, "angle", where, 0.0),
                    axis=reader.vector(entry, "axis", where, 2, _REQUIRED if joint == "prismatic" else None),
                    name=reader.string(entry, "name", where, None))
    _loops(reader, data, model)
    if "cut" in head:
        reader.fail("model.cut", "cut names mechanism joints (model.form = 'mechanism'); a tree lists its [[loop]]s")
    _elements(reader, data, model, allow_joint_springs=True)
    return model, None


def _mechanism(reader, data, gravity, name, head):
    if reader.entries(data, "loop"):
        reader.fail("loop[0]", "[[loop]] tables belong to the tree form; a mechanism closes loops by its joints")
    mech = Mechanism(gravity=gravity, name=name)
    bodies = reader.entries(data, "body")
    if not bodies:
        reader.fail("body", "the mechanism has no bodies ([[body]] tables)")
    for i, entry in enumerate(bodies):
        where = f"body[{i}]"
        reader.keys(entry, ("name", "mass", "inertia", "pose", "com"), where)
        reader.call(where, mech.add_body, name=reader.string(entry, "name", where),
                    mass=reader.number(entry, "mass", where), inertia=reader.number(entry, "inertia", where),
                    pose=reader.vector(entry, "pose", where, 3), com=reader.vector(entry, "com", where, 2, np.zeros(2)))
    for i, entry in enumerate(reader.entries(data, "joint")):
        where = f"joint[{i}]"
        reader.keys(entry, ("name", "kind", "body_a", "point_a", "body_b", "point_b", "axis"), where)
        kind = reader.string(entry, "kind", where, choices=("revolute", "prismatic", "fixed"))
        reader.call(where, mech.add_joint, kind=kind,
                    body_a=reader.string(entry, "body_a", where), point_a=reader.vector(entry, "point_a", where, 2),
                    body_b=reader.string(entry, "body_b", where), point_b=reader.vector(entry, "point_b", where, 2),
                    axis=reader.vector(entry, "axis", where, 2, _REQUIRED if kind == "prismatic" else None),
                    name=reader.string(entry, "name", where, None))
    _elements(reader, data, mech, allow_joint_springs=False)
    _surfaces_and_contacts(reader, data, _MechanismContacts(mech))
    cut = head.get("cut", [])
    if not isinstance(cut, list) or not all(isinstance(c, str) for c in cut):
        reader.fail("model.cut", f"expected an array of joint names, got {cut!r}")
    try:
        model, q0, _ = mech.build(cut=cut)
    except ModelError as err:  # names the joint (its [[joint]] name) and the gap
        reader.fail(None, str(err))
    return model, q0


_SURFACE_KEYS = {"ground": ("name", "point", "normal", "extent", "body"), "drum": ("name", "center", "radius", "body")}
_SPATIAL_SURFACE_KEYS = {"ground": (*_SURFACE_KEYS["ground"], "tangent"), "drum": (*_SURFACE_KEYS["drum"], "axis")}
_CONTACT_KEYS = ("body", "surface", "point", "radius", "segment", "stiffness", "exponent", "restitution", "friction",
                 "tangential_stiffness", "tangential_damping", "min_impact_speed", "name")
_CONTACT_LAW = (("exponent", 1.5), ("restitution", 1.0), ("friction", 0.0), ("min_impact_speed", 1.0))
_SELF_CONTACT_KEYS = ("bodies", "point", "radius", "segment", "stiffness", "exponent", "restitution", "impact_speed",
                      "friction", "tangential_damping", "name")
_SELF_CONTACT_LAW = (("exponent", 1.5), ("restitution", 1.0), ("impact_speed", 1.0), ("friction", 0.0))


class _MechanismContacts:
    """The contact builders of a Mechanism's model: each call is checked at once on a model of the mechanism's
    bodies (each free, in the order of the file), so that a bad entry is reported by the entry, and recorded for
    ``Mechanism.build`` to replay on the model it builds (bodies by name, points in the same body frames)."""

    def __init__(self, mech):
        self.mech = mech
        self.scratch = Model(gravity=mech.gravity)
        for body_name, body in mech.bodies.items():
            self.scratch.add_body("ground", "planar", mass=body["mass"], inertia=body["inertia"], com=body["com"],
                                  name=body_name)
        self.body_names = self.scratch.body_names

    def _checked_and_recorded(self, method, kwargs):
        getattr(self.scratch, method)(**kwargs)
        self.mech.elements.append((method, kwargs))

    def add_ground(self, **kwargs):
        self._checked_and_recorded("add_ground", kwargs)

    def add_drum(self, **kwargs):
        self._checked_and_recorded("add_drum", kwargs)

    def add_contact(self, **kwargs):
        self._checked_and_recorded("add_contact", kwargs)

    def add_self_contact(self, **kwargs):
        self._checked_and_recorded("add_self_contact", kwargs)


def _surfaces_and_contacts(reader, data, model, dim=2):
    """The [[ground]], [[drum]], [[contact]] and [[self_contact]] tables (module docstring), added to ``model`` (a
    Model, a ``_MechanismContacts`` or, with ``dim`` 3, a Model3D: points and vectors of ``dim`` numbers) in file
    order: the surfaces first, then the contacts, then the self-contact sets."""
    spatial = dim == 3
    for kind, keys in (_SPATIAL_SURFACE_KEYS if spatial else _SURFACE_KEYS).items():
        for i, entry in enumerate(reader.entries(data, kind)):
            where = f"{kind}[{i}]"
            reader.keys(entry, keys, where)
            body = reader.string(entry, "body", where, "ground")
            if kind == "ground":
                extra = {"tangent": reader.vector(entry, "tangent", where, 3, None)} if spatial else {}
                reader.call(where, model.add_ground, name=reader.string(entry, "name", where, "floor"),
                            point=reader.vector(entry, "point", where, dim, np.zeros(dim)),
                            normal=reader.vector(entry, "normal", where, dim, np.eye(dim)[-1]),
                            extent=_extent(reader, entry, where, spatial), body=body, **extra)
            else:
                extra = {"axis": reader.vector(entry, "axis", where, 3)} if spatial else {}
                reader.call(where, model.add_drum, name=reader.string(entry, "name", where),
                            center=reader.vector(entry, "center", where, dim),
                            radius=reader.number(entry, "radius", where), body=body, **extra)
    for i, entry in enumerate(reader.entries(data, "contact")):
        where = f"contact[{i}]"
        reader.keys(entry, _CONTACT_KEYS, where)
        bodies = _contact_bodies(reader, entry, where, model.body_names)
        segment = _rows(reader, entry, "segment", where, 2, dim, None)
        if segment is not None and "point" in entry:
            reader.fail(f"{where}.point", "a capsule (segment) has no point; give point or segment")
        law = {key: reader.number(entry, key, where, default) for key, default in _CONTACT_LAW}
        for key in ("tangential_stiffness", "tangential_damping"):
            law[key] = reader.number(entry, key, where, None)
            if law[key] is None:
                reader.defaults.append(f"{where}.{key} = from the normal law")
        reader.call(where, model.add_contact, body=bodies, surface=reader.string(entry, "surface", where),
                    point=np.zeros(dim) if segment is not None else reader.vector(entry, "point", where, dim,
                                                                                  np.zeros(dim)),
                    radius=reader.number(entry, "radius", where, 0.0), segment=segment,
                    stiffness=reader.number(entry, "stiffness", where), name=reader.string(entry, "name", where, None),
                    **law)
    for i, entry in enumerate(reader.entries(data, "self_contact")):
        where = f"self_contact[{i}]"
        reader.keys(entry, _SELF_CONTACT_KEYS, where)
        bodies = _contact_bodies(reader, entry, where, model.body_names, "bodies")
        segment = _rows(reader, entry, "segment", where, 2, dim, None)
        if segment is not None and "point" in entry:
            reader.fail(f"{where}.point", "a capsule (segment) has no point; give point or segment")
        law = {key: reader.number(entry, key, where, default) for key, default in _SELF_CONTACT_LAW}
        law["tangential_damping"] = reader.number(entry, "tangential_damping", where, None)
        if law["tangential_damping"] is None:
            reader.defaults.append(f"{where}.tangential_damping = from the normal law")
        reader.call(where, model.add_self_contact, bodies=bodies, segment=segment,
                    point=np.zeros(dim) if segment is not None else reader.vector(entry, "point", where, dim,
                                                                                  np.zeros(dim)),
                    radius=reader.number(entry, "radius", where), stiffness=reader.number(entry, "stiffness", where),
                    name=reader.string(entry, "name", where, None), **law)


def _extent(reader, entry, where, spatial=False):
    """A ground's extent: [lo, hi] (a planar one), [[lo1, hi1], [lo2, hi2]] (a spatial one, along its tangents t1
    and t2); infinite bounds allowed (a table open on one side); None if absent."""
    if "extent" not in entry:
        reader.defaults.append(f"{where}.extent = unbounded")
        return None
    value = entry["extent"]

    def interval(pair):
        return (isinstance(pair, list) and len(pair) == 2
                and all(not isinstance(v, bool) and isinstance(v, (int, float)) and not math.isnan(v) for v in pair))

    if not (isinstance(value, list) and len(value) == 2 and all(map(interval, value)) if spatial
            else interval(value)):
        shape = "[[lo1, hi1], [lo2, hi2]] of two pairs of numbers" if spatial else "[lo, hi] of 2 numbers"
        reader.fail(f"{where}.extent", f"expected an array {shape} (inf allowed), got {value!r}")
    return value


def _contact_bodies(reader, entry, where, names, key="body"):
    """A [[contact]]'s body (a [[self_contact]]'s bodies: ``key``): a name, an array of names, or a range {first,
    last} of the bodies in their order."""
    value = entry.get(key)
    where = f"{where}.{key}"
    if value is None:
        reader.fail(where, 'missing; expected a body name, an array of names or a range {first = "...", '
                    'last = "..."}')
    if isinstance(value, str):
        value = [value]
    if isinstance(value, dict):
        reader.keys(value, ("first", "last"), where)
        ends = []
        for end_key in ("first", "last"):
            end = reader.string(value, end_key, where)
            if end not in names:
                reader.fail(f"{where}.{end_key}", unknown_name("body", end, names, "bodies"))
            ends.append(names.index(end))
        if ends[1] < ends[0]:
            reader.fail(where, f"the range runs backwards: {value['first']!r} comes after "
                        f"{value['last']!r} in the bodies' order")
        return list(names[ends[0]:ends[1] + 1])
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        reader.fail(where, f"expected a body name, an array of names or a range {{first, last}}, got "
                    f"{value!r:.80}")
    for name in value:
        if name not in names:
            reader.fail(where, unknown_name("body", name, names, "bodies"))
    return value


SPATIAL_JOINTS = tuple(spatial_layout.JOINT_CODES)
_SPATIAL_AXIS = {"revolute": 1, "prismatic": 1, "cylindrical": 1, "universal": 2}  # joints with axes: how many
_PLANAR_ONLY = {"chain": "the chain form", "joint": "[[joint]] tables (the mechanism form)"}
_SPATIAL_ELEMENT_KEYS = {
    "spring_damper": ("body_a", "point_a", "body_b", "point_b", "stiffness", "damping", "rest_length", "preload",
                      "name"),
    "joint_spring_damper": ("body", "stiffness", "damping", "rest", "name"),
    "force": ("body", "point", "force", "frame", "name"),
    "torque": ("body", "torque", "frame", "name"),
}
QUATERNION_TOLERANCE = 1e-6  # |norm - 1| of an initial quaternion beyond which a file is refused (as rm.spatial)


def _rows(reader, entry, key, where, rows, columns, default=_REQUIRED):
    """A rows x columns matrix given as an array of ``rows`` arrays of ``columns`` finite numbers."""
    if key not in entry:
        if default is _REQUIRED:
            reader.fail(f"{where}.{key}", f"missing; expected {rows} arrays of {columns} numbers")
        return reader.default(where, key, default)
    value = entry[key]
    if not (isinstance(value, list) and len(value) == rows and all(isinstance(row, list) for row in value)):
        reader.fail(f"{where}.{key}", f"expected {rows} arrays of {columns} numbers, got {value!r}")
    return np.array([reader.vector({key: row}, key, where, columns) for row in value])


def _spatial_inertia(reader, entry, where):
    """A body's inertia entry: a number, its 6 entries or the 3x3 matrix (module docstring)."""
    value = entry.get("inertia")
    if value is None:
        reader.fail(f"{where}.inertia", "missing; expected a number, 6 entries [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or "
                    "3 rows of 3 numbers")
    if isinstance(value, list) and value and isinstance(value[0], list):
        return _rows(reader, entry, "inertia", where, 3, 3)
    if isinstance(value, list):
        return reader.vector(entry, "inertia", where, 6)
    return reader.number(entry, "inertia", where)


def _spatial_rotation(reader, entry, where):
    """The joint frame's rotation: none (identity), a quaternion [w, x, y, z] or 3 rows of a rotation matrix."""
    value = entry.get("rotation")
    if value is None:
        reader.defaults.append(f"{where}.rotation = identity")
        return None
    if isinstance(value, list) and value and isinstance(value[0], list):
        return _rows(reader, entry, "rotation", where, 3, 3)
    return reader.vector(entry, "rotation", where, 4)


def _spatial(reader, data, head):
    """A ModelFile holding a Model3D (the spatial part of the module docstring)."""
    for key, what in _PLANAR_ONLY.items():
        if key in data:
            where = key if key == "chain" else f"{key}[0]"
            reader.fail(where, f"spatial models (model.dimension = 3) have no {what} yet")
    if "cut" in head:
        reader.fail("model.cut", "cut names mechanism joints; spatial models have no mechanism form")
    reader.string(head, "form", "model", "tree", ("tree",))
    gravity = reader.vector(head, "gravity", "model", 3, np.array([0.0, 0.0, -9.81]))
    name = reader.string(head, "name", "model", None)
    model = reader.call("model", Model3D, gravity=gravity, name=name)
    for where, entry, joint in _body_entries(reader, data, "rotation", SPATIAL_JOINTS):
        axes = _SPATIAL_AXIS.get(joint, 0)
        if axes == 0 and "axis" in entry:
            reader.fail(f"{where}.axis", f"a {joint} joint has no axis" + (" (its plane is the joint frame's xy "
                        "plane: set it with rotation)" if joint == "planar" else ""))
        axis = reader.vector(entry, "axis", where, 3) if axes == 1 else (
            _rows(reader, entry, "axis", where, 2, 3) if axes == 2 else None)
        reader.call(where, model.add_body, parent=reader.string(entry, "parent", where), joint=joint,
                    parent_point=reader.vector(entry, "parent_point", where, 3, np.zeros(3)),
                    child_point=reader.vector(entry, "child_point", where, 3, np.zeros(3)),
                    mass=reader.number(entry, "mass", where), inertia=_spatial_inertia(reader, entry, where),
                    com=reader.vector(entry, "com", where, 3, np.zeros(3)),
                    rotation=_spatial_rotation(reader, entry, where), axis=axis,
                    name=reader.string(entry, "name", where, None))
    _spatial_elements(reader, data, model)
    _spatial_loops(reader, data, model)
    _surfaces_and_contacts(reader, data, model, dim=3)
    reader.call("model", model.compile)
    initial = reader.table(data, "initial", "initial")
    if "qd" in initial:
        reader.fail("initial.qd", f"a spatial model's velocities are v ({model.nv} numbers: a quaternion joint has "
                    "3 velocities for its 4 coordinates); write v = [...]")
    reader.keys(initial, ("q", "v"), "initial")
    q0 = reader.vector(initial, "q", "initial", model.nq, None)
    if q0 is None:
        q0 = model.neutral()
        reader.defaults.append(f"initial.q = neutral ({model.nq}: zeros, identity quaternions)")
    else:
        _check_quaternions(reader, model, q0)
    v0 = reader.vector(initial, "v", "initial", model.nv, None)
    if v0 is None:
        v0 = np.zeros(model.nv)
        reader.defaults.append(f"initial.v = zeros ({model.nv})")
    drivers = _drivers(reader, data, lambda body: _spatial_body(model, body) is not None, model.body_names,
                       lambda body: _spatial_driven(model, body))
    analysis = _analysis(reader, data)
    return ModelFile(model, q0, v0, drivers, analysis, reader.source, reader.defaults)


def _spatial_body(model, name):
    """The index of the body ``name`` of a Model3D, or None."""
    try:
        return model.body_index(name)
    except (ModelError, TypeError, IndexError):
        return None


def _spatial_driven(model, name):
    """Why the joint of body ``name`` cannot be driven (a driver prescribes one revolute or prismatic joint
    coordinate, as ``rm.kinematic_analysis`` of a Model3D), or None."""
    joint = model.joint_types[_spatial_body(model, name)]
    if joint in ("revolute", "prismatic"):
        return None
    return (f"body {name!r} has a {joint} joint; a driver of a spatial model prescribes a revolute or prismatic "
            "joint's coordinate")


def _numbers(reader, entry, key, where, default=_REQUIRED):
    """A number, or an array of numbers (a joint spring-damper's per-coordinate values)."""
    if isinstance(entry.get(key), list):
        return reader.vector(entry, key, where)
    return reader.number(entry, key, where, default)


def _spatial_elements(reader, data, model):
    """The force elements of a spatial file (module docstring), added to ``model`` in file order by kind."""
    for kind, where, entry, name in _element_entries(reader, data, _SPATIAL_ELEMENT_KEYS):
        if kind == "spring_damper":
            reader.call(where, model.add_spring_damper, **_spring_damper(reader, entry, where, 3),
                        preload=reader.number(entry, "preload", where, 0.0), name=name)
        elif kind == "joint_spring_damper":
            rest = _numbers(reader, entry, "rest", where, None)
            if rest is None:
                reader.defaults.append(f"{where}.rest = the joint's zero")
            reader.call(where, model.add_joint_spring_damper, body=reader.string(entry, "body", where),
                        stiffness=_numbers(reader, entry, "stiffness", where),
                        damping=_numbers(reader, entry, "damping", where, 0.0), rest=rest, name=name)
        else:
            frame = reader.string(entry, "frame", where, "ground", ("ground", "body"))
            if kind == "force":
                reader.call(where, model.add_force, body=reader.string(entry, "body", where),
                            point=reader.vector(entry, "point", where, 3, np.zeros(3)),
                            force=reader.vector(entry, "force", where, 3), frame=frame, name=name)
            else:
                reader.call(where, model.add_torque, body=reader.string(entry, "body", where),
                            torque=reader.vector(entry, "torque", where, 3), frame=frame, name=name)


def _spatial_loops(reader, data, model):
    """The [[loop]] tables of a spatial file (``Model3D.add_loop``; module docstring)."""
    for i, entry in enumerate(reader.entries(data, "loop")):
        where = f"loop[{i}]"
        reader.keys(entry, ("kind", "body_a", "point_a", "body_b", "point_b", "axis", "axis_b", "length", "name"),
                    where)
        kind = reader.string(entry, "kind", where, choices=tuple(spatial_layout.LOOP_CODES))
        for key, needed in (("axis", kind == "revolute"), ("axis_b", kind == "revolute"),
                            ("length", kind == "distance")):
            if key in entry and not needed:
                reader.fail(f"{where}.{key}", f"a {kind} loop has no {key}")
        reader.call(where, model.add_loop, kind=kind,
                    body_a=reader.string(entry, "body_a", where), point_a=reader.vector(entry, "point_a", where, 3),
                    body_b=reader.string(entry, "body_b", where), point_b=reader.vector(entry, "point_b", where, 3),
                    axis=reader.vector(entry, "axis", where, 3, _REQUIRED if kind == "revolute" else None),
                    axis_b=reader.vector(entry, "axis_b", where, 3, None),
                    length=reader.number(entry, "length", where, _REQUIRED if kind == "distance" else None),
                    name=reader.string(entry, "name", where, None))


def _check_quaternions(reader, model, q0):
    """Refuse an initial q whose spherical or free joint quaternion is not unit to QUATERNION_TOLERANCE."""
    for body, joint in enumerate(model.joint_types):
        if joint not in ("spherical", "free"):
            continue
        span = model.q_slice(body)
        start = span.start + (3 if joint == "free" else 0)
        norm = float(np.linalg.norm(q0[start:start + 4]))
        if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
            reader.fail(f"initial.q[{start}:{start + 4}]", f"the quaternion (w, x, y, z) of body "
                        f"{model.names[body]!r} ({joint} joint) has norm {norm:.6g}; expected a unit quaternion "
                        f"(to {QUATERNION_TOLERANCE:g})")


class DriverMotion(tuple):
    """A driver read from a file: the triple (f, f', f'') of callables of t [s] that ``rm.kinematic_analysis``
    takes, with ``table``, the [[driver]] entry it came from (body, kind and its keys), which ``dumps`` writes back."""

    def __new__(cls, functions, table):
        motion = super().__new__(cls, functions)
        motion.table = dict(table)
        return motion


_DRIVER_KEYS = {"polynomial": ("body", "kind", "coefficients"),
                "harmonic": ("body", "kind", "offset", "amplitude", "frequency", "phase")}


def _drivers(reader, data, known, names, joint_of=None):
    """The [[driver]] tables: body name -> ``DriverMotion``. ``known(name)``: whether the model has that body
    (``names``: the model's body names, for the message);
    ``joint_of(name)``, if given: the message refusing that body's joint as driven, or None (spatial models drive
    revolute and prismatic joints only)."""
    drivers = {}
    for i, entry in enumerate(reader.entries(data, "driver")):
        where = f"driver[{i}]"
        kind = reader.string(entry, "kind", where, choices=tuple(_DRIVER_KEYS))
        body = reader.string(entry, "body", where)
        if not known(body):
            reader.fail(f"{where}.body", unknown_name("body", body, names, "bodies"))
        if body in drivers:
            reader.fail(f"{where}.body", f"body {body!r} has a driver already")
        refusal = joint_of(body) if joint_of is not None else None
        if refusal:
            reader.fail(f"{where}.body", refusal)
        reader.keys(entry, _DRIVER_KEYS[kind], where)
        if kind == "polynomial":
            coefficients = reader.vector(entry, "coefficients", where)
            if coefficients.size == 0:
                reader.fail(f"{where}.coefficients", "expected at least one coefficient")
            poly = np.polynomial.Polynomial(coefficients)
            table = {"body": body, "kind": kind, "coefficients": coefficients.tolist()}
            drivers[body] = DriverMotion((poly, poly.deriv(1), poly.deriv(2)), table)
        else:
            c, a, w, p = (reader.number(entry, key, where, default) for key, default in
                          (("offset", 0.0), ("amplitude", _REQUIRED), ("frequency", _REQUIRED), ("phase", 0.0)))
            table = {"body": body, "kind": kind, "offset": c, "amplitude": a, "frequency": w, "phase": p}
            drivers[body] = DriverMotion((lambda t, c=c, a=a, w=w, p=p: c + a * math.sin(w * t + p),
                                          lambda t, a=a, w=w, p=p: a * w * math.cos(w * t + p),
                                          lambda t, a=a, w=w, p=p: -a * w * w * math.sin(w * t + p)), table)
    return drivers


_ANALYSIS_KEYS = {
    "dynamics": ("type", "t_end", "method", "rtol", "atol", "dt", "samples", "stabilization"),
    "kinematics": ("type", "t_end", "samples"),
    "statics": ("type",),
    "modes": ("type", "count"),
}
_DEFAULT_SAMPLES = {"dynamics": 201, "kinematics": 101}


def _analysis(reader, data):
    """The [analysis] table, every option checked here (so ``rmbd run`` fails before computing, naming the entry);
    the defaults of the format reference filled in. No table: {} (a model-only file)."""
    if "analysis" not in data:
        return {}
    table = reader.table(data, "analysis", "analysis")
    kind = reader.string(table, "type", "analysis", choices=ANALYSES)
    reader.keys(table, _ANALYSIS_KEYS[kind], "analysis")
    out = {"type": kind}
    for key in ("t_end", "rtol", "atol", "dt"):
        if key in table:
            out[key] = reader.number(table, key, "analysis")
            if not out[key] > 0:
                reader.fail(f"analysis.{key}", f"expected a number > 0, got {table[key]!r}")
    for key in ("samples", "count"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                reader.fail(f"analysis.{key}", f"expected an integer >= 1, got {value!r}")
            out[key] = value
    if "samples" in out and too_many_samples(out["samples"]):
        reader.fail("analysis.samples", f"{too_many_samples(out['samples'])}: ask for fewer")
    if kind in ("dynamics", "kinematics") and "t_end" not in out:
        reader.fail("analysis.t_end", f"missing; a {kind} analysis needs its end time [s] (a number > 0)")
    if kind in _DEFAULT_SAMPLES and "samples" not in out:
        out["samples"] = reader.default("analysis", "samples", _DEFAULT_SAMPLES[kind])
    if kind == "modes" and "count" not in out:
        out["count"] = reader.default("analysis", "count", 5)
    if kind != "dynamics":
        return out
    method = reader.string(table, "method", "analysis", "dopri5")
    scipy_name = method[6:] if method.startswith("scipy:") else None
    if (method not in METHODS) if scipy_name is None else (scipy_name not in SCIPY_METHODS):
        reader.fail("analysis.method", unknown_method(method))
    out["method"] = method
    if method in FIXED_STEP:
        if "dt" not in out:
            reader.fail("analysis.dt", f"missing; method {method!r} takes fixed steps: give the step dt [s]")
        for key in ("rtol", "atol"):
            if key in out:
                reader.fail(f"analysis.{key}", f"method {method!r} takes fixed steps dt; {key} applies to the "
                            "adaptive methods")
        if out["dt"] > out["t_end"]:
            reader.fail("analysis.dt", f"the step {out['dt']:g} s is longer than t_end = {out['t_end']:g} s")
        if out["t_end"] / out["dt"] > MAX_FIXED_STEPS:
            reader.fail("analysis.dt", f"t_end / dt = {out['t_end'] / out['dt']:.3g} steps, more than "
                        f"{MAX_FIXED_STEPS:,}: take a longer step")
    elif "dt" in out:
        reader.fail("analysis.dt", f"method {method!r} chooses its own steps (from rtol and atol); dt is for the "
                    f"fixed-step methods {list(FIXED_STEP)}")
    if "stabilization" in table:
        out["stabilization"] = reader.string(table, "stabilization", "analysis", None,
                                             ("projection", "baumgarte", "none"))
        if out["stabilization"] == "projection" and scipy_name is not None:
            reader.fail("analysis.stabilization", f"projection runs inside the numba integrators, not {method!r}: "
                        "use 'baumgarte' or 'none'")
    return out


# ---- writing -------------------------------------------------------------------------------------------------------

_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(text):
    """``text`` as a TOML basic string: quote, backslash and control characters escaped, any other unicode
    (an emoji included) kept as it is. (JSON's escapes are not TOML's: JSON writes an emoji as a surrogate pair
    that TOML refuses.) A lone surrogate cannot be written as UTF-8: FileFormatError."""
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        raise FileFormatError(f"name {text!r}: holds a lone surrogate, which no UTF-8 file can store")
    out = []
    for c in text:
        if c in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _value(value):
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_value(v) for v in np.asarray(value).tolist()) + "]"
    return repr(float(value))


def _table(name, items):
    lines = [f"[[{name}]]"]
    lines += [f"{key} = {_value(value)}" for key, value in items if value is not None]
    return "\n".join(lines)


def _driver_tables(model, drivers):
    """The [[driver]] tables of ``drivers`` (body -> a ``DriverMotion`` read from a file, or its table as a dict:
    kind "polynomial" with coefficients, or "harmonic" with amplitude, frequency, offset, phase)."""
    parts = []
    for body, motion in (drivers or {}).items():
        table = getattr(motion, "table", motion)
        if not isinstance(table, dict):
            raise FileFormatError(f"driver of body {body!r}: a function cannot be written to a file; give it as read "
                                  "from a file or as a table {'kind': 'polynomial', 'coefficients': [...]} or "
                                  "{'kind': 'harmonic', 'amplitude': ..., 'frequency': ...}")
        kind = table.get("kind")
        if kind not in _DRIVER_KEYS:
            raise FileFormatError(f"driver of body {body!r}: kind must be one of {list(_DRIVER_KEYS)}, got {kind!r}")
        unknown = set(table) - set(_DRIVER_KEYS[kind])
        if unknown:
            raise FileFormatError(f"driver of body {body!r}: unknown key(s) {sorted(unknown)} for kind {kind!r}; "
                                  f"expected {list(_DRIVER_KEYS[kind])}")
        name = body if isinstance(body, str) else (model.body_names if isinstance(model, Model) else
                                                   model.names)[body]
        parts.append(_table("driver", [("body", name), ("kind", kind),
                                       *((key, table.get(key)) for key in _DRIVER_KEYS[kind][2:])]))
    return parts


def _analysis_table(analysis):
    return "[analysis]\n" + "\n".join(f"{k} = {_value(v) if not isinstance(v, int) else v}"
                                       for k, v in analysis.items())


def _written_kind(el):
    """The kind of a force element to be written; FileFormatError for a function of time (a file holds numbers)."""
    if callable(el.get("value")):
        raise FileFormatError(f"element {el['name']!r}: a function of time cannot be written to a file")
    return el["kind"]


def _spring_damper_items(el, body_name):
    """The keys of a [[spring_damper]] table (the name apart) of a model's spring-damper ``el``, as the reader takes
    them (``_spring_damper``); ``body_name(index)`` names its bodies."""
    return [("body_a", body_name(el["body_a"])), ("point_a", el["point_a"]), ("body_b", body_name(el["body_b"])),
            ("point_b", el["point_b"]), ("stiffness", el["stiffness"]), ("damping", el["damping"]),
            ("rest_length", el["rest"])]


def _contact_tables(model, body_name):
    """The [[ground]], [[drum]], [[contact]] and [[self_contact]] tables of a model's surfaces, contacts and
    self-contact sets (planar or spatial), as the reader takes them (the grounds first, then the drums: the order it
    adds them in); a run of contacts that one list made (consecutive bodies, one surface, shape and law, named
    <name><k> with k their index among the contacts) is written as one range entry, as are a self-contact set's
    consecutive bodies."""
    parts = []
    for surface in sorted(model._surfaces.values(), key=lambda surface: surface["kind"] != "ground"):  # as read
        if surface["kind"] == "ground":
            extent = surface["extent"]
            items = [("point", surface["point"]), ("normal", surface["normal"]), ("tangent", surface.get("tangent")),
                     ("extent", None if np.all(np.isinf(extent)) else extent)]
        else:
            items = [("center", surface["center"]), ("radius", surface["radius"]), ("axis", surface.get("axis"))]
        parts.append(_table(surface["kind"], [("name", surface["name"]), *items,
                                              ("body", body_name(surface["owner"]))]))
    contacts = model._contacts
    start = 0
    while start < len(contacts):
        stop, base = _contact_run(contacts, start)
        first = contacts[start]
        if stop - start > 1:
            body = "{first = " + toml_string(body_name(first["body"])) + ", last = " + toml_string(
                body_name(contacts[stop - 1]["body"])) + "}"
            name = None if base == "contact" else base
        else:
            body, name = toml_string(body_name(first["body"])), first["name"]
        items = [("name", name), ("surface", first["surface"]), ("point", first.get("point")),
                 ("segment", first.get("segment")), ("radius", first["radius"]),
                 *((key, first[key]) for key in ("stiffness", "exponent", "restitution", "friction",
                                                 "tangential_stiffness", "tangential_damping", "min_impact_speed"))]
        table = _table("contact", items).split("\n")
        after = 1 if name is None else 2  # the body after the name (a range is an inline table: written here)
        parts.append("\n".join([*table[:after], f"body = {body}", *table[after:]]))
        start = stop
    for group in model._self_contacts:
        indices = group["bodies"]
        if indices == list(range(indices[0], indices[0] + len(indices))):  # consecutive bodies: a range
            bodies = "{first = " + toml_string(body_name(indices[0])) + ", last = " + toml_string(
                body_name(indices[-1])) + "}"
        else:
            bodies = "[" + ", ".join(toml_string(body_name(index)) for index in indices) + "]"
        ends = group["ends"]
        circle = np.array_equal(ends[0], ends[1])  # add_self_contact stores a circle's point as both ends
        items = [("point", ends[0] if circle else None), ("segment", None if circle else ends),
                 *((key, group[key]) for key in ("radius", "stiffness", "exponent", "restitution", "impact_speed",
                                                 "friction", "tangential_damping"))]
        table = _table("self_contact", [("name", group["name"]), *items]).split("\n")
        parts.append("\n".join([*table[:2], f"bodies = {bodies}", *table[2:]]))
    return parts


def _contact_run(contacts, start):
    """(stop, base): contacts[start:stop] is the longest run that a list of bodies could have made (module
    docstring: ``Model.add_contact`` names a list's contacts <base><k>), stop = start + 1 if none."""
    first = contacts[start]
    index = str(start)
    if not first["name"].endswith(index) or len(first["name"]) == len(index):
        return start + 1, None
    base = first["name"][:-len(index)]

    def same(other):  # the same surface, shape and law
        return set(first) == set(other) and all(
            np.array_equal(first[key], other[key]) if isinstance(first[key], np.ndarray) else first[key] == other[key]
            for key in first if key not in ("name", "body"))

    stop = start + 1
    while (stop < len(contacts) and contacts[stop]["body"] == first["body"] + stop - start
           and contacts[stop]["name"] == f"{base}{stop}" and same(contacts[stop])):
        stop += 1
    return stop, base


def _dumps_spatial(model, q0, v0, analysis, drivers):
    """TOML text of a Model3D (module docstring: spatial models), every key explicit."""
    names = model.names  # generated once (default names are made on demand)

    def body_name(index):
        return "ground" if index == GROUND else names[index]

    parts = [f"[model]\ndimension = 3\nname = {_value(model.name or '')}\ngravity = {_value(model.gravity)}\n"
             'form = "tree"']
    for i in range(model.nbodies):
        body = model.body(i)  # what add_body stored
        parts.append(_table("body", [
            ("name", body["name"]), ("parent", body_name(body["parent"])), ("joint", body["joint"]),
            *((key, body[key]) for key in ("parent_point", "child_point", "mass", "inertia", "com", "rotation",
                                           "axis"))]))
    for el in model._elements:
        kind = _written_kind(el)
        if kind == "spring_damper":
            items = [*_spring_damper_items(el, body_name), ("preload", el["preload"])]
        elif kind == "joint_spring_damper":
            items = [("body", body_name(el["body_a"]))] + [
                (key, el[key][0] if el[key].size == 1 else el[key]) for key in ("stiffness", "damping", "rest")]
        elif kind == "force":
            items = [("body", body_name(el["body_a"])), ("point", el["point_a"]), ("force", el["value"]),
                     ("frame", el["frame"])]
        else:
            items = [("body", body_name(el["body_a"])), ("torque", el["value"]), ("frame", el["frame"])]
        parts.append(_table(kind, [("name", el["name"]), *items]))
    for k in range(model.nloops):
        loop = model.loop(k)  # what add_loop stored
        parts.append(_table("loop", [
            ("name", loop["name"]), ("kind", loop["kind"]), ("body_a", body_name(loop["body_a"])),
            ("point_a", loop["point_a"]), ("body_b", body_name(loop["body_b"])), ("point_b", loop["point_b"]),
            *((key, loop[key]) for key in ("axis", "axis_b", "length"))]))
    parts += _contact_tables(model, body_name)
    initial = ["[initial]"]
    for key, what, given, size in (("q", "q0", q0, model.nq), ("v", "v0", v0, model.nv)):
        if given is None:
            continue
        values = np.asarray(given, dtype=float)
        if values.shape != (size,) or not np.all(np.isfinite(values)):
            raise StateError(f"{what} must be {size} finite numbers for this model, got shape {values.shape}")
        initial.append(f"{key} = {_value(values)}")
    if len(initial) > 1:
        parts.append("\n".join(initial))
    parts += _driver_tables(model, drivers)
    if analysis:
        parts.append(_analysis_table(analysis))
    return "\n\n".join(parts) + "\n"


def dumps(model, q0=None, qd0=None, analysis=None, drivers=None):
    """TOML text of a Model in the tree form (with its elements and loops), an initial state, drivers and an
    analysis; of a Model3D in the spatial form (``qd0`` is then its velocity v, nv numbers). ``drivers``: body ->
    a driver as ``load`` read it (``ModelFile.drivers``) or its [[driver]] table as a dict (format reference)."""
    if isinstance(model, Model3D):
        return _dumps_spatial(model, q0, qd0, analysis, drivers)

    def body_name(index):
        return "ground" if index == GROUND else model.body_names[index]

    parts = [f"[model]\nname = {_value(model.name or '')}\ngravity = {_value(model.gravity)}\nform = \"tree\""]
    for b in model._bodies:
        jtype = joints.JOINT_NAMES[b["jtype"]]
        parts.append(_table("body", [
            ("name", b["name"]), ("parent", body_name(b["parent"])), ("joint", jtype),
            ("parent_point", b["parent_point"]), ("child_point", b["child_point"]), ("mass", b["mass"]),
            ("inertia", b["inertia"]), ("com", b["com"]), ("angle", b["angle"]),
            ("axis", b["axis"] if jtype == "prismatic" else None)]))
    for lp in model._loops:
        parts.append(_table("loop", [
            ("name", lp["name"]), ("kind", lp["kind"]), ("body_a", body_name(lp["body_a"])), ("point_a", lp["point_a"]),
            ("body_b", body_name(lp["body_b"])), ("point_b", lp["point_b"]),
            ("axis", lp["axis"] if lp["kind"] == "prismatic" else None), ("angle", lp["angle"]),
            ("length", lp["length"] if lp["kind"] == "distance" else None)]))
    for el in model._elements:
        kind = _written_kind(el)
        if kind == "spring_damper":
            items = _spring_damper_items(el, body_name)
        elif kind == "joint_spring_damper":
            items = [("body", body_name(el["body_a"])), ("stiffness", el["stiffness"]), ("damping", el["damping"]),
                     ("rest", el["rest"])]
        elif kind == "force":
            items = [("body", body_name(el["body_a"])), ("point", el["point_a"]), ("force", el["value"]),
                     ("frame", el["frame"])]
        else:
            items = [("body", body_name(el["body_a"])), ("torque", el["value"])]
        parts.append(_table(kind, [("name", el["name"]), *items]))
    parts += _contact_tables(model, body_name)
    if q0 is not None or qd0 is not None:
        initial = ["[initial]"]
        if q0 is not None:
            initial.append(f"q = {_value(q0)}")
        if qd0 is not None:
            initial.append(f"qd = {_value(qd0)}")
        parts.append("\n".join(initial))
    parts += _driver_tables(model, drivers)
    if analysis:
        parts.append(_analysis_table(analysis))
    return "\n\n".join(parts) + "\n"


def save(model, path, q0=None, qd0=None, analysis=None, drivers=None):
    """Write ``dumps(model, q0, qd0, analysis, drivers)`` to ``path`` (a Model3D: ``qd0`` is its velocity v)."""
    Path(path).write_text(dumps(model, q0, qd0, analysis, drivers), encoding="utf-8")
