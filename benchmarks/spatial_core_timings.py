"""Quick figures of the spatial core (issue 18): per-call forward dynamics on chains of spherical and of revolute
joints (random axes), peak memory of a long spherical chain's forward dynamics, compile time of the kernels.

The full comparison against Pinocchio and MuJoCo is benchmarks/spatial.py; this script needs recursive_mbd only.

    python3 benchmarks/spatial_core_timings.py            # timings N = 2 .. 1e5, memory at 1e6, compile time
    python3 benchmarks/spatial_core_timings.py --memory N # (internal) peak memory of one FD call at N links
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_time, write_json  # noqa: E402

import recursive_mbd as rm  # noqa: E402


def chain(n, joint, seed=0):
    """n uniform rods 0.1 m long hanging from the ground, joined by ``joint`` (revolute: random unit axes)."""
    rng = np.random.default_rng(seed)
    model = rm.Model3D()
    parents = np.arange(-1, n - 1)
    axis = rng.normal(size=(n, 3)) if joint == "revolute" else None
    model.add_bodies(parents, joint, parent_point=np.tile([0.0, 0.0, -0.1], (n, 1)) * (parents >= 0)[:, None],
                     mass=1.0 / n, inertia=(1e-4, 1e-4, 1e-6, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.05), axis=axis)
    return model


def state(model, seed=1):
    rng = np.random.default_rng(seed)
    q = rm.integrate_configuration(model, model.neutral(), 0.3 * rng.normal(size=model.nv))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def peak_memory(n):
    """Peak resident memory [MiB] of a process that builds an n-link spherical chain and runs one FD call."""
    start = time.perf_counter()
    model = chain(n, "spherical")
    q, v, tau = state(model)
    out = np.empty(model.nv)
    rm.forward_dynamics(model, q, v, tau, out=out)
    elapsed = time.perf_counter() - start
    call = median_time(lambda: rm.forward_dynamics(model, q, v, tau, out=out), min_time=1.0, repeats=3)
    print(f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} {call:.6g} {elapsed:.3g}")


def compile_time():
    """Seconds to compile (fresh numba cache) and run the first call of each spatial kernel, in a subprocess."""
    code = ("import time, numpy as np, recursive_mbd as rm\n"
            "m = rm.Model3D(); m.add_body(joint='spherical', inertia=1.0, com=(0, 0, -1))\n"
            "q = m.neutral(); v = np.ones(3)\n"
            "t = time.perf_counter(); rm.forward_dynamics(m, q, v); a = time.perf_counter()\n"
            "rm.inverse_dynamics(m, q, v, v); b = time.perf_counter(); rm.mass_matrix(m, q); c = time.perf_counter()\n"
            "rm.energy(m, q, v); rm.forward_kinematics(m, q, v); d = time.perf_counter()\n"
            "print(a - t, b - a, c - b, d - c)")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        warm = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return [float(x) for x in cold.stdout.split()], [float(x) for x in warm.stdout.split()]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="*", default=[2, 10, 200, 10_000, 100_000])
    parser.add_argument("--memory-size", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.memory:
        peak_memory(args.memory)
        return
    rows = []
    # the planar recursive FD of a serial chain of the same N, timed beside: on a loaded machine, the ratio is the
    # figure to compare
    print(f"{'N':>8} {'joint':>10} {'FD per call':>14} {'per link':>10} {'/ planar chain':>15}")
    for n in args.sizes:
        planar = rm.chains.serial_chain(n)
        zeros, out = np.zeros(n), np.empty(n)
        reference = median_time(lambda planar=planar, zeros=zeros, out=out:
                                rm.forward_dynamics(planar, zeros, zeros, out=out), min_time=0.3)
        for joint in ("spherical", "revolute"):
            model = chain(n, joint)
            q, v, tau = state(model)
            out = np.empty(model.nv)
            seconds = median_time(lambda model=model, q=q, v=v, tau=tau, out=out:
                                  rm.forward_dynamics(model, q, v, tau, out=out), min_time=0.5)
            rows.append({"n": n, "joint": joint, "seconds": seconds, "planar_chain_seconds": reference})
            print(f"{n:>8} {joint:>10} {seconds * 1e6:>11.2f} us {seconds / n * 1e9:>7.1f} ns "
                  f"{seconds / reference:>14.1f}x")
    result = subprocess.run([sys.executable, __file__, "--memory", str(args.memory_size)], capture_output=True,
                            text=True, check=True)
    peak, call, build = (float(x) for x in result.stdout.split())
    print(f"spherical chain of {args.memory_size} links: peak memory {peak:.0f} MiB (build + first FD call), "
          f"FD {call * 1e3:.1f} ms per call, build + compile-from-cache + first call {build:.1f} s")
    cold, warm = compile_time()
    print(f"compile (fresh cache) FD {cold[0]:.1f} s, ID {cold[1]:.1f} s, CRBA {cold[2]:.1f} s, energy + kinematics "
          f"{cold[3]:.1f} s: {sum(cold):.1f} s; from the cache: {sum(warm):.2f} s")
    path = write_json("spatial_core_timings", {"forward_dynamics": rows, "memory": {
        "n": args.memory_size, "peak_mib": peak, "seconds_per_call": call}, "compile_seconds": cold,
        "cached_seconds": warm, "note": "shared machine (2 cores, several users): medians, noisy"})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
