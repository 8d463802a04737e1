"""Model files (TOML): a tree or a mechanism from absolute placements, force elements, loops, drivers, the initial
state and the analysis to run.

Format (every table optional unless marked; lengths m, angles rad, masses kg, forces N)::

    [model]            name = "...", gravity = [0.0, -9.81], form = "tree" | "mechanism" | "chain",
                       cut = ["joint", ...] (mechanism)
    [chain]            chain form: n, length, mass: ``chains.serial_chain`` (bodies "link1" .. "linkn"); loops and
                       elements may refer to its links
    [[body]]           tree:      name, parent ("ground" or a body name), joint ("revolute" | "prismatic" | "fixed"
                                  | "planar"), parent_point, child_point, mass, inertia, com, angle, axis
                       mechanism: name, mass, inertia, pose = [x, y, angle], com
    [[joint]]          mechanism only: name, kind ("revolute" | "prismatic" | "fixed"), body_a, point_a, body_b,
                       point_b, axis (prismatic, in body a's frame)
    [[loop]]           tree only: kind ("revolute" | "prismatic" | "fixed" | "distance"), body_a, point_a, body_b,
                       point_b, axis, angle, length, name
    [[spring_damper]]  body_a, point_a, body_b, point_b, stiffness, damping, rest_length, name
    [[joint_spring_damper]]  tree only: body, stiffness, damping, rest, name
    [[force]]          body, point, force = [Fx, Fy], frame ("ground" | "body"), name
    [[torque]]         body, torque, name
    [[driver]]         body, kind = "polynomial" (coefficients = [c0, c1, ...]: q = sum c_k t^k) or "harmonic"
                       (offset, amplitude, frequency [rad/s], phase: q = offset + amplitude sin(frequency t + phase))
    [initial]          q = [...], qd = [...] (a mechanism's q comes from its poses; qd defaults to zero)
    [analysis]         type = "dynamics" | "statics" | "kinematics" | "modes", and its settings: t_end, method,
                       rtol, atol, dt, samples (output times), stabilization; count (modes)

Errors are ``FileFormatError`` naming the file, the table and entry (``body[3].mass``) and what is expected; a TOML
syntax error keeps the parser's line and column. ``save`` writes any Model in the tree form and ``load`` reads it
back unchanged.
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import chains, joints
from .errors import ModelError
from .mechanism import Mechanism
from .model import GROUND, Model

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ANALYSES = ("dynamics", "statics", "kinematics", "modes")
_REQUIRED = object()


class FileFormatError(ModelError):
    """A model file that cannot be read: the message names the file, the entry and what is expected."""


@dataclass
class ModelFile:
    """What a model file describes: the model, its initial state, drivers and the analysis to run."""

    model: Model
    q0: np.ndarray
    qd0: np.ndarray
    drivers: dict = field(default_factory=dict)
    analysis: dict = field(default_factory=dict)
    source: str = "<string>"


class _Reader:
    def __init__(self, source):
        self.source = source

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
            self.fail(where, f"unknown key {unknown[0]!r}; expected some of {sorted(allowed)}")

    def number(self, entry, key, where, default=_REQUIRED):
        if key not in entry:
            if default is _REQUIRED:
                self.fail(f"{where}.{key}", "missing; expected a number")
            return default
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(f"{where}.{key}", f"expected a finite number, got {value!r}")
        return float(value)

    def string(self, entry, key, where, default=_REQUIRED, choices=None):
        if key not in entry:
            if default is _REQUIRED:
                self.fail(f"{where}.{key}", "missing; expected a string")
            return default
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
            return default
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


def loads(text, source="<string>"):
    """A ``ModelFile`` from TOML text (module docstring)."""
    reader = _Reader(source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise FileFormatError(f"{source}: TOML syntax error: {err}") from None
    reader.keys(data, ("model", "chain", "body", "joint", "loop", "spring_damper", "joint_spring_damper", "force",
                       "torque", "driver", "initial", "analysis"), "top level")
    head = reader.table(data, "model", "model")
    reader.keys(head, ("name", "gravity", "form", "cut"), "model")
    form = reader.string(head, "form", "model", "tree", ("tree", "mechanism", "chain"))
    gravity = reader.vector(head, "gravity", "model", 2, np.array([0.0, -9.81]))
    name = reader.string(head, "name", "model", None)
    build = {"tree": _tree, "mechanism": _mechanism, "chain": _chain}[form]
    model, placement_q0 = build(reader, data, gravity, name, head)
    try:
        model.compile()
    except ModelError as err:
        reader.fail("model", str(err))
    initial = reader.table(data, "initial", "initial")
    reader.keys(initial, ("q", "qd"), "initial")
    default_q0 = placement_q0 if placement_q0 is not None else np.zeros(model.nq)
    q0 = reader.vector(initial, "q", "initial", model.nq, default_q0)
    qd0 = reader.vector(initial, "qd", "initial", model.nq, np.zeros(model.nq))
    drivers = _drivers(reader, data, model)
    analysis = _analysis(reader, data)
    return ModelFile(model, q0, qd0, drivers, analysis, source)


def load(path):
    """A ``ModelFile`` from a TOML file, or from a seed-002 deck (``recursive_mbd.deck``: a .deck file, or text
    whose first command is TITL)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise FileFormatError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError:
        raise FileFormatError(f"{path}: not a text file") from None
    first = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("*")), "")
    if path.suffix.lower() == ".deck" or first.upper().startswith("TITL"):
        from .deck import loads_deck  # noqa: PLC0415  (the deck reader builds on this module)

        return loads_deck(text, str(path))
    return loads(text, str(path))


