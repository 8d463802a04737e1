"""Spatial forward dynamics per call on chains, against Pinocchio ABA and MuJoCo mj_forward (issue 18).

    python3 benchmarks/spatial.py [--max-n 1000000] [--quick] [--pinocchio-max-n 200] [--memory-gb 4]
                                  [--min-n 2] [--pinocchio-memory-share 0.5] [--clock thread]

Two chains, N = 2 ... 1e6 links: spherical joints (nq = 4N, nv = 3N), and revolute joints about random axes (seeded)
in the joint frames. Each link is a rod 0.1 m long along its body -z, hinged at its top to the bottom of the
previous one, 0.1 kg, with a full inertia tensor (a rod's, turned by a random rotation) and its centre of mass
slightly off the rod axis; gravity (0.3, -0.2, -9.81). The same parameters build the Pinocchio model (joint
placements, ``pin.Inertia``) and the MuJoCo model (nested bodies, ``fullinertia``, ball / hinge joints).

Before any timing, the accelerations of all three at the benchmark state are compared: a peer agrees when they
agree to 1e-8 relative (max |difference| / max |qdd|) or, where cond(M) (~1e9 at N = 100 on the spherical chain)
makes 1e-8 unreachable in double precision, when the peer's accelerations satisfy recursive_mbd's M qdd + h = tau
(CRBA, RNEA) to a backward error of 1e-13 (round-off gives ~1e-15). A peer that fails both is timed but marked
WRONG in the table and in a note (Pinocchio 4.1's ABA on the spherical chain beyond ~30 links); recursive_mbd
failing its own CRBA/RNEA equations stops the script. Timings are medians of interleaved rounds (the callables
timed in turn, so machine load hits them alike): rm.forward_dynamics with a preallocated ``out``, pin.aba with its
Data, mj_forward on its MjData. Where no peer fits (N > 1023), recursive_mbd is timed in the memory subprocess
(median of repeats), so that a 1e6-link chain is built once.

Memory: each library's peak resident set size in a fresh subprocess that imports it, builds the chain and makes one
forward-dynamics call ("MB": peak, and its growth over the same process right after its imports; for
recursive_mbd this includes the Python builder's per-body objects), and recursive_mbd's forward-dynamics memory
("FD MB": the packed model arrays, q, v, tau, and the tracemalloc peak of the first call, which allocates the
workspace). Pinocchio's Data grows like N^3 (spherical chain: 0.3 GB at N = 50, 1.8 GB at 100, 13.7 GB at 200):
a Pinocchio memory row is run only where 1.8 GB (N / 100)^3 fits in --memory-gb, and Pinocchio is timed up to
--pinocchio-max-n where that fits in --pinocchio-memory-share (default half) of the available memory. MuJoCo
refuses bodies nested deeper than 1023 (its XML parser earlier, so the model is built with MjSpec): the refusal at
N = 1024 is caught and reported. Writes benchmarks/results/spatial.json (spatial_quick.json with --quick).

Pinocchio (``pip install pin``) and MuJoCo (``pip install mujoco``) are optional: rows are left empty without them.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/forward_dynamics.py: one BLAS thread
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

import forward_dynamics
import numpy as np
from _common import median_time, print_table, write_json
from forward_dynamics import CLOCK, interleaved

import recursive_mbd as rm

LINK = 0.1  # rod length [m]
MASS = 0.1  # rod mass [kg]
RADIUS = 0.01  # rod radius [m], for its axial moment of inertia
GRAVITY = np.array([0.3, -0.2, -9.81])
AGREEMENT = 1e-8  # relative difference of the accelerations
BACKWARD_AGREEMENT = 1e-13  # or backward error in our equations, where cond(M) ~ 1e9+ forbids 1e-8
KINDS = ("spherical", "revolute")


# ---- the chain's parameters and state --------------------------------------------------------------------------

def random_rotations(rng, n):
    """n uniformly random rotation matrices (n, 3, 3) from normalised Gaussian quaternions (w, x, y, z)."""
    quat = rng.normal(size=(n, 4))
    quat /= np.linalg.norm(quat, axis=1)[:, None]
    w, x, y, z = quat.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)


def chain_parameters(kind, n, seed=18):
    """Per-link arrays: inertia (n, 3, 3) about the centre of mass, com (n, 3), axis (n, 3) (revolute only).

    Rod frame at its centre, joint at (0, 0, LINK / 2) in the rod, the next rod hinged at (0, 0, -LINK / 2)."""
    rng = np.random.default_rng(seed)
    transverse = MASS * (LINK**2 / 12 + RADIUS**2 / 4)
    moments = np.array([transverse, transverse, MASS * RADIUS**2 / 2])
    turn = random_rotations(rng, n)
    inertia = np.einsum("nij,j,nkj->nik", turn, moments, turn)
    com = rng.uniform(-0.2, 0.2, (n, 3)) * np.array([RADIUS, RADIUS, LINK])
    axis = rng.normal(size=(n, 3)) if kind == "revolute" else None
    if axis is not None:
        axis /= np.linalg.norm(axis, axis=1)[:, None]
    return dict(kind=kind, n=n, inertia=inertia, com=com, axis=axis)


def chain_state(params, seed=1):
    """(q, v, tau) in recursive_mbd's layout: rotations of about 0.3 rad, rates of about 0.5 rad/s, small torques."""
    rng = np.random.default_rng(seed)
    n = params["n"]
    if params["kind"] == "spherical":
        rotvec = 0.3 * rng.normal(size=(n, 3)) / np.sqrt(3)
        angle = np.linalg.norm(rotvec, axis=1)
        quat = np.concatenate([np.cos(angle / 2)[:, None], np.sin(angle / 2)[:, None] * rotvec / angle[:, None]], 1)
        nv = 3 * n
        return quat.reshape(-1).copy(), 0.5 * rng.normal(size=nv), 0.01 * rng.normal(size=nv)
    return 0.3 * rng.normal(size=n), 0.5 * rng.normal(size=n), 0.01 * rng.normal(size=n)


