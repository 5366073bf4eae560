"""The shared shape of a parsed configuration (worker or connector): originals, typed values, checks.

:class:`AbstractConfig` is the base of ``WorkerConfig`` and ``ConnectorConfig``. Building one:

1. replaces config-provider references (``${env:VAR}``, ``${file:path:key}``) in the properties;
2. parses them against the subclass's ``CONFIG_DEF``;
3. runs the subclass's cross-key checks (:meth:`AbstractConfig._cross_check`);

and collects every problem of all three steps. The constructor raises one
:class:`ConfigValidationError` with all of them; :meth:`AbstractConfig.check` returns them instead
(``connect_spark.config.validation`` uses it to report the worker and every connector at once).
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping, TypeVar

from connect_spark.config.definition import ConfigDef, ConfigIssue, ConfigValidationError
from connect_spark.config.providers import ConfigProviders
from connect_spark.config.secrets import masked

__all__ = ["AbstractConfig"]

_C = TypeVar("_C", bound="AbstractConfig")


class AbstractConfig:
    """A parsed, valid configuration.

    Args:
        props: the properties as read (strings, or values already of the right type).
        providers: the config providers to resolve references with; when ``None``, the subclass
            decides (:meth:`_default_providers`).

    Raises:
        ConfigValidationError: listing every problem.
    """

    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef()

    def __init__(self, props: Mapping[str, Any], providers: ConfigProviders | None = None) -> None:
        resolved, values, issues = self._collect(props, providers)
        if issues:
            raise ConfigValidationError(issues)
        self._setup(props, resolved, values)

    @classmethod
    def check(
        cls: type[_C], props: Mapping[str, Any], providers: ConfigProviders | None = None
    ) -> tuple[_C | None, list[ConfigIssue]]:
        """Build the configuration without raising.

        Returns:
            ``(config, [])`` when valid, ``(None, issues)`` otherwise.
        """
        resolved, values, issues = cls._collect(props, providers)
        if issues:
            return None, issues
        config = cls.__new__(cls)
        config._setup(props, resolved, values)
        return config, []

    @classmethod
    def _default_providers(cls, props: Mapping[str, Any]) -> tuple[ConfigProviders, list[ConfigIssue]]:
        """The providers used when none are given: ``env`` and ``file``. The worker reads its declarations."""
        return ConfigProviders.default(), []

    @classmethod
    def _cross_check(cls, props: Mapping[str, Any], values: Mapping[str, Any]) -> list[ConfigIssue]:
        """Problems that involve more than one key, or undeclared (prefixed) keys.

        Args:
            props: the resolved properties.
            values: the parsed values; a key whose value was invalid is missing from it.
        """
        return []

    @classmethod
    def _collect(
        cls, props: Mapping[str, Any], providers: ConfigProviders | None
    ) -> tuple[dict[str, Any], dict[str, Any], list[ConfigIssue]]:
        issues: list[ConfigIssue] = []
        if providers is None:
            providers, issues = cls._default_providers(props)
        resolved, provider_issues = providers.resolve(props)
        issues += provider_issues
        unresolved = {issue.key for issue in provider_issues}
        values, parse_issues = cls.CONFIG_DEF.parse_with_issues(resolved)
        issues += [issue for issue in parse_issues if issue.key not in unresolved]
        issues += [issue for issue in cls._cross_check(resolved, values) if issue.key not in unresolved]
        return resolved, values, issues

    def _setup(self, originals: Mapping[str, Any], resolved: dict[str, Any], values: dict[str, Any]) -> None:
        self._originals = dict(originals)
        self._resolved = resolved
        self._values = values

    def get(self, key: str) -> Any:
        """The typed value of a declared key, or the (resolved) raw value of an undeclared one, or ``None``."""
        if key in self._values:
            return self._values[key]
        return self._resolved.get(key)

    @property
    def values(self) -> dict[str, Any]:
        """Typed values of every declared key, defaults included (a copy)."""
        return dict(self._values)

    @property
    def originals(self) -> dict[str, Any]:
        """The properties as given, config-provider references unresolved (a copy; safe to display masked)."""
        return dict(self._originals)

    @property
    def resolved(self) -> dict[str, Any]:
        """The properties with config-provider references replaced (a copy; may hold secrets)."""
        return dict(self._resolved)

    def originals_with_prefix(self, prefix: str, strip: bool = True) -> dict[str, Any]:
        """The resolved properties whose key starts with ``prefix``, with the prefix removed when ``strip``."""
        return {
            (key[len(prefix) :] if strip else key): value
            for key, value in self._resolved.items()
            if key.startswith(prefix) and len(key) > len(prefix)
        }

    def masked(self) -> dict[str, Any]:
        """The original properties with secrets replaced by ``[hidden]``, for logs, status and REST."""
        return masked(self._originals, self.CONFIG_DEF)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.masked()!r})"
