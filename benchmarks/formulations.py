"""Forward dynamics per evaluation by formulation: recursive O(N), mass matrix, augmented tree / sparse / dense.

    python3 benchmarks/formulations.py [--max-n 1000000] [--plot formulations.png] [--quick]
    python3 benchmarks/formulations.py --drift-only
    python3 benchmarks/formulations.py --breakdown 100000
    python3 benchmarks/formulations.py --spatial-only [--max-n 1000000]

On serial_chain(N) and on a binary tree of N rods, N = 2 ... 1e6, one run: median time per evaluation of

- recursive: ``rm.forward_dynamics`` (the compiled B/G/H condensation, O(N));
- mass matrix: CRBA + Cholesky (``method="mass_matrix"``), with BLAS pinned to one thread so that a busy machine
  does not distort it (O(N^3); N <= 2000);
- augmented tree: ``augmented.forward_dynamics(solver="tree")``, the compiled absolute-coordinate assembly and the
  tree-ordered KKT elimination (Baraff 1996), O(N);
- augmented sparse: the same equations assembled with numpy / scipy.sparse and factorised by splu (N <= 1e5);
- augmented dense: dense LU of the assembled KKT matrix (N <= 300);
- Pinocchio ABA (N <= 200) and MuJoCo mj_forward (N <= 300) on the chains when installed (builders in
  forward_dynamics.py).

Then the spatial rows (``spatial_rows``; ``--spatial-only`` runs them alone): benchmarks/spatial.py's revolute and
spherical chains of a Model3D, N = 2 ... 1e6: recursive (ABA), mass matrix, augmented tree and sparse (absolute
coordinates: centre of mass, quaternion), Pinocchio's aba (N <= 200) and MuJoCo's mj_forward (N <= 300). Every
joint of these chains is revolute or spherical, so the augmented tree row is ``_kernels.augmented.rotary3d``'s
closed-form elimination at the joint points: about 1000 flops (550 multiplies) and one 680-byte record per body
against the recursive route's 422 / 377 multiplies and 368 bytes (``_kernels.spatial.rotary``), measured 1.50x
(revolute) and 1.61x (spherical) the recursive route at 1e5, 1.52x / 1.50x at 1e6, slopes 1.00 / 1.03 from 1e3 to
1e6 (CPU time, one run at load average 9 to 10; docs/benchmarks.md). The general kernel (6 x 6 body pivots, 1.26 kB
of factor per body), which other joint types take, measured 4.7x / 3.6x at 1e5 in the run before
(benchmarks/augmented3d_tree.py times both kernels and the recursive route in one process).

Prints the tables, fitted log-log slopes (N >= 1000, and 1e3 .. 1e6 for the O(N) routes), the crossover N of each
pair, the ratio augmented-tree : recursive at 1e3, 1e5, 1e6, the call overhead at N = 2 (also as CPU time, which a
loaded machine does not inflate), and the memory of one
evaluation at the largest N (the model's packed arrays, state, workspace and outputs each route touches, and the
allocation peak of its first call by tracemalloc). Writes benchmarks/results/formulations.json and, with --plot
(matplotlib), a log-log plot with the fitted slopes. ``--drift-only``: the position drift max |C| versus time of
the augmented formulation on serial_chain(10) over 5 s with no stabilisation, Baumgarte (two parameter choices)
and projection, to benchmarks/results/formulations_drift.json.

Work per body, counted by hand from the kernels for a revolute body of a chain (no loads, no drivers; flops are
additions and multiplications, negations and copies not counted):

recursive (``_kernels.planar.tree.forward_dynamics``, three passes over a column-major (N, 27) workspace)
  pass 1 (``kinematics_pass``): theta = angle + q, then one vectorised sin/cos pass over all bodies
  (``trig.sincos_array``); orientation 6, joint vector 6, centre-of-mass arm 6, slide velocity 6, r 2, H 16,
  omega and theta 2: about 45 flops; writes TH, SN, CS, RX(2), HX(2), GX(2).
  pass 2 (tip to base): gravity 2, the child's condensed sums carried in registers 9, Q^ - M^ H 12, U = M^ G 15,
  D = G^T U 5, the singularity scale 7, one division, u 6, gains 4, M^ - U U^T / D 12, Q^ update 6, the shift to
  the parent (eq. 3.24b) 16 + 4: about 100 flops; reads HX, GX, RX (6 fields), writes U1(3), UU.
  pass 3 (base to tip): B a_P 4, + H 2, the joint acceleration 6, the body acceleration 6, the finiteness probe
  2: about 20 flops; reads RX, HX, GX, U1, UU (10 fields), writes ACC(3), qdd.
  Total about 165 flops, one vectorised sin/cos, one division; 16 workspace fields written once (128 B) and
  read about 16 times (128 B), plus q, qd, qdd (24 B) and the model's rows (5 int64 + 11 float64, 128 B, read
  in each pass): about 300 B of workspace and state traffic per body, of which a chain keeps the parent's data
  in registers (NEXT_IS_CHILD) and a branched tree goes through the parent's row (ROW_CHILDREN).

augmented tree (``_kernels.augmented.tree.factor_and_solve``: one leaves-first pass with the revolute step written out,
then ``_back_substitute``)
  set-up: a body's libm sin/cos (once, into F_COS, F_SIN; LLVM fuses the pair into one sincos call), its 6 pivot
  sums and zdd cleared, by its first child to come or by itself if a leaf (no sweep before the pass).
  leaves-first step: arms 12 (the parent's sin/cos read from its record, not recomputed per child), residual 6,
  gamma 10; body pivot D_i = M_i + children's sums 3 and its symmetric 3 x 3 inverse by cofactors 32 (one
  division); loads, tau and its power 12; joint pivot S = Jc D^-1 Jc^T 18 (Jc's 0 and -1 entries skipped), its
  right-hand side with Baumgarte's terms C' 10 and 12, its 2 x 2 inverse 5 (three divisions); forward elimination
  21; the parent's pivot gains Jp^T S^-1 Jp 16 and its load S^-1 x_j 12: about 170 flops.
  back substitution (roots first): Jp x_p - x_j 6, S^-1 6, x_i - Jc^T x_j 6, D^-1 15: about 33 flops.
  Total about 200 flops, one libm sin/cos pair, four divisions. Memory: one 40-float64 (320 B) factor record per
  body, its rows aligned to 64 bytes so that it is five whole cache lines, ordered by use: line 0 holds D^-1 (the
  children's pivot sums accumulate in its slots until the body's step) and the body's sin/cos, line 1 w, S^-1 and
  the four varying entries of a revolute joint's blocks (the whole blocks Jc, Jp, lines 2 .. 4, are written only
  for the other joints, and by ``tree_residuals`` for the projection). A revolute body with a regular pivot
  touches lines 0 and 1 only: the set-up writes 8 fields of line 0 (64 B), the leaves-first step reads 8 and
  writes 14 and updates 6 of the parent's line 0; the back substitution reads 14 (112 B); z, zd and the parent's
  (96 B), zdd written and updated in both passes (48 B), lam (16 B twice), the model's rows (8 of them, 64 B, in
  each pass): about 500 B per body of data. Where N is out of cache the record moves about 450 B per body (its two
  lines read and written back, the parent's line 0 read and written back once per parent, the two lines read again
  by the back substitution); before this layout (39 fields, rows 16-byte aligned, the whole blocks written every
  time) it moved about 1.2 kB (about 6 lines read and written back, 2 of the parent's, 5 read again).

So the augmented tree does about 1.2x the flops, 3 more divisions, a scalar libm sin/cos pair where the recursive
pass has a vectorised one (the inlined trig.sincos would change sin/cos at the ulp level, which moves a
parallelogram's crank-rate split through its change points past issue 12's bound: tests/test_singular.py), and
about 1.7x the data per body (500 against 300 B): the ratio augmented-tree : recursive measured below is that
work, not Python.
(An earlier version of the kernel handed arrays to inlined helpers in the per-body loops; numba's reference
counting of those arrays, an atomic increment and decrement per array per body, cost more than the arithmetic:
130 against 48 ns per body at N = 1e4, compiled with and without NRT.)
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_variable] = "1"  # before numpy is imported: BLAS reads these once, at load time

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from functools import partial  # noqa: E402

import numpy as np  # noqa: E402
from _common import print_table, write_json  # noqa: E402
from forward_dynamics import chain_state, interleaved, mujoco_chain, pinocchio_chain  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd._kernels.augmented import tree as aug_kernels  # noqa: E402
from recursive_mbd._kernels.planar import tree  # noqa: E402
from recursive_mbd.dynamics import augmented  # noqa: E402
from recursive_mbd.model.workspace import workspace  # noqa: E402


def binary_tree(n):
    """n rods of 0.1 m, body i hanging from body (i - 1) // 2: a branched tree of depth log2(n)."""
    model = rm.Model()
    parent = (np.arange(n) - 1) // 2
    points = np.where((parent >= 0)[:, None], [0.0, -0.05], [0.0, 0.0])
    model.add_bodies(parent, "revolute", parent_point=points, child_point=(0.0, 0.05), mass=0.1,
                     inertia=0.1 * 0.1**2 / 12)
    return model.compile()


