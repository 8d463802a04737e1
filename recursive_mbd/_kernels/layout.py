"""Column layout of the packed arrays that the kernels take.

The per-body model data are packed into two 2-D arrays so that a kernel call passes few arguments (numba's
dispatch costs about 50 ns per argument, which matters at the 3 us per-call budget of small models).
``Model`` exposes each column under its own ``body_<attribute>`` / ``joint_<attribute>`` name as a view.

All these arrays, and the workspace, are column-major (Fortran order): each field is a dense (nbodies,) stream,
so a pass reads and writes only the fields it uses, sequentially, at full memory bandwidth. With row-major rows
a pass touched one cache line out of each row, a strided pattern that cost 2.5x more at 1e6 bodies.

A one-body model's (1, k) arrays are both C- and F-contiguous, and numba types such an array as C: every kernel a
one-body model reaches compiles a specialisation of its own. No (1, k) ndarray types as F. Typing every model's
arrays as strided (A, views of one row more) would give all models one specialisation, but the recursive passes
then ran 2.4x slower at 1e6 bodies on a quiet machine (benchmarks/layout_any.py); an ndarray subclass that numba
types as F is not safe either (numba caches the type of a tuple by a fingerprint that holds the array's
contiguity flags, not its class, so a tuple holding a plain C array would then be typed F).

numba bakes these constants into the cached machine code of the kernels that import them, and its cache does not
notice edits to this file: after changing a number here, delete the ``__pycache__`` folders of ``_kernels`` (an
installed upgrade rewrites every file, which does invalidate the cache).

Status codes returned by kernels: 0 is success; otherwise ``kind | (index << 4)`` with ``kind`` one of the
``STATUS_*`` codes below and ``index`` the body (or coordinate) concerned; ``decode_status`` splits them.
"""

# ---- body_int: (nbodies, 5) int64 -------------------------------------------------------------------------------
PARENT = 0  # parent body index, -1 for the ground; parents come before children
JTYPE = 1  # joint type code (recursive_mbd.model.joints)
QIDX = 2  # index of the joint's first coordinate in q
NDOF = 3  # number of joint coordinates (0, 1 or 3)
FLAGS = 4  # bit set below: lets the passes carry a parent's data in registers and skip initialisation sweeps
N_INT = 5
NEXT_IS_CHILD = 1  # body i + 1 is a child of body i: its data pass between them in registers (serial chains)
ROW_CHILDREN = 2  # some child other than body i + 1: orientation and condensed sums go through the workspace row
FIRST_ROW_CHILD = 4  # the highest-index of its parent's row children: the first to condense onto the row (sets it)
ALL_REVOLUTE = 8  # on body 0 only, a property of the model: every joint is revolute (so QIDX = body index), and
#                   forward dynamics takes its specialised passes (no joint-type branches or loads per body)
SERIAL_REVOLUTE = 16  # on body 0 only, a property of the model: ALL_REVOLUTE and the parent of body i is i - 1 (a
#                       serial chain): forward dynamics takes passes with no parent or flag loads per body

# ---- body_real: (nbodies, 12) float64 ---------------------------------------------------------------------------
MASS = 0  # mass m [kg]
INERTIA = 1  # rotational inertia J about the centre of mass [kg m^2]
COMX = 2  # centre of mass in the body frame [m] (2 columns)
ANGLE = 4  # joint angle offset: child frame relative to parent frame at zero joint coordinate [rad]
PPX = 5  # parent point minus parent centre of mass, parent frame [m] (2 columns); ground: the parent point
COX = 7  # child centre of mass minus child point, child frame [m] (2 columns)
AXX = 9  # prismatic axis, unit vector in the parent frame (2 columns)
N_REAL = 11

# ---- workspace: (nbodies, W) float64, column-major, one column per field ----------------------------------------
# written by pass 1, read by passes 2 and 3 -- joint kinematics (the relative-coordinate lecture, eqs. 3.18-3.19)
RX = 0  # r = c_child - c_parent, ground frame (2 columns): defines B (3.18b)
HX = 2  # H, the velocity-product acceleration (3.19b); its angular component is always 0 (2 columns)
GX = 4  # linear part of G of a 1-dof joint (2 columns; the angular part is 1 for revolute, 0 for prismatic);
#         for planar joints the linear part of the rotational column
TH = 6  # absolute angle theta
DINV = 7  # unused by forward_dynamics since U1 and UU hold the gains divided by D = G^T M^ G
# written by pass 2, read by pass 3 -- joint elimination (eq. 3.23) and accelerations (eq. 3.19a)
U1 = 8  # U / D = M^ G / (G^T M^ G) of a 1-dof joint (3 columns)
UU = 11  # u / D, u = tau + G^T (Q^ - M^ H), of a 1-dof joint
ACC = 12  # acceleration of the centre of mass and angular acceleration (3 columns)
# orientation and condensed mass and force, read by children that are not the next body (and by kernels that ask
# for every body's orientation)
CS = 15  # cos(theta)
SN = 16  # sin(theta)
OM = 17  # angular velocity omega
IA = 18  # articulated inertia M^ (symmetric 3x3 stored as a, b, c, d, e, f = 00, 01, 02, 11, 12, 22)
QA = 24  # condensed force Q^ (3 columns)
W_TREE = 27
# extra columns for planar (3-dof) joints, only allocated when the model has one
PG = 27  # G (3x3, row-major)
PU = 36  # U = M^ G (3x3, row-major)
PDINV = 45  # (G^T M^ G)^-1 (3x3, row-major)
PUU = 54  # u (3)
W_PLANAR = 57

