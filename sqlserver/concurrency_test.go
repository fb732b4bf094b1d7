package sqlserver_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/sqlserver"
)

// TestConcurrentSessionsKeepTheirOwnState runs with sessions taking fair
// turns (fairness.go: every busy session yields after each answer and
// spins on its socket) and without.
func TestConcurrentSessionsKeepTheirOwnState(t *testing.T) {
	for _, mode := range []struct {
		name  string
		above int
	}{{"fair turns", 1}, {"no fair turns", -1}} {
		t.Run(mode.name, func(t *testing.T) {
			concurrentSessionsKeepTheirOwnState(t, func(c *sqlserver.Config) { c.FairAbove = mode.above })
		})
	}
}

func concurrentSessionsKeepTheirOwnState(t *testing.T, mod func(*sqlserver.Config)) {
	const clients, iterations = 16, 50
	s := startServer(t, mod)
	ctx := ctxT(t)
	mustExec(t, s.connect(t), "CREATE TABLE shared (owner INTEGER, n INTEGER)")

	var wg sync.WaitGroup
	for c := range clients {
		conn := s.connect(t)
		wg.Go(func() {
			if err := runClient(ctx, conn, c, iterations); err != nil {
				t.Errorf("client %d: %v", c, err)
			}
		})
	}
	wg.Wait()

	var n, owners int
	conn := s.connect(t)
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT owner) FROM shared").Scan(&n, &owners); err != nil {
		t.Fatal(err)
	}
	if n != clients*iterations || owners != clients {
		t.Errorf("shared table: %d rows from %d owners, want %d from %d", n, owners, clients*iterations, clients)
	}
	// the clients' temporary tables are theirs alone
	if _, err := conn.Exec(ctx, "SELECT * FROM mine"); err == nil {
		t.Error("another session's temporary table is visible")
	}
}

// runClient gives one session its own application_name, temporary table and
// prepared statements, then checks that it sees only its own.
func runClient(ctx context.Context, conn *pgx.Conn, c, iterations int) error {
	app := fmt.Sprintf("client-%d", c)
	for _, q := range []string{
		"SET application_name = '" + app + "'",
		"CREATE TEMP TABLE mine (owner INTEGER, n INTEGER)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	ins := fmt.Sprintf("ins_%d", c)
	sel := fmt.Sprintf("sel_%d", c)
	if _, err := conn.Prepare(ctx, ins, "INSERT INTO mine VALUES ($1, $2)"); err != nil {
		return err
	}
	// each client's statement differs, so a mix-up shows in the result
	if _, err := conn.Prepare(ctx, sel, fmt.Sprintf("SELECT count(*), min(owner), max(owner), %d AS me, sum(n) FROM mine WHERE n <= $1", c)); err != nil {
		return err
	}
	for i := range iterations {
		if _, err := conn.Exec(ctx, ins, c, i); err != nil {
			return fmt.Errorf("iteration %d insert: %w", i, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO shared VALUES ($1, $2)", c, i); err != nil {
			return fmt.Errorf("iteration %d shared insert: %w", i, err)
		}
		var count, minOwner, maxOwner, me, sum int64
		if err := conn.QueryRow(ctx, sel, i).Scan(&count, &minOwner, &maxOwner, &me, &sum); err != nil {
			return fmt.Errorf("iteration %d select: %w", i, err)
		}
		if count != int64(i+1) || minOwner != int64(c) || maxOwner != int64(c) || me != int64(c) || sum != int64(i*(i+1)/2) {
			return fmt.Errorf("iteration %d: count %d owners %d..%d me %d sum %d", i, count, minOwner, maxOwner, me, sum)
		}
		var got string
		if err := conn.QueryRow(ctx, "SHOW application_name").Scan(&got); err != nil {
			return err
		}
		if got != app {
			return fmt.Errorf("iteration %d: application_name = %q, want %q", i, got, app)
		}
		if got := conn.PgConn().ParameterStatus("application_name"); got != app {
			return fmt.Errorf("iteration %d: reported application_name = %q", i, got)
		}
	}
	return nil
}
