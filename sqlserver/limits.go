package sqlserver

import (
	"context"
	"sync"
	"time"

	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/access"
)

// RoleLimits bound what one user of a role can take from the others, so a
// dashboard refreshing in a loop cannot starve the rest (issue 18). Admins
// are never limited.
type RoleLimits struct {
	// StatementTimeout is the role's default statement_timeout and its
	// ceiling: a user may SET a shorter one, never a longer one (0: none).
	StatementTimeout time.Duration
	// MaxConcurrentQueries caps the statements one user of the role runs
	// at once, over all their sessions; more wait their turn, within their
	// timeout (0: no cap).
	MaxConcurrentQueries int
	// MaxSessions caps the sessions one user of the role holds at once; one
	// more is refused at connect with 53300 (0: no cap). One reader's 100
	// idle sessions once took every slot (a review, stop 41); C2 keeps an
	// admin's, this keeps the others'.
	MaxSessions int
}

// userSlots hands out the per-user statement slots of MaxConcurrentQueries.
type userSlots struct {
	mu    sync.Mutex
	slots map[string]chan struct{}
}

func (u *userSlots) of(user string, n int) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.slots == nil {
		u.slots = map[string]chan struct{}{}
	}
	c := u.slots[user]
	if c == nil || cap(c) != n {
		c = make(chan struct{}, n)
		u.slots[user] = c
	}
	return c
}

func (s *session) limits() RoleLimits {
	if s.principal.Role == access.Admin {
		return RoleLimits{}
	}
	return s.srv.cfg.RoleLimits[s.principal.Role]
}

// acquireSlot waits for one of the user's statement slots; release gives it
// back. A statement that cannot get one before ctx ends fails as a timed-out
// or cancelled statement would.
func (s *session) acquireSlot(ctx context.Context) (release func(), err error) {
	n := s.limits().MaxConcurrentQueries
	if n <= 0 {
		return func() {}, nil
	}
	c := s.srv.slots.of(s.user, n)
	select {
	case c <- struct{}{}:
		return func() { <-c }, nil
	default:
	}
	select {
	case c <- struct{}{}:
		return func() { <-c }, nil
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return nil, pgErrorf(codes.QueryCanceled, "canceling statement due to statement timeout (it waited for one of the %d statements user %q may run at once)", n, s.user)
		}
		return nil, pgErrorf(codes.QueryCanceled, "canceling statement due to user request")
	}
}
