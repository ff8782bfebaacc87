// Kafka's TopicPartition for the client's modules: the public type (include/tarn).
#pragma once

#include "tarn/topic_partition.h"
