"""Mechanisms from absolute placements, model files, and the command line."""

import contextlib
import io as std_io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _helpers import ARM_AND_SLIDER_TABLES, fuzzed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recursive_mbd as rm
from recursive_mbd import cli
from recursive_mbd.analysis.analyses import point_motion

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
MODEL_FILES = sorted(MODELS.glob("*.toml")) + sorted(MODELS.glob("*.deck"))


def body_accelerations(model, q, qd, names):
    qdd = rm.forward_dynamics(model, q, qd)
    return np.array([point_motion(model, q, qd, qdd, name, (0.1, -0.2))[2] for name in names])


def placed(model, q, joints_spec):
    """A Mechanism with the bodies of ``model`` at their poses for q, and the given joints."""
    poses, _ = rm.forward_kinematics(model, q)
    mech = rm.Mechanism(gravity=model.gravity)
    for i, name in enumerate(model.body_names):
        mech.add_body(name, model.body_mass[i], model.body_inertia[i], poses[i], com=model.body_com[i])
    for spec in joints_spec:
        mech.add_joint(*spec)
    return mech


def test_mechanism_four_bar_and_slider_crank_equal_the_hand_written_models():
    cases = {
        "four_bar": (rm.models.four_bar(), [("revolute", "ground", (0, 0), "crank", (-0.5, 0)),
                                            ("revolute", "crank", (0.5, 0), "coupler", (-1.0, 0)),
                                            ("revolute", "coupler", (1.0, 0), "rocker", (0.75, 0)),
                                            ("revolute", "ground", (3.0, 0), "rocker", (-0.75, 0))]),
        "slider_crank": (rm.models.slider_crank(crank_angle=0.7), [
            ("revolute", "ground", (0, 0), "crank", (-0.25, 0)), ("revolute", "crank", (0.25, 0), "rod", (-0.75, 0)),
            ("revolute", "rod", (0.75, 0), "piston", (0, 0)),
            ("prismatic", "ground", (0.0, 0.0), "piston", (0, 0), (1.0, 0.0))]),
    }
    for (hand, q0), spec in cases.values():
        mech = placed(hand, q0, spec)
        model, q, loops = mech.build()
        assert loops == [mech.joints[2]["name"]]
        qd_hand = rm.loops.project(hand, q0, np.array([1.3, 0.0, 0.0]))[1]
        qd = rm.loops.project(model, q, np.array([1.3, 0.0, 0.0]))[1]  # the same crank rate: the same motion
        expected = body_accelerations(hand, q0, qd_hand, hand.body_names)
        got = body_accelerations(model, q, qd, hand.body_names)
        assert np.abs(got - expected).max() < 1e-10 * np.abs(expected).max()


def test_mechanism_two_squares_with_its_spring_and_a_cut_joint():
    hand, q0, qd0 = rm.models.two_squares()
    q0 = np.array([0.3, -0.5])
    mech = placed(hand, q0, [("revolute", "ground", (0, 0), "body1", (-1, -1)),
                             ("revolute", "body1", (1, 1), "body2", (-1, 1))])
    mech.add_spring_damper("body2", (1, -1), "ground", (4, 0), 10.0, 1.0)
    model, q, loops = mech.build()
    assert loops == [] and np.abs(q).max() < 1e-12  # poses reproduced with zero joint angles (offsets)
    expected = body_accelerations(hand, q0, np.zeros(2), hand.body_names)
    np.testing.assert_allclose(body_accelerations(model, q, np.zeros(2), hand.body_names), expected, atol=1e-10)
    # cutting the second hinge: body2 floats on a planar joint and the hinge becomes a loop, same physics
    cut, q_cut, loops = mech.build(cut=["joint1"])
    assert loops == ["joint1"] and cut.nq == 4
    np.testing.assert_allclose(body_accelerations(cut, q_cut, np.zeros(4), hand.body_names), expected, atol=1e-10)


