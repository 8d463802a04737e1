"""Model builder: bodies joined in a tree, compiled once into frozen arrays that every formulation takes.

Conventions (docs/conventions.md): SI units, ground x right / y up, angles counter-clockwise in radians. A body's
frame has a pose (x, y, theta) in the ground frame; its inertia is the mass ``mass``, the centre of mass ``com``
(body frame) and the rotational inertia ``inertia`` about the centre of mass. The joint to the parent is placed by
``parent_point`` (parent frame) and ``child_point`` (child frame), which coincide at zero joint coordinate, and the
angle offset ``angle`` (see ``recursive_mbd.model.joints``).
"""

import math

import numpy as np

from .. import _checks
from .._kernels import layout as L
from ..errors import ModelError
from . import _validation as V
from . import contact as _contact
from . import joints
from ._builder import TreeBuilder
from ._validation import GROUND

LOOP_KINDS = {"revolute": L.LOOP_REVOLUTE, "prismatic": L.LOOP_PRISMATIC, "fixed": L.LOOP_FIXED,
              "distance": L.LOOP_DISTANCE}


def _point(value, what):
    try:
        arr = _checks.real_array(value, what)
    except TypeError:
        raise TypeError(f"{what} must be a pair of real numbers (x, y), got {value!r:.60}") from None
    if arr.shape != (2,):
        raise ModelError(f"{what} must be a pair of numbers (x, y), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} must be finite, got {arr.tolist()}")
    return arr


_VECTOR_FIELDS = ("parent_point", "child_point", "com", "axis")
_SCALAR_FIELDS = {"parent": np.int64, "jtype": np.int64, "mass": np.float64, "inertia": np.float64,
                  "angle": np.float64}


class _BodyTable:
    """The bodies of a Model as columns (numpy arrays that grow by doubling), so that a million-body chain costs
    tens of bytes per body, not a Python record each. Indexing gives a body as a dict (copies of its fields)."""

    def __init__(self):
        self.names = []
        self._size = 0
        self._data = {key: np.zeros(16, dtype=kind) for key, kind in _SCALAR_FIELDS.items()}
        self._data.update({key: np.zeros((16, 2)) for key in _VECTOR_FIELDS})

    def __len__(self):
        return self._size

    def column(self, key):
        """The field ``key`` of every body, (n,) or (n, 2), a view."""
        return self._data[key][:self._size]

    def __getitem__(self, index):
        if not -self._size <= index < self._size:
            raise IndexError(index)
        index %= self._size
        body = {"name": self.names[index]}
        for key, values in self._data.items():
            value = values[index]
            body[key] = value.copy() if key in _VECTOR_FIELDS else value.item()
        return body

    def __iter__(self):
        return (self[i] for i in range(self._size))

    def extend(self, names, **columns):
        """Append len(names) bodies; ``columns`` holds every field as an array (validated by the caller)."""
        self._size = V.extend_columns(self._data, self._size, len(names), columns)
        self.names.extend(names)

    def append(self, body):
        self.extend([body["name"]], **{key: [body[key]] for key in self._data})


def _unit_axis(axis, where):
    """A prismatic axis normalised (default (1, 0)); a zero axis is a ModelError."""
    axis = np.array([1.0, 0.0]) if axis is None else _point(axis, f"{where}: axis")
    norm = float(np.hypot(axis[0], axis[1]))
    if not norm > 1e-12:
        raise ModelError(f"{where}: prismatic axis must be non-zero, got {axis.tolist()}")
    return axis / norm


def _packed_column(array, column, doc):
    """A read-only per-body view of a compiled model (compiling it first): ``column`` (an index or a slice) of its
    packed array ``array`` ("body_int" or "body_real"), documented by ``doc``."""
    return property(lambda self: getattr(self._require_compiled(), array)[:, column], doc=doc)


