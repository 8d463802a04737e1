"""Simulations and analyses against closed forms: what the public API gives where the physics has an exact answer.

    python3 benchmarks/closed_forms.py [--name closed_forms]

- simple pendulum (point mass, 0.7 m) released from 0.5 rad: the period from successive zeros of qd (events,
  dopri5 rtol 1e-13) against 4 sqrt(L/g) K(sin^2(theta0/2)); ``modes`` against sqrt(g/L);
- mass on a prismatic joint spring (k = 40 N/m, 0.9 kg): q(t) against A cos(omega t) over 2 s, ``modes`` against
  sqrt(k/m);
- planar free body (planar joint, com off the joint point): its centre of mass against the parabola of its initial
  velocity under gravity over 1 s;
- double pendulum (serial_chain(2), from the horizontal) over 10 s, dopri5 rtol 1e-12: max |E - E0| / (m g L);
- hanging chain (6 links): ``joint_reactions`` at rest against the weight below each joint;
- free 3D body (full inertia tensor, spinning): its centre of mass against the parabola, its angular momentum
  about the centre of mass and its energy against their initial values over 1 s (dopri5 rtol 1e-12).
Errors relative to the scale named in each row. Prints a table and writes benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse

import numpy as np
from _common import print_table, write_json
from scipy.special import ellipk

import recursive_mbd as rm
from recursive_mbd.model import spatial_fields

G = 9.81


def pendulum():
    length, theta0 = 0.7, 0.5
    model = rm.Model()
    model.add_body(joint="revolute", mass=2.0, inertia=0.0, com=(0.0, -length), name="bob")

    def turning(t, q, qd):
        return qd[0]

    res = rm.simulate(model, [theta0], [0.0], 3.0, rtol=1e-13, atol=1e-15, events=turning)
    period = 2.0 * np.diff(res.t_events[0]).mean()
    exact = 4.0 * np.sqrt(length / G) * ellipk(np.sin(theta0 / 2.0) ** 2)
    omega = rm.modes(model, np.zeros(1))[0][0]
    return [("pendulum period, 0.5 rad", "elliptic integral", abs(period / exact - 1.0)),
            ("pendulum modes", "sqrt(g/L)", abs(omega / np.sqrt(G / length) - 1.0))]


def spring_mass():
    k, mass, amplitude = 40.0, 0.9, 0.05
    model = rm.Model(gravity=(0.0, -G))
    model.add_body(joint="prismatic", axis=(1, 0), mass=mass, inertia=0.01, name="slider")
    model.add_joint_spring_damper("slider", stiffness=k, damping=0.0, rest=0.0)
    omega = np.sqrt(k / mass)
    t = np.linspace(0.0, 2.0, 41)
    res = rm.simulate(model, [amplitude], [0.0], 2.0, rtol=1e-13, atol=1e-15, t_eval=t)
    return [("spring-mass motion", "A cos(omega t), / A",
             np.abs(res.q[:, 0] - amplitude * np.cos(omega * t)).max() / amplitude),
            ("spring-mass modes", "sqrt(k/m)", abs(rm.modes(model, np.zeros(1))[0][0] / omega - 1.0))]


def planar_free_body():
    model = rm.Model()
    com = (0.25, 0.4)
    model.add_body(joint="planar", parent_point=(0.2, 0.1), child_point=(0.3, -0.1), com=com, mass=1.7,
                   inertia=0.2, angle=0.3, name="free")
    q0, qd0 = np.array([0.5, 1.0, 0.2]), np.array([1.0, 3.0, 2.5])
    t = np.linspace(0.0, 1.0, 11)
    res = rm.simulate(model, q0, qd0, 1.0, rtol=1e-13, atol=1e-15, t_eval=t)
    points = [rm.point_kinematics(model, q, qd, "free", com) for q, qd in zip(res.q, res.qd, strict=True)]
    position = np.array([p[0] for p in points])
    parabola = position[0] + np.outer(t, points[0][1]) + 0.5 * np.outer(t**2, [0.0, -G])
    return [("planar free body com", "parabola [m]", np.abs(position - parabola).max())]


def double_pendulum():
    model = rm.chains.serial_chain(2)
    res = rm.simulate(model, [np.pi / 2, 0.0], [0.0, 0.0], 10.0, rtol=1e-12, atol=1e-14,
                      t_eval=np.linspace(0.0, 10.0, 1001))
    kinetic, potential = res.energy()
    energy = kinetic + potential
    return [("double pendulum energy, 10 s", "m g L", np.abs(energy - energy[0]).max() / G)]


def hanging_chain():
    n, mass = 6, 3.0
    chain = rm.chains.serial_chain(n, length=2.0, mass=mass)
    zeros = np.zeros(n)
    reactions = rm.joint_reactions(chain, zeros, zeros, zeros).joint
    below = mass / n * G * np.arange(n, 0, -1)
    expected = np.column_stack([np.zeros(n), below, np.zeros(n)])
    return [("hanging chain reactions", "total weight", np.abs(reactions - expected).max() / (mass * G))]


def free_body_3d():
    inertia = np.array([[0.3, 0.02, -0.01], [0.02, 0.5, 0.03], [-0.01, 0.03, 0.7]])
    com = np.array([0.1, -0.2, 0.05])
    model = rm.Model3D()
    model.add_body("ground", "free", mass=2.0, inertia=inertia, com=com, name="b")
    q0 = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    v0 = np.array([0.5, -0.3, 4.0, 3.0, -2.0, 5.0])
    t = np.linspace(0.0, 1.0, 11)
    res = rm.simulate(model, q0, v0, 1.0, rtol=1e-12, atol=1e-14, t_eval=t)
    points = [rm.point_kinematics(model, q, v, "b", com) for q, v in zip(res.q, res.qd, strict=True)]
    position = np.array([np.asarray(p[0]) for p in points])
    parabola = position[0] + np.outer(t, np.asarray(points[0][1])) + 0.5 * np.outer(t**2, [0.0, 0.0, -G])
    rotations = [spatial_fields.quaternion_matrix(q[3:7]) for q in res.q]
    momentum = np.array([r @ inertia @ v[3:6] for r, v in zip(rotations, res.qd, strict=True)])
    kinetic, potential = res.energy()
    energy = kinetic + potential
    return [("3D free body com", "parabola [m]", np.abs(position - parabola).max()),
            ("3D free body angular momentum", "|L0|", np.abs(momentum - momentum[0]).max()
             / np.linalg.norm(momentum[0])),
            ("3D free body energy", "|E0|", np.abs(energy - energy[0]).max() / abs(energy[0]))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="closed_forms")
    args = parser.parse_args()
    rows = [row for check in (pendulum, spring_mass, planar_free_body, double_pendulum, hanging_chain, free_body_3d)
            for row in check()]
    print_table(["check", "against (relative to)", "error"], [[c, a, f"{e:.2g}"] for c, a, e in rows])
    print(f"wrote {write_json(args.name, {'rows': [{'check': c, 'against': a, 'error': e} for c, a, e in rows]})}")


if __name__ == "__main__":
    main()
