"""The result of a run (``SimulationResult``) and its file format, beside the run machinery (``runs``).

``_make_result`` builds it from a run's integrated samples (the formulation's state map, work terms and loop
multipliers, ``sampled_multipliers``); ``SimulationResult`` holds the samples and evaluates the run's dynamics
again at them (``evaluate_system``: the run's compiled system and inputs); ``save`` and ``load`` write and read its
.npz file (``read_npz``: any result archive, read without pickles; ``ResultArchive``: the checks of its entries
that every result reader shares; ``write_npz``: the atomic write of exactly the path given).
"""

import os
from io import BytesIO

import numpy as np

from .. import _checks
from .._kernels import layout as L
from .._kernels.planar import contact as contact_kernels
from .._kernels.planar import pairs, tree
from .._kernels.spatial import layout as SL
from .._kernels.timeloops import integrators
from ..dynamics.kinematics import element_forces, energy, forward_kinematics
from ..errors import ResultFileError
from ..model.spatial import Model3D
from ..model.statuses import raise_status
from ..model.workspace import workspace
from .kernel_status import raise_kernel_status

_RESULT_FORMAT = "recursive_mbd.SimulationResult"  # the marker of files SimulationResult.save writes
# 3: the contacts' state stored; 2: Newton statistics, bdf's order limit and the quaternion layout (1 and 2 are read)
_RESULT_VERSION = 3
_RESULT_STATUSES = ("finished", "event", "failed", "interrupted", "time_limit")
SUCCESS_STATUSES = ("finished", "event")  # scipy's OdeResult.success: the end of the span, or a terminal event


def status_message(status, t_stop):
    """The ``message`` of a run (or ensemble member) that ended with ``status`` at ``t_stop`` [s], in words, when
    no error message says more (a finished or event-ended run; a failed one read from a file without its
    message)."""
    return {"finished": f"the integration reached t_end = {t_stop:.9g} s",
            "event": f"a terminal event ended the run at t = {t_stop:.9g} s",
            "failed": f"the run failed at t = {t_stop:.9g} s",
            "time_limit": f"the wall-clock limit max_wall_time stopped the run at t = {t_stop:.9g} s",
            "interrupted": f"the run was interrupted (Ctrl-C) at t = {t_stop:.9g} s"}[status]
# the optional run statistics some methods add (name -> dtype kind of the stored scalar): saved when present
_NEWTON_STATISTICS = {"newton_iterations": "i", "newton_factorizations": "i", "newton_contraction": "f",
                      "newton_contraction_max": "f", "newton_split_steps": "i", "velocity_projections": "i"}
# how far from unit norm a stored quaternion may be: the results hold normalised quaternions (round-off apart)
_QUATERNION_NORM_TOL = 1e-12
ENSEMBLE_FORMAT = "recursive_mbd.EnsembleResult"  # the marker of files EnsembleResult.save writes
# the format markers of the result files of this library, and the reader of each
_FORMAT_READERS = {_RESULT_FORMAT: "SimulationResult.load", ENSEMBLE_FORMAT: "EnsembleResult.load"}


