"""The loop layer on the loops' structure: a row of parallelograms has a banded loop Jacobian, banded responses
M^-1 J^T and a banded J M^-1 J^T, and the recursive layer reads them through their structure (``loop_pattern``,
``loop_responses``, ``gram_envelope`` and the envelope solves) instead of the dense (m, nq) and (m, m) arrays. The
references are the dense kernels (one recursive pass a row, every entry of G) and the dense KKT system; a ladder
(two hanging chains joined by rungs) is the case where every loop reaches both chains, and its envelope is the whole
matrix."""

import numpy as np
import pytest
from test_singular import parallelograms

import recursive_mbd as rm
from recursive_mbd._kernels.layout import PARENT
from recursive_mbd._kernels.planar import loops as kernels
from recursive_mbd.analysis.models import _rod
from recursive_mbd.dynamics.loops import FILTER_RCOND, POSITION_RCOND, loop_dynamics, loop_workspace, project


def ladder(n):
    """Two chains of n rods (1 m, 1 kg) hanging from the ground 1 m apart, joined at every link's tip by a rung (a
    rod hinged to the tip of the left chain's link, closed on the right chain's link by a revolute loop): n loops,
    every one reaching both chains. q0 closes them (chains straight down, rungs level)."""
    model = rm.Model(gravity=(0.0, -9.81))
    for side, x in (("left", 0.0), ("right", 1.0)):
        for k in range(n):
            _rod(
                model,
                "ground" if k == 0 else f"{side}{k - 1}",
                (x, 0.0) if k == 0 else (0.5, 0.0),
                1.0,
                1.0,
                f"{side}{k}",
            )
    for k in range(n):
        _rod(model, f"left{k}", (0.5, 0.0), 1.0, 1.0, f"rung{k}")
        model.add_loop("revolute", f"rung{k}", (0.5, 0.0), f"right{k}", (0.5, 0.0), name=f"rung{k}")
    chain = np.r_[-np.pi / 2, np.zeros(n - 1)]
    return model, np.r_[chain, chain, np.full(n, np.pi / 2)]


def _state(case):
    """(model, q, qd) closed on the loops: a row of twelve parallelograms away from its change points and 1e-3 rad
    from one, a ladder of eight moved off its rest state."""
    rng = np.random.default_rng(7)
    if case == "ladder":
        model, q0 = ladder(8)
        q0 = q0 + 0.05 * rng.standard_normal(model.nq)
    else:
        n = 12
        model, _, _ = parallelograms(n)
        theta = 1.0 if case == "row" else 1e-3
        q0 = np.r_[np.full(n + 1, theta), np.full(n, -theta)] + 1e-4 * rng.standard_normal(model.nq)
    q, qd, _ = project(model, q0, rng.standard_normal(model.nq))
    return model, q, qd


def _columns(start, cols, r):
    return set(cols[start[r] : start[r + 1]].tolist())