# ---- status codes -----------------------------------------------------------------------------------------------
STATUS_OK = 0
STATUS_NONFINITE_Q = 1
STATUS_NONFINITE_QD = 2
STATUS_NONFINITE_TAU = 3
STATUS_SINGULAR = 4  # articulated inertia of a joint singular; index = body
STATUS_LOOP_DEGENERATE = 5  # a distance loop whose two points coincide (no direction); index = loop, or:
# STATUS_LOOP_DEGENERATE's index, plus the row of J that vanished (or plus m for rows that became dependent), when
# a time loop's loop equations lose rank on the way (a change point: a singular position of the mechanism that the
# spatial loop layer cannot follow)
LOOP_CHANGE_POINT = 1 << 30
# STATUS_NONFINITE_STATE's index, plus the contact row, when a row went deeper than its shape's radius in a step (the
# step did not resolve the contact: its force would have passed the shape through the surface)
CONTACT_TOO_DEEP = 1 << 30
# STATUS_NONFINITE_STATE's index, plus the contact row, when a fixed-step run's step did not resolve an impact (the
# row's compression took fewer steps than ``contact.MIN_IMPACT_STEPS``: its rebound would be wrong)
CONTACT_UNRESOLVED_IMPACT = 1 << 29
STATUS_STEP_UNDERFLOW = 6
STATUS_MAX_STEPS = 7  # the run reached a limit of its size; index: LIMIT_STEPS (max_steps) or LIMIT_OUTPUT
LIMIT_STEPS = 0  # more steps than max_steps
LIMIT_OUTPUT = 1  # the output buffers are full at the run's output budget (``integrators._store``)
STATUS_OUTPUT_FULL = STATUS_MAX_STEPS | (LIMIT_OUTPUT << 4)
STATUS_NONFINITE_STATE = 8
STATUS_NO_CONVERGENCE = 9  # an implicit step's iteration did not converge
STATUS_EVENT = 10  # not a failure: a terminal event stopped the run
STATUS_INPUT_FAILED = 11  # a user function (tau, element, driver, event) failed; index: an INPUT_* reason below
STATUS_INTERRUPTED = 12  # the run was interrupted (SIGINT, Ctrl-C) at the caller's request
STATUS_TIME_LIMIT = 13  # the run reached its wall-clock limit (max_wall_time)
# reasons of STATUS_INPUT_FAILED (its index): the Python side keeps the exception of INPUT_RAISED
INPUT_RAISED = 0  # a Python function raised (or returned a non-finite value or the wrong shape)
INPUT_NONFINITE = 1  # a compiled function returned a non-finite value
INPUT_SHAPE = 2  # a compiled function returned the wrong number of values
INPUT_EVENT_NONFINITE = 3  # an ensemble's compiled event function returned a non-finite value
INPUT_COMPILED_RAISED = 4  # a compiled tau function raised (numba passes no exception out of compiled callbacks)
INPUT_EVENT_RAISED = 5  # an ensemble's compiled event function raised
STATUS_LOOPS_OPEN = 14  # a projection could not close the loops (e.g. driven past a lock); index = loop
# finite inputs gave a non-finite output (overflow, e.g. qd ~ 1e155 squared); index = the output entry. 15, the
# last 4-bit code
STATUS_OVERFLOW = 15


def decode_status(status):
    """Split a kernel status into (kind, index)."""
    return status & 15, status >> 4

# ---- elem_int: (nelements, 5) int64 ------------------------------------------------------------------------------
ETYPE = 0  # element type code (below)
EBODY_A = 1  # body index (-1 for the ground); the body of a joint element, force or torque
EBODY_B = 2  # second body of a spring-damper (-1 for the ground)
ESLOT = 3  # index of the element's time-varying value in the input vector u, -1 if constant
EFRAME = 4  # force components given in: 0 the ground frame, 1 the body frame
N_EINT = 5
SPRING_DAMPER = 0
JOINT_SPRING_DAMPER = 1
POINT_FORCE = 2
BODY_TORQUE = 3

# ---- elem_real: (nelements, 7) float64 ---------------------------------------------------------------------------
EPAX = 0  # attachment point on body a relative to its centre of mass, body frame (ground: ground frame) (2 cols)
EPBX = 2  # spring-damper: point on body b, likewise (2 columns); point force: the force (Fx, Fy); torque: EPBX
EK = 4  # stiffness [N/m or N m/rad]
EC = 5  # damping [N s/m or N m s/rad]
EREST = 6  # rest length [m] or rest joint coordinate
N_EREAL = 7