def test_mechanism_placement_errors_name_the_joint():
    hand, q0 = rm.models.four_bar()
    poses, _ = rm.forward_kinematics(hand, q0)
    mech = rm.Mechanism()
    for i, name in enumerate(hand.body_names):
        mech.add_body(name, 1.0, 0.1, poses[i] + (0.0, 0.01 if name == "rocker" else 0.0, 0.0))
    mech.add_joint("revolute", "ground", (0, 0), "crank", (-0.5, 0), name="A")
    mech.add_joint("revolute", "crank", (0.5, 0), "coupler", (-1.0, 0), name="B")
    mech.add_joint("revolute", "coupler", (1.0, 0), "rocker", (0.75, 0), name="C")
    mech.add_joint("revolute", "ground", (3.0, 0), "rocker", (-0.75, 0), name="D")
    with pytest.raises(rm.ModelError, match="joint 'D'.*0.01"):
        mech.build()
    model, q, _ = mech.build(tol=0.02)  # within the tolerance: assembled
    assert np.abs(rm.loops.constraints(model, q)[0]).max() < 1e-12
    with pytest.raises(rm.ModelError, match="unknown body 'nope'"):
        mech.add_joint("revolute", "nope", (0, 0), "crank", (0, 0))


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_model_files_load_run_and_round_trip(path, tmp_path):
    spec = rm.io.load(path)
    model = spec.model
    copy = tmp_path / "copy.toml"
    rm.io.save(model, copy, spec.q0, spec.qd0)
    again = rm.io.load(copy)
    for attr in ("body_int", "body_real", "elem_int", "elem_real", "loop_int", "loop_real", "contact_int",
                 "contact_real", "gravity"):
        np.testing.assert_array_equal(getattr(again.model, attr), getattr(model, attr), err_msg=attr)
    assert again.model.body_names == model.body_names and again.model.loop_names == model.loop_names
    assert again.model.contact_names == model.contact_names
    np.testing.assert_array_equal(again.q0, spec.q0)
    kind = spec.analysis["type"]
    if kind == "dynamics":
        res = rm.simulate(model, spec.q0, spec.qd0, 0.01, drivers=spec.drivers or None)
        assert np.all(np.isfinite(res.q))
    elif kind == "kinematics":
        kin = rm.kinematic_analysis(model, spec.drivers, np.linspace(0, 0.01, 3), spec.q0)
        assert np.all(np.isfinite(kin.driving_forces))


def test_cli_runs_info_plot_and_animate(tmp_path):
    source = ROOT / "examples" / "models" / "four_bar.toml"
    text = source.read_text().replace("t_end = 5.0", "t_end = 0.3").replace("samples = 251", "samples = 16")
    model_file = tmp_path / "fb.toml"
    model_file.write_text(text)

    def rmbd(*args):
        return subprocess.run([sys.executable, "-m", "recursive_mbd", *args], capture_output=True, text=True,
                              cwd=tmp_path, timeout=600, check=False)

    run = rmbd("run", "fb.toml", "--csv", "fb.csv")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "fb.npz").exists() and (tmp_path / "fb.csv").exists()
    with np.load(tmp_path / "fb.npz") as data:
        assert data["q"].shape == (16, 3) and data["drift"].max() < 1e-10
    info = rmbd("info", "fb.toml")
    assert info.returncode == 0 and "3 bodies" in info.stdout and "loop C" in info.stdout
    assert "3 joint coordinates, 1 loop (2 equations), 1 degree of freedom" in info.stdout  # singular where one
    plot = rmbd("plot", "fb.npz", "-o", "fb.png")
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "fb.png").stat().st_size > 1000
    anim = rmbd("animate", "fb.toml", "fb.npz", "-o", "fb.gif", "--frames", "4")
    assert anim.returncode == 0, anim.stderr
    assert (tmp_path / "fb.gif").read_bytes()[:3] == b"GIF"
    bad = rmbd("run", "missing.toml")
    assert bad.returncode == 1 and "missing.toml" in bad.stderr and "Traceback" not in bad.stderr


