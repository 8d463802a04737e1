"""rm.load_mjcf against MuJoCo itself: M, bias forces and forward dynamics of random MJCF trees at random states.

    python3 benchmarks/mjcf_agreement.py [--trees 30] [--states 5] [--name mjcf_agreement]

Needs MuJoCo (``pip install mujoco``). Each random tree (2 to 10 bodies, radians) mixes welded bodies (no joint),
hinge, slide, ball and free joints, bodies with two hinges, joint damping, hinge and slide springs with springref,
hinge and slide refs,
random body placements (pos, quat) and random inertials (pos, quat, diaginertia). The file is read twice, through
MuJoCo's compiler (``use_mujoco=True``) and through the subset (``use_mujoco=False``), and both models are compared
with MuJoCo's own quantities for the same file (contacts and all constraints disabled): ``mj_fullM`` of qM,
qfrc_bias, and qacc of ``mj_forward`` with qfrc_applied = tau (MuJoCo adds the springs and dampers, qfrc_passive, as
our joint spring-dampers do). Our q and v are MuJoCo's qpos and qvel, in the same order (free: position, quaternion
(w, x, y, z); linear velocity in the world frame, angular velocity in the body frame; ball: local angular velocity).
Each figure is max |ours - mujoco| / max |mujoco|, the worst over the states. Writes benchmarks/results/NAME.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys

import numpy as np
from _common import command_line, print_table, write_json

import recursive_mbd as rm


def numbers(values):
    return " ".join(repr(float(x)) for x in np.ravel(values))


def random_mjcf(rng, n):
    """An MJCF tree of n bodies (module docstring), built parents first."""
    parent = [-1] + [int(rng.integers(-1, i)) for i in range(1, n)]
    joints_of = []
    for i in range(n):
        choice = rng.choice(["weld", "hinge", "slide", "ball", "two hinges", "free"] if parent[i] < 0 else
                            ["weld", "hinge", "slide", "ball", "two hinges"])
        joints_of.append(str(choice))
    if all(kind == "weld" for kind in joints_of):
        joints_of[-1] = "hinge"
    children = {i: [k for k in range(n) if parent[k] == i] for i in range(-1, n)}

    def joint(i, k, kind):
        text = f'<joint name="j{i}_{k}" type="{kind}" pos="{numbers(rng.uniform(-0.1, 0.1, 3))}"'
        if kind in ("hinge", "slide"):
            text += f' axis="{numbers(rng.normal(size=3))}"'
            if rng.random() < 0.5:
                text += f' stiffness="{rng.uniform(0, 5)!r}" springref="{rng.uniform(-0.5, 0.5)!r}"'
            if rng.random() < 0.3:
                text += f' ref="{rng.uniform(-1.0, 1.0)!r}"'
        if kind != "free":
            text += f' damping="{rng.uniform(0, 0.5)!r}"'
        return text + "/>"

    def body(i):
        kind = joints_of[i]
        joints = {"weld": [], "two hinges": ["hinge", "hinge"]}.get(kind, [kind])
        quat, iquat = rng.normal(size=4), rng.normal(size=4)
        moments = rng.uniform(0.5, 1.0, 3) * 0.1
        motion = (f'<freejoint name="j{i}_0"/>' if kind == "free" else
                  "".join(joint(i, k, j) for k, j in enumerate(joints)))
        return (f'<body name="b{i}" pos="{numbers(rng.uniform(-0.5, 0.5, 3))}" '
                f'quat="{numbers(quat / np.linalg.norm(quat))}">{motion}'
                f'<inertial pos="{numbers(rng.uniform(-0.2, 0.2, 3))}" '
                f'quat="{numbers(iquat / np.linalg.norm(iquat))}" mass="{rng.uniform(0.5, 2.0)!r}" '
                f'diaginertia="{numbers(moments)}"/>')

    # nested text without recursion: a stack of (body, closing) items
    parts, stack = [], [("open", i) for i in reversed(children[-1])]
    while stack:
        action, i = stack.pop()
        if action == "close":
            parts.append("</body>")
            continue
        parts.append(body(i))
        stack.append(("close", i))
        stack.extend(("open", k) for k in reversed(children[i]))
    gravity = numbers((rng.uniform(-1, 1), rng.uniform(-1, 1), -9.81))
    return (f'<mujoco model="tree"><compiler angle="radian"/><option gravity="{gravity}"/><worldbody>'
            + "".join(parts) + "</worldbody></mujoco>")


def mujoco_quantities(mujoco, mj, data, q, v, tau):
    data.qpos[:] = q
    data.qvel[:] = v
    data.qfrc_applied[:] = tau
    mujoco.mj_forward(mj, data)
    M = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, data, M)
    return M, data.qfrc_bias.copy(), data.qacc.copy()


def main():
    parser = command_line(__doc__, "mjcf_agreement")
    parser.add_argument("--trees", type=int, default=30, help="random trees (default 30)")
    parser.add_argument("--states", type=int, default=5, help="random states per tree (default 5)")
    args = parser.parse_args()
    try:
        import mujoco  # noqa: PLC0415
    except ImportError:
        sys.exit("mjcf_agreement needs mujoco: pip install mujoco")
    rng = np.random.default_rng(2031)
    worst = {route: {"M": 0.0, "h": 0.0, "fd": 0.0} for route in ("mujoco", "subset")}
    records = []
    for t in range(args.trees):
        text = random_mjcf(rng, int(rng.integers(2, 11)))
        mj = mujoco.MjModel.from_xml_string(text)
        mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
        data = mujoco.MjData(mj)
        models = {"mujoco": rm.load_mjcf(text, use_mujoco=True), "subset": rm.load_mjcf(text, use_mujoco=False)}
        record = {"tree": t, "bodies": mj.nbody - 1, "nv": mj.nv, "joints": models["mujoco"].joint_types}
        for _ in range(args.states):
            model = models["mujoco"]
            q = rm.integrate_configuration(model, model.imported.q0, rng.normal(size=model.nv))
            v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
            M_ref, h_ref, fd_ref = mujoco_quantities(mujoco, mj, data, q, v, tau)
            for route, model in models.items():
                ours = {"M": rm.mass_matrix(model, q), "h": rm.bias_forces(model, q, v),
                        "fd": rm.forward_dynamics(model, q, v, tau)}
                for key, ref in (("M", M_ref), ("h", h_ref), ("fd", fd_ref)):
                    error = float(np.max(np.abs(ours[key] - ref)) / np.max(np.abs(ref)))
                    worst[route][key] = max(worst[route][key], error)
                    record[f"{route}_{key}"] = max(record.get(f"{route}_{key}", 0.0), error)
        records.append(record)
    print(f"rm.load_mjcf vs MuJoCo {mujoco.__version__} (mj_fullM, qfrc_bias, mj_forward qacc), worst relative "
          f"difference over {args.trees} random trees x {args.states} states")
    print_table(["route", "M", "h", "forward dynamics"],
                [[route, *(f"{w[key]:.1e}" for key in ("M", "h", "fd"))] for route, w in worst.items()])
    kinds = sorted({kind for r in records for kind in r["joints"]})
    print(f"joint types covered: {', '.join(kinds)}; bodies per tree {min(r['bodies'] for r in records)}-"
          f"{max(r['bodies'] for r in records)}")
    path = write_json(args.name, {"mujoco": mujoco.__version__, "worst": worst, "records": records})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
