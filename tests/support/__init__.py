"""Helpers shared by the test modules (on pytest's ``pythonpath``: ``from support import ...``)."""
import os

#: The repository's root (configs/, workers/, cluster/ live there).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The small input files of tests/data.
DATA = os.path.join(ROOT, "tests", "data")
