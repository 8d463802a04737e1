"""One figure of a whole result (``overview``, as ``rmbd plot`` draws it) and animations (``animate``)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

from .. import _checks
from ..dynamics.kinematics import forward_kinematics
from ..errors import StateError
from ..integrate.runs import progress_bar
from ..model.spatial import Model3D
from .mechanism import (
    Outline,
    _Artists,
    _body_legend,
    _draw_ground,
    _draw_surfaces,
    _ForceArtists,
    _frame,
    contact_arrows,
    draw,
    force_scale,
    mode_shapes,
    reaction_arrows,
    reaction_bars,
    snapshots,
)
from .series import (
    LONG_CHAIN,
    _contact_panel,
    _coordinate_quantity,
    _model_title,
    _require_matplotlib,
    _result_panel,
    _result_title,
    _selection,
    _unit_groups,
    coordinate_labels,
    driving_forces,
    figure,
    joint_labels,
    names_units,
    reactions,
    time_series,
)
from .spatial import _cube_limits, _draw_surfaces3d, contact_arrows3d, snapshot3d, spatial_overview


class _Samples:
    """(t, q) in the shape ``snapshots`` reads."""

    def __init__(self, t, q):
        self.t, self.q = t, q


def _as_arrays(result):
    """The arrays of a SimulationResult or KinematicResult under the names ``rmbd run`` saves; a mapping as is."""
    if hasattr(result, "dissipated_work"):  # SimulationResult
        data = {"kind": "dynamics", "method": result.method, "t": result.t, "q": result.q, "qd": result.qd,
                "dissipated_work": result.dissipated_work, "applied_work": result.applied_work}
        if result.model is not None:
            kinetic, potential = result.energy()
            data["energy"] = kinetic + potential
        if result.constraint_drift is not None:
            data["drift"] = result.constraint_drift
        if result.model is not None and getattr(result, "contact_state", None) is not None:
            data.update(contact_arrays(result.contact_forces()))
        return data
    if hasattr(result, "driving_forces") and hasattr(result, "driven"):  # KinematicResult
        return {"kind": "kinematics", "t": result.t, "q": result.q, "qd": result.qd, "qdd": result.qdd,
                "driving_forces": result.driving_forces, "driven": result.driven,
                "joint_reactions": result.joint_reactions, "loop_forces": result.loop_forces}
    return result


CONTACT_KEYS = ("normal", "tangential", "point", "active")  # of SimulationResult.contact_forces(), as plotted


def contact_arrays(forces):
    """The arrays of ``SimulationResult.contact_forces()`` that ``overview`` and ``animate`` draw, under the names
    ``rmbd run`` saves them (contact_normal, contact_tangential, contact_point, contact_active)."""
    return {f"contact_{key}": forces[key] for key in CONTACT_KEYS}


def _stored_labels(data, model, kind, count):
    """Labels of the coordinates (kind "q", "qd", "qdd", "tau"): from the model, else from the bodies' names, joint
    types and parents a result file stores, else plain "q1" (a result written before they were stored)."""
    if model is not None:
        return coordinate_labels(model, kind)
    if all(key in data for key in ("body_names", "joint_type", "body_parent")):
        names, units = names_units([str(n) for n in data["body_names"]], data["joint_type"], data["body_parent"],
                                   kind)
        if len(names) == count:
            return [f"{name} [{unit}]" for name, unit in zip(names, units, strict=True)]
    return [f"{kind}{k + 1}" for k in range(count)]


def _absolute_angles(t, q, model, ax, most=5):
    """The angle to the ground of ``most`` bodies spread along a long chain (their relative angles are flat)."""
    chosen = _selection(model.nbodies, most)
    angles = np.array([forward_kinematics(model, row)[0][chosen, 2] for row in q])
    names = [f"{model.body_names[i]} absolute angle [rad]" for i in chosen]
    time_series(t, angles, names, ax, "absolute angle")
    ax.set_title(f"angles to the ground of {chosen.size} of {model.nbodies} bodies, spread along the model",
                 fontsize=8)


def overview(result, model=None, pyplot=None):
    """One figure of everything a result holds, as ``rmbd plot`` draws it.

    ``result``: a SimulationResult or KinematicResult (its model is used), or a mapping of the arrays ``rmbd run``
    saves (``kind`` "dynamics" | "kinematics" | "statics" | "modes", ``q``, ``t``, ``method``, ...). The title names
    the model (its ``name``, else its size), the analysis and its method. With a model the mechanism is drawn too:
    snapshots (dynamics, kinematics; each body in its colour, time by opacity), the equilibrium (statics), the mode
    shapes (modes). Panels: coordinates, one panel per unit (angles [rad], positions [m]); a model of more than 20
    bodies (a long chain) is drawn by its shape, with the angles to the ground of a few bodies instead of every
    relative angle; energy (the balance when work was done) and loop drift (dynamics); driving forces and reaction
    forces (kinematics); reaction forces (statics). A contact model's dynamics: its surfaces and shapes in the
    drawing, the contact forces as arrows at the last snapshot, and a panel of the total normal force and the
    number of touching contact rows (the arrays ``contact_normal``, ``contact_tangential``, ``contact_point``,
    ``contact_active`` of ``rmbd run``, or ``result.contact_forces()``). A spatial model's result is drawn by
    ``spatial_overview`` (``pyplot`` aside: a figure without a backend).
    """
    data = _as_arrays(result)
    model = model if model is not None else getattr(result, "model", None)
    if isinstance(model, Model3D):
        return spatial_overview(data, model)
    kind = str(data["kind"]) if "kind" in data else "dynamics"
    q = np.asarray(data["q"])
    nq = q.shape[-1]
    if model is not None and model.nq != nq:
        raise ValueError(f"the result has {nq} coordinates but the model {model.nq}")
    if model is not None:
        joint_names = joint_labels(model.body_names, model.body_parent)
        loop_names = list(model.loop_names)
    else:
        joint_names = joint_labels([str(n) for n in data["body_names"]], data["body_parent"]) if all(
            key in data for key in ("body_names", "body_parent")) else None
        loop_names = [str(n) for n in data["loop_names"]] if "loop_names" in data else None
    if kind == "modes":
        omega, shapes = np.asarray(data["omega"]), np.asarray(data["shapes"])
        if model is not None:
            count = min(4, omega.size)
            fig, axes = figure(1, count, pyplot=pyplot, figsize=(3.2 * count + 0.6, 4.1), squeeze=False)
            mode_shapes(model, q, shapes, omega, axes=list(axes[0]))
        else:
            fig, ax = figure(pyplot=pyplot, figsize=(7, 4.3))
            for k, w in enumerate(omega):
                ax.plot(np.arange(nq), shapes[:, k] / np.abs(shapes[:, k]).max(), "-o", ms=3,
                        label=f"mode {k + 1}: {w / (2 * np.pi):.4g} Hz ({w:.4g} rad/s)")
            if nq <= 20:
                ax.set_xticks(np.arange(nq), _stored_labels(data, None, "q", nq), rotation=30, ha="right",
                              fontsize=7)
            ax.set(ylabel="mode shape (largest entry 1) [-]", title="mode shapes in joint coordinates")
            ax.legend(fontsize=7)
    elif kind == "statics":
        panels = 2 if model is not None else 1
        fig, axes = figure(panels, 1, pyplot=pyplot, figsize=(8, 4 * panels + 0.3), squeeze=False)
        if model is not None:
            draw(model, q, axes[0, 0])
            reaction_arrows(model, q, data["joint_reactions"], axes[0, 0])
            if model.nbodies <= LONG_CHAIN:  # the bodies, then the arrows' scale
                _body_legend(axes[0, 0], model, axes[0, 0].get_legend_handles_labels()[0])
            else:
                axes[0, 0].legend(fontsize=7)
        reaction_bars(data["joint_reactions"], data.get("loop_forces"), axes[-1, 0], joint_names, loop_names)
        stable = "stable" if "eigenvalues" in data and np.all(np.asarray(data["eigenvalues"]) > 0) else \
            "stability not known"
        axes[0, 0].set_title(f"static equilibrium ({stable})", fontsize=9)
    else:
        fig = _time_overview(data, model, kind, q, pyplot, joint_names, loop_names)
    fig.suptitle(_result_title(data, model, kind), fontsize=10)
    fig.tight_layout()
    return fig


def _time_overview(data, model, kind, q, pyplot, joint_names, loop_names):
    """``overview`` of a result against time (dynamics, kinematics)."""
    t = np.asarray(data["t"])
    nq = q.shape[-1]
    labels = _stored_labels(data, model, "q", nq)
    panels = ["mechanism"] if model is not None else []
    chosen = _selection(nq)
    if model is not None and model.nbodies > LONG_CHAIN:
        panels.append("angles")
    else:
        panels += [("q", unit, members) for unit, members in _unit_groups(labels, chosen)]
    if kind == "kinematics":
        panels += ["driving"] if np.size(data.get("driving_forces", ())) else []
        panels += ["reactions"] if "joint_reactions" in data else []
    else:
        panels += [key for key in ("energy", "drift") if key in data]
        panels += ["contacts"] if "contact_normal" in data else []
    heights = [1.8 if panel == "mechanism" else 1.0 for panel in panels]
    fig, axes = figure(len(panels), 1, pyplot=pyplot, figsize=(8, 2.8 * sum(heights) + 0.8), squeeze=False,
                       gridspec_kw={"height_ratios": heights})
    first_q = True
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        if panel == "mechanism":
            snapshots(model, _Samples(t, q), np.linspace(t[0], t[-1], 4), ax)
            if "contact_normal" in data and model.ncontacts == np.shape(data["contact_normal"])[-1]:
                bodies = ax.get_legend()
                arrows = contact_arrows(model, q[-1], data["contact_normal"][-1], data["contact_tangential"][-1],
                                        data["contact_point"][-1], ax)
                if arrows is not None:  # a legend of its own, beside the bodies' and times'
                    ax.legend(handles=[arrows], fontsize=7, loc="lower left")
                    if bodies is not None:
                        ax.add_artist(bodies)
        elif panel == "contacts":
            _contact_panel(t, data, ax)
        elif panel == "angles":
            _absolute_angles(t, q, model, ax)
        elif panel == "driving":
            forces = np.asarray(data["driving_forces"])
            driven = data["driven"] if "driven" in data else np.arange(forces.shape[1])
            driving_forces(t, forces, driven, ax=ax, labels=_stored_labels(data, model, "tau", nq))
        elif panel == "reactions":
            reactions(t, data["joint_reactions"], data.get("loop_forces"), ax, joint_names, loop_names)
        elif isinstance(panel, tuple):
            _, unit, members = panel
            time_series(t, q[:, members], [labels[k] for k in members], ax, _coordinate_quantity(unit))
            if first_q and chosen.size < nq:
                ax.set_title(f"{chosen.size} of {nq} coordinates, spread along the model", fontsize=8)
            first_q = False
        else:
            _result_panel(panel, t, data, ax)
    return fig


DEFAULT_FPS = 25  # frames per second of playback, unless the samples are sparser


def animation_frames(t, fps=None, speed=1.0, frames=None):
    """Which samples an animation shows, and at how many frames per second, so that it plays in real time.

    Frames are taken every ``speed / fps`` seconds of the samples' time (the sample nearest each frame time):
    ``speed`` seconds of motion per second of playback, ``fps`` frames per second (default 25). Samples sparser
    than that give one frame per sample, at the rate that keeps the playback in real time (fewer fps); ``frames``
    caps the count, the fps lowered to keep the duration. 10 s sampled every 0.01 s: 251 frames at 25 fps, 10 s of
    playback (``speed=2``: 126 frames, 5 s).

    Returns ``(index, fps)``: the sample index of each frame (nframes,) and the frames per second.
    """
    t = _checks.finite_array(t, "t").reshape(-1)
    speed = _checks.real(speed, "speed", low=0.0, strict=True)
    fps = _checks.real(fps, "fps", low=0.0, strict=True, allow_none=True)
    if frames is not None:
        frames = _checks.integer(frames, "frames", low=1)
    if t.size == 0:
        raise StateError("t is empty: no samples to animate")
    steps = np.diff(t)
    if np.any(steps < 0):
        raise StateError(f"t must not decrease: t[{int(np.argmax(steps < 0)) + 1}] is before the sample before it")
    target = DEFAULT_FPS if fps is None else fps
    span = float(t[-1] - t[0])
    if span == 0.0:  # one sample, or all at one time: a still picture
        return np.zeros(1, dtype=int), float(target)
    sample_rate = speed / float(np.median(steps[steps > 0]))  # samples per second of playback
    rate = min(target, sample_rate)
    count = int(np.floor(span / speed * rate * (1 + 1e-12))) + 1
    if frames is not None and count > frames:
        count = frames
        rate = (count - 1) * speed / span if count > 1 else rate
    times = t[0] + np.arange(count) * (speed / rate)
    above = np.clip(np.searchsorted(t, times), 1, t.size - 1)
    index = np.where(times - t[above - 1] <= t[above] - times, above - 1, above)
    return index, float(rate)


def _write(movie, path, fps, dpi, count, progress):
    """Save ``movie`` (``count`` frames) to ``path`` (.gif: Pillow, else ffmpeg) with a progress bar (tqdm) when
    ``progress`` (None: when stderr is a terminal and tqdm is installed)."""
    from matplotlib.animation import FFMpegWriter, PillowWriter  # noqa: PLC0415

    writer = PillowWriter(fps=fps) if str(path).endswith(".gif") else FFMpegWriter(fps=fps)
    if progress is None:  # by default a bar on a terminal when tqdm is there, else nothing (and no warning)
        progress = sys.stderr.isatty() and importlib.util.find_spec("tqdm") is not None
    bar = progress_bar(progress, count, f"writing {Path(path).name}", "frame")
    try:
        movie.save(path, writer=writer, dpi=dpi, progress_callback=None if bar is None else (
            lambda done, total: bar.update(1)))
    finally:
        if bar is not None:
            bar.close()
    return path


def _animate3d(model, t, q, index, path, fps, dpi, progress, contact_forces):
    """``animate`` for a spatial model: each frame a ``snapshot3d`` with its contact forces, the axes fixed to the
    extent of every frame, the forces' arrows to one scale (the largest over the frames 15 % of the view)."""
    from matplotlib.animation import FuncAnimation  # noqa: PLC0415

    fig, ax = figure(pyplot=False, subplot_kw={"projection": "3d"}, figsize=(6, 6))
    limits = _cube_limits(model, [q[k] for k in index])
    name = _model_title(model)
    if contact_forces is not None:
        forces = [np.asarray(contact_forces[key], dtype=float)[index] for key in ("normal", "tangential", "point")]
        sizes = np.hypot(forces[0], np.linalg.norm(forces[1], axis=-1))  # (frames, rows): normal and friction
        largest = float(sizes.max(initial=0.0))

    def frame(k):
        ax.cla()
        snapshot3d(model, q[index[k]], ax, surfaces=False)
        _draw_surfaces3d(model, q[index[k]], ax, limits)  # cut to the animation's view, not the frame's
        if contact_forces is not None and largest > 0.0:
            normal, tangential, point = (value[k] for value in forces)
            contact_arrows3d(model, q[index[k]], normal, tangential, point, ax, 0.15 * sizes[k].max() / largest,
                             limits)
        ax.set(**limits, title=f"{name}: t = {t[index[k]]:.3f} s")
        return []

    movie = FuncAnimation(fig, frame, frames=len(index), blit=False)
    return _write(movie, path, fps, dpi, len(index), progress)


