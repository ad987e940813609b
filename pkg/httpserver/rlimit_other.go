//go:build !unix

package httpserver

func openFileLimit() (uint64, bool) { return 0, false }