@pytest.mark.filterwarnings("ignore::recursive_mbd.RedundantConstraintWarning")  # near the change point
@pytest.mark.parametrize("case", ["row", "row_near_change_point", "ladder"])
def test_structured_loop_layer_agrees_with_the_dense_one(case):
    """J's nonzeros and the responses' lie in the structure's columns; the structured responses and G are the dense
    kernels' numbers bit for bit (entries outside the structure are NaN here: nothing reads them); the envelope
    solves give the eigen-decomposition's f(G) rhs to round-off; the constrained accelerations and multipliers are
    the dense KKT system's."""
    model, q, qd = _state(case)
    ws, lw, pattern = _structure(model, q, qd)
    m, nq = model.nconstraints, model.nq
    jac = lw.jac.copy()
    jac_start, jac_cols, resp_start, resp_cols = pattern[:4]
    dense_resp = np.zeros((m, nq))
    assert (
        kernels.constraint_responses(
            model.body_int,
            model.body_real,
            q,
            jac,
            ws.no_driven,
            ws.ws,
            dense_resp,
            lw.no_resp_drive,
            ws.zeros,
            lw.no_gravity,
        )
        == 0
    )
    for r in range(m):
        assert set(np.flatnonzero(jac[r]).tolist()) <= _columns(jac_start, jac_cols, r)
        assert set(np.flatnonzero(dense_resp[r]).tolist()) <= _columns(resp_start, resp_cols, r)
    resp = np.full((m, nq), np.nan)
    assert (
        kernels.loop_responses(model.body_int, model.body_real, q, jac, pattern, ws.ws, resp, ws.zeros, lw.no_gravity)
        == 0
    )
    for r in range(m):
        cols = resp_cols[resp_start[r] : resp_start[r + 1]]
        assert np.array_equal(resp[r, cols], dense_resp[r, cols])
    dense_gram = np.empty((m, m))
    kernels.gram_matrix(jac, dense_resp, dense_gram)
    gram = np.full((m, m), np.nan)
    first = np.empty(m, dtype=np.int64)
    kernels.gram_envelope(jac, resp, pattern, gram, first)
    last = np.empty(m, dtype=np.int64)
    kernels.envelope_last(first, last)
    for r in range(m):
        inside = slice(first[r], last[r] + 1)
        assert np.array_equal(gram[r, inside], dense_gram[r, inside])
        assert not dense_gram[r, : first[r]].any() and not dense_gram[r, last[r] + 1 :].any()
    rhs = np.linspace(1.0, 2.0, m)
    values, vectors = np.linalg.eigh(dense_gram)
    for rcond in (FILTER_RCOND, POSITION_RCOND):  # the regularised solve of the closures, f(G) rhs
        solved = np.empty(m)
        assert kernels._closure_solve(gram.copy(), first, rhs, rcond, solved)
        mu = rcond * values[-1]
        filtered = vectors @ (values / (values**2 + mu**2) * (vectors.T @ rhs))
        # round-off times the condition number (G's largest over smallest eigenvalue), and where G is surely regular
        # the Cholesky solve's G^-1 rhs, which differs from f(G) rhs by (mu / s)^2 relative in the weakest direction
        bound = 1e-14 * values[-1] / values[0] + (mu / values[0]) ** 2
        assert np.abs(solved - filtered).max() < bound * np.abs(filtered).max()
    # the constrained accelerations and multipliers (no Baumgarte terms): qdd = qdd0 - Y lam with lam = G^-1 rhs
    # where G is surely regular (the Cholesky solve), f(G) rhs where it is not (near the change point), rhs =
    # J qdd0 - gamma, from the dense responses and an eigen-decomposition of G
    recursive = loop_dynamics(model, q, qd)
    mass = rm.mass_matrix(model, q)
    free = np.linalg.solve(mass, -rm.inverse_dynamics(model, q, qd, np.zeros(nq)))
    rhs = jac @ free - lw.gamma
    top, smallest = values[-1], values[0]
    mu = FILTER_RCOND * top
    regular = smallest > 1e3 * FILTER_RCOND * top
    assert regular == (case != "row_near_change_point")
    lam = vectors @ ((1.0 / values if regular else values / (values**2 + mu**2)) * (vectors.T @ rhs))
    qdd = free - dense_resp.T @ lam
    bound = 1e-13 * top / max(smallest, mu)  # round-off times G's condition, or top / mu where the filter acts
    assert np.abs(recursive.multipliers - lam).max() < bound * np.abs(lam).max()
    assert np.abs(recursive.qdd - qdd).max() < bound * np.abs(qdd).max()
    if regular:  # and the dense KKT system's
        kkt = loop_dynamics(model, q, qd, method="mass_matrix")
        assert np.abs(recursive.qdd - kkt.qdd).max() < bound * np.abs(kkt.qdd).max()


def _structure(model, q, qd):
    """(ws, lw, pattern): the loop constraints evaluated at (q, qd) into the model's workspaces, and the loops'
    structure (``loop_pattern``)."""
    ws, lw = loop_workspace(model)
    status = kernels.loop_constraints(
        model.body_int,
        model.body_real,
        model.loop_int,
        model.loop_real,
        q,
        qd,
        ws.ws,
        ws.com,
        lw.acc,
        lw.phi,
        lw.phid,
        lw.jac,
        lw.gamma,
        lw.weights,
    )
    assert status == 0
    return ws, lw, kernels.loop_pattern(model.body_int, model.loop_int, model.nconstraints, model.nq)