GOOD_TREE = f"""
[model]
name = "pendulum"
gravity = [0.0, -9.81]

{ARM_AND_SLIDER_TABLES}
[initial]
q = [0.3, 0.1]

[analysis]
type = "dynamics"
t_end = 0.01
"""

# (replace this, with that, expected words in the message)
MALFORMED = [
    ('name = "arm"', 'name = 3', "body[0].name"),
    ("mass = 1.0", "mass = -1.0", "body[0]"),
    ("mass = 1.0", 'mass = "heavy"', "body[0].mass"),
    ("inertia = 0.1", "inertia = -0.1", "inertia"),
    ('joint = "revolute"', 'joint = "spherical"', "body[0].joint"),
    ('parent = "arm"', 'parent = "nobody"', "body[1]"),
    ("child_point = [0.0, 0.5]", "child_point = [0.0]", "body[0].child_point"),
    ("child_point = [0.0, 0.5]", 'child_point = ["a", "b"]', "child_point"),
    ("axis = [0.0, -1.0]", "axis = [0.0, 0.0]", "axis must be non-zero"),
    ("inertia = 0.01", "inertia = 0.01\nmas = 2", "unknown key 'mas' (did you mean 'mass'?); expected some of"),
    ("stiffness = 5.0", "stiffness = -5.0", "spring_damper[0]"),
    ("stiffness = 5.0", "", "spring_damper[0].stiffness"),
    ('body_b = "ground"', 'body_b = "moon"', "spring_damper[0]"),
    ("point_a = [0.0, 0.0]", "point_a = 7", "spring_damper[0].point_a"),
    ("gravity = [0.0, -9.81]", "gravity = [0.0, -9.81, 1.0]", "model.gravity"),
    ("gravity = [0.0, -9.81]", 'gravity = "down"', "model.gravity"),
    ('name = "pendulum"', 'name = "pendulum"\nform = "blob"', "model.form"),
    ("q = [0.3, 0.1]", "q = [0.3]", "initial.q"),
    ("q = [0.3, 0.1]", "q = [0.3, nan]", "initial.q"),
    ('type = "dynamics"', 'type = "dance"', "analysis.type"),
    ("t_end = 0.01", "t_end = -1.0", "analysis.t_end"),
    ("t_end = 0.01", "t_end = 0.01\nsamples = 0", "analysis.samples"),
    ("t_end = 0.01", "t_end = 0.01\nwobble = 1", "unknown key 'wobble'"),
    ("[initial]", "[initialise]", "unknown key 'initialise'"),
    ("[[spring_damper]]", "[[spring]]", "unknown key 'spring' (did you mean 'spring_damper'?)"),
    ('name = "arm"', 'name = "arm"\n[oops', "TOML syntax error"),
    ("[[body]]\nname = \"slider\"", "[[body]]\nname = \"arm\"", "duplicate body name"),
    ("[analysis]", "[[driver]]\nbody = \"arm\"\nkind = \"polynomial\"\ncoefficients = []\n\n[analysis]",
     "driver[0].coefficients"),
    ("[analysis]", "[[driver]]\nbody = \"ghost\"\nkind = \"polynomial\"\ncoefficients = [1.0]\n\n[analysis]",
     "driver[0].body"),
    ("[analysis]", "[[driver]]\nbody = \"arm\"\nkind = \"harmonic\"\namplitude = 1.0\n\n[analysis]",
     "driver[0].frequency"),
    ("[analysis]", "[[loop]]\nkind = \"distance\"\nbody_a = \"slider\"\npoint_a = [0.0, 0.0]\nlength = -1.0\n\n"
     "[analysis]", "loop[0]"),
    ("[analysis]", "[[loop]]\nkind = \"revolute\"\nbody_a = \"nobody\"\npoint_a = [0.0, 0.0]\n\n[analysis]", "loop[0]"),
    ("[analysis]", "[[joint]]\nkind = \"revolute\"\n\n[analysis]", "joint[0]"),
    ("[analysis]", "[[torque]]\nbody = \"arm\"\ntorque = \"big\"\n\n[analysis]", "torque[0].torque"),
    ("[analysis]", "[[force]]\nbody = \"arm\"\nforce = [1.0, 2.0]\nframe = \"sky\"\n\n[analysis]", "force[0].frame"),
]


