"""Pictures and tables an engineer reads without the source: names and units, outlines, the backend left alone."""

import csv
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from _helpers import rmbd

import recursive_mbd as rm

ROOT = Path(__file__).resolve().parents[1]
SLIDER_CRANK_LABELS = ["crank angle [rad]", "piston position [m]", "rod angle rel. crank [rad]"]


def slider_crank_file(tmp_path, analysis):
    text = (ROOT / "examples" / "models" / "slider_crank.toml").read_text()
    text = text[:text.index("[analysis]")] + analysis
    path = tmp_path / "sc.toml"
    path.write_text(text)
    return path


def test_the_users_backend_is_kept_and_pyplot_not_imported(tmp_path):
    script = f"""
import sys, matplotlib
matplotlib.use("ps")
import numpy as np, recursive_mbd as rm
model = rm.chains.serial_chain(3)
rm.plot.draw(model, np.full(3, 0.2))
rm.plot.trajectories(np.linspace(0, 1, 5), np.zeros((5, 3)))
fig = rm.plot.energy(np.linspace(0, 1, 5), np.ones(5))
fig.savefig({str(tmp_path / "chain.png")!r})
assert matplotlib.get_backend() == "ps", matplotlib.get_backend()
assert "matplotlib.pyplot" not in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "chain.png").read_bytes()[:4] == b"\x89PNG"


def test_with_pyplot_imported_the_backend_is_kept_too():
    import matplotlib.pyplot as plt  # noqa: PLC0415

    before = matplotlib.get_backend()
    matplotlib.use("template")
    try:
        fig = rm.plot.draw(rm.chains.serial_chain(2), np.zeros(2))
        assert matplotlib.get_backend() == "template"
        plt.close(fig)
    finally:
        matplotlib.use(before)


def test_coordinate_labels_name_the_body_the_quantity_and_the_unit():
    model = rm.Model()
    model.add_body("ground", "revolute", (0, 0), (0, 0.5), mass=1.0, inertia=0.1, name="arm")
    model.add_body("arm", "prismatic", (0, -0.5), (0, 0), mass=1.0, axis=(0, -1), name="slider")
    model.add_body("slider", "planar", (0, 0), (0, 0), mass=1.0, inertia=0.1, name="puck")
    assert rm.plot.coordinate_labels(model) == [
        "arm angle [rad]", "slider position rel. arm [m]", "puck x rel. slider [m]", "puck y rel. slider [m]",
        "puck angle rel. slider [rad]"]
    assert rm.plot.coordinate_labels(model, "qd")[:2] == ["arm rate [rad/s]", "slider velocity rel. arm [m/s]"]
    assert rm.plot.coordinate_labels(model, "tau")[:2] == ["arm torque [N m]", "slider force rel. arm [N]"]


def test_csv_headers_carry_names_and_units(tmp_path):
    slider_crank_file(tmp_path, '[analysis]\ntype = "kinematics"\nt_end = 0.01\nsamples = 3\n')
    code, _ = rmbd("run", "sc.toml", "--csv", "sc.csv", cwd=tmp_path)
    assert code == 0
    with open(tmp_path / "sc.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    rates = ["crank rate [rad/s]", "piston velocity [m/s]", "rod rate rel. crank [rad/s]"]
    assert rows[0] == ["t [s]", *SLIDER_CRANK_LABELS, *rates]
    assert len(rows) == 4 and float(rows[-1][0]) == 0.01
    with np.load(tmp_path / "sc.npz") as data:  # the result file alone names the curves too, one unit a panel
        fig = rm.plot.overview(dict(data))
    legends = [[text.get_text() for text in ax.get_legend().get_texts()] for ax in fig.axes[:3]]
    assert legends[:2] == [["crank angle [rad]", "rod angle rel. crank [rad]"], ["piston position [m]"]]
    assert legends[2] == ["driving crank torque [N m]"]
    assert fig._suptitle.get_text() == "3 bodies: kinematic analysis, t = 0 to 0.01 s"


def test_legends_and_axes_carry_body_names_and_units():
    spec = rm.io.load(ROOT / "examples" / "models" / "slider_crank.toml")
    t = np.linspace(0.0, 0.02, 5)
    kin = rm.kinematic_analysis(spec.model, spec.drivers, t, spec.q0)
    fig = rm.plot.trajectories(kin.t, kin.q, model=spec.model)  # one unit per axis: positions on the right
    ax, right = fig.axes
    assert [text.get_text() for text in right.get_legend().get_texts()] == SLIDER_CRANK_LABELS
    assert ax.get_xlabel() == "t [s]" and (ax.get_ylabel(), right.get_ylabel()) == ("angle [rad]", "position [m]")
    assert [line.get_label() for line in right.get_lines()] == ["piston position [m]"]
    fig = rm.plot.driving_forces(kin.t, kin.driving_forces, kin.driven, spec.model)
    assert [text.get_text() for text in fig.axes[0].get_legend().get_texts()] == ["driving crank torque [N m]"]
    assert fig.axes[0].get_ylabel() == "driving force [N m]"
    names = rm.plot.joint_labels(spec.model.body_names, spec.model.body_parent)
    fig = rm.plot.reactions(kin.t, kin.joint_reactions, kin.loop_forces, joint_names=names,
                            loop_names=list(spec.model.loop_names))
    legend = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert legend == ["ground-crank joint |F| [N]", "ground-piston joint |F| [N]", "crank-rod joint |F| [N]",
                      "loop wrist pin |F| [N]"]
    fig = rm.plot.draw(spec.model, kin.q[2])
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_aspect()) == ("x [m]", "y [m]", 1.0)
    fig = rm.plot.overview(kin)  # as rmbd plot draws it: mechanism, coordinates, driving torque, reactions
    assert [ax.get_ylabel() for ax in fig.axes] == ["y [m]", "joint angle [rad]", "joint position [m]",
                                                    "driving force [N m]", "reaction force [N]"]


def test_damped_runs_plot_the_energy_balance_not_the_energy_change():
    spec = rm.io.load(ROOT / "examples" / "models" / "two_squares.toml")
    res = rm.simulate(spec.model, spec.q0, spec.qd0, 0.5, t_eval=np.linspace(0, 0.5, 11))
    kinetic, potential = res.energy()
    total = kinetic + potential
    assert res.dissipated_work[-1] > 1e-3  # the damper worked
    fig = rm.plot.energy(res.t, total, dissipated_work=res.dissipated_work, applied_work=res.applied_work)
    ax = fig.axes[0]
    (line,) = ax.get_lines()[:1]
    np.testing.assert_allclose(line.get_ydata(), res.energy_balance(), rtol=0, atol=1e-12)
    assert ax.get_ylabel() == "energy balance [J]"
    assert "dissipated" in ax.get_legend().get_texts()[1].get_text()
    fig = rm.plot.energy(res.t, total)  # without the work terms: E - E0, said so
    assert fig.axes[0].get_ylabel() == "E(t) - E(0) [J]"


def test_rods_are_bars_between_their_joints_and_the_tip_rod_reaches_its_free_end():
    n, length = 4, 2.0
    model = rm.chains.serial_chain(n, length=length)
    q = np.array([0.3, -0.5, 0.2, 0.9])
    outline = rm.plot.Outline(model)
    bars = outline.place(q)["bars"]
    # independent reference: joint positions of the chain from the absolute angles (DESIGN.md chain convention)
    theta = np.cumsum(q)
    step = length / n * np.column_stack((np.sin(theta), -np.cos(theta)))
    joints = np.vstack((np.zeros(2), np.cumsum(step, axis=0)))
    assert bars.shape == (n, 2, 2)
    for i in range(n):
        ends = sorted(map(tuple, bars[i].round(12)))
        assert np.allclose(ends, sorted(map(tuple, joints[i:i + 2].round(12))), atol=1e-12)
    assert outline.polygons == [] and outline.supports[0][0] == "pin"


def test_the_piston_is_a_block_on_its_axis_and_the_spring_reaches_its_points():
    spec = rm.io.load(ROOT / "examples" / "models" / "slider_crank.toml")
    outline = rm.plot.Outline(spec.model)
    placed = outline.place(spec.q0)
    piston = spec.model.body_index("piston")
    (block,) = [v for b, v in zip(outline.polygon_body, placed["polygons"], strict=True) if b == piston]
    position = rm.forward_kinematics(spec.model, spec.q0)[0][piston, :2]
    np.testing.assert_allclose(block.mean(axis=0), position, atol=1e-12)
    assert np.ptp(block[:, 0]) > np.ptp(block[:, 1]) > 0  # longer along the horizontal sliding axis
    assert [kind for kind, _, _, _ in outline.supports].count("guide") == 1

    spec = rm.io.load(ROOT / "examples" / "models" / "two_squares.toml")
    q = np.array([0.4, -0.3])
    placed = rm.plot.Outline(spec.model).place(q)
    assert len(placed["polygons"]) == 2  # the squares, as squares
    for square in placed["polygons"]:
        sides = np.hypot(*np.diff(np.vstack((square, square[:1])), axis=0).T)
        np.testing.assert_allclose(sides, 2.0, rtol=1e-12)
    lines = placed["springs"][0]
    pose = rm.forward_kinematics(spec.model, q)[0][1]
    c, s = np.cos(pose[2]), np.sin(pose[2])
    end_a = pose[:2] + np.array([c - s * -1.0, s + c * -1.0])  # point (1, -1) of body2
    np.testing.assert_allclose(lines[0][0], end_a, atol=1e-12)
    np.testing.assert_allclose(lines[1][-1], (4.0, 0.0), atol=1e-12)
    assert len(lines) > 6  # zig-zag and dashpot beside each other


def test_rmbd_plot_reads_statics_and_modes_results(tmp_path):
    for kind in ("statics", "modes"):
        text = (ROOT / "examples" / "models" / "two_squares.toml").read_text()
        (tmp_path / f"{kind}.toml").write_text(text[:text.index("[analysis]")] + f'[analysis]\ntype = "{kind}"\n')
        assert rmbd("run", f"{kind}.toml", cwd=tmp_path)[0] == 0
        code, out = rmbd("plot", f"{kind}.npz", "-o", f"{kind}.png", cwd=tmp_path)
        assert code == 0, out
        assert (tmp_path / f"{kind}.png").read_bytes()[:4] == b"\x89PNG"


def test_rmbd_info_of_a_long_chain_is_a_summary(tmp_path):
    rm.io.save(rm.chains.serial_chain(1000), tmp_path / "chain.toml")
    code, out = rmbd("info", "chain.toml", cwd=tmp_path)
    lines = out.splitlines()
    assert code == 0 and len(lines) < 15, out
    assert "1000 bodies" in lines[0] and "1000 revolute" in out
    assert "body link1:" in out and "body link1000:" in out and "994 more bodies" in out


def test_static_reactions_are_arrows_at_the_joints_the_weight_below_at_the_support():
    model = rm.chains.serial_chain(3, length=1.5, mass=2.0)
    eq = rm.static_equilibrium(model, np.full(3, 0.1))
    np.testing.assert_allclose(eq.q, 0.0, atol=1e-9)
    fig = rm.plot.draw(model, eq.q)
    arrows = rm.plot.reaction_arrows(model, eq.q, eq.reactions.joint, fig.axes[0])
    # hanging straight down: joints at y = 0, -0.5, -1.0; the support carries the whole weight m g upwards
    np.testing.assert_allclose(arrows.get_offsets(), [(0.0, 0.0), (0.0, -0.5), (0.0, -1.0)], atol=1e-9)
    np.testing.assert_allclose(np.column_stack((arrows.U, arrows.V)),
                               [(0.0, 2.0 * 9.81), (0.0, 2.0 * 9.81 * 2 / 3), (0.0, 2.0 * 9.81 / 3)], atol=1e-8)
    assert "19.62 N" in arrows.get_label()


def test_joint_springs_are_a_coil_round_the_hinge_and_a_zig_zag_along_the_slide():
    model = rm.Model()
    model.add_body("ground", "prismatic", (0, 0), (0, 0), mass=2.0, inertia=0.1, axis=(1, 0), name="cart")
    model.add_body("cart", "revolute", (0, 0), (0, 0.5), mass=1.0, inertia=1 / 12, name="pole")
    model.add_joint_spring_damper("pole", 1.0, 0.1)
    model.add_joint_spring_damper("cart", 1.0, 0.1)
    outline = rm.plot.Outline(model)
    coil, slide = outline.place(np.array([0.4, 0.3]))["springs"]
    radius = np.hypot(*(coil[0] - (0.4, 0.0)).T)  # the coil winds round the hinge at the cart's point (0.4, 0)
    assert 0 < radius.min() < radius.max() <= outline.size
    np.testing.assert_allclose(slide[0][0], (0.0, 0.0), atol=1e-12)  # from the guide's point to the cart's
    np.testing.assert_allclose(slide[1][-1], (0.4, 0.0), atol=1e-12)


def test_snapshots_colour_and_name_each_body_time_by_opacity_and_the_title_names_model_and_method():
    spec = rm.io.load(ROOT / "examples" / "models" / "slider_crank.toml")
    kin = rm.kinematic_analysis(spec.model, spec.drivers, np.linspace(0.0, 0.02, 5), spec.q0)
    fig = rm.plot.overview(kin)
    assert fig._suptitle.get_text() == "slider-crank: kinematic analysis, t = 0 to 0.02 s"
    for ax in fig.axes:  # one unit per axis, in brackets at the end of the label
        assert ax.get_ylabel().count("[") == 1 and ax.get_ylabel().endswith("]"), ax.get_ylabel()
    ax = fig.axes[0]
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend[:3] == ["crank", "piston", "rod"] and legend[3:] == [f"t = {t:.3g} s" for t in kin.t[[0, 1, 3, 4]]]
    bars = [c for c in ax.collections if type(c).__name__ == "LineCollection" and c.get_linewidths()[0] == 5.0]
    outline = rm.plot.Outline(spec.model)
    assert len(bars) == 4 and list(outline.bar_body) == [0, 2]  # crank and rod bars; the piston is a block
    colors = rm.plot.body_colors(3)
    for snapshot in bars:  # every snapshot: each bar in its body's colour, the same colour at every time
        np.testing.assert_array_equal(snapshot.get_colors()[:, :3], colors[[0, 2], :3])
    assert len({tuple(c) for c in colors}) == 3
    assert [round(c.get_alpha(), 6) for c in bars] == [0.4375, 0.625, 0.8125, 1.0]  # later is more opaque
    blocks = [c for c in ax.collections if type(c).__name__ == "PolyCollection"]
    np.testing.assert_array_equal(blocks[0].get_facecolors()[0, :3], colors[1, :3])  # the piston's colour

    spec = rm.io.load(ROOT / "examples" / "models" / "two_squares.toml")
    res = rm.simulate(spec.model, spec.q0, spec.qd0, 0.1, t_eval=np.linspace(0, 0.1, 3))
    fig = rm.plot.overview(res)
    assert fig._suptitle.get_text() == f"two squares: simulation ({res.method}), t = 0 to 0.1 s"


def test_a_long_chain_is_drawn_by_its_shape_with_the_angles_to_the_ground_of_a_few_links():
    n = 30
    model = rm.chains.serial_chain(n)
    t = np.linspace(0.0, 1.0, 4)
    q = np.outer(t + 0.5, np.linspace(0.2, -0.1, n))
    fig = rm.plot.overview({"kind": "dynamics", "t": t, "q": q}, model)
    shape, angles = fig.axes
    assert fig._suptitle.get_text() == "serial_chain(30): simulation, t = 0 to 1 s"
    assert [text.get_text() for text in shape.get_legend().get_texts()] == ["t = 0 s", "t = 0.333 s", "t = 0.667 s",
                                                                           "t = 1 s"]
    lines = angles.get_lines()
    links = [0, 7, 14, 22, 29]  # five spread along the chain, first and last kept
    assert [line.get_label() for line in lines] == [f"link{i + 1} absolute angle [rad]" for i in links]
    absolute = np.cumsum(q, axis=1)  # the chain convention: a link's angle to the ground sums the joint angles
    for line, i in zip(lines, links, strict=True):
        np.testing.assert_allclose(line.get_ydata(), absolute[:, i], rtol=0, atol=1e-14)
    assert angles.get_ylabel() == "absolute angle [rad]"


def test_spatial_bodies_are_drawn_between_their_joints_the_rssr_coupler_attached_at_both_ends():
    spec = rm.io.load(ROOT / "examples" / "models" / "spatial" / "rssr.toml")
    model, q = spec.model, spec.q0
    loop = model.loop("coupler")
    at = {name: rm.point_kinematics(model, q, np.zeros(model.nv), name, points)[0]
          for name, points in (("crank", [(0, 0, 0), loop["point_a"]]), ("rocker", [(0, 0, 0), loop["point_b"]]))}
    sticks = rm.plot.spatial_sticks(model, q)
    np.testing.assert_allclose(sticks["loops"][0], [at["crank"][1], at["rocker"][1]], rtol=0, atol=1e-15)
    for body, name in enumerate(("crank", "rocker")):  # each from its hinge to its end of the coupler
        (segment,) = sticks["segments"][sticks["segment_body"] == body]
        np.testing.assert_allclose(segment, at[name], rtol=0, atol=1e-15)
    fig = rm.plot.snapshot3d(model, q)
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.collections[0].get_colors(), rm.plot.body_colors(2))
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["crank", "rocker"]


def test_animations_play_in_real_time(tmp_path, capsys):
    index, fps = rm.plot.animation_frames(np.linspace(0.0, 10.0, 1001))  # 10 s sampled every 10 ms
    assert (len(index), fps, 1000 / fps) == (251, 25.0, 40.0)  # 10 s of playback, 40 ms a frame
    np.testing.assert_array_equal(index, np.arange(0, 1001, 4))
    index, fps = rm.plot.animation_frames(np.linspace(0.0, 10.0, 1001), speed=2.0)
    assert (len(index), fps, index[-1]) == (126, 25.0, 1000)
    index, fps = rm.plot.animation_frames(np.linspace(0.0, 10.0, 11))  # sparse samples: each one, 1 per second
    assert (len(index), fps) == (11, 1.0)
    index, fps = rm.plot.animation_frames(np.linspace(0.0, 10.0, 1001), frames=51)
    assert (len(index), fps) == (51, 5.0)
    path = tmp_path / "chain.gif"
    t = np.linspace(0.0, 0.2, 21)
    rm.plot.animate(rm.chains.serial_chain(2), t, np.outer(t, [1.0, -1.0]), path, progress=True)
    from PIL import Image  # noqa: PLC0415  (matplotlib's gif writer needs Pillow)

    with Image.open(path) as movie:
        assert (movie.n_frames, movie.info["duration"]) == (6, 40)
    assert "writing chain.gif" in capsys.readouterr().err  # the progress bar
    for bad in ({"fps": 0.0}, {"speed": -1.0}, {"frames": 0}):
        with pytest.raises(rm.StateError, match=next(iter(bad))):
            rm.plot.animation_frames(t, **bad)


def test_rmbd_animate_takes_the_fps_and_the_playback_speed(tmp_path):
    slider_crank_file(tmp_path, '[analysis]\ntype = "kinematics"\nt_end = 0.2\nsamples = 21\n')
    assert rmbd("run", "sc.toml", cwd=tmp_path)[0] == 0
    code, out = rmbd("animate", "sc.toml", "sc.npz", "-o", "sc.gif", "--fps", "10", "--speed", "0.5", cwd=tmp_path)
    assert code == 0, out
    from PIL import Image  # noqa: PLC0415

    with Image.open(tmp_path / "sc.gif") as movie:  # 0.2 s in slow motion: 0.4 s, a frame each 0.05 s of motion
        assert (movie.n_frames, movie.info["duration"]) == (5, 100)
    code, out = rmbd("animate", "sc.toml", "sc.npz", "-o", "sc.gif", "--speed", "0", cwd=tmp_path)
    assert code == 1 and "--speed must be > 0, got 0" in out, out


def test_spatial_contact_surfaces_are_drawn_in_their_plane_within_their_extent_and_the_view():
    spec = rm.io.load(ROOT / "examples" / "models" / "spatial" / "chain_on_table.toml")
    model, q = spec.model, spec.q0
    centre, half = np.array([0.1, 0.05, 0.0]), 0.2
    patches = dict(zip(("table", "side", "floor", "edge"), rm.plot.surface_patches3d(model, q, centre, half),
                       strict=False))
    for name in ("table", "side", "floor"):
        surface = model._surfaces[name]
        kind, corners = patches[name]
        assert kind == "ground" and corners.shape == (4, 3)
        offsets = corners - surface["point"]
        np.testing.assert_allclose(offsets @ surface["normal"], 0.0, rtol=0, atol=1e-15)  # in its plane
        t1 = surface["tangent"]
        for axis, (lo, hi) in zip((t1, np.cross(surface["normal"], t1)), surface["extent"], strict=True):
            along = offsets @ axis
            middle = axis @ (centre - surface["point"])  # within its extent and the view about the centre
            assert np.all(along >= max(lo, middle - half) - 1e-15) and np.all(along <= min(hi, middle + half) + 1e-15)
    assert patches["table"][1][:, 0].max() == pytest.approx(0.259, abs=1e-15)  # the table ends at its edge
    kind, rings = patches["edge"]
    drum = model._surfaces["edge"]
    assert kind == "drum" and rings.shape[0] == 2
    radial = rings - drum["center"] - ((rings - drum["center"]) @ drum["axis"])[..., None] * drum["axis"]
    np.testing.assert_allclose(np.linalg.norm(radial, axis=-1), drum["radius"], rtol=1e-14)
    fig = rm.plot.overview({"kind": "dynamics", "t": np.array([0.0, 0.1]), "q": np.vstack([q, q])}, model)
    ax = fig.axes[0]
    assert ax.name == "3d" and any(type(c).__name__ == "Poly3DCollection" for c in ax.collections)


def test_a_surface_carried_by_a_spatial_body_moves_with_it():
    model = rm.Model3D()
    model.add_body(joint="revolute", axis=(0.0, 0.0, 1.0), mass=1.0, inertia=0.1, name="turntable")
    model.add_ground("plate", point=(1.0, 0.0, 0.0), extent=((-0.5, 0.5), (-0.5, 0.5)), body="turntable")
    model.compile()
    (_, corners), = rm.plot.surface_patches3d(model, np.array([0.5 * np.pi]), np.zeros(3), 5.0)
    np.testing.assert_allclose(np.sort(corners[:, 0]), [-0.5, -0.5, 0.5, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.sort(corners[:, 1]), [0.5, 0.5, 1.5, 1.5], rtol=0, atol=1e-15)


def test_spatial_contact_forces_are_arrows_along_the_surface_normal_plus_friction():
    spec = rm.io.load(ROOT / "examples" / "models" / "spatial" / "chain_on_table.toml")
    model, q = spec.model, spec.q0
    rows = model.ncontacts
    assert model.contact_names[16] == "edge8"  # the first row on the drum (16 table rows before it)
    normal, tangential, point = np.zeros(rows), np.zeros((rows, 3)), np.zeros((rows, 3))
    normal[0], tangential[0], point[0] = 2.0, (0.5, 0.0, 0.0), (0.1, 0.0, 0.0)  # on the table: up plus friction
    normal[16], point[16] = 1.0, (0.27, 0.3, -0.02 + 0.01 * np.sqrt(3.0))  # on the drum, 60 degrees up its side
    normals = rm.plot.contact_normals3d(model, q, point)
    np.testing.assert_allclose(normals[0], [0.0, 0.0, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(normals[16], [0.5, 0.0, 0.5 * np.sqrt(3.0)], rtol=1e-14)
    fig = rm.plot.snapshot3d(model, q)
    ax = fig.axes[0]
    arrows = rm.plot.contact_arrows3d(model, q, normal, tangential, point, ax)
    assert "largest 2.062 N" in arrows.get_label()  # hypot(2, 0.5)
    shafts = np.array([segment for segment in arrows._segments3d])[:2]  # the two arrows' shafts (tip, tail)
    np.testing.assert_allclose(shafts[:, 1], point[[0, 16]], rtol=0, atol=1e-15)  # from the contact point
    directions = shafts[:, 0] - shafts[:, 1]
    np.testing.assert_allclose(directions[0] / np.linalg.norm(directions[0]), [0.5, 0.0, 2.0] / np.hypot(0.5, 2.0),
                               rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(directions[0]), 0.15 * np.ptp(ax.get_xlim()), rtol=1e-12)
    np.testing.assert_allclose(directions[1] / np.linalg.norm(directions[1]), normals[16], rtol=1e-12)
    data = {"kind": "dynamics", "t": np.array([0.0, 0.1]), "q": np.vstack([q, q]), "contact_normal": np.stack(
        [normal, normal]), "contact_tangential": np.stack([tangential, tangential]), "contact_point": np.stack(
        [point, point]), "contact_active": np.array([2, 2])}
    fig = rm.plot.overview(data, model)
    assert "largest 2.062 N" in fig.axes[0].get_legend().get_texts()[0].get_text()  # the arrows at the last sample
    assert fig.axes[-1].get_ylabel() == "touching contact rows [-]"  # the contacts' panel
