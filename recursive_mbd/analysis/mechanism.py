"""Mechanisms described the way the two-squares tutorial and KINE2D do: bodies placed in the plane, joints between
points.

``Mechanism`` collects bodies with absolute poses (x, y, angle) and joints connecting a point of one body (or the
ground) to a point of another; ``build()`` chooses a spanning tree (breadth first from the ground, so parents come
before children; joints named in ``cut`` are never tree joints), turns the remaining joints into loops, derives
every parent/child point, angle offset and axis, and returns the ``Model`` with the q0 that reproduces the
placement. A body that no joint connects to the ground gets a planar joint (it floats). Loops that the placement
closes only roughly are assembled (``rm.assemble``); a gap beyond ``tol`` is an error naming the joint.
"""

import math
from collections import deque

import numpy as np

from ..errors import ModelError, unknown_name
from ..model._validation import finite_scalar
from ..model.planar import Model, _point, _unit_axis

JOINT_KINDS = ("revolute", "prismatic", "fixed")


def _rotation(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


class Mechanism:
    """A planar mechanism from absolute placements; ``build()`` makes the Model (module docstring).

    Parameters
    ----------
    gravity : (2,) array_like
        [m/s^2], default (0, -9.81).
    name : str, optional
    """

    def __init__(self, gravity=(0.0, -9.81), name=None):
        self.gravity = _point(gravity, "gravity")
        self.name = name
        self.bodies = {}  # name -> dict(mass, inertia, com, pose)
        self.joints = []  # dicts(name, kind, body_a, point_a, body_b, point_b, axis)
        self.elements = []  # (method name, kwargs) replayed on the Model
        self.joint_springs = []  # spring-dampers on named joints, put on the child body of the tree joint

    def add_body(self, name, mass=1.0, inertia=0.0, pose=(0.0, 0.0, 0.0), com=(0.0, 0.0)):
        """A body with its frame at ``pose`` = (x, y, angle) [m, m, rad] in the ground frame; ``com`` in its frame."""
        where = f"body {name!r}"
        if not isinstance(name, str) or not name or name == "ground":
            raise ModelError(f"{where}: a body needs a unique non-empty name other than 'ground'")
        if name in self.bodies:
            raise ModelError(f"{where}: duplicate body name")
        pose = np.asarray(pose, dtype=float)
        if pose.shape != (3,) or not np.all(np.isfinite(pose)):
            raise ModelError(f"{where}: pose must be 3 finite numbers (x, y, angle), got {np.asarray(pose).tolist()}")
        mass = finite_scalar(mass, f"{where}: mass")
        inertia = finite_scalar(inertia, f"{where}: inertia")
        if mass < 0 or inertia < 0:
            raise ModelError(f"{where}: mass and inertia must be >= 0, got {mass}, {inertia}")
        self.bodies[name] = dict(mass=mass, inertia=inertia, com=_point(com, f"{where}: com"), pose=pose)
        return name

    def _body(self, body, where):
        if body == "ground" or body in self.bodies:
            return body
        raise ModelError(f"{where}: {unknown_name('body', body, ['ground', *self.bodies], 'bodies')}")

    def add_joint(self, kind, body_a, point_a, body_b, point_b, axis=None, name=None):
        """A joint between a point of ``body_a`` and a point of ``body_b`` (body frames; the ground's is the ground
        frame). kind: "revolute" (points coincide), "prismatic" (point b slides along ``axis``, given in body a's
        frame, through point a; no relative rotation) or "fixed". Returns the joint's name."""
        label = name if name is not None else f"joint{len(self.joints)}"
        where = f"joint {label!r}"
        if any(j["name"] == label for j in self.joints):
            raise ModelError(f"{where}: duplicate joint name")
        if kind not in JOINT_KINDS:
            raise ModelError(f"{where}: {unknown_name('joint kind', kind, JOINT_KINDS)}")
        a, b = self._body(body_a, f"{where}: body_a"), self._body(body_b, f"{where}: body_b")
        if a == b:
            raise ModelError(f"{where}: body_a and body_b are the same body {a!r}")
        if kind == "prismatic":
            axis = _unit_axis(axis, where)
        elif axis is not None:
            raise ModelError(f"{where}: axis applies to prismatic joints only")
        self.joints.append(dict(name=label, kind=kind, body_a=a, point_a=_point(point_a, f"{where}: point_a"), body_b=b,
                                point_b=_point(point_b, f"{where}: point_b"), axis=axis))
        return label

    def add_spring_damper(self, body_a, point_a, body_b, point_b, stiffness, damping=0.0, rest_length=0.0,
                          name=None):
        """As ``Model.add_spring_damper``; points in the body frames."""
        for body in (body_a, body_b):
            self._body(body, f"spring_damper {name!r}")
        self.elements.append(("add_spring_damper", dict(body_a=body_a, point_a=point_a, body_b=body_b,
                                                        point_b=point_b, stiffness=stiffness, damping=damping,
                                                        rest_length=rest_length, name=name)))

    def add_joint_spring_damper(self, joint, stiffness, damping=0.0, rest=0.0, name=None):
        """A spring-damper on a revolute or prismatic joint (by name), as ``Model.add_joint_spring_damper``; the
        joint must end up in the tree (not be cut)."""
        names = [j["name"] for j in self.joints]
        if joint not in names:
            raise ModelError(f"joint_spring_damper {name!r}: {unknown_name('joint', joint, names)}")
        self.joint_springs.append(dict(joint=joint, stiffness=stiffness, damping=damping, rest=rest, name=name))

    def add_force(self, body, point, force, frame="ground", name=None):
        """As ``Model.add_force``."""
        self._body(body, f"force {name!r}")
        self.elements.append(("add_force", dict(body=body, point=point, force=force, frame=frame, name=name)))

    def add_torque(self, body, torque, name=None):
        """As ``Model.add_torque``."""
        self._body(body, f"torque {name!r}")
        self.elements.append(("add_torque", dict(body=body, torque=torque, name=name)))

    def _spanning_tree(self, cut):
        """Tree joints in breadth-first order from the ground: list of (joint, parent, child)."""
        names = [j["name"] for j in self.joints]
        unknown = sorted(set(cut) - set(names))
        if unknown:
            raise ModelError(f"cut: {unknown_name('joint', unknown[0], names)}")
        placed, order, used = {"ground"}, [], set()
        queue = deque(["ground"])
        while queue:
            node = queue.popleft()
            for joint in self.joints:
                if joint["name"] in used or joint["name"] in cut:
                    continue
                ends = (joint["body_a"], joint["body_b"])
                if node not in ends:
                    continue
                other = ends[1] if ends[0] == node else ends[0]
                if other in placed:
                    continue
                used.add(joint["name"])
                placed.add(other)
                order.append((joint, node, other))
                queue.append(other)
        return order, used, placed

    def build(self, cut=(), tol=1e-3):
        """The Model, q0 and the names of the loop joints.

        Returns
        -------
        model : Model
        q0 : ndarray (nq,)
            The joint coordinates of the placement (assembled when the loops close only to within ``tol``).
        loops : list of str
            Names of the joints that became loops.
        """
        if not self.bodies:
            raise ModelError("the mechanism has no bodies")
        order, used, placed = self._spanning_tree(set(cut))
        pose = {"ground": np.zeros(3), **{name: b["pose"] for name, b in self.bodies.items()}}
        model = Model(gravity=self.gravity, name=self.name)
        q0 = []

        def add(name, parent, joint, parent_point, child_point, axis=None):
            body = self.bodies[name]
            model.add_body(parent=parent, joint=joint, parent_point=parent_point, child_point=child_point,
                           mass=body["mass"], inertia=body["inertia"], com=body["com"],
                           angle=pose[name][2] - pose[parent][2],
                           axis=axis, name=name)

        for joint, parent, child in order:
            forward = joint["body_a"] == parent  # the tree runs from body_a to body_b
            p_point = joint["point_a"] if forward else joint["point_b"]
            c_point = joint["point_b"] if forward else joint["point_a"]
            axis = None
            world_gap = self._world(pose, child, c_point) - self._world(pose, parent, p_point)
            gap = _rotation(pose[parent][2]).T @ world_gap  # in the parent's frame
            if joint["kind"] == "prismatic":  # the axis in the parent's frame; the placement's slide along it
                axis = _rotation(pose[joint["body_a"]][2] - pose[parent][2]) @ joint["axis"]
                q0.append(float(axis @ gap))
                gap = gap - q0[-1] * axis  # what is left must be ~0: the points on one line
            elif joint["kind"] == "revolute":
                q0.append(0.0)
            if np.hypot(*gap) > tol:
                raise ModelError(f"joint {joint['name']!r}: the placement leaves its points {np.hypot(*gap):.6g} m "
                                 f"apart (tolerance {tol:g})")
            add(child, parent, joint["kind"], p_point, c_point, axis)
        for name in self.bodies:  # free bodies float on planar joints from the ground
            if name not in placed:
                add(name, "ground", "planar", (0.0, 0.0), (0.0, 0.0))
                q0.extend((*pose[name][:2], 0.0))
        loops = []
        for joint in self.joints:
            if joint["name"] in used:
                continue
            a, b = joint["body_b"], joint["body_a"]  # loop kinds: point a on the line through point b
            axis = None if joint["kind"] != "prismatic" else joint["axis"]
            model.add_loop(joint["kind"], a, joint["point_b"], b, joint["point_a"], axis=axis,
                           angle=pose[a][2] - pose[b][2], name=joint["name"])
            loops.append(joint["name"])
        for method, kwargs in self.elements:
            getattr(model, method)(**kwargs)
        children = {joint["name"]: child for joint, _, child in order}
        for spring in self.joint_springs:
            if spring["joint"] not in children:
                raise ModelError(f"joint_spring_damper {spring['name']!r}: joint {spring['joint']!r} is a loop (cut), "
                                 "not a tree joint; cut another joint of its loop")
            model.add_joint_spring_damper(children[spring["joint"]], spring["stiffness"], spring["damping"],
                                          spring["rest"], spring["name"])
        model.compile()
        q0 = np.array(q0, dtype=float)
        if loops:
            from ..dynamics.loops import constraints  # noqa: PLC0415

            phi = constraints(model, q0)[0]
            for k, name in enumerate(loops):
                gap = float(np.abs(phi[model.loop_rows[k]:model.loop_rows[k + 1]]).max())
                if gap > tol:
                    raise ModelError(f"joint {name!r}: the placement leaves it open by {gap:.6g} (m or rad; tolerance "
                                     f"{tol:g})")
            if np.abs(phi).max() > 1e-12:
                from .assembly import assemble  # noqa: PLC0415

                q0 = assemble(model, q0)
        return model, q0, loops


    @staticmethod
    def _world(pose, body, point):
        x, y, angle = pose[body]
        return np.array([x, y]) + _rotation(angle) @ np.asarray(point)
