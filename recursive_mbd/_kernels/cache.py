"""Where numba caches this package's compiled kernels: one folder per version and kernel source, shared by installs.

numba caches a function beside its source by default (``__pycache__``), so every install of the package (a
``pip install .`` into site-packages, an editable install of the clone, a second virtual environment) compiles
every kernel again, for minutes. This module registers a cache locator, ahead of numba's own, for the functions
defined in this package: their machine code goes to ::

    <user cache folder>/recursive_mbd/<version>-<source key>/<subpackage path>/

(``~/.cache/recursive_mbd/...`` on Linux, ``~/Library/Caches/recursive_mbd/...`` on macOS, the local AppData folder
on Windows; ``RECURSIVE_MBD_CACHE_DIR`` replaces the user cache folder). The source key is a hash of the text of
every module that holds compiled code: the kernels (``_kernels``) and every other module that imports numba. Any
install of the same source therefore finds the same machine code, whatever its path; numba's index inside keys
each entry on the signature and on the machine (the CPU name and features), so machines sharing a home folder do
not collide.

Keying on the whole source, not on each file as numba does, is also what keeps the cache right: numba links a
kernel's callees into its machine code, so a changed callee in one file must invalidate its callers in others,
which numba's per-file stamps do not see. Folders of other sources that nobody has used for
``STALE_DAYS`` days are removed when a new one is made (``rmbd compile --clear`` removes them all).

Several processes may compile into the folder at once (``rmbd compile`` runs its jobs in parallel; so do test
runners): numba's save of an entry (read the function's index, pick a data file name, write both) is not atomic,
and two processes saving different signatures of one function at the same moment can leave an index entry pointing
at the other signature's machine code. Saves into this package's folders therefore hold an exclusive lock on the
function's index (``fcntl.flock``, where the platform has it).

``NUMBA_CACHE_DIR`` (numba's own setting) and ``NUMBA_CACHE_LOCATOR_CLASSES`` take precedence: set, numba caches
where it says and this locator steps aside.
"""

import functools
import hashlib
import os
import re
import shutil
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: numba's saves as they are
    fcntl = None

from numba.core import caching, config
from numba.misc.appdirs import AppDirs

from .. import __version__ as VERSION

PACKAGE_DIR = Path(__file__).resolve().parent.parent
STALE_DAYS = 30
_CACHE_FOLDER_NAME = re.compile(r"[0-9A-Za-z.+!_]+-[0-9a-f]{12}")  # <version>-<source key>


_IMPORTS_NUMBA = re.compile(rb"^[ \t]*(import numba|from numba)", re.M)


@functools.cache
def source_key():
    """A 12-digit hash of the modules that hold compiled code (their paths in the package and their text): every
    module of ``_kernels`` and every other module that imports numba."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = path.relative_to(PACKAGE_DIR)
        text = path.read_bytes()
        if relative.parts[0] == "_kernels" or _IMPORTS_NUMBA.search(text):
            digest.update(relative.as_posix().encode() + b"\0" + text + b"\0")
    return digest.hexdigest()[:12]


def cache_base():
    """The folder holding the cache folders of every version and source (``RECURSIVE_MBD_CACHE_DIR`` if set)."""
    base = os.environ.get("RECURSIVE_MBD_CACHE_DIR")
    if base:
        return Path(base).expanduser()
    return Path(AppDirs(appname="recursive_mbd", appauthor=False).user_cache_dir)


@functools.cache
def cache_folder():
    """This source's cache folder, or None when numba's own settings decide where the cache goes."""
    if config.CACHE_DIR or config.CACHE_LOCATOR_CLASSES:
        return None
    folder = cache_base() / f"{VERSION}-{source_key()}"
    try:
        new = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)  # marks the folder used (see remove_other_sources)
    except OSError:
        return None  # not writable: numba's locators (in the source tree, then numba's user folder) take over
    if new:
        remove_other_sources(older_than_days=STALE_DAYS)
    return folder


def remove_other_sources(older_than_days=0.0):
    """Remove the cache folders of other versions or sources unused for ``older_than_days`` days; returns them.
    Only folders named as this module names them (``<version>-<12 hex digits>``) are candidates: the base folder may
    be one the user chose (``RECURSIVE_MBD_CACHE_DIR``) and hold other things."""
    current = cache_base() / f"{VERSION}-{source_key()}"
    limit = time.time() - older_than_days * 86400.0
    removed = []
    try:
        candidates = list(cache_base().iterdir())
    except OSError:
        return removed
    for folder in candidates:
        try:
            stale = (_CACHE_FOLDER_NAME.fullmatch(folder.name) is not None and folder.is_dir() and folder != current
                     and folder.stat().st_mtime < limit)
        except OSError:
            continue
        if stale:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


class PackageCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba cache locator of the functions defined in this package (see the module docstring)."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        subpackage = Path(py_file).resolve().parent.relative_to(PACKAGE_DIR)
        self._cache_path = str(cache_folder().joinpath(subpackage))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            Path(py_file).resolve().relative_to(PACKAGE_DIR)
        except ValueError:
            return None  # not this package's function (a user's callback): numba's own locators
        if cache_folder() is None:
            return None
        return super().from_function(py_func, py_file)


# numba's own save (``__wrapped__`` when this module is imported again and the class is already patched)
_numba_save = getattr(caching.IndexDataCacheFile.save, "__wrapped__", caching.IndexDataCacheFile.save)


def _save_locked(self, key, data):
    """numba's ``IndexDataCacheFile.save``, under an exclusive lock of the index when it is one of this package's."""
    folder = cache_folder()
    if fcntl is None or folder is None or not self._cache_path.startswith(str(folder)):
        return _numba_save(self, key, data)
    with open(self._index_path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _numba_save(self, key, data)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


_save_locked.__wrapped__ = _numba_save


def install():
    """Put ``PackageCacheLocator`` first in numba's list of locators and lock the saves into its folders (once)."""
    locators = caching.CacheImpl._locator_classes
    if PackageCacheLocator not in locators:
        locators.insert(0, PackageCacheLocator)
    caching.IndexDataCacheFile.save = _save_locked


# The options of a kernel that only compiled code calls: compiled without numba's wrappers that make a function
# callable from Python (the CPython wrapper, which unboxes every argument and boxes the result, and the C wrapper).
# For a helper taking a time loop's system, a NamedTuple of some 40 arrays, the unboxing is a large part of what it
# compiles; without the wrappers a first ``rm.simulate`` compiles a tenth less. The arithmetic is the same. Such a
# kernel cannot be called from Python (numba finds no entry point: the process crashes), so only helpers that no
# Python code calls take them: the time loops' steps and bookkeeping and the formulations' overloads.
CALLEE = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


# Importing this module installs the locator: every module that defines cached kernels imports it first.
install()
