"""The contact law that planar and spatial contacts share: Hunt and Crossley's normal force and the stick-slip clip
of Coulomb friction, written for a tangential vector of any dimension (the plane's one component, the 3D contact's
three), so that both formulations apply one law (``planar.contact``, ``spatial.contact``).

A row's tangential force is a spring and damper from its stick anchors, F_t = -k_t xi - c_t v_t, whose length is
clipped at mu F_n (it slides). A vector is clipped component by component with ``coulomb_clip(component, norm,
limit)`` (its norm computed once by the caller); in one dimension that is min(max(F_t, -limit), limit) exactly.
``add_planar_force`` adds a planar contact's force to a body's wrench (the ground contacts' and the pairs').
"""

import numba

from . import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)

# as the contact kernels: nothing here allocates or returns an array
njit = numba.njit(cache=True, error_model="numpy", _nrt=False)


@njit
def hunt_crossley(stiffness, exponent, damping, depth, rate, impact_speed):
    """(F_n, its elastic part k d^p) of the law F_n = max(0, k d^p (1 + (C / v_in) d')) at the depth d > 0, its rate
    d' and the impact speed v_in the damping C is scaled by (``recursive_mbd.model.contact.restitution_damping``)."""
    elastic = stiffness * depth ** exponent
    return max(0.0, elastic * (1.0 + damping * rate / impact_speed)), elastic


@njit
def coulomb_clip(component, norm, limit):
    """A component of the tangential force whose length is ``norm``, clipped so that the length is at most
    ``limit`` = mu F_n (the direction kept: a sliding contact's friction opposes its spring and damper's pull)."""
    if norm > limit:
        return component / norm * limit
    return component


@njit
def slipped_stretch(component, norm, stiffness, limit):
    """A component of the anchors' stretch xi (of length ``norm``) after a step: kept while the stick spring's
    force k_t |xi| is within ``limit`` = mu F_n, else moved back onto the limit, |xi| = limit / k_t (the contact
    slid; no stick spring, no stretch)."""
    if stiffness * norm > limit:
        return component / norm * (limit / stiffness) if stiffness > 0.0 else 0.0
    return component


@njit
def add_planar_force(wrench, com, body, qx, qy, fx, fy):
    """Add the force (fx, fy) at the ground point (qx, qy) to a planar body's wrench (fx, fy, its moment about the
    centre of mass com[body]); nothing for the ground (body < 0)."""
    if body >= 0:
        wrench[body, 0] += fx
        wrench[body, 1] += fy
        wrench[body, 2] += (qx - com[body, 0]) * fy - (qy - com[body, 1]) * fx
