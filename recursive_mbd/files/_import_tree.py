"""What the URDF and MJCF readers share: the frame tree a description file states, built into a ``Model3D``.

A file describes a tree of frames ("links" in URDF, "bodies" in MJCF): each node is placed in its parent node's
frame (``rotation``, ``position``: the node frame at zero joint coordinates), moves on zero, one or several joints
(a joint's ``anchor`` and ``axis`` in the node frame) and carries a mass, a centre of mass and an inertia about it in
node axes. ``build`` turns it into bodies, without recursion (the nodes come parents first, so one loop places them):

- a node without joints (a URDF fixed joint, an MJCF body without joints) is merged into the body its parent belongs
  to: masses add, the centre of mass is their weighted mean and the inertias are moved to it by the parallel-axis
  theorem; its children hang from that body through the composed placement. Nodes merged into the root (the ground)
  drop out of the dynamics;
- a node with one joint is one body; with several (MJCF), the first joints move massless intermediate bodies
  named ``"<node>/<joint>"`` and the last one moves the body, which is how such a file composes them;
- a body's frame is its node's frame, except under a planar joint whose plane is not the node frame's xy plane:
  then the body frame is turned so that its z axis is the plane's normal (Model3D's planar joint moves in its joint
  frame's xy plane), and the node's inertia and children are expressed in the turned frame.

Every failure is a ``FileFormatError`` naming the file and the element.
"""

import contextlib
import gc
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..model.spatial import Model3D
from ..model.spatial_fields import axis_rotation
from .model_file import FileFormatError

ZERO = np.zeros(3)
ZERO.flags.writeable = False
ZERO_TENSOR = np.zeros((3, 3))
ZERO_TENSOR.flags.writeable = False


@dataclass
class ImportedJoint:
    """A joint of an imported file, as the file states it (the model uses its type, frame and axis).

    ``limits`` (lower, upper) [rad or m] or None, ``effort`` and ``velocity`` limits (None when not stated) and
    ``friction`` are kept here but not applied (Model3D has no joint limits or Coulomb friction yet); ``damping``
    and ``stiffness`` (with its rest ``spring_rest``) are applied as joint spring-dampers when the reader is asked
    to (its ``joint_damping`` argument)."""

    name: str
    type: str  # the file's type name ("continuous", "hinge", ...)
    body: str  # the Model3D body it moves
    limits: tuple | None = None
    effort: float | None = None
    velocity: float | None = None
    damping: float = 0.0
    friction: float = 0.0
    stiffness: float = 0.0
    spring_rest: float = 0.0
    ref: float = 0.0  # the joint coordinate at the pose the file draws (MJCF's ref; the model's q is the file's)


@dataclass
class ImportedModel:
    """What an imported model keeps from its file beside the dynamics (``Model3D.imported``).

    ``source`` the file, ``format`` "urdf" or "mjcf"; ``joints`` the file's moving joints by name; ``links`` each
    link (URDF) or body (MJCF) name -> the Model3D body it belongs to ("ground" for those fixed to the root);
    ``meshes`` each body -> the mesh file names of its visual and collision geometry (ignored by the dynamics;
    for drawings); ``q0`` the file's initial configuration (MJCF: its qpos0; URDF: the neutral one)."""

    source: str
    format: str
    joints: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)
    meshes: dict = field(default_factory=dict)
    q0: np.ndarray | None = None


@dataclass
class Joint:
    """One joint of a node: the Model3D joint type, anchor and axis in the node frame, and what the file said."""

    kind: str  # Model3D joint type
    anchor: np.ndarray
    axis: np.ndarray | None
    info: ImportedJoint
    where: str  # the element, for messages ("joint 'elbow'")


class Node:
    """A link (URDF) or body (MJCF): its placement in its parent node's frame at zero joint coordinates, its joints
    and its inertia (mass, centre of mass in the node frame, inertia tensor about it)."""

    __slots__ = ("name", "parent", "where", "rotation", "position", "joints", "mass", "com", "inertia",
                 "inertia_rotation", "meshes", "free_placement")

    def __init__(self, name, parent, where, rotation, position, joints):
        self.name = name
        self.parent = parent  # index of the parent node (the root, node 0: -1)
        self.where = where  # the element, for messages ("link 'elbow'")
        self.rotation = rotation  # (3, 3), or None: the identity (most nodes: kept apart to skip their products)
        self.position = position
        self.joints = joints  # [Joint]
        self.mass = 0.0
        self.com = ZERO
        self.inertia = ZERO_TENSOR  # about the centre of mass, in the axes of inertia_rotation
        self.inertia_rotation = None  # those axes in the node frame (None: the node axes)
        self.meshes = []
        self.free_placement = None  # MJCF: a free body's (position, quaternion) in the file, its qpos0


