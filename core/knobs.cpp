#include "core/knobs.h"

namespace redsim {

std::string_view averaging_name(Averaging a) {
  switch (a) {
    case Averaging::flat: return "flat";
    case Averaging::bucketed: return "bucketed";
    case Averaging::per_param: return "per-param";
  }
  return "flat";
}

std::optional<Averaging> parse_averaging(std::string_view name) {
  for (auto a : {Averaging::flat, Averaging::bucketed, Averaging::per_param})
    if (averaging_name(a) == name) return a;
  return std::nullopt;
}

std::string_view bucket_order_name(BucketOrder o) {
  return o == BucketOrder::definition ? "definition" : "execution";
}

}  // namespace redsim
