package keysize

import (
	"bytes"
	"testing"
)

func TestRSA(t *testing.T) {
	for _, c := range []struct {
		name string
		n    []byte
		bits int
		ok   bool
	}{
		{"empty", nil, 0, false},
		{"zeros", []byte{0, 0}, 0, false},
		{"2047 bits", append([]byte{0x7f}, bytes.Repeat([]byte{0xff}, 255)...), 2047, false},
		{"2048 bits", append([]byte{0x80}, make([]byte, 255)...), 2048, true},
		{"2048 bits, a leading zero octet", append([]byte{0, 0x80}, make([]byte, 255)...), 2048, true},
		{"3072 bits", append([]byte{0xc5}, make([]byte, 383)...), 3072, true},
		{"4096 bits", bytes.Repeat([]byte{0xff}, 512), 4096, true},
		{"4097 bits", append([]byte{0x01}, make([]byte, 512)...), 4097, false},
		{"16384 bits", bytes.Repeat([]byte{0xff}, 2048), 16384, false},
	} {
		if got := RSABits(c.n); got != c.bits {
			t.Errorf("%s: RSABits = %d, want %d", c.name, got, c.bits)
		}
		if got := RSA(c.n); got != c.ok {
			t.Errorf("%s: RSA = %v, want %v", c.name, got, c.ok)
		}
	}
	if MaxRSAModulusBytes*8 != MaxRSABits {
		t.Errorf("MaxRSAModulusBytes = %d", MaxRSAModulusBytes)
	}
}
