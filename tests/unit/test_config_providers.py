"""Config providers: ${env:VAR}, ${file:path:key}, ${directory:dir:file} and their declarations."""

from __future__ import annotations

import os

import pytest

from connect_spark.api.errors import ConfigException
from connect_spark.config.providers import (
    ConfigProvider,
    ConfigProviders,
    EnvVarConfigProvider,
    find_references,
)


@pytest.fixture
def secrets_file(tmp_path):
    path = tmp_path / "secrets.properties"
    path.write_text("db.password=hunter2\nuser=alice\n")
    return path


def test_find_references():
    assert find_references("a ${env:X} b ${file:/p/q.properties:k:with:colons} ${topic}") == [
        ("${env:X}", "env", None, "X"),
        ("${file:/p/q.properties:k:with:colons}", "file", "/p/q.properties", "k:with:colons"),
    ]


def test_env_and_file_enabled_by_default(monkeypatch, secrets_file):
    monkeypatch.setenv("CS_TEST_USER", "bob")
    providers, issues = ConfigProviders.from_worker_props({})
    assert issues == [] and providers.names() == ["env", "file"]
    props = {
        "user": "${env:CS_TEST_USER}",
        "password": f"${{file:{secrets_file}:db.password}}",
        "jaas": f'user="${{file:{secrets_file}:user}}" password="${{file:{secrets_file}:db.password}}";',
        "plain": "x",
        "template": "${topic}-${timestamp}",
        "number": 3,
    }
    resolved, issues = providers.resolve(props)
    assert issues == []
    assert resolved == {
        "user": "bob",
        "password": "hunter2",
        "jaas": 'user="alice" password="hunter2";',
        "plain": "x",
        "template": "${topic}-${timestamp}",
        "number": 3,
    }


def test_kafka_declarations_are_accepted(monkeypatch, secrets_file):
    monkeypatch.setenv("CS_TEST_USER", "bob")
    worker = {
        "config.providers": "file,env",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    }
    providers, issues = ConfigProviders.from_worker_props(worker)
    assert issues == [] and sorted(providers.names()) == ["env", "file"]
    resolved, issues = providers.resolve({**worker, "u": "${env:CS_TEST_USER}"})
    assert issues == [] and resolved["u"] == "bob"
    assert resolved["config.providers.file.class"] == worker["config.providers.file.class"]


def test_declared_list_is_exactly_what_is_enabled(monkeypatch):
    monkeypatch.setenv("CS_TEST_USER", "bob")
    providers, issues = ConfigProviders.from_worker_props({"config.providers": "file"})
    assert issues == []
    _, issues = providers.resolve({"u": "${env:CS_TEST_USER}"})
    [issue] = issues
    assert issue.key == "u"
    assert "${env:CS_TEST_USER}" in issue.message and "not enabled" in issue.message


def test_unresolvable_references_are_issues_without_secrets(secrets_file, tmp_path):
    providers = ConfigProviders({"env": EnvVarConfigProvider(environ={"SET": "s3cret"}), "file": _file()})
    props = {
        "a.password": "${env:UNSET_VARIABLE_XYZ}",
        "b": f"${{file:{secrets_file}:missing.key}}",
        "c": f"${{file:{tmp_path / 'nope.properties'}:k}}",
        "d": "${vault:secret/data:k}",
        "e": "${env:/some/path:SET}",
        "ok": "${env:SET}",
    }
    resolved, issues = providers.resolve(props)
    assert [i.key for i in issues] == ["a.password", "b", "c", "d", "e"]
    assert "UNSET_VARIABLE_XYZ" in issues[0].message and "not set" in issues[0].message
    assert "missing.key" in issues[1].message and str(secrets_file) in issues[1].message
    assert "nope.properties" in issues[2].message
    assert "'vault' is not enabled" in issues[3].message
    assert "takes no path" in issues[4].message
    for issue in issues:
        assert "s3cret" not in issue.message and "hunter2" not in issue.message
    assert resolved["a.password"] == "${env:UNSET_VARIABLE_XYZ}"  # unresolved values are kept as they were
    assert resolved["ok"] == "s3cret"


def _file():
    from connect_spark.config.providers import FileConfigProvider

    return FileConfigProvider()


def test_file_allowed_paths(secrets_file, tmp_path):
    worker = {"config.providers": "file", "config.providers.file.param.allowed.paths": str(tmp_path / "elsewhere")}
    providers, issues = ConfigProviders.from_worker_props(worker)
    assert issues == []
    _, issues = providers.resolve({"p": f"${{file:{secrets_file}:db.password}}"})
    [issue] = issues
    assert "allowed.paths" in issue.message

    worker["config.providers.file.param.allowed.paths"] = str(tmp_path)
    providers, _ = ConfigProviders.from_worker_props(worker)
    resolved, issues = providers.resolve({"p": f"${{file:{secrets_file}:db.password}}"})
    assert issues == [] and resolved["p"] == "hunter2"

    _, issues = ConfigProviders.from_worker_props({**worker, "config.providers.file.param.allowed.paths": "rel"})
    assert issues and "absolute" in issues[0].message


def test_env_allowlist(monkeypatch):
    monkeypatch.setenv("CS_OK", "1")
    monkeypatch.setenv("CS_NO", "2")
    providers, _ = ConfigProviders.from_worker_props(
        {"config.providers": "env", "config.providers.env.param.allowlist.pattern": "CS_OK"}
    )
    resolved, issues = providers.resolve({"a": "${env:CS_OK}", "b": "${env:CS_NO}"})
    assert resolved["a"] == "1" and [i.key for i in issues] == ["b"]


def test_directory_provider(tmp_path):
    (tmp_path / "db-password").write_text("hunter2")
    providers, issues = ConfigProviders.from_worker_props({"config.providers": "directory"})
    assert issues == []
    resolved, issues = providers.resolve(
        {"p": f"${{directory:{tmp_path}:db-password}}", "q": f"${{directory:{tmp_path}:../etc}}"}
    )
    assert resolved["p"] == "hunter2"
    assert [i.key for i in issues] == ["q"]


class UpperProvider(ConfigProvider):
    def configure(self, params):
        self.suffix = params.get("suffix", "")

    def get(self, path, keys):
        return {k: k.upper() + self.suffix for k in keys}


def test_custom_provider_class_by_dotted_path():
    worker = {
        "config.providers": "up",
        "config.providers.up.class": f"{__name__}:UpperProvider",
        "config.providers.up.param.suffix": "!",
    }
    providers, issues = ConfigProviders.from_worker_props(worker)
    assert issues == []
    resolved, _ = providers.resolve({"a": "${up:abc}"})
    assert resolved["a"] == "ABC!"


def test_bad_declarations_are_issues():
    worker = {
        "config.providers": "vault,bad,notprovider",
        "config.providers.bad.class": "no.such.module.Provider",
        "config.providers.notprovider.class": "os.path:join",
    }
    providers, issues = ConfigProviders.from_worker_props(worker)
    assert providers.names() == []
    assert [i.key for i in issues] == [
        "config.providers.vault.class",
        "config.providers.bad.class",
        "config.providers.notprovider.class",
    ]
    assert "Missing required configuration" in issues[0].message
    assert "no.such.module" in issues[1].message and "FileConfigProvider" in issues[1].message
    assert "Not a subclass" in issues[2].message


def test_env_provider_rejects_path_directly():
    with pytest.raises(ConfigException):
        EnvVarConfigProvider(environ=os.environ).get("/x", ["A"])
