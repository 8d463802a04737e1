"""MJCF import: ``load_mjcf`` reads a MuJoCo model file into a ``Model3D``, through MuJoCo's own compiler when the
optional ``mujoco`` package is installed (every MJCF feature that ends in bodies, joints and inertias: default
classes, includes, inertias computed from geoms, ...), else through a documented subset read with the standard
library's XML parser.

The MJCF bodies become Model3D bodies of the same names (an unnamed body is ``"unnamed<id>"``, id its MuJoCo body
id); a body without joints is welded to its parent (merged into its parent's body: masses, centres of mass and
inertias combined); a body with several joints gets massless intermediate bodies ``"<body>/<joint>"`` (MuJoCo
composes them in order). Joints: hinge -> revolute, slide -> prismatic, ball -> spherical (q = (w, x, y, z) and v
the angular velocity in the body frame, as MuJoCo's qpos and qvel), free -> free (q = (x, y, z, w, qx, qy, qz) as
MuJoCo's qpos; v = (linear velocity in the world frame, angular velocity in the body frame) as its qvel). The
gravity is the file's ``<option gravity>``. A joint's ``ref`` is kept: the model's q is MuJoCo's qpos (the file's
pose at q = ref), and ``model.imported.q0`` is MuJoCo's qpos0 (refs, free bodies' placements in the file).

Kept and applied: joint ``damping`` (all joints but free) and ``stiffness`` with ``springref`` (hinge and slide) as
joint spring-dampers (``joint_damping=True``). Kept, not applied: ``range`` (``imported.joints[name].limits``, in
radians or metres: Model3D enforces no joint limits yet). Ignored: geoms for contact (Model3D has no contact: the
file's collisions do not happen), sites, cameras, lights, actuators, sensors, keyframes, visual settings. Refused (a
``FileFormatError`` naming the file and the element): what would change the dynamics and Model3D cannot hold: joint
``armature`` (added inertia on the joint) or ``frictionloss``, damping on a free joint, stiffness on a ball joint, a
free joint below another body or beside other joints, equality constraints, tendons with stiffness or damping (the
subset refuses any tendon), deformable (flex) bodies.

The subset (without mujoco, or with ``use_mujoco=False``): ``<mujoco model>``, ``<compiler angle eulerseq>`` (angles
in degrees unless ``angle="radian"``), ``<option gravity>``, nested ``<body name pos quat | axisangle | euler |
xyaxes | zaxis>`` with ``<joint type pos axis damping stiffness springref ref range>`` (type hinge, slide, ball or
free; axis default (0, 0, 1)), ``<freejoint>`` and an explicit ``<inertial pos orientation mass diaginertia |
fullinertia>`` on every body that has geoms (a body with neither inertial nor geoms has no mass). Not in the subset:
``<default>`` classes that set joint or inertial attributes, ``<include>``, ``<frame>``, inertias from geoms,
``<compiler coordinate="global">``. The tree is read without recursion.
"""

import importlib
import math

import numpy as np

from ..model.spatial_fields import _checked_inertias, axis_rotation, quaternion_matrix
from ._import_tree import ZERO, Failure, ImportedJoint, Joint, Node, build, paused_garbage_collection
from .urdf import children, number, numbers, read_xml

JOINT_TYPES = {"hinge": "revolute", "slide": "prismatic", "ball": "spherical", "free": "free"}
"""MJCF joint type -> Model3D joint type."""

_ORIENTATIONS = ("quat", "axisangle", "euler", "xyaxes", "zaxis")


def _unit_vector(fail, where, values, what):
    norm = math.sqrt(sum(v * v for v in values))
    if not norm > 0.0 or not math.isfinite(norm):
        fail(where, f"{what} must be a non-zero vector, got {values}")
    return np.array(values) / norm


