"""TLS: a run config's ``cluster.security`` and the ``--tls-*`` flags, mapped onto distributed's Security.

Certificates are made by the tests (:mod:`support.tls`); a scheduler and
workers speaking ``tls://`` compute a forest, and a plain ``tcp://`` client is
refused.
"""
import json

import numpy as np
import pytest

import mst_dist
from mst_dist.cli import commands as cli
from mst_dist.config import ConfigError
from mst_dist.deploy import open_cluster, security_of
from support import needs
from support.cli import cluster_of
from support.oracle import assert_forest_file, assert_summary, expected
from support.naive import kruskal

needs.module("cryptography", "the tests make their certificates with it: pip install 'mst-dist[test]'",
             module_level=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from support.tls import make_certs

    return make_certs(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def other_certs(tmp_path_factory):
    """Certificates of another, unrelated authority."""
    from support.tls import make_certs

    return make_certs(tmp_path_factory.mktemp("tls-other"), name="someone else")


def expected_ids(g):
    exp, _ = kruskal(g.n_vertices, *g.to_arrays())
    return exp


# -- the section and its checks --------------------------------------------------------------------


def test_security_maps_onto_distributed_security(certs):
    sec = security_of(certs)
    assert sec.require_encryption is True  # the default with certificates
    assert sec.tls_ca_file == certs["ca_file"]
    for role in ("client", "scheduler", "worker"):
        assert getattr(sec, f"tls_{role}_cert") == certs["cert"]
        assert getattr(sec, f"tls_{role}_key") == certs["key"]
        assert sec.get_connection_args(role)["ssl_context"] is not None
    assert security_of({**certs, "require_encryption": False}).require_encryption is False
    assert security_of(None) is None and security_of({}) is None
    assert security_of({"require_encryption": False}) is None


@pytest.mark.parametrize("kind", ["local", "address", "slurm", "mpi"])
def test_every_kind_takes_a_security_section(certs, kind):
    extra = {"address": {"address": "tls://127.0.0.1:1"}, "slurm": {"cores": 1, "memory": "1GB"}}.get(kind, {})
    c = cluster_of(kind=kind, security=certs, **extra)
    assert c["security"] == {**certs, "require_encryption": None}
    assert "security" not in cluster_of(kind=kind, **extra) if kind != "address" else True


@pytest.mark.parametrize("section, message", [
    ({"cert": "CERT"}, r"^cluster.security: TLS needs ca_file and cert .*; ca_file missing"),
    ({"ca_file": "CA"}, r"^cluster.security: TLS needs ca_file and cert .*; cert missing"),
    ({"ca_file": "/no/such/ca.pem", "cert": "CERT"}, r"^cluster.security.ca_file: no such file: '/no/such/ca.pem'"),
    ({"ca_file": "CA", "cert": "CERT", "key": "/no/key.pem"}, r"^cluster.security.key: no such file"),
    ({"require_encryption": "yes"}, r"^cluster.security.require_encryption: expected bool or null, got str"),
    ({"certificate": "CERT"}, r"^cluster.security.certificate: unknown key; allowed: ca_file, cert, key, "
                              r"require_encryption"),
])
def test_bad_security_sections_name_the_key(certs, section, message):
    section = {k: certs["ca_file"] if v == "CA" else certs["cert"] if v == "CERT" else v for k, v in section.items()}
    with pytest.raises(ConfigError, match=message):
        cluster_of(kind="address", address="tls://127.0.0.1:1", security=section)


def test_unusable_certificates_name_the_files(certs, other_certs):
    """A key that is not the certificate's, or a certificate without its key: the files named, no ssl traceback."""
    with pytest.raises(ConfigError, match=r"^cluster.security: cannot use certificate '.*cert.pem' with key "
                                          r"'.*key.pem' and CA '.*ca.pem': .*the key the certificate's own"):
        cluster_of(kind="address", address="tls://127.0.0.1:1", security={**certs, "key": other_certs["key"]})
    with pytest.raises(ConfigError, match=r"^cluster.security: cannot use certificate '.*cert.pem' \(holding "
                                          r"its key\)"):
        cluster_of(kind="address", address="tls://127.0.0.1:1", security={**certs, "key": None})


def test_require_encryption_without_certificates(certs):
    # local kinds make temporary certificates; a cluster elsewhere needs the real ones
    assert cluster_of(kind="local", security={"require_encryption": True})["security"]["require_encryption"]
    with pytest.raises(ConfigError, match=r"^cluster.security.require_encryption: needs certificates"):
        cluster_of(kind="mpi", security={"require_encryption": True})


def test_tls_address_needs_certificates_before_connecting(certs):
    """Dask alone: ``TypeError: TLS expects a ssl_context``; here a config error naming what to give."""
    with pytest.raises(ConfigError, match=r"^cluster.address: 'tls://127.0.0.1:1' speaks TLS: give the "
                                          r"certificates \(cluster.security: ca_file, cert, key; or --tls-ca-file"):
        cluster_of(kind="address", address="tls://127.0.0.1:1")
    with pytest.raises(ConfigError, match=r"^cluster.address: 'tcp://127.0.0.1:1' is not encrypted and "
                                          r"security.require_encryption is on"):
        cluster_of(kind="address", address="tcp://127.0.0.1:1", security=certs)
    # Dask's own settings count as certificates
    import dask.config

    with dask.config.set({"distributed.comm.tls.ca-file": certs["ca_file"],
                          "distributed.comm.tls.client.cert": certs["cert"],
                          "distributed.comm.tls.client.key": certs["key"]}):
        assert cluster_of(kind="address", address="tls://127.0.0.1:1")["address"] == "tls://127.0.0.1:1"


def test_flags_fill_the_section(certs, tmp_path):
    from mst_dist.cli.parser import build_parser, run_config_from_args

    (tmp_path / "c.yaml").write_text("graph: {generate: {kind: grid, rows: 3, cols: 3}}\n"
                                     f"cluster: {{kind: address, address: 'tls://127.0.0.1:1', "
                                     f"security: {{ca_file: '{certs['ca_file']}'}}}}\n")
    args = build_parser().parse_args(["submit", str(tmp_path / "c.yaml"), "--tls-cert", certs["cert"],
                                      "--tls-key", certs["key"], "--no-require-encryption"])
    sec = run_config_from_args(args)["cluster"]["security"]
    assert sec == {**certs, "require_encryption": False}  # the config's CA, the flags' certificate
    # --scheduler replaces the config's address, not its security section
    args = build_parser().parse_args(["submit", str(tmp_path / "c.yaml"), "--scheduler", "tls://127.0.0.1:2",
                                      "--tls-cert", certs["cert"], "--tls-key", certs["key"]])
    c = run_config_from_args(args)["cluster"]
    assert c["address"] == "tls://127.0.0.1:2" and c["security"]["ca_file"] == certs["ca_file"]


def test_jobqueue_workers_get_the_certificates(certs, tmp_path):
    """dask-jobqueue's scheduler speaks tls:// and the job script hands the workers the same files."""
    needs.module("dask_jobqueue", "pip install 'mst-dist[hpc]'")
    from mst_dist.deploy.jobqueue import job_cluster

    cfg = cluster_of(kind="slurm", cores=1, memory="1GB", processes=1, security=certs, warmup=False)
    with job_cluster(cfg) as cluster:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:") or \
            cluster.scheduler_address.startswith("tls://")
        script = cluster.job_script()
    assert f"--tls-ca-file {certs['ca_file']}" in script
    assert f"--tls-cert {certs['cert']}" in script and f"--tls-key {certs['key']}" in script
    assert "--protocol tls://" in script


# -- for real: a TLS cluster --------------------------------------------------------------------------


@pytest.mark.slow
def test_tls_cluster_runs_a_forest_and_refuses_plain_tcp(certs, other_certs):
    """Kind local with worker processes and cluster.security: everything speaks tls://, the forest is
    Kruskal's, and a client without TLS, or with certificates of another authority, is refused."""
    from distributed import Client

    # warmup=False: the workers load the kernels as the run needs them (the preload is tested in test_local)
    cfg = cluster_of(kind="local", processes=True, n_workers=2, threads_per_worker=1, memory_limit="1GiB",
                     dashboard_address=None, security=certs, warmup=False)
    g = mst_dist.generate("erdos_renyi", n=3000, m=12000, seed=5)
    with open_cluster(cfg) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 2 and all(w.startswith("tls://127.0.0.1:") for w in workers)
        res = mst_dist.minimum_spanning_forest(g, client, local_finish=0, partitions=4)
        np.testing.assert_array_equal(res.edge_ids, expected_ids(g))
        # plain TCP to the TLS port: the handshake never completes
        with pytest.raises((OSError, TimeoutError)):
            Client(address.replace("tls://", "tcp://"), timeout=3)
        # TLS, but a certificate another authority signed: refused by the scheduler
        with pytest.raises((OSError, TimeoutError)):
            Client(address, security=security_of(other_certs), timeout=3)
        # the right certificates: welcome
        with Client(address, security=security_of(certs), timeout=10) as again:
            assert len(again.scheduler_info()["workers"]) == 2


@pytest.mark.slow
def test_temporary_certificates_for_local_require_encryption():
    """require_encryption alone on a local cluster: Dask's temporary certificates, tls:// throughout."""
    cfg = cluster_of(kind="local", processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None,
                     security={"require_encryption": True})
    with open_cluster(cfg) as client:
        assert client.scheduler.address.startswith("tls://127.0.0.1:")
        g = mst_dist.generate("grid", rows=20, cols=20, seed=1)
        res = mst_dist.minimum_spanning_forest(g, client)
        np.testing.assert_array_equal(res.edge_ids, expected_ids(g))


@pytest.fixture
def tls_scheduler(certs):
    """A TLS scheduler on 127.0.0.1 with one in-process worker, as a site would run one."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                      dashboard_address=None, security=security_of(certs)) as cluster:
        yield cluster.scheduler_address


@pytest.mark.slow
def test_submit_over_tls(certs, tls_scheduler, capsys, tmp_path):
    """mst-dist submit with --tls-* flags runs on the TLS scheduler; without them a one-line error, exit 2."""
    gen = ["--generate", "erdos_renyi", "--n", "2000", "--m", "8000", "--seed", "3"]
    tls = ["--tls-ca-file", certs["ca_file"], "--tls-cert", certs["cert"], "--tls-key", certs["key"]]
    assert cli.main(["submit", "--scheduler", tls_scheduler, *gen, *tls, "--json", "-q",
                     "-o", str(tmp_path / "f.npz")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["cluster"]["scheduler"] == tls_scheduler and rep["cluster"]["n_workers"] == 1
    exp = expected(mst_dist.generate("erdos_renyi", n=2000, m=8000, seed=3))
    assert_summary(rep["summary"], exp)
    assert_forest_file(tmp_path / "f.npz", exp)
    assert "security" in rep["config"]["cluster"]

    assert cli.main(["submit", "--scheduler", tls_scheduler, *gen, "-q"]) == 2
    err = capsys.readouterr().err
    assert "speaks TLS: give the certificates" in err and "--tls-ca-file" in err
    assert "TypeError" not in err and "Traceback" not in err
    plain = tls_scheduler.replace("tls://", "tcp://")
    assert cli.main(["submit", "--scheduler", plain, *gen, *tls, "-q"]) == 2
    err = capsys.readouterr().err
    assert "is not encrypted and security.require_encryption is on" in err and "Traceback" not in err


@pytest.mark.slow
def test_generate_over_tls(certs, tls_scheduler, capsys, tmp_path):
    """mst-dist generate --scheduler tls://... with --tls-* flags writes on the TLS cluster's workers;
    without them a one-line error, exit 2."""
    out = tmp_path / "g.txt"
    tls = ["--tls-ca-file", certs["ca_file"], "--tls-cert", certs["cert"], "--tls-key", certs["key"]]
    gen = ["generate", "grid", "--rows", "10", "--cols", "10", "-o", str(out), "--scheduler", tls_scheduler]
    assert cli.main([*gen, *tls]) == 0
    assert mst_dist.read(str(out)).n_edges == mst_dist.generate("grid", rows=10, cols=10).n_edges
    out.unlink()
    assert cli.main(gen) == 2
    err = capsys.readouterr().err
    assert "--scheduler: " in err and "speaks TLS" in err and "Traceback" not in err and not out.exists()


@pytest.mark.slow
def test_dask_require_encryption_setting_alone(environ):
    """DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION=True without certificates: the embedded default makes
    temporary ones (Dask alone: TypeError: TLS expects a ssl_context)."""
    from mst_dist.deploy.local import embedded

    environ(DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION="True")
    with embedded(n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        assert client.scheduler.address.startswith("tls://127.0.0.1:")
        g = mst_dist.generate("grid", rows=10, cols=10, seed=1)
        np.testing.assert_array_equal(mst_dist.minimum_spanning_forest(g, client).edge_ids, expected_ids(g))


@pytest.mark.mpi
@pytest.mark.slow
def test_mpi_ranks_speak_tls(certs, tmp_path):
    """Kind mpi with cluster.security: dask-mpi's scheduler and workers speak tls:// (Dask's TLS settings on
    every rank), the run's client too; the forest is Kruskal's."""
    import subprocess

    from support.cli import CLI, cli_env
    from test_mpi import mpirun_or_skip

    exe = mpirun_or_skip()
    security = ", ".join(f"{k}: '{v}'" for k, v in certs.items())
    (tmp_path / "run.yaml").write_text(
        "graph:\n  generate: {kind: erdos_renyi, n: 3000, m: 12000, seed: 4}\nlocal_finish: 0\n"
        "output: {path: forest.npz}\n"
        f"cluster: {{kind: mpi, threads_per_worker: 1, wait_timeout: 120, warmup: false, security: {{{security}}}}}\n")
    env = cli_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                  OMPI_MCA_rmaps_base_oversubscribe="1")
    p = subprocess.run([exe, "-n", "3", "--oversubscribe", *CLI, "run", "--mpi", "run.yaml", "--json"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    rep = json.loads(p.stdout)
    assert rep["cluster"]["scheduler"].startswith("tls://127.0.0.1:")
    assert [w["address"][:16] for w in rep["cluster"]["workers"]] == ["tls://127.0.0.1:"]
    exp = expected(mst_dist.generate("erdos_renyi", n=3000, m=12000, seed=4))
    assert_summary(rep["summary"], exp)
    assert_forest_file(tmp_path / "forest.npz", exp)
