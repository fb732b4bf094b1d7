package duckcapi_test

import (
	"context"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/internal/duckcapi"
)

// TestPrepareLeavesNoInterruptBehind: a cancel that lands as Prepare ends
// must not interrupt what the connection runs next, nor reach it after it
// is closed. An interrupter that outlived Prepare once did both: the
// server crashed in ClientContext::Interrupt on a session's freed
// connection (CI at 989b6ce), and a late interrupt could cancel the
// session's next statement.
func TestPrepareLeavesNoInterruptBehind(t *testing.T) {
	ctx := context.Background()
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer connector.Close()
	dc, err := connector.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := dc.(*duckdb.Conn)
	defer c.Close()
	const next = "SELECT count(*) FROM range(100000) t(i) WHERE i % 7 = 3"
	cancelled, interruptedAfter := 0, 0
	for i := 0; i < 1000; i++ {
		// cancelled before Prepare begins: its interrupter starts at once
		// and races the prepare (which binds in tens of microseconds)
		until, cancel := context.WithCancel(ctx)
		cancel()
		st, err := duckcapi.Prepare(ctx, until, c, "SELECT 42")
		if err != nil {
			cancelled++
		} else {
			st.Close()
		}
		// what runs next on the connection runs to its end
		rows, err := c.QueryContext(ctx, next, nil)
		if err != nil {
			interruptedAfter++
			continue
		}
		rows.Close()
	}
	t.Logf("%d of 1000 prepares interrupted", cancelled)
	if interruptedAfter > 0 {
		t.Errorf("%d statements after Prepare returned were interrupted", interruptedAfter)
	}
}
