"""Cost of the compiled time loops per right-hand-side evaluation and per call, and how fast Ctrl-C stops a run.

    python3 benchmarks/run_control.py [--repeats 5] [--name run_control] [--no-interrupt]

serial_chain(N) for N = 3 and 20, rk4 (dt 1e-4) and dopri5 (rtol 1e-10), with no tau, a compiled (numba) tau and
a Python tau: the median over repeats of wall time / evaluations [ns]; and the fixed cost of one simulate call
(dopri5 over 1 ms of a 3-link chain, median of 50) [us]. Run it on two checkouts (PYTHONPATH) to
compare the loops before and after a change (the ratio is what counts on a loaded machine). Then the latency of
Ctrl-C: a child process runs a long rk4 simulation, receives SIGINT, and reports when KeyboardInterrupt reached
it; and the same against the samples stored: serial_chain(20), dopri5 storing every step, SIGINT after 0.5, 2 and
6 s (about 1e4 to 1e6 samples, depending on the machine), with the time the first access of .result then takes
(building the result copies every sample). Writes benchmarks/results/<name>.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import signal
import subprocess
import sys
import textwrap
import time

import numba
import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm


@numba.njit
def compiled_tau(t, q, qd):
    return -1e-4 * qd


def python_tau(t, q, qd):
    return -1e-4 * qd


def evaluation_costs(repeats):
    records = []
    for n in (3, 20):
        model = rm.chains.serial_chain(n)
        q0 = np.zeros(n)
        q0[0] = 0.5
        for method, options in (("rk4", {"dt": 1e-4}), ("dopri5", {"rtol": 1e-10, "atol": 1e-12})):
            for label, tau in (("none", None), ("compiled", compiled_tau), ("python", python_tau)):
                t_end = 0.2 if label == "python" else 2.0
                rm.simulate(model, q0, np.zeros(n), 0.01, method=method, tau=tau, **options)  # compile
                samples = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    res = rm.simulate(model, q0, np.zeros(n), t_end, method=method, tau=tau, every=10**9, **options)
                    samples.append((time.perf_counter() - start) / res.nfev)
                records.append({"n": n, "method": method, "tau": label, "ns_per_evaluation":
                                float(np.median(samples)) * 1e9})
    return records


CHILD = """
import sys, time
import numpy as np
import recursive_mbd as rm
model = rm.chains.serial_chain(20)
rm.simulate(model, np.full(20, 0.3), np.zeros(20), 1e-3, method="rk4", dt=1e-3)
print("running", flush=True)
try:
    rm.simulate(model, np.full(20, 0.3), np.zeros(20), 1e4, method="rk4", dt=1e-3)
    print("finished", flush=True)
except KeyboardInterrupt as exc:
    print(repr(time.time()), getattr(getattr(exc, "result", None), "status", None), flush=True)
"""


def interrupt_latency(repeats):
    latencies = []
    for _ in range(repeats):
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD)], stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ))
        child.stdout.readline()
        time.sleep(0.3)
        sent = time.time()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=120)
        fields = out.split()
        latencies.append((float(fields[0]) - sent) if fields and fields[0] != "finished" else float("nan"))
    return latencies


SAMPLES_CHILD = """
import os, signal, sys, threading, time
import numpy as np
import recursive_mbd as rm
model = rm.chains.serial_chain(20)
q0 = np.full(20, 0.1)
rm.simulate(model, q0, np.zeros(20), 1e-3, rtol=1e-6, atol=1e-9)  # compile first
sent = []
threading.Timer(float(sys.argv[1]), lambda: (sent.append(time.perf_counter()), os.kill(os.getpid(),
                                                                                        signal.SIGINT))).start()
try:
    rm.simulate(model, q0, np.zeros(20), 1e6, rtol=1e-6, atol=1e-9, progress=False)
    print("finished", flush=True)
except KeyboardInterrupt as exc:
    caught = time.perf_counter()
    samples = exc.result.t.size
    print(samples, caught - sent[0], time.perf_counter() - caught, flush=True)
"""


def interrupt_latency_by_samples(delays=(0.5, 2.0, 6.0)):
    """(samples stored, Ctrl-C to KeyboardInterrupt [s], first access of .result [s]) per delay of the signal."""
    records = []
    for delay in delays:
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(SAMPLES_CHILD), str(delay)], check=True,
                             capture_output=True, text=True, env=dict(os.environ), timeout=600).stdout.split()
        if len(out) == 3:
            records.append({"delay_s": delay, "samples": int(out[0]), "latency_s": float(out[1]),
                            "result_s": float(out[2])})
    return records


def call_overhead():
    model = rm.chains.serial_chain(3)
    q0 = np.array([0.5, 0.0, 0.0])
    rm.simulate(model, q0, np.zeros(3), 1e-3)
    samples = []
    for _ in range(50):
        start = time.perf_counter()
        rm.simulate(model, q0, np.zeros(3), 1e-3)
        samples.append(time.perf_counter() - start)
    return float(np.median(samples)) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--name", default="run_control", help="name of the JSON file in benchmarks/results")
    parser.add_argument("--no-interrupt", action="store_true", help="costs only (a version without interrupts)")
    args = parser.parse_args()
    records = evaluation_costs(args.repeats)
    print_table(["N", "method", "tau", "ns / evaluation"],
                [[r["n"], r["method"], r["tau"], f"{r['ns_per_evaluation']:.0f}"] for r in records])
    overhead = call_overhead()
    print(f"one simulate call over 1 ms (N = 3, dopri5): {overhead:.0f} us")
    latencies = [] if args.no_interrupt else interrupt_latency(3)
    print("Ctrl-C to KeyboardInterrupt [s]: " + ", ".join(f"{x:.3f}" for x in latencies))
    by_samples = [] if args.no_interrupt else interrupt_latency_by_samples()
    if by_samples:
        print_table(["samples stored", "Ctrl-C to KeyboardInterrupt [s]", "first .result [s]"],
                    [[r["samples"], f"{r['latency_s']:.4f}", f"{r['result_s']:.3f}"] for r in by_samples])
    payload = {"records": records, "call_us": overhead, "interrupt_latency_s": latencies,
               "interrupt_by_samples": by_samples}
    print(f"wrote {write_json(args.name, payload)}")


if __name__ == "__main__":
    main()
