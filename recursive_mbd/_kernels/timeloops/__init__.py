"""The compiled time loops (``integrators``: Runge-Kutta fixed and adaptive, dense output, events, output budget)
and what the Newton-iteration loops share (``newton``). They know a formulation only through the interface in
``formulation`` (rhs, project, projects) that each formulation's ``system`` implements, never by name.
"""
