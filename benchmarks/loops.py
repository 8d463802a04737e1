"""Cost of constrained forward dynamics: an N-link chain with one loop, O(N m + m^3).

    python3 benchmarks/loops.py [--sizes 1000 10000 100000]

The chain (``chains.serial_chain``) has its tip pinned to a ground point by a revolute loop (m = 2), at a
consistent state. Per evaluation: the tree alone (recursive pass), the loop layer (constraint kernel + 1 + m
recursive passes + the m x m solve) through ``rm.loop_dynamics``, and the raw kernel without the Python wrapper.
Prints a table and the growth factor per decade; writes benchmarks/results/loops.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from _common import median_time, print_growth, print_table, sizes_from_command_line, write_json

import recursive_mbd as rm
from recursive_mbd._kernels.planar import loops as kernels
from recursive_mbd.dynamics.loops import FILTER_RCOND, loop_workspace


def pinned_chain(n):
    """A serial chain of n links, length 1, its tip pinned where it hangs at a bent state; (model, q, qd)."""
    rng = np.random.default_rng(n)
    q = rng.uniform(-0.5, 0.5, n) * 3.0 / n
    tree = rm.chains.serial_chain(n)
    tip, _ = rm.point_kinematics(tree, q, np.zeros(n), n - 1, (0.0, -0.5 / n))
    chain = rm.chains.serial_chain(n)
    chain.add_loop("revolute", n - 1, (0.0, -0.5 / n), "ground", tip)
    q, qd, _ = rm.loops.project(chain, q, rng.normal(size=n))
    return chain, q, qd


def main(sizes=(1000, 10_000, 100_000)):
    rows, records = [], []
    for n in sizes:
        model, q, qd = pinned_chain(n)
        tree = rm.chains.serial_chain(n)
        ws, lw = loop_workspace(model)
        qdd = np.zeros(n)

        def kernel(model=model, q=q, qd=qd, ws=ws, lw=lw, qdd=qdd):
            kernels.constrained_dynamics(
                model.body_int, model.body_real, model.gravity, model.loop_int, model.loop_real, lw.pattern, q, qd,
                ws.zeros, ws.no_wrench, ws.no_driven, ws.ws, ws.com, lw.acc, qdd, ws.no_drive, lw.phi, lw.phid,
                lw.jac, lw.gamma, lw.weights, lw.resp, lw.no_resp_drive, ws.zeros, lw.stab, FILTER_RCOND, lw.lam,
                lw.info,
                (0.0, 0.0, 0.0))  # branch following off, as in rm.loop_dynamics

        t_tree = median_time(lambda tree=tree, q=q, qd=qd: rm.forward_dynamics(tree, q, qd))
        t_loop = median_time(lambda model=model, q=q, qd=qd: rm.loop_dynamics(model, q, qd))
        t_kernel = median_time(kernel)
        records.append(dict(n=n, m=model.nconstraints, tree_s=t_tree, loop_dynamics_s=t_loop, kernel_s=t_kernel))
        rows.append([n, f"{t_tree * 1e6:.0f}", f"{t_kernel * 1e6:.0f}", f"{t_loop * 1e6:.0f}",
                     f"{t_kernel / t_tree:.2f}"])
    print("one loop (m = 2) on an N-link chain: time per forward-dynamics evaluation [us]")
    print_table(["N", "tree", "loop kernel", "rm.loop_dynamics", "kernel / tree"], rows)
    print_growth(records, (("kernel time", "kernel_s"), ("loop_dynamics", "loop_dynamics_s")))
    print(f"wrote {write_json('loops', {'records': records})}")


if __name__ == "__main__":
    main(sizes_from_command_line(__doc__, [1000, 10_000, 100_000]))
