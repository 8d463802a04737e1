"""How does the n-link rigid pendulum approach the continuous chain? Takeno's question (2018), answered with numbers.

    python3 examples/chain_studies.py [--quick] [--plot DIR]

1. small-oscillation frequencies of rod chains and bead chains against the Bessel-zero law, n = 4 ... 4096;
2. a chain pinned at both ends against the catenary: sag, tension, support reactions, order in the link length;
3. the falling folded chain: the free end against the energy-conserving and free-fall theories, n = 20 ... 200;
4. the tip whip of a chain released from the horizontal, with what it costs the integrator.
With --plot DIR (matplotlib), each study draws a figure into DIR.
Source: Takeno (2018), "Equations of the n-link rigid pendulum".
"""

import math
from pathlib import Path

import numpy as np
from _options import parse, parser, pyplot

from recursive_mbd.analysis import studies

arg_parser = parser(__doc__, plot="DIR")
arg_parser.add_argument("--quick", action="store_true", help="smaller n (a few seconds)")
args = parse(arg_parser)
quick = args.quick

# an n-link chain has n modes: the three lowest of every chain need n >= 3 (fewer links would give NaN errors)
ns = [4, 8, 16, 32, 64, 128, 256] + ([] if quick else [512, 1024, 2048, 4096])
rods = studies.frequency_study(ns, k=3, kind="rods")
beads = studies.frequency_study(ns, k=3, kind="beads")
print("1. frequencies: relative error of the n-link chain against omega_k = (j0k/2) sqrt(g/L)")
print("      n   rods k=1    rods k=2    rods k=3    beads k=1   beads k=2   beads k=3   seconds")
for i, n in enumerate(ns):
    print(f"{n:7d}" + "".join(f"  {e:+.3e}" for e in (*rods["error"][i], *beads["error"][i]))
          + f"  {rods['seconds'][i] + beads['seconds'][i]:.3f}")
for name, study in (("rods", rods), ("beads", beads)):
    print(f"   {name}: |error| = C n^-p with p = {np.round(study['order'], 3)}, C = {np.round(study['constant'], 4)}")

cat_ns = [4, 8, 16, 32, 64] + ([] if quick else [128, 256])
cat = studies.catenary_study(cat_ns, span=6.0, length=10.0, mass=5.0)
exact = cat["continuous"]
print(f"\n2. catenary, 10 m chain of 5 kg between supports 6 m apart: continuous sag {exact['sag']:.6f} m, "
      f"H = {exact['horizontal_tension']:.6f} N, V = {exact['vertical_reaction']:.4f} N per support")
print("      n   sag [m]      sag error    H [N]        H error      V [N]")
for i, n in enumerate(cat_ns):
    print(f"{n:7d}   {cat['sag'][i]:.8f}  {cat['sag_error'][i]:+.3e}   {cat['horizontal_tension'][i]:.8f}  "
          f"{cat['tension_error'][i]:+.3e}   {cat['vertical_reaction'][i]:.6f}")
print(f"   sag error order in the link length: {cat['sag_order']:.3f}")

fall_ns = [20, 50] + ([] if quick else [100, 200, 500, 1000])
print("\n3. falling folded chain (L = 1 m, gap 5 cm): fall time / free fall sqrt(2L/g), / energy-conserving theory")
falls = {}
for n in fall_ns:
    fall = studies.folded_chain_fall(n, gap=0.05, rtol=1e-10, atol=1e-12)
    falls[n] = fall
    mid = np.searchsorted(fall["x"][: np.argmax(fall["speed"])], 0.5)
    print(f"   n = {n:4d}: fall time {fall['fall_time']:.5f} s = {fall['fall_time'] / fall['free_fall_time']:.4f} "
          f"free fall = {fall['fall_time'] / fall['energy_conserving_time']:.4f} energy-conserving; speed at "
          f"x = L/2 {fall['speed'][mid]:.4f} m/s (theory {studies.energy_conserving_speed(fall['x'][mid], 1.0):.4f}, "
          f"free fall {math.sqrt(2 * 9.81 * fall['x'][mid]):.4f}); max speed {fall['max_speed'] / math.sqrt(9.81):.2f} "
          f"sqrt(gL), max acceleration {(-fall['acceleration']).max() / 9.81:.0f} g, support force up to "
          f"{np.abs(fall['support_force'][:, 1]).max() / 9.81:.1f} x the weight; energy error "
          f"{fall['energy_error']:.1e}; {fall['result'].nsteps} steps")