KEYS = ("recursive_s", "mass_matrix_s", "augmented_tree_s", "augmented_sparse_s", "augmented_dense_s",
        "pinocchio_s", "mujoco_s")
LIMITS = {"mass_matrix_s": 2000, "augmented_sparse_s": 100_000, "augmented_dense_s": 300}
# Pinocchio's Data of an N-joint chain holds dense per-joint matrices: 1.9 GB at N = 300 (measured, peak RSS), so
# 200; MuJoCo's model and data of a 1000-deep chain do not fit in 8 GB of address space (measured), so 300
PEER_LIMITS = {"pinocchio_s": 200, "mujoco_s": 300}


def state(model):
    rng = np.random.default_rng(model.nbodies)
    q, qd = rng.uniform(-0.5, 0.5, model.nq), rng.normal(size=model.nq)
    z, zd = augmented.absolute_from_joint(model, q, qd)
    return q, qd, z, zd


def peer_calls(n):
    """Pinocchio's ``aba`` and MuJoCo's ``mj_forward`` on the same chain (forward_dynamics.py's builders), as
    callables for the interleaved rounds; a peer that is not installed (or refuses N) is left out."""
    calls = {}
    q, qd = chain_state(n)
    if n <= PEER_LIMITS["pinocchio_s"]:
        try:
            pin, pin_model = pinocchio_chain(n)
        except ImportError:
            pin = None
        if pin is not None:
            data, tau = pin_model.createData(), np.zeros(n)
            calls["pinocchio_s"] = lambda: pin.aba(pin_model, data, q, qd, tau)
    if n <= PEER_LIMITS["mujoco_s"]:
        try:
            import mujoco  # noqa: PLC0415 - optional

            mj_model = mujoco_chain(n)
        except (ImportError, ValueError):
            mj_model = None
        if mj_model is not None:
            mj_data = mujoco.MjData(mj_model)
            mj_data.qpos[:], mj_data.qvel[:] = q, qd
            calls["mujoco_s"] = lambda: mujoco.mj_forward(mj_model, mj_data)
    return calls


