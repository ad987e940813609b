package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// keysCommand: authserver keys generate --out FILE [--alg A] [--rotate] [--keep N]
func keysCommand(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "generate" {
		return usagef("usage: authserver keys generate --out FILE [--alg EdDSA|ES256] [--rotate] [--keep N]")
	}
	fl := newFlags("keys generate")
	out := fl.String("out", "", "key set file to write")
	alg := fl.String("alg", accesstoken.AlgEdDSA, "EdDSA or ES256")
	rotate := fl.Bool("rotate", false, "add a new signing key in front of an existing file's keys")
	keep := fl.Int("keep", 2, "with --rotate: earlier keys kept for verification")
	asJSON := fl.Bool("json", false, "machine-readable output")
	if pos, err := parseFlags(fl, args[1:]); err != nil {
		return err
	} else if len(pos) > 0 || *out == "" {
		return usagef("keys generate needs --out FILE and no arguments")
	}
	if *keep < 0 {
		return usagef("--keep must not be negative")
	}
	key, err := accesstoken.GenerateKey(*alg)
	if err != nil {
		return usageError{err.Error()}
	}
	var ks *accesstoken.KeySet
	existing, err := accesstoken.LoadKeySet(*out)
	switch {
	case err == nil && *rotate:
		ks, err = existing.Rotated(key, *keep)
	case err == nil:
		return fmt.Errorf("%s exists: pass --rotate to add a new signing key to it", *out)
	case errors.Is(err, fs.ErrNotExist):
		ks, err = accesstoken.NewKeySet(key)
	default:
		return err
	}
	if err != nil {
		return err
	}
	if err := ks.WriteFile(*out); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"file": *out, "signing_kid": ks.SigningKeyID(), "keys": ks.Public().Len()})
	}
	fmt.Fprintf(stdout, "wrote %s: signing key %s (%s), %d key(s) published\n", *out, ks.SigningKeyID(), *alg, ks.Public().Len())
	return nil
}
