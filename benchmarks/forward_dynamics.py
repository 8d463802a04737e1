"""Time per forward-dynamics call on serial chains: recursive O(N) vs mass matrix, and peers when installed.

    python3 benchmarks/forward_dynamics.py [--max-n 1000000] [--quick] [--floor-and-calls] [--clock thread]

Prints a table (median of repeats, ns per body), the Python-call overhead at small N, the growth ratio
t(1e5)/t(1e3), workspace memory per body, cold and warm import plus first call, and writes
benchmarks/results/forward_dynamics.json. Two tables measured in interleaved rounds (medians): the kernel against
its floor (a replica of the recursion's dependency chains: pass 1's rotation composition with the angles' sines
and cosines, pass 2's dependent division, pass 3's dependent multiply-add) at N = 1e4 ... 1e6, and the cost of a
call from Python at N = 2 and 10: rm.forward_dynamics, rm.compiled_forward_dynamics, Pinocchio's aba, MuJoCo.
Last, the rk4 time loop on serial_chain(100) over 1 s (dt = 1e-4) against its 40,000 forward-dynamics evaluations.
Pinocchio (``pip install pin``) and MuJoCo (``pip install mujoco``) are timed on the same chain in the same run
when importable; neither is a dependency.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np
from _common import interleaved_samples, median_time, print_table, write_json

import recursive_mbd as rm
from recursive_mbd._kernels import layout as L
from recursive_mbd._kernels.planar import tree
from recursive_mbd._kernels.trig import sincos_array
from recursive_mbd.model.workspace import workspace


def chain_state(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-0.5, 0.5, n), rng.normal(size=n)


def time_recursive(n):
    model = rm.chains.serial_chain(n)
    q, qd = chain_state(n)
    out = np.empty(n)
    wrapper = median_time(lambda: rm.forward_dynamics(model, q, qd, out=out))
    ws = workspace(model)
    args = (model.body_int, model.body_real, model.gravity, q, qd, ws.zeros, ws.no_wrench, ws.no_driven, ws.ws, out,
            ws.no_drive)
    kernel = median_time(lambda: tree.forward_dynamics(*args))
    return wrapper, kernel, ws.ws.nbytes / n


def time_mass_matrix(n):
    model = rm.chains.serial_chain(n)
    q, qd = chain_state(n)
    return median_time(lambda: rm.forward_dynamics(model, q, qd, method="mass_matrix"), min_time=0.5, repeats=3)


def pinocchio_chain(n):
    import pinocchio as pin  # noqa: PLC0415

    link = 1.0 / n
    mass = 1.0 / n
    model = pin.Model()
    model.gravity.linear = np.array([0.0, -9.81, 0.0])
    parent = 0
    for i in range(n):
        placement = pin.SE3(np.eye(3), np.array([0.0, -link if i else 0.0, 0.0]))
        joint = model.addJoint(parent, pin.JointModelRZ(), placement, f"j{i}")
        inertia = np.diag([mass * link**2 / 12, 1e-12, mass * link**2 / 12])
        model.appendBodyToJoint(joint, pin.Inertia(mass, np.array([0.0, -link / 2, 0.0]), inertia), pin.SE3.Identity())
        parent = joint
    return pin, model


def time_pinocchio(n):
    try:
        pin, model = pinocchio_chain(n)
    except ImportError:
        return None, None
    data = model.createData()
    q, qd = chain_state(n)
    tau = np.zeros(n)
    qdd = pin.aba(model, data, q, qd, tau).copy()
    ours = rm.forward_dynamics(rm.chains.serial_chain(n), q, qd)
    agreement = float(np.max(np.abs(qdd - ours)) / np.max(np.abs(ours)))
    return median_time(lambda: pin.aba(model, data, q, qd, tau)), agreement


def mujoco_chain(n):
    import mujoco  # noqa: PLC0415

    link = 1.0 / n
    body = ""
    rod_inertia = link**2 / 12 / n
    for i in range(n - 1, -1, -1):
        pos = f"0 {-link if i else 0} 0"
        body = (f'<body pos="{pos}"><joint type="hinge" axis="0 0 1"/>'
                f'<inertial pos="0 {-link / 2} 0" mass="{1.0 / n}" diaginertia="{rod_inertia} 1e-12 {rod_inertia}"/>'
                f"{body}</body>")
    xml = f'<mujoco><option gravity="0 -9.81 0" integrator="RK4"/><worldbody>{body}</worldbody></mujoco>'
    return mujoco.MjModel.from_xml_string(xml)


def time_mujoco(n):
    try:
        import mujoco  # noqa: PLC0415
    except ImportError:
        return None
    if n > 1000:
        return None  # MuJoCo refuses bodies nested deeper than 1023
    try:
        model = mujoco_chain(n)
    except ValueError as err:  # MuJoCo's XML parser limits nesting depth
        print(f"  MuJoCo refused N = {n}: {str(err).splitlines()[0]}", file=sys.stderr)
        return None
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = chain_state(n)
    return median_time(lambda: mujoco.mj_forward(model, data))


# the clock of the interleaved tables: wall time (the default), or with --clock thread this thread's CPU time, which
# leaves out the time other processes hold the core (on a loaded machine; cache and memory contention remain)
CLOCK = {"wall": time.perf_counter, "thread": time.thread_time}
clock = CLOCK["wall"]


def interleaved(funcs, rounds=7, min_time=0.02):
    """{name: median seconds per call}, the callables timed in turn in each round (load hits them alike)."""
    samples = interleaved_samples(funcs, rounds, min_time, clock)
    return {name: float(np.median(v)) for name, v in samples.items()}


@numba.njit(cache=True, fastmath={"contract"})
def floor_kinematics(q, out, sin_q, cos_q):
    """Pass 1's dependency chain: each body's orientation (c, s) is its parent's rotated by the relative angle,
    whose sine and cosine (off the chain) come first from the kernels' vectorised sincos; one store per body."""
    sincos_array(q, sin_q, cos_q)
    c = 1.0
    s = 0.0
    for i in range(q.shape[0]):
        c, s = c * cos_q[i] - s * sin_q[i], s * cos_q[i] + c * sin_q[i]
        out[i] = c
    return s


