"""Shared fixtures: seeded random trees (all joint types) and numerical helpers."""

import os

import numpy as np
import pytest

import recursive_mbd as rm

JOINTS = ("revolute", "prismatic", "fixed", "planar")
JOINT_DOF = {"revolute": 1, "prismatic": 1, "fixed": 0, "planar": 3}


def random_tree_spec(rng, nbodies):
    """Parameters of a random tree: body i's parent is the ground or an earlier body."""
    spec = []
    for i in range(nbodies):
        joint = JOINTS[rng.choice(4, p=(0.45, 0.25, 0.1, 0.2))]
        spec.append(
            dict(
                parent=int(rng.integers(-1, i)),
                joint=joint,
                parent_point=rng.uniform(-1, 1, 2),
                child_point=rng.uniform(-1, 1, 2),
                mass=float(rng.uniform(0.2, 3.0)),
                inertia=float(rng.uniform(0.01, 0.5)),
                com=rng.uniform(-0.5, 0.5, 2),
                angle=float(rng.uniform(-np.pi, np.pi)),
                axis=rng.normal(size=2) if joint == "prismatic" else None,
            )
        )
    return spec


def build(spec, order=None, gravity=(0.3, -9.81)):
    """A Model from ``spec`` with its bodies added in ``order`` (a parent-before-child permutation)."""
    order = list(range(len(spec))) if order is None else list(order)
    new_index = {old: new for new, old in enumerate(order)}
    model = rm.Model(gravity=gravity)
    for old in order:
        body = dict(spec[old])
        body["parent"] = -1 if body["parent"] < 0 else new_index[body["parent"]]
        model.add_body(name=f"b{old}", **body)
    return model.compile()


def random_topological_order(rng, spec):
    """Another valid numbering: repeatedly place a random body whose parent is already placed."""
    placed, order = set(), []
    remaining = list(range(len(spec)))
    while remaining:
        ready = [i for i in remaining if spec[i]["parent"] < 0 or spec[i]["parent"] in placed]
        pick = ready[int(rng.integers(len(ready)))]
        order.append(pick)
        placed.add(pick)
        remaining.remove(pick)
    return order


def coordinate_slices(spec, order=None):
    """q-slice of each original body index for the numbering ``order``."""
    order = list(range(len(spec))) if order is None else list(order)
    slices, start = {}, 0
    for old in order:
        ndof = JOINT_DOF[spec[old]["joint"]]
        slices[old] = slice(start, start + ndof)
        start += ndof
    return slices


def random_trees(count=200, max_bodies=40, seed=12345):
    """``count`` seeded random trees (specs), sizes 1 .. max_bodies."""
    rng = np.random.default_rng(seed)
    return [random_tree_spec(rng, int(rng.integers(1, max_bodies + 1))) for _ in range(count)]


def random_state(model, seed):
    """(q, qd, tau) of a model, seeded: angles in [-pi, pi], unit-normal rates, forces of scale 5."""
    rng = np.random.default_rng(seed)
    nq = model.nq
    return rng.uniform(-np.pi, np.pi, nq), rng.normal(size=nq), rng.normal(size=nq) * 5.0


def rel_err(a, b):
    """max |a - b| / max |b| (max norm), the measure of every tolerance here."""
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


TREE_SPECS = random_trees(count=200, max_bodies=40, seed=2026)  # the core suite's random trees


@pytest.fixture(scope="session")
def tree_models():
    """The compiled models of TREE_SPECS, built once per test session."""
    return [build(spec) for spec in TREE_SPECS]


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: compile each kernel signature once for all workers
        from _compile_lock import install  # noqa: PLC0415

        install()


def pytest_unconfigure(config):
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):  # the xdist controller
        import shutil  # noqa: PLC0415

        from _compile_lock import lock_folder  # noqa: PLC0415

        shutil.rmtree(lock_folder(os.getpid()), ignore_errors=True)
