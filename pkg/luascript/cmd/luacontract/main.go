// Command luacontract writes the files that the script contracts of a Go
// file generate (package contractgen): run by go generate in the package
// that declares them,
//
//	//go:generate go run ../luascript/cmd/luacontract contracts.go
//
// it rewrites the generated section of each contract's .lua file and the
// Go file beside the declaring one (contracts_gen.go), and writes only the
// files whose text changes. With -check it writes nothing and exits 1 when
// any file is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/partnerapi/authplatform/pkg/luascript/contractgen"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("luacontract", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "write nothing; exit 1 when a generated file is stale")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: luacontract [-check] FILE.go...")
		return 2
	}
	status := 0
	for _, goFile := range fs.Args() {
		files, err := contractgen.Generate(goFile)
		if err != nil {
			fmt.Fprintln(stderr, "luacontract:", err)
			return 1
		}
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			old, _ := os.ReadFile(p)
			if bytes.Equal(old, files[p]) {
				continue
			}
			if *check {
				fmt.Fprintln(stdout, "stale:", p)
				status = 1
				continue
			}
			if err := os.WriteFile(p, files[p], 0o644); err != nil {
				fmt.Fprintln(stderr, "luacontract:", err)
				return 1
			}
			fmt.Fprintln(stdout, "wrote", p)
		}
	}
	return status
}
