"""Model files never guess, and the command line's exit codes, messages and result files (issues 12 and 13)."""

import contextlib
import io as std_io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _helpers import ARM_AND_SLIDER_TABLES, PROBE_NOTICE, damaged_copies, uncompiled_probe

import recursive_mbd as rm
from recursive_mbd import cli
from recursive_mbd.integrate import simulate as integrate

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"

TREE = f"""
[model]
name = "arm and slider"

{ARM_AND_SLIDER_TABLES}
[[loop]]
kind = "distance"
body_a = "slider"
point_a = [0.0, 0.0]
body_b = "arm"
point_b = [0.0, 0.5]
length = 1.1

[initial]
q = [0.0, 0.1]

[analysis]
type = "dynamics"
t_end = 0.01
"""

DRIVER = """
[[driver]]
body = "arm"
kind = "harmonic"
amplitude = 0.1
frequency = 2.0

"""
DRIVEN = TREE.replace("[initial]", DRIVER + "[initial]")
MECHANISM = (MODELS / "four_bar.toml").read_text()
CHAIN = "[model]\nform = \"chain\"\n\n[chain]\nn = 3\nlength = 1.0\nmass = 1.0\n\n[analysis]\ntype = \"statics\"\n"


def rmbd(argv, cwd=None):
    """cli.main in this process: (exit code, stdout, stderr)."""
    out, err = std_io.StringIO(), std_io.StringIO()
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stderr(err):
            code = cli.main([str(a) for a in argv], out=out)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def without_compile_notices(err):
    """stderr without the lines saying which kernels were compiled (on a first run)."""
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("rmbd: compiling "))


def one_line_error(err):
    """One line of error, after any saying which kernels were compiled (on a first run)."""
    err = without_compile_notices(err)
    return err.startswith("rmbd: error: ") and err.count("\n") == 1 and "Traceback" not in err


def without(text, line):
    assert text.count(line + "\n") == 1, line
    return text.replace(line + "\n", "", 1)


# (text, the line to delete, the entry the message must name)
MISSING = [
    (TREE, 'parent = "ground"', "body[0].parent"),
    (TREE, 'joint = "revolute"', "body[0].joint"),
    (TREE, "mass = 1.0", "body[0].mass"),
    (TREE, "inertia = 0.01", "body[1].inertia"),
    (TREE, "axis = [0.0, -1.0]", "body[1].axis"),
    (TREE, "rest_length = 0.0", "spring_damper[0].rest_length"),
    (TREE, 'body_b = "arm"', "loop[0].body_b"),
    (TREE, "point_b = [0.0, 0.5]", "loop[0].point_b"),
    (TREE, "length = 1.1", "loop[0].length"),
    (DRIVEN, 'kind = "harmonic"', "driver[0].kind"),
    (TREE, 'type = "dynamics"', "analysis.type"),
    (TREE, "t_end = 0.01", "analysis.t_end"),
    (MECHANISM, "mass = 2.0", "body[1].mass"),
    (MECHANISM, "inertia = 0.28125", "body[2].inertia"),
    (MECHANISM, "pose = [0.2701511529340699, 0.42073549240394825, 1.0]", "body[0].pose"),
    (CHAIN, "length = 1.0", "chain.length"),
    (CHAIN, "mass = 1.0", "chain.mass"),
    (CHAIN, "n = 3", "chain.n"),
]


@pytest.mark.parametrize(("text", "line", "entry"), MISSING, ids=[m[2] for m in MISSING])
def test_a_missing_required_key_exits_1_naming_file_and_entry(text, line, entry, tmp_path):
    path = tmp_path / "model.toml"
    path.write_text(text)
    rm.io.load(path)  # the complete file loads
    path.write_text(without(text, line))
    code, _, err = rmbd(["run", path, "-o", tmp_path / "out.npz"])
    assert code == 1 and one_line_error(err), err
    assert f"{path}: {entry}: missing" in err, err
    assert not (tmp_path / "out.npz").exists()


