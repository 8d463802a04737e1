"""An independent reference for spatial (3D) tree dynamics: slow, readable, pure numpy, written from the
interface spec of issue 18 only (not from the recursive kernels).

Method (different from the articulated-body, composite-rigid-body and recursive Newton-Euler recursions):

* Each joint degree of freedom k is a screw in ground axes: an angular part ``w_k`` about a ground point ``o_k``
  plus a linear part ``l_k``; differentiating the spec's joint kinematics

      R_child = R_parent R0 R_j(q),   o_J = p_parent + R_parent parent_point + R_parent R0 t_j(q),
      p_child = o_J - R_child child_point

  with respect to that coordinate (or that velocity component, for the quaternion joints) gives it. A point x
  of any descendant body then moves with ``J_k v_k = (l_k + w_k x (x - o_k)) v_k`` and the body turns with
  ``w_k v_k``: the body Jacobians at the centres of mass, ``Jv_i`` (3, nv) and ``Jw_i`` (3, nv), in ground axes.
* Mass matrix: ``M = sum_i m_i Jv_i^T Jv_i + Jw_i^T (R_i Ic_i R_i^T) Jw_i`` (kinetic energy 1/2 v^T M v).
* Velocity-product accelerations ``Jdot v``: along the curve ``q(t) = integrate(q, v, t)`` the velocity v is
  constant (a quaternion advanced by ``exp(omega t / 2)`` on the right has the constant child-frame rate
  omega), so ``Jdot v = d/dt [J(q(t)) v]`` at t = 0, computed by complex-step differentiation
  (``Im f(i h) / h``, h = 1e-30): exact to round-off, no subtractive cancellation. Every kinematic formula
  below is therefore written to be complex-analytic (no abs, no conjugates, no norms of complex arrays).
* Bias forces from Newton-Euler at each centre of mass in ground axes (``I_g = R Ic R^T``):
  ``h = sum_i m_i Jv_i^T (Jdot v_c,i - g) + Jw_i^T (I_g,i Jdot v_w,i + omega_i x I_g,i omega_i)``;
  forward dynamics solves ``M vdot = tau - h`` densely, inverse dynamics is ``M vdot + h``.

Bodies are given as the list of the keyword dictionaries passed to ``Model3D.add_body`` (parent as "ground",
-1 or an earlier index; names are not resolved here).
"""

import numpy as np

JOINT_SIZES = {  # joint: (nq, nv); "fixed" last (random_spatial_tree relies on it)
    "revolute": (1, 1), "prismatic": (1, 1), "cylindrical": (2, 2), "universal": (2, 2),
    "spherical": (4, 3), "planar": (3, 3), "free": (7, 6), "fixed": (0, 0),
}


def skew(a):
    """[a]x, the cross-product matrix (complex-safe)."""
    return np.array([[0 * a[0], -a[2], a[1]], [a[2], 0 * a[0], -a[0]], [-a[1], a[0], 0 * a[0]]])


def axis_rotation(axis, angle):
    """Rodrigues' rotation by ``angle`` about the unit ``axis`` (complex angle allowed)."""
    k = skew(np.asarray(axis, dtype=float))
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def quaternion_matrix(quat):
    """Rotation matrix of the quaternion (w, x, y, z), normalised here (complex-safe normalisation)."""
    quat = quat / np.sqrt(np.sum(quat * quat))
    w, x, y, z = quat
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quaternion_product(a, b):
    """Hamilton product a (x) b of (w, x, y, z) quaternions."""
    aw, av = a[0], a[1:]
    bw, bv = b[0], b[1:]
    return np.concatenate([[aw * bw - av @ bv], aw * bv + bw * av + np.cross(av, bv)])


def quaternion_exp_half(omega, dt):
    """exp(omega dt / 2) as a unit quaternion; omega real (3,), dt real or complex."""
    speed = float(np.sqrt(omega @ omega))
    if speed == 0.0:
        return np.array([1.0 + 0 * dt, 0 * dt, 0 * dt, 0 * dt])
    half = speed * dt / 2.0
    return np.concatenate([[np.cos(half)], np.sin(half) * omega / speed])


