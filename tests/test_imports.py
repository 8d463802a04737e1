"""Importing the package is cheap and complete: lazy names (PEP 562), nothing heavy loaded, one BLAS thread in rmbd."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import recursive_mbd as rm

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "numba", "scipy", "scipy.sparse", "matplotlib", "tqdm", "recursive_mbd.files.io", "recursive_mbd.cli")


def _python(code, **env):
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=environment, cwd=ROOT).stdout.split()


def test_import_loads_nothing_heavy():
    # numpy too: rmbd sets the BLAS thread count after importing the package and before numpy loads OpenBLAS
    loaded = _python(f"import sys, recursive_mbd; print(*[m for m in {HEAVY!r} if m in sys.modules])")
    assert loaded == [], f"import recursive_mbd loaded {loaded}"


def test_help_loads_no_kernels():
    code = ("import contextlib, io, sys\nfrom recursive_mbd import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    cli.main(['--help'])\n"
            "print('loaded:', *[m for m in ('numba', 'scipy', 'matplotlib', 'tqdm') if m in sys.modules])")
    assert _python(code) == ["loaded:"]


@pytest.mark.parametrize("name", rm.__all__)
def test_every_public_name_resolves(name):
    value = getattr(rm, name)
    assert value is getattr(rm, name)
    assert name in dir(rm)
    if name in rm._SUBMODULES:
        assert value.__name__ == f"recursive_mbd.{rm._SUBMODULES[name]}"
    else:
        assert getattr(value, "__name__", name) == name or name == "METHODS"


def test_public_tables_match_all():
    errors = {"ModelError", "ResultFileError", "SimulationError", "StateError"}
    assert sorted(rm.__all__) == sorted({*errors, *rm._SUBMODULES, *rm._LAZY_NAMES})
    assert len(rm.__all__) == len(set(rm.__all__))


def test_lazy_names_are_the_defining_objects():
    from recursive_mbd import Model, simulate  # noqa: PLC0415  (from-import goes through __getattr__)
    from recursive_mbd.integrate.simulate import simulate as defined_simulate  # noqa: PLC0415
    from recursive_mbd.model.planar import Model as DefinedModel  # noqa: PLC0415

    assert simulate is defined_simulate and Model is DefinedModel
    assert rm.chains.serial_chain(2).nq == 2


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'simulat'"):
        rm.simulat  # noqa: B018
    assert not hasattr(rm, "DESIGN")


def test_command_line_chooses_one_blas_thread_unless_set():
    code = "import os, recursive_mbd.__main__, numpy; print(os.environ['OPENBLAS_NUM_THREADS'])"
    assert _python(code) == ["1"]
    assert _python(code, OPENBLAS_NUM_THREADS="2") == ["2"]
