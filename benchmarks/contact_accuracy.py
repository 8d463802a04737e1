"""The accuracy of generalized_alpha's Newton acceptance with contacts against the scheme's own error: a chain of N
capsule links dropped onto a table (``benchmarks/contact.py``'s chain), run at dt, at dt / 2, and at dt with other
round-off margins of the acceptance rule; the end states compared.

    python3 benchmarks/contact_accuracy.py [--sizes 10000] [--t-end 1.0] [--ga-step 1.25e-4] [--margins 1]
                                           [--no-half] [--jobs 2] [--keep DIR]

The rule (``_kernels.planar.implicit``): a step with contacts is accepted where the error that Newton's contraction
predicts, theta / (1 - theta) times the last correction, is within newton_tol, the round-off of the update and
ROUND_OFF_MARGIN times a round-off measured at a recent stall. Each case runs in its own process; a margin other
than the kernel's is set on the module before anything compiles, in a process with a fresh kernel cache (numba
freezes a global's value into the machine code and its cache does not notice a changed global): that process
compiles the contact pipeline again, outside the timing. CPU time is the process's over the run alone (after a
short run that loads the compiled kernels). Compared: the links' centres at t_end, each case against the run at dt
with the kernel's margin (median, 99th percentile and largest distance over links [mm]; the same of the heights'
differences and the links whose heights differ by more than 1 mm), so that the rule's effect (another margin)
stands next to the scheme's own error (dt / 2). Iterations, factorisations and residual evaluations are per step.
With --keep DIR the end states stay in DIR and a case found there is not run again (the table again from them).
Writes benchmarks/results/contact_accuracy.json.

Measured (1e4 links, 1 s, the defaults; a shared 2-core machine at load 13 to 18, the three runs two at a time):

    python3 benchmarks/contact_accuracy.py --sizes 10000 --t-end 1 --ga-step 1.25e-4 --margins 1

    run                  CPU [s]  it./factor./residuals a step  centres: median, p99, max  heights: p99, max; > 1 mm
    0.125 ms, margin 4      95.3  3.89 / 2.57 / 3.96
    0.0625 ms, margin 4    115.5  2.62 / 1.02 / 2.71            305, 1473, 1493 mm          4.1, 7.4 mm; 825 links
    0.125 ms, margin 1      99.4  4.16 / 2.63 / 4.24            0.021, 4.3, 25.7 mm         0.57, 7.7 mm; 82 links

The rule's effect is far below the scheme's error: docs/guide/contact.md (the acceptance paragraph) says what the
differences are (the landing folds the chain at 0.125 ms, with either margin).
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS (benchmarks/blas_threads.py). Set the variables to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from _common import command_line, print_table, write_json

HERE = Path(__file__).resolve().parent


def child(n, t_end, dt, margin, out):
    """Run one case in this process and write its end state and counts to ``out`` (.npz)."""
    from contact import chain, link_centres, method_options  # noqa: PLC0415 - the child's imports only

    import recursive_mbd as rm  # noqa: PLC0415
    from recursive_mbd._kernels.planar import implicit  # noqa: PLC0415

    if margin is not None:  # before the first compile (this process's cache is fresh: see the docstring)
        implicit.ROUND_OFF_MARGIN = margin
    model, q0 = chain(n)
    options, _ = method_options("generalized_alpha", dt, ga_step=dt)
    rm.simulate(model, q0, np.zeros_like(q0), 4e-4, method="generalized_alpha", **dict(options, dt=2e-4))
    options["every"] = max(1, round(t_end / dt / 20))
    cpu, wall = time.process_time(), time.perf_counter()
    res = rm.simulate(model, q0, np.zeros_like(q0), t_end, method="generalized_alpha", max_steps=10**8, **options)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if not res.success:
        raise rm.SimulationError(f"{model.name}, dt {dt:g}, margin {margin}: {res.message}")
    np.savez(
        out,
        centres=link_centres(model, res),
        cpu=cpu,
        wall=wall,
        steps=res.nsteps,
        nfev=res.nfev,
        iterations=res.newton_iterations,
        factorizations=res.newton_factorizations,
        splits=res.newton_split_steps,
        margin=implicit.ROUND_OFF_MARGIN,
    )


def launch(n, t_end, dt, margin, folder, cache):
    """Run a case in a child process (a fresh kernel cache in ``cache`` when ``margin`` is set); the path of its
    .npz in ``folder``, where a case already there is not run again."""
    out = Path(folder) / f"n{n}_t{t_end:g}_dt{dt:g}_m{margin}.npz"
    if out.exists():
        print(f"{out}: kept from an earlier run", flush=True)
        return out
    env = dict(os.environ)
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        str(n),
        str(t_end),
        repr(dt),
        "none" if margin is None else repr(margin),
        str(out),
    ]
    if margin is not None:
        env["RECURSIVE_MBD_CACHE_DIR"] = str(Path(cache) / f"cache_m{margin}")
    subprocess.run(command, env=env, check=True, cwd=HERE)
    return out


def distances(a, b):
    """The links' centres a, b (n, 2) compared [mm]: the median, 99th percentile and largest distance between them,
    the same of their heights' differences, and how many links' heights differ by more than 1 mm."""
    d = np.sqrt(((a - b) ** 2).sum(axis=1)) * 1e3
    h = np.abs(a[:, 1] - b[:, 1]) * 1e3
    return dict(
        median_mm=float(np.median(d)),
        p99_mm=float(np.percentile(d, 99)),
        max_mm=float(d.max()),
        height_median_mm=float(np.median(h)),
        height_p99_mm=float(np.percentile(h, 99)),
        height_max_mm=float(h.max()),
        heights_over_1mm=int(np.count_nonzero(h > 1.0)),
    )


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        n, t_end, dt, margin, out = sys.argv[2:7]
        child(int(n), float(t_end), float(dt), None if margin == "none" else float(margin), out)
        return
    parser = command_line(__doc__, "contact_accuracy")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000])
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--ga-step", type=float, default=1.25e-4, help="dt [s]")
    parser.add_argument(
        "--margins", type=float, nargs="+", default=[1.0], help="round-off margins run at dt besides the kernel's"
    )
    parser.add_argument("--no-half", action="store_true", help="leave out the run at dt / 2")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (each in its own process)")
    parser.add_argument(
        "--keep", default=None, help="folder keeping each case's end state (.npz); a case found there is not run again"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from recursive_mbd._kernels.planar.implicit import ROUND_OFF_MARGIN  # noqa: PLC0415

    records = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or scratch
        Path(folder).mkdir(parents=True, exist_ok=True)
        for n in args.sizes:
            cases = [("dt", args.ga_step, None)] + ([] if args.no_half else [("dt / 2", args.ga_step / 2, None)])
            cases += [("dt", args.ga_step, m) for m in args.margins if m != ROUND_OFF_MARGIN]
            with ThreadPoolExecutor(args.jobs) as pool:
                outs = list(pool.map(lambda c, n=n: launch(n, args.t_end, c[1], c[2], folder, scratch), cases))
            runs = [dict(np.load(out)) for out in outs]
            base = runs[0]["centres"]
            for (label, dt, _), r in zip(cases, runs, strict=True):
                steps = int(r["steps"])
                records.append(
                    dict(
                        n=n,
                        case=label,
                        dt=dt,
                        margin=float(r["margin"]),
                        t_end=args.t_end,
                        cpu_s=float(r["cpu"]),
                        wall_s=float(r["wall"]),
                        steps=steps,
                        iterations=int(r["iterations"]) / steps,
                        factorizations=int(r["factorizations"]) / steps,
                        residuals=int(r["nfev"]) / steps,
                        splits=int(r["splits"]),
                        **distances(r["centres"], base),
                    )
                )
                print(records[-1], flush=True)
    print_table(
        [
            "N",
            "case",
            "dt [ms]",
            "margin",
            "CPU [s]",
            "wall [s]",
            "steps",
            "it./step",
            "factor./step",
            "residuals/step",
            "splits",
            "centres vs dt, kernel's margin: median [mm]",
            "p99 [mm]",
            "max [mm]",
            "heights: median [mm]",
            "p99 [mm]",
            "max [mm]",
            "heights > 1 mm",
        ],
        [
            [
                r["n"],
                r["case"],
                f"{r['dt'] * 1e3:g}",
                f"{r['margin']:g}",
                f"{r['cpu_s']:.1f}",
                f"{r['wall_s']:.1f}",
                r["steps"],
                f"{r['iterations']:.2f}",
                f"{r['factorizations']:.2f}",
                f"{r['residuals']:.2f}",
                r["splits"],
                f"{r['median_mm']:.3g}",
                f"{r['p99_mm']:.3g}",
                f"{r['max_mm']:.3g}",
                f"{r['height_median_mm']:.3g}",
                f"{r['height_p99_mm']:.3g}",
                f"{r['height_max_mm']:.3g}",
                r["heights_over_1mm"],
            ]
            for r in records
        ],
    )
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    path = write_json(
        args.name,
        {"runs": records, "kernel_margin": ROUND_OFF_MARGIN, "load_at_end": load, "command": " ".join(sys.argv)},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