def _orientation(fail, where, element, degrees, eulerseq):
    """The rotation (3, 3) of an element's orientation attribute (module docstring), None when it has none."""
    given = [key for key in _ORIENTATIONS if element.get(key) is not None]
    if len(given) > 1:
        fail(where, f"two orientations ({' and '.join(given)}); give one")
    if not given:
        return None
    key = given[0]
    text = element.get(key)
    scale = math.pi / 180.0 if degrees else 1.0
    if key == "quat":
        quat = _unit_vector(fail, where, numbers(fail, where, text, 4, "quat"), "quat")
        return quaternion_matrix(quat)
    if key == "axisangle":
        values = numbers(fail, where, text, 4, "axisangle")
        return axis_rotation(_unit_vector(fail, where, values[:3], "axisangle axis"), values[3] * scale)
    if key == "euler":
        angles = numbers(fail, where, text, 3, "euler")
        rotation = np.eye(3)
        for letter, angle in zip(eulerseq, angles, strict=True):
            turn = axis_rotation(np.eye(3)["xyz".index(letter.lower())], angle * scale)
            rotation = rotation @ turn if letter.islower() else turn @ rotation  # lower case: axes that rotate
        return rotation
    if key == "xyaxes":
        values = numbers(fail, where, text, 6, "xyaxes")
        x = _unit_vector(fail, where, values[:3], "xyaxes x")
        y = np.array(values[3:]) - np.dot(values[3:], x) * x
        y = _unit_vector(fail, where, y.tolist(), "xyaxes y (its part normal to x)")
        return np.column_stack((x, y, np.cross(x, y)))
    z = _unit_vector(fail, where, numbers(fail, where, text, 3, "zaxis"), "zaxis")
    axis = np.cross((0.0, 0.0, 1.0), z)
    sine = float(np.linalg.norm(axis))
    if sine < 1e-14:  # (anti)parallel to z: no turn, or a half turn about x
        return np.eye(3) if z[2] > 0.0 else axis_rotation((1.0, 0.0, 0.0), math.pi)
    return axis_rotation(axis / sine, math.atan2(sine, z[2]))


def _subset_joint(fail, element, name, degrees):
    """The Joint of a ``<joint>`` or ``<freejoint>`` element of the subset."""
    where = f"joint {name!r}"
    kind = "free" if element.tag == "freejoint" else element.get("type", "hinge")
    if kind not in JOINT_TYPES:
        fail(where, f"type: unknown joint type {kind!r}; the subset reads {', '.join(JOINT_TYPES)}")
    for key in ("armature", "frictionloss"):
        if number(fail, where, element, key, 0.0) != 0.0:
            fail(where, f"{key} is not supported (Model3D cannot hold it); remove it or set it to 0")
    anchor = element.get("pos")
    anchor = ZERO if anchor is None else np.array(numbers(fail, where, anchor, 3, "pos"))
    axis = None
    if kind in ("hinge", "slide"):
        axis = _unit_vector(fail, where, numbers(fail, where, element.get("axis", "0 0 1"), 3, "axis"), "axis")
    angle_scale = math.pi / 180.0 if degrees and kind == "hinge" else 1.0
    info = ImportedJoint(name=name, type=kind, body="", damping=number(fail, where, element, "damping", 0.0),
                         stiffness=number(fail, where, element, "stiffness", 0.0),
                         spring_rest=number(fail, where, element, "springref", 0.0) * angle_scale,
                         ref=number(fail, where, element, "ref", 0.0) * angle_scale if kind in ("hinge", "slide")
                         else 0.0)
    limits = element.get("range")
    if limits is not None and element.get("limited", "auto") != "false":
        lower, upper = numbers(fail, where, limits, 2, "range")
        info.limits = (lower * angle_scale, upper * angle_scale)
    return Joint(JOINT_TYPES[kind], anchor, axis, info, where)


def _check_joint(fail, joint, node_parent, count):
    """The checks both routes make of a joint: what Model3D cannot hold is refused."""
    info, where = joint.info, joint.where
    for key in ("damping", "stiffness"):
        if getattr(info, key) < 0.0:
            fail(where, f"{key} must be >= 0, got {getattr(info, key)!r}")
    if info.type == "free":
        if node_parent != 0:
            fail(where, "a free joint must join a body to the world (MuJoCo's rule too)")
        if count > 1:
            fail(where, "a free joint must be its body's only joint")
        if info.damping > 0.0:
            fail(where, "damping on a free joint is not supported (Model3D's joint dampers take the other joints)")
    if info.type in ("free", "ball") and info.stiffness > 0.0:
        fail(where, f"stiffness on a {info.type} joint is not supported")


