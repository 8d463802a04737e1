"""Drawings of spatial models (``Model3D``): the stick figure (``spatial_sticks``, ``snapshot3d``), snapshots
over time, coordinate labels, and the overview of a spatial result (``spatial_overview``)."""

import numpy as np

from .._kernels.spatial import layout as SL
from ..dynamics.kinematics import forward_kinematics
from ..model.configuration import integrate_configuration
from ..model.spatial import Model3D
from .series import (
    LONG_CHAIN,
    _coordinate_quantity,
    _result_panel,
    _result_title,
    _selection,
    _unit_groups,
    body_colors,
    figure,
    time_series,
)

# ---- spatial models ------------------------------------------------------------------------------------------------

def _attachments(model):
    """The points where each body is attached, beside its own joint, in body frames: its children's joints, its
    loop ends and the points of its force elements (spring-dampers, forces). (owner (k,), points (k, 3))."""
    parents = model.body_parent
    children = np.flatnonzero(parents >= 0)
    owner, points = list(parents[children]), list(model.joint_parent_point[children])
    ends = [(model.loop(k)["body_a"], model.loop(k)["point_a"]) for k in range(model.nloops)]
    ends += [(model.loop(k)["body_b"], model.loop(k)["point_b"]) for k in range(model.nloops)]
    ends += [(element[body], element[point]) for element in model._elements
             for body, point in (("body_a", "point_a"), ("body_b", "point_b")) if point in element]
    for body, point in ends:
        if body >= 0:
            owner.append(body)
            points.append(point)
    return np.array(owner, dtype=int), np.array(points, dtype=float).reshape(-1, 3)


def spatial_sticks(model, q):
    """The stick figure of a spatial model at q, in ground coordinates [m]: a dict with

    - ``segments`` (k, 2, 3) and ``segment_body`` (k,): each body as bars from its joint point to the points where
      it is attached: its children's joints, its loop ends and its force elements' points; a body attached at its
      own joint only (a pendulum's bob, the free end of a chain) as a bar from its joint to its centre of mass;
    - ``joints`` (nbodies, 3): each body's joint point (child_point placed), ``coms`` (nbodies, 3): the centres of
      mass, ``ground`` (g, 3): the joint points of the bodies jointed to the ground (parent_point in the ground);
    - ``loops`` (nloops, 2, 3): each loop's two points (``Model3D.add_loop``; the ground's in the ground frame).
    """
    rotations, origins = forward_kinematics(model, q)
    parents = model.body_parent

    def place(index, points):  # body-frame points of the bodies ``index`` in ground coordinates
        return origins[index] + np.einsum("kij,kj->ki", rotations[index], points)

    every = np.arange(model.nbodies)
    joints_at = place(every, model.joint_child_point)
    coms = place(every, model.body_com)
    owner, local = _attachments(model)
    ends = place(owner, local)
    # one bar per distinct (body, end point), none of zero length; a body with none: joint to centre of mass
    keyed = np.unique(np.column_stack([owner, joints_at[owner], ends]), axis=0)
    keyed = keyed[np.linalg.norm(keyed[:, 4:7] - keyed[:, 1:4], axis=1) > 0.0]
    bare = np.setdiff1d(every, keyed[:, 0].astype(int))
    bare = bare[np.linalg.norm(coms[bare] - joints_at[bare], axis=1) > 0.0]
    keyed = np.vstack([keyed, np.column_stack([bare, joints_at[bare], coms[bare]])])
    keyed = keyed[np.argsort(keyed[:, 0], kind="stable")]
    segments = np.stack([keyed[:, 1:4], keyed[:, 4:7]], axis=1)
    ground = model.joint_parent_point[parents < 0]
    loops = np.zeros((model.nloops, 2, 3))
    for k in range(model.nloops):
        loop = model.loop(k)
        for end, (body, point) in enumerate(((loop["body_a"], loop["point_a"]), (loop["body_b"], loop["point_b"]))):
            loops[k, end] = point if body < 0 else origins[body] + rotations[body] @ point
    return {"segments": segments.reshape(-1, 2, 3), "segment_body": keyed[:, 0].astype(int), "joints": joints_at,
            "coms": coms, "ground": ground, "loops": loops}


