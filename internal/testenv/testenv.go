// Package testenv starts the real services that DHSI's tests run against,
// so that tests exercise a real S3 server rather than a fake. It is not a
// _test package because the tests of several packages share it.
//
// Tests that need S3 fail, never skip, when the server cannot be built or
// started; skipping them takes an explicit DHSI_SKIP_S3=1.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dhsi/dhsi/internal/netwait"
)

const (
	// SkipS3Env, set to "1", makes StartVersityGW skip its test. Nothing
	// else skips: an unavailable server fails the test.
	SkipS3Env = "DHSI_SKIP_S3"

	// VersityGWEnv names a prebuilt versitygw binary to use instead of the
	// one pinned by go.mod's tool directive.
	VersityGWEnv = "DHSI_VERSITYGW"

	startTimeout = 30 * time.Second
)

// StartVersityGW starts a versitygw S3 server with a POSIX backend in a
// fresh temporary directory, on a free port of 127.0.0.1, and stops it when
// the test ends. It returns the endpoint URL and the root credentials.
//
// The binary is the versitygw pinned by the tool directive in go.mod, built
// (and cached by the go command) with `go tool -n versitygw`. The first build
// in a fresh cache takes about a minute.
func StartVersityGW(t testing.TB) (endpoint, accessKey, secretKey string) {
	t.Helper()
	if os.Getenv(SkipS3Env) == "1" {
		t.Skipf("%s=1 is set: skipping a test that needs an S3 server", SkipS3Env)
	}
	bin, err := versityGWBinary(t.Context())
	if err != nil {
		t.Fatalf("testenv: versitygw: %v (set %s=1 to skip S3 tests explicitly)", err, SkipS3Env)
	}
	accessKey = "dhsi-test"
	secretKey = randomHex(16)

	// Picking a free port and then starting the server is racy (another
	// process may take the port), so a server that finds its port taken is
	// retried on another.
	var errs []error
	for range 3 {
		endpoint, err := startVersityGW(t, bin, accessKey, secretKey)
		if err == nil {
			return endpoint, accessKey, secretKey
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	t.Fatalf("testenv: start versitygw: %v", errors.Join(errs...))
	return "", "", ""
}

// errPortTaken marks a server that could not listen on its port.
var errPortTaken = errors.New("port taken")

func versityGWBinary(ctx context.Context) (string, error) {
	if bin := os.Getenv(VersityGWEnv); bin != "" {
		return bin, nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find the go command to build it: %w", err)
	}
	cmd := exec.CommandContext(ctx, goCmd, "tool", "-n", "versitygw")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n versitygw: %w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

func startVersityGW(t testing.TB, bin, accessKey, secretKey string) (string, error) {
	port, err := netwait.FreePort()
	if err != nil {
		return "", err
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		return "", err
	}
	// The server writes to a file, not a pipe, so that reading its output
	// for an error message cannot race with the server writing it.
	logPath := filepath.Join(dir, "versitygw.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close()

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// --keep-alive: versitygw v1.8.0 closes every connection after one
	// request unless told otherwise, which AWS S3 does not; without it a
	// client dials a TCP connection per request, and that was 17% of a
	// looping compactor's CPU in BenchmarkSustainedCompactionS3
	cmd := exec.Command(bin, "--port", addr, "--health", "/health", "--quiet", "--keep-alive", "posix", data)
	cmd.Env = append(serverEnv(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	// exited is closed when the server has exited; waitErr is then its
	// exit status. A closed channel, unlike a value sent on one, can be
	// waited for by both netwait.Healthy and stop.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}

	endpoint := "http://" + addr
	if err := netwait.Healthy(endpoint+"/health", exited, startTimeout); err != nil {
		if errors.Is(err, netwait.ErrExited) {
			err = fmt.Errorf("%w: %v", err, waitErr)
		}
		stop()
		log, _ := os.ReadFile(logPath)
		if bytes.Contains(log, []byte("address already in use")) {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return "", fmt.Errorf("%s on %s: %w\nserver output:\n%s", bin, addr, err, log)
	}
	t.Cleanup(stop)
	return endpoint, nil
}

// serverEnv is the test's environment without versitygw's own settings, so
// that a developer's VGW_* variables cannot change the server under test.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VGW_") && !strings.HasPrefix(kv, "ROOT_") {
			env = append(env, kv)
		}
	}
	return env
}

// CreateBucket creates a bucket with a fresh random name on the server at
// endpoint and returns its name.
func CreateBucket(t testing.TB, endpoint, accessKey, secretKey string) string {
	t.Helper()
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	})
	bucket := "dhsi-test-" + randomHex(6)
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("testenv: create bucket %s at %s: %v", bucket, endpoint, err)
	}
	return bucket
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
