"""A reader for the deck-style commands of Sugiyama, Naitoh and Toguchi's KINE2D, as far as its double-pendulum example
uses them.

One command per line, fields separated by commas; ``*`` starts a comment line; a line ending in ``+`` continues on
the next non-blank line (a continued comment stays a comment); a trailing ``/`` is dropped. How each command is
read:

=======================================  ==========================================================================
``TITL, text``                           the model's name
``PRIN, code``                           print selection of the original program: accepted, no effect
``TASK, kind, -, -, t0, t_end, dt``      the analysis: kind D = dynamics (dopri5, output every dt), S = statics,
                                         K = kinematics (output every dt), E = modes (the 5 lowest); the two
                                         integer fields are not used. Without TASK the deck describes a model
                                         only (``analysis`` is {}; ``rmbd run`` refuses it): nothing is guessed
``BODY, id, x, y, angle``                a body whose frame is at (x, y) [m], turned by ``angle`` [degrees]
``POIN, id, body, x, y, flag``           a point of a body: flag 0 gives (x, y) in the body frame, any other flag
                                         in the ground frame (the example's tip point 23 uses flag 2 that way)
``PROP, body, mass, inertia``            mass [kg] and rotational inertia about the frame origin's centre of mass
                                         [kg m^2] (the centre of mass is the frame origin)
``GFOR, id, fx, fy, moment``             a constant force [N] at the centre of mass and a moment [N m] on body
                                         id // 10 (the example's ids 10 and 20 load bodies 1 and 2 with their
                                         weights: the deck's gravity is given this way, so the model has none)
``REST, P, point, x, y``                 the point pinned to the ground at (x, y) (a revolute joint to the ground)
``REST, R, point, angle``                with REST P on the same point: its body's rotation fixed too (a fixed
                                         joint to the ground at the angle of its placement)
``RCON, P, point_a, point_b``            a pin (revolute joint) between two points
``FCON, DR, point_a, point_b, c``        a rotational damper c [N m s/rad] across the pin between the two points
``ENDD``                                 end of the deck; anything after it is ignored
=======================================  ==========================================================================

Any other command, or a known one with too few or malformed fields, is an error naming the line.
"""

import math
from pathlib import Path

import numpy as np

from ..analysis.mechanism import Mechanism
from ..errors import ModelError, unknown_name
from .model_file import FileFormatError, ModelFile, too_many_samples

_FIELDS = {"TITL": 1, "PRIN": 1, "TASK": 6, "BODY": 4, "POIN": 5, "PROP": 3, "GFOR": 4, "REST": 3, "RCON": 3,
           "FCON": 4, "ENDD": 0}


def _lines(text):
    """(line number, command, fields) of the deck's commands, comments and continuations resolved."""
    pending, start, comment = "", 0, False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:  # blank lines separate nothing, not even a continued statement
            continue
        if not pending:
            start, comment = number, line.startswith("*")
        pending += line.rstrip("+").rstrip() + ("," if line.endswith("+") else "")
        if line.endswith("+"):
            continue
        statement, pending = pending, ""
        if comment or not statement:
            continue
        parts = [p.strip() for p in statement.rstrip("/").split(",")]
        parts = [p for p in parts if p != ""] if parts[0].upper() != "TITL" else parts
        yield start, parts[0].upper(), parts[1:]


