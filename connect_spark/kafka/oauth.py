"""SASL/OAUTHBEARER for the Python Kafka clients, from the keys Kafka's Java client reads.

Called by :func:`connect_spark.kafka.kafka_client_kwargs` when ``sasl.mechanism=OAUTHBEARER``;
the provider it returns is handed to kafka-python as ``sasl_oauth_token_provider`` and asked for a token by
kafka-python's network thread on each new connection. Two of Kafka's login forms are served:

* **client credentials** (``sasl.oauthbearer.token.endpoint.url`` with ``OAuthBearerLoginModule``'s
  ``clientId``, ``clientSecret`` and optional ``scope``): an OAuth 2 ``client_credentials`` grant, HTTP
  basic authentication, the access token kept until ``sasl.login.refresh.window.factor`` (0.8) of its
  lifetime has passed. An ``https`` endpoint is verified with the system's CA certificates, or with the
  client's truststore when one is configured.
* **unsecured** (``unsecuredLoginStringClaim_sub``, Kafka's default login handler, for development
  brokers): an unsigned JWT (``alg: none``) with ``sub``, ``iat`` and ``exp`` claims, as Java makes it.

``extension_<name>`` options become SASL extensions, as in Kafka. Anything else (a custom
``sasl.login.callback.handler.class``) is refused with a ``ConfigException`` naming the key. No token or
secret is ever logged.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Mapping

from kafka.net.sasl.oauth import AbstractTokenProvider

from connect_spark.api.errors import ConfigException, ConnectException

__all__ = ["token_provider", "unsecured_token", "OAuthTokenError"]

log = logging.getLogger(__name__)

_HANDLER = "OAuthBearerLoginCallbackHandler"  # Kafka's client-credentials login handler (any package)


class OAuthTokenError(ConnectException):
    """The token endpoint refused or could not be reached; the message names the endpoint, never the secret."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class _CachedTokenProvider(AbstractTokenProvider):
    """Keeps a token until ``refresh_factor`` of its lifetime has passed, then fetches a new one."""

    def __init__(self, fetch: Callable[[], tuple[str, float]], extensions: Mapping[str, str],
                 refresh_factor: float, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._fetch = fetch
        self._extensions = dict(extensions)
        self._refresh_factor = refresh_factor
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = 0.0

    def token(self) -> str:
        with self._lock:
            now = self._clock()
            if self._token is None or now >= self._refresh_at:
                token, lifetime_s = self._fetch()
                self._token, self._refresh_at = token, now + lifetime_s * self._refresh_factor
            return self._token

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)


def token_provider(config: Mapping[str, Any], options: Mapping[str, str],
                   context: ssl.SSLContext | None) -> AbstractTokenProvider:
    """The provider of OAUTHBEARER tokens the settings describe.

    Args:
        config: Kafka-style client settings (plain values).
        options: the options of ``sasl.jaas.config``'s ``OAuthBearerLoginModule`` entry.
        context: the client's TLS context, used for an ``https`` token endpoint when a truststore is set.

    Raises:
        ConfigException: a form this module does not serve, or a missing option (named, never its value).
    """
    handler = str(config.get("sasl.login.callback.handler.class") or "")
    endpoint = str(config.get("sasl.oauthbearer.token.endpoint.url") or "").strip()
    extensions = {k[len("extension_"):]: v for k, v in options.items() if k.startswith("extension_")}
    factor = float(config.get("sasl.login.refresh.window.factor") or 0.8)
    if handler and not handler.endswith(_HANDLER):
        raise ConfigException("Only Kafka's OAuthBearerLoginCallbackHandler (client credentials) and the default "
                              "unsecured login are served to the Python Kafka clients",
                              "sasl.login.callback.handler.class", handler)
    if endpoint:
        for option in ("clientId", "clientSecret"):
            if not options.get(option):
                raise ConfigException(f"OAuthBearerLoginModule needs the {option} option with "
                                      "sasl.oauthbearer.token.endpoint.url", "sasl.jaas.config", "[hidden]")
        trusted = context if (config.get("ssl.truststore.location") or config.get("ssl.truststore.certificates")) \
            else None
        timeout_s = int(config.get("sasl.login.read.timeout.ms") or 10000) / 1000
        fetch = _client_credentials(endpoint, options["clientId"], options["clientSecret"], options.get("scope"),
                                    trusted, timeout_s)
        return _CachedTokenProvider(fetch, extensions, factor)
    if options.get("unsecuredLoginStringClaim_sub"):
        return _CachedTokenProvider(_unsecured(options), extensions, factor)
    raise ConfigException("OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url with clientId and clientSecret, or "
                          "unsecuredLoginStringClaim_sub (development brokers), in OAuthBearerLoginModule",
                          "sasl.oauthbearer.token.endpoint.url", endpoint or None)


def unsecured_token(subject: str, lifetime_s: float = 3600, claims: Mapping[str, str] | None = None) -> str:
    """An unsigned JWT (``alg: none``) with ``sub``, ``iat``, ``exp`` and ``claims``, as Kafka's unsecured login
    makes it; only development brokers (Kafka's default OAUTHBEARER validator) accept it."""
    now = time.time()
    body: dict[str, Any] = {**(claims or {}), "sub": subject, "iat": now, "exp": now + lifetime_s}
    return f"{_b64(json.dumps({'alg': 'none'}).encode())}.{_b64(json.dumps(body).encode())}."


def _unsecured(options: Mapping[str, str]) -> Callable[[], tuple[str, float]]:
    lifetime_s = float(options.get("unsecuredLoginLifetimeSeconds") or 3600)
    prefix = "unsecuredLoginStringClaim_"
    claims = {k[len(prefix):]: v for k, v in options.items() if k.startswith(prefix) and k != prefix + "sub"}
    return lambda: (unsecured_token(options[prefix + "sub"], lifetime_s, claims), lifetime_s)


def _client_credentials(endpoint: str, client_id: str, client_secret: str, scope: str | None,
                        context: ssl.SSLContext | None, timeout_s: float) -> Callable[[], tuple[str, float]]:
    basic = base64.b64encode(f"{urllib.parse.quote(client_id)}:{urllib.parse.quote(client_secret)}".encode()).decode()
    form = {"grant_type": "client_credentials", **({"scope": scope} if scope else {})}

    def fetch() -> tuple[str, float]:
        request = urllib.request.Request(endpoint, data=urllib.parse.urlencode(form).encode(), method="POST", headers={
            "Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as e:
            raise OAuthTokenError(f"The token endpoint {endpoint} answered {e.code} for client {client_id!r}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise OAuthTokenError(f"Cannot get a token from {endpoint}: {type(e).__name__}") from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not token:
            raise OAuthTokenError(f"The token endpoint {endpoint} answered without an access_token")
        log.debug("Got an OAUTHBEARER token for client %r from %s", client_id, endpoint)
        return str(token), float(answer.get("expires_in") or 3600)

    return fetch
