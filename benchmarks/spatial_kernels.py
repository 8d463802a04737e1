"""Spatial forward dynamics per body: chains of spherical and of revolute joints, a random tree against Pinocchio's
aba, and the floor of the arithmetic.

    python3 benchmarks/spatial_kernels.py [--sizes 1000 10000 100000] [--tree-size 100] [--rounds 7] [--fastest 0]

Chains: those of benchmarks/spatial.py (rods with full inertias and off-axis centres of mass, revolute axes random,
gravity off the axis), N = 1e3, 1e4, 1e5 links; ns per body of rm.forward_dynamics with a preallocated ``out``,
the median of interleaved rounds (the calls timed in turn, so that the load of a shared machine hits them alike).

The general route (``_kernels.spatial.tree.forward_dynamics``, which the time loops call; rm.forward_dynamics takes
the rotary route on these chains) is timed in the same rounds through its fixed-signature entry, column "general".
With ``--fastest K`` the fastest of K single calls of each (taken in turn) is printed too: on a shared, loaded
machine the medians move with the load, the fastest calls much less (at N = 1e5 they still share the memory bus).

Random tree: ``--tree-size`` bodies, each hung from a random earlier body (or the ground) by a spherical or a
revolute joint (random axis), random offsets, masses, full inertias and centres of mass. With Pinocchio
(``pip install pin``) importable, the same tree is built there (joint frames at the joint points, same axes), its
``aba`` checked against ours (relative difference below 1e-9) and timed in the same rounds; without it the
Pinocchio column is left empty.

Floor of the arithmetic: the floating-point operations per body of the kernel rm.forward_dynamics runs (the route of
trees of spherical and revolute joints, ``_kernels.spatial.rotary``; those of the general route,
``_kernels.spatial.tree.forward_dynamics``, printed beside them), counted by running its Python source (numba's
NUMBA_DISABLE_JIT) on numbers that count the operations done on them, on chains of 20 and 40 links
(the difference over 20: one interior body); and the time of one multiply (or fused multiply-add) on this machine,
from a kernel of independent multiply-adds, timed in the same rounds as the chains. The floor is multiplies times
that time (additions go to other execution ports or fuse with multiplies): the kernel cannot be faster without
fewer operations. Writes benchmarks/results/spatial_kernels.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/forward_dynamics.py: one BLAS thread
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import subprocess
import sys
import time

import numba
import numpy as np
from _common import interleaved_samples, print_table, write_json
from spatial import GRAVITY, build_ours, chain_parameters, chain_state, random_rotations

import recursive_mbd as rm
from recursive_mbd._kernels.spatial import entry
from recursive_mbd.dynamics import spatial as spatial_dynamics

AGREEMENT = 1e-9  # relative difference of the accelerations of the tree, ours against Pinocchio's


# ---- timing ----------------------------------------------------------------------------------------------------

def interleaved(funcs, rounds, min_time=0.03):
    """({name: median seconds per call}, {name: [seconds per call of each round]}): the callables timed in turn."""
    samples = interleaved_samples(funcs, rounds, min_time)
    return {name: float(np.median(v)) for name, v in samples.items()}, samples


def fastest(funcs, calls):
    """{name: seconds of the fastest of ``calls`` single calls}, the callables called in turn."""
    best = dict.fromkeys(funcs, np.inf)
    for _ in range(calls):
        for name, func in funcs.items():
            start = time.perf_counter()
            func()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def spread(samples):
    """(max - min) / median of a list of timings: how much the load moved them."""
    return float((np.max(samples) - np.min(samples)) / np.median(samples))


@numba.njit(cache=True, fastmath={"contract"})
def multiply_adds(x, count):
    """count rounds of 8 independent multiply-adds: the machine's throughput of scalar multiplies."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    for _ in range(count):
        a0 = a0 * x[0] + x[1]
        a1 = a1 * x[0] + x[2]
        a2 = a2 * x[0] + x[3]
        a3 = a3 * x[0] + x[4]
        a4 = a4 * x[0] + x[5]
        a5 = a5 * x[0] + x[6]
        a6 = a6 * x[0] + x[7]
        a7 = a7 * x[0] + x[8]
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7


# ---- the random tree, ours and Pinocchio's ----------------------------------------------------------------------

