"""Kafka's ``ssl.*`` client keys, as Connect users write them, turned into one :class:`ssl.SSLContext`.

Called by :func:`connect_spark.storage.kafka_util.kafka_client_kwargs` whenever ``security.protocol`` is
``SSL`` or ``SASL_SSL``, i.e. by every Python Kafka client of the runtime (offset, status and config stores,
the consumer-group commit, the dead letter queue producer and admin client, the REST herder's admin client,
the partition directory), on the driver or an executor, in whichever thread makes the client. The context is
handed to kafka-python as ``ssl_context``; contexts are cached per distinct settings (and store file
versions), so each store is read once per process.

Stores are read as the Java client reads them:

* ``PEM``: a file (``ssl.truststore.location`` / ``ssl.keystore.location``) or the inline keys
  (``ssl.truststore.certificates``, ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``); a key may be
  encrypted with ``ssl.key.password``.
* ``PKCS12``: read in memory with ``cryptography`` (the ``tls`` extra).
* ``JKS`` (and JCEKS): converted once to PKCS12 by the JDK's ``keytool`` into a folder only this process can
  read, read back into memory and deleted at once; passwords reach keytool through its environment, never
  its command line.

As Java 17 does, a binary store is read by its content (JKS or PKCS12 magic) whichever of the two
``ssl.*.type`` names. The client key reaches OpenSSL through an anonymous in-memory file (Linux ``memfd``;
elsewhere a 0600 file deleted at once), encrypted with a one-time password. Nothing here logs a password,
a key or a certificate's content; errors name the key and never its secret value.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from connect_spark.api.errors import ConfigException

__all__ = ["ssl_context", "check_handshake", "find_keytool", "TLS_PROTOCOLS", "STORE_TYPES", "uses_tls", "clear_cache"]

log = logging.getLogger(__name__)

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
"""The ``security.protocol`` values whose clients speak TLS."""
STORE_TYPES = ("JKS", "PKCS12", "PEM")
"""The ``ssl.truststore.type`` / ``ssl.keystore.type`` values served (JCEKS is read as JKS is)."""

_HIDDEN = "[hidden]"
_JKS_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")  # JKS, JCEKS
_VERSIONS = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3,
             "TLSV1.1": ssl.TLSVersion.TLSv1_1, "TLSV1": ssl.TLSVersion.TLSv1}
_cache: dict[tuple, ssl.SSLContext] = {}
_cache_lock = threading.Lock()


def uses_tls(config: Mapping[str, Any]) -> bool:
    """Whether ``security.protocol`` (default ``PLAINTEXT``) is ``SSL`` or ``SASL_SSL``."""
    return str(config.get("security.protocol") or "PLAINTEXT").strip().upper() in TLS_PROTOCOLS


def clear_cache() -> None:
    """Forget the cached contexts (tests; a process that rotated its stores in place reads them again)."""
    with _cache_lock:
        _cache.clear()


def ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """The TLS context Kafka's ``ssl.*`` keys describe, for a kafka-python client.

    Args:
        config: Kafka-style client settings with plain values (``Password`` objects unwrapped).

    Honoured: ``ssl.truststore.*``, ``ssl.keystore.*``, ``ssl.key.password``, ``ssl.truststore.certificates``,
    ``ssl.keystore.certificate.chain``, ``ssl.keystore.key``, ``ssl.endpoint.identification.algorithm``
    (``https``, Kafka's default, checks the broker's host name; empty does not) and ``ssl.enabled.protocols``
    (the lowest and highest listed bound the TLS version). ``ssl.cipher.suites`` is honoured when OpenSSL
    knows the names; Java's own names of TLS 1.2 suites are not translated (WARN). Without a truststore the
    system's CA certificates are trusted, as the JVM trusts its ``cacerts``.

    Raises:
        ConfigException: a store is missing, unreadable, of an unknown type, or its password is wrong; the
            message names the key, never a password.
    """
    key = _cache_key(config)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        context = _build(config)
        _cache[key] = context
        return context


def _cache_key(config: Mapping[str, Any]) -> tuple:
    items = tuple(sorted((k, str(v)) for k, v in config.items() if k.startswith("ssl.") and v is not None))
    files = []
    for name in ("ssl.truststore.location", "ssl.keystore.location"):
        location = config.get(name)
        if location:
            try:
                stat = os.stat(str(location))
                files.append((stat.st_mtime_ns, stat.st_size, stat.st_ino))
            except OSError:
                files.append(None)
    return items + tuple(files)


def _text(config: Mapping[str, Any], name: str) -> str | None:
    value = config.get(name)
    if value is None:
        return None
    text = str(value)
    return text if text.strip() else None


def _build(config: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    algorithm = config.get("ssl.endpoint.identification.algorithm")
    context.check_hostname = algorithm is None or str(algorithm).strip().lower() == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    _set_protocols(context, config)
    _set_ciphers(context, config)

    trusted = _trusted_pem(config)
    if trusted is None:
        context.load_default_certs()
    else:
        try:
            context.load_verify_locations(cadata=trusted)
        except (ssl.SSLError, ValueError) as e:
            name = "ssl.truststore.location" if config.get("ssl.truststore.location") else "ssl.truststore.certificates"
            raise ConfigException(f"The truststore holds no usable CA certificate ({e})", name,
                                  config.get(name) if name.endswith("location") else _HIDDEN) from None
    _load_client_key(context, config)
    return context


def _set_protocols(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    text = _text(config, "ssl.enabled.protocols")
    if text is None:
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return
    versions = []
    for name in (p.strip() for p in text.split(",") if p.strip()):
        version = _VERSIONS.get(name.upper())
        if version is None:
            raise ConfigException(f"Unknown TLS protocol {name!r}; allowed: TLSv1.2, TLSv1.3 (and the obsolete "
                                  "TLSv1.1, TLSv1)", "ssl.enabled.protocols", text)
        versions.append(version)
    context.minimum_version, context.maximum_version = min(versions), max(versions)


def _set_ciphers(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    text = _text(config, "ssl.cipher.suites")
    if text is None:
        return
    names = [c.strip() for c in text.split(",") if c.strip()]
    tls12 = [n for n in names if not n.startswith("TLS_AES_") and not n.startswith("TLS_CHACHA20_")]
    if not tls12:
        return  # TLS 1.3 suites: OpenSSL enables them all, Python cannot narrow them
    try:
        context.set_ciphers(":".join(tls12))
    except ssl.SSLError:
        log.warning("ssl.cipher.suites: OpenSSL knows none of %s (Java names of TLS 1.2 suites are not translated); "
                    "the Python Kafka clients use OpenSSL's default suites, Spark's Kafka source uses the list",
                    ", ".join(tls12))


def check_handshake(config: Mapping[str, Any], bootstrap_servers: str, timeout_s: float = 10.0) -> None:
    """Fail fast, naming the key to check, when the broker's certificate is not trusted.

    Called by :func:`connect_spark.storage.kafka_util.check_authentication` from the ``start`` of the
    Kafka-backed stores, before their clients are made: kafka-python retries a failed handshake until its
    bootstrap timeout and then reports a bare "Unable to bootstrap". Does nothing unless the protocol speaks
    TLS; a broker that cannot be reached, or another failure, is left to the caller's clients to report.

    Raises:
        ConfigException: the certificate chain is not trusted (names ``ssl.truststore.location``) or does not
            name the host (names ``ssl.endpoint.identification.algorithm``).
    """
    if not uses_tls(config):
        return
    context = ssl_context(config)
    server = bootstrap_servers.split(",")[0].strip()
    host, _, port = server.rpartition(":")
    host = host.strip("[]")
    try:
        raw = socket.create_connection((host, int(port)), timeout=timeout_s)
    except (OSError, ValueError):
        return
    try:
        with context.wrap_socket(raw, server_hostname=host) as conn:
            conn.settimeout(timeout_s)
    except ssl.SSLCertVerificationError as e:
        if e.verify_code == 62:  # X509_V_ERR_HOSTNAME_MISMATCH
            raise ConfigException(f"The certificate of the broker at {server} does not name {host} ({e.verify_message})"
                                  "; connect with the name the certificate has, or set "
                                  "ssl.endpoint.identification.algorithm= (empty) to skip the check",
                                  "ssl.endpoint.identification.algorithm",
                                  config.get("ssl.endpoint.identification.algorithm", "https")) from None
        name = "ssl.truststore.location" if config.get("ssl.truststore.location") else "ssl.truststore.certificates"
        shown = config.get(name) if name.endswith("location") else _HIDDEN
        raise ConfigException(f"The broker at {server} presented a certificate the truststore does not trust "
                              f"({e.verify_message}); the truststore needs the CA that signed it", name,
                              shown) from None
    except (OSError, ssl.SSLError):
        return
    finally:
        raw.close()


# -- stores ------------------------------------------------------------------------------------------


def _store_type(config: Mapping[str, Any], role: str, content: bytes | None) -> str:
    """``PEM``, ``JKS`` or ``PKCS12``: the declared type, or (binary stores) what the content is."""
    name = f"ssl.{role}.type"
    declared = _text(config, name)
    if declared is not None and declared.strip().upper() not in (*STORE_TYPES, "JCEKS"):
        raise ConfigException(f"Unknown store type; allowed: {', '.join(STORE_TYPES)}", name, declared)
    pem_content = content is not None and content.lstrip().startswith(b"-----BEGIN")
    if declared is not None and declared.strip().upper() == "PEM":
        if content is not None and not pem_content:
            raise ConfigException(f"ssl.{role}.type is PEM but the file is not PEM text", f"ssl.{role}.location",
                                  config.get(f"ssl.{role}.location"))
        return "PEM"
    if pem_content and declared is None:
        return "PEM"  # a .pem file without a type, as earlier connect_spark versions read it
    if content is not None and content[:4] in _JKS_MAGIC:
        return "JKS"
    return "PKCS12"


def _read_file(config: Mapping[str, Any], role: str) -> bytes | None:
    location = _text(config, f"ssl.{role}.location")
    if location is None:
        return None
    try:
        return Path(location).read_bytes()
    except OSError as e:
        raise ConfigException(f"Cannot read the {role} ({e.strerror or e})", f"ssl.{role}.location", location) from None


def _trusted_pem(config: Mapping[str, Any]) -> str | None:
    """The trusted CA certificates as PEM text, or ``None`` for the system's defaults."""
    inline = _text(config, "ssl.truststore.certificates")
    content = _read_file(config, "truststore")
    if inline is not None:
        if content is not None:
            raise ConfigException("Set either ssl.truststore.location or ssl.truststore.certificates, not both",
                                  "ssl.truststore.certificates", _HIDDEN)
        return inline
    if content is None:
        return None
    if _store_type(config, "truststore", content) == "PEM":
        return content.decode("ascii", "replace")
    from cryptography.hazmat.primitives.serialization import Encoding

    password = _text(config, "ssl.truststore.password")
    key, cert, extra = _load_binary(config, "truststore", content, password, None)
    certificates = [c for c in ([cert] if cert is not None else []) + extra]
    if not certificates:
        raise ConfigException("The truststore holds no certificate", "ssl.truststore.location",
                              config.get("ssl.truststore.location"))
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certificates)


