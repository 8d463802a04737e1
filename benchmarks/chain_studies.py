"""Cost of the chain studies, and the scale runs: a 1e5-link chain simulated, a 1e6-link chain stepped.

    python3 benchmarks/chain_studies.py [--quick]

Times chain_modes (the O(N)-per-iteration Lanczos solve) up to 1e6 links, the discrete catenary, the folded-chain
fall and the tip whip; then, each in a fresh process so that its peak memory is its own: serial_chain(1e5) hanging
in its first mode, dopri5 at rtol 1e-6 for 5 ms of simulated time, and serial_chain(1e6) for 3 rk4 steps
(the first call, which compiles the time loop, is timed apart).
Prints tables and writes benchmarks/results/chain_studies.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm
from recursive_mbd.analysis import studies


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start


def _peak_memory_mb():
    """This process's peak resident memory: VmHWM (ru_maxrss would carry the parent's peak across fork/exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scale_run(n, t_end, method):
    """One run in this process: (wall seconds, steps, evaluations, peak RSS MB); prints JSON."""
    chain = rm.chains.serial_chain(n)
    omega, shape = studies.chain_modes(chain, 1) if method == "dopri5" else (None, np.ones((n, 1)) / n)
    q0 = 0.05 * shape[:, 0] / np.abs(np.cumsum(shape[:, 0])).max()
    options = dict(rtol=1e-6, atol=1e-8, every=10**9) if method == "dopri5" else dict(dt=t_end / 3)
    _, first = timed(rm.simulate, chain, q0, np.zeros(n), t_end * 1e-3, method=method, **options)  # compiles
    res, wall = timed(rm.simulate, chain, q0, np.zeros(n), t_end, method=method, **options)
    peak = _peak_memory_mb()
    print(json.dumps(dict(n=n, method=method, t_end=t_end, wall_s=wall, steps=res.nsteps, nfev=res.nfev,
                          peak_rss_mb=peak, first_call_s=first)))


def main(quick):
    rows, records = [], {}
    sizes = [10**3, 10**4, 10**5] + ([] if quick else [10**6])
    modes = []
    for n in sizes:
        (omega, _), seconds = timed(studies.chain_modes, rm.chains.serial_chain(n), 3)
        modes.append(dict(n=n, seconds=seconds, omega=omega.tolist()))
        rows.append([n, f"{seconds:.3f}", " ".join(f"{w:.8f}" for w in omega)])
    print("chain_modes (3 lowest, Lanczos with O(N) operators)")
    print_table(["N", "seconds", "omega [rad/s]"], rows)
    records["chain_modes"] = modes

    rows, cat = [], []
    for n in [20, 100, 500] + ([] if quick else [1000]):
        result, seconds = timed(studies.discrete_catenary, n, 6.0, 10.0, 5.0)
        cat.append(dict(n=n, seconds=seconds, sag=result["sag"], method=result["equilibrium"].method))
        rows.append([n, f"{seconds:.3f}", f"{result['sag']:.9f}", result["equilibrium"].method])
    print("discrete catenary (static equilibrium)")
    print_table(["N", "seconds", "sag [m]", "method"], rows)
    records["catenary"] = cat

    rows, falls = [], []
    for n in [20, 50] + ([] if quick else [100, 200, 500, 1000]):
        fall, seconds = timed(studies.folded_chain_fall, n, 0.05)
        falls.append(dict(n=n, seconds=seconds, steps=fall["result"].nsteps, fall_time=fall["fall_time"],
                          max_speed=fall["max_speed"], energy_error=fall["energy_error"]))
        rows.append([n, f"{seconds:.2f}", fall["result"].nsteps, f"{fall['fall_time']:.5f}",
                     f"{fall['fall_time'] / fall['free_fall_time']:.4f}", f"{fall['energy_error']:.1e}"])
    print("folded-chain fall (rtol 1e-10)")
    print_table(["N", "seconds", "steps", "fall time [s]", "/ free fall", "energy error"], rows)
    records["folded_chain"] = falls

    rows, whips = [], []
    for n in [10, 50] + ([] if quick else [100, 200, 500, 1000]):
        for method, rtol in (("dopri5", 1e-8), ("dop853", 1e-10)):
            whip = studies.tip_whip(n, method=method, rtol=rtol, atol=rtol * 1e-2)
            whips.append(dict(n=n, method=method, rtol=rtol, **{k: whip[k] for k in (
                "max_tip_speed", "whip_time", "nsteps", "nrejected", "nfev", "whip_step", "seconds", "energy_error")}))
            rows.append([n, method, f"{rtol:.0e}", f"{whip['max_tip_speed']:.4f}", whip["nsteps"], whip["nrejected"],
                         f"{whip['whip_step']:.1e}", f"{whip['seconds']:.2f}", f"{whip['energy_error']:.1e}"])
    print("tip whip (released from the horizontal, one swing)")
    print_table(["N", "method", "rtol", "max tip speed", "steps", "rejected", "step at whip", "seconds",
                 "energy error"], rows)
    records["tip_whip"] = whips

    scale = []
    for n, t_end, method in ((10**5, 5e-3, "dopri5"), (10**6, 3e-6, "rk4")):
        out = subprocess.run([sys.executable, __file__, "--scale", str(n), str(t_end), method], capture_output=True,
                             text=True, check=True)
        scale.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("scale runs (each in a fresh process)")
    print_table(["N", "method", "t_end [s]", "wall [s]", "steps", "steps/s", "peak RSS [MB]", "first call [s]"],
                [[r["n"], r["method"], r["t_end"], f"{r['wall_s']:.1f}", r["steps"],
                  f"{r['steps'] / r['wall_s']:.1f}", f"{r['peak_rss_mb']:.0f}", f"{r['first_call_s']:.1f}"]
                 for r in scale])
    records["scale"] = scale
    print(f"wrote {write_json('chain_studies', records)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--scale", nargs=3, metavar=("N", "T_END", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scale:
        scale_run(int(args.scale[0]), float(args.scale[1]), args.scale[2])
    else:
        main(args.quick)
