package sqlserver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

func countRows(t *testing.T, conn *pgx.Conn, table string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctxT(t), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func TestTransactions(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	other := s.connect(t)
	ctx := ctxT(t)
	mustExec(t, conn, "CREATE TABLE acct (id INTEGER PRIMARY KEY, v INTEGER)")

	t.Run("committed rows are visible to other sessions, uncommitted ones are not", func(t *testing.T) {
		mustExec(t, conn, "BEGIN", "INSERT INTO acct VALUES (1, 10)")
		if st := conn.PgConn().TxStatus(); st != 'T' {
			t.Errorf("tx status = %c, want T", st)
		}
		if n := countRows(t, other, "acct"); n != 0 {
			t.Errorf("other session sees %d uncommitted rows", n)
		}
		mustExec(t, conn, "COMMIT")
		if st := conn.PgConn().TxStatus(); st != 'I' {
			t.Errorf("tx status = %c, want I", st)
		}
		if n := countRows(t, other, "acct"); n != 1 {
			t.Errorf("other session sees %d rows after COMMIT, want 1", n)
		}
	})
	t.Run("rolled back rows are gone", func(t *testing.T) {
		mustExec(t, conn, "BEGIN", "INSERT INTO acct VALUES (2, 20)", "ROLLBACK")
		if n := countRows(t, conn, "acct"); n != 1 {
			t.Errorf("rows after ROLLBACK = %d, want 1", n)
		}
	})
	t.Run("an error aborts the transaction until ROLLBACK", func(t *testing.T) {
		mustExec(t, conn, "BEGIN", "INSERT INTO acct VALUES (3, 30)")
		_, err := conn.Exec(ctx, "INSERT INTO acct VALUES (1, 0)") // duplicate key
		wantCode(t, err, "23505")
		if st := conn.PgConn().TxStatus(); st != 'E' {
			t.Errorf("tx status after the error = %c, want E", st)
		}
		_, err = conn.Exec(ctx, "SELECT 1")
		wantCode(t, err, "25P02")
		_, err = conn.Exec(ctx, "INSERT INTO acct VALUES (4, 40)")
		wantCode(t, err, "25P02")
		if st := conn.PgConn().TxStatus(); st != 'E' {
			t.Errorf("tx status = %c, want E", st)
		}
		mustExec(t, conn, "ROLLBACK")
		if st := conn.PgConn().TxStatus(); st != 'I' {
			t.Errorf("tx status after ROLLBACK = %c, want I", st)
		}
		if n := countRows(t, conn, "acct"); n != 1 {
			t.Errorf("rows = %d, want 1", n)
		}
	})
	t.Run("COMMIT of a failed transaction rolls back", func(t *testing.T) {
		mustExec(t, conn, "BEGIN", "INSERT INTO acct VALUES (5, 50)")
		_, err := conn.Exec(ctx, "SELECT * FROM no_such_table")
		wantCode(t, err, "42P01")
		tag, err := conn.Exec(ctx, "COMMIT")
		if err != nil {
			t.Fatal(err)
		}
		if tag.String() != "ROLLBACK" {
			t.Errorf("COMMIT tag = %q, want ROLLBACK", tag)
		}
		if st := conn.PgConn().TxStatus(); st != 'I' {
			t.Errorf("tx status = %c, want I", st)
		}
		if n := countRows(t, conn, "acct"); n != 1 {
			t.Errorf("rows = %d, want 1", n)
		}
	})
	t.Run("an error in the extended protocol aborts the transaction too", func(t *testing.T) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO acct VALUES ($1, $2)", 6, 60); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, "INSERT INTO acct VALUES ($1, $2)", "not a number", 0)
		if err == nil {
			t.Fatal("inserting text into an integer column succeeded")
		}
		_, err = tx.Exec(ctx, "SELECT $1::INTEGER", 1)
		wantCode(t, err, "25P02")
		if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
			t.Errorf("Commit of a failed transaction = %v, want pgx.ErrTxCommitRollback", err)
		}
		if n := countRows(t, conn, "acct"); n != 1 {
			t.Errorf("rows = %d, want 1", n)
		}
	})
	t.Run("pgx BeginTx, Commit and Rollback", func(t *testing.T) {
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO acct VALUES ($1, $2)", 7, 70); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		tx, err = conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "UPDATE acct SET v = v + 1"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		var sum int
		if err := other.QueryRow(ctx, "SELECT sum(v) FROM acct").Scan(&sum); err != nil || sum != 80 {
			t.Errorf("sum = %d, %v; want 80", sum, err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "DELETE FROM acct WHERE id = 7")
			if err != nil {
				return err
			}
			return errors.New("changed my mind")
		})
		if err == nil || err.Error() != "changed my mind" {
			t.Errorf("BeginFunc = %v", err)
		}
		if n := countRows(t, conn, "acct"); n != 2 {
			t.Errorf("rows = %d, want 2", n)
		}
	})
	t.Run("closing the connection rolls back its open transaction", func(t *testing.T) {
		c := s.connect(t)
		mustExec(t, c, "BEGIN", "INSERT INTO acct VALUES (8, 80)")
		c.Close(context.Background())
		if n := countRows(t, other, "acct"); n != 2 {
			t.Errorf("rows = %d, want 2", n)
		}
	})
}

