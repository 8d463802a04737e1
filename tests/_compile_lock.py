"""One compilation of each kernel signature for all the test processes of a run (pytest-xdist workers).

numba saves a compiled kernel to its disk cache only when the compilation ends, so two workers that need the same
kernel at about the same time (every worker starts with the planar forward dynamics and the time loops every test
file uses) both compile it: each the full tens of seconds, one of them for nothing. Here a worker holds an exclusive
file lock named after the kernel and the signature while it looks the signature up in the cache and compiles it;
another worker that needs the same signature waits on the lock and then loads the saved machine code instead of
compiling it again (numba's ``Dispatcher.compile`` looks in the cache first). Compilations of different signatures
go on in parallel.

A worker holds several locks at once only along a chain of calls (a kernel's callees compile while it is typed), and
kernels call no kernel that calls them back, so two workers never wait on each other's locks in a circle.

Installed only when the tests run in several processes sharing one cache (``install``); a single process has
nothing to share, and ``fcntl`` is POSIX only.
"""

import hashlib
import os
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: each worker compiles what it needs
    fcntl = None

from numba.core import dispatcher


def lock_folder(controller_pid):
    """The folder of lock files shared by the workers of the run that the process ``controller_pid`` controls."""
    return Path(tempfile.gettempdir()) / f"recursive_mbd-compile-locks-{os.getuid()}-{controller_pid}"


def install():
    """Wrap ``numba.core.dispatcher.Dispatcher.compile`` with the per-signature lock (once per process)."""
    compile_ = dispatcher.Dispatcher.compile
    if fcntl is None or getattr(compile_, "_recursive_mbd_lock", False):
        return
    folder = lock_folder(os.getppid())  # an xdist worker's parent is the controller
    folder.mkdir(parents=True, exist_ok=True)
    held = set()  # the keys this process holds: a signature typed again inside its own compilation (recursion)
    # takes no second lock, which would wait on the first

    def compile(self, sig):  # noqa: A001  (numba's name)
        function = self.py_func
        key = f"{function.__module__}.{function.__qualname__}:{sig}"
        if function.__module__.split(".")[0] != "recursive_mbd" or key in held:
            return compile_(self, sig)  # the tests' own jitted functions are not cached: nothing to share
        path = folder / hashlib.sha256(key.encode()).hexdigest()[:32]
        with open(path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            held.add(key)
            try:
                return compile_(self, sig)  # loads from the cache when another worker saved it meanwhile
            finally:
                held.discard(key)
                fcntl.flock(handle, fcntl.LOCK_UN)

    compile._recursive_mbd_lock = True
    dispatcher.Dispatcher.compile = compile
