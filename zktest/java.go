package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// debianJar is where Debian's zookeeper package installs the server; its manifest's
// Class-Path pulls in the dependencies.
const debianJar = "/usr/share/java/zookeeper.jar"

// debianSLF4JSimple is SLF4J's simple binding in Debian's libslf4j-java.
const debianSLF4JSimple = "/usr/share/java/slf4j-simple.jar"

// debianNettyJars are the Netty jars of Debian's libnetty-java that ZooKeeper's Netty
// server needs and zookeeper.jar's manifest does not name.
var debianNettyJars = []string{"/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar",
	"/usr/share/java/netty-transport-native-unix-common.jar"}

// javaInstall is a local ZooKeeper that can be run with java.
type javaInstall struct {
	java      string
	classpath string
}

var (
	installOnce sync.Once
	installVal  *javaInstall
	installErr  error
)

// findInstall locates java and a ZooKeeper classpath, once per process.
func findInstall() (*javaInstall, error) {
	installOnce.Do(func() { installVal, installErr = lookupInstall() })
	return installVal, installErr
}

func lookupInstall() (*javaInstall, error) {
	java := ""
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); isFile(p) {
			java = p
		}
	}
	if java == "" {
		p, err := exec.LookPath("java")
		if err != nil {
			return nil, fmt.Errorf("%w: java not found on PATH or in JAVA_HOME", ErrUnavailable)
		}
		java = p
	}
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		var jars []string
		for _, pattern := range []string{"zookeeper-*.jar", "lib/*.jar"} {
			m, _ := filepath.Glob(filepath.Join(home, pattern))
			jars = append(jars, m...)
		}
		if len(jars) == 0 {
			return nil, fmt.Errorf("%w: ZOOKEEPER_HOME=%s holds no jars", ErrUnavailable, home)
		}
		return &javaInstall{java: java, classpath: strings.Join(append(jars, filepath.Join(home, "conf")), string(os.PathListSeparator))}, nil
	}
	if isFile(debianJar) {
		cp := debianJar
		// Debian's ZooKeeper has no SLF4J binding on its class path and logs nothing; with
		// slf4j-simple (Debian's libslf4j-java, which zookeeper depends on) its quorum
		// code's account (elections, followers, leaders) and every warning reach
		// server.out, which keepLogs keeps after a failed test.
		if isFile(debianSLF4JSimple) {
			cp += string(os.PathListSeparator) + debianSLF4JSimple
		}
		// The manifest names some of Netty's jars, not all that ZooKeeper's Netty server
		// (NettyServerCnxnFactory, which a secure client port needs) loads: its TLS handler
		// needs netty-codec, its transport netty-resolver and the native epoll transport's
		// common part. Debian's libnetty-java (a dependency of libzookeeper-java) has them.
		for _, j := range debianNettyJars {
			if isFile(j) {
				cp += string(os.PathListSeparator) + j
			}
		}
		return &javaInstall{java: java, classpath: cp}, nil
	}
	return nil, fmt.Errorf("%w: neither ZOOKEEPER_HOME nor %s", ErrUnavailable, debianJar)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// freePort returns a TCP port on the loopback interface that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// checkPortFree returns an error wrapping ErrPortInUse when something listens on port
// on the loopback interface (where the servers of this package listen), so that a server
// asked for that port is not started only to fail.
func checkPortFree(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("zktest: port %d: want 1-65535", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: 127.0.0.1:%d (another ZooKeeper? choose another port)", ErrPortInUse, port)
		}
		return fmt.Errorf("zktest: port %d: %w", port, err)
	}
	return ln.Close()
}

// process is one ZooKeeper JVM run from a config file.
type process struct {
	install  *javaInstall
	mainCls  string
	cfgPath  string
	logDir   string
	clientAt string   // host:port of its client port
	jvmFlags []string // more flags for the JVM (-D...), e.g. a JAAS configuration's

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return errors.New("zktest: server already running")
	}
	heap, err := serverHeap()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(p.logDir, "server.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{
		"-Xmx" + heap, "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-Dzookeeper.log.dir=" + p.logDir,
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.quorum=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-Dznode.container.checkIntervalMs=1000", "-Dznode.container.maxPerMinute=100000",
	}
	args = append(args, p.jvmFlags...)
	args = append(args, "-cp", p.install.classpath, p.mainCls, p.cfgPath)
	cmd := exec.Command(p.install.java, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("zktest: start %s: %w", p.install.java, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	p.cmd, p.done, p.paused = cmd, done, false
	return nil
}

// ServerHeapEnv names the environment variable that sets the JVM heap (-Xmx) of the servers
// this package starts: a size such as 1g or 512m. The default, 128m, is enough for a test's
// trees; a cache of 100 000 nodes (two watches each) needs about 1g.
const ServerHeapEnv = "ZKTEST_SERVER_HEAP"

var heapSize = regexp.MustCompile(`^[1-9][0-9]*[kKmMgG]?$`)

// serverHeap returns the servers' -Xmx value: ServerHeapEnv's, or 128m.
func serverHeap() (string, error) {
	v := os.Getenv(ServerHeapEnv)
	if v == "" {
		return "128m", nil
	}
	if !heapSize.MatchString(v) {
		return "", fmt.Errorf("zktest: %s=%q: want a JVM heap size such as 1g or 512m", ServerHeapEnv, v)
	}
	return v, nil
}

// kill sends SIGKILL and waits for the process to exit. Killing a stopped process is fine.
func (p *process) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done, p.paused = nil, nil, false
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig (SIGSTOP or SIGCONT) to the running process and waits until it has
// taken effect: every thread stopped, or none.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return errors.New("zktest: server not running")
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	p.paused = sig == syscall.SIGSTOP
	return waitStopped(p.cmd.Process.Pid, p.paused, 30*time.Second)
}

// exited is closed when the current process exits (nil when not started).
func (p *process) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// logTail returns the last part of the server's output, for error messages.
func (p *process) logTail() string {
	b, _ := os.ReadFile(filepath.Join(p.logDir, "server.out"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// writeConfig writes a zoo.cfg with the test settings plus extra lines.
func writeConfig(path, dataDir string, clientPort int, extra ...string) error {
	lines := []string{
		"tickTime=200",
		"initLimit=50",
		"syncLimit=25",
		"dataDir=" + dataDir,
		"clientPort=" + strconv.Itoa(clientPort),
		"clientPortAddress=127.0.0.1",
		"maxClientCnxns=0",
		"minSessionTimeout=400",
		"maxSessionTimeout=120000",
		"forceSync=no",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		"extendedTypesEnabled=true",
		"autopurge.purgeInterval=0",
		"reconfigEnabled=false",
	}
	lines = append(lines, extra...)
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// waitServing polls srvr until the server says it serves requests (a Mode line), the
// process exits, the timeout passes or ctx ends.
func waitServing(ctx context.Context, addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("zktest: server process exited during start-up")
		case <-ctx.Done():
			return fmt.Errorf("zktest: %s not serving yet: %w", addr, ctx.Err())
		default:
		}
		out, err := FourLetterWord(addr, "srvr", time.Second)
		if err == nil && strings.Contains(out, "Mode:") {
			return nil
		}
		if err == nil {
			err = errors.New(strings.TrimSpace(out))
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("zktest: %s not serving after %v: %v", addr, timeout, last)
}
