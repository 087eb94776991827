import gc

import pytest


@pytest.fixture(autouse=True)
def harness_collects_its_own_objects():
    """The objects the test process made before the test set aside (``gc.freeze``) while it runs.

    The benchmark harness collects garbage between methods (``gc.collect()``, dozens of times a
    run), which walks every tracked object of the process: in a test process that is the whole
    suite's heap so far (imported libraries, earlier tests' leftovers), not the benchmark's.  Set
    aside, they are not walked; the objects the test makes are collected as in a benchmark run.
    """
    gc.freeze()
    yield
    gc.unfreeze()