@numba.njit(cache=True, fastmath={"contract"})
def floor_condense_accelerate(q, out):
    """Passes 2 and 3's dependency chains alone: tip to base, the articulated inertia of body i needs 1 / D of body
    i + 1 (a dependent division); base to tip, the acceleration of body i needs its parent's (a multiply-add)."""
    m = 1.0
    for i in range(q.shape[0] - 1, -1, -1):
        m = 1.0 + q[i] * q[i] - 1.0 / (m + 2.0)
        out[i] = m
    a = 0.0
    for i in range(q.shape[0]):
        a = out[i] * a + q[i]
        out[i] = a
    return a


@numba.njit(cache=True, fastmath={"contract"})
def floor_condense_accelerate_full(mass, inertia, gravity_y, tau, geometry, gains, qdd):
    """Passes 2 and 3 of a serial revolute chain with only their arithmetic and the loads and stores they need:
    geometry columns (rx, ry, hx, hy, gx, gy) from pass 1, gains (U/D, u/D) stored by pass 2 for pass 3, qdd. No
    joint-type or parent lookups, no branches, no body accelerations kept. Its time is the recursion's floor.
    A replica on purpose, not a call of the kernel: the kernel's passes are written out in one function (there is no
    piece of them to call), and the floor is what remains without the kernel's loads and branches."""
    ca = cb = cc = cd = ce = cf = cq0 = cq1 = cq2 = 0.0
    for i in range(mass.shape[0] - 1, -1, -1):
        rx, ry, hx, hy, gx, gy = (geometry[i, 0], geometry[i, 1], geometry[i, 2], geometry[i, 3], geometry[i, 4],
                                  geometry[i, 5])
        a = mass[i] + ca
        b = cb
        c = cc
        d = mass[i] + cd
        e = ce
        f = inertia[i] + cf
        f0 = cq0 - (a * hx + b * hy)
        f1 = mass[i] * gravity_y + cq1 - (b * hx + d * hy)
        f2 = cq2 - (c * hx + e * hy)
        u0 = a * gx + b * gy + c
        u1 = b * gx + d * gy + e
        u2 = c * gx + e * gy + f
        dinv = 1.0 / (gx * u0 + gy * u1 + u2)
        k0 = u0 * dinv
        k1 = u1 * dinv
        k2 = u2 * dinv
        w = (tau[i] + gx * f0 + gy * f1 + f2) * dinv
        gains[i, 0] = k0
        gains[i, 1] = k1
        gains[i, 2] = k2
        gains[i, 3] = w
        a -= u0 * k0
        b -= u0 * k1
        c -= u0 * k2
        d -= u1 * k1
        e -= u1 * k2
        f -= u2 * k2
        f0 -= u0 * w
        f1 -= u1 * w
        f2 -= u2 * w
        t02 = -ry * a + rx * b + c
        t12 = -ry * b + rx * d + e
        ca, cb, cc, cd, ce, cf = a, b, t02, d, t12, -ry * t02 + rx * t12 - ry * c + rx * e + f
        cq0, cq1, cq2 = f0, f1, f2 - ry * f0 + rx * f1
    a0 = a1 = a2 = 0.0
    for i in range(mass.shape[0]):
        b0 = a0 - geometry[i, 1] * a2
        b1 = a1 + geometry[i, 0] * a2
        acc = gains[i, 3] - (gains[i, 0] * b0 + gains[i, 1] * b1 + gains[i, 2] * a2)
        qdd[i] = acc
        a0 = b0 + geometry[i, 2] + geometry[i, 4] * acc
        a1 = b1 + geometry[i, 3] + geometry[i, 5] * acc
        a2 = a2 + acc
    return a0


