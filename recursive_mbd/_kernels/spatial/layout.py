"""Joint codes and column layout of the packed arrays of a spatial model (``Model3D``) and of its workspace.

numba-free (``Model3D`` imports it to pack a model without loading numba). numba bakes these constants into the
cached machine code of ``_kernels.spatial.tree``; after changing a number here, delete that folder's ``__pycache__``.

Spatial vectors are 6-vectors in body coordinates, angular part first: a motion (omega; v) with v the velocity of
the body frame's origin, a force (moment about the origin; force) (Featherstone, Rigid Body Dynamics Algorithms,
2008, ch. 2).
"""

# ---- joint types: code, (nq, nv) ---------------------------------------------------------------------------------
REVOLUTE = 0
PRISMATIC = 1
CYLINDRICAL = 2
UNIVERSAL = 3
SPHERICAL = 4
PLANAR = 5
FREE = 6
FIXED = 7
JOINT_CODES = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "cylindrical": CYLINDRICAL, "universal": UNIVERSAL,
               "spherical": SPHERICAL, "planar": PLANAR, "free": FREE, "fixed": FIXED}
JOINT_NAMES = {code: name for name, code in JOINT_CODES.items()}
JOINT_SIZES = {REVOLUTE: (1, 1), PRISMATIC: (1, 1), CYLINDRICAL: (2, 2), UNIVERSAL: (2, 2), SPHERICAL: (4, 3),
               PLANAR: (3, 3), FREE: (7, 6), FIXED: (0, 0)}
MAX_NV = 6

# ---- body_int: (nbodies, 6) int64, C order -----------------------------------------------------------------------
PARENT = 0  # parent body index, -1 for the ground; parents come before children
JTYPE = 1  # joint type code (above)
QIDX = 2  # index of the joint's first coordinate in q
VIDX = 3  # index of the joint's first velocity in v
NQJ = 4  # number of joint coordinates
NVJ = 5  # number of joint velocities
N_INT = 6

# ---- body_real: (nbodies, 31) float64, C order -------------------------------------------------------------------
MASS = 0  # mass m [kg]
MCOM = 1  # first moment m c, c the centre of mass in the body frame [kg m] (3)
IC = 4  # rotational inertia about the CENTRE OF MASS as given, body axes: xx, yy, zz, xy, xz, yz [kg m^2] (6)
# (the kernels add m (|c|^2 1 - c c^T) for the inertia about the origin, ``_kernels.spatial.tree._origin_inertia``;
# ``Model3D.body_inertia`` is a view of these columns, not a second copy: 48 MB less for a 1e6-body chain)
R0 = 10  # joint frame relative to the parent frame, row-major 3x3 rotation (joint-to-parent) (9)
PP = 19  # parent point, parent frame [m] (3); ground: ground frame
CP = 22  # child point, child frame [m] (3)
A1 = 25  # first joint axis, unit, joint frame (3)
A2 = 28  # second axis of a universal joint, unit (3)
N_REAL = 31

# ---- workspace ws: (nbodies, W) float64, C order (a pass reads a body's fields together) -------------------------
WR = 0  # R = R0 R_j(q): child-to-parent rotation, row-major (9)
WT = 9  # r: child frame origin in the parent frame (3)
WC = 12  # bias acceleration c = S' v_j + v x S v_j (6); overwritten by the acceleration a in the last pass
WP = 18  # articulated bias force p^A (6); inverse dynamics: the body force f
WI = 24  # articulated (composite) inertia [[A, B], [B^T, C]] packed: A sym, B row-major, C sym (21 numbers)
# spatial velocity of the body (6), in the last 6 of WI's slots: no kernel needs a body's velocity and its inertia
# at once (forward dynamics forms the bias force from v_i in its kinematics pass, and its children's condensed
# inertias reach WI only in the tip-to-base pass, after the last read of v_i; the mass matrix and the implicit
# factorisation use no velocity; inverse dynamics, energy, poses and the loops' point kinematics no inertia): 6
# floats a body less (48 MB for a 1e6-body chain)
WV = WI + 15
# forward dynamics: 0.0 until the first child (in tip-to-base order) has stored its condensed inertia in this body's
# WI, 1.0 after; the kinematics pass clears it, so that WI is never zeroed nor filled with the body's own inertia in a
# pass of its own (``_kernels.spatial.tree.forward_dynamics``)
WCHILD = 45
W_SPATIAL = 46
# forward dynamics, a spherical joint once condensed (its articulated inertia is read no more): K = D^-1 B_J
# (row-major, 9), D^-1 u (3) and D^-1 (symmetric: xx, yy, zz, xy, xz, yz) in its slots
# (``_kernels.spatial.tree._spherical_condense``; ``_kernels.spatial.tree.unit_force_responses`` reuses them). Any other
# joint but a revolute one (below) keeps its articulated inertia I^A in WI after forward dynamics.
WK = WI
WU = WI + 9
WD = WI + 12
# forward dynamics, a revolute joint once condensed (``_kernels.spatial.tree._revolute_condense``): U D^-1 (6) and D^-1
# (1) in its slots, D^-1 u at WU (its S = (a; cp x a) is formed from A1 and CP where needed, not stored)
WUD = WI
WDINV = WI + 6
# packed symmetric 6x6 inertia: offsets in its 21 numbers (a symmetric 3x3 block as xx, yy, zz, xy, xz, yz)
PA = 0  # the angular block A (6)
PB = 6  # the coupling block B, row-major (9)
PC = 15  # the linear block C (6)
N_PACKED = 21
# S: (nbodies, MAX_NV used, 6) the joint's motion subspace columns, child coordinates; UD: U D^-1 (same shape);
# uD: D^-1 u (nbodies, MAX_NV used). Separate arrays, sized by the widest joint of the model. Forward dynamics
# reads none of them for a spherical or a revolute joint (S formed from the model, condensation kept in ws at WK,
# WU or WUD, WU): for a model of such joints only it is given them with 0 rows (``spatial.Workspace3D``).

