"""One figure of a whole result (``overview``, as ``rmbd plot`` draws it) and animations (``animate``)."""

import numpy as np

from ..model.spatial import Model3D
from .mechanism import (
    Outline,
    _Artists,
    _draw_ground,
    _frame,
    draw,
    mode_shapes,
    reaction_arrows,
    reaction_bars,
    snapshots,
)
from .series import (
    _require_matplotlib,
    _result_panel,
    coordinate_labels,
    driving_forces,
    figure,
    joint_labels,
    names_units,
    reactions,
    trajectories,
)
from .spatial import _cube_limits, snapshot3d


class _Samples:
    """(t, q) in the shape ``snapshots`` reads."""

    def __init__(self, t, q):
        self.t, self.q = t, q


def _as_arrays(result):
    """The arrays of a SimulationResult or KinematicResult under the names ``rmbd run`` saves; a mapping as is."""
    if hasattr(result, "dissipated_work"):  # SimulationResult
        data = {"kind": "dynamics", "t": result.t, "q": result.q, "qd": result.qd,
                "dissipated_work": result.dissipated_work, "applied_work": result.applied_work}
        if result.model is not None:
            kinetic, potential = result.energy()
            data["energy"] = kinetic + potential
        if result.constraint_drift is not None:
            data["drift"] = result.constraint_drift
        return data
    if hasattr(result, "driving_forces") and hasattr(result, "driven"):  # KinematicResult
        return {"kind": "kinematics", "t": result.t, "q": result.q, "qd": result.qd, "qdd": result.qdd,
                "driving_forces": result.driving_forces, "driven": result.driven,
                "joint_reactions": result.joint_reactions, "loop_forces": result.loop_forces}
    return result


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


def overview(result, model=None, pyplot=None):
    """One figure of everything a result holds, as ``rmbd plot`` draws it.

    ``result``: a SimulationResult or KinematicResult (its model is used), or a mapping of the arrays ``rmbd run``
    saves (``kind`` "dynamics" | "kinematics" | "statics" | "modes", ``q``, ``t``, ...). With a model the mechanism is
    drawn too: snapshots (dynamics, kinematics), the equilibrium (statics), the mode shapes (modes). Panels:
    coordinates; energy (the balance when work was done) and loop drift (dynamics); driving forces and reaction
    forces (kinematics); reaction forces (statics).
    """
    data = _as_arrays(result)
    model = model if model is not None else getattr(result, "model", None)
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
            fig, axes = figure(1, count, pyplot=pyplot, figsize=(3.2 * count + 0.6, 3.8), squeeze=False)
            mode_shapes(model, q, shapes, omega, axes=list(axes[0]))
        else:
            fig, ax = figure(pyplot=pyplot, figsize=(7, 4))
            for k, w in enumerate(omega):
                ax.plot(np.arange(nq), shapes[:, k] / np.abs(shapes[:, k]).max(), "-o", ms=3,
                        label=f"mode {k + 1}: {w / (2 * np.pi):.4g} Hz ({w:.4g} rad/s)")
            if nq <= 20:
                ax.set_xticks(np.arange(nq), _stored_labels(data, None, "q", nq), rotation=30, ha="right",
                              fontsize=7)
            ax.set(ylabel="mode shape (largest entry 1)", title="mode shapes in joint coordinates")
            ax.legend(fontsize=7)
    elif kind == "statics":
        panels = 2 if model is not None else 1
        fig, axes = figure(panels, 1, pyplot=pyplot, figsize=(8, 4 * panels), squeeze=False)
        if model is not None:
            draw(model, q, axes[0, 0], label="static equilibrium")
            reaction_arrows(model, q, data["joint_reactions"], axes[0, 0])
            axes[0, 0].legend(fontsize=7)
        reaction_bars(data["joint_reactions"], data.get("loop_forces"), axes[-1, 0], joint_names, loop_names)
        stable = "stable" if "eigenvalues" in data and np.all(np.asarray(data["eigenvalues"]) > 0) else \
            "stability not known"
        axes[0, 0].set_title(f"static equilibrium ({stable})", fontsize=9)
    else:
        t = np.asarray(data["t"])
        panels = ["mechanism"] if model is not None else []
        panels.append("q")
        if kind == "kinematics":
            panels += ["driving"] if np.size(data.get("driving_forces", ())) else []
            panels += ["reactions"] if "joint_reactions" in data else []
        else:
            panels += [key for key in ("energy", "drift") if key in data]
        heights = [1.8 if panel == "mechanism" else 1.0 for panel in panels]
        fig, axes = figure(len(panels), 1, pyplot=pyplot, figsize=(8, 2.8 * sum(heights) + 0.5), squeeze=False,
                           gridspec_kw={"height_ratios": heights})
        for ax, panel in zip(axes[:, 0], panels, strict=True):
            if panel == "mechanism":
                snapshots(model, _Samples(t, q), np.linspace(t[0], t[-1], 4), ax)
            elif panel == "q":
                trajectories(t, q, ax, names=_stored_labels(data, model, "q", nq))
            elif panel == "driving":
                forces = np.asarray(data["driving_forces"])
                driven = data["driven"] if "driven" in data else np.arange(forces.shape[1])
                driving_forces(t, forces, driven, ax=ax, labels=_stored_labels(data, model, "tau", nq))
            elif panel == "reactions":
                reactions(t, data["joint_reactions"], data.get("loop_forces"), ax, joint_names, loop_names)
            else:
                _result_panel(panel, t, data, ax)
    fig.tight_layout()
    return fig