def _load_client_key(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    """Present a client certificate (mutual TLS) when a keystore or inline key is configured."""
    key_password = _text(config, "ssl.key.password")
    inline_key = _text(config, "ssl.keystore.key")
    inline_chain = _text(config, "ssl.keystore.certificate.chain")
    content = _read_file(config, "keystore")
    if inline_key is not None or inline_chain is not None:
        if inline_key is None or inline_chain is None or content is not None:
            raise ConfigException("An inline keystore needs both ssl.keystore.key and ssl.keystore.certificate.chain "
                                  "and no ssl.keystore.location", "ssl.keystore.key", _HIDDEN)
        _load_pem_pair(context, (inline_key.strip() + "\n" + inline_chain.strip() + "\n").encode(), key_password,
                       "ssl.keystore.key")
        return
    if content is None:
        return
    if _store_type(config, "keystore", content) == "PEM":
        _load_pem_pair(context, content, key_password, "ssl.keystore.location")
        return
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, PrivateFormat

    store_password = _text(config, "ssl.keystore.password")
    key, cert, extra = _load_binary(config, "keystore", content, store_password, key_password)
    if key is None or cert is None:
        raise ConfigException("The keystore holds no private key with its certificate", "ssl.keystore.location",
                              config.get("ssl.keystore.location"))
    one_time = secrets.token_hex(16)
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(one_time.encode()))
    pem += b"".join(c.public_bytes(Encoding.PEM) for c in [cert, *extra])
    _load_pem_pair(context, pem, one_time, "ssl.keystore.location")