def tree_parameters(n, seed=33):
    """Per-body arrays of a random tree of spherical and revolute joints; frames not rotated (R0 = 1)."""
    rng = np.random.default_rng(seed)
    turn = random_rotations(rng, n)
    moments = rng.uniform(0.02, 0.1, (n, 3))
    moments[:, 2] = rng.uniform(np.abs(moments[:, 0] - moments[:, 1]) + 0.005, moments[:, 0] + moments[:, 1] - 0.005)
    axis = rng.normal(size=(n, 3))
    return dict(n=n, parent=np.array([-1] + [int(rng.integers(-1, i)) for i in range(1, n)]),
                spherical=rng.random(n) < 0.5, parent_point=rng.uniform(-0.3, 0.3, (n, 3)),
                child_point=rng.uniform(-0.3, 0.3, (n, 3)), mass=rng.uniform(0.5, 2.0, n),
                inertia=np.einsum("nij,nj,nkj->nik", turn, moments, turn), com=rng.uniform(-0.2, 0.2, (n, 3)),
                axis=axis / np.linalg.norm(axis, axis=1)[:, None])


def build_tree(params):
    model = rm.Model3D(gravity=tuple(GRAVITY))
    for i in range(params["n"]):
        spherical = bool(params["spherical"][i])
        model.add_body(parent=int(params["parent"][i]), joint="spherical" if spherical else "revolute",
                       parent_point=params["parent_point"][i], child_point=params["child_point"][i],
                       mass=float(params["mass"][i]), inertia=params["inertia"][i], com=params["com"][i],
                       axis=None if spherical else params["axis"][i])
    return model.compile()


def tree_state(model, seed=1):
    rng = np.random.default_rng(seed)
    q = rm.integrate_configuration(model, model.neutral(), 0.5 * rng.normal(size=model.nv))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def build_pinocchio_tree(params):
    """Pinocchio's joint frame i is our body frame i moved to its joint point (same axes): its placement in the
    parent joint's frame is parent_point - the parent's child_point; the centre of mass is com - child_point."""
    import pinocchio as pin  # noqa: PLC0415

    model = pin.Model()
    model.gravity.linear = GRAVITY.copy()
    joint_ids = []
    for i in range(params["n"]):
        parent = int(params["parent"][i])
        offset = params["parent_point"][i] - (params["child_point"][parent] if parent >= 0 else 0.0)
        joint = (pin.JointModelSpherical() if params["spherical"][i]
                 else pin.JointModelRevoluteUnaligned(params["axis"][i].copy()))
        joint_id = model.addJoint(joint_ids[parent] if parent >= 0 else 0, joint, pin.SE3(np.eye(3), offset), f"j{i}")
        model.appendBodyToJoint(joint_id, pin.Inertia(float(params["mass"][i]),
                                                      params["com"][i] - params["child_point"][i],
                                                      params["inertia"][i]), pin.SE3.Identity())
        joint_ids.append(joint_id)
    return pin, model


def pinocchio_q(params, q):
    """Our q (joint order, spherical (w, x, y, z)) in Pinocchio's layout: joints in the same order, (x, y, z, w)."""
    out, k = [], 0
    for spherical in params["spherical"]:
        if spherical:
            out.extend(q[k + 1:k + 4])
            out.append(q[k])
            k += 4
        else:
            out.append(q[k])
            k += 1
    return np.array(out)


def time_tree(n, rounds, notes):
    params = tree_parameters(n)
    model = build_tree(params)
    q, v, tau = tree_state(model)
    out = np.empty(model.nv)
    ours = rm.forward_dynamics(model, q, v, tau).copy()
    funcs = {"recursive_mbd": lambda: rm.forward_dynamics(model, q, v, tau, out=out)}
    record = {"n": n, "nv": model.nv, "spherical": int(np.sum(params["spherical"]))}
    try:
        pin, pin_model = build_pinocchio_tree(params)
    except ImportError:
        notes.append("Pinocchio is not importable (pip install pin): the tree is timed without it")
    else:
        data = pin_model.createData()
        q_pin = pinocchio_q(params, q)
        theirs = pin.aba(pin_model, data, q_pin, v, tau).copy()
        record["pinocchio_version"] = pin.__version__
        record["relative_difference"] = float(np.max(np.abs(theirs - ours)) / np.max(np.abs(ours)))
        if record["relative_difference"] > AGREEMENT:
            raise SystemExit(f"Pinocchio's aba and ours disagree on the tree: {record['relative_difference']:.1e}")
        funcs["pinocchio"] = lambda: pin.aba(pin_model, data, q_pin, v, tau)
    medians, samples = interleaved(funcs, rounds)
    for name, seconds in medians.items():
        record[f"{name}_seconds"] = seconds
        record[f"{name}_spread"] = spread(samples[name])
    if "pinocchio" in medians:
        ratios = np.array(samples["pinocchio"]) / np.array(samples["recursive_mbd"])
        record["pinocchio_over_ours"] = float(np.median(ratios))
    return record


