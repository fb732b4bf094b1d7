package sqlserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/dhsi/dhsi/access"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"
)

// runSessionStatement answers the statements the session handles itself and
// returns the command tag and, for SHOW, the rows.
func (s *session) runSessionStatement(ctx context.Context, c classified) (string, [][]string, error) {
	switch c.kind {
	case kindBegin:
		if s.tx != txIdle {
			s.notice("WARNING", codes.ActiveSQLTransaction, "there is already a transaction in progress")
			return "BEGIN", nil, nil
		}
		if s.implicit {
			// the block's earlier statements join the transaction, as in
			// PostgreSQL
			s.implicit, s.tx = false, txActive
			return "BEGIN", nil, nil
		}
		if _, err := s.duck.ExecContext(ctx, "BEGIN TRANSACTION", nil); err != nil {
			return "", nil, err
		}
		s.tx = txActive
		return "BEGIN", nil, nil
	case kindCommit:
		switch s.tx {
		case txIdle:
			s.notice("WARNING", codes.NoActiveSQLTransaction, "there is no transaction in progress")
			s.endImplicit(ctx, false)
			return "COMMIT", nil, nil
		case txFailed:
			// PostgreSQL turns COMMIT of a failed transaction into ROLLBACK
			_, _ = s.duck.ExecContext(ctx, "ROLLBACK", nil)
			s.tx = txIdle
			s.endTransaction()
			s.closeTransactionPortals()
			return "ROLLBACK", nil, nil
		}
		s.tx = txIdle
		s.endTransaction()
		s.closeTransactionPortals()
		if _, err := s.duck.ExecContext(ctx, "COMMIT", nil); err != nil {
			return "", nil, err
		}
		return "COMMIT", nil, nil
	case kindRollback:
		if s.tx == txIdle {
			s.notice("WARNING", codes.NoActiveSQLTransaction, "there is no transaction in progress")
			s.endImplicit(ctx, true)
			return "ROLLBACK", nil, nil
		}
		s.tx = txIdle
		s.endTransaction()
		s.closeTransactionPortals()
		if _, err := s.duck.ExecContext(ctx, "ROLLBACK", nil); err != nil && !isNoTransaction(err) {
			return "", nil, err
		}
		return "ROLLBACK", nil, nil
	case kindSet:
		if err := s.setParam(ctx, c.param, c.value); err != nil {
			return "", nil, err
		}
		return "SET", nil, s.syncVariables(ctx)
	case kindReset:
		if strings.EqualFold(c.param, "all") {
			for name, g := range gucs() {
				if !g.readOnly && s.settings.values[name] != g.def {
					if err := s.resetParam(ctx, name); err != nil {
						return "", nil, err
					}
				}
			}
			return "RESET", nil, s.syncVariables(ctx)
		}
		if err := s.resetParam(ctx, c.param); err != nil {
			return "", nil, err
		}
		return "RESET", nil, s.syncVariables(ctx)
	case kindShow:
		if c.param == "all" {
			var rows [][]string
			for _, kv := range s.settings.all() {
				rows = append(rows, []string{kv[0], kv[1], ""})
			}
			return "SHOW", rows, nil
		}
		return "SHOW", [][]string{{s.settings.shown(c.param)}}, nil
	case kindDiscard:
		if s.tx != txIdle {
			return "", nil, pgErrorf(codes.ActiveSQLTransaction, "DISCARD ALL cannot run inside a transaction block")
		}
		s.closePortals()
		for name, p := range s.stmts {
			delete(s.stmts, name)
			p.closed = true
			s.releaseStatement(p)
		}
		if _, _, err := s.runSessionStatement(ctx, classified{kind: kindReset, param: "all"}); err != nil {
			return "", nil, err
		}
		s.deallocateAll(ctx)
		s.forgetPrepared("")
		return c.tag, nil, nil
	case kindDeallocate:
		if c.param == "" {
			for name, p := range s.stmts {
				if name == "" {
					continue
				}
				delete(s.stmts, name)
				p.closed = true
				s.releaseStatement(p)
			}
			s.deallocateAll(ctx)
			s.forgetPrepared("")
			return c.tag, nil, nil
		}
		if p, ok := s.stmts[c.param]; ok {
			delete(s.stmts, c.param)
			p.closed = true
			s.releaseStatement(p)
			return c.tag, nil, nil
		}
		if _, err := s.duck.ExecContext(ctx, "DEALLOCATE "+quoteIdent(c.param), nil); err != nil {
			return "", nil, pgErrorf(codes.InvalidSQLStatementName, "prepared statement %q does not exist", c.param)
		}
		delete(s.duckPrepared, asciiLower(c.param))
		s.forgetPrepared(c.param)
		return c.tag, nil, nil
	case kindNoop:
		return c.tag, nil, nil
	case kindUnsupported:
		return "", nil, pgErrorf(codes.FeatureNotSupported, "%s", c.reason)
	}
	return "", nil, pgErrorf(codes.Internal, "unhandled statement kind %d", c.kind)
}