def _envelope(model, q, qd):
    """first (m,): the envelope of J M^-1 J^T that the structured layer builds at (q, qd)."""
    ws, lw, pattern = _structure(model, q, qd)
    m = model.nconstraints
    status = kernels.loop_responses(
        model.body_int, model.body_real, q, lw.jac, pattern, ws.ws, lw.resp, ws.zeros, lw.no_gravity
    )
    assert status == 0
    first = np.empty(m, dtype=np.int64)
    kernels.gram_envelope(lw.jac, lw.resp, pattern, np.empty((m, m)), first)
    return first


@pytest.mark.parametrize("n", [12, 40])
def test_a_row_is_banded_and_a_ladder_is_not(n):
    """A row of n parallelograms: 3 columns of J and 4 of the responses a row, and J M^-1 J^T within 3 rows of the
    diagonal, whatever n (the solves cost O(n)); a ladder of n rungs: every loop reaches both chains, so the
    responses fill both chains' coordinates and the envelope of J M^-1 J^T is the whole matrix (the dense solve)."""
    model, q, qd = parallelograms(n)
    model.compile()
    m, nq = model.nconstraints, model.nq
    jac_start, _, resp_start = kernels.loop_pattern(model.body_int, model.loop_int, m, nq)[:3]
    assert np.diff(jac_start).max() == 3 and np.diff(resp_start).max() == 4
    assert (np.arange(m) - _envelope(model, q, qd)).max() == 3
    model, q = ladder(n)
    model.compile()
    m, nq = model.nconstraints, model.nq
    jac_start, _, resp_start = kernels.loop_pattern(model.body_int, model.loop_int, m, nq)[:3]
    assert np.diff(resp_start).min() == 3 * n  # both chains' coordinates (the rungs hang from the left chain)
    assert not _envelope(model, q, np.zeros(nq)).any()


def _serial_tree(n):
    """A chain of n rods without loops (no loop rows: the empty structure)."""
    model = rm.chains.serial_chain(n)
    model.compile()
    return model


@pytest.mark.parametrize("case", ["row", "ladder", "tree"])
def test_structure_is_built_once_and_equals_a_rebuilt_one(case):
    """The loops' structure is built once per model, kept on its loop workspace and handed to the time loops'
    systems (both formulations), and equals one rebuilt from the model (``loop_pattern``), entry by entry and type
    by type (a model without loops gets the empty structure without the builder: the same dtypes and dimensions,
    so the time loops compile one signature). Its parts against references built from their definitions: the
    response passes' colours put every row in one pass and the rows of a pass on disjoint subtrees hung from the
    ground; the pairs of rows that meet in J M^-1 J^T are those where one row's J columns meet the other's response
    columns (sets), and the envelope is the first such row; J's rows by column are the transpose of its columns by
    row."""
    from recursive_mbd.dynamics.augmented import TimeLoop  # noqa: PLC0415
    from recursive_mbd.dynamics.loops import loop_structure  # noqa: PLC0415
    from recursive_mbd.integrate.runs import _Inputs, build_system  # noqa: PLC0415

    if case == "tree":
        model = _serial_tree(5)
    else:
        model = parallelograms(12)[0] if case == "row" else ladder(8)[0]
        model.compile()
    m, nq = model.nconstraints, model.nq
    _, lw = loop_workspace(model)
    pattern = lw.pattern
    assert loop_workspace(model)[1].pattern is pattern  # kept, not rebuilt
    rebuilt = kernels.loop_pattern(model.body_int, model.loop_int, m, nq)
    assert len(pattern) == len(rebuilt) == 14
    for kept, fresh in zip(pattern, rebuilt, strict=True):
        assert kept.dtype == fresh.dtype == np.int64 and kept.ndim == fresh.ndim and kept.flags.c_contiguous
        assert np.array_equal(kept, fresh)
    assert all(np.array_equal(a, b) for a, b in zip(loop_structure(model), pattern, strict=True))
    inputs = _Inputs(model, None, None)
    kept = build_system(model, inputs, "projection").loops[16:]  # then the sparse KKT path's two arrays
    assert m == 0 or (len(kept) == len(pattern) + 2 and all(a is b for a, b in zip(kept, pattern + lw.sparse,
                                                                                   strict=True)))
    if m:
        augmented = TimeLoop(model, inputs, stabilization="projection").system.loop_ws[9]
        assert all(np.array_equal(a, b) for a, b in zip(augmented, pattern, strict=True))
    jac_start, jac_cols, resp_start, resp_cols, row_bodies = pattern[:5]
    colour_start, colour_rows, pair_start, pair_rows, first, jac_col_start, jac_col_rows = pattern[7:]
    root = np.arange(model.nbodies)  # the body of each body's subtree that is hinged to the ground
    for i in range(model.nbodies):
        parent = model.body_int[i, PARENT]
        root[i] = i if parent < 0 else root[parent]
    assert sorted(colour_rows.tolist()) == list(range(m))
    for c in range(colour_start.size - 1):
        rows = colour_rows[colour_start[c] : colour_start[c + 1]]
        assert np.all(np.diff(rows) > 0)
        subtrees = [{root[b] for b in row_bodies[r] if b >= 0} for r in rows]
        assert sum(len(t) for t in subtrees) == len(set().union(*subtrees))  # disjoint
    for r in range(m):
        meets = {
            s
            for s in range(r + 1)
            if _columns(jac_start, jac_cols, r) & _columns(resp_start, resp_cols, s)
            or _columns(jac_start, jac_cols, s) & _columns(resp_start, resp_cols, r)
        }
        assert set(pair_rows[pair_start[r] : pair_start[r + 1]].tolist()) == meets
        assert first[r] == min(meets | {r})
    for k in range(nq):
        assert jac_col_rows[jac_col_start[k] : jac_col_start[k + 1]].tolist() == [
            r for r in range(m) if k in _columns(jac_start, jac_cols, r)
        ]


