"""bdf and generalized_alpha against dopri5 (rtol 1e-12) on seeded random trees, planar and spatial.

    python3 benchmarks/random_tree_agreement.py [--planar 14] [--spatial 16] [--name random_tree_agreement]

Planar: trees of 2-6 bodies (revolute, prismatic, fixed, planar joints; tests/conftest.py's generator) with a joint
spring-damper and a point spring-damper between the first and last body, 0.3 s. Spatial: trees of 2-10 bodies
with every joint type (free and fixed from 8 bodies on) and full inertia tensors (tests/test_spatial_core.py's
generator), 0.2 s. bdf at rtol 1e-9, atol 1e-11: max |q - q_ref| / max(1, max |q_ref|) at 5-7 samples;
generalized_alpha (rho_inf 0.9): the same error at dt = 1e-3 and 5e-4 and their ratio (4 for second order).
Prints a table and writes benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys
import warnings
from pathlib import Path

import numpy as np
from _common import command_line, print_table, write_json

import recursive_mbd as rm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import random_tree_spec  # noqa: E402
from test_spatial_core import random_state, random_tree  # noqa: E402


def planar_case(rng):
    spec = random_tree_spec(rng, int(rng.integers(2, 7)))
    model = rm.Model(gravity=(0.3, -9.81))
    for i, body in enumerate(spec):
        model.add_body(name=f"b{i}", **body)
    movable = [f"b{i}" for i, b in enumerate(spec) if b["joint"] in ("revolute", "prismatic")]
    if movable:
        model.add_joint_spring_damper(movable[0], stiffness=float(rng.uniform(1, 50)),
                                      damping=float(rng.uniform(0, 2)))
    model.add_spring_damper("b0", (0.1, 0.0), f"b{len(spec) - 1}", (0.0, 0.2), stiffness=float(rng.uniform(5, 80)),
                            damping=float(rng.uniform(0, 1)), rest_length=0.3)
    model = model.compile()
    return model, rng.uniform(-0.5, 0.5, model.nq), rng.normal(size=model.nq) * 0.5, 0.3, 7, "".join(
        b["joint"][0] for b in spec)


def spatial_case(rng, index):
    model = random_tree(rng, int(rng.integers(2, 7)) if index < 12 else int(rng.integers(8, 11)))
    q0, v0 = random_state(rng, model)
    return model, q0, 0.3 * v0, 0.2, 5, ",".join(model.joint_types)


def compare(kind, model, q0, qd0, t_end, samples, joints):
    t_eval = np.linspace(0.0, t_end, samples)
    ref = rm.simulate(model, q0, qd0, t_end, method="dopri5", rtol=1e-12, atol=1e-13, t_eval=t_eval)
    scale = max(1.0, np.abs(ref.q).max())

    def error(method, **options):
        res = rm.simulate(model, q0, qd0, t_end, method=method, t_eval=t_eval, **options)
        return float(np.abs(res.q - ref.q).max() / scale)

    ga = [error("generalized_alpha", dt=dt) for dt in (1e-3, 5e-4)]
    return {"kind": kind, "joints": joints, "nq": int(model.nq), "bdf_error": error("bdf", rtol=1e-9, atol=1e-11),
            "ga_errors": ga, "ga_ratio": ga[0] / ga[1]}


def main():
    parser = command_line(__doc__, "random_tree_agreement")
    parser.add_argument("--planar", type=int, default=14)
    parser.add_argument("--spatial", type=int, default=16)
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    rng = np.random.default_rng(7)
    rows = [compare("planar", *planar_case(rng)) for _ in range(args.planar)]
    rng = np.random.default_rng(11)
    rows += [compare("spatial", *spatial_case(rng, i)) for i in range(args.spatial)]
    print_table(["kind", "joints", "nq/nv", "bdf rel. error", "GA error dt 1e-3", "GA error dt 5e-4", "GA ratio"],
                [[r["kind"], r["joints"][:40], r["nq"], f"{r['bdf_error']:.2e}", f"{r['ga_errors'][0]:.2e}",
                  f"{r['ga_errors'][1]:.2e}", f"{r['ga_ratio']:.4f}"] for r in rows])
    for kind in ("planar", "spatial"):
        some = [r for r in rows if r["kind"] == kind]
        if some:
            bdf, ratio = [r["bdf_error"] for r in some], [r["ga_ratio"] for r in some]
            print(f"{kind}: bdf error {min(bdf):.2g} - {max(bdf):.2g}, GA ratio {min(ratio):.4f} - {max(ratio):.4f}")
    print(f"wrote {write_json(args.name, {'rows': rows})}")


if __name__ == "__main__":
    main()