# ---- loop_int: (nloops, 4) int64 -- closing constraints of cut joints ------------------------------------------
LKIND = 0  # loop kind code (below)
LBODY_A = 1  # body index (-1 for the ground)
LBODY_B = 2  # second body (-1 for the ground)
LROW = 3  # index of the loop's first equation in the constraint vector
N_LINT = 4
LOOP_REVOLUTE = 0  # point a = point b (2 equations)
LOOP_PRISMATIC = 1  # point a on the line through point b along the axis (b frame); relative angle fixed (2)
LOOP_FIXED = 2  # points coincide, relative angle fixed (3)
LOOP_DISTANCE = 3  # |point a - point b| = length, a massless link (1)
LOOP_ROWS = (2, 2, 3, 1)

# ---- loop_real: (nloops, 8) float64 ------------------------------------------------------------------------------
LPAX = 0  # point on body a relative to its centre of mass, body frame (ground: ground frame) (2 columns)
LPBX = 2  # point on body b likewise (2 columns)
LAXX = 4  # prismatic: unit axis in body b's frame (ground: ground frame) (2 columns)
LANGLE = 6  # prismatic, fixed: theta_a - theta_b [rad]
LLENGTH = 7  # distance: the link length [m]
N_LREAL = 8

# ---- contact_int: (nrows, 4) int64 -- contact rows: one shape point of a body against one surface -----------------
CBODY = 0  # the body that carries the shape (>= 0)
COWNER = 1  # the body that carries the surface (-1: the ground)
CSURFACE = 2  # surface kind: SURFACE_PLANE or SURFACE_CIRCLE
CSHAPE = 3  # shape kind: SHAPE_CIRCLE (a point with a radius, 0 for a bare point) or SHAPE_SEGMENT (a capsule)
N_CINT = 4
SURFACE_PLANE = 0  # the half-plane n . (x - point) <= 0 is solid, over the tangent extent [lo, hi] only
SURFACE_CIRCLE = 1  # the disc |x - centre| <= radius is solid (a drum, a pulley)
SHAPE_CIRCLE = 0
SHAPE_SEGMENT = 1

# ---- contact_real: (nrows, 18) float64 ------------------------------------------------------------------------------
CP0 = 0  # shape: the circle's centre, or the segment's first end, relative to the body's centre of mass, body frame
CP1 = 2  # shape: the segment's second end (2 columns)
CRAD = 4  # shape radius [m] (>= 0)
CSP = 5  # surface point (plane) or centre (circle) relative to the owner's centre of mass, owner frame (ground:
#          ground frame) (2 columns)
CSN = 7  # plane: unit outward normal in the owner frame (2 columns); circle: CSN is the radius
CLO = 9  # plane: extent along the tangent t = (n_y, -n_x) from the surface point, [lo, hi] [m] (2 columns)
CK = 11  # normal stiffness k [N / m^p]
CEXP = 12  # exponent p
CDAMP = 13  # dimensionless damping C = c v_impact of the Hunt-Crossley law k d^p (1 + c d'), set from e
CVMIN = 14  # the smallest impact speed the damping is scaled with [m/s]
CMU = 15  # Coulomb friction coefficient
CKT = 16  # tangential stick stiffness [N/m]
CCT = 17  # tangential damping [N s/m]
N_CREAL = 18

# ---- contact state: (nrows, 6) float64, carried at the end of the integrated state y, changed only between steps --
CS_ACTIVE = 0  # 1.0 while in contact (since the end of an accepted step), else 0.0
CS_VIN = 1  # the impact speed the normal damping is scaled with [m/s]
CS_BODY = 2  # the stick anchor's material point on the body, relative to its centre of mass, body frame (2 columns)
CS_SURF = 4  # the stick anchor's material point on the surface, owner frame (2 columns)
N_CSTATE = 6

# ---- shape_int: (nshapes, 2) int64; shape_real: (nshapes, 10) float64 -- self-contact capsules (planar.pairs) -
SBODY = 0  # the body that carries the capsule
SSET = 1  # the self-contact set: capsules of one set touch each other, not another set's
N_SINT = 2
SP0 = 0  # the axis' ends relative to the body's centre of mass, body frame (2 + 2 columns)
SP1 = 2
SRAD = 4  # radius [m] (> 0)
SK = 5  # stiffness k [N / m^p]
SEXP = 6  # exponent p
SDAMP = 7  # damping c = C / v_ref [s/m]
SMU = 8  # friction coefficient
SCT = 9  # tangential damping c_t [N s/m]
N_SREAL = 10
# ---- boxes: (nshapes, 8) float64 scratch: bounding box (x lo, x hi, y lo, y hi), the axis' ends in the ground frame
N_BOX = 8
