"""OAUTHBEARER tokens for the Python Kafka clients: a real client-credentials grant against a token endpoint
served on loopback, the token kept for most of its lifetime, and unsecured tokens as Kafka's Java client
makes them. The broker's side is in tests/integration/test_tls_kafka.py."""

import base64
import json

import pytest

from connect_spark.kafka.oauth import OAuthTokenError
from connect_spark.kafka.clients import kafka_client_kwargs
from connect_spark.testing.oauth import LocalTokenEndpoint

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"


@pytest.fixture(scope="module")
def endpoint():
    with LocalTokenEndpoint({"svc": "oauth-secret"}) as server:
        yield server


def oauth(jaas_options, **keys):
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": f"{MODULE} {jaas_options};", **keys}


def claims(token):
    header, body, signature = token.split(".")
    decode = lambda part: json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # noqa: E731
    assert decode(header) == {"alg": "none"} and signature == ""
    return decode(body)


def test_client_credentials_grant_and_token_reuse(endpoint):
    endpoint.requests.clear()
    config = oauth('clientId="svc" clientSecret="oauth-secret" scope="kafka" extension_tenant="t1"',
                   **{"sasl.oauthbearer.token.endpoint.url": endpoint.url,
                      "sasl.login.callback.handler.class":
                          "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"})
    provider = kafka_client_kwargs(config)["sasl_oauth_token_provider"]
    token = provider.token()
    assert claims(token)["sub"] == "svc" and provider.token() == token  # kept, not fetched again
    assert endpoint.requests == [("svc", {"grant_type": ["client_credentials"], "scope": ["kafka"]})]
    assert provider.extensions() == {"tenant": "t1"}


def test_a_refused_grant_names_the_endpoint_not_the_secret(endpoint):
    config = oauth('clientId="svc" clientSecret="not-the-secret"',
                   **{"sasl.oauthbearer.token.endpoint.url": endpoint.url})
    with pytest.raises(OAuthTokenError) as info:
        kafka_client_kwargs(config)["sasl_oauth_token_provider"].token()
    assert endpoint.url in str(info.value) and "401" in str(info.value) and "not-the-secret" not in str(info.value)


def test_unsecured_token_as_java_makes_it():
    provider = kafka_client_kwargs(oauth('unsecuredLoginStringClaim_sub="alice"'))["sasl_oauth_token_provider"]
    made = claims(provider.token())
    assert made["sub"] == "alice" and made["exp"] - made["iat"] == 3600