def _subset_nodes(fail, root):
    """The frame tree (nodes, parents first; node 0 the world) of an MJCF file read by the subset, and its
    gravity; the bodies are visited with a stack, not recursion."""
    compiler = root.find("compiler")
    degrees, eulerseq = True, "xyz"
    if compiler is not None:
        angle = compiler.get("angle", "degree")
        if angle not in ("degree", "radian"):
            fail("<compiler>", f"angle must be 'degree' or 'radian', got {angle!r}")
        degrees = angle == "degree"
        eulerseq = compiler.get("eulerseq", "xyz")
        if len(eulerseq) != 3 or any(c not in "xyzXYZ" for c in eulerseq):
            fail("<compiler>", f"eulerseq must be 3 letters of xyzXYZ, got {eulerseq!r}")
        if compiler.get("coordinate", "local") != "local":
            fail("<compiler>", "coordinate='global' is not in the subset (install mujoco)")
        if compiler.get("inertiafromgeom", "auto") == "true":
            fail("<compiler>", "inertiafromgeom='true' needs mujoco (the subset reads explicit <inertial>)")
    for tag, why in (("include", "includes"), ("equality", "equality constraints change the dynamics"),
                     ("tendon", "tendons can act on the joints"), ("deformable", "deformables")):
        if root.find(tag) is not None and (tag == "include" or len(root.find(tag))):
            fail(f"<{tag}>", f"not in the subset ({why}; install mujoco to read what Model3D can hold)")
    for default in root.iter("default"):
        for tag in ("joint", "inertial"):
            if default.find(tag) is not None:
                fail("<default>", f"<{tag}> defaults are not in the subset (install mujoco to read default classes)")
    option = root.find("option")
    gravity = (0.0, 0.0, -9.81)
    if option is not None and option.get("gravity") is not None:
        gravity = numbers(fail, "<option>", option.get("gravity"), 3, "gravity")
    world = root.find("worldbody")
    if world is None:
        fail(None, "no <worldbody>")
    nodes = [Node("world", -1, "<worldbody>", None, ZERO, [])]
    names = {}
    stack = [(body, 0) for body in reversed(world.findall("body"))]
    joint_names = set()
    while stack:
        element, parent = stack.pop()
        index = len(nodes)
        name = element.get("name") or f"unnamed{index}"
        where = f"body {name!r}"
        if name in names:
            fail(where, "defined twice (body names must be unique)")
        names[name] = index
        for tag in ("frame", "composite", "flexcomp", "include", "replicate"):
            if element.find(tag) is not None:
                fail(where, f"<{tag}> is not in the subset (install mujoco)")
        rotation = _orientation(fail, where, element, degrees, eulerseq)
        position = element.get("pos")
        position = ZERO if position is None else np.array(numbers(fail, where, position, 3, "pos"))
        joints = []
        for k, joint_element in enumerate(e for e in element if e.tag in ("joint", "freejoint")):
            joint_name = joint_element.get("name") or f"{name}/joint{k}"
            if joint_name in joint_names:
                fail(f"joint {joint_name!r}", "defined twice (joint names must be unique)")
            joint_names.add(joint_name)
            joints.append(_subset_joint(fail, joint_element, joint_name, degrees))
        node = Node(name, parent, where, rotation, position, joints)
        for joint in joints:
            _check_joint(fail, joint, parent, len(joints))
        if joints and joints[0].kind == "free":  # the free joint's q places the body: its pos, quat are qpos0
            node.free_placement = (position, _quaternion(np.eye(3) if rotation is None else rotation))
            node.rotation, node.position = None, ZERO
        parts = children(fail, where, element, ("inertial",))
        inertial = parts["inertial"]
        if inertial is None:
            if element.find("geom") is not None:
                fail(where, "no <inertial>: the subset reads explicit inertials (mujoco computes them from geoms)")
        else:
            _subset_inertial(fail, where, inertial, node, degrees, eulerseq)
        node.meshes = [geom.get("mesh") for geom in element.findall("geom") if geom.get("mesh")]
        nodes.append(node)
        stack.extend((child, index) for child in reversed(element.findall("body")))
    return nodes, gravity


