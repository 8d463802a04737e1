"""The recursive loop layer's multipliers through the sparse KKT factorisation of the absolute-coordinate system
(``_kernels.planar.loops_sparse``): the same accelerations, multipliers and loop forces as the envelope path of
``_kernels.planar.loops`` (the reference: J M^-1 J^T from the responses, Cholesky or eigen-decomposition) on ladders,
random trees with loops and a row of parallelograms; the cost model takes it for ladders and not for a row; near a
change point it falls back to the envelope path, whose numbers it then returns bit for bit; the time loops take it
on every evaluation of a ladder. The projection (``rm.loops.project`` and the time loops') solves with J M^-1 J^T
by the same path, and its projected states are the envelope path's. Which path ran is read from the structure's
counters, not from timing."""

import numpy as np
import pytest
from conftest import TREE_SPECS, rel_err
from test_loop_structure import ladder
from test_singular import parallelograms

import recursive_mbd as rm
from recursive_mbd._kernels.planar import loops as kernels
from recursive_mbd._kernels.planar.loops import FIELDS, pack, sparse_loop_work, unpack
from recursive_mbd._kernels.sparse_kkt import empty_kkt_structure
from recursive_mbd.dynamics.loops import loop_dynamics, loop_workspace, project, sparse_loop_structure


def _switches(model, projection=False):
    """(use (1,), stats (2,)) of the model's sparse path (views of its packed arrays): the path on/off, and the
    evaluations it solved and those that fell back to the envelope path (``projection``: the projection's solves
    it took and those that fell back)."""
    kkt, work = unpack(*loop_workspace(model)[1].sparse)
    return kkt.use, work.stats[2:] if projection else work.stats[:2]


def _force_sparse(model):
    """The model's sparse path rebuilt on, whatever the cost model says."""
    _, lw = loop_workspace(model)
    lw.sparse = sparse_loop_structure(model, lw.pattern, use=True)


def _both(model, q, qd, tau, **kwargs):
    """(sparse path's LoopSolution, envelope path's, counts (solved sparse, fell back) of the first call)."""
    use, stats = _switches(model)
    assert use[0] == 1
    before = stats.copy()
    sparse = loop_dynamics(model, q, qd, tau, **kwargs)
    counts = stats - before
    use[0] = 0
    try:
        envelope = loop_dynamics(model, q, qd, tau, **kwargs)
    finally:
        use[0] = 1
    assert np.array_equal(stats - before, counts)  # the envelope path counts nothing
    return sparse, envelope, counts


def _agree(sparse, envelope, tol=1e-10):
    assert rel_err(sparse.qdd, envelope.qdd) < tol
    assert rel_err(sparse.multipliers, envelope.multipliers) < tol
    assert rel_err(sparse.forces, envelope.forces) < tol
    assert sparse.rank == envelope.rank


def _closed_state(model, q0, seed, spread=0.05):
    rng = np.random.default_rng(seed)
    q, qd, _ = project(model, q0 + spread * rng.standard_normal(model.nq), rng.standard_normal(model.nq))
    return q, qd, rng.standard_normal(model.nq)


@pytest.mark.parametrize("n", [5, 20, 40])
def test_ladder_takes_the_sparse_path_and_agrees(n):
    """The cost model takes the sparse path for a ladder of 10 rungs or more (J M^-1 J^T full; 5 rungs are solved
    faster by the envelope, and are forced onto the path here); accelerations, multipliers and loop forces equal the
    envelope path's to 1e-10 relative, with and without Baumgarte's terms, and satisfy the acceleration constraint;
    the dense KKT system agrees to its own round-off."""
    model, q0 = ladder(n)
    model.compile()
    q, qd, tau = _closed_state(model, q0, n)
    assert loop_workspace(model)[1].sparse[0].size > 0 if n >= 10 else loop_workspace(model)[1].sparse[0].size == 0
    if n < 10:  # the cost model keeps the envelope path there
        _force_sparse(model)
    for kwargs in ({}, {"alpha": 5.0, "beta": 7.0}):
        sparse, envelope, counts = _both(model, q, qd, tau, **kwargs)
        assert counts.tolist() == [1, 0]
        _agree(sparse, envelope)
    sparse = loop_dynamics(model, q, qd, tau)
    _, _, jac, gamma = rm.loops.constraints(model, q, qd)
    assert np.abs(jac @ sparse.qdd - gamma).max() < 1e-10 * max(1.0, np.abs(gamma).max(), np.abs(sparse.qdd).max())
    kkt = loop_dynamics(model, q, qd, tau, method="mass_matrix")
    assert rel_err(sparse.qdd, kkt.qdd) < 1e-8


