"""The explicit Runge-Kutta methods of ``rm.simulate`` as data: a Butcher tableau each (scipy's form: A, B, C, the
error weights E and the continuous extension), for the generic steps of the compiled time loops
(``_kernels.timeloops.integrators``); the names agree with ``method_names.METHODS``."""

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .method_names import METHODS


@dataclass(frozen=True)
class Tableau:
    """An explicit Runge-Kutta method: y_n+1 = y_n + h sum_j B_j k_j, k_j = f(t + C_j h, y_n + h sum_m A_jm k_m).

    E = B - B_hat are the weights of the embedded error estimate (adaptive methods only); E3 those of a second,
    lower-order estimate (DOP853); DENSE the weights of the continuous extension's last term (Hairer's dopri5
    form); ORDER the order used by step-size control.
    """

    name: str
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    order: int
    E: np.ndarray = field(default=None)
    DENSE: np.ndarray = field(default=None)
    E3: np.ndarray = field(default=None)

    @property
    def adaptive(self):
        return self.E is not None


DOPRI5 = Tableau(
    name="dopri5",
    A=np.array([
        [0, 0, 0, 0, 0, 0, 0],
        [1 / 5, 0, 0, 0, 0, 0, 0],
        [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
        [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
        [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
    ]),
    B=np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]),
    C=np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1]),
    E=np.array([71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40]),
    DENSE=np.array([-12715105075 / 11282082432, 0, 87487479700 / 32700410799, -10690763975 / 1880347072,
                    701980252875 / 199316789632, -1453857185 / 822651844, 69997945 / 29380423]),
    order=5,
)

RK4 = Tableau(
    name="rk4",
    A=np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]]),
    B=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
    C=np.array([0, 0.5, 0.5, 1.0]),
    order=4,
)

def _dop853():
    """Dormand-Prince 8(5,3) with the stage f(t + h, y_new) appended as a 13th, FSAL stage (its row of A is B).

    The coefficients are the published ones (Hairer, Norsett & Wanner 1993, II.10) as scipy ships them.
    """
    from scipy.integrate._ivp import dop853_coefficients as coef  # noqa: PLC0415

    stages = coef.N_STAGES
    a = np.zeros((stages + 1, stages + 1))
    a[:stages, :stages] = coef.A[:stages, :stages]
    a[stages, :stages] = coef.B
    return Tableau(name="dop853", A=a, B=np.append(coef.B, 0.0), C=np.append(coef.C[:stages], 1.0), order=8,
                   E=np.array(coef.E5, dtype=float), E3=np.array(coef.E3, dtype=float))


class _Tableaus(Mapping):
    """The tableaus by name, in the order given; a value given as a function is called on first access: dop853's
    coefficients come from scipy, whose ``scipy.integrate`` import (about 0.4 s of CPU time) a run of the other
    methods does not need."""

    def __init__(self, **tableaus):
        self._tableaus = tableaus

    def __getitem__(self, name):
        tableau = self._tableaus[name]
        if not isinstance(tableau, Tableau):
            tableau = self._tableaus[name] = tableau()
        return tableau

    def __iter__(self):
        return iter(self._tableaus)

    def __len__(self):
        return len(self._tableaus)


TABLEAUS = _Tableaus(dopri5=DOPRI5, dop853=_dop853, rk4=RK4)
# METHODS, FIXED_STEP (method_names): the tableaus above and the midpoint rule (integrators._midpoint_step)
assert METHODS == (*TABLEAUS, "implicit_midpoint", "generalized_alpha", "bdf"), \
    "method_names.METHODS must name the tableaus"
# The methods whose runs interpolate between steps (t_eval, events), besides scipy's: the tableaus with a continuous
# extension, generalized_alpha (cubic Hermite, implicit.py) and bdf (its interpolating polynomial, bdf.py).
# dop853's tableau has no continuous extension (``_dop853``; not built here, see ``_Tableaus``).
DENSE_OUTPUT = (*(name for name in TABLEAUS if name != "dop853" and TABLEAUS[name].DENSE is not None),
                "generalized_alpha", "bdf")


def __getattr__(name):
    """``DOP853``, built on first access (``_Tableaus``)."""
    if name == "DOP853":
        return TABLEAUS["dop853"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
