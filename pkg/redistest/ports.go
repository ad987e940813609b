package redistest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
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
// (fetchBadPort), which Node.js's fetch refuses to connect to.
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
		if p == fetchBadPort {
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

var handedOut sync.Map

// fetchBadPort is the one port of FreePort's range on the Fetch standard's
// list of bad ports (fetch.spec.whatwg.org, "port blocking"): Node.js's
// fetch (undici) fails on it with "bad port" before connecting. CI's
// oauth4webapi test once drew it for the token service ("TypeError: fetch
// failed").
const fetchBadPort = 10080

// ClusterPort returns a loopback port below 55535 such that it and its
// cluster bus port (port + 10000) are both free: Redis refuses a node whose
// bus port would pass 65535. The load harness (deploy/bench) starts its
// Cluster nodes on such ports too.
func ClusterPort() (int, error) {
	for range 200 {
		p := 20000 + rand.IntN(25000)
		if portFree(p) && portFree(p+10000) {
			return p, nil
		}
	}
	return 0, errors.New("redistest: no free port pair for a cluster node")
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