def _load_pem_pair(context: ssl.SSLContext, pem: bytes, password: str | None, key_name: str) -> None:
    with _private_file(pem) as path:
        try:
            context.load_cert_chain(path, password=password or None)
        except ssl.SSLError as e:
            reason = "wrong ssl.key.password" if "bad decrypt" in str(e).lower() else str(e.reason or e)
            raise ConfigException(f"Cannot load the client key and certificate chain: {reason}", key_name,
                                  _HIDDEN) from None
        except (TypeError, ValueError):  # an encrypted key and no password
            raise ConfigException("The client key is encrypted: set ssl.key.password", key_name, _HIDDEN) from None


@contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A path OpenSSL can read ``data`` from, gone when the block ends: an in-memory file where the OS has
    them, else a 0600 file in a 0700 folder."""
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        fd = os.memfd_create("connect-spark-tls", 0)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    folder = tempfile.mkdtemp(prefix="connect-spark-tls-")
    try:
        path = os.path.join(folder, "key.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _load_binary(config: Mapping[str, Any], role: str, content: bytes, password: str | None,
                 key_password: str | None) -> tuple[Any, Any, list]:
    """(key, certificate, other certificates) of a PKCS12 or JKS store."""
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:  # pragma: no cover - the extra is part of the test install
        raise ConfigException("Reading JKS and PKCS12 stores needs the 'cryptography' package: "
                              "pip install 'connect-spark[tls]'", f"ssl.{role}.type", _text(config, f"ssl.{role}.type"))
    password_key = f"ssl.{role}.password"
    location = config.get(f"ssl.{role}.location")
    if content[:4] in _JKS_MAGIC:
        if not password:
            raise ConfigException("A JKS store needs its password", password_key, None)
        content, password = _jks_to_pkcs12(location, content, password, key_password, role)
    try:
        loaded = pkcs12.load_pkcs12(content, password.encode() if password else None)
    except ValueError:
        raise ConfigException(f"Cannot read the {role} {location}: the password is wrong or the file is not a "
                              "JKS or PKCS12 store", password_key, _HIDDEN if password else None) from None
    cert = loaded.cert.certificate if loaded.cert is not None else None
    return loaded.key, cert, [c.certificate for c in loaded.additional_certs]


def find_keytool() -> str | None:
    """The JDK's ``keytool``: ``$JAVA_HOME/bin/keytool``, else the one on ``PATH``; ``None`` when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "keytool").is_file():
        return str(Path(java_home) / "bin" / "keytool")
    return shutil.which("keytool")


