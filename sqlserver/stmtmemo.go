package sqlserver

import (
	"context"
	"sync"
)

// A statement's memo holds values computed once per statement and shared
// by every function the statement calls under its context: a native
// statement's functions (DuckDB runs its table functions after its
// prepare, outside that context, so they never see it). The URL index's
// functions keep their snapshot in it (udf.URLIndexFuncs), so a native
// join of domain_datasets with datasets reads one index version (manifest
// M4) although each side asks for the current one (before, each side
// pinned its own, and a publish between the two calls mixed versions).
//
// statementContext puts a fresh memo in each statement's context; a
// context without one (a prepare, a background job) computes each time.
type memoKey struct{}

type statementMemo struct {
	mu   sync.Mutex
	vals map[any]any
	// rowLimit: the statement's native row limit (nativestop.go, N1),
	// kept here to spare each statement a context of its own for it
	rowLimit int
}

func withStatementMemo(ctx context.Context, rowLimit int) context.Context {
	return context.WithValue(ctx, memoKey{}, &statementMemo{rowLimit: rowLimit})
}

// OncePerStatement returns load's value for key: computed by the first call
// in the statement ctx belongs to, the same value for every later one.
// Outside a statement it returns load() each time. load must be cheap: it
// runs under the memo's lock.
func OncePerStatement[T any](ctx context.Context, key any, load func() T) T {
	m, _ := ctx.Value(memoKey{}).(*statementMemo)
	if m == nil {
		return load()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.vals[key]; ok {
		return v.(T)
	}
	v := load()
	if m.vals == nil {
		m.vals = map[any]any{}
	}
	m.vals[key] = v
	return v
}
