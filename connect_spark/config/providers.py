"""Config providers: ``${provider:[path:]key}`` references in configuration values, as in Kafka (KIP-297).

A value such as ``password=${file:/etc/connect/secrets.properties:db.password}`` or
``sasl.jaas.config=... password="${env:KAFKA_PASSWORD}";`` keeps the secret out of the configuration
files; the reference is replaced when the configuration is loaded. Who calls what:

* ``connect_spark.config.validation`` builds :class:`ConfigProviders` from the worker properties with
  :meth:`ConfigProviders.from_worker_props`, then calls :meth:`ConfigProviders.resolve` on the worker
  properties and on every connector's, before anything is parsed.
* The runtime keeps the unresolved configuration for display (REST, status) and runs with the resolved one.

Providers:

* ``env`` (:class:`EnvVarConfigProvider`): ``${env:VAR}``, an environment variable. Param
  ``allowlist.pattern`` (a regex) limits which variables may be read.
* ``file`` (:class:`FileConfigProvider`): ``${file:/path/to/file.properties:key}``, a key of another
  ``.properties`` file. Param ``allowed.paths`` (comma separated directories) limits which files.
* ``directory`` (:class:`DirectoryConfigProvider`): ``${directory:/path/to/dir:file}``, the content of a
  file in a directory (for mounted secrets). Param ``allowed.paths`` as for ``file``.

``env`` and ``file`` are enabled when the worker does not set ``config.providers``. When it does, exactly
the listed providers are enabled, as in Kafka; each is declared by
``config.providers.<name>.class`` (Kafka's class names, connect_spark's, or a dotted path to a
:class:`ConfigProvider` subclass; may be left out for ``env``, ``file`` and ``directory``) and
configured by ``config.providers.<name>.param.<param>``.

Unlike Kafka, which leaves an unresolvable reference in the value as it is, every reference that cannot
be resolved is reported as a :class:`ConfigIssue` naming the key and the reference. Resolved values are
never logged nor put in messages.
"""

from __future__ import annotations

import abc
import importlib
import logging
import os
import re
from typing import Any, Iterable, Mapping

from connect_spark.api.errors import ConfigException
from connect_spark.config.definition import ConfigIssue
from connect_spark.config.properties import load_properties
from connect_spark.config.secrets import masked_value

__all__ = [
    "CONFIG_PROVIDERS",
    "ConfigProvider",
    "EnvVarConfigProvider",
    "FileConfigProvider",
    "DirectoryConfigProvider",
    "ConfigProviders",
    "find_references",
    "is_provider_declaration",
]

log = logging.getLogger(__name__)

CONFIG_PROVIDERS = "config.providers"
"""The worker key listing the enabled provider names."""

_REFERENCE = re.compile(r"\$\{([^}:]*):(?:([^}:]*):)?([^}]*)\}")


def find_references(value: str) -> list[tuple[str, str, str | None, str]]:
    """Every reference in ``value`` as ``(text, provider, path or None, key)``."""
    return [(m.group(0), m.group(1), m.group(2), m.group(3)) for m in _REFERENCE.finditer(value)]


def is_provider_declaration(key: str) -> bool:
    """True for ``config.providers`` and ``config.providers.*``: keys that declare providers, never resolved."""
    return key == CONFIG_PROVIDERS or key.startswith(CONFIG_PROVIDERS + ".")


class ConfigProvider(abc.ABC):
    """Looks up values for references ``${<name>:<path>:<key>}``. Subclass it to add a provider."""

    def configure(self, params: Mapping[str, str]) -> None:
        """Called once with the ``config.providers.<name>.param.*`` keys (prefix stripped).

        Raises:
            ConfigException: for an invalid parameter.
        """

    @abc.abstractmethod
    def get(self, path: str | None, keys: Iterable[str]) -> dict[str, str]:
        """Return the values of ``keys`` under ``path``; a key that does not exist is left out.

        Raises:
            ConfigException: when ``path`` cannot be used at all (unreadable, not allowed); the message
                must not contain secret values.
        """

    def close(self) -> None:
        """Called when the provider is no longer needed."""


def _allowed_paths(params: Mapping[str, str]) -> list[str] | None:
    raw = params.get("allowed.paths", "").strip()
    if not raw:
        return None
    paths = [os.path.normpath(p.strip()) for p in raw.split(",") if p.strip()]
    for path in paths:
        if not os.path.isabs(path):
            raise ConfigException("Each path must be absolute", "allowed.paths", raw)
    return paths


def _check_allowed(path: str, allowed: list[str] | None) -> str:
    normalized = os.path.normpath(path)
    if allowed is not None and not any(
        normalized == root or normalized.startswith(root.rstrip(os.sep) + os.sep) for root in allowed
    ):
        raise ConfigException(f"path {path} is not under allowed.paths ({', '.join(allowed)})")
    return normalized