@pytest.mark.parametrize("case", ["row", "row_near_change_point", "ladder"])
def test_normal_matrix_on_the_structure_is_the_dense_product(case):
    """J J^T of the change point's tangent basis and fitted multipliers, from J's rows by column (the stored
    structure), against the dense product bit for bit inside the envelope it reports, and that envelope against
    a scan of the dense product's rows (the first nonzero entry)."""
    model, q, qd = _state(case)
    _, lw, _ = _structure(model, q, qd)
    m = model.nconstraints
    jac = lw.jac.copy()
    out = np.full((m, m), np.nan)
    first = np.empty(m, dtype=np.int64)
    kernels.normal_matrix(jac, lw.pattern, out, first)
    dense = np.zeros((m, m))
    for r in range(m):  # in column order, as the kernel sums
        for s in range(r + 1):
            v = 0.0
            for k in range(model.nq):
                v += jac[r, k] * jac[s, k]
            dense[r, s] = dense[s, r] = v
    for r in range(m):
        nonzero = np.flatnonzero(dense[r, : r + 1])
        assert first[r] == (nonzero[0] if nonzero.size else r)
        assert np.array_equal(out[r, first[r] : r + 1], dense[r, first[r] : r + 1])
        assert np.array_equal(out[first[r] : r + 1, r], dense[first[r] : r + 1, r])


def _random_loops(index, nloops=3):
    """A random tree of the core suite (conftest's TREE_SPECS) with nloops revolute loops between random pairs of
    bodies (or a body and the ground) closed at a random q, and a rate projected onto them: a closed state."""
    from conftest import TREE_SPECS, build  # noqa: PLC0415

    spec = TREE_SPECS[index]
    rng = np.random.default_rng(index)
    probe = build(spec, gravity=(0.3, -9.81))
    q = rng.uniform(-np.pi, np.pi, probe.nq)
    poses, _ = rm.forward_kinematics(probe, q)
    model = rm.Model(gravity=(0.3, -9.81))
    for i, body in enumerate(spec):
        model.add_body(name=f"b{i}", **body)
    for lp in range(nloops):
        a, b = rng.choice(np.arange(-1, len(spec)), size=2, replace=False)
        point = rng.uniform(-1.0, 1.0, 2)

        def local(body, point=point):
            if body < 0:
                return point
            c, s = np.cos(poses[body, 2]), np.sin(poses[body, 2])
            d = point - poses[body, :2]
            return np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1]])

        model.add_loop("revolute", int(a), local(a), int(b), local(b), name=f"loop{lp}")
    model.compile()
    return model, q


def _augmented_system(model):
    from recursive_mbd.dynamics.augmented import TimeLoop  # noqa: PLC0415
    from recursive_mbd.integrate.runs import _Inputs  # noqa: PLC0415

    inputs = _Inputs(model, None, None)
    callback, key = inputs.callback()
    return TimeLoop(model, inputs, stabilization="projection").system, callback, key