# A joint whose articulated inertia S^T I^A S has a Cholesky pivot below this fraction of its scale
# (the same quadratic form with |I^A| and |S| entries) is singular: a point mass on a spherical joint, a massless tip.
SINGULAR_RTOL = 1e-12
# a quaternion farther than this from unit norm is refused (StateError); closer, it is normalised silently
QUATERNION_TOL = 1e-6

# ---- loops (``Model3D.add_loop``): loop_int (nloops, 4) int64, loop_real (nloops, 16) float64 -------------------
LOOP_SPHERICAL = 0  # the two points coincide: 3 equations (ground axes)
LOOP_REVOLUTE = 1  # spherical + the axes of a and b parallel: 5 equations
LOOP_DISTANCE = 2  # |p_a - p_b| = length: 1 equation
LOOP_CODES = {"spherical": LOOP_SPHERICAL, "revolute": LOOP_REVOLUTE, "distance": LOOP_DISTANCE}
LOOP_ROWS = {LOOP_SPHERICAL: 3, LOOP_REVOLUTE: 5, LOOP_DISTANCE: 1}
LKIND = 0  # loop kind code
LBODY_A = 1  # body a (-1: the ground)
LBODY_B = 2  # body b (-1: the ground)
LROW = 3  # first row of the loop's equations in phi
N_LOOP_INT = 4
LPA = 0  # point a in body a's frame (ground frame for the ground) [m] (3)
LPB = 3  # point b in body b's frame [m] (3)
LAXB = 6  # revolute: the axis fixed in body b, unit, b's frame (3)
LN1 = 9  # revolute: two unit vectors fixed in body a, orthogonal to its axis and to each other, a's frame (3, 3)
LN2 = 12
LLENGTH = 15  # distance: the length [m]
N_LOOP_REAL = 16
N_WEIGHTS = 12  # a row's weights: on v(P_a), omega_a, v(P_b), omega_b (ground axes)

# ---- force elements (``Model3D.add_spring_damper`` etc.; ``_kernels.spatial.elements``) -------------------------
# elem_int (nelements, 5) int64, elem_real (nelements, 10) float64
ELEM_SPRING_DAMPER = 0  # point-to-point spring-damper between two bodies (or a body and the ground)
ELEM_JOINT_SPRING_DAMPER = 1  # spring-damper on the coordinates of a body's joint
ELEM_FORCE = 2  # a force at a point of a body
ELEM_TORQUE = 3  # a pure torque on a body
ELEM_NAMES = {ELEM_SPRING_DAMPER: "spring_damper", ELEM_JOINT_SPRING_DAMPER: "joint_spring_damper",
              ELEM_FORCE: "force", ELEM_TORQUE: "torque"}
