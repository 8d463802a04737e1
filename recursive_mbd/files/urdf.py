"""URDF import: ``load_urdf`` reads a robot description (the ROS Unified Robot Description Format) into a
``Model3D`` with the standard library's XML parser.

What is read, per element (anything else in the file, ``<material>``, ``<transmission>``, ``<gazebo>``, is not
dynamics and is skipped):

- ``<robot name>``: the model's name.
- ``<link name>``: a node of the tree. ``<inertial>`` (optional: a link without it has no mass) with ``<origin
  xyz rpy>`` (the inertial frame in the link frame, default identity), ``<mass value>`` (required, >= 0) and
  ``<inertia ixx ixy ixz iyy iyz izz>`` (all six required; about the centre of mass in the inertial frame; a
  valid rigid-body inertia: positive semidefinite, principal moments obeying the triangle inequality).
  ``<visual>``/``<collision>`` geometry is ignored by the dynamics; mesh file names are kept for drawings
  (``model.imported.meshes``).
- ``<joint name type>``: ``<parent link>``, ``<child link>`` (required), ``<origin xyz rpy>`` (the joint frame in
  the parent link frame; rpy = roll, pitch, yaw about the fixed x, y, z axes: R = Rz(yaw) Ry(pitch) Rx(roll)),
  ``<axis xyz>`` (in the joint frame, default (1, 0, 0), normalised; a zero axis is refused), ``<limit lower upper
  effort velocity>`` and ``<dynamics damping friction>`` (optional). Types: ``revolute`` and ``continuous``
  (Model3D revolute), ``prismatic``, ``fixed`` (the child link is merged into its parent's body: masses,
  centres of mass and inertias combined by the parallel-axis theorem), ``floating`` (free: q = (x, y, z, w, qx,
  qy, qz)) and ``planar`` (the plane normal to the axis n; q = (x, y, angle) in the plane frame, which is the body
  frame: the joint frame when n is +z, else z = n, x = e cross n normalised with e the joint frame's x axis, or its
  y axis where |n_x| >= 0.9, and y = z cross x).
  ``<calibration>`` and ``<safety_controller>`` are not dynamics and are skipped.
- The root link (the one link that is no joint's child) is the ground, or with ``floating_base=True`` a body on a
  free joint (as Pinocchio's ``buildModelFromUrdf(file, JointModelFreeFlyer())``).

Bodies are named after their links; a link merged by a fixed joint belongs to its parent's body
(``model.imported.links``). Joint limits, effort and velocity limits and Coulomb friction are kept in
``model.imported.joints`` and not applied (Model3D has no joint limits yet); joint damping becomes a joint
spring-damper (``Model3D.add_joint_spring_damper``, tau = -damping v) unless ``joint_damping=False``.

Refused, with a ``FileFormatError`` naming the file and the element: XML that is not well formed, a root element
other than ``<robot>``, a missing or malformed number, a negative mass or damping, an invalid inertia, an unknown
joint type, a zero axis, ``<mimic>`` joints (a coupling Model3D cannot hold; ``independent_mimic=True`` loads
them as independent joints), duplicate link or joint names, a
joint naming an undefined link, a link that is the child of two joints, several root links, a cycle.

The tree is put in order without recursion (a stack), so a chain of 1e5 links loads in seconds.
"""

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ..errors import name_list, unknown_name
from ..model.spatial_fields import _checked_inertias, _unit
from ._import_tree import (
    ZERO,
    ZERO_TENSOR,
    Failure,
    ImportedJoint,
    Joint,
    Node,
    build,
    paused_garbage_collection,
    rpy_matrix,
)
from .model_file import FileFormatError

JOINT_TYPES = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": None,
               "floating": "free", "planar": "planar"}
"""URDF joint type -> Model3D joint type (None: the child is merged into its parent's body)."""


