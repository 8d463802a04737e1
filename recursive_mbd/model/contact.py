"""Contact surfaces and contact shapes of a planar or spatial model, and their packing into the contact kernels'
arrays.

``Model.add_ground`` and ``Model.add_drum`` add surfaces (a half-plane of finite extent, a disc), fixed to the
ground or carried by a body; ``Model.add_contact`` makes shapes of bodies (a point or circle, or a capsule: a
segment with a radius) touch a surface, with the contact law's parameters (``recursive_mbd._kernels.planar.contact``
has the law). This module checks them and packs them (``pack``) into contact_int / contact_real rows: a circle is one
row; a capsule is two rows against a plane (its end circles: the deepest points of a capsule on a plane) and one
row against a disc (its point nearest the disc's centre). ``Model3D``'s surfaces (a plane over a rectangle, a
cylinder) and shapes (spheres, capsules) go through the same checks, with the same law, and ``pack3d`` packs them
likewise (``recursive_mbd._kernels.spatial.contact``).
"""

import functools
import math

import numpy as np

from .._kernels import layout as L
from .._kernels.spatial import layout as SL
from ..errors import ModelError
from . import _validation as V
from ._validation import GROUND

UNIT_ROUNDOFF = 4.0 * np.finfo(float).eps  # a vector's length within this of 1 is a unit vector to round-off
STANDARD_GRAVITY = 9.81  # [m/s^2], the weight that sets the default tangential stiffness in a model without gravity


def _rebound_speed(damping, exponent):
    """The rebound speed of a unit impact under the dimensionless Hunt-Crossley law x'' = -x^p max(0, 1 + C x').

    With the depth scaled by (m v^2 / k)^(1 / (p + 1)) and time so that the impact speed is 1, the law
    m d'' = -k d^p (1 + (C / v) d') becomes this one whatever m, k and v: the coefficient of restitution is a
    function of C and p alone."""
    from scipy.integrate import solve_ivp  # noqa: PLC0415  (scipy only for contacts: `rmbd --help` starts faster)

    def rhs(_, y):
        return (y[1], -max(y[0], 0.0) ** exponent * max(0.0, 1.0 + damping * y[1]))

    def out(_, y):
        return y[0]
    out.terminal, out.direction = True, -1.0
    solution = solve_ivp(rhs, (0.0, 100.0), (0.0, 1.0), method="DOP853", rtol=1e-12, atol=1e-14, events=out)
    return -float(solution.y_events[0][0][1])


@functools.lru_cache(maxsize=64)
def restitution_damping(restitution, exponent):
    """The dimensionless damping C of the Hunt-Crossley law k d^p (1 + (C / v_impact) d') whose coefficient of
    restitution is ``restitution``: solved numerically (the law scales to one curve per (C, p), see
    ``_rebound_speed``), not by a closed-form fit (Hunt and Crossley's C = 3 (1 - e) / 2 holds near e = 1 only;
    Flores et al. 2011's 8 (1 - e) / (5 e) is close everywhere but not exact). 0 for e = 1."""
    from scipy.optimize import brentq  # noqa: PLC0415  (as in _rebound_speed)

    if restitution >= 1.0:
        return 0.0
    high = 8.0 * (1.0 - restitution) / (5.0 * restitution)  # Flores et al.'s fit: a bracket to start from
    while _rebound_speed(high, exponent) > restitution:
        high *= 2.0
    return brentq(lambda c: _rebound_speed(c, exponent) - restitution, 0.0, high, xtol=1e-14, rtol=1e-13)


def _positive(value, what):
    value = V.finite_scalar(value, what)
    if not value > 0.0:
        raise ModelError(f"{what} must be > 0, got {value:g}")
    return value