def _subset_inertial(fail, where, inertial, node, degrees, eulerseq):
    """Mass, centre of mass and inertia of a body from its ``<inertial>``."""
    node.mass = number(fail, where, inertial, "mass")
    if node.mass < 0.0:
        fail(where, f"<inertial> mass must be >= 0, got {node.mass!r}")
    position = inertial.get("pos")
    if position is None:
        fail(where, "<inertial> pos: missing (MuJoCo requires it)")
    node.com = np.array(numbers(fail, where, position, 3, "<inertial> pos"))
    node.inertia_rotation = _orientation(fail, where, inertial, degrees, eulerseq)
    diagonal, full = inertial.get("diaginertia"), inertial.get("fullinertia")
    if (diagonal is None) == (full is None):
        fail(where, "<inertial> needs one of diaginertia and fullinertia")
    if diagonal is not None:
        node.inertia = np.diag(numbers(fail, where, diagonal, 3, "<inertial> diaginertia"))
    else:
        if node.inertia_rotation is not None:
            fail(where, "<inertial> fullinertia is in the body frame: it takes no orientation")
        xx, yy, zz, xy, xz, yz = numbers(fail, where, full, 6, "<inertial> fullinertia")
        node.inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


_MJ_FREE, _MJ_BALL, _MJ_SLIDE, _MJ_HINGE = 0, 1, 2, 3  # mjtJoint


class _TooDeep(Exception):
    """MuJoCo's XML parser refused the file's nesting depth (a deep chain): the subset reads it without recursion."""


def _mujoco_nodes(fail, mujoco, source):
    """The frame tree of an MJCF file compiled by MuJoCo (``mujoco.MjModel``), and its gravity."""
    try:
        if isinstance(source, str) and "<" in source:
            mj = mujoco.MjModel.from_xml_string(source)
        else:
            mj = mujoco.MjModel.from_xml_path(str(source))
    except ValueError as err:  # MuJoCo's compiler names the element and the line
        message = " ".join(str(err).split())
        if "XML_ELEMENT_DEPTH_EXCEEDED" in message:
            raise _TooDeep(message) from None
        fail(None, f"MuJoCo cannot compile it: {message}")
    for count, what in ((mj.neq, "equality constraints"), (getattr(mj, "nflex", 0), "deformable (flex) bodies")):
        if count:
            fail(None, f"{count} {what}: not supported (they change the dynamics; Model3D cannot hold them)")
    if mj.ntendon and (np.any(mj.tendon_stiffness) or np.any(mj.tendon_damping)):
        fail(None, "tendons with stiffness or damping are not supported (Model3D cannot hold them)")

    def name_of(kind, index, default):
        return mujoco.mj_id2name(mj, kind, index) or default

    nodes = [Node("world", -1, "<worldbody>", None, ZERO, [])]
    qpos0 = {}
    for b in range(1, mj.nbody):
        name = name_of(mujoco.mjtObj.mjOBJ_BODY, b, f"unnamed{b}")
        where = f"body {name!r}"
        node = Node(name, int(mj.body_parentid[b]), where, quaternion_matrix(mj.body_quat[b]),
                    mj.body_pos[b].copy(), [])
        first, count = int(mj.body_jntadr[b]), int(mj.body_jntnum[b])
        for j in range(first, first + count):
            kind = {_MJ_FREE: "free", _MJ_BALL: "ball", _MJ_SLIDE: "slide", _MJ_HINGE: "hinge"}[int(mj.jnt_type[j])]
            joint_name = name_of(mujoco.mjtObj.mjOBJ_JOINT, j, f"{name}/joint{j - first}")
            joint_where = f"joint {joint_name!r}"
            dof, qadr = int(mj.jnt_dofadr[j]), int(mj.jnt_qposadr[j])
            for key, values in (("armature", mj.dof_armature), ("frictionloss", mj.dof_frictionloss)):
                if values[dof] != 0.0:
                    fail(joint_where, f"{key} is not supported (Model3D cannot hold it); remove it or set it to 0")
            info = ImportedJoint(name=joint_name, type=kind, body="", damping=float(mj.dof_damping[dof]),
                                 stiffness=float(mj.jnt_stiffness[j]))
            if kind in ("hinge", "slide"):
                info.spring_rest, info.ref = float(mj.qpos_spring[qadr]), float(mj.qpos0[qadr])
            if mj.jnt_limited[j]:
                info.limits = (float(mj.jnt_range[j, 0]), float(mj.jnt_range[j, 1]))
            axis = mj.jnt_axis[j].copy() if kind in ("hinge", "slide") else None
            node.joints.append(Joint(JOINT_TYPES[kind], mj.jnt_pos[j].copy(), axis, info, joint_where))
            if kind == "free":
                qpos0[b] = mj.qpos0[qadr:qadr + 7].copy()
        for joint in node.joints:
            _check_joint(fail, joint, node.parent, count)
        if b in qpos0:  # the free joint's q places the body in the world
            node.rotation, node.position = None, ZERO
            node.free_placement = (qpos0[b][:3], qpos0[b][3:])
        node.mass = float(mj.body_mass[b])
        node.com = mj.body_ipos[b].copy()
        node.inertia = np.diag(mj.body_inertia[b])
        node.inertia_rotation = quaternion_matrix(mj.body_iquat[b])
        nodes.append(node)
    return nodes, mj.opt.gravity.copy()


