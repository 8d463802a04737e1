"""The contact studies of the examples against their closed forms, on short runs of small chains: a chain over a
drum against the capstan law, a chain sliding off a frictionless table edge against x0 cosh(sqrt(g / L) t), and a
chain falling onto a table against F = 3 M g y / L (``examples/capstan.py``, ``table_edge.py``,
``falling_chain.py`` build the models and derive the closed forms; docs/guide/contact.md has the longer runs); and
a chain fountain lifting off its beaker's rim (``rm.studies.chain_fountain``, ``examples/chain_fountain.py``)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import recursive_mbd as rm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import capstan  # noqa: E402
import falling_chain  # noqa: E402
import table_edge  # noqa: E402

G = 9.81


def test_the_discrete_capstan_ratio_tends_to_exp_mu_theta():
    # each joint turning the chain by b multiplies the tension by (1 + mu tan(b / 2)) / (1 - mu tan(b / 2)), whose
    # logarithm is mu b + (mu + mu^3) b^3 / 12 + ...; the M - 1 inner joints turn it by pi / M, the two end ones
    # by half that: log R_M = mu pi + (mu + mu^3) pi^3 (M - 3 / 4) / (12 M^3) + O(M^-4)
    friction = 0.3
    errors = [capstan.polygon_ratio(links, friction) / math.exp(friction * math.pi) - 1.0 for links in
              (25, 50, 100, 200)]
    assert all(e > 0.0 for e in errors) and errors == sorted(errors, reverse=True)
    assert errors[-1] < 1e-4  # the bound at 200 links is 1 %
    links = 200
    leading = (friction + friction ** 3) * math.pi ** 3 * (links - 0.75) / (12.0 * links ** 3)
    assert math.log1p(errors[-1]) == pytest.approx(leading, rel=1e-3)


def test_a_chain_sliding_over_a_drum_has_the_discrete_capstan_ratio():
    # measured from the steady slide's acceleration; off by the chain's own mass (1e-3 of the weights') and by the
    # polygon's turning as joints arrive on the drum: up to 8e-4 in runs of 12 to 200 links
    ratio, exact, res = capstan.measured_ratio(12, 0.3, t_end=0.2, excess=1.5)
    assert res.success
    assert ratio == pytest.approx(exact, rel=1e-3)
    assert np.abs(res.energy_balance()).max() < 1e-9
    forces = res.contact_forces()
    sliding = forces["normal"][-1] > 0.0
    assert np.count_nonzero(sliding) >= 12  # the joints on the drum press on it ...
    slip = np.abs(forces["tangential"][-1, sliding])
    assert np.allclose(slip, 0.3 * forces["normal"][-1, sliding], rtol=1e-9)  # ... and all slip, at mu F_n


def test_a_chain_over_a_drum_holds_below_the_discrete_capstan_ratio():
    # weights at 0.9 R_M: the chain slips a little as the contacts take the load, then sticks for good
    model, q0 = capstan.chain_over_drum(12, 0.3, 0.9 * capstan.polygon_ratio(12, 0.3))
    res = rm.simulate(model, q0, np.zeros_like(q0), 0.2, t_eval=[0.0, 0.1, 0.2], rtol=1e-6, atol=1e-10)
    assert res.success
    assert abs(res.q[1, 0]) < 1e-3  # the contacts' spring and its slip, against the 26 mm links
    assert abs(res.q[2, 0] - res.q[1, 0]) < 1e-6


def test_a_chain_slides_off_a_frictionless_table_edge_as_x0_cosh():
    n = 20
    model, q0, x0, radius = table_edge.chain_on_table(n, hanging=4)
    times = np.linspace(0.0, 0.3, 31)
    res = rm.simulate(model, q0, np.zeros_like(q0), 0.3, t_eval=times, rtol=1e-8, atol=1e-10)
    assert res.success
    depth = table_edge.end_depth(model, res, radius)
    assert depth[-1] > 1.3 * x0  # it slid
    # the discrete chain lags the continuous one as its links turn round the bend: 2e-3 of x0 here, 3e-3 at 25
    # links over 0.4 s, less with more links (examples/table_edge.py)
    assert np.abs(depth - x0 * np.cosh(math.sqrt(G) * times)).max() < 4e-3 * x0
    assert np.abs(res.energy_balance()).max() < 1e-7


def test_a_chain_falling_onto_a_table_loads_it_with_three_times_the_landed_weight():
    res, landed, impulse, t_land = falling_chain.fall(50, samples=101)
    # the top falls freely while it is in the air (0.9998 g at 50 links, 1.012 g at 100, 1.0000 g at 200)
    air = res.t <= 0.9 * t_land
    acceleration = np.linalg.lstsq(0.5 * res.t[air, None] ** 2, landed[air])[0][0]
    assert acceleration == pytest.approx(G, rel=0.02)
    # the table's impulse over the last nine tenths of the fall against the integral of 3 M g y / L: the force is a
    # train of 50 link landings: 3.01 times the landed weight at 50 links, 3.03 at 100, 3.06 at 200
    first = np.searchsorted(res.t, 0.1 * t_land)
    weight = np.trapezoid(G * landed[first:], res.t[first:])
    assert (impulse[-1] - impulse[first]) / weight == pytest.approx(3.0, rel=0.03)


def test_a_chain_fountain_lifts_off_the_rim_with_the_energy_balance_closed():
    # a short run of a small pile (3 rows of 20 links) dropping 0.35 m: the chain lifts off the beaker's lip and
    # arches above it (here up to 8.7 mm above a chain lying on the rim, clear of it at 44 % of the samples); the
    # rise growing with the drop needs the longer runs of examples/chain_fountain.py (docs/guide/contact.md)
    study = rm.studies.chain_fountain(100, 0.35, t_end=0.4, samples=41)
    summary, radius = study["summary"], study["geometry"]["radius"]
    assert study["result"].success
    assert summary["samples_running"] >= 20  # the end landed and the pile has not run out
    assert summary["max_top"] > 2.0 * radius
    assert summary["clear"] > 0.25
    assert summary["mean_speed"] > 0.5
    # the contacts' work (links on links, on the beaker, the lip and the floor) closes the balance: 6e-6 J of the
    # 0.34 J that the drop is worth, at rtol 1e-5
    assert summary["energy_balance"] < 1e-4 * summary["energy_scale"]


def test_a_chain_fountain_too_short_for_its_pile_or_its_floor_is_refused():
    with pytest.raises(rm.ModelError, match="too few for a pile"):
        rm.studies.chain_fountain_model(20, 0.35)
    with pytest.raises(rm.ModelError, match=r"hanging links would reach below the floor 0\.1 m down"):
        rm.studies.chain_fountain_model(100, 0.1)
