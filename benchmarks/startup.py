"""Start-up cost: with a warm numba cache (``import recursive_mbd``, a first call, ``rmbd --help``, ``rmbd info``)
and, with ``--cold``, the compilation each first use costs from an empty cache.

    python3 benchmarks/startup.py [--repeats 7] [--cold]

Warm: each command runs ``--repeats`` times in a fresh interpreter after one warm-up run (which fills the numba
cache if it is empty). Prints the median wall time of each, the import time that ``python -X importtime`` reports
for the package, and the heavy modules that ``import recursive_mbd`` loads.

Cold (``--cold``): each first use (the main job, the first planar and spatial forward dynamics, the first
``rm.simulate``, each Python block of README.md) runs once in a fresh interpreter with a cache folder of its own,
empty (``RECURSIVE_MBD_CACHE_DIR``; NUMBA_CACHE_DIR unset), and its CPU time (user + system of the process: the
compilation, and the little computing the command does) is printed beside the target it has. Writes
benchmarks/results/startup.json.
"""

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import print_table, write_json

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "models" / "double_pendulum.toml"
FIRST_CALL = ("import numpy as np, recursive_mbd as rm; m = rm.chains.serial_chain(10); "
              "rm.forward_dynamics(m, np.zeros(10), np.zeros(10))")
HEAVY = ("numba", "scipy", "scipy.sparse", "matplotlib", "tqdm", "recursive_mbd.files.io", "recursive_mbd.cli")


def environment():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def wall(argv, repeats):
    """Median wall time and median CPU time (user + system: close to the wall time on an idle machine) [s]."""
    env = environment()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def import_time(repeats):
    """Median of the cumulative import time of recursive_mbd reported by -X importtime [s]."""
    samples = []
    for _ in range(repeats):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import recursive_mbd"], env=environment(),
                             check=True, capture_output=True, text=True).stderr
        line = [row for row in err.splitlines() if re.search(r"\|\s*recursive_mbd$", row)][-1]
        samples.append(int(line.split("|")[1]) * 1e-6)
    return statistics.median(samples)


SPATIAL_FIRST_CALL = ("import numpy as np, recursive_mbd as rm; m = rm.models.heavy_top(); "
                      "rm.forward_dynamics(m, m.neutral(), np.zeros(3))")
FIRST_SIMULATE = ("import numpy as np, recursive_mbd as rm; m = rm.chains.serial_chain(3); "
                  "rm.simulate(m, np.full(3, 0.3), np.zeros(3), 1.0)")
# first use: (command, target CPU seconds from an empty cache)
COLD = {
    "main job (python -m recursive_mbd)": ([sys.executable, "-m", "recursive_mbd"], 20.0),
    "first rm.forward_dynamics, planar": ([sys.executable, "-c", FIRST_CALL], 3.0),
    "first rm.forward_dynamics, spatial": ([sys.executable, "-c", SPATIAL_FIRST_CALL], 5.0),
    "first rm.simulate (dopri5)": ([sys.executable, "-c", FIRST_SIMULATE], 10.0),
}


def readme_blocks():
    """The Python blocks of README.md, as the test suite runs them."""
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def cold_cpu(argv, folder):
    """CPU time (user + system) of one run of ``argv`` in a fresh interpreter with an empty cache ``folder`` [s]."""
    env = environment()
    env.pop("NUMBA_CACHE_DIR", None)
    env["RECURSIVE_MBD_CACHE_DIR"] = str(folder)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, check=True, capture_output=True, cwd=folder)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def cold():
    """{first use: (CPU seconds from an empty cache, target)}."""
    commands = dict(COLD)
    for number, block in enumerate(readme_blocks(), 1):
        commands[f"README block {number}"] = ([sys.executable, "-c", block], 20.0)
    results = {}
    for name, (argv, target) in commands.items():
        with tempfile.TemporaryDirectory() as folder:
            results[name] = (cold_cpu(argv, folder), target)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument("--cold", action="store_true", help="also the CPU time of each first use from an empty cache")
    args = parser.parse_args()
    compiled = cold() if args.cold else {}
    probe = f"import sys, recursive_mbd; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], env=environment(), check=True, capture_output=True,
                            text=True).stdout.split()
    importtime = import_time(args.repeats)
    results = {
        "python -c 'import recursive_mbd'": wall([sys.executable, "-c", "import recursive_mbd"], args.repeats),
        "python -c 'import numpy'": wall([sys.executable, "-c", "import numpy"], args.repeats),
        "import + first forward_dynamics": wall([sys.executable, "-c", FIRST_CALL], args.repeats),
        "rmbd --help": wall([sys.executable, "-m", "recursive_mbd", "--help"], args.repeats),
        "rmbd info double_pendulum.toml": wall([sys.executable, "-m", "recursive_mbd", "info", str(MODEL)],
                                               args.repeats),
    }
    print(f"start-up, warm numba cache, median of {args.repeats} runs [s] (load average {os.getloadavg()[0]:.1f})")
    print(f"python -X importtime: recursive_mbd {importtime:.4f} s")
    print_table(["command", "wall [s]", "CPU [s]"], [[k, f"{w:.3f}", f"{c:.3f}"] for k, (w, c) in results.items()])
    print("heavy modules loaded by `import recursive_mbd`: " + (", ".join(loaded) or "none"))
    if compiled:
        print("\nfirst use from an empty cache: CPU time [s] (one run each)")
        print_table(["first use", "CPU [s]", "target [s]"],
                    [[k, f"{c:.1f}", f"{t:g}"] for k, (c, t) in compiled.items()])
    write_json("startup", {"repeats": args.repeats, "importtime_s": importtime,
                           "wall_s": {k: w for k, (w, _) in results.items()},
                           "cpu_s": {k: c for k, (_, c) in results.items()}, "heavy_modules_on_import": loaded,
                           "cold_cpu_s": {k: c for k, (c, _) in compiled.items()},
                           "cold_target_s": {k: t for k, (_, t) in compiled.items()}})


if __name__ == "__main__":
    main()
