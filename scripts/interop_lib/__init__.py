# Helpers of scripts/interop: the Kafka wire client, the batch builder, broker control,
# segment dumps and the scenarios.
