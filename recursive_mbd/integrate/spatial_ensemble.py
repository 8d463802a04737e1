"""The spatial side of ``simulate_many``: a ``Model3D``'s members in the ensemble kernels of ``ensemble``.

Each member's system is the ``SpatialSystem`` that ``rm.simulate`` builds for the model (``spatial_loop``), with
the member's own packed arrays (body_real, gravity, elem_real, tau) and its thread's scratch swapped in, so that the
members run the very compiled time loop of ``rm.simulate`` on a ``Model3D``.

What can vary per member without recompiling (``params``; k = number of members):

===========================  ===============  ===========================================================
name                         shape            meaning
===========================  ===============  ===========================================================
``"mass"``                   (k, nbodies)     every body's mass [kg] (the centres of mass stay)
``"mass:BODY"``              (k,)             one body's mass (BODY a body name)
``"inertia:BODY"``           (k, 6)           one body's inertia about its centre of mass, body axes: (Ixx,
                                              Iyy, Izz, Ixy, Ixz, Iyz) [kg m^2], checked as ``add_body`` does
``"parent_point:BODY"``      (k, 3)           the joint point of BODY in its parent's frame [m]
``"child_point:BODY"``       (k, 3)           the joint point of BODY in its own frame [m]
``"gravity"``                (k, 3)           the gravity vector [m/s^2]
``"stiffness:ELEMENT"``      (k,) or (k, d)   stiffness of a (joint) spring-damper; a joint spring-damper's
                                              per coordinate (d of them) or one for all
``"damping:ELEMENT"``        (k,) or (k, d)   damping, likewise
``"rest:ELEMENT"``           (k,) or (k, d)   rest length [m] (>= 0), or rest joint coordinates (not of a
                                              spherical joint's spring, whose rest is a quaternion)
``"force:ELEMENT"``          (k, 3)           a constant applied force [N] (in the element's frame)
``"torque:ELEMENT"``         (k, 3)           a constant applied torque [N m] (in the element's frame)
===========================  ===============  ===========================================================
"""

import numba
import numpy as np

from .._kernels import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from .._kernels.spatial import layout as SL
from .._kernels.spatial.system import SpatialSystem
from ..dynamics.batch import per_thread
from ..errors import ModelError, StateError
from ..model.spatial_fields import _checked_inertias, _full_inertia
from .spatial_loop import _spatial_start

# the parameter kinds of a Model3D that can vary per member -> the shapes they take (the table above)
PARAMETERS_3D = {
    "mass": "(k, nbodies) or per body (k,)",
    "inertia": "per body (k, 6)",
    "parent_point": "per body (k, 3)",
    "child_point": "per body (k, 3)",
    "gravity": "(k, 3)",
    "stiffness": "per element (k,) or (k, d)",
    "damping": "per element (k,) or (k, d)",
    "rest": "per element (k,) or (k, d)",
    "force": "per element (k, 3)",
    "torque": "per element (k, 3)",
}


@numba.njit(cache=True)
def spatial_member(head, elements, loops, contacts, members, scratch, m, tid):
    """The SpatialSystem of member m on thread tid: the template's (``spatial_loop.SpatialTimeLoop``'s system)
    parts (``ensemble.system_parts``: its array fields ``head``, its ``elements``, ``loops`` and ``contacts``) with
    member m's packed arrays ``members`` = (BODY_REAL, GRAVITY, ELEM_REAL, TAU_CONST) and thread tid's blocks
    [tid, :rows] of ``scratch`` (``thread_scratch``: the template's scratch arrays, one padded block per thread).
    The driver fields are the template's: an ensemble has no drivers, so they have no rows and are shared."""
    BODY_REAL, GRAVITY, ELEM_REAL, TAU_CONST = members
    (U, Qs, Vs, TAUs, VDOTs, WS, S, UD, uD, TMP, EWS, ES, ETMP, EROT, EPOS, EOMEGA, EVEL, EWRENCH, EFORCES, EENERGY,
     EPER) = scratch
    (body_int, _, _, euclid_q, euclid_v, quat_q, quat_v, _, tau_offset, u, q, v, tau, vdot, ws, S0, UD0, uD0,
     tmp, driven_coords, free_q, free_v, driven, drive, rate) = head
    e = elements
    member_elements = (e[0], ELEM_REAL[m], EWS[tid, :e[2].shape[0]], ES[tid, :e[3].shape[0]],
                       ETMP[tid, :e[4].shape[0]], EROT[tid, :e[5].shape[0]], EPOS[tid, :e[6].shape[0]],
                       EOMEGA[tid, :e[7].shape[0]], EVEL[tid, :e[8].shape[0]], EWRENCH[tid, :e[9].shape[0]],
                       EFORCES[tid, :e[10].shape[0]], EENERGY[tid, :e[11].shape[0]], EPER[tid, :e[12].shape[0]])
    return SpatialSystem(body_int, BODY_REAL[m], GRAVITY[m], euclid_q, euclid_v, quat_q, quat_v, TAU_CONST[m],
                         tau_offset, U[tid, :u.shape[0]], member_elements, Qs[tid, :q.shape[0]], Vs[tid, :v.shape[0]],
                         TAUs[tid, :tau.shape[0]], VDOTs[tid, :vdot.shape[0]], WS[tid, :ws.shape[0]],
                         S[tid, :S0.shape[0]], UD[tid, :UD0.shape[0]], uD[tid, :uD0.shape[0]], TMP[tid, :tmp.shape[0]],
                         loops, contacts, driven_coords, free_q, free_v, driven, drive, rate)