def inertia_tensor(inertia):
    """3x3 tensor from a scalar, the 6 entries (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) or a 3x3 array."""
    arr = np.asarray(inertia, dtype=float)
    if arr.ndim == 0:
        return float(arr) * np.eye(3)
    if arr.shape == (6,):
        ixx, iyy, izz, ixy, ixz, iyz = arr
        return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return arr.reshape(3, 3).copy()


def rotation_matrix(rotation):
    """Joint-frame rotation R0 from None, a 3x3 matrix or a (w, x, y, z) quaternion."""
    if rotation is None:
        return np.eye(3)
    arr = np.asarray(rotation, dtype=float)
    if arr.shape == (4,):
        return quaternion_matrix(arr)
    return arr.reshape(3, 3).copy()


def unit(vector):
    vector = np.asarray(vector, dtype=float)
    return vector / np.linalg.norm(vector)


class SpatialReference:
    """Slow reference dynamics of a spatial tree given as ``add_body`` keyword dictionaries."""

    def __init__(self, bodies, gravity=(0.0, 0.0, -9.81)):
        self.gravity = np.asarray(gravity, dtype=float)
        self.bodies = []
        q_start = v_start = 0
        for i, kwargs in enumerate(bodies):
            parent = kwargs.get("parent", "ground")
            parent = -1 if parent in ("ground", -1) else int(parent)
            assert parent < i, "reference: bodies must be given parent before child"
            joint = kwargs.get("joint", "revolute")
            nq, nv = JOINT_SIZES[joint]
            axis = kwargs.get("axis")
            if joint == "universal":
                axes = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)) if axis is None else axis
                axis = (unit(axes[0]), unit(axes[1]))
            else:
                axis = unit((0.0, 0.0, 1.0) if axis is None else axis)
            self.bodies.append(dict(
                parent=parent, joint=joint, axis=axis,
                parent_point=np.asarray(kwargs.get("parent_point", (0.0, 0.0, 0.0)), dtype=float),
                child_point=np.asarray(kwargs.get("child_point", (0.0, 0.0, 0.0)), dtype=float),
                mass=float(kwargs.get("mass", 1.0)),
                inertia=inertia_tensor(kwargs.get("inertia", 0.0)),
                com=np.asarray(kwargs.get("com", (0.0, 0.0, 0.0)), dtype=float),
                rotation=rotation_matrix(kwargs.get("rotation")),
                q_slice=slice(q_start, q_start + nq), v_slice=slice(v_start, v_start + nv),
            ))
            q_start += nq
            v_start += nv
        self.nq, self.nv, self.nbodies = q_start, v_start, len(self.bodies)

    # ---- configuration space -------------------------------------------------------------------------------
    def neutral(self):
        q = np.zeros(self.nq)
        for body in self.bodies:
            if body["joint"] == "spherical":
                q[body["q_slice"].start] = 1.0
            elif body["joint"] == "free":
                q[body["q_slice"].start + 3] = 1.0
        return q

    def integrate(self, q, v, dt=1.0):
        """q (+) v dt (dt may be complex: used by the complex step)."""
        q = np.asarray(q) + 0 * dt
        out = q.copy()
        for body in self.bodies:
            qs, vs = body["q_slice"], body["v_slice"]
            joint = body["joint"]
            if joint in ("spherical", "free"):
                quat_at = qs.start + (3 if joint == "free" else 0)
                omega = np.asarray(v[vs.stop - 3:vs.stop], dtype=float)
                if joint == "free":
                    out[qs.start:qs.start + 3] = q[qs.start:qs.start + 3] + np.asarray(v[vs.start:vs.start + 3]) * dt
                quat = quaternion_product(q[quat_at:quat_at + 4], quaternion_exp_half(omega, dt))
                out[quat_at:quat_at + 4] = quat / np.sqrt(np.sum(quat * quat))
            else:
                out[qs] = q[qs] + np.asarray(v[vs]) * dt
        return out

    # ---- kinematics with the joint screws ------------------------------------------------------------------
    def _screws(self, q):
        """Poses and joint screws at q (complex-safe).

        Returns R (nbodies, 3, 3), p (nbodies, 3), and per velocity index k: angular part w[k] (3,), linear
        part l[k] (3,), reference point o[k] (3,) in ground, and the body owning it (owner[k]).
        """
        dtype = np.result_type(np.asarray(q), float)
        n = self.nbodies
        R = np.zeros((n, 3, 3), dtype=dtype)
        p = np.zeros((n, 3), dtype=dtype)
        w = np.zeros((self.nv, 3), dtype=dtype)
        lin = np.zeros((self.nv, 3), dtype=dtype)
        origin = np.zeros((self.nv, 3), dtype=dtype)
        owner = np.zeros(self.nv, dtype=int)
        for i, body in enumerate(self.bodies):
            parent = body["parent"]
            R_parent = np.eye(3) if parent < 0 else R[parent]
            p_parent = np.zeros(3) if parent < 0 else p[parent]
            qi = q[body["q_slice"]]
            joint, axis = body["joint"], body["axis"]
            frame = R_parent @ body["rotation"]  # joint frame J in ground axes
            t = np.zeros(3, dtype=dtype)
            Rj = np.eye(3, dtype=dtype)
            if joint == "revolute":
                Rj = axis_rotation(axis, qi[0])
            elif joint == "prismatic":
                t = axis * qi[0]
            elif joint == "cylindrical":
                Rj = axis_rotation(axis, qi[0])
                t = axis * qi[1]
            elif joint == "universal":
                Rj = axis_rotation(axis[0], qi[0]) @ axis_rotation(axis[1], qi[1])
            elif joint == "spherical":
                Rj = quaternion_matrix(qi)
            elif joint == "planar":
                Rj = axis_rotation((0.0, 0.0, 1.0), qi[2])
                t = np.array([qi[0], qi[1], 0 * qi[0]])
            elif joint == "free":
                Rj = quaternion_matrix(qi[3:7])
                t = qi[0:3]
            R[i] = frame @ Rj
            joint_point = p_parent + R_parent @ body["parent_point"] + frame @ t  # o_J, fixed in the child
            p[i] = joint_point - R[i] @ body["child_point"]
            vs = body["v_slice"]
            owner[vs] = i
            origin[vs] = joint_point
            if joint == "revolute":
                w[vs.start] = frame @ axis
            elif joint == "prismatic":
                lin[vs.start] = frame @ axis
            elif joint == "cylindrical":
                w[vs.start] = frame @ axis
                lin[vs.start + 1] = frame @ axis
            elif joint == "universal":
                # d/d alpha: Rot(a1) turns about a1; d/d beta: about a2 carried by the first rotation.
                w[vs.start] = frame @ axis[0]
                w[vs.start + 1] = frame @ (axis_rotation(axis[0], qi[0]) @ axis[1])
            elif joint == "spherical":
                # R_j' = R_j [omega]x: omega is in the child frame, R_child e_k in ground.
                w[vs] = R[i].T
            elif joint == "planar":
                lin[vs.start] = frame[:, 0]
                lin[vs.start + 1] = frame[:, 1]
                w[vs.start + 2] = frame[:, 2]
            elif joint == "free":
                lin[vs.start:vs.start + 3] = frame.T
                w[vs.start + 3:vs.stop] = R[i].T
        return R, p, w, lin, origin, owner

    def _ancestors(self, i):
        chain = []
        while i >= 0:
            chain.append(i)
            i = self.bodies[i]["parent"]
        return chain

    def jacobians(self, q, point=None):
        """Jw (nbodies, 3, nv) and Jv (nbodies, 3, nv) in ground axes, Jv at the centre of mass (or at the body
        point ``point[i]`` (nbodies, 3) if given); with R and p. Complex-safe."""
        R, p, w, lin, origin, owner = self._screws(q)
        dtype = R.dtype
        n = self.nbodies
        Jw = np.zeros((n, 3, self.nv), dtype=dtype)
        Jv = np.zeros((n, 3, self.nv), dtype=dtype)
        for i, body in enumerate(self.bodies):
            local = body["com"] if point is None else point[i]
            x = p[i] + R[i] @ local
            for j in self._ancestors(i):
                for k in range(self.bodies[j]["v_slice"].start, self.bodies[j]["v_slice"].stop):
                    Jw[i, :, k] = w[k]
                    Jv[i, :, k] = lin[k] + np.cross(w[k], x - origin[k])
        return Jw, Jv, R, p

    def poses(self, q):
        """R (nbodies, 3, 3) body-to-ground, p (nbodies, 3) body frame origins."""
        R, p, *_ = self._screws(np.asarray(q, dtype=float))
        return R, p

    def velocities(self, q, v):
        """omega (nbodies, 3) in ground axes and velocity of each body frame origin (nbodies, 3)."""
        origins = np.zeros((self.nbodies, 3))
        Jw, Jv, _, _ = self.jacobians(np.asarray(q, dtype=float), origins)
        return Jw @ v, Jv @ v

    def point_velocity(self, q, v, body, point):
        points = np.zeros((self.nbodies, 3))
        points[body] = point
        Jw, Jv, R, p = self.jacobians(np.asarray(q, dtype=float), points)
        return p[body] + R[body] @ np.asarray(point, dtype=float), Jv[body] @ v

    # ---- dynamics ------------------------------------------------------------------------------------------
    def _ground_inertias(self, R):
        return np.array([R[i] @ b["inertia"] @ R[i].T for i, b in enumerate(self.bodies)])

    def mass_matrix(self, q):
        Jw, Jv, R, _ = self.jacobians(np.asarray(q, dtype=float))
        inertia = self._ground_inertias(R)
        M = np.zeros((self.nv, self.nv))
        for i, body in enumerate(self.bodies):
            M += body["mass"] * Jv[i].T @ Jv[i] + Jw[i].T @ inertia[i] @ Jw[i]
        return 0.5 * (M + M.T)

    def velocity_product_accelerations(self, q, v, step=1e-30):
        """Jdot v at the centres of mass: (alpha (nbodies, 3), a_c (nbodies, 3)) by complex step."""
        q_c = self.integrate(np.asarray(q, dtype=float), np.asarray(v, dtype=float), 1j * step)
        Jw, Jv, _, _ = self.jacobians(q_c)
        return np.imag(Jw @ v) / step, np.imag(Jv @ v) / step

    def bias_forces(self, q, v):
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        Jw, Jv, R, _ = self.jacobians(q)
        inertia = self._ground_inertias(R)
        alpha, accel = self.velocity_product_accelerations(q, v)
        h = np.zeros(self.nv)
        for i, body in enumerate(self.bodies):
            omega = Jw[i] @ v
            h += Jv[i].T @ (body["mass"] * (accel[i] - self.gravity))
            h += Jw[i].T @ (inertia[i] @ alpha[i] + np.cross(omega, inertia[i] @ omega))
        return h

    def forward_dynamics(self, q, v, tau=None):
        tau = np.zeros(self.nv) if tau is None else np.asarray(tau, dtype=float)
        return np.linalg.solve(self.mass_matrix(q), tau - self.bias_forces(q, v))

    def inverse_dynamics(self, q, v, vdot):
        return self.mass_matrix(q) @ vdot + self.bias_forces(q, v)

    def generalized_gravity(self, q):
        """Generalised forces of gravity (nv,): sum_i Jv_i^T m_i g."""
        _, Jv, _, _ = self.jacobians(np.asarray(q, dtype=float))
        return sum(Jv[i].T @ (b["mass"] * self.gravity) for i, b in enumerate(self.bodies))

    def energy(self, q, v):
        """(T, V): T = 1/2 v^T M v, V = -sum_i m_i g . c_i."""
        R, p = self.poses(q)
        centres = [p[i] + R[i] @ b["com"] for i, b in enumerate(self.bodies)]
        potential = -sum(b["mass"] * self.gravity @ c for b, c in zip(self.bodies, centres, strict=True))
        return 0.5 * v @ self.mass_matrix(q) @ v, float(potential)


