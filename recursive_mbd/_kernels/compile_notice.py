"""Says when numba compiles a kernel of this package: an INFO record of the logger "recursive_mbd", once per
kernel and argument types, as the compile starts (the command line prints it on stderr).

numba compiles a kernel at its first call with new argument types, unless its cache on disk holds the machine code
for them, which it then loads in a fraction of a second. A compile takes seconds to minutes, and a first call
would wait that long without a word. The record comes from a listener of numba's "numba:compile" events
(``numba.core.event``), which numba sends only when it compiles: never when it loads a kernel from its cache or
calls compiled code, so the calls cost nothing more. A kernel compiled while another is being compiled (a kernel
it calls) is part of that compile: only the outermost one is announced. The planar tree kernels (``planar.tree``)
import this module: every other kernel module imports them, but for the time loops (``timeloops.integrators``),
whose callers (``integrate.runs``) import the systems, which import them; so the listener is in place before any
kernel is called, and a light import (``layout``, ``joint_types``) loads no numba.
"""

import logging
import threading
import time

from numba.core import event

logger = logging.getLogger("recursive_mbd")

_PACKAGE = __name__.split(".")[0] + "."

# What the kernels users wait for are, by function name (the others are named by their function name)
_KERNELS = {
    "integrate_adaptive": "the adaptive Runge-Kutta time loop (dopri5, dop853)",
    "integrate_fixed": "the fixed-step time loop (rk4, implicit_midpoint)",
    "integrate_generalized_alpha": "the generalized_alpha time loop",
    "integrate_bdf": "the bdf time loop",
    "system_rhs": "the equations of motion of the time loops",
    "forward_dynamics_tree": "the forward dynamics",
    "forward_dynamics_revolute_tree": "the forward dynamics",
    "forward_dynamics_serial_tree": "the forward dynamics",
    "forward_dynamics_packed": "the forward dynamics",
    "_call_python": "the bridge from compiled time loops to Python functions",
}

# The formulation a kernel works on, by the type name of its system argument or a package of its module
_FORMULATIONS = {
    "RecursiveSystem": "planar models", "SpatialSystem": "spatial models",
    "AugmentedSystem": "the augmented formulation", "planar": "planar models", "spatial": "spatial models",
    "augmented": "the augmented formulation",
}


def describe(function, argument_types):
    """What compiling ``function`` for ``argument_types`` (numba types) makes, in words."""
    name = function.__name__
    what = _KERNELS.get(name, f"the kernel {name}")
    kinds = [getattr(getattr(kind, "instance_class", None), "__name__", "") for kind in argument_types]
    kinds += function.__module__.split(".")
    formulation = next((_FORMULATIONS[kind] for kind in kinds if kind in _FORMULATIONS), None)
    return what if formulation is None else f"{what} for {formulation}"


class CompileNotice(event.Listener):
    """The listener: an INFO record as an outermost compile of a kernel of this package starts, and a DEBUG record
    with its duration when it ends. The nesting is counted per thread (numba compiles in the calling thread)."""

    def __init__(self):
        self._local = threading.local()

    def on_start(self, ev):
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth:
            return  # compiled as part of the kernel being compiled, which is announced
        function = getattr(ev.data["dispatcher"], "py_func", None)
        self._local.announced = None
        if function is not None and str(getattr(function, "__module__", "")).startswith(_PACKAGE):
            self._local.announced = (describe(function, ev.data["args"]), time.perf_counter())
            logger.info("compiling %s (first use with these argument types; cached for later runs)",
                        self._local.announced[0])

    def on_end(self, ev):
        self._local.depth -= 1
        if self._local.depth == 0 and self._local.announced is not None:
            what, started = self._local.announced
            self._local.announced = None
            logger.debug("compiled %s in %.1f s", what, time.perf_counter() - started)


_LISTENER = CompileNotice()
event.register("numba:compile", _LISTENER)
