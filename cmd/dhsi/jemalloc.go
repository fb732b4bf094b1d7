package main

// DuckDB on linux-amd64 allocates through its bundled jemalloc, which by
// default keeps the address space of the memory it frees ("retain"). The
// server's hard limit (RLIMIT_DATA, memlimit M2) counts that space as if
// in use: after SELECT len(range(100000000)) a server held 1.5 GiB of
// mappings (VmData) with 100 MB resident, for good, so the Go heap or a
// new thread could later find no room under the limit although the memory
// was free. retain:false gives it back (with this file, 204 MB after the
// same query).
//
// jemalloc reads options from, in order, malloc_conf (DuckDB sets it from
// a load-time constructor), the environment (DUCKDB_JE_MALLOC_CONF: too
// late to set from Go, the constructor has already run) and
// malloc_conf_2_conf_harder, a weak symbol jemalloc leaves for the program
// to define. Defining it here applies to every command of this binary.
// Where DuckDB is built without jemalloc (other platforms) nothing reads
// it.

/*
const char *duckdb_je_malloc_conf_2_conf_harder = "retain:false";
*/
import "C"
