"""mst_dist.environment: versions, the machine description and optional imports."""
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import mst_dist
from mst_dist import environment
from support import ROOT, needs


def test_versions_reports_installed_packages_only(monkeypatch):
    monkeypatch.setitem(environment.PACKAGES, "not_a_package", ("not-a-package-mst-dist",))
    v = environment.versions()
    assert v["mst_dist"] == mst_dist.__version__
    assert v["python"] == platform.python_version()
    assert v["numpy"] == np.__version__
    assert "not_a_package" not in v
    assert v["numba_threads"] >= 1


def test_versions_gpu_imports_the_gpu_modules(monkeypatch):
    monkeypatch.setitem(sys.modules, "pylibcugraph", None)  # as if not installed
    v = environment.versions(gpu=True)
    assert set(environment.GPU_MODULES) <= set(v)
    assert v["pylibcugraph"] is None


def test_versions_names_the_checkouts_commit():
    if not os.path.exists(os.path.join(ROOT, ".git")):
        needs.unavailable("the tests do not run from a git checkout (an unpacked source archive)")
    needs.program("git", "apt-get install git")
    def head():
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()

    before = head()
    v = environment.versions()
    assert v["git_commit"] in {before, head()} and isinstance(v["git_dirty"], bool)


def test_machine_info():
    info = environment.machine_info()
    assert info["cpu_count"] == os.cpu_count()
    assert info["python"] == platform.python_version()
    assert info["cpu_model"]
    la = info["loadavg_start"]
    assert la is None or (len(la) == 3 and all(x >= 0 for x in la))
    gpu = environment.gpu_info()
    assert gpu == {} or gpu["devices"]


def test_optional_import_names_what_to_install(monkeypatch):
    assert environment.optional_import("json").__name__ == "json"
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)
    with pytest.raises(ImportError, match=r"^cluster kind 'slurm' needs dask-jobqueue, which is not installed "
                                          r"\(.*\); install it with: pip install 'mst-dist\[hpc\]'$"):
        environment.optional_import("dask_jobqueue", extra="hpc", what="cluster kind 'slurm'")
    with pytest.raises(ImportError, match=r"^this needs no-such-mod, .*pip install no-such-mod$"):
        environment.optional_import("no_such_mod.sub")
    with pytest.raises(ImportError, match=r"pip install 'dask\[dataframe\]'$"):
        environment.optional_import("dask.no_such_part", package="dask[dataframe]")
