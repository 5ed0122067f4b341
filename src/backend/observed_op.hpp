#pragma once
// Runs one op's implementation between the observer's op_begins and op_ends
// (the outermost op only: an implementation that calls another op is one op),
// after telling the backend the bytes of the op's operands.
#include "backend/backend.hpp"

namespace wiola {

class ObservedOp {
 public:
  template <class F>
  static void run(Backend& backend, Op op, F&& implementation, std::int64_t operand_bytes = 0) {
    if (backend.depth_ == 0) backend.note_operand_bytes(op, operand_bytes);
    OpObserver* observer = backend.depth_ == 0 ? backend.observer_ : nullptr;
    if (observer != nullptr) observer->op_begins(op);
    ++backend.depth_;
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{backend.depth_};
    implementation();
    if (observer != nullptr) observer->op_ends(op);
  }
};

}  // namespace wiola