def surface_patches3d(model, q, centre, half, pieces=24):
    """The contact surfaces of a spatial model at q, placed in ground coordinates (a surface a body carries moves
    with it) and cut to the cube of half-width ``half`` [m] about ``centre`` (3,): a list of (kind, vertices), a
    ground as its rectangle over its extent within the cube ((4, 3): t1 and t2 = normal x t1 bounded by the extent
    and by the cube's half-width about the cube centre's projection), a drum as its cylinder's side over the cube's
    width along its axis ((2, pieces + 1, 3): the two end circles, ``pieces`` sides)."""
    rotations, origins = forward_kinematics(model, q)
    patches = []
    for surface in model._surfaces.values():
        owner = surface["owner"]
        turn, shift = (np.eye(3), np.zeros(3)) if owner < 0 else (rotations[owner], origins[owner])
        if surface["kind"] == "ground":
            point, normal, t1 = shift + turn @ surface["point"], turn @ surface["normal"], turn @ surface["tangent"]
            t2 = np.cross(normal, t1)
            bounds = []
            for axis, (lo, hi) in zip((t1, t2), surface["extent"], strict=True):
                middle = axis @ (centre - point)
                bounds.append((max(lo, middle - half), min(hi, middle + half)))
            (a0, a1), (b0, b1) = bounds
            if a0 < a1 and b0 < b1:  # (a table wholly outside the view is not drawn)
                patches.append(("ground", np.array([point + a * t1 + b * t2 for a, b in
                                                    ((a0, b0), (a1, b0), (a1, b1), (a0, b1))])))
        else:
            middle, axis = shift + turn @ surface["center"], turn @ surface["axis"]
            middle = middle + (axis @ (centre - middle)) * axis  # the axis' point nearest the cube's centre
            across = np.cross(axis, [1.0, 0.0, 0.0] if abs(axis[0]) < 0.9 else [0.0, 1.0, 0.0])
            across /= np.linalg.norm(across)
            angles = np.linspace(0.0, 2.0 * np.pi, pieces + 1)[:, None]
            ring = surface["radius"] * (np.cos(angles) * across + np.sin(angles) * np.cross(axis, across))
            patches.append(("drum", np.stack([middle - half * axis + ring, middle + half * axis + ring])))
    return patches


def _draw_surfaces3d(model, q, ax, limits):
    """The contact surfaces (``surface_patches3d``) on the 3D axes ``ax``, cut to the cube ``limits`` (the
    ``ax.set`` keywords of ``_cube_limits``): grounds as translucent grey rectangles, drums as grey cylinders."""
    low = np.array([limits[key][0] for key in ("xlim", "ylim", "zlim")])
    high = np.array([limits[key][1] for key in ("xlim", "ylim", "zlim")])
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: PLC0415

    for kind, vertices in surface_patches3d(model, q, 0.5 * (low + high), 0.5 * float(np.max(high - low))):
        if kind == "ground":
            ax.add_collection3d(Poly3DCollection([vertices], facecolors="0.6", edgecolors="0.4", alpha=0.25))
        else:
            ax.plot_surface(*np.moveaxis(vertices, 2, 0), color="0.5", alpha=0.35, linewidth=0.0)


def contact_normals3d(model, q, point):
    """The outward unit normals (nrows, 3) of a spatial model's contact rows' surfaces at the contact points
    ``point`` (nrows, 3) [m, ground axes] at q: a plane's normal, a drum's direction from its axis to the point
    (rows as ``model.contact_int`` / ``contact_real``; a surface a body carries turned with it)."""
    rotations, origins = forward_kinematics(model, q)
    normals = np.zeros((model.ncontacts, 3))
    for row, (owner, code, surface) in enumerate(zip(model.contact_int[:, 1], model.contact_int[:, 2],
                                                     model.contact_real, strict=True)):
        turn, shift = (np.eye(3), np.zeros(3)) if owner < 0 else (rotations[owner], origins[owner])
        direction = turn @ surface[SL.CSN:SL.CSN + 3]
        if code == SL.SURFACE_CYLINDER:  # from the axis to the point
            radial = point[row] - (shift + turn @ surface[SL.CSP:SL.CSP + 3])
            radial -= (radial @ direction) * direction
            length = np.linalg.norm(radial)
            direction = radial / length if length > 0.0 else np.zeros(3)
        normals[row] = direction
    return normals