def floor_and_passes(n):
    """Interleaved medians [s]: the kernel, its pass 1 alone, and the floors of pass 1 and of passes 2 + 3."""
    model = rm.chains.serial_chain(n)
    q, qd = chain_state(n)
    out = np.empty(n)
    scratch, sin_q, cos_q = np.empty(n), np.empty(n), np.empty(n)
    ws = workspace(model)
    args = (model.body_int, model.body_real, model.gravity, q, qd, ws.zeros, ws.no_wrench, ws.no_driven, ws.ws, out,
            ws.no_drive)
    tree.forward_dynamics(*args)
    # the joint geometry (r, H, G) that the replica of passes 2 and 3 loads: the serial kernel recomputes it in each
    # pass and stores none, so it comes from the general pass 1
    tree.kinematics_pass(model.body_int, model.body_real, q, qd, ws.ws, False)
    geometry = np.asfortranarray(ws.ws[:, [L.RX, L.RX + 1, L.HX, L.HX + 1, L.GX, L.GX + 1]])
    mass = np.ascontiguousarray(model.body_real[:, L.MASS])
    inertia = np.ascontiguousarray(model.body_real[:, L.INERTIA])
    gains = np.zeros((n, 4), order="F")
    replica = np.empty(n)
    floor_condense_accelerate_full(mass, inertia, model.gravity[1], ws.zeros, geometry, gains, replica)
    assert np.allclose(replica, out, rtol=1e-9, atol=1e-9 * np.abs(out).max())  # the replica computes qdd
    return interleaved({
        "kernel": lambda: tree.forward_dynamics(*args),
        "floor23full": lambda: floor_condense_accelerate_full(mass, inertia, model.gravity[1], ws.zeros, geometry,
                                                              gains, replica),
        # the kernel's own pass 1 on a serial chain (flag SERIAL_REVOLUTE)
        "pass1": lambda: tree._kinematics_pass_serial(model.body_real, q, qd, ws.ws),
        "floor1": lambda: floor_kinematics(q, scratch, sin_q, cos_q),
        "floor23": lambda: floor_condense_accelerate(q, scratch),
    }, rounds=7, min_time=0.05)


