"""Command line: ``rmbd`` / ``python -m recursive_mbd``.

With no arguments it runs the built-in demo: a double pendulum and a 1000-link chain released from the horizontal,
reporting what was simulated, the energy error and the speed. ``rmbd run FILE`` runs the analysis a model file
(``recursive_mbd.io``) names, ``info``, ``plot``, ``animate`` and ``bench`` do what their ``--help`` says. Exit
codes: 0 ok, 1 an error in the input (a one-line message naming the place), 2 an internal error.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from . import __version__, chains, io
from . import joints as rm_joints
from .analysis import kinematic_analysis, modes, static_equilibrium
from .dynamics import forward_dynamics
from .errors import ModelError, SimulationError, StateError
from .integrate import simulate


def _run_case(label, model, q0, t_end, rtol, atol, samples, out):
    nq = model.nq
    qd0 = np.zeros(nq)
    simulate(model, q0, qd0, min(t_end, 1e-3), rtol=rtol, atol=atol)  # compile / load kernels outside the timing
    start = time.perf_counter()
    res = simulate(model, q0, qd0, t_end, rtol=rtol, atol=atol, t_eval=np.linspace(0.0, t_end, samples))
    wall = time.perf_counter() - start
    kinetic, potential = res.energy()
    total = kinetic + potential
    scale = model.total_mass() * 9.81 * 1.0  # m g L with L = 1 m for both demo models
    drift = float(np.max(np.abs(total - total[0])))
    tip = res.q[-1]
    print(f"{label}", file=out)
    print(f"  simulated {t_end:g} s with dopri5 (rtol {rtol:g}, atol {atol:g}): {res.nsteps} steps, "
          f"{res.nrejected} rejected, {res.nfev} forward-dynamics evaluations", file=out)
    e0 = round(total[0], 12) + 0.0  # no "-0.000000000"
    print(f"  energy: E(0) = {e0:.9f} J, max |E(t) - E(0)| = {drift:.3e} J = {drift / scale:.2e} m g L", file=out)
    print(f"  speed: {wall:.3f} s wall, {res.nsteps / wall:,.0f} steps/s, {res.nfev * nq / wall / 1e6:.1f} M "
          f"body-evaluations/s, {t_end / wall:.3g} simulated s per wall s", file=out)
    print(f"  final joint angles: q1 = {tip[0]:+.6f} rad, q{nq} = {tip[-1]:+.6f} rad", file=out)
    return res, drift / scale


def demo(n_links=1000, t_end_chain=0.5, out=sys.stdout):
    """The built-in demo; returns the relative energy errors of the two runs."""
    print(f"recursive_mbd {__version__}: recursive O(N) planar multibody dynamics", file=out)
    double = chains.serial_chain(2, length=1.0, mass=1.0)
    q0 = np.zeros(2)
    q0[0] = np.pi / 2
    _, err_double = _run_case("double pendulum (2 rods, 1 m, 1 kg), released from the horizontal",
                              double, q0, 10.0, 1e-10, 1e-12, 1001, out)
    chain = chains.serial_chain(n_links, length=1.0, mass=1.0)
    q0 = np.zeros(n_links)
    q0[0] = np.pi / 2
    _, err_chain = _run_case(f"{n_links}-link chain (1 m, 1 kg), released from the horizontal",
                             chain, q0, t_end_chain, 1e-6, 1e-8, 51, out)
    return err_double, err_chain


class _Parser(argparse.ArgumentParser):
    """Bad command-line input is an input error: exit code 1 with a one-line message."""

    def error(self, message):
        self.exit(1, f"{self.prog}: error: {message}\n")


def _result_path(source, output, suffix=".npz"):
    return Path(output) if output else Path(Path(source).stem + suffix)


def _run(args, out):
    """rmbd run FILE: the analysis the file names; results to .npz (and CSV)."""
    spec = io.load(args.file)
    model, analysis = spec.model, spec.analysis
    kind = analysis["type"]
    target = _result_path(args.file, args.output)
    arrays = {"kind": np.array(kind), "body_names": np.array(model.body_names)}
    if kind == "dynamics":
        t_end = analysis.get("t_end", 1.0)
        samples = analysis.get("samples", 201)
        method = analysis.get("method", "dopri5")
        options = {k: analysis[k] for k in ("rtol", "atol", "dt", "stabilization") if k in analysis}
        fixed = method in ("rk4", "implicit_midpoint")
        res = simulate(model, spec.q0, spec.qd0, t_end, method=method, drivers=spec.drivers or None,
                       t_eval=None if fixed else np.linspace(0.0, t_end, samples), progress=args.progress,
                       every=max(1, int(round(t_end / analysis.get("dt", t_end) / samples))) if fixed else 1,
                       **options)
        kinetic, potential = res.energy()
        arrays.update(t=res.t, q=res.q, qd=res.qd, energy=kinetic + potential, energy_balance=res.energy_balance())
        if res.constraint_drift is not None:
            arrays["drift"] = res.constraint_drift
        print(f"{res}; energy balance max |.| = {np.abs(arrays['energy_balance']).max():.2e} J", file=out)
    elif kind == "statics":
        eq = static_equilibrium(model, spec.q0)
        arrays.update(q=eq.q, joint_reactions=eq.reactions.joint, loop_forces=eq.reactions.loops,
                      eigenvalues=eq.eigenvalues)
        print(f"static equilibrium ({eq.method}, {'stable' if eq.stable else 'unstable'}): q = {eq.q}", file=out)
        for name, row in zip(model.body_names, eq.reactions.joint, strict=True):
            print(f"  joint of {name}: F = ({row[0]:.6g}, {row[1]:.6g}) N, M = {row[2]:.6g} N m", file=out)
    elif kind == "kinematics":
        t_end = analysis.get("t_end", 1.0)
        kin = kinematic_analysis(model, spec.drivers, np.linspace(0.0, t_end, analysis.get("samples", 101)), spec.q0)
        arrays.update(t=kin.t, q=kin.q, qd=kin.qd, qdd=kin.qdd, driving_forces=kin.driving_forces,
                      joint_reactions=kin.joint_reactions, loop_forces=kin.loop_forces)
        print(f"kinematic analysis: {kin.t.size} times up to {t_end:g} s; driving forces "
              f"{np.abs(kin.driving_forces).max(initial=0.0):.6g} (max |.|)", file=out)
    else:
        eq = static_equilibrium(model, spec.q0)
        omega, shapes = modes(model, eq.q, min(analysis.get("count", 5), model.nq - model.nconstraints))
        arrays.update(q=eq.q, omega=omega, shapes=shapes)
        print("natural frequencies [rad/s]: " + ", ".join(f"{w:.6g}" for w in omega), file=out)
    np.savez(target, **arrays)
    print(f"wrote {target}", file=out)
    if args.csv and "t" in arrays:
        columns = [arrays["t"][:, None], arrays["q"], arrays["qd"]]
        header = ["t"] + [f"q{k + 1}" for k in range(model.nq)] + [f"qd{k + 1}" for k in range(model.nq)]
        np.savetxt(args.csv, np.hstack(columns), delimiter=",", header=",".join(header), comments="")
        print(f"wrote {args.csv}", file=out)


def _info(args, out):
    spec = io.load(args.file)
    model = spec.model
    print(f"{args.file}: {model.name or 'model'}: {model.nbodies} bodies, {model.nq} joint coordinates, "
          f"{model.nloops} loops ({model.nconstraints} equations), {model.nq - model.nconstraints} degrees of freedom "
          f"(where the loops are independent), total mass {model.total_mass():.6g} kg, gravity "
          f"({model.gravity[0]:g}, {model.gravity[1]:g}) m/s^2", file=out)
    for i, name in enumerate(model.body_names):
        parent = model.body_parent[i]
        print(f"  body {name}: {rm_joints.JOINT_NAMES[int(model.joint_type[i])]} joint to "
              f"{'ground' if parent < 0 else model.body_names[parent]}, mass {model.body_mass[i]:.6g} kg, inertia "
              f"{model.body_inertia[i]:.6g} kg m^2", file=out)
    for lp in model._loops:
        print(f"  loop {lp['name']}: {lp['kind']}", file=out)
    for name in model.element_names:
        print(f"  element {name}", file=out)
    print(f"  analysis: {spec.analysis}", file=out)


def _load_result(path):
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError) as err:
        raise io.FileFormatError(f"{path}: cannot read a result: {err}") from None


def _plot(args, out):
    data = _load_result(args.result)
    if "t" not in data or "q" not in data:
        raise io.FileFormatError(f"{args.result}: no time history to plot (kind {data.get('kind')})")
    from . import plot  # noqa: PLC0415

    plt = plot._pyplot()
    panels = [key for key in ("energy", "drift") if key in data]
    fig, axes = plt.subplots(1 + len(panels), 1, figsize=(7, 3 + 2.5 * len(panels)), squeeze=False)
    plot.trajectories(data["t"], data["q"], axes[0, 0])
    for ax, key in zip(axes[1:, 0], panels, strict=True):
        (plot.energy if key == "energy" else plot.drift)(data["t"], data[key], ax)
    fig.tight_layout()
    target = _result_path(args.result, args.output, ".png")
    fig.savefig(target, dpi=100)
    print(f"wrote {target}", file=out)


def _animate(args, out):
    spec = io.load(args.file)
    data = _load_result(args.result)
    if "t" not in data:
        raise io.FileFormatError(f"{args.result}: no time history to animate")
    if data["q"].shape[1] != spec.model.nq:
        raise io.FileFormatError(f"{args.result}: {data['q'].shape[1]} coordinates, but {args.file} has "
                                 f"{spec.model.nq}")
    from . import plot  # noqa: PLC0415

    plot.animate(spec.model, data["t"], data["q"], args.output, fps=args.fps, frames=args.frames)
    print(f"wrote {args.output}", file=out)


def _bench(args, out):
    from . import augmented  # noqa: PLC0415

    print("forward dynamics per evaluation on serial chains [us] (median of repeats)", file=out)
    print(f"{'N':>6} {'recursive':>10} {'mass matrix':>12} {'augmented tree':>17}", file=out)
    for n in args.sizes:
        model = chains.serial_chain(n)
        q, qd = np.full(n, 0.1), np.zeros(n)
        z, zd = augmented.absolute_from_joint(model, q, qd)
        times = [_median(forward_dynamics, model, q, qd),
                 _median(forward_dynamics, model, q, qd, method="mass_matrix") if n <= 1000 else np.nan,
                 _median(augmented.forward_dynamics, model, z, zd)]
        print(f"{n:>6} " + " ".join(f"{t * 1e6:>{w}.1f}" for t, w in zip(times, (10, 12, 17), strict=True)),
              file=out)


def _median(func, *args, repeats=5, **kwargs):
    func(*args, **kwargs)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        func(*args, **kwargs)
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def main(argv=None, out=None):
    """The command line; returns the exit code: 0 ok, 1 error in the input, 2 internal error."""
    out = out or sys.stdout
    parser = _Parser(prog="rmbd", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"recursive_mbd {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    p_demo = sub.add_parser("demo", help="run the built-in demo (the default)")
    p_demo.add_argument("--links", type=int, default=1000, help="links of the long chain (default 1000)")
    p_demo.add_argument("--t-end", type=float, default=0.5, help="simulated time of the long chain [s]")
    p_run = sub.add_parser("run", help="run the analysis a model file names; results to .npz")
    p_run.add_argument("file", help="model file (.toml; see recursive_mbd.io)")
    p_run.add_argument("-o", "--output", help="result file (default: <file stem>.npz here)")
    p_run.add_argument("--csv", help="also write t, q, qd as CSV")
    p_run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="progress bar (default: when stderr is a terminal)")
    p_info = sub.add_parser("info", help="bodies, joints, degrees of freedom, loops, mass of a model file")
    p_info.add_argument("file")
    p_plot = sub.add_parser("plot", help="plot a result: coordinates, energy, constraint drift against time")
    p_plot.add_argument("result", help="a .npz written by rmbd run")
    p_plot.add_argument("-o", "--output", help="image file (default: <result stem>.png here)")
    p_anim = sub.add_parser("animate", help="animate a result of a model file (.gif or .mp4)")
    p_anim.add_argument("file")
    p_anim.add_argument("result")
    p_anim.add_argument("-o", "--output", required=True, help="out.gif (Pillow) or out.mp4 (ffmpeg)")
    p_anim.add_argument("--fps", type=int, default=25)
    p_anim.add_argument("--frames", type=int, default=None, help="at most this many frames")
    p_bench = sub.add_parser("bench", help="time the formulations on a small grid of chain sizes")
    p_bench.add_argument("--sizes", type=int, nargs="+", default=[2, 10, 100, 1000])
    args = parser.parse_args(argv)
    try:
        if args.command in (None, "demo"):
            links = getattr(args, "links", 1000)
            t_end = getattr(args, "t_end", 0.5)
            if links < 1 or not t_end > 0:
                print("rmbd: error: --links must be >= 1 and --t-end > 0", file=sys.stderr)
                return 1
            demo(links, t_end, out)
        else:
            {"run": _run, "info": _info, "plot": _plot, "animate": _animate, "bench": _bench}[args.command](args, out)
    except (ModelError, StateError, SimulationError, OSError) as err:
        print(f"rmbd: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - the promise: one line, never a traceback
        if args.debug:
            raise
        print(f"rmbd: internal error: {type(err).__name__}: {err} (run with --debug for the traceback)",
              file=sys.stderr)
        return 2
    return 0
