"""SimulationResult.save / load: every field round-trips, the name given is the name written, and a damaged or
foreign file gives one clear ResultFileError (issue 12, item 6)."""

import os

import numpy as np
import pytest
from _helpers import damaged_copies, spherical_pendulum_with_elements

import recursive_mbd as rm
from recursive_mbd import ResultFileError, SimulationError, SimulationResult
from recursive_mbd.integrate.result import read_npz
from recursive_mbd.model import chains


def falling(t, q, qd):
    return q[0]


falling.direction = -1.0


@pytest.fixture(scope="module")
def event_run():
    """A run with two event functions (one never crossing), statistics and work."""
    model = chains.serial_chain(2)

    def never(t, q, qd):
        return 1.0

    res = rm.simulate(model, [0.4, -0.2], [0.0, 0.0], 1.5, events=[falling, never], tau=lambda t: [0.1, 0.0])
    assert res.t_events[0].size == 1 and res.t_events[1].size == 0
    return model, res


def assert_same(loaded, res):
    for name in ("t", "q", "qd", "dissipated_work", "applied_work"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(res, name), err_msg=name)
    for name in ("method", "status", "nfev", "nsteps", "nrejected"):
        assert getattr(loaded, name) == getattr(res, name), name
    assert len(loaded.t_events) == len(res.t_events)
    for a, b in zip(loaded.t_events + loaded.q_events + loaded.qd_events,
                    res.t_events + res.q_events + res.qd_events, strict=True):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    for name in ("constraint_drift", "z", "zd"):
        if getattr(res, name, None) is None:
            assert getattr(loaded, name, None) is None, name
        else:
            np.testing.assert_array_equal(getattr(loaded, name), getattr(res, name), err_msg=name)


def assert_every_field_round_trips(loaded, res):
    """Every public attribute a result has (whatever a method adds, so a field added later cannot be dropped by
    save silently) is on the loaded result, equal; the model is the one given to load."""
    fields = {name for name in vars(res) if not name.startswith("_")} - {"model"}
    assert fields <= set(vars(loaded)), fields - set(vars(loaded))
    for name in fields:
        want, got = getattr(res, name), getattr(loaded, name)
        if isinstance(want, list):
            assert len(got) == len(want), name
            for a, b in zip(got, want, strict=True):
                assert a.shape == b.shape and np.array_equal(a, b), name
        elif isinstance(want, np.ndarray):
            assert got.shape == want.shape and np.array_equal(got, want, equal_nan=True), name
        else:
            assert type(got) is type(want) and got == want, name
    return fields


def test_every_field_of_every_method_round_trips(tmp_path, event_run):
    """Runs whose methods add fields (bdf: Newton statistics and the order limit; generalized_alpha: Newton
    statistics, on a spatial model also the contraction factors), a planar and a spatial one, with events."""
    model, res = event_run
    pendulum, q0, v0 = spherical_pendulum_with_elements()[:3]
    runs = [(model, res), (model, rm.simulate(model, [0.4, -0.2], [0.0, 0.0], 0.3, method="bdf")),
            (model, rm.simulate(model, [0.4, -0.2], [0.0, 0.0], 0.3, method="generalized_alpha", dt=0.01)),
            (pendulum, rm.simulate(pendulum, q0, v0, 0.1, method="generalized_alpha", dt=0.01, events=falling))]
    limited = rm.simulate(model, [0.4, -0.2], [0.0, 0.0], 0.3, method="bdf")
    limited.order_limited_at = float(limited.t[3])  # a time, as bdf's stability limit detection records it
    runs.append((model, limited))
    seen = set()
    for i, (owner, run) in enumerate(runs):
        run.save(tmp_path / f"run{i}.npz")
        seen |= assert_every_field_round_trips(SimulationResult.load(tmp_path / f"run{i}.npz", owner), run)
        assert_every_field_round_trips(SimulationResult.load(tmp_path / f"run{i}.npz"), run)  # no model: the same
    assert {"newton_iterations", "newton_factorizations", "newton_contraction", "newton_contraction_max",
            "newton_split_steps", "order_limited_at", "multipliers", "t_events"} <= seen
    assert SimulationResult.load(tmp_path / "run1.npz").order_limited_at is None
    assert SimulationResult.load(tmp_path / "run4.npz").order_limited_at == limited.t[3]


def test_every_field_of_a_run_with_events_round_trips(tmp_path, event_run):
    model, res = event_run
    res.save(tmp_path / "run.npz")
    loaded = SimulationResult.load(tmp_path / "run.npz", model)
    assert_same(loaded, res)
    assert loaded.status == "finished" and loaded.nfev > 0 and loaded.nsteps > 0
    np.testing.assert_allclose(loaded.energy_balance(), res.energy_balance(), rtol=0, atol=1e-15)
    assert SimulationResult.load(tmp_path / "run.npz").body_names == model.body_names  # without the model


