"""Reading the trust and key stores Kafka's ``ssl.*`` keys name: PEM, PKCS12 and JKS, as the Java client does.

Called by :func:`connect_spark.kafka.tls.ssl_context` when it builds a context (once per distinct settings and
store file versions): :func:`trusted_pem` gives the CA certificates to trust, :func:`load_client_key` loads the
client's certificate chain and key into the context. See :mod:`connect_spark.kafka.tls` for the formats read
and how secrets are kept out of files, command lines and logs.
"""

from __future__ import annotations

import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from connect_spark.api.errors import ConfigException

__all__ = ["STORE_TYPES", "trusted_pem", "load_client_key", "find_keytool", "setting_text"]

STORE_TYPES = ("JKS", "PKCS12", "PEM")
"""The ``ssl.truststore.type`` / ``ssl.keystore.type`` values served (JCEKS is read as JKS is)."""

_HIDDEN = "[hidden]"
_JKS_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")  # JKS, JCEKS


def setting_text(config: Mapping[str, Any], name: str) -> str | None:
    """The setting's text, or None when it is missing or blank."""
    value = config.get(name)
    if value is None:
        return None
    text = str(value)
    return text if text.strip() else None


def _store_type(config: Mapping[str, Any], role: str, content: bytes | None) -> str:
    """``PEM``, ``JKS`` or ``PKCS12``: the declared type, or (binary stores) what the content is."""
    name = f"ssl.{role}.type"
    declared = setting_text(config, name)
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
    location = setting_text(config, f"ssl.{role}.location")
    if location is None:
        return None
    try:
        return Path(location).read_bytes()
    except OSError as e:
        raise ConfigException(f"Cannot read the {role} ({e.strerror or e})", f"ssl.{role}.location", location) from None


def trusted_pem(config: Mapping[str, Any]) -> str | None:
    """The trusted CA certificates as PEM text, or ``None`` for the system's defaults."""
    inline = setting_text(config, "ssl.truststore.certificates")
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

    password = setting_text(config, "ssl.truststore.password")
    key, cert, extra = _load_binary(config, "truststore", content, password, None)
    certificates = [c for c in ([cert] if cert is not None else []) + extra]
    if not certificates:
        raise ConfigException("The truststore holds no certificate", "ssl.truststore.location",
                              config.get("ssl.truststore.location"))
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certificates)


def load_client_key(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    """Present a client certificate (mutual TLS) when a keystore or inline key is configured."""
    key_password = setting_text(config, "ssl.key.password")
    inline_key = setting_text(config, "ssl.keystore.key")
    inline_chain = setting_text(config, "ssl.keystore.certificate.chain")
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

    store_password = setting_text(config, "ssl.keystore.password")
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
                              "pip install 'connect-spark[tls]'", f"ssl.{role}.type", setting_text(config, f"ssl.{role}.type"))
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
