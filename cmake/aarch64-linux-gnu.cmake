# Cross-build for arm64 (Raspberry Pi OS 64-bit = Debian 12 arm64) with Debian's
# crossbuild-essential-arm64, against an arm64 Debian 12 root as the sysroot: the one that
# scripts/arm64_system.sh keeps (its path is HPDL_ARM64_ROOT, set by scripts/arm64_build.sh).
# The binaries run there under qemu-user, as on a Pi. Tuned for the Pi 4's Cortex-A72
# (ARMv8-A with NEON, no SVE), which also runs on the Pi 3's A53 and the Pi 5's A76.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT HPDL_ARM64_ROOT)
  set(HPDL_ARM64_ROOT "$ENV{HPDL_ARM64_ROOT}")
endif()
if(NOT HPDL_ARM64_ROOT OR NOT EXISTS "${HPDL_ARM64_ROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "HPDL_ARM64_ROOT='${HPDL_ARM64_ROOT}' is not an arm64 Debian root "
                      "(make one with: bash scripts/arm64_system.sh --root)")
endif()
# Passed on to try_compile projects, which read this file again.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES HPDL_ARM64_ROOT)
set(CMAKE_SYSROOT "${HPDL_ARM64_ROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_C_FLAGS_INIT "-mcpu=cortex-a72")
set(CMAKE_CXX_FLAGS_INIT "-mcpu=cortex-a72")

# pkg-config answers from the root.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${HPDL_ARM64_ROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${HPDL_ARM64_ROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${HPDL_ARM64_ROOT}/usr/share/pkgconfig")
# This machine's mpicc and h5cc describe its own (x86-64) libraries: not asked. Open MPI is
# named directly (the root's generic mpi-c.pc and libmpi.so are links into its
# /etc/alternatives, which do not resolve from outside it).
set(MPI_SKIP_COMPILER_WRAPPER TRUE)
set(MPI_ASSUME_NO_BUILTIN_MPI TRUE)
set(MPI_C_HEADER_DIR "${HPDL_ARM64_ROOT}/usr/lib/aarch64-linux-gnu/openmpi/include" CACHE PATH "")
set(MPI_C_LIB_NAMES mpi CACHE STRING "")
set(MPI_mpi_LIBRARY "${HPDL_ARM64_ROOT}/usr/lib/aarch64-linux-gnu/openmpi/lib/libmpi.so" CACHE FILEPATH "")
# HDF5 is searched for only in the root's serial HDF5 (no wrapper there either).
set(HDF5_ROOT "${HPDL_ARM64_ROOT}/usr/lib/aarch64-linux-gnu/hdf5/serial")
# The tests launch the root's own mpiexec, at the same path inside it.
set(MPIEXEC_EXECUTABLE /usr/bin/mpiexec CACHE FILEPATH "mpiexec inside the arm64 root")
