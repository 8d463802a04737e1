"""Joint types and their codes.

A joint connects a parent frame P (a body, or the ground) to a child frame C. With the joint coordinate(s) zero,
the child point (child frame) coincides with the parent point (parent frame) and the child frame is rotated by
``angle`` relative to the parent frame. The joint kinematics used by the kernels (the B, G, H pieces of the
relative-coordinate lecture, eqs. 3.18-3.19) are written out in ``recursive_mbd._kernels.planar.tree.kinematics_pass``:

============  ====  ==========================================================================================
joint         dof   coordinates
============  ====  ==========================================================================================
revolute      1     q: rotation of C relative to P [rad]; theta_C = theta_P + angle + q
prismatic     1     q: slide along the unit ``axis`` (parent frame) [m]; child point = parent point + q axis
fixed         0     (none): C rigidly attached to P
planar        3     (x, y, phi): child point = parent point + (x, y) in the parent frame [m];
                    theta_C = theta_P + angle + phi [rad]
============  ====  ==========================================================================================
"""

from .._kernels.joint_types import FIXED, JOINT_CODES, JOINT_DOF, JOINT_NAMES, PLANAR, PRISMATIC, REVOLUTE

__all__ = ["FIXED", "JOINT_CODES", "JOINT_DOF", "JOINT_NAMES", "PLANAR", "PRISMATIC", "REVOLUTE"]
