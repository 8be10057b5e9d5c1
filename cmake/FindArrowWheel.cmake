# Finds the Arrow C++ SDK bundled in the pyarrow wheel of SEDIMENT_PYTHON.
#
# pyarrow ships libarrow, libparquet, libarrow_dataset, libarrow_acero,
# libarrow_compute, libarrow_s3 and libarrow_flight (gRPC inside) with their headers. We ask pyarrow where they
# are and define imported targets:
#   Arrow::arrow Arrow::parquet Arrow::dataset Arrow::acero Arrow::compute Arrow::s3 Arrow::flight
# ArrowWheel_LIBRARY_DIR is put on the RPATH of everything that links them.

if(NOT SEDIMENT_PYTHON)
  set(SEDIMENT_PYTHON "${CMAKE_SOURCE_DIR}/.venv/bin/python")
endif()

execute_process(
  COMMAND "${SEDIMENT_PYTHON}" -c
    "import pyarrow; print(pyarrow.__version__); print(pyarrow.get_include()); print(pyarrow.get_library_dirs()[0])"
  OUTPUT_VARIABLE _pa_out
  RESULT_VARIABLE _pa_rc
  ERROR_VARIABLE _pa_err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _pa_rc EQUAL 0)
  message(FATAL_ERROR "pyarrow not importable with ${SEDIMENT_PYTHON} (run scripts/install.sh): ${_pa_err}")
endif()
string(REPLACE "\n" ";" _pa_lines "${_pa_out}")
list(GET _pa_lines 0 ArrowWheel_VERSION)
list(GET _pa_lines 1 ArrowWheel_INCLUDE_DIR)
list(GET _pa_lines 2 ArrowWheel_LIBRARY_DIR)

foreach(_lib arrow parquet arrow_dataset arrow_acero arrow_compute arrow_s3 arrow_flight)
  set(_path "${ArrowWheel_LIBRARY_DIR}/lib${_lib}.so")
  if(NOT EXISTS "${_path}")
    message(FATAL_ERROR "${_path} missing: run `.venv/bin/python -c 'import pyarrow; pyarrow.create_library_symlinks()'`")
  endif()
  string(REPLACE "arrow_" "" _name "${_lib}")
  add_library(Arrow::${_name} SHARED IMPORTED GLOBAL)
  set_target_properties(Arrow::${_name} PROPERTIES
    IMPORTED_LOCATION "${_path}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${ArrowWheel_INCLUDE_DIR}"
    INTERFACE_INCLUDE_DIRECTORIES "${ArrowWheel_INCLUDE_DIR}")
endforeach()
set_property(TARGET Arrow::parquet Arrow::compute Arrow::s3 Arrow::flight APPEND PROPERTY INTERFACE_LINK_LIBRARIES Arrow::arrow)
set_property(TARGET Arrow::acero APPEND PROPERTY INTERFACE_LINK_LIBRARIES Arrow::compute)
set_property(TARGET Arrow::dataset APPEND PROPERTY INTERFACE_LINK_LIBRARIES Arrow::acero Arrow::parquet)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ArrowWheel
  REQUIRED_VARS ArrowWheel_INCLUDE_DIR ArrowWheel_LIBRARY_DIR
  VERSION_VAR ArrowWheel_VERSION)
