"""Secret keys and masking."""

from __future__ import annotations

import pytest

from connect_spark.config.definition import ConfigDef, Password, Type
from connect_spark.config.secrets import is_secret_key, masked, masked_value


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "connection.password",
        "db_password",
        "ssl.key.password",
        "ssl.keystore.password",
        "consumer.override.ssl.truststore.password",
        "sasl.jaas.config",
        "producer.override.sasl.jaas.config",
        "ssl.keystore.key",
        "aws.secret.access.key",
        "client.secret",
        "secret",
        "oauth.access.token",
        "basic.auth.user.info",
        "value.converter.basic.auth.user.info",
        "Connection.Password",
    ],
)
def test_secret_keys(key):
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    ["name", "topics", "key.converter", "ssl.keystore.location", "sasl.mechanism", "transforms.x.field", "key"],
)
def test_not_secret_keys(key):
    assert not is_secret_key(key)


def test_password_typed_keys_of_a_config_def_are_secret():
    cd = ConfigDef().define("connection.url", Type.STRING, None).define("dsn", Type.PASSWORD, None)
    assert is_secret_key("dsn", cd)
    assert not is_secret_key("dsn")
    assert not is_secret_key("connection.url", cd)
    assert is_secret_key("custom", extra=["custom"])


def test_masked():
    config = {
        "name": "sink",
        "connection.password": "hunter2",
        "sasl.jaas.config": 'org.apache...PlainLoginModule required username="u" password="p";',
        "empty.password": "",
        "ref.password": "${file:/etc/secrets.properties:db.password}",
        "mixed.password": "p4ss ${env:X}",
        "typed": Password("x"),
        "tasks.max": 3,
    }
    out = masked(config)
    assert out == {
        "name": "sink",
        "connection.password": "[hidden]",
        "sasl.jaas.config": "[hidden]",
        "empty.password": "",
        "ref.password": "${file:/etc/secrets.properties:db.password}",
        "mixed.password": "[hidden]",
        "typed": "[hidden]",
        "tasks.max": 3,
    }
    assert config["connection.password"] == "hunter2"  # a copy; the input is untouched
    assert "hunter2" not in repr(out)


def test_masked_value_uses_config_def():
    cd = ConfigDef().define("dsn", Type.PASSWORD, None)
    assert masked_value("dsn", "postgres://u:p@h", cd) == "[hidden]"
    # not declared secret: the value is shown, but never the password inside it
    assert masked_value("dsn", "postgres://u:p@h") == "postgres://u:[hidden]@h"
    assert masked_value("dsn", "postgres://u@h") == "postgres://u@h"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("jdbc:postgresql://db:5432/shop?user=sink&password=s3cret&sslmode=require",
         "jdbc:postgresql://db:5432/shop?user=sink&password=[hidden]&sslmode=require"),
        ("jdbc:postgresql://db/shop?PASSWORD=s3cret", "jdbc:postgresql://db/shop?PASSWORD=[hidden]"),
        ("jdbc:sqlserver://db;user=a;pwd=s3cret;databaseName=c", "jdbc:sqlserver://db;user=a;pwd=[hidden];databaseName=c"),
        ("https://reader:s3cret@registry.example.com:8081/", "https://reader:[hidden]@registry.example.com:8081/"),
        # a reference names where the secret lives: shown as it is
        ("jdbc:postgresql://db/shop?password=${file:/etc/secrets:db.password}",
         "jdbc:postgresql://db/shop?password=${file:/etc/secrets:db.password}"),
        # nothing secret inside
        ("http://registry:8081", "http://registry:8081"),
        ("jdbc:postgresql://db:5432/shop?user=sink", "jdbc:postgresql://db:5432/shop?user=sink"),
    ],
)
def test_passwords_inside_urls_are_hidden(value, shown):
    assert masked({"connection.url": value}) == {"connection.url": shown}