def load_mjcf(source, *, use_mujoco=None, joint_damping=True):
    """A ``Model3D`` from an MJCF file (a path) or MJCF text (a string holding a '<').

    Parameters
    ----------
    source : str or path-like
        The file, or its text.
    use_mujoco : bool or None
        Read it through MuJoCo's compiler (True; an ImportError when ``mujoco`` is not installed), through the
        documented subset (False), or the first when ``mujoco`` can be imported (None, the default), falling back
        to the subset for a file nested deeper than MuJoCo's XML parser allows (a chain of more than about a
        thousand bodies), which the subset reads without recursion.
    joint_damping : bool
        Apply joint damping and stiffness as joint spring-dampers (default True).

    Returns
    -------
    Model3D
        Compiled; its ``imported`` attribute (``ImportedModel``) holds the joints as the file states them, which
        body each MJCF body belongs to, the mesh names of its geoms and ``q0``, MuJoCo's qpos0.

    Raises
    ------
    FileFormatError
        (a ModelError) naming the file and the element; the module docstring lists what is read and refused.
    """
    with paused_garbage_collection():
        return _load_mjcf(source, use_mujoco, joint_damping)


def _load_mjcf(source, use_mujoco, joint_damping):
    mujoco = None
    if use_mujoco is not False:
        try:
            mujoco = importlib.import_module("mujoco")
        except ImportError:
            if use_mujoco:
                raise ImportError("load_mjcf(use_mujoco=True) needs mujoco, which is not installed: pip install "
                                  "mujoco") from None
    root, label = read_xml(source)
    fail = Failure(label)
    if root.tag != "mujoco":
        fail(None, f"the root element is <{root.tag}>, not <mujoco>: not an MJCF file")
    nodes = None
    if mujoco is not None:
        try:
            nodes, gravity = _mujoco_nodes(fail, mujoco, source)
        except _TooDeep as err:
            if use_mujoco:
                fail(None, f"MuJoCo cannot compile it: {err} (use_mujoco=None or False reads it with the subset)")
    if nodes is None:
        nodes, gravity = _subset_nodes(fail, root)
        order = [node.name for node in nodes[1:]]

        def refuse(mask, message):
            fail(f"body {order[int(np.flatnonzero(mask)[0])]!r}", f"<inertial> {message.removeprefix('inertia ')}")

        _checked_inertias(np.array([node.inertia for node in nodes[1:]]), refuse)
    model = build(nodes, fail, name=root.get("model"), gravity=gravity, floating_base=False,
                  joint_damping=joint_damping, source=label, file_format="mjcf")
    q0 = model.imported.q0
    for node in nodes:
        if node.free_placement is not None:
            span = model.q_slice(node.name)
            q0[span.start:span.start + 3], q0[span.start + 3:span.stop] = node.free_placement
    return model


def _quaternion(rotation):
    """The unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (Shepperd's method)."""
    m = rotation
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    candidates = [trace, m[0, 0], m[1, 1], m[2, 2]]
    k = int(np.argmax(candidates))
    if k == 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        quat = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    else:
        i, j, l = k - 1, k % 3, (k + 1) % 3
        s = 2.0 * math.sqrt(1.0 + m[i, i] - m[j, j] - m[l, l])
        quat = [0.0] * 4
        quat[0] = (m[l, j] - m[j, l]) / s
        quat[1 + i] = 0.25 * s
        quat[1 + j] = (m[j, i] + m[i, j]) / s
        quat[1 + l] = (m[l, i] + m[i, l]) / s
    quat = np.array(quat)
    return quat if quat[0] >= 0.0 else -quat