def small_model_calls(n):
    """Interleaved medians [s] of one call from Python on serial_chain(n): ours and the peers installed."""
    model = rm.chains.serial_chain(n)
    q, qd = chain_state(n)
    tau = np.zeros(n)
    out = np.empty(n)
    fd = rm.compiled_forward_dynamics(model)
    fd_specialized = rm.compiled_forward_dynamics(model, specialize=True)
    ws = workspace(model)
    args = (model.body_int, model.body_real, model.gravity, q, qd, ws.zeros, ws.no_wrench, ws.no_driven, ws.ws, out,
            ws.no_drive)
    funcs = {"forward_dynamics": lambda: rm.forward_dynamics(model, q, qd, out=out),
             "compiled": lambda: fd(q, qd, tau, out=out),
             "compiled (allocating)": lambda: fd(q, qd),
             "compiled specialize=True": lambda: fd_specialized(q, qd, tau, out=out),
             "kernel only": lambda: tree.forward_dynamics(*args)}
    try:
        pin, pin_model = pinocchio_chain(n)
        pin_data = pin_model.createData()
        funcs["pinocchio aba"] = lambda: pin.aba(pin_model, pin_data, q, qd, tau)
    except ImportError:
        pass
    try:
        import mujoco  # noqa: PLC0415

        mj_model = mujoco_chain(n)
        mj_data = mujoco.MjData(mj_model)
        mj_data.qpos[:], mj_data.qvel[:] = q, qd
        funcs["mujoco mj_forward"] = lambda: mujoco.mj_forward(mj_model, mj_data)
    except ImportError:
        pass
    return interleaved(funcs, rounds=9, min_time=0.02)


@numba.njit(cache=True)
def _repeated_kernel(body_int, body_real, gravity, q, qd, tau, wrench, driven, ws, qdd, drive, count):
    """``count`` forward-dynamics evaluations in compiled code: the kernel's share of a time loop."""
    status = 0
    for _ in range(count):
        status |= tree.forward_dynamics(body_int, body_real, gravity, q, qd, tau, wrench, driven, ws, qdd, drive)
    return status


def rk4_second(n=100, dt=1e-4, rounds=5):
    """Interleaved medians [s]: rm.simulate of serial_chain(n) over 1 s with rk4 (1 / dt steps, 4 evaluations each)
    from q = 0.1 rad at every joint, and the same number of forward-dynamics evaluations alone in a compiled loop."""
    model = rm.chains.serial_chain(n)
    q0, qd0 = np.full(n, 0.1), np.zeros(n)
    steps = round(1.0 / dt)
    rm.simulate(model, q0, qd0, 10 * dt, method="rk4", dt=dt)  # compiled outside the timing
    ws = workspace(model)
    q, qd, out = q0.copy(), np.zeros(n), np.empty(n)
    args = (model.body_int, model.body_real, model.gravity, q, qd, ws.zeros, ws.no_wrench, ws.no_driven, ws.ws, out,
            ws.no_drive)
    _repeated_kernel(*args, 1)
    return interleaved({"simulate": lambda: rm.simulate(model, q0, qd0, 1.0, method="rk4", dt=dt, every=steps),
                        "kernel only": lambda: _repeated_kernel(*args, 4 * steps)}, rounds=rounds, min_time=0.0)


