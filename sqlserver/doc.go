// Package sqlserver speaks the PostgreSQL wire protocol (v3) in front of an
// embedded DuckDB database. It owns everything PostgreSQL-specific: the
// protocol state machine, type OIDs and value encodings, SQLSTATE codes, run-
// time parameters (SET/SHOW), authentication and the pg_catalog shim that
// psql, drivers and BI tools query.
//
// Promises:
//
//   - Each client session has its own DuckDB connection; sessions never see
//     each other's uncommitted work, prepared statements or settings.
//   - A statement's RowDescription and its DataRows come from the same
//     colType, so a client always decodes what it was told to expect.
//   - Every error reaches the client as an ErrorResponse with a SQLSTATE,
//     and the session stays usable: after an error inside a transaction the
//     status is 'E' until ROLLBACK, exactly as in PostgreSQL.
//   - A CancelRequest interrupts the DuckDB query in flight (SQLSTATE 57014).
//   - SQL cursors (DECLARE, FETCH, MOVE, CLOSE) are portals, visible to the
//     protocol's Describe, and COPY ... TO STDOUT writes text or CSV.
//   - Answers are written as PostgreSQL writes them: once per round trip
//     (with ReadyForQuery, on Flush, with an error), a large result in
//     writes of about 64 KB as it is produced, and whatever is queued
//     before the session waits for a client that has sent nothing more
//     (session.flush).
//   - Catalog answers (pg_catalog, information_schema) never show DHSI's
//     internal schemas (names starting with "dhsi_").
//   - Without configured users the server accepts anyone, and therefore
//     refuses to listen on anything but loopback.
//
// The protocol is implemented on github.com/jackc/pgx/v5/pgproto3 rather
// than on psql-wire's server: psql-wire fixes a statement's columns at parse
// time (a simple query "CREATE TABLE t ...; SELECT * FROM t" cannot be
// described before the CREATE runs), writes every type modifier as -1, has no
// COPY TO STDOUT and only clear-text passwords. psql-wire's SQLSTATE
// catalogue (package codes) is used as is.
//
// Nothing in DHSI imports this package except cmd/dhsi and tests; other
// packages reach the engine through Engine.DB and start-up hooks.
package sqlserver
