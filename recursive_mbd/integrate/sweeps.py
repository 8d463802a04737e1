"""Sweeps beyond one process: map a study over a parameter grid with Dask (``dask.distributed``).

    results = rm.sweep(study, [10, 20, 50, 100])                    # LocalCluster on this machine
    results = rm.sweep(study, {"n": [10, 20], "k": [1e3, 1e4]})      # grid of keyword arguments (product)
    results = rm.sweep(study, grid, client="tcp://scheduler:8786")   # a cluster's scheduler
    results = rm.sweep(study, grid, client=my_client)                # a distributed.Client of your own

Members are sent in chunks (``chunk`` members per task) so that the scheduling overhead (about a millisecond per
task) stays small against the work; results come back in grid order. The grid is streamed: a generator is read
as the cluster goes. A member that raises stops the sweep with an error naming its grid index and value. Dask is an
optional extra: ``pip install "dask[distributed]"`` (or ``pip install "recursive-mbd[dask]"``). Inside one process,
``rm.simulate_many`` and ``rm.batch`` already use every core; a sweep is for studies that are not one model's
ensemble (different n, different models) or that outgrow one machine.
"""

import collections
import itertools
import math

from .. import _checks

__all__ = ["sweep"]


def _require_distributed():
    try:
        import distributed  # noqa: PLC0415 - optional extra
    except ImportError as err:
        raise ModuleNotFoundError(f"rm.sweep needs dask.distributed: {_checks.install_hint('dask')}") from err
    return distributed


def grid_items(grid):
    """(items, size): the grid as a lazy iterator of (args, kwargs) and its number of points, or None when the grid
    does not know it (a generator). A dict of sequences is their product (keyword arguments, first key slowest), any
    other iterable gives one positional argument per item; neither is materialised."""
    if isinstance(grid, dict):
        names = list(grid)
        axes = []
        for name in names:
            if not hasattr(grid[name], "__len__"):  # an endless generator would never end the product
                raise TypeError(f"grid[{name!r}] must be a sequence of values (a dict grid is the product of its "
                                f"sequences), got {type(grid[name]).__name__}")
            axes.append(list(grid[name]))
        size = math.prod(len(axis) for axis in axes)
        return (((), dict(zip(names, combo, strict=True))) for combo in itertools.product(*axes)), size
    try:
        points = iter(grid)
    except TypeError:
        raise TypeError(f"grid must be an iterable of values or a dict of sequences, got {type(grid).__name__}") \
            from None
    try:
        size = len(grid)
    except TypeError:
        size = None
    return (((point,), {}) for point in points), size


def run_chunk(function, items, first):
    """Run ``function`` on a chunk of grid items (on a worker): [(True, value) or (False, grid index, message)].
    Anything a study raises is reported, SystemExit included (it would otherwise end the worker process)."""
    out = []
    for offset, (args, kwargs) in enumerate(items):
        try:
            out.append((True, function(*args, **kwargs)))
        except BaseException as err:  # noqa: BLE001 - reported with the grid index in the caller
            out.append((False, first + offset, f"{type(err).__name__}: {err}"))
            break
    return out


def sweep(function, grid, client=None, chunk=None, progress=None):
    """``[function(item) for item in grid]`` on a Dask cluster, in grid order.

    Parameters
    ----------
    function : callable
        The study of one grid point; it and its results must pickle (module-level functions, or closures that
        cloudpickle can send).
    grid : iterable or dict of sequences
        The grid points (one positional argument each), or a dict name -> values whose product is the grid
        (keyword arguments). The grid is streamed, never held whole: a generator is read as the cluster takes its
        points, a few tasks ahead of the results.
    client : None, str or distributed.Client
        None starts a ``LocalCluster`` of worker processes on this machine (one per core, one thread each) and
        closes it afterwards; a string is a scheduler address; a Client is used as it is (a closed one is refused).
    chunk : int, optional
        Grid points per task (an integer >= 1: TypeError or StateError otherwise); default: about four tasks per
        worker for a grid of known size, else one.
    progress : bool, optional
        A progress bar over the grid points (tqdm, the ``progress`` extra); default: only when stderr is a terminal.

    Returns
    -------
    list
        The results in grid order.

    Raises
    ------
    RuntimeError
        When a study raises (anything, SystemExit included: the message names its grid index and value), or when a
        task fails on the cluster (a worker that died: a study that called ``os._exit``, crashed or ran out of
        memory; a lost scheduler): the grid points of the task are named.
    """
    distributed = _require_distributed()
    if not callable(function):
        raise TypeError(f"function must be callable, got {function!r}")
    items, size = grid_items(grid)
    if chunk is not None:  # checked before a cluster starts
        chunk = _checks.integer(chunk, "chunk", low=1)
    if size == 0:
        return []
    owned = []
    try:
        if client is None:
            cluster = distributed.LocalCluster(threads_per_worker=1, processes=True, dashboard_address=None)
            owned.append(cluster)
            client = distributed.Client(cluster)
            owned.append(client)
        elif isinstance(client, str):
            client = distributed.Client(client)
            owned.append(client)
        elif not isinstance(client, distributed.Client):
            raise TypeError(f"client must be None, a scheduler address or a distributed.Client, got {client!r}")
        elif client.status in ("closing", "closed"):
            raise ValueError(f"client is {client.status}: pass an open distributed.Client, a scheduler address or "
                             "None (a LocalCluster)")
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        if chunk is None:
            chunk = 1 if size is None else max(1, math.ceil(size / (4 * workers)))
        from .runs import progress_bar  # noqa: PLC0415  (the run machinery loads numba: only once a sweep runs)

        return _stream(client, function, items, chunk, 8 * workers, progress_bar(progress, size, "sweep", "point"))
    finally:
        for resource in reversed(owned):
            resource.close()


def _stream(client, function, items, chunk, window, bar):
    """Submit the grid chunk by chunk, at most ``window`` tasks in flight, and collect the results in grid order."""
    pending = collections.deque()  # (future, first grid index, the chunk's items)
    results = []
    start = 0
    try:
        while True:
            while len(pending) < window:
                block = list(itertools.islice(items, chunk))
                if not block:
                    break
                pending.append((client.submit(run_chunk, function, block, start, pure=False), start, block))
                start += len(block)
            if not pending:
                return results
            future, first, block = pending.popleft()
            try:
                records = future.result()
            except Exception as err:  # noqa: BLE001 - the cluster's failure (a study's own is in its record)
                raise RuntimeError(
                    f"sweep: the task of grid items {first} to {first + len(block) - 1} ({_describe(block[0])}, ...) "
                    f"failed on the cluster: {type(err).__name__}: {err} (a worker died: a study that called os._exit, "
                    "crashed or ran out of memory; or the scheduler was lost)") from err
            for record in records:
                if not record[0]:
                    _, index, message = record
                    raise RuntimeError(f"sweep: grid item {index} ({_describe(block[index - first])}) raised "
                                       f"{message}")
                results.append(record[1])
            if bar is not None:
                bar.update(len(records))
    finally:
        if pending:
            client.cancel([future for future, _, _ in pending])
        if bar is not None:
            bar.close()


def _describe(item):
    args, kwargs = item
    return ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())])
