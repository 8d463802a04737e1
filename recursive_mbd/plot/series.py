"""Labels and time series: coordinate names and units (``coordinate_labels``), figures that select no backend
(``figure``), and the panels against time: coordinates, energy balance, constraint drift, joint reactions and
driving forces."""

import sys

import numpy as np

from .. import _checks
from ..model import joints

# ---- labels -------------------------------------------------------------------------------------------------------

# per joint type, the name and unit of each coordinate and of its rate, acceleration and generalised force
_QUANTITIES = {
    joints.REVOLUTE: {"q": [("angle", "rad")], "qd": [("rate", "rad/s")], "qdd": [("acceleration", "rad/s^2")],
                      "tau": [("torque", "N m")]},
    joints.PRISMATIC: {"q": [("position", "m")], "qd": [("velocity", "m/s")], "qdd": [("acceleration", "m/s^2")],
                       "tau": [("force", "N")]},
    joints.PLANAR: {"q": [("x", "m"), ("y", "m"), ("angle", "rad")],
                    "qd": [("x velocity", "m/s"), ("y velocity", "m/s"), ("rate", "rad/s")],
                    "qdd": [("x acceleration", "m/s^2"), ("y acceleration", "m/s^2"), ("acceleration", "rad/s^2")],
                    "tau": [("x force", "N"), ("y force", "N"), ("torque", "N m")]},
}
QUANTITY_KINDS = ("q", "qd", "qdd", "tau")
_UNIT_WORDS = {"rad": "angle", "m": "position", "rad/s": "rate", "m/s": "velocity", "rad/s^2": "angular acc.",
               "m/s^2": "acceleration", "N m": "torque", "N": "force", "-": "quaternion"}
LONG_CHAIN = 20  # bodies: more are drawn as a shape (not a colour per body), with a few absolute angles


def coordinate_names_units(model, kind="q"):
    """Names and units of the joint coordinates (kind "q"), their rates ("qd"), accelerations ("qdd") or the joint
    forces ("tau"), in coordinate order: two lists of nq strings, e.g. ["crank angle", "rod angle rel. crank",
    "piston position"] and ["rad", "rad", "m"]. A coordinate is relative to the parent body ("rel. <parent>"), to
    the ground when the parent is the ground (DESIGN.md, joint conventions)."""
    model.compile()
    return names_units(model.body_names, model.joint_type, model.body_parent, kind)


def names_units(body_names, joint_type, body_parent, kind="q"):
    """``coordinate_names_units`` from the per-body names, joint type codes and parent indices (as a result file
    of ``rmbd run`` stores them)."""
    if kind not in QUANTITY_KINDS:
        raise ValueError(f"kind must be one of {QUANTITY_KINDS}, got {kind!r}")
    names, units = [], []
    for i, (jtype, parent) in enumerate(zip(joint_type, body_parent, strict=True)):
        relative = "" if parent < 0 else f" rel. {body_names[parent]}"
        for word, unit in _QUANTITIES.get(int(jtype), {}).get(kind, []):
            names.append(f"{body_names[i]} {word}{relative}")
            units.append(unit)
    return names, units


def coordinate_labels(model, kind="q"):
    """``coordinate_names_units`` joined as axis labels: ["crank angle [rad]", ..., "piston position [m]"]."""
    names, units = coordinate_names_units(model, kind)
    return [f"{name} [{unit}]" for name, unit in zip(names, units, strict=True)]


def _split_label(label):
    """("crank angle", "rad") from "crank angle [rad]"; the unit is "" when the label has none."""
    if label.endswith("]") and " [" in label:
        name, unit = label[:-1].rsplit(" [", 1)
        return name, unit
    return label, ""


# ---- figures without touching the backend ---------------------------------------------------------------------

def _require_matplotlib():
    try:
        import matplotlib  # noqa: PLC0415, F401
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"plotting needs matplotlib: {_checks.install_hint('plot')}") from None


def figure(nrows=1, ncols=1, pyplot=None, **kwargs):
    """A new figure and its axes (``subplots(nrows, ncols, **kwargs)``), without selecting a backend: from pyplot
    when the caller already imported it (so ``plt.show()`` shows it), else a bare ``matplotlib.figure.Figure``
    (``fig.savefig`` works on it with no backend). ``pyplot=False`` always gives a bare Figure (file output)."""
    _require_matplotlib()
    figsize = kwargs.pop("figsize", None)
    if pyplot is not False and "matplotlib.pyplot" in sys.modules:
        return sys.modules["matplotlib.pyplot"].subplots(nrows, ncols, figsize=figsize, **kwargs)
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def _axes(ax, **kwargs):
    if ax is not None:
        return ax.figure, ax
    return figure(**kwargs)