def surface_entry(model, kind, name, body, **data):
    """A checked surface record (the ground or a body's), added to the model's surfaces by name."""
    where = f"{kind} {name!r}"
    if model._compiled:
        raise ModelError(f"cannot add {where}: the model was compiled (it is frozen once a dynamics function has "
                         "used it); add surfaces before the first use")
    if not isinstance(name, str) or not name:
        raise TypeError(f"surface name must be a non-empty string, got {name!r}")
    if name in model._surfaces:
        raise ModelError(f"{where}: duplicate surface name")
    owner = model._either_body(body, f"{where}: body")
    surface = dict(kind=kind, name=name, owner=owner, **data)
    _check_against_planes(model, surface)
    model._surfaces[name] = surface
    return name


def _check_against_planes(model, surface):
    """A ground-fixed disc whose centre lies inside a ground-fixed half-plane (within its extent) is a model error:
    bodies on the drum would be pushed both ways."""
    fixed = [s for s in model._surfaces.values() if s["owner"] == GROUND and s["name"] != surface["name"]]
    if surface["owner"] != GROUND:
        return
    discs = [surface] if surface["kind"] == "drum" else [s for s in fixed if s["kind"] == "drum"]
    planes = [surface] if surface["kind"] == "ground" else [s for s in fixed if s["kind"] == "ground"]
    for disc in discs:
        for plane in planes:
            offset = disc["center"] - plane["point"]
            if plane["normal"] @ offset < 0.0 and _within_extent(plane, offset):
                raise ModelError(f"drum {disc['name']!r}: its centre {disc['center'].tolist()} is inside ground "
                                 f"{plane['name']!r} (below its surface); move the drum or the ground")


def _within_extent(plane, offset):
    """Whether the point at ``offset`` from a plane's point lies over its extent: along the tangent t = (n_y, -n_x)
    of a planar one, along its tangents t1 and t2 = n x t1 of a spatial one."""
    normal, extent = plane["normal"], plane["extent"]
    if normal.size == 2:
        along = normal[1] * offset[0] - normal[0] * offset[1]
        return bool(extent[0] <= along <= extent[1])
    tangent = plane["tangent"]
    alongs = (tangent @ offset, np.cross(normal, tangent) @ offset)
    return all(lo <= along <= hi for along, (lo, hi) in zip(alongs, extent, strict=True))


def _unit_vector(vector, where, what):
    """A checked vector (numbers already checked) normalised; ModelError naming ``what`` if it is zero."""
    length = float(np.hypot(*vector) if vector.size == 2 else np.linalg.norm(vector))  # (the planar one as it was)
    if not length > 1e-12:
        raise ModelError(f"{where}: {what} must be non-zero, got {vector.tolist()}")
    # one of unit length to round-off is kept as given: dividing again would move it by an ulp, and a model file
    # that wrote it out would not read back the same model
    return vector if abs(length - 1.0) <= UNIT_ROUNDOFF else vector / length


def _interval(extent, where, what="extent"):
    """A checked (lo, hi) with lo < hi; unbounded for None."""
    if extent is None:
        extent = (-math.inf, math.inf)
    try:
        lo, hi = (float(v) for v in extent)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: {what} must be a pair (lo, hi) of numbers, got {extent!r:.60}") from None
    if math.isnan(lo) or math.isnan(hi) or not lo < hi:
        raise ModelError(f"{where}: {what} must have lo < hi, got ({lo:g}, {hi:g})")
    return lo, hi


def plane_data(point, normal, extent, where, _point):
    """(point, unit normal, (lo, hi)) of a half-plane, checked (``_point`` checks a pair of numbers)."""
    point = _point(point, f"{where}: point")
    normal = _unit_vector(_point(normal, f"{where}: normal"), where, "normal")
    return point, normal, np.array(_interval(extent, where))


