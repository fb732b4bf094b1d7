package sqlserver

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"
	"github.com/xdg-go/scram"
)

// scramIterations is PostgreSQL's default scram_iterations.
const scramIterations = 4096

// Users holds SCRAM-SHA-256 credentials. Passwords are never kept: only the
// stored key and server key derived from them, as PostgreSQL keeps them.
type Users struct {
	creds map[string]scram.StoredCredentials
}

// NewUsers derives credentials from name → password pairs.
func NewUsers(passwords map[string]string) (*Users, error) {
	u := &Users{creds: map[string]scram.StoredCredentials{}}
	for name, pw := range passwords {
		if name == "" {
			return nil, errors.New("users: empty user name")
		}
		if pw == "" {
			return nil, fmt.Errorf("users: user %q has an empty password", name)
		}
		salt := make([]byte, 16)
		if _, err := rand.Read(salt); err != nil {
			return nil, err
		}
		client, err := scram.SHA256.NewClient(name, pw, "")
		if err != nil {
			return nil, fmt.Errorf("users: user %q: %w", name, err)
		}
		u.creds[name] = client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: scramIterations})
	}
	return u, nil
}

// LoadUsersFile reads "name:password" lines (blank lines and # comments
// ignored).
func LoadUsersFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, pw, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want name:password", path, n)
		}
		out[name] = pw
	}
	return out, sc.Err()
}

// Len is the number of users.
func (u *Users) Len() int {
	if u == nil {
		return 0
	}
	return len(u.creds)
}

var errAuthFailed = errors.New("authentication failed")

// authenticate runs SCRAM-SHA-256 for user over the backend. On failure it
// has already sent the FATAL error.
func (u *Users) authenticate(be *pgproto3.Backend, user string) error {
	fail := func() error {
		be.Send((&Error{Severity: "FATAL", Code: codes.InvalidPassword,
			Message: fmt.Sprintf("password authentication failed for user %q", user)}).response())
		_ = be.Flush()
		return errAuthFailed
	}
	cred, known := u.creds[user]
	srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) {
		if !known {
			return scram.StoredCredentials{}, errAuthFailed
		}
		return cred, nil
	})
	if err != nil {
		return err
	}
	conv := srv.NewConversation()
	be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if err := be.Flush(); err != nil {
		return err
	}
	if err := be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return err
	}
	msg, err := be.Receive()
	if err != nil {
		return err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || first.AuthMechanism != "SCRAM-SHA-256" {
		return fail()
	}
	resp, err := conv.Step(string(first.Data))
	if err != nil {
		return fail()
	}
	be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(resp)})
	if err := be.Flush(); err != nil {
		return err
	}
	if err := be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return err
	}
	msg, err = be.Receive()
	if err != nil {
		return err
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fail()
	}
	resp, err = conv.Step(string(final.Data))
	if err != nil || !conv.Valid() {
		return fail()
	}
	be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(resp)})
	return nil
}

func equalSecret(a, b uint32) bool {
	return subtle.ConstantTimeEq(int32(a), int32(b)) == 1
}
