"""The chain fountain against Biggins and Warner ("Understanding the chain fountain", Proc. R. Soc. A 470, 2014): a
chain pulled out of a pile in a beaker by its end falling to the floor rises above the beaker's rim, and higher when
the floor lies further below. Their balance gives the rise above the pick-up h2 = alpha v^2 / g and the drop below it
h1 = (1 - alpha - beta) v^2 / g, so the rise grows in proportion to the drop (``rm.studies.chain_fountain``,
``examples/chain_fountain.py``; docs/guide/contact.md has the longer runs and the measured ratios).

A short run of a small pile is not yet the steady fountain (the chain is still speeding up), so the checks are
qualitative: over the same stretch of time, with the fountain running at both drops (the end on the floor, a row of
the pile left), the chain at the larger drop stands clear of the rim, and higher than at the smaller drop."""

import numpy as np

import recursive_mbd as rm

PILE = 125  # links not hanging at the start: a pile of 5 rows of 22 links, the same at both drops
T_END, WINDOW = 0.45, 0.25  # the run and the start of the stretch compared [s]


def hanging_to_the_floor(drop):
    """The most links that can hang beside the beaker at the start (its end less than a link above the floor), so
    that both fountains start at once, pulled by what the drop alone sets."""
    hanging = round(drop / 0.01) + 5  # the model's links are 1 cm long
    while True:
        try:
            rm.studies.chain_fountain_model(PILE + hanging, drop, hanging=hanging)
        except rm.ModelError as err:
            assert "would reach below the floor" in str(err)
            hanging -= 1
            continue
        return hanging


def fountain(drop):
    # dopri5 (the study's method) at rtol 1e-4: half the steps of the study's 1e-5, the same rise to within the
    # chaotic scatter of the arch (docs/guide/contact.md)
    hanging = hanging_to_the_floor(drop)
    return rm.studies.chain_fountain(
        PILE + hanging, drop, t_end=T_END, samples=round(T_END / 0.01) + 1, rtol=1e-4, atol=1e-7, hanging=hanging
    )


def test_the_chain_fountain_rises_above_the_rim_and_higher_at_the_larger_drop():
    low, high = fountain(0.35), fountain(0.7)
    mean_top = []
    for study in (low, high):
        assert study["result"].success
        window = study["t"] >= WINDOW
        assert window.sum() >= 20
        # the fountain runs over the whole stretch: the end has landed and a row of the pile is left
        assert study["landed"][window].all()
        assert (study["remaining"][window] >= study["geometry"]["row"]).all()
        # the contacts' work closes the energy balance (to the tolerance's scale)
        assert study["summary"]["energy_balance"] < 1e-3 * study["summary"]["energy_scale"]
        mean_top.append(study["top"][window].mean())
    # above the rim: at the larger drop the chain's axis stands on average more than a link's radius above that of a
    # chain lying on the rim, and the chain is clear of the lip at most samples
    assert mean_top[1] > high["geometry"]["radius"]
    assert np.mean(high["rim_contacts"][high["t"] >= WINDOW] == 0) > 0.5
    # higher at the larger drop
    assert mean_top[1] > mean_top[0]
