"""Ensemble throughput: member-steps per second of rm.simulate_many against ensemble and model size.

    python3 benchmarks/ensembles.py [--quick] [--no-mujoco]

1. Parallel speed-up: 1e4 members of a double pendulum (serial_chain(2)), RK4 with dt = 0.01 over 1 s, the
   compiled ensemble on 1 thread (numba.set_num_threads(1)) against all of numba's threads, and a Python loop of
   rm.simulate calls (the way without ensembles).
2. Throughput against ensemble size k and model size N = 2, 10, 100, serial and parallel, 100 RK4 steps
   (dt = 0.01 from starts in [-1, 1] for N = 2; dt = 0.001 from starts in [-0.05, 0.05] for the longer chains,
   so that every member finishes).
3. Against mujoco.rollout (when mujoco is installed): the same chains (N = 2 and 50 uniform rods, contacts and
   constraints off), RK4 with the same step, every state stored by both, both on all threads; the final states
   are compared as a check that both integrate the same system.
Every time is the median of 3 runs (wall and process CPU time, with the load average: on a shared machine the
wall-time speed-up measures the load, the CPU times the parallel overhead); compilation is done before timing.
Writes benchmarks/results/ensembles.json.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time

import numba
import numpy as np
from _common import print_table, write_json

import recursive_mbd as rm

ENDS_ONLY = 10**9  # store t0 and t_end only


def _median(func, repeats=3, cpu=False):
    """Median wall time of ``repeats`` calls [s]; with cpu=True also the median process CPU time (all threads)."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        func()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - start_cpu)
    return (float(np.median(walls)), float(np.median(cpus))) if cpu else float(np.median(walls))


def _starts(k, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 2.0, (k, n)), rng.uniform(-1.0, 1.0, (k, n))


def _case(n):
    """(dt, amplitude of the random start) per chain size: every member must finish, or the timing flatters."""
    return (0.01, 1.0) if n <= 2 else (0.001, 0.05)


def _ensemble_time(model, Q0, QD0, t_end, dt, threads, every=ENDS_ONLY):
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        ens = rm.simulate_many(model, Q0, QD0, t_end, "rk4", dt=dt, every=every)  # compiles outside the timing
        if ens.failed.size:
            raise RuntimeError(f"{ens.failed.size} members failed: {ens.reasons[ens.failed[0]]}")
        return _median(lambda: rm.simulate_many(model, Q0, QD0, t_end, "rk4", dt=dt, every=every), cpu=True)
    finally:
        numba.set_num_threads(previous)


def speedup(k, t_end=1.0, dt=0.01, loop_members=500):
    model = rm.chains.serial_chain(2)
    Q0, QD0 = _starts(k, 2)
    steps = round(t_end / dt)
    threads = numba.config.NUMBA_NUM_THREADS
    load = os.getloadavg()[0]
    serial, serial_cpu = _ensemble_time(model, Q0, QD0, t_end, dt, 1)
    parallel, parallel_cpu = _ensemble_time(model, Q0, QD0, t_end, dt, threads)
    rm.simulate(model, Q0[0], QD0[0], 2 * dt, "rk4", dt=dt)
    loop = _median(lambda: [rm.simulate(model, Q0[m], QD0[m], t_end, "rk4", dt=dt, every=ENDS_ONLY)
                            for m in range(loop_members)]) * k / loop_members
    # on a loaded machine the wall-time speed-up shows the load; the CPU times show the parallel overhead: with
    # idle cores the speed-up would be about threads * serial_cpu / parallel_cpu
    return dict(k=k, steps=steps, threads=threads, serial_s=serial, parallel_s=parallel, speedup=serial / parallel,
                serial_cpu_s=serial_cpu, parallel_cpu_s=parallel_cpu,
                idle_speedup_estimate=threads * serial_cpu / parallel_cpu,
                load_average_before=load, load_average_after=os.getloadavg()[0],
                python_loop_s_extrapolated=loop, loop_members_timed=loop_members,
                parallel_member_steps_per_s=k * steps / parallel)


def scaling(sizes, ks, steps=100):
    threads = numba.config.NUMBA_NUM_THREADS
    records = []
    for n in sizes:
        model = rm.chains.serial_chain(n)
        dt, amplitude = _case(n)
        t_end = steps * dt
        for k in ks[n]:
            Q0, QD0 = _starts(k, n, 1)
            Q0, QD0 = amplitude * Q0, amplitude * QD0
            serial, serial_cpu = _ensemble_time(model, Q0, QD0, t_end, dt, 1)
            parallel, parallel_cpu = _ensemble_time(model, Q0, QD0, t_end, dt, threads)
            records.append(dict(n=n, k=k, steps=steps, dt=dt, serial_s=serial, parallel_s=parallel,
                                serial_cpu_s=serial_cpu, parallel_cpu_s=parallel_cpu,
                                load_average=os.getloadavg()[0],
                                serial_member_steps_per_s=k * steps / serial,
                                parallel_member_steps_per_s=k * steps / parallel, speedup=serial / parallel))
            print(f"  N = {n}, k = {k}: {serial:.2f} s / {parallel:.2f} s", file=sys.stderr, flush=True)
    return records


