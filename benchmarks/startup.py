"""Start-up cost with a warm numba cache: ``import recursive_mbd``, ``rmbd --help``, ``rmbd info``.

    python3 benchmarks/startup.py [--repeats 7]

Each command runs ``--repeats`` times in a fresh interpreter after one warm-up run (which fills the numba cache
if it is empty). Prints the median wall time of each, the import time that ``python -X importtime`` reports for
the package, and the heavy modules that ``import recursive_mbd`` loads; writes benchmarks/results/startup.json.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import print_table, write_json

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "models" / "double_pendulum.toml"
HEAVY = ("numba", "scipy", "scipy.sparse", "matplotlib", "tqdm", "recursive_mbd.io", "recursive_mbd.cli")


def environment():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def wall(argv, repeats):
    env = environment()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def import_time(repeats):
    """Median of the cumulative import time of recursive_mbd reported by -X importtime [s]."""
    samples = []
    for _ in range(repeats):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import recursive_mbd"], env=environment(),
                             check=True, capture_output=True, text=True).stderr
        line = [row for row in err.splitlines() if re.search(r"\|\s*recursive_mbd$", row)][-1]
        samples.append(int(line.split("|")[1]) * 1e-6)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs of each command (default 7)")
    args = parser.parse_args()
    probe = f"import sys, recursive_mbd; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], env=environment(), check=True, capture_output=True,
                            text=True).stdout.split()
    results = {
        "python -X importtime: recursive_mbd": import_time(args.repeats),
        "python -c 'import recursive_mbd'": wall([sys.executable, "-c", "import recursive_mbd"], args.repeats),
        "python -c 'import numpy'": wall([sys.executable, "-c", "import numpy"], args.repeats),
        "rmbd --help": wall([sys.executable, "-m", "recursive_mbd", "--help"], args.repeats),
        "rmbd info double_pendulum.toml": wall([sys.executable, "-m", "recursive_mbd", "info", str(MODEL)],
                                               args.repeats),
    }
    print(f"start-up, warm numba cache, median of {args.repeats} runs [s] (load average {os.getloadavg()[0]:.1f})")
    print_table(["command", "median [s]"], [[k, f"{v:.3f}"] for k, v in results.items()])
    print("heavy modules loaded by `import recursive_mbd`: " + (", ".join(loaded) or "none"))
    write_json("startup", {"repeats": args.repeats, "seconds": results, "heavy_modules_on_import": loaded})


if __name__ == "__main__":
    main()