def _animate3d(model, t, q, index, path, fps, dpi):
    """``animate`` for a spatial model: each frame a ``snapshot3d``, the axes fixed to the extent of every frame."""
    from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter  # noqa: PLC0415

    fig, ax = figure(pyplot=False, subplot_kw={"projection": "3d"}, figsize=(6, 6))
    limits = _cube_limits(model, [q[k] for k in index])

    def frame(k):
        ax.cla()
        snapshot3d(model, q[index[k]], ax)
        ax.set(**limits, title=f"t = {t[index[k]]:.3f} s")
        return []

    movie = FuncAnimation(fig, frame, frames=len(index), blit=False)
    writer = PillowWriter(fps=fps) if str(path).endswith(".gif") else FFMpegWriter(fps=fps)
    movie.save(path, writer=writer, dpi=dpi)
    return path


def _require_writer(path):
    """A FileNotFoundError naming ffmpeg and what to do, before anything is drawn, when ``path`` (not a .gif) needs
    ffmpeg and matplotlib cannot find it."""
    from matplotlib.animation import writers  # noqa: PLC0415

    if not str(path).endswith(".gif") and not writers.is_available("ffmpeg"):
        raise FileNotFoundError(f"{path}: writing this animation needs ffmpeg, which is not installed (not on PATH, "
                                "nor at matplotlib's rcParams['animation.ffmpeg_path']): install it (apt install "
                                "ffmpeg, brew install ffmpeg or conda install ffmpeg) or write a .gif (Pillow)")


def animate(model, t, q, path, fps=25, frames=None, dpi=80):
    """Write an animation of the samples (t, q) to ``path`` (.gif with Pillow, .mp4 with ffmpeg), framed to the
    extent of every frame. A spatial model (``Model3D``) is animated as 3D snapshots (``snapshot3d``).

    Raises FileNotFoundError, naming ffmpeg, when ``path`` is no .gif and ffmpeg is not installed."""
    _require_matplotlib()
    _require_writer(path)
    from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter  # noqa: PLC0415

    count = t.size if frames is None else min(frames, t.size)
    if isinstance(model, Model3D):
        return _animate3d(model, t, q, np.linspace(0, t.size - 1, count).round().astype(int), path, fps, dpi)
    index = np.linspace(0, t.size - 1, count).round().astype(int)
    fig, ax = figure(pyplot=False)
    outline = Outline(model)
    placements = [outline.place(q[k]) for k in index]
    artists = _Artists(ax, outline, placements[0], "C0", 1.0, None, model.nbodies > 60)
    _draw_ground(ax, outline, placements)
    bounds = [outline.extent(placed) for placed in placements]
    _frame(ax, np.min([b[0] for b in bounds], axis=0), np.max([b[1] for b in bounds], axis=0))
    label = ax.set_title("")

    def frame(k):
        moved = artists.move(placements[k])
        label.set_text(f"t = {t[index[k]]:.3f} s")
        return [*moved, label]

    movie = FuncAnimation(fig, frame, frames=count, blit=False)
    writer = PillowWriter(fps=fps) if str(path).endswith(".gif") else FFMpegWriter(fps=fps)
    movie.save(path, writer=writer, dpi=dpi)
    return path