@pytest.mark.parametrize(("analysis", "entry", "words"), [
    ('method = "rk4"', "analysis.dt", "fixed steps"),
    ('method = "implicit_midpoint"', "analysis.dt", "fixed steps"),
    ('method = "rk5"', "analysis.method", "unknown method 'rk5'"),
    ('method = "scipy:Euler"', "analysis.method", "unknown method 'scipy:Euler'"),
    ('method = "LSODA"', "analysis.method", "unknown method 'LSODA': scipy's solver LSODA is method='scipy:LSODA'"),
    ('method = "implicit-midpoint"', "analysis.method", "(did you mean 'implicit_midpoint'?)"),
    ("dt = 0.001", "analysis.dt", "chooses its own steps"),
    ('method = "rk4"\ndt = 0.001\nrtol = 1e-6', "analysis.rtol", "adaptive"),
    ('method = "rk4"\ndt = 1.0', "analysis.dt", "longer than t_end"),
    ('method = "rk4"\ndt = 1e-12', "analysis.dt", "steps, more than"),
    ('stabilization = "magic"', "analysis.stabilization", "expected one of"),
    ('method = "scipy:Radau"\nstabilization = "projection"', "analysis.stabilization", "numba integrators"),
    ("samples = 2.5", "analysis.samples", "integer"),
    ("samples = 1000000000", "analysis.samples", "1,000,000,000 output times, more than 10,000,000"),
])
def test_analysis_options_are_checked_when_the_file_is_loaded(analysis, entry, words, tmp_path):
    path = tmp_path / "model.toml"
    path.write_text(TREE.replace("t_end = 0.01", "t_end = 0.01\n" + analysis))
    with pytest.raises(rm.io.FileFormatError, match=entry):
        rm.io.load(path)
    code, _, err = rmbd(["run", path, "-o", tmp_path / "out.npz"])
    assert code == 1 and one_line_error(err) and entry in err and words in err, err


def test_info_lists_the_defaults_a_file_relied_on(tmp_path):
    path = tmp_path / "model.toml"
    path.write_text(DRIVEN)
    spec = rm.io.load(path)
    assert "body[0].com = [0.0, 0.0]" in spec.defaults and "body[0].parent_point = [0.0, 0.0]" in spec.defaults
    assert "driver[0].phase = 0.0" in spec.defaults and "analysis.method = 'dopri5'" in spec.defaults
    assert not any(d.startswith(("body[0].mass", "body[0].inertia", "body[0].parent")) and "point" not in d
                   for d in spec.defaults)
    code, out, err = rmbd(["info", path])
    assert code == 0, err
    assert "defaults used" in out and "body[1].com = [0.0, 0.0]" in out


def test_a_deck_without_task_has_no_analysis_and_run_refuses_it(tmp_path):
    text = (MODELS / "kine2d_double_pendulum.deck").read_text()
    path = tmp_path / "no_task.deck"
    path.write_text(text.replace("TASK, D, 1, 0, 0.0, 1.0, 0.05", "* TASK, D, 1, 0, 0.0, 1.0, 0.05"))
    assert rm.io.load(path).analysis == {}
    code, _, err = rmbd(["run", path, "-o", tmp_path / "out.npz"])
    assert code == 1 and one_line_error(err) and "no analysis" in err and "TASK" in err, err


@pytest.mark.parametrize("name", ["\N{GRINNING FACE}", 'say "hi"', "back\\slash", "tab\tand\nnewline", "ünïcödé ß",
                                  "del\x7f", "\U0001F469\u200D\U0001F52C crank"])
def test_io_save_writes_names_that_load_reads_back(name, tmp_path):
    model = rm.Model()
    model.add_body("ground", "revolute", (0, 0), (0, 0.5), mass=1.0, inertia=0.1, name=name)
    model.add_body(name, "revolute", (0, -0.5), (0, 0.5), mass=1.0, inertia=0.1, name=name + "2")
    model.add_torque(name + "2", 0.5, name=name + " torque")
    model.name = name
    path = tmp_path / "names.toml"
    rm.io.save(model, path, np.array([0.1, 0.2]))
    again = rm.io.load(path).model
    assert again.body_names == model.body_names and again.name == name
    assert again.element_names == model.element_names


def test_a_lone_surrogate_name_is_refused_by_save(tmp_path):
    model = rm.Model()
    model.add_body("ground", "revolute", (0, 0), (0, 0.5), mass=1.0, inertia=0.1, name="bad\ud800")
    with pytest.raises(rm.io.FileFormatError, match="surrogate"):
        rm.io.save(model, tmp_path / "bad.toml")


def test_messages_are_capped_at_one_short_line(tmp_path):
    path = tmp_path / "model.toml"
    path.write_text(TREE.replace("q = [0.0, 0.1]", "q = [" + ", ".join(["0.123456789"] * 1000) + "]"))
    code, _, err = rmbd(["run", path, "-o", tmp_path / "out.npz"])
    assert code == 1 and one_line_error(err) and "initial.q" in err, err[:300]
    assert len(err) <= len("rmbd: error: \n") + cli.MESSAGE_LIMIT, len(err)
    short = cli._short("start " + "x " * 3000 + "end")
    assert len(short) == cli.MESSAGE_LIMIT and short.startswith("start x") and short.endswith("x end")
    assert "[6009 characters, shortened]" in short


