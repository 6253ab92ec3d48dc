# Install layout (GNUInstallDirs) and the Debian package (`cpack -G DEB` in the build folder).
# Included once from the top-level CMakeLists.txt; the binaries install themselves in their
# own CMakeLists.txt.

# The binaries read /etc/enflame-container-runtime/config.toml whatever the prefix, so the
# default file goes there (absolute) and not under the prefix's sysconfdir.
set(ENFLAME_CONFIG_INSTALL_DIR "/etc/enflame-container-runtime" CACHE PATH
    "where the default config.toml is installed")

install(FILES ${CMAKE_SOURCE_DIR}/packaging/config.toml DESTINATION ${ENFLAME_CONFIG_INSTALL_DIR})
install(FILES ${CMAKE_SOURCE_DIR}/man/enflame-ctk.1
              ${CMAKE_SOURCE_DIR}/man/enflame-container-runtime.1
              ${CMAKE_SOURCE_DIR}/man/enflame-container-runtime-hook.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/man/enflame-container-runtime-config.toml.5
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        USE_SOURCE_PERMISSIONS)
# The units name /usr/bin/enflame-ctk: the package's layout (CPACK_PACKAGING_INSTALL_PREFIX).
install(FILES ${CMAKE_SOURCE_DIR}/packaging/systemd/enflame-cdi-refresh.service
              ${CMAKE_SOURCE_DIR}/packaging/systemd/enflame-cdi-refresh.path
        DESTINATION lib/systemd/system)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/enflame-ctk.bash-completion
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME enflame-ctk)

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "enflame-container-toolkit")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "enflame-container-toolkit")
set(CPACK_PACKAGE_CONTACT "enflame-container-toolkit maintainers <maintainers@enflame-container-toolkit.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "container toolkit for Enflame GCU accelerators")
set(CPACK_PACKAGE_DESCRIPTION
    "enflame-container-runtime (a runc shim), enflame-container-runtime-hook (an OCI prestart\n hook) and enflame-ctk (CDI spec generator and engine configuration) for Enflame GCU cards,\n enflame-device-plugin (kubelet device plugin), enflame-dra-plugin (DRA driver\n gcu.enflame.com), enflame-feature-discovery (node labels through NFD) and\n enflame-gcu-exporter (Prometheus metrics) with their Kubernetes manifests.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "runc | crun")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)   # debug info stays in the build folder

# The static build (preset static, `make packages`): the host package, .deb and .rpm with the
# same files (the three static binaries, the config, man pages, units, completion, examples),
# for any Linux host: it needs nothing from the host but the kernel (docs/host-binaries.md).
if(ENFLAME_STATIC_HOST)
  set(CPACK_GENERATOR "DEB;RPM")
  set(CPACK_PACKAGE_NAME "enflame-container-toolkit-host")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "container toolkit for Enflame GCU accelerators, static host binaries")
  set(CPACK_PACKAGE_DESCRIPTION
      "enflame-container-runtime (a runc shim), enflame-container-runtime-hook (an OCI prestart\n hook) and enflame-ctk (CDI spec generator and engine configuration) for Enflame GCU cards,\n linked statically: they need no library of the host.")
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
  set(CPACK_RPM_PACKAGE_LICENSE "Apache-2.0")
  set(CPACK_RPM_PACKAGE_GROUP "System Environment/Base")
  set(CPACK_RPM_PACKAGE_URL "https://enflame-container-toolkit.invalid")
  set(CPACK_PACKAGE_RELOCATABLE OFF)
  # static binaries: nothing to require from the host (rpm -qpR lists rpmlib features only)
  set(CPACK_RPM_PACKAGE_AUTOREQ "no")
  set(CPACK_RPM_SPEC_MORE_DEFINE "%define _build_id_links none")
  # an administrator's config survives an upgrade, as the .deb's conffile does
  set(CPACK_RPM_USER_FILELIST "%config(noreplace) /etc/enflame-container-runtime/config.toml")
  # folders the host's own packages (filesystem, systemd, bash-completion) own
  set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
      /etc /usr/lib/systemd /usr/lib/systemd/system /usr/share/bash-completion
      /usr/share/bash-completion/completions /usr/share/man /usr/share/man/man1
      /usr/share/man/man5)
  # The cross build (preset static-arm64): the packages say the binaries' architecture, not
  # this machine's (cpack would ask dpkg --print-architecture and uname -m).
  if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "arm64")
    set(CPACK_RPM_PACKAGE_ARCHITECTURE "aarch64")
  endif()
endif()
include(CPack)
