package sqlserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/sqlserver"
)

func connectString(t *testing.T, cs string) (*pgx.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, cs)
	if err == nil {
		t.Cleanup(func() { conn.Close(context.Background()) })
	}
	return conn, err
}

func TestPasswordAuthentication(t *testing.T) {
	s := startServer(t, func(c *sqlserver.Config) {
		c.Users = []sqlserver.User{{Name: "alice", Password: "s3cret", Role: access.Admin}}
	})
	dsn := func(user, password string) string {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: net.JoinHostPort(s.host, strconv.Itoa(s.port)), Path: "dhsi", RawQuery: "sslmode=disable"}
		return u.String()
	}
	t.Run("the right password connects with SCRAM-SHA-256", func(t *testing.T) {
		conn, err := connectString(t, dsn("alice", "s3cret"))
		if err != nil {
			t.Fatal(err)
		}
		var user string
		if err := conn.QueryRow(ctxT(t), "SHOW session_authorization").Scan(&user); err != nil || user != "alice" {
			t.Errorf("session_authorization = %q, %v", user, err)
		}
	})
	t.Run("a wrong password is refused with 28P01", func(t *testing.T) {
		_, err := connectString(t, dsn("alice", "wrong"))
		pe := wantCode(t, err, "28P01")
		if pe.Severity != "FATAL" {
			t.Errorf("severity = %q, want FATAL", pe.Severity)
		}
	})
	t.Run("an unknown user is refused like a wrong password", func(t *testing.T) {
		_, err := connectString(t, dsn("mallory", "s3cret"))
		pe := wantCode(t, err, "28P01")
		if pe.Severity != "FATAL" {
			t.Errorf("severity = %q, want FATAL", pe.Severity)
		}
	})
	t.Run("a huge message before authentication is refused at once", func(t *testing.T) {
		// a 5-byte header announcing 1.5 GB once made the server allocate
		// it and wait for it without a deadline
		c, err := net.DialTimeout("tcp", net.JoinHostPort(s.host, strconv.Itoa(s.port)), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fe := pgproto3.NewFrontend(c, c)
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "alice", "database": "dhsi"}})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := fe.Receive(); err != nil { // AuthenticationSASL
			t.Fatal(err)
		}
		if _, err := c.Write([]byte{'p', 0x60, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("the server still waits for the announced body")
				}
				return // closed (after its FATAL, if any)
			}
		}
	})
	t.Run("no password is refused", func(t *testing.T) {
		_, err := connectString(t, dsn("alice", ""))
		if err == nil {
			t.Fatal("connected without a password")
		}
	})
	t.Run("the server still serves after failed logins", func(t *testing.T) {
		if _, err := connectString(t, dsn("alice", "s3cret")); err != nil {
			t.Fatal(err)
		}
	})
}

// writeTestPKI writes a throwaway CA and a server certificate for 127.0.0.1
// and returns the file names.
func writeTestPKI(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dhsi test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", der), write("server.key", "EC PRIVATE KEY", keyDER)
}

func TestTLS(t *testing.T) {
	caFile, certFile, keyFile := writeTestPKI(t)
	s := startServer(t, func(c *sqlserver.Config) {
		c.TLSCert, c.TLSKey = certFile, keyFile
		c.Users = []sqlserver.User{{Name: "alice", Password: "s3cret", Role: access.Admin}}
	})
	base := "postgres://alice:s3cret@" + net.JoinHostPort(s.host, strconv.Itoa(s.port)) + "/dhsi?"
	for _, tc := range []struct {
		name, query string
	}{
		{"sslmode=require encrypts without checking the certificate", "sslmode=require"},
		{"sslmode=verify-full checks the certificate against the CA", "sslmode=verify-full&sslrootcert=" + url.QueryEscape(caFile)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := connectString(t, base+tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
				t.Errorf("connection is %T, want *tls.Conn", conn.PgConn().Conn())
			}
			var n int
			if err := conn.QueryRow(ctxT(t), "SELECT 42").Scan(&n); err != nil || n != 42 {
				t.Errorf("SELECT 42 over TLS = %d, %v", n, err)
			}
		})
	}
	t.Run("verify-full with another CA fails", func(t *testing.T) {
		otherCA, _, _ := writeTestPKI(t)
		if _, err := connectString(t, base+"sslmode=verify-full&sslrootcert="+url.QueryEscape(otherCA)); err == nil {
			t.Fatal("connected although the certificate is not signed by the given CA")
		}
	})
	t.Run("sslmode=disable still works", func(t *testing.T) {
		conn, err := connectString(t, base+"sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := conn.PgConn().Conn().(*tls.Conn); ok {
			t.Error("sslmode=disable gave a TLS connection")
		}
	})
}

func TestTLSRequiresMatchingFiles(t *testing.T) {
	_, certFile, _ := writeTestPKI(t)
	_, _, err := sqlserver.Open(context.Background(), sqlserver.Options{
		Server: sqlserver.Config{Listen: "127.0.0.1:0", TLSCert: certFile, TLSKey: filepath.Join(t.TempDir(), "missing.key")},
		Engine: sqlserver.EngineConfig{Path: filepath.Join(t.TempDir(), "dhsi.duckdb")},
	})
	if err == nil {
		t.Fatal("opened with a missing TLS key")
	}
}

func TestUsersFileGivesPasswordsToSCRAM(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	verifier, err := sqlserver.MakeVerifier("carol", "c4rol pass")
	if err != nil {
		t.Fatal(err)
	}
	content := "# DHSI users\n\nalice:s3cret\nbob:pa:ss\ncarol:" + verifier + ":writer\ndave:x:y:admin\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	users, err := sqlserver.LoadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []sqlserver.User{
		{Name: "alice", Password: "s3cret", Role: access.Reader},
		{Name: "bob", Password: "pa:ss", Role: access.Reader},
		{Name: "carol", Verifier: verifier, Role: access.Writer},
		{Name: "dave", Password: "x:y", Role: access.Admin},
	}
	if fmt.Sprint(users) != fmt.Sprint(want) {
		t.Fatalf("users = %v, want %v", users, want)
	}
	s := startServer(t, func(c *sqlserver.Config) { c.Users = users })
	u := url.URL{Scheme: "postgres", User: url.UserPassword("bob", "pa:ss"), Host: net.JoinHostPort(s.host, strconv.Itoa(s.port)), Path: "dhsi", RawQuery: "sslmode=disable"}
	if _, err := connectString(t, u.String()); err != nil {
		t.Fatalf("bob from the users file: %v", err)
	}
	u.User = url.UserPassword("carol", "c4rol pass")
	if _, err := connectString(t, u.String()); err != nil {
		t.Fatalf("carol, whose line holds a SCRAM verifier: %v", err)
	}
	u.User = url.UserPassword("carol", "wrong")
	if _, err := connectString(t, u.String()); err == nil {
		t.Fatal("carol got in with a wrong password")
	}
	t.Run("a line without a colon is an error naming the line", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad")
		if err := os.WriteFile(bad, []byte("alice:x\nnocolon\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := sqlserver.LoadUsersFile(bad); err == nil || !strings.Contains(err.Error(), ":2:") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("a bad verifier is an error that does not echo the line", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad")
		if err := os.WriteFile(bad, []byte("eve:SCRAM-SHA-256$4096:c2FsdA==$secretish:nope\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := sqlserver.LoadUsersFile(bad)
		if err == nil || !strings.Contains(err.Error(), ":1:") || strings.Contains(err.Error(), "secretish") {
			t.Errorf("err = %v", err)
		}
	})
}
