#include "comm/communicator.hpp"

namespace wiola::comm {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

}  // namespace wiola::comm
