"""The batch processors: one per task shape and execution mode, chosen by :func:`.base.choose_processor`;
each turns a micro-batch into ``put`` calls on the connector's tasks."""