def read_xml(source):
    """(root element, the name messages give the source) of a path or of XML text (a string holding a '<');
    FileFormatError for a file that cannot be read or XML that is not well formed."""
    if isinstance(source, str) and "<" in source:
        label, data = "<string>", source
    else:
        path = Path(source)
        label = str(path)
        if path.exists() and not path.is_file():
            raise FileFormatError(f"{label}: not a regular file")
        try:
            data = path.read_bytes()
        except OSError as err:
            raise FileFormatError(f"{label}: cannot read: {err.strerror}") from None
    try:
        return ET.fromstring(data), label
    except ET.ParseError as err:
        raise FileFormatError(f"{label}: not well-formed XML: {err}") from None


def numbers(fail, where, text, count, what):
    """``count`` finite numbers (a list) from the whitespace-separated ``text`` of an attribute."""
    parts = text.split() if isinstance(text, str) else ()
    if len(parts) == count:
        try:
            values = [float(part) for part in parts]
        except ValueError:
            pass
        else:
            if math.isfinite(sum(values)) or all(math.isfinite(v) for v in values):  # the sum: one test, mostly
                return values
    fail(where, f"{what}: expected {count} finite number{'s' if count > 1 else ''}, got {text!r}")


def number(fail, where, element, attribute, default=None):
    """An attribute holding one finite number (``default`` when absent and a default is given)."""
    text = element.get(attribute)
    if text is None:
        if default is None:
            fail(where, f"<{element.tag}> {attribute}: missing; expected a number")
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        fail(where, f"<{element.tag}> {attribute}: expected a finite number, got {text!r}")
    return value


def children(fail, where, element, tags):
    """{tag: the one child ``tag`` of ``element``, or None} for each of ``tags`` (two of one tag are refused; other
    children are skipped). One pass over the children, not one search per tag: a 1e5-link file reads in seconds."""
    found = dict.fromkeys(tags)
    for child in element:
        if child.tag in found:
            if found[child.tag] is not None:
                fail(where, f"two <{child.tag}> elements in <{element.tag}>; expected at most one")
            found[child.tag] = child
    return found


def _origin(fail, where, origin):
    """(rotation or None for the identity, position (3,)) of an ``<origin xyz rpy>`` element (or of None)."""
    if origin is None:
        return None, ZERO
    xyz = origin.get("xyz")
    rpy = origin.get("rpy")
    values = None if xyz is None else numbers(fail, where, xyz, 3, "<origin> xyz")
    position = ZERO if values is None or values == [0.0, 0.0, 0.0] else np.array(values)
    angles = None if rpy is None else numbers(fail, where, rpy, 3, "<origin> rpy")
    return (None if angles is None or angles == [0.0, 0.0, 0.0] else rpy_matrix(*angles)), position


def _name(fail, element, index):
    """The name attribute of the ``index``-th ``<link>`` or ``<joint>``; refused when missing or empty."""
    name = element.get("name")
    if not name:
        fail(f"{element.tag}[{index}]", "missing name")
    return name


def _link_inertia(fail, where, link):
    """(mass, com, inertia (3, 3) about the com in the inertial frame, its rotation to link axes or None) of a
    ``<link>`` (zeros without ``<inertial>``), and its mesh file names."""
    meshes = [mesh.get("filename") for part in link if part.tag in ("visual", "collision")
              for mesh in part.iter("mesh") if mesh.get("filename")]
    inertial = children(fail, where, link, ("inertial",))["inertial"]
    if inertial is None:
        return 0.0, ZERO, ZERO_TENSOR, None, meshes
    entries = children(fail, where, inertial, ("origin", "mass", "inertia"))
    rotation, com = _origin(fail, where, entries["origin"])
    if entries["mass"] is None:
        fail(where, "<inertial> has no <mass>")
    mass = number(fail, where, entries["mass"], "value")
    if mass < 0.0:
        fail(where, f"<mass> value must be >= 0, got {mass!r}")
    element = entries["inertia"]
    if element is None:
        fail(where, "<inertial> has no <inertia>")
    xx, xy, xz, yy, yz, zz = (number(fail, where, element, key) for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    return mass, com, np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]), rotation, meshes


