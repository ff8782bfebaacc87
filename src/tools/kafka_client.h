// The blocking request client the tools and the integration tests use, under its old name: it
// moved to src/client (client/blocking_client.h) so that group_admin and group_consumer share it.
#pragma once

#include "client/blocking_client.h"

namespace tarn::tools {

using kafka_client = client::blocking_client;
using client::call;

}  // namespace tarn::tools