def _random_loop_model(index, nloops=3):
    """A random tree (the core suite's) with distance loops between random points of random bodies and the ground,
    closed at a random q by their lengths: (model, q)."""
    spec = TREE_SPECS[index]
    rng = np.random.default_rng(index)
    model = rm.Model(gravity=(0.3, -9.81))
    for i, body in enumerate(spec):
        model.add_body(name=f"b{i}", **body)
    tree = rm.Model(gravity=(0.3, -9.81))
    for i, body in enumerate(spec):
        tree.add_body(name=f"b{i}", **body)
    q = rng.uniform(-np.pi, np.pi, tree.nq)
    poses, _ = rm.forward_kinematics(tree, q)
    for _ in range(nloops):
        a, b = rng.choice(np.arange(-1, len(spec)), size=2, replace=False)
        pa, pb = rng.uniform(-0.3, 0.3, 2), rng.uniform(-0.3, 0.3, 2)

        def world(body, point):
            if body < 0:
                return point
            x, y, th = poses[body]
            c, s = np.cos(th), np.sin(th)
            return np.array([x + c * point[0] - s * point[1], y + s * point[0] + c * point[1]])

        length = np.linalg.norm(world(a, pa) - world(b, pb))
        if length < 0.1:
            continue
        model.add_loop("distance", int(a) if a >= 0 else "ground", tuple(pa), int(b) if b >= 0 else "ground",
                       tuple(pb), length=length)
    return model, q


def test_the_envelope_is_set_wherever_the_envelope_solves_read_it():
    """Draw 121's loop rows have an envelope with a hole: row 1 meets no other row while row 2 reaches back to row
    0, so row 0's range [first, last] = [0, 2] (``loops.envelope_last``) holds G[0, 1], a zero that no product
    writes. J M^-1 J^T (``gram_envelope``) and J J^T (``normal_matrix``), built into arrays full of NaN, are set on
    every entry the envelope solves read and equal the dense products there (the projection of this draw read the
    unset entry of its freshly allocated matrix, and reported an overflowed multiplier solve where that memory held
    no finite number)."""
    model, q = _random_loop_model(121)
    model.compile()
    ws, lw = loop_workspace(model)
    m, n = model.nconstraints, model.nbodies
    assert kernels.loop_constraints(model.body_int, model.body_real, model.loop_int, model.loop_real, q,
                                    np.zeros(model.nq), ws.ws, ws.com, np.zeros((n, 3)), lw.phi, lw.phid, lw.jac,
                                    lw.gamma, lw.weights) == 0
    assert kernels.loop_responses(model.body_int, model.body_real, q, lw.jac, lw.pattern, ws.ws, lw.resp, ws.zeros,
                                  lw.no_gravity) == 0
    jac = rm.loops.constraints(model, q)[2]
    assert rel_err(lw.jac, jac) < 1e-14
    dense_gram = jac @ np.linalg.solve(rm.mass_matrix(model, q), jac.T)
    for build, dense in ((lambda g, f: kernels.gram_envelope(lw.jac, lw.resp, lw.pattern, g, f), dense_gram),
                         (lambda g, f: kernels.normal_matrix(lw.jac, lw.pattern, g, f), jac @ jac.T)):
        gram, first, last = np.full((m, m), np.nan), np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
        build(gram, first)
        kernels.envelope_last(first, last)
        assert first.tolist() == [0, 1, 0] and last.tolist() == [2, 2, 2]  # the hole at (0, 1)
        for r in range(m):
            read = slice(first[r], last[r] + 1)
            assert np.isfinite(gram[r, read]).all(), (r, gram[r])
            assert np.abs(gram[r, read] - dense[r, read]).max() < 1e-12 * np.abs(dense).max()