def planar_as_spatial(spec):
    """The spec's mapping from planar add_body arguments to spatial ones (points in the xy plane, J about z)."""
    bodies = []
    for body in spec:
        angle = body["angle"]
        spatial = dict(parent=body["parent"], joint=body["joint"], mass=body["mass"],
                       parent_point=(*body["parent_point"], 0.0), child_point=(*body["child_point"], 0.0),
                       com=(*body["com"], 0.0), inertia=np.diag([body["inertia"]] * 3),
                       rotation=axis_rotation((0.0, 0.0, 1.0), angle))
        if body["joint"] == "prismatic":  # planar axis in the parent frame, spatial axis in the joint frame
            spatial["axis"] = axis_rotation((0.0, 0.0, 1.0), angle).T @ np.array([*body["axis"], 0.0])
        bodies.append(spatial)
    return bodies


def random_planar_spec(rng, nbodies):
    """add_body arguments of a random planar tree (rm.Model): revolute, prismatic, fixed and planar joints (the
    planar ones at angle 0, where the planar and spatial conventions for their (x, y) agree)."""
    spec = []
    for i in range(nbodies):
        joint = ("revolute", "prismatic", "fixed", "planar")[int(rng.choice(4, p=(0.5, 0.2, 0.1, 0.2)))]
        spec.append(dict(parent=int(rng.integers(-1, i)), joint=joint, parent_point=tuple(rng.uniform(-1, 1, 2)),
                         child_point=tuple(rng.uniform(-1, 1, 2)), mass=float(rng.uniform(0.5, 2.0)),
                         inertia=float(rng.uniform(0.05, 0.5)), com=tuple(rng.uniform(-0.5, 0.5, 2)),
                         angle=0.0 if joint == "planar" else float(rng.uniform(-np.pi, np.pi)),
                         axis=tuple(rng.normal(size=2)) if joint == "prismatic" else None))
    return spec


