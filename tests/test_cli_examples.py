"""The main job and the examples run and report what they promise."""

import io
import subprocess
import sys
from pathlib import Path

import pytest

from recursive_mbd import cli

ROOT = Path(__file__).resolve().parents[1]


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
                         ("formulations.py", ["3", "0.2"]), ("seed000_two_squares.py", []),
                         ("four_bar.py", ["2", "--plot", str(figure)]), ("slider_crank.py", []),
                         ("pinned_chain.py", ["12", "1"]), ("chain_studies.py", ["--quick"])):
        out = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True,
                             text=True, check=True, timeout=300)
        assert "energy" in out.stdout.lower() or "E(t)" in out.stdout or "drift" in out.stdout
    assert figure.stat().st_size > 1000