@pytest.mark.parametrize("index", [3, 17, 40, 77, 121])
def test_random_trees_with_loops_agree(index):
    """Random trees (revolute, prismatic, planar and fixed joints) with distance loops between random bodies, the
    sparse path forced: the envelope path's accelerations and multipliers to 1e-10 relative where it solves (every
    body with inertia, a regular J M^-1 J^T), the envelope path's own numbers bit for bit where it falls back."""
    model, q = _random_loop_model(index)
    if not model.nloops:
        pytest.skip("no loop long enough in this draw")  # not expected for these indices (checked below)
    model.compile()
    assert abs(rm.loops.constraints(model, q)[0]).max() < 1e-12
    rng = np.random.default_rng(index + 1)
    qd = project(model, q, rng.standard_normal(model.nq))[1]
    tau = rng.standard_normal(model.nq)
    _force_sparse(model)
    with np.errstate(all="ignore"):
        sparse, envelope, counts = _both(model, q, qd, tau)
    assert counts.sum() == 1
    if counts[0]:
        _agree(sparse, envelope)
    else:
        assert np.array_equal(sparse.qdd, envelope.qdd)
        assert np.array_equal(sparse.multipliers, envelope.multipliers)


def test_random_trees_mostly_solve_sparse():
    """The draws above are not all fallbacks: most of them are solved by the sparse path (a fallback needs a body
    without inertia along a loop's motion or a singular J M^-1 J^T)."""
    solved = 0
    for index in (3, 17, 40, 77, 121):
        model, q = _random_loop_model(index)
        assert model.nloops > 0
        model.compile()
        qd = project(model, q, np.ones(model.nq))[1]
        _force_sparse(model)
        _, stats = _switches(model)
        with np.errstate(all="ignore"):
            loop_dynamics(model, q, qd)
        solved += int(stats[0])
    assert solved >= 4


def test_row_keeps_the_envelope_path_and_agrees_when_forced():
    """A row of parallelograms keeps its banded envelope (the cost model), with an empty sparse structure; forced onto
    the sparse path it gives the envelope path's numbers to 1e-10 relative at a regular state, and 1e-3 rad from its
    change point (J M^-1 J^T near singular) it falls back and returns the envelope path's numbers bit for bit."""
    n = 12
    model, _, _ = parallelograms(n)
    model.compile()
    assert all(a.size == 0 for a in loop_workspace(model)[1].sparse)  # two empty arrays
    _force_sparse(model)
    rng = np.random.default_rng(5)
    for theta, solved in ((1.0, True), (1e-3, False)):
        q0 = np.r_[np.full(n + 1, theta), np.full(n, -theta)] + 1e-4 * rng.standard_normal(model.nq)
        q, qd, _ = project(model, q0, rng.standard_normal(model.nq))
        tau = rng.standard_normal(model.nq)
        with pytest.warns(rm.RedundantConstraintWarning) if not solved else _no_warning():
            sparse, envelope, counts = _both(model, q, qd, tau)
        if solved:
            assert counts.tolist() == [1, 0]
            _agree(sparse, envelope)
        else:
            assert counts.tolist() == [0, 1]
            assert np.array_equal(sparse.qdd, envelope.qdd)
            assert np.array_equal(sparse.multipliers, envelope.multipliers)


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_time_loop_takes_the_sparse_path_on_every_evaluation_and_projection():
    """rm.simulate of a ladder of 8 rungs (dopri5, projection; the cost model takes the sparse path, no forcing)
    solves every evaluation's multipliers and every projection's position and velocity steps by the sparse path
    (two solves a step at least, none falling back), and its motion is the envelope path's to well below the
    tolerance (at rtol = atol = 1e-11: at the default 1e-9 a step whose error estimate lies at the acceptance
    threshold may be taken by one path and rejected by the other, and the motions then part by the tolerance, 4e-9
    here, although every evaluation agrees to 1e-14)."""
    n = 8
    model, q0 = ladder(n)
    model.compile()
    assert loop_workspace(model)[1].sparse[0].size > 0
    q, qd, _ = _closed_state(model, q0, 3, spread=0.2)
    use, stats = _switches(model)
    _, projections = _switches(model, projection=True)
    before, projections_before = stats.copy(), projections.copy()
    res = rm.simulate(model, q, qd, 0.3, rtol=1e-11, atol=1e-11)
    assert stats[1] == before[1] and stats[0] - before[0] >= res.nfev > 0  # and the output samples' evaluations
    assert projections[1] == projections_before[1] and projections[0] - projections_before[0] >= 2 * res.nsteps
    use[0] = 0
    try:
        reference = rm.simulate(model, q, qd, 0.3, rtol=1e-11, atol=1e-11)
    finally:
        use[0] = 1
    # the step sizes part at round-off (the error estimates of steps this short carry it), so compare at t_end
    assert res.t[-1] == reference.t[-1] and abs(res.nsteps - reference.nsteps) <= 2
    assert np.abs(res.q[-1] - reference.q[-1]).max() < 1e-11
    assert np.abs(res.qd[-1] - reference.qd[-1]).max() < 1e-10


