"""Raw Kafka batches into what tasks receive: ``SinkRecord`` lists (per record or directly from Arrow),
record frames, and the batch head sampled on the driver."""
