// Async-signal-safe: the handler stores one sig_atomic_t.
#include "hpdl/core/stop_signal.hpp"

#include <csignal>

namespace hpdl {
namespace {
volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_stop_signal(int sig) { g_signal = sig; }
}  // namespace

void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void release_stop_signals() {
  std::signal(SIGUSR1, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (g_signal) std::raise(g_signal);
}

int stop_signal() { return g_signal; }

const char* signal_name(int sig) {
  if (sig == SIGUSR1) return "SIGUSR1";
  if (sig == SIGTERM) return "SIGTERM";
  return "";
}

}  // namespace hpdl
