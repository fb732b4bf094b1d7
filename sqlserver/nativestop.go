package sqlserver

import (
	"context"
	"errors"
)

// stopCheck is how a native statement's loops honour a cancel request and
// statement_timeout (57014), as DuckDB's operators do between vectors. The
// rows a native statement filters, sorts, groups or joins are all in
// memory, but a domain of a web-scale host has millions of URLs: without
// it, `SELECT url FROM urls WHERE domain = $1 ORDER BY url DESC` ran past a
// reader's statement_timeout ceiling (limits.go) to its end.
//
// Every checkEvery calls of stop, it looks at the statement's context
// (~10 ns); a row costs ~100 ns and up, so a cancel lands within about a
// tenth of a millisecond of work. Once stopped it stays stopped, so a sort
// whose comparisons see it finishes fast (every pair equal) and its caller
// returns err.
//
// It also carries the statement's row limit (Config.NativeRowLimit): the
// rows a native statement may hold in the Go heap, where DuckDB's
// memory_limit does not reach, before it is handed to DuckDB (N1 below).
type stopCheck struct {
	ctx   context.Context
	n     int
	every int // calls between looks
	err   error
	limit int // rows, 0 for none (N1)
}

const checkEvery = 1024

func newStopCheck(ctx context.Context) *stopCheck {
	return &stopCheck{ctx: ctx, every: checkEvery, limit: NativeRowLimit(ctx)}
}

// N1. A native statement holds at most limit rows' keys (a sort's, a
// GROUP BY's groups, a join's hash side) and at most indexOnly·limit
// rows' positions (the rows a WHERE kept, a reverse function's domain
// ids) at once, limit being Config.NativeRowLimit. A statement that would
// hold more fails with ErrNativeTooLarge before it sends a row, and the
// session runs it through DuckDB instead (runStatement), whose operators
// stream and whose memory_limit bounds them. Without it, a sort held 144
// bytes of keys a row (2^20 URLs: 151 MB, besides the URLs those keys keep
// alive) for however many rows its input had, a web-scale host's tens of
// millions of URLs included, outside every bound the server has; and the
// urls view's rows, sorted by another column than url, would re-read
// evicted runs while sending (viewRowsBudget).
var ErrNativeTooLarge = errors.New("a statement answered without DuckDB would hold more rows than --native-row-limit")

// indexOnly is how many more rows N1 allows where a row costs a position
// (8 bytes) rather than its keys.
const indexOnly = 8

// over reports whether holding rows rows' keys (positions, when cheap)
// passes the statement's limit (N1).
func (c *stopCheck) over(rows int, cheap bool) bool {
	if c.limit <= 0 {
		return false
	}
	if cheap {
		return rows > c.limit*indexOnly
	}
	return rows > c.limit
}

// NativeRowLimit is the row limit (N1) of the native statement ctx
// belongs to, 0 for none.
func NativeRowLimit(ctx context.Context) int {
	if m, _ := ctx.Value(memoKey{}).(*statementMemo); m != nil {
		return max(m.rowLimit, 0)
	}
	return 0
}

// NativeRowsOver reports whether a native function holding rows rows'
// positions (dataset_domains' domain ids and counts) passes the limit of
// ctx's statement (N1): it then answers ErrNativeTooLarge before it
// allocates them.
func NativeRowsOver(ctx context.Context, rows int) bool {
	c := stopCheck{limit: NativeRowLimit(ctx)}
	return c.over(rows, true)
}

// weigh says each call of stop stands for about cost rows' work (a WHERE
// with an IN list of thousands of values, a long LIKE pattern), so that
// it looks as often in time: at least every call.
func (c *stopCheck) weigh(cost int) {
	c.every = max(1, checkEvery/max(cost, 1))
}

// stop reports whether the statement was cancelled or timed out.
func (c *stopCheck) stop() bool {
	if c.err != nil {
		return true
	}
	if c.n++; c.n >= c.every {
		c.n, c.err = 0, c.ctx.Err()
	}
	return c.err != nil
}
