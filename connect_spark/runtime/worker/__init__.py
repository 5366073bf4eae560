"""The worker side of a connector: its lifecycle and query (``connector_runner``), the standalone worker and its
entry points, which partitions it consumes and where each starts, restarts and stall detection."""
