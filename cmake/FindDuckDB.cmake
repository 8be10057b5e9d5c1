# Finds DuckDB's static library and C header as scripts/install.sh unpacks them
# (fetch_duckdb in scripts/lib.sh: duckdb-go's bindings module from the Go module
# proxy, pinned). Defines DuckDB::duckdb: the core, its built-in extensions
# (parquet, json, icu, core_functions, ...) and their vendored libraries, linked
# as one group. Only the query module links it.

file(GLOB _duckdb_dirs "${CMAKE_SOURCE_DIR}/.cache/duckdb/v*")
list(SORT _duckdb_dirs)
list(POP_BACK _duckdb_dirs DuckDB_DIR)
if(NOT DuckDB_DIR OR NOT EXISTS "${DuckDB_DIR}/.complete")
  message(FATAL_ERROR "DuckDB's static library is missing from .cache/duckdb: run scripts/install.sh")
endif()
set(_duckdb_libs duckdb_static duckdb_generated_extension_loader autocomplete_extension core_functions_extension
  icu_extension json_extension parquet_extension tpcds_extension tpch_extension duckdb_fastpforlib duckdb_fmt
  duckdb_fsst duckdb_hyperloglog duckdb_mbedtls duckdb_miniz duckdb_pg_query duckdb_re2 duckdb_skiplistlib
  duckdb_utf8proc duckdb_yyjson duckdb_zstd)
set(_duckdb_paths)
foreach(_lib ${_duckdb_libs})
  list(APPEND _duckdb_paths "${DuckDB_DIR}/lib${_lib}.a")
endforeach()
list(JOIN _duckdb_paths "," _duckdb_group)
add_library(DuckDB::duckdb INTERFACE IMPORTED GLOBAL)
set_target_properties(DuckDB::duckdb PROPERTIES
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${DuckDB_DIR}"
  INTERFACE_INCLUDE_DIRECTORIES "${DuckDB_DIR}"
  INTERFACE_COMPILE_DEFINITIONS DUCKDB_STATIC_BUILD
  INTERFACE_LINK_LIBRARIES "$<LINK_GROUP:RESCAN,${_duckdb_paths}>;Threads::Threads;${CMAKE_DL_LIBS}")

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DuckDB REQUIRED_VARS DuckDB_DIR)