class EnvVarConfigProvider(ConfigProvider):
    """``${env:VAR}``: environment variables (Kafka's ``EnvVarConfigProvider``).

    Args:
        environ: the environment to read; ``os.environ`` when ``None`` (tests inject their own).
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        self._allow: re.Pattern[str] | None = None

    def configure(self, params: Mapping[str, str]) -> None:
        pattern = params.get("allowlist.pattern")
        if pattern:
            try:
                self._allow = re.compile(pattern)
            except re.error as e:
                raise ConfigException(f"Invalid regular expression: {e}", "allowlist.pattern", pattern) from None

    def get(self, path: str | None, keys: Iterable[str]) -> dict[str, str]:
        if path:
            raise ConfigException("the env provider takes no path: use ${env:VARIABLE}")
        environ = os.environ if self._environ is None else self._environ
        found: dict[str, str] = {}
        for key in keys:
            if self._allow is not None and not self._allow.fullmatch(key):
                continue
            if key in environ:
                found[key] = environ[key]
        return found


class FileConfigProvider(ConfigProvider):
    """``${file:/path/to/file.properties:key}``: a key of a ``.properties`` file (Kafka's ``FileConfigProvider``)."""

    def __init__(self) -> None:
        self._allowed: list[str] | None = None
        self._cache: dict[str, dict[str, str]] = {}

    def configure(self, params: Mapping[str, str]) -> None:
        self._allowed = _allowed_paths(params)

    def get(self, path: str | None, keys: Iterable[str]) -> dict[str, str]:
        if not path:
            raise ConfigException("the file provider needs a path: use ${file:/path/to/file.properties:key}")
        normalized = _check_allowed(path, self._allowed)
        if normalized not in self._cache:
            self._cache[normalized] = load_properties(normalized)
        props = self._cache[normalized]
        return {key: props[key] for key in keys if key in props}


class DirectoryConfigProvider(ConfigProvider):
    """``${directory:/path/to/dir:file}``: the content of a file in a directory (Kafka's ``DirectoryConfigProvider``)."""

    def __init__(self) -> None:
        self._allowed: list[str] | None = None

    def configure(self, params: Mapping[str, str]) -> None:
        self._allowed = _allowed_paths(params)

    def get(self, path: str | None, keys: Iterable[str]) -> dict[str, str]:
        if not path:
            raise ConfigException("the directory provider needs a path: use ${directory:/path/to/dir:file}")
        directory = _check_allowed(path, self._allowed)
        if not os.path.isdir(directory):
            raise ConfigException(f"directory {path} does not exist")
        found: dict[str, str] = {}
        for key in keys:
            file = os.path.join(directory, key)
            if os.path.dirname(os.path.normpath(file)) != directory or not os.path.isfile(file):
                continue
            with open(file, encoding="utf-8") as handle:
                found[key] = handle.read()
        return found


_BUILT_IN: dict[str, type[ConfigProvider]] = {
    "org.apache.kafka.common.config.provider.EnvVarConfigProvider": EnvVarConfigProvider,
    "org.apache.kafka.common.config.provider.FileConfigProvider": FileConfigProvider,
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider": DirectoryConfigProvider,
    "EnvVarConfigProvider": EnvVarConfigProvider,
    "FileConfigProvider": FileConfigProvider,
    "DirectoryConfigProvider": DirectoryConfigProvider,
}
_BY_NAME: dict[str, type[ConfigProvider]] = {
    "env": EnvVarConfigProvider,
    "file": FileConfigProvider,
    "directory": DirectoryConfigProvider,
}
_DEFAULT_ENABLED = ("env", "file")


def _provider_class(name: str, class_name: str) -> type[ConfigProvider]:
    if class_name in _BUILT_IN:
        return _BUILT_IN[class_name]
    module_name, sep, attr = class_name.partition(":")
    if not sep:
        module_name, _, attr = class_name.rpartition(".")
    key = f"{CONFIG_PROVIDERS}.{name}.class"
    if not module_name or not attr:
        raise ConfigException(f"Unknown config provider class; known: {', '.join(sorted(_BUILT_IN))}", key, class_name)
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise ConfigException(
            f"Cannot load config provider class ({e}); known: {', '.join(sorted(_BUILT_IN))}", key, class_name
        ) from None
    if not (isinstance(obj, type) and issubclass(obj, ConfigProvider)):
        raise ConfigException("Not a subclass of connect_spark.config.providers.ConfigProvider", key, class_name)
    return obj


class ConfigProviders:
    """The enabled providers by name, and the substitution of references in whole configurations.

    Args:
        providers: configured providers by name.
    """

    def __init__(self, providers: Mapping[str, ConfigProvider]) -> None:
        self._providers = dict(providers)

    @classmethod
    def default(cls) -> "ConfigProviders":
        """``env`` and ``file``, unconfigured: what a worker that does not set ``config.providers`` gets."""
        return cls({name: _BY_NAME[name]() for name in _DEFAULT_ENABLED})

    @classmethod
    def from_worker_props(cls, props: Mapping[str, Any]) -> tuple["ConfigProviders", list[ConfigIssue]]:
        """Build the providers the worker properties declare (the defaults when none are declared).

        Returns:
            ``(providers, issues)``; a provider whose declaration has a problem is left out and the
            problem is an issue.
        """
        raw = props.get(CONFIG_PROVIDERS)
        if raw is None:
            return cls.default(), []
        names = [n.strip() for n in (raw if isinstance(raw, (list, tuple)) else str(raw).split(",")) if n.strip()]
        providers: dict[str, ConfigProvider] = {}
        issues: list[ConfigIssue] = []
        for name in names:
            class_key = f"{CONFIG_PROVIDERS}.{name}.class"
            class_name = props.get(class_key)
            try:
                if class_name is None or not str(class_name).strip():
                    if name not in _BY_NAME:
                        issues.append(
                            ConfigIssue(
                                class_key,
                                None,
                                f'Missing required configuration "{class_key}" which has no default value.'
                                f" (needed because {CONFIG_PROVIDERS} lists {name!r})",
                            )
                        )
                        continue
                    provider_cls = _BY_NAME[name]
                else:
                    provider_cls = _provider_class(name, str(class_name).strip())
                provider = provider_cls()
                prefix = f"{CONFIG_PROVIDERS}.{name}.param."
                provider.configure({k[len(prefix) :]: str(v) for k, v in props.items() if k.startswith(prefix)})
            except ConfigException as e:
                key = getattr(e, "key", None) or class_key
                if not key.startswith(CONFIG_PROVIDERS):
                    key = f"{CONFIG_PROVIDERS}.{name}.param.{key}"
                issues.append(ConfigIssue(key, getattr(e, "value", None), f"Config provider {name!r}: {e}"))
                continue
            providers[name] = provider
        return cls(providers), issues

    def names(self) -> list[str]:
        """The enabled provider names."""
        return list(self._providers)

    def resolve(self, props: Mapping[str, Any]) -> tuple[dict[str, Any], list[ConfigIssue]]:
        """Replace every reference in the string values of ``props`` (one pass; no nested resolution).

        ``config.providers*`` keys are left as they are. A value with a reference that cannot be
        resolved is kept unresolved in the result and reported.

        Returns:
            ``(resolved props, issues)``.
        """
        wanted: dict[tuple[str, str | None], set[str]] = {}
        for key, value in props.items():
            if isinstance(value, str) and not is_provider_declaration(key):
                for _, provider, path, ref_key in find_references(value):
                    wanted.setdefault((provider, path), set()).add(ref_key)
        found: dict[tuple[str, str | None], dict[str, str]] = {}
        failures: dict[tuple[str, str | None], str] = {}
        for (provider_name, path), keys in wanted.items():
            provider = self._providers.get(provider_name)
            if provider is None:
                enabled = ", ".join(self._providers) or "none"
                failures[(provider_name, path)] = (
                    f"config provider {provider_name!r} is not enabled (enabled: {enabled}; see {CONFIG_PROVIDERS})"
                )
                continue
            try:
                found[(provider_name, path)] = provider.get(path or None, sorted(keys))
            except ConfigException as e:
                failures[(provider_name, path)] = str(e)

        resolved: dict[str, Any] = {}
        issues: list[ConfigIssue] = []
        for key, value in props.items():
            if not isinstance(value, str) or is_provider_declaration(key) or "${" not in value:
                resolved[key] = value
                continue
            problems: list[str] = []

            def substitute(match: re.Match[str]) -> str:
                provider_name, path, ref_key = match.group(1), match.group(2), match.group(3)
                where = (provider_name, path)
                if where in failures:
                    problems.append(f"cannot resolve {match.group(0)}: {failures[where]}")
                    return match.group(0)
                values = found[where]
                if ref_key not in values:
                    problems.append(f"cannot resolve {match.group(0)}: {_not_found(provider_name, path, ref_key)}")
                    return match.group(0)
                log.debug("Resolved %s in configuration %s", match.group(0), key)
                return values[ref_key]

            new_value = _REFERENCE.sub(substitute, value)
            if problems:
                shown = masked_value(key, value)
                for problem in problems:
                    issues.append(ConfigIssue(key, shown, f"Invalid value for configuration {key}: {problem}"))
                resolved[key] = value
            else:
                resolved[key] = new_value
        return resolved, issues

    def close(self) -> None:
        """Close every provider."""
        for provider in self._providers.values():
            provider.close()


def _not_found(provider: str, path: str | None, key: str) -> str:
    if provider == "env":
        return f"environment variable {key} is not set (or not allowed by allowlist.pattern)"
    if provider == "file":
        return f"no key {key!r} in {path}"
    if provider == "directory":
        return f"no file {key!r} in {path}"
    return f"provider {provider!r} has no key {key!r}" + (f" under {path}" if path else "")
