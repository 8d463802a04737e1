"""Spatial (3D) tree models: the builder ``Model3D``, its validation and its packing for the kernels.

``Model3D`` describes a tree of rigid bodies in three dimensions joined by revolute, prismatic, cylindrical,
universal, spherical, planar, free and fixed joints. Its configuration q (nq,) and velocity v (nv,) have different
sizes (a quaternion has 4 coordinates and 3 rates), so ``integrate_configuration`` and ``difference``
(``recursive_mbd.model.configuration``) map between them (as Pinocchio's ``integrate`` / ``difference`` do). The
fields of a body are checked by ``recursive_mbd.model.spatial_fields``.

This module loads neither numba nor scipy: building and packing are numpy only.
"""

import numbers

import numpy as np

from .._checks import arity, counted
from .._kernels.spatial import layout as SL
from ..errors import ModelError, unknown_name
from . import _validation as V
from . import contact as _contact
from ._builder import TreeBuilder
from ._validation import GROUND
from .spatial_fields import (
    _ROTATION_TOL,
    _TRIM_BODIES,
    _BodyTable,
    _checked_inertias,
    _checks_real,
    _default_number,
    _DefaultNames,
    _full_inertia,
    _inertia,
    _packed_inertia,
    _quaternion_matrices,
    _release_freed_memory,
    _rotation,
    _unit,
    _vector3,
)

_LOOP_NAMES = {code: name for name, code in SL.LOOP_CODES.items()}


def _table_column(key, doc):
    """A read-only per-body view of the field ``key`` of a Model3D's body table (no compile needed), documented by
    ``doc``."""
    return property(lambda self: self._column(key), doc=doc)


