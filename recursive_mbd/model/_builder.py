"""What the planar ``Model`` and the spatial ``Model3D`` expose alike about what was added to them: the force
elements and the loops by name and count, and the freezing on first use. A base class of both (each keeps its own
``_elements``, ``_element_names``, ``_loops``, ``_loop_names`` (name -> index, in index order), ``_compiled`` and
``compile``)."""


class TreeBuilder:
    """Accessors shared by ``Model`` and ``Model3D`` (see the module docstring)."""

    @property
    def element_names(self):
        """Force element names in index order, a tuple."""
        return tuple(self._element_names)

    @property
    def nelements(self):
        """Number of force elements."""
        return len(self._elements)

    @property
    def loop_names(self):
        """Loop names in index order, a tuple."""
        return tuple(self._loop_names)

    @property
    def nloops(self):
        """Number of loops."""
        return len(self._loops)

    @property
    def compiled(self):
        """True once the model is frozen (after ``compile()`` or the first dynamics call)."""
        return self._compiled

    def _require_compiled(self):
        if not self._compiled:
            self.compile()
        return self