def test_status_drift_and_augmented_coordinates_round_trip(tmp_path):
    model, q0 = rm.models.four_bar()
    for formulation in ("recursive", "augmented"):
        res = rm.simulate(model, q0, np.zeros(3), 0.2, formulation=formulation, rtol=1e-8, atol=1e-10)
        assert res.constraint_drift is not None
        assert (getattr(res, "z", None) is not None) == (formulation == "augmented")
        res.save(tmp_path / f"{formulation}.npz")
        assert_same(SimulationResult.load(tmp_path / f"{formulation}.npz", model), res)


@pytest.mark.parametrize("status", ["failed", "time_limit", "event"])
def test_the_status_of_a_stopped_run_round_trips(tmp_path, status):
    model = chains.serial_chain(2)
    if status == "event":
        falling.terminal = True
        try:
            res = rm.simulate(model, [0.4, 0.0], [0.0, 0.0], 3.0, events=falling)
        finally:
            del falling.terminal
    else:
        with pytest.raises(SimulationError) as info:
            rm.simulate(model, [0.4, 0.0], [0.0, 0.0], 1e3, max_steps=20 if status == "failed" else 10**7,
                        max_wall_time=None if status == "failed" else 0.05, rtol=1e-13)
        res = info.value.result
    assert res.status == status
    res.save(tmp_path / "stopped.npz")
    assert_same(SimulationResult.load(tmp_path / "stopped.npz", model), res)


def test_the_name_given_is_the_name_written(tmp_path, event_run):
    model, res = event_run
    res.save(tmp_path / "run.dat")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.dat"]
    assert_same(SimulationResult.load(str(tmp_path / "run.dat"), model), res)


def test_foreign_files_are_refused_by_name(tmp_path, event_run):
    model, res = event_run
    toml = tmp_path / "model.toml"
    toml.write_text("[[body]]\nname = 'a'\n")
    with pytest.raises(ResultFileError, match=r"model.toml: not a result file \(expected the .npz") as info:
        SimulationResult.load(toml)
    assert "allow_pickle" not in str(info.value)
    np.savez(tmp_path / "cli.npz", kind=np.array("dynamics"), t=np.zeros(2))
    with pytest.raises(ResultFileError, match="cli.npz: a file of `rmbd run`"):
        SimulationResult.load(tmp_path / "cli.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(2))
    with pytest.raises(ResultFileError, match="other.npz: not a result file of SimulationResult.save"):
        SimulationResult.load(tmp_path / "other.npz")
    with pytest.raises(ResultFileError, match="not a regular file"):
        SimulationResult.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        SimulationResult.load(tmp_path / "missing.npz")


def test_read_npz_refuses_what_rmbd_cannot_plot_without_blocking(tmp_path):
    toml = tmp_path / "model.toml"
    toml.write_text("[[body]]\n")
    with pytest.raises(ResultFileError, match=r"model.toml: not a result file \(expected the .npz that `rmbd run` "
                       "writes\\)"):
        read_npz(toml)
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    with pytest.raises(ResultFileError, match="pipe.npz: not a regular file"):
        read_npz(fifo)
    np.savez(tmp_path / "cli.npz", kind=np.array("statics"), q=np.zeros(3))
    assert read_npz(tmp_path / "cli.npz")["kind"] == "statics"


def test_shapes_are_checked_against_the_model(tmp_path, event_run):
    model, res = event_run
    res.save(tmp_path / "run.npz")
    same_names = rm.Model()  # link2 on a planar joint: 4 coordinates
    same_names.add_body(parent="ground", joint="revolute", child_point=(0.0, 0.5), mass=1.0, inertia=0.1,
                        name="link1")
    same_names.add_body(parent="link1", joint="planar", parent_point=(0.0, -0.5), child_point=(0.0, 0.5), mass=1.0,
                        inertia=0.1, name="link2")
    with pytest.raises(ResultFileError, match=r"run.npz: entry 'q' has shape \(\d+, 2\), expected \(\d+, 4\)"):
        SimulationResult.load(tmp_path / "run.npz", same_names)
    with pytest.raises(ResultFileError, match="run.npz: the result's bodies .* do not match"):
        SimulationResult.load(tmp_path / "run.npz", chains.serial_chain(3))
    renamed = rm.Model()
    renamed.add_body(parent="ground", joint="revolute", child_point=(0.0, 0.5), mass=1.0, inertia=0.1, name="a")
    renamed.add_body(parent="a", joint="revolute", parent_point=(0.0, -0.5), child_point=(0.0, 0.5), mass=1.0,
                     inertia=0.1, name="b")
    with pytest.raises(ResultFileError, match="bodies .* do not match"):
        SimulationResult.load(tmp_path / "run.npz", renamed)
    # a file whose arrays disagree with each other (written by hand, CRCs intact)
    with np.load(tmp_path / "run.npz") as data:
        arrays = dict(data)
    arrays["qd"] = arrays["qd"][:-1]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ResultFileError, match=r"bad.npz: entry 'qd' has shape"):
        SimulationResult.load(tmp_path / "bad.npz", model)