def test_debug_is_accepted_after_the_subcommand(tmp_path, monkeypatch):
    path = tmp_path / "model.toml"
    path.write_text(TREE)
    code, out, err = rmbd(["info", path, "--debug"])
    assert code == 0 and "arm" in out, err

    def broken(args, out):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "_info", broken)
    code, _, err = rmbd(["info", path])
    assert code == 2 and "internal error: RuntimeError: a bug" in err and "--debug" in err
    with pytest.raises(RuntimeError, match="a bug"):
        rmbd(["info", path, "--debug"])
    with pytest.raises(RuntimeError, match="a bug"):
        rmbd(["--debug", "info", path])


def test_value_errors_of_the_package_are_input_errors_others_are_bugs(tmp_path, monkeypatch):
    path = tmp_path / "model.toml"
    path.write_text(TREE)
    monkeypatch.setattr(cli, "_info", lambda args, out: rm.simulate(rm.chains.serial_chain(1), [0.0], [0.0], 1.0,
                                                                   method="nope"))
    code, _, err = rmbd(["info", path])
    assert code == 1 and one_line_error(err) and "unknown method 'nope'" in err, err
    monkeypatch.setattr(cli, "_info", lambda args, out: np.zeros(3).reshape(2, 2))
    code, _, err = rmbd(["info", path])
    assert code == 2 and "internal error: ValueError" in err


def test_plot_of_a_model_file_says_it_is_not_a_result(tmp_path):
    path = tmp_path / "model.toml"
    path.write_text(TREE)
    fake = tmp_path / "fake.npz"
    fake.write_bytes(b"\x93NUMPY not really")
    for target in (path, fake, tmp_path / "missing.npz"):
        code, _, err = rmbd(["plot", target])
        assert code == 1 and one_line_error(err), err
        assert "expected the .npz that `rmbd run` writes" in err and "allow_pickle" not in err, err


def test_missing_matplotlib_exits_1_saying_how_to_install(tmp_path, monkeypatch):
    result = tmp_path / "r.npz"
    np.savez(result, t=np.linspace(0, 1, 3), q=np.zeros((3, 1)))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    code, _, err = rmbd(["plot", result, "-o", tmp_path / "r.png"])
    # the hint suits every way of installing: the package alone, the extra of a release, the extra of a clone
    hint = ('pip install matplotlib (or pip install "recursive-mbd[plot]"; in a clone of the repository: '
            'pip install -e ".[plot]")')
    assert code == 1 and one_line_error(err) and hint in err, err
    code, _, err = rmbd(["animate", MODELS / "four_bar.toml", result, "-o", tmp_path / "r.gif"])
    assert code == 1 and hint in err, err


def test_missing_ffmpeg_exits_1_before_animating(tmp_path, monkeypatch):
    result = tmp_path / "r.npz"
    np.savez(result, t=np.linspace(0, 1, 3), q=np.zeros((3, 3)))
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no ffmpeg on PATH
    code, _, err = rmbd(["animate", MODELS / "four_bar.toml", result, "-o", tmp_path / "r.mp4"])
    assert code == 1 and one_line_error(err) and "ffmpeg" in err and "install" in err, err
    assert not (tmp_path / "r.mp4").exists()


def test_library_animate_without_ffmpeg_names_it_before_drawing(tmp_path, monkeypatch):
    model = rm.Model()
    model.add_body(parent="ground", joint="revolute", child_point=(0, 0.5), mass=1.0, inertia=0.1, name="rod")
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no ffmpeg on PATH
    with pytest.raises(FileNotFoundError, match=r"x\.mp4: writing this animation needs ffmpeg, which is not "
                                                r"installed .* or write a \.gif \(Pillow\)$"):
        rm.plot.animate(model, np.linspace(0.0, 1.0, 3), np.zeros((3, 1)), tmp_path / "x.mp4")
    assert list(tmp_path.iterdir()) == []


