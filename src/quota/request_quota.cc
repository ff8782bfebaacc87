// The request quota's exempt APIs.
#include "quota/request_quota.h"

namespace tarn::quota {

bool exempt_from_request_quota(int16_t api_key) {
  switch (api_key) {
    case 4:   // LeaderAndIsr
    case 5:   // StopReplica
    case 6:   // UpdateMetadata
    case 7:   // ControlledShutdown
    case 27:  // WriteTxnMarkers
    case 56:  // AlterPartition
      return true;
    default:
      return false;
  }
}

}  // namespace tarn::quota
