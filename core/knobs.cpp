#include "core/knobs.h"

namespace redsim {

std::string_view bucket_order_name(BucketOrder o) {
  return o == BucketOrder::definition ? "definition" : "execution";
}

}  // namespace redsim