def contact_arrows3d(model, q, normal, tangential, point, ax, fraction=0.15, limits=None):
    """Arrows of the contact forces on a spatial model's shapes at one sample, drawn at q on the 3D axes ``ax``: the
    normal force along the surface's normal plus the friction force, at each touching row's contact point;
    ``normal`` (nrows,), ``tangential`` (nrows, 3) and ``point`` (nrows, 3) as ``SimulationResult.contact_forces()``
    gives them at that sample. The largest is ``fraction`` of the view's width long (``limits``: the ``ax.set``
    keywords of the view; default the axes' limits); the legend names its size. None when no row touches."""
    normal = np.asarray(normal, dtype=float).reshape(-1)
    point = np.asarray(point, dtype=float).reshape(-1, 3)
    forces = normal[:, None] * contact_normals3d(model, q, point) + np.asarray(tangential, dtype=float).reshape(-1, 3)
    size = np.linalg.norm(forces, axis=1)
    largest = float(size.max()) if size.size else 0.0
    if not largest > 0.0:
        return None
    width = (limits["xlim"][1] - limits["xlim"][0]) if limits is not None else float(np.ptp(ax.get_xlim()))
    touching = size > 0.0
    scale = fraction * width / largest
    return ax.quiver(*point[touching].T, *(scale * forces[touching]).T, color="red", linewidth=1.2,
                     arrow_length_ratio=0.2, label=f"contact forces on the bodies (largest {largest:.4g} N)")


def snapshot3d(model, q, ax=None, color=None, alpha=1.0, label=None, legend=True, surfaces=True):
    """Draw a spatial model (``Model3D``) at configuration q (nq,) as a matplotlib 3D stick figure; returns the
    figure.

    Each body is drawn as bars from its joint point to its children's joints, its loop ends and its force
    elements' points (``spatial_sticks``), loops dashed between their points, joints as open circles, centres of
    mass as dots (area growing with the mass), the ground joints as black triangles, the contact surfaces (with
    ``surfaces``: ``surface_patches3d``) in grey within the view; axes x, y, z [m] with equal scales, framed to the
    figure (not to the surfaces, which an unbounded floor would make endless). ``color``: one colour for the whole
    model; default a colour per body (``body_colors``), named in a legend (``legend``; a model of more than 20
    bodies: one colour). ``ax``: a 3D axes (``projection="3d"``) to draw on; None makes a new figure (``figure``: no
    backend selected).
    """
    if not isinstance(model, Model3D):
        raise TypeError(f"snapshot3d draws a Model3D; got {type(model).__name__} (use draw for a planar Model)")
    if ax is None:
        fig, ax = figure(pyplot=None, subplot_kw={"projection": "3d"}, figsize=(6, 6))
    else:
        if getattr(ax, "name", None) != "3d":
            raise TypeError("snapshot3d needs a 3D axes: fig.add_subplot(projection='3d')")
        fig = ax.figure
    from mpl_toolkits.mplot3d.art3d import Line3DCollection  # noqa: PLC0415

    by_body = color is None and model.nbodies <= LONG_CHAIN
    palette = body_colors(model.nbodies) if by_body else None
    color = "C0" if color is None else color
    sticks = spatial_sticks(model, q)
    if len(sticks["segments"]):
        ax.add_collection3d(Line3DCollection(sticks["segments"], alpha=alpha, linewidths=2.0, label=label,
                                             colors=palette[sticks["segment_body"]] if by_body else color))
    if len(sticks["loops"]):  # the loops: dashed, from point a to point b (a point for a closed spherical loop)
        ax.add_collection3d(Line3DCollection(sticks["loops"], colors="0.3" if by_body else color, alpha=alpha,
                                             linewidths=1.2, linestyles="--"))
    joints_at, coms = sticks["joints"], sticks["coms"]
    body_color = palette if by_body else [color]
    ax.scatter(*joints_at.T, facecolors="white", edgecolors=body_color, alpha=alpha, s=25, depthshade=False)
    masses = model.body_mass
    sizes = 10.0 + 60.0 * masses / max(float(masses.max()), 1e-300)
    ax.scatter(*coms.T, color=body_color, alpha=alpha, s=sizes, depthshade=False)
    if len(sticks["ground"]):
        ax.scatter(*sticks["ground"].T, color="k", marker="^", s=40, depthshade=False)
    everything = np.vstack([joints_at, coms, sticks["ground"], sticks["segments"].reshape(-1, 3),
                            sticks["loops"].reshape(-1, 3)])
    low, high = everything.min(axis=0), everything.max(axis=0)
    centre, half = 0.5 * (low + high), 0.5 * max(float(np.max(high - low)), 1e-9) * 1.1
    limits = {"xlim": (centre[0] - half, centre[0] + half), "ylim": (centre[1] - half, centre[1] + half),
              "zlim": (centre[2] - half, centre[2] + half)}
    if surfaces:
        _draw_surfaces3d(model, q, ax, limits)
    ax.set(**limits, xlabel="x [m]", ylabel="y [m]", zlabel="z [m]")
    ax.set_box_aspect((1.0, 1.0, 1.0))
    if by_body and legend:
        _body_legend3d(ax, model, label)
    elif label:
        ax.legend(fontsize=7)
    return fig


