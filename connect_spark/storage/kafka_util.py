"""Small helpers the Kafka-backed stores share: client settings, topic creation, reading a topic to its end.

Used by :class:`~connect_spark.storage.kafka_offsets.KafkaOffsetStore` today and meant for the status and
config stores as well, which need the same three things Kafka Connect's ``TopicAdmin`` and ``KafkaBasedLog``
give its backing stores:

* :func:`kafka_client_kwargs` turns Kafka-style client settings (``security.protocol``, ``sasl.*``,
  ``ssl.*``, as a worker ``.properties`` file spells them) into kafka-python keyword arguments.
* :func:`ensure_topic` creates a storage topic with its configuration when it is missing (lowering a
  replication factor the cluster cannot satisfy) and checks that an existing one is compacted.
* :class:`TopicTailReader` keeps one consumer assigned to every partition of a topic, without a consumer
  group, and hands each record to a callback up to the end offsets taken when it is asked to catch up.

Nothing here is created at import time; every client is owned and closed by the store that made it.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any, Callable, Iterable, Mapping

from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError, TopicAlreadyExistsError
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.errors import ConfigException, ConnectException
from connect_spark.api.records import position_text
from connect_spark.config.definition import Password
from connect_spark.storage.kafka_tls import check_handshake, ssl_context, uses_tls

__all__ = [
    "KafkaStoreError",
    "kafka_client_kwargs",
    "accepted_kwargs",
    "parse_jaas_config",
    "effective_replication_factor",
    "ensure_topic",
    "TopicTailReader",
    "KafkaAuthenticationError",
    "check_authentication",
]

log = logging.getLogger(__name__)


class KafkaStoreError(ConnectException):
    """A storage topic could not be created, read or written; the message names the topic and the cause."""


class KafkaAuthenticationError(KafkaStoreError):
    """The Kafka cluster refused the client's credentials (``sasl.jaas.config``, ``sasl.mechanism`` ...)."""


# --------------------------------------------------------------------------------------------------
# Client settings
# --------------------------------------------------------------------------------------------------

# Kafka client keys that translate one to one (after a type conversion) into kafka-python arguments.
_DIRECT: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "security.protocol": ("security_protocol", lambda v: str(v).strip().upper()),
    "sasl.mechanism": ("sasl_mechanism", lambda v: str(v).strip().upper()),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", str),
    "client.id": ("client_id", str),
    "request.timeout.ms": ("request_timeout_ms", int),
    "retry.backoff.ms": ("retry_backoff_ms", int),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", int),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", int),
    "connections.max.idle.ms": ("connections_max_idle_ms", int),
    "metadata.max.age.ms": ("metadata_max_age_ms", int),
}
# Keys read together with others below, or that the caller passes by other means.
_HANDLED = frozenset({"bootstrap.servers", "sasl.jaas.config"})
_PASSWORD_MODULES = ("PlainLoginModule", "ScramLoginModule")
_OAUTH_MODULE = "OAuthBearerLoginModule"
# SASL mechanisms kafka-python serves from a user name and password in sasl.jaas.config.
_PASSWORD_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})


def _plain(value: Any) -> Any:
    """The value itself; a :class:`~connect_spark.config.definition.Password` is unwrapped."""
    return value.value if isinstance(value, Password) else value


