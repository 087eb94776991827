"""What the cluster kinds share: the warm-up preload, workers' memory limits, waiting for workers,
where clusters listen (loopback unless told otherwise) and their TLS security."""
from __future__ import annotations

import logging
import os
import ssl

__all__ = ["WARMUP", "MIN_MEMORY_LIMIT", "LOOPBACK", "SECURITY_KEYS", "memory_limit_value", "wait_for_workers",
           "security_of", "check_address_security", "protocol_of"]

logger = logging.getLogger("mst_dist")

#: Where the clusters mst-dist starts on this machine listen unless an address or interface is given.
LOOPBACK = "127.0.0.1"

#: Keys of a run config's ``cluster.security`` section (TLS): file paths and whether to refuse plain TCP.
SECURITY_KEYS = ("ca_file", "cert", "key", "require_encryption")

#: The worker preload that compiles the kernels at start (``dask worker --preload``).
WARMUP = "mst_dist.engine.warmup"

#: The smallest memory limit in bytes a worker may get: below it a Dask worker pauses (at 80 % of
#: its limit) on its own start-up memory and the run cannot go on.
MIN_MEMORY_LIMIT = 256 * 2**20


def memory_limit_value(value):
    """A worker memory limit checked and normalised, as ``LocalCluster`` and ``dask worker`` take it.

    ``"auto"`` (the machine's memory over the workers), bytes (an int, or a
    string such as ``"4GiB"``, ``"600 MB"``, ``"2e9"``), a fraction of the
    machine's memory (a number in ``(0, 1]``), or ``None`` / ``0`` / ``"none"``
    for no limit.  Raises :class:`ValueError` saying what is allowed.

    >>> memory_limit_value("4GiB"), memory_limit_value("600000000"), memory_limit_value(0.5)
    ('4GiB', 600000000, 0.5)
    >>> memory_limit_value("lots")
    Traceback (most recent call last):
    ...
    ValueError: expected 'auto', bytes (an integer or a size such as '4GiB'), a fraction of the machine's memory in (0, 1] or none; got 'lots'
    """
    import math

    from dask.utils import format_bytes, parse_bytes

    allowed = ("expected 'auto', bytes (an integer or a size such as '4GiB'), a fraction of the machine's "
               "memory in (0, 1] or none")
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("none", "null", ""):
            return None
        if text == "auto":
            return "auto"
        try:
            number = float(text)
        except ValueError:
            try:
                nbytes = parse_bytes(text)
            except ValueError:
                raise ValueError(f"{allowed}; got {value!r}") from None
            if nbytes < 0:
                raise ValueError(f"{allowed}; got {value!r}")
            if nbytes < MIN_MEMORY_LIMIT:
                raise ValueError(f"{value!r} ({format_bytes(nbytes)}) is too small for a worker: at least "
                                 f"{format_bytes(MIN_MEMORY_LIMIT)} (or 'auto', or none for no limit)")
            return value
        value = int(number) if number.is_integer() and number > 1 else number
    elif value is None:
        return None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{allowed}; got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{allowed}; got {value!r}")
    if value == 0:
        return None
    if value > 1 and value < MIN_MEMORY_LIMIT:
        raise ValueError(f"{value!r} bytes ({format_bytes(int(value))}) is too small for a worker: at least "
                         f"{format_bytes(MIN_MEMORY_LIMIT)} (or 'auto', or none for no limit)")
    return int(value) if value > 1 else value


#: Seconds between :func:`wait_for_workers`' reminders that it is still waiting.
WAIT_REMINDER = 30


def wait_for_workers(client, cfg, what, n=1, level=logging.INFO, every=WAIT_REMINDER):
    """Wait up to ``cluster.wait_timeout`` for ``n`` workers; with fewer but some, go on with those.

    Unless they are there at once, says what it waits for (a ``level`` log
    line: the command line shows warnings) then, and every ``every`` seconds.
    Raises :class:`TimeoutError` when none joined in time.
    """
    import time

    from mst_dist.engine.cluster_info import scheduler_workers

    timeout = cfg.get("wait_timeout") or 600
    start = time.monotonic()
    step, said = min(0.5, timeout), False  # workers already there: no word
    while True:
        try:
            client.wait_for_workers(n, timeout=step)
            return
        except TimeoutError:
            pass
        waited = time.monotonic() - start
        if waited >= timeout:
            break
        have = len(scheduler_workers(client))
        if not said:
            logger.log(level, "%s: waiting up to %g s (cluster.wait_timeout) for %d worker(s) to join; %d so far",
                       what, timeout, n, have)
        else:
            logger.log(level, "%s: still waiting for workers: %d of %d joined after %.0f s of %g s", what, have, n,
                       waited, timeout)
        step, said = max(0.001, min(every, timeout - waited)), True
    have = len(scheduler_workers(client))
    if not have:
        raise TimeoutError(f"{what}: no worker joined within {timeout:g} s (cluster.wait_timeout); "
                           "are the workers or their jobs still starting?")
    logger.warning("%s: %d of %d workers joined within %g s (cluster.wait_timeout); running on those",
                   what, have, n, timeout)