_ELEMENT_KEYS = {
    "spring_damper": ("body_a", "point_a", "body_b", "point_b", "stiffness", "damping", "rest_length", "name"),
    "force": ("body", "point", "force", "frame", "name"),
    "torque": ("body", "torque", "name"),
    "joint_spring_damper": ("body", "stiffness", "damping", "rest", "name"),
}


def _elements(reader, data, target, allow_joint_springs):
    for kind, keys in _ELEMENT_KEYS.items():
        entries = reader.entries(data, kind)
        if entries and kind == "joint_spring_damper" and not allow_joint_springs:
            reader.fail(f"{kind}[0]", "joint spring-dampers belong to the tree form (model.form = 'tree')")
        for i, entry in enumerate(entries):
            where = f"{kind}[{i}]"
            reader.keys(entry, keys, where)
            name = reader.string(entry, "name", where, None)
            if kind == "spring_damper":
                reader.call(where, target.add_spring_damper, body_a=reader.string(entry, "body_a", where),
                            point_a=reader.vector(entry, "point_a", where, 2),
                            body_b=reader.string(entry, "body_b", where),
                            point_b=reader.vector(entry, "point_b", where, 2),
                            stiffness=reader.number(entry, "stiffness", where),
                            damping=reader.number(entry, "damping", where, 0.0),
                            rest_length=reader.number(entry, "rest_length", where, 0.0), name=name)
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
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        reader.fail("chain.n", f"expected an integer >= 1, got {n!r}")
    if gravity[0] != 0.0 or not gravity[1] <= 0.0:
        reader.fail("model.gravity", "a chain hangs in gravity along -y: expected [0, -g]")
    if reader.entries(data, "body") or reader.entries(data, "joint"):
        reader.fail("body", "the chain form builds its bodies from [chain]; use the tree form to list bodies")
    model = reader.call("chain", chains.serial_chain, n=n, length=reader.number(table, "length", "chain", 1.0),
                        mass=reader.number(table, "mass", "chain", 1.0), gravity=-gravity[1])
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
        reader.call(where, model.add_loop, kind=reader.string(entry, "kind", where),
                    body_a=reader.string(entry, "body_a", where), point_a=reader.vector(entry, "point_a", where, 2),
                    body_b=reader.string(entry, "body_b", where, "ground"),
                    point_b=reader.vector(entry, "point_b", where, 2, np.zeros(2)),
                    axis=reader.vector(entry, "axis", where, 2, None), angle=reader.number(entry, "angle", where, 0.0),
                    length=reader.number(entry, "length", where, None), name=reader.string(entry, "name", where, None))


def _tree(reader, data, gravity, name, head):
    if reader.entries(data, "joint"):
        reader.fail("joint[0]", "[[joint]] tables belong to the mechanism form (model.form = 'mechanism'); a tree "
                    "gives each body its parent and joint")
    model = Model(gravity=gravity, name=name)
    bodies = reader.entries(data, "body")
    if not bodies:
        reader.fail("body", "the model has no bodies ([[body]] tables)")
    keys = ("name", "parent", "joint", "parent_point", "child_point", "mass", "inertia", "com", "angle", "axis")
    for i, entry in enumerate(bodies):
        where = f"body[{i}]"
        reader.keys(entry, keys, where)
        reader.call(where, model.add_body, parent=reader.string(entry, "parent", where, "ground"),
                    joint=reader.string(entry, "joint", where, "revolute", tuple(joints.JOINT_CODES)),
                    parent_point=reader.vector(entry, "parent_point", where, 2, np.zeros(2)),
                    child_point=reader.vector(entry, "child_point", where, 2, np.zeros(2)),
                    mass=reader.number(entry, "mass", where, 1.0), inertia=reader.number(entry, "inertia", where, 0.0),
                    com=reader.vector(entry, "com", where, 2, np.zeros(2)),
                    angle=reader.number(entry, "angle", where, 0.0),
                    axis=reader.vector(entry, "axis", where, 2, None), name=reader.string(entry, "name", where, None))
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
                    mass=reader.number(entry, "mass", where, 1.0), inertia=reader.number(entry, "inertia", where, 0.0),
                    pose=reader.vector(entry, "pose", where, 3), com=reader.vector(entry, "com", where, 2, np.zeros(2)))
    for i, entry in enumerate(reader.entries(data, "joint")):
        where = f"joint[{i}]"
        reader.keys(entry, ("name", "kind", "body_a", "point_a", "body_b", "point_b", "axis"), where)
        reader.call(where, mech.add_joint, kind=reader.string(entry, "kind", where),
                    body_a=reader.string(entry, "body_a", where), point_a=reader.vector(entry, "point_a", where, 2),
                    body_b=reader.string(entry, "body_b", where), point_b=reader.vector(entry, "point_b", where, 2),
                    axis=reader.vector(entry, "axis", where, 2, None), name=reader.string(entry, "name", where, None))
    _elements(reader, data, mech, allow_joint_springs=False)
    cut = head.get("cut", [])
    if not isinstance(cut, list) or not all(isinstance(c, str) for c in cut):
        reader.fail("model.cut", f"expected an array of joint names, got {cut!r}")
    try:
        model, q0, _ = mech.build(cut=cut)
    except ModelError as err:  # names the joint (its [[joint]] name) and the gap
        reader.fail(None, str(err))
    return model, q0


