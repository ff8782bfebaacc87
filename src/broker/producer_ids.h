// Producer ids, for idempotent producers (InitProducerId without a transactional id) and the
// transaction coordinator alike. Unique across restarts: they are reserved in blocks of 1000 (as
// Kafka's controller hands out blocks) and the end of the reserved range is kept in
// `<log.dir>/tarn-producer-ids` (one decimal number, written crash-safely before the block is
// used). A restart starts at the next block, so an id never names two producers.
//
// Threading: safe from any thread (one mutex per log directory).
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace tarn::broker {

// The next producer id of the log directory; an error text if its block cannot be persisted.
result<int64_t, std::string> next_producer_id(const std::string& log_dir);

}  // namespace tarn::broker
