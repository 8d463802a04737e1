"""Plots and animation with matplotlib (the optional extra ``plot``): coordinates, energy balance, constraint drift,
driving forces and joint reactions against time, drawings of the mechanism, mode shapes, and an animation written
to .gif (Pillow) or .mp4 (ffmpeg).

Every axis and legend names the body and the unit (``coordinate_labels``): "crank angle [rad]", "rod angle rel.
crank [rad]" (a joint coordinate is relative to the parent body), "piston position [m]"; one unit per axis (angles
and positions on panels of their own, or on a second y axis). ``overview`` titles the figure with the model (its
name, else its size), the analysis and its method.

Mechanism drawings (``draw``, ``snapshots``, ``mode_shapes``, ``animate``) are in x [m] / y [m] with equal aspect,
framed to the extent of everything drawn. Each body has its own colour (``body_colors``), named in the legend;
snapshots at several times show the time by opacity (faint early, solid late). A model of more than 20 bodies (a
long chain) is drawn by its shape, one colour per time, and ``overview`` plots the angles to the ground of a few of
its bodies instead of every relative angle. A body is drawn from the points where it is attached (its joint, its
children's joints, loops, spring-dampers), in its own frame:

- points on one line: a bar between the outermost two (a rod); two points diagonal in the body frame: the
  rectangle they span (a block, e.g. ``rm.models.two_squares``); three or more points not on a line: the plate
  they span;
- a body attached at one point only: a bar from that point through the centre of mass, as long as the uniform rod of
  the body's mass and inertia (the free end of a chain's last link), with a bob at the centre of mass when the
  inertia is that of a point mass; a body whose only point is its centre of mass: a disc of its radius of gyration;
- a body on a prismatic joint (tree or loop): a block along the sliding axis (a piston), in a guide;
- revolute joints: small open circles; spring-dampers: a zig-zag (spring) beside a dashpot (damper) between their
  points; joint springs: a coil around a revolute joint, a zig-zag along a prismatic one; the ground: a hatched
  support under every ground joint and spring anchor;
- contacts: each body's contact shapes as thin outlines in its colour (circles, capsules); a ground surface
  (``add_ground``) as a line over its extent, hatched on its solid side (an unbounded side reaches to the edge of the
  view); a drum as a grey disc with a spoke that turns with the body carrying it; ``contact_arrows`` draws the
  contact forces at a sample (normal plus friction) as red arrows, and so do ``overview`` (at the last snapshot)
  and ``animate`` (each frame) when given them.

Spatial models (``Model3D``): ``snapshot3d`` (and ``draw``, which dispatches to it) draws a configuration as a
matplotlib 3D stick figure (``spatial_sticks``: bars from each body's joint to its children's joints, its loop
ends and its force elements' points, to its centre of mass only when attached nowhere else; centres of mass as dots,
loops dashed) and its contact surfaces in grey (``surface_patches3d``: a ground's rectangle over its extent, a
drum's cylinder, cut to the view), x / y / z [m] at equal scales; ``contact_arrows3d`` the contact forces as red
arrows (normal plus friction, ``contact_normals3d``), as ``overview`` (at the last snapshot) and ``animate`` (each
frame) draw them; ``spatial_overview`` (and ``overview``, which
dispatches to it) draws a spatial dynamics, statics or modes result, ``animate`` a spatial motion.

Animations (``animate``, ``rmbd animate``) play in real time: a frame every 1/25 s of motion (``fps``; every sample
when they are sparser), ``speed`` seconds of motion per second of playback (``animation_frames``), with a progress
bar while writing (tqdm) on a terminal.

Library code never selects a matplotlib backend: when ``matplotlib.pyplot`` is already imported (the user works with
pyplot) new figures come from it, otherwise from ``matplotlib.figure.Figure``, which needs no backend to be saved.
"""

from .mechanism import (
    Outline,
    contact_arrows,
    draw,
    mode_shapes,
    reaction_arrows,
    reaction_bars,
    snapshots,
)
from .overview import (
    animate,
    animation_frames,
    overview,
)
from .series import (
    QUANTITY_KINDS,
    body_colors,
    coordinate_labels,
    coordinate_names_units,
    drift,
    driving_forces,
    energy,
    figure,
    joint_labels,
    names_units,
    reactions,
    time_series,
    trajectories,
)
from .spatial import (
    contact_arrows3d,
    contact_normals3d,
    snapshot3d,
    spatial_coordinate_labels,
    spatial_overview,
    spatial_snapshots,
    spatial_sticks,
    surface_patches3d,
)

__all__ = [
    "animate", "animation_frames", "body_colors", "contact_arrows", "contact_arrows3d", "contact_normals3d",
    "coordinate_labels", "coordinate_names_units",
    "draw", "drift", "driving_forces", "energy", "figure", "joint_labels", "mode_shapes", "names_units", "Outline",
    "overview", "QUANTITY_KINDS", "reaction_arrows", "reaction_bars", "reactions", "snapshot3d", "snapshots",
    "spatial_coordinate_labels", "spatial_overview", "spatial_snapshots", "spatial_sticks", "surface_patches3d",
    "time_series", "trajectories",
]
