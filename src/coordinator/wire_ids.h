// Topic ids between the coordinator's topic_uuid (metadata_view.h) and the wire's protocol::uuid.
#pragma once

#include "coordinator/metadata_view.h"
#include "protocol/reader.h"

namespace tarn::coordinator {

inline protocol::uuid to_wire(const topic_uuid& id) { return protocol::uuid{id}; }
inline topic_uuid from_wire(const protocol::uuid& id) { return id.bytes; }

}  // namespace tarn::coordinator