def body_colors(count):
    """A colour per body (RGBA rows, (count, 4)): matplotlib's tab10 for up to 10 bodies, tab20 for up to 20
    (the dark shades first, then the light), more spread over viridis."""
    from matplotlib import colormaps  # noqa: PLC0415

    if count <= 10:
        return colormaps["tab10"](np.arange(count))
    if count <= 20:
        return colormaps["tab20"](np.concatenate((np.arange(0, 20, 2), np.arange(1, 20, 2)))[:count])
    return colormaps["viridis"](np.linspace(0.0, 1.0, count))


def _model_title(model, names=None):
    """How a figure names its model: the model's ``name``, else its size ("3 bodies"); without a model, from the
    body ``names`` a result file stores ("3 bodies"), else ""."""
    name = getattr(model, "name", None)
    if name:
        return str(name)
    count = model.nbodies if model is not None else (len(names) if names is not None else 0)
    return f"{count} bodies" if count else ""


_ANALYSES = {"dynamics": "simulation", "kinematics": "kinematic analysis", "statics": "static equilibrium",
             "modes": "natural modes"}


def _result_title(data, model, kind):
    """A result figure's title: the model (its name, else its size), the analysis (``kind``) and its method, the
    time span: "slider-crank: kinematic analysis, t = 0 to 0.1 s". ``data``: the arrays of the result (``method``,
    ``t``, ``body_names`` when there)."""
    what = _ANALYSES.get(kind, kind)
    if "method" in data and str(data["method"]):
        what += f" ({data['method']})"
    if "t" in data and np.size(data["t"]):
        what += f", t = {float(data['t'][0]):g} to {float(data['t'][-1]):g} s"
    names = [str(n) for n in data["body_names"]] if "body_names" in data else None
    name = _model_title(model, names)
    return f"{name}: {what}" if name else what


def _selection(count, most=8):
    """Indices of at most ``most`` series to draw of ``count``, spread over all of them (first and last kept)."""
    if count <= most:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, most).round().astype(int))


def _coordinate_quantity(unit):
    """The y label's quantity of joint coordinates in ``unit``: "joint angle" [rad], "joint position" [m]."""
    return f"joint {_UNIT_WORDS.get(unit, 'coordinate')}"


def _unit_groups(labels, chosen):
    """The ``chosen`` label indices grouped by unit, in order of first appearance: [(unit, [k, ...]), ...]."""
    groups = {}
    for k in chosen:
        groups.setdefault(_split_label(labels[k])[1], []).append(int(k))
    return list(groups.items())


