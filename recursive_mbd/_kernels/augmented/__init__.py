"""The augmented absolute-coordinate kernels: joint and loop constraint rows and the tree-ordered elimination of
the KKT matrix in O(N) (``tree``, Baraff 1996), their one-signature short paths (``entry``) and the formulation's
system for the time loops (``system``).
"""