def run_cli(text, tmp_path, name="model.toml"):
    path = tmp_path / name
    path.write_text(text)
    err = std_io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["run", str(path), "-o", str(tmp_path / "out.npz")], out=std_io.StringIO())
    return code, err.getvalue()


def test_the_good_file_runs(tmp_path):
    code, err = run_cli(GOOD_TREE, tmp_path)
    assert code == 0, err


@pytest.mark.parametrize(("old", "new", "expected"), MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_files_give_exit_code_1_and_name_the_place(old, new, expected, tmp_path):
    assert old in GOOD_TREE
    code, err = run_cli(GOOD_TREE.replace(old, new, 1), tmp_path)
    assert code == 1, err
    assert err.startswith("rmbd: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert "model.toml" in err and expected in err, err


def test_mechanism_file_errors(tmp_path):
    text = (ROOT / "examples" / "models" / "four_bar.toml").read_text()
    code, err = run_cli(text.replace("point_b = [0.75, 0.0]", "point_b = [0.95, 0.0]"), tmp_path)
    assert code == 1 and "joint 'C'" in err and "open by" in err
    code, err = run_cli(text.replace('body_a = "coupler"', 'body_a = "wheel"'), tmp_path)
    assert code == 1 and "joint[2]" in err and "unknown body 'wheel'; known bodies: 'ground', 'crank'" in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzzed_files_never_crash(tmp_path, data):
    """Random edits of a valid file (deleted lines, replaced values, inserted junk) give exit code 0 or 1."""
    text = fuzzed(data, GOOD_TREE, ["-1", "0", "1e308", "nan", "inf", '"x"', "[]", "[1, 2, 3]", "true", '"ground"',
                                    '"revolute"', "[0.0, 0.0]", "{}"])
    code, err = run_cli(text, tmp_path)
    assert code in (0, 1), err
    assert "Traceback" not in err


def test_seed002_deck_builds_the_double_pendulum_it_describes():
    spec = rm.io.load(ROOT / "examples" / "models" / "kine2d_double_pendulum.deck")
    model = spec.model
    assert model.name == "DOUBLE PENDULUM" and model.nq == 2 and spec.analysis["type"] == "dynamics"
    # the same mechanism written by hand: body 1 pinned at the origin at 45 degrees, body 2 pinned to its far end,
    # body 2 loaded by its weight (GFOR 20), dampers of 1 N m s/rad in both pins, no gravity (the deck's GFOR 10
    # is commented out)
    hand = rm.Model(gravity=(0.0, 0.0))
    hand.add_body("ground", "revolute", (0, 0), (0, 1), mass=3.0, inertia=2.6667, angle=np.pi / 4, name="1")
    hand.add_body("1", "revolute", (0, -1), (0, 1), mass=2.0, inertia=5.3334, angle=-np.pi / 4, name="2")
    hand.add_force("2", (0, 0), (0.0, -19.6))
    hand.add_joint_spring_damper("1", 0.0, damping=1.0)
    hand.add_joint_spring_damper("2", 0.0, damping=1.0)
    qd = np.array([0.4, -0.7])
    poses, _ = rm.forward_kinematics(model, spec.q0)
    np.testing.assert_allclose(poses[1:], rm.forward_kinematics(hand, np.zeros(2))[0], atol=1e-12)
    np.testing.assert_allclose(rm.forward_dynamics(model, spec.q0, qd), rm.forward_dynamics(hand, np.zeros(2), qd),
                               rtol=1e-10)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("PROP, 2, 2.0, 5.3334", "PROP, 2, 2.0", "line 30: PROP needs 3 fields"),
    ("RCON, P, 12, 22", "RCON, P, 12, 77", "line 44: RCON: unknown point '77'; known points: '11', '12', '22', "
                                           "'23', '91'"),
    ("RCON, P, 12, 22", "RCON, P, 12, 221", "line 44: RCON: unknown point '221' (did you mean '22'?)"),
    ("BODY, 2, 1.4142, -2.4142, 0.0", "BODY, 2, 1.4142, -2.4142, north", "line 14: BODY 2: expected a number"),
    ("FCON, DR, 12, 22, 1", "FCON, SP, 12, 22, 1", "line 48: FCON 'SP'"),
    ("ENDD", "MOVE, 1\nENDD", "line 54: unknown command 'MOVE'"),
    ("PROP, 99, 1.0, 1.0000", "", "line 16: BODY 99: no PROP"),
])
def test_deck_errors_name_the_line(old, new, expected, tmp_path):
    text = (ROOT / "examples" / "models" / "kine2d_double_pendulum.deck").read_text()
    assert old in text
    code, err = run_cli(text.replace(old, new), tmp_path, "bad.deck")
    assert code == 1 and expected in err, err


