"""rm.load_urdf against Pinocchio's own URDF parser: M, h and forward dynamics of real robot files at random states.

    python3 benchmarks/urdf_agreement.py [--states 20] [--robots ur5 panda ...] [--name urdf_agreement]

Needs Pinocchio (``pip install pin``). The robot files come from the ``example-robot-data`` distribution on PyPI
(``pip install example-robot-data``: data only, located through its installed files, no import), when installed;
the hand-written robot of tests/test_urdf.py (fixed joints, rpy origins, unaligned axes, joint damping) is always
compared. For each robot and random state (q, v, tau), with both models read from the same file:

- M: ``rm.mass_matrix`` against ``pin.crba`` (its upper triangle symmetrised);
- h: ``rm.bias_forces`` against ``pin.rnea(q, v, 0)``;
- forward dynamics: ``rm.forward_dynamics(q, v, tau)`` against ``pin.aba(q, v, tau - D v)`` (Pinocchio keeps the
  file's damping D in ``model.damping`` but does not apply it; we apply it as joint dampers).

Coordinates: joints are matched by their file names (``model.imported.joints`` -> ``pin_model.getJointId``).
Pinocchio's continuous joint has q = (cos, sin); its free flyer q = (x, y, z, qx, qy, qz, w) and v = (linear
velocity in the BODY frame, angular velocity in the body frame), ours (linear in the parent frame, angular in the
body frame): with v_pin = T(q) v, M = T^T M_pin T, h = T^T (h_pin + M_pin Tdot v), vdot = T^-1 (vdot_pin - Tdot v),
tau_pin = T^-T tau. Each figure is max |ours - pinocchio| / max |pinocchio|, the worst over the states. Writes
benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import importlib.metadata
import sys
from pathlib import Path

import numpy as np
from _common import command_line, print_table, write_json

import recursive_mbd as rm
from recursive_mbd.model.spatial_fields import quaternion_matrix

ROOT = Path(__file__).resolve().parent.parent
HAND_WRITTEN = ROOT / "tests" / "data" / "arm.urdf"
ROBOTS = {  # name: (file under example-robot-data's robots folder, floating base)
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", False),
    "z1": ("z1_description/urdf/z1.urdf", False),
    "baxter": ("baxter_description/urdf/baxter.urdf", False),
    "talos_left_arm": ("talos_data/robots/talos_left_arm.urdf", False),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "a1": ("a1_description/urdf/a1.urdf", True),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", True),
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True),
    "romeo_small": ("romeo_description/urdf/romeo_small.urdf", True),  # refused: an inertia no body can have
}


def robots_folder():
    """example-robot-data's robots folder, or None when the distribution is not installed."""
    try:
        folder = importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots")
    except importlib.metadata.PackageNotFoundError:
        return None
    return Path(folder) if Path(folder).is_dir() else None


class Mapping:
    """Our (q, v) of a loaded model -> Pinocchio's, and the velocity map T (v_pin = T v) with Tdot v."""

    def __init__(self, model, pin_model, floating):
        self.model, self.pin_model = model, pin_model
        self.joints = []  # (our joint type, our q slice, our v slice, pin idx_q, pin idx_v, pin nq)
        bodies = {name: info.body for name, info in model.imported.joints.items()}
        if floating:  # the root link's free joint: Pinocchio's "root_joint"
            bodies["root_joint"] = 0
        for name, body_name in bodies.items():
            jid = pin_model.getJointId(name)
            if jid >= pin_model.njoints:
                raise RuntimeError(f"pinocchio has no joint {name!r}")
            body = model.body_index(body_name)
            self.joints.append((model.joint_types[body], model.q_slice(body), model.v_slice(body),
                                pin_model.idx_qs[jid], pin_model.idx_vs[jid], pin_model.nqs[jid]))
        if len(self.joints) != pin_model.njoints - 1 or model.nv != pin_model.nv:
            raise RuntimeError(f"{len(self.joints)} joints and nv = {model.nv} here, {pin_model.njoints - 1} "
                               f"and nv = {pin_model.nv} in pinocchio")

    def configuration(self, q):
        q_pin = np.zeros(self.pin_model.nq)
        for kind, qs, _, iq, _, nq in self.joints:
            part = q[qs]
            if kind == "free":
                q_pin[iq:iq + 7] = np.concatenate((part[:3], part[4:], part[3:4]))
            elif nq == 2:  # continuous: (cos, sin)
                q_pin[iq:iq + 2] = np.cos(part[0]), np.sin(part[0])
            else:
                q_pin[iq:iq + nq] = part
        return q_pin

    def velocity_map(self, q, v):
        """(T, Tdot v): v_pin = T v (T depends on q alone)."""
        nv = self.model.nv
        T = np.zeros((nv, nv))
        tdot_v = np.zeros(nv)
        for kind, qs, vs, _, iv, _ in self.joints:
            n = vs.stop - vs.start
            if kind == "free":
                R = quaternion_matrix(q[qs][3:7])
                T[iv:iv + 3, vs.start:vs.start + 3] = R.T
                T[iv + 3:iv + 6, vs.start + 3:vs.start + 6] = np.eye(3)
                omega = v[vs][3:]
                tdot_v[iv:iv + 3] = -np.cross(omega, R.T @ v[vs][:3])
            else:
                T[iv:iv + n, vs] = np.eye(n)
        return T, tdot_v


