"""A chain fountain in the plane (Biggins and Warner 2014): a chain pulled out of a pile in a beaker by its end
hanging to the floor rises above the beaker's rim, and the rise grows with the drop.

    python3 examples/chain_fountain.py [--links N] [--drops 0.35 0.7] [--t-end T] [--quick] [--plot FILE]

The chain (capsule links, 1 cm long) lies folded in rows in a beaker whose right side is a rounded lip; its end is
led over the lip and hangs beside the beaker, whose floor stands ``drop`` above the room's floor. Let go, the hanging
part pulls the chain out of the pile, faster and faster towards a steady speed v. Biggins and Warner's balance
(derived here as the study uses it): a steadily moving chain has T - lambda v^2 = lambda g y + const along its
path. The arch's top (where T is close to lambda v^2) stands h2 above the pick-up point and the floor h1 below
it; the pile pushes the link being picked up with alpha lambda v^2, so T0 = (1 - alpha) lambda v^2 there, and T
is beta lambda v^2 at the floor: h2 = alpha v^2 / g, h1 = (1 - alpha - beta) v^2 / g, and h2 / h1 = alpha /
(1 - alpha - beta): the rise grows in proportion to the drop. The study (``rm.studies.chain_fountain``) measures
the chain's top above the rim, its speed where it falls and the pile's height.

Measured (200 links, 0.8 s, dopri5 at rtol 1e-5; over the samples after the end has landed while a row of the pile
is left; the top: the chain's axis above that of a chain lying on the rim):

    drop [m]   top above the rim [mm]: mean, least   clear of the lip   speed [m/s]   h2 / h1
      0.35                6.9, 0.0                         46 %              1.20         0.076
      0.7                18.4, 5.9                         80 %              2.17         0.066

--quick (120 links for 0.5 s, about 40 s): a mean top of 2.5 mm above the rim, clear of it at 29 % of the samples,
at 0.35 m; 12.1 mm, clear at all of them, at 0.7 m. The chain is still speeding up when the pile runs out: the
numbers are qualitative (docs/guide/contact.md).
"""

from _options import parse, parser, pyplot

import recursive_mbd as rm

arg_parser = parser(__doc__, plot="FILE")
arg_parser.add_argument("--links", type=int, default=200, help="links (default 200)")
arg_parser.add_argument("--drops", type=float, nargs="+", default=[0.35, 0.7],
                        help="beaker floor above the room's floor [m] (default 0.35 0.7)")
arg_parser.add_argument("--t-end", type=float, default=0.8, help="simulated time [s] (default 0.8)")
arg_parser.add_argument("--quick", action="store_true", help="120 links for 0.5 s")
args = parse(arg_parser)
links, t_end = (120, 0.5) if args.quick else (args.links, args.t_end)

runs = {}
print(" drop [m]  top above rim [mm]: mean  least  clear of the lip  speed [m/s]  h2 [m]  h1 [m]  h2/h1   "
      "energy balance [J]  steps   wall [s]")
for drop in args.drops:
    study = rm.studies.chain_fountain(links, drop, t_end=t_end)
    runs[drop] = study
    s = study["summary"]
    if "mean_top" not in s:
        print(f" {drop:8.3f}  the hanging end did not reach the floor in {t_end} s")
        continue
    print(f" {drop:8.3f}  {1e3 * s['mean_top']:+22.1f} {1e3 * s['min_top']:+6.1f}  {s['clear']:16.0%}"
          f"  {s['mean_speed']:11.3f}"
          f"  {s['h2']:6.4f}  {s['h1']:6.4f}  {s['h2'] / s['h1']:5.3f}  {s['energy_balance']:18.1e}"
          f"  {s['nsteps']:6d}  {s['seconds']:8.1f}")

if args.plot:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(runs) + 1, figsize=(4.5 * (len(runs) + 1), 5))
    for drop, study in runs.items():
        axes[0].plot(study["t"], 100.0 * study["top"], label=f"drop {drop:g} m")
    axes[0].axhline(0.0, color="k", lw=0.5)
    axes[0].set(xlabel="t [s]", ylabel="chain's top above the rim [cm]", title=f"{links}-link chain fountain")
    axes[0].legend()
    for ax, (drop, study) in zip(axes[1:], runs.items(), strict=True):
        geometry, res = study["geometry"], study["result"]
        rm.plot.draw(res.model, res.q[-1], ax=ax)
        outer = geometry["lip_center"][0] + geometry["lip_radius"]  # the beaker and the arch, not the whole fall
        ax.set(xlim=(-0.05, outer + 0.1), ylim=(-0.1, geometry["rim"] + 0.1), xlabel="x [m]", ylabel="y [m]",
               title=f"drop {drop:g} m: the beaker at t = {res.t[-1]:.2f} s")
    fig.tight_layout()
    fig.savefig(args.plot)
    print(f"figure: {args.plot}")
