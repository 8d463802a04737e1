"""Compile time of the spatial time loops (issue 18 item 3): rm.simulate on a Model3D, fresh numba cache and warm.

Each figure is measured in a subprocess with its own NUMBA_CACHE_DIR: "cold" compiles everything that run needs
(the spatial kernels, the SpatialSystem overloads, the generic time loop for that system type), "warm" is a second
process reading that cache. Also the cost per right-hand-side evaluation (dopri5, the run's time over its
evaluations: steps, projections and output included) of a 20-link spherical chain, and of seed 002's centrifugal
governor as an open tree and with its two links as loops (the multiplier layer, projection after every step).

    python3 benchmarks/spatial_simulate.py
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import write_json  # noqa: E402

CODE = """
import time, numpy as np, recursive_mbd as rm
m = rm.Model3D(); m.add_body(joint='spherical', inertia=(1.0, 2.0, 3.0, 0, 0, 0), com=(0, 0, -1))
q = m.neutral(); v = np.array([0.1, 1.0, 0.0])
t = time.perf_counter(); rm.forward_dynamics(m, q, v); a = time.perf_counter()
rm.simulate(m, q, v, 0.1); b = time.perf_counter()
rm.simulate(m, q, v, 0.1, method='rk4', dt=0.01); c = time.perf_counter()
n = 20
chain = rm.Model3D()
chain.add_bodies(np.arange(-1, n - 1), 'spherical', parent_point=np.tile([0.0, 0.0, -0.1], (n, 1)),
                 mass=1.0 / n, inertia=(1e-4, 1e-4, 1e-6, 0.0, 0.0, 0.0), com=(0.0, 0.0, -0.05))
q0 = rm.integrate_configuration(chain, chain.neutral(), 0.3 * np.random.default_rng(0).normal(size=chain.nv))
rm.simulate(chain, q0, np.zeros(chain.nv), 0.01)
d = time.perf_counter(); res = rm.simulate(chain, q0, np.zeros(chain.nv), 2.0, rtol=1e-8, atol=1e-8)
e = time.perf_counter()
gov = rm.models.centrifugal_governor(closed=True)
v0 = np.array([8.0, 0.0, 0.0, 0.0]) + 0.5 * gov.dq_dphi(0.6)
times = []
for model in (rm.models.centrifugal_governor().model, gov.model):
    rm.simulate(model, gov.q(0.6), v0, 0.01)
    f = time.perf_counter(); run = rm.simulate(model, gov.q(0.6), v0, 2.0, rtol=1e-10, atol=1e-12)
    times.append((time.perf_counter() - f) / run.nfev)
print(a - t, b - a, c - b, (e - d) / res.nfev, *times)
"""


def run(cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split()]


def main():
    with tempfile.TemporaryDirectory() as cache:
        cold = run(cache)
        warm = run(cache)
    names = ("first forward_dynamics", "first simulate dopri5", "first simulate rk4", "per evaluation, 20 links",
             "per evaluation, governor tree", "per evaluation, governor loops")
    print(f"{'':32s} {'cold cache [s]':>15s} {'warm cache [s]':>15s}")
    for name, c, w in zip(names, cold, warm, strict=True):
        print(f"{name:32s} {c:15.4g} {w:15.4g}")
    path = write_json("spatial_simulate", {"cold": dict(zip(names, cold, strict=True)),
                                           "warm": dict(zip(names, warm, strict=True))})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