def joint_offsets(i):
    """(parent_point, child_point) of link i in its parent's and its own frame."""
    return np.array([0.0, 0.0, 0.0 if i == 0 else -LINK / 2]), np.array([0.0, 0.0, LINK / 2])


# ---- the three libraries' models -------------------------------------------------------------------------------

def build_ours(params):
    """The chain through Model3D.add_bodies (the vectorised add_body: same checks, for very long chains)."""
    n = params["n"]
    model = rm.Model3D(gravity=tuple(GRAVITY))
    parent_points = np.zeros((n, 3))
    parent_points[1:] = joint_offsets(1)[0]
    model.add_bodies(np.arange(n) - 1, joint=params["kind"], parent_point=parent_points,
                     child_point=joint_offsets(0)[1], mass=MASS, inertia=params["inertia"], com=params["com"],
                     axis=params["axis"])
    return model.compile()


def build_pinocchio(params):
    """Pinocchio joint frame i = our body frame i moved to the joint point (same axes): placement of joint i in
    joint i - 1 is parent_point - child_point (of the parent), the inertia's centre of mass is com - child_point."""
    import pinocchio as pin  # noqa: PLC0415

    model = pin.Model()
    model.gravity.linear = GRAVITY.copy()
    parent = 0
    for i in range(params["n"]):
        parent_point, child_point = joint_offsets(i)
        offset = parent_point - (joint_offsets(i - 1)[1] if i else 0.0)
        joint = (pin.JointModelSpherical() if params["kind"] == "spherical"
                 else pin.JointModelRevoluteUnaligned(params["axis"][i].copy()))
        parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), offset), f"j{i}")
        model.appendBodyToJoint(parent, pin.Inertia(MASS, params["com"][i] - child_point, params["inertia"][i]),
                                pin.SE3.Identity())
    return model


def pinocchio_q(params, q):
    """Pinocchio's spherical configuration is (x, y, z, w) per joint."""
    if params["kind"] != "spherical":
        return q
    return q.reshape(-1, 4)[:, [1, 2, 3, 0]].reshape(-1).copy()