whip_ns = [5, 10, 20, 50] + ([] if quick else [100, 200, 500, 1000])
print("\n4. tip whip, released from the horizontal (dopri5, rtol 1e-8): max tip speed / sqrt(2 g L), time of the peak")
whips = {}
for n in whip_ns:
    whip = studies.tip_whip(n)
    whips[n] = whip
    print(f"   n = {n:4d}: max tip speed {whip['max_tip_speed'] / whip['free_fall_speed']:6.2f} at t = "
          f"{whip['whip_time']:.4f} s; {whip['nsteps']} steps ({whip['nrejected']} rejected), step at the whip "
          f"{whip['whip_step']:.1e} s, {whip['seconds']:.2f} s wall, energy error {whip['energy_error']:.1e}")

if args.plot:
    plt = pyplot()
    out = Path(args.plot)
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, study, style in (("rods", rods, "o-"), ("beads", beads, "s--")):
        for k in range(3):
            ax.loglog(study["n"], np.abs(study["error"][:, k]), style, label=f"{name}, mode {k + 1}")
    ax.set(xlabel="links n [-]", ylabel="relative frequency error |omega_n / omega - 1| [-]",
           title="frequencies against the continuous chain")
    ax.legend(fontsize=7)
    fig.savefig(out / "frequencies.png", dpi=110)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    x = np.linspace(0, 6.0, 200)
    a = exact["a"]
    ax1.plot(x, a * np.cosh((x - 3.0) / a) - a * math.cosh(3.0 / a), "k-", label="catenary")
    for n in cat_ns[:3]:
        points = studies.chain_points(studies.discrete_catenary(n, 6.0, 10.0, 5.0)["q"], 10.0)
        ax1.plot(points[:, 0], points[:, 1], "o-", ms=3, label=f"{n} rods")
    ax1.set(xlabel="x [m]", ylabel="y [m]", aspect="equal", title="chain pinned at both ends")
    ax1.legend(fontsize=7)
    ax2.loglog(10.0 / np.array(cat_ns), np.abs(cat["sag_error"]), "o-")
    ax2.set(xlabel="link length [m]", ylabel="|sag error| [m]", title=f"order {cat['sag_order']:.2f}")
    fig.tight_layout()
    fig.savefig(out / "catenary.png", dpi=110)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.5))
    fall = falls[fall_ns[-1]]
    for j, i in enumerate(np.linspace(0, np.argmax(fall["speed"]), 6).astype(int)):
        points = studies.chain_points(fall["result"].q[i])
        ax1.plot(points[:, 0] + 0.25 * j, points[:, 1], "-", label=f"t = {fall['t'][i]:.3f} s")
    ax1.set(xlabel="x [m] (each snapshot 0.25 m right of the one before)", ylabel="y [m]", aspect="equal",
            title=f"folded chain, n = {fall_ns[-1]} (snapshots side by side)")
    ax1.legend(fontsize=7)
    xs = np.linspace(0, 0.999, 300)
    ax2.plot(xs, studies.energy_conserving_speed(xs, 1.0), "k-", label="energy-conserving theory")
    ax2.plot(xs, np.sqrt(2 * 9.81 * xs), "k--", label="free fall")
    for n, f in falls.items():
        stop = np.argmax(f["speed"])
        ax2.plot(f["x"][:stop], f["speed"][:stop], label=f"{n} rods")
    ax2.set(xlabel="fall distance x [m]", ylabel="free-end speed [m/s]", ylim=(0, 12))
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "folded_chain.png", dpi=110)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for n, w in whips.items():
        ax1.plot(w["t"], w["tip_speed"], label=f"{n} links")
    ax1.set(xlabel="t [s]", ylabel="tip speed [m/s]", title="tip whip, released from the horizontal")
    ax1.legend(fontsize=7)
    whip = whips[whip_ns[-1]]
    for i in np.searchsorted(whip["t"], np.linspace(0, whip["whip_time"], 7)):
        points = studies.chain_points(whip["q"][min(i, whip["t"].size - 1)])
        ax2.plot(points[:, 0], points[:, 1], "-", lw=1, label=f"t = {whip['t'][min(i, whip['t'].size - 1)]:.3f} s")
    ax2.set(xlabel="x [m]", ylabel="y [m]", aspect="equal", title=f"{whip_ns[-1]} links up to the whip")
    ax2.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "tip_whip.png", dpi=110)
    print(f"wrote frequencies.png, catenary.png, folded_chain.png, tip_whip.png to {out}")
