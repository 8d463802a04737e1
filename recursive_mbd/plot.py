"""Plots and animation with matplotlib (the optional extra ``plot``): trajectories, energy, constraint drift,
snapshots of the mechanism, mode shapes, and an animation written to .gif (Pillow) or .mp4 (ffmpeg).

Bodies are drawn as links: each body's outline joins, in order, its joint point, the points where its children,
loops and force elements attach, and its centre of mass; the ground's points are drawn as triangles.
"""

import numpy as np

from .dynamics import forward_kinematics


def _pyplot():
    try:
        import matplotlib  # noqa: PLC0415
    except ModuleNotFoundError:
        raise ModuleNotFoundError("plotting needs matplotlib: pip install 'recursive-mbd[plot]'") from None
    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg") and not _interactive():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def _interactive():
    import sys  # noqa: PLC0415

    return hasattr(sys, "ps1")


def _axes(ax, **subplot):
    if ax is not None:
        return ax.figure, ax
    return _pyplot().subplots(**subplot)


def body_outlines(model):
    """Per body, the points (k, 2) in its frame that its outline joins (module docstring), and the ground points."""
    model.compile()
    points = [[model._child_points[i]] for i in range(model.nbodies)]
    ground = [np.zeros(2)]
    for body in model._bodies:
        (points[body["parent"]] if body["parent"] >= 0 else ground).append(body["parent_point"])
    for lp in model._loops:
        for body, point in ((lp["body_a"], lp["point_a"]), (lp["body_b"], lp["point_b"])):
            (points[body] if body >= 0 else ground).append(point)
    for el in model._elements:
        if el["kind"] == "spring_damper":
            for body, point in ((el["body_a"], el["point_a"]), (el["body_b"], el["point_b"])):
                (points[body] if body >= 0 else ground).append(point)
    for i in range(model.nbodies):
        points[i].append(model.body_com[i])
    return [np.array(p) for p in points], np.array(ground)


def _world(poses, local):
    c, s = np.cos(poses[2]), np.sin(poses[2])
    return poses[:2] + local @ np.array([[c, s], [-s, c]])


def draw(model, q, ax=None, outlines=None, color="C0", alpha=1.0, label=None):
    """Draw the mechanism at q on ``ax`` (a new figure if None); returns the line artists."""
    fig, ax = _axes(ax)
    outlines = outlines or body_outlines(model)
    poses, _ = forward_kinematics(model, q)
    lines = []
    for i, local in enumerate(outlines[0]):
        world = _world(poses[i], local)
        (line,) = ax.plot(world[:, 0], world[:, 1], "-o", color=color, ms=3, lw=2, alpha=alpha,
                          label=label if i == 0 else None)
        lines.append(line)
    ax.plot(outlines[1][:, 0], outlines[1][:, 1], "k^", ms=7)
    ax.set_aspect("equal")
    return lines


def snapshots(model, result, times, ax=None):
    """The mechanism at the samples of ``result`` nearest ``times``, fading from light to dark."""
    fig, ax = _axes(ax)
    outlines = body_outlines(model)
    for k, t in enumerate(times):
        i = int(np.argmin(np.abs(result.t - t)))
        draw(model, result.q[i], ax, outlines, color=f"C{k % 10}", alpha=0.4 + 0.6 * (k + 1) / len(times),
             label=f"t = {result.t[i]:.3g} s")
    ax.legend(fontsize=7)
    return fig


def trajectories(t, q, ax=None, names=None):
    """Joint coordinates against time."""
    fig, ax = _axes(ax)
    for k in range(q.shape[1]):
        ax.plot(t, q[:, k], label=(names[k] if names else f"q{k + 1}") if q.shape[1] <= 10 else None)
    ax.set(xlabel="t [s]", ylabel="q [rad or m]")
    if q.shape[1] <= 10:
        ax.legend(fontsize=7)
    return fig


def energy(t, total, ax=None):
    """E(t) - E(0) [J] against time."""
    fig, ax = _axes(ax)
    ax.plot(t, total - total[0])
    ax.set(xlabel="t [s]", ylabel="E(t) - E(0) [J]")
    return fig


def drift(t, values, ax=None):
    """Constraint drift max |phi| against time (log scale)."""
    fig, ax = _axes(ax)
    ax.semilogy(t, np.maximum(values, 1e-17))
    ax.set(xlabel="t [s]", ylabel="max |phi| [m or rad]")
    return fig


def mode_shapes(model, q_eq, shapes, omega, scale=0.1, ax=None):
    """Each mode drawn as q_eq +- scale * shape (normalised to its largest entry)."""
    fig, ax = _axes(ax)
    outlines = body_outlines(model)
    draw(model, q_eq, ax, outlines, color="0.6")
    for k in range(shapes.shape[1]):
        v = shapes[:, k] / np.abs(shapes[:, k]).max()
        draw(model, q_eq + scale * v, ax, outlines, color=f"C{k}", label=f"mode {k + 1}: {omega[k]:.4g} rad/s")
    ax.legend(fontsize=7)
    return fig


def animate(model, t, q, path, fps=25, frames=None, dpi=80):
    """Write an animation of the samples (t, q) to ``path`` (.gif with Pillow, .mp4 with ffmpeg)."""
    plt = _pyplot()
    from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter  # noqa: PLC0415

    outlines = body_outlines(model)
    count = t.size if frames is None else min(frames, t.size)
    index = np.linspace(0, t.size - 1, count).astype(int)
    fig, ax = plt.subplots()
    everything = np.concatenate([_world(p, o) for k in index[:: max(1, count // 20)]
                                 for p, o in zip(forward_kinematics(model, q[k])[0], outlines[0], strict=True)]
                                + [outlines[1]])
    low, high = everything.min(axis=0), everything.max(axis=0)
    pad = 0.05 * max(high - low) + 1e-3
    lines = draw(model, q[0], ax, outlines)
    ax.set(xlim=(low[0] - pad, high[0] + pad), ylim=(low[1] - pad, high[1] + pad))
    label = ax.set_title("")

    def frame(k):
        poses, _ = forward_kinematics(model, q[index[k]])
        for line, pose, local in zip(lines, poses, outlines[0], strict=True):
            world = _world(pose, local)
            line.set_data(world[:, 0], world[:, 1])
        label.set_text(f"t = {t[index[k]]:.3f} s")
        return [*lines, label]

    movie = FuncAnimation(fig, frame, frames=count, blit=False)
    writer = PillowWriter(fps=fps) if str(path).endswith(".gif") else FFMpegWriter(fps=fps)
    movie.save(path, writer=writer, dpi=dpi)
    plt.close(fig)
    return path