def _both_paths(model, q, qd):
    """(y, [(dy, lam, info) by the Schur complement, by the sparse KKT factorisation]): the augmented time loop's
    right-hand side at (q, qd) both ways, and whether the sparse path was taken (``sparse_kkt.loop_solve``)."""
    from recursive_mbd._kernels import sparse_kkt  # noqa: PLC0415
    from recursive_mbd._kernels.augmented import system as augmented_system  # noqa: PLC0415
    from recursive_mbd._kernels.planar.loops import REGULAR_RCOND_MARGIN, REGULAR_ZONE_MARGIN  # noqa: PLC0415

    system, callback, key = _augmented_system(model)
    z, zd = rm.augmented.absolute_from_joint(model, q, qd)
    y = np.r_[z.ravel(), zd.ravel(), 0.0, 0.0]
    out = []
    for use in (0, 1):
        system.kkt.use[0] = use
        dy = np.empty_like(y)
        assert augmented_system.system_rhs(callback, key, system, 0.0, y, dy) == 0
        out.append((dy, system.lam.copy(), system.info.copy()))
    s = system  # the sparse path alone at the last evaluation's factor (its joint blocks complete)
    taken = sparse_kkt.loop_solve(
        s.body_int,
        s.body_real,
        s.row_start,
        s.factor,
        s.aux_body,
        s.aux_coef,
        s.aux_rhs,
        REGULAR_RCOND_MARGIN * s.settings[3],
        REGULAR_ZONE_MARGIN * augmented_system._zone(s),
        s.zdd.copy(),
        s.lam.copy(),
        s.info.copy(),
        s.kkt,
    )
    return y, out, taken


def _dense_reference(model, y):
    """(zdd, lam): the dense KKT solve of ``augmented.forward_dynamics`` (LU of the whole matrix)."""
    n = model.nbodies
    z, zd = y[: 3 * n].reshape(n, 3), y[3 * n : 6 * n].reshape(n, 3)
    return rm.augmented.forward_dynamics(model, z, zd, solver="dense")


@pytest.mark.parametrize("case", ["ladder", "ladder_30", "row", "random"])
def test_sparse_kkt_solve_equals_the_schur_complement_and_the_dense_solve(case):
    """The augmented route's sparse factorisation of the KKT matrix with the loop rows inside (``kkt``) gives the
    Schur complement's accelerations and multipliers (joints' and loops') to 1e-10 and the dense LU's, on ladders,
    a row of parallelograms away from its change points (the sparse path forced: the model keeps the Schur
    complement) and random trees with three revolute loops. It is taken exactly where the Schur complement's own
    test finds the loop rows surely regular (every ladder and row state here, 8 of the 20 random ones: the others
    have redundant rows), reporting info = (k, 1) as that test does; elsewhere the numbers are the Schur
    complement's bit for bit."""
    if case == "random":
        states = []
        for index in range(0, 60, 3):
            model, q = _random_loops(index)
            if model.nq == 0:
                continue
            rng = np.random.default_rng(index)
            states.append((model, q, rm.loops.project(model, q, rng.normal(size=model.nq))[1]))
    else:
        if case.startswith("ladder"):
            model, q0 = ladder(30 if case == "ladder_30" else 8)
            model.compile()
            rng = np.random.default_rng(3)
            q, qd, _ = project(model, q0 + 0.05 * rng.standard_normal(model.nq), rng.standard_normal(model.nq))
        else:
            model, q, qd = _state("row")
        states = [(model, q, qd)]
    taken_count = 0
    for model, q, qd in states:
        y, ((dy_schur, lam_schur, info_schur), (dy, lam, info)), taken = _both_paths(model, q, qd)
        taken_count += taken
        k = model.nconstraints
        assert taken == (info_schur[1] == 1)  # where the Schur complement's own test finds it surely regular
        if taken:
            assert tuple(info) == (k, 1)
        else:  # refused: the Schur complement's numbers, bit for bit
            assert np.array_equal(dy, dy_schur) and np.array_equal(lam, lam_schur)
        assert np.abs(dy - dy_schur).max() <= 1e-10 * np.abs(dy_schur).max()
        assert np.abs(lam - lam_schur).max() <= 1e-10 * max(np.abs(lam_schur).max(), 1.0)
        if info_schur[0] == k:  # independent rows: the dense LU applies
            n = model.nbodies
            zdd_dense, lam_dense = _dense_reference(model, y)
            assert np.abs(dy[3 * n : 6 * n] - zdd_dense.ravel()).max() <= 1e-9 * max(np.abs(zdd_dense).max(), 9.81)
            assert np.abs(lam - lam_dense).max() <= 1e-9 * max(np.abs(lam_dense).max(), 1.0)
    assert taken_count == len(states) if case != "random" else taken_count >= 5  # 8 of the 20 random states