def plane_data_3d(point, normal, tangent, extent, where, _vector):
    """(point, unit normal, unit first tangent t1, ((lo1, hi1), (lo2, hi2))) of a spatial plane, checked
    (``_vector`` checks 3 numbers). ``tangent`` is projected onto the plane; None takes the ground's x axis
    projected (its y axis for a normal along x)."""
    point = _vector(point, f"{where}: point")
    normal = _unit_vector(_vector(normal, f"{where}: normal"), where, "normal")
    if tangent is None:
        tangent = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    else:
        tangent = _vector(tangent, f"{where}: tangent")
    along_normal = tangent @ normal
    # one already in the plane to round-off is kept (as a unit vector is by _unit_vector: a file's round trip)
    in_plane = tangent if abs(along_normal) <= UNIT_ROUNDOFF * np.linalg.norm(tangent) else (
        tangent - along_normal * normal)
    if not np.linalg.norm(in_plane) > 1e-9 * max(1.0, float(np.linalg.norm(tangent))):
        raise ModelError(f"{where}: tangent must not be parallel to the normal, got {tangent.tolist()}")
    tangent = _unit_vector(in_plane, where, "tangent")
    if extent is None:
        extent = (None, None)
    try:
        first, second = extent
    except (TypeError, ValueError):
        raise ModelError(f"{where}: extent must be two pairs ((lo1, hi1), (lo2, hi2)) of numbers, got "
                         f"{extent!r:.60}") from None
    intervals = (_interval(first, where, "extent along the tangent"),
                 _interval(second, where, "extent along normal x tangent"))
    return point, normal, tangent, np.array(intervals)


def contact_entries(model, bodies, surface, point, radius, segment, stiffness, exponent, restitution, friction,
                    tangential_stiffness, tangential_damping, min_impact_speed, name, _point):
    """Checked contact records, one per body of ``bodies``, sharing the shape and the law (``_point`` checks a
    pair of numbers)."""
    where = f"contact {name!r}" if name is not None else f"contact{len(model._contacts)}"
    if model._compiled:
        raise ModelError(f"cannot add {where}: the model was compiled (it is frozen once a dynamics function has "
                         "used it); add contacts before the first use")
    if not isinstance(surface, str) or surface not in model._surfaces:
        known = ", ".join(repr(s) for s in model._surfaces) or "none: add one with add_ground or add_drum"
        raise ModelError(f"{where}: unknown surface {surface!r} (surfaces: {known})")
    law = dict(stiffness=_positive(stiffness, f"{where}: stiffness"),
               exponent=V.finite_scalar(exponent, f"{where}: exponent"),
               restitution=V.finite_scalar(restitution, f"{where}: restitution"),
               friction=V.nonnegative(friction, f"{where}: friction"),
               min_impact_speed=_positive(min_impact_speed, f"{where}: min_impact_speed"))
    if not law["exponent"] >= 1.0:
        raise ModelError(f"{where}: exponent must be >= 1 (1: linear, 1.5: Hertz), got {law['exponent']:g}")
    if not 0.0 < law["restitution"] <= 1.0:
        raise ModelError(f"{where}: restitution must be in (0, 1], got {law['restitution']:g}")
    for key, value in (("tangential_stiffness", tangential_stiffness), ("tangential_damping", tangential_damping)):
        law[key] = None if value is None else V.nonnegative(value, f"{where}: {key}")
    radius = V.nonnegative(radius, f"{where}: radius")
    if segment is not None:
        if not radius > 0.0:
            raise ModelError(f"{where}: a capsule (segment) needs a radius > 0")
        try:
            ends = [_point(end, f"{where}: segment end") for end in segment]
        except TypeError:
            raise ModelError(f"{where}: segment must be two points (start, end), got {segment!r:.60}") from None
        if len(ends) != 2:
            raise ModelError(f"{where}: segment must be two points (start, end), got {len(ends)}")
        if np.array_equal(ends[0], ends[1]):
            raise ModelError(f"{where}: the segment's two ends coincide (a zero-length capsule); use point= and "
                             "radius= for a circle")
        shape = dict(segment=np.array(ends))
    else:
        shape = dict(point=_point(point, f"{where}: point"))
    if isinstance(bodies, (str, int, np.integer)):
        bodies = [bodies]
    indices = [model._element_body(body, f"{where}: body") for body in bodies]
    if not indices:
        raise ModelError(f"{where}: no bodies given")
    owner = model._surfaces[surface]["owner"]
    if owner in indices:
        raise ModelError(f"{where}: body {model.body_names[owner]!r} carries surface {surface!r} itself")
    first = len(model._contacts)
    for k, index in enumerate(indices):
        label = name if len(indices) == 1 and name is not None else f"{name or 'contact'}{first + k}"
        model._contacts.append(dict(name=label, body=index, surface=surface, radius=radius, **shape, **law))
    return list(range(first, first + len(indices)))


