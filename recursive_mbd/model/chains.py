"""Serial chains of uniform rods, and Takeno's closed-form n-link rigid pendulum (Takeno 2018).

Convention (docs/conventions.md): rod i has its frame origin at its centre and lies along its local -y axis
(proximal end at (0, +l/2), distal end at (0, -l/2)); rod 1 is hinged to the ground at the origin, each next rod to
the distal end of the previous one. q_i is the angle of rod i relative to rod i-1, so the absolute angle of rod j,
theta_j = q_1 + ... + q_j, is Takeno's angle from the downward vertical (counter-clockwise positive).
"""

import numbers

import numpy as np

from .. import _checks
from ..errors import ModelError, StateError
from .planar import Model


def rod_chain(lengths, density=1.0, gravity=9.81):
    """A serial chain of uniform slender rods of the given lengths and one linear density.

    Parameters
    ----------
    lengths : array_like, shape (n,)
        Rod lengths [m], > 0, from the ground outwards.
    density : float
        Linear density rho [kg/m]: rod j has mass rho l_j and J = rho l_j^3 / 12 about its centre.
    gravity : float
        Magnitude g of gravity [m/s^2], pointing along -y.

    Returns
    -------
    Model with bodies "link1" .. "linkn" joined by revolute joints.
    """
    lengths = _checks.real_array(lengths, "lengths")
    if lengths.ndim != 1 or lengths.size == 0:
        raise ModelError(f"lengths must be a non-empty 1-D array, got shape {lengths.shape}")
    if not np.all(np.isfinite(lengths)) or np.any(lengths <= 0.0):
        bad = int(np.flatnonzero(~(np.isfinite(lengths) & (lengths > 0.0)))[0])
        raise ModelError(f"lengths[{bad}] must be finite and > 0, got {lengths[bad]}")
    density = _positive(density, "density")
    gravity = _model_real(gravity, "gravity")
    model = Model(gravity=(0.0, -gravity), name=f"{lengths.size}-link rod chain")
    n = lengths.size
    half = 0.5 * lengths
    masses = density * lengths
    zeros = np.zeros(n)
    model.add_bodies(np.arange(n) - 1, "revolute", parent_point=np.column_stack((zeros, -np.append(0.0, half[:-1]))),
                     child_point=np.column_stack((zeros, half)), mass=masses, inertia=masses * lengths**2 / 12.0,
                     names=[f"link{j + 1}" for j in range(n)])
    return model


MAX_LINKS = 10**8  # a chain's arrays hold a few hundred bytes per link: beyond this no machine has the memory


def _model_real(value, what):
    """A finite real number (TypeError naming ``what`` for a string or complex, ModelError for NaN or inf)."""
    try:
        return _checks.real(value, what)
    except StateError as err:
        raise ModelError(str(err)) from None


def _positive(value, what):
    value = _model_real(value, what)
    if not value > 0.0:
        raise ModelError(f"{what} must be finite and > 0, got {value}")
    return value


