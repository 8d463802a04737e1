"""Sweeps beyond one process: map a study over a parameter grid with Dask (``dask.distributed``).

    results = rm.sweep(study, [10, 20, 50, 100])                    # LocalCluster on this machine
    results = rm.sweep(study, {"n": [10, 20], "k": [1e3, 1e4]})      # grid of keyword arguments (product)
    results = rm.sweep(study, grid, client="tcp://scheduler:8786")   # a cluster's scheduler
    results = rm.sweep(study, grid, client=my_client)                # a distributed.Client of your own

Members are sent in chunks (``chunk`` members per task) so that the scheduling overhead (about a millisecond per
task) stays small against the work; results come back in grid order. A member that raises stops the sweep with
an error naming its grid index and value. Dask is an optional extra: ``pip install "recursive-mbd[dask]"``.
Inside one process, ``rm.simulate_many`` and ``rm.batch`` already use every core; a sweep is for studies that
are not one model's ensemble (different n, different models) or that outgrow one machine.
"""

import itertools
import math
import sys

from .. import _checks

__all__ = ["sweep"]


def _require_distributed():
    try:
        import distributed  # noqa: PLC0415 - optional extra
    except ImportError as err:
        raise ModuleNotFoundError('rm.sweep needs dask.distributed: pip install "recursive-mbd[dask]"') from err
    return distributed


def grid_items(grid):
    """The grid as a list of (args, kwargs): a dict of sequences is their product (keyword arguments, first key
    slowest), any other iterable gives one positional argument per item."""
    if isinstance(grid, dict):
        names = list(grid)
        values = [list(grid[name]) for name in names]
        return [((), dict(zip(names, combo, strict=True))) for combo in itertools.product(*values)]
    try:
        return [((item,), {}) for item in grid]
    except TypeError:
        raise TypeError(f"grid must be an iterable of values or a dict of sequences, got {type(grid).__name__}") \
            from None


def run_chunk(function, items, first):
    """Run ``function`` on a chunk of grid items (on a worker): [(True, value) or (False, grid index, message)]."""
    out = []
    for offset, (args, kwargs) in enumerate(items):
        try:
            out.append((True, function(*args, **kwargs)))
        except Exception as err:  # noqa: BLE001 - reported with the grid index in the caller
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
        (keyword arguments).
    client : None, str or distributed.Client
        None starts a ``LocalCluster`` of worker processes on this machine (one per core, one thread each) and
        closes it afterwards; a string is a scheduler address; a Client is used as it is.
    chunk : int, optional
        Grid points per task (an integer >= 1: TypeError or StateError otherwise); default: about four tasks per
        worker.
    progress : bool, optional
        Dask's progress bar (``distributed.progress``); default: only when stderr is a terminal.

    Returns
    -------
    list
        The results in grid order.
    """
    distributed = _require_distributed()
    items = grid_items(grid)
    if not callable(function):
        raise TypeError(f"function must be callable, got {function!r}")
    if not items:
        return []
    if chunk is not None:  # checked before a cluster starts
        chunk = _checks.integer(chunk, "chunk", low=1)
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
        if chunk is None:
            workers = max(1, len(client.scheduler_info().get("workers", {})))
            chunk = max(1, math.ceil(len(items) / (4 * workers)))
        starts = range(0, len(items), chunk)
        futures = [client.submit(run_chunk, function, items[s:s + chunk], s, pure=False) for s in starts]
        if progress or (progress is None and sys.stderr.isatty()):
            distributed.progress(futures)
        results = []
        for future in futures:
            for record in future.result():
                if not record[0]:
                    _, index, message = record
                    raise RuntimeError(f"sweep: grid item {index} ({_describe(items[index])}) raised {message}")
                results.append(record[1])
        return results
    finally:
        for resource in reversed(owned):
            resource.close()


def _describe(item):
    args, kwargs = item
    return ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())])