def import_and_first_call(cold):
    """Wall time of 'import recursive_mbd' and of the first forward_dynamics call, in a fresh interpreter."""
    code = ("import time; t0 = time.perf_counter(); import numpy as np; import recursive_mbd as rm; "
            "t1 = time.perf_counter(); m = rm.chains.serial_chain(10); "
            "rm.forward_dynamics(m, np.zeros(10), np.zeros(10)); t2 = time.perf_counter(); print(t1 - t0, t2 - t1)")
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if cold:
            env["NUMBA_CACHE_DIR"] = cache
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return tuple(float(x) for x in out.stdout.split())


def report_main_table(rows, records, summary):
    """Print the main table and its summary lines (into ``summary``)."""
    print("forward dynamics of serial_chain(N), median time per call")
    print_table(["N", "recursive us", "kernel us", "ns/body", "mass-matrix us", "pinocchio us (ratio)",
                 "mujoco us (ratio)"], rows)
    by_n = {r["n"]: r for r in records}
    if 2 in by_n:
        summary["python_overhead_us_at_n2"] = by_n[2]["overhead_s"] * 1e6
        overhead = summary["python_overhead_us_at_n2"]
        print(f"Python-call overhead at N = 2 (wrapper - direct kernel call): {overhead:.2f} us")
    if 1000 in by_n and 100_000 in by_n:
        summary["growth_1e5_over_1e3"] = by_n[100_000]["recursive_s"] / by_n[1000]["recursive_s"]
        print(f"t(1e5) / t(1e3) = {summary['growth_1e5_over_1e3']:.1f} (linear: 100)")
    if 200 in by_n and by_n[200]["pinocchio_aba_s"]:
        summary["speedup_vs_pinocchio_n200"] = by_n[200]["pinocchio_aba_s"] / by_n[200]["recursive_s"]
        print(f"speed-up over Pinocchio ABA at N = 200: {summary['speedup_vs_pinocchio_n200']:.1f}x "
              f"(results agree to {by_n[200]['pinocchio_rel_diff']:.1e})")
    print(f"workspace: {records[-1]['workspace_bytes_per_body']:.0f} bytes per body (O(N) memory)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=float, default=1e6)
    parser.add_argument("--max-n-mass-matrix", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="N up to 1e4 only")
    parser.add_argument("--floor-and-calls", action="store_true",
                        help="only the floor table and the small-model calls (skips the main table and imports)")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall",
                        help="clock of the interleaved tables (floor, calls, rk4): 'thread' counts this thread's CPU "
                             "time only, for a loaded machine")
    args = parser.parse_args()
    global clock  # noqa: PLW0603  (the interleaved tables' clock, chosen once)
    clock = CLOCK[args.clock]
    max_n = 1e4 if args.quick else args.max_n
    sizes = [n for n in (2, 10, 100, 200, 1000, 2000, 10_000, 100_000, 1_000_000) if n <= max_n]
    if args.floor_and_calls:
        sizes = []

    rows, records = [], []
    for n in sizes:
        wrapper, kernel, ws_bytes = time_recursive(n)
        mm = time_mass_matrix(n) if n <= args.max_n_mass_matrix else None
        # Pinocchio's Data grows like N^3 in memory (N = 300 needs about 1.7 GB): stop at 200
        pin_time, pin_agree = time_pinocchio(n) if n <= 200 else (None, None)
        mj_time = time_mujoco(n) if n <= 1000 else None
        records.append(dict(n=n, recursive_s=wrapper, recursive_kernel_s=kernel, overhead_s=wrapper - kernel,
                            ns_per_body=wrapper / n * 1e9, workspace_bytes_per_body=ws_bytes, mass_matrix_s=mm,
                            pinocchio_aba_s=pin_time, pinocchio_rel_diff=pin_agree, mujoco_forward_s=mj_time))
        rows.append([n, f"{wrapper * 1e6:.2f}", f"{kernel * 1e6:.2f}", f"{wrapper / n * 1e9:.1f}",
                     "-" if mm is None else f"{mm * 1e6:.1f}",
                     "-" if pin_time is None else f"{pin_time * 1e6:.2f} ({pin_time / wrapper:.1f}x)",
                     "-" if mj_time is None else f"{mj_time * 1e6:.1f} ({mj_time / wrapper:.1f}x)"])
        print(f"  N = {n} done", file=sys.stderr)
    summary = {}
    if records:
        report_main_table(rows, records, summary)

    floors, floor_rows = [], []
    for n in (n for n in (10_000, 100_000, 1_000_000) if n <= max_n):
        t = floor_and_passes(n)
        floor = t["floor1"] + t["floor23full"]  # the recursion's arithmetic and necessary memory traffic
        bound = t["floor1"] + t["floor23"]  # one division and one multiply-add per body on the chain: a lower bound
        floors.append(dict(n=n, kernel_ns_per_body=t["kernel"] / n * 1e9, pass1_ns_per_body=t["pass1"] / n * 1e9,
                           floor_ns_per_body=floor / n * 1e9, floor_pass1_ns_per_body=t["floor1"] / n * 1e9,
                           floor_passes23_ns_per_body=t["floor23full"] / n * 1e9,
                           latency_bound_ns_per_body=bound / n * 1e9, ratio_to_floor=t["kernel"] / floor,
                           ratio_to_latency_bound=t["kernel"] / bound))
        floor_rows.append([n, f"{t['kernel'] / n * 1e9:.1f}", f"{t['pass1'] / n * 1e9:.1f}",
                           f"{(t['kernel'] - t['pass1']) / n * 1e9:.1f}", f"{floor / n * 1e9:.1f}",
                           f"{t['floor1'] / n * 1e9:.1f}", f"{t['floor23full'] / n * 1e9:.1f}",
                           f"{t['kernel'] / floor:.2f}", f"{bound / n * 1e9:.1f}", f"{t['kernel'] / bound:.2f}"])
    if floor_rows:
        print("kernel against its floor, ns per body (medians of 7 interleaved rounds); floor = replica of the passes'")
        print("arithmetic with only the loads and stores they need; bound = one division + one multiply-add per body")
        print_table(["N", "kernel", "pass 1", "passes 2+3 (+checks)", "floor", "floor 1", "floor 2+3",
                     "kernel/floor", "bound", "kernel/bound"], floor_rows)
    calls = {}
    for n in (2, 10):
        calls[n] = small_model_calls(n)
    names = list(calls[2])
    print("one call from Python, us (medians of 9 interleaved rounds)")
    print_table(["N", *names], [[n, *(f"{calls[n][k] * 1e6:.3f}" for k in names)] for n in calls])
    rk4 = rk4_second()
    print(f"rk4, serial_chain(100) over 1 s (dt = 1e-4, 10,000 steps, 40,000 evaluations; median of 5 interleaved "
          f"rounds): {rk4['simulate']:.3f} s; the 40,000 forward-dynamics calls alone {rk4['kernel only']:.3f} s")
    summary["floor"] = floors
    summary["clock"] = args.clock
    summary["small_model_calls_s"] = {str(n): v for n, v in calls.items()}
    summary["rk4_100_links_1s"] = rk4
    if args.floor_and_calls:
        path = write_json("forward_dynamics_floor_calls", {"summary": summary})
        print(f"wrote {path}")
        return
    cold = import_and_first_call(cold=True)
    warm = import_and_first_call(cold=False)
    summary.update(cold_import_s=cold[0], cold_first_call_s=cold[1], warm_import_s=warm[0],
                   warm_first_call_s=warm[1])
    print(f"import + first call: cold (empty numba cache) {cold[0]:.2f} s + {cold[1]:.2f} s, "
          f"warm {warm[0]:.2f} s + {warm[1]:.3f} s")
    path = write_json("forward_dynamics", {"records": records, "summary": summary})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
