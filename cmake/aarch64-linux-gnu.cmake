# Cross toolchain for arm64 (docs/host-binaries.md): the host binaries (preset static-arm64)
# and the image's daemons (preset release-arm64). Debian 12's aarch64-linux-gnu-gcc/g++
# (g++-aarch64-linux-gnu) against a private arm64 sysroot that scripts/arm64-sysroot.sh unpacks:
# build/arm64-sysroot by default, build/arm64-sysroot-image (--image, with gRPC, protobuf,
# prometheus-cpp, libcurl, OpenSSL) for release-arm64, which names it in ENFLAME_ARM64_SYSROOT.
# Everything the build finds (CMake package files, pkg-config files, libraries, headers) comes
# from that sysroot, never from this host's /usr; the programs it runs (ccache, git, protoc,
# grpc_cpp_plugin: the host's, the same Debian versions as the sysroot's libraries) come from
# the host.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT ENFLAME_ARM64_SYSROOT)
  set(ENFLAME_ARM64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build/arm64-sysroot")
endif()
get_filename_component(ENFLAME_ARM64_SYSROOT "${ENFLAME_ARM64_SYSROOT}" ABSOLUTE)
if(NOT EXISTS "${ENFLAME_ARM64_SYSROOT}/.packages")
  message(FATAL_ERROR "no arm64 sysroot at ${ENFLAME_ARM64_SYSROOT}: scripts/arm64-sysroot.sh makes it "
                      "(make host-binaries ARCH=arm64 runs it; --image for release-arm64, which "
                      "make images ARCH=arm64 runs)")
endif()
set(CMAKE_SYSROOT "${ENFLAME_ARM64_SYSROOT}")
# try_compile projects see the variable too
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ENFLAME_ARM64_SYSROOT)

set(CMAKE_FIND_ROOT_PATH "${ENFLAME_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads the sysroot's .pc files alone, and prefixes their paths with it
set(ENV{PKG_CONFIG_DIR} "")
set(ENV{PKG_CONFIG_LIBDIR}
    "${ENFLAME_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${ENFLAME_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${ENFLAME_ARM64_SYSROOT}")
