"""Paths that are URLs, refused before any work when they cannot be right.

A path that starts as a URL but is not one is never taken for a local directory; an unknown
protocol names the known ones; ``storage_options`` must be a dict; a store that accepts a
connection and never answers fails within a bounded time, naming its endpoint.
"""
import contextlib
import os
import socket
import time

import numpy as np
import pytest

import mst_dist
from mst_dist import ConfigError
from mst_dist.io import urls
from support.needs import module


@pytest.fixture
def graph():
    return mst_dist.Graph.from_arrays(np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([3.0, 1.0, 2.0]))


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


MALFORMED = ["s3:/bucket/ck", "s3:bucket/ck", "gs:/bucket/ck", "memory:/ck", "abfs:container/ck"]


@pytest.mark.parametrize("path", MALFORMED)
@pytest.mark.parametrize("what", ["checkpoint", "output", "labels_output"])
def test_a_malformed_url_is_refused_and_no_directory_is_made(graph, in_tmp, path, what):
    with pytest.raises(ConfigError, match=r"looks like a URL but is not one") as e:
        mst_dist.minimum_spanning_forest(graph, "embedded", **{what: path})
    message = str(e.value)
    assert repr(path) in message and what in message
    proto = path.split(":", 1)[0]
    assert f"{proto}://bucket/path" in message and "s3, s3a" in message  # the known protocols are named
    assert e.value.key == what
    assert os.listdir(in_tmp) == []  # nothing made in the working directory


@pytest.mark.parametrize("path", MALFORMED)
def test_a_malformed_url_to_read_is_refused(in_tmp, path):
    with pytest.raises(ConfigError, match="looks like a URL") as e:
        mst_dist.read(path)
    assert repr(path) in str(e.value)


def test_a_local_path_with_a_colon_is_still_local(graph, in_tmp):
    """Spelled out as local (``./s3:/...``), or a colon that names no protocol: a directory as asked."""
    res = mst_dist.minimum_spanning_forest(graph, "embedded", checkpoint="./s3:/bucket/ck")
    assert res.edge_ids.tolist() == [1, 2]
    assert os.path.isdir(in_tmp / "s3:" / "bucket" / "ck")
    assert urls.check_path("notes:2024", "checkpoint") == "notes:2024"
    assert urls.check_path("C:/data/ck", "checkpoint") == "C:/data/ck"  # a Windows drive


@pytest.mark.parametrize("what", ["checkpoint", "output"])
def test_an_unknown_protocol_names_the_known_ones(graph, in_tmp, what):
    with pytest.raises(ConfigError, match=r"unknown protocol s4://; known protocols: .*\bgs\b.*\bs3\b"):
        mst_dist.minimum_spanning_forest(graph, "embedded", **{what: "s4://bucket/x"})
    with pytest.raises(ConfigError, match=r"'s4://bucket/g.txt': unknown protocol s4://"):
        mst_dist.read("s4://bucket/g.txt")
    assert os.listdir(in_tmp) == []


@pytest.mark.parametrize("options", ["key=a,secret=b", ["key", "a"], 3])
def test_storage_options_that_are_not_a_dict_are_refused(graph, options):
    with pytest.raises(ConfigError, match=f"storage_options.*got {type(options).__name__}"):
        mst_dist.minimum_spanning_forest(graph, "embedded", checkpoint="memory://ck/x", storage_options=options)
    with pytest.raises(ConfigError, match=f"storage_options.*got {type(options).__name__}"):
        mst_dist.read("memory://g/g.txt", storage_options=options)


@contextlib.contextmanager
def silent_endpoint():
    """An endpoint that accepts connections and never answers (what a dead proxy or a firewall does)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


@pytest.mark.parametrize("what", ["checkpoint", "output", "read"])
def test_a_store_that_never_answers_fails_in_bounded_time(graph, monkeypatch, what):
    module("s3fs", 'pip install "mst-dist[s3]" (s3fs)')
    monkeypatch.setattr(urls, "STORE_TIMEOUT", 3.0)
    with silent_endpoint() as endpoint:
        options = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-west-2"}}
        t0 = time.perf_counter()
        with pytest.raises(TimeoutError, match=rf"the store at {endpoint} gave no answer in 3 s") as e:
            if what == "read":
                mst_dist.read("s3://bucket/g.txt", storage_options=options)
            else:
                mst_dist.minimum_spanning_forest(graph, "embedded", storage_options=options,
                                                 **{what: "s3://bucket/x"})
        assert time.perf_counter() - t0 < 30
    assert "s3://bucket/" in str(e.value)


@contextlib.contextmanager
def moto_server_checking_keys():
    """A moto S3 server of its own process that checks access keys (none is known to it)."""
    import subprocess
    import sys

    module("moto.server", 'pip install "moto[server]"')
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="0")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_wrong_credentials_on_read_name_the_url_and_the_endpoint(graph):
    module("s3fs", 'pip install "mst-dist[s3]" (s3fs)')
    with moto_server_checking_keys() as endpoint:
        options = {"key": "wrong", "secret": "wrong",
                   "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-west-2"}}
        with pytest.raises(PermissionError, match=rf"'s3://graphs/g.txt': the store at {endpoint} refused access "
                                                  r"\(.*\); check the credentials"):
            mst_dist.read("s3://graphs/g.txt", storage_options=options)
        with pytest.raises(PermissionError, match=r"checkpoint 's3://graphs/ck': cannot write under it"):
            mst_dist.minimum_spanning_forest(graph, "embedded", checkpoint="s3://graphs/ck", storage_options=options)