def _mujoco_chain(n, dt):
    """serial_chain(n) as MJCF: rods of length 1/n, mass 1/n, hinged about y, hanging along -z, gravity -z."""
    import mujoco  # noqa: PLC0415 - optional comparison

    length, mass = 1.0 / n, 1.0 / n
    inertia = mass * length * length / 12.0
    body = ""
    for i in reversed(range(n)):
        pos = "0 0 0" if i == 0 else f"0 0 {-length}"
        body = (f'<body name="l{i}" pos="{pos}"><joint type="hinge" axis="0 1 0"/>'
                f'<inertial pos="0 0 {-length / 2}" mass="{mass}" diaginertia="{inertia} {inertia} {inertia}"/>'
                f"{body}</body>")
    xml = (f'<mujoco><option timestep="{dt}" integrator="RK4" gravity="0 0 -9.81">'
           '<flag contact="disable" constraint="disable"/></option>'
           f"<worldbody>{body}</worldbody></mujoco>")
    return mujoco.MjModel.from_xml_string(xml)


def against_mujoco(sizes, k, steps):
    try:
        import mujoco  # noqa: PLC0415
        from mujoco import rollout  # noqa: PLC0415
    except ImportError:
        return None
    threads = numba.config.NUMBA_NUM_THREADS
    records = []
    for n in sizes:
        # small swings: the same RK4 then gives the same trajectory to round-off in both (large chaotic swings
        # amplify round-off); the scaling runs' step
        dt, amplitude = _case(n)[0], (0.25 if n <= 2 else 0.05)
        mj_model = _mujoco_chain(n, dt)
        datas = [mujoco.MjData(mj_model) for _ in range(threads)]
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        Q0, QD0 = _starts(k, n, 2)
        Q0, QD0 = amplitude * Q0, amplitude * QD0
        state = np.empty((k, mujoco.mj_stateSize(mj_model, spec)))
        for m in range(k):
            datas[0].qpos[:] = -Q0[m]  # mujoco's hinge about +y turns the rods the other way round: q_mj = -q
            datas[0].qvel[:] = -QD0[m]
            datas[0].time = 0.0
            mujoco.mj_getState(mj_model, datas[0], state[m], spec)
        out = np.empty((k, steps, state.shape[1]))

        def run_mujoco(out=out, state=state, datas=datas, mj_model=mj_model):
            rollout.rollout(mj_model, datas, state, nstep=steps, state=out)

        run_mujoco()
        mj_time = _median(run_mujoco)
        model = rm.chains.serial_chain(n)
        ours = _ensemble_time(model, Q0, QD0, steps * dt, dt, threads, every=1)[0]
        final = rm.simulate_many(model, Q0[:20], QD0[:20], steps * dt, "rk4", dt=dt, every=ENDS_ONLY).q[:, -1]
        mj_final = out[:20, -1, 1:1 + n]  # state = (time, qpos, qvel)
        records.append(dict(n=n, k=k, steps=steps, dt=dt, threads=threads, mujoco_s=mj_time, ours_s=ours,
                            mujoco_member_steps_per_s=k * steps / mj_time, ours_member_steps_per_s=k * steps / ours,
                            ratio=mj_time / ours, max_final_q_difference=float(np.abs(final + mj_final).max()),
                            mujoco_version=mujoco.__version__))
        print(f"  mujoco N = {n}: {mj_time:.2f} s, ours {ours:.2f} s", file=sys.stderr, flush=True)
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small ensembles (1e3 members) only")
    parser.add_argument("--no-mujoco", action="store_true")
    args = parser.parse_args()
    k_big = 1000 if args.quick else 10_000
    ks = {2: (100, 1000, k_big), 10: (100, 1000), 100: (100, 300)} if not args.quick else \
        {2: (100, 1000), 10: (100, 1000), 100: (100,)}
    head = speedup(k_big, loop_members=100 if args.quick else 500)
    print(f"double pendulum, {head['k']} members x {head['steps']} RK4 steps: serial {head['serial_s']:.2f} s, "
          f"parallel ({head['threads']} threads) {head['parallel_s']:.2f} s: speed-up {head['speedup']:.2f}x "
          f"(load average {head['load_average_before']:.1f}); CPU time serial {head['serial_cpu_s']:.2f} s, parallel "
          f"{head['parallel_cpu_s']:.2f} s: on idle cores about {head['idle_speedup_estimate']:.2f}x; "
          f"a Python loop of rm.simulate: {head['python_loop_s_extrapolated']:.1f} s "
          f"(extrapolated from {head['loop_members_timed']} members)")
    records = scaling(sorted(ks), ks)
    print_table(["N", "k", "steps", "serial s", "parallel s", "speed-up", "CPU s serial/parallel",
                 "member-steps/s (parallel)", "load"],
                [[r["n"], r["k"], r["steps"], f"{r['serial_s']:.3f}", f"{r['parallel_s']:.3f}",
                  f"{r['speedup']:.2f}", f"{r['serial_cpu_s']:.2f} / {r['parallel_cpu_s']:.2f}",
                  f"{r['parallel_member_steps_per_s']:,.0f}", f"{r['load_average']:.1f}"] for r in records])
    mujoco_records = None
    if not args.no_mujoco:
        mujoco_records = against_mujoco((2, 50), 200 if args.quick else 1000, 200)
        if mujoco_records is None:
            print("mujoco is not installed: no comparison (pip install mujoco)")
        else:
            print_table(["N", "k", "steps", "mujoco.rollout s", "simulate_many s", "mujoco member-steps/s",
                         "ours member-steps/s", "ours / mujoco", "max |q - q_mj|"],
                        [[r["n"], r["k"], r["steps"], f"{r['mujoco_s']:.3f}", f"{r['ours_s']:.3f}",
                          f"{r['mujoco_member_steps_per_s']:,.0f}", f"{r['ours_member_steps_per_s']:,.0f}",
                          f"{r['ratio']:.2f}", f"{r['max_final_q_difference']:.1e}"] for r in mujoco_records])
    print(f"wrote {write_json('ensembles', {'speedup': head, 'scaling': records, 'mujoco': mujoco_records})}")


if __name__ == "__main__":
    main()
