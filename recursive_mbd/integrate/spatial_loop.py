"""The spatial time-loop front: what a run of ``rm.simulate`` on a ``Model3D`` builds before the generic time
loops take over (any method: the explicit ones, bdf, generalized_alpha): its inputs (``_SpatialInputs``: tau and
the element slots), its compiled system and state map (``SpatialTimeLoop``), and the checked start (q0 with unit
quaternions, projected onto the loops)."""


import numpy as np

from .. import _checks
from .._kernels.arrays import readonly_zeros
from .._kernels.spatial import layout as SL
from .._kernels.spatial.layout import N_BOX, N_CSTATE, N_PER_CONTACT
from ..errors import StateError
from .runs import _Inputs


class _SpatialInputs(_Inputs):
    """The inputs of a run on a ``Model3D``: tau (nv,) constant, or a function tau(t) / tau(t, q, v) (q (nq,) with
    unit quaternions, v (nv,)), and drivers of revolute and prismatic joints (as the planar ones: body -> f(t) or
    (f, f', f''), the coordinate's rate in v); u = [the model's element slots (its forces and torques that are
    functions of time) | tau when tau is a function | f, f', f'' of each driver]."""

    spatial = True

    def __init__(self, model, tau, drivers=None):
        offset = self._take_tau(model, tau, model.nv, lambda value: _spatial_tau(value, model.nv))
        body_int = model.body_int
        self._take_drivers(model, drivers, offset, body_int[:, SL.NVJ], body_int[:, SL.QIDX], body_int[:, SL.VIDX])
        self.has_python = self._needs_python()


def _spatial_tau(tau, nv):
    """A constant tau of a Model3D as a float64 array of shape (nv,); a StateError naming the shape otherwise."""
    arr = np.asarray(_checks.real_array(tau, "tau"), dtype=float)
    if arr.shape != (nv,):
        raise StateError(f"tau must have shape ({nv},) for this model (nv = {nv}), got shape {arr.shape}")
    return arr