def time_formulations(model, peers):
    """{route: median seconds per evaluation}: every route that fits at this N timed in turn in each round
    (``interleaved``), so that the machine's load hits them alike; fewer rounds at large N."""
    n = model.nbodies
    q, qd, z, zd = state(model)
    out = np.empty(model.nq)
    calls = {
        "recursive_s": lambda: rm.forward_dynamics(model, q, qd, out=out),
        "mass_matrix_s": lambda: rm.forward_dynamics(model, q, qd, method="mass_matrix"),
        "augmented_tree_s": lambda: augmented.forward_dynamics(model, z, zd),
        "augmented_sparse_s": lambda: augmented.forward_dynamics(model, z, zd, solver="sparse"),
        "augmented_dense_s": lambda: augmented.forward_dynamics(model, z, zd, solver="dense"),
    }
    row = {"n": n}
    timed = {}
    for key, call in calls.items():
        if n <= LIMITS.get(key, np.inf):
            try:
                call()
            except rm.ModelError as err:  # the sparse LU's pivot test refuses long, light chains as singular
                row[key[:-2] + "_refused"] = str(err)[:120]
                print(f"  N = {n}: {key[:-2]} refused: {err}")
                continue
            timed[key] = call
    if peers:
        timed.update(peer_calls(n))
    rounds = 9 if n <= 1000 else 5 if n <= 100_000 else 3
    wall, cpu = interleaved_wall_and_cpu(timed, rounds=rounds, min_time=0.02 if n <= 100_000 else 0.0)
    row.update(wall)
    row.update({key[:-2] + "_cpu_s": value for key, value in cpu.items()})
    row["rounds"] = rounds
    return row