def test_missing_tqdm_for_progress_exits_1(tmp_path, monkeypatch):
    path = tmp_path / "model.toml"
    path.write_text(TREE)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    code, _, err = rmbd(["run", path, "--progress", "-o", tmp_path / "out.npz"])
    assert code == 1 and 'pip install tqdm (or pip install "recursive-mbd[progress]"; in a clone of the repository: ' \
                         'pip install -e ".[progress]")' in err, err


def test_run_never_overwrites_without_force_and_writes_the_path_it_prints(tmp_path):
    path = tmp_path / "model.toml"
    path.write_text(TREE)
    target = tmp_path / "out.dat"  # not .npz: np.savez alone would write out.dat.npz
    code, out, err = rmbd(["run", path, "-o", target])
    assert code == 0, err
    assert f"wrote {target.resolve()}" in out and target.exists() and not Path(str(target) + ".npz").exists()
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    with np.load(target) as data:
        assert data["q"].shape == (201, 2) and str(data["status"]) == "finished"
    before = target.read_bytes()
    code, _, err = rmbd(["run", path, "-o", target])
    assert code == 1 and one_line_error(err) and "exists; pass --force" in err, err
    assert target.read_bytes() == before
    code, out, err = rmbd(["run", path, "-o", target, "--force"])
    assert code == 0 and "wrote" in out, err


@pytest.fixture
def model_not_to_simulate(tmp_path, monkeypatch):
    """A model file whose run must be refused before it computes: simulate fails the test if called."""
    path = tmp_path / "model.toml"
    path.write_text(TREE)

    def must_not_run(*args, **kwargs):
        raise AssertionError("simulate ran although the output cannot be written")

    monkeypatch.setattr(integrate, "simulate", must_not_run)
    return path


def test_run_checks_its_outputs_before_computing(tmp_path, model_not_to_simulate):
    path = model_not_to_simulate
    (tmp_path / "folder").mkdir()
    cases = [(tmp_path / "folder", "is a directory"), (tmp_path / "nowhere" / "out.npz", "no such directory"),
             (path, "exists; pass --force")]
    for target, words in cases:
        code, _, err = rmbd(["run", path, "-o", target])
        assert code == 1 and one_line_error(err) and words in err, err
    code, _, err = rmbd(["run", path, "-o", path, "--force"])
    assert code == 1 and "overwrite the model file" in err, err
    assert path.read_text() == TREE