def _body_legend3d(ax, model, label=None, extra=()):
    """A legend naming each body in its colour, then ``label`` (the drawing) and the ``extra`` handles."""
    from matplotlib.lines import Line2D  # noqa: PLC0415

    handles = [Line2D([], [], color=c, lw=3, label=name) for c, name in zip(body_colors(model.nbodies),
                                                                             model.names, strict=True)]
    if label:
        handles.append(Line2D([], [], color="0.4", lw=3, label=label))
    ax.legend(handles=[*handles, *extra], fontsize=7)


_QUATERNION = tuple((f"quaternion {c}", "-") for c in "wxyz")
_OMEGA = tuple((f"omega {c}", "rad/s") for c in "xyz")  # a quaternion joint's rates: omega in the child frame
_SPATIAL_COORDINATES = {  # joint type: (name, unit) of each entry of its q, and of its v
    "revolute": ((("angle", "rad"),), (("rate", "rad/s"),)),
    "prismatic": ((("slide", "m"),), (("speed", "m/s"),)),
    "cylindrical": ((("angle", "rad"), ("slide", "m")), (("rate", "rad/s"), ("speed", "m/s"))),
    "universal": ((("angle 1", "rad"), ("angle 2", "rad")), (("rate 1", "rad/s"), ("rate 2", "rad/s"))),
    "spherical": (_QUATERNION, _OMEGA),
    "planar": ((("x", "m"), ("y", "m"), ("angle", "rad")), (("x rate", "m/s"), ("y rate", "m/s"), ("rate", "rad/s"))),
    "free": ((("x", "m"), ("y", "m"), ("z", "m"), *_QUATERNION),
             (("x rate", "m/s"), ("y rate", "m/s"), ("z rate", "m/s"), *_OMEGA)),
    "fixed": ((), ())}


def spatial_coordinate_labels(model, kind="q"):
    """Labels of a spatial model's configuration q (nq,), or with kind "v" of its velocity v (nv,):
    "<body> <coordinate> [<unit>]" ("arm1 angle [rad]", "top quaternion w [-]", "top omega x [rad/s]"), in order."""
    column = {"q": 0, "v": 1}[kind]
    return [f"{name} {what} [{unit}]" for name, joint in zip(model.names, model.joint_types, strict=True)
            for what, unit in _SPATIAL_COORDINATES[joint][column]]


def spatial_snapshots(model, t, q, times, ax):
    """The spatial model at the samples (t (nt,), q (nt, nq)) nearest ``times`` on the 3D axes ``ax``, framed so
    that every snapshot fits (equal scales): each body in its colour, named in the legend, time by opacity (faint
    early, solid late); a model of more than 20 bodies one colour per time, light to dark; the contact surfaces
    once, in grey, at the last snapshot."""
    from matplotlib.lines import Line2D  # noqa: PLC0415

    index = [int(np.argmin(np.abs(np.asarray(t) - ti))) for ti in times]
    count = len(index)
    alphas = [0.25 + 0.75 * (k + 1) / count for k in range(count)]
    stamps = [f"t = {t[i]:.3g} s" for i in index]
    if model.nbodies <= LONG_CHAIN:
        for i, alpha in zip(index, alphas, strict=True):
            snapshot3d(model, q[i], ax, alpha=alpha, legend=False, surfaces=False)
        _body_legend3d(ax, model, extra=[Line2D([], [], color="0.3", alpha=alpha, lw=3, label=stamp)
                                         for alpha, stamp in zip(alphas, stamps, strict=True)])
    else:
        from matplotlib import colormaps  # noqa: PLC0415
        from matplotlib.colors import to_hex  # noqa: PLC0415

        for i, shade, stamp in zip(index, colormaps["Blues"](np.linspace(0.4, 1.0, count)), stamps, strict=True):
            snapshot3d(model, q[i], ax, color=to_hex(shade), label=stamp, surfaces=False)
    limits = _cube_limits(model, [q[i] for i in index])
    _draw_surfaces3d(model, q[index[-1]], ax, limits)  # once, where the last snapshot's bodies carry them
    ax.set(**limits)
    return ax.figure