def interleaved_wall_and_cpu(funcs, rounds, min_time):
    """({name: median wall seconds per call}, {name: median CPU seconds per call}): as forward_dynamics.interleaved
    (each callable timed in turn in each round), with the thread's CPU time (time.thread_time) beside the wall time.
    On a shared machine the wall time includes the time the process waits for a core; the CPU time does not (it
    does include memory stalls), so its ratios and slopes are the ones a loaded machine does not distort."""
    counts = {}
    for name, func in funcs.items():
        func()
        start = time.perf_counter()
        func()
        counts[name] = max(1, int(min_time / max(time.perf_counter() - start, 1e-9)))
    samples = {name: [] for name in funcs}
    for _ in range(rounds):
        for name, func in funcs.items():
            number = counts[name]
            cpu, wall = time.thread_time(), time.perf_counter()
            for _ in range(number):
                func()
            samples[name].append(((time.perf_counter() - wall) / number, (time.thread_time() - cpu) / number))
    medians = {name: np.median(np.array(values), axis=0) for name, values in samples.items()}
    return ({name: float(m[0]) for name, m in medians.items()}, {name: float(m[1]) for name, m in medians.items()})


def memory(build, n):
    """Bytes each O(N) route touches for one evaluation, and the allocation peak of its first call (workspace
    creation included) by tracemalloc, on fresh models."""
    report = {}
    for route in ("recursive", "augmented_tree"):
        model = build(n)
        q, qd, z, zd = state(model)
        model._workspace = None  # each route's first call creates its own workspace (state() made the recursive one)
        tracemalloc.start()
        if route == "recursive":
            out = rm.forward_dynamics(model, q, qd)
            _, peak = tracemalloc.get_traced_memory()
            arrays = (model.body_int, model.body_real, q, qd, workspace(model).ws, out)
        else:
            zdd, lam = augmented.forward_dynamics(model, z, zd)
            _, peak = tracemalloc.get_traced_memory()
            tree = model._augmented_workspace
            arrays = (model.body_int, model.body_real, z, zd, tree.factor, tree.row_start, zdd, lam)
        tracemalloc.stop()
        report[route] = {"touched_bytes": int(sum(a.nbytes for a in arrays)), "first_call_peak_bytes": int(peak)}
    return report


def fitted_slope(records, key, min_n=1000, max_n=np.inf):
    points = [(r["n"], r[key]) for r in records if key in r and min_n <= r["n"] <= max_n]
    if len(points) < 2:
        return None
    n, t = np.log(np.array(points)).T
    return float(np.polyfit(n, t, 1)[0])


def crossover(records, fast, slow):
    """Smallest measured N from which ``fast`` stays faster than ``slow`` (None: never, in the measured range)."""
    both = [r for r in records if fast in r and slow in r]
    for k, r in enumerate(both):
        if all(s[fast] < s[slow] for s in both[k:]):
            return r["n"]
    return None


def breakdown(n, rounds=5):
    """Where the augmented tree route's time goes at N bodies, chain and binary tree, next to the recursive route:
    the two-pass solve with a given factor (``tree_solve``), the whole ``factor_and_solve`` kernel, each called
    directly (no Python checks), and both public calls (the recursive one into ``out``), interleaved medians."""
    report = {}
    for label, build in (("chain", rm.chains.serial_chain), ("binary tree", binary_tree)):
        model = build(n)
        q, qd, z, zd = state(model)
        augmented.forward_dynamics(model, z, zd)  # creates the tree workspace and its factor at this z
        tw = model._augmented_workspace
        ws = workspace(model)
        zdd, lam = np.empty((n, 3)), np.empty(tw.tree_rows)
        xb, xj, qdd = np.ones((n, 3)), np.ones(tw.tree_rows), np.empty(n)
        bi, br = model.body_int, model.body_real
        calls = {
            "recursive kernel": partial(tree.forward_dynamics, bi, br, model.gravity, q, qd, ws.zeros, ws.no_wrench,
                                        ws.no_driven, ws.ws, qdd, ws.no_drive),
            "aug. solve (factor given)": partial(aug_kernels.tree_solve, bi, tw.row_start, tw.factor, xb, xj),
            "aug. factor_and_solve": partial(aug_kernels.factor_and_solve, bi, br, model.gravity, tw.row_start, z,
                                             zd, tw.no_tau, tw.no_wrench, tw.stab, tw.factor, tw.scratch, zdd, lam,
                                             tw.power),
            "recursive public (out=)": partial(rm.forward_dynamics, model, q, qd, out=qdd),
            "aug. tree public": partial(augmented.forward_dynamics, model, z, zd),
        }
        times = interleaved(calls, rounds=rounds, min_time=0.05)
        report[label] = times
        print(f"\n{label}, N = {n}: ns per body (kernels called directly)")
        print_table(["kernel", "ns/body", "/ recursive"],
                    [[k, f"{v / n * 1e9:.0f}", f"{v / times['recursive kernel']:.2f}"] for k, v in times.items()])
    print(f"wrote {write_json('formulations_breakdown', {'n': n, 'breakdown': report})}")
    return report


