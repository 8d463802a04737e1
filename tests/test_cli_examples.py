"""The main job and the examples run and report what they promise."""

import io
import subprocess
import sys
from pathlib import Path

import pytest

from recursive_mbd import cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(path.name for path in (ROOT / "examples").glob("*.py") if not path.name.startswith("_"))
PLOTTING_EXAMPLES = ("chain_fountain.py", "chain_studies.py", "formulations.py", "four_bar.py", "governor.py",
                     "two_squares.py", "whirling_chain.py")


def test_demo_reports_energy_error_and_speed():
    out = io.StringIO()
    err_double, err_chain = cli.demo(n_links=50, t_end_chain=0.2, out=out)
    text = out.getvalue()
    assert "double pendulum" in text and "50-link chain" in text
    assert "steps/s" in text and "simulated s per wall s" in text and "max |E(t) - E(0)|" in text
    assert err_double < 1e-8 and err_chain < 1e-6


def test_cli_rejects_bad_arguments():
    assert cli.main(["demo", "--links", "0"]) == 1  # an error in the input
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo", "--links", "many"])
    assert exit_info.value.code == 1


def test_module_entry_point_help():
    out = subprocess.run([sys.executable, "-m", "recursive_mbd", "--help"], capture_output=True, text=True,
                         check=True)
    assert "demo" in out.stdout


def test_examples_run(tmp_path):
    figure = tmp_path / "four_bar.png"
    for script, args in (("double_pendulum.py", []), ("long_chain.py", ["100", "0.05"]),
                         ("formulations.py", ["3", "0.2"]), ("two_squares.py", []),
                         ("four_bar.py", ["2", "--plot", str(figure)]), ("slider_crank.py", []),
                         ("pinned_chain.py", ["12", "1"]), ("chain_studies.py", ["--quick"])):
        out = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True,
                             text=True, check=True, timeout=300)
        assert "energy" in out.stdout.lower() or "E(t)" in out.stdout or "drift" in out.stdout
        assert "nan" not in out.stdout.lower(), (script, out.stdout)  # every number printed is a result
    assert figure.stat().st_size > 1000


def test_examples_are_all_listed():
    assert len(EXAMPLES) >= 8 and set(PLOTTING_EXAMPLES) <= set(EXAMPLES)
    assert {"flip_map.py", "stiffness_sweep.py"} <= set(EXAMPLES)  # the ensemble examples get the --help test


@pytest.mark.parametrize("script", EXAMPLES)
def test_example_help(script):
    """--help prints the usage and the example's description, and runs nothing."""
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script), "--help"], capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: ") and out.stderr == ""
    # the docstring's whole first paragraph, not cut at the end of its first line, before the options
    summary = " ".join((ROOT / "examples" / script).read_text().split('"""')[1].split("\n\n")[0].split())
    shown = " ".join(out.stdout.split())
    assert summary in shown and shown.index(summary) < shown.index("options:"), (summary, out.stdout)


@pytest.mark.parametrize("script", PLOTTING_EXAMPLES)
def test_example_plot_without_matplotlib_says_how_to_install_before_simulating(script, tmp_path):
    # matplotlib made unimportable (None in sys.modules) in a fresh interpreter that runs the example as __main__
    runner = ("import os, runpy, sys\nsys.modules['matplotlib'] = None\n"
              "sys.argv = [sys.argv[1], '--plot', sys.argv[2]]\nsys.path.insert(0, os.path.dirname(sys.argv[0]))\n"
              "runpy.run_path(sys.argv[0], run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", runner, str(ROOT / "examples" / script), str(tmp_path / "figure")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 1, out.stderr
    assert 'pip install matplotlib (or pip install "recursive-mbd[plot]"; in a clone: pip install -e ".[plot]")' \
        in out.stderr
    assert out.stdout == ""  # it stopped before simulating anything
    assert list(tmp_path.iterdir()) == []


def test_formulations_quick(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "formulations.py"), "--quick"], capture_output=True,
                         text=True, check=True, timeout=120)
    assert "serial_chain(4)" in out.stdout and out.stdout.count("augmented, ") == 3