def _keytool() -> str:
    found = find_keytool()
    if found is None:
        raise ConfigException("Reading a JKS store needs the JDK's keytool on PATH (or JAVA_HOME); or convert the "
                              "store to PKCS12", "ssl.truststore.type", "JKS")
    return found


def _jks_to_pkcs12(location: Any, content: bytes, password: str, key_password: str | None,
                   role: str) -> tuple[bytes, str]:
    """The JKS store as PKCS12 bytes (and their one-time password), converted by keytool in a private folder."""
    keytool = _keytool()
    one_time = secrets.token_hex(16)
    env = {**os.environ, "CS_SRC_PW": password, "CS_DEST_PW": one_time, "CS_KEY_PW": key_password or password,
           "JAVA_TOOL_OPTIONS": "-Duser.language=en"}
    folder = tempfile.mkdtemp(prefix="connect-spark-jks-")
    try:
        source = os.path.join(folder, "in.jks")
        fd = os.open(source, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        base = [keytool, "-importkeystore", "-noprompt", "-srckeystore", source, "-srcstoretype",
                "JCEKS" if content[:4] == _JKS_MAGIC[1] else "JKS", "-srcstorepass:env", "CS_SRC_PW",
                "-deststoretype", "PKCS12", "-deststorepass:env", "CS_DEST_PW"]
        target = os.path.join(folder, "out.p12")
        aliases = [None]
        if key_password and key_password != password:
            aliases = _key_aliases(keytool, source, env) or [None]
        for alias in aliases:
            command = [*base, "-destkeystore", target]
            if alias is not None:
                command += ["-srcalias", alias, "-srckeypass:env", "CS_KEY_PW", "-destkeypass:env", "CS_DEST_PW"]
            done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=60)
            if done.returncode != 0:
                output = done.stdout + done.stderr
                if "password was incorrect" in output or "Keystore was tampered" in output:
                    raise ConfigException(f"Cannot read the {role} {location}: the password is wrong",
                                          f"ssl.{role}.password", _HIDDEN)
                if "Cannot recover key" in output or "Enter key password" in output:
                    raise ConfigException(f"Cannot read the key in the {role} {location}: the key password is wrong",
                                          "ssl.key.password", _HIDDEN)
                raise ConfigException(f"keytool cannot read the {role} {location}: "
                                      f"{output.strip().splitlines()[-1] if output.strip() else done.returncode}",
                                      f"ssl.{role}.location", location)
        return Path(target).read_bytes(), one_time
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _key_aliases(keytool: str, source: str, env: Mapping[str, str]) -> list[str]:
    """The aliases of the store's key entries (``keytool -list``)."""
    done = subprocess.run([keytool, "-list", "-keystore", source, "-storepass:env", "CS_SRC_PW"], env=dict(env),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    return [line.split(",", 1)[0] for line in done.stdout.splitlines() if "PrivateKeyEntry" in line]
