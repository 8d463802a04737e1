"""URDF import (``rm.load_urdf``): the dynamics of a file equal those of the same robot built by hand, every
malformed file gives one FileFormatError naming the file and the element, deep chains load without recursion."""

import io as std_io
import re
from pathlib import Path

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd import cli
from recursive_mbd.files.model_file import FileFormatError
from recursive_mbd.model.spatial_fields import axis_rotation

ARM = Path(__file__).resolve().parent / "data" / "arm.urdf"
X, Y, Z = np.eye(3)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def rpy(roll, pitch, yaw):
    """URDF's rpy: roll about the fixed x axis, then pitch about y, then yaw about z."""
    return axis_rotation(Z, yaw) @ axis_rotation(Y, pitch) @ axis_rotation(X, roll)


def tensor(xx, xy, xz, yy, yz, zz):
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def hand_built_arm(floating_base=False):
    """tests/data/arm.urdf built with Model3D by hand: the fixed joint "mount" merged into "upper" here."""
    model = rm.Model3D()
    parent = "ground"
    if floating_base:
        parent = model.add_body("ground", "free", mass=5.0, inertia=1.0, name="base")
    # upper: its own inertial (origin rpy) and the sensor's, fixed at (0, 0.05, 0.3) turned by pitch 0.5
    r_upper = rpy(0.1, 0.2, 0.3)
    upper_parts = [(2.0, np.array([0.0, 0.0, 0.2]),
                    r_upper @ tensor(0.03, 0.001, 0.002, 0.04, -0.001, 0.02) @ r_upper.T)]
    r_sensor, p_sensor = rpy(0.0, 0.5, 0.0), np.array([0.0, 0.05, 0.3])
    upper_parts.append((0.5, p_sensor + r_sensor @ np.array([0.05, 0.0, 0.1]),
                        r_sensor @ np.diag([0.001, 0.002, 0.0015]) @ r_sensor.T))
    mass = sum(m for m, _, _ in upper_parts)
    com = sum(m * c for m, c, _ in upper_parts) / mass
    inertia = sum(I + m * ((c - com) @ (c - com) * np.eye(3) - np.outer(c - com, c - com))
                  for m, c, I in upper_parts)
    model.add_body(parent, "revolute", parent_point=(0.0, 0.0, 0.5), rotation=rpy(0.3, -0.2, 0.1), axis=(0, 1, 1),
                   mass=mass, com=com, inertia=0.5 * (inertia + inertia.T), name="upper")
    r_fore = rpy(-0.2, 0.1, 0.4)
    model.add_body("upper", "revolute", parent_point=p_sensor + r_sensor @ np.array([0.1, 0.0, 0.1]),
                   rotation=r_sensor @ rpy(0.2, 0.0, -0.3), axis=X, mass=1.5, com=(0.1, 0.0, 0.15),
                   inertia=r_fore @ tensor(0.02, 0.0, 0.001, 0.025, 0.0, 0.01) @ r_fore.T, name="fore")
    model.add_body("fore", "prismatic", parent_point=(0.0, 0.0, 0.3), axis=Z, mass=0.3, inertia=0.001,
                   name="slider")
    model.add_joint_spring_damper("upper", stiffness=0.0, damping=0.5)
    return model.compile()


@pytest.mark.parametrize("floating_base", [False, True])
def test_file_equals_the_robot_built_by_hand(floating_base):
    model = rm.load_urdf(ARM, floating_base=floating_base)
    reference = hand_built_arm(floating_base)
    assert model.names == reference.names == (["base"] if floating_base else []) + ["upper", "fore", "slider"]
    assert model.joint_types == reference.joint_types and model.name == "arm"
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = rm.integrate_configuration(model, model.neutral(), rng.normal(size=model.nv))
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        assert rel(rm.mass_matrix(model, q), rm.mass_matrix(reference, q)) < 1e-12
        assert rel(rm.forward_dynamics(model, q, v, tau), rm.forward_dynamics(reference, q, v, tau)) < 1e-12