def call_overhead(rounds=15, calls=20000):
    """The public call at N = 2 (serial_chain(2)), recursive (into ``out``) against augmented tree: medians over
    interleaved rounds of ``calls`` calls each, of the wall time and of the thread's CPU time (time.thread_time).
    On a shared machine the wall time includes the time the process waits for a core; the CPU time is what the
    call costs."""
    model = rm.chains.serial_chain(2)
    q, qd, z, zd = state(model)
    out = np.empty(model.nq)
    augmented.forward_dynamics(model, z, zd)  # the tree workspace (and the short path) exist from here
    funcs = {"recursive": lambda: rm.forward_dynamics(model, q, qd, out=out),
             "augmented_tree": lambda: augmented.forward_dynamics(model, z, zd)}
    samples = {name: [] for name in funcs}
    for _ in range(rounds):
        for name, func in funcs.items():
            cpu, wall = time.thread_time(), time.perf_counter()
            for _ in range(calls):
                func()
            samples[name].append(((time.perf_counter() - wall) / calls, (time.thread_time() - cpu) / calls))
    report = {}
    for name, values in samples.items():
        wall, cpu = np.median(np.array(values), axis=0)
        report[name] = {"wall_s": float(wall), "cpu_s": float(cpu)}
        print(f"  call at N = 2, {name}: {wall * 1e6:.2f} us wall, {cpu * 1e6:.2f} us CPU (medians of {rounds} "
              f"interleaved rounds of {calls} calls)")
    return report


def drift_study(t_end=5.0):
    model = rm.chains.serial_chain(10)
    q0 = np.full(10, 0.2)
    study = {}
    for label, options in (("none", dict(stabilization="none")),
                           ("baumgarte alpha=beta=5", dict(alpha=5.0, beta=5.0)),
                           ("baumgarte alpha=beta=20", dict(alpha=20.0, beta=20.0)),
                           ("projection", dict(stabilization="projection"))):
        res = rm.simulate(model, q0, np.zeros(10), t_end, formulation="augmented", rtol=1e-8, atol=1e-10,
                          **options)
        study[label] = {"t": res.t.tolist(), "drift": res.constraint_drift.tolist(), "steps": res.nsteps}
        d = res.constraint_drift
        print(f"drift max |C|, serial_chain(10), {label}: at the end {d[-1]:.1e}, max {d.max():.1e}, "
              f"{res.nsteps} steps")
    print(f"wrote {write_json('formulations_drift', {'drift': study})}")
    return study


SPATIAL_KEYS = ("recursive_s", "mass_matrix_s", "augmented_tree_s", "augmented_sparse_s", "pinocchio_s", "mujoco_s")
SPATIAL_LIMITS = {"mass_matrix_s": 2000, "augmented_sparse_s": 100_000, "pinocchio_s": 200, "mujoco_s": 300}


