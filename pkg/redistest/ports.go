package redistest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call,
// never the same one twice in a process. It is taken from 10000-19999:
// below the kernel's ephemeral ports (32768 and up by default), so that a
// listener on port 0 started between the call and the port's use (a
// server's metrics listener, an httptest server) cannot take it, which
// the kernel's own choice of a free port allowed (TestTopology once failed:
// a resourceserver's metrics listener on :0 took the port just given to the
// next replica); and below ClusterPort's nodes (20000 and up) and their bus
// ports (30000 and up). It is never a port the Fetch standard blocks
// (fetchBadPort), which Node.js's fetch refuses to connect to, nor one of
// the suites' named ports (namedPortLow to namedPortHigh).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := LoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// LoopbackPort is FreePort for code outside a test (the load harness).
func LoopbackPort() (int, error) {
	for range 500 {
		p := freePortLow + rand.IntN(freePortHigh-freePortLow)
		if p == fetchBadPort || (p >= namedPortLow && p < namedPortHigh) {
			continue
		}
		if _, taken := handedOut.LoadOrStore(p, true); taken {
			continue
		}
		if portFree(p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("redistest: no free port in %d-%d", freePortLow, freePortHigh-1)
}

// FreePort's range, and the ports it has handed out in this process.
const freePortLow, freePortHigh = 10000, 20000

// namedPortLow to namedPortHigh are the ports the end-to-end suites that
// name their own take (deploy/e2e/tokenholes 18100-18199, adminholes
// 18200-18299, tracing 18300-18399, console 18400-18499), which FreePort
// never hands out: deploy/e2e/tracing once failed, its token service's
// 18311 bound by another package's server on a port FreePort had chosen.
const namedPortLow, namedPortHigh = 18000, 19000

var handedOut sync.Map

// fetchBadPort is the one port of FreePort's range on the Fetch standard's
// list of bad ports (fetch.spec.whatwg.org, "port blocking"): Node.js's
// fetch (undici) fails on it with "bad port" before connecting. CI's
// oauth4webapi test once drew it for the token service ("TypeError: fetch
// failed").
const fetchBadPort = 10080

// ClusterPort returns a loopback port such that it and its cluster bus port
// (port + 10000) are both free and below the kernel's ephemeral range
// (ephemeralLow), never the same port twice in a process. Outgoing
// connections take their local port from that range: while the old range
// (20000-44999, bus ports up to 54999) reached into it, a client's
// connection could take a bus port between the check and redis-server's
// bind, and the node exited ("Could not create server TCP listening socket
// 127.0.0.1:44776: bind: Address already in use"; pkg/clients' shared
// Cluster failed to start in a run of the quick suite on 2026-11-28). With
// the kernel's default range (from 32768) that leaves nodes 20000-22767 and
// bus ports 30000-32767, apart from FreePort's 10000-19999. A kernel whose
// range starts lower gets the old range. Redis refuses a node whose bus
// port would pass 65535. The load harness (deploy/bench) starts its Cluster
// nodes on such ports too.
func ClusterPort() (int, error) {
	high := min(ephemeralLow(), 65536) - clusterBusOffset
	if high-clusterPortLow < 1000 {
		high = 45000
	}
	for range 500 {
		p := clusterPortLow + rand.IntN(high-clusterPortLow)
		if _, taken := handedOut.LoadOrStore(p, true); taken {
			continue
		}
		if portFree(p) && portFree(p+clusterBusOffset) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("redistest: no free port pair for a cluster node in %d-%d", clusterPortLow, high-1)
}

// clusterPortLow is where ClusterPort's nodes start; clusterBusOffset is
// Redis's distance from a node's port to its cluster bus port.
const clusterPortLow, clusterBusOffset = 20000, 10000

// ephemeralLow is the first port of the kernel's range for the local ports
// of outgoing connections (Linux's net.ipv4.ip_local_port_range), or
// 32768, its default, where it cannot be read.
func ephemeralLow() int {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); len(f) > 0 {
		if p, err := strconv.Atoi(f[0]); err == nil && p > 0 {
			return p
		}
	}
	return 32768
}

func clusterPort(t testing.TB) int {
	t.Helper()
	p, err := ClusterPort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