// A pgx batch is one extended-protocol block (one Sync): PostgreSQL runs it
// in one implicit transaction.
func TestBatchIsOneImplicitTransaction(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	other := s.connect(t)
	ctx := ctxT(t)
	mustExec(t, conn, "CREATE TABLE b (a INTEGER)")

	t.Run("a failing statement rolls back the whole batch", func(t *testing.T) {
		batch := &pgx.Batch{}
		batch.Queue("INSERT INTO b VALUES ($1)", 1)
		batch.Queue("INSERT INTO b VALUES ($1)", "x")
		batch.Queue("INSERT INTO b VALUES ($1)", 3)
		err := conn.SendBatch(ctx, batch).Close()
		wantCode(t, err, "22P02")
		if st := conn.PgConn().TxStatus(); st != 'I' {
			t.Errorf("tx status = %c, want I", st)
		}
		if n := countRows(t, other, "b"); n != 0 {
			t.Errorf("rows = %d, want 0", n)
		}
	})
	t.Run("a good batch commits at its end", func(t *testing.T) {
		batch := &pgx.Batch{}
		batch.Queue("INSERT INTO b VALUES ($1)", 1)
		batch.Queue("UPDATE b SET a = a + 1")
		batch.Queue("SELECT sum(a) FROM b")
		br := conn.SendBatch(ctx, batch)
		for range 2 {
			if _, err := br.Exec(); err != nil {
				t.Fatal(err)
			}
		}
		var sum int64
		if err := br.QueryRow().Scan(&sum); err != nil || sum != 2 {
			t.Errorf("sum inside the batch = %d, %v; want 2", sum, err)
		}
		if err := br.Close(); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, other, "b"); n != 1 {
			t.Errorf("rows seen by another session = %d, want 1", n)
		}
	})
	t.Run("BEGIN in a batch takes in the statements before it", func(t *testing.T) {
		batch := &pgx.Batch{}
		batch.Queue("INSERT INTO b VALUES ($1)", 10)
		batch.Queue("BEGIN")
		batch.Queue("INSERT INTO b VALUES ($1)", 11)
		if err := conn.SendBatch(ctx, batch).Close(); err != nil {
			t.Fatal(err)
		}
		if st := conn.PgConn().TxStatus(); st != 'T' {
			t.Errorf("tx status = %c, want T", st)
		}
		mustExec(t, conn, "ROLLBACK")
		if n := countRows(t, other, "b"); n != 1 {
			t.Errorf("rows = %d, want 1", n)
		}
	})
	t.Run("statements that refuse a transaction still run alone", func(t *testing.T) {
		mustExec(t, conn, "CHECKPOINT", "SET threads = 2")
	})
}
