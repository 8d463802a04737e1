"""Joint type codes, the numbers the kernels dispatch on (what each joint is: ``rm.joints``)."""


REVOLUTE = 0
PRISMATIC = 1
FIXED = 2
PLANAR = 3

JOINT_CODES = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "fixed": FIXED, "planar": PLANAR}
JOINT_NAMES = {code: name for name, code in JOINT_CODES.items()}
JOINT_DOF = {REVOLUTE: 1, PRISMATIC: 1, FIXED: 0, PLANAR: 3}
