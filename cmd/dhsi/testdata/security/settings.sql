-- name: turn external access back on
-- expect: nonadmin=42501 admin=error
SET enable_external_access = true;
-- name: widen allowed_directories
-- expect: nonadmin=42501 admin=error
SET allowed_directories = ['/'];
-- name: allowed_paths
-- expect: nonadmin=42501 admin=error
SET allowed_paths = ['/etc/passwd'];
-- name: RESET external access
-- expect: nonadmin=42501
RESET enable_external_access;
-- name: SET GLOBAL of a DuckDB setting
-- expect: nonadmin=42501
SET GLOBAL memory_limit = '1GB';
-- name: SET of a DuckDB setting global to every session
-- expect: nonadmin=42501
SET threads = 1;
-- name: autoload extensions
-- expect: nonadmin=42501
SET autoload_known_extensions = true;
-- name: unsigned extensions
-- expect: nonadmin=42501 admin=error
SET allow_unsigned_extensions = true;
-- name: profiling output to a host file
-- expect: nonadmin=42501
SET profiling_output = '/tmp/dhsi-bypass-profile.txt';
-- name: PRAGMA
-- expect: nonadmin=42501
PRAGMA enable_profiling;
-- name: a pragma as a CALL
-- expect: nonadmin=42501
CALL enable_logging();
-- name: the session settings clients send stay open
-- expect: reader==UTC writer==UTC admin==UTC
SET application_name = 'bi'; SET extra_float_digits = 3; SET DateStyle = 'ISO'; SET statement_timeout = 0; SET search_path = public; SET TimeZone = 'UTC'; SHOW TimeZone;
-- name: is_superuser says whether the user is an admin
-- expect: nonadmin==off admin==on
SHOW is_superuser;
