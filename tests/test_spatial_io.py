"""Spatial model files (``[model] dimension = 3``): reading, writing back unchanged, errors naming the place, and
the command line on them."""

import contextlib
import io as std_io
import warnings
from pathlib import Path

import numpy as np
import pytest
from _helpers import fuzzed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recursive_mbd as rm
from recursive_mbd import cli

ROOT = Path(__file__).resolve().parents[1]
SPATIAL = ROOT / "examples" / "models" / "spatial"


def every_joint_model():
    """A Model3D with every joint type, every inertia form, quaternion and matrix rotations, random axes."""
    rng = np.random.default_rng(18)
    model = rm.Model3D(gravity=(0.3, -1.0, -9.81), name='every "joint" \u00e9')
    tensor = np.array([[2.0, 0.1, -0.2], [0.1, 1.5, 0.05], [-0.2, 0.05, 1.8]])
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    angle = 0.7
    matrix = np.array([[np.cos(angle), -np.sin(angle), 0.0], [np.sin(angle), np.cos(angle), 0.0], [0, 0, 1.0]])
    parent = "ground"
    for i, (joint, inertia, rotation) in enumerate((
            ("revolute", 0.2, None), ("prismatic", (1.0, 2.0, 2.5, 0.1, 0.0, -0.1), quat),
            ("cylindrical", tensor, matrix), ("universal", 0.3, None), ("spherical", tensor, quat),
            ("planar", 0.1, matrix), ("free", (1.0, 1.0, 1.5, 0.0, 0.0, 0.0), None), ("fixed", 0.0, None))):
        axis = None
        if joint in ("revolute", "prismatic", "cylindrical"):
            axis = rng.normal(size=3)
        elif joint == "universal":
            axis = (rng.normal(size=3), rng.normal(size=3))
        parent = model.add_body(parent=parent, joint=joint, parent_point=rng.normal(size=3),
                                child_point=rng.normal(size=3), mass=1.0 + i, inertia=inertia,
                                com=rng.normal(size=3), rotation=rotation, axis=axis, name=f"b{i}-{joint}")
    model.compile()
    q0 = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
    return model, q0, rng.normal(size=model.nv)


def test_round_trip_keeps_every_number(tmp_path):
    model, q0, v0 = every_joint_model()
    path = tmp_path / "every.toml"
    rm.io.save(model, path, q0, v0, analysis={"type": "statics"})
    spec = rm.io.load(path)
    again = spec.model
    assert isinstance(again, rm.Model3D) and again.name == model.name and again.names == model.names
    assert again.joint_types == model.joint_types and again.nq == model.nq and again.nv == model.nv
    np.testing.assert_array_equal(again.parents, model.parents)
    np.testing.assert_array_equal(again.gravity, model.gravity)
    np.testing.assert_array_equal(again.body_int, model.body_int)
    # the axes are normalised again on reading (an ulp at most); every other number comes back bit for bit
    np.testing.assert_allclose(again.body_real, model.body_real, rtol=0, atol=4e-16)
    for key in ("parent_point", "child_point", "mass", "inertia", "com", "rotation"):  # what add_body stored
        np.testing.assert_array_equal(again._table.column(key), model._table.column(key), err_msg=key)
    np.testing.assert_array_equal(spec.q0, q0)
    np.testing.assert_array_equal(spec.v0, v0)
    assert spec.analysis == {"type": "statics"} and spec.drivers == {}
    twice = rm.io.loads(rm.io.dumps(again, spec.q0, spec.v0, spec.analysis))
    np.testing.assert_allclose(twice.model.body_real, model.body_real, rtol=0, atol=4e-16)


