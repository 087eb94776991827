"""A real S3 API for the tests: moto's server on 127.0.0.1, spoken to through s3fs (no mock of s3fs)."""
import contextlib

from support.needs import module


@contextlib.contextmanager
def moto_s3(bucket):
    """``(storage_options, s3fs file system)`` of a fresh ``bucket`` on a moto server started here."""
    module("s3fs", 'pip install "mst-dist[s3]" (s3fs)')
    moto_server = module("moto.server", 'pip install "moto[server]"')
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        options = {"key": "testing", "secret": "testing",
                   "client_kwargs": {"endpoint_url": f"http://{host}:{port}", "region_name": "us-west-2"}}
        import s3fs

        fs = s3fs.S3FileSystem(**options)
        fs.mkdir(bucket)
        yield options, fs
    finally:
        server.stop()
