"""Command line: ``rmbd`` / ``python -m recursive_mbd``.

With no arguments it runs the built-in demo: a double pendulum and a 1000-link chain released from the horizontal,
reporting what was simulated, the energy error and the speed. ``rmbd run FILE`` runs the analysis a model file
(``recursive_mbd.files.io``) names, ``info``, ``plot``, ``animate``, ``bench`` and ``compile`` (every kernel ahead
of use, ``recursive_mbd.warmup``) do what their ``--help`` says. Exit
codes: 0 ok, 1 an error in the input or the environment (a one-line message naming the place, at most
``MESSAGE_LIMIT`` characters; a missing optional package says how to install it), 2 an internal error (a bug:
``--debug``, before or after the subcommand, shows its traceback), 130 interrupted (Ctrl-C).

``rmbd run`` checks its output paths before computing (never overwrites without ``--force``, refuses a
directory, a FIFO or an unwritable place), writes exactly the path it prints, and when the run fails (or
``--max-time`` ends it, or Ctrl-C) writes the samples so far to ``<output stem>.partial.npz`` and says so.
"""

import argparse
import contextlib
import csv
import importlib
import io as std_io
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import __version__
from ._checks import counted, install_hint
from .errors import ModelError, ResultFileError, SimulationError, StateError
from .files import io
from .model import chains
from .model import joints as rm_joints

# The dynamics, analyses and time loops (numba, scipy) are imported inside the commands that use them, so that
# `rmbd --help` and `rmbd info` start in a fraction of a second.

MESSAGE_LIMIT = 400  # characters of an error message: a message is a line, never an echoed array
WARM_UP_STEPS = 100  # the most steps of the run that compiles the kernels before a timed run (any t_end)


class InputError(ValueError):
    """An input or environment problem found by the command line itself: exit code 1, one line."""


def _short(message, limit=MESSAGE_LIMIT):
    """One line of at most ``limit`` characters: a long message (an echoed array) loses its middle, saying how much,
    so that its start (the file, the entry) and its end (where the samples were saved) stay."""
    line = " ".join(str(message).split())
    if len(line) <= limit:
        return line
    note = f" ... [{len(line)} characters, shortened] ... "
    head = (limit - len(note)) * 2 // 3
    tail = limit - len(note) - head
    return f"{line[:head]}{note}{line[len(line) - tail:]}"