def test_a_fifo_as_model_or_output_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "model.toml").write_text(TREE)
    for args, words in ((["run", "pipe"], "not a regular file"), (["info", "pipe"], "not a regular file"),
                        (["run", "model.toml", "-o", "pipe"], "not a regular file")):
        done = subprocess.run([sys.executable, "-m", "recursive_mbd", *args], capture_output=True, text=True,
                              cwd=tmp_path, timeout=120, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 1 and words in done.stderr, done.stderr


def tree_file_and_run(tmp_path, t_end):
    """TREE written to tmp_path/model.toml and a real run of it to t_end (for a stand-in simulate to return)."""
    path = tmp_path / "model.toml"
    path.write_text(TREE)
    spec = rm.io.load(path)
    return path, rm.simulate(spec.model, spec.q0, spec.qd0, t_end, drivers=spec.drivers)


def test_a_failed_run_names_file_and_time_and_saves_the_samples(tmp_path, monkeypatch):
    path, partial = tree_file_and_run(tmp_path, 0.004)
    calls = []

    def failing(model, q0, qd0, t_end, **options):
        calls.append(t_end)
        if len(calls) == 1:  # the warm-up (kernels compiled outside the timed run)
            return partial
        raise rm.SimulationError(f"blew up at t = 0.004 s: {np.arange(1000.0)}", 0.004, partial)

    monkeypatch.setattr(integrate, "simulate", failing)
    code, _, err = rmbd(["run", path, "-o", tmp_path / "out.npz"])
    saved = tmp_path / "out.partial.npz"
    assert code == 1 and one_line_error(err), err
    assert str(path) in err and "at t = 0.004 s" in err and str(saved.resolve()) in err, err
    assert len(err) < 2 * cli.MESSAGE_LIMIT
    assert not (tmp_path / "out.npz").exists()
    with np.load(saved) as data:
        np.testing.assert_array_equal(data["q"], partial.q)
        assert "SimulationError" in str(data["status"])
    code, _, err = rmbd(["run", path, "-o", tmp_path / "out.npz"])  # the partial result is not overwritten either
    assert code == 1 and "out.partial.npz: exists" in err


def test_max_time_is_passed_to_simulate_as_max_wall_time(tmp_path, monkeypatch):
    path, finished = tree_file_and_run(tmp_path, 0.01)
    seen = []

    def accepting(model, q0, qd0, t_end, method="dopri5", *, max_wall_time=None, **options):
        seen.append(max_wall_time)
        return finished

    monkeypatch.setattr(integrate, "simulate", accepting)
    code, _, err = rmbd(["run", path, "-o", tmp_path / "out.npz", "--max-time", "2.5"])
    assert code == 0 and seen[-1] == 2.5, err

    code, _, err = rmbd(["run", path, "-o", tmp_path / "other.npz", "--max-time", "-1"])
    assert code == 1 and "--max-time" in err


def test_run_off_a_terminal_prints_progress_lines_unless_told_not_to(tmp_path, monkeypatch):
    """rmbd run with stderr not a terminal: the run's progress lines on stderr (every 10 s of wall time; here at
    every poll), none with --no-progress."""
    from recursive_mbd.integrate import runs  # noqa: PLC0415

    monkeypatch.setattr(runs, "PROGRESS_LOG_INTERVAL", 0.0)
    path = tmp_path / "model.toml"
    path.write_text(TREE)
    code, _, err = rmbd(["run", path, "-o", tmp_path / "a.npz"])
    lines = err.splitlines()
    assert code == 0 and len(lines) >= 2, err
    assert all(line.startswith("rmbd: dopri5: t = ") for line in lines[:-1]), err
    assert lines[-1].startswith("rmbd: dopri5: ended at t = 0.0100 s, "), err
    code, _, err = rmbd(["run", path, "-o", tmp_path / "b.npz", "--no-progress"])
    assert code == 0 and err == "", err


def test_the_kernels_compiled_are_named_on_stderr_and_their_time_reported_apart(tmp_path, monkeypatch):
    """rmbd run prints on stderr the line the library logs as it starts compiling a kernel (here a probe kernel
    compiled within the run), and reports the time kernels took to get ready apart from the run's."""
    path = tmp_path / "model.toml"
    path.write_text(TREE)
    code, out, _ = rmbd(["run", path, "-o", tmp_path / "a.npz"])
    assert code == 0 and "kernels ready in" in out and ", run " in out
    probe, simulate = uncompiled_probe(), integrate.simulate

    def compiling(*args, **options):
        probe(1.0)
        return simulate(*args, **options)

    monkeypatch.setattr(integrate, "simulate", compiling)
    code, out, err = rmbd(["run", path, "-o", tmp_path / "b.npz"])
    assert code == 0 and err == f"rmbd: {PROBE_NOTICE}\n", err


def test_the_main_job_reports_compile_time_apart():
    out = std_io.StringIO()
    cli.demo(n_links=3, t_end_chain=0.01, out=out)
    lines = out.getvalue().splitlines()
    assert sum("kernels ready in" in line and "not in the timing" in line for line in lines) == 2


def test_too_many_output_times_are_refused_in_spatial_files_and_decks(tmp_path):
    """samples = 1e9 in a spatial file (its arrays exhausted memory: MemoryError, exit code 2), and a deck whose
    TASK step asks for as many: exit code 1 naming the file and the entry, before anything is computed."""
    spatial = tmp_path / "top.toml"
    spatial.write_text((MODELS / "spatial" / "heavy_top.toml").read_text().replace("samples = 401",
                                                                                   "samples = 1000000000"))
    deck = tmp_path / "pendulum.deck"
    deck.write_text((MODELS / "kine2d_double_pendulum.deck").read_text().replace("TASK, D, 1, 0, 0.0, 1.0, 0.05",
                                                                                   "TASK, D, 1, 0, 0.0, 1.0, 1e-12"))
    for path, words in ((spatial, "analysis.samples: 1,000,000,000 output times, more than 10,000,000"),
                        (deck, "TASK: (t_end - t0) / dt gives 1,000,000,000,001 output times")):
        with pytest.raises(rm.io.FileFormatError, match=re.escape(words)):
            rm.io.load(path)
        code, _, err = rmbd(["run", path, "-o", tmp_path / "out.npz"])
        assert code == 1 and one_line_error(err) and str(path) in err and words in err, err


def test_plot_of_a_damaged_result_exits_1_naming_it(tmp_path):
    result = tmp_path / "r.npz"
    np.savez(result, kind=np.array("dynamics"), t=np.linspace(0, 1, 5), q=np.zeros((5, 2)), qd=np.zeros((5, 2)))
    damaged = tmp_path / "damaged.npz"
    codes = []
    for case in damaged_copies(result.read_bytes(), flips=40, cuts=10):
        damaged.write_bytes(case)
        code, _, err = rmbd(["plot", damaged, "-o", tmp_path / "d.png"])
        assert code == 0 or (code == 1 and one_line_error(err) and str(damaged) in err), err
        codes.append(code)
    assert codes.count(1) > 0.8 * len(codes)


def test_computations_that_fail_name_the_model_file(tmp_path):
    """An analysis that fails on a file's data (a start off the loops, drivers that open a loop, planar or
    spatial) exits 1 with a message that names the file."""
    rssr = (MODELS / "spatial" / "rssr.toml").read_text()
    driven = TREE.replace("[initial]", DRIVER.replace('"arm"', '"slider"') + "[initial]")
    cases = [
        (TREE.replace("q = [0.0, 0.1]", "q = [0.0, 0.9]"), "q0 does not close the loops"),
        (driven.replace('type = "dynamics"', 'type = "kinematics"'), "kinematic analysis at t = 0"),
        (rssr.replace("amplitude = 0.2", "amplitude = 20.0"), "loop 'coupler' (index 0) stays open"),
    ]
    for i, (text, words) in enumerate(cases):
        path = tmp_path / f"model{i}.toml"
        path.write_text(text)
        code, _, err = rmbd(["run", path, "-o", tmp_path / f"out{i}.npz"])
        message = without_compile_notices(err)
        assert code == 1 and one_line_error(err) and message.startswith(f"rmbd: error: {path}: ") and words in err, err


def test_a_warm_up_that_fails_is_not_reported_as_the_run(tmp_path, monkeypatch):
    """The short run that prepares the kernels may fail (a huge t_end: its span, a millionth of it, takes more than
    its steps): the run itself runs and is reported; a Ctrl-C during the warm-up saves no warm-up samples."""
    path, finished = tree_file_and_run(tmp_path, 0.01)
    calls = []

    def warm_up_fails(model, q0, qd0, t_end, **options):
        calls.append(options)
        if len(calls) == 1:
            raise rm.SimulationError("more than max_steps steps", 1e-4, finished)
        return finished

    monkeypatch.setattr(integrate, "simulate", warm_up_fails)
    code, out, err = rmbd(["run", path, "-o", tmp_path / "out.npz"])
    assert code == 0 and f"wrote {(tmp_path / 'out.npz').resolve()}" in out, err
    assert calls[0]["max_steps"] == cli.WARM_UP_STEPS and "max_steps" not in calls[1]
    with np.load(tmp_path / "out.npz") as data:
        assert str(data["status"]) == "finished" and np.array_equal(data["q"], finished.q)

    def interrupted(model, q0, qd0, t_end, **options):
        error = KeyboardInterrupt()
        error.result = finished
        raise error

    monkeypatch.setattr(integrate, "simulate", interrupted)
    code, _, err = rmbd(["run", path, "-o", tmp_path / "other.npz"])
    assert code == 130 and "before the run" in err, err
    assert not (tmp_path / "other.partial.npz").exists() and not (tmp_path / "other.npz").exists()


def test_run_probes_the_output_folder_before_computing(model_not_to_simulate, monkeypatch):
    """A folder where no file can be created although access() allows it (root in /proc): refused up front."""
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: True)  # what root is told about /proc
    code, _, err = rmbd(["run", model_not_to_simulate, "-o", "/proc/x.npz"])
    assert code == 1 and one_line_error(err) and "/proc/x.npz: cannot write in '/proc'" in err, err


def test_a_zero_frequency_mode_prints_as_zero_whatever_its_round_off():
    """A mode classed as zero (omega^2 below 1e-8 of the largest) prints "0": its computed omega is round-off, whose
    digits (and sign) differ between machines and LAPACK builds; the others print to 6 digits."""
    labels = ["rod1 omega x [rad/s]", "rod1 omega z [rad/s]", "rod2 omega x [rad/s]"]
    shapes = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    for noise in (0.0, 8.2e-8, -3.1e-7):
        assert cli._frequencies(labels, np.array([noise, 3.795841, 10.29921]), shapes) == (
            "natural frequencies [rad/s]: 0 (zero: a neutral / zero-frequency mode, rod1 omega z), 3.79584, 10.2992")
    # just above the zero class, a small frequency keeps its digits
    assert cli._frequencies(labels, np.array([2e-4, 1.0, 1.5]), shapes) == (
        "natural frequencies [rad/s]: 0.0002, 1, 1.5")