@pytest.mark.filterwarnings("ignore::recursive_mbd.RedundantConstraintWarning")
def test_sparse_kkt_refuses_near_a_change_point():
    """1e-3 rad from a row's change point the loop rows' Schur complement has eigenvalues in the zone: the sparse
    path refuses (its inertia count finds them below its shift) and the time loop's right-hand side is the Schur
    complement's, bit for bit, with its zone flag (info[1] = 0)."""
    model, q, qd = _state("row_near_change_point")
    _, ((dy_schur, lam_schur, info_schur), (dy, lam, info)), taken = _both_paths(model, q, qd)
    assert not taken
    assert info_schur[1] == 0 and np.array_equal(info, info_schur)
    assert np.array_equal(dy, dy_schur) and np.array_equal(lam, lam_schur)


@pytest.mark.parametrize("n", [20, 40, 160])
def test_a_ladders_kkt_factor_is_linear(n):
    """Ordered by minimum degree, a ladder's KKT factor has a bounded number of entries per column whatever n
    (O(n) entries and work: the front holds two bodies and a few rows), and the time loop takes the sparse path
    there; a row of parallelograms keeps its banded Schur complement (cheaper there)."""
    from recursive_mbd.dynamics.augmented_tree import joint_row_starts, kkt_structure  # noqa: PLC0415

    model, _ = ladder(n)
    model.compile()
    kkt = kkt_structure(model, joint_row_starts(model))
    counts = np.diff(kkt.l_start)
    assert kkt.use[0] == 1
    assert counts.max() <= 7 and counts.sum() <= 100 * n  # 17 n columns (3 bodies, 3 joints, 1 loop a rung)
    model = parallelograms(n)[0]
    model.compile()
    assert kkt_structure(model, joint_row_starts(model)).use[0] == 0


@pytest.mark.parametrize("seed", [0, 7])
def test_a_ladder_moved_far_off_its_loops_is_projected_back(seed):
    """A ladder of 40 rungs with every joint moved by 0.05 rad (random, the seed's) starts 16 to 19 m open: its
    Gauss-Newton steps grow before they converge (the third is five times the second) and must not be taken for
    round-off. The projection closes the loops to 1e-12 at the point that dense Gauss-Newton steps from the same
    start reach, dq = -M^-1 J^T (J M^-1 J^T)^-1 phi with M from the composite-body mass matrix, and its rates
    satisfy J qd = 0."""
    from recursive_mbd.dynamics._evaluation import tree_mass_matrix  # noqa: PLC0415
    from recursive_mbd.model.workspace import workspace  # noqa: PLC0415

    model, q0 = ladder(40)
    model.compile()
    rng = np.random.default_rng(seed)
    start = q0 + 0.05 * rng.standard_normal(model.nq)
    assert np.abs(rm.loops.constraints(model, start)[0]).max() > 15.0
    q, qd, gap = project(model, start, rng.standard_normal(model.nq))
    reference = start.copy()
    for _ in range(30):
        phi, _, jac, _ = rm.loops.constraints(model, reference)
        resp = np.linalg.solve(tree_mass_matrix(model, workspace(model), reference), jac.T)
        reference -= resp @ np.linalg.solve(jac @ resp, phi)
    phi, _, jac, _ = rm.loops.constraints(model, q)
    assert gap <= 1e-12 and np.abs(phi).max() <= 1e-12
    assert np.abs(rm.loops.constraints(model, reference)[0]).max() <= 1e-12
    assert np.abs(q - reference).max() <= 1e-9 * np.abs(reference).max()  # round-off of the far steps: 2e-10
    assert np.abs(jac @ qd).max() <= 1e-9 * np.abs(qd).max()