class Model(TreeBuilder):
    """A planar multibody tree, built body by body, then compiled into frozen arrays.

    Parameters
    ----------
    gravity : (2,) array_like
        Gravitational acceleration in the ground frame [m/s^2]; default (0, -9.81).
    name : str, optional
        A label for messages.

    Notes
    -----
    Bodies are numbered in the order they are added, and a parent must exist before its child, so parents always
    come before children. The first call of any dynamics function (or ``compile()``) freezes the model: it then
    exposes read-only per-body arrays (``body_parent``, ``body_mass``, ``joint_type``, ...) and cannot grow.
    """

    def __init__(self, gravity=(0.0, -9.81), name=None):
        self.gravity = _point(gravity, "gravity")
        self.name = name
        self._bodies = _BodyTable()
        self._names = {}
        self._elements = []  # force elements, in the order added
        self._element_names = {}
        self._loops = []  # loop-closing constraints of cut joints, in the order added
        self._loop_names = {}
        self._surfaces = {}  # contact surfaces by name (add_ground, add_drum)
        self._contacts = []  # contact shapes against them (add_contact)
        self._self_contacts = []  # sets of bodies whose capsules touch each other (add_self_contact)
        self._compiled = False
        self._workspace = None

    # ---- building ------------------------------------------------------------------------------------------------

    def add_body(self, parent="ground", joint="revolute", parent_point=(0.0, 0.0), child_point=(0.0, 0.0),
                 mass=1.0, inertia=0.0, com=(0.0, 0.0), angle=0.0, axis=None, name=None):
        """Add a body joined to ``parent``; return its index.

        Parameters
        ----------
        parent : "ground" | -1 | int | str
            The ground, a body index or a body name.
        joint : {"revolute", "prismatic", "fixed", "planar"}
            Joint to the parent; its coordinates are appended to q (``recursive_mbd.model.joints``).
        parent_point : (2,) array_like
            Joint location in the parent frame [m] (ground frame for the ground).
        child_point : (2,) array_like
            Joint location in the child (this body's) frame [m].
        mass : float
            Mass [kg], >= 0.
        inertia : float
            Rotational inertia about the centre of mass [kg m^2], >= 0. Default 0 (a point mass).
        com : (2,) array_like
            Centre of mass in the body frame [m].
        angle : float
            Child frame angle relative to the parent frame at zero joint coordinate [rad].
        axis : (2,) array_like, optional
            Prismatic sliding direction in the parent frame (normalised here); default (1, 0). Only for
            prismatic joints.
        name : str, optional
            Unique body name; default ``"body<index>"``.
        """
        if self._compiled:
            raise ModelError(
                f"cannot add body {name or len(self._bodies)!r}: the model was compiled (its arrays are frozen "
                "once a dynamics function has used it); build a new Model instead")
        index = len(self._bodies)
        label, where = V.body_label(name, index, self._names.get)
        parent_index = self._resolve_parent(parent, where)
        jtype = V.joint_code(joint, where, joints.JOINT_CODES)
        mass = V.nonnegative(mass, f"{where}: mass")
        inertia = V.nonnegative(inertia, f"{where}: inertia")
        angle = V.finite_scalar(angle, f"{where}: angle")
        parent_point = _point(parent_point, f"{where}: parent_point")
        child_point = _point(child_point, f"{where}: child_point")
        com = _point(com, f"{where}: com")

        if jtype == joints.PRISMATIC:
            axis = _unit_axis(axis, where)
        elif axis is not None:
            raise ModelError(f"{where}: axis applies to prismatic joints only, not {joint!r}")
        else:
            axis = np.zeros(2)

        self._bodies.append(dict(name=label, parent=parent_index, jtype=jtype, parent_point=parent_point,
                                 child_point=child_point, mass=mass, inertia=inertia, com=com, angle=angle,
                                 axis=axis))
        self._names[label] = index
        return index

    def add_bodies(self, parent, joint="revolute", parent_point=(0.0, 0.0), child_point=(0.0, 0.0), mass=1.0,
                   inertia=0.0, com=(0.0, 0.0), angle=0.0, axis=None, names=None):
        """Add k bodies at once (vectorised ``add_body``, for very long chains); returns their indices.

        Every argument is one value for all k bodies or one per body: ``parent`` (k,) indices (-1 for the ground,
        each smaller than the body's own index), ``joint`` a joint type name (one for all), points (2,) or (k, 2),
        ``names`` k strings (default ``"body<index>"``). The same checks as ``add_body``, naming the first bad body.
        """
        if self._compiled:
            raise ModelError("cannot add bodies: the model was compiled (its arrays are frozen); build a new Model")
        parent = V.batch_parents(parent)
        k = parent.size
        first = len(self._bodies)
        index = np.arange(first, first + k)
        names = [f"body{i}" for i in index] if names is None else list(names)
        if len(names) != k:
            raise ModelError(f"add_bodies: {len(names)} names for {k} bodies")
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name:
                raise TypeError(f"add_bodies: names[{i}] (body index {first + i}) must be a non-empty string, "
                                f"got {name!r:.40}")
        fail = V.batch_failure(names, first)
        jtype = V.batch_joint_code(joint, joints.JOINT_CODES, parent, index, fail)
        scalars = {}
        for key, value in (("mass", mass), ("inertia", inertia), ("angle", angle)):
            try:
                scalars[key] = np.broadcast_to(_checks.real_array(value, f"add_bodies: {key}"), (k,))
            except ValueError:
                raise ModelError(f"add_bodies: {key} must be one number or {k} numbers") from None
            if not np.all(np.isfinite(scalars[key])):
                fail(~np.isfinite(scalars[key]), f"{key} must be finite")
        for key in ("mass", "inertia"):
            if np.any(scalars[key] < 0):
                fail(scalars[key] < 0, f"{key} must be >= 0, got {scalars[key][scalars[key] < 0][0]}")
        vectors = {}
        for key, value in (("parent_point", parent_point), ("child_point", child_point), ("com", com)):
            try:
                vectors[key] = np.broadcast_to(_checks.real_array(value, f"add_bodies: {key}"), (k, 2))
            except ValueError:
                raise ModelError(f"add_bodies: {key} must be (2,) or ({k}, 2)") from None
            if not np.all(np.isfinite(vectors[key])):
                fail(~np.all(np.isfinite(vectors[key]), axis=1), f"{key} must be finite")
        if jtype == joints.PRISMATIC:
            try:
                axes = np.broadcast_to(_checks.real_array((1.0, 0.0) if axis is None else axis, "add_bodies: axis"),
                                       (k, 2))
            except ValueError:
                raise ModelError(f"add_bodies: axis must be (2,) or ({k}, 2)") from None
            norm = np.hypot(axes[:, 0], axes[:, 1])
            if not np.all(norm > 1e-12):
                fail(~(norm > 1e-12), "prismatic axis must be non-zero")
            vectors["axis"] = axes / norm[:, None]
        elif axis is not None:
            raise ModelError(f"add_bodies: axis applies to prismatic joints only, not {joint!r}")
        else:
            vectors["axis"] = np.zeros((k, 2))
        if len(set(names)) != k or any(name in self._names or name == "ground" for name in names):
            seen = set(self._names) | {"ground"}
            for i, name in enumerate(names):
                if not isinstance(name, str) or not name or name in seen:
                    raise ModelError(f"body {name!r} (index {first + i}): duplicate, reserved or empty name")
                seen.add(name)
        self._bodies.extend(names, parent=parent, jtype=np.full(k, jtype), **scalars, **vectors)
        self._names.update(zip(names, index.tolist(), strict=True))
        return index

    def _resolve_parent(self, parent, where):
        return V.resolve_parent(parent, where, self._names.get, len(self._bodies), lambda: self._bodies.names)

    # ---- force elements -------------------------------------------------------------------------------------------

    def _element_body(self, body, where, allow_ground=False):
        """An element's body: a name or index of a body added before, or (``allow_ground``) "ground" / -1."""
        if allow_ground and V.is_ground(body):
            return GROUND
        return V.prefixed_body_index(body, where, self.body_index)

    def _either_body(self, body, where):
        """An element's or loop's body: a body or the ground."""
        return self._element_body(body, where, allow_ground=True)

    def _add_element(self, kind, name, **data):
        if self._compiled:
            raise ModelError(f"cannot add {kind} {name!r}: the model was compiled (it is frozen once a dynamics "
                             "function has used it); add elements before the first use")
        label = name if name is not None else f"{kind}{len(self._elements)}"
        if not isinstance(label, str) or not label:
            raise TypeError(f"element name must be a non-empty string, got {name!r}")
        if label in self._element_names:
            raise ModelError(f"{kind} {label!r}: duplicate element name")
        self._element_names[label] = len(self._elements)
        self._elements.append(dict(kind=kind, name=label, **data))
        return len(self._elements) - 1

    def _element_label(self, kind, name):
        return f"{kind} {name or f'{kind}{len(self._elements)}'!r}"

    def add_spring_damper(self, body_a, point_a, body_b, point_b, stiffness, damping=0.0, rest_length=0.0,
                          name=None):
        """A linear spring and damper between a point on ``body_a`` and a point on ``body_b``; returns its index.

        Either body may be "ground" (the point is then in the ground frame); points are in their body's frame [m].
        With d = p_b - p_a, L = |d| and u = d / L, the tension f = k (L - L0) + c dL/dt pulls p_a by +f u and p_b
        by -f u (the two-squares tutorial, its direction normalised). At L = 0 the direction is undefined and, as in
        the tutorial, the damper acts on the whole relative velocity, F_b = -c (v_b - v_a), and the spring (if L0 = 0)
        not at all.

        Parameters
        ----------
        stiffness : float
            k [N/m], >= 0.
        damping : float
            c [N s/m], >= 0.
        rest_length : float
            L0 [m], >= 0.
        """
        where = self._element_label("spring_damper", name)
        a, point_a, b, point_b = V.two_ends(where, self._either_body, _point, body_a, point_a, body_b, point_b,
                                            name_ground=False)
        k = V.nonnegative(stiffness, f"{where}: stiffness")
        c = V.nonnegative(damping, f"{where}: damping")
        rest = V.nonnegative(rest_length, f"{where}: rest_length")
        return self._add_element("spring_damper", name, body_a=a, point_a=point_a, body_b=b, point_b=point_b,
                                 stiffness=k, damping=c, rest=rest)

    def add_joint_spring_damper(self, body, stiffness, damping=0.0, rest=0.0, name=None):
        """A spring and damper on ``body``'s parent joint: tau = -k (q - rest) - c qdot; returns its index.

        Torsional [N m/rad, N m s/rad] on a revolute joint, linear [N/m, N s/m] on a prismatic one.
        """
        where = self._element_label("joint_spring_damper", name)
        index = self._element_body(body, f"{where}: body")
        jtype = self._bodies[index]["jtype"]
        if joints.JOINT_DOF[jtype] != 1:
            raise ModelError(f"{where}: body {self._bodies[index]['name']!r} has a {joints.JOINT_NAMES[jtype]} "
                             "joint; joint springs need a revolute or prismatic joint")
        k = V.nonnegative(stiffness, f"{where}: stiffness")
        c = V.nonnegative(damping, f"{where}: damping")
        rest = V.finite_scalar(rest, f"{where}: rest")
        return self._add_element("joint_spring_damper", name, body_a=index, stiffness=k, damping=c, rest=rest)

    def add_force(self, body, point, force, frame="ground", name=None):
        """A force applied at a point of a body; returns its index.

        Parameters
        ----------
        point : (2,) array_like
            Point of application in the body frame [m].
        force : (2,) array_like or callable
            (Fx, Fy) [N], constant, or a function of time ``force(t) -> (2,)``.
        frame : {"ground", "body"}
            Axes the components are given in ("body": the force turns with the body).
        """
        where = self._element_label("force", name)
        index = self._element_body(body, f"{where}: body")
        point = _point(point, f"{where}: point")
        if frame not in ("ground", "body"):
            raise ModelError(f"{where}: frame must be 'ground' or 'body', got {frame!r}")
        value = force if callable(force) else _point(force, f"{where}: force")
        return self._add_element("force", name, body_a=index, point_a=point, value=value, frame=frame)

    def add_torque(self, body, torque, name=None):
        """A pure torque [N m] on a body (counter-clockwise positive): constant, or a function ``torque(t)``."""
        where = self._element_label("torque", name)
        index = self._element_body(body, f"{where}: body")
        value = torque if callable(torque) else V.finite_scalar(torque, f"{where}: torque")
        return self._add_element("torque", name, body_a=index, value=value)

    # ---- contact ------------------------------------------------------------------------------------------------

    def add_ground(self, name="floor", point=(0.0, 0.0), normal=(0.0, 1.0), extent=None, body="ground"):
        """A flat contact surface: the half-plane below the line through ``point`` with outward ``normal`` is
        solid, over ``extent`` only (a table top with edges); returns its name (for ``add_contact``).

        Parameters
        ----------
        point, normal : (2,) array_like
            A point of the surface [m] and its outward normal (normalised here), in ``body``'s frame (the ground's
            by default).
        extent : (lo, hi), optional
            The surface's stretch along its tangent t = (n_y, -n_x) from ``point`` [m] (along +x for the default
            normal); unbounded by default. A shape whose centre is beyond it does not touch (it falls off the edge).
        body : str or int
            The body that carries the surface; "ground" for a fixed one.
        """
        where = f"ground {name!r}"
        point, normal, extent = _contact.plane_data(point, normal, extent, where, _point)
        return _contact.surface_entry(self, "ground", name, body, point=point, normal=normal, extent=extent)

    def add_drum(self, name, center, radius, body="ground"):
        """A circular contact surface (a drum, a pulley, a table's rounded edge): the disc of ``radius`` [m] about
        ``center`` (``body``'s frame; a fixed one by default, or a body's, which then turns with it); returns its
        name."""
        where = f"drum {name!r}"
        center = _point(center, f"{where}: center")
        radius = _contact._positive(radius, f"{where}: radius")
        return _contact.surface_entry(self, "drum", name, body, center=center, radius=radius)

    def add_contact(self, body, surface, *, point=(0.0, 0.0), radius=0.0, segment=None, stiffness,
                    exponent=1.5, restitution=1.0, friction=0.0, tangential_stiffness=None, tangential_damping=None,
                    min_impact_speed=1.0, name=None):
        """Let a shape of ``body`` (or of each body of a list) touch ``surface``; returns the contacts' indices.

        The normal force is Hunt and Crossley's k d^p (1 + (C / v_in) d') at the depth d, never pulling, with C set so
        that an impact at any speed v_in rebounds with the coefficient of ``restitution``; friction is Coulomb's,
        with a stick phase: a tangential spring and damper from the point where the contact was made, slipping at
        ``friction`` times the normal force (``recursive_mbd._kernels.planar.contact``).

        Parameters
        ----------
        body : str, int or sequence of them
            The body (or bodies: one contact each, e.g. every link of a chain) that carries the shape.
        surface : str
            A surface's name (``add_ground``, ``add_drum``).
        point, radius : (2,) array_like, float
            A circle of ``radius`` [m] about ``point`` (body frame) [m]; radius 0 is a point (a corner).
        segment : ((x0, y0), (x1, y1)), optional
            A capsule instead: the segment between two body points with ``radius`` > 0 about it (a chain link).
        stiffness : float
            k [N/m^p], > 0.
        exponent : float
            p >= 1 (1.5: Hertz's law of a sphere; 1: linear).
        restitution : float
            Coefficient of restitution e in (0, 1].
        friction : float
            Coulomb coefficient mu >= 0.
        tangential_stiffness, tangential_damping : float, optional
            The stick spring k_t [N/m] and damper c_t [N s/m]. Defaults: the normal law's tangent stiffness under
            the body's weight, p k d_w^(p - 1) with k d_w^p = m g, and critical damping 2 sqrt(k_t m).
        min_impact_speed : float
            The smallest impact speed [m/s] the damping is scaled by (C / v_in is bounded by C / min_impact_speed
            for contacts made at rest; slower impacts rebound with more than ``restitution``).
        """
        return _contact.contact_entries(self, body, surface, point, radius, segment, stiffness, exponent,
                                        restitution, friction, tangential_stiffness, tangential_damping,
                                        min_impact_speed, name, _point)

    def add_self_contact(self, bodies, *, point=(0.0, 0.0), radius, segment=None, stiffness, exponent=1.5,
                         restitution=1.0, impact_speed=1.0, friction=0.0, tangential_damping=None, name=None):
        """Let the bodies of a set touch each other (a chain piling on itself); returns the set's index.

        Each body carries a capsule: the ``segment`` (two body points) with ``radius`` about it, or a circle of
        ``radius`` about ``point``. Bodies joined parent to child do not collide (neighbouring links overlap at their
        joint). The pairs that touch are found at every evaluation (sort and sweep of bounding boxes along x: O(N) for
        a set that moves little between evaluations, never all pairs; ``recursive_mbd._kernels.planar.pairs``). No pair
        keeps state: the normal damping is set so that impacts at ``impact_speed`` [m/s] rebound with ``restitution``
        (Hunt and Crossley's law loses more at faster impacts), and friction is regularised by
        ``tangential_damping`` [N s/m] (default: critical damping of the default stick stiffness of ``add_contact``):
        a pair pressed below the friction limit creeps at F_t / c_t instead of sticking. Other parameters as in
        ``add_contact``.
        """
        return _contact.self_contact_entries(self, bodies, point, radius, segment, stiffness, exponent, restitution,
                                             impact_speed, friction, tangential_damping, name, _point)

    @property
    def ncontacts(self):
        """Number of contact rows (``contact_int``): a capsule on a plane is two, every other contact one."""
        return self._require_compiled().contact_int.shape[0]

    @property
    def has_contacts(self):
        """True when the model has contacts: rows (``add_contact``) or self-contact sets (``add_self_contact``)."""
        self._require_compiled()
        return bool(self.contact_int.shape[0] or self.shape_int.shape[0])

    # ---- closed loops ---------------------------------------------------------------------------------------------

    def add_loop(self, kind, body_a, point_a, body_b="ground", point_b=(0.0, 0.0), axis=None, angle=0.0,
                 length=None, name=None):
        """Close a loop: a cut joint between a point of ``body_a`` and a point of ``body_b``; returns its index.

        The tree's coordinates stay the generalised coordinates; the loop adds constraint equations phi(q) = 0
        enforced by Lagrange multipliers (``recursive_mbd.dynamics.loops``). Either body may be "ground" (its point
        is then in the ground frame); points are in their body's frame [m].

        Parameters
        ----------
        kind : {"revolute", "prismatic", "fixed", "distance"}
            "revolute": the points coincide (2 equations); "prismatic": point a stays on the line through point
            b along ``axis`` (body b's frame), and theta_a - theta_b = ``angle`` (2); "fixed": the points coincide
            and theta_a - theta_b = ``angle`` (3); "distance": |p_a - p_b| = ``length`` > 0, a massless link (1).
        """
        where = f"loop {name or f'loop{len(self._loops)}'!r}"
        label, kind = V.loop_label(name, where, len(self._loops), self._compiled, self._loop_names, kind, LOOP_KINDS)
        a, point_a, b, point_b = V.two_ends(where, self._either_body, _point, body_a, point_a, body_b, point_b)
        angle = V.finite_scalar(angle, f"{where}: angle")
        if kind == "prismatic":
            axis = _unit_axis(axis, where)
        elif axis is not None:
            raise ModelError(f"{where}: axis applies to prismatic loops only, not {kind!r}")
        else:
            axis = np.zeros(2)
        length = V.loop_length(length, kind == "distance", kind, where)
        self._loop_names[label] = len(self._loops)
        self._loops.append(dict(kind=kind, name=label, body_a=a, point_a=point_a, body_b=b, point_b=point_b,
                                axis=axis, angle=angle, length=length))
        return len(self._loops) - 1

    @property
    def nconstraints(self):
        """Number of loop equations m (``rm.loops.constraints`` rows)."""
        return sum(L.LOOP_ROWS[LOOP_KINDS[lp["kind"]]] for lp in self._loops)

    def _pack_loops(self):
        """Loops into loop_int / loop_real (_kernels.layout), points relative to the centres of mass."""
        nl = len(self._loops)
        loop_int = np.zeros((nl, L.N_LINT), dtype=np.int64)
        loop_real = np.zeros((nl, L.N_LREAL))
        row = 0
        for k, lp in enumerate(self._loops):
            code = LOOP_KINDS[lp["kind"]]
            loop_int[k] = (code, lp["body_a"], lp["body_b"], row)
            row += L.LOOP_ROWS[code]
            for column, body, point in ((L.LPAX, lp["body_a"], lp["point_a"]), (L.LPBX, lp["body_b"], lp["point_b"])):
                loop_real[k, column:column + 2] = point if body == GROUND else point - self._bodies[body]["com"]
            loop_real[k, L.LAXX:L.LAXX + 2] = lp["axis"]
            loop_real[k, L.LANGLE] = lp["angle"]
            loop_real[k, L.LLENGTH] = lp["length"]
        rows = np.append(loop_int[:, L.LROW], row)
        for arr in (loop_int, loop_real, rows):
            arr.setflags(write=False)
        self.loop_int = loop_int
        self.loop_real = loop_real
        self.loop_rows = rows  # loop k owns constraint rows loop_rows[k] .. loop_rows[k + 1] - 1

    # ---- compiling -----------------------------------------------------------------------------------------------

    def compile(self, check=True):
        """Freeze the model into packed arrays; check that every joint's articulated inertia is regular.

        Idempotent. Raises ModelError naming the body whose subtree cannot be accelerated (for example a massless
        tip body, or a point mass on its own hinge). Returns the model. ``check=False`` skips that check (it runs
        forward dynamics, so it loads the compiled kernels): for tools that only describe a model, such as
        ``rmbd info``; the dynamics kernels still refuse a singular joint when they meet one.
        """
        if self._compiled:
            return self
        n = len(self._bodies)
        if n == 0:
            raise ModelError("the model has no bodies")
        table = self._bodies
        parent, jtype = table.column("parent"), table.column("jtype")
        ndof = np.array([joints.JOINT_DOF[code] for code in range(4)])[jtype]
        com = table.column("com")
        parent_com = np.where((parent >= 0)[:, None], com[np.maximum(parent, 0)], 0.0)
        body_int = np.zeros((n, L.N_INT), dtype=np.int64)
        body_real = np.zeros((n, L.N_REAL), dtype=np.float64)
        body_int[:, L.PARENT] = parent
        body_int[:, L.JTYPE] = jtype
        body_int[:, L.QIDX] = np.cumsum(ndof) - ndof
        body_int[:, L.NDOF] = ndof
        nq = int(ndof.sum())
        body_real[:, L.MASS] = table.column("mass")
        body_real[:, L.INERTIA] = table.column("inertia")
        body_real[:, L.COMX:L.COMX + 2] = com
        body_real[:, L.ANGLE] = table.column("angle")
        body_real[:, L.PPX:L.PPX + 2] = table.column("parent_point") - parent_com
        body_real[:, L.COX:L.COX + 2] = com - table.column("child_point")
        body_real[:, L.AXX:L.AXX + 2] = table.column("axis")
        # flags, tip to base as the condensation runs: the next body is the child (carried in registers), or
        # children come through the parent's workspace row
        flags = body_int[:, L.FLAGS]
        has_parent = parent >= 0
        chained = has_parent & (parent == np.arange(n) - 1)
        flags[parent[chained]] |= L.NEXT_IS_CHILD
        row_children = np.flatnonzero(has_parent & ~chained)
        if row_children.size:
            rows = parent[row_children]
            flags[rows] |= L.ROW_CHILDREN
            # the highest-index row child of each parent condenses first
            highest = {}
            for child, row in zip(row_children.tolist(), rows.tolist(), strict=True):
                highest[row] = child
            flags[list(highest.values())] |= L.FIRST_ROW_CHILD
        if np.all(jtype == joints.REVOLUTE):
            flags[0] |= L.ALL_REVOLUTE
            if np.array_equal(parent, np.arange(n) - 1):
                flags[0] |= L.SERIAL_REVOLUTE
        # column-major: every per-body field is a dense stream, which the recursive passes read at full memory
        # bandwidth (row-major rows cost 2.5x more at 1e6 bodies: benchmarks/forward_dynamics.py)
        body_int = np.asfortranarray(body_int)
        body_real = np.asfortranarray(body_real)
        body_int.setflags(write=False)
        body_real.setflags(write=False)
        self.gravity.setflags(write=False)
        self.body_int = body_int
        self.body_real = body_real
        self._pack_elements()
        self._pack_loops()
        self.contact_int, self.contact_real, self.contact_names = _contact.pack(self)
        self.shape_int, self.shape_real = _contact.pack_self_contacts(self)
        self._child_points = table.column("child_point").copy()
        self.has_planar = bool(np.any(body_int[:, L.JTYPE] == joints.PLANAR))
        self._nq = nq
        self._compiled = True
        self._workspace = None
        if check:
            self._check_regular()
        return self

    def _pack_elements(self):
        """Elements into elem_int / elem_real (_kernels.layout); time functions get slots of the input vector u."""
        ne = len(self._elements)
        elem_int = np.full((ne, L.N_EINT), -1, dtype=np.int64)
        elem_real = np.zeros((ne, L.N_EREAL))
        functions = []  # (slot, width, function, element name, arity 1: f(t)) of the time-varying elements
        slot = 0
        coms = self._bodies.column("com")

        def relative(body, point):  # a point relative to the centre of mass (the ground's is its origin)
            return point if body == GROUND else point - coms[body]

        for e, el in enumerate(self._elements):
            kind = el["kind"]
            elem_int[e, L.EFRAME] = 0
            elem_int[e, L.EBODY_A] = el["body_a"]
            if kind == "spring_damper":
                elem_int[e, L.ETYPE] = L.SPRING_DAMPER
                elem_int[e, L.EBODY_B] = el["body_b"]
                elem_real[e, L.EPAX:L.EPAX + 2] = relative(el["body_a"], el["point_a"])
                elem_real[e, L.EPBX:L.EPBX + 2] = relative(el["body_b"], el["point_b"])
                elem_real[e, [L.EK, L.EC, L.EREST]] = el["stiffness"], el["damping"], el["rest"]
            elif kind == "joint_spring_damper":
                elem_int[e, L.ETYPE] = L.JOINT_SPRING_DAMPER
                elem_real[e, [L.EK, L.EC, L.EREST]] = el["stiffness"], el["damping"], el["rest"]
            elif kind == "force":
                elem_int[e, L.ETYPE] = L.POINT_FORCE
                elem_int[e, L.EFRAME] = 1 if el["frame"] == "body" else 0
                elem_real[e, L.EPAX:L.EPAX + 2] = relative(el["body_a"], el["point_a"])
                if callable(el["value"]):
                    elem_int[e, L.ESLOT] = slot
                    functions.append((slot, 2, el["value"], el["name"], 1))
                    slot += 2
                else:
                    elem_real[e, L.EPBX:L.EPBX + 2] = el["value"]
            else:  # torque
                elem_int[e, L.ETYPE] = L.BODY_TORQUE
                if callable(el["value"]):
                    elem_int[e, L.ESLOT] = slot
                    functions.append((slot, 1, el["value"], el["name"], 1))
                    slot += 1
                else:
                    elem_real[e, L.EPBX] = el["value"]
        # row-major (as allocated) whatever the count, as the ensembles' per-member elem_real: a few numbers per
        # element, read once per evaluation. Column-major arrays of 0 or 1 element are also row-major (numpy flags
        # them both, numba types them C), so models with 2 or more elements had another numba type, and every kernel
        # and time loop taking them compiled twice.
        elem_int.setflags(write=False)
        elem_real.setflags(write=False)
        self.elem_int = elem_int
        self.elem_real = elem_real
        self.n_element_inputs = slot
        self.element_functions = tuple(functions)

    def _check_regular(self):
        """Run forward dynamics at q = 0 and at a random state: a singular joint is a model error."""
        from .statuses import raise_status  # noqa: PLC0415  (the model's body names)
        from .workspace import bare_tree_forward_dynamics, workspace  # noqa: PLC0415  (it imports this)

        ws = workspace(self)
        rng = np.random.default_rng(0)
        qdd = np.zeros(self.nq)
        for q in (np.zeros(self.nq), rng.uniform(-math.pi, math.pi, self.nq)):
            status = bare_tree_forward_dynamics(self, ws, q, ws.zeros, ws.zeros, qdd)
            try:
                if status:
                    raise_status(self, status)
            except ModelError as err:
                raise ModelError(f"invalid model: {err}") from None

    @property
    def nq(self):
        """Number of generalised coordinates (joint coordinates in body order)."""
        if self._compiled:
            return self._nq
        return int(sum(joints.JOINT_DOF[code] * count for code, count in
                       enumerate(np.bincount(self._bodies.column("jtype"), minlength=4))))

    @property
    def body_names(self):
        """Body names in index order, a tuple."""
        return tuple(self._bodies.names)

    @property
    def nbodies(self):
        """Number of bodies (the ground not counted)."""
        return len(self._bodies)

    def body_index(self, body):
        """Index of a body given by name or index (negative indices count from the end)."""
        return V.body_index(body, self._names.get, self.nbodies, lambda: self._bodies.names)

    # ---- read-only per-body views (after compile) ---------------------------------------------------------------

    body_parent = _packed_column("body_int", L.PARENT, "Parent index of each body, -1 for the ground, (nbodies,).")
    joint_type = _packed_column("body_int", L.JTYPE, "Joint type code of each body's parent joint "
                                "(recursive_mbd.model.joints), (nbodies,).")
    joint_q_index = _packed_column("body_int", L.QIDX, "Index in q of each joint's first coordinate, (nbodies,).")
    joint_ndof = _packed_column("body_int", L.NDOF, "Number of coordinates of each joint, (nbodies,).")
    body_mass = _packed_column("body_real", L.MASS, "Mass of each body [kg], (nbodies,).")
    body_inertia = _packed_column("body_real", L.INERTIA, "Rotational inertia of each body about its centre of mass "
                                  "[kg m^2], (nbodies,).")
    body_com = _packed_column("body_real", slice(L.COMX, L.COMX + 2), "Centre of mass of each body in its frame [m], "
                              "(nbodies, 2).")

    def body(self, body):
        """The description of one body as given to ``add_body`` (a copy)."""
        b = dict(self._bodies[self.body_index(body)])
        b["joint"] = joints.JOINT_NAMES[b.pop("jtype")]
        return b

    def total_mass(self):
        """Sum of the body masses [kg]."""
        return float(self._bodies.column("mass").sum())

    def __repr__(self):
        state = f"nq={self.nq}" if self._compiled else "not compiled"
        label = f" {self.name!r}" if self.name else ""
        return f"<Model{label}: {_checks.counted(self.nbodies, 'body', 'bodies')}, {state}>"