def random_rotation(rng):
    """A uniformly random rotation matrix."""
    quat = rng.normal(size=4)
    return quaternion_matrix(quat / np.linalg.norm(quat))


def random_inertia(rng):
    """A full, physically valid inertia tensor (principal moments obey the triangle inequality)."""
    moments = rng.uniform(0.3, 1.0, 3)
    moments[2] = rng.uniform(abs(moments[0] - moments[1]) + 0.05, moments[0] + moments[1] - 0.05)
    rot = random_rotation(rng)
    return rot @ np.diag(moments) @ rot.T


def random_spatial_tree(rng, nbodies):
    """add_body arguments of a random spatial tree: every joint type, random axes and joint-frame rotations
    (as matrices, quaternions or None), offsets, full inertia tensors given as 3x3, 6 entries or a scalar."""
    joints = tuple(JOINT_SIZES)
    bodies = []
    for i in range(nbodies):
        joint = joints[int(rng.integers(len(joints) - (i == 0)))]  # the first body moves: nv >= 1
        inertia = random_inertia(rng)
        form = int(rng.integers(3))
        if form == 1:
            inertia = np.array([inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2],
                                inertia[1, 2]])
        elif form == 2:
            inertia = float(rng.uniform(0.2, 1.0))
        rotation = [None, random_rotation(rng), rng.normal(size=4)][int(rng.integers(3))]
        if rotation is not None and rotation.shape == (4,):
            rotation = rotation / np.linalg.norm(rotation)
        body = dict(parent="ground" if i == 0 else int(rng.integers(-1, i)), joint=joint,
                    parent_point=rng.uniform(-1, 1, 3), child_point=rng.uniform(-1, 1, 3),
                    mass=float(rng.uniform(0.5, 2.0)), inertia=inertia, com=rng.uniform(-0.5, 0.5, 3),
                    rotation=rotation, name=f"b{i}")
        if joint == "universal":
            first = rng.normal(size=3)
            second = rng.normal(size=3)
            second -= 0.5 * (second @ first) / (first @ first) * first  # well away from parallel
            body["axis"] = (first, second)
        elif joint in ("revolute", "prismatic", "cylindrical"):
            body["axis"] = rng.normal(size=3) * rng.uniform(0.5, 2.0)
        bodies.append(body)
    return bodies


def random_configuration(reference, rng):
    """(q, v, tau): joint coordinates of scale 1 (unit quaternions), rates and forces of scale 1 and 3."""
    q = reference.integrate(reference.neutral(), rng.normal(size=reference.nv))
    return q, rng.normal(size=reference.nv), 3.0 * rng.normal(size=reference.nv)