def test_what_the_file_keeps_beside_the_dynamics():
    model = rm.load_urdf(ARM.read_text())  # text as well as a path
    imported = model.imported
    assert imported.source == "<string>" and imported.format == "urdf"
    assert imported.links == {"base": "ground", "upper": "upper", "sensor": "upper", "fore": "fore",
                              "slider": "slider"}
    assert imported.meshes == {"upper": ["package://arm/upper.stl", "package://arm/upper_hull.stl"]}
    shoulder, elbow, slide = (imported.joints[name] for name in ("shoulder", "elbow", "slide"))
    assert (shoulder.type, shoulder.body, shoulder.limits, shoulder.effort, shoulder.velocity, shoulder.damping) == (
        "revolute", "upper", (-1.0, 1.0), 10.0, 2.0, 0.5)
    assert (elbow.type, elbow.limits, elbow.damping) == ("continuous", None, 0.0)
    assert slide.limits == (0.0, 0.2)
    assert "mount" not in imported.joints  # a fixed joint moves nothing
    np.testing.assert_array_equal(model.body("slider")["axis"], Z)  # (0, 0, 2) normalised
    assert list(model.element_names) == ["shoulder"]  # its damping, as a joint damper
    assert not rm.load_urdf(ARM, joint_damping=False).element_names


def test_planar_joint_moves_in_the_plane_normal_to_its_axis():
    text = """<robot name="puck"><link name="table"/>
      <link name="puck"><inertial><mass value="2"/><inertia ixx="0.3" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.2"/>
      </inertial></link>
      <joint name="slide" type="planar"><parent link="table"/><child link="puck"/><axis xyz="2 0 0"/></joint></robot>"""
    model = rm.load_urdf(text)
    assert model.joint_types == ["planar"]
    q, v = model.neutral(), np.zeros(3)
    np.testing.assert_allclose(rm.mass_matrix(model, q), np.diag([2.0, 2.0, 0.3]), rtol=0, atol=1e-15)
    vdot = rm.forward_dynamics(model, q, v)  # gravity -z lies in the plane normal to x
    assert abs(np.hypot(vdot[0], vdot[1]) - 9.81) < 1e-12 and vdot[2] == 0.0


def chain_text(n):
    parts = ['<robot name="chain"><link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(f'<link name="l{i}"><inertial><origin xyz="0 0 -0.05" rpy="0.1 0 0"/><mass value="0.1"/>'
                     f'<inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="2e-5"/></inertial></link>'
                     f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     f'<origin xyz="0 0 -0.1" rpy="0 0 0.01"/><axis xyz="0 1 0"/></joint>')
    return "\n".join(parts) + "</robot>"