// syncVariables mirrors the session's parameters, user and search path into
// DuckDB variables for the catalog shim (see settings.duckVariables).
// A SET that changes nothing (a pool setting application_name on every
// checkout) costs no DuckDB statement; DuckDB's own settings are read
// again only after one of them may have changed (duckSettingsVariable).
func (s *session) syncVariables(ctx context.Context) error {
	if s.duckSettingsSynced && s.syncedVariables != "" && s.syncedChanges == s.settings.changes {
		return nil // nothing changed since they were rendered (s.user does not change)
	}
	changes := s.settings.changes
	q := s.settings.duckVariables(s.user, clientSchemas(s.settings.searchPathSchemas()))
	duckSettings := duckSettingsVariable(s.principal.Role == access.Admin)
	if !s.duckSettingsSynced {
		q += "; " + duckSettings
	} else if q == s.syncedVariables {
		s.syncedChanges = changes
		return nil
	}
	if _, err := s.duck.ExecContext(ctx, q, nil); err != nil {
		s.syncedVariables = ""
		return fmt.Errorf("mirror session settings: %w", err)
	}
	s.syncedVariables, s.duckSettingsSynced, s.syncedChanges = strings.TrimSuffix(q, "; "+duckSettings), true, changes
	return nil
}

// deallocateAll deallocates the session's SQL PREPAREs in DuckDB, one by
// one (session.duckPrepared).
func (s *session) deallocateAll(ctx context.Context) {
	for name := range s.duckPrepared {
		_, _ = s.duck.ExecContext(ctx, "DEALLOCATE "+quoteIdent(name), nil)
	}
	clear(s.duckPrepared)
}

// endTransaction forgets what SET TRANSACTION chose for the transaction
// that ended: the next one starts from the session default again.
func (s *session) endTransaction() {
	s.settings.put("transaction_isolation", s.settings.values["default_transaction_isolation"])
	s.settings.put("transaction_read_only", s.settings.values["default_transaction_read_only"])
}

func isNoTransaction(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "no transaction")
}

// setParam sets a PostgreSQL parameter, or a DuckDB setting of that name.
func (s *session) setParam(ctx context.Context, name, value string) error {
	if err := s.allowedSetting(name); err != nil {
		return err
	}
	lname := strings.ToLower(name)
	if !s.settings.known(lname) && !strings.Contains(lname, ".") {
		// a DuckDB setting (memory_limit, threads, ...)
		s.duckSettingsSynced = false
		if _, err := s.duck.ExecContext(ctx, "SET "+quoteIdent(lname)+" = "+quoteLiteral(value), nil); err != nil {
			return pgErrorf(codes.UndefinedObject, "unrecognized configuration parameter %q", name)
		}
		return nil
	}
	old, _ := s.settings.get(lname)
	v, report, err := s.settings.set(lname, value)
	if err != nil {
		return err
	}
	if s.tx == txIdle {
		// between transactions, the characteristics of the next one are the
		// session defaults (SHOW transaction_isolation after SET SESSION
		// CHARACTERISTICS, as JDBC's getTransactionIsolation reads it)
		switch lname {
		case "default_transaction_isolation":
			s.settings.put("transaction_isolation", v)
		case "default_transaction_read_only":
			s.settings.put("transaction_read_only", v)
		}
	}
	if err := s.applyToDuck(ctx, lname, v); err != nil {
		s.settings.put(lname, old) // DuckDB refused it: keep both in step
		return err
	}
	if report {
		s.send(&pgproto3.ParameterStatus{Name: displayName(lname), Value: v})
	}
	return nil
}

func (s *session) resetParam(ctx context.Context, name string) error {
	if err := s.allowedSetting(name); err != nil {
		return err
	}
	lname := strings.ToLower(name)
	if !s.settings.known(lname) && !strings.Contains(lname, ".") {
		if _, err := s.duck.ExecContext(ctx, "RESET "+quoteIdent(lname), nil); err != nil {
			return pgErrorf(codes.UndefinedObject, "unrecognized configuration parameter %q", name)
		}
		return nil
	}
	v, report, err := s.settings.reset(lname)
	if err != nil {
		return err
	}
	if err := s.applyToDuck(ctx, lname, v); err != nil {
		return err
	}
	if report {
		s.send(&pgproto3.ParameterStatus{Name: displayName(lname), Value: v})
	}
	return nil
}

// applyToDuck mirrors the PostgreSQL parameters that change how DuckDB
// evaluates queries.
func (s *session) applyToDuck(ctx context.Context, name, value string) error {
	var stmt string
	switch name {
	case "timezone":
		stmt = "SET TimeZone = " + quoteLiteral(value)
	case "search_path":
		stmt = "SET search_path = " + quoteLiteral(s.srv.engine.searchPath(s.settings.searchPathSchemas()))
	default:
		return nil
	}
	s.duckSettingsSynced = false // TimeZone and search_path are DuckDB's settings too
	if _, err := s.duck.ExecContext(ctx, stmt, nil); err != nil {
		return toPGError(err)
	}
	return nil
}