@contextlib.contextmanager
def paused_garbage_collection():
    """The cyclic garbage collector paused while a file is read (and restored after): a 1e5-link file makes a
    million small objects, none in a reference cycle, whose repeated scans cost a third of the load time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Failure:
    """Raises the ``FileFormatError`` of one file: ``fail(where, message)`` -> "file: where: message"."""

    def __init__(self, source):
        self.source = source

    def __call__(self, where, message):
        raise FileFormatError(f"{self.source}: {where + ': ' if where else ''}{message}")


def rpy_matrix(roll, pitch, yaw):
    """The rotation of URDF's roll-pitch-yaw angles: Rz(yaw) Ry(pitch) Rx(roll) (fixed axes x, y, z)."""
    cr, sr, cp, sp = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _compose(rot_a, pos_a, rot_b, pos_b):
    """Frame b placed in frame a (rot_b, pos_b), a placed in c (rot_a, pos_a): b in c, (rot_a rot_b, pos_a + rot_a
    pos_b); a rotation None is the identity (and stays None when both are)."""
    if rot_a is None:
        rot, pos = rot_b, pos_b
    else:
        rot, pos = (rot_a if rot_b is None else rot_a @ rot_b), rot_a @ pos_b
    return rot, (pos if pos_a is ZERO else pos_a + pos)


def _plane_frame(normal):
    """A rotation whose z column is the unit ``normal`` (None, the identity, when it is +z already)."""
    if np.array_equal(normal, (0.0, 0.0, 1.0)):
        return None
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, normal)
    x /= np.linalg.norm(x)
    return np.column_stack((x, np.cross(normal, x), normal))


def _combined(parts):
    """(mass, com, inertia about the com) of rigidly joined parts [(mass, com, inertia about its com)], all in one
    frame (the parallel-axis theorem); one part is returned unchanged."""
    if len(parts) == 1:
        return parts[0]
    mass = sum(m for m, _, _ in parts)
    com = sum(m * c for m, c, _ in parts) / mass if mass > 0.0 else np.zeros(3)
    inertia = np.zeros((3, 3))
    for m, c, tensor in parts:
        d = c - com
        inertia += tensor + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return mass, com, 0.5 * (inertia + inertia.T)


