"""Long chains over long times: wall time per simulated second against N, implicit against explicit methods.

    python3 benchmarks/implicit.py [--n 100 1000 10000 100000] [--t-end 1.0] [--long 10000:10]
                                   [--explicit-budget 60] [--explicit-max-n 10000] [--whip-n 100 300]
                                   [--million] [--name implicit] [--replot]

Two problems, each case in its own process (its peak RSS is the child's ``ru_maxrss``; numba's cache is warmed by a
short run first, timed apart as "warm-up"):

* hanging swing (``studies.hanging_swing``): serial_chain(N) at rest in its first mode, amplitude 1e-3 rad,
  against the linear solution q0 cos(omega_1 t); error = max over samples and joints / max|q0|. Matched accuracy:
  target 1e-4. generalized_alpha with rho_inf = 1 (no numerical damping) and the step from its phase error,
  omega t (omega h)^2 / 12 = 5e-5 at t_end (half the target); dopri5 and dop853 at rtol 1e-7 (their steps are
  set by the stability limit h ~ 1 / omega_max ~ 1 / N, so their error is far below the target at any rtol that
  matters: quoted). Explicit runs get ``--explicit-budget`` seconds (max_wall_time); one that runs out is quoted
  as the wall time per simulated second it had reached ("extrapolated"). ``bdf`` runs at the largest rtol of
  1e-5 ... 1e-8 (atol 1e-4 rtol) that reaches the target, sampled at 101 times (its row quotes that rtol; the
  last one tried when none reaches it, "stalled" when its steps collapsed before the first sample; the JSON keeps
  every try).
* tip whip (``studies.tip_whip``): the chain released from the horizontal over its first swing (t_end = 2.4
  sqrt(L/g)), error = relative error of the peak tip speed against dop853 at rtol 1e-10 (same N); the whip is
  fast motion that every method must resolve: generalized_alpha at dt = 1e-4 (rho_inf = 0.9), dopri5 at rtol
  1e-6, dop853 at rtol 1e-7.

"FD/it": one Newton iteration (the wall time of the run over its Newton iterations, everything included) in
forward-dynamics evaluations of the same chain (median of repeats). Prints the tables, writes
benchmarks/results/NAME.json and a log-log plot NAME.png (matplotlib, Agg; skipped without it). The machine
this runs on may be shared: the load average is recorded with the results.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import math
import resource
import subprocess
import sys
import time

import numpy as np
from _common import RESULTS, median_time, print_table, write_json

AMPLITUDE = 1e-3  # [rad]
TARGET = 1e-4  # matched accuracy of the hanging swing (relative)
WHIP_REFERENCE_RTOL = 1e-10
BDF_RTOLS = (1e-5, 1e-6, 1e-7, 1e-8)  # bdf on the swing: the first of these that reaches TARGET (atol 1e-4 rtol)


def _alpha_step(n, t_end):
    """generalized_alpha's step for the swing: phase error omega t (omega h)^2 / 12 = TARGET / 2 (rho_inf = 1)."""
    import recursive_mbd as rm  # noqa: PLC0415

    omega = float(rm.studies.continuum_frequencies(1)[0])  # the discrete chain's omega_1 is within 1 % for N >= 100
    h = math.sqrt(12.0 * 0.5 * TARGET / (omega**3 * t_end))
    steps = math.ceil(t_end / h)
    return t_end / steps, steps


