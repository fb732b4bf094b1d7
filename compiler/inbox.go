package compiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/dhsi/dhsi/store"
)

// maxInboxRetries bounds WriteInbox's compare-and-swap loop; each retry
// re-reads, so it never overwrites blindly.
const maxInboxRetries = 20

// WriteInbox lands records for one domain in its inbox object, the way DHSI's
// own writers do: it reads the current object, merges (latest updated_at
// wins, so an older record arriving late never replaces a newer one), and
// writes with IfMatch / IfNoneMatch, retrying on a race. A record is
// acknowledged when WriteInbox returns nil; from then on I3 keeps it.
//
// Any plain S3 client may also PUT an inbox object; such a writer replaces
// what was there, by its own choice.
func WriteInbox(ctx context.Context, st store.Store, schemaFields []string, domain string, t Table) error {
	if err := ValidateDomain(domain); err != nil {
		return err
	}
	if err := ValidateInbox(t, domain, "", func(string) string { return "" }); err != nil {
		return fmt.Errorf("inbox record for %s: %w", domain, err)
	}
	key := InboxKey(domain)
	for attempt := 0; attempt < maxInboxRetries; attempt++ {
		cond := store.Cond{IfNoneMatch: true}
		inputs := []Table{t}
		b, a, err := store.ReadAll(ctx, st, key)
		switch {
		case err == nil:
			cur, perr := ParseTable(b)
			if perr == nil {
				perr = ValidateInbox(cur, domain, "", func(string) string { return "" })
			}
			if perr == nil {
				inputs = append(inputs, cur)
			} else if err := quarantine(ctx, st, domain, a.ETag, b); err != nil {
				// a malformed object is never dropped silently (I4): it is
				// copied to quarantine before this write replaces it
				return err
			}
			cond = store.Cond{IfMatch: a.ETag}
		case errors.Is(err, store.ErrNotFound):
		default:
			return fmt.Errorf("read inbox %s: %w", key, err)
		}
		out, err := Merge(OutputHeader(schemaFields, inputs...), len(schemaFields), inputs...)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := out.Encode(&buf); err != nil {
			return err
		}
		_, err = st.Put(ctx, key, &buf, cond)
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("write inbox %s: %w", key, err)
		}
	}
	return fmt.Errorf("write inbox %s: still contended after %d attempts", key, maxInboxRetries)
}

// QuarantinePrefix holds malformed inbox objects that a writer replaced.
const QuarantinePrefix = "indexes/quarantine/domains/"

func quarantine(ctx context.Context, st store.Store, domain string, etag store.ETag, b []byte) error {
	tag := string(etag)
	if len(tag) > 16 {
		tag = tag[:16]
	}
	key := QuarantinePrefix + domain + "." + sanitizeTag(tag) + ".usv"
	_, err := st.Put(ctx, key, bytes.NewReader(b), store.Cond{IfNoneMatch: true})
	if err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("quarantine malformed inbox object for %s: %w", domain, err)
	}
	return nil
}

func sanitizeTag(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			out = append(out, c)
		}
	}
	return string(out)
}