def _law(contact, mass, weight):
    """The packed law of a contact on a body of ``mass`` under gravity ``weight`` [m/s^2]: (k, p, C, min impact
    speed, mu, k_t, c_t)."""
    k, p = contact["stiffness"], contact["exponent"]
    # default stick stiffness: the normal law's tangent stiffness under the body's weight, p k d_w^(p - 1) with
    # k d_w^p = m g (tangential and normal contact stiffness are of one size: Mindlin's ratio is 2/3 to 1);
    # default tangential damping: critical for the body's mass on that spring
    kt = contact["tangential_stiffness"]
    if kt is None:
        kt = p * k * (mass * weight / k) ** ((p - 1.0) / p)
    ct = contact["tangential_damping"]
    if ct is None:
        ct = 2.0 * math.sqrt(kt * mass)
    return (k, p, restitution_damping(contact["restitution"], p), contact["min_impact_speed"], contact["friction"],
            kt, ct)


def pack3d(model):
    """(contact_int, contact_real, row names) of a ``Model3D``'s contacts (``_kernels.spatial.layout``), read-only.
    Points stay relative to their body frame's origin, as the spatial kernels take them."""
    rows_int = []
    rows_real = []
    names = []
    masses = model._table.column("mass")
    weight = float(np.linalg.norm(model.gravity)) or STANDARD_GRAVITY
    for contact in model._contacts:
        surface = model._surfaces[contact["surface"]]
        body, owner = contact["body"], surface["owner"]
        base = np.zeros(SL.N_CREAL)
        if surface["kind"] == "ground":
            base[SL.CSP:SL.CSP + 3] = surface["point"]
            base[SL.CSN:SL.CSN + 3] = surface["normal"]
            base[SL.CST:SL.CST + 3] = surface["tangent"]
            base[SL.CLO:SL.CLO + 4] = surface["extent"].ravel()
            surface_code = L.SURFACE_PLANE
        else:
            base[SL.CSP:SL.CSP + 3] = surface["center"]
            base[SL.CSN:SL.CSN + 3] = surface["axis"]
            base[SL.CCYL] = surface["radius"]
            surface_code = SL.SURFACE_CYLINDER
        base[[SL.CK, SL.CEXP, SL.CDAMP, SL.CVMIN, SL.CMU, SL.CKT, SL.CCT]] = _law(contact, masses[body], weight)
        base[SL.CRAD] = contact["radius"]
        if "segment" in contact and surface_code == L.SURFACE_PLANE:  # the end spheres
            for end in range(2):
                row = base.copy()
                row[SL.CP0:SL.CP0 + 3] = contact["segment"][end]
                rows_int.append((body, owner, surface_code, SL.SHAPE_SPHERE))
                rows_real.append(row)
                names.append(f"{contact['name']} end {end}")
            continue
        if "segment" in contact:
            base[SL.CP0:SL.CP0 + 3] = contact["segment"][0]
            base[SL.CP1:SL.CP1 + 3] = contact["segment"][1]
            rows_int.append((body, owner, surface_code, L.SHAPE_SEGMENT))
        else:
            base[SL.CP0:SL.CP0 + 3] = contact["point"]
            rows_int.append((body, owner, surface_code, SL.SHAPE_SPHERE))
        rows_real.append(base)
        names.append(contact["name"])
    contact_int = np.array(rows_int, dtype=np.int64).reshape(-1, L.N_CINT)
    contact_real = np.array(rows_real, dtype=np.float64).reshape(-1, SL.N_CREAL)
    for arr in (contact_int, contact_real):
        arr.setflags(write=False)
    return contact_int, contact_real, tuple(names)