def read_npz(path, writer="`rmbd run`"):
    """All arrays of an .npz result file as a dict, read without pickles.

    Raises ResultFileError (a ValueError) naming the file when it is not a regular file, not an .npz archive
    ("not a result file (expected the .npz that <writer> writes)"), or corrupted or truncated (zip, header and
    CRC errors alike); OSError when it cannot be opened. Never blocks on a FIFO.
    """
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isfile(path):
        raise ResultFileError(f"{path}: not a regular file (expected the .npz that {writer} writes)")
    with open(path, "rb") as file:
        raw = file.read()
    if not raw.startswith(b"PK"):
        raise ResultFileError(f"{path}: not a result file (expected the .npz that {writer} writes)")
    try:
        with np.load(BytesIO(raw), allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except Exception as err:  # noqa: BLE001 - zip, npy header and CRC errors alike: one error naming the file
        raise ResultFileError(f"{path}: corrupted or truncated result file ({type(err).__name__}: "
                              f"{str(err)[:120]})") from None


def write_npz(path, arrays):
    """Write ``arrays`` as an .npz archive to ``path``, exactly that name (no suffix is added), beside the target
    first and then renamed onto it, so that an interrupted or failed write never leaves a truncated file."""
    path = os.fspath(path)
    partial = f"{path}.partial"
    try:
        with open(partial, "wb") as file:  # a file object: np.savez would append .npz to a name without it
            np.savez(file, **arrays)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


class ResultArchive:
    """The arrays of a result file (``read_npz``) and the checks that every result reader applies to them; each
    failure is a ResultFileError naming the file and the entry."""

    def __init__(self, path, arrays):
        self.path = path
        self.arrays = arrays

    def __contains__(self, name):
        return name in self.arrays

    def fail(self, what):
        raise ResultFileError(f"{self.path}: {what}")

    def check_format(self, marker, versions, writer):
        """The file's 'format' entry is ``marker`` and its 'version' one of ``versions``; returns the version."""
        arrays = self.arrays
        if "format" not in arrays:
            if "t" in arrays and "kind" in arrays:
                self.fail(f"a file of `rmbd run`, not of {writer}: read it with numpy.load")
            self.fail(f"not a result file of {writer} (no 'format' entry)")
        found = str(arrays["format"]) if arrays["format"].shape == () else None
        if found != marker:
            other = (f": a file of {found.partition('.')[2]}, read it with {_FORMAT_READERS[found]}"
                     if found in _FORMAT_READERS else "")
            self.fail(f"not a result file of {writer} (wrong 'format' entry{other})")
        version = arrays.get("version")
        if version is None or version.shape != () or version.dtype.kind != "i" or int(version) not in versions:
            self.fail(f"result file version {version}, this library reads version {max(versions)}"
                      + (f" (and {', '.join(str(v) for v in versions if v != max(versions))})"
                         if len(versions) > 1 else ""))
        return int(version)

    def entry(self, name, kind, ndim, shape=None, finite=True):
        """The array ``name``: present, of dtype kind ``kind`` ("f", "i", "U"), ``ndim`` dimensions and ``shape``
        (None: any size in that dimension); a float array finite unless ``finite`` is False."""
        if name not in self.arrays:
            self.fail(f"entry {name!r} is missing")
        value = self.arrays[name]
        if value.dtype.kind != kind or value.ndim != ndim:
            self.fail(f"entry {name!r} has dtype {value.dtype} and {value.ndim} dimensions, expected kind {kind!r} "
                      f"and {ndim}")
        if shape is not None and any(want is not None and got != want
                                     for got, want in zip(value.shape, shape, strict=True)):
            self.fail(f"entry {name!r} has shape {value.shape}, expected {tuple(shape)}")
        if finite and kind == "f" and not np.all(np.isfinite(value)):
            self.fail(f"entry {name!r} holds non-finite values")
        return value

    def times(self, name="t"):
        """The sample times: a non-empty, non-decreasing, finite float array."""
        t = self.entry(name, "f", 1)
        if t.size == 0 or np.any(np.diff(t) < 0.0):
            self.fail(f"entry {name!r} must be a non-empty, non-decreasing array of times")
        return t

    def counts(self, name, shape, what):
        """An integer array of non-negative counts (``what`` names them in the message)."""
        value = self.entry(name, "i", len(shape), shape)
        if np.any(value < 0):
            self.fail(f"entry {name!r} ({what}) holds negative counts")
        return value


class SimulationResult:
    """Samples of a simulated trajectory.

    Attributes
    ----------
    t : ndarray, shape (nt,)
        Sample times [s]; always holds t0 and t_end (unless the run failed, then up to the failure).
    q, qd : ndarray, shape (nt, nq)
        Joint coordinates and rates at the samples (driven coordinates included). For a ``Model3D``: q (nt, nq)
        the configurations (every quaternion unit norm) and qd (nt, nv) the joint VELOCITIES v (a spherical
        joint's omega in the child frame), not dq/dt; ``qdd()`` and ``poses()`` are for planar models only
        (ValueError).
    dissipated_work, applied_work : ndarray, shape (nt,)
        Work [J] dissipated by the dampers and done by tau, the applied forces and torques and the drivers since
        t0, integrated with the motion: E(t) + dissipated_work - applied_work = E(t0).
    method : str
    nfev, nsteps, nrejected : int
        Right-hand-side (forward-dynamics) evaluations, accepted and rejected steps.
    status : str
        "finished"; "event" when a terminal event ended the run (at t[-1]); on the ``result`` of an exception:
        "failed" (SimulationError), "time_limit" (max_wall_time reached), "interrupted" (KeyboardInterrupt).
    success : bool
        As scipy's ``OdeResult.success``: True when the run reached t_end or a terminal event ended it (status
        "finished" or "event"); False on the samples kept by a SimulationError or a KeyboardInterrupt, which
        stop before t_end.
    message : str
        What ended the run, in words: "the integration reached t_end = 2 s", "a terminal event ended the run at
        t = ...", or on a kept result the SimulationError's own message (what failed, when and where).
    constraint_drift : ndarray, shape (nt,), or None
        max |phi| of the loop constraints at each sample (models with loops, and the augmented formulation).
    z, zd : ndarray, shape (nt, nbodies, 3)
        Absolute coordinates and rates of the centres of mass (augmented formulation only).
    t_events, q_events, qd_events : list of ndarray
        Per event function: the times of its zero crossings (nev,) and the states there (nev, nq).
    multipliers : ndarray, shape (nt, m), or None
        A model with closed loops: the Lagrange multipliers lambda of the m loop equations
        at the samples (M qdd + h = tau + Q - J^T lambda, the sign and units of ``loop_dynamics``; forces [N] and
        torques [N m] by loop equation). Method "generalized_alpha": those of its converged step at step ends,
        linear in time between them at t_eval points and events. Every other method: the constrained dynamics'
        at each sample's state and inputs (``loop_dynamics`` with the run's tau, elements and drivers at t; with
        stabilization "baumgarte" including its terms), evaluated once the run ends; formulation "augmented":
        the loops' rows of its KKT multipliers at each sample's (z, zd) (the same lambda), but a Model3D's run by
        bdf: the recursive formulation's at each sample's joint state (q, qd), as ``qdd`` (its index-3 steps
        hold the constraints on z, not on zd). None for a tree, or when the dynamics could not be evaluated at a
        sample (a RuntimeWarning says where).
    newton_iterations, newton_factorizations : int
        Methods "generalized_alpha" and "bdf" only: Newton iterations and factorisations of the Newton matrix, in
        total.
    newton_split_steps : int
        Method "generalized_alpha" on a Model, and on a Model3D with ``formulation="augmented"``: the steps (or
        pieces of steps) whose Newton iteration failed and that were taken again in two halves.
    velocity_projections : int
        Method "generalized_alpha" on a Model3D with ``formulation="augmented"``: the converged steps (or pieces of
        steps) whose velocities were projected onto the joints' velocity rows, those whose rows were off by more
        than the Newton tolerance can make them (``integrate.augmented3d_implicit``, "Velocities").
    newton_contraction, newton_contraction_max : float
        Method "generalized_alpha" on a Model3D only: the measured contraction factor of its Newton iterations
        (geometric mean and largest ratio of successive corrections).
    order_limited_at : float or None
        Method "bdf" only: the time [s] at which the stability limit detection capped the order at 2 (None: never).
    """

    def __init__(self, model, t, q, qd, work, method, nfev, nsteps, nrejected, evaluator=None):
        self.model = model
        self.t = t
        self.q = q
        self.qd = qd
        self.dissipated_work = work[:, 0]
        self.applied_work = work[:, 1]
        self.method = method
        self.nfev = int(nfev)
        self.nsteps = int(nsteps)
        self.nrejected = int(nrejected)
        self._evaluator = evaluator  # (callback, key, system, inputs) of the run, to evaluate its dynamics again
        self._without_drivers = False  # a Model3D's run without drivers (and so without an evaluator)
        # (nt, nv) the driving forces a run recorded at its samples (generalized_alpha in absolute coordinates: its
        # steps' multipliers), else None: evaluated again by ``driving_forces``
        self._driving = None
        self._recursive_loop = None  # a Model3D's augmented run: the recursive system that ``qdd`` evaluates
        self.status = "finished"
        self._message = None  # set by SimulationError (why the run stopped early); else said by the status
        self.constraint_drift = None  # max |phi| per sample, for models with loops
        self.contact_state = None  # (nt, nrows, N_CSTATE): the contacts' anchors at the samples, for contact models
        self.multipliers = None  # (nt, m): the loop multipliers at the samples
        self.t_events = []  # per event function: times of its zero crossings, and the state there
        self.q_events = []
        self.qd_events = []

    @property
    def success(self):
        """True when the run reached t_end or a terminal event ended it (scipy's ``OdeResult.success``)."""
        return self.status in SUCCESS_STATUSES

    @property
    def message(self):
        """What ended the run, in words (scipy's ``OdeResult.message``): the SimulationError's message on the
        samples it keeps, else said by ``status`` and the last sample time."""
        if self._message is not None and self.status not in SUCCESS_STATUSES:
            return self._message
        return status_message(self.status, float(self.t[-1]) if self.t.size else float("nan"))

    @message.setter
    def message(self, text):
        self._message = str(text)

    def _require_model(self, what, inputs=True, spatial=True):
        if not spatial and isinstance(self.model, Model3D):
            raise ValueError(f"{what} is not available for a Model3D's result yet (planar models only)")
        if self.model is None:
            raise ValueError(f"{what} needs the model: load the result with SimulationResult.load(path, model)")
        if inputs and self._evaluator is None:
            raise ValueError(f"{what} needs the inputs of the run (tau, drivers); this result was loaded from a file")

    def _evaluate(self, index):
        """Run the right-hand side at sample ``index``: qdd, driving forces and element loads land in the system."""
        callback, key, system, inputs = self._evaluator
        free = system[5]
        y = np.concatenate((self.q[index, free], self.qd[index, free], [0.0, 0.0],
                            [] if self.contact_state is None else self.contact_state[index].ravel()))
        evaluate_system(self.model, callback, key, system, inputs, float(self.t[index]), y)
        return system, free.size

    def qdd(self):
        """Joint accelerations at every sample, shape (nt, nq) (prescribed ones for driven coordinates): the run's
        dynamics (its tau, force elements, drivers, contacts and loops) evaluated again at each sample. A Model3D's
        result: vdot, shape (nt, nv), the rates of the velocities v (a quaternion joint's angular acceleration in its
        child frame), from the articulated-body algorithm (with loops the multiplier layer's; driven rates their
        drivers' f''). A run in ``formulation="augmented"``: the absolute accelerations of its dynamics (tree solve,
        loop and driver rows, Baumgarte's terms) at each sample mapped to joint accelerations
        (``augmented.joint_accelerations``); a Model3D's such run (every method): the recursive formulation's
        dynamics at each sample's joint state with the run's tau and drivers (the articulated-body algorithm, with
        loops the multiplier layer's and the run's Baumgarte terms), as a recursive run's qdd, which the absolute
        accelerations of the augmented dynamics equal where the constraints hold."""
        loop = self._augmented_loop()
        if loop is not None:
            if isinstance(self.model, Model3D):
                return self._spatial_accelerations(self._recursive_time_loop(loop))
            return np.array([self._augmented_evaluation(loop, i, loop.accelerations_now) for i in range(self.t.size)])
        if isinstance(self.model, Model3D):
            return self._spatial_accelerations()
        self._require_model("qdd()")
        return np.array([self._evaluate(i)[0][20].copy() for i in range(self.t.size)])

    def _augmented_loop(self):
        """The run's time loop when it integrated the augmented formulation (``augmented.TimeLoop``, ``TimeLoop3D``),
        else None."""
        loop = self._evaluator[4] if self._evaluator is not None and len(self._evaluator) > 4 else None
        return loop if getattr(loop, "name", None) == "augmented" else None

    def _augmented_evaluation(self, loop, index, read):
        """The augmented run's system evaluated at sample ``index`` (its z, zd and inputs at t), then ``read()``."""
        callback, key, system, inputs, _ = self._evaluator
        evaluate_system(self.model, callback, key, system, inputs, float(self.t[index]), loop.sample_state(self, index))
        return read()

    def _spatial_accelerations(self, loop=None):
        """``qdd`` of a Model3D's result: its run's system (``spatial_loop.SpatialTimeLoop``; or ``loop``'s, with
        the run's inputs) evaluated at every sample, its vdot."""
        self._require_model("qdd()")
        callback, key, _, inputs, run_loop = self._evaluator
        loop = run_loop if loop is None else loop
        system = loop.system
        out = np.zeros((self.t.size, self.model.nv))
        for i in range(self.t.size):
            evaluate_system(self.model, callback, key, system, inputs, float(self.t[i]), loop.state(self, i))
            out[i] = system.vdot
        return out

    def _recursive_multipliers(self):
        """The loops' multipliers (nt, m) of a Model3D's augmented run (``_evaluator`` holding the run's inputs and
        the time loop whose ``recursive_loop_class`` is the recursive one): the recursive formulation's dynamics at
        each sample's joint state, time and inputs (``sampled_multipliers``: None and a RuntimeWarning where they
        cannot be evaluated), the loop layer's lambda there, as ``qdd`` evaluates it."""
        callback, key, _, inputs, run_loop = self._evaluator
        loop = self._recursive_time_loop(run_loop)

        def lam_at(i):
            state, lam = loop.multiplier_probe(self, None, i)
            evaluate_system(self.model, callback, key, loop.system, inputs, float(self.t[i]), state)
            return lam

        return sampled_multipliers(self, lam_at)

    def _recursive_time_loop(self, loop):
        """The recursive formulation's time loop (``spatial_loop.SpatialTimeLoop``) of a Model3D's augmented run
        with the run's inputs, made at the first call (``loop``: the run's time loop, whose ``stabilization`` is
        (kind, alpha, beta) and ``recursive_loop_class`` the recursive time loop's class)."""
        if self._recursive_loop is None:
            stabilization, alpha, beta = loop.stabilization
            # the class comes with the run's loop (set where the run was made): this module sits below the time loops
            self._recursive_loop = loop.recursive_loop_class(self.model, self._evaluator[3], stabilization, alpha,
                                                             beta)
        return self._recursive_loop

    def contact_forces(self):
        """The contacts at every sample, as the run's dynamics saw them (their stick anchors included): the contact
        law at each sample's q, qd and ``contact_state``, which need no run inputs, so a result loaded with its
        model (``load(path, model)``) has them too.

        Returns
        -------
        dict with ``normal`` and ``tangential`` (nt, nrows): each contact row's normal force and its friction
        force along the surface tangent t = (n_y, -n_x) [N] (``Model.contact_names`` names the rows);
        ``depth`` (nt, nrows) [m]; ``point`` (nt, nrows, 2): the contact points [m], ground frame (zeros where a
        row does not touch); ``active`` (nt,): the number of touching rows; ``pairs`` (nt,): the number of
        touching pairs of the self-contact sets (``Model.add_self_contact``); ``elastic_energy`` (nt,): the
        potential of the contacts' elastic normal forces, sum k d^(p+1) / (p + 1) [J] (counted in ``energy()``);
        ``power`` (nt,): the power the contacts dissipate (damping and friction) [W]; ``dissipated_work``
        (nt,): the work they dissipated since t0 [J], which is ``dissipated_work`` of the run when the model has
        no dampers, and None when it has: the run integrates the dampers' and the contacts' dissipation as one
        sum, and the contacts' part is not integrated apart (a quadrature of ``power`` over the samples would
        only approximate it).

        A Model3D's result: the same entries (``pairs``: of ``Model3D.add_self_contact``'s sets), with
        ``tangential`` (nt, nrows, 3), the friction force vector, and ``point`` (nt, nrows, 3), ground axes.
        """
        self._require_model("contact_forces()", inputs=False)
        if self.contact_state is None:
            raise ValueError("contact_forces(): the model has no contacts (Model.add_contact)")
        model = self.model
        dampers = any(el["kind"] in ("spring_damper", "joint_spring_damper") and np.any(el["damping"] != 0.0)
                      for el in model._elements)
        work = None if dampers else self.dissipated_work.copy()
        if isinstance(model, Model3D):
            return _spatial_contact_forces(self, work)
        ws = workspace(model)
        rows = np.zeros((self.t.size, model.ncontacts, contact_kernels.N_PER_CONTACT))
        energies = np.zeros((self.t.size, 3))  # (elastic energy, dissipated power, unused) per sample
        no_loads = np.zeros((model.nbodies, 3))
        nshapes = model.shape_int.shape[0]
        order, boxes, stats = np.arange(nshapes, dtype=np.int64), np.zeros((nshapes, L.N_BOX)), np.zeros(2)
        touching_pairs = np.zeros(self.t.size, dtype=np.int64)
        for i in range(self.t.size):
            q, qd = np.ascontiguousarray(self.q[i]), np.ascontiguousarray(self.qd[i])
            status = tree.com_kinematics(model.body_int, model.body_real, q, qd, ws.ws, ws.com)
            if status:
                raise_status(model, status, ("q", "qd"), output="a centre of mass position or velocity")
            contact_kernels.contact_forces(model.contact_int, model.contact_real, ws.ws, ws.com,
                                           np.ascontiguousarray(self.contact_state[i]).reshape(-1), 0, no_loads,
                                           energies[i], rows[i], np.zeros((2, 0), dtype=np.int64))
            pairs.pair_forces(model.body_int, model.shape_int, model.shape_real, order, boxes, ws.ws, ws.com, no_loads,
                              energies[i], stats)
            touching_pairs[i] = int(stats[0])
        depth = rows[:, :, 2]
        return {"normal": rows[:, :, 0], "tangential": rows[:, :, 1], "depth": depth, "point": rows[:, :, 3:5],
                "active": np.count_nonzero(depth > 0.0, axis=1), "pairs": touching_pairs,
                "elastic_energy": energies[:, 0],
                "power": energies[:, 1], "dissipated_work": work}

    def driving_forces(self):
        """Joint force of each driver at every sample, shape (nt, nq) (zero for free coordinates) [N m or N]: what
        the driver adds to tau and the force elements on its coordinate. A Model3D's result: shape (nt, nv), each
        driver's entry at its joint's rate in v (zeros for a run without drivers). A run in
        ``formulation="augmented"``: minus the multipliers of the drivers' rows (their constraint force along the
        driven coordinate), the same quantity; by generalized_alpha, its converged steps' multipliers; a Model3D's
        run by bdf: the recursive formulation's dynamics at each sample's joint state, time and inputs (as
        ``qdd``)."""
        if self._driving is not None:
            return self._driving.copy()
        if self._without_drivers:
            return np.zeros((self.t.size, self.qd.shape[1]))
        loop = self._augmented_loop()
        # an implicit run in absolute coordinates keeps no augmented system: the recursive one's, as ``qdd``
        if loop is not None and self._evaluator[2] is None:
            return self._spatial_driving_forces(self._recursive_time_loop(loop))
        if loop is not None:
            out = np.zeros((self.t.size, self.qd.shape[1]))
            for i in range(self.t.size):
                columns, forces = self._augmented_evaluation(loop, i, loop.driving_forces_now)
                out[i, columns] = forces
            return out
        if isinstance(self.model, Model3D):
            return self._spatial_driving_forces()
        self._require_model("driving_forces()")
        system = self._evaluator[2]
        out = np.zeros((self.t.size, self.model.nq))
        for i in range(self.t.size):
            self._evaluate(i)
            out[i, system[6]] = system[21][system[6]]
        return out

    def _spatial_driving_forces(self, loop=None):
        """``driving_forces`` of a Model3D's result: its run's system (``spatial_loop.SpatialTimeLoop``; or
        ``loop``'s, with the run's inputs) evaluated at every sample, the drivers' entries of its ``drive``."""
        out = np.zeros((self.t.size, self.model.nv))
        self._require_model("driving_forces()")
        callback, key, _, inputs, run_loop = self._evaluator
        loop = run_loop if loop is None else loop
        system = loop.system
        rates = inputs.driven_rates
        for i in range(self.t.size):
            evaluate_system(self.model, callback, key, system, inputs, float(self.t[i]), loop.state(self, i))
            out[i, rates] = system.drive[rates]
        return out

    def element_forces(self):
        """Per-element values at every sample, shape (nt, nelements, 3) (see ``rm.element_forces``)."""
        if isinstance(self.model, Model3D):  # its elements' functions of time are the model's: no run inputs needed
            self._require_model("element_forces()", inputs=False)
            return np.array([element_forces(self.model, q, v, t=t)["per_element"]
                             for t, q, v in zip(self.t, self.q, self.qd, strict=True)]).reshape(
                                 self.t.size, self.model.nelements, 3)
        self._require_model("element_forces()", spatial=False)
        return np.array([self._evaluate(i)[0][19].copy() for i in range(self.t.size)])

    def energy(self):
        """Kinetic and potential energy (gravity and springs) at every sample: (T, V), each shape (nt,) [J]."""
        self._require_model("energy()", inputs=False)
        pairs = np.array([energy(self.model, q, qd, t=t) for t, q, qd in zip(self.t, self.q, self.qd, strict=True)])
        return pairs.reshape(-1, 2)[:, 0], pairs.reshape(-1, 2)[:, 1]

    def energy_balance(self):
        """E(t) + dissipated work - applied work - E(t0) at every sample [J]: zero up to the integration error."""
        kinetic, potential = self.energy()
        total = kinetic + potential
        return total + self.dissipated_work - self.applied_work - total[0]

    def poses(self, body):
        """Pose (x, y, theta) of a body's frame at every sample, shape (nt, 3)."""
        self._require_model("poses()", inputs=False, spatial=False)
        index = self.model.body_index(body)
        return np.array([forward_kinematics(self.model, q)[0][index] for q in self.q])

    def save(self, path):
        """Write every field (samples, work, status, statistics, Newton statistics and bdf's order limit, events,
        constraint drift, multipliers, augmented z and zd, the contacts' state) to ``path``, exactly that name (an
        .npz archive whatever the suffix; no suffix is added).

        The file is written beside the target and renamed onto it, so an interrupted save never leaves a
        truncated result. ``SimulationResult.load`` reads it back.
        """
        arrays = {
            "format": np.array(_RESULT_FORMAT), "version": np.array(_RESULT_VERSION, dtype=np.int64),
            "t": self.t, "q": self.q, "qd": self.qd, "dissipated_work": self.dissipated_work,
            "applied_work": self.applied_work, "method": np.array(self.method), "status": np.array(self.status),
            "message": np.array(self.message),
            "stats": np.array([self.nfev, self.nsteps, self.nrejected], dtype=np.int64),
            "body_names": np.array(self._body_names(), dtype=str),
            "quaternions": self._quaternion_layout(),
            "n_events": np.array(len(self.t_events), dtype=np.int64),
        }
        for i, (t_ev, q_ev, qd_ev) in enumerate(zip(self.t_events, self.q_events, self.qd_events, strict=True)):
            arrays[f"t_events_{i}"], arrays[f"q_events_{i}"], arrays[f"qd_events_{i}"] = t_ev, q_ev, qd_ev
        for name in ("constraint_drift", "multipliers", "z", "zd", "contact_state"):
            if getattr(self, name, None) is not None:
                arrays[name] = getattr(self, name)
        for name, kind in _NEWTON_STATISTICS.items():
            if hasattr(self, name):
                arrays[name] = np.array(getattr(self, name), dtype=np.int64 if kind == "i" else float)
        if hasattr(self, "order_limited_at"):  # None (never limited) is stored as no time
            arrays["order_limited_at"] = np.array([] if self.order_limited_at is None else [self.order_limited_at],
                                                  dtype=float)
        write_npz(path, arrays)

    def _body_names(self):
        if self.model is None:
            return getattr(self, "body_names", ())
        return self.model.names if isinstance(self.model, Model3D) else self.model.body_names

    def _quaternion_layout(self):
        """(k, 2) int64 rows (body index, first column in q) of the quaternions in q (a Model3D's spherical and
        free joints; none for a planar model); a result loaded without its model keeps the layout of its file."""
        if self.model is None:
            return getattr(self, "_quaternions", np.zeros((0, 2), dtype=np.int64))
        return _model_quaternions(self.model)

    @classmethod
    def load(cls, path, model=None):
        """Read a result written by ``save``; pass the model to use energy(), poses() and contact_forces() (not
        qdd() and the other forces, which need the run's inputs).

        Raises ResultFileError (a ValueError) naming the file when it is not a result file, is corrupted or
        truncated, does not fit ``model`` (bodies, coordinates, contact rows), or holds a quaternion that is not of
        unit norm (naming the sample and the body); OSError when it cannot be opened.
        """
        path = os.fspath(path)
        return cls._from_arrays(path, read_npz(path, "SimulationResult.save or `rmbd run`"), model)

    @classmethod
    def _from_arrays(cls, path, arrays, model):
        archive = ResultArchive(path, arrays)
        fail, entry = archive.fail, archive.entry
        version = archive.check_format(_RESULT_FORMAT, (1, 2, _RESULT_VERSION), "SimulationResult.save")
        t = archive.times()
        nt = t.size
        names = entry("body_names", "U", 1)
        model_names = None if model is None else tuple(model.names if isinstance(model, Model3D)
                                                       else model.body_names)
        if model is not None and tuple(names) != model_names:
            fail(f"the result's bodies {tuple(names)[:5]}{'...' if len(names) > 5 else ''} do not match the "
                 f"model's {model_names[:5]}{'...' if model.nbodies > 5 else ''}")
        nq = model.nq if model is not None else None
        q = entry("q", "f", 2, (nt, nq))
        nq = q.shape[1]
        # a Model3D's qd holds v (nv columns); a planar model's qd has nq columns; without a model: as stored
        nv = model.nv if isinstance(model, Model3D) else (nq if model is not None else None)
        qd = entry("qd", "f", 2, (nt, nv))
        nv = qd.shape[1]
        work = np.column_stack((entry("dissipated_work", "f", 1, (nt,)), entry("applied_work", "f", 1, (nt,))))
        method = str(entry("method", "U", 0))
        status = str(entry("status", "U", 0))
        if status not in _RESULT_STATUSES:
            fail(f"entry 'status' is {status!r}, expected one of {_RESULT_STATUSES}")
        stats = archive.counts("stats", (3,), "evaluations, steps, rejected steps")
        result = cls(model, t, q, qd, work, method, *(int(v) for v in stats))
        result.status = status
        if "message" in archive:  # (files written before results had a message: said by the status)
            result.message = str(entry("message", "U", 0))
        result.body_names = tuple(str(name) for name in names)
        quaternions = _stored_quaternions(archive, version, model, names, nq)
        result._quaternions = quaternions
        _check_unit_quaternions(archive, "q", q, quaternions, names, t)
        n_events = int(entry("n_events", "i", 0))
        if not 0 <= n_events <= len(arrays):
            fail(f"entry 'n_events' is {n_events}")
        for i in range(n_events):
            t_ev = entry(f"t_events_{i}", "f", 1)
            result.t_events.append(t_ev)
            result.q_events.append(entry(f"q_events_{i}", "f", 2, (t_ev.size, nq)))
            result.qd_events.append(entry(f"qd_events_{i}", "f", 2, (t_ev.size, nv)))
            _check_unit_quaternions(archive, f"q_events_{i}", result.q_events[-1], quaternions, names, t_ev)
        if "constraint_drift" in arrays:
            result.constraint_drift = entry("constraint_drift", "f", 1, (nt,))
        if "multipliers" in arrays:
            result.multipliers = entry("multipliers", "f", 2, (nt, None))
        if ("z" in arrays) != ("zd" in arrays):
            fail("entries 'z' and 'zd' come together")
        if "z" in arrays:
            nbodies = len(names)
            result.z = entry("z", "f", 3, (nt, nbodies, 3))
            result.zd = entry("zd", "f", 3, (nt, nbodies, 3))
        result.contact_state = _stored_contact_state(archive, version, model, nt)
        for name, kind in _NEWTON_STATISTICS.items():
            if name in arrays:
                value = entry(name, kind, 0)
                if value < 0:
                    fail(f"entry {name!r} is {value}, expected a number >= 0")
                setattr(result, name, int(value) if kind == "i" else float(value))
        if "order_limited_at" in arrays:
            limited = entry("order_limited_at", "f", 1)
            if limited.size > 1 or (limited.size and not t[0] <= limited[0] <= t[-1]):
                fail(f"entry 'order_limited_at' is {limited}, expected no time or one time within the samples'")
            result.order_limited_at = float(limited[0]) if limited.size else None
        return result

    def __repr__(self):
        return (f"<SimulationResult {self.method}: {_checks.counted(self.t.size, 'sample')}, t = {self.t[0]:g} .. "
                f"{self.t[-1]:g} s, {_checks.counted(self.nsteps, 'step')} ({self.nrejected} rejected), "
                f"{_checks.counted(self.nfev, 'evaluation')}>")


def _model_quaternions(model):
    """(k, 2) int64 rows (body index, first column in q) of a model's quaternions: a Model3D's spherical and free
    joints, none for a planar model."""
    if not isinstance(model, Model3D):
        return np.zeros((0, 2), dtype=np.int64)
    return np.column_stack((model._quat_body, model._quat_q)).astype(np.int64).reshape(-1, 2)


def _stored_quaternions(archive, version, model, names, nq):
    """The quaternion layout of a result file (``SimulationResult._quaternion_layout``), checked against the file's
    bodies and coordinates and against ``model`` when given. Version 1 files have none: the model's, if given."""
    if "quaternions" not in archive and version == 1:
        return _model_quaternions(model)
    layout = archive.entry("quaternions", "i", 2, (None, 2))
    if layout.size and (np.any(layout[:, 0] < 0) or np.any(layout[:, 0] >= len(names)) or np.any(layout[:, 1] < 0)
                        or np.any(layout[:, 1] > nq - 4)):
        archive.fail(f"entry 'quaternions' names bodies or columns outside the result's {len(names)} bodies and "
                     f"{nq} coordinates")
    if model is not None and not np.array_equal(layout, _model_quaternions(model)):
        archive.fail("entry 'quaternions' does not match the model's spherical and free joints")
    return layout


def _spatial_contact_forces(result, work):
    """``SimulationResult.contact_forces`` of a Model3D's result (``dissipated_work`` given as ``work``)."""
    from ..dynamics.spatial import contact_rows  # noqa: PLC0415  (spatial kernels only for spatial models)

    nt = result.t.size
    rows = np.zeros((nt, result.model.ncontacts, SL.N_PER_CONTACT))
    energies = np.zeros((nt, 2))
    touching_pairs = np.zeros(nt, dtype=np.int64)
    for i in range(nt):
        rows[i], energies[i], touching_pairs[i] = contact_rows(result.model, result.q[i], result.qd[i],
                                                               result.contact_state[i])
    depth = rows[:, :, SL.PC_DEPTH]
    return {"normal": rows[:, :, SL.PC_NORMAL], "tangential": rows[:, :, SL.PC_TANGENTIAL:SL.PC_TANGENTIAL + 3],
            "depth": depth, "point": rows[:, :, SL.PC_POINT:SL.PC_POINT + 3],
            "active": np.count_nonzero(depth > 0.0, axis=1), "pairs": touching_pairs, "elastic_energy": energies[:, 0],
            "power": energies[:, 1], "dissipated_work": work}


def _stored_contact_state(archive, version, model, nt):
    """The contacts' state of a result file (nt, nrows, N_CSTATE), or None for a model without contacts; checked
    against ``model`` when given (its contact rows). Files before version 3 have none: None."""
    rows = None if model is None else model.ncontacts
    if "contact_state" not in archive:
        if model is not None and model.has_contacts and version >= 3:
            archive.fail(f"entry 'contact_state' is missing, but the model has {rows} contact rows"
                         + ("" if rows else " and self-contact sets"))
        return None
    if model is not None and not model.has_contacts:
        archive.fail("entry 'contact_state' holds contacts, but the model has none")
    # a row's state: a planar one's, or a spatial one's (3D anchors); the model says which, else either
    width = None if model is None else SL.N_CSTATE if isinstance(model, Model3D) else L.N_CSTATE
    state = archive.entry("contact_state", "f", 3, (nt, rows, width))
    if state.shape[2] not in (L.N_CSTATE, SL.N_CSTATE):
        archive.fail(f"entry 'contact_state' has shape {state.shape}, expected {L.N_CSTATE} (planar) or "
                     f"{SL.N_CSTATE} (spatial) columns")
    if np.any((state[:, :, L.CS_ACTIVE] != 0.0) & (state[:, :, L.CS_ACTIVE] != 1.0)):
        archive.fail("entry 'contact_state': a contact's active flag (column 0) is neither 0 nor 1")
    return state


def _check_unit_quaternions(archive, name, q, layout, names, t):
    """Every quaternion of the configurations ``q`` (entry ``name``, at times ``t``) has unit norm to round-off;
    the first that has not is reported with its sample, time and body."""
    if not layout.size or not q.size:
        return
    norms = np.linalg.norm(q[:, layout[:, 1, None] + np.arange(4)], axis=2)  # (nt, k)
    bad = np.argwhere(~(np.abs(norms - 1.0) <= _QUATERNION_NORM_TOL))
    if bad.size:
        sample, k = (int(i) for i in bad[0])
        body, column = int(layout[k, 0]), int(layout[k, 1])
        archive.fail(f"entry {name!r}: sample {sample} (t = {t[sample]:.9g} s): the quaternion of body "
                     f"{str(names[body])!r} (q[{column}:{column + 4}]) has norm {float(norms[sample, k])!r}, not 1 (to "
                     f"{_QUATERNION_NORM_TOL:g})")


def _make_result(model, loop, callback, key, t, y, method, nfev, nsteps, nrejected, multipliers=None):
    """The result of the integrated samples: the full joint state by the formulation's map, the work terms, and
    what the formulation adds (``finish``); ``multipliers`` (nt, m): the loops' lambda a method computed at the
    samples itself (generalized_alpha), else those of the formulation's dynamics at each sample
    (``loop.multiplier_probe``), for a model with loops."""
    q, qd = loop.joint_states(t, y)
    name = method if loop.name == "recursive" else f"{loop.name} {method}"
    # the work columns copied: views would keep the whole integrated y (the size of q and qd) alive with the result
    result = SimulationResult(model, t, q, qd, np.array(loop.work(y)), name, nfev, nsteps, nrejected)
    loop.finish(result, y, callback, key)
    if multipliers is None and model.nloops:  # the loops' lambda of the run's dynamics at each sample
        def lam_at(i):
            state, lam = loop.multiplier_probe(result, y, i)
            evaluate_system(model, callback, key, loop.system, loop.inputs, float(t[i]), state)
            return lam

        multipliers = sampled_multipliers(result, lam_at)
    result.multipliers = multipliers
    return result


def evaluate_system(model, callback, key, system, inputs, t, y):
    """Run a system's right-hand side once at (t, y) (its accelerations, multipliers, element loads land in the
    system's arrays); a user function that fails raises its own exception, a kernel status its error."""
    status = integrators.system_rhs(callback, key, system, t, y, np.empty_like(y))
    if L.decode_status(status)[0] == L.STATUS_INPUT_FAILED and inputs.failure is not None:
        failure, inputs.failure = inputs.failure[0], None
        raise failure
    if status:
        raise_kernel_status(model, status)


def sampled_multipliers(result, lam_at):
    """The loop multipliers at every sample of ``result``, (nt, m): ``lam_at(i)`` evaluates the run's dynamics at
    sample i and returns the system's lambda. When the dynamics cannot be evaluated at a sample (a user function
    that fails there, a state the loop layer refuses), None and a RuntimeWarning saying where and why: the
    samples themselves stand, and a run that failed still raises its own error."""
    rows = []
    for i in range(result.t.size):
        try:
            rows.append(np.array(lam_at(i), dtype=float))
        except Exception as error:  # noqa: BLE001 - any user function's exception: reported, the run's samples kept
            _checks.warn(f"result.multipliers not available: the dynamics could not be evaluated at sample {i} "
                         f"(t = {result.t[i]:.9g} s): {type(error).__name__}: {error}", RuntimeWarning)
            return None
    return np.array(rows).reshape(result.t.size, -1)
