"""Compiling says so: an INFO record of the logger "recursive_mbd" as numba starts compiling a kernel of this package,
once per kernel and argument types (the kernels it calls are part of it), none for a kernel loaded or compiled
already, none for kernels of others. The probe is a tiny kernel compiled without cache, so the test costs a tenth
of a second instead of a first run's compiles."""

import logging
from collections import namedtuple

import numba
import numpy as np
from _helpers import PROBE_NOTICE, uncompiled_probe

from recursive_mbd._kernels import compile_notice


def _messages(caplog, level):
    return [record.getMessage() for record in caplog.records if record.name == "recursive_mbd"
            and record.levelno == level]


def test_a_compile_is_announced_once_per_kernel_and_argument_types(caplog):
    caplog.set_level(logging.DEBUG, logger="recursive_mbd")
    probe = uncompiled_probe()
    assert probe(1.0) == 4.0 and probe(2.0) == 6.0  # compiled at the first call only
    assert _messages(caplog, logging.INFO) == [PROBE_NOTICE]  # the inner kernel, compiled within, not apart
    debug = _messages(caplog, logging.DEBUG)
    assert len(debug) == 1 and debug[0].startswith("compiled the kernel probe for planar models in "), debug
    caplog.clear()
    assert probe(np.int64(1)) == 4.0  # new argument types: compiled again, and said again
    assert _messages(caplog, logging.INFO) == [PROBE_NOTICE]
    caplog.clear()
    assert numba.njit(lambda x: x - 1.0)(1.0) == 0.0  # not this package's kernel
    assert caplog.records == []


def test_the_time_loops_are_named_with_the_models_they_run():
    def integrate_adaptive():
        pass

    integrate_adaptive.__module__ = "recursive_mbd._kernels.timeloops.integrators"
    system = numba.typeof(namedtuple("SpatialSystem", ["x"])(1.0))
    assert compile_notice.describe(integrate_adaptive, (numba.float64, system)) == (
        "the adaptive Runge-Kutta time loop (dopri5, dop853) for spatial models")
    assert compile_notice.describe(integrate_adaptive, ()) == "the adaptive Runge-Kutta time loop (dopri5, dop853)"
