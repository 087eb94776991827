"""Fixtures of the command-line tests."""
import logging

import pytest


@pytest.fixture
def restore_logging():
    """main() configures logging; put the loggers it touches back."""
    names = ("mst_dist", "distributed", "bokeh", "tornado")
    saved = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).propagate,
                 logging.getLogger(n).level) for n in names}
    yield
    for n, (handlers, propagate, level) in saved.items():
        lg = logging.getLogger(n)
        lg.handlers[:] = handlers
        lg.propagate = propagate
        lg.setLevel(level)
