"""The joint coordinates of a spatial model's absolute states compiled, and their constraint drift: what
``dynamics.augmented3d.joint_from_absolute`` computes body by body in Python, in one O(N) pass a sample, for the
runs that keep many samples of long chains (``integrate.augmented3d_implicit``).

Body i's joint state follows from its pose and its parent's (``spatial3d`` names them): the relative rotation
R_j = F^T R_i (F = R_p R0 the joint frame in ground axes), the joint point's offset t = F^T (P_c - P_p), and the
relative rates w = F^T (omega_i - omega_p), u = F^T (the child point's velocity less the parent's coinciding
point's); each joint type reads its coordinates from them (angles by atan2, quaternions with w >= 0 by Shepperd's
method), exactly where the joint's constraints hold (``loads3d._joint_state``, which the implicit route's joint
loads' blocks read too).
"""


import numba
import numpy as np

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .implicit3d import CHUNKS, PARALLEL_BODIES, pnjit
from .loads3d import _joint_state
from .spatial3d import (
    joint_rows,
)

njit = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True)
inline = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy", _nrt=True, inline="always")


@njit
def _sample_bodies(body_int, body_real, zs, zds, q, v, s, jc, jp, res, gam, start, stop):
    """Bodies start to stop - 1 of sample s of ``joint_states``; the largest |C| of their joints (NaN stays)."""
    no_tau = np.zeros(0)
    load = np.empty((2, 6))
    worst = 0.0
    for i in range(start, stop):
        _joint_state(body_int, body_real, zs, zds, i, q, v, s)
        m = joint_rows(body_int, body_real, zs, zds, no_tau, i, jc, jp, res, gam, load)
        for r in range(m):
            if not abs(res[i, r]) <= worst:  # a NaN stays
                worst = abs(res[i, r])
    return worst


@pnjit
def joint_states(body_int, body_real, z, zd, q, v, drift, jc, jp, res, gam):
    """The joint coordinates q (nt, nq), velocities v (nt, nv) and the constraint drift max |C| of the joints
    (nt,) of the absolute samples z (nt, nbodies, 7) and zd (nt, nbodies, 6) (omega in ground axes, unit
    quaternions; the caller checks shapes and dtypes). jc, jp (nbodies, 6, 6), res, gam (nbodies, 6) are scratch
    for the joints' rows. O(N) a sample; from PARALLEL_BODIES bodies on numba's threads (``prange``), in CHUNKS
    ranges of bodies (``implicit3d``'s constants: the same results whatever the threads)."""
    n = z.shape[1]
    parts = np.empty(CHUNKS)
    for s in range(z.shape[0]):
        zs = z[s]
        zds = zd[s]
        if n < PARALLEL_BODIES:
            # the first body typed, not the literal 0: one compile of _sample_bodies serves both branches
            drift[s] = _sample_bodies(body_int, body_real, zs, zds, q, v, s, jc, jp, res, gam, np.int64(0), n)
            continue
        for k in numba.prange(CHUNKS):
            parts[k] = _sample_bodies(body_int, body_real, zs, zds, q, v, s, jc, jp, res, gam, k * n // CHUNKS,
                                      (k + 1) * n // CHUNKS)
        worst = 0.0
        for k in range(CHUNKS):
            if not parts[k] <= worst:  # a NaN stays
                worst = parts[k]
        drift[s] = worst
