// The execution planner's rules (planner.hpp), over what the layers offer (PlanHooks).
#include "hpdl/plan/planner.hpp"

#include "hpdl/nn/branches.hpp"
#include "hpdl/nn/chain.hpp"

namespace hpdl {
namespace {

class ExecutionPlanner final : public ChainPlanner {
 public:
  void fuse(Chain& c) const override {
    const size_t n = c.size();
    for (size_t i = 0; i + 1 < n; ++i) {
      if (!c.layer(i).plan().is_relu()) continue;
      if (c.layer(i + 1).plan().absorb_relu())
        c.layer(i).plan().fuse_into(c.layer(i + 1).name());
      else if (i > 0 && c.layer(i - 1).plan().absorb_following_relu())
        c.layer(i).plan().fuse_into(c.layer(i - 1).name());
    }
    // The chains inside a layer (a residual group's branches) were set up by that layer,
    // without a planner: they take this one (which folds their ReLUs now).
    for (size_t i = 0; i < n; ++i)
      if (auto* b = dynamic_cast<Branches*>(&c.layer(i)))
        for (auto& [name, inner] : b->branches()) inner.set_planner(this);
  }

  std::vector<int64_t> layouts(const Chain& c) const override {
    const size_t n = c.size();
    std::vector<int64_t> blocks(n + 1, 1);
    for (size_t i = 0; i < n; ++i) {
      const PlanHooks& producer = c.layer(i).plan();
      if (producer.is_view() || producer.keeps_layout()) continue;
      size_t j = i + 1;
      while (j < n && c.layer(j).plan().keeps_layout()) ++j;
      if (j == n || c.layer(j).plan().is_view()) continue;  // the chain's output, or a flatten
      // A layer that writes any block writes plain when it reads plain: it changes the
      // layout only on the way out of blocks (a pool turning plain into blocks would do it
      // one channel at a time).
      int64_t made = producer.native_out_block();
      if (made == kAnyBlock && blocks[i] == 1) made = 1;
      const int64_t read = c.layer(j).plan().native_in_block();
      int64_t block = 1;
      if (made == kAnyBlock)
        block = read == kAnyBlock ? 1 : read;
      else if (read == kAnyBlock || read == made)
        block = made;
      for (size_t k = i + 1; k <= j; ++k) blocks[k] = block;
    }
    return blocks;
  }
};

}  // namespace

const ChainPlanner& execution_planner() {
  static const ExecutionPlanner planner;
  return planner;
}

}  // namespace hpdl