class Model3D(TreeBuilder):
    """A tree of rigid bodies in three dimensions (the spatial counterpart of ``recursive_mbd.Model``).

    A separate class rather than one ``Model`` with a dimension: a spatial model's configuration and velocity
    sizes differ (nq != nv for spherical and free joints), its packed layout (full inertia tensors, joint frames,
    axes, quaternions) is another, and its kernels are others; a shared class would put a dimension test on the
    planar hot path and a 3D layout in every planar array. Both classes share the builder habits (parents by name or
    index, ``add_body`` arguments, validation messages naming body and argument) and the public dynamics functions
    (``rm.forward_dynamics`` etc. accept either).

    Frames and conventions (docs/conventions.md): every body has a frame; R_i is its body-to-ground rotation and
    p_i its origin in the ground. A joint frame J is the parent frame rotated by ``rotation`` with its origin at
    ``parent_point``; then R_child = R_parent R0 R_j(q), p_child = p_J + R_parent R0 t_j(q) - R_child child_point.

    ==============  ====  ====  ============================  =====================================================
    joint           nq    nv    q                             v
    ==============  ====  ====  ============================  =====================================================
    revolute        1     1     angle about ``axis``          its rate
    prismatic       1     1     slide along ``axis``          its rate
    cylindrical     2     2     (angle, slide) on ``axis``    rates
    universal       2     2     angles about (a1, a2)         rates (R_j = Rot(a1, alpha) Rot(a2, beta))
    spherical       4     3     unit quaternion (w, x, y, z)  relative angular velocity in the CHILD frame
    planar          3     3     (x, y, angle) in the joint    rates (plane: the joint frame's xy plane)
                                frame's xy plane
    free            7     6     (x, y, z, w, qx, qy, qz)      (xdot, ydot, zdot) joint frame, omega child frame
    fixed           0     0
    ==============  ====  ====  ============================  =====================================================

    Gravity (3,) [m/s^2], default (0, 0, -9.81). The first dynamics call (or ``compile()``) freezes the model.
    Force elements (``add_spring_damper``, ``add_joint_spring_damper``, ``add_force``, ``add_torque``) act in
    addition to tau in every dynamics function, as the planar model's do (``_kernels.spatial.elements``).
    """

    def __init__(self, gravity=(0.0, 0.0, -9.81), name=None):
        self.gravity = _vector3(gravity, "gravity")
        self.name = name
        self._table = _BodyTable()
        self._names = {}  # explicit names -> index (a default name "body<index>" is not stored)
        self._explicit = {}  # index -> explicit name
        self._compiled = False
        self._workspace3d = None
        self._element_workspace = None
        self._loops = []
        self._loop_names = {}
        self._elements = []  # force elements (dicts of their validated arguments), in the order added
        self._element_names = {}
        self._surfaces = {}  # contact surfaces by name (add_ground, add_drum)
        self._contacts = []  # contact shapes against them (add_contact)
        self._self_contacts = []  # sets of bodies whose capsules touch each other (add_self_contact)

    # ---- building ------------------------------------------------------------------------------------------------

    def add_body(self, parent="ground", joint="revolute", parent_point=(0.0, 0.0, 0.0),
                 child_point=(0.0, 0.0, 0.0), mass=1.0, inertia=0.0, com=(0.0, 0.0, 0.0), rotation=None, axis=None,
                 name=None):
        """Add a body joined to ``parent``; return its index.

        Parameters
        ----------
        parent : "ground" | -1 | int | str
            The ground, a body index or a body name (added before this body).
        joint : str
            "revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "free" or "fixed".
        parent_point : (3,) array_like
            Joint location in the parent frame [m] (the ground frame for the ground).
        child_point : (3,) array_like
            Joint location in this body's frame [m].
        mass : float
            Mass [kg], >= 0.
        inertia : float, (6,) or (3, 3) array_like
            Inertia tensor about the centre of mass in body axes [kg m^2]: s (s times identity), its entries
            (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) (tensor entries, I = [[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]])
            or the matrix. Symmetric, positive semidefinite, principal moments obeying the triangle inequality.
            Default 0 (a point mass).
        com : (3,) array_like
            Centre of mass in the body frame [m].
        rotation : None, (3, 3) or (4,) array_like
            The joint frame relative to the parent frame at the joint (a rotation matrix, joint-to-parent, or a unit
            quaternion (w, x, y, z)); None is the identity.
        axis : (3,) array_like or pair of them, optional
            Joint axis in the joint frame (normalised here), default (0, 0, 1); for "universal" the pair (a1, a2),
            default ((1, 0, 0), (0, 1, 0)), not parallel. Only for revolute, prismatic, cylindrical, universal.
        name : str, optional
            Unique body name; default ``"body<index>"``.
        """
        if self._compiled:
            raise ModelError(f"cannot add body {name or self._table.size!r}: the model was compiled (it is frozen "
                             "once a dynamics function has used it); build a new Model3D instead")
        index = self._table.size
        label, where = V.body_label(name, index, self._lookup)
        parent_index = self._resolve_parent(parent, where)
        jtype = V.joint_code(joint, where, SL.JOINT_CODES)
        mass = V.nonnegative(mass, f"{where}: mass", echo=True)
        inertia = _inertia(inertia, f"{where}: inertia")
        com = _vector3(com, f"{where}: com")
        parent_point = _vector3(parent_point, f"{where}: parent_point")
        child_point = _vector3(child_point, f"{where}: child_point")
        rotation = _rotation(rotation, f"{where}: rotation")

        a1 = np.array([0.0, 0.0, 1.0])
        a2 = np.zeros(3)
        if jtype == SL.UNIVERSAL:
            if axis is None:
                a1, a2 = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
            else:
                try:
                    first, second = axis
                except (TypeError, ValueError):
                    raise ModelError(f"{where}: axis of a universal joint must be a pair of vectors (a1, a2), "
                                     f"got {axis!r}") from None
                a1 = _unit(first, f"{where}: axis a1")
                a2 = _unit(second, f"{where}: axis a2")
            if np.linalg.norm(np.cross(a1, a2)) < 1e-9:
                raise ModelError(f"{where}: the axes of a universal joint must not be parallel, got "
                                 f"{a1.tolist()} and {a2.tolist()}")
        elif jtype in (SL.REVOLUTE, SL.PRISMATIC, SL.CYLINDRICAL):
            if axis is not None:
                a1 = _unit(axis, f"{where}: axis")
        elif axis is not None:
            raise ModelError(f"{where}: axis applies to revolute, prismatic, cylindrical and universal joints, "
                             f"not {joint!r}")
        self._table.extend(1, dict(parent=parent_index, jtype=jtype, parent_point=parent_point,
                                         child_point=child_point, mass=mass, inertia=_packed_inertia(inertia), com=com,
                                         rotation=rotation, a1=a1, a2=a2))
        if name is not None:
            self._names[label] = index
            self._explicit[index] = label
        return index

    def add_bodies(self, parent, joint="revolute", parent_point=(0.0, 0.0, 0.0), child_point=(0.0, 0.0, 0.0),
                   mass=1.0, inertia=0.0, com=(0.0, 0.0, 0.0), rotation=None, axis=None, names=None):
        """Add k bodies at once (a vectorised ``add_body``, for very long chains); returns their indices (k,).

        ``parent`` (k,) body indices (-1 for the ground), each below the body's own index; ``joint`` one joint type
        for all; every other argument one value for all bodies or one per body: mass (k,), points (k, 3), inertia
        as in ``add_body`` or (k,), (k, 6), (k, 3, 3), rotation (k, 3, 3) or (k, 4), axis (k, 3) (universal:
        (2, 3) or (k, 2, 3)), ``names`` k strings (default ``"body<index>"``). The same checks as ``add_body``;
        an error names the first bad body and the argument.
        """
        if self._compiled:
            raise ModelError("cannot add bodies: the model was compiled (it is frozen); build a new Model3D instead")
        parent = V.batch_parents(parent, width=60)
        k = parent.size
        first = self._table.size
        index = np.arange(first, first + k)
        explicit = names is not None
        names = _DefaultNames(first, k) if names is None else list(names)
        if len(names) != k:
            raise ModelError(f"add_bodies: {len(names)} names for {k} bodies")

        fail = V.batch_failure(names, first)

        def per_body(value, what, shape):
            arr = _checks_real(value, f"add_bodies: {what}")
            try:
                arr = np.broadcast_to(arr, (k, *shape))
            except ValueError:
                raise ModelError(f"add_bodies: {what} must be {shape or 'one number'} or {(k, *shape)}, got shape "
                                 f"{arr.shape}") from None
            finite = np.isfinite(arr).reshape(k, -1).all(axis=1)
            if not finite.all():
                fail(~finite, f"{what} must be finite")
            return arr

        jtype = V.batch_joint_code(joint, SL.JOINT_CODES, parent, index, fail)
        mass = per_body(mass, "mass", ())
        if np.any(mass < 0.0):
            fail(mass < 0.0, "mass must be >= 0")
        points = {key: per_body(value, key, (3,)) for key, value in
                  (("parent_point", parent_point), ("child_point", child_point), ("com", com))}
        inertia_arr = _checks_real(inertia, "add_bodies: inertia")
        if inertia_arr.shape in ((), (6,), (3, 3)):
            tensors = _packed_inertia(_inertia(inertia_arr, "add_bodies: inertia"))
        else:
            if inertia_arr.shape == (k,):
                tensors = inertia_arr[:, None, None] * np.eye(3)
            elif inertia_arr.shape == (k, 6):
                xx, yy, zz, xy, xz, yz = inertia_arr.T
                tensors = np.stack((np.stack((xx, xy, xz), -1), np.stack((xy, yy, yz), -1),
                                    np.stack((xz, yz, zz), -1)), axis=1)
            elif inertia_arr.shape == (k, 3, 3):
                tensors = inertia_arr
            else:
                raise ModelError(f"add_bodies: inertia must be one inertia or (k,), (k, 6), (k, 3, 3) for k = {k}, "
                                 f"got shape {inertia_arr.shape}")
            tensors = _checked_inertias(tensors, fail)
        rotation_arr = None if rotation is None else _checks_real(rotation, "add_bodies: rotation")
        if rotation_arr is None or rotation_arr.shape in ((3, 3), (4,)):
            rotations = _rotation(rotation_arr, "add_bodies: rotation")
        elif rotation_arr.shape == (k, 4):
            norms = np.linalg.norm(rotation_arr, axis=1)
            bad = ~(np.abs(norms - 1.0) <= _ROTATION_TOL)
            if bad.any():
                fail(bad, "rotation: a quaternion must be finite and have unit norm (to 1e-9)")
            rotations = _quaternion_matrices(rotation_arr / norms[:, None])
        elif rotation_arr.shape == (k, 3, 3):
            error = np.abs(np.swapaxes(rotation_arr, 1, 2) @ rotation_arr - np.eye(3)).reshape(k, -1).max(axis=1)
            bad = ~(error <= _ROTATION_TOL)
            if bad.any():
                fail(bad, "rotation is not orthonormal (to 1e-9) or not finite")
            if np.any(np.linalg.det(rotation_arr) < 0.0):
                fail(np.linalg.det(rotation_arr) < 0.0, "rotation is a reflection (det = -1), not a rotation")
            rotations = rotation_arr
        else:
            raise ModelError(f"add_bodies: rotation must be None, (3, 3), (4,), ({k}, 3, 3) or ({k}, 4), got shape "
                             f"{rotation_arr.shape}")
        a1, a2 = np.array([0.0, 0.0, 1.0]), np.zeros(3)
        if jtype in (SL.REVOLUTE, SL.PRISMATIC, SL.CYLINDRICAL, SL.UNIVERSAL):
            if jtype == SL.UNIVERSAL:
                default = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
                axes = per_body(default if axis is None else axis, "axis", (2, 3))
                a1, a2 = axes[:, 0], axes[:, 1]
            else:
                a1 = per_body((0.0, 0.0, 1.0) if axis is None else axis, "axis", (3,))
            for label, a in (("axis", a1), ("axis a2", a2)):
                if jtype != SL.UNIVERSAL and label == "axis a2":
                    continue
                norm = np.linalg.norm(a, axis=1)
                if not np.all(norm > 0.0):
                    fail(~(norm > 0.0), f"{label} must be a non-zero vector")
            a1 = a1 / np.linalg.norm(a1, axis=1)[:, None]
            if jtype == SL.UNIVERSAL:
                a2 = a2 / np.linalg.norm(a2, axis=1)[:, None]
                parallel = np.linalg.norm(np.cross(a1, a2), axis=1) < 1e-9
                if parallel.any():
                    fail(parallel, "the axes of a universal joint must not be parallel")
        elif axis is not None:
            raise ModelError(f"add_bodies: axis applies to revolute, prismatic, cylindrical and universal joints, "
                             f"not {joint!r}")
        if explicit:
            seen = set(self._names) | {"ground"}
            if (len(set(names)) != k or not seen.isdisjoint(names) or not all(isinstance(x, str) and x for x in names)
                    or any(self._default_index(x) is not None for x in names)):
                for i, name in enumerate(names):
                    if (not isinstance(name, str) or not name or name in seen
                            or self._default_index(name) is not None):
                        raise ModelError(f"body {name!r} (index {first + i}): duplicate, reserved or empty name")
                    seen.add(name)
        else:  # default names: none may be an earlier body's explicit name
            for name, owner in self._names.items():
                taken = _default_number(name)
                if taken is not None and first <= taken < first + k:
                    raise ModelError(f"body {name!r} (index {taken}): duplicate name, already used by body {owner}")
        self._table.extend(k, dict(parent=parent, jtype=jtype, mass=mass, inertia=tensors, rotation=rotations,
                                       a1=a1, a2=a2, **points))
        if explicit:
            self._names.update(zip(names, index.tolist(), strict=True))
            self._explicit.update(zip(index.tolist(), names, strict=True))
        return index

    def add_loop(self, kind, body_a, point_a, body_b="ground", point_b=(0.0, 0.0, 0.0), axis=None, axis_b=None,
                 length=None, name=None):
        """Close a loop: a cut joint between a point of ``body_a`` and a point of ``body_b``; returns its index.

        The tree's coordinates stay the generalised coordinates; the loop adds equations phi(q) = 0 enforced by
        Lagrange multipliers (``recursive_mbd.dynamics.spatial_loops``), as ``Model.add_loop`` does in the plane. Either
        body may be "ground" (its point and axis are then in the ground frame); points are in their body's frame.

        Parameters
        ----------
        kind : {"spherical", "revolute", "distance"}
            "spherical": the points coincide (3 equations, ground axes); "revolute": they coincide and ``axis``
            (fixed in body a) stays parallel to ``axis_b`` (fixed in body b) (5 equations: the two components of
            body b's axis across body a's); "distance": |p_a - p_b| = ``length`` > 0, a massless link with ball
            joints at both ends (1 equation).
        body_a, body_b : "ground" | -1 | int | str
            The two bodies (different).
        point_a, point_b : (3,) array_like
            The loop points in their bodies' frames [m].
        axis, axis_b : (3,) array_like, revolute only
            The hinge axis in body a's frame and in body b's frame (normalised here); ``axis_b`` defaults to
            ``axis``. The revolute equations also hold with the axes antiparallel: assemble from a guess near
            the intended branch.
        length : float, distance only
            The link length [m], > 0.
        name : str, optional
            Unique loop name; default ``"loop<index>"``.
        """
        where = f"loop {name if name is not None else f'loop{len(self._loops)}'!r}"
        label, kind_name = V.loop_label(name, where, len(self._loops), self._compiled, self._loop_names, kind,
                                        SL.LOOP_CODES)
        code = SL.LOOP_CODES[kind_name]
        a, point_a, b, point_b = V.two_ends(where, self._loop_body, _vector3, body_a, point_a, body_b, point_b)
        real = np.zeros(SL.N_LOOP_REAL)
        axis_a = None
        real[SL.LPA:SL.LPA + 3] = point_a
        real[SL.LPB:SL.LPB + 3] = point_b
        if code == SL.LOOP_REVOLUTE:
            if axis is None:
                raise ModelError(f"{where}: a revolute loop needs its axis (in body a's frame)")
            axis_a = _unit(axis, f"{where}: axis")
            axis_b = axis_a if axis_b is None else _unit(axis_b, f"{where}: axis_b")
            # two unit vectors orthogonal to axis_a: the hinge keeps body b's axis off both
            helper = np.eye(3)[int(np.argmin(np.abs(axis_a)))]
            n1 = np.cross(axis_a, helper)
            n1 /= np.linalg.norm(n1)
            real[SL.LAXB:SL.LAXB + 3] = axis_b
            real[SL.LN1:SL.LN1 + 3] = n1
            real[SL.LN2:SL.LN2 + 3] = np.cross(axis_a, n1)
        elif axis is not None or axis_b is not None:
            raise ModelError(f"{where}: axis and axis_b apply to revolute loops only, not {kind!r}")
        real[SL.LLENGTH] = V.loop_length(length, code == SL.LOOP_DISTANCE, kind, where, echo=True)
        self._loop_names[label] = len(self._loops)
        self._loops.append((code, a, b, real, axis_a))  # axis_a: the hinge axis as given (normalised), for loop()
        return len(self._loops) - 1

    # ---- force elements --------------------------------------------------------------------------------------------

    def _element_body(self, body, where, allow_ground=False):
        """An element's body: a name or index of a body added before, or (``allow_ground``) "ground" / -1."""
        if V.is_ground(body):
            if allow_ground:
                return GROUND
            raise ModelError(f"{where}: must be a body, not the ground")
        return V.prefixed_body_index(body, where, self.body_index)

    def _either_body(self, body, where):
        """An element's body: a body or the ground."""
        return self._element_body(body, where, allow_ground=True)

    def _element_label(self, kind, name):
        label = name if name is not None else f"{kind}{len(self._elements)}"
        if not isinstance(label, str) or not label:
            raise TypeError(f"element name must be a non-empty string, got {name!r}")
        where = f"{kind} {label!r}"
        if self._compiled:
            raise ModelError(f"cannot add {where}: the model was compiled (it is frozen once a dynamics function "
                             "has used it); add elements before the first use")
        if label in self._element_names:
            raise ModelError(f"{where}: duplicate element name")
        return label, where

    def _add_element(self, kind, label, **data):
        self._element_names[label] = len(self._elements)
        self._elements.append(dict(kind=kind, name=label, **data))
        return len(self._elements) - 1

    def add_spring_damper(self, body_a, point_a, body_b, point_b, stiffness, damping=0.0, rest_length=0.0,
                          preload=0.0, name=None):
        """A linear spring and damper between a point of ``body_a`` and a point of ``body_b``; returns its index.

        As ``Model.add_spring_damper`` in three dimensions. Either body may be "ground" (its point is then in the
        ground frame); points are in their body's frame [m]. With d = p_b - p_a, L = |d| and u = d / L, the tension
        f = preload + k (L - L0) + c dL/dt pulls point a by +f u and point b by -f u; its potential energy is
        preload L + k (L - L0)^2 / 2 (``rm.energy``), its damper dissipates c (dL/dt)^2. At L = 0 the direction is
        undefined: as in the two-squares tutorial the damper acts on the whole relative velocity, F_b = -c (v_b - v_a),
        and the spring and preload not at all.

        Parameters
        ----------
        body_a, body_b : "ground" | -1 | int | str
            The two bodies (different).
        point_a, point_b : (3,) array_like
            The attachment points in their bodies' frames [m].
        stiffness : float
            k [N/m], >= 0.
        damping : float
            c [N s/m], >= 0.
        rest_length : float
            Free length L0 [m], >= 0.
        preload : float
            Tension at the free length [N] (any sign: negative pushes), e.g. a gas spring's force.
        name : str, optional
            Unique element name; default ``"spring_damper<index>"``.
        """
        label, where = self._element_label("spring_damper", name)
        a, point_a, b, point_b = V.two_ends(where, self._either_body, _vector3, body_a, point_a, body_b, point_b)
        return self._add_element(
            "spring_damper", label, body_a=a, point_a=point_a, body_b=b, point_b=point_b,
            stiffness=V.nonnegative(stiffness, f"{where}: stiffness", echo=True),
            damping=V.nonnegative(damping, f"{where}: damping", echo=True),
            rest=V.nonnegative(rest_length, f"{where}: rest_length", echo=True),
            preload=V.finite_scalar(preload, f"{where}: preload", echo=True))

    def add_joint_spring_damper(self, body, stiffness, damping=0.0, rest=None, name=None):
        """A spring and damper on the coordinates of ``body``'s joint to its parent; returns its index.

        Revolute, prismatic, cylindrical, universal and planar joints: on each coordinate d of the joint,
        tau_d = -k_d (q_d - rest_d) - c_d v_d (torsional [N m/rad, N m s/rad] on angles, linear [N/m, N s/m] on
        slides); ``stiffness``, ``damping`` and ``rest`` are one number for every coordinate or one per coordinate
        (in the joint's q order: cylindrical (angle, slide), planar (x, y, angle)).

        Spherical joints: one isotropic rotational spring-damper on the rotation vector phi of the relative
        quaternion rest^-1 (x) quat (the shorter rotation, |phi| <= pi): potential k |phi|^2 / 2 and
        tau = -k phi - c omega (child frame; -k phi is exactly the generalised force of that potential). The
        spring force flips direction where the joint passes a half turn from ``rest`` (its potential is continuous
        there). ``stiffness`` and ``damping`` are numbers, ``rest`` a unit quaternion (w, x, y, z) (default the
        identity).

        Free and fixed joints take none (ModelError): join the body by point-to-point spring-dampers instead.
        """
        label, where = self._element_label("joint_spring_damper", name)
        index = self._element_body(body, f"{where}: body")
        jtype = int(self._table.column("jtype")[index])
        joint = SL.JOINT_NAMES[jtype]
        if jtype in (SL.FREE, SL.FIXED):
            raise ModelError(f"{where}: body {self.names[index]!r} has a {joint} joint; joint springs need a "
                             "revolute, prismatic, cylindrical, universal, planar or spherical joint")
        if jtype == SL.SPHERICAL:
            k = V.nonnegative(stiffness, f"{where}: stiffness", echo=True)
            c = V.nonnegative(damping, f"{where}: damping", echo=True)
            quat = np.array([1.0, 0.0, 0.0, 0.0])
            if rest is not None:
                quat = _checks_real(rest, f"{where}: rest")
                if quat.shape != (4,) or not np.all(np.isfinite(quat)):
                    raise ModelError(f"{where}: rest of a spherical joint must be a unit quaternion (w, x, y, z), got "
                                     f"{quat.tolist()}")
                norm = float(np.linalg.norm(quat))
                if abs(norm - 1.0) > _ROTATION_TOL:
                    raise ModelError(f"{where}: rest must be a unit quaternion (to 1e-9), got norm {norm!r}")
                quat = quat / norm
            return self._add_element("joint_spring_damper", label, body_a=index, stiffness=np.array([k]),
                                     damping=np.array([c]), rest=quat)
        ndof = SL.JOINT_SIZES[jtype][1]

        def per_dof(value, what, nonnegative):
            arr = _checks_real(0.0 if value is None else value, f"{where}: {what}")
            if arr.shape not in ((), (ndof,)):
                raise ModelError(f"{where}: {what} must be one number or {ndof} (one per coordinate of the {joint} "
                                 f"joint of body {self.names[index]!r}), got shape {arr.shape}")
            arr = np.broadcast_to(arr, (ndof,)).astype(np.float64)
            if not np.all(np.isfinite(arr)):
                raise ModelError(f"{where}: {what} must be finite, got {arr.tolist()}")
            if nonnegative and np.any(arr < 0.0):
                raise ModelError(f"{where}: {what} must be >= 0, got {arr.tolist()}")
            return arr

        return self._add_element("joint_spring_damper", label, body_a=index,
                                 stiffness=per_dof(stiffness, "stiffness", True),
                                 damping=per_dof(damping, "damping", True), rest=per_dof(rest, "rest", False))

    def _applied(self, kind, body, value, frame, where):
        """(body index, value, arity) of a force or torque: the value (3,) and arity 0, or the function and its
        arity (1: f(t), 3: f(t, q, v); a TypeError naming the element otherwise)."""
        index = self._element_body(body, f"{where}: body")
        if frame not in ("ground", "body"):
            raise ModelError(f"{where}: frame must be 'ground' or 'body', got {frame!r}")
        if callable(value):
            return index, value, arity(value, f"{where}: {kind}")
        return index, _vector3(value, f"{where}: {kind}"), 0

    def add_force(self, body, point, force, frame="ground", name=None):
        """A force applied at a point of a body; returns its index.

        Parameters
        ----------
        body : int or str
            The body (not the ground).
        point : (3,) array_like
            Point of application in the body frame [m].
        force : (3,) array_like or callable
            (Fx, Fy, Fz) [N], constant, a function of time ``force(t) -> (3,)``, or a function of the state
            ``force(t, q, v) -> (3,)`` (q (nq,) with unit quaternions, v (nv,): a controller, a contact or a spring
            written by the user). A function is evaluated at every call of the dynamics (``rm.forward_dynamics``
            and the others, at their t, q, v) and at every stage and Newton iterate of ``rm.simulate``, every
            method. A numba-compiled function (``@numba.njit``) of a model whose functions are all compiled is
            called inside the compiled time loop, without returning to Python (it must return a float64 array of
            3 or a tuple of 3 floats, and must not change q and v); a Python one through a callback (a few us per
            call). Its generalised forces are the virtual power of the force at the moving point, J^T F, in one
            O(N) tip-to-base pass (``_kernels.spatial.elements``); its power F . v_point is the run's
            ``applied_work``. One that raises or returns the wrong shape or non-finite values stops a run with
            SimulationError naming the element (StateError from the per-call functions).
        frame : {"ground", "body"}
            Axes the components are given in ("body": the force turns with the body, a follower force).
        """
        label, where = self._element_label("force", name)
        index, value, nargs = self._applied("force", body, force, frame, where)
        return self._add_element("force", label, body_a=index, point_a=_vector3(point, f"{where}: point"),
                                 value=value, frame=frame, arity=nargs)

    def add_torque(self, body, torque, frame="ground", name=None):
        """A pure torque (Tx, Ty, Tz) [N m] on a body, in ground or body axes (``frame``): constant, a function of
        time ``torque(t) -> (3,)`` or of the state ``torque(t, q, v) -> (3,)`` (compiled or Python, as the
        functions of ``add_force``); returns its index."""
        label, where = self._element_label("torque", name)
        index, value, nargs = self._applied("torque", body, torque, frame, where)
        return self._add_element("torque", label, body_a=index, value=value, frame=frame, arity=nargs)

    # ---- contact --------------------------------------------------------------------------------------------------

    def add_ground(self, name="floor", point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), extent=None, tangent=None,
                   body="ground"):
        """A flat contact surface: the half-space below the plane through ``point`` with outward ``normal`` is solid,
        over a rectangle of the plane only (a table top with edges); returns its name (for ``add_contact``).

        Parameters
        ----------
        point, normal : (3,) array_like
            A point of the plane [m] and its outward normal (normalised here), in ``body``'s frame (the ground's by
            default).
        extent : ((lo1, hi1), (lo2, hi2)), optional
            The rectangle, from ``point`` along the tangent t1 and along t2 = normal x t1 [m]; unbounded by default
            (a bound may be +-inf). A shape whose centre is outside it does not touch (it falls off the edge).
        tangent : (3,) array_like, optional
            The direction of t1 (projected onto the plane); default the x axis of ``body``'s frame projected (its y
            axis for a normal along x). For the default normal, t1 = x and t2 = y.
        body : str or int
            The body that carries the surface; "ground" for a fixed one.
        """
        where = f"ground {name!r}"
        point, normal, tangent, extent = _contact.plane_data_3d(point, normal, tangent, extent, where, _vector3)
        return _contact.surface_entry(self, "ground", name, body, point=point, normal=normal, tangent=tangent,
                                      extent=extent)

    def add_drum(self, name, center, radius, axis, body="ground"):
        """A cylindrical contact surface (a drum, a pulley, a rounded edge): the solid cylinder of ``radius`` [m]
        about the infinite axis through ``center`` along ``axis`` (normalised here), in ``body``'s frame (a fixed
        one by default, or a body's, which then carries it); returns its name."""
        where = f"drum {name!r}"
        center = _vector3(center, f"{where}: center")
        radius = _contact._positive(radius, f"{where}: radius")
        axis = _contact._unit_vector(_vector3(axis, f"{where}: axis"), where, "axis")
        return _contact.surface_entry(self, "drum", name, body, center=center, radius=radius, axis=axis)

    def add_contact(self, body, surface, *, point=(0.0, 0.0, 0.0), radius=0.0, segment=None, stiffness,
                    exponent=1.5, restitution=1.0, friction=0.0, tangential_stiffness=None, tangential_damping=None,
                    min_impact_speed=1.0, name=None):
        """Let a shape of ``body`` (or of each body of a list) touch ``surface``; returns the contacts' indices.

        ``Model.add_contact`` in three dimensions, with the same law and parameters: a sphere of ``radius`` [m]
        about ``point`` (body frame; radius 0: a point), or a capsule, ``segment=((x0, y0, z0), (x1, y1, z1))``
        with ``radius`` > 0 (two rows against a plane, its end spheres; one against a drum, its axis' point nearest
        the drum's axis). The normal force is Hunt and Crossley's k d^p (1 + (C / v_in) d'), C set from
        ``restitution``; friction is Coulomb's with a stick phase: a tangential spring and damper (a vector in the
        tangent plane) from anchors laid where the contact was made, slipping at ``friction`` times the normal force
        (``recursive_mbd._kernels.spatial.contact``). Every numba method of ``rm.simulate`` integrates them
        (generalized_alpha and bdf with their stiffness and damping in the Newton matrix); the fixed-step methods
        stop with SimulationError at an impact that their step does not resolve.
        """
        return _contact.contact_entries(self, body, surface, point, radius, segment, stiffness, exponent,
                                        restitution, friction, tangential_stiffness, tangential_damping,
                                        min_impact_speed, name, _vector3)

    def add_self_contact(self, bodies, *, point=(0.0, 0.0, 0.0), radius, segment=None, stiffness, exponent=1.5,
                         restitution=1.0, impact_speed=1.0, friction=0.0, tangential_damping=None, name=None):
        """Let the bodies of a set touch each other (a chain piling on itself); returns the set's index.

        ``Model.add_self_contact`` in three dimensions, with the same law and parameters: each body carries a
        capsule, the ``segment`` ``((x0, y0, z0), (x1, y1, z1))`` (body frame) with ``radius`` about it, or a sphere
        of ``radius`` about ``point``. Bodies joined parent to child do not collide. The pairs that touch are found
        at every evaluation (sort and sweep of the bounding boxes along x: O(N) for a set that moves little between
        evaluations, never all pairs) and pushed apart at one point, the middle of the overlap on the line of the
        axes' closest points (``recursive_mbd._kernels.spatial.pairs``, which says how axes lying side by side are
        handled). No pair keeps state: the normal damping is set so that impacts at ``impact_speed`` [m/s] rebound
        with ``restitution``, and friction is regularised by ``tangential_damping`` [N s/m] (default: critical
        damping of ``add_contact``'s default stick stiffness): a pair pressed below the friction limit creeps at
        F_t / c_t instead of sticking. Every numba method of ``rm.simulate`` integrates them; generalized_alpha and
        bdf with their loads in the residual and their stiffness left out of the Newton matrix (lagged).
        """
        return _contact.self_contact_entries(self, bodies, point, radius, segment, stiffness, exponent, restitution,
                                             impact_speed, friction, tangential_damping, name, _vector3)

    @property
    def ncontacts(self):
        """Number of contact rows (``contact_int``): a capsule on a plane is two, every other contact one."""
        return self._require_compiled().contact_int.shape[0]

    @property
    def has_contacts(self):
        """True when the model has contacts: rows (``add_contact``) or self-contact sets (``add_self_contact``)."""
        return bool(self.ncontacts or self.shape_int.shape[0])

    def _pack_elements(self):
        """Elements into elem_int / elem_real (``spatial.layout``, "force elements"); the functions of time or
        state get 3 slots each of the input vector u: ``element_functions`` (slot, width, function, name, arity:
        1 for f(t), 3 for f(t, q, v))."""
        ne = len(self._elements)
        elem_int = np.full((ne, SL.N_EINT), -1, dtype=np.int64)
        elem_real = np.zeros((ne, SL.N_EREAL))
        functions = []
        slot = 0
        codes = {name: code for code, name in SL.ELEM_NAMES.items()}
        for e, el in enumerate(self._elements):
            kind = el["kind"]
            elem_int[e, SL.ETYPE] = codes[kind]
            elem_int[e, SL.EBODY_A] = el["body_a"]
            elem_int[e, SL.EFRAME] = 1 if el.get("frame") == "body" else 0
            row = elem_real[e]
            if kind == "spring_damper":
                elem_int[e, SL.EBODY_B] = el["body_b"]
                row[SL.EPA:SL.EPA + 3] = el["point_a"]
                row[SL.EPB:SL.EPB + 3] = el["point_b"]
                row[[SL.EK, SL.EC, SL.EREST, SL.EPRELOAD]] = el["stiffness"], el["damping"], el["rest"], el["preload"]
            elif kind == "joint_spring_damper":
                nk = el["stiffness"].size
                row[SL.EJK:SL.EJK + nk] = el["stiffness"]
                row[SL.EJC:SL.EJC + nk] = el["damping"]
                row[SL.EJREST:SL.EJREST + el["rest"].size] = el["rest"]
            else:
                if kind == "force":
                    row[SL.EPOINT:SL.EPOINT + 3] = el["point_a"]
                if callable(el["value"]):
                    elem_int[e, SL.ESLOT] = slot
                    functions.append((slot, 3, el["value"], el["name"], el["arity"]))
                    slot += 3
                else:
                    row[SL.EVALUE:SL.EVALUE + 3] = el["value"]
        for arr in (elem_int, elem_real):
            arr.flags.writeable = False
        self.elem_int = elem_int
        self.elem_real = elem_real
        self.n_element_inputs = slot
        self.element_functions = tuple(functions)

    def _loop_body(self, body, where):
        """A loop's body: "ground" | -1 | an index | a name of a body added before (ModelError naming it)."""
        if isinstance(body, str) and body != "ground" and self._lookup(body) is None:
            raise ModelError(f"{where}: {unknown_name('body', body, ['ground', *self.names], 'bodies')}")
        if isinstance(body, numbers.Integral) and not isinstance(body, (bool, np.bool_)) and body != GROUND:
            if not 0 <= int(body) < self._table.size:
                raise ModelError(f"{where}: unknown body index {int(body)}; the model has {self._table.size} bodies")
        return self._resolve_parent(body, where)

    def loop(self, loop):
        """The description of one loop (name or index) as ``add_loop`` stored it, a dict of copies: name, kind,
        body_a, body_b (indices, -1 for the ground), point_a, point_b, and axis, axis_b (unit, revolute loops;
        else None), length (distance loops; else None)."""
        if isinstance(loop, str):
            if loop not in self._loop_names:
                raise ModelError(unknown_name("loop", loop, self._loop_names))
            k = self._loop_names[loop]
        elif isinstance(loop, (bool, np.bool_)) or not isinstance(loop, numbers.Integral):
            raise TypeError(f"loop must be a name or an index, got {loop!r}")
        elif not -len(self._loops) <= int(loop) < len(self._loops):
            raise ModelError(f"loop index {int(loop)} out of range for {len(self._loops)} loops")
        else:
            k = int(loop) % len(self._loops)
        code, a, b, real, axis_a = self._loops[k]
        revolute = code == SL.LOOP_REVOLUTE
        return {"name": self.loop_names[k], "kind": _LOOP_NAMES[code], "body_a": a,
                "point_a": real[SL.LPA:SL.LPA + 3].copy(), "body_b": b, "point_b": real[SL.LPB:SL.LPB + 3].copy(),
                "axis": axis_a.copy() if revolute else None,
                "axis_b": real[SL.LAXB:SL.LAXB + 3].copy() if revolute else None,
                "length": float(real[SL.LLENGTH]) if code == SL.LOOP_DISTANCE else None}

    @property
    def nconstraints(self):
        """Number of loop equations m (rows of phi and J)."""
        return sum(SL.LOOP_ROWS[code] for code, *_ in self._loops)

    def _default_index(self, label):
        """The index of the body whose default name is ``label`` (it was given none), else None."""
        k = _default_number(label)
        if k is None or k >= self._table.size or k in self._explicit:
            return None
        return k

    def _lookup(self, label):
        """The index of the body named ``label`` (explicitly or by default), else None."""
        index = self._names.get(label)
        return index if index is not None else self._default_index(label)

    def _resolve_parent(self, parent, where):
        return V.resolve_parent(parent, where, self._lookup, self._table.size, lambda: self.names)

    # ---- packing ---------------------------------------------------------------------------------------------------

    def compile(self):
        """Freeze the model and pack it into the kernels' arrays (``body_int``, ``body_real``); returns self."""
        if self._compiled:
            return self
        table = self._table
        n = table.size
        if not n:
            raise ModelError("the model has no bodies")
        jtype = table.column("jtype")
        sizes = np.array([SL.JOINT_SIZES[code] for code in range(len(SL.JOINT_SIZES))], dtype=np.int64)
        # the packed arrays are filled column by column, so that compiling a 1e6-body chain adds no (n, ...)
        # temporaries to the packed arrays themselves (benchmarks/spatial_memory.py)
        body_int = np.empty((n, SL.N_INT), dtype=np.int64)
        body_int[:, SL.PARENT] = table.column("parent")
        body_int[:, SL.JTYPE] = jtype
        nqj, nvj = body_int[:, SL.NQJ], body_int[:, SL.NVJ]
        nqj[:] = sizes[jtype, 0]
        nvj[:] = sizes[jtype, 1]
        qidx, vidx = body_int[:, SL.QIDX], body_int[:, SL.VIDX]
        qidx[0] = vidx[0] = 0
        np.cumsum(nqj[:-1], out=qidx[1:])
        np.cumsum(nvj[:-1], out=vidx[1:])
        body_real = np.zeros((n, SL.N_REAL))
        m, c = table.column("mass"), table.column("com")
        body_real[:, SL.MASS] = m
        np.multiply(m[:, None], c, out=body_real[:, SL.MCOM:SL.MCOM + 3])
        body_real[:, SL.IC:SL.IC + 6] = table.column("inertia")  # about the centre of mass, as given
        body_real[:, SL.R0:SL.R0 + 9] = table.column("rotation").reshape(n, 9)
        body_real[:, SL.PP:SL.PP + 3] = table.column("parent_point")
        body_real[:, SL.CP:SL.CP + 3] = table.column("child_point")
        body_real[:, SL.A1:SL.A1 + 3] = table.column("a1")
        body_real[:, SL.A2:SL.A2 + 3] = table.column("a2")
        body_int.flags.writeable = False
        body_real.flags.writeable = False
        self.body_int = body_int
        self.body_real = body_real
        self._nq = int(nqj.sum())
        self._nv = int(nvj.sum())
        self._max_nv = max(1, int(nvj.max()))
        self._coordinate_maps = None  # _quat_body, ... (below), made on first use: forward dynamics needs none
        self.gravity = np.ascontiguousarray(self.gravity)
        self.gravity.flags.writeable = False
        rows = np.cumsum([0] + [SL.LOOP_ROWS[code] for code, *_ in self._loops]).astype(np.int64)
        loop_int = np.zeros((len(self._loops), SL.N_LOOP_INT), dtype=np.int64)
        loop_real = np.zeros((len(self._loops), SL.N_LOOP_REAL))
        for k, (code, a, b, real, _) in enumerate(self._loops):
            loop_int[k] = (code, a, b, rows[k])
            loop_real[k] = real
        for arr in (loop_int, loop_real, rows):
            arr.flags.writeable = False
        self.loop_int = loop_int  # (nloops, N_LOOP_INT): kind, body a, body b, first row
        self.loop_real = loop_real  # (nloops, N_LOOP_REAL): points, revolute axes, distance length
        self.loop_rows = rows  # (nloops + 1,): loop k owns rows loop_rows[k]:loop_rows[k + 1] of phi
        self._pack_elements()
        self.contact_int, self.contact_real, self.contact_names = _contact.pack3d(self)
        self.shape_int, self.shape_real = _contact.pack_self_contacts3d(self)
        # the table's columns that the packed arrays hold unchanged become views of them (read-only: the model is
        # frozen), so that a compiled model keeps one copy of them; com stays (the packed arrays hold m c)
        table.share({"parent": body_int[:, SL.PARENT], "jtype": body_int[:, SL.JTYPE], "mass": body_real[:, SL.MASS],
                     "inertia": body_real[:, SL.IC:SL.IC + 6],
                     "rotation": body_real[:, SL.R0:SL.R0 + 9].reshape(n, 3, 3),
                     "parent_point": body_real[:, SL.PP:SL.PP + 3], "child_point": body_real[:, SL.CP:SL.CP + 3],
                     "a1": body_real[:, SL.A1:SL.A1 + 3], "a2": body_real[:, SL.A2:SL.A2 + 3]})
        if n >= _TRIM_BODIES:
            _release_freed_memory()
        self._compiled = True
        return self

    def _coordinates(self):
        """(quat_body, quat_q, quat_v, euclid_q, euclid_v) of the compiled model, made on first use (a 1e6-body
        spherical chain's are 24 MB that its forward dynamics does not read): the bodies whose joint has a
        quaternion (spherical, free), the index of each quaternion in q and of its angular rates in v, and the
        indices in q and in v of the Euclidean coordinates (a joint's Euclidean coordinates and rates correspond
        one to one, in the same order)."""
        if self._coordinate_maps is None:
            jtype = self.body_int[:, SL.JTYPE]
            quaternion = (jtype == SL.SPHERICAL) | (jtype == SL.FREE)
            shift = np.where(jtype[quaternion] == SL.FREE, 3, 0)
            quat_body = np.flatnonzero(quaternion).astype(np.int64)
            quat_q = (self.body_int[quaternion, SL.QIDX] + shift).astype(np.int64)
            quat_v = (self.body_int[quaternion, SL.VIDX] + shift).astype(np.int64)
            euclid_q = np.ones(self._nq, dtype=bool)
            euclid_v = np.ones(self._nv, dtype=bool)
            euclid_q[(quat_q[:, None] + np.arange(4)).ravel()] = False
            euclid_v[(quat_v[:, None] + np.arange(3)).ravel()] = False
            self._coordinate_maps = (quat_body, quat_q, quat_v, np.flatnonzero(euclid_q), np.flatnonzero(euclid_v))
        return self._coordinate_maps

    _quat_body = property(lambda self: self._coordinates()[0])
    _quat_q = property(lambda self: self._coordinates()[1])
    _quat_v = property(lambda self: self._coordinates()[2])
    _euclid_q = property(lambda self: self._coordinates()[3])
    _euclid_v = property(lambda self: self._coordinates()[4])

    # ---- properties ----------------------------------------------------------------------------------------------

    @property
    def nbodies(self):
        """Number of bodies (the ground not counted)."""
        return self._table.size

    @property
    def nq(self):
        """Size of the configuration q."""
        return self._require_compiled()._nq

    @property
    def nv(self):
        """Size of the velocity v (and of vdot, tau)."""
        return self._require_compiled()._nv

    @property
    def names(self):
        """Body names in index order (a body added without a name is ``"body<index>"``, generated here)."""
        explicit = self._explicit
        return [explicit.get(i, f"body{i}") for i in range(self._table.size)]

    body_names = names

    @property
    def parents(self):
        """Parent index of each body (-1: the ground), (nbodies,) int64."""
        return self._table.column("parent").copy()

    @property
    def joint_types(self):
        """Joint type name of each body's joint to its parent."""
        return [SL.JOINT_NAMES[code] for code in self._table.column("jtype").tolist()]

    # ---- read-only per-body views (as the planar Model's body_mass, body_com, ...; no compile needed) ----------------

    def _column(self, key):
        view = self._table.column(key).view()
        view.flags.writeable = False
        return view

    body_parent = _table_column("parent", "Parent index of each body, -1 for the ground, (nbodies,) int64 "
                                "(read-only view).")
    body_mass = _table_column("mass", "Mass of each body [kg], (nbodies,) (read-only view).")

    @property
    def body_inertia(self):
        """Inertia tensor of each body about its centre of mass, body axes [kg m^2], (nbodies, 3, 3) (read-only;
        made from the 6 entries the model keeps)."""
        tensors = _full_inertia(self._table.column("inertia"))
        tensors.flags.writeable = False
        return tensors

    body_com = _table_column("com", "Centre of mass of each body in its frame [m], (nbodies, 3) (read-only view).")
    joint_parent_point = _table_column("parent_point", "Each body's joint location in its parent's frame (the ground "
                                       "frame for the ground) [m], (nbodies, 3).")
    joint_child_point = _table_column("child_point", "Each body's joint location in its own frame [m], (nbodies, 3) "
                                      "(read-only view).")
    joint_rotation = _table_column("rotation", "Each joint frame relative to the parent frame, joint-to-parent "
                                   "rotations (nbodies, 3, 3) (read-only).")

    def body(self, body):
        """The description of one body (name or index) as ``add_body`` stored it, a dict of copies: name, parent
        (index, -1 for the ground), joint (type name), parent_point, child_point, mass, inertia (3, 3), com,
        rotation (3, 3), axis (the unit axis (3,) of a revolute, prismatic or cylindrical joint, the pair (2, 3) of
        a universal one, None for the others)."""
        i = self.body_index(body)
        column = self._table.column
        joint = SL.JOINT_NAMES[int(column("jtype")[i])]
        if joint in ("revolute", "prismatic", "cylindrical"):
            axis = column("a1")[i].copy()
        elif joint == "universal":
            axis = np.array([column("a1")[i], column("a2")[i]])
        else:
            axis = None
        return {"name": self._explicit.get(i, f"body{i}"), "parent": int(column("parent")[i]), "joint": joint,
                "parent_point": column("parent_point")[i].copy(), "child_point": column("child_point")[i].copy(),
                "mass": float(column("mass")[i]), "inertia": _full_inertia(column("inertia")[i]),
                "com": column("com")[i].copy(), "rotation": column("rotation")[i].copy(), "axis": axis}

    def total_mass(self):
        """Sum of the body masses [kg]."""
        return float(self._table.column("mass").sum())

    def body_index(self, body):
        """Index of a body given by name or index (negative indices count from the end)."""
        return V.body_index(body, self._lookup, self.nbodies, lambda: self.names)

    def q_slice(self, body):
        """Slice of q holding the coordinates of ``body``'s joint (name or index)."""
        i = self.body_index(body)
        row = self._require_compiled().body_int[i]
        return slice(int(row[SL.QIDX]), int(row[SL.QIDX] + row[SL.NQJ]))

    def v_slice(self, body):
        """Slice of v (and vdot, tau) holding the rates of ``body``'s joint (name or index)."""
        i = self.body_index(body)
        row = self._require_compiled().body_int[i]
        return slice(int(row[SL.VIDX]), int(row[SL.VIDX] + row[SL.NVJ]))

    def neutral(self):
        """The configuration (nq,) with every joint coordinate zero and every quaternion the identity."""
        q = np.zeros(self._require_compiled()._nq)
        q[self._quat_q] = 1.0
        return q

    def __repr__(self):
        return (f"Model3D({counted(self.nbodies, 'body', 'bodies')}, nq={self.nq if self._compiled else '?'}, "
                f"name={self.name!r})")

