"""Requests a worker of a group hands on to the worker that runs the connector, as Kafka Connect forwards them.

Most writes need no forwarding here: they go to the shared config topic, which every worker reads (the
owner sees a new config or target state within a second). A restart has no record in the config topic,
so the herder of a worker that does not run the connector sends it, with the same query, to the REST API
of the worker its status names (``worker_id`` is that worker's ``host:port``).
"""

from __future__ import annotations

import base64
import logging
import urllib.error
import urllib.parse
import urllib.request
from typing import Mapping

from connect_spark.herder.errors import ConflictError

__all__ = ["forward_post"]

log = logging.getLogger(__name__)


def forward_post(worker_id: str, path: str, query: Mapping[str, str], basic_auth: tuple[str, str] | None,
                 timeout_s: float = 30.0) -> int:
    """POST ``path`` (with ``query``) to the worker ``worker_id``; returns its HTTP status.

    Raises:
        ConflictError: the worker cannot be reached (it may be leaving the group): try again shortly.
    """
    url = f"http://{worker_id}{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    request = urllib.request.Request(url, data=b"", method="POST")
    if basic_auth is not None:
        token = base64.b64encode(f"{basic_auth[0]}:{basic_auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError as e:
        log.warning("Forwarding POST %s to worker %s failed: %s", path, worker_id, e)
        raise ConflictError(f"The worker running the connector ({worker_id}) cannot be reached; try again") from None
