package main

import (
	"flag"
	"io"
)

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
