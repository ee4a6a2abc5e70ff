// SIGBUS-guarded copies from a file mapping (see the header).
#include "hpdl/data/mapped_copy.hpp"

#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

namespace hpdl {

namespace {
// The copy in progress on this thread: the source range and where to jump back to.
thread_local sigjmp_buf t_resume;
thread_local const char* volatile t_lo = nullptr;
thread_local const char* volatile t_hi = nullptr;
struct sigaction g_before {};

extern "C" void on_sigbus(int sig, siginfo_t* info, void* context) {
  const char* at = static_cast<const char*>(info->si_addr);
  if (t_lo && at >= t_lo && at < t_hi) siglongjmp(t_resume, 1);
  // Not ours: the handler that was there before, or the default action (the fault repeats
  // when this returns, and then kills the process as it would have).
  if (g_before.sa_flags & SA_SIGINFO) {
    g_before.sa_sigaction(sig, info, context);
  } else if (g_before.sa_handler != SIG_DFL && g_before.sa_handler != SIG_IGN) {
    g_before.sa_handler(sig);
  } else {
    std::signal(SIGBUS, SIG_DFL);
  }
}

void install_once() {
  // After MPI_Init (the first batch is read after it), so OpenMPI's own SIGBUS handler,
  // installed there, is the one kept as g_before.
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGBUS, &sa, &g_before);
  });
}
}  // namespace

bool copy_from_mapping(void* dst, const void* src, size_t bytes) {
  install_once();
  const char* s = static_cast<const char*>(src);
  // No signal mask saved (no system call a copy): SA_NODEFER leaves SIGBUS unblocked in the
  // handler, so the jump back finds the mask as it was.
  if (sigsetjmp(t_resume, 0) != 0) {
    t_lo = nullptr;
    t_hi = nullptr;
    return false;
  }
  t_lo = s;
  t_hi = s + bytes;
  std::memcpy(dst, s, bytes);
  t_lo = nullptr;
  t_hi = nullptr;
  return true;
}

}  // namespace hpdl
