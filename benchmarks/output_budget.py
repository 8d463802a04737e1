"""A long run of a long chain against its output budget: where it stops, what it keeps, what memory it took.

    python3 benchmarks/output_budget.py [--n 2000] [--budget-mb 100] [--t-end 1000] [--methods rk4 dopri5 bdf
                                         generalized_alpha] [--name output_budget]

serial_chain(N) released from a 1e-3 rad tilt of its first joint (rk4 at dt = 1e-5 s, within its stability limit
on 2000 links; generalized_alpha at dt = 1e-3 s; dopri5 and bdf at rtol 1e-8), every accepted step a sample,
t_end far beyond what the budget holds: each run stops with SimulationError ("output budget") and keeps its
samples. The budget is
set to --budget-mb through ``_runs.output_budget`` (by default it is a quarter of the memory available when a run
starts). Each method runs in its own process after a short warm-up (numba's cache); "peak RSS growth" is the
child's ``ru_maxrss`` after the run less before it, with the result still alive, over the budget: the compiled
loop's buffers (up to twice the samples while they double), the result's copy and its q and qd make it about 3.
Prints the table and writes benchmarks/results/NAME.json. The machine may be shared: the load average is recorded.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from _common import print_table, write_json


def child(method, n, budget_mb, t_end):
    import numpy as np  # noqa: PLC0415

    import recursive_mbd as rm  # noqa: PLC0415
    from recursive_mbd.integrate import runs as _runs  # noqa: PLC0415
    from recursive_mbd.model import chains  # noqa: PLC0415

    model = chains.serial_chain(n)
    q0 = np.zeros(n)
    q0[0] = 1e-3
    fixed = {"rk4": {"dt": 1e-5, "max_steps": 10**9}, "generalized_alpha": {"dt": 1e-3}}
    options = fixed.get(method, {"rtol": 1e-8, "atol": 1e-10})
    _runs.output_budget = lambda: budget_mb * 1e6 / 8.0
    rm.simulate(model, q0, np.zeros(n), 2e-3, method=method, progress=False, **options)  # warm-up
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    try:
        rm.simulate(model, q0, np.zeros(n), t_end, method=method, progress=False, **options)
        outcome = {"stopped": False}
    except rm.SimulationError as error:
        result = error.result
        outcome = {"stopped": "output budget" in str(error), "t_fail": error.t, "samples": int(result.t.size),
                   "t_last": float(result.t[-1]), "message": str(error)[:200]}
    outcome["wall_s"] = time.perf_counter() - start
    outcome["peak_rss_growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before) / 1e6
    outcome["sample_mb"] = 8e-6 * (2 * n + 3)
    print(json.dumps(outcome))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--budget-mb", type=float, default=100.0)
    parser.add_argument("--t-end", type=float, default=1000.0)
    parser.add_argument("--methods", nargs="+", default=["rk4", "dopri5", "bdf", "generalized_alpha"])
    parser.add_argument("--name", default="output_budget")
    parser.add_argument("--child", nargs=4, metavar=("METHOD", "N", "BUDGET_MB", "T_END"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, n, budget, t_end = args.child
        child(method, int(n), float(budget), float(t_end))
        return
    rows, cases = [], {}
    for method in args.methods:
        proc = subprocess.run([sys.executable, __file__, "--child", method, str(args.n), str(args.budget_mb),
                               str(args.t_end)], capture_output=True, text=True, check=True)
        case = json.loads(proc.stdout.strip().splitlines()[-1])
        cases[method] = case
        rows.append([method, "yes" if case["stopped"] else "NO", case.get("samples", "-"),
                     f"{case.get('t_last', float('nan')):.4g}", f"{case['sample_mb'] * case.get('samples', 0):.1f}",
                     f"{case['wall_s']:.2f}", f"{case['peak_rss_growth_mb']:.0f}",
                     f"{case['peak_rss_growth_mb'] / args.budget_mb:.2f}"])
    print(f"serial_chain({args.n}), budget {args.budget_mb:g} MB, t_end {args.t_end:g} s, load {os.getloadavg()}")
    print_table(["method", "stopped", "samples", "t kept [s]", "samples [MB]", "wall [s]", "peak RSS growth [MB]",
                 "growth / budget"], rows)
    path = write_json(args.name, {"n": args.n, "budget_mb": args.budget_mb, "t_end": args.t_end,
                                  "load": os.getloadavg(), "cases": cases})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