def pack(model):
    """(contact_int, contact_real, row names) of the model's contacts (``_kernels.layout``), read-only arrays."""
    rows_int = []
    rows_real = []
    names = []
    coms = model._bodies.column("com")
    masses = model._bodies.column("mass")
    weight = float(np.hypot(*model.gravity)) or STANDARD_GRAVITY
    for contact in model._contacts:
        surface = model._surfaces[contact["surface"]]
        body, owner = contact["body"], surface["owner"]
        base = np.zeros(L.N_CREAL)
        owner_com = np.zeros(2) if owner == GROUND else coms[owner]
        if surface["kind"] == "ground":
            base[L.CSP:L.CSP + 2] = surface["point"] - owner_com
            base[L.CSN:L.CSN + 2] = surface["normal"]
            base[L.CLO:L.CLO + 2] = surface["extent"]
        else:
            base[L.CSP:L.CSP + 2] = surface["center"] - owner_com
            base[L.CSN] = surface["radius"]
        base[[L.CK, L.CEXP, L.CDAMP, L.CVMIN, L.CMU, L.CKT, L.CCT]] = _law(contact, masses[body], weight)
        surface_code = L.SURFACE_PLANE if surface["kind"] == "ground" else L.SURFACE_CIRCLE
        base[L.CRAD] = contact["radius"]
        if "segment" in contact:
            ends = contact["segment"] - coms[body]
            if surface_code == L.SURFACE_PLANE:  # the end circles
                for end in range(2):
                    row = base.copy()
                    row[L.CP0:L.CP0 + 2] = ends[end]
                    rows_int.append((body, owner, surface_code, L.SHAPE_CIRCLE))
                    rows_real.append(row)
                    names.append(f"{contact['name']} end {end}")
                continue
            base[L.CP0:L.CP0 + 2] = ends[0]
            base[L.CP1:L.CP1 + 2] = ends[1]
            rows_int.append((body, owner, surface_code, L.SHAPE_SEGMENT))
        else:
            base[L.CP0:L.CP0 + 2] = contact["point"] - coms[body]
            rows_int.append((body, owner, surface_code, L.SHAPE_CIRCLE))
        rows_real.append(base)
        names.append(contact["name"])
    contact_int = np.array(rows_int, dtype=np.int64).reshape(-1, L.N_CINT)
    contact_real = np.array(rows_real, dtype=np.float64).reshape(-1, L.N_CREAL)
    for arr in (contact_int, contact_real):
        arr.setflags(write=False)
    return contact_int, contact_real, tuple(names)


def self_contact_entries(model, bodies, point, radius, segment, stiffness, exponent, restitution, impact_speed,
                         friction, tangential_damping, name, _point):
    """A checked self-contact set: one capsule per body of ``bodies``, the law shared (``_point`` checks a pair of
    numbers, or 3 for a ``Model3D``)."""
    where = f"self_contact {name!r}" if name is not None else f"self_contact{len(model._self_contacts)}"
    if model._compiled:
        raise ModelError(f"cannot add {where}: the model was compiled (it is frozen once a dynamics function has "
                         "used it); add contacts before the first use")
    radius = _positive(radius, f"{where}: radius")
    law = dict(stiffness=_positive(stiffness, f"{where}: stiffness"),
               exponent=V.finite_scalar(exponent, f"{where}: exponent"),
               restitution=V.finite_scalar(restitution, f"{where}: restitution"),
               impact_speed=_positive(impact_speed, f"{where}: impact_speed"),
               friction=V.nonnegative(friction, f"{where}: friction"))
    if not law["exponent"] >= 1.0:
        raise ModelError(f"{where}: exponent must be >= 1 (1: linear, 1.5: Hertz), got {law['exponent']:g}")
    if not 0.0 < law["restitution"] <= 1.0:
        raise ModelError(f"{where}: restitution must be in (0, 1], got {law['restitution']:g}")
    law["tangential_damping"] = (None if tangential_damping is None
                                 else V.nonnegative(tangential_damping, f"{where}: tangential_damping"))
    two_points = "((x0, y0), (x1, y1))" if np.size(model.gravity) == 2 else "((x0, y0, z0), (x1, y1, z1))"
    if segment is None:
        ends = [_point(point, f"{where}: point")] * 2
    else:
        try:
            ends = [_point(end, f"{where}: segment end") for end in segment]
        except TypeError:
            raise ModelError(f"{where}: segment must be two points {two_points}, got {segment!r:.60}") from None
        if len(ends) != 2:
            raise ModelError(f"{where}: segment must be two points {two_points}, got {len(ends)}")
    if isinstance(bodies, (str, int, np.integer)):
        bodies = [bodies]
    indices = [model._element_body(body, f"{where}: body") for body in bodies]
    if len(set(indices)) < 2:
        raise ModelError(f"{where}: a self-contact set needs two bodies or more, got {len(set(indices))}")
    model._self_contacts.append(dict(name=name or where, bodies=indices, ends=np.array(ends), radius=radius, **law))
    return len(model._self_contacts) - 1