def spatial_calls(kind, n, peers):
    """{route: callable} of one forward-dynamics evaluation of benchmarks/spatial.py's chain of N links (``kind``:
    "revolute" or "spherical"), each route that fits at this N: recursive (ABA), mass matrix, augmented tree and
    sparse (absolute coordinates: centre of mass, quaternion), and with ``peers`` Pinocchio's aba and MuJoCo's
    mj_forward on the same chain. The augmented routes are checked against the recursive one first (1e-9)."""
    import spatial  # noqa: PLC0415  (benchmarks/spatial.py: the chain and the peers' builders)

    params = spatial.chain_parameters(kind, n)
    model = spatial.build_ours(params)
    q, v, tau = spatial.chain_state(params)
    z, zd = augmented.absolute_from_joint(model, q, v)
    out = np.empty(model.nv)
    calls = {"recursive_s": lambda: rm.forward_dynamics(model, q, v, tau, out=out),
             "mass_matrix_s": lambda: rm.forward_dynamics(model, q, v, tau, method="mass_matrix"),
             "augmented_tree_s": lambda: augmented.forward_dynamics(model, z, zd, tau),
             "augmented_sparse_s": lambda: augmented.forward_dynamics(model, z, zd, tau, solver="sparse")}
    calls = {key: call for key, call in calls.items() if n <= SPATIAL_LIMITS.get(key, np.inf)}
    vdot = rm.forward_dynamics(model, q, v, tau)
    if n <= 1000:  # the body accelerations of the recursive route, against the augmented routes'
        from recursive_mbd.dynamics.augmented3d import _com_local  # noqa: PLC0415

        com = _com_local(model)
        expected = np.array([rm.body_acceleration(model, q, v, vdot, i, com[i]) for i in range(n)])
        for key in ("augmented_tree_s", "augmented_sparse_s"):
            if key in calls:
                zdd = augmented.forward_dynamics(model, z, zd, tau, solver=key.split("_")[1])[0]
                error = np.abs(zdd - expected).max() / np.abs(expected).max()
                if not error < 1e-9:
                    raise SystemExit(f"{kind} chain, N = {n}: {key[:-2]} differs from the recursive route by "
                                     f"{error:.2e}")
    if peers and n <= SPATIAL_LIMITS["pinocchio_s"]:
        try:
            import pinocchio as pin  # noqa: PLC0415 - optional

            pin_model = spatial.build_pinocchio(params)
            data, pin_q = pin_model.createData(), spatial.pinocchio_q(params, q)
            calls["pinocchio_s"] = lambda: pin.aba(pin_model, data, pin_q, v, tau)
        except ImportError:
            pass
    if peers and n <= SPATIAL_LIMITS["mujoco_s"]:
        try:
            import mujoco  # noqa: PLC0415 - optional

            mj_model = spatial.build_mujoco(params)
            mj_data = mujoco.MjData(mj_model)
            mj_data.qpos[:], mj_data.qvel[:], mj_data.qfrc_applied[:] = q, v, tau
            calls["mujoco_s"] = lambda: mujoco.mj_forward(mj_model, mj_data)
        except (ImportError, ValueError):
            pass
    return calls