@contextlib.contextmanager
def _library_messages():
    """The library's INFO records (logger "recursive_mbd": progress of long runs, kernels being compiled) printed
    to stderr while a command runs."""
    logger = logging.getLogger("recursive_mbd")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("rmbd: %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _require(module, purpose, extra):
    """Import an optional package or fail with the command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"{purpose} needs {module}, which is not installed: {install_hint(extra)}") from None


def _run_case(label, model, q0, t_end, rtol, atol, samples, out):
    from .integrate.simulate import simulate  # noqa: PLC0415  (numba: only for the commands that simulate)

    nq = model.nq
    qd0 = np.zeros(nq)
    start = time.perf_counter()
    simulate(model, q0, qd0, min(t_end, 1e-3), rtol=rtol, atol=atol)  # compile / load kernels outside the timing
    ready = time.perf_counter() - start
    start = time.perf_counter()
    res = simulate(model, q0, qd0, t_end, rtol=rtol, atol=atol, t_eval=np.linspace(0.0, t_end, samples))
    wall = time.perf_counter() - start
    kinetic, potential = res.energy()
    total = kinetic + potential
    scale = model.total_mass() * 9.81 * 1.0  # m g L with L = 1 m for both demo models
    drift = float(np.max(np.abs(total - total[0])))
    tip = res.q[-1]
    print(f"{label}", file=out)
    print(f"  kernels ready in {ready:.2f} s (compiled, or loaded from numba's cache; not in the timing below)",
          file=out)
    print(f"  simulated {t_end:g} s with dopri5 (rtol {rtol:g}, atol {atol:g}): {counted(res.nsteps, 'step')}, "
          f"{res.nrejected} rejected, {counted(res.nfev, 'forward-dynamics evaluation')}", file=out)
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


def _partial_path(target):
    return target.with_name(f"{target.name.removesuffix('.npz')}.partial.npz")


def _check_output(path, force, what="output"):
    """Refuse, before any computing, an output path that cannot or must not be written."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: the {what} path is a directory; give a file name")
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise InputError(f"{path}: the {what} path exists and is not a regular file (a FIFO or a device?)")
        if not force:
            raise InputError(f"{path}: exists; pass --force to overwrite it")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{path}: no such directory {str(folder)!r} for the {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{path}: cannot write in {str(folder)!r} (permission denied)")
    # access() answers for the permissions only: root is granted /proc, a read-only or full file system passes
    try:  # so create (and remove) a file there, as _write_npz will
        handle, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise InputError(f"{path}: cannot write in {str(folder)!r} ({err.strerror})") from None
    os.close(handle)
    os.unlink(probe)


def _write_npz(path, arrays):
    """Write exactly ``path`` (np.savez would append .npz to another suffix), atomically: a temporary file in the
    same folder renamed over it, so a failure never leaves half a file or clobbers the old one."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, **arrays)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes it private; a result is an ordinary file
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _dynamics_arrays(res):
    kinetic, potential = res.energy()
    arrays = {"t": res.t, "q": res.q, "qd": res.qd, "energy": kinetic + potential,
              "energy_balance": res.energy_balance(), "dissipated_work": res.dissipated_work,
              "applied_work": res.applied_work}
    if getattr(res, "constraint_drift", None) is not None:
        arrays["drift"] = res.constraint_drift
    if getattr(res, "contact_state", None) is not None:  # what rmbd plot and animate draw of the contacts
        from .plot.overview import contact_arrays  # noqa: PLC0415  (no matplotlib: names only)

        arrays.update(contact_arrays(res.contact_forces()))
    return arrays


def _save_partial(target, base, err):
    """The samples so far of a failed or interrupted run, to <target>.partial.npz; returns a phrase for the
    message."""
    res = getattr(err, "result", None)
    if res is None or getattr(res, "t", None) is None or len(res.t) == 0:
        return "no samples to save"
    path = _partial_path(target)
    arrays = dict(base, status=np.array(f"{type(err).__name__}: {_short(err)}"))
    try:
        arrays.update(_dynamics_arrays(res))
    except Exception:  # noqa: BLE001 - energies of a blown-up state may fail: keep the samples at least
        arrays.update(t=res.t, q=res.q, qd=res.qd)
    try:
        _write_npz(path, arrays)
    except OSError as error:
        return f"the samples so far could not be saved to {path}: {error.strerror}"
    return f"the samples up to t = {res.t[-1]:.6g} s are in {path.resolve()}"


def _simulate_options(analysis, max_time):
    options = {k: analysis[k] for k in ("rtol", "atol", "dt", "stabilization") if k in analysis}
    if max_time is not None:
        options["max_wall_time"] = max_time
    return options


@contextlib.contextmanager
def _naming(source):
    """An input error of a computation on the file ``source`` (an analysis that fails, a state the model refuses)
    says which file: exit code 1 promises a message naming the place. A ValueError from outside this package stays
    what it is (a bug: exit code 2)."""
    try:
        yield
    except (ValueError, SimulationError) as err:
        promised = isinstance(err, (ModelError, StateError, ResultFileError, SimulationError))
        if isinstance(err, InputError) or str(source) in str(err) or not (promised or _raised_by_this_package(err)):
            raise
        raise InputError(f"{source}: {err}") from err


def _run(args, out):
    """rmbd run FILE: the analysis the file names; results to .npz (and CSV)."""
    target = _result_path(args.file, args.output)
    _check_output(target, args.force)
    _check_output(_partial_path(target), args.force, "partial-result")
    if args.csv:
        _check_output(args.csv, args.force, "CSV")
    if args.max_time is not None and not args.max_time > 0:
        raise InputError(f"--max-time must be > 0 seconds, got {args.max_time}")
    if args.progress:
        _require("tqdm", "--progress", "progress")
    if args.t_end is not None and not args.t_end > 0:
        raise InputError(f"--t-end must be > 0 seconds, got {args.t_end}")
    spec = io.load(args.file)
    analysis = spec.analysis
    if analysis and args.t_end is not None:
        raise InputError(f"{args.file}: --t-end is for files that name no analysis; this one names its own "
                         f"({analysis['type']}): set its t_end in the file")
    if not analysis and args.t_end is not None:  # a URDF or MJCF file, or a TOML model-only file
        analysis = spec.analysis = {"type": "dynamics", "t_end": args.t_end, "samples": 201, "method": "dopri5"}
    if not analysis:
        raise InputError(f"{args.file}: no analysis to run: add an [analysis] table with its type (a deck: a TASK "
                         "line), or give --t-end for a dynamics run from the file's initial state")
    if Path(args.file).resolve() in (target.resolve(), Path(args.csv).resolve() if args.csv else None):
        raise InputError(f"{args.file}: the output would overwrite the model file")
    if args.csv and analysis["type"] not in CSV_ANALYSES:
        raise InputError(f"{args.file}: --csv writes the time history (t, q, qd) of a {' or '.join(CSV_ANALYSES)} "
                         f"analysis; this {analysis['type']} analysis has none (its results go to the .npz)")
    with _naming(args.file):
        _run_analysis(args, spec, target, out)


def _run_analysis(args, spec, target, out):
    """The analysis of a planar model file (a spatial one: ``_run_spatial``), its results written."""
    from .analysis.analyses import kinematic_analysis, modes, static_equilibrium  # noqa: PLC0415

    model, analysis = spec.model, spec.analysis
    kind = analysis["type"]
    if isinstance(model, io.Model3D):
        _run_spatial(args, spec, target, out)
        return
    base = {"kind": np.array(kind), "body_names": np.array(model.body_names), "source": np.array(str(args.file))}
    base.update(_labels_record(args.file, model))
    arrays = dict(base)
    if kind == "dynamics":
        arrays.update(_run_dynamics(args, spec, base, target, out))
    elif kind == "statics":
        eq = static_equilibrium(model, spec.q0)
        arrays.update(q=eq.q, joint_reactions=eq.reactions.joint, loop_forces=eq.reactions.loops,
                      eigenvalues=eq.eigenvalues)
        from .plot import coordinate_labels  # noqa: PLC0415  (labels only: no matplotlib)

        labels = coordinate_labels(model, "q")
        print(f"static equilibrium ({eq.method}, {'stable' if eq.stable else 'unstable'}"
              f"{_neutral_note(labels, eq.neutral)}):", file=out)
        _print_coordinates(labels, eq.q, out)
        for name, row in zip(model.body_names, eq.reactions.joint, strict=True):
            print(f"  joint of {name}: F = ({row[0]:.6g}, {row[1]:.6g}) N, M = {row[2]:.6g} N m", file=out)
    elif kind == "kinematics":
        t_end = analysis["t_end"]
        kin = kinematic_analysis(model, spec.drivers, np.linspace(0.0, t_end, analysis["samples"]), spec.q0)
        arrays.update(t=kin.t, q=kin.q, qd=kin.qd, qdd=kin.qdd, driving_forces=kin.driving_forces,
                      joint_reactions=kin.joint_reactions, loop_forces=kin.loop_forces, driven=kin.driven)
        print(f"kinematic analysis: {counted(kin.t.size, 'time')} up to {t_end:g} s; "
              f"{_driving_summary(model, kin.driving_forces, kin.driven)}", file=out)
    else:
        eq = static_equilibrium(model, spec.q0)
        omega, shapes = modes(model, eq.q, min(analysis["count"], model.nq - model.nconstraints))
        arrays.update(q=eq.q, omega=omega, shapes=shapes)
        from .plot import coordinate_labels  # noqa: PLC0415  (labels only: no matplotlib)

        print(_frequencies(coordinate_labels(model, "q"), omega, shapes), file=out)
    _write_results(args, model, target, arrays, out)


CSV_ANALYSES = ("dynamics", "kinematics")  # the analyses with a time history, which --csv writes


def _write_results(args, model, target, arrays, out):
    """The .npz of a run, and the CSV of t, q, qd (a spatial model's v) when asked for (``_run`` refuses --csv
    for an analysis without a time history)."""
    written = _write_npz(target, arrays)
    print(f"wrote {written.resolve()}", file=out)
    if args.csv:
        columns = [arrays["t"][:, None], arrays["q"], arrays["qd"] if "qd" in arrays else arrays["v"]]
        np.savetxt(args.csv, np.hstack(columns), delimiter=",", header=_csv_header(model), comments="")
        print(f"wrote {Path(args.csv).resolve()}", file=out)


def _run_dynamics(args, spec, base, target, out):
    """The dynamics analysis of a model file (planar or spatial): the simulation's arrays for the .npz; a failed or
    interrupted run saves its samples so far next to ``target`` and raises."""
    from .integrate.simulate import simulate  # noqa: PLC0415

    model, analysis = spec.model, spec.analysis
    t_end, samples, method = analysis["t_end"], analysis["samples"], analysis["method"]
    options = _simulate_options(analysis, args.max_time)
    fixed = "dt" in analysis
    every = max(1, int(round(t_end / analysis["dt"] / samples))) if fixed else 1
    t_eval = None if fixed else np.linspace(0.0, t_end, samples)
    if method == "dop853":  # no dense output: store every step
        t_eval = None
    start = time.perf_counter()
    warm_options = {k: v for k, v in options.items() if k != "max_wall_time"}
    warm_end = min(t_end, 2 * analysis["dt"]) if fixed else min(t_end, 1e-6 * max(t_end, 1.0))
    try:  # compile (or load from the cache) outside the timed run: a few steps, whatever t_end
        simulate(model, spec.q0, spec.qd0, warm_end, method=method, drivers=spec.drivers or None,
                 progress=False, max_steps=WARM_UP_STEPS, **warm_options)
    except SimulationError:
        pass  # the kernels are ready all the same; the run itself reports its own failure, time and samples
    except KeyboardInterrupt:
        raise KeyboardInterrupt("interrupted while the kernels were being prepared, before the run: no samples "
                                "to save") from None
    ready = time.perf_counter() - start
    start = time.perf_counter()
    try:
        res = simulate(model, spec.q0, spec.qd0, t_end, method=method, drivers=spec.drivers or None,
                       t_eval=t_eval, progress=args.progress, every=every, **options)
    except (SimulationError, KeyboardInterrupt) as err:
        where = _save_partial(target, base, err)
        if isinstance(err, KeyboardInterrupt):
            raise KeyboardInterrupt(f"interrupted; {where}") from None
        t_fail = getattr(err, "t", None)
        at = f" at t = {t_fail:.6g} s" if t_fail is not None else ""
        raise InputError(f"{args.file}: the simulation failed{at}: {_short(err, 160)}; {where}") from None
    wall = time.perf_counter() - start
    arrays = _dynamics_arrays(res)
    arrays["status"] = np.array("finished")
    touching = (f"; at most {counted(int(arrays['contact_active'].max()), 'contact row')} touching"
                if "contact_active" in arrays else "")
    driving = ""
    if spec.drivers:  # the joint force each driver supplied: columns of the driven coordinates (a Model3D's in v)
        driven = _driven_columns(model, spec.drivers)
        arrays.update(driving_forces=res.driving_forces()[:, driven], driven=driven)
        driving = f"; {_driving_summary(model, arrays['driving_forces'], driven)}"
    print(f"{res}; energy balance max |.| = {np.abs(arrays['energy_balance']).max():.2e} J{touching}{driving}; "
          f"kernels ready in {ready:.2f} s, run {wall:.3f} s", file=out)
    return arrays


def _driven_columns(model, drivers):
    """The driven coordinates of a run's ``drivers`` (body names) in order: their indices in qd (a Model3D's v)."""
    if isinstance(model, io.Model3D):
        columns = [model.v_slice(body).start for body in drivers]
    else:
        columns = [int(model.joint_q_index[model.body_index(body)]) for body in drivers]
    return np.array(sorted(columns), dtype=np.int64)


def _csv_header(model):
    """The CSV header of t, q, qd: names and units ("t [s]", "crank angle [rad]", ..., "crank rate [rad/s]"; a
    spatial model's q and v), quoted where a body name holds a comma or a quote."""
    from .plot import coordinate_labels, spatial_coordinate_labels  # noqa: PLC0415  (labels only: no matplotlib)

    if isinstance(model, io.Model3D):
        labels = [*spatial_coordinate_labels(model, "q"), *spatial_coordinate_labels(model, "v")]
    else:
        labels = [*coordinate_labels(model, "q"), *coordinate_labels(model, "qd")]
    buffer = std_io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(["t [s]", *labels])
    return buffer.getvalue()


def _labels_record(source, model):
    """What ``rmbd plot`` needs, beside the body names, to name a result's curves with units ("crank angle [rad]")
    and to draw the mechanism (stored in the .npz): joint types, parents, loop names and the model file."""
    return {"joint_type": np.asarray(model.joint_type, dtype=np.int8), "body_parent": np.asarray(model.body_parent),
            "loop_names": np.array(model.loop_names, dtype=str), "model_file": np.array(str(Path(source).resolve()))}


SPATIAL_ANALYSES = ("dynamics", "statics", "modes", "kinematics")  # what rmbd run does for spatial models


def _refuse_spatial(source, model, what):
    """A spatial model where only planar ones are handled yet: an input error saying so."""
    if isinstance(model, io.Model3D):
        raise InputError(f"{source}: a spatial model (model.dimension = 3): {what} of spatial models is not "
                         f"available yet (rmbd run does {' and '.join(SPATIAL_ANALYSES)}; rmbd info describes the "
                         "file, and the Python API takes the Model3D that rm.io.load returns)")


def _run_spatial(args, spec, target, out):
    """rmbd run on a spatial model file: dynamics (q, v = qd, energy, work and loop drift at the samples), static
    equilibrium, modes, or the kinematic analysis under the file's drivers (t, q, v, vdot, driving forces, loop
    multipliers)."""
    model, kind = spec.model, spec.analysis["type"]
    if kind not in SPATIAL_ANALYSES:
        _refuse_spatial(args.file, model, f"the {kind} analysis")
    if kind == "kinematics" and not spec.drivers:
        raise InputError(f"{args.file}: analysis.type: a kinematics analysis needs drivers ([[driver]] tables)")
    from .analysis.analyses import kinematic_analysis, modes, static_equilibrium  # noqa: PLC0415

    base = {"kind": np.array(kind), "dimension": np.array(3), "body_names": np.array(model.names),
            "joint_types": np.array(model.joint_types), "body_parent": model.body_parent,
            "loop_names": np.array(model.loop_names, dtype=str), "source": np.array(str(args.file)),
            "model_file": np.array(str(Path(args.file).resolve()))}
    arrays = dict(base)
    if kind == "dynamics":
        arrays.update(_run_dynamics(args, spec, base, target, out))
        _write_results(args, model, target, arrays, out)
        return
    if kind == "kinematics":
        t_end = spec.analysis["t_end"]
        kin = kinematic_analysis(model, spec.drivers, np.linspace(0.0, t_end, spec.analysis["samples"]), spec.q0)
        arrays.update(t=kin.t, q=kin.q, v=kin.v, vdot=kin.vdot, driving_forces=kin.driving_forces,
                      multipliers=kin.multipliers, driven=kin.driven)
        print(f"kinematic analysis: {counted(kin.t.size, 'time')} up to {t_end:g} s; "
              f"{_driving_summary(model, kin.driving_forces, kin.driven)}", file=out)
        _write_results(args, model, target, arrays, out)
        return
    eq = static_equilibrium(model, spec.q0)
    arrays.update(q=eq.q, residual=eq.residual, stiffness=eq.stiffness, eigenvalues=eq.eigenvalues)
    from .plot import spatial_coordinate_labels  # noqa: PLC0415  (labels only: no matplotlib)

    rates = spatial_coordinate_labels(model, "v")
    print(f"static equilibrium ({eq.method}, {counted(eq.iterations, 'iteration')}, "
          f"{'stable' if eq.stable else 'not stable'}{_neutral_note(rates, eq.neutral)}):", file=out)
    _print_coordinates(spatial_coordinate_labels(model, "q"), eq.q, out)
    if kind == "modes":
        count = spec.analysis["count"]  # at most nv, or (loops) the motions they allow: all of those, then count
        omega, shapes = modes(model, eq.q, None if model.nloops else min(count, model.nv))
        omega, shapes = omega[:count], shapes[:, :count]
        arrays.update(omega=omega, shapes=shapes)
        print(_frequencies(rates, omega, shapes), file=out)
    written = _write_npz(target, arrays)
    print(f"wrote {written.resolve()}", file=out)


_INFO_LIST = 20  # models with more bodies get a summary: counts by joint type, the first and last few bodies


def _info(args, out):
    spec = io.load(args.file, check=False)  # describes the file; `rmbd run` checks the dynamics (faster start)
    model = spec.model
    if isinstance(model, io.Model3D):
        _info_spatial(args, spec, out)
        return
    print(f"{args.file}: {model.name or 'model'}: {counted(model.nbodies, 'body', 'bodies')}, "
          f"{counted(model.nq, 'joint coordinate')}, {counted(model.nloops, 'loop')} "
          f"({counted(model.nconstraints, 'equation')}), "
          f"{counted(model.nq - model.nconstraints, 'degree', 'degrees')} of freedom "
          f"(where the loops are independent), total mass {model.total_mass():.6g} kg, gravity "
          f"({model.gravity[0]:g}, {model.gravity[1]:g}) m/s^2", file=out)
    codes, counts = np.unique(model.joint_type, return_counts=True)
    print("  joints: " + ", ".join(f"{count} {rm_joints.JOINT_NAMES[int(code)]}" for code, count in
                                   zip(codes, counts, strict=True)), file=out)

    def body_line(i):
        parent = model.body_parent[i]
        return (f"  body {model.body_names[i]}: {rm_joints.JOINT_NAMES[int(model.joint_type[i])]} joint to "
                f"{'ground' if parent < 0 else model.body_names[parent]}, mass {model.body_mass[i]:.6g} kg, "
                f"inertia {model.body_inertia[i]:.6g} kg m^2, com ({model.body_com[i][0]:g}, "
                f"{model.body_com[i][1]:g}) m")

    _print_list([body_line(i) for i in _ends(model.nbodies)], model.nbodies, "bodies", out)
    loops = model._loops
    _print_list([f"  loop {loops[i]['name']}: {loops[i]['kind']}" for i in _ends(len(loops))], len(loops),
                "loops", out)
    names = model.element_names
    _print_list([f"  element {names[i]}" for i in _ends(len(names))], len(names), "elements", out)
    _print_contacts(model, out)
    print(f"  analysis: {spec.analysis or 'none'}", file=out)
    shown = ", ".join(spec.defaults[:12]) + (f", and {len(spec.defaults) - 12} more" if len(spec.defaults) > 12 else "")
    print(f"  defaults used (recursive_mbd.files.io format reference): {shown or 'none'}", file=out)


def _print_contacts(model, out):
    """The surfaces, contacts and self-contact sets of a planar or spatial model, for ``rmbd info``."""
    surfaces = list(model._surfaces.values())
    _print_list([_surface_line(model, surfaces[i]) for i in _ends(len(surfaces))], len(surfaces), "surfaces", out)
    contacts = model._contacts
    _print_list([_contact_line(model, contacts[i]) for i in _ends(len(contacts))], len(contacts), "contacts", out)
    sets = model._self_contacts
    _print_list([_self_contact_line(model, sets[i]) for i in _ends(len(sets))], len(sets), "self-contact sets", out)


def _surface_line(model, surface):
    """A contact surface in a line of ``rmbd info``: a spatial ground's extent along its tangent t1 and along
    normal x t1, a spatial drum's axis."""
    owner = "fixed" if surface["owner"] < 0 else f"on {model.body_names[surface['owner']]}"
    if surface["kind"] == "drum":
        axis = f" about {surface['axis'].tolist()}" if "axis" in surface else ""
        return (f"  drum {surface['name']}: radius {surface['radius']:g} m at {surface['center'].tolist()}{axis}, "
                f"{owner}")
    extent = surface["extent"]
    if "tangent" in surface:
        (lo1, hi1), (lo2, hi2) = extent
        extent = (f"extent {lo1:g} .. {hi1:g} m along {surface['tangent'].tolist()}, {lo2:g} .. {hi2:g} m across "
                  "it")
    else:
        extent = f"extent {extent[0]:g} .. {extent[1]:g} m"
    return (f"  ground {surface['name']}: through {surface['point'].tolist()}, normal {surface['normal'].tolist()}, "
            f"{extent}, {owner}")


def _contact_line(model, contact):
    """A contact in a line of ``rmbd info``."""
    round_shape = "sphere" if isinstance(model, io.Model3D) else "circle"
    shape = (f"capsule of radius {contact['radius']:g} m" if "segment" in contact else
             f"{round_shape} of radius {contact['radius']:g} m" if contact["radius"] > 0 else "point")
    return (f"  contact {contact['name']}: {shape} of {model.body_names[contact['body']]} on {contact['surface']}, "
            f"k {contact['stiffness']:g}, e {contact['restitution']:g}, mu {contact['friction']:g}")


def _self_contact_line(model, group):
    """A self-contact set in a line of ``rmbd info``."""
    ends = group["ends"]
    round_shapes = "spheres" if isinstance(model, io.Model3D) else "circles"
    shape = round_shapes if np.array_equal(ends[0], ends[1]) else "capsules"
    bodies = [model.body_names[index] for index in group["bodies"]]
    listed = ", ".join(bodies) if len(bodies) <= 4 else f"{bodies[0]} ... {bodies[-1]}"
    return (f"  self_contact {group['name']}: {shape} of radius {group['radius']:g} m on {len(bodies)} bodies "
            f"({listed}), k {group['stiffness']:g}, e {group['restitution']:g} at {group['impact_speed']:g} m/s, "
            f"mu {group['friction']:g}")


def _info_spatial(args, spec, out):
    """rmbd info on a spatial model file: bodies, joints, nq and nv, mass, gravity, each body's joint, its elements,
    loops, drivers, surfaces and contacts."""
    model = spec.model
    mass = model.total_mass()
    gravity = ", ".join(f"{g:g}" for g in model.gravity)
    print(f"{args.file}: {model.name or 'model'}: spatial, {counted(model.nbodies, 'body', 'bodies')}, "
          f"nq = {counted(model.nq, 'configuration coordinate')}, nv = {counted(model.nv, 'velocity', 'velocities')} "
          f"(degrees of freedom), total mass {mass:.6g} kg, gravity "
          f"({gravity}) m/s^2", file=out)
    names, counts = np.unique(model.joint_types, return_counts=True)
    print("  joints: " + ", ".join(f"{count} {name}" for name, count in zip(names, counts, strict=True)), file=out)

    def body_line(i):
        parent = int(model.body_parent[i])
        com = ", ".join(f"{c:g}" for c in model.body_com[i])
        moments = ", ".join(f"{m:.6g}" for m in np.linalg.eigvalsh(model.body_inertia[i]))
        span = model.q_slice(i)
        return (f"  body {model.names[i]}: {model.joint_types[i]} joint to "
                f"{'ground' if parent < 0 else model.names[parent]}, q[{span.start}:{span.stop}], mass "
                f"{model.body_mass[i]:.6g} kg, principal moments ({moments}) kg m^2, com ({com}) m")

    _print_list([body_line(i) for i in _ends(model.nbodies)], model.nbodies, "bodies", out)
    elements = model._elements
    _print_list([f"  element {elements[i]['name']}: {elements[i]['kind']}" for i in _ends(len(elements))],
                len(elements), "elements", out)
    _print_list([f"  loop {model.loop_names[i]}: {model.loop(i)['kind']}" for i in _ends(model.nloops)],
                model.nloops, "loops", out)
    drivers = list(spec.drivers.items())
    _print_list([f"  driver of {drivers[i][0]}: {_driver_text(drivers[i][1])}" for i in _ends(len(drivers))],
                len(drivers), "drivers", out)
    _print_contacts(model, out)
    print(f"  analysis: {spec.analysis or 'none'}", file=out)
    shown = ", ".join(spec.defaults[:12]) + (f", and {len(spec.defaults) - 12} more" if len(spec.defaults) > 12 else "")
    print(f"  defaults used (recursive_mbd.files.io format reference): {shown or 'none'}", file=out)


def _driver_text(motion):
    """A driver read from a file, in words: "polynomial q = 0.1 + 2 t" or "harmonic q = 0 + 0.5 sin(3 t + 0)"."""
    table = getattr(motion, "table", None)
    if table is None:
        return "a function of time"
    if table["kind"] == "polynomial":
        terms = [f"{c:g}" + ("" if k == 0 else " t" if k == 1 else f" t^{k}")
                 for k, c in enumerate(table["coefficients"])]
        return "polynomial q = " + " + ".join(terms)
    return (f"harmonic q = {table['offset']:g} + {table['amplitude']:g} sin({table['frequency']:g} t + "
            f"{table['phase']:g})")


def _ends(count, keep=3):
    """Indices to list of ``count`` items: all of them up to _INFO_LIST, else the first and last ``keep``."""
    return list(range(count)) if count <= _INFO_LIST else [*range(keep), *range(count - keep, count)]


def _print_coordinates(labels, values, out):
    """One line per coordinate, "  crank angle = 0.5236 rad" (labels "name [unit]"; a long chain's first and last
    few)."""
    lines = []
    for i in _ends(len(values)):
        name, _, unit = labels[i][:-1].rpartition(" [")
        lines.append(f"  {name} = {values[i]:.6g}{'' if unit in ('', '-') else ' ' + unit}")
    _print_list(lines, len(values), "coordinates", out)


def _moving_most(labels, shape):
    """The coordinate that moves most in a mode shape ("rod1 omega z"): its label ("name [unit]") without the
    unit."""
    return labels[int(np.argmax(np.abs(shape)))].rpartition(" [")[0]


def _neutral_note(labels, neutral):
    """'; 1 neutral / zero-frequency mode (no load resists it): rod1 omega z' for an equilibrium's neutral modes
    (``neutral`` (n, k) their directions; ``labels`` of the n coordinates), else ''."""
    if not neutral.size:
        return ""
    count = neutral.shape[1]
    names = ", ".join(_moving_most(labels, direction) for direction in neutral.T)
    return (f"; {counted(count, 'neutral / zero-frequency mode')} (no load resists {'it' if count == 1 else 'them'}):"
            f" {names}")


def _frequencies(labels, omega, shapes):
    """The natural frequencies line; a frequency zero within tolerance (omega^2 below 1e-8 of the largest) is
    printed as 0 and named as a neutral / zero-frequency mode, with the coordinate that moves most in it."""
    zero = omega**2 <= 1e-8 * float(np.max(omega**2, initial=0.0))
    # a zero mode's computed omega is round-off (its digits differ between machines and BLAS builds): print 0
    shown = [f"0 (zero: a neutral / zero-frequency mode, {_moving_most(labels, shapes[:, i])})" if zero[i]
             else f"{w:.6g}" for i, w in enumerate(omega)]
    return "natural frequencies [rad/s]: " + ", ".join(shown)


def _driving_summary(model, driving_forces, driven):
    """The largest driving force of each driver over a kinematic analysis or a simulation (``driving_forces`` (nt,
    nd) of the driven coordinates ``driven`` (nd,), a Model3D's indices in v), named and with its unit: "driving
    forces max |.|: crank torque 2812.02 N m" (a revolute joint's driver: N m; a prismatic one's: N)."""
    peaks = np.abs(driving_forces).max(axis=0, initial=0.0) if driving_forces.size else ()
    if isinstance(model, io.Model3D):
        first_rate = {model.v_slice(i).start: i for i in range(model.nbodies)}
        named = []
        for kv in driven:
            body = first_rate[int(kv)]
            force = ("torque", "N m") if model.joint_types[body] == "revolute" else ("force", "N")
            named.append((f"{model.names[body]} {force[0]}", force[1]))
    else:
        from .plot import coordinate_names_units  # noqa: PLC0415  (labels only: no matplotlib)

        names, units = coordinate_names_units(model, "tau")
        named = [(names[c], units[c]) for c in driven]
    listed = ", ".join(f"{name} {peak:.6g} {unit}" for (name, unit), peak in zip(named, peaks, strict=True))
    return f"driving {'force' if len(named) == 1 else 'forces'} max |.|: {listed or 'none'}"


def _print_list(lines, count, what, out):
    if count <= _INFO_LIST:
        for line in lines:
            print(line, file=out)
        return
    half = len(lines) // 2
    for line in lines[:half]:
        print(line, file=out)
    print(f"  ... {count - len(lines)} more {what} ...", file=out)
    for line in lines[half:]:
        print(line, file=out)


def _load_result(path):
    path = Path(path)
    if path.is_file():
        with path.open("rb") as stream:
            magic = stream.read(4)
    if not path.is_file() or path.suffix.lower() != ".npz" or magic not in (b"PK\x03\x04", b"PK\x05\x06"):
        what = "no such file" if not path.exists() else "not a result file"
        raise io.FileFormatError(f"{path}: {what} (expected the .npz that `rmbd run` writes)")
    from .integrate.result import read_npz  # noqa: PLC0415  (numba: only for the commands that read results)

    return read_npz(path)  # a damaged archive (zip, header, CRC) is a ResultFileError naming the file


def _result_model(args, data, out):
    """The model file of a result (``io.load``), to draw the mechanism: --model, else the file the run recorded
    (when it still has the result's bodies); None (and a note) when there is none."""
    source = args.model or (str(data["model_file"]) if "model_file" in data else None)
    if source is None or not Path(source).exists():
        if source is not None:
            print(f"note: {source} (the model of this result) is gone: no drawing of the mechanism (give --model)",
                  file=out)
        return None
    spec = io.load(source)
    if tuple(str(name) for name in data.get("body_names", ())) != tuple(spec.model.body_names):
        if args.model:
            raise io.FileFormatError(f"{args.result}: its bodies are not those of {source}")
        print(f"note: {source} no longer has this result's bodies: no drawing of the mechanism", file=out)
        return None
    return spec


def _plot(args, out):
    _require("matplotlib", "plotting", "plot")
    data = _load_result(args.result)
    kind = str(data["kind"]) if "kind" in data else ("dynamics" if "t" in data else "")
    if "q" not in data or kind not in io.ANALYSES:
        raise io.FileFormatError(f"{args.result}: not a result of rmbd run (no kind and coordinates q)")
    from . import plot  # noqa: PLC0415

    spec = _result_model(args, data, out)
    model = spec.model if spec is not None else None
    if spec is not None and kind == "dynamics" and "method" not in data and "method" in spec.analysis:
        data = dict(data, method=np.array(spec.analysis["method"]))  # for the title: the method the run used
    if isinstance(model, io.Model3D) or "dimension" in data:
        if model is None:
            raise io.FileFormatError(f"{args.result}: a spatial result needs its model to be drawn (give --model)")
        with _naming(args.result):
            fig = plot.spatial_overview(data, model)
    else:
        with _naming(args.result):
            fig = plot.overview(data, model, pyplot=False)
    target = _result_path(args.result, args.output, ".png")
    fig.savefig(target, dpi=args.dpi)
    print(f"wrote {target}", file=out)


def _animate(args, out):
    _require("matplotlib", "animating", "plot")
    for option, value in (("--fps", args.fps), ("--speed", args.speed), ("--frames", args.frames)):
        if value is not None and not value > 0:
            raise InputError(f"{option} must be > 0, got {value:g}")
    if Path(args.output).suffix.lower() not in (".gif", ".mp4"):
        raise InputError(f"{args.output}: expected a .gif (Pillow) or .mp4 (ffmpeg) file name")
    if Path(args.output).suffix.lower() == ".mp4":
        ffmpeg = _require("matplotlib", "animating", "plot").rcParams["animation.ffmpeg_path"]
        if shutil.which(ffmpeg) is None:
            raise InputError(f"{args.output}: writing .mp4 needs ffmpeg, which is not on PATH: install it (apt "
                             "install ffmpeg, brew install ffmpeg or conda install ffmpeg) or write a .gif")
    spec = io.load(args.file)
    data = _load_result(args.result)
    if "t" not in data:
        raise io.FileFormatError(f"{args.result}: no time history to animate")
    if data["q"].shape[1] != spec.model.nq:
        raise io.FileFormatError(f"{args.result}: {data['q'].shape[1]} coordinates, but {args.file} has "
                                 f"{spec.model.nq}")
    from . import plot  # noqa: PLC0415

    forces = None
    if "contact_normal" in data and data["contact_normal"].shape == (data["t"].size, spec.model.ncontacts):
        forces = {key: data[f"contact_{key}"] for key in ("normal", "tangential", "point")}
    with _naming(args.file):
        plot.animate(spec.model, data["t"], data["q"], args.output, fps=args.fps, frames=args.frames,
                     speed=args.speed, contact_forces=forces)
    print(f"wrote {args.output}", file=out)


def _bench(args, out):
    from .dynamics import augmented  # noqa: PLC0415
    from .dynamics.calls import forward_dynamics  # noqa: PLC0415

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


def _compile(args, out):
    from . import warmup  # noqa: PLC0415
    from ._kernels import cache  # noqa: PLC0415

    if args.list:
        for name, (what, _) in warmup.JOBS.items():
            print(f"{name:26} {what}", file=out)
        return
    unknown = [name for name in args.only or () if name not in warmup.JOBS]
    if unknown:
        raise InputError(f"unknown compile job {unknown[0]!r}; the jobs: {', '.join(warmup.JOBS)} (rmbd compile "
                         f"--list)")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    folder = cache.cache_folder()
    if args.clear:
        for removed in cache.remove_other_sources():
            print(f"removed {removed}", file=out)
    where = folder if folder is not None else "where NUMBA_CACHE_DIR / numba's defaults say"
    print(f"compiling into {where}", file=out, flush=True)
    start = time.perf_counter()
    seconds = warmup.compile_all(args.only or None, args.jobs, out=out)
    print(f"done: {len(seconds)} jobs, {sum(seconds.values()):.0f} s of CPU in {time.perf_counter() - start:.0f} s",
          file=out)


def _median(func, *args, repeats=5, **kwargs):
    func(*args, **kwargs)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        func(*args, **kwargs)
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def _raised_by_this_package(err):
    """Whether the innermost frame of ``err`` is recursive_mbd code: a ValueError raised there is its argument
    validation speaking (an input error); one from numpy or scipy internals is a bug."""
    tb = err.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return Path(tb.tb_frame.f_code.co_filename).resolve().parent.is_relative_to(Path(__file__).resolve().parent)


def _command(args, out):
    """Run the command ``args`` names (the demo by default)."""
    if args.command in (None, "demo"):
        links = getattr(args, "links", 1000)
        t_end = getattr(args, "t_end", 0.5)
        if links < 1 or not t_end > 0:
            raise InputError("--links must be >= 1 and --t-end > 0")
        demo(links, t_end, out)
    else:
        {"run": _run, "info": _info, "plot": _plot, "animate": _animate, "bench": _bench,
         "compile": _compile}[args.command](args, out)


def main(argv=None, out=None):
    """The command line; returns the exit code: 0 ok, 1 error in the input or environment, 2 internal error,
    130 interrupted."""
    out = out or sys.stdout
    common = argparse.ArgumentParser(add_help=False)  # options every subcommand takes too
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks of internal errors")
    parser = _Parser(prog="rmbd", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"recursive_mbd {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    p_demo = sub.add_parser("demo", parents=[common], help="run the built-in demo (the default)")
    p_demo.add_argument("--links", type=int, default=1000, help="links of the long chain (default 1000)")
    p_demo.add_argument("--t-end", type=float, default=0.5, help="simulated time of the long chain [s]")
    p_run = sub.add_parser("run", parents=[common], help="run the analysis a model file names; results to .npz")
    p_run.add_argument("file", help="model file (.toml, .deck, .urdf or MJCF .xml; see recursive_mbd.files.io)")
    p_run.add_argument("-o", "--output", help="result file (default: <file stem>.npz here)")
    p_run.add_argument("--csv", help="also write t, q, qd (a spatial model's v) as CSV (dynamics and kinematics "
                       "analyses)")
    p_run.add_argument("--t-end", type=float, metavar="SECONDS",
                       help="for a file that names no analysis (URDF, MJCF): simulate this long from its initial "
                       "state at rest (dopri5, 201 samples)")
    p_run.add_argument("--force", action="store_true", help="overwrite existing result files")
    p_run.add_argument("--max-time", type=float, metavar="SECONDS",
                       help="stop a dynamics run after this wall-clock time, keeping the samples so far")
    p_run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="progress bar (default: when stderr is a terminal; otherwise a line every 10 s of a "
                       "long run; --no-progress: neither)")
    p_info = sub.add_parser("info", parents=[common],
                            help="bodies, joints, degrees of freedom, loops, mass of a model file")
    p_info.add_argument("file")
    p_plot = sub.add_parser("plot", parents=[common],
                            help="plot a result: the mechanism, coordinates, energy balance, drift, driving "
                            "forces and reactions against time; static reactions; mode shapes")
    p_plot.add_argument("result", help="a .npz written by rmbd run")
    p_plot.add_argument("-o", "--output", help="image file (default: <result stem>.png here)")
    p_plot.add_argument("--model", help="the model file, to draw the mechanism (default: the file the run read)")
    p_plot.add_argument("--dpi", type=int, default=100, help="resolution of the image (default 100)")
    p_anim = sub.add_parser("animate", parents=[common], help="animate a result of a model file (.gif or .mp4)")
    p_anim.add_argument("file")
    p_anim.add_argument("result")
    p_anim.add_argument("-o", "--output", required=True, help="out.gif (Pillow) or out.mp4 (ffmpeg)")
    p_anim.add_argument("--fps", type=float, default=None,
                        help="frames per second (default 25; fewer when the samples are sparser)")
    p_anim.add_argument("--speed", type=float, default=1.0,
                        help="seconds of motion per second of playback (default 1: real time; 0.5: slow motion)")
    p_anim.add_argument("--frames", type=int, default=None, help="at most this many frames (the fps lowered to keep "
                        "the duration)")
    p_bench = sub.add_parser("bench", parents=[common], help="time the formulations on a small grid of chain sizes")
    p_bench.add_argument("--sizes", type=int, nargs="+", default=[2, 10, 100, 1000])
    p_compile = sub.add_parser("compile", parents=[common],
                               help="compile every kernel ahead of use (once per version; every install shares it)")
    p_compile.add_argument("--jobs", type=int, default=None, help="processes at once (default: the CPU count)")
    p_compile.add_argument("--only", nargs="+", metavar="JOB", help="only these jobs (rmbd compile --list)")
    p_compile.add_argument("--list", action="store_true", help="list the jobs and what each compiles")
    p_compile.add_argument("--clear", action="store_true",
                           help="first remove the compiled kernels of other versions and sources")
    args = parser.parse_args(argv)
    try:
        with _library_messages():
            _command(args, out)
    except KeyboardInterrupt as err:
        print(f"rmbd: {_short(err) or 'interrupted'}", file=sys.stderr)
        return 130
    except (ModelError, StateError, ResultFileError, SimulationError, InputError, OSError) as err:
        print(f"rmbd: error: {_short(err)}", file=sys.stderr)
        return 1
    except ImportError as err:  # an optional package missing where _require did not look first
        if args.debug:
            raise
        print(f"rmbd: error: {_short(err)} (the optional extras: {install_hint('plot,progress')})", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - the promise: one line, never a traceback
        if args.debug:
            raise
        if isinstance(err, ValueError) and _raised_by_this_package(err):
            print(f"rmbd: error: {_short(err)}", file=sys.stderr)
            return 1
        print(f"rmbd: internal error: {type(err).__name__}: {_short(err)} (run with --debug for the traceback)",
              file=sys.stderr)
        return 2
    return 0
