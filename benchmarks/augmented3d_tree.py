"""The spatial augmented tree solve: its specialised route against its general kernel and the recursive route.

    python3 benchmarks/augmented3d_tree.py [--sizes 1000 10000 100000 1000000] [--rounds 7]

On benchmarks/spatial.py's revolute and spherical chains (rods with full inertia tensors, random revolute axes), in
one process, each call timed in turn in every round (``formulations.interleaved_wall_and_cpu``; medians of the
thread's CPU time, which a loaded machine does not inflate):

- recursive: ``rm.forward_dynamics`` (the articulated-body algorithm, ``_kernels.spatial.rotary``);
- augmented: ``rm.augmented.forward_dynamics`` on the same state in absolute coordinates, which takes the
  closed-form tree solve of a tree of revolute and spherical joints (``_kernels.augmented.rotary3d``);
- general kernel: ``_kernels.augmented.spatial3d.factor_and_solve`` on the same arrays (6 x 6 body pivots, joint
  pivots of 3 or 5 rows: the route of every other model, of the time loops and the projection), called directly.

The two augmented routes are checked against each other first (1e-10 relative). Prints ns per body, the ratios to
the recursive route and each route's workspace per body; writes benchmarks/results/augmented3d_tree.json.
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402

import numpy as np  # noqa: E402
import spatial  # noqa: E402
from _common import print_table, write_json  # noqa: E402
from formulations import interleaved_wall_and_cpu  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd._kernels.augmented import rotary3d, spatial3d  # noqa: E402
from recursive_mbd.dynamics import augmented3d  # noqa: E402


def calls(kind, n):
    """{route: callable} on the chain of N links of ``kind`` ("revolute" or "spherical"), and the bytes per body of
    each route's workspace."""
    params = spatial.chain_parameters(kind, n)
    model = spatial.build_ours(params)
    q, v, tau = spatial.chain_state(params)
    z, zd = augmented3d.absolute_from_joint(model, q, v)
    out = np.empty(model.nv)
    general = augmented3d._TreeWorkspace(model)
    zdd, lam = np.empty((n, 6)), np.empty(general.rows)
    status = spatial3d.factor_and_solve(model.body_int, model.body_real, model.gravity, general.row_start, z, zd, tau,
                                        general.no_wrench, general.stab, *general.factor, zdd, lam, general.power)
    assert status == 0
    fast = rm.augmented.forward_dynamics(model, z, zd, tau)
    for ours, reference in zip(fast, (zdd, lam), strict=True):
        error = np.abs(ours - reference).max() / np.abs(reference).max()
        if not error < 1e-10:
            raise SystemExit(f"{kind} chain, N = {n}: the two augmented routes differ by {error:.2e}")
    funcs = {"recursive": lambda: rm.forward_dynamics(model, q, v, tau, out=out),
             "augmented": lambda: rm.augmented.forward_dynamics(model, z, zd, tau),
             "general": lambda: spatial3d.factor_and_solve(model.body_int, model.body_real, model.gravity,
                                                           general.row_start, z, zd, tau, general.no_wrench,
                                                           general.stab, *general.factor, zdd, lam, general.power)}
    sizes = {"augmented": 8 * rotary3d.W, "general": sum(a.nbytes for a in general.factor) // n}
    return funcs, sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e3, 1e4, 1e5, 1e6])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    records = []
    for kind in ("revolute", "spherical"):
        for n in (int(s) for s in args.sizes):
            funcs, sizes = calls(kind, n)
            rounds = args.rounds if n < 1_000_000 else max(3, args.rounds // 2)
            wall, cpu = interleaved_wall_and_cpu(funcs, rounds, 0.05 if n < 1_000_000 else 0.0)
            records.append({"kind": kind, "n": n, "rounds": rounds, **{f"{k}_cpu_s": s for k, s in cpu.items()},
                            **{f"{k}_wall_s": s for k, s in wall.items()},
                            **{f"{k}_bytes_per_body": b for k, b in sizes.items()}})
            print(f"  {kind} N = {n}: " + ", ".join(f"{k} {s / n * 1e9:.0f} ns/body" for k, s in cpu.items()),
                  flush=True)
    heads = ["chain", "N", "recursive ns/body", "augmented", "general kernel", "augmented : recursive",
             "general : recursive", "general : augmented"]
    print("\nCPU time per evaluation per body (medians of interleaved rounds)")
    print_table(heads, [[r["kind"], r["n"], f"{r['recursive_cpu_s'] / r['n'] * 1e9:.0f}",
                         f"{r['augmented_cpu_s'] / r['n'] * 1e9:.0f}", f"{r['general_cpu_s'] / r['n'] * 1e9:.0f}",
                         f"{r['augmented_cpu_s'] / r['recursive_cpu_s']:.2f}",
                         f"{r['general_cpu_s'] / r['recursive_cpu_s']:.2f}",
                         f"{r['general_cpu_s'] / r['augmented_cpu_s']:.2f}"] for r in records])
    for kind in ("revolute", "spherical"):
        rows = [r for r in records if r["kind"] == kind and r["n"] >= 1000]
        if len(rows) >= 2:
            ns = np.log([r["n"] for r in rows])
            slopes = {k: float(np.polyfit(ns, np.log([r[f"{k}_cpu_s"] for r in rows]), 1)[0])
                      for k in ("recursive", "augmented", "general")}
            print(f"  {kind}: fitted slope of log CPU time over log N, {rows[0]['n']:.0e} .. {rows[-1]['n']:.0e}: "
                  + ", ".join(f"{k} {s:.3f}" for k, s in slopes.items()))
            for r in rows:
                r.setdefault("slopes", slopes)
    print(f"  workspace per body: augmented {records[0]['augmented_bytes_per_body']} B (one record), general kernel "
          f"{records[0]['general_bytes_per_body']} B (D^-1, S^-1, Jc, Jp, w, residual, gamma)")
    print(f"wrote {write_json('augmented3d_tree', {'records': records})}")


if __name__ == "__main__":
    main()