def security_of(section, temporary=False):
    """The :class:`distributed.security.Security` of a ``cluster.security`` section, or ``None``.

    ``ca_file`` (the certificate authority that signed every party's
    certificate), ``cert`` and ``key`` (this party's certificate and private
    key, PEM; ``key`` may be left out when ``cert`` holds both) serve every
    role: client, scheduler and workers, as ``dask scheduler --tls-ca-file
    --tls-cert --tls-key`` does.  ``require_encryption`` (default: true when
    certificates are given) refuses plain ``tcp://`` connections.  With no
    section (``None`` or empty) the answer is ``None``: Dask's own settings
    (``distributed.comm.tls.*``, ``DASK_DISTRIBUTED__COMM__TLS__*``) apply.
    ``temporary`` (clusters started on this machine): ``require_encryption``
    without certificates makes a throw-away certificate authority
    (:meth:`Security.temporary <distributed.security.Security.temporary>`,
    needs the ``cryptography`` package).  Raises :class:`ValueError` naming
    the key for a file that cannot be read or certificates without their CA.
    """
    from distributed.security import Security

    section = {k: v for k, v in (section or {}).items() if v is not None}
    if not section:
        return None
    for name in ("ca_file", "cert", "key"):
        path = section.get(name)
        if path is not None and not os.path.isfile(os.path.expanduser(path)):
            raise ValueError(f"security.{name}: no such file: {path!r}")
    files = {k: os.path.expanduser(section[k]) for k in ("ca_file", "cert", "key") if k in section}
    require = section.get("require_encryption")
    if files and not ("ca_file" in files and "cert" in files):
        missing = " and ".join(k for k in ("ca_file", "cert") if k not in files)
        raise ValueError(f"security: TLS needs ca_file and cert (and key unless cert holds it); "
                         f"{missing} missing")
    if not files:
        if not require:
            return None
        if not temporary:
            raise ValueError("security.require_encryption: needs certificates to encrypt with: give "
                             "security.ca_file, cert and key (--tls-ca-file, --tls-cert, --tls-key)")
        try:
            return Security.temporary()
        except ImportError as e:  # pragma: no cover - cryptography is optional for distributed
            raise ValueError(f"security.require_encryption without certificates makes temporary ones, "
                             f"which needs the cryptography package ({e}); or give security.ca_file, "
                             "cert and key") from None
    roles = {}
    for role in ("client", "scheduler", "worker"):
        roles[f"tls_{role}_cert"] = files["cert"]
        if "key" in files:
            roles[f"tls_{role}_key"] = files["key"]
    security = Security(tls_ca_file=files["ca_file"], require_encryption=True if require is None else require,
                        **roles)
    try:  # read the files now: a wrong one is a message naming them, not ssl's "PEM lib"
        security.get_connection_args("client")
    except (ssl.SSLError, OSError) as e:
        key = f" with key {files['key']!r}" if "key" in files else " (holding its key)"
        raise ValueError(f"security: cannot use certificate {files['cert']!r}{key} and CA {files['ca_file']!r}: "
                         f"{e}; each must be PEM, the key the certificate's own") from None
    return security


def _has_tls(security, role="client"):
    from distributed.security import Security

    security = security if security is not None else Security()
    return security.get_connection_args(role).get("ssl_context") is not None


def protocol_of(security):
    """``"tls://"`` when ``security`` (or Dask's TLS settings) has certificates, else ``None`` (Dask's choice)."""
    return "tls://" if _has_tls(security) else None


def check_address_security(address, security, where="cluster.address"):
    """Check before connecting that ``security`` can speak to ``address``; :class:`ConfigError` if not.

    A ``tls://`` address needs certificates (the ``cluster.security``
    section, its flags, or Dask's ``distributed.comm.tls.*`` settings): Dask
    alone would fail with ``TypeError: TLS expects a ssl_context``.  With
    ``require_encryption`` a ``tcp://`` address would be refused.
    """
    from distributed.security import Security

    from mst_dist.config import ConfigError

    scheme = address.split("://", 1)[0] if "://" in address else "tcp"
    sec = security if security is not None else Security()
    if scheme == "tls" and not _has_tls(sec):
        raise ConfigError(f"{where}: {address!r} speaks TLS: give the certificates (cluster.security: "
                          "ca_file, cert, key; or --tls-ca-file, --tls-cert, --tls-key; or Dask's "
                          "distributed.comm.tls.* settings)", key=where)
    if scheme != "tls" and sec.require_encryption:
        raise ConfigError(f"{where}: {address!r} is not encrypted and security.require_encryption is on: "
                          f"use the scheduler's tls:// address", key=where)
