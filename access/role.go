// Package access owns who may do what: the roles of DHSI's users, the
// principal a request runs as, and the dataset grants kept in the store.
//
// Invariants (cited as A1…A5 where code relies on them):
//
//	A1. Every request that reaches a dataset carries a Principal in its
//	    context. A context without one is treated as the least trusted
//	    principal there is: a reader with no grants (NoPrincipal), never as
//	    an admin. Trusted server code that needs everything says so with
//	    System.
//	A2. A dataset with no grants is visible to every principal; a dataset
//	    with grants is visible only to admins and to the grantees (a user
//	    name, or a role name standing for every user of that role).
//	A3. A dataset a principal may not see is indistinguishable from one that
//	    does not exist: every surface (SQL, the native path, HTTP) answers
//	    with the same rows, counts and errors it gives for a missing dataset,
//	    and decides visibility before it touches the dataset's data.
//	A4. Grants live in the store, in one JSON object (access/grants.json)
//	    carrying a version that only grows; it is replaced only with If-Match
//	    on the ETag it was read at, after the new version's immutable copy
//	    (access/grants/{version}-{random}.json) was written. So
//	    concurrent admins on many servers never lose a grant, and every
//	    server converges on the same grants by re-reading one object.
//	A5. Grants name datasets by name, so a grant may precede the dataset:
//	    granting before the first ingest means a new dataset is never
//	    visible to everyone, not even for one refresh interval.
package access

import (
	"context"
	"fmt"
	"strings"
)

// Role is what a user may do. The zero value is the least privileged.
type Role uint8

const (
	// Reader may SELECT from DHSI's views and table functions, use scalar
	// functions, SHOW and SET session settings, cursors, COPY TO STDOUT, and
	// TEMP tables and views of its own session.
	Reader Role = iota
	// Writer is a reader that may also land records and compact shards
	// (CALL inbox_put, compact_shard, compact_all, ingest).
	Writer
	// Admin may do everything, grants included.
	Admin
)

// Roles lists the roles, least privileged first.
var Roles = []Role{Reader, Writer, Admin}

func (r Role) String() string {
	switch r {
	case Reader:
		return "reader"
	case Writer:
		return "writer"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// ParseRole reads a role name (case-insensitive).
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if strings.EqualFold(s, r.String()) {
			return r, nil
		}
	}
	return Reader, fmt.Errorf("unknown role %q: want admin, writer or reader", s)
}

// IsRoleName reports whether s names a role.
func IsRoleName(s string) bool {
	_, err := ParseRole(s)
	return err == nil
}

// Principal is who a request runs as.
type Principal struct {
	User string
	Role Role
}

// NoPrincipal is what a context without a principal runs as (A1).
var NoPrincipal = Principal{User: "", Role: Reader}

// System is the principal of the server's own work (refreshes, start-up):
// it sees every dataset.
var System = Principal{User: "dhsi", Role: Admin}

// At least reports whether p's role is at least r.
func (p Principal) AtLeast(r Role) bool { return p.Role >= r }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal ctx carries, or NoPrincipal (A1).
func FromContext(ctx context.Context) Principal {
	if ctx != nil {
		if p, ok := ctx.Value(principalKey{}).(Principal); ok {
			return p
		}
	}
	return NoPrincipal
}

// Denied is a refusal for lack of privilege; its SQLSTATE is PostgreSQL's
// insufficient_privilege (42501).
type Denied struct {
	Principal Principal
	What      string // what was refused, e.g. "CALL compact_all()"
	Needs     string // what it takes, e.g. "the writer role"
}

func (d *Denied) Error() string {
	who := d.Principal.Role.String()
	if d.Principal.User != "" {
		who = fmt.Sprintf("user %q (role %s)", d.Principal.User, d.Principal.Role)
	} else {
		who = "role " + who
	}
	msg := fmt.Sprintf("permission denied: %s may not %s", who, d.What)
	if d.Needs != "" {
		msg += "; it takes " + d.Needs
	}
	return msg
}

// SQLState is insufficient_privilege.
func (d *Denied) SQLState() string { return "42501" }

// Require returns a *Denied unless the principal in ctx has at least role r.
func Require(ctx context.Context, r Role, what string) error {
	p := FromContext(ctx)
	if p.AtLeast(r) {
		return nil
	}
	return &Denied{Principal: p, What: what, Needs: "the " + r.String() + " role"}
}