def _require_writer(path):
    """A FileNotFoundError naming ffmpeg and what to do, before anything is drawn, when ``path`` (not a .gif) needs
    ffmpeg and matplotlib cannot find it."""
    from matplotlib.animation import writers  # noqa: PLC0415

    if not str(path).endswith(".gif") and not writers.is_available("ffmpeg"):
        raise FileNotFoundError(f"{path}: writing this animation needs ffmpeg, which is not installed (not on PATH, "
                                "nor at matplotlib's rcParams['animation.ffmpeg_path']): install it (apt install "
                                "ffmpeg, brew install ffmpeg or conda install ffmpeg) or write a .gif (Pillow)")


def animate(model, t, q, path, fps=None, frames=None, dpi=80, speed=1.0, progress=None, contact_forces=None):
    """Write an animation of the samples (t, q) to ``path`` (.gif with Pillow, .mp4 with ffmpeg), framed to the
    extent of every frame, in real time: ``speed`` seconds of motion per second of playback (2: twice as fast),
    ``fps`` frames per second (default 25, fewer when the samples are sparser), at most ``frames`` frames
    (``animation_frames`` picks the samples). ``progress``: a progress bar over the frames (tqdm, the ``progress``
    extra); default: on a terminal when tqdm is installed, else none. A spatial model (``Model3D``) is animated as
    3D snapshots (``snapshot3d``). A contact model's surfaces and shapes are drawn (a drum a body carries turns
    with it); ``contact_forces``, the mapping ``SimulationResult.contact_forces()`` returns (normal, tangential,
    point at the samples), adds the contact forces as arrows, the largest over the frames 15 % of the drawing's
    size. Returns ``path``.

    Raises StateError (``animation_frames``) for fps, speed or frames not > 0 or decreasing times, and
    FileNotFoundError, naming ffmpeg, when ``path`` is no .gif and ffmpeg is not installed (before drawing)."""
    _require_matplotlib()
    _require_writer(path)
    from matplotlib.animation import FuncAnimation  # noqa: PLC0415

    t = np.asarray(t, dtype=float).reshape(-1)
    index, fps = animation_frames(t, fps, speed, frames)
    if isinstance(model, Model3D):
        return _animate3d(model, t, q, index, path, fps, dpi, progress, contact_forces)
    fig, ax = figure(pyplot=False)
    outline = Outline(model)
    placements = [outline.place(q[k]) for k in index]
    by_body = model.nbodies <= LONG_CHAIN
    artists = _Artists(ax, outline, placements[0], None if by_body else "C0", 1.0, None, model.nbodies > 60)
    _draw_ground(ax, outline, placements)
    bounds = [outline.extent(placed) for placed in placements]
    low, high = np.min([b[0] for b in bounds], axis=0), np.max([b[1] for b in bounds], axis=0)
    _frame(ax, low, high)
    surfaces = _draw_surfaces(ax, outline, placements[:1], [1.0])
    arrows, forces = None, None
    if contact_forces is not None:
        forces = [np.asarray(contact_forces[key], dtype=float)[index] for key in ("normal", "tangential", "point")]
        scale, largest = force_scale(outline, forces, low, high)
        if largest > 0.0:
            arrows = _ForceArtists(ax, outline, scale, f"contact forces (largest {largest:.4g} N)")
    if by_body:
        _body_legend(ax, model, [arrows.lines] if arrows is not None else ())
    elif arrows is not None:
        ax.legend(fontsize=7)
    name = _model_title(model)
    label = ax.set_title("")

    def frame(k):
        moved = artists.move(placements[k])
        for surface in surfaces:
            moved += surface.move(placements[k])
        if arrows is not None:
            moved += arrows.move(placements[k], [value[k] for value in forces])
        label.set_text(f"{name}: t = {t[index[k]]:.3f} s")
        return [*moved, label]

    movie = FuncAnimation(fig, frame, frames=len(index), blit=False)
    return _write(movie, path, fps, dpi, len(index), progress)