def xml_numbers(values):
    """Space-separated shortest round-trip decimals (MuJoCo parses them back to the same doubles)."""
    return " ".join(repr(float(x)) for x in np.ravel(values))


def mujoco_xml(params):
    """Nested bodies: MuJoCo body frame i = the Pinocchio joint frame i (joint anchor at the body origin)."""
    body = ""
    for i in range(params["n"] - 1, -1, -1):
        parent_point, child_point = joint_offsets(i)
        offset = parent_point - (joint_offsets(i - 1)[1] if i else 0.0)
        inertia = params["inertia"][i]
        full = xml_numbers([inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]])
        joint = ('<joint type="ball"/>' if params["kind"] == "spherical"
                 else f'<joint type="hinge" axis="{xml_numbers(params["axis"][i])}"/>')
        com = xml_numbers(params["com"][i] - child_point)
        body = (f'<body pos="{xml_numbers(offset)}">{joint}<inertial pos="{com}" mass="{MASS!r}" '
                f'fullinertia="{full}"/>{body}</body>')
    return (f'<mujoco><compiler angle="radian"/><option gravity="{xml_numbers(GRAVITY)}"/>'
            f"<worldbody>{body}</worldbody></mujoco>")


def build_mujoco(params, xml=False):
    """The MuJoCo model, built with MjSpec (no XML: its parser stops at a nesting depth below 1000), or from
    ``mujoco_xml`` when ``xml``; both give the same model. MuJoCo itself refuses bodies deeper than 1023."""
    import mujoco  # noqa: PLC0415

    if xml:
        return mujoco.MjModel.from_xml_string(mujoco_xml(params))
    spec = mujoco.MjSpec()
    spec.option.gravity = GRAVITY.copy()
    body = spec.worldbody
    for i in range(params["n"]):
        parent_point, child_point = joint_offsets(i)
        inertia = params["inertia"][i]
        body = body.add_body(pos=parent_point - (joint_offsets(i - 1)[1] if i else 0.0), mass=MASS,
                             ipos=params["com"][i] - child_point, explicitinertial=True,
                             fullinertia=[inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2],
                                          inertia[1, 2]])
        if params["kind"] == "spherical":
            body.add_joint(type=mujoco.mjtJoint.mjJNT_BALL)
        else:
            body.add_joint(type=mujoco.mjtJoint.mjJNT_HINGE, axis=params["axis"][i].copy())
    return spec.compile()


# ---- timing and agreement --------------------------------------------------------------------------------------

def peers_available():
    found = {}
    for name in ("pinocchio", "mujoco"):
        try:
            __import__(name)
            found[name] = True
        except ImportError:
            found[name] = False
    return found


def available_memory_bytes():
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def relative_difference(a, b):
    """max |a - b| / max |b|."""
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def backward_error(M, h, tau, qdd):
    """Normwise backward error of qdd in the equations M qdd + h = tau (recursive_mbd's CRBA and RNEA):
    max |M qdd + h - tau| / (max |M| max |qdd| + max |tau - h|). Round-off gives ~1e-16 however ill-conditioned
    M is; a different model or a lost digit gives much more."""
    residual = M @ qdd + h - tau
    return float(np.max(np.abs(residual)) / (np.max(np.abs(M)) * np.max(np.abs(qdd)) + np.max(np.abs(tau - h))))


def check_agreement(model, q, v, tau, ours, peers):
    """{library: (relative difference to ours, backward error in our equations)}, ours included (its own
    backward error: articulated-body FD against CRBA + RNEA) and cond(M). A peer agrees when the accelerations
    agree to AGREEMENT, or, where cond(M) makes that impossible in double precision, when its backward error
    is at round-off level (below BACKWARD_AGREEMENT)."""
    M = rm.mass_matrix(model, q)
    h = rm.bias_forces(model, q, v)
    report = {"recursive_mbd": (0.0, backward_error(M, h, tau, ours))}
    for name, qdd in peers.items():
        report[name] = (relative_difference(qdd, ours), backward_error(M, h, tau, qdd))
    return report, float(np.linalg.cond(M))


