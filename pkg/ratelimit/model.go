package ratelimit

import (
	"slices"
	"sort"
	"time"
)

// Model is the reference for WindowLua in plain Go: the list of admitted
// requests' times and the bucket arithmetic of the package documentation
// applied to it. Tests of every script that embeds WindowLua compare their
// decisions with it; nothing in production uses it.
type Model struct {
	limit, window, bucket int64
	admitted              []int64 // ms, ascending
}

// NewModel returns the model of a limit per window.
func NewModel(limit int64, window time.Duration) *Model {
	w := window.Milliseconds()
	return &Model{limit: limit, window: w, bucket: (w + Buckets - 1) / Buckets}
}

// Decide decides a request at the given time as WindowLua does.
func (m *Model) Decide(at time.Time) Decision { return m.DecideMS(at.UnixMilli()) }

// Admitted returns the times (ms) of the admitted requests, ascending.
func (m *Model) Admitted() []int64 { return m.admitted }

// NowMS is the time (ms) a request at at is decided at: a key's time never
// runs back.
func (m *Model) NowMS(at int64) int64 {
	if n := len(m.admitted); n > 0 && m.admitted[n-1] > at {
		return m.admitted[n-1]
	}
	return at
}

// Counted is how many admitted requests a request at at (ms) would find
// counted, without deciding it.
func (m *Model) Counted(at int64) int64 { return int64(len(m.admitted) - m.oldest(m.NowMS(at))) }

// oldest is the index of the oldest admitted request counted at now: the
// first whose bucket's newest admission is less than a window old (later
// than now-window).
func (m *Model) oldest(now int64) int {
	return sort.Search(len(m.admitted), func(i int) bool { return m.leaves(i) > now })
}

// DecideMS decides a request at at (ms since the epoch).
func (m *Model) DecideMS(at int64) Decision {
	now := m.NowMS(at)
	i := m.oldest(now)
	in := m.admitted[i:]
	n := int64(len(in))
	if n < m.limit {
		m.admitted = append(m.admitted, now)
		return Decision{Allowed: true, Count: n + 1, Wait: msDuration(m.leaves(i) - now)}
	}
	if m.limit <= 0 {
		return Decision{Count: n, Wait: msDuration(m.window)}
	}
	// Admitted again once the limit-th newest request has left.
	return Decision{Count: n, Wait: msDuration(m.leaves(i+int(n-m.limit)) - now)}
}

// leaves is when the i-th admitted request stops being counted: a window
// after the newest admission of its bucket.
func (m *Model) leaves(i int) int64 {
	j := floorDiv(m.admitted[i], m.bucket)
	end, _ := slices.BinarySearch(m.admitted, (j+1)*m.bucket)
	return m.admitted[end-1] + m.window
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func msDuration(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