def kafka_client_kwargs(
    config: Mapping[str, Any] | None, client_class: type | None = None
) -> dict[str, Any]:
    """Translate Kafka client settings into kafka-python keyword arguments.

    Called by the Kafka-backed stores when they create their clients in ``start``, with the worker's
    ``security.protocol``/``sasl.*``/``ssl.*`` keys (``WorkerConfig.kafka_client_config()``).

    What is translated:

    * ``security.protocol``, ``sasl.mechanism``, ``sasl.kerberos.service.name``, ``client.id`` and a few
      timing keys (``request.timeout.ms``, ``retry.backoff.ms``, ...).
    * ``sasl.jaas.config`` with ``PlainLoginModule`` or ``ScramLoginModule``: its ``username`` and
      ``password`` options become ``sasl_plain_username``/``sasl_plain_password`` (kafka-python uses
      those for PLAIN and SCRAM alike). Other login modules cannot be expressed and are skipped with a
      WARN. ``OAuthBearerLoginModule`` with ``sasl.mechanism=OAUTHBEARER`` becomes a
      ``sasl_oauth_token_provider`` (:mod:`connect_spark.storage.kafka_oauth`: client credentials or
      unsecured tokens). A mechanism the Python clients cannot serve, or PLAIN/SCRAM without a user name
      and password, is refused with a ``ConfigException`` naming the key.
    * With ``security.protocol`` ``SSL`` or ``SASL_SSL``, every ``ssl.*`` key (JKS, PKCS12 or PEM stores,
      inline PEM keys, host name checking, protocols) becomes one ``ssl_context``
      (:func:`connect_spark.storage.kafka_tls.ssl_context`); otherwise ``ssl.*`` keys are ignored, as Kafka
      ignores them.

    Every other key is ignored with a DEBUG line naming the key, never its value.

    Args:
        config: Kafka-style settings; values may be strings, numbers or ``Password`` objects.
        client_class: when given (``KafkaProducer``, ``KafkaConsumer``, ``KafkaAdminClient``), only the
            arguments that class accepts are returned.

    Returns:
        kafka-python keyword arguments (secrets in plain text: never log this dict).
    """
    kwargs: dict[str, Any] = {}
    config = {str(k): _plain(v) for k, v in (config or {}).items()}
    ignored: list[str] = []
    for key, value in config.items():
        if value is None:
            continue
        if key in _DIRECT:
            name, convert = _DIRECT[key]
            try:
                kwargs[name] = convert(value)
            except (TypeError, ValueError):
                raise ConfigException("Not a valid value for a Kafka client setting", key, value) from None
        elif key not in _HANDLED and not key.startswith("ssl."):
            ignored.append(key)

    jaas = config.get("sasl.jaas.config")
    module, options = "", {}
    if jaas:
        try:
            module, options = parse_jaas_config(str(jaas))
        except ValueError as e:
            raise ConfigException(f"Cannot parse the JAAS configuration: {e}", "sasl.jaas.config", "[hidden]") from None
        if module.endswith(_PASSWORD_MODULES):
            if "username" in options:
                kwargs["sasl_plain_username"] = options["username"]
            if "password" in options:
                kwargs["sasl_plain_password"] = options["password"]
        elif not module.endswith(_OAUTH_MODULE):
            log.warning("sasl.jaas.config uses %s, which the Python Kafka client of the storage topics cannot use; "
                        "only PlainLoginModule, ScramLoginModule and OAuthBearerLoginModule are translated", module)

    if uses_tls(config):
        kwargs["ssl_context"] = ssl_context(config)
    if str(kwargs.get("security_protocol", "")).startswith("SASL"):
        _check_mechanism(kwargs)
        if kwargs.get("sasl_mechanism") == "OAUTHBEARER":
            from connect_spark.storage.kafka_oauth import token_provider

            kwargs["sasl_oauth_token_provider"] = token_provider(config, options, kwargs.get("ssl_context"))

    if ignored:
        log.debug("Kafka client settings not used by the storage clients: %s", ", ".join(sorted(ignored)))
    return kwargs if client_class is None else accepted_kwargs(client_class, kwargs)


def _check_mechanism(kwargs: Mapping[str, Any]) -> None:
    """Refuse a SASL mechanism the Python clients cannot serve, naming the key (never a secret)."""
    mechanism = str(kwargs.get("sasl_mechanism", "GSSAPI"))
    if mechanism in _PASSWORD_MECHANISMS:
        if "sasl_plain_username" not in kwargs or "sasl_plain_password" not in kwargs:
            raise ConfigException(
                f"sasl.mechanism={mechanism} needs sasl.jaas.config with PlainLoginModule (PLAIN) or ScramLoginModule "
                "(SCRAM) and its username and password options", "sasl.jaas.config", "[hidden]")
    elif mechanism not in ("GSSAPI", "OAUTHBEARER"):
        raise ConfigException("Not a SASL mechanism the Python Kafka clients can use; allowed: PLAIN, SCRAM-SHA-256, "
                              "SCRAM-SHA-512, OAUTHBEARER, GSSAPI", "sasl.mechanism", mechanism)


