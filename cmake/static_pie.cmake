# enflame_static_pie(TARGET): TARGET linked with the lean libinject (inject_shim, defined in
# runtime-shim/CMakeLists.txt) as a static PIE: no loader, no shared library, ASLR kept. The
# hook in optimised builds, and the shim's twin in ENFLAME_STATIC_HOST; the shim itself adds
# its link order (runtime-shim/CMakeLists.txt).
function(enflame_static_pie target)
  target_link_libraries(${target} PRIVATE inject_shim)
  target_compile_options(${target} PRIVATE -ffunction-sections -fdata-sections)
  target_link_options(${target} PRIVATE
    -static-pie -Wl,-O1 -Wl,--gc-sections -Wl,-z,pack-relative-relocs)
endfunction()
