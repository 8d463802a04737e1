"""Memory a simulation result keeps once the run is over, against its samples' q and qd.

    python3 benchmarks/result_memory.py [--n 2000] [--t-end 0.03] [--name result_memory]

serial_chain(N) from a 1e-3 rad tilt, rk4 at dt = 1e-5 s, every step a sample. "retained" is the growth of the
resident set (/proc/self/statm, Linux) from before the run to after it, with the result alive and garbage
collected: q and qd are what the result must hold; the rest is what else it keeps (before the work columns were
copied, views of them kept the whole integrated state alive: about twice q and qd). A warm-up run first compiles.
Prints a table and writes benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import gc

import numpy as np
from _common import command_line, print_table, write_json

import recursive_mbd as rm


def resident_mb():
    with open("/proc/self/statm") as file:
        return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main():
    parser = command_line(__doc__, "result_memory")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--t-end", type=float, default=0.03)
    args = parser.parse_args()
    model = rm.chains.serial_chain(args.n)
    q0 = np.zeros(args.n)
    q0[0] = 1e-3
    rm.simulate(model, q0, np.zeros(args.n), 2e-4, method="rk4", dt=1e-5)  # warm-up
    gc.collect()
    before = resident_mb()
    result = rm.simulate(model, q0, np.zeros(args.n), args.t_end, method="rk4", dt=1e-5)
    gc.collect()
    retained = resident_mb() - before
    q_qd = (result.q.nbytes + result.qd.nbytes) / 1e6
    row = {"n": args.n, "samples": int(result.t.size), "q_qd_mb": q_qd, "retained_mb": retained,
           "ratio": retained / q_qd}
    print_table(["N", "samples", "q + qd [MB]", "retained [MB]", "retained / (q + qd)"],
                [[row["n"], row["samples"], f"{q_qd:.1f}", f"{retained:.1f}", f"{row['ratio']:.2f}"]])
    print(f"wrote {write_json(args.name, row)}")


if __name__ == "__main__":
    main()