ETYPE = 0  # element type code (above)
EBODY_A = 1  # body a (-1: the ground); the body of a joint element, force or torque
EBODY_B = 2  # body b of a spring-damper (-1: the ground); -1 otherwise
EFRAME = 3  # force, torque: 0 ground axes, 1 body axes
ESLOT = 4  # force, torque: first slot of its time-varying value in the input vector u (3 slots), -1 if constant
N_EINT = 5
# spring-damper
EPA = 0  # point a in body a's frame (ground frame for the ground) [m] (3)
EPB = 3  # point b in body b's frame [m] (3)
EK = 6  # stiffness k [N/m]
EC = 7  # damping c [N s/m]
EREST = 8  # free length L0 [m]
EPRELOAD = 9  # preload: tension at the free length [N]
# joint spring-damper: per joint velocity d (Euclidean joints) or the one rotational spring of a spherical joint
EJK = 0  # stiffness per dof (3) [N m/rad or N/m]; spherical: EJK[0]
EJC = 3  # damping per dof (3); spherical: EJC[0]
EJREST = 6  # rest coordinate per dof (3); spherical: the rest quaternion (w, x, y, z) (4)
# force, torque
EPOINT = 0  # force: point of application in the body frame [m] (3)
EVALUE = 3  # the constant force [N] or torque [N m] (3), in the axes EFRAME says
N_EREAL = 10

# ---- contacts (``Model3D.add_ground``, ``add_drum``, ``add_contact``; ``_kernels.spatial.contact``) -------------
# contact_int (nrows, N_CINT) int64: the planar layout's columns (``_kernels.layout``: CBODY, COWNER, CSURFACE, CSHAPE)
# with SURFACE_PLANE (the half-space n . (x - point) <= 0, over a rectangle of the plane) or SURFACE_CYLINDER (the
# solid cylinder of a radius about an infinite axis), SHAPE_SPHERE (a point with a radius) or SHAPE_SEGMENT (a capsule)
SURFACE_CYLINDER = 1
SHAPE_SPHERE = 0
# contact_real (nrows, N_CREAL) float64; points relative to the body frame's origin, body frame (the ground's: ground)
CP0 = 0  # shape: the sphere's centre, or the segment's first end (3)
CP1 = 3  # shape: the segment's second end (3)
CRAD = 6  # shape radius [m] (>= 0)
CSP = 7  # surface: a point of the plane, or of the cylinder's axis, owner frame (3)
CSN = 10  # surface: the plane's unit outward normal, or the cylinder's unit axis, owner frame (3)
CST = 13  # plane: its first tangent t1 (unit, normal to n), owner frame (3); the second is t2 = n x t1
CLO = 16  # plane: its extent from the point, (lo, hi) along t1, then (lo, hi) along t2 [m] (4)
CCYL = 20  # cylinder: its radius [m]
CK = 21  # normal stiffness k [N / m^p]
CEXP = 22  # exponent p
CDAMP = 23  # dimensionless damping C of the Hunt-Crossley law k d^p (1 + (C / v_in) d'), set from e
CVMIN = 24  # the smallest impact speed the damping is scaled with [m/s]
CMU = 25  # Coulomb friction coefficient
CKT = 26  # tangential stick stiffness [N/m]
CCT = 27  # tangential damping [N s/m]
N_CREAL = 28
# the rows' state (nrows, N_CSTATE), carried after the work terms of the integrated state, changed between steps only
CS_ACTIVE = 0  # 1.0 while in contact (since the end of an accepted step), else 0.0
CS_VIN = 1  # the impact speed the normal damping is scaled with [m/s]
CS_BODY = 2  # the stick anchor's material point on the shape's body, body frame (3)
CS_SURF = 5  # the stick anchor's material point on the surface, owner frame (3)
N_CSTATE = 8
# per-row output of an evaluation (nrows, N_PER_CONTACT): normal force [N], friction force (3) [N], depth [m],
# contact point (3) [m], ground axes
PC_NORMAL = 0
PC_TANGENTIAL = 1
PC_DEPTH = 4
PC_POINT = 5
N_PER_CONTACT = 8

# ---- self-contact capsules (``Model3D.add_self_contact``; ``_kernels.spatial.pairs``) -----------------------------
# shape_int (nshapes, N_SINT) int64: the planar layout's columns (``_kernels.layout``: SBODY, SSET)
# shape_real (nshapes, N_SREAL) float64: the planar columns with 3D points, relative to the body frame's origin
SP0 = 0  # the axis' first end, body frame (3)
SP1 = 3  # the axis' second end, body frame (3); the first end again for a sphere
SRAD = 6  # radius [m] (> 0)
SK = 7  # stiffness k [N / m^p]
SEXP = 8  # exponent p
SDAMP = 9  # damping c = C / v_ref [s/m]
SMU = 10  # friction coefficient
SCT = 11  # tangential damping c_t [N s/m]
N_SREAL = 12
# boxes (nshapes, N_BOX) float64 scratch: bounding box (x lo, x hi, y lo, y hi, z lo, z hi), then the axis' ends in
# ground axes (3 + 3); the sweep sorts by column 0 as the planar one (``planar.pairs``)
N_BOX = 12
