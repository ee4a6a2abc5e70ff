// Preloaded into a program (LD_PRELOAD), raises SIGTERM from a shared library's constructor:
// the moment a stop signal meets when it arrives in a rank's first tenth of a second, while
// the CUDA libraries' constructors run (tests/cli/early_signal.sh).
#include <csignal>

namespace {
struct RaiseAtLoad {
  RaiseAtLoad() { std::raise(SIGTERM); }
} raise_at_load;
}  // namespace
