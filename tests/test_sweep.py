"""rm.sweep: a parameter grid mapped over a Dask LocalCluster gives the serial loop's numbers in grid order."""

import itertools
import os
import sys

import distributed  # the dask extra, part of the test extra
import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd.integrate.sweeps import grid_items, run_chunk


def first_frequency(n, stiffness=0.0):
    """First small-oscillation frequency [rad/s] of serial_chain(n) with a joint spring on its first joint."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    length = 1.0 / n
    model = rm.Model()
    for i in range(n):  # uniform rods of mass 1/n hanging along -y, as serial_chain(n)
        model.add_body(i - 1, parent_point=(0.0, 0.0 if i == 0 else -length / 2), child_point=(0.0, length / 2),
                       mass=1.0 / n, inertia=length * length / (12.0 * n))
    model.add_joint_spring_damper(0, stiffness=stiffness)
    return float(rm.modes(model.compile(), np.zeros(n))[0][0])


def test_grid_items_are_positional_or_a_keyword_product_streamed():
    items, size = grid_items([3, 4])
    assert list(items) == [((3,), {}), ((4,), {})] and size == 2
    items, size = grid_items({"n": [1, 2], "k": [0.5]})
    assert list(items) == [((), {"n": 1, "k": 0.5}), ((), {"n": 2, "k": 0.5})] and size == 2
    items, size = grid_items({"n": range(10**6), "k": range(10**6)})  # 1e12 points: streamed, never held
    assert next(items) == ((), {"n": 0, "k": 0}) and next(items) == ((), {"n": 0, "k": 1}) and size == 10**12
    items, size = grid_items(itertools.count())  # endless
    assert list(itertools.islice(items, 3)) == [((0,), {}), ((1,), {}), ((2,), {})] and size is None
    with pytest.raises(TypeError, match="grid must be"):
        grid_items(3)
    with pytest.raises(TypeError, match=r"grid\['n'\] must be a sequence"):
        grid_items({"n": itertools.count()})
    assert run_chunk(lambda x: 1 / x, [((2,), {}), ((0,), {}), ((1,), {})], 10)[1][:2] == (False, 11)
    assert run_chunk(sys.exit, [((3,), {})], 4) == [(False, 4, "SystemExit: 3")]  # not the end of the worker


def _exit_at_three(n):
    if n == 3:
        os._exit(1)  # the worker process dies
    return n


def _fails_at_five(n):
    if n == 5:
        raise ValueError("five")
    return n


@pytest.mark.parametrize("chunk, error", [(2.7, TypeError), ("2", TypeError), (True, TypeError), (0, rm.StateError),
                                          (-3, rm.StateError)])
def test_a_bad_chunk_is_refused_before_a_cluster_starts(chunk, error):
    with pytest.raises(error, match="chunk must be an integer"):  # int(2.7) = 2 and int("2") were taken
        rm.sweep(first_frequency, [2, 3], client=object(), chunk=chunk)


def test_local_cluster_of_two_processes_gives_the_serial_numbers_in_grid_order():
    import cloudpickle  # noqa: PLC0415 - ships with distributed

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    grid = {"n": [2, 3, 5], "stiffness": [0.0, 2.0, 20.0]}
    serial = [first_frequency(**kwargs) for _, kwargs in grid_items(grid)[0]]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        swept = rm.sweep(first_frequency, grid, client=client, chunk=2)
        with pytest.raises(RuntimeError, match=r"grid item 1 \(0\) raised ValueError"):
            rm.sweep(first_frequency, [2, 0, 3], client=client, chunk=1)
        # an endless grid streams until a study fails; SystemExit is a study's failure, not the worker's end
        with pytest.raises(RuntimeError, match=r"grid item 5 \(5\) raised ValueError: five"):
            rm.sweep(_fails_at_five, itertools.count(), client=client)
        with pytest.raises(RuntimeError, match=r"grid item 0 \(2\) raised SystemExit: 2"):
            rm.sweep(sys.exit, [2, 0], client=client)
        with pytest.raises(RuntimeError, match=r"the task of grid items 2 to 3 \(3, ...\) failed on the cluster: "
                                               r"KilledWorker.*a worker died"):  # the scheduler retried, then gave up
            rm.sweep(_exit_at_three, [1, 2, 3, 4], client=client, chunk=2)
        assert rm.sweep(_fails_at_five, [1, 2], client=client) == [1, 2]  # the cluster works on
        # the studies fan out through rm.sweep with client=
        frequencies = rm.studies.frequency_study([2, 4, 8], k=2, client=client)
        catenary = rm.studies.catenary_study([4, 6, 8], span=0.6, client=client)
        falls = rm.studies.folded_chain_study([6, 8], gap=0.1, rtol=1e-8, atol=1e-10, samples=50, client=client)
    assert np.array_equal(frequencies["omega"], rm.studies.frequency_study([2, 4, 8], k=2)["omega"])
    assert np.array_equal(catenary["sag"], rm.studies.catenary_study([4, 6, 8], span=0.6)["sag"])
    serial_falls = rm.studies.folded_chain_study([6, 8], gap=0.1, rtol=1e-8, atol=1e-10, samples=50)
    assert [f["fall_time"] for f in falls] == [f["fall_time"] for f in serial_falls]
    assert np.array_equal(falls[1]["speed"], serial_falls[1]["speed"])
    assert swept == serial  # the same numbers, bit for bit, in grid order
    assert serial[0] < serial[1] < serial[2]  # a stiffer spring raises the first frequency
    with pytest.raises(ValueError, match="client is closed"):
        rm.sweep(first_frequency, [2], client=client)


def test_without_dask_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now fails
    with pytest.raises(ModuleNotFoundError, match=r'pip install "dask\[distributed\]" \(or pip install '
                                                  r'"recursive-mbd\[dask\]"; in a clone of the repository: '
                                                  r'pip install -e "\.\[dask\]"\)'):
        rm.sweep(first_frequency, [2])
