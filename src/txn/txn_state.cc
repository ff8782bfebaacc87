// Transaction states and their transitions (see txn_state.h).
#include "txn/txn_state.h"

namespace tarn::txn {

std::string_view state_name(txn_state s) {
  switch (s) {
    case txn_state::empty:
      return "Empty";
    case txn_state::ongoing:
      return "Ongoing";
    case txn_state::prepare_commit:
      return "PrepareCommit";
    case txn_state::prepare_abort:
      return "PrepareAbort";
    case txn_state::complete_commit:
      return "CompleteCommit";
    case txn_state::complete_abort:
      return "CompleteAbort";
    case txn_state::dead:
      return "Dead";
    case txn_state::prepare_epoch_fence:
      return "PrepareEpochFence";
  }
  return "Unknown";
}

std::optional<txn_state> state_from_name(std::string_view name) {
  for (int8_t id = 0; id <= 7; ++id) {
    const auto s = static_cast<txn_state>(id);
    if (state_name(s) == name) return s;
  }
  return std::nullopt;
}

bool valid_state_id(int8_t id) { return id >= 0 && id <= 7; }

bool valid_transition(txn_state from, txn_state to) {
  using s = txn_state;
  const bool completed_or_empty =
      from == s::empty || from == s::complete_commit || from == s::complete_abort;
  switch (to) {
    case s::empty:
      return completed_or_empty;
    case s::ongoing:
      return from == s::ongoing || completed_or_empty;
    case s::prepare_commit:
      return from == s::ongoing;
    case s::prepare_abort:
      return from == s::ongoing || from == s::prepare_epoch_fence || completed_or_empty;
    case s::complete_commit:
      return from == s::prepare_commit;
    case s::complete_abort:
      return from == s::prepare_abort;
    case s::dead:
      return completed_or_empty;
    case s::prepare_epoch_fence:
      return from == s::ongoing;
  }
  return false;
}

}  // namespace tarn::txn
