"""Where the compiled kernels are cached (``recursive_mbd._kernels.cache``): one folder per version and kernel
source, found by every install of that source; numba's own NUMBA_CACHE_DIR wins; saves into it are locked."""

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core import caching

import recursive_mbd
from recursive_mbd import cli, warmup
from recursive_mbd._kernels import cache

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "recursive_mbd"

_WHERE = ("from recursive_mbd._kernels.timeloops import integrators; "
          "print(integrators.integrate_adaptive._cache.cache_path)")


def _cache_path_seen_by(package_parent, env_extra):
    """The cache folder of the adaptive time loop, as a fresh process importing ``package_parent``'s copy sees it
    (importing compiles nothing)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "RECURSIVE_MBD_CACHE_DIR")}
    env.update(env_extra, PYTHONPATH=str(package_parent))
    out = subprocess.run([sys.executable, "-c", _WHERE], env=env, capture_output=True, text=True, check=True,
                         cwd=package_parent)
    return Path(out.stdout.strip())


def _copy_package(target):
    shutil.copytree(PACKAGE, target / "recursive_mbd", ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_every_module_with_cached_kernels_installs_the_locator_before_declaring_them():
    declaring = re.compile(r"cache=True|NJIT_OPTIONS|\*\*entry\.OPTIONS")
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if path.name == "cache.py" or not declaring.search(text):
            continue
        installs = re.search(r"^from \.+(_kernels)? import cache as _cache", text, re.M)
        assert installs, f"{path.relative_to(ROOT)} declares cached kernels without importing _kernels.cache"
        first_kernel = re.search(r"^@|^\w+ = numba\.(njit|cfunc)", text, re.M)
        assert first_kernel is None or installs.start() < first_kernel.start(), path


def test_two_installs_of_one_source_share_one_folder_and_a_changed_kernel_gets_another(tmp_path):
    shared = tmp_path / "cache"
    first = _copy_package(tmp_path / "site-packages")
    second = _copy_package(tmp_path / "clone")
    seen = [_cache_path_seen_by(where, {"RECURSIVE_MBD_CACHE_DIR": str(shared)}) for where in (first, second)]
    assert seen[0] == seen[1]
    assert seen[0].relative_to(shared).parts == (f"{recursive_mbd.__version__}-{cache.source_key()}", "_kernels",
                                                 "timeloops")
    # the command line (no compiled code) may change without a new folder
    cli_module = first / "recursive_mbd" / "cli.py"
    cli_module.write_text(cli_module.read_text() + "\n# changed; numba is named here but not imported\n")
    assert _cache_path_seen_by(first, {"RECURSIVE_MBD_CACHE_DIR": str(shared)}) == seen[0]
    # a kernel that changes (a callee linked into other files' kernels) moves every kernel to a new folder
    tree = second / "recursive_mbd" / "_kernels" / "planar" / "tree.py"
    tree.write_text(tree.read_text() + "\n# changed\n")
    changed = _cache_path_seen_by(second, {"RECURSIVE_MBD_CACHE_DIR": str(shared)})
    assert changed.parent.parent != seen[0].parent.parent
    assert changed.parent.parent.parent == shared


def test_numba_cache_dir_takes_precedence(tmp_path):
    seen = _cache_path_seen_by(_copy_package(tmp_path / "install"), {"NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    assert seen.is_relative_to(tmp_path / "numba")


def test_stale_folders_of_other_sources_are_removed_and_the_current_one_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("RECURSIVE_MBD_CACHE_DIR", str(tmp_path))
    current = tmp_path / f"{cache.VERSION}-{cache.source_key()}"
    old, recent = tmp_path / "0.0.9-000000000000", tmp_path / "0.1.0-111111111111"
    users = tmp_path / "photos"  # the folder may be one the user chose: only cache folders are candidates
    for folder in (current, old, recent, users):
        folder.mkdir()
    for folder in (old, current, users):
        os.utime(folder, (0, 0))
    assert cache.remove_other_sources(older_than_days=30) == [old]
    assert current.exists() and recent.exists() and not old.exists()
    assert cache.remove_other_sources() == [recent]
    assert current.exists() and users.exists()


@pytest.mark.skipif(cache.fcntl is None, reason="no fcntl on this platform: numba's saves are not locked there")
def test_saves_into_the_package_folder_and_only_there_hold_the_index_lock(monkeypatch, tmp_path):
    folder = cache.cache_folder()
    if folder is None:
        pytest.skip("NUMBA_CACHE_DIR is set: numba's own folders, which are not locked")
    calls, saved = [], []
    monkeypatch.setattr(cache.fcntl, "flock", lambda stream, operation: calls.append(operation))
    monkeypatch.setattr(cache, "_numba_save", lambda index, key, data: saved.append((key, list(calls))))
    ours = caching.IndexDataCacheFile(str(folder), "test_lock-1.py311", b"stamp")
    caching.IndexDataCacheFile.save(ours, "ours", b"data")
    Path(ours._index_path + ".lock").unlink()
    assert saved == [("ours", [cache.fcntl.LOCK_EX])]
    assert calls == [cache.fcntl.LOCK_EX, cache.fcntl.LOCK_UN]
    elsewhere = caching.IndexDataCacheFile(str(tmp_path), "test_lock-1.py311", b"stamp")
    caching.IndexDataCacheFile.save(elsewhere, "elsewhere", b"data")
    assert saved[1:] == [("elsewhere", calls[:2])] and len(calls) == 2


def test_rmbd_compile_lists_its_jobs_refuses_unknown_ones_and_runs_one(capsys):
    assert cli.main(["compile", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(warmup.JOBS)
    assert cli.main(["compile", "--only", "dopri6"]) == 1
    assert "unknown compile job 'dopri6'; the jobs: planar-dynamics, dopri5" in capsys.readouterr().err
    assert cli.main(["compile", "--jobs", "0"]) == 1
    # a job runs in its own process and reports its CPU time (the suite has compiled these kernels already)
    assert cli.main(["compile", "--only", "planar-dynamics", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "[1/1] planar-dynamics: planar forward and inverse dynamics" in out and "done: 1 jobs" in out


def _hook_modules():
    """The kernel modules that implement a time-loop hook: an ``overload`` of a function of ``timeloops`` (named as
    ``formulation.rhs`` or imported by name from a ``timeloops`` module)."""
    found = set()
    for path in (PACKAGE / "_kernels").rglob("*.py"):
        tree = ast.parse(path.read_text())
        hooks = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and "timeloops" in (node.module or "") for a in node.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "overload" and node.args:
                target = node.args[0]
                name = target.value.id if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    else getattr(target, "id", None)
                if name in hooks and "timeloops" not in path.parts:
                    found.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return sorted(found)


def test_every_formulations_hooks_are_registered_before_a_run_types_a_time_loop():
    # A cached kernel's index written by a process that ran two formulations names both system types; numba loads
    # it while typing a time loop, which imported the other formulation's module there and changed its hooks'
    # type mid-typing: "Cannot unify Function(rhs) and Function(rhs)", a run that failed after another had run.
    hooks = _hook_modules()
    assert {"recursive_mbd._kernels.planar.system", "recursive_mbd._kernels.augmented.system",
            "recursive_mbd._kernels.spatial.bdf"} <= set(hooks)
    for entry in ("recursive_mbd.integrate.simulate", "recursive_mbd.integrate.ensemble"):
        code = f"import sys, {entry}; print([m for m in {hooks!r} if m not in sys.modules])"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "[]", (entry, out.stdout)