def swing_case(n, method, t_end, budget):
    import recursive_mbd as rm  # noqa: PLC0415

    row = {"problem": "swing", "n": n, "method": method, "t_end": t_end}
    if method not in rm.METHODS:
        row["status"] = "not available"
        return row
    if method == "generalized_alpha":
        dt, steps = _alpha_step(n, t_end)
        samples = min(100, max(2, int(1e8 / (16 * n))))  # a sample holds 2 n floats: at most ~100 MB of them
        options = {"dt": dt, "rho_inf": 1.0, "every": max(1, steps // samples)}
    elif method == "bdf":
        options = {"rtol": BDF_RTOLS[0], "atol": 1e-4 * BDF_RTOLS[0]}
    else:
        options = {"rtol": 1e-7, "atol": 1e-10, "every": 1000}
    start = time.perf_counter()
    # compile or load the cache on a short chain (the same compiled types): the peak RSS is then the run's, not
    # that of a warm-up keeping every step of a long chain
    rm.studies.hanging_swing(min(n, 100), AMPLITUDE, 1e-3, method, **{**options, "every": 1})
    row["warmup_s"] = time.perf_counter() - start
    row.update({k: v for k, v in options.items()})
    if method in ("dopri5", "dop853", "bdf"):
        chain = rm.chains.serial_chain(n)
        omega, shapes = rm.studies.chain_modes(chain, 1)
        q0 = AMPLITUDE * shapes[:, 0] / np.max(np.abs(shapes[:, 0]))
        # bdf: the largest rtol in BDF_RTOLS that reaches the target (its error is not monotonic in rtol: the
        # stability-limit detection changes the orders), sampled at 101 times (every step of a long chain would
        # be GBs); the explicit methods at their fixed rtol
        tries = [dict(options, rtol=r, atol=1e-4 * r) for r in BDF_RTOLS] if method == "bdf" else [options]
        row["attempts"] = []  # (rtol, status, t reached, max rel error, wall) of each try
        for attempt in tries:
            extra = {"t_eval": np.linspace(0.0, t_end, 101)} if method == "bdf" else {}
            start = time.perf_counter()
            try:
                res = rm.simulate(chain, q0, np.zeros(n), t_end, method=method, max_wall_time=budget, **attempt,
                                  **extra)
                reached, status = t_end, "finished"
            except rm.SimulationError as err:
                res, reached, status = err.result, float(err.result.t[-1]), err.result.status
            wall = time.perf_counter() - start
            error = max(float(np.max(np.abs(q - math.cos(omega[0] * t) * q0)))
                        for t, q in zip(res.t, res.q, strict=True))
            row.update(attempt)
            row.update({"status": status if status == "finished" else "extrapolated" if reached > 0 else "stalled",
                        "t_reached": reached, "wall_s": wall, "wall_per_simulated_s": wall / reached if reached > 0
                        else math.inf, "max_rel_error": error / AMPLITUDE if reached > 0 else math.nan,
                        "steps": res.nsteps, "nfev": res.nfev, "omega_1": float(omega[0])})
            row["attempts"].append((attempt["rtol"], row["status"], reached, row["max_rel_error"], wall))
            if error / AMPLITUDE <= TARGET or status != "finished":
                break
    else:
        out = rm.studies.hanging_swing(n, AMPLITUDE, t_end, method, **options)
        row.update({"status": "finished", "t_reached": t_end, "wall_s": out["seconds"],
                    "wall_per_simulated_s": out["seconds"] / t_end, "max_rel_error": out["max_rel_error"],
                    "steps": out["nsteps"], "nfev": out["nfev"], "omega_1": out["omega_1"],
                    "modes_s": out["modes_seconds"]})
        if out["newton_iterations"] is not None:
            chain = rm.chains.serial_chain(n)
            zero = np.zeros(n)
            fd = median_time(lambda: rm.forward_dynamics(chain, out["q0"], zero), min_time=0.5)
            row.update({"newton_per_step": out["newton_iterations"] / out["nsteps"], "forward_dynamics_s": fd,
                        "fd_per_iteration": out["seconds"] / out["newton_iterations"] / fd,
                        "fd_per_step": out["seconds"] / out["nsteps"] / fd})
    return row


def whip_case(n, method, budget):
    import recursive_mbd as rm  # noqa: PLC0415

    row = {"problem": "whip", "n": n, "method": method}
    if method not in rm.METHODS:
        row["status"] = "not available"
        return row
    options = {"generalized_alpha": {"dt": 1e-4, "rho_inf": 0.9}, "dopri5": {"rtol": 1e-6, "atol": 1e-9},
               "dop853": {"rtol": 1e-7, "atol": 1e-10}, "bdf": {"rtol": 1e-6, "atol": 1e-9}}[method]
    start = time.perf_counter()
    rm.studies.tip_whip(n, t_end=1e-3, method=method, **options)
    row["warmup_s"] = time.perf_counter() - start
    reference = rm.studies.tip_whip(n, method="dop853", rtol=WHIP_REFERENCE_RTOL, atol=1e-12)
    out = rm.studies.tip_whip(n, method=method, **options)
    row.update(options)
    row.update({"status": "finished", "t_end": float(out["t"][-1]), "wall_s": out["seconds"],
                "wall_per_simulated_s": out["seconds"] / float(out["t"][-1]),
                "max_rel_error": abs(out["max_tip_speed"] / reference["max_tip_speed"] - 1.0),
                "steps": out["nsteps"], "nfev": out["nfev"], "energy_error": out["energy_error"],
                "max_tip_speed": out["max_tip_speed"], "reference_s": reference["seconds"]})
    return row


def run_child(args):
    """One case in a child process: (row, peak RSS [MB])."""
    command = [sys.executable, __file__, "--case", *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"problem": args[0], "n": int(args[1]), "method": args[2], "status": "crashed",
                "stderr": done.stderr[-800:]}
    return json.loads(lines[-1])


def child_main(argv):
    problem, n, method = argv[0], int(argv[1]), argv[2]
    budget = float(argv[4])
    row = swing_case(n, method, float(argv[3]), budget) if problem == "swing" else whip_case(n, method, budget)
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(row))


def _fmt(value, spec):
    return "-" if value is None or (isinstance(value, float) and not math.isfinite(value)) else format(value, spec)


def plot(rows, path, t_end=1.0):
    try:
        import matplotlib  # noqa: PLC0415 - optional extra
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, problem, title in zip(axes, ("swing", "whip"), ("hanging swing, 1e-4 relative", "tip whip"),
                                  strict=True):
        for method, marker in (("generalized_alpha", "o"), ("bdf", "D"), ("dopri5", "s"), ("dop853", "^")):
            points = sorted((r["n"], r["wall_per_simulated_s"], r["status"]) for r in rows
                            if r["problem"] == problem and r["method"] == method and "wall_per_simulated_s" in r
                            and (problem == "whip" or r["t_end"] == t_end))  # not the --long runs
            if not points:
                continue
            ns, walls, statuses = zip(*points, strict=True)
            line, = ax.loglog(ns, walls, marker=marker, label=method)
            extra = [(x, y) for x, y, s in points if s != "finished"]
            if extra:
                ax.loglog(*zip(*extra, strict=True), marker=marker, linestyle="none", markerfacecolor="none",
                          markersize=12, color=line.get_color())
        ax.set_xlabel("links N")
        ax.set_ylabel("wall time per simulated second [s]")
        ax.set_title(title + " (open: extrapolated)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000, 10_000, 100_000])
    parser.add_argument("--t-end", type=float, default=1.0, help="simulated time of the swing [s]")
    parser.add_argument("--long", nargs="*", default=["10000:10"],
                        help="extra generalized_alpha swings N:T_END (the issue's 1e4 links x 10 s)")
    parser.add_argument("--methods", nargs="+", default=["generalized_alpha", "bdf", "dopri5", "dop853"])
    parser.add_argument("--explicit-budget", type=float, default=60.0, help="max_wall_time of an explicit run [s]")
    parser.add_argument("--explicit-max-n", type=int, default=10_000, help="no explicit swing above this N")
    parser.add_argument("--whip-n", type=int, nargs="*", default=[100, 300])
    parser.add_argument("--million", action="store_true", help="add a generalized_alpha swing of 1e6 links")
    parser.add_argument("--name", default="implicit")
    parser.add_argument("--replot", action="store_true", help="only redraw NAME.png from NAME.json")
    args = parser.parse_args()
    if args.replot:
        rows = json.loads((RESULTS / f"{args.name}.json").read_text())["rows"]
        print(f"wrote {plot(rows, RESULTS / f'{args.name}.png', args.t_end)}")
        return
    cases = []
    for n in args.n + ([1_000_000] if args.million else []):
        for method in args.methods:
            if method in ("dopri5", "dop853") and n > args.explicit_max_n:
                continue
            if n == 1_000_000 and method != "generalized_alpha":
                continue
            cases.append(("swing", n, method, args.t_end, args.explicit_budget))
    for spec in args.long:
        n, t_end = spec.split(":")
        cases.append(("swing", int(n), "generalized_alpha", float(t_end), args.explicit_budget))
    for n in args.whip_n:
        for method in args.methods:
            cases.append(("whip", n, method, 0.0, args.explicit_budget))
    load_before = os.getloadavg()
    rows = []
    for case in cases:
        row = run_child(case)
        rows.append(row)
        for rtol, status, reached, error, wall in row.get("attempts", [])[:-1]:
            print(f"  {row['problem']} N={row['n']} {row['method']} rtol={rtol:g}: {status} to t = {reached:.3g} s, "
                  f"error {error:.2e} > target, {wall:.2f} s")
        print(f"  {row['problem']} N={row['n']} {row['method']}: {row.get('status')} "
              f"{_fmt(row.get('wall_s'), '.2f')} s, error {_fmt(row.get('max_rel_error'), '.2e')}, "
              f"RSS {_fmt(row.get('peak_rss_mb'), '.0f')} MB, load {os.getloadavg()[0]:.1f}", flush=True)
    load_after = os.getloadavg()
    headers = ["problem", "N", "method", "t_end", "status", "steps", "wall [s]", "wall/sim s", "max rel err",
               "Newton/step", "FD/it", "FD/step", "RSS [MB]"]
    table = []
    for r in rows:
        label = f"{r['method']} rtol={r['rtol']:g}" if r["method"] == "bdf" and "rtol" in r else r["method"]
        table.append([r["problem"], r["n"], label, _fmt(r.get("t_end"), ".3g"), r.get("status"),
                      r.get("steps", "-"), _fmt(r.get("wall_s"), ".3g"), _fmt(r.get("wall_per_simulated_s"), ".3g"),
                      _fmt(r.get("max_rel_error"), ".2e"), _fmt(r.get("newton_per_step"), ".2f"),
                      _fmt(r.get("fd_per_iteration"), ".2f"), _fmt(r.get("fd_per_step"), ".2f"),
                      _fmt(r.get("peak_rss_mb"), ".0f")])
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}; {os.cpu_count()} CPUs")
    print_table(headers, table)
    speedups = []
    for n in sorted({r["n"] for r in rows if r["problem"] == "swing"}):
        by = {r["method"]: r for r in rows if r["problem"] == "swing" and r["n"] == n and r.get("t_end") == args.t_end
              and "wall_per_simulated_s" in r}
        if "generalized_alpha" in by:
            base = by["generalized_alpha"]["wall_per_simulated_s"]
            speedups.append([n] + [_fmt(by[m]["wall_per_simulated_s"] / base, ".3g") if m in by else "-"
                                   for m in ("dopri5", "dop853", "bdf")])
    if speedups:
        print("speed-up of generalized_alpha on the swing (wall per simulated second of the other / its own):")
        print_table(["N", "over dopri5", "over dop853", "over bdf"], speedups)
    path = write_json(args.name, {"amplitude": AMPLITUDE, "target": TARGET, "load_before": load_before,
                                  "load_after": load_after, "rows": rows})
    print(f"wrote {path}")
    picture = plot(rows, RESULTS / f"{args.name}.png", args.t_end)
    if picture:
        print(f"wrote {picture}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        child_main(sys.argv[2:])
    else:
        main()
