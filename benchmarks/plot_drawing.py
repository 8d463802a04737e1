"""Cost of drawing a long chain with ``rm.plot``: the outline (once per model), placing it at one q, and drawing and
writing a PNG (matplotlib's rendering of N bars).

    python3 benchmarks/plot_drawing.py [--sizes 1000 10000 100000]

Prints a table; writes benchmarks/results/plot_drawing.json. Needs matplotlib (the extra ``plot``).
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import median_time, print_table, write_json

import recursive_mbd as rm


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    args = parser.parse_args()
    rows, records = [], []
    with tempfile.TemporaryDirectory() as folder:
        for n in args.sizes:
            model = rm.chains.serial_chain(n).compile()
            q = np.full(n, 3.0 / n)
            outline_s = median_time(lambda model=model: rm.plot.Outline(model), repeats=3)
            outline = rm.plot.Outline(model)
            place_s = median_time(lambda outline=outline, q=q: outline.place(q), repeats=5)
            start = time.perf_counter()
            rm.plot.draw(model, q, outlines=outline).savefig(Path(folder) / "chain.png", dpi=60)
            draw_s = time.perf_counter() - start
            rows.append((n, f"{outline_s * 1e3:.1f}", f"{place_s * 1e3:.2f}", f"{draw_s:.2f}"))
            records.append({"n": n, "outline_s": outline_s, "place_s": place_s, "draw_and_save_s": draw_s})
    print_table(["N", "outline [ms]", "place [ms]", "draw + PNG [s]"], rows)
    print(f"wrote {write_json('plot_drawing', {'rows': records})}")


if __name__ == "__main__":
    main()
