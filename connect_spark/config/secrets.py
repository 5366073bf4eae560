"""Which configuration keys hold secrets, and masking them before a configuration is shown.

Called wherever a configuration leaves the process or reaches a human: log lines, the status and
config topics, the REST API, and the messages of configuration errors. Masking replaces the value by
``[hidden]``; the configuration used to run the connector is never changed.

A key is secret when it is declared ``Type.PASSWORD`` in a :class:`ConfigDef` given to the check, or
when its name looks like one by the conventions of Kafka and of common connectors (``*password``,
``sasl.jaas.config``, ``*.key``, ``*secret``, ``*token``, ``basic.auth.user.info`` ...). Any
:class:`~connect_spark.config.definition.Password` value is masked whatever its key. A value made only
of config-provider references (``${file:/etc/secrets.properties:db.password}``) names where the secret
lives, not the secret, and is shown as it is.

Secrets written inside other values are masked too: a ``password`` (``passwd``, ``pwd``) parameter of a
URL (``jdbc:postgresql://db/shop?user=sink&password=s3cret``) and the password of a URL's user info
(``https://user:s3cret@host/``) become ``[hidden]``, the rest of the value stays readable.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from connect_spark.config.definition import ConfigDef, Password, Type

__all__ = ["HIDDEN", "is_secret_key", "masked", "masked_value", "without_embedded_secrets"]

HIDDEN = Password.HIDDEN

# Whole names (or the tail of a prefixed name, after a dot) that hold secrets.
_SECRET_NAMES = frozenset({"sasl.jaas.config", "basic.auth.user.info"})
# Endings (no dot needed) that mark a secret: ssl.key.password, db_password, client.secret, access.token ...
_SECRET_SUFFIXES = ("password", "passwd", "secret", "token", "credential", "credentials", "apikey",
                    "secret-access-key")
# Endings after a dot: ssl.keystore.key, aws.secret.access.key, private.key ...
_SECRET_DOTTED_SUFFIXES = (".key",)
_REFERENCE_ONLY = re.compile(r"^(?:\s*\$\{[^}:]*:[^}]*\}\s*)+$")
# A URL parameter holding a password (?password=..., &pwd=..., ;password=...), up to the next separator.
_PASSWORD_PARAMETER = re.compile(r"(?i)([?&;](?:password|passwd|pwd)=)[^&;#\s]*")
# The password of a URL's user info: scheme://user:password@host
_USER_INFO_PASSWORD = re.compile(r"(://[^/?#@:\s]*:)[^/?#@\s]*(@)")


def is_secret_key(key: str, config_def: ConfigDef | None = None, extra: Iterable[str] = ()) -> bool:
    """True when the value of ``key`` must not be shown.

    Args:
        key: the configuration key, possibly prefixed (``consumer.override.sasl.jaas.config``).
        config_def: a declaration whose ``PASSWORD`` keys are secret.
        extra: further exact key names to treat as secret.
    """
    if config_def is not None:
        declared = config_def.keys.get(key)
        if declared is not None and declared.type is Type.PASSWORD:
            return True
    if key in extra:
        return True
    lowered = key.lower()
    if lowered.endswith(_SECRET_SUFFIXES) or lowered.endswith(_SECRET_DOTTED_SUFFIXES):
        return True
    return any(lowered == name or lowered.endswith("." + name) for name in _SECRET_NAMES)


def masked_value(key: str, value: Any, config_def: ConfigDef | None = None) -> Any:
    """``value`` as it may be shown: ``[hidden]`` for a secret, the value itself otherwise."""
    if isinstance(value, Password):
        return HIDDEN
    if value is None or value == "":
        return value
    if is_secret_key(key, config_def):
        if isinstance(value, str) and _REFERENCE_ONLY.match(value):
            return value
        return HIDDEN
    return without_embedded_secrets(value) if isinstance(value, str) else value


def without_embedded_secrets(text: str) -> str:
    """``text`` with the passwords written inside URLs (a ``password=`` parameter, ``user:password@``)
    replaced by ``[hidden]``; a password that is only a config-provider reference is kept."""
    def hide(match: "re.Match[str]") -> str:
        secret = match.string[match.end(1):match.end()] if match.re is _PASSWORD_PARAMETER else ""
        if secret and _REFERENCE_ONLY.match(secret):
            return match.group(0)
        return match.group(1) + HIDDEN + (match.group(2) if match.re is _USER_INFO_PASSWORD else "")

    return _USER_INFO_PASSWORD.sub(hide, _PASSWORD_PARAMETER.sub(hide, text))


def masked(config: Mapping[str, Any], config_def: ConfigDef | None = None) -> dict[str, Any]:
    """A copy of ``config`` with every secret value replaced by ``[hidden]``.

    Empty and missing values stay as they are, so that "not set" can still be told from "set".
    """
    return {key: masked_value(key, value, config_def) for key, value in config.items()}