def damping_vector(model):
    """Our joint damping per velocity coordinate (the file's, as the joint dampers apply it)."""
    d = np.zeros(model.nv)
    for info in model.imported.joints.values():
        d[model.v_slice(info.body)] = info.damping
    return d


def compare(model, pin_model, floating, rng, states):
    import pinocchio as pin  # noqa: PLC0415

    data = pin_model.createData()
    mapping = Mapping(model, pin_model, floating)
    damping = damping_vector(model)
    worst = {"M": 0.0, "h": 0.0, "fd": 0.0}
    for _ in range(states):
        q = model.neutral()
        for kind, qs, _, _, _, _ in mapping.joints:
            part = rng.uniform(-1.0, 1.0, qs.stop - qs.start)
            if kind == "free":
                part[3:] /= np.linalg.norm(part[3:])
            q[qs] = part
        v = rng.uniform(-1.0, 1.0, model.nv)
        tau = rng.uniform(-1.0, 1.0, model.nv)
        q_pin = mapping.configuration(q)
        T, tdot_v = mapping.velocity_map(q, v)
        v_pin = T @ v
        M_pin = pin.crba(pin_model, data, q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        h_pin = pin.rnea(pin_model, data, q_pin, v_pin, np.zeros(pin_model.nv))
        M_ref = T.T @ M_pin @ T
        h_ref = T.T @ (h_pin + M_pin @ tdot_v)
        tau_pin = np.linalg.solve(T.T, tau - damping * v)
        a_pin = pin.aba(pin_model, data, q_pin, v_pin, tau_pin)
        fd_ref = np.linalg.solve(T, a_pin - tdot_v)
        ours = {"M": rm.mass_matrix(model, q), "h": rm.bias_forces(model, q, v),
                "fd": rm.forward_dynamics(model, q, v, tau)}
        for key, ref in (("M", M_ref), ("h", h_ref), ("fd", fd_ref)):
            worst[key] = max(worst[key], float(np.max(np.abs(ours[key] - ref)) / np.max(np.abs(ref))))
    return worst


def main():
    parser = command_line(__doc__, "urdf_agreement")
    parser.add_argument("--states", type=int, default=20, help="random states per robot (default 20)")
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), help=f"of {', '.join(ROBOTS)}")
    args = parser.parse_args()
    try:
        import pinocchio as pin  # noqa: PLC0415
    except ImportError:
        sys.exit("urdf_agreement needs pinocchio: pip install pin")
    folder = robots_folder()
    cases = [("hand-written arm", HAND_WRITTEN, False)]
    if folder is None:
        print("example-robot-data is not installed (pip install example-robot-data): the hand-written robot only")
    else:
        cases += [(name, folder / ROBOTS[name][0], ROBOTS[name][1]) for name in args.robots]
    rng = np.random.default_rng(2030)
    rows, records, refused = [], [], []
    for name, path, floating in cases:
        try:
            model = rm.load_urdf(path, floating_base=floating, independent_mimic=True)  # pinocchio's default
        except rm.ModelError as err:  # a file our loader refuses (and says why): reported, not compared
            refused.append(f"{name}: {err}")
            continue
        pin_model = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
                     else pin.buildModelFromUrdf(str(path)))
        pin_model.gravity.linear = model.gravity
        worst = compare(model, pin_model, floating, rng, args.states)
        merged = sum(1 for body in model.imported.links.values() if body != "ground") - model.nbodies
        records.append({"robot": name, "file": str(path), "floating_base": floating, "bodies": model.nbodies,
                        "nq": model.nq, "nv": model.nv, "merged_links": merged, "states": args.states, **worst})
        rows.append([name, model.nbodies, model.nv, merged, f"{worst['M']:.1e}", f"{worst['h']:.1e}",
                     f"{worst['fd']:.1e}"])
    print(f"rm.load_urdf vs pinocchio {pin.__version__} buildModelFromUrdf, worst relative difference over "
          f"{args.states} random states")
    print_table(["robot", "bodies", "nv", "merged links", "M", "h", "forward dynamics"], rows)
    for line in refused:
        print(f"refused by rm.load_urdf: {line}")
    worst_all = max(max(r["M"], r["h"], r["fd"]) for r in records)
    print(f"worst over all: {worst_all:.1e} (goal 1e-10)")
    path = write_json(args.name, {"pinocchio": pin.__version__, "records": records, "refused": refused,
                                  "worst": worst_all})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