# ---- the floor: operations counted on the kernel's own source ---------------------------------------------------

COUNT_CHILD = r"""
import json, math, sys, types
import numpy as np
sys.path.insert(0, sys.argv[1])
from spatial import build_ours, chain_parameters, chain_state
from recursive_mbd._kernels.spatial import entry, rotary, tree
from recursive_mbd._kernels.spatial.layout import W_SPATIAL

COUNTS = {"mul": 0, "add": 0, "div": 0, "sqrt": 0}


class Counted:
    # a float that counts the arithmetic done on it (negation, abs and comparisons are free)
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = float(x)

    def _op(self, other, kind, func):
        COUNTS[kind] += 1
        return Counted(func(self.x, other.x if isinstance(other, Counted) else other))

    def __add__(self, o): return self._op(o, "add", lambda a, b: a + b)
    def __radd__(self, o): return self._op(o, "add", lambda a, b: b + a)
    def __sub__(self, o): return self._op(o, "add", lambda a, b: a - b)
    def __rsub__(self, o): return self._op(o, "add", lambda a, b: b - a)
    def __mul__(self, o): return self._op(o, "mul", lambda a, b: a * b)
    def __rmul__(self, o): return self._op(o, "mul", lambda a, b: b * a)
    def __truediv__(self, o): return self._op(o, "div", lambda a, b: a / b)
    def __rtruediv__(self, o): return self._op(o, "div", lambda a, b: b / a)
    def __neg__(self): return Counted(-self.x)
    def __abs__(self): return Counted(abs(self.x))
    def __float__(self): return self.x
    def __int__(self): return int(self.x)
    def __lt__(self, o): return self.x < float(o)
    def __le__(self, o): return self.x <= float(o)
    def __gt__(self, o): return self.x > float(o)
    def __ge__(self, o): return self.x >= float(o)
    def __eq__(self, o): return self.x == float(o)
    def __ne__(self, o): return self.x != float(o)


def counted_sqrt(x):
    COUNTS["sqrt"] += 1
    return Counted(math.sqrt(float(x)))


fake_math = types.SimpleNamespace(**{name: getattr(math, name) for name in dir(math) if not name.startswith("_")})
fake_math.sqrt = counted_sqrt
tree.math = fake_math
rotary.math = fake_math


def counted(a):
    out = np.empty(a.shape, dtype=object)
    for index in np.ndindex(a.shape):
        out[index] = Counted(a[index])
    return out


result = {}
for route in ("rotary", "general"):
    for kind in ("spherical", "revolute"):
        per_size = {}
        for n in (20, 40):
            params = chain_parameters(kind, n)
            model = build_ours(params)
            q, v, tau = chain_state(params)
            out = counted(np.zeros(model.nv))
            state = (model.body_int, counted(model.body_real), counted(model.gravity), counted(q), counted(v),
                     counted(tau))
            for key in COUNTS:
                COUNTS[key] = 0
            if route == "rotary":
                status = entry.forward_dynamics_rotary_packed(*state, counted(np.zeros(n * W_SPATIAL + tree.TMP_SIZE)),
                                                              out)
            else:
                S = counted(np.zeros((0, 1, 6)))
                status = tree.forward_dynamics(*state, counted(np.zeros((n, W_SPATIAL))), S, S.copy(),
                                               counted(np.zeros((0, 1))), counted(np.zeros(tree.TMP_SIZE)), out)
            assert status == 0, status
            per_size[n] = dict(COUNTS)
        record = result[f"{kind} {route}"] = {key: (per_size[40][key] - per_size[20][key]) / 20 for key in COUNTS}
        record["vdot"] = [float(x) for x in out]  # at N = 40, for the caller's check against the compiled kernel
print(json.dumps(result))
"""


