"""Display objects: hold computed arrays, draw on a given matplotlib Axes, never write files.

matplotlib is imported lazily, inside ``plot``; reports pass their own figures and save them.
"""

from .displays import CMCDisplay, DETDisplay, ECEDisplay, LIDCCDFDisplay
from .profile import ProfileDisplay

__all__ = ["DETDisplay", "ECEDisplay", "CMCDisplay", "LIDCCDFDisplay", "ProfileDisplay"]
