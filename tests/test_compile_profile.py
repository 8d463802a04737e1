"""benchmarks/compile_profile.py census: the signatures a numba cache folder holds, and what sets each apart."""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _compile_profile():
    spec = importlib.util.spec_from_file_location("compile_profile", ROOT / "benchmarks" / "compile_profile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_census_counts_the_signatures_of_a_cache_and_names_what_sets_them_apart(tmp_path):
    """A cached kernel called with a C-contiguous matrix, its Fortran-ordered copy, a read-only copy and an int64
    scalar in place of a float leaves four signatures in its index: the census finds all four, one with no
    reason (the first) and the others as a layout, a writeability and a scalar type apart, each with the bytes of
    its machine code; a second kernel with one signature has no extra one."""
    (tmp_path / "kernels.py").write_text(
        textwrap.dedent("""
        import numba

        @numba.njit(cache=True)
        def weighted(a, w):
            return a[0, 1] * w

        @numba.njit(cache=True)
        def once(x):
            return x + 1.0
    """)
    )
    code = textwrap.dedent("""
        import numpy as np
        import kernels
        a = np.arange(6.0).reshape(2, 3)
        frozen = a.copy()
        frozen.flags.writeable = False
        for matrix, w in ((a, 2.0), (np.asfortranarray(a), 2.0), (frozen, 2.0), (a, 2)):
            kernels.weighted(matrix, w)
        kernels.once(1.0)
        print(len(kernels.weighted.signatures), len(kernels.once.signatures))
    """)
    cache = tmp_path / "cache"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["4", "1"]

    rows = _compile_profile().census(cache)
    weighted = [row for row in rows if "kernels.weighted" in row[0]]
    once = [row for row in rows if "kernels.once" in row[0]]
    assert len(weighted) == 4 and len(once) == 1 and len(rows) == 5
    assert sorted(str(row[3]) for row in weighted) == sorted(
        ["None", "array layout CF", "array readonly", "scalar float64 vs int64"]
    )
    assert once[0][3] is None
    assert all(row[2] > 0 for row in rows)  # the bytes of each signature's machine code
    report = _compile_profile().census_report(rows, top=5)
    assert report.startswith("5 signatures of 2 dispatchers") and "array layout CF" in report


def test_overlap_counts_the_signatures_several_processes_compiled_and_the_cpu_of_the_copies():
    """Two workers and a second run: a signature compiled by all three costs its two dearer copies, one compiled by
    two costs its dearer copy, another signature of the same dispatcher or a signature compiled twice in one
    process is no copy of another process's."""
    def row(name, args, cpu):
        return dict(name=name, args=args, seconds=cpu, self_seconds=cpu, self_cpu_seconds=cpu, test="t")

    processes = {
        "gw0": [row("k.a", ["float64"], 2.0), row("k.b", ["int64"], 1.0), row("k.b", ["int64"], 0.5)],
        "gw1": [row("k.a", ["float64"], 3.0), row("k.a", ["int64"], 4.0)],
        "bc": [row("k.a", ["float64"], 5.0), row("k.c", ["float64"], 6.0)],
    }
    per_process, distinct, shared, extra = _compile_profile().overlap(processes)
    assert per_process == [("gw0", 3, 3.5, 1), ("gw1", 2, 7.0, 1), ("bc", 2, 11.0, 1)]
    assert (distinct, shared) == (4, 1) and abs(extra - (3.0 + 5.0)) < 1e-12
    assert "4 distinct signatures; 1 compiled by more than one process, 8.0 s" in _compile_profile().overlap_report(
        processes)