def accepted_kwargs(client_class: type, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` without the arguments ``client_class`` does not take (kafka-python refuses unknown ones).

    kafka-python's producer, consumer and admin client take different sets (the admin client has no
    ``ssl_ciphers``, for one); their ``DEFAULT_CONFIG`` lists what each takes.
    """
    accepted = getattr(client_class, "DEFAULT_CONFIG", None)
    if accepted is None:
        return dict(kwargs)
    dropped = sorted(k for k in kwargs if k not in accepted)
    if dropped:
        log.debug("%s does not take %s", client_class.__name__, ", ".join(dropped))
    return {k: v for k, v in kwargs.items() if k in accepted}


_JAAS_HEAD = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b", re.IGNORECASE)
_JAAS_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas_config(text: str) -> tuple[str, dict[str, str]]:
    """Parse one JAAS login module entry as ``sasl.jaas.config`` holds it.

    ``org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";``
    gives ``("org.apache...PlainLoginModule", {"username": "u", "password": "p"})``. Quoted values may
    contain backslash escapes.

    Raises:
        ValueError: the text is not a login module entry (the message never contains option values).
    """
    head = _JAAS_HEAD.match(text)
    if head is None:
        raise ValueError("expected '<LoginModule class> <flag> [option=value ...];'")
    options: dict[str, str] = {}
    position = head.end()
    while True:
        match = _JAAS_OPTION.match(text, position)
        if match is None:
            break
        name, quoted, bare = match.groups()
        options[name] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        position = match.end()
    rest = text[position:].strip()
    if rest not in (";", ""):
        raise ValueError(f"unexpected text after option {len(options)} of the login module entry")
    return head.group(1), options


# --------------------------------------------------------------------------------------------------
# Authentication
# --------------------------------------------------------------------------------------------------


class _AuthFailureWatch(logging.Handler):
    """Notes the first SASL authentication failure kafka-python reports while it retries a bootstrap.

    kafka-python retries a bootstrap whose authentication fails until its timeout and then raises a bare
    "Unable to bootstrap"; the reason is only in its log records, which this handler reads.
    """

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.reason: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.reason is not None:
            return
        from kafka.errors import SaslAuthenticationFailedError

        for arg in record.args if isinstance(record.args, tuple) else ():
            if isinstance(arg, SaslAuthenticationFailedError):
                self.reason = str(arg).split(": ")[-1]
                return
        try:
            message = record.getMessage()
        except Exception:
            return
        if "SaslAuthenticationFailedError" in message:
            self.reason = message.rsplit(": ", 1)[-1]


def check_authentication(
    config: Mapping[str, Any], bootstrap_servers: str, timeout_s: float = 20.0, what: str = "Kafka"
) -> None:
    """Fail fast with a clear message when the cluster refuses the configured SASL credentials.

    Called from the ``start`` of the Kafka-backed stores, before their clients are made, so that a wrong
    password stops the worker within seconds with an error naming the keys to check, instead of a long
    bootstrap timeout. With ``SSL`` or ``SASL_SSL``, a broker certificate the truststore does not trust is
    reported first (:func:`connect_spark.storage.kafka_tls.check_handshake`). The SASL check does nothing
    unless ``security.protocol`` is ``SASL_PLAINTEXT`` or ``SASL_SSL``. Other connection problems are left
    to the caller's clients to report.

    Args:
        config: Kafka-style client settings (as given to :func:`kafka_client_kwargs`).
        bootstrap_servers: the cluster.
        timeout_s: how long to try.
        what: who connects, for the message (``"the offsets topic connect-offsets"``).

    Raises:
        KafkaAuthenticationError: the broker answered with an authentication failure (the message names
            the user and mechanism, never the password).
        ConfigException: a store cannot be read, or the broker's certificate is not trusted.
    """
    kwargs = kafka_client_kwargs(config, KafkaAdminClient)
    check_handshake({str(k): _plain(v) for k, v in config.items()}, bootstrap_servers)
    protocol = str(kwargs.get("security_protocol", "PLAINTEXT"))
    if not protocol.startswith("SASL"):
        return
    watch = _AuthFailureWatch()
    kafka_log = logging.getLogger("kafka")
    # kafka-python reports the reason at levels the worker's logging may filter out: see every record for
    # the (short) duration of the check, without passing them on to the worker's log.
    level, propagate = kafka_log.level, kafka_log.propagate
    kafka_log.setLevel(logging.DEBUG)
    kafka_log.propagate = False
    kafka_log.addHandler(watch)
    admin = None
    try:
        # A refused login shows as an explicit error or, when the broker's close wins the race, as a bare
        # disconnect: retry often (backoff at most 200 ms) so that one of the attempts reads the error.
        admin = KafkaAdminClient(**{**kwargs, "bootstrap_servers": bootstrap_servers,
                                    "client_id": "connect-spark-auth-check",
                                    "reconnect_backoff_max_ms": 200,
                                    "bootstrap_timeout_ms": int(timeout_s * 1000)})
    except KafkaError:
        if watch.reason is None:
            return  # not an authentication problem: the caller's own clients report it
    finally:
        kafka_log.removeHandler(watch)
        kafka_log.setLevel(level)
        kafka_log.propagate = propagate
        if admin is not None:
            admin.close()
    if watch.reason is not None and admin is None:
        user = kwargs.get("sasl_plain_username")
        raise KafkaAuthenticationError(
            f"Authentication to Kafka at {bootstrap_servers} failed for {what} "
            f"(security.protocol={protocol}, sasl.mechanism={kwargs.get('sasl_mechanism', 'GSSAPI')}"
            f"{f', user {user!r}' if user else ''}): {watch.reason}. Check the username and password in "
            "sasl.jaas.config (and sasl.mechanism) against the broker's listener")


# --------------------------------------------------------------------------------------------------
# Topics
# --------------------------------------------------------------------------------------------------


def effective_replication_factor(admin: KafkaAdminClient, requested: int, topic: str) -> int:
    """The replication factor to create ``topic`` with.

    ``-1`` is passed on (the broker's ``default.replication.factor``, brokers 2.4+). A factor larger than
    the number of live brokers is lowered to that number with a WARN, so that the Kafka Connect default
    of 3 works on a one-broker development or test cluster; Kafka Connect itself fails in that case. The
    WARN is the operator's cue to raise it later (``kafka-reassign-partitions``) on a real cluster.
    """
    if requested == -1:
        return -1
    if requested < 1:
        raise ConfigException("Must be at least 1, or -1 for the broker's default", "replication.factor", requested)
    brokers = [b for b in admin.describe_cluster().get("brokers", []) if not b.get("is_fenced")]
    if brokers and len(brokers) < requested:
        log.warning("Creating topic %s with replication factor %d instead of %d: the cluster has only %d broker(s)",
                    topic, len(brokers), requested, len(brokers))
        return len(brokers)
    return requested


def _describe_topic(admin: KafkaAdminClient, topic: str) -> dict[str, Any] | None:
    """The metadata of ``topic``, or ``None`` when it does not exist."""
    for described in admin.describe_topics([topic]):
        if described.get("name") == topic:
            if described.get("error_code", 0) == 3:  # UNKNOWN_TOPIC_OR_PARTITION
                return None
            if described.get("error_code", 0):
                raise KafkaStoreError(f"Cannot describe topic {topic}: Kafka error code {described['error_code']}")
            return described
    return None


def ensure_topic(
    admin: KafkaAdminClient,
    topic: str,
    partitions: int,
    replication_factor: int,
    topic_configs: Mapping[str, str] | None = None,
    *,
    config_key: str = "topic",
    require_compact: bool = True,
    timeout_ms: int = 30000,
) -> bool:
    """Create a storage topic if it is missing; check an existing one.

    Called from the ``start`` of the Kafka-backed stores, before any client reads or writes the topic,
    as Kafka Connect's backing stores do with ``TopicAdmin.createOrFindTopics``.

    A new topic gets ``partitions``, the :func:`effective_replication_factor` and ``topic_configs``, with
    ``cleanup.policy=compact`` when ``require_compact``. An existing topic is left as it is (its partition
    count too) except that, when ``require_compact``, a cleanup policy other than ``compact`` is refused,
    since deleting old segments would lose the latest record of rarely written keys.

    Args:
        admin: the store's admin client.
        topic: topic name.
        partitions: partitions of a new topic.
        replication_factor: requested replication factor; -1 for the broker's default.
        topic_configs: further topic configuration of a new topic.
        config_key: the worker key that named the topic, for messages (``offset.storage.topic``).
        require_compact: create compacted and refuse an existing topic that is not.
        timeout_ms: how long to wait for the new topic's partitions to get leaders.

    Returns:
        ``True`` when this call created the topic.

    Raises:
        ConfigException: the existing topic is not compacted.
        KafkaStoreError: the topic could not be created or described.
    """
    configs = {str(k): str(v) for k, v in (topic_configs or {}).items()}
    if require_compact:
        configs["cleanup.policy"] = "compact"
    created = False
    try:
        if _describe_topic(admin, topic) is None:
            rf = effective_replication_factor(admin, replication_factor, topic)
            try:
                admin.create_topics(
                    {topic: {"num_partitions": partitions, "replication_factor": rf, "configs": configs}},
                    timeout_ms=timeout_ms,
                )
                created = True
                log.info("Created topic %s (%s) with %d partition(s), replication factor %s, %s", topic, config_key,
                         partitions, rf, ", ".join(f"{k}={v}" for k, v in sorted(configs.items())))
            except TopicAlreadyExistsError:
                log.debug("Topic %s was created by someone else meanwhile", topic)
        admin.wait_for_topics([topic], timeout_ms=timeout_ms)
    except KafkaError as e:
        raise KafkaStoreError(f"Cannot create or find topic {topic} ({config_key}): {e}") from e
    if require_compact and not created:
        _check_compacted(admin, topic, config_key)
    return created


def _check_compacted(admin: KafkaAdminClient, topic: str, config_key: str) -> None:
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        entry = described["topic"][topic].get("cleanup.policy") or {}
        policy = entry.get("value")
    except (KafkaError, KeyError, TypeError) as e:
        # As Kafka Connect does: without DESCRIBE_CONFIGS rights the check is skipped, not fatal.
        log.warning("Cannot check the cleanup policy of topic %s (%s): %s", topic, config_key, e)
        return
    policies = {p.strip().lower() for p in (policy or "").split(",") if p.strip()}
    if policies != {"compact"}:
        raise ConfigException(
            f"Topic '{topic}' is required to have 'cleanup.policy=compact' to guarantee that the latest value of "
            f"every key is kept, but it has 'cleanup.policy={policy}'. Change the topic's policy or use another topic",
            config_key,
            topic,
        )


# --------------------------------------------------------------------------------------------------
# Reading a topic to its end
# --------------------------------------------------------------------------------------------------


class TopicTailReader:
    """Reads every partition of a (compacted) topic from the beginning, and later from where it stopped.

    Owned by a Kafka-backed store: created and :meth:`start`-ed in the store's ``start``, asked to
    :meth:`read_to_end` whenever the store needs the topic's current contents, closed in the store's
    ``stop``. It uses one consumer with manual assignment and no group, so nothing is committed and no
    rebalance happens; partitions added to the topic later are picked up from their beginning.

    :meth:`read_to_end` takes the end offsets first and then consumes until every partition's position
    has reached them, handing each record to the callback in partition order. Records written after the
    end offsets were taken may or may not be included. Thread-safe: concurrent callers are serialized.

    Args:
        topic: the topic to read.
        on_record: called with each ``kafka.consumer.fetcher.ConsumerRecord``; exceptions propagate.
        consumer_kwargs: kafka-python consumer arguments (``bootstrap_servers``, security ...).
    """

    def __init__(
        self,
        topic: str,
        on_record: Callable[[Any], None],
        consumer_kwargs: Mapping[str, Any],
    ) -> None:
        self.topic = topic
        self._on_record = on_record
        self._consumer_kwargs = dict(consumer_kwargs)
        self._consumer: KafkaConsumer | None = None
        self._assigned: list[KafkaTopicPartition] = []
        self._lock = threading.RLock()

    def start(self) -> None:
        """Create the consumer and assign every partition of the topic, positioned at the beginning."""
        with self._lock:
            if self._consumer is not None:
                return
            kwargs = {
                "group_id": None,
                "enable_auto_commit": False,
                "auto_offset_reset": "earliest",
                "allow_auto_create_topics": False,
                **self._consumer_kwargs,
            }
            self._consumer = KafkaConsumer(**kwargs)
            self._assigned = []
            self._refresh_assignment()

    def _refresh_assignment(self) -> None:
        assert self._consumer is not None
        # Served from the metadata cache; asks the cluster when the topic is not in it yet.
        partitions = self._consumer.partitions_for_topic(self.topic)
        if not partitions:
            raise KafkaStoreError(f"Topic {self.topic} does not exist or has no partitions")
        wanted = [KafkaTopicPartition(self.topic, p) for p in sorted(partitions)]
        new = [tp for tp in wanted if tp not in self._assigned]
        if new:
            self._consumer.assign(wanted)
            # assign() keeps the positions of partitions that stay assigned.
            self._consumer.seek_to_beginning(*new)
            self._assigned = wanted
            log.debug("Reading topic %s from the beginning of partition(s) %s", self.topic,
                      ", ".join(str(tp.partition) for tp in new))

    def read_to_end(self, timeout_s: float = 60.0) -> int:
        """Consume from the current positions up to the end offsets taken now.

        Args:
            timeout_s: how long the whole catch-up may take.

        Returns:
            how many records were handed to the callback.

        Raises:
            KafkaStoreError: the reader is not started, the topic cannot be read, or the end was not
                reached within ``timeout_s``.
        """
        with self._lock:
            consumer = self._consumer
            if consumer is None:
                raise KafkaStoreError(f"The reader of topic {self.topic} is not started")
            deadline = time.monotonic() + timeout_s
            count = 0
            try:
                self._refresh_assignment()
                end = consumer.end_offsets(self._assigned)
                behind = self._behind(end)
                while behind:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        lag = ", ".join(f"{position_text(self.topic, tp.partition, consumer.position(tp))} "
                                        f"(end {end[tp]})" for tp in behind)
                        raise KafkaStoreError(
                            f"Timed out after {timeout_s:.0f} s reading topic {self.topic} to its end: {lag}")
                    batches = consumer.poll(timeout_ms=int(min(remaining, 1.0) * 1000))
                    for tp in sorted(batches):
                        for record in batches[tp]:
                            self._on_record(record)
                            count += 1
                    behind = self._behind(end)
            except KafkaError as e:
                raise KafkaStoreError(f"Cannot read topic {self.topic}: {e}") from e
            return count

    def _behind(self, end: Mapping[KafkaTopicPartition, int]) -> list[KafkaTopicPartition]:
        assert self._consumer is not None
        behind = []
        for tp in self._assigned:
            position = self._consumer.position(tp, timeout_ms=5000)
            if position is None or position < end.get(tp, 0):  # None: not resolved within the timeout
                behind.append(tp)
        return behind

    def close(self) -> None:
        """Close the consumer; :meth:`start` may be called again afterwards."""
        with self._lock:
            consumer, self._consumer = self._consumer, None
            self._assigned = []
            if consumer is not None:
                try:
                    consumer.close(autocommit=False)
                except Exception as e:  # closing must not hide the caller's own error
                    log.debug("Closing the reader of topic %s failed: %s", self.topic, e)


def close_quietly(clients: Iterable[Any], what: str) -> None:
    """Close each client, logging (not raising) failures; used by the stores' ``stop``."""
    for client in clients:
        if client is None:
            continue
        try:
            client.close()
        except Exception as e:
            log.debug("Closing %s of %s failed: %s", type(client).__name__, what, e)
