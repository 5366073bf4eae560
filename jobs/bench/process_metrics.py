"""CPU-seconds and peak memory of a process tree, sampled with psutil while an arm runs.

Started by :mod:`jobs.bench.runner` right after an arm's process is launched, stopped when the arm is
done. Every ``interval`` seconds it lists the root process and all its descendants and keeps each
one's latest user+system CPU time, so a process that exits between samples still counts with its last
sample (the gap is at most one interval of CPU). The *driver* is the root process plus its ``java``
descendants: the Python driver and Spark's driver JVM for the Spark arms, the worker JVM for Kafka
Connect; Spark's Python workers count in the tree but not in the driver.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import psutil

__all__ = ["TreeUsage", "ProcessTreeSampler", "spark_jvm"]


@dataclass
class TreeUsage:
    cpu_seconds: float
    driver_peak_rss_bytes: int
    tree_peak_rss_bytes: int
    processes_seen: int
    samples: int


class ProcessTreeSampler:
    """Samples one process tree on a background thread until :meth:`stop`."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self._cpu: dict[tuple[int, float], float] = {}
        self._driver_peak = 0
        self._tree_peak = 0
        self._samples = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sampler-{pid}", daemon=True)
        self.descendants: set[int] = set()

    def start(self) -> "ProcessTreeSampler":
        self._sample()
        self._thread.start()
        return self

    def stop(self) -> TreeUsage:
        self._stopped.set()
        self._thread.join()
        self._sample()
        return TreeUsage(
            cpu_seconds=sum(self._cpu.values()),
            driver_peak_rss_bytes=self._driver_peak,
            tree_peak_rss_bytes=self._tree_peak,
            processes_seen=len(self._cpu),
            samples=self._samples,
        )

    def snapshot_cpu(self) -> float:
        """CPU-seconds of the tree so far (takes a fresh sample first)."""
        self._sample()
        return sum(self._cpu.values())

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        try:
            root = psutil.Process(self.pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        driver_rss = tree_rss = 0
        for process in processes:
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    rss = process.memory_info().rss
                    name = process.name()
                    created = process.create_time()
            except psutil.Error:
                continue
            # (pid, create time) identifies a process even if its pid is reused.
            self._cpu[(process.pid, created)] = times.user + times.system
            tree_rss += rss
            if process.pid == self.pid or name == "java":
                driver_rss += rss
            if process.pid != self.pid:
                self.descendants.add(process.pid)
        self._driver_peak = max(self._driver_peak, driver_rss)
        self._tree_peak = max(self._tree_peak, tree_rss)
        self._samples += 1


def spark_jvm() -> "psutil.Process | None":
    """The Spark driver JVM of a session this process started: its child running SparkSubmit (not a broker's JVM)."""
    for child in psutil.Process().children(recursive=True):
        try:
            if "java" in child.name() and any("SparkSubmit" in part for part in child.cmdline()):
                return child
        except psutil.Error:
            continue
    return None
