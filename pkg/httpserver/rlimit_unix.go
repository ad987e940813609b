//go:build unix

package httpserver

import "syscall"

// openFileLimit is the process's RLIMIT_NOFILE soft limit. Go raises the
// soft limit to the hard one at start-up (Go 1.19 and later, os package),
// so this is the hard limit unless something lowered it since.
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true
}
