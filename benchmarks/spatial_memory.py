"""Peak memory of building a long spatial chain and one forward-dynamics call (issue 18: "a 1e6-link spatial
chain's forward dynamics in under 1 GB").

    python3 benchmarks/spatial_memory.py [--n 1000000] [--kinds spherical revolute]
    /usr/bin/time -v python3 benchmarks/spatial_memory.py --child spherical 1000000 keep   # one process, by hand

Each row runs in a fresh interpreter (``--child KIND N``): it builds the chain exactly as benchmarks/spatial.py does
(``chain_parameters``, ``chain_state``, ``build_ours``: ``Model3D.add_bodies`` then ``compile``), makes one
``rm.forward_dynamics`` call, and reports its resident set size (VmRSS, MB = 1e6 bytes) after the imports and the
numba warm-up (a 2-link chain), after the chain's parameters and state exist, after ``add_bodies``, after
``compile``, after the call, and the whole process's peak (VmHWM, what ``/usr/bin/time -v`` reports as "Maximum
resident set size"). Each chain twice: keeping the per-link parameter arrays (inertia, com, axis) alive through
the call as benchmarks/spatial.py does ("keep"), and dropping them once the model is built ("drop"). The floor is
the forward dynamics' own arrays (packed model, q, v, tau, the workspace: benchmarks/spatial.py's "FD memory") plus
the imports. Writes benchmarks/results/spatial_memory.json.

Measured at N = 1e6 (session 7, loaded machine; MB = 1e6 bytes): whole-process peak, spherical chain 982 ("drop")
and 1077 ("keep"), revolute chain 908 and 1028 (before the revolute joints' register path, s18mem: 1011 and 1132;
before that: spherical 1134 / 1288, revolute 1130 / 1249). The peak is the forward-dynamics call: the imports with
numba's runtime loaded (179), q, v, tau (80 spherical, 24 revolute), the packed model (body_int 48 bytes a body,
body_real 248, the body table's com 24: 320), the workspace (45 floats a body then: 360; 46 now; revolute joints,
like spherical ones, need no S, U D^-1, D^-1 u arrays: their S is formed from the axis and the child point, their
condensation kept in the workspace row) and vdot (24 spherical, 8 revolute); "keep" adds the benchmark's inertia
and com arrays (96). Left: body_int as int64 (int32 would save 24 MB but change every kernel's types), the
joint-axis columns A1, A2 that spherical joints do not read (48 MB), the table's com beside body_real's m c (24 MB).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import subprocess
import sys

import numpy as np
from _common import print_table, write_json
from spatial import GRAVITY, chain_parameters, chain_state, joint_offsets

import recursive_mbd as rm


def _status_mb(key):
    """A /proc/self/status entry (VmRSS, VmHWM) in MB (1e6 bytes)."""
    with open("/proc/self/status") as stream:
        for line in stream:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024 / 1e6
    return float("nan")


def child(kind, n, inputs):
    """Build the chain as benchmarks/spatial.py's build_ours does, one forward-dynamics call; print JSON.
    ``inputs``: "keep" the parameter arrays through the call, or "drop" them after building."""
    small = chain_parameters(kind, 2)
    model = rm.Model3D(gravity=tuple(GRAVITY))
    model.add_bodies(np.arange(2) - 1, joint=kind, child_point=joint_offsets(0)[1], mass=0.1,
                     inertia=small["inertia"], com=small["com"], axis=small["axis"])
    rm.forward_dynamics(model.compile(), *chain_state(small))  # numba's kernels loaded (from the cache)
    del model
    record = {"kind": kind, "n": n, "inputs": inputs, "imports_mb": _status_mb("VmRSS")}
    params = chain_parameters(kind, n)
    q, v, tau = chain_state(params)
    record["inputs_mb"] = _status_mb("VmRSS")
    model = rm.Model3D(gravity=tuple(GRAVITY))
    parent_points = np.zeros((n, 3))
    parent_points[1:] = joint_offsets(1)[0]
    model.add_bodies(np.arange(n) - 1, joint=kind, parent_point=parent_points, child_point=joint_offsets(0)[1],
                     mass=0.1, inertia=params["inertia"], com=params["com"], axis=params["axis"])
    del parent_points
    if inputs == "drop":
        del params
    record["built_mb"] = _status_mb("VmRSS")
    record["build_peak_mb"] = _status_mb("VmHWM")
    model.compile()
    record["compiled_mb"] = _status_mb("VmRSS")
    record["compile_peak_mb"] = _status_mb("VmHWM")
    out = rm.forward_dynamics(model, q, v, tau)
    ws = model._workspace3d
    arrays = (model.body_int, model.body_real, q, v, tau, out, ws.ws, ws.fd_S, ws.UD, ws.uD)
    record["fd_arrays_mb"] = sum(a.nbytes for a in arrays) / 1e6
    record["after_fd_mb"] = _status_mb("VmRSS")
    record["peak_mb"] = _status_mb("VmHWM")
    print(json.dumps(record))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--kinds", nargs="+", default=["spherical", "revolute"])
    parser.add_argument("--child", nargs=3, metavar=("KIND", "N", "INPUTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2])
        return
    rows, records = [], []
    for kind in args.kinds:
        for inputs in ("keep", "drop"):
            out = subprocess.run([sys.executable, __file__, "--child", kind, str(args.n), inputs], check=True,
                                 capture_output=True, text=True).stdout
            record = json.loads(out.strip().splitlines()[-1])
            records.append(record)
            rows.append([kind, f"{args.n:,}", inputs, *(f"{record[key]:.0f}" for key in (
                "imports_mb", "inputs_mb", "built_mb", "build_peak_mb", "compiled_mb", "compile_peak_mb",
                "after_fd_mb", "peak_mb", "fd_arrays_mb"))])
    print_table(["chain", "N", "inputs", "imports", "+inputs", "built", "build peak", "compiled", "compile peak",
                 "after FD", "PEAK (MB)", "FD arrays"], rows)
    write_json("spatial_memory", {"n": args.n, "records": records})


if __name__ == "__main__":
    main()
