"""Waiting in tests for something that happens in another thread or process, without a fixed sleep."""

from __future__ import annotations

import subprocess
import time
from typing import Callable, TypeVar

__all__ = ["wait_for", "wait_for_worker"]

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float = 10.0, what: str = "the condition",
             proc: "subprocess.Popen | None" = None, interval: float = 0.5,
             ignore: tuple[type[BaseException], ...] = ()) -> T:
    """Call ``condition`` every ``interval`` seconds until it returns something true, and return that.

    Args:
        condition: the check; an exception of a type in ``ignore`` counts as "not yet" (e.g. ``OSError``
            while a server starts), any other is raised.
        timeout: seconds before giving up: a hang guard, not a statement about speed.
        what: named in the failure message.
        proc: a process the condition depends on; its exit fails the wait at once.

    Raises:
        AssertionError: ``proc`` exited, or ``timeout`` passed.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process exited ({proc.returncode}) while waiting for {what}")
        try:
            result = condition()
        except ignore:
            result = None
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def wait_for_worker(condition: Callable[[], T], timeout: float, what: str,
                    proc: "subprocess.Popen | None" = None) -> T:
    """:func:`wait_for` on a worker's REST API: a refused connection while the worker starts (``OSError``)
    counts as "not yet"; ``proc``, the worker's process, exiting fails the wait at once."""
    return wait_for(condition, timeout, what, proc, ignore=(OSError,))
