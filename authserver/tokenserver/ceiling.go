package tokenserver

import (
	"net/netip"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// addressCeiling is the per-address limit of failed requests, kept by this
// replica in memory: never more than perMinute failures admitted in any
// 60 seconds (deploy/docs/abuse-limits.md: "600 per minute per replica").
// It only slows a storm of failures (made-up ids above all) from one
// address, so it need not be shared across replicas, and keeping it in
// memory keeps an unknown id's attempt on exactly the Redis commands of a
// known one's.
//
// Each address's failures are counted as package ratelimit counts in Redis
// (its documentation states the promise and proves it; ceilingWindow
// follows the same arithmetic, and TestCeilingWindowModel compares the two
// with ratelimit.Model): 60 one-second buckets, each with its count and the
// time of its newest failure, a bucket leaving the count exactly a minute
// after its newest failure. So a failure may be refused up to a second
// early, never late, and an address's state is a fixed 0.5 KB whatever its
// traffic. (A token bucket of perMinute refilled at perMinute/60 a second,
// which this replaced, admitted nearly twice perMinute in a minute: the
// full bucket, then its refill.)
type addressCeiling struct {
	perMinute int64
	now       func() time.Time
	windows   *lru.Cache[string, *ceilingWindow]
}

func newAddressCeiling(perMinute int, now func() time.Time) (*addressCeiling, error) {
	l, err := lru.New[string, *ceilingWindow](100_000)
	if err != nil {
		return nil, err
	}
	return &addressCeiling{perMinute: int64(perMinute), now: now, windows: l}, nil
}

// take counts one failure of addr and reports, when the ceiling is reached,
// how long until the address may fail again; a refused failure is not
// counted.
func (c *addressCeiling) take(addr string) (time.Duration, bool) {
	w, ok := c.windows.Get(addr)
	if !ok {
		fresh := &ceilingWindow{}
		if prev, found, _ := c.windows.PeekOrAdd(addr, fresh); found {
			w = prev // added meanwhile by another request
		} else {
			w = fresh
		}
	}
	return w.take(c.now().UnixMilli(), c.perMinute)
}

// spent reports whether addr's next failure would be refused, counting
// nothing: the token endpoint asks it before it verifies any signature
// for a caller that has not authenticated yet (checkProof).
func (c *addressCeiling) spent(addr string) bool {
	w, ok := c.windows.Get(addr)
	return ok && w.spent(c.now().UnixMilli(), c.perMinute)
}

// The window of the ceiling: a minute in ceilingSlots buckets of
// ceilingBucket ms (package ratelimit's ring, in memory: 60 buckets and
// one more, so that the bucket of the newest failure never shares a slot
// with one still counted).
const (
	ceilingWindowMS = int64(60_000)
	ceilingBucket   = ceilingWindowMS / 60
	ceilingSlots    = 61
)

// ceilingWindow is one address's failures: a ring of buckets, bucket j
// (floor(ms / ceilingBucket)) at slot j % ceilingSlots. Every slot with a
// count belongs to a bucket of [tail, last's bucket].
type ceilingWindow struct {
	mu sync.Mutex
	// last is the time of the newest counted failure (ms); tail the oldest
	// bucket with a count; total the sum of the counts.
	last, tail, total int64
	slots             [ceilingSlots]ceilingSlot
}

// ceilingSlot is a bucket's count and its newest failure's offset in it.
type ceilingSlot struct {
	n      uint32
	newest uint16 // ms after the bucket's start
}

// leave drops the buckets whose newest failure is a window old at now:
// they leave in the order of their buckets.
func (w *ceilingWindow) leave(now int64) {
	for w.total > 0 {
		s := &w.slots[w.tail%ceilingSlots]
		if s.n > 0 {
			if w.tail*ceilingBucket+int64(s.newest)+ceilingWindowMS > now {
				return
			}
			w.total -= int64(s.n)
			*s = ceilingSlot{}
		}
		w.tail++
	}
}

// at is the time a decision is made at: an address's clock never runs
// back (a reading earlier than its newest failure counts as that).
func (w *ceilingWindow) at(now int64) int64 { return max(now, w.last) }

func (w *ceilingWindow) spent(now, limit int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leave(w.at(now))
	return w.total >= limit
}

// take admits and counts a failure at now (ms) while fewer than limit are
// counted; else it reports the wait until one would be admitted: until the
// bucket holding the limit-th newest counted failure has left.
func (w *ceilingWindow) take(now, limit int64) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now = w.at(now)
	w.leave(now)
	if w.total < limit {
		j := now / ceilingBucket
		if w.total == 0 {
			w.tail = j
		}
		s := &w.slots[j%ceilingSlots]
		s.n++
		s.newest = uint16(now - j*ceilingBucket)
		w.total++
		w.last = now
		return 0, false
	}
	if limit <= 0 {
		return time.Duration(ceilingWindowMS) * time.Millisecond, true
	}
	// The oldest total-limit+1 failures must leave first.
	need := w.total - limit + 1
	for b := w.tail; ; b++ {
		s := w.slots[b%ceilingSlots]
		if need -= int64(s.n); need <= 0 {
			return time.Duration(b*ceilingBucket+int64(s.newest)+ceilingWindowMS-now) * time.Millisecond, true
		}
	}
}

// limitKey is what the per-address limit counts: an IPv4 address, or the /64
// network of an IPv6 one, since a single IPv6 host usually holds a whole /64
// and could otherwise step to a fresh address for every attempt.
func limitKey(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.Unmap().String()
}