def _both_projections(model, q, qd):
    """(sparse path's rm.loops.project, envelope path's, counts (solves by the sparse path, fallbacks) of the
    first)."""
    use, stats = _switches(model, projection=True)
    assert use[0] == 1
    before = stats.copy()
    sparse = project(model, q, qd)
    counts = stats - before
    use[0] = 0
    try:
        envelope = project(model, q, qd)
    finally:
        use[0] = 1
    assert np.array_equal(stats - before, counts)  # the envelope path counts nothing
    return sparse, envelope, counts


def _mass_orthogonal(model, q, qd):
    """qd - M^-1 J^T (J M^-1 J^T)^-1 J qd at q from the dense M and J: the rates that ``project`` returns at its q."""
    _, _, jac, _ = rm.loops.constraints(model, q)
    resp = np.linalg.solve(rm.mass_matrix(model, q), jac.T)
    return qd - resp @ np.linalg.solve(jac @ resp, jac @ qd)


@pytest.mark.parametrize("n", [5, 20, 40])
def test_ladder_projection_takes_the_sparse_path_and_agrees(n):
    """rm.loops.project of a ladder moved 0.05 rad a joint off its loops (metres open at 40 rungs) solves its
    Gauss-Newton steps and its velocity step by the sparse path (5 rungs forced onto it), and the projected state
    is the envelope path's to 1e-10 relative; it closes the loops, and its rates are the mass-orthogonal
    projection of the given ones at the projected q (dense M and J)."""
    model, q0 = ladder(n)
    model.compile()
    if n < 10:
        _force_sparse(model)
    rng = np.random.default_rng(n + 100)
    q_start, qd_start = q0 + 0.05 * rng.standard_normal(model.nq), rng.standard_normal(model.nq)
    (q, qd, gap), (q_env, qd_env, _), counts = _both_projections(model, q_start, qd_start)
    assert counts[0] >= 3 and counts[1] == 0  # two position steps at least, and the velocity step
    assert rel_err(q, q_env) < 1e-10 and rel_err(qd, qd_env) < 1e-10
    phi, phid, _, _ = rm.loops.constraints(model, q, qd)
    assert gap < 1e-12 * n and np.abs(phi).max() < 1e-12 * n
    assert np.abs(phid).max() < 1e-12 * np.abs(qd_start).max() * n
    assert rel_err(qd, _mass_orthogonal(model, q, qd_start)) < 1e-10


@pytest.mark.parametrize("index", [3, 17, 40, 77, 121])
def test_random_trees_with_loops_project_alike(index):
    """Random trees (revolute, prismatic, planar and fixed joints) with distance loops, the sparse path forced, moved
    off their loops: every solve of the projection is the sparse path's, and the projected state is the envelope
    path's to 1e-10 relative, its rates the mass-orthogonal projection of the given ones."""
    model, q = _random_loop_model(index)
    model.compile()
    _force_sparse(model)
    rng = np.random.default_rng(index + 2)
    q_start, qd_start = q + 0.01 * rng.standard_normal(model.nq), rng.standard_normal(model.nq)
    with np.errstate(all="ignore"):
        sparse, envelope, counts = _both_projections(model, q_start, qd_start)
    assert counts[0] >= 2 and counts[1] == 0
    assert rel_err(sparse[0], envelope[0]) < 1e-10 and rel_err(sparse[1], envelope[1]) < 1e-10
    assert rel_err(sparse[1], _mass_orthogonal(model, sparse[0], qd_start)) < 1e-10


