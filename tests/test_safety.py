"""Issue 12, items 3, 7, 8, 9: nothing reaches a kernel unchecked, overflow is an error, bad arguments raise the
promised exception types naming the argument, and chain_modes gives the same bits in every process.

Calls that wrote past a buffer on the old code (a segfault or a corrupted heap) run in a subprocess, so that a
regression fails this test instead of crashing the interpreter.
"""

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from _helpers import assert_read_only_inputs_change_nothing, per_call_functions, read_only

import recursive_mbd as rm

pytestmark = pytest.mark.boundscheck  # also run under NUMBA_BOUNDSCHECK=1 in CI (.ci/run)

ROOT = Path(__file__).resolve().parents[1]


def run_isolated(code, timeout=240, **env):
    """Run ``code`` in a fresh interpreter importing this checkout; returns (returncode, stdout, stderr)."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
                       **env)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=False, capture_output=True, text=True,
                          timeout=timeout, env=environment, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def chain():
    return rm.chains.serial_chain(3)


@pytest.fixture(scope="module")
def four_bar():
    return rm.models.four_bar()


# ---- item 3: memory safety -----------------------------------------------------------------------------------------

def test_buffers_and_indices_that_overran_a_kernel_are_refused():
    """out too short on a 1000-link chain, free= out of range, point_motion rows shorter than nq: each one wrote
    or read past a buffer (segfault, heap corruption, uninitialised memory); now each is a StateError."""
    code = """
        import json, numpy as np, recursive_mbd as rm
        out = {}
        def attempt(label, f):
            try:
                f()
                out[label] = "returned"
            except Exception as err:
                out[label] = [type(err).__name__, str(err)]
        big = rm.chains.serial_chain(1000)
        z = np.zeros(1000)
        attempt("short_out", lambda: rm.forward_dynamics(big, z, z, out=np.zeros(1)))
        model, q0 = rm.models.four_bar()
        q = rm.assemble(model, q0)
        for label, free in (("free_5", [5]), ("free_negative", [-100000])):
            attempt(label, lambda free=free: rm.loops.project(model, q, np.zeros(model.nq), free=free))
        c = rm.chains.serial_chain(3)
        short = np.zeros((2, 1))
        attempt("short_rows", lambda: rm.analysis.point_motion(c, short, short, short, 0))
        print(json.dumps(out))
    """
    rc, stdout, stderr = run_isolated(code)
    assert rc == 0, f"the interpreter died (return code {rc}): {stderr[-2000:]}"
    results = json.loads(stdout.strip().splitlines()[-1])
    assert results["short_out"][0] == "StateError" and "out must have shape (1000,)" in results["short_out"][1]
    assert results["free_5"][0] == "StateError" and "free: index 5 out of range" in results["free_5"][1]
    assert results["free_negative"][0] == "StateError" and "index -100000" in results["free_negative"][1]
    assert results["short_rows"][0] == "StateError" and "q must have shape (nt, 3)" in results["short_rows"][1]


@pytest.mark.parametrize("out, error, match", [
    ([0.0, 0.0, 0.0], TypeError, "out must be a numpy float64 array"),
    (np.zeros(3, dtype=np.int64), TypeError, "dtype float64"),
    (np.zeros(3, dtype=np.float32), TypeError, "dtype float64"),
    (np.zeros(6)[::2], rm.StateError, "C-contiguous"),
    (np.zeros(4), rm.StateError, r"shape \(3,\)"),
])
def test_out_must_be_the_exact_buffer_the_kernel_writes(chain, out, error, match):
    with pytest.raises(error, match=match):
        rm.forward_dynamics(chain, np.full(3, 0.3), np.full(3, 0.1), out=out)


def test_read_only_out_is_refused_and_a_good_out_is_filled_in_place(chain, four_bar):
    q, qd = np.full(3, 0.3), np.full(3, -0.2)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(rm.StateError, match="read-only"):
        rm.forward_dynamics(chain, q, qd, out=frozen)
    buffer = np.zeros(3)
    assert rm.forward_dynamics(chain, q, qd, out=buffer) is buffer
    assert np.array_equal(buffer, rm.forward_dynamics(chain, q, qd))
    # a checked buffer is remembered; changing it in place afterwards is still caught (resizing is refused)
    with pytest.raises(ValueError, match="cannot resize"):
        buffer.resize(1)
    buffer.flags.writeable = False
    with pytest.raises(rm.StateError, match="read-only"):
        rm.forward_dynamics(chain, q, qd, out=buffer)
    buffer.flags.writeable = True
    buffer.shape = (3, 1)
    with pytest.raises(rm.StateError, match=r"shape \(3,\)"):
        rm.forward_dynamics(chain, q, qd, out=buffer)
    model, q0 = four_bar
    with pytest.raises(rm.StateError, match=r"out must have shape"):  # the loop route checks out before solving
        rm.forward_dynamics(model, q0, np.zeros(model.nq), out=np.zeros(1))


PER_CALL = {**per_call_functions(1, (0.1, 0.2)),
            "compiled_forward_dynamics": lambda m, q, qd, tau: rm.compiled_forward_dynamics(m)(q, qd, tau)}


def test_read_only_state_arrays_give_the_results_of_writable_ones(chain, four_bar):
    """A read-only q, qd or tau is taken as a writable one: the same bits, and no other compiled specialisation
    (numba types a read-only array differently: the one-signature short-path kernel refused it with a raw "No
    matching definition" TypeError, the generic kernels compiled again); a read-only out stays refused."""
    squares = rm.models.two_squares()[0]  # force elements
    bar, q_bar = four_bar  # closed loops
    rng = np.random.default_rng(11)
    cases = [(chain, rng.uniform(-1.0, 1.0, 3)), (squares, rng.uniform(-1.0, 1.0, squares.nq)),
             (bar, rm.assemble(bar, q_bar))]
    for model, q in cases:
        qd, tau = rng.uniform(-1.0, 1.0, (2, model.nq))
        assert_read_only_inputs_change_nothing(model, q, qd, tau, PER_CALL)
        with pytest.raises(rm.StateError, match="out is read-only"):
            rm.forward_dynamics(model, q, qd, tau, out=read_only(np.zeros(model.nq)))


def test_project_free_indices_are_checked(four_bar):
    model, q0 = four_bar
    q = rm.assemble(model, q0)
    with pytest.raises(TypeError, match="free"):
        rm.loops.project(model, q, np.zeros(model.nq), free=[0.5])
    with pytest.raises(rm.StateError, match="out of range"):
        rm.loops.project(model, q, np.zeros(model.nq), free=[model.nq])
    kept, _, _ = rm.loops.project(model, q, np.zeros(model.nq), free=[2, 1, 1])  # unsorted, repeated: fine
    assert np.all(np.isfinite(kept))


def test_point_motion_checks_every_row_and_the_point(chain):
    q = np.zeros((4, 3))
    with pytest.raises(rm.StateError, match=r"qd must have shape \(nt, 3\)"):
        rm.analysis.point_motion(chain, q, np.zeros((3, 3)), q, 0)
    with pytest.raises(rm.StateError, match="point must have shape"):
        rm.analysis.point_motion(chain, q, q, q, 0, point=(1.0, 2.0, 3.0))
    with pytest.raises(rm.StateError, match=r"qdd\[2, 1\] is not finite"):
        bad = q.copy()
        bad[2, 1] = np.nan
        rm.analysis.point_motion(chain, q, q, bad, 0)


# ---- item 7: overflow and NaN ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", ["forward_dynamics", "forward_dynamics_mm", "inverse_dynamics", "energy",
                                  "joint_reactions", "forward_kinematics", "forward_kinematics_angles"])