def pack_self_contacts(model):
    """(shape_int, shape_real) of the model's self-contact sets (``_kernels.planar.pairs``), read-only."""
    coms = model._bodies.column("com")
    return _pack_self_contacts(model, model._bodies.column("mass"), float(np.hypot(*model.gravity)), coms, L)


def pack_self_contacts3d(model):
    """(shape_int, shape_real) of a ``Model3D``'s self-contact sets (``_kernels.spatial.pairs``), read-only; the
    capsules' ends stay relative to their body frame's origin, as the spatial kernels take them."""
    return _pack_self_contacts(model, model._table.column("mass"), float(np.linalg.norm(model.gravity)),
                               np.zeros((model.nbodies, 3)), SL)


def _pack_self_contacts(model, masses, weight, origins, layout):
    """(shape_int, shape_real) in the columns of ``layout`` (the planar or the spatial one), the capsules' ends
    relative to ``origins`` (nbodies, dim) in their body's frame."""
    weight = weight or STANDARD_GRAVITY
    dim = origins.shape[1]
    rows_int, rows_real = [], []
    for number, group in enumerate(model._self_contacts):
        bodies = np.array(group["bodies"])
        k, p = group["stiffness"], group["exponent"]
        shape_real = np.zeros((bodies.size, layout.N_SREAL))
        shape_real[:, layout.SP0:layout.SP0 + dim] = group["ends"][0] - origins[bodies]
        shape_real[:, layout.SP1:layout.SP1 + dim] = group["ends"][1] - origins[bodies]
        shape_real[:, layout.SRAD] = group["radius"]
        shape_real[:, layout.SK] = k
        shape_real[:, layout.SEXP] = p
        shape_real[:, layout.SDAMP] = restitution_damping(group["restitution"], p) / group["impact_speed"]
        shape_real[:, layout.SMU] = group["friction"]
        ct = group["tangential_damping"]
        if ct is None:  # critical damping of the default stick stiffness (see ``pack``), per body
            kt = p * k * (masses[bodies] * weight / k) ** ((p - 1.0) / p)
            ct = 2.0 * np.sqrt(kt * masses[bodies])
        shape_real[:, layout.SCT] = ct
        rows_int.append(np.column_stack((bodies, np.full(bodies.size, number))))
        rows_real.append(shape_real)
    shape_int = np.concatenate(rows_int).astype(np.int64) if rows_int else np.zeros((0, L.N_SINT), dtype=np.int64)
    shape_real = np.concatenate(rows_real) if rows_real else np.zeros((0, layout.N_SREAL))
    for arr in (shape_int, shape_real):
        arr.setflags(write=False)
    return np.ascontiguousarray(shape_int), np.ascontiguousarray(shape_real)
