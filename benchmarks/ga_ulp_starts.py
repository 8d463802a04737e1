"""Do the last bits of a start decide generalized_alpha's steps? The 600-link landing from starts one unit in the
last place apart.

    python3 benchmarks/ga_ulp_starts.py [--starts 100] [--seed 0]

The chain of ``benchmarks/contact.py`` (``chain``: 600 capsule links of 1 cm and 10 g, held horizontally with a
gentle wave and dropped 5 cm onto a table; k = 1e4 N/m, e = 0.3, mu = 0.3) run to t = 0.11 s by generalized_alpha
(dt = 0.125 ms, rho_inf = 0.5) at the default newton_tol 1e-12, from the start as given and from starts with one
joint angle (drawn at random) moved up by one unit in its last place: a change of the size by which two processors
or two compilers round the same arithmetic differently. For each start: the steps split in halves
(``result.newton_split_steps``), Newton iterations and factorisations, and the largest distance of a link's centre
from the run at newton_tol 1e-10 from the start as given (round-off: about 1e-14 m; a split step: the scheme's
error at dt / 2, about 1e-4 m). Prints a summary table; writes benchmarks/results/ga_ulp_starts.json.
"""

import argparse
import math
import time

import numpy as np
from _common import print_table, write_json
from contact import chain

import recursive_mbd as rm


def landing(model, q0, **options):
    return rm.simulate(model, q0, np.zeros_like(q0), 0.11, method="generalized_alpha", dt=1.25e-4, rho_inf=0.5,
                       t_eval=[0.11], **options)


def main(starts=100, seed=0):
    print(f"recursive_mbd from {rm.__file__}")
    model, q0 = chain(600)
    loose = landing(model, q0, newton_tol=1e-10)
    reference = rm.augmented.absolute_from_joint(model, loose.q[-1], loose.qd[-1])[0][2:, :2]
    rng = np.random.default_rng(seed)
    records = []
    for k in range(starts):
        start = q0.copy()
        changed = None
        if k:
            changed = int(rng.integers(2, q0.size))  # a joint angle (not the two sliders)
            start[changed] = np.nextafter(start[changed], np.inf)
        began = time.perf_counter()
        result = landing(model, start)
        wall = time.perf_counter() - began
        centres = rm.augmented.absolute_from_joint(model, result.q[-1], result.qd[-1])[0][2:, :2]
        records.append({"changed_coordinate": changed, "split_steps": int(result.newton_split_steps),
                        "newton_iterations": int(result.newton_iterations),
                        "factorizations": int(result.newton_factorizations),
                        "distance_m": float(np.abs(centres - reference).max()), "wall_s": wall})
    split = [r for r in records if r["split_steps"]]
    rows = [[len(records), len(split), ", ".join(str(r["changed_coordinate"]) for r in split) or "-",
             f"{max(r['distance_m'] for r in records):.3e}",
             f"{max((r['distance_m'] for r in records if not r['split_steps']), default=math.nan):.3e}",
             int(np.median([r["newton_iterations"] for r in records])),
             f"{np.median([r['wall_s'] for r in records]):.2f}"]]
    print(f"600-link landing to 0.11 s, generalized_alpha dt 0.125 ms, rho_inf 0.5, newton_tol 1e-12; starts one ulp "
          f"apart (seed {seed}); distance: largest of a link's centre from the newton_tol 1e-10 run")
    print_table(["starts", "with splits", "changed coordinates of those", "max distance [m]",
                 "max distance, no split [m]", "median iterations", "median wall [s]"], rows)
    path = write_json("ga_ulp_starts", {"starts": starts, "seed": seed, "runs": records})
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=100, help="starts: the one as given, then one-ulp changes")
    parser.add_argument("--seed", type=int, default=0, help="seed of the changed coordinates")
    args = parser.parse_args()
    main(args.starts, args.seed)