def test_rmbd_run_reports_the_driving_forces_of_a_planar_dynamics_run(tmp_path):
    """A [[driver]] entry in a dynamics file: the .npz holds the driving torque at the samples (rm.simulate's) and
    the driven coordinate, and the run's line names the driver's largest torque with its unit."""
    text = (MODELS / "double_pendulum.toml").read_text()
    path = tmp_path / "driven.toml"
    path.write_text(text[:text.index("[analysis]")] + '[[driver]]\nbody = "link1"\nkind = "harmonic"\namplitude = '
                    '0.3\nfrequency = 2.0\n\n[analysis]\ntype = "dynamics"\nt_end = 1.0\nsamples = 11\n')
    out = std_io.StringIO()
    assert cli.main(["run", str(path), "-o", str(tmp_path / "driven.npz")], out=out) == 0
    spec = rm.io.load(path)
    expected = rm.simulate(spec.model, spec.q0, spec.qd0, 1.0, t_eval=np.linspace(0.0, 1.0, 11),
                           drivers=spec.drivers)
    with np.load(tmp_path / "driven.npz") as data:
        np.testing.assert_array_equal(data["driving_forces"], expected.driving_forces()[:, [0]])
        assert list(data["driven"]) == [0]
        peak = np.abs(data["driving_forces"]).max()
    assert f"driving force max |.|: link1 torque {peak:.6g} N m;" in out.getvalue(), out.getvalue()


def test_rmbd_run_prints_every_quantity_with_its_unit(tmp_path):
    # kinematics: the driver named, its largest force with its unit (the crank's revolute joint: a torque [N m])
    out = std_io.StringIO()
    assert cli.main(["run", str(ROOT / "examples" / "models" / "slider_crank.toml"), "-o", str(tmp_path / "sc.npz")],
                    out=out) == 0
    with np.load(tmp_path / "sc.npz") as data:
        peak = np.abs(data["driving_forces"]).max()
    assert f"101 times up to 0.1 s; driving force max |.|: crank torque {peak:.6g} N m\n" in out.getvalue()
    # statics: each coordinate named, with its unit
    text = (ROOT / "examples" / "models" / "double_pendulum.toml").read_text()
    path = tmp_path / "hanging.toml"
    path.write_text(text[:text.index("[analysis]")] + '[analysis]\ntype = "statics"\n')
    out = std_io.StringIO()
    assert cli.main(["run", str(path), "-o", str(tmp_path / "hanging.npz")], out=out) == 0
    with np.load(tmp_path / "hanging.npz") as data:
        q = data["q"]
    assert (f"stable):\n  link1 angle = {q[0]:.6g} rad\n  link2 angle rel. link1 = {q[1]:.6g} rad\n"
            in out.getvalue()), out.getvalue()
