package main

import (
	"fmt"
	"io"
	"os"

	"github.com/partnerapi/authplatform/resourceserver/apidocs/internal/render"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run renders the apidocs directory dir, the working directory without an
// argument.
func run(args []string, stderr io.Writer) int {
	dir := "."
	switch len(args) {
	case 0:
	case 1:
		dir = args[0]
	default:
		fmt.Fprintln(stderr, "usage: gen [APIDOCS_DIR]")
		return 2
	}
	if err := render.Write(dir); err != nil {
		fmt.Fprintln(stderr, "apidocs gen:", err)
		return 1
	}
	return 0
}