def loads_deck(text, source="<deck>"):
    """A ``ModelFile`` from deck text (module docstring)."""

    def fail(number, message):
        raise FileFormatError(f"{source}: line {number}: {message}")

    def number(value, line, what):
        try:
            result = float(value)
        except ValueError:
            fail(line, f"{what}: expected a number, got {value!r}")
        if not math.isfinite(result):
            fail(line, f"{what}: expected a finite number, got {value!r}")
        return result

    title, analysis = None, {}
    bodies, points, props, forces, rests, pins, dampers = {}, {}, {}, [], {}, [], []
    for line, command, fields in _lines(text):
        if command not in _FIELDS:
            fail(line, f"unknown command {command!r}; this reader knows {sorted(_FIELDS)}")
        if len(fields) < _FIELDS[command]:
            fail(line, f"{command} needs {_FIELDS[command]} fields, got {len(fields)}")
        if command == "ENDD":
            break
        if command == "TITL":
            title = ",".join(fields).strip()
        elif command == "TASK":
            kinds = {"D": "dynamics", "S": "statics", "K": "kinematics", "E": "modes"}
            if fields[0].upper() not in kinds:
                fail(line, f"TASK kind {fields[0]!r}: expected one of {sorted(kinds)}")
            t0, t_end, dt = (number(v, line, f"TASK field {k}") for k, v in zip((5, 6, 7), fields[3:6], strict=True))
            if not t_end > t0 or not dt > 0:
                fail(line, f"TASK: need t_end > t0 and dt > 0, got {t0}, {t_end}, {dt}")
            kind = kinds[fields[0].upper()]
            analysis = {"type": kind}
            if kind in ("dynamics", "kinematics"):
                samples = (t_end - t0) / dt + 1.0  # a float: a span of 1e308 / 1e-300 has no integer count
                if too_many_samples(samples):
                    fail(line, f"TASK: (t_end - t0) / dt gives {too_many_samples(samples)}: take a longer dt")
                analysis.update(t_end=t_end - t0, samples=int(round((t_end - t0) / dt)) + 1)
            if kind == "dynamics":
                analysis["method"] = "dopri5"
            if kind == "modes":
                analysis["count"] = 5
        elif command == "BODY":
            bodies[fields[0]] = (line, [number(v, line, f"BODY {fields[0]}") for v in fields[1:4]])
        elif command == "POIN":
            if fields[1] not in bodies:
                fail(line, f"POIN {fields[0]}: {unknown_name('body', fields[1], bodies, 'bodies')} (define it with "
                     "BODY first)")
            points[fields[0]] = (fields[1], np.array([number(v, line, f"POIN {fields[0]}") for v in fields[2:4]]),
                                 fields[4] != "0")
        elif command == "PROP":
            if fields[0] not in bodies:
                fail(line, f"PROP: {unknown_name('body', fields[0], bodies, 'bodies')}")
            props[fields[0]] = [number(v, line, f"PROP {fields[0]}") for v in fields[1:3]]
        elif command == "GFOR":
            values = [number(v, line, f"GFOR {fields[0]}") for v in fields[1:4]]
            body = str(int(number(fields[0], line, "GFOR id")) // 10)
            if body not in bodies:
                fail(line, f"GFOR {fields[0]}: {unknown_name('body', body, bodies, 'bodies')} (GFOR id // 10 names "
                     "the body)")
            forces.append((body, values))
        elif command == "REST":
            kind, point = fields[0].upper(), fields[1]
            if kind not in ("P", "R"):
                fail(line, f"REST {kind}: expected P or R and a known point, got {fields[:2]}")
            if point not in points:
                fail(line, f"REST {kind}: {unknown_name('point', point, points)}")
            rests.setdefault(point, [line, set()])[1].add(kind)
        elif command == "RCON":
            if fields[0].upper() != "P":
                fail(line, f"RCON: expected P and two known points, got {fields}")
            for point in fields[1:3]:
                if point not in points:
                    fail(line, f"RCON: {unknown_name('point', point, points)}")
            pins.append((line, fields[1], fields[2]))
        elif command == "FCON":
            if fields[0].upper() != "DR":
                fail(line, f"FCON {fields[0]!r}: this reader knows the rotational damper DR only")
            dampers.append((line, fields[1], fields[2], number(fields[3], line, "FCON coefficient")))

    mech = Mechanism(gravity=(0.0, 0.0), name=title)
    for name, (line, (x, y, angle)) in bodies.items():
        mass, inertia = props.get(name, (None, None))
        if mass is None:
            fail(line, f"BODY {name}: no PROP line gives its mass and inertia")
        try:
            mech.add_body(name, mass, inertia, (x, y, math.radians(angle)))
        except ModelError as err:
            fail(line, str(err))

    def local(point):
        body, xy, ground_frame = points[point]
        if not ground_frame:
            return body, xy
        x, y, angle = mech.bodies[body]["pose"]
        c, s = math.cos(angle), math.sin(angle)
        dx, dy = xy - (x, y)
        return body, np.array([c * dx + s * dy, -s * dx + c * dy])

    joint_of = {}
    for point, (line, kinds) in rests.items():
        body, xy = local(point)
        pose = mech.bodies[body]["pose"]
        c, s = math.cos(pose[2]), math.sin(pose[2])
        world = pose[:2] + np.array([c * xy[0] - s * xy[1], s * xy[0] + c * xy[1]])
        kind = "fixed" if kinds == {"P", "R"} else "revolute" if kinds == {"P"} else None
        if kind is None:
            fail(line, f"REST R on point {point} needs REST P on it too")
        try:
            mech.add_joint(kind, "ground", world, body, xy, name=f"REST {point}")
        except ModelError as err:
            fail(line, str(err))
    for line, a, b in pins:
        (body_a, xy_a), (body_b, xy_b) = local(a), local(b)
        try:
            joint_of[frozenset((a, b))] = mech.add_joint("revolute", body_a, xy_a, body_b, xy_b, name=f"RCON {a} {b}")
        except ModelError as err:
            fail(line, str(err))
    for body, (fx, fy, moment) in forces:
        mech.add_force(body, (0.0, 0.0), (fx, fy))
        if moment:
            mech.add_torque(body, moment)
    for line, a, b, c in dampers:
        joint = joint_of.get(frozenset((a, b)))
        if joint is None:
            fail(line, f"FCON DR {a} {b}: no RCON pin joins these points")
        try:
            mech.add_joint_spring_damper(joint, 0.0, damping=c, name=f"FCON {a} {b}")
        except ModelError as err:
            fail(line, str(err))
    try:
        model, q0, _ = mech.build()
    except ModelError as err:
        raise FileFormatError(f"{source}: {err}") from None
    return ModelFile(model, q0, np.zeros(model.nq), {}, analysis, source)


def load_deck(path):
    """A ``ModelFile`` from a deck file."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a FIFO would block the read
        raise FileFormatError(f"{path}: not a regular file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise FileFormatError(f"{path}: not a UTF-8 text file") from None
    except OSError as err:
        raise FileFormatError(f"{path}: cannot read: {err.strerror}") from None
    return loads_deck(text, str(path))
