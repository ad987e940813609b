package ratelimit

import "time"

// The layout of the string window.lua keeps (its header comment is the
// declaration): a header of last, tail and total (6 big-endian bytes
// each) and the bucket length b (4 bytes), then per slot of the ring a
// 4-byte count and the 3-byte offset of its newest admission in its
// bucket. ReadWindow reads it back, for views that show a subject's use
// without counting a request (the operator console).
const (
	readHead  = 22
	readSlot  = 7
	readSlots = Buckets + 1
)

// Window is what a window key counts at a moment.
type Window struct {
	// Count is the number of admitted requests still counted: the buckets
	// whose newest admission is less than a window old.
	Count int64
	// PerBucket is the counted requests per bucket of the window ending
	// now, oldest first (Buckets entries: per second for a minute).
	PerBucket []int64
}

// ReadWindow reads the raw value of a key kept by window_limit as of now,
// for a window of the given length, with the rule window_limit counts by.
// A missing or malformed value (another layout, a changed window) reads
// as an empty window. It touches nothing: the caller GETs the key.
func ReadWindow(raw string, now time.Time, window time.Duration) Window {
	w := Window{PerBucket: make([]int64, Buckets)}
	if len(raw) != readHead+readSlot*readSlots {
		return w
	}
	be := func(s string) int64 {
		var n int64
		for i := 0; i < len(s); i++ {
			n = n<<8 | int64(s[i])
		}
		return n
	}
	windowMS := window.Milliseconds()
	b := (windowMS + Buckets - 1) / Buckets
	if be(raw[18:22]) != b || b <= 0 {
		return w
	}
	last, tail := be(raw[0:6]), be(raw[6:12])
	nowMS := now.UnixMilli()
	if nowMS < last {
		nowMS = last
	}
	gone := nowMS - windowMS
	for j := tail; j <= last/b && j < tail+readSlots; j++ {
		p := readHead + readSlot*int(j%readSlots)
		n, off := be(raw[p:p+4]), be(raw[p+4:p+7])
		if n == 0 || j*b+off <= gone {
			continue
		}
		w.Count += n
		if ago := (nowMS/b - j); ago >= 0 && ago < Buckets {
			w.PerBucket[Buckets-1-ago] += n
		}
	}
	return w
}
