"""Frames, Jacobians, J-dot v, centre of mass and momentum of spatial trees against Pinocchio, and their cost.

    python3 benchmarks/spatial_kinematics.py [--trees 100] [--bodies 2 12] [--chains 100 1000]
                                             [--pinocchio-max-n 200]

Agreement: seeded random trees (tests/test_spatial_core.py's generator: every joint type, random axes, offsets,
joint rotations and full inertia tensors) are rebuilt in Pinocchio (``pinocchio_tree``: one Pinocchio joint per
movable joint, composite joints where Pinocchio's own joint has other coordinates, fixed bodies merged into their
parent joint, one operational frame per body at a random point) and compared at a random state: frame placements,
body Jacobians in the three frames (ours "world", "local", "spatial" against LOCAL_WORLD_ALIGNED, LOCAL, WORLD),
classical accelerations (``getFrameClassicalAcceleration``) at a random vdot and at vdot = 0 (the J-dot v term),
the LOCAL spatial acceleration (``getFrameAcceleration``) against ours minus (omega x v; 0), the centre of mass,
its velocity and Jacobian (``centerOfMass``, ``jacobianCenterOfMass``) and the centroidal momentum
(``computeCentroidalMomentum``). Pinocchio's centre of mass leaves out the bodies welded to the ground (they join
its universe), ours counts them: theirs is compared with those bodies' mass added back (and the centroidal angular
momentum taken about that centre). Each difference is max |ours - theirs| / max(|theirs|, 1e-300) over a
quantity's entries; the table gives the largest over the trees. Pinocchio (``pip install pin``) is needed for this part.

Cost: one call of each function on chains of N revolute links (random axes, benchmarks/spatial.py's chain), the
Jacobians of its tip, and forward dynamics on the same chain for scale, beside Pinocchio's nearest calls on its
model of the chain up to ``--pinocchio-max-n`` links (its Data grows like N^3): medians of interleaved rounds, in
thread CPU time (a loaded machine slows them alike).
Writes benchmarks/results/spatial_kinematics.json.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys
import time
from pathlib import Path

import numpy as np
from _common import command_line, interleaved_samples, print_table, write_json
from spatial import build_ours, build_pinocchio, chain_parameters, chain_state, joint_offsets

import recursive_mbd as rm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_spatial_core import random_state, random_tree  # noqa: E402  (the tests' generator)

# ---- our model in Pinocchio ------------------------------------------------------------------------------------

def _joint_model(pin, body):
    """The Pinocchio joint whose q and v are ours (after the quaternion's reordering): Pinocchio's planar and free
    joints take (cos, sin) and a local linear velocity, so they are composites of its elementary joints here."""
    joint, axis = body["joint"], body["axis"]
    if joint == "revolute":
        return pin.JointModelRevoluteUnaligned(axis)
    if joint == "prismatic":
        return pin.JointModelPrismaticUnaligned(axis)
    if joint == "spherical":
        return pin.JointModelSpherical()
    parts = {"cylindrical": lambda: (pin.JointModelRevoluteUnaligned(axis), pin.JointModelPrismaticUnaligned(axis)),
             "universal": lambda: (pin.JointModelRevoluteUnaligned(axis[0]), pin.JointModelRevoluteUnaligned(axis[1])),
             "planar": lambda: (pin.JointModelPX(), pin.JointModelPY(), pin.JointModelRZ()),
             "free": lambda: (pin.JointModelTranslation(), pin.JointModelSpherical())}[joint]()
    composite = pin.JointModelComposite()
    for part in parts:
        composite.addJoint(part)
    return composite


def pinocchio_tree(model, points):
    """(Pinocchio model, frame id of each body): Pinocchio's joint frame of a movable body is our body frame moved to
    its child point, so its placement in the parent joint's frame is (parent body frame in that frame) * (R0, pp)
    and the body frame in it is (1, -cp); a fixed body's frame and inertia go to its parent's joint. The frame of
    body i sits at points[i] (body frame)."""
    import pinocchio as pin  # noqa: PLC0415

    pin_model = pin.Model()
    pin_model.gravity.linear = np.array(model.gravity, dtype=float)
    attached = {}  # body -> (Pinocchio joint, the body frame's placement in that joint's frame)
    frames = []
    for i in range(model.nbodies):
        body = model.body(i)
        parent_joint, parent_frame = (0, pin.SE3.Identity()) if body["parent"] < 0 else attached[body["parent"]]
        placement = parent_frame * pin.SE3(body["rotation"], body["parent_point"])
        if body["joint"] == "fixed":
            joint, in_joint = parent_joint, placement * pin.SE3(np.eye(3), -body["child_point"])
        else:
            joint = pin_model.addJoint(parent_joint, _joint_model(pin, body), placement, f"j{i}")
            in_joint = pin.SE3(np.eye(3), -body["child_point"])
        pin_model.appendBodyToJoint(joint, pin.Inertia(body["mass"], body["com"], body["inertia"]), in_joint)
        attached[i] = (joint, in_joint)
        frames.append(pin_model.addFrame(pin.Frame(f"b{i}", joint, in_joint * pin.SE3(np.eye(3), points[i]),
                                                   pin.FrameType.OP_FRAME)))
    return pin_model, frames


def pinocchio_q(model, q):
    """Our q with its quaternions (w, x, y, z) reordered to Pinocchio's (x, y, z, w)."""
    q_pin = np.array(q, dtype=float)
    for start in model._quat_q:
        q_pin[start:start + 4] = np.roll(q[start:start + 4], -1)
    return q_pin


# ---- agreement ---------------------------------------------------------------------------------------------------

def relative(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    return float(np.max(np.abs(ours - theirs)) / max(np.max(np.abs(theirs)), 1e-300))


def compare_tree(seed, nbodies):
    """{quantity: relative difference} on one random tree at a random state."""
    import pinocchio as pin  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    model = random_tree(rng, nbodies).compile()
    q, v = random_state(rng, model)
    vdot = rng.normal(size=model.nv)
    points = rng.normal(size=(model.nbodies, 3))
    pin_model, frames = pinocchio_tree(model, points)
    data = pin_model.createData()
    q_pin = pinocchio_q(model, q)
    pin.forwardKinematics(pin_model, data, q_pin, v, vdot)
    pin.computeJointJacobians(pin_model, data, q_pin)
    pin.updateFramePlacements(pin_model, data)
    frame_names = {"world": pin.LOCAL_WORLD_ALIGNED, "local": pin.LOCAL, "spatial": pin.WORLD}
    diff = {}

    def record(name, ours, theirs):
        diff[name] = max(diff.get(name, 0.0), relative(ours, theirs))

    for i, fid in enumerate(frames):
        rot, position = rm.frame_placement(model, q, i, points[i])
        record("placement R", rot, data.oMf[fid].rotation)
        record("placement p", position, data.oMf[fid].translation)
        for ours, theirs in frame_names.items():
            record(f"Jacobian {ours} / {theirs}", rm.body_jacobian(model, q, i, points[i], frame=ours),
                   pin.getFrameJacobian(pin_model, data, fid, theirs))
        for ours in ("world", "local"):
            theirs = frame_names[ours]
            record(f"classical acc. {ours} / {theirs}", rm.body_acceleration(model, q, v, vdot, i, points[i], ours),
                   pin.getFrameClassicalAcceleration(pin_model, data, fid, theirs).vector)
        # LOCAL spatial acceleration = the derivative of the local Jacobian's J v: ours minus (omega x v_point; 0)
        local = rm.body_acceleration(model, q, v, vdot, i, points[i], "local")
        twist = rm.body_jacobian(model, q, i, points[i], "local") @ v
        local[:3] -= np.cross(twist[3:], twist[:3])
        record("spatial acc. LOCAL", local, pin.getFrameAcceleration(pin_model, data, fid, pin.LOCAL).vector)
    # J-dot v: Pinocchio's classical acceleration at vdot = 0
    pin.forwardKinematics(pin_model, data, q_pin, v, np.zeros(model.nv))
    pin.updateFramePlacements(pin_model, data)
    for i, fid in enumerate(frames):
        record("J-dot v (world)", rm.body_acceleration(model, q, v, None, i, points[i]),
               pin.getFrameClassicalAcceleration(pin_model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector)
    # Pinocchio's centre of mass leaves out its universe's inertia, where the bodies welded to the ground went;
    # ours counts every body: theirs with the universe's mass m_u at c_u added back
    com, com_velocity = rm.center_of_mass(model, q, v)
    pin.centerOfMass(pin_model, data, q_pin, v)
    moving, welded, welded_at = data.mass[0], pin_model.inertias[0].mass, pin_model.inertias[0].lever
    share = moving / (moving + welded)
    record("centre of mass", com, share * data.com[0] + (1.0 - share) * welded_at)
    record("its velocity", com_velocity, share * data.vcom[0])
    record("centre of mass Jacobian", rm.center_of_mass_jacobian(model, q),
           share * pin.jacobianCenterOfMass(pin_model, data, q_pin))
    momentum = pin.computeCentroidalMomentum(pin_model, data, q_pin, v)
    linear, angular = rm.momentum(model, q, v)
    record("momentum linear", linear, momentum.linear)
    # hg is about Pinocchio's centre of mass: moved to the one with the welded bodies
    full_com = share * data.com[0] + (1.0 - share) * welded_at
    record("momentum angular (com)", angular, momentum.angular + np.cross(data.com[0] - full_com, momentum.linear))
    return diff


# ---- cost --------------------------------------------------------------------------------------------------------

def chain_timings(n, use_pinocchio):
    """{function: (our seconds per call, Pinocchio's or None)} on the revolute chain of n links (its tip's
    Jacobians): interleaved rounds, thread CPU time, medians."""
    params = chain_parameters("revolute", n)
    q, v, tau = chain_state(params)
    model = build_ours(params)
    tip, point = n - 1, np.array([0.0, 0.0, -0.05])
    ours = {
        "forward_dynamics": lambda: rm.forward_dynamics(model, q, v, tau),
        "frame_placement": lambda: rm.frame_placement(model, q, tip, point),
        "body_jacobian": lambda: rm.body_jacobian(model, q, tip, point),
        "point_jacobian": lambda: rm.point_jacobian(model, q, tip, point),
        "body_acceleration": lambda: rm.body_acceleration(model, q, v, tau, tip, point),
        "body_acceleration (J-dot v)": lambda: rm.body_acceleration(model, q, v, None, tip, point),
        "center_of_mass": lambda: rm.center_of_mass(model, q, v),
        "center_of_mass_jacobian": lambda: rm.center_of_mass_jacobian(model, q),
        "momentum": lambda: rm.momentum(model, q, v),
    }
    theirs = {}
    if use_pinocchio:
        import pinocchio as pin  # noqa: PLC0415

        pin_model = build_pinocchio(params)
        # the tip point in Pinocchio's joint frame (our body frame moved to the child point, same axes)
        frame = pin_model.addFrame(pin.Frame("tip", n, pin.SE3(np.eye(3), point - joint_offsets(0)[1]),
                                             pin.FrameType.OP_FRAME))
        data = pin_model.createData()
        world = pin.LOCAL_WORLD_ALIGNED

        def acceleration(a):
            pin.forwardKinematics(pin_model, data, q, v, a)
            pin.updateFramePlacement(pin_model, data, frame)
            return pin.getFrameClassicalAcceleration(pin_model, data, frame, world)

        theirs = {
            "forward_dynamics": lambda: pin.aba(pin_model, data, q, v, tau),
            "frame_placement": lambda: pin.updateFramePlacement(pin_model, data, frame)
            if pin.forwardKinematics(pin_model, data, q) is None else None,
            "body_jacobian": lambda: pin.computeFrameJacobian(pin_model, data, q, frame, world),
            "body_acceleration": lambda: acceleration(tau),
            "body_acceleration (J-dot v)": lambda: acceleration(np.zeros(n)),
            "center_of_mass": lambda: pin.centerOfMass(pin_model, data, q, v),
            "center_of_mass_jacobian": lambda: pin.jacobianCenterOfMass(pin_model, data, q),
            "momentum": lambda: pin.computeCentroidalMomentum(pin_model, data, q, v),
        }
    funcs = {("ours", name): call for name, call in ours.items()}
    funcs.update({("pinocchio", name): call for name, call in theirs.items()})
    samples = interleaved_samples(funcs, rounds=7, min_time=0.03, clock=time.thread_time)
    median = {key: float(np.median(values)) for key, values in samples.items()}
    return {name: (median["ours", name], median.get(("pinocchio", name))) for name in ours}


def main():
    parser = command_line(__doc__)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--bodies", type=int, nargs=2, default=(2, 12), help="range of the trees' sizes")
    parser.add_argument("--chains", type=int, nargs="+", default=(100, 1000), help="chain lengths timed")
    parser.add_argument("--pinocchio-max-n", type=int, default=200,
                        help="longest chain timed with Pinocchio (its Data grows like N^3: 66 GB at 1000 links)")
    args = parser.parse_args()
    payload = {}
    try:
        import pinocchio as pin  # noqa: PLC0415

        payload["pinocchio"] = pin.__version__
    except ImportError:
        print("pinocchio is not installed: no agreement table (pip install pin)")
    if "pinocchio" in payload:
        worst = {}
        sizes = np.random.default_rng(30).integers(args.bodies[0], args.bodies[1] + 1, args.trees)
        for seed, n in enumerate(sizes):
            for name, value in compare_tree(seed, int(n)).items():
                worst[name] = max(worst.get(name, 0.0), value)
        print(f"{args.trees} random trees of {args.bodies[0]}-{args.bodies[1]} bodies (every joint type) against "
              f"Pinocchio {payload['pinocchio']}: largest relative difference")
        print_table(["quantity (ours / Pinocchio's)", "max rel. difference"],
                    [[name, f"{value:.1e}"] for name, value in worst.items()])
        payload["agreement"] = dict(trees=args.trees, bodies=list(args.bodies), max_relative_difference=worst)
    columns, rows = ["function"], {}
    payload["chains"] = []
    for n in args.chains:
        timings = chain_timings(n, "pinocchio" in payload and n <= args.pinocchio_max_n)
        payload["chains"].append(dict(n=n, seconds={name: dict(ours=ours, pinocchio=theirs)
                                                    for name, (ours, theirs) in timings.items()}))
        with_pinocchio = any(theirs is not None for _, theirs in timings.values())
        columns += [f"ours N={n}"] + ([f"Pinocchio N={n}"] if with_pinocchio else [])
        for name, (ours, theirs) in timings.items():
            rows.setdefault(name, [name]).extend([f"{ours * 1e6:.1f}"] + (
                ["" if theirs is None else f"{theirs * 1e6:.1f}"] if with_pinocchio else []))
    print("\none call [us] on chains of N revolute links (the tip's Jacobians): median thread CPU time of interleaved "
          "rounds; Pinocchio's nearest call (its forwardKinematics included where it needs one)")
    print_table(columns, list(rows.values()))
    print(f"wrote {write_json('spatial_kinematics', payload)}")


if __name__ == "__main__":
    main()