def operation_counts():
    """{"<joint> <route>": {"mul", "add", "div", "sqrt": per body}} counted on the kernels' Python source (a
    subprocess), route "rotary" (what rm.forward_dynamics runs on these chains) and "general"."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    here = os.path.dirname(os.path.abspath(__file__))
    result = subprocess.run([sys.executable, "-c", COUNT_CHILD, here], env=env, capture_output=True, text=True,
                            check=True)
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    for name, record in counts.items():
        # the counted run computed what the compiled kernels compute (to round-off: FMA contraction)
        kind = name.split()[0]
        params = chain_parameters(kind, 40)
        q, v, tau = chain_state(params)
        exact = rm.forward_dynamics(build_ours(params), q, v, tau)
        difference = np.max(np.abs(np.array(record.pop("vdot")) - exact)) / np.max(np.abs(exact))
        if difference > 1e-12:
            raise SystemExit(f"the counted {name} chain's accelerations differ from the kernel's by {difference:.1e}")
    return counts


# ---- main ------------------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--tree-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--fastest", type=int, default=0, help="also the fastest of this many single calls")
    args = parser.parse_args()
    notes = []
    counts = operation_counts()
    x = np.array([0.999, 1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3, 7e-3, 8e-3])
    repeat = 100_000
    multiply_adds(x, repeat)
    rows, records = [], []
    general_kernel = entry.kernel("general")
    for n in args.sizes:
        funcs, models = {}, {}
        for kind in ("spherical", "revolute"):
            params = chain_parameters(kind, n)
            model = build_ours(params)
            q, v, tau = chain_state(params)
            out = np.empty(model.nv)
            models[kind] = (model, q, v, tau, out)
            funcs[kind] = (lambda model=model, q=q, v=v, tau=tau, out=out:
                           rm.forward_dynamics(model, q, v, tau, out=out))
            general = (model.body_int, model.body_real, model.gravity, q, v, tau,
                       spatial_dynamics.workspace(model).buffer, np.empty(model.nv))
            funcs[f"{kind} general"] = lambda general=general: general_kernel(*general)
        funcs["multiply"] = lambda: multiply_adds(x, repeat)
        medians, samples = interleaved(funcs, args.rounds)
        best = fastest(funcs, args.fastest) if args.fastest else {}
        multiply_ns = medians["multiply"] / (8 * repeat) * 1e9
        for kind in ("spherical", "revolute"):
            floor = counts[f"{kind} rotary"]["mul"] * multiply_ns
            per_body = medians[kind] / n * 1e9
            record = {"n": n, "joint": kind, "ns_per_body": per_body, "spread": spread(samples[kind]),
                      "general_ns_per_body": medians[f"{kind} general"] / n * 1e9, "multiply_ns": multiply_ns,
                      "floor_ns_per_body": floor}
            row = [n, kind, f"{per_body:.1f}", f"{spread(samples[kind]):.2f}", f"{record['general_ns_per_body']:.1f}",
                   f"{floor:.1f}", f"{per_body / floor:.2f}"]
            if best:
                fast_multiply = best["multiply"] / (8 * repeat) * 1e9
                record.update(fastest_ns_per_body=best[kind] / n * 1e9,
                              fastest_general_ns_per_body=best[f"{kind} general"] / n * 1e9,
                              fastest_multiply_ns=fast_multiply)
                row += [f"{record['fastest_ns_per_body']:.1f}", f"{record['fastest_general_ns_per_body']:.1f}",
                        f"{counts[f'{kind} rotary']['mul'] * fast_multiply:.1f}"]
            records.append(record)
            rows.append(row)
    print("forward dynamics of chains, ns per body (medians of interleaved rounds; spread = (max - min) / median; "
          "general: the general route; floor: the rotary route's multiplies x one multiply)")
    header = ["N", "joint", "ns/body", "spread", "general", "floor", "/ floor"]
    if args.fastest:
        header += ["fastest", "fastest general", "fastest floor"]
    print_table(header, rows)
    print("operations per body (an interior body of the chain, counted on the kernels' source; rm.forward_dynamics "
          "runs the rotary route):")
    for kind, c in counts.items():
        print(f"  {kind}: {c['mul']:.0f} multiplies, {c['add']:.0f} additions, {c['div']:.0f} divisions, "
              f"{c['sqrt']:.0f} square roots")
    print(f"one scalar multiply(-add) at full throughput: {records[-1]['multiply_ns']:.3f} ns "
          f"(floor = multiplies x that)")
    tree = time_tree(args.tree_size, args.rounds, notes)
    line = (f"random tree of {tree['n']} bodies ({tree['spherical']} spherical, nv = {tree['nv']}): "
            f"recursive_mbd {tree['recursive_mbd_seconds'] * 1e6:.2f} us per call "
            f"({tree['recursive_mbd_seconds'] / tree['n'] * 1e9:.0f} ns per body)")
    if "pinocchio_seconds" in tree:
        line += (f", Pinocchio {tree['pinocchio_version']} aba {tree['pinocchio_seconds'] * 1e6:.2f} us: "
                 f"Pinocchio / ours = {tree['pinocchio_over_ours']:.2f} (accelerations agree to "
                 f"{tree['relative_difference']:.0e})")
    print(line)
    for note in notes:
        print("note:", note)
    path = write_json("spatial_kernels", {"chains": records, "operations_per_body": counts, "tree": tree,
                                          "notes": notes, "load": os.getloadavg(),
                                          "note": "shared machine (2 cores, several users): medians of "
                                                  "interleaved rounds, noisy"})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