def thread_scratch(template, nthreads):
    """Per-thread copies of the template system's scratch arrays (``spatial_member``'s ``scratch``): u, q, v, tau,
    vdot, the articulated-body workspace (ws, S, UD, uD, tmp) and the force elements' scratch. A tree's loop and
    contact arrays have no rows and are shared."""
    arrays = (template.u, template.q, template.v, template.tau, template.vdot, template.ws, template.S, template.UD,
              template.uD, template.tmp, *template.elements[2:])
    return tuple(per_thread(nthreads, arr.shape[0], *arr.shape[1:]) for arr in arrays)


def checked_starts(model, Q0, QD0):
    """Q0 (k, nq) with each member's quaternions of unit norm: a row whose quaternion is off unit by more than 1e-12
    goes through ``rm.simulate``'s check (``_spatial_start``: normalised with a RuntimeWarning, a zero one a
    StateError), named by its member. The caller's array is not changed (a copy is)."""
    starts = np.asarray(model._quat_q, dtype=np.int64)
    if not starts.size:
        return Q0
    norms = np.linalg.norm(Q0[:, starts[:, None] + np.arange(4)], axis=2)
    off = np.flatnonzero(~np.all(np.abs(norms - 1.0) <= 1e-12, axis=1))
    if off.size:
        Q0 = Q0.copy()
    for m in off:
        try:
            Q0[m] = _spatial_start(model, Q0[m], QD0[m])[0]
        except StateError as err:
            raise StateError(f"member {m}: {err}") from None
    return Q0


def spatial_member_arrays(model, params, k, values, nonnegative, element):
    """Per-member packed arrays (body_real (k, nbodies, N_REAL), gravity (k, 3), elem_real (k, nelements, N_EREAL))
    of a Model3D with ``params`` applied (the table above), read-only: member m's are body_real[m], gravity[m],
    elem_real[m], the numba types of the model's own arrays. ``values``, ``nonnegative`` and ``element`` are the
    planar ensemble's checks (``ensemble._member_values``, ``_nonnegative``, ``_element``)."""
    body_real = np.repeat(model.body_real[None], k, axis=0)
    elem_real = np.repeat(model.elem_real[None], k, axis=0)
    gravity = np.repeat(np.asarray(model.gravity, dtype=float)[None], k, axis=0)
    com = np.asarray(model.body_com)
    for name, value in params.items():
        kind, _, target = name.partition(":")
        if kind not in PARAMETERS_3D:
            raise ModelError(f"params[{name!r}]: {kind!r} cannot vary per member of a Model3D; the parameters that "
                             f"can: {sorted(PARAMETERS_3D)} (see recursive_mbd.integrate.spatial_ensemble)")
        if kind == "mass":
            bodies = [model.body_index(target)] if target else slice(None)
            shape = () if target else (model.nbodies,)
            mass = nonnegative(values(value, k, shape, name), name).reshape(k, -1)
            body_real[:, bodies, SL.MASS] = mass
            # the first moment m c, as Model3D.compile packs it
            body_real[:, bodies, SL.MCOM:SL.MCOM + 3] = np.multiply(mass[:, :, None], com[bodies][None])
        elif kind in ("inertia", "parent_point", "child_point"):
            if not target:
                raise ModelError(f"params[{name!r}]: name the body, e.g. '{kind}:{model.names[0]}'")
            body = model.body_index(target)
            if kind == "inertia":
                def fail(mask, message, name=name):
                    raise StateError(f"member {int(np.flatnonzero(mask)[0])}: params[{name!r}]: {message}")
                entries = _checked_inertias(_full_inertia(values(value, k, (6,), name)), fail)
                body_real[:, body, SL.IC:SL.IC + 6] = entries
            else:
                column = SL.PP if kind == "parent_point" else SL.CP
                body_real[:, body, column:column + 3] = values(value, k, (3,), name)
        elif kind == "gravity":
            if target:
                raise ModelError(f"params[{name!r}]: gravity belongs to the model, give 'gravity' with shape (k, 3)")
            gravity[:] = values(value, k, (3,), name)
        elif kind in ("stiffness", "damping", "rest"):
            e = element(model, target, name, ("spring_damper", "joint_spring_damper"))
            spec = model._elements[e]
            if spec["kind"] == "spring_damper":
                column = {"stiffness": SL.EK, "damping": SL.EC, "rest": SL.EREST}[kind]
                elem_real[:, e, column] = nonnegative(values(value, k, (), name), name)
                continue
            if kind == "rest" and spec["rest"].size != spec["stiffness"].size:
                raise ModelError(f"params[{name!r}]: the rest of a spherical joint's spring is a quaternion; it "
                                 "cannot vary per member")
            ndof = spec["stiffness"].size
            arr = np.asarray(value)
            per_dof = values(value, k, (ndof,) if arr.ndim == 2 else (), name).reshape(k, -1)
            if kind != "rest":
                per_dof = nonnegative(per_dof, name)
            column = {"stiffness": SL.EJK, "damping": SL.EJC, "rest": SL.EJREST}[kind]
            elem_real[:, e, column:column + ndof] = per_dof
        else:  # force, torque
            e = element(model, target, name, (kind,))
            elem_real[:, e, SL.EVALUE:SL.EVALUE + 3] = values(value, k, (3,), name)
    for arr in (body_real, gravity, elem_real):
        arr.flags.writeable = False
    return body_real, gravity, elem_real
