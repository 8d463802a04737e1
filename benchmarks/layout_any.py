"""The recursive forward dynamics on the model's column-major (F) arrays against the same arrays typed as strided (A).

    python3 benchmarks/layout_any.py [--sizes 1000 100000 1000000] [--rounds 5]

Why it exists: a one-body planar model's packed arrays (nbodies, k) are both C- and F-contiguous, numba types them
as C, and every kernel a one-body model reaches compiles a second specialisation beside the F one of every other
model (the census of ``compile_profile.py``: "array layout CF"). numba types an array F only when it is
F-contiguous and not C-contiguous, which no (1, k) array is, so the only layout that every model's arrays could
share is A (strided): the model's arrays and workspace as views of one more row than they hold. This script
measures what A costs: the generic ``tree.forward_dynamics`` kernel (on a serial chain it takes its serial
revolute passes) with the model's arrays and workspace as built (F) and as such views (A), timed in turn in each
round; the results are compared bit for bit. Prints the medians and writes
benchmarks/results/layout_any.json.
"""

import functools
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numba
import numpy as np
from _common import command_line, interleaved_samples, print_table, write_json

import recursive_mbd as rm
from recursive_mbd._kernels.planar import tree
from recursive_mbd.model.workspace import workspace


def strided(array):
    """``array`` as a view of one more row than it holds: the same values, typed by numba as layout A."""
    padded = np.zeros((array.shape[0] + 1, array.shape[1]), dtype=array.dtype, order="F")
    padded[:-1] = array
    view = padded[:-1]
    view.setflags(write=array.flags.writeable)
    return view


def main():
    parser = command_line(__doc__, "layout_any")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows, records = [], []
    for n in args.sizes:
        model = rm.chains.serial_chain(n).compile()
        ws = workspace(model)
        rng = np.random.default_rng(0)
        q, qd, tau = 0.1 * rng.normal(size=n), 0.1 * rng.normal(size=n), np.zeros(n)
        out = {"F": np.zeros(n), "A": np.zeros(n)}
        arrays = {"F": (model.body_int, model.body_real, ws.ws),
                  "A": (strided(model.body_int), strided(model.body_real), strided(ws.ws))}
        assert numba.typeof(arrays["A"][0]).layout == "A" and numba.typeof(arrays["F"][0]).layout == "F"

        calls = {layout: functools.partial(tree.forward_dynamics, body_int, body_real, model.gravity, q, qd, tau,
                                           ws.no_wrench, ws.no_driven, work, out[layout], ws.no_drive)
                 for layout, (body_int, body_real, work) in arrays.items()}
        samples = interleaved_samples(calls, args.rounds, 0.2)
        same = bool(np.array_equal(out["F"], out["A"]))
        f_ms, a_ms = (float(np.median(samples[k])) * 1e3 for k in ("F", "A"))
        rows.append((n, f"{f_ms:.3f}", f"{a_ms:.3f}", f"{a_ms / f_ms:.2f}", same))
        records.append({"n": n, "F_ms": f_ms, "A_ms": a_ms, "ratio": a_ms / f_ms, "bitwise_equal": same})
    print_table(("n", "F ms", "A ms", "A / F", "bit for bit"), rows)
    print(f"written to {write_json(args.name, {'records': records})}")


if __name__ == "__main__":
    main()
