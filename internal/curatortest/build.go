package curatortest

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

//go:embed java/CuratorTool.java
var toolSource []byte

//go:embed java/CuratorBench.java
var benchSource []byte

//go:embed java/DiscoveryDriver.java
var discoverySource []byte

// javaProgram is a Java program of one source file, compiled against Curator's jars on
// first use (once per process, cached across processes).
type javaProgram struct {
	mainClass string // the public class, which names the source file
	source    []byte
	extra     map[string][]byte // more source files by name, compiled with it

	once sync.Once
	dir  string
	err  error
}

var (
	// toolProgram is what Start runs.
	toolProgram = &javaProgram{mainClass: "CuratorTool", source: toolSource,
		extra: map[string][]byte{"DiscoveryDriver.java": discoverySource}}
	// benchProgram is what StartBench runs.
	benchProgram = &javaProgram{mainClass: "CuratorBench", source: benchSource}
)

// debianJars are the jars Debian's libcurator-recipes-java and zookeeper packages install;
// the manifests of curator-*.jar and zookeeper.jar name the rest of their dependencies.
var debianJars = []string{
	"/usr/share/java/curator-recipes.jar",
	"/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar",
	"/usr/share/java/curator-x-discovery.jar", // libcurator-discovery-java, with Jackson:
	"/usr/share/java/jackson-databind.jar",
	"/usr/share/java/jackson-core.jar",
	"/usr/share/java/jackson-annotations.jar",
	"/usr/share/java/zookeeper.jar",
	"/usr/share/java/zookeeper-jute.jar",
	"/usr/share/java/guava.jar",
	"/usr/share/java/slf4j-api.jar",
	"/usr/share/java/slf4j-nop.jar", // no logging at all; nothing may reach stdout
}

const howToInstall = `install Java (with javac) and Curator 5.4: run 'make deps', or
  'apt-get install default-jdk-headless zookeeper libcurator-recipes-java libcurator-discovery-java', or set
  CURATOR_CLASSPATH to Curator 5.4's jars and their dependencies (jar:jar:...)`

// toolchain is what running the Java tool needs.
type toolchain struct {
	java, javac string
	classpath   []string // the jars
}

var (
	chainOnce sync.Once
	chainVal  *toolchain
	chainErr  error
)

// Available reports whether the Java tool can run here: nil when java, javac and
// Curator's jars are found, else an error (wrapping ErrUnavailable) that says what to
// install.
func Available() error {
	_, err := findToolchain()
	return err
}

func findToolchain() (*toolchain, error) {
	chainOnce.Do(func() { chainVal, chainErr = lookupToolchain() })
	return chainVal, chainErr
}

func lookupToolchain() (*toolchain, error) {
	var missing []string
	tc := &toolchain{}
	tc.java = findJavaTool("java")
	if tc.java == "" {
		missing = append(missing, "java")
	}
	tc.javac = findJavaTool("javac")
	if tc.javac == "" {
		missing = append(missing, "javac")
	}
	jars := debianJars
	if cp := os.Getenv("CURATOR_CLASSPATH"); cp != "" {
		jars = filepath.SplitList(cp)
	}
	for _, j := range jars {
		if j == "" {
			continue
		}
		if _, err := os.Stat(j); err != nil {
			missing = append(missing, j)
			continue
		}
		tc.classpath = append(tc.classpath, j)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: missing %s; %s", ErrUnavailable, strings.Join(missing, ", "), howToInstall)
	}
	return tc, nil
}

// findJavaTool finds name in $JAVA_HOME/bin, else on PATH; "" when neither has it.
func findJavaTool(name string) string {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

// compiled returns the directory holding the compiled program, compiling it once per
// process. The result is cached across processes under the user's cache directory,
// keyed by the source, javac and the classpath.
func (p *javaProgram) compiled(tc *toolchain) (string, error) {
	p.once.Do(func() { p.dir, p.err = p.compile(tc) })
	return p.dir, p.err
}

func (p *javaProgram) compile(tc *toolchain) (string, error) {
	h := sha256.New()
	h.Write(p.source)
	for _, name := range sortedKeys(p.extra) {
		fmt.Fprintf(h, "\x00%s\x00%s", name, p.extra[name])
	}
	fmt.Fprintf(h, "\x00%s\x00%s", tc.javac, strings.Join(tc.classpath, string(os.PathListSeparator)))
	key := hex.EncodeToString(h.Sum(nil))[:16]

	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	root := filepath.Join(base, "zoocurator-curatortest")
	final := filepath.Join(root, key)
	if p.isCompiled(final) {
		return final, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("curatortest: %w", err)
	}
	// Compile into a private directory, then rename it into place: test binaries of
	// several packages may do this at the same moment.
	tmp, err := os.MkdirTemp(root, "tmp-"+key+"-")
	if err != nil {
		return "", fmt.Errorf("curatortest: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("curatortest: %w", err)
	}
	src := filepath.Join(tmp, p.mainClass+".java")
	if err := os.WriteFile(src, p.source, 0o644); err != nil {
		return "", fmt.Errorf("curatortest: %w", err)
	}
	srcs := []string{src}
	for _, name := range sortedKeys(p.extra) {
		f := filepath.Join(tmp, name)
		if err := os.WriteFile(f, p.extra[name], 0o644); err != nil {
			return "", fmt.Errorf("curatortest: %w", err)
		}
		srcs = append(srcs, f)
	}
	cmd := exec.Command(tc.javac, append([]string{"-nowarn", "-encoding", "UTF-8", "-d", tmp,
		"-cp", strings.Join(tc.classpath, string(os.PathListSeparator))}, srcs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("curatortest: javac %s: %w\n%s", src, err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		if p.isCompiled(final) { // another process was quicker
			return final, nil
		}
		return "", fmt.Errorf("curatortest: %w", err)
	}
	return final, nil
}

func (p *javaProgram) isCompiled(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, p.mainClass+".class"))
	return err == nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
