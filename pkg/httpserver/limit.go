package httpserver

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
)

// listener accepts at most max connections at once: at the limit, Accept
// waits for one to close and new connections wait in the kernel's accept
// queue. Near the limit (highWater open) it turns HTTP keep-alive off, which
// closes every idle connection at once and each other one after its current
// answer, and turns it back on below lowWater: idle keep-alive connections
// (held for IdleTimeout otherwise) never keep a fresh client waiting.
//
// Hand-written rather than golang.org/x/net/netutil.LimitListener, which
// does the counting alike, because (1) its connections hide the TCP
// connection's CloseWrite, which net/http needs for its lingering close after
// answering early (a body refused before it was read), and (2) the
// keep-alive switch needs the count.
type listener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	open                atomic.Int64
	highWater, lowWater int64
	shedding            atomic.Bool
	kick                chan struct{} // wakes the keep-alive switch
}

func newListener(ln net.Listener, max int, keepAlives func(bool), logger *slog.Logger) *listener {
	l := &listener{
		Listener: ln, sem: make(chan struct{}, max), done: make(chan struct{}),
		highWater: int64(max - max/8), lowWater: int64(max / 2), kick: make(chan struct{}, 1),
	}
	if l.highWater < 1 {
		l.highWater = 1
	}
	// One goroutine applies the switch, outside the listener's paths:
	// SetKeepAlivesEnabled(false) closes idle connections, whose Close comes
	// back here.
	go func() {
		applied := false
		for {
			select {
			case <-l.done:
				return
			case <-l.kick:
			}
			if want := l.shedding.Load(); want != applied {
				applied = want
				keepAlives(!want)
				if want {
					logger.Warn("connection limit near: keep-alive off, idle connections closed", "open", l.open.Load(), "max", max)
				} else {
					logger.Info("connections back under half the limit: keep-alive on", "open", l.open.Load(), "max", max)
				}
			}
		}
	}()
	return l
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, net.ErrClosed
	case l.sem <- struct{}{}:
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	if n := l.open.Add(1); n >= l.highWater && l.shedding.CompareAndSwap(false, true) {
		l.wake()
	}
	return &conn{Conn: c, l: l}, nil
}

// Close closes the listener; a waiting Accept returns net.ErrClosed.
func (l *listener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

func (l *listener) release() {
	if n := l.open.Add(-1); n <= l.lowWater && l.shedding.CompareAndSwap(true, false) {
		l.wake()
	}
	<-l.sem
}

func (l *listener) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// conn is an accepted connection: it gives its slot back when closed and
// watches the framing of the requests read from it (see framing).
type conn struct {
	net.Conn
	l         *listener
	closeOnce sync.Once
	frames    framing
	// ambiguous: a request on this connection had both Content-Length and
	// Transfer-Encoding.
	ambiguous atomic.Bool
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.ambiguous.Load() && c.frames.feed(p[:n]) {
		c.ambiguous.Store(true)
	}
	return n, err
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(c.l.release)
	return err
}

// CloseWrite keeps net/http's lingering close (half-close, then drain)
// working through the wrapper.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