def _check_inertias(fail, order, tensors):
    """Every link's inertia a rigid body's (``Model3D``'s checks, vectorised): the first bad one names its link."""
    def refuse(mask, message):
        fail(f"link {order[int(np.flatnonzero(mask)[0])]!r}", f"<inertia> {message.removeprefix('inertia ')}")

    _checked_inertias(np.array(tensors), refuse)


def _joint(fail, element, name, links, independent_mimic):
    """(parent link, child link, rotation, position, Joint or None for a fixed joint) of a ``<joint>``."""
    where = f"joint {name!r}"
    kind = element.get("type")
    if kind not in JOINT_TYPES:
        fail(where, f"type: {unknown_name('joint type', kind, JOINT_TYPES)}" if kind else "missing type")
    parts = children(fail, where, element, ("parent", "child", "origin", "axis", "limit", "dynamics", "mimic"))
    if parts["mimic"] is not None and not independent_mimic:
        fail(where, "mimic joints are not supported (Model3D has no coupled joints; independent_mimic=True loads "
             "the joint as an independent one)")
    ends = []
    for tag in ("parent", "child"):
        link = None if parts[tag] is None else parts[tag].get("link")
        if not link:
            fail(where, f"missing <{tag} link=...>")
        if link not in links:
            fail(where, f"<{tag}>: {unknown_name('link', link, links)}")
        ends.append(link)
    rotation, position = _origin(fail, where, parts["origin"])
    model_kind = JOINT_TYPES[kind]
    if model_kind is None:
        return (*ends, rotation, position, None)
    axis = None
    if model_kind in ("revolute", "prismatic", "planar"):
        text = "1 0 0" if parts["axis"] is None else parts["axis"].get("xyz", "1 0 0")
        values = numbers(fail, where, text, 3, "<axis> xyz")
        if not any(values):
            fail(where, f"<axis> xyz must be a non-zero vector, got {text!r}")
        norm = math.sqrt(sum(v * v for v in values))
        axis = np.array(values) / norm if 1e-150 < norm < 1e150 else _unit(values, "<axis> xyz")  # no under/overflow
    info = ImportedJoint(name=name, type=kind, body=ends[1])
    limit = parts["limit"]
    if limit is not None:
        if kind in ("revolute", "prismatic"):
            lower, upper = number(fail, where, limit, "lower", 0.0), number(fail, where, limit, "upper", 0.0)
            if lower > upper:
                fail(where, f"<limit> lower {lower!r} is above upper {upper!r}")
            info.limits = (lower, upper)
        info.effort = number(fail, where, limit, "effort", math.nan)
        info.velocity = number(fail, where, limit, "velocity", math.nan)
        info.effort, info.velocity = (None if math.isnan(x) else x for x in (info.effort, info.velocity))
    dynamics = parts["dynamics"]
    if dynamics is not None:
        info.damping = number(fail, where, dynamics, "damping", 0.0)
        info.friction = number(fail, where, dynamics, "friction", 0.0)
        for key in ("damping", "friction"):
            if getattr(info, key) < 0.0:
                fail(where, f"<dynamics> {key} must be >= 0, got {getattr(info, key)!r}")
        if info.damping > 0.0 and model_kind == "free":
            fail(where, "<dynamics> damping on a floating joint is not supported (Model3D's joint dampers take "
                 "revolute, prismatic and planar joints)")
    return (*ends, rotation, position, Joint(model_kind, ZERO, axis, info, where))


def _tree_order(fail, links, joint_of_child):
    """The link names parents first (depth first, children in file order), built with a stack, not recursion;
    refuses several roots and cycles."""
    roots = [link for link in links if link not in joint_of_child]
    if len(roots) > 1:
        fail(None, f"{len(roots)} root links ({name_list(roots)}): a URDF describes one tree, every link but the "
             "root being the child of one joint (join the others to the tree)")
    if not roots:
        fail(None, "no root link: every link is the child of a joint, so the joints form a cycle")
    children_of = {link: [] for link in links}
    for child, (parent, _) in joint_of_child.items():
        children_of[parent].append(child)
    order = []
    stack = [roots[0]]
    while stack:
        link = stack.pop()
        order.append(link)
        stack.extend(reversed(children_of[link]))
    if len(order) != len(links):
        reached = set(order)
        stray = next(link for link in links if link not in reached)
        fail(f"joint {joint_of_child[stray][1]!r}", f"link {stray!r} is not connected to the root link "
             f"{roots[0]!r}: the joints form a cycle")
    return order