def test_a_projection_that_cannot_close_says_which_loop_how_far_and_after_how_many_steps():
    """Two ground-hinged rods whose tips are 1 m apart at best, joined by a revolute loop: no closed configuration
    exists, and the projection's error names the loop, its gap and the Gauss-Newton steps it took."""
    model = rm.Model()
    model.add_body("ground", "revolute", child_point=(-0.5, 0), mass=1, inertia=0.1, name="crank")
    model.add_body("ground", "revolute", (3, 0), (-0.5, 0), mass=1, inertia=0.1, name="rocker")
    model.add_loop("revolute", "crank", (0.5, 0), "rocker", (0.5, 0), name="tips")
    with pytest.raises(
        rm.ModelError,
        match=r"loop 'tips' stays open, max \|phi\| = 3 \(above sqrt\(tol\) = 1e-06\) "
        r"after 21 Gauss-Newton steps, all that max_iter = 20 allows",
    ):
        project(model, np.zeros(2), np.zeros(2))


def _gram_at(model, q):
    """J M^-1 J^T at q, dense: J from the loop kernels, M the composite-body mass matrix."""
    from recursive_mbd.dynamics._evaluation import tree_mass_matrix  # noqa: PLC0415
    from recursive_mbd.model.workspace import workspace  # noqa: PLC0415

    jac = rm.loops.constraints(model, q)[2]
    gram = jac @ np.linalg.solve(tree_mass_matrix(model, workspace(model), q), jac.T)
    return 0.5 * (gram + gram.T)


@pytest.mark.parametrize("case", ["row_1e-3", "row_1e-4", "row_160_1e-3", "ladder", "redundant"])
def test_cutoff_rank_solve_is_the_dense_pseudo_inverse(case):
    """``cutoff_rank_solve_envelope`` (the augmented route's auxiliary solve where its Schur complement is not
    surely regular, banded) against the eigen-decomposition: its rank is the number of eigenvalues above the
    cut-off (1e-10 of the largest); where all are above it, its solution is the inverse's (the pseudo-inverse's),
    else the regularised f(G) rhs with mu = the cut-off, each to round-off times the condition (top / min(s), top /
    mu). Rows of 20 and 160 parallelograms near a change point (banded; full rank at 1e-3 rad for 20, eigenvalues
    below the cut-off at 1e-4 rad and for 160), a ladder moved off its rest state (a full envelope); random
    positive semi-definite banded matrices of rank 3 m / 4 (exactly redundant rows, round-off eigenvalues) are
    refused (-1: the caller takes the eigen-decomposition, which drops their right-hand side's components)."""
    rng = np.random.default_rng(5)
    grams = []
    if case.startswith("row"):
        n = 160 if "160" in case else 20
        theta = float(case.rsplit("_", 1)[1])
        model = parallelograms(n)[0]
        grams.append(_gram_at(model, np.r_[np.full(n + 1, theta), np.full(n, -theta)]))
    elif case == "ladder":
        model, q0 = ladder(8)
        grams.append(_gram_at(model, project(model, q0 + 0.05 * rng.standard_normal(model.nq), np.zeros(model.nq))[0]))
    else:
        for m in (8, 24, 60):
            low = np.tril(np.triu(rng.standard_normal((m, m)), -3), 3)[:, : 3 * m // 4]  # banded, rank 3 m / 4
            grams.append(low @ low.T)
    for gram in grams:
        m = gram.shape[0]
        values, vectors = np.linalg.eigh(gram)
        cutoff = 1e-10 * values[-1]
        rhs = np.linspace(1.0, 2.0, m)
        first = np.empty(m, dtype=np.int64)
        kernels._envelope_first(gram, first)
        out = np.full(m, np.nan)
        rank = kernels.cutoff_rank_solve_envelope(gram, first, rhs, cutoff, kernels.REDUNDANT * values[-1], out)
        if case == "redundant":
            assert rank == -1
            continue
        assert rank == np.count_nonzero(values > cutoff)
        coef = vectors.T @ rhs
        if rank == m:
            inverse = vectors @ (coef / values)
            assert np.abs(out - inverse).max() <= 1e-15 * values[-1] / values[0] * np.abs(inverse).max()
        else:
            filtered = vectors @ (values / (values**2 + cutoff**2) * coef)
            assert np.abs(out - filtered).max() <= 1e-15 * values[-1] / cutoff * np.abs(filtered).max()
        assert (rank < m) == (case in ("row_1e-4", "row_160_1e-3"))  # the regularised branch ran there
