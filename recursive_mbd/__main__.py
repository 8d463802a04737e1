"""``python -m recursive_mbd`` and the ``rmbd`` command: see ``recursive_mbd.cli``.

Both enter here so that one BLAS thread is chosen before numpy loads OpenBLAS: with its default pool of one thread
per core, the small dense solves of the mass-matrix route, the analyses and the augmented formulation slow down
up to 10x when other processes keep the cores busy (``benchmarks/blas_threads.py``). A value already set in
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS is kept.
"""

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from .cli import main  # noqa: E402  (after the BLAS thread count)

if __name__ == "__main__":
    sys.exit(main())
