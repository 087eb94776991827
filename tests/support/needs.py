"""What a test needs from the machine: skipped without it, except under ``CI``, where it fails.

``.ci/run`` installs every package and system tool the suite uses (only a GPU is
missing there), so a test that would skip in CI is a broken CI, not a pass: every
skip of a non-GPU test goes through :func:`unavailable`.
"""
import importlib
import os
import shutil

import pytest


def in_ci():
    """Whether the environment variable ``CI`` is set (to anything but empty, ``0`` or ``false``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason, module_level=False):
    """Skip the calling test (or module) because of ``reason``; under ``CI``, fail with it instead.

    Parameters
    ----------
    reason : str
        What is missing and how a user gets it (``apt-get install ...``, ``pip install ...``).
    module_level : bool
        Called at a module's top level (a skip there needs pytest's permission).
    """
    if in_ci():
        pytest.fail(f"{reason} [CI is set: .ci/run installs everything the tests use, so this fails "
                    f"instead of skipping]", pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)


def module(name, install, module_level=False):
    """Import module ``name``; when it is missing, :func:`unavailable` with ``install`` as the remedy."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        unavailable(f"{name} is not importable ({e}): {install}", module_level=module_level)


def program(name, install):
    """The path of executable ``name`` on PATH; when it is missing, :func:`unavailable` with ``install``."""
    path = shutil.which(name)
    if path is None:
        unavailable(f"the `{name}` command is not on PATH: {install}")
    return path
