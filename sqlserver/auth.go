package sqlserver

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dhsi/dhsi/access"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"
	"github.com/xdg-go/scram"
)

// scramIterations is PostgreSQL's default scram_iterations.
const scramIterations = 4096

// User is one configured user: a name, a clear password or a SCRAM
// verifier, and a role.
type User struct {
	Name string
	// Password is the clear password; Verifier a SCRAM-SHA-256 verifier
	// ("SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", as
	// PostgreSQL keeps it in pg_authid). Exactly one is set.
	Password, Verifier string
	Role               access.Role
}

// Users holds SCRAM-SHA-256 credentials and roles. Passwords are never kept:
// only the stored key and server key derived from them, as PostgreSQL keeps
// them.
type Users struct {
	creds map[string]scram.StoredCredentials
	roles map[string]access.Role
	// checked caches successful HTTP Basic checks, so a client that sends
	// its password on every request pays PBKDF2 once: keyed by an HMAC of
	// name and password under a per-process key, never the password.
	checkKey []byte
	checked  sync.Map // [32]byte → struct{}
}

// NewUsers derives credentials from the configured users.
func NewUsers(list []User) (*Users, error) {
	u := &Users{creds: map[string]scram.StoredCredentials{}, roles: map[string]access.Role{}, checkKey: make([]byte, 32)}
	if _, err := rand.Read(u.checkKey); err != nil {
		return nil, err
	}
	for _, usr := range list {
		name := usr.Name
		if name == "" {
			return nil, errors.New("users: empty user name")
		}
		if _, dup := u.creds[name]; dup {
			return nil, fmt.Errorf("users: user %q is configured twice", name)
		}
		switch {
		case usr.Verifier != "":
			cred, err := ParseVerifier(usr.Verifier)
			if err != nil {
				return nil, fmt.Errorf("users: user %q: %w", name, err)
			}
			u.creds[name] = cred
		case usr.Password == "":
			return nil, fmt.Errorf("users: user %q has an empty password", name)
		default:
			cred, err := deriveCredentials(name, usr.Password)
			if err != nil {
				return nil, fmt.Errorf("users: user %q: %w", name, err)
			}
			u.creds[name] = cred
		}
		u.roles[name] = usr.Role
	}
	return u, nil
}

func deriveCredentials(name, password string) (scram.StoredCredentials, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return scram.StoredCredentials{}, err
	}
	client, err := scram.SHA256.NewClient(name, password, "")
	if err != nil {
		return scram.StoredCredentials{}, err
	}
	return client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: scramIterations})
}

// MakeVerifier returns the SCRAM-SHA-256 verifier of a password, in
// PostgreSQL's format, for a users file that should not hold clear
// passwords.
func MakeVerifier(name, password string) (string, error) {
	if password == "" {
		return "", errors.New("empty password")
	}
	cred, err := deriveCredentials(name, password)
	if err != nil {
		return "", err
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s%d:%s$%s:%s", verifierPrefix, cred.Iters, b64([]byte(cred.Salt)), b64(cred.StoredKey), b64(cred.ServerKey)), nil
}

const verifierPrefix = "SCRAM-SHA-256$"

// ParseVerifier reads "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>"
// (base64 salt and keys), the form of PostgreSQL's pg_authid.rolpassword.
func ParseVerifier(v string) (scram.StoredCredentials, error) {
	bad := func(why string) (scram.StoredCredentials, error) {
		return scram.StoredCredentials{}, fmt.Errorf("SCRAM verifier: %s (want SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>)", why)
	}
	rest, ok := strings.CutPrefix(v, verifierPrefix)
	if !ok {
		return bad("it does not start with " + verifierPrefix)
	}
	factors, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return bad("no '$' between the key factors and the keys")
	}
	iterText, saltText, ok := strings.Cut(factors, ":")
	if !ok {
		return bad("no ':' between iterations and salt")
	}
	iters, err := strconv.Atoi(iterText)
	if err != nil || iters < 1 || iters > 10_000_000 {
		return bad(fmt.Sprintf("iterations %q", iterText))
	}
	salt, err := base64.StdEncoding.DecodeString(saltText)
	if err != nil || len(salt) == 0 {
		return bad("the salt is not base64")
	}
	storedText, serverText, ok := strings.Cut(keys, ":")
	if !ok {
		return bad("no ':' between StoredKey and ServerKey")
	}
	stored, err1 := base64.StdEncoding.DecodeString(storedText)
	server, err2 := base64.StdEncoding.DecodeString(serverText)
	if err1 != nil || err2 != nil || len(stored) != sha256.Size || len(server) != sha256.Size {
		return bad("StoredKey and ServerKey must be 32 bytes of base64 each")
	}
	return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: iters}, StoredKey: stored, ServerKey: server}, nil
}

