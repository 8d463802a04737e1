"""The flip-time map of the double pendulum: how long until either arm flips over, for a grid of release angles.

    python3 examples/flip_map.py [--grid 100] [--t-end 10] [--quick] [--plot flip_map.png]

Two uniform rods (``rm.chains.serial_chain(2)``, 1 m, 1 kg) are released at rest with absolute angles
(theta1, theta2) in [-3, 3] x [-3, 3]. An arm flips when its absolute angle passes +-pi (it goes over the top).
Every start is one member of ``rm.simulate_many`` (dopri5, all members in parallel); a numba-compiled terminal
event stops each member at its first flip. Starts whose energy is too low can never flip (white in the picture):
V(theta) > V(start) for an arm at +-pi. The map is coloured by log10 of the flip time, as in the well-known
picture of the point-mass pendulum. A few members are re-run with ``rm.simulate`` as a check.
"""

import argparse
import time

import numba
import numpy as np
from _options import pyplot

import recursive_mbd as rm


@numba.njit(cache=True)
def arm_flips(t, q, qd):
    """Positive while both absolute angles are inside (-pi, pi); crosses zero when an arm goes over the top."""
    return min(np.pi - abs(q[0]), np.pi - abs(q[0] + q[1]))


arm_flips.terminal = True
arm_flips.direction = -1.0


def flip_map(grid, t_end, rtol=1e-8, atol=1e-10):
    """Flip times (grid, grid) [s] (NaN: no flip before t_end), the angles, the ensemble and the wall time."""
    model = rm.chains.serial_chain(2, length=1.0, mass=1.0)
    angles = np.linspace(-3.0, 3.0, grid)
    theta1, theta2 = np.meshgrid(angles, angles, indexing="ij")
    Q0 = np.column_stack((theta1.ravel(), (theta2 - theta1).ravel()))  # relative joint angles
    start = time.perf_counter()
    ens = rm.simulate_many(model, Q0, np.zeros_like(Q0), t_end, rtol=rtol, atol=atol, t_eval=[0.0, t_end],
                           events=arm_flips)
    wall = time.perf_counter() - start
    if ens.failed.size:
        raise RuntimeError(f"{ens.failed.size} members failed, e.g. {ens.reasons[ens.failed[0]]}")
    times = np.where(ens.status == "event", ens.t_event, np.nan).reshape(grid, grid)
    return times, angles, model, Q0, ens, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=100, help="grid points per angle (default 100)")
    parser.add_argument("--t-end", type=float, default=10.0, help="simulated time [s] (default 10)")
    parser.add_argument("--quick", action="store_true", help="a 24 x 24 grid over 5 s")
    parser.add_argument("--plot", metavar="PNG", help="draw the map into PNG (needs matplotlib)")
    args = parser.parse_args()
    grid, t_end = (24, 5.0) if args.quick else (args.grid, args.t_end)

    times, angles, model, Q0, ens, wall = flip_map(grid, t_end)
    flipped = np.isfinite(times)
    print(f"{grid} x {grid} double pendulums over {t_end:g} s in {wall:.1f} s ({numba.get_num_threads()} threads): "
          f"{flipped.sum()} flip, first after {np.nanmin(times):.3f} s, median {np.nanmedian(times):.3f} s; "
          f"{int(ens.nsteps.sum()):,} steps, {int(ens.nfev.sum()):,} evaluations")

    # check: a few members again, one by one, with rm.simulate and the same event
    check = np.random.default_rng(0).choice(len(Q0), size=5, replace=False)
    worst = 0.0
    for m in check:
        ref = rm.simulate(model, Q0[m], np.zeros(2), t_end, rtol=1e-8, atol=1e-10, t_eval=[0.0, t_end],
                          events=arm_flips)
        ref_time = ref.t_events[0][0] if ref.status == "event" else np.nan
        if np.isnan(ref_time) != np.isnan(ens.t_event[m]):
            raise RuntimeError(f"member {m}: simulate_many and simulate disagree on whether it flips")
        if not np.isnan(ref_time):
            worst = max(worst, abs(ref_time - ens.t_event[m]))
    print(f"check against rm.simulate on {check.size} members: max |flip time difference| = {worst:.1e} s")

    # energy bound: a start that cannot lift either arm over the top never flips
    kinetic, potential = rm.batch.energy(model, Q0, np.zeros_like(Q0)).T
    top = min(rm.energy(model, [np.pi, 0.0], [0.0, 0.0])[1], rm.energy(model, [0.0, np.pi], [0.0, 0.0])[1])
    forbidden = (kinetic + potential < top).reshape(grid, grid)
    print(f"energy check: {forbidden.sum()} starts below the lowest flip energy, {int((forbidden & flipped).sum())} "
          "of them flipped (must be 0)")

    if args.plot:
        fig, ax = pyplot().subplots(figsize=(6, 5))
        image = ax.imshow(np.log10(times).T, origin="lower", extent=(angles[0], angles[-1], angles[0], angles[-1]),
                          cmap="viridis", interpolation="nearest")
        fig.colorbar(image, ax=ax, label="log10(flip time / s)")
        ax.set_xlabel("theta1 [rad]")
        ax.set_ylabel("theta2 [rad]")
        ax.set_title(f"double pendulum: time to flip (white: not within {t_end:g} s)")
        fig.savefig(args.plot, dpi=120, bbox_inches="tight")
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
