"""Time per forward-dynamics call on serial chains: recursive O(N) vs mass matrix, and peers when installed.

    python3 benchmarks/forward_dynamics.py [--max-n 1000000] [--quick]

Prints a table (median of repeats, ns per body), the Python-call overhead at small N, the growth ratio
t(1e5)/t(1e3), workspace memory per body, cold and warm import plus first call, and writes
benchmarks/results/forward_dynamics.json. Pinocchio (``pip install pin``) and MuJoCo (``pip install mujoco``) are
timed on the same chain in the same run when importable; neither is a dependency.
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

import numpy as np
from _common import median_time, print_table, write_json

import recursive_mbd as rm
from recursive_mbd._kernels import tree
from recursive_mbd.dynamics import workspace


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


def time_mujoco(n):
    try:
        import mujoco  # noqa: PLC0415
    except ImportError:
        return None
    if n > 1000:
        return None  # MuJoCo refuses bodies nested deeper than 1023
    link = 1.0 / n
    body = ""
    rod_inertia = link**2 / 12 / n
    for i in range(n - 1, -1, -1):
        pos = f"0 {-link if i else 0} 0"
        body = (f'<body pos="{pos}"><joint type="hinge" axis="0 0 1"/>'
                f'<inertial pos="0 {-link / 2} 0" mass="{1.0 / n}" diaginertia="{rod_inertia} 1e-12 {rod_inertia}"/>'
                f"{body}</body>")
    xml = f'<mujoco><option gravity="0 -9.81 0" integrator="RK4"/><worldbody>{body}</worldbody></mujoco>'
    try:
        model = mujoco.MjModel.from_xml_string(xml)
    except ValueError as err:  # MuJoCo's XML parser limits nesting depth
        print(f"  MuJoCo refused N = {n}: {str(err).splitlines()[0]}", file=sys.stderr)
        return None
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = chain_state(n)
    return median_time(lambda: mujoco.mj_forward(model, data))


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=float, default=1e6)
    parser.add_argument("--max-n-mass-matrix", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="N up to 1e4 only")
    args = parser.parse_args()
    max_n = 1e4 if args.quick else args.max_n
    sizes = [n for n in (2, 10, 100, 200, 1000, 2000, 10_000, 100_000, 1_000_000) if n <= max_n]

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
    print("forward dynamics of serial_chain(N), median time per call")
    print_table(["N", "recursive us", "kernel us", "ns/body", "mass-matrix us", "pinocchio us (ratio)",
                 "mujoco us (ratio)"], rows)
    by_n = {r["n"]: r for r in records}
    summary = {}
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
