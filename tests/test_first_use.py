"""What a first run loads and compiles beyond what it needs: the dop853 tableau (scipy.integrate) only for dop853,
and the start of a bare tree checked by the kernel ``Model.compile`` checked the model with."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import recursive_mbd as rm
from recursive_mbd import ModelError, StateError
from recursive_mbd._kernels.timeloops import integrators
from recursive_mbd.integrate import runs, tableaus
from recursive_mbd.integrate.tableaus import TABLEAUS, Tableau

ROOT = Path(__file__).resolve().parents[1]


def test_simulate_does_not_import_scipy_integrate():
    # the time loops and the explicit tableaus (dopri5, rk4) need no scipy; dop853's coefficients come from scipy
    code = ("import sys\nfrom recursive_mbd.integrate import simulate, tableaus\n"
            "print('scipy.integrate' in sys.modules)\ntableaus.TABLEAUS['dop853']\n"
            "print('scipy.integrate' in sys.modules)")
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment,
                         cwd=ROOT).stdout.split()
    assert out == ["False", "True"]


def test_lazy_tableaus_are_a_mapping_of_the_methods():
    assert list(TABLEAUS) == ["dopri5", "dop853", "rk4"] and len(TABLEAUS) == 3
    assert all(isinstance(TABLEAUS[name], Tableau) and TABLEAUS[name].name == name for name in TABLEAUS)
    assert tableaus.DOP853 is TABLEAUS["dop853"] and TABLEAUS["dop853"].E3 is not None
    assert tableaus.DENSE_OUTPUT == ("dopri5", "generalized_alpha", "bdf")  # dop853 has no continuous extension
    assert TABLEAUS.get("radau") is None and "rk4" in TABLEAUS
    with pytest.raises(AttributeError):
        tableaus.DOP5  # noqa: B018


def _start(model, **options):
    model.compile()
    inputs = runs._Inputs(model, options.get("tau"), None)
    loop = runs.RecursiveTimeLoop(model, inputs)
    callback, key = inputs.callback()
    return loop, inputs, callback, key


@pytest.mark.parametrize("n", [1, 3])
def test_bare_tree_start_takes_the_checked_kernel(n):
    # a serial chain without elements, inputs or drivers: its start is checked by the forward-dynamics kernel of
    # Model.compile, and the status is the right-hand side's (the same error as the time loop's first evaluation)
    model = rm.chains.serial_chain(n)
    loop, inputs, callback, key = _start(model)
    assert runs._bare_tree_start(loop.system, inputs, callback)
    qd0 = np.full(n, 1e155)  # finite, but qd^2 overflows in the forward dynamics
    with pytest.raises((ModelError, StateError)) as bare:
        runs.start_state(model, inputs, loop, callback, key, np.zeros(n), qd0, 0.0)
    y0 = loop.initial_state(np.zeros(n), qd0, 0.0, callback, key)
    status = integrators.system_rhs(callback, key, loop.system, 0.0, y0, np.empty_like(y0))
    assert status != 0
    with pytest.raises(type(bare.value)) as full:
        runs.raise_kernel_status(model, status)
    assert str(full.value) == str(bare.value)
    with pytest.raises(type(bare.value), match=str(bare.value)[:20]):
        rm.simulate(model, np.zeros(n), qd0, 1.0)


def test_start_with_loads_or_inputs_takes_the_right_hand_side():
    model = rm.chains.serial_chain(2)
    loop, inputs, callback, key = _start(model, tau=lambda t, q, qd: np.zeros(2))
    assert not runs._bare_tree_start(loop.system, inputs, callback)
    four_bar, _ = rm.models.four_bar()
    loop, inputs, callback, key = _start(four_bar)
    assert not runs._bare_tree_start(loop.system, inputs, callback)  # loops: the loop layer's system
