# enflame_static_pie(TARGET): TARGET linked with the lean libinject (inject_shim, defined in
# runtime-shim/CMakeLists.txt) as a static PIE: no loader, no shared library, ASLR kept. The
# hook in optimised builds, and the shim's twin in ENFLAME_STATIC_HOST; the shim itself adds
# its link order (runtime-shim/CMakeLists.txt).
#
# ENFLAME_RELR_LINK: the link option that packs the relative relocations (RELR). Binutils 2.40's
# x86_64 ld packs them; its aarch64 ld (the static-arm64 cross build) ignores the option with a
# warning, so arm64 links go without it.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(ENFLAME_RELR_LINK -Wl,-z,pack-relative-relocs)
else()
  set(ENFLAME_RELR_LINK "")
endif()

function(enflame_static_pie target)
  target_link_libraries(${target} PRIVATE inject_shim)
  target_compile_options(${target} PRIVATE -ffunction-sections -fdata-sections)
  target_link_options(${target} PRIVATE
    -static-pie -Wl,-O1 -Wl,--gc-sections ${ENFLAME_RELR_LINK})
endfunction()