def agrees(record):
    difference, backward = record
    return difference <= AGREEMENT or backward <= BACKWARD_AGREEMENT


def time_chain(params, use_pinocchio, use_mujoco, notes):
    """Median seconds per call {library: s} (interleaved rounds), the agreement report and cond(M)."""
    model = build_ours(params)
    q, v, tau = chain_state(params)
    out = np.empty(model.nv)
    ours = rm.forward_dynamics(model, q, v, tau).copy()
    funcs = {"recursive_mbd": lambda: rm.forward_dynamics(model, q, v, tau, out=out)}
    peers = {}
    if use_pinocchio:
        import pinocchio as pin  # noqa: PLC0415

        pin_model = build_pinocchio(params)
        pin_data = pin_model.createData()
        q_pin = pinocchio_q(params, q)
        peers["pinocchio"] = pin.aba(pin_model, pin_data, q_pin, v, tau).copy()
        funcs["pinocchio"] = lambda: pin.aba(pin_model, pin_data, q_pin, v, tau)
    if use_mujoco:
        import mujoco  # noqa: PLC0415

        mj_model = build_mujoco(params)
        mj_data = mujoco.MjData(mj_model)
        mj_data.qpos[:], mj_data.qvel[:], mj_data.qfrc_applied[:] = q, v, tau
        mujoco.mj_forward(mj_model, mj_data)
        peers["mujoco"] = mj_data.qacc.copy()
        funcs["mujoco"] = lambda: mujoco.mj_forward(mj_model, mj_data)
    agreement, cond = check_agreement(model, q, v, tau, ours, peers) if peers else ({}, None)
    for name, record in agreement.items():
        if not agrees(record):
            notes.append(f"{name} DISAGREES on the {params['kind']} chain at N = {params['n']}: relative difference "
                         f"{record[0]:.1e}, backward error {record[1]:.1e} in recursive_mbd's M qdd + h = tau "
                         f"(cond(M) = {cond:.1e}); its time is shown but its answer is wrong")
    if not agrees(agreement.get("recursive_mbd", (0.0, 0.0))):
        raise SystemExit(f"recursive_mbd's FD does not satisfy its own CRBA/RNEA equations: {agreement}")
    rounds = 7 if params["n"] <= 10_000 else 5
    return interleaved(funcs, rounds=rounds, min_time=0.02), agreement, cond


def mujoco_depth_probe(kind, notes):
    """MuJoCo's refusal of a chain one body deeper than its limit (1023), caught and reported."""
    try:
        build_mujoco(chain_parameters(kind, 1024))
    except ValueError as err:
        notes.append(f"MuJoCo refuses the {kind} chain at N = 1024: {str(err).splitlines()[0]}")
    else:
        notes.append(f"MuJoCo accepted the {kind} chain at N = 1024")


# ---- memory (and large-N timing) in a subprocess ---------------------------------------------------------------

def memory_child(library, kind, n):
    """Runs in a fresh interpreter; prints JSON: max RSS after the imports and after build + one forward-dynamics
    call (bytes). For recursive_mbd also the forward dynamics' own memory (packed model arrays, state, and the
    tracemalloc peak of the first call, which allocates the workspace) and the median time per call."""
    params = chain_parameters(kind, n)
    q, v, tau = chain_state(params)
    if library == "pinocchio":
        import pinocchio as pin  # noqa: PLC0415
    elif library == "mujoco":
        import mujoco  # noqa: PLC0415
    else:
        rm.forward_dynamics(build_ours(chain_parameters(kind, 2)), *chain_state(chain_parameters(kind, 2)))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    record = {}
    if library == "pinocchio":
        model = build_pinocchio(params)
        pin.aba(model, model.createData(), pinocchio_q(params, q), v, tau)
    elif library == "mujoco":
        model = build_mujoco(params)
        data = mujoco.MjData(model)
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_forward(model, data)
    else:
        start = time.perf_counter()
        model = build_ours(params)
        record["build_s"] = time.perf_counter() - start
        tracemalloc.start()
        out = rm.forward_dynamics(model, q, v, tau)
        _, call_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        packed = model.body_int.nbytes + model.body_real.nbytes
        record["fd_bytes"] = packed + q.nbytes + v.nbytes + tau.nbytes + call_peak
        record["fd_s"] = median_time(lambda: rm.forward_dynamics(model, q, v, tau, out=out), min_time=0.5, repeats=5)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(dict(record, after_imports=before, peak=peak)))