def test_row_projection_falls_back_near_its_change_point():
    """A row of twelve parallelograms forced onto the sparse path: 1 rad from its change points the projection
    solves by the path and agrees with the envelope path to 1e-10 relative; 1e-2 rad and closer (J M^-1 J^T
    conditioned 1e5 and worse, its weak eigenvalues in the change point's zone) every solve falls back, and the
    projected state is the envelope path's bit for bit (its rank decisions and branch solves as without the path)."""
    n = 12
    model, _, _ = parallelograms(n)
    model.compile()
    _force_sparse(model)
    rng = np.random.default_rng(5)
    for theta in (1.0, 1e-2, 1e-3, 0.0):
        q_start = np.r_[np.full(n + 1, theta), np.full(n, -theta)] + 1e-4 * rng.standard_normal(model.nq)
        qd_start = rng.standard_normal(model.nq)
        with np.errstate(all="ignore"):
            sparse, envelope, counts = _both_projections(model, q_start, qd_start)
        if theta == 1.0:
            assert counts[0] >= 2 and counts[1] == 0
            assert rel_err(sparse[0], envelope[0]) < 1e-10 and rel_err(sparse[1], envelope[1]) < 1e-10
        else:
            assert counts[0] == 0 and counts[1] >= 2
            assert all(np.array_equal(a, b) for a, b in zip(sparse, envelope, strict=True))


def test_packed_arrays_unpack_to_the_arrays_packed():
    """``unpack`` (compiled) gives views of the two packed arrays with the fields, dtypes, shapes and values that
    ``pack`` took, in FIELDS order, for a ladder's structure and for the empty one; writing through a view writes
    the packed array (the kernels' counters and scratch live there)."""
    model, _ = ladder(6)
    model.compile()
    _force_sparse(model)
    ints, floats = loop_workspace(model)[1].sparse
    kkt, work = unpack(ints, floats)
    fresh_kkt, fresh_work = unpack(*pack(kkt, work))
    for name, a, b in zip(FIELDS, (*kkt, *work), (*fresh_kkt, *fresh_work), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name
    assert kkt.use[0] == 1 and work.row_start[-1] == 2 * (2 * 6 + 6)  # 2 rows a revolute joint
    assert work.fac.shape == (model.nbodies, 40) and work.aux_body.shape == (model.nconstraints, 2)
    work.stats[1] = 7
    assert unpack(ints, floats)[1].stats[1] == 7
    work.stats[1] = 0
    empty = unpack(*pack(empty_kkt_structure(), sparse_loop_work(0, 0, 0, 0)))
    assert all(a.size == b.size for a, b in zip((*empty[0], *empty[1]), (*empty_kkt_structure(),
                                                                         *sparse_loop_work(0, 0, 0, 0)), strict=True))


@pytest.mark.parametrize("case", ["four_bar", "slider_crank", "row"])
def test_small_loop_models_carry_two_empty_arrays(case):
    """A model whose cost model keeps the envelope path (the four-bar, the slider-crank, a row of parallelograms)
    carries the sparse path as two empty arrays in its time loop's system (not the path's 38 arrays: every compiled
    call that takes the system counts each of its arrays), and its evaluations take the envelope path."""
    from recursive_mbd.integrate.runs import _Inputs, build_system  # noqa: PLC0415

    if case == "row":
        model = parallelograms(3)[0]
    else:
        model = getattr(rm.models, case)()[0]
    model.compile()
    sparse = loop_workspace(model)[1].sparse
    assert len(sparse) == 2 and all(a.size == 0 for a in sparse)
    loops = build_system(model, _Inputs(model, None, None), "projection").loops
    assert len(loops) == 16 + 14 + 2 and loops[30] is sparse[0] and loops[31] is sparse[1]
