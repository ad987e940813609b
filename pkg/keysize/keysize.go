package keysize

import "math/bits"

// Bounds of an RSA modulus, in bits (see the package documentation).
const (
	MinRSABits = 2048
	MaxRSABits = 4096
)

// RSABits is the size in bits of a big-endian RSA modulus, leading zero
// octets not counted.
func RSABits(n []byte) int {
	for len(n) > 0 && n[0] == 0 {
		n = n[1:]
	}
	if len(n) == 0 {
		return 0
	}
	return (len(n)-1)*8 + bits.Len8(n[0])
}

// RSA reports whether a big-endian RSA modulus is of an accepted size:
// MinRSABits to MaxRSABits.
func RSA(n []byte) bool {
	b := RSABits(n)
	return b >= MinRSABits && b <= MaxRSABits
}

// MaxRSAModulusBytes is the longest an accepted modulus is, in octets
// without leading zeros: a caller may refuse a longer one before decoding
// it.
const MaxRSAModulusBytes = MaxRSABits / 8