def measure_memory(library, kind, n, limit_bytes):
    """The child's JSON record, or (None, reason) when it fails (e.g. over the address-space cap)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    cmd = [sys.executable, __file__, "--memory-child", library, kind, str(n)]
    proc = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=cap, check=False)
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:120]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


# ---- main ------------------------------------------------------------------------------------------------------

def fmt_time(seconds, base=None):
    if seconds is None:
        return "-"
    text = f"{seconds * 1e6:.1f}" if seconds < 1e-2 else f"{seconds * 1e3:.1f} ms"
    return text if base is None else f"{text} ({seconds / base:.1f}x)"


def fmt_memory(record):
    if not record:
        return "-"
    return f"{record['peak'] / 2**20:.0f} (+{(record['peak'] - record['after_imports']) / 2**20:.0f})"


def fmt_agreement(agreement):
    return " ".join(f"{name[:3]} {d:.0e}/{b:.0e}{'' if agrees((d, b)) else ' WRONG'}"
                    for name, (d, b) in agreement.items() if name != "recursive_mbd") or "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=float, default=1e6)
    parser.add_argument("--quick", action="store_true", help="N up to 1000 only")
    parser.add_argument("--min-n", type=float, default=2, help="smallest N (a partial run writes spatial_from<N>.json)")
    parser.add_argument("--pinocchio-max-n", type=int, default=200,
                        help="largest N timed with Pinocchio (its Data: 13.7 GB for the spherical chain at 200)")
    parser.add_argument("--pinocchio-memory-share", type=float, default=0.5,
                        help="share of the available memory Pinocchio's predicted Data may take for it to be timed "
                             "(0.9 times N = 200 on a quiet 24 GB machine)")
    parser.add_argument("--memory-gb", type=float, default=4.0,
                        help="address-space cap of each memory subprocess; larger predicted rows are skipped")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall",
                        help="clock of the interleaved rounds: 'thread' counts this thread's CPU time only (a loaded "
                             "machine's other processes left out), as benchmarks/forward_dynamics.py --clock")
    parser.add_argument("--memory-child", nargs=3, metavar=("LIBRARY", "KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    forward_dynamics.clock = CLOCK[args.clock]  # the clock interleaved() reads
    if args.memory_child:
        library, kind, n = args.memory_child
        memory_child(library, kind, int(n))
        return
    max_n = 1000 if args.quick else args.max_n
    sizes = [n for n in (2, 10, 100, 200, 1000, 10_000, 100_000, 1_000_000) if args.min_n <= n <= max_n]
    have = peers_available()
    notes = [f"not installed: {name}" for name, ok in have.items() if not ok]
    cap = int(args.memory_gb * 2**30)
    records = []
    for kind in KINDS:
        rows = []
        for n in sizes:
            params = chain_parameters(kind, n)
            nv = 3 * n if kind == "spherical" else n
            # Pinocchio's Data: ~ 1.8 GB (n / 100)^3 on the spherical chain (measured), 1/27 of it on the revolute
            pin_bytes = 1.8e9 * (n / 100) ** 3 * (1.0 if kind == "spherical" else 1 / 27)
            use_pin = have["pinocchio"] and n <= args.pinocchio_max_n
            if use_pin and pin_bytes > args.pinocchio_memory_share * available_memory_bytes():
                notes.append(f"Pinocchio not timed on the {kind} chain at N = {n}: its Data needs about "
                             f"{pin_bytes / 1e9:.1f} GB, {available_memory_bytes() / 1e9:.1f} GB available")
                use_pin = False
            use_mj = have["mujoco"] and n <= 1023
            memory = {}
            ours_child, failure = measure_memory("recursive_mbd", kind, n, max(cap, 8 * 2**30))
            if failure:
                raise SystemExit(f"recursive_mbd memory run, {kind} chain, N = {n}: {failure}")
            memory["recursive_mbd"] = ours_child
            for library, wanted, predicted in (("pinocchio", have["pinocchio"], pin_bytes),
                                               ("mujoco", use_mj, 0.0)):
                if wanted and predicted <= cap:
                    memory[library], failure = measure_memory(library, kind, n, cap)
                    if failure:
                        notes.append(f"{library} memory run, {kind} chain, N = {n}: {failure}")
            if use_pin or use_mj:
                times, agreement, cond = time_chain(params, use_pin, use_mj, notes)
            else:  # no peer fits: the subprocess's median (the model is built once, there)
                times, agreement, cond = {"recursive_mbd": ours_child["fd_s"]}, {}, None
            ours = times["recursive_mbd"]
            records.append(dict(kind=kind, n=n, nv=nv, seconds=times, ns_per_link=ours / n * 1e9,
                                agreement={k: {"relative_difference": d, "backward_error": b}
                                           for k, (d, b) in agreement.items()},
                                cond_M=cond, memory=memory))
            rows.append([n, nv, fmt_time(ours), f"{ours / n * 1e9:.0f}",
                         fmt_time(times.get("pinocchio"), ours), fmt_time(times.get("mujoco"), ours),
                         fmt_agreement(agreement), "-" if cond is None else f"{cond:.0e}",
                         f"{ours_child['fd_bytes'] / 2**20:.1f}", fmt_memory(memory.get("recursive_mbd")),
                         fmt_memory(memory.get("pinocchio")), fmt_memory(memory.get("mujoco"))])
            print(f"  {kind} N = {n} done", file=sys.stderr)
        if have["mujoco"] and max_n >= 1000:
            mujoco_depth_probe(kind, notes)
        print(f"forward dynamics per call, {kind} chain: us unless marked (ratio = peer / ours), medians of "
              f"interleaved rounds ({args.clock} clock); agreement = relative difference / backward error in our "
              f"equations; "
              f"FD MB = packed model + state + the call's allocations; MB = peak RSS of a fresh process "
              f"(+ growth after imports)")
        print_table(["N", "nv", "recursive_mbd", "ns/link", "pinocchio aba", "mujoco mj_forward", "agreement",
                     "cond(M)", "FD MB", "ours MB", "pinocchio MB", "mujoco MB"], rows)
    summary = {}
    by = {(r["kind"], r["n"]): r for r in records}
    for kind in KINDS:
        for n in (100, 200):
            pin_time = by.get((kind, n), {}).get("seconds", {}).get("pinocchio")
            if pin_time:
                summary[f"speedup_vs_pinocchio_{kind}_n{n}"] = pin_time / by[(kind, n)]["seconds"]["recursive_mbd"]
        if (kind, 1000) in by and (kind, 1_000_000) in by:
            growth = by[(kind, 1_000_000)]["seconds"]["recursive_mbd"] / by[(kind, 1000)]["seconds"]["recursive_mbd"]
            summary[f"growth_1e6_over_1e3_{kind}"] = growth
        if (kind, 1_000_000) in by:
            memory = by[(kind, 1_000_000)]["memory"]["recursive_mbd"]
            summary[f"fd_bytes_1e6_{kind}"] = memory["fd_bytes"]
            summary[f"peak_rss_bytes_1e6_{kind}"] = memory["peak"]
    for key, value in summary.items():
        print(f"{key}: {value:.4g}" if "bytes" not in key else f"{key}: {value / 2**30:.3f} GiB")
    for note in notes:
        print("note:", note)
    name = "spatial" + ("_quick" if args.quick else "") + (f"_from{int(args.min_n)}" if args.min_n > 2 else "")
    path = write_json(name, {"records": records, "summary": summary, "notes": notes, "clock": args.clock,
                                  "agreement_tolerance": AGREEMENT, "backward_error_tolerance": BACKWARD_AGREEMENT})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
