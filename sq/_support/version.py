"""sq's version: the one definition (the face, reports and the run cache read it)."""
__version__ = "0.1.0"