class SpatialTimeLoop:
    """The spatial formulation's pieces for the generic time loops (``rm.simulate`` on a ``Model3D``): the compiled
    system (``_kernels.spatial.system``: the tree, or the loop layer on top of it), the initial state
    y = (q0, v0, 0, 0) (projected onto the loops) and the map back from the integrated states: q with every
    quaternion renormalised (a dense-output sample between two projected steps may be off unit by the local error),
    v as integrated. ``watch_impacts``: a fixed-step run, which stops at an impact that its step does not resolve
    (``_kernels.spatial.contact.update_contacts``). ``keep_driven``: the integrated state keeps the driven
    coordinates and rates (at their drivers' values: generalized_alpha's Newton step locks them); otherwise they
    leave it."""

    name = "recursive"

    def __init__(self, model, inputs, stabilization="none", alpha=0.0, beta=0.0, projection_tol=1e-12,
                 watch_impacts=False, keep_driven=False):
        from .._kernels.spatial.system import SpatialSystem  # noqa: PLC0415  (registers its overloads)
        from ..dynamics import spatial  # noqa: PLC0415  (spatial kernels only for spatial models)
        from ..dynamics.loops import FILTER_RCOND, POSITION_RCOND  # noqa: PLC0415

        self.model = model
        self.inputs = inputs
        ws = spatial.workspace(model)
        nq, nv, nb, m = model.nq, model.nv, model.nbodies, model.nconstraints
        nshapes = model.shape_int.shape[0]
        stab = np.array([alpha, beta]) if stabilization == "baumgarte" else np.zeros(2)
        # the loop layer's per-body poses and velocities: read only when the model has loops (system_rhs and
        # project_state test for them), so a tree gets 0 rows (192 bytes a body saved)
        rows = nb if m else 0
        loops = (model.loop_int, model.loop_real, np.zeros((rows, 3, 3)), np.zeros((rows, 3)), np.zeros((rows, 3)),
                 np.zeros((rows, 3)), np.zeros((rows, 6)), np.zeros(40), np.zeros(m), np.zeros(m), np.zeros((m, nv)),
                 np.zeros(m), np.zeros((m, 12)), np.zeros((m, nv)), np.zeros(nv),
                 readonly_zeros(3),  # no gravity: read-only as the model's, so the tree kernels compile once
                 stab, np.zeros(m),
                 np.array([0, -1, 0], dtype=np.int64),  # rank, the first state's rank, weak eigenvalues
                 np.concatenate(([1.0 if (stabilization == "projection" and m) else 0.0, projection_tol, 20.0,
                                  POSITION_RCOND, FILTER_RCOND], np.full(m, -1.0))),  # rows' first norms after
                 np.zeros(m), np.zeros((m, m)), np.zeros(nv),
                 np.zeros((m if inputs.drivers else 0, nv)))  # the driving forces' responses to the multipliers
        # the S the kernels read: forward dynamics reads the rows of joints neither spherical nor revolute only
        # (``fd_S``, 0 rows for a model of those); the loop kernels read every joint's subspace. Sized here, not by
        # ``ws.S``, whose first use would allocate the full array in the model's workspace as well.
        motion_subspaces = np.zeros((nb, model._max_nv, 6)) if m else np.zeros_like(ws.fd_S)
        condensed = (np.zeros_like(ws.UD), np.zeros_like(ws.uD))
        if inputs.drivers:  # the hybrid dynamics take every joint but the driven ones by the general steps: every row
            motion_subspaces = np.zeros((nb, model._max_nv, 6))
            condensed = (np.zeros((nb, model._max_nv, 6)), np.zeros((nb, model._max_nv)))
        self.system = SpatialSystem(
            model.body_int, model.body_real, model.gravity, model._euclid_q.astype(np.int64),
            model._euclid_v.astype(np.int64), model._quat_q, model._quat_v, inputs.tau_const,
            np.array([inputs.tau_offset], dtype=np.int64), np.zeros(inputs.size), spatial.element_system(model),
            np.zeros(nq), np.zeros(nv),
            np.zeros(nv), np.zeros(nv), np.zeros_like(ws.ws), motion_subspaces, *condensed, np.zeros_like(ws.tmp),
            loops,
            (model.contact_int, model.contact_real, np.zeros((model.ncontacts, N_PER_CONTACT)), np.zeros(2),
             model.shape_int, model.shape_real, np.arange(nshapes, dtype=np.int64), np.zeros((nshapes, N_BOX)),
             np.zeros(2), np.zeros((model.ncontacts if watch_impacts else 0, 2))),
            *driver_fields(model, inputs, keep_driven))
        # the integrated coordinates and velocities (nq + nv less two per driver that leaves them); the work terms
        # follow
        self._keep_driven = keep_driven
        self._size = nq + nv - (0 if keep_driven else 2 * len(inputs.drivers))

    def initial_state(self, q0, qd0, t0, callback, key):
        if self.model.nloops:
            from ..dynamics.spatial_loops import consistent_start  # noqa: PLC0415

            driven = None
            if self.inputs.drivers:  # the driven joints at their drivers' values at t0, held by the projection
                q0, qd0 = q0.copy(), qd0.copy()
                self.inputs(t0, q0, qd0, np.zeros(self.inputs.size))
                driven = self.inputs.driven
            q0, qd0 = consistent_start(self.model, q0, qd0, driven)
        # the work terms, then the contacts' state: none touching yet (``_kernels.spatial.contact``)
        return np.concatenate((*self._free(q0, qd0), [0.0, 0.0], np.zeros(N_CSTATE * self.model.ncontacts)))

    def _free(self, q, v):
        """The integrated entries of q and v: all of them without drivers or with ``keep_driven``."""
        if not self.inputs.drivers or self._keep_driven:
            return q, v
        return q[self.system.free_q], v[self.system.free_v]

    def joint_states(self, t, y):
        """q (nt, nq) with unit quaternions and v (nt, nv) of the integrated states y (nt, nq + nv + 2 less two per
        driver), the driven coordinates and rates from their drivers at t."""
        nq, nv = self.model.nq, self.model.nv
        y = np.atleast_2d(y)
        if self.inputs.drivers:
            free_q, free_v = self.system.free_q, self.system.free_v
            q, v = np.zeros((y.shape[0], nq)), np.zeros((y.shape[0], nv))
            q[:, free_q] = y[:, :free_q.size]
            v[:, free_v] = y[:, free_q.size:self._size]
            for (coord, _, evaluate), rate in zip(self.inputs.drivers, self.inputs.driven_rates, strict=True):
                values = np.array([evaluate(ti) for ti in np.atleast_1d(t)]).reshape(-1, 3)
                q[:, coord] = values[:, 0]
                v[:, rate] = values[:, 1]
        else:
            q, v = y[:, :nq].copy(), y[:, nq:nq + nv].copy()
        columns = self.model._quat_q[:, None] + np.arange(4)
        if columns.size:
            quats = q[:, columns]  # (nt, k, 4)
            q[:, columns] = quats / np.linalg.norm(quats, axis=2)[:, :, None]
        return q, v

    def work(self, y):
        return y[:, self._size:self._size + 2]

    def contact_state(self, y):
        """The contacts' state (nt, nrows, N_CSTATE) of the integrated states y."""
        return y[:, self._size + 2:].reshape(y.shape[0], -1, N_CSTATE)

    def state(self, result, i):
        """The integrated state of sample i of ``result``: its free q (unit quaternions), v, zero work terms and
        the contacts' state."""
        return np.concatenate((*self._free(result.q[i], result.qd[i]), [0.0, 0.0],
                               [] if result.contact_state is None else result.contact_state[i].ravel()))

    def finish(self, result, y, callback, key):
        """The contacts' state at the samples (contact models); the loops' drift max |phi| at every sample (models
        with loops); the evaluator of ``result.qdd()`` and ``result.driving_forces()``."""
        result._evaluator = (callback, key, self.system, self.inputs, self)
        result._without_drivers = not self.inputs.drivers  # its driving forces are zeros
        if self.model.has_contacts:
            result.contact_state = self.contact_state(y).copy()
        if self.model.nloops:
            from ..dynamics.spatial_loops import constraints  # noqa: PLC0415

            result.constraint_drift = np.array([np.abs(constraints(self.model, qi)[0]).max() for qi in result.q])

    def multiplier_probe(self, result, y, i):
        """(state, lam): sample i's reported (q, v) (unit quaternions) and the loop layer's lam (m,) that the
        dynamics there fill."""
        from .._kernels.spatial.system import LOOP_LAM  # noqa: PLC0415

        return self.state(result, i), self.system.loops[LOOP_LAM]


