package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/internal/netwait"
)

// proc is a child process the benchmark started; stop ends it (SIGINT,
// then SIGKILL after a timeout) and waits for it.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	log    string
}

func startProc(cmd *exec.Cmd, logPath string) (*proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	if cmd.Stdout == nil {
		cmd.Stdout = lf
	}
	cmd.Stderr = lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// peakRSS is the process's VmHWM from /proc, in bytes (0 if unknown).
func (p *proc) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

var idRE = regexp.MustCompile(`dataset "([^"]+)" \(id (\d+)`)

// ingestResult is one `dhsi ingest` child run.
type ingestResult struct {
	datasetIDs []int // in the order of the files
	wall       time.Duration
	maxRSS     int64 // bytes
}

// runIngest runs one `dhsi ingest` child: of one dataset named dataset, or,
// with dataset "", of each file as its own dataset (--dataset-per-file).
func runIngest(ctx context.Context, bin, storeDir, dataset, workDir string, extra []string, files ...string) (ingestResult, error) {
	var out bytes.Buffer
	args := append([]string{"ingest", "--store", storeDir, "--quiet", "--work-dir", workDir}, extra...)
	if dataset == "" {
		args = append(args, "--dataset-per-file")
	} else {
		args = append(args, "--dataset", dataset)
	}
	cmd := exec.CommandContext(ctx, bin, append(args, files...)...)
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	res := ingestResult{wall: time.Since(start)}
	if err != nil {
		return res, fmt.Errorf("dhsi %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.maxRSS = ru.Maxrss << 10 // KiB on Linux
	}
	for _, m := range idRE.FindAllStringSubmatch(out.String(), -1) {
		id, _ := strconv.Atoi(m[2])
		res.datasetIDs = append(res.datasetIDs, id)
	}
	if len(res.datasetIDs) != len(files) {
		return res, fmt.Errorf("dhsi ingest: %d dataset ids in its output for %d files:\n%s", len(res.datasetIDs), len(files), out.String())
	}
	return res, nil
}

var portRE = regexp.MustCompile(`psql -h 127\.0\.0\.1 -p (\d+)`)

// urlPortRE finds the port of a connection URL (host:port/).
var urlPortRE = regexp.MustCompile(`:(\d+)/`)

// startServe starts `dhsi serve` as a child and returns it with its
// connection string (TCP; serveSocketURL makes the unix-socket one).
func startServe(ctx context.Context, bin, logPath string, env []string, args ...string) (*proc, string, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	p, err := startProc(cmd, logPath)
	if err != nil {
		return nil, "", err
	}
	go func() { <-p.exited; pw.Close() }()
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := portRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case port <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case pt := <-port:
		return p, "postgres://bench@127.0.0.1:" + pt + "/dhsi?sslmode=disable", nil
	case <-p.exited:
		return nil, "", fmt.Errorf("dhsi serve exited before listening: %v\n%s", p.err, tail(logPath))
	case <-time.After(120 * time.Second):
		p.stop()
		return nil, "", fmt.Errorf("dhsi serve did not listen within 120s\n%s", tail(logPath))
	case <-ctx.Done():
		p.stop()
		return nil, "", ctx.Err()
	}
}

// serveSocketURL turns the TCP connection string of a `dhsi serve` that was
// given --unix-socket-dir dir into the one of its unix-domain socket
// (dir/.s.PGSQL.<port>, the port of its TCP listener).
func serveSocketURL(tcpURL, dir string) (string, error) {
	m := urlPortRE.FindStringSubmatch(tcpURL)
	if m == nil {
		return "", fmt.Errorf("no port in %q", tcpURL)
	}
	return fmt.Sprintf("host=%s port=%s user=bench dbname=dhsi sslmode=disable", dir, m[1]), nil
}

// startVersityGW starts versitygw (the go.mod tool) on a POSIX directory.
func startVersityGW(ctx context.Context, dir, key, secret string) (*proc, string, error) {
	bin := os.Getenv("DHSI_VERSITYGW")
	if bin == "" {
		out, err := exec.CommandContext(ctx, "go", "tool", "-n", "versitygw").Output()
		if err != nil {
			return nil, "", fmt.Errorf("go tool -n versitygw (run from inside the dhsi module, or set DHSI_VERSITYGW to the binary): %w", err)
		}
		bin = strings.TrimSpace(string(out))
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, "", err
	}
	var lastErr error
	for range 3 {
		port, err := netwait.FreePort()
		if err != nil {
			return nil, "", err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cmd := exec.Command(bin, "--port", addr, "--health", "/health", "--quiet", "posix", data)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "VGW_") && !strings.HasPrefix(kv, "ROOT_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "ROOT_ACCESS_KEY="+key, "ROOT_SECRET_KEY="+secret)
		p, err := startProc(cmd, filepath.Join(dir, "versitygw.log"))
		if err != nil {
			return nil, "", err
		}
		endpoint := "http://" + addr
		if err := netwait.Healthy(endpoint+"/health", p.exited, 30*time.Second); err != nil {
			p.stop()
			lastErr = fmt.Errorf("versitygw: %w\n%s", err, tail(p.log))
			continue
		}
		return p, endpoint, nil
	}
	return nil, "", lastErr
}

// pgCluster is a throwaway PostgreSQL 15 cluster.
type pgCluster struct {
	dir  string
	proc *proc
	url  string
	// socketURL reaches the same database over its unix-domain socket
	socketURL string
}

const pgBin = "/usr/lib/postgresql/15/bin"

// pgCred returns the credential to run PostgreSQL binaries with: the
// postgres user when we are root (they refuse to run as root), else none.
func pgCred() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("running as root and there is no postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
}

func startPG(ctx context.Context) (*pgCluster, error) {
	cred, uid, gid, err := pgCred()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dhsi-bench-pg-")
	if err != nil {
		return nil, err
	}
	c := &pgCluster{dir: dir}
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	for _, d := range []string{dir, sock} {
		os.MkdirAll(d, 0o700)
		if cred != nil {
			if err := os.Chown(d, uid, gid); err != nil {
				c.stop()
				return nil, err
			}
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(pgBin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		c.stop()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := netwait.FreePort()
	if err != nil {
		c.stop()
		return nil, err
	}
	cmd := exec.Command(filepath.Join(pgBin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=1GB", "-c", "maintenance_work_mem=512MB", "-c", "work_mem=64MB", "-c", "max_connections=100",
		"-c", "max_wal_size=4GB", "-c", "logging_collector=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = dir
	p, err := startProc(cmd, filepath.Join(os.TempDir(), filepath.Base(dir)+".log"))
	if err != nil {
		c.stop()
		return nil, err
	}
	c.proc = p
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	c.socketURL = fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable", sock, port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			conn.Close()
			if err := pgPing(ctx, c.url); err == nil {
				return c, nil
			}
		}
		select {
		case <-p.exited:
			c.stop()
			return nil, fmt.Errorf("postgres exited during startup\n%s", tail(p.log))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("postgres not ready after 60s\n%s", tail(p.log))
		}
	}
}

func (c *pgCluster) stop() {
	if c.proc != nil {
		c.proc.stop() // SIGINT: fast shutdown
		os.Remove(c.proc.log)
	}
	os.RemoveAll(c.dir)
}

func pgPing(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}