// ParseUser reads one users-file line or --user value:
// "name:password[:role]" or "name:SCRAM-SHA-256$...[:role]". No role means
// reader. A clear password may hold ':' — the text after the last ':' is
// the role only when it names one.
func ParseUser(line string) (User, error) {
	name, rest, ok := strings.Cut(line, ":")
	if !ok || name == "" || rest == "" {
		return User{}, errors.New("want name:password[:role]")
	}
	u := User{Name: name, Role: access.Reader}
	secret := rest
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		if r, err := access.ParseRole(rest[i+1:]); err == nil {
			u.Role, secret = r, rest[:i]
		} else if strings.HasPrefix(rest, verifierPrefix) && strings.Count(rest, ":") > 2 {
			return User{}, fmt.Errorf("user %q: %v", name, err)
		}
	}
	if strings.HasPrefix(secret, verifierPrefix) {
		if _, err := ParseVerifier(secret); err != nil {
			return User{}, fmt.Errorf("user %q: %w", name, err)
		}
		u.Verifier = secret
	} else {
		u.Password = secret
	}
	if u.Password == "" && u.Verifier == "" {
		return User{}, fmt.Errorf("user %q: empty password", name)
	}
	return u, nil
}

// LoadUsersFile reads users-file lines (see ParseUser); blank lines and #
// comments are ignored.
func LoadUsersFile(path string) ([]User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []User
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, err := ParseUser(line)
		if err != nil {
			// never echo the line: it holds a password
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, u)
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

// Role is the role of a configured user.
func (u *Users) Role(name string) (access.Role, bool) {
	if u == nil {
		return access.Reader, false
	}
	r, ok := u.roles[name]
	return r, ok
}

// CheckPassword verifies a clear password against the user's SCRAM
// credentials (HTTP Basic). It takes the same time for an unknown user as
// for a wrong password.
func (u *Users) CheckPassword(name, password string) (access.Role, bool) {
	if u.Len() == 0 {
		return access.Reader, false
	}
	mac := hmac.New(sha256.New, u.checkKey)
	mac.Write([]byte(name))
	mac.Write([]byte{0})
	mac.Write([]byte(password))
	var key [32]byte
	copy(key[:], mac.Sum(nil))
	if _, ok := u.checked.Load(key); ok {
		return u.roles[name], true
	}
	cred, known := u.creds[name]
	if !known {
		cred = scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: "unknown-user-salt", Iters: scramIterations}, StoredKey: make([]byte, sha256.Size)}
	}
	client, err := scram.SHA256.NewClient(name, password, "")
	if err != nil {
		return access.Reader, false
	}
	got, err := client.GetStoredCredentialsWithError(cred.KeyFactors)
	if err != nil || subtle.ConstantTimeCompare(got.StoredKey, cred.StoredKey) != 1 || !known {
		return access.Reader, false
	}
	u.checked.Store(key, struct{}{})
	return u.roles[name], true
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

// List returns the users and their roles, by name.
func (u *Users) List() []User {
	if u == nil {
		return nil
	}
	out := make([]User, 0, len(u.roles))
	for name, r := range u.roles {
		out = append(out, User{Name: name, Role: r})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
