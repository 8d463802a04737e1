"""Command line: ``rmbd`` / ``python -m recursive_mbd``.

With no arguments it runs the built-in demo: a double pendulum and a 1000-link chain released from the horizontal,
reporting what was simulated, the energy error and the speed.
"""

import argparse
import sys
import time

import numpy as np

from . import __version__, chains
from .integrate import simulate


def _run_case(label, model, q0, t_end, rtol, atol, samples, out):
    nq = model.nq
    qd0 = np.zeros(nq)
    simulate(model, q0, qd0, min(t_end, 1e-3), rtol=rtol, atol=atol)  # compile / load kernels outside the timing
    start = time.perf_counter()
    res = simulate(model, q0, qd0, t_end, rtol=rtol, atol=atol, t_eval=np.linspace(0.0, t_end, samples))
    wall = time.perf_counter() - start
    kinetic, potential = res.energy()
    total = kinetic + potential
    scale = model.total_mass() * 9.81 * 1.0  # m g L with L = 1 m for both demo models
    drift = float(np.max(np.abs(total - total[0])))
    tip = res.q[-1]
    print(f"{label}", file=out)
    print(f"  simulated {t_end:g} s with dopri5 (rtol {rtol:g}, atol {atol:g}): {res.nsteps} steps, "
          f"{res.nrejected} rejected, {res.nfev} forward-dynamics evaluations", file=out)
    e0 = round(total[0], 12) + 0.0  # no "-0.000000000"
    print(f"  energy: E(0) = {e0:.9f} J, max |E(t) - E(0)| = {drift:.3e} J = {drift / scale:.2e} m g L", file=out)
    print(f"  speed: {wall:.3f} s wall, {res.nsteps / wall:,.0f} steps/s, {res.nfev * nq / wall / 1e6:.1f} M "
          f"body-evaluations/s, {t_end / wall:.3g} simulated s per wall s", file=out)
    print(f"  final joint angles: q1 = {tip[0]:+.6f} rad, q{nq} = {tip[-1]:+.6f} rad", file=out)
    return res, drift / scale


def demo(n_links=1000, t_end_chain=0.5, out=sys.stdout):
    """The built-in demo; returns the relative energy errors of the two runs."""
    print(f"recursive_mbd {__version__}: recursive O(N) planar multibody dynamics", file=out)
    double = chains.serial_chain(2, length=1.0, mass=1.0)
    q0 = np.zeros(2)
    q0[0] = np.pi / 2
    _, err_double = _run_case("double pendulum (2 rods, 1 m, 1 kg), released from the horizontal",
                              double, q0, 10.0, 1e-10, 1e-12, 1001, out)
    chain = chains.serial_chain(n_links, length=1.0, mass=1.0)
    q0 = np.zeros(n_links)
    q0[0] = np.pi / 2
    _, err_chain = _run_case(f"{n_links}-link chain (1 m, 1 kg), released from the horizontal",
                             chain, q0, t_end_chain, 1e-6, 1e-8, 51, out)
    return err_double, err_chain


def main(argv=None):
    parser = argparse.ArgumentParser(prog="rmbd", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"recursive_mbd {__version__}")
    sub = parser.add_subparsers(dest="command")
    p_demo = sub.add_parser("demo", help="run the built-in demo (the default)")
    p_demo.add_argument("--links", type=int, default=1000, help="links of the long chain (default 1000)")
    p_demo.add_argument("--t-end", type=float, default=0.5, help="simulated time of the long chain [s]")
    args = parser.parse_args(argv)
    if args.command in (None, "demo"):
        links = getattr(args, "links", 1000)
        t_end = getattr(args, "t_end", 0.5)
        if links < 1 or not t_end > 0:
            print("rmbd: error: --links must be >= 1 and --t-end > 0", file=sys.stderr)
            return 2
        demo(links, t_end)
    return 0
