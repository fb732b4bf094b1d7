package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/sqlserver"
)

// runPasswd prints a users-file line whose password is a SCRAM-SHA-256
// verifier, so the file never holds the clear password.
func runPasswd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("passwd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: dhsi passwd NAME [ROLE] < password

Reads a password from the first line of standard input and prints a line for
serve --users-file that holds its SCRAM-SHA-256 verifier instead of the
password (the form PostgreSQL keeps in pg_authid.rolpassword):

  NAME:SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>[:ROLE]

ROLE is admin, writer or reader (default reader). Example:

  printf '%%s\n' "$PASSWORD" | dhsi passwd alice admin >> users
`)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return fmt.Errorf("%w: want NAME [ROLE]", errUsage)
	}
	name := fs.Arg(0)
	if name == "" || strings.ContainsAny(name, ":\n") {
		return fmt.Errorf("%w: user name %q: it may not be empty or hold ':'", errUsage, name)
	}
	suffix := ""
	if fs.NArg() == 2 {
		r, err := access.ParseRole(fs.Arg(1))
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		suffix = ":" + r.String()
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("read the password from standard input: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return fmt.Errorf("%w: no password on standard input", errUsage)
	}
	v, err := sqlserver.MakeVerifier(name, pw)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s:%s%s\n", name, v, suffix)
	return nil
}
