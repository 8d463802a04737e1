"""Recursive versus augmented formulation on a small chain: same accelerations, same motion, constraint drift.

    python3 examples/formulations.py [N] [t_end] [--quick] [--plot out.png]

Builds serial_chain(N), checks that the augmented KKT solution (the two-squares tutorial) gives the recursive
accelerations, simulates both formulations and prints how far apart they end and how the augmented constraints drift
with and without stabilisation; with --plot (matplotlib) it draws the drift. The full scaling comparison is
benchmarks/formulations.py. Both formulations run in the same compiled time loops (the augmented one with its
compiled tree-ordered KKT solve); --quick runs serial_chain(4) for 0.2 s at rtol 1e-8.
"""

import time

import numpy as np
from _options import parse, parser, pyplot

import recursive_mbd as rm
from recursive_mbd.dynamics import augmented

arg_parser = parser(__doc__, plot="FILE")
arg_parser.add_argument("n", type=int, nargs="?", default=None, help="links (default 10; 4 with --quick)")
arg_parser.add_argument("t_end", type=float, nargs="?", default=None,
                        help="simulated time [s] (default 2; 0.2 with --quick)")
arg_parser.add_argument("--quick", action="store_true", help="a small, short, looser run (a few seconds)")
args = parse(arg_parser)
args.n = args.n if args.n is not None else (4 if args.quick else 10)
args.t_end = args.t_end if args.t_end is not None else (0.2 if args.quick else 2.0)
rtol, atol = (1e-8, 1e-10) if args.quick else (1e-10, 1e-12)

model = rm.chains.serial_chain(args.n)
q0 = np.full(args.n, 0.3)
z, zd = augmented.absolute_from_joint(model, q0, np.zeros(args.n))
zdd, lam = augmented.forward_dynamics(model, z, zd)
qdd_augmented = augmented.joint_accelerations(model, z, zd, zdd)
qdd_recursive = rm.forward_dynamics(model, q0, np.zeros(args.n))
print(f"serial_chain({args.n}): accelerations agree to {np.max(np.abs(qdd_augmented - qdd_recursive)):.1e}")

rm.simulate(model, q0, np.zeros(args.n), 1e-3)  # load the compiled kernels outside the timing
start = time.perf_counter()
recursive = rm.simulate(model, q0, np.zeros(args.n), args.t_end, rtol=rtol, atol=atol)
print(f"recursive: {recursive.nsteps} steps in {time.perf_counter() - start:.2f} s")
runs = {}
for label, options in (("none", dict(stabilization="none")), ("Baumgarte 10, 10", dict(alpha=10.0, beta=10.0)),
                       ("projection", dict(stabilization="projection"))):
    start = time.perf_counter()
    res = rm.simulate(model, q0, np.zeros(args.n), args.t_end, formulation="augmented", rtol=rtol, atol=atol,
                      **options)
    runs[label] = res
    print(f"augmented, {label}: {res.nsteps} steps in {time.perf_counter() - start:.2f} s, "
          f"|q - q_recursive| at the end {np.max(np.abs(res.q[-1] - recursive.q[-1])):.1e}, "
          f"drift max |C| {res.constraint_drift.max():.1e}")

if args.plot:
    fig, ax = pyplot().subplots(figsize=(7, 4))
    for label, res in runs.items():
        ax.semilogy(res.t, np.maximum(res.constraint_drift, 1e-17), label=label)
    ax.set(xlabel="t [s]", ylabel="max |C| [m, rad]", title=f"augmented serial_chain({args.n}): constraint drift")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    print(f"wrote {args.plot}")