def test_example_files_build_the_reference_models():
    top = rm.io.load(SPATIAL / "heavy_top.toml")
    reference = rm.models.heavy_top()
    reference.compile()
    np.testing.assert_array_equal(top.model.body_real, reference.body_real)
    assert top.model.names == ["top"] and top.model.nq == 4 and top.model.nv == 3
    np.testing.assert_allclose(np.linalg.norm(top.q0), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(top.v0, [0.0, 0.0, 150.0])
    assert "body[0].rotation = identity" in top.defaults
    governor = rm.io.load(SPATIAL / "governor.toml")
    reference = rm.models.centrifugal_governor(closed=True).model
    reference.compile()
    for key in ("body_real", "body_int", "loop_int", "loop_real"):  # the links are its loops
        np.testing.assert_array_equal(getattr(governor.model, key), getattr(reference, key), err_msg=key)
    assert governor.model.loop_names == ("link1", "link2")


def test_defaults_of_a_minimal_file():
    spec = rm.io.loads('[model]\ndimension = 3\n[[body]]\nparent = "ground"\njoint = "free"\nmass = 2.0\n'
                       "inertia = 0.5\n")
    model = spec.model
    assert model.nq == 7 and model.nv == 6 and model.names == ["body0"]
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])
    np.testing.assert_array_equal(spec.q0, [0, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(spec.v0, np.zeros(6))
    assert any(d.startswith("initial.q = neutral") for d in spec.defaults)


GOOD = """[model]
dimension = 3
name = "arm"

[[body]]
name = "base"
parent = "ground"
joint = "revolute"
axis = [0.0, 0.0, 1.0]
mass = 1.0
inertia = [0.1, 0.1, 0.05, 0.0, 0.0, 0.0]

[[body]]
name = "ball"
parent = "base"
joint = "spherical"
parent_point = [0.0, 0.0, 0.5]
mass = 2.0
inertia = 0.01
com = [0.0, 0.0, -0.3]

[initial]
q = [0.1, 1.0, 0.0, 0.0, 0.0]
v = [0.0, 1.0, 2.0, 3.0]
"""



def _loop(kind="distance", a="ball", extra="length = 0.5"):
    """A [[loop]] table from body ``a`` to the ground, then the [initial] table it was inserted before."""
    return (f'[[loop]]\nkind = "{kind}"\nbody_a = "{a}"\npoint_a = [0.0, 0.0, -0.3]\nbody_b = "ground"\n'
            f"point_b = [0.0, 0.3, 0.2]\n{extra}\n\n[initial]")


# (replace this, with that, expected words in the message)
MALFORMED = [
    ("dimension = 3", "dimension = 4", "model.dimension"),
    ("dimension = 3", "dimension = true", "model.dimension"),
    ("dimension = 3", "dimension = 3.0", "model.dimension"),
    ('name = "arm"', 'name = "arm"\ngravity = [0.0, -9.81]', "model.gravity"),
    ('name = "arm"', 'name = "arm"\nform = "chain"', "model.form"),
    ("mass = 1.0", "", "body[0].mass: missing"),
    ("mass = 2.0", "mass = -2.0", "body[1]"),
    ('joint = "spherical"', 'joint = "ball"', "body[1].joint"),
    ("axis = [0.0, 0.0, 1.0]", "", "body[0].axis: missing"),
    ("axis = [0.0, 0.0, 1.0]", "axis = [0.0, 0.0, 0.0]", "body[0]"),
    ("axis = [0.0, 0.0, 1.0]", "axis = [0.0, 1.0]", "body[0].axis"),
    ("inertia = 0.01", "inertia = 0.01\naxis = [1.0, 0.0, 0.0]", "body[1].axis: a spherical joint has no axis"),
    ("inertia = [0.1, 0.1, 0.05, 0.0, 0.0, 0.0]", "inertia = [0.1, 0.1, 0.05]", "body[0].inertia"),
    ("inertia = [0.1, 0.1, 0.05, 0.0, 0.0, 0.0]", "inertia = [0.1, 0.1, 0.5, 0.0, 0.0, 0.0]", "triangle"),
    ("inertia = [0.1, 0.1, 0.05, 0.0, 0.0, 0.0]", "inertia = [[0.1, 0.0, 0.0], [0.0, 0.1, 0.0]]", "body[0].inertia"),
    ("inertia = [0.1, 0.1, 0.05, 0.0, 0.0, 0.0]", "inertia = [[0.1, 0.2, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]]",
     "symmetric"),
    ("inertia = 0.01", "inertia = 0.01\nrotation = [1.0, 1.0, 0.0, 0.0]", "body[1]"),
    ("inertia = 0.01", "inertia = 0.01\nrotation = [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]", "body[1].rotation"),
    ("com = [0.0, 0.0, -0.3]", "com = [0.0, -0.3]", "body[1].com"),
    ('parent = "base"', 'parent = "nobody"', "body[1]"),
    ("q = [0.1, 1.0, 0.0, 0.0, 0.0]", "q = [0.1, 1.0, 0.0, 0.0]", "initial.q"),
    ("q = [0.1, 1.0, 0.0, 0.0, 0.0]", "q = [0.1, 1.1, 0.0, 0.0, 0.0]", "initial.q[1:5]"),
    ("q = [0.1, 1.0, 0.0, 0.0, 0.0]", "q = [0.1, 0.0, 0.0, 0.0, 0.0]", "'ball'"),
    ("v = [0.0, 1.0, 2.0, 3.0]", "v = [0.0, 1.0, 2.0, 3.0, 4.0]", "initial.v"),
    ("v = [0.0, 1.0, 2.0, 3.0]", "qd = [0.0, 1.0, 2.0, 3.0]", "initial.qd"),
    ("[initial]", '[[loop]]\nkind = "revolute"\n\n[initial]', "loop[0].body_a: missing"),
    ("[initial]", _loop(kind="hinge"), "loop[0].kind"),
    ("[initial]", _loop(extra=""), "loop[0].length: missing"),
    ("[initial]", _loop(kind="spherical"), "loop[0].length: a spherical loop has no length"),
    ("[initial]", _loop(kind="revolute", extra=""), "loop[0].axis: missing"),
    ("[initial]", _loop(kind="revolute", extra="axis = [0.0, 0.0, 1.0]\naxis_b = [0.0, 0.0]"), "loop[0].axis_b"),
    ("[initial]", _loop(extra="length = -0.5"), "loop[0]: loop 'loop0': length must be > 0"),
    ("[initial]", _loop(a="nobody"), "unknown body 'nobody'"),
    ("[initial]", _loop(extra="length = 0.5\naxis = [0, 0, 1.0]"), "loop[0].axis: a distance loop has no axis"),
    ("[initial]", "[[torque]]\nbody = \"base\"\ntorque = 1.0\n\n[initial]",
     "torque[0].torque: expected an array of 3 numbers"),
    ("[initial]", "[[driver]]\nbody = \"base\"\n\n[initial]", "driver[0]"),
    ("[initial]", "[chain]\nn = 3\n\n[initial]", "chain"),
    ('name = "arm"', 'name = "arm"\ncut = ["x"]', "model.cut"),
    ("[initial]", "[analysis]\ntype = \"dance\"\n\n[initial]", "analysis.type"),
]


def run_cli(args, tmp_path):
    err, out = std_io.StringIO(), std_io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(args, out=out)
    return code, out.getvalue(), err.getvalue()


def test_the_good_file_loads():
    spec = rm.io.loads(GOOD, "model.toml")
    assert spec.model.nq == 5 and spec.model.nv == 4 and spec.model.joint_types == ["revolute", "spherical"]


@pytest.mark.parametrize(("old", "new", "expected"), MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_files_name_the_place(old, new, expected, tmp_path):
    assert old in GOOD
    path = tmp_path / "model.toml"
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(rm.io.FileFormatError) as info:
        rm.io.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and expected in message, message
    code, _, err = run_cli(["info", str(path)], tmp_path)  # the command line: one line, exit code 1
    assert code == 1 and err.startswith("rmbd: error: ") and err.count("\n") == 1 and expected in err, err


def test_rmbd_info_describes_a_spatial_file(tmp_path):
    code, out, err = run_cli(["info", str(SPATIAL / "governor.toml")], tmp_path)
    assert code == 0, err
    assert "4 bodies" in out and "nq = 4" in out and "nv = 4" in out and "spatial" in out
    assert "1 prismatic, 3 revolute" in out and "body sleeve: prismatic joint to spindle" in out
    code, out, err = run_cli(["info", str(SPATIAL / "heavy_top.toml")], tmp_path)
    assert code == 0, err
    assert "spatial, 1 body, nq = 4 configuration coordinates, nv = 3 velocities" in out and "1 spherical" in out


def test_rmbd_run_gives_the_modes_a_spatial_models_loops_allow(tmp_path):
    text = (SPATIAL / "governor.toml").read_text()
    source = tmp_path / "governor.toml"
    source.write_text(text[:text.index("[analysis]")] + '[analysis]\ntype = "modes"\ncount = 5\n')
    code, out, err = run_cli(["run", str(source), "-o", str(tmp_path / "modes.npz")], tmp_path)
    assert code == 0, err
    spec = rm.io.load(source)
    omega, shapes = rm.modes(spec.model, rm.static_equilibrium(spec.model, spec.q0).q)
    assert omega.size == 3  # asked for five: at rest both links hang vertical and hold the sleeve alone (rank 1)
    with np.load(tmp_path / "modes.npz") as data:
        np.testing.assert_array_equal(data["omega"], omega)
        np.testing.assert_array_equal(data["shapes"], shapes)


def test_rmbd_run_and_plot_the_modes_of_a_spatial_file(tmp_path):
    source = SPATIAL / "hanging_rods.toml"
    result = tmp_path / "rods.npz"
    code, out, err = run_cli(["run", str(source), "-o", str(result)], tmp_path)
    assert code == 0, err
    # the turn about the vertical has zero stiffness: a neutral mode, named, not an instability
    assert ("static equilibrium (newton, 3 iterations, stable; 1 neutral / zero-frequency mode (no load resists "
            "it): rod1 omega z):\n") in out, out
    # the zero mode's omega is round-off, printed as 0 whatever its digits
    assert ("natural frequencies [rad/s]: 0 (zero: a neutral / zero-frequency mode, rod1 omega z), 3.79584, 3.79584, "
            "10.2992\n") in out, out
    spec = rm.io.load(source)
    with np.load(result) as data:
        eq = rm.static_equilibrium(spec.model, spec.q0)
        np.testing.assert_array_equal(data["q"], eq.q)
        omega, _ = rm.modes(spec.model, eq.q, 4)
        np.testing.assert_array_equal(data["omega"], omega)
        assert str(data["kind"]) == "modes" and list(data["body_names"]) == ["rod1", "rod2"]
    # hanging straight down, the rods swing in both planes at equal frequencies
    np.testing.assert_allclose(rm.forward_kinematics(spec.model, eq.q)[0][:, 2, 2], 1.0, atol=1e-12)
    assert eq.stable and eq.neutral.shape == (spec.model.nv, 1) and np.argmax(np.abs(eq.neutral[:, 0])) == 2
    assert repr(eq) == (f"Equilibrium3D(stable, 1 neutral mode, 3 Newton iterations, max |residual| = "
                        f"{np.abs(eq.residual).max():.2e} N or N m)")
    # the judgement still fails an unstable equilibrium: the same rods straight up (gravity reversed)
    upside = rm.io.loads(source.read_text().replace('name = "two hanging rods"', 'name = "two hanging rods"\n'
                                                    "gravity = [0.0, 0.0, 9.81]"), "upside.toml").model
    top = rm.static_equilibrium(upside, upside.neutral())
    assert not top.stable and top.eigenvalues[0] < 0.0 and top.neutral.shape == (upside.nv, 1)
    assert omega[0] < 1e-5 * omega[1] and omega[1] == pytest.approx(omega[2], rel=1e-7)
    picture = tmp_path / "rods.png"
    code, out, err = run_cli(["plot", str(result), "-o", str(picture)], tmp_path)
    assert code == 0, err
    assert picture.stat().st_size > 10000


def model_part(path):
    """The text of an example file without its [analysis] table (the last one in every example)."""
    text = path.read_text()
    return text[:text.index("[analysis]")]


def test_rmbd_run_refuses_the_kinematics_of_a_spatial_file_without_drivers(tmp_path):
    path = tmp_path / "top.toml"
    path.write_text(model_part(SPATIAL / "heavy_top.toml") + '[analysis]\ntype = "kinematics"\nt_end = 1.0\n')
    code, out, err = run_cli(["run", str(path), "-o", str(tmp_path / "top.npz")], tmp_path)
    assert code == 1 and out == ""
    assert "top.toml" in err and "kinematics" in err and "needs drivers" in err and "[[driver]]" in err, err
    assert not (tmp_path / "top.npz").exists()


def test_rmbd_run_plot_and_animate_the_dynamics_of_a_spatial_file_with_loops(tmp_path):
    source = SPATIAL / "governor.toml"
    result, table = tmp_path / "governor.npz", tmp_path / "governor.csv"
    code, out, err = run_cli(["run", str(source), "-o", str(result), "--csv", str(table)], tmp_path)
    assert code == 0, err
    spec = rm.io.load(source)
    times = np.linspace(0.0, 2.0, 201)
    expected = rm.simulate(spec.model, spec.q0, spec.v0, 2.0, rtol=1e-10, atol=1e-12, t_eval=times)
    with np.load(result) as data:
        assert str(data["kind"]) == "dynamics" and int(data["dimension"]) == 3
        assert list(data["loop_names"]) == ["link1", "link2"]
        np.testing.assert_array_equal(data["t"], times)
        np.testing.assert_array_equal(data["q"], expected.q)
        np.testing.assert_array_equal(data["qd"], expected.qd)  # v: nv columns
        np.testing.assert_array_equal(data["drift"], expected.constraint_drift)
        assert data["drift"].max() < 1e-11
        np.testing.assert_allclose(data["energy"], data["energy"][0], rtol=1e-9)
    header = table.read_text().splitlines()[0]
    assert header.startswith("t [s],spindle angle [rad],arm1 angle [rad]") and "sleeve speed [m/s]" in header
    picture = tmp_path / "governor.png"
    code, _, err = run_cli(["plot", str(result), "-o", str(picture)], tmp_path)
    assert code == 0, err
    assert picture.stat().st_size > 10000
    movie = tmp_path / "governor.gif"
    code, _, err = run_cli(["animate", str(source), str(result), "-o", str(movie), "--frames", "4"], tmp_path)
    assert code == 0, err
    assert movie.read_bytes()[:6] in (b"GIF87a", b"GIF89a")


def test_rmbd_run_simulates_a_spatial_file_with_quaternions(tmp_path):
    path = tmp_path / "top.toml"
    path.write_text(model_part(SPATIAL / "heavy_top.toml")
                    + '[analysis]\ntype = "dynamics"\nt_end = 0.2\nsamples = 11\n')
    code, _, err = run_cli(["run", str(path), "-o", str(tmp_path / "top.npz"), "--csv", str(tmp_path / "top.csv")],
                           tmp_path)
    assert code == 0, err
    with np.load(tmp_path / "top.npz") as data:
        assert data["q"].shape == (11, 4) and data["qd"].shape == (11, 3) and "drift" not in data
        np.testing.assert_allclose(np.linalg.norm(data["q"], axis=1), 1.0, rtol=0, atol=1e-15)
    assert (tmp_path / "top.csv").read_text().splitlines()[0] == (
        "t [s],top quaternion w [-],top quaternion x [-],top quaternion y [-],top quaternion z [-],"
        "top omega x [rad/s],top omega y [rad/s],top omega z [rad/s]")


@pytest.mark.parametrize("name", sorted(path.name for path in SPATIAL.glob("*.toml")))
def test_rmbd_run_runs_every_spatial_example(name, tmp_path):
    """Every file in examples/models/spatial names an analysis that `rmbd run` runs as it stands."""
    spec = rm.io.load(SPATIAL / name)
    assert spec.analysis, name
    result = tmp_path / "result.npz"
    code, out, err = run_cli(["run", str(SPATIAL / name), "-o", str(result)], tmp_path)
    assert code == 0, err
    assert f"wrote {result.resolve()}" in out
    with np.load(result) as data:
        assert str(data["kind"]) == spec.analysis["type"] and int(data["dimension"]) == 3


def test_rmbd_run_simulates_the_heavy_top_file_as_its_comment_says(tmp_path):
    source = SPATIAL / "heavy_top.toml"
    result, table = tmp_path / "top.npz", tmp_path / "top.csv"
    code, _, err = run_cli(["run", str(source), "-o", str(result), "--csv", str(table)], tmp_path)
    assert code == 0, err
    spec = rm.io.load(source)
    with np.load(result) as data:
        t, q, v, energy = data["t"], data["q"], data["qd"], data["energy"]
    np.testing.assert_array_equal(t, np.linspace(0.0, 4.0, 401))
    np.testing.assert_allclose(q[0], spec.q0, rtol=0, atol=1e-15)  # normalised to the last bit
    np.testing.assert_allclose(energy, energy[0], rtol=0, atol=1e-9 * abs(energy[0]))
    np.testing.assert_allclose(v[:, 2], 150.0, rtol=1e-9)  # a symmetric top keeps its spin about its axis
    rotations = np.array([rm.forward_kinematics(spec.model, row)[0][0] for row in q])
    axis = rotations[:, :, 2]  # the symmetry axis in ground axes
    tilt = np.arccos(axis[:, 2])
    assert tilt.min() == pytest.approx(0.300, abs=5e-4) and tilt.max() == pytest.approx(0.321, abs=5e-4)
    turned = np.unwrap(np.arctan2(axis[:, 1], axis[:, 0]))
    assert (turned[-1] - turned[0]) / 4.0 == pytest.approx(1.70, abs=5e-3) and turned[-1] - turned[0] > 2 * np.pi
    assert rm.models.heavy_top_precession(150.0, 0.3)[0] == pytest.approx(1.69, abs=5e-3)
    rows = np.loadtxt(table, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(rows, np.hstack((t[:, None], q, v)))


def test_rmbd_run_writes_the_csv_of_a_spatial_kinematic_analysis(tmp_path):
    result, table = tmp_path / "rssr.npz", tmp_path / "rssr.csv"
    code, out, err = run_cli(["run", str(SPATIAL / "rssr.toml"), "-o", str(result), "--csv", str(table)], tmp_path)
    assert code == 0, err
    assert f"wrote {table.resolve()}" in out
    lines = table.read_text().splitlines()
    assert lines[0] == "t [s],crank angle [rad],rocker angle [rad],crank rate [rad/s],rocker rate [rad/s]"
    with np.load(result) as data:
        np.testing.assert_array_equal(np.loadtxt(lines[1:], delimiter=","),
                                      np.hstack((data["t"][:, None], data["q"], data["v"])))


def test_rmbd_run_refuses_csv_for_an_analysis_without_a_time_history(tmp_path):
    result, table = tmp_path / "rods.npz", tmp_path / "rods.csv"
    code, out, err = run_cli(["run", str(SPATIAL / "hanging_rods.toml"), "-o", str(result), "--csv", str(table)],
                             tmp_path)
    assert code == 1 and out == "", out
    assert "hanging_rods.toml: --csv writes the time history (t, q, qd) of a dynamics or kinematics analysis; this " \
        "modes analysis has none" in err, err
    assert not result.exists() and not table.exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzzed_spatial_files_never_crash(tmp_path, data):
    """Random edits of a valid spatial file (deleted lines, replaced values, inserted junk): rmbd info exits with 0
    or 1 (an error naming the place), never an internal error."""
    text = fuzzed(data, GOOD, ["-1", "0", "3", "1e308", "nan", "inf", '"x"', "[]", "[1, 2, 3]",
                               "[[1, 0, 0], [0, 1, 0], [0, 0, 1]]", "[[1, 2], [3]]", "true", '"ground"', '"free"',
                               '"universal"', "[0.0, 0.0, 0.0, 0.0]", "[1.0, 0.0, 0.0, 0.0, 0.0, 0.0]", "{}"])
    path = tmp_path / "model.toml"
    path.write_text(text)
    code, _, err = run_cli(["info", str(path)], tmp_path)
    assert code in (0, 1), err
    assert "Traceback" not in err


def test_save_refuses_states_of_the_wrong_size(tmp_path):
    model = rm.models.heavy_top()
    with pytest.raises(rm.StateError, match="q0"):
        rm.io.save(model, tmp_path / "top.toml", np.zeros(3))
    with pytest.raises(rm.StateError, match="v0"):
        rm.io.save(model, tmp_path / "top.toml", model.neutral(), np.zeros(4))
    assert not (tmp_path / "top.toml").exists()


def test_loops_round_trip_and_keep_the_dynamics(tmp_path):
    from test_spatial_loops import looped_tree  # noqa: PLC0415  (every loop kind on a random tree)

    governor = rm.models.centrifugal_governor(closed=True)
    tree, q_tree, v_tree = looped_tree(3)
    q_governor = governor.q(0.6)
    v_governor = np.array([9.0, 0.4, 0.4, governor.dq_dphi(0.6)[3] * 0.4])
    for model, q0, v0 in ((governor.model, q_governor, v_governor), (tree, q_tree, v_tree)):
        path = tmp_path / "looped.toml"
        rm.io.save(model, path, q0, v0)
        again = rm.io.load(path).model
        assert again.loop_names == model.loop_names and again.nconstraints == model.nconstraints
        for k in range(model.nloops):  # what add_loop stored; an axis to an ulp (normalised again on reading)
            given, read = model.loop(k), again.loop(k)
            assert read.keys() == given.keys()
            for key, value in given.items():
                if key in ("axis", "axis_b") and value is not None:
                    np.testing.assert_allclose(read[key], value, rtol=0, atol=4e-16, err_msg=key)
                elif isinstance(value, np.ndarray):
                    np.testing.assert_array_equal(read[key], value, err_msg=key)
                else:
                    assert read[key] == value, key
        np.testing.assert_array_equal(again.loop_int, model.loop_int)
        np.testing.assert_allclose(again.loop_real, model.loop_real, rtol=0, atol=4e-16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rm.RedundantConstraintWarning)
            expected = rm.forward_dynamics(model, q0, v0)
            np.testing.assert_allclose(rm.forward_dynamics(again, q0, v0), expected, rtol=0,
                                       atol=1e-12 * np.abs(expected).max())
    with pytest.raises(rm.ModelError, match="unknown loop 'link3'"):
        governor.model.loop("link3")


def test_model3d_describes_its_bodies_through_public_views():
    model, _, _ = every_joint_model()
    assert model.total_mass() == pytest.approx(sum(1.0 + i for i in range(8)))
    for i, joint in enumerate(model.joint_types):
        body = model.body(i)
        assert body["name"] == model.names[i] and body["joint"] == joint and body["parent"] == i - 1
        np.testing.assert_array_equal(body["com"], model.body_com[i])
        np.testing.assert_array_equal(body["inertia"], model.body_inertia[i])
        np.testing.assert_array_equal(body["parent_point"], model.joint_parent_point[i])
        np.testing.assert_array_equal(body["child_point"], model.joint_child_point[i])
        np.testing.assert_array_equal(body["rotation"], model.joint_rotation[i])
        assert body["mass"] == model.body_mass[i]
        expected = {"revolute": (3,), "prismatic": (3,), "cylindrical": (3,), "universal": (2, 3)}.get(joint)
        assert (body["axis"] is None) if expected is None else body["axis"].shape == expected
        assert body["mass"] == model.body_real[i, 0]  # the kernels' packed mass
    with pytest.raises(ValueError, match="read-only"):
        model.body_mass[0] = 5.0
    body = model.body("b4-spherical")
    body["com"][:] = 0.0  # a copy
    assert np.abs(model.body_com[4]).max() > 0


# ---- drivers in spatial files ------------------------------------------------------------------------------------

RSSR = SPATIAL / "rssr.toml"


def test_rmbd_run_does_the_kinematics_of_a_spatial_file_as_the_python_call(tmp_path):
    """The RSSR example's kinematic analysis from the file (its harmonic crank driver) equals rm.kinematic_analysis
    called with the driver written out by hand; rmbd info lists the loop and the driver."""
    result = tmp_path / "rssr.npz"
    code, out, err = run_cli(["run", str(RSSR), "-o", str(result)], tmp_path)
    assert code == 0, err
    spec = rm.io.load(RSSR)
    with np.load(result) as data:
        peak = np.abs(data["driving_forces"]).max()
    # the driver named, its largest force with its unit: the crank's revolute joint takes a torque [N m]
    assert f"kinematic analysis: 51 times up to 1 s; driving force max |.|: crank torque {peak:.6g} N m\n" in out
    crank = (lambda t: 0.3 + 0.2 * np.sin(3.0 * t), lambda t: 0.6 * np.cos(3.0 * t),
             lambda t: -1.8 * np.sin(3.0 * t))
    reference = rm.kinematic_analysis(spec.model, {"crank": crank}, np.linspace(0.0, 1.0, 51), [0.3, -3.5])
    with np.load(result) as data:
        assert str(data["kind"]) == "kinematics" and data["driven"].tolist() == [0]
        for key in ("t", "q", "v", "vdot", "driving_forces", "multipliers"):
            expected = getattr(reference, key)
            np.testing.assert_allclose(data[key], expected, rtol=0, atol=1e-12 * max(1.0, np.abs(expected).max()))
    code, out, err = run_cli(["info", str(RSSR)], tmp_path)
    assert code == 0, err
    assert "loop coupler: distance" in out and "driver of crank: harmonic q = 0.3 + 0.2 sin(3 t + 0)" in out


def test_spatial_drivers_round_trip_through_save(tmp_path):
    text = RSSR.read_text().replace('kind = "harmonic"\noffset = 0.3\namplitude = 0.2\nfrequency = 3.0',
                                    'kind = "polynomial"\ncoefficients = [0.3, 1.5, -0.25]')
    spec = rm.io.loads(text, "rssr.toml")
    assert spec.drivers["crank"].table == {"body": "crank", "kind": "polynomial", "coefficients": [0.3, 1.5, -0.25]}
    path = tmp_path / "again.toml"
    rm.io.save(spec.model, path, spec.q0, spec.v0, spec.analysis, drivers=spec.drivers)
    again = rm.io.load(path)
    assert list(again.drivers) == ["crank"] and again.analysis == spec.analysis
    np.testing.assert_array_equal(again.drivers["crank"].table["coefficients"], [0.3, 1.5, -0.25])
    for f, g in zip(spec.drivers["crank"], again.drivers["crank"], strict=True):
        assert f(0.7) == g(0.7)
    times = np.linspace(0.0, 0.5, 6)
    first = rm.kinematic_analysis(spec.model, spec.drivers, times, spec.q0)
    second = rm.kinematic_analysis(again.model, again.drivers, times, again.q0)
    # the same to round-off (the axis is written normalised and normalised again on reading)
    np.testing.assert_allclose(second.q, first.q, rtol=1e-14)
    np.testing.assert_allclose(second.driving_forces, first.driving_forces, rtol=1e-12)
    # a harmonic driver given as its table, and one that is a bare function (not writable)
    table = {"kind": "harmonic", "amplitude": 0.5, "frequency": 2.0, "offset": 0.1, "phase": 0.2}
    written = rm.io.loads(rm.io.dumps(spec.model, drivers={"rocker": table}), "x.toml")
    assert written.drivers["rocker"].table == {"body": "rocker", **table}
    with pytest.raises(rm.io.FileFormatError, match="driver of body 'crank': a function cannot be written"):
        rm.io.dumps(spec.model, drivers={"crank": lambda t: t})


BAD_DRIVERS = [  # (replace this in rssr.toml, with that, expected words in the message)
    ('body = "crank"\nkind = "harmonic"', 'body = "rod"\nkind = "harmonic"', "driver[0].body: unknown body 'rod'"),
    ('kind = "harmonic"', 'kind = "spline"', "driver[0].kind"),
    ("amplitude = 0.2\n", "", "driver[0].amplitude: missing"),
    ("amplitude = 0.2", "amplitude = 0.2\ncoefficients = [1.0]", "driver[0]: unknown key"),
    ('kind = "harmonic"', 'kind = "polynomial"', "driver[0]: unknown key"),
    ('[[driver]]\nbody = "crank"', '[[driver]]\nbody = "rocker"\nkind = "harmonic"\namplitude = 1.0\n'
     'frequency = 1.0\n\n[[driver]]\nbody = "rocker"', "driver[1].body: body 'rocker' has a driver already"),
]


@pytest.mark.parametrize(("old", "new", "expected"), BAD_DRIVERS, ids=range(len(BAD_DRIVERS)))
def test_bad_spatial_driver_entries_name_the_entry(old, new, expected, tmp_path):
    text = RSSR.read_text()
    assert old in text
    path = tmp_path / "rssr.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(rm.io.FileFormatError) as info:
        rm.io.load(path)
    assert str(info.value).startswith(f"{path}: ") and expected in str(info.value), str(info.value)


def test_a_spatial_driver_of_a_joint_that_cannot_be_driven_is_refused(tmp_path):
    path = tmp_path / "rods.toml"
    path.write_text((SPATIAL / "hanging_rods.toml").read_text()
                    + '\n[[driver]]\nbody = "rod1"\nkind = "polynomial"\ncoefficients = [0.0, 1.0]\n')
    with pytest.raises(rm.io.FileFormatError, match="driver\\[0\\].body: body 'rod1' has a spherical joint; a "
                       "driver of a spatial model prescribes a revolute or prismatic"):
        rm.io.load(path)
    # a dynamics analysis of a driven model with loops runs (drivers and loops together), from a start that closes
    # the loops: the file's rough start (closed by the kinematic analysis' assembly) is refused naming the loop
    text = RSSR.read_text().replace('type = "kinematics"', 'type = "dynamics"')
    dynamics = tmp_path / "rssr.toml"
    dynamics.write_text(text)
    code, out, err = run_cli(["run", str(dynamics), "-o", str(tmp_path / "r.npz")], tmp_path)
    assert code == 1 and "rssr.toml" in err and "q0 does not close the loops" in err and "'coupler'" in err, err
    assert not (tmp_path / "r.npz").exists()
    spec = rm.io.load(dynamics)
    closed = rm.assemble(spec.model, spec.q0, fixed=("crank",))
    dynamics.write_text(text.replace("q = [0.3, -3.5]", f"q = [{float(closed[0])!r}, {float(closed[1])!r}]"))
    code, out, err = run_cli(["run", str(dynamics), "-o", str(tmp_path / "r.npz")], tmp_path)
    assert code == 0, err
    with np.load(tmp_path / "r.npz") as data:
        # the driven crank follows its driver (offset 0.3 + 0.2 sin(3 t)) to the run's tolerance
        np.testing.assert_allclose(data["q"][:, 0], 0.3 + 0.2 * np.sin(3.0 * data["t"]), rtol=0.0, atol=1e-9)


def test_rmbd_run_simulates_a_spatial_file_with_a_driver(tmp_path):
    """The turntable example (a driven revolute joint, a free one): rmbd run gives rm.simulate's samples with the
    file's driver, the driving torque at them (named, its peak printed with its unit) and t, q, v as CSV."""
    source = SPATIAL / "turntable.toml"
    result, table = tmp_path / "turntable.npz", tmp_path / "turntable.csv"
    code, out, err = run_cli(["run", str(source), "-o", str(result), "--csv", str(table)], tmp_path)
    assert code == 0, err
    spec = rm.io.load(source)
    times = np.linspace(0.0, 2.0, 101)
    expected = rm.simulate(spec.model, spec.q0, spec.v0, 2.0, rtol=1e-10, atol=1e-12, t_eval=times,
                           drivers=spec.drivers)
    with np.load(result) as data:
        np.testing.assert_array_equal(data["q"], expected.q)
        np.testing.assert_array_equal(data["qd"], expected.qd)
        np.testing.assert_allclose(data["q"][:, 0], 1.5 * times**2, rtol=1e-15, atol=0.0)  # the driver's angle
        assert list(data["driven"]) == [0]
        np.testing.assert_array_equal(data["driving_forces"], expected.driving_forces()[:, [0]])
        peak = np.abs(data["driving_forces"]).max()
        assert np.abs(data["energy_balance"]).max() < 1e-9 * np.abs(data["applied_work"]).max()
        # at rest the torque spins up the table and the hanging rod with it: (J_table + J_rod about the axis) 3 rad/s^2
        rod = 0.0001 + 0.5 * 0.3**2
        assert data["driving_forces"][0, 0] == pytest.approx((0.225 + rod) * 3.0, rel=1e-12)
    assert f"driving force max |.|: table torque {peak:.6g} N m" in out, out
    lines = table.read_text().splitlines()
    assert lines[0] == "t [s],table angle [rad],rod angle [rad],table rate [rad/s],rod rate [rad/s]"
    assert len(lines) == 102


def test_rmbd_info_lists_a_spatial_files_surfaces_and_contacts(tmp_path):
    code, out, err = run_cli(["info", str(SPATIAL / "chain_on_table.toml")], tmp_path)
    assert code == 0, err
    assert ("ground table: through [0.0, 0.0, 0.0], normal [0.0, 0.0, 1.0], extent -0.3 .. 0.259 m along "
            "[1.0, 0.0, 0.0], -inf .. inf m across it, fixed") in out
    assert "drum edge: radius 0.02 m at [0.26, 0.0, -0.02] about [0.0, 1.0, 0.0], fixed" in out
    assert "contact table0: capsule of radius 0.005 m of link1 on table, k 10000, e 0.3, mu 0.4" in out
    assert "... 26 more contacts ..." in out