def driver_fields(model, inputs, keep_driven=False):
    """The driver fields of a run's ``SpatialSystem`` (``_kernels.spatial.system``): driven_coords (nd, 3) (q index,
    v index, first slot in u), free_q, free_v, driven, drive and rate; all but driven_coords with no rows without
    drivers (the system's state is then (q, v) whole). ``keep_driven``: free_q and free_v hold every index (the
    state keeps the driven entries)."""
    nd = len(inputs.drivers)
    coords = np.zeros((nd, 3), dtype=np.int64)
    coords[:, 0] = inputs.driven_coords
    coords[:, 1] = inputs.driven_rates
    coords[:, 2] = inputs.driver_offset + 3 * np.arange(nd)
    if not nd:
        empty = np.zeros(0, dtype=np.int64)
        return coords, empty, empty, inputs.driven, np.zeros(0), np.zeros(0)
    free_q, free_v = np.arange(model.nq, dtype=np.int64), np.arange(model.nv, dtype=np.int64)
    if not keep_driven:
        free_q = np.setdiff1d(free_q, coords[:, 0]).astype(np.int64)
        free_v = np.setdiff1d(free_v, coords[:, 1]).astype(np.int64)
    return coords, free_q, free_v, inputs.driven, np.zeros(model.nv), np.zeros(model.nq)


def _spatial_start(model, q0, qd0):
    """(q0, v0) of a run on a Model3D as float64 arrays: shapes (nq,), (nv,), finite; each quaternion off unit norm
    by more than 1e-12 is normalised with a RuntimeWarning (one that is zero is a StateError naming body and index)."""
    from ..model.configuration import _state_vector  # noqa: PLC0415

    q0 = _state_vector(q0, model.nq, "q0").copy()
    qd0 = _state_vector(qd0, model.nv, "qd0").copy()
    starts = np.asarray(model._quat_q, dtype=np.int64)
    if starts.size:  # vectorised: a per-quaternion Python loop costs seconds on a 1e6-link chain
        rows = starts[:, None] + np.arange(4)
        with np.errstate(over="ignore"):  # an overflowed norm (inf) is handled below
            norms = np.linalg.norm(q0[rows], axis=1)
        off = np.flatnonzero(~(np.abs(norms - 1.0) <= 1e-12))  # NaN norms are caught by the finiteness check
        if off.size:
            names = model.names  # built once: it is a fresh list of every body's name
            for k in off:
                start, body, norm = int(starts[k]), int(model._quat_body[k]), float(norms[k])
                where = f"q0[{start}:{start + 4}], the quaternion of body {names[body]!r} (index {body}),"
                if not norm > 0.0:
                    raise StateError(f"{where} is zero: not a rotation")
                _checks.warn(f"{where} has norm {norm!r}; simulate normalises it", RuntimeWarning)
            quats = q0[rows[off]]
            overflowed = np.isinf(norms[off])  # finite entries whose squares overflow (1e155): scaled down first
            quats[overflowed] /= np.max(np.abs(quats[overflowed]), axis=1, keepdims=True)
            q0[rows[off]] = quats / np.linalg.norm(quats, axis=1, keepdims=True)
    return q0, qd0