def _cube_limits(model, qs):
    """The x, y, z limits (``ax.set`` keywords) of a cube with equal scales around the stick figures of the spatial
    model at the configurations ``qs`` (their joints, centres of mass, ground joints and loop points), 10% margin."""
    points = []
    for q in qs:
        sticks = spatial_sticks(model, q)
        points.append(np.vstack([sticks["joints"], sticks["coms"], sticks["ground"], sticks["loops"].reshape(-1, 3)]))
    points = np.vstack(points)
    low, high = points.min(axis=0), points.max(axis=0)
    centre, half = 0.5 * (low + high), 0.55 * max(float(np.max(high - low)), 1e-9)
    return {"xlim": (centre[0] - half, centre[0] + half), "ylim": (centre[1] - half, centre[1] + half),
            "zlim": (centre[2] - half, centre[2] + half)}


def _spatial_dynamics(result, model):
    """``spatial_overview`` of a dynamics result: 3D snapshots at four times (a contact model's forces as arrows at
    the last), then q, the energy (balance), the loop drift and the contacts (total normal force, touching rows)
    against time."""
    from matplotlib.figure import Figure  # noqa: PLC0415

    t, q = np.asarray(result["t"], dtype=float), np.asarray(result["q"], dtype=float)
    labels = spatial_coordinate_labels(model)
    chosen = _selection(q.shape[1])
    contacts = "contact_normal" in result
    panels = [*_unit_groups(labels, chosen),
              *(key for key in ("energy", "drift") if key in result), *(("contacts",) if contacts else ())]
    fig = Figure(figsize=(8, 6 + 2.8 * len(panels)))
    grid = fig.add_gridspec(1 + len(panels), 1, height_ratios=[2.2] + [1.0] * len(panels))
    view = fig.add_subplot(grid[0], projection="3d")
    spatial_snapshots(model, t, q, np.linspace(t[0], t[-1], 4), view)
    if contacts:  # the contact forces at the last snapshot, with a legend of their own
        arrows = contact_arrows3d(model, q[-1], result["contact_normal"][-1], result["contact_tangential"][-1],
                                  result["contact_point"][-1], view)
        if arrows is not None:
            bodies = view.get_legend()
            view.legend(handles=[arrows], fontsize=7, loc="lower left")
            if bodies is not None:
                view.add_artist(bodies)
    for row, panel in enumerate(panels, start=1):
        ax = fig.add_subplot(grid[row])
        if isinstance(panel, tuple):  # the coordinates of one unit
            unit, members = panel
            time_series(t, q[:, members], [labels[k] for k in members], ax, _coordinate_quantity(unit))
            if row == 1 and chosen.size < q.shape[1]:
                ax.set_title(f"{chosen.size} of {q.shape[1]} coordinates, spread along the model", fontsize=8)
        else:
            _result_panel(panel, t, result, ax)
    fig.suptitle(_result_title(result, model, str(result.get("kind", "dynamics"))), fontsize=10)
    fig.tight_layout()
    return fig


def spatial_overview(result, model, most=4, amplitude=0.3):
    """The figure ``rmbd plot`` draws for a spatial model's result (a dict of the .npz ``rmbd run`` wrote): for
    dynamics, 3D snapshots at four times (with a contact model's surfaces and forces) over the coordinates, the energy
    (balance), the loop drift and the contacts against time;
    otherwise the static equilibrium q as a 3D snapshot, and for modes one 3D panel per mode (at most ``most``): the
    equilibrium (grey) and the configuration displaced along the mode, q (+) s shape, with s such that the largest
    velocity-space component is ``amplitude`` [rad or m]."""
    if "t" in result:
        return _spatial_dynamics(result, model)
    q = np.asarray(result["q"], dtype=float)
    omega = np.asarray(result["omega"]) if "omega" in result else np.zeros(0)
    count = min(most, omega.size)
    fig, axes = figure(1, max(count, 1), pyplot=False, subplot_kw={"projection": "3d"},
                       figsize=(5 * max(count, 1), 5), squeeze=False)
    axes = axes[0]
    fig.suptitle(_result_title(result, model, "modes" if count else "statics"), fontsize=10)
    if count == 0:
        snapshot3d(model, q, axes[0], label="static equilibrium")
        return fig
    shapes = np.asarray(result["shapes"], dtype=float)
    for k, ax in enumerate(axes):
        shape = shapes[:, k] * amplitude / max(float(np.abs(shapes[:, k]).max()), 1e-300)
        snapshot3d(model, q, ax, color="0.6", alpha=0.5)
        snapshot3d(model, integrate_configuration(model, q, shape), ax, legend=k == 0)
        ax.set_title(f"mode {k + 1}: {omega[k]:.4g} rad/s")
    return fig
