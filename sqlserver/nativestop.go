package sqlserver

import "context"

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
type stopCheck struct {
	ctx   context.Context
	n     int
	every int // calls between looks
	err   error
}

const checkEvery = 1024

func newStopCheck(ctx context.Context) *stopCheck { return &stopCheck{ctx: ctx, every: checkEvery} }

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