def time_series(t, values, labels, ax=None, quantity="value", most=8):
    """Columns of ``values`` (nt, n) against t [s], each named by its label ("crank torque [N m]"); at most
    ``most`` of them (spread over all, the title says how many) so that a 1000-link chain stays readable.

    One unit per axis: lines of a second unit (positions [m] beside angles [rad]) go on a y axis of their own on
    the right (``ax.twinx()``), labelled with that unit; one legend names every line."""
    fig, ax = _axes(ax)
    values = np.asarray(values, dtype=float).reshape(len(t), -1)
    if len(labels) != values.shape[1]:
        raise ValueError(f"{values.shape[1]} columns but {len(labels)} labels")
    chosen = _selection(values.shape[1], most)
    groups = _unit_groups(labels, chosen)
    axes = [ax] + [ax.twinx() for _ in groups[1:]]
    for extra, twin in enumerate(axes[2:], start=1):  # a third unit and more: right spines set apart
        twin.spines["right"].set_position(("axes", 1.0 + 0.12 * extra))
    handles = {}
    for axis, (unit, members) in zip(axes, groups, strict=True):
        for k in members:
            (handles[k],) = axis.plot(t, values[:, k], color=f"C{len(handles) % 10}", label=labels[k])
        word = quantity if len(groups) == 1 else _UNIT_WORDS.get(unit, quantity)
        axis.set_ylabel(f"{word} [{unit}]" if unit else word)
    ax.set_xlabel("t [s]")
    if chosen.size < values.shape[1]:
        ax.set_title(f"{chosen.size} of {values.shape[1]}, spread along the model", fontsize=8)
    if 0 < chosen.size <= 12:
        axes[-1].legend(handles=[handles[k] for k in chosen], fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    return fig


def trajectories(t, q, ax=None, names=None, model=None, kind="q"):
    """Joint coordinates (or, with ``kind``, their rates "qd" or accelerations "qdd") against time, labelled with
    the body and the unit from ``model`` (``coordinate_labels``), or with ``names`` (labels "name [unit]")."""
    q = np.asarray(q, dtype=float)
    if model is not None:
        labels = coordinate_labels(model, kind)
    elif names is not None:
        labels = list(names)
    else:
        labels = [f"q{k + 1}" for k in range(q.shape[1])]
    quantity = {"q": "joint coordinate", "qd": "joint rate", "qdd": "joint acceleration"}.get(kind, kind)
    return time_series(t, q, labels, ax, quantity)


def energy(t, total, ax=None, dissipated_work=None, applied_work=None):
    """Energy against time [J]. For a conservative run E(t) - E(0); when work was dissipated (dampers) or applied
    (forces, drivers), the energy balance E(t) + dissipated - applied work - E(0), which stays zero up to the
    integration error, with the size of each term in the legend (E alone would drift by the work done)."""
    fig, ax = _axes(ax)
    total = np.asarray(total, dtype=float)
    change = total - total[0]
    dissipated = np.zeros_like(total) if dissipated_work is None else np.asarray(dissipated_work, dtype=float)
    applied = np.zeros_like(total) if applied_work is None else np.asarray(applied_work, dtype=float)
    if np.any(dissipated != 0.0) or np.any(applied != 0.0):
        balance = change + dissipated - applied
        ax.plot(t, balance, color="C3", label=f"E + dissipated - applied - E(0): max |.| = "
                                              f"{np.abs(balance).max():.2e} J")
        ax.plot([], [], " ", label=f"E(t_end) - E(0) = {change[-1]:.4g} J, dissipated {dissipated[-1]:.4g} J, "
                                   f"applied {applied[-1]:.4g} J")
        ax.set(xlabel="t [s]", ylabel="energy balance [J]")
        ax.legend(fontsize=7, loc="best")
    else:
        ax.plot(t, change, label=f"E(t) - E(0): max |.| = {np.abs(change).max():.2e} J (no work done)")
        ax.set(xlabel="t [s]", ylabel="E(t) - E(0) [J]")
        ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    return fig


def drift(t, values, ax=None):
    """Loop constraint drift max |phi| against time (log scale) [m for positions, rad for angles]."""
    fig, ax = _axes(ax)
    ax.semilogy(t, np.maximum(values, 1e-17))
    ax.set(xlabel="t [s]", ylabel="loop constraint drift max |phi| [m, rad]")
    ax.grid(alpha=0.3)
    return fig


def _result_panel(panel, t, data, ax):
    """Draw the panel ``panel`` of a result's arrays ``data`` against t on ``ax``: "energy" (the energy, with the
    balance when work was done, ``energy``), "drift" (the loop drift, ``drift``) or "contacts" (``_contact_panel``)."""
    if panel == "energy":
        energy(t, data["energy"], ax, data.get("dissipated_work"), data.get("applied_work"))
    elif panel == "contacts":
        _contact_panel(t, data, ax)
    else:
        drift(t, data["drift"], ax)


def _contact_panel(t, data, ax):
    """The number of touching contact rows and their total normal force against time."""
    total = np.asarray(data["contact_normal"]).sum(axis=1)
    time_series(t, total[:, None], ["total normal force [N]"], ax, "contact force")
    ax.set_ylabel("total normal force [N]")
    twin = ax.twinx()
    twin.step(t, data["contact_active"], where="mid", color="C1", lw=1.0, label="touching contact rows")
    twin.set_ylabel("touching contact rows [-]")
    twin.set_ylim(bottom=0)
    twin.legend(fontsize=7, loc="upper right")


def joint_labels(body_names, parents=None):
    """A name per tree joint: "<parent>-<body> joint" ("ground-crank joint"), or "<body> joint" without parents."""
    if parents is None:
        return [f"{name} joint" for name in body_names]
    return [f"{'ground' if p < 0 else body_names[p]}-{name} joint" for name, p in zip(body_names, parents,
                                                                                     strict=True)]


def reactions(t, joint_reactions, loop_forces=None, ax=None, joint_names=None, loop_names=None):
    """Magnitude of the reaction force of every joint and loop against time [N]: |(Fx, Fy)| of ``joint_reactions``
    (nt, nbodies, 3) (the force the parent exerts on the body) and of ``loop_forces`` (nt, nloops, 2, 3) (on body
    a). Named by ``joint_names`` / ``loop_names``."""
    fig, ax = _axes(ax)
    joint_reactions = np.asarray(joint_reactions, dtype=float)
    nbodies = joint_reactions.shape[1]
    joint_names = joint_names or joint_labels([f"body {i}" for i in range(nbodies)])
    columns = [np.hypot(joint_reactions[:, :, 0], joint_reactions[:, :, 1])]
    labels = [f"{name} |F| [N]" for name in joint_names]
    if loop_forces is not None and np.size(loop_forces):
        loop_forces = np.asarray(loop_forces, dtype=float)
        columns.append(np.hypot(loop_forces[:, :, 0, 0], loop_forces[:, :, 0, 1]))
        loop_names = loop_names or [f"loop {k}" for k in range(loop_forces.shape[1])]
        labels += [f"loop {name} |F| [N]" for name in loop_names]
    time_series(t, np.hstack(columns), labels, ax, "reaction force")
    return fig


def driving_forces(t, forces, driven, model=None, ax=None, labels=None):
    """Driving forces (nt, nd) of the driven coordinates ``driven`` (nd,) against time: "crank torque [N m]",
    "piston force [N]" (from the model, or ``labels`` of every coordinate)."""
    labels = labels if labels is not None else coordinate_labels(model, "tau")
    return time_series(t, forces, [f"driving {labels[int(c)]}" for c in driven], ax, "driving force")
