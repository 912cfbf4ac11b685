# zoocurator — build, test, demo, benchmark.
#
#   make test   installs what the tests need (deps), then runs every test with -race
#   make demo   installs Java and ZooKeeper (deps-base), then runs the demo on an embedded
#               ZooKeeper the program starts itself
#   make bench  installs what the tests need (deps: Curator runs side by side), then runs
#               cmd/zkbench --standard on an embedded ZooKeeper

SHELL     := /bin/bash
,         := ,
GO        ?= go
ZK_JAR    ?= /usr/share/java/zookeeper.jar
TEST_TIMEOUT ?= 40m

SOAK      ?= 10m

.PHONY: all deps-base deps test test-short demo bench soak lint fmt vet tidy

all: lint test

# Installing is split in two. deps-base is what anything that starts a ZooKeeper needs
# (the demo, soak): Java and ZooKeeper 3.8. deps adds what the tests and the benchmark need
# on top: a JDK (the Curator interop tests and zkbench --impl curator compile Java) and
# Curator 5.4's jars. Each installs only
# what is missing, from Debian's packages with apt-get; elsewhere it says what to install.
BASE_PKGS    := zookeeper
# ZooKeeper's secure client port (zktest's TLS server) runs on Netty: netty-codec and the
# rest of Debian's libnetty-java (zookeeper pulls it in; named so that it stays).
NETTY_PKGS   := libnetty-java
NETTY_CODEC_JAR := /usr/share/java/netty-codec.jar
CURATOR_PKGS := libcurator-recipes-java libcurator-framework-java libcurator-client-java libcurator-discovery-java
CURATOR_JARS := /usr/share/java/curator-recipes.jar /usr/share/java/curator-framework.jar \
                /usr/share/java/curator-client.jar /usr/share/java/curator-x-discovery.jar

# install-missing: $(1) is a shell snippet that appends to $$missing; $(2) names what was checked.
define install-missing
	@missing=""; \
	$(1) \
	if [ -z "$$missing" ]; then echo "$@: $(2) installed"; exit 0; fi; \
	if command -v apt-get >/dev/null 2>&1; then \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO="sudo"; \
		echo "$@: installing$$missing with apt-get"; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	else \
		echo "$@: missing$$missing and there is no apt-get here."; \
		echo "  Install Java 11+ and ZooKeeper 3.8, then set ZOOKEEPER_HOME to the unpacked release,"; \
		echo "  or point the tests at a running server: ZK_TEST_CONNECT=host:port[,host:port...]."; \
		echo "  The Curator interop tests need Curator 5.4's jars (CURATOR_CLASSPATH=...jar:...jar)."; \
		exit 1; \
	fi
endef

BASE_CHECK := command -v java >/dev/null 2>&1 || missing="$$missing default-jre-headless"; \
	[ -f "$(ZK_JAR)" ] || [ -n "$$ZOOKEEPER_HOME" ] || [ -n "$$ZK_TEST_CONNECT" ] || missing="$$missing $(BASE_PKGS)"; \
	[ -f "$(NETTY_CODEC_JAR)" ] || [ -n "$$ZOOKEEPER_HOME" ] || [ -n "$$ZK_TEST_CONNECT" ] || missing="$$missing $(NETTY_PKGS)";

TEST_CHECK := command -v javac >/dev/null 2>&1 || missing="$$missing default-jdk-headless"; \
	[ -n "$$CURATOR_CLASSPATH" ] || for j in $(CURATOR_JARS); do [ -f "$$j" ] || { missing="$$missing $(CURATOR_PKGS)"; break; }; done;

# deps-base installs Java and ZooKeeper 3.8 (what the demo and soak need).
deps-base:
	$(call install-missing,$(BASE_CHECK),Java and ZooKeeper are)

# deps installs deps-base's packages and what the tests and bench add: a JDK and Curator 5.4's jars.
deps:
	$(call install-missing,$(BASE_CHECK) $(TEST_CHECK),Java$(,) ZooKeeper and Curator are)

# test runs every test, integration tests included, against real ZooKeeper servers.
# The nested modules (zktest/zkcontainer, otelzk) are separate modules, so ./... at the root
# skips them; their tests run here too (zkcontainer's skip without a Docker engine).
NESTED    := zktest/zkcontainer otelzk

test: deps
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	set -e; for m in $(NESTED); do (cd $$m && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...); done

# test-short installs nothing; where no ZooKeeper can be found, tests that need one skip
# (under -short) instead of failing.
test-short:
	$(GO) test -short -count=1 ./...

demo: deps-base
	$(GO) run ./examples/mutex

bench: deps
	@if [ -d cmd/zkbench ]; then $(GO) run ./cmd/zkbench --standard; \
	else echo "bench: cmd/zkbench is missing"; exit 1; fi

# soak runs every callback scenario under every fault, cancellation fuzzing for a quarter of
# $(SOAK), service discovery under every fault, then random scenario x fault rounds on a
# 3-member ensemble for $(SOAK), and prints the counts per fault x recipe x checker (rounds,
# operations, violations, unknown outcomes, nodes leaked) and the path of the first rejected
# history's visualisation: make soak SOAK=1h. First it runs the cache's fault scenarios on a
# 100 101-node tree (a dropped connection, a session expiry), printing the time each took;
# last, the explorer: every adversary move at every request of every operation, four runs at
# a time, for at most $(SOAK) (it prints how many runs it made of how many).
soak: deps-base
	set -o pipefail; $(GO) test -count=1 -timeout 60m -run 'TestCuratorCacheAtScale' -v ./cache -args -scale.nodes=100101 2>&1 | grep -E '^(\s*--- (FAIL|PASS)|\s+\S+_test.go:[0-9]+:|\s+(Error Trace:|Error:|Test:|Messages:|expected|actual)|[[:blank:]]{13,}\S|FAIL|ok|PASS)'
	set -o pipefail; $(GO) test -race -count=1 -timeout 0 -run 'TestSoak$$|TestCancellationFuzz$$|TestCallbacksCallingBackIn$$|TestDiscoveryUnderFaults$$' -v ./reliability -args -soak=$(SOAK) 2>&1 | grep -E '^(soak:|discovery:|\s*--- FAIL|\s+\S+_test.go:[0-9]+:|\s+(Error Trace:|Error:|Test:|Messages:|expected|actual)|[[:blank:]]{13,}\S|FAIL|ok|PASS)'
	set -o pipefail; $(GO) test -race -count=1 -timeout 0 -run 'TestExplorer$$' -v ./reliability -args -soak=$(SOAK) -explore.all -explore.parallel=4 2>&1 | grep -E '^(soak:|\s*--- FAIL|\s+explorer\S*_test.go:[0-9]+: (explorer|ownership|promptness|cleanliness|exclusion|honest|conservation|freshness|cache|events|handler|listeners|the operation|known|limit)|FAIL|ok|PASS)'

# lint: gofmt, go vet and staticcheck (run from the module proxy at a pinned version, not
# a dependency of the module).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: fmt vet tidy
	$(GO) run $(STATICCHECK) ./...

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# vet covers the nested modules too (go ./... at the root skips them).
vet:
	$(GO) vet ./...
	set -e; for m in $(NESTED); do (cd $$m && $(GO) vet ./...); done

# tidy fails when go.mod or go.sum (the root's or a nested module's) is not tidy.
tidy:
	$(GO) mod tidy -diff
	set -e; for m in $(NESTED); do (cd $$m && $(GO) mod tidy -diff); done
