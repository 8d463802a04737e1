"""Accuracy of the forward-dynamics routes on serial chains against Takeno's closed form (seed 001).

    python3 benchmarks/accuracy.py

For n links at random states: relative error (max norm) of the recursive and the mass-matrix route against the
closed form, and cond(M). The mass-matrix route loses digits with cond(M); the recursive one does not need M.
Writes benchmarks/results/accuracy.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm
from recursive_mbd.model import chains


def main(sizes=(2, 10, 20, 40, 100, 200, 500, 1000), states=5):
    rows, records = [], []
    for n in sizes:
        model = chains.serial_chain(n)
        rng = np.random.default_rng(n)
        worst_rec = worst_mm = 0.0
        conds = []
        for _ in range(states):
            q, qd = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n)
            ref = chains.takeno_forward_dynamics(chains.relative_to_absolute(q), chains.relative_to_absolute(qd),
                                                 np.full(n, 1.0 / n))
            scale = np.max(np.abs(ref))
            rec = chains.relative_to_absolute(rm.forward_dynamics(model, q, qd))
            mm = chains.relative_to_absolute(rm.forward_dynamics(model, q, qd, method="mass_matrix"))
            worst_rec = max(worst_rec, float(np.max(np.abs(rec - ref)) / scale))
            worst_mm = max(worst_mm, float(np.max(np.abs(mm - ref)) / scale))
            conds.append(float(np.linalg.cond(rm.mass_matrix(model, q))))
        cond = float(np.median(conds))
        records.append(dict(n=n, recursive_rel_err=worst_rec, mass_matrix_rel_err=worst_mm, cond_M_median=cond))
        rows.append([n, f"{worst_rec:.1e}", f"{worst_mm:.1e}", f"{cond:.2e}",
                     f"{np.log10(max(worst_mm, 1e-16) / 1e-16):.1f}"])
    print("relative error (max norm, worst of random states) against Takeno's closed form")
    print_table(["n", "recursive", "mass matrix", "cond(M) median", "digits lost (mass matrix)"], rows)
    print(f"wrote {write_json('accuracy', {'records': records})}")


if __name__ == "__main__":
    main()
