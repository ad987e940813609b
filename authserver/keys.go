package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
)

// The keys commands manage the signing key set file. A zero-downtime key
// rotation is: `keys generate --stage` (publish the new key; restart or
// wait for the resource servers' JWKS refresh), then `keys promote KID`
// (sign with it); `--rotate` does both at once.

func keysGenerate(fl *flag.FlagSet, env cli.Env) cli.Action {
	out := fl.String("out", "", "key set file to write")
	alg := fl.String("alg", accesstoken.AlgEdDSA, "EdDSA or ES256")
	rotate := fl.Bool("rotate", false, "add a new signing key in front of an existing file's keys")
	stage := fl.Bool("stage", false, "publish a new key in an existing file without signing with it yet")
	keep := fl.Int("keep", 2, "with --rotate: earlier keys kept for verification")
	asJSON := fl.Bool("json", false, "print JSON (deploy/docs/operator-guide.md: JSON output)")
	return func(context.Context, []string) error {
		if *out == "" {
			return usagef("keys generate needs --out FILE")
		}
		if *keep < 0 || (*rotate && *stage) {
			return usagef("--keep must not be negative, and --rotate and --stage exclude each other")
		}
		key, err := accesstoken.GenerateKey(*alg)
		if err != nil {
			return usageError{Msg: err.Error()}
		}
		var ks *accesstoken.KeySet
		existing, err := accesstoken.LoadKeySet(*out)
		switch {
		case err == nil && *rotate:
			ks, err = existing.Rotated(key, *keep)
		case err == nil && *stage:
			ks, err = existing.Staged(key)
		case err == nil:
			return fmt.Errorf("%s exists: pass --rotate or --stage to add a new key to it", *out)
		case errors.Is(err, fs.ErrNotExist) && !*stage:
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
		kid, _ := key.KeyID()
		return printKeys(env.Stdout, *asJSON, *out, ks, fmt.Sprintf("new key %s (%s)", kid, *alg))
	}
}

func keysPromote(fl *flag.FlagSet, env cli.Env) cli.Action {
	file := fl.String("file", "", "key set file")
	asJSON := fl.Bool("json", false, "print JSON (deploy/docs/operator-guide.md: JSON output)")
	return func(_ context.Context, args []string) error {
		if *file == "" {
			return usagef("keys promote needs --file FILE")
		}
		ks, err := accesstoken.LoadKeySet(*file)
		if err != nil {
			return err
		}
		if ks, err = ks.Promoted(args[0]); err != nil {
			return usageError{Msg: err.Error()}
		}
		if err := ks.WriteFile(*file); err != nil {
			return err
		}
		return printKeys(env.Stdout, *asJSON, *file, ks, "promoted "+args[0])
	}
}

func keysList(fl *flag.FlagSet, env cli.Env) cli.Action {
	file := fl.String("file", "", "key set file")
	asJSON := fl.Bool("json", false, "print JSON (deploy/docs/operator-guide.md: JSON output)")
	return func(context.Context, []string) error {
		if *file == "" {
			return usagef("keys list needs --file FILE")
		}
		ks, err := accesstoken.LoadKeySet(*file)
		if err != nil {
			return err
		}
		return printKeys(env.Stdout, *asJSON, *file, ks, "")
	}
}

func printKeys(w io.Writer, asJSON bool, file string, ks *accesstoken.KeySet, what string) error {
	if asJSON {
		return output{w: w, json: true}.print(map[string]any{"file": file, "signing_kid": ks.SigningKeyID(), "kids": ks.KeyIDs()}, nil)
	}
	if what != "" {
		fmt.Fprintf(w, "%s: %s\n", file, what)
	}
	fmt.Fprintf(w, "signing key: %s\npublished:   %v\n", ks.SigningKeyID(), ks.KeyIDs())
	return nil
}

// keysWithdraw: keys withdraw --file FILE KID. An emergency withdrawal of a
// key that is no longer trusted (not the signing key: promote another one
// first), through operations.WithdrawFromFile: recorded in Redis
// (confirmed by the replicas REDIS_URL asks for), announced to every
// server at once (package keywithdrawal), then removed from the file.
func keysWithdraw(fl *flag.FlagSet, env cli.Env) cli.Action {
	file := fl.String("file", "", "key set file")
	asJSON := fl.Bool("json", false, "print JSON (deploy/docs/operator-guide.md: JSON output)")
	return func(ctx context.Context, args []string) error {
		if *file == "" {
			return usagef("keys withdraw needs --file FILE")
		}
		kid := args[0]
		ks, err := accesstoken.LoadKeySet(*file)
		if err != nil {
			return err
		}
		f := operations.KeyFile{Path: *file, Keys: ks}
		// Checked before Redis is opened: a refused withdrawal needs none.
		if err := operations.CheckWithdrawal(kid, f); err != nil {
			return withdrawalRefused(kid, err)
		}
		ops, closeOps, err := openOperations(ctx, env.Getenv)
		if err != nil {
			return err
		}
		defer closeOps()
		w, err := ops.WithdrawFromFile(ctx, f, kid)
		if w.Keys == nil { // refused, not recorded, or the file not rewritten
			return withdrawalRefused(kid, err)
		}
		if errors.Is(err, keywithdrawal.ErrNotReplicated) {
			// Exit 3 like every operator change a failover could undo.
			return fmt.Errorf("%w: %w", clients.ErrNotReplicated, err)
		}
		if err != nil { // recorded, but not published: servers see it at their next poll
			fmt.Fprintf(env.Stdout, "warning: %v\n", err)
		}
		if *asJSON {
			return json.NewEncoder(env.Stdout).Encode(map[string]any{"file": *file, "withdrawn": kid, "version": w.Version,
				"signing_kid": w.Keys.SigningKeyID(), "kids": w.Keys.KeyIDs()})
		}
		fmt.Fprintf(env.Stdout, "%s: withdrew %s (every server refuses its tokens within seconds)\n", *file, kid)
		fmt.Fprintf(env.Stdout, "signing key: %s\npublished:   %v\n", w.Keys.SigningKeyID(), w.Keys.KeyIDs())
		return nil
	}
}

// withdrawalRefused maps a withdrawal operations refused for its argument
// to a usage error (exit 2), as every bad argument is: a kid the file does
// not hold, or its signing key. Any other error passes unchanged.
func withdrawalRefused(kid string, err error) error {
	switch {
	case errors.Is(err, clients.ErrNotFound):
		return usagef("no key with kid %q in the set", kid)
	case errors.Is(err, clients.ErrInvalid):
		return usagef("%s", strings.TrimPrefix(err.Error(), operations.ErrInvalid.Error()+": "))
	}
	return err
}