def _check_chain(n, length, mass, gravity):
    """(n, length, mass, gravity) checked: n a positive integer (TypeError for a non-integer), length, mass finite
    and > 0, gravity finite."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"n must be a positive integer, got {type(n).__name__} {n!r:.40}")
    if not 1 <= n <= MAX_LINKS:
        raise ModelError(f"n must be an integer in [1, {MAX_LINKS}], got {n!r}")
    return int(n), _positive(length, "length"), _positive(mass, "mass"), _model_real(gravity, "gravity")


def serial_chain(n, length=1.0, mass=1.0, gravity=9.81):
    """n identical uniform rods, total length ``length`` [m] and total mass ``mass`` [kg] (docs/conventions.md).

    Each rod is length/n long and mass/n heavy with J = (mass/n)(length/n)^2/12 about its centre. With q = 0 the
    chain hangs straight down from the origin.
    """
    n, length, mass, gravity = _check_chain(n, length, mass, gravity)
    model = rod_chain(np.full(n, length / n), density=mass / length, gravity=gravity)
    model.name = f"serial_chain({n})"
    return model


def bead_chain(n, length=1.0, mass=1.0, gravity=9.81):
    """n point masses (mass/n each) on massless links of length/n: the lumped chain, beside ``serial_chain``'s rods.

    Body i's frame origin is its hinge (the previous bead, or the ground origin for i = 1), its bead at (0, -l)
    in its frame; with q = 0 the chain hangs straight down. Same coordinates as ``serial_chain``.
    """
    n, length, mass, gravity = _check_chain(n, length, mass, gravity)
    link = length / n
    model = Model(gravity=(0.0, -float(gravity)), name=f"bead_chain({n})")
    parent_point = np.zeros((n, 2))
    parent_point[1:, 1] = -link
    model.add_bodies(np.arange(n) - 1, "revolute", parent_point=parent_point, mass=mass / n, inertia=0.0,
                     com=(0.0, -link), names=[f"link{j + 1}" for j in range(n)])
    return model


def relative_to_absolute(q):
    """Absolute rod angles theta_j = q_1 + ... + q_j (also rates and accelerations); works on (..., n)."""
    return np.cumsum(q, axis=-1)


def absolute_to_relative(theta):
    """Relative joint angles q_j = theta_j - theta_{j-1} (theta_0 = 0); works on (..., n)."""
    theta = np.asarray(theta, dtype=float)
    return np.diff(theta, axis=-1, prepend=0.0)


def takeno_matrices(theta, lengths):
    """A(theta), B(theta) and the gravity lever vector L of Takeno's eq. (21)-(22), divided by rho.

    alpha_jk = L_max(j,k) - l_j delta_jk / 6 with L_j = l_j / 2 + sum_{i>j} l_i (eqs. 12, 20);
    A_jk = l_k alpha_jk cos(theta_j - theta_k), B_jk = l_k alpha_jk sin(theta_j - theta_k).
    """
    theta = np.asarray(theta, dtype=float)
    lengths = np.asarray(lengths, dtype=float)
    n = lengths.size
    tail = np.cumsum(lengths[::-1])[::-1]  # sum_{i >= j} l_i
    lever = tail - 0.5 * lengths  # L_j, eq. (12)
    index = np.arange(n)
    alpha = lever[np.maximum.outer(index, index)] - np.diag(lengths / 6.0)  # eq. (20)
    diff = theta[:, None] - theta[None, :]
    coupling = alpha * lengths[None, :]
    return coupling * np.cos(diff), coupling * np.sin(diff), lever


def takeno_forward_dynamics(theta, theta_dot, lengths, density=1.0, gravity=9.81, tau=None):
    """Absolute angular accelerations of an n-rod pendulum from Takeno's closed form (Takeno 2018, eq. 22).

    A(theta) theta'' + B(theta) theta'^2 + g L sin(theta) = T / (rho l), solved densely (O(n^3)); an independent
    route to check the recursive formulation against.

    Parameters
    ----------
    theta, theta_dot : array_like, shape (n,)
        Absolute angles from the downward vertical [rad] (counter-clockwise) and their rates [rad/s].
    lengths : array_like, shape (n,)
        Rod lengths [m]; all rods share the linear density ``density`` [kg/m].
    gravity : float
        g [m/s^2].
    tau : array_like, shape (n,), optional
        Relative joint torques [N m], tau_j acting on rod j and -tau_j on rod j-1 (the chain's q convention).
        Takeno's closed form has none; they enter each rod's moment equation, which eq. (18) is divided by rho l_j.

    Returns
    -------
    theta_ddot : ndarray, shape (n,)
    """
    lengths = _checks.finite_array(lengths, "lengths", (None,))
    n = lengths.size
    if n == 0 or not np.all(lengths > 0.0):
        raise ModelError(f"lengths must be a non-empty array of lengths > 0, got {lengths.tolist()[:10]}")
    theta = _checks.finite_array(theta, "theta", (n,))
    theta_dot = _checks.finite_array(theta_dot, "theta_dot", (n,))
    density = _positive(density, "density")
    gravity = _model_real(gravity, "gravity")
    a_mat, b_mat, lever = takeno_matrices(theta, lengths)
    rhs = -b_mat @ theta_dot**2 - gravity * lever * np.sin(theta)
    if tau is not None:
        tau = _checks.finite_array(tau, "tau", (n,))
        rod_moment = tau - np.append(tau[1:], 0.0)  # tau_j - tau_{j+1} on rod j
        rhs += rod_moment / (density * lengths)
    return _checks.check_finite_result(np.linalg.solve(a_mat, rhs), "theta_ddot")
