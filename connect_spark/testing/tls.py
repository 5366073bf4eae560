"""Test-time TLS material: a CA, a broker certificate and a client certificate, in the stores users hold.

Called once per test session by the TLS broker fixture (and by the demo's users who want to try TLS
locally): :func:`make_tls_material` makes the keys with ``cryptography`` and writes, under one folder,

* ``ca.pem`` — the CA certificate (the broker's truststore, ``ssl.truststore.type=PEM``);
* ``broker.keystore.p12`` — the broker's key and chain (SAN ``127.0.0.1`` and ``localhost``);
* ``client.truststore.jks`` / ``client.truststore.p12`` — the CA in a JKS / PKCS12 truststore made by the
  JDK's ``keytool -importcert``, as a Kafka admin hands them out;
* ``client.keystore.p12`` / ``client.keystore.jks`` — the client's key and chain (mutual TLS), converted by
  ``keytool -importkeystore``; the JKS one has a key password of its own;
* ``client.keystore.pem`` — the same key, encrypted with the key password, and its chain as PEM text.

Nothing here is for production: keys are short-lived (2 days) and passwords are fixed per call.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from connect_spark.kafka.tls_stores import find_keytool

__all__ = ["TlsMaterial", "make_tls_material"]


@dataclass(frozen=True)
class TlsMaterial:
    """Where :func:`make_tls_material` put the stores, and their passwords."""

    folder: Path
    store_password: str
    key_password: str

    @property
    def ca_pem(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def broker_keystore(self) -> Path:
        return self.folder / "broker.keystore.p12"

    def client_truststore(self, kind: str) -> Path:
        """``jks`` or ``p12``."""
        return self.folder / f"client.truststore.{kind}"

    def client_keystore(self, kind: str) -> Path:
        """``p12``, ``jks`` or ``pem``."""
        return self.folder / f"client.keystore.{kind}"


def _run_keytool(*args: str) -> None:
    keytool = find_keytool()
    if keytool is None:
        raise RuntimeError("keytool (the JDK's) is needed to make JKS and PKCS12 stores")
    done = subprocess.run([keytool, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"keytool {args[0]} failed: {done.stdout}{done.stderr}")


def make_tls_material(folder: str | os.PathLike[str], store_password: str = "store-pw-123456",
                      key_password: str = "key-pw-654321") -> TlsMaterial:
    """Make the CA, the broker's and the client's keys and stores in ``folder`` (created if needed)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("connect-spark test CA")).issuer_name(name("connect-spark test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, usage: x509.ObjectIdentifier, sans: list) -> tuple:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    broker_key, broker_cert = leaf("localhost", ExtendedKeyUsageOID.SERVER_AUTH,
                                   [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    client_key, client_cert = leaf("connect-spark-client", ExtendedKeyUsageOID.CLIENT_AUTH, [])

    pem = serialization.Encoding.PEM
    (out / "ca.pem").write_bytes(ca.public_bytes(pem))

    def p12(key, cert, path: Path) -> None:
        encryption = (serialization.PrivateFormat.PKCS12.encryption_builder()
                      .key_cert_algorithm(pkcs12.PBES.PBESv2SHA256AndAES256CBC).hmac_hash(hashes.SHA256())
                      .build(store_password.encode()))
        path.write_bytes(pkcs12.serialize_key_and_certificates(b"key", key, cert, [ca], encryption))

    p12(broker_key, broker_cert, out / "broker.keystore.p12")
    made = out / "made-by-cryptography.p12"
    p12(client_key, client_cert, made)
    for kind, store_type in (("jks", "JKS"), ("p12", "PKCS12")):
        _run_keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(out / "ca.pem"),
                     "-keystore", str(out / f"client.truststore.{kind}"), "-storetype", store_type,
                     "-storepass", store_password)
    _run_keytool("-importkeystore", "-noprompt", "-srckeystore", str(made), "-srcstoretype", "PKCS12",
                 "-srcstorepass", store_password, "-destkeystore", str(out / "client.keystore.p12"),
                 "-deststoretype", "PKCS12", "-deststorepass", store_password)
    _run_keytool("-importkeystore", "-noprompt", "-srckeystore", str(made), "-srcstoretype", "PKCS12",
                 "-srcstorepass", store_password, "-srcalias", "key", "-destkeystore", str(out / "client.keystore.jks"),
                 "-deststoretype", "JKS", "-deststorepass", store_password, "-destkeypass", key_password)
    made.unlink()
    client_pem = client_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                          serialization.BestAvailableEncryption(key_password.encode()))
    (out / "client.keystore.pem").write_bytes(client_pem + client_cert.public_bytes(pem) + ca.public_bytes(pem))
    return TlsMaterial(out, store_password, key_password)
