package ratelimittest

import "github.com/partnerapi/authplatform/pkg/ratelimit"

// Layout of the string WindowLua keeps (ratelimit.WindowLua): a 22-byte
// header (last, tail and total, 6 big-endian bytes each, then the bucket
// length in 4), then per slot of the ring a 4-byte count and the 3-byte offset of its newest admission.
const (
	headerBytes = 22
	slots       = ratelimit.Buckets + 1
	totalAt     = 12 // total's offset in the header
)

// Total reads, from the raw value of a key kept by WindowLua, the number of
// requests it counted as of its latest admission (buckets that left the
// window since are not taken off). It is 0 for a value of another form.
func Total(raw string) int64 {
	if len(raw) != headerBytes+7*slots {
		return 0
	}
	var n int64
	for _, b := range []byte(raw[totalAt : totalAt+6]) {
		n = n<<8 | int64(b)
	}
	return n
}