def load_urdf(source, *, floating_base=False, joint_damping=True, independent_mimic=False, gravity=(0.0, 0.0, -9.81)):
    """A ``Model3D`` from a URDF file (a path) or URDF text (a string holding a '<').

    Parameters
    ----------
    source : str or path-like
        The file, or its text.
    floating_base : bool
        Give the root link a free joint (a mobile robot, a humanoid); default False: the root link is the ground.
    joint_damping : bool
        Apply each joint's ``<dynamics damping>`` as a joint spring-damper (default True).
    independent_mimic : bool
        Load a joint with ``<mimic>`` as an independent joint, its coupling dropped (as Pinocchio's parser does by
        default); default False: refused.
    gravity : (3,) array_like
        The model's gravity [m/s^2] (a URDF states none), default (0, 0, -9.81).

    Returns
    -------
    Model3D
        Compiled; bodies named after their links, in depth-first order of the tree (children in file order). Its
        ``imported`` attribute (``ImportedModel``) keeps what the dynamics do not use: the joints as the file states
        them (limits, effort, velocity, friction), which body each link belongs to, mesh file names.

    Raises
    ------
    FileFormatError
        (a ModelError) naming the file and the element; the module docstring lists what is read and refused.
    """
    with paused_garbage_collection():
        return _load_urdf(source, floating_base, joint_damping, independent_mimic, gravity)


def _load_urdf(source, floating_base, joint_damping, independent_mimic, gravity):
    root, label = read_xml(source)
    fail = Failure(label)
    if root.tag != "robot":
        fail(None, f"the root element is <{root.tag}>, not <robot>: not a URDF file")
    links = {}
    for index, element in enumerate(root.findall("link")):
        name = _name(fail, element, index)
        if name in links:
            fail(f"link {name!r}", "defined twice (link names must be unique)")
        links[name] = element
    if not links:
        fail(None, "no <link> elements")
    joints = {}
    joint_of_child = {}
    for index, element in enumerate(root.findall("joint")):
        name = _name(fail, element, index)
        if name in joints:
            fail(f"joint {name!r}", "defined twice (joint names must be unique)")
        parent, child, rotation, position, joint = _joint(fail, element, name, links, independent_mimic)
        if child in joint_of_child:
            fail(f"joint {name!r}", f"link {child!r} is already the child of joint {joint_of_child[child][1]!r} (a "
                 "link has one parent joint)")
        if parent == child:
            fail(f"joint {name!r}", f"link {child!r} is its own parent")
        joints[name] = (parent, rotation, position, joint)
        joint_of_child[child] = (parent, name)
    order = _tree_order(fail, links, joint_of_child)
    index_of = {link: k for k, link in enumerate(order)}
    nodes = []
    tensors = []
    for link in order:
        where = f"link {link!r}"
        mass, com, inertia, inertia_rotation, meshes = _link_inertia(fail, where, links[link])
        tensors.append(inertia)
        if link in joint_of_child:
            parent, rotation, position, joint = joints[joint_of_child[link][1]]
            node = Node(link, index_of[parent], where, rotation, position, [] if joint is None else [joint])
        else:
            node = Node(link, -1, where, None, ZERO, [])
        node.mass, node.com, node.inertia, node.inertia_rotation, node.meshes = (mass, com, inertia,
                                                                                 inertia_rotation, meshes)
        nodes.append(node)
    _check_inertias(fail, order, tensors)
    return build(nodes, fail, name=root.get("name"), gravity=gravity, floating_base=floating_base,
                 joint_damping=joint_damping, source=label, file_format="urdf")