def _drivers(reader, data, model):
    drivers = {}
    for i, entry in enumerate(reader.entries(data, "driver")):
        where = f"driver[{i}]"
        kind = reader.string(entry, "kind", where, "polynomial", ("polynomial", "harmonic"))
        body = reader.string(entry, "body", where)
        if body not in model.body_names:
            reader.fail(f"{where}.body", f"unknown body {body!r}")
        if kind == "polynomial":
            reader.keys(entry, ("body", "kind", "coefficients"), where)
            coefficients = reader.vector(entry, "coefficients", where)
            if coefficients.size == 0:
                reader.fail(f"{where}.coefficients", "expected at least one coefficient")
            poly = np.polynomial.Polynomial(coefficients)
            drivers[body] = (poly, poly.deriv(1), poly.deriv(2))
        else:
            reader.keys(entry, ("body", "kind", "offset", "amplitude", "frequency", "phase"), where)
            c, a, w, p = (reader.number(entry, key, where, default) for key, default in
                          (("offset", 0.0), ("amplitude", _REQUIRED), ("frequency", _REQUIRED), ("phase", 0.0)))
            drivers[body] = (lambda t, c=c, a=a, w=w, p=p: c + a * math.sin(w * t + p),
                             lambda t, a=a, w=w, p=p: a * w * math.cos(w * t + p),
                             lambda t, a=a, w=w, p=p: -a * w * w * math.sin(w * t + p))
    return drivers


_ANALYSIS_KEYS = {
    "dynamics": ("type", "t_end", "method", "rtol", "atol", "dt", "samples", "stabilization"),
    "kinematics": ("type", "t_end", "samples"),
    "statics": ("type",),
    "modes": ("type", "count"),
}


def _analysis(reader, data):
    table = reader.table(data, "analysis", "analysis")
    kind = reader.string(table, "type", "analysis", "dynamics", ANALYSES)
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
    if "method" in table:
        out["method"] = reader.string(table, "method", "analysis")
    if "stabilization" in table:
        out["stabilization"] = reader.string(table, "stabilization", "analysis", None,
                                             ("projection", "baumgarte", "none"))
    return out


# ---- writing -------------------------------------------------------------------------------------------------------

def _value(value):
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_value(v) for v in np.asarray(value).tolist()) + "]"
    return repr(float(value))


def _table(name, items):
    lines = [f"[[{name}]]"]
    lines += [f"{key} = {_value(value)}" for key, value in items if value is not None]
    return "\n".join(lines)


def dumps(model, q0=None, qd0=None, analysis=None):
    """TOML text of a Model in the tree form (with its elements and loops), an initial state and an analysis."""
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
        if callable(el.get("value")):
            raise FileFormatError(f"element {el['name']!r}: a function of time cannot be written to a file")
        kind = el["kind"]
        if kind == "spring_damper":
            items = [("body_a", body_name(el["body_a"])), ("point_a", el["point_a"]),
                     ("body_b", body_name(el["body_b"])), ("point_b", el["point_b"]),
                     ("stiffness", el["stiffness"]), ("damping", el["damping"]), ("rest_length", el["rest"])]
        elif kind == "joint_spring_damper":
            items = [("body", body_name(el["body_a"])), ("stiffness", el["stiffness"]), ("damping", el["damping"]),
                     ("rest", el["rest"])]
        elif kind == "force":
            items = [("body", body_name(el["body_a"])), ("point", el["point_a"]), ("force", el["value"]),
                     ("frame", el["frame"])]
        else:
            items = [("body", body_name(el["body_a"])), ("torque", el["value"])]
        parts.append(_table(kind, [("name", el["name"]), *items]))
    if q0 is not None or qd0 is not None:
        initial = ["[initial]"]
        if q0 is not None:
            initial.append(f"q = {_value(q0)}")
        if qd0 is not None:
            initial.append(f"qd = {_value(qd0)}")
        parts.append("\n".join(initial))
    if analysis:
        parts.append("[analysis]\n" + "\n".join(f"{k} = {_value(v) if not isinstance(v, int) else v}"
                                                for k, v in analysis.items()))
    return "\n\n".join(parts) + "\n"


def save(model, path, q0=None, qd0=None, analysis=None):
    """Write ``dumps(model, q0, qd0, analysis)`` to ``path``."""
    Path(path).write_text(dumps(model, q0, qd0, analysis))