def test_flipped_bytes_and_truncations_give_one_error_or_a_correct_load(tmp_path, event_run):
    model, res = event_run
    path = tmp_path / "run.npz"
    res.save(path)
    damaged = tmp_path / "damaged.npz"
    outcomes = {"error": 0, "correct": 0}
    cases = damaged_copies(path.read_bytes())
    for case in cases:
        damaged.write_bytes(case)
        try:
            loaded = SimulationResult.load(damaged, model)
        except ResultFileError as err:
            assert str(err).startswith(str(damaged))
            assert "allow_pickle" not in str(err)
            outcomes["error"] += 1
        else:
            assert_same(loaded, res)  # a flip in a part that carries no data (a timestamp, a comment)
            outcomes["correct"] += 1
    assert outcomes["error"] > 0.8 * len(cases)


def test_a_save_that_fails_leaves_no_partial_file(tmp_path, event_run, monkeypatch):
    _, res = event_run

    def broken(file, **arrays):  # writes half an archive, then the disk is full
        if isinstance(file, (str, bytes)) or hasattr(file, "__fspath__"):
            with open(file, "wb") as handle:
                handle.write(b"PK\x03\x04 half an archive")
        else:
            file.write(b"PK\x03\x04 half an archive")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        res.save(tmp_path / "run.npz")
    assert list(tmp_path.iterdir()) == []


def spatial_run():
    """A short run of a spherical pendulum (its q holds a quaternion): (model, result)."""
    model, q0, v0 = spherical_pendulum_with_elements()[:3]
    return model, rm.simulate(model, q0, v0, 0.1, method="generalized_alpha", dt=0.01)


def test_quaternions_that_are_not_unit_are_refused_naming_sample_and_body(tmp_path):
    model, res = spatial_run()
    res.save(tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz") as data:
        arrays = dict(data)
    assert arrays["quaternions"].tolist() == [[0, 0]]
    edited = dict(arrays, q=arrays["q"].copy())
    edited["q"][4, :4] *= 1.001
    np.savez(tmp_path / "edited.npz", **edited)
    for given in (model, None):  # the layout is stored: checked with the model and without
        with pytest.raises(ResultFileError, match=r"edited.npz: entry 'q': sample 4 \(t = 0.04 s\): the quaternion "
                           r"of body 'body0' \(q\[0:4\]\) has norm 1.001"):
            SimulationResult.load(tmp_path / "edited.npz", given)
    np.savez(tmp_path / "moved.npz", **dict(arrays, quaternions=np.zeros((0, 2), dtype=np.int64)))
    with pytest.raises(ResultFileError, match="moved.npz: entry 'quaternions' does not match the model's"):
        SimulationResult.load(tmp_path / "moved.npz", model)
    np.savez(tmp_path / "outside.npz", **dict(arrays, quaternions=np.array([[0, 1]])))
    with pytest.raises(ResultFileError, match="outside.npz: entry 'quaternions' names bodies or columns outside"):
        SimulationResult.load(tmp_path / "outside.npz")
    np.savez(tmp_path / "lost.npz", **{k: v for k, v in arrays.items() if k != "quaternions"})
    with pytest.raises(ResultFileError, match="lost.npz: entry 'quaternions' is missing"):
        SimulationResult.load(tmp_path / "lost.npz")
    assert_every_field_round_trips(SimulationResult.load(tmp_path / "run.npz"), res)


def test_inconsistent_statistics_are_refused_by_name(tmp_path, event_run):
    model, res = event_run
    res = rm.simulate(model, [0.4, -0.2], [0.0, 0.0], 0.3, method="bdf")
    res.save(tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz") as data:
        arrays = dict(data)
    for name, value, words in (("newton_iterations", np.array(-3), "'newton_iterations' is -3"),
                               ("newton_factorizations", np.array(2.5), "'newton_factorizations' has dtype"),
                               ("order_limited_at", np.array([0.1, 0.2]), "'order_limited_at'"),
                               ("order_limited_at", np.array([5.0]), "'order_limited_at'"),
                               ("version", np.array(4), "version 4, this library reads version 3 \\(and 1, 2\\)")):
        np.savez(tmp_path / "bad.npz", **dict(arrays, **{name: value}))
        with pytest.raises(ResultFileError, match=f"bad.npz: .*{words}"):
            SimulationResult.load(tmp_path / "bad.npz", model)


def test_files_of_the_first_version_are_read(tmp_path, event_run):
    """A version 1 file (no Newton statistics, no quaternion layout) loads; with a spatial model its quaternions
    are checked by the model's layout."""
    model, res = event_run
    res.save(tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz") as data:
        arrays = {k: v for k, v in data.items() if k != "quaternions"}
    np.savez(tmp_path / "v1.npz", **dict(arrays, version=np.array(1)))
    assert_same(SimulationResult.load(tmp_path / "v1.npz", model), res)
    pendulum, spatial = spatial_run()
    spatial.save(tmp_path / "spatial.npz")
    with np.load(tmp_path / "spatial.npz") as data:
        arrays = {k: v for k, v in data.items() if k != "quaternions"}
    arrays["q"] = arrays["q"] * 2.0
    np.savez(tmp_path / "v1.npz", **dict(arrays, version=np.array(1)))
    with pytest.raises(ResultFileError, match="v1.npz: entry 'q': sample 0 .* has norm 2"):
        SimulationResult.load(tmp_path / "v1.npz", pendulum)