def test_overflow_from_finite_inputs_is_an_error(chain, call):
    """qd = 1e155: qd^2 overflows to inf and the old code returned NaN accelerations, energies and reactions; q =
    1e308 without qd: the absolute angles overflow and forward_kinematics returned them as inf."""
    q, qd = np.zeros(3), np.full(3, 1e155)
    calls = {
        "forward_dynamics": lambda: rm.forward_dynamics(chain, q, qd),
        "forward_dynamics_mm": lambda: rm.forward_dynamics(chain, q, qd, method="mass_matrix"),
        "inverse_dynamics": lambda: rm.inverse_dynamics(chain, q, qd, np.zeros(3)),
        "energy": lambda: rm.energy(chain, q, qd),
        "joint_reactions": lambda: rm.joint_reactions(chain, q, qd, np.zeros(3)),
        "forward_kinematics": lambda: rm.forward_kinematics(chain, q, np.full(3, 1e308)),
        "forward_kinematics_angles": lambda: rm.forward_kinematics(chain, np.full(3, 1e308)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(rm.StateError, match="overflow|not finite"):
            calls[call]()


def test_nan_input_is_refused_by_every_route(chain):
    nan_tau = np.array([np.nan, 0.0, 0.0])
    with pytest.raises(rm.StateError, match=r"tau\[0\] is not finite"):
        rm.forward_dynamics(chain, np.zeros(3), np.zeros(3), nan_tau, method="mass_matrix")  # old: NaN qdd
    with pytest.raises(rm.StateError, match=r"tau\[0\] is not finite"):
        rm.forward_dynamics(chain, np.zeros(3), np.zeros(3), nan_tau)
    with pytest.raises(rm.StateError, match=r"theta\[1\] is not finite"):
        rm.chains.takeno_forward_dynamics([0.0, np.nan], [0.0, 0.0], [1.0, 1.0])
    with pytest.raises(rm.StateError, match=r"point\[0\] is not finite"):
        rm.point_kinematics(chain, np.zeros(3), np.zeros(3), 0, (np.nan, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(rm.StateError, match="theta_ddot.*not finite"):
            rm.chains.takeno_forward_dynamics([0.0, 0.0], [1e200, 0.0], [1.0, 1.0])
        with pytest.raises(rm.StateError, match="not finite"):  # a point of 1e300 on a spinning body
            rm.analysis.point_motion(chain, np.zeros(3), np.full(3, 1e10), np.zeros(3), 2, point=(1e300, 1e300))


def test_overflow_status_does_not_change_finite_results(chain):
    """The finiteness checks add no error where the result is finite: the recursive and dense routes agree."""
    rng = np.random.default_rng(7)
    q, qd, tau = rng.normal(size=3), rng.normal(size=3) * 1e3, rng.normal(size=3)
    a = rm.forward_dynamics(chain, q, qd, tau)
    b = rm.forward_dynamics(chain, q, qd, tau, method="mass_matrix")
    assert np.max(np.abs(a - b)) <= 1e-10 * np.max(np.abs(b))
    assert np.allclose(rm.inverse_dynamics(chain, q, qd, a), tau, rtol=0, atol=1e-9 * np.max(np.abs(a)))


# ---- item 8: errors of the promised kinds ----------------------------------------------------------------------------

def test_a_model_argument_that_is_not_a_model_is_a_type_error():
    mechanism = rm.Mechanism()
    z = np.zeros(2)
    for model, match in ((None, "got NoneType"), (mechanism, r"got Mechanism \(call its .build\(\)")):
        for call in (lambda m: rm.forward_dynamics(m, z, z), lambda m: rm.mass_matrix(m, z),
                     lambda m: rm.simulate(m, z, z, 1.0), lambda m: rm.assemble(m, z),
                     lambda m: rm.augmented.forward_dynamics(m, z, z), lambda m: rm.studies.chain_modes(m, 1)):
            with pytest.raises(TypeError, match=f"model must be a recursive_mbd.Model, {match}"):
                call(model)


@pytest.mark.parametrize("options, error, match", [
    (dict(rtol="x"), TypeError, "rtol must be a real number"),
    (dict(atol=np.nan), rm.StateError, "atol must be finite"),
    (dict(every=2**70), rm.StateError, "every must be an integer"),
    (dict(every=2.0), TypeError, "every must be an integer"),
    (dict(max_step=-np.inf), rm.StateError, "max_step must be > 0"),
    (dict(first_step=0.0), rm.StateError, "first_step must be > 0"),
    (dict(t_eval=[0.05, np.nan]), rm.StateError, r"t_eval\[1\] is not finite"),
    (dict(t_eval=[0.05 + 1j]), TypeError, "t_eval must be an array of real numbers"),
    (dict(max_steps=0), rm.StateError, "max_steps must be an integer"),
    (dict(t0="0"), TypeError, "t0 must be a real number"),
    # strings and bools were converted by float(): dt="0.01" parsed, rho_inf=True taken as 1
    (dict(method="rk4", dt="0.01"), TypeError, "dt must be a real number"),
    (dict(method="rk4", dt=True), TypeError, "dt must be a real number"),
    (dict(method="generalized_alpha", dt="0.01"), TypeError, "dt must be a real number"),
    (dict(method="generalized_alpha", dt=0.01, rho_inf=True), TypeError, "rho_inf must be a real number"),
    (dict(method="generalized_alpha", dt=0.01, newton_tol="1e-8"), TypeError, "newton_tol must be a real number"),
    (dict(method="generalized_alpha", dt=0.01, newton_tol=np.nan), rm.StateError, "newton_tol must be a number"),
    (dict(method="generalized_alpha", dt=0.01, every=2.5), TypeError, "every must be an integer"),
    (dict(method="generalized_alpha", dt=0.01, max_steps=-5), rm.StateError, "max_steps must be an integer"),
    (dict(max_wall_time="5"), TypeError, "max_wall_time must be a real number"),
])
def test_simulate_options_are_checked_by_name(chain, options, error, match):
    with pytest.raises(error, match=match):
        rm.simulate(chain, np.full(3, 0.1), np.zeros(3), 0.1, **options)


@pytest.mark.parametrize("options, error, match", [
    (dict(max_newton=2.5), TypeError, "max_newton must be an integer"),
    (dict(every="2"), TypeError, "every must be an integer"),
    (dict(t_end="0.1"), TypeError, "t_end must be a real number"),
    (dict(max_steps=0), rm.StateError, "max_steps must be an integer"),
])
def test_the_implicit_front_end_checks_its_options_as_simulate(chain, options, error, match):
    from recursive_mbd.integrate import implicit  # noqa: PLC0415

    arguments = dict(dict(t0=0.0, t_end=0.1, dt=0.01), **options)
    with pytest.raises(error, match=match):
        implicit.simulate_generalized_alpha(chain, np.full(3, 0.1), np.zeros(3), **arguments)


@pytest.mark.parametrize("formulation", ["recursive", "augmented"])
def test_alpha_nan_is_refused_before_a_linear_solve(four_bar, formulation):
    model, q0 = four_bar
    q = rm.assemble(model, q0)
    with pytest.raises(rm.StateError, match="alpha must be finite"):  # old: LinAlgError / a NaN run
        rm.simulate(model, q, np.zeros(model.nq), 0.1, formulation=formulation, stabilization="baumgarte",
                    alpha=np.nan, beta=1.0)


def test_complex_input_is_a_type_error_not_a_dropped_imaginary_part(chain):
    z = np.zeros(3)
    with pytest.raises(TypeError, match="q must be an array of real numbers, got complex"):
        rm.forward_dynamics(chain, z + 1j, z)
    with pytest.raises(TypeError, match="tau must be an array of real numbers"):
        rm.forward_dynamics(chain, z, z, [1j, 0, 0])
    with pytest.raises(TypeError, match="parent_point"):
        rm.Model().add_body(parent_point=(1j, 0.0))


def test_chain_and_study_arguments(chain):
    with pytest.raises(TypeError, match="length must be a real number"):
        rm.chains.serial_chain(3, length="abc")
    with pytest.raises(TypeError, match="n must be a positive integer"):
        rm.chains.bead_chain(2.5)
    with pytest.raises(rm.ModelError, match="mass must be finite"):
        rm.chains.serial_chain(3, mass=np.inf)
    with pytest.raises(TypeError, match="k must be an integer"):  # old: SystemError from ARPACK
        rm.studies.chain_modes(rm.chains.serial_chain(40), 3.0)
    with pytest.raises(rm.ModelError, match="k = 5 modes"):
        rm.studies.chain_modes(chain, 5)
    with pytest.raises(TypeError, match="k must be an integer"):
        rm.modes(chain, np.zeros(3), k="2")


def test_analysis_tolerances_and_names(four_bar):
    model, q0 = four_bar
    with pytest.raises(rm.StateError, match="tol must be >= 0"):
        rm.assemble(model, q0, tol=-1)
    with pytest.raises(TypeError, match="max_iter must be an integer"):
        rm.static_equilibrium(model, q0, max_iter=2.5)
    with pytest.raises(TypeError, match="coordinate index must be an integer"):
        rm.assemble(model, q0, fixed=[0.5])
    fresh = rm.Model()
    for names in (["", "b"], [5, "b"]):
        with pytest.raises(TypeError, match=r"names\[0\] \(body index 0\) must be a non-empty string"):
            fresh.add_bodies([-1, 0], names=names)
    assert fresh.nbodies == 0  # nothing was added by the failed calls


def test_augmented_arrays_are_checked(four_bar):
    model, q0 = four_bar
    z, zd = rm.augmented.absolute_from_joint(model, rm.assemble(model, q0), np.zeros(model.nq))
    with pytest.raises(rm.StateError, match=r"zd must have shape \(3, 3\) or \(9,\)"):
        rm.augmented.forward_dynamics(model, z, zd[:2])
    with pytest.raises(rm.StateError, match=r"z\[1, 2\] is not finite|z of body 'coupler' \(index 1\) is not finite"):
        bad = z.copy()
        bad[1, 2] = np.inf
        rm.augmented.forward_dynamics(model, bad, zd)
    with pytest.raises(TypeError, match="t must be a real number"):
        rm.augmented.forward_dynamics(model, z, zd, t="now")
    for bad_kind in (z.astype(str), z + 1e-3j):  # strings would be parsed, complex would lose its imaginary part
        with pytest.raises(TypeError, match="z must be an array of 3 x 3 numbers"):
            rm.augmented.forward_dynamics(model, bad_kind, zd)
    with pytest.raises(rm.StateError, match="y must have"):
        rm.augmented.state_derivative(model, 0.0, np.zeros(5))


# ---- item 9: determinism of chain_modes ------------------------------------------------------------------------------

def test_chain_modes_gives_the_same_bits_in_fresh_processes():
    """Old: ARPACK's random start vector flipped signs and changed last digits from one process to the next."""
    code = """
        import hashlib, recursive_mbd as rm
        omega, shapes = rm.studies.chain_modes(rm.chains.serial_chain(120), 3)
        print(hashlib.sha256(omega.tobytes() + shapes.tobytes()).hexdigest())
    """
    digests = []
    for _ in range(2):
        rc, stdout, stderr = run_isolated(code)
        assert rc == 0, stderr[-2000:]
        digests.append(stdout.split()[-1])
    assert digests[0] == digests[1]


@pytest.mark.parametrize("n", [12, 120])  # the dense route (n <= 3 k + 10) and the Lanczos route
def test_chain_mode_shapes_follow_the_sign_convention(n):
    model = rm.chains.serial_chain(n)
    omega, shapes = rm.studies.chain_modes(model, 3)
    absolute = np.cumsum(shapes, axis=0)  # absolute link angles of each mode
    assert np.all(absolute.sum(axis=0) > 0.0)
    dense_omega, dense_shapes = rm.modes(model, np.zeros(n), 3)
    assert np.max(np.abs(omega / dense_omega - 1.0)) < 1e-10
    for j in range(3):  # the same M-normalised shapes up to the sign the convention fixes
        sign = np.sign(dense_shapes[:, j] @ shapes[:, j])
        assert np.max(np.abs(shapes[:, j] - sign * dense_shapes[:, j])) < 1e-7 * np.max(np.abs(shapes[:, j]))


# ---- NUMBA_BOUNDSCHECK -----------------------------------------------------------------------------------------------

def test_boundscheck_run_catches_an_out_of_range_kernel_access(tmp_path):
    """Under NUMBA_BOUNDSCHECK=1 (the second CI run) a kernel reading past an array raises IndexError; a kernel
    called directly with a too-short qdd proves the switch works, so an unchecked buffer in the suite would fail."""
    chain = rm.chains.serial_chain(3).compile()
    np.save(tmp_path / "body_int.npy", chain.body_int)  # compiled here: the subprocess compiles one small kernel
    code = f"""
        import numpy as np
        from recursive_mbd._kernels import layout
        from recursive_mbd._kernels.planar.loops import body_accelerations
        body_int = np.load({str(tmp_path / "body_int.npy")!r})
        try:
            body_accelerations(body_int, np.zeros((3, layout.W_TREE), order="F"), np.zeros(1), np.zeros((3, 3)))
            print("no error")  # qdd needs 3 entries: without boundscheck this reads past it
        except IndexError as err:
            print("IndexError", err)
    """
    rc, stdout, stderr = run_isolated(code, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path))
    assert rc == 0, stderr[-2000:]
    assert stdout.startswith("IndexError"), stdout