def spatial_rows(max_n, peers=True):
    """The spatial rows: per-evaluation time of every route on revolute and spherical chains, N = 2 .. max_n, with
    slopes (1e3 .. 1e6), crossovers and the ratio augmented tree : recursive at 1e3, 1e5 and 1e6."""
    sizes = [n for n in (2, 10, 100, 300, 1000, 10_000, 100_000, 1_000_000) if n <= max_n]
    results, summary = {}, {}
    for kind in ("revolute", "spherical"):
        records = []
        for n in sizes:
            calls = spatial_calls(kind, n, peers)
            rounds = 9 if n <= 1000 else 5 if n <= 100_000 else 3
            wall, cpu = interleaved_wall_and_cpu(calls, rounds=rounds, min_time=0.02 if n <= 100_000 else 0.0)
            record = {"n": n, "rounds": rounds, **wall, **{key[:-2] + "_cpu_s": value for key, value in cpu.items()}}
            records.append(record)
            print(f"  3D {kind} chain N = {n}: " + ", ".join(f"{k[:-2]} {v * 1e6:.3g} us" for k, v in wall.items()),
                  flush=True)
        label = f"3D {kind} chain"
        results[label] = records
        heads = ["N", "recursive", "mass matrix", "aug. tree", "aug. sparse", "pinocchio ABA", "mujoco"]
        print(f"\nforward dynamics per evaluation, {label} of N bodies [us]")
        print_table(heads, [[r["n"]] + [f"{r[k] * 1e6:.3g}" if k in r else "-" for k in SPATIAL_KEYS] for r in records])
        print("\nthe same, thread CPU time per evaluation [us]")
        print_table(heads, [[r["n"]] + [f"{r[k[:-2] + '_cpu_s'] * 1e6:.3g}" if k[:-2] + "_cpu_s" in r else "-"
                                        for k in SPATIAL_KEYS] for r in records])
        info = summary.setdefault(label, {})
        for key in ("recursive_cpu_s", "augmented_tree_cpu_s", "augmented_sparse_cpu_s"):
            slope = fitted_slope(records, key, 1000, 1_000_000)
            if slope is not None:
                info[f"slope_1e3_1e6_{key[:-2]}"] = slope
                print(f"  slope of log CPU time over log N, 1e3 .. {records[-1]['n']:.0e}: {key[:-6]} {slope:.2f}")
        for i, a in enumerate(SPATIAL_KEYS):
            for b in SPATIAL_KEYS[i + 1:]:
                for fast, slow in ((a, b), (b, a)):
                    n_cross = crossover(records, fast, slow)
                    if n_cross is not None:
                        info[f"crossover_{fast[:-2]}_beats_{slow[:-2]}"] = n_cross
                        print(f"  {fast[:-2]} faster than {slow[:-2]} from N = {n_cross} (measured together)")
        by_n = {r["n"]: r for r in records}
        for n in (1000, 100_000, 1_000_000):
            if n in by_n:
                ratio = by_n[n]["augmented_tree_cpu_s"] / by_n[n]["recursive_cpu_s"]
                info[f"ratio_tree_to_recursive_cpu_{n}"] = ratio
                print(f"  N = {n}: augmented tree / recursive = {ratio:.2f} (CPU time, "
                      f"{by_n[n]['augmented_tree_cpu_s'] / n * 1e9:.0f} vs {by_n[n]['recursive_cpu_s'] / n * 1e9:.0f} "
                      "ns per body)")
    return results, summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=float, default=1e6)
    parser.add_argument("--plot", metavar="FILE")
    parser.add_argument("--quick", action="store_true", help="N up to 1000")
    parser.add_argument("--drift-only", action="store_true", help="only the drift study of the augmented route")
    parser.add_argument("--spatial-only", action="store_true",
                        help="only the spatial rows (3D chains; writes results/formulations_spatial.json)")
    parser.add_argument("--breakdown", type=float, metavar="N",
                        help="only the kernel breakdown of the augmented tree route at N bodies")
    args = parser.parse_args()
    if args.drift_only:
        drift_study()
        return
    if args.breakdown:
        breakdown(int(args.breakdown))
        return
    max_n = 1000 if args.quick else args.max_n
    if args.spatial_only:
        timings, summary = spatial_rows(max_n)
        print(f"wrote {write_json('formulations_spatial', {'timings': timings, 'summary': summary})}")
        return
    sizes = [n for n in (2, 10, 100, 300, 1000, 10_000, 100_000, 1_000_000) if n <= max_n]
    results, summary = {}, {}
    for label, build in (("chain", rm.chains.serial_chain), ("binary tree", binary_tree)):
        records = []
        for n in sizes:
            records.append(time_formulations(build(n), peers=label == "chain"))
            print(f"  {label} N = {n}: " + ", ".join(f"{k[:-2]} {v * 1e6:.3g} us" for k, v in records[-1].items()
                                                   if k.endswith("_s")), flush=True)
        results[label] = records
        rows = [[r["n"]] + [f"{r[k] * 1e6:.3g}" if k in r else "-" for k in KEYS] for r in records]
        print(f"\nforward dynamics per evaluation, {label} of N bodies [us]")
        print_table(["N", "recursive", "mass matrix", "aug. tree", "aug. sparse", "aug. dense", "pinocchio ABA",
                     "mujoco"], rows)
        cpu_rows = [[r["n"]] + [f"{r[k[:-2] + '_cpu_s'] * 1e6:.3g}" if k[:-2] + "_cpu_s" in r else "-" for k in KEYS]
                    for r in records]
        print("\nthe same, thread CPU time per evaluation [us] (what a loaded machine does not inflate)")
        print_table(["N", "recursive", "mass matrix", "aug. tree", "aug. sparse", "aug. dense", "pinocchio ABA",
                     "mujoco"], cpu_rows)
        info = summary.setdefault(label, {})
        for key in ("recursive_cpu_s", "augmented_tree_cpu_s"):
            slope = fitted_slope(records, key, 1000, 1_000_000)
            if slope is not None:
                info[f"slope_1e3_1e6_{key[:-2]}"] = slope
                print(f"  slope of log CPU time over log N, 1e3 .. 1e6: {key[:-6]} {slope:.2f}")
            slope = fitted_slope(records, key)
            if slope is not None:
                info[f"slope_{key[:-2]}"] = slope
                print(f"  slope of log t over log N (N >= 1000): {key[:-2]} {slope:.2f}")
        for key in ("recursive_s", "augmented_tree_s"):
            slope = fitted_slope(records, key, 1000, 1_000_000)
            if slope is not None:
                info[f"slope_1e3_1e6_{key[:-2]}"] = slope
        for i, a in enumerate(KEYS):
            for b in KEYS[i + 1:]:
                common = [r["n"] for r in records if a in r and b in r]
                if len(common) < 2:
                    continue
                for fast, slow in ((a, b), (b, a)):
                    n_cross = crossover(records, fast, slow)
                    if n_cross is None:
                        continue
                    info[f"crossover_{fast[:-2]}_beats_{slow[:-2]}"] = n_cross
                    where = "at every measured N" if n_cross == common[0] else f"from N = {n_cross}"
                    print(f"  {fast[:-2]} faster than {slow[:-2]} {where} (N = {common[0]} .. {common[-1]})")
        by_n = {r["n"]: r for r in records}
        for n in (2, 1000, 100_000, 1_000_000):
            if n in by_n:
                ratio = by_n[n]["augmented_tree_s"] / by_n[n]["recursive_s"]
                info[f"ratio_tree_to_recursive_{n}"] = ratio
                ratio_cpu = by_n[n]["augmented_tree_cpu_s"] / by_n[n]["recursive_cpu_s"]
                info[f"ratio_tree_to_recursive_cpu_{n}"] = ratio_cpu
                print(f"  N = {n}: augmented tree / recursive = {ratio:.2f} "
                      f"({by_n[n]['augmented_tree_s'] / n * 1e9:.0f} vs {by_n[n]['recursive_s'] / n * 1e9:.0f} "
                      f"ns per body); CPU time {ratio_cpu:.2f} ({by_n[n]['augmented_tree_cpu_s'] / n * 1e9:.0f} vs "
                      f"{by_n[n]['recursive_cpu_s'] / n * 1e9:.0f} ns per body)")
        if 2 in by_n:
            print(f"  call overhead at N = 2: recursive {by_n[2]['recursive_s'] * 1e6:.2f} us, augmented tree "
                  f"{by_n[2]['augmented_tree_s'] * 1e6:.2f} us")
        info["memory"] = memory(build, sizes[-1])
        rec, tree = info["memory"]["recursive"], info["memory"]["augmented_tree"]
        print(f"  memory at N = {sizes[-1]}: touched {rec['touched_bytes'] / sizes[-1]:.0f} B/body recursive, "
              f"{tree['touched_bytes'] / sizes[-1]:.0f} B/body augmented tree (ratio "
              f"{tree['touched_bytes'] / rec['touched_bytes']:.2f}); first-call allocation peak "
              f"{rec['first_call_peak_bytes'] / 2**20:.1f} MiB vs {tree['first_call_peak_bytes'] / 2**20:.1f} MiB")
    spatial_timings, summary["spatial"] = spatial_rows(max_n)
    results.update(spatial_timings)
    summary["call_overhead_n2"] = call_overhead()
    print(f"wrote {write_json('formulations', {'timings': results, 'summary': summary, 'blas_threads': 1})}")
    if args.plot:
        import matplotlib  # noqa: PLC0415 - optional extra

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415

        fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
        for ax, (label, records) in zip(axes, results.items(), strict=True):
            for key in KEYS:
                points = [(r["n"], r[key]) for r in records if key in r]
                if not points:
                    continue
                slope = fitted_slope(records, key)
                name = key[:-2].replace("_", " ") + ("" if slope is None else f" (slope {slope:.2f})")
                ax.loglog(*zip(*points, strict=True), "o-", label=name)
            ax.set(xlabel="N bodies", ylabel="time per evaluation [s]", title=f"forward dynamics, {label}")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