def build(nodes, fail, *, name, gravity, floating_base, joint_damping, source, file_format):
    """The Model3D of ``nodes`` (node 0 the root, parents before children; module docstring).

    ``floating_base`` gives the root a free joint (else it is the ground); ``joint_damping`` adds a joint
    spring-damper for each joint whose file states damping or stiffness. Sets ``model.imported``."""
    # each node's body (-1: the ground) and its frame in that body's frame, x_body = rot @ x_node + pos, with
    # rot None for the identity: a node that heads its own body sits at its frame, so most products are skipped
    body_of = [-1] * len(nodes)
    frames = [None] * len(nodes)
    bodies = []  # per body: dict of the add_body arguments (inertia parts until combined)
    joints = {}
    links = {}
    meshes = {}

    def new_body(body_name, parent, kind, parent_point, child_point, rotation, axis, where, info):
        bodies.append({"name": body_name, "parent": parent, "joint": kind, "parent_point": parent_point,
                       "child_point": child_point, "rotation": rotation, "axis": axis, "parts": [], "where": where,
                       "info": info})
        return len(bodies) - 1

    for k, node in enumerate(nodes):
        if k == 0:
            body, rot, pos = -1, None, ZERO
            if floating_base:
                body = new_body(node.name, -1, "free", ZERO, ZERO, None, None, node.where, None)
        else:
            body = body_of[node.parent]
            rot, pos = _compose(*frames[node.parent], node.rotation, node.position)
            for j, joint in enumerate(node.joints):
                last = j == len(node.joints) - 1
                body_name = node.name if last else f"{node.name}/{joint.info.name}"
                turn = _plane_frame(joint.axis) if joint.kind == "planar" else None
                joint_rot, joint_point = _compose(rot, pos, turn, joint.anchor)
                axis = joint.axis if joint.kind in ("revolute", "prismatic") else None
                if joint.info.ref != 0.0:  # the file's pose is at q = ref: turn or shift the joint frame back
                    if joint.kind == "revolute":
                        joint_rot, _ = _compose(joint_rot, ZERO, axis_rotation(axis, -joint.info.ref), ZERO)
                    else:
                        joint_point = joint_point - joint.info.ref * (axis if joint_rot is None else joint_rot @ axis)
                child_point = joint.anchor if turn is None else turn.T @ joint.anchor
                body = new_body(body_name, body, joint.kind, joint_point, child_point, joint_rot, axis, joint.where,
                                joint.info)
                joint.info.body = body_name
                joints[joint.info.name] = joint.info
                # the next joint (or the node itself) sits in this body's frame: the node frame (same origin),
                # turned for a planar joint
                rot, pos = (None if turn is None else turn.T), ZERO
        body_of[k] = body
        frames[k] = (rot, pos)
        links[node.name] = "ground" if body < 0 else bodies[body]["name"]
        if node.meshes:
            meshes.setdefault(links[node.name], []).extend(node.meshes)
        if body >= 0:
            axes, com = _compose(rot, pos, node.inertia_rotation, node.com)
            inertia = node.inertia
            if axes is not None:
                inertia = axes @ inertia @ axes.T
                inertia = 0.5 * (inertia + inertia.T)
            bodies[body]["parts"].append((node.mass, com, inertia))

    if not bodies:
        fail(None, "no moving bodies: every link is fixed to the root (give floating_base=True to let the root "
             "move)" if file_format == "urdf" else "no moving bodies: every body is welded to the world")
    model = Model3D(gravity=gravity, name=name)
    _add_bodies(model, bodies, fail)
    if joint_damping:
        for b, entry in enumerate(bodies):
            info = entry["info"]
            if info is not None and (info.damping > 0.0 or info.stiffness > 0.0):
                try:
                    rest = None if entry["joint"] == "spherical" else info.spring_rest  # (no ball springs read)
                    model.add_joint_spring_damper(b, stiffness=info.stiffness, damping=info.damping, rest=rest,
                                                  name=info.name)
                except ModelError as err:
                    fail(entry["where"], str(err))
    try:
        model.compile()
    except ModelError as err:
        fail(None, str(err))
    q0 = model.neutral()
    for info in joints.values():
        if info.ref != 0.0:
            q0[model.q_slice(info.body)] = info.ref
    model.imported = ImportedModel(source=source, format=file_format, joints=joints, links=links, meshes=meshes,
                                   q0=q0)
    return model


def _add_bodies(model, bodies, fail):
    """Add ``bodies`` (parents first) with one ``add_bodies`` call per run of one joint type: a 1e5-link chain
    is one vectorised call, not 1e5 Python ones."""
    start = 0
    while start < len(bodies):
        kind = bodies[start]["joint"]
        stop = start + 1
        while stop < len(bodies) and bodies[stop]["joint"] == kind:
            stop += 1
        run = bodies[start:stop]
        combined = [_combined(entry["parts"]) if entry["parts"] else (0.0, np.zeros(3), np.zeros((3, 3)))
                    for entry in run]
        arguments = dict(
            parent=np.array([entry["parent"] for entry in run], dtype=np.int64), joint=kind,
            parent_point=np.array([entry["parent_point"] for entry in run]),
            child_point=np.array([entry["child_point"] for entry in run]),
            mass=np.array([c[0] for c in combined]), com=np.array([c[1] for c in combined]),
            inertia=np.array([c[2] for c in combined]),
            rotation=np.array([np.eye(3) if entry["rotation"] is None else entry["rotation"] for entry in run]),
            names=[entry["name"] for entry in run])
        if kind in ("revolute", "prismatic"):
            arguments["axis"] = np.array([entry["axis"] for entry in run])
        try:
            model.add_bodies(**arguments)
        except ModelError as err:
            where = next((entry["where"] for entry in run if repr(entry["name"]) in str(err)), None)
            fail(where, str(err))
        start = stop