def test_a_ten_thousand_link_chain_loads_without_recursion():
    n = 10_000
    model = rm.load_urdf(chain_text(n))
    assert model.nbodies == model.nq == n and model.names[-1] == f"l{n}"
    np.testing.assert_array_equal(model.parents, np.arange(-1, n - 1))
    last = model.body(n - 1)
    np.testing.assert_allclose(last["rotation"], rpy(0.0, 0.0, 0.01), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(last["parent_point"], (0.0, 0.0, -0.1))
    np.testing.assert_array_equal(last["com"], (0.0, 0.0, -0.05))
    inertia = rpy(0.1, 0.0, 0.0) @ np.diag([1e-4, 1e-4, 2e-5]) @ rpy(0.1, 0.0, 0.0).T
    np.testing.assert_allclose(last["inertia"], inertia, rtol=0, atol=1e-19)
    assert model.total_mass() == pytest.approx(0.1 * n, rel=1e-12)


VALID = ARM.read_text()
REPLACE = [  # (what, old text of tests/data/arm.urdf, new text, the element the message must name, words in it)
    ("missing mass", '<mass value="2"/>', "", "link 'upper'", "no <mass>"),
    ("mass without value", '<mass value="2"/>', "<mass/>", "link 'upper'", "value: missing"),
    ("bad number", '<mass value="2"/>', '<mass value="two"/>', "link 'upper'", "finite number"),
    ("not finite", 'ixx="0.03"', 'ixx="nan"', "link 'upper'", "finite number"),
    ("negative mass", '<mass value="1.5"/>', '<mass value="-1.5"/>', "link 'fore'", ">= 0"),
    ("not positive definite", 'ixx="0.02" ixy="0" ixz="0.001" iyy="0.025"', 'ixx="-0.02" ixy="0" ixz="0.001" '
     'iyy="0.025"', "link 'fore'", "<inertia> must be positive semidefinite"),
    ("triangle inequality", 'ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.0015"',
     'ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.005"', "link 'sensor'", "triangle inequality"),
    ("missing inertia", '<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/>', "",
     "link 'slider'", "no <inertia>"),
    ("missing inertia entry", 'iyy="0.001" iyz="0" izz="0.001"/>', 'iyy="0.001" iyz="0"/>', "link 'slider'",
     "izz: missing"),
    ("two inertials", '<inertial><mass value="0.3"/>', '<inertial/><inertial><mass value="0.3"/>',
     "link 'slider'", "two <inertial>"),
    ("short xyz", '<origin xyz="0 0 0.5"', '<origin xyz="0 0.5"', "joint 'shoulder'", "<origin> xyz"),
    ("bad rpy", 'rpy="0.3 -0.2 0.1"', 'rpy="0.3 - 0.2"', "joint 'shoulder'", "<origin> rpy"),
    ("unknown joint type", 'type="continuous"', 'type="continous"', "joint 'elbow'", "did you mean 'continuous'"),
    ("missing joint type", 'name="elbow" type="continuous"', 'name="elbow"', "joint 'elbow'", "missing type"),
    ("zero axis", '<axis xyz="1 0 0"/>', '<axis xyz="0 0 0"/>', "joint 'elbow'", "non-zero"),
    ("mimic", '<axis xyz="1 0 0"/>', '<axis xyz="1 0 0"/><mimic joint="shoulder"/>', "joint 'elbow'",
     "mimic joints are not supported"),
    ("missing child link", '<child link="slider"/>', '<child link="slidr"/>', "joint 'slide'",
     "unknown link 'slidr' (did you mean 'slider'?)"),
    ("no child element", '<child link="slider"/>', "", "joint 'slide'", "missing <child"),
    ("child of two joints", '<child link="slider"/>', '<child link="fore"/>', "joint 'slide'",
     "already the child of joint 'elbow'"),
    ("own parent", '<parent link="fore"/><child link="slider"/>', '<parent link="slider"/><child link="slider"/>',
     "joint 'slide'", "its own parent"),
    ("two roots", "</robot>", '<link name="extra"/></robot>', None, "2 root links ('base', 'extra')"),
    ("cycle off the root", '<parent link="base"/><child link="upper"/>', '<parent link="slider"/><child link="upper"/>',
     "joint 'shoulder'", "link 'upper' is not connected to the root link 'base': the joints form a cycle"),
    ("duplicate link", '<link name="slider">', '<link name="fore">', "link 'fore'", "defined twice"),
    ("duplicate joint", 'name="slide"', 'name="elbow"', "joint 'elbow'", "defined twice"),
    ("missing link name", '<link name="slider">', "<link>", "link[4]", "missing name"),
    ("limits reversed", 'lower="-1" upper="1"', 'lower="1" upper="-1"', "joint 'shoulder'", "above upper"),
    ("negative damping", 'damping="0.5"', 'damping="-0.5"', "joint 'shoulder'", ">= 0"),
    ("not a robot", '<robot name="arm">', '<mujoco name="arm">', None, "not <robot>"),
]


def with_cycle(text):
    """The arm with a cycle: base joined to the slider, so no link is left as the root."""
    return text.replace("</robot>", '<joint name="loop" type="fixed"><parent link="slider"/><child link="base"/>'
                        "</joint></robot>")


@pytest.mark.parametrize("case", REPLACE, ids=[case[0] for case in REPLACE])
def test_malformed_file_names_file_and_element(tmp_path, case):
    _, old, new, where, words = case
    text = VALID.replace(old, new, 1) if case[0] != "not a robot" else VALID.replace(old, new).replace(
        "</robot>", "</mujoco>")
    assert text != VALID
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.raises(FileFormatError) as info:
        rm.load_urdf(path)
    message = str(info.value)
    prefix = f"{path}: " + (f"{where}: " if where else "")
    assert message.startswith(prefix), message
    assert words in message, message


@pytest.mark.parametrize(("what", "text", "words"), [
    ("cycle", with_cycle(VALID), "no root link"),
    ("detached cycle", VALID.replace("</robot>", '<link name="a"/><link name="b"/><joint name="ab" type="fixed">'
                                     '<parent link="a"/><child link="b"/></joint><joint name="ba" type="fixed">'
                                     '<parent link="b"/><child link="a"/></joint></robot>'), "form a cycle"),
    ("not XML", VALID[:-20], "not well-formed XML"),
    ("no links", '<robot name="empty"/>', "no <link> elements"),
    ("nothing moves", '<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="fixed">'
     '<parent link="a"/><child link="b"/></joint></robot>', "no moving bodies"),
])
def test_malformed_tree_names_the_file(tmp_path, what, text, words):
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.raises(FileFormatError, match=re.escape(f"{path}: ")) as info:
        rm.load_urdf(path)
    assert words in str(info.value)


def test_unreadable_sources(tmp_path):
    with pytest.raises(FileFormatError, match="cannot read"):
        rm.load_urdf(tmp_path / "missing.urdf")
    with pytest.raises(FileFormatError, match="not a regular file"):
        rm.load_urdf(tmp_path)


def test_random_corruptions_give_a_file_format_error_or_a_model():
    """Cut attributes, elements and numbers of the arm at random: the file loads or is refused by a
    FileFormatError naming it; never another exception."""
    rng = np.random.default_rng(11)
    tokens = re.findall(r'"[^"]*"|<[^<>]*>', VALID)
    refused = 0
    for _ in range(150):
        text = VALID
        for _ in range(int(rng.integers(1, 4))):
            token = tokens[int(rng.integers(len(tokens)))]
            replacement = str(rng.choice(['""', '"1e400"', '"-3"', '"0 0"', '"x"', "", "<link/>", '"0 0 0"']))
            text = text.replace(token, replacement, 1)
        try:
            rm.load_urdf(text)
        except FileFormatError as err:
            assert str(err).startswith("<string>: ")
            refused += 1
    assert refused > 50


# ---- MJCF ------------------------------------------------------------------------------------------------------------

PAIR_URDF = """<robot name="pair"><link name="world"/>
 <link name="a"><inertial><origin xyz="0.1 0 0.2" rpy="0.3 0.2 0.1"/><mass value="2"/>
   <inertia ixx="0.05" ixy="0" ixz="0" iyy="0.04" iyz="0" izz="0.03"/></inertial></link>
 <link name="b"><inertial><origin xyz="0 0.1 0"/><mass value="0.5"/>
   <inertia ixx="0.01" ixy="0.001" ixz="-0.002" iyy="0.02" iyz="0.003" izz="0.015"/></inertial></link>
 <link name="c"><inertial><origin xyz="0 0 0.1" rpy="0 0.4 0"/><mass value="1"/>
   <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial></link>
 <link name="d"><inertial><origin xyz="0.05 0 0"/><mass value="0.7"/>
   <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.008"/></inertial></link>
 <joint name="hinge_a" type="revolute"><parent link="world"/><child link="a"/>
   <origin xyz="0 0 1" rpy="0.2 -0.1 0.3"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
   <dynamics damping="0.2"/></joint>
 <joint name="weld_b" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0.2 0 0.1" rpy="0 0 0.5"/></joint>
 <joint name="slide_c" type="prismatic"><parent link="b"/><child link="c"/><origin xyz="0 0.3 0" rpy="0.1 0 0"/>
   <axis xyz="1 0 0"/><limit lower="0" upper="0.5" effort="1" velocity="1"/></joint>
 <joint name="hinge_d" type="continuous"><parent link="c"/><child link="d"/><origin xyz="0 0 0.2"/>
   <axis xyz="0 0 1"/></joint>
</robot>"""

# the same robot in MJCF: URDF's rpy is the extrinsic euler sequence XYZ; body b has no joint (welded)
PAIR_MJCF = """<mujoco model="pair"><compiler angle="radian" eulerseq="XYZ"/>
 <worldbody>
  <body name="a" pos="0 0 1" euler="0.2 -0.1 0.3">
   <joint name="hinge_a" type="hinge" axis="0 1 0" range="-1 1" damping="0.2"/>
   <inertial pos="0.1 0 0.2" euler="0.3 0.2 0.1" mass="2" diaginertia="0.05 0.04 0.03"/>
   <body name="b" pos="0.2 0 0.1" euler="0 0 0.5">
    <inertial pos="0 0.1 0" mass="0.5" fullinertia="0.01 0.02 0.015 0.001 -0.002 0.003"/>
    <body name="c" pos="0 0.3 0" euler="0.1 0 0">
     <joint name="slide_c" type="slide" axis="1 0 0" range="0 0.5"/>
     <inertial pos="0 0 0.1" euler="0 0.4 0" mass="1" diaginertia="0.02 0.02 0.01"/>
     <body name="d" pos="0 0 0.2">
      <joint name="hinge_d" axis="0 0 1"/>
      <inertial pos="0.05 0 0" mass="0.7" diaginertia="0.01 0.012 0.008"/>
      <geom type="sphere" size="0.02"/>
     </body>
    </body>
   </body>
  </body>
 </worldbody>
</mujoco>"""


def assert_same_dynamics(model, reference, tol=1e-12, seed=3):
    rng = np.random.default_rng(seed)
    for _ in range(4):
        q = rm.integrate_configuration(reference, reference.neutral(), rng.normal(size=reference.nv))
        v, tau = rng.normal(size=reference.nv), rng.normal(size=reference.nv)
        assert rel(rm.mass_matrix(model, q), rm.mass_matrix(reference, q)) < tol
        assert rel(rm.forward_dynamics(model, q, v, tau), rm.forward_dynamics(reference, q, v, tau)) < tol


def test_mjcf_subset_equals_the_urdf_of_the_same_robot():
    model = rm.load_mjcf(PAIR_MJCF, use_mujoco=False)
    reference = rm.load_urdf(PAIR_URDF)
    assert model.names == reference.names == ["a", "c", "d"] and model.name == "pair"
    assert model.imported.links == {"world": "ground", "a": "a", "b": "a", "c": "c", "d": "d"}
    assert model.imported.joints["hinge_a"].limits == (-1.0, 1.0)
    assert model.imported.joints["hinge_a"].damping == 0.2
    assert_same_dynamics(model, reference)


def test_mjcf_degrees_and_orientations():
    """axisangle, xyaxes, zaxis and quat for the same turn; hinge ranges and springref in degrees."""
    turns = ['axisangle="0 0 1 90"', 'xyaxes="0 1 0 -1 0 0"', 'quat="0.7071067811865476 0 0 0.7071067811865476"',
             'euler="0 0 90"']
    models = []
    for turn in turns:
        text = (f'<mujoco><worldbody><body name="b" pos="0 0 1" {turn}><joint name="j" axis="1 0 0" range="-90 45" '
                'stiffness="2" springref="30"/><inertial pos="0.1 0.2 0" mass="1" diaginertia="0.1 0.2 0.25"/>'
                '<geom type="mesh" mesh="hand"/></body></worldbody></mujoco>')
        models.append(rm.load_mjcf(text, use_mujoco=False, joint_damping=False))
    for model in models:
        np.testing.assert_allclose(model.body("b")["rotation"], axis_rotation(Z, np.pi / 2), atol=1e-15)
        assert model.imported.joints["j"].limits == pytest.approx((-np.pi / 2, np.pi / 4), rel=1e-15)
        assert model.imported.joints["j"].spring_rest == pytest.approx(np.pi / 6, rel=1e-15)
        assert model.imported.meshes == {"b": ["hand"]}
    zaxis = rm.load_mjcf('<mujoco><worldbody><body name="b" zaxis="1 0 0"><joint name="j"/><inertial pos="0 0 0" '
                         'mass="1" diaginertia="1 1 1"/></body></worldbody></mujoco>', use_mujoco=False)
    np.testing.assert_allclose(zaxis.body("b")["rotation"] @ Z, X, atol=1e-15)


@pytest.mark.parametrize("joint", ['type="hinge" axis="1 1 0"', 'type="slide" axis="0 1 1"'])
def test_mjcf_ref_is_the_coordinate_of_the_files_pose(joint):
    """A joint with ``ref``: q is MuJoCo's qpos, and the file's pose is at q = ref (degrees for a hinge)."""
    bodies = ('<body name="a" pos="0 0 1" euler="10 20 30"><joint name="j" {joint} pos="0.1 0 0" {ref}/>'
              '<inertial pos="0.1 0.2 0.3" mass="1" diaginertia="0.1 0.2 0.25"/>'
              '<body name="b" pos="0.3 0 0"><joint name="k" axis="0 0 1"/>'
              '<inertial pos="0 0.1 0" mass="0.5" diaginertia="0.01 0.02 0.02"/></body></body>')
    plain, shifted = (rm.load_mjcf(f"<mujoco><worldbody>{bodies.format(joint=joint, ref=ref)}</worldbody></mujoco>",
                                   use_mujoco=False) for ref in ("", 'ref="40"'))
    ref = np.radians(40.0) if "hinge" in joint else 40.0
    assert shifted.imported.joints["j"].ref == ref
    np.testing.assert_array_equal(shifted.imported.q0, (ref, 0.0))
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v = rng.normal(size=2), rng.normal(size=2)
        shift = np.array([ref, 0.0])
        assert rel(rm.mass_matrix(shifted, q + shift), rm.mass_matrix(plain, q)) < 1e-12
        assert rel(rm.forward_dynamics(shifted, q + shift, v), rm.forward_dynamics(plain, q, v)) < 1e-12


def test_mjcf_free_ball_and_several_joints_on_one_body():
    turn = 30.0
    text = f"""<mujoco model="m"><option gravity="0 0.5 -9"/><worldbody>
      <body name="floater" pos="1 2 3" quat="0.5 0.5 0.5 0.5"><freejoint name="float"/>
        <inertial pos="0 0 0.1" mass="3" diaginertia="0.1 0.2 0.15"/>
        <body name="arm" pos="0 0 0.5"><joint name="shoulder" type="ball" pos="0 0 0.1" damping="0.3"/>
          <inertial pos="0 0 0.2" mass="1" diaginertia="0.02 0.02 0.01"/>
          <body name="hand" pos="0 0 0.4" axisangle="1 0 0 {turn}">
            <joint name="wx" axis="1 0 0" pos="0 0 0.05"/><joint name="wy" axis="0 2 0" pos="0 0 0.05"/>
            <inertial pos="0 0 0.1" mass="0.5" diaginertia="0.005 0.004 0.003"/>
          </body></body></body></worldbody></mujoco>"""
    model = rm.load_mjcf(text, use_mujoco=False)
    reference = rm.Model3D(gravity=(0.0, 0.5, -9.0))
    reference.add_body("ground", "free", mass=3.0, com=(0, 0, 0.1), inertia=(0.1, 0.2, 0.15, 0, 0, 0),
                       name="floater")
    reference.add_body("floater", "spherical", parent_point=(0, 0, 0.6), child_point=(0, 0, 0.1), mass=1.0,
                       com=(0, 0, 0.2), inertia=(0.02, 0.02, 0.01, 0, 0, 0), name="arm")
    rotation = axis_rotation(X, np.radians(turn))
    reference.add_body("arm", "revolute", parent_point=(0, 0, 0.4) + rotation @ (0, 0, 0.05),
                       child_point=(0, 0, 0.05), rotation=rotation, axis=X, mass=0.0, name="hand/wx")
    reference.add_body("hand/wx", "revolute", parent_point=(0, 0, 0.05), child_point=(0, 0, 0.05), axis=Y,
                       mass=0.5, com=(0, 0, 0.1), inertia=(0.005, 0.004, 0.003, 0, 0, 0), name="hand")
    reference.add_joint_spring_damper("arm", stiffness=0.0, damping=0.3)
    reference.compile()
    assert model.names == reference.names and model.joint_types == reference.joint_types
    assert_same_dynamics(model, reference)
    np.testing.assert_allclose(model.imported.q0[:7], (1, 2, 3, 0.5, 0.5, 0.5, 0.5), rtol=0, atol=1e-15)
    assert model.imported.links["hand"] == "hand" and model.imported.joints["wx"].body == "hand/wx"


def test_a_deeply_nested_mjcf_chain_loads_without_recursion():
    """2000 nested bodies: deeper than MuJoCo's XML parser takes (the default route falls back to the subset)."""
    n = 2000
    body = ('<body name="b{i}" pos="0 0 -0.1"><joint name="j{i}" axis="0 1 0"/>'
            '<inertial pos="0 0 -0.05" mass="0.1" diaginertia="1e-4 1e-4 2e-5"/>')
    text = "<mujoco><worldbody>" + "".join(body.format(i=i) for i in range(n)) + "</body>" * n + "</worldbody></mujoco>"
    for model in (rm.load_mjcf(text, use_mujoco=False), rm.load_mjcf(text)):
        assert model.nbodies == model.nq == n and model.names[-1] == f"b{n - 1}"
        np.testing.assert_array_equal(model.parents, np.arange(-1, n - 1))
        np.testing.assert_array_equal(model.body(n - 1)["com"], (0.0, 0.0, -0.05))


MJCF_VALID = PAIR_MJCF
MJCF_CASES = [  # (what, old, new, element named, words)
    ("armature", 'range="0 0.5"', 'range="0 0.5" armature="0.1"', "joint 'slide_c'", "armature is not supported"),
    ("frictionloss", 'axis="0 0 1"', 'axis="0 0 1" frictionloss="1"', "joint 'hinge_d'", "frictionloss"),
    ("free joint below a body", '<joint name="hinge_d" axis="0 0 1"/>', '<freejoint name="f"/>', "joint 'f'",
     "must join a body to the world"),
    ("damped free joint", '<joint name="hinge_a" type="hinge" axis="0 1 0" range="-1 1" damping="0.2"/>',
     '<joint name="f" type="free" damping="1"/>', "joint 'f'", "damping on a free joint"),
    ("stiff ball", '<joint name="hinge_d" axis="0 0 1"/>', '<joint name="ball" type="ball" stiffness="2"/>',
     "joint 'ball'", "stiffness on a ball joint"),
    ("unknown joint type", '<joint name="hinge_d" axis="0 0 1"/>', '<joint name="hinge_d" type="hinje"/>',
     "joint 'hinge_d'", "unknown joint type 'hinje'"),
    ("zero axis", 'axis="0 0 1"', 'axis="0 0 0"', "joint 'hinge_d'", "non-zero"),
    ("geoms without inertial", '<inertial pos="0.05 0 0" mass="0.7" diaginertia="0.01 0.012 0.008"/>', "",
     "body 'd'", "no <inertial>"),
    ("two orientations", 'euler="0.1 0 0"', 'euler="0.1 0 0" quat="1 0 0 0"', "body 'c'", "two orientations"),
    ("bad quat", 'euler="0.1 0 0"', 'quat="1 0 0"', "body 'c'", "quat: expected 4"),
    ("negative mass", 'mass="0.7"', 'mass="-0.7"', "body 'd'", ">= 0"),
    ("triangle inequality", 'diaginertia="0.01 0.012 0.008"', 'diaginertia="0.01 0.01 0.5"', "body 'd'",
     "triangle inequality"),
    ("no inertia", 'mass="0.7" diaginertia="0.01 0.012 0.008"', 'mass="0.7"', "body 'd'",
     "one of diaginertia and fullinertia"),
    ("duplicate body", '<body name="d"', '<body name="c"', "body 'c'", "defined twice"),
    ("duplicate joint", '<joint name="hinge_d"', '<joint name="hinge_a"', "joint 'hinge_a'", "defined twice"),
    ("equality", "</worldbody>", '</worldbody><equality><weld body1="a"/></equality>', "<equality>",
     "not in the subset"),
    ("joint defaults", "<worldbody>", '<default><joint damping="1"/></default><worldbody>', "<default>",
     "<joint> defaults"),
    ("no worldbody", "<worldbody>", "<world>", None, "no <worldbody>"),
    ("bad gravity", "<worldbody>", '<option gravity="0 -9.81"/><worldbody>', "<option>", "gravity"),
]


@pytest.mark.parametrize("case", MJCF_CASES, ids=[case[0] for case in MJCF_CASES])
def test_malformed_mjcf_names_file_and_element(tmp_path, case):
    _, old, new, where, words = case
    text = MJCF_VALID.replace(old, new, 1)
    if case[0] == "no worldbody":
        text = text.replace("</worldbody>", "</world>")
    assert text != MJCF_VALID
    path = tmp_path / "robot.xml"
    path.write_text(text)
    with pytest.raises(FileFormatError) as info:
        rm.load_mjcf(path, use_mujoco=False)
    message = str(info.value)
    assert message.startswith(f"{path}: " + (f"{where}: " if where else "")), message
    assert words in message, message


# ---- model files and the command line ------------------------------------------------------------------------------

def test_io_load_and_rmbd_read_urdf_and_mjcf(tmp_path):
    urdf, mjcf = tmp_path / "pair.urdf", tmp_path / "pair.xml"
    urdf.write_text(PAIR_URDF)
    mjcf.write_text(PAIR_MJCF)
    for path in (urdf, mjcf):
        spec = rm.io.load(path)
        assert spec.model.names == ["a", "c", "d"] and spec.analysis == {} and spec.drivers == {}
        np.testing.assert_array_equal(spec.q0, np.zeros(3))
        out = std_io.StringIO()
        assert cli.main(["info", str(path)], out=out) == 0
        assert "pair: spatial, 3 bodies" in out.getvalue() and "initial.q = " in out.getvalue()
    assert cli.main(["run", str(urdf), "-o", str(tmp_path / "none.npz")], out=std_io.StringIO()) == 1
    out = std_io.StringIO()
    assert cli.main(["run", str(mjcf), "--t-end", "0.01", "-o", str(tmp_path / "pair.npz")], out=out) == 0
    assert "wrote" in out.getvalue() and (tmp_path / "pair.npz").exists()
    other = tmp_path / "other.xml"
    other.write_text("<sdf/>")
    with pytest.raises(FileFormatError, match=re.escape(f"{other}: the root element is <sdf>")):
        rm.io.load(other)
