"""One task and its loop: Kafka Connect's ``WorkerSinkTask`` bookkeeping, which task owns which partition, the
task context, the task's plugins (converters, transforms, error handling) and the executor-side task generation."""
